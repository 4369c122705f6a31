/*
** commands.c — the kernel's client commands: eval, preview, inspect,
** observe, act, status, stop.  Each connects to DIR/kernel.sock, sends one
** request (docs/protocol.md) and prints the reply (render.h).
** Exit status: 0 success, 1 failure (no kernel, an error reply, a failed
** transaction), 2 usage.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "client.h"
#include "engine.h"
#include "jiti.h"
#include "kclient.h"
#include "proto.h"
#include "render.h"

static void print_json(json_t *o) {
  char *t = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (t) puts(t);
  free(t);
}

/* An error reply: "jiti CMD: CODE: MESSAGE". */
static int fail_reply(const char *cmd, json_t *r) {
  fflush(stdout);
  render_refusal(cmd, r);
  return EXIT_FAIL;
}

/* How to answer pause p (at generation gen) with `jiti act`: --resume
** only when its menu has a restart, the frame answers only with frames. */
static void act_hint(FILE *f, json_t *p, json_int_t gen) {
  int restarts = json_array_size(json_object_get(p, "restarts")) > 0;
  int frames = json_array_size(json_object_get(p, "frames")) > 0;
  fprintf(f, "answer with: jiti act --generation %" JSON_INTEGER_FORMAT "%s --evaluate SOURCE%s%s | --abort\n", gen,
          restarts ? " --resume ID [--args 'ARG ...'] |" : "", frames ? " [--frame F]" : "",
          frames ? " | --return-from-frame F [--args 'VALUE ...'] | --restart-frame F" : "");
}

static void print_pause(FILE *f, json_t *p) {
  render_pause(f, p);
  act_hint(f, p, kclient_int(p, "generation"));
}

/* Common option parsing: --store, --json, -h. */
typedef struct { const char *dir; int json; } Common;

static int common_opt(const char *cmd, int argc, char **argv, int *i, Common *c, void (*usage)(FILE *)) {
  char err[256];
  int r = opts_store(argc, argv, i, &c->dir, err, sizeof err);
  if (r < 0) fprintf(stderr, "jiti %s: %s\n", cmd, err);
  if (r) return r < 0 ? -1 : 1;
  if (!strcmp(argv[*i], "--json")) { c->json = 1; return 1; }
  if (!strcmp(argv[*i], "-h") || !strcmp(argv[*i], "--help")) { usage(stdout); return 2; }
  return 0;
}

/* The limits options (limits_option), a bad value's message printed. */
static int limits_opt(const char *cmd, int argc, char **argv, int *i, limits_Table *L) {
  char err[256];
  int r = limits_option(argc, argv, i, L, 0, err, sizeof err);
  if (r < 0) fprintf(stderr, "jiti %s: %s\n", cmd, err);
  return r;
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

/* A transaction's reply (call, preview): the output, the value(s), the
** changes it made (or would make), or the failure.  A "paused" refusal says
** how to go on. */
static int print_txn_reply(const char *cmd, json_t *r, int json) {
  int ok = json_is_true(json_object_get(r, "ok"));
  if (json) {
    print_json(r);
    return ok ? EXIT_OK : EXIT_FAIL;
  }
  render_output(stdout, r);
  if (ok && !strcmp(kclient_str(r, "status"), "paused")) {  /* a call that asked to pause */
    print_pause(stdout, json_object_get(r, "pause"));
    return EXIT_OK;
  }
  if (!ok) {
    fail_reply(cmd, r);
    render_diagnosis(stderr, json_object_get(r, "diagnosis"));
    json_t *inc = json_object_get(r, "incident");
    if (json_is_object(inc))  /* automatic repair looks after the function */
      fprintf(stderr, "%s incident %" JSON_INTEGER_FORMAT " of %s (jiti incidents show %" JSON_INTEGER_FORMAT ")\n",
              json_is_true(json_object_get(inc, "joined")) ? "joined" : "opened", kclient_int(inc, "id"),
              kclient_str(inc, "function"), kclient_int(inc, "id"));
    return EXIT_FAIL;
  }
  render_value(stdout, r);
  return EXIT_OK;
}

/* The source of eval and preview: EXPR, or all the forms of a file (-
** standard input) when given --file F or "-".  Malloc'd; NULL after a
** message. */
static char *source_of(const char *cmd, const char *expr, const char *file, int *program) {
  *program = file != NULL;
  size_t len;
  return opts_read_source(cmd, "sent", file ? NULL : expr, file, &len);
}

/* ------------------------------------------------------- eval, preview */

static const char TXN_OPTIONS[] =
  "  --file FILE       the forms of FILE (- for standard input) instead of EXPR\n"
  "  --wait            wait behind a paused transaction instead of being refused\n"
  "  --generation N    run only if the world is still at generation N (else stale)\n"
  "  --package NAME    read and evaluate in package NAME (default: the world's\n"
  "                    current package)\n"
  "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
  "  --json            print the kernel's reply as JSON\n"
  "  -h, --help        show this help\n";

static void eval_usage(FILE *out) {
  fprintf(out,
          "usage: jiti eval [options] EXPR\n"
          "       jiti eval [options] (--file FILE | -)\n"
          "\n"
          "Run EXPR (one Lisp form), or all the forms of FILE (- or --file -: standard\n"
          "input) in order, as one application call on the running kernel: a transaction\n"
          "that publishes what it changes, or restores everything if it fails.  Prints the\n"
          "program's output and the value (each of several values on a line of its own).\n"
          "While a transaction is paused the call is refused at once (\"paused\"), unless\n"
          "--wait says to wait until the pause is answered.  A reply that has not come\n"
          "after 2 s is announced on standard error (once; when it is a terminal, or\n"
          "JITI_PROGRESS=1), then awaited.\n"
          "\n"
          "The call carries an idempotency key: if the connection drops before the reply\n"
          "(the kernel was restarted), jiti eval reconnects for up to 30 s and sends it\n"
          "again with the same key; the kernel replays the outcome if it ran, so it never\n"
          "runs twice.\n"
          "\n"
          "An unhandled error ends the call (nothing it did is kept) and the reply says\n"
          "why: the condition, the restarts the call had established and the backtrace.\n"
          "With --on-error pause the call pauses instead, as an action does: the restart\n"
          "menu is printed, and you repair and continue it with jiti act (--evaluate,\n"
          "--resume, --abort at the pause's generation); the pause holds the world\n"
          "until answered (or the kernel's --pause-timeout).\n"
          "Ctrl-C while the call runs stops it: an interrupt when it can pause (jiti\n"
          "interrupt), else a cancel (jiti cancel: restored, answered `cancelled`); what\n"
          "the kernel said is printed, and the call's own reply awaited.  A second Ctrl-C\n"
          "stops waiting (the connection closes: a call still running is cancelled).\n"
          "\n"
          "options:\n"
          "  --on-error fail|pause  what an unhandled error does (default: fail)\n"
          "  --key KEY         the idempotency key (default: a random one); a later\n"
          "                    jiti eval of the same call with the same KEY gets the\n"
          "                    recorded outcome (kept for the newest 10,000 keys, across\n"
          "                    restarts); another call with it is refused (key-conflict)\n"
          "%s%s"
          "\n"
          "The limits may only lower the kernel's (jiti kernel --help).\n"
          "\n"
          "Exit status: 0 the call completed, or paused (--on-error pause); 1 it failed (the\n"
          "condition is printed), it was refused or no kernel is running; 2 usage.\n", TXN_OPTIONS, LIMITS_HELP);
}

static void preview_usage(FILE *out) {
  fprintf(out,
          "usage: jiti preview [options] EXPR\n"
          "       jiti preview [options] (--file FILE | -)\n"
          "\n"
          "Evaluate EXPR as an action would, report its value and the entries it would\n"
          "change, and restore everything: nothing is published and the generation stays.\n"
          "\n"
          "options:\n%s%s"
          "\n"
          "Exit status: 0 the preview completed; 1 it failed, it was refused or no kernel is\n"
          "running; 2 usage.\n", TXN_OPTIONS, LIMITS_HELP);
}

/* How long a keyed call keeps retrying after its connection dropped (a
** kernel being restarted takes a second or two). */
#define KEYED_PATIENCE 30.0

static void retry_progress(const char *line) { fprintf(stderr, "jiti eval: %s\n", line); }

static volatile sig_atomic_t eval_sigint;
static void on_eval_sigint(int sig) {
  (void)sig;
  eval_sigint = 1;
}

/* A call, keyed, on a connection of its own; Ctrl-C stops it (an interrupt
** when it can pause, else a cancel, aimed at it by its key) and the reply
** is awaited still; a second Ctrl-C gives up.  The reply, or NULL after a
** message. */
static json_t *call_interruptible(const char *cmd, const char *dir, json_t *req, const char *key) {
  char fresh[33], err[600];
  if (!key) {
    kclient_fresh_key(fresh);
    key = fresh;
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_eval_sigint;  /* no SA_RESTART: the wait is interrupted */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, NULL, &old);
  if (old.sa_handler != SIG_IGN) sigaction(SIGINT, &sa, NULL);   /* (a background job keeps ignoring it) */
  eval_sigint = 0;
  kclient k;
  kclient_init(&k, cmd, dir);
  json_t *r = NULL;
  int rc = kclient_call_keyed(&k, req, key, KEYED_PATIENCE, retry_progress, &eval_sigint, &r);
  if (rc == KCLIENT_INTERRUPTED) {
    eval_sigint = 0;
    const char *op;
    json_t *s = kclient_stop_keyed(dir, key, &op, err, sizeof err);
    if (!s)
      fprintf(stderr, "\njiti %s: cannot stop the call: %s\n", cmd, err);
    else if (json_is_true(json_object_get(s, "ok")))
      fprintf(stderr, "\njiti %s: %s attempt %lld (Ctrl-C again to stop waiting)\n", cmd,
              !strcmp(op, "interrupt") ? "interrupting" : "cancelling", (long long)kclient_int(s, "attempt"));
    else
      fprintf(stderr, "\njiti %s: %s: %s (Ctrl-C again to stop waiting)\n", cmd, kclient_str(s, "code"),
              kclient_str(s, "message"));
    json_decref(s);
    rc = kclient_await(&k, &r, &eval_sigint);
    if (rc == KCLIENT_INTERRUPTED)
      fprintf(stderr, "\njiti %s: no longer waiting; a call still running is cancelled as the connection "
              "closes\n", cmd);
  }
  if (rc != KCLIENT_OK && rc != KCLIENT_INTERRUPTED) fprintf(stderr, "jiti %s: %s\n", cmd, k.err);
  kclient_close(&k);
  sigaction(SIGINT, &old, NULL);
  return rc == KCLIENT_OK ? r : NULL;
}

/* eval and preview: one call or preview request. */
static int run_txn(const char *cmd, proto_Op op, void (*usage)(FILE *), int argc, char **argv) {
  Common c = {opts_default_store(), 0};
  const char *expr = NULL, *file = NULL, *gen = NULL, *key = NULL, *package = NULL, *on_error = NULL;
  int wait = 0;
  limits_Table L;
  limits_default(&L);
  for (int i = 1; i < argc; i++) {
    int r = common_opt(cmd, argc, argv, &i, &c, usage);
    if (r == 0) r = limits_opt(cmd, argc, argv, &i, &L);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    const char *a = argv[i];
    if (!strcmp(a, "--wait")) { wait = 1; continue; }
    if (op == PROTO_CALL && !strcmp(a, "--on-error")) {
      if (i + 1 >= argc || (strcmp(argv[i + 1], "fail") && strcmp(argv[i + 1], "pause"))) {
        fprintf(stderr, "jiti %s: --on-error needs fail (the default) or pause\n", cmd);
        return EXIT_USAGE;
      }
      on_error = argv[++i];
      continue;
    }
    if (op == PROTO_CALL && !strcmp(a, "--key")) {
      if (i + 1 >= argc || !argv[i + 1][0] || strlen(argv[i + 1]) > 200) {
        fprintf(stderr, "jiti %s: --key needs a key of 1 to 200 bytes\n", cmd);
        return EXIT_USAGE;
      }
      key = argv[++i];
      continue;
    }
    if (!strcmp(a, "--file") || !strcmp(a, "--generation") || !strcmp(a, "--package")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "jiti %s: %s needs %s\n", cmd, a, a[2] == 'f' ? "a file (- for standard input)"
                                                        : a[2] == 'p' ? "a package name" : "a number");
        return EXIT_USAGE;
      }
      if (a[2] == 'f') file = argv[++i];
      else if (a[2] == 'p') package = argv[++i];
      else gen = argv[++i];
      continue;
    }
    if (!strcmp(a, "-")) { file = "-"; continue; }
    if (a[0] == '-' && a[1]) {
      fprintf(stderr, "jiti %s: unknown option '%s' (see 'jiti %s --help')\n", cmd, a, cmd);
      return EXIT_USAGE;
    }
    if (expr) {
      fprintf(stderr, "jiti %s: one expression only (quote it: jiti %s '(f 1 2)'; several forms: --file)\n", cmd, cmd);
      return EXIT_USAGE;
    }
    expr = a;
  }
  if ((expr != NULL) == (file != NULL)) {
    if (expr) fprintf(stderr, "jiti %s: give EXPR or --file, not both\n", cmd);
    else usage(stderr);
    return EXIT_USAGE;
  }
  uint64_t g = 0;
  if (gen && !opts_count(gen, &g)) {
    fprintf(stderr, "jiti %s: --generation needs a number (the generation of your view: jiti observe)\n", cmd);
    return EXIT_USAGE;
  }
  int program;
  char *src = source_of(cmd, expr, file, &program);
  if (!src) return EXIT_FAIL;
  json_t *req = json_pack("{s:s, s:s}", "op", proto_op_name(op), "source", src);
  free(src);
  if (req && program && op == PROTO_CALL) json_object_set_new(req, "program", json_true());
  /* a file's forms are placed in it (standard input has no name to give) */
  if (req && file && strcmp(file, "-")) json_object_set_new(req, "origin", json_pack("{s:s}", "file", file));
  /* Ctrl-C (the process gone, its connection with it) cancels the call */
  if (req && op == PROTO_CALL) json_object_set_new(req, "on_disconnect", json_string("cancel"));
  if (req && on_error) json_object_set_new(req, "on_error", json_string(on_error));
  if (req && wait) json_object_set_new(req, "wait", json_true());
  if (req && gen) json_object_set_new(req, "generation", json_integer((json_int_t)g));
  if (req && package) json_object_set_new(req, "package", json_string(package));
  json_t *lim = limits_given_json(&L);
  if (req && lim) json_object_set_new(req, "limits", lim);
  else json_decref(lim);
  json_t *r;
  if (op == PROTO_CALL) {  /* a call runs once, even when its reply is lost: keyed */
    r = call_interruptible(cmd, c.dir, req, key);
  } else {
    r = render_request_once(cmd, c.dir, req);
  }
  if (!r) return EXIT_FAIL;
  if (json_is_true(json_object_get(r, "replayed")) && !c.json)
    fprintf(stderr, "jiti %s: replayed: a call with this key ran before; this is its outcome, nothing ran now\n", cmd);
  int st = print_txn_reply(cmd, r, c.json);
  if (st == EXIT_OK && !c.json && op == PROTO_PREVIEW) {
    size_t i;
    json_t *ch;
    printf("restored; it would change %zu entr%s%s\n", json_array_size(json_object_get(r, "changes")),
           json_array_size(json_object_get(r, "changes")) == 1 ? "y" : "ies",
           json_array_size(json_object_get(r, "changes")) ? ":" : "");
    json_array_foreach(json_object_get(r, "changes"), i, ch)
      printf("  %s %s %s\n", json_is_true(json_object_get(ch, "removed")) ? "removed"
                             : json_is_true(json_object_get(ch, "added")) ? "added" : "changed",
             kclient_str(ch, "kind"), kclient_str(ch, "name"));
  }
  json_decref(r);
  return st;
}

int cmd_eval(int argc, char **argv) { return run_txn("eval", PROTO_CALL, eval_usage, argc, argv); }
int cmd_preview(int argc, char **argv) { return run_txn("preview", PROTO_PREVIEW, preview_usage, argc, argv); }

/* ------------------------------------------------------------- inspect */

static void inspect_usage(FILE *out) {
  char kinds[512];
  render_entry_kinds(kinds, sizeof kinds, " or ");
  fprintf(out,
          "usage: jiti inspect [--kind KIND] [--store DIR] [--json] NAME\n"
          "\n"
          "Print one entry of the running kernel's world in full: its kind, name, hash and\n"
          "text.  NAME as observe prints it (e.g. TOTAL-PRICE, *RATE*, :STOCK); it is read\n"
          "as the reader would (folded to upper case unless written with |...|, \"...\" or\n"
          "\\); a name of another package than COMMON-LISP-USER with its package\n"
          "(APP::RUN), a package by its name as a string (\"APP\").  Without --kind, the\n"
          "first entry of that name among functions, macros, variables, structures,\n"
          "classes, generic functions, methods, foreign declarations, data rows,\n"
          "invariants, packages, types, symbol macros, setf expanders, compiler macros,\n"
          "documentation strings (named (NAME DOC-TYPE), e.g. \"(F FUNCTION)\") and\n"
          "property lists.\n"
          "\n"
          "options:\n"
          "  --kind KIND       one of the entry kinds: %s\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json            print the kernel's reply as JSON\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 found; 1 no such entry or no kernel is running; 2 usage.\n", kinds);
}

/* NAME as the reader would read it: folded to upper case unless written
** with |...|, "..." or \ (then exactly as typed). */
static void fold_name(char *s) {
  if (strpbrk(s, "|\"\\")) return;
  for (; *s; s++) *s = (char)toupper((unsigned char)*s);
}

int cmd_inspect(int argc, char **argv) {
  Common c = {opts_default_store(), 0};
  const char *kind = NULL;
  char *name = NULL;
  for (int i = 1; i < argc; i++) {
    int r = common_opt("inspect", argc, argv, &i, &c, inspect_usage);
    if (r < 0) { free(name); return EXIT_USAGE; }
    if (r == 2) { free(name); return EXIT_OK; }
    if (r) continue;
    if (!strcmp(argv[i], "--kind")) {
      if (i + 1 >= argc || jiti_entry_kind_parse(argv[i + 1]) < 0) {
        char kinds[512];
        render_entry_kinds(kinds, sizeof kinds, " or ");
        fprintf(stderr, "jiti inspect: --kind needs %s\n", kinds);
        free(name);
        return EXIT_USAGE;
      }
      kind = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "jiti inspect: unknown option '%s' (see 'jiti inspect --help')\n", argv[i]);
      free(name);
      return EXIT_USAGE;
    } else if (name) {
      fprintf(stderr, "jiti inspect: one NAME only\n");
      free(name);
      return EXIT_USAGE;
    } else {
      name = strdup(argv[i]);
    }
  }
  if (!name) { inspect_usage(stderr); return EXIT_USAGE; }
  fold_name(name);
  json_t *req = json_pack("{s:s, s:s}", "op", proto_op_name(PROTO_INSPECT), "name", name);
  if (req && kind) json_object_set_new(req, "kind", json_string(kind));
  free(name);
  json_t *r = render_request_once("inspect", c.dir, req);
  if (!r) return EXIT_FAIL;
  int ok = json_is_true(json_object_get(r, "ok"));
  if (c.json) {
    print_json(r);
  } else if (!ok) {
    fail_reply("inspect", r);
  } else {
    json_t *e = json_object_get(r, "entry");
    printf("%s %s\nhash %s\n", kclient_str(e, "kind"), kclient_str(e, "name"), kclient_str(e, "hash"));
    json_t *loc = json_object_get(e, "location");
    if (json_is_string(json_object_get(loc, "file")))  /* as jiti show says where it was written */
      printf(";; from %s:%" JSON_INTEGER_FORMAT ":%" JSON_INTEGER_FORMAT "\n", kclient_str(loc, "file"),
             kclient_int(loc, "line"), kclient_int(loc, "column"));
    printf("%s\n", kclient_str(e, "text"));
    if (json_is_string(json_object_get(e, "unavailable")))
      printf("unavailable: %s\n", kclient_str(e, "unavailable"));
  }
  json_decref(r);
  return ok ? EXIT_OK : EXIT_FAIL;
}

/* ---------------------------------------------------------- observe */

static void observe_usage(FILE *out) {
  fprintf(out,
          "usage: jiti observe [--limit BYTES] [--store DIR] [--json]\n"
          "\n"
          "Show the running kernel's world: generation, revision, status, entries, data,\n"
          "invariants and, when a transaction is paused, its condition, restarts and\n"
          "backtrace.  A view is at most about --limit bytes (default 64K): past it,\n"
          "entries are shown without their text, then left out, and the view says how many.\n"
          "\n"
          "options:\n"
          "  --limit BYTES     the size of the view (suffixes K, M; at most 16M)\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json            the view as JSON (docs/protocol.md, \"observe\")\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 success; 1 no kernel is running or it refused; 2 usage.\n");
}

int cmd_observe(int argc, char **argv) {
  Common c = {opts_default_store(), 0};
  uint64_t limit = 0;
  for (int i = 1; i < argc; i++) {
    int r = common_opt("observe", argc, argv, &i, &c, observe_usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    if (!strcmp(argv[i], "--limit")) {
      if (i + 1 >= argc || !opts_size(argv[i + 1], &limit) || limit == 0 || limit > ((uint64_t)16 << 20)) {
        fprintf(stderr, "jiti observe: --limit needs a byte count from 1 to 16M\n");
        return EXIT_USAGE;
      }
      i++;
      continue;
    }
    fprintf(stderr, "jiti observe: unexpected argument '%s' (see 'jiti observe --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  json_t *req = json_pack("{s:s}", "op", proto_op_name(PROTO_OBSERVE));
  if (req && limit) json_object_set_new(req, "budget", json_integer((json_int_t)limit));
  json_t *r = render_request_once("observe", c.dir, req);
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
  json_t *p = render_view(stdout, v, "see more with --limit BYTES");
  if (p) act_hint(stdout, p, kclient_int(v, "generation"));
  json_decref(r);
  return EXIT_OK;
}

/* -------------------------------------------------------------- act */

static void act_usage(FILE *out) {
  fprintf(out,
          "usage: jiti act [--store DIR] [--json] --generation N\n"
          "                (--evaluate SOURCE | --file FILE) [--package NAME] [--frame F]\n"
          "                 | --resume ID [--args 'ARG ...' | --args-expr EXPR]\n"
          "                 | --return-from-frame F [--args 'VALUE ...' | --args-expr EXPR]\n"
          "                 | --restart-frame F\n"
          "                 | --abort)\n"
          "\n"
          "Send one action to the running kernel, as a model would (the same form gate).\n"
          "N is the generation of the view the action was made from (jiti observe); a\n"
          "stale generation is refused and nothing runs.  --evaluate starts a transaction,\n"
          "or repairs inside a paused one; --resume continues a pause with a restart of its\n"
          "menu; --abort restores a paused one.  --package reads and evaluates SOURCE in\n"
          "package NAME (default: the world's current package; a repair's, the paused\n"
          "action's).  --file FILE evaluates the form FILE holds as --evaluate would, and\n"
          "places its reader errors and the definitions it makes in FILE (FILE:LINE:COLUMN;\n"
          "jiti show keeps the definition as written there).\n"
          "\n"
          "Frames (a pause lists them, innermost 0, with their arguments and locals):\n"
          "--frame F evaluates the repair SOURCE in frame F, whose local variables it reads\n"
          "and sets by name ((setq d 2) changes the paused frame's D); --return-from-frame F\n"
          "makes frame F return the values given (--args 5 returns 5; none: no values) and\n"
          "its caller go on; --restart-frame F calls frame F's function again with the\n"
          "arguments it shows (the function's new definition, if it was redefined).\n"
          "\n"
          "A restart's arguments: --args takes them as you would write them in a call,\n"
          "each form evaluated (--args '5 \"x\"' passes 5 and \"x\"; --args \"'(1 2)\" passes\n"
          "one list); --args-expr takes one expression returning the list of arguments\n"
          "(--args-expr '(list 5 \"x\")').  The restart menu shows each restart's lambda\n"
          "list.\n"
          "\n"
          "options:\n"
          "%s"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json            print the kernel's reply as JSON\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 accepted, paused (the menu is printed) or aborted as asked;\n"
          "1 refused, failed or no kernel; 2 usage.\n", LIMITS_HELP);
}

int cmd_act(int argc, char **argv) {
  Common c = {opts_default_store(), 0};
  const char *gen = NULL, *evaluate = NULL, *resume = NULL, *args = NULL, *args_expr = NULL,
             *package = NULL, *frame = NULL, *return_frame = NULL, *restart_frame = NULL, *file = NULL;
  int nacts = 0, abort_ = 0;
  limits_Table L;
  limits_default(&L);
  for (int i = 1; i < argc; i++) {
    int r = common_opt("act", argc, argv, &i, &c, act_usage);
    if (r == 0) r = limits_opt("act", argc, argv, &i, &L);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    const char *a = argv[i];
    const char **slot = !strcmp(a, "--generation") ? &gen : !strcmp(a, "--evaluate") ? &evaluate
                      : !strcmp(a, "--resume") ? &resume : !strcmp(a, "--args") ? &args
                      : !strcmp(a, "--args-expr") ? &args_expr
                      : !strcmp(a, "--package") ? &package : !strcmp(a, "--frame") ? &frame
                      : !strcmp(a, "--return-from-frame") ? &return_frame
                      : !strcmp(a, "--restart-frame") ? &restart_frame
                      : !strcmp(a, "--file") ? &file : NULL;
    if (slot) {
      if (i + 1 >= argc) {
        fprintf(stderr, "jiti act: %s needs a value (see 'jiti act --help')\n", a);
        return EXIT_USAGE;
      }
      *slot = argv[++i];
      if (slot == &evaluate || slot == &resume || slot == &return_frame || slot == &restart_frame || slot == &file)
        nacts++;
      continue;
    }
    if (!strcmp(a, "--abort")) { nacts++; abort_ = 1; continue; }
    fprintf(stderr, "jiti act: unknown option '%s' (see 'jiti act --help')\n", a);
    return EXIT_USAGE;
  }
  uint64_t g;
  if (!gen) {
    fprintf(stderr, "jiti act: --generation N is required: the generation of your view (jiti observe)\n");
    return EXIT_USAGE;
  }
  if (!opts_count(gen, &g) || g > INT64_MAX) {
    fprintf(stderr, "jiti act: --generation takes a whole number, the generation jiti observe shows (got '%s')\n", gen);
    return EXIT_USAGE;
  }
  if (nacts != 1) {
    fprintf(stderr, "jiti act: give exactly one of --evaluate SOURCE, --file FILE, --resume ID, "
            "--return-from-frame F, --restart-frame F, --abort\n");
    return EXIT_USAGE;
  }
  if ((args || args_expr) && !resume && !return_frame) {
    fprintf(stderr, "jiti act: --args and --args-expr go with --resume or --return-from-frame\n");
    return EXIT_USAGE;
  }
  if (frame && !evaluate && !file) {
    fprintf(stderr, "jiti act: --frame goes with --evaluate (a repair in that frame)\n");
    return EXIT_USAGE;
  }
  uint64_t fno = 0;
  const char *fopt = frame ? frame : return_frame ? return_frame : restart_frame;
  if (fopt && (!opts_count(fopt, &fno) || fno >= JITI_FRAME_MAX)) {
    fprintf(stderr, "jiti act: a frame is a number from 0 to %d, as the pause lists them (got '%s')\n",
            JITI_FRAME_MAX - 1, fopt);
    return EXIT_USAGE;
  }
  if (package && !evaluate && !file) {
    fprintf(stderr, "jiti act: --package goes with --evaluate\n");
    return EXIT_USAGE;
  }
  if (args && args_expr) {
    fprintf(stderr, "jiti act: give --args (the arguments as written) or --args-expr (an expression "
            "returning their list), not both\n");
    return EXIT_USAGE;
  }
  char *filesrc = NULL;
  if (file) {  /* --evaluate with the form the file holds, placed in it */
    size_t len = 0;
    if (!(filesrc = opts_read_file(file, &len))) {
      fprintf(stderr, "jiti act: cannot read %s: %s\n", file, strerror(errno));
      return EXIT_FAIL;
    }
    if (strlen(filesrc) != len) {
      fprintf(stderr, "jiti act: %s holds a NUL byte; nothing was sent\n", file);
      free(filesrc);
      return EXIT_FAIL;
    }
    evaluate = filesrc;
  }
  json_t *action = evaluate ? json_pack("{s:s, s:s}", "type", "evaluate", "source", evaluate)
                 : resume ? json_pack("{s:s, s:s}", "type", "resume", "restart_id", resume)
                 : return_frame ? json_pack("{s:s}", "type", "return-from-frame")
                 : restart_frame ? json_pack("{s:s}", "type", "restart-frame")
                 : json_pack("{s:s}", "type", "abort");
  if (fopt) json_object_set_new(action, "frame", json_integer((json_int_t)fno));
  if (args) {  /* the forms as written: their values are the arguments */
    size_t n = strlen(args) + 16;
    char *e = malloc(n);
    if (e) snprintf(e, n, "(list\n%s\n)", args);
    json_object_set_new(action, "arguments", json_string(e ? e : ""));
    free(e);
  } else if (args_expr) {
    json_object_set_new(action, "arguments", json_string(args_expr));
  }
  if (package) json_object_set_new(action, "package", json_string(package));
  if (file) json_object_set_new(action, "origin", json_pack("{s:s}", "file", file));
  free(filesrc);
  json_t *req = json_pack("{s:s, s:I, s:o}", "op", proto_op_name(PROTO_ACT), "generation", (json_int_t)g,
                          "action", action);
  json_t *lim = limits_given_json(&L);
  if (req && lim) json_object_set_new(req, "limits", lim);
  else json_decref(lim);
  json_t *r = render_request_once("act", c.dir, req);
  if (!r) return EXIT_FAIL;
  int ok = json_is_true(json_object_get(r, "ok"));
  json_int_t now = kclient_int(r, "generation");
  if (!ok && !json_object_get(r, "generation")) {   /* the world's generation, to tell a typo */
    json_t *st = kclient_once(c.dir, json_pack("{s:s}", "op", proto_op_name(PROTO_STATUS)), NULL, 0);
    now = st ? kclient_int(st, "generation") : INT64_MAX;
    json_decref(st);
  }
  /* an abort that restored what was paused did what was asked */
  int aborted = abort_ && !ok && !strcmp(kclient_str(r, "code"), "aborted");
  if (c.json) {
    print_json(r);
  } else {
    render_output(stdout, r);
    json_t *p = json_object_get(r, "pause");
    if (ok && json_is_object(p)) {
      if (abort_) printf("%s\n", kclient_str(p, "error"));  /* the level left */
      if (json_object_get(r, "value")) printf("repair value: %s\n", kclient_str(r, "value"));
      print_pause(stdout, p);
    } else if (ok) {
      printf("%s\naccepted: revision %" JSON_INTEGER_FORMAT ", generation %" JSON_INTEGER_FORMAT "\n",
             kclient_str(r, "value"), kclient_int(r, "revision"), kclient_int(r, "generation"));
    } else if (aborted) {
      printf("aborted: everything the paused transaction did is restored; generation %" JSON_INTEGER_FORMAT "\n",
             kclient_int(r, "generation"));
    } else if ((json_int_t)g > now) {
      /* no view ever had it: a typo, not a world that moved on */
      fprintf(stderr, "jiti act: generation %" JSON_INTEGER_FORMAT " is ahead of the world (it is at generation %"
              JSON_INTEGER_FORMAT "): give the generation 'jiti observe' shows; nothing ran\n", (json_int_t)g, now);
    } else {
      fail_reply("act", r);
      const char *m = kclient_str(r, "message");
      if ((args || args_expr) && strstr(m, "argument"))
        fprintf(stderr, "%s\n", args ? "(--args: the arguments as you would write them in a call, e.g. "
                                       "--args '5 \"x\"')"
                                     : "(--args-expr: one expression returning the list of arguments, e.g. "
                                       "--args-expr '(list 5)')");
      if (json_is_object(p)) print_pause(stderr, p);
      else if (json_object_get(r, "generation"))
        fprintf(stderr, "generation is now %" JSON_INTEGER_FORMAT "\n", kclient_int(r, "generation"));
    }
  }
  json_decref(r);
  return ok || aborted ? EXIT_OK : EXIT_FAIL;
}

/* ----------------------------------------------------- status, stop */

static void status_usage(FILE *out) {
  fprintf(out,
          "usage: jiti status [--store DIR] [--json]\n"
          "\n"
          "Show whether a kernel serves the store, its pid, the worker's pid, revision,\n"
          "generation, state (idle, running, paused, publishing, faulted, starting),\n"
          "queued transactions, attempts and worker restarts, what was counted instead of\n"
          "recorded as events (calls and previews that published nothing, queries: see\n"
          "'jiti events counters') and the events' retention (jiti kernel --events-keep).\n"
          "\n"
          "Exit status: 0 a kernel is running and answered; 1 none is, or it answered\n"
          "with an error (busy, shutting down: the message is printed); 2 usage.\n");
}

int cmd_status(int argc, char **argv) {
  Common c = {opts_default_store(), 0};
  int done = only_common_opts("status", argc, argv, &c, status_usage);
  if (done >= 0) return done;
  json_t *r = render_request_once("status", c.dir, json_pack("{s:s}", "op", proto_op_name(PROTO_STATUS)));
  if (!r) return EXIT_FAIL;
  int ok = json_is_true(json_object_get(r, "ok"));
  if (c.json) print_json(r);
  else if (ok) render_status(stdout, r);
  else fprintf(stderr, "jiti status: %s: %s\n", kclient_str(r, "code"), kclient_str(r, "message"));
  json_decref(r);
  return ok ? EXIT_OK : EXIT_FAIL;
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
  Common c = {opts_default_store(), 0};
  int done = only_common_opts("stop", argc, argv, &c, stop_usage);
  if (done >= 0) return done;
  char err[600];
  json_t *st = kclient_once(c.dir, json_pack("{s:s}", "op", proto_op_name(PROTO_STATUS)), err, sizeof err);
  if (!st) {
    if (!strncmp(err, "no kernel is running", 20))   /* nothing to stop: not advice to start one */
      fprintf(stderr, "jiti stop: no kernel is running for %s: nothing to stop\n", c.dir);
    else
      fprintf(stderr, "jiti stop: %s\n", err);
    return EXIT_FAIL;
  }
  pid_t pid = (pid_t)kclient_int(st, "pid");
  json_decref(st);
  json_t *r = render_request_once("stop", c.dir, json_pack("{s:s}", "op", proto_op_name(PROTO_SHUTDOWN)));
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

static void cancel_usage(FILE *out) {
  fprintf(out,
          "usage: jiti cancel [--store DIR] [--attempt N]\n"
          "\n"
          "Cancel the transaction the store's kernel is running: it stops at its next\n"
          "evaluation step (a call, a loop iteration), its changes are restored and its\n"
          "caller is answered `cancelled`; the kernel then serves the next request.\n"
          "With --attempt N only attempt N is cancelled (status shows current_attempt).\n"
          "A paused transaction is not running: abort it with jiti act --abort.  A long\n"
          "operation on big numbers is stopped inside too.  To pause it instead, with a\n"
          "CONTINUE restart: jiti interrupt.\n"
          "A client that disconnects while its call runs has it cancelled the same way,\n"
          "unless the call said \"on_disconnect\": \"keep\" (Ctrl-C on jiti eval cancels\n"
          "its call by its key).\n"
          "\n"
          "Exit status: 0 the kernel was asked; 1 nothing runs (not-running), attempt N\n"
          "is not the running one (not-found), it is paused, or no kernel runs; 2 usage.\n");
}

static void interrupt_usage(FILE *out) {
  fprintf(out,
          "usage: jiti interrupt [--store DIR] [--attempt N]\n"
          "\n"
          "Interrupt the transaction the store's kernel is running: it pauses at its next\n"
          "evaluation step (inside a long operation on big numbers too) with the condition\n"
          "INTERACTIVE-INTERRUPT (\"Interactive interrupt.\") and a CONTINUE restart that\n"
          "goes on exactly where it stopped; its caller gets the pause.  From there\n"
          "everything a pause allows works: repairs (jiti act EXPR), resume (jiti act\n"
          "--resume ID: CONTINUE, or an outer restart), abort (jiti act --abort).  A repair\n"
          "running at a pause is interrupted the same way (it pauses a level up).\n"
          "With --attempt N only attempt N is interrupted (status shows current_attempt).\n"
          "Only a transaction that may pause (an act) can be interrupted; a call fails\n"
          "instead of pausing: jiti cancel stops it (not-pausable).\n"
          "\n"
          "Exit status: 0 the kernel was asked; 1 nothing runs (not-running), attempt N\n"
          "is not the running one (not-found), it is paused already, it cannot pause\n"
          "(not-pausable), or no kernel runs; 2 usage.\n");
}

/* cancel and interrupt: the running transaction (or attempt N). */
static int stop_running(const char *cmd, proto_Op op, void (*usage)(FILE *), int argc, char **argv) {
  Common c = {opts_default_store(), 0};
  long long attempt = 0;
  for (int i = 1; i < argc; i++) {
    int r = common_opt(cmd, argc, argv, &i, &c, usage);
    if (r < 0) return EXIT_USAGE;
    if (r == 2) return EXIT_OK;
    if (r) continue;
    char *end;
    if (!strcmp(argv[i], "--attempt") && i + 1 < argc && (attempt = strtoll(argv[i + 1], &end, 10)) > 0 && !*end) {
      i++;
      continue;
    }
    fprintf(stderr, "jiti %s: unexpected argument '%s' (--attempt takes a positive integer; see "
            "'jiti %s --help')\n", cmd, argv[i], cmd);
    return EXIT_USAGE;
  }
  json_t *req = json_pack("{s:s}", "op", proto_op_name(op));
  if (attempt) json_object_set_new(req, "attempt", json_integer(attempt));
  json_t *r = render_request_once(cmd, c.dir, req);
  if (!r) return EXIT_FAIL;
  if (!json_is_true(json_object_get(r, "ok"))) {
    int s = fail_reply(cmd, r);
    json_decref(r);
    return s;
  }
  printf("%s attempt %lld\n", op == PROTO_INTERRUPT ? "interrupting" : "cancelling",
         (long long)kclient_int(r, "attempt"));
  json_decref(r);
  return EXIT_OK;
}

int cmd_cancel(int argc, char **argv) { return stop_running("cancel", PROTO_CANCEL, cancel_usage, argc, argv); }
int cmd_interrupt(int argc, char **argv) {
  return stop_running("interrupt", PROTO_INTERRUPT, interrupt_usage, argc, argv);
}
