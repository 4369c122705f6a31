/* st_incident.c — incidents (format 4): failing calls of opted-in
** functions, deduplicated while open, taken through the statuses of
** docs/repair.md by transitions that are refused from the wrong status.
**
**   incidents  u64 id -> the record below
**   incopen    32-byte dedup digest, u64 id -> "": exactly the open
**              incidents (captured, awaiting-model, verifying); the digest
**              is SHA-256 of  function NUL condition NUL definition-hash
**              [kind: another kind than failure]
**   meta "incident"  the last id handed out
**
** The record (integers big-endian):
**   u8 1 (encoding version)  u8 status  [u8 kind: version 2 only]  u64 count  i64 first  i64 last
**   u64 revision  32 definition hash
**   u16 |function|  u16 |condition|  u32 |evidence|  u32 |arguments|
**   function, condition, evidence, arguments
**   u64 dropped (log entries dropped)  u16 n
**   n times: i64 time, u8 kind, u32 length, text   (oldest first)
** Every change rewrites it whole (a few hundred KiB at most: the bounds in
** store.h), in the write transaction that also appends the transition's
** event, so an incident's status and its events never disagree. */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "jtext.h"
#include "st_int.h"

#define INC_V1 1              /* kind failure */
#define INC_V2 2              /* u8 kind after the status; written only for
                                 another kind, so a failure's record reads
                                 the same in an older kernel */
#define INC_FIXED (1 + 1 + 8 + 8 + 8 + 8 + 32 + 2 + 2 + 4 + 4 + 8 + 2)
#define NOTE_HEAD (8 + 1 + 4)

static const char *const status_names[STORE_INC_STATUS_COUNT] = {
  NULL, "captured", "awaiting-model", "verifying", "repaired", "rejected", "declined-expected",
  "declined-insufficient-evidence", "stale", "cancelled", "failed", "interrupted", "tentative"};

static const char *const kind_names[STORE_INCK_COUNT] = {NULL, "failure", "explicit"};

static const char *const note_names[STORE_NOTE_COUNT] = {NULL, "exchange", "verification"};

#define B(x) (1u << (x))
/* The transitions: allowed[from] is a mask of the statuses it may go to
** (store.h and docs/store.md show the table). */
static const unsigned allowed[STORE_INC_STATUS_COUNT] = {
  [STORE_INC_CAPTURED] = B(STORE_INC_AWAITING_MODEL) | B(STORE_INC_STALE) | B(STORE_INC_CANCELLED) |
                         B(STORE_INC_FAILED),
  [STORE_INC_AWAITING_MODEL] = B(STORE_INC_VERIFYING) | B(STORE_INC_DECLINED_EXPECTED) |
                               B(STORE_INC_DECLINED_INSUFFICIENT) | B(STORE_INC_REJECTED) | B(STORE_INC_STALE) |
                               B(STORE_INC_CANCELLED) | B(STORE_INC_FAILED),
  [STORE_INC_VERIFYING] = B(STORE_INC_AWAITING_MODEL) | B(STORE_INC_REPAIRED) | B(STORE_INC_TENTATIVE) |
                          B(STORE_INC_REJECTED) | B(STORE_INC_STALE) | B(STORE_INC_CANCELLED) |
                          B(STORE_INC_FAILED) | B(STORE_INC_INTERRUPTED),
  [STORE_INC_TENTATIVE] = B(STORE_INC_REPAIRED) | B(STORE_INC_CAPTURED) | B(STORE_INC_STALE),
  [STORE_INC_REPAIRED] = B(STORE_INC_CAPTURED),
};

const char *store_incident_status_name(int status) {
  return status > 0 && status < STORE_INC_STATUS_COUNT ? status_names[status] : NULL;
}

int store_incident_status_parse(const char *s) {
  for (int i = 1; s && i < STORE_INC_STATUS_COUNT; i++)
    if (!strcmp(s, status_names[i])) return i;
  return 0;
}

int store_incident_is_open(int status) {
  return status > 0 && status < STORE_INC_STATUS_COUNT && (STORE_INC_OPEN_MASK & B(status));
}

int store_incident_transition_allowed(int from, int to) {
  return store_incident_status_name(from) && store_incident_status_name(to) && (allowed[from] & B(to));
}

const char *store_incident_kind_name(int kind) {
  return kind > 0 && kind < STORE_INCK_COUNT ? kind_names[kind] : NULL;
}

int store_incident_kind_parse(const char *s) {
  for (int i = 1; s && i < STORE_INCK_COUNT; i++)
    if (!strcmp(s, kind_names[i])) return i;
  return 0;
}

const char *store_note_kind_name(int kind) {
  return kind > 0 && kind < STORE_NOTE_COUNT ? note_names[kind] : NULL;
}

int store_note_kind_parse(const char *s) {
  for (int i = 1; s && i < STORE_NOTE_COUNT; i++)
    if (!strcmp(s, note_names[i])) return i;
  return 0;
}

/* ---- the record */

/* A record as read (pointers into it) or about to be written. */
typedef struct View {
  int status, kind;
  uint64_t count, revision, dropped;
  int64_t first, last;
  uint8_t def[32];
  const char *fn, *cond, *ev, *args;
  size_t fl, cl, el, al;
  const uint8_t *log;        /* the log's entries, end to end */
  size_t loglen, nlog;
} View;

static int name_ok(const char *t, size_t n) { return n && n <= STORE_NAME_MAX && jtext_utf8_valid(t, n); }

/* Decode record v[0..n): 0, or -1 with *why. */
static int view_decode(const void *v, size_t n, View *w, const char **why) {
  st_rd r = {v, (const uint8_t *)v + n, 0};
  memset(w, 0, sizeof *w);
  int version = st_rd_u8(&r);
  if (version != INC_V1 && version != INC_V2) return *why = "its encoding version is unknown", -1;
  w->status = st_rd_u8(&r);
  w->kind = version == INC_V2 ? st_rd_u8(&r) : STORE_INCK_FAILURE;
  w->count = st_rd_u64(&r);
  w->first = (int64_t)st_rd_u64(&r);
  w->last = (int64_t)st_rd_u64(&r);
  w->revision = st_rd_u64(&r);
  const uint8_t *d = st_rd_take(&r, 32);
  if (d) memcpy(w->def, d, 32);
  w->fl = st_rd_u16(&r);
  w->cl = st_rd_u16(&r);
  w->el = st_rd_u32(&r);
  w->al = st_rd_u32(&r);
  w->fn = (const char *)st_rd_take(&r, w->fl);
  w->cond = (const char *)st_rd_take(&r, w->cl);
  w->ev = (const char *)st_rd_take(&r, w->el);
  w->args = (const char *)st_rd_take(&r, w->al);
  w->dropped = st_rd_u64(&r);
  w->nlog = st_rd_u16(&r);
  if (r.bad) return *why = "it is cut short", -1;
  if (!store_incident_status_name(w->status)) return *why = "its status is unknown", -1;
  if (!store_incident_kind_name(w->kind) || (version == INC_V2 && w->kind == STORE_INCK_FAILURE))
    return *why = "its kind is unknown", -1;
  if (!w->count) return *why = "its count is 0", -1;
  if (!name_ok(w->fn, w->fl) || !name_ok(w->cond, w->cl)) return *why = "its function or condition is malformed", -1;
  if (w->el > STORE_EVIDENCE_MAX || w->al > STORE_ARGUMENTS_MAX) return *why = "it holds more than its bounds", -1;
  if (w->nlog > STORE_INCIDENT_LOG_ENTRIES) return *why = "its log holds too many entries", -1;
  w->log = r.p;
  size_t texts = 0;
  for (size_t i = 0; i < w->nlog; i++) {
    st_rd_u64(&r);
    int kind = st_rd_u8(&r);
    size_t tl = st_rd_u32(&r);
    st_rd_take(&r, tl);
    if (r.bad) return *why = "its log is cut short", -1;
    if (!store_note_kind_name(kind) || tl > STORE_NOTE_MAX) return *why = "a log entry is malformed", -1;
    texts += tl;
  }
  if (texts > STORE_INCIDENT_LOG_BYTES) return *why = "its log holds more than its bound", -1;
  if (r.p != r.end) return *why = "its length does not match its contents", -1;
  w->loglen = (size_t)(r.p - w->log);
  return 0;
}

/* The record of w, malloc'd, in *out (*n bytes); -1 out of memory. */
static int view_encode(const View *w, uint8_t **out, size_t *n) {
  int v2 = w->kind != STORE_INCK_FAILURE;
  *n = INC_FIXED + (size_t)v2 + w->fl + w->cl + w->el + w->al + w->loglen;
  uint8_t *b = malloc(*n);
  if (!(*out = b)) return -1;
  st_wr o = {b};
  st_wr_u8(&o, v2 ? INC_V2 : INC_V1);
  st_wr_u8(&o, (uint8_t)w->status);
  if (v2) st_wr_u8(&o, (uint8_t)w->kind);
  st_wr_u64(&o, w->count);
  st_wr_u64(&o, (uint64_t)w->first);
  st_wr_u64(&o, (uint64_t)w->last);
  st_wr_u64(&o, w->revision);
  st_wr_bytes(&o, w->def, 32);
  st_wr_u16(&o, (uint16_t)w->fl);
  st_wr_u16(&o, (uint16_t)w->cl);
  st_wr_u32(&o, (uint32_t)w->el);
  st_wr_u32(&o, (uint32_t)w->al);
  st_wr_bytes(&o, w->fn, w->fl);
  st_wr_bytes(&o, w->cond, w->cl);
  st_wr_bytes(&o, w->ev, w->el);
  st_wr_bytes(&o, w->args, w->al);
  st_wr_u64(&o, w->dropped);
  st_wr_u16(&o, (uint16_t)w->nlog);
  st_wr_bytes(&o, w->log, w->loglen);
  return 0;
}

/* The public form of w (id), in one allocation. */
static store_incident *view_public(const View *w, uint64_t id) {
  size_t room = sizeof(store_incident) + w->nlog * sizeof(store_note) + w->fl + w->cl + w->el + w->al + 4 +
                w->loglen;
  store_incident *inc = malloc(room);
  if (!inc) return NULL;
  store_note *notes = (store_note *)(inc + 1);
  char *t = (char *)(notes + w->nlog);
#define COPY(dst, src, n) (memcpy(t, (src), (n)), t[(n)] = '\0', (dst) = t, t += (n) + 1)
  memset(inc, 0, sizeof *inc);
  inc->id = id;
  inc->status = w->status;
  inc->kind = w->kind;
  memcpy(inc->definition, w->def, 32);
  inc->count = w->count;
  inc->first_ms = w->first;
  inc->last_ms = w->last;
  inc->revision = w->revision;
  inc->dropped = w->dropped;
  COPY(inc->function, w->fn, w->fl);
  COPY(inc->condition, w->cond, w->cl);
  COPY(inc->evidence, w->ev, w->el);
  inc->evidence_len = w->el;
  COPY(inc->arguments, w->args, w->al);
  inc->arguments_len = w->al;
  st_rd r = {w->log, w->log + w->loglen, 0};
  for (size_t i = 0; i < w->nlog; i++) {
    store_note *e = &notes[i];
    e->time_ms = (int64_t)st_rd_u64(&r);
    e->kind = st_rd_u8(&r);
    e->len = st_rd_u32(&r);
    COPY(e->text, st_rd_take(&r, e->len), e->len);   /* the note's own byte count covers its NUL */
  }
#undef COPY
  inc->nlog = w->nlog;
  inc->log = notes;
  return inc;
}

/* Another kind than failure adds its byte: a failure never joins it. */
static void dedup_digest(const View *w, uint8_t out[32]) {
  size_t n = w->fl + 1 + w->cl + 1 + 32 + (w->kind != STORE_INCK_FAILURE);
  uint8_t buf[2 * STORE_NAME_MAX + 35];
  st_wr o = {buf};
  st_wr_bytes(&o, w->fn, w->fl);
  st_wr_u8(&o, 0);
  st_wr_bytes(&o, w->cond, w->cl);
  st_wr_u8(&o, 0);
  st_wr_bytes(&o, w->def, 32);
  if (w->kind != STORE_INCK_FAILURE) st_wr_u8(&o, (uint8_t)w->kind);
  st_sha256(NULL, buf, n, out);
}

static void open_key(uint8_t key[40], const uint8_t digest[32], uint64_t id) {
  memcpy(key, digest, 32);
  st_put_u64(key + 32, id);
}

static int corrupt_inc(store_env *s, uint64_t id, const char *why) {
  return st_fail(s, STORE_ECORRUPT, "the 'incidents' database: incident %llu is damaged: %s",
                 (unsigned long long)id, why);
}

/* Read incident id into *w (pointers into txn's map: valid until a write
** in txn).  STORE_ENOENT with a message when absent. */
static int read_view(store_env *s, MDB_txn *txn, uint64_t id, View *w) {
  uint8_t key[8];
  st_put_u64(key, id);
  MDB_val k = {8, key}, v;
  int rc = mdb_get(txn, s->incidents, &k, &v);
  if (rc == MDB_NOTFOUND) return st_fail(s, STORE_ENOENT, "there is no incident %llu", (unsigned long long)id);
  if (rc) return st_mdb(s, rc, "reading an incident");
  const char *why = NULL;
  return view_decode(v.mv_data, v.mv_size, w, &why) == 0 ? STORE_OK : corrupt_inc(s, id, why);
}

static int write_view(store_env *s, MDB_txn *txn, uint64_t id, const View *w) {
  uint8_t key[8], *buf;
  size_t n;
  st_put_u64(key, id);
  if (view_encode(w, &buf, &n) != 0) return st_fail(s, STORE_ENOMEM, "out of memory writing an incident");
  int r = st_put(s, txn, s->incidents, key, 8, buf, n, 0, "writing an incident");
  free(buf);
  return r;
}

/* Append the "incident" event of id (from 0: opened). */
static int put_event(store_env *s, MDB_txn *txn, uint64_t id, int to, int from, const View *w, uint64_t *seq) {
  json_t *o = json_object();
  int bad = !o || json_object_set_new(o, "event", json_string(store_event_name(STORE_EV_INCIDENT))) ||
            json_object_set_new(o, "incident", json_integer((json_int_t)id)) ||
            json_object_set_new(o, "status", json_string(status_names[to])) ||
            (from && json_object_set_new(o, "from", json_string(status_names[from]))) ||
            json_object_set_new(o, "function", json_stringn(w->fn, w->fl));
  int r = bad ? st_fail(s, STORE_ENOMEM, "out of memory writing an incident event") : st_events_check(s, &o, 1);
  if (r == STORE_OK) r = st_events_put(s, txn, &o, NULL, 1, seq);
  json_decref(o);
  return r;
}

static int wflags(store_env *s, unsigned flags, int *out) {
  if (flags & ~STORE_GROUP_SYNC_LATER) return st_fail(s, STORE_EINVAL, "unknown flags %#x", flags);
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  *out = (flags & STORE_GROUP_SYNC_LATER) ? ST_W_SYNC_LATER : 0;
  return STORE_OK;
}

/* ---- open or join */

typedef struct Open {
  const store_failure *f;
  View w;                    /* the new incident's */
  uint8_t digest[32];
  uint64_t id;
  int joined;
} Open;

static int open_txn(store_env *s, MDB_txn *txn, void *arg) {
  Open *a = arg;
  MDB_cursor *cur;
  uint8_t key[40];
  MDB_val k = {40, key}, v;
  uint64_t id = 0;
  int rc, r;
  open_key(key, a->digest, 0);
  if ((rc = mdb_cursor_open(txn, s->incopen, &cur)) != 0) return st_mdb(s, rc, "reading the open incidents");
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  if (rc == 0 && k.mv_size == 40 && !memcmp(k.mv_data, a->digest, 32)) id = st_get_u64((const uint8_t *)k.mv_data + 32);
  mdb_cursor_close(cur);
  if (rc && rc != MDB_NOTFOUND) return st_mdb(s, rc, "reading the open incidents");
  if (a->w.kind == STORE_INCK_EXPLICIT) id = 0;   /* an operator's heal is its own */
  a->joined = id != 0;
  if (id) {   /* join it */
    View w;
    if ((r = read_view(s, txn, id, &w)) != STORE_OK)
      return r == STORE_ENOENT ? st_fail(s, STORE_ECORRUPT, "the 'incopen' index names incident %llu, which is "
                                         "missing", (unsigned long long)id) : r;
    if (!store_incident_is_open(w.status))
      return st_fail(s, STORE_ECORRUPT, "the 'incopen' index names incident %llu, which is %s",
                     (unsigned long long)id, status_names[w.status]);
    w.count++;
    if (a->w.last > w.last) w.last = a->w.last;
    w.args = a->w.args;
    w.al = a->w.al;
    a->id = id;
    return write_view(s, txn, id, &w);
  }
  uint64_t last;
  if ((r = st_meta_u64(s, txn, "incident", &last)) != STORE_OK) return r;
  id = last + 1;
  uint8_t ik[8];
  st_put_u64(ik, id);
  MDB_val idk = {8, ik};
  if ((rc = mdb_get(txn, s->incidents, &idk, &v)) == 0)
    return st_fail(s, STORE_ECORRUPT, "the 'incidents' database holds incident %llu beyond the last id handed out "
                   "(%llu)", (unsigned long long)id, (unsigned long long)last);
  if (rc != MDB_NOTFOUND) return st_mdb(s, rc, "reading an incident");
  a->id = id;
  open_key(key, a->digest, id);
  if ((r = write_view(s, txn, id, &a->w)) == STORE_OK &&
      (r = st_put(s, txn, s->incopen, key, 40, "", 0, 0, "writing an open incident")) == STORE_OK &&
      (r = st_put_meta_u64(s, txn, "incident", id)) == STORE_OK)
    r = put_event(s, txn, id, STORE_INC_CAPTURED, 0, &a->w, NULL);
  return r;
}

/* A JSON text: 1 when t[0..n) parses as one JSON value. */
static int json_text(const char *t, size_t n) {
  json_error_t e;
  json_t *j = json_loadb(t, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
  json_decref(j);
  return j != NULL;
}

int store_incident_open(store_env *s, const store_failure *f, unsigned flags, uint64_t *id, int *joined) {
  int wf = 0, r;
  s->msg[0] = '\0';
  if (id) *id = 0;
  if (joined) *joined = 0;
  if (!f || !id) return st_fail(s, STORE_EINVAL, "store_incident_open: no failure or no place for its id");
  size_t fl = f->function ? strlen(f->function) : 0, cl = f->condition ? strlen(f->condition) : 0;
  if (!name_ok(f->function, fl))
    return st_fail(s, STORE_EINVAL, "an incident's function is 1 to %u bytes of UTF-8", STORE_NAME_MAX);
  if (!name_ok(f->condition, cl))
    return st_fail(s, STORE_EINVAL, "an incident's condition type is 1 to %u bytes of UTF-8", STORE_NAME_MAX);
  if (!f->evidence || f->evidence_len > STORE_EVIDENCE_MAX)
    return st_fail(s, STORE_EINVAL, "an incident's evidence is %zu bytes; the bound is %u (keep fewer frames or "
                   "shorter values)", f->evidence ? f->evidence_len : 0, STORE_EVIDENCE_MAX);
  if (!json_text(f->evidence, f->evidence_len))
    return st_fail(s, STORE_EINVAL, "an incident's evidence is not a JSON text");
  if ((f->arguments_len && !f->arguments) || f->arguments_len > STORE_ARGUMENTS_MAX ||
      (f->arguments && !jtext_utf8_valid(f->arguments, f->arguments_len)))
    return st_fail(s, STORE_EINVAL, "an incident's arguments are at most %u bytes of UTF-8 (these: %zu)",
                   STORE_ARGUMENTS_MAX, f->arguments_len);
  if ((r = wflags(s, flags, &wf)) != STORE_OK) return r;
  Open a = {f, {0}, {0}, 0, 0};
  int64_t t = f->time_ms ? f->time_ms : st_now_ms();
  int kind = f->kind ? f->kind : STORE_INCK_FAILURE;
  if (!store_incident_kind_name(kind)) return st_fail(s, STORE_EINVAL, "an incident's kind %d is unknown", kind);
  a.w = (View){STORE_INC_CAPTURED, kind, 1, 0, 0, t, t, {0}, f->function, f->condition, f->evidence,
               f->arguments ? f->arguments : "", fl, cl, f->evidence_len, f->arguments_len, NULL, 0, 0};
  memcpy(a.w.def, f->definition, 32);
  dedup_digest(&a.w, a.digest);
  r = st_write(s, open_txn, &a, wf);
  if (r == STORE_OK) {
    *id = a.id;
    if (joined) *joined = a.joined;
  }
  return r;
}

/* ---- transitions */

/* Move incident id from `from` to `to` in txn, with its event; rev (may
** be NULL) becomes its revision. */
static int transition(store_env *s, MDB_txn *txn, uint64_t id, int from, int to, const uint64_t *rev,
                      uint64_t *seq) {
  View w;
  uint8_t digest[32], key[40];
  int r = read_view(s, txn, id, &w);
  if (r != STORE_OK) return r;
  if (w.status != from)
    return st_fail(s, STORE_ECONFLICT, "incident %llu is %s, not %s: it moved meanwhile; nothing was changed "
                   "(read it again)", (unsigned long long)id, status_names[w.status], status_names[from]);
  dedup_digest(&w, digest);
  open_key(key, digest, id);
  w.status = to;
  if (rev) w.revision = *rev;
  if ((r = write_view(s, txn, id, &w)) != STORE_OK) return r;   /* w's pointers are stale from here */
  if (store_incident_is_open(from) && !store_incident_is_open(to))
    r = st_del(s, txn, s->incopen, key, 40, "closing an incident");
  else if (!store_incident_is_open(from) && store_incident_is_open(to))
    r = st_put(s, txn, s->incopen, key, 40, "", 0, 0, "reopening an incident");
  if (r == STORE_OK && (r = read_view(s, txn, id, &w)) == STORE_OK) r = put_event(s, txn, id, to, from, &w, seq);
  return r;
}

int st_incident_repaired(store_env *s, MDB_txn *txn, uint64_t id, uint64_t rev, int tentative) {
  if (!s->repairs) return st_fail(s, STORE_ENOENT, "there is no incident %llu", (unsigned long long)id);
  return transition(s, txn, id, STORE_INC_VERIFYING, tentative ? STORE_INC_TENTATIVE : STORE_INC_REPAIRED, &rev,
                    NULL);
}

typedef struct Move { uint64_t id, seq; int from, to; } Move;

static int move_txn(store_env *s, MDB_txn *txn, void *arg) {
  Move *m = arg;
  return transition(s, txn, m->id, m->from, m->to, NULL, &m->seq);
}

int store_incident_transition(store_env *s, uint64_t id, int from, int to, unsigned flags, uint64_t *event_seq) {
  int wf = 0, r;
  s->msg[0] = '\0';
  if (event_seq) *event_seq = 0;
  if (!store_incident_transition_allowed(from, to))
    return st_fail(s, STORE_EINVAL, "an incident does not go from %s to %s (store_incident_transition_allowed)",
                   store_incident_status_name(from) ? status_names[from] : "(invalid status)",
                   store_incident_status_name(to) ? status_names[to] : "(invalid status)");
  if ((r = wflags(s, flags, &wf)) != STORE_OK) return r;
  Move m = {id, 0, from, to};
  r = st_write(s, move_txn, &m, wf);
  if (r == STORE_OK && event_seq) *event_seq = m.seq;
  return r;
}

typedef struct Interrupt { uint64_t count; } Interrupt;

static int interrupt_txn(store_env *s, MDB_txn *txn, void *arg) {
  Interrupt *a = arg;
  MDB_cursor *cur;
  MDB_val k, v;
  uint64_t *ids = NULL;
  size_t n = 0, cap = 0;
  int rc, r = STORE_OK;
  a->count = 0;
  if ((rc = mdb_cursor_open(txn, s->incopen, &cur)) != 0) return st_mdb(s, rc, "reading the open incidents");
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 40) { r = st_fail(s, STORE_ECORRUPT, "the 'incopen' index: a key is malformed"); break; }
    if (n == cap) {
      uint64_t *m = realloc(ids, (cap = cap ? 2 * cap : 16) * sizeof *ids);
      if (!m) { r = st_fail(s, STORE_ENOMEM, "out of memory reading the open incidents"); break; }
      ids = m;
    }
    ids[n++] = st_get_u64((const uint8_t *)k.mv_data + 32);
  }
  mdb_cursor_close(cur);
  if (r == STORE_OK && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the open incidents");
  for (size_t i = 0; r == STORE_OK && i < n; i++) {
    View w;
    if ((r = read_view(s, txn, ids[i], &w)) != STORE_OK) break;
    if (w.status != STORE_INC_VERIFYING) continue;
    if ((r = transition(s, txn, ids[i], STORE_INC_VERIFYING, STORE_INC_INTERRUPTED, NULL, NULL)) == STORE_OK) a->count++;
  }
  free(ids);
  if (r == STORE_OK && !a->count) r = ST_NOCHANGE;
  return r;
}

int store_incidents_interrupt_verifying(store_env *s, uint64_t *count) {
  Interrupt a = {0};
  s->msg[0] = '\0';
  if (count) *count = 0;
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  int r = st_write(s, interrupt_txn, &a, 0);
  if (r == STORE_OK && count) *count = a.count;
  return r;
}

/* ---- the log and the revision */

typedef struct Note { uint64_t id; int kind; const char *text; size_t len; int64_t t; } Note;

static int note_txn(store_env *s, MDB_txn *txn, void *arg) {
  Note *a = arg;
  View w;
  int r = read_view(s, txn, a->id, &w);
  if (r != STORE_OK) return r;
  /* the entries kept: drop the oldest while the new one does not fit */
  size_t texts = 0, skip = 0, drop = 0;
  st_rd rd = {w.log, w.log + w.loglen, 0};
  size_t *lens = malloc((w.nlog + 1) * sizeof *lens);
  if (!lens) return st_fail(s, STORE_ENOMEM, "out of memory writing an incident's log");
  for (size_t i = 0; i < w.nlog; i++) {
    rd.p += 9;
    lens[i] = st_rd_u32(&rd);
    rd.p += lens[i];
    texts += lens[i];
  }
  while (drop < w.nlog && (w.nlog - drop + 1 > STORE_INCIDENT_LOG_ENTRIES || texts + a->len > STORE_INCIDENT_LOG_BYTES)) {
    texts -= lens[drop];
    skip += NOTE_HEAD + lens[drop++];
  }
  free(lens);
  size_t keep = w.loglen - skip;
  uint8_t *log = malloc(keep + NOTE_HEAD + a->len);
  if (!log) return st_fail(s, STORE_ENOMEM, "out of memory writing an incident's log");
  memcpy(log, w.log + skip, keep);
  st_wr o = {log + keep};
  st_wr_u64(&o, (uint64_t)a->t);
  st_wr_u8(&o, (uint8_t)a->kind);
  st_wr_u32(&o, (uint32_t)a->len);
  st_wr_bytes(&o, a->text, a->len);
  w.log = log;
  w.loglen = keep + NOTE_HEAD + a->len;
  w.nlog = w.nlog - drop + 1;
  w.dropped += drop;
  r = write_view(s, txn, a->id, &w);
  free(log);
  return r;
}

int store_incident_note(store_env *s, uint64_t id, int kind, const char *text, size_t len, int64_t time_ms,
                        unsigned flags) {
  int wf = 0, r;
  s->msg[0] = '\0';
  if (!store_note_kind_name(kind))
    return st_fail(s, STORE_EINVAL, "a log entry's kind is %d: it is an exchange or a verification", kind);
  if (!text || len > STORE_NOTE_MAX)
    return st_fail(s, STORE_EINVAL, "a log entry is %zu bytes; the bound is %u", text ? len : 0, STORE_NOTE_MAX);
  if (!json_text(text, len)) return st_fail(s, STORE_EINVAL, "a log entry is not a JSON text");
  if ((r = wflags(s, flags, &wf)) != STORE_OK) return r;
  Note a = {id, kind, text, len, time_ms ? time_ms : st_now_ms()};
  return st_write(s, note_txn, &a, wf);
}

typedef struct SetRev { uint64_t id, rev; } SetRev;

static int setrev_txn(store_env *s, MDB_txn *txn, void *arg) {
  SetRev *a = arg;
  View w;
  uint64_t cur;
  int r = st_get_current(s, txn, &cur);
  if (r != STORE_OK) return r;
  if (a->rev > cur)
    return st_fail(s, STORE_EINVAL, "incident %llu cannot have become revision %llu: CURRENT is %llu",
                   (unsigned long long)a->id, (unsigned long long)a->rev, (unsigned long long)cur);
  if ((r = read_view(s, txn, a->id, &w)) != STORE_OK) return r;
  w.revision = a->rev;
  return write_view(s, txn, a->id, &w);
}

int store_incident_set_revision(store_env *s, uint64_t id, uint64_t rev, unsigned flags) {
  int wf = 0, r;
  s->msg[0] = '\0';
  if ((r = wflags(s, flags, &wf)) != STORE_OK) return r;
  SetRev a = {id, rev};
  return st_write(s, setrev_txn, &a, wf);
}

/* ---- reading */

int store_incident_get(store_env *s, uint64_t id, store_incident **out) {
  MDB_txn *txn;
  View w;
  s->msg[0] = '\0';
  if (!out) return st_fail(s, STORE_EINVAL, "store_incident_get: no place for the incident");
  *out = NULL;
  if (!s->repairs) return st_fail(s, STORE_ENOENT, "there is no incident %llu", (unsigned long long)id);
  int r = st_read_begin(s, &txn);
  if (r != STORE_OK) return r;
  if ((r = read_view(s, txn, id, &w)) == STORE_OK && !(*out = view_public(&w, id)))
    r = st_fail(s, STORE_ENOMEM, "out of memory reading an incident");
  mdb_txn_abort(txn);
  return r;
}

static int by_id_desc(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Hand incident id (record w) to fn when its status is in mask; *stop
** says what happened: 0 skipped, 1 handed, 2 handed and fn asked to stop. */
static int hand(store_env *s, uint64_t id, const View *w, unsigned mask, store_incident_fn fn, void *arg, int *stop) {
  *stop = 0;
  if (mask && !(mask & B(w->status))) return STORE_OK;
  store_incident *inc = view_public(w, id);
  if (!inc) return st_fail(s, STORE_ENOMEM, "out of memory reading an incident");
  *stop = fn(arg, inc) ? 2 : 1;
  free(inc);
  return STORE_OK;
}

int store_incidents_list(store_env *s, unsigned status_mask, size_t limit, store_incident_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  uint64_t *ids = NULL;
  size_t done = 0;
  int rc, r, stop = 0;
  s->msg[0] = '\0';
  if (!fn) return st_fail(s, STORE_EINVAL, "store_incidents_list: no callback");
  if (status_mask & ~((B(STORE_INC_STATUS_COUNT) - 1) & ~1u))
    return st_fail(s, STORE_EINVAL, "store_incidents_list: unknown status bits %#x", status_mask);
  if (!s->repairs) return STORE_OK;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if (status_mask && !(status_mask & ~STORE_INC_OPEN_MASK)) {
    /* open ones only: the index, ids sorted newest first */
    size_t n = 0, cap = 0;
    if ((rc = mdb_cursor_open(txn, s->incopen, &cur)) != 0) { r = st_mdb(s, rc, "reading the open incidents"); goto out; }
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      if (k.mv_size != 40) { r = st_fail(s, STORE_ECORRUPT, "the 'incopen' index: a key is malformed"); goto out; }
      if (n == cap) {
        uint64_t *m = realloc(ids, (cap = cap ? 2 * cap : 16) * sizeof *ids);
        if (!m) { r = st_fail(s, STORE_ENOMEM, "out of memory reading the open incidents"); goto out; }
        ids = m;
      }
      ids[n++] = st_get_u64((const uint8_t *)k.mv_data + 32);
    }
    if (rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading the open incidents"); goto out; }
    if (n) qsort(ids, n, sizeof *ids, by_id_desc);   /* (ids is NULL when none is open) */
    for (size_t i = 0; i < n && (!limit || done < limit); i++) {
      View w;
      if ((r = read_view(s, txn, ids[i], &w)) != STORE_OK) goto out;
      if ((r = hand(s, ids[i], &w, status_mask, fn, arg, &stop)) != STORE_OK) goto out;
      if (stop) done++;
      if (stop == 2) break;
    }
    goto out;
  }
  if ((rc = mdb_cursor_open(txn, s->incidents, &cur)) != 0) { r = st_mdb(s, rc, "reading the incidents"); goto out; }
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_LAST); rc == 0 && (!limit || done < limit);
       rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)) {
    View w;
    const char *why = NULL;
    uint64_t id = k.mv_size == 8 ? st_get_u64(k.mv_data) : 0;
    if (!id) { r = st_fail(s, STORE_ECORRUPT, "the 'incidents' database: a key is malformed"); goto out; }
    if (view_decode(v.mv_data, v.mv_size, &w, &why) != 0) { r = corrupt_inc(s, id, why); goto out; }
    if ((r = hand(s, id, &w, status_mask, fn, arg, &stop)) != STORE_OK) goto out;
    if (stop) done++;
    if (stop == 2) break;
  }
  if (rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the incidents");
out:
  free(ids);
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}

/* ---- verification */

int st_verify_incidents(store_env *s, MDB_txn *txn) {
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  uint64_t last, open = 0, indexed = 0;
  int rc, r;
  if (!s->repairs) return STORE_OK;
  if ((r = st_meta_u64(s, txn, "incident", &last)) != STORE_OK) return r;
  if ((rc = mdb_cursor_open(txn, s->incidents, &cur)) != 0) return st_mdb(s, rc, "reading the incidents");
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    View w;
    const char *why = NULL;
    uint64_t id = k.mv_size == 8 ? st_get_u64(k.mv_data) : 0;
    if (!id) { r = st_fail(s, STORE_ECORRUPT, "the 'incidents' database: a key is malformed"); goto out; }
    if (view_decode(v.mv_data, v.mv_size, &w, &why) != 0) { r = corrupt_inc(s, id, why); goto out; }
    if (id > last) {
      r = st_fail(s, STORE_ECORRUPT, "the 'incidents' database holds incident %llu beyond the last id handed "
                  "out (%llu)", (unsigned long long)id, (unsigned long long)last);
      goto out;
    }
    if (!store_incident_is_open(w.status)) continue;
    open++;
    uint8_t digest[32], key[40];
    dedup_digest(&w, digest);
    open_key(key, digest, id);
    MDB_val ok = {40, key}, ov;
    if ((rc = mdb_get(txn, s->incopen, &ok, &ov)) != 0) {
      r = rc == MDB_NOTFOUND ? st_fail(s, STORE_ECORRUPT, "incident %llu is %s but not in the 'incopen' index",
                                       (unsigned long long)id, status_names[w.status])
                             : st_mdb(s, rc, "reading the open incidents");
      goto out;
    }
  }
  if (rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading the incidents"); goto out; }
  mdb_cursor_close(cur);
  /* the index holds nothing else (each of its keys named an open incident above, or is one too many) */
  MDB_stat st;
  if ((rc = mdb_stat(txn, s->incopen, &st)) != 0) return st_mdb(s, rc, "reading the open incidents");
  indexed = st.ms_entries;
  if (indexed != open)
    return st_fail(s, STORE_ECORRUPT, "the 'incopen' index holds %llu incidents, but %llu are open",
                   (unsigned long long)indexed, (unsigned long long)open);
  return STORE_OK;
out:
  mdb_cursor_close(cur);
  return r;
}
