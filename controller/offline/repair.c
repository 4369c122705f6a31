/*
** repair.c — `jiti repair`: the policy of automatic repair (docs/repair.md),
** which functions may become incidents.  Through the kernel when one
** serves the store, else on the store itself; the same engine request
** either way (engine.h, repairpol_apply).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "client.h"
#include "engine.h"
#include "kclient.h"
#include "offline.h"
#include "render.h"

static void repair_usage(FILE *out) {
  fprintf(out,
          "usage: jiti repair enable SELECTOR [--mode fail|pause] [--expect-condition TYPE]...\n"
          "                                   [--expect-report TEXT]... [--store DIR]\n"
          "       jiti repair disable SELECTOR [--store DIR]\n"
          "       jiti repair list [--json] [--store DIR]\n"
          "\n"
          "Which functions automatic repair looks after.  A failing application call of a\n"
          "function a rule selects becomes an incident, unless its condition is one the rule\n"
          "expects.  SELECTOR is a function (RUN, APP::RUN), a prefix of names (APP::PARSE-*)\n"
          "or a package (APP:); the most specific rule applies: a name over the longest\n"
          "prefix over a package.  enable puts a rule (replacing the selector's), disable\n"
          "removes one (the functions no rule selects any more lose their open incidents,\n"
          "cancelled, and the successful calls kept of them: 'jiti traffic'), list shows\n"
          "them.  Nothing is selected until a rule says so; the successful calls of a\n"
          "function selected are sampled to check its repairs against.\n"
          "\n"
          "options:\n"
          "  --mode fail|pause        fail (default): the failing call returns its error at\n"
          "                           once; pause: it waits at its error while a repair is\n"
          "                           sought\n"
          "  --expect-condition TYPE  a condition type the application signals on purpose:\n"
          "                           never an incident (repeatable, at most %u in all)\n"
          "  --expect-report TEXT     likewise, a condition whose report contains TEXT\n"
          "  --store DIR              the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --json                   print the reply as JSON\n"
          "  -h, --help               show this help\n"
          "\n"
          "Exit status: 0 done; 1 refused (a bad selector, no such rule) or a store problem;\n"
          "2 usage.\n",
          STORE_REPAIR_EXPECTED_MAX);
}

static void print_rules(json_t *rules) {
  size_t i, k;
  json_t *r, *e;
  if (!json_array_size(rules)) {
    printf("no rules: no function becomes an incident (jiti repair enable NAME)\n");
    return;
  }
  json_array_foreach(rules, i, r) {
    printf("%-32s %s", kclient_str(r, "selector"), kclient_str(r, "mode"));
    json_array_foreach(json_object_get(r, "expected"), k, e)
      printf("%s%s %s", k ? ", " : !strcmp(kclient_str(r, "mode"), "fail") ? "   expects " : "  expects ",
             kclient_str(e, "kind"), kclient_str(e, "text"));
    printf("\n");
  }
}

static int repair_main(int argc, char **argv) {
  const char *dir = opts_default_store(), *pos[3] = {NULL, NULL, NULL}, *mode = NULL;
  int npos = 0, json = 0;
  json_t *expected = json_array();
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti repair: %s\n", err); json_decref(expected); return EXIT_USAGE; }
    if (r) continue;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { repair_usage(stdout); json_decref(expected); return EXIT_OK; }
    if (!strcmp(a, "--json")) { json = 1; continue; }
    if (!strcmp(a, "--mode") || !strcmp(a, "--expect-condition") || !strcmp(a, "--expect-report")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "jiti repair: %s needs a value (see 'jiti repair --help')\n", a);
        json_decref(expected);
        return EXIT_USAGE;
      }
      const char *v = argv[++i];
      if (a[2] == 'm') mode = v;
      else json_array_append_new(expected, json_pack("{s:s, s:s}", "kind", a[9] == 'c' ? "condition" : "report",
                                                     "text", v));
      continue;
    }
    if (a[0] == '-' && a[1]) {
      fprintf(stderr, "jiti repair: unknown option %s (see 'jiti repair --help')\n", a);
      json_decref(expected);
      return EXIT_USAGE;
    }
    if (npos == 2) { repair_usage(stderr); json_decref(expected); return EXIT_USAGE; }
    pos[npos++] = a;
  }
  int action = repairpol_action_parse(pos[0]);
  if (action < 0 || (action == REPAIRPOL_LIST) != (npos == 1) ||
      (action != REPAIRPOL_ENABLE && (mode || json_array_size(expected)))) {
    if (pos[0] && action < 0) fprintf(stderr, "jiti repair: '%s' is not enable, disable or list\n", pos[0]);
    else if (action >= 0 && action != REPAIRPOL_ENABLE && (mode || json_array_size(expected)))
      fprintf(stderr, "jiti repair: --mode and --expect-* go with enable\n");
    repair_usage(stderr);
    json_decref(expected);
    return EXIT_USAGE;
  }
  json_t *req = json_pack("{s:s, s:s}", "op", proto_op_name(PROTO_REPAIR_POLICY), "action", pos[0]);
  if (pos[1]) json_object_set_new(req, "selector", json_string(pos[1]));
  if (mode) json_object_set_new(req, "mode", json_string(mode));
  if (json_array_size(expected)) json_object_set(req, "expected", expected);
  json_decref(expected);
  json_t *reply;
  if (kclient_serving(dir)) {
    reply = render_request_once("repair", dir, req);
    if (!reply) return EXIT_FAIL;
  } else {  /* no kernel: the store itself, as its writer */
    store_env *s = ostore_open("repair", dir, action != REPAIRPOL_LIST);
    if (!s) {
      json_decref(req);
      return EXIT_FAIL;
    }
    char code[32], err[CLI_MSG_MAX];
    reply = repairpol_apply(s, req, code, sizeof code, err, sizeof err);
    if (!reply) reply = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "message", err);
    store_close(s);
    json_decref(req);
  }
  int ok = json_is_true(json_object_get(reply, "ok"));
  if (json) {
    char *t = json_dumps(reply, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (t) puts(t);
    free(t);
  } else if (ok) {
    print_rules(json_object_get(reply, "rules"));
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(reply, "forgotten"), i, f)
      printf("forgot the calls kept of %s\n", json_string_value(f));
  } else {
    fprintf(stderr, "jiti repair: %s: %s\n", kclient_str(reply, "code"), kclient_str(reply, "message"));
  }
  json_decref(reply);
  return ok ? EXIT_OK : EXIT_FAIL;
}

int cmd_repair(int argc, char **argv) { return stack_run(repair_main, argc, argv); }
