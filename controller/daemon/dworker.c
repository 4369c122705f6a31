/*
** kd_worker.c — the kernel daemon's worker (kd.h, docs/protocol.md "Daemon
** and worker"): starting it from CURRENT, handing it one request at a time
** (queries, transactions, commands to a paused transaction), publishing
** what it accepted, and replacing it when it dies.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "daemon.h"
#include "worker.h"

#define IMPORT_BATCH_BYTES ((size_t)4 << 20)
#define IMPORT_BATCH_ENTRIES 20000

/* --------------------------------------------------------------- events */

static const char *event_of(const char *reason) {
  if (!strcmp(reason, "accepted")) return "accepted";
  if (!strcmp(reason, "aborted") || !strcmp(reason, "error") || !strcmp(reason, "repair-failed") ||
      !strcmp(reason, "budget-exhausted"))
    return "aborted";
  if (!strcmp(reason, "limit") || !strcmp(reason, "publication-failed")) return "failed";
  return "rejected";
}

/* ------------------------------------------------------------- worker */

static int wsend(Daemon *D, json_t *m, const void *blob, size_t len) {
  int rc = wire_send(D->wfd, m, blob, len);
  json_decref(m);
  return rc;
}

static void describe_status(int st, char *buf, size_t n) {
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

/* ------------------------------------------------------------ start-up
**
** A worker is started without blocking the kernel: fork + exec, then all of
** its start-up frames (init, CURRENT's entries in import batches, start) are
** built in memory and written as the socket accepts them, from the poll
** loop (dworker_writable); its "ready" arrives as a message like any other.
** Meanwhile clients are served: hello, status and history at once, queries
** and transactions queue up.  A start that fails is retried after a second,
** three failures in a row stop the kernel. */

/* CURRENT's entries, gathered into "import" frames as the store hands
** them out. */
typedef struct {
  Daemon *D;
  json_t *entries;
  unsigned char *blob;
  size_t len, cap;
  int bad;
} Batch;

static int frame(Daemon *D, json_t *m, const void *blob, size_t len) {
  int rc = wire_frame(m, blob, len, &D->wout.buf, &D->wout.len, &D->wout.cap);
  json_decref(m);
  return rc;
}

static int batch_flush(Batch *b) {
  if (!json_array_size(b->entries)) return 0;
  int rc = frame(b->D, json_pack("{s:s, s:O}", "op", "import", "entries", b->entries), b->blob, b->len);
  json_array_clear(b->entries);
  b->len = 0;
  return rc;
}

static int batch_entry(void *arg, const store_entry *e, const uint8_t hash[32]) {
  Batch *b = arg;
  (void)hash;
  if (b->len + e->len > b->cap) {
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + e->len) cap *= 2;
    unsigned char *p = realloc(b->blob, cap);
    if (!p) return b->bad = 1;
    b->blob = p;
    b->cap = cap;
  }
  memcpy(b->blob + b->len, e->bytes, e->len);
  b->len += e->len;
  json_array_append_new(b->entries, json_pack("{s:s, s:s, s:I}", "kind",
                                              jiti_entry_kind_name((jiti_EntryKind)storeio_kernel_kind(e->kind)),
                                              "name", e->name, "len", (json_int_t)e->len));
  if (b->len >= IMPORT_BATCH_BYTES || json_array_size(b->entries) >= IMPORT_BATCH_ENTRIES)
    b->bad = batch_flush(b);
  return b->bad;
}

/* The start-up frames: init, CURRENT's entries in the import order
** (definitions before the data and invariants that use them), start. */
static int startup_frames(Daemon *D, char *err, size_t errlen) {
  int rc = store_current(D->s, &D->revision);
  Batch b = {D, json_array(), NULL, 0, 0, 0};
  int kinds[JITI_ENTRY_KIND_COUNT];
  size_t nkinds = storeio_import_kinds(STOREIO_IMPORT_ALL, kinds), counts[JITI_ENTRY_KIND_COUNT] = {0};
  if (rc == STORE_OK)
    b.bad = frame(D, json_pack("{s:s, s:I, s:I}", "op", "init", "base", (json_int_t)D->base,
                               "revision", (json_int_t)D->revision), NULL, 0);
  if (rc == STORE_OK && !b.bad)
    rc = store_map_foreach_kinds(D->s, STORE_REV_CURRENT, kinds, nkinds, counts, batch_entry, &b);
  if (rc == STORE_OK && !b.bad) b.bad = batch_flush(&b);
  json_decref(b.entries);
  free(b.blob);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "cannot read CURRENT: %s", store_errmsg(D->s));
    return -1;
  }
  D->start_entries = 0;
  for (size_t i = 0; i < nkinds; i++) D->start_entries += counts[i];
  if (!b.bad) b.bad = frame(D, json_pack("{s:s}", "op", "start"), NULL, 0);
  if (b.bad) snprintf(err, errlen, "out of memory preparing the worker's start-up");
  return b.bad ? -1 : 0;
}

/* Fork and exec a worker and queue its start-up frames.  0, or -1 with a
** message in err (nothing left running). */
static int spawn_worker(Daemon *D, char *err, size_t errlen) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, errlen, "socketpair: %s", strerror(errno));
    return -1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(sv[0]); close(sv[1]);
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
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) { dup2(devnull, 0); dup2(devnull, 1); if (devnull > WORKER_FD) close(devnull); }
    execl("/proc/self/exe", "jiti", "__worker", (char *)NULL);
    _exit(127);
  }
  close(sv[1]);
  D->wfd = sv[0];
  D->wpid = pid;
  wire_reader_reset(&D->win);
  struct timeval tv = {120, 0};
  setsockopt(D->wfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(D->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  D->wout.len = D->wout.off = 0;
  if (startup_frames(D, err, errlen) != 0) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    close(D->wfd);
    D->wfd = -1;
    D->wpid = 0;
    return -1;
  }
  D->wait = W_START;
  D->start_deadline = daemon_now() + 120;
  return 0;
}

/* Write what the socket takes of the queued start-up frames. */
void dworker_writable(Daemon *D) {
  while (D->wout.off < D->wout.len) {
    ssize_t w = send(D->wfd, D->wout.buf + D->wout.off, D->wout.len - D->wout.off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) return;  /* it died: its EOF follows */
    D->wout.off += (size_t)w;
  }
  D->wout.len = D->wout.off = 0;
  if (D->wout.cap > ((size_t)1 << 20)) {  /* do not keep a large world's copy */
    free(D->wout.buf);
    D->wout.buf = NULL;
    D->wout.cap = 0;
  }
}

static void worker_ready(Daemon *D, json_t *r) {
  D->gen = (uint64_t)json_integer_value(json_object_get(r, "generation"));
  const char *st = json_string_value(json_object_get(r, "status"));
  snprintf(D->wstatus, sizeof D->wstatus, "%s", st ? st : "idle");
  const char *msg = json_string_value(json_object_get(r, "message"));
  dlog(D, "worker %d ready: revision %" PRIu64 ", %zu entries, generation %" PRIu64 ", %s%s%s",
         (int)D->wpid, D->revision, D->start_entries, D->gen, D->wstatus, msg && *msg ? ": " : "",
         msg ? msg : "");
  D->wait = W_NONE;
  D->in_pause = 0;
  D->consecutive_failures = 0;
}

/* Reap a worker that failed to start and plan the next try. */
static void start_failed(Daemon *D, const char *why) {
  if (D->wpid) {
    int st;
    kill(D->wpid, SIGKILL);
    while (waitpid(D->wpid, &st, 0) < 0 && errno == EINTR) {}
  }
  if (D->wfd >= 0) close(D->wfd);
  D->wfd = -1;
  D->wpid = 0;
  D->wait = W_NONE;
  D->wout.len = D->wout.off = 0;
  wire_reader_reset(&D->win);
  dlog(D, "cannot start a worker: %s", why);
  if (++D->consecutive_failures >= 3) {
    dlog(D, "giving up after 3 failed worker starts; stopping");
    dloop_shutdown(D, "the worker cannot start");
    return;
  }
  D->restart_at = daemon_now() + 1;
}

void dworker_restart(Daemon *D) {
  char err[1024];
  D->restart_at = 0;
  if (D->stopping || D->wfd >= 0) return;
  if (spawn_worker(D, err, sizeof err) != 0) start_failed(D, err);
}

/* The first worker, at kernel start-up: started and waited for, its
** frames handled as the poll loop would (dworker_readable); a failure is
** logged by start_failed. */
int dworker_start_first(Daemon *D) {
  char err[1024];
  if (spawn_worker(D, err, sizeof err) != 0) {
    dlog(D, "cannot start a worker: %s", err);
    return -1;
  }
  while (D->wait == W_START) {
    struct pollfd p = {D->wfd, POLLIN | (D->wout.len > D->wout.off ? POLLOUT : 0), 0};
    int n = poll(&p, 1, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (daemon_now() > D->start_deadline) {
      start_failed(D, "it did not start within 120 s");
      break;
    }
    if (n <= 0) continue;
    if (p.revents & POLLOUT) dworker_writable(D);
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) dworker_readable(D);
  }
  D->restart_at = 0;  /* the caller gives up instead */
  return D->wfd >= 0 && D->wait == W_NONE ? 0 : -1;
}

static void txn_clear(Daemon *D) {
  Txn *t = &D->cur;
  free(t->source);
  free(t->summary);
  json_decref(t->responder_id);
  json_decref(t->reply);
  memset(t, 0, sizeof *t);
}

/* Commands queued for a pause that has ended: their generation is old. */
void dsched_fail_commands(Daemon *D, const char *code, const char *why) {
  while (D->cmdq.n) {
    Pending p = dqueue_pop(&D->cmdq);
    dclients_reply_err(D, p.client, p.id, code, "%s", why);
    dqueue_pending_free(&p);
  }
}

static void finish_txn(Daemon *D, const char *reason, const char *extra) {
  Txn *t = &D->cur;
  char src[80];
  dlog_snippet(t->source, src, sizeof src);
  dlog_soon(D, "attempt %" PRIu64 " %s %s%s%s (%.1f ms, generation %" PRIu64 "): %s", t->attempt,
        t->command, reason, extra ? " " : "", extra ? extra : "", (daemon_now() - t->t0) * 1000,
        D->gen, src);
  txn_clear(D);
  D->in_pause = 0;
  dsched_fail_commands(D, "stale", "the paused transaction ended before this command ran; observe again");
}

void dworker_died(Daemon *D) {
  int st = 0;
  if (D->wpid) {
    /* EOF first: make sure it is gone */
    if (waitpid(D->wpid, &st, WNOHANG) == 0) {
      kill(D->wpid, SIGKILL);
      while (waitpid(D->wpid, &st, 0) < 0 && errno == EINTR) {}
    }
  }
  char how[160];
  describe_status(st, how, sizeof how);
  if (D->wait == W_START) {
    char why[200];
    snprintf(why, sizeof why, "the worker %s during start-up", how);
    D->wpid = 0;
    start_failed(D, why);
    return;
  }
  close(D->wfd);
  D->wfd = -1;
  wire_reader_reset(&D->win);
  dlog(D, "worker %d %s", (int)D->wpid, how);
  D->wpid = 0;
  Txn *t = &D->cur;
  if (t->active) {
    if (D->wait == W_COMMIT && t->published) {
      /* the revision is durable; the fresh worker imports it */
      json_t *r = t->reply;
      t->reply = NULL;
      D->gen = t->published_gen;  /* recorded with the revision; the next worker counts past it */
      json_object_set_new(r, "generation", json_integer((json_int_t)D->gen));
      dclients_reply(D, t->responder, t->responder_id, r);
      devents_add(D, json_pack("{s:s, s:I, s:I, s:s}", "event", "accepted", "attempt", (json_int_t)t->attempt,
                          "revision", (json_int_t)t->revision, "note", how));
      finish_txn(D, "accepted", "(worker died after publication)");
    } else {
      char msg[512];
      snprintf(msg, sizeof msg, "the worker %s during attempt %" PRIu64 "; nothing was published; "
               "a fresh worker was started from revision %" PRIu64, how, t->attempt, D->revision);
      devents_add(D, json_pack("{s:s, s:I, s:s, s:s}", "event", "interrupted", "attempt", (json_int_t)t->attempt,
                          "command", t->command, "reason", how));
      if (t->responder) dclients_reply_err(D, t->responder, t->responder_id, "interrupted", "%s", msg);
      finish_txn(D, "interrupted", how);
    }
  }
  if (D->wait == W_QUERY && D->query.retried) {
    /* the worker died on it twice: it would kill every fresh worker */
    dclients_reply_err(D, D->query.client, D->query.id, "interrupted", "the worker %s twice while answering this "
                 "query; a fresh worker was started from revision %" PRIu64, how, D->revision);
    dqueue_pending_free(&D->query);
    D->query = (Pending){0};
  } else if (D->wait == W_QUERY) {  /* the fresh worker answers it, first */
    D->query.retried = 1;
    if (dqueue_push_front(&D->queryq, D->query) != 0) {
      dclients_reply_err(D, D->query.client, D->query.id, "interrupted", "the worker %s while answering this "
                   "query (and the kernel is out of memory)", how);
      dqueue_pending_free(&D->query);
    }
    D->query = (Pending){0};
  }
  /* calls sent with the one that was running never started: they run on
  ** the fresh worker, first, in their order (none comes when stopping) */
  while (D->batch.n) {
    Pending p = dqueue_pop_back(&D->batch);
    if (D->stopping) {
      dclients_reply_err(D, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
      dqueue_pending_free(&p);
    } else if (dqueue_push_front(&D->txq, p) != 0) {
      dclients_reply_err(D, p.client, p.id, "interrupted", "the worker %s before this call ran (and the kernel "
                   "is out of memory)", how);
      dqueue_pending_free(&p);
    }
  }
  D->wait = W_NONE;
  D->in_pause = 0;
  D->restarts++;
  devents_add(D, json_pack("{s:s, s:s, s:I}", "event", "worker-restarted", "reason", how,
                      "revision", (json_int_t)D->revision));
  devents_flush(D);
  if (D->stopping) return;
  D->base = D->gen + 1;
  dworker_restart(D);
}

/* ------------------------------------------------------ transactions */

static void send_or_die(Daemon *D, json_t *m) {
  if (wsend(D, m, NULL, 0) != 0) dworker_died(D);
}

/* A queued transaction's source: the form of a call, a preview, an
** invariant or an act's evaluate ("" for resume and abort). */
static const char *txn_source(json_t *req) {
  json_t *src = json_object_get(req, "source");
  if (!src) src = json_object_get(json_object_get(req, "action"), "source");
  return json_is_string(src) ? json_string_value(src) : "";
}

/* The worker request for a queued transaction; with_gen: carrying the
** current generation (a call run behind others in a batch runs at
** whatever generation they leave). */
static json_t *worker_request(Daemon *D, json_t *req, int with_gen) {
  const char *op = json_string_value(json_object_get(req, "op"));
  json_t *m;
  if (!strcmp(op, "invariant-add") || !strcmp(op, "invariant-remove"))
    m = json_pack("{s:s, s:s, s:O, s:s}", "op", "invariant", "action", !strcmp(op, "invariant-add") ? "add" : "remove",
                  "name", json_object_get(req, "name"), "source", txn_source(req));
  else
    m = json_pack("{s:s, s:s, s:s, s:b}", "op", "attempt", "kind",
                  !strcmp(op, "call") ? "application" : !strcmp(op, "preview") ? "preview" : "action",
                  "source", txn_source(req), "pausable", strcmp(op, "call") && strcmp(op, "preview"));
  if (with_gen) json_object_set_new(m, "generation", json_integer((json_int_t)D->gen));
  return m;
}

/* Make p the running transaction: its attempt number, its log source and
** revision summary, its "started" event. */
static void begin_txn(Daemon *D, Pending *p) {
  static const char *const ops[] = {"call", "act", "preview", "invariant-add", "invariant-remove"};
  const char *op = json_string_value(json_object_get(p->req, "op")), *source = txn_source(p->req);
  Txn *t = &D->cur;
  txn_clear(D);
  t->active = 1;
  t->attempt = D->next_attempt++;
  D->attempts++;
  t->command = ops[0];
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) t->command = ops[i];
  char src[1024], brief[160], summary[200];
  dlog_snippet(source, src, sizeof src);
  dlog_snippet(source, brief, sizeof brief);
  if (!strncmp(op, "invariant-", 10)) {
    int add = !strcmp(op, "invariant-add");
    snprintf(summary, sizeof summary, "%s %s%s%s", op, json_string_value(json_object_get(p->req, "name")),
             add ? ": " : "", add ? brief : "");
  } else {
    snprintf(summary, sizeof summary, "%s: %s", op, brief);
  }
  t->source = strdup(source);
  t->summary = strdup(summary);
  t->t0 = daemon_now();
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  devents_add(D, json_pack("{s:s, s:I, s:s, s:s, s:I, s:I}", "event", "started", "attempt",
                        (json_int_t)t->attempt, "command", t->command, "source", src,
                        "parent", (json_int_t)D->revision, "generation", (json_int_t)D->gen));
  D->wait = W_ATTEMPT;
}

/* An application call without a generation: it can run right after the
** call before it, whatever that one changed. */
static int batchable(const Pending *p) {
  return p && !strcmp(json_string_value(json_object_get(p->req, "op")), "call") &&
         !json_object_get(p->req, "generation");
}

/* Move the batchable calls at the head of the transaction queue (up to
** DAEMON_MAX_BATCH in flight) behind the running one, their worker requests
** appended to items.  How many moved. */
static size_t take_batch(Daemon *D, json_t *items) {
  size_t moved = 0;
  while (D->batch.n + 1 < DAEMON_MAX_BATCH && batchable(dqueue_peek(&D->txq))) {
    Pending q = dqueue_pop(&D->txq);
    json_t *r = worker_request(D, q.req, 0);
    if (dqueue_push(&D->batch, q.client, q.id, q.req) == 0) {
      json_array_append_new(items, r);
      moved++;
    } else {
      json_decref(r);
      dclients_reply_err(D, q.client, q.id, "busy", "the kernel is out of memory; retry later");
    }
    dqueue_pending_free(&q);
  }
  return moved;
}

/* Refuse p: its generation is not the current one; nothing ran. */
static void reply_stale(Daemon *D, Pending *p, const char *what) {
  char msg[160];
  snprintf(msg, sizeof msg, "stale generation: %s; observe again", what);
  dclients_reply(D, p->client, p->id, json_pack("{s:b, s:s, s:s, s:I}", "ok", 0, "code", "stale", "message", msg,
                                          "generation", (json_int_t)D->gen));
}

/* Start the transaction p.  A call takes the batchable calls queued behind
** it along: the worker gets them in one "attempts" request and runs them
** back to back, sending each outcome as it is known, so a crowd of clients
** costs one hand-over, not one each (see also dsched_pump: calls arriving
** while a batch runs are sent after it). */
static void start_txn(Daemon *D, Pending *p) {
  json_t *gen = json_object_get(p->req, "generation");
  if (gen && (uint64_t)json_integer_value(gen) != D->gen) {
    reply_stale(D, p, "the world changed since your view");
    return;
  }
  json_t *m = worker_request(D, p->req, 1);
  begin_txn(D, p);
  if (!strcmp(D->cur.command, "call")) {
    json_t *items = json_array();
    if (take_batch(D, items)) {
      json_array_insert_new(items, 0, m);
      m = json_pack("{s:s, s:o}", "op", "attempts", "items", items);
    } else {
      json_decref(items);
    }
  }
  send_or_die(D, m);
}

static void send_command(Daemon *D, Pending *p) {
  json_t *a = json_object_get(p->req, "action");
  json_t *gen = json_object_get(p->req, "generation");
  if ((uint64_t)json_integer_value(gen) != D->gen) {
    reply_stale(D, p, "the pause changed since your view");
    return;
  }
  json_t *m = json_pack("{s:s, s:O, s:O}", "op", "command", "type", json_object_get(a, "type"),
                        "generation", gen);
  json_t *v;
  if ((v = json_object_get(a, "source"))) json_object_set(m, "source", v);
  if ((v = json_object_get(a, "restart_id"))) json_object_set(m, "restart_id", v);
  if ((v = json_object_get(a, "arguments"))) json_object_set(m, "arguments", v);
  Txn *t = &D->cur;
  json_decref(t->responder_id);
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  D->wait = W_ATTEMPT;
  send_or_die(D, m);
}

void dsched_abort_pause(Daemon *D, const char *why) {
  Txn *t = &D->cur;
  json_decref(t->responder_id);
  t->responder = 0;
  t->responder_id = NULL;
  dlog(D, "attempt %" PRIu64 ": %s; aborting", t->attempt, why);
  D->wait = W_ATTEMPT;
  send_or_die(D, json_pack("{s:s, s:s, s:I}", "op", "command", "type", "abort",
                           "generation", (json_int_t)D->gen));
}

/* Give the worker its next request, if it is free and one waits. */
void dsched_pump(Daemon *D) {
  /* While the worker runs calls, calls that arrive join them: the worker
  ** runs what it was sent in order, and takes them up without waiting for
  ** the kernel, which meanwhile reads and answers clients (a pipeline over
  ** the two processes).  Not when a query or another kind of transaction
  ** waits: those would wait for the end of the stream. */
  if (D->wfd >= 0 && (D->wait == W_ATTEMPT || D->wait == W_COMMIT) && D->cur.active &&
      !strcmp(D->cur.command, "call") && !D->stopping && !D->queryq.n && batchable(dqueue_peek(&D->txq))) {
    json_t *items = json_array();
    if (take_batch(D, items)) send_or_die(D, json_pack("{s:s, s:o}", "op", "attempts", "items", items));
    else json_decref(items);
  }
  while (D->wfd >= 0 && D->wait == W_NONE) {
    if (D->batch.n) {  /* the worker goes on with the calls it was sent */
      Pending p = dqueue_pop(&D->batch);
      begin_txn(D, &p);
      dqueue_pending_free(&p);
      return;
    }
    if (D->queryq.n) {
      D->query = dqueue_pop(&D->queryq);
      D->wait = W_QUERY;
      send_or_die(D, json_deep_copy(D->query.req));
      continue;
    }
    if (D->in_pause) {
      if (D->stopping && !D->cur.aborting_for_shutdown) {
        D->cur.aborting_for_shutdown = 1;
        dsched_abort_pause(D, "the kernel is shutting down");
        continue;
      }
      if (!D->cmdq.n) return;
      Pending p = dqueue_pop(&D->cmdq);
      send_command(D, &p);
      dqueue_pending_free(&p);
      continue;
    }
    if (D->stopping || !D->txq.n) return;
    Pending p = dqueue_pop(&D->txq);
    start_txn(D, &p);
    dqueue_pending_free(&p);
  }
}

/* The changes as clients see them: kind, name, removed.  The worker reports
** every variable as a candidate (a mutation of the structure a variable holds
** changes its value), and removals of entries made inside the transaction;
** entries identical to CURRENT's, or removed but never published, are not
** changes and are left out (the store skips them too). */
static json_t *changes_brief(Daemon *D, json_t *changes) {
  json_t *a = json_array();
  size_t i;
  json_t *c;
  json_array_foreach(changes, i, c) {
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *hash = json_string_value(json_object_get(c, "hash"));
    int sk = kind ? store_kind_parse(kind) : 0;
    uint8_t h[32];
    if (sk && name && store_lookup(D->s, sk, name, h) == STORE_OK) {
      char hex[65];
      store_hash_hex(h, hex);
      if (!json_is_true(json_object_get(c, "removed")) && hash && !strcmp(hash, hex)) continue;
    } else if (sk && name && json_is_true(json_object_get(c, "removed"))) {
      continue;
    }
    json_array_append_new(a, json_pack("{s:O, s:O, s:O}", "kind", json_object_get(c, "kind"),
                                       "name", json_object_get(c, "name"),
                                       "removed", json_object_get(c, "removed")));
  }
  return a;
}

/* The worker reported an accepted attempt awaiting commit: publish. */
static void publish(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen) {
  Txn *t = &D->cur;
  json_t *changes = json_object_get(m, "changes");
  json_t *brief = changes_brief(D, changes);  /* against CURRENT, before it moves */
  size_t n = json_array_size(changes), nc = 0, nr = 0, at = 0;
  store_entry *ch = calloc(n ? n : 1, sizeof *ch);
  store_key *rm = calloc(n ? n : 1, sizeof *rm);
  int bad = !ch || !rm;
  char why[1024] = "";
  for (size_t i = 0; !bad && i < n; i++) {
    json_t *c = json_array_get(changes, i);
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *name = json_string_value(json_object_get(c, "name"));
    json_int_t len = json_integer_value(json_object_get(c, "len"));
    int sk = kind ? store_kind_parse(kind) : 0;
    if (!sk || !name || len < 0 || (size_t)len > bloblen - at) {
      bad = 1;
      snprintf(why, sizeof why, "the worker reported a malformed change");
      break;
    }
    if (json_is_true(json_object_get(c, "removed"))) {
      uint8_t h[32];
      if (store_lookup(D->s, sk, name, h) == STORE_OK) rm[nr++] = (store_key){sk, name};
    } else {
      ch[nc++] = (store_entry){sk, name, blob + at, (size_t)len};
      at += (size_t)len;
    }
  }
  uint64_t gen = (uint64_t)json_integer_value(json_object_get(m, "generation"));
  uint64_t rev = D->revision;
  if (!bad) {
    /* the generation after the commit, recorded with the revision */
    store_rev_info info = {!strcmp(t->command, "call") ? STORE_REV_APPLICATION : STORE_REV_ACTION,
                           gen + 1, 0, JITI_VERSION, t->summary, NULL};
    /* the events that led to the revision go in its transaction: one sync */
    uint64_t first = 0;
    if (store_publish_with_events(D->s, D->revision, &info, ch, nc, rm, nr, D->events.ev,
                                  D->events.time_ms, D->events.n, &rev, &first) != STORE_OK) {
      bad = 1;
      snprintf(why, sizeof why, "%s", store_errmsg(D->s));
    } else {
      devents_written(D, first);
    }
  }
  free(ch);
  free(rm);
  json_t *value = json_object_get(m, "value"), *output = json_object_get(m, "output");
  if (bad) {
    json_decref(brief);
    t->reply = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", "publication-failed", "outcome",
                         "publication-failed", "message", why);
    dlog(D, "attempt %" PRIu64 ": publication failed: %s", t->attempt, why);
    D->wait = W_COMMIT;
    send_or_die(D, json_pack("{s:s}", "op", "restore"));
    return;
  }
  /* Entries identical to CURRENT's are no change: nothing was written, and
  ** the worker keeps the attempt without moving the generation. */
  int changed = rev != D->revision;
  t->published = 1;
  t->revision = rev;
  t->published_gen = changed ? gen + 1 : gen;
  if (changed && gen + 1 > D->gen_saved) D->gen_saved = gen + 1;
  D->revision = rev;
  t->reply = json_pack("{s:b, s:s, s:I, s:o}", "ok", 1, "outcome", "accepted", "revision", (json_int_t)rev,
                       "changes", brief);
  if (value) json_object_set(t->reply, "value", value);
  if (output) json_object_set(t->reply, "output", output);
  D->wait = W_COMMIT;
  send_or_die(D, json_pack("{s:s, s:I, s:b}", "op", "commit", "revision", (json_int_t)rev,
                           "changed", changed));
}

static void on_worker_msg(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen) {
  const char *ev = json_string_value(json_object_get(m, "event"));
  if (!ev) ev = "";
  Txn *t = &D->cur;
  json_t *g = json_object_get(m, "generation");
  if (json_is_integer(g)) D->gen = (uint64_t)json_integer_value(g);
  if (D->wait == W_START) {
    if (!strcmp(ev, "ready")) {
      worker_ready(D, m);
    } else {
      const char *msg = json_string_value(json_object_get(m, "message"));
      start_failed(D, msg ? msg : "unexpected message during start-up");
    }
    return;
  }
  if (D->wait == W_QUERY && (!strcmp(ev, "view") || !strcmp(ev, "entry") || !strcmp(ev, "invariants"))) {
    D->wait = W_NONE;
    Pending q = D->query;
    D->query = (Pending){0};
    json_t *r;
    if (!strcmp(ev, "entry") && !json_is_object(json_object_get(m, "entry")))
      r = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "not-found",
                    "message", "no such entry; observe lists the entries (kind and name)");
    else
      r = json_pack("{s:b, s:O}", "ok", 1, ev, json_object_get(m, ev));
    dclients_reply(D, q.client, q.id, r);
    dqueue_pending_free(&q);
    return;
  }
  if (D->wait == W_ATTEMPT && !strcmp(ev, "paused")) {
    json_t *p = json_object_get(m, "pause");
    D->gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
    D->wait = W_NONE;
    int first = !D->in_pause;
    D->in_pause = 1;
    t->deadline = daemon_now() + D->pause_timeout;
    const char *refusal = json_string_value(json_object_get(p, "refusal"));
    json_t *r;
    if (refusal)
      r = json_pack("{s:b, s:s, s:s, s:s, s:I, s:O}", "ok", 0, "code", refusal, "message",
                    json_string_value(json_object_get(p, "error")), "status", "paused",
                    "generation", (json_int_t)D->gen, "pause", p);
    else
      r = json_pack("{s:b, s:s, s:I, s:O}", "ok", 1, "status", "paused", "generation",
                    (json_int_t)D->gen, "pause", p);
    json_t *lv = json_object_get(p, "last_value");
    if (lv && !refusal) json_object_set(r, "value", lv);
    if (first || (!lv && !refusal))  /* a new pause; not a repair's value or a refused command */
      devents_add(D, json_pack("{s:s, s:I, s:O, s:I}", "event", "paused", "attempt", (json_int_t)t->attempt,
                          "condition", json_object_get(p, "condition_type"), "generation",
                          (json_int_t)D->gen));
    if (first) dlog(D, "attempt %" PRIu64 " paused: %s", t->attempt,
                     json_string_value(json_object_get(p, "report")));
    devents_flush(D);  /* a pause may last long: its record should not wait */
    dclients_reply(D, t->responder, t->responder_id, r);
    json_decref(t->responder_id);
    t->responder = 0;
    t->responder_id = NULL;
    return;
  }
  if (D->wait == W_ATTEMPT && !strcmp(ev, "outcome")) {
    const char *reason = json_string_value(json_object_get(m, "reason"));
    const char *status = json_string_value(json_object_get(m, "status"));
    if (status) snprintf(D->wstatus, sizeof D->wstatus, "%s", status);
    D->in_pause = 0;
    dsched_fail_commands(D, "stale", "the paused transaction ended before this command ran; observe again");
    if (reason && !strcmp(reason, "accepted") && status && !strcmp(status, "awaiting-commit")) {
      publish(D, m, blob, bloblen);
      return;
    }
    D->wait = W_NONE;
    const char *msg = json_string_value(json_object_get(m, "message"));
    if (t->timed_out && reason && !strcmp(reason, "aborted")) msg = "aborted: the pause timed out";
    json_t *r;
    if (reason && !strcmp(reason, "accepted")) {
      /* nothing to publish, or a preview (already restored) */
      r = json_pack("{s:b, s:s, s:I, s:o}", "ok", 1, "outcome", "accepted", "revision", (json_int_t)D->revision,
                    "changes", changes_brief(D, json_object_get(m, "changes")));
      if (json_object_get(m, "value")) json_object_set(r, "value", json_object_get(m, "value"));
      if (t->command && !strcmp(t->command, "preview")) json_object_set_new(r, "restored", json_true());
      json_object_set_new(r, "generation", json_integer((json_int_t)D->gen));
    }
    else
      r = json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", reason ? reason : "error", "outcome",
                    reason ? reason : "error", "message", msg ? msg : "", "generation", (json_int_t)D->gen);
    json_t *v;
    if ((v = json_object_get(m, "output"))) json_object_set(r, "output", v);
    if (t->active) {
      devents_add(D, json_pack("{s:s, s:I, s:s, s:s}", "event", event_of(reason ? reason : "error"),
                          "attempt", (json_int_t)t->attempt, "outcome", reason ? reason : "error",
                          "message", msg ? msg : ""));
      dclients_reply(D, t->responder, t->responder_id, r);
      finish_txn(D, reason ? reason : "error", NULL);
    } else {
      json_decref(r);
    }
    return;
  }
  if (D->wait == W_COMMIT && (!strcmp(ev, "committed") || !strcmp(ev, "restored"))) {
    const char *status = json_string_value(json_object_get(m, "status"));
    if (status) snprintf(D->wstatus, sizeof D->wstatus, "%s", status);
    D->wait = W_NONE;
    json_t *r = t->reply;
    t->reply = NULL;
    if (r) json_object_set_new(r, "generation", json_integer((json_int_t)D->gen));
    char extra[64] = "";
    if (t->published) {
      snprintf(extra, sizeof extra, "-> revision %" PRIu64, t->revision);
      devents_add(D, json_pack("{s:s, s:I, s:s, s:I, s:I}", "event", "accepted", "attempt",
                          (json_int_t)t->attempt, "outcome", "accepted", "revision",
                          (json_int_t)t->revision, "generation", (json_int_t)D->gen));
    } else {
      devents_add(D, json_pack("{s:s, s:I, s:s}", "event", "failed", "attempt", (json_int_t)t->attempt,
                          "outcome", "publication-failed"));
    }
    if (r) dclients_reply(D, t->responder, t->responder_id, r);
    finish_txn(D, t->published ? "accepted" : "publication-failed", extra);
    return;
  }
  dlog(D, "unexpected message from the worker (%s) while waiting (%d); restarting it", ev, D->wait);
  kill(D->wpid, SIGKILL);
  dworker_died(D);
}


/* The worker's socket is readable: one read, then every whole frame it
** brought (a batch's outcomes arrive in bursts), then its death if it
** closed the socket. */
void dworker_readable(Daemon *D) {
  pid_t pid = D->wpid;
  ssize_t k = wire_fill(D->wfd, &D->win);
  int gone = k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  for (;;) {
    json_t *m;
    unsigned char *blob;
    size_t bl;
    char why[256];
    int got = wire_next(&D->win, &m, &blob, &bl, why, sizeof why);
    if (got == 0) break;
    if (got < 0) {
      dlog(D, "unreadable message from the worker (%s); restarting it", why);
      dworker_died(D);
      return;
    }
    on_worker_msg(D, m, blob, bl);
    json_decref(m);
    free(blob);
    if (D->wpid != pid || D->wfd < 0) return;  /* it was replaced meanwhile */
    dsched_pump(D);  /* the next frame may be the next call's outcome */
    if (D->wpid != pid || D->wfd < 0) return;
  }
  if (gone) dworker_died(D);
}

/* At shutdown: ask the worker to exit; kill it if it has not within 2 s. */
void dworker_stop(Daemon *D) {
  free(D->wout.buf);
  D->wout.buf = NULL;
  D->wout.len = D->wout.off = D->wout.cap = 0;
  if (D->wfd < 0) return;
  if (D->wait == W_START) kill(D->wpid, SIGKILL);  /* mid start-up: nothing to lose */
  else wsend(D, json_pack("{s:s}", "op", "exit"), NULL, 0);
  int st;
  for (int i = 0; i < 100 && waitpid(D->wpid, &st, WNOHANG) == 0; i++) usleep(20000);
  if (waitpid(D->wpid, &st, WNOHANG) == 0) {
    kill(D->wpid, SIGKILL);
    waitpid(D->wpid, &st, 0);
  }
  close(D->wfd);
  D->wfd = -1;
  D->wpid = 0;
  wire_reader_reset(&D->win);
}
