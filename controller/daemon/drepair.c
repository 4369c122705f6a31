/*
** drepair.c — automatic repair through the kernel (docs/repair.md): the
** two requests a supervisor makes.  The kernel holds the store, so the
** supervisor's writes go through it.
**
**   incident  read an incident (and the recorded calls of its function),
**             move it along its statuses, log a model exchange;
**   repair    a candidate verified on a shadow of the live worker
**             (dshadow.c: a fork of the live heap), judged here, and when it
**             passes applied by a transaction of its own whose revision, of
**             kind repair, moves the incident to repaired in the same store
**             transaction — or rejected, the incident back to
**             awaiting-model, with the reason the model is shown.
**
** A candidate is judged by the one function verdict_of: the shadow's
** report against the scope and the declared intent.  The kernel moves an
** incident into and out of verifying; a supervisor owns the rest.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"
#include "jtext.h"
#include "txn.h"
#include "proto.h"

#define REPAIR_REASON_MAX 4096
#define REPAIR_VERDICT_MAX 1200
#define REPAIR_REPLAY_MAX 256   /* recorded calls replayed per verification */
#define REPAIR_WATCH_DEFAULT 20 /* calls watched after a repair */

/* ------------------------------------------------------------ shared */

/* Incident id into *out (a store_free allocation), or 0 after answering
** not-found / store-error. */
static int incident_read(Daemon *D, uint64_t client, json_t *id, uint64_t n, store_incident **out) {
  int rc = store_incident_get(dstore(D), n, out);
  if (rc == STORE_OK) return 1;
  if (rc == STORE_ENOENT)
    dreply_err(D, client, id, "not-found", "no incident %" PRIu64 " (jiti incidents lists them)", n);
  else
    dreply_err(D, client, id, "store-error", "cannot read incident %" PRIu64 ": %s", n, store_errmsg(dstore(D)));
  return 0;
}

/* Move incident n from -> to, its event told to subscribers.  0, or -1
** with the store's message in err. */
static int move(Daemon *D, uint64_t n, int from, int to, char *err, size_t errlen) {
  if (store_incident_transition(dstore(D), n, from, to, 0, NULL) != STORE_OK) {
    snprintf(err, errlen, "%s", store_errmsg(dstore(D)));
    return -1;
  }
  devents_tell_stored(D);
  dlog(D, "incident %" PRIu64 ": %s -> %s", n, store_incident_status_name(from), store_incident_status_name(to));
  dpark_incident(D, n, to);   /* calls waiting for it: run again, or answered */
  return 0;
}

/* Append entry (kind) to incident n's log: the store's code. */
static int note_put(Daemon *D, uint64_t n, int kind, json_t *entry) {
  char *text = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
  int rc = text ? store_incident_note(dstore(D), n, kind, text, strlen(text), 0, 0) : STORE_ENOMEM;
  free(text);
  return rc;
}

/* Log a note (kind) on incident n; failures are logged only: the note is
** the record, the status is what matters. */
static void note(Daemon *D, uint64_t n, int kind, json_t *entry) {
  int rc = note_put(D, n, kind, entry);
  if (rc != STORE_OK)
    dlog(D, "incident %" PRIu64 ": could not log a %s: %s", n, store_note_kind_name(kind),
         rc == STORE_ENOMEM ? "out of memory" : store_errmsg(dstore(D)));
}

/* 1 when the live definition of inc's function is not the one that failed
** (someone changed it since): the proposal is stale. */
static int definition_moved(Daemon *D, const char *function, const uint8_t failed[32]) {
  uint8_t now[32];
  if (store_lookup(dstore(D), STORE_FUNCTION, function, now) != STORE_OK) return 1;   /* removed */
  return memcmp(now, failed, 32) != 0;
}

/* ------------------------------------------------------------ incident */

typedef struct Calls { json_t *a; } Calls;

static int add_call(void *arg, const store_traffic_call *c) {
  Calls *k = arg;
  char digest[65];
  store_hash_hex(c->digest, digest);
  json_array_append_new(k->a, json_pack("{s:s, s:s, s:s, s:s}", "signature", c->signature, "request", c->request,
                                        "result", c->result, "digest", digest));
  return json_array_size(k->a) >= REPAIR_REPLAY_MAX;
}

/* The recorded calls of function, [{signature, request, result, digest}]
** (NULL: the store failed, logged). */
static json_t *recorded_calls(Daemon *D, const char *function) {
  Calls k = {json_array()};
  if (store_traffic_list(dstore(D), function, add_call, &k) != STORE_OK) {
    dlog(D, "cannot read the recorded calls of %s: %s", function, store_errmsg(dstore(D)));
    json_decref(k.a);
    return NULL;
  }
  return k.a;
}

/* The statuses a client may move an incident to: verifying, repaired and
** interrupted are the kernel's, captured is the watch's. */
static int client_target(int to) {
  return to == STORE_INC_AWAITING_MODEL || to == STORE_INC_REJECTED || to == STORE_INC_DECLINED_EXPECTED ||
         to == STORE_INC_DECLINED_INSUFFICIENT || to == STORE_INC_STALE || to == STORE_INC_CANCELLED ||
         to == STORE_INC_FAILED;
}

void drepair_incident(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  uint64_t n = (uint64_t)json_integer_value(json_object_get(req, "incident"));
  const char *from_s = json_string_value(json_object_get(req, "from"));
  const char *to_s = json_string_value(json_object_get(req, "to"));
  json_t *nt = json_object_get(req, "note");
  int from = from_s ? store_incident_status_parse(from_s) : 0, to = to_s ? store_incident_status_parse(to_s) : 0;
  char err[CLI_MSG_MAX];
  if (to && from == STORE_INC_TENTATIVE) {   /* its repair is live: only promote or reject ends it */
    dreply_err(D, client, id, "not-allowed", "a tentative repair is promoted or rejected (the repairs request: "
               "jiti promote, jiti reject), not moved");
    return;
  }
  if (to && !client_target(to)) {
    dreply_err(D, client, id, "not-allowed", "the kernel moves an incident to %s itself (a repair request "
               "verifies; the watch reopens)", to_s);
    return;
  }
  if (to && move(D, n, from, to, err, sizeof err) != 0) {
    store_incident *inc = NULL;
    if (!incident_read(D, client, id, n, &inc)) return;   /* no such incident */
    const char *now = store_incident_status_name(inc->status);
    if (inc->status != from)
      dreply_err(D, client, id, "conflict", "incident %" PRIu64 " is %s, not %s: another writer moved it; "
                 "read it again", n, now, from_s);
    else
      dreply_err(D, client, id, "not-allowed", "incident %" PRIu64 " cannot go from %s to %s (docs/repair.md "
                 "lists the transitions)", n, from_s, to_s);
    store_free(inc);
    return;
  }
  if (nt) {
    int rc = note_put(D, n, STORE_NOTE_EXCHANGE, json_object_get(nt, "entry"));
    if (rc == STORE_ENOENT) {
      dreply_err(D, client, id, "not-found", "no incident %" PRIu64 " (jiti incidents lists them)", n);
      return;
    }
    if (rc != STORE_OK) {
      dreply_err(D, client, id, "store-error", "cannot log on incident %" PRIu64 ": %s", n, store_errmsg(dstore(D)));
      return;
    }
  }
  store_incident *inc = NULL;
  if (!incident_read(D, client, id, n, &inc)) return;
  json_t *o = storeio_incident_json(inc, 1);
  json_t *r = json_pack("{s:b, s:o}", "ok", 1, "incident", o ? o : json_null());
  if (json_is_true(json_object_get(req, "traffic"))) {
    json_t *calls = recorded_calls(D, inc->function);
    json_object_set_new(r, "traffic", calls ? calls : json_array());
  }
  store_free(inc);
  dreply(D, client, id, r);
}

typedef struct Listing { json_t *a; } Listing;

static int list_one(void *arg, const store_incident *inc) {
  Listing *l = arg;
  json_t *o = storeio_incident_json(inc, 0);
  if (o) json_array_append_new(l->a, o);
  return 0;
}

void drepair_incidents(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  unsigned mask = 0;
  json_t *st, *lim = json_object_get(req, "limit");
  size_t i;
  json_array_foreach(json_object_get(req, "status"), i, st)
    mask |= 1u << store_incident_status_parse(json_string_value(st));   /* checked: each a status */
  Listing l = {json_array()};
  if (store_incidents_list(dstore(D), mask, lim ? (size_t)json_integer_value(lim) : 0, list_one, &l) != STORE_OK) {
    json_decref(l.a);
    dreply_err(D, client, id, "store-error", "cannot list the incidents: %s", store_errmsg(dstore(D)));
    return;
  }
  dreply(D, client, id, json_pack("{s:b, s:o}", "ok", 1, "incidents", l.a));
}

/* ------------------------------------------------------------ repair */

/* One repair request while its shadow runs. */
typedef struct Verifying {
  uint64_t client;
  json_t *id, *req;
  uint64_t incident;
  char function[STORE_NAME_MAX + 1];
  uint8_t definition[32];
  double t0;
  int explicit_heal;   /* an operator's heal: the repro is its, with the expected value */
} Verifying;

static void verifying_free(Verifying *v) {
  json_decref(v->id);
  json_decref(v->req);
  free(v);
}

/* A string member, for a message. */
static const char *shown(json_t *r) {
  const char *s = json_string_value(r);
  return s ? s : "?";
}

/* A shadow's result ({ok, value | values | reason, condition?, report})
** as one line into buf: the printed value(s), or CONDITION: report. */
static const char *result_text(json_t *r, char *buf, size_t n) {
  json_t *vs = json_object_get(r, "values");
  if (json_is_true(json_object_get(r, "ok")) && vs) {
    char *t = json_dumps(vs, JSON_COMPACT);
    snprintf(buf, n, "the values %s", t ? t : "?");
    free(t);
  } else if (json_is_true(json_object_get(r, "ok"))) {
    snprintf(buf, n, "%s", shown(json_object_get(r, "value")));
  } else {
    const char *cond = json_string_value(json_object_get(r, "condition"));
    snprintf(buf, n, "%s%s%s", cond ? cond : "", cond ? ": " : "", shown(json_object_get(r, "report")));
  }
  return buf;
}

/* The verdict on a shadow's report: NULL when the candidate passes, else
** why not (into buf), as the model is shown it. */
static const char *verdict_of(const Verifying *v, json_t *report, char *buf, size_t n) {
  const char *scope = json_string_value(json_object_get(v->req, "scope"));
  int world = scope && !strcmp(scope, "world");
  int intended = json_is_string(json_object_get(v->req, "intended_changes"));
  json_t *defs = json_object_get(report, "definitions");
  char r1[400], r2[400];
  if (!json_is_true(json_object_get(defs, "ok"))) {
    snprintf(buf, n, "the candidate does not load: %s", result_text(defs, r1, sizeof r1));
    return buf;
  }
  if (json_is_true(json_object_get(report, "identical"))) {
    snprintf(buf, n, "the candidate is identical to the live definitions: it changes nothing");
    return buf;
  }
  json_t *ch, *changed = json_object_get(report, "changed");
  size_t i;
  int defines = 0;
  json_array_foreach(changed, i, ch) {
    const char *name = json_string_value(json_object_get(ch, "name"));
    const char *kind = json_string_value(json_object_get(ch, "kind"));
    int the_function = name && kind && !strcmp(kind, "function") && !strcmp(name, v->function);
    defines |= the_function;
    if (!world && !the_function) {
      snprintf(buf, n, "out of scope: the candidate changes the %s %s, and only the function %s may change "
               "(the supervisor's --scope function)", kind ? kind : "entry", name ? name : "?", v->function);
      return buf;
    }
  }
  if (!world && !defines) {
    snprintf(buf, n, "the candidate does not define the function %s", v->function);
    return buf;
  }
  json_t *inv = json_object_get(report, "invariants"), *f;
  json_array_foreach(json_object_get(inv, "failed"), i, f) {
    snprintf(buf, n, "the invariant %s fails with the candidate: %s", shown(json_object_get(f, "name")),
             shown(json_object_get(f, "report")));
    return buf;
  }
  json_t *repro = json_object_get(report, "repro");
  if (json_is_object(repro) && !json_is_true(json_object_get(repro, "ok"))) {
    const char *reason = json_string_value(json_object_get(repro, "reason"));
    snprintf(buf, n, "%s: %s", reason && !strcmp(reason, txn_reason_name(TXN_UNSAFE))
                                   ? (v->explicit_heal ? "the operator's repro, run with the candidate, breaks an "
                                                         "invariant"
                                                       : "the failed call, run again with the candidate, breaks an "
                                                         "invariant")
                                   : v->explicit_heal ? "the operator's repro still fails with the candidate"
                                                      : "the failed call still fails with the candidate",
             result_text(repro, r1, sizeof r1));
    return buf;
  }
  json_t *call;
  json_array_foreach(json_object_get(report, "replay"), i, call) {
    /* a call the unchanged copy fails on the live heap is a failing input
    ** too: the candidate may change it (that is the repair) */
    if (!json_is_true(json_object_get(call, "differs")) || intended ||
        !json_is_true(json_object_get(json_object_get(call, "baseline"), "ok")))
      continue;
    snprintf(buf, n, "the candidate changes the result of the recorded call %s: %s before, %s with it (if that "
             "change is intended, say so in intended_changes)", shown(json_object_get(call, "request")),
             result_text(json_object_get(call, "baseline"), r1, sizeof r1),
             result_text(json_object_get(call, "candidate"), r2, sizeof r2));
    return buf;
  }
  return NULL;
}

/* Answer a repair that ends before its transaction: code and message,
** with {incident, status, function, verification?}. */
static void answer(Daemon *D, Verifying *v, const char *code, const char *msg, const char *status, json_t *report) {
  json_t *r = json_pack("{s:b, s:s, s:s, s:{s:I, s:s, s:s}}", "ok", 0, "code", code, "message", msg, "repair",
                        "incident", (json_int_t)v->incident, "status", status, "function", v->function);
  if (report) json_object_set(json_object_get(r, "repair"), "verification", report);
  dreply(D, v->client, v->id, r);
}

/* The note a verification leaves on its incident. */
static json_t *verification_note(const Verifying *v, json_t *report, const char *err, const char *why) {
  json_t *o = json_pack("{s:b, s:s, s:I}", "passed", !why, "source",
                        json_string_value(json_object_get(v->req, "source")), "ms",
                        (json_int_t)((daemon_now() - v->t0) * 1000));
  const char *rid = json_string_value(json_object_get(v->req, "response_id"));
  if (rid) json_object_set_new(o, "response_id", json_string(rid));
  if (why) json_object_set_new(o, "reason", json_string(why));
  if (err) json_object_set_new(o, "error", json_string(err));
  if (report) json_object_set(o, "report", report);
  return o;
}

/* The shadow reported (or failed: err): judge, then queue the apply or
** send the incident back to the model. */
static void verified(Daemon *D, void *arg, json_t *report, const char *err) {
  Verifying *v = arg;
  char why[REPAIR_VERDICT_MAX], e2[CLI_MSG_MAX];
  const char *verdict = NULL;
  if (!report) {
    snprintf(why, sizeof why, "the verification did not finish: %s", err ? err : "the shadow failed");
    verdict = why;
  } else {
    verdict = verdict_of(v, report, why, sizeof why);
  }
  json_t *nt = verification_note(v, report, err, verdict);
  note(D, v->incident, STORE_NOTE_VERIFICATION, nt);
  json_decref(nt);
  if (!verdict && definition_moved(D, v->function, v->definition)) {
    move(D, v->incident, STORE_INC_VERIFYING, STORE_INC_STALE, e2, sizeof e2);
    answer(D, v, "stale", "the failing definition changed while the candidate was verified: the proposal is "
                          "stale", "stale", report);
    verifying_free(v);
    return;
  }
  if (verdict) {
    int back = move(D, v->incident, STORE_INC_VERIFYING, STORE_INC_AWAITING_MODEL, e2, sizeof e2) == 0;
    dlog(D, "incident %" PRIu64 ": candidate rejected: %s", v->incident, verdict);
    answer(D, v, "rejected", verdict, back ? "awaiting-model" : "?", report);
    verifying_free(v);
    return;
  }
  /* it passed: applied as any operator's change, behind what waits */
  json_t *t = json_pack("{s:O, s:I, s:s, s:O}", "source", json_object_get(v->req, "source"), "incident",
                        (json_int_t)v->incident, "function", v->function, "verification", report);
  json_t *rid = json_object_get(v->req, "response_id"), *lim = json_object_get(v->req, "limits");
  json_t *watch = json_object_get(v->req, "watch"), *promote = json_object_get(v->req, "promote");
  if (promote) json_object_set(t, "promote", promote);
  if (rid) json_object_set(t, "response_id", rid);
  if (watch) json_object_set(t, "watch", watch);
  if (lim) json_object_set(t, "limits", lim);
  const char *reason = json_string_value(json_object_get(v->req, "reason"));
  char summary[STORE_SUMMARY_MAX];
  snprintf(summary, sizeof summary, "repair of incident %" PRIu64 " (%s): %s", v->incident, v->function,
           reason ? reason : "");
  json_object_set_new(t, "summary", json_string(summary));
  if (!t || dqueue_push(&D->txq, v->client, v->id, t, PROTO_REPAIR) != 0) {
    move(D, v->incident, STORE_INC_VERIFYING, STORE_INC_AWAITING_MODEL, e2, sizeof e2);
    answer(D, v, "busy", "the kernel is out of memory; retry later", "awaiting-model", report);
  }
  json_decref(t);
  verifying_free(v);
}

void drepair_start(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  uint64_t n = (uint64_t)json_integer_value(json_object_get(req, "incident"));
  store_incident *inc = NULL;
  char err[CLI_MSG_MAX];
  if (!incident_read(D, client, id, n, &inc)) return;
  if (inc->status != STORE_INC_AWAITING_MODEL) {
    dreply_err(D, client, id, "conflict", "incident %" PRIu64 " is %s: a candidate is verified only for an "
               "incident awaiting the model (incident with to: awaiting-model)", n,
               store_incident_status_name(inc->status));
    store_free(inc);
    return;
  }
  Verifying *v = calloc(1, sizeof *v);
  json_t *ev = inc->evidence ? json_loadb(inc->evidence, inc->evidence_len, 0, NULL) : NULL;
  json_t *calls = NULL;
  if (!v) {
    dreply_err(D, client, id, "busy", "the kernel is out of memory; retry later");
    goto done;
  }
  *v = (Verifying){client, id ? json_incref(id) : NULL, json_incref(req), n, "", {0}, daemon_now(), 0};
  snprintf(v->function, sizeof v->function, "%s", inc->function);
  memcpy(v->definition, inc->definition, 32);
  v->explicit_heal = inc->kind == STORE_INCK_EXPLICIT;
  /* an operator's heal was asked in its own scope, whatever the supervisor's */
  json_t *hs = v->explicit_heal ? json_object_get(ev, "scope") : NULL;
  if (json_is_string(hs)) json_object_set(v->req, "scope", hs);
  if (definition_moved(D, inc->function, inc->definition)) {
    move(D, n, STORE_INC_AWAITING_MODEL, STORE_INC_STALE, err, sizeof err);
    answer(D, v, "stale", "the failing definition changed since the incident was captured: the proposal is "
                          "stale", "stale", NULL);
    verifying_free(v);
    v = NULL;
    goto done;
  }
  if (move(D, n, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, err, sizeof err) != 0) {
    dreply_err(D, client, id, "conflict", "incident %" PRIu64 ": %s", n, err);
    verifying_free(v);
    v = NULL;
    goto done;
  }
  /* the repro is the failed request (its transaction undid its effects);
  ** the replay the calls recorded for the function */
  calls = recorded_calls(D, inc->function);
  size_t nreplay = json_array_size(calls), i;
  const char **replay = calloc(nreplay ? nreplay : 1, sizeof *replay);
  json_t *c;
  json_array_foreach(calls, i, c) if (replay) replay[i] = json_string_value(json_object_get(c, "request"));
  json_t *to = json_object_get(req, "timeout_ms");
  DShadowSpec spec = {json_string_value(json_object_get(req, "source")),
                      json_string_value(json_object_get(ev, "request")), replay, replay ? nreplay : 0,
                      to ? (int64_t)json_integer_value(to) : 0, n};
  if (dshadow_start(D, &spec, verified, v, err, sizeof err) != 0) {
    char e2[CLI_MSG_MAX];
    move(D, n, STORE_INC_VERIFYING, STORE_INC_AWAITING_MODEL, e2, sizeof e2);
    answer(D, v, strstr(err, "shutting down") ? "shutting-down" : strstr(err, "fork gate") ? "not-allowed" : "busy",
           err, "awaiting-model", NULL);
    verifying_free(v);
  }
  free(replay);
done:
  json_decref(calls);
  json_decref(ev);
  store_free(inc);
}

/* ------------------------------------------------------------ the apply */

int drepair_stale(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  uint64_t n = (uint64_t)json_integer_value(json_object_get(req, "incident"));
  store_incident *inc = NULL;
  if (store_incident_get(dstore(D), n, &inc) != STORE_OK) return 0;   /* the publish refuses it */
  int moved = inc->status == STORE_INC_VERIFYING && definition_moved(D, inc->function, inc->definition);
  if (moved) {
    char err[CLI_MSG_MAX];
    Verifying v = {.client = client, .id = id, .incident = n};
    snprintf(v.function, sizeof v.function, "%s", inc->function);
    move(D, n, STORE_INC_VERIFYING, STORE_INC_STALE, err, sizeof err);
    answer(D, &v, "stale", "the failing definition changed before the repair was applied: the proposal is stale",
           "stale", json_object_get(req, "verification"));
  }
  store_free(inc);
  return moved;
}

int drepair_tentative(const Txn *t) {
  const char *p = t->repair ? json_string_value(json_object_get(t->repair, "promote")) : NULL;
  return t->op == PROTO_REPAIR && p && !strcmp(p, "manual");
}

json_t *drepair_reply(const Txn *t, int repaired) {
  if (t->op != PROTO_REPAIR || !t->repair) return NULL;
  json_t *r = json_pack("{s:O, s:s, s:O}", "incident", json_object_get(t->repair, "incident"), "status",
                        !repaired ? "awaiting-model" : drepair_tentative(t) ? "tentative" : "repaired", "function",
                        json_object_get(t->repair, "function"));
  json_t *ver = json_object_get(t->repair, "verification");
  if (r && ver) json_object_set(r, "verification", ver);
  return r;
}

void drepair_apply_ended(Daemon *D, const Txn *t, int published, const char *reason, const char *message) {
  if (t->op != PROTO_REPAIR || !t->repair) return;
  uint64_t n = (uint64_t)json_integer_value(json_object_get(t->repair, "incident"));
  char err[CLI_MSG_MAX];
  if (published) {
    devents_tell_stored(D);   /* the incident's "repaired", written with the revision */
    int tentative = drepair_tentative(t);
    dlog(D, "incident %" PRIu64 ": repaired by revision %" PRIu64 "%s", n, t->revision,
         tentative ? " (tentative: jiti promote or jiti reject)" : "");
    dpark_incident(D, n, STORE_INC_REPAIRED);   /* live either way: waiting calls run on it */
    store_incident *inc = NULL;
    json_t *w = json_object_get(t->repair, "watch");
    unsigned window = json_is_integer(w) ? (unsigned)json_integer_value(w) : REPAIR_WATCH_DEFAULT;
    if (store_incident_get(dstore(D), n, &inc) == STORE_OK) {
      if (tentative) dtentative_started(D, n, inc->function, t->revision);
      dwatch_start(D, n, inc->function, t->revision, window, inc->count);
    }
    store_free(inc);
    return;
  }
  json_t *o = json_pack("{s:b, s:s, s:s}", "passed", 0, "reason", "the apply failed", "error",
                        message && *message ? message : reason ? reason : "?");
  note(D, n, STORE_NOTE_VERIFICATION, o);
  json_decref(o);
  move(D, n, STORE_INC_VERIFYING, STORE_INC_AWAITING_MODEL, err, sizeof err);
}
