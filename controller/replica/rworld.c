/*
** rworld.c — a world in etcd (replica.h): the replica, its keys, its
** errors, and the head (leader, ceiling, CURRENT) read at one revision.
*/
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replica_int.h"

const char *replica_error_name(replica_Error err) {
  static const char *const names[] = {"ok",    "fenced",   "uncertain", "unavailable", "too-big",  "diverged",
                                      "store", "protocol", "etcd",      "invalid",     "no-memory"};
  return (unsigned)err < sizeof names / sizeof *names ? names[err] : "?";
}

replica_Error rfail(replica *r, replica_Error err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->errmsg, sizeof r->errmsg, fmt, ap);
  va_end(ap);
  return err;
}

replica_Error retcd(replica *r, etcd_Error err, const char *what) {
  replica_Error out;
  switch (err) {
  case ETCD_OK: return REPLICA_OK;
  case ETCD_EUNAVAILABLE: out = REPLICA_EUNAVAILABLE; break;
  case ETCD_EUNCERTAIN: out = REPLICA_EUNCERTAIN; break;
  case ETCD_ETOOBIG: out = REPLICA_ETOOBIG; break;
  case ETCD_ELEASE: out = REPLICA_EFENCED; break;
  case ETCD_ENOMEM: out = REPLICA_ENOMEM; break;
  default: out = REPLICA_EETCD; break;
  }
  return rfail(r, out, "%s: %s", what, etcd_errmsg(r->e));
}

const char *replica_errmsg(const replica *r) { return r->errmsg; }
etcd *replica_etcd(replica *r) { return r->e; }
uint64_t replica_ceiling(const replica *r) { return r->ceiling; }

size_t rkey(const replica *r, char *out, size_t cap, const char *fmt, ...) {
  int n = snprintf(out, cap, "%s", r->prefix);
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(out + n, cap - (size_t)n, fmt, ap);
  va_end(ap);
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

static int world_ok(const char *w) {
  size_t n = w ? strlen(w) : 0;
  if (!n || n > REPLICA_WORLD_MAX || !strcmp(w, ".") || !strcmp(w, "..")) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') || (w[i] >= '0' && w[i] <= '9') || w[i] == '.' ||
          w[i] == '_' || w[i] == '-'))
      return 0;
  return 1;
}

replica *replica_new(const char *urls, const char *world, char *err, size_t errlen) {
  if (!world_ok(world)) {
    snprintf(err, errlen, "world name '%.80s' is not 1-64 of A-Z a-z 0-9 . _ -", world ? world : "");
    return NULL;
  }
  replica *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (!(r->e = etcd_new(urls, err, errlen)) || !(r->ek = etcd_new(urls, err, errlen)) ||
      !(r->ec = etcd_new(urls, err, errlen))) {
    etcd_free(r->e);
    etcd_free(r->ek);
    free(r);
    return NULL;
  }
  r->compact_every = REPLICA_COMPACT_EVERY;
  /* longer than etcd's own wait for a proposal (5 s and two election
     timeouts): a commit made during an election gets etcd's answer, not
     ours — an uncertain commit ends the kernel.  Safe: a commit that lands
     after the lease lapsed fails its compares. */
  etcd_set_timeouts(r->e, 0, REPLICA_REQUEST_MS);
  pthread_mutex_init(&r->mu, NULL);
  r->plen = (size_t)snprintf(r->prefix, sizeof r->prefix, "jiti/%s/", world);
  return r;
}

void replica_free(replica *r) {
  if (!r) return;
  etcd_free(r->e);
  etcd_free(r->ek);
  etcd_free(r->ec);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* A decimal value of a range's only key (0 when absent); -1 malformed. */
static int range_u64(const etcd_Range *g, uint64_t *v) {
  *v = 0;
  if (!g->n) return 0;
  char *end;
  const char *s = g->kvs[0].value;
  if (!g->kvs[0].value_len || g->kvs[0].value_len > 20) return -1;
  *v = strtoull(s, &end, 10);
  return *end ? -1 : 0;
}

replica_Error replica_head(replica *r, replica_Head *h) {
  memset(h, 0, sizeof *h);
  char kc[128], kg[128], kl[128];
  size_t nc = rkey(r, kc, sizeof kc, "current"), ng = rkey(r, kg, sizeof kg, "generation"),
         nl = rkey(r, kl, sizeof kl, "leader");
  /* three ranges at one etcd revision: a transaction without compares */
  etcd_txn *t = etcd_txn_new();
  if (!t) return rfail(r, REPLICA_ENOMEM, "out of memory");
  etcd_txn_range(t, ETCD_SUCCESS, kc, nc, NULL, 0);
  etcd_txn_range(t, ETCD_SUCCESS, kg, ng, NULL, 0);
  etcd_txn_range(t, ETCD_SUCCESS, kl, nl, NULL, 0);
  etcd_TxnResult res;
  etcd_Error err = etcd_txn_commit(r->e, t, &res);
  etcd_txn_free(t);
  if (err) return retcd(r, err, "reading the world's head");
  replica_Error out = REPLICA_OK;
  if (res.nranges != 3 || range_u64(&res.ranges[0], &h->current) || range_u64(&res.ranges[1], &h->ceiling))
    out = rfail(r, REPLICA_EPROTO, "etcd's %scurrent or %sgeneration is not a number: not a jiti world?", r->prefix,
                r->prefix);
  if (!out) {
    h->etcd_revision = res.revision;
    if (res.ranges[2].n) {
      snprintf(h->leader, sizeof h->leader, "%.*s", (int)res.ranges[2].kvs[0].value_len, res.ranges[2].kvs[0].value);
      h->leader_lease = res.ranges[2].kvs[0].lease;
      h->leader_create = res.ranges[2].kvs[0].create_revision;
    }
    if (res.ranges[1].n) h->ceiling_mod = res.ranges[1].kvs[0].mod_revision;
  }
  etcd_txn_result_free(&res);
  return out;
}
