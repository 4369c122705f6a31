/*
** dlog.c — the daemon's log lines (daemon.h), on stderr (or DIR/kernel.log
** when detached).  Lines are buffered: dlog's are written before the loop
** next waits; dlog_soon's (the line per finished transaction) wait for the
** next write of the events (devents_written, at most 10 ms later), so a
** stream of calls costs a write per group commit, not one per call.
**
** Every line of the kernel's own starts "<time> jiti kernel: ".  The
** worker's stderr lines (dlog_worker) start "<time> worker[PID]: " and
** arrive escaped (workerproc.h): a worker cannot end a line or begin one,
** so it cannot write a line that passes for the kernel's.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "daemon.h"

#define LINE_MAX_BYTES 2048

/* The time a line starts with, and a space; its length. */
static size_t line_time(Daemon *D, char *line) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != D->log.second || !D->log.when[0]) {  /* formatted once a second, not per line */
    D->log.second = ts.tv_sec;
    storeio_iso_time((int64_t)ts.tv_sec * 1000, D->log.when, sizeof D->log.when);
  }
  size_t n = strlen(D->log.when);
  memcpy(line, D->log.when, n);
  line[n] = ' ';
  return n + 1;
}

/* The start of the kernel's own lines: "<time> jiti kernel: "; its length. */
static size_t line_start(Daemon *D, char *line) {
  size_t n = line_time(D, line);
  memcpy(line + n, "jiti kernel: ", 13);
  return n + 13;
}

static void put_line(Daemon *D, int urgent, char *line, size_t len) {
  line[len++] = '\n';
  if (D->log.len + len > D->log.cap) {
    size_t cap = D->log.cap ? D->log.cap * 2 : 16384;
    while (cap < D->log.len + len) cap *= 2;
    char *p = realloc(D->log.buf, cap);
    if (!p) { dlog_flush(D); (void)!write(2, line, len); return; }
    D->log.buf = p;
    D->log.cap = cap;
  }
  memcpy(D->log.buf + D->log.len, line, len);
  D->log.len += len;
  D->log.urgent |= urgent;
  if (D->log.len >= 65536) dlog_flush(D);
}

static void log_line(Daemon *D, int urgent, const char *fmt, va_list ap) {
  char line[LINE_MAX_BYTES];
  size_t n = line_start(D, line);
  int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
  put_line(D, urgent, line, n + (m < 0 ? 0 : (size_t)m < sizeof line - n - 1 ? (size_t)m : sizeof line - n - 2));
}

/* Appending to a line without printf (one line per call: a stream of
** calls would spend a tenth of the loop's time in vsnprintf). */
static size_t put_str(char *line, size_t n, const char *s) {
  size_t k = strlen(s);
  if (k > LINE_MAX_BYTES - 1 - n) k = LINE_MAX_BYTES - 1 - n;
  memcpy(line + n, s, k);
  return n + k;
}

static size_t put_u64(char *line, size_t n, uint64_t v) {
  char d[20];
  size_t k = 0;
  do d[k++] = (char)('0' + v % 10); while ((v /= 10));
  while (k && n < LINE_MAX_BYTES - 1) line[n++] = d[--k];
  return n;
}

void dlog_attempt(Daemon *D, uint64_t attempt, const char *op, const char *outcome, const char *extra, double t0,
                  uint64_t gen, uint64_t rev, const char *source) {
  char line[LINE_MAX_BYTES];
  size_t n = line_start(D, line);
  n = put_str(line, n, "attempt ");
  n = put_u64(line, n, attempt);
  n = put_str(line, n, " ");
  n = put_str(line, n, op);
  n = put_str(line, n, " ");
  n = put_str(line, n, outcome);
  if (extra) {
    n = put_str(line, n, " ");
    n = put_str(line, n, extra);
  }
  double ms = (daemon_now() - t0) * 1000;
  uint64_t tenths = ms > 0 ? (uint64_t)(ms * 10 + 0.5) : 0;
  n = put_str(line, n, " (");
  n = put_u64(line, n, tenths / 10);
  n = put_str(line, n, ".");
  n = put_u64(line, n, tenths % 10);
  n = put_str(line, n, " ms, generation ");
  n = put_u64(line, n, gen);
  n = put_str(line, n, ")");
  if (rev) {
    n = put_str(line, n, " -> revision ");
    n = put_u64(line, n, rev);
  }
  n = put_str(line, n, ": ");
  char src[80];
  request_snippet(source, src, sizeof src);
  n = put_str(line, n, src);
  put_line(D, 0, line, n);
}

void dlog_worker(Daemon *D, int pid, const char *text, size_t len) {
  char line[LINE_MAX_BYTES];
  size_t n = line_time(D, line);
  n = put_str(line, n, "worker[");
  n = put_u64(line, n, (uint64_t)(pid > 0 ? pid : 0));
  n = put_str(line, n, "]: ");
  if (len > LINE_MAX_BYTES - 1 - n) len = LINE_MAX_BYTES - 1 - n;
  memcpy(line + n, text, len);
  put_line(D, 1, line, n + len);
}

void dlog(Daemon *D, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(D, 1, fmt, ap);
  va_end(ap);
}

void dlog_soon(Daemon *D, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(D, 0, fmt, ap);
  va_end(ap);
}

void dlog_flush(Daemon *D) {
  size_t off = 0;
  while (off < D->log.len) {
    ssize_t w = write(2, D->log.buf + off, D->log.len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  /* nowhere to log: drop it */
    off += (size_t)w;
  }
  D->log.len = 0;
  D->log.urgent = 0;
}

double dlog_before(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  if (D->log.urgent || !D->events.n) dlog_flush(D);  /* else: with the events */
  return -1;
}

void daemon_assert_failed(const char *what, const char *file, int line) {
  char msg[512];
  int n = snprintf(msg, sizeof msg, "jiti kernel: internal error: %s:%d: %s does not hold\n", file, line, what);
  (void)!write(2, msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
  abort();
}

void dlog_thread(void *ud, const char *text) {
  (void)ud;
  char line[LINE_MAX_BYTES], when[40];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  storeio_iso_time((int64_t)ts.tv_sec * 1000, when, sizeof when);
  int n = snprintf(line, sizeof line - 1, "%s jiti kernel: %s", when, text);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
  line[len++] = '\n';
  (void)!write(2, line, len);   /* one write: whole among the loop's lines */
}
