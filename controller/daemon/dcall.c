/*
** dcall.c — a transaction's end, from the worker's outcome frame to the
** client's reply (daemon.h, docs/protocol.md "Transactions", "Group
** commit"), whichever way it goes:
**
**   - the outcome is decoded once (DOutcome), and everything after reads
**     that;
**   - a call without a generation that wrote, or ran on calls not yet
**     durable, is held (Held, dgroup.c's FIFO) and answered once its
**     group is durable; dgroup.c writes the group, this file completes
**     each call, tells the worker to keep them (commit) and answers them;
**   - any other that wrote is published on its own, then committed, or
**     restored when the store refused it (workerproc.h wproc_publish);
**   - any other is answered at once.
**
** Each reply is written by engine.h's reply_write, the one writer of its
** shape; each outcome event by engine.h's events_*_text; each frame to
** the worker by workerproc.h's wframe_*.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"
#include "replica.h"
#include "txn.h"

void dcall_decode(DOutcome *o, json_t *m) {
  const char *reason = json_string_value(json_object_get(m, "reason"));
  o->m = m;
  o->reason = reason ? reason : txn_reason_name(TXN_ERROR);
  o->accepted = txn_reason_parse(reason) == TXN_ACCEPTED;
  o->committed = json_is_true(json_object_get(m, "committed"));
  o->status = json_string_value(json_object_get(m, "status"));
  o->awaiting = o->status && !strcmp(o->status, txn_status_name(TXN_ST_AWAITING));
  o->message = json_string_value(json_object_get(m, "message"));
  o->value = json_object_get(m, "value");
  o->values = json_object_get(m, "values");
  o->output = json_object_get(m, "output");
  o->changes = json_object_get(m, "changes");
  o->diagnosis = json_object_get(m, "diagnosis");
  o->incident = json_object_get(m, "incident");
}

/* The reply's members the outcome gives (reply_write). */
static reply_Outcome reply_of(const DOutcome *o) {
  return (reply_Outcome){.reason = o->reason, .message = o->message, .value = o->value, .values = o->values,
                         .output = o->output, .diagnosis = o->diagnosis, .incident = o->incident};
}

void dcall_reply(Daemon *D, uint64_t client, json_t *id, const reply_Outcome *r) {
  jtext_writer w = {0};
  reply_write(&w, r);
  dreply_text(D, client, id, &w);
}

json_t *dcall_event(Daemon *D, const char *reason, const char *message) {
  json_t *ev = events_outcome(D->live.cur.attempt, proto_op_name(D->live.cur.op), reason, message);
  dkeys_tag_event(D, ev);  /* also when it goes to the store with the revision */
  return ev;
}

void dcall_finish(Daemon *D, const char *reason, const char *extra) {
  Txn *t = &D->live.cur;
  dlog_attempt(D, t->attempt, proto_op_name(t->op), reason, extra, t->t0, D->gen, 0, t->source);
  dsched_txn_clear(D);
  dsched_pause_end(D);
  dsched_fail_commands(D, "stale", "the paused transaction ended before this command ran; observe again");
}

/* ------------------------------------------------- published on its own */

/* The worker reported an accepted attempt awaiting commit: publish it, with
** the events that led to it, in one LMDB transaction; then tell the worker
** to commit (or restore, when publishing failed). */
static void publish(Daemon *D, const DOutcome *o, const unsigned char *blob, size_t bloblen) {
  Txn *t = &D->live.cur;
  uint64_t gen = (uint64_t)json_integer_value(json_object_get(o->m, "generation"));
  /* the generation after the commit, recorded with the revision */
  /* a repair's revision names its incident (repaired with it) and the
  ** model response that proposed it */
  uint64_t incident = t->repair ? (uint64_t)json_integer_value(json_object_get(t->repair, "incident")) : 0;
  store_rev_info info = {t->op == PROTO_CALL ? STORE_REV_APPLICATION : incident ? STORE_REV_REPAIR : STORE_REV_ACTION,
                         gen + 1, 0, JITI_VERSION, t->summary,
                         t->repair ? json_string_value(json_object_get(t->repair, "response_id")) : NULL,
                         D->grant_text};
  publish_Result pr;
  devents_objects(D);   /* on failure some are texts: the publish fails, as out of memory would */
  size_t nev = D->events.n + 1;   /* the buffered events and the accepted one */
  json_t *decision = wproc_publish(dstore(D), D->revision, &info, o->changes, blob, bloblen, D->events.ev,
                                   D->events.time_ms, D->events.n,
                                   dcall_event(D, txn_reason_name(TXN_ACCEPTED), NULL), incident,
                                   drepair_tentative(t), &pr);
  if (pr.code == STORE_OK) devents_written(D, pr.first_event);
  t->outcome = json_incref(o->m);
  D->live.wait = W_COMMIT;
  /* replicated: acknowledged only once etcd holds it too */
  char fence[600] = "";
  replica_Events ev = {pr.first_event, nev};
  int rc = pr.code == STORE_OK && pr.changed ? drepl_commit(D->repl, dstore(D), pr.revision, pr.revision, &ev, fence,
                                                            sizeof fence)
                                             : 0;
  if (rc == -2) drepl_uncertain(D, fence);
  t->fenced = rc == DREPL_FENCED;
  if (rc) {
    json_decref(pr.changes);
    pr.changes = NULL;
    json_decref(decision);
    decision = wframe_restore();
    pr.code = STORE_EPERM;
    snprintf(pr.error, sizeof pr.error, "%s", fence);
  }
  if (pr.code != STORE_OK) {
    t->failure = strdup(pr.error);
    if (fence[0]) drepl_fence(D, fence, t->fenced);
    dlog(D, "attempt %" PRIu64 ": publication failed: %s", t->attempt, pr.error);
    t->decision = WIRE_RESTORE;
    dworker_send(D, decision);
    return;
  }
  /* Entries identical to CURRENT's are no change: nothing was written, and
  ** the worker keeps the attempt without moving the generation. */
  t->published = 1;
  t->revision = pr.revision;
  t->published_gen = pr.changed ? gen + 1 : gen;
  if (pr.changed && gen + 1 > D->gen_saved) D->gen_saved = gen + 1;
  D->revision = pr.revision;
  t->changes = pr.changes;
  t->decision = WIRE_COMMIT;
  t->decided_changed = pr.changed;
  dworker_send(D, decision);
}

void dcall_reply_decided(Daemon *D) {
  Txn *t = &D->live.cur;
  DOutcome o;
  dcall_decode(&o, t->outcome);
  reply_Outcome r = reply_of(&o);
  r.generation = D->gen;
  if (t->published) {
    r.revision = t->revision;
    r.changes = t->changes;
  } else {   /* the store refused it: what it said */
    r = (reply_Outcome){.reason = txn_reason_name(t->fenced ? TXN_FENCED : TXN_PUBLICATION_FAILED),
                        .message = t->failure ? t->failure : "out of memory", .generation = D->gen};
  }
  r.repair = drepair_reply(t, t->published);
  dcall_reply(D, t->responder, t->responder_id, &r);
  json_decref(r.repair);
  drepair_apply_ended(D, t, t->published, r.reason, r.message);
}

void dcall_committed(Daemon *D, json_t *m) {
  Txn *t = &D->live.cur;
  const char *status = json_string_value(json_object_get(m, "status"));
  if (status) snprintf(D->live.status, sizeof D->live.status, "%s", status);
  D->live.wait = W_NONE;
  char extra[64] = "";
  if (t->published) {  /* its outcome was recorded with the revision */
    snprintf(extra, sizeof extra, "-> revision %" PRIu64, t->revision);
  } else {
    devents_add(D, dcall_event(D, txn_reason_name(t->fenced ? TXN_FENCED : TXN_PUBLICATION_FAILED), NULL));
  }
  if (t->outcome) dcall_reply_decided(D);
  if (t->published) dtraffic_add(D, t->traffic);   /* it stands: its call goes to the sample */
  else dtraffic_call_free(t->traffic);
  t->traffic = NULL;
  dcall_finish(D, txn_reason_name(t->published ? TXN_ACCEPTED : t->fenced ? TXN_FENCED : TXN_PUBLICATION_FAILED),
               extra);
}

/* ------------------------------------------------------------ held */

static const char UNDONE[] =
  "the revision this call ran on could not be published, so it was undone, and this call with it: "
  "nothing of it was kept; retry it";

/* Answer a call that ran on state since undone. */
static void answer_undone(Daemon *D, Txn *t) {
  const char *reason = txn_reason_name(TXN_PUBLICATION_FAILED);
  devents_add(D, events_outcome(t->attempt, proto_op_name(t->op), reason, UNDONE));
  reply_Outcome r = {.reason = reason, .message = UNDONE, .generation = D->gen};
  dcall_reply(D, t->responder, t->responder_id, &r);
  dlog_soon(D, "attempt %" PRIu64 " %s %s: ran on a revision that could not be published", t->attempt,
            proto_op_name(t->op), reason);
}

/* A grouped call's outcome: held (with its call for the traffic sample,
** *tc, taken), or answered now (undone) when a restore is pending.  1 when
** it took the outcome; 0: nothing below it awaits durability, and it is
** answered as any other. */
static int hold(Daemon *D, Txn *t, const DOutcome *o, const unsigned char *blob, size_t bloblen, TrafficCall **tc) {
  Group *g = &D->group;
  int writes = o->accepted && !o->committed;
  if (g->restoring) {
    answer_undone(D, t);
    dtraffic_call_free(*tc);
    *tc = NULL;
    return 1;
  }
  if (!writes && !g->n) return 0;   /* nothing below it awaits durability */
  Held h = {.attempt = t->attempt, .client = t->responder, .id = t->responder_id, .t0 = t->t0,
            .source = t->source, .summary = t->summary, .out = *o,
            .quiet = devents_quiet(D, t->attempt), .keyed = t->key != NULL, .traffic = *tc};
  *tc = NULL;
  json_incref(o->m);
  /* its outcome event, with its idempotency key (durable with its
  ** outcome), less the revision and generation its commit decides */
  h.event = events_outcome_text_open(t->attempt, proto_op_name(t->op), o->reason, o->message, o->diagnosis,
                                     t->key, &h.event_len, &h.event_split);
  if (writes) {
    h.changes = json_incref(o->changes);
    if (bloblen && (h.blob = malloc(bloblen))) memcpy(h.blob, blob, bloblen);
    h.bloblen = h.blob ? bloblen : 0;
  }
  if (!h.event || (writes && bloblen && !h.blob) || dgroup_push(g, h) != 0) {
    h.id = NULL;   /* still the Txn's */
    h.source = h.summary = NULL;
    dgroup_held_free(&h);
    dreply_err(D, t->responder, t->responder_id, "busy", "the kernel is out of memory; retry later");
    if (writes) {  /* it cannot be held, so nothing on top of it may stand */
      dlog(D, "attempt %" PRIu64 ": out of memory holding its outcome; undoing the calls not yet durable",
           t->attempt);
      /* a group being written is let finish first: the undo must not
      ** reach it in the worker if the store keeps it */
      dstore(D);
      dsync_settle(D);
      if (g->restoring) return 1;   /* it failed: undone with all above it */
      for (size_t i = g->committed; i < g->n; i++) {   /* those written stand */
        Held *x = dgroup_at(g, i);
        dreply_err(D, x->client, x->id, "busy", "the kernel is out of memory; retry later");
        dgroup_held_free(x);
      }
      g->n = g->committed;
      dcall_restore_group(D);
    }
    return 1;
  }
  t->responder_id = NULL;   /* now the held call's */
  t->source = t->summary = NULL;
  return 1;
}

void dcall_restore_group(Daemon *D) {
  D->group.restoring = 1;
  dvouch_expect_ack(D, WIRE_RESTORED, 0);   /* calls never pause: it moves nothing */
  dworker_send(D, wframe_restore());
}

void dcall_commit_group(Daemon *D, size_t count, const size_t *unchanged, size_t nunchanged) {
  /* each revision it keeps moves the worker's generation once */
  dvouch_expect_ack(D, WIRE_COMMITTED, (uint64_t)(count - nunchanged));
  dworker_send(D, wframe_commit(D->revision, count, unchanged, nunchanged));
}

void dcall_complete(Held *h, uint64_t rev, uint64_t gen, const size_t *slot, const uint8_t *effects) {
  reply_Outcome r = reply_of(&h->out);
  r.revision = rev;
  r.generation = gen;
  r.changes = h->changes;
  r.slot = slot;
  r.effects = effects;
  reply_write(&h->reply, &r);
  h->rev = rev;
  h->gen = gen;
}

void dcall_held_event(Daemon *D, Held *h, uint64_t rev, uint64_t gen, int recorded) {
  int event = !h->quiet && !recorded, key = h->quiet && h->keyed;   /* counted: its key's record only */
  if (!event && !key) return;
  size_t len = 0;
  char *text = h->event ? events_text_close(h->event, h->event_len, h->event_split, rev, gen, &len) : NULL;
  if (event) devents_add_text(D, text, len);
  else dtally_key(D, text, len);
}

void dcall_group_failed(Daemon *D, size_t from, const char *why, int restore, int fenced) {
  Group *g = &D->group;
  const char *reason = txn_reason_name(fenced ? TXN_FENCED : TXN_PUBLICATION_FAILED);
  char msg[1200];
  if (fenced)
    snprintf(msg, sizeof msg, "%s; so this call was undone: nothing of it was kept; retry it on the world's leader",
             why);
  else
    snprintf(msg, sizeof msg, "publishing failed (%s), so this call was undone: nothing of it was kept; retry it", why);
  size_t k = g->n - from;
  dlog(D, "publishing %zu call%s failed: %s; undoing them", k, k == 1 ? "" : "s", why);
  for (size_t i = from; i < g->n; i++) {
    Held *h = dgroup_at(g, i);
    devents_add(D, events_outcome(h->attempt, "call", reason, why));
    reply_Outcome r = {.reason = reason, .message = msg, .generation = D->gen};
    dcall_reply(D, h->client, h->id, &r);
    dgroup_held_free(h);
  }
  g->n = from;
  if (!g->n) g->head = 0;
  if (restore) dcall_restore_group(D);
}

void dcall_answer(Daemon *D, Held *h) {
  dlog_attempt(D, h->attempt, "call", h->out.reason, NULL, h->t0, h->gen, h->rev, h->source);
  dreply_text(D, h->client, h->id, &h->reply);   /* (frees its text) */
  h->reply = (jtext_writer){0};
}

void dcall_held_lost(Daemon *D, Held *h, const char *how) {
  json_t *ev = events_outcome(h->attempt, "call", store_event_name(STORE_EV_INTERRUPTED), NULL);
  json_object_set_new(ev, "reason", json_string(how));
  devents_add(D, ev);
  dreply_err(D, h->client, h->id, "interrupted",
             "the worker %s before this call's revision was published; nothing of it was kept", how);
}

/* --------------------------------------------------------- the outcome */

/* A failed call of a function whose repair rule pauses waits for the
** repair (dpark.c) with the reply it would have had.  1 when it waits. */
static int wait_for_repair(Daemon *D, Txn *t, const DOutcome *o, uint64_t incident) {
  reply_Outcome r = reply_of(o);
  r.revision = D->revision;
  r.generation = D->gen;
  json_t *failure = reply_object(&r);
  int parked = failure && dpark_call(D, t, failure, incident);
  json_decref(failure);
  return parked;
}

void dcall_outcome(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen) {
  Txn *t = &D->live.cur;
  /* a failure of a function automatic repair looks after: an incident,
  ** named in the reply (kept with the outcome, should the reply be held) */
  int pause = 0;
  /* a standby repairs nothing: the world is its leader's */
  int standing = drepl_standing(D->repl);
  json_t *inc = t->active && !standing && json_object_get(m, "diagnosis")
                    ? dincident_capture(D, t, json_object_get(m, "diagnosis"), &pause) : NULL;
  if (inc) json_object_set_new(m, "incident", inc);
  if (t->active && !standing)
    dwatch_call(D, t, (t->noting & REQUEST_NOTE_CALL) ? json_string_value(json_object_get(json_object_get(m, "noted"), "function")) : NULL,
                json_string_value(json_object_get(inc, "function")), json_object_get(m, "diagnosis"));
  DOutcome o;
  dcall_decode(&o, m);
  uint64_t waits = 0;
  if (pause && wait_for_repair(D, t, &o, (uint64_t)json_integer_value(json_object_get(inc, "id")))) {
    t->responder = 0;   /* it is answered when its incident ends */
    json_decref(t->responder_id);
    t->responder_id = NULL;
    waits = (uint64_t)json_integer_value(json_object_get(inc, "id"));
  }
  /* a copy of the world made at the failure: kept for the verification
  ** of the repair the call waits for, else killed */
  if (t->noting & REQUEST_NOTE_PARK) dshadow_park_outcome(D, m, waits);
  /* a successful call of a function automatic repair looks after: one for
  ** the traffic sample, recorded once it stands */
  TrafficCall *tc = dtraffic_offer(D, t, &o);
  if (o.status) snprintf(D->live.status, sizeof D->live.status, "%s", o.status);
  dsched_pause_end(D);
  dsched_fail_commands(D, "stale", "the paused transaction ended before this command ran; observe again");
  /* one that publishes nothing leaves no events: counted */
  if (t->active)
    devents_ended(D, t->attempt, t->op, o.reason, (o.accepted && t->op != PROTO_PREVIEW && !o.committed) || o.diagnosis);
  if (t->grouped && t->active && hold(D, t, &o, blob, bloblen, &tc)) {  /* held, or answered */
    D->live.wait = W_NONE;
    dsched_txn_clear(D);
    return;
  }
  if (o.accepted && o.awaiting && !o.committed) {
    t->traffic = tc;   /* once committed */
    publish(D, &o, blob, bloblen);
    return;
  }
  dtraffic_add(D, tc);   /* (a failure has none) */
  D->live.wait = W_NONE;
  if (!t->active) return;
  reply_Outcome r = reply_of(&o);
  if (t->timed_out && txn_reason_parse(o.reason) == TXN_ABORTED) r.message = "aborted: the pause timed out";
  r.revision = D->revision;
  r.generation = D->gen;
  json_t *brief = NULL;
  if (o.accepted) {
    /* nothing to publish, or a preview (already restored); a read changed
    ** nothing: no need to wait for the store writer */
    brief = publish_brief(json_array_size(o.changes) ? dstore(D) : NULL, o.changes);
    r.changes = brief;
    r.restored = t->op == PROTO_PREVIEW && !t->standby_call;
  } else {   /* an operator's change names the revision that stays */
    r.show_revision = t->op == PROTO_APPLY || t->op == PROTO_REPAIR || t->op == PROTO_INVARIANT_ADD ||
                      t->op == PROTO_INVARIANT_REMOVE;
  }
  r.repair = drepair_reply(t, 0);   /* a repair that published nothing is no repair */
  jtext_writer w = {0};
  reply_write(&w, &r);
  json_decref(brief);
  json_decref(r.repair);
  drepair_apply_ended(D, t, 0, o.reason, r.message);
  size_t len = 0;
  char *ev = o.accepted ? events_accepted_text(t->attempt, proto_op_name(t->op), D->revision, D->gen, t->key, &len)
                        : events_outcome_text(t->attempt, proto_op_name(t->op), o.reason, r.message, o.diagnosis,
                                              t->key, &len);
  devents_outcome(D, t->attempt, t->key != NULL, ev, len);
  if (t->standby_call && o.accepted && json_array_size(o.changes)) {   /* a write: the leader's (undone already) */
    free(w.buf);
    char msg[1600];
    drepl_refusal(D, "this call changes the world (nothing of it was kept)", msg, sizeof msg);
    dreply_err(D, t->responder, t->responder_id, proto_code_name(PROTO_STANDBY), "%s", msg);
  } else {
    dreply_text(D, t->responder, t->responder_id, &w);
  }
  dcall_finish(D, o.reason, NULL);
}
