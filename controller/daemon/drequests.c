/*
** drequests.c — the daemon's requests (daemon.h, docs/protocol.md
** "Requests"): each line is checked against its op's members and types
** before anything is queued, so a malformed request never reaches the
** worker.  The daemon answers hello, status, history, subscribe and
** shutdown itself; queries (observe, inspect, invariant-list) and
** transactions (call, act, preview, invariant-add, invariant-remove) wait
** for the worker in arrival order.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "jtext.h"
#include "txn.h"
#include "proto.h"

#define NAME_MAX_BYTES 1024
#define HISTORY_DEFAULT 20
#define HISTORY_MAX 1000

typedef struct Req {
  Daemon *D;
  uint64_t client;
  json_t *id, *r;
  proto_Op op;
} Req;

static int is_gen(json_t *g) { return json_is_integer(g) && json_integer_value(g) >= 0; }

static const char *state_name(Daemon *D) {
  if (D->live.in_pause) return "paused";
  if (D->live.w.fd < 0 || D->live.wait == W_START) return "starting";
  if (D->live.cur.active) return D->live.wait == W_COMMIT ? "publishing" : "running";
  if (dgroup_holds(D)) return "publishing";
  /* calls accepted on top of those just committed are still on their way */
  if (!strcmp(D->live.status, txn_status_name(TXN_ST_AWAITING))) return "running";
  return D->live.status;
}

static void queue(Req *q, Queue *to, const char *what) {
  const char *key = dkeys_of(q->r);
  if (key && dkeys_replay(q->D, q->client, q->id, q->r))
    return;  /* it ran before: its outcome again */
  if (key && dkeys_in_flight(q->D, key))
    dreply_err(q->D, q->client, q->id, "busy", "a request with key %.80s is still waiting or running; "
                       "retry shortly to get its outcome", key);
  else if (to->n >= DAEMON_MAX_QUEUE)
    dreply_err(q->D, q->client, q->id, "busy", "too many %s are waiting; retry later", what);
  else if (to == &q->D->txq && q->D->live.in_pause && !json_is_true(json_object_get(q->r, "wait")))
    dsched_reply_paused(q->D, q->client, q->id);  /* it would wait for the pause's answer */
  else if (dqueue_push(to, q->client, q->id, q->r, q->op) == 0)
    dkeys_expect(q->D, q->client, q->id, q->r);
}


/* A string member: required (need) or optional; 0 after an error reply. */
static int string_member(Req *q, const char *key, int need, size_t max, const char **out) {
  json_t *v = json_object_get(q->r, key);
  *out = json_string_value(v);
  if ((!v && !need) || (*out && strlen(*out) <= max && strlen(*out) == json_string_length(v))) return 1;
  const char *op = json_string_value(json_object_get(q->r, "op"));
  if (!op) op = "an act action";  /* members of act's "action" */
  if (!v) dreply_err(q->D, q->client, q->id, "invalid-request", "%s needs \"%s\" (a string)", op, key);
  else dreply_err(q->D, q->client, q->id, "invalid-request", "\"%s\" of %s must be a string of at most %zu bytes "
                    "without NUL characters", key, op, max);
  return 0;
}

/* An optional member that is one of two words: 1, or 0 after answering
** invalid-request (why). */
static int choice_member(Req *q, const char *key, const char *a, const char *b, const char *why) {
  const char *v;
  if (!string_member(q, key, 0, 16, &v)) return 0;
  if (!v || !strcmp(v, a) || !strcmp(v, b)) return 1;
  dreply_err(q->D, q->client, q->id, "invalid-request", "%s", why);
  return 0;
}

/* An optional "origin": where the source was written, {file?, line?,
** column?} (a file's name of at most 4096 bytes, line and column from 1);
** its reader errors and the definitions it makes are placed there. */
static int origin_member(Req *q) {
  json_t *o = json_object_get(q->r, "origin");
  if (!o) return 1;
  const char *op = json_string_value(json_object_get(q->r, "op"));
  if (!op) op = "an act action";
  json_t *f = json_object_get(o, "file"), *l = json_object_get(o, "line"), *c = json_object_get(o, "column");
  const char *key;
  json_t *v;
  int ok = json_is_object(o) && (!f || (json_is_string(f) && json_string_length(f) >= 1 &&
                                        json_string_length(f) <= 4096 &&
                                        strlen(json_string_value(f)) == json_string_length(f)));
  ok = ok && (!l || (json_is_integer(l) && json_integer_value(l) >= 1 && json_integer_value(l) <= INT32_MAX));
  ok = ok && (!c || (json_is_integer(c) && json_integer_value(c) >= 1 && json_integer_value(c) <= INT32_MAX));
  json_object_foreach(o, key, v) if (ok && strcmp(key, "file") && strcmp(key, "line") && strcmp(key, "column")) ok = 0;
  if (ok) return 1;
  dreply_err(q->D, q->client, q->id, "invalid-request",
             "\"origin\" of %s must be {\"file\": a name of 1 to 4096 bytes, \"line\": N, \"column\": N} "
             "(each optional; line and column from 1)", op);
  return 0;
}

/* A pause frame's number (act's "frame"): an integer from 0 to the most a
** pause lists, less one; the worker says whether the pause has it. */
static int frame_member(Req *q, int need) {
  json_t *v = json_object_get(q->r, "frame");
  if (!v && !need) return 1;
  if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < JITI_FRAME_MAX) return 1;
  dreply_err(q->D, q->client, q->id, "invalid-request",
             "%s \"frame\" (a frame number of the pause, 0 to %d: the pause's \"frames\" list them)",
             v ? "a bad" : "an act action of this type needs", JITI_FRAME_MAX - 1);
  return 0;
}

/* Optional "generation": a non-negative integer. */
static int generation_member(Req *q, int need) {
  json_t *g = json_object_get(q->r, "generation");
  if ((!g && !need) || is_gen(g)) return 1;
  dreply_err(q->D, q->client, q->id, "invalid-request",
               need ? "%s needs \"generation\": the generation of the view the action was made from"
                    : "\"generation\" of %s must be a non-negative integer",
               proto_op_name(q->op));
  return 0;
}

/* Optional "key" (call, act): an idempotency key, which needs an "id" to
** tell its reply.  0 after an error reply. */
static int key_member(Req *q) {
  const char *key;
  if (!string_member(q, "key", 0, 200, &key)) return 0;
  if (key && (!*key || !q->id)) {
    dreply_err(q->D, q->client, q->id, "invalid-request",
                       !*key ? "\"key\" must not be empty" : "a request with a \"key\" needs an \"id\"");
    return 0;
  }
  return 1;
}

/* The first member of o that is not in allowed (NULL-terminated), or NULL. */
static const char *unknown_member(json_t *o, const char *const *allowed) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int ok = 0;
    for (int i = 0; allowed[i]; i++) ok |= !strcmp(k, allowed[i]);
    if (!ok) return k;
  }
  return NULL;
}

/* ------------------------------------------------ answered by the kernel */

static void op_hello(Req *q) {
  json_t *p = json_object_get(q->r, "protocol");
  const char *client;
  if (!string_member(q, "client", 0, NAME_MAX_BYTES, &client)) return;
  if (p && !json_is_integer(p)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"protocol\" of hello must be an integer");
    return;
  }
  if (p && json_integer_value(p) != PROTO_VERSION) {
    dreply_err(q->D, q->client, q->id, "unsupported-protocol", "this kernel speaks protocol %d only", PROTO_VERSION);
    return;
  }
  dreply(q->D, q->client, q->id, json_pack("{s:b, s:i, s:s, s:s, s:i}", "ok", 1, "protocol", PROTO_VERSION,
                                             "kernel", JITI_VERSION, "store", q->D->dir, "pid", (int)getpid()));
}

/* The grant: the libraries the kernel was started with, and those of them
** its worker could not open. */
static json_t *foreign_status(Daemon *D) {
  return json_pack("{s:o, s:o}", "granted", grant_json(&D->grant), "failed",
                   D->foreign_failed ? json_incref(D->foreign_failed) : json_array());
}

static void op_status(Req *q) {
  Daemon *D = q->D;
  uint64_t rev, gen;
  dgroup_durable(D, &rev, &gen);   /* not a group still syncing */
  json_t *st =
           json_pack("{s:b, s:s, s:i, s:s, s:i, s:i, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:f, s:b, s:o, s:o, s:o, s:o}",
                     "ok", 1, "kernel", JITI_VERSION, "protocol", PROTO_VERSION, "store", D->dir,
                     "pid", (int)getpid(), "worker_pid", (int)D->live.w.pid, "revision", (json_int_t)rev,
                     "generation", (json_int_t)gen, "state", state_name(D), "queue", (json_int_t)(D->txq.n + D->live.batch.n),
                     "attempts", (json_int_t)D->attempts,
                     "current_attempt", (json_int_t)(D->live.cur.active ? D->live.cur.attempt : 0),
                     "worker_restarts", (json_int_t)D->restarts, "group_commits", (json_int_t)D->group.commits,
                     "group_revisions", (json_int_t)D->group.revisions, "clients", D->nclients,
                     "uptime", daemon_now() - D->started, "stopping", D->stopping, "foreign",
                     foreign_status(D), "counters", dtally_json(D), "events", dretain_json(D), "traffic",
                     dtraffic_json(D));
  json_t *standby = drepl_status(D);   /* a standby: what it has applied, and who leads */
  if (st && standby) json_object_set_new(st, "standby", standby);
  else json_decref(standby);
  dreply(D, q->client, q->id, st);
}

/* The revision chain from CURRENT back, newest first. */
static void op_history(Req *q) {
  Daemon *D = q->D;
  json_t *l = json_object_get(q->r, "limit");
  if (l && !(json_is_integer(l) && json_integer_value(l) >= 1 && json_integer_value(l) <= HISTORY_MAX)) {
    dreply_err(D, q->client, q->id, "invalid-request", "\"limit\" must be an integer from 1 to %d", HISTORY_MAX);
    return;
  }
  size_t limit = l ? (size_t)json_integer_value(l) : HISTORY_DEFAULT;
  json_t *revs = json_array();
  uint64_t rev, gen, cur;
  dgroup_durable(D, &rev, &gen);   /* not a group still syncing */
  cur = rev;
  while (rev && json_array_size(revs) < limit) {
    store_manifest *m;
    if (store_manifest_read(dstore(D), rev, &m) != STORE_OK) {
      json_decref(revs);
      dreply_err(D, q->client, q->id, "store-error", "cannot read revision %" PRIu64 ": %s", rev,
                   store_errmsg(dstore(D)));
      return;
    }
    size_t added, changed, removed;
    storeio_count_changes(m, &added, &changed, &removed);
    char when[40];
    storeio_iso_time(m->time_ms, when, sizeof when);
    json_array_append_new(revs, json_pack("{s:I, s:I, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I}",
                                          "revision", (json_int_t)m->rev, "parent", (json_int_t)m->parent,
                                          "kind", store_rev_kind_name(m->kind), "generation",
                                          (json_int_t)m->generation, "time", when, "summary", m->summary,
                                          "added", (json_int_t)added, "changed", (json_int_t)changed,
                                          "removed", (json_int_t)removed, "entries", (json_int_t)m->nentries));
    rev = m->parent;
    store_free(m);
  }
  dreply(D, q->client, q->id, json_pack("{s:b, s:I, s:o}", "ok", 1, "current", (json_int_t)cur,
                                          "revisions", revs));
}

/* A client's own event (a session's transcript) into the store's events,
** written with the kernel's next group commit.  Only client event kinds
** ("session" and "session-...") are accepted: a client cannot forge the
** kernel's attempt records.  The store keeps a record over 16 KiB as its
** head (docs/store.md, "Events").  With "sync": true the buffered events
** are written before the reply (a client that reads the store next). */
static void op_record(Req *q) {
  json_t *ev = json_object_get(q->r, "event");
  const char *kind = json_string_value(json_object_get(ev, "event"));
  if (!json_is_object(ev) || !kind || (strcmp(kind, "session") && strncmp(kind, "session-", 8))) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"event\" must be an object whose \"event\" "
                       "is \"session\" or starts with \"session-\"");
    return;
  }
  if (json_object_get(ev, "seq") || json_object_get(ev, "time")) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "the store sets \"seq\" and \"time\" of an event");
    return;
  }
  json_t *sync = json_object_get(q->r, "sync");
  if (sync && !json_is_boolean(sync)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"sync\" of record must be true or false");
    return;
  }
  devents_add(q->D, json_deep_copy(ev));
  if (json_is_true(sync)) devents_flush(q->D);  /* written (with what was buffered) before the reply */
  dreply(q->D, q->client, q->id, json_pack("{s:b}", "ok", 1));
}

/* repair-policy: the rules of automatic repair, changed in the store now
** (a write of its own, after the writer's: it is no transaction). */
static void op_repair_policy(Req *q) {
  char code[32], err[CLI_MSG_MAX];
  json_t *r = repairpol_apply(dstore(q->D), q->r, code, sizeof code, err, sizeof err);
  if (!r) {
    dreply_err(q->D, q->client, q->id, code, "%s", err);
    return;
  }
  const char *action = json_string_value(json_object_get(q->r, "action"));
  if (repairpol_action_parse(action) != REPAIRPOL_LIST) {
    dlog(q->D, "repair policy: %s %s", action, json_string_value(json_object_get(q->r, "selector")));
    dincident_policy_changed(q->D);
    json_t *id;
    size_t i;
    json_array_foreach(json_object_get(r, "cancelled"), i, id)
      dpark_incident(q->D, (uint64_t)json_integer_value(id), STORE_INC_CANCELLED);
    dtraffic_policy_changed(q->D);   /* nothing more of a function disabled is written */
  }
  dreply(q->D, q->client, q->id, r);
}

static int txn_members(Req *q);

/* An incident's number: a positive integer (required).  0 after an
** error reply. */
static int incident_member(Req *q) {
  json_t *v = json_object_get(q->r, "incident");
  if (json_is_integer(v) && json_integer_value(v) > 0) return 1;
  dreply_err(q->D, q->client, q->id, "invalid-request", "%s needs \"incident\": an incident's number (jiti "
             "incidents lists them)", proto_op_name(q->op));
  return 0;
}

/* incident: read it, move it (from -> to), log an exchange (note). */
static void op_incident(Req *q) {
  const char *from, *to;
  if (!incident_member(q) || !string_member(q, "from", 0, 64, &from) || !string_member(q, "to", 0, 64, &to)) return;
  if ((from && store_incident_status_parse(from) <= 0) || (to && store_incident_status_parse(to) <= 0) ||
      !from != !to) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "a move needs both \"from\" and \"to\", each a status "
               "(captured, awaiting-model, rejected, declined-expected, declined-insufficient-evidence, stale, "
               "cancelled, failed ...)");
    return;
  }
  json_t *n = json_object_get(q->r, "note"), *t = json_object_get(q->r, "traffic");
  const char *bad = json_is_object(n) ? unknown_member(n, (const char *const[]){"kind", "entry", NULL}) : NULL;
  const char *kind = json_string_value(json_object_get(n, "kind"));
  if (n && (!json_is_object(n) || bad || !kind || strcmp(kind, "exchange") || !json_is_object(json_object_get(n, "entry")))) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"note\" must be {\"kind\": \"exchange\", \"entry\": "
               "{...}} (a model exchange; the kernel writes the verifications)");
    return;
  }
  if (t && !json_is_boolean(t)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"traffic\" of incident must be true or false");
    return;
  }
  drepair_incident(q->D, q->client, q->id, q->r);
}

/* incidents: the incidents in some statuses (all), newest first. */
static void op_incidents(Req *q) {
  json_t *st = json_object_get(q->r, "status"), *lim = json_object_get(q->r, "limit"), *s;
  size_t i;
  int ok = !st || (json_is_array(st) && json_array_size(st) <= 16);
  json_array_foreach(st, i, s) ok = ok && store_incident_status_parse(json_string_value(s)) > 0;
  if (!ok) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"status\" of incidents must be an array of statuses "
               "(captured, awaiting-model, verifying, repaired, rejected, declined-expected, "
               "declined-insufficient-evidence, stale, cancelled, failed, interrupted, tentative)");
    return;
  }
  if (lim && !(json_is_integer(lim) && json_integer_value(lim) >= 1 && json_integer_value(lim) <= 100000)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"limit\" of incidents must be an integer from 1 to "
               "100000");
    return;
  }
  drepair_incidents(q->D, q->client, q->id, q->r);
}

/* repair: a candidate for an incident awaiting the model, verified on a
** shadow of the live worker and applied when it passes. */
static void op_repair(Req *q) {
  const char *s;
  json_t *ic = json_object_get(q->r, "intended_changes"), *to = json_object_get(q->r, "timeout_ms");
  if (!incident_member(q) || !string_member(q, "source", 1, PROTO_LINE_MAX, &s) ||
      !string_member(q, "reason", 0, 4096, &s) || !string_member(q, "response_id", 0, STORE_RESPONSE_MAX, &s) ||
      !choice_member(q, "scope", "function", "world",
                     "\"scope\" of repair must be \"function\" (the default: the candidate may change the failing "
                     "function only) or \"world\"") ||
      !choice_member(q, "promote", "auto", "manual",
                     "\"promote\" of repair must be \"auto\" (the default: repaired at once) or \"manual\" (the "
                     "repair stays tentative until jiti promote or jiti reject)"))
    return;
  if (ic && !json_is_null(ic) && !(json_is_string(ic) && json_string_length(ic) <= 4096)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"intended_changes\" must be null or a string of at most "
               "4096 bytes (the recorded results the repair changes on purpose, and why)");
    return;
  }
  json_t *w = json_object_get(q->r, "watch");
  if (w && !(json_is_integer(w) && json_integer_value(w) >= 0 && json_integer_value(w) <= 1000000)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"watch\" of repair must be an integer from 0 (no "
               "watch) to 1000000: the calls watched after the repair");
    return;
  }
  if (to && !(json_is_integer(to) && json_integer_value(to) >= 1 && json_integer_value(to) <= 3600000)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"timeout_ms\" of repair must be an integer from 1 to "
               "3600000");
    return;
  }
  if (!txn_members(q)) return;
  drepair_start(q->D, q->client, q->id, q->r);
}

/* heal: an operator's explicit repair request, an incident of kind
** explicit (dheal.c). */
static void op_heal(Req *q) {
  const char *fn, *problem, *repro, *expect;
  if (!string_member(q, "function", 1, STORE_NAME_MAX, &fn) || !string_member(q, "problem", 1, 4096, &problem) ||
      !string_member(q, "repro", 0, 16384, &repro) || !string_member(q, "expect", 0, 16384, &expect) ||
      !choice_member(q, "scope", "function", "world",
                     "\"scope\" of heal must be \"function\" (the default: a candidate may change the function "
                     "only) or \"world\""))
    return;
  if (!*problem || (repro && !*repro) || (expect && !*expect)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"problem\", \"repro\" and \"expect\" of heal must not "
               "be empty: say what is wrong, and give a form to run and the value it should return");
    return;
  }
  if (expect && !repro) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"expect\" of heal needs a \"repro\": the form whose "
               "value is compared with it");
    return;
  }
  dheal_open(q->D, q->client, q->id, q->r);
}

/* repairs: the tentative repairs (action list, the default), or one
** promoted or rejected (dtentative.c). */
static void op_repairs(Req *q) {
  const char *action;
  if (!string_member(q, "action", 0, 16, &action)) return;
  if (action && strcmp(action, "list") && strcmp(action, "promote") && strcmp(action, "reject")) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"action\" of repairs must be \"list\" (the default), "
               "\"promote\" or \"reject\"");
    return;
  }
  int one = action && strcmp(action, "list");
  if (one && !incident_member(q)) return;
  if (!one && json_object_get(q->r, "incident")) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"incident\" of repairs goes with \"action\": "
               "\"promote\" or \"reject\"");
    return;
  }
  dtentative_op(q->D, q->client, q->id, q->r);
}

/* verify: a candidate verified on a shadow of the live worker (dshadow.c),
** its report the reply; nothing changes in the world.  The reply waits for
** the shadow: its client is found again by its serial. */
typedef struct Verify { uint64_t client; json_t *id; } Verify;

static void verified(Daemon *D, void *arg, json_t *report, const char *err) {
  Verify *v = arg;
  if (report)
    dreply(D, v->client, v->id, json_pack("{s:b, s:O, s:I}", "ok", 1, "report", report, "generation",
                                          (json_int_t)D->gen));
  else
    dreply_err(D, v->client, v->id,
               proto_code_name(!strncmp(err, "timeout:", 8) ? PROTO_TIMEOUT
                               : strstr(err, "shutting down") ? PROTO_SHUTTING_DOWN : PROTO_INTERRUPTED),
               "%s", err);
  json_decref(v->id);
  free(v);
}

static void op_verify(Req *q) {
  Daemon *D = q->D;
  const char *defs, *repro;
  if (!string_member(q, "definitions", 1, PROTO_LINE_MAX, &defs) || !string_member(q, "repro", 0, PROTO_LINE_MAX, &repro))
    return;
  json_t *rp = json_object_get(q->r, "replay"), *src, *t = json_object_get(q->r, "timeout_ms");
  size_t i, n = json_array_size(rp);
  int ok = !rp || (json_is_array(rp) && n <= DSHADOW_REPLAY_MAX);
  json_array_foreach(rp, i, src) ok = ok && json_is_string(src) && strlen(json_string_value(src)) == json_string_length(src);
  if (!ok) {
    dreply_err(D, q->client, q->id, "invalid-request", "\"replay\" of verify must be an array of at most %d strings "
               "(the sources of recorded requests, without NUL characters)", DSHADOW_REPLAY_MAX);
    return;
  }
  if (t && !(json_is_integer(t) && json_integer_value(t) >= 1 && json_integer_value(t) <= DSHADOW_TIMEOUT_MAX)) {
    dreply_err(D, q->client, q->id, "invalid-request", "\"timeout_ms\" of verify must be an integer from 1 to %d "
               "(default %d)", DSHADOW_TIMEOUT_MAX, DSHADOW_TIMEOUT_DEFAULT);
    return;
  }
  const char **sources = calloc(n ? n : 1, sizeof *sources);
  Verify *v = calloc(1, sizeof *v);
  char err[400];
  if (!sources || !v) {
    free(sources);
    free(v);
    dreply_err(D, q->client, q->id, "busy", "the kernel is out of memory; retry later");
    return;
  }
  json_array_foreach(rp, i, src) sources[i] = json_string_value(src);
  DShadowSpec spec = {defs, repro, sources, n, t ? json_integer_value(t) : 0, 0};
  v->client = q->client;
  v->id = q->id ? json_incref(q->id) : NULL;
  int rc = dshadow_start(D, &spec, verified, v, err, sizeof err);
  free(sources);
  if (rc != 0) {
    dreply_err(D, q->client, q->id, strstr(err, "shutting down") ? "shutting-down" : strstr(err, "retry") ? "busy"
                                    : strstr(err, "fork gate") ? "not-allowed" : "invalid-request", "%s", err);
    json_decref(v->id);
    free(v);
  }
}

static void op_subscribe(Req *q) {
  Client *c = dclients_find(q->D, q->client);
  if (c && !c->subscribed) {
    c->subscribed = 1;
    q->D->subscribers++;
    devents_subscribed(q->D);
  }
  dreply(q->D, q->client, q->id, json_pack("{s:b, s:b}", "ok", 1, "subscribed", 1));
}

static void op_shutdown(Req *q) {
  dreply(q->D, q->client, q->id, json_pack("{s:b, s:s}", "ok", 1, "message", "shutting down"));
  q->D->stop_why = "shutdown request";  /* the loop begins the shutdown */
}

/* cancel: the running transaction (optionally the attempt named), at the
** worker's next evaluation step; its own reply says `cancelled`.
** interrupt: the same, but it pauses there (its client gets the pause). */
static void op_cancel(Req *q) {
  const char *op = proto_op_name(q->op);
  json_t *a = json_object_get(q->r, "attempt");
  if (a && !(json_is_integer(a) && json_integer_value(a) > 0)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"attempt\" of %s must be a positive integer "
               "(status shows current_attempt)", op);
    return;
  }
  uint64_t attempt = a ? (uint64_t)json_integer_value(a) : 0;
  /* "key": the running transaction only if its request carried that
  ** idempotency key (a client stopping its own call: jiti eval's Ctrl-C) */
  json_t *key = json_object_get(q->r, "key");
  Txn *t = &q->D->live.cur;
  if (key && (!json_is_string(key) || !json_string_length(key))) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"key\" of %s must be a non-empty string (the "
               "idempotency key of the call to stop)", op);
    return;
  }
  if (key && t->active) {
    json_t *probe = json_pack("{s:O}", "key", key);
    events_Key *k = probe ? events_key_new(probe) : NULL;
    int same = k && t->key && !strcmp(k->key, t->key->key);
    free(k);
    json_decref(probe);
    if (!same) {
      dreply_err(q->D, q->client, q->id, "not-found", "the running transaction (attempt %" PRIu64 ") is not the "
                 "request with that key: it waits in the queue, or is over; nothing was %s", t->attempt,
                 q->op == PROTO_INTERRUPT ? "interrupted" : "cancelled");
      return;
    }
  }
  char why[400];
  const char *code = q->op == PROTO_INTERRUPT ? dsched_interrupt(q->D, attempt, why, sizeof why)
                                              : dsched_cancel(q->D, attempt, why, sizeof why);
  if (code) {
    dreply_err(q->D, q->client, q->id, code, "%s", why);
    return;
  }
  dreply(q->D, q->client, q->id, json_pack("{s:b, s:I}", "ok", 1, "attempt", (json_int_t)q->D->live.cur.attempt));
}

/* ---------------------------------------------------- answered by the worker */

/* observe's optional "goals": at most OBSERVE_GOALS_MAX sources, each one
** string of at most GOAL_SOURCE_MAX bytes without NUL characters. */
#define OBSERVE_GOALS_MAX 64
#define GOAL_SOURCE_MAX 16384

static void op_observe(Req *q) {
  json_t *b = json_object_get(q->r, "budget");
  if (b && !(json_is_integer(b) && json_integer_value(b) > 0 && json_integer_value(b) <= (16 << 20))) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"budget\" must be a byte count from 1 to 16777216");
    return;
  }
  json_t *g = json_object_get(q->r, "goals"), *src;
  size_t i;
  int ok = !g || (json_is_array(g) && json_array_size(g) <= OBSERVE_GOALS_MAX);
  json_array_foreach(g, i, src) ok = ok && json_is_string(src) && json_string_length(src) <= GOAL_SOURCE_MAX &&
                                     strlen(json_string_value(src)) == json_string_length(src);
  if (!ok) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"goals\" must be an array of at most %d "
                       "strings (Lisp sources of at most %d bytes)", OBSERVE_GOALS_MAX, GOAL_SOURCE_MAX);
    return;
  }
  queue(q, &q->D->queryq, "requests");
}

static void op_inspect(Req *q) {
  const char *kind, *name;
  if (!string_member(q, "kind", 0, 32, &kind) || !string_member(q, "name", 1, NAME_MAX_BYTES, &name)) return;
  if (kind && jiti_entry_kind_parse(kind) < 0) {
    char kinds[512] = "";   /* the kernel's names, its one table */
    for (int k = 0, n = 0; k < JITI_ENTRY_KIND_COUNT && n < (int)sizeof kinds; k++)
      n += snprintf(kinds + n, sizeof kinds - (size_t)n, "%s%s", k ? ", " : "", jiti_entry_kind_name((jiti_EntryKind)k));
    dreply_err(q->D, q->client, q->id, "invalid-request", "unknown entry kind '%.40s' (%s)", kind, kinds);
    return;
  }
  queue(q, &q->D->queryq, "requests");
}

static void op_invariant_list(Req *q) { queue(q, &q->D->queryq, "requests"); }

/* complete: the symbols that begin with "text" (a line editor's Tab),
** answered by the worker between transactions. */
static void op_complete(Req *q) {
  const char *text;
  if (!string_member(q, "text", 1, 256, &text)) return;
  queue(q, &q->D->queryq, "requests");
}

/* The members every transaction may have: "generation" (the view it was
** made from), "limits" (its own limits: within the kernel's, or any for the
** operator's requests; replaced by the whole set the worker gets) and
** "wait" (wait behind a pause instead of being answered "paused"). */
static int txn_members(Req *q) {
  Daemon *D = q->D;
  if (!generation_member(q, q->op == PROTO_ACT)) return 0;
  json_t *w = json_object_get(q->r, "wait");
  if (w && !json_is_boolean(w)) {
    dreply_err(D, q->client, q->id, "invalid-request", "\"wait\" of %s must be true or false",
                       proto_op_name(q->op));
    return 0;
  }
  json_t *l = json_object_get(q->r, "limits");
  if (!l) return 1;
  int operator = q->op == PROTO_APPLY || q->op == PROTO_INVARIANT_ADD || q->op == PROTO_INVARIANT_REMOVE ||
                 q->op == PROTO_ROLLBACK || q->op == PROTO_REPAIR;
  jiti_Limits lim;
  char err[300];
  if (limits_from_json(l, &D->limits.eval, 0, &lim, err, sizeof err) != 0) {
    dreply_err(D, q->client, q->id, "invalid-request", "%s", err);
    return 0;
  }
  if (!operator && limits_from_json(l, &D->limits.eval, 1, &lim, err, sizeof err) != 0) {
    dreply_err(D, q->client, q->id, "not-allowed", "%s", err);
    return 0;
  }
  json_object_set_new(q->r, "limits", limits_json(&lim));
  return 1;
}

static void op_call(Req *q) {  /* call, preview and apply */
  const char *source, *summary, *package;
  if (!string_member(q, "source", 1, PROTO_LINE_MAX, &source) || !txn_members(q) ||
      !string_member(q, "package", 0, NAME_MAX_BYTES, &package) || !origin_member(q))
    return;
  if (q->op == PROTO_CALL && !key_member(q)) return;
  if (q->op == PROTO_APPLY && !string_member(q, "summary", 0, NAME_MAX_BYTES, &summary)) return;
  json_t *p = json_object_get(q->r, "program");
  if (p && !json_is_boolean(p)) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"program\" of call must be true or false");
    return;
  }
  json_t *l = json_object_get(q->r, "listening");
  if (l && (!json_is_boolean(l) || (json_is_true(l) && json_is_true(p)))) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "\"listening\" of call must be true or false, and "
               "a listener's call is one form (not \"program\")");
    return;
  }
  if (!choice_member(q, "on_disconnect", "cancel", "keep",
                     "\"on_disconnect\" of call must be \"cancel\" (the default: a call whose client leaves is "
                     "cancelled) or \"keep\"") ||
      !choice_member(q, "on_error", "fail", "pause",
                     "\"on_error\" of call must be \"fail\" (the default: an unhandled error ends the call, and "
                     "the reply says why) or \"pause\" (it pauses, as an act does)"))
    return;
  queue(q, &q->D->txq, "transactions");
}

static void op_invariant_add(Req *q) {
  const char *name, *source;
  if (!string_member(q, "name", 1, NAME_MAX_BYTES, &name) ||
      !string_member(q, "source", 1, PROTO_LINE_MAX, &source) || !txn_members(q))
    return;
  if (!*name) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "an invariant needs a non-empty \"name\"");
    return;
  }
  queue(q, &q->D->txq, "transactions");
}

static void op_invariant_remove(Req *q) {
  const char *name;
  if (!string_member(q, "name", 1, NAME_MAX_BYTES, &name) || !txn_members(q)) return;
  queue(q, &q->D->txq, "transactions");
}

static void op_rollback(Req *q) {
  json_t *r = json_object_get(q->r, "revision");
  if (!json_is_integer(r) || json_integer_value(r) < 1) {
    dreply_err(q->D, q->client, q->id, "invalid-request", "rollback needs \"revision\": a revision from 1 "
                       "to CURRENT (%" PRIu64 ")", q->D->revision);
    return;
  }
  if ((uint64_t)json_integer_value(r) > q->D->revision) {
    dreply_err(q->D, q->client, q->id, "not-found", "no revision %" JSON_INTEGER_FORMAT " (CURRENT is %" PRIu64
                       ")", json_integer_value(r), q->D->revision);
    return;
  }
  if (!txn_members(q)) return;
  queue(q, &q->D->txq, "transactions");
}

/* act: one action of the model-facing protocol.  evaluate starts a transaction, or
** is a repair when something is paused; resume and abort need a pause. */
static void op_act(Req *q) {
  Daemon *D = q->D;
  json_t *a = json_object_get(q->r, "action");
  const char *type = json_string_value(json_object_get(a, "type"));
  if (!txn_members(q) || !key_member(q)) return;
  if (!json_is_object(a) || !type) {
    dreply_err(D, q->client, q->id, "invalid-request",
                 "act needs \"action\": {\"type\": \"evaluate\"|\"resume\"|\"abort\"|\"return-from-frame\"|"
                 "\"restart-frame\", ...}");
    return;
  }
  /* each action's members, by txn_CmdType */
  static const char *const members[TXN_CMD_COUNT][6] = {
      [TXN_CMD_EVALUATE] = {"type", "source", "package", "frame", "origin"}, [TXN_CMD_RESUME] = {"type", "restart_id", "arguments"},
      [TXN_CMD_ABORT] = {"type"}, [TXN_CMD_RETURN_FROM_FRAME] = {"type", "frame", "arguments"},
      [TXN_CMD_RESTART_FRAME] = {"type", "frame"}};
  int t = txn_cmd_parse(type);
  if (t < 0) {
    dreply_err(D, q->client, q->id, "invalid-request",
               "unknown action type '%.40s' (evaluate, resume, abort, return-from-frame or restart-frame)", type);
    return;
  }
  const char *bad = unknown_member(a, members[t]);
  if (bad) {
    dreply_err(D, q->client, q->id, "invalid-request", "unknown member '%.100s' in a %s action", bad, type);
    return;
  }
  Req in = {D, q->client, q->id, a, PROTO_ACT};
  const char *s;
  int pause_cmd = 1;
  if (t == TXN_CMD_EVALUATE) {
    if (!string_member(&in, "source", 1, PROTO_LINE_MAX, &s) ||
        !string_member(&in, "package", 0, NAME_MAX_BYTES, &s) || !frame_member(&in, 0) || !origin_member(&in))
      return;
    /* a repair when something is paused; in a frame, only then */
    pause_cmd = D->live.in_pause || json_object_get(a, "frame");
  } else if (t == TXN_CMD_RESUME) {
    if (!string_member(&in, "restart_id", 1, 64, &s) || !string_member(&in, "arguments", 0, PROTO_LINE_MAX, &s)) return;
  } else if (t == TXN_CMD_RETURN_FROM_FRAME) {
    if (!frame_member(&in, 1) || !string_member(&in, "arguments", 0, PROTO_LINE_MAX, &s)) return;
  } else if (t == TXN_CMD_RESTART_FRAME) {
    if (!frame_member(&in, 1)) return;
  }
  if (pause_cmd && !D->live.in_pause)
    dreply_err(D, q->client, q->id, "not-paused", "no transaction is paused; %s needs a pause (observe to see "
                 "the status)", type);
  else
    queue(q, pause_cmd ? &D->cmdq : &D->txq, "requests");
}

/* A connection in a reserved slot asks for more than status or stop:
** answered busy, and closed.  1 when it was. */
static int reserved_refuses(Daemon *D, Client *c, proto_Op op, json_t *id) {
  if (!c->reserved || op == PROTO_HELLO || op == PROTO_STATUS || op == PROTO_SHUTDOWN) return 0;
  dreply_err(D, c->serial, id, "busy",
                     "the kernel serves %d clients (its --max-clients); this connection may only ask for "
                     "status or stop; retry later", D->max_clients);
  c->closing = 1;
  return 1;
}

void drequests_too_long(Daemon *D, Client *c, int unended) {
  if (unended)
    dreply_err(D, c->serial, NULL, "line-too-long", "a request line is at most %zu bytes; closing the connection",
               PROTO_LINE_MAX);
  else
    dreply_err(D, c->serial, NULL, "line-too-long", "a request line is at most %zu bytes", PROTO_LINE_MAX);
  c->closing = 1;
}

/* ------------------------------------------------------------ dispatch */

typedef struct Op {
  void (*handle)(Req *q);
  const char *members[13];  /* op, id and its own; NULL-terminated */
} Op;

/* Indexed by proto_Op; an op without a handler is unknown to this daemon. */
static const Op ops[PROTO_OP_COUNT] = {
    [PROTO_HELLO] = {op_hello, {"op", "id", "protocol", "client"}},
    [PROTO_STATUS] = {op_status, {"op", "id"}},
    [PROTO_OBSERVE] = {op_observe, {"op", "id", "budget", "goals"}},
    [PROTO_INSPECT] = {op_inspect, {"op", "id", "kind", "name"}},
    [PROTO_COMPLETE] = {op_complete, {"op", "id", "text"}},
    [PROTO_HISTORY] = {op_history, {"op", "id", "limit"}},
    [PROTO_SUBSCRIBE] = {op_subscribe, {"op", "id"}},
    [PROTO_CALL] = {op_call, {"op", "id", "key", "source", "generation", "limits", "wait", "program", "package",
                               "on_disconnect", "on_error", "listening", "origin"}},
    [PROTO_PREVIEW] = {op_call, {"op", "id", "source", "generation", "limits", "wait", "package", "origin"}},
    [PROTO_ACT] = {op_act, {"op", "id", "key", "generation", "action", "limits"}},
    [PROTO_APPLY] = {op_call, {"op", "id", "source", "summary", "generation", "limits", "wait", "origin"}},
    [PROTO_INVARIANT_ADD] = {op_invariant_add, {"op", "id", "name", "source", "generation", "limits", "wait"}},
    [PROTO_INVARIANT_REMOVE] = {op_invariant_remove, {"op", "id", "name", "generation", "limits", "wait"}},
    [PROTO_INVARIANT_LIST] = {op_invariant_list, {"op", "id"}},
    [PROTO_ROLLBACK] = {op_rollback, {"op", "id", "revision", "generation", "limits", "wait"}},
    [PROTO_RECORD] = {op_record, {"op", "id", "event", "sync"}},
    [PROTO_SHUTDOWN] = {op_shutdown, {"op", "id"}},
    [PROTO_CANCEL] = {op_cancel, {"op", "id", "attempt", "key"}},
    [PROTO_INTERRUPT] = {op_cancel, {"op", "id", "attempt", "key"}},
    [PROTO_REPAIR_POLICY] = {op_repair_policy, {"op", "id", "action", "selector", "mode", "expected"}},
    [PROTO_INCIDENT] = {op_incident, {"op", "id", "incident", "from", "to", "note", "traffic"}},
    [PROTO_INCIDENTS] = {op_incidents, {"op", "id", "status", "limit"}},
    [PROTO_REPAIR] = {op_repair, {"op", "id", "incident", "source", "reason", "intended_changes", "response_id",
                                   "scope", "timeout_ms", "watch", "limits", "promote"}},
    [PROTO_HEAL] = {op_heal, {"op", "id", "function", "problem", "repro", "expect", "scope"}},
    [PROTO_REPAIRS] = {op_repairs, {"op", "id", "action", "incident"}},
    [PROTO_VERIFY] = {op_verify, {"op", "id", "definitions", "repro", "replay", "timeout_ms"}},
};

/* The ops this daemon serves, for messages. */
static void op_names(char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < PROTO_OP_COUNT && at < n; i++)
    if (ops[i].handle) at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", proto_op_name(i));
}

void drequests_handle(Daemon *D, Client *c, const char *line, size_t len) {
  uint64_t cs = c->serial;
  if (!jtext_utf8_valid(line, len)) {
    dreply_err(D, cs, NULL, "invalid-utf8", "the request is not valid UTF-8");
    return;
  }
  json_error_t je;
  json_t *r = jtext_load(line, len, JSON_REJECT_DUPLICATES, &je);   /* json_loadb, faster */
  if (!r) {
    dreply_err(D, cs, NULL, "malformed-json", "the request is not valid JSON: %s (column %d)", je.text, je.column);
    return;
  }
  json_t *id = json_object_get(r, "id");
  const char *name = json_string_value(json_object_get(r, "op"));
  int opn = proto_op_parse(name);
  const Op *op = opn >= 0 && ops[opn].handle ? &ops[opn] : NULL;
  const char *bad;
  char names[400];
  if (!json_is_object(r)) {
    dreply_err(D, cs, NULL, "invalid-request", "a request is one JSON object with an \"op\" member");
  } else if (id && !json_is_string(id) && !json_is_integer(id)) {
    dreply_err(D, cs, NULL, "invalid-request", "\"id\" must be a string or an integer");
  } else if (!name) {
    op_names(names, sizeof names);
    dreply_err(D, cs, id, "invalid-request", "the request has no \"op\" (a string: %s)", names);
  } else if (!op) {
    op_names(names, sizeof names);
    dreply_err(D, cs, id, "unknown-op", "unknown op '%.100s' (%s)", name, names);
  } else if (reserved_refuses(D, c, (proto_Op)opn, id)) {
    /* answered */
  } else if ((D->stopping || D->stop_why) && opn != PROTO_HELLO && opn != PROTO_STATUS) {
    if (D->fence_lost)   /* the world went on without this kernel: the request belongs to the leader */
      dreply_err(D, cs, id, "fenced", "%s; nothing ran: send it to the world's leader", D->fence_why);
    else
      dreply_err(D, cs, id, "shutting-down", "the kernel is shutting down");
  } else if ((bad = unknown_member(r, op->members))) {
    dreply_err(D, cs, id, "invalid-request", "unknown member '%.100s' in %s", bad, name);
  } else if (!drepl_refuses(D, cs, id, opn, r, &opn)) {   /* (a standby serves reads only) */
    Req q = {D, cs, id, r, (proto_Op)opn};
    op->handle(&q);
  }
  json_decref(r);
}
