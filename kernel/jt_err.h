/*
** jt_err.h — signalling errors from C.
**
** Every runtime error is a condition object of its Common Lisp type.  These
** functions build the condition and signal it with `error` semantics
** (handlers, then the debugger hook, then an abort to the host).  None of
** them returns, but for the restartable ones below.
*/
#ifndef jt_err_h
#define jt_err_h

#include "jt_state.h"

#define JT_NORETURN __attribute__((noreturn))
#define JT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* simple-error whose report is the formatted message. */
JT_NORETURN void jt_error(jt_State *S, const char *fmt, ...) JT_PRINTF(2, 3);

/* A condition of type `type` (a symbol naming a condition type whose slots
** include format-control/format-arguments, e.g. control-error,
** program-error, reader-error) with the formatted message. */
JT_NORETURN void jt_errorc(jt_State *S, jt_V type, const char *fmt, ...)
    JT_PRINTF(3, 4);

/* type-error: `datum` is not of type `expected` (a type specifier). */
JT_NORETURN void jt_type_error(jt_State *S, jt_V datum, jt_V expected);

/* program-error for a call with a wrong number of arguments. */
JT_NORETURN void jt_arg_count_error(jt_State *S, jt_V fn, int argc);

/* unbound-variable / undefined-function (cell-error with `name`). */
JT_NORETURN void jt_unbound_variable(jt_State *S, jt_V name);
JT_NORETURN void jt_undefined_function(jt_State *S, jt_V name);

/* The same errors with the standard restarts (the names, order and reports
** are SBCL's); each returns what the signalling site goes on with once a
** restart is chosen, or does not return (a handler or the debugger exited).
** Before the prelude is loaded, and for a kernel-internal name, they signal
** without restarts.
**   jt_unbound_variable_value: the value to use for NAME (CONTINUE retries
**     the read, USE-VALUE gives one, STORE-VALUE sets the variable too).
**   jt_undefined_function_value: the function to use for NAME, as
**     fdefinition would return it (CONTINUE retries, USE-VALUE gives one).
**   jt_undefined_function_callee: the function a call of NAME calls
**     instead, with the call's arguments (CONTINUE: NAME's definition by
**     then; USE-VALUE: a given function; RETURN-VALUE and RETURN-NOTHING:
**     one that ignores them and returns the values given, or none).  The
**     call site goes on as if NAME had named it, so the fast path of calls
**     keeps its shape.
**   jt_unbound_slot_value: signals COND, the unbound-slot of INSTANCE's slot
**     NAME; slot-value's value (USE-VALUE gives one, STORE-VALUE sets the
**     slot too). */
jt_V jt_unbound_variable_value(jt_State *S, jt_V name) __attribute__((cold));
jt_V jt_undefined_function_value(jt_State *S, jt_V name) __attribute__((cold));
jt_V jt_undefined_function_callee(jt_State *S, jt_V name) __attribute__((cold));
jt_V jt_unbound_slot_value(jt_State *S, jt_V cond, jt_V instance, jt_V name)
    __attribute__((cold));

/* arithmetic-error subtypes: `type` e.g. JT_SYM(S, DIVISION_BY_ZERO). */
JT_NORETURN void jt_arith_error(jt_State *S, jt_V type, jt_V operation,
                                jt_V operands);

/* A condition of `type` (READER-ERROR, END-OF-FILE) with the whole report
** `msg` (read.c words it with the line and column) and :position `pos`,
** the byte offset in the text; :stream `stream` (the stream read, for
** stream-error-stream) unless it is NIL. */
JT_NORETURN void jt_reader_error(jt_State *S, jt_V type, size_t pos, const char *msg, jt_V stream);

/* Signal an existing condition object with `error` semantics. */
JT_NORETURN void jt_signal_error(jt_State *S, jt_V condition);

#endif
