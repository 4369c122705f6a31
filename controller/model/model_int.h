/*
** model_int.h — what the model clients share (model.c, mconv.c,
** mresponses.c, mchat.c, mscripted.c).  Not for users of model.h.
*/
#ifndef jiti_model_int_h
#define jiti_model_int_h

#include "model.h"
#include "mhttp.h"
#include "msse.h"

/* ---- conversations (mconv.c) */

typedef enum model_Role {
  MSG_USER,       /* text */
  MSG_TEXT,       /* the model's text (structured output, a refusal) */
  MSG_CALL,       /* the model's function call: call_id, name, text = arguments */
  MSG_OUTPUT      /* the result of a call: call_id, text */
} model_Role;

typedef struct model_Msg {
  model_Role role;
  int step;
  char *text, *call_id, *name;
} model_Msg;

struct model_Conv {
  char *instructions;
  model_Msg *v;
  size_t n, cap;
  int step;            /* the current step */
  size_t open_calls;   /* index of the first call of the last reply not yet answered */
  int has_open;        /* the last reply's calls are waiting for model_conv_result */
};

/* ---- clients */

typedef struct model_Class {
  const char *kind;    /* "openai", "chat", "scripted" */
  model_Status (*next)(model *m, const model_Conv *c, model_Reply *r);
  void (*close)(model *m);
} model_Class;

struct model {
  const model_Class *cls;
  model_Options opt;
  char *base_url, *name;
  char *key;                   /* NULL: no Authorization header */
  char *org, *project;         /* OpenAI-Organization / OpenAI-Project, or NULL */
  mhttp *http;
  char describe[512];
  void *priv;                  /* the class's own state */
};

extern const model_Class model_responses_class, model_chat_class, model_scripted_class;

/* The actions m offers (model_Options.actions). */
static inline maction_Set model_actions(const model *m) {
  return m->opt.actions ? m->opt.actions : MACTION_SESSION;
}

/* Set r to a failure: status, code (a static string) and a message
** (printf-style), redacted of the key. */
void model_fail(model *m, model_Reply *r, model_Status st, const char *code, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));

/* POST body (stolen) to {base}{path} with the retries of the policy and
** the client's headers; records the request body, attempts, status and
** request id in r.  sink (may be NULL): streamed 2xx body.  On a 2xx
** response returns 0 with *resp filled (free with mhttp_response_free);
** otherwise fails r (MODEL_API_ERROR with the server's error.message and a
** hint, MODEL_TRANSPORT, MODEL_INTERRUPTED) and returns -1.  A 2xx whose
** stream broke also returns 0 (resp->error says how): the caller reports it. */
int model_post(model *m, const char *path, json_t *body, mhttp_sink sink, void *ud, model_Reply *r,
               mhttp_Response *resp);

/* The bytes of a stream as received, kept (up to 16 MiB) so that a stream
** that fails can be recorded as it came. */
typedef struct model_Raw {
  char *p;        /* NUL-terminated; NULL until something arrived */
  size_t len, cap;
} model_Raw;
void model_raw_add(model_Raw *b, const char *data, size_t len);

/* POST body (stolen) without streaming, record the response, and hand it
** to read when it is a JSON object (else r fails: invalid-json).  Returns
** r->status. */
model_Status model_post_json(model *m, const char *path, json_t *body, model_Reply *r,
                             void (*read)(model *m, model_Reply *r, json_t *obj));

/* A streamed POST: server-sent events whose data is JSON go to fn (event
** name, parsed data; its return value is ignored); data that is not JSON is
** noted (bad_event), "[DONE]" sets done. */
typedef void (*model_event_fn)(void *ud, const char *event, json_t *data);

typedef struct model_Stream {
  msse sse;
  model_Raw raw;           /* the bytes received */
  mhttp_Response resp;     /* resp.error: whether the transfer broke */
  model_event_fn fn;
  void *ud;
  char *bad_event;         /* the start of the first event that is not JSON */
  int done;                /* "data: [DONE]" arrived */
} model_Stream;

/* POST body (stolen) as a stream.  0 when a 2xx response arrived (then
** events went to fn; call model_stream_end), -1 after failing r. */
int model_stream(model *m, const char *path, json_t *body, model_event_fn fn, void *ud, model_Reply *r,
                 model_Stream *s);
/* Fail r for a stream that ended without its last event (named by what):
** invalid-json when an event was not JSON, else stream-cut (broken or
** ended early).  */
void model_stream_fail(model *m, model_Reply *r, model_Stream *s, const char *what);
void model_stream_free(model_Stream *s);

/* Keep a bounded, redacted copy of a response body in r. */
void model_record_response(model *m, model_Reply *r, const char *body, size_t len);

/* Add a function call to r (strings copied; NULL taken as ""). */
int model_add_call(model_Reply *r, const char *call_id, const char *name, const char *arguments);

/* Append text to r->text. */
int model_add_text(model_Reply *r, const char *text, size_t len);

/* Decide the reply from the calls and text gathered in r, for mode:
** tools wants exactly one call whose arguments are one JSON value and
** a valid action; structured wants text that is {"action": ...}.  Sets
** MODEL_OK with r->action, or fails r MODEL_INVALID. */
void model_decide(model *m, model_Reply *r);

/* Validate a structured-output text (also the scripted lines): MODEL_OK
** with r->action, or MODEL_INVALID.  what names the source for messages
** ("the response", "line 3 of FILE"). */
void model_accept_text(model *m, model_Reply *r, const char *text, const char *what);

/* The integer member k of o, 0 when absent or not an integer. */
int64_t model_int(json_t *o, const char *k);

/* Usage from the Responses names (input_tokens, output_tokens,
** input_tokens_details.cached_tokens, output_tokens_details.reasoning_tokens)
** or the Chat names (prompt_tokens, completion_tokens, *_details). */
void model_usage_from(json_t *u, model_Usage *out);


/* Call the progress callback. */
void model_progress(model *m, size_t chars);

#endif
