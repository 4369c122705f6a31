/*
** wstderr.c — a worker's stderr made into lines fit for a log (workerproc.h).
**
** The worker runs untrusted Lisp and, where the operator granted C
** libraries, code that can write anything to its descriptor 2.  Its stderr
** is therefore a pipe of its own, never the kernel's log: the kernel (or an
** offline command) reads it and passes on each line marked as the worker's
** and escaped, so that nothing the worker writes can end a line early,
** start one that looks like the kernel's, move a terminal's cursor or carry
** bytes that are not UTF-8; a line is cut past WPROC_ERR_LINE_MAX bytes, and
** lines past a budget per second are dropped and counted.  The write end is
** non-blocking: a worker whose reader falls behind loses lines, it never
** waits for the reader.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "jtext.h"
#include "workerproc.h"

/* Room for a line as escaped, then the note of what was cut. */
#define OUT_MAX WPROC_ERR_LINE_MAX
#define OUT_ROOM (OUT_MAX + 48)

/* Without a sink: this process's stderr, the worker's lines marked
** "worker[PID]: ", the reader's own notes "jiti: worker PID: ". */
static void to_stderr(void *ud, int pid, const char *text, size_t n, int note) {
  (void)ud;
  char line[OUT_ROOM + 64];
  int k = snprintf(line, sizeof line, note ? "jiti: worker %d: %.*s\n" : "worker[%d]: %.*s\n", pid, (int)n, text);
  if (k > 0) (void)!write(2, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
}

static void emit(wproc *w, const char *text, size_t n, int note) {
  (w->err.fn ? w->err.fn : to_stderr)(w->err.ud, (int)w->err.pid, text, n, note);
}

/* Characters that are valid UTF-8 and still do not belong in a log line:
** the C1 controls and the invisible format characters that reorder or hide
** text (bidirectional overrides, line and paragraph separators, zero-width
** ones). */
static int invisible(uint32_t c) {
  return (c >= 0x80 && c <= 0x9f) || (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
         (c >= 0x2060 && c <= 0x206f) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb);
}

/* The raw line, escaped into out (at most OUT_MAX bytes); *used: the raw
** bytes that fitted.  Returns the escaped length. */
static size_t escape(const unsigned char *raw, size_t n, char *out, size_t *used) {
  size_t o = 0, i = 0;
  while (i < n) {
    char tok[16];
    size_t tl, step = 1;
    unsigned char c = raw[i];
    long cp;
    if (c == '\\') tl = (size_t)snprintf(tok, sizeof tok, "\\\\");
    else if (c == '\t') tl = (size_t)snprintf(tok, sizeof tok, "\\t");
    else if (c == '\r') tl = (size_t)snprintf(tok, sizeof tok, "\\r");
    else if (c < 0x20 || c == 0x7f) tl = (size_t)snprintf(tok, sizeof tok, "\\x%02x", c);
    else if (c < 0x80) { tok[0] = (char)c; tl = 1; }
    else if ((cp = jtext_utf8_next(raw + i, n - i, &step)) < 0) {
      step = 1;
      tl = (size_t)snprintf(tok, sizeof tok, "\\x%02x", c);
    } else if (invisible(cp)) {
      tl = (size_t)snprintf(tok, sizeof tok, "\\u{%04lX}", cp);
    } else {
      memcpy(tok, raw + i, step);
      tl = step;
    }
    if (o + tl > OUT_MAX) break;
    memcpy(out + o, tok, tl);
    o += tl;
    i += step;
  }
  *used = i;
  return o;
}

/* Report the lines dropped since the last report. */
static void note_dropped(wproc *w) {
  if (!w->err.dropped) return;
  char t[160];
  int k = snprintf(t, sizeof t, "%" PRIu64 " line%s of its stderr dropped (more than %d lines or %d KiB in a second)",
                   w->err.dropped, w->err.dropped == 1 ? "" : "s", WPROC_ERR_LINES, WPROC_ERR_BYTES / 1024);
  w->err.dropped = 0;
  emit(w, t, (size_t)k, 1);
}

/* The line gathered so far is complete: pass it on, or count it dropped. */
static void end_line(wproc *w) {
  wproc_Err *e = &w->err;
  int64_t s = (int64_t)mono_now();
  if (s != e->second) {
    note_dropped(w);
    e->second = s;
    e->lines = 0;
    e->bytes = 0;
  }
  if (e->lines >= WPROC_ERR_LINES || e->bytes >= WPROC_ERR_BYTES) {
    e->dropped++;
  } else {
    e->lines++;
    e->bytes += e->n;
    char out[OUT_ROOM];
    size_t used, o = escape(e->line, e->n, out, &used);
    size_t cut = e->cut + (e->n - used);
    if (cut) o += (size_t)snprintf(out + o, sizeof out - o, " [%zu bytes cut]", cut);
    emit(w, out, o, 0);
  }
  e->n = 0;
  e->cut = 0;
}

static void take(wproc *w, const unsigned char *p, size_t n) {
  wproc_Err *e = &w->err;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\n') {
      end_line(w);
    } else if (e->n < sizeof e->line) {
      e->line[e->n++] = p[i];
    } else {
      e->cut++;
    }
  }
}

/* Read what the pipe holds, at most `rounds` reads: -1 when it closed
** (the last line and the count of dropped ones passed on), 0 when it is
** empty for now, 1 when more may wait. */
static int drain(wproc *w, int rounds) {
  if (w->err.fd < 0) return -1;
  unsigned char buf[65536];
  while (rounds-- > 0) {
    ssize_t k = read(w->err.fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k > 0) {
      take(w, buf, (size_t)k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    /* end of file (every writer gone) or a broken pipe: the last words */
    if (w->err.n || w->err.cut) end_line(w);
    note_dropped(w);
    close(w->err.fd);
    w->err.fd = -1;
    return -1;
  }
  return 1;
}

/* A flood yields to the caller's other work after 1 MiB. */
int wproc_err_read(wproc *w) { return drain(w, 16) < 0 ? -1 : 0; }

double wproc_err_due(const wproc *w) {
  if (!w->err.dropped) return -1;
  double d = (double)(w->err.second + 1) - mono_now();
  return d > 0 ? d : 0;
}

void wproc_err_tick(wproc *w) {
  if (w->err.dropped && (int64_t)mono_now() != w->err.second) note_dropped(w);
}

void wproc_err_close(wproc *w) {
  /* the worker is reaped: what the pipe holds is bounded (its capacity);
  ** a writer that somehow lives on is not waited for */
  if (drain(w, 64) < 0) return;
  if (w->err.n || w->err.cut) end_line(w);
  note_dropped(w);
  close(w->err.fd);
  w->err.fd = -1;
}
