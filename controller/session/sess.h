/*
** sess.h — the parts of `jiti session` and `jiti sessions` (docs/model.md,
** docs/guide.md):
**
**   sess_cmd.c      options of `jiti session`; opens the kernel connection
**                   and the model; one request, or interactive requests
**   sess_task.c     task files (a request with its goals and invariants)
**   sess_kernel.c   the kernel requests a session makes (observe with
**                   goals, act, preview, inspect, invariants, record)
**   sess_prompt.c   the model's instructions, the request, views, outcomes
**                   and summaries of older steps, as text for the model
**   sess_loop.c     one request: observe -> model -> validate -> act ->
**                   record, until a stop condition; exit statuses
**   sess_ui.c       what the operator sees: spinner, step lines, --json,
**                   --confirm
**   sess_pretty.c   a proposal's source laid out as Lisp for --confirm
**   sess_repl.c     interactive requests with line editing and history
**   sess_list.c     `jiti sessions`: list, show, export (read-only store)
**
** A session is one request worked to an end.  Everything it does is
** recorded in the store's events through the kernel's record op:
** session-start, session-request / session-response (bodies, for HTTP
** models), session-step, session-end — all with the same "session" id.
*/
#ifndef jiti_sess_h
#define jiti_sess_h

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "kclient.h"
#include "model.h"

/* Exit statuses of `jiti session` (the last request's, in interactive
** mode the worst one). */
enum {
  SESS_OK = 0,          /* every goal holds (or, without goals, the model finished) */
  SESS_FAIL = 1,        /* unrecoverable: no kernel, the model API refused, transport */
  SESS_USAGE = 2,
  SESS_GAVE_UP = 3,     /* the model finished, or ran out of actions, with goals unmet */
  SESS_BUDGET = 4,      /* the step budget is spent */
  SESS_TOKENS = 5,      /* --max-tokens reached */
  SESS_FORMAT = 6,      /* --max-format-errors invalid responses in a row */
  SESS_INTERRUPTED = 130
};

/* ------------------------------------------------------------ tasks */

typedef struct sess_Invariant {
  char *name, *source;
} sess_Invariant;

typedef struct sess_Task {
  char *request;                /* NULL: none given */
  char **goals;
  int ngoals;
  sess_Invariant *invariants;
  int ninvariants;
} sess_Task;

/* Load a task file: Lisp (a property list (:request "..." :goals (FORM ...)
** :invariants ((NAME FORM) ...))) or JSON ({"request", "goals": [source],
** "invariants": [{"name","source"}]}), chosen by the first character.
** Adds to t (which may hold --goal/--invariant already).  0, or -1 with
** err ("FILE:LINE: why"). */
int sess_task_load(const char *path, sess_Task *t, char *err, size_t errlen);
int sess_task_add_goal(sess_Task *t, const char *source);
/* name NULL: "session-invariant-N" */
int sess_task_add_invariant(sess_Task *t, const char *name, const char *source);
void sess_task_free(sess_Task *t);

/* ------------------------------------------------------------ options */

typedef struct sess_Options {
  const char *store;
  char *model_spec;             /* "openai", "chat", "scripted:FILE" */
  model_Options mopt;
  sess_Task task;
  int budget;                   /* steps per request (default 20) */
  int max_format_errors;        /* default 3 */
  int64_t max_tokens;           /* 0: no limit */
  long prompt_budget;           /* tokens (estimate) before older steps are summarised */
  long view_budget;             /* bytes of entry text in a view */
  int confirm, json, quiet;
  int interactive;              /* no --request: read requests from the terminal */
} sess_Options;

/* ---- sess_mopt.c: the model options of every command that asks a model
** (jiti session, jiti supervise) */

typedef struct sess_ModelArgs {
  model_Options *mopt;          /* filled by the options that set it */
  const char *model_name;       /* --model */
  const char *scripted;         /* --scripted */
  int chat;                     /* --chat */
  int stream;                   /* --stream 1, --no-stream 0, neither -1 */
} sess_ModelArgs;

void sess_mopt_init(sess_ModelArgs *a, model_Options *mopt);
/* The "model:" lines of a command's --help. */
void sess_mopt_usage(FILE *f);
/* argv[*i] when it is a model option (its value taken: *i moves on): 1;
** 0 when it is none; -1 after a message on stderr ("jiti CMD: ..."). */
int sess_mopt_arg(const char *cmd, int argc, char **argv, int *i, sess_ModelArgs *a);
/* The model spec the options name ("openai", "chat", "scripted:FILE";
** malloc'd), or NULL after a message on stderr (*usage_error: 1 for
** options that do not go together, 0 for a missing API key). */
char *sess_mopt_spec(const char *cmd, sess_ModelArgs *a, int *usage_error);
/* A whole number lo..hi, or seconds (> 0, into ms): 1, or 0 after a
** message on stderr. */
int sess_count_arg(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out);
int sess_seconds_arg(const char *cmd, const char *opt, const char *v, long *ms);

/* ------------------------------------------------------------ a session */

typedef struct sess_Totals {
  int steps, accepted, rejected, stale, paused, invalid;
  model_Usage usage;
  double model_seconds, kernel_seconds;
} sess_Totals;

typedef struct sess_UI sess_UI;

typedef struct sess_Session {
  const sess_Options *o;
  kclient *k;
  model *m;
  sess_UI *ui;
  volatile sig_atomic_t *intr;
  char id[48];                  /* this request's session id */
  const char *request;
  model_Conv *conv;
  json_t *view;                 /* the last view (observe), with goal results */
  int64_t gen;                  /* its generation: what the next action is tagged with */
  int64_t revision;
  int paused;                   /* the world is paused (maybe by this session) */
  int pause_ours;               /* ... by an action of this session */
  sess_Totals t;
  char **lines;                 /* one line per step, for summaries */
  int nlines;
  int summarised;               /* steps already folded into a summary */
  int kernel_calls;             /* round trips to the kernel */
  int64_t last_input;           /* input tokens of the last request (the next one's are no fewer) */
  int64_t max_output;           /* the most output tokens a request used */
} sess_Session;

/* ---- sess_kernel.c: every call returns the reply (new reference) or
** NULL after a message on stderr (the connection is lost). */

/* observe with the task's goals; updates s->view, s->gen, s->revision,
** s->paused.  0 or -1. */
int sess_observe(sess_Session *s);
/* 1 when the view has goals and every one passes. */
int sess_goals_hold(const sess_Session *s);
/* How many of the view's goals pass, of how many. */
void sess_goal_counts(const sess_Session *s, int *pass, int *total);
/* One request, waiting for its reply. */
json_t *sess_call(sess_Session *s, json_t *req);
/* Record an event (kind "session-..."; stolen) with this session's id,
** without waiting (no round trip); sync: wait until it is in the store
** (the session's last record, so that `jiti sessions` sees it at once).
** Every string of it is redacted first (model_redact_json: the API key's
** value and key-like patterns), whatever it holds. */
void sess_record(sess_Session *s, const char *kind, json_t *ev, int sync);
/* Read and evaluate every goal and invariant of the task once, as a
** preview (nothing published), before any model request.  Wrong, said on
** stderr: a form that does not read; an invariant that signals or does
** not hold (the kernel would refuse every change); a goal that calls a
** function (or reads a variable) that is not defined and that request
** (NULL: not known yet) does not mention — a typo.  A goal that signals
** otherwise does not hold yet (the model is to make it hold: said unless
** quiet), and one that already holds is said too.  SESS_OK, SESS_USAGE
** (something is wrong with the task), SESS_FAIL (the connection was lost). */
int sess_check_task(kclient *k, const sess_Task *t, const char *request, int quiet);
/* Add (or replace) the task's invariants before the first step.  0, or -1
** after a message naming the invariant and the kernel's reason. */
int sess_add_invariants(kclient *k, const sess_Task *t);
/* Run one action (canonical, maction.h) tagged with generation gen and
** return the kernel's reply (inspect/check/finish: a reply made here,
** {"ok":true,...}); NULL when the connection is lost. */
json_t *sess_execute(sess_Session *s, json_t *action, int64_t gen);

/* ---- sess_prompt.c */

/* The model's instructions: how a session works, the actions (maction.h),
** and the documentation sections the build embeds (managed entries, the
** form gate, the dialect's differences).  malloc'd. */
char *sess_instructions(void);
/* The first user message: request, goals, invariants, the view. */
char *sess_request_text(const sess_Session *s);
/* What happened to an action, then goals and the fresh view. */
char *sess_result_text(const sess_Session *s, json_t *action, json_t *reply, const char *outcome);
/* What to tell the model about an invalid response. */
char *sess_invalid_text(const sess_Session *s, const model_Reply *r);
/* The view as text for the model (bounded by the observe budget). */
void sess_view_text(FILE *f, json_t *view);
/* The outcome name of a kernel reply to an action: "accepted",
** "unchanged", "rejected", "stale", "paused", "refused", "aborted",
** "previewed", "inspected", "checked", "finished", "unavailable". */
const char *sess_outcome(json_t *action, json_t *reply);

/* ---- sess_loop.c */

/* Work one request to an end; returns an exit status (SESS_...). */
int sess_run_request(const sess_Options *o, kclient *k, model *m, sess_UI *ui, const char *request,
                     volatile sig_atomic_t *intr);

/* ---- sess_ui.c */

sess_UI *sess_ui_new(const sess_Options *o);
void sess_ui_free(sess_UI *u);
/* The model is working: a spinner with elapsed time and streamed
** characters (a terminal only); stop ends it. */
void sess_ui_wait_start(sess_UI *u, const char *what);
void sess_ui_progress(void *u, size_t chars);   /* model_Options.on_progress */
void sess_ui_wait_stop(sess_UI *u);
/* A retry of a model request, on a line of its own (model_Options.on_retry;
** not in --json, whose steps list the attempts). */
void sess_ui_retry(void *u, const mretry_Attempt *a, int retry, int max_retries);
/* One step: a line, or (--json) the step event as one JSON line. */
void sess_ui_step(sess_UI *u, json_t *step);
/* The session's end: a summary line, or the end event as JSON. */
void sess_ui_end(sess_UI *u, json_t *end);
/* A message for the operator (stderr; not in --json). */
void sess_ui_note(sess_UI *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A proposal as --confirm shows it. */
typedef struct sess_Proposal {
  json_t *action;               /* canonical (maction.h) */
  int64_t gen;                  /* the generation it is sent with */
  int step;
  json_t *pause;                /* the view's pause, or NULL */
  const char *reasoning;        /* the model's reasoning summary, or NULL */
} sess_Proposal;

/* --confirm: show the proposal (its kind and generation, its source laid
** out as Lisp, the reasoning summary; before a resume or abort, the
** pause's condition, restarts and backtrace) and ask.  Returns 'y'; 'n'
** with *reason (malloc'd, or NULL) the operator's reason for the model;
** 'e' with *edited = a new canonical action (validated; on a terminal
** edited in $VISUAL/$EDITOR, or on a line prefilled with the source, and
** shown again before it is sent); 'q' at end of input. */
int sess_ui_confirm(sess_UI *u, const sess_Proposal *p, json_t **edited, char **reason);

/* ---- sess_pretty.c */

/* src laid out as Lisp in lines of about width columns (only re-indented:
** atoms, strings and comments keep their spelling); a source with lines
** of its own, or one that does not balance, comes back as it is.
** malloc'd; NULL when src is NULL or memory is exhausted. */
char *sess_pretty_lisp(const char *src, int width);

/* ---- sess_repl.c */

/* Requests from the terminal (or piped lines) until end of input. */
int sess_interactive(const sess_Options *o, kclient *k, model *m, sess_UI *ui, volatile sig_atomic_t *intr);

/* ---- the commands: their exit statuses (above) */

int cmd_session(int argc, char **argv);    /* sess_cmd.c */
int cmd_sessions(int argc, char **argv);   /* sess_list.c */

#endif
