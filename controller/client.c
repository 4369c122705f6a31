/*
** client.c — the kernel's client commands: eval, observe, act, status, stop.
** Each connects to DIR/kernel.sock, sends one request (docs/protocol.md)
** and prints the reply; the connection and the printers are kclient.c's.
** Exit status: 0 success, 1 failure (no kernel, an error reply, a failed
** transaction), 2 usage.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "kclient.h"
#include "store_cli.h"

static void print_json(json_t *o) {
  char *t = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (t) puts(t);
  free(t);
}

/* An error reply: "jiti CMD: CODE: MESSAGE". */
static int fail_reply(const char *cmd, json_t *r) {
  fprintf(stderr, "jiti %s: %s: %s\n", cmd, kclient_str(r, "code"), kclient_str(r, "message"));
  return EXIT_FAIL;
}

/* How to answer a pause of generation gen with `jiti act`. */
static void act_hint(FILE *f, json_int_t gen) {
  fprintf(f, "answer with: jiti act --generation %" JSON_INTEGER_FORMAT
          " --resume ID [--args EXPR] | --evaluate SOURCE | --abort\n", gen);
}

static void print_pause(FILE *f, json_t *p) {
  kclient_print_pause(f, p);
  act_hint(f, kclient_int(p, "generation"));
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
          "usage: jiti eval [--store DIR] [--json] [--package NAME] EXPR\n"
          "\n"
          "Run EXPR (one Lisp form) as an application call on the running kernel: a\n"
          "transaction that publishes what it changes, or restores everything if it fails.\n"
          "Prints the program's output and the value.\n"
          "\n"
          "options:\n"
          "  --package NAME  read and evaluate EXPR in package NAME (default: the world's\n"
          "                current package)\n"
          "  --store DIR   the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json        print the kernel's reply as JSON\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 the call completed; 1 it failed (the condition is printed) or no\n"
          "kernel is running; 2 usage.\n");
}

int cmd_eval(int argc, char **argv) {
  Common c = {cli_default_store(), 0};
  const char *expr = NULL, *package = NULL;
  for (int i = 1; i < argc; i++) {
    int r = common_opt("eval", argc, argv, &i, &c, eval_usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    if (!strcmp(argv[i], "--package")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "jiti eval: --package needs a value (see 'jiti eval --help')\n");
        return EXIT_USAGE;
      }
      package = argv[++i];
      continue;
    }
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
  json_t *req = json_pack("{s:s, s:s}", "op", "call", "source", expr);
  if (package) json_object_set_new(req, "package", json_string(package));
  json_t *r = kclient_request_once("eval", c.dir, req);
  if (!r) return EXIT_FAIL;
  int st = json_is_true(json_object_get(r, "ok")) ? EXIT_OK : EXIT_FAIL;
  if (c.json) {
    print_json(r);
  } else {
    kclient_print_output(stdout, r);
    if (st == EXIT_OK) printf("%s\n", kclient_str(r, "value"));
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
  json_t *r = kclient_request_once("observe", c.dir, json_pack("{s:s}", "op", "observe"));
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
  if (kclient_print_view(stdout, v)) act_hint(stdout, kclient_int(v, "generation"));
  json_decref(r);
  return EXIT_OK;
}

/* -------------------------------------------------------------- act */

static void act_usage(FILE *out) {
  fprintf(out,
          "usage: jiti act [--store DIR] [--json] --generation N\n"
          "                (--evaluate SOURCE [--package NAME] | --resume ID [--args EXPR] | --abort)\n"
          "\n"
          "Send one action to the running kernel, as a model would (the same form gate).\n"
          "N is the generation of the view the action was made from (jiti observe); a\n"
          "stale generation is refused and nothing runs.  --evaluate starts a transaction,\n"
          "or repairs inside a paused one; --resume continues a pause with a restart of its\n"
          "menu (EXPR: Lisp source of the argument list); --abort restores a paused one.\n"
          "--package reads and evaluates SOURCE in package NAME (default: the world's\n"
          "current package; a repair's, the paused action's).\n"
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
  const char *gen = NULL, *evaluate = NULL, *resume = NULL, *args = NULL, *package = NULL;
  int nacts = 0;
  for (int i = 1; i < argc; i++) {
    int r = common_opt("act", argc, argv, &i, &c, act_usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    const char *a = argv[i];
    const char **slot = !strcmp(a, "--generation") ? &gen : !strcmp(a, "--evaluate") ? &evaluate
                      : !strcmp(a, "--resume") ? &resume : !strcmp(a, "--args") ? &args
                      : !strcmp(a, "--package") ? &package : NULL;
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
  if (package && !evaluate) {
    fprintf(stderr, "jiti act: --package goes with --evaluate\n");
    return EXIT_USAGE;
  }
  json_t *action = evaluate ? json_pack("{s:s, s:s}", "type", "evaluate", "source", evaluate)
                 : resume ? json_pack("{s:s, s:s}", "type", "resume", "restart_id", resume)
                 : json_pack("{s:s}", "type", "abort");
  if (args) json_object_set_new(action, "arguments", json_string(args));
  if (package) json_object_set_new(action, "package", json_string(package));
  json_t *r = kclient_request_once("act", c.dir, json_pack("{s:s, s:I, s:o}", "op", "act", "generation",
                                                           (json_int_t)g, "action", action));
  if (!r) return EXIT_FAIL;
  int ok = json_is_true(json_object_get(r, "ok"));
  if (c.json) {
    print_json(r);
  } else {
    kclient_print_output(stdout, r);
    json_t *p = json_object_get(r, "pause");
    if (ok && json_is_object(p)) {
      if (json_object_get(r, "value")) printf("repair value: %s\n", kclient_str(r, "value"));
      print_pause(stdout, p);
    } else if (ok) {
      printf("%s\naccepted: revision %" JSON_INTEGER_FORMAT ", generation %" JSON_INTEGER_FORMAT "\n",
             kclient_str(r, "value"), kclient_int(r, "revision"),
             kclient_int(r, "generation"));
    } else {
      fail_reply("act", r);
      if (json_is_object(p)) print_pause(stderr, p);
      else if (json_object_get(r, "generation"))
        fprintf(stderr, "generation is now %" JSON_INTEGER_FORMAT "\n",
                kclient_int(r, "generation"));
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
  json_t *r = kclient_request_once("status", c.dir, json_pack("{s:s}", "op", "status"));
  if (!r) return EXIT_FAIL;
  if (c.json) {
    print_json(r);
  } else {
    kclient_print_status(stdout, r);
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
  json_t *st = kclient_request_once("stop", c.dir, json_pack("{s:s}", "op", "status"));
  if (!st) return EXIT_FAIL;
  pid_t pid = (pid_t)kclient_int(st, "pid");
  json_decref(st);
  json_t *r = kclient_request_once("stop", c.dir, json_pack("{s:s}", "op", "shutdown"));
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
