/*
** dclients_finds.c — the kernel daemon's client connections (kd.h): reading
** newline-delimited requests, buffered non-blocking replies, event lines
** for subscribers, and the queues requests wait in.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "daemon.h"
#include "proto.h"

Client *dclients_find(Daemon *D, uint64_t serial) {
  if (!serial) return NULL;
  for (int i = 0; i < D->nclients; i++)
    if (D->clients[i]->serial == serial) return D->clients[i];
  return NULL;
}

void dclients_flush(Client *c) {
  while (c->outoff < c->outlen) {
    ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) { c->closing = 2; c->outlen = c->outoff = 0; return; }  /* gone */
    c->outoff += (size_t)w;
  }
  c->outlen = c->outoff = 0;
}

/* Queue one line (text[0..n) plus a newline) for a client and try to send
** it.  A client that lets PROTO_REPLY_MAX bytes pile up is not reading:
** it is dropped rather than let it hold the kernel's memory. */
static void client_write_line(Client *c, const char *text, size_t n) {
  if (c->closing == 2) return;
  if (c->outlen - c->outoff + n + 1 > PROTO_REPLY_MAX) {
    c->closing = 2;
    return;
  }
  if (c->outlen + n + 1 > c->outcap) {
    if (c->outoff) {
      memmove(c->out, c->out + c->outoff, c->outlen - c->outoff);
      c->outlen -= c->outoff;
      c->outoff = 0;
    }
    size_t cap = c->outcap ? c->outcap : 4096;
    while (cap < c->outlen + n + 1) cap *= 2;
    char *p = realloc(c->out, cap);
    if (!p) { c->closing = 2; return; }
    c->out = p;
    c->outcap = cap;
  }
  memcpy(c->out + c->outlen, text, n);
  c->out[c->outlen + n] = '\n';
  c->outlen += n + 1;
  dclients_flush(c);
}

/* Send a reply (stolen) to a client, adding its id.  A generation reaches
** a client only once the store has recorded it (devents_flush), so that
** no kernel started later can hand it out again. */
void dclients_reply(Daemon *D, uint64_t serial, json_t *id, json_t *msg) {
  Client *c = dclients_find(D, serial);
  if (!c || c->closing == 2) { json_decref(msg); return; }
  if (D->gen > D->gen_saved) devents_flush(D);
  if (id) json_object_set(msg, "id", id);
  char *text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(msg);
  if (!text) return;
  client_write_line(c, text, strlen(text));
  free(text);
}

/* Events.  Every attempt records a `started` event and an outcome event;
** writing each in its own LMDB transaction would cost two disk syncs per
** application call.  So events are buffered and written together: inside
** the LMDB transaction of any revision published (a revision is never
** durable without the events that led to it), when a transaction pauses,
** at shutdown, and otherwise EVENT_DELAY after the oldest was buffered.  A kernel killed in between
** loses at most those last few milliseconds of events, never a revision.
** Subscribers get each event once it is stored, as stored (seq, time,
** secrets redacted). */
#define EVENT_DELAY 0.010
#define EVENT_BATCH 512

void devents_add(Daemon *D, json_t *ev) {
  if (!ev) return;
  EventBuf *b = &D->events;
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 64;
    json_t **e = realloc(b->ev, cap * sizeof *e);
    if (e) b->ev = e;
    int64_t *tm = e ? realloc(b->time_ms, cap * sizeof *tm) : NULL;
    if (tm) { b->time_ms = tm; b->cap = cap; }
  }
  if (b->n == b->cap) {
    dlog(D, "could not record an event: out of memory");
    json_decref(ev);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (!b->n) b->first = daemon_now();
  b->time_ms[b->n] = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  b->ev[b->n++] = ev;
  if (b->n >= EVENT_BATCH) devents_flush(D);
}

static int fan_out(void *arg, uint64_t seq, const char *json, size_t len) {
  Daemon *D = arg;
  (void)seq;
  for (int i = 0; i < D->nclients; i++)
    if (D->clients[i]->subscribed) client_write_line(D->clients[i], json, len);
  return 0;
}

/* Write the buffered events, and the generation when it moved past what the
** store has recorded (a pause, a resume, a new worker): one transaction. */
void devents_flush(Daemon *D) {
  EventBuf *b = &D->events;
  int gen = D->gen > D->gen_saved;
  if (!b->n && !gen) return;
  uint64_t first = 0;
  int rc = gen ? store_advance_generation(D->s, D->gen, b->ev, b->time_ms, b->n, &first)
               : store_events_append_objects(D->s, b->ev, b->time_ms, b->n, &first);
  if (rc != STORE_OK) {
    dlog(D, "could not record %zu event%s%s: %s", b->n, b->n == 1 ? "" : "s",
           gen ? " and the generation" : "", store_errmsg(D->s));
    first = 0;
  } else if (gen) {
    D->gen_saved = D->gen;
  }
  devents_written(D, first);
}

void devents_written(Daemon *D, uint64_t first) {
  EventBuf *b = &D->events;
  if (first && D->subscribers) store_events_read(D->s, first, b->n, 0, fan_out, D);
  for (size_t i = 0; i < b->n; i++) json_decref(b->ev[i]);
  b->n = 0;
  dlog_flush(D);  /* the transactions' log lines go with their events */
}

double devents_due(Daemon *D) {
  if (!D->events.n) return -1;
  double d = D->events.first + EVENT_DELAY - daemon_now();
  return d > 0 ? d : 0;
}

void dclients_reply_err(Daemon *D, uint64_t serial, json_t *id, const char *code, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dclients_reply(D, serial, id, json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "message", msg));
}

void dclients_free(Daemon *D, int i) {
  Client *c = D->clients[i];
  if (c->subscribed) D->subscribers--;
  close(c->fd);
  free(c->in);
  free(c->out);
  free(c);
  D->clients[i] = D->clients[--D->nclients];
}

/* ------------------------------------------------------------- queues */

/* Room for one more at the tail (the live part moves to the front once
** the popped slots are the larger half). */
static int queue_room(Queue *q) {
  if (q->head + q->n < q->cap) return 0;
  if (q->head && q->head >= q->n) {
    memmove(q->v, q->v + q->head, q->n * sizeof *q->v);
    q->head = 0;
    return 0;
  }
  size_t cap = q->cap ? q->cap * 2 : 16;
  Pending *v = realloc(q->v, cap * sizeof *v);
  if (!v) return -1;
  q->v = v;
  q->cap = cap;
  return 0;
}

int dqueue_push(Queue *q, uint64_t client, json_t *id, json_t *req) {
  if (queue_room(q)) return -1;
  q->v[q->head + q->n++] = (Pending){client, id ? json_incref(id) : NULL, json_incref(req), 0};
  return 0;
}

int dqueue_push_front(Queue *q, Pending p) {
  if (!q->head) {
    if (queue_room(q)) return -1;
    memmove(q->v + 1, q->v, q->n * sizeof *q->v);
    q->head = 1;
  }
  q->v[--q->head] = p;
  q->n++;
  return 0;
}

Pending dqueue_pop(Queue *q) {
  Pending p = q->v[q->head];
  q->n--;
  q->head = q->n ? q->head + 1 : 0;
  return p;
}

Pending dqueue_pop_back(Queue *q) {
  Pending p = q->v[q->head + --q->n];
  if (!q->n) q->head = 0;
  return p;
}

Pending *dqueue_peek(Queue *q) { return q->n ? &q->v[q->head] : NULL; }

void dqueue_pending_free(Pending *p) {
  json_decref(p->id);
  json_decref(p->req);
}


void dclients_read(Daemon *D, Client *c) {
  int eof = 0;  /* the client closed (or shut down) its side: answer what it sent first */
  for (;;) {
    if (c->incap - c->inlen < 65536) {
      size_t cap = c->incap ? c->incap * 2 : 65536;
      if (cap > PROTO_LINE_MAX + 131072) cap = PROTO_LINE_MAX + 131072;
      if (cap <= c->incap) break;
      char *p = realloc(c->in, cap);
      if (!p) { c->closing = 2; return; }
      c->in = p;
      c->incap = cap;
    }
    size_t room = c->incap - c->inlen;
    ssize_t r = recv(c->fd, c->in + c->inlen, room, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (r <= 0) { eof = 1; break; }
    c->inlen += (size_t)r;
    /* a short read took all there was: poll tells about the rest (and
    ** about an end of file), without one more recv per request */
    if (c->inlen >= c->incap || (size_t)r < room) break;
  }
  size_t start = 0;
  for (size_t i = 0; i < c->inlen && !c->closing; i++) {
    if (c->in[i] != '\n') continue;
    size_t len = i - start;
    if (len && c->in[start + len - 1] == '\r') len--;
    if (len > PROTO_LINE_MAX) {
      dclients_reply_err(D, c->serial, NULL, "line-too-long", "a request line is at most %zu bytes", PROTO_LINE_MAX);
      c->closing = 1;
    } else if (len) {
      drequests_handle(D, c, c->in + start, len);
    }
    start = i + 1;
  }
  if (start) {
    memmove(c->in, c->in + start, c->inlen - start);
    c->inlen -= start;
  }
  if (!c->closing && c->inlen > PROTO_LINE_MAX) {
    dclients_reply_err(D, c->serial, NULL, "line-too-long", "a request line is at most %zu bytes; closing the connection",
              PROTO_LINE_MAX);
    c->closing = 1;
    c->inlen = 0;
  }
  if (eof && !c->closing) c->closing = c->outlen > c->outoff ? 1 : 2;
}

static void refuse(int fd, const char *why) {
  char m[200];
  int n = snprintf(m, sizeof m, "{\"ok\":false,\"code\":\"busy\",\"message\":\"%s; retry later\"}\n", why);
  (void)!send(fd, m, (size_t)n, MSG_NOSIGNAL);
  close(fd);
}

/* Accept waiting connections.  Out of descriptors (EMFILE, ENFILE), the
** listening socket would stay readable and the loop would spin: the spare
** descriptor kept for this moment is given up to accept the connection and
** refuse it with `busy`, then taken back. */
void dclients_accept(Daemon *D) {
  for (;;) {
    int fd = accept4(D->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE) && D->spare_fd >= 0) {
      close(D->spare_fd);
      fd = accept4(D->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) refuse(fd, "the kernel is out of file descriptors");
      D->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd >= 0) continue;
    }
    if (fd < 0) return;
    if (D->nclients >= DAEMON_MAX_CLIENTS) {
      refuse(fd, "too many clients");
      continue;
    }
    Client *c = calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->fd = fd;
    c->serial = ++D->next_serial;
    D->clients[D->nclients++] = c;
  }
}

