/*
** incidents.c — `jiti incidents`: the failures automatic repair has
** recorded (docs/repair.md), newest first, and one in full.  Read from the
** store (a reader beside a running kernel sees what it has committed).
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "engine.h"
#include "kclient.h"
#include "offline.h"

static void incidents_usage(FILE *out) {
  fprintf(out,
          "usage: jiti incidents [--status STATUS]... [-n N] [--json] [--store DIR]\n"
          "       jiti incidents show ID [--json] [--store DIR]\n"
          "\n"
          "The incidents of automatic repair: failing application calls of the functions\n"
          "'jiti repair' selects, and the problems operators reported with 'jiti heal' (kind\n"
          "explicit), newest first (a failure of the same function, condition\n"
          "and definition as an open incident joins it: its count).  show prints one in\n"
          "full: the failed call, the condition, the frames with their arguments and\n"
          "locals, the latest arguments, its log of model exchanges and verifications.\n"
          "\n"
          "options:\n"
          "  --status STATUS   only those in STATUS (captured, awaiting-model, verifying,\n"
          "                    repaired, rejected, declined-expected,\n"
          "                    declined-insufficient-evidence, stale, cancelled, failed,\n"
          "                    interrupted, tentative; repeatable)\n"
          "  -n N              at most N (default 20; 0: all)\n"
          "  --json            one JSON object per incident (show: the record)\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 listed or shown; 1 no such incident or a store problem; 2 usage.\n");
}

typedef struct { int json; size_t n; } Listing;

/* One incident of a list (storeio_incident_json's brief form). */
static void list_print(Listing *l, json_t *o) {
  l->n++;
  if (l->json) {
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (t) puts(t);
    free(t);
    return;
  }
  printf("%-5" JSON_INTEGER_FORMAT " %s  %-14s %-24s %-22s x%" JSON_INTEGER_FORMAT, kclient_int(o, "id"),
         kclient_str(o, "last"), kclient_str(o, "status"), kclient_str(o, "function"), kclient_str(o, "condition"),
         kclient_int(o, "count"));
  if (kclient_int(o, "revision")) printf(" -> revision %" JSON_INTEGER_FORMAT, kclient_int(o, "revision"));
  printf("\n");
}

static int list_one(void *arg, const store_incident *inc) {
  json_t *o = storeio_incident_json(inc, 0);
  if (o) list_print(arg, o);
  json_decref(o);
  return 0;
}

static void list_end(const Listing *l, unsigned mask) {
  if (!l->n && !l->json)
    printf("no incidents%s\n", mask ? " in that status" : " (jiti repair enable NAME: which functions may have them)");
}

/* The list through the kernel that serves dir (what it has written, without
** waiting for its next checkpoint). */
static int list_live(const char *dir, unsigned mask, uint64_t limit, int json) {
  json_t *req = json_pack("{s:s}", "op", "incidents"), *st = json_array();
  for (int k = 0; k < STORE_INC_STATUS_COUNT; k++)
    if (mask >> k & 1) json_array_append_new(st, json_string(store_incident_status_name(k)));
  if (json_array_size(st)) json_object_set(req, "status", st);
  json_decref(st);
  if (limit) json_object_set_new(req, "limit", json_integer((json_int_t)(limit > 100000 ? 100000 : limit)));
  char err[CLI_MSG_MAX];
  json_t *r = kclient_once(dir, req, err, sizeof err), *o;
  if (!r || !json_is_true(json_object_get(r, "ok"))) {
    fprintf(stderr, "jiti incidents: %s\n", r ? kclient_str(r, "message") : err);
    json_decref(r);
    return EXIT_FAIL;
  }
  Listing l = {json, 0};
  size_t i;
  json_array_foreach(json_object_get(r, "incidents"), i, o) list_print(&l, o);
  list_end(&l, mask);
  json_decref(r);
  return EXIT_OK;
}

static void show_text(json_t *o) {
  printf("incident %" JSON_INTEGER_FORMAT ": %s\n", json_integer_value(json_object_get(o, "id")),
         json_string_value(json_object_get(o, "status")));
  json_t *ev = json_object_get(o, "evidence"), *d = json_object_get(ev, "diagnosis");
  if (!strcmp(kclient_str(o, "kind"), "explicit")) {   /* an operator's heal: no failed call */
    printf("kind:       explicit (jiti heal)\n");
    printf("function:   %s (definition %.16s...)\n", kclient_str(o, "function"), kclient_str(o, "definition"));
    printf("problem:    %s\n", kclient_str(ev, "problem"));
    if (json_object_get(ev, "repro")) printf("repro:      %s\n", kclient_str(ev, "repro"));
    if (json_object_get(ev, "expect")) printf("expected:   %s\n", kclient_str(ev, "expect"));
    printf("scope:      %s\n", kclient_str(ev, "scope"));
    if (json_integer_value(json_object_get(o, "revision")))
      printf("repaired by revision %" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(o, "revision")));
    goto log;
  }
  printf("function:   %s (definition %.16s...)\n", json_string_value(json_object_get(o, "function")),
         json_string_value(json_object_get(o, "definition")));
  printf("condition:  %s\n", json_string_value(json_object_get(o, "condition")));
  printf("failures:   %" JSON_INTEGER_FORMAT ", first %s, last %s\n", json_integer_value(json_object_get(o, "count")),
         json_string_value(json_object_get(o, "first")), json_string_value(json_object_get(o, "last")));
  if (json_integer_value(json_object_get(o, "revision")))
    printf("repaired by revision %" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(o, "revision")));
  printf("the call:   %s\n", json_string_value(json_object_get(ev, "request")));
  printf("report:     %s\n", json_string_value(json_object_get(d, "report")));
  char *args = json_dumps(json_object_get(o, "arguments"), JSON_COMPACT | JSON_ENCODE_ANY);
  printf("latest arguments of %s: %s\n", json_string_value(json_object_get(o, "function")), args ? args : "?");
  free(args);
  size_t i, k;
  json_t *f, *l;
  if (json_array_size(json_object_get(d, "frames"))) printf("frames (innermost first):\n");
  json_array_foreach(json_object_get(d, "frames"), i, f) {
    printf("  %zu: (%s", i, json_string_value(json_object_get(f, "function")));
    json_array_foreach(json_object_get(f, "args"), k, l) printf(" %s", json_string_value(l));
    printf(")\n");
    json_array_foreach(json_object_get(f, "locals"), k, l)
      printf("      %s = %s\n", json_string_value(json_object_get(l, "name")), json_string_value(json_object_get(l, "value")));
  }
  if (json_array_size(json_object_get(d, "reads"))) printf("what the call read (the values it saw first):\n");
  json_array_foreach(json_object_get(d, "reads"), i, l) {
    printf("  %s %s", json_string_value(json_object_get(l, "kind")), json_string_value(json_object_get(l, "name")));
    if (json_object_get(l, "object")) printf(" of %s", json_string_value(json_object_get(l, "object")));
    printf(" = %s\n", json_string_value(json_object_get(l, "value")));
  }
  if (json_integer_value(json_object_get(d, "reads_more")))
    printf("  (and %" JSON_INTEGER_FORMAT " more not recorded)\n", json_integer_value(json_object_get(d, "reads_more")));
log:;
  json_t *log = json_object_get(o, "log");
  if (json_integer_value(json_object_get(o, "log_dropped")))
    printf("(%" JSON_INTEGER_FORMAT " older log entries dropped)\n", json_integer_value(json_object_get(o, "log_dropped")));
  json_array_foreach(log, i, l) {
    char *t = json_dumps(json_object_get(l, "entry"), JSON_COMPACT | JSON_ENCODE_ANY);
    printf("%s %s: %s\n", json_string_value(json_object_get(l, "time")), json_string_value(json_object_get(l, "kind")),
           t ? t : "?");
    free(t);
  }
}

static void show(json_t *o, int json) {
  if (json) {
    char *t = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    if (t) puts(t);
    free(t);
  } else if (o) {
    show_text(o);
  }
}

/* show through the kernel that serves dir: what it has written, without
** waiting for its next checkpoint as a reader of the store would. */
static int show_live(const char *dir, uint64_t id, int json) {
  char err[CLI_MSG_MAX];
  json_t *r = kclient_once(dir, json_pack("{s:s, s:I}", "op", "incident", "incident", (json_int_t)id), err, sizeof err);
  int status = EXIT_OK;
  if (!r) {
    fprintf(stderr, "jiti incidents: %s\n", err);
    status = EXIT_FAIL;
  } else if (!json_is_true(json_object_get(r, "ok"))) {
    fprintf(stderr, "jiti incidents: %s\n", kclient_str(r, "message"));
    status = EXIT_FAIL;
  } else {
    show(json_object_get(r, "incident"), json);
  }
  json_decref(r);
  return status;
}

static int incidents_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *pos[2] = {NULL, NULL};
  int npos = 0, json = 0;
  unsigned mask = 0;
  uint64_t limit = 20;
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti incidents: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { incidents_usage(stdout); return EXIT_OK; }
    if (!strcmp(a, "--json")) { json = 1; continue; }
    if (!strcmp(a, "--status") || !strcmp(a, "-n")) {
      int st = i + 1 < argc && a[1] == '-' ? store_incident_status_parse(argv[i + 1]) : 0;
      if (i + 1 >= argc || (a[1] == '-' && !st) || (a[1] == 'n' && !opts_count(argv[i + 1], &limit))) {
        fprintf(stderr, "jiti incidents: %s needs %s\n", a, a[1] == '-' ? "a status (see --help)" : "a count");
        return EXIT_USAGE;
      }
      if (a[1] == '-') mask |= 1u << st;
      i++;
      continue;
    }
    if ((a[0] == '-' && a[1]) || npos == 2) {
      fprintf(stderr, "jiti incidents: unexpected argument '%s' (see 'jiti incidents --help')\n", a);
      return EXIT_USAGE;
    }
    pos[npos++] = a;
  }
  uint64_t id = 0;
  if (npos && (strcmp(pos[0], "show") || npos != 2 || !opts_count(pos[1], &id) || !id)) {
    incidents_usage(stderr);
    return EXIT_USAGE;
  }
  if (kclient_serving(dir)) return id ? show_live(dir, id, json) : list_live(dir, mask, limit, json);
  store_env *s = ostore_open("incidents", dir, 0);
  if (!s) return EXIT_FAIL;
  int status = EXIT_OK;
  if (id) {
    store_incident *inc = NULL;
    int rc = store_incident_get(s, id, &inc);
    if (rc == STORE_ENOENT) {
      fprintf(stderr, "jiti incidents: no incident %" PRIu64 " ('jiti incidents' lists them)\n", id);
      status = EXIT_FAIL;
    } else if (rc != STORE_OK) {
      fprintf(stderr, "jiti incidents: %s\n", store_errmsg(s));
      status = EXIT_FAIL;
    } else {
      json_t *o = storeio_incident_json(inc, 1);
      show(o, json);
      json_decref(o);
      store_free(inc);
    }
  } else {
    Listing l = {json, 0};
    if (store_incidents_list(s, mask, (size_t)limit, list_one, &l) != STORE_OK) {
      fprintf(stderr, "jiti incidents: %s\n", store_errmsg(s));
      status = EXIT_FAIL;
    } else {
      list_end(&l, mask);
    }
  }
  store_close(s);
  return status;
}

int cmd_incidents(int argc, char **argv) { return stack_run(incidents_main, argc, argv); }
