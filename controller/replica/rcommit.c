/*
** rcommit.c — a leader's fenced commits (replica.h, docs/replication.md
** "The commit").
**
** A stretch of revisions goes out as few transactions as etcd's limits
** allow: at most 128 operations (two kept for `current` and `generation`)
** and a request of at most 1.5 MiB, base64 and JSON included.  Each
** transaction compares the leader key and the ceiling (rfence), so a
** leader fenced half-way writes nothing more; `current` moves in a
** transaction only to a revision whose record and entries are in it or
** before it, so etcd's CURRENT never names a revision it lacks.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replica_int.h"

#define MAX_OPS 126                                     /* etcd's 128, less current and generation */
#define BUDGET (((size_t)3 << 19) - ((size_t)64 << 10)) /* 1.5 MiB less room for compares and JSON */

/* What a base64 value of n bytes costs in the request, roughly (JSON, key). */
static size_t cost(size_t key, size_t n) { return (key + n + 2) / 3 * 4 + 96; }

/* The largest n with cost(key of entry/<hash>, n) within BUDGET. */
size_t replica_entry_max(const replica *r) { return (BUDGET - 96) / 4 * 3 - (r->plen + 6 + 64) - 2; }

typedef struct Batch {
  etcd_txn *t;
  size_t ops, size;
  uint64_t complete; /* the last revision all of whose keys are in this or an earlier batch */
  uint64_t maxgen;   /* the highest generation among them */
  uint64_t landed;   /* `current` as the last batch etcd took moved it (0: none did) */
} Batch;

/* How often a commit that got no answer is sent again (below). */
#define UNCERTAIN_TRIES 3

/* Send the batch.  Every batch also puts the ceiling (raised when a
** revision reached it, else as it is): its mod revision moves with every
** commit, so a commit that etcd applies late — one whose answer was lost
** in an election of etcd's leader — fails its compare if anything was
** committed after it, and can never move `current` back.  That makes a
** commit with no answer safe to send again: it applies once, and what
** it puts is the same each time.  Its compare failing after such a try
** means either another kernel leads, or the try before landed: the
** failure branch's reads tell which (the leader key still this kernel's,
** the ceiling moved since this kernel last wrote it: only this kernel
** writes it while it leads).  When another kernel leads and the ceiling
** moved, they cannot tell whether that try landed before the takeover:
** the commit is uncertain, never `fenced`, which promises nothing of it
** is in etcd. */
static replica_Error flush(replica *r, Batch *b, int last) {
  if (!b->ops && !last) return REPLICA_OK;
  char kc[128], kg[128], kl[128], val[24];
  size_t nc = rkey(r, kc, sizeof kc, "current"), ng = rkey(r, kg, sizeof kg, "generation"),
         nl = rkey(r, kl, sizeof kl, "leader");
  rfence(r, b->t);
  uint64_t ceiling = r->ceiling;
  if (b->complete) {
    int n = snprintf(val, sizeof val, "%" PRIu64, b->complete);
    etcd_txn_put(b->t, ETCD_SUCCESS, kc, nc, val, (size_t)n, 0);
    if (b->maxgen >= r->ceiling) ceiling = b->maxgen + REPLICA_GENERATION_BLOCK;
  }
  int n = snprintf(val, sizeof val, "%" PRIu64, ceiling);
  etcd_txn_put(b->t, ETCD_SUCCESS, kg, ng, val, (size_t)n, 0);
  etcd_txn_range(b->t, ETCD_FAILURE, kl, nl, NULL, 0);
  etcd_txn_range(b->t, ETCD_FAILURE, kg, ng, NULL, 0);
  etcd_TxnResult res = {0};
  etcd_Error err = ETCD_EUNCERTAIN;
  int unanswered = 0;
  for (int tries = 0; tries < UNCERTAIN_TRIES; tries++) {
    err = etcd_txn_commit(r->e, b->t, &res);
    if (err != ETCD_EUNCERTAIN && err != ETCD_EUNAVAILABLE) break;
    unanswered = 1;
  }
  etcd_txn_free(b->t);
  b->t = NULL;
  b->ops = b->size = 0;
  /* a try that got no answer may have landed: a later try refused for
     another reason says nothing of it */
  if (err && unanswered && err != ETCD_EUNCERTAIN && err != ETCD_EUNAVAILABLE)
    return rfail(r, REPLICA_EUNCERTAIN, "committing revisions to etcd: %s, after a try that got no answer (etcd may "
                 "hold it)", etcd_errmsg(r->e));
  if (err) return retcd(r, err, "committing revisions to etcd");
  int ok = res.succeeded;
  int64_t rev = res.revision;
  /* the ceiling moved since this kernel last wrote it: by a try that got
     no answer, or by a new leader's takeover */
  int moved = !ok && res.nranges == 2 && res.ranges[1].n && res.ranges[1].kvs[0].mod_revision > r->ceiling_mod;
  if (moved && unanswered && res.ranges[0].n && res.ranges[0].kvs[0].create_revision == r->leader_create &&
      res.ranges[0].kvs[0].lease == r->lease) {
    ok = 1;   /* the try that got no answer landed (only this kernel writes the ceiling while it leads) */
    rev = res.ranges[1].kvs[0].mod_revision;
  }
  etcd_txn_result_free(&res);
  /* another kernel leads, and the try that got no answer may have landed
     before it took over: the commit is not known to be refused */
  if (!ok && moved && unanswered) {
    rfenced(r, "a commit's compare failed after a try that got no answer");
    char why[sizeof r->errmsg];
    snprintf(why, sizeof why, "%s", r->errmsg);
    return rfail(r, REPLICA_EUNCERTAIN, "%.400s; etcd may hold that try", why);
  }
  if (!ok) return rfenced(r, "a commit's compare failed");
  r->ceiling = ceiling;
  r->ceiling_mod = rev;
  if (b->complete) b->landed = b->complete;
  if (!last && !(b->t = etcd_txn_new())) return rfail(r, REPLICA_ENOMEM, "out of memory");
  return REPLICA_OK;
}

/* Add one put to the batch, flushing it first when the put would not fit. */
static replica_Error add(replica *r, Batch *b, const char *key, size_t klen, const void *val, size_t vlen) {
  size_t c = cost(klen, vlen);
  if (b->ops + 1 > MAX_OPS || b->size + c > BUDGET) {
    replica_Error err = flush(r, b, 0);
    if (err) return err;
  }
  if (etcd_txn_put(b->t, ETCD_SUCCESS, key, klen, val, vlen, 0)) return rfail(r, REPLICA_ENOMEM, "out of memory");
  b->ops++;
  b->size += c;
  return REPLICA_OK;
}

static replica_Error publish(replica *r, store_env *s, uint64_t from, uint64_t to, const replica_Events *ev);

replica_Error replica_publish(replica *r, store_env *s, uint64_t from, uint64_t to, const replica_Events *ev) {
  pthread_mutex_lock(&r->mu);
  replica_Error err = publish(r, s, from, to, ev);
  /* etcd keeps the history of the last compact_every to 2 * compact_every
     commits: older versions of current and generation (overwritten by
     every commit) and of the keys deleted since are compacted away */
  if (!err && r->compact_every && ++r->commits % r->compact_every == 0) {
    if (r->compact_mark) r->compact_due = r->compact_mark;
    r->compact_mark = r->ceiling_mod;
  }
  pthread_mutex_unlock(&r->mu);
  return err;
}

void replica_set_compaction(replica *r, int64_t every) {
  pthread_mutex_lock(&r->mu);
  r->compact_every = every > 0 ? every : 0;
  pthread_mutex_unlock(&r->mu);
}

int64_t replica_compaction_due(replica *r) {
  pthread_mutex_lock(&r->mu);
  int64_t due = r->compact_due;
  pthread_mutex_unlock(&r->mu);
  return due;
}

replica_Error replica_compact(replica *r, int64_t *done, char *msg, size_t msglen) {
  *done = 0;
  pthread_mutex_lock(&r->mu);
  int64_t due = r->compact_due;
  r->compact_due = 0;
  pthread_mutex_unlock(&r->mu);
  if (!due) return REPLICA_OK;
  etcd_Error err = etcd_compact(r->ec, due);
  if (err && err != ETCD_ECOMPACTED) {   /* (the caller's buffer: this runs beside the commits) */
    snprintf(msg, msglen, "compacting etcd's history to revision %" PRId64 ": %s", due, etcd_errmsg(r->ec));
    return err == ETCD_EUNAVAILABLE ? REPLICA_EUNAVAILABLE : REPLICA_EETCD;
  }
  *done = due;
  return REPLICA_OK;
}

/* The keyed outcomes among a revision's events, into its record. */
typedef struct Keyed {
  json_t *arr;
  int bad;
} Keyed;

static int keyed(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  Keyed *k = arg;
  json_t *o = json_loadb(json, len, 0, NULL);
  if (json_is_object(o) && json_object_get(o, "idempotency")) {
    if (json_array_append(k->arr, o)) k->bad = 1;
  }
  json_decref(o);
  return 0;
}

static replica_Error add_events(replica *r, store_env *s, json_t *record, const replica_Events *ev) {
  if (!ev || !ev->n) return REPLICA_OK;
  Keyed k = {json_array(), 0};
  if (!k.arr) return rfail(r, REPLICA_ENOMEM, "out of memory");
  if (store_events_read(s, ev->first, ev->n, 0, keyed, &k) != STORE_OK) {
    json_decref(k.arr);
    return rfail(r, REPLICA_ESTORE, "reading a revision's events: %s", store_errmsg(s));
  }
  if (k.bad || (json_array_size(k.arr) && json_object_set(record, "events", k.arr))) {
    json_decref(k.arr);
    return rfail(r, REPLICA_ENOMEM, "out of memory");
  }
  json_decref(k.arr);
  return REPLICA_OK;
}

static replica_Error publish(replica *r, store_env *s, uint64_t from, uint64_t to, const replica_Events *ev) {
  if (!r->leader_create || r->fenced) return rfail(r, REPLICA_EFENCED, "fenced: this kernel does not lead the world");
  if (from < 1 || to < from)
    return rfail(r, REPLICA_EINVAL, "no revisions to publish (%llu..%llu)", (unsigned long long)from,
                 (unsigned long long)to);
  Batch b = {.t = etcd_txn_new()};
  if (!b.t) return rfail(r, REPLICA_ENOMEM, "out of memory");
  replica_Error err = REPLICA_OK;
  for (uint64_t n = from; n <= to && !err; n++) {
    rrev v;
    if ((err = rrev_read(r, s, n, 1, &v))) break;
    char key[160];
    for (size_t i = 0; i < v.n && !err; i++) {
      const store_entry *e = v.entries[i];
      uint8_t hash[32];
      char hex[65];
      size_t len;
      if (store_entry_hash(e, hash, hex)) {
        err = rfail(r, REPLICA_ESTORE, "entry %s %s of revision %llu does not hash", store_kind_name(e->kind), e->name,
                    (unsigned long long)n);
        break;
      }
      size_t klen = rkey(r, key, sizeof key, "entry/%s", hex);
      if (3 + strlen(e->name) + e->len > replica_entry_max(r)) {
        err = rfail(r, REPLICA_ETOOBIG,
                    "entry %s %s of revision %llu is %zu bytes: etcd takes at most 1.5 MiB per request (its "
                    "--max-request-bytes), about 1.1 MiB of entry once encoded",
                    store_kind_name(e->kind), e->name, (unsigned long long)n, e->len);
        break;
      }
      void *enc = rentry_encode(e, &len);
      if (!enc) {
        err = rfail(r, REPLICA_ENOMEM, "out of memory");
        break;
      }
      err = add(r, &b, key, klen, enc, len);
      free(enc);
    }
    if (!err) err = add_events(r, s, v.record, ev ? &ev[n - from] : NULL);
    if (!err) {
      char *text = json_dumps(v.record, JSON_COMPACT | JSON_SORT_KEYS);
      size_t klen = rkey(r, key, sizeof key, "rev/%020" PRIu64, n);
      err = text ? add(r, &b, key, klen, text, strlen(text)) : rfail(r, REPLICA_ENOMEM, "out of memory");
      free(text);
    }
    if (!err) {
      b.complete = n;
      if (v.generation > b.maxgen) b.maxgen = v.generation;
    }
    rrev_free(&v);
  }
  if (!err) err = flush(r, &b, 1);
  etcd_txn_free(b.t);
  /* fenced half-way through a split commit: its first revisions are the
     world's (etcd's current names them), the rest are not — neither
     answer is true of all its calls */
  if (err == REPLICA_EFENCED && b.landed) {
    char why[sizeof r->errmsg];
    snprintf(why, sizeof why, "%s", r->errmsg);
    return rfail(r, REPLICA_EUNCERTAIN, "%.300s, after revisions %llu..%llu of the same commit were in etcd: their "
                 "calls are the world's next leader's to answer", why, (unsigned long long)from,
                 (unsigned long long)b.landed);
  }
  return err;
}
