/*
** obj.c — constructors, symbols, equality, types, argument checking and
** the small built-ins that belong to no other module.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_grow.h"
#include "jt_clos.h"
#include "jt_world.h"

/* ----------------------------------------------------------- constructors */

jt_V jt_cons(jt_State *S, jt_V car, jt_V cdr) {
  /* root the arguments: the allocation may collect */
  S->sp[0] = car;
  S->sp[1] = cdr;
  S->sp += 2;
  jt_Cons *c = (jt_Cons *)jt_alloc(S, JT_TCONS, sizeof(jt_Cons));
  S->sp -= 2;
  c->car = car;
  c->cdr = cdr;
  return (jt_V)c;
}

jt_V jt_list_from(jt_State *S, int n, const jt_V *items) {
  jt_V l = JT_NIL;
  JT_ROOT(S, l);
  for (int i = n - 1; i >= 0; i--) l = jt_cons(S, items[i], l);
  JT_UNROOT(S, 1);
  return l;
}

jt_V jt_list(jt_State *S, int n, ...) {
  jt_V *base = S->sp;
  if (base + n >= S->stack_end) jt_stack_overflow(S);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) *S->sp++ = va_arg(ap, jt_V);
  va_end(ap);
  jt_V l = jt_list_from(S, n, base);
  S->sp = base;
  return l;
}

jt_V jt_make_float(jt_State *S, double d) {
  jt_Float *f = (jt_Float *)jt_alloc(S, JT_TFLOAT, sizeof(jt_Float));
  f->d = d;
  return (jt_V)f;
}

jt_V jt_make_float_as(jt_State *S, double d, bool single) {
  jt_Float *f = (jt_Float *)jt_alloc(S, JT_TFLOAT, sizeof(jt_Float));
  if (single) {
    f->h.flags |= JT_FLOAT_SINGLE;
    d = (double)(float)d;
  }
  f->d = d;
  return (jt_V)f;
}

jt_V jt_make_vector(jt_State *S, size_t n, jt_V fill) {
  JT_PUSH(S, fill);
  jt_Vector *v = (jt_Vector *)jt_alloc(S, JT_TVECTOR, sizeof(jt_Vector));
  JT_PUSH(S, (jt_V)v);
  v->items = jt_malloc(S, (n ? n : 1) * sizeof(jt_V));
  for (size_t i = 0; i < n; i++) v->items[i] = fill;
  if (n == 0) v->items[0] = JT_NIL;
  v->len = n;
  v->cap = n ? n : 1;
  JT_POP(S, 2);
  return (jt_V)v;
}

jt_V jt_make_string(jt_State *S, size_t n, uint32_t fill) {
  jt_String *s = (jt_String *)jt_alloc(S, JT_TSTRING, sizeof(jt_String));
  JT_PUSH(S, (jt_V)s);
  s->chars = jt_malloc(S, (n ? n : 1) * sizeof(uint32_t));
  for (size_t i = 0; i < n; i++) s->chars[i] = fill;
  s->len = n;
  s->cap = n ? n : 1;
  JT_POP(S, 1);
  return (jt_V)s;
}

size_t jt_utf8_encode(uint32_t c, char out[4]) {
  if (c < 0x80) { out[0] = (char)c; return 1; }
  if (c < 0x800) { out[0] = (char)(0xC0 | (c >> 6)); out[1] = (char)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    out[0] = (char)(0xE0 | (c >> 12)); out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[2] = (char)(0x80 | (c & 0x3F)); return 3;
  }
  out[0] = (char)(0xF0 | (c >> 18)); out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((c >> 6) & 0x3F)); out[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

uint32_t jt_utf8_decode(const char *s, size_t len, size_t *i) {
  const unsigned char *p = (const unsigned char *)s;
  size_t k = *i;
  uint32_t c = p[k];
  int extra;
  uint32_t min;
  if (c < 0x80) { *i = k + 1; return c; }
  if ((c & 0xE0) == 0xC0) { extra = 1; c &= 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { extra = 2; c &= 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { extra = 3; c &= 0x07; min = 0x10000; }
  else { *i = k + 1; return 0xFFFD; }
  if (k + (size_t)extra >= len + 0 && k + (size_t)extra > len - 1) { *i = k + 1; return 0xFFFD; }
  for (int j = 1; j <= extra; j++) {
    if ((p[k + j] & 0xC0) != 0x80) { *i = k + 1; return 0xFFFD; }
    c = (c << 6) | (p[k + j] & 0x3F);
  }
  *i = k + 1 + (size_t)extra;
  if (c < min || c >= JT_CHAR_LIMIT || (c >= 0xD800 && c < 0xE000)) return 0xFFFD;
  return c;
}

jt_V jt_string_from_utf8(jt_State *S, const char *s, size_t len) {
  size_t ascii = 0;
  while (ascii < len && (unsigned char)s[ascii] < 0x80) ascii++;
  size_t n = ascii;
  for (size_t i = ascii; i < len; n++) jt_utf8_decode(s, len, &i);
  jt_V str = jt_make_string(S, n, 0);
  uint32_t *out = jt_str_(str)->chars;
  for (size_t k = 0; k < ascii; k++) out[k] = (unsigned char)s[k];
  size_t k = ascii;
  for (size_t i = ascii; i < len;) out[k++] = jt_utf8_decode(s, len, &i);
  return str;
}

/* One character of a Lisp string's UTF-8, as jt_utf8_encode wrote it: a
** surrogate code point (which a Lisp string may hold) is its three bytes
** ED A0..BF xx, and decodes back to itself, where jt_utf8_decode (for text
** from outside) reads it as U+FFFD.  Advances *i past it. */
uint32_t jt_utf8_decode_lisp(const char *s, size_t len, size_t *i) {
  const unsigned char *p = (const unsigned char *)s;
  size_t k = *i;
  if (p[k] == 0xED && k + 2 < len && (p[k + 1] & 0xE0) == 0xA0 && (p[k + 2] & 0xC0) == 0x80) {
    *i = k + 3;
    return 0xD000u | ((p[k + 1] & 0x3Fu) << 6) | (p[k + 2] & 0x3Fu);
  }
  return jt_utf8_decode(s, len, i);
}

/* A name's UTF-8 back into its string: the same characters (surrogates
** included) as the string it was encoded from. */
jt_V jt_string_from_name_utf8(jt_State *S, const char *s, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; n++) jt_utf8_decode_lisp(s, len, &i);
  jt_V str = jt_make_string(S, n, 0);
  uint32_t *out = jt_str_(str)->chars;
  for (size_t i = 0, k = 0; i < len; k++) out[k] = jt_utf8_decode_lisp(s, len, &i);
  return str;
}

jt_V jt_string_from_cstr(jt_State *S, const char *s) {
  return jt_string_from_utf8(S, s, strlen(s));
}

char *jt_string_utf8(jt_State *S, jt_V str, size_t *lenp) {
  jt_String *s = jt_str_(str);
  size_t n = 0;
  char tmp[4];
  for (size_t i = 0; i < s->len; i++) n += jt_utf8_encode(s->chars[i], tmp);
  char *out = malloc(n + 1);
  if (!out) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < s->len; i++) k += jt_utf8_encode(s->chars[i], out + k);
  out[k] = 0;
  if (lenp) *lenp = k;
  return out;
}

void jt_string_push(jt_State *S, jt_V str, uint32_t c) {
  jt_String *s = jt_str_(str);
  JT_TOUCH(S, str);
  if (s->len == s->cap) {
    size_t n = jt_grow_cap(s->cap < 8 ? 0 : s->cap, s->len + 1, sizeof(uint32_t), 16);
    if (!n) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    JT_PUSH(S, str);
    uint32_t *p = jt_realloc(S, s->chars, s->cap * sizeof(uint32_t), n * sizeof(uint32_t));
    JT_POP(S, 1);
    s->chars = p;
    s->cap = n;
  }
  s->chars[s->len++] = c;
}

void jt_string_append(jt_State *S, jt_V str, const uint32_t *cs, size_t n) {
  jt_String *s = jt_str_(str);
  JT_TOUCH(S, str);
  if (s->cap - s->len < n) {
    size_t cap = n <= SIZE_MAX - s->len ? jt_grow_cap(s->cap < 8 ? 0 : s->cap, s->len + n, sizeof(uint32_t), 16) : 0;
    if (!cap) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    /* the characters may be the string's own (a string written to a
    ** stream into itself): they move with the buffer */
    bool own = cs >= s->chars && cs < s->chars + s->cap;
    size_t at = own ? (size_t)(cs - s->chars) : 0;
    JT_PUSH(S, str);
    uint32_t *p = jt_realloc(S, s->chars, s->cap * sizeof(uint32_t), cap * sizeof(uint32_t));
    JT_POP(S, 1);
    s->chars = p;
    s->cap = cap;
    if (own) cs = p + at;
  }
  memmove(s->chars + s->len, cs, n * sizeof(uint32_t));
  s->len += n;
}

void jt_vector_push(jt_State *S, jt_V vec, jt_V v) {
  jt_Vector *x = jt_vec_(vec);
  JT_TOUCH(S, vec);
  if (x->len == x->cap) {
    size_t n = jt_grow_cap(x->cap < 8 ? 0 : x->cap, x->len + 1, sizeof(jt_V), 16);
    if (!n) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    JT_PUSH(S, vec);
    JT_PUSH(S, v);
    jt_V *p = jt_realloc(S, x->items, x->cap * sizeof(jt_V), n * sizeof(jt_V));
    JT_POP(S, 2);
    for (size_t i = x->cap; i < n; i++) p[i] = JT_NIL;
    x->items = p;
    x->cap = n;
  }
  JT_SET(S, vec, x->items[x->len], v);
  x->len++;
}

jt_V jt_make_foreign(jt_State *S, void *ptr, jt_V tag) {
  JT_PUSH(S, tag);
  jt_Foreign *f = (jt_Foreign *)jt_alloc(S, JT_TFOREIGN, sizeof(jt_Foreign));
  JT_POP(S, 1);
  f->ptr = ptr;
  f->tag = tag;
  return (jt_V)f;
}

/* ---------------------------------------------------------------- symbols */

static jt_V new_symbol(jt_State *S, jt_V name, const char *cname, size_t clen) {
  JT_PUSH(S, name);
  jt_Symbol *s = (jt_Symbol *)jt_alloc(S, JT_TSYMBOL, sizeof(jt_Symbol));
  JT_POP(S, 1);
  s->name = name;
  s->value = JT_UNBOUND;
  s->function = JT_UNBOUND;
  s->plist = JT_NIL;
  s->setf_fn = JT_UNBOUND;
  s->cname = malloc(clen + 1);
  if (!s->cname) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  memcpy(s->cname, cname, clen);
  s->cname[clen] = 0;
  s->hash = jt_symbol_name_hash(cname, clen);
  return (jt_V)s;
}

jt_V jt_make_symbol(jt_State *S, jt_V name) {
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  jt_V sym = new_symbol(S, name, c, len);
  free(c);
  return sym;
}

jt_V jt_make_symbol_utf8(jt_State *S, jt_V name, const char *utf8, size_t len) {
  return new_symbol(S, name, utf8, len);
}

jt_Symbol *jt_symobj(jt_State *S, jt_V sym) {
  if (sym == JT_NIL) return jt_sym_(S->nil_sym);
  if (sym == JT_T) return jt_sym_(S->t_sym);
  return jt_sym_(sym);
}

const char *jt_symname(jt_State *S, jt_V sym) {
  return jt_symobj(S, sym)->cname;
}

bool jt_iskeyword(jt_V v) {
  return jt_is(v, JT_TSYMBOL) && (jt_o(v)->flags & JT_SYM_KEYWORD);
}

jt_V jt_symbol_value(jt_State *S, jt_V sym) {
  if (sym == JT_NIL || sym == JT_T) return sym;
  jt_V v = jt_sym_(sym)->value;
  if (v == JT_UNBOUND) v = jt_unbound_variable_value(S, sym);
  JT_READ(S, JITI_READ_VARIABLE, sym, JT_NIL, v);
  return v;
}

void jt_set_symbol_value(jt_State *S, jt_V sym, jt_V v) {
  jt_Symbol *s = jt_symobj(S, sym);
  if (s->h.flags & JT_SYM_CONSTANT)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot set the constant %s", s->cname);
  /* A built-in symbol that is no variable (CAR, LIST) has no value of the
  ** world's: one set would outlive the transaction without being stored.
  ** The language's variables (*print-base*, ...) are reset instead. */
  if ((s->h.flags & (JT_SYM_BUILTIN | JT_SYM_LOCKED)) && !(s->h.flags & JT_SYM_SPECIAL) && !S->kernel_mode)
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR),
              "cannot set the value of %s: it is a built-in symbol, not a variable (define a variable of "
              "your own with DEFVAR)", s->cname);
  JT_SET(S, s, s->value, v);
}

jt_V jt_function_or_unbound(jt_State *S, jt_V name) {
  if (jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(name)) &&
      jt_issymbol(jt_car(jt_cdr(name))))
    return jt_symobj(S, jt_car(jt_cdr(name)))->setf_fn;
  if (!jt_issymbol(name)) jt_type_error(S, name, JT_SYM(S, SYMBOL));
  jt_V f = jt_symobj(S, name)->function;
  if (jt_is_macro(f) || (jt_symobj(S, name)->h.flags & JT_SYM_SPECFORM) || jt_is_internal(name))
    return JT_UNBOUND;
  return f;
}

jt_V jt_fdefinition(jt_State *S, jt_V name) {
  jt_V f = jt_function_or_unbound(S, name);
  return f != JT_UNBOUND ? f : jt_undefined_function_value(S, name);
}

jt_V jt_callee(jt_State *S, jt_V name) {
  jt_V f = jt_function_or_unbound(S, name);
  return f != JT_UNBOUND ? f : jt_undefined_function_callee(S, name);
}

/* The kernel's guarded helpers (those that define types or record entries
** without the checks of the public form that uses them) may be called
** only by kernel code: the closure calling the primitive now running was
** analysed in kernel mode, or a kernel library is being loaded.  User code
** that got hold of such a helper's symbol (from a macro expansion, say)
** gets an undefined function, as if it did not exist. */
void jt_check_kernel_caller(jt_State *S) {
  if (S->kernel_mode) return;
  jt_CallInfo *ci = S->ci, *caller = ci ? ci->prev : NULL;
  if (caller && jt_is(caller->fn, JT_TCLOSURE)) {
    const jt_Lambda *L = jt_clo_(caller->fn)->lam;
    if (L && L->kernel) return;
  }
  jt_undefined_function(S, ci && jt_is(ci->fn, JT_TPRIM) ? jt_prim_(ci->fn)->name : JT_NIL);
}

void jt_defglobal(jt_State *S, const char *name, jt_V value) {
  JT_PUSH(S, value);
  jt_V sym = jt_intern(S, name);
  jt_Symbol *s = jt_symobj(S, sym);
  s->h.flags |= JT_SYM_SPECIAL;
  s->value = value;
  JT_POP(S, 1);
}

void jt_bind(jt_State *S, jt_V sym, jt_V value) {
  jt_Symbol *s = jt_symobj(S, sym);
  if (S->nbind == S->bindcap) {
    jt_Binding *b = jt_grow(S->bindings, &S->bindcap, S->nbind + 1, sizeof *b, 64);
    if (!b) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    S->bindings = b;
  }
  S->bindings[S->nbind].sym = sym;
  S->bindings[S->nbind].old = s->value;
  S->nbind++;
  JT_SET(S, s, s->value, value);
}

void jt_unbind_to(jt_State *S, size_t nbind) {
  while (S->nbind > nbind) {
    S->nbind--;
    jt_Symbol *s = jt_symobj(S, S->bindings[S->nbind].sym);
    JT_SET(S, s, s->value, S->bindings[S->nbind].old);
  }
}

/* --------------------------------------------------------------- equality */

bool jt_eql(jt_V a, jt_V b) {
  if (a == b) return true;
  if (!jt_isptr(a) || !jt_isptr(b) || jt_type(a) != jt_type(b)) return false;
  switch (jt_type(a)) {
    case JT_TBIGNUM: case JT_TRATIO: case JT_TFLOAT: case JT_TCOMPLEX: return jt_num_eql(a, b);
    default: return false;
  }
}

static bool string_eq(jt_V a, jt_V b, bool fold) {
  jt_String *x = jt_str_(a), *y = jt_str_(b);
  if (x->len != y->len) return false;
  for (size_t i = 0; i < x->len; i++) {
    uint32_t c = x->chars[i], d = y->chars[i];
    if (c == d) continue;
    if (!fold || jt_char_downcase(c) != jt_char_downcase(d)) return false;
  }
  return true;
}

#define EQUAL_MAX_DEPTH 100000

/* Two vectors of the same active length and EQL elements (equal on bit
** vectors and displaced strings). */
static bool vectors_eql(jt_State *S, jt_V a, jt_V b) {
  size_t n = jt_vector_length(a);
  if (n != jt_vector_length(b)) return false;
  for (size_t i = 0; i < n; i++)
    if (!jt_eql(jt_array_ref(S, a, i), jt_array_ref(S, b, i))) return false;
  return true;
}

/* Comparing shared structure can visit far more nodes than it holds (a DAG
** of depth 60 has 2^60 paths): every 16 visits cost a unit of fuel. */
#define EQUAL_TICK(S, steps) do { if ((++*(steps) & 15u) == 0) jt_fuel_tick(S); } while (0)

static bool equal_rec(jt_State *S, jt_V a, jt_V b, int depth, uint64_t *steps) {
  jt_check_cstack(S);   /* the depth bound alone may be more than the C stack */
  for (;;) {
    if (jt_eql(a, b)) return true;
    EQUAL_TICK(S, steps);
    if (depth > EQUAL_MAX_DEPTH) jt_error(S, "structure too deep to compare (circular?)");
    if (jt_iscons(a) && jt_iscons(b)) {
      if (!equal_rec(S, jt_car(a), jt_car(b), depth + 1, steps)) return false;
      a = jt_cdr(a);
      b = jt_cdr(b);
      depth++;
      continue;
    }
    if (jt_isstring(a) && jt_isstring(b)) return string_eq(a, b, false);
    if ((jt_stringp(a) && jt_stringp(b)) || (jt_bit_vector_p(a) && jt_bit_vector_p(b)))
      return vectors_eql(S, a, b);
    if (jt_isstruct(a) && jt_isstruct(b) && jt_struct_(a)->layout == jt_struct_(b)->layout && jt_pathname_p(S, a)) {
      /* pathnames by their components; a version NIL is the newest, as
      ** SBCL has it (57-pathnames.lisp: the version is the last slot) */
      uint32_t n = jt_struct_(a)->h.aux;
      for (uint32_t i = 0; i < n; i++) {
        jt_V x = jt_struct_(a)->slots[i], y = jt_struct_(b)->slots[i];
        if (i == n - 1) {
          jt_V newest = jt_intern_keyword(S, "NEWEST");
          if (x == JT_NIL) x = newest;
          if (y == JT_NIL) y = newest;
        }
        if (!equal_rec(S, x, y, depth + 1, steps)) return false;
      }
      return true;
    }
    return false;
  }
}

bool jt_equal(jt_State *S, jt_V a, jt_V b) {
  uint64_t steps = 0;
  return equal_rec(S, a, b, 0, &steps);
}

static bool equalp_rec(jt_State *S, jt_V a, jt_V b, int depth, uint64_t *steps) {
  jt_check_cstack(S);
  for (;;) {
    if (a == b) return true;
    EQUAL_TICK(S, steps);
    if (depth > EQUAL_MAX_DEPTH) jt_error(S, "structure too deep to compare (circular?)");
    if (jt_ischar(a) && jt_ischar(b)) return jt_char_downcase(jt_charcode(a)) == jt_char_downcase(jt_charcode(b));
    if (jt_isnumber(a) && jt_isnumber(b)) return jt_num_equal(S, a, b);
    if (jt_iscons(a) && jt_iscons(b)) {
      if (!equalp_rec(S, jt_car(a), jt_car(b), depth + 1, steps)) return false;
      a = jt_cdr(a);
      b = jt_cdr(b);
      depth++;
      continue;
    }
    if (jt_isstring(a) && jt_isstring(b)) return string_eq(a, b, true);
    if (jt_arrayp(a) && jt_arrayp(b)) {
      /* vectors by their active elements, other arrays by dimensions */
      size_t n;
      if (jt_vectorp(a) && jt_vectorp(b)) {
        n = jt_vector_length(a);
        if (n != jt_vector_length(b)) return false;
      } else {
        int rank = jt_array_rank(a);
        if (rank != jt_array_rank(b)) return false;
        for (int i = 0; i < rank; i++)
          if (jt_array_dim(a, i) != jt_array_dim(b, i)) return false;
        n = jt_array_total(a);
      }
      for (size_t i = 0; i < n; i++)
        if (!equalp_rec(S, jt_array_ref(S, a, i), jt_array_ref(S, b, i), depth + 1, steps)) return false;
      return true;
    }
    if (jt_isstruct(a) && jt_isstruct(b)) {
      jt_Struct *x = jt_struct_(a), *y = jt_struct_(b);
      if (x->layout != y->layout || x->h.aux != y->h.aux) return false;
      for (uint32_t i = 0; i < x->h.aux; i++)
        if (!equalp_rec(S, x->slots[i], y->slots[i], depth + 1, steps)) return false;
      return true;
    }
    if (jt_ishash(a) && jt_ishash(b)) {
      jt_Hash *x = jt_hash_(a), *y = jt_hash_(b);
      if (x->count != y->count || x->h.aux != y->h.aux) return false;
      for (size_t i = 0; i < x->nentries; i++) {
        if (x->entries[i].key == JT_HASH_DELETED) continue;
        bool found;
        jt_V v = jt_hash_get(S, b, x->entries[i].key, &found);
        if (!found || !equalp_rec(S, x->entries[i].val, v, depth + 1, steps)) return false;
      }
      return true;
    }
    return false;
  }
}

bool jt_equalp(jt_State *S, jt_V a, jt_V b) {
  uint64_t steps = 0;
  return equalp_rec(S, a, b, 0, &steps);
}

/* ------------------------------------------------------------------ types */

static bool sym_is(jt_V v, const char *name) {
  return jt_is(v, JT_TSYMBOL) && strcmp(jt_sym_(v)->cname, name) == 0;
}

static bool in_range(jt_State *S, jt_V v, jt_V spec) {
  /* (type lo hi): bounds are *, a number, or (number) for exclusive */
  jt_V args = jt_cdr(spec);
  for (int k = 0; k < 2 && jt_iscons(args); k++, args = jt_cdr(args)) {
    jt_V b = jt_car(args);
    if (sym_is(b, "*")) continue;
    bool excl = jt_iscons(b);
    if (excl) b = jt_car(b);
    if (!jt_isreal(b)) jt_error(S, "malformed type specifier bound");
    int c = jt_num_cmp(S, v, b);
    if (k == 0 && (excl ? c <= 0 : c < 0)) return false;
    if (k == 1 && (excl ? c >= 0 : c > 0)) return false;
  }
  return true;
}

static JT_NORETURN void unknown_type(jt_State *S, jt_V type) {
  char *t = jt_print_cstr(S, type, true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf, "unknown type specifier: %s", t);
  free(t);
  jt_error(S, "%s", S->msgbuf);
}

/* The atomic type names typep knows without a layout: 1 or 0 whether v is
** of type n, -1 when n is not one of them (jt_check_type_definable asks
** with v = NIL to learn whether a name is taken). */
static int atomic_typep(jt_State *S, const char *n, jt_V v) {
  int arr = jt_array_typep(S, v, n, JT_NOVALUE);
  if (arr >= 0) return arr;
  int stream = jt_stream_typep(S, n, v);
  if (stream >= 0) return stream;
  switch (n[0]) {
    case 'A':
      if (!strcmp(n, "ATOM")) return !jt_iscons(v);
      break;
    case 'B':
      if (!strcmp(n, "BOOLEAN")) return v == JT_NIL || v == JT_T;
      if (!strcmp(n, "BIGNUM")) return jt_isbig(v);
      if (!strcmp(n, "BIT")) return v == jt_mkfix(0) || v == jt_mkfix(1);
      if (!strcmp(n, "BASE-CHAR")) return jt_ischar(v);
      break;
    case 'C':
      if (!strcmp(n, "CONS")) return jt_iscons(v);
      if (!strcmp(n, "CHARACTER")) return jt_ischar(v);
      if (!strcmp(n, "COMPILED-FUNCTION")) return jt_isfunction(v);
      if (!strcmp(n, "COMPLEX")) return jt_iscomplex(v);
      break;
    case 'D':
      if (!strcmp(n, "DOUBLE-FLOAT")) return jt_isfloat(v) && !jt_issingle(v);
      break;
    case 'E':
      /* every character is a base character */
      if (!strcmp(n, "EXTENDED-CHAR")) return 0;
      break;
    case 'F':
      if (!strcmp(n, "FIXNUM")) return jt_isfix(v);
      if (!strcmp(n, "FLOAT")) return jt_isfloat(v);
      if (!strcmp(n, "FUNCTION")) return jt_isfunction(v);
      break;
    case 'H':
      if (!strcmp(n, "HASH-TABLE")) return jt_ishash(v);
      break;
    case 'I':
      if (!strcmp(n, "INTEGER")) return jt_isinteger(v);
      break;
    case 'K':
      if (!strcmp(n, "KEYWORD")) return jt_iskeyword(v);
      break;
    case 'L':
      if (!strcmp(n, "LIST")) return jt_islist(v);
      if (!strcmp(n, "LONG-FLOAT")) return jt_isfloat(v) && !jt_issingle(v);
      break;
    case 'N':
      if (!strcmp(n, "NULL")) return v == JT_NIL;
      if (!strcmp(n, "NUMBER")) return jt_isnumber(v);
      break;
    case 'P':
      if (!strcmp(n, "PACKAGE")) return jt_is(v, JT_TPACKAGE);
      break;
    case 'R':
      if (!strcmp(n, "REAL")) return jt_isreal(v);
      if (!strcmp(n, "RATIONAL")) return jt_isrational(v);
      if (!strcmp(n, "RATIO")) return jt_isratio(v);
      if (!strcmp(n, "RESTART")) return jt_is(v, JT_TRESTART);
      if (!strcmp(n, "RANDOM-STATE")) return jt_is(v, JT_TRANDOM);
      break;
    case 'S':
      if (!strcmp(n, "SYMBOL")) return jt_issymbol(v);
      if (!strcmp(n, "SEQUENCE")) return jt_islist(v) || jt_vectorp(v);
      if (!strcmp(n, "SINGLE-FLOAT") || !strcmp(n, "SHORT-FLOAT")) return jt_issingle(v);
      if (!strcmp(n, "STANDARD-CHAR")) return jt_ischar(v) && (jt_charcode(v) == '\n' || (jt_charcode(v) >= 32 && jt_charcode(v) < 127));
      if (!strcmp(n, "STRUCTURE-OBJECT")) return jt_isstruct(v) && !jt_is_condition(v);
      if (!strcmp(n, "SIGNED-BYTE")) return jt_isinteger(v);
      break;
    case 'T':
      break;
    case 'U':
      if (!strcmp(n, "UNSIGNED-BYTE")) return jt_isinteger(v) && jt_num_cmp(S, v, jt_mkfix(0)) >= 0;
      break;
  }
  return -1;
}

/* The expansion of a DEFTYPE'd specifier: its expander applied to the
** specifier's arguments ARGS (a list). */
jt_V jt_type_expand(jt_State *S, jt_V expander, jt_V args) {
  jt_V *base = S->sp;
  JT_PUSH(S, expander);
  int n = 0;
  jt_Walk w = jt_walk(args);
  for (jt_V l = args; jt_iscons(l); l = jt_walk_next(S, &w, l), n++) JT_PUSH(S, jt_car(l));
  jt_V r = jt_apply(S, base[0], n, base + 1);
  S->sp = base;
  return r;
}

bool jt_typep(jt_State *S, jt_V v, jt_V type) {
  if (type == JT_T) return true;
  if (type == JT_NIL) return false;
  if (jt_iscons(type)) {
    /* a specifier made at run time may hold itself, in its car (depth) or
    ** along its cdrs (a circular list of alternatives) */
    jt_check_cstack(S);
    jt_V head = jt_car(type);
    jt_Walk w = jt_walk(jt_cdr(type));
    if (head == JT_SYM(S, OR)) {
      for (jt_V l = jt_cdr(type); jt_iscons(l); l = jt_walk_next(S, &w, l))
        if (jt_typep(S, v, jt_car(l))) return true;
      return false;
    }
    if (head == JT_SYM(S, AND)) {
      for (jt_V l = jt_cdr(type); jt_iscons(l); l = jt_walk_next(S, &w, l))
        if (!jt_typep(S, v, jt_car(l))) return false;
      return true;
    }
    if (head == JT_SYM(S, NOT) && jt_iscons(jt_cdr(type))) return !jt_typep(S, v, jt_car(jt_cdr(type)));
    if (head == JT_SYM(S, MEMBER)) {
      for (jt_V l = jt_cdr(type); jt_iscons(l); l = jt_walk_next(S, &w, l))
        if (jt_eql(v, jt_car(l))) return true;
      return false;
    }
    if (head == JT_SYM(S, EQL) && jt_iscons(jt_cdr(type))) return jt_eql(v, jt_car(jt_cdr(type)));
    if (head == JT_SYM(S, SATISFIES) && jt_iscons(jt_cdr(type)))
      return jt_funcall(S, jt_car(jt_cdr(type)), 1, v) != JT_NIL;
    if (head == JT_SYM(S, INTEGER)) return jt_isinteger(v) && in_range(S, v, type);
    if (head == JT_SYM(S, RATIONAL)) return jt_isrational(v) && in_range(S, v, type);
    if (head == JT_SYM(S, REAL)) return jt_isreal(v) && in_range(S, v, type);
    if (sym_is(head, "COMPLEX")) {
      /* (complex part-type): the parts are of the upgraded part type */
      if (!jt_iscomplex(v)) return false;
      jt_V pt = jt_iscons(jt_cdr(type)) ? jt_car(jt_cdr(type)) : jt_intern(S, "*");
      if (sym_is(pt, "*")) return true;
      jt_V up = jt_funcall(S, jt_fdefinition(S, jt_intern(S, "UPGRADED-COMPLEX-PART-TYPE")), 1, pt);
      return jt_typep(S, jt_complex_(v)->re, up);
    }
    if (head == JT_SYM(S, FLOAT)) return jt_isfloat(v) && in_range(S, v, type);
    if (head == JT_SYM(S, DOUBLE_FLOAT) || sym_is(head, "LONG-FLOAT"))
      return jt_isfloat(v) && !jt_issingle(v) && in_range(S, v, type);
    if (head == JT_SYM(S, SINGLE_FLOAT) || sym_is(head, "SHORT-FLOAT"))
      return jt_issingle(v) && in_range(S, v, type);
    if (head == JT_SYM(S, MOD) && jt_iscons(jt_cdr(type)))
      return jt_isinteger(v) && jt_num_cmp(S, v, jt_mkfix(0)) >= 0 && jt_num_cmp(S, v, jt_car(jt_cdr(type))) < 0;
    if (head == JT_SYM(S, UNSIGNED_BYTE)) {
      if (!jt_isinteger(v) || jt_num_cmp(S, v, jt_mkfix(0)) < 0) return false;
      if (!jt_iscons(jt_cdr(type)) || !jt_isfix(jt_car(jt_cdr(type)))) return true;
      intptr_t bits = jt_fixval(jt_car(jt_cdr(type)));
      if (jt_isfix(v)) return bits >= 62 || jt_fixval(v) < ((intptr_t)1 << bits);
      mpz_t z; mpz_init(z); jt_to_mpz(v, z);
      bool ok = mpz_sizeinbase(z, 2) <= (size_t)bits;
      mpz_clear(z);
      return ok;
    }
    if (sym_is(head, "SIGNED-BYTE")) {
      if (!jt_isinteger(v)) return false;
      if (!jt_iscons(jt_cdr(type)) || !jt_isfix(jt_car(jt_cdr(type)))) return true;
      intptr_t bits = jt_fixval(jt_car(jt_cdr(type)));
      if (jt_isfix(v)) return bits >= 63 || (jt_fixval(v) >= -((intptr_t)1 << (bits - 1)) &&
                                             jt_fixval(v) < ((intptr_t)1 << (bits - 1)));
      /* v in [-2^(bits-1), 2^(bits-1)) when v, or -v-1 for a negative v,
      ** has fewer than bits significant bits */
      mpz_t z; mpz_init(z); jt_to_mpz(v, z);
      if (mpz_sgn(z) < 0) mpz_com(z, z);
      bool ok = mpz_sgn(z) == 0 || mpz_sizeinbase(z, 2) < (size_t)bits;
      mpz_clear(z);
      return ok;
    }
    if (head == JT_SYM(S, CONS)) {
      if (!jt_iscons(v)) return false;
      jt_V a = jt_cdr(type);
      if (jt_iscons(a) && !sym_is(jt_car(a), "*") && !jt_typep(S, jt_car(v), jt_car(a))) return false;
      if (jt_iscons(a) && jt_iscons(jt_cdr(a)) && !sym_is(jt_car(jt_cdr(a)), "*") &&
          !jt_typep(S, jt_cdr(v), jt_car(jt_cdr(a)))) return false;
      return true;
    }
    if (jt_issymbol(head)) {
      int arr = jt_array_typep(S, v, jt_symname(S, head), jt_cdr(type));
      if (arr >= 0) return arr;
      jt_V expander = jt_meta_get(S, head, jt_intern(S, "%DEFTYPE"));
      if (expander != JT_NIL) return jt_typep(S, v, jt_type_expand(S, expander, jt_cdr(type)));
      return jt_typep(S, v, head);
    }
    unknown_type(S, type);
  }
  if (jt_is(type, JT_TCLASS)) return jt_clos_typep(S, v, type) == 1;
  if (!jt_issymbol(type)) unknown_type(S, type);
  int atomic = atomic_typep(S, jt_symname(S, type), v);
  if (atomic >= 0) return atomic;
  jt_V l = jt_find_layout(S, type);
  if (l != JT_NIL) return jt_isstruct(v) && jt_subtypep_layout(jt_struct_(v)->layout, l);
  int c = jt_clos_typep(S, v, type);   /* classes: defclass names, standard-object ... */
  if (c >= 0) return c;
  jt_V expander = jt_meta_get(S, type, jt_intern(S, "%DEFTYPE"));
  if (expander != JT_NIL) return jt_typep(S, v, jt_funcall(S, expander, 0));
  unknown_type(S, type);
}

jt_V jt_type_of(jt_State *S, jt_V v) {
  if (v == JT_NIL) return JT_SYM(S, NULL_);
  if (v == JT_T) return JT_SYM(S, BOOLEAN);
  /* integers and characters are named as SBCL names them, since programs
  ** print what type-of says: BIT, (INTEGER 0 most-positive-fixnum),
  ** FIXNUM (negative), (INTEGER most-positive-fixnum+1), BIGNUM
  ** (negative); STANDARD-CHAR, BASE-CHAR (other ASCII) or CHARACTER */
  if (jt_isfix(v)) {
    intptr_t n = jt_fixval(v);
    if (n == 0 || n == 1) return jt_intern(S, "BIT");
    if (n < 0) return JT_SYM(S, FIXNUM);
    return jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0), jt_mkfix(JT_FIXMAX));
  }
  if (jt_ischar(v)) {
    uint32_t c = jt_charcode(v);
    if (c == '\n' || (c >= 32 && c <= 126)) return JT_SYM(S, STANDARD_CHAR);
    return c < 128 ? jt_intern(S, "BASE-CHAR") : JT_SYM(S, CHARACTER);
  }
  if (jt_isbig(v) && mpz_sgn(jt_big_(v)->z) > 0) {
    jt_V lo = jt_num_add(S, jt_mkfix(JT_FIXMAX), jt_mkfix(1));
    JT_ROOT(S, lo);
    jt_V r = jt_list(S, 2, JT_SYM(S, INTEGER), lo);
    JT_UNROOT(S, 1);
    return r;
  }
  switch (jt_type(v)) {
    case JT_TCONS: return JT_SYM(S, CONS);
    case JT_TSYMBOL: return jt_iskeyword(v) ? JT_SYM(S, KEYWORD) : JT_SYM(S, SYMBOL);
    case JT_TSTRING: case JT_TVECTOR: case JT_TARRAY: return jt_array_type_spec(S, v);
    case JT_TBIGNUM: return JT_SYM(S, BIGNUM);
    case JT_TRATIO: return JT_SYM(S, RATIO);
    case JT_TFLOAT: return jt_issingle(v) ? JT_SYM(S, SINGLE_FLOAT) : JT_SYM(S, DOUBLE_FLOAT);
    case JT_TCOMPLEX: return jt_intern(S, "COMPLEX");
    case JT_TRANDOM: return jt_intern(S, "RANDOM-STATE");
    case JT_TPACKAGE: return jt_intern(S, "PACKAGE");
    case JT_THASH: return JT_SYM(S, HASH_TABLE);
    case JT_TPRIM: case JT_TCLOSURE: return JT_SYM(S, COMPILED_FUNCTION);
    case JT_TSTRUCT: return jt_layout_(jt_struct_(v)->layout)->name;
    case JT_TSTREAM: return jt_class_(jt_stream_class(S, v))->name;
    case JT_TRESTART: return JT_SYM(S, RESTART);
    case JT_TINSTANCE: case JT_TCLASS: case JT_TGENERIC: case JT_TMETHOD: return jt_clos_type_of(S, v);
    default: return JT_T;
  }
}

/* ------------------------------------------------------- argument checks */

intptr_t jt_check_fixnum(jt_State *S, jt_V v) {
  if (!jt_isfix(v)) jt_type_error(S, v, JT_SYM(S, FIXNUM));
  return jt_fixval(v);
}

size_t jt_check_index(jt_State *S, jt_V v) {
  if (!jt_isfix(v) || jt_fixval(v) < 0)
    jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0), jt_intern(S, "*")));
  return (size_t)jt_fixval(v);
}

jt_V jt_check_symbol(jt_State *S, jt_V v) {
  if (!jt_issymbol(v)) jt_type_error(S, v, JT_SYM(S, SYMBOL));
  return v;
}

jt_V jt_check_string(jt_State *S, jt_V v) {
  if (jt_isstring(v)) return v;
  /* a displaced string: its characters as a simple string */
  if (jt_stringp(v)) return jt_simple_string_copy(S, v);
  jt_type_error(S, v, JT_SYM(S, STRING));
}

jt_V jt_check_cons(jt_State *S, jt_V v) {
  if (!jt_iscons(v)) jt_type_error(S, v, JT_SYM(S, CONS));
  return v;
}

uint32_t jt_check_char(jt_State *S, jt_V v) {
  if (!jt_ischar(v)) jt_type_error(S, v, JT_SYM(S, CHARACTER));
  return jt_charcode(v);
}

jt_V jt_check_function(jt_State *S, jt_V v) {
  if (jt_isfunction(v)) return v;
  if (jt_issymbol(v)) return jt_fdefinition(S, v);
  jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, FUNCTION), JT_SYM(S, SYMBOL)));
}

jt_V jt_string_designator(jt_State *S, jt_V v) {
  if (jt_isstring(v)) return v;
  if (jt_stringp(v)) return jt_simple_string_copy(S, v);
  if (jt_issymbol(v)) return jt_symobj(S, v)->name;
  if (jt_ischar(v)) return jt_make_string(S, 1, jt_charcode(v));
  jt_type_error(S, v, jt_list(S, 4, JT_SYM(S, OR), JT_SYM(S, STRING), JT_SYM(S, SYMBOL), JT_SYM(S, CHARACTER)));
}

void jt_parse_keys(jt_State *S, int argc, jt_V *argv, int start, const int *keys, int nkeys,
                   jt_V *out) {
  for (int i = 0; i < nkeys; i++) out[i] = JT_NOVALUE;
  if ((argc - start) % 2) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "odd number of keyword arguments");
  bool allow = false;   /* the leftmost :allow-other-keys decides */
  for (int k = start; k < argc; k += 2)
    if (argv[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS)) { allow = argv[k + 1] != JT_NIL; break; }
  for (int k = start; k < argc; k += 2) {
    bool known = argv[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS);
    for (int i = 0; i < nkeys; i++)
      if (argv[k] == S->sym[keys[i]]) {
        known = true;
        if (out[i] == JT_NOVALUE) out[i] = argv[k + 1];
      }
    if (!known && !allow) {
      char *kn = jt_print_cstr(S, argv[k], true, 100);
      snprintf(S->msgbuf, sizeof S->msgbuf, "unknown keyword argument %s", kn);
      free(kn);
      jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
    }
  }
}

/* --------------------------------------------------------------- buffers */

static void buf_reserve(jt_Buf *b, size_t more) {
  if (more > SIZE_MAX - b->n - 1) abort();
  char *p = jt_grow(b->p, &b->cap, b->n + more + 1, 1, 64);
  if (!p) abort();  /* C-side message buffers only; tiny */
  b->p = p;
}

void jt_buf_put(jt_Buf *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void jt_buf_putc(jt_Buf *b, char c) { jt_buf_put(b, &c, 1); }
void jt_buf_puts(jt_Buf *b, const char *s) { jt_buf_put(b, s, strlen(s)); }

void jt_buf_printf(jt_Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)n;
}

/* The buffer as a C string for display: a NUL character the text holds
** (a string with (code-char 0) in it) would end the string early, and
** every row, value or entry shown through C would be cut there; it is
** shown as U+2400 SYMBOL FOR NULL instead.  Returns the buffer's string
** (never NULL; the caller frees it). */
char *jt_buf_cstr(jt_Buf *b) {
  if (!b->p) return strdup("");
  size_t nul = 0;
  for (size_t i = 0; i < b->n; i++) nul += b->p[i] == 0;
  if (!nul) return b->p;
  jt_Buf v = {0};
  buf_reserve(&v, b->n + 2 * nul);
  for (size_t i = 0; i < b->n; i++) {
    if (b->p[i]) jt_buf_putc(&v, b->p[i]);
    else jt_buf_put(&v, "\xe2\x90\x80", 3);
  }
  jt_buf_free(b);
  return v.p;
}

void jt_buf_free(jt_Buf *b) {
  free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* ----------------------------------------------------------- registration */

jt_V jt_make_prim(jt_State *S, jt_V name, jt_CFn fn, int minargs, int maxargs, const char *doc) {
  JT_PUSH(S, name);
  jt_Prim *p = (jt_Prim *)jt_alloc(S, JT_TPRIM, sizeof(jt_Prim));
  JT_POP(S, 1);
  p->fn = fn;
  p->minargs = (int16_t)minargs;
  p->maxargs = (int16_t)maxargs;
  p->name = name;
  p->doc = doc;
  return (jt_V)p;
}

void jt_register(jt_State *S, const jt_Reg *regs) {
  for (; regs->name; regs++) {
    jt_V sym = jt_intern(S, regs->name);
    jt_V p = jt_make_prim(S, sym, regs->fn, regs->minargs, regs->maxargs, regs->doc);
    jt_Symbol *s = jt_symobj(S, sym);
    if (regs->name[0] == '%' && strncmp(regs->name, "%SET-", 5) != 0) s->h.flags |= JT_SYM_INTERNAL;
    s->function = p;
    s->h.flags |= JT_SYM_LOCKED;
  }
}

/* ---------------------------------------------------------------- builtins */

JT_FN(f_car) { jt_V x = argv[0]; if (jt_iscons(x)) return jt_car(x); if (x == JT_NIL) return x; jt_type_error(S, x, JT_SYM(S, LIST)); }
JT_FN(f_cdr) { jt_V x = argv[0]; if (jt_iscons(x)) return jt_cdr(x); if (x == JT_NIL) return x; jt_type_error(S, x, JT_SYM(S, LIST)); }
JT_FN(f_cons) { return jt_cons(S, argv[0], argv[1]); }
JT_FN(f_eq) { return jt_bool(argv[0] == argv[1]); }
JT_FN(f_eql) { return jt_bool(jt_eql(argv[0], argv[1])); }
JT_FN(f_equal) { return jt_bool(jt_equal(S, argv[0], argv[1])); }
JT_FN(f_equalp) { return jt_bool(jt_equalp(S, argv[0], argv[1])); }
JT_FN(f_not) { return jt_bool(argv[0] == JT_NIL); }
JT_FN(f_atom) { return jt_bool(!jt_iscons(argv[0])); }
JT_FN(f_consp) { return jt_bool(jt_iscons(argv[0])); }
JT_FN(f_listp) { return jt_bool(jt_islist(argv[0])); }
JT_FN(f_symbolp) { return jt_bool(jt_issymbol(argv[0])); }
JT_FN(f_keywordp) { return jt_bool(jt_iskeyword(argv[0])); }
JT_FN(f_functionp) { return jt_bool(jt_isfunction(argv[0])); }
/* (typep object type): a FUNCTION or VALUES specifier with arguments is
** for declarations only (CLHS typep); declarations check such a type as
** FUNCTION. */
JT_FN(f_typep) {
  jt_V t = argv[1];
  if (jt_iscons(t) && (jt_car(t) == JT_SYM(S, FUNCTION) || sym_is(jt_car(t), "VALUES"))) {
    char *p = jt_print_cstr(S, t, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "%s is a type for declarations only: TYPEP takes FUNCTION without arguments", p);
    free(p);
    jt_error(S, "%s", S->msgbuf);
  }
  return jt_bool(jt_typep(S, argv[0], argv[1]));
}
JT_FN(f_type_of) { return jt_type_of(S, argv[0]); }
JT_FN(f_identity) { return argv[0]; }

JT_FN(f_symbol_name) { return jt_symobj(S, jt_check_symbol(S, argv[0]))->name; }

JT_FN(f_make_symbol) { return jt_make_symbol(S, jt_check_string(S, argv[0])); }

/* (gensym &optional x): a fresh uninterned symbol named X (default "G")
** followed by *gensym-counter*, which is incremented; an integer X is used
** as the suffix instead, and the counter stays. */
JT_FN(f_gensym) {
  jt_V prefix = JT_NIL, suffix;
  if (argc > 0 && jt_isstring(argv[0])) prefix = argv[0];
  else if (argc > 0 && !(jt_isinteger(argv[0]) && jt_num_cmp(S, argv[0], jt_mkfix(0)) >= 0))
    jt_type_error(S, argv[0], jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, STRING), JT_SYM(S, UNSIGNED_BYTE)));
  if (argc > 0 && jt_isinteger(argv[0])) {
    suffix = argv[0];
  } else {
    suffix = jt_symbol_value(S, JT_SYM(S, GENSYM_COUNTER));
    if (!jt_isinteger(suffix) || jt_num_cmp(S, suffix, jt_mkfix(0)) < 0) {
      jt_V bad = suffix;
      jt_set_symbol_value(S, JT_SYM(S, GENSYM_COUNTER), jt_mkfix(0));
      jt_type_error(S, bad, JT_SYM(S, UNSIGNED_BYTE));
    }
    JT_PUSH(S, suffix);
    jt_set_symbol_value(S, JT_SYM(S, GENSYM_COUNTER), jt_num_add(S, suffix, jt_mkfix(1)));
    JT_POP(S, 1);
  }
  JT_PUSH(S, suffix);
  jt_Buf b = {0};
  jt_num_print(S, suffix, 10, false, &b);   /* decimal whatever *print-base* is */
  jt_V digits = jt_string_from_utf8(S, b.p, b.n);
  jt_buf_free(&b);
  JT_PUSH(S, digits);
  size_t np = prefix == JT_NIL ? 1 : jt_str_(prefix)->len, nd = jt_str_(digits)->len;
  jt_V name = jt_make_string(S, np + nd, 'G');
  if (prefix != JT_NIL) memcpy(jt_str_(name)->chars, jt_str_(prefix)->chars, np * sizeof(uint32_t));
  memcpy(jt_str_(name)->chars + np, jt_str_(digits)->chars, nd * sizeof(uint32_t));
  JT_POP(S, 2);
  return jt_make_symbol(S, name);
}

/* (copy-symbol symbol &optional copy-properties): a fresh uninterned
** symbol of the same name; with COPY-PROPERTIES also its value, function
** and property list (a copy of the list). */
JT_FN(f_copy_symbol) {
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, argv[0]));
  jt_V sym = jt_make_symbol(S, s->name);
  if (argc > 1 && argv[1] != JT_NIL && !jt_is_internal(argv[0])) {
    JT_PUSH(S, sym);
    jt_V plist = jt_funcall(S, jt_fdefinition(S, jt_intern(S, "COPY-LIST")), 1, s->plist);
    jt_Symbol *n = jt_sym_(S->sp[-1]);   /* fresh: filled without the barrier */
    n->plist = plist;
    n->value = s->value;
    n->function = s->function;
    n->h.flags |= s->h.flags & (JT_SYM_MACRO | JT_SYM_CONSTANT);
    JT_POP(S, 1);
  }
  return sym;
}

/* A symbol user code may reach the value cell of: not a kernel-internal
** one (those are unbound as far as user code can tell, and cannot be set). */
static jt_V user_variable(jt_State *S, jt_V v, bool setting) {
  jt_V sym = jt_check_symbol(S, v);
  if (jt_is_internal(sym)) {
    if (setting) jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot set the kernel-internal symbol %s", jt_symname(S, sym));
    jt_unbound_variable(S, sym);
  }
  return sym;
}

JT_FN(f_symbol_value) { return jt_symbol_value(S, user_variable(S, argv[0], false)); }
JT_FN(f_set) { jt_set_symbol_value(S, user_variable(S, argv[0], true), argv[1]); return argv[1]; }
JT_FN(f_set_symbol_value) { jt_set_symbol_value(S, user_variable(S, argv[0], true), argv[1]); return argv[1]; }

JT_FN(f_boundp) {
  jt_V s = jt_check_symbol(S, argv[0]);
  if (s == JT_NIL || s == JT_T) return JT_T;
  if (jt_is_internal(s)) return JT_NIL;
  return jt_bool(jt_sym_(s)->value != JT_UNBOUND);
}

JT_FN(f_makunbound) {
  jt_Symbol *s = jt_symobj(S, user_variable(S, argv[0], true));
  if (s->h.flags & JT_SYM_CONSTANT) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot unbind the constant %s", s->cname);
  JT_SET(S, s, s->value, JT_UNBOUND);
  return argv[0];
}

/* A function name: a symbol or (setf symbol); anything else is a
** type-error.  Returns the symbol; *setf tells which. */
static jt_V function_name(jt_State *S, jt_V n, bool *setf) {
  *setf = false;
  if (jt_issymbol(n)) return n;
  if (jt_iscons(n) && jt_car(n) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(n)) &&
      jt_issymbol(jt_car(jt_cdr(n))) && jt_cdr(jt_cdr(n)) == JT_NIL) {
    *setf = true;
    return jt_car(jt_cdr(n));
  }
  jt_V type = jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, SYMBOL),
                      jt_list(S, 3, JT_SYM(S, CONS), jt_list(S, 2, JT_SYM(S, EQL), JT_SYM(S, SETF)),
                              jt_list(S, 3, JT_SYM(S, CONS), JT_SYM(S, SYMBOL), JT_SYM(S, NULL_))));
  jt_type_error(S, n, type);
}

JT_FN(f_fboundp) {
  bool setf;
  jt_V sym = function_name(S, argv[0], &setf);
  if (setf) return jt_bool(jt_symobj(S, sym)->setf_fn != JT_UNBOUND);
  if (jt_is_internal(sym)) return JT_NIL;
  jt_Symbol *s = jt_symobj(S, sym);
  return jt_bool(s->function != JT_UNBOUND || (s->h.flags & JT_SYM_SPECFORM));
}

JT_FN(f_fmakunbound) {
  bool setf;
  jt_V sym = function_name(S, argv[0], &setf);
  jt_Symbol *s = jt_symobj(S, sym);
  if (s->h.flags & JT_SYM_LOCKED)
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot undefine the built-in %s", s->cname);
  jt_clos_forget_generic(S, setf ? s->setf_fn : s->function);
  if (setf) JT_SET(S, s, s->setf_fn, JT_UNBOUND);
  else JT_SET(S, s, s->function, JT_UNBOUND);
  if (S->world_define) S->world_define(S, argv[0], JT_DEF_FUNCTION_REMOVED, JT_NIL, JT_NIL);
  return argv[0];
}

/* (fdefinition name): a macro's or a special operator's name gives an
** object that is no function to call (the standard leaves it open): the
** macro function, or a function that says NAME is a special operator. */
JT_FN(f_fdefinition) {
  bool setf;
  jt_V sym = function_name(S, argv[0], &setf);
  if (!setf && !jt_is_internal(sym)) {
    jt_Symbol *s = jt_symobj(S, sym);
    if (jt_standard_macro_alias(S, sym) != JT_NIL)
      return jt_symobj(S, jt_intern(S, "%STANDARD-MACRO-EXPANDER"))->function;
    if (s->function != JT_UNBOUND && jt_is_macro(s->function)) return s->function;
    if (s->h.flags & JT_SYM_SPECFORM) return jt_symobj(S, jt_intern(S, "%SPECIAL-OPERATOR"))->function;
  }
  return jt_fdefinition(S, argv[0]);
}

JT_FN(f_special_operator) {
  JT_UNUSED_ARGS;
  jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "a special operator cannot be called as a function");
}

bool jt_names_declaration(jt_State *S, jt_V name) {
  return jt_issymbol(name) && jt_meta_get(S, name, jt_intern(S, "%DECLARATION")) != JT_NIL;
}

bool jt_names_type(jt_State *S, jt_V name) {
  if (!jt_issymbol(name)) return false;
  if (name == JT_T || name == JT_NIL) return true;
  jt_Symbol *s = jt_symobj(S, name);
  return (s->h.flags & JT_SYM_TYPE) || atomic_typep(S, s->cname, JT_NIL) >= 0 ||
         jt_find_layout(S, name) != JT_NIL || jt_find_class(S, name) != JT_NIL ||
         jt_meta_get(S, name, jt_intern(S, "%DEFTYPE")) != JT_NIL;
}

void jt_check_type_definable(jt_State *S, jt_V name, const char *what) {
  jt_Symbol *s = jt_symobj(S, name);
  /* CLHS (type): no symbol names both a type and a declaration */
  if (jt_names_declaration(S, name))
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "cannot define %s as %s: it is proclaimed a declaration name (choose another name)", s->cname,
              what);
  /* a keyword is a constant but no name of the language: SBCL takes it */
  bool builtin = (s->h.flags & (JT_SYM_LOCKED | JT_SYM_TYPE | JT_SYM_SPECFORM)) != 0 ||
                 (s->h.flags & (JT_SYM_CONSTANT | JT_SYM_KEYWORD)) == JT_SYM_CONSTANT;
  if (!builtin) builtin = atomic_typep(S, s->cname, JT_NIL) >= 0;  /* BIT, EXTENDED-CHAR, ... */
  if (builtin)
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot define %s as %s: it is a built-in name of the language",
              s->cname, what);
}

void jt_check_definable(jt_State *S, jt_Symbol *s, const char *what) {
  if (jt_definable(s)) return;
  jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot define %s as %s: it is a built-in %s", s->cname, what,
            s->h.flags & JT_SYM_SPECFORM ? "special operator"
            : s->h.flags & JT_SYM_CONSTANT ? "constant"
            : s->function == JT_UNBOUND ? "symbol (locked)"
            : jt_is_macro(s->function) ? "macro" : "function");
}

JT_FN(f_set_fdefinition) {
  /* (%set-fdefinition name function) */
  jt_V name = argv[0], fn = argv[1];
  if (!jt_isfunction(fn)) jt_type_error(S, fn, JT_SYM(S, FUNCTION));
  bool setf = false;
  if (jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(name))) {
    name = jt_car(jt_cdr(name));
    setf = true;
  }
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, name));
  jt_check_definable(S, s, setf ? "a setf function" : "a function");
  jt_clos_forget_generic(S, setf ? s->setf_fn : s->function);
  if (setf) JT_SET(S, s, s->setf_fn, fn);
  else JT_SET(S, s, s->function, fn);
  if (S->world_define) S->world_define(S, name, JT_DEF_FUNCTION_SET, JT_NIL, fn);
  return fn;
}

/* (%install-macro-function symbol expander): what (setf macro-function) does
** with the fresh closure it made around the program's function.  Like
** (setf fdefinition), the world keeps no form that makes it: a commit that
** would store it is refused (define it with DEFMACRO). */
JT_FN(f_install_macro_function) {
  jt_check_kernel_caller(S);
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, argv[0]));
  if (!jt_is(argv[1], JT_TCLOSURE)) jt_type_error(S, argv[1], JT_SYM(S, FUNCTION));
  jt_check_definable(S, s, "a macro");
  jt_clos_forget_generic(S, s->function);
  jt_o(argv[1])->flags |= JT_CLO_MACRO;
  JT_SET(S, s, s->function, argv[1]);
  if (S->world_define) S->world_define(S, argv[0], JT_DEF_FUNCTION_SET, JT_NIL, argv[1]);
  return argv[1];
}

JT_FN(f_macro_function) {
  jt_V sym = jt_check_symbol(S, argv[0]);
  if (argc > 1 && argv[1] != JT_NIL) {
    jt_V local = jt_local_macro_function(S, sym, argv[1]);
    if (local != JT_NOVALUE) return local;
  }
  if (jt_standard_macro_alias(S, sym) != JT_NIL)
    return jt_symobj(S, jt_intern(S, "%STANDARD-MACRO-EXPANDER"))->function;
  jt_V f = jt_symobj(S, sym)->function;
  return jt_is_macro(f) && !jt_is_internal(sym) ? f : JT_NIL;
}

/* (%standard-macro-expander form env): the macro function of a standard
** macro that is a special form here (jt_standard_macro_alias). */
JT_FN(f_standard_macro_expander) {
  JT_UNUSED_ARGS;
  jt_V form = argv[0];
  jt_V alias = jt_iscons(form) ? jt_standard_macro_alias(S, jt_car(form)) : JT_NIL;
  if (alias == JT_NIL) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "not a form of a standard macro");
  return jt_cons(S, alias, jt_cdr(form));
}

JT_FN(f_special_operator_p) {
  jt_V sym = jt_check_symbol(S, argv[0]);
  return jt_bool(jt_special_form_p(S, sym) && !jt_is_internal(sym) && jt_standard_macro_alias(S, sym) == JT_NIL);
}

JT_FN(f_funcall) {
  return jt_apply(S, argv[0], argc - 1, argv + 1);
}

JT_FN(f_apply) {
  /* (apply f a b ... list) */
  jt_V *base = S->sp;
  jt_V last = argv[argc - 1];
  int n = 0;
  for (int i = 1; i < argc - 1; i++) { JT_PUSH(S, argv[i]); n++; }
  jt_V l = last;
  jt_Walk w = jt_walk(last);
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    if (n > 100000) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "apply: too many arguments");
    JT_PUSH(S, jt_car(l));
    n++;
  }
  if (l != JT_NIL) jt_improper_list(S, last);
  jt_V r = jt_apply(S, argv[0], n, base);
  S->sp = base;
  return r;
}

JT_FN(f_values) { return jt_values(S, argc, argv); }

JT_FN(f_values_list) {
  jt_V *base = S->sp;
  int n = 0;
  size_t len = jt_list_length(S, argv[0]);   /* a proper list */
  for (jt_V l = argv[0]; n < (int)len; l = jt_cdr(l)) { JT_PUSH(S, jt_car(l)); n++; }
  jt_V r = jt_values(S, n, base);
  S->sp = base;
  return r;
}

JT_FN(f_eval) { return jt_eval_toplevel(S, argv[0]); }

JT_FN(f_macroexpand_1) {
  bool expanded;
  jt_V r = jt_macroexpand_1_env(S, argv[0], argc > 1 ? argv[1] : JT_NIL, &expanded);
  return jt_values2(S, r, jt_bool(expanded));
}

JT_FN(f_macroexpand) {
  jt_V form = argv[0], env = argc > 1 ? argv[1] : JT_NIL;
  bool any = false, expanded;
  JT_ROOT(S, form);
  for (int i = 0; i < 10000; i++) {
    form = jt_macroexpand_1_env(S, form, env, &expanded);
    if (!expanded) break;
    any = true;
  }
  JT_UNROOT(S, 1);
  return jt_values2(S, form, jt_bool(any));
}

/* (%declare-special symbol) */
JT_FN(f_declare_special) {
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, argv[0]));
  if (s->h.flags & JT_SYM_CONSTANT) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s is a constant", s->cname);
  /* The language's own special variables (*features*, *print-base*, ...)
  ** are not the world's to define: as managed state they would change
  ** how every later transaction reads and prints. */
  if ((s->h.flags & (JT_SYM_BUILTIN | JT_SYM_SPECIAL)) == (JT_SYM_BUILTIN | JT_SYM_SPECIAL) && !S->kernel_mode)
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR),
              "cannot define %s as a variable: it is a built-in variable of the language (bind it with let instead)",
              s->cname);
  /* Nor may a name of COMMON-LISP or JITI become special: every binding
  ** of it, the library's included, would turn dynamic. */
  if (!(s->h.flags & JT_SYM_SPECIAL) && !S->kernel_mode &&
      (s->package == JT_PKG_LISP || s->package == JT_PKG_JITI))
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR),
              "cannot define %s as a variable: it is a symbol of the locked package %s", s->cname,
              s->package == JT_PKG_LISP ? "COMMON-LISP" : "JITI");
  /* a name is a variable or a symbol macro, not both */
  if (jt_meta_get(S, argv[0], jt_intern(S, "%SYMBOL-MACRO")) != JT_NIL)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot define %s as a variable: it is a symbol macro", s->cname);
  if (!(s->h.flags & JT_SYM_SPECIAL)) {
    JT_TOUCH(S, argv[0]);   /* a restored checkpoint takes the declaration back */
    s->h.flags |= JT_SYM_SPECIAL;
  }
  if (S->world_define) S->world_define(S, argv[0], JT_DEF_VARIABLE, JT_NIL, JT_NIL);
  return argv[0];
}

/* (%defconstant symbol value) */
JT_FN(f_defconstant) {
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, argv[0]));
  if (s->h.flags & JT_SYM_CONSTANT) {
    if (jt_equal(S, s->value, argv[1])) return argv[0];
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot redefine the constant %s with a different value", s->cname);
  }
  if (s->h.flags & JT_SYM_LOCKED) jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot redefine the built-in %s", s->cname);
  if (jt_meta_get(S, argv[0], jt_intern(S, "%SYMBOL-MACRO")) != JT_NIL)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot define %s as a constant: it is a symbol macro", s->cname);
  JT_SET(S, s, s->value, argv[1]);
  s->h.flags |= JT_SYM_CONSTANT;
  if (S->world_define) S->world_define(S, argv[0], JT_DEF_CONSTANT, JT_NIL, JT_NIL);
  return argv[0];
}

JT_FN(f_constantp) {
  jt_V x = argv[0];
  if (jt_issymbol(x)) return jt_bool(x == JT_NIL || x == JT_T || (jt_symobj(S, x)->h.flags & JT_SYM_CONSTANT));
  if (jt_iscons(x)) return jt_bool(jt_car(x) == JT_SYM(S, QUOTE));
  return JT_T;
}

/* As fdefinition: a macro's or special operator's name gives an object
** too (fboundp is true of it), not an undefined-function error. */
JT_FN(f_symbol_function) {
  jt_check_symbol(S, argv[0]);
  return f_fdefinition(S, argc, argv);
}

JT_FN(f_special_variable_p) {
  return jt_bool(jt_symobj(S, jt_check_symbol(S, argv[0]))->h.flags & JT_SYM_SPECIAL);
}

JT_FN(f_gc) { jt_gc_collect(S); return JT_NIL; }

JT_FN(f_documentation) {
  jt_V x = argv[0];
  jt_V d = jt_clos_documentation(S, x, argc > 1 ? argv[1] : JT_NIL);
  if (d != JT_NOVALUE) return d;
  /* a function object's own doc string (a lambda's, a compiler macro's) */
  if (jt_is(x, JT_TCLOSURE) && jt_closure_lambda(S, x)->doc)
    return jt_string_from_cstr(S, jt_closure_lambda(S, x)->doc);
  if (jt_issymbol(x) && !jt_is_internal(x)) {
    jt_V f = jt_symobj(S, x)->function;
    if (jt_is(f, JT_TPRIM) && jt_prim_(f)->doc) return jt_string_from_cstr(S, jt_prim_(f)->doc);
    if (jt_is(f, JT_TCLOSURE) && jt_closure_lambda(S, f)->doc)
      return jt_string_from_cstr(S, jt_closure_lambda(S, f)->doc);
  }
  return JT_NIL;
}

/* (function-lambda-expression function) => lambda-expression, closure-p,
** name.  The lambda expression of a function written in Lisp is its source
** (NIL for a built-in written in C); closure-p is true when it captured a
** lexical environment. */
JT_FN(f_function_lambda_expression) {
  jt_V f = argv[0];
  if (!jt_isfunction(f)) jt_type_error(S, f, JT_SYM(S, FUNCTION));
  jt_V vals[3] = {JT_NIL, JT_NIL, JT_NIL};
  if (jt_is(f, JT_TPRIM)) {
    vals[2] = jt_prim_(f)->name;
    return jt_values(S, 3, vals);
  }
  if (jt_is(f, JT_TGENERIC)) {   /* no lambda expression: its methods are its code */
    vals[2] = jt_gf_(f)->name;
    return jt_values(S, 3, vals);
  }
  const jt_Lambda *L = jt_closure_lambda(S, f);
  vals[1] = jt_bool(jt_clo_(f)->env != JT_NIL);
  vals[2] = jt_clo_(f)->name;
  if (L->body_form != 0 && !jt_is_macro(f)) {
    jt_V rest = jt_cons(S, L->lambda_list, L->body_form);
    vals[0] = jt_cons(S, JT_SYM(S, LAMBDA), rest);
  }
  return jt_values(S, 3, vals);
}

static const jt_Reg base_fns[] = {
  {"CAR", f_car, 1, 1, "(car list) The first element of LIST."},
  {"CDR", f_cdr, 1, 1, "(cdr list) LIST without its first element."},
  {"CONS", f_cons, 2, 2, "(cons a b) A new cons of A and B."},
  {"EQ", f_eq, 2, 2, "(eq a b) True if A and B are the same object."},
  {"EQL", f_eql, 2, 2, "(eql a b) EQ, or numbers of one type and value, or equal characters."},
  {"EQUAL", f_equal, 2, 2, "(equal a b) Structural equality on conses and strings, EQL otherwise."},
  {"EQUALP", f_equalp, 2, 2, "(equalp a b) Case-insensitive, numeric-= structural equality."},
  {"NOT", f_not, 1, 1, "(not x) True if X is NIL."},
  {"NULL", f_not, 1, 1, "(null x) True if X is NIL."},
  {"ATOM", f_atom, 1, 1, "(atom x) True if X is not a cons."},
  {"CONSP", f_consp, 1, 1, "(consp x) True if X is a cons."},
  {"LISTP", f_listp, 1, 1, "(listp x) True if X is a cons or NIL."},
  {"SYMBOLP", f_symbolp, 1, 1, "(symbolp x) True if X is a symbol."},
  {"KEYWORDP", f_keywordp, 1, 1, "(keywordp x) True if X is a keyword."},
  {"FUNCTIONP", f_functionp, 1, 1, "(functionp x) True if X is a function."},
  {"TYPEP", f_typep, 2, 3, "(typep object type) True if OBJECT is of TYPE."},
  {"TYPE-OF", f_type_of, 1, 1, "(type-of object) A type specifier for OBJECT."},
  {"IDENTITY", f_identity, 1, 1, "(identity x) X."},
  {"SYMBOL-NAME", f_symbol_name, 1, 1, "(symbol-name symbol) Its name as a string."},
  {"MAKE-SYMBOL", f_make_symbol, 1, 1, "(make-symbol string) A new uninterned symbol."},
  {"GENSYM", f_gensym, 0, 1, "(gensym &optional prefix) A new uninterned symbol."},
  {"FUNCTION-LAMBDA-EXPRESSION", f_function_lambda_expression, 1, 1, "(function-lambda-expression function) Its lambda expression (or NIL), whether it is a closure, and its name."},
  {"COPY-SYMBOL", f_copy_symbol, 1, 2, "(copy-symbol symbol &optional copy-properties) A new uninterned symbol named like SYMBOL."},
  {"SYMBOL-VALUE", f_symbol_value, 1, 1, "(symbol-value symbol) Its dynamic value."},
  {"SET", f_set, 2, 2, "(set symbol value) Set the dynamic value of SYMBOL."},
  {"%SET-SYMBOL-VALUE", f_set_symbol_value, 2, 2, "(%set-symbol-value symbol value)"},
  {"BOUNDP", f_boundp, 1, 1, "(boundp symbol) True if SYMBOL has a dynamic value."},
  {"MAKUNBOUND", f_makunbound, 1, 1, "(makunbound symbol) Remove the value of SYMBOL."},
  {"FBOUNDP", f_fboundp, 1, 1, "(fboundp name) True if NAME has a global function or macro."},
  {"FMAKUNBOUND", f_fmakunbound, 1, 1, "(fmakunbound name) Remove the global function NAME."},
  {"FDEFINITION", f_fdefinition, 1, 1, "(fdefinition name) The global function NAME."},
  {"SYMBOL-FUNCTION", f_symbol_function, 1, 1, "(symbol-function symbol) The global function."},
  {"%SET-FDEFINITION", f_set_fdefinition, 2, 2, "(%set-fdefinition name function)"},
  {"%SET-SYMBOL-FUNCTION", f_set_fdefinition, 2, 2, "(%set-symbol-function symbol function)"},
  {"MACRO-FUNCTION", f_macro_function, 1, 2,
   "(macro-function symbol &optional environment) The macro expander or NIL."},
  {"%INSTALL-MACRO-FUNCTION", f_install_macro_function, 2, 2,
   "(%install-macro-function symbol expander) Make EXPANDER (a fresh closure) SYMBOL's macro function."},
  {"SPECIAL-OPERATOR-P", f_special_operator_p, 1, 1, "(special-operator-p symbol)"},
  {"%SPECIAL-OPERATOR", f_special_operator, 0, -1, "What fdefinition gives for a special operator."},
  {"%STANDARD-MACRO-EXPANDER", f_standard_macro_expander, 2, 2,
   "(%standard-macro-expander form env) The expansion of a standard macro that is a special form here."},
  {"FUNCALL", f_funcall, 1, -1, "(funcall function &rest args) Call FUNCTION."},
  {"APPLY", f_apply, 2, -1, "(apply function &rest args list) Call FUNCTION with ARGS and LIST's elements."},
  {"VALUES", f_values, 0, -1, "(values &rest objects) Return OBJECTS as multiple values."},
  {"VALUES-LIST", f_values_list, 1, 1, "(values-list list) Return LIST's elements as values."},
  {"EVAL", f_eval, 1, 1, "(eval form) Evaluate FORM in the null lexical environment."},
  {"MACROEXPAND-1", f_macroexpand_1, 1, 2, "(macroexpand-1 form &optional env) Expand FORM once."},
  {"MACROEXPAND", f_macroexpand, 1, 2, "(macroexpand form &optional env) Expand FORM until it is no macro form."},
  {"%DECLARE-SPECIAL", f_declare_special, 1, 1, "(%declare-special symbol)"},
  {"%DEFCONSTANT", f_defconstant, 2, 2, "(%defconstant symbol value)"},
  {"CONSTANTP", f_constantp, 1, 2, "(constantp form) True if FORM evaluates to itself or a constant."},
  {"%SPECIAL-VARIABLE-P", f_special_variable_p, 1, 1, "(%special-variable-p symbol)"},
  {"%GC", f_gc, 0, 0, "(%gc) Collect garbage now."},
  {"%FUNCTION-DOCUMENTATION", f_documentation, 1, 2,
   "(%function-documentation name) The doc string of NAME's function or macro, or NIL."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_base(jt_State *S) {
  jt_register(S, base_fns);
  jt_defglobal(S, "*GENSYM-COUNTER*", jt_mkfix(0));
}
