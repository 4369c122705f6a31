/*
** dpark.c — calls that wait for their repair (docs/repair.md, "Modes"):
** a call that fails in a function whose repair rule says `pause` is not
** answered at once.  Its transaction has already undone its effects; the
** kernel keeps its request and the failure it would have answered, and
** goes on serving other calls.  When the incident is repaired the request
** runs again, first in the queue, on the repaired code — the caller gets
** that outcome, and the world holds only the effects of the repaired
** code.  When the incident ends otherwise (rejected, declined, stale,
** cancelled, failed), at the pause timeout, or when the kernel stops, the
** caller gets the failure it would have had.
**
** The first failure may leave a shadow parked at it (dshadow.c): the
** world as the call failed, stack and heap, which verifies the incident's
** first candidate; it is killed when the incident ends or nobody waits
** for it any more.
**
** Only a call without a generation waits (one pinned to a generation would
** be stale when it ran again), a call runs again once at most, and at most
** DAEMON_MAX_QUEUE wait (past it a call fails at once).
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "proto.h"

/* The member a call run again carries: it never waits a second time. */
#define RERUN_MEMBER "rerun_of_incident"

static void parked_free(DParked *p) {
  json_decref(p->id);
  json_decref(p->req);
  json_decref(p->failure);
}

int dpark_call(Daemon *D, const Txn *t, json_t *failure, uint64_t incident) {
  if (t->op != PROTO_CALL || !t->req || !t->responder || json_object_get(t->req, RERUN_MEMBER) ||
      json_object_get(t->req, "generation") || D->stopping || D->nparked >= DAEMON_MAX_QUEUE)
    return 0;   /* (past the queue's bound a call fails at once, as without the rule) */
  DParked *v = realloc(D->parked, (D->nparked + 1) * sizeof *v);
  if (!v) return 0;
  D->parked = v;
  double timeout = D->limits.pause_timeout > 0 ? D->limits.pause_timeout : 120;
  D->parked[D->nparked++] = (DParked){t->responder, t->responder_id ? json_incref(t->responder_id) : NULL,
                                      json_incref(t->req), json_incref(failure), incident, daemon_now() + timeout};
  dlog(D, "attempt %" PRIu64 ": waits for the repair of incident %" PRIu64 " (at most %g s)", t->attempt, incident,
       timeout);
  return 1;
}

/* Answer parked call i with its failure, why added to the message. */
static void fail_one(Daemon *D, size_t i, const char *why) {
  DParked p = D->parked[i];
  D->parked[i] = D->parked[--D->nparked];
  json_t *f = json_deep_copy(p.failure);
  const char *msg = json_string_value(json_object_get(f, "message"));
  json_object_set_new(f, "message", json_sprintf("%s (it waited for a repair: %s)", msg ? msg : "", why));
  dreply(D, p.client, p.id, f);
  parked_free(&p);
}

/* No call waits for incident any more: its parked shadow goes too. */
static void release_unwaited(Daemon *D, uint64_t incident) {
  for (size_t i = 0; i < D->nparked; i++)
    if (D->parked[i].incident == incident) return;
  dshadow_park_release(D, incident);
}

void dpark_incident(Daemon *D, uint64_t incident, int status) {
  if (store_incident_is_open(status)) return;   /* still being worked on */
  dshadow_park_release(D, incident);   /* its verifications are over */
  for (size_t i = 0; i < D->nparked;) {
    DParked *p = &D->parked[i];
    if (p->incident != incident) {
      i++;
      continue;
    }
    if (status != STORE_INC_REPAIRED) {
      char why[96];
      snprintf(why, sizeof why, "incident %" PRIu64 " is %s", incident, store_incident_status_name(status));
      fail_one(D, i, why);
      continue;
    }
    /* repaired: run it again, before anything queued behind it */
    json_t *req = json_deep_copy(p->req);
    json_object_set_new(req, RERUN_MEMBER, json_integer((json_int_t)incident));
    Pending again = {p->client, p->id, req, PROTO_CALL, 0, 0};
    if (!req || dqueue_push_front(&D->txq, again) != 0) {
      json_decref(req);
      fail_one(D, i, "the kernel could not run it again (out of memory)");
      continue;
    }
    dlog(D, "incident %" PRIu64 " repaired: a waiting call runs again", incident);
    p->id = NULL;   /* the queue's now */
    parked_free(p);
    D->parked[i] = D->parked[--D->nparked];
  }
}

double dpark_before(void *ud, double now) {
  Daemon *D = ud;
  double next = -1;
  for (size_t i = 0; i < D->nparked;) {
    if (D->parked[i].deadline <= now) {
      uint64_t incident = D->parked[i].incident;
      fail_one(D, i, "the pause timed out");
      release_unwaited(D, incident);
      continue;
    }
    double left = D->parked[i].deadline - now;
    if (next < 0 || left < next) next = left;
    i++;
  }
  return next;
}

void dpark_stop(Daemon *D) {
  while (D->nparked) fail_one(D, 0, "the kernel is shutting down");
  free(D->parked);
  D->parked = NULL;
}
