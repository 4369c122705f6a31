/*
** dvouch.c — the daemon trusts no frame of its worker (daemon.h; the
** checks themselves are engine.h's vouch_, docs/worker-frames.md "What the
** kernel checks").  The worker runs client code and may be compromised, so
** before any frame is used the daemon says what it expects from its own
** state: the request the frame answers (and so the entry kinds it may
** change), the worker's generation as the daemon counts it (D->live.wgen: a
** pause is exactly one past it, a group's commit exactly as many past it as
** the revisions it kept), the pause it saw, the decisions not yet answered.
**
** A frame that breaks a rule ends the worker: it is killed (SIGKILL), the
** rule and what broke it are logged (escaped), nothing of the frame is
** used, the running request's client is answered interrupted as for any
** worker death, and a fresh worker starts from CURRENT (dworker_died).
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "txn.h"

/* The generation a frame of this event carries, once vouched for. */
static json_t *generation_of(json_t *m, int ev) {
  if (ev == WIRE_PAUSED) return json_object_get(json_object_get(m, "pause"), "generation");
  if (ev == WIRE_VIEW) return json_object_get(json_object_get(m, "view"), "generation");
  return json_object_get(m, "generation");
}

/* The worker broke a rule: kill it, say so, and let its death take its
** course. */
static void violation(Daemon *D, const vouch_Fail *f) {
  Txn *t = &D->live.cur;
  char what[300] = "", src[200];
  if (t->active) {
    vouch_escape(t->source, t->source ? strlen(t->source) : 0, src, sizeof src);
    snprintf(what, sizeof what, " answering attempt %" PRIu64 " %s: %s", t->attempt, proto_op_name(t->op), src);
  } else if (D->live.wait == W_QUERY) {
    snprintf(what, sizeof what, " answering a %s", proto_op_name(D->live.query.op));
  }
  dlog(D, "worker %d broke the frame rule %s (%s)%s; killing it", (int)D->live.w.pid, f->rule, f->detail, what);
  snprintf(D->live.violation, sizeof D->live.violation, "broke the frame rule %s and was killed", f->rule);
  if (D->live.w.pid) kill(D->live.w.pid, SIGKILL);
  dworker_died(D);
}

void dvouch_process(Daemon *D, const char *why) {
  vouch_Fail f = {VOUCH_PROCESS, ""};
  snprintf(f.detail, sizeof f.detail, "%s", why);
  violation(D, &f);
}

void dvouch_unreadable(Daemon *D, const char *why) {
  vouch_Fail f = {VOUCH_SYNTAX, ""};
  vouch_escape(why, strlen(why), f.detail, sizeof f.detail);
  violation(D, &f);
}

int dvouch_ready(Daemon *D, json_t *m) {
  vouch_Fail f;
  if (vouch_ready(m, D->live.base, &D->grant, &f) != 0) {
    dlog(D, "worker %d broke the frame rule %s (%s) starting", (int)D->live.w.pid, f.rule, f.detail);
    return -1;
  }
  D->live.wgen = (uint64_t)json_integer_value(json_object_get(m, "generation"));
  return 0;
}

void dvouch_expect_ack(Daemon *D, int ev, uint64_t moves) {
  Group *g = &D->group;
  size_t at = (g->ackhead + (size_t)g->acks) % GROUP_ACKS_MAX;
  g->ackq[at].ev = ev;
  g->ackq[at].moves = moves;
  g->acks++;
}

/* A return-from-frame or restart-frame moves the generation as a resume of
** the pause's own level does (G refused, G + 1 a repair let finish or the
** attempt completed, G + 2 paused again); it never leaves a level. */
static int frame_decision(int sent) { return sent == TXN_CMD_RETURN_FROM_FRAME || sent == TXN_CMD_RESTART_FRAME; }

/* A transaction's frames: what the last thing sent to it allows. */
static int attempt_frame(Daemon *D, json_t *m, int ev, const unsigned char *blob, size_t bloblen, vouch_Expect *x,
                         vouch_Fail *f) {
  Txn *t = &D->live.cur;
  x->op = t->op;
  x->invariant = t->invariant;
  x->pausable = t->pausable;
  x->pause_no = t->pause_no;
  x->pause_max = t->pause_max;
  x->with_gen = !t->grouped;
  x->stacked = t->grouped;
  x->noting = (t->noting & REQUEST_NOTE_CALL) != 0;
  x->reads = (t->noting & REQUEST_NOTE_READS) != 0;
  x->park = (t->noting & REQUEST_NOTE_PARK) != 0;
  if (ev == WIRE_PAUSED) {
    /* (a bit per step the generation may have moved) a pause moves it
    ** once; an answer at the same pause not at all; a repair whose error
    ** pauses a level up once; an abort that leaves a level for the one
    ** below once; a resume that pauses again twice (resumed, paused), one
    ** that lets a repair finish once, an outer level's restart chosen above
    ** it once more (the levels left) */
    x->steps = t->sent == TXN_SENT_ATTEMPT ? 2u : t->sent == TXN_CMD_EVALUATE ? 3u : t->sent == TXN_CMD_ABORT ? 2u
             : t->sent == TXN_CMD_RESUME ? 15u : frame_decision(t->sent) ? 7u : 0u;
    if (vouch_paused(m, x, f)) return -1;
    t->pause_no = (int)json_integer_value(json_object_get(json_object_get(m, "pause"), "pause"));
    if (t->pause_no > t->pause_max) t->pause_max = t->pause_no;
    return 0;
  }
  /* an attempt that never paused ends where it began (a faulted world's
  ** operator change kept at once moves once); ending a pause restores
  ** (once more), a resume that completes moved once already */
  if (t->grouped) x->steps = 1u;
  else if (t->sent == TXN_SENT_ATTEMPT) x->steps = !strcmp(D->live.status, txn_status_name(TXN_ST_FAULTED)) ? 3u : 1u;
  else x->steps = t->sent == TXN_CMD_RESUME || frame_decision(t->sent) ? 6u : 2u;
  if (vouch_outcome(&D->vouch, m, blob, bloblen, x, f)) return -1;
  return dshadow_park_vouch(D, m, f);
}

int dvouch_frame(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen) {
  int ev = wire_event_of(m);
  Group *g = &D->group;
  vouch_Expect x = {.gen = D->live.wgen, .steps = 1u};
  vouch_Fail f = {0};
  int rc;
  if (g->acks && (ev == WIRE_COMMITTED || ev == WIRE_RESTORED)) {
    /* the group's decisions are answered first, in the order sent */
    x.gen = D->live.wgen + g->ackq[g->ackhead].moves;
    rc = vouch_decided(m, g->ackq[g->ackhead].ev, &x, &f);
    if (!rc) g->ackhead = (g->ackhead + 1) % GROUP_ACKS_MAX;   /* dgroup_ack counts it */
  } else if (D->live.wait == W_QUERY) {
    rc = vouch_answer(m, wire_op_of(D->live.query.req), &x, D->revision, &f);
  } else if (D->live.wait == W_SHADOW) {
    rc = vouch_shadowed(m, &f);
  } else if (D->live.wait == W_ATTEMPT && D->live.cur.active && (ev == WIRE_PAUSED || ev == WIRE_OUTCOME)) {
    rc = attempt_frame(D, m, ev, blob, bloblen, &x, &f);
  } else if (D->live.wait == W_COMMIT && D->live.cur.active && (ev == WIRE_COMMITTED || ev == WIRE_RESTORED)) {
    /* a commit that changed entries moves the generation once; one that
    ** changed none, or a restore, at most once (a faulted world, a pause) */
    x.steps = D->live.cur.decision == WIRE_COMMIT && D->live.cur.decided_changed ? 2u : 3u;
    rc = vouch_decided(m, D->live.cur.decision == WIRE_COMMIT ? WIRE_COMMITTED : WIRE_RESTORED, &x, &f);
  } else {
    char b[64];
    json_t *e = json_object_get(m, "event");
    vouch_escape(json_string_value(e), json_string_length(e), b, sizeof b);
    f.rule = VOUCH_EVENT;
    snprintf(f.detail, sizeof f.detail, "the event %s%s while the kernel waits for %s", json_is_string(e) ? "" : "(none)", b,
             D->live.wait == W_QUERY ? "a query's answer" : D->live.wait == W_ATTEMPT ? "an attempt's outcome"
             : D->live.wait == W_COMMIT ? "a decision's answer" : D->live.wait == W_SHADOW ? "a shadow's answer"
             : "nothing");
    rc = -1;
  }
  if (rc) {
    violation(D, &f);
    return -1;
  }
  json_t *gen = generation_of(m, ev);
  if (json_is_integer(gen)) D->live.wgen = (uint64_t)json_integer_value(gen);
  return 0;
}
