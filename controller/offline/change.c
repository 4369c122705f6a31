/*
** change.c — the operator's commands that change a store: `jiti init`,
** `jiti apply`, `jiti invariant add|remove|list` and `jiti rollback`.
**
** When a kernel serves the store they go through it (its socket: the
** requests apply, invariant-add, invariant-remove, invariant-list, rollback);
** otherwise they run offline on the same engine (otxn.c).  Either way each
** change is one transaction producing at most one revision, and its result
** is printed by the same code (render.h).
*/
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "kclient.h"
#include "offline.h"
#include "render.h"
#include "txn.h"

static const char STORE_HELP[] =
  "  --wait            while a transaction is paused, wait until it ends (else refused)\n"
  "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
  "  -h, --help        show this help\n";

static const char LIVE_HELP[] =
  "When a kernel serves the store (jiti kernel), the change goes through it, as\n"
  "one of its transactions (under its limits and its --allow-foreign grant);\n"
  "otherwise it runs on the store directly, on the same engine (a sandboxed worker\n"
  "rebuilt from CURRENT, granted the libraries of --allow-foreign).\n";

/* The options of every change: --store, the limits, --allow-foreign,
** --wait.  1 when argv[*i] was one (consumed), -1 after a message, 0
** otherwise. */
static int change_option(const char *cmd, int argc, char **argv, int *i, const char **dir, limits_Table *L,
                         grant_List *g, int *wait) {
  char err[256];
  if (!strcmp(argv[*i], "--wait")) {
    *wait = 1;
    return 1;
  }
  int r = opts_store(argc, argv, i, dir, err, sizeof err);
  if (r == 0 && argv[*i][0] == '-') r = limits_option(argc, argv, i, L, 0, err, sizeof err);
  if (r == 0) r = grant_option(argc, argv, i, g, err, sizeof err);
  if (r < 0) fprintf(stderr, "jiti %s: %s\n", cmd, err);
  return r;
}

/* The kernel's reply to req (stolen), printed as a change; the exit status. */
static int through_kernel(const char *cmd, const char *dir, json_t *req) {
  json_t *r = render_request_once(cmd, dir, req);
  if (!r) return EXIT_FAIL;
  int st = render_change(cmd, r, dir);
  json_decref(r);
  return st;
}

/* A grant given where a kernel serves the store: the kernel's own applies. */
static void grant_ignored(const char *cmd, const char *dir, const grant_List *g) {
  if (g->n)
    fprintf(stderr, "jiti %s: a kernel serves the store at %s: the libraries it was started with are "
            "granted ('jiti status' lists them); --allow-foreign is ignored\n", cmd, dir);
}

/* One change, req (stolen) the protocol request for it: through the kernel
** serving dir (with the limits L's options set; with wait, waiting behind a
** pause), else offline on the same engine under L, granted g.  The exit
** status. */
static int change(const char *cmd, const char *dir, const limits_Table *L, const grant_List *g, int wait,
                  json_t *req) {
  if (!req) {
    /* json_pack refuses a string that is not UTF-8, as it does when memory runs out */
    fprintf(stderr, "jiti %s: an argument is not valid UTF-8 (or memory ran out); nothing was sent\n", cmd);
    return EXIT_FAIL;
  }
  if (kclient_serving(dir)) {
    grant_ignored(cmd, dir, g);
    if (wait) json_object_set_new(req, "wait", json_true());   /* behind a pause, not refused */
    json_t *lim = limits_given_json(L);
    if (lim) json_object_set_new(req, "limits", lim);
    return through_kernel(cmd, dir, req);
  }
  otxn t;
  int status = otxn_open(&t, cmd, dir, L, g);
  if (status == EXIT_OK) status = otxn_start(&t, req, t.parent, 0);
  if (status == EXIT_OK) {
    json_t *r = otxn_run(&t);
    status = render_change(cmd, r, dir);
    json_decref(r);
  }
  otxn_close(&t);
  json_decref(req);
  return status;
}

/* ------------------------------------------------------------------ init */

static void init_usage(FILE *out) {
  fprintf(out,
          "usage: jiti init [--store DIR]\n"
          "\n"
          "Create a store holding revision 1: the initial, empty world.\n"
          "\n"
          "options:\n%s"
          "\n"
          "Exit status: 0 created; 1 the store exists already or cannot be created; 2 usage.\n",
          STORE_HELP);
}

int cmd_init(int argc, char **argv) {
  const char *dir = opts_default_store();
  char err[256];
  for (int i = 1; i < argc; i++) {
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti init: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { init_usage(stdout); return EXIT_OK; }
    fprintf(stderr, "jiti init: unexpected argument '%s' (see 'jiti init --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  char why[1024] = "";
  store_env *s = NULL;
  int rc = store_open(dir, 0, &s, why, sizeof why);
  if (rc != STORE_OK) {
    char hint[CLI_MSG_MAX];
    storeio_open_hint(dir, rc, hint, sizeof hint);
    fprintf(stderr, "jiti init: cannot create the store at %s: %s\n%s%s", dir,
            why[0] ? why : store_strerror(rc), hint, hint[0] ? "\n" : "");
    return EXIT_FAIL;
  }
  uint64_t cur = 0, rev = 0;
  int status = EXIT_FAIL;
  if ((rc = store_current(s, &cur)) != STORE_OK) {
    fprintf(stderr, "jiti init: %s\n", store_errmsg(s));
  } else if (cur != 0) {
    fprintf(stderr, "jiti init: the store at %s exists already (CURRENT is revision %" PRIu64
            "); nothing was changed\n", dir, cur);
  } else {
    store_rev_info info = {STORE_REV_INITIAL, 1, 0, JITI_VERSION, "initial: an empty world", NULL, NULL};
    if (store_publish(s, 0, &info, NULL, 0, NULL, 0, &rev) != STORE_OK) {
      fprintf(stderr, "jiti init: %s\n", store_errmsg(s));
    } else {
      ostore_event(s, "init", json_pack("{s:s, s:I}", "event", store_event_name(STORE_EV_INITIALISED),
                                         "revision", (json_int_t)rev));
      printf("initialised the store at %s: revision %" PRIu64 " (initial, empty world)\n", dir, rev);
      status = EXIT_OK;
    }
  }
  store_close(s);
  return status;
}

/* ----------------------------------------------------------------- apply */

static void apply_usage(FILE *out) {
  fprintf(out,
          "usage: jiti apply [options] FILE\n"
          "       jiti apply [options] -e SOURCE\n"
          "\n"
          "Run the forms of FILE (- for standard input) or SOURCE as one transaction on the\n"
          "world of the store's CURRENT revision: the forms run in order under the limits\n"
          "inside a checkpoint (each checked by the form gate), every invariant is\n"
          "checked, and the entries that changed are published as a new revision.  On an\n"
          "error, a tripped limit or a failing invariant nothing is published and CURRENT\n"
          "stays as it was.  Every attempt is recorded as events.  A form that does not\n"
          "read is refused before anything runs, placed as FILE:LINE:COLUMN (<input> for\n"
          "-e); each definition keeps its text as written and its line (jiti show).\n"
          "\n%s"
          "\n"
          "options:\n"
          "  -e, --eval SOURCE run SOURCE instead of a file\n"
          "  --summary TEXT    the revision's summary (default: the command)\n"
          "%s%s%s"
          "\n"
          "Exit status: 0 published (or nothing changed); 1 an error, a limit, an unsafe\n"
          "result or a store problem (nothing published); 2 usage.\n",
          LIVE_HELP, LIMITS_HELP, GRANT_HELP, STORE_HELP);
}

static int apply_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *expr = NULL, *file = NULL, *summary = NULL;
  limits_Table L;
  limits_default(&L);
  grant_List g = {0};
  int wait = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r = change_option("apply", argc, argv, &i, &dir, &L, &g, &wait);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { apply_usage(stdout); return EXIT_OK; }
    if (!strcmp(a, "-e") || !strcmp(a, "--eval") || !strcmp(a, "--summary")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "jiti apply: %s needs %s\n", a, strcmp(a, "--summary") ? "source text" : "a text");
        return EXIT_USAGE;
      }
      if (!strcmp(a, "--summary")) summary = argv[++i];
      else if (expr) { fprintf(stderr, "jiti apply: give -e only once\n"); return EXIT_USAGE; }
      else expr = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "jiti apply: unknown option %s (see 'jiti apply --help')\n", a);
      return EXIT_USAGE;
    } else if (file) {
      fprintf(stderr, "jiti apply: give one FILE (one transaction per apply)\n");
      return EXIT_USAGE;
    } else {
      file = a;
    }
  }
  if ((expr != NULL) == (file != NULL)) {
    if (expr) fprintf(stderr, "jiti apply: give a FILE or -e SOURCE, not both\n");
    else apply_usage(stderr);
    return EXIT_USAGE;
  }
  size_t len = 0;
  char *src;
  if (!(src = opts_read_source("apply", "run", expr, file, &len))) return EXIT_FAIL;
  char defsum[160];
  if (!summary) {
    if (expr) {
      /* the first line of the expression, cut */
      size_t n = strcspn(expr, "\n");
      snprintf(defsum, sizeof defsum, "apply -e %.*s%s", (int)(n > 100 ? 100 : n), expr,
               n > 100 || expr[n] ? " ..." : "");
    } else {
      snprintf(defsum, sizeof defsum, "apply %.140s", file);
    }
    summary = defsum;
  }
  json_t *req = json_pack("{s:s, s:s, s:s}", "op", proto_op_name(PROTO_APPLY), "source", src, "summary", summary);
  /* the file's reader errors and definitions are placed in it */
  if (req && file && strcmp(file, "-")) json_object_set_new(req, "origin", json_pack("{s:s}", "file", file));
  int status = change("apply", dir, &L, &g, wait, req);
  free(src);
  return status;
}

int cmd_apply(int argc, char **argv) { return stack_run(apply_main, argc, argv); }

/* ------------------------------------------------------------- invariant */

static void invariant_usage(FILE *out) {
  fprintf(out,
          "usage: jiti invariant add NAME SOURCE [options]\n"
          "       jiti invariant remove NAME [options]\n"
          "       jiti invariant list [--store DIR]\n"
          "\n"
          "Manage the world's safety invariants (operator only).  An invariant is one\n"
          "Lisp expression that must return true after every transaction.  add and\n"
          "remove are transactions producing a revision; add is refused when the new\n"
          "invariant does not hold on CURRENT's world.\n"
          "\n%s"
          "\n"
          "options:\n%s%s%s"
          "\n"
          "Exit status: 0 done; 1 refused (unsafe, no such invariant, store problem); 2 usage.\n",
          LIVE_HELP, LIMITS_HELP, GRANT_HELP, STORE_HELP);
}

static int invariant_list_offline(const char *dir) {
  store_env *s = ostore_open("invariant list", dir, 0);
  if (!s) return EXIT_FAIL;
  storeio_map m = {.with_bytes = 1, .only_kind = STORE_INVARIANT};
  int status = EXIT_OK;
  if (storeio_map_load(s, STORE_REV_CURRENT, &m) != STORE_OK) {
    fprintf(stderr, "jiti invariant list: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  } else if (m.n == 0) {
    printf("no invariants\n");
  } else {
    jiti_State *S = stack_new_world();
    if (!S) {
      fprintf(stderr, "jiti invariant list: cannot create an interpreter (out of memory?)\n");
      status = EXIT_FAIL;
    }
    for (size_t i = 0; S && i < m.n; i++) {
      char *text = jiti_entry_text(S, m.v[i].bytes, m.v[i].len);
      printf("%s  %s\n", m.v[i].name, text ? text : "?");
      free(text);
    }
    if (S) jiti_close(S);
  }
  storeio_map_free(&m);
  store_close(s);
  return status;
}

static int invariant_list_live(const char *dir) {
  json_t *r = render_request_once("invariant list", dir, json_pack("{s:s}", "op",
                                                                    proto_op_name(PROTO_INVARIANT_LIST)));
  if (!r) return EXIT_FAIL;
  int ok = json_is_true(json_object_get(r, "ok"));
  json_t *l = json_object_get(r, "invariants");
  if (!ok) fprintf(stderr, "jiti invariant list: %s: %s\n", kclient_str(r, "code"), kclient_str(r, "message"));
  else if (!json_array_size(l)) printf("no invariants\n");
  size_t i;
  json_t *e;
  json_array_foreach(l, i, e) printf("%s  %s\n", kclient_str(e, "name"), kclient_str(e, "source"));
  json_decref(r);
  return ok ? EXIT_OK : EXIT_FAIL;
}

static int invariant_main(int argc, char **argv) {
  const char *dir = opts_default_store();
  const char *pos[4];
  int npos = 0;
  limits_Table L;
  limits_default(&L);
  grant_List g = {0};
  int wait = 0;
  for (int i = 1; i < argc; i++) {
    int r = change_option("invariant", argc, argv, &i, &dir, &L, &g, &wait);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { invariant_usage(stdout); return EXIT_OK; }
    if (argv[i][0] == '-' && argv[i][1] && npos < 3) {
      fprintf(stderr, "jiti invariant: unknown option %s (see 'jiti invariant --help')\n", argv[i]);
      return EXIT_USAGE;
    }
    if (npos == 4) { invariant_usage(stderr); return EXIT_USAGE; }
    pos[npos++] = argv[i];
  }
  if (npos == 0) { invariant_usage(stderr); return EXIT_USAGE; }
  const char *sub = pos[0];
  int add = !strcmp(sub, "add"), rem = !strcmp(sub, "remove"), list = !strcmp(sub, "list");
  if ((add && npos != 3) || (rem && npos != 2) || (list && npos != 1) || !(add || rem || list)) {
    if (!(add || rem || list))
      fprintf(stderr, "jiti invariant: '%s' is not add, remove or list\n", sub);
    invariant_usage(stderr);
    return EXIT_USAGE;
  }
  if (list) return kclient_serving(dir) ? invariant_list_live(dir) : invariant_list_offline(dir);
  const char *name = pos[1], *cmd = add ? "invariant add" : "invariant remove";
  proto_Op op = add ? PROTO_INVARIANT_ADD : PROTO_INVARIANT_REMOVE;
  size_t len;
  char *src = add ? opts_read_source(cmd, "published", pos[2], NULL, &len) : NULL;
  if (add && !src) return EXIT_FAIL;
  json_t *req = json_pack("{s:s, s:s}", "op", proto_op_name(op), "name", name);
  if (req && add) json_object_set_new(req, "source", json_string(src));
  free(src);
  return change(cmd, dir, &L, &g, wait, req);
}

int cmd_invariant(int argc, char **argv) { return stack_run(invariant_main, argc, argv); }

/* -------------------------------------------------------------- rollback */

static void rollback_usage(FILE *out) {
  fprintf(out,
          "usage: jiti rollback REV [options]\n"
          "\n"
          "Publish a new revision (kind rollback) whose world equals revision REV's, after\n"
          "checking CURRENT's invariants against REV's world.  History is kept: the\n"
          "revisions after REV stay in the log.\n"
          "\n"
          "REV: a revision number (1, 2, ...), HEAD (CURRENT), HEAD~N (N before CURRENT)\n"
          "or previous (CURRENT-1).\n"
          "\n"
          "It first says what the target drops: the invariants, definitions and data rows\n"
          "added since, and the entries it returns to an earlier text.  Dropping an\n"
          "invariant needs --yes (on a terminal, a 'y' typed at the question does too).\n"
          "\n%s"
          "\n"
          "options:\n"
          "  -y, --yes         roll back even when invariants added since would be dropped\n"
          "%s%s%s"
          "\n"
          "Exit status: 0 rolled back; 1 unsafe, no such revision or a store problem; 2 usage.\n",
          LIVE_HELP, LIMITS_HELP, GRANT_HELP, STORE_HELP);
}

/* The offline rollback: REV's world with CURRENT's invariants, checked by a
** worker, then the revert published. */
static json_t *rollback_offline(otxn *t, uint64_t target) {
  if (t->faulted) return otxn_refuse(t, txn_reason_name(TXN_UNSAFE), t->fault);
  char summary[200];
  request_summary(t->op, t->req, summary, sizeof summary);
  store_rev_info info = {STORE_REV_ROLLBACK, t->generation + 1, 0, JITI_VERSION, summary, NULL, t->grant_text};
  uint64_t rev = 0;
  if (store_publish_revert(t->s, t->parent, target, &info, &rev) != STORE_OK)
    return otxn_refuse(t, txn_reason_name(TXN_PUBLICATION_FAILED), store_errmsg(t->s));
  json_t *ev = events_accepted(t->attempt, proto_op_name(t->op), rev, t->generation + 1);
  json_object_set_new(ev, "target", json_integer((json_int_t)target));
  ostore_event(t->s, t->cmd, ev);
  t->outcome_written = 1;
  json_t *changes = storeio_revision_changes(t->s, rev);
  reply_Outcome r = {.reason = txn_reason_name(TXN_ACCEPTED), .revision = rev, .target = target,
                     .changes = changes, .generation = t->generation + 1};
  json_t *reply = reply_object(&r);
  json_decref(changes);
  return reply;
}

/* What rolling back to target drops from CURRENT, said before anything
** runs: the invariants by name, the definitions and data rows by count.
** Dropping invariants needs yes (--yes, or "y" typed on a terminal): a
** rollback that silently removes a safety check is a surprise.  EXIT_OK to
** go on; EXIT_FAIL after saying why not. */
static int rollback_drops(store_env *s, uint64_t target, int yes) {
  uint64_t cur = 0;
  store_current(s, &cur);
  if (target == cur) return EXIT_OK;
  storeio_map mc = {0}, mt = {0};
  if (storeio_map_load(s, STORE_REV_CURRENT, &mc) != STORE_OK || storeio_map_load(s, target, &mt) != STORE_OK) {
    fprintf(stderr, "jiti rollback: %s\n", store_errmsg(s));
    storeio_map_free(&mc);
    storeio_map_free(&mt);
    return EXIT_FAIL;
  }
  char invs[1024] = "";
  size_t ninv = 0, ndefs = 0, nrows = 0, nfiles = 0, nchanged = 0, j = 0;
  for (size_t i = 0; i < mc.n; i++) {   /* both maps in (kind, name) order */
    const storeio_entry *e = &mc.v[i];
    while (j < mt.n && (mt.v[j].kind < e->kind || (mt.v[j].kind == e->kind && strcmp(mt.v[j].name, e->name) < 0)))
      j++;
    int kept = j < mt.n && mt.v[j].kind == e->kind && !strcmp(mt.v[j].name, e->name);
    if (kept) {
      nchanged += memcmp(mt.v[j].hash, e->hash, 32) != 0;
      continue;
    }
    if (e->kind == STORE_INVARIANT) {
      size_t l = strlen(invs);
      snprintf(invs + l, sizeof invs - l, "%s%s", ninv ? ", " : "", e->name);
      ninv++;
    } else if (e->kind == STORE_DATA) {
      nrows++;
    } else if (e->kind == STORE_FILE) {
      nfiles++;
    } else {
      ndefs++;
    }
  }
  storeio_map_free(&mc);
  storeio_map_free(&mt);
  char files[64] = "";
  if (nfiles) snprintf(files, sizeof files, ", %zu file%s", nfiles, nfiles == 1 ? "" : "s");
  if (ninv || ndefs || nrows || nfiles || nchanged)
    printf("rolling back to revision %" PRIu64 " drops %zu invariant%s%s%s, %zu definition%s%s and %zu data row%s "
           "added since, and returns %zu entr%s to %s earlier text\n", target, ninv, ninv == 1 ? "" : "s",
           ninv ? " " : "", invs, ndefs, ndefs == 1 ? "" : "s", files, nrows, nrows == 1 ? "" : "s", nchanged,
           nchanged == 1 ? "y" : "ies", nchanged == 1 ? "its" : "their");
  if (!ninv || yes) return EXIT_OK;
  fflush(stdout);
  if (isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
    fprintf(stderr, "drop the invariant%s %s? [y/N] ", ninv == 1 ? "" : "s", invs);
    char line[16] = "";
    if (fgets(line, sizeof line, stdin) && (line[0] == 'y' || line[0] == 'Y')) return EXIT_OK;
    fprintf(stderr, "jiti rollback: nothing was published\n");
    return EXIT_FAIL;
  }
  fprintf(stderr, "jiti rollback: revision %" PRIu64 " predates the invariant%s %s: rolling back would remove %s; "
          "run again with --yes to roll back anyway; nothing was published\n", target, ninv == 1 ? "" : "s", invs,
          ninv == 1 ? "it" : "them");
  return EXIT_FAIL;
}

static json_t *rollback_request(uint64_t target) {
  return json_pack("{s:s, s:I}", "op", proto_op_name(PROTO_ROLLBACK), "revision", (json_int_t)target);
}

static int rollback_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *revtext = NULL;
  limits_Table L;
  limits_default(&L);
  grant_List g = {0};
  int yes = 0, wait = 0;
  for (int i = 1; i < argc; i++) {
    int r = change_option("rollback", argc, argv, &i, &dir, &L, &g, &wait);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { rollback_usage(stdout); return EXIT_OK; }
    if (!strcmp(argv[i], "--yes") || !strcmp(argv[i], "-y")) { yes = 1; continue; }
    if (revtext) {
      fprintf(stderr, "jiti rollback: give one REV (see 'jiti rollback --help')\n");
      return EXIT_USAGE;
    }
    revtext = argv[i];
  }
  if (!revtext) {
    fprintf(stderr, "jiti rollback: give the revision to return to: jiti rollback REV (a number, previous, HEAD~N; "
                    "jiti log lists them)\n");
    return EXIT_USAGE;
  }
  uint64_t target = 0;
  if (kclient_serving(dir)) {
    store_env *s = ostore_open("rollback", dir, 0);  /* read-only, beside the kernel: REV's number */
    if (!s) return EXIT_FAIL;
    int st = ostore_rev("rollback", s, revtext, &target);
    if (st == EXIT_OK) st = rollback_drops(s, target, yes);
    store_close(s);
    if (st != EXIT_OK) return st;
    return change("rollback", dir, &L, &g, wait, rollback_request(target));
  }
  otxn t;
  json_t *req = NULL;
  int status = otxn_open(&t, "rollback", dir, &L, &g);
  if (status == EXIT_OK) status = ostore_rev("rollback", t.s, revtext, &target);
  if (status == EXIT_OK) status = rollback_drops(t.s, target, yes);
  if (status == EXIT_OK) status = (req = rollback_request(target)) ? otxn_start(&t, req, target, 1) : EXIT_FAIL;
  if (status == EXIT_OK) {
    json_t *r = rollback_offline(&t, target);
    status = render_change("rollback", r, dir);
    json_decref(r);
  }
  otxn_close(&t);
  json_decref(req);
  return status;
}

int cmd_rollback(int argc, char **argv) { return stack_run(rollback_main, argc, argv); }
