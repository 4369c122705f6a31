/* st_retain.c — the events' retention policy: pruning old events
** (store.h store_events_prune, docs/store.md "Retention").
**
** An event is pruned when it is beyond the newest `keep` or older than
** `max_age`, unless it is one of those kept whatever their age:
**   - the newest event (the sequence goes on from it);
**   - the "started" event of an attempt without an outcome (the attempts
**     index points at it: recovery reports it when it marks the attempt);
**   - a session's transcript ("session", "session-..." events), which
**     `jiti sessions` lists and exports.
** Idempotency keys and counters live in databases of their own and are
** never pruned with the events (st_index.c).
**
** A call deletes at most max_delete events, oldest first, in one write
** transaction, and says whether more are due.  Events before the first
** one it kept for another reason than being a transcript need never be
** looked at again: meta "prunefloor" remembers where the next call starts.
*/
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "st_int.h"

typedef struct Prune {
  const store_retention *r;
  int64_t now;
  store_pruned out;
  uint64_t *open;            /* the started seqs of the open attempts, sorted */
  size_t nopen;
} Prune;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int is_open(const Prune *p, uint64_t seq) {
  size_t lo = 0, hi = p->nopen;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (p->open[mid] == seq) return 1;
    if (p->open[mid] < seq) lo = mid + 1;
    else hi = mid;
  }
  return 0;
}

/* The record's time: it begins {"seq":N,"time":T (st_event.c). */
static int record_time(const char *t, size_t n, int64_t *time) {
  static const char tag[] = ",\"time\":";
  const char *p = memmem(t, n < 64 ? n : 64, tag, sizeof tag - 1);
  if (!p) return -1;
  p += sizeof tag - 1;
  int64_t v = 0;
  int neg = p < t + n && *p == '-';
  if (neg) p++;
  if (p >= t + n || *p < '0' || *p > '9') return -1;
  while (p < t + n && *p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  *time = neg ? -v : v;
  return 0;
}

/* A session's transcript.  In compact JSON an unescaped quote only
** delimits a string, so this text appears only as a member "event"
** whose value starts with "session" (at any depth: a false match only
** keeps an event). */
static int transcript(const char *t, size_t n) {
  static const char tag[] = "\"event\":\"session";
  return memmem(t, n, tag, sizeof tag - 1) != NULL;
}

static int load_open(store_env *s, MDB_txn *txn, Prune *p) {
  MDB_cursor *cur;
  MDB_val k, v;
  MDB_stat st;
  int rc = mdb_stat(txn, s->attempts, &st);
  if (rc) return st_mdb(s, rc, "reading the attempts");
  p->open = malloc((st.ms_entries + 1) * sizeof *p->open);
  if (!p->open) return st_fail(s, STORE_ENOMEM, "out of memory pruning events");
  if ((rc = mdb_cursor_open(txn, s->attempts, &cur)) != 0) return st_mdb(s, rc, "reading the attempts");
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && p->nopen < st.ms_entries;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
    if (v.mv_size == 8) p->open[p->nopen++] = st_get_u64(v.mv_data);
  mdb_cursor_close(cur);
  if (rc && rc != MDB_NOTFOUND) return st_mdb(s, rc, "reading the attempts");
  qsort(p->open, p->nopen, sizeof *p->open, cmp_u64);
  return STORE_OK;
}

static int prune_txn(store_env *s, MDB_txn *txn, void *arg) {
  Prune *p = arg;
  const store_retention *r = p->r;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  uint64_t last = 0, floor = 0;
  size_t max = r->max_delete ? r->max_delete : STORE_PRUNE_BATCH;
  int rc, res = STORE_OK;
  free(p->open);
  p->open = NULL;
  p->nopen = 0;
  memset(&p->out, 0, sizeof p->out);
  if ((res = load_open(s, txn, p)) != STORE_OK) return res;
  {
    MDB_val fk = {10, "prunefloor"}, fv;
    rc = mdb_get(txn, s->meta, &fk, &fv);
    if (rc == 0 && fv.mv_size == 8) floor = st_get_u64(fv.mv_data);
    else if (rc && rc != MDB_NOTFOUND) return st_mdb(s, rc, "reading the store's metadata");
  }
  if ((rc = mdb_cursor_open(txn, s->events, &cur)) != 0) return st_mdb(s, rc, "reading events");
  rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  if (rc == 0 && k.mv_size == 8) last = st_get_u64(k.mv_data);
  else if (rc != MDB_NOTFOUND) { res = rc ? st_mdb(s, rc, "reading events") : st_fail(s, STORE_ECORRUPT, "an event key is malformed"); goto done; }
  uint64_t cut = r->keep && last > r->keep ? last - r->keep + 1 : 0;   /* seq < cut: beyond the newest keep */
  int64_t young = r->max_age_ms ? p->now - r->max_age_ms : INT64_MIN;  /* time < young: too old */
  uint8_t from[8];
  st_put_u64(from, floor);
  k.mv_size = 8;
  k.mv_data = from;
  uint64_t next_floor = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 8) { res = st_fail(s, STORE_ECORRUPT, "an event key is malformed"); goto done; }
    uint64_t seq = st_get_u64(k.mv_data);
    int64_t t = 0;
    int beyond = seq < cut, old = r->max_age_ms && record_time(v.mv_data, v.mv_size, &t) == 0 && t < young;
    if (seq >= last || (!beyond && !old)) {   /* the rest are newer */
      if (!next_floor) next_floor = seq;
      break;
    }
    if (transcript(v.mv_data, v.mv_size)) {
      p->out.kept++;
      continue;
    }
    if (is_open(p, seq)) {
      p->out.kept++;
      if (!next_floor) next_floor = seq;   /* it may be pruned once its attempt is marked */
      continue;
    }
    if (p->out.deleted == max) {
      p->out.more = 1;
      if (!next_floor) next_floor = seq;
      break;
    }
    uint8_t key[8];
    memcpy(key, k.mv_data, 8);
    if ((res = st_cursor_del(s, cur, s->events, key, 8, "pruning events")) != STORE_OK) goto done;
    p->out.deleted++;
  }
  if (rc && rc != MDB_NOTFOUND) { res = st_mdb(s, rc, "reading events"); goto done; }
  if (!next_floor) next_floor = last;
  if (next_floor > floor) {
    uint8_t b[8];
    st_put_u64(b, next_floor);
    if ((res = st_put(s, txn, s->meta, "prunefloor", 10, b, 8, 0, "pruning events")) != STORE_OK) goto done;
  }
  MDB_stat st;
  if ((rc = mdb_stat(txn, s->events, &st)) != 0) { res = st_mdb(s, rc, "counting events"); goto done; }
  p->out.remaining = st.ms_entries;
  if (!p->out.deleted && next_floor == floor) res = ST_NOCHANGE;
done:
  if (cur) mdb_cursor_close(cur);
  return res;
}

int store_events_prune(store_env *s, const store_retention *r, store_pruned *out) {
  s->msg[0] = '\0';
  if (out) memset(out, 0, sizeof *out);
  if (!r || (!r->keep && !r->max_age_ms) || r->max_age_ms < 0 || (r->flags & ~STORE_GROUP_SYNC_LATER))
    return st_fail(s, STORE_EINVAL, "store_events_prune: give a number of events to keep or a maximum age");
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  Prune p = {r, r->now_ms ? r->now_ms : st_now_ms(), {0, 0, 0, 0}, NULL, 0};
  int res = st_write(s, prune_txn, &p, (r->flags & STORE_GROUP_SYNC_LATER) ? ST_W_SYNC_LATER : 0);
  free(p.open);
  if (res == STORE_OK && out) *out = p.out;
  return res;
}
