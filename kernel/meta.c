/*
** meta.c — what the kernel knows about a symbol beyond its cells: the type
** a DEFTYPE defined, the setf expander or updater a DEFSETF defined, the
** expansion a DEFINE-SYMBOL-MACRO defined, the compiler macro of a function
** name, the primitive that writes a built-in place.
**
** These live in a table of the state's (symbol -> property list keyed by
** kernel-internal symbols), not in the symbol's own property list: user
** code can read and rewrite any plist it can reach, and a setf expander or
** type expander planted on CAR's plist would change the language for every
** later transaction.  Writes go through the defining operators below, each
** of which refuses the locked built-in names exactly as DEFUN does; the
** table is an ordinary hash table, so a checkpoint restores it like any
** other object.  Each definition is a world entry of its own (defs.c):
** the helpers that define one from a function rather than from its form
** run only when the kernel's defining macros call them.
*/
#include <string.h>
#include "jt_eval.h"
#include "jt_clos.h"
#include "jt_world.h"

static jt_V meta_plist(jt_State *S, jt_V sym) {
  bool found;
  jt_V p = jt_hash_get(S, S->symmeta, sym, &found);
  return found ? p : JT_NIL;
}

jt_V jt_meta_get(jt_State *S, jt_V sym, jt_V key) {
  for (jt_V p = meta_plist(S, sym); jt_iscons(p) && jt_iscons(jt_cdr(p)); p = jt_cdr(jt_cdr(p)))
    if (jt_car(p) == key) return jt_car(jt_cdr(p));
  return JT_NIL;
}

void jt_meta_put(jt_State *S, jt_V sym, jt_V key, jt_V val) {
  jt_V *base = S->sp;
  JT_PUSH(S, sym);
  JT_PUSH(S, key);
  JT_PUSH(S, val);
  for (jt_V p = meta_plist(S, sym); jt_iscons(p) && jt_iscons(jt_cdr(p)); p = jt_cdr(jt_cdr(p)))
    if (jt_car(p) == key) {
      jt_V cell = jt_cdr(p);
      JT_SET(S, cell, jt_cons_(cell)->car, val);
      S->sp = base;
      return;
    }
  jt_V p = jt_cons(S, base[2], meta_plist(S, base[0]));
  JT_PUSH(S, p);
  p = jt_cons(S, base[1], p);
  JT_PUSH(S, p);
  jt_hash_put(S, S->symmeta, base[0], p);
  S->sp = base;
}

/* (%meta symbol key) The kernel property KEY of SYMBOL, or NIL. */
JT_FN(f_meta) { return jt_meta_get(S, jt_check_symbol(S, argv[0]), argv[1]); }

static jt_V key(jt_State *S, const char *name) { return jt_intern(S, name); }

/* (%define-type name expander) What (deftype name () ...) does, given
** the expander %DEFTYPE made from the form.  A structure or class name is
** refused: it is looked up before a DEFTYPE, which would never be used. */
JT_FN(f_define_type) {
  jt_check_kernel_caller(S);  /* defines a type without recording it */
  jt_V name = jt_check_symbol(S, argv[0]);
  if (!jt_isfunction(argv[1])) jt_type_error(S, argv[1], JT_SYM(S, FUNCTION));
  if (!S->kernel_mode) {
    jt_check_type_definable(S, name, "a type");
    if (jt_find_layout(S, name) != JT_NIL || jt_find_class(S, name) != JT_NIL)
      jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
                "cannot define %s as a type with DEFTYPE: it names a %s of the world (choose another name)",
                jt_symname(S, name), jt_find_layout(S, name) != JT_NIL ? "structure or condition type" : "class");
  }
  jt_meta_put(S, name, key(S, "%DEFTYPE"), argv[1]);
  return name;
}

void jt_meta_type_replaced(jt_State *S, jt_V name) {
  if (jt_meta_get(S, name, key(S, "%DEFTYPE")) == JT_NIL) return;
  JT_PUSH(S, name);
  jt_meta_put(S, name, key(S, "%DEFTYPE"), JT_NIL);
  jt_defs_record(S, JITI_ENTRY_TYPE, S->sp[-1], JT_NIL);
  JT_POP(S, 1);
}

/* (%proclaim-declaration name) What (declaim (declaration name)) does:
** NAME becomes a declaration identifier the analyser accepts silently.
** A world keeps it as the entry of NAME's type, with the DECLAIM form:
** CLHS (type) lets no symbol be both, so the two never share the entry. */
JT_FN(f_proclaim_declaration) {
  jt_V name = jt_check_symbol(S, argv[0]);
  if (jt_names_declaration(S, name)) return name;
  jt_Symbol *s = jt_symobj(S, name);
  if (!S->kernel_mode && (s->h.flags & (JT_SYM_BUILTIN | JT_SYM_LOCKED)))
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR),
              "cannot proclaim %s a declaration name: it is a built-in name of the language", s->cname);
  if (jt_names_type(S, name))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "cannot proclaim %s a declaration name: it names a type (choose another name)", s->cname);
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  jt_meta_put(S, name, key(S, "%DECLARATION"), JT_T);
  jt_V spec = jt_list(S, 2, key(S, "DECLARATION"), base[0]);
  JT_PUSH(S, spec);
  jt_V form = jt_list(S, 2, key(S, "DECLAIM"), spec);
  JT_PUSH(S, form);
  jt_defs_record(S, JITI_ENTRY_TYPE, base[0], form);
  S->sp = base;
  return name;
}

/* (%define-setf name kind fn) What defsetf does: kind :updater (short form,
** fn names the updating function) or :expander (long form, fn computes the
** expansion).  Either replaces the other. */
JT_FN(f_define_setf) {
  jt_check_kernel_caller(S);  /* defines an expander without recording it */
  jt_V name = jt_check_symbol(S, argv[0]);
  bool updater = argv[1] == jt_intern_keyword(S, "UPDATER");
  if (!updater && argv[1] != jt_intern_keyword(S, "EXPANDER"))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%%define-setf: kind must be :updater or :expander");
  if (updater ? !jt_issymbol(argv[2]) : !jt_isfunction(argv[2]))
    jt_type_error(S, argv[2], updater ? JT_SYM(S, SYMBOL) : JT_SYM(S, FUNCTION));
  if (!S->kernel_mode) jt_check_definable(S, jt_symobj(S, name), "a setf expander");
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  jt_meta_put(S, name, key(S, updater ? "%SETF-EXPANDER" : "%SETF-UPDATER"), JT_NIL);
  jt_meta_put(S, base[0], key(S, updater ? "%SETF-UPDATER" : "%SETF-EXPANDER"), argv[2]);
  S->sp = base;
  return argv[0];
}

/* (%define-symbol-macro name expansion) What define-symbol-macro does: NAME
** then stands for EXPANSION wherever it is not lexically bound.  The two
** arguments are the whole form, which is recorded as the entry. */
JT_FN(f_define_symbol_macro) {
  jt_V name = jt_check_symbol(S, argv[0]);
  jt_Symbol *s = jt_symobj(S, name);
  if (s->h.flags & (JT_SYM_SPECIAL | JT_SYM_CONSTANT))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot define %s as a symbol macro: it is a %s variable",
              s->cname, s->h.flags & JT_SYM_CONSTANT ? "constant" : "special");
  if (!S->kernel_mode && (s->h.flags & JT_SYM_BUILTIN) && (s->h.flags & JT_SYM_LOCKED))
    jt_check_definable(S, s, "a symbol macro");
  jt_V box = jt_cons(S, argv[1], JT_NIL);
  JT_PUSH(S, box);
  jt_meta_put(S, name, key(S, "%SYMBOL-MACRO"), box);
  jt_V form = jt_list(S, 3, jt_intern(S, "DEFINE-SYMBOL-MACRO"), name, argv[1]);
  JT_PUSH(S, form);
  jt_defs_record(S, JITI_ENTRY_SYMBOL_MACRO, name, form);
  JT_POP(S, 2);
  return name;
}

/* ------------------------------------------------------- compiler macros
** Kept (compiler-macro-function returns them) but never applied: an
** implementation may ignore compiler macros, and jiti does. */

/* The symbol of a function name (SYM or (SETF SYM)); *setf says which. */
static jt_V fname_symbol(jt_State *S, jt_V name, bool *setf) {
  *setf = jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(name)) &&
          jt_issymbol(jt_car(jt_cdr(name))) && jt_cdr(jt_cdr(name)) == JT_NIL;
  if (*setf) return jt_car(jt_cdr(name));
  if (!jt_issymbol(name)) jt_type_error(S, name, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, SYMBOL), JT_SYM(S, CONS)));
  return name;
}

static jt_V cm_key(jt_State *S, bool setf) { return key(S, setf ? "%SETF-COMPILER-MACRO" : "%COMPILER-MACRO"); }

/* (compiler-macro-function name &optional environment) */
JT_FN(f_compiler_macro_function) {
  bool setf;
  jt_V sym = fname_symbol(S, argv[0], &setf);
  if (jt_is_internal(sym)) return JT_NIL;
  return jt_meta_get(S, sym, cm_key(S, setf));
}

/* (%store-compiler-macro name function form) What (setf
** compiler-macro-function) does (form NIL) and, with the form,
** define-compiler-macro.  A function set without its form cannot be made
** again from the store: the entry says so, and the transaction that keeps
** it is refused when it is published. */
JT_FN(f_store_compiler_macro) {
  jt_check_kernel_caller(S);  /* records the form it is given */
  bool setf;
  jt_V sym = fname_symbol(S, argv[0], &setf);
  jt_V fn = argv[1];
  if (fn != JT_NIL && !jt_isfunction(fn)) jt_type_error(S, fn, JT_SYM(S, FUNCTION));
  if (!S->kernel_mode) jt_check_definable(S, jt_symobj(S, sym), "a compiler macro");
  jt_V *base = S->sp;
  JT_PUSH(S, sym);
  jt_meta_put(S, sym, cm_key(S, setf), fn);
  jt_V name = setf ? jt_list(S, 2, JT_SYM(S, SETF), base[0]) : base[0];
  JT_PUSH(S, name);
  jt_V src = argv[2];
  if (src != JT_NIL && !jt_defs_form_ok(S, JITI_ENTRY_COMPILER_MACRO, name, src))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%%store-compiler-macro: not the DEFINE-COMPILER-MACRO form of %s",
              jt_symname(S, base[0]));
  if (fn != JT_NIL && src == JT_NIL) {
    jt_V why = jt_string_from_cstr(S, "was set without a defining form");
    JT_PUSH(S, why);
    src = jt_list(S, 2, jt_intern_keyword(S, "UNEXPORTABLE"), why);
  }
  JT_PUSH(S, src);
  jt_defs_record(S, JITI_ENTRY_COMPILER_MACRO, base[1], fn == JT_NIL ? JT_NIL : src);
  S->sp = base;
  return fn;
}

/* (%setter-symbol acc) The primitive %SET-ACC writing the built-in place
** ACC, or NIL. */
JT_FN(f_setter_symbol) {
  jt_V acc = jt_check_symbol(S, argv[0]);
  const char *name = jt_symname(S, acc);
  size_t n = strlen(name);
  if (n > 200 || (jt_is(acc, JT_TSYMBOL) && jt_sym_(acc)->package != JT_PKG_LISP && acc != JT_NIL))
    return JT_NIL;
  char buf[208];
  memcpy(buf, "%SET-", 5);
  memcpy(buf + 5, name, n);
  jt_V s = jt_find_symbol(S, buf, n + 5, JT_PKG_INTERNAL);
  if (s == JT_NOVALUE || jt_symobj(S, s)->function == JT_UNBOUND) return JT_NIL;
  return s;
}

/* (%internal-symbol-p x) True if X is one of the kernel's (or a host
** library's) internal symbols, which user code cannot name. */
JT_FN(f_internal_symbol_p) { return jt_bool(jt_is_internal(argv[0])); }

static const jt_Reg meta_fns[] = {
  {"%INTERNAL-SYMBOL-P", f_internal_symbol_p, 1, 1, "(%internal-symbol-p x) True if X is a kernel-internal symbol."},
  {"%META", f_meta, 2, 2, "(%meta symbol key) The kernel property KEY of SYMBOL, or NIL."},
  {"%PROCLAIM-DECLARATION", f_proclaim_declaration, 1, 1, "(%proclaim-declaration name) Proclaim NAME a declaration identifier."},
  {"%DEFINE-TYPE", f_define_type, 2, 2, "(%define-type name expander) Define NAME as a type (deftype)."},
  {"%DEFINE-SETF", f_define_setf, 3, 3, "(%define-setf name kind fn) Define how NAME is written by setf (defsetf)."},
  {"%DEFINE-SYMBOL-MACRO", f_define_symbol_macro, 2, 2, "(%define-symbol-macro name expansion) Define NAME as a global symbol macro."},
  {"COMPILER-MACRO-FUNCTION", f_compiler_macro_function, 1, 2,
   "(compiler-macro-function name &optional environment) NAME's compiler macro, or NIL (jiti never applies one)."},
  {"%STORE-COMPILER-MACRO", f_store_compiler_macro, 3, 3,
   "(%store-compiler-macro name function form) Set NAME's compiler macro (NIL: none), made by FORM."},
  {"%SETTER-SYMBOL", f_setter_symbol, 1, 1, "(%setter-symbol acc) The primitive writing the built-in place ACC, or NIL."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_meta(jt_State *S) {
  S->symmeta = jt_make_hash(S, JT_HASH_EQ, 64);
  jt_register(S, meta_fns);
}
