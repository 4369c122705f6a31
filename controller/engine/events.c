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
  [TXN_CANCELLED] = STORE_EV_ABORTED,
  [TXN_FENCED] = STORE_EV_FAILED,
};

int events_of_reason(const char *reason) {
  if (reason && !strcmp(reason, store_event_name(STORE_EV_INTERRUPTED))) return STORE_EV_INTERRUPTED;
  int r = txn_reason_parse(reason);
  return r < 0 ? STORE_EV_FAILED : event_of_reason[r];
}

/* Each event is written once, as text (below); its object is that text
** parsed, so the two can never disagree. */
static json_t *object_of(char *text, size_t len) {
  json_t *o = text ? jtext_load_members(text, len, 0, NULL) : NULL;
  free(text);
  return o;
}

json_t *events_started(uint64_t attempt, const char *command, const char *source, uint64_t parent,
                       uint64_t generation) {
  size_t len = 0;
  char *text = events_started_text(attempt, command, source, parent, generation, &len);
  return object_of(text, len);
}

json_t *events_outcome(uint64_t attempt, const char *command, const char *reason, const char *message) {
  size_t len = 0;
  char *text = events_outcome_text(attempt, command, reason, message, NULL, NULL, &len);
  return object_of(text, len);
}

json_t *events_accepted(uint64_t attempt, const char *command, uint64_t revision, uint64_t generation) {
  size_t len = 0;
  char *text = events_accepted_text(attempt, command, revision, generation, NULL, &len);
  return object_of(text, len);
}

/* ---- idempotency keys */

events_Key *events_key_new(json_t *req) {
  const char *key = json_string_value(json_object_get(req, "key"));
  uint8_t d[32];
  events_Key *k = key ? malloc(sizeof *k) : NULL;
  if (!k) return NULL;
  if (store_digest(key, strlen(key), d) != STORE_OK || request_digest(req, k->request) != 0) {
    free(k);
    return NULL;
  }
  store_hash_hex(d, k->key);
  return k;
}

void events_tag(json_t *ev, const events_Key *key) {
  if (!ev || !key || !store_event_is_outcome(store_event_parse(json_string_value(json_object_get(ev, "event")))))
    return;   /* outcomes only: the store keeps an outcome under its key */
  json_object_set_new(ev, EVENTS_KEY_MEMBER, json_string(key->key));
  json_object_set_new(ev, EVENTS_REQUEST_MEMBER, json_string(key->request));
}

/* ---- the text */

/* Each event is written as JSON text (jtext_writer, ASCII as the store
** writes events), then handed over without its braces: its members
** (store_ev.members). */

static void head(jtext_writer *w, const char *name, uint64_t attempt, const char *command) {
  w->ascii = 1;
  jtext_begin(w, '{');
  jtext_key(w, "event");
  jtext_string(w, name, strlen(name));
  jtext_key(w, "attempt");
  jtext_int(w, (json_int_t)attempt);
  jtext_key(w, "command");
  jtext_string(w, command, strlen(command));
}

/* The members of what w holds, after the key's members (when key is not
** NULL); NULL when out of memory. */
static char *members(jtext_writer *w, const events_Key *key, size_t *len) {
  if (key) {
    jtext_key(w, EVENTS_KEY_MEMBER);
    jtext_string(w, key->key, strlen(key->key));
    jtext_key(w, EVENTS_REQUEST_MEMBER);
    jtext_string(w, key->request, strlen(key->request));
  }
  jtext_end(w, '}');
  if (w->failed || w->len < 2) {
    free(w->buf);
    return NULL;
  }
  *len = w->len - 2;
  memmove(w->buf, w->buf + 1, *len);
  return w->buf;
}

char *events_started_text(uint64_t attempt, const char *command, const char *source, uint64_t parent,
                          uint64_t generation, size_t *len) {
  jtext_writer w = {0};
  head(&w, store_event_name(STORE_EV_STARTED), attempt, command);
  jtext_key(&w, "source");
  jtext_string(&w, source ? source : "", source ? strlen(source) : 0);
  jtext_key(&w, "parent");
  jtext_int(&w, (json_int_t)parent);
  jtext_key(&w, "generation");
  jtext_int(&w, (json_int_t)generation);
  return members(&w, NULL, len);
}

static void outcome(jtext_writer *w, uint64_t attempt, const char *command, const char *reason,
                    const char *message, json_t *diagnosis) {
  head(w, store_event_name(events_of_reason(reason)), attempt, command);
  jtext_key(w, "outcome");
  jtext_string(w, reason, strlen(reason));
  if (message && *message) {
    jtext_key(w, "message");
    jtext_string(w, message, strlen(message));
  }
  if (diagnosis) {
    jtext_key(w, "diagnosis");
    jtext_json(w, diagnosis);
  }
}

static void revision(jtext_writer *w, uint64_t revision, uint64_t generation) {
  jtext_key(w, "revision");
  jtext_int(w, (json_int_t)revision);
  jtext_key(w, "generation");
  jtext_int(w, (json_int_t)generation);
}

char *events_outcome_text(uint64_t attempt, const char *command, const char *reason, const char *message,
                          json_t *diagnosis, const events_Key *key, size_t *len) {
  jtext_writer w = {0};
  outcome(&w, attempt, command, reason, message, diagnosis);
  return members(&w, key, len);
}

char *events_accepted_text(uint64_t attempt, const char *command, uint64_t rev, uint64_t generation,
                           const events_Key *key, size_t *len) {
  jtext_writer w = {0};
  outcome(&w, attempt, command, store_event_name(STORE_EV_ACCEPTED), NULL, NULL);
  revision(&w, rev, generation);
  return members(&w, key, len);
}

char *events_outcome_text_open(uint64_t attempt, const char *command, const char *reason, const char *message,
                               json_t *diagnosis, const events_Key *key, size_t *len, size_t *split) {
  jtext_writer w = {0};
  int accepted = events_of_reason(reason) == STORE_EV_ACCEPTED;
  outcome(&w, attempt, command, reason, accepted ? NULL : message, accepted ? NULL : diagnosis);
  size_t at = w.len - 1;   /* in the members, less the "{" */
  char *text = members(&w, key, len);
  *split = accepted ? at : *len;   /* events_accepted's order: revision, generation, then the key */
  return text;
}

char *events_text_close(const char *open, size_t len, size_t split, uint64_t rev, uint64_t generation,
                        size_t *outlen) {
  jtext_writer w = {0};   /* {"revision":R,"generation":G}: its members go in at split */
  jtext_begin(&w, '{');
  revision(&w, rev, generation);
  jtext_end(&w, '}');
  size_t mid = w.len - 2, n = len + 1 + mid;
  char *t = w.failed ? NULL : malloc(n);
  if (t) {
    memcpy(t, open, split);
    t[split] = ',';
    memcpy(t + split + 1, w.buf + 1, mid);
    memcpy(t + split + 1 + mid, open + split, len - split);
    *outlen = n;
  }
  free(w.buf);
  return t;
}
