/*
** dheal.c — an operator's explicit heal (docs/repair.md, "Explicit
** heal"): a problem the application did not signal (a wrong value, not an
** error) becomes an incident of kind explicit.  Its evidence holds the
** operator's problem text, the function's definition hash, the optional
** repro and expected value, and the scope; from captured on it follows
** the path of every incident (a supervisor, the model, the shadow, the
** apply, the watch).
**
** The repro with an expected value is verified as one form that fails
** when the value differs: (let ((v REPRO) (e EXPECT)) (if (equal v e) v
** (error ...))), so the shadow's "the repro still fails" is the judge
** (drepair.c verdict_of) and the model reads both values.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"

/* The form the shadow runs for repro and expect (expect may be NULL:
** the repro as it is).  malloc'd, NULL out of memory. */
static char *repro_form(const char *repro, const char *expect) {
  char *out = NULL;
  if (!expect) return strdup(repro);
  if (asprintf(&out, "(let ((%%heal-value %s)\n      (%%heal-expected %s))\n  (if (equal %%heal-value "
               "%%heal-expected)\n      %%heal-value\n      (error \"the repro returned ~S where ~S was expected\" "
               "%%heal-value %%heal-expected)))", repro, expect) < 0)
    return NULL;
  return out;
}

void dheal_open(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  const char *fn_in = json_string_value(json_object_get(req, "function"));
  const char *problem = json_string_value(json_object_get(req, "problem"));
  const char *repro = json_string_value(json_object_get(req, "repro"));
  const char *expect = json_string_value(json_object_get(req, "expect"));
  const char *scope = json_string_value(json_object_get(req, "scope"));
  char name[STORE_NAME_MAX + 8], err[256] = "", def[65];
  store_failure fl = {.kind = STORE_INCK_EXPLICIT, .condition = "explicit"};
  if (repairpol_selector(fn_in, name, sizeof name, err, sizeof err) || strchr(name, '*') ||
      (strlen(name) && name[strlen(name) - 1] == ':')) {
    dreply_err(D, client, id, "invalid-request", "\"function\" of heal must name one function (not a prefix or a "
               "package): %s", err[0] ? err : fn_in);
    return;
  }
  if (store_lookup(dstore(D), STORE_FUNCTION, name, fl.definition) != STORE_OK) {
    dreply_err(D, client, id, "not-found", "the world defines no function %s: heal repairs a function the world "
               "defines (jiti show lists them; define it first with jiti apply)", name);
    return;
  }
  store_hash_hex(fl.definition, def);
  char *form = repro ? repro_form(repro, expect) : NULL;
  json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "kind", "explicit", "problem", problem, "function",
                        name, "definition", def, "scope", scope ? scope : "function", "generation",
                        (json_int_t)D->gen, "revision", (json_int_t)D->revision);
  if (e && repro) {
    json_object_set_new(e, "repro", json_string(repro));
    if (form) json_object_set_new(e, "request", json_string(form));
  }
  if (e && expect) json_object_set_new(e, "expect", json_string(expect));
  char *text = e && (!repro || form) ? json_dumps(e, JSON_COMPACT) : NULL;
  json_decref(e);
  free(form);
  if (!text) {
    dreply_err(D, client, id, "busy", "the kernel is out of memory; retry later");
    return;
  }
  fl.function = name;
  fl.evidence = text;
  fl.evidence_len = strlen(text);
  uint64_t n = 0;
  int rc = store_incident_open(dstore(D), &fl, 0, &n, NULL);
  free(text);
  if (rc != STORE_OK) {
    dreply_err(D, client, id, rc == STORE_EINVAL ? "invalid-request" : "store-error", "cannot open the incident: %s",
               store_errmsg(dstore(D)));
    return;
  }
  devents_tell_stored(D);   /* its "incident" event: a supervisor takes it */
  dlog(D, "incident %" PRIu64 ": an operator's heal of %s", n, name);
  dreply(D, client, id, json_pack("{s:b, s:{s:I, s:s, s:s, s:s}}", "ok", 1, "incident", "id", (json_int_t)n,
                                  "kind", "explicit", "status", "captured", "function", name));
}
