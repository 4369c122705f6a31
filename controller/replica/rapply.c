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

#define PAGE 256 /* records read per range, and applied in one store transaction */

/* Etcd's record of revision n (parsed), or NULL (r's message set, *err). */
static json_t *record_of(replica *r, const etcd_KV *kv, uint64_t n, replica_Error *err) {
  json_t *j = json_loadb(kv->value, kv->value_len, 0, NULL);
  json_int_t rev = json_integer_value(json_object_get(j, "rev"));
  if (!json_is_object(j) || (uint64_t)rev != n || !json_is_array(json_object_get(j, "changes"))) {
    json_decref(j);
    *err = rfail(r, REPLICA_EPROTO, "etcd's record of revision %llu (%.*s) is damaged or not jiti's",
                 (unsigned long long)n, (int)kv->key_len, kv->key);
    return NULL;
  }
  return j;
}

/* The entries a page of records needs that the store lacks, read from
** etcd up front, many to a request (one range per entry would cost a round
** trip each: a standby would fall behind a busy leader). */
typedef struct Cached {
  char hex[65];
  etcd_KV kv;
} Cached;
typedef struct Cache {
  Cached *v;
  size_t n, cap;
} Cache;

static int cached_cmp(const void *a, const void *b) {
  return strcmp(((const Cached *)a)->hex, ((const Cached *)b)->hex);
}

static void cache_free(Cache *c) {
  for (size_t i = 0; i < c->n; i++) {
    free(c->v[i].kv.key);
    free(c->v[i].kv.value);
  }
  free(c->v);
  memset(c, 0, sizeof *c);
}

#define PREFETCH_OPS 100

static replica_Error prefetch(replica *r, store_env *s, json_t **recs, size_t n, Cache *c) {
  for (size_t i = 0; i < n; i++) {
    json_t *changes = json_object_get(recs[i], "changes");
    for (size_t k = 0; k < json_array_size(changes); k++) {
      const char *nw = json_string_value(json_array_get(json_array_get(changes, k), 3));
      uint8_t hash[32];
      store_entry *own;
      if (!nw || !*nw || store_hash_parse(nw, hash)) continue; /* (prepare says what is wrong) */
      if (store_get_entry(s, hash, &own) == STORE_OK) {
        store_free(own);
        continue;
      }
      if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        Cached *v = realloc(c->v, cap * sizeof *v);
        if (!v) return rfail(r, REPLICA_ENOMEM, "out of memory");
        c->v = v;
        c->cap = cap;
      }
      memset(&c->v[c->n], 0, sizeof c->v[c->n]);
      snprintf(c->v[c->n++].hex, sizeof c->v[0].hex, "%s", nw);
    }
  }
  for (size_t from = 0; from < c->n; from += PREFETCH_OPS) {
    size_t to = from + PREFETCH_OPS < c->n ? from + PREFETCH_OPS : c->n;
    etcd_txn *t = etcd_txn_new();
    if (!t) return rfail(r, REPLICA_ENOMEM, "out of memory");
    for (size_t i = from; i < to; i++) {
      char key[160];
      size_t klen = rkey(r, key, sizeof key, "entry/%s", c->v[i].hex);
      etcd_txn_range(t, ETCD_SUCCESS, key, klen, NULL, 0);
    }
    etcd_TxnResult res;
    etcd_Error ee = etcd_txn_commit(r->e, t, &res);
    etcd_txn_free(t);
    if (ee) return retcd(r, ee, "reading entries");
    for (size_t i = from; i < to && i - from < res.nranges; i++) {
      etcd_Range *g = &res.ranges[i - from];
      if (g->n) { /* taken over: the range no longer owns it */
        c->v[i].kv = g->kvs[0];
        memset(&g->kvs[0], 0, sizeof g->kvs[0]);
      }
    }
    etcd_txn_result_free(&res);
  }
  if (c->n) qsort(c->v, c->n, sizeof *c->v, cached_cmp);
  return REPLICA_OK;
}

/* The entry with hash hex: from s, else the page's cache, else etcd; its
** name copied into *namecopy (free it), its bytes in the cache, in *hold
** (free it) or in *own (store_free). */
static replica_Error fetch_entry(replica *r, store_env *s, const Cache *c, const char *hex, int kind, const char *name,
                                 store_entry *out, char **namecopy, etcd_Range *hold, store_entry **own) {
  uint8_t hash[32], check[32];
  if (store_hash_parse(hex, hash)) return rfail(r, REPLICA_EPROTO, "a record names entry hash '%.70s'", hex);
  if (store_get_entry(s, hash, own) == STORE_OK) {
    *out = **own;
    return REPLICA_OK;
  }
  *own = NULL;
  Cached probe;
  snprintf(probe.hex, sizeof probe.hex, "%s", hex);
  const Cached *hit = c->n ? bsearch(&probe, c->v, c->n, sizeof *c->v, cached_cmp) : NULL;
  const etcd_KV *kv = hit && hit->kv.key ? &hit->kv : NULL;
  if (!kv) {
    char key[160];
    size_t klen = rkey(r, key, sizeof key, "entry/%s", hex);
    etcd_Error ee = etcd_range(r->e, key, klen, NULL, 0, 0, 0, 0, hold);
    if (ee) return retcd(r, ee, "reading an entry");
    kv = hold->n ? &hold->kvs[0] : NULL;
  }
  int nl;
  if (!kv || (nl = rentry_decode(kv->value, kv->value_len, out)) < 0)
    return rfail(r, REPLICA_EPROTO, "etcd lacks entry %s %s (%s), or it is damaged", store_kind_name(kind), name, hex);
  if (!(*namecopy = strndup(out->name, (size_t)nl))) return rfail(r, REPLICA_ENOMEM, "out of memory");
  out->name = *namecopy;
  if (out->kind != kind || strcmp(out->name, name) || store_entry_hash(out, check, NULL) || memcmp(check, hash, 32))
    return rfail(r, REPLICA_EPROTO, "etcd's entry %s does not hash to its key (%s %s)", hex, store_kind_name(kind),
                 name);
  return REPLICA_OK;
}

/* One record made ready for the store: its entries, removals, manifest
** fields and keyed outcomes, all kept until the store has written it. */
typedef struct Prep {
  size_t nc, nch, nrm, nev;
  store_entry *ch;
  store_key *rm;
  char **names;
  etcd_Range *holds;
  store_entry **owns;
  store_ev *ev;
  store_rev_info info;
  uint64_t target; /* a rollback's */
} Prep;

static void prep_free(Prep *p) {
  for (size_t i = 0; i < p->nc && p->names; i++) {
    free(p->names[i]);
    if (p->holds) etcd_range_free(&p->holds[i]);
    if (p->owns) store_free(p->owns[i]);
  }
  for (size_t i = 0; p->ev && i < p->nev; i++) json_decref(p->ev[i].obj);
  free(p->ch);
  free(p->rm);
  free(p->names);
  free(p->holds);
  free(p->owns);
  free(p->ev);
  memset(p, 0, sizeof *p);
}

static replica_Error prepare(replica *r, store_env *s, const Cache *c, json_t *rec, uint64_t n, Prep *p) {
  memset(p, 0, sizeof *p);
  json_t *changes = json_object_get(rec, "changes"), *evs = json_object_get(rec, "events");
  size_t nc = p->nc = json_array_size(changes);
  p->nev = json_array_size(evs);
  p->ch = calloc(nc + 1, sizeof *p->ch);
  p->rm = calloc(nc + 1, sizeof *p->rm);
  p->names = calloc(nc + 1, sizeof *p->names);
  p->holds = calloc(nc + 1, sizeof *p->holds);
  p->owns = calloc(nc + 1, sizeof *p->owns);
  p->ev = calloc(p->nev + 1, sizeof *p->ev);
  if (!p->ch || !p->rm || !p->names || !p->holds || !p->owns || !p->ev)
    return rfail(r, REPLICA_ENOMEM, "out of memory");
  /* the keyed outcomes written with it: the store indexes their keys (redacted in place: copies) */
  for (size_t i = 0; i < p->nev; i++)
    if (!(p->ev[i].obj = json_deep_copy(json_array_get(evs, i)))) return rfail(r, REPLICA_ENOMEM, "out of memory");
  for (size_t i = 0; i < nc; i++) {
    json_t *row = json_array_get(changes, i);
    const char *k = json_string_value(json_array_get(row, 0)), *name = json_string_value(json_array_get(row, 1)),
               *nw = json_string_value(json_array_get(row, 3));
    int kind = k ? store_kind_parse(k) : 0;
    if (!kind || !name || !nw)
      return rfail(r, REPLICA_EPROTO, "etcd's record of revision %llu has a malformed change", (unsigned long long)n);
    if (!*nw) {
      p->rm[p->nrm++] = (store_key){kind, name};
    } else {
      replica_Error err = fetch_entry(r, s, c, nw, kind, name, &p->ch[p->nch], &p->names[i], &p->holds[i], &p->owns[i]);
      if (err) return err;
      p->nch++;
    }
  }
  const char *rk = json_string_value(json_object_get(rec, "kind"));
  p->info = (store_rev_info){
    .kind = rk ? store_rev_kind_parse(rk) : 0,
    .generation = (uint64_t)json_integer_value(json_object_get(rec, "generation")),
    .time_ms = json_integer_value(json_object_get(rec, "time")),
    .kernel_version = json_string_value(json_object_get(rec, "kernel")),
    .summary = json_string_value(json_object_get(rec, "summary")),
    .response_id = json_string_value(json_object_get(rec, "response")),
    .foreign = json_string_value(json_object_get(rec, "foreign")),
  };
  if (p->info.response_id && !*p->info.response_id) p->info.response_id = NULL;
  p->target =
    p->info.kind == STORE_REV_ROLLBACK ? (uint64_t)json_integer_value(json_object_get(rec, "rollback_of")) : 0;
  return REPLICA_OK;
}

/* Write the prepared revisions first..first+n-1 on top of s's CURRENT
** (first - 1) in one store transaction. */
static replica_Error write_group(replica *r, store_env *s, Prep *p, size_t n, uint64_t first) {
  if (!n) return REPLICA_OK;
  store_rev_in *in = calloc(n, sizeof *in);
  if (!in) return rfail(r, REPLICA_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    in[i] = (store_rev_in){&p[i].info, p[i].ch, p[i].nch, p[i].rm, p[i].nrm, p[i].ev, p[i].nev, 0, 0, NULL};
  replica_Error err = REPLICA_OK;
  if (store_publish_group(s, first - 1, in, n, 0, NULL, NULL) != STORE_OK)
    err = rfail(r, REPLICA_ESTORE, "applying revisions %llu to %llu to the store: %s", (unsigned long long)first,
                (unsigned long long)(first + n - 1), store_errmsg(s));
  for (size_t i = 0; i < n && !err; i++)
    if (in[i].rev != first + i)
      err = rfail(r, REPLICA_EDIVERGED, "revision %llu changed nothing in this store: it diverged from etcd",
                  (unsigned long long)(first + i));
  free(in);
  return err;
}

/* Apply the records recs[0..n) (revisions first, first+1, ...): runs of
** ordinary ones in one store transaction each, a rollback with the
** store's revert. */
static replica_Error apply(replica *r, store_env *s, json_t **recs, size_t n, uint64_t first) {
  Prep *p = calloc(n + 1, sizeof *p);
  if (!p) return rfail(r, REPLICA_ENOMEM, "out of memory");
  Cache c = {0};
  replica_Error err = prefetch(r, s, recs, n, &c);
  size_t run = 0; /* prepared, not yet written: p[run_from..i) */
  uint64_t run_from = first;
  for (size_t i = 0; i < n && !err; i++) {
    uint64_t rev = first + i;
    if ((err = prepare(r, s, &c, recs[i], rev, &p[run]))) {
      run++;
      break;
    }
    if (p[run].target) { /* written first: what is prepared, then the revert */
      if ((err = write_group(r, s, p, run, run_from))) {
        run++;
        break;
      }
      uint64_t got = 0;
      if (store_publish_revert(s, rev - 1, p[run].target, &p[run].info, &got) != STORE_OK)
        err =
          rfail(r, REPLICA_ESTORE, "applying revision %llu to the store: %s", (unsigned long long)rev, store_errmsg(s));
      else if (got != rev)
        err = rfail(r, REPLICA_EDIVERGED, "revision %llu changed nothing in this store", (unsigned long long)rev);
      for (size_t k = 0; k <= run; k++) prep_free(&p[k]);
      run = 0;
      run_from = rev + 1;
      continue;
    }
    run++;
  }
  if (!err) err = write_group(r, s, p, run, run_from);
  for (size_t k = 0; k < run; k++) prep_free(&p[k]);
  free(p);
  cache_free(&c);
  return err;
}

/* The store's revision n against etcd's record of it. */
static replica_Error same(replica *r, store_env *s, json_t *rec, uint64_t n) {
  rrev v;
  replica_Error err = rrev_read(r, s, n, 0, &v);
  if (err) return err;
  json_t *plain = json_copy(rec); /* the events are not the manifest's */
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
  uint64_t from = local ? local : 1; /* the store's own CURRENT first: it must be etcd's */
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
    json_t *recs[PAGE];
    size_t n = 0;
    uint64_t first = from;
    for (size_t i = 0; i < g.n && !err; i++) {
      if (!(recs[n] = record_of(r, &g.kvs[i], first + i, &err))) break;
      n++;
    }
    etcd_range_free(&g);
    /* the store's own CURRENT is checked, not applied; then the page in one go */
    size_t skip = first <= local ? (size_t)(local - first + 1) : 0;
    if (skip > n) skip = n;
    if (!err && n > skip) err = apply(r, s, recs + skip, n - skip, first + skip);
    for (size_t i = 0; i < n && !err; i++) err = same(r, s, recs[i], first + i);
    if (!err && first + n - 1 > local) *applied = first + n - 1;
    for (size_t i = 0; i < n; i++) json_decref(recs[i]);
    from = first + n;
  }
  return err;
}
