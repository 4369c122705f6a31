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
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "daemon.h"
#include "jtext.h"

#define EVENT_DELAY 0.010
#define EVENT_BATCH 512

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

/* Buffer event i: ev, or text[0..len). */
static void push(Daemon *D, json_t *ev, char *text, size_t len) {
  EventBuf *b = &D->events;
  if (b->n == b->cap && grow(b, b->n + 1) != 0) {
    dlog(D, "could not record an event: out of memory");
    json_decref(ev);
    free(text);
    return;
  }
  if (!b->n) b->first = daemon_now();
  b->time_ms[b->n] = now_ms();
  b->ev[b->n] = ev;
  b->text[b->n] = text;
  b->len[b->n++] = len;
  if (b->n >= EVENT_BATCH) devents_flush_due(D);
}

void devents_add(Daemon *D, json_t *ev) {
  if (!ev) return;
  dkeys_tag_event(D, ev);
  push(D, ev, NULL, 0);
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
} EvWrite;

static int write_events(store_env *s, DWrite *w) {
  EvWrite *e = (EvWrite *)w;
  int rc = store_events_append_later(s, e->ev, e->n, &e->first);
  if (rc == STORE_OK) (void)devents_read_back(s, w, e->first, e->n);   /* else the store is read */
  return rc;
}

static void events_written(Daemon *D, DWrite *w) {
  EvWrite *e = (EvWrite *)w;
  devents_stored(D, w);
  if (w->rc != STORE_OK)
    dlog(D, "could not record %zu event%s: %s", e->n, e->n == 1 ? "" : "s", w->err);
  else
    devents_tell(D, e->first, e->n);
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
  if (!b->n && !gen) return;
  if (later && D->sync && !gen) {
    if (dsync_busy(D)) return;
    EvWrite *e = malloc(sizeof *e);
    store_ev *ev = e ? malloc(b->n * sizeof *ev) : NULL;
    if (!ev) {
      free(e);
      return;   /* the next turn tries again */
    }
    for (size_t i = 0; i < b->n; i++) ev[i] = (store_ev){b->ev[i], b->text[i], b->len[i], b->time_ms[i]};
    *e = (EvWrite){{write_events, events_written, ++D->group.seq, STORE_OK, "", D->subscribers > 0, {0}}, ev,
                   b->n, 0};
    b->n = 0;
    dsync_write(D, &e->w);
    dsync_want(D, e->w.seq);
    return;
  }
  uint64_t first = 0;
  int rc = devents_objects(D) != 0 ? STORE_ENOMEM
           : gen ? store_advance_generation(dstore(D), D->gen, b->ev, b->time_ms, b->n, &first)
                 : store_events_append_objects(dstore(D), b->ev, b->time_ms, b->n, &first);
  if (rc != STORE_OK) {
    dlog(D, "could not record %zu event%s%s: %s", b->n, b->n == 1 ? "" : "s",
         gen ? " and the generation" : "", rc == STORE_ENOMEM ? "out of memory" : store_errmsg(dstore(D)));
    first = 0;
  } else if (gen) {
    D->gen_saved = D->gen;
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

void devents_flush_due(Daemon *D) { flush(D, 1); }

void devents_written(Daemon *D, uint64_t first) {
  EventBuf *b = &D->events;
  if (first) tell(D, 0);   /* with a revision: one more than the buffer, its outcome */
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

void devents_subscribed(Daemon *D) {
  if (D->subscribers != 1) return;   /* told is counted already */
  D->events.told = 0;
  store_events_read(dstore(D), 0, 1, STORE_NEWEST_FIRST, last_seq, &D->events.told);
}

double devents_due(Daemon *D) {
  if (!D->events.n) return -1;
  double d = D->events.first + EVENT_DELAY - daemon_now();
  return d > 0 ? d : 0;
}
