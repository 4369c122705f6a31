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
#include "kproto.h"
#include "store_cli.h"
#include "worker.h"

#define MAX_CLIENTS 1000
#define MAX_QUEUE 10000
#define IMPORT_BATCH_BYTES ((size_t)4 << 20)
#define IMPORT_BATCH_ENTRIES 20000

/* ------------------------------------------------------------ helpers */

int kproto_socket_path(const char *dir, char *buf, size_t len) {
  struct sockaddr_un a;
  int n = snprintf(buf, len, "%s/%s", dir, KPROTO_SOCKET);
  if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof a.sun_path) return -1;
  return 0;
}

int kproto_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t k;
    unsigned min, cp;
    if (c >= 0xc2 && c <= 0xdf) { k = 1; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { k = 2; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { k = 3; cp = c & 0x07; min = 0x10000; }
    else return 0;
    for (size_t j = 1; j <= k; j++) {
      if (i + j >= n || (s[i + j] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += k + 1;
  }
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  char when[40];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  cli_iso_time((int64_t)ts.tv_sec * 1000, when, sizeof when);
  fprintf(stderr, "%s jiti kernel: ", when);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
}

/* First line of s, at most n characters, for logs. */
static void snippet(const char *s, char *buf, size_t n) {
  size_t j = 0;
  for (size_t i = 0; s && s[i] && j + 4 < n; i++) buf[j++] = (s[i] == '\n' || s[i] == '\t') ? ' ' : s[i];
  if (s && strlen(s) > j) { buf[j++] = '.'; buf[j++] = '.'; buf[j++] = '.'; }
  buf[j] = 0;
}

/* -------------------------------------------------------------- state */

typedef struct Client {
  int fd;
  uint64_t serial;
  char *in;
  size_t inlen, incap;
  char *out;
  size_t outlen, outoff, outcap;
  int closing;   /* close once the output is flushed */
} Client;

enum { P_TXN, P_VIEW, P_CMD };

typedef struct Pending {
  uint64_t client;   /* serial; 0 = nobody (timeouts, shutdown) */
  json_t *id;        /* the request's id, or NULL */
  json_t *req;
} Pending;

typedef struct Queue { Pending *v; size_t n, cap; } Queue;

enum { W_NONE, W_VIEW, W_ATTEMPT, W_COMMIT };

typedef struct Txn {
  int active;
  uint64_t attempt;
  const char *command;   /* "call" or "act" */
  char *source;
  double t0;
  uint64_t origin;       /* client that asked */
  json_t *origin_id;
  uint64_t responder;    /* client to answer with the worker's next message */
  json_t *responder_id;
  double deadline;       /* pause timeout */
  int timed_out, aborting_for_shutdown;
  int published;
  uint64_t revision;     /* published revision */
  json_t *reply;         /* reply held until the worker acknowledges */
} Txn;

typedef struct Kernel {
  const char *dir;
  char sock[128];
  char pidfile[4096];
  store_env *s;
  int lfd;
  Client *clients[MAX_CLIENTS];
  int nclients;
  uint64_t next_serial;
  /* worker */
  int wfd;
  pid_t wpid;
  uint64_t base, gen, revision;
  char wstatus[32];
  int wait;
  int in_pause;
  uint64_t viewer;
  json_t *viewer_id;
  Txn cur;
  Queue txq, viewq, cmdq;
  /* counters */
  uint64_t next_attempt, attempts, restarts, consecutive_failures;
  double started, pause_timeout;
  int stopping;
  double stop_deadline;
  int detached;
} Kernel;

static volatile sig_atomic_t got_term;
static void on_term(int sig) { (void)sig; got_term = 1; }

/* ------------------------------------------------------------ clients */

static Client *client_by_serial(Kernel *K, uint64_t serial) {
  if (!serial) return NULL;
  for (int i = 0; i < K->nclients; i++)
    if (K->clients[i]->serial == serial) return K->clients[i];
  return NULL;
}

static void client_flush(Client *c) {
  while (c->outoff < c->outlen) {
    ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w <= 0) { c->closing = 2; c->outlen = c->outoff = 0; return; }  /* gone */
    c->outoff += (size_t)w;
  }
  c->outlen = c->outoff = 0;
}

/* Send a reply (stolen) to a client, adding its id. */
static void reply(Kernel *K, uint64_t serial, json_t *id, json_t *msg) {
  Client *c = client_by_serial(K, serial);
  if (!c || c->closing == 2) { json_decref(msg); return; }
  if (id) json_object_set(msg, "id", id);
  char *text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(msg);
  if (!text) return;
  size_t n = strlen(text);
  if (c->outlen - c->outoff + n + 1 > KPROTO_REPLY_MAX) {  /* not reading: drop it */
    free(text);
    c->closing = 2;
    return;
  }
  if (c->outlen + n + 1 > c->outcap) {
    if (c->outoff) {
      memmove(c->out, c->out + c->outoff, c->outlen - c->outoff);
      c->outlen -= c->outoff;
      c->outoff = 0;
    }
    size_t cap = c->outcap ? c->outcap : 4096;
    while (cap < c->outlen + n + 1) cap *= 2;
    char *p = realloc(c->out, cap);
    if (!p) { free(text); c->closing = 2; return; }
    c->out = p;
    c->outcap = cap;
  }
  memcpy(c->out + c->outlen, text, n);
  c->out[c->outlen + n] = '\n';
  c->outlen += n + 1;
  free(text);
  client_flush(c);
}

static void reply_err(Kernel *K, uint64_t serial, json_t *id, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void reply_err(Kernel *K, uint64_t serial, json_t *id, const char *code, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  reply(K, serial, id, json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "message", msg));
}

static void client_free(Kernel *K, int i) {
  Client *c = K->clients[i];
  close(c->fd);
  free(c->in);
  free(c->out);
  free(c);
  K->clients[i] = K->clients[--K->nclients];
}

/* ------------------------------------------------------------- queues */

static int q_push(Queue *q, uint64_t client, json_t *id, json_t *req) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 16;
    Pending *v = realloc(q->v, cap * sizeof *v);
    if (!v) return -1;
    q->v = v;
    q->cap = cap;
  }
  q->v[q->n++] = (Pending){client, id ? json_incref(id) : NULL, json_incref(req)};
  return 0;
}

static Pending q_pop(Queue *q) {
  Pending p = q->v[0];
  memmove(q->v, q->v + 1, (q->n - 1) * sizeof *q->v);
  q->n--;
  return p;
}

static void p_free(Pending *p) {
  json_decref(p->id);
  json_decref(p->req);
}

/* --------------------------------------------------------------- events */

static void kevent(Kernel *K, json_t *o) { cli_event(K->s, "kernel", o); }

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

typedef struct { json_t *entries; unsigned char *blob; size_t len, cap; } Batch;

static int batch_flush(Kernel *K, Batch *b) {
  if (!json_array_size(b->entries)) return 0;
  int rc = wsend(K, json_pack("{s:s, s:O}", "op", "import", "entries", b->entries), b->blob, b->len);
  json_array_clear(b->entries);
  b->len = 0;
  return rc;
}

/* Start a worker from CURRENT.  0, or -1 with a message in err. */
static int start_worker(Kernel *K, char *err, size_t errlen) {
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
  struct timeval tv = {120, 0};
  setsockopt(K->wfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(K->wfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  int rc = store_current(K->s, &K->revision);
  cli_map m = {.with_bytes = 1};
  if (rc == STORE_OK) rc = cli_map_load(K->s, STORE_REV_CURRENT, &m);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "cannot read CURRENT: %s", store_errmsg(K->s));
    cli_map_free(&m);
    return -1;
  }
  int bad = wsend(K, json_pack("{s:s, s:I, s:I}", "op", "init", "base", (json_int_t)K->base,
                               "revision", (json_int_t)K->revision), NULL, 0);
  static const jiti_EntryKind order[] = {JITI_ENTRY_STRUCTURE, JITI_ENTRY_MACRO, JITI_ENTRY_FUNCTION,
                                         JITI_ENTRY_VARIABLE, JITI_ENTRY_DATA, JITI_ENTRY_INVARIANT};
  Batch b = {json_array(), NULL, 0, 0};
  for (size_t k = 0; !bad && k < sizeof order / sizeof order[0]; k++) {
    int sk = cli_store_kind(order[k]);
    for (size_t i = 0; !bad && i < m.n; i++) {
      cli_entry *e = &m.v[i];
      if (e->kind != sk) continue;
      if (b.len + e->len > b.cap) {
        size_t cap = b.cap ? b.cap : 65536;
        while (cap < b.len + e->len) cap *= 2;
        unsigned char *p = realloc(b.blob, cap);
        if (!p) { bad = 1; break; }
        b.blob = p;
        b.cap = cap;
      }
      memcpy(b.blob + b.len, e->bytes, e->len);
      b.len += e->len;
      json_array_append_new(b.entries, json_pack("{s:s, s:s, s:I}", "kind", jiti_entry_kind_name(order[k]),
                                                 "name", e->name, "len", (json_int_t)e->len));
      if (b.len >= IMPORT_BATCH_BYTES || json_array_size(b.entries) >= IMPORT_BATCH_ENTRIES)
        bad = batch_flush(K, &b);
    }
  }
  if (!bad) bad = batch_flush(K, &b);
  json_decref(b.entries);
  free(b.blob);
  size_t n = m.n;
  cli_map_free(&m);
  if (!bad) bad = wsend(K, json_pack("{s:s}", "op", "start"), NULL, 0);
  json_t *r = NULL;
  char why[512] = "";
  if (!bad && wire_recv(K->wfd, &r, NULL, NULL, why, sizeof why) == 0) {
    const char *ev = json_string_value(json_object_get(r, "event"));
    if (ev && !strcmp(ev, "ready")) {
      K->gen = (uint64_t)json_integer_value(json_object_get(r, "generation"));
      snprintf(K->wstatus, sizeof K->wstatus, "%s", json_string_value(json_object_get(r, "status")));
      const char *msg = json_string_value(json_object_get(r, "message"));
      logf_("worker %d ready: revision %" PRIu64 ", %zu entries, generation %" PRIu64 ", %s%s%s",
            (int)pid, K->revision, n, K->gen, K->wstatus, msg && *msg ? ": " : "", msg ? msg : "");
      json_decref(r);
      K->wait = W_NONE;
      K->in_pause = 0;
      return 0;
    }
    snprintf(why, sizeof why, "%s", json_string_value(json_object_get(r, "message"))
                                        ? json_string_value(json_object_get(r, "message")) : "unexpected reply");
    json_decref(r);
  } else if (!why[0]) {
    snprintf(why, sizeof why, "the worker stopped reading");
  }
  /* failed: reap it */
  kill(pid, SIGKILL);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  close(K->wfd);
  K->wfd = -1;
  K->wpid = 0;
  if (!strcmp(why, "eof") || !strcmp(why, "truncated frame header"))
    snprintf(why, sizeof why, "the worker died during startup (%s %d)",
             WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  snprintf(err, errlen, "%s", why);
  return -1;
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

static void txn_clear(Kernel *K) {
  Txn *t = &K->cur;
  free(t->source);
  json_decref(t->origin_id);
  json_decref(t->responder_id);
  json_decref(t->reply);
  memset(t, 0, sizeof *t);
}

/* Commands queued for a pause that has ended: their generation is old. */
static void fail_commands(Kernel *K, const char *code, const char *why) {
  while (K->cmdq.n) {
    Pending p = q_pop(&K->cmdq);
    reply_err(K, p.client, p.id, code, "%s", why);
    p_free(&p);
  }
}

static void finish_txn(Kernel *K, const char *reason, const char *extra) {
  Txn *t = &K->cur;
  char src[80];
  snippet(t->source, src, sizeof src);
  logf_("attempt %" PRIu64 " %s %s%s%s (%.1f ms, generation %" PRIu64 "): %s", t->attempt,
        t->command, reason, extra ? " " : "", extra ? extra : "", (now_s() - t->t0) * 1000,
        K->gen, src);
  txn_clear(K);
  K->in_pause = 0;
  fail_commands(K, "stale", "the paused transaction ended before this command ran; observe again");
}

static void worker_died(Kernel *K) {
  int st = 0;
  if (K->wpid) {
    /* EOF first: make sure it is gone */
    if (waitpid(K->wpid, &st, WNOHANG) == 0) {
      kill(K->wpid, SIGKILL);
      while (waitpid(K->wpid, &st, 0) < 0 && errno == EINTR) {}
    }
  }
  close(K->wfd);
  K->wfd = -1;
  char how[160];
  describe_status(st, how, sizeof how);
  logf_("worker %d %s", (int)K->wpid, how);
  K->wpid = 0;
  Txn *t = &K->cur;
  if (t->active) {
    if (K->wait == W_COMMIT && t->published) {
      /* the revision is durable; the fresh worker imports it */
      json_t *r = t->reply;
      t->reply = NULL;
      json_object_set_new(r, "generation", json_integer((json_int_t)(K->gen + 1)));
      reply(K, t->responder, t->responder_id, r);
      kevent(K, json_pack("{s:s, s:I, s:I, s:s}", "event", "accepted", "attempt", (json_int_t)t->attempt,
                          "revision", (json_int_t)t->revision, "note", how));
      finish_txn(K, "accepted", "(worker died after publication)");
    } else {
      char msg[512];
      snprintf(msg, sizeof msg, "the worker %s during attempt %" PRIu64 "; nothing was published; "
               "a fresh worker was started from revision %" PRIu64, how, t->attempt, K->revision);
      kevent(K, json_pack("{s:s, s:I, s:s, s:s}", "event", "interrupted", "attempt", (json_int_t)t->attempt,
                          "command", t->command, "reason", how));
      if (t->responder) reply_err(K, t->responder, t->responder_id, "interrupted", "%s", msg);
      finish_txn(K, "interrupted", how);
    }
  }
  if (K->wait == W_VIEW && K->viewer) {  /* ask again */
    json_t *req = json_pack("{s:s}", "op", "observe");
    Queue q = K->viewq;
    K->viewq = (Queue){0};
    q_push(&K->viewq, K->viewer, K->viewer_id, req);
    for (size_t i = 0; i < q.n; i++) { K->viewq.n < MAX_QUEUE ? (void)q_push(&K->viewq, q.v[i].client, q.v[i].id, q.v[i].req) : (void)0; p_free(&q.v[i]); }
    free(q.v);
    json_decref(req);
  }
  json_decref(K->viewer_id);
  K->viewer_id = NULL;
  K->viewer = 0;
  K->wait = W_NONE;
  K->in_pause = 0;
  K->restarts++;
  kevent(K, json_pack("{s:s, s:s, s:I}", "event", "worker-restarted", "reason", how,
                      "revision", (json_int_t)K->revision));
  if (K->stopping) return;
  K->base = K->gen + 1;
  char err[1024];
  while (start_worker(K, err, sizeof err) != 0) {
    logf_("cannot start a worker: %s", err);
    if (++K->consecutive_failures >= 3) {
      logf_("giving up after 3 failed worker starts; stopping");
      K->stopping = 1;
      return;
    }
    sleep(1);
  }
  K->consecutive_failures = 0;
}

/* ------------------------------------------------------ transactions */

static void send_or_die(Kernel *K, json_t *m) {
  if (wsend(K, m, NULL, 0) != 0) worker_died(K);
}

static void start_txn(Kernel *K, Pending *p) {
  const char *op = json_string_value(json_object_get(p->req, "op"));
  int is_call = !strcmp(op, "call");
  json_t *gen = json_object_get(p->req, "generation");
  const char *source;
  if (is_call) source = json_string_value(json_object_get(p->req, "source"));
  else source = json_string_value(json_object_get(json_object_get(p->req, "action"), "source"));
  if (gen && (uint64_t)json_integer_value(gen) != K->gen) {
    reply(K, p->client, p->id,
          json_pack("{s:b, s:s, s:s, s:I}", "ok", 0, "code", "stale",
                    "message", "stale generation: the world changed since your view; observe again",
                    "generation", (json_int_t)K->gen));
    return;
  }
  Txn *t = &K->cur;
  txn_clear(K);
  t->active = 1;
  t->attempt = K->next_attempt++;
  K->attempts++;
  t->command = is_call ? "call" : "act";
  t->source = strdup(source ? source : "");
  t->t0 = now_s();
  t->origin = t->responder = p->client;
  t->origin_id = p->id ? json_incref(p->id) : NULL;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  char src[1024];
  snippet(source, src, sizeof src);
  kevent(K, json_pack("{s:s, s:I, s:s, s:s, s:I, s:I}", "event", "started", "attempt",
                      (json_int_t)t->attempt, "command", t->command, "source", src,
                      "parent", (json_int_t)K->revision, "generation", (json_int_t)K->gen));
  json_t *m = json_pack("{s:s, s:s, s:s, s:I, s:b}", "op", "attempt", "kind",
                        is_call ? "application" : "action", "source", source ? source : "",
                        "generation", (json_int_t)K->gen, "pausable", !is_call);
  K->wait = W_ATTEMPT;
  send_or_die(K, m);
}

static void send_command(Kernel *K, Pending *p) {
  json_t *a = json_object_get(p->req, "action");
  json_t *gen = json_object_get(p->req, "generation");
  if ((uint64_t)json_integer_value(gen) != K->gen) {
    reply(K, p->client, p->id,
          json_pack("{s:b, s:s, s:s, s:I}", "ok", 0, "code", "stale",
                    "message", "stale generation: the pause changed since your view; observe again",
                    "generation", (json_int_t)K->gen));
    return;
  }
  json_t *m = json_pack("{s:s, s:O, s:O}", "op", "command", "type", json_object_get(a, "type"),
                        "generation", gen);
  json_t *v;
  if ((v = json_object_get(a, "source"))) json_object_set(m, "source", v);
  if ((v = json_object_get(a, "restart_id"))) json_object_set(m, "restart_id", v);
  if ((v = json_object_get(a, "arguments"))) json_object_set(m, "arguments", v);
  Txn *t = &K->cur;
  json_decref(t->responder_id);
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  K->wait = W_ATTEMPT;
  send_or_die(K, m);
}

static void send_abort(Kernel *K, const char *why) {
  Txn *t = &K->cur;
  json_decref(t->responder_id);
  t->responder = 0;
  t->responder_id = NULL;
  logf_("attempt %" PRIu64 ": %s; aborting", t->attempt, why);
  K->wait = W_ATTEMPT;
  send_or_die(K, json_pack("{s:s, s:s, s:I}", "op", "command", "type", "abort",
                           "generation", (json_int_t)K->gen));
}

/* Give the worker its next request, if it is free and one waits. */
static void pump(Kernel *K) {
  while (K->wfd >= 0 && K->wait == W_NONE) {
    if (K->viewq.n) {
      Pending p = q_pop(&K->viewq);
      K->viewer = p.client;
      K->viewer_id = p.id ? json_incref(p.id) : NULL;
      K->wait = W_VIEW;
      json_t *m = json_pack("{s:s}", "op", "observe");
      json_t *b = json_object_get(p.req, "budget");
      if (b) json_object_set(m, "budget", b);
      p_free(&p);
      send_or_die(K, m);
      continue;
    }
    if (K->in_pause) {
      if (K->stopping && !K->cur.aborting_for_shutdown) {
        K->cur.aborting_for_shutdown = 1;
        send_abort(K, "the kernel is shutting down");
        continue;
      }
      if (!K->cmdq.n) return;
      Pending p = q_pop(&K->cmdq);
      send_command(K, &p);
      p_free(&p);
      continue;
    }
    if (K->stopping || !K->txq.n) return;
    Pending p = q_pop(&K->txq);
    start_txn(K, &p);
    p_free(&p);
  }
}

static json_t *changes_brief(json_t *changes) {
  json_t *a = json_array();
  size_t i;
  json_t *c;
  json_array_foreach(changes, i, c)
    json_array_append_new(a, json_pack("{s:O, s:O, s:O}", "kind", json_object_get(c, "kind"),
                                       "name", json_object_get(c, "name"),
                                       "removed", json_object_get(c, "removed")));
  return a;
}

/* The worker reported an accepted attempt awaiting commit: publish. */
static void publish(Kernel *K, json_t *m, const unsigned char *blob, size_t bloblen) {
  Txn *t = &K->cur;
  json_t *changes = json_object_get(m, "changes");
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
    char summary[200];
    snprintf(summary, sizeof summary, "%s: ", t->command);
    snippet(t->source, summary + strlen(summary), sizeof summary - strlen(summary));
    store_rev_info info = {!strcmp(t->command, "call") ? STORE_REV_APPLICATION : STORE_REV_ACTION,
                           gen + 1, 0, JITI_VERSION, summary, NULL};
    if (store_publish(K->s, K->revision, &info, ch, nc, rm, nr, &rev) != STORE_OK) {
      bad = 1;
      snprintf(why, sizeof why, "%s", store_errmsg(K->s));
    }
  }
  free(ch);
  free(rm);
  json_t *value = json_object_get(m, "value"), *output = json_object_get(m, "output");
  if (bad) {
    t->reply = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", "publication-failed", "outcome",
                         "publication-failed", "message", why);
    logf_("attempt %" PRIu64 ": publication failed: %s", t->attempt, why);
    K->wait = W_COMMIT;
    send_or_die(K, json_pack("{s:s}", "op", "restore"));
    return;
  }
  t->published = 1;
  t->revision = rev;
  K->revision = rev;
  t->reply = json_pack("{s:b, s:s, s:I, s:o}", "ok", 1, "outcome", "accepted", "revision", (json_int_t)rev,
                       "changes", changes_brief(changes));
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
  if (K->wait == W_VIEW && !strcmp(ev, "view")) {
    json_t *v = json_object_get(m, "view");
    K->wait = W_NONE;
    reply(K, K->viewer, K->viewer_id, json_pack("{s:b, s:O}", "ok", 1, "view", v));
    json_decref(K->viewer_id);
    K->viewer_id = NULL;
    K->viewer = 0;
    return;
  }
  if (K->wait == W_ATTEMPT && !strcmp(ev, "paused")) {
    json_t *p = json_object_get(m, "pause");
    K->gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
    K->wait = W_NONE;
    int first = !K->in_pause;
    K->in_pause = 1;
    t->deadline = now_s() + K->pause_timeout;
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
    if (first || json_integer_value(json_object_get(p, "pause")) > 0) {
      if (first || !lv)
        kevent(K, json_pack("{s:s, s:I, s:O, s:I}", "event", "paused", "attempt", (json_int_t)t->attempt,
                            "condition", json_object_get(p, "condition_type"), "generation",
                            (json_int_t)K->gen));
    }
    if (first) logf_("attempt %" PRIu64 " paused: %s", t->attempt,
                     json_string_value(json_object_get(p, "report")));
    reply(K, t->responder, t->responder_id, r);
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
    fail_commands(K, "stale", "the paused transaction ended before this command ran; observe again");
    if (reason && !strcmp(reason, "accepted") && status && !strcmp(status, "awaiting-commit")) {
      publish(K, m, blob, bloblen);
      return;
    }
    K->wait = W_NONE;
    const char *msg = json_string_value(json_object_get(m, "message"));
    if (t->timed_out && reason && !strcmp(reason, "aborted")) msg = "aborted: the pause timed out";
    json_t *r;
    if (reason && !strcmp(reason, "accepted"))   /* a preview */
      r = json_pack("{s:b, s:s, s:I}", "ok", 1, "outcome", "accepted", "generation", (json_int_t)K->gen);
    else
      r = json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", reason ? reason : "error", "outcome",
                    reason ? reason : "error", "message", msg ? msg : "", "generation", (json_int_t)K->gen);
    json_t *v;
    if ((v = json_object_get(m, "output"))) json_object_set(r, "output", v);
    if (t->active) {
      kevent(K, json_pack("{s:s, s:I, s:s, s:s}", "event", event_of(reason ? reason : "error"),
                          "attempt", (json_int_t)t->attempt, "outcome", reason ? reason : "error",
                          "message", msg ? msg : ""));
      reply(K, t->responder, t->responder_id, r);
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
      kevent(K, json_pack("{s:s, s:I, s:s, s:I, s:I}", "event", "accepted", "attempt",
                          (json_int_t)t->attempt, "outcome", "accepted", "revision",
                          (json_int_t)t->revision, "generation", (json_int_t)K->gen));
    } else {
      kevent(K, json_pack("{s:s, s:I, s:s}", "event", "failed", "attempt", (json_int_t)t->attempt,
                          "outcome", "publication-failed"));
    }
    if (r) reply(K, t->responder, t->responder_id, r);
    finish_txn(K, t->published ? "accepted" : "publication-failed", extra);
    return;
  }
  logf_("unexpected message from the worker (%s) while waiting (%d); restarting it", ev, K->wait);
  kill(K->wpid, SIGKILL);
  worker_died(K);
}

/* ----------------------------------------------------------- requests */

static int only_members(json_t *o, const char *const *allowed, const char **bad) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int ok = 0;
    for (int i = 0; allowed[i]; i++) if (!strcmp(k, allowed[i])) ok = 1;
    if (!ok) { *bad = k; return 0; }
  }
  return 1;
}

static int is_gen(json_t *g) { return json_is_integer(g) && json_integer_value(g) >= 0; }

static const char *state_name(Kernel *K) {
  if (K->in_pause) return "paused";
  if (K->cur.active) return K->wait == W_COMMIT ? "publishing" : "running";
  return K->wstatus;
}

static void begin_shutdown(Kernel *K, const char *why) {
  if (K->stopping) return;
  K->stopping = 1;
  K->stop_deadline = now_s() + 10;
  logf_("shutting down (%s)", why);
  if (K->lfd >= 0) { close(K->lfd); K->lfd = -1; unlink(K->sock); }
  while (K->txq.n) {
    Pending p = q_pop(&K->txq);
    reply_err(K, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
    p_free(&p);
  }
  fail_commands(K, "shutting-down", "the kernel is shutting down; the pause is aborted");
}

static void handle_request(Kernel *K, Client *c, const char *line, size_t len) {
  uint64_t cs = c->serial;
  if (!kproto_utf8_valid(line, len)) {
    reply_err(K, cs, NULL, "invalid-utf8", "the request is not valid UTF-8");
    return;
  }
  json_error_t je;
  json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  if (!req) {
    reply_err(K, cs, NULL, "malformed-json", "the request is not valid JSON: %s (column %d)", je.text,
              je.column);
    return;
  }
  json_t *id = json_object_get(req, "id");
  if (!json_is_object(req)) {
    reply_err(K, cs, NULL, "invalid-request", "a request is one JSON object with an \"op\" member");
    goto out;
  }
  if (id && !json_is_string(id) && !json_is_integer(id)) {
    reply_err(K, cs, NULL, "invalid-request", "\"id\" must be a string or an integer");
    goto out;
  }
  const char *op = json_string_value(json_object_get(req, "op"));
  const char *bad = NULL;
  if (!op) {
    reply_err(K, cs, id, "invalid-request", "the request has no \"op\" (a string: hello, observe, call, act, status, shutdown)");
    goto out;
  }
  if (K->stopping && strcmp(op, "hello") && strcmp(op, "status")) {
    reply_err(K, cs, id, "shutting-down", "the kernel is shutting down");
    goto out;
  }
  if (!strcmp(op, "hello")) {
    static const char *const ok[] = {"op", "id", "protocol", "client", NULL};
    if (!only_members(req, ok, &bad)) goto unknown_member;
    json_t *p = json_object_get(req, "protocol");
    if (p && (!json_is_integer(p) || json_integer_value(p) != KPROTO_VERSION)) {
      reply_err(K, cs, id, "unsupported-protocol", "this kernel speaks protocol %d only", KPROTO_VERSION);
      goto out;
    }
    reply(K, cs, id, json_pack("{s:b, s:i, s:s, s:s, s:i}", "ok", 1, "protocol", KPROTO_VERSION,
                               "kernel", JITI_VERSION, "store", K->dir, "pid", (int)getpid()));
  } else if (!strcmp(op, "status")) {
    static const char *const ok[] = {"op", "id", NULL};
    if (!only_members(req, ok, &bad)) goto unknown_member;
    reply(K, cs, id, json_pack("{s:b, s:s, s:i, s:s, s:i, s:i, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:i, s:f, s:b}",
                               "ok", 1, "kernel", JITI_VERSION, "protocol", KPROTO_VERSION, "store", K->dir,
                               "pid", (int)getpid(), "worker_pid", (int)K->wpid,
                               "revision", (json_int_t)K->revision, "generation", (json_int_t)K->gen,
                               "state", state_name(K), "queue", (json_int_t)K->txq.n,
                               "attempts", (json_int_t)K->attempts,
                               "current_attempt", (json_int_t)(K->cur.active ? K->cur.attempt : 0),
                               "worker_restarts", (json_int_t)K->restarts, "clients", K->nclients,
                               "uptime", now_s() - K->started, "stopping", K->stopping));
  } else if (!strcmp(op, "observe")) {
    static const char *const ok[] = {"op", "id", "budget", NULL};
    if (!only_members(req, ok, &bad)) goto unknown_member;
    json_t *b = json_object_get(req, "budget");
    if (b && !(json_is_integer(b) && json_integer_value(b) > 0 && json_integer_value(b) <= (16 << 20))) {
      reply_err(K, cs, id, "invalid-request", "\"budget\" must be a byte count from 1 to 16777216");
      goto out;
    }
    if (K->viewq.n >= MAX_QUEUE) reply_err(K, cs, id, "busy", "too many requests are waiting; retry later");
    else q_push(&K->viewq, cs, id, req);
  } else if (!strcmp(op, "call")) {
    static const char *const ok[] = {"op", "id", "source", "generation", NULL};
    if (!only_members(req, ok, &bad)) goto unknown_member;
    json_t *g = json_object_get(req, "generation");
    if (!json_is_string(json_object_get(req, "source"))) {
      reply_err(K, cs, id, "invalid-request", "call needs \"source\": one Lisp form as a string");
    } else if (g && !is_gen(g)) {
      reply_err(K, cs, id, "invalid-request", "\"generation\" must be a non-negative integer");
    } else if (K->txq.n >= MAX_QUEUE) {
      reply_err(K, cs, id, "busy", "too many transactions are waiting; retry later");
    } else {
      q_push(&K->txq, cs, id, req);
    }
  } else if (!strcmp(op, "act")) {
    static const char *const ok[] = {"op", "id", "generation", "action", NULL};
    if (!only_members(req, ok, &bad)) goto unknown_member;
    json_t *a = json_object_get(req, "action");
    const char *type = json_string_value(json_object_get(a, "type"));
    if (!is_gen(json_object_get(req, "generation"))) {
      reply_err(K, cs, id, "invalid-request", "act needs \"generation\": the generation of the view the action was made from");
      goto out;
    }
    if (!json_is_object(a) || !type) {
      reply_err(K, cs, id, "invalid-request", "act needs \"action\": {\"type\": \"evaluate\"|\"resume\"|\"abort\", ...}");
      goto out;
    }
    static const char *const ev[] = {"type", "source", NULL}, *const rs[] = {"type", "restart_id", "arguments", NULL},
                             *const ab[] = {"type", NULL};
    int pause_cmd = 0;
    if (!strcmp(type, "evaluate")) {
      if (!only_members(a, ev, &bad)) goto unknown_member;
      if (!json_is_string(json_object_get(a, "source"))) {
        reply_err(K, cs, id, "invalid-request", "evaluate needs \"source\": one Lisp form as a string");
        goto out;
      }
      pause_cmd = K->in_pause;
    } else if (!strcmp(type, "resume")) {
      if (!only_members(a, rs, &bad)) goto unknown_member;
      json_t *args = json_object_get(a, "arguments");
      if (!json_is_string(json_object_get(a, "restart_id")) || (args && !json_is_string(args))) {
        reply_err(K, cs, id, "invalid-request", "resume needs \"restart_id\" (a string from the pause's menu) and optionally \"arguments\" (Lisp source of an argument list)");
        goto out;
      }
      pause_cmd = 1;
    } else if (!strcmp(type, "abort")) {
      if (!only_members(a, ab, &bad)) goto unknown_member;
      pause_cmd = 1;
    } else {
      reply_err(K, cs, id, "invalid-request", "unknown action type '%s' (evaluate, resume or abort)", type);
      goto out;
    }
    if (pause_cmd && !K->in_pause) {
      reply_err(K, cs, id, "not-paused", "no transaction is paused; %s needs a pause (observe to see the status)", type);
    } else if ((pause_cmd ? K->cmdq.n : K->txq.n) >= MAX_QUEUE) {
      reply_err(K, cs, id, "busy", "too many requests are waiting; retry later");
    } else {
      q_push(pause_cmd ? &K->cmdq : &K->txq, cs, id, req);
    }
  } else if (!strcmp(op, "shutdown")) {
    static const char *const ok[] = {"op", "id", NULL};
    if (!only_members(req, ok, &bad)) goto unknown_member;
    reply(K, cs, id, json_pack("{s:b, s:s}", "ok", 1, "message", "shutting down"));
    begin_shutdown(K, "shutdown request");
  } else {
    reply_err(K, cs, id, "unknown-op", "unknown op '%.100s' (hello, observe, call, act, status, shutdown)", op);
  }
  goto out;
unknown_member:
  reply_err(K, cs, id, "invalid-request", "unknown member '%.100s' in %s", bad, op);
out:
  json_decref(req);
}

static void client_read(Kernel *K, Client *c) {
  for (;;) {
    if (c->incap - c->inlen < 65536) {
      size_t cap = c->incap ? c->incap * 2 : 65536;
      if (cap > KPROTO_LINE_MAX + 131072) cap = KPROTO_LINE_MAX + 131072;
      if (cap <= c->incap) break;
      char *p = realloc(c->in, cap);
      if (!p) { c->closing = 2; return; }
      c->in = p;
      c->incap = cap;
    }
    ssize_t r = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (r <= 0) { c->closing = c->outlen > c->outoff ? 1 : 2; break; }
    c->inlen += (size_t)r;
    if (c->inlen >= c->incap) break;
  }
  size_t start = 0;
  for (size_t i = 0; i < c->inlen && !c->closing; i++) {
    if (c->in[i] != '\n') continue;
    size_t len = i - start;
    if (len && c->in[start + len - 1] == '\r') len--;
    if (len > KPROTO_LINE_MAX) {
      reply_err(K, c->serial, NULL, "line-too-long", "a request line is at most %zu bytes", KPROTO_LINE_MAX);
      c->closing = 1;
    } else if (len) {
      handle_request(K, c, c->in + start, len);
    }
    start = i + 1;
  }
  if (start) {
    memmove(c->in, c->in + start, c->inlen - start);
    c->inlen -= start;
  }
  if (!c->closing && c->inlen > KPROTO_LINE_MAX) {
    reply_err(K, c->serial, NULL, "line-too-long", "a request line is at most %zu bytes; closing the connection",
              KPROTO_LINE_MAX);
    c->closing = 1;
    c->inlen = 0;
  }
}

static void accept_clients(Kernel *K) {
  for (;;) {
    int fd = accept4(K->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (K->nclients >= MAX_CLIENTS) {
      const char *m = "{\"ok\":false,\"code\":\"busy\",\"message\":\"too many clients\"}\n";
      (void)!send(fd, m, strlen(m), MSG_NOSIGNAL);
      close(fd);
      continue;
    }
    Client *c = calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->fd = fd;
    c->serial = ++K->next_serial;
    K->clients[K->nclients++] = c;
  }
}

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
  K->base = cli_generation(K->s, cur);
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
  if (start_worker(K, err, sizeof err) != 0) {
    fprintf(stderr, "jiti kernel: cannot start the worker: %s\n", err);
    return EXIT_FAIL;
  }
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
  kevent(K, json_pack("{s:s, s:i, s:I, s:I, s:I}", "event", "kernel-started", "pid", (int)getpid(),
                      "revision", (json_int_t)K->revision, "generation", (json_int_t)K->gen,
                      "interrupted", (json_int_t)interrupted));
  logf_("serving the store at %s on %s (pid %d, revision %" PRIu64 ", generation %" PRIu64
        ", %" PRIu64 " interrupted attempt%s marked)", K->dir, K->sock, (int)getpid(), K->revision, K->gen,
        interrupted, interrupted == 1 ? "" : "s");
  if (K->detached) {
    FILE *f = fopen(K->pidfile, "w");
    if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
  }
  if (ready_fd >= 0) {
    (void)!write(ready_fd, "ok", 2);
    close(ready_fd);
  }
  K->started = now_s();

  sigset_t none;
  sigemptyset(&none);
  struct pollfd *pfd = malloc((MAX_CLIENTS + 2) * sizeof *pfd);
  for (;;) {
    if (got_term && !K->stopping) begin_shutdown(K, "SIGTERM");
    pump(K);
    double now = now_s();
    if (K->in_pause && K->wait == W_NONE && K->cur.active && now >= K->cur.deadline && !K->cur.timed_out) {
      K->cur.timed_out = 1;
      char why[80];
      snprintf(why, sizeof why, "the pause timed out after %g s", K->pause_timeout);
      send_abort(K, why);
      continue;
    }
    if (K->stopping && K->wait == W_NONE && !K->in_pause && !K->cur.active) break;
    if (K->stopping && now >= K->stop_deadline) {
      logf_("the worker did not finish within 10 s; killing it");
      if (K->wpid) kill(K->wpid, SIGKILL);
      if (K->wfd >= 0) worker_died(K);
      break;
    }
    if (K->stopping && K->wfd < 0) break;
    int n = 0;
    if (K->lfd >= 0) pfd[n++] = (struct pollfd){K->lfd, POLLIN, 0};
    int wi = -1;
    if (K->wfd >= 0) { wi = n; pfd[n++] = (struct pollfd){K->wfd, POLLIN, 0}; }
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
    if (wake < 0) wake = 0;
    struct timespec ts = {(time_t)wake, (long)((wake - (double)(time_t)wake) * 1e9)};
    int r = ppoll(pfd, (nfds_t)n, &ts, &none);
    if (r < 0) {
      if (errno == EINTR) continue;
      logf_("poll: %s", strerror(errno));
      break;
    }
    if (wi >= 0 && pfd[wi].revents) {
      json_t *m = NULL;
      unsigned char *blob = NULL;
      size_t bl = 0;
      char why[256];
      if (wire_recv(K->wfd, &m, &blob, &bl, why, sizeof why) == 0) {
        on_worker_msg(K, m, blob, bl);
        json_decref(m);
        free(blob);
      } else {
        worker_died(K);
      }
    }
    /* clients: match the poll entries by position (the array may shrink below) */
    int nc = K->nclients;
    Client **snap = malloc((size_t)(nc ? nc : 1) * sizeof *snap);
    memcpy(snap, K->clients, (size_t)nc * sizeof *snap);
    for (int i = 0; i < nc; i++) {
      Client *c = snap[i];
      short re = pfd[c0 + i].revents;
      if (!re) continue;
      if (re & POLLOUT) client_flush(c);
      if (re & (POLLIN | POLLHUP | POLLERR)) {
        if (c->closing) c->closing = 2;
        else client_read(K, c);
      }
    }
    free(snap);
    for (int i = 0; i < K->nclients;) {
      Client *c = K->clients[i];
      if (c->closing == 2 || (c->closing == 1 && c->outlen <= c->outoff)) client_free(K, i);
      else i++;
    }
    if (K->lfd >= 0 && pfd[0].revents) accept_clients(K);
  }
  free(pfd);
  /* clean shutdown */
  if (K->wfd >= 0) {
    wsend(K, json_pack("{s:s}", "op", "exit"), NULL, 0);
    int st;
    for (int i = 0; i < 100 && waitpid(K->wpid, &st, WNOHANG) == 0; i++) usleep(20000);
    if (waitpid(K->wpid, &st, WNOHANG) == 0) { kill(K->wpid, SIGKILL); waitpid(K->wpid, &st, 0); }
    close(K->wfd);
  }
  for (int i = 0; i < K->nclients; i++) {  /* best effort: deliver what is pending */
    Client *c = K->clients[i];
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    struct timeval tv = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    client_flush(c);
  }
  while (K->nclients) client_free(K, 0);
  if (K->lfd >= 0) { close(K->lfd); unlink(K->sock); }
  if (K->detached) unlink(K->pidfile);
  kevent(K, json_pack("{s:s, s:I, s:I}", "event", "kernel-stopped", "revision", (json_int_t)K->revision,
                      "generation", (json_int_t)K->gen));
  logf_("stopped (revision %" PRIu64 ", generation %" PRIu64 ")", K->revision, K->gen);
  store_close(K->s);
  return EXIT_OK;
}

int cmd_kernel(int argc, char **argv) {
  static Kernel K;
  memset(&K, 0, sizeof K);
  K.dir = cli_default_store();
  K.pause_timeout = 120;
  K.lfd = K.wfd = -1;
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
