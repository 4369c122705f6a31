/*
** seq.c — generic sequence functions (lists, vectors, strings) and the
** one-dimensional array functions.
**
** A vector's `len` is its active length (the fill pointer when it has one);
** `cap` is the array's total size.  The collector marks all `cap` slots, so
** every slot of a vector always holds a valid value, and this file keeps it
** so when it grows or shrinks a buffer.
**
** User code (tests, keys, predicates) may do anything to the sequence being
** walked, including shrinking it; every vector access after a call to Lisp
** therefore re-checks the index against the current length (vget/vset), and
** list cursors held across calls are rooted.  Lists that must be walked
** backwards or randomly are first copied into a private scratch vector.
*/
#include <string.h>
#include "jt_sequtil.h"

static inline bool truthy(jt_V v) { return v != JT_NOVALUE && v != JT_NIL; }
/* Vectors are plain vectors, strings and bit vectors (objects of their
** own, reached directly) and one-dimensional array headers (displaced
** vectors, reached through jt_array_ref/set).  Bit vectors need no code of
** their own beyond the element check in raw_set and the kind of a fresh
** result (new_like, RT_BITVEC). */
static inline bool isvec(jt_V v) { return jt_vectorp(v); }

static JT_NORETURN void not_seq(jt_State *S, jt_V v) {
  jt_type_error(S, v, JT_SYM(S, SEQUENCE));
}

/* type-error for an index of seq outside [0, n), as elt reports it. */
static JT_NORETURN void bad_index(jt_State *S, jt_V seq, jt_V idx, size_t n) {
  jt_index_error(S, seq, idx, n, JT_INDEX_ELT);
}

/* type-error for a bound outside [0, n]. */
static JT_NORETURN void bad_bound(jt_State *S, jt_V v, size_t n) {
  jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0),
                              jt_mkfix((intptr_t)n)));
}

static inline size_t vlen(jt_V v) { return jt_vector_length(v); }

/* Element i of a vector (i below its total size). */
static inline jt_V raw_ref(jt_State *S, jt_V a, size_t i) {
  if (jt_isvector(a)) return jt_vec_(a)->items[i];
  if (jt_isstring(a)) return jt_mkchar(jt_str_(a)->chars[i]);
  return jt_array_ref(S, a, i);
}

static inline void raw_set(jt_State *S, jt_V a, size_t i, jt_V v) {
  if (jt_isvector(a) && !(jt_o(a)->flags & JT_ARR_BIT)) JT_SET(S, a, jt_vec_(a)->items[i], v);
  else jt_array_set(S, a, i, v);
}

/* Element i of a vector, re-checked against the current length. */
static inline jt_V vget(jt_State *S, jt_V v, size_t i) {
  if (i >= vlen(v)) bad_index(S, v, jt_mkfix((intptr_t)i), vlen(v));
  return raw_ref(S, v, i);
}

/* A fresh simple vector of n elements of the same kind as vector v. */
static jt_V new_like(jt_State *S, jt_V v, size_t n) {
  return jt_make_simple_array1(S, jt_array_elt(v), n);
}

static inline void vset(jt_State *S, jt_V v, size_t i, jt_V x) {
  if (i >= vlen(v)) bad_index(S, v, jt_mkfix((intptr_t)i), vlen(v));
  raw_set(S, v, i, x);
}

static size_t seq_length(jt_State *S, jt_V v) {
  if (jt_islist(v)) return jt_list_length(S, v);
  if (isvec(v)) return vlen(v);
  not_seq(S, v);
}

static void check_seq(jt_State *S, jt_V v) {
  if (!jt_islist(v) && !isvec(v)) not_seq(S, v);
}

/* The tail of `list` after `s` conses; type-error when it is shorter. */
static jt_V list_skip(jt_State *S, jt_V list, jt_V sv, size_t s) {
  jt_V l = list;
  unsigned k = 0;
  for (size_t i = 0; i < s; i++) {
    if (!jt_iscons(l)) {
      if (l != JT_NIL) jt_not_list(S, list);
      bad_bound(S, sv, i);
    }
    l = jt_cdr(l);
    JT_TICK(S, k);   /* a circular list is as long as the index says */
  }
  return l;
}

/* ------------------------------------------------------------ helpers */

/* A private vector of seq[s,e) (characters for strings). */
static jt_V to_vector(jt_State *S, jt_V seq, size_t s, size_t e) {
  jt_V r = jt_make_vector(S, e - s, JT_NIL);
  jt_V *out = jt_vec_(r)->items;
  if (jt_islist(seq)) {
    jt_V l = list_skip(S, seq, jt_mkfix((intptr_t)s), s);
    for (size_t i = s; i < e; i++, l = jt_cdr(l)) {
      if (!jt_iscons(l)) jt_not_list(S, seq);
      *out++ = jt_car(l);
    }
  } else {
    for (size_t i = s; i < e; i++) *out++ = vget(S, seq, i);
  }
  return r;
}

/* ------------------------------------------------------ keyword arguments */

typedef struct SeqArgs {
  jt_V start, end, from_end, key, count, test, test_not, initial_value;
  jt_V start1, end1, start2, end2;
} SeqArgs;

static void parse_args(jt_State *S, int argc, jt_V *argv, int first,
                       const int *keys, int nkeys, SeqArgs *a) {
  jt_V out[12];
  jt_parse_keys(S, argc, argv, first, keys, nkeys, out);
  *a = (SeqArgs){JT_NOVALUE, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE,
                 JT_NOVALUE, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE,
                 JT_NOVALUE, JT_NOVALUE};
  for (int i = 0; i < nkeys; i++) {
    jt_V *slot;
    switch (keys[i]) {
      case JT_S_K_START: slot = &a->start; break;
      case JT_S_K_END: slot = &a->end; break;
      case JT_S_K_FROM_END: slot = &a->from_end; break;
      case JT_S_K_KEY: slot = &a->key; break;
      case JT_S_K_COUNT: slot = &a->count; break;
      case JT_S_K_TEST: slot = &a->test; break;
      case JT_S_K_TEST_NOT: slot = &a->test_not; break;
      case JT_S_K_INITIAL_VALUE: slot = &a->initial_value; break;
      case JT_S_K_START1: slot = &a->start1; break;
      case JT_S_K_END1: slot = &a->end1; break;
      case JT_S_K_START2: slot = &a->start2; break;
      default: slot = &a->end2; break;
    }
    *slot = out[i];
  }
}

static const int keys_find[] = {JT_S_K_START, JT_S_K_END, JT_S_K_FROM_END,
                                JT_S_K_KEY, JT_S_K_TEST, JT_S_K_TEST_NOT};
static const int keys_find_if[] = {JT_S_K_START, JT_S_K_END, JT_S_K_FROM_END,
                                   JT_S_K_KEY};
static const int keys_remove[] = {JT_S_K_START, JT_S_K_END, JT_S_K_FROM_END,
                                  JT_S_K_KEY, JT_S_K_COUNT, JT_S_K_TEST,
                                  JT_S_K_TEST_NOT};
static const int keys_remove_if[] = {JT_S_K_START, JT_S_K_END,
                                     JT_S_K_FROM_END, JT_S_K_KEY, JT_S_K_COUNT};
static const int keys_two[] = {JT_S_K_FROM_END, JT_S_K_KEY, JT_S_K_TEST,
                               JT_S_K_TEST_NOT, JT_S_K_START1, JT_S_K_END1,
                               JT_S_K_START2, JT_S_K_END2};
#define NKEYS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Resolve :start/:end against seq.  For a list without :end, *e is
** SIZE_MAX and walkers stop at the end of the list (saving a traversal)
** unless `resolve` asks for the real length. */
static void bounds(jt_State *S, jt_V seq, jt_V sv, jt_V ev, bool resolve,
                   size_t *s, size_t *e) {
  *s = (sv == JT_NOVALUE) ? 0 : jt_check_index(S, sv);
  bool has_end = ev != JT_NOVALUE && ev != JT_NIL;
  if (jt_islist(seq) && !has_end && !resolve) {
    *e = SIZE_MAX;
    return;
  }
  size_t len = seq_length(S, seq);
  if (has_end) {
    *e = jt_check_index(S, ev);
    if (*e > len) bad_bound(S, ev, len);
  } else {
    *e = len;
  }
  if (*s > *e) bad_bound(S, sv, *e);
}

/* :count: NIL or absent means all; negative means none. */
static size_t count_arg(jt_State *S, jt_V v) {
  if (v == JT_NOVALUE || v == JT_NIL) return SIZE_MAX;
  if (jt_isfix(v)) return jt_fixval(v) < 0 ? 0 : (size_t)jt_fixval(v);
  if (jt_isbig(v)) return mpz_sgn(jt_big_(v)->z) < 0 ? 0 : SIZE_MAX;
  jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, INTEGER),
                              JT_SYM(S, NULL_)));
}

/* ------------------------------------------------------ result types */

enum { RT_NIL, RT_LIST, RT_VECTOR, RT_STRING, RT_BITVEC, RT_NONE };


/* A class given as a type specifier stands for its name. */
static jt_V type_name(jt_V type) {
  return jt_is(type, JT_TCLASS) ? jt_class_(type)->name : type;
}

/* Classify a sequence type specifier; RT_NONE if it is not one. */
static int seq_type(jt_State *S, jt_V type) {
  type = type_name(type);
  if (type == JT_NIL) return RT_NIL;
  if (type == JT_SYM(S, LIST) || type == JT_SYM(S, CONS) ||
      type == JT_SYM(S, NULL_))
    return RT_LIST;
  if (type == JT_SYM(S, VECTOR) || type == JT_SYM(S, SIMPLE_VECTOR) ||
      type == JT_SYM(S, ARRAY) || jt_lisp_sym_named(S, type, "SIMPLE-ARRAY"))
    return RT_VECTOR;
  if (type == JT_SYM(S, STRING) || type == JT_SYM(S, SIMPLE_STRING) ||
      jt_lisp_sym_named(S, type, "BASE-STRING") ||
      jt_lisp_sym_named(S, type, "SIMPLE-BASE-STRING"))
    return RT_STRING;
  if (jt_lisp_sym_named(S, type, "BIT-VECTOR") || jt_lisp_sym_named(S, type, "SIMPLE-BIT-VECTOR"))
    return RT_BITVEC;
  if (jt_iscons(type)) {
    jt_V head = jt_car(type);
    jt_V rest = jt_cdr(type);
    if (head == JT_SYM(S, OR) || head == JT_SYM(S, AND)) {
      /* (or (vector t 10) (vector t 5)): one kind of sequence for every
      ** alternative; the result is checked against the whole type */
      int rt = RT_NONE;
      jt_check_cstack(S);
      jt_Walk w = jt_walk(rest);
      for (jt_V l = rest; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
        int k = seq_type(S, jt_car(l));
        if (k == RT_NONE || (rt != RT_NONE && k != rt)) return RT_NONE;
        rt = k;
      }
      return rt;
    }
    if (head == JT_SYM(S, SIMPLE_VECTOR)) return RT_VECTOR;
    if (head == JT_SYM(S, CONS)) return RT_LIST;
    if (head == JT_SYM(S, STRING) || head == JT_SYM(S, SIMPLE_STRING) ||
        jt_lisp_sym_named(S, head, "BASE-STRING") ||
        jt_lisp_sym_named(S, head, "SIMPLE-BASE-STRING"))
      return RT_STRING;
    if (jt_lisp_sym_named(S, head, "BIT-VECTOR") || jt_lisp_sym_named(S, head, "SIMPLE-BIT-VECTOR"))
      return RT_BITVEC;
    if (head == JT_SYM(S, VECTOR) || head == JT_SYM(S, ARRAY) ||
        jt_lisp_sym_named(S, head, "SIMPLE-ARRAY")) {
      jt_V et = jt_iscons(rest) ? jt_car(rest) : jt_intern(S, "*");
      /* (array et dims) names a vector only with one dimension */
      if (head != JT_SYM(S, VECTOR) && jt_iscons(rest) && jt_iscons(jt_cdr(rest))) {
        jt_V d = jt_car(jt_cdr(rest));
        if (!(jt_iscons(d) && jt_cdr(d) == JT_NIL) && d != jt_mkfix(1)) return RT_NONE;
      }
      if (jt_lisp_sym_named(S, et, "*")) return RT_VECTOR;
      int elt = jt_upgraded_elt(S, et);
      return elt == JT_ELT_CHAR ? RT_STRING : elt == JT_ELT_BIT ? RT_BITVEC : RT_VECTOR;
    }
  }
  return RT_NONE;
}

/* A result made for a sequence type must be of it: (vector * 4) of three
** elements, NULL of one or CONS of none is a type-error. */
static jt_V check_result(jt_State *S, jt_V r, jt_V type) {
  type = type_name(type);
  if (!(jt_iscons(type) || type == JT_SYM(S, NULL_) || type == JT_SYM(S, CONS))) return r;
  JT_PUSH(S, r);   /* typep may allocate */
  if (!jt_typep(S, S->sp[-1], type)) jt_type_error(S, S->sp[-1], type);
  r = S->sp[-1];
  JT_POP(S, 1);
  return r;
}

static int check_seq_type(jt_State *S, jt_V type, bool allow_nil) {
  int rt = seq_type(S, type);
  if (rt == RT_NONE || (rt == RT_NIL && !allow_nil))
    jt_type_error(S, type, JT_SYM(S, SEQUENCE));
  return rt;
}

/* The element kind of a vector result type. */
static int rt_elt(int rt) {
  return rt == RT_STRING ? JT_ELT_CHAR : rt == RT_BITVEC ? JT_ELT_BIT : JT_ELT_T;
}

/* A fresh sequence of kind rt from n values (a stable buffer). */
static jt_V from_values(jt_State *S, int rt, size_t n, const jt_V *items) {
  if (rt == RT_LIST) return jt_list_from(S, (int)n, items);
  if (rt == RT_VECTOR) {
    jt_V r = jt_make_vector(S, n, JT_NIL);
    memcpy(jt_vec_(r)->items, items, n * sizeof(jt_V));
    return r;
  }
  if (rt == RT_BITVEC) {
    for (size_t i = 0; i < n; i++)
      if (items[i] != jt_mkfix(0) && items[i] != jt_mkfix(1))
        jt_type_error(S, items[i], jt_intern(S, "BIT"));
    jt_V r = jt_make_simple_array1(S, JT_ELT_BIT, n);
    memcpy(jt_vec_(r)->items, items, n * sizeof(jt_V));
    return r;
  }
  for (size_t i = 0; i < n; i++) jt_check_char(S, items[i]);
  jt_V r = jt_make_string(S, n, 0);
  for (size_t i = 0; i < n; i++) jt_str_(r)->chars[i] = jt_charcode(items[i]);
  return r;
}

/* -------------------------------------------------------------- basics */

JT_FN(f_length) { return jt_mkfix((intptr_t)seq_length(S, argv[0])); }

static jt_V list_elt(jt_State *S, jt_V list, jt_V iv, bool set, jt_V v) {
  size_t i = jt_check_index(S, iv);
  jt_V l = list;
  unsigned tick = 0;
  for (size_t k = 0; k < i && jt_iscons(l); k++) { l = jt_cdr(l); JT_TICK(S, tick); }
  if (!jt_iscons(l)) {
    if (l != JT_NIL) jt_not_list(S, list);
    bad_index(S, list, iv, jt_list_length(S, list));
  }
  if (!set) return jt_car(l);
  JT_SET(S, l, jt_cons_(l)->car, v);
  return v;
}

JT_FN(f_elt) {
  if (jt_islist(argv[0])) return list_elt(S, argv[0], argv[1], false, JT_NIL);
  if (!isvec(argv[0])) not_seq(S, argv[0]);
  size_t i = jt_check_index(S, argv[1]);
  if (i >= vlen(argv[0])) bad_index(S, argv[0], argv[1], vlen(argv[0]));
  return vget(S, argv[0], i);
}

JT_FN(f_set_elt) {
  if (jt_islist(argv[0])) return list_elt(S, argv[0], argv[1], true, argv[2]);
  if (!isvec(argv[0])) not_seq(S, argv[0]);
  size_t i = jt_check_index(S, argv[1]);
  if (i >= vlen(argv[0])) bad_index(S, argv[0], argv[1], vlen(argv[0]));
  vset(S, argv[0], i, argv[2]);
  return argv[2];
}

/* A fresh sequence like `seq` holding seq[s,e), reversed if asked. */
static jt_V copy_range(jt_State *S, jt_V seq, size_t s, size_t e, bool rev) {
  if (jt_islist(seq)) {
    jt_V l = list_skip(S, seq, jt_mkfix((intptr_t)s), s);
    jt_Walk w = jt_walk(seq);
    if (rev) {
      jt_V r = JT_NIL;
      JT_ROOT(S, r);
      for (; jt_iscons(l); l = jt_walk_next(S, &w, l)) r = jt_cons(S, jt_car(l), r);
      if (l != JT_NIL) jt_not_list(S, seq);
      JT_UNROOT(S, 1);
      return r;
    }
    jt_Coll c;
    jt_coll_init(S, &c);
    for (size_t i = s; i < e && jt_iscons(l); i++, l = jt_walk_next(S, &w, l))
      jt_coll_add(S, &c, jt_car(l));
    if (e == SIZE_MAX && l != JT_NIL) jt_not_list(S, seq);
    JT_UNROOT(S, 2);
    return c.head;
  }
  size_t n = e - s;
  jt_V r = new_like(S, seq, n);
  if (jt_isstring(seq)) {
    const uint32_t *src = jt_str_(seq)->chars + s;
    uint32_t *dst = jt_str_(r)->chars;
    for (size_t i = 0; i < n; i++) dst[i] = src[rev ? n - 1 - i : i];
  } else if (jt_isvector(seq)) {
    const jt_V *src = jt_vec_(seq)->items + s;
    jt_V *dst = jt_vec_(r)->items;
    for (size_t i = 0; i < n; i++) dst[i] = src[rev ? n - 1 - i : i];
  } else {
    JT_PUSH(S, r);
    for (size_t i = 0; i < n; i++) raw_set(S, r, i, vget(S, seq, s + (rev ? n - 1 - i : i)));
    JT_POP(S, 1);
  }
  return r;
}

JT_FN(f_reverse) {
  check_seq(S, argv[0]);
  size_t n = jt_islist(argv[0]) ? SIZE_MAX : vlen(argv[0]);
  return copy_range(S, argv[0], 0, n, true);
}

JT_FN(f_nreverse) {
  jt_V seq = argv[0];
  if (jt_islist(seq)) {
    jt_list_length(S, seq);  /* refuse dotted and circular lists */
    jt_V prev = JT_NIL;
    while (jt_iscons(seq)) {
      jt_V next = jt_cdr(seq);
      JT_SET(S, seq, jt_cons_(seq)->cdr, prev);
      prev = seq;
      seq = next;
    }
    return prev;
  }
  if (jt_isstring(seq)) {
    JT_TOUCH(S, seq);
    uint32_t *c = jt_str_(seq)->chars;
    for (size_t i = 0, j = vlen(seq); i + 1 < j; i++, j--) {
      uint32_t t = c[i]; c[i] = c[j - 1]; c[j - 1] = t;
    }
    return seq;
  }
  if (!isvec(seq)) not_seq(S, seq);
  for (size_t i = 0, j = vlen(seq); i + 1 < j; i++, j--) {
    jt_V a = raw_ref(S, seq, i), b = raw_ref(S, seq, j - 1);
    raw_set(S, seq, i, b);
    raw_set(S, seq, j - 1, a);
  }
  return seq;
}

JT_FN(f_subseq) {
  jt_V seq = argv[0];
  check_seq(S, seq);
  size_t s, e;
  bounds(S, seq, argv[1], argc > 2 ? argv[2] : JT_NOVALUE, false, &s, &e);
  return copy_range(S, seq, s, e, false);
}

JT_FN(f_copy_seq) {
  check_seq(S, argv[0]);
  size_t n = jt_islist(argv[0]) ? SIZE_MAX : vlen(argv[0]);
  return copy_range(S, argv[0], 0, n, false);
}

/* (%set-subseq seq start [end] new): replace, return new. */
static void replace_range(jt_State *S, jt_V dst, size_t s1, size_t e1,
                          jt_V src, size_t s2, size_t e2);

JT_FN(f_set_subseq) {
  jt_V seq = argv[0], nv = argv[argc - 1];
  check_seq(S, seq);
  check_seq(S, nv);
  size_t s, e, s2, e2;
  bounds(S, seq, argv[1], argc > 3 ? argv[2] : JT_NOVALUE, true, &s, &e);
  bounds(S, nv, JT_NOVALUE, JT_NOVALUE, true, &s2, &e2);
  replace_range(S, seq, s, e, nv, s2, e2);
  return nv;
}

JT_FN(f_concatenate) {
  int rt = check_seq_type(S, argv[0], false);
  if (rt == RT_LIST) {
    jt_Coll c;
    jt_coll_init(S, &c);
    for (int i = 1; i < argc; i++) {
      jt_V q = argv[i];
      check_seq(S, q);
      if (jt_islist(q)) {
        jt_Walk w = jt_walk(q);
        for (; jt_iscons(q); q = jt_walk_next(S, &w, q)) jt_coll_add(S, &c, jt_car(q));
        if (q != JT_NIL) jt_not_list(S, argv[i]);
      } else {
        for (size_t k = 0; k < vlen(q); k++) jt_coll_add(S, &c, vget(S, q, k));
      }
    }
    JT_UNROOT(S, 2);
    return check_result(S, c.head, argv[0]);
  }
  size_t total = 0;
  for (int i = 1; i < argc; i++) total += seq_length(S, argv[i]);
  jt_V r = jt_make_simple_array1(S, rt_elt(rt), total);
  JT_PUSH(S, r);
  size_t k = 0;
  for (int i = 1; i < argc; i++) {
    jt_V q = argv[i];
    if (jt_islist(q)) {
      for (; jt_iscons(q) && k < total; q = jt_cdr(q)) vset(S, r, k++, jt_car(q));
    } else if (jt_isstring(q) && rt == RT_STRING) {
      size_t n = vlen(q);
      memcpy(jt_str_(r)->chars + k, jt_str_(q)->chars, n * sizeof(uint32_t));
      k += n;
    } else {
      for (size_t j = 0; j < vlen(q) && k < total; j++) vset(S, r, k++, vget(S, q, j));
    }
  }
  JT_POP(S, 1);
  return check_result(S, r, argv[0]);
}

JT_FN(f_make_sequence) {
  static const int keys[] = {JT_S_K_INITIAL_ELEMENT};
  jt_V kv[1];
  int rt = check_seq_type(S, argv[0], false);
  size_t n = jt_check_index(S, argv[1]);
  jt_parse_keys(S, argc, argv, 2, keys, 1, kv);
  jt_V r;
  if (rt == RT_STRING) {
    /* as make-string: code 0 without an initial element */
    uint32_t c = kv[0] == JT_NOVALUE ? 0 : jt_check_char(S, kv[0]);
    r = jt_make_string(S, n, c);
  } else if (rt == RT_BITVEC) {
    r = jt_make_simple_array1(S, JT_ELT_BIT, n);
    if (kv[0] != JT_NOVALUE) {
      JT_PUSH(S, r);
      for (size_t i = 0; i < n; i++) jt_array_set(S, r, i, kv[0]);
      JT_POP(S, 1);
    }
  } else {
    jt_V init = kv[0] == JT_NOVALUE ? JT_NIL : kv[0];
    r = rt == RT_VECTOR ? jt_make_vector(S, n, init) : jt_make_list(S, n, init);
  }
  return check_result(S, r, argv[0]);
}

/* ------------------------------------------------- mapping over several */

/* Cursors: the remaining list for a list, a fixnum index for a vector.
** Fill args with the next element of each; false at the end of the
** shortest sequence. */
static bool multi_next(jt_State *S, int n, const jt_V *seqs, jt_V *cur, jt_V *args) {
  for (int i = 0; i < n; i++) {
    jt_V s = seqs[i], c = cur[i];
    if (jt_islist(s)) {
      if (!jt_iscons(c)) {
        if (c != JT_NIL) jt_not_list(S, s);   /* a dotted list */
        return false;
      }
      args[i] = jt_car(c);
      cur[i] = jt_cdr(c);
    } else {
      size_t k = (size_t)jt_fixval(c);
      if (k >= vlen(s)) return false;
      args[i] = raw_ref(S, s, k);
      cur[i] = jt_mkfix((intptr_t)k + 1);
    }
  }
  return true;
}

/* Push the function `fn`, then the cursors and an argument vector for
** seqs[0..n); returns args (cursors are at args - n).  The caller pops
** 2n + 1. */
static jt_V *multi_start(jt_State *S, jt_V fn, int n, const jt_V *seqs) {
  JT_PUSH(S, fn);
  for (int i = 0; i < n; i++) {
    check_seq(S, seqs[i]);
    JT_PUSH(S, jt_islist(seqs[i]) ? seqs[i] : jt_mkfix(0));
  }
  jt_V *args = S->sp;
  for (int i = 0; i < n; i++) JT_PUSH(S, JT_NIL);
  return args;
}

/* The length of the shortest sequence.  A circular list counts as endless
** (a shorter sequence beside it ends the mapping); when all are, the
** first is the type-error. */
static size_t min_length(jt_State *S, int n, const jt_V *seqs) {
  size_t m = SIZE_MAX;
  for (int i = 0; i < n; i++) {
    if (jt_islist(seqs[i])) {
      size_t k = 0;
      jt_V slow = seqs[i];
      for (jt_V l = seqs[i]; jt_iscons(l) && k < m; l = jt_cdr(l)) {
        if ((++k & 1) == 0 && (slow = jt_cdr(slow)) == jt_cdr(l)) { k = m; break; }
      }
      m = k;
    } else if (vlen(seqs[i]) < m) {
      m = vlen(seqs[i]);
    }
  }
  if (m == SIZE_MAX && n > 0) jt_improper_list(S, seqs[0]);
  return m;
}

JT_FN(f_map) {
  int rt = check_seq_type(S, argv[0], true);
  jt_V fn = jt_check_function(S, argv[1]);
  int n = argc - 2;
  const jt_V *seqs = argv + 2;
  jt_V *args = multi_start(S, fn, n, seqs);
  jt_V *cur = args - n;
  jt_V r = JT_NIL;
  if (rt == RT_NIL) {
    while (multi_next(S, n, seqs, cur, args)) jt_apply(S, fn, n, args);
  } else if (rt == RT_LIST) {
    jt_Coll c;
    jt_coll_init(S, &c);
    while (multi_next(S, n, seqs, cur, args))
      jt_coll_add(S, &c, jt_apply(S, fn, n, args));
    JT_UNROOT(S, 2);
    r = c.head;
  } else {
    size_t m = min_length(S, n, seqs);
    r = jt_make_simple_array1(S, rt_elt(rt), m);
    JT_PUSH(S, r);
    for (size_t i = 0; i < m && multi_next(S, n, seqs, cur, args); i++)
      vset(S, r, i, jt_apply(S, fn, n, args));
    JT_POP(S, 1);
  }
  JT_POP(S, 2 * n + 1);
  return rt == RT_NIL ? r : check_result(S, r, argv[0]);
}

JT_FN(f_map_into) {
  jt_V res = argv[0];
  check_seq(S, res);
  jt_V fn = jt_check_function(S, argv[1]);
  int n = argc - 2;
  const jt_V *seqs = argv + 2;
  jt_V *args = multi_start(S, fn, n, seqs);
  jt_V *cur = args - n;
  if (jt_islist(res)) {
    jt_V l = res;
    JT_ROOT(S, l);
    for (; jt_iscons(l) && multi_next(S, n, seqs, cur, args); l = jt_cdr(l)) {
      jt_V v = jt_apply(S, fn, n, args);
      if (!jt_iscons(l)) break;
      JT_SET(S, l, jt_cons_(l)->car, v);
    }
    JT_UNROOT(S, 1);
  } else {
    /* the fill pointer is ignored, then set to the count stored */
    bool fp = (jt_o(res)->flags & JT_ARR_FILLPTR) != 0;
    size_t total = fp ? jt_array_total(res) : vlen(res);
    size_t i = 0;
    for (; i < total && multi_next(S, n, seqs, cur, args); i++) {
      jt_V v = jt_apply(S, fn, n, args);
      if (i >= jt_array_total(res)) break;
      raw_set(S, res, i, v);
    }
    if (fp) jt_set_fill_pointer(S, res, i);
  }
  JT_POP(S, 2 * n + 1);
  return res;
}

enum { Q_EVERY, Q_SOME, Q_NOTANY, Q_NOTEVERY };

static jt_V quantify(jt_State *S, int argc, jt_V *argv, int q) {
  jt_V fn = jt_check_function(S, argv[0]);
  int n = argc - 1;
  const jt_V *seqs = argv + 1;
  jt_V *args = multi_start(S, fn, n, seqs);
  jt_V *cur = args - n;
  jt_V r = (q == Q_EVERY || q == Q_NOTANY) ? JT_T : JT_NIL;
  while (multi_next(S, n, seqs, cur, args)) {
    jt_V v = jt_apply(S, fn, n, args);
    if (q == Q_SOME && v != JT_NIL) { r = v; break; }
    if (q == Q_NOTANY && v != JT_NIL) { r = JT_NIL; break; }
    if (q == Q_EVERY && v == JT_NIL) { r = JT_NIL; break; }
    if (q == Q_NOTEVERY && v == JT_NIL) { r = JT_T; break; }
  }
  JT_POP(S, 2 * n + 1);
  S->nvals = 1;   /* not the predicate's other values */
  return r;
}

JT_FN(f_every) { return quantify(S, argc, argv, Q_EVERY); }
JT_FN(f_some) { return quantify(S, argc, argv, Q_SOME); }
JT_FN(f_notany) { return quantify(S, argc, argv, Q_NOTANY); }
JT_FN(f_notevery) { return quantify(S, argc, argv, Q_NOTEVERY); }

JT_FN(f_reduce) {
  static const int keys[] = {JT_S_K_KEY, JT_S_K_FROM_END, JT_S_K_START,
                             JT_S_K_END, JT_S_K_INITIAL_VALUE};
  SeqArgs a;
  parse_args(S, argc, argv, 2, keys, NKEYS(keys), &a);
  jt_V fn = jt_check_function(S, argv[0]);
  jt_V seq = argv[1];
  check_seq(S, seq);
  bool fe = truthy(a.from_end);
  jt_Test t;
  jt_test_init(S, &t, a.key, JT_NOVALUE, JT_NOVALUE);
  JT_PUSH(S, fn);
  size_t s, e;
  bounds(S, seq, a.start, a.end, fe, &s, &e);
  jt_V src = seq;
  if (jt_islist(seq) && fe) {  /* walk a list backwards through a copy */
    src = to_vector(S, seq, s, e);
    e -= s;
    s = 0;
  }
  JT_PUSH(S, src);
  jt_V acc = a.initial_value, cur = JT_NIL, x = JT_NIL;
  JT_ROOT(S, acc);
  JT_ROOT(S, cur);
  JT_ROOT(S, x);
  size_t i = s;
  bool list = jt_islist(src);
  if (list) cur = list_skip(S, src, a.start, s);
  /* next element, or false at the end of the range */
#define NEXT()                                                        \
  (list ? (i < e && jt_iscons(cur)                                    \
               ? (x = jt_car(cur), cur = jt_cdr(cur), i++, true)      \
               : false)                                               \
        : (fe ? (i < e ? (x = vget(S, src, --e), true) : false)       \
              : (i < e ? (x = vget(S, src, i++), true) : false)))
  if (acc == JT_NOVALUE) {
    if (!NEXT()) {
      acc = jt_apply(S, fn, 0, S->sp);
      goto done;
    }
    acc = jt_test_keyed(S, &t, x);
  }
  while (NEXT()) {
    x = jt_test_keyed(S, &t, x);
    acc = fe ? jt_call2(S, fn, x, acc) : jt_call2(S, fn, acc, x);
  }
#undef NEXT
  if (list && e == SIZE_MAX && cur != JT_NIL) jt_not_list(S, seq);
done:
  JT_UNROOT(S, 5);
  JT_POP(S, 2);
  return acc;
}

/* --------------------------------------------------- find / position / count */

enum { SC_FIND, SC_POS, SC_COUNT };

static jt_V scan(jt_State *S, const jt_Test *t, jt_V item, jt_V seq,
                 const SeqArgs *a, int mode) {
  size_t s, e;
  check_seq(S, seq);
  bounds(S, seq, a->start, a->end, false, &s, &e);
  bool fe = truthy(a->from_end);
  size_t count = 0, base = 0;
  intptr_t pos = -1;
  jt_V found = JT_NIL, x = JT_NIL, cur = JT_NIL;
  JT_ROOT(S, found);
  JT_ROOT(S, x);
  JT_ROOT(S, cur);
  if (jt_islist(seq) && fe && mode == SC_COUNT) {
    /* count's test and key see a list's elements from its end, as the
    ** standard says; find and position walk it forwards, as SBCL does */
    if (e == SIZE_MAX) e = seq_length(S, seq);
    seq = cur = to_vector(S, seq, s, e);
    base = s;
    e -= s;
    s = 0;
  }
  if (jt_islist(seq)) {
    cur = list_skip(S, seq, a->start, s);
    size_t i = s;
    jt_Walk w = jt_walk(seq);
    bool pure = jt_test_pure(t);
    for (; i < e && jt_iscons(cur); i++, cur = pure ? jt_walk_next(S, &w, cur) : jt_cdr(cur)) {
      x = jt_car(cur);
      if (!jt_test_match(S, t, item, x)) continue;
      count++;
      found = x;
      pos = (intptr_t)i;
      if (!fe && mode != SC_COUNT) break;
    }
    if (e == SIZE_MAX && !jt_islist(cur)) jt_not_list(S, seq);
  } else {
    for (size_t k = 0; k < e - s; k++) {
      size_t i = fe ? e - 1 - k : s + k;
      x = vget(S, seq, i);
      if (!jt_test_match(S, t, item, x)) continue;
      count++;
      found = x;
      pos = (intptr_t)(base + i);
      if (mode != SC_COUNT) break;
    }
  }
  JT_UNROOT(S, 3);
  if (mode == SC_COUNT) return jt_mkfix((intptr_t)count);
  if (pos < 0) return JT_NIL;
  return mode == SC_FIND ? found : jt_mkfix(pos);
}

/* The test of an item function (how 0: item with :test) or of an -if (1) /
** -if-not (2) function of `pred`.  Roots 2, as jt_test_init. */
static void args_test(jt_State *S, jt_Test *t, const SeqArgs *a, int how,
                      jt_V pred) {
  if (how == 0) jt_test_init(S, t, a->key, a->test, a->test_not);
  else jt_test_pred_init(S, t, pred, a->key, how == 2);
}

/* how: as for args_test. */
static jt_V scan_fn(jt_State *S, int argc, jt_V *argv, int how, int mode) {
  SeqArgs a;
  if (how == 0) parse_args(S, argc, argv, 2, keys_find, NKEYS(keys_find), &a);
  else parse_args(S, argc, argv, 2, keys_find_if, NKEYS(keys_find_if), &a);
  jt_Test t;
  args_test(S, &t, &a, how, argv[0]);
  jt_V r = scan(S, &t, argv[0], argv[1], &a, mode);
  JT_UNROOT(S, 2);
  return r;
}

JT_FN(f_find) { return scan_fn(S, argc, argv, 0, SC_FIND); }
JT_FN(f_find_if) { return scan_fn(S, argc, argv, 1, SC_FIND); }
JT_FN(f_find_if_not) { return scan_fn(S, argc, argv, 2, SC_FIND); }
JT_FN(f_position) { return scan_fn(S, argc, argv, 0, SC_POS); }
JT_FN(f_position_if) { return scan_fn(S, argc, argv, 1, SC_POS); }
JT_FN(f_position_if_not) { return scan_fn(S, argc, argv, 2, SC_POS); }
JT_FN(f_count) { return scan_fn(S, argc, argv, 0, SC_COUNT); }
JT_FN(f_count_if) { return scan_fn(S, argc, argv, 1, SC_COUNT); }
JT_FN(f_count_if_not) { return scan_fn(S, argc, argv, 2, SC_COUNT); }

/* ------------------------------------------- remove / substitute family
** Two phases: mark the affected elements of [s,e) in a private scratch
** buffer (calling the test once per element, in order, or from the end for
** vectors with :from-end), then build the result.  User code never sees a
** half-built result. */

/* A private buffer of n flags (a string is a GC-owned byte-ish array). */
static uint32_t *new_marks(jt_State *S, size_t n, jt_V *holder) {
  *holder = jt_make_string(S, n, 0);
  return jt_str_(*holder)->chars;
}

static size_t mark_matches(jt_State *S, const jt_Test *t, jt_V item, jt_V seq,
                           size_t s, size_t e, size_t limit, bool fe,
                           uint32_t *marks) {
  size_t nm = 0;
  if (limit == 0) return 0;
  if (jt_islist(seq) && !fe) {
    jt_V cur = list_skip(S, seq, jt_mkfix((intptr_t)s), s);
    JT_ROOT(S, cur);
    for (size_t i = s; i < e && jt_iscons(cur); i++, cur = jt_cdr(cur)) {
      if (!jt_test_match(S, t, item, jt_car(cur))) continue;
      marks[i - s] = 1;
      if (++nm == limit) break;
    }
    JT_UNROOT(S, 1);
    return nm;
  }
  /* a list with :from-end is tested from its end, as a vector is */
  jt_V v = jt_islist(seq) ? to_vector(S, seq, s, e) : seq;
  size_t off = jt_islist(seq) ? s : 0;
  JT_ROOT(S, v);
  for (size_t k = 0; k < e - s && nm < limit; k++) {
    size_t i = fe ? e - 1 - k : s + k;
    if (jt_test_match(S, t, item, vget(S, v, i - off))) { marks[i - s] = 1; nm++; }
  }
  JT_UNROOT(S, 1);
  return nm;
}

/* seq without the marked elements of [s,e); a list shares its tail. */
static jt_V build_removed(jt_State *S, jt_V seq, size_t s, size_t e,
                          const uint32_t *marks, size_t nm) {
  if (nm == 0) return seq;
  if (jt_islist(seq)) {
    jt_Coll c;
    jt_coll_init(S, &c);
    jt_V l = seq;
    for (size_t i = 0; i < e && jt_iscons(l); i++, l = jt_cdr(l))
      if (i < s || !marks[i - s]) jt_coll_add(S, &c, jt_car(l));
    jt_V r = jt_coll_end(&c, l);
    JT_UNROOT(S, 2);
    return r;
  }
  size_t n = vlen(seq);
  jt_V r = new_like(S, seq, n - nm);
  JT_PUSH(S, r);
  size_t k = 0;
  for (size_t i = 0; i < n && k < n - nm; i++)
    if (i < s || i >= e || !marks[i - s]) vset(S, r, k++, vget(S, seq, i));
  JT_POP(S, 1);
  return r;
}

/* seq with the marked elements replaced by nv; in place if `destructive`. */
static jt_V build_substituted(jt_State *S, jt_V seq, size_t s, size_t e,
                              const uint32_t *marks, size_t nm, jt_V nv,
                              bool destructive) {
  if (nm == 0) return seq;
  if (isvec(seq)) {
    int elt = jt_array_elt(seq);
    if (elt == JT_ELT_CHAR) jt_check_char(S, nv);
    if (elt == JT_ELT_BIT && nv != jt_mkfix(0) && nv != jt_mkfix(1))
      jt_type_error(S, nv, jt_intern(S, "BIT"));
  }
  if (destructive) {
    if (jt_islist(seq)) {
      jt_V l = list_skip(S, seq, jt_mkfix((intptr_t)s), s);
      for (size_t i = s; i < e && jt_iscons(l); i++, l = jt_cdr(l))
        if (marks[i - s]) JT_SET(S, l, jt_cons_(l)->car, nv);
    } else {
      for (size_t i = s; i < e; i++)
        if (marks[i - s]) vset(S, seq, i, nv);
    }
    return seq;
  }
  if (jt_islist(seq)) {
    size_t last = s;  /* copy up to the last replacement, share the rest */
    for (size_t i = s; i < e && nm > 0; i++)
      if (marks[i - s]) { last = i; nm--; }
    jt_Coll c;
    jt_coll_init(S, &c);
    jt_V l = seq;
    /* the test may have cut the list: stop at its end */
    for (size_t i = 0; i <= last && jt_iscons(l); i++, l = jt_cdr(l))
      jt_coll_add(S, &c, i >= s && marks[i - s] ? nv : jt_car(l));
    jt_V r = c.tail == JT_NIL ? seq : jt_coll_end(&c, l);
    JT_UNROOT(S, 2);
    return r;
  }
  jt_V r = copy_range(S, seq, 0, vlen(seq), false);
  JT_PUSH(S, r);
  for (size_t i = s; i < e && i < vlen(r); i++)
    if (marks[i - s]) vset(S, r, i, nv);
  JT_POP(S, 1);
  return r;
}

enum { OP_REMOVE, OP_SUBST, OP_NSUBST };

/* argv: [new] item-or-predicate sequence &key ...; how as for scan_fn. */
static jt_V affect(jt_State *S, int argc, jt_V *argv, int op, int how) {
  int fixed = op == OP_REMOVE ? 2 : 3;
  SeqArgs a;
  if (how == 0)
    parse_args(S, argc, argv, fixed, keys_remove, NKEYS(keys_remove), &a);
  else
    parse_args(S, argc, argv, fixed, keys_remove_if, NKEYS(keys_remove_if), &a);
  jt_V item = argv[fixed - 2], seq = argv[fixed - 1];
  check_seq(S, seq);
  jt_Test t;
  args_test(S, &t, &a, how, item);
  size_t limit = count_arg(S, a.count);
  size_t s, e;
  bounds(S, seq, a.start, a.end, true, &s, &e);
  jt_V holder = JT_NIL;
  JT_ROOT(S, holder);
  uint32_t *marks = new_marks(S, e - s, &holder);
  size_t nm = mark_matches(S, &t, item, seq, s, e, limit, truthy(a.from_end),
                           marks);
  jt_V r = op == OP_REMOVE
               ? build_removed(S, seq, s, e, marks, nm)
               : build_substituted(S, seq, s, e, marks, nm, argv[0],
                                   op == OP_NSUBST);
  JT_UNROOT(S, 3);
  return r;
}

JT_FN(f_remove) { return affect(S, argc, argv, OP_REMOVE, 0); }
JT_FN(f_remove_if) { return affect(S, argc, argv, OP_REMOVE, 1); }
JT_FN(f_remove_if_not) { return affect(S, argc, argv, OP_REMOVE, 2); }
JT_FN(f_substitute) { return affect(S, argc, argv, OP_SUBST, 0); }
JT_FN(f_substitute_if) { return affect(S, argc, argv, OP_SUBST, 1); }
JT_FN(f_substitute_if_not) { return affect(S, argc, argv, OP_SUBST, 2); }
JT_FN(f_nsubstitute) { return affect(S, argc, argv, OP_NSUBST, 0); }
JT_FN(f_nsubstitute_if) { return affect(S, argc, argv, OP_NSUBST, 1); }
JT_FN(f_nsubstitute_if_not) { return affect(S, argc, argv, OP_NSUBST, 2); }

/* Of each run of duplicates, the last is kept (the first with :from-end).
** Keys are computed once; the standard tests use a hash table. */
JT_FN(f_remove_duplicates) {
  SeqArgs a;
  parse_args(S, argc, argv, 1, keys_find, NKEYS(keys_find), &a);
  jt_V seq = argv[0];
  check_seq(S, seq);
  jt_Test t;
  jt_test_init(S, &t, a.key, a.test, a.test_not);
  bool fe = truthy(a.from_end);
  size_t s, e;
  bounds(S, seq, a.start, a.end, true, &s, &e);
  size_t m = e - s;
  jt_V keys = to_vector(S, seq, s, e), holder = JT_NIL, table = JT_NIL;
  JT_ROOT(S, keys);
  JT_ROOT(S, holder);
  JT_ROOT(S, table);
  for (size_t i = 0; i < m && t.key != JT_NIL; i++) {
    jt_V kx = jt_test_keyed(S, &t, jt_vec_(keys)->items[i]);
    jt_vec_(keys)->items[i] = kx;
  }
  jt_V *k = jt_vec_(keys)->items;
  uint32_t *marks = new_marks(S, m, &holder);
  size_t nm = 0;
  if (t.kind != JT_TEST_FN && !t.negate && m > 16) {
    int ht = t.kind == JT_TEST_EQ ? JT_HASH_EQ
             : t.kind == JT_TEST_EQL ? JT_HASH_EQL : JT_HASH_EQUAL;
    table = jt_make_hash(S, ht, m);
    for (size_t j = 0; j < m; j++) {
      size_t i = fe ? j : m - 1 - j;
      bool found;
      jt_hash_get(S, table, k[i], &found);
      if (found) { marks[i] = 1; nm++; }
      else jt_hash_put(S, table, k[i], JT_T);
    }
  } else {
    unsigned tick = 0;
    for (size_t i = 0; i < m; i++) {
      if (fe) {
        for (size_t j = 0; j < i; j++)
          if (!marks[j] && jt_test_cmp(S, &t, k[j], k[i])) { marks[i] = 1; nm++; break; }
      } else {
        for (size_t j = i + 1; j < m; j++)
          if (jt_test_cmp(S, &t, k[i], k[j])) { marks[i] = 1; nm++; break; }
      }
      JT_TICK(S, tick);
    }
  }
  jt_V r = build_removed(S, seq, s, e, marks, nm);
  JT_UNROOT(S, 5);
  return r;
}

/* --------------------------------------------------- fill / replace */

JT_FN(f_fill) {
  static const int keys[] = {JT_S_K_START, JT_S_K_END};
  SeqArgs a;
  parse_args(S, argc, argv, 2, keys, 2, &a);
  jt_V seq = argv[0];
  check_seq(S, seq);
  size_t s, e;
  bounds(S, seq, a.start, a.end, false, &s, &e);
  if (jt_islist(seq)) {
    jt_V l = list_skip(S, seq, a.start, s);
    jt_Walk w = jt_walk(seq);
    for (size_t i = s; i < e && jt_iscons(l); i++, l = jt_walk_next(S, &w, l))
      JT_SET(S, l, jt_cons_(l)->car, argv[1]);
  } else if (jt_isstring(seq)) {
    uint32_t c = jt_check_char(S, argv[1]);
    JT_TOUCH(S, seq);
    for (size_t i = s; i < e; i++) jt_str_(seq)->chars[i] = c;
  } else {
    for (size_t i = s; i < e; i++) raw_set(S, seq, i, argv[1]);
  }
  return seq;
}

/* Copy src[s2,e2) over dst[s1,e1), as many as fit.  The source is read
** into a private vector first when it is a list or could overlap. */
static void replace_range(jt_State *S, jt_V dst, size_t s1, size_t e1,
                          jt_V src, size_t s2, size_t e2) {
  size_t n = e1 - s1 < e2 - s2 ? e1 - s1 : e2 - s2;
  if (n == 0) return;
  if (jt_isstring(dst) && jt_isstring(src)) {
    JT_TOUCH(S, dst);
    memmove(jt_str_(dst)->chars + s1, jt_str_(src)->chars + s2,
            n * sizeof(uint32_t));
    return;
  }
  jt_V tmp = JT_NIL;
  if (jt_islist(src) || src == dst) {
    tmp = to_vector(S, src, s2, s2 + n);
    src = tmp;
    s2 = 0;
  }
  JT_ROOT(S, tmp);
  if (jt_islist(dst)) {
    jt_V l = list_skip(S, dst, jt_mkfix((intptr_t)s1), s1);
    for (size_t i = 0; i < n && jt_iscons(l); i++, l = jt_cdr(l))
      JT_SET(S, l, jt_cons_(l)->car, vget(S, src, s2 + i));
  } else {
    for (size_t i = 0; i < n; i++) vset(S, dst, s1 + i, vget(S, src, s2 + i));
  }
  JT_UNROOT(S, 1);
}

JT_FN(f_replace) {
  static const int keys[] = {JT_S_K_START1, JT_S_K_END1, JT_S_K_START2,
                             JT_S_K_END2};
  SeqArgs a;
  parse_args(S, argc, argv, 2, keys, 4, &a);
  check_seq(S, argv[0]);
  check_seq(S, argv[1]);
  size_t s1, e1, s2, e2;
  bounds(S, argv[0], a.start1, a.end1, true, &s1, &e1);
  bounds(S, argv[1], a.start2, a.end2, true, &s2, &e2);
  replace_range(S, argv[0], s1, e1, argv[1], s2, e2);
  return argv[0];
}

/* ------------------------------------------------- search / mismatch */

typedef struct Two {
  jt_Test t;
  jt_V v1, v2;       /* the ranges as vectors or strings */
  size_t s1, e1, s2, e2;
  bool fe;
} Two;

/* Parse the arguments common to search and mismatch.  Lists are copied to
** private vectors, with the offsets adjusted so indices stay those of the
** original.  Roots 4: callers JT_UNROOT(S, 4). */
static void two_init(jt_State *S, Two *w, int argc, jt_V *argv) {
  SeqArgs a;
  parse_args(S, argc, argv, 2, keys_two, NKEYS(keys_two), &a);
  check_seq(S, argv[0]);
  check_seq(S, argv[1]);
  jt_test_init(S, &w->t, a.key, a.test, a.test_not);
  w->v1 = argv[0];
  w->v2 = argv[1];
  JT_ROOT(S, w->v1);
  JT_ROOT(S, w->v2);
  w->fe = truthy(a.from_end);
  bounds(S, argv[0], a.start1, a.end1, true, &w->s1, &w->e1);
  bounds(S, argv[1], a.start2, a.end2, true, &w->s2, &w->e2);
  if (jt_islist(argv[0])) w->v1 = to_vector(S, argv[0], 0, w->e1);
  if (jt_islist(argv[1])) w->v2 = to_vector(S, argv[1], 0, w->e2);
}

static bool two_match(jt_State *S, Two *w, size_t i1, size_t i2) {
  jt_V a = jt_test_keyed(S, &w->t, vget(S, w->v1, i1));
  JT_PUSH(S, a);
  jt_V b = jt_test_keyed(S, &w->t, vget(S, w->v2, i2));
  bool r = jt_test_cmp(S, &w->t, a, b);
  JT_POP(S, 1);
  return r;
}

JT_FN(f_search) {
  Two w;
  two_init(S, &w, argc, argv);
  size_t m = w.e1 - w.s1;
  jt_V r = JT_NIL;
  if (w.e2 - w.s2 >= m) {
    size_t npos = w.e2 - w.s2 - m + 1;
    unsigned tick = 0;
    for (size_t k = 0; k < npos; k++) {
      size_t p = w.fe ? w.e2 - m - k : w.s2 + k;
      size_t i = 0;
      while (i < m && two_match(S, &w, w.s1 + i, p + i)) i++;
      if (i == m) { r = jt_mkfix((intptr_t)p); break; }
      JT_TICK(S, tick);
    }
  }
  JT_UNROOT(S, 4);
  return r;
}

JT_FN(f_mismatch) {
  Two w;
  two_init(S, &w, argc, argv);
  size_t n1 = w.e1 - w.s1, n2 = w.e2 - w.s2, n = n1 < n2 ? n1 : n2;
  jt_V r = JT_NIL;
  size_t i = 0;
  if (w.fe) {
    while (i < n && two_match(S, &w, w.e1 - 1 - i, w.e2 - 1 - i)) i++;
    if (i < n || n1 != n2) r = jt_mkfix((intptr_t)(w.e1 - i));
  } else {
    while (i < n && two_match(S, &w, w.s1 + i, w.s2 + i)) i++;
    if (i < n || n1 != n2) r = jt_mkfix((intptr_t)(w.s1 + i));
  }
  JT_UNROOT(S, 4);
  return r;
}

/* -------------------------------------------------------------- sorting
** A stable merge sort of a permutation (fixnum indices into private
** vectors of elements and keys), so a predicate that fails or misbehaves
** leaves the sequence untouched; the result is written back at the end. */

typedef struct Sorter {
  jt_V pred;
  const jt_V *keys;
  int fast;       /* 1: pred is #'<, 2: #'>, compared in C for fixnums */
  unsigned tick;
} Sorter;

static inline bool sort_less(jt_State *S, Sorter *so, jt_V a, jt_V b) {
  if (so->fast && jt_isfix(a) && jt_isfix(b)) {
    JT_TICK(S, so->tick);
    return so->fast == 1 ? (intptr_t)a < (intptr_t)b : (intptr_t)a > (intptr_t)b;
  }
  return jt_call2(S, so->pred, a, b) != JT_NIL;
}

#define IDX(v) ((size_t)jt_fixval(v))

static void insertion_sort(jt_State *S, Sorter *so, jt_V *p, size_t lo,
                           size_t hi) {
  for (size_t i = lo + 1; i < hi; i++) {
    jt_V x = p[i];
    size_t j = i;
    while (j > lo && sort_less(S, so, so->keys[IDX(x)], so->keys[IDX(p[j - 1])])) {
      p[j] = p[j - 1];
      j--;
    }
    p[j] = x;
  }
}

/* Sort p[0,n) using tmp[0,n); returns the buffer holding the result. */
static jt_V *merge_sort(jt_State *S, Sorter *so, jt_V *p, jt_V *tmp, size_t n) {
  enum { RUN = 8 };
  for (size_t lo = 0; lo < n; lo += RUN)
    insertion_sort(S, so, p, lo, lo + RUN < n ? lo + RUN : n);
  jt_V *src = p, *dst = tmp;
  for (size_t w = RUN; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t i = lo, j = mid, k = lo;
      /* already in order: a run of sorted input costs one comparison */
      if (mid < hi && !sort_less(S, so, so->keys[IDX(src[mid])],
                                 so->keys[IDX(src[mid - 1])])) {
        memcpy(dst + lo, src + lo, (hi - lo) * sizeof(jt_V));
        continue;
      }
      while (i < mid && j < hi) {
        /* ties take the left element: stability */
        if (sort_less(S, so, so->keys[IDX(src[j])], so->keys[IDX(src[i])]))
          dst[k++] = src[j++];
        else
          dst[k++] = src[i++];
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    jt_V *t = src; src = dst; dst = t;
  }
  return src;
}

static jt_V sort_seq(jt_State *S, int argc, jt_V *argv) {
  static const int keys[] = {JT_S_K_KEY};
  jt_V kv[1];
  jt_parse_keys(S, argc, argv, 2, keys, 1, kv);
  jt_V seq = argv[0];
  check_seq(S, seq);
  jt_Test t;
  jt_test_pred_init(S, &t, argv[1], kv[0], false);
  size_t n = seq_length(S, seq);
  if (n < 2) { JT_UNROOT(S, 2); return seq; }
  jt_V items = to_vector(S, seq, 0, n), keysv = items;
  jt_V perm = JT_NIL, tmp = JT_NIL;
  JT_ROOT(S, items);
  JT_ROOT(S, keysv);
  JT_ROOT(S, perm);
  JT_ROOT(S, tmp);
  if (t.key != JT_NIL) {
    keysv = jt_make_vector(S, n, JT_NIL);
    for (size_t i = 0; i < n; i++) {
      jt_V k = jt_call1(S, t.key, jt_vec_(items)->items[i]);
      jt_vec_(keysv)->items[i] = k;
    }
  }
  perm = jt_make_vector(S, n, JT_NIL);
  tmp = jt_make_vector(S, n, JT_NIL);
  for (size_t i = 0; i < n; i++) jt_vec_(perm)->items[i] = jt_mkfix((intptr_t)i);
  Sorter so = {t.fn, jt_vec_(keysv)->items, 0, 0};
  if (jt_prim_named(S, t.fn, "<")) so.fast = 1;
  else if (jt_prim_named(S, t.fn, ">")) so.fast = 2;
  jt_V *p = merge_sort(S, &so, jt_vec_(perm)->items, jt_vec_(tmp)->items, n);
  const jt_V *it = jt_vec_(items)->items;
  if (jt_islist(seq)) {
    jt_V l = seq;  /* the predicate may have cut the list: stop at its end */
    for (size_t i = 0; i < n && jt_iscons(l); i++, l = jt_cdr(l))
      JT_SET(S, l, jt_cons_(l)->car, it[IDX(p[i])]);
  } else {
    if (vlen(seq) < n) bad_index(S, seq, jt_mkfix((intptr_t)n - 1), vlen(seq));
    for (size_t i = 0; i < n; i++) vset(S, seq, i, it[IDX(p[i])]);
  }
  JT_UNROOT(S, 6);
  return seq;
}

JT_FN(f_sort) { return sort_seq(S, argc, argv); }

JT_FN(f_merge) {
  static const int keys[] = {JT_S_K_KEY};
  jt_V kv[1];
  jt_parse_keys(S, argc, argv, 4, keys, 1, kv);
  int rt = check_seq_type(S, argv[0], false);
  check_seq(S, argv[1]);
  check_seq(S, argv[2]);
  jt_Test t;
  jt_test_pred_init(S, &t, argv[3], kv[0], false);
  size_t n1 = seq_length(S, argv[1]), n2 = seq_length(S, argv[2]);
  jt_V a = to_vector(S, argv[1], 0, n1), b = JT_NIL, out = JT_NIL;
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  JT_ROOT(S, out);
  b = to_vector(S, argv[2], 0, n2);
  out = jt_make_vector(S, n1 + n2, JT_NIL);
  size_t i = 0, j = 0, k = 0;
  jt_V *o = jt_vec_(out)->items;
  const jt_V *x = jt_vec_(a)->items, *y = jt_vec_(b)->items;
  while (i < n1 && j < n2) {
    jt_V kx = jt_test_keyed(S, &t, x[i]);
    JT_PUSH(S, kx);
    jt_V ky = jt_test_keyed(S, &t, y[j]);
    bool take_b = jt_call2(S, t.fn, ky, kx) != JT_NIL;
    JT_POP(S, 1);
    o[k++] = take_b ? y[j++] : x[i++];
  }
  while (i < n1) o[k++] = x[i++];
  while (j < n2) o[k++] = y[j++];
  jt_V r = rt == RT_VECTOR ? out : from_values(S, rt, k, o);
  JT_UNROOT(S, 5);
  return check_result(S, r, argv[0]);
}

/* --------------------------------------------------------------- coerce */

/* Does a sequence type specifier ask for a simple array? */
static bool simple_type(jt_State *S, jt_V type) {
  jt_V head = jt_iscons(type) ? jt_car(type) : type;
  return head == JT_SYM(S, SIMPLE_VECTOR) || head == JT_SYM(S, SIMPLE_STRING) ||
         jt_lisp_sym_named(S, head, "SIMPLE-BASE-STRING") ||
         jt_lisp_sym_named(S, head, "SIMPLE-BIT-VECTOR") ||
         jt_lisp_sym_named(S, head, "SIMPLE-ARRAY");
}

/* Does a vector type specifier leave the element type open ((vector *),
** vector, array)?  Otherwise RT_VECTOR means element type T. */
static bool any_element_type(jt_State *S, jt_V type) {
  if (!jt_iscons(type))
    return type == JT_SYM(S, VECTOR) || type == JT_SYM(S, ARRAY) ||
           jt_lisp_sym_named(S, type, "SIMPLE-ARRAY");
  jt_V head = jt_car(type), rest = jt_cdr(type);
  if (head == JT_SYM(S, SIMPLE_VECTOR)) return false;
  return !jt_iscons(rest) || jt_lisp_sym_named(S, jt_car(rest), "*");
}

JT_FN(f_coerce) {
  jt_V x = argv[0], type = argv[1];
  if (type == JT_T || type == JT_SYM(S, T_TYPE)) return x;
  /* an object already of the class: itself (its class may be ARRAY, which
  ** names no sequence to convert to) */
  if (jt_is(type, JT_TCLASS) && jt_typep(S, x, type)) return x;
  int rt = seq_type(S, type);
  if (rt == RT_LIST || rt == RT_VECTOR || rt == RT_STRING || rt == RT_BITVEC) {
    check_seq(S, x);
    /* an object already of the type is returned as is; a simple type
    ** wanted of an adjustable, displaced or fill-pointered vector makes a
    ** copy */
    bool simple = !isvec(x) || jt_simple_array_p(x) || !simple_type(S, type);
    if (rt == RT_LIST && jt_islist(x)) return check_result(S, x, type);
    if (isvec(x) && simple) {
      int elt = jt_array_elt(x);
      if ((rt == RT_STRING && elt == JT_ELT_CHAR) || (rt == RT_BITVEC && elt == JT_ELT_BIT) ||
          (rt == RT_VECTOR && (elt == JT_ELT_T || any_element_type(S, type))))
        return check_result(S, x, type);
    }
    size_t n = seq_length(S, x);
    jt_V v = to_vector(S, x, 0, n);
    if (rt == RT_VECTOR) return check_result(S, v, type);
    JT_PUSH(S, v);
    jt_V r = from_values(S, rt, n, jt_vec_(v)->items);
    JT_POP(S, 1);
    return check_result(S, r, type);
  }
  if (type == JT_SYM(S, CHARACTER)) {
    if (jt_ischar(x)) return x;
    if (jt_isstring(x) && vlen(x) == 1) return jt_mkchar(jt_str_(x)->chars[0]);
    if (jt_issymbol(x)) {
      jt_V name = jt_symobj(S, x)->name;
      if (vlen(name) == 1) return jt_mkchar(jt_str_(name)->chars[0]);
    }
    jt_type_error(S, x, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, CHARACTER),
                                JT_SYM(S, STRING)));
  }
  if (type == JT_SYM(S, FLOAT) || type == JT_SYM(S, DOUBLE_FLOAT) ||
      type == JT_SYM(S, SINGLE_FLOAT) || jt_lisp_sym_named(S, type, "SHORT-FLOAT") ||
      jt_lisp_sym_named(S, type, "LONG-FLOAT")) {
    if (!jt_isreal(x)) jt_type_error(S, x, JT_SYM(S, REAL));
    if (type == JT_SYM(S, FLOAT)) return jt_isfloat(x) ? x : jt_num_to_float(S, x, true);
    bool single = type == JT_SYM(S, SINGLE_FLOAT) || jt_lisp_sym_named(S, type, "SHORT-FLOAT");
    return jt_num_to_float(S, x, single);
  }
  if (type == JT_SYM(S, FUNCTION)) {
    if (jt_isfunction(x)) return x;
    if (jt_issymbol(x)) return jt_check_function(S, x);
    if (jt_iscons(x) && jt_car(x) == JT_SYM(S, LAMBDA))
      return jt_eval(S, jt_list(S, 2, JT_SYM(S, FUNCTION), x));
    jt_type_error(S, x, JT_SYM(S, FUNCTION));
  }
  jt_V head = jt_iscons(type) ? jt_car(type) : type;
  if (jt_lisp_sym_named(S, head, "COMPLEX")) {
    /* a rational stays itself; a float, or a part type of floats, makes
    ** a complex with float parts */
    if (!jt_isnumber(x)) jt_type_error(S, x, JT_SYM(S, NUMBER));
    jt_V pt = jt_iscons(type) && jt_iscons(jt_cdr(type)) ? jt_car(jt_cdr(type)) : JT_NIL;
    /* the part format: the part type's, else the number's own */
    bool dbl = pt != JT_NIL && jt_typep(S, jt_make_float(S, 0.0), pt);
    bool sgl = pt != JT_NIL && jt_typep(S, jt_make_float_as(S, 0.0, true), pt);
    jt_V re = jt_realpart(x), im = jt_imagpart(S, x);
    if (!dbl && !sgl && !jt_isfloat(re)) return x;
    bool single = sgl && !dbl ? true : dbl && !sgl ? false : !jt_isfloat(re) || jt_issingle(re);
    JT_PUSH(S, im);
    re = jt_num_to_float(S, re, single);
    JT_PUSH(S, re);
    im = jt_num_to_float(S, S->sp[-2], single);
    jt_V r = jt_make_complex(S, S->sp[-1], im);
    JT_POP(S, 2);
    return r;
  }
  if (jt_typep(S, x, type)) return x;
  jt_type_error(S, x, type);
}

/* ------------------------------------------------------------ registry */

static const jt_Reg seq_fns[] = {
  {"LENGTH", f_length, 1, 1, "(length sequence) The number of elements of SEQUENCE."},
  {"ELT", f_elt, 2, 2, "(elt sequence index) The element of SEQUENCE at INDEX."},
  {"REVERSE", f_reverse, 1, 1, "(reverse sequence) A fresh reversed copy of SEQUENCE."},
  {"NREVERSE", f_nreverse, 1, 1, "(nreverse sequence) Reverse SEQUENCE destructively."},
  {"SUBSEQ", f_subseq, 2, 3,
   "(subseq sequence start &optional end) A fresh copy of part of SEQUENCE."},
  {"COPY-SEQ", f_copy_seq, 1, 1, "(copy-seq sequence) A fresh copy of SEQUENCE."},
  {"CONCATENATE", f_concatenate, 1, -1,
   "(concatenate result-type &rest sequences) A new sequence of all elements."},
  {"MAKE-SEQUENCE", f_make_sequence, 2, -1,
   "(make-sequence type size &key initial-element) A fresh sequence of SIZE elements."},
  {"MAP", f_map, 3, -1,
   "(map result-type function &rest sequences) Results of FUNCTION on successive elements."},
  {"MAP-INTO", f_map_into, 2, -1,
   "(map-into result function &rest sequences) Store FUNCTION's results into RESULT."},
  {"EVERY", f_every, 2, -1,
   "(every predicate &rest sequences) True if PREDICATE holds for all elements."},
  {"SOME", f_some, 2, -1,
   "(some predicate &rest sequences) The first true result of PREDICATE, or NIL."},
  {"NOTANY", f_notany, 2, -1,
   "(notany predicate &rest sequences) True if PREDICATE holds for no elements."},
  {"NOTEVERY", f_notevery, 2, -1,
   "(notevery predicate &rest sequences) True if PREDICATE fails for some element."},
  {"REDUCE", f_reduce, 2, -1,
   "(reduce function sequence &key key from-end start end initial-value) Combine elements."},
  {"FIND", f_find, 2, -1,
   "(find item sequence &key from-end test test-not start end key) The first matching element."},
  {"FIND-IF", f_find_if, 2, -1,
   "(find-if predicate sequence &key from-end start end key) The first satisfying element."},
  {"FIND-IF-NOT", f_find_if_not, 2, -1,
   "(find-if-not predicate sequence &key from-end start end key) The first failing element."},
  {"POSITION", f_position, 2, -1,
   "(position item sequence &key from-end test test-not start end key) Index of ITEM."},
  {"POSITION-IF", f_position_if, 2, -1,
   "(position-if predicate sequence &key from-end start end key) Index of the first match."},
  {"POSITION-IF-NOT", f_position_if_not, 2, -1,
   "(position-if-not predicate sequence &key from-end start end key) Index of the first failure."},
  {"COUNT", f_count, 2, -1,
   "(count item sequence &key from-end test test-not start end key) Number of matches."},
  {"COUNT-IF", f_count_if, 2, -1,
   "(count-if predicate sequence &key from-end start end key) Number of satisfying elements."},
  {"COUNT-IF-NOT", f_count_if_not, 2, -1,
   "(count-if-not predicate sequence &key from-end start end key) Number of failing elements."},
  {"REMOVE", f_remove, 2, -1,
   "(remove item sequence &key from-end test test-not start end count key) SEQUENCE without ITEM."},
  {"REMOVE-IF", f_remove_if, 2, -1,
   "(remove-if predicate sequence &key from-end start end count key) Without satisfying elements."},
  {"REMOVE-IF-NOT", f_remove_if_not, 2, -1,
   "(remove-if-not predicate sequence &key from-end start end count key) Only satisfying elements."},
  {"DELETE", f_remove, 2, -1,
   "(delete item sequence &key from-end test test-not start end count key) Like REMOVE, may destroy."},
  {"DELETE-IF", f_remove_if, 2, -1,
   "(delete-if predicate sequence &key from-end start end count key) Like REMOVE-IF, may destroy."},
  {"DELETE-IF-NOT", f_remove_if_not, 2, -1,
   "(delete-if-not predicate sequence &key from-end start end count key) Like REMOVE-IF-NOT."},
  {"REMOVE-DUPLICATES", f_remove_duplicates, 1, -1,
   "(remove-duplicates sequence &key from-end test test-not start end key) Without repeats."},
  {"DELETE-DUPLICATES", f_remove_duplicates, 1, -1,
   "(delete-duplicates sequence &key from-end test test-not start end key) Like REMOVE-DUPLICATES."},
  {"SUBSTITUTE", f_substitute, 3, -1,
   "(substitute new old sequence &key from-end test test-not start end count key) Replace OLD by NEW."},
  {"SUBSTITUTE-IF", f_substitute_if, 3, -1,
   "(substitute-if new predicate sequence &key from-end start end count key) Replace matches."},
  {"SUBSTITUTE-IF-NOT", f_substitute_if_not, 3, -1,
   "(substitute-if-not new predicate sequence &key from-end start end count key) Replace failures."},
  {"NSUBSTITUTE", f_nsubstitute, 3, -1,
   "(nsubstitute new old sequence &key from-end test test-not start end count key) Destructive SUBSTITUTE."},
  {"NSUBSTITUTE-IF", f_nsubstitute_if, 3, -1,
   "(nsubstitute-if new predicate sequence &key from-end start end count key) Destructive SUBSTITUTE-IF."},
  {"NSUBSTITUTE-IF-NOT", f_nsubstitute_if_not, 3, -1,
   "(nsubstitute-if-not new predicate sequence &key from-end start end count key) Destructive."},
  {"FILL", f_fill, 2, -1,
   "(fill sequence item &key start end) Store ITEM into SEQUENCE."},
  {"REPLACE", f_replace, 2, -1,
   "(replace seq1 seq2 &key start1 end1 start2 end2) Copy elements of SEQ2 into SEQ1."},
  {"SEARCH", f_search, 2, -1,
   "(search seq1 seq2 &key from-end test test-not key start1 end1 start2 end2) Where SEQ1 occurs in SEQ2."},
  {"MISMATCH", f_mismatch, 2, -1,
   "(mismatch seq1 seq2 &key from-end test test-not key start1 end1 start2 end2) Where they differ."},
  {"SORT", f_sort, 2, -1,
   "(sort sequence predicate &key key) Sort SEQUENCE (stably) by PREDICATE."},
  {"STABLE-SORT", f_sort, 2, -1,
   "(stable-sort sequence predicate &key key) Sort SEQUENCE stably by PREDICATE."},
  {"MERGE", f_merge, 4, -1,
   "(merge result-type seq1 seq2 predicate &key key) Merge two sorted sequences."},
  {"COERCE", f_coerce, 2, 2,
   "(coerce object result-type) OBJECT converted to RESULT-TYPE."},
  /* setters (see jt_lib.h) */
  {"%SET-ELT", f_set_elt, 3, 3, "(%set-elt sequence index value) Setter of ELT."},
  {"%SET-SUBSEQ", f_set_subseq, 3, 4,
   "(%set-subseq sequence start [end] new) Setter of SUBSEQ."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_seq(jt_State *S) { jt_register(S, seq_fns); }
