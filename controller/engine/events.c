/*
** events.c — the records of a transaction attempt (engine.h), the same
** whether the kernel or an offline command ran it: a "started" event before
** anything runs, one outcome event after (docs/store.md, "Events").
*/
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"
#include "jtext.h"
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

/* ---- the same, as text */

typedef struct Text { char *b; size_t n, cap; int failed; } Text;

static void lit(Text *t, const char *s) {
  size_t k = strlen(s);
  if (t->failed) return;
  if (t->n + k > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    while (cap < t->n + k) cap *= 2;
    char *b = realloc(t->b, cap);
    if (!b) { t->failed = 1; return; }
    t->b = b;
    t->cap = cap;
  }
  memcpy(t->b + t->n, s, k);
  t->n += k;
}

static void str(Text *t, const char *s) {
  if (!t->failed && jtext_append_string(s, strlen(s), 1, &t->b, &t->n, &t->cap) != 0) t->failed = 1;
}

static void num(Text *t, uint64_t v) {
  if (!t->failed && jtext_append_int((long long)v, &t->b, &t->n, &t->cap) != 0) t->failed = 1;
}

/* "event":name,"attempt":N,"command":command */
static void head(Text *t, const char *name, uint64_t attempt, const char *command) {
  lit(t, "\"event\":");
  str(t, name);
  lit(t, ",\"attempt\":");
  num(t, attempt);
  lit(t, ",\"command\":");
  str(t, command);
}

static char *done(Text *t, const char *key, size_t *len) {
  if (key) {
    lit(t, ",\"" EVENTS_KEY_MEMBER "\":");
    str(t, key);
  }
  if (t->failed) {
    free(t->b);
    return NULL;
  }
  *len = t->n;
  return t->b;
}

char *events_started_text(uint64_t attempt, const char *command, const char *source, uint64_t parent,
                          uint64_t generation, const char *key, size_t *len) {
  Text t = {0};
  head(&t, store_event_name(STORE_EV_STARTED), attempt, command);
  lit(&t, ",\"source\":");
  str(&t, source ? source : "");
  lit(&t, ",\"parent\":");
  num(&t, parent);
  lit(&t, ",\"generation\":");
  num(&t, generation);
  return done(&t, key, len);
}

static void outcome(Text *t, uint64_t attempt, const char *command, const char *reason, const char *message) {
  head(t, store_event_name(events_of_reason(reason)), attempt, command);
  lit(t, ",\"outcome\":");
  str(t, reason);
  if (message && *message) {
    lit(t, ",\"message\":");
    str(t, message);
  }
}

char *events_outcome_text(uint64_t attempt, const char *command, const char *reason, const char *message,
                          const char *key, size_t *len) {
  Text t = {0};
  outcome(&t, attempt, command, reason, message);
  return done(&t, key, len);
}

char *events_accepted_text(uint64_t attempt, const char *command, uint64_t revision, uint64_t generation,
                           const char *key, size_t *len) {
  Text t = {0};
  outcome(&t, attempt, command, store_event_name(STORE_EV_ACCEPTED), NULL);
  lit(&t, ",\"revision\":");
  num(&t, revision);
  lit(&t, ",\"generation\":");
  num(&t, generation);
  return done(&t, key, len);
}
