/*
** dworker.c — the daemon's worker process (daemon.h, docs/worker-frames.md):
** starting it from CURRENT without blocking the loop, its frames in, its
** death and replacement; its stderr, read into the log as the worker's
** (never written to the log directly).  What it is asked to do is
** dsched.c's.
**
** A worker is started without blocking the daemon: fork + exec, then all of
** its start-up frames (init, CURRENT's entries in import batches, start)
** are built in memory (workerproc.h) and written as the socket accepts
** them, from the poll loop (dworker_writable); its "ready" arrives as a
** frame like any other.  Meanwhile clients are served: hello, status and
** history at once, queries and transactions queue up.  A start that fails
** is retried after a second; three failures in a row stop the daemon.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "daemon.h"

/* JITI_WIRE_TRACE=FILE in the daemon's environment appends every frame's
** JSON, both ways, one per line (`>` sent, `<` received): the frames
** conformance test validates them against docs/schema/frames.json. */
static void trace_text(Daemon *D, const char *way, const char *text, size_t n) {
  if (!D->wire_trace || !text) return;
  FILE *f = fopen(D->wire_trace, "a");
  if (!f) return;
  fprintf(f, "%s %.*s\n", way, (int)n, text);
  fclose(f);
}

static void trace(Daemon *D, const char *way, json_t *m) {
  if (!D->wire_trace) return;
  char *t = json_dumps(m, JSON_COMPACT);
  if (t) trace_text(D, way, t, strlen(t));
  free(t);
}

/* The frames of a buffer about to be written (the start-up frames). */
static void trace_buffer(Daemon *D, const unsigned char *b, size_t len) {
  if (!D->wire_trace) return;
  for (size_t at = 0; at + 8 <= len;) {
    size_t n = (size_t)b[at] << 24 | (size_t)b[at + 1] << 16 | (size_t)b[at + 2] << 8 | b[at + 3];
    size_t bl = (size_t)b[at + 4] << 24 | (size_t)b[at + 5] << 16 | (size_t)b[at + 6] << 8 | b[at + 7];
    json_t *m = json_loadb((const char *)b + at + 8, n, 0, NULL);
    if (m) trace(D, ">", m);
    json_decref(m);
    at += 8 + n + bl;
  }
}

int dworker_send(Daemon *D, json_t *m) {
  trace(D, ">", m);
  if (wproc_send(&D->w, m, NULL, 0) == 0) return 0;
  dworker_died(D);
  return -1;
}

int dworker_send_text(Daemon *D, const char *text, size_t n) {
  trace_text(D, ">", text, n);
  if (text && wproc_send_text(&D->w, text, n) == 0) return 0;
  dworker_died(D);
  return -1;
}

/* ------------------------------------------------------------- stderr */

/* A line of the worker's stderr (workerproc.h: escaped, rate-limited)
** into the log, marked as the worker's; the reader's notes about it (lines
** dropped) are the kernel's own lines. */
static void stderr_line(void *ud, int pid, const char *text, size_t n, int note) {
  Daemon *D = ud;
  if (note) dlog(D, "worker %d: %.*s", pid, (int)n, text);
  else dlog_worker(D, pid, text, n);
}

void dworker_stderr(Daemon *D) {
  int fd = D->w.err.fd;
  wproc_err_read(&D->w);
  if (D->w.err.fd < 0) dpoll_del(D->poll, fd);   /* closed at its end */
}

/* ------------------------------------------------------------ the loop */

static void err_ready(void *ud, int fd, unsigned r) {
  (void)fd, (void)r;
  dworker_stderr(ud);
}

static void sock_ready(void *ud, int fd, unsigned r) {
  Daemon *D = ud;
  (void)fd;
  if (r & DPOLL_OUT) dworker_writable(D);
  if (r & (DPOLL_IN | DPOLL_HUP)) dworker_readable(D);
}

/* The loop watches the worker's socket (for writing too while start-up
** frames wait) and its stderr.  -1 when it cannot (errno). */
static int watch(Daemon *D) {
  if (dpoll_add(D->poll, D->w.fd, DPOLL_IN | (D->wout.len > D->wout.off ? DPOLL_OUT : 0), RANK_WORKER, sock_ready,
                D) != 0)
    return -1;
  if (D->w.err.fd >= 0 && dpoll_add(D->poll, D->w.err.fd, DPOLL_IN, RANK_WORKER_ERR, err_ready, D) != 0) {
    dpoll_del(D->poll, D->w.fd);
    return -1;
  }
  return 0;
}

/* Out of the loop, before its descriptors close. */
static void unwatch(Daemon *D) {
  dpoll_del(D->poll, D->w.fd);
  dpoll_del(D->poll, D->w.err.fd);
}

double dworker_before_start(void *ud, double now) {
  Daemon *D = ud;
  if (D->wait != W_START) return -1;
  if (now > D->start_deadline) {
    dlog(D, "the worker did not start within 120 s; killing it");
    kill(D->w.pid, SIGKILL);  /* its EOF ends the start */
    D->start_deadline = now + 3600;
  }
  return D->start_deadline - now;
}

double dworker_before_err(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  wproc_err_tick(&D->w);   /* lines of its stderr dropped: said once their second is over */
  return wproc_err_due(&D->w);
}

/* ------------------------------------------------------------ start-up */

/* Start a worker from CURRENT and queue its start-up frames.  0, or -1
** with a message in err (nothing left running). */
static int spawn(Daemon *D, char *err, size_t errlen) {
  if (wproc_spawn(&D->w, &D->grant, err, errlen) != 0) return -1;
  D->w.err.fn = stderr_line;
  D->w.err.ud = D;
  D->wout.len = D->wout.off = 0;
  if (store_current(dstore(D), &D->revision) != STORE_OK) {
    snprintf(err, errlen, "cannot read CURRENT: %s", store_errmsg(dstore(D)));
    wproc_stop(&D->w, 1);
    return -1;
  }
  wproc_Plan plan = {STORE_REV_CURRENT, 0, D->revision, D->base, &D->limits.eval, &D->grant, DAEMON_MAX_AHEAD};
  if (wproc_frames(dstore(D), &plan, &D->wout.buf, &D->wout.len, &D->wout.cap, &D->start_entries, err,
                   errlen) != 0) {
    wproc_stop(&D->w, 1);
    return -1;
  }
  trace_buffer(D, D->wout.buf, D->wout.len);
  if (watch(D) != 0) {
    snprintf(err, errlen, "cannot watch the worker's socket: %s", strerror(errno));
    wproc_stop(&D->w, 1);
    return -1;
  }
  D->wait = W_START;
  D->start_deadline = daemon_now() + 120;
  return 0;
}

/* Write what the socket takes of the queued start-up frames. */
void dworker_writable(Daemon *D) {
  while (D->wout.off < D->wout.len) {
    ssize_t w = send(D->w.fd, D->wout.buf + D->wout.off, D->wout.len - D->wout.off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) return;  /* it died: its EOF follows */
    D->wout.off += (size_t)w;
  }
  D->wout.len = D->wout.off = 0;
  dpoll_mask(D->poll, D->w.fd, DPOLL_IN);   /* all written */
  if (D->wout.cap > ((size_t)1 << 20)) {  /* do not keep a large world's copy */
    free(D->wout.buf);
    D->wout.buf = NULL;
    D->wout.cap = 0;
  }
}

/* What a fresh worker says of the grant: the libraries that did not open
** (kept for status) and the foreign declarations of CURRENT that cannot be
** called, each logged once per start with its library, symbol and why. */
/* A worker's string (vouched for: a string) for a log line, escaped. */
static const char *logged(json_t *o, const char *member, char *buf, size_t n) {
  json_t *v = json_object_get(o, member);
  vouch_escape(json_string_value(v), json_string_length(v), buf, n);
  return buf;
}

static void foreign_ready(Daemon *D, json_t *f) {
  json_t *failed = json_object_get(f, "failed"), *x;
  size_t i;
  char a[200], b[200], c[200], d[400];
  json_decref(D->foreign_failed);
  D->foreign_failed = json_is_array(failed) ? json_incref(failed) : json_array();
  json_array_foreach(D->foreign_failed, i, x)
    dlog(D, "error: the granted library %s did not open: %s", logged(x, "library", a, sizeof a),
         logged(x, "message", d, sizeof d));
  json_array_foreach(json_object_get(f, "unavailable"), i, x)
    dlog(D, "error: foreign function %s (library %s, symbol %s) is unavailable: %s", logged(x, "name", a, sizeof a),
         logged(x, "library", b, sizeof b), logged(x, "symbol", c, sizeof c), logged(x, "reason", d, sizeof d));
}

static void ready(Daemon *D, json_t *r) {
  D->gen = (uint64_t)json_integer_value(json_object_get(r, "generation"));
  const char *st = json_string_value(json_object_get(r, "status"));
  snprintf(D->wstatus, sizeof D->wstatus, "%s", st ? st : "idle");
  char msg[600];
  logged(r, "message", msg, sizeof msg);
  dlog(D, "worker %d ready: revision %" PRIu64 ", %zu entries, generation %" PRIu64 ", %s%s%s",
       (int)D->w.pid, D->revision, D->start_entries, D->gen, D->wstatus, *msg ? ": " : "", msg);
  foreign_ready(D, json_object_get(r, "foreign"));
  D->wait = W_NONE;
  D->in_pause = 0;
  D->consecutive_failures = 0;
}

/* Reap a worker that failed to start and plan the next try. */
static double restart_due(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  D->restart_at = 0;
  dworker_restart(D);
  return -1;
}

static void start_failed(Daemon *D, const char *why) {
  unwatch(D);
  wproc_stop(&D->w, 1);
  D->wait = W_NONE;
  D->wout.len = D->wout.off = 0;
  dlog(D, "cannot start a worker: %s", why);
  if (++D->consecutive_failures >= 3) {
    dlog(D, "giving up after 3 failed worker starts; stopping");
    D->stop_why = "the worker cannot start";
    return;
  }
  D->restart_at = dpoll_timer(D->poll, daemon_now() + 1, restart_due, D);
}

void dworker_restart(Daemon *D) {
  char err[1024];
  if (D->restart_at) dpoll_timer_del(D->poll, D->restart_at);
  D->restart_at = 0;
  if (D->stopping || D->w.fd >= 0) return;
  if (spawn(D, err, sizeof err) != 0) start_failed(D, err);
}

/* The first worker, at daemon start-up: started and waited for, its
** frames handled as the poll loop would (dworker_readable); a failure is
** logged by start_failed. */
int dworker_start_first(Daemon *D) {
  char err[1024];
  if (spawn(D, err, sizeof err) != 0) {
    dlog(D, "cannot start a worker: %s", err);
    return -1;
  }
  while (D->wait == W_START) {
    struct pollfd p[2] = {{D->w.fd, POLLIN | (D->wout.len > D->wout.off ? POLLOUT : 0), 0},
                          {D->w.err.fd, POLLIN, 0}};
    int n = poll(p, D->w.err.fd >= 0 ? 2 : 1, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (daemon_now() > D->start_deadline) {
      start_failed(D, "it did not start within 120 s");
      break;
    }
    wproc_err_tick(&D->w);
    if (n <= 0) continue;
    if (D->w.err.fd >= 0 && p[1].revents) dworker_stderr(D);
    if (p[0].revents & POLLOUT) dworker_writable(D);
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) dworker_readable(D);
  }
  if (D->restart_at) dpoll_timer_del(D->poll, D->restart_at);
  D->restart_at = 0;  /* the caller gives up instead */
  return D->w.fd >= 0 && D->wait == W_NONE ? 0 : -1;
}

/* ---------------------------------------------------------------- death */

void dworker_died(Daemon *D) {
  int st = 0;
  if (D->w.pid) {
    /* EOF first: make sure it is gone */
    if (waitpid(D->w.pid, &st, WNOHANG) == 0) {
      kill(D->w.pid, SIGKILL);
      while (waitpid(D->w.pid, &st, 0) < 0 && errno == EINTR) {}
    }
  }
  char how[160];
  wproc_describe(st, how, sizeof how);
  pid_t pid = D->w.pid;
  D->w.pid = 0;  /* reaped */
  uint64_t lost = wproc_outcomes_unseen(&D->w);
  if (D->violation[0]) {   /* killed for a frame (dvouch.c): its count of outcomes is no count */
    snprintf(how, sizeof how, "%s", D->violation);
    D->violation[0] = 0;
    lost = 0;
  }
  if (D->wait == W_START) {
    char why[200];
    snprintf(why, sizeof why, "the worker %s during start-up", how);
    start_failed(D, why);
    return;
  }
  unwatch(D);
  wproc_stop(&D->w, 1);
  dlog(D, "worker %d %s", (int)pid, how);
  D->restarts++;
  /* A group being written stands or falls with its store transaction, not
  ** with the worker: its end is awaited here, so that the generations it
  ** hands out are counted before the next worker's base (dgroup.c tells a
  ** worker started since nothing of it). */
  dstore(D);
  dsync_settle(D);
  dsched_worker_died(D, how, lost);
  D->wait = W_NONE;
  D->in_pause = 0;
  devents_add(D, json_pack("{s:s, s:s, s:I}", "event", store_event_name(STORE_EV_WORKER_RESTARTED),
                           "reason", how, "revision", (json_int_t)D->revision));
  /* The world the dead worker showed is gone: from now on (status while the
  ** next one starts too) the generation is the next worker's, past it. */
  D->base = D->gen + 1;
  D->gen = D->base;
  devents_flush(D);
  if (D->stopping) return;
  dworker_restart(D);
}

/* ---------------------------------------------------------------- frames */

static void frame(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen) {
  trace(D, "<", m);
  if (D->wait != W_START) {
    dsched_frame(D, m, blob, bloblen);
  } else if (wire_event_of(m) == WIRE_READY) {
    if (dvouch_ready(D, m) == 0) ready(D, m);
    else start_failed(D, "its ready frame broke a frame rule");
  } else {
    json_t *msg = json_object_get(m, "message");
    char why[300];
    vouch_escape(json_string_value(msg), json_string_length(msg), why, sizeof why);
    start_failed(D, json_is_string(msg) ? why : "unexpected message during start-up");
  }
}

/* The worker's socket is readable: one read, then every whole frame it
** brought (a batch's outcomes arrive in bursts), then its death if it
** closed the socket. */
void dworker_readable(Daemon *D) {
  pid_t pid = D->w.pid;
  ssize_t k = wire_fill(D->w.fd, &D->w.rd);
  int gone = k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  for (;;) {
    json_t *m;
    unsigned char *blob;
    size_t bl;
    char why[256];
    int got = wire_next(&D->w.rd, &m, &blob, &bl, why, sizeof why);
    if (got == 0) break;
    if (got < 0) {
      dvouch_unreadable(D, why);   /* killed: the rule frame-syntax */
      return;
    }
    frame(D, m, blob, bl);
    json_decref(m);
    free(blob);
    if (D->w.pid != pid || D->w.fd < 0) return;  /* it was replaced meanwhile */
    dsched_pump(D);  /* the next frame may be the next call's outcome */
    if (D->w.pid != pid || D->w.fd < 0) return;
  }
  if (gone) dworker_died(D);
}

/* At shutdown: ask the worker to exit; kill it if it has not within 2 s. */
void dworker_stop(Daemon *D) {
  free(D->wout.buf);
  D->wout.buf = NULL;
  D->wout.len = D->wout.off = D->wout.cap = 0;
  free(D->wframe.buf);
  D->wframe = (jtext_writer){0};
  if (D->w.fd < 0) return;
  if (D->wait != W_START) {  /* wproc_stop says exit */
    json_t *m = json_pack("{s:s}", "op", wire_op_name(WIRE_EXIT));
    trace(D, ">", m);
    json_decref(m);
  }
  unwatch(D);
  wproc_stop(&D->w, D->wait == W_START);  /* mid start-up: nothing to lose */
}
