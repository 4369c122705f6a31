/*
** shadow.c — shadows of the live worker (worker.h; docs/worker-frames.md,
** "Shadows"): a copy-on-write fork of the worker, made between attempts, so
** that a candidate repair is verified on exactly the live heap (not a
** fresh import, not a replay) while the worker goes on serving.
**
** The parent forks (the clone passes the fork gate only because the kernel
** asked: sandbox.c), notes the shadow in a slot and answers at once.  A
** shadow ends by itself, or is killed by the kernel (its timeout, the
** kernel's stop) or with its worker (its parent-death signal); the worker
** reaps it — at once in the SIGCHLD handler, on the thread that does not
** block the signal (the outbox's; the world's thread blocks it), or between
** requests — and tells the kernel how it ended (an X record).  Never more
** than WIRE_SHADOWS_MAX live at once.
**
** The shadow is the world's thread alone (fork copies only the caller):
** it never touches the outbox, whose mutex another thread may have held at
** the fork, nor anything of the kernel's conversation.  It forgets the
** progress page, closes the kernel's socket and narrows its filter to its
** own (below: no clone at all, no socket, writes to the report socket and
** stderr only), then:
**   1. each recorded request, twice, on the unchanged copy (the baseline);
**   2. the candidate's definitions, kept (the invariants not run yet);
**   3. the repro on the candidate;
**   4. every invariant (as a commit runs them), each failure listed;
**   5. each recorded request on the candidate.
** Each call of 1, 3 and 5 runs as the application call it was, in its own
** transaction, undone after (txn_restore_newest), so calls are
** independent.  Then it writes one report (JSON, in records of the report
** socket) and exits.
**
** A parked shadow is made at a failure instead (shadow_park, through the
** transaction's park function): a call the kernel asked to park ("park"
** in its frame: its function's repair rule says pause) failed on an
** unhandled error, and before anything unwinds the worker forks — the
** copy holds the failed call's stack and heap exactly as they were at
** the condition.  The copy leaves the conversation as any shadow does and
** waits, still at the condition, for its job on the park socket (a
** SOCK_SEQPACKET pair made before the sandbox: the worker relays the
** kernel's "shadow" frame to it when the supervisor's candidate arrives,
** shadow_fork with "parked").  Then it narrows its filter, lets the
** failed call unwind (its transaction undoes its effects, as in the
** worker) and verifies as above, its report saying "from": "failure".
** At most one is parked at a time, and it holds one of the slots; the
** kernel kills it when its incident ends or its pause times out.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <jansson.h>
#include "jtext.h"
#include "worker.h"

#define RESULT_MAX 4096             /* bytes of a printed value or a report kept in the report */
#define SHADOW_REPLAY_MAX 1000      /* recorded requests a frame may carry */
#define SHADOW_STACK 8              /* levels the shadow stacks: the candidate, a call on it */

/* ------------------------------------------------------ the live ones */

/* A shadow alive or not yet reaped: pid 0 is a free slot.  The world's
** thread fills a slot (id, then pid) as it forks; whichever thread reaps
** the shadow frees it. */
static struct { pid_t pid; uint32_t id; } live[WIRE_SHADOWS_MAX];
static struct sock_fprog own_filter;   /* the shadow's filter (shadow_prepare) */

/* The park socket: [0] the worker's end (it writes jobs), [1] the parked
** copy's (it reads them); -1: none.  In the worker, the parked copy's pid
** (0: none) and a serial that tells its job from a dead one's leftovers;
** in the copy, its job once read. */
static int park_sock[2] = {-1, -1};
static pid_t parked_pid;
static uint32_t park_serial;
static json_t *parked_job;

/* One record of the report socket, whole (blocking; EINTR retried).  0,
** or -1 when the kernel is gone. */
static int record(char kind, uint32_t id, const void *p, size_t n) {
  unsigned char buf[WIRE_RECORD_MAX];
  if (n > sizeof buf - WIRE_RECORD_HEAD) return -1;
  memset(buf, 0, WIRE_RECORD_HEAD);
  buf[0] = (unsigned char)kind;
  buf[4] = (unsigned char)(id >> 24);
  buf[5] = (unsigned char)(id >> 16);
  buf[6] = (unsigned char)(id >> 8);
  buf[7] = (unsigned char)id;
  if (n) memcpy(buf + WIRE_RECORD_HEAD, p, n);
  for (;;) {
    ssize_t w = write(WORKER_REPORT_FD, buf, WIRE_RECORD_HEAD + n);
    if (w == (ssize_t)(WIRE_RECORD_HEAD + n)) return 0;
    if (w < 0 && errno == EINTR) continue;
    return -1;
  }
}

/* Reap the shadows that ended, each told to the kernel with its wait
** status.  Async-signal-safe (the SIGCHLD handler's). */
static void reap(void) {
  int saved = errno;
  for (int i = 0; i < WIRE_SHADOWS_MAX; i++) {
    pid_t p = __atomic_load_n(&live[i].pid, __ATOMIC_ACQUIRE);
    int st = 0;
    if (p <= 0 || wait4(p, &st, WNOHANG, NULL) != p) continue;   /* running, or reaped by the other thread */
    uint32_t id = __atomic_load_n(&live[i].id, __ATOMIC_ACQUIRE);
    __atomic_store_n(&live[i].pid, 0, __ATOMIC_RELEASE);
    unsigned char b[4] = {(unsigned char)((unsigned)st >> 24), (unsigned char)((unsigned)st >> 16),
                          (unsigned char)((unsigned)st >> 8), (unsigned char)st};
    record(WIRE_REC_EXITED, id, b, sizeof b);
  }
  errno = saved;
}

static void on_child(int sig) {
  (void)sig;
  reap();
}

void shadow_reap(void) { reap(); }

/* The shadow's own filter, stacked on the worker's (which still applies:
** anonymous memory only, never executable).  Default kill; no clone of any
** kind, no socket, no wait, no prctl, no further filter; writes only to
** the report socket and stderr; opening a file fails, as in the worker. */
static scmp_filter_ctx own_rules(void) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (!ctx) return NULL;
  int rc = 0;
#define ALLOW(name) rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 0)
#define ALLOW_FD(name, fd) \
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 1, \
                         (struct scmp_arg_cmp){.arg = 0, .op = SCMP_CMP_EQ, .datum_a = (fd), .datum_b = 0})
  ALLOW_FD(write, WORKER_REPORT_FD);
  ALLOW_FD(write, 2);
  ALLOW_FD(writev, 2);
  ALLOW(brk);
  ALLOW(mmap);
  ALLOW(mprotect);
  ALLOW(munmap);
  ALLOW(mremap);
  ALLOW(madvise);
  ALLOW(futex);
  ALLOW(clock_gettime);
  ALLOW(clock_getres);
  ALLOW(nanosleep);
  ALLOW(clock_nanosleep);
  ALLOW(gettimeofday);
  ALLOW(getrandom);
  ALLOW(sysinfo);
  ALLOW(rseq);
  ALLOW(rt_sigreturn);
  ALLOW(rt_sigprocmask);
  ALLOW(sched_yield);
  ALLOW(getpid);
  ALLOW(gettid);
  ALLOW(exit);
  ALLOW(exit_group);
  ALLOW(tgkill);   /* abort(): the worker's filter lets it reach the worker's pid only, so a shadow's dies of SIGSYS */
#ifdef WORKER_ASAN
  ALLOW(sigaltstack);
  ALLOW(rt_sigaction);
  ALLOW(getrlimit);
  ALLOW(prlimit64);
  ALLOW(sched_getaffinity);
  ALLOW(readlink);
#endif
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
#undef ALLOW
#undef ALLOW_FD
  if (rc) {
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

int shadow_prepare(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, NULL);
  /* the filter as BPF, made now: libseccomp writes it to a descriptor,
  ** which the sandbox forbids later */
  scmp_filter_ctx ctx = own_rules();
  int fd = ctx ? memfd_create("jiti-shadow-filter", MFD_CLOEXEC) : -1;
  int rc = fd >= 0 ? seccomp_export_bpf(ctx, fd) : -1;
  if (ctx) seccomp_release(ctx);
  off_t n = rc == 0 ? lseek(fd, 0, SEEK_END) : -1;
  unsigned char *p = n > 0 && n % (off_t)sizeof(struct sock_filter) == 0 ? malloc((size_t)n) : NULL;
  if (p && pread(fd, p, (size_t)n, 0) == n) {
    own_filter.filter = (struct sock_filter *)p;
    own_filter.len = (unsigned short)((size_t)n / sizeof(struct sock_filter));
  } else {
    free(p);
  }
  if (fd >= 0) close(fd);
  if (own_filter.filter && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, park_sock) != 0)
    park_sock[0] = park_sock[1] = -1;   /* no parked shadows */
  return own_filter.filter ? 0 : -1;
}

void shadow_park_fds(int fds[2]) {
  fds[0] = park_sock[0];
  fds[1] = park_sock[1];
}

/* --------------------------------------------------------------- results */

/* What a call returned, as a client would have been told: its printed
** value(s), or why it failed. */
typedef struct Result {
  int ok, ran;
  char *value;            /* exactly one value */
  char **values;          /* not exactly one */
  int nvalues;
  const char *reason;     /* a failure's (txn_reason_name) */
  char *condition;        /* an unhandled error's type, or NULL */
  char *report;
} Result;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void result_of(Result *r, const txn_Outcome *o) {
  memset(r, 0, sizeof *r);
  r->ran = 1;
  r->ok = o->reason == TXN_ACCEPTED;
  if (r->ok) {
    if (o->values) {
      r->nvalues = o->nvalues;
      r->values = calloc((size_t)(o->nvalues ? o->nvalues : 1), sizeof *r->values);
      for (int i = 0; r->values && i < o->nvalues; i++) r->values[i] = dup_or_null(o->values[i]);
    } else {
      r->value = dup_or_null(o->value ? o->value : "");
    }
    return;
  }
  r->reason = txn_reason_name(o->reason);
  r->condition = o->diagnosis ? dup_or_null(o->diagnosis->condition_type) : NULL;
  r->report = dup_or_null(o->diagnosis && o->diagnosis->report ? o->diagnosis->report : o->message);
}

static void result_free(Result *r) {
  free(r->value);
  for (int i = 0; r->values && i < r->nvalues; i++) free(r->values[i]);
  free(r->values);
  free(r->condition);
  free(r->report);
  memset(r, 0, sizeof *r);
}

static int same_text(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Whether a client would have been told the same. */
static int result_same(const Result *a, const Result *b) {
  if (a->ok != b->ok) return 0;
  if (a->ok) {
    if (!!a->values != !!b->values || a->nvalues != b->nvalues || !same_text(a->value, b->value)) return 0;
    for (int i = 0; a->values && i < a->nvalues; i++)
      if (!same_text(a->values[i], b->values[i])) return 0;
    return 1;
  }
  return same_text(a->reason, b->reason) && same_text(a->condition, b->condition) && same_text(a->report, b->report);
}

/* A string of the report, cut at RESULT_MAX bytes (on a character's
** first byte); *cut set when it was. */
static void bounded(jtext_writer *j, const char *s, int *cut) {
  size_t n = s ? strlen(s) : 0;
  if (n > RESULT_MAX) {
    n = RESULT_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
    *cut = 1;
  }
  jtext_string(j, s, n);
}

static void put_result(jtext_writer *j, const Result *r) {
  if (!r->ran) {
    jtext_json(j, json_null());
    return;
  }
  int cut = 0;
  jtext_begin(j, '{');
  jtext_key(j, "ok");
  jtext_bool(j, r->ok);
  if (r->ok && r->values) {
    jtext_key(j, "values");
    jtext_begin(j, '[');
    for (int i = 0; i < r->nvalues; i++) bounded(j, r->values[i], &cut);
    jtext_end(j, ']');
  } else if (r->ok) {
    jtext_key(j, "value");
    bounded(j, r->value, &cut);
  } else {
    jtext_key(j, "reason");
    jtext_string(j, r->reason, strlen(r->reason));
    if (r->condition) {
      jtext_key(j, "condition");
      bounded(j, r->condition, &cut);
    }
    jtext_key(j, "report");
    bounded(j, r->report, &cut);
  }
  if (cut) {
    jtext_key(j, "truncated");
    jtext_bool(j, 1);
  }
  jtext_end(j, '}');
}

/* ---------------------------------------------------------------- the run */

typedef struct Job {
  uint32_t id;
  const char *definitions, *repro;   /* repro NULL: none */
  const char **replay;
  size_t nreplay;
  jiti_Limits lim;
  int limited;
} Job;

/* src as the application call it was, in a transaction of its own that is
** undone after (the candidate, if applied, stays below it). */
static void call(txn_World *W, const Job *job, const char *src, Result *r) {
  txn_Request rq = {TXN_APPLICATION, txn_generation(W), src, 0, job->limited ? &job->lim : NULL, NULL, 0, 0, 0, NULL, 0, 0, 0, 0, 0};
  txn_Outcome o;
  int before = txn_awaiting(W);
  txn_run(W, &rq, NULL, NULL, &o);
  if (o.reason == TXN_ACCEPTED && txn_awaiting(W) > before) txn_restore_newest(W);
  result_of(r, &o);
  txn_outcome_free(&o);
}

typedef struct Failed { jtext_writer *j; int n; } Failed;

static void invariant_failed(void *ud, const char *name, const char *message) {
  Failed *f = ud;
  int cut = 0;
  jtext_begin(f->j, '{');
  jtext_key(f->j, "name");
  jtext_string(f->j, name, strlen(name));
  jtext_key(f->j, "report");
  bounded(f->j, message, &cut);
  jtext_end(f->j, '}');
  f->n++;
}

static void discard(void *ud, const char *s, size_t n) { (void)ud; (void)s; (void)n; }

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The shadow's work, its report written into j; from: where it was
** made ("failure": a parked shadow), or NULL (between attempts). */
static void run(txn_World *W, const Job *job, jtext_writer *j, double t0, const char *from) {
  size_t n = job->nreplay;
  Result *base = calloc(n ? 2 * n : 1, sizeof *base), *cand = calloc(n ? n : 1, sizeof *cand);
  if (!base || !cand) _exit(3);
  /* the candidate awaits, each call runs on it (a parked shadow's calls of
  ** the batch before the failed one await their commit below them) */
  txn_set_stacking(W, txn_awaiting(W) + SHADOW_STACK);
  for (size_t i = 0; i < n; i++) {     /* 1. the baseline, twice */
    call(W, job, job->replay[i], &base[2 * i]);
    call(W, job, job->replay[i], &base[2 * i + 1]);
  }
  /* 2. the candidate: a program, gated; kept (awaiting) without the
  ** invariants, which 4 runs one by one */
  txn_Request rq = {TXN_APPLICATION, txn_generation(W), job->definitions, 1, job->limited ? &job->lim : NULL,
                    NULL, 0, 1, 0, NULL, 0, 0, 1, 0, 0};   /* a candidate: a model's, canonical */
  txn_Outcome o;
  txn_run(W, &rq, NULL, NULL, &o);
  int applied = o.reason == TXN_ACCEPTED;
  jtext_begin(j, '{');
  jtext_key(j, "definitions");
  Result d;
  result_of(&d, &o);
  if (applied) {
    jtext_begin(j, '{');
    jtext_key(j, "ok");
    jtext_bool(j, 1);
    jtext_end(j, '}');
  } else {
    put_result(j, &d);
  }
  result_free(&d);
  jtext_key(j, "changes");
  jtext_begin(j, '[');
  for (int i = 0; applied && i < o.nchanges; i++) {
    const txn_Change *c = &o.changes[i];
    const char *kind = jiti_entry_kind_name(c->kind);
    jtext_begin(j, '{');
    jtext_key(j, "kind");
    jtext_string(j, kind, strlen(kind));
    jtext_key(j, "name");
    jtext_string(j, c->name, strlen(c->name));
    jtext_key(j, "hash");
    jtext_string(j, c->hash, strlen(c->hash));
    jtext_key(j, "removed");
    jtext_bool(j, c->removed);
    jtext_end(j, '}');
  }
  jtext_end(j, ']');
  txn_outcome_free(&o);
  Result repro = {0};
  if (applied && job->repro) call(W, job, job->repro, &repro);   /* 3. */
  jtext_key(j, "repro");
  put_result(j, &repro);
  result_free(&repro);
  jtext_key(j, "invariants");   /* 4. */
  if (applied) {
    jtext_begin(j, '{');
    jtext_key(j, "failed");
    jtext_begin(j, '[');
    Failed f = {j, 0};
    txn_invariants_each(W, invariant_failed, &f);
    jtext_end(j, ']');
    jtext_key(j, "ok");
    jtext_bool(j, f.n == 0);
    jtext_end(j, '}');
  } else {
    jtext_json(j, json_null());
  }
  for (size_t i = 0; applied && i < n; i++) call(W, job, job->replay[i], &cand[i]);   /* 5. */
  jtext_key(j, "replay");
  jtext_begin(j, '[');
  for (size_t i = 0; i < n; i++) {
    int stable = result_same(&base[2 * i], &base[2 * i + 1]);
    jtext_begin(j, '{');
    jtext_key(j, "request");
    jtext_string(j, job->replay[i], strlen(job->replay[i]));
    jtext_key(j, "baseline");
    put_result(j, &base[2 * i]);
    jtext_key(j, "baseline_again");
    put_result(j, &base[2 * i + 1]);
    jtext_key(j, "candidate");
    put_result(j, &cand[i]);
    jtext_key(j, "stable");
    jtext_bool(j, stable);
    jtext_key(j, "differs");
    jtext_bool(j, stable && cand[i].ran && !result_same(&base[2 * i], &cand[i]));
    jtext_end(j, '}');
  }
  jtext_end(j, ']');
  if (from) {
    jtext_key(j, "from");
    jtext_string(j, from, strlen(from));
  }
  jtext_key(j, "elapsed_ms");
  jtext_int(j, (json_int_t)(now_ms() - t0));
  jtext_end(j, '}');
}

/* The copy, just made: out of the worker's conversation — it dies with
** the worker (and does not outlive a worker already gone), takes none of
** its signals, forgets the progress page and the kernel's socket. */
static void leave_worker(worker_Progress *pg, int fd, pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(0);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WORKER_CANCEL_SIGNAL);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  if (pg) munmap(pg, WORKER_PROGRESS_SIZE);
  close(fd);
}

/* Into the copy's own filter (no process, no socket, no file): before
** any of the world's code runs again. */
static void narrow(txn_World *W) {
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &own_filter) != 0) _exit(4);
  jiti_set_output(txn_state(W), discard, NULL);
}

/* The copy's work, its report, its end. */
static _Noreturn void verify_and_exit(txn_World *W, const Job *job, double t0, const char *from) {
  jtext_writer j = {0};
  run(W, job, &j, t0, from);
  if (j.failed) _exit(3);   /* out of memory: the kernel says the shadow ended without a report */
  size_t room = WIRE_RECORD_MAX - WIRE_RECORD_HEAD;
  for (size_t at = 0; at < j.len; at += room) {
    size_t k = j.len - at < room ? j.len - at : room;
    if (record(at + k == j.len ? WIRE_REC_END : WIRE_REC_DATA, job->id, j.buf + at, k)) _exit(2);
  }
  _exit(0);
}

static _Noreturn void shadow_main(txn_World *W, const Job *job, worker_Progress *pg, int fd, pid_t parent, double t0) {
  leave_worker(pg, fd, parent);
  narrow(W);
  verify_and_exit(W, job, t0, NULL);
}

static json_t *refused(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *refused(const char *fmt, ...) {
  char msg[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return json_pack("{s:s, s:s}", "event", wire_event_name(WIRE_ERROR), "message", msg);
}

/* Limits from a frame's "limits" member (each optional: missing ones are
** the world's); 0 when absent. */
static int limits_of(txn_World *W, json_t *o, jiti_Limits *lim) {
  if (!json_is_object(o)) return 0;
  txn_get_limits(W, lim);
  json_t *v;
  if (json_is_integer(v = json_object_get(o, "fuel"))) lim->fuel = (uint64_t)json_integer_value(v);
  if (json_is_integer(v = json_object_get(o, "depth"))) lim->depth = (uint32_t)json_integer_value(v);
  if (json_is_integer(v = json_object_get(o, "heap"))) lim->heap = (size_t)json_integer_value(v);
  if (json_is_integer(v = json_object_get(o, "output"))) lim->output = (size_t)json_integer_value(v);
  return 1;
}

/* The job of a "shadow" frame m (its strings m's): NULL, or why not (job
** left empty). */
static const char *job_of(txn_World *W, json_t *m, Job *job) {
  json_t *id = json_object_get(m, "id"), *rp = json_object_get(m, "replay"), *v;
  memset(job, 0, sizeof *job);
  job->definitions = json_string_value(json_object_get(m, "definitions"));
  job->repro = json_string_value(json_object_get(m, "repro"));
  if (!json_is_integer(id) || json_integer_value(id) < 1 || json_integer_value(id) > UINT32_MAX ||
      (uint32_t)json_integer_value(id) == WIRE_SHADOW_PARKED || !job->definitions || (rp && !json_is_array(rp)) ||
      json_array_size(rp) > SHADOW_REPLAY_MAX)
    return "a malformed shadow frame";
  job->id = (uint32_t)json_integer_value(id);
  job->limited = limits_of(W, json_object_get(m, "limits"), &job->lim);
  job->nreplay = json_array_size(rp);
  job->replay = calloc(job->nreplay ? job->nreplay : 1, sizeof *job->replay);
  if (!job->replay) return "out of memory";
  size_t i;
  json_array_foreach(rp, i, v) {
    job->replay[i] = json_string_value(v);
    if (!job->replay[i]) {
      free(job->replay);
      job->replay = NULL;
      return "a malformed shadow frame";
    }
  }
  return NULL;
}

static int free_slot(void) {
  for (int i = 0; i < WIRE_SHADOWS_MAX; i++)
    if (__atomic_load_n(&live[i].pid, __ATOMIC_ACQUIRE) == 0) return i;
  return -1;
}

static json_t *parked_send(txn_World *W, json_t *m);

json_t *shadow_fork(txn_World *W, json_t *m, worker_Progress *pg, int fd, int gate) {
  double t0 = now_ms();
  if (!gate || !own_filter.filter)
    return refused("this worker cannot make shadows: its sandbox has no fork gate on this system (seccomp user "
                   "notification, libseccomp 2.5 or later)");
  if (json_is_true(json_object_get(m, "parked"))) return parked_send(W, m);
  txn_Status st = txn_status(W);
  if (st != TXN_ST_IDLE && st != TXN_ST_FAULTED)
    return refused("the worker is not between attempts (%s)", txn_status_name(st));
  reap();
  int slot = free_slot();
  if (slot < 0) return refused("%d shadows are running already", WIRE_SHADOWS_MAX);
  Job job;
  const char *bad = job_of(W, m, &job);
  if (bad) return refused("%s", bad);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) shadow_main(W, &job, pg, fd, parent, t0);
  int err = errno;
  free(job.replay);
  if (pid < 0) return refused("fork: %s", strerror(err));
  __atomic_store_n(&live[slot].id, job.id, __ATOMIC_RELEASE);
  __atomic_store_n(&live[slot].pid, pid, __ATOMIC_RELEASE);
  reap();   /* it may have ended before its slot was filled */
  return json_pack("{s:s, s:I}", "event", wire_event_name(WIRE_SHADOWED), "pid", (json_int_t)pid);
}

/* ----------------------------------------------------------- parked ones */

static int parked_slot(void) {
  pid_t p = parked_pid;
  for (int i = 0; p && i < WIRE_SHADOWS_MAX; i++)
    if (__atomic_load_n(&live[i].pid, __ATOMIC_ACQUIRE) == p) return i;
  return -1;
}

/* In the parked copy: its job, the "shadow" frame the worker relays in
** records of [serial (4 bytes, big-endian)][last (1 byte)][text]; those
** of another serial are a dead copy's leftovers.  Ends the copy when the
** worker is gone. */
static json_t *read_job(uint32_t serial) {
  static unsigned char buf[WIRE_RECORD_MAX];
  char *text = NULL;
  size_t len = 0;
  for (;;) {
    ssize_t n = read(park_sock[1], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);
    uint32_t s = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
    if (n < 5 || s != serial) continue;
    char *t = len + (size_t)n > ((size_t)64 << 20) ? NULL : realloc(text, len + (size_t)n - 5 + 1);
    if (!t) _exit(3);
    text = t;
    memcpy(text + len, buf + 5, (size_t)n - 5);
    len += (size_t)n - 5;
    if (buf[4]) break;
  }
  json_t *m = json_loadb(text, len, 0, NULL);
  free(text);
  if (!json_is_object(m)) _exit(3);
  return m;
}

int shadow_park(txn_World *W, worker_Progress *pg, int fd, int gate) {
  if (!gate || !own_filter.filter || park_sock[0] < 0) return -1;
  reap();
  if (parked_slot() >= 0) return -1;   /* one at a time */
  parked_pid = 0;
  int slot = free_slot();
  if (slot < 0) return -1;
  static unsigned char drop[WIRE_RECORD_MAX];   /* a job a dead copy never read */
  while (recv(park_sock[1], drop, sizeof drop, MSG_DONTWAIT) > 0) {}
  uint32_t serial = ++park_serial;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    leave_worker(pg, fd, parent);
    parked_job = read_job(serial);   /* waiting, at the condition */
    narrow(W);                       /* before the failed call unwinds */
    return 0;
  }
  if (pid < 0) return -1;
  __atomic_store_n(&live[slot].id, WIRE_SHADOW_PARKED, __ATOMIC_RELEASE);
  __atomic_store_n(&live[slot].pid, pid, __ATOMIC_RELEASE);
  parked_pid = pid;
  reap();   /* it may have ended before its slot was filled */
  return pid;
}

/* A "shadow" frame with "parked": the job goes to the parked copy, which
** answers as a shadow of the frame's id from now on. */
static json_t *parked_send(txn_World *W, json_t *m) {
  reap();
  int slot = parked_slot();
  if (slot < 0) {
    parked_pid = 0;
    return refused("no shadow is parked (it ended)");
  }
  Job job;
  const char *bad = job_of(W, m, &job);
  if (bad) return refused("%s", bad);
  free(job.replay);
  char *text = json_dumps(m, JSON_COMPACT);
  if (!text) return refused("out of memory");
  pid_t pid = parked_pid;
  __atomic_store_n(&live[slot].id, job.id, __ATOMIC_RELEASE);   /* its end is the job's from now on */
  parked_pid = 0;
  static unsigned char buf[WIRE_RECORD_MAX];
  size_t len = strlen(text), room = sizeof buf - 5, at = 0;
  double until = now_ms() + 5000;
  int ok = 1;
  do {
    size_t k = len - at < room ? len - at : room;
    buf[0] = (unsigned char)(park_serial >> 24);
    buf[1] = (unsigned char)(park_serial >> 16);
    buf[2] = (unsigned char)(park_serial >> 8);
    buf[3] = (unsigned char)park_serial;
    buf[4] = at + k == len;
    memcpy(buf + 5, text + at, k);
    /* never blocking: a copy killed meanwhile reads nothing more */
    ssize_t w;
    while ((w = sendto(park_sock[0], buf, k + 5, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0)) < 0 &&
           (errno == EINTR || errno == EAGAIN) && now_ms() < until) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
      reap();
      if (__atomic_load_n(&live[slot].pid, __ATOMIC_ACQUIRE) != pid) break;
    }
    ok = w == (ssize_t)(k + 5);
    at += k;
  } while (ok && at < len);
  free(text);
  if (!ok) return refused("the parked shadow took no job (it ended, or is stuck)");
  return json_pack("{s:s, s:I}", "event", wire_event_name(WIRE_SHADOWED), "pid", (json_int_t)pid);
}

int shadow_parked(void) { return parked_job != NULL; }

void shadow_parked_run(txn_World *W) {
  double t0 = now_ms();
  Job job;
  if (job_of(W, parked_job, &job)) _exit(3);
  verify_and_exit(W, &job, t0, "failure");
}
