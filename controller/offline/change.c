/*
** store_cmds.c — the commands that change a store offline: `jiti init`,
** `jiti apply`, `jiti invariant add|remove|list` and `jiti rollback`.
** Each change is one transaction (txn.c) producing at most one revision.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "offline.h"

static const char STORE_HELP[] =
  "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
  "  -h, --help        show this help\n";

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
  for (int i = 1; i < argc; i++) {
    int r = opts_store("init", argc, argv, &i, &dir);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { init_usage(stdout); return EXIT_OK; }
    fprintf(stderr, "jiti init: unexpected argument '%s' (see 'jiti init --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  char err[1024] = "";
  store_env *s = NULL;
  int rc = store_open(dir, 0, &s, err, sizeof err);
  if (rc != STORE_OK) {
    fprintf(stderr, "jiti init: cannot create the store at %s: %s\n", dir,
            err[0] ? err : store_strerror(rc));
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
    store_rev_info info = {STORE_REV_INITIAL, 1, 0, JITI_VERSION, "initial: an empty world", NULL};
    if (store_publish(s, 0, &info, NULL, 0, NULL, 0, &rev) != STORE_OK) {
      fprintf(stderr, "jiti init: %s\n", store_errmsg(s));
    } else {
      storeio_event(s, "init", json_pack("{s:s, s:I}", "event", "initialised", "revision", (json_int_t)rev));
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
          "world of the store's CURRENT revision, offline (without a daemon): the world is\n"
          "rebuilt from CURRENT, the forms run under limits inside a checkpoint, every\n"
          "invariant is checked, and the entries that changed are published as a new\n"
          "revision.  On an error, a tripped limit or a failing invariant nothing is\n"
          "published and CURRENT stays as it was.  Every attempt is recorded as events.\n"
          "\n"
          "options:\n"
          "  -e, --eval SOURCE run SOURCE instead of a file\n"
          "  --summary TEXT    the revision's summary (default: the command)\n"
          "  --fuel N          evaluation steps (default 100000000; 0 = unlimited)\n"
          "  --depth N         maximum call depth (default 10000)\n"
          "  --heap BYTES      maximum live heap bytes (default 512M; suffixes K, M, G)\n"
          "  --output N        maximum characters printed (default 0 = unlimited)\n"
          "%s"
          "\n"
          "Exit status: 0 published (or nothing changed); 1 an error, a limit, an unsafe\n"
          "result or a store problem (nothing published); 2 usage.\n",
          STORE_HELP);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) { free(buf); buf = NULL; break; }
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  if (bad) { free(buf); errno = EIO; return NULL; }
  if (buf) buf[n] = 0;
  *len = n;
  return buf;
}

/* Parses a limit option at argv[*i]; 1 consumed, 0 not a limit, -1 bad. */
static int limit_opt(const char *cmd, int argc, char **argv, int *i, jiti_Limits *lim) {
  const char *a = argv[*i];
  int fuel = !strcmp(a, "--fuel"), depth = !strcmp(a, "--depth");
  int heap = !strcmp(a, "--heap"), output = !strcmp(a, "--output");
  if (!fuel && !depth && !heap && !output) return 0;
  uint64_t v;
  if (*i + 1 >= argc || !(heap ? opts_size(argv[*i + 1], &v) : opts_count(argv[*i + 1], &v))) {
    fprintf(stderr, "jiti %s: %s needs a non-negative number%s\n", cmd, a,
            heap ? " (suffixes K, M, G)" : "");
    return -1;
  }
  ++*i;
  if (fuel) lim->fuel = v;
  else if (depth) lim->depth = (uint32_t)(v > 10000000 ? 10000000 : v);
  else if (heap) lim->heap = (size_t)v;
  else lim->output = (size_t)v;
  return 1;
}

static int apply_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *expr = NULL, *file = NULL, *summary = NULL;
  jiti_Limits lim = {100000000u, 10000u, (size_t)512 << 20, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r = opts_store("apply", argc, argv, &i, &dir);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    r = limit_opt("apply", argc, argv, &i, &lim);
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
  if (expr) {
    src = strdup(expr);
    len = strlen(expr);
  } else if (!(src = slurp(file, &len))) {
    fprintf(stderr, "jiti apply: cannot read %s: %s\n", file, strerror(errno));
    return EXIT_FAIL;
  }
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

  otxn t;
  int status = otxn_open(&t, "apply", dir);
  if (status == EXIT_OK) {
    t.limits = lim;
    status = otxn_start(&t, json_pack("{s:s, s:I}", "summary", summary, "source_bytes", (json_int_t)len),
                           t.parent);
  }
  if (status == EXIT_OK) {
    jiti_Result res;
    if (jiti_eval_limited(t.S, src, len, &lim, &res) != JITI_OK)
      status = otxn_eval_failed(&t, &res);
    jiti_result_free(&res);
  }
  if (status == EXIT_OK) status = otxn_check_invariants(&t);
  if (status == EXIT_OK) status = otxn_publish(&t, summary);
  otxn_close(&t);
  free(src);
  return status;
}

int cmd_apply(int argc, char **argv) { return stack_run(apply_main, argc, argv); }

/* ------------------------------------------------------------- invariant */

static void invariant_usage(FILE *out) {
  fprintf(out,
          "usage: jiti invariant add NAME SOURCE [--store DIR]\n"
          "       jiti invariant remove NAME [--store DIR]\n"
          "       jiti invariant list [--store DIR]\n"
          "\n"
          "Manage the world's safety invariants (operator only).  An invariant is one\n"
          "Lisp expression that must return true after every transaction.  add and\n"
          "remove are transactions producing a revision; add is refused when the new\n"
          "invariant does not hold on CURRENT's world.\n"
          "\n"
          "options:\n%s"
          "\n"
          "Exit status: 0 done; 1 refused (unsafe, no such invariant, store problem); 2 usage.\n",
          STORE_HELP);
}

static int invariant_list(const char *dir) {
  store_env *s = storeio_open("invariant list", dir, 0);
  if (!s) return EXIT_FAIL;
  storeio_map m = {.with_bytes = 1, .only_kind = STORE_INVARIANT};
  int status = EXIT_OK;
  if (storeio_map_load(s, STORE_REV_CURRENT, &m) != STORE_OK) {
    fprintf(stderr, "jiti invariant list: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  } else if (m.n == 0) {
    printf("no invariants\n");
  } else {
    jiti_State *S = stack_new_world("invariant list");
    if (!S) status = EXIT_FAIL;
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

static int invariant_main(int argc, char **argv) {
  const char *dir = opts_default_store();
  const char *pos[4];
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    int r = opts_store("invariant", argc, argv, &i, &dir);
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
  if (list) return invariant_list(dir);
  const char *name = pos[1];
  char summary[600];
  snprintf(summary, sizeof summary, "invariant %s %.500s", add ? "add" : "remove", name);
  otxn t;
  int status = otxn_open(&t, add ? "invariant add" : "invariant remove", dir);
  if (status == EXIT_OK)
    status = otxn_start(&t, json_pack("{s:s, s:s}", "summary", summary, "name", name), t.parent);
  if (status == EXIT_OK) {
    char err[1024] = "";
    if (add && jiti_invariant_add(t.S, name, pos[2], err, sizeof err) != JITI_OK) {
      jiti_restore(t.S);
      fprintf(stderr, "jiti invariant add: cannot add %s: %s\n", name, err);
      otxn_outcome(&t, "rejected", "rejected", json_pack("{s:s}", "reason", err));
      status = EXIT_FAIL;
    } else if (rem && jiti_invariant_remove(t.S, name) != JITI_OK) {
      jiti_restore(t.S);
      fprintf(stderr, "jiti invariant remove: CURRENT (revision %" PRIu64 " of the store at %s) "
              "has no invariant named %s (see 'jiti invariant list')\n",
              t.parent, store_path(t.s), name);
      otxn_outcome(&t, "rejected", "rejected", json_pack("{s:s}", "reason", "no such invariant"));
      status = EXIT_FAIL;
    }
  }
  if (status == EXIT_OK) status = otxn_check_invariants(&t);
  if (status == EXIT_OK) status = otxn_publish(&t, summary);
  otxn_close(&t);
  return status;
}

int cmd_invariant(int argc, char **argv) { return stack_run(invariant_main, argc, argv); }

/* -------------------------------------------------------------- rollback */

static void rollback_usage(FILE *out) {
  fprintf(out,
          "usage: jiti rollback REV [--store DIR]\n"
          "\n"
          "Publish a new revision (kind rollback) whose world equals revision REV's, after\n"
          "checking CURRENT's invariants against REV's world.  History is kept: the\n"
          "revisions after REV stay in the log.\n"
          "\n"
          "REV: a revision number (1, 2, ...), HEAD (CURRENT), HEAD~N (N before CURRENT)\n"
          "or previous (CURRENT-1).\n"
          "\n"
          "options:\n%s"
          "\n"
          "Exit status: 0 rolled back; 1 unsafe, no such revision or a store problem; 2 usage.\n",
          STORE_HELP);
}

static int rollback_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *revtext = NULL;
  for (int i = 1; i < argc; i++) {
    int r = opts_store("rollback", argc, argv, &i, &dir);
    if (r < 0) return EXIT_USAGE;
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { rollback_usage(stdout); return EXIT_OK; }
    if (revtext) {
      fprintf(stderr, "jiti rollback: give one REV (see 'jiti rollback --help')\n");
      return EXIT_USAGE;
    }
    revtext = argv[i];
  }
  if (!revtext) { rollback_usage(stderr); return EXIT_USAGE; }
  otxn t;
  uint64_t target = 0;
  int status = otxn_open(&t, "rollback", dir);
  if (status == EXIT_OK) status = storeio_resolve_rev("rollback", t.s, revtext, &target);
  if (status == EXIT_OK)
    status = otxn_start(&t, json_pack("{s:I}", "target", (json_int_t)target), 0);
  if (status == EXIT_OK) {
    /* REV's world with CURRENT's invariants */
    char err[1024] = "";
    if (storeio_import_rev(t.S, t.s, target == t.parent ? STORE_REV_CURRENT : target,
                       STOREIO_IMPORT_NO_INVARIANTS, NULL, err, sizeof err) == STOREIO_IMPORT_OK)
      storeio_import_rev(t.S, t.s, STORE_REV_CURRENT, STOREIO_IMPORT_ONLY_INVARIANTS, NULL, err,
                     sizeof err);
    if (err[0]) {
      jiti_restore(t.S);
      fprintf(stderr, "jiti rollback: the world of revision %" PRIu64 " of the store at %s cannot be "
              "rebuilt: %s\nnothing was published\n", target, store_path(t.s), err);
      otxn_outcome(&t, "failed", "error", json_pack("{s:s}", "reason", err));
      status = EXIT_FAIL;
    }
  }
  if (status == EXIT_OK) status = otxn_check_invariants(&t);
  if (status == EXIT_OK) {
    char summary[64];
    snprintf(summary, sizeof summary, "rollback to revision %" PRIu64, target);
    store_rev_info info = {STORE_REV_ROLLBACK, t.generation + 1, 0, JITI_VERSION, summary, NULL};
    uint64_t rev = 0;
    if (store_publish_revert(t.s, t.parent, target, &info, &rev) != STORE_OK) {
      fprintf(stderr, "jiti rollback: %s\nnothing was published\n", store_errmsg(t.s));
      otxn_outcome(&t, "failed", "error", json_pack("{s:s}", "reason", store_errmsg(t.s)));
      status = EXIT_FAIL;
    } else {
      size_t a = 0, c = 0, r = 0;
      store_manifest *man = NULL;
      if (store_manifest_read(t.s, rev, &man) == STORE_OK) storeio_count_changes(man, &a, &c, &r);
      store_free(man);
      printf("revision %" PRIu64 " (rollback to %" PRIu64 ", generation %" PRIu64 "): +%zu ~%zu -%zu\n",
             rev, target, t.generation + 1, a, c, r);
      otxn_outcome(&t, "accepted", "accepted",
                      json_pack("{s:I, s:I}", "revision", (json_int_t)rev, "target", (json_int_t)target));
    }
  }
  otxn_close(&t);
  return status;
}

int cmd_rollback(int argc, char **argv) { return stack_run(rollback_main, argc, argv); }
