/*
** dclients.c — the daemon's client connections (daemon.h): reading
** newline-delimited requests, buffered non-blocking replies and event
** lines, accepting and refusing connections.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
void dclients_line(Client *c, const char *text, size_t n) {
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
  char *text = NULL;   /* json_dumps' text, written faster (jtext.h) */
  size_t len = 0, cap = 0;
  int rc = jtext_append(msg, 0, &text, &len, &cap);
  json_decref(msg);
  if (rc == 0) dclients_line(c, text, len);
  free(text);
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
  /* The end of its input: once its output is flushed and nothing it asked
  ** for waits any more, the connection closes (dloop.c).  A client that only
  ** shut down its sending side still gets its replies; one that closed its
  ** socket is gone at the next poll (POLLHUP), and what it asked for that
  ** has not begun is dropped. */
  if (eof && !c->closing) c->closing = 1;
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

