/*
** dkeys.c — idempotency keys (daemon.h, docs/protocol.md "Idempotency
** keys").  A call or an act may carry a "key" (with an "id"): the reply it
** gets is recorded under the key, and a request that comes again with the
** same key — a client retrying after its connection dropped — gets that
** reply again ("replayed": true) instead of running a second time.  A key
** names one request: the same key with another request (another op,
** source, action, generation, limits ...; request_digest) is refused
** key-conflict, before and after a restart, and nothing runs.
**
** Keys are known by their digests (events_Key: SHA-256 of the key, and of
** the request), never by the key itself: the digest is what the events
** carry and what the store keeps, so a key is the same key whatever it
** looks like — one shaped like an API key, or "[redacted]", is not
** rewritten by the store's redaction.  The store keeps each outcome event
** with a key digest under that digest, in the transaction that writes it
** (an accepted revision, its outcome and its key are one); an outcome
** that leaves no event (a call that published nothing, devents_ended) is
** kept as a key-only record with the kernel's next write of counters
** (dtally.c).  A kernel started later reads the keys the store keeps
** (STORE_KEYS_MAX, the newest) and replays what they recorded (outcome,
** revision, generation, message: not the value or the output, which the
** store does not keep).
**
** Bounds: STORE_KEYS_MAX keys, the store's bound too, so a key is
** remembered as long after a restart as before it; past DKEYS_BYTES of
** recorded replies the oldest are cut to what a restart would replay (and
** only then, past it still, forgotten by this kernel).  The keys read at
** start-up are kept as their outcome's text and made replies only when
** they come again: a start reads them, and parses none.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "daemon.h"
#include "jtext.h"
#include "txn.h"

#define DKEYS_MAX STORE_KEYS_MAX
#define DKEYS_BYTES ((size_t)32 << 20)

/* The in-flight map's name of a request: its client and its id. */
static void flight_name(uint64_t client, json_t *id, char *out, size_t n) {
  char *idtext = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
  snprintf(out, n, "%" PRIu64 " %s", client, idtext ? idtext : "");
  free(idtext);
}

static size_t reply_bytes(json_t *reply) {
  char *text = json_dumps(reply, JSON_COMPACT);
  size_t bytes = text ? strlen(text) : 0;
  free(text);
  return bytes;
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

/* Over DKEYS_BYTES: the oldest replies lose what a restart would not
** replay either (value, values, output; changes are read back from the
** revision's manifest); if that is not enough, the oldest keys go. */
static void trim(Daemon *D) {
  for (size_t i = 0; D->keys.bytes > DKEYS_BYTES && i < json_array_size(D->keys.order); i++) {
    json_t *r = json_object_get(D->keys.done, json_string_value(json_array_get(D->keys.order, i)));
    json_t *reply = json_object_get(r, "reply");
    if (!reply || json_is_true(json_object_get(r, "trimmed"))) continue;
    json_object_del(reply, "value");
    json_object_del(reply, "values");
    json_object_del(reply, "output");
    json_object_del(reply, "changes");
    size_t was = (size_t)json_integer_value(json_object_get(r, "bytes")), now = reply_bytes(reply);
    D->keys.bytes = D->keys.bytes - was + now;
    json_object_set_new(r, "bytes", json_integer((json_int_t)now));
    json_object_set_new(r, "trimmed", json_true());
  }
  /* still over (outcomes with messages of many KiB): the oldest go */
  while (D->keys.bytes > DKEYS_BYTES && json_array_size(D->keys.order) > 1) forget_oldest(D);
}

/* Whether a reply says the request ran (its outcome is worth replaying).
** Refusals where nothing ran, or nothing was kept — busy, stale, paused,
** shutting down, the worker died, publication failed, a faulted world, a
** malformed request, a key conflict — are not recorded: a retry runs. */
static int ran(json_t *reply) {
  if (json_is_true(json_object_get(reply, "ok"))) return 1;
  static const char *const not_run[] = {"busy", "stale", "paused", "shutting-down", "interrupted",
                                        "publication-failed", "fenced", "standby", "faulted", "invalid-request", "not-allowed", "cancelled",
                                        "not-paused", "unknown-op", "key-conflict", NULL};
  const char *code = json_string_value(json_object_get(reply, "code"));
  for (int i = 0; code && not_run[i]; i++)
    if (!strcmp(code, not_run[i])) return 0;
  return code != NULL;
}

/* Record the outcome of key (a digest) for request (a digest; NULL:
** unknown, a record of an older kernel): reply (stolen: the caller's own
** copy), or — the keys the store kept, read at start-up — the outcome
** event's text, made a reply only if it is replayed (reply_of_event). */
static void record(Daemon *D, const char *key, const char *request, json_t *reply, const char *event, size_t len) {
  if (json_object_get(D->keys.done, key) || (!reply && !event)) {
    json_decref(reply);
    return;
  }
  size_t bytes = len;
  if (reply) {
    json_object_del(reply, "id");
    json_object_set_new(reply, "replayed", json_true());
    bytes = reply_bytes(reply);
  }
  while (json_array_size(D->keys.order) && json_array_size(D->keys.order) >= DKEYS_MAX) forget_oldest(D);
  json_t *r = json_object();
  json_object_set_new(r, "bytes", json_integer((json_int_t)bytes));
  if (reply) json_object_set_new(r, "reply", reply);
  else json_object_set_new(r, "event", json_stringn(event, len));
  if (request) json_object_set_new(r, "request", json_string(request));
  json_object_set_new(D->keys.done, key, r);
  json_array_append_new(D->keys.order, json_string(key));
  D->keys.bytes += bytes;
  trim(D);
}

/* The reply a kept outcome event stands for (what the store keeps: not the
** value or the output), or NULL when it is no outcome worth replaying. */
static json_t *reply_of_event(const char *json, size_t len) {
  json_t *e = jtext_load(json, len, 0, NULL), *r = NULL;
  const char *name = json_string_value(json_object_get(e, "event"));
  int ev = name ? store_event_parse(name) : -1;
  const char *outcome = json_string_value(json_object_get(e, "outcome"));
  if (outcome && ev >= 0 && store_event_is_outcome(ev)) {
    int ok = !strcmp(outcome, txn_reason_name(TXN_ACCEPTED));
    r = json_pack("{s:b}", "ok", ok);
    if (!ok) json_object_set_new(r, "code", json_string(outcome));
    json_t *v;
    json_object_set_new(r, "outcome", json_string(outcome));
    if ((v = json_object_get(e, "revision"))) json_object_set(r, "revision", v);
    if ((v = json_object_get(e, "generation"))) json_object_set(r, "generation", v);
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (!ok) json_object_set_new(r, "message", json_string(msg ? msg : outcome));
    json_object_set_new(r, "replayed", json_true());
    if (!ran(r)) {
      json_decref(r);
      r = NULL;
    }
  }
  json_decref(e);
  return r;
}

/* The reply recorded for key (a new reference), or NULL: none, or one of
** an outcome that ran nothing (forgotten: the request runs). */
static json_t *recorded(Daemon *D, const char *key) {
  json_t *done = json_object_get(D->keys.done, key);
  if (!done) return NULL;
  json_t *r = json_object_get(done, "reply");
  if (r) return json_deep_copy(r);
  json_t *ev = json_object_get(done, "event");
  if ((r = reply_of_event(json_string_value(ev), json_string_length(ev)))) return r;
  D->keys.bytes -= (size_t)json_integer_value(json_object_get(done, "bytes"));
  json_object_del(D->keys.done, key);   /* (its place in the order goes with forget_oldest) */
  return NULL;
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

static int digest_of_key(const char *key, char hex[65]) {
  uint8_t d[32];
  if (store_digest(key, strlen(key), d) != STORE_OK) return -1;
  store_hash_hex(d, hex);
  return 0;
}

/* The flight entry of a request waiting or running with key digest kh. */
static json_t *flying(Daemon *D, const char *kh) {
  const char *k;
  json_t *v;
  json_object_foreach(D->keys.flight, k, v) {
    const char *f = json_string_value(json_object_get(v, "key"));
    if (f && !strcmp(f, kh)) return v;
  }
  return NULL;
}

int dkeys_in_flight(Daemon *D, const char *key) {
  char kh[65];
  return json_object_size(D->keys.flight) && digest_of_key(key, kh) == 0 && flying(D, kh) != NULL;
}

static void refuse_conflict(Daemon *D, uint64_t client, json_t *id, json_t *req, const char *key,
                            const char *when) {
  const char *op = json_string_value(json_object_get(req, "op"));
  dlog(D, "refused a %s whose key %s a different request", op, when);
  dtally_count(D, op, proto_code_name(PROTO_KEY_CONFLICT));
  dreply_err(D, client, id, proto_code_name(PROTO_KEY_CONFLICT),
                     "the idempotency key %.80s %s a different request (another op, source, action, generation or "
                     "limits); nothing ran: send a new request with a new key", key, when);
}

int dkeys_replay(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  const char *key = dkeys_of(req);
  if (!key) return 0;
  events_Key *k = events_key_new(req);
  if (!k) return 0;   /* out of memory: it runs, unkeyed in effect */
  json_t *r = recorded(D, k->key), *f;
  const char *was = r ? json_string_value(json_object_get(json_object_get(D->keys.done, k->key), "request")) : NULL;
  int answered = 1;
  if (r && was && strcmp(was, k->request)) {
    json_decref(r);
    refuse_conflict(D, client, id, req, key, "was used for");
  } else if (r) {
    dlog(D, "replayed the outcome of key %.16s...", k->key);
    /* read back from the store: the revision's changes, from its manifest */
    json_t *rev = json_object_get(r, "revision");
    if (json_is_true(json_object_get(r, "ok")) && rev && !json_object_get(r, "changes"))
      json_object_set_new(r, "changes", storeio_revision_changes(dstore(D), (uint64_t)json_integer_value(rev)));
    dtally_count(D, json_string_value(json_object_get(req, "op")), "replayed");
    dreply(D, client, id, r);
  } else if ((f = flying(D, k->key)) && strcmp(json_string_value(json_object_get(f, "request")), k->request)) {
    refuse_conflict(D, client, id, req, key, "is waiting or running with");
  } else {
    answered = 0;
  }
  free(k);
  return answered;
}

void dkeys_expect(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  events_Key *k = events_key_new(req);
  if (!k) return;
  char name[200];
  flight_name(client, id, name, sizeof name);
  json_object_set_new(D->keys.flight, name, json_pack("{s:s, s:s}", "key", k->key, "request", k->request));
  free(k);
}

/* The flight entry of a request (its name in the map in name), or NULL. */
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
  json_t *f = in_flight(D, client, id, name);
  if (!f) return;
  if (ran(reply))
    record(D, json_string_value(json_object_get(f, "key")), json_string_value(json_object_get(f, "request")),
           json_deep_copy(reply), NULL, 0);
  json_object_del(D->keys.flight, name);
}

void dkeys_forget(Daemon *D, uint64_t client, json_t *id) {
  if (!json_object_size(D->keys.flight) || !id) return;
  char name[200];
  flight_name(client, id, name, sizeof name);
  json_object_del(D->keys.flight, name);
}

/* A key the store kept: its outcome event's text, read only if the key
** comes again; its request's digest, found by a look at the text (the
** kernel's own compact record: the member appears once, at the top). */
static int load_key(void *arg, const uint8_t digest[32], const char *json, size_t len) {
  Daemon *D = arg;
  char key[65], request[65];
  static const char tag[] = "\"" EVENTS_REQUEST_MEMBER "\":\"";
  store_hash_hex(digest, key);
  const char *at = memmem(json, len, tag, sizeof tag - 1);
  int has = at && (size_t)(json + len - (at + sizeof tag - 1)) > 64 && at[sizeof tag - 1 + 64] == '"';
  if (has) memcpy(request, at + sizeof tag - 1, 64), request[64] = '\0';
  record(D, key, has ? request : NULL, NULL, json, len);
  return 0;
}

void dkeys_load(Daemon *D) {
  if (store_keys_read(dstore(D), load_key, D) != STORE_OK)
    dlog(D, "could not read the idempotency keys: %s; retried requests run again", store_errmsg(dstore(D)));
}

void dkeys_tag_event(Daemon *D, json_t *ev) {
  if (!D->live.cur.key || !D->live.cur.active) return;
  json_t *a = json_object_get(ev, "attempt");
  if (!json_is_integer(a) || (uint64_t)json_integer_value(a) != D->live.cur.attempt) return;
  events_tag(ev, D->live.cur.key);
}
