/*
** wire.c — the frames between the kernel daemon and its worker (worker.h):
** an 8-byte header (JSON length, blob length; 32-bit big-endian), the JSON
** text, the blob.
**
** Sending writes a frame with one system call (sendmsg over an iovec) so the
** peer wakes once and finds it whole.  Receiving goes through a wire_reader:
** one read() brings as many frames as the socket holds, and wire_next hands
** them out one by one.  The worker blocks in wire_recv; the kernel, which
** must never block on its worker, reads once per poll() wake-up
** (wire_fill) and then takes every whole frame (wire_next) — so a burst of
** outcomes costs it one wake-up, not one per frame.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "jtext.h"
#include "wire.h"

#define READ_CHUNK ((size_t)64 << 10)
#define KEEP_CAP ((size_t)1 << 20)   /* a larger buffer is freed once empty */

/* --------------------------------------------------------- vocabulary */

static const char *const op_names[WIRE_OP_COUNT] = {
  "init", "import", "start", "observe", "inspect", "invariant-list", "invariant", "attempt",
  "attempts", "command", "commit", "restore", "exit", "analyze", "shadow", "complete"};

static const char *const event_names[WIRE_EVENT_COUNT] = {
  "ready", "fatal", "view", "entry", "invariants", "paused", "outcome", "committed", "restored",
  "error", "analyzed", "shadowed", "completions"};

static int lookup(const char *const *names, int n, const char *s) {
  for (int i = 0; s && i < n; i++)
    if (!strcmp(names[i], s)) return i;
  return -1;
}

const char *wire_op_name(wire_Op op) { return (unsigned)op < WIRE_OP_COUNT ? op_names[op] : "?"; }
int wire_op_of(json_t *m) { return lookup(op_names, WIRE_OP_COUNT, json_string_value(json_object_get(m, "op"))); }

const char *wire_event_name(wire_Event ev) {
  return (unsigned)ev < WIRE_EVENT_COUNT ? event_names[ev] : "?";
}
int wire_event_of(json_t *m) {
  return lookup(event_names, WIRE_EVENT_COUNT, json_string_value(json_object_get(m, "event")));
}

/* ------------------------------------------------------------ sending */

/* Send the iovecs whole (blocking, EINTR-safe). */
static int send_all(int fd, struct iovec *iov, int n) {
  while (n > 0) {
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    size_t k = (size_t)w;
    while (n > 0 && k >= iov->iov_len) { k -= iov->iov_len; iov++; n--; }
    if (n > 0) { iov->iov_base = (char *)iov->iov_base + k; iov->iov_len -= k; }
  }
  return 0;
}

static void frame_header(unsigned char h[8], size_t n, size_t bloblen) {
  uint32_t a = (uint32_t)n, b = (uint32_t)bloblen;
  h[0] = a >> 24; h[1] = a >> 16; h[2] = a >> 8; h[3] = a;
  h[4] = b >> 24; h[5] = b >> 16; h[6] = b >> 8; h[7] = b;
}

int wire_send_text(int fd, const char *json, size_t n, const void *blob, size_t bloblen) {
  if (n == 0 || n > WIRE_JSON_MAX || bloblen > WIRE_BLOB_MAX) return -1;
  unsigned char h[8];
  frame_header(h, n, bloblen);
  struct iovec iov[3] = {{h, 8}, {(void *)json, n}, {(void *)blob, bloblen}};
  return send_all(fd, iov, bloblen ? 3 : 2);
}

int wire_send(int fd, json_t *msg, const void *blob, size_t bloblen) {
  char *text = NULL;
  size_t n = 0, tcap = 0;
  if (jtext_append(msg, 0, &text, &n, &tcap) != 0) {
    free(text);
    return -1;
  }
  int rc = wire_send_text(fd, text, n, blob, bloblen);
  free(text);
  return rc;
}

int wire_frame_text(const char *json, size_t n, const void *blob, size_t bloblen, unsigned char **buf,
                    size_t *len, size_t *cap) {
  if (n == 0 || n > WIRE_JSON_MAX || bloblen > WIRE_BLOB_MAX) return -1;
  size_t need = *len + 8 + n + bloblen;
  if (need > *cap) {
    size_t c = *cap ? *cap : 65536;
    while (c < need) c *= 2;
    unsigned char *p = realloc(*buf, c);
    if (!p) return -1;
    *buf = p;
    *cap = c;
  }
  frame_header(*buf + *len, n, bloblen);
  memcpy(*buf + *len + 8, json, n);
  if (bloblen) memcpy(*buf + *len + 8 + n, blob, bloblen);
  *len = need;
  return 0;
}

int wire_frame(json_t *msg, const void *blob, size_t bloblen, unsigned char **buf, size_t *len,
               size_t *cap) {
  char *text = NULL;
  size_t n = 0, tcap = 0;
  if (jtext_append(msg, 0, &text, &n, &tcap) != 0) {
    free(text);
    return -1;
  }
  int rc = wire_frame_text(text, n, blob, bloblen, buf, len, cap);
  free(text);
  return rc;
}

int wire_send_bytes(int fd, const void *p, size_t n) {
  struct iovec iov = {(void *)p, n};
  return n ? send_all(fd, &iov, 1) : 0;
}

/* ---------------------------------------------------------- receiving */

/* Room for `need` bytes from r->off on: the unread bytes move to the front
** first.  0, or -1 out of memory. */
static int reserve(wire_reader *r, size_t need) {
  if (r->off) {
    memmove(r->buf, r->buf + r->off, r->len - r->off);
    r->len -= r->off;
    r->off = 0;
  }
  if (need <= r->cap) return 0;
  size_t c = r->cap ? r->cap : READ_CHUNK;
  while (c < need) c *= 2;
  unsigned char *p = realloc(r->buf, c);
  if (!p) return -1;
  r->buf = p;
  r->cap = c;
  return 0;
}

/* One read into the buffer. */
ssize_t wire_fill(int fd, wire_reader *r) {
  if (r->off == r->len) {  /* empty: start over, and give back a big buffer */
    r->off = r->len = 0;
    if (r->cap > KEEP_CAP) { free(r->buf); r->buf = NULL; r->cap = 0; }
  }
  /* Room for the rest of an incomplete frame, but grown by doubling what
  ** has arrived: a header alone never makes the reader allocate the
  ** gigabyte it may claim. */
  size_t have = r->len - r->off, want = have + READ_CHUNK;
  if (r->want > want) want = r->want < 2 * have + READ_CHUNK ? r->want : 2 * have + READ_CHUNK;
  if (r->cap - r->len < READ_CHUNK && reserve(r, want) != 0) { errno = ENOMEM; return -1; }
  for (;;) {
    ssize_t k = read(fd, r->buf + r->len, r->cap - r->len);
    if (k < 0 && errno == EINTR) continue;
    if (k > 0) r->len += (size_t)k;
    return k;
  }
}

int wire_next(wire_reader *r, json_t **msg, unsigned char **blob, size_t *bloblen, char *err,
              size_t errlen) {
  *msg = NULL;
  if (blob) *blob = NULL;
  if (bloblen) *bloblen = 0;
  size_t have = r->len - r->off;
  if (have < 8) return 0;
  const unsigned char *h = r->buf + r->off;
  size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
  size_t b = (size_t)h[4] << 24 | (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
  if (n == 0 || n > WIRE_JSON_MAX || b > WIRE_BLOB_MAX) {
    snprintf(err, errlen, "bad frame sizes %zu/%zu", n, b);
    return -1;
  }
  if (have < 8 + n + b) {  /* incomplete: wire_fill makes room as it arrives */
    r->want = 8 + n + b;
    return 0;
  }
  r->want = 0;
  unsigned char *bl = NULL;
  if (b && blob) {
    if (!(bl = malloc(b))) {
      snprintf(err, errlen, "out of memory for a frame of %zu bytes", n + b);
      return -1;
    }
    memcpy(bl, h + 8 + n, b);
  }
  json_error_t je;
  json_t *m = jtext_load((const char *)h + 8, n, 0, &je);
  r->off += 8 + n + b;
  if (!json_is_object(m)) {
    json_decref(m);
    free(bl);
    snprintf(err, errlen, "frame is not a JSON object: %s", je.text);
    return -1;
  }
  *msg = m;
  if (blob) *blob = bl;
  if (bloblen) *bloblen = b;
  return 1;
}

int wire_recv(int fd, wire_reader *r, json_t **msg, unsigned char **blob, size_t *bloblen,
              char *err, size_t errlen) {
  for (;;) {
    int got = wire_next(r, msg, blob, bloblen, err, errlen);
    if (got) return got > 0 ? 0 : -1;
    int between = r->off == r->len;
    ssize_t k = wire_fill(fd, r);
    if (k > 0) continue;
    if (k == 0) snprintf(err, errlen, "%s", between ? "eof" : "truncated frame");
    else snprintf(err, errlen, "read: %s", strerror(errno));
    return -1;
  }
}

void wire_reader_reset(wire_reader *r) {
  free(r->buf);
  memset(r, 0, sizeof *r);
}
