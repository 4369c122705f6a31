/*
** sv_loop.c — the supervisor's loop (supervise.h, docs/repair.md).
**
** Two connections to the kernel: one subscribed (incident events arrive
** there), one for requests (a subscribed connection's replies would
** interleave with events).  The incidents open when it starts are asked
** of the kernel; each one captured later arrives as an event.  One
** incident at a time: taken (captured -> awaiting-model, which no other
** supervisor can then take), its evidence shown to the model, each verdict
** logged on the incident, a repair handed to the kernel, which verifies
** and applies it or says why not — and the model tries again, within the
** attempts and the budgets.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "supervise.h"

#define INVALID_IN_A_ROW 3      /* invalid answers before the model is given up */
#define IDLE_GRACE 0.2          /* seconds without an event before --until-idle exits */

/* ------------------------------------------------------------ the kernel */

/* A request on the request connection: the reply, or NULL after a message
** (the connection is lost, or interrupted). */
static json_t *call_with(sv_Supervisor *s, json_t *req, volatile sig_atomic_t *intr) {
  json_t *rep = NULL;
  int rc = kclient_call(&s->k, req, &rep, intr);
  if (rc == KCLIENT_OK) return rep;
  if (rc != KCLIENT_INTERRUPTED) fprintf(stderr, "jiti supervise: %s\n", s->k.err);
  return NULL;
}

static json_t *call(sv_Supervisor *s, json_t *req) { return call_with(s, req, s->intr); }

static int ok(json_t *rep) { return json_is_true(json_object_get(rep, "ok")); }

/* Move incident id from -> to, with a log entry (may be NULL).  1 when it
** moved. */
static int move(sv_Supervisor *s, uint64_t id, const char *from, const char *to, json_t *entry) {
  json_t *req = json_pack("{s:s, s:I, s:s, s:s}", "op", "incident", "incident", (json_int_t)id, "from", from, "to", to);
  if (entry) json_object_set_new(req, "note", json_pack("{s:s, s:O}", "kind", "exchange", "entry", entry));
  json_t *rep = call(s, req);
  int moved = ok(rep);
  if (rep && !moved)
    fprintf(stderr, "jiti supervise: incident %" PRIu64 ": %s\n", id, kclient_str(rep, "message"));
  json_decref(rep);
  return moved;
}

/* Log a model exchange on incident id. */
static void log_exchange(sv_Supervisor *s, uint64_t id, json_t *entry) {
  json_t *req = json_pack("{s:s, s:I, s:{s:s, s:O}}", "op", "incident", "incident", (json_int_t)id, "note", "kind",
                          "exchange", "entry", entry);
  json_decref(call(s, req));
}

/* ------------------------------------------------------------ the queue */

static void enqueue(sv_Supervisor *s, uint64_t id) {
  for (size_t i = 0; i < s->nqueue; i++)
    if (s->queue[i] == id) return;
  if (s->nqueue == s->capqueue) {
    size_t cap = s->capqueue ? s->capqueue * 2 : 16;
    uint64_t *q = realloc(s->queue, cap * sizeof *q);
    if (!q) return;   /* taken by the next look at the store */
    s->queue = q;
    s->capqueue = cap;
  }
  s->queue[s->nqueue++] = id;
}

static int seen(const sv_Supervisor *s, uint64_t id) {
  for (size_t i = 0; i < s->nseen; i++)
    if (s->seen[i] == id) return 1;
  return 0;
}

static void mark_seen(sv_Supervisor *s, uint64_t id) {
  if (seen(s, id)) return;
  if (s->nseen == s->capseen) {
    size_t cap = s->capseen ? s->capseen * 2 : 16;
    uint64_t *q = realloc(s->seen, cap * sizeof *q);
    if (!q) return;
    s->seen = q;
    s->capseen = cap;
  }
  s->seen[s->nseen++] = id;
}

/* The incidents open for a supervisor (captured; awaiting-model left by
** one that stopped), oldest first, into the queue — asked of the kernel,
** which has them as written.  How many, or -1. */
static long look_at_kernel(sv_Supervisor *s) {
  json_t *rep = call(s, json_pack("{s:s, s:[s, s]}", "op", "incidents", "status", "captured", "awaiting-model"));
  if (!ok(rep)) {
    if (rep) fprintf(stderr, "jiti supervise: cannot list the incidents: %s\n", kclient_str(rep, "message"));
    json_decref(rep);
    return -1;
  }
  json_t *list = json_object_get(rep, "incidents");
  long n = 0;
  for (size_t i = json_array_size(list); i-- > 0;) {   /* newest first: the oldest is taken first */
    uint64_t id = (uint64_t)kclient_int(json_array_get(list, i), "id");
    if (!seen(s, id)) {
      enqueue(s, id);
      n++;
    }
  }
  json_decref(rep);
  return n;
}

/* ------------------------------------------------------------ one incident */

typedef struct Case {
  uint64_t id;
  const char *function;
  json_t *incident;             /* the incident request's "incident" */
  int64_t tokens;
  double t0;
  const char *outcome;          /* its last status, for the summary */
  uint64_t revision;
} Case;

static void say(sv_Supervisor *s, const Case *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(sv_Supervisor *s, const Case *c, const char *fmt, ...) {
  if (s->o->json) return;
  va_list ap;
  va_start(ap, fmt);
  printf("incident %" PRIu64 " (%s): ", c->id, c->function);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

/* The entry of a verdict's exchange for the incident's log. */
static json_t *exchange(const sv_Supervisor *s, int attempt, const model_Reply *r) {
  json_t *e = json_pack("{s:i, s:s, s:s, s:I, s:{s:I, s:I, s:I}}", "attempt", attempt, "model",
                        model_describe(s->m), "status", r->code ? r->code : model_status_name(r->status), "ms",
                        (json_int_t)(r->seconds * 1000 + 0.5), "usage", "input_tokens", (json_int_t)r->usage.input_tokens, "output_tokens",
                        (json_int_t)r->usage.output_tokens, "total_tokens", (json_int_t)r->usage.total_tokens);
  if (r->action) json_object_set(e, "verdict", r->action);
  if (r->message) json_object_set_new(e, "message", json_string(r->message));
  if (r->response_id) json_object_set_new(e, "response_id", json_string(r->response_id));
  model_redact_json(s->m, e);
  return e;
}

/* Tokens: 1 when a budget is spent (why in buf). */
static int over_budget(sv_Supervisor *s, Case *c, char *buf, size_t n) {
  if (s->o->budget && c->tokens >= s->o->budget) {
    snprintf(buf, n, "the token budget per incident is spent (%" PRId64 " of --budget %" PRId64 ")", c->tokens,
             s->o->budget);
    return 1;
  }
  if (s->o->hourly_budget && s->hour_tokens >= s->o->hourly_budget) {
    snprintf(buf, n, "the hourly token budget is spent (%" PRId64 " of --hourly-budget %" PRId64 ")", s->hour_tokens,
             s->o->hourly_budget);
    return 1;
  }
  return 0;
}

static void spend(sv_Supervisor *s, Case *c, const model_Reply *r) {
  double now = mono_now();
  if (now - s->hour_start >= 3600) {
    s->hour_start = now;
    s->hour_tokens = 0;
  }
  c->tokens += r->usage.total_tokens;
  s->hour_tokens += r->usage.total_tokens;
}

/* A failed or declined incident: moved with a note of why. */
static void give_up(sv_Supervisor *s, Case *c, const char *to, const char *why) {
  json_t *e = json_pack("{s:s}", "reason", why);
  if (move(s, c->id, "awaiting-model", to, e)) c->outcome = to;
  json_decref(e);
  say(s, c, "%s: %s", to, why);
}

/* A repair verdict to the kernel.  1 when the incident is done with (its
** outcome set), 0 when the model tries again (*result: what it is told). */
static int submit(sv_Supervisor *s, Case *c, const model_Reply *r, char **result) {
  json_t *a = r->action;
  json_t *req = json_pack("{s:s, s:I, s:O, s:O, s:s}", "op", "repair", "incident", (json_int_t)c->id, "source",
                          json_object_get(a, "source"), "reason", json_object_get(a, "reason"), "scope",
                          s->o->scope_world ? "world" : "function");
  json_t *ic = json_object_get(a, "intended_changes");
  if (json_is_string(ic)) json_object_set(req, "intended_changes", ic);
  if (r->response_id) json_object_set_new(req, "response_id", json_string(r->response_id));
  if (s->o->verify_timeout_ms) json_object_set_new(req, "timeout_ms", json_integer(s->o->verify_timeout_ms));
  if (s->o->watch >= 0) json_object_set_new(req, "watch", json_integer(s->o->watch));
  if (s->o->promote_manual) json_object_set_new(req, "promote", json_string("manual"));
  say(s, c, "verifying a repair: %s", kclient_str(a, "reason"));
  json_t *rep = call(s, req);
  if (!rep) {
    c->outcome = "lost";
    return 1;
  }
  const char *code = kclient_str(rep, "code");
  int done = 1;
  if (ok(rep)) {
    c->outcome = s->o->promote_manual ? "tentative" : "repaired";
    c->revision = (uint64_t)kclient_int(rep, "revision");
    s->repaired++;
    say(s, c, "%s by revision %" PRIu64 " (%.0f ms after it was taken)%s", s->o->promote_manual ? "tentatively "
        "repaired" : "repaired", c->revision, (mono_now() - c->t0) * 1000, s->o->promote_manual ? ": jiti promote "
        "or jiti reject" : "");
  } else if (code && !strcmp(code, "rejected")) {
    say(s, c, "rejected: %s", kclient_str(rep, "message"));
    if (asprintf(result, "The repair was rejected: %s", kclient_str(rep, "message")) < 0) *result = NULL;
    done = 0;
  } else if (code && (!strcmp(code, "stale") || !strcmp(code, "conflict"))) {
    c->outcome = !strcmp(code, "stale") ? "stale" : "taken elsewhere";
    say(s, c, "%s", kclient_str(rep, "message"));
  } else {
    /* the apply itself failed (an invariant at commit, the store): the
    ** kernel sent the incident back to the model */
    const char *st = kclient_str(json_object_get(rep, "repair"), "status");
    say(s, c, "not applied: %s", kclient_str(rep, "message"));
    if (st && !strcmp(st, "awaiting-model")) {
      if (asprintf(result, "The repair could not be applied: %s", kclient_str(rep, "message")) < 0) *result = NULL;
      done = 0;
    } else {
      c->outcome = "failed";
    }
  }
  json_decref(rep);
  return done;
}

/* The verdict loop of one incident awaiting the model. */
static void decide(sv_Supervisor *s, Case *c, model_Conv *conv) {
  int invalid = 0;
  char why[512];
  for (int attempt = 1; attempt <= s->o->attempts;) {
    if (s->intr && *s->intr) return;
    if (over_budget(s, c, why, sizeof why)) {
      give_up(s, c, "failed", why);
      return;
    }
    model_Reply r;
    model_next(s->m, conv, &r);
    spend(s, c, &r);
    json_t *e = exchange(s, attempt, &r);
    log_exchange(s, c->id, e);
    json_decref(e);
    if (r.status == MODEL_INTERRUPTED) {
      model_reply_free(&r);
      return;
    }
    if (r.status == MODEL_INVALID) {
      model_conv_reply(conv, &r);
      model_conv_result(conv, r.message ? r.message : "not a valid action");
      say(s, c, "invalid answer (%s): %s", r.code, r.message ? r.message : "");
      model_reply_free(&r);
      if (++invalid >= INVALID_IN_A_ROW) {
        give_up(s, c, "failed", "the model answered with no valid verdict three times in a row");
        return;
      }
      continue;
    }
    if (r.status != MODEL_OK) {
      snprintf(why, sizeof why, "the model: %s: %s", r.code ? r.code : model_status_name(r.status),
               r.message ? r.message : "");
      model_reply_free(&r);
      give_up(s, c, "failed", why);
      return;
    }
    invalid = 0;
    const char *type = kclient_str(r.action, "type");
    const char *reason = kclient_str(r.action, "reason");
    if (type && !strcmp(type, "expected")) {
      give_up(s, c, "declined-expected", reason ? reason : "expected");
      model_reply_free(&r);
      return;
    }
    if (type && !strcmp(type, "insufficient_evidence")) {
      give_up(s, c, "declined-insufficient-evidence", reason ? reason : "insufficient evidence");
      model_reply_free(&r);
      return;
    }
    char *result = NULL;
    int done = submit(s, c, &r, &result);
    model_conv_reply(conv, &r);
    model_reply_free(&r);
    if (done) {
      free(result);
      return;
    }
    model_conv_result(conv, result ? result : "The repair was rejected.");
    free(result);
    attempt++;
  }
  snprintf(why, sizeof why, "no repair passed verification in %d attempt%s (--attempts)", s->o->attempts,
           s->o->attempts == 1 ? "" : "s");
  give_up(s, c, "rejected", why);
}

/* The live definition's text and the invariants, for the evidence. */
static char *definition_of(sv_Supervisor *s, const char *function) {
  json_t *rep = call(s, json_pack("{s:s, s:s, s:s}", "op", "inspect", "kind", "function", "name", function));
  const char *t = kclient_str(json_object_get(rep, "entry"), "text");
  char *d = t ? strdup(t) : NULL;
  json_decref(rep);
  return d;
}

static void handle(sv_Supervisor *s, uint64_t id) {
  mark_seen(s, id);
  json_t *rep = call(s, json_pack("{s:s, s:I, s:b}", "op", "incident", "incident", (json_int_t)id, "traffic", 1));
  if (!ok(rep)) {
    if (rep) fprintf(stderr, "jiti supervise: incident %" PRIu64 ": %s\n", id, kclient_str(rep, "message"));
    json_decref(rep);
    return;
  }
  json_t *inc = json_object_get(rep, "incident");
  Case c = {id, kclient_str(inc, "function"), inc, 0, mono_now(), NULL, 0};
  const char *status = kclient_str(inc, "status");
  if (!c.function || !status) goto done;
  if (!strcmp(status, "captured")) {
    if (!move(s, id, "captured", "awaiting-model", NULL)) goto done;   /* another supervisor took it */
  } else if (strcmp(status, "awaiting-model")) {
    goto done;   /* no longer open for a supervisor */
  }
  s->current = id;
  s->handled++;
  c.outcome = "awaiting-model";
  if (!strcmp(kclient_str(inc, "kind"), "explicit"))
    say(s, &c, "awaiting the model (an operator's heal)");
  else
    say(s, &c, "awaiting the model (%s, %" JSON_INTEGER_FORMAT " failure%s)", kclient_str(inc, "condition"),
        kclient_int(inc, "count"), kclient_int(inc, "count") == 1 ? "" : "s");
  char *def = definition_of(s, c.function);
  json_t *inv = call(s, json_pack("{s:s}", "op", "invariant-list"));
  char *ins = sv_instructions(s->o);
  char *evidence = sv_evidence(s->o, inc, json_object_get(rep, "traffic"), def, json_object_get(inv, "invariants"));
  model_Conv *conv = ins ? model_conv_new(ins) : NULL;
  if (conv && evidence && model_conv_user(conv, evidence) == 0) decide(s, &c, conv);
  else give_up(s, &c, "failed", "out of memory building the model's prompt");
  if (s->intr && *s->intr) {   /* stopped: the incident it holds is cancelled (a request Ctrl-C does not stop) */
    json_t *rep = call_with(s, json_pack("{s:s, s:I, s:s, s:s}", "op", "incident", "incident", (json_int_t)id,
                                         "from", "awaiting-model", "to", "cancelled"), NULL);
    if (ok(rep)) {
      c.outcome = "cancelled";
      say(s, &c, "cancelled: the supervisor was stopped");
    }
    json_decref(rep);
  }
  s->current = 0;
  if (s->o->json) {
    json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:f}", "incident", (json_int_t)id, "function", c.function,
                          "outcome", c.outcome ? c.outcome : "?", "tokens", (json_int_t)c.tokens, "seconds",
                          mono_now() - c.t0);
    if (c.revision) json_object_set_new(o, "revision", json_integer((json_int_t)c.revision));
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (t) puts(t);
    fflush(stdout);
    free(t);
    json_decref(o);
  }
  model_conv_free(conv);
  free(ins);
  free(evidence);
  free(def);
  json_decref(inv);
done:
  json_decref(rep);
}

/* ------------------------------------------------------------ the run */

/* The incidents an event names for a supervisor: a new one (captured),
** or one the watch reopened. */
static void on_event(sv_Supervisor *s, json_t *ev) {
  const char *kind = kclient_str(ev, "event");
  const char *status = kclient_str(ev, "status");
  if (kind && !strcmp(kind, "incident") && status && !strcmp(status, "captured"))
    enqueue(s, (uint64_t)kclient_int(ev, "incident"));
}

int sv_run(sv_Supervisor *s) {
  json_t *rep = NULL;
  if (kclient_connect(&s->k) || kclient_connect(&s->ev)) {
    fprintf(stderr, "jiti supervise: %s\n", s->k.fd < 0 ? s->k.err : s->ev.err);
    return SV_FAIL;
  }
  if (kclient_call(&s->ev, json_pack("{s:s}", "op", "subscribe"), &rep, s->intr) != KCLIENT_OK || !ok(rep)) {
    fprintf(stderr, "jiti supervise: cannot subscribe to the kernel's events: %s\n", s->ev.err);
    json_decref(rep);
    return SV_FAIL;
  }
  json_decref(rep);
  s->hour_start = mono_now();
  if (look_at_kernel(s) < 0) return SV_FAIL;
  if (!s->o->json)
    printf("supervising %s with %s (scope %s, %d attempt%s per incident)%s\n", s->o->store, model_describe(s->m),
           s->o->scope_world ? "world" : "function", s->o->attempts, s->o->attempts == 1 ? "" : "s",
           s->o->until_idle ? "" : "; Ctrl-C stops");
  fflush(stdout);
  for (;;) {
    while (s->nqueue && !(s->intr && *s->intr)) {
      uint64_t id = s->queue[0];
      memmove(s->queue, s->queue + 1, (s->nqueue - 1) * sizeof *s->queue);
      s->nqueue--;
      handle(s, id);
      if (s->k.fd < 0) return SV_FAIL;   /* the kernel is gone */
      json_t *ev;
      while (kclient_event(&s->ev, 0, &ev, s->intr) == KCLIENT_OK) {
        on_event(s, ev);
        json_decref(ev);
      }
    }
    if (s->intr && *s->intr) return SV_INTERRUPTED;
    if (s->o->until_idle) {
      /* subscribed before the store was read: every incident opened since
      ** comes as an event; one told late (synced a moment after its
      ** call's reply) still comes within the grace */
      json_t *ev = NULL;
      int rc = kclient_event(&s->ev, IDLE_GRACE, &ev, s->intr);
      if (rc == KCLIENT_OK) on_event(s, ev);
      json_decref(ev);
      if (rc == KCLIENT_TIMEOUT && !s->nqueue) return SV_OK;
      if (rc == KCLIENT_INTERRUPTED) return SV_INTERRUPTED;
      if (rc == KCLIENT_NO_REPLY) {
        fprintf(stderr, "jiti supervise: %s\n", s->ev.err);
        return SV_FAIL;
      }
      continue;
    }
    json_t *ev = NULL;
    int rc = kclient_event(&s->ev, -1, &ev, s->intr);
    if (rc == KCLIENT_OK) on_event(s, ev);
    json_decref(ev);
    if (rc == KCLIENT_INTERRUPTED) return SV_INTERRUPTED;
    if (rc == KCLIENT_NO_REPLY) {
      fprintf(stderr, "jiti supervise: %s\n", s->ev.err);
      return SV_FAIL;
    }
  }
}
