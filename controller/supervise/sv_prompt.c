/*
** sv_prompt.c — what the supervisor's model is told (supervise.h): the
** instructions, then one message with the incident's evidence.  The
** evidence is bounded: the frames, the recorded calls and the invariants
** are cut to fit, the condition and the failed call always stay.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "supervise.h"

#define EVIDENCE_CALLS 24       /* recorded calls shown */
#define EVIDENCE_FRAMES 8       /* frames shown, innermost first */
#define EVIDENCE_TEXT 1200      /* bytes of one shown value */

char *sv_instructions(const sv_Options *o) {
  char *t = NULL;
  if (asprintf(&t,
      "You repair a live Common Lisp application that keeps running while you work.  A call of one of its "
      "functions failed with an unhandled error; you are shown the evidence: the failed call, the condition "
      "and its report, the backtrace with each frame's arguments and locals, the function's live definition, "
      "calls of the function that succeeded recently with their results, and the application's invariants "
      "(predicates that must stay true).\n\n"
      "Answer with exactly one action:\n"
      "- repair: replacement definitions as one form, (defun f ...) or (progn (defun f ...) ...).  %s  Keep the "
      "function's name and lambda list, keep its behaviour on every input that worked, and change as little as "
      "possible.  Before it is applied the repair is verified on a copy of the live world: the failed call runs "
      "again and must return without an unhandled error, every invariant must hold, and the recorded calls are "
      "replayed against the old and the new definition — a repair that changes one of their results is "
      "rejected unless intended_changes names that change and says why.  A rejected repair comes back to you "
      "with the reason; you have %d attempt%s in all.\n"
      "- expected: the error is what the application means to happen (it signals it on purpose, e.g. for an "
      "input it refuses); nothing is changed.\n"
      "- insufficient_evidence: the evidence does not tell what the correct behaviour is; nothing is changed.\n\n"
      "The source is read in the application's package, as the frames print names.  Do not call the function "
      "to test it, do not define anything else%s.",
      o->scope_world ? "It may change other definitions too when the fault is there."
                     : "Only the failing function may change: a repair that defines anything else is rejected.",
      o->attempts, o->attempts == 1 ? "" : "s", o->scope_world ? " than the repair needs" : "") < 0)
    return NULL;
  return t;
}

/* s, cut to n bytes with a marker. */
static void put_cut(FILE *f, const char *s, size_t n) {
  if (!s) s = "?";
  size_t len = strlen(s);
  if (len <= n) fputs(s, f);
  else fprintf(f, "%.*s ... [%zu more bytes]", (int)n, s, len - n);
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "?";
}

char *sv_evidence(const sv_Options *o, json_t *inc, json_t *traffic, const char *definition, json_t *invariants) {
  (void)o;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  json_t *ev = json_object_get(inc, "evidence"), *d = json_object_get(ev, "diagnosis");
  const char *kind = str(inc, "kind");
  if (!strcmp(kind, "explicit")) {   /* an operator's heal: no call failed */
    fprintf(f, "Incident %lld: an operator reports a problem with the function %s. No error was raised: the "
            "function returns a wrong result or does the wrong thing.\n\nThe operator's description:\n",
            (long long)json_integer_value(json_object_get(inc, "id")), str(inc, "function"));
    put_cut(f, str(ev, "problem"), 4 * EVIDENCE_TEXT);
    if (json_is_string(json_object_get(ev, "repro"))) {
      fprintf(f, "\n\nA form that shows it (a repair must make it return without an error):\n");
      put_cut(f, str(ev, "repro"), 4 * EVIDENCE_TEXT);
    }
    if (json_is_string(json_object_get(ev, "expect"))) {
      fprintf(f, "\n\nIt should return (compared with EQUAL):\n");
      put_cut(f, str(ev, "expect"), EVIDENCE_TEXT);
    }
    fprintf(f, "\n\nThe scope of this heal: %s.", !strcmp(str(ev, "scope"), "world")
                                                  ? "world (other definitions may change too)"
                                                  : "function (only this function may change)");
    fprintf(f, "\n\nThe live definition of %s:\n", str(inc, "function"));
    put_cut(f, definition ? definition : "(not available)", 8 * EVIDENCE_TEXT);
    fputc('\n', f);
    goto calls;
  }
  fprintf(f, "Incident %lld: the function %s failed (%lld time%s).\n\n", (long long)json_integer_value(json_object_get(inc, "id")),
          str(inc, "function"), (long long)json_integer_value(json_object_get(inc, "count")),
          json_integer_value(json_object_get(inc, "count")) == 1 ? "" : "s");
  fprintf(f, "The failed call (its effects were undone):\n");
  put_cut(f, str(ev, "request"), 4 * EVIDENCE_TEXT);
  fprintf(f, "\n\nThe condition: %s\nIts report: ", str(d, "condition_type"));
  put_cut(f, str(d, "report"), EVIDENCE_TEXT);
  fprintf(f, "\n\nThe live definition of %s:\n", str(inc, "function"));
  put_cut(f, definition ? definition : "(not available)", 8 * EVIDENCE_TEXT);
  json_t *frames = json_object_get(d, "frames"), *fr, *x;
  size_t i, k;
  if (json_array_size(frames)) fprintf(f, "\n\nThe backtrace, innermost first (the program's frames only):\n");
  json_array_foreach(frames, i, fr) {
    if (i == EVIDENCE_FRAMES) {
      fprintf(f, "  ... %zu more frames\n", json_array_size(frames) - i);
      break;
    }
    fprintf(f, "  %zu: (%s", i, str(fr, "function"));
    json_array_foreach(json_object_get(fr, "args"), k, x) {
      fputc(' ', f);
      put_cut(f, json_string_value(x), EVIDENCE_TEXT / 4);
    }
    fprintf(f, ")\n");
    json_array_foreach(json_object_get(fr, "locals"), k, x) {
      fprintf(f, "      %s = ", str(x, "name"));
      put_cut(f, json_string_value(json_object_get(x, "value")), EVIDENCE_TEXT / 4);
      fputc('\n', f);
    }
  }
  json_t *reads = json_object_get(d, "reads");
  if (json_array_size(reads))
    fprintf(f, "\nWhat the call read of the world's state (globals, slots, data rows; the values it saw first):\n");
  json_array_foreach(reads, i, x) {
    fprintf(f, "  %s %s", str(x, "kind"), str(x, "name"));
    if (json_object_get(x, "object")) {
      fputs(" of ", f);
      put_cut(f, str(x, "object"), EVIDENCE_TEXT / 4);
    }
    fputs(" = ", f);
    put_cut(f, str(x, "value"), EVIDENCE_TEXT / 4);
    fputc('\n', f);
  }
  if (json_integer_value(json_object_get(d, "reads_more")))
    fprintf(f, "  ... %lld more not recorded\n", (long long)json_integer_value(json_object_get(d, "reads_more")));
  const char *args = NULL;
  char *latest = json_dumps(json_object_get(inc, "arguments"), JSON_COMPACT | JSON_ENCODE_ANY);
  args = latest;
  if (args && strcmp(args, "null") && json_integer_value(json_object_get(inc, "count")) > 1)
    fprintf(f, "\nThe latest failure's arguments: %s\n", args);
  free(latest);
calls:
  if (json_array_size(traffic)) {
    fprintf(f, "\nRecent calls that succeeded, with their printed results (replayed to check a repair):\n");
    json_array_foreach(traffic, i, x) {
      if (i == EVIDENCE_CALLS) {
        fprintf(f, "  ... %zu more\n", json_array_size(traffic) - i);
        break;
      }
      fputs("  ", f);
      put_cut(f, str(x, "request"), EVIDENCE_TEXT / 2);
      fputs("  =>  ", f);
      put_cut(f, str(x, "result"), EVIDENCE_TEXT / 2);
      fputc('\n', f);
    }
  } else {
    fprintf(f, "\nNo successful calls of %s were recorded.\n", str(inc, "function"));
  }
  if (json_array_size(invariants)) {
    fprintf(f, "\nThe invariants (each must stay true):\n");
    json_array_foreach(invariants, i, x) {
      fprintf(f, "  %s: ", str(x, "name"));
      put_cut(f, str(x, "source"), EVIDENCE_TEXT);
      fputc('\n', f);
    }
  }
  fprintf(f, "\nAnswer with one action: repair, expected or insufficient_evidence.\n");
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
