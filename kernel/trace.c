/*
** trace.c — traced functions: the set trace and untrace change, and the
** call of a traced function the evaluator hands over.
**
** The set is a list of (function . name) in the state (S->traced), which
** the evaluator's call tests before anything else: while it is NIL a call
** costs one comparison more.  A traced function is the function object
** the name had when it was traced (a redefinition makes another object,
** untraced; a generic function stays the same object as methods are
** added).  Nothing of it is part of the world: the set lasts for one
** transaction (jiti_reset_io_syntax empties it, as it resets the reader's
** and printer's variables), so no function cell is ever changed and
** nothing needs to be stored or rolled back.
**
** The report is the library's (%trace-call in 60-env.lisp: the call and
** its values on *trace-output*); while it prints (%trace-quiet bound
** true) no call is traced, so a traced print-object method or FORMAT
** cannot recurse through it.
*/
#include "jt_eval.h"

/* The name FN is traced under, or JT_NOVALUE. */
jt_V jt_trace_name(jt_State *S, jt_V fn) {
  jt_V quiet = jt_symobj(S, JT_SYM(S, TRACE_QUIET))->value;
  if (quiet != JT_NIL && quiet != JT_UNBOUND) return JT_NOVALUE;
  for (jt_V l = S->traced; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(jt_car(l)) == fn) return jt_cdr(jt_car(l));
  return JT_NOVALUE;
}

/* A traced call: (%trace-call name function arguments) reports it and
** calls the function through %call-untraced. */
jt_V jt_trace_call(jt_State *S, jt_V name, jt_V fn, int argc, jt_V *argv) {
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, fn);
  jt_V args = jt_list_from(S, argc, argv);
  JT_PUSH(S, args);
  jt_V report = jt_symobj(S, JT_SYM(S, TRACE_CALL))->function;
  jt_V r = jt_funcall(S, report, 3, base[0], base[1], base[2]);
  S->sp = base;
  return r;
}

void jt_trace_reset(jt_State *S) {
  S->traced = JT_NIL;
  jt_call_hooks_note(S);
}

/* (%call-untraced function arguments) */
JT_FN(f_call_untraced) {
  jt_check_kernel_caller(S);
  jt_V *base = S->sp;
  size_t n = jt_list_length(S, argv[1]);
  if (base + n + 1 >= S->stack_end) jt_stack_overflow(S);
  for (jt_V l = argv[1]; jt_iscons(l); l = jt_cdr(l)) *S->sp++ = jt_car(l);
  jt_V r = jt_call_untraced(S, argv[0], (int)n, base);
  S->sp = base;
  return r;
}

/* (%traced) -> the set: a list of (function . name), latest first */
JT_FN(f_traced) { (void)argc; (void)argv; return S->traced; }

/* (%set-traced list) */
JT_FN(f_set_traced) {
  jt_check_kernel_caller(S);
  jt_list_length(S, argv[0]);
  for (jt_V l = argv[0]; jt_iscons(l); l = jt_cdr(l))
    if (!jt_iscons(jt_car(l)) || !jt_isfunction(jt_car(jt_car(l)))) jt_type_error(S, jt_car(l), JT_SYM(S, CONS));
  S->traced = argv[0];
  jt_call_hooks_note(S);
  return argv[0];
}

static const jt_Reg trace_fns[] = {
  {"%CALL-UNTRACED", f_call_untraced, 2, 2, "(%call-untraced function arguments) Call FUNCTION, not traced."},
  {"%TRACED", f_traced, 0, 0, "(%traced) The traced functions, as (function . name)."},
  {"%SET-TRACED", f_set_traced, 1, 1, "(%set-traced list) Set the traced functions."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_trace(jt_State *S) {
  jt_register(S, trace_fns);
  jt_defglobal(S, "%TRACE-QUIET", JT_NIL);   /* true while a report prints */
  jt_defglobal(S, "%TRACE-DEPTH", jt_mkfix(0));
}
