/*
** rapply.c — a standby's store brought up to etcd's CURRENT (replica.h,
** docs/replication.md "The standby").
**
** Each revision is applied with the store's own publish (a rollback with
** its revert, which rebuilds the same delta), from its record and the
** entries it names — taken from the store when it has them, else from
** etcd, each checked against its hash — and then read back: the record of
** the revision the store wrote must equal etcd's.  A store that is ahead
** of etcd, or whose revision differs from etcd's record of it, diverged:
** nothing is applied.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replica_int.h"

#define PAGE 64   /* records read per range */

/* Etcd's record of revision n (parsed), or NULL (r's message set, *err). */
static json_t *record_of(replica *r, const etcd_KV *kv, uint64_t n, replica_Error *err) {
  json_t *j = json_loadb(kv->value, kv->value_len, 0, NULL);
  json_int_t rev = json_integer_value(json_object_get(j, "rev"));
  if (!json_is_object(j) || (uint64_t)rev != n || !json_is_array(json_object_get(j, "changes"))) {
    json_decref(j);
    *err = rfail(r, REPLICA_EPROTO, "etcd's record of revision %llu (%.*s) is damaged or not jiti's", (unsigned long long)n,
                 (int)kv->key_len, kv->key);
    return NULL;
  }
  return j;
}

/* The entry with hash hex, from s or else etcd; its name copied into
** *name (free it) and its bytes kept in *hold (free it) or *own (store_free). */
static replica_Error fetch_entry(replica *r, store_env *s, const char *hex, int kind, const char *name, store_entry *out,
                                 char **namecopy, etcd_Range *hold, store_entry **own) {
  uint8_t hash[32], check[32];
  if (store_hash_parse(hex, hash)) return rfail(r, REPLICA_EPROTO, "a record names entry hash '%.70s'", hex);
  if (store_get_entry(s, hash, own) == STORE_OK) {
    *out = **own;
    return REPLICA_OK;
  }
  *own = NULL;
  char key[160];
  size_t klen = rkey(r, key, sizeof key, "entry/%s", hex);
  etcd_Error ee = etcd_range(r->e, key, klen, NULL, 0, 0, 0, 0, hold);
  if (ee) return retcd(r, ee, "reading an entry");
  int nl;
  if (!hold->n || (nl = rentry_decode(hold->kvs[0].value, hold->kvs[0].value_len, out)) < 0)
    return rfail(r, REPLICA_EPROTO, "etcd lacks entry %s %s (%s), or it is damaged", store_kind_name(kind), name, hex);
  if (!(*namecopy = strndup(out->name, (size_t)nl))) return rfail(r, REPLICA_ENOMEM, "out of memory");
  out->name = *namecopy;
  if (out->kind != kind || strcmp(out->name, name) || store_entry_hash(out, check, NULL) || memcmp(check, hash, 32))
    return rfail(r, REPLICA_EPROTO, "etcd's entry %s does not hash to its key (%s %s)", hex, store_kind_name(kind), name);
  return REPLICA_OK;
}

/* Apply one record on top of s's CURRENT, n - 1. */
static replica_Error apply(replica *r, store_env *s, json_t *rec, uint64_t n) {
  json_t *changes = json_object_get(rec, "changes");
  size_t nc = json_array_size(changes);
  store_entry *ch = calloc(nc + 1, sizeof *ch);
  store_key *rm = calloc(nc + 1, sizeof *rm);
  char **names = calloc(nc + 1, sizeof *names);
  etcd_Range *holds = calloc(nc + 1, sizeof *holds);
  store_entry **owns = calloc(nc + 1, sizeof *owns);
  size_t nch = 0, nrm = 0;
  replica_Error err = ch && rm && names && holds && owns ? REPLICA_OK : rfail(r, REPLICA_ENOMEM, "out of memory");
  for (size_t i = 0; i < nc && !err; i++) {
    json_t *row = json_array_get(changes, i);
    const char *k = json_string_value(json_array_get(row, 0)), *name = json_string_value(json_array_get(row, 1)),
               *nw = json_string_value(json_array_get(row, 3));
    int kind = k ? store_kind_parse(k) : 0;
    if (!kind || !name || !nw) {
      err = rfail(r, REPLICA_EPROTO, "etcd's record of revision %llu has a malformed change", (unsigned long long)n);
      break;
    }
    if (!*nw) {
      rm[nrm++] = (store_key){kind, name};
    } else {
      err = fetch_entry(r, s, nw, kind, name, &ch[nch], &names[i], &holds[i], &owns[i]);
      if (!err) nch++;
    }
  }
  if (!err) {
    const char *rk = json_string_value(json_object_get(rec, "kind"));
    store_rev_info info = {
      .kind = rk ? store_rev_kind_parse(rk) : 0,
      .generation = (uint64_t)json_integer_value(json_object_get(rec, "generation")),
      .time_ms = json_integer_value(json_object_get(rec, "time")),
      .kernel_version = json_string_value(json_object_get(rec, "kernel")),
      .summary = json_string_value(json_object_get(rec, "summary")),
      .response_id = json_string_value(json_object_get(rec, "response")),
      .foreign = json_string_value(json_object_get(rec, "foreign")),
    };
    if (info.response_id && !*info.response_id) info.response_id = NULL;
    uint64_t target = (uint64_t)json_integer_value(json_object_get(rec, "rollback_of")), got = 0;
    /* the keyed outcomes written with it: the store indexes their keys */
    json_t *evs = json_object_get(rec, "events");
    size_t nev = json_array_size(evs);
    json_t **ev = calloc(nev + 1, sizeof *ev);
    for (size_t i = 0; ev && i < nev; i++) ev[i] = json_deep_copy(json_array_get(evs, i));   /* redacted in place */
    int se = !ev ? STORE_ENOMEM
             : info.kind == STORE_REV_ROLLBACK && target
                 ? store_publish_revert(s, n - 1, target, &info, &got)
                 : store_publish_with_events(s, n - 1, &info, ch, nch, rm, nrm, ev, NULL, nev, &got, NULL);
    for (size_t i = 0; ev && i < nev; i++) json_decref(ev[i]);
    free(ev);
    if (se)
      err = rfail(r, REPLICA_ESTORE, "applying revision %llu to the store: %s", (unsigned long long)n, store_errmsg(s));
    else if (got != n)
      err = rfail(r, REPLICA_EDIVERGED, "revision %llu changed nothing in this store: it diverged from etcd",
                  (unsigned long long)n);
  }
  for (size_t i = 0; i < nc && names; i++) {
    free(names[i]);
    if (holds) etcd_range_free(&holds[i]);
    if (owns) store_free(owns[i]);
  }
  free(ch);
  free(rm);
  free(names);
  free(holds);
  free(owns);
  return err;
}

/* The store's revision n against etcd's record of it. */
static replica_Error same(replica *r, store_env *s, json_t *rec, uint64_t n) {
  rrev v;
  replica_Error err = rrev_read(r, s, n, &v);
  if (err) return err;
  json_t *plain = json_copy(rec);   /* the events are not the manifest's */
  if (plain) json_object_del(plain, "events");
  int eq = plain && json_equal(v.record, plain);
  json_decref(plain);
  rrev_free(&v);
  if (!eq)
    return rfail(r, REPLICA_EDIVERGED,
                 "revision %llu of this store differs from etcd's: the store diverged from the world "
                 "(start the standby on a fresh directory)",
                 (unsigned long long)n);
  return REPLICA_OK;
}

replica_Error replica_catch_up(replica *r, store_env *s, uint64_t *applied) {
  uint64_t local = 0;
  if (store_current(s, &local)) return rfail(r, REPLICA_ESTORE, "reading the store's CURRENT: %s", store_errmsg(s));
  *applied = local;
  replica_Head h;
  replica_Error err = replica_head(r, &h);
  if (err) return err;
  if (local > h.current)
    return rfail(r, REPLICA_EDIVERGED,
                 "this store is at revision %llu, the world in etcd at %llu: the store holds revisions no one "
                 "acknowledged (start the standby on a fresh directory)",
                 (unsigned long long)local, (unsigned long long)h.current);
  char key[160], end[160];
  uint64_t from = local ? local : 1;   /* the store's own CURRENT first: it must be etcd's */
  while (from <= h.current && !err) {
    size_t klen = rkey(r, key, sizeof key, "rev/%020" PRIu64, from);
    size_t elen = rkey(r, end, sizeof end, "rev/%020" PRIu64, h.current + 1);
    etcd_Range g;
    etcd_Error ee = etcd_range(r->e, key, klen, end, elen, h.etcd_revision, PAGE, 0, &g);
    if (ee) return retcd(r, ee, "reading revisions");
    if (!g.n) {
      etcd_range_free(&g);
      return rfail(r, REPLICA_EPROTO, "etcd's world names CURRENT %llu but lacks revision %llu's record",
                   (unsigned long long)h.current, (unsigned long long)from);
    }
    for (size_t i = 0; i < g.n && !err; i++, from++) {
      json_t *rec = record_of(r, &g.kvs[i], from, &err);
      if (!rec) break;
      if (from > local) err = apply(r, s, rec, from);
      if (!err) err = same(r, s, rec, from);
      if (!err && from > local) *applied = from;
      json_decref(rec);
    }
    etcd_range_free(&g);
  }
  return err;
}
