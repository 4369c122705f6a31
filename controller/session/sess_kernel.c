/*
** sess_kernel.c — the kernel requests of a session (sess.h,
** docs/protocol.md).  A step costs two round trips: the action, then one
** observe that also evaluates the goals; records go without waiting.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli.h"
#include "maction.h"
#include "sess.h"

/* A kernel call that took since t0 ended with rc: counted; the reply, or
** NULL after saying why (nothing when interrupted: the caller says so). */
static json_t *call_ended(sess_Session *s, double t0, int rc, json_t *rep) {
  s->t.kernel_seconds += mono_now() - t0;
  s->kernel_calls++;
  if (rc == KCLIENT_OK) return rep;
  if (rc != KCLIENT_INTERRUPTED)
    fprintf(stderr, "jiti session: lost the connection to the kernel of %s (is it still running? 'jiti status "
                    "--store %s')\n", s->o->store, s->o->store);
  return NULL;
}

json_t *sess_call(sess_Session *s, json_t *req) {
  json_t *rep = NULL;
  double t0 = mono_now();
  int rc = kclient_call(s->k, req, &rep, s->intr);
  return call_ended(s, t0, rc, rep);
}

static void retry_progress(const char *line) { fprintf(stderr, "jiti session: %s\n", line); }

/* An act carries an idempotency key: when the connection drops before its
** reply (the kernel was restarted), it is sent again with the same key for
** up to 30 s (kclient_call_keyed), so a step never runs twice. */
static json_t *act_keyed(sess_Session *s, json_t *req) {
  json_t *rep = NULL;
  double t0 = mono_now();
  int rc = kclient_call_keyed(s->k, req, NULL, 30, retry_progress, s->intr, &rep);
  return call_ended(s, t0, rc, rep);
}

void sess_record(sess_Session *s, const char *kind, json_t *ev, int sync) {
  if (!ev) return;
  /* what reaches the store, the kernel's log and the transcripts is
  ** redacted of the API key's value, wherever a model or a user put it */
  if (model_redact_json(s->m, ev) != 0) {
    json_decref(ev);
    ev = json_pack("{s:s}", "note", "out of memory redacting this record: left out");
    if (!ev) return;
  }
  json_object_set_new(ev, "event", json_string(kind));
  json_object_set_new(ev, "session", json_string(s->id));
  json_t *req = json_pack("{s:s, s:o}", "op", "record", "event", ev);
  if (!sync) {
    kclient_send(s->k, req);
    return;
  }
  json_object_set_new(req, "sync", json_true());
  json_decref(sess_call(s, req));
}

int sess_observe(sess_Session *s) {
  json_t *req = json_pack("{s:s, s:I}", "op", "observe", "budget", (json_int_t)s->o->view_budget);
  if (s->o->task.ngoals) {
    json_t *g = json_array();
    for (int i = 0; i < s->o->task.ngoals; i++) json_array_append_new(g, json_string(s->o->task.goals[i]));
    json_object_set_new(req, "goals", g);
  }
  json_t *rep = sess_call(s, req);
  json_t *view = json_object_get(rep, "view");
  if (!json_is_object(view)) {
    if (rep) fprintf(stderr, "jiti session: observe failed: %s\n", kclient_str(rep, "message"));
    json_decref(rep);
    return -1;
  }
  json_decref(s->view);
  s->view = json_incref(view);
  json_decref(rep);
  s->gen = kclient_int(view, "generation");
  s->revision = kclient_int(view, "revision");
  s->paused = json_is_object(json_object_get(view, "pause"));
  if (!s->paused) s->pause_ours = 0;
  return 0;
}

void sess_goal_counts(const sess_Session *s, int *pass, int *total) {
  json_t *g = json_object_get(s->view, "goals"), *x;
  size_t i;
  *pass = *total = 0;
  json_array_foreach(g, i, x) {
    (*total)++;
    *pass += json_is_true(json_object_get(x, "pass"));
  }
}

int sess_goals_hold(const sess_Session *s) {
  int pass, total;
  sess_goal_counts(s, &pass, &total);
  return total > 0 && pass == total;
}

/* The failures of a preview that are the form's own (it does not read, it
** signals, it runs out of a limit).  Others (paused, busy, stale) say
** nothing about the form. */
static int form_fault(const char *code) {
  static const char *const own[] = {"error", "aborted", "rejected-by-gate", "limit", "invalid-arguments", "unsafe",
                                    NULL};
  for (int i = 0; own[i]; i++)
    if (!strcmp(code, own[i])) return 1;
  return 0;
}

/* The name an UNDEFINED-FUNCTION or UNBOUND-VARIABLE message is about
** ("... The function FOO is undefined."), package prefix dropped, into
** name; 0 for another condition. */
static int undefined_name(const char *msg, char *name, size_t len) {
  const char *p = NULL;
  if (!strncmp(msg, "UNDEFINED-FUNCTION: The function ", 33)) p = msg + 33;
  else if (!strncmp(msg, "UNBOUND-VARIABLE: The variable ", 31)) p = msg + 31;
  if (!p) return 0;
  size_t n = strcspn(p, " ");
  const char *colon = memrchr(p, ':', n);
  if (colon) {
    n -= (size_t)(colon + 1 - p);
    p = colon + 1;
  }
  snprintf(name, len, "%.*s", (int)n, p);
  return n > 0;
}

/* name (upper case) appears in text as a whole word, in any case. */
static int names(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; p && *p; p++) {
    if (strncasecmp(p, name, n)) continue;
    int before = p == text || !(isalnum((unsigned char)p[-1]) || strchr("-*+_/%<>=!?", p[-1]));
    int after = !(isalnum((unsigned char)p[n]) || (p[n] && strchr("-*+_/%<>=!?", p[n])));
    if (before && after) return 1;
  }
  return 0;
}

int sess_check_task(kclient *k, const sess_Task *t, const char *request, int quiet) {
  int bad = 0;
  for (int i = 0; i < t->ngoals + t->ninvariants; i++) {
    int goal = i < t->ngoals;
    const char *src = goal ? t->goals[i] : t->invariants[i - t->ngoals].source;
    char what[300], name[256];
    if (goal) snprintf(what, sizeof what, "goal %d", i + 1);
    else snprintf(what, sizeof what, "invariant %.200s", t->invariants[i - t->ngoals].name);
    json_t *rep = NULL;
    if (kclient_call(k, json_pack("{s:s, s:s}", "op", "preview", "source", src), &rep, NULL) != KCLIENT_OK) {
      fprintf(stderr, "jiti session: lost the connection to the kernel while checking %s\n", what);
      return SESS_FAIL;
    }
    const char *code = kclient_str(rep, "code"), *msg = kclient_str(rep, "message");
    int ok = json_is_true(json_object_get(rep, "ok"));
    int holds = ok && strcmp(kclient_str(rep, "value"), "NIL") != 0;
    if (!ok && !form_fault(code)) {
      fprintf(stderr, "jiti session: %s was not checked beforehand (%s: %s)\n", what, code, msg);
    } else if (!ok && !strcmp(code, "rejected-by-gate")) {
      fprintf(stderr, "jiti session: %s %s cannot be read or run (%s)\n  fix it and run the session again; no model "
                      "request was made\n", what, src, msg);
      bad = 1;
    } else if (!goal && !holds) {
      fprintf(stderr, "jiti session: %s %s %s in the world as it is%s%s\n  it would refuse every change; fix it and "
                      "run the session again; no model request was made\n", what, src,
              ok ? "does not hold" : "signals", ok ? "" : ": ", ok ? "" : msg);
      bad = 1;
    } else if (goal && !ok && undefined_name(msg, name, sizeof name) && request && !names(request, name)) {
      /* a name the request never mentions is most likely a typo: the
      ** model would look for it step after step */
      fprintf(stderr, "jiti session: %s %s cannot be evaluated: %s\n  the request does not mention %s: fix the goal "
                      "(or name %s in the request) and run the session again; no model request was made\n",
              what, src, msg, name, name);
      bad = 1;
    } else if (goal && !ok && !quiet) {
      fprintf(stderr, "jiti session: %s does not hold yet: %s\n", what, msg);
    } else if (goal && holds && !quiet) {
      fprintf(stderr, "jiti session: %s already holds: %s\n", what, src);
    }
    json_decref(rep);
  }
  return bad ? SESS_USAGE : SESS_OK;
}

int sess_add_invariants(kclient *k, const sess_Task *t) {
  for (int i = 0; i < t->ninvariants; i++) {
    json_t *rep = NULL;
    int rc = kclient_call(k, json_pack("{s:s, s:s, s:s}", "op", "invariant-add", "name", t->invariants[i].name,
                                       "source", t->invariants[i].source), &rep, NULL);
    if (rc != KCLIENT_OK) {
      fprintf(stderr, "jiti session: lost the connection to the kernel while adding invariant %s\n",
              t->invariants[i].name);
      return -1;
    }
    int ok = json_is_true(json_object_get(rep, "ok"));
    if (!ok)
      fprintf(stderr, "jiti session: the invariant %s was refused (%s): %s\n", t->invariants[i].name,
              kclient_str(rep, "code"), kclient_str(rep, "message"));
    json_decref(rep);
    if (!ok) return -1;
  }
  return 0;
}

json_t *sess_execute(sess_Session *s, json_t *action, int64_t gen) {
  const char *src = json_string_value(json_object_get(action, "source"));
  json_t *act = NULL;
  switch (maction_kind_of(action)) {
  case MA_EVALUATE:
    act = json_pack("{s:s, s:s}", "type", "evaluate", "source", src);
    if (json_object_get(action, "frame")) json_object_set(act, "frame", json_object_get(action, "frame"));
    break;
  case MA_RESUME: {
    act = json_pack("{s:s, s:O}", "type", "resume", "restart_id", json_object_get(action, "restart_id"));
    json_t *args = json_object_get(action, "arguments");
    if (args) json_object_set(act, "arguments", args);
    break;
  }
  case MA_ABORT:
    act = json_pack("{s:s}", "type", "abort");
    break;
  case MA_PREVIEW:
    return sess_call(s, json_pack("{s:s, s:s, s:I}", "op", "preview", "source", src, "generation", (json_int_t)gen));
  case MA_INSPECT: {
    const char *kind = json_string_value(json_object_get(action, "kind"));
    const char *name = json_string_value(json_object_get(action, "name"));
    /* without a kind the kernel answers with the first entry of that name */
    json_t *req = json_pack("{s:s, s:s}", "op", "inspect", "name", name);
    if (kind) json_object_set_new(req, "kind", json_string(kind));
    return sess_call(s, req);
  }
  case MA_ROLLBACK: {
    json_t *rep = sess_call(s, json_pack("{s:s, s:O, s:I}", "op", "rollback", "revision",
                                         json_object_get(action, "revision"), "generation", (json_int_t)gen));
    if (rep && !strcmp(kclient_str(rep, "code"), "unknown-op")) {
      json_decref(rep);
      char msg[512];
      snprintf(msg, sizeof msg, "this kernel cannot roll back through its socket; the operator can run: jiti "
                                "rollback --store %s REVISION", s->o->store);
      return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "unavailable", "message", msg);
    }
    return rep;
  }
  case MA_CHECK:
    return json_pack("{s:b, s:b}", "ok", 1, "checked", 1);
  case MA_FINISH:
    return json_pack("{s:b, s:b}", "ok", 1, "finished", 1);
  default:
    return json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "invalid-action", "message", "unknown action");
  }
  return act_keyed(s, json_pack("{s:s, s:I, s:o}", "op", "act", "generation", (json_int_t)gen, "action", act));
}
