/*
** kernel_bench.c — application-call throughput and latency of a running
** kernel daemon (`jiti kernel --store DIR`) over its Unix socket.
**
** C connections each keep exactly one `{"op":"call","source":...}` request
** outstanding (no pipelining, like redis-benchmark -P 1), driven by one
** poll() loop in one thread (like redis-benchmark).  A run stops after N
** replies or after S seconds, whichever comes first, and reports
** requests/s and the latency distribution (avg, min, p50, p95, p99, max) of
** the replies it received.
**
** Workloads:
**   read   (world-get :counter)       — reads the data table; publishes nothing
**   write  (world-put :counter (1+ (or (world-get :counter) 0)))
**                                     — changes one row: every call publishes
**                                       one revision of the store
**   add    (+ 1 2)                    — does not touch the world at all
** For `write` the bench reads the counter before and after and checks that
** it grew by exactly the number of accepted calls.
**
** usage: kernel_bench (--socket PATH | --store DIR) [options]
**   -c LIST        client counts, comma-separated (default 1,4,50)
**   -n N           stop after N replies per run (default 20000; 0 = no limit)
**   -d SECONDS     stop after this long per run (default 10; 0 = no limit)
**   -w LIST        workloads: read,write,add (default read,write)
**   --source S     a custom read-only workload (name "custom")
**   --warmup N     untimed calls before each run (default 50)
**   --csv          machine-readable lines (header first), like redis-benchmark --csv
** Exit status: 0 when every reply was ok:true (and the write check held),
** 1 otherwise, 2 usage.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define READ_SRC "(world-get :counter)"
#define WRITE_SRC "(world-put :counter (1+ (or (world-get :counter) 0)))"
#define ADD_SRC "(+ 1 2)"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "kernel_bench: ");
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  exit(1);
}

static int connect_to(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (fd < 0 || strlen(path) >= sizeof a.sun_path) die("cannot make a socket for %s", path);
  memcpy(a.sun_path, path, strlen(path) + 1);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("cannot connect to %s (is the kernel running?)", path);
  return fd;
}

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("send: %s", strerror(errno));
    p += w;
    n -= (size_t)w;
  }
}

/* The request line for a source: {"op":"call","source":"..."}\n */
static char *request_line(const char *source, size_t *len) {
  size_t n = strlen(source);
  char *r = malloc(2 * n + 64);
  if (!r) die("%s", "out of memory");
  size_t k = (size_t)sprintf(r, "{\"op\":\"call\",\"source\":\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)source[i];
    if (c == '"' || c == '\\') { r[k++] = '\\'; r[k++] = (char)c; }
    else if (c == '\n') { r[k++] = '\\'; r[k++] = 'n'; }
    else r[k++] = (char)c;
  }
  k += (size_t)sprintf(r + k, "\"}\n");
  *len = k;
  return r;
}

/* ------------------------------------------------------ one connection */

typedef struct {
  int fd;
  char buf[65536];
  size_t len;
  double t_sent;
  int busy;
} Conn;

/* One blocking call on its own connection (setup and checks); the reply
** line (malloc'd). */
static char *call_once(const char *sock, const char *source) {
  int fd = connect_to(sock);
  size_t n;
  char *req = request_line(source, &n);
  send_all(fd, req, n);
  free(req);
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);
  for (;;) {
    if (len + 1 >= cap) out = realloc(out, cap *= 2);
    ssize_t r = recv(fd, out + len, cap - len - 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("the kernel closed the connection during '%s'", source);
    len += (size_t)r;
    out[len] = 0;
    char *nl = strchr(out, '\n');
    if (nl) { *nl = 0; break; }
  }
  close(fd);
  return out;
}

/* The "value" member of a reply, as a number (the counter); -1 if none. */
static long reply_value(const char *line) {
  const char *v = strstr(line, "\"value\":\"");
  if (!v) return -1;
  v += 9;
  if (!strncmp(v, "NIL\"", 4)) return 0;
  return strtol(v, NULL, 10);
}

/* ------------------------------------------------------------- a run */

typedef struct {
  double secs;
  long done, errors, warm_ok, warm_errors;
  double avg, min, p50, p95, p99, max;  /* milliseconds */
  char first_error[300];
} Result;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double q) {
  if (n == 0) return 0;
  long i = (long)(q * (double)n + 0.999999) - 1;
  if (i < 0) i = 0;
  if (i >= n) i = n - 1;
  return v[i];
}

static Result run(const char *sock, const char *source, int nclients, long nreq, double dur, long warmup) {
  Result res;
  memset(&res, 0, sizeof res);
  size_t reqlen;
  char *req = request_line(source, &reqlen);
  Conn *c = calloc((size_t)nclients, sizeof *c);
  struct pollfd *pf = calloc((size_t)nclients, sizeof *pf);
  size_t lcap = nreq > 0 ? (size_t)nreq : 1 << 16, ln = 0;
  double *lat = malloc(lcap * sizeof *lat);
  if (!c || !pf || !lat) die("%s", "out of memory");
  for (int i = 0; i < nclients; i++) c[i].fd = connect_to(sock);
  /* phase 0: warm-up (untimed), phase 1: measured */
  for (int phase = 0; phase < 2; phase++) {
    long target = phase == 0 ? warmup : nreq;
    if (phase == 0 && warmup <= 0) continue;
    long sent = 0, got = 0;
    double t0 = now(), deadline = phase == 1 && dur > 0 ? t0 + dur : 0;
    int stop = 0;
    for (int i = 0; i < nclients; i++) {
      if (target > 0 && sent >= target) break;
      c[i].t_sent = now();
      send_all(c[i].fd, req, reqlen);
      c[i].busy = 1;
      sent++;
    }
    for (;;) {
      int active = 0;
      for (int i = 0; i < nclients; i++) {
        pf[i] = (struct pollfd){c[i].fd, c[i].busy ? POLLIN : 0, 0};
        active += c[i].busy;
      }
      if (!active) break;
      int r = poll(pf, (nfds_t)nclients, 1000);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) die("poll: %s", strerror(errno));
      double t = now();
      if (deadline && t >= deadline) stop = 1;
      for (int i = 0; i < nclients; i++) {
        if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Conn *k = &c[i];
        ssize_t n = recv(k->fd, k->buf + k->len, sizeof k->buf - k->len - 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("%s", "the kernel closed a connection");
        k->len += (size_t)n;
        k->buf[k->len] = 0;
        char *nl = memchr(k->buf, '\n', k->len);
        if (!nl) {
          if (k->len >= sizeof k->buf - 1) die("%s", "a reply longer than 64 KiB");
          continue;
        }
        *nl = 0;
        got++;
        if (phase == 1) {
          if (ln == lcap) {
            lat = realloc(lat, (lcap *= 2) * sizeof *lat);
            if (!lat) die("%s", "out of memory");
          }
          lat[ln++] = (t - k->t_sent) * 1e3;
          if (strncmp(k->buf, "{\"ok\":true", 10) != 0) {
            if (!res.errors) snprintf(res.first_error, sizeof res.first_error, "%.299s", k->buf);
            res.errors++;
          }
        } else if (strncmp(k->buf, "{\"ok\":true", 10) == 0) {
          res.warm_ok++;
        } else {
          if (!res.warm_errors) snprintf(res.first_error, sizeof res.first_error, "%.299s", k->buf);
          res.warm_errors++;
        }
        size_t rest = k->len - (size_t)(nl + 1 - k->buf);
        memmove(k->buf, nl + 1, rest);
        k->len = rest;
        k->busy = 0;
        if (rest) die("%s", "more than one reply for one request");
        if (!stop && (target <= 0 || sent < target)) {
          k->t_sent = now();
          send_all(k->fd, req, reqlen);
          k->busy = 1;
          sent++;
        }
      }
    }
    if (phase == 1) {
      res.secs = now() - t0;
      res.done = got;
    }
  }
  for (int i = 0; i < nclients; i++) close(c[i].fd);
  qsort(lat, ln, sizeof *lat, cmp_double);
  double sum = 0;
  for (size_t i = 0; i < ln; i++) sum += lat[i];
  res.avg = ln ? sum / (double)ln : 0;
  res.min = ln ? lat[0] : 0;
  res.max = ln ? lat[ln - 1] : 0;
  res.p50 = pct(lat, (long)ln, 0.50);
  res.p95 = pct(lat, (long)ln, 0.95);
  res.p99 = pct(lat, (long)ln, 0.99);
  free(lat);
  free(pf);
  free(c);
  free(req);
  return res;
}

/* ------------------------------------------------------------- main */

static void usage(FILE *f) {
  fprintf(f,
          "usage: kernel_bench (--socket PATH | --store DIR) [-c 1,4,50] [-n N] [-d SECONDS]\n"
          "                    [-w read,write,add] [--source S] [--warmup N] [--csv]\n"
          "Application-call throughput and latency of a running jiti kernel; see the\n"
          "comment at the top of bench/kernel_bench.c.\n");
}

int main(int argc, char **argv) {
  const char *sock = NULL, *store = NULL, *clients = "1,4,50", *workloads = "read,write", *custom = NULL;
  long nreq = 20000, warmup = 50;
  double dur = 10;
  int csv = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
    if (!strcmp(a, "--csv")) { csv = 1; continue; }
    if (!v) { usage(stderr); return 2; }
    if (!strcmp(a, "--socket")) sock = v;
    else if (!strcmp(a, "--store")) store = v;
    else if (!strcmp(a, "-c")) clients = v;
    else if (!strcmp(a, "-n")) nreq = atol(v);
    else if (!strcmp(a, "-d")) dur = atof(v);
    else if (!strcmp(a, "-w")) workloads = v;
    else if (!strcmp(a, "--source")) custom = v;
    else if (!strcmp(a, "--warmup")) warmup = atol(v);
    else { usage(stderr); return 2; }
    i++;
  }
  char path[4096];
  if (!sock && store) {
    snprintf(path, sizeof path, "%s/kernel.sock", store);
    sock = path;
  }
  if (!sock || (nreq <= 0 && dur <= 0)) { usage(stderr); return 2; }
  if (custom) workloads = "custom";

  if (csv) printf("\"workload\",\"clients\",\"requests\",\"errors\",\"seconds\",\"rps\",\"avg_latency_ms\","
                  "\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n");
  else printf("%-8s %7s %8s %6s %7s %10s %8s %8s %8s %8s %8s %8s\n", "workload", "clients", "requests",
              "errors", "secs", "req/s", "avg ms", "min ms", "p50 ms", "p95 ms", "p99 ms", "max ms");
  fflush(stdout);
  int failed = 0;
  char *wl = strdup(workloads);
  for (char *w = strtok(wl, ","); w; w = strtok(NULL, ",")) {
    const char *src = !strcmp(w, "read") ? READ_SRC : !strcmp(w, "write") ? WRITE_SRC
                    : !strcmp(w, "add") ? ADD_SRC : !strcmp(w, "custom") ? custom : NULL;
    if (!src) { fprintf(stderr, "kernel_bench: unknown workload '%s'\n", w); return 2; }
    char *cl = strdup(clients), *save = NULL;
    for (char *cs = strtok_r(cl, ",", &save); cs; cs = strtok_r(NULL, ",", &save)) {
      int nc = atoi(cs);
      if (nc < 1 || nc > 1000) { fprintf(stderr, "kernel_bench: bad client count '%s'\n", cs); return 2; }
      long before = 0;
      if (!strcmp(w, "write")) {
        char *r = call_once(sock, READ_SRC);
        before = reply_value(r);
        free(r);
      }
      Result res = run(sock, src, nc, nreq, dur, warmup);
      if (!strcmp(w, "write")) {
        char *r = call_once(sock, READ_SRC);
        long after = reply_value(r);
        free(r);
        long expect = before + res.warm_ok + (res.done - res.errors);
        if (after != expect) {
          fprintf(stderr, "kernel_bench: write check failed: counter %ld, expected %ld\n", after, expect);
          failed = 1;
        }
      }
      double rps = res.secs > 0 ? (double)res.done / res.secs : 0;
      if (csv)
        printf("\"%s\",\"%d\",\"%ld\",\"%ld\",\"%.3f\",\"%.2f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\",\"%.3f\"\n",
               w, nc, res.done, res.errors, res.secs, rps, res.avg, res.min, res.p50, res.p95, res.p99, res.max);
      else
        printf("%-8s %7d %8ld %6ld %7.2f %10.1f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", w, nc, res.done,
               res.errors, res.secs, rps, res.avg, res.min, res.p50, res.p95, res.p99, res.max);
      fflush(stdout);
      if (res.errors || res.warm_errors) {
        fprintf(stderr, "kernel_bench: %ld of %ld replies (and %ld of the warm-up) were errors; first: %s\n",
                res.errors, res.done, res.warm_errors, res.first_error);
        failed = 1;
      }
    }
    free(cl);
  }
  free(wl);
  return failed;
}
