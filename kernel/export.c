/*
** export.c — the canonical encoding of readable values.
**
** The bytes depend only on the value, never on heap layout, so equal
** worlds export identical bytes and content hashes.  (A hash table's order
** is part of its value: its pairs go in its insertion order.)  Format (one tag byte, then the payload; lengths and counts are
** unsigned LEB128):
**
**   'N' nil            'T' t              'U' unbound marker
**   'I' len digits     integer in decimal ("-" allowed)
**   'R' len text       ratio "n/d"
**   'F' 8 bytes        double-float, IEEE-754 big-endian
**   'f' 4 bytes        single-float, IEEE-754 big-endian
**   'X' re im          complex number: its two parts
**   'G' 32 bytes       random state: its four words, big-endian
**   'C' code           character
**   'S' len utf8       simple string
**   'B' n bytes        simple bit vector of n bits, packed 8 to a byte from
**                      the most significant bit
**   'A' flags elt rank dims [fill] elements
**                      any other array: flags 1 adjustable, 2 fill pointer;
**                      elt 0 T (encoded values), 1 characters (codes),
**                      2 bits (packed as in 'B'); dims and fill in LEB128;
**                      the elements in row-major order (a displaced array
**                      is stored with its own copy of its elements)
**   'Y' pkg len name   symbol: pkg 1 the symbol this name designates in
**                      COMMON-LISP-USER, 2 a keyword, 0 uninterned; or
**   'Y' 3 len pkgname len name  a symbol of another home package
**                      (a kernel-internal symbol is refused, and so is a
**                      name with a NUL character, which names cannot carry)
**   'Y' 4 k            the k-th uninterned symbol (from 0) written before
**                      in this value, again: a gensym stays one symbol
**   'L' n items tail   proper or dotted list: n elements then the tail
**   'V' n items        simple vector
**   'H' test n (k v)*  hash table, pairs in the table's (insertion) order
**   'D' name n (slot v)*  structure instance (by type name and slot names)
**   'O' name n (slot v)*  instance of a standard class: its local slots in
**                      the class's order, 'U' for an unbound one (the
**                      :class slots are exported with the class)
**
** Anything else (functions, streams, restarts, layouts, foreign pointers)
** and circular structure is refused with a reason.
*/
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_grow.h"
#include "jt_world.h"
#include "jt_clos.h"

#define MAX_DEPTH 10000

/* Encoding is work the caller asked for in one step, possibly a great deal
** of it (a DAG shared 60 levels deep has 2^60 nodes to write): it is paid
** for as it goes, a unit of fuel per four values, and the encoding itself
** may not outgrow the heap limit.  A budget running out stops the encoder
** with one of these reasons, so that the caller can free what it holds
** before signalling the limit (jt_encode_limit). */
const char jt_encode_out_of_fuel[] = "the fuel limit was reached while encoding";
const char jt_encode_out_of_heap[] = "the heap limit was reached while encoding";

typedef struct Enc {
  jt_State *S;
  jt_Buf *out;
  const char **why;    /* set on failure */
  jt_Obj **path;       /* objects on the current path: cycle detection */
  int depth;
  size_t cap;
  struct Meter *meter;  /* work done and paid for (shared with sub-encoders) */
  jt_Obj **gensyms;     /* open-addressing set of the uninterned symbols written */
  uint32_t *gensym_at;  /* beside each: its number, in the order written */
  size_t ngensyms, capgensyms;
} Enc;

/* Work is counted in units of about one value written; every 64 units or
** more are paid at a unit of fuel per four. */
typedef struct Meter { uint64_t work, paid; } Meter;

static bool enc_paid(Enc *e) {
  jt_State *S = e->S;
  Meter *m = e->meter;
  if (++m->work - m->paid < 64) return true;
  uint64_t owe = (m->work - m->paid) / 4;
  m->paid = m->work;
  if (S->limits.heap && e->out->n > S->limits.heap) { *e->why = jt_encode_out_of_heap; return false; }
  if (S->fuel_left <= owe) { *e->why = jt_encode_out_of_fuel; return false; }
  S->fuel_left -= owe;
  return true;
}

int jt_encode_limit(const char *why) {
  return why == jt_encode_out_of_fuel ? JT_LIMIT_FUEL : why == jt_encode_out_of_heap ? JT_LIMIT_HEAP : -1;
}

void jt_put_uleb(jt_Buf *b, uint64_t v) {
  do {
    unsigned char c = v & 0x7F;
    v >>= 7;
    if (v) c |= 0x80;
    jt_buf_putc(b, (char)c);
  } while (v);
}

static void put_bytes(jt_Buf *b, char tag, const char *s, size_t n) {
  jt_buf_putc(b, tag);
  jt_put_uleb(b, n);
  jt_buf_put(b, s, n);
}

static bool enc(Enc *e, jt_V v);

static bool push_path(Enc *e, jt_V v) {
  e->meter->work += (uint64_t)e->depth / 16;  /* the scan below is work too */
  for (int i = 0; i < e->depth; i++)
    if (e->path[i] == jt_o(v)) { *e->why = "circular structure"; return false; }
  if (e->depth >= MAX_DEPTH) { *e->why = "structure nested too deeply"; return false; }
  if ((size_t)e->depth == e->cap) {
    jt_Obj **p = jt_grow(e->path, &e->cap, e->cap + 1, sizeof *p, 64);
    if (!p) { *e->why = "out of memory"; return false; }
    e->path = p;
  }
  e->path[e->depth++] = jt_o(v);
  return true;
}

/* Does a symbol's name hold a NUL character?  Names are handed around as
** C strings (cname, the entries' names), which would cut it there, so that
** :|A<NUL>B| would be stored as :A. */
static bool name_has_nul(jt_V name) {
  if (jt_is(name, JT_TSTRING)) {
    const jt_String *str = jt_str_(name);
    for (size_t i = 0; i < str->len; i++)
      if (str->chars[i] == 0) return true;
    return false;
  }
  jt_V c = JT_NIL;
  for (size_t i = 0, n = jt_array_total(name); i < n; i++)
    if (jt_array_peek(name, i, &c) && c == jt_mkchar(0)) return true;
  return false;
}

/* The number of uninterned symbol o in this encoding (the order it was
** first written in), or -1 the first time, when it is given the next one. */
static int64_t gensym_seen(Enc *e, jt_Obj *o) {
  if ((e->ngensyms + 1) * 2 > e->capgensyms) {
    size_t ncap = jt_grow_cap(e->capgensyms, e->capgensyms + 1, sizeof(jt_Obj *), 16);
    jt_Obj **t = ncap ? calloc(ncap, sizeof *t) : NULL;
    uint32_t *at = ncap ? calloc(ncap, sizeof *at) : NULL;
    if (!t || !at) { free(t); free(at); return -2; }
    for (size_t i = 0; i < e->capgensyms; i++)
      if (e->gensyms[i]) {
        size_t k = ((uintptr_t)e->gensyms[i] >> 4) & (ncap - 1);
        while (t[k]) k = (k + 1) & (ncap - 1);
        t[k] = e->gensyms[i];
        at[k] = e->gensym_at[i];
      }
    free(e->gensyms);
    free(e->gensym_at);
    e->gensyms = t;
    e->gensym_at = at;
    e->capgensyms = ncap;
  }
  size_t k = ((uintptr_t)o >> 4) & (e->capgensyms - 1);
  for (; e->gensyms[k]; k = (k + 1) & (e->capgensyms - 1))
    if (e->gensyms[k] == o) return e->gensym_at[k];
  e->gensyms[k] = o;
  e->gensym_at[k] = (uint32_t)e->ngensyms++;
  return -1;
}

/* A symbol is named as the reader would name it in COMMON-LISP-USER: a bare
** name when that is what the name designates there (stores written before
** packages existed hold only such names, and keep meaning the same), else
** with its home package.  A kernel-internal symbol has no name a store can
** give back (the reader never makes one): user code that got hold of one
** cannot store it.  An uninterned symbol written a second time is a
** reference to the first, so that a macro's gensym, bound and used in the
** same stored form, is still one symbol when the form is read back. */
static bool put_symbol(Enc *e, jt_V v) {
  jt_State *S = e->S;
  if (jt_is_internal(v)) { *e->why = "a kernel-internal symbol"; return false; }
  jt_Symbol *s = jt_symobj(S, v);
  if (name_has_nul(s->name)) { *e->why = "a symbol whose name holds a NUL character"; return false; }
  jt_V home = jt_package_of_index(S, s->package);
  int kind = s->package == JT_PKG_KEYWORD ? 2
           : s->package == JT_PKG_NONE || home == JT_NIL || jt_pkg_(home)->name == JT_NIL ? 0
           : jt_symbol_accessible(S, v, jt_package_of_index(S, JT_PKG_USER)) ? 1 : 3;
  if (kind == 0) {
    int64_t at = gensym_seen(e, jt_o(v));
    if (at == -2) { *e->why = "out of memory"; return false; }
    if (at >= 0) {
      jt_buf_putc(e->out, 'Y');
      jt_buf_putc(e->out, 4);
      jt_put_uleb(e->out, (uint64_t)at);
      return true;
    }
  }
  jt_buf_putc(e->out, 'Y');
  jt_buf_putc(e->out, (char)kind);
  if (kind == 3) {
    size_t pn;
    char *p = jt_string_utf8(S, jt_pkg_(home)->name, &pn);
    jt_put_uleb(e->out, pn);
    jt_buf_put(e->out, p, pn);
    free(p);
  }
  size_t n = strlen(s->cname);
  jt_put_uleb(e->out, n);
  jt_buf_put(e->out, s->cname, n);
  return true;
}

/* A readtable's syntax table (55-io.lisp) names every function it holds:
** a macro character's or dispatch sub-character's function is a symbol, or
** a character standing for a standard reader macro. */
static bool readtable_named(jt_V syntax) {
  if (!jt_ishash(syntax)) return true;
  jt_Hash *h = jt_hash_(syntax);
  for (size_t i = 0; i < h->nentries; i++) {
    if (h->entries[i].key == JT_HASH_DELETED) continue;
    jt_V e = h->entries[i].val;
    if (jt_iscons(e) && !jt_issymbol(jt_car(e)) && !jt_ischar(jt_car(e))) return false;
    if (jt_isvector(e) && jt_vec_(e)->len == 3 && jt_ishash(jt_vec_(e)->items[1])) {
      jt_Hash *sub = jt_hash_(jt_vec_(e)->items[1]);
      for (size_t k = 0; k < sub->nentries; k++)
        if (sub->entries[k].key != JT_HASH_DELETED && !jt_issymbol(sub->entries[k].val) &&
            !jt_ischar(sub->entries[k].val))
          return false;
    }
  }
  return true;
}

/* A hash table: its pairs in its own order, which is insertion order
** (hash.c): order is something a program sees (maphash, loop), so it is
** part of the value, and comes back from an import. */
static bool enc_hash(Enc *e, jt_V v) {
  jt_Hash *h = jt_hash_(v);
  jt_buf_putc(e->out, 'H');
  jt_buf_putc(e->out, (char)h->h.aux);
  jt_put_uleb(e->out, h->count);
  bool ok = true;
  for (size_t i = 0; i < jt_hash_(v)->nentries && ok; i++) {
    jt_HashEntry *x = &jt_hash_(v)->entries[i];
    if (x->key == JT_HASH_DELETED) continue;
    ok = enc(e, x->key) && enc(e, jt_hash_(v)->entries[i].val);
  }
  return ok;
}

/* Bits 0..n-1 of a bit array, packed. */
static void put_bits(Enc *e, jt_V v, size_t n) {
  unsigned char byte = 0;
  for (size_t i = 0; i < n; i++) {
    jt_V b = JT_NIL;
    jt_array_peek(v, i, &b);
    if (b == jt_mkfix(1)) byte |= (unsigned char)(0x80 >> (i & 7));
    if ((i & 7) == 7) { jt_buf_putc(e->out, (char)byte); byte = 0; }
  }
  if (n & 7) jt_buf_putc(e->out, (char)byte);
}

/* Does every element of v exist (a displaced array's target may have
** shrunk since)? */
static bool displaced_fits(jt_V v) {
  jt_V x;
  size_t total = jt_array_total(v);
  return total == 0 || jt_array_peek(v, total - 1, &x);
}

/* 'A': an array that is not a simple vector, string or bit vector (or a
** displaced string: see below). */
static bool enc_array(Enc *e, jt_V v) {
  int elt = jt_array_elt(v), rank = jt_array_rank(v);
  uint16_t f = jt_o(v)->flags;
  size_t total = jt_array_total(v);
  jt_V x = JT_NIL;
  if (!displaced_fits(v)) {
    *e->why = "an array displaced to an array too small for it";
    return false;
  }
  if (rank == 1 && elt == JT_ELT_CHAR && !(f & (JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR))) {
    /* a displaced string: stored as a simple string of its characters */
    jt_V str = jt_simple_string_copy(e->S, v);
    size_t n;
    char *s = jt_string_utf8(e->S, str, &n);
    put_bytes(e->out, 'S', s, n);
    free(s);
    return true;
  }
  if (!push_path(e, v)) return false;
  jt_buf_putc(e->out, 'A');
  jt_buf_putc(e->out, (char)((f & JT_ARR_ADJUSTABLE ? 1 : 0) | (f & JT_ARR_FILLPTR ? 2 : 0)));
  jt_buf_putc(e->out, (char)elt);
  jt_put_uleb(e->out, (uint64_t)rank);
  for (int i = 0; i < rank; i++) jt_put_uleb(e->out, jt_array_dim(v, i));
  if (f & JT_ARR_FILLPTR) jt_put_uleb(e->out, jt_vector_length(v));
  bool ok = true;
  if (elt == JT_ELT_BIT) {
    put_bits(e, v, total);
  } else {
    for (size_t i = 0; i < total && ok; i++) {
      jt_array_peek(v, i, &x);
      if (elt == JT_ELT_CHAR) jt_put_uleb(e->out, jt_charcode(x));
      else ok = enc(e, x);
    }
  }
  e->depth--;
  return ok;
}

static bool enc(Enc *e, jt_V v) {
  jt_State *S = e->S;
  char tmp[64];
  if (!enc_paid(e)) return false;
  if (v == JT_NIL) { jt_buf_putc(e->out, 'N'); return true; }
  if (v == JT_T) { jt_buf_putc(e->out, 'T'); return true; }
  if (v == JT_UNBOUND) { jt_buf_putc(e->out, 'U'); return true; }
  if (jt_isfix(v)) {
    int n = snprintf(tmp, sizeof tmp, "%ld", (long)jt_fixval(v));
    put_bytes(e->out, 'I', tmp, (size_t)n);
    return true;
  }
  if (jt_ischar(v)) {
    jt_buf_putc(e->out, 'C');
    jt_put_uleb(e->out, jt_charcode(v));
    return true;
  }
  if (!jt_isptr(v)) { *e->why = "an internal marker"; return false; }
  switch (jt_type(v)) {
    case JT_TBIGNUM: {
      e->meter->work += 4 * jt_num_print_cost(v);  /* a conversion to digits: paid first */
      if (!enc_paid(e)) return false;
      char *s = mpz_get_str(NULL, 10, jt_big_(v)->z);
      put_bytes(e->out, 'I', s, strlen(s));
      free(s);
      return true;
    }
    case JT_TRATIO: {
      e->meter->work += 4 * jt_num_print_cost(v);
      if (!enc_paid(e)) return false;
      char *s = mpq_get_str(NULL, 10, jt_ratio_(v)->q);
      put_bytes(e->out, 'R', s, strlen(s));
      free(s);
      return true;
    }
    case JT_TFLOAT: {
      if (jt_issingle(v)) {
        uint32_t bits;
        float f = (float)jt_floatval(v);
        memcpy(&bits, &f, 4);
        jt_buf_putc(e->out, 'f');
        for (int i = 3; i >= 0; i--) jt_buf_putc(e->out, (char)(bits >> (i * 8)));
        return true;
      }
      uint64_t bits;
      double d = jt_floatval(v);
      memcpy(&bits, &d, 8);
      jt_buf_putc(e->out, 'F');
      for (int i = 7; i >= 0; i--) jt_buf_putc(e->out, (char)(bits >> (i * 8)));
      return true;
    }
    case JT_TSTRING: {
      if (jt_o(v)->flags & (JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR)) return enc_array(e, v);
      size_t n;
      char *s = jt_string_utf8(S, v, &n);
      put_bytes(e->out, 'S', s, n);
      free(s);
      return true;
    }
    case JT_TSYMBOL: return put_symbol(e, v);
    case JT_TRANDOM:
      jt_buf_putc(e->out, 'G');
      for (int w = 0; w < 4; w++)
        for (int i = 7; i >= 0; i--) jt_buf_putc(e->out, (char)(((jt_Random *)v)->s[w] >> (i * 8)));
      return true;
    case JT_TCOMPLEX:
      jt_buf_putc(e->out, 'X');
      return enc(e, jt_complex_(v)->re) && enc(e, jt_complex_(v)->im);
    case JT_TCONS: {
      if (!push_path(e, v)) return false;
      size_t n = 0;
      jt_V l = v;
      /* a cycle through cdrs: bounded walk with a tortoise */
      jt_V slow = v;
      for (; jt_iscons(l); l = jt_cdr(l)) {
        n++;
        if ((n & 1) == 0) {
          slow = jt_cdr(slow);
          if (slow == jt_cdr(l)) { *e->why = "circular structure"; return false; }
        }
      }
      jt_buf_putc(e->out, 'L');
      jt_put_uleb(e->out, n);
      bool ok = true;
      for (l = v; jt_iscons(l) && ok; l = jt_cdr(l)) ok = enc(e, jt_car(l));
      if (ok) ok = enc(e, l);
      e->depth--;
      return ok;
    }
    case JT_TVECTOR: case JT_TARRAY: {
      /* a vector that is neither adjustable nor has a fill pointer is
      ** stored as a simple one (a displaced one with a copy of its
      ** elements), every other array with its shape */
      if (jt_array_rank(v) != 1 || (jt_o(v)->flags & (JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR)) ||
          jt_array_elt(v) == JT_ELT_CHAR || !displaced_fits(v))
        return enc_array(e, v);
      size_t n = jt_vector_length(v);
      if (jt_array_elt(v) == JT_ELT_BIT) {
        jt_buf_putc(e->out, 'B');
        jt_put_uleb(e->out, n);
        put_bits(e, v, n);
        return true;
      }
      if (!push_path(e, v)) return false;
      jt_buf_putc(e->out, 'V');
      jt_put_uleb(e->out, n);
      bool ok = true;
      jt_V x = JT_NIL;
      for (size_t i = 0; i < n && ok; i++) {
        jt_array_peek(v, i, &x);
        ok = enc(e, x);
      }
      e->depth--;
      return ok;
    }
    case JT_THASH: {
      if (!push_path(e, v)) return false;
      bool ok = enc_hash(e, v);
      e->depth--;
      return ok;
    }
    case JT_TSTRUCT: {
      if (jt_is_condition(v)) { *e->why = "a condition object"; return false; }
      jt_Layout *L = jt_layout_(jt_struct_(v)->layout);
      /* a readtable's and a pprint dispatch table's functions are kept by
      ** name: a function object has no form to rebuild it from */
      if (L->name == JT_SYM(e->S, READTABLE) && L->nslots == 2 && !readtable_named(jt_struct_(v)->slots[1])) {
        *e->why = "a readtable holding a function object (name the function: (set-macro-character char "
                  "'reader nil table) or (set-dispatch-macro-character #\\# char 'reader table) with "
                  "reader a defun)";
        return false;
      }
      if (L->name == jt_intern(e->S, "PPRINT-DISPATCH-TABLE") && L->nslots == 1) {
        for (jt_V l = jt_struct_(v)->slots[0]; jt_iscons(l); l = jt_cdr(l)) {
          jt_V entry = jt_car(l);
          jt_V fn = jt_iscons(entry) && jt_iscons(jt_cdr(entry)) && jt_iscons(jt_cdr(jt_cdr(entry)))
                        ? jt_car(jt_cdr(jt_cdr(entry))) : JT_NIL;
          if (!jt_issymbol(fn)) {
            *e->why = "a pprint dispatch table holding a function object (name the function: "
                      "(set-pprint-dispatch type 'printer priority table) with printer a defun)";
            return false;
          }
        }
      }
      if (!push_path(e, v)) return false;
      jt_buf_putc(e->out, 'D');
      bool ok = put_symbol(e, L->name);
      if (ok) jt_put_uleb(e->out, L->nslots);
      for (uint32_t i = 0; i < L->nslots && ok; i++)
        ok = put_symbol(e, jt_vec_(L->slot_names)->items[i]) && enc(e, jt_struct_(v)->slots[i]);
      e->depth--;
      return ok;
    }
    case JT_TINSTANCE: {
      jt_V w = jt_inst_(v)->wrapper;
      if (!jt_is(jt_vec_(w)->items[JT_W_CLASS], JT_TCLASS)) { *e->why = "an internal object"; return false; }
      if (jt_instance_obsolete(v)) {
        *e->why = "an instance of a class redefined since the instance was last used "
                  "(using it once, with slot-value say, brings it up to date)";
        return false;
      }
      if (!push_path(e, v)) return false;
      jt_Vector *names = jt_vec_(jt_vec_(w)->items[JT_W_NAMES]);
      jt_buf_putc(e->out, 'O');
      put_symbol(e, jt_class_(jt_vec_(w)->items[JT_W_CLASS])->name);
      jt_put_uleb(e->out, names->len);
      bool ok = true;
      for (size_t i = 0; i < names->len && ok; i++) {
        put_symbol(e, names->items[i]);
        ok = enc(e, jt_vec_(jt_inst_(v)->slots)->items[i]);
      }
      e->depth--;
      return ok;
    }
    case JT_TPRIM: case JT_TCLOSURE: case JT_TGENERIC: *e->why = "a function"; return false;
    case JT_TCLASS: *e->why = "a class"; return false;
    case JT_TMETHOD: *e->why = "a method"; return false;
    case JT_TSTREAM:
      *e->why = "a stream (a stream lasts for one transaction: keep what it holds, such as the string "
                "GET-OUTPUT-STREAM-STRING returns, and make the stream where it is needed)";
      return false;
    case JT_TRESTART: *e->why = "a restart"; return false;
    case JT_TFOREIGN: *e->why = "a foreign pointer"; return false;
    default: *e->why = "an internal object"; return false;
  }
}

bool jt_encode(jt_State *S, jt_V v, jt_Buf *out, const char **why) {
  Meter meter = {0, 0};
  Enc e = {S, out, why, NULL, 0, 0, &meter, NULL, NULL, 0, 0};
  bool ok = enc(&e, v);
  free(e.path);
  free(e.gensyms);
  free(e.gensym_at);
  return ok;
}

/* ----------------------------------------------------------------- decode */

typedef struct Dec {
  jt_State *S;
  const unsigned char *p;
  size_t n, pos;
  int depth;
  bool text;   /* for reading, not for use: structures and instances come
                  back as stand-ins that need no type (see decode_record),
                  and a package that does not exist is made (empty) */
  jt_V gensyms;     /* a vector of the uninterned symbols read so far, in
                       order ('Y' 4 names one again); rooted by decode */
  size_t ngensyms;
} Dec;

static JT_NORETURN void bad(Dec *d, const char *what) {
  jt_error(d->S, "corrupt entry encoding at byte %zu: %s", d->pos, what);
}

uint64_t jt_get_uleb(const unsigned char *p, size_t n, size_t *pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *pos < n; shift += 7) {
    unsigned char c = p[(*pos)++];
    v |= (uint64_t)(c & 0x7F) << shift;
    if (!(c & 0x80)) return v;
  }
  return UINT64_MAX;
}

static uint64_t get_uleb(Dec *d) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (d->pos >= d->n) bad(d, "truncated number");
    unsigned char c = d->p[d->pos++];
    v |= (uint64_t)(c & 0x7F) << shift;
    if (!(c & 0x80)) return v;
  }
  bad(d, "number too long");
}

static const char *get_span(Dec *d, size_t *len) {
  uint64_t n = get_uleb(d);
  if (n > d->n - d->pos) bad(d, "truncated text");
  const char *s = (const char *)d->p + d->pos;
  d->pos += n;
  *len = (size_t)n;
  return s;
}

static jt_V dec(Dec *d);

/* n packed bits into the bit array v from row-major index 0. */
static void get_bits(Dec *d, jt_V v, size_t n) {
  size_t nbytes = (n + 7) / 8;
  if (nbytes > d->n - d->pos) bad(d, "truncated bits");
  for (size_t i = 0; i < n; i++) {
    int bit = (d->p[d->pos + i / 8] >> (7 - (i & 7))) & 1;
    jt_array_set(d->S, v, i, jt_mkfix(bit));
  }
  d->pos += nbytes;
}

/* 'A' (the tag already read). */
static jt_V get_array(Dec *d) {
  jt_State *S = d->S;
  if (d->n - d->pos < 2) bad(d, "truncated array");
  int flags = d->p[d->pos++], elt = d->p[d->pos++];
  if (elt > JT_ELT_BIT || flags > 3) bad(d, "bad array header");
  uint64_t rank = get_uleb(d);
  if (rank > 64) bad(d, "bad array rank");
  jt_V *base = S->sp;
  jt_V dims = JT_NIL;
  JT_PUSH(S, dims);
  uint64_t total = 1;
  jt_V *cells = S->sp;
  for (uint64_t i = 0; i < rank; i++) {
    uint64_t n = get_uleb(d);
    if (n > (uint64_t)JT_FIXMAX || (n && total > (uint64_t)JT_FIXMAX / n)) bad(d, "array too large");
    total *= n;
    JT_PUSH(S, jt_mkfix((intptr_t)n));
  }
  if (total > (d->n - d->pos) * 8 + 8) bad(d, "array larger than its encoding");
  base[0] = jt_list_from(S, (int)rank, cells);
  size_t fill = 0;
  if (flags & 2) {
    if (rank != 1) bad(d, "fill pointer of an array that is not a vector");
    fill = get_uleb(d);
    if (fill > total) bad(d, "fill pointer beyond the array");
  }
  jt_V et = elt == JT_ELT_CHAR ? JT_SYM(S, CHARACTER) : elt == JT_ELT_BIT ? jt_intern(S, "BIT") : JT_T;
  jt_V args[] = {base[0], JT_SYM(S, K_ELEMENT_TYPE), et, JT_SYM(S, K_ADJUSTABLE),
                 jt_bool(flags & 1), JT_SYM(S, K_FILL_POINTER),
                 flags & 2 ? jt_mkfix((intptr_t)fill) : JT_NIL};
  for (int i = 0; i < 7; i++) JT_PUSH(S, args[i]);
  jt_V a = jt_apply(S, jt_fdefinition(S, jt_intern(S, "MAKE-ARRAY")), 7, S->sp - 7);
  S->sp = base;
  JT_PUSH(S, a);
  if (elt == JT_ELT_BIT) {
    get_bits(d, a, (size_t)total);
  } else {
    for (uint64_t i = 0; i < total; i++) {
      if (elt == JT_ELT_CHAR) {
        uint64_t c = get_uleb(d);
        if (c >= JT_CHAR_LIMIT) bad(d, "bad character");
        jt_array_set(S, S->sp[-1], (size_t)i, jt_mkchar((uint32_t)c));
      } else {
        jt_V x = dec(d);
        jt_array_set(S, S->sp[-1], (size_t)i, x);
      }
    }
  }
  jt_V r = S->sp[-1];
  S->sp = base;
  return r;
}

static jt_V get_symbol(Dec *d) {
  if (d->pos >= d->n || d->p[d->pos] != 'Y') bad(d, "expected a symbol");
  d->pos++;
  if (d->pos >= d->n) bad(d, "truncated symbol");
  int kind = d->p[d->pos++];
  if (kind == 4) {   /* an uninterned symbol read before */
    uint64_t k = get_uleb(d);
    if (k >= d->ngensyms) bad(d, "reference to an uninterned symbol not read before");
    return jt_vec_(d->gensyms)->items[k];
  }
  size_t len, plen = 0;
  const char *p = NULL;
  if (kind == 3) p = get_span(d, &plen);
  const char *s = get_span(d, &len);
  switch (kind) {
  case 0: {
    jt_State *S = d->S;
    jt_V sym = jt_make_symbol(S, jt_string_from_utf8(S, s, len));
    if (d->gensyms == JT_NIL || d->ngensyms == jt_vec_(d->gensyms)->len) {
      JT_PUSH(S, sym);
      size_t n = d->ngensyms ? 2 * d->ngensyms : 8;
      jt_V v = jt_make_vector(S, n, JT_NIL);
      for (size_t i = 0; i < d->ngensyms; i++) jt_vec_(v)->items[i] = jt_vec_(d->gensyms)->items[i];
      d->gensyms = v;
      JT_POP(S, 1);
    }
    jt_vec_(d->gensyms)->items[d->ngensyms++] = sym;
    return sym;
  }
  case 1: return jt_package_read_intern(d->S, jt_package_of_index(d->S, JT_PKG_USER), s, len);
  case 2: return jt_intern_bytes(d->S, s, len, JT_PKG_KEYWORD);
  case 3: {
    jt_V pkg = d->text ? jt_package_named_or_made(d->S, p, plen) : jt_package_named(d->S, p, plen);
    if (pkg == JT_NIL) jt_error(d->S, "import: package %.*s does not exist", (int)(plen > 200 ? 200 : plen), p);
    return jt_package_read_intern(d->S, pkg, s, len);
  }
  default: bad(d, "unknown package");
  }
}

/* 'D' and 'O': a type name and (slot value) pairs.  Pairs are read first
** (onto the stack), then the object is made: a structure of the named
** type, an instance of the named class (one whose class is not defined yet
** — a :class slot imported before the class of its value — gets a
** provisional layout the class adopts when it is defined).  In text mode
** both are stand-ins with their own unregistered layout, which print as
** #S(NAME ...) and #<NAME ...> without the type being known or any of
** the program's print-object methods running. */
static jt_V decode_record(Dec *d, char tag) {
  jt_State *S = d->S;
  jt_V *base = S->sp;
  jt_V name = get_symbol(d);
  JT_PUSH(S, name);                                /* base[0] */
  uint64_t n = get_uleb(d);
  if (n > d->n - d->pos) bad(d, "more slots than bytes");
  for (uint64_t i = 0; i < n; i++) {
    jt_V sn = get_symbol(d);
    JT_PUSH(S, sn);
    jt_V v = dec(d);
    JT_PUSH(S, v);
  }
  jt_V *pairs = base + 1;
  jt_V names = jt_make_vector(S, (size_t)n, JT_NIL);
  JT_PUSH(S, names);                               /* base[1 + 2n] */
  for (uint64_t i = 0; i < n; i++) jt_vec_(names)->items[i] = pairs[2 * i];
  jt_V obj;
  if (tag == 'D' && !d->text) {
    jt_V layout = jt_find_layout(S, base[0]);
    if (layout == JT_NIL) jt_error(S, "import: unknown structure type %s", jt_symname(S, base[0]));
    JT_PUSH(S, layout);
    obj = jt_make_struct(S, layout, jt_layout_(layout)->nslots);
    JT_PUSH(S, obj);
    for (uint64_t i = 0; i < n; i++) {
      jt_Layout *L = jt_layout_(S->sp[-2]);
      bool placed = false;
      for (uint32_t k = 0; k < L->nslots && !placed; k++)
        if (jt_vec_(L->slot_names)->items[k] == pairs[2 * i]) {
          jt_struct_(S->sp[-1])->slots[k] = pairs[2 * i + 1];
          placed = true;
        }
      if (!placed)
        jt_error(S, "import: structure %s has no slot %s", jt_symname(S, base[0]), jt_symname(S, pairs[2 * i]));
    }
  } else if (tag == 'D') {
    jt_Layout *L = (jt_Layout *)jt_alloc(S, JT_TLAYOUT, sizeof(jt_Layout));
    L->name = base[0];
    L->parents = L->initargs = L->initforms = L->report = L->info = L->class = JT_NIL;
    L->slot_names = S->sp[-1];
    L->nslots = (uint32_t)n;
    JT_PUSH(S, (jt_V)L);
    obj = jt_make_struct(S, (jt_V)L, (uint32_t)n);
    for (uint64_t i = 0; i < n; i++) jt_struct_(obj)->slots[i] = pairs[2 * i + 1];
    JT_PUSH(S, obj);
  } else {
    obj = d->text ? jt_instance_stand_in(S, base[0], S->sp[-1])
                  : jt_instance_for_import(S, base[0], S->sp[-1]);
    JT_PUSH(S, obj);
    for (uint64_t i = 0; i < n; i++)
      if (!jt_instance_import_slot(S, S->sp[-1], pairs[2 * i], pairs[2 * i + 1]))
        jt_error(S, "import: class %s has no slot %s", jt_symname(S, base[0]), jt_symname(S, pairs[2 * i]));
  }
  obj = S->sp[-1];
  S->sp = base;
  return obj;
}

static jt_V dec(Dec *d) {
  jt_State *S = d->S;
  if (d->pos >= d->n) bad(d, "truncated value");
  if (++d->depth > MAX_DEPTH) bad(d, "nested too deeply");
  char tag = (char)d->p[d->pos];
  jt_V r;
  size_t len;
  const char *s;
  switch (tag) {
    case 'N': d->pos++; r = JT_NIL; break;
    case 'T': d->pos++; r = JT_T; break;
    case 'U': d->pos++; r = JT_UNBOUND; break;
    case 'I': case 'R': {
      d->pos++;
      s = get_span(d, &len);
      jt_V v = jt_num_parse(S, s, len, 10);  /* reads s[0..len) only */
      if (v == JT_NOVALUE || !jt_isrational(v)) bad(d, "bad number");
      r = v;
      break;
    }
    case 'F': {
      d->pos++;
      if (d->n - d->pos < 8) bad(d, "truncated float");
      uint64_t bits = 0;
      for (int i = 0; i < 8; i++) bits = (bits << 8) | d->p[d->pos++];
      double x;
      memcpy(&x, &bits, 8);
      if (!isfinite(x)) bad(d, "not a finite float");  /* the language has no infinities */
      r = jt_make_float(S, x);
      break;
    }
    case 'f': {
      d->pos++;
      if (d->n - d->pos < 4) bad(d, "truncated float");
      uint32_t bits = 0;
      for (int i = 0; i < 4; i++) bits = (bits << 8) | d->p[d->pos++];
      float x;
      memcpy(&x, &bits, 4);
      if (!isfinite(x)) bad(d, "not a finite float");
      r = jt_make_float_as(S, x, true);
      break;
    }
    case 'C': {
      d->pos++;
      uint64_t c = get_uleb(d);
      if (c >= JT_CHAR_LIMIT) bad(d, "bad character");
      r = jt_mkchar((uint32_t)c);
      break;
    }
    case 'S': d->pos++; s = get_span(d, &len); r = jt_string_from_utf8(S, s, len); break;
    case 'B': {
      d->pos++;
      uint64_t n = get_uleb(d);
      if (n > (d->n - d->pos) * 8) bad(d, "bit vector longer than its encoding");
      r = jt_make_simple_array1(S, JT_ELT_BIT, (size_t)n);
      JT_PUSH(S, r);
      get_bits(d, r, (size_t)n);
      JT_POP(S, 1);
      break;
    }
    case 'A': d->pos++; r = get_array(d); break;
    case 'G': {
      d->pos++;
      if (d->n - d->pos < 32) bad(d, "truncated random state");
      uint64_t words[4] = {0, 0, 0, 0};
      for (int w = 0; w < 4; w++)
        for (int i = 0; i < 8; i++) words[w] = (words[w] << 8) | d->p[d->pos++];
      r = jt_make_random_state(S, words);
      break;
    }
    case 'X': {
      d->pos++;
      jt_V re = dec(d);
      if (!jt_isreal(re)) bad(d, "bad complex part");
      JT_PUSH(S, re);
      jt_V im = dec(d);
      if (!jt_isreal(im) || jt_isfloat(re) != jt_isfloat(im)) bad(d, "bad complex part");
      r = jt_make_complex(S, S->sp[-1], im);
      JT_POP(S, 1);
      break;
    }
    case 'Y': r = get_symbol(d); break;
    case 'L': {
      d->pos++;
      uint64_t n = get_uleb(d);
      if (n > d->n - d->pos) bad(d, "list longer than its encoding");
      jt_V *base = S->sp;
      for (uint64_t i = 0; i < n; i++) { jt_V x = dec(d); JT_PUSH(S, x); }
      jt_V tail = dec(d);
      JT_PUSH(S, tail);
      for (uint64_t i = n; i > 0; i--) S->sp[-1] = jt_cons(S, base[i - 1], S->sp[-1]);
      r = S->sp[-1];
      S->sp = base;
      break;
    }
    case 'V': {
      d->pos++;
      uint64_t n = get_uleb(d);
      if (n > d->n - d->pos) bad(d, "vector longer than its encoding");
      jt_V vec = jt_make_vector(S, (size_t)n, JT_NIL);
      JT_PUSH(S, vec);
      for (uint64_t i = 0; i < n; i++) { jt_V x = dec(d); jt_vec_(S->sp[-1])->items[i] = x; }
      r = S->sp[-1];
      JT_POP(S, 1);
      break;
    }
    case 'H': {
      d->pos++;
      if (d->pos >= d->n) bad(d, "truncated hash table");
      int test = d->p[d->pos++];
      if (test > JT_HASH_EQUALP) bad(d, "bad hash table test");
      uint64_t n = get_uleb(d);
      if (n > d->n - d->pos) bad(d, "hash table larger than its encoding");
      jt_V h = jt_make_hash(S, test, (size_t)n);
      JT_PUSH(S, h);
      for (uint64_t i = 0; i < n; i++) {
        jt_V k = dec(d);
        JT_PUSH(S, k);
        jt_V v = dec(d);
        jt_hash_put(S, S->sp[-2], S->sp[-1], v);
        JT_POP(S, 1);
      }
      r = S->sp[-1];
      JT_POP(S, 1);
      break;
    }
    case 'D': case 'O': d->pos++; r = decode_record(d, tag); break;
    default: bad(d, "unknown tag");
  }
  d->depth--;
  return r;
}

static jt_V decode(jt_State *S, const unsigned char *bytes, size_t len, bool text) {
  Dec d = {S, bytes, len, 0, 0, text, JT_NIL, 0};
  JT_ROOT(S, d.gensyms);
  jt_V v = dec(&d);
  if (d.pos != len) bad(&d, "trailing bytes");
  JT_UNROOT(S, 1);
  return v;
}

static jt_V decode_at(jt_State *S, const unsigned char *bytes, size_t len, size_t *pos, bool text) {
  Dec d = {S, bytes, len, *pos, 0, text, JT_NIL, 0};
  JT_ROOT(S, d.gensyms);
  jt_V v = dec(&d);
  JT_UNROOT(S, 1);
  *pos = d.pos;
  return v;
}

jt_V jt_decode(jt_State *S, const unsigned char *bytes, size_t len) {
  return decode(S, bytes, len, false);
}
jt_V jt_decode_at(jt_State *S, const unsigned char *bytes, size_t len, size_t *pos) {
  return decode_at(S, bytes, len, pos, false);
}
jt_V jt_decode_text(jt_State *S, const unsigned char *bytes, size_t len) {
  return decode(S, bytes, len, true);
}
jt_V jt_decode_text_at(jt_State *S, const unsigned char *bytes, size_t len, size_t *pos) {
  return decode_at(S, bytes, len, pos, true);
}
