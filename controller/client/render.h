/*
** render.h — replies of the kernel protocol (docs/protocol.md) printed for
** people: by the client commands, the repl, and the store commands, which
** print what they did offline exactly as what a kernel did for them.
*/
#ifndef jiti_render_h
#define jiti_render_h

#include <stdio.h>
#include <jansson.h>

/* One request on a connection of its own (kclient_once): the reply, or
** NULL after "jiti CMD: why" on stderr.  req is stolen. */
json_t *render_request_once(const char *cmd, const char *dir, json_t *req);

/* The program output of a transaction's reply (`output`), newline-ended. */
void render_output(FILE *f, json_t *reply);

/* The value of a transaction's reply, or each of its values on a line of
** its own ("; no values" for none). */
void render_value(FILE *f, json_t *reply);

/* A pause: "paused (generation N): TYPE: report", the restart menu (id,
** name, lambda list, report per line) and the backtrace.  How to answer is
** the caller's to say. */
void render_pause(FILE *f, json_t *pause);

/* A failed call's diagnosis (its reply's "diagnosis", may be NULL:
** nothing): the restarts that were established when it failed and the
** backtrace, as a Lisp's debugger would have shown them. */
void render_diagnosis(FILE *f, json_t *diagnosis);

/* An observe view: generation, revision, status, entries, data rows,
** invariants, what was left out (and how to see it: limit_hint, may be
** NULL) and the pause (as render_pause).  Returns the view's pause
** object, or NULL when nothing is paused. */
json_t *render_view(FILE *f, json_t *view, const char *limit_hint);

/* The entry kinds (jiti_entry_kind_name, the one table), "function,
** macro, ..." with last ("or ", "and ", ", ") before the last one. */
void render_entry_kinds(char *buf, size_t len, const char *last);

/* A refusal, on stderr: "jiti CMD: CODE: MESSAGE", with what a person
** can do about it where the code has a remedy (a request refused behind a
** pause: observe, act or --wait; a rollback whose target breaks a current invariant: which one,
** and the two ways out). */
void render_refusal(const char *cmd, json_t *reply);

/* A status reply, as `jiti status` prints it. */
void render_status(FILE *f, json_t *reply);

/* The reply to a change (apply, invariant add/remove, rollback), made by the
** kernel or offline: the program's output, then "revision N (generation
** G): +added ~changed -removed" (a rollback: "(rollback to T, ...)"), or
** "no change: revision N stays CURRENT"; a failure on stderr as "jiti CMD:
** CODE: MESSAGE" and "nothing was published; CURRENT stays revision N of
** the store at DIR".  Returns the exit status: 0 accepted, 1 not. */
int render_change(const char *cmd, json_t *reply, const char *dir);

#endif
