/*
** otxn.c — a transaction on a store that no kernel serves (offline.h): the
** same engine the kernel daemon runs, driven synchronously.  A sandboxed
** worker starts from the revision (workerproc.h) and runs the form under
** the gate, the limits of the limits table and the invariants (worker/txn.h);
** what it accepts is published by the same publish step (engine.h), with
** the attempt's events; then the worker commits or restores and exits.
** Every frame of the worker is checked first, as the kernel checks them
** (engine.h vouch_): one that breaks a rule ends the worker, and nothing of
** it is published.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "offline.h"
#include "txn.h"

int otxn_open(otxn *t, const char *cmd, const char *dir, const limits_Table *L, const grant_List *g) {
  memset(t, 0, sizeof *t);
  t->cmd = cmd;
  t->w.fd = t->w.report = -1;
  if (L) t->limits = *L;
  else limits_default(&t->limits);
  if (g) t->grant = *g;
  grant_manifest(&t->grant, t->grant_text, sizeof t->grant_text);
  t->vouch.grant = &t->grant;
  t->s = ostore_open(cmd, dir, 1);
  if (!t->s) return EXIT_FAIL;
  if (store_current(t->s, &t->parent) != STORE_OK || store_generation(t->s, &t->generation) != STORE_OK) {
    fprintf(stderr, "jiti %s: %s\n", cmd, store_errmsg(t->s));
    return EXIT_FAIL;
  }
  if (t->parent == 0) {
    fprintf(stderr, "jiti %s: the store at %s has no revisions yet (run 'jiti init --store %s')\n",
            cmd, store_path(t->s), store_path(t->s));
    return EXIT_FAIL;
  }
  return EXIT_OK;
}

/* Record the attempt's outcome (not accepted: that one goes with its
** revision). */
static void record_outcome(otxn *t, const char *reason, const char *message) {
  if (!t->attempt || t->outcome_written) return;
  ostore_event(t->s, t->cmd, events_outcome(t->attempt, proto_op_name(t->op), reason, message));
  t->outcome_written = 1;
}

/* The worker broke a frame rule: it is killed, and what it sent counts for
** nothing.  why receives the message for the caller (the rule only). */
static void violation(otxn *t, const vouch_Fail *f, char *why, size_t n) {
  fprintf(stderr, "jiti %s: the worker broke the frame rule %s (%s); killing it\n", t->cmd, f->rule, f->detail);
  wproc_stop(&t->w, 1);
  snprintf(why, n, "the worker broke the frame rule %s and was killed; nothing was published", f->rule);
}

int otxn_start(otxn *t, json_t *req, uint64_t rev, int current_invariants) {
  t->req = req;
  t->op = (proto_Op)proto_op_parse(json_string_value(json_object_get(req, "op")));
  t->attempt = storeio_next_attempt(t->s);
  char src[1024];
  request_brief(t->op, req, src, sizeof src);
  ostore_event(t->s, t->cmd, events_started(t->attempt, proto_op_name(t->op), src, t->parent, t->generation));
  /* The worker counts from the store's mark: what it publishes gets the
  ** next generation.  Nobody sees the generation it starts with. */
  wproc_Plan plan = {rev == t->parent ? STORE_REV_CURRENT : rev, current_invariants, t->parent, t->generation,
                     &t->limits.eval, &t->grant, 1, 0};
  char err[1024];
  json_t *ready = NULL;
  if (wproc_start(&t->w, t->s, &plan, &ready, err, sizeof err) != 0) {
    fprintf(stderr, "jiti %s: the world of revision %" PRIu64 " of the store at %s cannot be rebuilt: %s\n"
            "nothing was changed (run 'jiti recover-session --store %s')\n", t->cmd, rev, store_path(t->s), err,
            store_path(t->s));
    record_outcome(t, txn_reason_name(TXN_ERROR), err);
    return EXIT_FAIL;
  }
  vouch_Fail f;
  if (vouch_ready(ready, t->generation, &t->grant, &f) != 0) {
    violation(t, &f, err, sizeof err);
    fprintf(stderr, "jiti %s: %s; nothing was changed\n", t->cmd, err);
    record_outcome(t, store_event_name(STORE_EV_INTERRUPTED), err);
    json_decref(ready);
    return EXIT_FAIL;
  }
  const char *st = json_string_value(json_object_get(ready, "status"));
  t->faulted = st && !strcmp(st, txn_status_name(TXN_ST_FAULTED));
  /* a world that starts faulted (an invariant fails: a foreign function
  ** not granted, say) has moved one generation past its base */
  json_int_t g = json_integer_value(json_object_get(ready, "generation"));
  if (g > 0 && (uint64_t)g > t->generation) t->generation = (uint64_t)g;
  if (t->faulted) {
    const char *msg = json_string_value(json_object_get(ready, "message"));
    snprintf(t->fault, sizeof t->fault, "%s", msg ? msg : "an invariant fails");
  }
  json_decref(ready);
  return EXIT_OK;
}

/* The reply to the caller, as the kernel gives it (docs/protocol.md): on
** failure {ok:false, code, outcome, message, generation, revision, output?}. */
static json_t *failure(otxn *t, const char *reason, const char *message, json_t *output) {
  reply_Outcome r = {.reason = reason, .message = message, .generation = t->generation, .revision = t->parent,
                     .show_revision = 1, .output = output};
  return reply_object(&r);
}

json_t *otxn_refuse(otxn *t, const char *reason, const char *message) {
  record_outcome(t, reason, message);
  return failure(t, reason, message, NULL);
}

json_t *otxn_run(otxn *t) {
  char err[1024], summary[200];
  request_summary(t->op, t->req, summary, sizeof summary);
  json_t *frame = request_frame(t->op, t->req, 1, t->generation);
  if (!frame || wproc_send(&t->w, frame, NULL, 0) != 0) return otxn_refuse(t, txn_reason_name(TXN_ERROR), "the worker is gone");
  json_t *m = NULL;
  unsigned char *blob = NULL;
  size_t bloblen = 0;
  /* what the worker may answer: the kernel's count of its generation */
  vouch_Expect x = {.op = t->op, .invariant = json_string_value(json_object_get(t->req, "name")),
                    .gen = t->generation, .steps = t->faulted ? 3u : 1u, .pausable = t->op == PROTO_ACT,
                    .with_gen = 1};
  vouch_Fail f;
  for (;;) {  /* nobody answers a pause here: abort it (an operator's request never pauses) */
    if (wproc_recv(&t->w, &m, &blob, &bloblen, err, sizeof err) != 0)
      return otxn_refuse(t, store_event_name(STORE_EV_INTERRUPTED), err);
    if (wire_event_of(m) != WIRE_PAUSED) break;
    vouch_Expect px = x;
    px.steps = x.pause_no ? 0u : 2u;   /* a pause moves the generation once; after an abort, none comes */
    if (vouch_paused(m, &px, &f) != 0) {
      violation(t, &f, err, sizeof err);
      json_decref(m);
      return otxn_refuse(t, store_event_name(STORE_EV_INTERRUPTED), err);
    }
    json_t *p = json_object_get(m, "pause");
    x.gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
    x.pause_no = x.pause_max = (int)json_integer_value(json_object_get(p, "pause"));
    x.steps = 2u;   /* the abort restores */
    wproc_send(&t->w, wframe_command(txn_cmd_name(TXN_CMD_ABORT), json_object_get(p, "generation"), NULL), NULL, 0);
    json_decref(m);
  }
  if (wire_event_of(m) != WIRE_OUTCOME) {
    f.rule = VOUCH_EVENT;
    snprintf(f.detail, sizeof f.detail, "the worker answered a request with something else than an outcome");
    violation(t, &f, err, sizeof err);
    json_decref(m);
    free(blob);
    return otxn_refuse(t, store_event_name(STORE_EV_INTERRUPTED), err);
  }
  if (vouch_outcome(&t->vouch, m, blob, bloblen, &x, &f) != 0) {
    violation(t, &f, err, sizeof err);
    json_decref(m);
    free(blob);
    return otxn_refuse(t, store_event_name(STORE_EV_INTERRUPTED), err);
  }
  const char *reason = json_string_value(json_object_get(m, "reason"));
  const char *status = json_string_value(json_object_get(m, "status"));
  const char *message = json_string_value(json_object_get(m, "message"));
  json_t *output = json_object_get(m, "output");
  reply_Outcome r = {.reason = reason, .revision = t->parent, .generation = t->generation,
                     .value = json_object_get(m, "value"), .values = json_object_get(m, "values"), .output = output};
  json_t *reply, *changes = NULL;
  if (txn_reason_parse(reason) != TXN_ACCEPTED) {
    record_outcome(t, reason, message);
    reply = failure(t, reason, message, output);
  } else if (!status || strcmp(status, txn_status_name(TXN_ST_AWAITING))) {
    /* kept at once: it changed no entry */
    ostore_event(t->s, t->cmd, events_accepted(t->attempt, proto_op_name(t->op), t->parent, t->generation));
    t->outcome_written = 1;
    reply = reply_object(&r);
  } else {
    uint64_t gen = (uint64_t)json_integer_value(json_object_get(m, "generation"));
    store_rev_info info = {STORE_REV_ACTION, gen + 1, 0, JITI_VERSION, summary, NULL, t->grant_text};
    publish_Result pr;
    json_t *decision = wproc_publish(t->s, t->parent, &info, json_object_get(m, "changes"), blob, bloblen, NULL,
                                     NULL, 0, events_outcome(t->attempt, proto_op_name(t->op), reason, NULL), 0, 0,
                                     &pr);
    json_t *ack = NULL;
    vouch_Expect dx = {.op = t->op, .gen = gen, .steps = 3u};   /* a restore, an unchanged commit: at most once */
    wproc_send(&t->w, decision, NULL, 0);
    if (pr.code != STORE_OK) {
      if (wproc_recv(&t->w, &ack, NULL, NULL, err, sizeof err) == 0 && vouch_decided(ack, WIRE_RESTORED, &dx, &f))
        violation(t, &f, err, sizeof err);
      record_outcome(t, txn_reason_name(TXN_PUBLICATION_FAILED), pr.error);
      reply = failure(t, txn_reason_name(TXN_PUBLICATION_FAILED), pr.error, output);
    } else {
      t->outcome_written = 1;
      if (pr.changed) dx.steps = 2u;   /* a revision: exactly once */
      /* the revision stands whatever the answer (it was checked before
      ** it was published): a bad answer only ends the worker */
      if (wproc_recv(&t->w, &ack, NULL, NULL, err, sizeof err) == 0 && vouch_decided(ack, WIRE_COMMITTED, &dx, &f))
        violation(t, &f, err, sizeof err);
      r.revision = pr.revision;
      r.changes = changes = pr.changes;
      r.generation = pr.changed ? gen + 1 : t->generation;
      reply = reply_object(&r);
      t->parent = pr.revision;
    }
    json_decref(ack);
  }
  json_decref(changes);
  json_decref(m);
  free(blob);
  return reply;
}

void otxn_close(otxn *t) {
  if (t->attempt && !t->outcome_written) record_outcome(t, txn_reason_name(TXN_ERROR), "the command ended early");
  if (t->w.pid || t->w.fd >= 0) wproc_stop(&t->w, 0);
  vouch_checker_close(&t->vouch);
  store_close(t->s);
  t->s = NULL;
}
