/*
** clos.c — the CLOS protocol: the roots, the built-in classes and generic
** functions with their default methods, the Lisp-visible primitives, and
** the hooks typep, type-of, subtypep and the printer use (see jt_clos.h).
**
** The default methods are C primitives in locked method objects.  The
** printer asks jt_clos_print_object whether anything but the default
** print-object method applies before calling the generic function, so
** printing ordinary data never goes through dispatch.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_clos.h"

#define CLS(v) jt_class_(v)

void jt_open_generic(jt_State *S);   /* generic.c */

/* ------------------------------------------------------------- helpers */

bool jt_clos_memq(jt_V x, jt_V l) {
  for (; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(l) == x) return true;
  return false;
}

bool jt_clos_proper_list(jt_V l) {
  size_t n = 0;
  for (; jt_iscons(l); l = jt_cdr(l))
    if (++n > 100000) return false;
  return l == JT_NIL;
}

bool jt_clos_function_name_p(jt_State *S, jt_V n) {
  if (jt_iscons(n))
    return jt_car(n) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(n)) && jt_cdr(jt_cdr(n)) == JT_NIL &&
           jt_issymbol(jt_car(jt_cdr(n))) && jt_car(jt_cdr(n)) != JT_NIL;
  return jt_issymbol(n) && n != JT_NIL && n != JT_T && !jt_iskeyword(n);
}

void jt_clos_form_error(jt_State *S, const char *what, jt_V form) {
  char *f = jt_print_cstr(S, form, true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf, "%s: %s", what, f);
  free(f);
  jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
}

/* ------------------------------------------------------ built-in classes */

/* Direct superclasses of the built-in classes, in JT_CLOS_BUILTIN_CLASSES
** order (a class's superclasses come before it). */
static const struct { const char *supers[3]; int kind; } builtin_classes[] = {
  /* T */ {{NULL}, JT_CLASS_BUILTIN},
  /* STANDARD-OBJECT */ {{"T"}, JT_CLASS_STANDARD},
  /* FUNCTION */ {{"T"}, JT_CLASS_BUILTIN},
  /* GENERIC-FUNCTION */ {{"FUNCTION"}, JT_CLASS_BUILTIN},
  /* STANDARD-GENERIC-FUNCTION */ {{"GENERIC-FUNCTION"}, JT_CLASS_BUILTIN},
  /* METHOD */ {{"STANDARD-OBJECT"}, JT_CLASS_BUILTIN},
  /* STANDARD-METHOD */ {{"METHOD"}, JT_CLASS_BUILTIN},
  /* CLASS */ {{"STANDARD-OBJECT"}, JT_CLASS_BUILTIN},
  /* BUILT-IN-CLASS */ {{"CLASS"}, JT_CLASS_BUILTIN},
  /* STANDARD-CLASS */ {{"CLASS"}, JT_CLASS_BUILTIN},
  /* STRUCTURE-CLASS */ {{"CLASS"}, JT_CLASS_BUILTIN},
  /* CONDITION-CLASS */ {{"CLASS"}, JT_CLASS_BUILTIN},
  /* FORWARD-REFERENCED-CLASS */ {{"CLASS"}, JT_CLASS_BUILTIN},
  /* NUMBER */ {{"T"}, JT_CLASS_BUILTIN},
  /* REAL */ {{"NUMBER"}, JT_CLASS_BUILTIN},
  /* RATIONAL */ {{"REAL"}, JT_CLASS_BUILTIN},
  /* INTEGER */ {{"RATIONAL"}, JT_CLASS_BUILTIN},
  /* FIXNUM */ {{"INTEGER"}, JT_CLASS_BUILTIN},
  /* BIGNUM */ {{"INTEGER"}, JT_CLASS_BUILTIN},
  /* RATIO */ {{"RATIONAL"}, JT_CLASS_BUILTIN},
  /* FLOAT */ {{"REAL"}, JT_CLASS_BUILTIN},
  /* DOUBLE-FLOAT */ {{"FLOAT"}, JT_CLASS_BUILTIN},
  /* SINGLE-FLOAT */ {{"FLOAT"}, JT_CLASS_BUILTIN},
  /* CHARACTER */ {{"T"}, JT_CLASS_BUILTIN},
  /* SYMBOL */ {{"T"}, JT_CLASS_BUILTIN},
  /* SEQUENCE */ {{"T"}, JT_CLASS_BUILTIN},
  /* LIST */ {{"SEQUENCE"}, JT_CLASS_BUILTIN},
  /* CONS */ {{"LIST"}, JT_CLASS_BUILTIN},
  /* NULL */ {{"SYMBOL", "LIST"}, JT_CLASS_BUILTIN},
  /* ARRAY */ {{"T"}, JT_CLASS_BUILTIN},
  /* VECTOR */ {{"ARRAY", "SEQUENCE"}, JT_CLASS_BUILTIN},
  /* STRING */ {{"VECTOR"}, JT_CLASS_BUILTIN},
  /* SIMPLE-VECTOR */ {{"VECTOR"}, JT_CLASS_BUILTIN},
  /* HASH-TABLE */ {{"T"}, JT_CLASS_BUILTIN},
  /* STREAM */ {{"T"}, JT_CLASS_BUILTIN},
  /* RESTART */ {{"T"}, JT_CLASS_BUILTIN},
  /* STRUCTURE-OBJECT */ {{"T"}, JT_CLASS_STRUCTURE},
  /* the rest of CLHS figure 4-8; some have no instances inside a world */
  /* COMPLEX */ {{"NUMBER"}, JT_CLASS_BUILTIN},
  /* BIT-VECTOR */ {{"VECTOR"}, JT_CLASS_BUILTIN},
  /* PACKAGE */ {{"T"}, JT_CLASS_BUILTIN},
  /* RANDOM-STATE */ {{"T"}, JT_CLASS_BUILTIN},
  /* READTABLE */ {{"T"}, JT_CLASS_BUILTIN},
  /* PATHNAME */ {{"T"}, JT_CLASS_BUILTIN},
  /* LOGICAL-PATHNAME */ {{"PATHNAME"}, JT_CLASS_BUILTIN},
  /* METHOD-COMBINATION */ {{"T"}, JT_CLASS_BUILTIN},
  /* STRING-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
  /* BROADCAST-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
  /* CONCATENATED-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
  /* ECHO-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
  /* FILE-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
  /* SYNONYM-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
  /* TWO-WAY-STREAM */ {{"STREAM"}, JT_CLASS_BUILTIN},
};

static const char *const builtin_class_names[] = {
#define JT_X(id, name) name,
  JT_CLOS_BUILTIN_CLASSES(JT_X)
#undef JT_X
};

static jt_V class_designator(jt_State *S, jt_V c) {
  if (jt_is(c, JT_TCLASS)) return c;
  if (jt_issymbol(c)) {
    jt_V k = jt_find_class(S, c);
    if (k != JT_NIL) return k;
    char *n = jt_print_cstr(S, c, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf, "there is no class named %s", n);
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  jt_type_error(S, c, CLS(JT_CLASS(S, CLASS))->name);
}

/* ------------------------------------------------------ default methods */

/* The initargs of a call: argv[from..argc), checked for an even count. */
static int initargs_count(jt_State *S, int argc, int from) {
  int n2 = argc - from;
  if (n2 < 0) n2 = 0;
  if (n2 % 2) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "odd number of initialization arguments");
  return n2;
}

/* Call generic function gf with fixed arguments a[0..na) then the
** initargs. */
static jt_V call_with_initargs(jt_State *S, jt_V gf, int na, const jt_V *a, int n2, const jt_V *initargs) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  for (int i = 0; i < na; i++) JT_PUSH(S, a[i]);
  for (int i = 0; i < n2; i++) JT_PUSH(S, initargs[i]);
  jt_V r = jt_apply(S, base[0], na + n2, base + 1);
  S->sp = base;
  return r;
}

/* (make-instance class &rest initargs) */
JT_FN(m_make_instance) {
  jt_V cls = class_designator(S, argv[0]);
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  int n2 = initargs_count(S, argc, 1);
  jt_V *ia = S->sp;
  for (int i = 0; i < n2; i++) JT_PUSH(S, argv[1 + i]);
  n2 += jt_class_default_initargs(S, base[0], n2, ia);
  jt_class_check_initargs(S, base[0], JT_GENERIC(S, INITIALIZE_INSTANCE), n2, ia);
  jt_V inst = jt_instance_make(S, base[0]);
  JT_PUSH(S, inst);
  call_with_initargs(S, JT_GENERIC(S, INITIALIZE_INSTANCE), 1, S->sp - 1, n2, ia);
  inst = S->sp[-1];
  S->sp = base;
  return inst;
}

/* (initialize-instance instance &rest initargs) */
JT_FN(m_initialize_instance) {
  int n2 = initargs_count(S, argc, 1);
  jt_V a[2] = {argv[0], JT_T};
  call_with_initargs(S, JT_GENERIC(S, SHARED_INITIALIZE), 2, a, n2, argv + 1);
  return argv[0];
}

/* (reinitialize-instance instance &rest initargs) */
JT_FN(m_reinitialize_instance) {
  int n2 = initargs_count(S, argc, 1);
  jt_class_check_initargs(S, jt_class_of(S, argv[0]), JT_GENERIC(S, REINITIALIZE_INSTANCE), n2, argv + 1);
  jt_V a[2] = {argv[0], JT_NIL};
  call_with_initargs(S, JT_GENERIC(S, SHARED_INITIALIZE), 2, a, n2, argv + 1);
  return argv[0];
}

/* (shared-initialize instance slot-names &rest initargs) */
JT_FN(m_shared_initialize) {
  int n2 = initargs_count(S, argc, 2);
  if (argv[1] != JT_T && !jt_islist(argv[1])) jt_type_error(S, argv[1], JT_SYM(S, LIST));
  jt_instance_initialize(S, argv[0], argv[1], n2, argv + 2);
  return argv[0];
}

/* (update-instance-for-redefined-class instance added discarded plist &rest initargs) */
JT_FN(m_update_redefined) {
  int n2 = initargs_count(S, argc, 4);
  jt_V a[2] = {argv[0], argv[1]};
  call_with_initargs(S, JT_GENERIC(S, SHARED_INITIALIZE), 2, a, n2, argv + 4);
  return argv[0];
}

/* (update-instance-for-different-class previous current &rest initargs):
** the slots current has and previous had not get their initforms */
JT_FN(m_update_different) {
  int n2 = initargs_count(S, argc, 2);
  jt_V *base = S->sp;
  jt_V prev = jt_class_slot_names(S, jt_class_of(S, argv[0]), true);
  JT_PUSH(S, prev);
  jt_V cur = jt_class_slot_names(S, jt_class_of(S, argv[1]), true);
  JT_PUSH(S, cur);
  JT_PUSH(S, JT_NIL);
  for (jt_V l = base[1]; jt_iscons(l); l = jt_cdr(l)) {
    bool had = false;
    for (jt_V p = base[0]; jt_iscons(p) && !had; p = jt_cdr(p)) had = jt_car(p) == jt_car(l);
    if (!had) base[2] = jt_cons(S, jt_car(l), base[2]);
  }
  jt_V a[2] = {argv[1], base[2]};
  call_with_initargs(S, JT_GENERIC(S, SHARED_INITIALIZE), 2, a, n2, argv + 2);
  S->sp = base;
  return argv[1];
}

/* (change-class instance new-class &rest initargs) */
JT_FN(m_change_class) {
  int n2 = initargs_count(S, argc, 2);
  jt_V cls = class_designator(S, argv[1]);
  JT_PUSH(S, cls);
  jt_class_check_initargs(S, cls, JT_GENERIC(S, UPDATE_FOR_DIFFERENT), n2, argv + 2);
  jt_V r = jt_instance_change_class(S, argv[0], S->sp[-1], n2, argv + 2);
  JT_POP(S, 1);
  return r;
}

/* (print-object object stream): the printer's own representation */
JT_FN(m_print_object) {
  jt_print_default(S, argv[1], argv[0]);
  return argv[0];
}

/* (describe-object object stream), in SBCL's layout for instances and
** structures. */
static void describe_slots(jt_State *S, jt_V stream, jt_V obj) {
  jt_V *base = S->sp;
  JT_PUSH(S, stream);
  JT_PUSH(S, obj);
  jt_V cls = jt_class_of(S, obj);
  JT_PUSH(S, cls);
  jt_V all = jt_class_slot_names(S, cls, false);
  JT_PUSH(S, all);                                   /* base[3] */
  jt_V inst = jt_class_slot_names(S, cls, true);
  JT_PUSH(S, inst);                                  /* base[4] */
  size_t width = 30, nall = 0;
  for (jt_V l = base[3]; jt_iscons(l); l = jt_cdr(l), nall++) {
    size_t n = strlen(jt_symname(S, jt_car(l)));
    if (n > width) width = n;
  }
  if (nall == 0) {
    jt_stream_puts(S, base[0], "No slots.\n");
    S->sp = base;
    return;
  }
  jt_stream_puts(S, base[0], "\n");
  for (int pass = 0; pass < 2; pass++) {
    /* :class slots first, as SBCL lists them */
    bool header = false;
    for (jt_V l = base[3]; jt_iscons(l); l = jt_cdr(l)) {
      bool local = false;
      for (jt_V k = base[4]; jt_iscons(k) && !local; k = jt_cdr(k)) local = jt_car(k) == jt_car(l);
      if (local != (pass == 1)) continue;
      if (!header) {
        jt_stream_puts(S, base[0], pass ? "Slots with :INSTANCE allocation:\n" : "Slots with :CLASS allocation:\n");
        header = true;
      }
      JT_PUSH(S, l);
      jt_stream_puts(S, base[0], "  ");
      jt_princ(S, base[0], jt_car(l));
      for (size_t k = strlen(jt_symname(S, jt_car(l))); k < width; k++) jt_stream_putc(S, base[0], ' ');
      jt_stream_puts(S, base[0], " = ");
      jt_V v = jt_slot_boundp(S, base[1], jt_car(S->sp[-1])) ? jt_slot_get(S, base[1], jt_car(S->sp[-1])) : JT_UNBOUND;
      if (v == JT_UNBOUND) jt_stream_puts(S, base[0], "#<unbound slot>");
      else jt_print(S, base[0], v, true);
      jt_stream_puts(S, base[0], "\n");
      l = S->sp[-1];
      JT_POP(S, 1);
    }
  }
  S->sp = base;
}

JT_FN(m_describe_object) {
  jt_V stream = jt_output_stream(S, argv[1]);
  JT_PUSH(S, stream);
  jt_V obj = argv[0];
  jt_stream_fresh_line(S, stream);
  jt_print(S, stream, obj, true);
  jt_stream_puts(S, stream, "\n  [");
  jt_V tn;
  if (jt_is(obj, JT_TINSTANCE)) tn = jt_string_from_cstr(S, "standard-object");
  else if (jt_isstruct(obj) && !jt_is_condition(obj)) tn = jt_string_from_cstr(S, "structure-object");
  else if (jt_is_condition(obj)) tn = jt_string_from_cstr(S, "condition");
  else {
    jt_V t = jt_type_of(S, obj);
    char *n = jt_print_cstr(S, t, false, 200);
    for (char *p = n; *p; p++) if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    tn = jt_string_from_cstr(S, n);
    free(n);
  }
  jt_princ(S, S->sp[-1], tn);
  jt_stream_puts(S, S->sp[-1], "]\n");
  if (jt_is(argv[0], JT_TINSTANCE) || jt_isstruct(argv[0])) describe_slots(S, S->sp[-1], argv[0]);
  JT_POP(S, 1);
  return jt_values(S, 0, NULL);
}

static JT_NORETURN void call_error(jt_State *S, const char *what, jt_V gf, jt_V extra, int argc, jt_V *argv) {
  jt_V args = jt_list_from(S, argc, argv);
  JT_PUSH(S, args);
  char *g = jt_print_cstr(S, gf, true, 300);
  char *a = jt_print_cstr(S, args, true, 600);
  char *e = extra != JT_NIL ? jt_print_cstr(S, extra, true, 300) : NULL;
  if (e)
    snprintf(S->msgbuf, sizeof S->msgbuf, "%s %s when called from method %s with arguments %s.", what, g, e, a);
  else
    snprintf(S->msgbuf, sizeof S->msgbuf, "%s %s when called with arguments %s.", what, g, a);
  free(g); free(a); free(e);
  jt_error(S, "%s", S->msgbuf);
}

/* (no-applicable-method gf &rest args) */
JT_FN(m_no_applicable_method) {
  call_error(S, "There is no applicable method for the generic function", argv[0], JT_NIL, argc - 1, argv + 1);
}

/* (no-next-method gf method &rest args) */
JT_FN(m_no_next_method) {
  call_error(S, "There is no next method for the generic function", argv[0], argv[1], argc - 2, argv + 2);
}

/* (slot-missing class object slot-name operation &optional new-value) */
JT_FN(m_slot_missing) {
  char *o = jt_print_cstr(S, argv[1], true, 300);
  char *n = jt_print_cstr(S, argv[2], true, 200);
  const char *op = argv[3] == jt_intern(S, "SETF") ? "set" : argv[3] == JT_CSYM(S, SLOT_BOUNDP) ? "test"
                 : argv[3] == JT_CSYM(S, SLOT_MAKUNBOUND) ? "unbind" : "read";
  snprintf(S->msgbuf, sizeof S->msgbuf, "When attempting to %s the slot's value, the slot %s is missing from the object %s.", op, n, o);
  free(o);
  free(n);
  jt_error(S, "%s", S->msgbuf);
}

/* (slot-unbound class instance slot-name) */
JT_FN(m_slot_unbound) {
  char *o = jt_print_cstr(S, argv[1], true, 300);
  char *n = jt_print_cstr(S, argv[2], true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf, "The slot %s is unbound in the object %s.", n, o);
  free(o);
  free(n);
  jt_V args[8] = {JT_SYM(S, K_NAME), argv[2], jt_intern_keyword(S, "INSTANCE"), argv[1],
                  JT_SYM(S, K_FORMAT_CONTROL), JT_NIL, JT_SYM(S, K_FORMAT_ARGUMENTS), JT_NIL};
  jt_V *base = S->sp;
  args[5] = jt_string_from_cstr(S, "~A");
  JT_PUSH(S, args[5]);
  jt_V msg = jt_string_from_cstr(S, S->msgbuf);
  JT_PUSH(S, msg);
  args[7] = jt_list(S, 1, msg);
  JT_PUSH(S, args[7]);
  jt_V c = jt_make_condition(S, JT_SYM(S, UNBOUND_SLOT), 8, args);
  S->sp = base;
  return jt_unbound_slot_value(S, c, argv[1], argv[2]);
}

/* ------------------------------------------------------ built-in generics */

typedef struct GenericDef {
  const char *name;
  const char *lambda_list;   /* read at start-up */
  const char *specializers[4];
  const char *method_lambda_list;
  jt_CFn fn;
} GenericDef;

static const GenericDef builtin_generics[] = {
  {"MAKE-INSTANCE", "(CLASS &REST INITARGS &KEY &ALLOW-OTHER-KEYS)", {"T"}, "(CLASS &REST INITARGS)", m_make_instance},
  {"INITIALIZE-INSTANCE", "(INSTANCE &REST INITARGS &KEY &ALLOW-OTHER-KEYS)", {"STANDARD-OBJECT"},
   "(INSTANCE &REST INITARGS)", m_initialize_instance},
  {"REINITIALIZE-INSTANCE", "(INSTANCE &REST INITARGS &KEY &ALLOW-OTHER-KEYS)", {"STANDARD-OBJECT"},
   "(INSTANCE &REST INITARGS)", m_reinitialize_instance},
  {"SHARED-INITIALIZE", "(INSTANCE SLOT-NAMES &REST INITARGS &KEY &ALLOW-OTHER-KEYS)", {"STANDARD-OBJECT", "T"},
   "(INSTANCE SLOT-NAMES &REST INITARGS)", m_shared_initialize},
  {"UPDATE-INSTANCE-FOR-REDEFINED-CLASS",
   "(INSTANCE ADDED-SLOTS DISCARDED-SLOTS PROPERTY-LIST &REST INITARGS &KEY &ALLOW-OTHER-KEYS)",
   {"STANDARD-OBJECT", "T", "T", "T"}, "(INSTANCE ADDED-SLOTS DISCARDED-SLOTS PROPERTY-LIST &REST INITARGS)",
   m_update_redefined},
  {"UPDATE-INSTANCE-FOR-DIFFERENT-CLASS", "(PREVIOUS CURRENT &REST INITARGS &KEY &ALLOW-OTHER-KEYS)",
   {"STANDARD-OBJECT", "STANDARD-OBJECT"}, "(PREVIOUS CURRENT &REST INITARGS)", m_update_different},
  {"CHANGE-CLASS", "(INSTANCE NEW-CLASS &REST INITARGS &KEY &ALLOW-OTHER-KEYS)", {"STANDARD-OBJECT", "T"},
   "(INSTANCE NEW-CLASS &REST INITARGS)", m_change_class},
  {"PRINT-OBJECT", "(OBJECT STREAM)", {"T", "T"}, "(OBJECT STREAM)", m_print_object},
  {"DESCRIBE-OBJECT", "(OBJECT STREAM)", {"T", "T"}, "(OBJECT STREAM)", m_describe_object},
  {"NO-APPLICABLE-METHOD", "(GENERIC-FUNCTION &REST FUNCTION-ARGUMENTS)", {"T"},
   "(GENERIC-FUNCTION &REST FUNCTION-ARGUMENTS)", m_no_applicable_method},
  {"NO-NEXT-METHOD", "(GENERIC-FUNCTION METHOD &REST ARGS)", {"T", "T"}, "(GENERIC-FUNCTION METHOD &REST ARGS)",
   m_no_next_method},
  {"SLOT-MISSING", "(CLASS OBJECT SLOT-NAME OPERATION &OPTIONAL NEW-VALUE)", {"T", "T", "T", "T"},
   "(CLASS OBJECT SLOT-NAME OPERATION &OPTIONAL NEW-VALUE)", m_slot_missing},
  {"SLOT-UNBOUND", "(CLASS INSTANCE SLOT-NAME)", {"T", "T", "T"}, "(CLASS INSTANCE SLOT-NAME)", m_slot_unbound},
};

static jt_V read_cstr(jt_State *S, const char *src) {
  jt_Reader R;
  jt_reader_init(&R, src, strlen(src));
  return jt_read(S, &R);
}

static void define_builtin_generics(jt_State *S) {
  for (size_t i = 0; i < sizeof builtin_generics / sizeof builtin_generics[0]; i++) {
    const GenericDef *d = &builtin_generics[i];
    jt_V *base = S->sp;
    jt_V name = jt_intern(S, d->name);
    JT_PUSH(S, name);
    jt_V ll = read_cstr(S, d->lambda_list);
    JT_PUSH(S, ll);
    jt_V gf = jt_gf_ensure(S, base[0], base[1]);
    JT_PUSH(S, gf);                                  /* base[2] */
    JT_CLOS(S, JT_CLOS_G_MAKE_INSTANCE + (int)i) = gf;
    jt_V mll = read_cstr(S, d->method_lambda_list);
    JT_PUSH(S, mll);                                 /* base[3] */
    int n = 0;
    for (int k = 0; k < 4 && d->specializers[k]; k++, n++) JT_PUSH(S, jt_find_class(S, jt_intern(S, d->specializers[k])));
    jt_V specs = jt_list_from(S, n, base + 4);
    S->sp = base + 4;
    JT_PUSH(S, specs);
    jt_V fn = jt_make_prim(S, base[0], d->fn, 0, -1, NULL);
    JT_PUSH(S, fn);
    jt_V m = jt_method_make(S, JT_NIL, base[4], base[3], fn, JT_METH_PRIMARY | JT_METH_LOCKED);
    JT_PUSH(S, m);
    jt_gf_add_method(S, base[2], m);
    S->sp = base;
  }
}

/* ------------------------------------------------------------ primitives */

JT_FN(f_defclass) { return jt_class_define(S, argv[0], argc > 1 ? argv[1] : JT_NIL, false); }
JT_FN(f_class_of) { JT_UNUSED_ARGS; return jt_class_of(S, argv[0]); }

/* (find-class name &optional (errorp t) environment) */
JT_FN(f_find_class) {
  jt_V name = jt_check_symbol(S, argv[0]);
  jt_V c = jt_find_class(S, name);
  if (c == JT_NIL && (argc < 2 || argv[1] != JT_NIL)) class_designator(S, name);
  return c;
}

JT_FN(f_class_name) {
  if (!jt_is(argv[0], JT_TCLASS)) jt_type_error(S, argv[0], CLS(JT_CLASS(S, CLASS))->name);
  return CLS(argv[0])->name;
}

/* The standard class a name or class change may touch: a standard
** class the program defined (the language's own, structures and
** conditions keep theirs). */
static jt_V changeable_class(jt_State *S, jt_V c, const char *op) {
  if (!jt_is(c, JT_TCLASS) || JT_CLASS_KIND(CLS(c)) != JT_CLASS_STANDARD || (CLS(c)->h.flags & JT_CLASS_LOCKED)) {
    char *n = jt_print_cstr(S, c, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf, "%s: %s is not a standard class the program defined", op, n);
    free(n);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
  return c;
}

/* (%bind-class-name name class-or-nil): the name finds that class, or none
** (60-clos.lisp: only outside a world, which keeps each class under its
** defclass's name) */
JT_FN(f_bind_class_name) {
  JT_UNUSED_ARGS;
  jt_V name = jt_check_symbol(S, argv[0]), v = argv[1];
  jt_V old = jt_find_class(S, name);
  if (old != JT_NIL) changeable_class(S, old, "(setf find-class)");
  if (v != JT_NIL) changeable_class(S, v, "(setf find-class)");
  if (v == JT_NIL) jt_hash_rem(S, JT_CLOS(S, JT_CLOS_CLASSES), name);
  else jt_hash_put(S, JT_CLOS(S, JT_CLOS_CLASSES), name, v);
  jt_clos_changed(S);
  return v;
}

/* (%rename-class class name): the class's name, which finds it no more
** (find-class is unchanged) */
JT_FN(f_rename_class) {
  JT_UNUSED_ARGS;
  jt_V c = changeable_class(S, argv[0], "(setf class-name)");
  JT_SET(S, c, CLS(c)->name, argv[1]);
  jt_clos_changed(S);
  return argv[1];
}

/* (make-instances-obsolete class) => class */
JT_FN(f_make_instances_obsolete) {
  JT_UNUSED_ARGS;
  jt_V c = argv[0];
  if (jt_issymbol(c)) {
    c = jt_find_class(S, c);
    if (c == JT_NIL) {
      char *n = jt_print_cstr(S, argv[0], true, 100);
      snprintf(S->msgbuf, sizeof S->msgbuf, "make-instances-obsolete: there is no class named %s", n);
      free(n);
      jt_error(S, "%s", S->msgbuf);
    }
  }
  if (!jt_is(c, JT_TCLASS)) jt_type_error(S, c, CLS(JT_CLASS(S, CLASS))->name);
  jt_class_make_obsolete(S, c);
  return argv[0];
}

/* (%class-slot-names class) The names of the slots of a standard class's
** instances, :class ones too (make-load-form-saving-slots). */
JT_FN(f_class_slot_names) {
  JT_UNUSED_ARGS;
  if (!jt_is(argv[0], JT_TCLASS)) jt_type_error(S, argv[0], CLS(JT_CLASS(S, CLASS))->name);
  return jt_class_slot_names(S, argv[0], false);
}

JT_FN(f_slot_value) { return jt_slot_get(S, argv[0], argv[1]); }
JT_FN(f_set_slot_value) { jt_slot_set(S, argv[0], argv[1], argv[2]); return argv[2]; }
JT_FN(f_slot_boundp) { return jt_bool(jt_slot_boundp(S, argv[0], argv[1])); }
JT_FN(f_slot_makunbound) { jt_slot_makunbound(S, argv[0], argv[1]); return argv[0]; }
JT_FN(f_slot_exists_p) { JT_UNUSED_ARGS; return jt_bool(jt_slot_exists(S, argv[0], argv[1])); }

/* (allocate-instance class &rest initargs) */
/* (allocate-instance class &rest initargs): an instance with every slot
** unbound, or a structure of a structure class with its slots NIL */
JT_FN(f_allocate_instance) {
  JT_UNUSED_ARGS;
  jt_V cls = class_designator(S, argv[0]);
  if (jt_is(cls, JT_TCLASS) && JT_CLASS_KIND(CLS(cls)) == JT_CLASS_STRUCTURE) {
    jt_V l = jt_find_layout(S, CLS(cls)->name);
    if (l != JT_NIL) return jt_make_struct(S, l, jt_layout_(l)->nslots);
  }
  return jt_instance_make(S, cls);
}

JT_FN(f_unbound_slot_instance) {
  if (!jt_is_condition(argv[0])) jt_type_error(S, argv[0], JT_SYM(S, UNBOUND_SLOT));
  jt_V v = jt_slot_value(S, argv[0], JT_CSYM(S, INSTANCE));
  return v == JT_NOVALUE ? JT_NIL : v;
}

/* (%print-unreadable-object object stream type identity body), in SBCL's
** spacing: "#<TYPE body {id}>". */
JT_FN(f_print_unreadable_object) {
  jt_V stream = jt_output_stream(S, argv[1]);
  JT_PUSH(S, stream);
  jt_V r = jt_symobj(S, JT_SYM(S, PRINT_READABLY))->value;
  if (r != JT_NIL && r != JT_UNBOUND)
    jt_errorc(S, JT_SYM(S, PRINT_NOT_READABLE), "cannot print an object with print-unreadable-object readably");
  jt_stream_puts(S, stream, "#<");
  bool type = argv[2] != JT_NIL, body = argc > 4 && argv[4] != JT_NIL;
  if (type) {
    jt_V t = jt_type_of(S, argv[0]);
    jt_print(S, S->sp[-1], t, true);
    jt_stream_putc(S, S->sp[-1], ' ');
  }
  if (body) jt_funcall(S, argv[4], 0);
  if (argv[3] != JT_NIL) {
    if (body || !type) jt_stream_putc(S, S->sp[-1], ' ');
    char tmp[32];
    snprintf(tmp, sizeof tmp, "{%lX}", (unsigned long)(argv[0] >> 3));
    jt_stream_puts(S, S->sp[-1], tmp);
  }
  jt_stream_putc(S, S->sp[-1], '>');
  JT_POP(S, 1);
  S->nvals = 1;   /* NIL, not the values the body left */
  return JT_NIL;
}

/* (describe object &optional stream) */
JT_FN(f_describe) {
  jt_V stream = jt_output_stream(S, argc > 1 ? argv[1] : JT_NIL);
  JT_PUSH(S, stream);
  jt_funcall(S, JT_GENERIC(S, DESCRIBE_OBJECT), 2, argv[0], stream);
  JT_POP(S, 1);
  return jt_values(S, 0, NULL);
}

/* (%subtypep type1 type2) for class names, class
** objects, T and NIL, and or/and/not/member/eql combinations of them;
** (values nil nil) when it cannot tell. */
static int subtype(jt_State *S, jt_V a, jt_V b, int depth);

static jt_V type_class(jt_State *S, jt_V t) {
  if (jt_is(t, JT_TCLASS)) return t;
  if (jt_issymbol(t)) {
    if (t == jt_intern(S, "KEYWORD")) return JT_NOVALUE;
    jt_V c = jt_find_class(S, t);
    if (c != JT_NIL) return c;
  }
  return JT_NOVALUE;
}

/* The character types: 1 CHARACTER or BASE-CHAR (the same set here), 2
** STANDARD-CHAR, 3 EXTENDED-CHAR (empty here); 0 another type. */
static int char_type(jt_State *S, jt_V t) {
  if (t == JT_SYM(S, CHARACTER) || t == jt_intern(S, "BASE-CHAR")) return 1;
  if (t == JT_SYM(S, STANDARD_CHAR)) return 2;
  if (t == jt_intern(S, "EXTENDED-CHAR")) return 3;
  return 0;
}

/* subtypep for the character types and ATOM, when one of a and b is one:
** 1, 0, or -1 when it cannot say. */
static int atom_char_subtype(jt_State *S, jt_V a, jt_V b, jt_V ca, jt_V cb) {
  int ka = char_type(S, a), kb = char_type(S, b);
  jt_V atom = jt_intern(S, "ATOM"), cons = jt_find_class(S, JT_SYM(S, CONS));
  jt_V character = jt_find_class(S, JT_SYM(S, CHARACTER));
  if (ka == 3) return 1;
  if (ka && kb) return kb == 1 || ka == kb;
  /* BASE-CHAR and STANDARD-CHAR name no class: their characters are of
  ** class CHARACTER, so they are within a class exactly when it is */
  if (ka) return b == atom ? 1 : cb != JT_NOVALUE ? jt_class_subclassp(character, cb) : -1;
  /* a class within a character type is CHARACTER (all of them) or none */
  if (kb) return ca == JT_NOVALUE ? -1 : jt_class_subclassp(ca, character) ? kb == 1 : 0;
  if (b == atom) {
    if (ca == JT_NOVALUE) return -1;
    /* a class is within ATOM when it is no superclass or subclass of CONS */
    return !jt_class_subclassp(ca, cons) && !jt_class_subclassp(cons, ca);
  }
  if (a == atom) return cb != JT_NOVALUE ? 0 : -1;
  return -1;
}

/* Whether specifiers a and b are the same tree of EQL leaves: (member
** "abc") and (member "abc") with two strings are different types, and so
** are (member (a)) and (member (a)) with two lists: the objects of a MEMBER
** or EQL are compared with EQL, whatever they are. */
static bool same_spec(jt_State *S, jt_V a, jt_V b, int depth) {
  if (jt_iscons(a) && jt_iscons(b) && (jt_car(a) == JT_SYM(S, MEMBER) || jt_car(a) == JT_SYM(S, EQL))) {
    if (jt_car(a) != jt_car(b)) return false;
    for (a = jt_cdr(a), b = jt_cdr(b); jt_iscons(a) && jt_iscons(b); a = jt_cdr(a), b = jt_cdr(b))
      if (!jt_eql(jt_car(a), jt_car(b)) || ++depth > 10000) return false;
    return jt_eql(a, b);
  }
  while (jt_iscons(a) && jt_iscons(b)) {
    if (depth > 100 || !same_spec(S, jt_car(a), jt_car(b), depth + 1)) return false;
    a = jt_cdr(a), b = jt_cdr(b);
    if (++depth > 10000) return false;
  }
  return jt_eql(a, b);
}

/* 1 yes, 0 no, -1 unknown */
static int subtype(jt_State *S, jt_V a, jt_V b, int depth) {
  if (depth > 100) return -1;
  if (same_spec(S, a, b, 0) || b == JT_T || a == JT_NIL) return 1;
  /* NULL has one element */
  if (a == JT_SYM(S, NULL_)) return jt_typep(S, JT_NIL, b) ? 1 : 0;
  if (jt_iscons(a)) {
    jt_V h = jt_car(a);
    jt_Walk w = jt_walk(jt_cdr(a));   /* a specifier made at run time may be circular */
    if (h == JT_SYM(S, OR) || h == JT_SYM(S, AND)) {
      bool any_unknown = false, is_or = h == JT_SYM(S, OR);
      for (jt_V l = jt_cdr(a); jt_iscons(l); l = jt_walk_next(S, &w, l)) {
        int r = subtype(S, jt_car(l), b, depth + 1);
        if (is_or && r == 0) return 0;
        if (!is_or && r == 1) return 1;
        if (r < 0) any_unknown = true;
      }
      return any_unknown ? -1 : (is_or ? 1 : -1);
    }
    if (h == JT_SYM(S, MEMBER) || h == JT_SYM(S, EQL)) {
      for (jt_V l = jt_cdr(a); jt_iscons(l); l = jt_walk_next(S, &w, l))
        if (!jt_typep(S, jt_car(l), b)) return 0;
      return 1;
    }
  }
  if (jt_iscons(b)) {
    jt_V h = jt_car(b);
    if (h == JT_SYM(S, OR) || h == JT_SYM(S, AND)) {
      bool is_or = h == JT_SYM(S, OR), unknown = false;
      jt_Walk w = jt_walk(jt_cdr(b));
      for (jt_V l = jt_cdr(b); jt_iscons(l); l = jt_walk_next(S, &w, l)) {
        int r = subtype(S, a, jt_car(l), depth + 1);
        if (is_or && r == 1) return 1;
        if (!is_or && r == 0) return 0;
        if (r < 0) unknown = true;
      }
      return unknown ? -1 : (is_or ? 0 : 1);
    }
    if (h == JT_SYM(S, NOT) && jt_iscons(jt_cdr(b))) {
      jt_V ca = type_class(S, a), cb = type_class(S, jt_car(jt_cdr(b)));
      if (ca != JT_NOVALUE && cb != JT_NOVALUE) {
        if (jt_class_subclassp(ca, cb)) return 0;
        /* disjoint when neither is a subclass of the other and one is a
        ** built-in leaf; only say so for standard classes */
        return -1;
      }
      return -1;
    }
  }
  /* arrays: by simpleness, element kind, rank and dimensions */
  int r = jt_array_subtypep(S, a, b);
  if (r >= 0) return r;
  jt_V ca = type_class(S, a), cb = type_class(S, b);
  if ((r = atom_char_subtype(S, a, b, ca, cb)) >= 0) return r;
  /* a class other than the array classes has no array among its instances */
  if (ca != JT_NOVALUE && jt_array_type_spec_p(S, b) &&
      !jt_class_subclassp(ca, jt_find_class(S, JT_SYM(S, ARRAY))))
    return 0;
  if (ca != JT_NOVALUE && cb != JT_NOVALUE) {
    if (!(CLS(ca)->h.flags & JT_CLASS_FINALIZED)) return -1;
    return jt_class_subclassp(ca, cb) ? 1 : 0;
  }
  if (a == JT_T) return cb != JT_NOVALUE ? 0 : -1;
  return -1;
}

JT_FN(f_subtypep) {
  JT_UNUSED_ARGS;
  int r = subtype(S, argv[0], argv[1], 0);
  if (r < 0) return jt_values2(S, JT_NIL, JT_NIL);
  return jt_values2(S, jt_bool(r == 1), JT_T);
}

static const jt_Reg clos_fns[] = {
  {"%DEFCLASS", f_defclass, 1, 2, "(%defclass form [closures]) Define or redefine a class from a defclass "
   "form (closures: its initforms made where it stands, jt_class_define)."},
  {"CLASS-OF", f_class_of, 1, 1, "(class-of object) The class of OBJECT."},
  {"FIND-CLASS", f_find_class, 1, 3, "(find-class name &optional errorp environment) The class named NAME."},
  {"%CLASS-NAME", f_class_name, 1, 1, "(%class-name class) The name of CLASS."},
  {"%RENAME-CLASS", f_rename_class, 2, 2, "(%rename-class class name) Rename a standard class."},
  {"%BIND-CLASS-NAME", f_bind_class_name, 2, 2, "(%bind-class-name name class) Make NAME find CLASS (or none: NIL)."},
  {"%CLASS-SLOT-NAMES", f_class_slot_names, 1, 1, "(%class-slot-names class) The slot names of CLASS's instances."},
  {"%MAKE-INSTANCES-OBSOLETE", f_make_instances_obsolete, 1, 1,
   "(make-instances-obsolete class) Update CLASS's instances (update-instance-for-redefined-class) at their next use."},
  {"SLOT-VALUE", f_slot_value, 2, 2, "(slot-value object slot-name) The value of a slot of an instance, structure or condition."},
  {"%SET-SLOT-VALUE", f_set_slot_value, 3, 3, "(%set-slot-value object slot-name value) Write a slot."},
  {"SLOT-BOUNDP", f_slot_boundp, 2, 2, "(slot-boundp instance slot-name) True if the slot has a value."},
  {"SLOT-MAKUNBOUND", f_slot_makunbound, 2, 2, "(slot-makunbound instance slot-name) Make the slot unbound; returns INSTANCE."},
  {"SLOT-EXISTS-P", f_slot_exists_p, 2, 2, "(slot-exists-p object slot-name) True if OBJECT has a slot named SLOT-NAME."},
  {"%ALLOCATE-INSTANCE", f_allocate_instance, 1, -1, "(%allocate-instance class &rest initargs) A new instance with every slot unbound."},
  {"UNBOUND-SLOT-INSTANCE", f_unbound_slot_instance, 1, 1, "(unbound-slot-instance condition) The instance whose slot was unbound."},
  {"%PRINT-UNREADABLE-OBJECT", f_print_unreadable_object, 4, 5, "(%print-unreadable-object object stream type identity body)"},
  {"DESCRIBE", f_describe, 1, 2, "(describe object &optional stream) Describe OBJECT (describe-object)."},
  {"%SUBTYPEP", f_subtypep, 2, 3, "(%subtypep type1 type2) SUBTYPEP by classes, members and arrays (62-types.lisp splits the rest)."},
  {NULL, NULL, 0, 0, NULL}
};

/* ------------------------------------------------------------------ set-up */

void jt_open_clos(jt_State *S) {
  S->clos = jt_make_vector(S, JT_CLOS_COUNT, JT_NIL);
  jt_V h = jt_make_hash(S, JT_HASH_EQ, 64);
  JT_CLOS(S, JT_CLOS_CLASSES) = h;
  static const char *const syms[] = {
#define JT_X(id, name) name,
    JT_CLOS_SYMBOLS(JT_X)
#undef JT_X
  };
  for (int i = 0; i < (int)(sizeof syms / sizeof syms[0]); i++) {
    jt_V sym = syms[i][0] == ':' ? jt_intern_keyword(S, syms[i] + 1) : jt_intern(S, syms[i]);
    JT_CLOS(S, JT_CLOS_S_DEFCLASS + i) = sym;
  }
  for (int i = 0; i < (int)(sizeof builtin_classes / sizeof builtin_classes[0]); i++) {
    jt_V *base = S->sp;
    for (int k = 0; k < 3 && builtin_classes[i].supers[k]; k++)
      JT_PUSH(S, jt_find_class(S, jt_intern(S, builtin_classes[i].supers[k])));
    jt_V supers = jt_list_from(S, (int)(S->sp - base), base);
    S->sp = base;
    jt_V c = jt_class_builtin(S, builtin_class_names[i], supers, builtin_classes[i].kind);
    JT_CLOS(S, JT_CLOS_C_T + i) = c;
  }
  /* instances of user classes inherit an (empty) wrapper layout from here */
  jt_class_finalize_root(S, JT_CLASS(S, STANDARD_OBJECT));
  jt_register(S, clos_fns);
  jt_open_generic(S);
  define_builtin_generics(S);
}

/* Lock what exists now: every class, generic function and method defined
** by the kernel and its Lisp library. */
void jt_clos_finish(jt_State *S) {
  jt_Hash *h = jt_hash_(JT_CLOS(S, JT_CLOS_CLASSES));
  for (size_t i = 0; i < h->nentries; i++) {
    jt_V c = h->entries[i].val;
    if (h->entries[i].key == JT_HASH_DELETED || !jt_is(c, JT_TCLASS)) continue;
    CLS(c)->h.flags |= JT_CLASS_LOCKED;
  }
  for (size_t i = 0; i < S->symcap; i++) {
    jt_V v = S->symtab[i].sym;
    if (v == 0 || v == JT_UNBOUND || !jt_is(v, JT_TSYMBOL)) continue;   /* empty or removed */
    jt_Symbol *s = jt_sym_(v);
    jt_V fns[2] = {s->function, s->setf_fn};
    for (int k = 0; k < 2; k++) {
      if (!jt_is(fns[k], JT_TGENERIC)) continue;
      jt_gf_(fns[k])->h.flags |= JT_GF_LOCKED;
      for (jt_V m = jt_gf_(fns[k])->methods; jt_iscons(m); m = jt_cdr(m))
        jt_method_(jt_car(m))->h.flags |= JT_METH_LOCKED;
    }
  }
}

/* ------------------------------------------------------------------- hooks */

int jt_clos_typep(jt_State *S, jt_V v, jt_V type) {
  jt_V c = jt_is(type, JT_TCLASS) ? type : jt_issymbol(type) ? jt_find_class(S, type) : JT_NIL;
  if (c == JT_NIL) return -1;
  return jt_class_subclassp(jt_class_of(S, v), c);
}

/* The class's name when that name finds it, else the class itself (a class
** renamed, or whose name was unbound or given to another class). */
jt_V jt_clos_type_of(jt_State *S, jt_V v) {
  jt_V c = jt_class_of(S, v), name = CLS(c)->name;
  return jt_issymbol(name) && name != JT_NIL && jt_find_class(S, name) == c ? name : c;
}

/* Call fn (print-object or a structure's printer) on v and stream with
** *print-escape* bound as the printer's. */
static void call_printer(jt_State *S, jt_V fn, jt_V stream, jt_V v, bool escape) {
  size_t nbind = S->nbind;
  jt_bind(S, JT_SYM(S, PRINT_ESCAPE), jt_bool(escape));
  jt_funcall(S, fn, 2, v, stream);
  jt_unbind_to(S, nbind);
}

bool jt_clos_print_object(jt_State *S, jt_V stream, jt_V v, bool escape) {
  if (S->clos == JT_NIL) return false;
  JT_PUSH(S, v);
  JT_PUSH(S, stream);
  bool user = jt_gf_user_methods_apply(S, JT_GENERIC(S, PRINT_OBJECT), 2, S->sp - 2);
  JT_POP(S, 2);
  if (user) {
    call_printer(S, JT_GENERIC(S, PRINT_OBJECT), stream, v, escape);
    return true;
  }
  /* A structure's :print-function or :print-object option acts as its
  ** print-object method; the program's own methods come first. */
  jt_V printer = jt_struct_printer(v);
  if (printer == JT_NIL) return false;
  call_printer(S, printer, stream, v, escape);
  return true;
}

jt_V jt_clos_print_object_string(jt_State *S, jt_V v, bool escape) {
  if (S->clos == JT_NIL || S->stack_end - S->sp < 64) return JT_NIL;
  jt_V saved = S->pending;
  JT_PUSH(S, saved);
  JT_PUSH(S, v);
  JT_PUSH(S, JT_NIL);
  jt_V *slot = S->sp - 1;      /* memory, not a local: survives the longjmp */
  jiti_DebuggerHook hook = S->debugger_hook;
  S->debugger_hook = NULL;     /* an error in the method is contained here */
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jt_V ss = jt_make_string_stream(S);
    JT_PUSH(S, ss);
    if (jt_clos_print_object(S, ss, slot[-1], escape)) *slot = jt_stream_contents(S, ss, false);
    JT_POP(S, 1);
    jt_jmp_pop(S, &j);
  }
  S->debugger_hook = hook;
  jt_V r = *slot;
  S->pending = saved;
  JT_POP(S, 3);
  return r;
}

jt_V jt_clos_documentation(jt_State *S, jt_V x, jt_V doc_type) {
  if (jt_is(x, JT_TGENERIC)) return jt_gf_(x)->doc;
  if (jt_is(x, JT_TCLASS)) return CLS(x)->doc;
  if (jt_is(x, JT_TMETHOD)) return jt_method_(x)->doc;
  if (!jt_issymbol(x) || jt_is_internal(x)) return JT_NOVALUE;
  if (doc_type == jt_intern(S, "TYPE")) {
    jt_V c = jt_find_class(S, x);
    return c != JT_NIL ? CLS(c)->doc : JT_NOVALUE;
  }
  jt_V f = jt_symobj(S, x)->function;
  return jt_is(f, JT_TGENERIC) ? jt_gf_(f)->doc : JT_NOVALUE;
}
