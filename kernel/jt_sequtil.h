/*
** jt_sequtil.h — helpers shared by the list (list.c) and sequence (seq.c)
** functions; implemented in sequtil.c, with the hot ones inline here.
**
**   jt_Test / jt_test_*   :key, :test, :test-not and -if/-if-not predicates
**   jt_Coll / jt_coll_*   building a list in order
**   jt_call1, jt_call2    calling a Lisp function with one or two arguments
**   jt_eqlv               eql without a function call for immediates
**   JT_TICK               fuel for long loops that call no Lisp
**
** Only list.c and seq.c include this header; it is not part of jt_lib.h.
*/
#ifndef jt_sequtil_h
#define jt_sequtil_h

#include "jt_lib.h"

/* Loops over user data that call no Lisp tick the fuel now and then (every
** 256 iterations, counted in the unsigned `n`), so a circular list or a huge
** sequence cannot hang a state that runs with a fuel limit. */
#define JT_TICK(S, n) \
  do { if ((++(n) & 255u) == 0) jt_fuel_tick(S); } while (0)

static inline JT_NORETURN void jt_not_list(jt_State *S, jt_V v) {
  jt_improper_list(S, v);
}

static inline bool jt_eqlv(jt_V a, jt_V b) {
  return a == b || (jt_isptr(a) && jt_isptr(b) && jt_eql(a, b));
}

/* (funcall fn a) and (funcall fn a b); the arguments are rooted on the value
** stack for the duration of the call. */
static inline jt_V jt_call1(jt_State *S, jt_V fn, jt_V a) {
  JT_PUSH(S, a);
  jt_V r = jt_apply(S, fn, 1, S->sp - 1);
  JT_POP(S, 1);
  S->nvals = 1;   /* its other values are not the caller's */
  return r;
}

static inline jt_V jt_call2(jt_State *S, jt_V fn, jt_V a, jt_V b) {
  JT_PUSH(S, a);
  JT_PUSH(S, b);
  jt_V r = jt_apply(S, fn, 2, S->sp - 2);
  JT_POP(S, 2);
  S->nvals = 1;
  return r;
}

/* True if `sym` is the COMMON-LISP symbol named `name`, and if `fn` is the
** built-in function of that symbol (recognising #'eq, #'< ... without
** calling them). */
bool jt_lisp_sym_named(jt_State *S, jt_V sym, const char *name);
bool jt_prim_named(jt_State *S, jt_V fn, const char *name);

/* ---------------------------------------------------------------- tests
** :test / :test-not / :key, and the -if / -if-not predicates, folded into
** one record.  The standard tests eql, eq and equal are recognised so that
** the common case compares in C without calling Lisp.
**
** Rooting contract: every initialiser (jt_test_init, jt_test_pred_init,
** jt_test_parse, jt_test_parse_pred) roots the two function slots `fn` and
** `key` of the record, which therefore must stay in place (a local of the
** caller, or a field of a struct that lives as long as the roots); the
** caller does JT_UNROOT(S, 2) when done with it, together with its own
** roots pushed after.  An error unwinds these roots like any other. */

enum {
  JT_TEST_EQL,    /* default, or #'eql: compared in C */
  JT_TEST_EQ,     /* #'eq: compared in C */
  JT_TEST_EQUAL,  /* #'equal: compared in C */
  JT_TEST_FN,     /* any other two-argument test: called */
  JT_TEST_PRED    /* a one-argument predicate: called on the element */
};

typedef struct jt_Test {
  jt_V fn;      /* test, test-not or predicate; NIL for a recognised test */
  jt_V key;     /* key function, NIL for identity */
  int kind;     /* JT_TEST_* */
  bool negate;  /* :test-not, or an -if-not predicate */
} jt_Test;

/* From keyword values (JT_NOVALUE when absent); signals program-error when
** both :test and :test-not are given.  Roots 2 (see above). */
void jt_test_init(jt_State *S, jt_Test *t, jt_V key, jt_V test, jt_V test_not);
/* A predicate (the -if / -if-not functions), `negate` for -if-not.
** Roots 2. */
void jt_test_pred_init(jt_State *S, jt_Test *t, jt_V pred, jt_V key,
                       bool negate);
/* Parse :key :test :test-not from argv[start..argc).  Roots 2. */
void jt_test_parse(jt_State *S, jt_Test *t, int argc, jt_V *argv, int start);
/* Parse :key from argv[start..argc) for the predicate `pred`.  Roots 2. */
void jt_test_parse_pred(jt_State *S, jt_Test *t, jt_V pred, int argc,
                        jt_V *argv, int start, bool negate);

/* Whether applying the test calls no Lisp (a recognised test, no key).  A
** walk that applies such a test to a circular list finds the cycle
** (jt_walk_next); one that calls Lisp pays fuel at each call instead, and
** may be meant to go round (a stateful test). */
static inline bool jt_test_pure(const jt_Test *t) {
  return t->kind != JT_TEST_FN && t->kind != JT_TEST_PRED && t->key == JT_NIL;
}

/* The key of x (x itself without :key). */
static inline jt_V jt_test_keyed(jt_State *S, const jt_Test *t, jt_V x) {
  return t->key == JT_NIL ? x : jt_call1(S, t->key, x);
}

/* Compare an item with an already keyed element: (test a b), or
** (predicate b). */
static inline bool jt_test_cmp(jt_State *S, const jt_Test *t, jt_V a, jt_V b) {
  bool r;
  JT_WORK(S);
  switch (t->kind) {
    case JT_TEST_EQL: r = jt_eqlv(a, b); break;
    case JT_TEST_EQ: r = a == b; break;
    case JT_TEST_EQUAL: r = jt_equal(S, a, b); break;
    case JT_TEST_PRED: r = jt_call1(S, t->fn, b) != JT_NIL; break;
    default: r = jt_call2(S, t->fn, a, b) != JT_NIL; break;
  }
  return r != t->negate;
}

/* Does element `elt` (not yet keyed) match `item`? */
static inline bool jt_test_match(jt_State *S, const jt_Test *t, jt_V item,
                                 jt_V elt) {
  return jt_test_cmp(S, t, item, jt_test_keyed(S, t, elt));
}

/* ------------------------------------------------------------ collector
** A list built in order.  jt_coll_init roots both fields (the record must
** stay in place): callers JT_UNROOT(S, 2) when done.  The cells are fresh
** conses of the current primitive, so they are linked without the write
** barrier. */

typedef struct jt_Coll { jt_V head, tail; } jt_Coll;

static inline void jt_coll_init(jt_State *S, jt_Coll *c) {
  c->head = c->tail = JT_NIL;
  JT_ROOT(S, c->head);
  JT_ROOT(S, c->tail);
}

static inline void jt_coll_add(jt_State *S, jt_Coll *c, jt_V x) {
  jt_V cell = jt_cons(S, x, JT_NIL);
  if (c->tail == JT_NIL) c->head = cell; else jt_cons_(c->tail)->cdr = cell;
  c->tail = cell;
}

/* Terminate the collected list with `rest` (shared, not copied) and return
** it; `rest` itself when nothing was collected. */
static inline jt_V jt_coll_end(jt_Coll *c, jt_V rest) {
  if (c->tail == JT_NIL) return rest;
  jt_cons_(c->tail)->cdr = rest;
  return c->head;
}

/* A fresh list of n elements, each `init` (make-list, make-sequence). */
jt_V jt_make_list(jt_State *S, size_t n, jt_V init);

#endif
