/*
** class.c — classes and instances (see jt_clos.h).
**
** A class is a jt_Class.  Standard classes (defclass) have direct slot
** definitions, a class precedence list computed by the standard algorithm
** (a topological sort of the local precedence orders, ties broken toward
** the class with the rightmost direct subclass), effective slot
** definitions and a *wrapper* describing the layout of their instances.
** Structure and condition types get a class too (their wrapper is their
** layout), and so do the built-in types, so that every object has a class
** methods can specialise on.
**
** Slot definitions are simple vectors (the SD_ fields below): direct ones
** as written in defclass, effective ones combined along the precedence
** list.  A slot with :allocation :class keeps its value in a cell, a cons
** (name . value), owned by the class that declares it and shared by its
** subclasses; JT_UNBOUND marks an unbound value, in cells and in instance
** slot vectors alike.
**
** Redefinition (CLHS 4.3.6).  Defining a class again changes the class
** object in place (every store passes the write barrier, so a checkpoint
** can restore it) and recomputes it and its subclasses.  A class whose
** instance slots changed gets a new wrapper; its instances become obsolete
** and are updated on their next use, calling
** update-instance-for-redefined-class with the added and discarded slots
** and the old values.  The world layer asks for the instances reachable
** from its managed state to be updated at once (jt_class_update_reachable),
** inside the transaction that redefined the class.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_clos.h"
#include "jt_world.h"

/* Slot definition fields. */
enum {
  SD_NAME,      /* symbol */
  SD_INITARGS,  /* list of symbols */
  SD_INITFORM,  /* the form, or JT_UNBOUND for none */
  SD_INITFN,    /* NIL (no initform), (value) for a constant, or a function */
  SD_ALLOC,     /* :INSTANCE or :CLASS */
  SD_TYPE,      /* type specifier or T */
  SD_DOC,       /* string or NIL */
  SD_READERS,   /* direct: list of reader names */
  SD_WRITERS,   /* direct: list of writer names */
  SD_CELL,      /* :class slots: the (name . value) cell */
  SD_INDEX,     /* effective :instance slots: index in the slot vector */
  SD_METHODS,   /* direct: the accessor methods made for it */
  SD_COUNT
};

#define SD(sd, f) (jt_vec_(sd)->items[f])
#define CLS(v) jt_class_(v)

static jt_V classes(jt_State *S) { return JT_CLOS(S, JT_CLOS_CLASSES); }

static JT_NORETURN void class_error(jt_State *S, jt_V obj, const char *fmt) {
  char *n = jt_print_cstr(S, obj, true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf, fmt, n);
  free(n);
  jt_error(S, "%s", S->msgbuf);
}


static jt_V list_reverse(jt_State *S, jt_V l) {
  jt_V r = JT_NIL;
  JT_PUSH(S, l);
  JT_PUSH(S, r);
  for (; jt_iscons(S->sp[-2]); S->sp[-2] = jt_cdr(S->sp[-2]))
    S->sp[-1] = jt_cons(S, jt_car(S->sp[-2]), S->sp[-1]);
  r = S->sp[-1];
  JT_POP(S, 2);
  return r;
}

/* A fresh list without x (x is in l at most once). */
static jt_V list_remove(jt_State *S, jt_V x, jt_V l) {
  jt_V *base = S->sp;
  int n = 0;
  for (; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(l) != x) { JT_PUSH(S, jt_car(l)); n++; }
  jt_V r = jt_list_from(S, n, base);
  S->sp = base;
  return r;
}

/* ------------------------------------------------------------ lookup */

static jt_V class_lookup(jt_State *S, jt_V name) {
  bool found;
  jt_V c = jt_hash_get(S, classes(S), name, &found);
  return found ? c : JT_NIL;
}

jt_V jt_find_class(jt_State *S, jt_V name) {
  jt_V c = class_lookup(S, name);
  return c != JT_NIL && JT_CLASS_KIND(CLS(c)) != JT_CLASS_FORWARD ? c : JT_NIL;
}

static jt_V class_alloc(jt_State *S, jt_V name, int kind) {
  JT_PUSH(S, name);
  jt_Class *c = (jt_Class *)jt_alloc(S, JT_TCLASS, sizeof(jt_Class));
  c->name = S->sp[-1];
  c->supers = c->subs = c->cpl = c->dslots = c->slots = c->wrapper = JT_NIL;
  c->dinitargs = c->initargs = c->doc = c->form = c->valid = JT_NIL;
  c->h.flags = (uint16_t)kind;
  JT_POP(S, 1);
  return (jt_V)c;
}

static void class_register(jt_State *S, jt_V cls) {
  JT_PUSH(S, cls);
  jt_hash_put(S, classes(S), CLS(cls)->name, cls);
  JT_POP(S, 1);
}

jt_V jt_class_ensure(jt_State *S, jt_V name) {
  jt_V c = class_lookup(S, name);
  if (c != JT_NIL) return c;
  c = class_alloc(S, name, JT_CLASS_FORWARD);
  class_register(S, c);
  return c;
}

bool jt_class_subclassp(jt_V c, jt_V cls) {
  if (c == cls) return true;
  return jt_clos_memq(cls, CLS(c)->cpl);
}

jt_V jt_class_of(jt_State *S, jt_V v) {
  if (jt_isfix(v)) return JT_CLASS(S, FIXNUM);
  if (jt_ischar(v)) return JT_CLASS(S, CHARACTER);
  if (v == JT_NIL) return JT_CLASS(S, NULL_);
  if (v == JT_T) return JT_CLASS(S, SYMBOL);
  if (!jt_isptr(v)) return JT_CLASS(S, T);
  switch (jt_type(v)) {
    case JT_TINSTANCE: return jt_vec_(jt_inst_(v)->wrapper)->items[JT_W_CLASS];
    case JT_TCONS: return JT_CLASS(S, CONS);
    case JT_TSYMBOL: return JT_CLASS(S, SYMBOL);
    case JT_TSTRING: return JT_CLASS(S, STRING);
    case JT_TVECTOR: case JT_TARRAY:
      /* the most specific class of figure 4-8 (SIMPLE-VECTOR as SBCL has it) */
      if (!jt_vectorp(v)) return JT_CLASS(S, ARRAY);
      if (jt_array_elt(v) == JT_ELT_BIT) return JT_CLASS(S, BIT_VECTOR);
      if (jt_array_elt(v) == JT_ELT_CHAR) return JT_CLASS(S, STRING);
      return jt_simple_array_p(v) ? JT_CLASS(S, SIMPLE_VECTOR) : JT_CLASS(S, VECTOR);
    case JT_TCOMPLEX: return JT_CLASS(S, COMPLEX);
    case JT_TPACKAGE: return JT_CLASS(S, PACKAGE);
    case JT_TRANDOM: return JT_CLASS(S, RANDOM_STATE);
    case JT_TBIGNUM: return JT_CLASS(S, BIGNUM);
    case JT_TRATIO: return JT_CLASS(S, RATIO);
    case JT_TFLOAT: return jt_issingle(v) ? JT_CLASS(S, SINGLE_FLOAT) : JT_CLASS(S, DOUBLE_FLOAT);
    case JT_THASH: return JT_CLASS(S, HASH_TABLE);
    case JT_TPRIM: case JT_TCLOSURE: return JT_CLASS(S, FUNCTION);
    case JT_TGENERIC: return JT_CLASS(S, STANDARD_GENERIC_FUNCTION);
    case JT_TMETHOD: return JT_CLASS(S, STANDARD_METHOD);
    case JT_TSTREAM: return jt_stream_class(S, v);
    case JT_TRESTART: return JT_CLASS(S, RESTART);
    case JT_TSTRUCT: {
      jt_V c = jt_layout_(jt_struct_(v)->layout)->class;
      return jt_isptr(c) ? c : JT_CLASS(S, T);
    }
    case JT_TCLASS:
      switch (JT_CLASS_KIND(CLS(v))) {
        case JT_CLASS_BUILTIN: return JT_CLASS(S, BUILT_IN_CLASS);
        case JT_CLASS_STRUCTURE: return JT_CLASS(S, STRUCTURE_CLASS);
        case JT_CLASS_CONDITION: return JT_CLASS(S, CONDITION_CLASS);
        case JT_CLASS_FORWARD: return JT_CLASS(S, FORWARD_REFERENCED_CLASS);
        default: return JT_CLASS(S, STANDARD_CLASS);
      }
    default: return JT_CLASS(S, T);
  }
}

/* ----------------------------------------------- class precedence list */

/* The direct superclasses of c, or `own` when c is the class being
** (re)defined: its new superclasses are checked before anything changes. */
static jt_V supers_of(jt_V c, jt_V cls, jt_V own) {
  return c == cls && own != JT_NOVALUE ? own : CLS(c)->supers;
}

/* The standard algorithm (CLHS 4.3.5): a topological sort of the local
** precedence orders (each class before its first direct superclass, each
** direct superclass before the next); among several candidates, the one
** that is a direct superclass of the most recently placed class.  `own`
** (or JT_NOVALUE) stands for cls's direct superclasses.  Returns JT_NOVALUE
** when some superclass is only forward-referenced; signals when the orders
** are inconsistent.  The work lives in Lisp objects (running out of fuel
** half-way leaks nothing), and costs about the number of classes times
** their direct superclasses, plus the candidates' tie-breaks. */
static jt_V compute_cpl(jt_State *S, jt_V cls, jt_V own) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  JT_PUSH(S, own);
  jt_V csv = jt_make_vector(S, 0, JT_NIL);
  jt_o(csv)->flags |= JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR;
  JT_PUSH(S, csv);                                   /* base[2]: the classes */
  jt_V index = jt_make_hash(S, JT_HASH_EQ, 16);
  jt_o(index)->flags |= JT_HASH_MANAGED;             /* scratch */
  JT_PUSH(S, index);                                 /* base[3]: class -> position */
  jt_vector_push(S, base[2], cls);
  jt_hash_put(S, base[3], cls, jt_mkfix(0));
  for (size_t i = 0; i < jt_vec_(base[2])->len; i++) {
    jt_V c = jt_vec_(base[2])->items[i];
    if (JT_CLASS_KIND(CLS(c)) == JT_CLASS_FORWARD) { S->sp = base; return JT_NOVALUE; }
    jt_fuel_tick(S);
    for (jt_V l = supers_of(c, base[0], base[1]); jt_iscons(l); l = jt_cdr(l)) {
      bool seen;
      jt_hash_get(S, base[3], jt_car(l), &seen);
      if (seen) continue;
      JT_PUSH(S, l);
      jt_hash_put(S, base[3], jt_car(l), jt_mkfix((intptr_t)jt_vec_(base[2])->len));
      jt_vector_push(S, base[2], jt_car(S->sp[-1]));
      l = S->sp[-1];
      JT_POP(S, 1);
    }
  }
  size_t n = jt_vec_(base[2])->len;
  /* successors (lists of positions) and in-degrees */
  jt_V succ = jt_make_vector(S, n, JT_NIL);
  JT_PUSH(S, succ);                                  /* base[4] */
  jt_V indeg = jt_make_vector(S, n, jt_mkfix(0));
  JT_PUSH(S, indeg);                                 /* base[5] */
  for (size_t i = 0; i < n; i++) {
    jt_V prev = jt_mkfix((intptr_t)i);
    for (jt_V l = supers_of(jt_vec_(base[2])->items[i], base[0], base[1]); jt_iscons(l); l = jt_cdr(l)) {
      bool found;
      jt_V to = jt_hash_get(S, base[3], jt_car(l), &found);
      JT_PUSH(S, l);
      jt_V cell = jt_cons(S, to, jt_vec_(base[4])->items[jt_fixval(prev)]);
      jt_vec_(base[4])->items[jt_fixval(prev)] = cell;
      jt_vec_(base[5])->items[jt_fixval(to)] = jt_mkfix(jt_fixval(jt_vec_(base[5])->items[jt_fixval(to)]) + 1);
      l = S->sp[-1];
      JT_POP(S, 1);
      prev = to;
    }
  }
  jt_V outv = jt_make_vector(S, n, JT_NIL);
  JT_PUSH(S, outv);                                  /* base[6]: the order */
  jt_V *cs = jt_vec_(base[2])->items, *sc = jt_vec_(base[4])->items;
  jt_V *deg = jt_vec_(base[5])->items, *out = jt_vec_(base[6])->items;
  cls = base[0];
  own = base[1];
  /* placed: deg = -1; candidates: deg = 0 */
  for (size_t nout = 0; nout < n; nout++) {
    size_t pick = n, ncand = 0;
    for (size_t c = 0; c < n; c++)
      if (deg[c] == jt_mkfix(0)) { ncand++; pick = c; }
    if ((nout & 63) == 0) jt_fuel_tick(S);
    if (ncand == 0)
      class_error(S, CLS(cls)->name, "cannot compute the class precedence list of %s: "
                  "the orders of its superclasses are inconsistent");
    if (ncand > 1) {
      bool found = false;
      for (size_t o = nout; o-- > 0 && !found;)
        for (jt_V l = supers_of(out[o], cls, own); jt_iscons(l) && !found; l = jt_cdr(l)) {
          bool f;
          jt_V at = jt_hash_get(S, base[3], jt_car(l), &f);
          if (deg[jt_fixval(at)] == jt_mkfix(0)) { pick = (size_t)jt_fixval(at); found = true; }
        }
    }
    deg[pick] = jt_mkfix(-1);
    out[nout] = cs[pick];
    for (jt_V l = sc[pick]; jt_iscons(l); l = jt_cdr(l)) {
      intptr_t t = jt_fixval(jt_car(l));
      deg[t] = jt_mkfix(jt_fixval(deg[t]) - 1);
    }
  }
  jt_V l = jt_list_from(S, (int)n, jt_vec_(base[6])->items);
  S->sp = base;
  return l;
}

/* ------------------------------------------------------- built-in classes */

jt_V jt_class_builtin(jt_State *S, const char *name, jt_V supers, int kind) {
  jt_V *base = S->sp;
  JT_PUSH(S, supers);
  jt_V sym = jt_intern(S, name);
  jt_V c = jt_find_class(S, sym);
  if (c == JT_NIL) c = class_alloc(S, sym, kind);
  JT_PUSH(S, c);
  JT_SET(S, c, CLS(c)->supers, base[0]);
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V s = jt_car(l);
    jt_V subs = jt_cons(S, base[1], CLS(s)->subs);
    JT_SET(S, s, CLS(s)->subs, subs);
  }
  jt_V cpl = compute_cpl(S, base[1], JT_NOVALUE);
  JT_SET(S, base[1], CLS(base[1])->cpl, cpl);
  CLS(base[1])->h.flags |= JT_CLASS_FINALIZED;
  class_register(S, base[1]);
  c = base[1];
  S->sp = base;
  return c;
}

/* Structure and condition types: the class of a layout, made or updated
** when the layout is defined. */
void jt_class_note_layout(jt_State *S, jt_V layout) {
  jt_V *base = S->sp;
  JT_PUSH(S, layout);
  jt_Layout *L = jt_layout_(layout);
  int kind = (L->h.flags & JT_LAYOUT_CONDITION) ? JT_CLASS_CONDITION : JT_CLASS_STRUCTURE;
  jt_V c = class_lookup(S, L->name);
  if (c == JT_NIL || JT_CLASS_KIND(CLS(c)) != kind) {
    c = class_alloc(S, L->name, kind);
    JT_PUSH(S, c);
    class_register(S, c);
  } else {
    JT_PUSH(S, c);
    for (jt_V l = CLS(c)->supers; jt_iscons(l); l = jt_cdr(l)) {
      jt_V s = jt_car(l);
      jt_V subs = list_remove(S, base[1], CLS(s)->subs);
      JT_SET(S, s, CLS(s)->subs, subs);
    }
  }
  /* the parents' classes, or the root of the kind */
  jt_V supers = JT_NIL;
  JT_PUSH(S, supers);
  for (jt_V p = jt_layout_(base[0])->parents; jt_iscons(p); p = jt_cdr(p))
    if (jt_isptr(jt_layout_(jt_car(p))->class)) base[2] = jt_cons(S, jt_layout_(jt_car(p))->class, base[2]);
  base[2] = jt_nreverse_list(base[2]);
  if (base[2] == JT_NIL)
    base[2] = jt_list(S, 1, kind == JT_CLASS_CONDITION ? JT_CLASS(S, T) : JT_CLASS(S, STRUCTURE_OBJECT));
  JT_SET(S, base[1], CLS(base[1])->supers, base[2]);
  for (jt_V l = base[2]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V s = jt_car(l);
    jt_V subs = jt_cons(S, base[1], CLS(s)->subs);
    JT_SET(S, s, CLS(s)->subs, subs);
  }
  JT_SET(S, base[1], CLS(base[1])->wrapper, base[0]);
  jt_V cpl = compute_cpl(S, base[1], JT_NOVALUE);
  JT_SET(S, base[1], CLS(base[1])->cpl, cpl);
  CLS(base[1])->h.flags |= JT_CLASS_FINALIZED;
  JT_SET(S, base[0], jt_layout_(base[0])->class, base[1]);
  jt_clos_changed(S);
  S->sp = base;
}

/* ------------------------------------------------------ slot definitions */

static jt_V sd_make(jt_State *S, jt_V name) {
  JT_PUSH(S, name);
  jt_V sd = jt_make_vector(S, SD_COUNT, JT_NIL);
  SD(sd, SD_NAME) = S->sp[-1];
  SD(sd, SD_INITFORM) = JT_UNBOUND;
  SD(sd, SD_TYPE) = JT_T;
  JT_POP(S, 1);
  return sd;
}

/* Self-evaluating forms need no function: their value is stored. */
static bool constant_form(jt_State *S, jt_V f, jt_V *value) {
  if (jt_iscons(f)) {
    if (jt_car(f) == JT_SYM(S, QUOTE) && jt_iscons(jt_cdr(f)) && jt_cdr(jt_cdr(f)) == JT_NIL) {
      *value = jt_car(jt_cdr(f));
      return true;
    }
    return false;
  }
  if (jt_issymbol(f) && f != JT_NIL && f != JT_T && !jt_iskeyword(f)) return false;
  *value = f;
  return true;
}

/* A function of no arguments computing `form` in the null lexical
** environment, named `name` (for backtraces); analysed now unless lazy. */
static jt_V form_function(jt_State *S, jt_V name, jt_V form, bool lazy) {
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, form);
  jt_V body = jt_list(S, 1, base[1]);
  JT_PUSH(S, body);
  jt_V def = jt_cons(S, JT_NIL, base[2]);       /* (name () form) */
  def = jt_cons(S, base[0], def);
  def = jt_cons(S, JT_SYM(S, DEFUN), def);
  JT_PUSH(S, def);
  jt_V fn = jt_make_lazy_closure(S, def);
  JT_PUSH(S, fn);
  if (!lazy) jt_closure_lambda(S, fn);
  S->sp = base;
  return fn;
}

/* The initialisation function of a form: (value) or a function.  `lexical`
** is an alist from initforms (by identity) to the closures the defclass
** macro made of them where they close over a lexical environment. */
static jt_V init_function(jt_State *S, jt_V name, jt_V form, bool lazy, jt_V lexical) {
  jt_V value;
  if (constant_form(S, form, &value)) return jt_list(S, 1, value);
  for (jt_V l = lexical; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(jt_car(l)) == form) return jt_cdr(jt_car(l));
  return form_function(S, name, form, lazy);
}

static jt_V init_value(jt_State *S, jt_V initfn) {
  if (jt_iscons(initfn)) return jt_car(initfn);
  return jt_funcall(S, initfn, 0);
}

/* A name for an initform's function: #:CLASS-SLOT (uninterned, so the
** block it establishes captures nothing). */
static jt_V init_name(jt_State *S, jt_V cls_name, jt_V slot_name) {
  size_t n1 = strlen(jt_symname(S, cls_name)), n2 = strlen(jt_symname(S, slot_name));
  char *buf = malloc(n1 + n2 + 2);
  if (!buf) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  memcpy(buf, jt_symname(S, cls_name), n1);
  buf[n1] = ' ';
  memcpy(buf + n1 + 1, jt_symname(S, slot_name), n2 + 1);
  jt_V str = jt_string_from_utf8(S, buf, n1 + n2 + 1);
  free(buf);
  return jt_make_symbol(S, str);
}

/* ------------------------------------------------------------ defclass */

/* "malformed defclass (WHAT): FORM" */
static JT_NORETURN void defclass_error(jt_State *S, jt_V form, const char *what) {
  char why[200];
  snprintf(why, sizeof why, "malformed defclass (%s)", what);
  jt_clos_form_error(S, why, form);
}


/* Parse one slot specifier into a direct slot definition.  `old` is the
** class's previous direct slots (a :class slot keeps its cell, and so its
** value, across a redefinition). */
static jt_V parse_slot(jt_State *S, jt_V form, jt_V spec, jt_V cls_name, jt_V old, bool lazy, jt_V lexical) {
  jt_V *base = S->sp;
  JT_PUSH(S, spec);
  jt_V name = jt_iscons(spec) ? jt_car(spec) : spec;
  if (!jt_issymbol(name) || name == JT_NIL || name == JT_T || jt_iskeyword(name) ||
      (jt_symobj(S, name)->h.flags & JT_SYM_CONSTANT))
    defclass_error(S, form, "a slot name is not a symbol");
  jt_V sd = sd_make(S, name);
  JT_PUSH(S, sd);            /* base[1] */
  SD(sd, SD_ALLOC) = JT_CSYM(S, K_INSTANCE);
  jt_V opts = jt_iscons(spec) ? jt_cdr(spec) : JT_NIL;
  if (!jt_clos_proper_list(opts)) defclass_error(S, form, "a slot specifier is not a proper list");
  bool seen_initform = false, seen_alloc = false, seen_type = false, seen_doc = false;
  for (jt_V o = opts; jt_iscons(o); o = jt_cdr(jt_cdr(o))) {
    if (!jt_iscons(jt_cdr(o))) defclass_error(S, form, "a slot option has no value");
    jt_V key = jt_car(o), val = jt_car(jt_cdr(o));
    jt_V cell;
    if (key == JT_CSYM(S, K_INITARG)) {
      if (!jt_issymbol(val)) defclass_error(S, form, ":initarg needs a symbol");
      cell = jt_cons(S, val, JT_NIL);
      jt_cdr(cell) = SD(base[1], SD_INITARGS);
      JT_SET(S, base[1], SD(base[1], SD_INITARGS), cell);
    } else if (key == JT_CSYM(S, K_INITFORM)) {
      if (seen_initform) defclass_error(S, form, ":initform given twice");
      seen_initform = true;
      SD(base[1], SD_INITFORM) = val;
    } else if (key == JT_CSYM(S, K_READER) || key == JT_CSYM(S, K_ACCESSOR)) {
      if (!jt_clos_function_name_p(S, val) || jt_iscons(val)) defclass_error(S, form, "a reader name is not a symbol");
      cell = jt_cons(S, val, SD(base[1], SD_READERS));
      SD(base[1], SD_READERS) = cell;
      if (key == JT_CSYM(S, K_ACCESSOR)) {
        jt_V sn = jt_list(S, 2, JT_SYM(S, SETF), jt_car(jt_cdr(o)));
        cell = jt_cons(S, sn, SD(base[1], SD_WRITERS));
        SD(base[1], SD_WRITERS) = cell;
      }
    } else if (key == JT_CSYM(S, K_WRITER)) {
      if (!jt_clos_function_name_p(S, val)) defclass_error(S, form, "a writer name is not a function name");
      cell = jt_cons(S, val, SD(base[1], SD_WRITERS));
      SD(base[1], SD_WRITERS) = cell;
    } else if (key == JT_CSYM(S, K_ALLOCATION)) {
      if (seen_alloc) defclass_error(S, form, ":allocation given twice");
      seen_alloc = true;
      if (val != JT_CSYM(S, K_INSTANCE) && val != JT_CSYM(S, K_CLASS))
        defclass_error(S, form, ":allocation must be :instance or :class");
      SD(base[1], SD_ALLOC) = val;
    } else if (key == JT_CSYM(S, K_TYPE)) {
      if (seen_type) defclass_error(S, form, ":type given twice");
      seen_type = true;
      SD(base[1], SD_TYPE) = val;
    } else if (key == JT_CSYM(S, K_DOCUMENTATION)) {
      if (seen_doc || !jt_isstring(val)) defclass_error(S, form, ":documentation needs one string");
      seen_doc = true;
      SD(base[1], SD_DOC) = val;
    } else {
      defclass_error(S, form, "unknown slot option");
    }
  }
  /* the options were pushed in reverse */
  SD(base[1], SD_INITARGS) = list_reverse(S, SD(base[1], SD_INITARGS));
  SD(base[1], SD_READERS) = list_reverse(S, SD(base[1], SD_READERS));
  SD(base[1], SD_WRITERS) = list_reverse(S, SD(base[1], SD_WRITERS));
  if (SD(base[1], SD_INITFORM) != JT_UNBOUND) {
    jt_V fname = init_name(S, cls_name, name);
    JT_PUSH(S, fname);
    jt_V fn = init_function(S, fname, SD(base[1], SD_INITFORM), lazy, lexical);
    SD(base[1], SD_INITFN) = fn;
    JT_POP(S, 1);
  }
  if (SD(base[1], SD_ALLOC) == JT_CSYM(S, K_CLASS)) {
    /* a shared slot keeps its cell (and value) if it stays shared */
    jt_V cell = JT_NIL;
    for (jt_V l = old; jt_iscons(l); l = jt_cdr(l))
      if (SD(jt_car(l), SD_NAME) == name && SD(jt_car(l), SD_CELL) != JT_NIL)
        cell = SD(jt_car(l), SD_CELL);
    if (cell == JT_NIL) {
      cell = jt_cons(S, name, JT_UNBOUND);
      JT_PUSH(S, cell);
      if (!lazy && SD(base[1], SD_INITFN) != JT_NIL) {
        jt_V v = init_value(S, SD(base[1], SD_INITFN));
        jt_cdr(S->sp[-1]) = v;
      }
      cell = S->sp[-1];
      JT_POP(S, 1);
    }
    SD(base[1], SD_CELL) = cell;
  }
  sd = base[1];
  S->sp = base;
  return sd;
}

static bool same_names(jt_V a, jt_V b) {
  jt_Vector *x = jt_vec_(a), *y = jt_vec_(b);
  if (x->len != y->len) return false;
  for (size_t i = 0; i < x->len; i++)
    if (x->items[i] != y->items[i]) return false;
  return true;
}

/* Build the effective slot definitions, default initargs and wrapper of a
** class whose precedence list is known. */
static void compute_slots(jt_State *S, jt_V cls) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  /* slot names: the most general class's first */
  jt_V names = JT_NIL;
  JT_PUSH(S, names);                 /* base[1] */
  jt_V rcpl = list_reverse(S, CLS(cls)->cpl);
  JT_PUSH(S, rcpl);                  /* base[2] */
  for (jt_V k = base[2]; jt_iscons(k); k = jt_cdr(k))
    for (jt_V d = CLS(jt_car(k))->dslots; jt_iscons(d); d = jt_cdr(d))
      if (!jt_clos_memq(SD(jt_car(d), SD_NAME), base[1])) base[1] = jt_cons(S, SD(jt_car(d), SD_NAME), base[1]);
  base[1] = jt_nreverse_list(base[1]);
  jt_V effs = JT_NIL;
  JT_PUSH(S, effs);                  /* base[3] */
  int index = 0;
  for (jt_V nl = base[1]; jt_iscons(nl); nl = jt_cdr(nl)) {
    jt_V name = jt_car(nl);
    jt_V eff = sd_make(S, name);
    JT_PUSH(S, eff);
    bool first = true, have_init = false, have_type = false, have_doc = false;
    for (jt_V k = CLS(base[0])->cpl; jt_iscons(k); k = jt_cdr(k))
      for (jt_V d = CLS(jt_car(k))->dslots; jt_iscons(d); d = jt_cdr(d)) {
        jt_V sd = jt_car(d);
        if (SD(sd, SD_NAME) != name) continue;
        if (first) {
          SD(eff, SD_ALLOC) = SD(sd, SD_ALLOC);
          SD(eff, SD_CELL) = SD(sd, SD_CELL);
          first = false;
        }
        if (!have_init && SD(sd, SD_INITFORM) != JT_UNBOUND) {
          SD(eff, SD_INITFORM) = SD(sd, SD_INITFORM);
          SD(eff, SD_INITFN) = SD(sd, SD_INITFN);
          have_init = true;
        }
        if (!have_type && SD(sd, SD_TYPE) != JT_T) { SD(eff, SD_TYPE) = SD(sd, SD_TYPE); have_type = true; }
        if (!have_doc && SD(sd, SD_DOC) != JT_NIL) { SD(eff, SD_DOC) = SD(sd, SD_DOC); have_doc = true; }
        for (jt_V ia = SD(sd, SD_INITARGS); jt_iscons(ia); ia = jt_cdr(ia))
          if (!jt_clos_memq(jt_car(ia), SD(eff, SD_INITARGS))) {
            jt_V c = jt_cons(S, jt_car(ia), SD(eff, SD_INITARGS));
            eff = S->sp[-1];
            SD(eff, SD_INITARGS) = c;
          }
      }
    eff = S->sp[-1];
    SD(eff, SD_INITARGS) = list_reverse(S, SD(eff, SD_INITARGS));
    eff = S->sp[-1];
    if (SD(eff, SD_ALLOC) == JT_CSYM(S, K_INSTANCE)) SD(eff, SD_INDEX) = jt_mkfix(index++);
    base[3] = jt_cons(S, eff, base[3]);
    JT_POP(S, 1);
  }
  base[3] = jt_nreverse_list(base[3]);
  JT_SET(S, base[0], CLS(base[0])->slots, base[3]);
  /* default initargs: the most specific class's wins */
  jt_V dias = JT_NIL;
  JT_PUSH(S, dias);                  /* base[4] */
  for (jt_V k = CLS(base[0])->cpl; jt_iscons(k); k = jt_cdr(k))
    for (jt_V d = CLS(jt_car(k))->dinitargs; jt_iscons(d); d = jt_cdr(d)) {
      bool have = false;
      for (jt_V e = base[4]; jt_iscons(e) && !have; e = jt_cdr(e)) have = jt_car(jt_car(e)) == jt_car(jt_car(d));
      if (!have) base[4] = jt_cons(S, jt_car(d), base[4]);
    }
  base[4] = jt_nreverse_list(base[4]);
  JT_SET(S, base[0], CLS(base[0])->initargs, base[4]);
  /* the wrapper: instance slot names and the shared cells */
  jt_V names_v = jt_make_vector(S, (size_t)index, JT_NIL);
  JT_PUSH(S, names_v);               /* base[5] */
  jt_V shared = JT_NIL;
  JT_PUSH(S, shared);                /* base[6] */
  for (jt_V e = base[3]; jt_iscons(e); e = jt_cdr(e)) {
    jt_V sd = jt_car(e);
    if (SD(sd, SD_INDEX) != JT_NIL) jt_vec_(base[5])->items[jt_fixval(SD(sd, SD_INDEX))] = SD(sd, SD_NAME);
    else base[6] = jt_cons(S, SD(sd, SD_CELL), base[6]);
  }
  /* keep the old wrapper when nothing about the instances' layout changed;
  ** a provisional one (import) is adopted when its slots are the class's */
  jt_V ow = CLS(base[0])->wrapper;
  bool same = jt_isvector(ow);
  if (same && jt_vec_(ow)->items[JT_W_SHARED] == JT_T) {
    if (same_names(jt_vec_(ow)->items[JT_W_NAMES], base[5])) {
      JT_SET(S, ow, jt_vec_(ow)->items[JT_W_SHARED], base[6]);
      S->sp = base;
      return;
    }
    same = false;
  }
  if (same) {
    jt_Vector *on = jt_vec_(jt_vec_(ow)->items[JT_W_NAMES]);
    same = on->len == (size_t)index;
    for (size_t i = 0; same && i < on->len; i++) same = on->items[i] == jt_vec_(base[5])->items[i];
    jt_V os = jt_vec_(ow)->items[JT_W_SHARED];
    size_t nos = 0, nns = 0;
    for (jt_V l = os; jt_iscons(l); l = jt_cdr(l)) { nos++; same = same && jt_clos_memq(jt_car(l), base[6]); }
    for (jt_V l = base[6]; jt_iscons(l); l = jt_cdr(l)) nns++;
    same = same && nos == nns;
  }
  if (!same) {
    jt_V w = jt_make_vector(S, JT_W_COUNT, JT_NIL);
    jt_vec_(w)->items[JT_W_CLASS] = base[0];
    jt_vec_(w)->items[JT_W_NAMES] = base[5];
    jt_vec_(w)->items[JT_W_SHARED] = base[6];
    JT_SET(S, base[0], CLS(base[0])->wrapper, w);
  }
  S->sp = base;
}

/* make-instances-obsolete: the class's instances take a new wrapper of
** the same slots, so each is updated (update-instance-for-redefined-class,
** nothing added or discarded) at its next use; those in the world's managed
** state now, inside the transaction, as after a redefinition. */
void jt_class_make_obsolete(jt_State *S, jt_V cls) {
  if (JT_CLASS_KIND(CLS(cls)) != JT_CLASS_STANDARD || !jt_isvector(CLS(cls)->wrapper)) return;
  if (CLS(cls)->h.flags & JT_CLASS_LOCKED) {
    char *n = jt_print_cstr(S, CLS(cls)->name, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf, "cannot make the instances of the built-in class %s obsolete", n);
    free(n);
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "%s", S->msgbuf);
  }
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  jt_V w = jt_make_vector(S, JT_W_COUNT, JT_NIL);
  jt_V ow = CLS(base[0])->wrapper;
  for (int i = 0; i < JT_W_COUNT; i++) jt_vec_(w)->items[i] = jt_vec_(ow)->items[i];
  JT_SET(S, base[0], CLS(base[0])->wrapper, w);
  jt_clos_changed(S);
  jt_world_update_instances(S);
  S->sp = base;
}

/* Compute one standard class.  A class with a forward-referenced
** superclass stays unfinalized (it can have no instances yet). */
static void finalize_one(jt_State *S, jt_V cls) {
  if (JT_CLASS_KIND(CLS(cls)) != JT_CLASS_STANDARD) return;
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  jt_V cpl = compute_cpl(S, cls, JT_NOVALUE);
  if (cpl == JT_NOVALUE) {
    JT_TOUCH(S, base[0]);
    CLS(base[0])->h.flags &= (uint16_t)~JT_CLASS_FINALIZED;
    JT_SET(S, base[0], CLS(base[0])->cpl, JT_NIL);
  } else {
    JT_SET(S, base[0], CLS(base[0])->cpl, cpl);
    compute_slots(S, base[0]);
    JT_TOUCH(S, base[0]);
    CLS(base[0])->h.flags |= JT_CLASS_FINALIZED;
  }
  S->sp = base;
}

/* Compute cls and every class below it, each once (a class reached by
** several paths is not recomputed for each: a lattice of diamonds would
** make that exponential).  The order does not matter: a class's
** precedence list and slots come from its superclasses' direct
** definitions. */
static void finalize(jt_State *S, jt_V cls) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  base[0] = jt_list(S, 1, cls);            /* base[0]: the classes, in order found */
  JT_PUSH(S, base[0]);                     /* base[1]: its last cons */
  jt_V seen = jt_make_hash(S, JT_HASH_EQ, 16);
  jt_o(seen)->flags |= JT_HASH_MANAGED;    /* scratch: never a change of the world */
  JT_PUSH(S, seen);                        /* base[2] */
  jt_hash_put(S, base[2], cls, JT_T);
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    for (jt_V s = CLS(jt_car(l))->subs; jt_iscons(s); s = jt_cdr(s)) {
      jt_fuel_tick(S);
      bool found;
      jt_hash_get(S, base[2], jt_car(s), &found);
      if (found) continue;
      JT_PUSH(S, l);
      JT_PUSH(S, s);
      jt_hash_put(S, base[2], jt_car(s), JT_T);
      s = S->sp[-1];
      jt_V cell = jt_cons(S, jt_car(s), JT_NIL);
      JT_POP(S, 1);
      JT_SET(S, base[1], jt_cons_(base[1])->cdr, cell);
      base[1] = cell;
      l = S->sp[-1];
      JT_POP(S, 1);
    }
  }
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    JT_PUSH(S, l);
    finalize_one(S, jt_car(l));
    l = S->sp[-1];
    JT_POP(S, 1);
  }
  S->sp = base;
}

/* The accessor methods of a class's direct slots. */
static void remove_accessors(jt_State *S, jt_V cls) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  for (jt_V d = CLS(cls)->dslots; jt_iscons(d); d = jt_cdr(d))
    for (jt_V m = SD(jt_car(d), SD_METHODS); jt_iscons(m); m = jt_cdr(m))
      if (jt_method_(jt_car(m))->gf != JT_NIL) jt_gf_remove_method(S, jt_method_(jt_car(m))->gf, jt_car(m));
  S->sp = base;
}

static void add_accessors(jt_State *S, jt_V cls) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  for (jt_V d = CLS(cls)->dslots; jt_iscons(d); d = jt_cdr(d)) {
    jt_V sd = jt_car(d);
    JT_PUSH(S, sd);
    for (int w = 0; w < 2; w++)
      for (jt_V r = SD(sd, w ? SD_WRITERS : SD_READERS); jt_iscons(r); r = jt_cdr(r)) {
        jt_V *mb = S->sp;
        jt_V ll = w ? jt_list(S, 2, JT_CSYM(S, NEW_VALUE), JT_CSYM(S, INSTANCE))
                    : jt_list(S, 1, JT_CSYM(S, INSTANCE));
        JT_PUSH(S, ll);
        jt_V gf = jt_gf_ensure(S, jt_car(r), mb[0]);
        JT_PUSH(S, gf);
        jt_V specs = w ? jt_list(S, 2, JT_CLASS(S, T), base[0]) : jt_list(S, 1, base[0]);
        JT_PUSH(S, specs);
        jt_V m = jt_method_make(S, JT_NIL, mb[2], mb[0], JT_NIL, w ? JT_METH_WRITER : JT_METH_READER);
        JT_PUSH(S, m);
        JT_SET(S, m, jt_method_(m)->slot, SD(sd, SD_NAME));
        jt_gf_add_method(S, mb[1], m);
        jt_V ms = jt_cons(S, mb[3], SD(sd, SD_METHODS));
        JT_SET(S, sd, SD(sd, SD_METHODS), ms);
        S->sp = mb;
      }
    JT_POP(S, 1);
  }
  S->sp = base;
}

/* Parse the class options: *dias gets the direct default initargs (a list
** of (key form function)), *doc the documentation.  Changes nothing. */
static void parse_options(jt_State *S, jt_V form, jt_V name, jt_V opts, bool lazy, jt_V lexical,
                          jt_V *dias, jt_V *doc) {
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  JT_PUSH(S, opts);
  JT_PUSH(S, JT_NIL);               /* base[2]: the default initargs */
  *doc = JT_NIL;
  bool seen_dia = false, seen_doc = false;
  for (jt_V o = opts; jt_iscons(o); o = jt_cdr(o)) {
    jt_V opt = jt_car(o);
    if (!jt_iscons(opt) || !jt_clos_proper_list(opt)) defclass_error(S, form, "a class option is not a list");
    jt_V key = jt_car(opt);
    if (key == JT_CSYM(S, K_DEFAULT_INITARGS)) {
      if (seen_dia) defclass_error(S, form, ":default-initargs given twice");
      seen_dia = true;
      for (jt_V l = jt_cdr(opt); jt_iscons(l); l = jt_cdr(jt_cdr(l))) {
        if (!jt_iscons(jt_cdr(l)) || !jt_issymbol(jt_car(l)))
          defclass_error(S, form, ":default-initargs needs initarg and form pairs");
        for (jt_V e = base[2]; jt_iscons(e); e = jt_cdr(e)) {
          JT_WORK(S);
          if (jt_car(jt_car(e)) == jt_car(l)) defclass_error(S, form, "an initarg is defaulted twice");
        }
        jt_V *ib = S->sp;
        JT_PUSH(S, l);
        jt_V fname = init_name(S, name, jt_car(l));
        JT_PUSH(S, fname);
        jt_V fn = init_function(S, fname, jt_car(jt_cdr(ib[0])), lazy, lexical);
        JT_PUSH(S, fn);
        jt_V entry = jt_list(S, 3, jt_car(ib[0]), jt_car(jt_cdr(ib[0])), fn);
        base[2] = jt_cons(S, entry, base[2]);
        l = ib[0];
        S->sp = ib;
      }
    } else if (key == JT_CSYM(S, K_DOCUMENTATION)) {
      if (seen_doc || !jt_iscons(jt_cdr(opt)) || !jt_isstring(jt_car(jt_cdr(opt))) || jt_cdr(jt_cdr(opt)) != JT_NIL)
        defclass_error(S, form, ":documentation needs one string");
      seen_doc = true;
      *doc = jt_car(jt_cdr(opt));
    } else if (key == JT_CSYM(S, K_METACLASS)) {
      if (!jt_iscons(jt_cdr(opt)) || jt_car(jt_cdr(opt)) != CLS(JT_CLASS(S, STANDARD_CLASS))->name)
        defclass_error(S, form, "only the metaclass STANDARD-CLASS is supported");
    } else {
      defclass_error(S, form, "unknown class option");
    }
  }
  *dias = jt_nreverse_list(base[2]);
  S->sp = base;
}

/* Whether cls is reachable from the classes `l` through direct
** superclasses (forward references included): making them its
** superclasses would make a cycle.  Each class is visited once. */
static bool reaches(jt_State *S, jt_V l, jt_V cls) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  JT_PUSH(S, l);                                   /* base[1]: to visit */
  jt_V seen = jt_make_hash(S, JT_HASH_EQ, 16);
  jt_o(seen)->flags |= JT_HASH_MANAGED;            /* scratch */
  JT_PUSH(S, seen);                                /* base[2] */
  bool found = false;
  while (jt_iscons(base[1]) && !found) {
    jt_V c = jt_car(base[1]);
    base[1] = jt_cdr(base[1]);
    if (c == base[0]) { found = true; break; }
    bool f;
    jt_hash_get(S, base[2], c, &f);
    if (f) continue;
    JT_PUSH(S, c);
    jt_hash_put(S, base[2], c, JT_T);
    jt_fuel_tick(S);
    for (jt_V s = CLS(S->sp[-1])->supers; jt_iscons(s); s = jt_cdr(s)) base[1] = jt_cons(S, jt_car(s), base[1]);
    JT_POP(S, 1);
  }
  S->sp = base;
  return found;
}

/* Is obj an instance of cls or of a class below it? */
static bool instance_below(jt_State *S, jt_V obj, void *cls) {
  if (!jt_is(obj, JT_TINSTANCE)) return false;
  jt_V c = jt_vec_(jt_inst_(obj)->wrapper)->items[JT_W_CLASS];
  return c == (jt_V)cls || (jt_is(c, JT_TCLASS) && reaches(S, CLS(c)->supers, (jt_V)cls));
}

/* Whether a closure of the defclass macro's closes over a lexical
** environment (one of the top level captures nothing). */
static jt_V lexical_inits(jt_State *S, jt_V closures) {
  for (jt_V l = closures; jt_iscons(l); l = jt_cdr(l)) {
    jt_V e = jt_car(l);
    if (jt_iscons(e) && jt_is(jt_cdr(e), JT_TCLOSURE) && jt_clo_(jt_cdr(e))->env != JT_NIL) return closures;
  }
  (void)S;
  return JT_NIL;
}

jt_V jt_class_define(jt_State *S, jt_V form, jt_V closures, bool lazy) {
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  jt_V lexical = lexical_inits(S, closures);
  JT_ROOT(S, lexical);
  if (!jt_clos_proper_list(form) || !jt_iscons(jt_cdr(form)) || !jt_iscons(jt_cdr(jt_cdr(form))) ||
      !jt_iscons(jt_cdr(jt_cdr(jt_cdr(form)))))
    defclass_error(S, form, "too few parts");
  jt_V name = jt_car(jt_cdr(form));
  jt_V supers_names = jt_car(jt_cdr(jt_cdr(form)));
  jt_V slot_specs = jt_car(jt_cdr(jt_cdr(jt_cdr(form))));
  if (!jt_issymbol(name) || name == JT_NIL || name == JT_T || jt_iskeyword(name))
    defclass_error(S, form, "the class name is not a symbol");
  if (!jt_clos_proper_list(supers_names) || !jt_clos_proper_list(slot_specs))
    defclass_error(S, form, "the superclasses and slots must be lists");
  jt_V old = class_lookup(S, name);
  /* a class renamed since (outside a world) is no longer this one */
  if (old != JT_NIL && CLS(old)->name != name) old = JT_NIL;
  if (old != JT_NIL && (CLS(old)->h.flags & JT_CLASS_LOCKED))
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot redefine the built-in class %s", jt_symname(S, name));
  jt_check_type_definable(S, name, "a class");
  if (jt_find_layout(S, name) != JT_NIL ||
      (old != JT_NIL && JT_CLASS_KIND(CLS(old)) != JT_CLASS_STANDARD && JT_CLASS_KIND(CLS(old)) != JT_CLASS_FORWARD))
    class_error(S, name, "cannot define %s as a class: it names a structure or condition type");
  /* superclasses: defined standard classes or forward references */
  JT_PUSH(S, JT_NIL);               /* base[1]: the superclasses */
  for (jt_V l = supers_names; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sn = jt_car(l);
    if (!jt_issymbol(sn) || sn == JT_NIL) defclass_error(S, form, "a superclass name is not a symbol");
    if (sn == name) defclass_error(S, form, "a class cannot be its own superclass");
    for (jt_V k = jt_cdr(l); jt_iscons(k); k = jt_cdr(k)) {
      JT_WORK(S);   /* quadratic in a list of up to 100000 names: paid for */
      if (jt_car(k) == sn) defclass_error(S, form, "a superclass is named twice");
    }
    jt_V sc = jt_class_ensure(S, sn);
    int kind = JT_CLASS_KIND(CLS(sc));
    if (kind != JT_CLASS_STANDARD && kind != JT_CLASS_FORWARD)
      class_error(S, sn, "a standard class cannot inherit from %s, which is not a standard class");
    base[1] = jt_cons(S, sc, base[1]);
  }
  base[1] = jt_nreverse_list(base[1]);
  if (base[1] == JT_NIL) base[1] = jt_list(S, 1, JT_CLASS(S, STANDARD_OBJECT));
  jt_V cls = old != JT_NIL ? old : class_alloc(S, name, JT_CLASS_STANDARD);
  JT_PUSH(S, cls);                  /* base[2] */
  if (reaches(S, base[1], cls)) class_error(S, name, "the superclasses of %s would make a cycle");
  compute_cpl(S, cls, base[1]);     /* signals now if the orders are inconsistent */
  /* direct slots and options; nothing has changed yet */
  JT_PUSH(S, JT_NIL);               /* base[3]: direct slots */
  for (jt_V l = slot_specs; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sd = parse_slot(S, form, jt_car(l), name, CLS(base[2])->dslots, lazy, lexical);
    for (jt_V k = base[3]; jt_iscons(k); k = jt_cdr(k)) {
      JT_WORK(S);
      if (SD(jt_car(k), SD_NAME) == SD(sd, SD_NAME)) defclass_error(S, form, "a slot is named twice");
    }
    base[3] = jt_cons(S, sd, base[3]);
  }
  base[3] = jt_nreverse_list(base[3]);
  jt_V dias = JT_NIL, doc = JT_NIL;
  parse_options(S, base[0], name, jt_cdr(jt_cdr(jt_cdr(jt_cdr(base[0])))), lazy, lexical, &dias, &doc);
  JT_PUSH(S, dias);                 /* base[4] */
  JT_PUSH(S, doc);                  /* base[5] */
  bool redefining = old != JT_NIL && JT_CLASS_KIND(CLS(old)) == JT_CLASS_STANDARD;
  if (redefining) {
    remove_accessors(S, base[2]);
    for (jt_V l = CLS(base[2])->supers; jt_iscons(l); l = jt_cdr(l)) {
      jt_V s = jt_car(l);
      jt_V subs = list_remove(S, base[2], CLS(s)->subs);
      JT_SET(S, s, CLS(s)->subs, subs);
    }
  }
  JT_TOUCH(S, base[2]);
  CLS(base[2])->h.flags = (uint16_t)((CLS(base[2])->h.flags & ~0x7) | JT_CLASS_STANDARD);
  JT_SET(S, base[2], CLS(base[2])->supers, base[1]);
  JT_SET(S, base[2], CLS(base[2])->dslots, base[3]);
  JT_SET(S, base[2], CLS(base[2])->dinitargs, base[4]);
  JT_SET(S, base[2], CLS(base[2])->doc, base[5]);
  JT_SET(S, base[2], CLS(base[2])->form, base[0]);
  for (jt_V l = base[1]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V s = jt_car(l);
    jt_V subs = jt_cons(S, base[2], CLS(s)->subs);
    JT_SET(S, s, CLS(s)->subs, subs);
  }
  if (old == JT_NIL) class_register(S, base[2]);
  finalize(S, base[2]);
  add_accessors(S, base[2]);
  jt_clos_changed(S);
  jt_meta_type_replaced(S, name);
  if (S->world_define) {
    /* a class whose initforms close over a lexical environment cannot be
    ** made again from its form: kept so that the commit refuses it */
    jt_V src = base[0];
    if (lexical != JT_NIL) src = jt_list(S, 2, jt_intern_keyword(S, "UNEXPORTABLE"), base[0]);
    JT_PUSH(S, src);
    S->world_define(S, name, JT_DEF_CLASS, src, base[2]);
  }
  /* a class left unfinalized (on a superclass not defined yet) cannot
  ** bring its stored instances to the new definition, which an import
  ** would then give them all the same */
  if (redefining && !(CLS(base[2])->h.flags & JT_CLASS_FINALIZED)) {
    char *where = jt_world_mentions(S, instance_below, (void *)base[2], false);
    if (where) {
      char *n = jt_print_cstr(S, name, true, 100);
      snprintf(S->msgbuf, sizeof S->msgbuf,
               "cannot redefine the class %s on a superclass that is not defined: the world stores instances "
               "of it (%s), which could not take the new definition (define the superclass first)", n, where);
      free(n);
      free(where);
      jt_error(S, "%s", S->msgbuf);
    }
  }
  /* instances in the world's managed state take the new shape now */
  if (redefining) jt_world_update_instances(S);
  cls = base[2];
  S->sp = base;
  JT_UNROOT(S, 1);
  return cls;
}

/* ------------------------------------------------------------- instances */

jt_V jt_instance_make(jt_State *S, jt_V cls) {
  if (!jt_is(cls, JT_TCLASS) || JT_CLASS_KIND(CLS(cls)) != JT_CLASS_STANDARD)
    class_error(S, cls, "cannot make an instance of %s: it is not a standard class");
  if (!(CLS(cls)->h.flags & JT_CLASS_FINALIZED))
    class_error(S, CLS(cls)->name, "cannot make an instance of %s: a superclass is not defined yet");
  if (CLS(cls)->h.flags & JT_CLASS_LOCKED)
    class_error(S, CLS(cls)->name, "cannot make an instance of the built-in class %s");
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  jt_V w = CLS(cls)->wrapper;
  size_t n = jt_vec_(jt_vec_(w)->items[JT_W_NAMES])->len;
  jt_V slots = jt_make_vector(S, n, JT_UNBOUND);
  JT_PUSH(S, slots);
  jt_Instance *in = (jt_Instance *)jt_alloc(S, JT_TINSTANCE, sizeof(jt_Instance));
  in->wrapper = CLS(base[0])->wrapper;
  in->slots = base[1];
  S->sp = base;
  return (jt_V)in;
}

bool jt_instance_obsolete(jt_V inst) {
  jt_V w = jt_inst_(inst)->wrapper;
  return CLS(jt_vec_(w)->items[JT_W_CLASS])->wrapper != w;
}

static int name_index(jt_V names, jt_V name) {
  jt_Vector *v = jt_vec_(names);
  for (size_t i = 0; i < v->len; i++)
    if (v->items[i] == name) return (int)i;
  return -1;
}

static jt_V cell_named(jt_V cells, jt_V name) {
  for (; jt_iscons(cells); cells = jt_cdr(cells))
    if (jt_car(jt_car(cells)) == name) return jt_car(cells);
  return JT_NIL;
}

/* Bring an obsolete instance to its class's current shape (CLHS 4.3.6.1). */
static void instance_update(jt_State *S, jt_V inst) {
  jt_V *base = S->sp;
  JT_PUSH(S, inst);
  jt_V ow = jt_inst_(inst)->wrapper;
  jt_V cls = jt_vec_(ow)->items[JT_W_CLASS];
  if (!(CLS(cls)->h.flags & JT_CLASS_FINALIZED))
    class_error(S, CLS(cls)->name, "cannot update an instance of %s: a superclass is not defined");
  JT_PUSH(S, ow);                                  /* base[1] */
  jt_V nw = CLS(cls)->wrapper;
  JT_PUSH(S, nw);                                  /* base[2] */
  jt_V onames = jt_vec_(ow)->items[JT_W_NAMES], nnames = jt_vec_(nw)->items[JT_W_NAMES];
  jt_V slots = jt_make_vector(S, jt_vec_(nnames)->len, JT_UNBOUND);
  JT_PUSH(S, slots);                               /* base[3] */
  jt_V added = JT_NIL, discarded = JT_NIL, plist = JT_NIL;
  JT_PUSH(S, added);                               /* base[4] */
  JT_PUSH(S, discarded);                           /* base[5] */
  JT_PUSH(S, plist);                               /* base[6] */
  jt_V oslots = jt_inst_(base[0])->slots;
  for (size_t i = 0; i < jt_vec_(jt_vec_(base[2])->items[JT_W_NAMES])->len; i++) {
    jt_V name = jt_vec_(jt_vec_(base[2])->items[JT_W_NAMES])->items[i];
    int j = name_index(jt_vec_(base[1])->items[JT_W_NAMES], name);
    oslots = jt_inst_(base[0])->slots;
    if (j >= 0) { jt_vec_(base[3])->items[i] = jt_vec_(oslots)->items[j]; continue; }
    jt_V cell = cell_named(jt_vec_(base[1])->items[JT_W_SHARED], name);
    if (cell != JT_NIL) { jt_vec_(base[3])->items[i] = jt_cdr(cell); continue; }  /* shared -> local */
    base[4] = jt_cons(S, name, base[4]);
  }
  onames = jt_vec_(base[1])->items[JT_W_NAMES];
  for (size_t j = 0; j < jt_vec_(onames)->len; j++) {
    onames = jt_vec_(base[1])->items[JT_W_NAMES];
    jt_V name = jt_vec_(onames)->items[j];
    if (name_index(jt_vec_(base[2])->items[JT_W_NAMES], name) >= 0) continue;
    jt_V v = jt_vec_(jt_inst_(base[0])->slots)->items[j];
    if (v == JT_UNBOUND) continue;
    base[5] = jt_cons(S, name, base[5]);
    base[6] = jt_cons(S, jt_vec_(jt_inst_(base[0])->slots)->items[j], base[6]);
    base[6] = jt_cons(S, name, base[6]);
  }
  JT_SET(S, base[0], jt_inst_(base[0])->slots, base[3]);
  JT_SET(S, base[0], jt_inst_(base[0])->wrapper, base[2]);
  jt_funcall(S, JT_GENERIC(S, UPDATE_FOR_REDEFINED), 4, base[0], base[4], base[5], base[6]);
  S->sp = base;
}

jt_V jt_instance_read(jt_V obj, jt_V name) {
  if (!jt_is(obj, JT_TINSTANCE) || jt_instance_obsolete(obj)) return JT_NOVALUE;
  int i = name_index(jt_vec_(jt_inst_(obj)->wrapper)->items[JT_W_NAMES], name);
  if (i < 0) return JT_NOVALUE;
  jt_V v = jt_vec_(jt_inst_(obj)->slots)->items[i];
  return v == JT_UNBOUND ? JT_NOVALUE : v;
}

jt_V jt_instance_slots(jt_State *S, jt_V inst) {
  if (jt_instance_obsolete(inst)) instance_update(S, inst);
  return jt_inst_(inst)->slots;
}

jt_V jt_class_slot_names(jt_State *S, jt_V cls, bool instance_only) {
  jt_V *base = S->sp;
  int n = 0;
  for (jt_V l = CLS(cls)->slots; jt_iscons(l); l = jt_cdr(l))
    if (!instance_only || SD(jt_car(l), SD_INDEX) != JT_NIL) { JT_PUSH(S, SD(jt_car(l), SD_NAME)); n++; }
  jt_V r = jt_list_from(S, n, base);
  S->sp = base;
  return r;
}

/* Where slot `name` of obj lives: *vec/ *idx for a vector element, or the
** cons whose cdr holds it.  Returns false when obj has no such slot. */
typedef struct Place { jt_V owner; jt_V *at; } Place;

static bool slot_place(jt_State *S, jt_V obj, jt_V name, Place *p) {
  if (jt_is(obj, JT_TINSTANCE)) {
    jt_V slots = jt_instance_slots(S, obj);
    jt_V w = jt_inst_(obj)->wrapper;
    int i = name_index(jt_vec_(w)->items[JT_W_NAMES], name);
    if (i >= 0) { p->owner = slots; p->at = &jt_vec_(slots)->items[i]; return true; }
    jt_V cell = cell_named(jt_vec_(w)->items[JT_W_SHARED], name);
    if (cell != JT_NIL) { p->owner = cell; p->at = &jt_cons_(cell)->cdr; return true; }
    return false;
  }
  if (jt_isstruct(obj)) {
    jt_Layout *L = jt_layout_(jt_struct_(obj)->layout);
    for (uint32_t i = 0; i < L->nslots; i++)
      if (jt_vec_(L->slot_names)->items[i] == name) {
        p->owner = obj;
        p->at = &jt_struct_(obj)->slots[i];
        return true;
      }
  }
  return false;
}

/* The primary value of what a method returned (slot-value, slot-boundp
** and the accessors return one value whatever slot-unbound or
** slot-missing return). */
static jt_V primary(jt_State *S, jt_V r) {
  if (S->nvals == 0) r = JT_NIL;
  S->nvals = 1;
  return r;
}

static jt_V slot_missing(jt_State *S, jt_V obj, jt_V name, const char *op, jt_V value) {
  jt_V cls = jt_class_of(S, obj);
  jt_V opsym = jt_intern(S, op);
  if (value == JT_NOVALUE) return primary(S, jt_funcall(S, JT_GENERIC(S, SLOT_MISSING), 4, cls, obj, name, opsym));
  return primary(S, jt_funcall(S, JT_GENERIC(S, SLOT_MISSING), 5, cls, obj, name, opsym, value));
}

jt_V jt_slot_get(jt_State *S, jt_V obj, jt_V name) {
  Place p;
  if (!slot_place(S, obj, name, &p)) return slot_missing(S, obj, name, "SLOT-VALUE", JT_NOVALUE);
  jt_V v = *p.at;
  if (v == JT_UNBOUND)
    return primary(S, jt_funcall(S, JT_GENERIC(S, SLOT_UNBOUND), 3, jt_class_of(S, obj), obj, name));
  JT_READ(S, JITI_READ_SLOT, obj, name, v);
  return v;
}

void jt_slot_set(jt_State *S, jt_V obj, jt_V name, jt_V value) {
  Place p;
  if (!slot_place(S, obj, name, &p)) { slot_missing(S, obj, name, "SETF", value); return; }
  JT_SET(S, p.owner, *p.at, value);
}

/* ------------------------------------------------------- initialisation */

/* The value of the first occurrence of any of `keys` in the plist. */
static bool initarg_value(jt_V keys, int n2, const jt_V *initargs, jt_V *out) {
  for (int k = 0; k + 1 < n2; k += 2)
    if (jt_clos_memq(initargs[k], keys)) { *out = initargs[k + 1]; return true; }
  return false;
}

void jt_instance_initialize(jt_State *S, jt_V inst, jt_V names, int n2, jt_V *initargs) {
  jt_V *base = S->sp;
  JT_PUSH(S, inst);
  JT_PUSH(S, names);
  if (n2 % 2) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "odd number of initialization arguments");
  for (int k = 0; k < n2; k += 2)
    if (!jt_issymbol(initargs[k])) {
      char *a = jt_print_cstr(S, initargs[k], true, 100);
      snprintf(S->msgbuf, sizeof S->msgbuf, "the initialization argument name %s is not a symbol", a);
      free(a);
      jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
    }
  jt_V cls = jt_class_of(S, inst);
  JT_PUSH(S, cls);
  if (jt_is(inst, JT_TINSTANCE)) jt_instance_slots(S, inst);
  for (jt_V l = CLS(base[2])->slots; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sd = jt_car(l);
    Place p;
    jt_V v;
    if (!slot_place(S, base[0], SD(sd, SD_NAME), &p)) continue;
    if (initarg_value(SD(sd, SD_INITARGS), n2, initargs, &v)) {
      JT_SET(S, p.owner, *p.at, v);
      continue;
    }
    if (*p.at != JT_UNBOUND || SD(sd, SD_INITFN) == JT_NIL) continue;
    if (base[1] != JT_T && !jt_clos_memq(SD(sd, SD_NAME), base[1])) continue;
    JT_PUSH(S, l);
    v = init_value(S, SD(sd, SD_INITFN));
    l = S->sp[-1];
    JT_POP(S, 1);
    /* the initform may have set the slot or changed the instance */
    if (!slot_place(S, base[0], SD(jt_car(l), SD_NAME), &p)) continue;
    JT_SET(S, p.owner, *p.at, v);
  }
  S->sp = base;
}

jt_V jt_instance_change_class(jt_State *S, jt_V inst, jt_V cls, int n2, jt_V *initargs) {
  jt_V *base = S->sp;
  JT_PUSH(S, inst);
  JT_PUSH(S, cls);
  if (!jt_is(inst, JT_TINSTANCE)) class_error(S, inst, "change-class: %s is not an instance of a standard class");
  jt_instance_slots(S, inst);
  jt_V fresh = jt_instance_make(S, cls);          /* checks cls */
  JT_PUSH(S, fresh);                               /* base[2] */
  /* the previous state, as an instance of the old class (a copy) */
  jt_V oslots = jt_inst_(base[0])->slots;
  jt_V copy = jt_make_vector(S, jt_vec_(oslots)->len, JT_NIL);
  JT_PUSH(S, copy);                                /* base[3] */
  oslots = jt_inst_(base[0])->slots;
  for (size_t i = 0; i < jt_vec_(oslots)->len; i++) jt_vec_(base[3])->items[i] = jt_vec_(oslots)->items[i];
  jt_Instance *prev = (jt_Instance *)jt_alloc(S, JT_TINSTANCE, sizeof(jt_Instance));
  prev->wrapper = jt_inst_(base[0])->wrapper;
  prev->slots = base[3];
  JT_PUSH(S, (jt_V)prev);                          /* base[4] */
  /* local slots present in both keep their values, and so does a slot
  ** shared in the old class that is local in the new one */
  jt_V nw = jt_inst_(base[2])->wrapper, ow = jt_inst_(base[0])->wrapper;
  jt_V nslots = jt_inst_(base[2])->slots;
  jt_V added = JT_NIL;
  JT_PUSH(S, added);                               /* base[5] */
  for (size_t i = 0; i < jt_vec_(jt_vec_(nw)->items[JT_W_NAMES])->len; i++) {
    nw = jt_inst_(base[2])->wrapper;
    ow = jt_inst_(base[0])->wrapper;
    nslots = jt_inst_(base[2])->slots;
    jt_V name = jt_vec_(jt_vec_(nw)->items[JT_W_NAMES])->items[i];
    int j = name_index(jt_vec_(ow)->items[JT_W_NAMES], name);
    jt_V shared = JT_NIL;
    if (j < 0)
      for (jt_V l = jt_vec_(ow)->items[JT_W_SHARED]; jt_iscons(l) && shared == JT_NIL; l = jt_cdr(l))
        if (jt_iscons(jt_car(l)) && jt_car(jt_car(l)) == name) shared = jt_car(l);
    if (j >= 0) jt_vec_(nslots)->items[i] = jt_vec_(jt_inst_(base[0])->slots)->items[j];
    else if (shared != JT_NIL) jt_vec_(nslots)->items[i] = jt_cdr(shared);
    else base[5] = jt_cons(S, name, base[5]);
  }
  base[5] = jt_nreverse_list(base[5]);
  JT_SET(S, base[0], jt_inst_(base[0])->slots, jt_inst_(base[2])->slots);
  JT_SET(S, base[0], jt_inst_(base[0])->wrapper, jt_inst_(base[2])->wrapper);
  /* update-instance-for-different-class previous current &rest initargs */
  jt_V *args = S->sp;
  JT_PUSH(S, JT_GENERIC(S, UPDATE_FOR_DIFFERENT));
  JT_PUSH(S, base[4]);
  JT_PUSH(S, base[0]);
  for (int k = 0; k < n2; k++) JT_PUSH(S, initargs[k]);
  jt_apply(S, args[0], n2 + 2, args + 1);
  inst = base[0];
  S->sp = base;
  return inst;
}

/* ------------------------------------------------ updating reachable state */

/* Walk v (conses, vectors, hash tables, structures, instances) and update
** every obsolete instance.  Lists are followed without a table (along the
** cdr with a slower pointer that meets a circular tail, recursing into the
** cars to a bounded depth, as the encoder does); other containers are
** remembered in a table made at the first one, so shared and circular
** structure is visited once and a row of plain lists costs no allocation. */
typedef struct Walk { jt_V seen; bool changed; } Walk;

static void walk(jt_State *S, Walk *w, jt_V v, int depth) {
  if (!jt_isptr(v) || depth > 10000) return;
  jt_V *base = S->sp;
  JT_PUSH(S, v);
  switch (jt_type(v)) {
    case JT_TCONS: {
      jt_V slow = v;
      size_t n = 0;
      for (jt_V l = v; jt_iscons(l); l = jt_cdr(l)) {
        JT_PUSH(S, l);
        walk(S, w, jt_car(l), depth + 1);
        l = S->sp[-1];
        JT_POP(S, 1);
        if ((++n & 1) == 0) {
          slow = jt_cdr(slow);
          if (slow == jt_cdr(l)) break;   /* a circular tail: every cell seen */
        }
        if (!jt_iscons(jt_cdr(l))) walk(S, w, jt_cdr(l), depth + 1);
      }
      break;
    }
    case JT_TVECTOR:
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      for (size_t i = 0; i < jt_vec_(base[0])->len; i++) walk(S, w, jt_vec_(base[0])->items[i], depth + 1);
      break;
    case JT_THASH:
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      for (size_t i = 0; i < jt_hash_(base[0])->nentries; i++) {
        jt_HashEntry e = jt_hash_(base[0])->entries[i];
        if (e.key == JT_HASH_DELETED) continue;
        walk(S, w, e.key, depth + 1);
        walk(S, w, jt_hash_(base[0])->entries[i].val, depth + 1);
      }
      break;
    case JT_TSTRUCT:
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      for (uint32_t i = 0; i < jt_o(base[0])->aux; i++) walk(S, w, jt_struct_(base[0])->slots[i], depth + 1);
      break;
    case JT_TINSTANCE:
      if (!jt_is(jt_vec_(jt_inst_(v)->wrapper)->items[JT_W_CLASS], JT_TCLASS)) break;  /* a stand-in */
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      if (jt_instance_obsolete(base[0])) {
        instance_update(S, base[0]);
        w->changed = true;
      }
      for (size_t i = 0; i < jt_vec_(jt_inst_(base[0])->slots)->len; i++)
        walk(S, w, jt_vec_(jt_inst_(base[0])->slots)->items[i], depth + 1);
      break;
    default:
      break;
  }
  S->sp = base;
}

bool jt_class_update_reachable(jt_State *S, jt_V v) {
  Walk w = {JT_NIL, false};
  JT_ROOT(S, w.seen);
  walk(S, &w, v, 0);
  JT_UNROOT(S, 1);
  return w.changed;
}

/* The values of a class's own shared slots, as a list of (name . value)
** cells (the world exports them with the class). */
jt_V jt_class_shared_cells(jt_State *S, jt_V cls) {
  jt_V *base = S->sp;
  int n = 0;
  for (jt_V d = CLS(cls)->dslots; jt_iscons(d); d = jt_cdr(d))
    if (SD(jt_car(d), SD_CELL) != JT_NIL) { JT_PUSH(S, SD(jt_car(d), SD_CELL)); n++; }
  jt_V r = jt_list_from(S, n, base);
  S->sp = base;
  return r;
}

void jt_class_finalize_root(jt_State *S, jt_V cls) { compute_slots(S, cls); }

bool jt_slot_exists(jt_State *S, jt_V obj, jt_V name) {
  Place p;
  return slot_place(S, obj, name, &p);
}

bool jt_slot_boundp(jt_State *S, jt_V obj, jt_V name) {
  Place p;
  if (!slot_place(S, obj, name, &p))   /* what slot-missing returned, as a boolean */
    return slot_missing(S, obj, name, "SLOT-BOUNDP", JT_NOVALUE) != JT_NIL;
  return *p.at != JT_UNBOUND;
}

void jt_slot_makunbound(jt_State *S, jt_V obj, jt_V name) {
  Place p;
  if (!slot_place(S, obj, name, &p)) { slot_missing(S, obj, name, "SLOT-MAKUNBOUND", JT_NOVALUE); return; }
  if (!jt_is(obj, JT_TINSTANCE)) class_error(S, obj, "slot-makunbound: %s is not an instance of a standard class");
  JT_SET(S, p.owner, *p.at, JT_UNBOUND);
}

/* Push the default initargs (CLHS 7.1.3) missing from initargs[0..n2)
** onto the stack, right after them (initargs must end at the top of the
** stack); returns how many values it pushed. */
int jt_class_default_initargs(jt_State *S, jt_V cls, int n2, jt_V *initargs) {
  int added = 0;
  jt_V l = CLS(cls)->initargs;
  JT_ROOT(S, cls);
  JT_ROOT(S, l);
  for (; jt_iscons(l); l = jt_cdr(l)) {
    jt_V key = jt_car(jt_car(l));
    bool given = false;
    for (int k = 0; k + 1 < n2 + added && !given; k += 2) given = initargs[k] == key;
    if (given) continue;
    jt_V v = init_value(S, jt_car(jt_cdr(jt_cdr(jt_car(l)))));
    JT_PUSH(S, jt_car(jt_car(l)));
    JT_PUSH(S, v);
    added += 2;
  }
  JT_UNROOT(S, 2);
  return added;
}

/* The keyword names a method's lambda list accepts after &key; T when it
** has &allow-other-keys. */
static jt_V method_keys(jt_State *S, jt_V ll, jt_V acc) {
  bool keys = false;
  JT_PUSH(S, ll);
  for (jt_V l = ll; jt_iscons(l); l = jt_cdr(l)) {
    jt_V x = jt_car(l);
    if (x == JT_SYM(S, AND_KEY)) { keys = true; continue; }
    if (x == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) { acc = JT_T; break; }
    if (x == JT_SYM(S, AND_AUX)) break;
    if (!keys || acc == JT_T) continue;
    jt_V k = x;
    if (jt_iscons(k)) k = jt_car(k);
    if (jt_iscons(k)) k = jt_car(k);           /* ((:keyword var) default) */
    else if (jt_issymbol(k)) k = jt_intern_keyword(S, jt_symname(S, k));
    JT_PUSH(S, l);
    JT_PUSH(S, acc);
    acc = jt_cons(S, k, acc);
    l = S->sp[-2];
    JT_POP(S, 2);
  }
  JT_POP(S, 1);
  return acc;
}

/* The initargs accepted for cls (CLHS 7.1.2): slot initargs and the keys
** of the applicable methods of shared-initialize and of `gf` — for
** make-instance, initialize-instance (and make-instance's own); for
** reinitialize-instance, that one (T: any).  make-instance's are cached in
** the class for the current CLOS epoch. */
static jt_V valid_initargs(jt_State *S, jt_V cls, jt_V gf) {
  jt_Class *c = CLS(cls);
  bool make = gf == JT_GENERIC(S, INITIALIZE_INSTANCE);
  if (make && c->valid_epoch == S->clos_epoch && c->valid != JT_NIL) return c->valid;
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  JT_PUSH(S, JT_NIL);                                /* base[1] */
  for (jt_V l = CLS(cls)->slots; jt_iscons(l); l = jt_cdr(l))
    for (jt_V ia = SD(jt_car(l), SD_INITARGS); jt_iscons(ia); ia = jt_cdr(ia))
      base[1] = jt_cons(S, jt_car(ia), base[1]);
  jt_V gfs[3] = {gf, JT_GENERIC(S, SHARED_INITIALIZE), JT_GENERIC(S, MAKE_INSTANCE)};
  for (int g = 0; g < (make ? 3 : 2) && base[1] != JT_T; g++)
    for (jt_V l = jt_gf_(gfs[g])->methods; jt_iscons(l) && base[1] != JT_T; l = jt_cdr(l)) {
      jt_Method *m = jt_method_(jt_car(l));
      if (m->h.flags & JT_METH_LOCKED) continue;
      jt_V spec = jt_car(m->specializers);
      bool applies = g == 2 ? (spec == JT_CLASS(S, T) || (jt_iscons(spec) && jt_car(jt_cdr(spec)) == base[0]))
                            : (jt_is(spec, JT_TCLASS) && jt_class_subclassp(base[0], spec));
      if (!applies) continue;
      JT_PUSH(S, l);
      base[1] = method_keys(S, m->lambda_list, base[1]);
      l = S->sp[-1];
      JT_POP(S, 1);
    }
  if (base[1] == JT_NIL) base[1] = jt_list(S, 1, JT_SYM(S, K_ALLOW_OTHER_KEYS));
  if (make) {
    JT_SET_GC(S, base[0], CLS(base[0])->valid, base[1]);
    CLS(base[0])->valid_epoch = S->clos_epoch;
  }
  jt_V r = base[1];
  S->sp = base;
  return r;
}

void jt_class_check_initargs(jt_State *S, jt_V cls, jt_V gf, int n2, jt_V *initargs) {
  for (int k = 0; k + 1 < n2; k += 2)
    if (initargs[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS)) {
      if (initargs[k + 1] != JT_NIL) return;
      break;
    }
  if (!jt_is(cls, JT_TCLASS)) return;
  jt_V valid = valid_initargs(S, cls, gf);
  if (valid == JT_T) return;
  for (int k = 0; k + 1 < n2; k += 2) {
    if (initargs[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS) || jt_clos_memq(initargs[k], valid)) continue;
    char *a = jt_print_cstr(S, initargs[k], true, 100);
    char *c = jt_print_cstr(S, cls, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf, "Invalid initialization argument: %s in call for class %s.", a, c);
    free(a);
    free(c);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
}

void jt_class_set_shared(jt_State *S, jt_V cls, jt_V cells) {
  jt_V *base = S->sp;
  JT_PUSH(S, cls);
  JT_PUSH(S, cells);
  for (jt_V l = cells; jt_iscons(l); l = jt_cdr(l)) {
    jt_V c = jt_car(l);
    if (!jt_iscons(c)) class_error(S, CLS(base[0])->name, "malformed shared slot values of class %s");
    jt_V cell = JT_NIL;
    for (jt_V d = CLS(base[0])->dslots; jt_iscons(d); d = jt_cdr(d))
      if (SD(jt_car(d), SD_NAME) == jt_car(c) && SD(jt_car(d), SD_CELL) != JT_NIL) cell = SD(jt_car(d), SD_CELL);
    if (cell == JT_NIL) class_error(S, jt_car(c), "the class has no shared slot %s");
    JT_SET(S, cell, jt_cons_(cell)->cdr, jt_cdr(c));
  }
  S->sp = base;
}

/* -------------------------------------------------------- import and text */

static jt_V instance_with_wrapper(jt_State *S, jt_V w, size_t n) {
  JT_PUSH(S, w);
  jt_V slots = jt_make_vector(S, n, JT_UNBOUND);
  JT_PUSH(S, slots);
  jt_Instance *in = (jt_Instance *)jt_alloc(S, JT_TINSTANCE, sizeof(jt_Instance));
  in->wrapper = S->sp[-2];
  in->slots = S->sp[-1];
  JT_POP(S, 2);
  return (jt_V)in;
}

/* An instance being imported, slots unbound: of its class when the class
** is defined; otherwise (a :class slot of a class imported before the
** class of its value) of a forward-referenced class with a provisional
** wrapper — marked by T in place of the shared cells — that the class
** adopts when it is defined with these slots (compute_slots). */
jt_V jt_instance_for_import(jt_State *S, jt_V name, jt_V names) {
  jt_V *base = S->sp;
  JT_PUSH(S, names);
  jt_V cls = jt_class_ensure(S, name);
  JT_PUSH(S, cls);
  int kind = JT_CLASS_KIND(CLS(cls));
  if (kind != JT_CLASS_STANDARD && kind != JT_CLASS_FORWARD)
    class_error(S, name, "import: %s is not a standard class");
  jt_V inst;
  if (CLS(cls)->h.flags & JT_CLASS_FINALIZED) {
    inst = jt_instance_make(S, cls);
  } else {
    jt_V w = CLS(cls)->wrapper;
    if (!jt_isvector(w) || jt_vec_(w)->items[JT_W_SHARED] != JT_T || !same_names(jt_vec_(w)->items[JT_W_NAMES], base[0])) {
      w = jt_make_vector(S, JT_W_COUNT, JT_NIL);
      jt_vec_(w)->items[JT_W_CLASS] = base[1];
      jt_vec_(w)->items[JT_W_NAMES] = base[0];
      jt_vec_(w)->items[JT_W_SHARED] = JT_T;
      if (CLS(base[1])->wrapper == JT_NIL) JT_SET(S, base[1], CLS(base[1])->wrapper, w);
    }
    inst = instance_with_wrapper(S, w, jt_vec_(base[0])->len);
  }
  S->sp = base;
  return inst;
}

/* A stand-in for reading an instance without its class: the wrapper names
** the class by its symbol instead of a class object (print.c prints it). */
jt_V jt_instance_stand_in(jt_State *S, jt_V name, jt_V names) {
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, names);
  jt_V w = jt_make_vector(S, JT_W_COUNT, JT_NIL);
  jt_vec_(w)->items[JT_W_CLASS] = base[0];
  jt_vec_(w)->items[JT_W_NAMES] = base[1];
  jt_V inst = instance_with_wrapper(S, w, jt_vec_(base[1])->len);
  S->sp = base;
  return inst;
}

bool jt_instance_import_slot(jt_State *S, jt_V inst, jt_V name, jt_V value) {
  jt_V w = jt_inst_(inst)->wrapper;
  int i = name_index(jt_vec_(w)->items[JT_W_NAMES], name);
  if (i < 0) return false;
  JT_SET(S, jt_inst_(inst)->slots, jt_vec_(jt_inst_(inst)->slots)->items[i], value);
  return true;
}
