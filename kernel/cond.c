/*
** cond.c — conditions, handlers, restarts, the debugger hook, and the
** resource limits (which are conditions too).
**
** Handlers live in clusters on S->handlers; signalling walks them from the
** innermost outward and runs each applicable handler with only the
** clusters *outside* its own active.  A handler that returns declines.
** Restarts live in clusters on S->restarts; a restart is active exactly
** while its cluster is on the chain, so leaving the establishing form makes
** it inactive without any bookkeeping.
**
** An error that no handler takes goes to the debugger: the host's hook is
** called with the stack intact (nothing has unwound); it may evaluate repairs
** and then picks a restart or aborts.  Without a hook the error aborts to
** the host entry point.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"

/* ----------------------------------------------------- standard types */

static const struct { const char *name; const char *parents[2]; const char *slots[3]; } std_conditions[] = {
  {"CONDITION", {NULL}, {"FORMAT-CONTROL", "FORMAT-ARGUMENTS", NULL}},
  {"SERIOUS-CONDITION", {"CONDITION"}, {NULL}},
  {"ERROR", {"SERIOUS-CONDITION"}, {NULL}},
  {"WARNING", {"CONDITION"}, {NULL}},
  {"STYLE-WARNING", {"WARNING"}, {NULL}},
  {"SIMPLE-CONDITION", {"CONDITION"}, {NULL}},
  {"SIMPLE-ERROR", {"SIMPLE-CONDITION", "ERROR"}, {NULL}},
  {"SIMPLE-WARNING", {"SIMPLE-CONDITION", "WARNING"}, {NULL}},
  {"TYPE-ERROR", {"ERROR"}, {"DATUM", "EXPECTED-TYPE", NULL}},
  {"SIMPLE-TYPE-ERROR", {"SIMPLE-CONDITION", "TYPE-ERROR"}, {NULL}},
  {"PROGRAM-ERROR", {"ERROR"}, {NULL}},
  {"CONTROL-ERROR", {"ERROR"}, {NULL}},
  {"CELL-ERROR", {"ERROR"}, {"NAME", NULL}},
  {"UNBOUND-VARIABLE", {"CELL-ERROR"}, {NULL}},
  {"UNDEFINED-FUNCTION", {"CELL-ERROR"}, {NULL}},
  {"UNBOUND-SLOT", {"CELL-ERROR"}, {"INSTANCE", NULL}},
  {"ARITHMETIC-ERROR", {"ERROR"}, {"OPERATION", "OPERANDS", NULL}},
  {"DIVISION-BY-ZERO", {"ARITHMETIC-ERROR"}, {NULL}},
  {"FLOATING-POINT-OVERFLOW", {"ARITHMETIC-ERROR"}, {NULL}},
  {"FLOATING-POINT-UNDERFLOW", {"ARITHMETIC-ERROR"}, {NULL}},
  {"FLOATING-POINT-INEXACT", {"ARITHMETIC-ERROR"}, {NULL}},
  {"FLOATING-POINT-INVALID-OPERATION", {"ARITHMETIC-ERROR"}, {NULL}},
  {"STORAGE-CONDITION", {"SERIOUS-CONDITION"}, {NULL}},
  {"PARSE-ERROR", {"ERROR"}, {NULL}},
  {"STREAM-ERROR", {"ERROR"}, {"STREAM", NULL}},
  {"FILE-ERROR", {"ERROR"}, {"PATHNAME", NULL}},
  {"READER-ERROR", {"PARSE-ERROR", "STREAM-ERROR"}, {"POSITION", NULL}},
  {"END-OF-FILE", {"STREAM-ERROR"}, {"POSITION", NULL}},
  {"PACKAGE-ERROR", {"ERROR"}, {"PACKAGE", NULL}},
  {"PRINT-NOT-READABLE", {"ERROR"}, {"OBJECT", NULL}},
  {"LOCKED-SYMBOL-ERROR", {"PACKAGE-ERROR"}, {NULL}},
  {"RESOURCE-LIMIT-EXCEEDED", {"STORAGE-CONDITION"}, {"LIMIT", NULL}},
  {"FUEL-EXHAUSTED", {"RESOURCE-LIMIT-EXCEEDED"}, {NULL}},
  {"DEPTH-EXCEEDED", {"RESOURCE-LIMIT-EXCEEDED"}, {NULL}},
  {"HEAP-EXHAUSTED", {"RESOURCE-LIMIT-EXCEEDED"}, {NULL}},
  {"OUTPUT-EXCEEDED", {"RESOURCE-LIMIT-EXCEEDED"}, {NULL}},
  {NULL, {NULL}, {NULL}}
};

static void define_std_conditions(jt_State *S) {
  for (int i = 0; std_conditions[i].name; i++) {
    jt_V *base = S->sp;
    jt_V name = jt_intern(S, std_conditions[i].name);
    JT_PUSH(S, JT_NIL);  /* parents */
    JT_PUSH(S, JT_NIL);  /* slots */
    for (int p = 1; p >= 0; p--)
      if (std_conditions[i].parents[p])
        base[0] = jt_cons(S, jt_intern(S, std_conditions[i].parents[p]), base[0]);
    for (int k = 2; k >= 0; k--) {
      const char *sn = std_conditions[i].slots[k];
      if (!sn) continue;
      jt_V sym = jt_intern(S, sn);
      jt_V key = jt_intern_keyword(S, sn);
      jt_V t = jt_list(S, 3, sym, key, JT_NIL);
      base[1] = jt_cons(S, t, base[1]);
    }
    jt_define_layout(S, name, base[0], base[1], JT_NIL, true);
    S->sp = base;
  }
}

bool jt_is_condition(jt_V v) {
  return jt_isstruct(v) && (jt_layout_(jt_struct_(v)->layout)->h.flags & JT_LAYOUT_CONDITION);
}

jt_V jt_make_condition(jt_State *S, jt_V type, int n2, const jt_V *initargs) {
  if (jt_is(type, JT_TCLASS)) type = jt_class_(type)->name;   /* a condition class */
  jt_V l = jt_find_layout(S, type);
  if (l == JT_NIL || !(jt_layout_(l)->h.flags & JT_LAYOUT_CONDITION)) {
    char *n = jt_print_cstr(S, type, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf, "%s does not name a condition type", n);
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  return jt_instance_from_initargs(S, l, n2, initargs);
}

static bool cond_typep(jt_State *S, jt_V cond, jt_V type) {
  jt_V l = jt_find_layout(S, type);
  return l != JT_NIL && jt_subtypep_layout(jt_struct_(cond)->layout, l);
}

static jt_V slot(jt_State *S, jt_V cond, jt_V name) {
  jt_V v = jt_slot_value(S, cond, name);
  return v == JT_NOVALUE ? JT_NIL : v;
}

/* The report function or string from the nearest layout that has one. */
static jt_V find_report(jt_V layout) {
  jt_Layout *L = jt_layout_(layout);
  if (L->report != JT_NIL) return L->report;
  for (jt_V p = L->parents; jt_iscons(p); p = jt_cdr(p)) {
    jt_V r = find_report(jt_car(p));
    if (r != JT_NIL) return r;
  }
  return JT_NIL;
}

static void print_to(jt_State *S, jt_V stream, jt_V v, bool escape) {
  jt_print(S, stream, v, escape);
}

static void report_unbounded(jt_State *S, jt_V stream, jt_V cond);

/* A report's break: a newline and `indent` spaces when laid out in lines,
** else a space. */
static void line_to(jt_State *S, jt_V stream, bool lines, size_t indent) {
  if (!lines) {
    jt_stream_putc(S, stream, ' ');
    return;
  }
  jt_stream_putc(S, stream, '\n');
  for (size_t i = 0; i < indent; i++) jt_stream_putc(S, stream, ' ');
}

/* Reports print the objects involved, which may be circular or huge (the
** datum of a type-error on a circular list): they are printed with
** *print-circle* on and length and level bounded unless the program chose
** bounds itself. */
void jt_condition_report(jt_State *S, jt_V stream, jt_V cond) {
  size_t nbind = S->nbind;
  JT_PUSH(S, stream);
  JT_PUSH(S, cond);
  jt_bind(S, JT_SYM(S, PRINT_CIRCLE), JT_T);
  if (jt_sym_(JT_SYM(S, PRINT_LENGTH))->value == JT_NIL) jt_bind(S, JT_SYM(S, PRINT_LENGTH), jt_mkfix(50));
  if (jt_sym_(JT_SYM(S, PRINT_LEVEL))->value == JT_NIL) jt_bind(S, JT_SYM(S, PRINT_LEVEL), jt_mkfix(8));
  report_unbounded(S, S->sp[-2], S->sp[-1]);
  jt_unbind_to(S, nbind);
  JT_POP(S, 2);
}

static void report_unbounded(jt_State *S, jt_V stream, jt_V cond) {
  jt_V *base = S->sp;
  JT_PUSH(S, stream);
  JT_PUSH(S, cond);
  jt_V report = find_report(jt_struct_(cond)->layout);
  if (jt_isstring(report)) {
    jt_stream_write(S, stream, jt_str_(report)->chars, jt_str_(report)->len);
    S->sp = base;
    return;
  }
  if (report != JT_NIL) {
    jt_funcall(S, report, 2, cond, stream);
    S->sp = base;
    return;
  }
  jt_V control = slot(S, cond, JT_SYM(S, FORMAT_CONTROL));
  if (control != JT_NIL) {
    jt_V args = slot(S, cond, JT_SYM(S, FORMAT_ARGUMENTS));
    JT_PUSH(S, args);
    int n = 0;
    jt_Walk w = jt_walk(args);
    for (jt_V l = args; jt_iscons(l); l = jt_walk_next(S, &w, l)) { JT_PUSH(S, jt_car(l)); n++; }
    if (jt_isstring(control)) jt_format(S, stream, control, n, S->sp - n);
    else print_to(S, stream, control, false);
    S->sp = base;
    return;
  }
  if (cond_typep(S, cond, JT_SYM(S, TYPE_ERROR))) {
    /* as SBCL reports it: under *print-pretty*, on four lines indented
    ** from where the report starts (programs print it so) */
    jt_V pretty = jt_symobj(S, JT_SYM(S, PRINT_PRETTY))->value;
    bool lines = pretty != JT_NIL && pretty != JT_UNBOUND && jt_is(stream, JT_TSTREAM);
    size_t col = lines ? jt_stream_column(S, stream) : 0;
    jt_stream_puts(S, stream, "The value");
    line_to(S, stream, lines, col + 2);
    if (lines) {
      /* a datum laid out on several lines, or too long for its line, is
      ** followed by an empty line, as in SBCL: print it apart, from the
      ** column it starts at */
      jt_V ss = jt_make_string_stream(S);
      JT_PUSH(S, ss);
      jt_stream_(ss)->column = col + 2;
      print_to(S, ss, slot(S, cond, JT_SYM(S, DATUM)), true);
      jt_V text = jt_stream_contents(S, ss, false);
      JT_PUSH(S, text);
      jt_String *t = jt_str_(text);
      jt_stream_write(S, stream, t->chars, t->len);
      bool multi = false;
      for (size_t i = 0; i < jt_str_(text)->len && !multi; i++) multi = jt_str_(text)->chars[i] == '\n';
      jt_V margin = jt_symobj(S, JT_SYM(S, PRINT_RIGHT_MARGIN))->value;
      size_t width = jt_isfix(margin) && jt_fixval(margin) > 0 ? (size_t)jt_fixval(margin) : 80;
      if (multi || col + 2 + jt_str_(text)->len > width) jt_stream_putc(S, stream, '\n');
      JT_POP(S, 2);
    } else {
      print_to(S, stream, slot(S, cond, JT_SYM(S, DATUM)), true);
    }
    line_to(S, stream, lines, col);
    jt_stream_puts(S, stream, "is not of type");
    line_to(S, stream, lines, col + 2);
    print_to(S, stream, slot(S, cond, JT_SYM(S, EXPECTED_TYPE)), true);
  } else if (cond_typep(S, cond, JT_SYM(S, UNBOUND_VARIABLE)) &&
             jt_refusal_report(S, slot(S, cond, JT_SYM(S, NAME)), false, stream)) {
    /* a standard name left out: why */
  } else if (cond_typep(S, cond, JT_SYM(S, UNDEFINED_FUNCTION)) &&
             jt_refusal_report(S, slot(S, cond, JT_SYM(S, NAME)), true, stream)) {
  } else if (cond_typep(S, cond, JT_SYM(S, UNBOUND_VARIABLE))) {
    jt_stream_puts(S, stream, "The variable ");
    print_to(S, stream, slot(S, cond, JT_SYM(S, NAME)), true);
    jt_stream_puts(S, stream, " is unbound.");
  } else if (cond_typep(S, cond, JT_SYM(S, UNDEFINED_FUNCTION))) {
    jt_stream_puts(S, stream, "The function ");
    print_to(S, stream, slot(S, cond, JT_SYM(S, NAME)), true);
    jt_stream_puts(S, stream, " is undefined.");
  } else if (cond_typep(S, cond, JT_SYM(S, ARITHMETIC_ERROR))) {
    /* worded as SBCL words it: programs print these reports */
    jt_stream_puts(S, stream, "arithmetic error ");
    print_to(S, stream, jt_layout_(jt_struct_(cond)->layout)->name, true);
    jt_stream_puts(S, stream, " signalled");
    jt_V op = slot(S, cond, JT_SYM(S, OPERATION));
    if (op != JT_NIL) {
      jt_stream_puts(S, stream, "\nOperation was ");
      jt_V form = jt_cons(S, op, slot(S, cond, JT_SYM(S, OPERANDS)));
      print_to(S, stream, form, true);
      jt_stream_puts(S, stream, ".");
    }
  } else {
    jt_stream_puts(S, stream, "Condition ");
    print_to(S, stream, jt_layout_(jt_struct_(cond)->layout)->name, true);
    jt_stream_puts(S, stream, " was signalled.");
  }
  S->sp = base;
}

/* --------------------------------------------------------------- signal */

/* While a cluster's clauses are tested and its handlers run, only the
** outer clusters are active: an error signalled by the test itself (an
** unknown type name in a clause) or by a handler goes outward, so signalling
** cannot re-enter the cluster that raised it.  Nested signals still consume
** C stack in handlers that signal again, so the C stack budget bounds them
** like any other recursion. */
void jt_signal(jt_State *S, jt_V cond) {
  jt_check_cstack(S);
  JT_PUSH(S, cond);
  /* *break-on-signals*: BREAK first, with it bound to NIL (a condition the
  ** break itself signals does not break again) */
  jt_V bos = jt_symobj(S, JT_SYM(S, BREAK_ON_SIGNALS))->value;
  if (bos != JT_NIL && bos != JT_UNBOUND && jt_typep(S, cond, bos)) {
    size_t nb = S->nbind;
    jt_bind(S, JT_SYM(S, BREAK_ON_SIGNALS), JT_NIL);
    jt_V fmt = jt_string_from_cstr(S, "~A~%(*BREAK-ON-SIGNALS* is ~S)");
    JT_PUSH(S, fmt);
    jt_funcall(S, jt_fdefinition(S, JT_SYM(S, BREAK)), 3, fmt, cond, bos);
    JT_POP(S, 1);
    jt_unbind_to(S, nb);
  }
  jt_Handlers *saved = S->handlers;
  for (jt_Handlers *h = saved; h; h = h->prev) {
    S->handlers = h->prev;
    jt_Walk w = jt_walk(h->list);
    for (jt_V l = h->list; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
      jt_V b = jt_car(l);
      if (!jt_iscons(b) || !jt_typep(S, cond, jt_car(b))) continue;
      jt_funcall(S, jt_cdr(b), 1, cond);
    }
  }
  S->handlers = saved;
  JT_POP(S, 1);
}

void jt_signal_error(jt_State *S, jt_V cond) {
  JT_PUSH(S, cond);
  jt_signal(S, cond);
  jt_invoke_debugger(S, cond);
}

/* ------------------------------------------------ errors signalled from C */

static jt_V message_args(jt_State *S, const char *msg) {
  jt_V s = jt_string_from_cstr(S, msg);
  return jt_list(S, 1, s);
}

/* A condition of `type` whose report is `msg` (format-control "~A" with the
** message as its argument), plus the nextra initargs of `extra` (key and
** value pairs, at most two; rooted here before anything is allocated). */
static jt_V message_condition(jt_State *S, jt_V type, const char *msg, int nextra, const jt_V *extra) {
  jt_V *base = S->sp;
  jt_V args[8];
  for (int i = 0; i < nextra; i++) JT_PUSH(S, args[4 + i] = extra[i]);
  args[0] = JT_SYM(S, K_FORMAT_CONTROL);
  args[1] = jt_string_from_cstr(S, "~A");
  JT_PUSH(S, args[1]);
  args[2] = JT_SYM(S, K_FORMAT_ARGUMENTS);
  args[3] = message_args(S, msg);
  JT_PUSH(S, args[3]);
  jt_V cond = jt_make_condition(S, type, 4 + nextra, args);
  S->sp = base;
  return cond;
}

static JT_NORETURN void error_with_message(jt_State *S, jt_V type, const char *msg) {
  jt_signal_error(S, message_condition(S, type, msg, 0, NULL));
}

void jt_error(jt_State *S, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  error_with_message(S, JT_SYM(S, SIMPLE_ERROR), buf);
}

void jt_errorc(jt_State *S, jt_V type, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  error_with_message(S, type, buf);
}

void jt_type_error(jt_State *S, jt_V datum, jt_V expected) {
  jt_V args[4] = {JT_SYM(S, K_DATUM), datum, JT_SYM(S, K_EXPECTED_TYPE), expected};
  jt_V *base = S->sp;
  JT_PUSH(S, datum);
  JT_PUSH(S, expected);
  jt_V cond = jt_make_condition(S, JT_SYM(S, TYPE_ERROR), 4, args);
  S->sp = base;
  jt_signal_error(S, cond);
}

void jt_arg_count_error(jt_State *S, jt_V fn, int argc) {
  char *name = jt_print_cstr(S, fn, true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf, "invalid number of arguments (%d) to %s", argc, name);
  free(name);
  error_with_message(S, JT_SYM(S, PROGRAM_ERROR), S->msgbuf);
}

static JT_NORETURN void cell_error(jt_State *S, jt_V type, jt_V name) {
  JT_PUSH(S, name);
  jt_V args[2] = {JT_SYM(S, K_NAME), name};
  jt_V cond = jt_make_condition(S, type, 2, args);
  JT_POP(S, 1);
  jt_signal_error(S, cond);
}

void jt_unbound_variable(jt_State *S, jt_V name) {
  cell_error(S, JT_SYM(S, UNBOUND_VARIABLE), name);
}

void jt_undefined_function(jt_State *S, jt_V name) {
  cell_error(S, JT_SYM(S, UNDEFINED_FUNCTION), name);
}

/* The standard restarts of these errors are established by the prelude's
** helpers (30-conditions.lisp): the error is the slow path, so the
** evaluator's reads and calls stay as they are and only call out here.
** Before the prelude has defined a helper, and for a kernel-internal name
** (which user code must not learn exists), the error has no restarts. */
static jt_V restart_helper(jt_State *S, const char *helper, jt_V name) {
  JT_PUSH(S, name);
  jt_V f = jt_sym_(jt_intern(S, helper))->function;
  JT_POP(S, 1);
  return jt_isptr(f) && !jt_is_macro(f) && !jt_is_internal(name) ? f : JT_NIL;
}

jt_V jt_unbound_variable_value(jt_State *S, jt_V name) {
  jt_V h = restart_helper(S, "%UNBOUND-VARIABLE-VALUE", name);
  if (h == JT_NIL) jt_unbound_variable(S, name);
  return jt_funcall(S, h, 1, name);
}

jt_V jt_undefined_function_value(jt_State *S, jt_V name) {
  jt_V h = restart_helper(S, "%UNDEFINED-FUNCTION-VALUE", name);
  if (h == JT_NIL) jt_undefined_function(S, name);
  return jt_funcall(S, h, 1, name);
}

jt_V jt_unbound_slot_value(jt_State *S, jt_V cond, jt_V instance, jt_V name) {
  JT_PUSH(S, cond);
  jt_V h = restart_helper(S, "%UNBOUND-SLOT-VALUE", name);
  JT_POP(S, 1);
  if (h == JT_NIL) jt_signal_error(S, cond);
  return jt_funcall(S, h, 3, cond, instance, name);
}

jt_V jt_undefined_function_callee(jt_State *S, jt_V name) {
  jt_V h = restart_helper(S, "%UNDEFINED-FUNCTION-CALLEE", name);
  if (h == JT_NIL) jt_undefined_function(S, name);
  return jt_funcall(S, h, 1, name);
}

void jt_arith_error(jt_State *S, jt_V type, jt_V operation, jt_V operands) {
  jt_V *base = S->sp;
  JT_PUSH(S, operation);
  JT_PUSH(S, operands);
  jt_V args[4] = {JT_SYM(S, K_OPERATION), operation, JT_SYM(S, K_OPERANDS), operands};
  jt_V cond = jt_make_condition(S, type, 4, args);
  S->sp = base;
  jt_signal_error(S, cond);
}

void jt_reader_error(jt_State *S, jt_V type, size_t pos, const char *msg, jt_V stream) {
  jt_V extra[4] = {JT_SYM(S, K_POSITION), jt_mkfix(pos), JT_SYM(S, K_STREAM), stream};
  jt_signal_error(S, message_condition(S, type, msg, stream == JT_NIL ? 2 : 4, extra));
}

/* --------------------------------------------------------------- limits */

static const struct { int sym; const char *what; } limit_info[] = {
  [JT_LIMIT_FUEL] = {JT_S_FUEL_EXHAUSTED, "evaluation step budget (fuel) of %llu steps exhausted"},
  [JT_LIMIT_DEPTH] = {JT_S_DEPTH_EXCEEDED, "call depth limit of %llu exceeded"},
  [JT_LIMIT_HEAP] = {JT_S_HEAP_EXHAUSTED, "heap limit of %llu bytes exhausted"},
  [JT_LIMIT_OUTPUT] = {JT_S_OUTPUT_EXCEEDED, "output limit of %llu characters exceeded"},
};

/* Grace given to handlers after a limit trips, so that a handler can run;
** a second trip of the same limit in the same call aborts outright, so the
** limit cannot be escaped by catching its condition. */
#define FUEL_GRACE 20000

void jt_limit_exceeded(jt_State *S, int which) {
  bool hard = (S->limit_tripped >> which) & 1;
  S->limit_tripped |= (uint8_t)(1u << which);
  unsigned long long limit = 0;
  switch (which) {
    case JT_LIMIT_FUEL: limit = S->limits.fuel; S->fuel_left = FUEL_GRACE; break;
    case JT_LIMIT_DEPTH: limit = S->limits.depth; break;
    case JT_LIMIT_HEAP: limit = S->limits.heap; break;
    case JT_LIMIT_OUTPUT: limit = S->limits.output; break;
  }
  char msg[200];
  if (which == JT_LIMIT_DEPTH && (S->limits.depth == 0 || S->depth < (int)S->limits.depth))
    snprintf(msg, sizeof msg, "control stack exhausted (call depth %d)", S->depth);
  else
    snprintf(msg, sizeof msg, limit_info[which].what, limit);
  bool saved = S->in_limit;
  S->in_limit = true;  /* building the condition may allocate past the limit */
  jt_V extra[2] = {JT_SYM(S, K_LIMIT), jt_make_integer(S, (int64_t)limit)};
  jt_V cond = message_condition(S, S->sym[limit_info[which].sym], msg, 2, extra);
  S->in_limit = saved;
  if (hard) jt_abort_to_top(S, JITI_LIMIT, cond);
  JT_PUSH(S, cond);
  jt_signal(S, cond);
  jt_abort_to_top(S, JITI_LIMIT, cond);
}

/* ------------------------------------------------------------- restarts */

static bool restart_applicable(jt_State *S, jt_Restart *r, jt_V cond) {
  /* given a condition: a restart associated with conditions must be
  ** associated with this one */
  if (cond != JT_NOVALUE && cond != JT_NIL && r->conditions != JT_NIL) {
    bool found = false;
    for (jt_V l = r->conditions; jt_iscons(l) && !found; l = jt_cdr(l)) found = jt_car(l) == cond;
    if (!found) return false;
  }
  if (r->test == JT_NIL) return true;
  return jt_funcall(S, r->test, 1, cond == JT_NOVALUE ? JT_NIL : cond) != JT_NIL;
}

static bool restart_active(jt_State *S, jt_V r) {
  for (jt_Restarts *c = S->restarts; c; c = c->prev) {
    jt_Walk w = jt_walk(c->list);
    for (jt_V l = c->list; jt_iscons(l); l = jt_walk_next(S, &w, l))
      if (jt_car(l) == r) return true;
  }
  return false;
}

/* Active applicable restarts, innermost first. */
static jt_V compute_restarts(jt_State *S, jt_V cond) {
  jt_V *base = S->sp;
  JT_PUSH(S, cond);
  int n = 0;
  for (jt_Restarts *c = S->restarts; c; c = c->prev) {
    jt_Walk w = jt_walk(c->list);
    for (jt_V l = c->list; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
      jt_V r = jt_car(l);
      JT_PUSH(S, r);
      if (restart_applicable(S, (jt_Restart *)r, cond)) n++;
      else JT_POP(S, 1);
    }
  }
  jt_V list = jt_list_from(S, n, base + 1);
  S->sp = base;
  return list;
}

void jt_restart_report(jt_State *S, jt_V stream, jt_V rv) {
  jt_Restart *r = (jt_Restart *)rv;
  if (jt_isstring(r->report)) jt_stream_write(S, stream, jt_str_(r->report)->chars, jt_str_(r->report)->len);
  else if (r->report != JT_NIL) jt_funcall(S, r->report, 1, stream);
  else if (r->name != JT_NIL) jt_print(S, stream, r->name, true);
  else jt_stream_puts(S, stream, "(unnamed restart)");
}

static jt_V find_restart(jt_State *S, jt_V id, jt_V cond) {
  if (jt_is(id, JT_TRESTART)) return restart_active(S, id) ? id : JT_NIL;
  jt_V list = compute_restarts(S, cond);
  for (jt_V l = list; jt_iscons(l); l = jt_cdr(l))
    if (((jt_Restart *)jt_car(l))->name == id && id != JT_NIL) return jt_car(l);
  return JT_NIL;
}

/* An active restart that the running code may invoke: see the floor set
** around the debugger hook. */
static jt_V invocable_restart(jt_State *S, jt_V id) {
  jt_V r = find_restart(S, id, JT_NOVALUE);
  if (r == JT_NIL || jt_o(r)->aux < S->restart_floor) {
    char *n = jt_print_cstr(S, id, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             r == JT_NIL ? "restart %s is not active"
                         : "restart %s belongs to the paused computation: it is chosen by resuming the pause, "
                           "not invoked from a repair", n);
    free(n);
    jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "%s", S->msgbuf);
  }
  return r;
}

static jt_V invoke_restart(jt_State *S, jt_V id, int argc, jt_V *argv) {
  jt_V r = invocable_restart(S, id);
  return jt_apply(S, ((jt_Restart *)r)->function, argc, argv);
}

/* ------------------------------------------------------------- debugger */

static char *report_cstr(jt_State *S, jt_V cond, size_t max) {
  return jt_print_cstr(S, cond, false, max);
}

/* Protected evaluation of a Lisp source string (the restart's argument
** expression); returns false if it signalled. */
static bool eval_args(jt_State *S, const char *src, jt_V *out) {
  /* An error here refuses the decision; it must not look like a new pause,
  ** so the hook is off while the arguments are evaluated. */
  jiti_DebuggerHook hook = S->debugger_hook;
  S->debugger_hook = NULL;
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jt_V v = jt_eval_source(S, src, strlen(src), false);
    jt_jmp_pop(S, &j);
    S->debugger_hook = hook;
    *out = v;
    return true;
  }
  S->debugger_hook = hook;
  return false;
}

/* The program's *debugger-hook* first (called with the condition and
** itself, with the variable bound to NIL); when it returns, the host's
** debugger.  A resource limit reaches neither: it cannot be escaped. */
void jt_invoke_debugger(jt_State *S, jt_V cond) {
  JT_PUSH(S, cond);
  if (jt_is_condition(cond) && cond_typep(S, cond, JT_SYM(S, RESOURCE_LIMIT)))
    jt_abort_to_top(S, JITI_LIMIT, cond);
  jt_V hook = jt_symobj(S, JT_SYM(S, DEBUGGER_HOOK))->value;
  if (hook != JT_NIL && hook != JT_UNBOUND) {
    JT_PUSH(S, hook);
    size_t nb = S->nbind;
    jt_bind(S, JT_SYM(S, DEBUGGER_HOOK), JT_NIL);
    jt_funcall(S, hook, 2, S->sp[-2], S->sp[-1]);
    jt_unbind_to(S, nb);
    JT_POP(S, 1);
  }
  jt_enter_debugger(S, S->sp[-1]);
}

/* The host's debugger (a pause), or, with none, the end of the
** evaluation with the condition as its error. */
void jt_enter_debugger(jt_State *S, jt_V cond) {
  JT_PUSH(S, cond);
  if (jt_is_condition(cond) && cond_typep(S, cond, JT_SYM(S, RESOURCE_LIMIT)))
    jt_abort_to_top(S, JITI_LIMIT, cond);
  if (!S->debugger_hook) jt_abort_to_top(S, JITI_ERROR, cond);
  const char *decision_error = NULL;
  char errbuf[300];
  for (;;) {
    jt_V restarts = compute_restarts(S, cond);
    JT_PUSH(S, restarts);
    int n = 0;
    for (jt_V l = restarts; jt_iscons(l); l = jt_cdr(l)) n++;
    jiti_RestartInfo *info = calloc((size_t)n + 1, sizeof *info);
    int i = 0;
    for (jt_V l = restarts; jt_iscons(l); l = jt_cdr(l), i++) {
      jt_Restart *r = (jt_Restart *)jt_car(l);
      info[i].id = r->h.aux;
      info[i].name = r->name != JT_NIL ? strdup(jt_symname(S, r->name)) : strdup("");
      jt_V s = jt_make_string_stream(S);
      JT_PUSH(S, s);
      jt_restart_report(S, s, (jt_V)r);
      jt_V str = jt_stream_contents(S, s, true);
      info[i].report = jt_string_utf8(S, str, NULL);
      JT_POP(S, 1);
      info[i].lambda_list = r->lambda_list == JT_T ? strdup("") : r->lambda_list == JT_NIL ? strdup("()")
                                                   : jt_print_cstr(S, r->lambda_list, true, 400);
    }
    jiti_Pause p;
    memset(&p, 0, sizeof p);
    p.condition = cond;
    p.condition_type = jt_is_condition(cond)
        ? jt_symname(S, jt_layout_(jt_struct_(cond)->layout)->name) : "ERROR";
    char *report = report_cstr(S, cond, 2000);
    char *bt = jt_backtrace(S, JITI_FRAME_MAX, 8000);
    jt_PauseFrames pf;
    pf.serial = ++S->pause_serial;
    pf.n = jt_frames_collect(S, pf.ci, JITI_FRAME_MAX);
    pf.desc = jt_frames_describe(S, pf.ci, pf.n);
    jiti_Frame *frames = pf.desc;
    p.report = report;
    p.nrestarts = n;
    p.restarts = info;
    p.backtrace = bt;
    p.depth = S->pause_depth + 1;
    p.decision_error = decision_error;
    p.nframes = frames ? pf.n : 0;
    p.frames = frames;
    jiti_Decision d;
    memset(&d, 0, sizeof d);
    d.action = JITI_DECIDE_ABORT;
    /* Evaluations nested in the hook (repairs) may invoke the restarts they
    ** establish themselves, never those of the paused computation: those
    ** are chosen by the hook's decision, below.  A pause in them lists
    ** only the calls they made (S->pause_ci); a repair evaluated in a frame
    ** finds this pause's (S->pause_frames). */
    uint32_t floor = S->restart_floor;
    jt_CallInfo *outer_ci = S->pause_ci;
    jt_PauseFrames *outer_frames = S->pause_frames;
    S->restart_floor = S->next_restart_id + 1;
    S->pause_ci = S->ci;
    S->pause_frames = &pf;
    S->pause_depth++;
    S->debugger_hook(S, &p, &d, S->debugger_ud);
    S->pause_depth--;
    S->pause_ci = outer_ci;
    S->pause_frames = outer_frames;
    S->restart_floor = floor;
    free(report);
    free(bt);
    jt_frames_free(pf.desc, pf.n);
    for (i = 0; i < n; i++) {
      free((char *)info[i].name);
      free((char *)info[i].report);
      free((char *)info[i].lambda_list);
    }
    free(info);
    if (d.action == JITI_DECIDE_RETURN || d.action == JITI_DECIDE_RESTART_FRAME) {
      JT_POP(S, 1);
      jt_Jmp *target = NULL;
      decision_error = jt_frame_target(S, &pf, d.frame, &target, errbuf, sizeof errbuf);
      if (decision_error) continue;
      jt_V values = JT_NIL;
      if (d.action == JITI_DECIDE_RETURN && d.args && !eval_args(S, d.args, &values)) {
        char *m = report_cstr(S, S->pending, 200);
        snprintf(errbuf, sizeof errbuf, "the values to return failed: %s", m);
        free(m);
        decision_error = errbuf;
        continue;
      }
      int count = 0;
      jt_V tail = values;
      for (; jt_iscons(tail) && count <= JT_MV_LIMIT; tail = jt_cdr(tail)) count++;
      if (tail != JT_NIL) {  /* not a list, dotted, or too long (circular) */
        snprintf(errbuf, sizeof errbuf, "the values to return must evaluate to a list of at most %d values",
                 JT_MV_LIMIT);
        decision_error = errbuf;
        continue;
      }
      jt_frame_unwind(S, target, d.action == JITI_DECIDE_RESTART_FRAME, values);
    }
    if (d.action != JITI_DECIDE_RESTART) jt_abort_to_top(S, JITI_ABORTED, cond);
    /* find the chosen restart among the ones offered */
    jt_V chosen = JT_NIL;
    for (jt_V l = restarts; jt_iscons(l); l = jt_cdr(l))
      if (((jt_Restart *)jt_car(l))->h.aux == d.restart_id && restart_active(S, jt_car(l)))
        chosen = jt_car(l);
    JT_POP(S, 1);
    if (chosen == JT_NIL) {
      snprintf(errbuf, sizeof errbuf, "no active restart has id %u", d.restart_id);
      decision_error = errbuf;
      continue;
    }
    JT_PUSH(S, chosen);
    jt_V args = JT_NIL;
    if (d.args && !eval_args(S, d.args, &args)) {
      char *m = report_cstr(S, S->pending, 200);
      snprintf(errbuf, sizeof errbuf, "the restart arguments failed: %s", m);
      free(m);
      decision_error = errbuf;
      JT_POP(S, 1);
      continue;
    }
    if (!jt_islist(args)) {
      snprintf(errbuf, sizeof errbuf, "the restart arguments must evaluate to a list");
      decision_error = errbuf;
      JT_POP(S, 1);
      continue;
    }
    JT_PUSH(S, args);
    int argc = 0;
    jt_V *argv = S->sp;
    jt_Walk w = jt_walk(args);
    for (jt_V l = args; jt_iscons(l); l = jt_walk_next(S, &w, l)) { JT_PUSH(S, jt_car(l)); argc++; }
    jt_apply(S, ((jt_Restart *)chosen)->function, argc, argv);
    /* The restart returned normally: the debugger continues. */
    S->sp = argv - 2;
    decision_error = "the restart returned without transferring control";
  }
}

/* ----------------------------------------------------------- primitives */

/* Coerce an error/signal designator: condition, type name + initargs, or
** format control + arguments. */
static jt_V coerce_condition(jt_State *S, int argc, jt_V *argv, jt_V default_type) {
  jt_V datum = argv[0];
  if (jt_is_condition(datum)) {
    /* a condition takes no arguments: they would be silently lost */
    if (argc > 1) jt_type_error(S, jt_list_from(S, argc - 1, argv + 1), JT_SYM(S, NULL_));
    return datum;
  }
  if (jt_issymbol(datum) && datum != JT_NIL)
    return jt_make_condition(S, datum, argc - 1, argv + 1);
  if (jt_isstring(datum) || jt_isfunction(datum)) {
    jt_V args = jt_list_from(S, argc - 1, argv + 1);
    JT_PUSH(S, args);
    jt_V ia[4] = {JT_SYM(S, K_FORMAT_CONTROL), datum, JT_SYM(S, K_FORMAT_ARGUMENTS), args};
    jt_V c = jt_make_condition(S, default_type, 4, ia);
    JT_POP(S, 1);
    return c;
  }
  jt_type_error(S, datum, jt_list(S, 4, JT_SYM(S, OR), JT_SYM(S, CONDITION), JT_SYM(S, SYMBOL), JT_SYM(S, STRING)));
}

JT_FN(f_error) {
  jt_V c = coerce_condition(S, argc, argv, JT_SYM(S, SIMPLE_ERROR));
  jt_signal_error(S, c);
}

JT_FN(f_signal) {
  jt_V c = coerce_condition(S, argc, argv, JT_SYM(S, SIMPLE_CONDITION));
  JT_PUSH(S, c);
  jt_signal(S, c);
  JT_POP(S, 1);
  return JT_NIL;
}

JT_FN(f_coerce_condition) {
  jt_V type = argv[0];
  return coerce_condition(S, argc - 1, argv + 1, type);
}

JT_FN(f_invoke_debugger) {
  if (!jt_is_condition(argv[0])) jt_type_error(S, argv[0], JT_SYM(S, CONDITION));
  jt_invoke_debugger(S, argv[0]);
}

/* (%break condition) -> NIL: BREAK's entry into the host's debugger, past
** *debugger-hook*.  With no debugger (jiti run), the break is reported on
** *error-output* and the program continues, as if the continue restart
** had been chosen. */
JT_FN(f_break) {
  if (!jt_is_condition(argv[0])) jt_type_error(S, argv[0], JT_SYM(S, CONDITION));
  if (S->debugger_hook) jt_enter_debugger(S, argv[0]);
  jt_V out = jt_symobj(S, JT_SYM(S, ERROR_OUTPUT))->value;
  if (!jt_is(out, JT_TSTREAM)) return JT_NIL;
  JT_PUSH(S, out);
  jt_V fmt = jt_string_from_cstr(S, "~&Break: ~A~%(no debugger: continuing)~%");
  JT_PUSH(S, fmt);
  jt_funcall(S, jt_fdefinition(S, jt_intern(S, "FORMAT")), 3, out, fmt, argv[0]);
  JT_POP(S, 2);
  return JT_NIL;
}

JT_FN(f_make_condition) {
  return jt_make_condition(S, argv[0], argc - 1, argv + 1);
}

/* (%handler-bind bindings thunk): bindings is ((type . function) ...), a
** proper list.  The expansion's list is fresh, but the helper can be
** called with any list, which the program could change afterwards, even
** make circular: so a signal walks them with a cycle check too, and takes
** nothing of them on trust (a copy here would cost each handler-case a
** cons per clause). */
JT_FN(f_handler_bind) {
  jt_list_count(S, argv[0]);
  jt_Handlers h = {S->handlers, argv[0]};
  S->handlers = &h;
  jt_V r = jt_funcall(S, argv[1], 0);
  S->handlers = h.prev;
  return r;
}

/* (%restart-bind restarts thunk): the restarts are kept as a copy of the
** list, checked once, since the lookups take its elements for restarts. */
JT_FN(f_restart_bind) {
  jt_Restarts c = {S->restarts, jt_list_copy(S, argv[0])};
  for (jt_V l = c.list; jt_iscons(l); l = jt_cdr(l))
    if (!jt_is(jt_car(l), JT_TRESTART)) jt_type_error(S, jt_car(l), JT_SYM(S, RESTART));
  S->restarts = &c;
  jt_V r = jt_funcall(S, argv[1], 0);
  S->restarts = c.prev;
  return r;
}

/* (%make-restart name function report test interactive lambda-list) */
JT_FN(f_make_restart) {
  jt_Restart *r = (jt_Restart *)jt_alloc(S, JT_TRESTART, sizeof(jt_Restart));
  r->h.aux = ++S->next_restart_id;
  r->name = argv[0];
  r->function = argv[1];
  r->report = argc > 2 ? argv[2] : JT_NIL;
  r->test = argc > 3 ? argv[3] : JT_NIL;
  r->interactive = argc > 4 ? argv[4] : JT_NIL;
  r->conditions = JT_NIL;
  r->lambda_list = argc > 5 ? argv[5] : JT_T;
  return (jt_V)r;
}

/* (%restart-associate restarts condition add) with-condition-restarts:
** associate each of RESTARTS with CONDITION (ADD true) or undo it. */
JT_FN(f_restart_associate) {
  JT_UNUSED_ARGS;
  jt_V cond = argv[1];
  jt_list_count(S, argv[0]);   /* the program's list: refused if circular, before any change */
  for (jt_V l = argv[0]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V rv = jt_car(l);
    if (!jt_is(rv, JT_TRESTART)) jt_type_error(S, rv, JT_SYM(S, RESTART));
    jt_Restart *r = (jt_Restart *)rv;
    if (argv[2] != JT_NIL) {
      jt_V c = jt_cons(S, cond, r->conditions);
      JT_SET(S, r, r->conditions, c);
    } else {   /* remove one occurrence */
      jt_V prev = JT_NIL;
      for (jt_V m = r->conditions; jt_iscons(m); prev = m, m = jt_cdr(m))
        if (jt_car(m) == cond) {
          if (prev == JT_NIL) JT_SET(S, r, r->conditions, jt_cdr(m));
          else JT_SET(S, prev, jt_cons_(prev)->cdr, jt_cdr(m));
          break;
        }
    }
  }
  return JT_NIL;
}

JT_FN(f_compute_restarts) {
  return compute_restarts(S, argc > 0 ? argv[0] : JT_NOVALUE);
}

JT_FN(f_find_restart) {
  return find_restart(S, argv[0], argc > 1 ? argv[1] : JT_NOVALUE);
}

JT_FN(f_invoke_restart) {
  return invoke_restart(S, argv[0], argc - 1, argv + 1);
}

JT_FN(f_invoke_restart_interactively) {
  jt_V r = invocable_restart(S, argv[0]);
  JT_PUSH(S, r);
  jt_V args = JT_NIL;
  if (((jt_Restart *)r)->interactive != JT_NIL) args = jt_funcall(S, ((jt_Restart *)r)->interactive, 0);
  JT_PUSH(S, args);
  int n = 0;
  jt_V *argv2 = S->sp;
  jt_Walk w = jt_walk(args);
  for (jt_V l = args; jt_iscons(l); l = jt_walk_next(S, &w, l)) { JT_PUSH(S, jt_car(l)); n++; }
  return jt_apply(S, ((jt_Restart *)r)->function, n, argv2);
}

JT_FN(f_restart_name) {
  if (!jt_is(argv[0], JT_TRESTART)) jt_type_error(S, argv[0], JT_SYM(S, RESTART));
  return ((jt_Restart *)argv[0])->name;
}

JT_FN(f_restart_report) {
  if (!jt_is(argv[0], JT_TRESTART)) jt_type_error(S, argv[0], JT_SYM(S, RESTART));
  jt_restart_report(S, jt_output_stream(S, argv[1]), argv[0]);
  return JT_NIL;
}

uint32_t jiti_restart_watermark(jiti_State *S) { return S->next_restart_id; }

JT_FN(f_restart_id) {
  if (!jt_is(argv[0], JT_TRESTART)) jt_type_error(S, argv[0], JT_SYM(S, RESTART));
  return jt_mkfix(jt_o(argv[0])->aux);
}

/* Does a layout's initarg entry (a keyword, NIL, or a list of keywords)
** name key? */
static bool initarg_names(jt_V entry, jt_V key) {
  if (entry == key) return true;
  for (; jt_iscons(entry); entry = jt_cdr(entry))
    if (jt_car(entry) == key) return true;
  return false;
}

/* (%define-condition name parents slots report defaults): defaults, the
** :default-initargs as (key . thunk) pairs, become the initforms of the
** slots (own or inherited) those initargs fill. */
JT_FN(f_define_condition) {
  jt_check_kernel_caller(S);  /* defines a type without recording it */
  jt_V name = jt_check_symbol(S, argv[0]);
  jt_check_type_definable(S, name, "a condition type");
  jt_V old = jt_find_layout(S, name);
  if (old != JT_NIL && !(jt_layout_(old)->h.flags & JT_LAYOUT_CONDITION))
    jt_error(S, "%s names a structure type", jt_symname(S, name));
  jt_meta_type_replaced(S, name);
  jt_V parents = argv[1] == JT_NIL ? jt_list(S, 1, JT_SYM(S, CONDITION)) : argv[1];
  JT_PUSH(S, parents);
  jt_V layout = jt_define_layout(S, name, parents, argv[2], argv[3], true);
  JT_PUSH(S, layout);
  jt_Layout *L = jt_layout_(layout);
  for (jt_V d = argc > 4 ? argv[4] : JT_NIL; jt_iscons(d); d = jt_cdr(d)) {
    jt_V pair = jt_car(d);
    if (!jt_iscons(pair)) continue;
    for (uint32_t i = 0; i < L->nslots; i++)
      if (initarg_names(jt_vec_(L->initargs)->items[i], jt_car(pair)))
        JT_SET(S, jt_vec_(L->initforms), jt_vec_(L->initforms)->items[i], jt_cdr(pair));
  }
  JT_POP(S, 2);
  return name;
}

static jt_V cond_slot(jt_State *S, jt_V c, jt_V name, jt_V type) {
  if (!jt_is_condition(c)) jt_type_error(S, c, type);
  return slot(S, c, name);
}

JT_FN(f_fc) { return cond_slot(S, argv[0], JT_SYM(S, FORMAT_CONTROL), JT_SYM(S, SIMPLE_CONDITION)); }
JT_FN(f_fa) { return cond_slot(S, argv[0], JT_SYM(S, FORMAT_ARGUMENTS), JT_SYM(S, SIMPLE_CONDITION)); }
JT_FN(f_datum) { return cond_slot(S, argv[0], JT_SYM(S, DATUM), JT_SYM(S, TYPE_ERROR)); }
JT_FN(f_expected) { return cond_slot(S, argv[0], JT_SYM(S, EXPECTED_TYPE), JT_SYM(S, TYPE_ERROR)); }
JT_FN(f_cell_name) { return cond_slot(S, argv[0], JT_SYM(S, NAME), JT_SYM(S, CELL_ERROR)); }
JT_FN(f_arith_op) { return cond_slot(S, argv[0], JT_SYM(S, OPERATION), JT_SYM(S, ARITHMETIC_ERROR)); }
JT_FN(f_arith_operands) { return cond_slot(S, argv[0], JT_SYM(S, OPERANDS), JT_SYM(S, ARITHMETIC_ERROR)); }
JT_FN(f_stream_error_stream) { return cond_slot(S, argv[0], JT_SYM(S, STREAM), JT_SYM(S, STREAM_ERROR)); }
JT_FN(f_package_error_package) { return cond_slot(S, argv[0], jt_intern(S, "PACKAGE"), JT_SYM(S, PACKAGE_ERROR)); }
JT_FN(f_print_not_readable_object) { return cond_slot(S, argv[0], jt_intern(S, "OBJECT"), JT_SYM(S, PRINT_NOT_READABLE)); }
JT_FN(f_file_error_pathname) { return cond_slot(S, argv[0], jt_intern(S, "PATHNAME"), jt_intern(S, "FILE-ERROR")); }

JT_FN(f_backtrace) {
  char *bt = jt_backtrace(S, JITI_FRAME_MAX, 8000);
  jt_V s = jt_string_from_cstr(S, bt);
  free(bt);
  return s;
}

static const jt_Reg cond_fns[] = {
  {"ERROR", f_error, 1, -1, "(error datum &rest arguments) Signal an error; enter the debugger if unhandled."},
  {"SIGNAL", f_signal, 1, -1, "(signal datum &rest arguments) Signal a condition; return NIL if unhandled."},
  {"%COERCE-TO-CONDITION", f_coerce_condition, 2, -1, "(%coerce-to-condition default-type datum &rest args)"},
  {"INVOKE-DEBUGGER", f_invoke_debugger, 1, 1, "(invoke-debugger condition) Enter the debugger."},
  {"%BREAK", f_break, 1, 1, "(%break condition) Enter the host's debugger, or report and continue."},
  {"MAKE-CONDITION", f_make_condition, 1, -1, "(make-condition type &rest initargs) Make a condition."},
  {"%HANDLER-BIND", f_handler_bind, 2, 2, "(%handler-bind bindings thunk) Run THUNK with handlers."},
  {"%RESTART-BIND", f_restart_bind, 2, 2, "(%restart-bind restarts thunk) Run THUNK with restarts."},
  {"%RESTART-ASSOCIATE", f_restart_associate, 3, 3,
   "(%restart-associate restarts condition add) Associate RESTARTS with CONDITION, or undo it."},
  {"%MAKE-RESTART", f_make_restart, 2, 6,
   "(%make-restart name function &optional report test interactive lambda-list)"},
  {"COMPUTE-RESTARTS", f_compute_restarts, 0, 1, "(compute-restarts &optional condition) Active restarts, innermost first."},
  {"FIND-RESTART", f_find_restart, 1, 2, "(find-restart identifier &optional condition) An active restart or NIL."},
  {"INVOKE-RESTART", f_invoke_restart, 1, -1, "(invoke-restart restart &rest arguments) Transfer to a restart."},
  {"INVOKE-RESTART-INTERACTIVELY", f_invoke_restart_interactively, 1, 1, "(invoke-restart-interactively restart)"},
  {"RESTART-NAME", f_restart_name, 1, 1, "(restart-name restart) The restart's name."},
  {"%RESTART-REPORT", f_restart_report, 2, 2, "(%restart-report restart stream) Write the restart's report."},
  {"%RESTART-ID", f_restart_id, 1, 1, "(%restart-id restart) The restart's numeric identity."},
  {"%DEFINE-CONDITION", f_define_condition, 4, 5, "(%define-condition name parents slots report &optional defaults)"},
  {"SIMPLE-CONDITION-FORMAT-CONTROL", f_fc, 1, 1, "(simple-condition-format-control c)"},
  {"SIMPLE-CONDITION-FORMAT-ARGUMENTS", f_fa, 1, 1, "(simple-condition-format-arguments c)"},
  {"TYPE-ERROR-DATUM", f_datum, 1, 1, "(type-error-datum c)"},
  {"TYPE-ERROR-EXPECTED-TYPE", f_expected, 1, 1, "(type-error-expected-type c)"},
  {"CELL-ERROR-NAME", f_cell_name, 1, 1, "(cell-error-name c)"},
  {"ARITHMETIC-ERROR-OPERATION", f_arith_op, 1, 1, "(arithmetic-error-operation c)"},
  {"ARITHMETIC-ERROR-OPERANDS", f_arith_operands, 1, 1, "(arithmetic-error-operands c)"},
  {"STREAM-ERROR-STREAM", f_stream_error_stream, 1, 1, "(stream-error-stream c)"},
  {"PACKAGE-ERROR-PACKAGE", f_package_error_package, 1, 1, "(package-error-package c)"},
  {"PRINT-NOT-READABLE-OBJECT", f_print_not_readable_object, 1, 1, "(print-not-readable-object c)"},
  {"FILE-ERROR-PATHNAME", f_file_error_pathname, 1, 1, "(file-error-pathname c)"},
  {"%BACKTRACE", f_backtrace, 0, 0, "(%backtrace) The current call stack as a string."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_cond(jt_State *S) {
  define_std_conditions(S);
  jt_register(S, cond_fns);
  jt_defglobal(S, "*DEBUGGER-HOOK*", JT_NIL);
  jt_defglobal(S, "*BREAK-ON-SIGNALS*", JT_NIL);
}
