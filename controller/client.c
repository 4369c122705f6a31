/*
** client.c — the kernel's client commands: eval, observe, act, status, stop.
** Each connects to DIR/kernel.sock, sends one request (docs/protocol.md)
** and prints the reply.  Exit status: 0 success, 1 failure (no kernel, an
** error reply, a failed transaction), 2 usage.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "kproto.h"
#include "store_cli.h"

static int kconnect(const char *cmd, const char *dir) {
  char path[128];
  if (kproto_socket_path(dir, path, sizeof path)) {
    fprintf(stderr, "jiti %s: the socket path %s/%s is too long for a Unix socket\n", cmd, dir, KPROTO_SOCKET);
    return -1;
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);  /* fits: kproto_socket_path checked */
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    if (e == ENOENT || e == ECONNREFUSED)
      fprintf(stderr, "jiti %s: no kernel is running for %s; start one with: jiti kernel --store %s\n",
              cmd, dir, dir);
    else
      fprintf(stderr, "jiti %s: cannot connect to the kernel at %s: %s\n", cmd, path, strerror(e));
    return -1;
  }
  return fd;
}

/* Send req (stolen) and read one reply line.  NULL after a message. */
static json_t *krequest(const char *cmd, const char *dir, json_t *req) {
  int fd = kconnect(cmd, dir);
  if (fd < 0) { json_decref(req); return NULL; }
  char *text = json_dumps(req, JSON_COMPACT);
  json_decref(req);
  size_t n = strlen(text);
  text = realloc(text, n + 2);
  text[n++] = '\n';
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(fd, text + off, n - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += (size_t)w;
  }
  free(text);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  char *nl = NULL;
  while (!nl) {
    if (len + 65536 > cap) {
      cap = cap ? cap * 2 : 131072;
      if (cap > KPROTO_REPLY_MAX) break;
      buf = realloc(buf, cap);
    }
    ssize_t r = recv(fd, buf + len, cap - len, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    nl = memchr(buf + len, '\n', (size_t)r);
    len += (size_t)r;
  }
  close(fd);
  json_t *rep = nl ? json_loadb(buf, (size_t)(nl - buf), 0, NULL) : NULL;
  free(buf);
  if (!json_is_object(rep)) {
    fprintf(stderr, "jiti %s: the kernel for %s closed the connection without a reply "
            "(see its log; 'jiti status --store %s')\n", cmd, dir, dir);
    json_decref(rep);
    return NULL;
  }
  return rep;
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static void print_json(json_t *o) {
  char *t = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (t) puts(t);
  free(t);
}

/* An error reply: "jiti CMD: CODE: MESSAGE". */
static int fail_reply(const char *cmd, json_t *r) {
  fprintf(stderr, "jiti %s: %s: %s\n", cmd, str(r, "code"), str(r, "message"));
  return EXIT_FAIL;
}

static void print_output(json_t *r) {
  const char *out = json_string_value(json_object_get(r, "output"));
  if (out && *out) {
    fputs(out, stdout);
    if (out[strlen(out) - 1] != '\n') fputc('\n', stdout);
  }
}

static void print_pause(FILE *f, json_t *p) {
  fprintf(f, "paused (generation %" JSON_INTEGER_FORMAT "): %s: %s\n",
          json_integer_value(json_object_get(p, "generation")), str(p, "condition_type"), str(p, "report"));
  json_t *rs = json_object_get(p, "restarts");
  size_t i;
  json_t *r;
  if (json_array_size(rs)) fprintf(f, "restarts:\n");
  json_array_foreach(rs, i, r)
    fprintf(f, "  %-8s %-16s %s\n", str(r, "id"), str(r, "name"), str(r, "report"));
  fprintf(f, "answer with: jiti act --generation %" JSON_INTEGER_FORMAT
          " --resume ID [--args EXPR] | --evaluate SOURCE | --abort\n",
          json_integer_value(json_object_get(p, "generation")));
}

/* Common option parsing: --store, --json, -h. */
typedef struct { const char *dir; int json; } Common;

static int common_opt(const char *cmd, int argc, char **argv, int *i, Common *c, void (*usage)(FILE *)) {
  int r = cli_store_opt(cmd, argc, argv, i, &c->dir);
  if (r) return r < 0 ? -1 : 1;
  if (!strcmp(argv[*i], "--json")) { c->json = 1; return 1; }
  if (!strcmp(argv[*i], "-h") || !strcmp(argv[*i], "--help")) { usage(stdout); return 2; }
  return 0;
}

/* Parse a command line that takes only the common options.  Returns -1 to
** go on, or the exit status to return (help shown, or a usage error). */
static int only_common_opts(const char *cmd, int argc, char **argv, Common *c,
                            void (*usage)(FILE *)) {
  for (int i = 1; i < argc; i++) {
    int r = common_opt(cmd, argc, argv, &i, c, usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    fprintf(stderr, "jiti %s: unexpected argument '%s' (see 'jiti %s --help')\n", cmd, argv[i], cmd);
    return EXIT_USAGE;
  }
  return -1;
}

/* ------------------------------------------------------------- eval */

static void eval_usage(FILE *out) {
  fprintf(out,
          "usage: jiti eval [--store DIR] [--json] EXPR\n"
          "\n"
          "Run EXPR (one Lisp form) as an application call on the running kernel: a\n"
          "transaction that publishes what it changes, or restores everything if it fails.\n"
          "Prints the program's output and the value.\n"
          "\n"
          "options:\n"
          "  --store DIR   the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json        print the kernel's reply as JSON\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 the call completed; 1 it failed (the condition is printed) or no\n"
          "kernel is running; 2 usage.\n");
}

int cmd_eval(int argc, char **argv) {
  Common c = {cli_default_store(), 0};
  const char *expr = NULL;
  for (int i = 1; i < argc; i++) {
    int r = common_opt("eval", argc, argv, &i, &c, eval_usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "jiti eval: unknown option '%s' (see 'jiti eval --help')\n", argv[i]);
      return EXIT_USAGE;
    }
    if (expr) {
      fprintf(stderr, "jiti eval: one expression only (quote it: jiti eval '(f 1 2)')\n");
      return EXIT_USAGE;
    }
    expr = argv[i];
  }
  if (!expr) { eval_usage(stderr); return EXIT_USAGE; }
  json_t *r = krequest("eval", c.dir, json_pack("{s:s, s:s}", "op", "call", "source", expr));
  if (!r) return EXIT_FAIL;
  int st = json_is_true(json_object_get(r, "ok")) ? EXIT_OK : EXIT_FAIL;
  if (c.json) {
    print_json(r);
  } else {
    print_output(r);
    if (st == EXIT_OK) printf("%s\n", str(r, "value"));
    else fail_reply("eval", r);
  }
  json_decref(r);
  return st;
}

/* ---------------------------------------------------------- observe */

static void observe_usage(FILE *out) {
  fprintf(out,
          "usage: jiti observe [--store DIR] [--json]\n"
          "\n"
          "Show the running kernel's world: generation, revision, status, entries, data,\n"
          "invariants and, when a transaction is paused, its condition and restarts.\n"
          "\n"
          "options:\n"
          "  --store DIR   the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json        the view as JSON (docs/protocol.md, \"observe\")\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 success; 1 no kernel is running or it refused; 2 usage.\n");
}

int cmd_observe(int argc, char **argv) {
  Common c = {cli_default_store(), 0};
  int done = only_common_opts("observe", argc, argv, &c, observe_usage);
  if (done >= 0) return done;
  json_t *r = krequest("observe", c.dir, json_pack("{s:s}", "op", "observe"));
  if (!r) return EXIT_FAIL;
  if (!json_is_true(json_object_get(r, "ok"))) {
    int st = fail_reply("observe", r);
    json_decref(r);
    return st;
  }
  json_t *v = json_object_get(r, "view");
  if (c.json) {
    print_json(v);
    json_decref(r);
    return EXIT_OK;
  }
  printf("generation %" JSON_INTEGER_FORMAT ", revision %" JSON_INTEGER_FORMAT ", %s\n",
         json_integer_value(json_object_get(v, "generation")),
         json_integer_value(json_object_get(v, "revision")), str(v, "status"));
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(v, "entries"), i, e) {
    const char *t = str(e, "text");
    printf("%-9s %s%s%s\n", str(e, "kind"), str(e, "name"), *t ? "\n          " : "", t);
  }
  json_t *d = json_object_get(v, "data");
  if (json_integer_value(json_object_get(d, "count")))
    printf("data (%" JSON_INTEGER_FORMAT " rows):\n", json_integer_value(json_object_get(d, "count")));
  json_array_foreach(json_object_get(d, "rows"), i, e)
    printf("  %s = %s\n", str(e, "key"), str(e, "value"));
  json_array_foreach(json_object_get(v, "invariants"), i, e)
    printf("invariant %s: %s\n", str(e, "name"), str(e, "source"));
  json_t *p = json_object_get(v, "pause");
  if (json_is_object(p)) {
    json_object_set_new(p, "generation", json_integer(json_integer_value(json_object_get(v, "generation"))));
    print_pause(stdout, p);
  }
  json_decref(r);
  return EXIT_OK;
}

/* -------------------------------------------------------------- act */

static void act_usage(FILE *out) {
  fprintf(out,
          "usage: jiti act [--store DIR] [--json] --generation N\n"
          "                (--evaluate SOURCE | --resume ID [--args EXPR] | --abort)\n"
          "\n"
          "Send one action to the running kernel, as a model would (the same form gate).\n"
          "N is the generation of the view the action was made from (jiti observe); a\n"
          "stale generation is refused and nothing runs.  --evaluate starts a transaction,\n"
          "or repairs inside a paused one; --resume continues a pause with a restart of its\n"
          "menu (EXPR: Lisp source of the argument list); --abort restores a paused one.\n"
          "\n"
          "options:\n"
          "  --store DIR   the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json        print the kernel's reply as JSON\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 accepted (or paused: the menu is printed); 1 refused, failed or\n"
          "no kernel; 2 usage.\n");
}

int cmd_act(int argc, char **argv) {
  Common c = {cli_default_store(), 0};
  const char *gen = NULL, *evaluate = NULL, *resume = NULL, *args = NULL;
  int nacts = 0;
  for (int i = 1; i < argc; i++) {
    int r = common_opt("act", argc, argv, &i, &c, act_usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    const char *a = argv[i];
    const char **slot = !strcmp(a, "--generation") ? &gen : !strcmp(a, "--evaluate") ? &evaluate
                      : !strcmp(a, "--resume") ? &resume : !strcmp(a, "--args") ? &args : NULL;
    if (slot) {
      if (i + 1 >= argc) {
        fprintf(stderr, "jiti act: %s needs a value (see 'jiti act --help')\n", a);
        return EXIT_USAGE;
      }
      *slot = argv[++i];
      if (slot == &evaluate || slot == &resume) nacts++;
      continue;
    }
    if (!strcmp(a, "--abort")) { nacts++; continue; }
    fprintf(stderr, "jiti act: unknown option '%s' (see 'jiti act --help')\n", a);
    return EXIT_USAGE;
  }
  uint64_t g;
  if (!gen || !cli_parse_count(gen, &g)) {
    fprintf(stderr, "jiti act: --generation N is required: the generation of your view (jiti observe)\n");
    return EXIT_USAGE;
  }
  if (nacts != 1) {
    fprintf(stderr, "jiti act: give exactly one of --evaluate SOURCE, --resume ID, --abort\n");
    return EXIT_USAGE;
  }
  if (args && !resume) {
    fprintf(stderr, "jiti act: --args goes with --resume\n");
    return EXIT_USAGE;
  }
  json_t *action = evaluate ? json_pack("{s:s, s:s}", "type", "evaluate", "source", evaluate)
                 : resume ? json_pack("{s:s, s:s}", "type", "resume", "restart_id", resume)
                 : json_pack("{s:s}", "type", "abort");
  if (args) json_object_set_new(action, "arguments", json_string(args));
  json_t *r = krequest("act", c.dir, json_pack("{s:s, s:I, s:o}", "op", "act", "generation", (json_int_t)g,
                                               "action", action));
  if (!r) return EXIT_FAIL;
  int ok = json_is_true(json_object_get(r, "ok"));
  if (c.json) {
    print_json(r);
  } else {
    print_output(r);
    json_t *p = json_object_get(r, "pause");
    if (ok && json_is_object(p)) {
      if (json_object_get(r, "value")) printf("repair value: %s\n", str(r, "value"));
      print_pause(stdout, p);
    } else if (ok) {
      printf("%s\naccepted: revision %" JSON_INTEGER_FORMAT ", generation %" JSON_INTEGER_FORMAT "\n",
             str(r, "value"), json_integer_value(json_object_get(r, "revision")),
             json_integer_value(json_object_get(r, "generation")));
    } else {
      fail_reply("act", r);
      if (json_is_object(p)) print_pause(stderr, p);
      else if (json_object_get(r, "generation"))
        fprintf(stderr, "generation is now %" JSON_INTEGER_FORMAT "\n",
                json_integer_value(json_object_get(r, "generation")));
    }
  }
  json_decref(r);
  return ok ? EXIT_OK : EXIT_FAIL;
}

/* ----------------------------------------------------- status, stop */

static void status_usage(FILE *out) {
  fprintf(out,
          "usage: jiti status [--store DIR] [--json]\n"
          "\n"
          "Show whether a kernel serves the store, its pid, the worker's pid, revision,\n"
          "generation, state (idle, running, paused, publishing, faulted), queued\n"
          "transactions, attempts and worker restarts.\n"
          "\n"
          "Exit status: 0 a kernel is running; 1 none is; 2 usage.\n");
}

int cmd_status(int argc, char **argv) {
  Common c = {cli_default_store(), 0};
  int done = only_common_opts("status", argc, argv, &c, status_usage);
  if (done >= 0) return done;
  json_t *r = krequest("status", c.dir, json_pack("{s:s}", "op", "status"));
  if (!r) return EXIT_FAIL;
  if (c.json) {
    print_json(r);
  } else {
    printf("kernel %s (protocol %" JSON_INTEGER_FORMAT ") serving %s\n", str(r, "kernel"),
           json_integer_value(json_object_get(r, "protocol")), str(r, "store"));
    printf("pid:        %" JSON_INTEGER_FORMAT " (worker %" JSON_INTEGER_FORMAT ")\n",
           json_integer_value(json_object_get(r, "pid")), json_integer_value(json_object_get(r, "worker_pid")));
    printf("revision:   %" JSON_INTEGER_FORMAT "\ngeneration: %" JSON_INTEGER_FORMAT "\nstate:      %s\n",
           json_integer_value(json_object_get(r, "revision")),
           json_integer_value(json_object_get(r, "generation")), str(r, "state"));
    printf("queue:      %" JSON_INTEGER_FORMAT "\nattempts:   %" JSON_INTEGER_FORMAT
           "\nrestarts:   %" JSON_INTEGER_FORMAT "\nuptime:     %.0f s\n",
           json_integer_value(json_object_get(r, "queue")), json_integer_value(json_object_get(r, "attempts")),
           json_integer_value(json_object_get(r, "worker_restarts")),
           json_real_value(json_object_get(r, "uptime")));
  }
  json_decref(r);
  return EXIT_OK;
}

static void stop_usage(FILE *out) {
  fprintf(out,
          "usage: jiti stop [--store DIR]\n"
          "\n"
          "Ask the store's kernel to shut down cleanly (a paused transaction is aborted and\n"
          "restored first) and wait until it has stopped (at most 30 s).\n"
          "\n"
          "Exit status: 0 stopped; 1 no kernel is running or it did not stop in time; 2 usage.\n");
}

int cmd_stop(int argc, char **argv) {
  Common c = {cli_default_store(), 0};
  int done = only_common_opts("stop", argc, argv, &c, stop_usage);
  if (done >= 0) return done;
  json_t *st = krequest("stop", c.dir, json_pack("{s:s}", "op", "status"));
  if (!st) return EXIT_FAIL;
  pid_t pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
  json_decref(st);
  json_t *r = krequest("stop", c.dir, json_pack("{s:s}", "op", "shutdown"));
  if (!r) return EXIT_FAIL;
  if (!json_is_true(json_object_get(r, "ok"))) {
    int s = fail_reply("stop", r);
    json_decref(r);
    return s;
  }
  json_decref(r);
  /* the kernel holds the store lock until it exits: wait for the process */
  for (int i = 0; i < 300; i++) {
    if (kill(pid, 0) != 0 && errno == ESRCH) {
      printf("stopped the kernel for %s (pid %d)\n", c.dir, (int)pid);
      return EXIT_OK;
    }
    store_env *s = NULL;
    if (store_open(c.dir, STORE_NOCREATE, &s, NULL, 0) == STORE_OK) {  /* lock released */
      store_close(s);
      printf("stopped the kernel for %s (pid %d)\n", c.dir, (int)pid);
      return EXIT_OK;
    }
    usleep(100000);
  }
  fprintf(stderr, "jiti stop: the kernel for %s (pid %d) did not stop within 30 s\n", c.dir, (int)pid);
  return EXIT_FAIL;
}
