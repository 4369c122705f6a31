/*
** heal.c — the operator's side of automatic repair on the running kernel
** (docs/repair.md): `jiti heal` asks for a repair of a problem nobody
** signalled (an incident of kind explicit, taken by `jiti supervise`);
** `jiti repairs` lists the tentative repairs (`jiti supervise --promote
** manual`), `jiti promote N` makes one permanent, `jiti reject N` undoes it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "client.h"
#include "kclient.h"
#include "proto.h"
#include "render.h"

static void heal_usage(FILE *out) {
  fprintf(out,
          "usage: jiti heal --function NAME --problem TEXT [--repro FORM [--expect FORM]]\n"
          "                 [--scope function|world] [--json] [--store DIR]\n"
          "\n"
          "Ask for a repair of a problem the application did not signal (a wrong value,\n"
          "not an error): opens an incident of kind explicit with your description, which\n"
          "a running 'jiti supervise' takes like any incident — the model's verdict, the\n"
          "candidate verified on a shadow (the repro, the invariants, the recorded calls\n"
          "replayed), the apply, the watch.  'jiti incidents show ID' follows it.\n"
          "\n"
          "options:\n"
          "  --function NAME   the function to repair (one the world defines)\n"
          "  --problem TEXT    what is wrong, for the model (at most 4096 bytes)\n"
          "  --repro FORM      a form that shows the problem; a candidate must make it\n"
          "                    return without an error\n"
          "  --expect FORM     the value the repro should return: a candidate whose repro\n"
          "                    value is not EQUAL to it is rejected\n"
          "  --scope SCOPE     function (default): a candidate may change NAME only;\n"
          "                    world: other definitions too\n"
          "  --json            print the reply\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 the incident opened (its id printed); 1 refused (no such\n"
          "function, no kernel running); 2 usage.\n");
}

static void repairs_usage(FILE *out) {
  fprintf(out,
          "usage: jiti repairs [--json] [--store DIR]\n"
          "       jiti promote INCIDENT [--json] [--store DIR]\n"
          "       jiti reject INCIDENT [--json] [--store DIR]\n"
          "\n"
          "Tentative repairs: with 'jiti supervise --promote manual' an applied repair is\n"
          "live but tentative until you decide.  repairs lists them: the incident, the\n"
          "function, the repair's revision and the calls and failures of the function\n"
          "since the repair (as this kernel counted them).  promote makes one permanent\n"
          "(the incident repaired).  reject undoes it: a new revision restores the\n"
          "definitions it changed, and the incident is captured again for the supervisor.\n"
          "A kernel restarted with tentative repairs outstanding undoes them itself (the\n"
          "last promoted state); data rows written meanwhile stay either way.\n"
          "\n"
          "options:\n"
          "  --json            print the reply\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 listed, promoted or rejected; 1 refused (no such tentative\n"
          "repair, it changed since, no kernel running); 2 usage.\n");
}

/* The reply of req (stolen) printed as JSON, or NULL after a message.  */
static json_t *ask(const char *cmd, const char *dir, json_t *req, int json, int *status) {
  json_t *r = render_request_once(cmd, dir, req);
  *status = EXIT_FAIL;
  if (!r) return NULL;
  if (json) {
    char *t = json_dumps(r, JSON_COMPACT);
    if (t) puts(t);
    free(t);
  }
  if (!json_is_true(json_object_get(r, "ok"))) {
    if (!json) fprintf(stderr, "jiti %s: %s: %s\n", cmd, kclient_str(r, "code"), kclient_str(r, "message"));
    json_decref(r);
    return NULL;
  }
  *status = EXIT_OK;
  return r;
}

/* An option's value (argv[*i + 1]), or NULL after a message. */
static const char *value_of(const char *cmd, int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "jiti %s: %s needs a value (see 'jiti %s --help')\n", cmd, argv[*i], cmd);
    return NULL;
  }
  return argv[++*i];
}

int cmd_heal(int argc, char **argv) {
  const char *dir = NULL, *fn = NULL, *problem = NULL, *repro = NULL, *expect = NULL, *scope = NULL;
  int json = 0;
  char err[256];
  for (int i = 1; i < argc; i++) {
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "jiti heal: %s\n", err);
      return EXIT_USAGE;
    }
    if (r) continue;
    const char **slot = !strcmp(argv[i], "--function") ? &fn : !strcmp(argv[i], "--problem") ? &problem
                        : !strcmp(argv[i], "--repro") ? &repro : !strcmp(argv[i], "--expect") ? &expect
                        : !strcmp(argv[i], "--scope") ? &scope : NULL;
    if (slot) {
      if (!(*slot = value_of("heal", argc, argv, &i))) return EXIT_USAGE;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      heal_usage(stdout);
      return EXIT_OK;
    } else {
      fprintf(stderr, "jiti heal: unexpected argument '%s' (see 'jiti heal --help')\n", argv[i]);
      return EXIT_USAGE;
    }
  }
  if (!fn || !problem || !*problem) {
    fprintf(stderr, "jiti heal: --function NAME and --problem TEXT are required: which function, and what is "
            "wrong with it (see 'jiti heal --help')\n");
    return EXIT_USAGE;
  }
  if (expect && !repro) {
    fprintf(stderr, "jiti heal: --expect needs --repro: the form whose value is compared with it\n");
    return EXIT_USAGE;
  }
  if (scope && strcmp(scope, "function") && strcmp(scope, "world")) {
    fprintf(stderr, "jiti heal: --scope is function or world, not '%s'\n", scope);
    return EXIT_USAGE;
  }
  json_t *req = json_pack("{s:s, s:s, s:s}", "op", proto_op_name(PROTO_HEAL), "function", fn, "problem", problem);
  if (req && repro) json_object_set_new(req, "repro", json_string(repro));
  if (req && expect) json_object_set_new(req, "expect", json_string(expect));
  if (req && scope) json_object_set_new(req, "scope", json_string(scope));
  int status;
  json_t *r = ask("heal", dir, req, json, &status);
  if (r && !json) {
    json_t *inc = json_object_get(r, "incident");
    printf("incident %" JSON_INTEGER_FORMAT " opened for %s (kind explicit): a running 'jiti supervise' takes it; "
           "'jiti incidents show %" JSON_INTEGER_FORMAT "' follows it\n", kclient_int(inc, "id"),
           kclient_str(inc, "function"), kclient_int(inc, "id"));
  }
  json_decref(r);
  return status;
}

/* repairs, promote N, reject N. */
static int tentative_cmd(const char *cmd, int argc, char **argv) {
  const char *dir = NULL;
  int json = 0, one = strcmp(cmd, "repairs") != 0;
  long long n = 0;
  char err[256];
  for (int i = 1; i < argc; i++) {
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "jiti %s: %s\n", cmd, err);
      return EXIT_USAGE;
    }
    if (r) continue;
    char *end;
    if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      repairs_usage(stdout);
      return EXIT_OK;
    } else if (one && !n && (n = strtoll(argv[i], &end, 10)) > 0 && !*end) {
      continue;
    } else {
      fprintf(stderr, "jiti %s: unexpected argument '%s'%s (see 'jiti %s --help')\n", cmd, argv[i],
              one ? " (the incident is a positive integer; jiti repairs lists them)" : "", cmd);
      return EXIT_USAGE;
    }
  }
  if (one && n <= 0) {
    fprintf(stderr, "jiti %s: which incident? jiti %s INCIDENT (jiti repairs lists the tentative ones)\n", cmd, cmd);
    return EXIT_USAGE;
  }
  json_t *req = json_pack("{s:s, s:s}", "op", proto_op_name(PROTO_REPAIRS), "action", one ? cmd : "list");
  if (req && one) json_object_set_new(req, "incident", json_integer(n));
  int status;
  json_t *r = ask(cmd, dir, req, json, &status), *o;
  if (r && !json && !one) {
    size_t i;
    json_array_foreach(json_object_get(r, "repairs"), i, o)
      printf("%-5" JSON_INTEGER_FORMAT " %-24s revision %-6" JSON_INTEGER_FORMAT " calls %" JSON_INTEGER_FORMAT
             ", failures %" JSON_INTEGER_FORMAT " since%s\n", kclient_int(o, "incident"), kclient_str(o, "function"),
             kclient_int(o, "revision"), kclient_int(o, "calls"), kclient_int(o, "failures"),
             json_is_true(json_object_get(o, "rejecting")) ? " (being rejected)" : "");
    if (!json_array_size(json_object_get(r, "repairs")))
      printf("no tentative repairs (jiti supervise --promote manual makes them)\n");
  } else if (r && !json) {
    json_t *rp = json_object_get(r, "repair");
    if (!strcmp(cmd, "promote"))
      printf("incident %" JSON_INTEGER_FORMAT ": the repair of %s (revision %" JSON_INTEGER_FORMAT ") promoted\n",
             kclient_int(rp, "incident"), kclient_str(rp, "function"), kclient_int(rp, "revision"));
    else
      printf("incident %" JSON_INTEGER_FORMAT ": the repair of %s rejected, undone by revision %" JSON_INTEGER_FORMAT
             "; the incident is captured again\n", kclient_int(rp, "incident"), kclient_str(rp, "function"),
             kclient_int(rp, "revision"));
  }
  json_decref(r);
  return status;
}

int cmd_repairs(int argc, char **argv) { return tentative_cmd("repairs", argc, argv); }
int cmd_promote(int argc, char **argv) { return tentative_cmd("promote", argc, argv); }
int cmd_reject(int argc, char **argv) { return tentative_cmd("reject", argc, argv); }
