/*
** dlog.c — the daemon's log lines (daemon.h), on stderr (or DIR/kernel.log
** when detached).  Lines are buffered: dlog's are written before the loop
** next waits; dlog_soon's (the line per finished transaction) wait for the
** next write of the events (devents_written, at most 10 ms later), so a
** stream of calls costs a write per group commit, not one per call.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "daemon.h"

static void log_line(Daemon *D, int urgent, const char *fmt, va_list ap) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != D->log.second || !D->log.when[0]) {  /* formatted once a second, not per line */
    D->log.second = ts.tv_sec;
    storeio_iso_time((int64_t)ts.tv_sec * 1000, D->log.when, sizeof D->log.when);
  }
  char line[2048];
  int n = snprintf(line, sizeof line, "%s jiti kernel: ", D->log.when);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m : sizeof line - (size_t)n - 2);
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
