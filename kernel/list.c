/*
** list.c — conses and lists: construction, access, mapping, membership,
** association and property lists, sets and trees.
**
** GC discipline used throughout: argv is rooted; any cursor into a list that
** is held across a call to Lisp is rooted too, because the called code may
** cut the list and let the cons we stand on become garbage.  Results are
** built with a jt_Coll (rooted head and tail; see jt_sequtil.h).
*/
#include <string.h>
#include "jt_sequtil.h"

/* ------------------------------------------------------------------ lists */

/* V was to be a proper list.  The type-error's datum is what is wrong: the
** atom ending a dotted list (not a list), or a circular list, whose type
** (satisfies list-length) it fails. */
void jt_improper_list(jt_State *S, jt_V v) {
  if (!jt_iscons(v)) jt_type_error(S, v, JT_SYM(S, LIST));
  jt_V slow = v, l = v;
  for (size_t n = 1;; n++) {
    l = jt_cdr(l);
    if (!jt_iscons(l)) {
      if (l == JT_NIL) jt_type_error(S, v, JT_SYM(S, LIST));  /* proper after all */
      jt_type_error(S, l, JT_SYM(S, LIST));
    }
    if ((n & 1) == 0) slow = jt_cdr(slow);
    if (slow == l) break;
  }
  JT_PUSH(S, v);
  jt_V type = jt_list(S, 2, JT_SYM(S, SATISFIES), jt_intern(S, "LIST-LENGTH"));
  JT_POP(S, 1);
  jt_type_error(S, v, type);
}

size_t jt_list_count(jt_State *S, jt_V list) {
  size_t n = 0;
  jt_Walk w = jt_walk(list);
  for (jt_V l = list; jt_iscons(l); l = jt_walk_next(S, &w, l)) n++;
  return n;
}

size_t jt_list_length(jt_State *S, jt_V list) {
  size_t n = 0;
  jt_Walk w = jt_walk(list);
  jt_V l = list;
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l)) n++;
  if (l != JT_NIL) jt_improper_list(S, list);
  return n;
}

jt_V jt_list_copy(jt_State *S, jt_V list) {
  jt_V *base = S->sp;
  JT_PUSH(S, list);
  size_t n = jt_list_length(S, list);
  jt_V r = JT_NIL;
  JT_PUSH(S, r);
  for (jt_V l = list, tail = JT_NIL; n > 0; n--, l = jt_cdr(l)) {
    jt_V c = jt_cons(S, jt_car(l), JT_NIL);
    if (tail == JT_NIL) base[1] = c; else jt_cons_(tail)->cdr = c;
    tail = c;
  }
  r = base[1];
  S->sp = base;
  return r;
}

jt_V jt_nreverse_list(jt_V list) {
  jt_V prev = JT_NIL;
  while (jt_iscons(list)) {
    jt_V next = jt_cdr(list);
    jt_cons_(list)->cdr = prev;
    prev = list;
    list = next;
  }
  return prev;
}

/* Deep car-recursion (copy-tree, subst, tree-equal) is bounded by the C
** stack budget the state was given, instead of crashing the host. */
static void check_cstack(jt_State *S) {
  char probe;
  if (S->cstack_base && S->cstack_limit &&
      (size_t)(S->cstack_base - &probe) > S->cstack_limit)
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "tree too deeply nested");
}

/* ------------------------------------------------------------ building */

JT_FN(f_list) { return jt_list_from(S, argc, argv); }

JT_FN(f_list_star) {
  jt_V r = argv[argc - 1];
  JT_ROOT(S, r);
  for (int i = argc - 2; i >= 0; i--) r = jt_cons(S, argv[i], r);
  JT_UNROOT(S, 1);
  return r;
}

JT_FN(f_make_list) {
  static const int keys[] = {JT_S_K_INITIAL_ELEMENT};
  jt_V kv[1];
  size_t n = jt_check_index(S, argv[0]);
  jt_parse_keys(S, argc, argv, 1, keys, 1, kv);
  return jt_make_list(S, n, kv[0] == JT_NOVALUE ? JT_NIL : kv[0]);
}

/* Copy the conses of `list`, keeping a dotted terminator; with `pairs`
** (copy-alist) each element that is a cons is copied too. */
static jt_V copy_list(jt_State *S, jt_V list, bool pairs) {
  if (!jt_islist(list)) jt_not_list(S, list);
  if (pairs) jt_list_length(S, list);   /* an alist is a proper list */
  jt_Coll c;
  jt_coll_init(S, &c);
  jt_Walk w = jt_walk(list);
  for (; jt_iscons(list); list = jt_walk_next(S, &w, list)) {
    jt_V e = jt_car(list);
    if (pairs && jt_iscons(e)) e = jt_cons(S, jt_car(e), jt_cdr(e));
    jt_coll_add(S, &c, e);
  }
  jt_V r = jt_coll_end(&c, list);
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_copy_list) { return copy_list(S, argv[0], false); }
JT_FN(f_copy_alist) { return copy_list(S, argv[0], true); }

/* Recurses on cars only; the spine of each level is copied in a loop. */
static jt_V copy_tree(jt_State *S, jt_V x) {
  if (!jt_iscons(x)) return x;
  check_cstack(S);
  jt_Coll c;
  jt_coll_init(S, &c);
  jt_V cur = x;
  JT_ROOT(S, cur);
  jt_Walk w = jt_walk(x);
  for (; jt_iscons(cur); cur = jt_walk_next(S, &w, cur)) {
    jt_V a = copy_tree(S, jt_car(cur));
    jt_coll_add(S, &c, a);
  }
  jt_V r = jt_coll_end(&c, cur);
  JT_UNROOT(S, 3);
  return r;
}

JT_FN(f_copy_tree) { return copy_tree(S, argv[0]); }

JT_FN(f_append) {
  if (argc == 0) return JT_NIL;
  jt_Coll c;
  jt_coll_init(S, &c);
  for (int i = 0; i < argc - 1; i++) {
    jt_V l = argv[i];
    jt_Walk w = jt_walk(l);
    for (; jt_iscons(l); l = jt_walk_next(S, &w, l)) jt_coll_add(S, &c, jt_car(l));
    if (l != JT_NIL) jt_not_list(S, argv[i]);
  }
  jt_V r = jt_coll_end(&c, argv[argc - 1]);
  JT_UNROOT(S, 2);
  return r;
}

/* The last cons of a non-empty list (stops at a dotted end). */
static jt_V last_cons(jt_State *S, jt_V l) {
  jt_Walk w = jt_walk(l);
  while (jt_iscons(jt_cdr(l))) l = jt_walk_next(S, &w, l);
  return l;
}

JT_FN(f_nconc) {
  jt_V head = JT_NIL, last = JT_NIL;
  for (int i = 0; i < argc; i++) {
    jt_V l = argv[i];
    if (l == JT_NIL) continue;
    if (i < argc - 1 && !jt_iscons(l)) jt_not_list(S, l);
    if (last == JT_NIL) head = l;
    else JT_SET(S, last, jt_cons_(last)->cdr, l);
    /* the last list is not walked: it may share structure with (even be)
    ** an earlier one, as in (nconc s s) */
    if (jt_iscons(l) && i < argc - 1) last = last_cons(S, l);
  }
  return head;
}

JT_FN(f_revappend) {
  jt_V l = argv[0], r = argv[1];
  JT_ROOT(S, l);
  JT_ROOT(S, r);
  jt_Walk w = jt_walk(argv[0]);
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l)) r = jt_cons(S, jt_car(l), r);
  if (l != JT_NIL) jt_not_list(S, argv[0]);
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_nreconc) {
  jt_V l = argv[0], r = argv[1];
  while (jt_iscons(l)) {
    jt_V next = jt_cdr(l);
    JT_SET(S, l, jt_cons_(l)->cdr, r);
    r = l;
    l = next;
  }
  /* the list is already reversed: the datum is its dotted tail */
  if (l != JT_NIL) jt_not_list(S, l);
  return r;
}

/* -------------------------------------------------------------- access */

/* Apply the car/cdr path `ops` (letters between c and r) right to left. */
static jt_V cxr(jt_State *S, jt_V x, const char *ops) {
  for (int i = (int)strlen(ops) - 1; i >= 0; i--) {
    if (x == JT_NIL) return JT_NIL;
    if (!jt_iscons(x)) jt_not_list(S, x);
    x = ops[i] == 'a' ? jt_car(x) : jt_cdr(x);
  }
  return x;
}

/* Store through a path: ops[0] says which half of the reached cons. */
static jt_V set_cxr(jt_State *S, jt_V x, const char *ops, jt_V v) {
  jt_V cell = cxr(S, x, ops + 1);
  if (!jt_iscons(cell)) jt_type_error(S, cell, JT_SYM(S, CONS));
  if (ops[0] == 'a') JT_SET(S, cell, jt_cons_(cell)->car, v);
  else JT_SET(S, cell, jt_cons_(cell)->cdr, v);
  return v;
}

#define CXR(cname, ops) \
  JT_FN(cname) { return cxr(S, argv[0], ops); }
#define SET_CXR(cname, ops) \
  JT_FN(cname) { return set_cxr(S, argv[0], ops, argv[1]); }

CXR(f_caar, "aa") CXR(f_cadr, "ad") CXR(f_cdar, "da") CXR(f_cddr, "dd")
CXR(f_caaar, "aaa") CXR(f_caadr, "aad") CXR(f_cadar, "ada")
CXR(f_caddr, "add") CXR(f_cdaar, "daa") CXR(f_cdadr, "dad")
CXR(f_cddar, "dda") CXR(f_cdddr, "ddd")
CXR(f_caaaar, "aaaa") CXR(f_caaadr, "aaad") CXR(f_caadar, "aada")
CXR(f_caaddr, "aadd") CXR(f_cadaar, "adaa") CXR(f_cadadr, "adad")
CXR(f_caddar, "adda") CXR(f_cadddr, "addd") CXR(f_cdaaar, "daaa")
CXR(f_cdaadr, "daad") CXR(f_cdadar, "dada") CXR(f_cdaddr, "dadd")
CXR(f_cddaar, "ddaa") CXR(f_cddadr, "ddad") CXR(f_cdddar, "ddda")
CXR(f_cddddr, "dddd")
CXR(f_first, "a") CXR(f_rest, "d")

SET_CXR(f_set_car, "a") SET_CXR(f_set_cdr, "d")
SET_CXR(f_set_caar, "aa") SET_CXR(f_set_cadr, "ad")
SET_CXR(f_set_cdar, "da") SET_CXR(f_set_cddr, "dd")
SET_CXR(f_set_caddr, "add") SET_CXR(f_set_cdddr, "ddd")

JT_FN(f_rplaca) {
  jt_V c = jt_check_cons(S, argv[0]);
  JT_SET(S, c, jt_cons_(c)->car, argv[1]);
  return c;
}

JT_FN(f_rplacd) {
  jt_V c = jt_check_cons(S, argv[0]);
  JT_SET(S, c, jt_cons_(c)->cdr, argv[1]);
  return c;
}

/* (nthcdr n list) for a fixnum n; a bignum index is past any real list. */
static jt_V nthcdr(jt_State *S, jt_V nv, jt_V list) {
  if (jt_isbig(nv) && mpz_sgn(jt_big_(nv)->z) > 0) {
    jt_list_count(S, list);
    while (jt_iscons(list)) list = jt_cdr(list);
    if (list != JT_NIL) jt_not_list(S, list);
    return JT_NIL;
  }
  size_t n = jt_check_index(S, nv);
  unsigned k = 0;
  for (; n > 0; n--) {
    if (list == JT_NIL) return JT_NIL;
    if (!jt_iscons(list)) jt_not_list(S, list);
    list = jt_cdr(list);
    JT_TICK(S, k);
  }
  return list;
}

JT_FN(f_nthcdr) { return nthcdr(S, argv[0], argv[1]); }

JT_FN(f_nth) {
  jt_V c = nthcdr(S, argv[0], argv[1]);
  if (c == JT_NIL) return JT_NIL;
  if (!jt_iscons(c)) jt_not_list(S, c);
  return jt_car(c);
}

static jt_V set_nth(jt_State *S, jt_V nv, jt_V list, jt_V v) {
  jt_V c = nthcdr(S, nv, list);
  if (!jt_iscons(c)) jt_type_error(S, c, JT_SYM(S, CONS));
  JT_SET(S, c, jt_cons_(c)->car, v);
  return v;
}

JT_FN(f_set_nth) { return set_nth(S, argv[0], argv[1], argv[2]); }

#define NTH_ACC(cname, setname, k) \
  JT_FN(cname) { \
    jt_V c = nthcdr(S, jt_mkfix(k), argv[0]); \
    if (c == JT_NIL) return JT_NIL; \
    if (!jt_iscons(c)) jt_not_list(S, c); \
    return jt_car(c); \
  } \
  JT_FN(setname) { return set_nth(S, jt_mkfix(k), argv[0], argv[1]); }

NTH_ACC(f_second, f_set_second, 1) NTH_ACC(f_third, f_set_third, 2)
NTH_ACC(f_fourth, f_set_fourth, 3) NTH_ACC(f_fifth, f_set_fifth, 4)
NTH_ACC(f_sixth, f_set_sixth, 5) NTH_ACC(f_seventh, f_set_seventh, 6)
NTH_ACC(f_eighth, f_set_eighth, 7) NTH_ACC(f_ninth, f_set_ninth, 8)
NTH_ACC(f_tenth, f_set_tenth, 9)

/* Optional count argument of last/butlast: a huge bignum acts as infinity. */
static size_t opt_count(jt_State *S, int argc, jt_V *argv, int i) {
  if (argc <= i) return 1;
  jt_V v = argv[i];
  if (jt_isbig(v) && mpz_sgn(jt_big_(v)->z) > 0) return SIZE_MAX;
  return jt_check_index(S, v);
}

JT_FN(f_last) {
  jt_V l = argv[0];
  if (!jt_islist(l)) jt_not_list(S, l);
  size_t n = opt_count(S, argc, argv, 1);
  /* `lead` runs n conses ahead; when it falls off, `l` is the answer */
  jt_V lead = l;
  jt_Walk w = jt_walk(l);
  for (size_t i = 0; i < n && jt_iscons(lead); i++) lead = jt_walk_next(S, &w, lead);
  while (jt_iscons(lead)) { lead = jt_walk_next(S, &w, lead); l = jt_cdr(l); }
  return l;
}

JT_FN(f_butlast) {
  jt_V l = argv[0];
  if (!jt_islist(l)) jt_not_list(S, l);
  size_t n = opt_count(S, argc, argv, 1);
  size_t len = jt_list_count(S, l);
  if (len <= n) return JT_NIL;
  jt_Coll c;
  jt_coll_init(S, &c);
  for (size_t i = len - n; i > 0; i--, l = jt_cdr(l)) jt_coll_add(S, &c, jt_car(l));
  JT_UNROOT(S, 2);
  return c.head;
}

JT_FN(f_nbutlast) {
  jt_V l = argv[0];
  if (!jt_islist(l)) jt_not_list(S, l);
  size_t n = opt_count(S, argc, argv, 1);
  size_t len = jt_list_count(S, l);
  if (len <= n) return JT_NIL;
  jt_V c = l;
  for (size_t i = len - n - 1; i > 0; i--) c = jt_cdr(c);
  JT_SET(S, c, jt_cons_(c)->cdr, JT_NIL);
  return l;
}

JT_FN(f_ldiff) {
  jt_V l = argv[0], obj = argv[1];
  if (!jt_islist(l)) jt_not_list(S, l);
  jt_Coll c;
  jt_coll_init(S, &c);
  jt_Walk w = jt_walk(l);
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    if (jt_eqlv(l, obj)) break;
    jt_coll_add(S, &c, jt_car(l));
  }
  /* a dotted terminator is kept unless it is the object itself */
  jt_V r = jt_coll_end(&c, (jt_iscons(l) || jt_eqlv(l, obj)) ? JT_NIL : l);
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_tailp) {
  jt_V obj = argv[0], l = argv[1];
  if (!jt_islist(l)) jt_not_list(S, l);
  jt_Walk w = jt_walk(l);
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l))
    if (jt_eqlv(l, obj)) return JT_T;
  return jt_bool(jt_eqlv(l, obj));
}

JT_FN(f_endp) {
  if (argv[0] == JT_NIL) return JT_T;
  if (jt_iscons(argv[0])) return JT_NIL;
  jt_not_list(S, argv[0]);
}

/* Tortoise and hare: NIL for a circular list. */
JT_FN(f_list_length) {
  jt_V fast = argv[0], slow = argv[0];
  intptr_t n = 0;
  for (;;) {
    if (fast == JT_NIL) return jt_mkfix(n);
    if (!jt_iscons(fast)) jt_not_list(S, argv[0]);
    fast = jt_cdr(fast);
    n++;
    if (fast == JT_NIL) return jt_mkfix(n);
    if (!jt_iscons(fast)) jt_not_list(S, argv[0]);
    fast = jt_cdr(fast);
    n++;
    slow = jt_cdr(slow);
    if (fast == slow) return JT_NIL;
  }
}

/* ---------------------------------------------------------- membership */

enum { SEL_ELT, SEL_CAR, SEL_CDR };

/* The first cons of `list` whose element (or the element's car or cdr, for
** the alist functions) matches; NIL if none. */
static jt_V list_find(jt_State *S, const jt_Test *t, jt_V item, jt_V list,
                      int sel) {
  jt_V cur = list;
  unsigned k = 0;
  jt_Walk w = jt_walk(list);
  /* Fast path: eql without a key never calls Lisp, so no rooting. */
  if (sel == SEL_ELT && t->kind == JT_TEST_EQL && t->key == JT_NIL && !t->negate) {
    for (; jt_iscons(cur); cur = jt_walk_next(S, &w, cur))
      if (jt_eqlv(item, jt_car(cur))) return cur;
    if (cur != JT_NIL) jt_not_list(S, list);
    return JT_NIL;
  }
  bool pure = jt_test_pure(t);
  JT_ROOT(S, cur);
  for (; jt_iscons(cur); cur = pure ? jt_walk_next(S, &w, cur) : jt_cdr(cur)) {
    jt_V x = jt_car(cur);
    if (sel != SEL_ELT) {
      if (x == JT_NIL) continue;
      if (!jt_iscons(x)) jt_not_list(S, x);
      x = sel == SEL_CAR ? jt_car(x) : jt_cdr(x);
    }
    if (jt_test_match(S, t, item, x)) break;
    if (!pure) JT_TICK(S, k);   /* the walk pays when pure */
  }
  if (!jt_islist(cur)) jt_not_list(S, list);
  JT_UNROOT(S, 1);
  return cur;
}

static jt_V member_with(jt_State *S, int argc, jt_V *argv, int sel, int mode) {
  jt_Test t;
  if (mode == 0) jt_test_parse(S, &t, argc, argv, 2);
  else jt_test_parse_pred(S, &t, argv[0], argc, argv, 2, mode == 2);
  jt_V c = list_find(S, &t, argv[0], argv[1], sel);
  JT_UNROOT(S, 2);
  return sel == SEL_ELT || c == JT_NIL ? c : jt_car(c);
}

JT_FN(f_member) { return member_with(S, argc, argv, SEL_ELT, 0); }
JT_FN(f_member_if) { return member_with(S, argc, argv, SEL_ELT, 1); }
JT_FN(f_member_if_not) { return member_with(S, argc, argv, SEL_ELT, 2); }
JT_FN(f_assoc) { return member_with(S, argc, argv, SEL_CAR, 0); }
JT_FN(f_assoc_if) { return member_with(S, argc, argv, SEL_CAR, 1); }
JT_FN(f_assoc_if_not) { return member_with(S, argc, argv, SEL_CAR, 2); }
JT_FN(f_rassoc) { return member_with(S, argc, argv, SEL_CDR, 0); }
JT_FN(f_rassoc_if) { return member_with(S, argc, argv, SEL_CDR, 1); }
JT_FN(f_rassoc_if_not) { return member_with(S, argc, argv, SEL_CDR, 2); }

JT_FN(f_acons) {
  jt_V pair = jt_cons(S, argv[0], argv[1]);
  return jt_cons(S, pair, argv[2]);
}

JT_FN(f_pairlis) {
  jt_V ks = argv[0], ds = argv[1];
  jt_list_length(S, ks);   /* both proper lists (type-errors) */
  jt_list_length(S, ds);
  jt_V r = argc > 2 ? argv[2] : JT_NIL;
  JT_ROOT(S, r);
  for (; jt_iscons(ks) && jt_iscons(ds); ks = jt_cdr(ks), ds = jt_cdr(ds)) {
    jt_V pair = jt_cons(S, jt_car(ks), jt_car(ds));
    r = jt_cons(S, pair, r);
  }
  if (ks != JT_NIL || ds != JT_NIL)
    jt_error(S, "PAIRLIS: the lists of keys and data have different lengths");
  JT_UNROOT(S, 1);
  return r;
}

/* ------------------------------------------------------ property lists */

/* The cons holding `ind` in plist (its value is in the next cons), or NIL.
** Indicators compare with eq. */
static jt_V plist_find(jt_State *S, jt_V plist, jt_V ind) {
  jt_V p = plist;
  jt_Walk w = jt_walk(plist);
  while (jt_iscons(p)) {
    if (!jt_iscons(jt_cdr(p))) break;
    if (jt_car(p) == ind) return p;
    p = jt_walk_next(S, &w, jt_walk_next(S, &w, p));
  }
  if (p != JT_NIL) jt_not_list(S, plist);  /* odd length or dotted */
  return JT_NIL;
}

JT_FN(f_getf) {
  jt_V c = plist_find(S, argv[0], argv[1]);
  if (c != JT_NIL) return jt_car(jt_cdr(c));
  return argc > 2 ? argv[2] : JT_NIL;
}

JT_FN(f_get_properties) {
  jt_V p = argv[0];
  unsigned k = 0;
  jt_list_length(S, argv[1]);   /* the indicators: a proper list */
  jt_Walk w = jt_walk(p);
  for (; jt_iscons(p) && jt_iscons(jt_cdr(p)); p = jt_walk_next(S, &w, jt_walk_next(S, &w, p))) {
    jt_V inds = argv[1];
    for (; jt_iscons(inds); inds = jt_cdr(inds)) {
      if (jt_car(inds) == jt_car(p)) {
        jt_V vals[3] = {jt_car(p), jt_car(jt_cdr(p)), p};
        return jt_values(S, 3, vals);
      }
      JT_TICK(S, k);
    }
  }
  if (p != JT_NIL) jt_not_list(S, argv[0]);
  jt_V none[3] = {JT_NIL, JT_NIL, JT_NIL};
  return jt_values(S, 3, none);
}

static jt_Symbol *check_sym(jt_State *S, jt_V v) {
  return jt_symobj(S, jt_check_symbol(S, v));
}

JT_FN(f_get) {
  jt_Symbol *sym = check_sym(S, argv[0]);
  jt_V c = plist_find(S, sym->plist, argv[1]);
  if (c != JT_NIL) return jt_car(jt_cdr(c));
  return argc > 2 ? argv[2] : JT_NIL;
}

/* (%set-get symbol indicator [default] value): the place (get s i d)
** evaluates its default, which the store then ignores. */
JT_FN(f_set_get) {
  jt_Symbol *sym = check_sym(S, argv[0]);
  jt_V value = argv[argc - 1];
  jt_plist_check(S, argv[0]);
  jt_V c = plist_find(S, sym->plist, argv[1]);
  if (c != JT_NIL) {
    jt_V vc = jt_cdr(c);
    JT_SET(S, vc, jt_cons_(vc)->car, value);
  } else {
    jt_V p = jt_cons(S, value, sym->plist);
    p = jt_cons(S, argv[1], p);
    JT_SET(S, sym, sym->plist, p);
  }
  jt_plist_changed(S, argv[0]);
  return value;
}

JT_FN(f_remprop) {
  jt_Symbol *sym = check_sym(S, argv[0]);
  jt_V prev = JT_NIL, p = sym->plist;
  jt_Walk w = jt_walk(p);
  for (; jt_iscons(p) && jt_iscons(jt_cdr(p)); prev = jt_walk_next(S, &w, p), p = jt_walk_next(S, &w, prev)) {
    if (jt_car(p) == argv[1]) {
      jt_plist_check(S, argv[0]);
      jt_V rest = jt_cdr(jt_cdr(p));
      if (prev == JT_NIL) JT_SET(S, sym, sym->plist, rest);
      else JT_SET(S, prev, jt_cons_(prev)->cdr, rest);
      jt_plist_changed(S, argv[0]);
      return JT_T;
    }
  }
  return JT_NIL;
}

JT_FN(f_symbol_plist) { return check_sym(S, argv[0])->plist; }

JT_FN(f_set_symbol_plist) {
  jt_Symbol *sym = check_sym(S, argv[0]);
  if (!jt_islist(argv[1])) jt_not_list(S, argv[1]);
  jt_plist_check(S, argv[0]);
  JT_SET(S, sym, sym->plist, argv[1]);
  jt_plist_changed(S, argv[0]);
  return argv[1];
}

/* ------------------------------------------------------------- mapping */

enum { ACC_NONE, ACC_LIST, ACC_NCONC };

static void accumulate(jt_State *S, jt_Coll *c, jt_V r, int acc) {
  if (acc == ACC_LIST) { jt_coll_add(S, c, r); return; }
  if (acc == ACC_NONE || r == JT_NIL) return;
  /* mapcan/mapcon splice the results as nconc does */
  if (c->tail == JT_NIL) c->head = r;
  else JT_SET(S, c->tail, jt_cons_(c->tail)->cdr, r);
  if (jt_iscons(r)) c->tail = last_cons(S, r);
}

/* The six map functions: `tails` passes the sublists instead of their
** cars; `acc` says what is made of the results.  Stops at the end of the
** shortest list. */
static jt_V map_lists(jt_State *S, int argc, jt_V *argv, bool tails, int acc) {
  jt_V fn = jt_check_function(S, argv[0]);
  int n = argc - 1;
  jt_Coll c;
  jt_coll_init(S, &c);
  JT_PUSH(S, fn);
  if (n == 1) {
    jt_V cur = argv[1];
    JT_ROOT(S, cur);
    while (jt_iscons(cur)) {
      JT_PUSH(S, tails ? cur : jt_car(cur));
      cur = jt_cdr(cur);
      jt_V r = jt_apply(S, fn, 1, S->sp - 1);
      JT_POP(S, 1);
      accumulate(S, &c, r, acc);
    }
    if (cur != JT_NIL) jt_not_list(S, argv[1]);
    JT_UNROOT(S, 1);
  } else {
    /* cursors and the argument vector live on the value stack */
    jt_V *cur = S->sp;
    for (int i = 0; i < n; i++) JT_PUSH(S, argv[i + 1]);
    jt_V *args = S->sp;
    for (int i = 0; i < n; i++) JT_PUSH(S, JT_NIL);
    for (;;) {
      for (int i = 0; i < n; i++) {
        if (!jt_iscons(cur[i])) {
          if (cur[i] != JT_NIL) jt_not_list(S, argv[i + 1]);
          goto done;
        }
        args[i] = tails ? cur[i] : jt_car(cur[i]);
        cur[i] = jt_cdr(cur[i]);
      }
      jt_V r = jt_apply(S, fn, n, args);
      accumulate(S, &c, r, acc);
    }
  done:
    JT_POP(S, 2 * n);
  }
  JT_POP(S, 1);
  JT_UNROOT(S, 2);
  return acc == ACC_NONE ? argv[1] : c.head;
}

JT_FN(f_mapcar) { return map_lists(S, argc, argv, false, ACC_LIST); }
JT_FN(f_mapc) { return map_lists(S, argc, argv, false, ACC_NONE); }
JT_FN(f_mapcan) { return map_lists(S, argc, argv, false, ACC_NCONC); }
JT_FN(f_maplist) { return map_lists(S, argc, argv, true, ACC_LIST); }
JT_FN(f_mapl) { return map_lists(S, argc, argv, true, ACC_NONE); }
JT_FN(f_mapcon) { return map_lists(S, argc, argv, true, ACC_NCONC); }

/* ---------------------------------------------------------------- sets
** Tests are called as (test x y) with x from the first list, after :key
** has been applied to both. */

/* Is there an element e of `list` with (test kx (key e)), or with the
** arguments swapped when `swap`?  kx must be rooted by the caller. */
static bool in_list(jt_State *S, const jt_Test *t, jt_V kx, jt_V list, bool swap) {
  if (!swap || t->kind != JT_TEST_FN)
    return list_find(S, t, kx, list, SEL_ELT) != JT_NIL;
  jt_V cur = list;
  JT_ROOT(S, cur);
  bool found = false;
  for (; jt_iscons(cur); cur = jt_cdr(cur))
    if (jt_test_cmp(S, t, jt_test_keyed(S, t, jt_car(cur)), kx)) { found = true; break; }
  if (!jt_islist(cur)) jt_not_list(S, list);
  JT_UNROOT(S, 1);
  return found;
}

/* Elements of `a` that are (want) or are not (!want) in `b`, pushed in
** reverse order onto `init` (the order SBCL gives, which tests compare). */
static jt_V filter_set(jt_State *S, const jt_Test *t, jt_V a, jt_V b, bool want,
                       bool swap, jt_V init) {
  jt_V cur = a, kx = JT_NIL, r = init;
  JT_ROOT(S, cur);
  JT_ROOT(S, kx);
  JT_ROOT(S, r);
  for (; jt_iscons(cur); cur = jt_cdr(cur)) {
    kx = jt_test_keyed(S, t, jt_car(cur));
    if (in_list(S, t, kx, b, swap) == want) r = jt_cons(S, jt_car(cur), r);
  }
  if (cur != JT_NIL) jt_not_list(S, a);
  JT_UNROOT(S, 3);
  return r;
}

/* The two lists of a set function: proper lists (else a type-error). */
static void check_lists(jt_State *S, jt_V *argv) {
  jt_list_length(S, argv[0]);
  jt_list_length(S, argv[1]);
}

JT_FN(f_adjoin) {
  jt_Test t;
  jt_test_parse(S, &t, argc, argv, 2);
  if (!jt_islist(argv[1])) jt_not_list(S, argv[1]);
  jt_V kx = jt_test_keyed(S, &t, argv[0]);
  JT_ROOT(S, kx);
  bool found = in_list(S, &t, kx, argv[1], false);
  JT_UNROOT(S, 3);
  return found ? argv[1] : jt_cons(S, argv[0], argv[1]);
}

enum { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE, SET_XOR };

static jt_V set_op(jt_State *S, int argc, jt_V *argv, int op) {
  jt_Test t;
  jt_test_parse(S, &t, argc, argv, 2);
  check_lists(S, argv);
  jt_V r = filter_set(S, &t, argv[0], argv[1], op == SET_INTERSECTION, false,
                      op == SET_UNION ? argv[1] : JT_NIL);
  if (op == SET_XOR) r = filter_set(S, &t, argv[1], argv[0], false, true, r);
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_union) { return set_op(S, argc, argv, SET_UNION); }
JT_FN(f_intersection) { return set_op(S, argc, argv, SET_INTERSECTION); }
JT_FN(f_set_difference) { return set_op(S, argc, argv, SET_DIFFERENCE); }
JT_FN(f_set_exclusive_or) { return set_op(S, argc, argv, SET_XOR); }

JT_FN(f_subsetp) {
  jt_Test t;
  jt_test_parse(S, &t, argc, argv, 2);
  check_lists(S, argv);
  jt_V cur = argv[0], kx = JT_NIL;
  JT_ROOT(S, cur);
  JT_ROOT(S, kx);
  bool ok = true;
  for (; jt_iscons(cur); cur = jt_cdr(cur)) {
    kx = jt_test_keyed(S, &t, jt_car(cur));
    if (!in_list(S, &t, kx, argv[1], false)) { ok = false; break; }
  }
  JT_UNROOT(S, 4);
  return jt_bool(ok);
}

/* --------------------------------------------------------------- trees */

/* What replaces a subtree, or JT_NOVALUE to keep it: subst matches against
** `old`, sublis looks the keyed subtree up in the alist `old`. */
typedef struct Subst {
  jt_Test t;
  jt_V new_, old;
  bool alist;
} Subst;

static jt_V subst_lookup(jt_State *S, const Subst *s, jt_V tree) {
  if (!s->alist) return jt_test_match(S, &s->t, s->old, tree) ? s->new_ : JT_NOVALUE;
  jt_V k = jt_test_keyed(S, &s->t, tree);
  JT_ROOT(S, k);
  jt_V a = s->old;
  JT_ROOT(S, a);
  for (; jt_iscons(a); a = jt_cdr(a)) {
    jt_V e = jt_car(a);
    if (e == JT_NIL) continue;
    if (!jt_iscons(e)) jt_not_list(S, e);
    if (jt_test_cmp(S, &s->t, k, jt_car(e))) break;
  }
  JT_UNROOT(S, 2);
  return jt_iscons(a) ? jt_cdr(jt_car(a)) : JT_NOVALUE;
}

/* Copies the spine of each level it descends (sharing is allowed, never
** required); recursion only goes into cars. */
static jt_V subst_tree(jt_State *S, const Subst *s, jt_V tree) {
  jt_V r = subst_lookup(S, s, tree);
  if (r != JT_NOVALUE) return r;
  if (!jt_iscons(tree)) return tree;
  check_cstack(S);
  jt_Coll c;
  jt_coll_init(S, &c);
  jt_V cur = tree;
  JT_ROOT(S, cur);
  jt_Walk w = jt_walk(tree);   /* a tree has no cycles */
  for (;;) {
    jt_coll_add(S, &c, subst_tree(S, s, jt_car(cur)));
    cur = jt_walk_next(S, &w, cur);
    r = subst_lookup(S, s, cur);
    if (r != JT_NOVALUE) break;
    if (!jt_iscons(cur)) { r = cur; break; }
  }
  r = jt_coll_end(&c, r);
  JT_UNROOT(S, 3);
  return r;
}

static jt_V nsubst_tree(jt_State *S, const Subst *s, jt_V tree) {
  jt_V r = subst_lookup(S, s, tree);
  if (r != JT_NOVALUE) return r;
  if (!jt_iscons(tree)) return tree;
  check_cstack(S);
  jt_V cur = tree;
  JT_ROOT(S, cur);
  jt_Walk w = jt_walk(tree);
  for (;;) {
    jt_V a = nsubst_tree(S, s, jt_car(cur));
    JT_SET(S, cur, jt_cons_(cur)->car, a);
    jt_V d = jt_walk_next(S, &w, cur);
    r = subst_lookup(S, s, d);
    if (r != JT_NOVALUE) { JT_SET(S, cur, jt_cons_(cur)->cdr, r); break; }
    if (!jt_iscons(d)) break;
    cur = d;
  }
  JT_UNROOT(S, 1);
  return tree;
}

/* mode: 0 subst, 1 subst-if, 2 subst-if-not, 3 sublis. */
static jt_V do_subst(jt_State *S, int argc, jt_V *argv, int mode, bool destructive) {
  Subst s;
  int nfixed = mode == 3 ? 2 : 3;
  s.alist = mode == 3;
  s.new_ = mode == 3 ? JT_NIL : argv[0];
  s.old = mode == 3 ? argv[0] : argv[1];
  if (mode == 3) jt_list_length(S, argv[0]);   /* the alist: a proper list */
  if (mode == 0 || mode == 3) jt_test_parse(S, &s.t, argc, argv, nfixed);
  else jt_test_parse_pred(S, &s.t, argv[1], argc, argv, nfixed, mode == 2);
  jt_V tree = argv[nfixed - 1];
  jt_V r = destructive ? nsubst_tree(S, &s, tree) : subst_tree(S, &s, tree);
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_subst) { return do_subst(S, argc, argv, 0, false); }
JT_FN(f_subst_if) { return do_subst(S, argc, argv, 1, false); }
JT_FN(f_subst_if_not) { return do_subst(S, argc, argv, 2, false); }
JT_FN(f_nsubst) { return do_subst(S, argc, argv, 0, true); }
JT_FN(f_nsubst_if) { return do_subst(S, argc, argv, 1, true); }
JT_FN(f_nsubst_if_not) { return do_subst(S, argc, argv, 2, true); }
JT_FN(f_sublis) { return do_subst(S, argc, argv, 3, false); }
JT_FN(f_nsublis) { return do_subst(S, argc, argv, 3, true); }

static bool tree_equal(jt_State *S, const jt_Test *t, jt_V a, jt_V b) {
  check_cstack(S);
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  bool r = true;
  jt_Walk wa = jt_walk(a), wb = jt_walk(b);
  while (jt_iscons(a) && jt_iscons(b)) {
    if (!tree_equal(S, t, jt_car(a), jt_car(b))) { r = false; break; }
    a = jt_walk_next(S, &wa, a);
    b = jt_walk_next(S, &wb, b);
  }
  if (r) {
    if (jt_iscons(a) || jt_iscons(b)) r = false;
    else r = jt_test_cmp(S, t, a, b);
  }
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_tree_equal) {
  static const int keys[] = {JT_S_K_TEST, JT_S_K_TEST_NOT};
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 2, keys, 2, kv);
  jt_Test t;
  jt_test_init(S, &t, JT_NOVALUE, kv[0], kv[1]);
  bool r = tree_equal(S, &t, argv[0], argv[1]);
  JT_UNROOT(S, 2);
  S->nvals = 1;   /* not the test's other values */
  return jt_bool(r);
}

/* ------------------------------------------------------------ registry */

static const jt_Reg list_fns[] = {
  {"LIST", f_list, 0, -1, "(list &rest objects) A fresh list of OBJECTS."},
  {"LIST*", f_list_star, 1, -1,
   "(list* object &rest objects) Like LIST, but the last argument becomes the tail."},
  {"MAKE-LIST", f_make_list, 1, -1,
   "(make-list size &key initial-element) A fresh list of SIZE elements."},
  {"COPY-LIST", f_copy_list, 1, 1,
   "(copy-list list) A copy of the conses of LIST's top level."},
  {"COPY-ALIST", f_copy_alist, 1, 1,
   "(copy-alist alist) A copy of ALIST and of each of its pairs."},
  {"COPY-TREE", f_copy_tree, 1, 1,
   "(copy-tree tree) A copy of every cons of TREE."},
  {"APPEND", f_append, 0, -1,
   "(append &rest lists) Concatenate LISTS; the last one is shared, not copied."},
  {"NCONC", f_nconc, 0, -1,
   "(nconc &rest lists) Concatenate LISTS destructively."},
  {"REVAPPEND", f_revappend, 2, 2,
   "(revappend list tail) The reverse of LIST followed by TAIL."},
  {"NRECONC", f_nreconc, 2, 2,
   "(nreconc list tail) Destructive REVAPPEND."},
  {"FIRST", f_first, 1, 1, "(first list) The first element of LIST."},
  {"REST", f_rest, 1, 1, "(rest list) LIST without its first element."},
  {"SECOND", f_second, 1, 1, "(second list) The second element of LIST."},
  {"THIRD", f_third, 1, 1, "(third list) The third element of LIST."},
  {"FOURTH", f_fourth, 1, 1, "(fourth list) The fourth element of LIST."},
  {"FIFTH", f_fifth, 1, 1, "(fifth list) The fifth element of LIST."},
  {"SIXTH", f_sixth, 1, 1, "(sixth list) The sixth element of LIST."},
  {"SEVENTH", f_seventh, 1, 1, "(seventh list) The seventh element of LIST."},
  {"EIGHTH", f_eighth, 1, 1, "(eighth list) The eighth element of LIST."},
  {"NINTH", f_ninth, 1, 1, "(ninth list) The ninth element of LIST."},
  {"TENTH", f_tenth, 1, 1, "(tenth list) The tenth element of LIST."},
  {"CAAR", f_caar, 1, 1, "(caar x) (car (car x))."},
  {"CADR", f_cadr, 1, 1, "(cadr x) (car (cdr x))."},
  {"CDAR", f_cdar, 1, 1, "(cdar x) (cdr (car x))."},
  {"CDDR", f_cddr, 1, 1, "(cddr x) (cdr (cdr x))."},
  {"CAAAR", f_caaar, 1, 1, "(caaar x) (car (car (car x)))."},
  {"CAADR", f_caadr, 1, 1, "(caadr x) (car (car (cdr x)))."},
  {"CADAR", f_cadar, 1, 1, "(cadar x) (car (cdr (car x)))."},
  {"CADDR", f_caddr, 1, 1, "(caddr x) (car (cdr (cdr x)))."},
  {"CDAAR", f_cdaar, 1, 1, "(cdaar x) (cdr (car (car x)))."},
  {"CDADR", f_cdadr, 1, 1, "(cdadr x) (cdr (car (cdr x)))."},
  {"CDDAR", f_cddar, 1, 1, "(cddar x) (cdr (cdr (car x)))."},
  {"CDDDR", f_cdddr, 1, 1, "(cdddr x) (cdr (cdr (cdr x)))."},
  {"CAAAAR", f_caaaar, 1, 1, "(caaaar x) Four cars."},
  {"CAAADR", f_caaadr, 1, 1, "(caaadr x) (car (car (car (cdr x))))."},
  {"CAADAR", f_caadar, 1, 1, "(caadar x) (car (car (cdr (car x))))."},
  {"CAADDR", f_caaddr, 1, 1, "(caaddr x) (car (car (cdr (cdr x))))."},
  {"CADAAR", f_cadaar, 1, 1, "(cadaar x) (car (cdr (car (car x))))."},
  {"CADADR", f_cadadr, 1, 1, "(cadadr x) (car (cdr (car (cdr x))))."},
  {"CADDAR", f_caddar, 1, 1, "(caddar x) (car (cdr (cdr (car x))))."},
  {"CADDDR", f_cadddr, 1, 1, "(cadddr x) (car (cdr (cdr (cdr x))))."},
  {"CDAAAR", f_cdaaar, 1, 1, "(cdaaar x) (cdr (car (car (car x))))."},
  {"CDAADR", f_cdaadr, 1, 1, "(cdaadr x) (cdr (car (car (cdr x))))."},
  {"CDADAR", f_cdadar, 1, 1, "(cdadar x) (cdr (car (cdr (car x))))."},
  {"CDADDR", f_cdaddr, 1, 1, "(cdaddr x) (cdr (car (cdr (cdr x))))."},
  {"CDDAAR", f_cddaar, 1, 1, "(cddaar x) (cdr (cdr (car (car x))))."},
  {"CDDADR", f_cddadr, 1, 1, "(cddadr x) (cdr (cdr (car (cdr x))))."},
  {"CDDDAR", f_cdddar, 1, 1, "(cdddar x) (cdr (cdr (cdr (car x))))."},
  {"CDDDDR", f_cddddr, 1, 1, "(cddddr x) Four cdrs."},
  {"RPLACA", f_rplaca, 2, 2, "(rplaca cons object) Set the car of CONS; return CONS."},
  {"RPLACD", f_rplacd, 2, 2, "(rplacd cons object) Set the cdr of CONS; return CONS."},
  {"NTH", f_nth, 2, 2, "(nth n list) The Nth element of LIST (zero-based)."},
  {"NTHCDR", f_nthcdr, 2, 2, "(nthcdr n list) LIST after N cdrs."},
  {"LAST", f_last, 1, 2, "(last list &optional (n 1)) The last N conses of LIST."},
  {"BUTLAST", f_butlast, 1, 2,
   "(butlast list &optional (n 1)) A copy of LIST without its last N elements."},
  {"NBUTLAST", f_nbutlast, 1, 2,
   "(nbutlast list &optional (n 1)) Destructive BUTLAST."},
  {"LDIFF", f_ldiff, 2, 2,
   "(ldiff list object) A copy of LIST up to the tail that is OBJECT."},
  {"TAILP", f_tailp, 2, 2, "(tailp object list) True if OBJECT is a tail of LIST."},
  {"ENDP", f_endp, 1, 1, "(endp list) True if LIST is empty; LIST must be a list."},
  {"LIST-LENGTH", f_list_length, 1, 1,
   "(list-length list) The length of LIST, or NIL if it is circular."},
  {"MEMBER", f_member, 2, -1,
   "(member item list &key key test test-not) The tail of LIST starting with ITEM."},
  {"MEMBER-IF", f_member_if, 2, -1,
   "(member-if predicate list &key key) The tail starting at the first match."},
  {"MEMBER-IF-NOT", f_member_if_not, 2, -1,
   "(member-if-not predicate list &key key) The tail starting at the first non-match."},
  {"ASSOC", f_assoc, 2, -1,
   "(assoc item alist &key key test test-not) The first pair whose car is ITEM."},
  {"ASSOC-IF", f_assoc_if, 2, -1,
   "(assoc-if predicate alist &key key) The first pair whose car satisfies PREDICATE."},
  {"ASSOC-IF-NOT", f_assoc_if_not, 2, -1,
   "(assoc-if-not predicate alist &key key) The first pair whose car fails PREDICATE."},
  {"RASSOC", f_rassoc, 2, -1,
   "(rassoc item alist &key key test test-not) The first pair whose cdr is ITEM."},
  {"RASSOC-IF", f_rassoc_if, 2, -1,
   "(rassoc-if predicate alist &key key) The first pair whose cdr satisfies PREDICATE."},
  {"RASSOC-IF-NOT", f_rassoc_if_not, 2, -1,
   "(rassoc-if-not predicate alist &key key) The first pair whose cdr fails PREDICATE."},
  {"ACONS", f_acons, 3, 3, "(acons key datum alist) ALIST with (KEY . DATUM) in front."},
  {"PAIRLIS", f_pairlis, 2, 3,
   "(pairlis keys data &optional alist) Pair KEYS with DATA onto ALIST."},
  {"GETF", f_getf, 2, 3,
   "(getf plist indicator &optional default) The property INDICATOR of PLIST."},
  {"GET-PROPERTIES", f_get_properties, 2, 2,
   "(get-properties plist indicators) Indicator, value and tail of the first match."},
  {"GET", f_get, 2, 3,
   "(get symbol indicator &optional default) A property of SYMBOL."},
  {"REMPROP", f_remprop, 2, 2,
   "(remprop symbol indicator) Remove a property of SYMBOL; true if it was there."},
  {"SYMBOL-PLIST", f_symbol_plist, 1, 1, "(symbol-plist symbol) SYMBOL's property list."},
  {"MAPCAR", f_mapcar, 2, -1,
   "(mapcar function list &rest lists) The list of FUNCTION's results on successive elements."},
  {"MAPC", f_mapc, 2, -1,
   "(mapc function list &rest lists) Call FUNCTION on successive elements; return LIST."},
  {"MAPCAN", f_mapcan, 2, -1,
   "(mapcan function list &rest lists) NCONC of FUNCTION's results on successive elements."},
  {"MAPLIST", f_maplist, 2, -1,
   "(maplist function list &rest lists) The list of FUNCTION's results on successive tails."},
  {"MAPL", f_mapl, 2, -1,
   "(mapl function list &rest lists) Call FUNCTION on successive tails; return LIST."},
  {"MAPCON", f_mapcon, 2, -1,
   "(mapcon function list &rest lists) NCONC of FUNCTION's results on successive tails."},
  {"ADJOIN", f_adjoin, 2, -1,
   "(adjoin item list &key key test test-not) LIST with ITEM added unless present."},
  {"UNION", f_union, 2, -1,
   "(union list1 list2 &key key test test-not) Elements in either list."},
  {"NUNION", f_union, 2, -1,
   "(nunion list1 list2 &key key test test-not) Like UNION (may destroy its arguments)."},
  {"INTERSECTION", f_intersection, 2, -1,
   "(intersection list1 list2 &key key test test-not) Elements in both lists."},
  {"NINTERSECTION", f_intersection, 2, -1,
   "(nintersection list1 list2 &key key test test-not) Like INTERSECTION."},
  {"SET-DIFFERENCE", f_set_difference, 2, -1,
   "(set-difference list1 list2 &key key test test-not) Elements of LIST1 not in LIST2."},
  {"NSET-DIFFERENCE", f_set_difference, 2, -1,
   "(nset-difference list1 list2 &key key test test-not) Like SET-DIFFERENCE."},
  {"SET-EXCLUSIVE-OR", f_set_exclusive_or, 2, -1,
   "(set-exclusive-or list1 list2 &key key test test-not) Elements in exactly one list."},
  {"NSET-EXCLUSIVE-OR", f_set_exclusive_or, 2, -1,
   "(nset-exclusive-or list1 list2 &key key test test-not) Like SET-EXCLUSIVE-OR."},
  {"SUBSETP", f_subsetp, 2, -1,
   "(subsetp list1 list2 &key key test test-not) True if every element of LIST1 is in LIST2."},
  {"SUBST", f_subst, 3, -1,
   "(subst new old tree &key key test test-not) TREE with subtrees matching OLD replaced by NEW."},
  {"SUBST-IF", f_subst_if, 3, -1,
   "(subst-if new predicate tree &key key) TREE with subtrees satisfying PREDICATE replaced."},
  {"SUBST-IF-NOT", f_subst_if_not, 3, -1,
   "(subst-if-not new predicate tree &key key) TREE with subtrees failing PREDICATE replaced."},
  {"NSUBST", f_nsubst, 3, -1,
   "(nsubst new old tree &key key test test-not) Destructive SUBST."},
  {"NSUBST-IF", f_nsubst_if, 3, -1,
   "(nsubst-if new predicate tree &key key) Destructive SUBST-IF."},
  {"NSUBST-IF-NOT", f_nsubst_if_not, 3, -1,
   "(nsubst-if-not new predicate tree &key key) Destructive SUBST-IF-NOT."},
  {"SUBLIS", f_sublis, 2, -1,
   "(sublis alist tree &key key test test-not) TREE with subtrees replaced per ALIST."},
  {"NSUBLIS", f_nsublis, 2, -1,
   "(nsublis alist tree &key key test test-not) Destructive SUBLIS."},
  {"TREE-EQUAL", f_tree_equal, 2, -1,
   "(tree-equal x y &key test test-not) True if X and Y have the same shape and equal leaves."},
  /* setters (see jt_lib.h) */
  {"%SET-CAR", f_set_car, 2, 2, "(%set-car cons value) Setter of CAR."},
  {"%SET-CDR", f_set_cdr, 2, 2, "(%set-cdr cons value) Setter of CDR."},
  {"%SET-FIRST", f_set_car, 2, 2, "(%set-first list value) Setter of FIRST."},
  {"%SET-REST", f_set_cdr, 2, 2, "(%set-rest list value) Setter of REST."},
  {"%SET-SECOND", f_set_second, 2, 2, "(%set-second list value) Setter of SECOND."},
  {"%SET-THIRD", f_set_third, 2, 2, "(%set-third list value) Setter of THIRD."},
  {"%SET-FOURTH", f_set_fourth, 2, 2, "(%set-fourth list value) Setter of FOURTH."},
  {"%SET-FIFTH", f_set_fifth, 2, 2, "(%set-fifth list value) Setter of FIFTH."},
  {"%SET-SIXTH", f_set_sixth, 2, 2, "(%set-sixth list value) Setter of SIXTH."},
  {"%SET-SEVENTH", f_set_seventh, 2, 2, "(%set-seventh list value) Setter of SEVENTH."},
  {"%SET-EIGHTH", f_set_eighth, 2, 2, "(%set-eighth list value) Setter of EIGHTH."},
  {"%SET-NINTH", f_set_ninth, 2, 2, "(%set-ninth list value) Setter of NINTH."},
  {"%SET-TENTH", f_set_tenth, 2, 2, "(%set-tenth list value) Setter of TENTH."},
  {"%SET-CAAR", f_set_caar, 2, 2, "(%set-caar x value) Setter of CAAR."},
  {"%SET-CADR", f_set_cadr, 2, 2, "(%set-cadr x value) Setter of CADR."},
  {"%SET-CDAR", f_set_cdar, 2, 2, "(%set-cdar x value) Setter of CDAR."},
  {"%SET-CDDR", f_set_cddr, 2, 2, "(%set-cddr x value) Setter of CDDR."},
  {"%SET-CADDR", f_set_caddr, 2, 2, "(%set-caddr x value) Setter of CADDR."},
  {"%SET-CDDDR", f_set_cdddr, 2, 2, "(%set-cdddr x value) Setter of CDDDR."},
  {"%SET-NTH", f_set_nth, 3, 3, "(%set-nth n list value) Setter of NTH."},
  {"%SET-GET", f_set_get, 3, 4, "(%set-get symbol indicator [default] value) Setter of GET."},
  {"%SET-SYMBOL-PLIST", f_set_symbol_plist, 2, 2,
   "(%set-symbol-plist symbol plist) Setter of SYMBOL-PLIST."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_list(jt_State *S) { jt_register(S, list_fns); }
