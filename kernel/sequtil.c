/*
** sequtil.c — machinery shared by list.c and seq.c: the :key/:test record,
** recognition of the standard built-ins, and list construction.  The small
** hot helpers are inline in jt_sequtil.h.
*/
#include <string.h>
#include "jt_sequtil.h"

bool jt_lisp_sym_named(jt_State *S, jt_V sym, const char *name) {
  return jt_is(sym, JT_TSYMBOL) && jt_sym_(sym)->package == JT_PKG_LISP &&
         strcmp(jt_symname(S, sym), name) == 0;
}

bool jt_prim_named(jt_State *S, jt_V fn, const char *name) {
  return jt_is(fn, JT_TPRIM) && jt_lisp_sym_named(S, jt_prim_(fn)->name, name);
}

/* The kind of a :test or :test-not function. */
static int test_kind(jt_State *S, jt_V fn) {
  if (jt_is(fn, JT_TPRIM) && jt_prim_(fn)->name == JT_SYM(S, EQL))
    return JT_TEST_EQL;
  if (jt_prim_named(S, fn, "EQ")) return JT_TEST_EQ;
  if (jt_prim_named(S, fn, "EQUAL")) return JT_TEST_EQUAL;
  return JT_TEST_FN;
}

void jt_test_init(jt_State *S, jt_Test *t, jt_V key, jt_V test,
                  jt_V test_not) {
  t->fn = t->key = JT_NIL;
  t->kind = JT_TEST_EQL;
  t->negate = false;
  JT_ROOT(S, t->fn);
  JT_ROOT(S, t->key);
  if (key != JT_NOVALUE && key != JT_NIL) t->key = jt_check_function(S, key);
  if (test != JT_NOVALUE && test_not != JT_NOVALUE)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "both :TEST and :TEST-NOT were supplied");
  if (test_not != JT_NOVALUE) { t->negate = true; test = test_not; }
  if (test != JT_NOVALUE) {
    t->fn = jt_check_function(S, test);
    t->kind = test_kind(S, t->fn);
    if (t->kind != JT_TEST_FN) t->fn = JT_NIL;
  }
}

void jt_test_pred_init(jt_State *S, jt_Test *t, jt_V pred, jt_V key,
                       bool negate) {
  jt_test_init(S, t, key, JT_NOVALUE, JT_NOVALUE);
  t->fn = jt_check_function(S, pred);
  t->kind = JT_TEST_PRED;
  t->negate = negate;
}

void jt_test_parse(jt_State *S, jt_Test *t, int argc, jt_V *argv, int start) {
  static const int keys[] = {JT_S_K_KEY, JT_S_K_TEST, JT_S_K_TEST_NOT};
  jt_V kv[3];
  jt_parse_keys(S, argc, argv, start, keys, 3, kv);
  jt_test_init(S, t, kv[0], kv[1], kv[2]);
}

void jt_test_parse_pred(jt_State *S, jt_Test *t, jt_V pred, int argc,
                        jt_V *argv, int start, bool negate) {
  static const int keys[] = {JT_S_K_KEY};
  jt_V kv[1];
  jt_parse_keys(S, argc, argv, start, keys, 1, kv);
  jt_test_pred_init(S, t, pred, kv[0], negate);
}

jt_V jt_make_list(jt_State *S, size_t n, jt_V init) {
  jt_V r = JT_NIL;
  JT_ROOT(S, r);
  while (n-- > 0) r = jt_cons(S, init, r);
  JT_UNROOT(S, 1);
  return r;
}
