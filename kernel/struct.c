/*
** struct.c — layouts and instances, shared by defstruct and
** define-condition.
**
** A layout names a type, its parents, and its slots (inherited slots
** first).  Instances are jt_Struct objects pointing at their layout.  The
** defstruct and define-condition macros (kernel/lisp) expand into the
** primitives here.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_clos.h"
#include "jt_world.h"

jt_V jt_find_layout(jt_State *S, jt_V name) {
  bool found;
  jt_V l = jt_hash_get(S, S->layouts, name, &found);
  return found ? l : JT_NIL;
}

/* A pathname (57-pathnames.lisp's structure, or one including it):
** EQUAL compares and hashes its components. */
bool jt_pathname_p(jt_State *S, jt_V v) {
  if (!jt_isstruct(v)) return false;
  jt_V p = jt_find_layout(S, jt_intern(S, "PATHNAME"));
  return p != JT_NIL && jt_subtypep_layout(jt_struct_(v)->layout, p);
}

bool jt_subtypep_layout(jt_V layout, jt_V ancestor) {
  if (layout == ancestor) return true;
  /* Type graphs are small; a depth bound guards against a cycle. */
  for (jt_V l = jt_layout_(layout)->parents; jt_iscons(l); l = jt_cdr(l))
    if (jt_subtypep_layout(jt_car(l), ancestor)) return true;
  return false;
}

static int slot_index(jt_V layout, jt_V name) {
  jt_Layout *L = jt_layout_(layout);
  jt_Vector *v = jt_vec_(L->slot_names);
  for (size_t i = 0; i < v->len; i++)
    if (v->items[i] == name) return (int)i;
  return -1;
}

jt_V jt_slot_value(jt_State *S, jt_V obj, jt_V name) {
  if (!jt_isstruct(obj)) return JT_NOVALUE;
  int i = slot_index(jt_struct_(obj)->layout, name);
  return i < 0 ? JT_NOVALUE : jt_struct_(obj)->slots[i];
}

jt_V jt_make_struct(jt_State *S, jt_V layout, uint32_t nslots) {
  JT_PUSH(S, layout);
  jt_Struct *s = (jt_Struct *)jt_alloc(S, JT_TSTRUCT, sizeof(jt_Struct) + nslots * sizeof(jt_V));
  JT_POP(S, 1);
  s->h.aux = nslots;
  s->layout = layout;
  for (uint32_t i = 0; i < nslots; i++) s->slots[i] = JT_NIL;
  return (jt_V)s;
}

/* Append `name` to the vector-building list unless present. */
static bool in_list(jt_V l, jt_V x) {
  for (; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(l) == x) return true;
  return false;
}

/* A structure or condition type may not take the name of a standard class
** (one defclass made, or one a defclass named as a superclass before
** defining it): the class would be replaced by a type its entry does not
** define, and the import, which defines types before classes, would then
** refuse the class.  SBCL refuses it too. */
static void check_not_a_class(jt_State *S, jt_V name, bool condition) {
  bool found;
  jt_V c = jt_hash_get(S, JT_CLOS(S, JT_CLOS_CLASSES), name, &found);
  if (!found || !jt_is(c, JT_TCLASS)) return;
  int kind = JT_CLASS_KIND(jt_class_(c));
  if (kind != JT_CLASS_STANDARD && kind != JT_CLASS_FORWARD) return;
  char *n = jt_print_cstr(S, name, true, 100);
  snprintf(S->msgbuf, sizeof S->msgbuf, "cannot define %s as a %s type: it names a class (defclass)%s", n,
           condition ? "condition" : "structure", kind == JT_CLASS_FORWARD ? " named as a superclass" : "");
  free(n);
  jt_error(S, "%s", S->msgbuf);
}

/* Build a layout.  `slots` is a list of (name initarg initform-thunk) for the
** type's own slots; inherited slots come from the parents, first parent
** first, without duplicates. */
jt_V jt_define_layout(jt_State *S, jt_V name, jt_V parents, jt_V slots, jt_V report,
                      bool condition) {
  check_not_a_class(S, name, condition);
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, parents);
  JT_PUSH(S, slots);
  JT_PUSH(S, report);
  /* collect (name initarg thunk) triples: inherited then own */
  jt_V all = JT_NIL, names = JT_NIL;
  JT_PUSH(S, all);     /* base[4] */
  JT_PUSH(S, names);   /* base[5] */
  jt_V plays = JT_NIL;
  JT_PUSH(S, plays);   /* base[6]: parent layouts */
  jt_Walk w = jt_walk(parents);
  for (jt_V p = parents; jt_iscons(p); p = jt_walk_next(S, &w, p)) {
    jt_V pl = jt_find_layout(S, jt_car(p));
    if (pl == JT_NIL) {
      char *pn = jt_print_cstr(S, jt_car(p), true, 100);
      snprintf(S->msgbuf, sizeof S->msgbuf, "unknown parent type %s", pn);
      free(pn);
      jt_error(S, "%s", S->msgbuf);
    }
    if ((jt_layout_(pl)->h.flags & JT_LAYOUT_CONDITION) != condition)
      jt_error(S, "cannot mix structure and condition types in %s", jt_symname(S, name));
    base[6] = jt_cons(S, pl, base[6]);
    jt_Layout *L = jt_layout_(pl);
    for (uint32_t i = 0; i < L->nslots; i++) {
      jt_V sn = jt_vec_(L->slot_names)->items[i];
      if (in_list(base[5], sn)) continue;
      base[5] = jt_cons(S, sn, base[5]);
      jt_V t = jt_list(S, 3, sn, jt_vec_(L->initargs)->items[i], jt_vec_(L->initforms)->items[i]);
      base[4] = jt_cons(S, t, base[4]);
    }
  }
  w = jt_walk(slots);
  for (jt_V l = slots; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V t = jt_car(l);
    if (!jt_iscons(t) || !jt_issymbol(jt_car(t))) jt_error(S, "malformed slot in %s", jt_symname(S, name));
    jt_V sn = jt_car(t);
    if (in_list(base[5], sn)) {
      /* a redefinition of an inherited slot replaces its initform */
      for (jt_V a = base[4]; jt_iscons(a); a = jt_cdr(a))
        if (jt_car(jt_car(a)) == sn) JT_SET(S, jt_car(a), jt_cons_(jt_car(a))->cdr, jt_cdr(t));
      continue;
    }
    base[5] = jt_cons(S, sn, base[5]);
    base[4] = jt_cons(S, t, base[4]);
  }
  base[4] = jt_nreverse_list(base[4]);
  base[6] = jt_nreverse_list(base[6]);
  size_t n = jt_list_length(S, base[4]);
  jt_V vn = jt_make_vector(S, n, JT_NIL);
  JT_PUSH(S, vn);
  jt_V vi = jt_make_vector(S, n, JT_NIL);
  JT_PUSH(S, vi);
  jt_V vf = jt_make_vector(S, n, JT_NIL);
  JT_PUSH(S, vf);
  size_t i = 0;
  for (jt_V l = base[4]; jt_iscons(l); l = jt_cdr(l), i++) {
    jt_V t = jt_car(l);
    jt_vec_(vn)->items[i] = jt_car(t);
    jt_V r = jt_cdr(t);
    jt_vec_(vi)->items[i] = jt_iscons(r) ? jt_car(r) : JT_NIL;
    r = jt_iscons(r) ? jt_cdr(r) : JT_NIL;
    jt_vec_(vf)->items[i] = jt_iscons(r) ? jt_car(r) : JT_NIL;
  }
  jt_Layout *L = (jt_Layout *)jt_alloc(S, JT_TLAYOUT, sizeof(jt_Layout));
  L->name = base[0];
  L->parents = base[6];
  L->slot_names = vn;
  L->initargs = vi;
  L->initforms = vf;
  L->report = base[3];
  L->info = JT_NIL;
  L->class = JT_NIL;
  L->nslots = (uint32_t)n;
  if (condition) L->h.flags |= JT_LAYOUT_CONDITION;
  JT_PUSH(S, (jt_V)L);
  jt_hash_put(S, S->layouts, base[0], (jt_V)L);
  jt_class_note_layout(S, (jt_V)L);
  S->sp = base;
  return (jt_V)L;
}

/* Make an instance from an initarg plist; missing slots get their initform
** (a thunk) or NIL. */
jt_V jt_instance_from_initargs(jt_State *S, jt_V layout, int n2, const jt_V *initargs) {
  jt_V *base = S->sp;
  JT_PUSH(S, layout);
  jt_Layout *L = jt_layout_(layout);
  jt_V obj = jt_make_struct(S, layout, L->nslots);
  JT_PUSH(S, obj);
  if (n2 % 2) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "odd number of initialization arguments");
  for (uint32_t i = 0; i < L->nslots; i++) {
    jt_V key = jt_vec_(L->initargs)->items[i];
    jt_V v = JT_NOVALUE;
    /* key: the slot's initarg, or the list of its initargs (a condition
    ** slot may have several); the leftmost given wins */
    if (key != JT_NIL)
      for (int k = 0; k < n2 && v == JT_NOVALUE; k += 2) {
        if (initargs[k] == key) v = initargs[k + 1];
        for (jt_V l = key; jt_iscons(l) && v == JT_NOVALUE; l = jt_cdr(l))
          if (initargs[k] == jt_car(l)) v = initargs[k + 1];
      }
    if (v == JT_NOVALUE) {
      jt_V thunk = jt_vec_(L->initforms)->items[i];
      v = thunk != JT_NIL ? jt_funcall(S, thunk, 0) : JT_NIL;
      L = jt_layout_(base[0]);
    }
    jt_struct_(base[1])->slots[i] = v;
  }
  obj = base[1];
  S->sp = base;
  return obj;
}

/* ------------------------------------------------------------ primitives */

static jt_V check_layout(jt_State *S, jt_V name) {
  jt_V l = jt_find_layout(S, name);
  if (l == JT_NIL) {
    char *n = jt_print_cstr(S, name, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf, "unknown structure or condition type %s", n);
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  return l;
}

/* ------------------------------------------------------- redefinition */

/* Would a structure of parent layout `pl` (or NIL) and own slots `slots`
** have the parents and slot names, in order, of `old`? */
static bool same_shape(jt_V old, jt_V pl, jt_V slots) {
  jt_Layout *O = jt_layout_(old);
  jt_V op = O->parents;
  if (pl == JT_NIL ? op != JT_NIL : !(jt_iscons(op) && jt_car(op) == pl && jt_cdr(op) == JT_NIL)) return false;
  uint32_t inherited = pl == JT_NIL ? 0 : jt_layout_(pl)->nslots, k = inherited;
  for (jt_V l = slots; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sn = jt_iscons(jt_car(l)) ? jt_car(jt_car(l)) : JT_NIL;
    if (pl != JT_NIL && slot_index(pl, sn) >= 0) continue;   /* an inherited slot given again */
    if (k >= O->nslots || jt_vec_(O->slot_names)->items[k] != sn) return false;
    k++;
  }
  return k == O->nslots;
}

static bool stored_instance_of(jt_State *S, jt_V obj, void *old) {
  (void)S;
  return jt_isstruct(obj) && jt_subtypep_layout(jt_struct_(obj)->layout, (jt_V)old);
}

/* A structure redefined with other slots (or another :include) gets a new
** layout; its old instances stay of the old one.  The world's stored
** instances and the types that include it would then be read back, by the
** next import, into a shape they do not have: refused, naming where one
** is, while they exist. */
static void check_reshape(jt_State *S, jt_V name, jt_V old) {
  char *n = jt_print_cstr(S, name, true, 100);
  jt_Hash *h = jt_hash_(S->layouts);
  for (size_t i = 0; i < h->nentries; i++) {
    jt_V l = h->entries[i].val;
    if (h->entries[i].key == JT_HASH_DELETED || l == old || !jt_subtypep_layout(l, old)) continue;
    char *sub = jt_print_cstr(S, jt_layout_(l)->name, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "cannot redefine the structure %s with other slots: the structure %s includes it "
             "(define %s again without it first, or give the new shape another name)", n, sub, sub);
    free(sub);
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  char *where = jt_world_mentions(S, stored_instance_of, (void *)old, false);
  if (where) {
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "cannot redefine the structure %s with other slots: the world stores instances of it (%s), "
             "which would not fit the new slots (remove or replace them first, or give the new shape "
             "another name)", n, where);
    free(where);
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  free(n);
}

/* A redefinition with the same slots keeps the type's layout, so that its
** instances (stored ones included) stay of the type, as they are once
** imported: the old layout takes the new definition's initforms, initargs
** and printer, and the new layout object is dropped. */
static void keep_layout(jt_State *S, jt_V old, jt_V fresh) {
  JT_PUSH(S, old);
  JT_PUSH(S, fresh);
  jt_Layout *F = jt_layout_(fresh);
  JT_SET(S, old, jt_layout_(old)->parents, F->parents);
  JT_SET(S, old, jt_layout_(old)->slot_names, F->slot_names);
  JT_SET(S, old, jt_layout_(old)->initargs, F->initargs);
  JT_SET(S, old, jt_layout_(old)->initforms, F->initforms);
  JT_SET(S, old, jt_layout_(old)->report, F->report);
  JT_SET(S, old, jt_layout_(old)->info, F->info);
  jt_V cls = F->class;
  JT_SET(S, old, jt_layout_(old)->class, cls);
  if (jt_is(cls, JT_TCLASS)) JT_SET(S, cls, jt_class_(cls)->wrapper, old);
  jt_hash_put(S, S->layouts, F->name, old);
  JT_POP(S, 2);
}

/* (%define-structure name parent slots &optional printer info) -> name
** slots: list of (name nil initform-thunk); printer: NIL or a function of
** (object stream), from the :print-function or :print-object option.  It
** is kept in the layout's report field, which only conditions use
** otherwise.  info: the library's description of the structure (its
** accessors, read-only slots, a :type structure's places), which a
** structure that includes this one reads back with %structure-info. */
JT_FN(f_define_structure) {
  jt_check_kernel_caller(S);  /* defines a type without recording it */
  jt_V name = jt_check_symbol(S, argv[0]);
  jt_check_type_definable(S, name, "a structure type");
  jt_V parents = argv[1] == JT_NIL ? JT_NIL : jt_list(S, 1, argv[1]);
  JT_PUSH(S, parents);
  jt_V old = jt_find_layout(S, name);
  if (old != JT_NIL && (jt_layout_(old)->h.flags & JT_LAYOUT_CONDITION))
    jt_error(S, "%s names a condition type", jt_symname(S, name));
  jt_V printer = argc > 3 ? argv[3] : JT_NIL;
  if (printer != JT_NIL && !jt_isfunction(printer)) jt_type_error(S, printer, JT_SYM(S, FUNCTION));
  JT_PUSH(S, old);
  jt_V pl = argv[1] == JT_NIL ? JT_NIL : jt_find_layout(S, argv[1]);
  bool same = old != JT_NIL && pl != old && same_shape(old, pl, argv[2]);
  if (old != JT_NIL && !same) check_reshape(S, name, old);
  jt_meta_type_replaced(S, name);
  jt_V fresh = jt_define_layout(S, name, S->sp[-2], argv[2], printer, false);
  if (argc > 4) JT_SET(S, fresh, jt_layout_(fresh)->info, argv[4]);
  if (same) keep_layout(S, S->sp[-1], fresh);
  JT_POP(S, 2);
  return name;
}

/* (%structure-info name) -> the description %define-structure was given,
** or NIL (a condition type, an unknown name) */
JT_FN(f_structure_info) {
  jt_V l = jt_find_layout(S, argv[0]);
  return l == JT_NIL ? JT_NIL : jt_layout_(l)->info;
}

jt_V jt_struct_printer(jt_V obj) {
  if (!jt_isstruct(obj)) return JT_NIL;
  jt_V l = jt_struct_(obj)->layout;
  if (jt_layout_(l)->h.flags & JT_LAYOUT_CONDITION) return JT_NIL;
  /* a structure has at most one parent: the nearest printer is inherited */
  for (;;) {
    if (jt_layout_(l)->report != JT_NIL) return jt_layout_(l)->report;
    jt_V parents = jt_layout_(l)->parents;
    if (!jt_iscons(parents)) return JT_NIL;
    l = jt_car(parents);
  }
}

/* (%make-structure name &rest slot-values) */
JT_FN(f_make_structure) {
  jt_V l = check_layout(S, argv[0]);
  jt_Layout *L = jt_layout_(l);
  if ((uint32_t)(argc - 1) != L->nslots)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s: expected %u slot values, got %d",
              jt_symname(S, argv[0]), L->nslots, argc - 1);
  jt_V obj = jt_make_struct(S, l, L->nslots);
  for (int i = 1; i < argc; i++) jt_struct_(obj)->slots[i - 1] = argv[i];
  return obj;
}

static jt_Struct *check_instance(jt_State *S, jt_V obj, jt_V type) {
  if (jt_isstruct(obj)) {
    jt_V l = jt_find_layout(S, type);
    if (l != JT_NIL && jt_subtypep_layout(jt_struct_(obj)->layout, l)) return jt_struct_(obj);
  }
  jt_type_error(S, obj, type);
}

/* (%struct-ref obj type index) */
JT_FN(f_struct_ref) {
  jt_Struct *s = check_instance(S, argv[0], argv[1]);
  size_t i = jt_check_index(S, argv[2]);
  if (i >= s->h.aux) jt_error(S, "structure slot index %zu out of range", i);
  JT_READ(S, JITI_READ_SLOT, argv[0], jt_vec_(jt_layout_(s->layout)->slot_names)->items[i], s->slots[i]);
  return s->slots[i];
}

/* (%struct-set obj type index value) */
JT_FN(f_struct_set) {
  jt_Struct *s = check_instance(S, argv[0], argv[1]);
  size_t i = jt_check_index(S, argv[2]);
  if (i >= s->h.aux) jt_error(S, "structure slot index %zu out of range", i);
  JT_SET(S, s, s->slots[i], argv[3]);
  return argv[3];
}

/* (%struct-typep obj type) */
JT_FN(f_struct_typep) {
  if (!jt_isstruct(argv[0])) return JT_NIL;
  jt_V l = jt_find_layout(S, argv[1]);
  return jt_bool(l != JT_NIL && jt_subtypep_layout(jt_struct_(argv[0])->layout, l));
}

JT_FN(f_copy_structure) {
  if (!jt_isstruct(argv[0])) jt_type_error(S, argv[0], JT_SYM(S, STRUCTURE_OBJECT));
  jt_Struct *s = jt_struct_(argv[0]);
  jt_V c = jt_make_struct(S, s->layout, s->h.aux);
  s = jt_struct_(argv[0]);
  for (uint32_t i = 0; i < s->h.aux; i++) jt_struct_(c)->slots[i] = s->slots[i];
  return c;
}

/* (%structure-slot-names type) -> list */
JT_FN(f_slot_names) {
  jt_V l = check_layout(S, argv[0]);
  jt_Vector *v = jt_vec_(jt_layout_(l)->slot_names);
  return jt_list_from(S, (int)v->len, v->items);
}

/* (%slot-default type slot) -> the slot's initform value, or NIL */
JT_FN(f_slot_default) {
  jt_V l = check_layout(S, argv[0]);
  int i = slot_index(l, argv[1]);
  if (i < 0) jt_error(S, "%s has no slot %s", jt_symname(S, argv[0]), jt_symname(S, argv[1]));
  jt_V thunk = jt_vec_(jt_layout_(l)->initforms)->items[i];
  return thunk == JT_NIL ? JT_NIL : jt_funcall(S, thunk, 0);
}

static const jt_Reg struct_fns[] = {
  {"%SLOT-DEFAULT", f_slot_default, 2, 2, "(%slot-default type slot) Evaluate the slot's initform."},
  {"%DEFINE-STRUCTURE", f_define_structure, 3, 5, "(%define-structure name parent slots &optional printer info) Define a structure layout."},
  {"%STRUCTURE-INFO", f_structure_info, 1, 1, "(%structure-info name) The description DEFSTRUCT gave the structure NAME, or NIL."},
  {"%MAKE-STRUCTURE", f_make_structure, 1, -1, "(%make-structure name &rest values) Make an instance."},
  {"%STRUCT-REF", f_struct_ref, 3, 3, "(%struct-ref obj type index) Read a slot, checking the type."},
  {"%STRUCT-SET", f_struct_set, 4, 4, "(%struct-set obj type index value) Write a slot, checking the type."},
  {"%STRUCT-TYPEP", f_struct_typep, 2, 2, "(%struct-typep obj type) True if OBJ is an instance of TYPE."},
  {"COPY-STRUCTURE", f_copy_structure, 1, 1, "(copy-structure s) Return a shallow copy of structure S."},
  {"%STRUCTURE-SLOT-NAMES", f_slot_names, 1, 1, "(%structure-slot-names type) Slot names of TYPE."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_struct(jt_State *S) { jt_register(S, struct_fns); }
