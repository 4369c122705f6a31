/*
** recover.c — `jiti recover-session`: prove that the store's CURRENT can be
** brought back, and leave the store ready for the kernel.
**
** Two forked children do the reading, in parallel (there are two cores and
** reading a damaged LMDB B-tree can crash a process, which must not take the
** command down with it):
**   verifier  opens the store read-only and runs store_verify (the manifest
**             chain and the hash of every current entry);
**   importer  opens it read-only and hands CURRENT's entries to a sandboxed
**             worker (the kernel's own), which imports them, opens the
**             operator's grant and re-runs the invariants.  Function and
**             macro bodies are analysed at their first call (the invariants
**             force those they use); --full has the worker analyse every one
**             of them as well.  Nothing stored is evaluated, expanded or
**             imported outside the worker's sandbox.
** Each reports a fixed-size record through a pipe.  Only when both succeed
** does the parent open the store for writing, check that CURRENT did not
** move meanwhile, mark attempts without an outcome as interrupted and record
** a "recovered" event.  On any failure nothing is written.
*/
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>
#include "cli.h"
#include "kclient.h"
#include "offline.h"
#include "render.h"
#include "txn.h"

/* JITI_TIMING=1 in the environment prints the time of each phase to stderr
** (used by bench/recover_bench.sh when profiling). */
static double t_start = -1;
static void phase(const char *what) {
  static int on = -1;
  if (on < 0) on = getenv("JITI_TIMING") != NULL;
  if (!on) return;
  double t = mono_now();
  if (t_start < 0) t_start = t;
  struct timespec cpu;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  fprintf(stderr, "[timing %d] wall %6.3f s  cpu %6.3f s  %s\n", (int)getpid(), t - t_start,
          (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9, what);
}

enum { RES_OK, RES_OPEN, RES_STORE, RES_IMPORT, RES_INVARIANT, RES_NOMEM };

typedef struct {
  int result;                 /* R_... */
  int store_rc;               /* the store_err of RES_OPEN / RES_STORE */
  uint64_t rev, generation;
  int kind;                   /* CURRENT's revision kind (verifier) */
  int64_t time_ms;            /* its time (verifier) */
  uint64_t counts[JITI_ENTRY_KIND_COUNT];
  char msg[3000];
  char made_with[STORE_FOREIGN_MAX + 1];  /* CURRENT's manifest's grant (verifier) */
  uint32_t nforeign;          /* foreign problems found (importer) ... */
  char foreign[4000];         /* ... one line each, as many as fit */
} Report;

static void usage(FILE *out) {
  fprintf(out,
          "usage: jiti recover-session [--full] [--accept-loss] [--allow-foreign LIB]... [--store DIR]\n"
          "\n"
          "Check that the store's CURRENT revision can be recovered, as the kernel does at\n"
          "start: verify the manifest chain and the hash of every entry, import CURRENT's\n"
          "entries into a fresh world, re-run the invariants, then mark every attempt that\n"
          "started without an outcome as interrupted (attempts are never replayed).  Prints\n"
          "the revision, generation, entry counts, interrupted attempts and the last events.\n"
          "Nothing is written when any check fails.\n"
          "\n"
          "When a kernel serves the store, it is checked beside it (read only) and reported;\n"
          "nothing is written: the kernel recovered CURRENT when it started.\n"
          "\n"
          "The writes made since the kernel's last checkpoint are in DIR/journal and are\n"
          "replayed first.  An incomplete last record (a crash in the middle of its append,\n"
          "before it was acknowledged) is dropped.  Any other damage stops the recovery with\n"
          "a message naming the damaged record and the acknowledged writes after it, which\n"
          "replay cannot reach; nothing is written and the journal stays as it is (copy it\n"
          "away to keep those writes).  --accept-loss then replays what precedes the damage,\n"
          "drops the rest, says what it dropped, records it as a journal-loss event, and\n"
          "goes on with the recovery.\n"
          "\n"
          "Foreign functions (define-foreign) are made again from the libraries granted\n"
          "with --allow-foreign, as 'jiti kernel --allow-foreign' would.  One whose library\n"
          "is not granted, does not open or lacks its symbol is reported as an error naming\n"
          "both; the rest of the world still recovers and the function stays unavailable\n"
          "(calling it says why) until a kernel is started with the library granted.\n"
          "\n"
          "options:\n"
          "  --full            also verify the whole history (every old revision rebuildable)\n"
          "                    and analyse every function and macro body (otherwise each is\n"
          "                    analysed at its first call)\n"
          "  --accept-loss     drop a damaged journal record and every write after it (see\n"
          "                    above); a sound journal is replayed as always\n"
          "%s%s"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 recovered (beside a kernel: every check passed); 1 missing,\n"
          "unreadable or damaged store, an entry that cannot be imported, or a failing\n"
          "invariant (an unavailable foreign function is not a failure); 2 usage.\n",
          LIMITS_HELP, GRANT_HELP);
}

/* Open read-only; a missing store and open failures become a report. */
static store_env *child_open(const char *dir, Report *r) {
  store_env *s = NULL;
  r->store_rc = store_open(dir, STORE_RDONLY, &s, r->msg, sizeof r->msg);
  if (r->store_rc != STORE_OK) r->result = RES_OPEN;
  return s;
}

static void child_verify(const char *dir, unsigned flags, Report *r) {
  store_env *s = child_open(dir, r);
  if (!s) return;
  phase("verifier: opened");
  r->store_rc = store_verify(s, flags, r->msg, sizeof r->msg);
  phase("verifier: verified");
  if (r->store_rc != STORE_OK) {
    r->result = RES_STORE;
  } else {
    /* CURRENT's generation, kind and time, beside the import (the header
    ** only: the delta of a big revision need not be decoded) */
    store_manifest *man = NULL;
    if ((r->store_rc = store_current(s, &r->rev)) != STORE_OK ||
        (r->rev && (r->store_rc = store_manifest_read_header(s, r->rev, &man)) != STORE_OK)) {
      r->result = RES_STORE;
      snprintf(r->msg, sizeof r->msg, "%s", store_errmsg(s));
    } else if (man) {
      r->generation = man->generation;
      r->kind = man->kind;
      r->time_ms = man->time_ms;
      snprintf(r->made_with, sizeof r->made_with, "%s", man->foreign);
    }
    store_free(man);
    phase("verifier: manifest read");
  }
  store_close(s);
}

/* One line of the report's foreign problems, while it has room. */
static void foreign_line(Report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void foreign_line(Report *r, const char *fmt, ...) {
  size_t at = strlen(r->foreign);
  r->nforeign++;
  va_list ap;
  va_start(ap, fmt);
  int n = at + 1 < sizeof r->foreign ? vsnprintf(r->foreign + at, sizeof r->foreign - at, fmt, ap) : -1;
  va_end(ap);
  if (n < 0 || (size_t)n + 1 >= sizeof r->foreign - at) r->foreign[at] = 0;  /* no room: counted only */
  else strcat(r->foreign + at, "\n");
}

/* CURRENT's entries by kind, from its map (the world's counts once it
** imported whole). */
static int count_entries(store_env *s, uint64_t rev, Report *r) {
  storeio_map m = {0};
  int rc = storeio_map_load(s, rev, &m);
  for (size_t i = 0; rc == STORE_OK && i < m.n; i++) {
    int k = storeio_kernel_kind(m.v[i].kind);
    if (k >= 0 && k < JITI_ENTRY_KIND_COUNT) r->counts[k]++;
  }
  storeio_map_free(&m);
  return rc;
}

/* The ready frame's foreign problems as report lines: granted libraries
** that did not open, then declarations imported unavailable. */
static void foreign_lines(json_t *ready, Report *r) {
  json_t *f = json_object_get(ready, "foreign"), *x;
  size_t i;
  json_array_foreach(json_object_get(f, "failed"), i, x)
    foreign_line(r, "the granted library %s did not open: %s", json_string_value(json_object_get(x, "library")),
                 json_string_value(json_object_get(x, "message")));
  json_array_foreach(json_object_get(f, "unavailable"), i, x)
    foreign_line(r, "foreign function %s (library %s, symbol %s) is unavailable: %s",
                 json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(x, "library")),
                 json_string_value(json_object_get(x, "symbol")), json_string_value(json_object_get(x, "reason")));
}

/* Copy msg after prefix (when it starts with it) into r->msg. */
static void report_msg(Report *r, const char *msg, const char *prefix) {
  size_t n = strlen(prefix);
  snprintf(r->msg, sizeof r->msg, "%s", msg && !strncmp(msg, prefix, n) ? msg + n : msg ? msg : "?");
}

/* The importer.  This process only reads the store: the world is rebuilt by
** a sandboxed worker (the kernel's own, workerproc.h), which imports the
** revision's entries, opens the operator's grant before its sandbox, runs
** the invariants and, with --full, analyses every body.  So nothing stored
** is evaluated, expanded or imported outside the sandbox. */
static void child_import(const char *dir, int analyze, const jiti_Limits *lim, const grant_List *g,
                         Report *r) {
  store_env *s = child_open(dir, r);
  if (!s) return;
  wproc w = {.fd = -1, .report = -1};
  json_t *ready = NULL, *m = NULL;
  char err[1024];
  if ((r->store_rc = store_current(s, &r->rev)) != STORE_OK ||
      (r->store_rc = count_entries(s, r->rev, r)) != STORE_OK) {
    r->result = RES_STORE;
    snprintf(r->msg, sizeof r->msg, "%s", store_errmsg(s));
    goto out;
  }
  phase("importer: opened");
  /* revision r->rev even if a writer published since (the parent checks
  ** that CURRENT did not move before it writes anything) */
  wproc_Plan plan = {r->rev, 0, r->rev, 0, lim, g, 1, 0};
  if (wproc_start(&w, s, &plan, &ready, err, sizeof err) != 0) {
    r->result = RES_IMPORT;
    snprintf(r->msg, sizeof r->msg, "the sandboxed worker that imports it failed: %s", err);
    goto out;
  }
  phase("importer: imported");
  foreign_lines(ready, r);
  const char *st = json_string_value(json_object_get(ready, "status"));
  const char *msg = json_string_value(json_object_get(ready, "message"));
  if (st && !strcmp(st, txn_status_name(TXN_ST_FAULTED))) {
    int invariant = msg && !strncmp(msg, "invalid-baseline: ", 18);
    r->result = invariant ? RES_INVARIANT : RES_IMPORT;
    report_msg(r, msg, invariant ? "invalid-baseline: " : "import-failed: ");
    goto out;
  }
  phase("importer: invariants checked");
  if (analyze) {
    if (wproc_send(&w, json_pack("{s:s}", "op", wire_op_name(WIRE_ANALYZE)), NULL, 0) != 0 ||
        wproc_recv(&w, &m, NULL, NULL, err, sizeof err) != 0) {
      r->result = RES_IMPORT;
      snprintf(r->msg, sizeof r->msg, "the sandboxed worker that analyses it failed: %s", err);
      goto out;
    }
    const char *why = json_string_value(json_object_get(m, "message"));
    if (wire_event_of(m) != WIRE_ANALYZED || !why) {
      r->result = RES_IMPORT;
      snprintf(r->msg, sizeof r->msg, "the worker answered the analysis with a malformed frame");
    } else if (*why) {
      r->result = RES_IMPORT;
      snprintf(r->msg, sizeof r->msg, "%s", why);
    }
    phase("importer: every definition analysed");
  }
out:
  json_decref(m);
  json_decref(ready);
  if (w.pid || w.fd >= 0) wproc_stop(&w, 0);
  store_close(s);
}

typedef struct { pid_t pid; int fd; Report r; int got, waited; } Child;

static void spawn(Child *c, const char *dir, int verify, unsigned flags, const jiti_Limits *lim,
                  const grant_List *g) {
  int analyze = (flags & STORE_VERIFY_HISTORY) != 0;   /* --full */
  int p[2];
  c->pid = -1;
  c->got = c->waited = 0;
  memset(&c->r, 0, sizeof c->r);
  fflush(NULL);
  if (pipe(p) != 0 || (c->pid = fork()) < 0) {
    /* no process: do it here */
    if (verify) child_verify(dir, flags, &c->r);
    else child_import(dir, analyze, lim, g, &c->r);
    c->got = 1;
    return;
  }
  if (c->pid == 0) {
    close(p[0]);
    Report r;
    memset(&r, 0, sizeof r);
    if (verify) child_verify(dir, flags, &r);
    else child_import(dir, analyze, lim, g, &r);
    const char *b = (const char *)&r;
    size_t n = sizeof r;
    while (n) {
      ssize_t w = write(p[1], b, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      b += w;
      n -= (size_t)w;
    }
    _exit(0);
  }
  close(p[1]);
  c->fd = p[0];
}

static int wait_child(Child *c) {
  int st = 0;
  if (c->pid > 0 && !c->waited)
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {}
  c->waited = 1;
  return st;
}

/* Collect a child's report; a child that died is reported as damage.  A
** child that reported is waited for only at the end (wait_children): its
** exit, which unmaps a whole world, then overlaps the parent's work. */
static void collect(Child *c, const char *what) {
  if (c->got) return;
  char *b = (char *)&c->r;
  size_t n = 0;
  while (n < sizeof c->r) {
    ssize_t got = read(c->fd, b + n, sizeof c->r - n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    n += (size_t)got;
  }
  close(c->fd);
  if (n != sizeof c->r) {
    int st = wait_child(c);
    memset(&c->r, 0, sizeof c->r);
    c->r.result = RES_STORE;
    c->r.store_rc = STORE_ECORRUPT;
    if (WIFSIGNALED(st))
      snprintf(c->r.msg, sizeof c->r.msg, "%s crashed reading it (signal %d: %s); the LMDB "
               "file is damaged", what, WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
      snprintf(c->r.msg, sizeof c->r.msg, "%s ended without a report (status %d)", what,
               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  c->got = 1;
}

typedef struct { uint64_t want; uint64_t *attempts; size_t n; } Interrupted;

static int collect_interrupted(void *arg, uint64_t seq, const char *json, size_t len) {
  Interrupted *in = arg;
  json_t *o = json_loadb(json, len, 0, NULL);
  json_t *ev = json_object_get(o, "event"), *att = json_object_get(o, "attempt");
  if (json_is_string(ev) && !strcmp(json_string_value(ev), "interrupted") && json_is_integer(att) &&
      in->n < in->want)
    in->attempts[in->n++] = (uint64_t)json_integer_value(att);
  json_decref(o);
  return 0;
}

static int print_line(void *arg, uint64_t seq, const char *json, size_t len) {
  fputs("  ", stdout);
  history_event_line(stdout, json, len);
  return 0;
}

/* What the recovery found and did: the summary both modes print. */
typedef struct Found {
  uint64_t rev, gen, count;   /* CURRENT, its generation, interrupted attempts marked */
  uint64_t attempts[64];
  size_t n;                   /* attempts[0..n) */
} Found;

/* The libraries of a manifest's grant ("a\nb\n") on one line. */
static void print_libraries(const char *text) {
  if (!*text) printf(" none");
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n");
    printf(" %.*s", (int)n, p);
    p += n + (p[n] == '\n');
  }
}

/* Every foreign problem, as an error on stderr (before the summary). */
static void report_foreign_errors(const Report *ir) {
  uint32_t shown = 0;
  for (const char *p = ir->foreign; *p; shown++) {
    size_t n = strcspn(p, "\n");
    fprintf(stderr, "jiti recover-session: error: %.*s\n", (int)n, p);
    p += n + (p[n] == '\n');
  }
  if (shown < ir->nforeign) fprintf(stderr, "jiti recover-session: ... and %u more\n", ir->nforeign - shown);
}

/* The summary's line: the grant, the problems, what CURRENT was made with. */
static void report_foreign(const Report *vr, const Report *ir, const grant_List *g) {
  char granted[STORE_FOREIGN_MAX + 1];
  grant_manifest(g, granted, sizeof granted);
  if (!g->n && !vr->made_with[0] && !ir->nforeign) return;
  printf("foreign:    ");
  print_libraries(granted);
  printf(" granted");
  if (ir->nforeign) printf("; %u problem%s (above)", ir->nforeign, ir->nforeign == 1 ? "" : "s");
  if (strcmp(granted, vr->made_with)) {
    printf("; CURRENT was made with");
    print_libraries(vr->made_with);
  }
  printf("\n");
}

static void report(store_env *s, const char *dir, unsigned flags, const Report *vr, const Report *ir,
                   const grant_List *g, const Found *f, int live) {
  report_foreign_errors(ir);
  const uint64_t *c = ir->counts;
  uint64_t total = 0;
  for (int k = 0; k < JITI_ENTRY_KIND_COUNT; k++) total += c[k];
  char when[40] = "?";
  const char *kind = store_rev_kind_name(vr->kind) ? store_rev_kind_name(vr->kind) : "?";
  if (f->rev) storeio_iso_time(vr->time_ms, when, sizeof when);
  if (live)
    printf("a kernel serves the store at %s: it recovered CURRENT when it started; this is a report\n"
           "only, nothing was written (to recover offline: jiti stop --store %s, then jiti recover-session)\n",
           dir, dir);
  else
    printf("recovered the store at %s\n", dir);
  printf("revision:    %" PRIu64 " (%s, %s)\n", f->rev, kind, when);
  printf("generation:  %" PRIu64 "%s\n", f->gen, live ? " (the kernel's)" : "");
  printf("entries:     %" PRIu64 " (functions %" PRIu64 ", macros %" PRIu64 ", variables %" PRIu64
         ", structures %" PRIu64 ", classes %" PRIu64 ", generic functions %" PRIu64 ", methods %" PRIu64
         ", data %" PRIu64 ", invariants %" PRIu64, total,
         c[JITI_ENTRY_FUNCTION], c[JITI_ENTRY_MACRO], c[JITI_ENTRY_VARIABLE],
         c[JITI_ENTRY_STRUCTURE], c[JITI_ENTRY_CLASS], c[JITI_ENTRY_GENERIC], c[JITI_ENTRY_METHOD],
         c[JITI_ENTRY_DATA], c[JITI_ENTRY_INVARIANT]);
  if (c[JITI_ENTRY_FOREIGN]) printf(", foreign functions %" PRIu64, c[JITI_ENTRY_FOREIGN]);
  if (c[JITI_ENTRY_PACKAGE]) printf(", packages %" PRIu64, c[JITI_ENTRY_PACKAGE]);
  static const struct { jiti_EntryKind k; const char *what; } more[] = {
    {JITI_ENTRY_TYPE, "types"}, {JITI_ENTRY_SYMBOL_MACRO, "symbol macros"},
    {JITI_ENTRY_SETF_EXPANDER, "setf expanders"}, {JITI_ENTRY_COMPILER_MACRO, "compiler macros"},
    {JITI_ENTRY_DOCUMENTATION, "documentation strings"}, {JITI_ENTRY_PLIST, "property lists"},
    {JITI_ENTRY_METHOD_COMBINATION, "method combinations"},
    {JITI_ENTRY_FILE, "files"}};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++)
    if (c[more[i].k]) printf(", %s %" PRIu64, more[i].what, c[more[i].k]);
  printf(")\n");
  printf("invariants:  %s\n", c[JITI_ENTRY_INVARIANT] ? "all hold" : "none");
  report_foreign(vr, ir, g);
  printf("verified:    %s\n", flags & STORE_VERIFY_HISTORY ? "manifest chain, entry hashes, whole history, "
                                                             "every definition analysed"
                                                           : "manifest chain, entry hashes");
  if (live) {
    /* nothing marked now: the kernel marked them when it started */
  } else if (f->count == 0) {
    printf("interrupted: none\n");
  } else {
    printf("interrupted: %" PRIu64 " attempt%s (", f->count, f->count == 1 ? "" : "s");
    for (size_t i = f->n; i-- > 0;) printf("%s%" PRIu64, i + 1 == f->n ? "" : ", ", f->attempts[i]);
    printf("%s); never replayed\n", f->n < f->count ? ", ..." : "");
  }
  printf("last events:\n");
  store_events_read(s, 0, 5, STORE_NEWEST_FIRST, print_line, NULL);
}

static int recover_finish(const char *dir, unsigned flags, const Report *vr, const Report *ir,
                          const grant_List *g, int live);

/* --accept-loss, before the checks: open the store for writing with the
** loss of a damaged journal accepted (the store replays what precedes the
** damage and records a journal-loss event in the same commit), and say
** what was dropped.  0, or -1 with the message printed. */
static int accept_loss(const char *dir) {
  store_journal_loss loss;
  store_options o = {0};
  o.accept_loss = 1;
  o.loss = &loss;
  char err[1024] = "";
  store_env *s = NULL;
  int rc = store_open_with(dir, STORE_NOCREATE, &o, &s, err, sizeof err);
  if (rc != STORE_OK) {
    fprintf(stderr, "jiti recover-session: cannot open the store at %s: %s\nnothing was changed in the store\n",
            dir, err[0] ? err : store_strerror(rc));
    return -1;
  }
  store_close(s);
  if (!loss.damaged) {
    printf("journal:     sound; --accept-loss dropped nothing\n");
    return 0;
  }
  if (loss.header)
    printf("journal:     dropped every record (%s): %" PRIu64 " intact record%s", loss.why, loss.records,
           loss.records == 1 ? "" : "s");
  else
    printf("journal:     dropped record %" PRIu64 " of epoch %" PRIu64 " (at byte %" PRIu64 "; it %s) and the %"
           PRIu64 " intact record%s after it", loss.seq, loss.epoch, loss.offset, loss.why, loss.records,
           loss.records == 1 ? "" : "s");
  if (loss.revisions == 1)
    printf(": revision %" PRIu64 " and %" PRIu64 " event%s", loss.first_rev, loss.events, loss.events == 1 ? "" : "s");
  else if (loss.revisions)
    printf(": %" PRIu64 " revisions (%" PRIu64 " to %" PRIu64 ") and %" PRIu64 " event%s", loss.revisions,
           loss.first_rev, loss.last_rev, loss.events, loss.events == 1 ? "" : "s");
  else if (loss.records)
    printf(": %" PRIu64 " event%s", loss.events, loss.events == 1 ? "" : "s");
  printf("; recorded as event %" PRIu64 " (journal-loss)\n", loss.event_seq);
  return 0;
}



static int recover_main(int argc, char **argv) {
  const char *dir = opts_default_store();
  unsigned flags = 0;
  int loss = 0;
  limits_Table L;
  limits_default(&L);
  grant_List g = {0};
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r == 0) r = limits_option(argc, argv, &i, &L, 0, err, sizeof err);
    if (r == 0) r = grant_option(argc, argv, &i, &g, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti recover-session: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return EXIT_OK; }
    if (!strcmp(argv[i], "--full")) { flags |= STORE_VERIFY_HISTORY; continue; }
    if (!strcmp(argv[i], "--accept-loss")) { loss = 1; continue; }
    fprintf(stderr, "jiti recover-session: unexpected argument '%s' (see 'jiti recover-session --help')\n",
            argv[i]);
    return EXIT_USAGE;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 && errno == ENOENT) {
    fprintf(stderr, "jiti recover-session: no store at %s (create one with 'jiti init --store %s', "
            "or name another with --store DIR or $JITI_STORE)\n", dir, dir);
    return EXIT_FAIL;
  }
  phase("start");
  Child ver, imp;
  int live = kclient_serving(dir);  /* then: read-only children, a report only */
  /* beside a kernel there is nothing to accept: it replayed the journal as it started */
  if (loss && !live && accept_loss(dir) != 0) return EXIT_FAIL;
  spawn(&ver, dir, 1, flags, &L.eval, &g);
  spawn(&imp, dir, 0, flags, &L.eval, &g);
  collect(&ver, "verification");
  collect(&imp, "the import");
  phase("both children done");
  int status = recover_finish(dir, flags, &ver.r, &imp.r, &g, live);
  wait_child(&ver);
  wait_child(&imp);
  return status;
}

/* The parent's part once both children reported: report a failure, or mark
** the interrupted attempts, record the recovery and print the summary. */
static int recover_finish(const char *dir, unsigned flags, const Report *vr, const Report *ir,
                          const grant_List *g, int live) {
  /* an open failure is the same in both; report the verifier's first */
  const Report *bad = vr->result != RES_OK ? vr : ir->result != RES_OK ? ir : NULL;
  if (bad) {
    const Report *r = bad;
    switch (r->result) {
      case RES_OPEN:
        if (r->store_rc == STORE_ENOENT)
          fprintf(stderr, "jiti recover-session: no store at %s (create one with 'jiti init --store %s')\n",
                  dir, dir);
        else {
          fprintf(stderr, "jiti recover-session: cannot open the store at %s: %s\n", dir,
                  r->msg[0] ? r->msg : store_strerror(r->store_rc));
          if (r->store_rc == STORE_EJOURNAL) {   /* the way out is an option of this command */
            fprintf(stderr, "nothing was changed in the store; the writes after the damage stay in %s/journal "
                    "until you choose: copy it away to keep them, then run again with --accept-loss to replay "
                    "what precedes the damage and drop the rest\n", dir);
            return EXIT_FAIL;
          }
        }
        break;
      case RES_STORE:
        fprintf(stderr, "jiti recover-session: the store at %s %s: %s\n", dir,
                r->store_rc == STORE_ECORRUPT ? "is damaged" : "cannot be read",
                r->msg[0] ? r->msg : store_strerror(r->store_rc));
        break;
      case RES_IMPORT:
        fprintf(stderr, "jiti recover-session: revision %" PRIu64 " of the store at %s cannot be "
                "rebuilt: %s\nreturn to a revision that imports with 'jiti rollback REV --store %s' (for "
                "example 'previous'; 'jiti log' lists them)\n", r->rev, dir, r->msg, dir);
        break;
      case RES_INVARIANT:
        fprintf(stderr, "jiti recover-session: an invariant fails on revision %" PRIu64 " of the "
                "store at %s: %s\nthe world would be faulted (invalid-baseline)\n", r->rev, dir, r->msg);
        break;
      default:
        fprintf(stderr, "jiti recover-session: %s\n", r->msg);
    }
    fprintf(stderr, "nothing was changed in the store\n");
    return EXIT_FAIL;
  }

  Found f = {0};
  char why[600];
  /* beside the kernel: read only; the generation is the kernel's.  A kernel
  ** that was going away when it was asked (killed a moment before) does
  ** not answer now: then this is an offline recovery after all (and if a
  ** kernel does serve again, its lock refuses the write below). */
  json_t *st = live ? kclient_once(dir, json_pack("{s:s}", "op", proto_op_name(PROTO_STATUS)), why, sizeof why)
                    : NULL;
  if (st) {
    store_env *s = ostore_open("recover-session", dir, 0);
    if (!s) { json_decref(st); return EXIT_FAIL; }
    f.rev = ir->rev;
    f.gen = (uint64_t)kclient_int(st, "generation");
    json_decref(st);
    report(s, dir, flags, vr, ir, g, &f, 1);
    store_close(s);
    return EXIT_OK;
  }
  store_env *s = ostore_open("recover-session", dir, 1);
  if (!s) return EXIT_FAIL;
  uint64_t cur = 0;
  int status = EXIT_FAIL;
  if (store_current(s, &cur) != STORE_OK) {
    fprintf(stderr, "jiti recover-session: %s\n", store_errmsg(s));
    goto out;
  }
  if (cur != ir->rev || cur != vr->rev) {
    fprintf(stderr, "jiti recover-session: CURRENT of the store at %s moved from %" PRIu64 " to %"
            PRIu64 " during recovery (another writer?); nothing was changed; run it again\n",
            dir, ir->rev, cur);
    goto out;
  }
  uint64_t verifying = 0;
  if (store_mark_interrupted(s, &f.count) != STORE_OK ||
      store_incidents_interrupt_verifying(s, &verifying) != STORE_OK) {
    fprintf(stderr, "jiti recover-session: %s\n", store_errmsg(s));
    goto out;
  }
  Interrupted in = {f.count < 64 ? f.count : 64, f.attempts, 0};
  if (f.count) store_events_read(s, 0, (size_t)f.count, STORE_NEWEST_FIRST, collect_interrupted, &in);
  f.n = in.n;
  f.rev = cur;
  /* The recovered world gets a generation never handed out: a view taken
  ** before the crash (say, of a paused transaction) is stale from now on. */
  if (store_generation(s, &f.gen) != STORE_OK) {
    fprintf(stderr, "jiti recover-session: %s\n", store_errmsg(s));
    goto out;
  }
  f.gen++;
  json_t *ev = json_pack("{s:s, s:I, s:I, s:I}", "event", store_event_name(STORE_EV_RECOVERED), "revision",
                         (json_int_t)cur, "generation", (json_int_t)f.gen, "interrupted", (json_int_t)f.count);
  int rc = store_advance_generation(s, f.gen, &ev, NULL, 1, NULL);
  json_decref(ev);
  if (rc != STORE_OK) {
    fprintf(stderr, "jiti recover-session: %s\n", store_errmsg(s));
    goto out;
  }
  phase("marked interrupted, event written");
  report(s, dir, flags, vr, ir, g, &f, 0);
  status = EXIT_OK;
out:
  store_close(s);
  return status;
}

int cmd_recover_session(int argc, char **argv) {
  return stack_run(recover_main, argc, argv);
}
