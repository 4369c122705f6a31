/*
** workerproc.c — a sandboxed worker started from a revision (workerproc.h):
** the process, its start-up frames straight from the store, and a
** synchronous conversation for the callers that have nothing else to do
** meanwhile (the store commands; the daemon writes the same frames from its
** poll loop).
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "workerproc.h"

#define IMPORT_BATCH_BYTES ((size_t)4 << 20)
/* Seconds a synchronous caller waits for a worker that neither reads nor
** writes its socket (the socket's own timeouts say the same). */
#define WPROC_TIMEOUT 120

#define IMPORT_BATCH_ENTRIES 20000

/* ------------------------------------------------------------- process */

/* The progress page (worker.h): a memfd sealed at its size, mapped here,
** its descriptor at least 10 (clear of the ones the child sets up).  -1
** when it cannot be made: the worker then holds no outcome back. */
static int progress_page(wproc *w) {
  int fd = memfd_create("jiti-worker-progress", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  int hi = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  void *p = MAP_FAILED;
  if (hi >= 0 && ftruncate(hi, (off_t)WORKER_PROGRESS_SIZE) == 0 &&
      fcntl(hi, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    p = mmap(NULL, WORKER_PROGRESS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, hi, 0);
  if (p == MAP_FAILED) {
    if (hi >= 0) close(hi);
    return -1;
  }
  w->progress = p;
  return hi;
}

static void progress_unmap(wproc *w) {
  if (w->progress) munmap((void *)w->progress, WORKER_PROGRESS_SIZE);
  w->progress = NULL;
  w->outcomes_seen = 0;
}

uint64_t wproc_outcomes_unseen(const wproc *w) {
  if (!w->progress) return 0;
  uint64_t made = __atomic_load_n(&w->progress->outcomes, __ATOMIC_ACQUIRE);
  return made > w->outcomes_seen ? made - w->outcomes_seen : 0;
}

/* The variables of this process's environment that WPROC_ENV lets through
** (pointers into environ), NULL-terminated in envp (cap entries). */
static void worker_env(const char **envp, size_t cap) {
  static const char *const keep[] = {WPROC_ENV};
  size_t n = 0;
  for (char **e = environ; e && *e && n + 1 < cap; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    size_t len = (size_t)(eq - *e);
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
      size_t kl = strlen(keep[k]);
      int prefix = kl && keep[k][kl - 1] == '*';
      if (prefix ? len >= kl - 1 && !strncmp(*e, keep[k], kl - 1) : len == kl && !strncmp(*e, keep[k], kl)) {
        envp[n++] = *e;
        break;
      }
    }
  }
  envp[n] = NULL;
}

/* The worker's stderr: a pipe, both ends non-blocking (a worker whose
** reader falls behind loses lines rather than waits), the write end at 10
** or above (clear of the descriptors the child sets up).  0, or -1. */
static int stderr_pipe(int *rd, int *wr) {
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  int hi = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
  close(p[1]);
  if (hi < 0) {
    close(p[0]);
    return -1;
  }
  *rd = p[0];
  *wr = hi;
  return 0;
}

/* The report socket: a SOCK_SEQPACKET pair (records whole or not at all),
** the kernel's end non-blocking, the worker's at 10 or above (clear of the
** descriptors the child sets up).  0, or -1. */
static int report_pair(int *mine, int *theirs) {
  int p[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) != 0) return -1;
  int hi = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
  close(p[1]);
  if (hi < 0 || fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK) != 0) {
    close(p[0]);
    if (hi >= 0) close(hi);
    return -1;
  }
  *mine = p[0];
  *theirs = hi;
  return 0;
}

int wproc_spawn(wproc *w, const grant_List *grant, int report, char *err, size_t errlen) {
  int sv[2], ew, rw = -1;
  /* argv and the environment before the fork: the child only execs */
  const char *argv[3 + 2 * GRANT_MAX] = {"jiti", "__worker"};
  size_t argc = 2;
  for (size_t k = 0; grant && k < grant->n; k++) {
    argv[argc++] = "--allow-foreign";
    argv[argc++] = grant->lib[k];
  }
  argv[argc] = NULL;
  const char *envp[64];
  worker_env(envp, sizeof envp / sizeof envp[0]);
  memset(w, 0, sizeof *w);
  w->fd = w->err.fd = w->report = -1;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, errlen, "socketpair: %s", strerror(errno));
    return -1;
  }
  if (stderr_pipe(&w->err.fd, &ew) != 0) {
    snprintf(err, errlen, "a pipe for the worker's stderr: %s", strerror(errno));
    close(sv[0]); close(sv[1]);
    return -1;
  }
  if (report && report_pair(&w->report, &rw) != 0) {
    snprintf(err, errlen, "a socket for the worker's reports: %s", strerror(errno));
    close(sv[0]); close(sv[1]);
    close(w->err.fd); close(ew);
    w->err.fd = -1;
    return -1;
  }
  int pfd = progress_page(w);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(sv[0]); close(sv[1]);
    close(w->err.fd); close(ew);
    w->err.fd = -1;
    if (pfd >= 0) close(pfd);
    if (rw >= 0) { close(rw); close(w->report); w->report = -1; }
    progress_unmap(w);
    return -1;
  }
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (sv[1] != WORKER_FD) {
      if (dup2(sv[1], WORKER_FD) < 0) _exit(127);
    } else {
      fcntl(WORKER_FD, F_SETFD, 0);
    }
    if (pfd >= 0 && dup2(pfd, WORKER_PROGRESS_FD) < 0) _exit(127);
    if (rw >= 0 && dup2(rw, WORKER_REPORT_FD) < 0) _exit(127);
    if (dup2(ew, 2) < 0) _exit(127);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) { dup2(devnull, 0); dup2(devnull, 1); if (devnull > WORKER_FD) close(devnull); }
    execve("/proc/self/exe", (char *const *)argv, (char *const *)envp);
    _exit(127);
  }
  close(sv[1]);
  close(ew);
  if (pfd >= 0) close(pfd);
  if (rw >= 0) close(rw);
  w->fd = sv[0];
  w->pid = pid;
  w->err.pid = (int)pid;
  struct timeval tv = {WPROC_TIMEOUT, 0};
  setsockopt(w->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(w->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return 0;
}

void wproc_describe(int st, char *buf, size_t n) {
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    snprintf(buf, n, "killed by signal %d (%s)%s", sig, strsignal(sig),
             sig == SIGSYS ? ": a forbidden system call (seccomp)"
             : sig == SIGXCPU ? ": CPU time limit" : "");
  } else if (WIFEXITED(st)) {
    snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
  } else {
    snprintf(buf, n, "ended (status %d)", st);
  }
}

/* ---------------------------------------------------- start-up frames */

/* A map's entries, gathered into "import" frames as the store hands them
** out. */
typedef struct Batch {
  unsigned char **buf;
  size_t *len, *cap;
  json_t *entries;
  unsigned char *blob;
  size_t blen, bcap, count;
  int bad;
} Batch;

static int frame(Batch *b, json_t *m, const void *blob, size_t len) {
  int rc = m ? wire_frame(m, blob, len, b->buf, b->len, b->cap) : -1;
  json_decref(m);
  return rc;
}

static int batch_flush(Batch *b) {
  if (!json_array_size(b->entries)) return 0;
  int rc = frame(b, json_pack("{s:s, s:O}", "op", wire_op_name(WIRE_IMPORT), "entries", b->entries), b->blob,
                 b->blen);
  json_array_clear(b->entries);
  b->blen = 0;
  return rc;
}

static int batch_entry(void *arg, const store_entry *e, const uint8_t hash[32]) {
  Batch *b = arg;
  (void)hash;
  if (b->blen + e->len > b->bcap) {
    size_t cap = b->bcap ? b->bcap : 65536;
    while (cap < b->blen + e->len) cap *= 2;
    unsigned char *p = realloc(b->blob, cap);
    if (!p) return b->bad = 1;
    b->blob = p;
    b->bcap = cap;
  }
  memcpy(b->blob + b->blen, e->bytes, e->len);
  b->blen += e->len;
  b->count++;
  json_array_append_new(b->entries, json_pack("{s:s, s:s, s:I}", "kind",
                                              jiti_entry_kind_name((jiti_EntryKind)storeio_kernel_kind(e->kind)),
                                              "name", e->name, "len", (json_int_t)e->len));
  if (b->blen >= IMPORT_BATCH_BYTES || json_array_size(b->entries) >= IMPORT_BATCH_ENTRIES)
    b->bad = batch_flush(b);
  return b->bad;
}

int wproc_frames(store_env *s, const wproc_Plan *p, unsigned char **buf, size_t *len, size_t *cap,
                 size_t *nentries, char *err, size_t errlen) {
  Batch b = {buf, len, cap, json_array(), NULL, 0, 0, 0, 0};
  limits_Table L;
  limits_default(&L);
  json_t *init = json_pack("{s:s, s:I, s:I, s:o}", "op", wire_op_name(WIRE_INIT), "base", (json_int_t)p->base,
                           "revision", (json_int_t)p->shown, "limits", limits_json(p->limits ? p->limits : &L.eval));
  if (init && p->stack > 1) json_object_set_new(init, "stack", json_integer(p->stack));
  if (init && p->entry_max) json_object_set_new(init, "entry_max", json_integer((json_int_t)p->entry_max));
  b.bad = !b.entries || frame(&b, init, NULL, 0);
  int kinds[JITI_ENTRY_KIND_COUNT], rc = STORE_OK;
  size_t nk = storeio_import_kinds(p->current_invariants ? STOREIO_IMPORT_NO_INVARIANTS : STOREIO_IMPORT_ALL,
                                   kinds);
  if (!b.bad) rc = store_map_foreach_kinds(s, p->rev, kinds, nk, NULL, batch_entry, &b);
  if (!b.bad && rc == STORE_OK && p->current_invariants) {
    nk = storeio_import_kinds(STOREIO_IMPORT_ONLY_INVARIANTS, kinds);
    rc = store_map_foreach_kinds(s, STORE_REV_CURRENT, kinds, nk, NULL, batch_entry, &b);
  }
  if (!b.bad && rc == STORE_OK) b.bad = batch_flush(&b);
  if (!b.bad && rc == STORE_OK) b.bad = frame(&b, json_pack("{s:s}", "op", wire_op_name(WIRE_START)), NULL, 0);
  json_decref(b.entries);
  free(b.blob);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "cannot read the revision's entries: %s", store_errmsg(s));
    return -1;
  }
  if (b.bad) {
    snprintf(err, errlen, "out of memory preparing the worker's start-up");
    return -1;
  }
  if (nentries) *nentries = b.count;
  return 0;
}

/* ------------------------------------------------------- conversation */

int wproc_send(wproc *w, json_t *msg, const void *blob, size_t len) {
  int rc = w->fd >= 0 && msg ? wire_send(w->fd, msg, blob, len) : -1;
  json_decref(msg);
  return rc;
}

int wproc_send_text(wproc *w, const char *json, size_t n) {
  return w->fd >= 0 ? wire_send_text(w->fd, json, n, NULL, 0) : -1;
}

/* Wait until the socket is ready for `events` (POLLIN, POLLOUT) or the
** deadline passes, passing on the worker's stderr meanwhile: a worker never
** waits for its stderr to be read (its end does not block), but what it
** writes is shown while the caller waits for it.  1 ready, 0 timed out. */
static int await(wproc *w, short events, double deadline) {
  for (;;) {
    struct pollfd p[2] = {{w->fd, events, 0}, {w->err.fd, POLLIN, 0}};
    double now = mono_now(), wait = deadline - now, due = wproc_err_due(w);
    if (wait <= 0) return 0;
    if (due >= 0 && due < wait) wait = due;
    int n = poll(p, w->err.fd >= 0 ? 2 : 1, (int)(wait * 1000) + 1);
    if (n < 0 && errno != EINTR) return 1;  /* let the read or write say what is wrong */
    if (n > 0 && w->err.fd >= 0 && p[1].revents) wproc_err_read(w);
    wproc_err_tick(w);
    if (n > 0 && p[0].revents) return 1;
  }
}

/* The worker is gone (or must go): reap it and say how it ended. */
static void reap(wproc *w, char *err, size_t errlen) {
  int st = 0;
  if (w->pid) {
    if (waitpid(w->pid, &st, WNOHANG) == 0) {
      kill(w->pid, SIGKILL);
      while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {}
    }
    char how[160];
    wproc_describe(st, how, sizeof how);
    snprintf(err, errlen, "the worker %s", how);
  }
  wproc_err_close(w);
  if (w->fd >= 0) close(w->fd);
  if (w->report >= 0) close(w->report);
  wire_reader_reset(&w->rd);
  progress_unmap(w);
  w->fd = w->report = -1;
  w->pid = 0;
}

int wproc_recv(wproc *w, json_t **msg, unsigned char **blob, size_t *bloblen, char *err, size_t errlen) {
  char why[256];
  *msg = NULL;
  if (w->fd < 0) {
    snprintf(err, errlen, "the worker is gone");
    return -1;
  }
  /* as wire_recv, with the worker's stderr read while it waits; a worker
  ** silent for WPROC_TIMEOUT seconds is given up */
  double deadline = mono_now() + WPROC_TIMEOUT;
  for (;;) {
    int got = wire_next(&w->rd, msg, blob, bloblen, why, sizeof why);
    if (got > 0) return 0;
    if (got < 0 || !await(w, POLLIN, deadline)) break;
    ssize_t k = wire_fill(w->fd, &w->rd);
    if (k <= 0) break;
    deadline = mono_now() + WPROC_TIMEOUT;
  }
  reap(w, err, errlen);
  return -1;
}

int wproc_start(wproc *w, store_env *s, const wproc_Plan *plan, json_t **ready, char *err, size_t errlen) {
  unsigned char *buf = NULL;
  size_t len = 0, cap = 0;
  *ready = NULL;
  if (wproc_spawn(w, plan->grant, 0, err, errlen) != 0) return -1;
  if (wproc_frames(s, plan, &buf, &len, &cap, NULL, err, errlen) != 0) {
    free(buf);
    wproc_stop(w, 1);
    return -1;
  }
  /* The worker reads its frames while it imports; a world larger than the
  ** socket buffer is written as it reads. */
  size_t off = 0;
  double deadline = mono_now() + WPROC_TIMEOUT;
  while (off < len && await(w, POLLOUT, deadline)) {
    ssize_t k = send(w->fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) break;
    off += (size_t)k;
    deadline = mono_now() + WPROC_TIMEOUT;
  }
  free(buf);
  json_t *m;
  if (wproc_recv(w, &m, NULL, NULL, err, errlen) != 0) return -1;
  if (wire_event_of(m) != WIRE_READY) {
    json_t *why = json_object_get(m, "message");   /* the worker's: escaped */
    if (json_is_string(why)) vouch_escape(json_string_value(why), json_string_length(why), err, errlen);
    else snprintf(err, errlen, "the worker did not start");
    json_decref(m);
    wproc_stop(w, 1);
    return -1;
  }
  *ready = m;
  return 0;
}

void wproc_stop(wproc *w, int now) {
  if (w->fd >= 0 && !now) wproc_send(w, wframe_exit(), NULL, 0);
  if (w->pid) {
    int st;
    if (now) kill(w->pid, SIGKILL);
    for (int i = 0; i < 100 && waitpid(w->pid, &st, WNOHANG) == 0; i++) usleep(20000);
    if (waitpid(w->pid, &st, WNOHANG) == 0) {
      kill(w->pid, SIGKILL);
      while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {}
    }
  }
  wproc_err_close(w);
  if (w->fd >= 0) close(w->fd);
  if (w->report >= 0) close(w->report);
  wire_reader_reset(&w->rd);
  progress_unmap(w);
  w->fd = w->report = -1;
  w->pid = 0;
}
