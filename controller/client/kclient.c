/*
** kclient.c — the client side of the kernel protocol: connections to
** DIR/kernel.sock and requests matched to replies by "id".  It prints
** nothing but the connection's own failures (render.c prints replies).
** kclient.h documents each call.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "kclient.h"
#include "proto.h"

void kclient_init(kclient *k, const char *cmd, const char *dir) {
  memset(k, 0, sizeof *k);
  k->fd = -1;
  k->cmd = cmd;
  k->dir = dir;
  k->next_id = 1;
}

int kclient_connect(kclient *k) {
  kclient_close(k);
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
  k->fd = fd;
  return 0;
}

void kclient_close(kclient *k) {
  if (k->fd >= 0) close(k->fd);
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
    kclient_close(k);
    return KCLIENT_UNSENT;
  }
  return KCLIENT_OK;
}

int kclient_send(kclient *k, json_t *req) {
  json_int_t id;
  return send_request(k, req, &id);
}

int kclient_call(kclient *k, json_t *req, json_t **reply, volatile sig_atomic_t *intr) {
  *reply = NULL;
  json_int_t id;
  if (send_request(k, req, &id) != KCLIENT_OK) return KCLIENT_UNSENT;
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
    struct pollfd p = {.fd = k->fd, .events = POLLIN};
    int r = poll(&p, 1, -1);
    if (r < 0 && errno == EINTR) continue;  /* the flag is checked above */
    if (r < 0) break;
    r = fill(k, 1);
    if (r == -1) continue;
    if (r == 0) break;
  }
  snprintf(k->err, sizeof k->err, "the kernel for %s closed the connection without a reply (see its log; "
           "'jiti status --store %s')", k->dir, k->dir);
  kclient_close(k);
  return KCLIENT_NO_REPLY;
}

int kclient_serving(const char *dir) {
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

/* ------------------------------------------------------------ replies */

const char *kclient_str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

json_int_t kclient_int(json_t *o, const char *k) {
  return json_integer_value(json_object_get(o, k));
}
