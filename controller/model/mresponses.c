/*
** mresponses.c — the OpenAI Responses API client (model.h).
**
** Request: POST {base}/responses with the instructions, the conversation
** as input items, store false (the whole conversation is sent each turn,
** so nothing is kept on the server and compatible servers need no state),
** and either the strict function tools (tool_choice "required",
** parallel_tool_calls false) or a strict json_schema text format.
**
** Streaming: server-sent events; the text and argument deltas feed the
** progress display; output_item.done collects the items; the action is
** taken only from the terminal event (response.completed, or the
** response.incomplete / response.failed that make it an error).  An
** "error" event, or an end of stream without a terminal event, is an error.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

/* ------------------------------------------------------------ request */

static json_t *input_items(const model_Conv *c) {
  json_t *in = json_array();
  for (size_t i = 0; i < c->n; i++) {
    const model_Msg *m = &c->v[i];
    json_t *it = NULL;
    switch (m->role) {
    case MSG_USER:
      it = json_pack("{s:s, s:s, s:s}", "type", "message", "role", "user", "content", m->text);
      break;
    case MSG_TEXT:
      it = json_pack("{s:s, s:s, s:s}", "type", "message", "role", "assistant", "content", m->text);
      break;
    case MSG_CALL:
      /* without the item id: the id would tie it to a stored response
         (and to its reasoning item), which store:false does not keep */
      it = json_pack("{s:s, s:s, s:s, s:s}", "type", "function_call", "call_id", m->call_id ? m->call_id : "",
                     "name", m->name ? m->name : "", "arguments", m->text);
      break;
    case MSG_OUTPUT:
      it = json_pack("{s:s, s:s, s:s}", "type", "function_call_output", "call_id", m->call_id ? m->call_id : "",
                     "output", m->text);
      break;
    }
    json_array_append_new(in, it);
  }
  return in;
}

static json_t *request_body(model *m, const model_Conv *c) {
  json_t *b = json_pack("{s:s, s:s, s:o, s:b, s:b}", "model", m->name, "instructions", c->instructions, "input",
                        input_items(c), "store", 0, "stream", m->opt.stream);
  if (m->opt.mode == MODEL_MODE_STRUCTURED) {
    json_object_set_new(b, "text", json_pack("{s:{s:s, s:s, s:o, s:b}}", "format", "type", "json_schema", "name",
                                             MACTION_SCHEMA_NAME, "schema", maction_output_schema(model_actions(m)),
                                             "strict", 1));
  } else {
    json_object_set_new(b, "tools", maction_tools(MACTION_RESPONSES, model_actions(m)));
    json_object_set_new(b, "tool_choice", json_string("required"));
    json_object_set_new(b, "parallel_tool_calls", json_false());
  }
  if (m->opt.max_output_tokens > 0)
    json_object_set_new(b, "max_output_tokens", json_integer(m->opt.max_output_tokens));
  if (m->opt.reasoning_effort)
    json_object_set_new(b, "reasoning", json_pack("{s:s}", "effort", m->opt.reasoning_effort));
  return b;
}

/* ------------------------------------------------------------ response */

/* Gather calls and text from the output items; refusals fail r. */
static void read_output(model *m, model_Reply *r, json_t *output) {
  size_t i;
  json_t *it;
  json_array_foreach(output, i, it) {
    const char *type = json_string_value(json_object_get(it, "type"));
    if (!type) continue;
    if (!strcmp(type, "reasoning")) {
      r->nreasoning++;
      size_t j;
      json_t *part;
      json_array_foreach(json_object_get(it, "summary"), j, part) {
        const char *t = json_string_value(json_object_get(part, "text"));
        if (!t || !*t) continue;
        char *joined = NULL;
        if (asprintf(&joined, "%s%s%s", r->reasoning ? r->reasoning : "", r->reasoning ? "\n" : "", t) < 0) continue;
        free(r->reasoning);
        r->reasoning = joined;
      }
    } else if (!strcmp(type, "function_call")) {
      model_add_call(r, json_string_value(json_object_get(it, "call_id")),
                     json_string_value(json_object_get(it, "name")),
                     json_string_value(json_object_get(it, "arguments")));
    } else if (!strcmp(type, "message")) {
      size_t j;
      json_t *part;
      json_array_foreach(json_object_get(it, "content"), j, part) {
        const char *pt = json_string_value(json_object_get(part, "type"));
        if (pt && !strcmp(pt, "output_text")) {
          json_t *t = json_object_get(part, "text");
          if (json_is_string(t)) model_add_text(r, json_string_value(t), json_string_length(t));
        } else if (pt && !strcmp(pt, "refusal")) {
          const char *why = json_string_value(json_object_get(part, "refusal"));
          free(r->text);
          r->text = strdup(why ? why : "");
          model_fail(m, r, MODEL_INVALID, "refusal", "the model refused: %s", why ? why : "(no reason given)");
        }
      }
    }
  }
}

/* Decide from a final response object (non-streamed body, or the
** response of a terminal event); collected: output items from
** output_item.done, used when the response lists none. */
static void read_response(model *m, model_Reply *r, json_t *resp, json_t *collected) {
  const char *id = json_string_value(json_object_get(resp, "id"));
  const char *served = json_string_value(json_object_get(resp, "model"));
  if (id) r->response_id = strdup(id);
  if (served) r->served_by = strdup(served);
  model_usage_from(json_object_get(resp, "usage"), &r->usage);
  const char *status = json_string_value(json_object_get(resp, "status"));
  json_t *err = json_object_get(resp, "error");
  if (json_is_object(err) || (status && !strcmp(status, "failed"))) {
    const char *msg = json_string_value(json_object_get(err, "message"));
    const char *code = json_string_value(json_object_get(err, "code"));
    model_fail(m, r, MODEL_INVALID, "failed", "the response failed%s%s%s: %s", code ? " (" : "", code ? code : "",
               code ? ")" : "", msg ? msg : "no reason given");
    return;
  }
  if (status && !strcmp(status, "incomplete")) {
    const char *why = json_string_value(json_object_get(json_object_get(resp, "incomplete_details"), "reason"));
    model_fail(m, r, MODEL_INVALID, "incomplete", "the response is incomplete (%s)%s", why ? why : "no reason given",
               why && !strcmp(why, "max_output_tokens") ? ": it ran out of output tokens; send a shorter action" : "");
    return;
  }
  if (status && strcmp(status, "completed")) {
    model_fail(m, r, MODEL_INVALID, "failed", "the response ended with status \"%s\"", status);
    return;
  }
  json_t *output = json_object_get(resp, "output");
  if (!json_is_array(output) || (json_array_size(output) == 0 && collected)) output = collected;
  r->status = MODEL_OK;
  read_output(m, r, output);
  if (r->status != MODEL_OK) return;   /* a refusal */
  model_decide(m, r);
}

/* ------------------------------------------------------------- streaming */

typedef struct Stream {
  model *m;
  json_t *final;          /* the terminal event's response */
  json_t *items;          /* from output_item.done */
  json_t *error_event;    /* an "error" event */
  size_t chars;           /* streamed text and argument characters */
} Stream;

static void on_event(void *ud, const char *event, json_t *ev) {
  Stream *s = ud;
  const char *type = json_string_value(json_object_get(ev, "type"));
  if (!type) type = event;
  if (!strcmp(type, "response.output_text.delta") || !strcmp(type, "response.function_call_arguments.delta") ||
      !strcmp(type, "response.refusal.delta")) {
    json_t *d = json_object_get(ev, "delta");
    if (json_is_string(d)) {
      s->chars += json_string_length(d);
      model_progress(s->m, s->chars);
    }
  } else if (!strcmp(type, "response.output_item.done")) {
    json_t *item = json_object_get(ev, "item");
    if (json_is_object(item)) json_array_append(s->items, item);
  } else if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
             !strcmp(type, "response.failed")) {
    json_t *resp = json_object_get(ev, "response");
    if (json_is_object(resp) && !s->final) s->final = json_incref(resp);
  } else if (!strcmp(type, "error")) {
    if (!s->error_event) s->error_event = json_incref(ev);
  }
}

static model_Status next_streamed(model *m, const model_Conv *c, model_Reply *r) {
  Stream s = {.m = m, .items = json_array()};
  model_Stream st;
  if (model_stream(m, "/responses", request_body(m, c), on_event, &s, r, &st) == 0) {
    if (s.final) {
      char *dump = json_dumps(s.final, JSON_COMPACT);
      model_record_response(m, r, dump, dump ? strlen(dump) : 0);
      free(dump);
    } else {
      model_record_response(m, r, st.raw.p, st.raw.len);
    }
    if (s.error_event) {
      const char *msg = json_string_value(json_object_get(s.error_event, "message"));
      const char *code = json_string_value(json_object_get(s.error_event, "code"));
      model_fail(m, r, MODEL_INVALID, "error-event", "the server reported an error%s%s%s: %s", code ? " (" : "",
                 code ? code : "", code ? ")" : "", msg ? msg : "no message");
    } else if (s.final && !st.bad_event) {
      read_response(m, r, s.final, s.items);
    } else {
      model_stream_fail(m, r, &st, "the response completed");
    }
  }
  model_stream_free(&st);
  json_decref(s.final);
  json_decref(s.items);
  json_decref(s.error_event);
  return r->status;
}

static void read_plain(model *m, model_Reply *r, json_t *obj) { read_response(m, r, obj, NULL); }

static model_Status responses_next(model *m, const model_Conv *c, model_Reply *r) {
  return m->opt.stream ? next_streamed(m, c, r) : model_post_json(m, "/responses", request_body(m, c), r, read_plain);
}

const model_Class model_responses_class = {"openai", responses_next, NULL};
