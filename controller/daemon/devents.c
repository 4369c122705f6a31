/*
** devents.c — the events of the daemon's attempts (daemon.h).
**
** Every attempt records a `started` event and an outcome event; writing each
** in its own LMDB transaction would cost two disk syncs per application
** call.  So events are buffered and written together: inside the LMDB
** transaction of any revision published (a revision is never durable
** without the events that led to it), when a transaction pauses, at
** shutdown, and otherwise EVENT_DELAY after the oldest was buffered (or
** once EVENT_BATCH are waiting) by the store writer thread, the meta
** page's sync left for later.  A kernel killed in between loses at most those last few
** milliseconds of events, never a revision.  A generation that moved without a revision (a
** pause, a resume, a new worker) is recorded with them, before any reply
** can carry it.  Subscribers get each event once it is stored, as stored
** (seq, time, secrets redacted).
**
** A call or a preview that publishes nothing leaves no events: its
** "started" is held (devents_started) until its outcome, and when that
** publishes nothing, both are dropped and the outcome is counted instead
** (devents_ended, dtally.c); a keyed one keeps its outcome as its key's
** record only.  A call still running after STARTED_HOLD has its start
** buffered, so that a long one is recorded (and marked interrupted after a
** crash) like any other.  The counters go with the timed writes.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "daemon.h"
#include "jtext.h"

#define EVENT_DELAY 0.010
#define EVENT_BATCH 512
#define STARTED_HOLD 1.0

/* Room for `need` events; -1 when out of memory (the buffer unchanged). */
static int grow(EventBuf *b, size_t need) {
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  json_t **e = realloc(b->ev, cap * sizeof *e);
  if (!e) return -1;
  b->ev = e;
  char **t = realloc(b->text, cap * sizeof *t);
  if (!t) return -1;
  b->text = t;
  size_t *l = realloc(b->len, cap * sizeof *l);
  if (!l) return -1;
  b->len = l;
  int64_t *tm = realloc(b->time_ms, cap * sizeof *tm);
  if (!tm) return -1;
  b->time_ms = tm;
  b->cap = cap;
  return 0;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Buffer event i: ev, or text[0..len), of time t (ms; 0: now). */
static void push_at(Daemon *D, json_t *ev, char *text, size_t len, int64_t t) {
  EventBuf *b = &D->events;
  if (b->n == b->cap && grow(b, b->n + 1) != 0) {
    dlog(D, "could not record an event: out of memory");
    json_decref(ev);
    free(text);
    return;
  }
  if (!b->n) b->first = daemon_now();
  b->time_ms[b->n] = t ? t : now_ms();
  b->ev[b->n] = ev;
  b->text[b->n] = text;
  b->len[b->n++] = len;
  if (b->n >= EVENT_BATCH) devents_flush_due(D);
}

static void push(Daemon *D, json_t *ev, char *text, size_t len) { push_at(D, ev, text, len, 0); }

/* The held start goes into the buffer: its attempt is recorded. */
static void release_held(Daemon *D) {
  EventBuf *b = &D->events;
  if (!b->held.text) return;
  char *text = b->held.text;
  b->held.text = NULL;
  push_at(D, NULL, text, b->held.len, b->held.time_ms);
}

void devents_add(Daemon *D, json_t *ev) {
  if (!ev) return;
  dkeys_tag_event(D, ev);
  json_t *a = json_object_get(ev, "attempt");
  if (D->events.held.text && json_is_integer(a) && (uint64_t)json_integer_value(a) == D->events.held.attempt)
    release_held(D);   /* an event of the held attempt: it is recorded, its start first */
  push(D, ev, NULL, 0);
}

static int countable(proto_Op op) { return op == PROTO_CALL || op == PROTO_PREVIEW; }

void devents_started(Daemon *D, uint64_t attempt, proto_Op op, char *text, size_t len) {
  EventBuf *b = &D->events;
  release_held(D);   /* (an attempt ended without a word: recorded) */
  if (!text) {
    dlog(D, "could not record an event: out of memory");
    return;
  }
  if (!countable(op)) {
    push(D, NULL, text, len);
    return;
  }
  b->held.attempt = attempt;
  b->held.text = text;
  b->held.len = len;
  b->held.time_ms = now_ms();
  b->held.since = daemon_now();
}

int devents_ended(Daemon *D, uint64_t attempt, proto_Op op, const char *reason, int record) {
  EventBuf *b = &D->events;
  if (b->held.text && b->held.attempt == attempt && countable(op) && !record && !D->group.restoring && reason &&
      events_of_reason(reason) != STORE_EV_INTERRUPTED) {
    free(b->held.text);
    b->held.text = NULL;
    b->quiet = attempt;
    dtally_count(D, proto_op_name(op), reason);
    return 1;
  }
  release_held(D);
  return 0;
}

int devents_quiet(Daemon *D, uint64_t attempt) { return attempt && D->events.quiet == attempt; }

void devents_outcome(Daemon *D, uint64_t attempt, int keyed, char *text, size_t len) {
  if (!devents_quiet(D, attempt)) devents_add_text(D, text, len);
  else if (keyed) dtally_key(D, text, len);
  else free(text);
}

void devents_add_text(Daemon *D, char *text, size_t len) {
  if (text) push(D, NULL, text, len);
  else dlog(D, "could not record an event: out of memory");
}

int devents_objects(Daemon *D) {
  EventBuf *b = &D->events;
  for (size_t i = 0; i < b->n; i++) {
    if (b->ev[i]) continue;
    if (!(b->ev[i] = jtext_load_members(b->text[i], b->len[i], 0, NULL))) {
      dlog(D, "could not prepare an event for the store: out of memory");
      return -1;
    }
    free(b->text[i]);
    b->text[i] = NULL;
  }
  return 0;
}

static int fan_out(void *arg, uint64_t seq, const char *json, size_t len) {
  Daemon *D = arg;
  D->events.told = seq;
  for (int i = 0; i < D->nclients; i++)
    if (D->clients[i]->subscribed) dclients_line(D->clients[i], json, len);
  return 0;
}

/* Subscribers get the stored events after the last they got, up to seq
** last (0: all stored), oldest first.  Writes are told in the order the
** loop settles them, which need not be the order they were stored (a
** group's events are told once it is durable, a timed write's at once, a
** pause's synchronously): reading on from what was told last, never from
** the write's own first event, is what keeps every event told exactly
** once and in order.  An event read here is committed, and durable by the
** time the write that told it is: a later commit's first sync covers the
** commits before it. */
static void tell(Daemon *D, uint64_t last) {
  EventBuf *b = &D->events;
  StoredEvs *u = &b->untold;
  if (!D->subscribers) {
    b->told = 0;
    u->len = u->off = 0;
    return;
  }
  /* first those the store writer read back, in seq order: no store read */
  while (u->off < u->len) {
    const unsigned char *r = u->buf + u->off;
    uint64_t seq = 0;
    uint32_t len = 0;
    for (int i = 0; i < 8; i++) seq = seq << 8 | r[i];
    for (int i = 8; i < 12; i++) len = len << 8 | r[i];
    if (last && seq > last) break;
    if (seq > b->told) fan_out(D, seq, (const char *)r + 12, len);
    u->off += 12 + (size_t)len;
  }
  if (u->off == u->len) u->off = u->len = 0;
  if (last && b->told >= last) return;   /* told already */
  /* the rest from the store: written by the loop itself, or before anyone
  ** subscribed */
  store_events_read(dstore(D), b->told + 1, last ? (size_t)(last - b->told) : 0, 0, fan_out, D);
}

/* Room for n more bytes; -1 when out of memory. */
static int stored_room(StoredEvs *e, size_t n) {
  if (e->cap - e->len >= n) return 0;
  size_t cap = e->cap ? e->cap : 4096;
  while (cap - e->len < n) cap *= 2;
  unsigned char *nb = realloc(e->buf, cap);
  if (!nb) return -1;
  e->buf = nb;
  e->cap = cap;
  return 0;
}

static int stored_push(StoredEvs *e, uint64_t seq, const char *json, size_t len) {
  if (stored_room(e, 12 + len) != 0) return -1;
  unsigned char *r = e->buf + e->len;
  for (int i = 0; i < 8; i++) r[i] = (unsigned char)(seq >> (56 - 8 * i));
  for (int i = 0; i < 4; i++) r[8 + i] = (unsigned char)((uint32_t)len >> (24 - 8 * i));
  memcpy(r + 12, json, len);
  e->len += 12 + len;
  return 0;
}

static int collect(void *arg, uint64_t seq, const char *json, size_t len) {
  return stored_push(arg, seq, json, len) != 0;   /* out of memory: stop; the rest is read later */
}

int devents_read_back(store_env *s, DWrite *w, uint64_t first, size_t n) {
  if (!w->read_back || !first || !n) return STORE_OK;
  return store_events_read(s, first, n, 0, collect, &w->stored);
}

void devents_stored(Daemon *D, DWrite *w) {
  StoredEvs *u = &D->events.untold, *e = &w->stored;
  if (w->rc == STORE_OK) D->events.written = 1;   /* (a group's too: the next prune looks) */
  if (D->subscribers && e->len) {
    if (!u->len) {   /* take the buffer as it is */
      free(u->buf);
      *u = *e;
      *e = (StoredEvs){0};
    } else if (stored_room(u, e->len) == 0) {   /* behind those waiting (else the store is read) */
      memcpy(u->buf + u->len, e->buf, e->len);
      u->len += e->len;
    }
  }
  free(e->buf);
  *e = (StoredEvs){0};
}

static int last_seq(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)json, (void)len;
  *(uint64_t *)arg = seq;
  return 1;   /* one is enough */
}

/* A timed write of the buffered events, on the store writer (dsync.c). */
typedef struct EvWrite {
  DWrite w;                  /* first: the writer's handle on it */
  store_ev *ev;              /* objects and texts: the buffer's, owned */
  size_t n;
  uint64_t first;            /* the seq of the first, once written */
  DTally t;                  /* the counts and key-only records pending */
  int tallied, tally_rc;
  DTraffic traffic;          /* calls for the traffic sample waiting (dtraffic.c) */
} EvWrite;

static store_tally tally_of(const DTally *t) {
  return (store_tally){t->counts, t->ncounts, t->keys, t->nkeys, t->attempt};
}

static int write_events(store_env *s, DWrite *w) {
  EvWrite *e = (EvWrite *)w;
  int rc = e->n ? store_events_append_later(s, e->ev, e->n, &e->first) : STORE_OK;
  if (rc == STORE_OK && e->n) (void)devents_read_back(s, w, e->first, e->n);   /* else the store is read */
  if (rc == STORE_OK && e->tallied) {
    store_tally t = tally_of(&e->t);
    e->tally_rc = store_tally_add(s, &t, STORE_GROUP_SYNC_LATER);
    if (e->tally_rc != STORE_OK) snprintf(w->err, sizeof w->err, "%s", store_errmsg(s));
  }
  if (rc == STORE_OK) (void)dtraffic_write(s, &e->traffic, STORE_GROUP_SYNC_LATER);
  return rc;
}

static void events_written(Daemon *D, DWrite *w) {
  EvWrite *e = (EvWrite *)w;
  devents_stored(D, w);
  if (e->tallied) {
    if (w->rc == STORE_OK && e->tally_rc != STORE_OK) dlog(D, "could not record the counters: %s", w->err);
    dtally_done(D, &e->t, w->rc == STORE_OK && e->tally_rc == STORE_OK);
  }
  dtraffic_done(D, &e->traffic, w->rc == STORE_OK);
  if (w->rc != STORE_OK)
    dlog(D, "could not record %zu event%s: %s", e->n, e->n == 1 ? "" : "s", w->err);
  else if (e->n)
    devents_tell(D, e->first, e->n), D->events.written = 1;
  for (size_t i = 0; i < e->n; i++) {
    json_decref(e->ev[i].obj);
    free((char *)e->ev[i].members);
  }
  free(e->ev);
  free(e);
  dlog_flush(D);  /* the transactions' log lines go with their events */
}

/* later: a timed flush.  The store writer makes it (its meta page's sync
** left for later, as a group's), so that the loop does not wait for a
** sync every EVENT_DELAY while calls run; while the writer is busy the
** events wait (a group written meanwhile takes them along).  A generation
** that moved is always written here and synced in full, before any reply
** can carry it. */
static void flush(Daemon *D, int later) {
  EventBuf *b = &D->events;
  int gen = D->gen > D->gen_saved;
  int tally = dtally_due(D) >= 0 && (!later || dtally_due(D) == 0 || b->n);   /* counts ride with events */
  int traffic = dtraffic_due(D) >= 0 && (!later || dtraffic_due(D) == 0 || b->n || tally);   /* and sampled calls */
  if (!b->n && !gen && !tally && !traffic) return;
  if (later && D->sync && !gen) {
    if (dsync_busy(D)) return;
    EvWrite *e = calloc(1, sizeof *e);
    store_ev *ev = e && b->n ? malloc(b->n * sizeof *ev) : NULL;
    if (!e || (b->n && !ev)) {
      free(e);
      return;   /* the next turn tries again */
    }
    for (size_t i = 0; i < b->n; i++) ev[i] = (store_ev){b->ev[i], b->text[i], b->len[i], b->time_ms[i]};
    *e = (EvWrite){{write_events, events_written, ++D->group.seq, STORE_OK, "", D->subscribers > 0, {0}}, ev,
                   b->n, 0, {0}, 0, STORE_OK, {0}};
    e->tallied = tally && dtally_take(D, &e->t);
    if (traffic) dtraffic_take(D, &e->traffic);
    b->n = 0;
    dsync_write(D, &e->w);
    dsync_want(D, e->w.seq);
    return;
  }
  uint64_t first = 0;
  int rc = STORE_OK;
  if (b->n || gen) {
    rc = devents_objects(D) != 0 ? STORE_ENOMEM
         : gen ? store_advance_generation(dstore(D), D->gen, b->ev, b->time_ms, b->n, &first)
               : store_events_append_objects(dstore(D), b->ev, b->time_ms, b->n, &first);
    if (rc != STORE_OK) {
      dlog(D, "could not record %zu event%s%s: %s", b->n, b->n == 1 ? "" : "s",
           gen ? " and the generation" : "", rc == STORE_ENOMEM ? "out of memory" : store_errmsg(dstore(D)));
      first = 0;
    } else if (gen) {
      D->gen_saved = D->gen;
    }
  }
  DTally t;
  if (rc == STORE_OK && tally && dtally_take(D, &t)) {
    store_tally st = tally_of(&t);
    int trc = store_tally_add(dstore(D), &st, 0);
    if (trc != STORE_OK) dlog(D, "could not record the counters: %s", store_errmsg(dstore(D)));
    dtally_done(D, &t, trc == STORE_OK);
  }
  if (rc == STORE_OK && traffic) {
    DTraffic tr;
    dtraffic_take(D, &tr);
    dtraffic_write(dstore(D), &tr, 0);
    dtraffic_done(D, &tr, 1);
  }
  devents_written(D, first);
}

void devents_flush(Daemon *D) { flush(D, 0); }

void devents_put_back(Daemon *D, const store_ev *ev, size_t n) {
  EventBuf *b = &D->events;
  if (!n) return;
  if (b->n + n > b->cap && grow(b, b->n + n) != 0) {
    dlog(D, "could not keep %zu event%s to write later: out of memory", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
      json_decref(ev[i].obj);
      free((char *)ev[i].members);
    }
    return;
  }
  /* they came before those buffered since: in front of them */
  memmove(b->ev + n, b->ev, b->n * sizeof *b->ev);
  memmove(b->text + n, b->text, b->n * sizeof *b->text);
  memmove(b->len + n, b->len, b->n * sizeof *b->len);
  memmove(b->time_ms + n, b->time_ms, b->n * sizeof *b->time_ms);
  for (size_t i = 0; i < n; i++) {
    b->ev[i] = ev[i].obj;
    b->text[i] = (char *)ev[i].members;
    b->len[i] = ev[i].len;
    b->time_ms[i] = ev[i].time_ms;
  }
  if (!b->n) b->first = daemon_now();
  b->n += n;
}

void devents_flush_due(Daemon *D) {
  EventBuf *b = &D->events;
  if (b->held.text && daemon_now() >= b->held.since + STARTED_HOLD) release_held(D);   /* a long one */
  flush(D, 1);
  if (dretain_due(D) == 0) dretain_run(D);
}

void devents_written(Daemon *D, uint64_t first) {
  EventBuf *b = &D->events;
  if (first) tell(D, 0), b->written = 1;   /* with a revision: one more than the buffer, its outcome */
  for (size_t i = 0; i < b->n; i++) {
    json_decref(b->ev[i]);
    free(b->text[i]);
  }
  b->n = 0;
  dlog_flush(D);  /* the transactions' log lines go with their events */
}

void devents_tell(Daemon *D, uint64_t first, size_t n) {
  if (first && n) tell(D, first + n - 1);
}

void devents_tell_stored(Daemon *D) { tell(D, 0); }

void devents_free(Daemon *D) {
  free(D->events.ev);
  free(D->events.text);
  free(D->events.len);
  free(D->events.time_ms);
  free(D->events.untold.buf);
}

void devents_subscribed(Daemon *D) {
  if (D->subscribers != 1) return;   /* told is counted already */
  D->events.told = 0;
  store_events_read(dstore(D), 0, 1, STORE_NEWEST_FIRST, last_seq, &D->events.told);
}

/* The sooner of *d (any: one is set) and in. */
static void sooner(double *d, int *any, double in) {
  if (!*any || in < *d) *d = in;
  *any = 1;
}

double devents_before(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  double due = devents_due(D);
  if (due != 0) return due;
  devents_flush_due(D);
  return -1;
}

double devents_due(Daemon *D) {
  EventBuf *b = &D->events;
  double now = daemon_now(), d = 0, t = dtally_due(D), r = dretain_due(D), c = dtraffic_due(D);
  int any = 0;
  if (c >= 0) sooner(&d, &any, c);
  if (b->n) sooner(&d, &any, b->first + EVENT_DELAY - now);
  if (b->held.text) sooner(&d, &any, b->held.since + STARTED_HOLD - now);
  if (t >= 0) sooner(&d, &any, t);
  if (r >= 0) sooner(&d, &any, r);
  if (!any) return -1;
  return d > 0 ? d : 0;
}
