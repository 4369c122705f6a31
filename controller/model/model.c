/*
** model.c — opening model clients, one turn of any of them, and what the
** three clients share: posting with retries, recording bodies, deciding
** whether a reply holds one valid action (model.h, model_int.h).
*/
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mcurl.h"
#include "model_int.h"
#include "msecret.h"

const char *model_status_name(model_Status s) {
  static const char *const names[] = {"ok", "invalid", "api-error", "transport", "exhausted", "interrupted"};
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

void model_options_init(model_Options *o) {
  memset(o, 0, sizeof *o);
  o->mode = MODEL_MODE_TOOLS;
  o->max_retries = -1;
}

void model_usage_add(model_Usage *a, const model_Usage *b) {
  a->input_tokens += b->input_tokens;
  a->output_tokens += b->output_tokens;
  a->reasoning_tokens += b->reasoning_tokens;
  a->cached_tokens += b->cached_tokens;
  a->total_tokens += b->total_tokens;
}

void model_reply_free(model_Reply *r) {
  json_decref(r->action);
  free(r->message);
  free(r->response_id);
  free(r->request_id);
  free(r->served_by);
  free(r->request_body);
  free(r->response_body);
  for (int i = 0; i < r->ncalls; i++) {
    free(r->calls[i].call_id);
    free(r->calls[i].name);
    free(r->calls[i].arguments);
  }
  free(r->calls);
  free(r->text);
  free(r->reasoning);
  memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------- opening */

static char *env_or(const char *given, const char *var, const char *dflt) {
  const char *v = given;
  if (!v || !*v) v = getenv(var);
  if (!v || !*v) v = dflt;
  return v ? strdup(v) : NULL;
}

static model *open_http(const model_Class *cls, const model_Options *o, char *err, size_t errlen) {
  char *key = NULL;
  int k = msecret_load(&key, err, errlen);
  if (k < 0) return NULL;
  if (k == 1 && cls == &model_responses_class) {
    snprintf(err, errlen, "no API key: set OPENAI_API_KEY, or OPENAI_API_KEY_FILE to a file only you can read "
                          "(or use --scripted FILE to run offline)");
    return NULL;
  }
  model *m = calloc(1, sizeof *m);
  if (!m) {
    msecret_wipe(key);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  m->cls = cls;
  m->opt = *o;
  m->key = key;
  m->base_url = env_or(o->base_url, "OPENAI_BASE_URL", MODEL_DEFAULT_BASE_URL);
  m->name = env_or(o->model, "OPENAI_MODEL", MODEL_DEFAULT_NAME);
  m->org = env_or(NULL, "OPENAI_ORG_ID", NULL);
  m->project = env_or(NULL, "OPENAI_PROJECT_ID", NULL);
  m->http = mhttp_new();
  if (!m->base_url || !m->name || !m->http) {
    snprintf(err, errlen, "%s", m->base_url && m->name && *mcurl_error() ? mcurl_error() : "out of memory");
    model_close(m);
    return NULL;
  }
  /* {base}/responses: a trailing slash of the base is dropped once */
  size_t bl = strlen(m->base_url);
  if (bl && m->base_url[bl - 1] == '/') m->base_url[bl - 1] = 0;
  if (strncmp(m->base_url, "http://", 7) && strncmp(m->base_url, "https://", 8)) {
    snprintf(err, errlen, "the base URL must start with http:// or https:// (OPENAI_BASE_URL)");
    model_close(m);
    return NULL;
  }
  if (strchr(m->base_url, '@')) {
    snprintf(err, errlen, "the base URL must not carry credentials (put the key in OPENAI_API_KEY)");
    model_close(m);
    return NULL;
  }
  mhttp_set_timeouts(m->http, o->connect_timeout_ms, o->request_timeout_ms);
  mhttp_set_interrupt(m->http, o->intr);
  snprintf(m->describe, sizeof m->describe, "%s %s (%s%s)", cls->kind, m->name,
           o->mode == MODEL_MODE_STRUCTURED ? "structured output" : "tools", o->stream ? ", streaming" : "");
  return m;
}

model *model_scripted_open(const char *path, const model_Options *o, char *err, size_t errlen);

model *model_open(const char *spec, const model_Options *o, char *err, size_t errlen) {
  model_Options dflt;
  if (!o) {
    model_options_init(&dflt);
    o = &dflt;
  }
  if (!spec || !strcmp(spec, "openai")) return open_http(&model_responses_class, o, err, errlen);
  if (!strcmp(spec, "chat")) return open_http(&model_chat_class, o, err, errlen);
  if (!strncmp(spec, "scripted:", 9)) return model_scripted_open(spec + 9, o, err, errlen);
  snprintf(err, errlen, "unknown model client '%.64s' (openai, chat or scripted:FILE)", spec);
  return NULL;
}

void model_close(model *m) {
  if (!m) return;
  if (m->cls && m->cls->close) m->cls->close(m);
  mhttp_free(m->http);
  msecret_wipe(m->key);
  free(m->base_url);
  free(m->name);
  free(m->org);
  free(m->project);
  free(m);
}

const char *model_describe(const model *m) { return m->describe; }
const char *model_kind(const model *m) { return m->cls->kind; }
const char *model_name(const model *m) { return m->name; }

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

char *model_redact(const model *m, const char *s, size_t len, size_t *outlen) {
  return msecret_redact(s, len, m ? m->key : NULL, outlen);
}

int model_redact_json(const model *m, json_t *j) { return msecret_redact_json(j, m ? m->key : NULL); }

/* *p (a malloc'd string or NULL) redacted in place. */
static void redact_string(const model *m, char **p) {
  if (!*p) return;
  char *r = model_redact(m, *p, strlen(*p), NULL);
  free(*p);
  *p = r ? r : strdup("[redacted]");   /* out of memory: nothing of it is kept */
}

/* Nothing a reply holds may carry the key: a server can echo it in the
** action it proposes, its text, its ids. */
static void redact_reply(const model *m, model_Reply *r) {
  if (r->action && model_redact_json(m, r->action) != 0) {
    json_decref(r->action);
    r->action = NULL;
    r->status = MODEL_INVALID;
    r->code = "invalid-action";
  }
  for (int i = 0; i < r->ncalls; i++) {
    redact_string(m, &r->calls[i].call_id);
    redact_string(m, &r->calls[i].name);
    redact_string(m, &r->calls[i].arguments);
  }
  redact_string(m, &r->text);
  redact_string(m, &r->message);
  redact_string(m, &r->response_id);
  redact_string(m, &r->request_id);
  redact_string(m, &r->served_by);
}

model_Status model_next(model *m, const model_Conv *c, model_Reply *r) {
  memset(r, 0, sizeof *r);
  r->pinned_generation = -1;
  double t0 = mono();
  model_Status st = m->cls->next(m, c, r);
  r->seconds = mono() - t0;
  if (!r->code) r->code = st == MODEL_OK ? "ok" : model_status_name(st);
  r->status = st;
  redact_reply(m, r);
  if (r->status != st && !r->message) r->message = strdup("out of memory redacting the model's reply");
  return r->status;
}

/* ------------------------------------------------------------- helpers */

void model_fail(model *m, model_Reply *r, model_Status st, const char *code, const char *fmt, ...) {
  char *raw = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&raw, fmt, ap);
  va_end(ap);
  free(r->message);
  r->message = n >= 0 ? msecret_redact(raw, (size_t)n, m->key, NULL) : NULL;
  free(raw);
  json_decref(r->action);
  r->action = NULL;
  r->status = st;
  r->code = code;
}

int64_t model_int(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

void model_usage_from(json_t *u, model_Usage *out) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(u)) return;
  if (json_object_get(u, "input_tokens") || json_object_get(u, "output_tokens")) {
    out->input_tokens = model_int(u, "input_tokens");
    out->output_tokens = model_int(u, "output_tokens");
    out->cached_tokens = model_int(json_object_get(u, "input_tokens_details"), "cached_tokens");
    out->reasoning_tokens = model_int(json_object_get(u, "output_tokens_details"), "reasoning_tokens");
  } else {
    out->input_tokens = model_int(u, "prompt_tokens");
    out->output_tokens = model_int(u, "completion_tokens");
    out->cached_tokens = model_int(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
    out->reasoning_tokens = model_int(json_object_get(u, "completion_tokens_details"), "reasoning_tokens");
  }
  out->total_tokens = model_int(u, "total_tokens");
  if (!out->total_tokens) out->total_tokens = out->input_tokens + out->output_tokens;
}

void model_raw_add(model_Raw *b, const char *data, size_t len) {
  if (b->len + len + 1 > b->cap) {
    if (b->len + len > ((size_t)16 << 20)) return;
    size_t c = b->cap ? b->cap * 2 : 8192;
    while (c < b->len + len + 1) c *= 2;
    char *p = realloc(b->p, c);
    if (!p) return;
    b->p = p;
    b->cap = c;
  }
  memcpy(b->p + b->len, data, len);
  b->len += len;
  b->p[b->len] = 0;
}

void model_progress(model *m, size_t chars) {
  if (m->opt.on_progress) m->opt.on_progress(m->opt.progress_ud, chars);
}

/* A bounded, redacted copy: at most max bytes of s, cut on a UTF-8
** boundary, with a note of how much was left out. */
static char *bounded(model *m, const char *s, size_t len, size_t max) {
  size_t n = len;
  if (n > max) {
    n = max;
    while (n && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
  }
  char *red = msecret_redact(s, n, m->key, &n);
  if (!red || len <= max) return red;
  char *out = NULL;
  if (asprintf(&out, "%s...[%zu more bytes]", red, len - max) < 0) out = NULL;
  free(red);
  return out;
}

static size_t max_recorded(model *m) {
  return m->opt.max_recorded_body ? m->opt.max_recorded_body : MODEL_DEFAULT_RECORDED_BODY;
}

void model_record_response(model *m, model_Reply *r, const char *body, size_t len) {
  free(r->response_body);
  r->response_body = bounded(m, body ? body : "", body ? len : 0, max_recorded(m));
  r->response_bytes = len;
}

int model_add_call(model_Reply *r, const char *call_id, const char *name, const char *arguments) {
  model_Call *c = realloc(r->calls, (size_t)(r->ncalls + 1) * sizeof *c);
  if (!c) return -1;
  r->calls = c;
  c += r->ncalls;
  c->call_id = strdup(call_id ? call_id : "");
  c->name = strdup(name ? name : "");
  c->arguments = strdup(arguments ? arguments : "");
  r->ncalls++;
  return c->call_id && c->name && c->arguments ? 0 : -1;
}

int model_add_text(model_Reply *r, const char *text, size_t len) {
  size_t old = r->text ? strlen(r->text) : 0;
  char *t = realloc(r->text, old + len + 1);
  if (!t) return -1;
  memcpy(t + old, text, len);
  t[old + len] = 0;
  r->text = t;
  return 0;
}

/* ---------------------------------------------------------------- posting */

/* The hint for an HTTP status that is not retried (or no longer). */
static const char *status_hint(long st) {
  switch (st) {
  case 400: return "the server refused the request: an unsupported parameter, or a model without tools or structured output?";
  case 401: return "the API key was refused: check OPENAI_API_KEY or OPENAI_API_KEY_FILE";
  case 403: return "permission denied: the key's organisation or project cannot use this model or endpoint";
  case 404: return "not found: check the model name (--model, OPENAI_MODEL) and the base URL (OPENAI_BASE_URL)";
  case 408: return "the server timed out waiting for the request";
  case 409: return "the server reported a conflict";
  case 422: return "the server could not process the request: an unsupported parameter?";
  case 429: return "rate limited, or out of quota";
  default: return st >= 500 ? "the server failed" : "the server refused the request";
  }
}

static const char *http_code(long st) {
  static const struct { long st; const char *code; } codes[] = {
    {400, "http-400"}, {401, "http-401"}, {403, "http-403"}, {404, "http-404"}, {408, "http-408"},
    {409, "http-409"}, {422, "http-422"}, {429, "http-429"}, {500, "http-500"}, {502, "http-502"},
    {503, "http-503"}, {504, "http-504"}};
  for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
    if (codes[i].st == st) return codes[i].code;
  return st >= 500 ? "http-5xx" : "http-4xx";
}

/* The server's error.message (or message, or error as a string) from an
** error body; NULL when there is none. */
static char *server_message(const char *body) {
  json_t *j = json_loads(body ? body : "", 0, NULL);
  const char *msg = NULL;
  json_t *e = json_object_get(j, "error");
  if (json_is_object(e)) msg = json_string_value(json_object_get(e, "message"));
  else if (json_is_string(e)) msg = json_string_value(e);
  if (!msg) msg = json_string_value(json_object_get(j, "message"));
  char *out = msg ? strdup(msg) : NULL;
  json_decref(j);
  return out;
}

/* The request as it is kept for the record: still JSON, without what is
** the same in every request (the instructions, the tools, the schema:
** named with their sizes instead), and when still too long without the
** conversation's oldest items (their number is said), so that the latest
** turns, which differ, are what is kept. */
static char *request_record(model *m, json_t *body, size_t max) {
  /* shallow copies: only what is replaced is copied, the conversation's
     items are shared with the request */
  json_t *c = json_copy(body);
  char note[96];
  const char *ins = json_string_value(json_object_get(c, "instructions"));
  if (ins) {
    snprintf(note, sizeof note, "[the instructions: %zu characters]", strlen(ins));
    json_object_set_new(c, "instructions", json_string(note));
  }
  json_t *msgs = json_object_get(c, "messages");
  if (msgs) json_object_set_new(c, "messages", msgs = json_copy(msgs));
  json_t *first = json_array_get(msgs, 0);
  const char *sys = json_string_value(json_object_get(first, "content"));
  if (sys && !strcmp(json_string_value(json_object_get(first, "role")), "system")) {
    snprintf(note, sizeof note, "[the instructions: %zu characters]", strlen(sys));
    json_array_set_new(msgs, 0, json_pack("{s:s, s:s}", "role", "system", "content", note));
  }
  if (json_object_get(c, "tools")) {
    snprintf(note, sizeof note, "[%zu strict function tools, one per action]", json_array_size(json_object_get(c, "tools")));
    json_object_set_new(c, "tools", json_string(note));
  }
  const char *outer = json_object_get(c, "text") ? "text" : "response_format";
  const char *inner = json_object_get(c, "text") ? "format" : "json_schema";
  json_t *o = json_object_get(c, outer), *fmt = json_object_get(o, inner);
  if (json_object_get(fmt, "schema")) {
    json_object_set_new(c, outer, o = json_copy(o));
    json_object_set_new(o, inner, fmt = json_copy(fmt));
    json_object_set_new(fmt, "schema", json_string("[the action schema]"));
  }
  json_t *conv = msgs;
  if (!conv && json_object_get(c, "input")) json_object_set_new(c, "input", conv = json_copy(json_object_get(c, "input")));
  size_t keep_first = msgs ? 1 : 0, n = json_array_size(conv);
  if (n > keep_first + 1) {
    /* the newest items that fit, each measured once (never the whole
       conversation twice: this runs every turn) */
    json_t *all = json_incref(conv);
    json_t *kept = json_array();
    for (size_t i = 0; i < keep_first; i++) json_array_append(kept, json_array_get(all, i));
    json_object_set(c, msgs ? "messages" : "input", kept);
    char *head = json_dumps(c, JSON_COMPACT);
    size_t used = head ? strlen(head) + 32 : max, first = n;
    free(head);
    while (first > keep_first) {
      char *d = json_dumps(json_array_get(all, first - 1), JSON_COMPACT);
      size_t len = d ? strlen(d) + 1 : max;
      free(d);
      if (used + len > max && first < n) break;   /* the newest one stays, whatever its size */
      used += len;
      first--;
    }
    for (size_t i = first; i < n; i++) json_array_append(kept, json_array_get(all, i));
    if (first > keep_first) json_object_set_new(c, "omitted_items", json_integer((json_int_t)(first - keep_first)));
    json_decref(kept);
    json_decref(all);
  }
  char *text = json_dumps(c, JSON_COMPACT);
  json_decref(c);
  char *out = text ? bounded(m, text, strlen(text), max) : NULL;
  free(text);
  return out;
}

int model_post(model *m, const char *path, json_t *body, mhttp_sink sink, void *ud, model_Reply *r,
               mhttp_Response *resp) {
  memset(resp, 0, sizeof *resp);
  char *text = json_dumps(body, JSON_COMPACT);
  free(r->request_body);
  r->request_body = request_record(m, body, max_recorded(m));
  json_decref(body);
  if (!text) {
    model_fail(m, r, MODEL_TRANSPORT, "transport", "out of memory building the request");
    return -1;
  }
  size_t len = strlen(text);
  r->request_bytes = len;
  char *url = NULL, *auth = NULL, *org = NULL, *proj = NULL;
  const char *headers[6];
  int nh = 0;
  if (asprintf(&url, "%s%s", m->base_url, path) < 0) url = NULL;
  headers[nh++] = sink ? "Accept: text/event-stream" : "Accept: application/json";
  if (m->key && asprintf(&auth, "Authorization: Bearer %s", m->key) >= 0) headers[nh++] = auth;
  if (m->org && asprintf(&org, "OpenAI-Organization: %s", m->org) >= 0) headers[nh++] = org;
  if (m->project && asprintf(&proj, "OpenAI-Project: %s", m->project) >= 0) headers[nh++] = proj;
  headers[nh] = NULL;
  mretry_Policy pol = {.max_retries = m->opt.max_retries, .intr = m->opt.intr, .on_retry = m->opt.on_retry,
                       .ud = m->opt.progress_ud};
  mhttp_Error e = url ? mretry_post(m->http, &pol, url, headers, text, len, sink, ud, resp, r->attempts,
                                    (int)(sizeof r->attempts / sizeof *r->attempts), &r->nattempts)
                      : MHTTP_ENOMEM;
  if (auth) {
    explicit_bzero(auth, strlen(auth));
    free(auth);
  }
  free(url);
  free(org);
  free(proj);
  free(text);
  r->http_status = resp->status;
  if (resp->request_id[0]) r->request_id = strdup(resp->request_id);
  if (resp->status >= 200 && resp->status < 300 && (e == MHTTP_OK || resp->streamed)) return 0;
  if (e == MHTTP_OK) {   /* an HTTP error status: not retryable, or retries spent */
    model_record_response(m, r, resp->body, resp->len);
    char *sm = server_message(resp->body);
    const char *hint = status_hint(resp->status);
    if (r->nattempts > 1)
      model_fail(m, r, MODEL_API_ERROR, http_code(resp->status), "HTTP %ld after %d attempts: %s%s%s%s", resp->status,
                 r->nattempts, hint, sm ? " (server: \"" : "", sm ? sm : "", sm ? "\")" : "");
    else
      model_fail(m, r, MODEL_API_ERROR, http_code(resp->status), "HTTP %ld: %s%s%s%s", resp->status, hint,
                 sm ? " (server: \"" : "", sm ? sm : "", sm ? "\")" : "");
    free(sm);
  } else if (e == MHTTP_ESTOPPED && m->opt.intr && *m->opt.intr) {
    model_fail(m, r, MODEL_INTERRUPTED, "interrupted", "interrupted");
  } else {
    const char *code = e == MHTTP_ECONNECT ? "connect" : e == MHTTP_ETIMEOUT ? "timeout" : "transport";
    model_fail(m, r, MODEL_TRANSPORT, code, "%s to %s failed after %d attempt%s: %s", path + 1, m->base_url,
               r->nattempts, r->nattempts == 1 ? "" : "s", resp->errmsg);
  }
  mhttp_response_free(resp);
  return -1;
}

/* ------------------------------------------------------------- deciding */

void model_accept_text(model *m, model_Reply *r, const char *text, const char *what) {
  json_error_t je;
  json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!j) {
    model_fail(m, r, MODEL_INVALID, "invalid-json", "%s is not one JSON value (%s at character %d); send "
               "exactly one JSON object {\"action\": {...}}", what, je.text, je.position);
    return;
  }
  char err[512];
  json_t *a;
  if (maction_validate(model_actions(m), NULL, j, &a, err, sizeof err))
    model_fail(m, r, MODEL_INVALID, "invalid-action", "%s: %s", what, err);
  else
    r->action = a, r->status = MODEL_OK, r->code = "ok";
  json_decref(j);
}

void model_decide(model *m, model_Reply *r) {
  if (m->opt.mode == MODEL_MODE_STRUCTURED) {
    if (!r->text || !*r->text) {
      model_fail(m, r, MODEL_INVALID, "no-action",
                 r->ncalls ? "the response called a function; answer with the JSON object {\"action\": {...}} instead"
                           : "the response holds no text; answer with the JSON object {\"action\": {...}}");
      return;
    }
    model_accept_text(m, r, r->text, "the response");
    return;
  }
  if (r->ncalls == 0) {
    model_fail(m, r, MODEL_INVALID, "no-action",
               r->text && *r->text ? "the response is text, not an action: call exactly one of the action tools"
                                   : "the response holds no action: call exactly one of the action tools");
    return;
  }
  if (r->ncalls > 1) {
    model_fail(m, r, MODEL_INVALID, "multiple-actions",
               "the response called %d tools; call exactly one per response (none of them was run)", r->ncalls);
    return;
  }
  model_Call *c = &r->calls[0];
  json_error_t je;
  json_t *args = json_loads(c->arguments, JSON_REJECT_DUPLICATES, &je);
  if (!args) {
    model_fail(m, r, MODEL_INVALID, "bad-arguments", "the arguments of %.64s are not one JSON value (%s at "
               "character %d); nothing was run", c->name, je.text, je.position);
    return;
  }
  char err[512];
  json_t *a;
  if (maction_validate(model_actions(m), c->name, args, &a, err, sizeof err))
    model_fail(m, r, MODEL_INVALID, "invalid-action", "%s; nothing was run", err);
  else
    r->action = a, r->status = MODEL_OK, r->code = "ok";
  json_decref(args);
}

/* ------------------------------------------------------- plain and streamed */

model_Status model_post_json(model *m, const char *path, json_t *body, model_Reply *r,
                             void (*read)(model *m, model_Reply *r, json_t *obj)) {
  mhttp_Response resp;
  if (model_post(m, path, body, NULL, NULL, r, &resp)) return r->status;
  model_record_response(m, r, resp.body, resp.len);
  json_error_t je;
  json_t *j = json_loadb(resp.body, resp.len, 0, &je);
  if (!json_is_object(j))
    model_fail(m, r, MODEL_INVALID, "invalid-json", "the response body is not a JSON object (%s)", je.text);
  else
    read(m, r, j);
  json_decref(j);
  mhttp_response_free(&resp);
  return r->status;
}

static int stream_event(void *ud, const char *event, const char *data, size_t len) {
  model_Stream *s = ud;
  if (len == 6 && !memcmp(data, "[DONE]", 6)) {
    s->done = 1;
    return 0;
  }
  json_t *j = json_loadb(data, len, 0, NULL);
  if (!j) {
    if (!s->bad_event) s->bad_event = strndup(data, len < 200 ? len : 200);
    return 0;
  }
  s->fn(s->ud, event, j);
  json_decref(j);
  return 0;
}

static int stream_bytes(void *ud, const char *data, size_t len) {
  model_Stream *s = ud;
  model_raw_add(&s->raw, data, len);
  return msse_feed(&s->sse, data, len) ? 1 : 0;
}

int model_stream(model *m, const char *path, json_t *body, model_event_fn fn, void *ud, model_Reply *r,
                 model_Stream *s) {
  memset(s, 0, sizeof *s);
  s->fn = fn;
  s->ud = ud;
  msse_init(&s->sse, stream_event, s, 0);
  return model_post(m, path, body, stream_bytes, s, r, &s->resp);
}

void model_stream_fail(model *m, model_Reply *r, model_Stream *s, const char *what) {
  if (s->bad_event)
    model_fail(m, r, MODEL_INVALID, "invalid-json", "the stream carried an event that is not JSON: %s", s->bad_event);
  else if (s->resp.error != MHTTP_OK)
    model_fail(m, r, MODEL_INVALID, "stream-cut", "the stream broke before %s (%s); nothing was run", what,
               s->resp.errmsg);
  else
    model_fail(m, r, MODEL_INVALID, "stream-cut", "the stream ended %sbefore %s; nothing was run",
               msse_cut(&s->sse) ? "in the middle of an event " : "", what);
}

void model_stream_free(model_Stream *s) {
  msse_free(&s->sse);
  free(s->raw.p);
  free(s->bad_event);
  mhttp_response_free(&s->resp);
  memset(s, 0, sizeof *s);
}
