/*
** array.c — arrays of any rank, displaced arrays and bit vectors.
**
** Representation.  A one-dimensional array that is not displaced is an
** object of its own: a string (JT_TSTRING), a general vector (JT_TVECTOR),
** or a bit vector (a JT_TVECTOR flagged JT_ARR_BIT whose items are the
** fixnums 0 and 1, so that every sequence function works on it unchanged).
** Any other array — rank 0, rank 2 and more, or displaced — is a header
** (JT_TARRAY, jt_obj.h) over `data`: a private simple vector, string or
** bit vector holding the elements in row-major order, or the array it is
** displaced to.  Elements are always reached through that indirection, so
** a displaced array sees every change of its target, also after the target
** was adjusted; an index that no longer fits the target signals an error.
**
** Element types are upgraded to CHARACTER, BIT or T: any other type (say
** (unsigned-byte 8) or double-float) is stored as T, which the standard
** allows.  Adjusting an adjustable array changes it in place, except that a
** plain vector asked to become displaced is answered with a new header.
*/
#include <string.h>
#include "jt_lib.h"

#define RANK_LIMIT 64
#define DISPLACE_HOPS 1000

/* -------------------------------------------------------------- predicates */

static bool is_vec_obj(jt_V v) { return jt_isvector(v) || jt_isstring(v); }

bool jt_arrayp(jt_V v) { return is_vec_obj(v) || jt_is(v, JT_TARRAY); }

bool jt_vectorp(jt_V v)
{
  return is_vec_obj(v) || (jt_is(v, JT_TARRAY) && jt_o(v)->aux == 1);
}

int jt_array_elt(jt_V v)
{
  if (jt_isstring(v)) return JT_ELT_CHAR;
  uint16_t f = jt_o(v)->flags;
  if (f & JT_ARR_BIT) return JT_ELT_BIT;
  if (jt_is(v, JT_TARRAY) && (f & JT_ARR_CHAR)) return JT_ELT_CHAR;
  return JT_ELT_T;
}

bool jt_stringp(jt_V v) { return jt_vectorp(v) && jt_array_elt(v) == JT_ELT_CHAR; }
bool jt_bit_vector_p(jt_V v) { return jt_vectorp(v) && jt_array_elt(v) == JT_ELT_BIT; }

/* A simple array: not adjustable, no fill pointer, not displaced; for a
** vector object also not a header. */
bool jt_simple_array_p(jt_V v)
{
  return jt_arrayp(v) &&
         !(jt_o(v)->flags & (JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR | JT_ARR_DISPLACED));
}

int jt_array_rank(jt_V v) { return jt_is(v, JT_TARRAY) ? (int)jt_o(v)->aux : 1; }

/* Total size of a vector object: its buffer when it has a fill pointer. */
static size_t vec_total(jt_V v)
{
  if (!(jt_o(v)->flags & JT_ARR_FILLPTR)) return jt_isvector(v) ? jt_vec_(v)->len : jt_str_(v)->len;
  return jt_isvector(v) ? jt_vec_(v)->cap : jt_str_(v)->cap;
}

size_t jt_array_total(jt_V v) { return jt_is(v, JT_TARRAY) ? jt_arr_(v)->total : vec_total(v); }

size_t jt_vector_length(jt_V v)
{
  if (jt_isvector(v)) return jt_vec_(v)->len;
  if (jt_isstring(v)) return jt_str_(v)->len;
  jt_Array *a = jt_arr_(v);
  return (a->h.flags & JT_ARR_FILLPTR) ? a->fill : a->total;
}

size_t jt_array_dim(jt_V v, int axis)
{
  return jt_is(v, JT_TARRAY) ? jt_arr_(v)->dims[axis] : vec_total(v);
}

/* ---------------------------------------------------------------- elements */

static JT_NORETURN void not_array(jt_State *S, jt_V v)
{
  jt_type_error(S, v, JT_SYM(S, ARRAY));
}

void jt_index_error(jt_State *S, jt_V seq, jt_V idx, size_t n, int how)
{
  jt_V *base = S->sp;
  JT_PUSH(S, seq);
  JT_PUSH(S, idx);
  jt_V hi = jt_list(S, 1, jt_mkfix((intptr_t)n));
  JT_PUSH(S, hi);
  jt_V expected = jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0), hi);
  JT_PUSH(S, expected);
  /* a negative or non-integer index keeps the plain type-error report */
  if (!jt_isfix(idx) || jt_fixval(idx) < 0) jt_type_error(S, idx, expected);
  const char *control;
  jt_V args;
  if (jt_islist(seq)) {
    control = "The index ~W is too large for a list of length ~W.";
    args = jt_list(S, 2, idx, jt_mkfix((intptr_t)n));
  } else {
    jt_V type = jt_type_of(S, seq);
    JT_PUSH(S, type);
    jt_V fill = jt_o(seq)->flags & JT_ARR_FILLPTR ? jt_mkfix((intptr_t)jt_vector_length(seq)) : JT_NIL;
    if (how == JT_INDEX_ELT) {
      control = "Invalid index ~W for ~S ~@[with fill-pointer ~W~], should be a non-negative integer below ~W.";
      args = jt_list(S, 4, idx, type, fill, jt_mkfix((intptr_t)n));
    } else {
      control = "Invalid index ~W for ~S, should be a non-negative integer below ~W.";
      args = jt_list(S, 3, idx, type, jt_mkfix((intptr_t)n));
    }
  }
  JT_PUSH(S, args);
  jt_V ctl = jt_string_from_cstr(S, control);
  JT_PUSH(S, ctl);
  jt_V initargs[8] = {JT_SYM(S, K_DATUM), idx, JT_SYM(S, K_EXPECTED_TYPE), expected,
                      JT_SYM(S, K_FORMAT_CONTROL), ctl, JT_SYM(S, K_FORMAT_ARGUMENTS), args};
  jt_V cond = jt_make_condition(S, JT_SYM(S, TYPE_ERROR), 8, initargs);
  S->sp = base;
  jt_signal_error(S, cond);
}

/* An index of array a outside [0, n). */
static JT_NORETURN void bad_index(jt_State *S, jt_V a, jt_V idx, size_t n)
{
  jt_index_error(S, a, idx, n, JT_INDEX_AREF);
}

static JT_NORETURN void displaced_too_far(jt_State *S, size_t i)
{
  jt_error(S, "the array is displaced to an array that no longer holds its "
           "element %zu", i);
}

/* Follow the displacement of element i of `a` to the vector object holding
** it; *ip becomes the index there. */
static jt_V locate(jt_State *S, jt_V a, size_t *ip)
{
  size_t i = *ip;
  for (int hops = 0; jt_is(a, JT_TARRAY); hops++) {
    jt_Array *h = jt_arr_(a);
    if (hops > DISPLACE_HOPS) jt_error(S, "array displaced through too many arrays");
    if (hops > 0 && i >= h->total) displaced_too_far(S, i);
    i += h->offset;
    a = h->data;
  }
  if (i >= vec_total(a)) displaced_too_far(S, i);
  *ip = i;
  return a;
}

jt_V jt_array_ref(jt_State *S, jt_V a, size_t i)
{
  if (jt_isvector(a) && i < vec_total(a)) return jt_vec_(a)->items[i];
  if (jt_isstring(a) && i < vec_total(a)) return jt_mkchar(jt_str_(a)->chars[i]);
  jt_V v = locate(S, a, &i);
  return jt_isvector(v) ? jt_vec_(v)->items[i] : jt_mkchar(jt_str_(v)->chars[i]);
}

/* Signal unless x may be stored in an array of element kind elt. */
static void check_elt(jt_State *S, int elt, jt_V x)
{
  if (elt == JT_ELT_CHAR && !jt_ischar(x)) jt_type_error(S, x, JT_SYM(S, CHARACTER));
  if (elt == JT_ELT_BIT && x != jt_mkfix(0) && x != jt_mkfix(1))
    jt_type_error(S, x, jt_intern(S, "BIT"));
}

void jt_array_set(jt_State *S, jt_V a, size_t i, jt_V x)
{
  jt_V v = is_vec_obj(a) && i < vec_total(a) ? a : locate(S, a, &i);
  if (jt_isstring(v)) {
    uint32_t c = jt_check_char(S, x);
    JT_TOUCH(S, v);
    jt_str_(v)->chars[i] = c;
    return;
  }
  check_elt(S, jt_array_elt(v), x);
  JT_SET(S, v, jt_vec_(v)->items[i], x);
}

/* A simple one-dimensional array of n elements of kind elt, filled with
** NIL, code point 0 or the bit 0. */
jt_V jt_make_simple_array1(jt_State *S, int elt, size_t n)
{
  if (elt == JT_ELT_CHAR) return jt_make_string(S, n, 0);
  jt_V v = jt_make_vector(S, n, elt == JT_ELT_BIT ? jt_mkfix(0) : JT_NIL);
  if (elt == JT_ELT_BIT) jt_o(v)->flags |= JT_ARR_BIT;
  return v;
}

jt_V jt_simple_string_copy(jt_State *S, jt_V str)
{
  size_t n = jt_vector_length(str);
  JT_PUSH(S, str);
  jt_V r = jt_make_string(S, n, 0);
  JT_PUSH(S, r);
  for (size_t i = 0; i < n; i++) jt_str_(r)->chars[i] = jt_charcode(jt_array_ref(S, str, i));
  JT_POP(S, 2);
  return r;
}

/* ------------------------------------------------------------ element types */

static bool sym_named(jt_State *S, jt_V v, const char *name)
{
  return jt_issymbol(v) && strcmp(jt_symname(S, v), name) == 0;
}

/* The element kind an element type upgrades to. */
int jt_upgraded_elt(jt_State *S, jt_V type)
{
  if (sym_named(S, type, "CHARACTER") || sym_named(S, type, "BASE-CHAR") ||
      sym_named(S, type, "STANDARD-CHAR") || sym_named(S, type, "EXTENDED-CHAR"))
    return JT_ELT_CHAR;
  if (sym_named(S, type, "BIT")) return JT_ELT_BIT;
  if (jt_iscons(type) && jt_iscons(jt_cdr(type))) {
    jt_V head = jt_car(type), a = jt_car(jt_cdr(type));
    jt_V b = jt_iscons(jt_cdr(jt_cdr(type))) ? jt_car(jt_cdr(jt_cdr(type))) : JT_NOVALUE;
    if ((sym_named(S, head, "UNSIGNED-BYTE") && a == jt_mkfix(1)) ||
        (sym_named(S, head, "MOD") && a == jt_mkfix(2)) ||
        (sym_named(S, head, "INTEGER") && a == jt_mkfix(0) && b == jt_mkfix(1)))
      return JT_ELT_BIT;
  }
  return JT_ELT_T;
}

static jt_V elt_type_name(jt_State *S, int elt)
{
  return elt == JT_ELT_CHAR ? JT_SYM(S, CHARACTER)
       : elt == JT_ELT_BIT ? jt_intern(S, "BIT") : JT_T;
}

jt_V jt_array_element_type(jt_State *S, jt_V a)
{
  return elt_type_name(S, jt_array_elt(a));
}

/* ------------------------------------------------------------- dimensions */

/* Parse a dimension designator (n or a list) into dims; returns the rank
** and the total size in *total. */
static int parse_dims(jt_State *S, jt_V spec, size_t *dims, size_t *total)
{
  int rank = 0;
  size_t t = 1;
  if (!jt_islist(spec)) {
    dims[0] = jt_check_index(S, spec);
    *total = dims[0];
    return 1;
  }
  jt_list_count(S, spec);   /* a circular list of dimensions is a type-error */
  for (jt_V l = spec; l != JT_NIL; l = jt_cdr(l)) {
    if (!jt_iscons(l)) jt_type_error(S, spec, JT_SYM(S, LIST));
    if (rank >= RANK_LIMIT)
      jt_error(S, "an array may have at most %d dimensions", RANK_LIMIT);
    size_t d = jt_check_index(S, jt_car(l));
    if (d != 0 && t > (size_t)JT_FIXMAX / d)
      jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "array too large");
    t *= d;
    dims[rank++] = d;
  }
  *total = t;
  return rank;
}

static jt_V dims_list(jt_State *S, jt_V a)
{
  int rank = jt_array_rank(a);
  jt_V l = JT_NIL;
  JT_ROOT(S, l);
  for (int i = rank - 1; i >= 0; i--) l = jt_cons(S, jt_mkfix((intptr_t)jt_array_dim(a, i)), l);
  JT_UNROOT(S, 1);
  return l;
}

static jt_V new_header(jt_State *S, int rank, const size_t *dims, size_t total)
{
  jt_Array *h = (jt_Array *)jt_alloc(S, JT_TARRAY, sizeof(jt_Array) + (size_t)rank * sizeof(size_t));
  h->h.aux = (uint32_t)rank;
  h->data = JT_NIL;
  h->offset = 0;
  h->fill = 0;
  h->total = total;
  for (int i = 0; i < rank; i++) h->dims[i] = dims[i];
  return (jt_V)h;
}

/* ---------------------------------------------------------- initial contents */

/* Length of a sequence, and its elements through a cursor (lists are walked
** once). */
static size_t seq_len(jt_State *S, jt_V seq)
{
  if (jt_islist(seq)) return jt_list_length(S, seq);
  if (jt_vectorp(seq)) return jt_vector_length(seq);
  jt_type_error(S, seq, JT_SYM(S, SEQUENCE));
}

/* Store the nested sequences `contents` (depth rank - axis) into `store`
** from row-major index *k on. */
static void fill_contents(jt_State *S, jt_V store, size_t *k, jt_V contents,
                          const size_t *dims, int rank, int axis)
{
  if (axis == rank) {
    jt_array_set(S, store, (*k)++, contents);
    return;
  }
  size_t n = seq_len(S, contents);
  if (n != dims[axis])
    jt_error(S, ":INITIAL-CONTENTS has %zu elements along axis %d, not %zu", n, axis,
             dims[axis]);
  jt_V l = contents;
  for (size_t i = 0; i < n; i++) {
    jt_V x;
    if (jt_islist(contents)) { x = jt_car(l); l = jt_cdr(l); }
    else x = jt_array_ref(S, contents, i);
    fill_contents(S, store, k, x, dims, rank, axis + 1);
  }
}

/* --------------------------------------------------------------- make-array */

static const int keys_array[] = {
  JT_S_K_ELEMENT_TYPE, JT_S_K_INITIAL_ELEMENT, JT_S_K_INITIAL_CONTENTS,
  JT_S_K_ADJUSTABLE, JT_S_K_FILL_POINTER, JT_S_K_DISPLACED_TO,
  JT_S_K_DISPLACED_INDEX_OFFSET};
enum { K_ET, K_IE, K_IC, K_ADJ, K_FP, K_DT, K_DIO, NKEYS };

static inline bool given(jt_V v) { return v != JT_NOVALUE && v != JT_NIL; }

/* A fill-pointer argument for a vector of size n: T means n. */
static size_t fill_arg(jt_State *S, jt_V fp, size_t n)
{
  if (fp == JT_T) return n;
  size_t k = jt_check_index(S, fp);
  if (k > n) jt_type_error(S, fp, jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0), jt_mkfix((intptr_t)n)));
  return k;
}

/* Check a :displaced-to target for an array of element kind elt and total
** size total; returns the offset. */
static size_t displacement(jt_State *S, jt_V target, jt_V offv, int elt, size_t total)
{
  if (!jt_arrayp(target)) not_array(S, target);
  if (jt_array_elt(target) != elt)
    jt_error(S, "cannot displace an array of element type %s to one of element type %s",
             jt_symname(S, elt_type_name(S, elt)),
             jt_symname(S, elt_type_name(S, jt_array_elt(target))));
  size_t off = offv == JT_NOVALUE ? 0 : jt_check_index(S, offv);
  size_t tt = jt_array_total(target);
  if (off > tt || total > tt - off)
    jt_error(S, "cannot displace an array of %zu elements at offset %zu to an array of %zu",
             total, off, tt);
  return off;
}

/* Make an array from parsed arguments: kv as keys_array. */
static jt_V make_array(jt_State *S, int rank, const size_t *dims, size_t total, const jt_V *kv)
{
  int elt = kv[K_ET] == JT_NOVALUE ? JT_ELT_T : jt_upgraded_elt(S, kv[K_ET]);
  jt_V init = kv[K_IE], contents = kv[K_IC], target = kv[K_DT];
  if (init != JT_NOVALUE && contents != JT_NOVALUE)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "both :INITIAL-ELEMENT and :INITIAL-CONTENTS were supplied");
  if (given(target) && (init != JT_NOVALUE || contents != JT_NOVALUE))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              ":DISPLACED-TO cannot be supplied with :INITIAL-ELEMENT or :INITIAL-CONTENTS");
  if (!given(target) && kv[K_DIO] != JT_NOVALUE && kv[K_DIO] != jt_mkfix(0))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), ":DISPLACED-INDEX-OFFSET needs :DISPLACED-TO");
  if (given(kv[K_FP]) && rank != 1)
    jt_error(S, "only a vector can have a fill pointer, not an array of rank %d", rank);
  if (init != JT_NOVALUE) check_elt(S, elt, init);
  bool adjustable = given(kv[K_ADJ]);
  jt_V r;
  if (rank == 1 && !given(target)) {
    r = jt_make_simple_array1(S, elt, dims[0]);
    if (init != JT_NOVALUE && dims[0] > 0) {
      JT_PUSH(S, r);
      for (size_t i = 0; i < dims[0]; i++) jt_array_set(S, r, i, init);
      JT_POP(S, 1);
    }
  } else {
    r = new_header(S, rank, dims, total);
    JT_PUSH(S, r);
    jt_Array *h = jt_arr_(r);
    if (elt == JT_ELT_CHAR) h->h.flags |= JT_ARR_CHAR;
    if (elt == JT_ELT_BIT) h->h.flags |= JT_ARR_BIT;
    if (given(target)) {
      h->offset = displacement(S, target, kv[K_DIO], elt, total);
      h->data = target;
      h->h.flags |= JT_ARR_DISPLACED;
    } else {
      jt_V store = jt_make_simple_array1(S, elt, total);
      jt_arr_(r)->data = store;
      if (init != JT_NOVALUE)
        for (size_t i = 0; i < total; i++) jt_array_set(S, store, i, init);
    }
    JT_POP(S, 1);
  }
  JT_PUSH(S, r);
  if (contents != JT_NOVALUE) {
    size_t k = 0;
    fill_contents(S, r, &k, contents, dims, rank, 0);
  }
  if (adjustable) jt_o(r)->flags |= JT_ARR_ADJUSTABLE;
  if (given(kv[K_FP])) {
    size_t fp = fill_arg(S, kv[K_FP], dims[0]);
    jt_o(r)->flags |= JT_ARR_FILLPTR;
    if (jt_isvector(r)) jt_vec_(r)->len = fp;
    else if (jt_isstring(r)) jt_str_(r)->len = fp;
    else jt_arr_(r)->fill = fp;
  }
  JT_POP(S, 1);
  return r;
}

/* (make-array dimensions &key element-type initial-element initial-contents
**  adjustable fill-pointer displaced-to displaced-index-offset) */
JT_FN(f_make_array)
{
  size_t dims[RANK_LIMIT], total;
  int rank = parse_dims(S, argv[0], dims, &total);
  jt_V kv[NKEYS];
  jt_parse_keys(S, argc, argv, 1, keys_array, NKEYS, kv);
  return make_array(S, rank, dims, total, kv);
}

JT_FN(f_vector)
{
  jt_V r = jt_make_vector(S, (size_t)argc, JT_NIL);
  memcpy(jt_vec_(r)->items, argv, (size_t)argc * sizeof(jt_V));
  return r;
}

/* ------------------------------------------------------------- subscripts */

/* The row-major index of subscripts subs[0..n) in `a`; with `check` false
** return SIZE_MAX instead of signalling when one is out of range. */
static size_t row_major(jt_State *S, jt_V a, int n, const jt_V *subs, bool check)
{
  if (!jt_arrayp(a)) not_array(S, a);
  int rank = jt_array_rank(a);
  if (n != rank)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "wrong number of subscripts, %d, for an array of rank %d", n, rank);
  size_t idx = 0;
  for (int i = 0; i < n; i++) {
    size_t d = jt_array_dim(a, i);
    if (!jt_isinteger(subs[i])) jt_type_error(S, subs[i], JT_SYM(S, INTEGER));
    if (!jt_isfix(subs[i]) || jt_fixval(subs[i]) < 0 || (size_t)jt_fixval(subs[i]) >= d) {
      if (!check) return SIZE_MAX;
      bad_index(S, a, subs[i], d);
    }
    idx = idx * d + (size_t)jt_fixval(subs[i]);
  }
  return idx;
}

JT_FN(f_aref)
{
  jt_V a = argv[0];
  /* the commonest case first: one index into a vector object */
  if (argc == 2 && jt_isfix(argv[1]) && is_vec_obj(a)) {
    intptr_t i = jt_fixval(argv[1]);
    if (i >= 0 && (size_t)i < vec_total(a))
      return jt_isvector(a) ? jt_vec_(a)->items[i] : jt_mkchar(jt_str_(a)->chars[i]);
  }
  return jt_array_ref(S, a, row_major(S, a, argc - 1, argv + 1, true));
}

/* (%set-aref array subscript... value) */
JT_FN(f_set_aref)
{
  jt_V a = argv[0];
  jt_array_set(S, a, row_major(S, a, argc - 2, argv + 1, true), argv[argc - 1]);
  return argv[argc - 1];
}

static size_t check_row_major_index(jt_State *S, jt_V a, jt_V iv)
{
  if (!jt_arrayp(a)) not_array(S, a);
  size_t i = jt_check_index(S, iv);
  if (i >= jt_array_total(a)) bad_index(S, a, iv, jt_array_total(a));
  return i;
}

JT_FN(f_row_major_aref) { return jt_array_ref(S, argv[0], check_row_major_index(S, argv[0], argv[1])); }

JT_FN(f_set_row_major_aref)
{
  jt_array_set(S, argv[0], check_row_major_index(S, argv[0], argv[1]), argv[2]);
  return argv[2];
}

JT_FN(f_array_row_major_index)
{
  return jt_mkfix((intptr_t)row_major(S, argv[0], argc - 1, argv + 1, true));
}

JT_FN(f_array_in_bounds_p)
{
  return jt_bool(row_major(S, argv[0], argc - 1, argv + 1, false) != SIZE_MAX);
}

static bool simple_vector_p(jt_V v)
{
  return jt_isvector(v) && !(jt_o(v)->flags & (JT_ARR_FILLPTR | JT_ARR_ADJUSTABLE | JT_ARR_BIT));
}

static size_t svref_index(jt_State *S, jt_V v, jt_V iv)
{
  if (!simple_vector_p(v)) jt_type_error(S, v, JT_SYM(S, SIMPLE_VECTOR));
  size_t i = jt_check_index(S, iv);
  if (i >= jt_vec_(v)->len) bad_index(S, v, iv, jt_vec_(v)->len);
  return i;
}

JT_FN(f_svref)
{
  size_t i = svref_index(S, argv[0], argv[1]);   /* checked before the vector is read */
  return jt_vec_(argv[0])->items[i];
}

JT_FN(f_set_svref)
{
  size_t i = svref_index(S, argv[0], argv[1]);
  JT_SET(S, argv[0], jt_vec_(argv[0])->items[i], argv[2]);
  return argv[2];
}

/* (bit bit-array &rest subscripts), and sbit of a simple one */
static jt_V bit_array(jt_State *S, jt_V a, bool simple)
{
  if (!jt_arrayp(a) || jt_array_elt(a) != JT_ELT_BIT || (simple && !jt_simple_array_p(a)))
    jt_type_error(S, a, jt_intern(S, simple ? "SIMPLE-BIT-VECTOR" : "BIT-VECTOR"));
  return a;
}

JT_FN(f_bit)
{
  jt_V a = bit_array(S, argv[0], false);
  return jt_array_ref(S, a, row_major(S, a, argc - 1, argv + 1, true));
}

JT_FN(f_sbit)
{
  jt_V a = bit_array(S, argv[0], true);
  return jt_array_ref(S, a, row_major(S, a, argc - 1, argv + 1, true));
}

JT_FN(f_set_bit)
{
  jt_V a = bit_array(S, argv[0], false);
  jt_array_set(S, a, row_major(S, a, argc - 2, argv + 1, true), argv[argc - 1]);
  return argv[argc - 1];
}

JT_FN(f_set_sbit)
{
  jt_V a = bit_array(S, argv[0], true);
  jt_array_set(S, a, row_major(S, a, argc - 2, argv + 1, true), argv[argc - 1]);
  return argv[argc - 1];
}

/* ------------------------------------------------------------- inquiries */

static jt_V check_array(jt_State *S, jt_V v)
{
  if (!jt_arrayp(v)) not_array(S, v);
  return v;
}

JT_FN(f_array_dimension)
{
  jt_V a = check_array(S, argv[0]);
  int rank = jt_array_rank(a);
  if (!jt_isfix(argv[1]) || jt_fixval(argv[1]) < 0 || jt_fixval(argv[1]) >= rank)
    jt_type_error(S, argv[1], jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0),
                                      jt_list(S, 1, jt_mkfix(rank))));
  return jt_mkfix((intptr_t)jt_array_dim(a, (int)jt_fixval(argv[1])));
}

JT_FN(f_array_dimensions) { return dims_list(S, check_array(S, argv[0])); }
JT_FN(f_array_total_size) { return jt_mkfix((intptr_t)jt_array_total(check_array(S, argv[0]))); }
JT_FN(f_array_rank) { return jt_mkfix(jt_array_rank(check_array(S, argv[0]))); }
JT_FN(f_array_element_type) { return jt_array_element_type(S, check_array(S, argv[0])); }
JT_FN(f_arrayp) { return jt_bool(jt_arrayp(argv[0])); }
JT_FN(f_vectorp) { return jt_bool(jt_vectorp(argv[0])); }
JT_FN(f_simple_vector_p) { return jt_bool(simple_vector_p(argv[0])); }
JT_FN(f_bit_vector_p) { return jt_bool(jt_bit_vector_p(argv[0])); }
JT_FN(f_simple_bit_vector_p) { return jt_bool(jt_bit_vector_p(argv[0]) && jt_simple_array_p(argv[0])); }

JT_FN(f_adjustable_array_p)
{
  return jt_bool(jt_o(check_array(S, argv[0]))->flags & JT_ARR_ADJUSTABLE);
}

JT_FN(f_array_has_fill_pointer_p)
{
  return jt_bool(jt_o(check_array(S, argv[0]))->flags & JT_ARR_FILLPTR);
}

/* (array-displacement array) => displaced-to, offset */
JT_FN(f_array_displacement)
{
  jt_V a = check_array(S, argv[0]);
  if (!(jt_o(a)->flags & JT_ARR_DISPLACED)) return jt_values2(S, JT_NIL, jt_mkfix(0));
  return jt_values2(S, jt_arr_(a)->data, jt_mkfix((intptr_t)jt_arr_(a)->offset));
}

/* (upgraded-array-element-type typespec &optional environment) */
JT_FN(f_upgraded_array_element_type)
{
  return elt_type_name(S, jt_upgraded_elt(S, argv[0]));
}

/* ---------------------------------------------------------- fill pointers */

static jt_V check_fill_pointer(jt_State *S, jt_V v)
{
  if (!jt_vectorp(v) || !(jt_o(v)->flags & JT_ARR_FILLPTR)) {
    jt_V sat = jt_list(S, 2, JT_SYM(S, SATISFIES), jt_intern(S, "ARRAY-HAS-FILL-POINTER-P"));
    jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, AND), JT_SYM(S, VECTOR), sat));
  }
  return v;
}

void jt_set_fill_pointer(jt_State *S, jt_V v, size_t n)
{
  JT_TOUCH(S, v);
  if (jt_isvector(v)) jt_vec_(v)->len = n;
  else if (jt_isstring(v)) jt_str_(v)->len = n;
  else jt_arr_(v)->fill = n;
}

JT_FN(f_fill_pointer) { return jt_mkfix((intptr_t)jt_vector_length(check_fill_pointer(S, argv[0]))); }

JT_FN(f_set_fill_pointer)
{
  jt_V v = check_fill_pointer(S, argv[0]);
  jt_set_fill_pointer(S, v, fill_arg(S, argv[1], jt_array_total(v)));
  return argv[1];
}

/* Resize the buffer of a vector object to exactly `cap` elements; new slots
** hold `fill` (a value, or a character for strings). */
static void set_capacity(jt_State *S, jt_V v, size_t cap, jt_V fill)
{
  JT_TOUCH(S, v);
  if (jt_isvector(v)) {
    jt_Vector *x = jt_vec_(v);
    if (cap > SIZE_MAX / sizeof(jt_V)) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "array too large");
    jt_V *p = jt_realloc(S, x->items, x->cap * sizeof(jt_V), (cap ? cap : 1) * sizeof(jt_V));
    for (size_t i = x->cap; i < cap; i++) p[i] = fill;
    x->items = p;
    x->cap = cap ? cap : 1;
    if (x->len > cap) x->len = cap;
  } else {
    jt_String *x = jt_str_(v);
    uint32_t c = jt_ischar(fill) ? jt_charcode(fill) : 0;
    if (cap > SIZE_MAX / sizeof(uint32_t)) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "array too large");
    uint32_t *p = jt_realloc(S, x->chars, x->cap * sizeof(uint32_t), (cap ? cap : 1) * sizeof(uint32_t));
    for (size_t i = x->cap; i < cap; i++) p[i] = c;
    x->chars = p;
    x->cap = cap ? cap : 1;
    if (x->len > cap) x->len = cap;
  }
}

static jt_V default_fill(int elt)
{
  return elt == JT_ELT_CHAR ? jt_mkchar(0) : elt == JT_ELT_BIT ? jt_mkfix(0) : JT_NIL;
}

/* Give a header private storage of `cap` elements holding its current
** elements (vector-push-extend of a full displaced vector). */
static void header_regrow(jt_State *S, jt_V a, size_t cap)
{
  int elt = jt_array_elt(a);
  jt_V store = jt_make_simple_array1(S, elt, cap);
  JT_PUSH(S, store);
  size_t n = jt_arr_(a)->total;
  for (size_t i = 0; i < n && i < cap; i++) jt_array_set(S, store, i, jt_array_ref(S, a, i));
  JT_TOUCH(S, a);
  JT_SET(S, a, jt_arr_(a)->data, store);
  jt_Array *h = jt_arr_(a);
  h->offset = 0;
  h->total = h->dims[0] = cap;
  h->h.flags &= (uint16_t)~JT_ARR_DISPLACED;
  JT_POP(S, 1);
}

/* vector-push, and with `extend` vector-push-extend, which grows a full
** vector instead of returning NIL. */
static jt_V vector_push(jt_State *S, int argc, jt_V *argv, bool extend)
{
  jt_V v = check_fill_pointer(S, argv[1]);
  size_t n = jt_vector_length(v);
  check_elt(S, jt_array_elt(v), argv[0]);
  if (n >= jt_array_total(v)) {
    if (!extend) return JT_NIL;
    if (!(jt_o(v)->flags & JT_ARR_ADJUSTABLE) && jt_is(v, JT_TARRAY))
      jt_error(S, "VECTOR-PUSH-EXTEND: the vector is full and not adjustable");
    /* by the extension asked for, as SBCL does; else doubling, which keeps
    ** pushes amortised O(1) */
    size_t grow = argc > 2 ? jt_check_index(S, argv[2]) : n < 16 ? 16 : n;
    if (grow == 0) grow = 1;
    if (jt_is(v, JT_TARRAY)) header_regrow(S, v, n + grow);
    else set_capacity(S, v, n + grow, default_fill(jt_array_elt(v)));
  }
  jt_array_set(S, v, n, argv[0]);
  jt_set_fill_pointer(S, v, n + 1);
  return jt_mkfix((intptr_t)n);
}

JT_FN(f_vector_push) { return vector_push(S, argc, argv, false); }
JT_FN(f_vector_push_extend) { return vector_push(S, argc, argv, true); }

JT_FN(f_vector_pop)
{
  jt_V v = check_fill_pointer(S, argv[0]);
  size_t n = jt_vector_length(v);
  if (n == 0) jt_error(S, "VECTOR-POP: the fill pointer of the vector is zero");
  jt_set_fill_pointer(S, v, n - 1);
  return jt_array_ref(S, v, n - 1);
}

/* ------------------------------------------------------------ adjust-array */

/* Copy the elements that `from` and `to` (same rank) both have at the same
** subscripts. */
static void copy_overlap(jt_State *S, jt_V to, jt_V from)
{
  int rank = jt_array_rank(to);
  size_t total = jt_array_total(to);
  size_t sub[RANK_LIMIT];
  for (size_t j = 0; j < total; j++) {
    size_t r = j;
    for (int a = rank - 1; a >= 0; a--) {
      size_t d = jt_array_dim(to, a);
      sub[a] = r % d;
      r /= d;
    }
    size_t i = 0;
    bool inside = true;
    for (int a = 0; a < rank && inside; a++) {
      size_t d = jt_array_dim(from, a);
      if (sub[a] >= d) inside = false;
      i = i * d + sub[a];
    }
    if (inside) jt_array_set(S, to, j, jt_array_ref(S, from, i));
  }
}

/* (adjust-array array dimensions &key element-type initial-element
**  initial-contents fill-pointer displaced-to displaced-index-offset) */
JT_FN(f_adjust_array)
{
  jt_V a = check_array(S, argv[0]);
  size_t dims[RANK_LIMIT], total;
  int rank = parse_dims(S, argv[1], dims, &total);
  jt_V kv[NKEYS];
  jt_parse_keys(S, argc, argv, 2, keys_array, NKEYS, kv);
  if (rank != jt_array_rank(a))
    jt_error(S, "ADJUST-ARRAY cannot change the rank of an array from %d to %d",
             jt_array_rank(a), rank);
  int elt = jt_array_elt(a);
  if (kv[K_ET] != JT_NOVALUE && jt_upgraded_elt(S, kv[K_ET]) != elt)
    jt_error(S, "ADJUST-ARRAY cannot change the element type of an array");
  bool has_fp = (jt_o(a)->flags & JT_ARR_FILLPTR) != 0;
  if (given(kv[K_FP]) && !has_fp)
    jt_error(S, "ADJUST-ARRAY: the array has no fill pointer to set");
  size_t fp = 0;
  if (has_fp) {
    fp = given(kv[K_FP]) ? fill_arg(S, kv[K_FP], dims[0]) : jt_vector_length(a);
    if (fp > dims[0]) jt_error(S, "ADJUST-ARRAY: the fill pointer %zu is beyond the new size %zu", fp, dims[0]);
  }
  if (kv[K_IE] != JT_NOVALUE) check_elt(S, elt, kv[K_IE]);
  bool adjustable = (jt_o(a)->flags & JT_ARR_ADJUSTABLE) != 0;
  bool displace = given(kv[K_DT]);

  /* an adjustable vector object keeps its identity: resized in place */
  if (adjustable && is_vec_obj(a) && !displace) {
    jt_V fill = kv[K_IE] != JT_NOVALUE ? kv[K_IE] : default_fill(elt);
    size_t old = jt_array_total(a);
    JT_TOUCH(S, a);
    if (jt_isvector(a)) jt_vec_(a)->len = old < total ? old : total;
    else jt_str_(a)->len = old < total ? old : total;
    set_capacity(S, a, total, fill);
    jt_set_fill_pointer(S, a, total);
    if (kv[K_IC] != JT_NOVALUE) {
      size_t k = 0;
      fill_contents(S, a, &k, kv[K_IC], dims, 1, 0);
    }
    if (has_fp) jt_set_fill_pointer(S, a, fp);
    return a;
  }

  /* otherwise make the new array, then move it into place if adjustable */
  jt_V mk[NKEYS] = {elt_type_name(S, elt), kv[K_IE], kv[K_IC], JT_NIL, JT_NOVALUE, kv[K_DT], kv[K_DIO]};
  JT_PUSH(S, mk[0]);
  jt_V r = make_array(S, rank, dims, total, mk);
  JT_PUSH(S, r);
  if (!displace && kv[K_IC] == JT_NOVALUE) copy_overlap(S, r, a);
  if (adjustable && jt_is(a, JT_TARRAY)) {
    /* a header of the same rank: take over the new one's fields */
    jt_Array *h = jt_arr_(a);
    JT_TOUCH(S, a);
    JT_SET(S, a, h->data, is_vec_obj(r) ? r : jt_arr_(r)->data);
    h->offset = jt_is(r, JT_TARRAY) ? jt_arr_(r)->offset : 0;
    h->total = total;
    for (int i = 0; i < rank; i++) h->dims[i] = dims[i];
    h->h.flags = (uint16_t)((h->h.flags & ~JT_ARR_DISPLACED) | (displace ? JT_ARR_DISPLACED : 0));
    if (has_fp) h->fill = fp;
    r = a;
  } else {
    if (adjustable) jt_o(r)->flags |= JT_ARR_ADJUSTABLE;
    if (has_fp) {
      jt_o(r)->flags |= JT_ARR_FILLPTR;
      jt_set_fill_pointer(S, r, fp);
    }
  }
  JT_POP(S, 2);
  return r;
}

/* ------------------------------------------------------------ bit arrays */

enum { B_AND, B_IOR, B_XOR, B_EQV, B_NAND, B_NOR, B_ANDC1, B_ANDC2, B_ORC1, B_ORC2, B_NOT };

static int bit_op(int op, int a, int b)
{
  switch (op) {
  case B_AND: return a & b;
  case B_IOR: return a | b;
  case B_XOR: return a ^ b;
  case B_EQV: return !(a ^ b);
  case B_NAND: return !(a & b);
  case B_NOR: return !(a | b);
  case B_ANDC1: return (!a) & b;
  case B_ANDC2: return a & (!b);
  case B_ORC1: return (!a) | b;
  case B_ORC2: return a | (!b);
  default: return !a;
  }
}

static bool same_dims(jt_V a, jt_V b)
{
  int rank = jt_array_rank(a);
  if (rank != jt_array_rank(b)) return false;
  for (int i = 0; i < rank; i++)
    if (jt_array_dim(a, i) != jt_array_dim(b, i)) return false;
  return true;
}

/* (bit-OP bit-array1 bit-array2 &optional opt-arg), and bit-not */
static jt_V bit_logic(jt_State *S, int argc, jt_V *argv, int op)
{
  int nin = op == B_NOT ? 1 : 2;
  jt_V a = bit_array(S, argv[0], false);
  jt_V b = nin == 2 ? bit_array(S, argv[1], false) : a;
  if (!same_dims(a, b)) jt_error(S, "bit arrays of different dimensions");
  jt_V opt = argc > nin ? argv[nin] : JT_NIL;
  jt_V r;
  if (opt == JT_T) {
    r = a;
  } else if (opt != JT_NIL) {
    r = bit_array(S, opt, false);
    if (!same_dims(a, r)) jt_error(S, "the result bit array has other dimensions");
  } else {
    size_t dims[RANK_LIMIT];
    int rank = jt_array_rank(a);
    for (int i = 0; i < rank; i++) dims[i] = jt_array_dim(a, i);
    jt_V kv[NKEYS] = {jt_intern(S, "BIT"), JT_NOVALUE, JT_NOVALUE, JT_NIL, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE};
    r = make_array(S, rank, dims, jt_array_total(a), kv);
  }
  JT_PUSH(S, r);
  size_t n = jt_array_total(a);
  for (size_t i = 0; i < n; i++) {
    int x = jt_array_ref(S, a, i) == jt_mkfix(1);
    int y = jt_array_ref(S, b, i) == jt_mkfix(1);
    jt_array_set(S, r, i, jt_mkfix(bit_op(op, x, y)));
  }
  JT_POP(S, 1);
  return r;
}

JT_FN(f_bit_and) { return bit_logic(S, argc, argv, B_AND); }
JT_FN(f_bit_ior) { return bit_logic(S, argc, argv, B_IOR); }
JT_FN(f_bit_xor) { return bit_logic(S, argc, argv, B_XOR); }
JT_FN(f_bit_eqv) { return bit_logic(S, argc, argv, B_EQV); }
JT_FN(f_bit_nand) { return bit_logic(S, argc, argv, B_NAND); }
JT_FN(f_bit_nor) { return bit_logic(S, argc, argv, B_NOR); }
JT_FN(f_bit_andc1) { return bit_logic(S, argc, argv, B_ANDC1); }
JT_FN(f_bit_andc2) { return bit_logic(S, argc, argv, B_ANDC2); }
JT_FN(f_bit_orc1) { return bit_logic(S, argc, argv, B_ORC1); }
JT_FN(f_bit_orc2) { return bit_logic(S, argc, argv, B_ORC2); }
JT_FN(f_bit_not) { return bit_logic(S, argc, argv, B_NOT); }

/* ------------------------------------------------------------ registry */

#define BITFN(name, f, op) \
  {name, f, 2, 3, "(" op " bit-array1 bit-array2 &optional opt-arg) Elementwise " op " of two bit arrays."}

static const jt_Reg array_fns[] = {
  {"MAKE-ARRAY", f_make_array, 1, -1,
   "(make-array dimensions &key element-type initial-element initial-contents adjustable "
   "fill-pointer displaced-to displaced-index-offset) A new array."},
  {"VECTOR", f_vector, 0, -1, "(vector &rest objects) A simple vector of OBJECTS."},
  {"AREF", f_aref, 1, -1, "(aref array &rest subscripts) The element of ARRAY at SUBSCRIPTS."},
  {"ROW-MAJOR-AREF", f_row_major_aref, 2, 2,
   "(row-major-aref array index) The element of ARRAY at row-major INDEX."},
  {"ARRAY-ROW-MAJOR-INDEX", f_array_row_major_index, 1, -1,
   "(array-row-major-index array &rest subscripts) The row-major index of SUBSCRIPTS."},
  {"ARRAY-IN-BOUNDS-P", f_array_in_bounds_p, 1, -1,
   "(array-in-bounds-p array &rest subscripts) True if SUBSCRIPTS are valid for ARRAY."},
  {"SVREF", f_svref, 2, 2, "(svref simple-vector index) The element at INDEX."},
  {"BIT", f_bit, 1, -1, "(bit bit-array &rest subscripts) The bit at SUBSCRIPTS."},
  {"SBIT", f_sbit, 1, -1, "(sbit simple-bit-array &rest subscripts) The bit at SUBSCRIPTS."},
  {"ARRAY-DIMENSION", f_array_dimension, 2, 2,
   "(array-dimension array axis) The size of ARRAY along AXIS."},
  {"ARRAY-DIMENSIONS", f_array_dimensions, 1, 1,
   "(array-dimensions array) The list of ARRAY's dimensions."},
  {"ARRAY-TOTAL-SIZE", f_array_total_size, 1, 1,
   "(array-total-size array) The number of elements of ARRAY."},
  {"ARRAY-RANK", f_array_rank, 1, 1, "(array-rank array) The number of dimensions of ARRAY."},
  {"ARRAY-ELEMENT-TYPE", f_array_element_type, 1, 1,
   "(array-element-type array) CHARACTER, BIT or T."},
  {"ARRAY-DISPLACEMENT", f_array_displacement, 1, 1,
   "(array-displacement array) The array ARRAY is displaced to and the offset, or NIL and 0."},
  {"UPGRADED-ARRAY-ELEMENT-TYPE", f_upgraded_array_element_type, 1, 2,
   "(upgraded-array-element-type typespec &optional environment) CHARACTER, BIT or T."},
  {"ARRAYP", f_arrayp, 1, 1, "(arrayp object) True if OBJECT is an array."},
  {"VECTORP", f_vectorp, 1, 1, "(vectorp object) True if OBJECT is a vector."},
  {"SIMPLE-VECTOR-P", f_simple_vector_p, 1, 1,
   "(simple-vector-p object) True if OBJECT is a simple general vector."},
  {"BIT-VECTOR-P", f_bit_vector_p, 1, 1, "(bit-vector-p object) True if OBJECT is a bit vector."},
  {"SIMPLE-BIT-VECTOR-P", f_simple_bit_vector_p, 1, 1,
   "(simple-bit-vector-p object) True if OBJECT is a simple bit vector."},
  {"ADJUSTABLE-ARRAY-P", f_adjustable_array_p, 1, 1,
   "(adjustable-array-p array) True if ARRAY is adjustable."},
  {"ARRAY-HAS-FILL-POINTER-P", f_array_has_fill_pointer_p, 1, 1,
   "(array-has-fill-pointer-p array) True if ARRAY has a fill pointer."},
  {"FILL-POINTER", f_fill_pointer, 1, 1, "(fill-pointer vector) VECTOR's fill pointer."},
  {"VECTOR-PUSH", f_vector_push, 2, 2,
   "(vector-push object vector) Store OBJECT at the fill pointer and advance it; NIL if full."},
  {"VECTOR-PUSH-EXTEND", f_vector_push_extend, 2, 3,
   "(vector-push-extend object vector &optional extension) VECTOR-PUSH, growing VECTOR when full."},
  {"VECTOR-POP", f_vector_pop, 1, 1,
   "(vector-pop vector) Decrease the fill pointer and return the element there."},
  {"ADJUST-ARRAY", f_adjust_array, 2, -1,
   "(adjust-array array dimensions &key element-type initial-element initial-contents "
   "fill-pointer displaced-to displaced-index-offset) ARRAY resized."},
  BITFN("BIT-AND", f_bit_and, "bit-and"), BITFN("BIT-IOR", f_bit_ior, "bit-ior"),
  BITFN("BIT-XOR", f_bit_xor, "bit-xor"), BITFN("BIT-EQV", f_bit_eqv, "bit-eqv"),
  BITFN("BIT-NAND", f_bit_nand, "bit-nand"), BITFN("BIT-NOR", f_bit_nor, "bit-nor"),
  BITFN("BIT-ANDC1", f_bit_andc1, "bit-andc1"), BITFN("BIT-ANDC2", f_bit_andc2, "bit-andc2"),
  BITFN("BIT-ORC1", f_bit_orc1, "bit-orc1"), BITFN("BIT-ORC2", f_bit_orc2, "bit-orc2"),
  {"BIT-NOT", f_bit_not, 1, 2,
   "(bit-not bit-array &optional opt-arg) The complement of each bit of BIT-ARRAY."},
  /* setters (see jt_lib.h) */
  {"%SET-AREF", f_set_aref, 2, -1, "(%set-aref array subscript... value) Setter of AREF."},
  {"%SET-ROW-MAJOR-AREF", f_set_row_major_aref, 3, 3,
   "(%set-row-major-aref array index value) Setter of ROW-MAJOR-AREF."},
  {"%SET-SVREF", f_set_svref, 3, 3, "(%set-svref vector index value) Setter of SVREF."},
  {"%SET-BIT", f_set_bit, 2, -1, "(%set-bit bit-array subscript... value) Setter of BIT."},
  {"%SET-SBIT", f_set_sbit, 2, -1, "(%set-sbit bit-array subscript... value) Setter of SBIT."},
  {"%SET-FILL-POINTER", f_set_fill_pointer, 2, 2,
   "(%set-fill-pointer vector n) Setter of FILL-POINTER."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_array(jt_State *S)
{
  jt_register(S, array_fns);
}

/* ------------------------------------------------------------------ types */

/* Does the element type spec `et` (or *) fit an array of kind elt? */
static bool elt_matches(jt_State *S, jt_V et, int elt)
{
  return sym_named(S, et, "*") || jt_upgraded_elt(S, et) == elt;
}

/* Does the dimension spec (*, a rank, or a list of * and sizes) fit? */
static bool dims_match(jt_State *S, jt_V a, jt_V spec)
{
  if (sym_named(S, spec, "*")) return true;
  int rank = jt_array_rank(a);
  if (jt_isfix(spec)) return jt_fixval(spec) == rank;
  int i = 0;
  for (jt_V l = spec; jt_iscons(l); l = jt_cdr(l), i++) {
    if (i >= rank) return false;
    jt_V d = jt_car(l);
    if (!sym_named(S, d, "*") && !(jt_isfix(d) && (size_t)jt_fixval(d) == jt_array_dim(a, i)))
      return false;
  }
  return i == rank;
}

/* typep for the array types: 1 or 0, or -1 when the type named n is not
** one.  For a compound type n is its head and args its arguments; args is
** JT_NOVALUE for an atomic type. */
int jt_array_typep(jt_State *S, jt_V v, const char *n, jt_V args)
{
  static const char *const names[] = {
    "ARRAY", "SIMPLE-ARRAY", "VECTOR", "SIMPLE-VECTOR", "STRING", "SIMPLE-STRING",
    "BASE-STRING", "SIMPLE-BASE-STRING", "BIT-VECTOR", "SIMPLE-BIT-VECTOR", NULL};
  int k = 0;
  while (names[k] && strcmp(names[k], n)) k++;
  if (!names[k]) return -1;
  if (!jt_arrayp(v)) return 0;
  bool simple = strncmp(n, "SIMPLE-", 7) == 0;
  if (simple && !jt_simple_array_p(v)) return 0;
  jt_V a1 = args != JT_NOVALUE && jt_iscons(args) ? jt_car(args) : jt_intern(S, "*");
  jt_V a2 = args != JT_NOVALUE && jt_iscons(args) && jt_iscons(jt_cdr(args))
          ? jt_car(jt_cdr(args)) : jt_intern(S, "*");
  jt_V star = jt_intern(S, "*");
  switch (k) {
  case 0: case 1:  /* (array et dims) */
    return elt_matches(S, a1, jt_array_elt(v)) && dims_match(S, v, a2);
  case 2:          /* (vector et size) */
    return jt_vectorp(v) && elt_matches(S, a1, jt_array_elt(v)) &&
           (a2 == star || dims_match(S, v, jt_list(S, 1, a2)));
  case 3:          /* (simple-vector size) */
    return jt_vectorp(v) && jt_array_elt(v) == JT_ELT_T &&
           (a1 == star || dims_match(S, v, jt_list(S, 1, a1)));
  case 4: case 5: case 6: case 7:  /* (string size) */
    return jt_stringp(v) && (a1 == star || dims_match(S, v, jt_list(S, 1, a1)));
  default:         /* (bit-vector size) */
    return jt_bit_vector_p(v) && (a1 == star || dims_match(S, v, jt_list(S, 1, a1)));
  }
}

/* An array type spec as subtypep compares it: simple or not, the upgraded
** element kind (-1: any), the rank (-1: any) and each dimension (-1: any;
** a list longer than any array's dimensions is not parsed). */
#define ARR_TYPE_RANKS RANK_LIMIT
typedef struct ArrType {
  bool simple;
  int elt, rank;
  int64_t dims[ARR_TYPE_RANKS];
} ArrType;

/* A dimension spec: *, a size, or a list of sizes and *s. */
static bool parse_type_dims(jt_State *S, jt_V spec, ArrType *t)
{
  if (sym_named(S, spec, "*")) { t->rank = -1; return true; }
  if (jt_isfix(spec)) {
    if (jt_fixval(spec) < 0 || jt_fixval(spec) > ARR_TYPE_RANKS) return false;
    t->rank = (int)jt_fixval(spec);
    for (int i = 0; i < t->rank; i++) t->dims[i] = -1;
    return true;
  }
  t->rank = 0;
  for (jt_V l = spec; jt_iscons(l); l = jt_cdr(l)) {
    if (t->rank == ARR_TYPE_RANKS) return false;
    jt_V d = jt_car(l);
    if (sym_named(S, d, "*")) t->dims[t->rank++] = -1;
    else if (jt_isfix(d) && jt_fixval(d) >= 0) t->dims[t->rank++] = jt_fixval(d);
    else return false;
  }
  return spec == JT_NIL || jt_iscons(spec);
}

/* Parse an array type (ARRAY, VECTOR, STRING, BIT-VECTOR, ..., atomic or
** compound) into *t; false for any other type. */
static bool parse_array_type(jt_State *S, jt_V type, ArrType *t)
{
  static const char *const names[] = {
    "ARRAY", "SIMPLE-ARRAY", "VECTOR", "SIMPLE-VECTOR", "STRING", "SIMPLE-STRING",
    "BASE-STRING", "SIMPLE-BASE-STRING", "BIT-VECTOR", "SIMPLE-BIT-VECTOR", NULL};
  jt_V head = jt_iscons(type) ? jt_car(type) : type, args = jt_iscons(type) ? jt_cdr(type) : JT_NIL;
  if (!jt_issymbol(head) || jt_symobj(S, head)->package != JT_PKG_LISP) return false;
  const char *n = jt_symname(S, head);
  int k = 0;
  while (names[k] && strcmp(names[k], n)) k++;
  if (!names[k]) return false;
  jt_V star = jt_intern(S, "*");
  jt_V a1 = jt_iscons(args) ? jt_car(args) : star;
  jt_V a2 = jt_iscons(args) && jt_iscons(jt_cdr(args)) ? jt_car(jt_cdr(args)) : star;
  t->simple = strncmp(n, "SIMPLE-", 7) == 0;
  t->rank = 1;
  t->dims[0] = -1;
  jt_V size = a1;
  switch (k) {
  case 0: case 1:   /* (array elt dims) */
    t->elt = a1 == star ? -1 : jt_upgraded_elt(S, a1);
    return parse_type_dims(S, a2, t);
  case 2:           /* (vector elt size) */
    t->elt = a1 == star ? -1 : jt_upgraded_elt(S, a1);
    size = a2;
    break;
  case 3: t->elt = JT_ELT_T; break;
  case 8: case 9: t->elt = JT_ELT_BIT; break;
  default: t->elt = JT_ELT_CHAR; break;
  }
  if (size == star) return true;
  if (!jt_isfix(size) || jt_fixval(size) < 0) return false;
  t->dims[0] = jt_fixval(size);
  return true;
}

/* Is every array of type a one of type b? */
static bool arr_subtype(const ArrType *a, const ArrType *b)
{
  if (b->simple && !a->simple) return false;
  if (b->elt >= 0 && a->elt != b->elt) return false;
  if (b->rank < 0) return true;
  if (a->rank != b->rank) return false;
  for (int i = 0; i < b->rank; i++)
    if (b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return false;
  return true;
}

int jt_array_subtypep(jt_State *S, jt_V a, jt_V b)
{
  ArrType ta, tb;
  bool pa = parse_array_type(S, a, &ta), pb = parse_array_type(S, b, &tb);
  if (pa && pb) return arr_subtype(&ta, &tb);
  if (pa) {
    bool lisp = jt_issymbol(b) && jt_symobj(S, b)->package == JT_PKG_LISP;
    if (lisp && sym_named(S, b, "SEQUENCE")) return ta.rank == 1;
    if (lisp && sym_named(S, b, "ATOM")) return 1;
    return -1;
  }
  return -1;
}

bool jt_array_type_spec_p(jt_State *S, jt_V type)
{
  ArrType t;
  return parse_array_type(S, type, &t);
}

/* The type-of of an array: a name, without element type or dimensions. */
jt_V jt_array_type_of(jt_State *S, jt_V v)
{
  bool simple = jt_simple_array_p(v);
  if (!jt_vectorp(v)) return jt_intern(S, simple ? "SIMPLE-ARRAY" : "ARRAY");
  switch (jt_array_elt(v)) {
  case JT_ELT_CHAR: return jt_intern(S, simple ? "SIMPLE-STRING" : "STRING");
  case JT_ELT_BIT: return jt_intern(S, simple ? "SIMPLE-BIT-VECTOR" : "BIT-VECTOR");
  default: return jt_intern(S, simple ? "SIMPLE-VECTOR" : "VECTOR");
  }
}

/* The type-of of an array, as SBCL spells it: (SIMPLE-VECTOR n),
** (SIMPLE-ARRAY CHARACTER (n)), (SIMPLE-BIT-VECTOR n), (VECTOR T n),
** (VECTOR CHARACTER n), (BIT-VECTOR n) for a vector that is not simple (n
** its total size), (SIMPLE-ARRAY elt dims) or (ARRAY elt dims) otherwise. */
jt_V jt_array_type_spec(jt_State *S, jt_V v)
{
  jt_V *base = S->sp;
  JT_PUSH(S, v);
  bool simple = jt_simple_array_p(v);
  int elt = jt_array_elt(v);
  jt_V r;
  if (jt_vectorp(v)) {
    jt_V n = jt_mkfix((intptr_t)jt_array_total(v));
    if (simple && elt == JT_ELT_T) r = jt_list(S, 2, JT_SYM(S, SIMPLE_VECTOR), n);
    else if (simple && elt == JT_ELT_BIT) r = jt_list(S, 2, jt_intern(S, "SIMPLE-BIT-VECTOR"), n);
    else if (!simple && elt == JT_ELT_BIT) r = jt_list(S, 2, jt_intern(S, "BIT-VECTOR"), n);
    else if (simple) {
      r = jt_list(S, 1, n);
      r = jt_list(S, 3, jt_intern(S, "SIMPLE-ARRAY"), JT_SYM(S, CHARACTER), r);
    } else {
      r = jt_list(S, 3, JT_SYM(S, VECTOR), elt_type_name(S, elt), n);
    }
  } else {
    jt_V dims = JT_NIL;
    JT_PUSH(S, dims);
    for (int i = jt_array_rank(base[0]); i-- > 0;) {
      dims = jt_cons(S, jt_mkfix((intptr_t)jt_array_dim(base[0], i)), S->sp[-1]);
      S->sp[-1] = dims;
    }
    r = jt_list(S, 3, simple ? jt_intern(S, "SIMPLE-ARRAY") : JT_SYM(S, ARRAY),
                elt_type_name(S, jt_array_elt(base[0])), S->sp[-1]);
  }
  S->sp = base;
  return r;
}

/* Element i of any array without ever signalling (the printer's safe mode):
** false when a displaced array's target no longer holds it. */
bool jt_array_peek(jt_V a, size_t i, jt_V *out)
{
  for (int hops = 0; jt_is(a, JT_TARRAY); hops++) {
    jt_Array *h = jt_arr_(a);
    if (hops > DISPLACE_HOPS || (hops > 0 && i >= h->total)) return false;
    i += h->offset;
    a = h->data;
  }
  if (!is_vec_obj(a) || i >= vec_total(a)) return false;
  *out = jt_isvector(a) ? jt_vec_(a)->items[i] : jt_mkchar(jt_str_(a)->chars[i]);
  return true;
}

/* An array of rank `rank` whose elements are the nested sequences
** `contents` (the reader's #nA): dimensions from the first element at each
** level, every other element checked against them. */
jt_V jt_make_array_from_contents(jt_State *S, int rank, jt_V contents)
{
  size_t dims[RANK_LIMIT], total = 1;
  if (rank < 0 || rank > RANK_LIMIT) jt_error(S, "an array may have at most %d dimensions", RANK_LIMIT);
  jt_V x = contents;
  for (int i = 0; i < rank; i++) {
    if (!jt_islist(x) && !jt_vectorp(x)) jt_type_error(S, x, JT_SYM(S, SEQUENCE));
    dims[i] = seq_len(S, x);
    total *= dims[i];
    if (dims[i] == 0) {   /* nothing below to look at: the rest are 0 */
      for (int j = i + 1; j < rank; j++) dims[j] = 0;
      break;
    }
    x = jt_islist(x) ? jt_car(x) : jt_array_ref(S, x, 0);
  }
  jt_V kv[NKEYS] = {JT_NOVALUE, JT_NOVALUE, contents, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE, JT_NOVALUE};
  return make_array(S, rank, dims, total, kv);
}
