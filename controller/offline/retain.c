/*
** retain.c — `jiti events counters` and `jiti events prune` (offline.h,
** docs/store.md "Counters", "Retention"): what the store counted instead
** of recording one event each, and pruning old events by hand, the way a
** kernel started with --events-keep or --events-max-age does as it runs.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "offline.h"

static const char STORE_LINES[] =
  "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
  "  -h, --help        show this help\n";

/* ------------------------------------------------------------- counters */

static void counters_usage(FILE *out) {
  fprintf(out,
          "usage: jiti events counters [--json] [--store DIR]\n"
          "\n"
          "What the kernel counted instead of recording one event each: calls and\n"
          "previews that published nothing, queries (observe, inspect, invariant-list),\n"
          "replayed requests and refused key reuses, by kind and outcome: one line each\n"
          "(kind, outcome, count, first and last time) or, with --json, one object each.\n"
          "\n"
          "options:\n"
          "  --json            print {kind, outcome, count, first, last} per line\n"
          "%s"
          "\nExit status: 0 success; 1 a store problem; 2 usage.\n",
          STORE_LINES);
}

static int print_count(void *arg, const store_count *c) {
  int json = *(int *)arg;
  char first[40], last[40];
  storeio_iso_time(c->first_ms, first, sizeof first);
  storeio_iso_time(c->last_ms, last, sizeof last);
  if (json) {
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I}", "kind", c->kind, "outcome", c->outcome, "count",
                          (json_int_t)c->n, "first", (json_int_t)c->first_ms, "last", (json_int_t)c->last_ms);
    char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (t) printf("%s\n", t);
    free(t);
    json_decref(o);
  } else {
    printf("%-16s %-20s %12" PRIu64 "  %s .. %s\n", c->kind, c->outcome, c->n, first, last);
  }
  return 0;
}

static int counters_main(int argc, char **argv) {
  const char *dir = opts_default_store();
  int json = 0;
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti events counters: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { counters_usage(stdout); return EXIT_OK; }
    if (!strcmp(argv[i], "--json")) { json = 1; continue; }
    fprintf(stderr, "jiti events counters: unexpected argument '%s' (see 'jiti events counters --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  store_env *s = ostore_open("events counters", dir, 0);
  if (!s) return EXIT_FAIL;
  int status = EXIT_OK;
  if (store_counters_read(s, print_count, &json) != STORE_OK) {
    fprintf(stderr, "jiti events counters: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  }
  store_close(s);
  return status;
}

/* ---------------------------------------------------------------- prune */

static void prune_usage(FILE *out) {
  fprintf(out,
          "usage: jiti events prune [--keep COUNT] [--max-age DURATION] [--store DIR]\n"
          "\n"
          "Delete old events: those beyond the newest COUNT sequence numbers, or older\n"
          "than DURATION (a number with s, m, h, d or w; plain seconds without); give\n"
          "one or both.  Always kept: the newest event, the start of every attempt\n"
          "without an outcome (recovery marks it interrupted) and sessions' transcripts\n"
          "(jiti sessions).  Idempotency keys and counters are not events: they stay.\n"
          "The store must not be in use: a running kernel prunes by its own\n"
          "--events-keep and --events-max-age.\n"
          "\n"
          "options:\n"
          "  --keep COUNT      keep the events of the newest COUNT sequence numbers\n"
          "  --max-age DURATION  delete events older than DURATION\n"
          "%s"
          "\nExit status: 0 success; 1 a store problem (in use, damaged); 2 usage.\n",
          STORE_LINES);
}

static int prune_main(int argc, char **argv) {
  const char *dir = opts_default_store();
  store_retention r = {0};
  for (int i = 1; i < argc; i++) {
    char err[256];
    int o = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (o < 0) { fprintf(stderr, "jiti events prune: %s\n", err); return EXIT_USAGE; }
    if (o) continue;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { prune_usage(stdout); return EXIT_OK; }
    if (!strcmp(a, "--keep")) {
      if (i + 1 >= argc || !opts_count(argv[i + 1], &r.keep) || !r.keep) {
        fprintf(stderr, "jiti events prune: --keep needs a positive number of events\n");
        return EXIT_USAGE;
      }
      i++;
    } else if (!strcmp(a, "--max-age")) {
      if (i + 1 >= argc || !opts_duration(argv[i + 1], &r.max_age_ms)) {
        fprintf(stderr, "jiti events prune: --max-age needs a duration: a number with s, m, h, d or w (30d, "
                        "12h; plain seconds without), from 1 s to 100 years\n");
        return EXIT_USAGE;
      }
      i++;
    } else {
      fprintf(stderr, "jiti events prune: unexpected argument '%s' (see 'jiti events prune --help')\n", a);
      return EXIT_USAGE;
    }
  }
  if (!r.keep && !r.max_age_ms) {
    fprintf(stderr, "jiti events prune: give --keep COUNT, --max-age DURATION or both\n");
    return EXIT_USAGE;
  }
  store_env *s = ostore_open("events prune", dir, 1);
  if (!s) {
    fprintf(stderr, "(a running kernel prunes by its own --events-keep and --events-max-age; 'jiti stop --store %s' "
                    "first to prune by hand)\n", dir);
    return EXIT_FAIL;
  }
  store_pruned out, all = {0};
  int rc;
  do {   /* in steps: each a transaction of at most STORE_PRUNE_BATCH deletions */
    rc = store_events_prune(s, &r, &out);
    all.deleted += out.deleted;
    all.kept = out.kept;
    all.remaining = out.remaining;
  } while (rc == STORE_OK && out.more);
  if (rc != STORE_OK) {
    fprintf(stderr, "jiti events prune: %s\n(%" PRIu64 " events were pruned before it)\n", store_errmsg(s), all.deleted);
    store_close(s);
    return EXIT_FAIL;
  }
  printf("pruned %" PRIu64 " event%s of the store at %s; %" PRIu64 " remain", all.deleted, all.deleted == 1 ? "" : "s",
         dir, all.remaining);
  if (all.kept) printf(" (%" PRIu64 " kept within the bound: sessions' transcripts, starts of attempts without an "
                       "outcome)", all.kept);
  printf("\n");
  store_close(s);
  return EXIT_OK;
}

int events_sub_main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "counters")) return counters_main(argc - 1, argv + 1);
  if (argc >= 2 && !strcmp(argv[1], "prune")) return prune_main(argc - 1, argv + 1);
  return -1;
}
