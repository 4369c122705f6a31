/* st_index.c — what the store keeps of its events beside them, so that a
** writer starting up reads what it needs and not every event (format 3,
** docs/store.md "Indices of the events"):
**
**   attempts   the attempts without an outcome: a "started" event puts
**              its attempt here (with its seq), an outcome takes it out;
**              store_mark_interrupted reads only these
**   meta "attempt"  the largest attempt number ever recorded, so the next
**              one is O(1) (store_next_attempt)
**   keys, keyorder  idempotency keys: an outcome event whose
**              "idempotency" member is a digest (64 hex digits: SHA-256 of
**              a request's key) is also kept under that digest, the newest
**              STORE_KEYS_MAX of them, whatever becomes of the events
**   counters   the tallies of what is counted instead of recorded one by
**              one (store_tally_add)
**
** Every event written goes through st_index_event inside the transaction
** that writes it, so the indices are exactly as durable as the events,
** on every path (revisions, groups, journaled writes, offline commands).
** The migration to format 3 builds them from the events once.
*/
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "jtext.h"
#include "st_int.h"

const char *const st_db_names[ST_NDBS] = {"meta", "revisions", "entries", "names", "events",
                                          "attempts", "keys", "keyorder", "counters",
                                          "repair", "incidents", "incopen", "traffic"};

int st_open_index_dbs(store_env *s, MDB_txn *txn, int create) {
  MDB_dbi *dbis[] = {&s->attempts, &s->keys, &s->keyorder, &s->counters};
  for (int i = 0; i < 4; i++) {
    int rc = mdb_dbi_open(txn, st_db_names[ST_NDBS_V2 + i], create ? MDB_CREATE : 0, dbis[i]);
    if (rc == MDB_NOTFOUND && !create)
      return st_fail(s, STORE_ECORRUPT, "the '%s' database is missing", st_db_names[ST_NDBS_V2 + i]);
    if (rc) return st_mdb(s, rc, "opening the databases");
  }
  s->indexed = 1;
  return STORE_OK;
}

int st_open_repair_dbs(store_env *s, MDB_txn *txn, int create) {
  MDB_dbi *dbis[] = {&s->repair, &s->incidents, &s->incopen, &s->traffic};
  for (int i = 0; i < 4; i++) {
    int rc = mdb_dbi_open(txn, st_db_names[ST_NDBS_V3 + i], create ? MDB_CREATE : 0, dbis[i]);
    if (rc == MDB_NOTFOUND && !create)
      return st_fail(s, STORE_ECORRUPT, "the '%s' database is missing", st_db_names[ST_NDBS_V3 + i]);
    if (rc) return st_mdb(s, rc, "opening the databases");
  }
  s->repairs = 1;
  return STORE_OK;
}

int st_meta_u64(store_env *s, MDB_txn *txn, const char *name, uint64_t *v) {
  MDB_val k = {strlen(name), (void *)name}, d;
  int rc = mdb_get(txn, s->meta, &k, &d);
  *v = 0;
  if (rc == MDB_NOTFOUND) return STORE_OK;
  if (rc) return st_mdb(s, rc, "reading the store's metadata");
  if (d.mv_size != 8) return st_fail(s, STORE_ECORRUPT, "the '%s' record is malformed", name);
  *v = st_get_u64(d.mv_data);
  return STORE_OK;
}

int st_put_meta_u64(store_env *s, MDB_txn *txn, const char *name, uint64_t v) {
  uint8_t b[8];
  st_put_u64(b, v);
  return st_put(s, txn, s->meta, name, strlen(name), b, 8, 0, "writing the store's metadata");
}

int st_raise_attempt(store_env *s, MDB_txn *txn, uint64_t mark) {
  uint64_t cur;
  if (!s->indexed) return STORE_OK;
  int r = st_meta_u64(s, txn, "attempt", &cur);
  if (r == STORE_OK && mark > cur) r = st_put_meta_u64(s, txn, "attempt", mark);
  return r;
}

/* ---- keys */

int st_key_put(store_env *s, MDB_txn *txn, const uint8_t key[32], const char *text, size_t len) {
  MDB_val k = {32, (void *)key}, v;
  uint8_t ord[8];
  uint64_t seq;
  int rc = mdb_get(txn, s->keys, &k, &v), r;
  if (rc == 0) {   /* the key again (a retry that ran: its newest outcome wins) */
    if (v.mv_size < 8) return st_fail(s, STORE_ECORRUPT, "a key record is malformed");
    memcpy(ord, v.mv_data, 8);
    if ((r = st_del(s, txn, s->keyorder, ord, 8, "writing a key")) != STORE_OK) return r;
  } else if (rc != MDB_NOTFOUND) {
    return st_mdb(s, rc, "reading a key");
  }
  if ((r = st_meta_u64(s, txn, "keyseq", &seq)) != STORE_OK) return r;
  st_put_u64(ord, ++seq);
  char *val = malloc(8 + len);
  if (!val) return st_fail(s, STORE_ENOMEM, "out of memory writing a key");
  memcpy(val, ord, 8);
  memcpy(val + 8, text, len);
  r = st_put(s, txn, s->keys, key, 32, val, 8 + len, 0, "writing a key");
  free(val);
  if (r == STORE_OK) r = st_put(s, txn, s->keyorder, ord, 8, key, 32, MDB_APPEND, "writing a key");
  if (r == STORE_OK) r = st_put_meta_u64(s, txn, "keyseq", seq);
  if (r != STORE_OK) return r;
  /* the newest STORE_KEYS_MAX: the oldest goes */
  MDB_stat st;
  if ((rc = mdb_stat(txn, s->keys, &st)) != 0) return st_mdb(s, rc, "counting the keys");
  if (st.ms_entries <= STORE_KEYS_MAX) return STORE_OK;
  MDB_cursor *cur;
  MDB_val ok, ov;
  if ((rc = mdb_cursor_open(txn, s->keyorder, &cur)) != 0) return st_mdb(s, rc, "reading the keys");
  rc = mdb_cursor_get(cur, &ok, &ov, MDB_FIRST);
  if (rc == 0 && ov.mv_size == 32 && ok.mv_size == 8) {
    uint8_t old[32], okey[8];
    memcpy(old, ov.mv_data, 32);
    memcpy(okey, ok.mv_data, 8);
    r = st_cursor_del(s, cur, s->keyorder, okey, 8, "forgetting a key");
    if (r == STORE_OK) r = st_del(s, txn, s->keys, old, 32, "forgetting a key");
  } else {
    r = rc ? st_mdb(s, rc, "reading the keys") : st_fail(s, STORE_ECORRUPT, "a key order record is malformed");
  }
  mdb_cursor_close(cur);
  return r;
}

/* ---- events */

int st_index_event(store_env *s, MDB_txn *txn, uint64_t seq, const st_evinfo *info, const char *text,
                   size_t len, uint64_t *mark) {
  if (!s->indexed) return STORE_OK;
  int outcome = info->ev >= 0 && store_event_is_outcome(info->ev), r = STORE_OK;
  if (info->has_attempt) {
    uint8_t k[8], v[8];
    st_put_u64(k, info->attempt);
    if (info->attempt > *mark) *mark = info->attempt;
    if (info->ev == STORE_EV_STARTED) {
      st_put_u64(v, seq);
      r = st_put(s, txn, s->attempts, k, 8, v, 8, 0, "writing an attempt");
    } else if (outcome) {
      r = st_del(s, txn, s->attempts, k, 8, "closing an attempt");
    }
  }
  if (r == STORE_OK && outcome && info->has_key) r = st_key_put(s, txn, info->key, text, len);
  return r;
}

/* ---- the migration: every index from the events */

/* What the indices need of a stored record (its text: {"seq":..,"time":..,
** members}), an older kernel's raw keys included. */
static void evinfo_of_record(const char *text, size_t len, st_evinfo *info) {
  if (len >= 2 && text[0] == '{' && text[len - 1] == '}' && st_evinfo_of_members(text + 1, len - 2, info, 1) == 0)
    return;
  json_t *o = json_loadb(text, len, 0, NULL);   /* the rare record the scanner leaves */
  st_evinfo_of_object(o, info, 1);
  json_decref(o);
}

typedef struct Recent { uint64_t seq; uint8_t key[32]; } Recent;

int st_index_rebuild(store_env *s, MDB_txn *txn) {
  MDB_cursor *cur;
  MDB_val k, v;
  uint64_t mark = 0;
  st_map open;                /* attempt -> the seq of its start, while it has no outcome */
  Recent *recent = calloc(STORE_KEYS_MAX, sizeof *recent);   /* the newest keyed outcomes, a ring */
  size_t nrecent = 0;
  int rc, r = STORE_OK;
  if (!recent) return st_fail(s, STORE_ENOMEM, "out of memory indexing the events");
  st_map_init(&open);
  if ((rc = mdb_cursor_open(txn, s->events, &cur)) != 0) {
    free(recent);
    return st_mdb(s, rc, "reading events");
  }
  /* one read, oldest first, in memory: writing as it goes would touch the
  ** key indices once per keyed outcome ever recorded */
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && r == STORE_OK;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 8) {
      r = st_fail(s, STORE_ECORRUPT, "an event key is malformed");
      break;
    }
    st_evinfo info;
    evinfo_of_record(v.mv_data, v.mv_size, &info);
    uint64_t seq = st_get_u64(k.mv_data);
    int outcome = info.ev >= 0 && store_event_is_outcome(info.ev);
    if (info.has_attempt) {
      uint8_t ak[8], slot[32] = {0};
      st_put_u64(ak, info.attempt);
      if (info.attempt > mark) mark = info.attempt;
      if (info.ev == STORE_EV_STARTED) {
        st_put_u64(slot, seq);
        if (st_map_set(&open, ak, 8, slot) != 0) r = st_fail(s, STORE_ENOMEM, "out of memory indexing the events");
      } else if (outcome) {
        st_map_del(&open, ak, 8);
      }
    }
    if (outcome && info.has_key) {
      Recent *x = &recent[nrecent++ % STORE_KEYS_MAX];
      x->seq = seq;
      memcpy(x->key, info.key, 32);
    }
  }
  mdb_cursor_close(cur);
  if (r == STORE_OK && rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading events");
  for (size_t i = 0; r == STORE_OK && i < open.cap; i++) {
    st_slot *sl = &open.slots[i];
    if (sl->key) r = st_put(s, txn, s->attempts, sl->key, 8, sl->hash, 8, 0, "writing an attempt");
  }
  /* the keys, oldest first (a newer record of a key replaces an older) */
  size_t n = nrecent < STORE_KEYS_MAX ? nrecent : STORE_KEYS_MAX;
  for (size_t i = 0; r == STORE_OK && i < n; i++) {
    Recent *x = &recent[(nrecent - n + i) % STORE_KEYS_MAX];
    uint8_t sk[8];
    st_put_u64(sk, x->seq);
    MDB_val ek = {8, sk}, ev;
    if ((rc = mdb_get(txn, s->events, &ek, &ev)) != 0) r = st_mdb(s, rc, "reading an event");
    else r = st_key_put(s, txn, x->key, ev.mv_data, ev.mv_size);
  }
  if (r == STORE_OK && mark) r = st_raise_attempt(s, txn, mark);
  st_map_free(&open);
  free(recent);
  return r;
}

/* ---- reading */

typedef struct AttemptScan { uint64_t max; } AttemptScan;

/* Before format 3 (a read-only handle on an older store): the largest
** "attempt" among the newest events, as writers then counted. */
static int scan_attempt(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  AttemptScan *a = arg;
  static const char key[] = "\"attempt\":";
  const char *end = json + len;
  for (const char *p = json; p && p < end;) {
    p = memmem(p, (size_t)(end - p), key, sizeof key - 1);
    if (!p) break;
    p += sizeof key - 1;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9' && v < UINT64_MAX / 10) v = v * 10 + (uint64_t)(*p++ - '0');
    if (v > a->max) a->max = v;
  }
  return 0;
}

int store_next_attempt(store_env *s, uint64_t *next) {
  MDB_txn *txn;
  uint64_t mark = 0;
  s->msg[0] = '\0';
  if (!next) return st_fail(s, STORE_EINVAL, "store_next_attempt: next is NULL");
  *next = 0;
  if (!s->indexed) {
    AttemptScan a = {0};
    int r = store_events_read(s, 0, 4096, STORE_NEWEST_FIRST, scan_attempt, &a);
    if (r == STORE_OK) *next = a.max + 1;
    return r;
  }
  int r = st_read_begin(s, &txn);
  if (r != STORE_OK) return r;
  r = st_meta_u64(s, txn, "attempt", &mark);
  mdb_txn_abort(txn);
  if (r == STORE_OK) *next = mark + 1;
  return r;
}

int store_keys_read(store_env *s, store_key_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  MDB_val k, v, kv;
  int rc, r;
  s->msg[0] = '\0';
  if (!fn) return st_fail(s, STORE_EINVAL, "store_keys_read: no callback");
  if (!s->indexed) return STORE_OK;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((rc = mdb_cursor_open(txn, s->keyorder, &cur)) != 0) {
    r = st_mdb(s, rc, "reading the keys");
    goto out;
  }
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (v.mv_size != 32 || (rc = mdb_get(txn, s->keys, &v, &kv)) != 0 || kv.mv_size < 8 ||
        memcmp(kv.mv_data, k.mv_data, 8)) {
      r = rc && rc != MDB_NOTFOUND ? st_mdb(s, rc, "reading the keys")
                                   : st_fail(s, STORE_ECORRUPT, "the keys and their order disagree");
      goto out;
    }
    if (fn(arg, v.mv_data, (const char *)kv.mv_data + 8, kv.mv_size - 8)) break;
  }
  if (rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the keys");
out:
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}

/* ---- counters */

/* A counter's key: kind NUL outcome. */
static size_t counter_key(uint8_t *buf, size_t cap, const char *kind, const char *outcome) {
  size_t a = strlen(kind), b = strlen(outcome);
  if (a + 1 + b > cap || !a || !b) return 0;
  memcpy(buf, kind, a);
  buf[a] = 0;
  memcpy(buf + a + 1, outcome, b);
  return a + 1 + b;
}

int store_counters_read(store_env *s, store_count_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  int rc, r;
  s->msg[0] = '\0';
  if (!fn) return st_fail(s, STORE_EINVAL, "store_counters_read: no callback");
  if (!s->indexed) return STORE_OK;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((rc = mdb_cursor_open(txn, s->counters, &cur)) != 0) {
    r = st_mdb(s, rc, "reading the counters");
    goto out;
  }
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    char name[2 * STORE_COUNTER_NAME_MAX + 2];
    const char *nul = k.mv_size < sizeof name ? memchr(k.mv_data, 0, k.mv_size) : NULL;
    if (!nul || v.mv_size != 24) {
      r = st_fail(s, STORE_ECORRUPT, "a counter record is malformed");
      goto out;
    }
    memcpy(name, k.mv_data, k.mv_size);
    name[k.mv_size] = '\0';
    store_count c = {name, name + (nul - (const char *)k.mv_data) + 1, st_get_u64(v.mv_data),
                     (int64_t)st_get_u64((const uint8_t *)v.mv_data + 8),
                     (int64_t)st_get_u64((const uint8_t *)v.mv_data + 16)};
    if (fn(arg, &c)) break;
  }
  if (rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the counters");
out:
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}

typedef struct Tally { const store_tally *t; json_t **obj; } Tally;

static int tally_txn(store_env *s, MDB_txn *txn, void *arg) {
  Tally *a = arg;
  const store_tally *t = a->t;
  int64_t now = st_now_ms();
  int r = STORE_OK;
  for (size_t i = 0; r == STORE_OK && i < t->ncounts; i++) {
    const store_count *c = &t->counts[i];
    uint8_t key[2 * STORE_COUNTER_NAME_MAX + 1], val[24];
    size_t kl = counter_key(key, sizeof key, c->kind, c->outcome);
    MDB_val k = {kl, key}, v;
    int64_t at = c->last_ms ? c->last_ms : now, first = c->first_ms ? c->first_ms : at;
    uint64_t n = c->n;
    int rc = mdb_get(txn, s->counters, &k, &v);
    if (rc == 0 && v.mv_size == 24) {
      n += st_get_u64(v.mv_data);
      int64_t was = (int64_t)st_get_u64((const uint8_t *)v.mv_data + 8);
      if (was && was < first) first = was;
    } else if (rc && rc != MDB_NOTFOUND) {
      return st_mdb(s, rc, "reading a counter");
    }
    st_put_u64(val, n);
    st_put_u64(val + 8, (uint64_t)first);
    st_put_u64(val + 16, (uint64_t)at);
    r = st_put(s, txn, s->counters, key, kl, val, 24, 0, "writing a counter");
  }
  char *buf = NULL;
  size_t cap = 0;
  uint64_t mark = t->attempt;
  for (size_t i = 0; r == STORE_OK && i < t->nkeys; i++) {
    const store_ev *e = &t->keys[i];
    st_evinfo info;
    char *text = NULL;
    size_t len = 0;
    if (a->obj[i]) st_evinfo_of_object(a->obj[i], &info, 0);
    else st_evinfo_of_members(e->members, e->len, &info, 0);
    if (info.has_attempt && info.attempt > mark) mark = info.attempt;
    if (!info.has_key) continue;   /* nothing to keep */
    r = st_event_render(s, e, a->obj[i], 0, e->time_ms ? e->time_ms : now, &buf, &cap, &text, &len);
    if (r == STORE_OK) r = st_key_put(s, txn, info.key, text, len);
    if (text != buf) free(text);
  }
  free(buf);
  if (r == STORE_OK && mark) r = st_raise_attempt(s, txn, mark);
  return r;
}

int store_tally_add(store_env *s, const store_tally *t, unsigned flags) {
  s->msg[0] = '\0';
  if (!t || (t->ncounts && !t->counts) || (t->nkeys && !t->keys) || (flags & ~STORE_GROUP_SYNC_LATER))
    return st_fail(s, STORE_EINVAL, "store_tally_add: bad arguments");
  for (size_t i = 0; i < t->ncounts; i++) {
    const store_count *c = &t->counts[i];
    if (!c->kind || !c->outcome || !*c->kind || !*c->outcome || strlen(c->kind) > STORE_COUNTER_NAME_MAX ||
        strlen(c->outcome) > STORE_COUNTER_NAME_MAX || !jtext_utf8_valid(c->kind, strlen(c->kind)) ||
        !jtext_utf8_valid(c->outcome, strlen(c->outcome)))
      return st_fail(s, STORE_EINVAL, "a counter's kind and outcome are 1 to %u bytes of UTF-8",
                     STORE_COUNTER_NAME_MAX);
  }
  if (!t->ncounts && !t->nkeys && !t->attempt) return STORE_OK;
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  Tally a = {t, NULL};
  int r = st_events_prepare(s, t->keys, t->nkeys, &a.obj);
  if (r == STORE_OK)
    r = st_write(s, tally_txn, &a, (flags & STORE_GROUP_SYNC_LATER) ? ST_W_SYNC_LATER : 0);
  st_events_release(a.obj, t->nkeys);
  return r;
}

/* ---- interrupted attempts */

typedef struct Mark { uint64_t count; } Mark;

static int mark_txn(store_env *s, MDB_txn *txn, void *arg) {
  Mark *mk = arg;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  json_t **objs = NULL;
  size_t n = 0, cap = 0;
  int rc, r = STORE_OK;
  mk->count = 0;
  if ((rc = mdb_cursor_open(txn, s->attempts, &cur)) != 0) return st_mdb(s, rc, "reading the attempts");
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 8 || v.mv_size != 8) {
      r = st_fail(s, STORE_ECORRUPT, "an attempt record is malformed");
      goto done;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      json_t **no = realloc(objs, nc * sizeof *no);
      if (!no) { r = st_fail(s, STORE_ENOMEM, "out of memory"); goto done; }
      objs = no;
      cap = nc;
    }
    objs[n] = json_pack("{s:s, s:I, s:I, s:s}", "event", store_event_name(STORE_EV_INTERRUPTED), "attempt",
                        (json_int_t)st_get_u64(k.mv_data), "started_seq", (json_int_t)st_get_u64(v.mv_data),
                        "reason", "no outcome was recorded before the store was reopened");
    if (!objs[n++]) { r = st_fail(s, STORE_ENOMEM, "out of memory"); goto done; }
  }
  if (rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading the attempts"); goto done; }
  mdb_cursor_close(cur);
  cur = NULL;
  if (!n) { r = ST_NOCHANGE; goto done; }
  r = st_events_put(s, txn, objs, NULL, n, NULL);   /* outcomes: each closes its attempt */
  if (r == STORE_OK) mk->count = n;
done:
  for (size_t i = 0; i < n; i++) json_decref(objs[i]);
  free(objs);
  if (cur) mdb_cursor_close(cur);
  return r;
}

int store_mark_interrupted(store_env *s, uint64_t *count) {
  Mark mk = {0};
  int r;
  s->msg[0] = '\0';
  if (count) *count = 0;
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  r = st_write(s, mark_txn, &mk, 0);
  if (count) *count = r == STORE_OK ? mk.count : 0;
  return r;
}
