/*
** obj.c — constructors, symbols, equality, types, argument checking and
** the small built-ins that belong to no other module.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_clos.h"

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
  size_t n = 0;
  for (size_t i = 0; i < len; n++) jt_utf8_decode(s, len, &i);
  jt_V str = jt_make_string(S, n, ' ');
  uint32_t *out = jt_str_(str)->chars;
  size_t k = 0;
  for (size_t i = 0; i < len;) out[k++] = jt_utf8_decode(s, len, &i);
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
    size_t n = s->cap < 8 ? 16 : s->cap * 2;
    JT_PUSH(S, str);
    uint32_t *p = jt_realloc(S, s->chars, s->cap * sizeof(uint32_t), n * sizeof(uint32_t));
    JT_POP(S, 1);
    s->chars = p;
    s->cap = n;
  }
  s->chars[s->len++] = c;
}

void jt_vector_push(jt_State *S, jt_V vec, jt_V v) {
  jt_Vector *x = jt_vec_(vec);
  JT_TOUCH(S, vec);
  if (x->len == x->cap) {
    size_t n = x->cap < 8 ? 16 : x->cap * 2;
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

static uint32_t hash_name(const char *s, size_t n, int package) {
  uint32_t h = 2166136261u ^ (uint32_t)package;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

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
  return (jt_V)s;
}

jt_V jt_make_symbol(jt_State *S, jt_V name) {
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  jt_V sym = new_symbol(S, name, c, len);
  free(c);
  return sym;
}

static void symtab_grow(jt_State *S) {
  size_t ncap = S->symcap ? S->symcap * 2 : 4096;
  jt_V *t = calloc(ncap, sizeof(jt_V));
  if (!t) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  for (size_t i = 0; i < ncap; i++) t[i] = JT_NIL;
  for (size_t i = 0; i < S->symcap; i++) {
    jt_V v = S->symtab[i];
    if (v == JT_NIL) continue;
    size_t k = jt_sym_(v)->hash & (ncap - 1);
    while (t[k] != JT_NIL) k = (k + 1) & (ncap - 1);
    t[k] = v;
  }
  free(S->symtab);
  S->symtab = t;
  S->symcap = ncap;
}

static jt_V immediate_of(jt_State *S, jt_V sym) {
  if (sym == S->nil_sym) return JT_NIL;
  if (sym == S->t_sym) return JT_T;
  return sym;
}

jt_V jt_find_symbol(jt_State *S, const char *name, size_t len, int package) {
  if (!S->symcap) return JT_NOVALUE;
  uint32_t h = hash_name(name, len, package);
  size_t k = h & (S->symcap - 1);
  for (;;) {
    jt_V v = S->symtab[k];
    if (v == JT_NIL) return JT_NOVALUE;
    jt_Symbol *s = jt_sym_(v);
    if (s->hash == h && s->package == package && strncmp(s->cname, name, len) == 0 &&
        s->cname[len] == 0)
      return immediate_of(S, v);
    k = (k + 1) & (S->symcap - 1);
  }
}

/* The package a %-name goes to: C code (trusted) and kernel-mode reading
** intern the kernel's helpers in the internal home; everything else, the
** user's own %FOO included, in the Lisp package. */
static int home_of(jt_State *S, const char *name, size_t len, int package, bool trusted) {
  if (package == JT_PKG_LISP && len > 1 && name[0] == '%' && (trusted || S->kernel_mode))
    return JT_PKG_INTERNAL;
  return package;
}

static jt_V intern_bytes(jt_State *S, const char *name, size_t len, int package, jt_V namestr) {
  jt_V found = jt_find_symbol(S, name, len, package);
  if (found != JT_NOVALUE) return found;
  if ((S->nsyms + 1) * 2 > S->symcap) symtab_grow(S);
  if (namestr == JT_NIL) namestr = jt_string_from_utf8(S, name, len);
  jt_V sym = new_symbol(S, namestr, name, len);
  jt_Symbol *s = jt_sym_(sym);
  s->hash = hash_name(name, len, package);
  s->package = (uint8_t)package;
  s->h.flags |= JT_SYM_INTERNED;
  if (package == JT_PKG_KEYWORD) {
    s->value = sym;
    s->h.flags |= JT_SYM_KEYWORD | JT_SYM_CONSTANT;
  }
  size_t k = s->hash & (S->symcap - 1);
  while (S->symtab[k] != JT_NIL) k = (k + 1) & (S->symcap - 1);
  S->symtab[k] = sym;
  S->nsyms++;
  return sym;
}

void jt_intern_symbol_object(jt_State *S, jt_V sym) {
  if ((S->nsyms + 1) * 2 > S->symcap) symtab_grow(S);
  jt_Symbol *s = jt_sym_(sym);
  s->hash = hash_name(s->cname, strlen(s->cname), JT_PKG_LISP);
  s->package = JT_PKG_LISP;
  s->h.flags |= JT_SYM_INTERNED;
  size_t k = s->hash & (S->symcap - 1);
  while (S->symtab[k] != JT_NIL) k = (k + 1) & (S->symcap - 1);
  S->symtab[k] = sym;
  S->nsyms++;
}

jt_V jt_intern(jt_State *S, const char *name) {
  size_t len = strlen(name);
  return intern_bytes(S, name, len, home_of(S, name, len, JT_PKG_LISP, true), JT_NIL);
}

jt_V jt_intern_keyword(jt_State *S, const char *name) {
  return intern_bytes(S, name, strlen(name), JT_PKG_KEYWORD, JT_NIL);
}

jt_V jt_intern_bytes(jt_State *S, const char *name, size_t len, int package) {
  return intern_bytes(S, name, len, home_of(S, name, len, package, false), JT_NIL);
}

jt_V jt_intern_string(jt_State *S, jt_V name, int package) {
  size_t len;
  JT_PUSH(S, name);
  char *c = jt_string_utf8(S, name, &len);
  /* the symbol gets its own copy of the name: strings are mutable */
  jt_V found = intern_bytes(S, c, len, home_of(S, c, len, package, false), JT_NIL);
  free(c);
  JT_POP(S, 1);
  return found;
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
  if (v == JT_UNBOUND) jt_unbound_variable(S, sym);
  return v;
}

void jt_set_symbol_value(jt_State *S, jt_V sym, jt_V v) {
  jt_Symbol *s = jt_symobj(S, sym);
  if (s->h.flags & JT_SYM_CONSTANT)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "cannot set the constant %s", s->cname);
  JT_SET(S, s, s->value, v);
}

jt_V jt_fdefinition(jt_State *S, jt_V name) {
  if (jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(name)) &&
      jt_issymbol(jt_car(jt_cdr(name)))) {
    jt_V f = jt_symobj(S, jt_car(jt_cdr(name)))->setf_fn;
    if (f == JT_UNBOUND) jt_undefined_function(S, name);
    return f;
  }
  if (!jt_issymbol(name)) jt_type_error(S, name, JT_SYM(S, SYMBOL));
  jt_V f = jt_symobj(S, name)->function;
  if (f == JT_UNBOUND || jt_is_macro(f) || (jt_symobj(S, name)->h.flags & JT_SYM_SPECFORM) ||
      jt_is_internal(name))
    jt_undefined_function(S, name);
  return f;
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
    size_t n = S->bindcap ? S->bindcap * 2 : 64;
    jt_Binding *b = realloc(S->bindings, n * sizeof *b);
    if (!b) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    S->bindings = b;
    S->bindcap = n;
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
    case JT_TBIGNUM: case JT_TRATIO: case JT_TFLOAT: return jt_num_eql(a, b);
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

/* Comparing shared structure can visit far more nodes than it holds (a DAG
** of depth 60 has 2^60 paths): every 16 visits cost a unit of fuel. */
#define EQUAL_TICK(S, steps) do { if ((++*(steps) & 15u) == 0) jt_fuel_tick(S); } while (0)

static bool equal_rec(jt_State *S, jt_V a, jt_V b, int depth, uint64_t *steps) {
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
    return false;
  }
}

bool jt_equal(jt_State *S, jt_V a, jt_V b) {
  uint64_t steps = 0;
  return equal_rec(S, a, b, 0, &steps);
}

static bool equalp_rec(jt_State *S, jt_V a, jt_V b, int depth, uint64_t *steps) {
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
    bool sa = jt_isstring(a), sb = jt_isstring(b), va = jt_isvector(a), vb = jt_isvector(b);
    if (sa && sb) return string_eq(a, b, true);
    if ((sa || va) && (sb || vb)) {
      size_t la = sa ? jt_str_(a)->len : jt_vec_(a)->len, lb = sb ? jt_str_(b)->len : jt_vec_(b)->len;
      if (la != lb) return false;
      for (size_t i = 0; i < la; i++) {
        jt_V x = sa ? jt_mkchar(jt_str_(a)->chars[i]) : jt_vec_(a)->items[i];
        jt_V y = sb ? jt_mkchar(jt_str_(b)->chars[i]) : jt_vec_(b)->items[i];
        if (!equalp_rec(S, x, y, depth + 1, steps)) return false;
      }
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

/* ------------------------------------------------------------------ lists */

size_t jt_list_length(jt_State *S, jt_V list) {
  size_t n = 0;
  jt_V slow = list;
  for (jt_V l = list; l != JT_NIL; l = jt_cdr(l)) {
    if (!jt_iscons(l)) jt_type_error(S, list, JT_SYM(S, LIST));
    n++;
    if ((n & 1) == 0) {
      slow = jt_cdr(slow);
      if (slow == jt_cdr(l)) jt_type_error(S, list, JT_SYM(S, LIST));
    }
  }
  return n;
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
    if (!jt_isnumber(b)) jt_error(S, "malformed type specifier bound");
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
  switch (n[0]) {
    case 'A':
      if (!strcmp(n, "ATOM")) return !jt_iscons(v);
      if (!strcmp(n, "ARRAY")) return jt_isvector(v) || jt_isstring(v);
      break;
    case 'B':
      if (!strcmp(n, "BOOLEAN")) return v == JT_NIL || v == JT_T;
      if (!strcmp(n, "BIGNUM")) return jt_isbig(v);
      if (!strcmp(n, "BIT")) return v == jt_mkfix(0) || v == jt_mkfix(1);
      if (!strcmp(n, "BASE-CHAR")) return jt_ischar(v);
      if (!strcmp(n, "BASE-STRING")) return jt_isstring(v);
      break;
    case 'C':
      if (!strcmp(n, "CONS")) return jt_iscons(v);
      if (!strcmp(n, "CHARACTER")) return jt_ischar(v);
      if (!strcmp(n, "COMPILED-FUNCTION")) return jt_isfunction(v);
      if (!strcmp(n, "COMPLEX")) return false;
      break;
    case 'D':
      if (!strcmp(n, "DOUBLE-FLOAT")) return jt_isfloat(v);
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
      if (!strcmp(n, "LONG-FLOAT")) return jt_isfloat(v);
      break;
    case 'N':
      if (!strcmp(n, "NULL")) return v == JT_NIL;
      if (!strcmp(n, "NUMBER")) return jt_isnumber(v);
      break;
    case 'R':
      if (!strcmp(n, "REAL")) return jt_isnumber(v);
      if (!strcmp(n, "RATIONAL")) return jt_isrational(v);
      if (!strcmp(n, "RATIO")) return jt_isratio(v);
      if (!strcmp(n, "RESTART")) return jt_is(v, JT_TRESTART);
      break;
    case 'S':
      if (!strcmp(n, "SYMBOL")) return jt_issymbol(v);
      if (!strcmp(n, "STRING") || !strcmp(n, "SIMPLE-STRING")) return jt_isstring(v);
      if (!strcmp(n, "SEQUENCE")) return jt_islist(v) || jt_isvector(v) || jt_isstring(v);
      if (!strcmp(n, "SIMPLE-VECTOR")) return jt_isvector(v) && !(jt_o(v)->flags & (JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR));
      if (!strcmp(n, "SINGLE-FLOAT") || !strcmp(n, "SHORT-FLOAT")) return jt_isfloat(v);
      if (!strcmp(n, "STANDARD-CHAR")) return jt_ischar(v) && (jt_charcode(v) == '\n' || (jt_charcode(v) >= 32 && jt_charcode(v) < 127));
      if (!strcmp(n, "STREAM") || !strcmp(n, "STRING-STREAM")) return jt_is(v, JT_TSTREAM);
      if (!strcmp(n, "STRUCTURE-OBJECT")) return jt_isstruct(v) && !jt_is_condition(v);
      if (!strcmp(n, "SIMPLE-ARRAY")) return jt_isvector(v) || jt_isstring(v);
      if (!strcmp(n, "SIGNED-BYTE")) return jt_isinteger(v);
      break;
    case 'U':
      if (!strcmp(n, "UNSIGNED-BYTE")) return jt_isinteger(v) && jt_num_cmp(S, v, jt_mkfix(0)) >= 0;
      break;
    case 'V':
      if (!strcmp(n, "VECTOR")) return jt_isvector(v) || jt_isstring(v);
      break;
  }
  return -1;
}

bool jt_typep(jt_State *S, jt_V v, jt_V type) {
  if (type == JT_T) return true;
  if (type == JT_NIL) return false;
  if (jt_iscons(type)) {
    jt_V head = jt_car(type);
    if (head == JT_SYM(S, OR)) {
      for (jt_V l = jt_cdr(type); jt_iscons(l); l = jt_cdr(l)) if (jt_typep(S, v, jt_car(l))) return true;
      return false;
    }
    if (head == JT_SYM(S, AND)) {
      for (jt_V l = jt_cdr(type); jt_iscons(l); l = jt_cdr(l)) if (!jt_typep(S, v, jt_car(l))) return false;
      return true;
    }
    if (head == JT_SYM(S, NOT) && jt_iscons(jt_cdr(type))) return !jt_typep(S, v, jt_car(jt_cdr(type)));
    if (head == JT_SYM(S, MEMBER)) {
      for (jt_V l = jt_cdr(type); jt_iscons(l); l = jt_cdr(l)) if (jt_eql(v, jt_car(l))) return true;
      return false;
    }
    if (head == JT_SYM(S, EQL) && jt_iscons(jt_cdr(type))) return jt_eql(v, jt_car(jt_cdr(type)));
    if (head == JT_SYM(S, SATISFIES) && jt_iscons(jt_cdr(type)))
      return jt_funcall(S, jt_car(jt_cdr(type)), 1, v) != JT_NIL;
    if (head == JT_SYM(S, INTEGER)) return jt_isinteger(v) && in_range(S, v, type);
    if (head == JT_SYM(S, RATIONAL)) return jt_isrational(v) && in_range(S, v, type);
    if (head == JT_SYM(S, REAL)) return jt_isnumber(v) && in_range(S, v, type);
    if (head == JT_SYM(S, FLOAT) || head == JT_SYM(S, DOUBLE_FLOAT) || head == JT_SYM(S, SINGLE_FLOAT))
      return jt_isfloat(v) && in_range(S, v, type);
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
    if (head == JT_SYM(S, CONS)) {
      if (!jt_iscons(v)) return false;
      jt_V a = jt_cdr(type);
      if (jt_iscons(a) && !sym_is(jt_car(a), "*") && !jt_typep(S, jt_car(v), jt_car(a))) return false;
      if (jt_iscons(a) && jt_iscons(jt_cdr(a)) && !sym_is(jt_car(jt_cdr(a)), "*") &&
          !jt_typep(S, jt_cdr(v), jt_car(jt_cdr(a)))) return false;
      return true;
    }
    if (jt_issymbol(head)) {
      /* (vector ...), (simple-array ...), (string n) etc.: check the base type */
      if (sym_is(head, "SIMPLE-ARRAY") || head == JT_SYM(S, ARRAY)) return jt_isvector(v) || jt_isstring(v);
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
  if (jt_isfix(v)) return JT_SYM(S, FIXNUM);
  if (jt_ischar(v)) return JT_SYM(S, CHARACTER);
  switch (jt_type(v)) {
    case JT_TCONS: return JT_SYM(S, CONS);
    case JT_TSYMBOL: return jt_iskeyword(v) ? JT_SYM(S, KEYWORD) : JT_SYM(S, SYMBOL);
    case JT_TSTRING: return JT_SYM(S, STRING);
    case JT_TVECTOR: return (jt_o(v)->flags & (JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR)) ? JT_SYM(S, VECTOR) : JT_SYM(S, SIMPLE_VECTOR);
    case JT_TBIGNUM: return JT_SYM(S, BIGNUM);
    case JT_TRATIO: return JT_SYM(S, RATIO);
    case JT_TFLOAT: return JT_SYM(S, DOUBLE_FLOAT);
    case JT_THASH: return JT_SYM(S, HASH_TABLE);
    case JT_TPRIM: case JT_TCLOSURE: return JT_SYM(S, COMPILED_FUNCTION);
    case JT_TSTRUCT: return jt_layout_(jt_struct_(v)->layout)->name;
    case JT_TSTREAM: return JT_SYM(S, STREAM);
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
  if (!jt_isstring(v)) jt_type_error(S, v, JT_SYM(S, STRING));
  return v;
}

jt_V jt_check_list(jt_State *S, jt_V v) {
  if (!jt_islist(v)) jt_type_error(S, v, JT_SYM(S, LIST));
  return v;
}

jt_V jt_check_cons(jt_State *S, jt_V v) {
  if (!jt_iscons(v)) jt_type_error(S, v, JT_SYM(S, CONS));
  return v;
}

uint32_t jt_check_char(jt_State *S, jt_V v) {
  if (!jt_ischar(v)) jt_type_error(S, v, JT_SYM(S, CHARACTER));
  return jt_charcode(v);
}

double jt_check_real_double(jt_State *S, jt_V v) {
  return jt_to_double(S, v);
}

jt_V jt_check_function(jt_State *S, jt_V v) {
  if (jt_isfunction(v)) return v;
  if (jt_issymbol(v)) return jt_fdefinition(S, v);
  jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, FUNCTION), JT_SYM(S, SYMBOL)));
}

jt_V jt_string_designator(jt_State *S, jt_V v) {
  if (jt_isstring(v)) return v;
  if (jt_issymbol(v)) return jt_symobj(S, v)->name;
  if (jt_ischar(v)) return jt_make_string(S, 1, jt_charcode(v));
  jt_type_error(S, v, jt_list(S, 4, JT_SYM(S, OR), JT_SYM(S, STRING), JT_SYM(S, SYMBOL), JT_SYM(S, CHARACTER)));
}

void jt_parse_keys(jt_State *S, int argc, jt_V *argv, int start, const int *keys, int nkeys,
                   jt_V *out) {
  for (int i = 0; i < nkeys; i++) out[i] = JT_NOVALUE;
  if ((argc - start) % 2) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "odd number of keyword arguments");
  bool allow = false;
  for (int k = start; k < argc; k += 2)
    if (argv[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS) && argv[k + 1] != JT_NIL) allow = true;
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
  if (b->n + more + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->n + more + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) abort();  /* C-side message buffers only; tiny */
  b->p = p;
  b->cap = cap;
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
JT_FN(f_typep) { return jt_bool(jt_typep(S, argv[0], argv[1])); }
JT_FN(f_type_of) { return jt_type_of(S, argv[0]); }
JT_FN(f_identity) { return argv[0]; }

JT_FN(f_symbol_name) { return jt_symobj(S, jt_check_symbol(S, argv[0]))->name; }

JT_FN(f_intern) {
  jt_V name = jt_check_string(S, argv[0]);
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  int pkg = JT_PKG_LISP;
  if (argc > 1 && argv[1] != JT_NIL) {
    jt_V p = jt_string_designator(S, argv[1]);
    char *pn = jt_string_utf8(S, p, NULL);
    if (!strcmp(pn, "KEYWORD")) pkg = JT_PKG_KEYWORD;
    free(pn);
  }
  jt_V found = jt_find_symbol(S, c, len, pkg);
  jt_V status = found == JT_NOVALUE ? JT_NIL : jt_intern_keyword(S, "INTERNAL");
  if (found == JT_NOVALUE) found = intern_bytes(S, c, len, pkg, JT_NIL);
  free(c);
  return jt_values2(S, found, status);
}

JT_FN(f_find_symbol) {
  jt_V name = jt_check_string(S, argv[0]);
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  jt_V found = jt_find_symbol(S, c, len, JT_PKG_LISP);
  free(c);
  if (found == JT_NOVALUE) return jt_values2(S, JT_NIL, JT_NIL);
  return jt_values2(S, found, jt_intern_keyword(S, "INTERNAL"));
}

JT_FN(f_make_symbol) { return jt_make_symbol(S, jt_check_string(S, argv[0])); }

JT_FN(f_gensym) {
  char buf[64];
  const char *prefix = "G";
  char *owned = NULL;
  if (argc > 0 && jt_isstring(argv[0])) prefix = owned = jt_string_utf8(S, argv[0], NULL);
  if (argc > 0 && jt_isfix(argv[0])) {
    snprintf(buf, sizeof buf, "G%ld", (long)jt_fixval(argv[0]));
  } else {
    snprintf(buf, sizeof buf, "%.40s%llu", prefix, (unsigned long long)S->gensym_counter++);
  }
  free(owned);
  return jt_make_symbol(S, jt_string_from_cstr(S, buf));
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

JT_FN(f_fboundp) {
  jt_V n = argv[0];
  if (jt_iscons(n) && jt_car(n) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(n)))
    return jt_bool(jt_symobj(S, jt_check_symbol(S, jt_car(jt_cdr(n))))->setf_fn != JT_UNBOUND);
  if (jt_is_internal(n)) return JT_NIL;
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, n));
  return jt_bool(s->function != JT_UNBOUND || (s->h.flags & JT_SYM_SPECFORM));
}

JT_FN(f_fmakunbound) {
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, argv[0]));
  if (s->h.flags & JT_SYM_LOCKED)
    jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot undefine the built-in %s", s->cname);
  jt_clos_forget_generic(S, s->function);
  JT_SET(S, s, s->function, JT_UNBOUND);
  if (S->world_define) S->world_define(S, argv[0], -1, JT_NIL, JT_NIL);
  return argv[0];
}

JT_FN(f_fdefinition) { return jt_fdefinition(S, argv[0]); }

void jt_check_type_definable(jt_State *S, jt_V name, const char *what) {
  jt_Symbol *s = jt_symobj(S, name);
  bool builtin = (s->h.flags & (JT_SYM_LOCKED | JT_SYM_TYPE | JT_SYM_SPECFORM | JT_SYM_CONSTANT)) != 0;
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
  if (S->world_define) S->world_define(S, name, 6, JT_NIL, fn);
  return fn;
}

JT_FN(f_macro_function) {
  jt_V sym = jt_check_symbol(S, argv[0]);
  jt_V f = jt_symobj(S, sym)->function;
  return jt_is_macro(f) && !jt_is_internal(sym) ? f : JT_NIL;
}

JT_FN(f_special_operator_p) {
  jt_V sym = jt_check_symbol(S, argv[0]);
  return jt_bool(jt_special_form_p(S, sym) && !jt_is_internal(sym));
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
  for (; jt_iscons(l); l = jt_cdr(l)) {
    if (n > 100000) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "apply: too many arguments");
    JT_PUSH(S, jt_car(l));
    n++;
  }
  if (l != JT_NIL) jt_type_error(S, last, JT_SYM(S, LIST));
  jt_V r = jt_apply(S, argv[0], n, base);
  S->sp = base;
  return r;
}

JT_FN(f_values) { return jt_values(S, argc, argv); }

JT_FN(f_values_list) {
  jt_V *base = S->sp;
  int n = 0;
  for (jt_V l = jt_check_list(S, argv[0]); jt_iscons(l); l = jt_cdr(l)) { JT_PUSH(S, jt_car(l)); n++; }
  jt_V r = jt_values(S, n, base);
  S->sp = base;
  return r;
}

JT_FN(f_eval) { return jt_eval_toplevel(S, argv[0]); }

JT_FN(f_macroexpand_1) {
  bool expanded;
  jt_V r = jt_macroexpand_1(S, argv[0], &expanded);
  return jt_values2(S, r, jt_bool(expanded));
}

JT_FN(f_macroexpand) {
  jt_V form = argv[0];
  bool any = false, expanded;
  JT_ROOT(S, form);
  for (int i = 0; i < 10000; i++) {
    form = jt_macroexpand_1(S, form, &expanded);
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
  s->h.flags |= JT_SYM_SPECIAL;
  if (S->world_define) S->world_define(S, argv[0], 3, JT_NIL, JT_NIL);
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
  JT_SET(S, s, s->value, argv[1]);
  s->h.flags |= JT_SYM_CONSTANT;
  if (S->world_define) S->world_define(S, argv[0], 4, JT_NIL, JT_NIL);
  return argv[0];
}

JT_FN(f_constantp) {
  jt_V x = argv[0];
  if (jt_issymbol(x)) return jt_bool(x == JT_NIL || x == JT_T || (jt_symobj(S, x)->h.flags & JT_SYM_CONSTANT));
  if (jt_iscons(x)) return jt_bool(jt_car(x) == JT_SYM(S, QUOTE));
  return JT_T;
}

JT_FN(f_symbol_function) { return jt_fdefinition(S, jt_check_symbol(S, argv[0])); }

JT_FN(f_special_variable_p) {
  return jt_bool(jt_symobj(S, jt_check_symbol(S, argv[0]))->h.flags & JT_SYM_SPECIAL);
}

JT_FN(f_gc) { jt_gc_collect(S); return JT_NIL; }

JT_FN(f_documentation) {
  jt_V x = argv[0];
  jt_V d = jt_clos_documentation(S, x, argc > 1 ? argv[1] : JT_NIL);
  if (d != JT_NOVALUE) return d;
  if (jt_issymbol(x) && !jt_is_internal(x)) {
    jt_V f = jt_symobj(S, x)->function;
    if (jt_is(f, JT_TPRIM) && jt_prim_(f)->doc) return jt_string_from_cstr(S, jt_prim_(f)->doc);
    if (jt_is(f, JT_TCLOSURE) && jt_closure_lambda(S, f)->doc)
      return jt_string_from_cstr(S, jt_closure_lambda(S, f)->doc);
  }
  return JT_NIL;
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
  {"INTERN", f_intern, 1, 2, "(intern string &optional package) The symbol named STRING."},
  {"FIND-SYMBOL", f_find_symbol, 1, 2, "(find-symbol string &optional package) The symbol or NIL."},
  {"MAKE-SYMBOL", f_make_symbol, 1, 1, "(make-symbol string) A new uninterned symbol."},
  {"GENSYM", f_gensym, 0, 1, "(gensym &optional prefix) A new uninterned symbol."},
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
  {"MACRO-FUNCTION", f_macro_function, 1, 2, "(macro-function symbol) The macro expander or NIL."},
  {"SPECIAL-OPERATOR-P", f_special_operator_p, 1, 1, "(special-operator-p symbol)"},
  {"FUNCALL", f_funcall, 1, -1, "(funcall function &rest args) Call FUNCTION."},
  {"APPLY", f_apply, 2, -1, "(apply function &rest args list) Call FUNCTION with ARGS and LIST's elements."},
  {"VALUES", f_values, 0, -1, "(values &rest objects) Return OBJECTS as multiple values."},
  {"VALUES-LIST", f_values_list, 1, 1, "(values-list list) Return LIST's elements as values."},
  {"EVAL", f_eval, 1, 1, "(eval form) Evaluate FORM in the null lexical environment."},
  {"MACROEXPAND-1", f_macroexpand_1, 1, 2, "(macroexpand-1 form) Expand FORM once."},
  {"MACROEXPAND", f_macroexpand, 1, 2, "(macroexpand form) Expand FORM until it is no macro form."},
  {"%DECLARE-SPECIAL", f_declare_special, 1, 1, "(%declare-special symbol)"},
  {"%DEFCONSTANT", f_defconstant, 2, 2, "(%defconstant symbol value)"},
  {"CONSTANTP", f_constantp, 1, 2, "(constantp form) True if FORM evaluates to itself or a constant."},
  {"%SPECIAL-VARIABLE-P", f_special_variable_p, 1, 1, "(%special-variable-p symbol)"},
  {"%GC", f_gc, 0, 0, "(%gc) Collect garbage now."},
  {"DOCUMENTATION", f_documentation, 1, 2, "(documentation name &optional type) Doc string or NIL."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_base(jt_State *S) { jt_register(S, base_fns); }
