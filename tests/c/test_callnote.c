/* test_callnote.c — jiti_form_eval_noting: a held form that calls a world
** function is evaluated exactly as jiti_form_eval evaluates it (arguments
** once, left to right, then the function), and its call is noted: the
** function's entry name and the classes of its arguments; nothing for any
** other form; names and signatures past the bound are not noted. */
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

/* Read src, evaluate it noting with bound max: its printed value (or
** "!TYPE"), the note in *note. */
static const char *noted(jiti_State *S, const char *src, size_t max, jiti_CallNote *note) {
  static char buf[4096];
  jiti_FormVerdict v;
  jiti_Result r;
  jiti_FormPolicy policy = {100000, NULL, 0, NULL, 0};
  if (jiti_form_read(S, src, strlen(src), &policy, NULL, &v, &r) != JITI_OK) {
    jiti_result_free(&r);
    memset(note, 0, sizeof *note);
    return "!unreadable";
  }
  jiti_result_free(&r);
  jiti_Status st = jiti_form_eval_noting(S, NULL, &r, max, note);
  if (st == JITI_OK) snprintf(buf, sizeof buf, "%s", r.value);
  else snprintf(buf, sizeof buf, "!%s", r.condition_type ? r.condition_type : "?");
  jiti_result_free(&r);
  return buf;
}

/* The note of src as "FUNCTION(signature)", or "-" when none. */
static const char *note_of(jiti_State *S, const char *src, size_t max) {
  static char buf[4096];
  jiti_CallNote n;
  noted(S, src, max, &n);
  if (n.function) snprintf(buf, sizeof buf, "%s(%s)", n.function, n.signature);
  else snprintf(buf, sizeof buf, "-");
  jiti_call_note_free(&n);
  return buf;
}

int main(void) {
  jiti_State *S = jiti_open();
  /* defined before the world records: not the world's */
  CHECK_STR(check_eval(S, "(defun host-fn (x) x)"), "HOST-FN");
  jiti_world_enable(S);
  CHECK_STR(check_eval(S, "(defun area (w h) (* w h))"), "AREA");
  CHECK_STR(check_eval(S, "(defun pair (a b) (list a b))"), "PAIR");
  CHECK_STR(check_eval(S, "(defun none () :none)"), "NONE");
  CHECK_STR(check_eval(S, "(defvar *n* 0)"), "*N*");
  CHECK_STR(check_eval(S, "(defstruct point x y)"), "POINT");
  CHECK_STR(check_eval(S, "(defclass thing () ())"), "#<STANDARD-CLASS THING>");
  CHECK_STR(check_eval(S, "(defmacro twice (x) `(* 2 ,x))"), "TWICE");
  CHECK_STR(check_eval(S, "(defpackage :app (:use :cl))"), "#<PACKAGE \"APP\">");
  CHECK_STR(check_eval(S, "(defun app::run (x) x)"), "APP::RUN");
  CHECK_STR(check_eval(S, "(defstruct app::pt)"), "APP::PT");

  /* the value is the form's, the note its call's */
  jiti_CallNote n;
  CHECK_STR(noted(S, "(area 6 7)", 1024, &n), "42");
  CHECK_STR(n.function, "AREA");
  CHECK_STR(n.signature, "fixnum,fixnum");
  jiti_call_note_free(&n);
  CHECK(n.function == NULL && n.signature == NULL);

  /* arguments evaluated once each, left to right */
  CHECK_STR(note_of(S, "(pair (incf *n*) (list *n* (incf *n*)))", 1024), "PAIR(fixnum,cons)");
  CHECK_STR(check_eval(S, "*n*"), "2");
  CHECK_STR(noted(S, "(pair (incf *n*) (incf *n*))", 1024, &n), "(3 4)");
  jiti_call_note_free(&n);

  /* the classes, standard ones in lower case, others by their names */
  CHECK_STR(note_of(S, "(pair nil 'sym)", 1024), "PAIR(null,symbol)");
  CHECK_STR(note_of(S, "(pair \"s\" #\\c)", 1024), "PAIR(string,character)");
  CHECK_STR(note_of(S, "(pair 2.5 1/3)", 1024), "PAIR(single-float,ratio)");
  CHECK_STR(note_of(S, "(pair (expt 2 100) 2d0)", 1024), "PAIR(bignum,double-float)");
  CHECK_STR(note_of(S, "(pair (make-point) (make-instance 'thing))", 1024), "PAIR(POINT,THING)");
  CHECK_STR(note_of(S, "(pair (make-pt) (make-hash-table))", 1024), "PAIR(APP::PT,hash-table)");
  CHECK_STR(note_of(S, "(pair #(1) t)", 1024), "PAIR(simple-vector,symbol)");
  CHECK_STR(note_of(S, "(none)", 1024), "NONE()");
  CHECK_STR(note_of(S, "(app::run 1)", 1024), "APP::RUN(fixnum)");

  /* nothing for any other form */
  CHECK_STR(note_of(S, "(car '(1))", 1024), "-");            /* not the world's */
  CHECK_STR(note_of(S, "(+ 1 2)", 1024), "-");
  CHECK_STR(note_of(S, "(host-fn 1)", 1024), "-");
  CHECK_STR(note_of(S, "(twice 3)", 1024), "-");             /* a macro */
  CHECK_STR(note_of(S, "(progn (area 1 2))", 1024), "-");    /* not a call of it */
  CHECK_STR(note_of(S, "((lambda (x) (area x x)) 2)", 1024), "-");
  CHECK_STR(note_of(S, "42", 1024), "-");
  CHECK_STR(note_of(S, "(undefined-fn 1)", 1024), "-");
  /* a call inside the form is not the form's call: the outer one is noted */
  CHECK_STR(note_of(S, "(area (eval '(pair 1 2)) 3)", 1024), "AREA(cons,fixnum)");

  /* a failing call is noted too (the result says it failed) */
  CHECK_STR(noted(S, "(area \"a\" 1)", 1024, &n), "!TYPE-ERROR");
  CHECK_STR(n.function, "AREA");
  CHECK_STR(n.signature, "string,fixnum");
  jiti_call_note_free(&n);

  /* the bound: a name or a signature past it is not noted */
  CHECK_STR(note_of(S, "(area 1 2)", 4), "-");
  CHECK_STR(note_of(S, "(area 1 2)", 13), "AREA(fixnum,fixnum)");
  CHECK_STR(note_of(S, "(area 1 2)", 12), "-");
  CHECK_STR(note_of(S, "(app::run 1)", 8), "APP::RUN(fixnum)");
  CHECK_STR(note_of(S, "(app::run 1)", 7), "-");

  /* nothing held: refused, nothing noted */
  jiti_Result r;
  n.function = (char *)"stale";
  CHECK(jiti_form_eval_noting(S, NULL, &r, 1024, &n) == JITI_BADARG);
  CHECK(n.function == NULL);
  jiti_result_free(&r);
  /* and the watch is gone: a later evaluation notes nothing */
  CHECK_STR(check_eval(S, "(area 2 2)"), "4");

  jiti_close(S);
  return CHECK_DONE();
}
