/*
** dshadow.c — verifications on shadows of the live worker (daemon.h,
** docs/repair.md, docs/worker-frames.md "Shadows").  A shadow is a
** copy-on-write fork of the live worker: the exact live heap, not a fresh
** import or a replay of history.  It applies a candidate, runs a repro,
** the invariants and recorded requests against it and against the
** unchanged copy, writes one report and exits; the live world and its
** generation are untouched.
**
** The life of one:
**   queued    dshadow_start; it waits for the live worker's next quiescent
**             point (dsched_pump: between attempts, no calls held for
**             their commit, after queries and before transactions; calls
**             are not started past a verification that may go now);
**   forking   its "shadow" frame is out (W_SHADOW) and the fork gate has a
**             permit for exactly one clone (the worker's sandbox holds
**             every clone with fork's flags for the kernel's answer; any
**             clone without a permit is refused, and breaks the rule
**             `process`);
**   running   the worker answered shadowed {pid}: the pid is checked to be
**             the worker's child and held as a pidfd (killing it can never
**             hit a reused pid), its timeout armed; its report arrives in
**             records of the report socket;
**   answered  its report was whole (checked: vouch_report; its changes
**             compared with CURRENT), or it was killed at its timeout, or
**             it died: done was called;
**   reaped    the worker reaped it and said how it ended (an X record):
**             its slot is free.  One that died before its report is
**             answered here, with how it ended.
** The worker's death ends every one forking or running (their parent-death
** signal kills them; the kernel kills them too); those queued wait for the
** next worker.
**
** A parked shadow is made at a failure, not here: a call of a function
** whose repair rule pauses is sent asked to park (dshadow_park_asks), the
** gate lets one clone through while such calls are out, and the failed
** call's outcome names the copy the worker made before the call unwound
** (checked to be its child, held by a pidfd).  If the failed call waits for
** its repair, the copy waits for the first verification of that incident:
** the "shadow" frame then says "parked" and the worker relays the job
** instead of forking (the copy runs it on the heap as it was at the
** failure; its report says "from": "failure").  Otherwise, and when the
** incident ends or the wait is given up, it is killed.  One at a time; it
** holds one of the worker's slots until the worker reaps it.  The kernel's stop kills those running and waits (at most
** 2 s) for the worker to reap them, so none outlives it.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/seccomp.h>
#include "daemon.h"

#define REPORT_MAX ((size_t)32 << 20)   /* bytes of one report's text */

enum { SH_QUEUED, SH_FORKING, SH_RUNNING, SH_ANSWERED };

static const char NO_GATE[] = "the worker cannot make shadows: its sandbox has no fork gate on this system "
                              "(seccomp's user notification: Linux 5.7 and libseccomp 2.5 or later)";

struct DShadow {
  DShadow *next;
  uint32_t id;
  int state;
  int sent;               /* its frame went out: it counts in Shadows.running until reaped */
  char *definitions, *repro;
  char **replay;
  size_t nreplay;
  int64_t timeout_ms;
  dshadow_done_fn done;
  void *arg;
  Daemon *D;
  pid_t pid;
  int pidfd;              /* -1: none (it was gone before it could be held) */
  uint64_t timer;
  double t0;
  char *text;             /* its report so far */
  size_t len, cap;
  int exited;             /* its X record came before its shadowed frame */
  int status;
  uint64_t incident;      /* DShadowSpec.incident */
  int use_parked;         /* its frame went to the parked shadow (pid, pidfd taken from it) */
};

/* ------------------------------------------------------------- the list */

static void unlink_one(Shadows *X, DShadow *s) {
  DShadow *prev = NULL;
  for (DShadow *p = X->first; p; prev = p, p = p->next)
    if (p == s) {
      if (prev) prev->next = s->next;
      else X->first = s->next;
      if (X->last == s) X->last = prev;
      return;
    }
}

static void shadow_free(Daemon *D, DShadow *s) {
  Shadows *X = &D->shadows;
  unlink_one(X, s);
  if (s->sent) X->running--;
  if (X->forking == s) X->forking = NULL;
  if (s->timer) dpoll_timer_del(D->poll, s->timer);
  if (s->pidfd >= 0) close(s->pidfd);
  free(s->definitions);
  free(s->repro);
  for (size_t i = 0; i < s->nreplay; i++) free(s->replay[i]);
  free(s->replay);
  free(s->text);
  free(s);
}

static DShadow *find(Shadows *X, uint32_t id) {
  for (DShadow *s = X->first; s; s = s->next)
    if (s->id == id && s->sent) return s;
  return NULL;
}

/* Call its done (once), then it only waits to be reaped. */
static void answer(Daemon *D, DShadow *s, json_t *report, const char *err) {
  if (s->state == SH_ANSWERED) return;
  s->state = SH_ANSWERED;
  if (s->timer) dpoll_timer_del(D->poll, s->timer);
  s->timer = 0;
  if (report) dlog(D, "verification %" PRIu32 ": reported", s->id);
  else dlog(D, "verification %" PRIu32 ": %s", s->id, err);
  s->done(D, s->arg, report, err);
}

static void kill_it(DShadow *s) {
  if (s->pidfd >= 0) syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
}

/* ------------------------------------------------------------ starting */

static char *dup_str(const char *s) { return s ? strdup(s) : NULL; }

int dshadow_start(Daemon *D, const DShadowSpec *spec, dshadow_done_fn done, void *arg, char *err, size_t errlen) {
  Shadows *X = &D->shadows;
  size_t n = 0;
  for (DShadow *s = X->first; s; s = s->next) n++;
  if (D->stopping || D->stop_why) {
    snprintf(err, errlen, "the kernel is shutting down");
    return -1;
  }
  if (!spec->definitions || spec->nreplay > DSHADOW_REPLAY_MAX || spec->timeout_ms < 0 ||
      spec->timeout_ms > DSHADOW_TIMEOUT_MAX) {
    snprintf(err, errlen, "a verification needs definitions, at most %d recorded requests and a timeout of at "
             "most %d ms", DSHADOW_REPLAY_MAX, DSHADOW_TIMEOUT_MAX);
    return -1;
  }
  if (n >= DSHADOW_QUEUE_MAX) {
    snprintf(err, errlen, "%zu verifications are waiting or running already; retry later", n);
    return -1;
  }
  if (X->listener < 0 && D->live.w.fd >= 0 && D->live.wait != W_START) {
    snprintf(err, errlen, "%s", NO_GATE);
    return -1;
  }
  DShadow *s = calloc(1, sizeof *s);
  if (!s || !(s->definitions = strdup(spec->definitions)) || (spec->repro && !(s->repro = strdup(spec->repro))) ||
      !(s->replay = calloc(spec->nreplay ? spec->nreplay : 1, sizeof *s->replay))) {
    if (s) {
      free(s->definitions);
      free(s->repro);
      free(s);
    }
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->pidfd = -1;
  s->D = D;
  s->done = done;
  s->arg = arg;
  s->timeout_ms = spec->timeout_ms ? spec->timeout_ms : DSHADOW_TIMEOUT_DEFAULT;
  s->incident = spec->incident;
  for (; s->nreplay < spec->nreplay; s->nreplay++)
    if (!(s->replay[s->nreplay] = dup_str(spec->replay[s->nreplay]))) break;
  if (s->nreplay < spec->nreplay) {
    shadow_free(D, s);   /* (not linked yet: unlinking finds nothing) */
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (++X->next_id == 0) X->next_id = 1;
  s->id = X->next_id;
  s->state = SH_QUEUED;
  if (X->last) X->last->next = s;
  else X->first = s;
  X->last = s;
  return 0;
}

static DShadow *next_queued(Shadows *X) {
  for (DShadow *s = X->first; s; s = s->next)
    if (s->state == SH_QUEUED) return s;
  return NULL;
}

/* Those queued, answered err (the worker cannot make shadows, the kernel stops). */
static void fail_queued(Daemon *D, const char *err) {
  DShadow *s;
  while ((s = next_queued(&D->shadows))) {
    answer(D, s, NULL, err);
    shadow_free(D, s);
  }
}

/* Whether s goes to the shadow parked at its incident's failure. */
static int parked_for(const Shadows *X, const DShadow *s) {
  return s->incident && X->parked.pid && X->parked.pidfd >= 0 && X->parked.incident == s->incident;
}

/* The worker's slots taken: shadows sent, and the parked one. */
static int slots_taken(const Shadows *X) { return X->running + (X->parked.pid != 0); }

int dshadow_ready(Daemon *D) {
  Shadows *X = &D->shadows;
  DShadow *s = next_queued(X);
  return s && X->listener >= 0 && (parked_for(X, s) || slots_taken(X) < WIRE_SHADOWS_MAX) && !D->stopping;
}

int dshadow_pump(Daemon *D) {
  Shadows *X = &D->shadows;
  DShadow *s = next_queued(X);
  if (!s || D->stopping || D->live.wait != W_NONE || D->live.in_pause || D->live.w.fd < 0) return 0;
  if (X->listener < 0) {
    fail_queued(D, NO_GATE);
    return 0;
  }
  int parked = parked_for(X, s);
  if ((!parked && slots_taken(X) >= WIRE_SHADOWS_MAX) || dgroup_holds(D)) return 0;
  json_t *m = wframe_shadow(s->id, s->definitions, s->repro, (const char *const *)s->replay, s->nreplay,
                            &D->limits.eval);
  s->state = SH_FORKING;
  s->sent = 1;
  X->running++;
  X->forking = s;
  D->live.wait = W_SHADOW;
  if (parked) {   /* no clone: the parked one takes the job, and its slot is this one's */
    json_object_set_new(m, "parked", json_true());
    s->use_parked = 1;
    s->pid = X->parked.pid;
    s->pidfd = X->parked.pidfd;
    X->parked.pid = 0;
    X->parked.pidfd = -1;
    X->parked.incident = 0;
    dlog(D, "verification %" PRIu32 ": to the shadow parked at the failure (pid %d, %zu recorded request%s, timeout "
         "%" PRId64 " ms)", s->id, (int)s->pid, s->nreplay, s->nreplay == 1 ? "" : "s", s->timeout_ms);
  } else {
    X->permit = 1;   /* the one clone this frame asks for */
    dlog(D, "verification %" PRIu32 ": forking a shadow (%zu recorded request%s, timeout %" PRId64 " ms)", s->id,
         s->nreplay, s->nreplay == 1 ? "" : "s", s->timeout_ms);
  }
  dworker_send(D, m);   /* (a send that fails ends the worker, and this one with it) */
  return 1;
}

/* ------------------------------------------------------------- running */

static double timed_out(void *ud, double now) {
  DShadow *s = ud;
  Daemon *D = s->D;
  (void)now;
  s->timer = 0;
  kill_it(s);
  char why[120];
  snprintf(why, sizeof why, "timeout: killed after %" PRId64 " ms", s->timeout_ms);
  answer(D, s, NULL, why);
  return -1;
}

/* The parent (a pid) of the process pid, from /proc; 0 when unknown. */
static pid_t parent_of(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  char *p = strrchr(buf, ')');   /* after the command's name, whatever it holds */
  int ppid = 0;
  char state;
  if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2) return 0;
  return (pid_t)ppid;
}

/* How a shadow ended, from its wait status, as the verification's error. */
static void ended(Daemon *D, DShadow *s, int status) {
  char how[160], why[200];
  wproc_describe(status, how, sizeof how);
  snprintf(why, sizeof why, "the shadow died without its report: %s", how);
  answer(D, s, NULL, why);
}

void dshadow_forked(Daemon *D, json_t *m) {
  Shadows *X = &D->shadows;
  DShadow *s = X->forking;
  D->live.wait = W_NONE;
  X->permit = 0;
  X->forking = NULL;
  if (!s) return;
  if (wire_event_of(m) == WIRE_ERROR && s->use_parked) {
    /* the parked one ended, or took no job: a shadow forked now instead */
    char msg[300];
    json_t *e = json_object_get(m, "message");
    vouch_escape(json_string_value(e), json_string_length(e), msg, sizeof msg);
    dlog(D, "verification %" PRIu32 ": the parked shadow took no job (%s): forking one", s->id, msg);
    kill_it(s);
    if (s->pidfd >= 0) close(s->pidfd);
    s->pidfd = -1;
    s->pid = 0;
    s->use_parked = 0;
    s->incident = 0;
    s->sent = 0;
    s->state = SH_QUEUED;
    X->running--;
    return;
  }
  if (wire_event_of(m) == WIRE_ERROR) {
    char msg[300], why[400];
    json_t *e = json_object_get(m, "message");
    vouch_escape(json_string_value(e), json_string_length(e), msg, sizeof msg);
    snprintf(why, sizeof why, "the worker made no shadow: %s", msg);
    answer(D, s, NULL, why);
    shadow_free(D, s);
    return;
  }
  if (s->use_parked) {   /* held since it parked: the same process, or a lie */
    pid_t said = (pid_t)json_integer_value(json_object_get(m, "pid"));
    s->t0 = daemon_now();
    if (s->state == SH_FORKING) s->state = SH_RUNNING;
    if (said != s->pid) {
      answer(D, s, NULL, "the worker named another process than the parked shadow (it broke the frame rule process)");
      dvouch_process(D, "shadowed names another pid than the parked shadow's");
      return;
    }
    if (s->exited) {
      if (s->state != SH_ANSWERED) ended(D, s, s->status);
      shadow_free(D, s);
      return;
    }
    dlog(D, "verification %" PRIu32 ": parked shadow %d running", s->id, (int)s->pid);
    if (s->state == SH_RUNNING)
      s->timer = dpoll_timer(D->poll, s->t0 + (double)s->timeout_ms / 1000.0, timed_out, s);
    return;
  }
  s->pid = (pid_t)json_integer_value(json_object_get(m, "pid"));
  s->t0 = daemon_now();
  if (s->state == SH_FORKING) s->state = SH_RUNNING;   /* (its whole report may have come first) */
  if (s->exited) {   /* it ended, and was reaped, before this answer was read */
    dlog(D, "verification %" PRIu32 ": shadow %d ended", s->id, (int)s->pid);
    if (s->state != SH_ANSWERED) ended(D, s, s->status);
    shadow_free(D, s);
    return;
  }
  /* Held by a pidfd, once known to be the worker's child: a kill can
  ** never reach another process that reused the pid.  Gone already (its
  ** X record may even be read): nothing to hold or kill. */
  int fd = (int)syscall(SYS_pidfd_open, s->pid, 0);
  if (fd >= 0) {
    pid_t parent = parent_of(s->pid);
    if (syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) != 0) {   /* gone since: what /proc said was not it */
      close(fd);
      fd = -1;
    } else if (parent != D->live.w.pid) {
      close(fd);
      char why[120];
      snprintf(why, sizeof why, "shadowed names pid %d, which is not the worker's child", (int)s->pid);
      answer(D, s, NULL, "the worker named a shadow that is not its child (it broke the frame rule process)");
      dvouch_process(D, why);   /* the worker is killed; this one is freed with it */
      return;
    }
  }
  s->pidfd = fd;
  dlog(D, "verification %" PRIu32 ": shadow %d running", s->id, (int)s->pid);
  if (s->state == SH_RUNNING)
    s->timer = dpoll_timer(D->poll, s->t0 + (double)s->timeout_ms / 1000.0, timed_out, s);
}

/* The report is whole: checked, its changes compared with CURRENT. */
static void reported(Daemon *D, DShadow *s) {
  dworker_trace(D, "R", s->text, s->len);
  json_error_t je;
  json_t *r = jtext_load(s->text, s->len, JSON_REJECT_DUPLICATES, &je);
  vouch_Fail f = {0};
  char why[800];
  if (!json_is_object(r)) {
    snprintf(why, sizeof why, "the shadow's report is not a JSON object: %s", je.text);
  } else if (vouch_report(r, s->nreplay, &f) != 0) {
    dlog(D, "verification %" PRIu32 ": the shadow's report broke the rule %s (%s)", s->id, f.rule, f.detail);
    snprintf(why, sizeof why, "the shadow's report broke the frame rule %s (the candidate ran in it: a granted "
             "library can make it write anything)", f.rule);
  } else {
    /* what the candidate changed, as a client sees a preview's changes:
    ** compared with CURRENT (the live world when the shadow was made, as
    ** no call was held for its commit then) */
    json_t *changed = publish_brief(dstore(D), json_object_get(r, "changes"));
    int applied = json_is_true(json_object_get(json_object_get(r, "definitions"), "ok"));
    json_object_del(r, "changes");
    json_object_set_new(r, "changed", changed ? changed : json_array());
    json_object_set_new(r, "identical", json_boolean(applied && json_array_size(changed) == 0));
    answer(D, s, r, NULL);
    json_decref(r);
    return;
  }
  json_decref(r);
  answer(D, s, NULL, why);
}

static void listener_ready(void *ud, int fd, unsigned r);

/* One record of the report socket (n bytes, fd: a descriptor it carried, or -1). */
static void on_record(Daemon *D, const unsigned char *b, size_t n, int fd) {
  Shadows *X = &D->shadows;
  if (n < WIRE_RECORD_HEAD) {
    if (fd >= 0) close(fd);
    return;
  }
  uint32_t id = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
  if (b[0] == WIRE_REC_LISTENER) {
    /* only from a worker starting (before it read anything), only once */
    if (fd >= 0 && X->listener < 0 && D->live.wait == W_START &&
        dpoll_add(D->poll, fd, DPOLL_IN, RANK_WORKER_ERR, listener_ready, D) == 0)
      X->listener = fd;
    else if (fd >= 0)
      close(fd);
    return;
  }
  if (fd >= 0) close(fd);   /* no other record carries one */
  if (id == WIRE_SHADOW_PARKED) {   /* a parked shadow ended before any job */
    if (b[0] == WIRE_REC_EXITED && X->parked.pid) {
      dlog(D, "the shadow parked at a failure (pid %d) ended", (int)X->parked.pid);
      if (X->parked.pidfd >= 0) close(X->parked.pidfd);
      X->parked.pid = 0;
      X->parked.pidfd = -1;
      X->parked.incident = 0;
    }
    return;   /* (one just given a job: the worker's answer says it took none) */
  }
  DShadow *s = find(X, id);
  if (!s) return;   /* a verification already answered and reaped, or none */
  const unsigned char *p = b + WIRE_RECORD_HEAD;
  size_t k = n - WIRE_RECORD_HEAD;
  if (b[0] == WIRE_REC_DATA || b[0] == WIRE_REC_END) {
    if (s->state == SH_ANSWERED) return;
    if (s->len + k > REPORT_MAX) {
      answer(D, s, NULL, "the shadow's report is larger than 32 MiB");
      kill_it(s);
      return;
    }
    if (s->len + k > s->cap) {
      size_t cap = s->cap ? s->cap : 65536;
      while (cap < s->len + k) cap *= 2;
      char *t = realloc(s->text, cap);
      if (!t) {
        answer(D, s, NULL, "the kernel is out of memory for the shadow's report");
        return;
      }
      s->text = t;
      s->cap = cap;
    }
    memcpy(s->text + s->len, p, k);
    s->len += k;
    if (b[0] == WIRE_REC_END) reported(D, s);
  } else if (b[0] == WIRE_REC_EXITED && k == 4) {
    int st = (int)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
    if (X->forking == s) {   /* its shadowed frame is still to be read (and its pid checked) */
      s->exited = 1;
      s->status = st;
      return;
    }
    if (s->state != SH_ANSWERED) ended(D, s, st);
    shadow_free(D, s);
  }
}

/* Read every record the report socket holds now. */
static void drain(Daemon *D) {
  int fd = D->live.w.report;
  unsigned char buf[WIRE_RECORD_MAX + 1];   /* (one more: a longer one is no record) */
  while (fd >= 0) {
    union { struct cmsghdr h; char b[CMSG_SPACE(4 * sizeof(int))]; } ctl;
    struct iovec iov = {buf, sizeof buf};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
    ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    int got = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < k; i++) {
        int x;
        memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof x);
        if (got < 0) got = x;
        else close(x);   /* one descriptor a record, at most */
      }
    }
    if (mh.msg_flags & MSG_TRUNC) {   /* longer than any record: not one */
      if (got >= 0) close(got);
      continue;
    }
    on_record(D, buf, (size_t)n, got);
    fd = D->live.w.report;   /* (a record's consequences may end the worker) */
  }
}

static void report_ready(void *ud, int fd, unsigned r) {
  (void)fd, (void)r;
  drain(ud);
}

/* ---------------------------------------------------------- the gate */

/* A clone held at the gate: let through when a "shadow" frame asked for
** one (once), else refused, and the worker killed (it made a process the
** kernel did not ask for: a granted library, or a bug). */
static void listener_ready(void *ud, int fd, unsigned r) {
  Daemon *D = ud;
  Shadows *X = &D->shadows;
  struct seccomp_notif req;
  memset(&req, 0, sizeof req);
  if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
    if ((r & DPOLL_HUP) || (errno != EINTR && errno != ENOENT && errno != EAGAIN)) {
      /* the worker is gone (its filter with it) */
      dpoll_del(D->poll, fd);
      close(fd);
      X->listener = -1;
    }
    return;
  }
  struct seccomp_notif_resp resp;
  memset(&resp, 0, sizeof resp);
  resp.id = req.id;
  int allow = X->permit && X->forking;
  int park = !allow && !X->forking && X->park_asks > 0 && !X->park_cloned && !X->parked.pid;
  if (allow || park) {
    if (allow) X->permit = 0;
    else X->park_cloned = 1;   /* one copy for the calls out that were asked to park */
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;   /* the flags were checked by the filter: fork's */
  } else {
    resp.error = -EPERM;
  }
  ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);   /* (ENOENT: the thread died meanwhile) */
  if (!allow && !park) {
    char why[120];
    snprintf(why, sizeof why, "thread %u tried to start a process (clone %s refused)", (unsigned)req.pid,
             X->forking ? "a second time for one shadow:" : X->park_cloned ? "a second time for one park:"
                                                                         : "without a shadow asked for:");
    dvouch_process(D, why);
  }
}

int dshadow_watch(Daemon *D) {
  if (D->live.w.report < 0) return 0;
  return dpoll_add(D->poll, D->live.w.report, DPOLL_IN, RANK_WORKER_ERR, report_ready, D);
}

void dshadow_started(Daemon *D) {
  drain(D);
  if (D->shadows.listener < 0)   /* those waiting would wait for ever */
    fail_queued(D, NO_GATE);
}

void dshadow_unwatch(Daemon *D) {
  Shadows *X = &D->shadows;
  if (D->live.w.report >= 0) dpoll_del(D->poll, D->live.w.report);
  if (X->listener >= 0) {
    dpoll_del(D->poll, X->listener);
    close(X->listener);
    X->listener = -1;
  }
  X->permit = 0;
  X->park_asks = X->park_cloned = 0;
}

void dshadow_worker_gone(Daemon *D, const char *how) {
  Shadows *X = &D->shadows;
  drain(D);   /* reports made whole before it died are answered with */
  char why[300];
  snprintf(why, sizeof why, "the worker %s: its shadow ended with it", how);
  for (DShadow *s = X->first, *next; s; s = next) {
    next = s->next;
    if (!s->sent) continue;   /* queued: for the next worker */
    kill_it(s);   /* (its parent-death signal too) */
    if (s->state != SH_ANSWERED) answer(D, s, NULL, why);
    shadow_free(D, s);
  }
  X->forking = NULL;
  X->permit = 0;
  X->running = 0;
  X->park_asks = X->park_cloned = 0;
  if (X->park_fd >= 0) close(X->park_fd);
  X->park_fd = -1;
  if (X->parked.pidfd >= 0) close(X->parked.pidfd);   /* (its parent-death signal killed it) */
  X->parked.pid = 0;
  X->parked.pidfd = -1;
  X->parked.incident = 0;
}

void dshadow_stop(Daemon *D) {
  Shadows *X = &D->shadows;
  fail_queued(D, "the kernel is shutting down");
  int any = X->parked.pid != 0;
  dshadow_park_release(D, 0);
  for (DShadow *s = X->first; s; s = s->next) {
    kill_it(s);
    if (s->state != SH_ANSWERED) answer(D, s, NULL, "the kernel is shutting down: the shadow was killed");
    any = 1;
  }
  /* the worker reaps them (an X record each): then none is left behind */
  double until = daemon_now() + 2;
  while (any && (X->first || X->parked.pid) && D->live.w.report >= 0 && daemon_now() < until) {
    struct pollfd p = {D->live.w.report, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) drain(D);
  }
  while (X->first) shadow_free(D, X->first);
  X->running = 0;
}

void dshadow_check(Daemon *D) {
  const Shadows *X = &D->shadows;
  int sent = 0, forking = 0;
  for (const DShadow *s = X->first; s; s = s->next) {
    sent += s->sent;
    forking += X->forking == s;   /* (its report may have come first: answered, still forking) */
    DAEMON_ASSERT(s->state != SH_FORKING || X->forking == s);
    DAEMON_ASSERT(X->forking != s || s->sent);
  }
  DAEMON_ASSERT(sent == X->running);
  for (const DShadow *s = X->first; s; s = s->next) DAEMON_ASSERT(s->sent == (s->state != SH_QUEUED) || s->state == SH_ANSWERED);
  DAEMON_ASSERT(slots_taken(X) <= WIRE_SHADOWS_MAX);
  DAEMON_ASSERT(X->park_asks >= 0);
  DAEMON_ASSERT(!X->parked.pid == (X->parked.incident == 0) || X->parked.pidfd < 0);
  DAEMON_ASSERT((D->live.wait == W_SHADOW) == (X->forking != NULL));
  DAEMON_ASSERT(forking == (X->forking != NULL));
  DAEMON_ASSERT(!X->permit || X->forking);
}

/* ------------------------------------------------------------ parked ones */

int dshadow_park_asks(Daemon *D) {
  const Shadows *X = &D->shadows;
  if (X->listener < 0 || X->parked.pid || X->park_cloned || D->stopping || slots_taken(X) >= WIRE_SHADOWS_MAX)
    return 0;
  for (size_t i = 0; i < D->nrepair_rules; i++)
    if (D->repair_rules[i].mode == STORE_REPAIR_PAUSE) return REQUEST_NOTE_PARK;
  return 0;
}

int dshadow_park_vouch(Daemon *D, json_t *m, vouch_Fail *f) {
  Shadows *X = &D->shadows;
  pid_t pid = (pid_t)json_integer_value(json_object_get(m, "parked"));
  if (pid <= 0) return 0;
  if (X->park_fd >= 0) close(X->park_fd);
  X->park_fd = -1;
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return 0;   /* gone already (its X record said so, or will): nothing to hold */
  if (parent_of(pid) != D->live.w.pid || syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) != 0) {
    close(fd);
    f->rule = VOUCH_PROCESS;
    snprintf(f->detail, sizeof f->detail, "parked names pid %d, which is not the worker's child", (int)pid);
    return -1;
  }
  X->park_fd = fd;
  return 0;
}

void dshadow_park_outcome(Daemon *D, json_t *m, uint64_t incident) {
  Shadows *X = &D->shadows;
  if (X->park_asks > 0 && --X->park_asks == 0 && !json_object_get(m, "parked")) X->park_cloned = 0;
  pid_t pid = (pid_t)json_integer_value(json_object_get(m, "parked"));
  int fd = X->park_fd;
  X->park_fd = -1;
  if (pid <= 0) return;
  X->park_cloned = 0;
  if (fd < 0) return;   /* it was gone when its outcome came */
  if (!incident || X->parked.pid) {   /* nobody waits: it would wait for nothing */
    syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
    close(fd);
    return;
  }
  X->parked.pid = pid;
  X->parked.pidfd = fd;
  X->parked.incident = incident;
  dlog(D, "incident %" PRIu64 ": a shadow parked at the failure (pid %d) waits for the verification", incident,
       (int)pid);
}

void dshadow_park_release(Daemon *D, uint64_t incident) {
  Shadows *X = &D->shadows;
  if (!X->parked.pid || X->parked.pidfd < 0 || (incident && X->parked.incident != incident)) return;
  syscall(SYS_pidfd_send_signal, X->parked.pidfd, SIGKILL, NULL, 0);
  close(X->parked.pidfd);
  X->parked.pidfd = -1;   /* its slot stays taken until the worker reaps it (its X record) */
  X->parked.incident = 0;
}
