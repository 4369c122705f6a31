/*
** model.h — model clients: ask a language model for the next action.
**
** A client is opened from a spec:
**   "openai"         the Responses API: POST {base}/responses
**   "chat"           Chat Completions, for compatible servers without
**                    Responses (Ollama, vLLM, llama.cpp): POST {base}/chat/completions
**   "scripted:FILE"  canned actions, one JSON object per line, offline
** and asked, turn after turn, for one action given a conversation
** (model_Conv).  Whatever produced it, a proposal passes the same
** validation (maction.h) before model_next reports MODEL_OK; everything
** else — a refusal, an incomplete or failed response, an error event, no
** action or more than one, arguments that are not one JSON value, an
** action that violates the schema — is MODEL_INVALID: nothing is to be
** executed, and model_conv_reply + model_conv_result tell the model why on
** its next turn.
**
** HTTP requests follow the official SDKs' retry policy (mretry.h) over one
** kept-alive connection (mhttp.h).  The API key comes from the environment
** (msecret.h) and never appears in anything this library returns: a reply's
** action, calls, text, message, ids and recorded bodies are redacted of the
** key's value (a server may echo it anywhere) and of key-like patterns
** ("sk-...", "Bearer ...").  model_redact and model_redact_json apply the
** same to anything else a caller keeps (records, logs, what it prints).
**
** The library is independent of sessions and of the kernel: it needs
** libcurl and jansson only.  Not thread-safe: one client per thread.
*/
#ifndef jiti_model_h
#define jiti_model_h

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "maction.h"
#include "mretry.h"

typedef struct model model;
typedef struct model_Conv model_Conv;

/* ------------------------------------------------------------ options */

typedef enum model_Mode {
  MODEL_MODE_TOOLS = 0,    /* one strict function tool per action kind */
  MODEL_MODE_STRUCTURED    /* a strict json_schema output {"action": ...} */
} model_Mode;

#define MODEL_DEFAULT_BASE_URL "https://api.openai.com/v1"
#define MODEL_DEFAULT_NAME "gpt-5-mini"
#define MODEL_DEFAULT_RECORDED_BODY 12288

typedef struct model_Options {
  const char *base_url;        /* NULL: $OPENAI_BASE_URL, else MODEL_DEFAULT_BASE_URL */
  const char *model;           /* NULL: $OPENAI_MODEL, else MODEL_DEFAULT_NAME */
  model_Mode mode;
  int stream;                  /* ask for server-sent events */
  int max_retries;             /* < 0: MRETRY_DEFAULT_RETRIES (2) */
  long connect_timeout_ms;     /* 0: 5,000 */
  long request_timeout_ms;     /* 0: 600,000 (the whole request, streamed body included) */
  long max_output_tokens;      /* 0: not sent */
  const char *reasoning_effort;/* NULL: not sent ("low", "medium", "high": Responses only) */
  size_t max_recorded_body;    /* bytes of each body kept in a reply; 0: MODEL_DEFAULT_RECORDED_BODY */
  /* called while a streamed response arrives: characters of text and
     arguments received so far (a progress display) */
  void (*on_progress)(void *ud, size_t chars);
  void *progress_ud;
  /* called (with progress_ud) before the wait of each retry: the attempt
     that failed, its wait, and the retry to come of how many (mretry.h) */
  void (*on_retry)(void *ud, const mretry_Attempt *a, int retry, int max_retries);
  volatile sig_atomic_t *intr; /* may be NULL: a flag a signal handler sets to stop waiting */
  maction_Set actions;         /* the actions the model is offered and may answer with
                                  (maction.h); 0: MACTION_SESSION */
} model_Options;

/* Defaults: tools, not streaming, everything else from the environment. */
void model_options_init(model_Options *o);

/* ------------------------------------------------------------- replies */

typedef enum model_Status {
  MODEL_OK = 0,        /* r->action is one valid action */
  MODEL_INVALID,       /* the model answered without one valid action (see
                          r->code); nothing to execute; tell it and ask again */
  MODEL_API_ERROR,     /* the server refused the request: a 4xx that is not
                          retried, or retries exhausted on 408/409/429/5xx */
  MODEL_TRANSPORT,     /* no response: connection failed or timed out after
                          the retries */
  MODEL_EXHAUSTED,     /* a scripted model has no more actions */
  MODEL_INTERRUPTED    /* the intr flag was set */
} model_Status;

/* "ok", "invalid", "api-error", "transport", "exhausted", "interrupted". */
const char *model_status_name(model_Status s);

typedef struct model_Usage {
  int64_t input_tokens, output_tokens;
  int64_t reasoning_tokens;    /* part of output_tokens */
  int64_t cached_tokens;       /* part of input_tokens */
  int64_t total_tokens;
} model_Usage;

/* Add b to a. */
void model_usage_add(model_Usage *a, const model_Usage *b);

typedef struct model_Call {
  char *call_id;               /* the API's call id ("" when the server sent none) */
  char *name;
  char *arguments;             /* as the model wrote them (may be invalid JSON) */
} model_Call;

typedef struct model_Reply {
  model_Status status;
  /* a stable name for what happened: "ok"; MODEL_INVALID: "refusal",
     "incomplete", "failed", "error-event", "no-action",
     "multiple-actions", "bad-arguments", "invalid-action", "invalid-json",
     "stream-cut", "content-filter", "length"; MODEL_API_ERROR: "http-NNN";
     MODEL_TRANSPORT: "connect", "timeout", "transport";
     "exhausted"; "interrupted" */
  const char *code;
  char *message;               /* why, for the operator and the model (NULL when OK) */
  json_t *action;              /* MODEL_OK: the canonical action (maction.h) */
  long long pinned_generation; /* scripted: the line's "generation", else -1 */
  char *response_id;           /* the server's id of the response, or NULL */
  char *request_id;            /* the x-request-id header, or NULL */
  char *served_by;             /* the model named in the response, or NULL */
  model_Usage usage;
  long http_status;            /* of the last attempt; 0 when none */
  int nattempts;               /* HTTP attempts made (0 for scripted) */
  mretry_Attempt attempts[16]; /* the first 16 of them, with the waits chosen */
  int nreasoning;              /* reasoning items in the output */
  char *reasoning;             /* their summaries' text, when the API sent any; else NULL */
  /* for the record: request and response bodies, key redacted, each at
     most max_recorded_body bytes (the request without the instructions,
     tools and schema, which are named with their sizes, and without its
     oldest conversation items when still too long); *_bytes are the full
     sizes */
  char *request_body, *response_body;
  size_t request_bytes, response_bytes;
  /* what the model said, echoed into the conversation by model_conv_reply */
  int ncalls;
  model_Call *calls;
  char *text;                  /* output text, or a refusal's text; NULL if none */
  double seconds;              /* wall time of the turn, retries included */
} model_Reply;

void model_reply_free(model_Reply *r);

/* ------------------------------------------------------------- clients */

/* Open a client.  NULL after writing the reason to err: an unknown spec,
** "openai" without a key (msecret.h), a key file that is refused, a
** scripted file that cannot be read, out of memory.  o may be NULL
** (defaults).  The options' strings are copied. */
model *model_open(const char *spec, const model_Options *o, char *err, size_t errlen);

void model_close(model *m);

/* "openai gpt-5-mini (tools, streaming)", "scripted examples/x.jsonl". */
const char *model_describe(const model *m);

/* The spec's kind: "openai", "chat" or "scripted". */
const char *model_kind(const model *m);

/* The model's name ("gpt-5-mini"; the file for a scripted model). */
const char *model_name(const model *m);

/* Ask for the next action given the conversation.  Fills *r (release with
** model_reply_free) and returns r->status.  c is not changed: append the
** reply with model_conv_reply, then its result with model_conv_result. */
model_Status model_next(model *m, const model_Conv *c, model_Reply *r);

/* The one redaction of everything kept from a session: a copy of s (len
** bytes) with the client's API key (when it has one of at least
** MSECRET_MIN_KEY bytes) and key-like patterns replaced by "[redacted]"
** (msecret.h).  malloc'd, NUL-terminated, length in *outlen (may be NULL);
** NULL when memory is exhausted.  m may be NULL (patterns only). */
char *model_redact(const model *m, const char *s, size_t len, size_t *outlen);
/* The same in place for every string of j (values and member names).  0,
** or -1 when memory is exhausted. */
int model_redact_json(const model *m, json_t *j);

/* ---------------------------------------------------------- conversations */

/* A conversation: instructions (the system prompt), then steps.  Step 0
** holds the first user messages; each model_conv_reply starts a new step,
** which holds the reply, its result and the user messages added after it. */
model_Conv *model_conv_new(const char *instructions);
void model_conv_free(model_Conv *c);

/* Append a user message.  0, or -1 when memory is exhausted (for all). */
int model_conv_user(model_Conv *c, const char *text);

/* Append what the model said in r: its function calls (every one, even
** invalid ones, since the API wants an output for each) or its text. */
int model_conv_reply(model_Conv *c, const model_Reply *r);

/* Answer the last reply: text becomes the output of its first call (the
** others get "not executed: one action per response"), or a user message
** when it had no calls (structured output, refusals, text). */
int model_conv_result(model_Conv *c, const char *text);

/* Steps so far (the first user messages are step 0). */
int model_conv_steps(const model_Conv *c);

/* Characters of all messages and the instructions: a token estimate is
** about a quarter of it. */
size_t model_conv_chars(const model_Conv *c);

/* Replace steps 1 .. steps-keep-1 (the older ones) by one user message
** summary, appended to step 0; the last keep steps stay as they were.
** Nothing happens when there are not more than keep steps after step 0. */
int model_conv_compact(model_Conv *c, int keep, const char *summary);

#endif
