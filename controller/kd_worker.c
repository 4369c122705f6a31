/*
** kd_worker.c — the kernel daemon's worker (kd.h, docs/protocol.md "Kernel
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
#include "kd.h"
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

static int wsend(Kernel *K, json_t *m, const void *blob, size_t len) {
  int rc = wire_send(K->wfd, m, blob, len);
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
** loop (kd_worker_writable); its "ready" arrives as a message like any other.
** Meanwhile clients are served: hello, status and history at once, queries
** and transactions queue up.  A start that fails is retried after a second,
** three failures in a row stop the kernel. */

/* CURRENT's entries, gathered into "import" frames as the store hands
** them out. */
typedef struct {
  Kernel *K;
  json_t *entries;
  unsigned char *blob;
  size_t len, cap;
  int bad;
} Batch;

static int frame(Kernel *K, json_t *m, const void *blob, size_t len) {
  int rc = wire_frame(m, blob, len, &K->wout.buf, &K->wout.len, &K->wout.cap);
  json_decref(m);
  return rc;
}

static int batch_flush(Batch *b) {
  if (!json_array_size(b->entries)) return 0;
  int rc = frame(b->K, json_pack("{s:s, s:O}", "op", "import", "entries", b->entries), b->blob, b->len);
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
                                              jiti_entry_kind_name((jiti_EntryKind)cli_kernel_kind(e->kind)),
                                              "name", e->name, "len", (json_int_t)e->len));
  if (b->len >= IMPORT_BATCH_BYTES || json_array_size(b->entries) >= IMPORT_BATCH_ENTRIES)
    b->bad = batch_flush(b);
  return b->bad;
}

/* The start-up frames: init, CURRENT's entries in the import order
** (definitions before the data and invariants that use them), start. */
static int startup_frames(Kernel *K, char *err, size_t errlen) {
  int rc = store_current(K->s, &K->revision);
  Batch b = {K, json_array(), NULL, 0, 0, 0};
  int kinds[JITI_ENTRY_KIND_COUNT];
  size_t nkinds = cli_import_kinds(CLI_IMPORT_ALL, kinds), counts[JITI_ENTRY_KIND_COUNT] = {0};
  if (rc == STORE_OK)
    b.bad = frame(K, json_pack("{s:s, s:I, s:I}", "op", "init", "base", (json_int_t)K->base,
                               "revision", (json_int_t)K->revision), NULL, 0);
  if (rc == STORE_OK && !b.bad)
    rc = store_map_foreach_kinds(K->s, STORE_REV_CURRENT, kinds, nkinds, counts, batch_entry, &b);
  if (rc == STORE_OK && !b.bad) b.bad = batch_flush(&b);
  json_decref(b.entries);
  free(b.blob);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "cannot read CURRENT: %s", store_errmsg(K->s));
    return -1;
  }
  K->start_entries = 0;
  for (size_t i = 0; i < nkinds; i++) K->start_entries += counts[i];
  if (!b.bad) b.bad = frame(K, json_pack("{s:s}", "op", "start"), NULL, 0);
  if (b.bad) snprintf(err, errlen, "out of memory preparing the worker's start-up");
  return b.bad ? -1 : 0;
}

/* Fork and exec a worker and queue its start-up frames.  0, or -1 with a
** message in err (nothing left running). */
static int spawn_worker(Kernel *K, char *err, size_t errlen) {
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
  K->wfd = sv[0];
  K->wpid = pid;
  wire_reader_reset(&K->win);
  struct timeval tv = {120, 0};
  setsockopt(K->wfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(K->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  K->wout.len = K->wout.off = 0;
  if (startup_frames(K, err, errlen) != 0) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    close(K->wfd);
    K->wfd = -1;
    K->wpid = 0;
    return -1;
  }
  K->wait = W_START;
  K->start_deadline = kd_now() + 120;
  return 0;
}

/* Write what the socket takes of the queued start-up frames. */
void kd_worker_writable(Kernel *K) {
  while (K->wout.off < K->wout.len) {
    ssize_t w = send(K->wfd, K->wout.buf + K->wout.off, K->wout.len - K->wout.off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) return;  /* it died: its EOF follows */
    K->wout.off += (size_t)w;
  }
  K->wout.len = K->wout.off = 0;
  if (K->wout.cap > ((size_t)1 << 20)) {  /* do not keep a large world's copy */
    free(K->wout.buf);
    K->wout.buf = NULL;
    K->wout.cap = 0;
  }
}

static void worker_ready(Kernel *K, json_t *r) {
  K->gen = (uint64_t)json_integer_value(json_object_get(r, "generation"));
  const char *st = json_string_value(json_object_get(r, "status"));
  snprintf(K->wstatus, sizeof K->wstatus, "%s", st ? st : "idle");
  const char *msg = json_string_value(json_object_get(r, "message"));
  kd_log(K, "worker %d ready: revision %" PRIu64 ", %zu entries, generation %" PRIu64 ", %s%s%s",
         (int)K->wpid, K->revision, K->start_entries, K->gen, K->wstatus, msg && *msg ? ": " : "",
         msg ? msg : "");
  K->wait = W_NONE;
  K->in_pause = 0;
  K->consecutive_failures = 0;
}

/* Reap a worker that failed to start and plan the next try. */
static void start_failed(Kernel *K, const char *why) {
  if (K->wpid) {
    int st;
    kill(K->wpid, SIGKILL);
    while (waitpid(K->wpid, &st, 0) < 0 && errno == EINTR) {}
  }
  if (K->wfd >= 0) close(K->wfd);
  K->wfd = -1;
  K->wpid = 0;
  K->wait = W_NONE;
  K->wout.len = K->wout.off = 0;
  wire_reader_reset(&K->win);
  kd_log(K, "cannot start a worker: %s", why);
  if (++K->consecutive_failures >= 3) {
    kd_log(K, "giving up after 3 failed worker starts; stopping");
    kd_begin_shutdown(K, "the worker cannot start");
    return;
  }
  K->restart_at = kd_now() + 1;
}

void kd_restart_worker(Kernel *K) {
  char err[1024];
  K->restart_at = 0;
  if (K->stopping || K->wfd >= 0) return;
  if (spawn_worker(K, err, sizeof err) != 0) start_failed(K, err);
}

/* The first worker, at kernel start-up: started and waited for, its
** frames handled as the poll loop would (kd_worker_readable); a failure is
** logged by start_failed. */
int kd_start_worker(Kernel *K) {
  char err[1024];
  if (spawn_worker(K, err, sizeof err) != 0) {
    kd_log(K, "cannot start a worker: %s", err);
    return -1;
  }
  while (K->wait == W_START) {
    struct pollfd p = {K->wfd, POLLIN | (K->wout.len > K->wout.off ? POLLOUT : 0), 0};
    int n = poll(&p, 1, 1000);
    if (n < 0 && errno == EINTR) continue;
    if (kd_now() > K->start_deadline) {
      start_failed(K, "it did not start within 120 s");
      break;
    }
    if (n <= 0) continue;
    if (p.revents & POLLOUT) kd_worker_writable(K);
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) kd_worker_readable(K);
  }
  K->restart_at = 0;  /* the caller gives up instead */
  return K->wfd >= 0 && K->wait == W_NONE ? 0 : -1;
}

static void txn_clear(Kernel *K) {
  Txn *t = &K->cur;
  free(t->source);
  free(t->summary);
  json_decref(t->responder_id);
  json_decref(t->reply);
  memset(t, 0, sizeof *t);
}

/* Commands queued for a pause that has ended: their generation is old. */
void kd_fail_commands(Kernel *K, const char *code, const char *why) {
  while (K->cmdq.n) {
    Pending p = kd_pop(&K->cmdq);
    kd_reply_err(K, p.client, p.id, code, "%s", why);
    kd_pending_free(&p);
  }
}

static void finish_txn(Kernel *K, const char *reason, const char *extra) {
  Txn *t = &K->cur;
  char src[80];
  kd_snippet(t->source, src, sizeof src);
  kd_log_soon(K, "attempt %" PRIu64 " %s %s%s%s (%.1f ms, generation %" PRIu64 "): %s", t->attempt,
        t->command, reason, extra ? " " : "", extra ? extra : "", (kd_now() - t->t0) * 1000,
        K->gen, src);
  txn_clear(K);
  K->in_pause = 0;
  kd_fail_commands(K, "stale", "the paused transaction ended before this command ran; observe again");
}

void kd_worker_died(Kernel *K) {
  int st = 0;
  if (K->wpid) {
    /* EOF first: make sure it is gone */
    if (waitpid(K->wpid, &st, WNOHANG) == 0) {
      kill(K->wpid, SIGKILL);
      while (waitpid(K->wpid, &st, 0) < 0 && errno == EINTR) {}
    }
  }
  char how[160];
  describe_status(st, how, sizeof how);
  if (K->wait == W_START) {
    char why[200];
    snprintf(why, sizeof why, "the worker %s during start-up", how);
    K->wpid = 0;
    start_failed(K, why);
    return;
  }
  close(K->wfd);
  K->wfd = -1;
  wire_reader_reset(&K->win);
  kd_log(K, "worker %d %s", (int)K->wpid, how);
  K->wpid = 0;
  Txn *t = &K->cur;
  if (t->active) {
    if (K->wait == W_COMMIT && t->published) {
      /* the revision is durable; the fresh worker imports it */
      json_t *r = t->reply;
      t->reply = NULL;
      json_object_set_new(r, "generation", json_integer((json_int_t)(K->gen + 1)));
      kd_reply(K, t->responder, t->responder_id, r);
      kd_event(K, json_pack("{s:s, s:I, s:I, s:s}", "event", "accepted", "attempt", (json_int_t)t->attempt,
                          "revision", (json_int_t)t->revision, "note", how));
      finish_txn(K, "accepted", "(worker died after publication)");
    } else {
      char msg[512];
      snprintf(msg, sizeof msg, "the worker %s during attempt %" PRIu64 "; nothing was published; "
               "a fresh worker was started from revision %" PRIu64, how, t->attempt, K->revision);
      kd_event(K, json_pack("{s:s, s:I, s:s, s:s}", "event", "interrupted", "attempt", (json_int_t)t->attempt,
                          "command", t->command, "reason", how));
      if (t->responder) kd_reply_err(K, t->responder, t->responder_id, "interrupted", "%s", msg);
      finish_txn(K, "interrupted", how);
    }
  }
  if (K->wait == W_QUERY && K->query.retried) {
    /* the worker died on it twice: it would kill every fresh worker */
    kd_reply_err(K, K->query.client, K->query.id, "interrupted", "the worker %s twice while answering this "
                 "query; a fresh worker was started from revision %" PRIu64, how, K->revision);
    kd_pending_free(&K->query);
    K->query = (Pending){0};
  } else if (K->wait == W_QUERY) {  /* the fresh worker answers it, first */
    K->query.retried = 1;
    if (kd_push_front(&K->queryq, K->query) != 0) {
      kd_reply_err(K, K->query.client, K->query.id, "interrupted", "the worker %s while answering this "
                   "query (and the kernel is out of memory)", how);
      kd_pending_free(&K->query);
    }
    K->query = (Pending){0};
  }
  /* calls sent with the one that was running never started: they run on
  ** the fresh worker, first, in their order (none comes when stopping) */
  while (K->batch.n) {
    Pending p = kd_pop_back(&K->batch);
    if (K->stopping) {
      kd_reply_err(K, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
      kd_pending_free(&p);
    } else if (kd_push_front(&K->txq, p) != 0) {
      kd_reply_err(K, p.client, p.id, "interrupted", "the worker %s before this call ran (and the kernel "
                   "is out of memory)", how);
      kd_pending_free(&p);
    }
  }
  K->wait = W_NONE;
  K->in_pause = 0;
  K->restarts++;
  kd_event(K, json_pack("{s:s, s:s, s:I}", "event", "worker-restarted", "reason", how,
                      "revision", (json_int_t)K->revision));
  kd_events_flush(K);
  if (K->stopping) return;
  K->base = K->gen + 1;
  kd_restart_worker(K);
}

/* ------------------------------------------------------ transactions */

static void send_or_die(Kernel *K, json_t *m) {
  if (wsend(K, m, NULL, 0) != 0) kd_worker_died(K);
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
static json_t *worker_request(Kernel *K, json_t *req, int with_gen) {
  const char *op = json_string_value(json_object_get(req, "op"));
  json_t *m;
  if (!strcmp(op, "invariant-add") || !strcmp(op, "invariant-remove"))
    m = json_pack("{s:s, s:s, s:O, s:s}", "op", "invariant", "action", !strcmp(op, "invariant-add") ? "add" : "remove",
                  "name", json_object_get(req, "name"), "source", txn_source(req));
  else
    m = json_pack("{s:s, s:s, s:s, s:b}", "op", "attempt", "kind",
                  !strcmp(op, "call") ? "application" : !strcmp(op, "preview") ? "preview" : "action",
                  "source", txn_source(req), "pausable", strcmp(op, "call") && strcmp(op, "preview"));
  json_t *pkg = json_object_get(req, "package");
  if (!pkg) pkg = json_object_get(json_object_get(req, "action"), "package");
  if (json_is_string(pkg) && strncmp(op, "invariant", 9)) json_object_set(m, "package", pkg);
  if (with_gen) json_object_set_new(m, "generation", json_integer((json_int_t)K->gen));
  return m;
}

/* Make p the running transaction: its attempt number, its log source and
** revision summary, its "started" event. */
static void begin_txn(Kernel *K, Pending *p) {
  static const char *const ops[] = {"call", "act", "preview", "invariant-add", "invariant-remove"};
  const char *op = json_string_value(json_object_get(p->req, "op")), *source = txn_source(p->req);
  Txn *t = &K->cur;
  txn_clear(K);
  t->active = 1;
  t->attempt = K->next_attempt++;
  K->attempts++;
  t->command = ops[0];
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) t->command = ops[i];
  char src[1024], brief[160], summary[200];
  kd_snippet(source, src, sizeof src);
  kd_snippet(source, brief, sizeof brief);
  if (!strncmp(op, "invariant-", 10)) {
    int add = !strcmp(op, "invariant-add");
    snprintf(summary, sizeof summary, "%s %s%s%s", op, json_string_value(json_object_get(p->req, "name")),
             add ? ": " : "", add ? brief : "");
  } else {
    snprintf(summary, sizeof summary, "%s: %s", op, brief);
  }
  t->source = strdup(source);
  t->summary = strdup(summary);
  t->t0 = kd_now();
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  kd_event(K, json_pack("{s:s, s:I, s:s, s:s, s:I, s:I}", "event", "started", "attempt",
                        (json_int_t)t->attempt, "command", t->command, "source", src,
                        "parent", (json_int_t)K->revision, "generation", (json_int_t)K->gen));
  K->wait = W_ATTEMPT;
}

/* An application call without a generation: it can run right after the
** call before it, whatever that one changed. */
static int batchable(const Pending *p) {
  return p && !strcmp(json_string_value(json_object_get(p->req, "op")), "call") &&
         !json_object_get(p->req, "generation");
}

/* Move the batchable calls at the head of the transaction queue (up to
** KD_MAX_BATCH in flight) behind the running one, their worker requests
** appended to items.  How many moved. */
static size_t take_batch(Kernel *K, json_t *items) {
  size_t moved = 0;
  while (K->batch.n + 1 < KD_MAX_BATCH && batchable(kd_peek(&K->txq))) {
    Pending q = kd_pop(&K->txq);
    json_t *r = worker_request(K, q.req, 0);
    if (kd_push(&K->batch, q.client, q.id, q.req) == 0) {
      json_array_append_new(items, r);
      moved++;
    } else {
      json_decref(r);
      kd_reply_err(K, q.client, q.id, "busy", "the kernel is out of memory; retry later");
    }
    kd_pending_free(&q);
  }
  return moved;
}

/* Refuse p: its generation is not the current one; nothing ran. */
static void reply_stale(Kernel *K, Pending *p, const char *what) {
  char msg[160];
  snprintf(msg, sizeof msg, "stale generation: %s; observe again", what);
  kd_reply(K, p->client, p->id, json_pack("{s:b, s:s, s:s, s:I}", "ok", 0, "code", "stale", "message", msg,
                                          "generation", (json_int_t)K->gen));
}

/* Start the transaction p.  A call takes the batchable calls queued behind
** it along: the worker gets them in one "attempts" request and runs them
** back to back, sending each outcome as it is known, so a crowd of clients
** costs one hand-over, not one each (see also kd_pump: calls arriving
** while a batch runs are sent after it). */
static void start_txn(Kernel *K, Pending *p) {
  json_t *gen = json_object_get(p->req, "generation");
  if (gen && (uint64_t)json_integer_value(gen) != K->gen) {
    reply_stale(K, p, "the world changed since your view");
    return;
  }
  json_t *m = worker_request(K, p->req, 1);
  begin_txn(K, p);
  if (!strcmp(K->cur.command, "call")) {
    json_t *items = json_array();
    if (take_batch(K, items)) {
      json_array_insert_new(items, 0, m);
      m = json_pack("{s:s, s:o}", "op", "attempts", "items", items);
    } else {
      json_decref(items);
    }
  }
  send_or_die(K, m);
}

static void send_command(Kernel *K, Pending *p) {
  json_t *a = json_object_get(p->req, "action");
  json_t *gen = json_object_get(p->req, "generation");
  if ((uint64_t)json_integer_value(gen) != K->gen) {
    reply_stale(K, p, "the pause changed since your view");
    return;
  }
  json_t *m = json_pack("{s:s, s:O, s:O}", "op", "command", "type", json_object_get(a, "type"),
                        "generation", gen);
  json_t *v;
  if ((v = json_object_get(a, "source"))) json_object_set(m, "source", v);
  if ((v = json_object_get(a, "restart_id"))) json_object_set(m, "restart_id", v);
  if ((v = json_object_get(a, "arguments"))) json_object_set(m, "arguments", v);
  if ((v = json_object_get(a, "package"))) json_object_set(m, "package", v);
  Txn *t = &K->cur;
  json_decref(t->responder_id);
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  K->wait = W_ATTEMPT;
  send_or_die(K, m);
}

void kd_abort_pause(Kernel *K, const char *why) {
  Txn *t = &K->cur;
  json_decref(t->responder_id);
  t->responder = 0;
  t->responder_id = NULL;
  kd_log(K, "attempt %" PRIu64 ": %s; aborting", t->attempt, why);
  K->wait = W_ATTEMPT;
  send_or_die(K, json_pack("{s:s, s:s, s:I}", "op", "command", "type", "abort",
                           "generation", (json_int_t)K->gen));
}

/* Give the worker its next request, if it is free and one waits. */
void kd_pump(Kernel *K) {
  /* While the worker runs calls, calls that arrive join them: the worker
  ** runs what it was sent in order, and takes them up without waiting for
  ** the kernel, which meanwhile reads and answers clients (a pipeline over
  ** the two processes).  Not when a query or another kind of transaction
  ** waits: those would wait for the end of the stream. */
  if (K->wfd >= 0 && (K->wait == W_ATTEMPT || K->wait == W_COMMIT) && K->cur.active &&
      !strcmp(K->cur.command, "call") && !K->stopping && !K->queryq.n && batchable(kd_peek(&K->txq))) {
    json_t *items = json_array();
    if (take_batch(K, items)) send_or_die(K, json_pack("{s:s, s:o}", "op", "attempts", "items", items));
    else json_decref(items);
  }
  while (K->wfd >= 0 && K->wait == W_NONE) {
    if (K->batch.n) {  /* the worker goes on with the calls it was sent */
      Pending p = kd_pop(&K->batch);
      begin_txn(K, &p);
      kd_pending_free(&p);
      return;
    }
    if (K->queryq.n) {
      K->query = kd_pop(&K->queryq);
      K->wait = W_QUERY;
      send_or_die(K, json_deep_copy(K->query.req));
      continue;
    }
    if (K->in_pause) {
      if (K->stopping && !K->cur.aborting_for_shutdown) {
        K->cur.aborting_for_shutdown = 1;
        kd_abort_pause(K, "the kernel is shutting down");
        continue;
      }
      if (!K->cmdq.n) return;
      Pending p = kd_pop(&K->cmdq);
      send_command(K, &p);
      kd_pending_free(&p);
      continue;
    }
    if (K->stopping || !K->txq.n) return;
    Pending p = kd_pop(&K->txq);
    start_txn(K, &p);
    kd_pending_free(&p);
  }
}

/* The changes as clients see them: kind, name, removed.  The worker reports
** every variable as a candidate (a mutation of the structure a variable holds
** changes its value), and removals of entries made inside the transaction;
** entries identical to CURRENT's, or removed but never published, are not
** changes and are left out (the store skips them too). */
static json_t *changes_brief(Kernel *K, json_t *changes) {
  json_t *a = json_array();
  size_t i;
  json_t *c;
  json_array_foreach(changes, i, c) {
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *hash = json_string_value(json_object_get(c, "hash"));
    int sk = kind ? store_kind_parse(kind) : 0;
    uint8_t h[32];
    if (sk && name && store_lookup(K->s, sk, name, h) == STORE_OK) {
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
static void publish(Kernel *K, json_t *m, const unsigned char *blob, size_t bloblen) {
  Txn *t = &K->cur;
  json_t *changes = json_object_get(m, "changes");
  json_t *brief = changes_brief(K, changes);  /* against CURRENT, before it moves */
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
      if (store_lookup(K->s, sk, name, h) == STORE_OK) rm[nr++] = (store_key){sk, name};
    } else {
      ch[nc++] = (store_entry){sk, name, blob + at, (size_t)len};
      at += (size_t)len;
    }
  }
  uint64_t gen = (uint64_t)json_integer_value(json_object_get(m, "generation"));
  uint64_t rev = K->revision;
  if (!bad) {
    store_rev_info info = {!strcmp(t->command, "call") ? STORE_REV_APPLICATION : STORE_REV_ACTION,
                           gen + 1, 0, JITI_VERSION, t->summary, NULL};
    /* the events that led to the revision go in its transaction: one sync */
    uint64_t first = 0;
    if (store_publish_with_events(K->s, K->revision, &info, ch, nc, rm, nr, K->events.ev,
                                  K->events.time_ms, K->events.n, &rev, &first) != STORE_OK) {
      bad = 1;
      snprintf(why, sizeof why, "%s", store_errmsg(K->s));
    } else {
      kd_events_written(K, first);
    }
  }
  free(ch);
  free(rm);
  json_t *value = json_object_get(m, "value"), *output = json_object_get(m, "output");
  if (bad) {
    json_decref(brief);
    t->reply = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", "publication-failed", "outcome",
                         "publication-failed", "message", why);
    kd_log(K, "attempt %" PRIu64 ": publication failed: %s", t->attempt, why);
    K->wait = W_COMMIT;
    send_or_die(K, json_pack("{s:s}", "op", "restore"));
    return;
  }
  t->published = 1;
  t->revision = rev;
  K->revision = rev;
  t->reply = json_pack("{s:b, s:s, s:I, s:o}", "ok", 1, "outcome", "accepted", "revision", (json_int_t)rev,
                       "changes", brief);
  if (value) json_object_set(t->reply, "value", value);
  if (output) json_object_set(t->reply, "output", output);
  K->wait = W_COMMIT;
  send_or_die(K, json_pack("{s:s, s:I}", "op", "commit", "revision", (json_int_t)rev));
}

static void on_worker_msg(Kernel *K, json_t *m, unsigned char *blob, size_t bloblen) {
  const char *ev = json_string_value(json_object_get(m, "event"));
  if (!ev) ev = "";
  Txn *t = &K->cur;
  json_t *g = json_object_get(m, "generation");
  if (json_is_integer(g)) K->gen = (uint64_t)json_integer_value(g);
  if (K->wait == W_START) {
    if (!strcmp(ev, "ready")) {
      worker_ready(K, m);
    } else {
      const char *msg = json_string_value(json_object_get(m, "message"));
      start_failed(K, msg ? msg : "unexpected message during start-up");
    }
    return;
  }
  if (K->wait == W_QUERY && (!strcmp(ev, "view") || !strcmp(ev, "entry") || !strcmp(ev, "invariants"))) {
    K->wait = W_NONE;
    Pending q = K->query;
    K->query = (Pending){0};
    json_t *r;
    if (!strcmp(ev, "entry") && !json_is_object(json_object_get(m, "entry")))
      r = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "not-found",
                    "message", "no such entry; observe lists the entries (kind and name)");
    else
      r = json_pack("{s:b, s:O}", "ok", 1, ev, json_object_get(m, ev));
    kd_reply(K, q.client, q.id, r);
    kd_pending_free(&q);
    return;
  }
  if (K->wait == W_ATTEMPT && !strcmp(ev, "paused")) {
    json_t *p = json_object_get(m, "pause");
    K->gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
    K->wait = W_NONE;
    int first = !K->in_pause;
    K->in_pause = 1;
    t->deadline = kd_now() + K->pause_timeout;
    const char *refusal = json_string_value(json_object_get(p, "refusal"));
    json_t *r;
    if (refusal)
      r = json_pack("{s:b, s:s, s:s, s:s, s:I, s:O}", "ok", 0, "code", refusal, "message",
                    json_string_value(json_object_get(p, "error")), "status", "paused",
                    "generation", (json_int_t)K->gen, "pause", p);
    else
      r = json_pack("{s:b, s:s, s:I, s:O}", "ok", 1, "status", "paused", "generation",
                    (json_int_t)K->gen, "pause", p);
    json_t *lv = json_object_get(p, "last_value");
    if (lv && !refusal) json_object_set(r, "value", lv);
    if (first || (!lv && !refusal))  /* a new pause; not a repair's value or a refused command */
      kd_event(K, json_pack("{s:s, s:I, s:O, s:I}", "event", "paused", "attempt", (json_int_t)t->attempt,
                          "condition", json_object_get(p, "condition_type"), "generation",
                          (json_int_t)K->gen));
    if (first) kd_log(K, "attempt %" PRIu64 " paused: %s", t->attempt,
                     json_string_value(json_object_get(p, "report")));
    kd_events_flush(K);  /* a pause may last long: its record should not wait */
    kd_reply(K, t->responder, t->responder_id, r);
    json_decref(t->responder_id);
    t->responder = 0;
    t->responder_id = NULL;
    return;
  }
  if (K->wait == W_ATTEMPT && !strcmp(ev, "outcome")) {
    const char *reason = json_string_value(json_object_get(m, "reason"));
    const char *status = json_string_value(json_object_get(m, "status"));
    if (status) snprintf(K->wstatus, sizeof K->wstatus, "%s", status);
    K->in_pause = 0;
    kd_fail_commands(K, "stale", "the paused transaction ended before this command ran; observe again");
    if (reason && !strcmp(reason, "accepted") && status && !strcmp(status, "awaiting-commit")) {
      publish(K, m, blob, bloblen);
      return;
    }
    K->wait = W_NONE;
    const char *msg = json_string_value(json_object_get(m, "message"));
    if (t->timed_out && reason && !strcmp(reason, "aborted")) msg = "aborted: the pause timed out";
    json_t *r;
    if (reason && !strcmp(reason, "accepted")) {
      /* nothing to publish, or a preview (already restored) */
      r = json_pack("{s:b, s:s, s:I, s:o}", "ok", 1, "outcome", "accepted", "revision", (json_int_t)K->revision,
                    "changes", changes_brief(K, json_object_get(m, "changes")));
      if (json_object_get(m, "value")) json_object_set(r, "value", json_object_get(m, "value"));
      if (t->command && !strcmp(t->command, "preview")) json_object_set_new(r, "restored", json_true());
      json_object_set_new(r, "generation", json_integer((json_int_t)K->gen));
    }
    else
      r = json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", reason ? reason : "error", "outcome",
                    reason ? reason : "error", "message", msg ? msg : "", "generation", (json_int_t)K->gen);
    json_t *v;
    if ((v = json_object_get(m, "output"))) json_object_set(r, "output", v);
    if (t->active) {
      kd_event(K, json_pack("{s:s, s:I, s:s, s:s}", "event", event_of(reason ? reason : "error"),
                          "attempt", (json_int_t)t->attempt, "outcome", reason ? reason : "error",
                          "message", msg ? msg : ""));
      kd_reply(K, t->responder, t->responder_id, r);
      finish_txn(K, reason ? reason : "error", NULL);
    } else {
      json_decref(r);
    }
    return;
  }
  if (K->wait == W_COMMIT && (!strcmp(ev, "committed") || !strcmp(ev, "restored"))) {
    const char *status = json_string_value(json_object_get(m, "status"));
    if (status) snprintf(K->wstatus, sizeof K->wstatus, "%s", status);
    K->wait = W_NONE;
    json_t *r = t->reply;
    t->reply = NULL;
    if (r) json_object_set_new(r, "generation", json_integer((json_int_t)K->gen));
    char extra[64] = "";
    if (t->published) {
      snprintf(extra, sizeof extra, "-> revision %" PRIu64, t->revision);
      kd_event(K, json_pack("{s:s, s:I, s:s, s:I, s:I}", "event", "accepted", "attempt",
                          (json_int_t)t->attempt, "outcome", "accepted", "revision",
                          (json_int_t)t->revision, "generation", (json_int_t)K->gen));
    } else {
      kd_event(K, json_pack("{s:s, s:I, s:s}", "event", "failed", "attempt", (json_int_t)t->attempt,
                          "outcome", "publication-failed"));
    }
    if (r) kd_reply(K, t->responder, t->responder_id, r);
    finish_txn(K, t->published ? "accepted" : "publication-failed", extra);
    return;
  }
  kd_log(K, "unexpected message from the worker (%s) while waiting (%d); restarting it", ev, K->wait);
  kill(K->wpid, SIGKILL);
  kd_worker_died(K);
}


/* The worker's socket is readable: one read, then every whole frame it
** brought (a batch's outcomes arrive in bursts), then its death if it
** closed the socket. */
void kd_worker_readable(Kernel *K) {
  pid_t pid = K->wpid;
  ssize_t k = wire_fill(K->wfd, &K->win);
  int gone = k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  for (;;) {
    json_t *m;
    unsigned char *blob;
    size_t bl;
    char why[256];
    int got = wire_next(&K->win, &m, &blob, &bl, why, sizeof why);
    if (got == 0) break;
    if (got < 0) {
      kd_log(K, "unreadable message from the worker (%s); restarting it", why);
      kd_worker_died(K);
      return;
    }
    on_worker_msg(K, m, blob, bl);
    json_decref(m);
    free(blob);
    if (K->wpid != pid || K->wfd < 0) return;  /* it was replaced meanwhile */
    kd_pump(K);  /* the next frame may be the next call's outcome */
    if (K->wpid != pid || K->wfd < 0) return;
  }
  if (gone) kd_worker_died(K);
}

/* At shutdown: ask the worker to exit; kill it if it has not within 2 s. */
void kd_stop_worker(Kernel *K) {
  free(K->wout.buf);
  K->wout.buf = NULL;
  K->wout.len = K->wout.off = K->wout.cap = 0;
  if (K->wfd < 0) return;
  if (K->wait == W_START) kill(K->wpid, SIGKILL);  /* mid start-up: nothing to lose */
  else wsend(K, json_pack("{s:s}", "op", "exit"), NULL, 0);
  int st;
  for (int i = 0; i < 100 && waitpid(K->wpid, &st, WNOHANG) == 0; i++) usleep(20000);
  if (waitpid(K->wpid, &st, WNOHANG) == 0) {
    kill(K->wpid, SIGKILL);
    waitpid(K->wpid, &st, 0);
  }
  close(K->wfd);
  K->wfd = -1;
  K->wpid = 0;
  wire_reader_reset(&K->win);
}
