/*
** sframe.c — the frames of SLIME's wire: six lower-case hex digits giving
** the byte length of the UTF-8 text that follows.  A frame that breaks the
** rules (not hex, longer than SWANK_FRAME_MAX, text sexp.h refuses) closes
** the connection: a hostile editor loses its connection, never the server.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "swank_int.h"

void swank_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("jiti swank: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int write_all(int fd, const char *b, size_t n) {
  while (n) {
    ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  /* the editor is slow to read: wait a while */
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      if (poll(&p, 1, 30000) > 0) continue;
      return -1;
    }
    if (k <= 0) return -1;
    b += k, n -= (size_t)k;
  }
  return 0;
}

static void drop(Swank *S, const char *why) {
  if (S->fd < 0) return;
  swank_log("closing the editor's connection: %s", why);
  close(S->fd);
  S->fd = -1;
}

int sframe_send(Swank *S, const sxw *w) {
  if (S->fd < 0 || w->oom) return -1;
  if (w->len > 0xffffff) {  /* six hex digits: say so rather than send it */
    sxw e;
    sxw_init(&e);
    sxw_open(&e), sxw_sym(&e, ":write-string");
    sxw_str(&e, "; jiti swank: a reply longer than 16 MiB was dropped\n"), sxw_close(&e);
    int rc = sframe_send(S, &e);
    sxw_free(&e);
    return rc;
  }
  if (S->trace) swank_log("-> %.2000s", w->buf);
  char head[8];
  snprintf(head, sizeof head, "%06zx", w->len);
  if (write_all(S->fd, head, 6) || write_all(S->fd, w->buf, w->len)) {
    drop(S, "it stopped reading");
    return -1;
  }
  return 0;
}

static int hex6(const char *h, size_t *n) {
  size_t v = 0;
  for (int i = 0; i < 6; i++) {
    char c = h[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    v = v * 16 + (size_t)d;
  }
  *n = v;
  return 1;
}

static int queue_push(Swank *S, sx *x) {
  if (S->nq == S->capq) {
    size_t nc = S->capq ? S->capq * 2 : 8;
    sx **nq = realloc(S->queue, nc * sizeof *nq);
    if (!nq) return -1;
    S->queue = nq, S->capq = nc;
  }
  S->queue[S->nq++] = x;
  return 0;
}

int sframe_pump(Swank *S) {
  if (S->fd < 0) return -1;
  for (;;) {
    if (S->incap - S->inlen < 65536) {
      size_t nc = S->incap ? S->incap * 2 : 65536;
      if (nc > SWANK_FRAME_MAX + 65536) nc = SWANK_FRAME_MAX + 65536;
      if (nc > S->incap) {
        char *nb = realloc(S->in, nc);
        if (!nb) {
          drop(S, "out of memory");
          return -1;
        }
        S->in = nb, S->incap = nc;
      }
    }
    if (S->incap == S->inlen) break;  /* a whole frame is buffered: parse it first */
    ssize_t k = read(S->fd, S->in + S->inlen, S->incap - S->inlen);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (k <= 0) {
      drop(S, k == 0 ? "the editor disconnected" : strerror(errno));
      return -1;
    }
    S->inlen += (size_t)k;
    if ((size_t)k < 65536) break;
  }
  size_t off = 0;
  while (S->inlen - off >= 6) {
    size_t n;
    if (!hex6(S->in + off, &n)) {
      drop(S, "a frame without its six hex digits of length");
      return -1;
    }
    if (n > SWANK_FRAME_MAX) {
      drop(S, "a frame longer than 16 MiB");
      return -1;
    }
    if (S->inlen - off - 6 < n) break;
    char err[256];
    if (S->trace) swank_log("<- %.*s", (int)(n > 2000 ? 2000 : n), S->in + off + 6);
    sx *x = sx_read(S->in + off + 6, n, err, sizeof err);
    if (!x) {
      drop(S, err);
      return -1;
    }
    if (x->type != SX_LIST || !sx_at(x, 0) || sx_at(x, 0)->type != SX_SYMBOL || queue_push(S, x)) {
      sx_free(x);
      drop(S, "a message that is not a list starting with a keyword");
      return -1;
    }
    off += 6 + n;
  }
  memmove(S->in, S->in + off, S->inlen - off);
  S->inlen -= off;
  return 0;
}

sx *sframe_next(Swank *S) {
  if (!S->nq) return NULL;
  sx *x = S->queue[0];
  memmove(S->queue, S->queue + 1, --S->nq * sizeof *S->queue);
  return x;
}

/* Read exactly n bytes, giving up at the deadline. */
static int read_until(int fd, char *b, size_t n, time_t deadline) {
  while (n) {
    int left = (int)(deadline - time(NULL));
    if (left <= 0) return -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, left * 1000);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    ssize_t k = read(fd, b, n);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return -1;
    b += k, n -= (size_t)k;
  }
  return 0;
}

int sframe_secret(int fd, const char *secret) {
  char head[7] = {0}, buf[1024];
  size_t n, want = strlen(secret);
  time_t deadline = time(NULL) + 20;
  if (read_until(fd, head, 6, deadline) || !hex6(head, &n) || n != want || n >= sizeof buf ||
      read_until(fd, buf, n, deadline))
    return 0;
  /* compared in full whatever differs first */
  unsigned char d = 0;
  for (size_t i = 0; i < n; i++) d |= (unsigned char)(buf[i] ^ secret[i]);
  return d == 0;
}

void sframe_write_string(Swank *S, const char *text, int result) {
  sxw w;
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":write-string"), sxw_str(&w, text);
  if (result) sxw_sym(&w, ":repl-result");
  sxw_close(&w);
  sframe_send(S, &w);
  sxw_free(&w);
}

void sframe_return_ok(Swank *S, int64_t id, const sxw *value) {
  sxw w;
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":return"), sxw_open(&w), sxw_sym(&w, ":ok");
  sxw_raw(&w, value && value->len ? value->buf : "nil");
  sxw_close(&w), sxw_int(&w, id), sxw_close(&w);
  sframe_send(S, &w);
  sxw_free(&w);
}

void sframe_return_abort(Swank *S, int64_t id, const char *why) {
  sxw w;
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":return"), sxw_open(&w), sxw_sym(&w, ":abort");
  sxw_str_or_nil(&w, why);
  sxw_close(&w), sxw_int(&w, id), sxw_close(&w);
  sframe_send(S, &w);
  sxw_free(&w);
}
