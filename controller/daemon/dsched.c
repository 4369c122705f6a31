/*
** dsched.c — what the daemon's worker does next, and what comes of it
** (daemon.h, docs/protocol.md "Transactions", docs/worker-frames.md):
** queries, transactions (calls, actions, previews, invariant changes), the
** batches calls are handed over in, commands to a paused transaction; the
** frames the worker answers with; publishing what it accepted (engine.h,
** the same publish step as the store commands); and the end of whatever it
** was doing when it died.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "txn.h"

/* ------------------------------------------------------------- the end */

static void txn_clear(Daemon *D) {
  Txn *t = &D->cur;
  free(t->source);
  free(t->summary);
  json_decref(t->responder_id);
  json_decref(t->reply);
  json_decref(t->req);
  free(t->key);
  free(t->invariant);
  memset(t, 0, sizeof *t);
}

/* Commands queued for a pause that has ended: their generation is old. */
void dsched_fail_commands(Daemon *D, const char *code, const char *why) {
  while (D->cmdq.n) {
    Pending p = dqueue_pop(&D->cmdq);
    dclients_reply_err(D, p.client, p.id, code, "%s", why);
    dqueue_pending_free(&p);
  }
}

/* The pause (if any) is over. */
static void pause_end(Daemon *D) {
  D->in_pause = 0;
  json_decref(D->pause);
  D->pause = NULL;
}

static int queued(Queue *q, uint64_t client) {
  for (size_t i = 0; i < q->n; i++)
    if (q->v[q->head + i].client == client) return 1;
  return 0;
}

int dsched_client_waits(Daemon *D, uint64_t client) {
  return (D->cur.active && D->cur.responder == client) || (D->wait == W_QUERY && D->query.client == client) ||
         dgroup_waits(D, client) ||
         queued(&D->txq, client) || queued(&D->queryq, client) || queued(&D->cmdq, client) ||
         queued(&D->batch, client);
}

void dsched_reply_paused(Daemon *D, uint64_t client, json_t *id) {
  json_t *r = json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", "paused", "message",
                        "a transaction is paused: answer it first (act: evaluate a repair, resume, abort), or "
                        "send this with \"wait\": true to wait until the pause ends", "status", "paused",
                        "generation", (json_int_t)D->gen);
  if (D->pause) json_object_set(r, "pause", D->pause);
  dclients_reply(D, client, id, r);
}

static void finish_txn(Daemon *D, const char *reason, const char *extra) {
  Txn *t = &D->cur;
  dlog_attempt(D, t->attempt, proto_op_name(t->op), reason, extra, t->t0, D->gen, 0, t->source);
  txn_clear(D);
  pause_end(D);
  dsched_fail_commands(D, "stale", "the paused transaction ended before this command ran; observe again");
}

/* The outcome event of the running transaction (message may be NULL);
** more members may be added to what it returns before it is recorded. */
static json_t *outcome_event(Daemon *D, const char *reason, const char *message) {
  json_t *ev = events_outcome(D->cur.attempt, proto_op_name(D->cur.op), reason, message);
  dkeys_tag_event(D, ev);  /* also when it goes to the store with the revision */
  return ev;
}

static void begin_txn(Daemon *D, Pending *p);

/* The worker died with `lost` outcomes in its outbox: the running call and
** the lost-1 calls of its batch after it ran to their end, and nothing of
** them is left.  They move to *again, to run again on the fresh worker, in
** order; the call after them, the one the worker was running, becomes the
** running one here, to end as interrupted.  (Out of memory, they end as
** interrupted, with the running one.) */
static void again_lost(Daemon *D, const char *how, uint64_t lost, Queue *again) {
  Txn *t = &D->cur;
  int ok = dqueue_push(again, t->responder, t->responder_id, t->req, t->op) == 0;
  for (uint64_t i = 1; ok && i < lost && D->batch.n; i++) {
    Pending p = dqueue_pop(&D->batch);
    if (dqueue_push(again, p.client, p.id, p.req, p.op) != 0) {
      ok = 0;
      dqueue_push_front(&D->batch, p);   /* (a slot was just freed) */
    } else {
      dqueue_pending_free(&p);
    }
  }
  if (!ok) {   /* the first is the running call's, answered as it ends */
    for (size_t i = 0; again->n; i++) {
      Pending p = dqueue_pop(again);
      if (i)
        dclients_reply_err(D, p.client, p.id, "interrupted", "the worker %s after this call ran, its outcome "
                           "unsent (and the kernel is out of memory); nothing of it was kept", how);
      dqueue_pending_free(&p);
    }
    return;
  }
  json_t *ev = outcome_event(D, store_event_name(STORE_EV_INTERRUPTED), NULL);
  json_object_set_new(ev, "reason", json_sprintf("the worker %s after this call ran, its outcome unsent: it runs "
                                                 "again", how));
  devents_add(D, ev);
  finish_txn(D, "interrupted", "(its outcome was lost with the worker: it runs again)");
  if (D->batch.n) {  /* the one that was running */
    Pending p = dqueue_pop(&D->batch);
    begin_txn(D, &p);
    dqueue_pending_free(&p);
  }
}

void dsched_worker_died(Daemon *D, const char *how, uint64_t lost) {
  Txn *t = &D->cur;
  Queue again = {0};
  dgroup_worker_died(D, how);   /* held calls: their revisions are lost */
  if (lost && t->active && t->grouped && D->wait == W_ATTEMPT) again_lost(D, how, lost, &again);
  if (t->active) {
    if (D->wait == W_COMMIT && t->published) {
      /* the revision is durable; the fresh worker imports it */
      json_t *r = t->reply;
      t->reply = NULL;
      D->gen = t->published_gen;  /* recorded with the revision; the next worker counts past it */
      json_object_set_new(r, "generation", json_integer((json_int_t)D->gen));
      dclients_reply(D, t->responder, t->responder_id, r);
      /* its outcome was recorded with the revision */
      finish_txn(D, "accepted", "(worker died after publication)");
    } else {
      char msg[512];
      snprintf(msg, sizeof msg, "the worker %s during attempt %" PRIu64 "; nothing was published; "
               "the kernel is starting a fresh worker from revision %" PRIu64 " ('jiti status' shows when it "
               "serves)", how, t->attempt, D->revision);
      json_t *ev = outcome_event(D, store_event_name(STORE_EV_INTERRUPTED), NULL);
      json_object_set_new(ev, "reason", json_string(how));
      devents_add(D, ev);
      if (t->responder) dclients_reply_err(D, t->responder, t->responder_id, "interrupted", "%s", msg);
      finish_txn(D, "interrupted", how);
    }
  }
  if (D->wait == W_QUERY && D->query.retried) {
    /* the worker died on it twice: it would kill every fresh worker */
    dclients_reply_err(D, D->query.client, D->query.id, "interrupted", "the worker %s twice while answering this "
                       "query; the kernel is starting a fresh worker from revision %" PRIu64, how, D->revision);
    dqueue_pending_free(&D->query);
    D->query = (Pending){0};
  } else if (D->wait == W_QUERY) {  /* the fresh worker answers it, first */
    D->query.retried = 1;
    if (dqueue_push_front(&D->queryq, D->query) != 0) {
      dclients_reply_err(D, D->query.client, D->query.id, "interrupted", "the worker %s while answering this "
                         "query (and the kernel is out of memory)", how);
      dqueue_pending_free(&D->query);
    }
    D->query = (Pending){0};
  }
  /* calls sent with the one that was running never started: they run on
  ** the fresh worker, first, in their order (none comes when stopping) */
  while (D->batch.n) {
    Pending p = dqueue_pop_back(&D->batch);
    if (D->stopping) {
      dclients_reply_err(D, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
      dqueue_pending_free(&p);
    } else if (dqueue_push_front(&D->txq, p) != 0) {
      dclients_reply_err(D, p.client, p.id, "interrupted", "the worker %s before this call ran (and the kernel "
                         "is out of memory)", how);
      dqueue_pending_free(&p);
    }
  }
  /* calls that ran before it, their outcomes lost: again, ahead of those */
  while (again.n) {
    Pending p = dqueue_pop_back(&again);
    if (D->stopping) {
      dclients_reply_err(D, p.client, p.id, "shutting-down", "the kernel is shutting down; this call ran, but "
                         "the worker died before its outcome was sent: nothing of it was kept");
      dqueue_pending_free(&p);
    } else if (dqueue_push_front(&D->txq, p) != 0) {
      dclients_reply_err(D, p.client, p.id, "interrupted", "the worker %s after this call ran, its outcome "
                         "unsent (and the kernel is out of memory); nothing of it was kept", how);
      dqueue_pending_free(&p);
    }
  }
  free(again.v);
}

/* ------------------------------------------------------ transactions */

/* An application call without a generation: it can run right after the
** call before it, whatever that one changed. */
static int batchable(const Pending *p) {
  return p && p->op == PROTO_CALL && !json_object_get(p->req, "generation");
}

/* Make p the running transaction: its attempt number, its log source (its
** source, engine.h request_source) and revision summary, its "started"
** event. */
static void begin_txn(Daemon *D, Pending *p) {
  const char *source = request_source(p->req);
  Txn *t = &D->cur;
  txn_clear(D);
  t->active = 1;
  t->attempt = D->next_attempt++;
  D->attempts++;
  t->op = p->op;
  char src[1024], summary[200];
  request_brief(p->op, p->req, src, sizeof src);
  request_summary(p->op, p->req, summary, sizeof summary);
  t->source = strdup(source);
  t->summary = strdup(summary);
  t->t0 = daemon_now();
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  t->grouped = batchable(p);
  t->req = t->grouped ? json_incref(p->req) : NULL;
  t->key = events_key_new(p->req);
  if (p->op == PROTO_INVARIANT_ADD || p->op == PROTO_INVARIANT_REMOVE)
    t->invariant = strdup(json_string_value(json_object_get(p->req, "name")));  /* checked: a string */
  t->sent = TXN_SENT_ATTEMPT;
  size_t len = 0;
  char *ev = events_started_text(t->attempt, proto_op_name(t->op), src, D->revision, D->gen, &len);
  devents_started(D, t->attempt, t->op, ev, len);
  D->wait = W_ATTEMPT;
}


/* A transaction whose client went away before it began runs for nobody: it
** is dropped (logged and recorded), not run.  1 when p was dropped. */
static int dropped(Daemon *D, Pending *p) {
  if (!p->client || dclients_find(D, p->client)) return 0;
  char src[200];
  request_brief(p->op, p->req, src, sizeof src);
  dlog(D, "dropped a %s of a client that left before it began: %s", proto_op_name(p->op), src);
  dkeys_forget(D, p->client, p->id);  /* a retry with its key runs */
  devents_add(D, json_pack("{s:s, s:s, s:s}", "event", store_event_name(STORE_EV_DROPPED), "command",
                           proto_op_name(p->op), "source", src));
  return 1;
}

/* Move the batchable calls at the head of the transaction queue (up to
** DAEMON_MAX_BATCH in flight) behind the running one, their frames
** written into items (an open array).  How many moved. */
static size_t take_batch(Daemon *D, jtext_writer *items) {
  size_t moved = 0;
  while (D->batch.n + 1 < DAEMON_MAX_BATCH && batchable(dqueue_peek(&D->txq))) {
    Pending q = dqueue_pop(&D->txq);
    if (dropped(D, &q)) {
      dqueue_pending_free(&q);
      continue;
    }
    if (dqueue_push(&D->batch, q.client, q.id, q.req, q.op) == 0) {
      request_frame_write(items, q.op, q.req, 0, 0);
      moved++;
    } else {
      dclients_reply_err(D, q.client, q.id, "busy", "the kernel is out of memory; retry later");
    }
    dqueue_pending_free(&q);
  }
  return moved;
}

/* Open the frame of a batch of calls in D->wframe: {"op":"attempts",
** "items":[ ... (calls_send closes it). */
static void calls_open(Daemon *D) {
  jtext_writer *w = &D->wframe;
  const char *op = wire_op_name(WIRE_ATTEMPTS);
  jtext_reset(w);
  jtext_begin(w, '{');
  jtext_key(w, "op");
  jtext_string(w, op, strlen(op));
  jtext_key(w, "items");
  jtext_begin(w, '[');
}

/* Send the batch written since calls_open; or, alone, only the one call
** frame of it at wframe[at..end). */
static void calls_send(Daemon *D, int alone, size_t at, size_t end) {
  jtext_writer *w = &D->wframe;
  jtext_end(w, ']');
  jtext_end(w, '}');
  if (w->failed) dworker_send_text(D, NULL, 0);
  else if (alone) dworker_send_text(D, w->buf + at, end - at);
  else dworker_send_text(D, w->buf, w->len);
}

/* Refuse p: its generation is not the current one; nothing ran. */
static void reply_stale(Daemon *D, Pending *p, const char *what) {
  char msg[160];
  snprintf(msg, sizeof msg, "stale generation: %s; observe again", what);
  dclients_reply(D, p->client, p->id, json_pack("{s:b, s:s, s:s, s:I}", "ok", 0, "code", "stale", "message", msg,
                                                "generation", (json_int_t)D->gen));
}

/* A rollback: REV's world with CURRENT's invariants is checked by a worker
** of its own (as offline: workerproc.h), the revert published, and the
** live worker replaced by one started from the new CURRENT.  The check runs
** to its end before the loop goes on (about a second per 100,000 entries
** on a small machine): a rollback is an operator's rare request. */
static void rollback(Daemon *D, Pending *p) {
  uint64_t target = (uint64_t)json_integer_value(json_object_get(p->req, "revision"));
  begin_txn(D, p);
  Txn *t = &D->cur;
  D->wait = W_NONE;
  jiti_Limits lim = D->limits.eval;
  char err[1024];
  limits_from_json(json_object_get(p->req, "limits"), &D->limits.eval, 0, &lim, err, sizeof err);
  wproc chk;
  wproc_Plan plan = {target, 1, target, 0, &lim, &D->grant, 1};
  json_t *ready = NULL, *r;
  const char *reason = NULL, *msg = NULL;
  char why[1100];
  vouch_Fail vf;
  if (wproc_start(&chk, dstore(D), &plan, &ready, err, sizeof err) != 0) {
    reason = txn_reason_name(TXN_ERROR);
    snprintf(why, sizeof why, "the world of revision %" PRIu64 " cannot be rebuilt: %s", target, err);
    msg = why;
  } else if (vouch_ready(ready, plan.base, &D->grant, &vf) != 0) {
    /* the checking worker is no more trusted than the live one */
    dlog(D, "attempt %" PRIu64 ": the worker checking revision %" PRIu64 " broke the frame rule %s (%s); killing it",
         t->attempt, target, vf.rule, vf.detail);
    wproc_stop(&chk, 1);
    reason = store_event_name(STORE_EV_INTERRUPTED);
    snprintf(why, sizeof why, "the worker checking revision %" PRIu64 " broke the frame rule %s and was killed; "
             "nothing was published", target, vf.rule);
    msg = why;
  } else {
    const char *st = json_string_value(json_object_get(ready, "status"));
    if (st && !strcmp(st, txn_status_name(TXN_ST_FAULTED))) {
      reason = txn_reason_name(TXN_UNSAFE);
      snprintf(why, sizeof why, "%s", json_string_value(json_object_get(ready, "message")));
      msg = why;
    }
    wproc_stop(&chk, 0);
  }
  json_decref(ready);
  uint64_t g = D->gen + 1, rev = 0;
  if (!reason) {
    devents_flush(D);  /* the attempt's start goes first */
    store_rev_info info = {STORE_REV_ROLLBACK, g, 0, JITI_VERSION, t->summary, NULL, D->grant_text};
    if (store_publish_revert(dstore(D), D->revision, target, &info, &rev) != STORE_OK) {
      reason = txn_reason_name(TXN_PUBLICATION_FAILED);
      snprintf(why, sizeof why, "%s", store_errmsg(dstore(D)));
      msg = why;
    }
  }
  if (reason) {
    devents_add(D, outcome_event(D, reason, msg));
    r = json_pack("{s:b, s:s, s:s, s:s, s:I, s:I}", "ok", 0, "code", reason, "outcome", reason, "message", msg,
                  "generation", (json_int_t)D->gen, "revision", (json_int_t)D->revision);
    dclients_reply(D, t->responder, t->responder_id, r);
    finish_txn(D, reason, NULL);
    return;
  }
  D->revision = rev;
  D->gen = g;  /* recorded with the revision: the new worker's */
  if (g > D->gen_saved) D->gen_saved = g;
  json_t *ev = events_accepted(t->attempt, proto_op_name(t->op), rev, g);
  json_object_set_new(ev, "target", json_integer((json_int_t)target));
  devents_add(D, ev);
  r = json_pack("{s:b, s:s, s:I, s:I, s:o, s:I}", "ok", 1, "outcome", txn_reason_name(TXN_ACCEPTED), "revision",
                (json_int_t)rev, "target", (json_int_t)target, "changes", storeio_revision_changes(dstore(D), rev),
                "generation", (json_int_t)g);
  dclients_reply(D, t->responder, t->responder_id, r);
  char extra[64];
  snprintf(extra, sizeof extra, "-> revision %" PRIu64, rev);
  finish_txn(D, txn_reason_name(TXN_ACCEPTED), extra);
  /* the live world becomes REV's: a fresh worker from the new CURRENT */
  dworker_stop(D);
  D->wait = W_NONE;
  D->base = g;
  dworker_restart(D);
}

/* Start the transaction p.  A call takes the batchable calls queued behind
** it along: the worker gets them in one "attempts" request and runs them
** back to back, sending each outcome as it is known, so a crowd of clients
** costs one hand-over, not one each (see also dsched_pump: calls arriving
** while a batch runs are sent after it). */
static void start_txn(Daemon *D, Pending *p) {
  json_t *gen = json_object_get(p->req, "generation");
  if (dropped(D, p)) return;
  if (gen && (uint64_t)json_integer_value(gen) != D->gen) {
    reply_stale(D, p, "the world changed since your view");
    return;
  }
  if (p->op == PROTO_ROLLBACK) {
    rollback(D, p);
    return;
  }
  /* a plain call runs on whatever the calls before it left: no generation;
  ** it takes the calls queued behind it along, in one frame */
  calls_open(D);
  size_t at = D->wframe.len;
  request_frame_write(&D->wframe, p->op, p->req, !batchable(p), D->gen);
  size_t end = D->wframe.len;
  begin_txn(D, p);
  size_t more = D->cur.op == PROTO_CALL ? take_batch(D, &D->wframe) : 0;
  calls_send(D, !more, at, end);
}

static void send_command(Daemon *D, Pending *p) {
  json_t *a = json_object_get(p->req, "action");
  json_t *gen = json_object_get(p->req, "generation");
  if ((uint64_t)json_integer_value(gen) != D->gen) {
    reply_stale(D, p, "the pause changed since your view");
    return;
  }
  json_t *m = json_pack("{s:s, s:O, s:O}", "op", wire_op_name(WIRE_COMMAND), "type", json_object_get(a, "type"),
                        "generation", gen);
  json_t *v;
  if ((v = json_object_get(a, "source"))) json_object_set(m, "source", v);
  if ((v = json_object_get(a, "restart_id"))) json_object_set(m, "restart_id", v);
  if ((v = json_object_get(a, "arguments"))) json_object_set(m, "arguments", v);
  if ((v = json_object_get(a, "package"))) json_object_set(m, "package", v);
  Txn *t = &D->cur;
  json_decref(t->responder_id);
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  t->sent = txn_cmd_parse(json_string_value(json_object_get(a, "type")));
  D->wait = W_ATTEMPT;
  dworker_send(D, m);
}

void dsched_abort_pause(Daemon *D, const char *why) {
  Txn *t = &D->cur;
  json_decref(t->responder_id);
  t->responder = 0;
  t->responder_id = NULL;
  dlog(D, "attempt %" PRIu64 ": %s; aborting", t->attempt, why);
  t->sent = TXN_CMD_ABORT;
  D->wait = W_ATTEMPT;
  dworker_send(D, json_pack("{s:s, s:s, s:I}", "op", wire_op_name(WIRE_COMMAND), "type",
                            txn_cmd_name(TXN_CMD_ABORT), "generation", (json_int_t)D->gen));
}

/* Give the worker its next request, if it is free and one waits. */
void dsched_pump(Daemon *D) {
  /* While the worker runs calls, calls that arrive join them: the worker
  ** runs what it was sent in order, and takes them up without waiting for
  ** the daemon, which meanwhile reads and answers clients (a pipeline over
  ** the two processes).  Not when a query or another kind of transaction
  ** waits: those would wait for the end of the stream. */
  if (D->w.fd >= 0 && (D->wait == W_ATTEMPT || D->wait == W_COMMIT) && D->cur.active &&
      D->cur.op == PROTO_CALL && !D->stopping && !D->queryq.n && batchable(dqueue_peek(&D->txq))) {
    calls_open(D);
    if (take_batch(D, &D->wframe)) calls_send(D, 0, 0, 0);
  }
  while (D->w.fd >= 0 && D->wait == W_NONE) {
    if (D->batch.n) {  /* the worker goes on with the calls it was sent */
      Pending p = dqueue_pop(&D->batch);
      begin_txn(D, &p);
      dqueue_pending_free(&p);
      return;
    }
    if (D->queryq.n) {
      /* a view never shows what is not durable: the query waits for the
      ** held calls' commit, and no new call starts before it */
      if (dgroup_holds(D)) return;
      D->query = dqueue_pop(&D->queryq);
      D->wait = W_QUERY;
      dworker_send(D, json_deep_copy(D->query.req));
      continue;
    }
    if (D->in_pause) {
      if (D->stopping && !D->cur.aborting_for_shutdown) {
        D->cur.aborting_for_shutdown = 1;
        dsched_abort_pause(D, "the kernel is shutting down");
        continue;
      }
      if (!D->cmdq.n) return;
      Pending p = dqueue_pop(&D->cmdq);
      send_command(D, &p);
      dqueue_pending_free(&p);
      continue;
    }
    if (D->stopping || !D->txq.n) return;
    /* a transaction that is not a plain call runs alone, on durable state */
    if (dgroup_holds(D) && !batchable(dqueue_peek(&D->txq))) return;
    Pending p = dqueue_pop(&D->txq);
    start_txn(D, &p);
    dqueue_pending_free(&p);
  }
}

/* ------------------------------------------------------------ frames */

/* The worker reported an accepted attempt awaiting commit: publish it, with
** the events that led to it, in one LMDB transaction; then tell the worker
** to commit (or restore, when publishing failed). */
static void publish(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen) {
  Txn *t = &D->cur;
  uint64_t gen = (uint64_t)json_integer_value(json_object_get(m, "generation"));
  /* the generation after the commit, recorded with the revision */
  store_rev_info info = {t->op == PROTO_CALL ? STORE_REV_APPLICATION : STORE_REV_ACTION, gen + 1, 0,
                         JITI_VERSION, t->summary, NULL, D->grant_text};
  publish_Result pr;
  devents_objects(D);   /* on failure some are texts: the publish fails, as out of memory would */
  publish_outcome(dstore(D), D->revision, &info, json_object_get(m, "changes"), blob, bloblen, D->events.ev,
                  D->events.time_ms, D->events.n, outcome_event(D, txn_reason_name(TXN_ACCEPTED), NULL), &pr);
  if (pr.code == STORE_OK) devents_written(D, pr.first_event);
  json_t *value = json_object_get(m, "value"), *output = json_object_get(m, "output");
  if (pr.code != STORE_OK) {
    t->reply = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", "publication-failed", "outcome",
                         "publication-failed", "message", pr.error);
    dlog(D, "attempt %" PRIu64 ": publication failed: %s", t->attempt, pr.error);
    D->wait = W_COMMIT;
    t->decision = WIRE_RESTORE;
    dworker_send(D, json_pack("{s:s}", "op", wire_op_name(WIRE_RESTORE)));
    return;
  }
  /* Entries identical to CURRENT's are no change: nothing was written, and
  ** the worker keeps the attempt without moving the generation. */
  t->published = 1;
  t->revision = pr.revision;
  t->published_gen = pr.changed ? gen + 1 : gen;
  if (pr.changed && gen + 1 > D->gen_saved) D->gen_saved = gen + 1;
  D->revision = pr.revision;
  t->reply = json_pack("{s:b, s:s, s:I, s:o}", "ok", 1, "outcome", "accepted", "revision",
                       (json_int_t)pr.revision, "changes", pr.changes);
  if (value) json_object_set(t->reply, "value", value);
  if (json_object_get(m, "values")) json_object_set(t->reply, "values", json_object_get(m, "values"));
  if (output) json_object_set(t->reply, "output", output);
  D->wait = W_COMMIT;
  t->decision = WIRE_COMMIT;
  t->decided_changed = pr.changed;
  dworker_send(D, json_pack("{s:s, s:I, s:b}", "op", wire_op_name(WIRE_COMMIT), "revision",
                            (json_int_t)pr.revision, "changed", pr.changed));
}

static void on_query_answer(Daemon *D, json_t *m, wire_Event ev) {
  D->wait = W_NONE;
  Pending q = D->query;
  D->query = (Pending){0};
  json_t *r;
  const char *member = wire_event_name(ev);
  if (ev == WIRE_ENTRY && !json_is_object(json_object_get(m, "entry")))
    r = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "not-found",
                  "message", "no such entry; observe lists the entries (kind and name)");
  else
    r = json_pack("{s:b, s:O}", "ok", 1, member, json_object_get(m, member));
  dtally_count(D, proto_op_name(q.op), json_is_true(json_object_get(r, "ok")) ? "ok" : "not-found");
  dclients_reply(D, q.client, q.id, r);
  dqueue_pending_free(&q);
}

static void on_paused(Daemon *D, json_t *m) {
  Txn *t = &D->cur;
  json_t *p = json_object_get(m, "pause");
  D->gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
  D->wait = W_NONE;
  int first = !D->in_pause;
  D->in_pause = 1;
  json_decref(D->pause);
  D->pause = json_incref(p);
  /* an absolute deadline from the pause: repairs that pause again do not
  ** extend it (a caller could hold the worker for ever) */
  if (first) t->deadline = daemon_now() + D->limits.pause_timeout;
  const char *refusal = json_string_value(json_object_get(p, "refusal"));
  json_t *r;
  if (refusal)
    r = json_pack("{s:b, s:s, s:s, s:s, s:I, s:O}", "ok", 0, "code", refusal, "message",
                  json_string_value(json_object_get(p, "error")), "status", "paused",
                  "generation", (json_int_t)D->gen, "pause", p);
  else
    r = json_pack("{s:b, s:s, s:I, s:O}", "ok", 1, "status", "paused", "generation",
                  (json_int_t)D->gen, "pause", p);
  json_t *lv = json_object_get(p, "last_value");
  if (lv && !refusal) json_object_set(r, "value", lv);
  if (first || (!lv && !refusal))  /* a new pause; not a repair's value or a refused command */
    devents_add(D, json_pack("{s:s, s:I, s:O, s:I}", "event", store_event_name(STORE_EV_PAUSED), "attempt",
                             (json_int_t)t->attempt, "condition", json_object_get(p, "condition_type"),
                             "generation", (json_int_t)D->gen));
  if (first) {
    json_t *report = json_object_get(p, "report");
    char shown[300];
    vouch_escape(json_string_value(report), json_string_length(report), shown, sizeof shown);
    dlog(D, "attempt %" PRIu64 " paused: %s", t->attempt, shown);
  }
  devents_flush(D);  /* a pause may last long: its record should not wait */
  dclients_reply(D, t->responder, t->responder_id, r);
  json_decref(t->responder_id);
  t->responder = 0;
  t->responder_id = NULL;
  if (first) {  /* the transactions waiting behind it that did not ask to wait */
    size_t n = D->txq.n;
    for (size_t i = 0; i < n; i++) {  /* once round the queue: the waiting keep their order */
      Pending q = dqueue_pop(&D->txq);
      if (!json_is_true(json_object_get(q.req, "wait")))
        dsched_reply_paused(D, q.client, q.id);
      else if (dqueue_push(&D->txq, q.client, q.id, q.req, q.op) != 0)
        dclients_reply_err(D, q.client, q.id, "busy", "the kernel is out of memory; retry later");
      dqueue_pending_free(&q);
    }
  }
}

static void on_outcome(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen) {
  Txn *t = &D->cur;
  const char *reason = json_string_value(json_object_get(m, "reason"));
  const char *status = json_string_value(json_object_get(m, "status"));
  if (!reason) reason = txn_reason_name(TXN_ERROR);
  int accepted = txn_reason_parse(reason) == TXN_ACCEPTED;
  if (status) snprintf(D->wstatus, sizeof D->wstatus, "%s", status);
  pause_end(D);
  dsched_fail_commands(D, "stale", "the paused transaction ended before this command ran; observe again");
  /* one that publishes nothing leaves no events: counted */
  if (t->active)
    devents_ended(D, t->attempt, t->op, reason,
                  accepted && t->op != PROTO_PREVIEW && !json_is_true(json_object_get(m, "committed")));
  if (t->grouped && t->active && dgroup_outcome(D, t, m, blob, bloblen)) {  /* held, or answered */
    D->wait = W_NONE;
    txn_clear(D);
    return;
  }
  if (accepted && status && !strcmp(status, txn_status_name(TXN_ST_AWAITING)) &&
      !json_is_true(json_object_get(m, "committed"))) {
    publish(D, m, blob, bloblen);
    return;
  }
  D->wait = W_NONE;
  const char *msg = json_string_value(json_object_get(m, "message"));
  if (t->timed_out && txn_reason_parse(reason) == TXN_ABORTED) msg = "aborted: the pause timed out";
  if (!t->active) return;
  /* the reply written as text, member by member (no jansson object made,
  ** dumped and freed on the path of every read call) */
  jtext_writer r = {0};
  jtext_begin(&r, '{');
  jtext_key(&r, "ok");
  jtext_bool(&r, accepted);
  json_t *v;
  if (accepted) {
    /* nothing to publish, or a preview (already restored) */
    /* a read changed nothing: no need to wait for the store writer */
    json_t *changes = json_object_get(m, "changes");
    jtext_key(&r, "outcome");
    jtext_string(&r, reason, strlen(reason));
    jtext_key(&r, "revision");
    jtext_int(&r, (json_int_t)D->revision);
    jtext_key(&r, "changes");
    json_t *brief = publish_brief(json_array_size(changes) ? dstore(D) : NULL, changes);
    jtext_json(&r, brief);
    json_decref(brief);
    if ((v = json_object_get(m, "value"))) jtext_key(&r, "value"), jtext_json(&r, v);
    if ((v = json_object_get(m, "values"))) jtext_key(&r, "values"), jtext_json(&r, v);
    if (t->op == PROTO_PREVIEW) jtext_key(&r, "restored"), jtext_bool(&r, 1);
    jtext_key(&r, "generation");
    jtext_int(&r, (json_int_t)D->gen);
  } else {
    jtext_key(&r, "code");
    jtext_string(&r, reason, strlen(reason));
    jtext_key(&r, "outcome");
    jtext_string(&r, reason, strlen(reason));
    jtext_key(&r, "message");
    jtext_string(&r, msg ? msg : "", msg ? strlen(msg) : 0);
    jtext_key(&r, "generation");
    jtext_int(&r, (json_int_t)D->gen);
    if (t->op == PROTO_APPLY || t->op == PROTO_INVARIANT_ADD || t->op == PROTO_INVARIANT_REMOVE)
      jtext_key(&r, "revision"), jtext_int(&r, (json_int_t)D->revision);  /* as it stays */
  }
  if ((v = json_object_get(m, "output"))) jtext_key(&r, "output"), jtext_json(&r, v);
  size_t len = 0;
  char *ev = accepted ? events_accepted_text(t->attempt, proto_op_name(t->op), D->revision, D->gen, t->key, &len)
                      : events_outcome_text(t->attempt, proto_op_name(t->op), reason, msg, t->key, &len);
  devents_outcome(D, t->attempt, t->key != NULL, ev, len);
  dclients_reply_text(D, t->responder, t->responder_id, &r);
  finish_txn(D, reason, NULL);
}

static void on_committed(Daemon *D, json_t *m) {
  Txn *t = &D->cur;
  const char *status = json_string_value(json_object_get(m, "status"));
  if (status) snprintf(D->wstatus, sizeof D->wstatus, "%s", status);
  D->wait = W_NONE;
  json_t *r = t->reply;
  t->reply = NULL;
  if (r) json_object_set_new(r, "generation", json_integer((json_int_t)D->gen));
  char extra[64] = "";
  if (t->published) {  /* its outcome was recorded with the revision */
    snprintf(extra, sizeof extra, "-> revision %" PRIu64, t->revision);
  } else {
    devents_add(D, outcome_event(D, txn_reason_name(TXN_PUBLICATION_FAILED), NULL));
  }
  if (r) dclients_reply(D, t->responder, t->responder_id, r);
  finish_txn(D, txn_reason_name(t->published ? TXN_ACCEPTED : TXN_PUBLICATION_FAILED), extra);
}

void dsched_frame(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen) {
  if (dvouch_frame(D, m, blob, bloblen)) return;   /* broke a rule: the worker is gone */
  int ev = wire_event_of(m);
  json_t *g = json_object_get(m, "generation");
  if (ev == WIRE_OUTCOME) D->w.outcomes_seen++;  /* (wproc_outcomes_unseen) */
  /* generations only grow; a call run on top of held ones reports the
  ** worker's count before their commits, which the daemon already made */
  if (json_is_integer(g) && (uint64_t)json_integer_value(g) > D->gen) D->gen = (uint64_t)json_integer_value(g);
  if (dgroup_ack(D, m, ev)) {
    /* a group's commit or restore answered */
  } else if (D->wait == W_QUERY && (ev == WIRE_VIEW || ev == WIRE_ENTRY || ev == WIRE_INVARIANTS)) {
    on_query_answer(D, m, (wire_Event)ev);
  } else if (D->wait == W_ATTEMPT && ev == WIRE_PAUSED) {
    on_paused(D, m);
  } else if (D->wait == W_ATTEMPT && ev == WIRE_OUTCOME) {
    on_outcome(D, m, blob, bloblen);
  } else if (D->wait == W_COMMIT && (ev == WIRE_COMMITTED || ev == WIRE_RESTORED)) {
    on_committed(D, m);
  } else {
    dlog(D, "unexpected message from the worker (%s) while waiting (%d); restarting it",
         ev >= 0 ? wire_event_name((wire_Event)ev) : "?", D->wait);
    dworker_died(D);
  }
}
