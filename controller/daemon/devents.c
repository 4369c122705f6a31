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

#define EVENT_DELAY 0.010
#define EVENT_BATCH 512

/* Room for `need` events; -1 when out of memory (the buffer unchanged). */
static int grow(EventBuf *b, size_t need) {
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  json_t **e = realloc(b->ev, cap * sizeof *e);
  if (!e) return -1;
  b->ev = e;
  int64_t *tm = realloc(b->time_ms, cap * sizeof *tm);
  if (!tm) return -1;
  b->time_ms = tm;
  b->cap = cap;
  return 0;
}

void devents_add(Daemon *D, json_t *ev) {
  if (!ev) return;
  dkeys_tag_event(D, ev);
  EventBuf *b = &D->events;
  if (b->n == b->cap && grow(b, b->n + 1) != 0) {
    dlog(D, "could not record an event: out of memory");
    json_decref(ev);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (!b->n) b->first = daemon_now();
  b->time_ms[b->n] = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  b->ev[b->n++] = ev;
  if (b->n >= EVENT_BATCH) devents_flush_due(D);
}

static int fan_out(void *arg, uint64_t seq, const char *json, size_t len) {
  Daemon *D = arg;
  D->events.told = seq;
  for (int i = 0; i < D->nclients; i++)
    if (D->clients[i]->subscribed) dclients_line(D->clients[i], json, len);
  return 0;
}

/* A timed write of the buffered events, on the store writer (dsync.c). */
typedef struct EvWrite {
  DWrite w;                  /* first: the writer's handle on it */
  json_t **ev;
  int64_t *time_ms;
  size_t n;
  uint64_t first;            /* the seq of the first, once written */
} EvWrite;

static int write_events(store_env *s, DWrite *w) {
  EvWrite *e = (EvWrite *)w;
  return store_events_append_later(s, e->ev, e->time_ms, e->n, &e->first);
}

static void events_written(Daemon *D, DWrite *w) {
  EvWrite *e = (EvWrite *)w;
  if (w->rc != STORE_OK)
    dlog(D, "could not record %zu event%s: %s", e->n, e->n == 1 ? "" : "s", w->err);
  else
    devents_tell(D, e->first, e->n);
  for (size_t i = 0; i < e->n; i++) json_decref(e->ev[i]);
  free(e->ev);
  free(e->time_ms);
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
    EvWrite *e;
    if (dsync_busy(D) || !(e = malloc(sizeof *e))) return;
    /* the buffer's arrays go with the write; the next event gets new ones */
    *e = (EvWrite){{write_events, events_written, ++D->group.seq, STORE_OK, ""}, b->ev, b->time_ms, b->n, 0};
    b->ev = NULL;
    b->time_ms = NULL;
    b->n = b->cap = 0;
    dsync_write(D, &e->w);
    dsync_want(D, e->w.seq);
    return;
  }
  uint64_t first = 0;
  int rc = gen ? store_advance_generation(dstore(D), D->gen, b->ev, b->time_ms, b->n, &first)
               : store_events_append_objects(dstore(D), b->ev, b->time_ms, b->n, &first);
  if (rc != STORE_OK) {
    dlog(D, "could not record %zu event%s%s: %s", b->n, b->n == 1 ? "" : "s",
         gen ? " and the generation" : "", store_errmsg(dstore(D)));
    first = 0;
  } else if (gen) {
    D->gen_saved = D->gen;
  }
  devents_written(D, first);
}

void devents_flush(Daemon *D) { flush(D, 0); }

void devents_put_back(Daemon *D, json_t *const *ev, const int64_t *time_ms, size_t n) {
  EventBuf *b = &D->events;
  if (!n) return;
  if (b->n + n > b->cap && grow(b, b->n + n) != 0) {
    dlog(D, "could not keep %zu event%s to write later: out of memory", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) json_decref(ev[i]);
    return;
  }
  /* they came before those buffered since: in front of them */
  memmove(b->ev + n, b->ev, b->n * sizeof *b->ev);
  memmove(b->time_ms + n, b->time_ms, b->n * sizeof *b->time_ms);
  memcpy(b->ev, ev, n * sizeof *ev);
  memcpy(b->time_ms, time_ms, n * sizeof *time_ms);
  if (!b->n) b->first = daemon_now();
  b->n += n;
}

void devents_flush_due(Daemon *D) { flush(D, 1); }

void devents_written(Daemon *D, uint64_t first) {
  EventBuf *b = &D->events;
  /* everything from first on: the daemon is the store's only writer, so
  ** that is what was just written (with a revision: one more, its outcome);
  ** and before it, the events of groups still syncing, durable now that
  ** this commit synced in full (they are told in order) */
  if (first && D->subscribers) {
    uint64_t told = D->events.told;
    store_events_read(dstore(D), told && told < first ? told + 1 : first, 0, 0, fan_out, D);
  } else if (!D->subscribers) {
    D->events.told = 0;
  }
  for (size_t i = 0; i < b->n; i++) json_decref(b->ev[i]);
  b->n = 0;
  dlog_flush(D);  /* the transactions' log lines go with their events */
}

void devents_tell(Daemon *D, uint64_t first, size_t n) {
  if (!D->subscribers) {
    D->events.told = 0;
    return;
  }
  if (!first || !n || D->events.told >= first + n - 1) return;   /* told already */
  uint64_t from = D->events.told >= first ? D->events.told + 1 : first;
  store_events_read(dstore(D), from, (size_t)(first + n - from), 0, fan_out, D);
}

double devents_due(Daemon *D) {
  if (!D->events.n) return -1;
  double d = D->events.first + EVENT_DELAY - daemon_now();
  return d > 0 ? d : 0;
}
