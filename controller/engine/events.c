/*
** events.c — the records of a transaction attempt (engine.h), the same
** whether the kernel or an offline command ran it: a "started" event before
** anything runs, one outcome event after (docs/store.md, "Events").
*/
#include <string.h>
#include <jansson.h>
#include "engine.h"
#include "txn.h"

/* The store event recording each txn reason. */
static const int event_of_reason[TXN_REASON_COUNT] = {
  [TXN_ACCEPTED] = STORE_EV_ACCEPTED,
  [TXN_UNSAFE] = STORE_EV_REJECTED,
  [TXN_REJECTED_BY_GATE] = STORE_EV_REJECTED,
  [TXN_REPAIR_FAILED] = STORE_EV_ABORTED,
  [TXN_INVALID_ARGUMENTS] = STORE_EV_REJECTED,
  [TXN_ABORTED] = STORE_EV_ABORTED,
  [TXN_LIMIT] = STORE_EV_FAILED,
  [TXN_BUDGET_EXHAUSTED] = STORE_EV_ABORTED,
  [TXN_STALE] = STORE_EV_REJECTED,
  [TXN_PUBLICATION_FAILED] = STORE_EV_FAILED,
  [TXN_ERROR] = STORE_EV_ABORTED,
  [TXN_FAULTED] = STORE_EV_REJECTED,
};

int events_of_reason(const char *reason) {
  if (reason && !strcmp(reason, store_event_name(STORE_EV_INTERRUPTED))) return STORE_EV_INTERRUPTED;
  int r = txn_reason_parse(reason);
  return r < 0 ? STORE_EV_FAILED : event_of_reason[r];
}

/* Built member by member: json_pack would parse its format string for
** each of the two events every application call records. */
static json_t *event_of(const char *name, uint64_t attempt, const char *command) {
  json_t *o = json_object();
  if (o && (json_object_set_new_nocheck(o, "event", json_string_nocheck(name)) ||
            json_object_set_new_nocheck(o, "attempt", json_integer((json_int_t)attempt)) ||
            json_object_set_new(o, "command", json_string(command)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *events_started(uint64_t attempt, const char *command, const char *source, uint64_t parent,
                       uint64_t generation) {
  json_t *o = event_of(store_event_name(STORE_EV_STARTED), attempt, command);
  if (o && (json_object_set_new_nocheck(o, "source", json_string(source ? source : "")) ||
            json_object_set_new_nocheck(o, "parent", json_integer((json_int_t)parent)) ||
            json_object_set_new_nocheck(o, "generation", json_integer((json_int_t)generation)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *events_outcome(uint64_t attempt, const char *command, const char *reason, const char *message) {
  json_t *o = event_of(store_event_name(events_of_reason(reason)), attempt, command);
  if (o && (json_object_set_new(o, "outcome", json_string(reason)) ||
            (message && *message && json_object_set_new(o, "message", json_string(message))))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *events_accepted(uint64_t attempt, const char *command, uint64_t revision, uint64_t generation) {
  json_t *o = events_outcome(attempt, command, store_event_name(STORE_EV_ACCEPTED), NULL);
  if (o) {
    json_object_set_new(o, "revision", json_integer((json_int_t)revision));
    json_object_set_new(o, "generation", json_integer((json_int_t)generation));
  }
  return o;
}
