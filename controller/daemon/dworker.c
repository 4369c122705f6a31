/*
** dworker.c — the daemon's worker processes (daemon.h, DWorker,
** docs/worker-frames.md): the live worker, started from CURRENT without
** blocking the loop, its frames in, its death and replacement; helpers
** started for one piece of work (a rollback's check), driven through the
** same callbacks; every worker's stderr read into the log as the
** worker's (never written to the log directly).  What the live worker is
** asked to do is dsched.c's; what comes of a helper, its ops'.
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

void dworker_trace(Daemon *D, const char *way, const char *text, size_t n) { trace_text(D, way, text, n); }

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
  if (wproc_send(&D->live.w, m, NULL, 0) == 0) return 0;
  dworker_died(D);
  return -1;
}

int dworker_send_text(Daemon *D, const char *text, size_t n) {
  trace_text(D, ">", text, n);
  if (text && wproc_send_text(&D->live.w, text, n) == 0) return 0;
  dworker_died(D);
  return -1;
}

/* ------------------------------------------------------------- stderr */

/* A line of a worker's stderr (workerproc.h: escaped, rate-limited)
** into the log, marked as the worker's; the reader's notes about it (lines
** dropped) are the kernel's own lines. */
static void stderr_line(void *ud, int pid, const char *text, size_t n, int note) {
  DWorker *k = ud;
  if (note) dlog(k->D, "%s %d: %.*s", k->role, pid, (int)n, text);
  else dlog_worker(k->D, pid, text, n);
}

void dworker_stderr(DWorker *k) {
  int fd = k->w.err.fd;
  wproc_err_read(&k->w);
  if (k->w.err.fd < 0) dpoll_del(k->D->poll, fd);   /* closed at its end */
}

/* ------------------------------------------------------------ the loop */

static void err_ready(void *ud, int fd, unsigned r) {
  (void)fd, (void)r;
  dworker_stderr(ud);
}

static void sock_ready(void *ud, int fd, unsigned r) {
  DWorker *k = ud;
  (void)fd;
  if (r & DPOLL_OUT) dworker_writable(k);
  if (r & (DPOLL_IN | DPOLL_HUP)) dworker_readable(k);
}

/* The loop watches a worker's socket (for writing too while start-up
** frames wait), its stderr and (the live worker's) its report socket.
** -1 when it cannot (errno). */
static int watch(DWorker *k) {
  DPoll *P = k->D->poll;
  if (dpoll_add(P, k->w.fd, DPOLL_IN | (k->out.len > k->out.off ? DPOLL_OUT : 0), RANK_WORKER, sock_ready, k) != 0)
    return -1;
  if ((k->w.err.fd >= 0 && dpoll_add(P, k->w.err.fd, DPOLL_IN, RANK_WORKER_ERR, err_ready, k) != 0) ||
      (k == &k->D->live && dshadow_watch(k->D) != 0)) {
    dpoll_del(P, k->w.fd);
    dpoll_del(P, k->w.err.fd);
    return -1;
  }
  return 0;
}

/* Out of the loop, before its descriptors close. */
static void unwatch(DWorker *k) {
  dpoll_del(k->D->poll, k->w.fd);
  dpoll_del(k->D->poll, k->w.err.fd);
  if (k == &k->D->live) dshadow_unwatch(k->D);
}

static void helper_failed(DWorker *k, const char *why);

double dworker_before_start(void *ud, double now) {
  Daemon *D = ud;
  double due = -1;
  for (DWorker *k = &D->live, *next; k; k = next) {
    next = k == &D->live ? D->helpers : k->next;
    if (k->wait != W_START) continue;
    if (now > k->start_deadline) {
      dlog(D, "the %s did not start within 120 s; killing it", k->role);
      kill(k->w.pid, SIGKILL);  /* its EOF ends the start */
      k->start_deadline = now + 3600;
    }
    if (due < 0 || k->start_deadline - now < due) due = k->start_deadline - now;
  }
  return due;
}

double dworker_before_err(void *ud, double now) {
  Daemon *D = ud;
  double due = -1;
  (void)now;
  for (DWorker *k = &D->live; k; k = k == &D->live ? D->helpers : k->next) {
    wproc_err_tick(&k->w);   /* lines of its stderr dropped: said once their second is over */
    double d = wproc_err_due(&k->w);
    if (d >= 0 && (due < 0 || d < due)) due = d;
  }
  return due;
}

/* ------------------------------------------------------------ start-up */

/* Start worker k from plan and queue its start-up frames (traced when
** trace: the live worker's).  0, or -1 with a message in err (nothing
** left running). */
static int spawn_plan(DWorker *k, const wproc_Plan *plan, int trace, char *err, size_t errlen) {
  Daemon *D = k->D;
  if (wproc_spawn(&k->w, &D->grant, k == &D->live, err, errlen) != 0) return -1;
  k->w.err.fn = stderr_line;
  k->w.err.ud = k;
  k->out.len = k->out.off = 0;
  if (wproc_frames(dstore(D), plan, &k->out.buf, &k->out.len, &k->out.cap, &k->start_entries, err, errlen) != 0) {
    wproc_stop(&k->w, 1);
    return -1;
  }
  if (trace) trace_buffer(D, k->out.buf, k->out.len);
  if (watch(k) != 0) {
    snprintf(err, errlen, "cannot watch the worker's socket: %s", strerror(errno));
    wproc_stop(&k->w, 1);
    return -1;
  }
  k->base = plan->base;
  k->wait = W_START;
  k->start_deadline = daemon_now() + 120;
  return 0;
}

/* Start the live worker from CURRENT.  0, or -1 with a message in err. */
static int spawn(Daemon *D, char *err, size_t errlen) {
  if (store_current(dstore(D), &D->revision) != STORE_OK) {
    snprintf(err, errlen, "cannot read CURRENT: %s", store_errmsg(dstore(D)));
    return -1;
  }
  wproc_Plan plan = {STORE_REV_CURRENT, 0, D->revision, D->live.base, &D->limits.eval, &D->grant, DAEMON_MAX_AHEAD,
                     drepl_entry_max(D->repl)};
  return spawn_plan(&D->live, &plan, 1, err, errlen);
}

/* Write what the socket takes of the queued start-up frames. */
void dworker_writable(DWorker *k) {
  while (k->out.off < k->out.len) {
    ssize_t w = send(k->w.fd, k->out.buf + k->out.off, k->out.len - k->out.off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) return;  /* it died: its EOF follows */
    k->out.off += (size_t)w;
  }
  k->out.len = k->out.off = 0;
  dpoll_mask(k->D->poll, k->w.fd, DPOLL_IN);   /* all written */
  if (k->out.cap > ((size_t)1 << 20)) {  /* do not keep a large world's copy */
    free(k->out.buf);
    k->out.buf = NULL;
    k->out.cap = 0;
  }
}

/* A worker's string (vouched for: a string) for a log line, escaped. */
static const char *logged(json_t *o, const char *member, char *buf, size_t n) {
  json_t *v = json_object_get(o, member);
  vouch_escape(json_string_value(v), json_string_length(v), buf, n);
  return buf;
}

/* What a fresh worker says of the grant: the libraries that did not open
** (kept for status) and the foreign declarations of CURRENT that cannot be
** called, each logged once per start with its library, symbol and why. */
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
  snprintf(D->live.status, sizeof D->live.status, "%s", st ? st : "idle");
  char msg[600];
  logged(r, "message", msg, sizeof msg);
  dlog(D, "worker %d ready: revision %" PRIu64 ", %zu entries, generation %" PRIu64 ", %s%s%s",
       (int)D->live.w.pid, D->revision, D->live.start_entries, D->gen, D->live.status, *msg ? ": " : "", msg);
  foreign_ready(D, json_object_get(r, "foreign"));
  dshadow_started(D);   /* its fork gate, sent before anything it read */
  D->live.wait = W_NONE;
  D->live.in_pause = 0;
  D->consecutive_failures = 0;
}

/* Reap a worker that failed to start and plan the next try. */
static double restart_due(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  D->live.restart = 0;
  dworker_restart(D);
  return -1;
}

static void start_failed(Daemon *D, const char *why) {
  unwatch(&D->live);
  wproc_stop(&D->live.w, 1);
  D->live.wait = W_NONE;
  D->live.out.len = D->live.out.off = 0;
  dlog(D, "cannot start a worker: %s", why);
  if (++D->consecutive_failures >= 3) {
    dlog(D, "giving up after 3 failed worker starts; stopping");
    D->stop_why = "the worker cannot start";
    return;
  }
  D->live.restart = dpoll_timer(D->poll, daemon_now() + 1, restart_due, D);
}

void dworker_restart(Daemon *D) {
  char err[1024];
  if (D->live.restart) dpoll_timer_del(D->poll, D->live.restart);
  D->live.restart = 0;
  if (D->stopping || D->live.w.fd >= 0) return;
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
  while (D->live.wait == W_START) {
    struct pollfd p[2] = {{D->live.w.fd, POLLIN | (D->live.out.len > D->live.out.off ? POLLOUT : 0), 0},
                          {D->live.w.err.fd, POLLIN, 0}};
    int n = poll(p, D->live.w.err.fd >= 0 ? 2 : 1, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (daemon_now() > D->live.start_deadline) {
      start_failed(D, "it did not start within 120 s");
      break;
    }
    wproc_err_tick(&D->live.w);
    if (n <= 0) continue;
    if (D->live.w.err.fd >= 0 && p[1].revents) dworker_stderr(&D->live);
    if (p[0].revents & POLLOUT) dworker_writable(&D->live);
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) dworker_readable(&D->live);
  }
  if (D->live.restart) dpoll_timer_del(D->poll, D->live.restart);
  D->live.restart = 0;  /* the caller gives up instead */
  return D->live.w.fd >= 0 && D->live.wait == W_NONE ? 0 : -1;
}

/* ---------------------------------------------------------------- death */

void dworker_died(Daemon *D) {
  int st = 0;
  if (D->live.w.pid) {
    /* EOF first: make sure it is gone */
    if (waitpid(D->live.w.pid, &st, WNOHANG) == 0) {
      kill(D->live.w.pid, SIGKILL);
      while (waitpid(D->live.w.pid, &st, 0) < 0 && errno == EINTR) {}
    }
  }
  char how[160];
  wproc_describe(st, how, sizeof how);
  pid_t pid = D->live.w.pid;
  D->live.w.pid = 0;  /* reaped */
  uint64_t lost = wproc_outcomes_unseen(&D->live.w);
  if (D->live.violation[0]) {   /* killed for a frame (dvouch.c): its count of outcomes is no count */
    snprintf(how, sizeof how, "%s", D->live.violation);
    D->live.violation[0] = 0;
    lost = 0;
  }
  if (D->live.wait == W_START) {
    char why[200];
    snprintf(why, sizeof why, "the worker %s during start-up", how);
    start_failed(D, why);
    return;
  }
  dshadow_worker_gone(D, how);   /* (reads what its report socket still holds) */
  unwatch(&D->live);
  wproc_stop(&D->live.w, 1);
  dlog(D, "worker %d %s", (int)pid, how);
  D->restarts++;
  /* A group being written stands or falls with its store transaction, not
  ** with the worker: its end is awaited here, so that the generations it
  ** hands out are counted before the next worker's base (dgroup.c tells a
  ** worker started since nothing of it). */
  dstore(D);
  dsync_settle(D);
  dsched_worker_died(D, how, lost);
  D->live.wait = W_NONE;
  D->live.in_pause = 0;
  devents_add(D, json_pack("{s:s, s:s, s:I}", "event", store_event_name(STORE_EV_WORKER_RESTARTED),
                           "reason", how, "revision", (json_int_t)D->revision));
  /* The world the dead worker showed is gone: from now on (status while the
  ** next one starts too) the generation is the next worker's, past it. */
  D->live.base = D->gen + 1;
  D->gen = D->live.base;
  devents_flush(D);
  if (D->stopping) return;
  dworker_restart(D);
}

/* ---------------------------------------------------------------- frames */

static void frame(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen) {
  trace(D, "<", m);
  if (D->live.wait != W_START) {
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

/* A helper's frame: its ready, or why it did not start. */
static void helper_frame(DWorker *k, json_t *m) {
  if (k->wait == W_START && wire_event_of(m) == WIRE_READY) {
    k->wait = W_NONE;
    k->ops->ready(k->D, k, m);
    return;
  }
  json_t *msg = json_object_get(m, "message");   /* the worker's: escaped */
  char why[300];
  vouch_escape(json_string_value(msg), json_string_length(msg), why, sizeof why);
  helper_failed(k, json_is_string(msg) ? why : "the worker did not start");
}

/* Whether k is still the worker it was (pid) and running. */
static int still(Daemon *D, DWorker *k, pid_t pid) {
  if (k == &D->live) return D->live.w.pid == pid && D->live.w.fd >= 0;
  for (DWorker *h = D->helpers; h; h = h->next)
    if (h == k) return h->w.pid == pid && h->w.fd >= 0;
  return 0;
}

/* A worker's socket is readable: one read, then every whole frame it
** brought (a batch's outcomes arrive in bursts), then its death if it
** closed the socket. */
void dworker_readable(DWorker *k) {
  Daemon *D = k->D;
  pid_t pid = k->w.pid;
  ssize_t n = wire_fill(k->w.fd, &k->w.rd);
  int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  for (;;) {
    json_t *m;
    unsigned char *blob;
    size_t bl;
    char why[256];
    int got = wire_next(&k->w.rd, &m, &blob, &bl, why, sizeof why);
    if (got == 0) break;
    if (got < 0) {
      if (k != &D->live) {
        char say[300];
        snprintf(say, sizeof say, "its frames do not read: %s", why);
        helper_failed(k, say);
      } else {
        dvouch_unreadable(D, why);   /* killed: the rule frame-syntax */
      }
      return;
    }
    if (k == &D->live) frame(D, m, blob, bl);
    else helper_frame(k, m);
    json_decref(m);
    free(blob);
    if (!still(D, k, pid)) return;  /* it was replaced or ended meanwhile */
    if (k != &D->live) continue;
    dsched_pump(D);  /* the next frame may be the next call's outcome */
    if (!still(D, k, pid)) return;
  }
  if (!gone) return;
  if (k == &D->live) {
    dworker_died(D);
  } else {
    int st = 0;
    char how[160], why[200];
    while (waitpid(k->w.pid, &st, 0) < 0 && errno == EINTR) {}
    wproc_describe(st, how, sizeof how);
    k->w.pid = 0;   /* reaped */
    snprintf(why, sizeof why, "the worker %s", how);
    helper_failed(k, why);
  }
}

/* ------------------------------------------------------------- helpers */

DWorker *dworker_helper(Daemon *D, const char *role, const wproc_Plan *plan, const DWorkerOps *ops, void *job,
                        char *err, size_t errlen) {
  DWorker *k = calloc(1, sizeof *k);
  if (!k) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  k->D = D;
  k->role = role;
  k->ops = ops;
  k->job = job;
  k->w.fd = k->w.err.fd = k->w.report = -1;
  if (spawn_plan(k, plan, 0, err, errlen) != 0) {
    free(k->out.buf);
    free(k);
    return NULL;
  }
  k->next = D->helpers;
  D->helpers = k;
  return k;
}

void dworker_helper_end(Daemon *D, DWorker *k, int kill) {
  for (DWorker **p = &D->helpers; *p; p = &(*p)->next)
    if (*p == k) {
      *p = k->next;
      break;
    }
  unwatch(k);
  wproc_stop(&k->w, kill);
  free(k->out.buf);
  free(k->frame.buf);
  free(k);
}

/* A helper did not start (why: escaped): its ops hear of it, and it ends. */
static void helper_failed(DWorker *k, const char *why) {
  Daemon *D = k->D;
  k->ops->failed(D, k, why);
  dworker_helper_end(D, k, 1);
}

/* At shutdown: ask the worker to exit; kill it if it has not within 2 s. */
void dworker_stop(Daemon *D) {
  free(D->live.out.buf);
  D->live.out.buf = NULL;
  D->live.out.len = D->live.out.off = D->live.out.cap = 0;
  free(D->live.frame.buf);
  D->live.frame = (jtext_writer){0};
  if (D->live.w.fd < 0) return;
  if (D->live.wait != W_START) {  /* wproc_stop says exit */
    json_t *m = wframe_exit();
    trace(D, ">", m);
    json_decref(m);
  }
  /* (a rollback's replacement: its shadows end with it; at the kernel's
  ** stop none is left by now) */
  dshadow_worker_gone(D, "was replaced (a rollback changed the live world)");
  unwatch(&D->live);
  wproc_stop(&D->live.w, D->live.wait == W_START);  /* mid start-up: nothing to lose */
}
