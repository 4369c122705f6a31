/*
** defs.c — the definitions that live beside a symbol's cells, as world
** entries: a DEFTYPE's type, a DEFINE-SYMBOL-MACRO, a setf expander
** (DEFSETF, DEFINE-SETF-EXPANDER), a DEFINE-COMPILER-MACRO (meta.c keeps
** them all), a DEFINE-MODIFY-MACRO (a macro entry holding that form), a
** DEFINE-METHOD-COMBINATION (61-combination.lisp keeps them), a name's
** documentation and a symbol's property list.
**
** Each entry holds the form that makes it as it was written (for
** documentation and property lists, the SETF form that sets them), so a
** world started again from its store has them all.  The defining macros
** expand into one call of a kernel function with the whole form, as
** DEFSTRUCT does; that function makes the definition from the form alone,
** in the null lexical environment, and records the form: calling it
** directly (it can be found in the expansion) does exactly what writing the
** form would, and what it records is what an import makes again.  The
** importer checks the form first (jt_defs_form_ok), then evaluates the
** kernel's own defining macro on it — or, for documentation and property
** lists, sets them without evaluating anything.
**
** Built-in symbols are the language's: their types, setf expanders, symbol
** macros and compiler macros cannot be defined (meta.c refuses them as
** DEFUN refuses CAR), and their documentation and property lists cannot be
** changed — every later transaction would see the change, and the store
** could not keep it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_world.h"

static jt_V sym(jt_State *S, const char *name) { return jt_intern(S, name); }

/* The element of a list at index i, or JT_NOVALUE past its end (or where
** it is dotted). */
static jt_V nth_of(jt_V l, int i) {
  for (; i > 0 && jt_iscons(l); i--) l = jt_cdr(l);
  return jt_iscons(l) ? jt_car(l) : JT_NOVALUE;
}

/* The number of elements of a proper list, at most max + 1; -1 when it is
** dotted (or circular past max). */
static int length_upto(jt_V l, int max) {
  int n = 0;
  for (; jt_iscons(l) && n <= max; l = jt_cdr(l)) n++;
  return l == JT_NIL || n > max ? n : -1;
}

/* (QUOTE x): x; else JT_NOVALUE. */
static jt_V quoted(jt_State *S, jt_V form) {
  return jt_iscons(form) && jt_car(form) == JT_SYM(S, QUOTE) && length_upto(form, 2) == 2 ? nth_of(form, 1)
                                                                                           : JT_NOVALUE;
}

/* SYM, or the SYM of (SETF SYM); JT_NOVALUE for anything else. */
static jt_V name_symbol(jt_State *S, jt_V name) {
  if (jt_issymbol(name)) return name;
  if (jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) && length_upto(name, 2) == 2 &&
      jt_issymbol(nth_of(name, 1)))
    return nth_of(name, 1);
  return JT_NOVALUE;
}

/* A symbol a stored name can name: interned in a package a program can
** name (the kernel's internal home has none). */
static bool nameable(jt_State *S, jt_V v) {
  if (!jt_issymbol(v)) return false;
  uint16_t p = jt_symobj(S, v)->package;
  return p != JT_PKG_NONE && p != JT_PKG_INTERNAL;
}

/* Part of the language: a symbol of COMMON-LISP or JITI, or one the
** library defined. */
static bool builtin(jt_State *S, jt_V v) {
  return (jt_symobj(S, v)->h.flags & (JT_SYM_BUILTIN | JT_SYM_LOCKED)) != 0;
}

void jt_defs_record(jt_State *S, int kind, jt_V name, jt_V form) {
  if (!S->world_define) return;
  S->world_define(S, name, form == JT_NIL ? JT_DEF_ENTRY_GONE : JT_DEF_ENTRY, form, jt_mkfix(kind));
}

/* ---------------------------------------------------------- the importer */

bool jt_defs_imports(jt_State *S, int kind, jt_V form) {
  switch (kind) {
    case JITI_ENTRY_TYPE: case JITI_ENTRY_SYMBOL_MACRO: case JITI_ENTRY_SETF_EXPANDER:
    case JITI_ENTRY_COMPILER_MACRO: case JITI_ENTRY_DOCUMENTATION: case JITI_ENTRY_PLIST:
    case JITI_ENTRY_METHOD_COMBINATION:
      return true;
    case JITI_ENTRY_MACRO:
      return jt_iscons(form) && jt_car(form) == sym(S, "DEFINE-MODIFY-MACRO");
    default:
      return false;
  }
}

/* (SETF (accessor (QUOTE x)) value): x, and value in *value; JT_NOVALUE
** when the form is not of that shape. */
static jt_V setf_of(jt_State *S, jt_V form, const char *accessor, int nargs, jt_V *args, jt_V *value) {
  if (!jt_iscons(form) || jt_car(form) != JT_SYM(S, SETF) || length_upto(form, 3) != 3) return JT_NOVALUE;
  jt_V place = nth_of(form, 1);
  if (!jt_iscons(place) || jt_car(place) != sym(S, accessor) || length_upto(place, nargs + 1) != nargs + 1)
    return JT_NOVALUE;
  for (int i = 0; i < nargs; i++)
    if ((args[i] = quoted(S, nth_of(place, i + 1))) == JT_NOVALUE) return JT_NOVALUE;
  *value = nth_of(form, 2);
  return args[0];
}

bool jt_defs_form_ok(jt_State *S, int kind, jt_V name, jt_V form) {
  if (!jt_iscons(form)) return false;
  jt_V head = jt_car(form), second = nth_of(form, 1);
  int n = length_upto(form, 1 << 20);
  switch (kind) {
    case JITI_ENTRY_TYPE:  /* (DEFTYPE name lambda-list . body), or (DECLAIM (DECLARATION name)) */
      if (head == sym(S, "DECLAIM"))
        return n == 2 && jt_issymbol(name) && length_upto(second, 2) == 2 &&
               nth_of(second, 0) == sym(S, "DECLARATION") && nth_of(second, 1) == name;
      return head == sym(S, "DEFTYPE") && n >= 3 && jt_issymbol(name) && second == name;
    case JITI_ENTRY_SYMBOL_MACRO:  /* (DEFINE-SYMBOL-MACRO name expansion) */
      return head == sym(S, "DEFINE-SYMBOL-MACRO") && n == 3 && jt_issymbol(name) && second == name;
    case JITI_ENTRY_SETF_EXPANDER:
      return (head == sym(S, "DEFSETF") || head == sym(S, "DEFINE-SETF-EXPANDER")) && n >= 3 &&
             jt_issymbol(name) && second == name;
    case JITI_ENTRY_COMPILER_MACRO:
      return head == sym(S, "DEFINE-COMPILER-MACRO") && n >= 3 && name_symbol(S, name) != JT_NOVALUE &&
             jt_equal(S, second, name);
    case JITI_ENTRY_METHOD_COMBINATION:  /* (DEFINE-METHOD-COMBINATION name . short-or-long) */
      return head == sym(S, "DEFINE-METHOD-COMBINATION") && n >= 2 && jt_issymbol(name) && second == name &&
             !builtin(S, name);
    case JITI_ENTRY_MACRO:  /* (DEFINE-MODIFY-MACRO name lambda-list function [doc]) */
      return head == sym(S, "DEFINE-MODIFY-MACRO") && (n == 4 || n == 5) && jt_issymbol(name) && second == name;
    case JITI_ENTRY_DOCUMENTATION: {  /* (SETF (DOCUMENTATION 'name 'doc-type) doc), named (name doc-type) */
      jt_V args[2], doc;
      if (setf_of(S, form, "DOCUMENTATION", 2, args, &doc) == JT_NOVALUE) return false;
      return name_symbol(S, args[0]) != JT_NOVALUE && jt_issymbol(args[1]) && (doc == JT_NIL || jt_isstring(doc)) &&
             length_upto(name, 2) == 2 && jt_equal(S, nth_of(name, 0), args[0]) && nth_of(name, 1) == args[1];
    }
    case JITI_ENTRY_PLIST: {  /* (SETF (SYMBOL-PLIST 'name) 'plist) */
      jt_V args[1], value;
      if (setf_of(S, form, "SYMBOL-PLIST", 1, args, &value) == JT_NOVALUE || args[0] != name) return false;
      jt_V plist = quoted(S, value);
      int len = plist == JT_NOVALUE ? -1 : length_upto(plist, 1 << 24);
      return jt_issymbol(name) && len > 0 && len % 2 == 0;
    }
    default:
      return false;
  }
}

void jt_defs_import(jt_State *S, int kind, jt_V name, jt_V form) {
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, form);
  switch (kind) {
    case JITI_ENTRY_DOCUMENTATION: {  /* set as (setf documentation) sets it: no evaluation */
      jt_V args[2], doc = JT_NIL;
      setf_of(S, form, "DOCUMENTATION", 2, args, &doc);
      jt_V f = jt_symobj(S, sym(S, "%SET-DOCUMENTATION"))->function;  /* the library's */
      JT_PUSH(S, f);
      jt_funcall(S, f, 3, args[0], args[1], doc);
      break;
    }
    case JITI_ENTRY_PLIST: {
      jt_V args[1], value = JT_NIL;
      setf_of(S, form, "SYMBOL-PLIST", 1, args, &value);
      jt_plist_check(S, name);
      jt_Symbol *s = jt_symobj(S, name);
      JT_SET(S, s, s->plist, quoted(S, value));
      jt_plist_changed(S, name);
      break;
    }
    default:  /* the kernel's defining macro on the entry's own form */
      jt_eval_toplevel(S, form);
  }
  S->sp = base;
}

/* ----------------------------------------------------- property lists */

void jt_plist_check(jt_State *S, jt_V v) {
  if (S->kernel_mode || !builtin(S, v)) return;
  jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR),
            "cannot change the property list of %s: it is a built-in symbol, whose properties are the "
            "language's (keep them on a symbol of your own, or in a hash table held by a DEFVAR)",
            jt_symobj(S, v)->cname);
}

/* The entry holds nothing: its form is made from the symbol's property
** list when it is exported.  Only its coming and going is recorded: a list
** that stays non-empty changes by a store into the symbol or into one of
** its conses, which the export finds as it finds a variable's change
** (world.c), so a loop of (setf get) logs nothing per call. */
void jt_plist_changed(jt_State *S, jt_V v) {
  if (!S->world_define || !nameable(S, v)) return;
  bool want = jt_symobj(S, v)->plist != JT_NIL;
  if (jt_world_has_entry(S, JITI_ENTRY_PLIST, v) != want)
    jt_defs_record(S, JITI_ENTRY_PLIST, v, want ? JT_T : JT_NIL);
}

jt_V jt_defs_plist_form(jt_State *S, jt_V v) {
  jt_V *base = S->sp;
  JT_PUSH(S, v);
  jt_V q = jt_list(S, 2, JT_SYM(S, QUOTE), jt_symobj(S, v)->plist);
  JT_PUSH(S, q);
  jt_V name = jt_list(S, 2, JT_SYM(S, QUOTE), base[0]);
  JT_PUSH(S, name);
  jt_V place = jt_list(S, 2, sym(S, "SYMBOL-PLIST"), name);
  JT_PUSH(S, place);
  jt_V form = jt_list(S, 3, JT_SYM(S, SETF), place, base[1]);
  S->sp = base;
  return form;
}

/* ------------------------------------------------------ documentation */

/* (%documentation-entry name doc-type doc) What (setf documentation) of a
** name does besides keeping DOC (a string or NIL): refuses a built-in
** name, and records the entry (NAME DOC-TYPE) as the form that sets it. */
JT_FN(f_documentation_entry) {
  jt_check_kernel_caller(S);  /* records the form it makes */
  jt_V name = argv[0], type = argv[1], doc = argv[2];
  if (doc != JT_NIL && !jt_isstring(doc))
    jt_type_error(S, doc, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, NULL_), JT_SYM(S, STRING)));
  jt_V s = name_symbol(S, name);
  if (s == JT_NOVALUE) {
    char *p = jt_print_cstr(S, name, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "(setf documentation): a world keeps the documentation of names only (a symbol or (SETF "
             "symbol)), not of %s: set it on the object's name, e.g. (setf (documentation 'name "
             "'function) \"...\")", p);
    free(p);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
  jt_check_symbol(S, type);
  if (!S->kernel_mode && builtin(S, s))
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR),
              "cannot change the documentation of %s: it is a built-in symbol, whose documentation is the "
              "language's (document a name of your own)", jt_symobj(S, s)->cname);
  if (!S->world_define || !nameable(S, s) || !nameable(S, type)) return doc;
  jt_V *base = S->sp;
  jt_V n = s == name ? name : jt_list(S, 2, JT_SYM(S, SETF), s);   /* a copy: the caller may change its list */
  JT_PUSH(S, n);
  jt_V entry = jt_list(S, 2, base[0], type);
  JT_PUSH(S, entry);
  jt_V qn = jt_list(S, 2, JT_SYM(S, QUOTE), base[0]);
  JT_PUSH(S, qn);
  jt_V qt = jt_list(S, 2, JT_SYM(S, QUOTE), type);
  JT_PUSH(S, qt);
  jt_V place = jt_list(S, 3, sym(S, "DOCUMENTATION"), base[2], base[3]);
  JT_PUSH(S, place);
  jt_V form = jt_list(S, 3, JT_SYM(S, SETF), base[4], doc);
  JT_PUSH(S, form);
  jt_defs_record(S, JITI_ENTRY_DOCUMENTATION, base[1], form);
  S->sp = base;
  return doc;
}

/* ------------------------------------------------------- definitions */

/* (%record-definition kind name form) The defining functions of the
** library (%DEFTYPE, %DEFSETF, ...) record the form they were given, once
** they have made the definition from it.  KIND is the entry kind as a
** keyword (:TYPE, :SETF-EXPANDER, :COMPILER-MACRO, :MACRO); a form the
** import would refuse is refused here, so no such entry is ever stored. */
JT_FN(f_record_definition) {
  jt_check_kernel_caller(S);  /* records any form it is given */
  jt_V k = jt_check_symbol(S, argv[0]);
  char lower[64];
  const char *kn = jt_symname(S, k);
  size_t i = 0;
  for (; kn[i] && i + 1 < sizeof lower; i++) lower[i] = (char)(kn[i] >= 'A' && kn[i] <= 'Z' ? kn[i] + 32 : kn[i]);
  lower[i] = 0;
  int kind = jiti_entry_kind_parse(lower);
  if (kind < 0 || !jt_defs_imports(S, kind, argv[2]) || !jt_defs_form_ok(S, kind, argv[1], argv[2])) {
    char *f = jt_print_cstr(S, argv[2], true, 120);
    snprintf(S->msgbuf, sizeof S->msgbuf, "%s is not a definition of %s that a world can store", f, lower);
    free(f);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
  jt_defs_record(S, kind, argv[1], argv[2]);
  return argv[1];
}

/* (%definition-function form) The function a defining function of the
** library makes from a form it built: FORM is (LAMBDA ...), (FUNCTION
** (LAMBDA ...)) or a (DEFMACRO ...) to evaluate.  Made as EVAL makes it —
** analysed now, with the macros of this moment — except while an import
** makes the definition: then it is left unanalysed until its first call,
** as an imported function is, since the macros its body uses may call
** functions, read variables or property lists that are imported after it. */
JT_FN(f_definition_function) {
  jt_check_kernel_caller(S);  /* installs a macro it is given */
  jt_V form = argv[0];
  if (!jt_world_importing(S) || !jt_iscons(form)) return jt_eval_toplevel(S, form);
  jt_V head = jt_car(form);
  if (head == JT_SYM(S, DEFMACRO))
    return jt_define_lazily(S, form) ? nth_of(form, 1) : jt_eval_toplevel(S, form);
  jt_V lam = head == JT_SYM(S, FUNCTION) && length_upto(form, 2) == 2 ? nth_of(form, 1) : form;
  if (!jt_iscons(lam) || jt_car(lam) != JT_SYM(S, LAMBDA) || !jt_iscons(jt_cdr(lam)))
    return jt_eval_toplevel(S, form);
  /* (DEFUN #:DEFINITION lambda-list . body): its block's name is one no
  ** body can name, so it is the lambda's function exactly */
  jt_V *base = S->sp;
  JT_PUSH(S, lam);
  jt_V pname = jt_string_from_cstr(S, "DEFINITION");
  JT_PUSH(S, pname);
  jt_V name = jt_make_symbol(S, pname);
  JT_PUSH(S, name);
  jt_V def = jt_cons(S, base[2], jt_cdr(base[0]));
  JT_PUSH(S, def);
  def = jt_cons(S, JT_SYM(S, DEFUN), def);
  JT_PUSH(S, def);
  jt_V fn = jt_make_lazy_closure(S, def);
  S->sp = base;
  return fn;
}

static const jt_Reg defs_fns[] = {
  {"%DEFINITION-FUNCTION", f_definition_function, 1, 1,
   "(%definition-function form) The function of a definition's (LAMBDA ...) form, analysed now or, at an import, "
   "at its first call."},
  {"%RECORD-DEFINITION", f_record_definition, 3, 3,
   "(%record-definition kind name form) Record FORM as the world entry that defines NAME."},
  {"%DOCUMENTATION-ENTRY", f_documentation_entry, 3, 3,
   "(%documentation-entry name doc-type doc) Check and record the documentation of a name."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_defs(jt_State *S) { jt_register(S, defs_fns); }
