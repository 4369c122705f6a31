/*
** mchat.c — the Chat Completions client, for servers that speak
** /chat/completions but not Responses (model.h).
**
** Request: POST {base}/chat/completions with the instructions as the
** system message, the conversation as messages, and either the strict
** function tools (tool_choice "required", parallel_tool_calls false) or
** response_format {"type":"json_schema","json_schema":{name, schema,
** strict}}.  Streaming: "data:" chunks of deltas ending with "[DONE]";
** tool call fragments are joined by their index; usage comes in the last
** chunk (stream_options.include_usage).  finish_reason "length" and
** "content_filter" are errors; so is a refusal.
*/
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

/* ------------------------------------------------------------ request */

static json_t *messages(const model_Conv *c) {
  json_t *ms = json_array();
  json_array_append_new(ms, json_pack("{s:s, s:s}", "role", "system", "content", c->instructions));
  for (size_t i = 0; i < c->n; i++) {
    const model_Msg *m = &c->v[i];
    switch (m->role) {
    case MSG_USER:
      json_array_append_new(ms, json_pack("{s:s, s:s}", "role", "user", "content", m->text));
      break;
    case MSG_TEXT:
      json_array_append_new(ms, json_pack("{s:s, s:s}", "role", "assistant", "content", m->text));
      break;
    case MSG_CALL: {
      /* consecutive calls are one assistant message with several tool_calls */
      json_t *calls = json_array();
      for (; i < c->n && c->v[i].role == MSG_CALL; i++)
        json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", c->v[i].call_id ? c->v[i].call_id : "",
                                               "type", "function", "function", "name",
                                               c->v[i].name ? c->v[i].name : "", "arguments", c->v[i].text));
      i--;
      json_array_append_new(ms, json_pack("{s:s, s:n, s:o}", "role", "assistant", "content", "tool_calls", calls));
      break;
    }
    case MSG_OUTPUT:
      json_array_append_new(ms, json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
                                          m->call_id ? m->call_id : "", "content", m->text));
      break;
    }
  }
  return ms;
}

static json_t *request_body(model *m, const model_Conv *c) {
  json_t *b = json_pack("{s:s, s:o, s:b}", "model", m->name, "messages", messages(c), "stream", m->opt.stream);
  if (m->opt.stream) json_object_set_new(b, "stream_options", json_pack("{s:b}", "include_usage", 1));
  if (m->opt.mode == MODEL_MODE_STRUCTURED) {
    json_object_set_new(b, "response_format",
                        json_pack("{s:s, s:{s:s, s:o, s:b}}", "type", "json_schema", "json_schema", "name",
                                  MACTION_SCHEMA_NAME, "schema", maction_output_schema(model_actions(m)),
                                  "strict", 1));
  } else {
    json_object_set_new(b, "tools", maction_tools(MACTION_CHAT, model_actions(m)));
    json_object_set_new(b, "tool_choice", json_string("required"));
    json_object_set_new(b, "parallel_tool_calls", json_false());
  }
  if (m->opt.max_output_tokens > 0) json_object_set_new(b, "max_tokens", json_integer(m->opt.max_output_tokens));
  return b;
}

/* ------------------------------------------------------------ response */

static void finish(model *m, model_Reply *r, const char *finish_reason, const char *refusal) {
  if (refusal && *refusal) {
    model_fail(m, r, MODEL_INVALID, "refusal", "the model refused: %s", refusal);
    return;
  }
  if (finish_reason && !strcmp(finish_reason, "length")) {
    model_fail(m, r, MODEL_INVALID, "length", "the response was cut at the output token limit (finish_reason "
               "\"length\"); send a shorter action");
    return;
  }
  if (finish_reason && !strcmp(finish_reason, "content_filter")) {
    model_fail(m, r, MODEL_INVALID, "content-filter", "the response was withheld by the content filter");
    return;
  }
  model_decide(m, r);
}

static void read_completion(model *m, model_Reply *r, json_t *j) {
  const char *id = json_string_value(json_object_get(j, "id"));
  const char *served = json_string_value(json_object_get(j, "model"));
  if (id) r->response_id = strdup(id);
  if (served) r->served_by = strdup(served);
  model_usage_from(json_object_get(j, "usage"), &r->usage);
  json_t *err = json_object_get(j, "error");
  if (err && !json_is_null(err)) {
    const char *msg = json_is_object(err) ? json_string_value(json_object_get(err, "message")) : json_string_value(err);
    model_fail(m, r, MODEL_INVALID, "error-event", "the server reported an error: %s", msg ? msg : "no message");
    return;
  }
  json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
  json_t *msg = json_object_get(choice, "message");
  if (!json_is_object(msg)) {
    model_fail(m, r, MODEL_INVALID, "no-action", "the response has no message (choices[0].message)");
    return;
  }
  json_t *content = json_object_get(msg, "content");
  if (json_is_string(content)) model_add_text(r, json_string_value(content), json_string_length(content));
  size_t i;
  json_t *tc;
  json_array_foreach(json_object_get(msg, "tool_calls"), i, tc) {
    json_t *fn = json_object_get(tc, "function");
    model_add_call(r, json_string_value(json_object_get(tc, "id")), json_string_value(json_object_get(fn, "name")),
                   json_string_value(json_object_get(fn, "arguments")));
  }
  const char *refusal = json_string_value(json_object_get(msg, "refusal"));
  if (refusal && *refusal && !r->text) r->text = strdup(refusal);
  finish(m, r, json_string_value(json_object_get(choice, "finish_reason")), refusal);
}

/* ------------------------------------------------------------- streaming */

typedef struct Frag {   /* a tool call assembled from deltas */
  char *id, *name, *args;
} Frag;

typedef struct Stream {
  model *m;
  model_Reply *r;
  Frag *frags;
  int nfrags;
  char *refusal;
  char *finish_reason;
  json_t *error;
  size_t chars;
} Stream;

static void cat(char **dst, const char *s, size_t n) {
  size_t old = *dst ? strlen(*dst) : 0;
  char *p = realloc(*dst, old + n + 1);
  if (!p) return;
  memcpy(p + old, s, n);
  p[old + n] = 0;
  *dst = p;
}

static void tool_delta(Stream *s, json_t *tc) {
  json_t *ix = json_object_get(tc, "index");
  int idx = json_is_integer(ix) ? (int)json_integer_value(ix) : s->nfrags ? s->nfrags - 1 : 0;
  if (idx < 0 || idx > 64) return;
  if (idx >= s->nfrags) {
    Frag *f = realloc(s->frags, (size_t)(idx + 1) * sizeof *f);
    if (!f) return;
    memset(f + s->nfrags, 0, (size_t)(idx + 1 - s->nfrags) * sizeof *f);
    s->frags = f;
    s->nfrags = idx + 1;
  }
  Frag *f = &s->frags[idx];
  json_t *fn = json_object_get(tc, "function");
  json_t *id = json_object_get(tc, "id"), *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
  if (json_is_string(id) && !f->id) f->id = strdup(json_string_value(id));
  if (json_is_string(name)) cat(&f->name, json_string_value(name), json_string_length(name));
  if (json_is_string(args)) {
    cat(&f->args, json_string_value(args), json_string_length(args));
    s->chars += json_string_length(args);
    model_progress(s->m, s->chars);
  }
}

static void on_event(void *ud, const char *event, json_t *ch) {
  Stream *s = ud;
  (void)event;
  const char *id = json_string_value(json_object_get(ch, "id"));
  const char *served = json_string_value(json_object_get(ch, "model"));
  if (id && !s->r->response_id) s->r->response_id = strdup(id);
  if (served && !s->r->served_by) s->r->served_by = strdup(served);
  json_t *u = json_object_get(ch, "usage");
  if (json_is_object(u)) model_usage_from(u, &s->r->usage);
  json_t *err = json_object_get(ch, "error");
  if (err && !json_is_null(err) && !s->error) s->error = json_incref(err);
  json_t *choice = json_array_get(json_object_get(ch, "choices"), 0);
  json_t *delta = json_object_get(choice, "delta");
  json_t *content = json_object_get(delta, "content");
  if (json_is_string(content) && json_string_length(content)) {
    model_add_text(s->r, json_string_value(content), json_string_length(content));
    s->chars += json_string_length(content);
    model_progress(s->m, s->chars);
  }
  json_t *refusal = json_object_get(delta, "refusal");
  if (json_is_string(refusal)) cat(&s->refusal, json_string_value(refusal), json_string_length(refusal));
  size_t i;
  json_t *tc;
  json_array_foreach(json_object_get(delta, "tool_calls"), i, tc) tool_delta(s, tc);
  const char *fr = json_string_value(json_object_get(choice, "finish_reason"));
  if (fr) {
    free(s->finish_reason);
    s->finish_reason = strdup(fr);
  }
}

static model_Status next_streamed(model *m, const model_Conv *c, model_Reply *r) {
  Stream s = {.m = m, .r = r};
  model_Stream st;
  if (model_stream(m, "/chat/completions", request_body(m, c), on_event, &s, r, &st) == 0) {
    model_record_response(m, r, st.raw.p, st.raw.len);
    for (int i = 0; i < s.nfrags; i++)
      if (s.frags[i].name || s.frags[i].args) model_add_call(r, s.frags[i].id, s.frags[i].name, s.frags[i].args);
    if (s.refusal && *s.refusal && !r->text) r->text = strdup(s.refusal);
    if (s.error) {
      const char *msg = json_is_object(s.error) ? json_string_value(json_object_get(s.error, "message"))
                                                : json_string_value(s.error);
      model_fail(m, r, MODEL_INVALID, "error-event", "the server reported an error: %s", msg ? msg : "no message");
    } else if (st.bad_event || (!st.done && !s.finish_reason)) {
      model_stream_fail(m, r, &st, "[DONE]");
    } else {
      finish(m, r, s.finish_reason, s.refusal);
    }
  }
  model_stream_free(&st);
  for (int i = 0; i < s.nfrags; i++) {
    free(s.frags[i].id);
    free(s.frags[i].name);
    free(s.frags[i].args);
  }
  free(s.frags);
  free(s.refusal);
  free(s.finish_reason);
  json_decref(s.error);
  return r->status;
}

static model_Status chat_next(model *m, const model_Conv *c, model_Reply *r) {
  return m->opt.stream ? next_streamed(m, c, r)
                       : model_post_json(m, "/chat/completions", request_body(m, c), r, read_completion);
}

const model_Class model_chat_class = {"chat", chat_next, NULL};
