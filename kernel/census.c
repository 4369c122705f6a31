/*
** census.c — (%form-census form limit names substrings): one pass over a
** read form for a host's form gate (the worker's, worker/gate.c).
**
** A gate must look at every part of a form before anything of it runs:
** refuse kernel-internal symbols, shared or circular structure, and
** whatever the host's policy names.  Walking the form in interpreted Lisp
** with an EQ hash table cost more than evaluating a typical call; this is
** the same walk in C.  The policy stays with the host: the kernel reports
** the first thing it finds, the host says what it means.
**
** The walk is iterative (a heap stack: no recursion on the C stack), visits
** conses car first, then cdr, a vector's items last to first, and stops at
** the first finding, in that order — the order the Lisp walk it replaced
** had.  It allocates nothing on the Lisp heap until it returns, so the form
** (rooted by the caller's argument) cannot move or die under it.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"

/* An open-addressing set of objects (cap a power of two). */
typedef struct Seen { jt_V *v; size_t cap, n; } Seen;

static size_t home(jt_V x, size_t cap) {
  return (size_t)(((uint64_t)(uintptr_t)x * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* 1 when x was in the set already; else added. -1 when out of memory.
** The set starts in inline_buf (the caller's) and moves to the heap when
** it grows. */
static int seen_add(Seen *s, jt_V x, const jt_V *inline_buf) {
  if ((s->n + 1) * 2 > s->cap) {
    size_t cap = s->cap * 2;
    jt_V *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < s->cap; i++)
      if (s->v[i]) {
        size_t k = home(s->v[i], cap);
        while (t[k]) k = (k + 1) & (cap - 1);
        t[k] = s->v[i];
      }
    if (s->v != inline_buf) free(s->v);
    s->v = t;
    s->cap = cap;
  }
  size_t k = home(x, s->cap);
  while (s->v[k]) {
    if (s->v[k] == x) return 1;
    k = (k + 1) & (s->cap - 1);
  }
  s->v[k] = x;
  s->n++;
  return 0;
}

/* What the walk looks for besides size, sharing and internal symbols: the
** names and substrings either as Lisp lists of strings (%FORM-CENSUS) or as
** C strings (UTF-8; jiti_form_read). */
typedef struct Policy {
  jt_V names, subs;                 /* lists of strings, or NIL */
  const char *const *cnames, *const *csubs;
  int ncnames, ncsubs;
} Policy;

/* Does string x contain the string pattern p (both Lisp strings)? */
static bool contains(jt_V x, jt_V p) {
  const jt_String *a = jt_str_(x), *b = jt_str_(p);
  if (b->len == 0) return true;
  for (size_t i = 0; i + b->len <= a->len; i++)
    if (a->chars[i] == b->chars[0] && !memcmp(a->chars + i, b->chars, b->len * sizeof *b->chars)) return true;
  return false;
}

/* Does string x contain the UTF-8 text p? */
static bool contains_utf8(jt_V x, const char *p) {
  const jt_String *a = jt_str_(x);
  size_t plen = strlen(p);
  for (size_t i = 0; i <= a->len; i++) {
    size_t j = 0, k = i;
    bool ok = true;
    while (ok && j < plen) ok = k < a->len && jt_utf8_decode(p, plen, &j) == a->chars[k++];
    if (ok) return true;
  }
  return false;
}

/* Is x's name one of the policy's names? (Lisp strings match ASCII names.) */
static bool named(jt_State *S, jt_V x, const Policy *p) {
  const char *n = jt_symname(S, x);
  for (int k = 0; k < p->ncnames; k++)
    if (!strcmp(n, p->cnames[k])) return true;
  for (jt_V l = p->names; jt_iscons(l); l = jt_cdr(l)) {
    jt_V s = jt_car(l);
    if (!jt_is(s, JT_TSTRING)) continue;
    const jt_String *t = jt_str_(s);
    size_t i = 0;
    for (; i < t->len && n[i] && (unsigned char)n[i] < 0x80 && (uint32_t)(unsigned char)n[i] == t->chars[i]; i++) {}
    if (i == t->len && !n[i]) return true;
  }
  return false;
}

static bool has_substring(jt_V x, const Policy *p) {
  for (int k = 0; k < p->ncsubs; k++)
    if (contains_utf8(x, p->csubs[k])) return true;
  for (jt_V l = p->subs; jt_iscons(l); l = jt_cdr(l))
    if (jt_is(jt_car(l), JT_TSTRING) && contains(x, jt_car(l))) return true;
  return false;
}

typedef enum { F_NONE, F_TOO_LARGE, F_SHARED, F_INTERNAL, F_SYMBOL, F_SUBSTRING, F_NOMEM } Finding;

/* Room on the C stack for the walk of a small form (most are: a call with
** a few arguments): the heap only past it. */
#define INLINE_STACK 64
#define INLINE_SEEN 128

static Finding walk(jt_State *S, jt_V form, size_t limit, const Policy *p, jt_V *what) {
  jt_V inline_stack[INLINE_STACK], inline_seen[INLINE_SEEN];
  jt_V *stack = inline_stack, *heap = NULL;  /* heap: the stack once it moved there */
  size_t sp = 0, cap = INLINE_STACK, count = 0;
  memset(inline_seen, 0, sizeof inline_seen);
  Seen seen = {inline_seen, INLINE_SEEN, 0};
  Finding f = F_NONE;
#define PUSH(x) do { \
    if (sp == cap) { \
      size_t nc = cap * 2; \
      jt_V *ns = realloc(heap, nc * sizeof *ns); \
      if (!ns) { f = F_NOMEM; goto done; } \
      if (!heap) memcpy(ns, inline_stack, sizeof inline_stack); \
      stack = heap = ns; cap = nc; \
    } \
    stack[sp++] = (x); \
  } while (0)
  PUSH(form);
  while (sp) {
    jt_V x = stack[--sp];
    if (++count > limit) { f = F_TOO_LARGE; *what = jt_mkfix(limit); goto done; }
    if ((count & 4095) == 0) jt_fuel_tick(S);
    if (jt_issymbol(x)) {
      if (jt_is_internal(x)) { f = F_INTERNAL; *what = x; goto done; }
      if (named(S, x, p)) { f = F_SYMBOL; *what = x; goto done; }
    } else if (jt_iscons(x) || jt_is(x, JT_TSTRING) || jt_is(x, JT_TVECTOR)) {
      int r = seen_add(&seen, x, inline_seen);
      if (r < 0) { f = F_NOMEM; goto done; }
      if (r) { f = F_SHARED; *what = x; goto done; }
      if (jt_iscons(x)) {
        PUSH(jt_cdr(x));
        PUSH(jt_car(x));
      } else if (jt_is(x, JT_TSTRING)) {
        if (has_substring(x, p)) { f = F_SUBSTRING; *what = x; goto done; }
      } else {
        const jt_Vector *v = jt_vec_(x);
        for (size_t i = 0; i < v->len; i++) PUSH(v->items[i]);
      }
    }
  }
done:
#undef PUSH
  free(heap);
  if (seen.v != inline_seen) free(seen.v);
  return f;
}

/* (%form-census form limit names substrings) NIL when form has at most
** LIMIT parts, no kernel-internal symbol, no symbol named by one of NAMES
** (strings), no cons, string or vector reached twice, and no string
** containing one of SUBSTRINGS; else the first finding, as (:too-large
** limit), (:internal symbol), (:symbol symbol), (:shared object) or
** (:substring string). */
JT_FN(f_form_census) {
  jt_V limit = argv[1];
  if (!jt_isfix(limit) || jt_fixval(limit) < 0) jt_type_error(S, limit, JT_SYM(S, INTEGER));
  jt_V what = JT_NIL;
  Policy p = {argv[2], argv[3], NULL, NULL, 0, 0};
  Finding f = walk(S, argv[0], (size_t)jt_fixval(limit), &p, &what);
  static const char *const kinds[] = {NULL, "TOO-LARGE", "SHARED", "INTERNAL", "SYMBOL", "SUBSTRING"};
  if (f == F_NONE) return JT_NIL;
  if (f == F_NOMEM) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory walking a form");
  JT_PUSH(S, what);
  jt_V r = jt_list(S, 2, jt_intern_keyword(S, kinds[f]), what);
  JT_POP(S, 1);
  return r;
}

jiti_FormVerdict jt_form_census(jt_State *S, jt_V form, const jiti_FormPolicy *policy) {
  Policy p = {JT_NIL, JT_NIL, policy->symbols, policy->substrings, policy->symbols ? policy->nsymbols : 0,
              policy->substrings ? policy->nsubstrings : 0};
  jt_V what = JT_NIL;
  static const jiti_FormVerdict verdicts[] = {JITI_FORM_CLEAN, JITI_FORM_TOO_LARGE, JITI_FORM_SHARED,
                                              JITI_FORM_INTERNAL, JITI_FORM_SYMBOL, JITI_FORM_SUBSTRING};
  Finding f = walk(S, form, policy->max_parts, &p, &what);
  if (f == F_NOMEM) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory walking a form");
  return verdicts[f];
}

static const jt_Reg census_fns[] = {
  {"%FORM-CENSUS", f_form_census, 4, 4,
   "(%form-census form limit names substrings) The first of: more than LIMIT parts, a kernel-internal "
   "symbol, a symbol named by NAMES, shared structure, a string containing one of SUBSTRINGS; or NIL."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_census(jt_State *S) { jt_register(S, census_fns); }
