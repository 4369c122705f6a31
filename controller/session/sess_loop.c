/*
** sess_loop.c — one request worked to an end (sess.h):
**
**   observe (with goals) -> prompt -> model -> validate -> tag with the
**   generation of the view the prompt carried -> act -> record -> observe
**
** until every goal holds (SESS_OK), the model sends finish or runs out
** (SESS_GAVE_UP unless the goals hold, SESS_OK without goals), the step
** budget is spent (each action costs one, stale and invalid ones
** included), --max-tokens is reached, --max-format-errors invalid
** responses come in a row, or something cannot go on (SESS_FAIL).  A
** transaction this session paused is aborted when the session ends.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "cli.h"
#include "maction.h"
#include "sess.h"

#define KEEP_STEPS 4            /* steps kept whole when older ones are summarised */
#define RAW_MAX 2048            /* bytes of an invalid response kept in its step record */
#define MESSAGE_MAX 2048
#define ACTION_MAX 10240        /* bytes of an action kept whole in its step record */

/* A bounded copy of s for a record. */
static json_t *bounded(const char *s, size_t max) {
  if (!s) return json_null();
  size_t n = strlen(s);
  if (n <= max) return json_string(s);
  while (n > max || (n && ((unsigned char)s[n] & 0xC0) == 0x80)) n = n > max ? max : n - 1;
  char *t = NULL;
  if (asprintf(&t, "%.*s...[%zu more bytes]", (int)n, s, strlen(s) - n) < 0) return json_null();
  json_t *j = json_string(t);
  free(t);
  return j ? j : json_null();
}

static json_int_t ms(double seconds) { return (json_int_t)(seconds * 1000 + 0.5); }

static json_t *usage_json(const model_Usage *u) {
  return json_pack("{s:I, s:I, s:I, s:I, s:I}", "input_tokens", (json_int_t)u->input_tokens, "output_tokens",
                   (json_int_t)u->output_tokens, "reasoning_tokens", (json_int_t)u->reasoning_tokens,
                   "cached_tokens", (json_int_t)u->cached_tokens, "total_tokens", (json_int_t)u->total_tokens);
}

static json_t *attempts_json(const model_Reply *r) {
  json_t *a = json_array();
  int n = r->nattempts < 16 ? r->nattempts : 16;
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_pack("{s:i, s:s, s:f, s:b}", "status", (int)r->attempts[i].status, "error",
                                       mhttp_error_name(r->attempts[i].error), "wait", r->attempts[i].wait,
                                       "server_wait", r->attempts[i].server_wait));
  return a;
}

static void add_line(sess_Session *s, const char *line) {
  char **l = realloc(s->lines, (size_t)(s->nlines + 1) * sizeof *l);
  if (!l) return;
  s->lines = l;
  s->lines[s->nlines] = strdup(line);
  if (s->lines[s->nlines]) s->nlines++;
}

/* Fold the older steps into a summary when the prompt outgrows its budget:
** never dropped silently, always said. */
static void keep_prompt_small(sess_Session *s, size_t fixed_chars) {
  size_t chars = model_conv_chars(s->conv) + fixed_chars;
  if ((long)(chars / 4) <= s->o->prompt_budget) return;
  int steps = model_conv_steps(s->conv);
  if (steps - KEEP_STEPS <= s->summarised) return;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return;
  fprintf(f, "Steps %d to %d, summarised to keep the prompt short (their full text was left out):\n",
          s->summarised + 1, steps - KEEP_STEPS);
  for (int i = s->summarised; i < steps - KEEP_STEPS && i < s->nlines; i++) fprintf(f, "  %s\n", s->lines[i]);
  fclose(f);
  if (buf && model_conv_compact(s->conv, KEEP_STEPS, buf) == 0) {
    sess_ui_note(s->ui, "(the prompt passed %ld tokens: steps %d-%d are summarised)", s->o->prompt_budget,
                 s->summarised + 1, steps - KEEP_STEPS);
    s->summarised = steps - KEEP_STEPS;
  }
  free(buf);
}

static void record_bodies(sess_Session *s, const model_Reply *r) {
  if (r->request_body)
    sess_record(s, "session-request", json_pack("{s:i, s:I, s:s}", "step", s->t.steps + 1, "bytes",
                                                (json_int_t)r->request_bytes, "body", r->request_body), 0);
  if (r->response_body && r->nattempts)
    sess_record(s, "session-response", json_pack("{s:i, s:I, s:s, s:i}", "step", s->t.steps + 1, "bytes",
                                                 (json_int_t)r->response_bytes, "body", r->response_body, "status",
                                                 (int)r->http_status), 0);
}

/* The step record: what the model said, what was done, what came of it. */
static json_t *step_json(sess_Session *s, const model_Reply *r, json_t *action, int64_t gen, const char *outcome,
                         json_t *reply, double kernel_s) {
  json_t *st = json_pack("{s:i, s:s, s:s, s:O?, s:I, s:b, s:s, s:I, s:o, s:I, s:I, s:I}", "step", s->t.steps,
                         "status", model_status_name(r->status), "code", r->code ? r->code : "", "action", action,
                         "generation", (json_int_t)gen, "pinned", r->pinned_generation >= 0, "outcome", outcome,
                         "generation_after", (json_int_t)s->gen, "usage", usage_json(&r->usage), "model_ms",
                         ms(r->seconds), "kernel_ms", ms(kernel_s), "prompt_chars",
                         (json_int_t)model_conv_chars(s->conv));
  if (!action) json_object_set_new(st, "raw", bounded(r->text, RAW_MAX));
  /* a store record is at most 16 KiB: a longer source is kept shortened
     and marked, so the rest of the step survives (export skips it) */
  char *dump = action ? json_dumps(action, JSON_COMPACT) : NULL;
  if (dump && strlen(dump) > ACTION_MAX) {
    json_t *a = json_deep_copy(action);
    json_object_set_new(a, "source", bounded(json_string_value(json_object_get(action, "source")), ACTION_MAX / 2));
    json_object_set_new(st, "action", a);
    json_object_set_new(st, "action_complete", json_false());
  }
  free(dump);
  const char *msg = r->status != MODEL_OK ? r->message : json_string_value(json_object_get(reply, "message"));
  if (msg) json_object_set_new(st, "message", bounded(msg, MESSAGE_MAX));
  const char *reason = json_string_value(json_object_get(reply, "code"));
  if (reason && !json_is_true(json_object_get(reply, "ok"))) json_object_set_new(st, "reason", json_string(reason));
  if (!strcmp(outcome, "accepted") || !strcmp(outcome, "unchanged"))
    json_object_set_new(st, "revision", json_integer(json_integer_value(json_object_get(reply, "revision"))));
  json_t *v = json_object_get(reply, "value");
  if (json_is_string(v)) json_object_set_new(st, "value", bounded(json_string_value(v), 512));
  json_t *ch = json_object_get(reply, "changes");
  if (json_array_size(ch)) json_object_set(st, "changes", ch);
  if (r->response_id) json_object_set_new(st, "response_id", json_string(r->response_id));
  if (r->request_id) json_object_set_new(st, "request_id", json_string(r->request_id));
  if (r->served_by) json_object_set_new(st, "served_by", json_string(r->served_by));
  if (r->nattempts) json_object_set_new(st, "attempts", attempts_json(r));
  json_t *p = json_object_get(reply, "pause");
  if (json_is_object(p)) {
    json_t *menu = json_array(), *x;
    size_t i;
    json_array_foreach(json_object_get(p, "restarts"), i, x)
      json_array_append_new(menu, json_pack("{s:O, s:O}", "id", json_object_get(x, "id"), "name",
                                            json_object_get(x, "name")));
    json_object_set_new(st, "pause", json_pack("{s:O, s:o, s:o}", "condition_type", json_object_get(p, "condition_type"),
                                               "report", bounded(json_string_value(json_object_get(p, "report")), 512),
                                               "restarts", menu));
  }
  int pass, total;
  sess_goal_counts(s, &pass, &total);
  if (total && !s->paused) json_object_set_new(st, "goals", json_pack("{s:i, s:i}", "pass", pass, "total", total));
  model_redact_json(s->m, st);   /* shown as it is recorded (sess_record) */
  return st;
}

static void count(sess_Session *s, const char *outcome) {
  if (!strcmp(outcome, "accepted")) s->t.accepted++;
  else if (!strcmp(outcome, "stale")) s->t.stale++;
  else if (!strcmp(outcome, "paused")) s->t.paused++;
  else if (!strcmp(outcome, "invalid")) s->t.invalid++;
  else if (!strcmp(outcome, "rejected") || !strcmp(outcome, "refused")) s->t.rejected++;
}

/* End: abort a pause this session left, record and show the end. */
static int finish(sess_Session *s, int status, const char *outcome, double t0) {
  if (s->intr) *s->intr = 0;   /* the session ends either way: its last requests must get through */
  if (s->paused && s->pause_ours && status != SESS_FAIL) {
    json_t *rep = sess_call(s, json_pack("{s:s, s:I, s:{s:s}}", "op", "act", "generation", (json_int_t)s->gen,
                                         "action", "type", "abort"));
    if (rep) sess_ui_note(s->ui, "(the session ends: its paused transaction was aborted)");
    json_decref(rep);
    sess_observe(s);
  }
  int pass, total;
  sess_goal_counts(s, &pass, &total);
  json_t *end = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:o, s:I, s:I, s:I, s:i}", "session", s->id,
                          "outcome", outcome, "exit", status, "steps", s->t.steps, "accepted", s->t.accepted,
                          "rejected", s->t.rejected, "stale", s->t.stale, "invalid", s->t.invalid, "revision",
                          (json_int_t)s->revision, "usage", usage_json(&s->t.usage), "ms", ms(mono_now() - t0),
                          "model_ms", ms(s->t.model_seconds), "kernel_ms", ms(s->t.kernel_seconds),
                          "kernel_calls", s->kernel_calls);
  if (total) json_object_set_new(end, "goals", json_pack("{s:i, s:i}", "pass", pass, "total", total));
  model_redact_json(s->m, end);
  sess_ui_end(s->ui, end);
  json_object_del(end, "session");
  sess_record(s, "session-end", end, 1);
  return status;
}

static void make_id(char *id, size_t n) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  snprintf(id, n, "s%llx-%x", (unsigned long long)tv.tv_sec * 1000 + (unsigned long long)tv.tv_usec / 1000,
           (unsigned)getpid());
}

static void start_record(sess_Session *s) {
  json_t *goals = json_array(), *invs = json_array();
  for (int i = 0; i < s->o->task.ngoals; i++) json_array_append_new(goals, json_string(s->o->task.goals[i]));
  for (int i = 0; i < s->o->task.ninvariants; i++)
    json_array_append_new(invs, json_pack("{s:s, s:s}", "name", s->o->task.invariants[i].name, "source",
                                          s->o->task.invariants[i].source));
  json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:i, s:I, s:I, s:I, s:i}", "request", s->request, "model",
                         model_describe(s->m), "client", model_kind(s->m), "model_name", model_name(s->m), "goals",
                         goals, "invariants", invs, "budget", s->o->budget, "max_tokens", (json_int_t)s->o->max_tokens,
                         "revision", (json_int_t)s->revision, "generation", (json_int_t)s->gen, "pid", (int)getpid());
  sess_record(s, "session-start", ev, 0);
}

/* The tokens used once the next request is answered, at worst: the prompt
** only grows, so its input is at least the last one's; its output at most
** --max-output-tokens, else (unbounded) guessed as the most a step used.
** Before the first request nothing is known but the budget itself. */
static int64_t worst_case(const sess_Session *s) {
  int64_t out = s->o->mopt.max_output_tokens > 0 ? s->o->mopt.max_output_tokens : s->max_output;
  return s->t.usage.total_tokens + (s->last_input ? s->last_input + out : 0);
}

/* Ask the model once: the spinner, the token count, the bodies recorded. */
static model_Status ask_model(sess_Session *s, model_Reply *r) {
  char what[160];
  snprintf(what, sizeof what, "step %d: %s is thinking", s->t.steps + 1, model_kind(s->m));
  sess_ui_wait_start(s->ui, what);
  model_Status st = model_next(s->m, s->conv, r);
  sess_ui_wait_stop(s->ui);
  model_usage_add(&s->t.usage, &r->usage);
  if (r->usage.input_tokens) s->last_input = r->usage.input_tokens;
  if (r->usage.output_tokens > s->max_output) s->max_output = r->usage.output_tokens;
  s->t.model_seconds += r->seconds;
  record_bodies(s, r);
  return st;
}

int sess_run_request(const sess_Options *o, kclient *k, model *m, sess_UI *ui, const char *request,
                     volatile sig_atomic_t *intr) {
  sess_Session S = {.o = o, .k = k, .m = m, .ui = ui, .intr = intr, .request = request};
  sess_Session *s = &S;
  double t0 = mono_now();
  make_id(s->id, sizeof s->id);
  int status = SESS_FAIL;
  char *instructions = sess_instructions();
  json_t *tools = maction_tools(MACTION_RESPONSES, MACTION_SESSION);
  char *tools_text = json_dumps(tools, JSON_COMPACT);
  size_t fixed = tools_text ? strlen(tools_text) : 0;
  free(tools_text);
  json_decref(tools);
  s->conv = model_conv_new(instructions);
  free(instructions);
  if (!s->conv || sess_observe(s)) goto out;
  start_record(s);
  if (sess_goals_hold(s)) {
    sess_ui_note(ui, "every goal already holds: nothing to do");
    status = finish(s, SESS_OK, "goals-met", t0);
    goto out;
  }
  char *first = sess_request_text(s);
  model_conv_user(s->conv, first ? first : request);
  free(first);
  int format_errors = 0;
  for (;;) {
    if (intr && *intr) { status = finish(s, SESS_INTERRUPTED, "interrupted", t0); break; }
    if (s->t.steps >= o->budget) { status = finish(s, SESS_BUDGET, "budget", t0); break; }
    if (o->max_tokens && worst_case(s) > o->max_tokens) {
      status = finish(s, SESS_TOKENS, "max-tokens", t0);
      break;
    }
    keep_prompt_small(s, fixed);
    model_Reply r;
    model_Status st = ask_model(s, &r);
    if (st == MODEL_API_ERROR || st == MODEL_TRANSPORT || st == MODEL_INTERRUPTED || st == MODEL_EXHAUSTED) {
      if (st != MODEL_EXHAUSTED) sess_ui_note(ui, "jiti session: the model: %s", r.message ? r.message : r.code);
      json_t *ev = json_pack("{s:i, s:s, s:s, s:s?, s:o}", "step", s->t.steps + 1, "status", model_status_name(st),
                             "code", r.code, "message", r.message, "attempts", attempts_json(&r));
      sess_record(s, "session-error", ev, 0);
      if (st == MODEL_EXHAUSTED)
        status = finish(s, SESS_GAVE_UP, "exhausted", t0);
      else if (st == MODEL_INTERRUPTED)
        status = finish(s, SESS_INTERRUPTED, "interrupted", t0);
      else
        status = finish(s, SESS_FAIL, "model-error", t0);
      model_reply_free(&r);
      break;
    }
    s->t.steps++;
    char line[600], what[200];
    if (st == MODEL_INVALID) {
      format_errors++;
      count(s, "invalid");
      json_t *step = step_json(s, &r, NULL, s->gen, "invalid", NULL, 0);
      sess_ui_step(ui, step);
      sess_record(s, "session-step", step, 0);
      snprintf(line, sizeof line, "step %d: invalid response (%s): %.300s", s->t.steps, r.code, r.message);
      add_line(s, line);
      char *txt = sess_invalid_text(s, &r);
      model_conv_reply(s->conv, &r);
      model_conv_result(s->conv, txt ? txt : "not run");
      free(txt);
      model_reply_free(&r);
      if (format_errors >= o->max_format_errors) {
        status = finish(s, SESS_FORMAT, "format-errors", t0);
        break;
      }
      continue;
    }
    format_errors = 0;
    json_t *action = json_incref(r.action);
    int64_t gen = r.pinned_generation >= 0 ? r.pinned_generation : s->gen;
    if (o->confirm) {
      json_t *edited;
      char *why = NULL;
      sess_Proposal prop = {action, gen, s->t.steps, json_object_get(s->view, "pause"), r.reasoning};
      int c = sess_ui_confirm(ui, &prop, &edited, &why);
      if (c == 'e') {
        json_decref(action);
        action = edited;
      } else if (c != 'y') {
        json_t *step = step_json(s, &r, action, gen, "declined", NULL, 0);
        if (why) json_object_set_new(step, "operator_reason", bounded(why, MESSAGE_MAX));
        model_redact_json(s->m, step);
        sess_ui_step(ui, step);
        sess_record(s, "session-step", step, 0);
        snprintf(line, sizeof line, "step %d: declined by the operator%s%.300s", s->t.steps, why ? ": " : "",
                 why ? why : "");
        add_line(s, line);
        model_conv_reply(s->conv, &r);
        char *res = NULL;
        if (why && asprintf(&res, "The operator declined this action: nothing ran. The operator's reason: %s\n"
                                  "Propose another action that takes it into account.", why) < 0)
          res = NULL;
        model_conv_result(s->conv, res ? res : "The operator declined this action: nothing ran. Propose another.");
        free(res);
        free(why);
        model_reply_free(&r);
        json_decref(action);
        if (c == 'q') { status = finish(s, SESS_INTERRUPTED, "interrupted", t0); break; }
        continue;
      }
    }
    int kind = maction_kind_of(action);
    double k0 = mono_now();
    json_t *reply = sess_execute(s, action, gen);
    const char *oc = sess_outcome(action, reply);
    if (!strcmp(oc, "paused")) s->pause_ours = 1;
    int observed = reply && kind != MA_FINISH ? sess_observe(s) : 0;
    double kernel_s = mono_now() - k0;
    if (!reply || observed) {
      json_decref(reply);
      json_decref(action);
      model_reply_free(&r);
      if (intr && *intr) status = finish(s, SESS_INTERRUPTED, "interrupted", t0);
      else status = finish(s, SESS_FAIL, "kernel-lost", t0);
      break;
    }
    count(s, oc);
    json_t *step = step_json(s, &r, action, gen, oc, reply, kernel_s);
    sess_ui_step(ui, step);
    sess_record(s, "session-step", step, 0);
    maction_summary(action, what, sizeof what);
    const char *msg = json_string_value(json_object_get(reply, "message"));
    snprintf(line, sizeof line, "step %d: %s -> %s%s%.200s", s->t.steps, what, oc, msg ? ": " : "", msg ? msg : "");
    add_line(s, line);
    if (kind == MA_FINISH) {
      int ok = !o->task.ngoals || sess_goals_hold(s);
      status = finish(s, ok ? SESS_OK : SESS_GAVE_UP, ok ? "finished" : "gave-up", t0);
    } else if (sess_goals_hold(s) && !s->paused) {
      status = finish(s, SESS_OK, "goals-met", t0);
    } else {
      char *txt = sess_result_text(s, action, reply, oc);
      model_conv_reply(s->conv, &r);
      model_conv_result(s->conv, txt ? txt : oc);
      free(txt);
      status = -1;
    }
    json_decref(reply);
    json_decref(action);
    model_reply_free(&r);
    if (status >= 0) break;
  }
out:
  if (!s->view) fprintf(stderr, "jiti session: could not observe the world of %s\n", o->store);
  model_conv_free(s->conv);
  json_decref(s->view);
  for (int i = 0; i < s->nlines; i++) free(s->lines[i]);
  free(s->lines);
  return status;
}
