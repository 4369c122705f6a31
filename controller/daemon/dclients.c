/*
** dclients.c — the daemon's client connections (daemon.h): the transport
** only.  Newline-delimited requests in (each line to drequests.c), lines
** out buffered and non-blocking (replies come through dreply.c, event
** lines from devents.c), connections accepted, refused and closed.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "daemon.h"
#include "jtext.h"
#include "proto.h"

Client *dclients_find(Daemon *D, uint64_t serial) {
  if (!serial) return NULL;
  for (int i = 0; i < D->nclients; i++)
    if (D->clients[i]->serial == serial) return D->clients[i];
  return NULL;
}

/* Drop a client's unread output (it is gone, or cut off). */
static void drop_output(Client *c) {
  *c->held -= c->outlen - c->outoff;
  c->outlen = c->outoff = 0;
}

void dclients_flush(Client *c) {
  while (c->outoff < c->outlen) {
    ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) { c->closing = 2; drop_output(c); return; }  /* gone */
    c->outoff += (size_t)w;
    *c->held -= (size_t)w;
    c->active = daemon_now();  /* it reads: not idle */
  }
  c->outlen = c->outoff = 0;
}

/* Queue one line (text[0..n) plus a newline) for a client and try to send
** it.  A client that lets PROTO_REPLY_MAX bytes pile up is not reading,
** and all clients together may not hold more than DAEMON_OUTPUT_MAX: past
** either, the client is cut off rather than let it hold the kernel's
** memory (dclients_free logs it). */
void dclients_line(Client *c, const char *text, size_t n) {
  if (c->closing == 2) return;
  int one = c->outlen - c->outoff + n + 1 > PROTO_REPLY_MAX;
  if (one || *c->held + n + 1 > DAEMON_OUTPUT_MAX) {
    c->closing = 2;
    c->cut_off = one ? 1 : 2;
    drop_output(c);
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
  *c->held += n + 1;
  dclients_flush(c);
}

void dclients_free(Daemon *D, int i) {
  Client *c = D->clients[i];
  if (c->cut_off)
    dlog(D, "client %" PRIu64 " cut off: its unread replies passed %s", c->serial,
         c->cut_off == 1 ? "the limit of one client (64 MiB)" : "the limit of all clients together (256 MiB)");
  drop_output(c);
  dsched_client_gone(D, c->serial);
  if (c->subscribed) D->subscribers--;
  /* out of the loop before the close: a copy of the descriptor in a
  ** child not yet exec'd would otherwise keep it watched */
  dpoll_del(D->poll, c->fd);
  close(c->fd);
  free(c->in);
  free(c->out);
  free(c);
  D->clients[i] = D->clients[--D->nclients];
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
    c->active = daemon_now();
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
      drequests_too_long(D, c, 0);
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
    drequests_too_long(D, c, 1);
    c->inlen = 0;
  }
  /* The end of its input: once its output is flushed and nothing it asked
  ** for waits any more, the connection closes (dloop.c).  A client that only
  ** shut down its sending side still gets its replies; one that closed its
  ** socket is gone at the next poll (POLLHUP), and what it asked for that
  ** has not begun is dropped. */
  if (eof && !c->closing) c->closing = 1;
}

static int free_reserved_slot(Daemon *D);

/* A client's connection is ready: its output flows, its requests are read
** (one closing is only waited for until its hang-up). */
static void ready(void *ud, int fd, unsigned r) {
  Client *c = ud;
  (void)fd;
  if (r & DPOLL_OUT) dclients_flush(c);
  if (r & (DPOLL_IN | DPOLL_HUP)) {
    if (c->closing) c->closing = 2;
    else dclients_read(c->D, c);
  }
}

/* The connections done with are closed: those that must go now, and
** those closing once their output is flushed and nothing they asked for
** waits. */
static void reap(Daemon *D) {
  for (int i = 0; i < D->nclients;) {
    Client *c = D->clients[i];
    if (c->closing == 2 || (c->closing == 1 && c->outlen <= c->outoff && !dsched_client_waits(D, c->serial)))
      dclients_free(D, i);
    else i++;
  }
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
static void accept_ready(void *ud, int fd, unsigned r) {
  Daemon *D = ud;
  (void)fd, (void)r;
  reap(D);   /* a connection closed in this turn frees its slot first */
  dclients_accept(D);
}

int dclients_listen(Daemon *D) { return dpoll_add(D->poll, D->lfd, DPOLL_IN, RANK_LISTENER, accept_ready, D); }

double dclients_reap(void *ud, double now) {
  (void)now;
  reap(ud);
  return -1;
}

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
    int reserved = D->nclients >= D->max_clients;
    if (reserved && D->nclients >= D->max_clients + DAEMON_RESERVED_SLOTS && !free_reserved_slot(D)) {
      refuse(fd, "too many clients");
      continue;
    }
    Client *c = calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->fd = fd;
    c->serial = ++D->next_serial;
    c->reserved = reserved;
    c->active = daemon_now();
    c->held = &D->outbytes;
    c->D = D;
    if (dpoll_add(D->poll, fd, DPOLL_IN, RANK_CLIENT, ready, c) != 0) {
      refuse(fd, "the kernel cannot watch another connection");
      free(c);
      continue;
    }
    D->clients[D->nclients++] = c;
  }
}

/* Every reserved slot is taken: the one held longest gives way to the new
** connection (a reserved connection has one quick thing to do), so that
** whoever holds the ordinary slots cannot keep `jiti stop` out.  1 freed. */
static int free_reserved_slot(Daemon *D) {
  int oldest = -1;
  for (int i = 0; i < D->nclients; i++)
    if (D->clients[i]->reserved && D->clients[i]->closing != 2 &&
        (oldest < 0 || D->clients[i]->serial < D->clients[oldest]->serial))
      oldest = i;
  if (oldest < 0) return 0;
  dlog(D, "client %" PRIu64 " closed: its operator slot was needed", D->clients[oldest]->serial);
  dclients_free(D, oldest);
  return 1;
}

/* A connection is idle when it has asked for nothing for idle_timeout
** seconds, nothing it asked for waits, it has no reply to read and it has
** not subscribed to events.  Idle connections are closed: a client that
** opens many and says nothing cannot keep the slots.  (`jiti repl`
** reconnects quietly.) */
static double sweep_idle(Daemon *D) {
  if (D->idle_timeout <= 0) return -1;
  double now = daemon_now();
  if (now < D->idle_sweep) return D->idle_sweep - now;
  double every = D->idle_timeout / 4 < 1 ? D->idle_timeout / 4 : 1;
  D->idle_sweep = now + every;
  for (int i = 0; i < D->nclients; i++) {
    Client *c = D->clients[i];
    if (c->closing || c->subscribed || c->outlen > c->outoff || now - c->active < D->idle_timeout ||
        dsched_client_waits(D, c->serial))
      continue;
    c->closing = 1;  /* freed by the loop */
  }
  return every;
}


/* Before the loop sleeps: what each client waits for now, and the idle
** ones closed. */
double dclients_before(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  for (int i = 0; i < D->nclients; i++) {
    Client *c = D->clients[i];
    unsigned want = (c->closing ? 0 : DPOLL_IN) | (c->outlen > c->outoff ? DPOLL_OUT : 0);
    if (dpoll_mask(D->poll, c->fd, want) != 0) c->closing = 2;   /* cannot be watched: never left waiting */
  }
  double sweep = sweep_idle(D);
  return D->nclients ? sweep : -1;
}
