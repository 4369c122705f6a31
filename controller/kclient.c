/*
** kclient.c — the client side of the kernel protocol: connections to
** DIR/kernel.sock, requests matched to replies by "id", and the printers
** the client commands and the repl share.  kclient.h documents each call.
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
#include "kproto.h"

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
  if (kproto_socket_path(k->dir, path, sizeof path)) {
    if (!k->quiet)
      fprintf(stderr, "jiti %s: the socket path %s/%s is too long for a Unix socket\n", k->cmd,
              k->dir, KPROTO_SOCKET);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);  /* fits: kproto_socket_path checked */
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    if (k->quiet) return -1;
    if (e == ENOENT || e == ECONNREFUSED)
      fprintf(stderr, "jiti %s: no kernel is running for %s; start one with: jiti kernel --store %s\n",
              k->cmd, k->dir, k->dir);
    else
      fprintf(stderr, "jiti %s: cannot connect to the kernel at %s: %s\n", k->cmd, path, strerror(e));
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
    if (cap > KPROTO_REPLY_MAX + 131072) return 0;  /* a reply this long: give up */
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

int kclient_call(kclient *k, json_t *req, json_t **reply, volatile sig_atomic_t *intr) {
  *reply = NULL;
  if (k->fd < 0 || !req) { json_decref(req); return KCLIENT_UNSENT; }
  json_int_t id = k->next_id++;
  json_object_set_new(req, "id", json_integer(id));
  char *text = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  if (!text) return KCLIENT_UNSENT;
  size_t n = strlen(text);
  char *line = realloc(text, n + 2);
  if (!line) { free(text); return KCLIENT_UNSENT; }
  line[n++] = '\n';
  int sent = send_all(k->fd, line, n);
  free(line);
  if (sent) { kclient_close(k); return KCLIENT_UNSENT; }
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
    if (intr && *intr) return KCLIENT_INTERRUPTED;
    struct pollfd p = {.fd = k->fd, .events = POLLIN};
    int r = poll(&p, 1, -1);
    if (r < 0 && errno == EINTR) continue;  /* the flag is checked above */
    if (r < 0) break;
    r = fill(k, 1);
    if (r == -1) continue;
    if (r == 0) break;
  }
  kclient_close(k);
  return KCLIENT_NO_REPLY;
}

json_t *kclient_request_once(const char *cmd, const char *dir, json_t *req) {
  if (!req) {
    fprintf(stderr, "jiti %s: cannot encode the request (is the text valid UTF-8?)\n", cmd);
    return NULL;
  }
  kclient k;
  kclient_init(&k, cmd, dir);
  if (kclient_connect(&k)) { json_decref(req); return NULL; }
  json_t *rep;
  int r = kclient_call(&k, req, &rep, NULL);
  kclient_close(&k);
  if (r != KCLIENT_OK) {
    fprintf(stderr, "jiti %s: the kernel for %s closed the connection without a reply "
            "(see its log; 'jiti status --store %s')\n", cmd, dir, dir);
    return NULL;
  }
  return rep;
}

/* ---------------------------------------------------------- printers */

const char *kclient_str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

json_int_t kclient_int(json_t *o, const char *k) {
  return json_integer_value(json_object_get(o, k));
}

void kclient_print_output(FILE *f, json_t *r) {
  json_t *o = json_object_get(r, "output");
  const char *out = json_string_value(o);
  size_t n = json_string_length(o);
  if (out && n) {
    fwrite(out, 1, n, f);
    if (out[n - 1] != '\n') fputc('\n', f);
  }
}

void kclient_print_pause(FILE *f, json_t *p) {
  fprintf(f, "paused (generation %" JSON_INTEGER_FORMAT "): %s: %s\n", kclient_int(p, "generation"),
          kclient_str(p, "condition_type"), kclient_str(p, "report"));
  json_t *rs = json_object_get(p, "restarts");
  size_t i;
  json_t *r;
  if (json_array_size(rs)) fprintf(f, "restarts:\n");
  json_array_foreach(rs, i, r)
    fprintf(f, "  %-8s %-16s %s\n", kclient_str(r, "id"), kclient_str(r, "name"), kclient_str(r, "report"));
}

json_t *kclient_print_view(FILE *f, json_t *v) {
  fprintf(f, "generation %" JSON_INTEGER_FORMAT ", revision %" JSON_INTEGER_FORMAT ", %s, package %s\n",
          kclient_int(v, "generation"), kclient_int(v, "revision"), kclient_str(v, "status"),
          kclient_str(v, "package"));
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(v, "entries"), i, e) {
    const char *t = kclient_str(e, "text");
    fprintf(f, "%-9s %s%s%s\n", kclient_str(e, "kind"), kclient_str(e, "name"), *t ? "\n          " : "", t);
  }
  json_t *d = json_object_get(v, "data");
  if (kclient_int(d, "count"))
    fprintf(f, "data (%" JSON_INTEGER_FORMAT " rows):\n", kclient_int(d, "count"));
  json_array_foreach(json_object_get(d, "rows"), i, e)
    fprintf(f, "  %s = %s\n", kclient_str(e, "key"), kclient_str(e, "value"));
  json_array_foreach(json_object_get(v, "invariants"), i, e)
    fprintf(f, "invariant %s: %s\n", kclient_str(e, "name"), kclient_str(e, "source"));
  json_t *p = json_object_get(v, "pause");
  if (!json_is_object(p)) return NULL;
  json_object_set_new(p, "generation", json_integer(kclient_int(v, "generation")));
  kclient_print_pause(f, p);
  return p;
}

void kclient_print_status(FILE *f, json_t *r) {
  fprintf(f, "kernel %s (protocol %" JSON_INTEGER_FORMAT ") serving %s\n", kclient_str(r, "kernel"),
          kclient_int(r, "protocol"), kclient_str(r, "store"));
  fprintf(f, "pid:        %" JSON_INTEGER_FORMAT " (worker %" JSON_INTEGER_FORMAT ")\n",
          kclient_int(r, "pid"), kclient_int(r, "worker_pid"));
  fprintf(f, "revision:   %" JSON_INTEGER_FORMAT "\ngeneration: %" JSON_INTEGER_FORMAT "\nstate:      %s\n",
          kclient_int(r, "revision"), kclient_int(r, "generation"), kclient_str(r, "state"));
  fprintf(f, "queue:      %" JSON_INTEGER_FORMAT "\nattempts:   %" JSON_INTEGER_FORMAT
          "\nrestarts:   %" JSON_INTEGER_FORMAT "\nuptime:     %.0f s\n",
          kclient_int(r, "queue"), kclient_int(r, "attempts"), kclient_int(r, "worker_restarts"),
          json_real_value(json_object_get(r, "uptime")));
}
