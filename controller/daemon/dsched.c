/*
** dsched.c — what the daemon's worker does next, and what comes of it
** (daemon.h, docs/protocol.md "Transactions", docs/worker-frames.md):
** queries, transactions (calls, actions, previews, invariant changes), the
** batches calls are handed over in, commands to a paused transaction; the
** frames the worker answers with (a transaction's outcome and all that
** follows it are dcall.c's); a rollback and its check; and the end of
** whatever it was doing when it died.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "txn.h"

/* ------------------------------------------------------------- the end */

void dsched_txn_clear(Daemon *D) {
  Txn *t = &D->live.cur;
  if (t->cancel_timer) dpoll_timer_del(D->poll, t->cancel_timer);
  if (t->interrupt_timer) dpoll_timer_del(D->poll, t->interrupt_timer);
  if (D->live.w.progress) {  /* a cancel or an interrupt asked for it is over */
    __atomic_store_n(&((worker_Progress *)D->live.w.progress)->cancel_at, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&((worker_Progress *)D->live.w.progress)->interrupt_at, 0, __ATOMIC_RELEASE);
  }
  free(t->source);
  free(t->summary);
  json_decref(t->responder_id);
  json_decref(t->outcome);
  json_decref(t->changes);
  free(t->failure);
  json_decref(t->req);
  json_decref(t->repair);
  free(t->key);
  free(t->invariant);
  dtraffic_call_free(t->traffic);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------ cancelling */

/* The worker acts on a cancel at its next evaluation step; a signal that
** came between two instructions of its step counter may be lost, so it is
** sent again until the outcome comes (wire.h, cancel_at). */
#define CANCEL_RESEND 0.01

static double cancel_again(void *ud, double now) {
  Daemon *D = ud;
  Txn *t = &D->live.cur;
  if (!t->active || !t->cancel_timer || D->live.wait != W_ATTEMPT || (D->live.in_pause && t->sent != TXN_CMD_RESUME) ||
      !D->live.w.pid) {
    t->cancel_timer = 0;
    return -1;
  }
  kill(D->live.w.pid, WORKER_CANCEL_SIGNAL);
  return now + CANCEL_RESEND;
}

/* What cancel and interrupt refuse alike (done: "cancelled",
** "interrupted"): nothing runs, another attempt than the one named runs, a
** worker that cannot be asked.  The code with why, or NULL. */
static const char *not_stoppable(Daemon *D, uint64_t attempt, const char *done, char *why, size_t n) {
  Txn *t = &D->live.cur;
  DWorker *k = &D->live;
  if (!t->active) {
    snprintf(why, n, "no transaction is running (status shows the kernel's state); nothing was %s", done);
    return "not-running";
  }
  if (attempt && attempt != t->attempt) {
    snprintf(why, n, "attempt %" PRIu64 " is not running (attempt %" PRIu64 " is; status shows "
             "current_attempt); nothing was %s", attempt, t->attempt, done);
    return "not-found";
  }
  if (!k->w.progress || !k->w.pid) {
    snprintf(why, n, "the worker was started without its progress page and cannot be asked to stop; "
             "jiti stop ends it");
    return "not-allowed";
  }
  return NULL;
}

const char *dsched_cancel(Daemon *D, uint64_t attempt, char *why, size_t n) {
  Txn *t = &D->live.cur;
  DWorker *k = &D->live;
  const char *code = not_stoppable(D, attempt, "cancelled", why, n);
  if (code) return code;
  /* a computation resumed from its pause runs again: it may be cancelled;
  ** a pause, or a repair running at one, is answered by an abort */
  if (k->in_pause && !(k->wait == W_ATTEMPT && t->sent == TXN_CMD_RESUME)) {
    snprintf(why, n, "attempt %" PRIu64 " is paused, not running: abort it (act abort, jiti act --abort)%s",
             t->attempt, k->wait == W_ATTEMPT ? "; the repair running at the pause can be interrupted (jiti "
             "interrupt)" : "");
    return "paused";
  }
  if (k->wait != W_ATTEMPT) {
    snprintf(why, n, "attempt %" PRIu64 " is not running (it is being published); nothing was cancelled",
             t->attempt);
    return "not-running";
  }
  worker_Progress *pg = (worker_Progress *)k->w.progress;
  __atomic_store_n(&pg->cancel_at, k->w.outcomes_seen + 1, __ATOMIC_RELEASE);
  kill(k->w.pid, WORKER_CANCEL_SIGNAL);
  if (!t->cancel_timer) t->cancel_timer = dpoll_timer(D->poll, daemon_now() + CANCEL_RESEND, cancel_again, D);
  dlog(D, "attempt %" PRIu64 ": cancel requested", t->attempt);
  return NULL;
}

/* ---------------------------------------------------------- interrupting */

/* An interrupt is answered by the pause it makes (or by the outcome, when
** the transaction ended first): the signal is sent again until then, the
** worker acting on each request once (wire.h, interrupt_seq). */
static void interrupt_over(Daemon *D) {
  Txn *t = &D->live.cur;
  if (t->interrupt_timer) dpoll_timer_del(D->poll, t->interrupt_timer);
  t->interrupt_timer = 0;
  if (D->live.w.progress)
    __atomic_store_n(&((worker_Progress *)D->live.w.progress)->interrupt_at, 0, __ATOMIC_RELEASE);
}

static double interrupt_again(void *ud, double now) {
  Daemon *D = ud;
  Txn *t = &D->live.cur;
  if (!t->active || !t->interrupt_timer || D->live.wait != W_ATTEMPT || !D->live.w.pid) {
    t->interrupt_timer = 0;
    return -1;
  }
  kill(D->live.w.pid, WORKER_CANCEL_SIGNAL);
  return now + CANCEL_RESEND;
}

const char *dsched_interrupt(Daemon *D, uint64_t attempt, char *why, size_t n) {
  Txn *t = &D->live.cur;
  DWorker *k = &D->live;
  const char *code = not_stoppable(D, attempt, "interrupted", why, n);
  if (code) return code;
  if (k->in_pause && k->wait != W_ATTEMPT) {
    snprintf(why, n, "attempt %" PRIu64 " is paused already: nothing runs to interrupt (act: a repair, "
             "resume, abort)", t->attempt);
    return "paused";
  }
  if (k->wait != W_ATTEMPT) {
    snprintf(why, n, "attempt %" PRIu64 " is not running (it is being published); nothing was interrupted",
             t->attempt);
    return "not-running";
  }
  if (!t->pausable) {
    snprintf(why, n, "attempt %" PRIu64 " is a %s that cannot pause (an unhandled error ends it; a call pauses "
             "only when it asks \"on_error\": \"pause\"): only jiti cancel stops it", t->attempt, proto_op_name(t->op));
    return "not-pausable";
  }
  worker_Progress *pg = (worker_Progress *)k->w.progress;
  uint64_t seq = __atomic_load_n(&pg->interrupt_seq, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&pg->interrupt_seq, seq, __ATOMIC_RELEASE);
  __atomic_store_n(&pg->interrupt_at, k->w.outcomes_seen + 1, __ATOMIC_RELEASE);
  kill(k->w.pid, WORKER_CANCEL_SIGNAL);
  if (!t->interrupt_timer)
    t->interrupt_timer = dpoll_timer(D->poll, daemon_now() + CANCEL_RESEND, interrupt_again, D);
  dlog(D, "attempt %" PRIu64 ": interrupt requested", t->attempt);
  return NULL;
}

void dsched_client_gone(Daemon *D, uint64_t client) {
  Txn *t = &D->live.cur;
  if (!t->active || t->responder != client || t->keep_on_disconnect) return;
  char why[300];
  if (!dsched_cancel(D, t->attempt, why, sizeof why))
    dlog(D, "attempt %" PRIu64 ": its client left; cancelled", t->attempt);
}

/* Commands queued for a pause that has ended: their generation is old. */
void dsched_fail_commands(Daemon *D, const char *code, const char *why) {
  while (D->cmdq.n) {
    Pending p = dqueue_pop(&D->cmdq);
    dreply_err(D, p.client, p.id, code, "%s", why);
    dqueue_pending_free(&p);
  }
}

/* The pause (if any) is over. */
void dsched_pause_end(Daemon *D) {
  D->live.in_pause = 0;
  json_decref(D->live.pause);
  D->live.pause = NULL;
}

static int queued(Queue *q, uint64_t client) {
  for (size_t i = 0; i < q->n; i++)
    if (q->v[q->head + i].client == client) return 1;
  return 0;
}

int dsched_client_waits(Daemon *D, uint64_t client) {
  return (D->live.cur.active && D->live.cur.responder == client) || (D->live.wait == W_QUERY && D->live.query.client == client) ||
         dgroup_waits(D, client) ||
         queued(&D->txq, client) || queued(&D->queryq, client) || queued(&D->cmdq, client) ||
         queued(&D->live.batch, client);
}

void dsched_reply_paused(Daemon *D, uint64_t client, json_t *id) {
  json_t *r = json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", "paused", "message",
                        "a transaction is paused: answer it first (act: evaluate a repair, resume, abort), or "
                        "send this with \"wait\": true to wait until the pause ends", "status", "paused",
                        "generation", (json_int_t)D->gen);
  if (D->live.pause) json_object_set(r, "pause", D->live.pause);
  dreply(D, client, id, r);
}

static void begin_txn(Daemon *D, Pending *p);

/* The worker died with `lost` outcomes in its outbox: the running call and
** the lost-1 calls of its batch after it ran to their end, and nothing of
** them is left.  They move to *again, to run again on the fresh worker, in
** order; the call after them, the one the worker was running, becomes the
** running one here, to end as interrupted.  (Out of memory, they end as
** interrupted, with the running one.) */
static void again_lost(Daemon *D, const char *how, uint64_t lost, Queue *again) {
  Txn *t = &D->live.cur;
  int ok = dqueue_push(again, t->responder, t->responder_id, t->req, t->op) == 0;
  for (uint64_t i = 1; ok && i < lost && D->live.batch.n; i++) {
    Pending p = dqueue_pop(&D->live.batch);
    if (dqueue_push(again, p.client, p.id, p.req, p.op) != 0) {
      ok = 0;
      dqueue_push_front(&D->live.batch, p);   /* (a slot was just freed) */
    } else {
      dqueue_pending_free(&p);
    }
  }
  if (!ok) {   /* the first is the running call's, answered as it ends */
    for (size_t i = 0; again->n; i++) {
      Pending p = dqueue_pop(again);
      if (i)
        dreply_err(D, p.client, p.id, "interrupted", "the worker %s after this call ran, its outcome "
                           "unsent (and the kernel is out of memory); nothing of it was kept", how);
      dqueue_pending_free(&p);
    }
    return;
  }
  json_t *ev = dcall_event(D, store_event_name(STORE_EV_INTERRUPTED), NULL);
  json_object_set_new(ev, "reason", json_sprintf("the worker %s after this call ran, its outcome unsent: it runs "
                                                 "again", how));
  devents_add(D, ev);
  dcall_finish(D, "interrupted", "(its outcome was lost with the worker: it runs again)");
  if (D->live.batch.n) {  /* the one that was running */
    Pending p = dqueue_pop(&D->live.batch);
    begin_txn(D, &p);
    dqueue_pending_free(&p);
  }
}

void dsched_worker_died(Daemon *D, const char *how, uint64_t lost) {
  Txn *t = &D->live.cur;
  Queue again = {0};
  if (t->check) {   /* a rollback's check: the rollback ends with the worker */
    dworker_helper_end(D, t->check, 1);
    t->check = NULL;
  }
  dgroup_worker_died(D, how);   /* held calls: their revisions are lost */
  if (lost && t->active && t->grouped && D->live.wait == W_ATTEMPT) again_lost(D, how, lost, &again);
  if (t->active) {
    if (D->live.wait == W_COMMIT && t->published) {
      /* the revision is durable; the fresh worker imports it */
      D->gen = t->published_gen;  /* recorded with the revision; the next worker counts past it */
      dcall_reply_decided(D);
      /* its outcome was recorded with the revision */
      dcall_finish(D, "accepted", "(worker died after publication)");
    } else {
      char msg[512];
      snprintf(msg, sizeof msg, "the worker %s during attempt %" PRIu64 "; nothing was published; "
               "the kernel is starting a fresh worker from revision %" PRIu64 " ('jiti status' shows when it "
               "serves)", how, t->attempt, D->revision);
      json_t *ev = dcall_event(D, store_event_name(STORE_EV_INTERRUPTED), NULL);
      json_object_set_new(ev, "reason", json_string(how));
      devents_add(D, ev);
      if (t->responder) dreply_err(D, t->responder, t->responder_id, "interrupted", "%s", msg);
      drepair_apply_ended(D, t, 0, "interrupted", msg);
      dcall_finish(D, "interrupted", how);
    }
  }
  if (D->live.wait == W_QUERY && D->live.query.retried) {
    /* the worker died on it twice: it would kill every fresh worker */
    dreply_err(D, D->live.query.client, D->live.query.id, "interrupted", "the worker %s twice while answering this "
                       "query; the kernel is starting a fresh worker from revision %" PRIu64, how, D->revision);
    dqueue_pending_free(&D->live.query);
    D->live.query = (Pending){0};
  } else if (D->live.wait == W_QUERY) {  /* the fresh worker answers it, first */
    D->live.query.retried = 1;
    if (dqueue_push_front(&D->queryq, D->live.query) != 0) {
      dreply_err(D, D->live.query.client, D->live.query.id, "interrupted", "the worker %s while answering this "
                         "query (and the kernel is out of memory)", how);
      dqueue_pending_free(&D->live.query);
    }
    D->live.query = (Pending){0};
  }
  /* calls sent with the one that was running never started: they run on
  ** the fresh worker, first, in their order (none comes when stopping) */
  while (D->live.batch.n) {
    Pending p = dqueue_pop_back(&D->live.batch);
    if (D->stopping) {
      dreply_err(D, p.client, p.id, "shutting-down", "the kernel is shutting down; nothing ran");
      dqueue_pending_free(&p);
    } else if (dqueue_push_front(&D->txq, p) != 0) {
      dreply_err(D, p.client, p.id, "interrupted", "the worker %s before this call ran (and the kernel "
                         "is out of memory)", how);
      dqueue_pending_free(&p);
    }
  }
  /* calls that ran before it, their outcomes lost: again, ahead of those */
  while (again.n) {
    Pending p = dqueue_pop_back(&again);
    if (D->stopping) {
      dreply_err(D, p.client, p.id, "shutting-down", "the kernel is shutting down; this call ran, but "
                         "the worker died before its outcome was sent: nothing of it was kept");
      dqueue_pending_free(&p);
    } else if (dqueue_push_front(&D->txq, p) != 0) {
      dreply_err(D, p.client, p.id, "interrupted", "the worker %s after this call ran, its outcome "
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
  return p && p->op == PROTO_CALL && !json_object_get(p->req, "generation") && !request_pausable(p->op, p->req);
}

/* Make p the running transaction: its attempt number, its log source (its
** source, engine.h request_source) and revision summary, its "started"
** event. */
static void begin_txn(Daemon *D, Pending *p) {
  const char *source = request_source(p->req);
  Txn *t = &D->live.cur;
  dsched_txn_clear(D);
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
  const char *od = json_string_value(json_object_get(p->req, "on_disconnect"));
  /* a call with an idempotency key is kept by default: the key is there so
  ** that its client can come back for the outcome after a dropped line */
  t->keep_on_disconnect = od ? !strcmp(od, "keep") : dkeys_of(p->req) != NULL;
  t->pausable = request_pausable(p->op, p->req);
  t->grouped = batchable(p);
  t->pausable = request_pausable(p->op, p->req);
  t->req = t->grouped ? json_incref(p->req) : NULL;
  /* a standby's call, run as a preview (drepl_refuses) */
  t->standby_call = p->op == PROTO_PREVIEW && !strcmp(json_string_value(json_object_get(p->req, "op")) ?: "", "call");
  t->repair = p->op == PROTO_REPAIR ? json_incref(p->req) : NULL;
  t->key = events_key_new(p->req);
  t->noting = p->note;
  if (p->op == PROTO_INVARIANT_ADD || p->op == PROTO_INVARIANT_REMOVE)
    t->invariant = strdup(json_string_value(json_object_get(p->req, "name")));  /* checked: a string */
  t->sent = TXN_SENT_ATTEMPT;
  size_t len = 0;
  char *ev = events_started_text(t->attempt, proto_op_name(t->op), src, D->revision, D->gen, &len);
  devents_started(D, t->attempt, t->op, ev, len);
  D->live.wait = W_ATTEMPT;
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
  while (D->live.batch.n + 1 < DAEMON_MAX_BATCH && batchable(dqueue_peek(&D->txq))) {
    Pending q = dqueue_pop(&D->txq);
    if (dropped(D, &q)) {
      dqueue_pending_free(&q);
      continue;
    }
    if (dqueue_push(&D->live.batch, q.client, q.id, q.req, q.op) == 0) {
      int note = dqueue_back(&D->live.batch)->note = dtraffic_asks(D, q.op, q.req);
      if (note & REQUEST_NOTE_PARK) D->shadows.park_asks++;
      request_frame_write(items, q.op, q.req, 0, 0, note);
      moved++;
    } else {
      dreply_err(D, q.client, q.id, "busy", "the kernel is out of memory; retry later");
    }
    dqueue_pending_free(&q);
  }
  return moved;
}

/* Open the frame of a batch of calls in D->live.frame: {"op":"attempts",
** "items":[ ... (calls_send closes it). */
static void calls_open(Daemon *D) {
  jtext_writer *w = &D->live.frame;
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
  jtext_writer *w = &D->live.frame;
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
  dreply(D, p->client, p->id, json_pack("{s:b, s:s, s:s, s:I}", "ok", 0, "code", "stale", "message", msg,
                                                "generation", (json_int_t)D->gen));
}

/* A rollback: REV's world with CURRENT's invariants is checked by a
** helper worker of its own (dworker_helper: the same start-up frames as
** offline), the revert published, and the live worker replaced by one
** started from the new CURRENT.  The loop goes on meanwhile (the check
** takes about a second per 100,000 entries on a small machine): clients
** are answered what the kernel answers itself, the live worker waits with
** the rollback's end (W_CHECK), as other transactions and queries do. */
static void rollback_end(Daemon *D, const char *reason, const char *msg);

static void check_ready(Daemon *D, DWorker *k, json_t *ready) {
  Txn *t = &D->live.cur;
  const char *reason = NULL, *msg = NULL;
  char why[1100];
  vouch_Fail vf;
  t->check = NULL;
  if (vouch_ready(ready, k->base, &D->grant, &vf) != 0) {
    /* the checking worker is no more trusted than the live one */
    dlog(D, "attempt %" PRIu64 ": the worker checking revision %" PRIu64 " broke the frame rule %s (%s); killing it",
         t->attempt, t->target, vf.rule, vf.detail);
    dworker_helper_end(D, k, 1);
    reason = store_event_name(STORE_EV_INTERRUPTED);
    snprintf(why, sizeof why, "the worker checking revision %" PRIu64 " broke the frame rule %s and was killed; "
             "nothing was published", t->target, vf.rule);
    msg = why;
  } else {
    const char *st = json_string_value(json_object_get(ready, "status"));
    if (st && !strcmp(st, txn_status_name(TXN_ST_FAULTED))) {
      reason = txn_reason_name(TXN_UNSAFE);
      snprintf(why, sizeof why, "%s", json_string_value(json_object_get(ready, "message")));
      msg = why;
    }
    dworker_helper_end(D, k, 0);
  }
  D->live.wait = W_NONE;
  rollback_end(D, reason, msg);
}

static void check_failed(Daemon *D, DWorker *k, const char *err) {
  char why[1100];
  (void)k;
  D->live.cur.check = NULL;
  D->live.wait = W_NONE;
  snprintf(why, sizeof why, "the world of revision %" PRIu64 " cannot be rebuilt: %s", D->live.cur.target, err);
  rollback_end(D, txn_reason_name(TXN_ERROR), why);
}

static const DWorkerOps check_ops = {check_ready, check_failed};

static void rollback(Daemon *D, Pending *p) {
  uint64_t target = (uint64_t)json_integer_value(json_object_get(p->req, "revision"));
  begin_txn(D, p);
  Txn *t = &D->live.cur;
  D->live.wait = W_NONE;
  t->target = target;
  jiti_Limits lim = D->limits.eval;
  char err[1024], why[1100];
  limits_from_json(json_object_get(p->req, "limits"), &D->limits.eval, 0, &lim, err, sizeof err);
  wproc_Plan plan = {target, 1, target, 0, &lim, &D->grant, 1, 0};
  if (!(t->check = dworker_helper(D, "checking worker", &plan, &check_ops, NULL, err, sizeof err))) {
    snprintf(why, sizeof why, "the world of revision %" PRIu64 " cannot be rebuilt: %s", target, err);
    rollback_end(D, txn_reason_name(TXN_ERROR), why);
    return;
  }
  D->live.wait = W_CHECK;
}

/* The check said reason (NULL: the world is sound): the revert published,
** or the rollback refused. */
static void rollback_end(Daemon *D, const char *reason, const char *msg) {
  Txn *t = &D->live.cur;
  uint64_t target = t->target;
  char why[1100];
  uint64_t g = D->gen + 1, rev = 0;
  if (!reason) {
    devents_flush(D);  /* the attempt's start goes first */
    store_rev_info info = {STORE_REV_ROLLBACK, g, 0, JITI_VERSION, t->summary, NULL, D->grant_text};
    if (store_publish_revert(dstore(D), D->revision, target, &info, &rev) != STORE_OK) {
      reason = txn_reason_name(TXN_PUBLICATION_FAILED);
      snprintf(why, sizeof why, "%s", store_errmsg(dstore(D)));
      msg = why;
    } else {
      int rc = drepl_commit(D->repl, dstore(D), rev, rev, NULL, why, sizeof why);   /* replicated: etcd's too */
      if (rc == -2) drepl_uncertain(D, why);
      if (rc) {
        reason = txn_reason_name(rc == DREPL_FENCED ? TXN_FENCED : TXN_PUBLICATION_FAILED);
        msg = why;
        drepl_fence(D, why, rc == DREPL_FENCED);
      }
    }
  }
  if (reason) {
    devents_add(D, dcall_event(D, reason, msg));
    reply_Outcome r = {.reason = reason, .message = msg, .generation = D->gen, .revision = D->revision,
                       .show_revision = 1};
    dcall_reply(D, t->responder, t->responder_id, &r);
    dcall_finish(D, reason, NULL);
    return;
  }
  D->revision = rev;
  D->gen = g;  /* recorded with the revision: the new worker's */
  if (g > D->gen_saved) D->gen_saved = g;
  json_t *ev = events_accepted(t->attempt, proto_op_name(t->op), rev, g);
  json_object_set_new(ev, "target", json_integer((json_int_t)target));
  devents_add(D, ev);
  json_t *changes = storeio_revision_changes(dstore(D), rev);
  reply_Outcome r = {.reason = txn_reason_name(TXN_ACCEPTED), .revision = rev, .target = target,
                     .changes = changes, .generation = g};
  dcall_reply(D, t->responder, t->responder_id, &r);
  json_decref(changes);
  char extra[64];
  snprintf(extra, sizeof extra, "-> revision %" PRIu64, rev);
  dcall_finish(D, txn_reason_name(TXN_ACCEPTED), extra);
  /* the live world becomes REV's: a fresh worker from the new CURRENT */
  dworker_stop(D);
  D->live.wait = W_NONE;
  D->live.base = g;
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
  if (p->op == PROTO_REPAIR && drepair_stale(D, p->client, p->id, p->req)) return;
  /* a plain call runs on whatever the calls before it left: no generation;
  ** it takes the calls queued behind it along, in one frame */
  calls_open(D);
  size_t at = D->live.frame.len;
  p->note = dtraffic_asks(D, p->op, p->req);
  if (p->note & REQUEST_NOTE_PARK) D->shadows.park_asks++;
  request_frame_write(&D->live.frame, p->op, p->req, !batchable(p), D->gen, p->note);
  size_t end = D->live.frame.len;
  begin_txn(D, p);
  size_t more = D->live.cur.op == PROTO_CALL ? take_batch(D, &D->live.frame) : 0;
  calls_send(D, !more, at, end);
}

static void send_command(Daemon *D, Pending *p) {
  json_t *a = json_object_get(p->req, "action");
  json_t *gen = json_object_get(p->req, "generation");
  if ((uint64_t)json_integer_value(gen) != D->gen) {
    reply_stale(D, p, "the pause changed since your view");
    return;
  }
  json_t *m = wframe_command(json_string_value(json_object_get(a, "type")), gen, a);
  Txn *t = &D->live.cur;
  json_decref(t->responder_id);
  t->responder = p->client;
  t->responder_id = p->id ? json_incref(p->id) : NULL;
  t->sent = txn_cmd_parse(json_string_value(json_object_get(a, "type")));
  D->live.wait = W_ATTEMPT;
  dworker_send(D, m);
}

void dsched_abort_pause(Daemon *D, const char *why) {
  Txn *t = &D->live.cur;
  json_decref(t->responder_id);
  t->responder = 0;
  t->responder_id = NULL;
  dlog(D, "attempt %" PRIu64 ": %s; aborting", t->attempt, why);
  t->sent = TXN_CMD_ABORT;
  D->live.wait = W_ATTEMPT;
  json_t *gen = json_integer((json_int_t)D->gen);
  dworker_send(D, wframe_command(txn_cmd_name(TXN_CMD_ABORT), gen, NULL));
  json_decref(gen);
}

double dsched_before(void *ud, double now) {
  (void)now;
  dsched_pump(ud);
  return -1;
}

double dsched_before_pause(void *ud, double now) {
  Daemon *D = ud;
  Txn *t = &D->live.cur;
  if (!D->live.in_pause || D->live.wait != W_NONE || !t->active || t->timed_out) return -1;
  if (now < t->deadline) return t->deadline - now;
  t->timed_out = 1;
  char why[80];
  snprintf(why, sizeof why, "the pause timed out after %g s", D->limits.pause_timeout);
  dsched_abort_pause(D, why);
  return -1;
}

/* Give the worker its next request, if it is free and one waits. */
void dsched_pump(Daemon *D) {
  /* While the worker runs calls, calls that arrive join them: the worker
  ** runs what it was sent in order, and takes them up without waiting for
  ** the daemon, which meanwhile reads and answers clients (a pipeline over
  ** the two processes).  Not when a query or another kind of transaction
  ** waits: those would wait for the end of the stream. */
  if (D->live.w.fd >= 0 && (D->live.wait == W_ATTEMPT || D->live.wait == W_COMMIT) && D->live.cur.active &&
      D->live.cur.op == PROTO_CALL && !D->stopping && !D->queryq.n && !dshadow_ready(D) &&
      batchable(dqueue_peek(&D->txq))) {
    calls_open(D);
    if (take_batch(D, &D->live.frame)) calls_send(D, 0, 0, 0);
  }
  while (D->live.w.fd >= 0 && D->live.wait == W_NONE) {
    if (D->live.batch.n) {  /* the worker goes on with the calls it was sent */
      Pending p = dqueue_pop(&D->live.batch);
      begin_txn(D, &p);
      dqueue_pending_free(&p);
      return;
    }
    if (D->queryq.n) {
      /* a view never shows what is not durable: the query waits for the
      ** held calls' commit, and no new call starts before it */
      if (dgroup_holds(D)) return;
      D->live.query = dqueue_pop(&D->queryq);
      D->live.wait = W_QUERY;
      dworker_send(D, json_deep_copy(D->live.query.req));
      continue;
    }
    if (D->live.in_pause) {
      if (D->stopping && !D->live.cur.aborting_for_shutdown) {
        D->live.cur.aborting_for_shutdown = 1;
        dsched_abort_pause(D, "the kernel is shutting down");
        continue;
      }
      if (!D->cmdq.n) return;
      Pending p = dqueue_pop(&D->cmdq);
      send_command(D, &p);
      dqueue_pending_free(&p);
      continue;
    }
    /* the watch undoes a repair between transactions, on durable state */
    if (dwatch_undo_due(D) && !D->stopping) {
      if (!dgroup_holds(D)) dwatch_undo(D);
      return;
    }
    if (dshadow_ready(D)) {
      /* a verification goes between attempts, on durable state: no call
      ** starts before it (those held are committed first), as for a query */
      if (dgroup_holds(D)) return;
      if (dshadow_pump(D)) continue;
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

static void on_query_answer(Daemon *D, json_t *m, wire_Event ev) {
  D->live.wait = W_NONE;
  Pending q = D->live.query;
  D->live.query = (Pending){0};
  json_t *r;
  const char *member = wire_event_name(ev);
  if (ev == WIRE_ENTRY && !json_is_object(json_object_get(m, "entry")))
    r = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "not-found",
                  "message", "no such entry; observe lists the entries (kind and name)");
  else
    r = json_pack("{s:b, s:O}", "ok", 1, member, json_object_get(m, member));
  dtally_count(D, proto_op_name(q.op), json_is_true(json_object_get(r, "ok")) ? "ok" : "not-found");
  dreply(D, q.client, q.id, r);
  dqueue_pending_free(&q);
}

static void on_paused(Daemon *D, json_t *m) {
  Txn *t = &D->live.cur;
  json_t *p = json_object_get(m, "pause");
  interrupt_over(D);   /* paused: nothing left to interrupt */
  D->gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
  D->live.wait = W_NONE;
  int first = !D->live.in_pause;
  D->live.in_pause = 1;
  json_decref(D->live.pause);
  D->live.pause = json_incref(p);
  /* an absolute deadline from the pause: repairs that pause again do not
  ** extend it (a caller could hold the worker for ever) */
  if (first) t->deadline = daemon_now() + D->limits.pause_timeout;
  const char *refusal = json_string_value(json_object_get(p, "refusal"));
  if (t->sent == TXN_CMD_ABORT && !t->responder && !first) {
    /* the kernel's own abort (a timeout, a shutdown) left a pause level:
    ** the levels below go too */
    dsched_abort_pause(D, "a pause level was left");
    return;
  }
  /* an abort that left a level did what was asked; the level below shows */
  if (refusal && txn_reason_parse(refusal) == TXN_ABORTED && t->sent == TXN_CMD_ABORT) refusal = NULL;
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
    devents_add(D, json_pack("{s:s, s:I, s:O, s:O, s:I}", "event", store_event_name(STORE_EV_PAUSED), "attempt",
                             (json_int_t)t->attempt, "condition", json_object_get(p, "condition_type"),
                             "level", json_object_get(p, "level"), "generation", (json_int_t)D->gen));
  if (first) {
    json_t *report = json_object_get(p, "report");
    char shown[300];
    vouch_escape(json_string_value(report), json_string_length(report), shown, sizeof shown);
    dlog(D, "attempt %" PRIu64 " paused: %s", t->attempt, shown);
  }
  devents_flush(D);  /* a pause may last long: its record should not wait */
  dreply(D, t->responder, t->responder_id, r);
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
        dreply_err(D, q.client, q.id, "busy", "the kernel is out of memory; retry later");
      dqueue_pending_free(&q);
    }
  }
}

void dsched_frame(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen) {
  if (dvouch_frame(D, m, blob, bloblen)) return;   /* broke a rule: the worker is gone */
  int ev = wire_event_of(m);
  json_t *g = json_object_get(m, "generation");
  if (ev == WIRE_OUTCOME) D->live.w.outcomes_seen++;  /* (wproc_outcomes_unseen) */
  /* generations only grow; a call run on top of held ones reports the
  ** worker's count before their commits, which the daemon already made */
  if (json_is_integer(g) && (uint64_t)json_integer_value(g) > D->gen) D->gen = (uint64_t)json_integer_value(g);
  if (dgroup_ack(D, m, ev)) {
    /* a group's commit or restore answered */
  } else if (D->live.wait == W_QUERY &&
             (ev == WIRE_VIEW || ev == WIRE_ENTRY || ev == WIRE_INVARIANTS || ev == WIRE_COMPLETIONS)) {
    on_query_answer(D, m, (wire_Event)ev);
  } else if (D->live.wait == W_ATTEMPT && ev == WIRE_PAUSED) {
    on_paused(D, m);
  } else if (D->live.wait == W_ATTEMPT && ev == WIRE_OUTCOME) {
    dcall_outcome(D, m, blob, bloblen);
  } else if (D->live.wait == W_COMMIT && (ev == WIRE_COMMITTED || ev == WIRE_RESTORED)) {
    dcall_committed(D, m);
  } else if (D->live.wait == W_SHADOW && (ev == WIRE_SHADOWED || ev == WIRE_ERROR)) {
    dshadow_forked(D, m);
  } else {
    dlog(D, "unexpected message from the worker (%s) while waiting (%d); restarting it",
         ev >= 0 ? wire_event_name((wire_Event)ev) : "?", D->live.wait);
    dworker_died(D);
  }
}

void dsched_check(Daemon *D) {
  const Txn *t = &D->live.cur;
  int wait = D->live.wait;
  DAEMON_ASSERT(wait >= W_NONE && wait <= W_SHADOW);
  DAEMON_ASSERT(wait != W_SHADOW || (!t->active && !D->live.in_pause));
  DAEMON_ASSERT((wait == W_CHECK) == (t->check != NULL));
  DAEMON_ASSERT(wait != W_CHECK || (t->active && t->op == PROTO_ROLLBACK));
  DAEMON_ASSERT(wait != W_COMMIT || (t->active && (t->decision == WIRE_COMMIT || t->decision == WIRE_RESTORE)));
  DAEMON_ASSERT(wait != W_QUERY || D->live.query.req != NULL);
  DAEMON_ASSERT(wait == W_QUERY || D->live.query.req == NULL);
  DAEMON_ASSERT(!D->live.in_pause || (t->active && D->live.pause != NULL));
  DAEMON_ASSERT(D->live.w.fd >= 0 || wait == W_NONE);
  DAEMON_ASSERT(!t->grouped || t->op == PROTO_CALL);
  DAEMON_ASSERT(!t->published || wait == W_COMMIT);
  (void)t, (void)wait;   /* a build without assertions reads neither */
}
