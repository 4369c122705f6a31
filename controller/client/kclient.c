/*
** kclient.c — the client side of the kernel protocol: connections to
** DIR/kernel.sock and requests matched to replies by "id".  It prints
** nothing but the connection's own failures (render.c prints replies).
** kclient.h documents each call.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "cli.h"
#include "kclient.h"
#include "net.h"
#include "proto.h"

/* The process's remote kernel (kclient_remote): configuration set once
** by main before any connection, read-only after. */
static struct {
  const net_ClientOpts *o;
  void (*progress)(const char *line);
  char where[600];    /* what k->dir says in messages */
} remote;

void kclient_remote(const net_ClientOpts *o, void (*progress)(const char *line)) {
  remote.o = o;
  remote.progress = progress;
  if (o && o->connect) snprintf(remote.where, sizeof remote.where, "%s", o->connect);
  else if (o) snprintf(remote.where, sizeof remote.where, "world %s", o->world);
}

const net_ClientOpts *kclient_remote_opts(void) { return remote.o; }

void kclient_init(kclient *k, const char *cmd, const char *dir) {
  memset(k, 0, sizeof *k);
  k->fd = -1;
  k->cmd = cmd;
  k->dir = remote.o ? remote.where : dir;
  k->next_id = 1;
}

/* The leader of the replicated world, connected to: it is looked up in
** etcd again while there is none (a takeover), or the one named does not
** take the connection (it is going), for up to KCLIENT_LEADER_WAIT s. */
static int connect_leader(kclient *k) {
  const net_ClientOpts *o = remote.o;
  double until = mono_now() + KCLIENT_LEADER_WAIT;
  int told = 0;
  for (;;) {
    char addr[300];
    int r = net_leader_address(o->replicate, o->world, addr, sizeof addr, k->err, sizeof k->err);
    if (r == 0) {
      char why[256];
      if (net_connect(o, addr, &k->conn, &k->fd, why, sizeof why) == 0) return 0;
      snprintf(k->err, sizeof k->err, "world %.64s's leader at %.128s: %s", o->world, addr, why);
      /* refused for its credentials: the next leader would refuse them too */
      if (strstr(why, "refused this client") || strstr(why, "not trusted") || strstr(why, "token file") ||
          strstr(why, "cannot load") || strstr(why, "before accepting this client"))
        return -1;
    } else if (r != 1) {
      return -1;
    }
    if (mono_now() > until) return -1;
    if (!told && remote.progress && kclient_progress_shown()) {
      char line[700];
      snprintf(line, sizeof line, "%s; waiting for world %s's leader", k->err, o->world);
      remote.progress(line);
      told = 1;
    }
    struct timespec pause = {0, 250 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

int kclient_connect(kclient *k) {
  kclient_close(k);
  if (remote.o && remote.o->replicate) return connect_leader(k);
  if (remote.o) return net_connect(remote.o, remote.o->connect, &k->conn, &k->fd, k->err, sizeof k->err);
  char path[128];
  if (proto_socket_path(k->dir, path, sizeof path)) {
    snprintf(k->err, sizeof k->err, "the socket path %s/%s is too long for a Unix socket", k->dir,
             PROTO_SOCKET);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);  /* fits: proto_socket_path checked */
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    if (e == ENOENT || e == ECONNREFUSED)
      snprintf(k->err, sizeof k->err, "no kernel is running for %s; start one with: jiti kernel --store %s",
               k->dir, k->dir);
    else
      snprintf(k->err, sizeof k->err, "cannot connect to the kernel at %s: %s", path, strerror(e));
    return -1;
  }
  /* Whoever listens receives the source of every request and could forge
  ** every reply: it must run as this user.  (Another user who can write the
  ** store directory could replace the socket with a server of their own.) */
  struct ucred cr;
  socklen_t crlen = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0) {
    snprintf(k->err, sizeof k->err, "cannot tell who serves %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (cr.uid != geteuid()) {
    snprintf(k->err, sizeof k->err, "refusing the kernel socket %s: it is served by user %u (pid %d), not by "
             "you (user %u); someone else can write %s: stop that server, then run: chmod go-w %s",
             path, (unsigned)cr.uid, (int)cr.pid, (unsigned)geteuid(), k->dir, k->dir);
    close(fd);
    return -1;
  }
  k->fd = fd;
  return 0;
}

void kclient_close(kclient *k) {
  if (k->conn) net_close(k->conn);   /* (closes fd) */
  else if (k->fd >= 0) close(k->fd);
  k->conn = NULL;
  json_decref(k->refused);
  k->refused = NULL;
  k->fd = -1;
  free(k->buf);
  k->buf = NULL;
  k->len = k->cap = 0;
}

/* Receive what is there (wait: block until something comes).  1 bytes
** arrived, 0 end of file or an error, -1 interrupted by a signal, -2 nothing
** yet (only without wait). */
static int fill(kclient *k, int wait) {
  if (k->cap - k->len < 65536) {
    size_t cap = k->cap ? k->cap * 2 : 131072;
    if (cap > PROTO_REPLY_MAX + 131072) return 0;  /* a reply this long: give up */
    char *p = realloc(k->buf, cap);
    if (!p) return 0;
    k->buf = p;
    k->cap = cap;
  }
  ssize_t r = recv(k->fd, k->buf + k->len, k->cap - k->len, wait ? 0 : MSG_DONTWAIT);
  if (r < 0 && errno == EINTR) return -1;
  if (r < 0 && !wait && (errno == EAGAIN || errno == EWOULDBLOCK)) return -2;
  if (r <= 0) return 0;
  k->len += (size_t)r;
  return 1;
}

int kclient_alive(kclient *k) {
  if (k->fd < 0) return 0;
  for (;;) {  /* read what is pending: late replies are kept for kclient_call to skip */
    int r = fill(k, 0);
    if (r == -2) return 1;
    if (r == 0) break;
  }
  kclient_close(k);
  return 0;
}

/* Take one complete line off the buffer as JSON (NULL if it is not
** JSON); *got 0 when no complete line is buffered. */
static json_t *take_line(kclient *k, int *got) {
  char *nl = k->len ? memchr(k->buf, '\n', k->len) : NULL;
  *got = nl != NULL;
  if (!nl) return NULL;
  size_t n = (size_t)(nl - k->buf);
  json_t *j = json_loadb(k->buf, n, 0, NULL);
  memmove(k->buf, nl + 1, k->len - n - 1);
  k->len -= n + 1;
  return j;
}

static int send_all(int fd, const char *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    off += (size_t)w;
  }
  return 0;
}

/* Send req (stolen) with the next id (in *id); KCLIENT_OK or KCLIENT_UNSENT. */
static int send_request(kclient *k, json_t *req, json_int_t *id) {
  if (k->fd < 0 || !req) {
    if (k->fd < 0) snprintf(k->err, sizeof k->err, "not connected to the kernel for %s", k->dir);
    else snprintf(k->err, sizeof k->err, "cannot encode the request (is the text valid UTF-8?)");
    json_decref(req);
    return KCLIENT_UNSENT;
  }
  *id = k->next_id++;
  json_object_set_new(req, "id", json_integer(*id));
  char *text = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  if (!text) {
    snprintf(k->err, sizeof k->err, "cannot encode the request (is the text valid UTF-8?)");
    return KCLIENT_UNSENT;
  }
  size_t n = strlen(text);
  char *line = realloc(text, n + 2);
  if (!line) {
    free(text);
    snprintf(k->err, sizeof k->err, "out of memory");
    return KCLIENT_UNSENT;
  }
  line[n++] = '\n';
  int sent = send_all(k->fd, line, n);
  free(line);
  if (sent) {
    snprintf(k->err, sizeof k->err, "the kernel for %s closed the connection before the request was sent",
             k->dir);
    /* a kernel that refuses a connection (busy) says why before it closes it */
    while (fill(k, 0) == 1) {}
    int got;
    json_t *j = take_line(k, &got);
    kclient_close(k);
    if (json_is_object(j) && json_is_false(json_object_get(j, "ok")) && !json_object_get(j, "id")) k->refused = j;
    else json_decref(j);
    return KCLIENT_UNSENT;
  }
  return KCLIENT_OK;
}

int kclient_send(kclient *k, json_t *req) {
  json_int_t id;
  int rc = send_request(k, req, &id);
  if (rc == KCLIENT_OK) k->awaited = id;
  return rc;
}

static int await_reply(kclient *k, json_int_t id, json_t **reply, volatile sig_atomic_t *intr, int also);

int kclient_call(kclient *k, json_t *req, json_t **reply, volatile sig_atomic_t *intr) {
  *reply = NULL;
  json_int_t id;
  if (send_request(k, req, &id) != KCLIENT_OK) {
    if (!k->refused) return KCLIENT_UNSENT;
    *reply = k->refused;  /* the refusal answers the request */
    k->refused = NULL;
    return KCLIENT_OK;
  }
  k->awaited = id;
  return await_reply(k, id, reply, intr, -1);
}

int kclient_await(kclient *k, json_t **reply, volatile sig_atomic_t *intr) {
  *reply = NULL;
  if (k->fd < 0) {
    snprintf(k->err, sizeof k->err, "the connection to the kernel is closed: its reply is lost");
    return KCLIENT_NO_REPLY;
  }
  return await_reply(k, k->awaited, reply, intr, -1);
}

int kclient_await_fd(kclient *k, int also, json_t **reply) {
  if (k->fd < 0) {
    snprintf(k->err, sizeof k->err, "the connection to the kernel is closed: its reply is lost");
    return KCLIENT_NO_REPLY;
  }
  return await_reply(k, k->awaited, reply, NULL, also);
}

static int await_reply(kclient *k, json_int_t id, json_t **reply, volatile sig_atomic_t *intr, int also) {
  double sent = mono_now();
  int told = 0;
  for (;;) {
    int got;
    json_t *j = take_line(k, &got);
    if (got) {
      json_t *rid = json_object_get(j, "id");
      /* a reply without an id answers a line the kernel could not parse: ours */
      if (json_is_object(j) && json_object_get(j, "ok") &&
          (!rid || (json_is_integer(rid) && json_integer_value(rid) == id))) {
        json_object_del(j, "id");
        *reply = j;
        return KCLIENT_OK;
      }
      json_decref(j);  /* an event, or the reply to an abandoned request */
      continue;
    }
    if (intr && *intr) {
      snprintf(k->err, sizeof k->err, "interrupted while waiting for the kernel's reply");
      return KCLIENT_INTERRUPTED;
    }
    struct pollfd p[2] = {{.fd = k->fd, .events = POLLIN}, {.fd = also, .events = POLLIN}};
    int timeout = -1;
    if (k->waiting && !told) {
      double left = sent + k->waiting_after - mono_now();
      timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
    }
    int r = poll(p, also >= 0 ? 2 : 1, timeout);
    if (r < 0 && errno == EINTR) continue;  /* the flag is checked above */
    if (r < 0) break;
    if (r > 0 && also >= 0 && p[1].revents) return KCLIENT_READABLE;
    if (r == 0) {  /* a slow reply: say what may hold it, once */
      told = 1;
      k->waiting("no reply yet: the call is still running, or waits behind a paused transaction "
                 "(see 'jiti status'); still waiting");
      continue;
    }
    r = fill(k, 1);
    if (r == -1) continue;
    if (r == 0) break;
  }
  snprintf(k->err, sizeof k->err, "the kernel for %s closed the connection without a reply (see its log; "
           "'jiti status --store %s')", k->dir, k->dir);
  kclient_close(k);
  return KCLIENT_NO_REPLY;
}

int kclient_event(kclient *k, double timeout, json_t **ev, volatile sig_atomic_t *intr) {
  double until = mono_now() + timeout;
  *ev = NULL;
  for (;;) {
    int got;
    json_t *j = take_line(k, &got);
    if (got && json_is_object(j) && json_is_string(json_object_get(j, "event"))) {
      *ev = j;
      return KCLIENT_OK;
    }
    json_decref(j);
    if (got) continue;
    if (intr && *intr) return KCLIENT_INTERRUPTED;
    double left = until - mono_now();
    if (timeout >= 0 && left <= 0) return KCLIENT_TIMEOUT;
    struct pollfd p = {.fd = k->fd, .events = POLLIN};
    int r = poll(&p, 1, timeout < 0 ? -1 : (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    if (r < 0 || (r = fill(k, 1)) == 0) break;
  }
  snprintf(k->err, sizeof k->err, "the kernel for %s closed the connection (see its log; 'jiti status --store %s')",
           k->dir, k->dir);
  kclient_close(k);
  return KCLIENT_NO_REPLY;
}

int kclient_serving(const char *dir) {
  if (remote.o) return 1;
  kclient k;
  kclient_init(&k, "", dir);
  int up = kclient_connect(&k) == 0;
  kclient_close(&k);
  return up;
}

json_t *kclient_once(const char *dir, json_t *req, char *err, size_t errlen) {
  kclient k;
  kclient_init(&k, "", dir);
  if (!req) {
    snprintf(err, errlen, "cannot encode the request (is the text valid UTF-8?)");
    return NULL;
  }
  if (kclient_connect(&k)) {
    json_decref(req);
    snprintf(err, errlen, "%s", k.err);
    return NULL;
  }
  json_t *rep;
  int r = kclient_call(&k, req, &rep, NULL);
  kclient_close(&k);
  if (r != KCLIENT_OK) {
    snprintf(err, errlen, "%s", k.err);
    return NULL;
  }
  return rep;
}

/* A fresh idempotency key: 128 random bits in hex. */
void kclient_fresh_key(char out[33]) {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {  /* no entropy: time and pid */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(out, 33, "%016llx%08x%08x", (unsigned long long)ts.tv_sec, (unsigned)ts.tv_nsec, (unsigned)getpid());
    return;
  }
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int kclient_key_running(json_t *reply) {
  return !json_is_true(json_object_get(reply, "ok")) && !strcmp(kclient_str(reply, "code"), "busy") &&
         strstr(kclient_str(reply, "message"), "with key") != NULL;
}

int kclient_not_leader(json_t *reply) {
  if (json_is_true(json_object_get(reply, "ok"))) return 0;
  const char *code = kclient_str(reply, "code");
  if (!strcmp(code, "fenced") || !strcmp(code, "standby")) return 1;
  return !strcmp(code, "publication-failed") && strstr(kclient_str(reply, "message"), "fenced") != NULL;
}

int kclient_progress_shown(void) {
  const char *e = getenv("JITI_PROGRESS");
  if (e && *e) return strcmp(e, "0") != 0;
  return isatty(2);
}

int kclient_call_keyed(kclient *k, json_t *req, const char *key, double patience,
                       void (*progress)(const char *line), volatile sig_atomic_t *intr, json_t **reply) {
  *reply = NULL;
  if (!req) {
    snprintf(k->err, sizeof k->err, "cannot encode the request (is the text valid UTF-8?)");
    return KCLIENT_UNSENT;
  }
  char fresh[33];
  if (!key) kclient_fresh_key(fresh);
  json_object_set_new(req, "key", json_string(key ? key : fresh));
  double until = mono_now() + patience;
  int rc = KCLIENT_UNSENT;
  int follow = remote.o && remote.o->replicate;   /* a takeover is waited for, not given up on */
  void (*was)(const char *) = k->waiting;   /* only this call's tries tell */
  k->waiting = kclient_progress_shown() ? progress : NULL;
  k->waiting_after = KCLIENT_WAITING_AFTER;
  for (int tries = 0;; tries++) {
    json_t *rep = NULL;
    int refused = k->fd < 0 && kclient_connect(k) != 0;  /* no kernel listens */
    rc = refused ? KCLIENT_UNSENT : kclient_call(k, json_incref(req), &rep, intr);
    int moved = follow && rc == KCLIENT_OK && kclient_not_leader(rep);
    if (moved) kclient_close(k);   /* the next try finds the next leader */
    if (rc == KCLIENT_OK && !moved && !kclient_key_running(rep)) {
      k->waiting = was;
      json_decref(req);
      *reply = rep;
      return KCLIENT_OK;
    }
    /* interrupted, or the first try found no kernel: nothing to retry */
    if (rc == KCLIENT_INTERRUPTED || (tries == 0 && refused && !follow) || mono_now() > until) {
      if (moved) snprintf(k->err, sizeof k->err, "%s: %s", kclient_str(rep, "code"), kclient_str(rep, "message"));
      json_decref(rep);
      break;
    }
    if (progress && moved)
      progress("the kernel no longer leads the world (nothing of the call was kept); retrying on the next "
               "leader with the same key");
    else if (progress && (rc != KCLIENT_OK || tries == 0))
      progress(rc != KCLIENT_OK ? "the connection to the kernel dropped before the reply; retrying with the "
                                  "same key (the request will not run twice)"
                                : "the first try is still running; waiting for its outcome");
    json_decref(rep);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  k->waiting = was;
  json_decref(req);
  if (rc != KCLIENT_INTERRUPTED && !k->err[0]) snprintf(k->err, sizeof k->err, "the kernel did not answer");
  return rc == KCLIENT_INTERRUPTED ? rc : KCLIENT_NO_REPLY;
}

json_t *kclient_stop_keyed(const char *dir, const char *key, const char **op, char *err, size_t errlen) {
  *op = "interrupt";
  json_t *r = kclient_once(dir, json_pack("{s:s, s:s}", "op", *op, "key", key), err, errlen);
  if (r && !strcmp(kclient_str(r, "code"), "not-pausable")) {   /* a call: it cannot pause */
    json_decref(r);
    *op = "cancel";
    r = kclient_once(dir, json_pack("{s:s, s:s}", "op", *op, "key", key), err, errlen);
  }
  return r;
}

json_t *kclient_once_keyed(const char *dir, json_t *req, const char *key, double patience,
                           void (*progress)(const char *line), char *err, size_t errlen) {
  kclient k;
  kclient_init(&k, "", dir);
  json_t *rep;
  int rc = kclient_call_keyed(&k, req, key, patience, progress, NULL, &rep);
  kclient_close(&k);
  if (rc != KCLIENT_OK) snprintf(err, errlen, "%s", k.err);
  return rc == KCLIENT_OK ? rep : NULL;
}

/* ------------------------------------------------------------ replies */

const char *kclient_str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

json_int_t kclient_int(json_t *o, const char *k) {
  return json_integer_value(json_object_get(o, k));
}
