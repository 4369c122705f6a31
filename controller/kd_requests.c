/*
** kd_requests.c — the kernel daemon's requests (kd.h, docs/protocol.md
** "Requests"): each line is checked against its op's members and types
** before anything is queued, so a malformed request never reaches the
** worker.  The kernel answers hello, status, history, subscribe and
** shutdown itself; queries (observe, inspect, invariant-list) and
** transactions (call, act, preview, invariant-add, invariant-remove) wait
** for the worker in arrival order.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "kd.h"
#include "kproto.h"

#define NAME_MAX_BYTES 1024
#define HISTORY_DEFAULT 20
#define HISTORY_MAX 1000

typedef struct Req {
  Kernel *K;
  uint64_t client;
  json_t *id, *r;
} Req;

static int is_gen(json_t *g) { return json_is_integer(g) && json_integer_value(g) >= 0; }

static const char *state_name(Kernel *K) {
  if (K->in_pause) return "paused";
  if (K->wfd < 0 || K->wait == W_START) return "starting";
  if (K->cur.active) return K->wait == W_COMMIT ? "publishing" : "running";
  return K->wstatus;
}

static void queue(Req *q, Queue *to, const char *what) {
  if (to->n >= KD_MAX_QUEUE) kd_reply_err(q->K, q->client, q->id, "busy", "too many %s are waiting; retry later", what);
  else kd_push(to, q->client, q->id, q->r);
}

/* A string member: required (need) or optional; 0 after an error reply. */
static int string_member(Req *q, const char *key, int need, size_t max, const char **out) {
  json_t *v = json_object_get(q->r, key);
  *out = json_string_value(v);
  if ((!v && !need) || (*out && strlen(*out) <= max && strlen(*out) == json_string_length(v))) return 1;
  const char *op = json_string_value(json_object_get(q->r, "op"));
  if (!op) op = "an act action";  /* members of act's "action" */
  if (!v) kd_reply_err(q->K, q->client, q->id, "invalid-request", "%s needs \"%s\" (a string)", op, key);
  else kd_reply_err(q->K, q->client, q->id, "invalid-request", "\"%s\" of %s must be a string of at most %zu bytes "
                    "without NUL characters", key, op, max);
  return 0;
}

/* Optional "generation": a non-negative integer. */
static int generation_member(Req *q, int need) {
  json_t *g = json_object_get(q->r, "generation");
  if ((!g && !need) || is_gen(g)) return 1;
  kd_reply_err(q->K, q->client, q->id, "invalid-request",
               need ? "%s needs \"generation\": the generation of the view the action was made from"
                    : "\"generation\" of %s must be a non-negative integer",
               json_string_value(json_object_get(q->r, "op")));
  return 0;
}

/* The first member of o that is not in allowed (NULL-terminated), or NULL. */
static const char *unknown_member(json_t *o, const char *const *allowed) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int ok = 0;
    for (int i = 0; allowed[i]; i++) ok |= !strcmp(k, allowed[i]);
    if (!ok) return k;
  }
  return NULL;
}

/* ------------------------------------------------ answered by the kernel */

static void op_hello(Req *q) {
  json_t *p = json_object_get(q->r, "protocol");
  const char *client;
  if (!string_member(q, "client", 0, NAME_MAX_BYTES, &client)) return;
  if (p && !json_is_integer(p)) {
    kd_reply_err(q->K, q->client, q->id, "invalid-request", "\"protocol\" of hello must be an integer");
    return;
  }
  if (p && json_integer_value(p) != KPROTO_VERSION) {
    kd_reply_err(q->K, q->client, q->id, "unsupported-protocol", "this kernel speaks protocol %d only", KPROTO_VERSION);
    return;
  }
  kd_reply(q->K, q->client, q->id, json_pack("{s:b, s:i, s:s, s:s, s:i}", "ok", 1, "protocol", KPROTO_VERSION,
                                             "kernel", JITI_VERSION, "store", q->K->dir, "pid", (int)getpid()));
}

static void op_status(Req *q) {
  Kernel *K = q->K;
  kd_reply(K, q->client, q->id,
           json_pack("{s:b, s:s, s:i, s:s, s:i, s:i, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:i, s:f, s:b}",
                     "ok", 1, "kernel", JITI_VERSION, "protocol", KPROTO_VERSION, "store", K->dir,
                     "pid", (int)getpid(), "worker_pid", (int)K->wpid, "revision", (json_int_t)K->revision,
                     "generation", (json_int_t)K->gen, "state", state_name(K), "queue", (json_int_t)(K->txq.n + K->batch.n),
                     "attempts", (json_int_t)K->attempts,
                     "current_attempt", (json_int_t)(K->cur.active ? K->cur.attempt : 0),
                     "worker_restarts", (json_int_t)K->restarts, "clients", K->nclients,
                     "uptime", kd_now() - K->started, "stopping", K->stopping));
}

/* The revision chain from CURRENT back, newest first. */
static void op_history(Req *q) {
  Kernel *K = q->K;
  json_t *l = json_object_get(q->r, "limit");
  if (l && !(json_is_integer(l) && json_integer_value(l) >= 1 && json_integer_value(l) <= HISTORY_MAX)) {
    kd_reply_err(K, q->client, q->id, "invalid-request", "\"limit\" must be an integer from 1 to %d", HISTORY_MAX);
    return;
  }
  size_t limit = l ? (size_t)json_integer_value(l) : HISTORY_DEFAULT;
  json_t *revs = json_array();
  uint64_t rev = K->revision;
  while (rev && json_array_size(revs) < limit) {
    store_manifest *m;
    if (store_manifest_read(K->s, rev, &m) != STORE_OK) {
      json_decref(revs);
      kd_reply_err(K, q->client, q->id, "store-error", "cannot read revision %" PRIu64 ": %s", rev,
                   store_errmsg(K->s));
      return;
    }
    size_t added, changed, removed;
    cli_count_changes(m, &added, &changed, &removed);
    char when[40];
    cli_iso_time(m->time_ms, when, sizeof when);
    json_array_append_new(revs, json_pack("{s:I, s:I, s:s, s:I, s:s, s:s, s:I, s:I, s:I, s:I}",
                                          "revision", (json_int_t)m->rev, "parent", (json_int_t)m->parent,
                                          "kind", store_rev_kind_name(m->kind), "generation",
                                          (json_int_t)m->generation, "time", when, "summary", m->summary,
                                          "added", (json_int_t)added, "changed", (json_int_t)changed,
                                          "removed", (json_int_t)removed, "entries", (json_int_t)m->nentries));
    rev = m->parent;
    store_free(m);
  }
  kd_reply(K, q->client, q->id, json_pack("{s:b, s:I, s:o}", "ok", 1, "current", (json_int_t)K->revision,
                                          "revisions", revs));
}

static void op_subscribe(Req *q) {
  Client *c = kd_client(q->K, q->client);
  if (c && !c->subscribed) {
    c->subscribed = 1;
    q->K->subscribers++;
  }
  kd_reply(q->K, q->client, q->id, json_pack("{s:b, s:b}", "ok", 1, "subscribed", 1));
}

static void op_shutdown(Req *q) {
  kd_reply(q->K, q->client, q->id, json_pack("{s:b, s:s}", "ok", 1, "message", "shutting down"));
  kd_begin_shutdown(q->K, "shutdown request");
}

/* ---------------------------------------------------- answered by the worker */

static void op_observe(Req *q) {
  json_t *b = json_object_get(q->r, "budget");
  if (b && !(json_is_integer(b) && json_integer_value(b) > 0 && json_integer_value(b) <= (16 << 20))) {
    kd_reply_err(q->K, q->client, q->id, "invalid-request", "\"budget\" must be a byte count from 1 to 16777216");
    return;
  }
  queue(q, &q->K->queryq, "requests");
}

static void op_inspect(Req *q) {
  const char *kind, *name;
  if (!string_member(q, "kind", 1, 32, &kind) || !string_member(q, "name", 1, NAME_MAX_BYTES, &name)) return;
  if (jiti_entry_kind_parse(kind) < 0) {
    kd_reply_err(q->K, q->client, q->id, "invalid-request", "unknown entry kind '%.40s' (function, macro, "
                 "variable, structure, data, invariant)", kind);
    return;
  }
  queue(q, &q->K->queryq, "requests");
}

static void op_invariant_list(Req *q) { queue(q, &q->K->queryq, "requests"); }

static void op_call(Req *q) {  /* call and preview */
  const char *source, *package;
  if (!string_member(q, "source", 1, KPROTO_LINE_MAX, &source) || !generation_member(q, 0) ||
      !string_member(q, "package", 0, NAME_MAX_BYTES, &package))
    return;
  queue(q, &q->K->txq, "transactions");
}

static void op_invariant_add(Req *q) {
  const char *name, *source;
  if (!string_member(q, "name", 1, NAME_MAX_BYTES, &name) ||
      !string_member(q, "source", 1, KPROTO_LINE_MAX, &source) || !generation_member(q, 0))
    return;
  if (!*name) {
    kd_reply_err(q->K, q->client, q->id, "invalid-request", "an invariant needs a non-empty \"name\"");
    return;
  }
  queue(q, &q->K->txq, "transactions");
}

static void op_invariant_remove(Req *q) {
  const char *name;
  if (!string_member(q, "name", 1, NAME_MAX_BYTES, &name) || !generation_member(q, 0)) return;
  queue(q, &q->K->txq, "transactions");
}

/* act: an action of DESIGN.md section 6.  evaluate starts a transaction, or
** is a repair when something is paused; resume and abort need a pause. */
static void op_act(Req *q) {
  Kernel *K = q->K;
  json_t *a = json_object_get(q->r, "action");
  const char *type = json_string_value(json_object_get(a, "type"));
  if (!generation_member(q, 1)) return;
  if (!json_is_object(a) || !type) {
    kd_reply_err(K, q->client, q->id, "invalid-request",
                 "act needs \"action\": {\"type\": \"evaluate\"|\"resume\"|\"abort\", ...}");
    return;
  }
  static const char *const ev[] = {"type", "source", "package", NULL}, *const rs[] = {"type", "restart_id", "arguments", NULL},
                           *const ab[] = {"type", NULL};
  const char *const *allowed = !strcmp(type, "evaluate") ? ev : !strcmp(type, "resume") ? rs
                             : !strcmp(type, "abort") ? ab : NULL;
  if (!allowed) {
    kd_reply_err(K, q->client, q->id, "invalid-request", "unknown action type '%.40s' (evaluate, resume or abort)", type);
    return;
  }
  const char *bad = unknown_member(a, allowed);
  if (bad) {
    kd_reply_err(K, q->client, q->id, "invalid-request", "unknown member '%.100s' in a %s action", bad, type);
    return;
  }
  Req in = {K, q->client, q->id, a};
  const char *s;
  int pause_cmd = 1;
  if (!strcmp(type, "evaluate")) {
    if (!string_member(&in, "source", 1, KPROTO_LINE_MAX, &s) ||
        !string_member(&in, "package", 0, NAME_MAX_BYTES, &s))
      return;
    pause_cmd = K->in_pause;
  } else if (!strcmp(type, "resume")) {
    if (!string_member(&in, "restart_id", 1, 64, &s) || !string_member(&in, "arguments", 0, KPROTO_LINE_MAX, &s)) return;
  }
  if (pause_cmd && !K->in_pause)
    kd_reply_err(K, q->client, q->id, "not-paused", "no transaction is paused; %s needs a pause (observe to see "
                 "the status)", type);
  else
    queue(q, pause_cmd ? &K->cmdq : &K->txq, "requests");
}

/* ------------------------------------------------------------ dispatch */

typedef struct Op {
  const char *name;
  void (*handle)(Req *q);
  const char *members[6];  /* op, id and its own; NULL-terminated */
} Op;

static const Op ops[] = {
    {"hello", op_hello, {"op", "id", "protocol", "client"}},
    {"status", op_status, {"op", "id"}},
    {"observe", op_observe, {"op", "id", "budget"}},
    {"inspect", op_inspect, {"op", "id", "kind", "name"}},
    {"history", op_history, {"op", "id", "limit"}},
    {"subscribe", op_subscribe, {"op", "id"}},
    {"call", op_call, {"op", "id", "source", "generation", "package"}},
    {"preview", op_call, {"op", "id", "source", "generation", "package"}},
    {"act", op_act, {"op", "id", "generation", "action"}},
    {"invariant-add", op_invariant_add, {"op", "id", "name", "source", "generation"}},
    {"invariant-remove", op_invariant_remove, {"op", "id", "name", "generation"}},
    {"invariant-list", op_invariant_list, {"op", "id"}},
    {"shutdown", op_shutdown, {"op", "id"}},
};

#define OP_NAMES "hello, status, observe, inspect, history, subscribe, call, preview, act, " \
                 "invariant-add, invariant-remove, invariant-list, shutdown"

void kd_handle_request(Kernel *K, Client *c, const char *line, size_t len) {
  uint64_t cs = c->serial;
  if (!kproto_utf8_valid(line, len)) {
    kd_reply_err(K, cs, NULL, "invalid-utf8", "the request is not valid UTF-8");
    return;
  }
  json_error_t je;
  json_t *r = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  if (!r) {
    kd_reply_err(K, cs, NULL, "malformed-json", "the request is not valid JSON: %s (column %d)", je.text, je.column);
    return;
  }
  json_t *id = json_object_get(r, "id");
  const char *name = json_string_value(json_object_get(r, "op"));
  const Op *op = NULL;
  for (size_t i = 0; name && i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(name, ops[i].name)) op = &ops[i];
  const char *bad;
  if (!json_is_object(r)) {
    kd_reply_err(K, cs, NULL, "invalid-request", "a request is one JSON object with an \"op\" member");
  } else if (id && !json_is_string(id) && !json_is_integer(id)) {
    kd_reply_err(K, cs, NULL, "invalid-request", "\"id\" must be a string or an integer");
  } else if (!name) {
    kd_reply_err(K, cs, id, "invalid-request", "the request has no \"op\" (a string: " OP_NAMES ")");
  } else if (!op) {
    kd_reply_err(K, cs, id, "unknown-op", "unknown op '%.100s' (" OP_NAMES ")", name);
  } else if (K->stopping && op->handle != op_hello && op->handle != op_status) {
    kd_reply_err(K, cs, id, "shutting-down", "the kernel is shutting down");
  } else if ((bad = unknown_member(r, op->members))) {
    kd_reply_err(K, cs, id, "invalid-request", "unknown member '%.100s' in %s", bad, name);
  } else {
    Req q = {K, cs, id, r};
    op->handle(&q);
  }
  json_decref(r);
}
