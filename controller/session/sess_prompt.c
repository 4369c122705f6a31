/*
** sess_prompt.c — what the model reads (sess.h): its instructions, the
** request, each outcome, the view.  The instructions embed, verbatim,
** sections of docs/ (the managed entries, the form gate, the dialect's
** differences from Common Lisp and the operators it lacks), copied into
** the program by the build (embed_docs.cmake): the model is told exactly
** what the documentation says, so the two cannot drift.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maction.h"
#include "sess.h"

/* sess_docs.c, generated from docs/ by embed_docs.cmake */
extern const struct sess_doc {
  const char *file, *text;
} sess_docs[];

static const char intro[] =
  "You are the model of a jiti session. jiti keeps a Lisp application running as a live world and grows it one "
  "small, checked change at a time. You never touch the world yourself: you propose one action per response. The "
  "kernel checks it, runs it as a transaction inside a checkpoint, runs the world's safety invariants, and either "
  "keeps the result as a new revision or restores the world exactly as it was.\n"
  "\n"
  "How to work:\n"
  "- Answer every turn with exactly one action.\n"
  "- Take small steps. `evaluate` takes one form: put related definitions in one (progn ...).\n"
  "- What is kept: definitions (defun, defmacro, defvar, defparameter, defstruct, define-condition) and rows of "
  "the data table ((world-put key value), (world-get key)). Everything else is scratch.\n"
  "- Use `preview` to try an expression without keeping anything, `inspect` to read an entry in full, `check` to "
  "run the goals.\n"
  "- The request is done when every goal holds: the session then ends by itself. Send `finish` when the request "
  "cannot be done, or when it is done and there are no goals.\n"
  "- An unhandled error does not fail a transaction: it pauses it, and you see the condition, a backtrace and a "
  "menu of restarts with ids. Answer a pause with `resume` (a restart id from the menu, or a restart's name such "
  "as CONTINUE, and its arguments), with `evaluate` (a repair run inside the paused transaction, for instance a "
  "corrected definition, after which you resume), or with `abort`. Errors the system signals offer the standard "
  "restarts: a call of an undefined function offers CONTINUE (define the function with a repair, then resume "
  "CONTINUE to retry the call), USE-VALUE and RETURN-VALUE; an unbound variable offers CONTINUE, USE-VALUE and "
  "STORE-VALUE.\n"
  "- A pause lists the program's frames, innermost first, with their arguments and local variables. `evaluate` "
  "with \"frame\": N runs a repair in frame N's lexical environment: it can read a local, or setq it before you "
  "resume.\n"
  "- A repair that itself signals an error opens pause level 2 above the first (up to 8): the menu lists that "
  "level's restarts first, then level 1's, each marked with its level. `abort` leaves only the innermost level "
  "(undoing that repair) and shows level 1 again; at level 1 it abandons the transaction. Resuming an outer "
  "level's restart leaves the levels above it.\n"
  "- A change that breaks an invariant is restored (outcome unsafe). Read the message and propose a change that "
  "keeps every invariant. You cannot change invariants.\n"
  "- Each result shows the world's generation. Your next action is sent with it; if another client changed the "
  "world in between, the action is stale: nothing ran, and you get the fresh view.\n"
  "- Integers and ratios are exact (5/100 is exactly one twentieth): prefer them to floats for money.\n";

char *sess_instructions(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fputs(intro, f);
  char *doc = maction_doc(MACTION_SESSION);
  fprintf(f, "\nThe actions (one per response):\n%s", doc ? doc : "");
  free(doc);
  fprintf(f, "\nReference: the sections of jiti's documentation below apply to every form you send.\n");
  for (int i = 0; sess_docs[i].file; i++) fprintf(f, "\n(from %s)\n%s", sess_docs[i].file, sess_docs[i].text);
  fclose(f);
  return buf;
}

/* ------------------------------------------------------------- views */

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static void indented(FILE *f, const char *text, const char *pad) {
  fputs(pad, f);
  for (const char *p = text; *p; p++) {
    fputc(*p, f);
    if (*p == '\n' && p[1]) fputs(pad, f);
  }
  fputc('\n', f);
}

static void pause_text(FILE *f, json_t *p, int64_t gen) {
  json_int_t level = json_integer_value(json_object_get(p, "level"));
  fprintf(f, "PAUSED (generation %lld): %s: %s\n", (long long)gen, str(p, "condition_type"), str(p, "report"));
  if (level > 1)
    fprintf(f, "This is pause level %lld: your repair at level %lld signalled it. abort returns to level %lld.\n",
            (long long)level, (long long)level - 1, (long long)level - 1);
  const char *bt = str(p, "backtrace");
  json_t *frames = json_object_get(p, "frames"), *fr, *l;
  size_t i, k;
  if (json_array_size(frames)) {  /* each frame with its locals: evaluate with "frame" reads and sets them */
    fprintf(f, "Frames (innermost first; evaluate with \"frame\": N runs in frame N):\n");
    json_array_foreach(frames, i, fr) {
      fprintf(f, "  %lld: (%s", (long long)json_integer_value(json_object_get(fr, "frame")), str(fr, "function"));
      json_array_foreach(json_object_get(fr, "args"), k, l) fprintf(f, " %s", json_string_value(l));
      fprintf(f, ")\n");
      json_array_foreach(json_object_get(fr, "locals"), k, l)
        fprintf(f, "      %s = %s\n", str(l, "name"), str(l, "value"));
    }
  } else if (*bt) {
    fprintf(f, "Backtrace:\n");
    indented(f, bt, "  ");
  }
  json_t *rs = json_object_get(p, "restarts"), *r;
  fprintf(f, "Restarts:%s\n", json_array_size(rs) ? "" : " none (the evaluation established no restart)");
  json_array_foreach(rs, i, r) {
    const char *ll = str(r, "lambda_list");
    fprintf(f, "  %s  %s%s%s  %s", str(r, "id"), str(r, "name"), *ll && strcmp(ll, "()") ? " " : "",
            *ll && strcmp(ll, "()") ? ll : "", str(r, "report"));
    if (level > 1) fprintf(f, "  (level %lld)", (long long)json_integer_value(json_object_get(r, "level")));
    fputc('\n', f);
  }
  fprintf(f, "Commands used at this pause: %lld of %lld.\n", (long long)json_integer_value(json_object_get(p, "steps_used")),
          (long long)json_integer_value(json_object_get(p, "step_budget")));
}

void sess_view_text(FILE *f, json_t *v) {
  fprintf(f, "generation %lld, revision %lld, %s\n", (long long)json_integer_value(json_object_get(v, "generation")),
          (long long)json_integer_value(json_object_get(v, "revision")), str(v, "status"));
  json_t *e;
  size_t i;
  size_t n = 0;
  json_array_foreach(json_object_get(v, "entries"), i, e) {
    const char *t = str(e, "text");
    fprintf(f, "%s %s%s", str(e, "kind"), str(e, "name"), *t ? ":\n" : " (text not shown)\n");
    if (*t) indented(f, t, "  ");
    n++;
  }
  if (!n && !json_array_size(json_object_get(v, "invariants"))) fprintf(f, "(no definitions yet)\n");
  json_t *d = json_object_get(v, "data");
  if (json_integer_value(json_object_get(d, "count")))
    fprintf(f, "data table: %lld rows\n", (long long)json_integer_value(json_object_get(d, "count")));
  json_array_foreach(json_object_get(d, "rows"), i, e) fprintf(f, "  %s = %s\n", str(e, "key"), str(e, "value"));
  json_array_foreach(json_object_get(v, "invariants"), i, e)
    fprintf(f, "invariant %s: %s\n", str(e, "name"), str(e, "source"));
  json_t *lc = json_object_get(v, "last_invariant_check");
  if (json_is_false(json_object_get(lc, "ok"))) fprintf(f, "last invariant check FAILED: %s\n", str(lc, "message"));
  json_t *tr = json_object_get(v, "truncated");
  long long sum = json_integer_value(json_object_get(tr, "summarized")), om = json_integer_value(json_object_get(tr, "omitted"));
  if (sum || om)
    fprintf(f, "(view shortened: %lld entries without text, %lld not listed; use inspect to read one)\n", sum, om);
  json_t *p = json_object_get(v, "pause");
  if (json_is_object(p)) pause_text(f, p, json_integer_value(json_object_get(v, "generation")));
}

static void goals_text(FILE *f, const sess_Session *s) {
  json_t *g = json_object_get(s->view, "goals"), *x;
  size_t i;
  if (!json_array_size(g)) return;
  int pass, total;
  sess_goal_counts(s, &pass, &total);
  fprintf(f, "Goals: %d of %d hold.\n", pass, total);
  json_array_foreach(g, i, x) {
    json_t *p = json_object_get(x, "pass");
    fprintf(f, "  %s %s", json_is_true(p) ? "holds:" : json_is_false(p) ? "FAILS:" : "not run:", str(x, "source"));
    if (!json_is_true(p)) fprintf(f, "  => %s", str(x, "message"));
    fputc('\n', f);
  }
}

static void world_text(FILE *f, const sess_Session *s) {
  goals_text(f, s);
  fprintf(f, "\nThe world now:\n");
  sess_view_text(f, s->view);
}

char *sess_request_text(const sess_Session *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  fprintf(f, "Request: %s\n\n", s->request);
  if (s->o->task.ngoals) {
    fprintf(f, "Goals (the request is done when each returns true):\n");
    for (int i = 0; i < s->o->task.ngoals; i++) fprintf(f, "  %s\n", s->o->task.goals[i]);
  } else {
    fprintf(f, "There are no goals: send finish when the request is done.\n");
  }
  fprintf(f, "Invariants are listed in the view; every change must keep them true.\n\n");
  world_text(f, s);
  fclose(f);
  return buf;
}

/* ---------------------------------------------------------- outcomes */

const char *sess_outcome(json_t *action, json_t *reply) {
  int kind = maction_kind_of(action);
  int ok = json_is_true(json_object_get(reply, "ok"));
  const char *code = str(reply, "code");
  if (!reply) return "lost";
  switch (kind) {
  case MA_FINISH: return "finished";
  case MA_CHECK: return "checked";
  case MA_INSPECT: return ok ? "inspected" : "not-found";
  default: break;
  }
  if (!strcmp(code, "unavailable")) return "unavailable";
  if (!strcmp(code, "stale")) return "stale";
  if (kind == MA_PREVIEW) return ok ? "previewed" : "rejected";
  if (ok && !strcmp(str(reply, "status"), "paused")) return "paused";
  if (!ok && !strcmp(str(reply, "status"), "paused")) return "refused";
  if (!ok && !strcmp(code, "aborted")) return "aborted";
  if (!ok) return "rejected";
  if (!strcmp(str(reply, "outcome"), "accepted"))
    return json_array_size(json_object_get(reply, "changes")) ? "accepted" : "unchanged";
  return "rejected";
}

static void changes_text(FILE *f, json_t *changes) {
  json_t *c;
  size_t i;
  json_array_foreach(changes, i, c)
    fprintf(f, "%s%s %s%s", i ? ", " : "", str(c, "kind"), str(c, "name"),
            json_is_true(json_object_get(c, "removed")) ? " (removed)" : "");
}

static void value_text(FILE *f, json_t *reply) {
  json_t *v = json_object_get(reply, "value");
  if (json_is_string(v)) fprintf(f, "Value: %s\n", json_string_value(v));
  json_t *o = json_object_get(reply, "output");
  if (json_is_string(o) && json_string_length(o)) {
    fprintf(f, "Output:\n");
    indented(f, json_string_value(o), "  ");
  }
}

static const char *reason_hint(const char *code) {
  if (!strcmp(code, "unsafe")) return "An invariant failed: change the proposal so that every invariant holds.";
  if (!strcmp(code, "rejected-by-gate")) return "The form gate refused the source (see its rules in your instructions).";
  if (!strcmp(code, "limit")) return "It ran out of a limit (fuel, depth, heap or output): look for endless recursion "
                                     "or loops.";
  if (!strcmp(code, "repair-failed")) return "The repair failed, so the whole paused transaction was restored.";
  if (!strcmp(code, "budget-exhausted")) return "Too many commands at one pause: the transaction was restored.";
  if (!strcmp(code, "not-paused")) return "Nothing is paused: resume and abort only answer a pause.";
  return "";
}

char *sess_result_text(const sess_Session *s, json_t *action, json_t *reply, const char *outcome) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  long long rev = json_integer_value(json_object_get(reply, "revision"));
  long long gen = json_integer_value(json_object_get(reply, "generation"));
  if (!strcmp(outcome, "accepted")) {
    fprintf(f, "Accepted: revision %lld (generation %lld). Changed: ", rev, gen);
    changes_text(f, json_object_get(reply, "changes"));
    fprintf(f, ".\n");
    value_text(f, reply);
  } else if (!strcmp(outcome, "unchanged")) {
    fprintf(f, "Completed without changing anything that is kept (revision %lld stays current).\n", rev);
    value_text(f, reply);
  } else if (!strcmp(outcome, "stale")) {
    fprintf(f, "Stale: the world changed since the view your action was made from (it is at generation %lld "
               "now). Nothing ran. Decide again from the fresh view below.\n", gen);
  } else if (!strcmp(outcome, "paused")) {
    pause_text(f, json_object_get(reply, "pause"), gen);
    value_text(f, reply);
    fprintf(f, "The transaction is still open: answer with resume (restart_id, arguments), evaluate (a repair "
               "inside it) or abort.\n");
  } else if (!strcmp(outcome, "refused")) {
    fprintf(f, "Refused (%s): %s\n%s\nThe transaction is still paused:\n", str(reply, "code"), str(reply, "message"),
            reason_hint(str(reply, "code")));
    pause_text(f, json_object_get(reply, "pause"), gen);
  } else if (!strcmp(outcome, "aborted")) {
    fprintf(f, "Aborted: the paused transaction was abandoned and everything it did restored.\n");
  } else if (!strcmp(outcome, "previewed")) {
    fprintf(f, "Preview (nothing was kept): outcome %s. Would change: ", str(reply, "outcome"));
    if (!json_array_size(json_object_get(reply, "changes"))) fprintf(f, "nothing");
    changes_text(f, json_object_get(reply, "changes"));
    fprintf(f, ".\n");
    value_text(f, reply);
  } else if (!strcmp(outcome, "inspected")) {
    json_t *e = json_object_get(reply, "entry");
    fprintf(f, "%s %s:\n", str(e, "kind"), str(e, "name"));
    indented(f, str(e, "text"), "  ");
  } else if (!strcmp(outcome, "not-found")) {
    fprintf(f, "No entry %s%s%s.\n", str(action, "kind"), *str(action, "kind") ? " " : "", str(action, "name"));
  } else if (!strcmp(outcome, "checked")) {
    json_t *lc = json_object_get(s->view, "last_invariant_check");
    fprintf(f, "Checked. Last invariant check: %s%s%s\n", json_is_false(json_object_get(lc, "ok")) ? "FAILED" : "ok",
            *str(lc, "message") ? ": " : "", str(lc, "message"));
  } else if (!strcmp(outcome, "unavailable")) {
    fprintf(f, "Not available: %s\n", str(reply, "message"));
  } else {   /* rejected */
    const char *code = str(reply, "code");
    fprintf(f, "Rejected (%s): %s\n%s%sNothing was kept: the world is as it was.\n", code, str(reply, "message"),
            reason_hint(code), *reason_hint(code) ? "\n" : "");
    value_text(f, reply);
  }
  fputc('\n', f);
  world_text(f, s);
  fclose(f);
  return buf;
}

char *sess_invalid_text(const sess_Session *s, const model_Reply *r) {
  char *buf = NULL;
  if (asprintf(&buf, "Your last response was not run (%s): %s\nAnswer with exactly one action as described in "
                     "your instructions. The world did not change (generation %lld).\n",
               r->code, r->message ? r->message : "", (long long)s->gen) < 0)
    return NULL;
  return buf;
}
