/* st_traffic.c — the traffic sample (format 4, database "traffic"): per
** function and argument signature, a reservoir of successful calls to
** replay against a repair candidate.
**
** Keys (F: SHA-256 of the function's name, S: of the signature), so that
** one function's records are one cursor range, its header first and each
** signature's header before its calls:
**   F            u8 1, u32 signatures, u64 bytes (of requests and results
**                kept), u16 |function|, function
**   F S 0x00     u8 1, u64 seen (calls offered), u16 |signature|, signature
**   F S k        (k = 1..STORE_TRAFFIC_PER_SIGNATURE) u8 1, i64 time,
**                32 digest, u32 |request|, u32 |result|, request, result
** Reservoir sampling (algorithm R) per signature: the n-th call offered
** fills slot n while n <= the capacity, then replaces slot (rng % n) + 1
** when rng % n is below it; so a signature's slots hold a uniform sample
** of its calls, and the caller's random values make it repeatable. */
#include <stdlib.h>
#include <string.h>
#include "jtext.h"
#include "st_int.h"

#define TR_V1 1
#define FKEY 32
#define SKEY 65

static int name_ok(const char *t, size_t n) { return n && n <= STORE_NAME_MAX && jtext_utf8_valid(t, n); }

typedef struct FHead { uint32_t nsigs; uint64_t bytes; } FHead;

static int fhead_decode(const MDB_val *v, FHead *h, const char **fn, size_t *fl) {
  st_rd r = {v->mv_data, (const uint8_t *)v->mv_data + v->mv_size, 0};
  int ver = st_rd_u8(&r);
  h->nsigs = st_rd_u32(&r);
  h->bytes = st_rd_u64(&r);
  *fl = st_rd_u16(&r);
  *fn = (const char *)st_rd_take(&r, *fl);
  return ver == TR_V1 && !r.bad && r.p == r.end && name_ok(*fn, *fl) && h->nsigs <= STORE_TRAFFIC_SIGNATURES &&
                 h->bytes <= STORE_TRAFFIC_BYTES ? 0 : -1;
}

static int shead_decode(const MDB_val *v, uint64_t *seen, const char **sig, size_t *sl) {
  st_rd r = {v->mv_data, (const uint8_t *)v->mv_data + v->mv_size, 0};
  int ver = st_rd_u8(&r);
  *seen = st_rd_u64(&r);
  *sl = st_rd_u16(&r);
  *sig = (const char *)st_rd_take(&r, *sl);
  return ver == TR_V1 && !r.bad && r.p == r.end && *sl <= STORE_SIGNATURE_MAX && jtext_utf8_valid(*sig, *sl) &&
                 *seen ? 0 : -1;
}

typedef struct Sample { int64_t time; const uint8_t *digest; const char *req, *res; size_t ql, rl; } Sample;

static int sample_decode(const MDB_val *v, Sample *s) {
  st_rd r = {v->mv_data, (const uint8_t *)v->mv_data + v->mv_size, 0};
  int ver = st_rd_u8(&r);
  s->time = (int64_t)st_rd_u64(&r);
  s->digest = st_rd_take(&r, 32);
  s->ql = st_rd_u32(&r);
  s->rl = st_rd_u32(&r);
  s->req = (const char *)st_rd_take(&r, s->ql);
  s->res = (const char *)st_rd_take(&r, s->rl);
  return ver == TR_V1 && !r.bad && r.p == r.end && s->ql <= STORE_TRAFFIC_TEXT_MAX &&
                 s->rl <= STORE_TRAFFIC_TEXT_MAX ? 0 : -1;
}

static int corrupt_tr(store_env *s, const char *function, const char *why) {
  return st_fail(s, STORE_ECORRUPT, "the 'traffic' database: a record of %.200s is damaged: %s", function, why);
}

/* ---- recording */

typedef struct Rec {
  const char *fn, *sig, *req, *res;
  size_t fl, sl, ql, rl;
  const uint8_t *digest;
  int64_t t;
  uint64_t rng;
  uint8_t fd[32], sd[32];
  int outcome;
  st_hasher *hash_result;      /* STORE_TRAFFIC_HASH_RESULT: digest the result
                                  into own, once the call is kept; else NULL */
  uint8_t own[32];
} Rec;

static int put_fhead(store_env *s, MDB_txn *txn, const Rec *a, const FHead *h) {
  uint8_t buf[15 + STORE_NAME_MAX];
  st_wr w = {buf};
  st_wr_u8(&w, TR_V1);
  st_wr_u32(&w, h->nsigs);
  st_wr_u64(&w, h->bytes);
  st_wr_u16(&w, (uint16_t)a->fl);
  st_wr_bytes(&w, a->fn, a->fl);
  return st_put(s, txn, s->traffic, a->fd, FKEY, buf, (size_t)(w.p - buf), 0, "writing the traffic sample");
}

static int put_shead(store_env *s, MDB_txn *txn, const Rec *a, const uint8_t key[SKEY], uint64_t seen) {
  uint8_t buf[11 + STORE_SIGNATURE_MAX];
  st_wr w = {buf};
  st_wr_u8(&w, TR_V1);
  st_wr_u64(&w, seen);
  st_wr_u16(&w, (uint16_t)a->sl);
  st_wr_bytes(&w, a->sig, a->sl);
  return st_put(s, txn, s->traffic, key, SKEY, buf, (size_t)(w.p - buf), 0, "writing the traffic sample");
}

/* The signature headers a batch of calls changed, written once at its
** end: a busy signature's calls are mostly sampled out, and each would
** otherwise rewrite its header (the count of calls offered) — in journal
** mode a record's worth of bytes per call. */
typedef struct Seen { uint8_t key[SKEY]; uint64_t seen; const Rec *by; } Seen;
typedef struct SeenSet { Seen *v; size_t n; } SeenSet;

static Seen *seen_find(SeenSet *c, const uint8_t key[SKEY]) {
  for (size_t i = 0; c && i < c->n; i++)
    if (!memcmp(c->v[i].key, key, SKEY)) return &c->v[i];
  return NULL;
}

/* The signature's count of calls offered is now seen: written now, or at
** the batch's end. */
static int set_seen(store_env *s, MDB_txn *txn, SeenSet *c, const Rec *a, const uint8_t key[SKEY], uint64_t seen) {
  if (!c) return put_shead(s, txn, a, key, seen);
  Seen *e = seen_find(c, key);
  if (!e) {
    e = &c->v[c->n++];   /* room: one per call of the batch */
    memcpy(e->key, key, SKEY);
  }
  e->seen = seen;
  e->by = a;
  return STORE_OK;
}

static int record_one(store_env *s, MDB_txn *txn, Rec *a, SeenSet *c) {
  FHead h = {0, 0};
  uint64_t seen = 0;
  uint8_t key[SKEY];
  MDB_val k = {FKEY, a->fd}, v;
  const char *text;
  size_t tl;
  int rc = mdb_get(txn, s->traffic, &k, &v), r;
  if (rc == 0 && fhead_decode(&v, &h, &text, &tl) != 0) return corrupt_tr(s, a->fn, "its header");
  if (rc && rc != MDB_NOTFOUND) return st_mdb(s, rc, "reading the traffic sample");
  memcpy(key, a->fd, 32);
  memcpy(key + 32, a->sd, 32);
  key[64] = 0;
  k = (MDB_val){SKEY, key};
  Seen *known = seen_find(c, key);
  rc = known ? 0 : mdb_get(txn, s->traffic, &k, &v);
  int fresh = rc == MDB_NOTFOUND;
  if (known) seen = known->seen;
  else if (rc == 0 && shead_decode(&v, &seen, &text, &tl) != 0) return corrupt_tr(s, a->fn, "a signature's header");
  if (rc && !fresh) return st_mdb(s, rc, "reading the traffic sample");
  if (fresh && h.nsigs >= STORE_TRAFFIC_SIGNATURES) {
    a->outcome = STORE_TRAFFIC_FULL;
    return ST_NOCHANGE;
  }
  seen++;
  unsigned slot;
  if (seen <= STORE_TRAFFIC_PER_SIGNATURE) {
    slot = (unsigned)seen;
  } else {
    uint64_t j = a->rng % seen;
    if (j >= STORE_TRAFFIC_PER_SIGNATURE) {
      a->outcome = STORE_TRAFFIC_SAMPLED_OUT;
      return set_seen(s, txn, c, a, key, seen);
    }
    slot = (unsigned)j + 1;
  }
  /* the call it replaces, if any, and the bytes the function holds after */
  uint8_t skey[SKEY];
  memcpy(skey, key, 64);
  skey[64] = (uint8_t)slot;
  k = (MDB_val){SKEY, skey};
  uint64_t old = 0;
  Sample was;
  if ((rc = mdb_get(txn, s->traffic, &k, &v)) == 0) {
    if (sample_decode(&v, &was) != 0) return corrupt_tr(s, a->fn, "a call kept");
    old = was.ql + was.rl;
  } else if (rc != MDB_NOTFOUND) {
    return st_mdb(s, rc, "reading the traffic sample");
  }
  if (h.bytes - old + a->ql + a->rl > STORE_TRAFFIC_BYTES) {
    a->outcome = STORE_TRAFFIC_FULL;
    return fresh ? ST_NOCHANGE : set_seen(s, txn, c, a, key, seen);   /* counted, not kept */
  }
  a->outcome = old || rc == 0 ? STORE_TRAFFIC_REPLACED : STORE_TRAFFIC_KEPT;
  if (a->hash_result) {   /* only a call kept costs its digest */
    if (st_sha256(a->hash_result->md ? a->hash_result : NULL, a->res, a->rl, a->own) != STORE_OK)
      return st_fail(s, STORE_ENOMEM, "out of memory hashing a result");
    a->digest = a->own;
  }
  h.bytes = h.bytes - old + a->ql + a->rl;
  if (fresh) h.nsigs++;
  size_t n = 1 + 8 + 32 + 4 + 4 + a->ql + a->rl;
  uint8_t *buf = malloc(n);
  if (!buf) return st_fail(s, STORE_ENOMEM, "out of memory writing the traffic sample");
  st_wr w = {buf};
  st_wr_u8(&w, TR_V1);
  st_wr_u64(&w, (uint64_t)a->t);
  st_wr_bytes(&w, a->digest, 32);
  st_wr_u32(&w, (uint32_t)a->ql);
  st_wr_u32(&w, (uint32_t)a->rl);
  st_wr_bytes(&w, a->req, a->ql);
  st_wr_bytes(&w, a->res, a->rl);
  r = st_put(s, txn, s->traffic, skey, SKEY, buf, n, 0, "writing the traffic sample");
  free(buf);
  if (r == STORE_OK) r = set_seen(s, txn, c, a, key, seen);
  if (r == STORE_OK) r = put_fhead(s, txn, a, &h);
  return r;
}

/* The checks of one call offered: its record filled, or STORE_EINVAL.
** The names' digests: the call before's (prev, may be NULL) when it names
** the same, else hashed with h. */
static int offer_check(store_env *s, const store_traffic_offer *o, Rec *a, const Rec *prev, st_hasher *h) {
  *a = (Rec){o->function, o->signature, o->request, o->result, 0, 0, 0, 0, o->digest,
             o->time_ms ? o->time_ms : st_now_ms(), o->rng, {0}, {0}, 0, NULL, {0}};
  a->fl = o->function ? strlen(o->function) : 0;
  if (!name_ok(o->function, a->fl))
    return st_fail(s, STORE_EINVAL, "a recorded call's function is 1 to %u bytes of UTF-8", STORE_NAME_MAX);
  if (!o->signature || (a->sl = strlen(o->signature)) > STORE_SIGNATURE_MAX || !jtext_utf8_valid(o->signature, a->sl))
    return st_fail(s, STORE_EINVAL, "a recorded call's signature is at most %u bytes of UTF-8",
                   STORE_SIGNATURE_MAX);
  if (!o->request || !o->result)
    return st_fail(s, STORE_EINVAL, "a recorded call needs its request, its result and their digest");
  a->ql = strlen(o->request);
  a->rl = strlen(o->result);
  if (a->ql > STORE_TRAFFIC_TEXT_MAX || a->rl > STORE_TRAFFIC_TEXT_MAX)
    return st_fail(s, STORE_EINVAL, "a recorded call's request (%zu bytes) or result (%zu bytes) is over %u "
                   "bytes: record only small, readable calls", a->ql, a->rl, STORE_TRAFFIC_TEXT_MAX);
  if (!jtext_utf8_valid(o->request, a->ql) || !jtext_utf8_valid(o->result, a->rl))
    return st_fail(s, STORE_EINVAL, "a recorded call's request and result are UTF-8 text");
  st_hasher *hh = h && h->md ? h : NULL;
  int same_fn = prev && !strcmp(prev->fn, o->function), same_sig = prev && !strcmp(prev->sig, o->signature);
  if (same_fn) memcpy(a->fd, prev->fd, 32);
  if (same_sig) memcpy(a->sd, prev->sd, 32);
  if ((!same_fn && st_sha256(hh, o->function, a->fl, a->fd) != STORE_OK) ||
      (!same_sig && st_sha256(hh, o->signature, a->sl, a->sd) != STORE_OK))
    return st_fail(s, STORE_ENOMEM, "out of memory hashing a name");
  return STORE_OK;
}

typedef struct Many { Rec *v; size_t n; SeenSet seen; } Many;

/* Each call in turn, each on what the ones before it wrote (the headers
** they changed: the set's), then the headers. */
static int record_many_txn(store_env *s, MDB_txn *txn, void *arg) {
  Many *m = arg;
  int any = 0, r;
  m->seen.n = 0;   /* (run again from the start when the map grew) */
  for (size_t i = 0; i < m->n; i++) {
    m->v[i].outcome = 0;
    r = record_one(s, txn, &m->v[i], &m->seen);
    if (r == ST_NOCHANGE) continue;
    if (r != STORE_OK) return r;
    any = 1;
  }
  for (size_t i = 0; i < m->seen.n; i++)
    if ((r = put_shead(s, txn, m->seen.v[i].by, m->seen.v[i].key, m->seen.v[i].seen)) != STORE_OK) return r;
  return any ? STORE_OK : ST_NOCHANGE;
}

int store_traffic_record_many(store_env *s, const store_traffic_offer *calls, size_t n, unsigned flags,
                              int *outcomes) {
  s->msg[0] = '\0';
  if (outcomes)
    for (size_t i = 0; i < n; i++) outcomes[i] = 0;
  if (n && !calls) return st_fail(s, STORE_EINVAL, "store_traffic_record_many: no calls");
  if (flags & ~(STORE_GROUP_SYNC_LATER | STORE_TRAFFIC_HASH_RESULT))
    return st_fail(s, STORE_EINVAL, "unknown flags %#x", flags);
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  if (!n) return STORE_OK;
  Many m = {malloc(n * sizeof *m.v), n, {malloc(n * sizeof(Seen)), 0}};
  if (!m.v || !m.seen.v) {
    free(m.v);
    free(m.seen.v);
    return st_fail(s, STORE_ENOMEM, "out of memory recording the traffic sample");
  }
  /* one SHA-256 fetched for the batch (EVP_Digest would fetch it per call) */
  st_hasher h;
  if (st_hasher_init(&h) != STORE_OK) h = (st_hasher){NULL, NULL};
  int r = STORE_OK;
  for (size_t i = 0; i < n && r == STORE_OK; i++) {
    r = offer_check(s, &calls[i], &m.v[i], i ? &m.v[i - 1] : NULL, &h);
    if (flags & STORE_TRAFFIC_HASH_RESULT) m.v[i].hash_result = &h;
  }
  if (r == STORE_OK) r = st_write(s, record_many_txn, &m, (flags & STORE_GROUP_SYNC_LATER) ? ST_W_SYNC_LATER : 0);
  if (r == STORE_OK && outcomes)
    for (size_t i = 0; i < n; i++) outcomes[i] = m.v[i].outcome;
  st_hasher_free(&h);
  free(m.v);
  free(m.seen.v);
  return r;
}

int store_traffic_record(store_env *s, const char *function, const char *signature, const char *request,
                         const char *result, const uint8_t digest[32], int64_t time_ms, uint64_t rng,
                         unsigned flags, int *outcome) {
  store_traffic_offer o = {function, signature, request, result, {0}, time_ms, rng};
  if (outcome) *outcome = 0;
  if (!digest) {
    s->msg[0] = '\0';
    return st_fail(s, STORE_EINVAL, "a recorded call needs its request, its result and their digest");
  }
  memcpy(o.digest, digest, 32);
  return store_traffic_record_many(s, &o, 1, flags, outcome);
}

/* ---- reading and forgetting */

static char *dupn(const char *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = '\0';
  }
  return d;
}

int store_traffic_list(store_env *s, const char *function, store_traffic_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  uint8_t fd[32], sd[32] = {0};
  char *sig = NULL;
  int rc, r, have_sig = 0;
  s->msg[0] = '\0';
  if (!fn || !function || !name_ok(function, strlen(function)))
    return st_fail(s, STORE_EINVAL, "store_traffic_list: a function's name and a callback");
  if (!s->repairs) return STORE_OK;
  if (st_sha256(NULL, function, strlen(function), fd) != STORE_OK)
    return st_fail(s, STORE_ENOMEM, "out of memory hashing a name");
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((rc = mdb_cursor_open(txn, s->traffic, &cur)) != 0) { r = st_mdb(s, rc, "reading the traffic sample"); goto out; }
  MDB_val k = {FKEY, fd}, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    const uint8_t *kp = k.mv_data;
    if (k.mv_size < FKEY || memcmp(kp, fd, 32)) break;
    if (k.mv_size == FKEY) continue;   /* the function's header */
    if (k.mv_size != SKEY) { r = corrupt_tr(s, function, "a key is malformed"); goto out; }
    if (kp[64] == 0) {
      uint64_t seen;
      const char *t;
      size_t tl;
      if (shead_decode(&v, &seen, &t, &tl) != 0) { r = corrupt_tr(s, function, "a signature's header"); goto out; }
      free(sig);
      if (!(sig = dupn(t, tl))) { r = st_fail(s, STORE_ENOMEM, "out of memory reading the traffic sample"); goto out; }
      memcpy(sd, kp + 32, 32);
      have_sig = 1;
      continue;
    }
    Sample sm;
    if (!have_sig || memcmp(sd, kp + 32, 32) || kp[64] > STORE_TRAFFIC_PER_SIGNATURE || sample_decode(&v, &sm) != 0) {
      r = corrupt_tr(s, function, "a call kept");
      goto out;
    }
    store_traffic_call c = {sig, dupn(sm.req, sm.ql), sm.ql, dupn(sm.res, sm.rl), sm.rl, {0}, sm.time, kp[64]};
    memcpy(c.digest, sm.digest, 32);
    int stop = 0;
    if (!c.request || !c.result) r = st_fail(s, STORE_ENOMEM, "out of memory reading the traffic sample");
    else stop = fn(arg, &c);
    free((char *)c.request);
    free((char *)c.result);
    if (r != STORE_OK || stop) goto out;
  }
  if (rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the traffic sample");
out:
  free(sig);
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}

static int forget_txn(store_env *s, MDB_txn *txn, void *arg) {
  const uint8_t *fd = arg;
  MDB_cursor *cur;
  int rc, r = STORE_OK, any = 0;
  if ((rc = mdb_cursor_open(txn, s->traffic, &cur)) != 0) return st_mdb(s, rc, "reading the traffic sample");
  for (;;) {
    MDB_val k = {FKEY, (void *)fd}, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc || k.mv_size < FKEY || memcmp(k.mv_data, fd, 32)) break;
    uint8_t key[SKEY];
    size_t kl = k.mv_size > SKEY ? SKEY : k.mv_size;
    memcpy(key, k.mv_data, kl);
    if ((r = st_cursor_del(s, cur, s->traffic, key, kl, "forgetting the traffic sample")) != STORE_OK) break;
    any = 1;
  }
  mdb_cursor_close(cur);
  if (r == STORE_OK && rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the traffic sample");
  return r == STORE_OK && !any ? ST_NOCHANGE : r;
}

int store_traffic_forget(store_env *s, const char *function, unsigned flags) {
  uint8_t fd[32];
  s->msg[0] = '\0';
  if (!function || !name_ok(function, strlen(function)))
    return st_fail(s, STORE_EINVAL, "store_traffic_forget: a function's name, 1 to %u bytes of UTF-8",
                   STORE_NAME_MAX);
  if (flags & ~STORE_GROUP_SYNC_LATER) return st_fail(s, STORE_EINVAL, "unknown flags %#x", flags);
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  if (st_sha256(NULL, function, strlen(function), fd) != STORE_OK)
    return st_fail(s, STORE_ENOMEM, "out of memory hashing a name");
  return st_write(s, forget_txn, fd, (flags & STORE_GROUP_SYNC_LATER) ? ST_W_SYNC_LATER : 0);
}

int store_traffic_functions(store_env *s, store_traffic_function_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  char name[STORE_NAME_MAX + 1];
  int rc, r;
  s->msg[0] = '\0';
  if (!fn) return st_fail(s, STORE_EINVAL, "store_traffic_functions: a callback");
  if (!s->repairs) return STORE_OK;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((rc = mdb_cursor_open(txn, s->traffic, &cur)) != 0) {
    r = st_mdb(s, rc, "reading the traffic sample");
    goto out;
  }
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != FKEY) continue;   /* a signature's header, a call */
    FHead h;
    const char *fname;
    size_t fl;
    if (fhead_decode(&v, &h, &fname, &fl) != 0) {
      r = corrupt_tr(s, "a function", "its header");
      goto out;
    }
    memcpy(name, fname, fl);
    name[fl] = '\0';
    if (fn(arg, name, h.nsigs, h.bytes)) goto out;
  }
  if (rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the traffic sample");
out:
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}

/* ---- verification: every record decodes, each function's header counts
** its signatures and bytes, every call sits under its signature's header
** within the reservoir's capacity. */

int st_verify_traffic(store_env *s, MDB_txn *txn) {
  MDB_cursor *cur;
  MDB_val k, v;
  uint8_t fd[32] = {0}, sd[32] = {0}, h[32];
  char fname[STORE_NAME_MAX + 1] = "";
  FHead head = {0, 0};
  uint64_t sigs = 0, bytes = 0, seen = 0;
  int rc, r = STORE_OK, have_f = 0, have_s = 0;
  if (!s->repairs) return STORE_OK;
  if ((rc = mdb_cursor_open(txn, s->traffic, &cur)) != 0) return st_mdb(s, rc, "reading the traffic sample");
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    const uint8_t *kp = rc == 0 ? k.mv_data : NULL;
    int next_f = rc != 0 || k.mv_size == FKEY;
    if (next_f && have_f && (sigs != head.nsigs || bytes != head.bytes)) {
      r = corrupt_tr(s, fname, "its header counts other signatures or bytes than it holds");
      break;
    }
    if (rc) break;
    if (k.mv_size == FKEY) {
      const char *fn;
      size_t fl;
      if (fhead_decode(&v, &head, &fn, &fl) != 0 || st_sha256(NULL, fn, fl, h) != STORE_OK || memcmp(h, kp, 32)) {
        r = corrupt_tr(s, "a function", "its header");
        break;
      }
      memcpy(fd, kp, 32);
      memcpy(fname, fn, fl);
      fname[fl] = '\0';
      have_f = 1, have_s = 0, sigs = 0, bytes = 0;
      continue;
    }
    if (k.mv_size != SKEY || !have_f || memcmp(kp, fd, 32)) {
      r = corrupt_tr(s, have_f ? fname : "a function", "a record is outside its function's range");
      break;
    }
    if (kp[64] == 0) {
      const char *sig;
      size_t sl;
      if (shead_decode(&v, &seen, &sig, &sl) != 0 || st_sha256(NULL, sig, sl, h) != STORE_OK ||
          memcmp(h, kp + 32, 32)) {
        r = corrupt_tr(s, fname, "a signature's header");
        break;
      }
      memcpy(sd, kp + 32, 32);
      have_s = 1;
      sigs++;
      continue;
    }
    Sample sm;
    if (!have_s || memcmp(sd, kp + 32, 32) || kp[64] > STORE_TRAFFIC_PER_SIGNATURE || kp[64] > seen ||
        sample_decode(&v, &sm) != 0) {
      r = corrupt_tr(s, fname, "a call kept");
      break;
    }
    bytes += sm.ql + sm.rl;
  }
  if (r == STORE_OK && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the traffic sample");
  mdb_cursor_close(cur);
  return r;
}
