/*
** hash.c — hash tables.
**
** A table keeps its pairs in insertion order in entries[]; index[] is an
** open-addressing (linear probing) map from hash slots to entry numbers,
** -1 for an empty slot and -2 for a tombstone.  Removing a key turns its
** entry into a hole (key = JT_HASH_DELETED) and its slot into a tombstone;
** both disappear at the next rebuild, which compacts entries[] in order.
**
** Every slot of index[] that is not empty refers to an entry or a hole, so
** nentries counts exactly the used slots.  Keeping nentries <= entcap and
** idxcap >= entcap * 4/3 therefore bounds the load factor (tombstones
** included) by 0.75, and probing always finds an empty slot.
**
** Hashes are not stored; a rebuild rehashes the live keys.  Hashing and key
** comparison never allocate, so only the buffer allocations can collect.
*/
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "jt_lib.h"

#define SLOT_EMPTY   (-1)
#define SLOT_DELETED (-2)
#define MIN_ENTRIES  4
/* entry numbers are int32 */
#define MAX_ENTRIES  ((size_t)1 << 30)

/* -------------------------------------------------------------- hashing */

static uint64_t mix64(uint64_t x)
{
  /* a bijective finaliser: spreads address and small-integer bits evenly */
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static uint64_t combine(uint64_t h, uint64_t x)
{
  return mix64(h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

static uint64_t hash_double(double d)
{
  uint64_t bits;
  if (d == 0.0) d = 0.0;  /* -0.0 and 0.0 are = */
  memcpy(&bits, &d, sizeof bits);
  return mix64(bits ^ 0x5bd1e995ULL);
}

static uint64_t hash_int(int64_t n) { return mix64((uint64_t)n); }

/* Numbers under equalp compare by =, so 1, 1.0 and 2/2 must meet.  Integral
** values in fixnum range hash as integers; everything else hashes through a
** double.  A rational equal to a float converts to exactly that float (GMP's
** conversions truncate, and the value is representable), so = numbers always
** agree; unequal ones may collide, which is harmless. */
static uint64_t hash_number_equalp(jt_V v)
{
  if (jt_isfix(v)) return hash_int(jt_fixval(v));
  if (jt_isfloat(v)) {
    double d = jt_floatval(v);
    /* [-2^62, 2^62) is exactly the fixnum range */
    if (d == floor(d) && d >= -0x1p62 && d < 0x1p62)
      return hash_int((int64_t)d);
    return hash_double(d);
  }
  if (jt_isbig(v)) return hash_double(mpz_get_d(jt_big_(v)->z));
  if (jt_isratio(v)) return hash_double(mpq_get_d(jt_ratio_(v)->q));
  if (jt_iscomplex(v)) {
    /* = to a real when its imaginary part is zero: hash as that real */
    jt_V im = jt_complex_(v)->im;
    uint64_t h = hash_number_equalp(jt_complex_(v)->re);
    if (jt_isfloat(im) && jt_floatval(im) == 0.0) return h;
    return combine(h, hash_number_equalp(im));
  }
  return mix64(v);
}

/* A character's case-insensitive identity for equalp: the same folding
** as equalp and char-equal (jt_char_downcase), so equal keys hash alike. */
static uint32_t fold_char(uint32_t c) { return jt_char_downcase(c); }

static uint64_t hash_symbol(jt_State *S, jt_V v)
{
  return mix64((uint64_t)jt_symobj(S, v)->hash ^ 0x7f4a7c15ULL);
}

/* Structural hashing stops after BUDGET nodes or DEPTH levels, so circular
** and huge structure terminate.  Objects that are equal (equalp) have the
** same shape up to the cut, so they are cut at the same place and agree. */
#define HASH_BUDGET 64
#define HASH_DEPTH  8
#define CUT_HASH    0x2545f4914f6cdd1dULL

static uint64_t hash_rec(jt_State *S, jt_V v, int test, int depth, int *budget)
{
  if (--*budget < 0 || depth <= 0) return CUT_HASH;
  if (jt_isfix(v)) return test == JT_HASH_EQUALP ? hash_number_equalp(v)
                                                 : jt_num_hash(v);
  if (jt_ischar(v))
    return mix64(test == JT_HASH_EQUALP ? fold_char(jt_charcode(v))
                                        : jt_charcode(v));
  if (jt_issymbol(v)) return hash_symbol(S, v);
  if (!jt_isptr(v)) return mix64(v);
  switch (jt_type(v)) {
  case JT_TBIGNUM: case JT_TRATIO: case JT_TFLOAT: case JT_TCOMPLEX:
    return test == JT_HASH_EQUALP ? hash_number_equalp(v) : jt_num_hash(v);
  case JT_TCONS: {
    /* the cars of the spine, each one level deeper, then the tail */
    uint64_t h = 0x3c6ef372fe94f82aULL;
    while (jt_iscons(v) && *budget > 0) {
      h = combine(h, hash_rec(S, jt_car(v), test, depth - 1, budget));
      v = jt_cdr(v);
      --*budget;
    }
    if (!jt_iscons(v)) h = combine(h, hash_rec(S, v, test, depth - 1, budget));
    return h;
  }
  case JT_TSTRING: {
    jt_String *s = jt_str_(v);
    uint64_t h = hash_int((int64_t)s->len);
    if (test == JT_HASH_EQUAL) {
      /* equal compares strings by contents, case-sensitively: all of it */
      for (size_t i = 0; i < s->len; i++) h = (h ^ s->chars[i]) * 0x100000001b3ULL;
      return mix64(h);
    }
    /* equalp: a string and a general vector of the same characters are
    ** equalp, so both hash element by element with the same budget */
    for (size_t i = 0; i < s->len && *budget > 0; i++, --*budget)
      h = combine(h, mix64(fold_char(s->chars[i])));
    return h;
  }
  case JT_TVECTOR: case JT_TARRAY:
    if (test == JT_HASH_EQUAL && (jt_bit_vector_p(v) || jt_stringp(v))) {
      /* equal compares bit vectors and displaced strings by contents; a
      ** displaced string hashes as the simple string it equals */
      size_t n = jt_vector_length(v);
      uint64_t h = hash_int((int64_t)n);
      for (size_t i = 0; i < n; i++) {
        jt_V e = jt_array_ref(S, v, i);
        h = (h ^ (jt_ischar(e) ? jt_charcode(e) : (uint64_t)jt_fixval(e))) * 0x100000001b3ULL;
      }
      return mix64(h);
    }
    if (test == JT_HASH_EQUALP && !jt_vectorp(v)) {
      /* equalp arrays have the same dimensions */
      uint64_t h = hash_int((int64_t)jt_array_total(v));
      for (int i = 0; i < jt_array_rank(v); i++) h = combine(h, hash_int((int64_t)jt_array_dim(v, i)));
      return h;
    }
    if (test == JT_HASH_EQUALP && jt_is(v, JT_TARRAY)) {
      size_t n = jt_vector_length(v);
      uint64_t h = hash_int((int64_t)n);
      for (size_t i = 0; i < n && *budget > 0; i++, --*budget) {
        jt_V e = jt_array_ref(S, v, i);
        h = combine(h, jt_ischar(e) ? mix64(fold_char(jt_charcode(e)))
                                    : hash_rec(S, e, test, depth - 1, budget));
      }
      return h;
    }
    if (test == JT_HASH_EQUALP) {
      jt_Vector *vec = jt_vec_(v);
      uint64_t h = hash_int((int64_t)vec->len);
      for (size_t i = 0; i < vec->len && *budget > 0; i++, --*budget) {
        jt_V e = vec->items[i];
        /* characters cost exactly what they cost inside a string */
        h = combine(h, jt_ischar(e) ? mix64(fold_char(jt_charcode(e)))
                                    : hash_rec(S, e, test, depth - 1, budget));
      }
      return h;
    }
    break;
  case JT_TSTRUCT:
    if (test == JT_HASH_EQUALP || (test == JT_HASH_EQUAL && jt_pathname_p(S, v))) {
      jt_Struct *st = jt_struct_(v);
      uint64_t h = mix64((uint64_t)st->layout);
      /* a pathname's version is left out: EQUAL takes NIL for :NEWEST */
      uint32_t n = test == JT_HASH_EQUAL && st->h.aux ? st->h.aux - 1 : st->h.aux;
      for (uint32_t i = 0; i < n && *budget > 0; i++)
        h = combine(h, hash_rec(S, st->slots[i], test, depth - 1, budget));
      return h;
    }
    break;
  case JT_THASH:
    if (test == JT_HASH_EQUALP) return hash_int((int64_t)jt_hash_(v)->count);
    break;
  default:
    break;
  }
  return mix64(v);  /* identity: objects never move */
}

uint64_t jt_sxhash(jt_State *S, jt_V v, int test)
{
  switch (test) {
  case JT_HASH_EQ:
    return mix64(v);
  case JT_HASH_EQL:
    if (jt_isptr(v) && (jt_isbig(v) || jt_isratio(v) || jt_isfloat(v) || jt_iscomplex(v)))
      return jt_num_hash(v);
    return mix64(v);
  default: {
    int budget = HASH_BUDGET;
    return hash_rec(S, v, test, HASH_DEPTH, &budget);
  }
  }
}

static bool keys_match(jt_State *S, int test, jt_V a, jt_V b)
{
  if (a == b) return true;
  switch (test) {
  case JT_HASH_EQ: return false;
  case JT_HASH_EQL: return jt_eql(a, b);
  case JT_HASH_EQUAL: return jt_equal(S, a, b);
  default: return jt_equalp(S, a, b);
  }
}

/* ------------------------------------------------------------ the table */

static int table_test(jt_V h) { return jt_o(h)->aux; }

/* The slot holding `key`'s entry, or -1.  With `insert_at` non-NULL it
** also reports where a new entry for the key would go: the first tombstone
** met, else the empty slot that ended the probe. */
static long find_slot(jt_State *S, jt_Hash *t, jt_V key, uint64_t hash,
                      size_t *insert_at)
{
  size_t mask = t->idxcap - 1, i = hash & mask;
  long tomb = -1;
  int test = t->h.aux;
  for (;;) {
    int32_t e = t->index[i];
    if (e == SLOT_EMPTY) {
      if (insert_at) *insert_at = tomb >= 0 ? (size_t)tomb : i;
      return -1;
    }
    if (e == SLOT_DELETED) {
      if (tomb < 0) tomb = (long)i;
    } else if (keys_match(S, test, t->entries[e].key, key)) {
      return (long)i;
    }
    i = (i + 1) & mask;
  }
}

static size_t index_cap_for(size_t entcap)
{
  size_t want = entcap + entcap / 3 + 1, cap = 8;
  while (cap < want) cap <<= 1;
  return cap;
}

/* Replace the buffers by fresh ones for `entcap` entries, copying the live
** pairs in order.  The new buffers are allocated before anything changes:
** the allocation may collect, and the collector must see a sound table. */
static void rebuild(jt_State *S, jt_V h, size_t entcap)
{
  jt_Hash *t = jt_hash_(h);
  if (entcap > MAX_ENTRIES)
    jt_error(S, "hash table too large (more than %zu entries)", MAX_ENTRIES);
  size_t idxcap = index_cap_for(entcap);
  size_t entbytes = entcap * sizeof(jt_HashEntry), idxbytes = idxcap * sizeof(int32_t);
  /* Two jt_malloc calls would leak the first buffer if the second one
  ** signalled; account for both at once (this may collect or signal while
  ** nothing is allocated yet), then take the memory.  The collector frees
  ** the buffers with exactly these sizes. */
  jt_gc_account(S, entbytes + idxbytes);
  jt_HashEntry *ents = malloc(entbytes);
  int32_t *idx = malloc(idxbytes);
  if (!ents || !idx) {
    free(ents);
    free(idx);
    jt_gc_release(S, entbytes + idxbytes);
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory growing a hash table");
  }
  /* from here on nothing allocates, so the table can be swapped safely */
  memset(idx, 0xff, idxcap * sizeof(int32_t));  /* all SLOT_EMPTY */
  size_t n = 0, mask = idxcap - 1;
  for (size_t i = 0; i < t->nentries; i++) {
    jt_V k = t->entries[i].key;
    if (k == JT_HASH_DELETED) continue;
    size_t s = jt_sxhash(S, k, t->h.aux) & mask;
    while (idx[s] != SLOT_EMPTY) s = (s + 1) & mask;
    idx[s] = (int32_t)n;
    ents[n++] = t->entries[i];
  }
  for (size_t i = n; i < entcap; i++)
    ents[i] = (jt_HashEntry){JT_HASH_DELETED, JT_NIL};
  jt_HashEntry *oldents = t->entries;
  int32_t *oldidx = t->index;
  size_t oldentcap = t->entcap, oldidxcap = t->idxcap;
  t->entries = ents;
  t->index = idx;
  t->entcap = entcap;
  t->idxcap = idxcap;
  t->nentries = n;
  t->count = n;
  if (oldents) jt_free(S, oldents, oldentcap * sizeof(jt_HashEntry));
  if (oldidx) jt_free(S, oldidx, oldidxcap * sizeof(int32_t));
}

jt_V jt_make_hash(jt_State *S, int test, size_t size)
{
  if (test < JT_HASH_EQ || test > JT_HASH_EQUALP) test = JT_HASH_EQL;
  jt_V h = (jt_V)jt_alloc(S, JT_THASH, sizeof(jt_Hash));
  jt_o(h)->aux = (uint32_t)test;
  JT_ROOT(S, h);
  rebuild(S, h, size < MIN_ENTRIES ? MIN_ENTRIES : size);
  JT_UNROOT(S, 1);
  return h;
}

static jt_Hash *check_hash(jt_State *S, jt_V v)
{
  if (!jt_ishash(v)) jt_type_error(S, v, JT_SYM(S, HASH_TABLE));
  return jt_hash_(v);
}

jt_V jt_hash_get(jt_State *S, jt_V h, jt_V key, bool *found)
{
  jt_Hash *t = check_hash(S, h);
  long s = find_slot(S, t, key, jt_sxhash(S, key, table_test(h)), NULL);
  if (found) *found = s >= 0;
  return s >= 0 ? t->entries[t->index[s]].val : JT_NIL;
}

void jt_hash_put(jt_State *S, jt_V h, jt_V key, jt_V val)
{
  jt_Hash *t = check_hash(S, h);
  /* The barrier sees each slot written below before the raw index and
  ** count changes, and the whole table only when it is rebuilt: a put into
  ** a large old table must not make the collector rescan all of it. */
  uint64_t hash = jt_sxhash(S, key, table_test(h));
  size_t at;
  long s = find_slot(S, t, key, hash, &at);
  if (s >= 0) {
    JT_SET(S, h, t->entries[t->index[s]].val, val);
    return;
  }
  if (t->nentries == t->entcap) {
    /* Compact in place when holes make up half the entries; otherwise
    ** double.  Either way the key and value must survive the allocation. */
    size_t cap = t->count + 1 <= t->entcap / 2 ? t->entcap : t->entcap * 2;
    JT_TOUCH(S, h);  /* growth replaces the buffers: save them first */
    JT_ROOT(S, h); JT_ROOT(S, key); JT_ROOT(S, val);
    rebuild(S, h, cap);
    JT_UNROOT(S, 3);
    t = jt_hash_(h);
    find_slot(S, t, key, hash, &at);
  }
  size_t e = t->nentries;
  /* The spare entry holds sane values (see rebuild), so the barrier may log
  ** them like any other old value. */
  JT_SET(S, h, t->entries[e].key, key);
  JT_SET(S, h, t->entries[e].val, val);
  t->index[at] = (int32_t)e;
  t->nentries = e + 1;
  t->count++;
}

void jt_hash_reserve(jt_State *S, jt_V h, size_t n)
{
  jt_Hash *t = check_hash(S, h);
  if (n > MAX_ENTRIES) n = MAX_ENTRIES;
  if (n <= t->entcap) return;
  JT_TOUCH(S, h);  /* the buffers are replaced: save them first */
  JT_ROOT(S, h);
  rebuild(S, h, n);
  JT_UNROOT(S, 1);
}

bool jt_hash_rem(jt_State *S, jt_V h, jt_V key)
{
  jt_Hash *t = check_hash(S, h);
  long s = find_slot(S, t, key, jt_sxhash(S, key, table_test(h)), NULL);
  if (s < 0) return false;
  int32_t e = t->index[s];
  JT_SET(S, h, t->entries[e].key, JT_HASH_DELETED);
  JT_SET(S, h, t->entries[e].val, JT_NIL);
  t->index[s] = SLOT_DELETED;
  t->count--;
  return true;
}

void jt_hash_clear(jt_State *S, jt_V h)
{
  jt_Hash *t = check_hash(S, h);
  JT_TOUCH(S, h);
  for (size_t i = 0; i < t->nentries; i++) {
    if (t->entries[i].key == JT_HASH_DELETED) continue;
    JT_SET(S, h, t->entries[i].key, JT_HASH_DELETED);
    JT_SET(S, h, t->entries[i].val, JT_NIL);
  }
  memset(t->index, 0xff, t->idxcap * sizeof(int32_t));
  t->nentries = 0;
  t->count = 0;
}

/* ------------------------------------------------------------ built-ins */

static jt_V test_symbol(jt_State *S, int test)
{
  static const char *const names[] = {"EQ", "EQL", "EQUAL", "EQUALP"};
  return jt_intern(S, names[test]);
}

/* A :test designator (name or function object) as a JT_HASH_* code. */
static int parse_test(jt_State *S, jt_V v)
{
  for (int test = JT_HASH_EQ; test <= JT_HASH_EQUALP; test++) {
    jt_V sym = test_symbol(S, test);
    if (v == sym) return test;
    if (jt_isfunction(v) && v == jt_fdefinition(S, sym)) return test;
  }
  jt_V expected = jt_list(S, 5, JT_SYM(S, MEMBER), test_symbol(S, JT_HASH_EQ),
                          test_symbol(S, JT_HASH_EQL),
                          test_symbol(S, JT_HASH_EQUAL),
                          test_symbol(S, JT_HASH_EQUALP));
  jt_type_error(S, v, expected);
}

/* (make-hash-table &key test size rehash-size rehash-threshold weakness) */
JT_FN(f_make_hash_table)
{
  static const int keys[] = {JT_S_K_TEST, JT_S_K_SIZE, JT_S_K_REHASH_SIZE,
                             JT_S_K_REHASH_THRESHOLD, JT_S_K_WEAKNESS,
                             JT_S_K_SYNCHRONIZED};
  jt_V kv[6];
  jt_parse_keys(S, argc, argv, 0, keys, 6, kv);
  int test = kv[0] == JT_NOVALUE ? JT_HASH_EQL : parse_test(S, kv[0]);
  size_t size = 0;
  if (kv[1] != JT_NOVALUE) {
    size = jt_check_index(S, kv[1]);
    /* a hint only: a huge one must not preallocate the heap away */
    if (size > 4096) size = 4096;
  }
  /* rehash parameters are validated but have no effect: growth doubles */
  if (kv[2] != JT_NOVALUE) {
    jt_V r = kv[2];
    bool ok = (jt_isinteger(r) && jt_num_cmp(S, r, jt_mkfix(1)) >= 0)
           || (jt_isfloat(r) && jt_floatval(r) > 1.0);
    if (!ok)
      jt_type_error(S, r, jt_list(S, 3, JT_SYM(S, OR),
                                  jt_list(S, 2, JT_SYM(S, INTEGER), jt_mkfix(1)),
                                  JT_SYM(S, FLOAT)));
  }
  if (kv[3] != JT_NOVALUE) {
    jt_V r = kv[3];
    if (!jt_isreal(r) || jt_num_cmp(S, r, jt_mkfix(0)) < 0
        || jt_num_cmp(S, r, jt_mkfix(1)) > 0)
      jt_type_error(S, r, jt_list(S, 3, JT_SYM(S, REAL), jt_mkfix(0),
                                  jt_mkfix(1)));
  }
  return jt_make_hash(S, test, size);
}

/* (gethash key table &optional default) => value, present-p */
JT_FN(f_gethash)
{
  bool found;
  jt_V v = jt_hash_get(S, argv[1], argv[0], &found);
  if (!found) v = argc > 2 ? argv[2] : JT_NIL;
  return jt_values2(S, v, jt_bool(found));
}

/* (%set-gethash key table value) => value */
JT_FN(f_set_gethash)
{
  jt_hash_put(S, argv[1], argv[0], argv[2]);
  return argv[2];
}

JT_FN(f_remhash) { return jt_bool(jt_hash_rem(S, argv[1], argv[0])); }

JT_FN(f_clrhash)
{
  jt_hash_clear(S, argv[0]);
  return argv[0];
}

/* (maphash function table) => nil.  Walks entries by number, re-reading the
** bounds each step: the function may remhash or setf the current entry
** (allowed), and even insertions (undefined in CL) cannot crash.  Entries
** added during the walk are not visited, so it always ends. */
JT_FN(f_maphash)
{
  jt_V fn = jt_check_function(S, argv[0]);
  jt_V h = argv[1];
  size_t n = check_hash(S, h)->nentries;
  JT_ROOT(S, fn);
  for (size_t i = 0; i < n && i < jt_hash_(h)->nentries; i++) {
    jt_HashEntry e = jt_hash_(h)->entries[i];
    if (e.key == JT_HASH_DELETED) continue;
    jt_funcall(S, fn, 2, e.key, e.val);
  }
  JT_UNROOT(S, 1);
  return JT_NIL;
}

JT_FN(f_hash_table_count)
{
  return jt_mkfix(check_hash(S, argv[0])->count);
}

JT_FN(f_hash_table_p) { return jt_bool(jt_ishash(argv[0])); }

JT_FN(f_hash_table_test)
{
  check_hash(S, argv[0]);
  return test_symbol(S, table_test(argv[0]));
}

JT_FN(f_hash_table_size)
{
  return jt_mkfix(check_hash(S, argv[0])->entcap);
}

JT_FN(f_hash_table_rehash_size)
{
  check_hash(S, argv[0]);
  return jt_make_float_as(S, 2.0, true);  /* what growth actually does */
}

JT_FN(f_hash_table_rehash_threshold)
{
  check_hash(S, argv[0]);
  return jt_make_float_as(S, 0.75, true);
}

/* (sxhash object) => non-negative fixnum, equal objects alike */
JT_FN(f_sxhash)
{
  return jt_mkfix(jt_sxhash(S, argv[0], JT_HASH_EQUAL) & (uint64_t)JT_FIXMAX);
}

/* (%hash-table-pairs table) => fresh list of (key . value), insertion order */
JT_FN(f_hash_table_pairs)
{
  jt_V h = argv[0];
  check_hash(S, h);
  jt_V result = JT_NIL, pair = JT_NIL;
  JT_ROOT(S, result); JT_ROOT(S, pair);
  /* consing from the back; the collector does not change the table */
  for (size_t i = jt_hash_(h)->nentries; i-- > 0;) {
    jt_HashEntry e = jt_hash_(h)->entries[i];
    if (e.key == JT_HASH_DELETED) continue;
    pair = jt_cons(S, e.key, e.val);
    result = jt_cons(S, pair, result);
  }
  JT_UNROOT(S, 2);
  return result;
}

static const jt_Reg hash_fns[] = {
  {"MAKE-HASH-TABLE", f_make_hash_table, 0, -1,
   "(make-hash-table &key test size rehash-size rehash-threshold weakness) "
   "Return a new empty hash table; TEST is eq, eql (default), equal or equalp."},
  {"GETHASH", f_gethash, 2, 3,
   "(gethash key table &optional default) Return the value stored under KEY "
   "(or DEFAULT) and whether it was present."},
  {"%SET-GETHASH", f_set_gethash, 3, 3,
   "(%set-gethash key table value) Store VALUE under KEY; the setf of gethash."},
  {"REMHASH", f_remhash, 2, 2,
   "(remhash key table) Remove KEY's entry; true if there was one."},
  {"CLRHASH", f_clrhash, 1, 1,
   "(clrhash table) Remove every entry and return TABLE."},
  {"MAPHASH", f_maphash, 2, 2,
   "(maphash function table) Call FUNCTION with each key and value, in "
   "insertion order."},
  {"HASH-TABLE-COUNT", f_hash_table_count, 1, 1,
   "(hash-table-count table) Return the number of entries."},
  {"HASH-TABLE-P", f_hash_table_p, 1, 1,
   "(hash-table-p object) True if OBJECT is a hash table."},
  {"HASH-TABLE-TEST", f_hash_table_test, 1, 1,
   "(hash-table-test table) Return the name of the table's test."},
  {"HASH-TABLE-SIZE", f_hash_table_size, 1, 1,
   "(hash-table-size table) Return the number of entries the table holds "
   "before it grows."},
  {"HASH-TABLE-REHASH-SIZE", f_hash_table_rehash_size, 1, 1,
   "(hash-table-rehash-size table) Return the growth factor."},
  {"HASH-TABLE-REHASH-THRESHOLD", f_hash_table_rehash_threshold, 1, 1,
   "(hash-table-rehash-threshold table) Return the load at which it grows."},
  {"SXHASH", f_sxhash, 1, 1,
   "(sxhash object) Return a hash code, equal for equal objects."},
  {"%HASH-TABLE-PAIRS", f_hash_table_pairs, 1, 1,
   "(%hash-table-pairs table) Return a fresh list of (key . value) in "
   "insertion order."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_hash(jt_State *S) { jt_register(S, hash_fns); }
