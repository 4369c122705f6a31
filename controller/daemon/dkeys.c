/*
** dkeys.c — idempotency keys (daemon.h).  A call or an act may carry a
** "key" (with an "id"): the reply it gets is recorded under the key, and a
** request that comes again with the same key — a client retrying after its
** connection dropped — gets that reply again ("replayed": true) instead of
** running a second time.
**
** The key travels with the attempt's events ("started" and the outcome, as
** member "idempotency"), so
** it is durable exactly when the outcome is: an accepted revision and its
** outcome event are one LMDB transaction.  A kernel started later reads the
** keys back from the newest events (DKEYS_LOAD of them) and replays the
** outcome the store recorded (outcome, revision, generation, message: not
** the value or the output, which the store does not keep).
**
** Bounds: DKEYS_MAX keys and DKEYS_BYTES of recorded replies; past either
** the oldest key is forgotten (a retry comes within seconds, not after
** thousands of other keyed requests).
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "txn.h"

#define DKEYS_MAX 10000
#define DKEYS_BYTES ((size_t)32 << 20)
#define DKEYS_LOAD 20000   /* events read back at start-up */
/* The key's member in events: not "key", which the store redacts as a
** secret (API keys). */

/* The in-flight map's name of a request: its client and its id. */
static void flight_name(uint64_t client, json_t *id, char *out, size_t n) {
  char *idtext = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
  snprintf(out, n, "%" PRIu64 " %s", client, idtext ? idtext : "");
  free(idtext);
}

static void forget_oldest(Daemon *D) {
  const char *oldest = json_string_value(json_array_get(D->keys.order, 0));
  json_t *r = oldest ? json_object_get(D->keys.done, oldest) : NULL;
  if (r) {
    D->keys.bytes -= (size_t)json_integer_value(json_object_get(r, "bytes"));
    json_object_del(D->keys.done, oldest);
  }
  json_array_remove(D->keys.order, 0);
}

/* Whether a reply says the request ran (its outcome is worth replaying).
** Refusals where nothing ran, or nothing was kept — busy, stale, paused,
** shutting down, the worker died, publication failed, a faulted world, a
** malformed request — are not recorded: a retry runs. */
static int ran(json_t *reply) {
  if (json_is_true(json_object_get(reply, "ok"))) return 1;
  static const char *const not_run[] = {"busy", "stale", "paused", "shutting-down", "interrupted",
                                        "publication-failed", "faulted", "invalid-request", "not-allowed",
                                        "not-paused", "unknown-op", NULL};
  const char *code = json_string_value(json_object_get(reply, "code"));
  for (int i = 0; code && not_run[i]; i++)
    if (!strcmp(code, not_run[i])) return 0;
  return code != NULL;
}

/* Record reply (borrowed) as the outcome of key. */
static void record(Daemon *D, const char *key, json_t *reply) {
  if (json_object_get(D->keys.done, key)) return;
  json_t *copy = json_deep_copy(reply);
  json_object_del(copy, "id");
  json_object_set_new(copy, "replayed", json_true());
  char *text = json_dumps(copy, JSON_COMPACT);
  size_t bytes = text ? strlen(text) : 0;
  free(text);
  while (json_array_size(D->keys.order) && (json_array_size(D->keys.order) >= DKEYS_MAX ||
                                            D->keys.bytes + bytes > DKEYS_BYTES))
    forget_oldest(D);
  json_object_set_new(D->keys.done, key, json_pack("{s:o, s:I}", "reply", copy, "bytes", (json_int_t)bytes));
  json_array_append_new(D->keys.order, json_string(key));
  D->keys.bytes += bytes;
}

void dkeys_init(Daemon *D) {
  D->keys.done = json_object();
  D->keys.flight = json_object();
  D->keys.order = json_array();
}

void dkeys_free(Daemon *D) {
  json_decref(D->keys.done);
  json_decref(D->keys.flight);
  json_decref(D->keys.order);
}

const char *dkeys_of(json_t *req) { return json_string_value(json_object_get(req, "key")); }

int dkeys_in_flight(Daemon *D, const char *key) {
  const char *k;
  json_t *v;
  json_object_foreach(D->keys.flight, k, v)
    if (!strcmp(json_string_value(v), key)) return 1;
  return 0;
}

int dkeys_replay(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  const char *key = dkeys_of(req);
  json_t *r = key ? json_object_get(json_object_get(D->keys.done, key), "reply") : NULL;
  if (!r) return 0;
  dlog(D, "replayed the outcome of key %.80s", key);
  r = json_deep_copy(r);
  /* read back from the store: the revision's changes, from its manifest */
  json_t *rev = json_object_get(r, "revision");
  if (json_is_true(json_object_get(r, "ok")) && rev && !json_object_get(r, "changes"))
    json_object_set_new(r, "changes", storeio_revision_changes(dstore(D), (uint64_t)json_integer_value(rev)));
  dclients_reply(D, client, id, r);
  return 1;
}

void dkeys_expect(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  const char *key = dkeys_of(req);
  if (!key) return;
  char name[200];
  flight_name(client, id, name, sizeof name);
  json_object_set_new(D->keys.flight, name, json_string(key));
}

/* The key of a request in flight (its name in the map in name), or NULL. */
static json_t *in_flight(Daemon *D, uint64_t client, json_t *id, char name[200]) {
  if (!json_object_size(D->keys.flight) || !id) return NULL;
  flight_name(client, id, name, 200);
  return json_object_get(D->keys.flight, name);
}

int dkeys_awaits(Daemon *D, uint64_t client, json_t *id) {
  char name[200];
  return in_flight(D, client, id, name) != NULL;
}

void dkeys_replied(Daemon *D, uint64_t client, json_t *id, json_t *reply) {
  char name[200];
  json_t *key = in_flight(D, client, id, name);
  if (!key) return;
  if (ran(reply)) record(D, json_string_value(key), reply);
  json_object_del(D->keys.flight, name);
}

void dkeys_forget(Daemon *D, uint64_t client, json_t *id) {
  if (!json_object_size(D->keys.flight) || !id) return;
  char name[200];
  flight_name(client, id, name, sizeof name);
  json_object_del(D->keys.flight, name);
}

/* Rebuild a reply from an outcome event that carries a key. */
static int load_event(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  Daemon *D = arg;
  json_t *e = json_loadb(json, len, 0, NULL);
  const char *key = json_string_value(json_object_get(e, EVENTS_KEY_MEMBER));
  const char *name = json_string_value(json_object_get(e, "event"));
  int ev = name ? store_event_parse(name) : -1;
  const char *outcome = json_string_value(json_object_get(e, "outcome"));
  if (key && outcome && ev >= 0 && store_event_is_outcome(ev) && !json_object_get(D->keys.done, key)) {
    int ok = !strcmp(outcome, txn_reason_name(TXN_ACCEPTED));
    json_t *r = json_pack("{s:b}", "ok", ok);
    if (!ok) json_object_set_new(r, "code", json_string(outcome));
    json_t *v;
    json_object_set_new(r, "outcome", json_string(outcome));
    if ((v = json_object_get(e, "revision"))) json_object_set(r, "revision", v);
    if ((v = json_object_get(e, "generation"))) json_object_set(r, "generation", v);
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (!ok) json_object_set_new(r, "message", json_string(msg ? msg : outcome));
    if (ran(r)) record(D, key, r);
    json_decref(r);
  }
  json_decref(e);
  return json_array_size(D->keys.order) >= DKEYS_MAX / 2;  /* enough: stop */
}

void dkeys_load(Daemon *D) {
  /* newest first: a key seen twice keeps its newest outcome */
  store_events_read(dstore(D), 0, DKEYS_LOAD, STORE_NEWEST_FIRST, load_event, D);
}

void dkeys_tag_event(Daemon *D, json_t *ev) {
  const char *key = D->cur.key;
  if (!key || !D->cur.active) return;
  json_t *a = json_object_get(ev, "attempt");
  if (!json_is_integer(a) || (uint64_t)json_integer_value(a) != D->cur.attempt) return;
  json_object_set_new(ev, EVENTS_KEY_MEMBER, json_string(key));
}
