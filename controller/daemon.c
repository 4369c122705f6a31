/*
** daemon.c — `jiti kernel --store DIR`: the kernel daemon (DESIGN.md
** sections 2, 4, 5; docs/protocol.md).
**
** One process per store.  It holds the store's write lock for its whole
** life, recovers CURRENT, starts one sandboxed worker (`jiti __worker`,
** connected by a socketpair) and streams CURRENT's entries to it, then
** serves newline-delimited JSON requests on DIR/kernel.sock with one
** poll() loop.  Transactions (call, act evaluate) are serialized in arrival
** order; while one is paused, commands (act evaluate/resume/abort) go to
** it, observe still answers, other transactions wait.  The kernel publishes
** every accepted attempt to the store before it tells the worker to commit;
** a failed publish tells it to restore.  If the worker dies, the running
** transaction is marked interrupted and a fresh worker starts from CURRENT.
**
** Generations seen by clients only grow: each worker counts from a base the
** kernel gives it (CURRENT's recorded generation at start, one past the last
** generation seen when a worker is replaced).
**
** This file: options, start-up, the poll loop and shutdown; kd.h lists the
** other parts.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "kd.h"
#include "kproto.h"
#include "worker.h"

/* ------------------------------------------------------------ helpers */

double kd_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Log lines are buffered.  kd_log's are written before the loop next
** waits; kd_log_soon's (the line per finished transaction) wait for the
** next write of the events (kd_events_written, at most 10 ms later), so a
** stream of calls costs a write per group commit, not one per call. */
static void log_line(Kernel *K, int urgent, const char *fmt, va_list ap) {
  char when[40];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  cli_iso_time((int64_t)ts.tv_sec * 1000, when, sizeof when);
  char line[2048];
  int n = snprintf(line, sizeof line, "%s jiti kernel: ", when);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m : sizeof line - (size_t)n - 2);
  line[len++] = '\n';
  if (K->log.len + len > K->log.cap) {
    size_t cap = K->log.cap ? K->log.cap * 2 : 16384;
    while (cap < K->log.len + len) cap *= 2;
    char *p = realloc(K->log.buf, cap);
    if (!p) { kd_log_flush(K); (void)!write(2, line, len); return; }
    K->log.buf = p;
    K->log.cap = cap;
  }
  memcpy(K->log.buf + K->log.len, line, len);
  K->log.len += len;
  K->log.urgent |= urgent;
  if (K->log.len >= 65536) kd_log_flush(K);
}

void kd_log(Kernel *K, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(K, 1, fmt, ap);
  va_end(ap);
}

void kd_log_soon(Kernel *K, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line(K, 0, fmt, ap);
  va_end(ap);
}

void kd_log_flush(Kernel *K) {
  size_t off = 0;
  while (off < K->log.len) {
    ssize_t w = write(2, K->log.buf + off, K->log.len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  /* nowhere to log: drop it */
    off += (size_t)w;
  }
  K->log.len = 0;
  K->log.urgent = 0;
}

/* First line of s, at most n characters, for logs. */
void kd_snippet(const char *s, char *buf, size_t n) {
  size_t j = 0;
  for (size_t i = 0; s && s[i] && j + 4 < n; i++) buf[j++] = (s[i] == '\n' || s[i] == '\t') ? ' ' : s[i];
  if (s && strlen(s) > j) { buf[j++] = '.'; buf[j++] = '.'; buf[j++] = '.'; }
  buf[j] = 0;
}


void kd_begin_shutdown(Kernel *K, const char *why) {
  if (K->stopping) return;
  K->stopping = 1;
  K->stop_deadline = kd_now() + 10;
  kd_log(K, "shutting down (%s)", why);
  if (K->lfd >= 0) { close(K->lfd); K->lfd = -1; unlink(K->sock); }
  while (K->txq.n) {
    Pending p = kd_pop(&K->txq);
    kd_reply_err(K, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
    kd_pending_free(&p);
  }
  kd_fail_commands(K, "shutting-down", "the kernel is shutting down; the pause is aborted");
}

static volatile sig_atomic_t got_term;
static void on_term(int sig) { (void)sig; got_term = 1; }


/* ------------------------------------------------------------- main */

static void usage(FILE *out) {
  fprintf(out,
          "usage: jiti kernel [--store DIR] [--pause-timeout SECONDS] [--detach]\n"
          "\n"
          "Run the kernel daemon of a store: recover CURRENT (creating the store with an\n"
          "initial, empty revision if there is none), start the sandboxed worker and serve\n"
          "clients on DIR/kernel.sock (newline-delimited JSON, docs/protocol.md).  One line\n"
          "per transaction is logged on stderr.  SIGTERM or 'jiti stop' shuts it down\n"
          "cleanly (a paused transaction is aborted and restored first).\n"
          "\n"
          "options:\n"
          "  --store DIR              the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --pause-timeout SECONDS  abort a pause nobody answers after this long (default 120)\n"
          "  --detach                 run in the background: log to DIR/kernel.log, pid in\n"
          "                           DIR/kernel.pid; returns once the kernel serves\n"
          "  -h, --help               show this help\n"
          "\n"
          "Exit status: 0 after a clean shutdown; 1 when the store cannot be opened (for\n"
          "example another kernel holds it), is damaged, or the worker cannot start; 2 usage.\n");
}

static int kernel_run(Kernel *K, int ready_fd) {
  char err[1024] = "";
  int rc = store_open(K->dir, 0, &K->s, err, sizeof err);
  if (rc == STORE_EBUSY) {
    fprintf(stderr, "jiti kernel: the store at %s is in use: %s\nif a kernel is running there, "
            "talk to it (jiti status --store %s) or stop it (jiti stop --store %s)\n",
            K->dir, err, K->dir, K->dir);
    return EXIT_FAIL;
  }
  if (rc != STORE_OK) {
    fprintf(stderr, "jiti kernel: cannot open the store at %s: %s\n", K->dir, err[0] ? err : store_strerror(rc));
    return EXIT_FAIL;
  }
  uint64_t cur = 0;
  if (store_current(K->s, &cur) != STORE_OK) {
    fprintf(stderr, "jiti kernel: %s\n", store_errmsg(K->s));
    return EXIT_FAIL;
  }
  if (cur == 0) {
    store_rev_info info = {STORE_REV_INITIAL, 1, 0, JITI_VERSION, "initial: an empty world", NULL};
    if (store_publish(K->s, 0, &info, NULL, 0, NULL, 0, &cur) != STORE_OK) {
      fprintf(stderr, "jiti kernel: cannot create the initial revision: %s\n", store_errmsg(K->s));
      return EXIT_FAIL;
    }
  }
  if (store_verify(K->s, 0, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "jiti kernel: the store at %s is damaged: %s\nrun 'jiti recover-session --store %s' "
            "for details; the kernel did not start\n", K->dir, err, K->dir);
    return EXIT_FAIL;
  }
  if (K->detached) {  /* from here on, messages go to DIR/kernel.log */
    char logpath[4096];
    snprintf(logpath, sizeof logpath, "%s/%s", K->dir, KPROTO_LOG);
    int lf = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (lf >= 0) { dup2(lf, 2); close(lf); }
  }
  K->revision = cur;
  /* past every generation ever handed out for this store (by an earlier
  ** kernel, killed or not, or an offline command) */
  if (store_generation(K->s, &K->gen_saved) != STORE_OK) {
    fprintf(stderr, "jiti kernel: %s\n", store_errmsg(K->s));
    return EXIT_FAIL;
  }
  K->base = K->gen_saved + 1;
  uint64_t interrupted = 0;
  store_mark_interrupted(K->s, &interrupted);
  K->next_attempt = cli_next_attempt(K->s);
  if (kproto_socket_path(K->dir, K->sock, sizeof K->sock)) {
    fprintf(stderr, "jiti kernel: the socket path %s/%s is too long for a Unix socket; use a shorter "
            "store path\n", K->dir, KPROTO_SOCKET);
    return EXIT_FAIL;
  }
  snprintf(K->pidfile, sizeof K->pidfile, "%s/%s", K->dir, KPROTO_PIDFILE);
  K->wfd = -1;
  if (kd_start_worker(K) != 0) {
    kd_log_flush(K);
    return EXIT_FAIL;
  }
  K->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  /* we hold the store's lock: a socket left behind is stale */
  unlink(K->sock);
  K->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, K->sock, strlen(K->sock) + 1);  /* fits: checked above */
  mode_t old = umask(0177);
  int b = K->lfd >= 0 ? bind(K->lfd, (struct sockaddr *)&a, sizeof a) : -1;
  umask(old);
  if (b != 0 || chmod(K->sock, 0600) != 0 || listen(K->lfd, 128) != 0) {
    fprintf(stderr, "jiti kernel: cannot listen on %s: %s\n", K->sock, strerror(errno));
    kill(K->wpid, SIGKILL);
    return EXIT_FAIL;
  }
  kd_event(K, json_pack("{s:s, s:i, s:I, s:I, s:I}", "event", "kernel-started", "pid", (int)getpid(),
                      "revision", (json_int_t)K->revision, "generation", (json_int_t)K->gen,
                      "interrupted", (json_int_t)interrupted));
  kd_events_flush(K);
  kd_log(K, "serving the store at %s on %s (pid %d, revision %" PRIu64 ", generation %" PRIu64
        ", %" PRIu64 " interrupted attempt%s marked)", K->dir, K->sock, (int)getpid(), K->revision, K->gen,
        interrupted, interrupted == 1 ? "" : "s");
  kd_log_flush(K);  /* before `--detach` says ready: the line is its output */
  if (K->detached) {
    FILE *f = fopen(K->pidfile, "w");
    if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
  }
  if (ready_fd >= 0) {
    (void)!write(ready_fd, "ok", 2);
    close(ready_fd);
  }
  K->started = kd_now();

  sigset_t none;
  sigemptyset(&none);
  struct pollfd *pfd = malloc((KD_MAX_CLIENTS + 2) * sizeof *pfd);
  for (;;) {
    if (got_term && !K->stopping) kd_begin_shutdown(K, "SIGTERM");
    kd_pump(K);
    double now = kd_now();
    if (K->in_pause && K->wait == W_NONE && K->cur.active && now >= K->cur.deadline && !K->cur.timed_out) {
      K->cur.timed_out = 1;
      char why[80];
      snprintf(why, sizeof why, "the pause timed out after %g s", K->pause_timeout);
      kd_abort_pause(K, why);
      continue;
    }
    if (K->wait == W_START && now > K->start_deadline) {
      kd_log(K, "the worker did not start within 120 s; killing it");
      kill(K->wpid, SIGKILL);  /* its EOF ends the start */
      K->start_deadline = now + 3600;
    }
    if (K->restart_at && now >= K->restart_at) kd_restart_worker(K);
    if (K->stopping && (K->wait == W_NONE || K->wait == W_START) && !K->in_pause && !K->cur.active) break;
    if (K->stopping && now >= K->stop_deadline) {
      kd_log(K, "the worker did not finish within 10 s; killing it");
      if (K->wpid) kill(K->wpid, SIGKILL);
      if (K->wfd >= 0) kd_worker_died(K);
      break;
    }
    if (K->stopping && K->wfd < 0) break;
    int n = 0;
    if (K->lfd >= 0) pfd[n++] = (struct pollfd){K->lfd, POLLIN, 0};
    int wi = -1;
    if (K->wfd >= 0) {
      wi = n;
      pfd[n++] = (struct pollfd){K->wfd, POLLIN | (K->wout.len > K->wout.off ? POLLOUT : 0), 0};
    }
    int c0 = n;
    for (int i = 0; i < K->nclients; i++) {
      Client *c = K->clients[i];
      short ev = c->closing ? 0 : POLLIN;
      if (c->outlen > c->outoff) ev |= POLLOUT;
      pfd[n++] = (struct pollfd){c->fd, ev, 0};
    }
    double wake = 3600;
    if (K->in_pause && K->wait == W_NONE && K->cur.active && !K->cur.timed_out) wake = K->cur.deadline - now;
    if (K->stopping && K->stop_deadline - now < wake) wake = K->stop_deadline - now;
    if (K->restart_at && K->restart_at - now < wake) wake = K->restart_at - now;
    if (K->wait == W_START && K->start_deadline - now < wake) wake = K->start_deadline - now;
    double due = kd_events_due(K);
    if (due == 0) {
      kd_events_flush(K);
    } else if (due > 0 && due < wake) {
      wake = due;
    }
    if (wake < 0) wake = 0;
    struct timespec ts = {(time_t)wake, (long)((wake - (double)(time_t)wake) * 1e9)};
    if (K->log.urgent || !K->events.n) kd_log_flush(K);  /* else: with the events */
    int r = ppoll(pfd, (nfds_t)n, &ts, &none);
    if (r < 0) {
      if (errno == EINTR) continue;
      kd_log(K, "poll: %s", strerror(errno));
      break;
    }
    if (wi >= 0 && (pfd[wi].revents & POLLOUT)) kd_worker_writable(K);
    if (wi >= 0 && (pfd[wi].revents & (POLLIN | POLLHUP | POLLERR))) kd_worker_readable(K);
    /* clients: match the poll entries by position (the array may shrink below) */
    int nc = K->nclients;
    Client **snap = malloc((size_t)(nc ? nc : 1) * sizeof *snap);
    memcpy(snap, K->clients, (size_t)nc * sizeof *snap);
    for (int i = 0; i < nc; i++) {
      Client *c = snap[i];
      short re = pfd[c0 + i].revents;
      if (!re) continue;
      if (re & POLLOUT) kd_client_flush(c);
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        if (c->closing) c->closing = 2;
        else kd_client_read(K, c);
      }
    }
    free(snap);
    for (int i = 0; i < K->nclients;) {
      Client *c = K->clients[i];
      if (c->closing == 2 || (c->closing == 1 && c->outlen <= c->outoff)) kd_client_free(K, i);
      else i++;
    }
    if (K->lfd >= 0 && pfd[0].revents) kd_accept(K);
  }
  free(pfd);
  /* clean shutdown */
  kd_stop_worker(K);
  kd_events_flush(K);  /* subscribers get the last outcomes before they are cut off */
  for (int i = 0; i < K->nclients; i++) {  /* best effort: deliver what is pending */
    Client *c = K->clients[i];
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    struct timeval tv = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    kd_client_flush(c);
  }
  while (K->nclients) kd_client_free(K, 0);
  if (K->lfd >= 0) { close(K->lfd); unlink(K->sock); }
  if (K->spare_fd >= 0) close(K->spare_fd);
  if (K->detached) unlink(K->pidfile);
  kd_event(K, json_pack("{s:s, s:I, s:I}", "event", "kernel-stopped", "revision", (json_int_t)K->revision,
                      "generation", (json_int_t)K->gen));
  kd_events_flush(K);
  free(K->events.ev);
  free(K->events.time_ms);
  free(K->txq.v);  /* empty by now: shutdown answered what was queued */
  free(K->queryq.v);
  free(K->cmdq.v);
  free(K->batch.v);
  kd_log(K, "stopped (revision %" PRIu64 ", generation %" PRIu64 ")", K->revision, K->gen);
  kd_log_flush(K);
  free(K->log.buf);
  store_close(K->s);
  return EXIT_OK;
}

int cmd_kernel(int argc, char **argv) {
  static Kernel K;
  memset(&K, 0, sizeof K);
  K.dir = cli_default_store();
  K.pause_timeout = 120;
  K.lfd = K.wfd = K.spare_fd = -1;
  int detach = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_store_opt("kernel", argc, argv, &i, &K.dir);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return EXIT_OK; }
    if (!strcmp(argv[i], "--detach")) { detach = 1; continue; }
    if (!strcmp(argv[i], "--pause-timeout")) {
      uint64_t v;
      if (i + 1 >= argc || !cli_parse_count(argv[i + 1], &v) || v == 0 || v > 86400 * 7) {
        fprintf(stderr, "jiti kernel: --pause-timeout needs a number of seconds from 1 to 604800\n");
        return EXIT_USAGE;
      }
      K.pause_timeout = (double)v;
      i++;
      continue;
    }
    fprintf(stderr, "jiti kernel: unknown option '%s' (see 'jiti kernel --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {0};
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, NULL);  /* delivered only inside ppoll */
  if (!detach) return kernel_run(&K, -1);

  int p[2];
  if (pipe(p) != 0) { perror("jiti kernel: pipe"); return EXIT_FAIL; }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) { perror("jiti kernel: fork"); return EXIT_FAIL; }
  if (pid > 0) {
    close(p[1]);
    char buf[4] = "";
    ssize_t n;
    while ((n = read(p[0], buf, 2)) < 0 && errno == EINTR) {}
    if (n == 2 && !memcmp(buf, "ok", 2)) {
      printf("jiti kernel: serving the store at %s (pid %d; log %s/%s; stop with 'jiti stop --store %s')\n",
             K.dir, (int)pid, K.dir, KPROTO_LOG, K.dir);
      return EXIT_OK;
    }
    int st;
    waitpid(pid, &st, 0);
    fprintf(stderr, "jiti kernel: the kernel did not start (see the messages above, or %s/%s)\n",
            K.dir, KPROTO_LOG);
    return EXIT_FAIL;
  }
  close(p[0]);
  setsid();
  K.detached = 1;
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) { dup2(devnull, 0); dup2(devnull, 1); close(devnull); }
  _exit(kernel_run(&K, p[1]));
}

int cmd_worker_internal(int argc, char **argv) {
  (void)argc; (void)argv;
  struct stat sb;
  if (fstat(WORKER_FD, &sb) != 0 || !S_ISSOCK(sb.st_mode)) {
    fprintf(stderr, "jiti __worker: internal command, started by 'jiti kernel' only\n");
    return EXIT_USAGE;
  }
  return worker_main(WORKER_FD);
}
