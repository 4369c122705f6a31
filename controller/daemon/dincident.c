/*
** dincident.c — a failing application call becomes an incident
** (docs/repair.md, "Incidents"): when its diagnosis shows a call of a
** function the repair policy selects, and the condition is not one the
** rule expects, the failure is recorded in the store — a new incident, or
** a join of the open one for the same function, condition and definition.
**
** The failing function is the innermost frame whose function the policy
** selects and the world defines (only a world's function can be
** repaired); frames print names as the world's package sees them, so a
** name without a package is COMMON-LISP-USER's.  The policy is read from
** the store once and again after each repair-policy request (the kernel
** holds the store's write lock: nobody else changes it meanwhile).
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"

void dincident_policy_changed(Daemon *D) {
  store_free(D->repair_rules);
  D->repair_rules = NULL;
  D->nrepair_rules = 0;
  D->repair_loaded = 0;
}

int dincident_policy(Daemon *D) {
  if (D->repair_loaded) return D->repair_loaded < 0 ? -1 : 0;
  /* one that cannot be read selects nothing until it changes: every call
  ** (dtraffic_asks) must not read the store (and checkpoint it) again */
  if (store_repair_list(dstore(D), &D->repair_rules, &D->nrepair_rules) != STORE_OK) {
    dlog(D, "cannot read the repair policy (nothing is selected until it changes): %s", store_errmsg(dstore(D)));
    D->repair_rules = NULL;
    D->nrepair_rules = 0;
    D->repair_loaded = -1;
    return -1;
  }
  D->repair_loaded = 1;
  return 0;
}

int dincident_frame_function(json_t *frame, char *name, size_t n) {
  char err[256];
  return repairpol_selector(json_string_value(json_object_get(frame, "function")), name, n, err, sizeof err) ? -1 : 0;
}

/* The definitions the failing function's frame called into (the frames
** inside it, innermost first) that the world defines: [{function,
** definition}], each once — what the failure ran on besides the function. */
static json_t *callees(Daemon *D, json_t *diag, size_t frame) {
  json_t *out = json_array(), *f;
  size_t i;
  json_array_foreach(json_object_get(diag, "frames"), i, f) {
    if (i >= frame) break;
    char name[STORE_NAME_MAX + 8], hex[65];
    uint8_t h[32];
    if (dincident_frame_function(f, name, sizeof name) || store_lookup(dstore(D), STORE_FUNCTION, name, h) != STORE_OK)
      continue;
    store_hash_hex(h, hex);
    json_t *c;
    size_t k;
    int dup = 0;
    json_array_foreach(out, k, c) dup |= !strcmp(json_string_value(json_object_get(c, "function")), name);
    if (!dup) json_array_append_new(out, json_pack("{s:s, s:s}", "function", name, "definition", hex));
  }
  return out;
}

/* The evidence: what the supervisor and the model are shown.  Within
** STORE_EVIDENCE_MAX: the frames' texts go first when it is longer, then
** the backtrace (the condition and the call always stay). */
static char *evidence(Daemon *D, const Txn *t, json_t *diag, const char *fn, size_t frame, const char *def,
                      size_t *len) {
  json_t *e = json_pack("{s:s, s:s, s:I, s:s, s:o, s:O, s:I, s:I}", "request", t->source ? t->source : "",
                        "function", fn, "frame", (json_int_t)frame, "definition", def, "callees",
                        callees(D, diag, frame), "diagnosis", diag, "generation", (json_int_t)D->gen, "revision",
                        (json_int_t)D->revision);
  char *text = e ? json_dumps(e, JSON_COMPACT) : NULL;
  static const char *const drop[] = {"frames", "backtrace"};
  for (int k = 0; k < 2 && text && strlen(text) > STORE_EVIDENCE_MAX; k++) {
    free(text);
    json_t *d = json_deep_copy(diag);
    json_object_del(d, drop[k]);
    if (k) json_object_del(d, drop[0]);
    json_object_set_new(e, "diagnosis", d);
    text = json_dumps(e, JSON_COMPACT);
  }
  json_decref(e);
  if (text && strlen(text) > STORE_EVIDENCE_MAX) {
    free(text);
    text = NULL;
  }
  *len = text ? strlen(text) : 0;
  return text;
}

json_t *dincident_capture(Daemon *D, const Txn *t, json_t *diag, int *pause) {
  *pause = 0;
  if (t->op != PROTO_CALL || !json_is_object(diag) || dincident_policy(D) || !D->nrepair_rules) return NULL;
  const char *cond = json_string_value(json_object_get(diag, "condition_type"));
  const char *report = json_string_value(json_object_get(diag, "report"));
  json_t *frames = json_object_get(diag, "frames"), *f;
  size_t i;
  json_array_foreach(frames, i, f) {   /* innermost first */
    char name[STORE_NAME_MAX + 8];
    if (dincident_frame_function(f, name, sizeof name)) continue;
    long r = store_repair_pick(D->repair_rules, D->nrepair_rules, name);
    if (r < 0) continue;
    if (store_repair_expected(&D->repair_rules[r], cond, report)) return NULL;  /* the application's intent */
    store_failure fl = {.function = name, .condition = cond ? cond : "ERROR"};
    if (store_lookup(dstore(D), STORE_FUNCTION, name, fl.definition) != STORE_OK) continue;  /* not the world's */
    char def[65];
    store_hash_hex(fl.definition, def);
    char *args = json_dumps(json_object_get(f, "args"), JSON_COMPACT);
    fl.evidence = evidence(D, t, diag, name, i, def, &fl.evidence_len);
    fl.arguments = args;
    fl.arguments_len = args && strlen(args) <= STORE_ARGUMENTS_MAX ? strlen(args) : 0;
    if (!fl.arguments_len) fl.arguments = NULL;
    uint64_t id = 0;
    int joined = 0, rc = fl.evidence ? store_incident_open(dstore(D), &fl, 0, &id, &joined) : STORE_ENOMEM;
    if (rc != STORE_OK)
      dlog(D, "attempt %" PRIu64 ": could not record an incident for %s: %s", t->attempt, name,
           fl.evidence ? store_errmsg(dstore(D)) : "its evidence is too large or out of memory");
    else
      dlog(D, "attempt %" PRIu64 ": %s incident %" PRIu64 " (%s, %s)", t->attempt, joined ? "joined" : "opened", id,
           name, fl.condition);
    if (rc == STORE_OK && !joined) devents_tell_stored(D);   /* its "incident" event, synced with it */
    *pause = rc == STORE_OK && D->repair_rules[r].mode == STORE_REPAIR_PAUSE;
    free((char *)fl.evidence);
    free(args);
    return rc == STORE_OK ? json_pack("{s:I, s:b, s:s}", "id", (json_int_t)id, "joined", joined, "function", name)
                          : NULL;
  }
  return NULL;
}
