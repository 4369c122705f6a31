/*
** rrecord.c — a revision as etcd keeps it (replica.h): its record, the
** manifest's fields and changes as JSON, read from a store; and the
** encoding of an entry under entry/<hash>.
**
** A standby that applies a record writes the same manifest (the same
** parent, generation, time, kind, texts and delta on the same map), so the
** record read back from its store equals the one it applied: that is how
** a standby checks each revision (rapply.c).
*/
#include <stdlib.h>
#include <string.h>
#include "replica_int.h"

static int zero(const uint8_t h[32]) {
  for (int i = 0; i < 32; i++)
    if (h[i]) return 0;
  return 1;
}

static json_t *hex_or_empty(const uint8_t h[32]) {
  char hex[65] = "";
  if (!zero(h)) store_hash_hex(h, hex);
  return json_string(hex);
}

void rrev_free(rrev *v) {
  json_decref(v->record);
  for (size_t i = 0; i < v->n; i++) store_free(v->entries[i]);
  free(v->entries);
  memset(v, 0, sizeof *v);
}

replica_Error rrev_read(replica *r, store_env *s, uint64_t rev, int with_entries, rrev *out) {
  memset(out, 0, sizeof *out);
  store_manifest *m;
  int se = store_manifest_read(s, rev, &m);
  if (se)
    return rfail(r, REPLICA_ESTORE, "reading revision %llu of the store: %s", (unsigned long long)rev, store_errmsg(s));
  json_t *changes = json_array();
  json_t *rec =
    json_pack("{sIsIsIsIsssIsssssssssO}", "rev", (json_int_t)m->rev, "parent", (json_int_t)m->parent, "generation",
              (json_int_t)m->generation, "time", (json_int_t)m->time_ms, "kind", store_rev_kind_name(m->kind),
              "rollback_of", (json_int_t)m->rollback_of, "kernel", m->kernel_version, "summary", m->summary, "response",
              m->response_id, "foreign", m->foreign, "changes", changes);
  json_decref(changes);
  out->entries = calloc(m->nchanges + 1, sizeof *out->entries);
  if (!rec || !changes || !out->entries) {
    json_decref(rec);
    store_free(m);
    free(out->entries);
    out->entries = NULL;
    return rfail(r, REPLICA_ENOMEM, "out of memory");
  }
  out->rev = m->rev;
  out->generation = m->generation;
  out->record = rec;
  for (size_t i = 0; i < m->nchanges; i++) {
    const store_change *c = &m->changes[i];
    json_t *row =
      json_pack("[ssoo]", store_kind_name(c->kind), c->name, hex_or_empty(c->old_hash), hex_or_empty(c->new_hash));
    if (!row || json_array_append_new(changes, row)) {
      store_free(m);
      rrev_free(out);
      return rfail(r, REPLICA_ENOMEM, "out of memory");
    }
    if (!with_entries || zero(c->new_hash)) continue;
    if (store_get_entry(s, c->new_hash, &out->entries[out->n])) {
      replica_Error err = rfail(r, REPLICA_ESTORE, "reading entry %s %s of revision %llu: %s", store_kind_name(c->kind),
                                c->name, (unsigned long long)rev, store_errmsg(s));
      store_free(m);
      rrev_free(out);
      return err;
    }
    out->n++;
  }
  store_free(m);
  return REPLICA_OK;
}

void *rentry_encode(const store_entry *e, size_t *len) {
  size_t nl = strlen(e->name);
  unsigned char *p = malloc(3 + nl + e->len);
  if (!p) return NULL;
  p[0] = (unsigned char)e->kind;
  p[1] = (unsigned char)(nl >> 8);
  p[2] = (unsigned char)nl;
  memcpy(p + 3, e->name, nl);
  if (e->len) memcpy(p + 3 + nl, e->bytes, e->len);
  *len = 3 + nl + e->len;
  return p;
}

int rentry_decode(const char *p, size_t n, store_entry *out) {
  if (n < 3) return -1;
  const unsigned char *u = (const unsigned char *)p;
  size_t nl = (size_t)u[1] << 8 | u[2];
  if (!nl || 3 + nl > n) return -1;
  out->kind = u[0];
  out->name = p + 3; /* followed by the bytes, not a NUL: the caller copies it */
  out->bytes = p + 3 + nl;
  out->len = n - 3 - nl;
  return (int)nl;
}
