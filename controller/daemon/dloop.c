/*
** dloop.c — `jiti kernel --store DIR`: the kernel daemon (daemon.h,
** docs/protocol.md): options, start-up, the poll loop and shutdown.
**
** One process per store.  It holds the store's write lock for its whole
** life, recovers CURRENT, starts one sandboxed worker (`jiti __worker`,
** connected by a socketpair) and streams CURRENT's entries to it, then
** serves newline-delimited JSON requests on DIR/kernel.sock with one
** loop (dpoll.h: the listener, the worker, the store writer's eventfd and
** the clients, each registered by its part).  Transactions (call, act evaluate, ...) are serialized in
** arrival order; while one is paused, commands (act evaluate/resume/abort)
** go to it, observe still answers, other transactions wait.  The daemon
** publishes every accepted attempt to the store before it tells the worker
** to commit; a failed publish tells it to restore.  If the worker dies, the
** running transaction is marked interrupted and a fresh worker starts from
** CURRENT.
**
** Generations seen by clients only grow, across restarts too: each worker
** counts from a base the daemon gives it (one past the store's high-water
** mark at start, one past the last generation seen when a worker is
** replaced), and no generation reaches a client before the store has
** recorded it (devents.c).
**
** This file is the top of the daemon: the loop calls the other parts,
** which never call it; to stop, a part sets D->stop_why.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "daemon.h"
#include "proto.h"

static void shutdown_begin(Daemon *D, const char *why) {
  if (D->stopping) return;
  D->stopping = 1;
  D->stop_deadline = daemon_now() + 10;
  dlog(D, "shutting down (%s)", why);
  if (D->lfd >= 0) { close(D->lfd); D->lfd = -1; unlink(D->sock); }
  while (D->txq.n) {
    Pending p = dqueue_pop(&D->txq);
    if (D->fence_lost)
      dreply_err(D, p.client, p.id, "fenced", "%s; nothing ran: send it to the world's leader", D->fence_why);
    else
      dreply_err(D, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
    dqueue_pending_free(&p);
  }
  dsched_fail_commands(D, "shutting-down", "the kernel is shutting down; the pause is aborted");
}

static volatile sig_atomic_t got_term;
static void on_term(int sig) { got_term = sig; }   /* which one: the log names it */


/* ------------------------------------------------------------- main */

static void usage(FILE *out) {
  fprintf(out,
          "usage: jiti kernel [--store DIR] [LIMITS] [--pause-timeout SECONDS]\n"
          "                   [--max-clients N] [--idle-timeout SECONDS]\n"
          "                   [--allow-foreign LIB]... [--events-keep COUNT]\n"
          "                   [--events-max-age DURATION] [--detach]\n"
          "                   [--replicate URLS --world NAME [--lease SECONDS] [--standby]]\n"
          "                   [--listen tcp://HOST:PORT --tls-cert F --tls-key F\n"
          "                    (--client-ca F | --token-file F)]\n"
          "\n"
          "Run the kernel daemon of a store: recover CURRENT (creating the store with an\n"
          "initial, empty revision if there is none), start the sandboxed worker and serve\n"
          "clients on DIR/kernel.sock (newline-delimited JSON, docs/protocol.md).  One line\n"
          "per transaction is logged on stderr; what the worker writes on its own stderr\n"
          "is logged as 'worker[PID]: ' lines, escaped and at most 100 a second.  The\n"
          "worker gets none of this process's environment but LANG, LC_*, TZ and\n"
          "LD_LIBRARY_PATH.  SIGTERM, SIGINT or 'jiti stop' shuts it down cleanly (a paused\n"
          "transaction is aborted and restored first).\n"
          "\n"
          "The limits below are every transaction's (the form, its repairs, the\n"
          "invariants); a call, an action or a preview may lower them for itself, the\n"
          "operator's requests (apply, invariant, rollback) may also raise them.\n"
          "\n"
          "options:\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "%s%s%s%s"
          "  --max-clients N   connections served at once (default 1000); 8 more are kept\n"
          "                    for 'jiti status' and 'jiti stop'\n"
          "  --idle-timeout SECONDS  close a connection that asked for nothing this long\n"
          "                    (default 600; 0 = never; subscribers are never idle)\n"
          "  --detach          run in the background: log to DIR/kernel.log, pid in\n"
          "                    DIR/kernel.pid; returns once the kernel serves\n"
          "  --replicate URLS  replicate the world through etcd (docs/replication.md): URLS\n"
          "                    are the members' client URLs, comma-separated (http://H:2379,...);\n"
          "                    the kernel leads world NAME (--world) under a lease of --lease\n"
          "                    seconds (default 5, 2 to 600) and answers a writing call only\n"
          "                    once etcd holds its revision.  When it loses the lease it\n"
          "                    writes nothing more, answers its pending calls 'fenced' and\n"
          "                    restarts as a standby (refused when its store holds a revision\n"
          "                    etcd does not).  A world led by another kernel is\n"
          "                    refused, unless --standby: then this kernel applies what etcd\n"
          "                    has to its own store and takes over when the leader's lease\n"
          "                    lapses, restarting as the leader.  Once its store holds a\n"
          "                    revision it serves reads meanwhile (status, observe, log,\n"
          "                    show, calls that change nothing) and refuses writes\n"
          "                    ('standby', naming the leader); with --detach, 'jiti\n"
          "                    kernel' returns once it serves\n"
          "%s"
          "  --create          DIR may hold no store yet: create it (a new store is always\n"
          "                    announced; with JITI_NO_CREATE=1 in the environment, a\n"
          "                    missing store is refused without --create)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 after a clean shutdown; 1 when the store cannot be opened (for\n"
          "example another kernel holds it), is damaged, or the worker cannot start; 2 usage.\n",
          LIMITS_HELP, LIMITS_PAUSE_HELP, GRANT_HELP, DRETAIN_HELP, NET_SERVER_HELP);
}

#ifdef JITI_TEST_HOOKS
/* Compiled only into the test binary `jiti-testhooks`: JITI_TEST_KILL_AT=
** POINT:N makes the kernel kill itself (SIGKILL) the Nth time a publish
** reaches POINT (before-txn, after-entries, after-manifest, before-commit,
** after-commit; the middle two once per revision of a group; before-sync,
** after-sync: the store writer's syncs, dsync.c; before-checkpoint,
** after-checkpoint: around the commit of the journaled writes), so that the
** crash tests can stop it at every point of a group commit. */
#include <signal.h>
typedef struct KillAt { int point, nth, seen; } KillAt;

static void kill_hook(void *arg, store_point at) {
  KillAt *k = arg;
  if ((int)at == k->point && ++k->seen == k->nth) raise(SIGKILL);
}

static int open_store(Daemon *D, char *err, size_t errlen) {
  static KillAt k;
  static const char *const names[] = {"",           "before-txn",        "after-entries",   "after-manifest",
                                      "before-commit", "after-commit",      "before-sync",     "after-sync",
                                      "before-checkpoint", "after-checkpoint"};
  store_options opt = {0};
  const char *at = getenv("JITI_TEST_KILL_AT");
  if (at && *at) {
    const char *colon = strchr(at, ':');
    for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
      if (colon && (size_t)(colon - at) == strlen(names[i]) && !strncmp(at, names[i], strlen(names[i])))
        k.point = i;
    k.nth = colon ? atoi(colon + 1) : 0;
    if (k.point && k.nth > 0) {
      opt.hook = kill_hook;
      opt.hook_arg = &k;
    }
  }
  return store_open_with(D->dir, 0, &opt, &D->store, err, errlen);
}
#else
static int open_store(Daemon *D, char *err, size_t errlen) { return store_open(D->dir, 0, &D->store, err, errlen); }
#endif

/* What the loop does before each sleep, in this order (dpoll.h): the
** connections done with are closed; a signal or a part's stop_why begins
** the shutdown; the worker gets its next request; what it finished ahead
** of the durable revisions is published; a pause past its timeout is
** aborted, a start past its own killed; the loop ends once a shutdown
** has nothing left to wait for; the clients' wishes are set and idle ones
** closed; the worker's dropped stderr lines are reported; due events are
** written; the log lines. */
static double before_signals(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  if (got_term && !D->stopping) shutdown_begin(D, got_term == SIGINT ? "SIGINT" : "SIGTERM");
  if (D->stop_why && !D->stopping) shutdown_begin(D, D->stop_why);
  return -1;
}

static double before_stop(void *ud, double now) {
  Daemon *D = ud;
  if (!D->stopping) return -1;
  if (D->nparked) dpark_stop(D);   /* calls waiting for a repair get their failure */
  if ((D->live.wait == W_NONE || D->live.wait == W_START) && !D->live.in_pause && !D->live.cur.active && !dgroup_holds(D)) {
    dpoll_stop(D->poll);
    return -1;
  }
  if (now >= D->stop_deadline) {
    dlog(D, "the worker did not finish within 10 s; killing it");
    if (D->live.w.pid) kill(D->live.w.pid, SIGKILL);
    if (D->live.w.fd >= 0) dworker_died(D);
    dpoll_stop(D->poll);
    return -1;
  }
  if (D->live.w.fd < 0) {
    dpoll_stop(D->poll);
    return -1;
  }
  return D->stop_deadline - now;
}

/* After the others (DAEMON_CHECKS builds only): the state they leave
** before the loop sleeps holds its invariants. */
static double before_check(void *ud, double now) {
  Daemon *D = ud;
  (void)now;
  dsched_check(D);
  dgroup_check(D);
  dshadow_check(D);
  return -1;
}

static int hooks(Daemon *D) {
  static const dpoll_BeforeFn fn[] = {dclients_reap, before_signals, dsched_before, dgroup_before,
                                      dsched_before_pause, dpark_before, dworker_before_start, before_stop, dclients_before, drepl_before,
                                      dworker_before_err, devents_before, dlog_before};
  for (size_t i = 0; i < sizeof fn / sizeof fn[0]; i++)
    if (dpoll_before(D->poll, fn[i], D) != 0) return -1;
  return DAEMON_CHECKS ? dpoll_before(D->poll, before_check, D) : 0;
}

/* Serve until the shutdown has nothing left to wait for. */
static void kernel_serve(Daemon *D) {
  sigset_t none;
  sigemptyset(&none);
  if (dpoll_run(D->poll, &none) != 0) dlog(D, "poll: %s", strerror(errno));
}

#define KERNEL_STOPPED (-1)   /* kernel_open: stopped before it served (a standby's SIGTERM) */

/* Open the kernel: the store recovered, the first worker started, the
** socket listening, the loop's descriptors and hooks registered.  EXIT_OK,
** KERNEL_STOPPED, or the exit status after a message (kernel_close is not called then:
** the process ends). */
static int kernel_open(Daemon *D, int ready_fd) {
  char err[1024] = "";
  /* kept in D (static): reachable whichever way the function returns */
  D->clients = calloc((size_t)D->max_clients + DAEMON_RESERVED_SLOTS, sizeof *D->clients);
  if (!D->clients) {
    fprintf(stderr, "jiti kernel: out of memory for %d clients (see --max-clients)\n", D->max_clients);
    return EXIT_FAIL;
  }
  if (!(D->poll = dpoll_open())) {
    fprintf(stderr, "jiti kernel: epoll: %s\n", strerror(errno));
    return EXIT_FAIL;
  }
  int rc = open_store(D, err, sizeof err);
  if (rc == STORE_EBUSY) {
    fprintf(stderr, "jiti kernel: the store at %s is in use: %s\nif a kernel is running there, "
            "talk to it (jiti status --store %s) or stop it (jiti stop --store %s)\n",
            D->dir, err, D->dir, D->dir);
    return EXIT_FAIL;
  }
  if (rc != STORE_OK) {
    char hint[CLI_MSG_MAX];
    storeio_open_hint(D->dir, rc, hint, sizeof hint);
    fprintf(stderr, "jiti kernel: cannot open the store at %s: %s\n%s%s", D->dir, err[0] ? err : store_strerror(rc),
            hint, hint[0] ? "\n" : "");
    return EXIT_FAIL;
  }
  /* a replicated world: its leader key won and the store brought to etcd's
  ** CURRENT before anything else is written */
  int won = drepl_open(D, dstore(D), err, sizeof err);
  if (won != 0) {
    fprintf(stderr, "jiti kernel: world %s: %s\n", D->repl_opts.world, err);
    return won > 0 ? KERNEL_STOPPED : EXIT_FAIL;
  }
  uint64_t cur = 0;
  if (store_current(dstore(D), &cur) != STORE_OK) {
    fprintf(stderr, "jiti kernel: %s\n", store_errmsg(dstore(D)));
    return EXIT_FAIL;
  }
  if (cur == 0) {
    store_rev_info info = {STORE_REV_INITIAL, 1, 0, JITI_VERSION, "initial: an empty world", NULL, NULL};
    if (store_publish(dstore(D), 0, &info, NULL, 0, NULL, 0, &cur) != STORE_OK) {
      fprintf(stderr, "jiti kernel: cannot create the initial revision: %s\n", store_errmsg(dstore(D)));
      return EXIT_FAIL;
    }
  }
  if (store_verify(dstore(D), 0, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "jiti kernel: the store at %s is damaged: %s\nrun 'jiti recover-session --store %s' "
            "for details; the kernel did not start\n", D->dir, err, D->dir);
    return EXIT_FAIL;
  }
  if (D->detached) {  /* from here on, messages go to DIR/kernel.log */
    char logpath[4096];
    snprintf(logpath, sizeof logpath, "%s/%s", D->dir, PROTO_LOG);
    int lf = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (lf >= 0) { dup2(lf, 2); close(lf); }
  }
  D->revision = cur;
  /* past every generation ever handed out for this store (by an earlier
  ** kernel, killed or not, or an offline command) */
  if (store_generation(dstore(D), &D->gen_saved) != STORE_OK) {
    fprintf(stderr, "jiti kernel: %s\n", store_errmsg(dstore(D)));
    return EXIT_FAIL;
  }
  D->live.base = D->gen_saved + 1;
  uint64_t interrupted = 0, verifying = 0;
  store_mark_interrupted(dstore(D), &interrupted);
  /* a repair is applied by one transaction or not at all: one that was
  ** being verified when the kernel died is interrupted, never half done */
  if (store_incidents_interrupt_verifying(dstore(D), &verifying) == STORE_OK && verifying)
    dlog(D, "%" PRIu64 " incident%s being verified when the kernel stopped marked interrupted", verifying,
         verifying == 1 ? "" : "s");
  /* a tentative repair is never kept across a restart: the world comes
  ** back at its last promoted state (the data rows written since stay) */
  dtentative_restart(D);
  D->next_attempt = storeio_next_attempt(dstore(D));
  dkeys_load(D);
  dtally_load(D);
  if (proto_socket_path(D->dir, D->sock, sizeof D->sock)) {
    fprintf(stderr, "jiti kernel: the socket path %s/%s is too long for a Unix socket; use a shorter "
            "store path\n", D->dir, PROTO_SOCKET);
    return EXIT_FAIL;
  }
  snprintf(D->pidfile, sizeof D->pidfile, "%s/%s", D->dir, PROTO_PIDFILE);
  if (hooks(D) != 0) {
    fprintf(stderr, "jiti kernel: out of memory\n");
    return EXIT_FAIL;
  }
  if (dworker_start_first(D) != 0) {
    dlog_flush(D);
    return EXIT_FAIL;
  }
  /* the world the worker's entries are checked in (dvouch.c), ready before
  ** the first write; failing now, it is tried again then */
  char verr[256];
  if (vouch_checker_open(&D->vouch, verr, sizeof verr)) dlog(D, "%s", verr);
  D->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  /* we hold the store's lock: a socket left behind is stale */
  unlink(D->sock);
  D->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, D->sock, strlen(D->sock) + 1);  /* fits: checked above */
  mode_t old = umask(0177);
  int b = D->lfd >= 0 ? bind(D->lfd, (struct sockaddr *)&a, sizeof a) : -1;
  umask(old);
  if (b != 0 || chmod(D->sock, 0600) != 0 || listen(D->lfd, 128) != 0 || dclients_listen(D) != 0) {
    fprintf(stderr, "jiti kernel: cannot listen on %s: %s\n", D->sock, strerror(errno));
    kill(D->live.w.pid, SIGKILL);
    return EXIT_FAIL;
  }
  if (D->net_opts.listen) {
    /* beside the Unix socket, carried to it: after it listens */
    D->net = net_server_start(&D->net_opts, D->sock, D->max_clients, dlog_thread, NULL, err, sizeof err);
    if (!D->net) {
      fprintf(stderr, "jiti kernel: %s\n", err);
      kill(D->live.w.pid, SIGKILL);
      return EXIT_FAIL;
    }
    dlog(D, "serving clients on other machines at tcp://%s (TLS; %s)", net_server_address(D->net),
         D->net_opts.client_ca ? "client certificates" : "token");
  }
  devents_add(D, json_pack("{s:s, s:i, s:I, s:I, s:I}", "event", store_event_name(STORE_EV_KERNEL_STARTED), "pid", (int)getpid(),
                      "revision", (json_int_t)D->revision, "generation", (json_int_t)D->gen,
                      "interrupted", (json_int_t)interrupted));
  devents_flush(D);
  dlog(D, "serving the store at %s on %s (pid %d, revision %" PRIu64 ", generation %" PRIu64
        ", %" PRIu64 " interrupted attempt%s marked)", D->dir, D->sock, (int)getpid(), D->revision, D->gen,
        interrupted, interrupted == 1 ? "" : "s");
  dlog_flush(D);  /* before `--detach` says ready: the line is its output */
  if (D->detached) {
    int pfd = open(D->pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    FILE *f = pfd >= 0 ? fdopen(pfd, "w") : NULL;
    if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
    else if (pfd >= 0) close(pfd);
  }
  if (ready_fd >= 0) {
    (void)!write(ready_fd, "ok", 2);
    close(ready_fd);
  }
  D->started = daemon_now();
  int started = dsync_start(D, err, sizeof err) == 0;
  if (started && dgroup_watch(D) != 0) {
    snprintf(err, sizeof err, "cannot watch the store writer: %s", strerror(errno));
    started = 0;
  }
  if (!started) {
    dlog(D, "%s", err);
    dlog_flush(D);
    kill(D->live.w.pid, SIGKILL);
    return EXIT_FAIL;
  }
  return EXIT_OK;
}

/* The clean shutdown: the worker stopped, the last events written and
** told, the clients given what is pending, everything freed. */
static int kernel_close(Daemon *D) {
  while (D->helpers) dworker_helper_end(D, D->helpers, 1);
  dshadow_stop(D);   /* none outlives the kernel: killed, and reaped by the worker */
  dworker_stop(D);
  dstore(D);         /* a timed write of events under way ends and is told */
  dsync_settle(D);
  devents_flush(D);  /* subscribers get the last outcomes before they are cut off */
  for (int i = 0; i < D->nclients; i++) {  /* best effort: deliver what is pending */
    Client *c = D->clients[i];
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    struct timeval tv = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    dclients_flush(c);
  }
  while (D->nclients) dclients_free(D, 0);
  net_server_stop(D->net);   /* its connections end with the clients' they carry */
  D->net = NULL;
  free(D->clients);
  dkeys_free(D);
  if (D->lfd >= 0) { dpoll_del(D->poll, D->lfd); close(D->lfd); unlink(D->sock); }
  if (D->spare_fd >= 0) close(D->spare_fd);
  if (D->detached) unlink(D->pidfile);
  devents_add(D, json_pack("{s:s, s:I, s:I}", "event", store_event_name(STORE_EV_KERNEL_STOPPED), "revision", (json_int_t)D->revision,
                      "generation", (json_int_t)D->gen));
  devents_flush(D);
  dtally_free(D);
  dtraffic_free(D);
  devents_free(D);
  free(D->txq.v);  /* empty by now: shutdown answered what was queued */
  free(D->queryq.v);
  free(D->cmdq.v);
  free(D->live.batch.v);
  json_decref(D->foreign_failed);
  dincident_policy_changed(D);   /* (frees the policy read) */
  dwatch_free(D);
  dtentative_free(D);
  dpark_stop(D);
  vouch_checker_close(&D->vouch);
  dlog(D, "stopped (revision %" PRIu64 ", generation %" PRIu64 ")", D->revision, D->gen);
  dlog_flush(D);
  free(D->log.buf);
  dsync_stop(D);
  drepl_stop(D);
  store_close(dstore(D));
  dpoll_close(D->poll);
  return EXIT_OK;
}

static int kernel_run(Daemon *D, int ready_fd) {
  int rc = kernel_open(D, ready_fd);
  if (rc == KERNEL_STOPPED) return EXIT_OK;   /* a standby asked to stop: a clean stop */
  if (rc != EXIT_OK) return rc;
  kernel_serve(D);
  return kernel_close(D);
}

int cmd_kernel(int argc, char **argv) {
  static Daemon D;
  memset(&D, 0, sizeof D);
  D.dir = opts_default_store();
  D.wire_trace = getenv("JITI_WIRE_TRACE");
  if (D.wire_trace && !*D.wire_trace) D.wire_trace = NULL;
  limits_default(&D.limits);
  D.lfd = D.live.w.fd = D.live.w.report = D.spare_fd = D.shadows.listener = D.shadows.parked.pidfd = D.shadows.park_fd = -1;
  D.live.D = &D;
  D.live.role = "worker";
  D.max_clients = DAEMON_MAX_CLIENTS;
  dkeys_init(&D);
  D.idle_timeout = DAEMON_IDLE_TIMEOUT;
  int detach = 0, create = 0, detach_at = -1;
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &D.dir, err, sizeof err);
    if (r == 0) r = limits_option(argc, argv, &i, &D.limits, 1, err, sizeof err);
    if (r == 0) r = grant_option(argc, argv, &i, &D.grant, err, sizeof err);
    if (r == 0) r = drepl_option(argc, argv, &i, &D.repl_opts, err, sizeof err);
    if (r == 0) r = net_server_option(argc, argv, &i, &D.net_opts, err, sizeof err);
    if (r < 0) fprintf(stderr, "jiti kernel: %s\n", err);
    if (r == 0) r = dretain_option("kernel", argc, argv, &i, &D.retain);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return EXIT_OK; }
    if (!strcmp(argv[i], "--detach")) { detach = 1; detach_at = i; continue; }
    if (!strcmp(argv[i], "--create")) { create = 1; continue; }
    if (!strcmp(argv[i], "--max-clients") || !strcmp(argv[i], "--idle-timeout")) {
      int clients = argv[i][2] == 'm';
      long v;
      char *end;
      if (i + 1 >= argc || (v = strtol(argv[i + 1], &end, 10), *end || end == argv[i + 1]) ||
          v < (clients ? 1 : 0) || v > (clients ? 100000 : 86400)) {
        fprintf(stderr, "jiti kernel: %s needs %s\n", argv[i],
                clients ? "a number of clients from 1 to 100000" : "a number of seconds from 0 (never) to 86400");
        return EXIT_USAGE;
      }
      if (clients) D.max_clients = (int)v;
      else D.idle_timeout = (double)v;
      i++;
      continue;
    }
    fprintf(stderr, "jiti kernel: unknown option '%s' (see 'jiti kernel --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  char rerr[256];
  if (drepl_check(&D.repl_opts, rerr, sizeof rerr) != 0 || net_server_check(&D.net_opts, rerr, sizeof rerr) != 0) {
    fprintf(stderr, "jiti kernel: %s\n", rerr);
    return EXIT_USAGE;
  }
  /* a leader's address is published for clients to find: one they can reach again */
  if (D.repl_opts.urls && net_server_advertisable(&D.net_opts, rerr, sizeof rerr) != 0) {
    fprintf(stderr, "jiti kernel: %s\n", rerr);
    return EXIT_USAGE;
  }
  /* refused before anything is created: a socket the kernel could never bind */
  char sock[256];
  if (proto_socket_path(D.dir, sock, sizeof sock)) {
    fprintf(stderr, "jiti kernel: the store path %s is too long: its socket %s/%s would pass the %zu bytes a Unix "
            "socket path may hold; use a shorter path (a symbolic link to the directory works); nothing was created\n",
            D.dir, D.dir, PROTO_SOCKET, sizeof((struct sockaddr_un *)0)->sun_path - 1);
    return EXIT_FAIL;
  }
  /* a mistyped --store would otherwise start an empty world without a word */
  char data[4096];
  snprintf(data, sizeof data, "%s/data.mdb", D.dir);
  int fresh = access(data, F_OK) != 0;
  const char *no_create = getenv("JITI_NO_CREATE");
  if (fresh && !create && no_create && *no_create && strcmp(no_create, "0")) {
    fprintf(stderr, "jiti kernel: there is no store at %s; add --create to make a new one there (JITI_NO_CREATE is "
            "set); nothing was created\n", D.dir);
    return EXIT_FAIL;
  }
  if (fresh && !detach) fprintf(stderr, "jiti kernel: creating a new store at %s\n", D.dir);
  grant_manifest(&D.grant, D.grant_text, sizeof D.grant_text);
  D.vouch.grant = &D.grant;
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa = {0};
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, NULL);  /* delivered only inside the loop's wait */
  /* a kernel that stepped down to standby: detached already */
  const char *stepped = getenv(DREPL_DETACHED_ENV);
  if (stepped) {
    D.detached = !!*stepped;
    unsetenv(DREPL_DETACHED_ENV);
  }
  if (!detach || D.detached) {
    int rc = kernel_run(&D, -1);
    drepl_restart(&D, argc, argv, detach_at);   /* (fenced, or a standby that won) */
    return rc;
  }

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
      if (fresh) printf("jiti kernel: created a new store at %s\n", D.dir);
      printf("jiti kernel: serving the store at %s (pid %d; log %s/%s; stop with 'jiti stop --store %s')\n",
             D.dir, (int)pid, D.dir, PROTO_LOG, D.dir);
      return EXIT_OK;
    }
    int st;
    waitpid(pid, &st, 0);
    fprintf(stderr, "jiti kernel: the kernel did not start (see the messages above, or %s/%s)\n",
            D.dir, PROTO_LOG);
    return EXIT_FAIL;
  }
  close(p[0]);
  setsid();
  D.detached = 1;
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) { dup2(devnull, 0); dup2(devnull, 1); close(devnull); }
  int rc = kernel_run(&D, p[1]);
  drepl_restart(&D, argc, argv, detach_at);
  _exit(rc);
}
