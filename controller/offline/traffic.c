/*
** traffic.c — `jiti traffic`: the sample of successful calls automatic
** repair keeps for a function (docs/repair.md, "traffic"): each the exact
** request and its printed result with the result's digest, a reservoir per
** argument signature.  Read from the store (a reader beside a running
** kernel sees what it has committed).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "engine.h"
#include "offline.h"

static void traffic_usage(FILE *out) {
  fprintf(out,
          "usage: jiti traffic FUNCTION [--json] [--store DIR]\n"
          "       jiti traffic [--json] [--store DIR]\n"
          "\n"
          "The successful calls automatic repair keeps of FUNCTION (a function 'jiti\n"
          "repair' selects; named as there: RUN, APP::RUN), to replay against a repair:\n"
          "a sample per argument signature (the classes of the arguments, e.g.\n"
          "fixnum,string), at most %u calls each, %u signatures and %u KiB per\n"
          "function; each call its exact request, its printed result and the result's\n"
          "SHA-256.  Calls whose request or result is over %u KiB, or whose result does\n"
          "not read back (#<...>), are not kept.  Without FUNCTION: the functions that\n"
          "have a sample.\n"
          "\n"
          "options:\n"
          "  --json            one JSON object per call (per function)\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 listed (also when none is kept); 1 a store problem; 2 usage.\n",
          STORE_TRAFFIC_PER_SIGNATURE, STORE_TRAFFIC_SIGNATURES, STORE_TRAFFIC_BYTES >> 10,
          STORE_TRAFFIC_TEXT_MAX >> 10);
}

typedef struct { const char *function; int json; size_t n; char *sig; } Listing;

static void put_json(json_t *o) {
  char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  if (t) puts(t);
  free(t);
  json_decref(o);
}

static int call_one(void *arg, const store_traffic_call *c) {
  Listing *l = arg;
  char when[40], digest[65];
  storeio_iso_time(c->time_ms, when, sizeof when);
  store_hash_hex(c->digest, digest);
  l->n++;
  if (l->json) {
    put_json(json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "function", l->function, "signature", c->signature,
                       "slot", (int)c->slot, "time", when, "request", c->request, "result", c->result, "digest",
                       digest));
    return 0;
  }
  if (!l->sig || strcmp(l->sig, c->signature)) {
    printf("signature (%s)\n", c->signature);
    free(l->sig);
    l->sig = strdup(c->signature);   /* (the store's copy ends with its signature) */
  }
  printf("  %u  %s  %s\n     => %s\n     sha256 %s\n", c->slot, when, c->request, c->result, digest);
  return 0;
}

static int function_one(void *arg, const char *function, uint32_t signatures, uint64_t bytes) {
  Listing *l = arg;
  l->n++;
  if (l->json)
    put_json(json_pack("{s:s, s:i, s:I}", "function", function, "signatures", (int)signatures, "bytes",
                       (json_int_t)bytes));
  else
    printf("%-32s %2u signature%s  %6.1f KiB\n", function, signatures, signatures == 1 ? " " : "s",
           (double)bytes / 1024);
  return 0;
}

static int traffic_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *given = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti traffic: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { traffic_usage(stdout); return EXIT_OK; }
    if (!strcmp(a, "--json")) { json = 1; continue; }
    if ((a[0] == '-' && a[1]) || given) {
      fprintf(stderr, "jiti traffic: unexpected argument '%s' (see 'jiti traffic --help')\n", a);
      return EXIT_USAGE;
    }
    given = a;
  }
  /* named as the policy names it: folded as the reader folds names */
  char name[STORE_NAME_MAX + 8], err[300];
  size_t n = given ? strlen(given) : 0;
  if (given && repairpol_selector(given, name, sizeof name, err, sizeof err)) {
    fprintf(stderr, "jiti traffic: %s\n", err);
    return EXIT_USAGE;
  }
  if (given && (given[n - 1] == '*' || given[n - 1] == ':')) {
    fprintf(stderr, "jiti traffic: give one function (RUN, APP::RUN), not a prefix or a package\n");
    return EXIT_USAGE;
  }
  store_env *s = ostore_open("traffic", dir, 0);
  if (!s) return EXIT_FAIL;
  Listing l = {given ? name : NULL, json, 0, NULL};
  int rc = given ? store_traffic_list(s, name, call_one, &l) : store_traffic_functions(s, function_one, &l);
  free(l.sig);
  int status = EXIT_OK;
  if (rc != STORE_OK) {
    fprintf(stderr, "jiti traffic: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  } else if (!l.n && !json) {
    if (given) printf("no calls of %s kept (jiti repair enable %s: record its successful calls)\n", name, name);
    else printf("no calls kept (jiti repair enable NAME: which functions have a sample)\n");
  }
  store_close(s);
  return status;
}

int cmd_traffic(int argc, char **argv) { return stack_run(traffic_main, argc, argv); }
