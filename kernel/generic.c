/*
** generic.c — generic functions, methods and dispatch (see jt_clos.h).
**
** A generic function (jt_Generic) is funcallable: the evaluator hands a
** call of one to jt_gf_call.  Dispatch looks at the required arguments
** that some method specialises (the `dispatch` bit mask): each gives a key,
** its class, or the generic function's canonical (EQL x) specializer when
** the argument is EQL to one.  The keys index a small open-addressing cache
** (a simple vector of (key..., effective method) rows) filled on a miss.
**
** An effective method is one of:
**   a method            the only applicable method, a primary one: called
**                       directly with the caller's arguments (the fast path);
**   (a1 a2 ... . inner) the :around methods, most specific first, then the
**                       rest of the combination;
**   #(befores primaries afters)  the inner standard combination;
**   0 / 1 (fixnums)     no applicable method / no primary method;
**   a closure           the effective method of another combination (the
**                       defgeneric's :method-combination), a function of the
**                       arguments that 61-combination.lisp made from its
**                       effective method form.
** "What call-next-method does next" has the same shapes (a list of methods
** ending in NIL or in the inner combination), so one function runs both.
**
** A method's function takes its arguments as written; when its body uses
** call-next-method or next-method-p it also takes, first, a context: the
** simple vector #(next arguments method).  The body is wrapped in an flet
** that defines the two local functions on top of %call-next-method and
** %next-method-p, which check the context they are given.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_clos.h"
#include "jt_world.h"

#define GF(v) jt_gf_(v)
#define METH(v) jt_method_(v)
#define CLS(v) jt_class_(v)

enum { EM_BEFORES, EM_PRIMARIES, EM_AFTERS, EM_COUNT };
#define EM_NONE jt_mkfix(0)       /* no applicable method */
#define EM_NO_PRIMARY jt_mkfix(1) /* qualified methods but no primary one */
#define MAX_KEYS 8                /* specialised positions that are cached */


static JT_NORETURN void gf_error(jt_State *S, jt_V type, const char *fmt, jt_V obj) {
  char *n = jt_print_cstr(S, obj, true, 300);
  snprintf(S->msgbuf, sizeof S->msgbuf, fmt, n);
  free(n);
  jt_errorc(S, type, "%s", S->msgbuf);
}

/* ---------------------------------------------------------- lambda lists */

typedef struct LL {
  int nreq, nopt;
  bool rest, key, allow, aux;
} LL;

static bool lambda_keyword(jt_State *S, jt_V x) {
  return x == JT_SYM(S, AND_OPTIONAL) || x == JT_SYM(S, AND_REST) || x == JT_SYM(S, AND_KEY) ||
         x == JT_SYM(S, AND_ALLOW_OTHER_KEYS) || x == JT_SYM(S, AND_AUX) || x == JT_SYM(S, AND_BODY) ||
         x == JT_SYM(S, AND_WHOLE) || x == JT_SYM(S, AND_ENVIRONMENT);
}

/* The shape of an ordinary (or specialized) lambda list; false when it is
** malformed (the analyser reports the details when the function is made). */
static bool ll_parse(jt_State *S, jt_V ll, LL *out) {
  memset(out, 0, sizeof *out);
  int state = 0;   /* 0 required, 1 optional, 2 rest, 3 rest done, 4 key, 5 aux */
  size_t n = 0;
  for (; jt_iscons(ll); ll = jt_cdr(ll)) {
    if (++n > 10000) return false;
    jt_V x = jt_car(ll);
    if (x == JT_SYM(S, AND_OPTIONAL)) { if (state >= 1) return false; state = 1; continue; }
    if (x == JT_SYM(S, AND_REST)) { if (state >= 2) return false; state = 2; out->rest = true; continue; }
    if (x == JT_SYM(S, AND_KEY)) { if (state == 2 || state >= 4) return false; state = 4; out->key = true; continue; }
    if (x == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) { if (state != 4) return false; out->allow = true; continue; }
    if (x == JT_SYM(S, AND_AUX)) { if (state == 2 || state == 5) return false; state = 5; out->aux = true; continue; }
    if (lambda_keyword(S, x)) return false;
    switch (state) {
      case 0: out->nreq++; break;
      case 1: out->nopt++; break;
      case 2: state = 3; break;
      case 3: return false;
      default: break;
    }
  }
  return ll == JT_NIL && state != 2;
}

/* The keyword of a &key parameter: :VAR, or the one written ((key var)). */
static jt_V key_name(jt_State *S, jt_V p) {
  if (jt_iscons(p)) {
    p = jt_car(p);
    if (jt_iscons(p)) return jt_car(p);
  }
  return jt_issymbol(p) ? jt_intern_keyword(S, jt_symname(S, p)) : JT_NIL;
}

/* CLHS 7.6.4, rule 4: a method accepts each keyword the generic function's
** lambda list names — naming it too, or by &allow-other-keys, or by &rest
** without &key.  The first one it does not accept, or JT_NIL. */
static jt_V unaccepted_key(jt_State *S, jt_V gf_ll, jt_V ll) {
  bool rest = false, key = false;
  for (jt_V l = ll; jt_iscons(l); l = jt_cdr(l)) {
    if (jt_car(l) == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) return JT_NIL;
    if (jt_car(l) == JT_SYM(S, AND_REST)) rest = true;
    if (jt_car(l) == JT_SYM(S, AND_KEY)) key = true;
  }
  if (rest && !key) return JT_NIL;
  jt_V l = gf_ll;
  while (jt_iscons(l) && jt_car(l) != JT_SYM(S, AND_KEY)) l = jt_cdr(l);
  for (l = jt_iscons(l) ? jt_cdr(l) : JT_NIL; jt_iscons(l) && !lambda_keyword(S, jt_car(l)); l = jt_cdr(l)) {
    jt_V k = key_name(S, jt_car(l));
    bool found = false;
    jt_V m = ll;
    while (jt_iscons(m) && jt_car(m) != JT_SYM(S, AND_KEY)) m = jt_cdr(m);
    for (m = jt_iscons(m) ? jt_cdr(m) : JT_NIL; jt_iscons(m) && !lambda_keyword(S, jt_car(m)) && !found;
         m = jt_cdr(m))
      found = key_name(S, jt_car(m)) == k;
    if (!found) return k;
  }
  return JT_NIL;
}

static void check_congruent(jt_State *S, jt_V gf, jt_V ll, jt_V what) {
  LL a, b;
  jt_Generic *g = GF(gf);
  ll_parse(S, g->lambda_list, &a);
  if (!ll_parse(S, ll, &b)) gf_error(S, JT_SYM(S, PROGRAM_ERROR), "malformed lambda list in %s", what);
  if (a.nreq != b.nreq || a.nopt != b.nopt || (a.rest || a.key) != (b.rest || b.key)) {
    char *n = jt_print_cstr(S, g->name, true, 100);
    char *l1 = jt_print_cstr(S, g->lambda_list, true, 200);
    char *l2 = jt_print_cstr(S, ll, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "the lambda list %s is not congruent with the lambda list %s of the generic function %s",
             l2, l1, n);
    free(n); free(l1); free(l2);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
  jt_V k = unaccepted_key(S, g->lambda_list, ll);
  if (k != JT_NIL) {
    char *n = jt_print_cstr(S, g->name, true, 100);
    char *kn = jt_print_cstr(S, k, true, 100);
    char *l2 = jt_print_cstr(S, ll, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "the lambda list %s does not accept the keyword %s that the generic function %s names (name it "
             "after &key, or add &allow-other-keys)", l2, kn, n);
    free(n); free(kn); free(l2);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
}

/* ---------------------------------------------------- generic functions */

static jt_Symbol *name_symbol(jt_State *S, jt_V name, bool *setf) {
  *setf = false;
  if (jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(name)) &&
      jt_cdr(jt_cdr(name)) == JT_NIL && jt_issymbol(jt_car(jt_cdr(name)))) {
    *setf = true;
    name = jt_car(jt_cdr(name));
  }
  if (!jt_issymbol(name) || name == JT_NIL || name == JT_T || jt_iskeyword(name))
    gf_error(S, JT_SYM(S, PROGRAM_ERROR), "%s is not a function name", name);
  return jt_symobj(S, name);
}

jt_V jt_gf_find(jt_State *S, jt_V name) {
  bool setf;
  jt_Symbol *s = name_symbol(S, name, &setf);
  jt_V f = setf ? s->setf_fn : s->function;
  if (jt_is(f, JT_TGENERIC)) return f;
  if (f == JT_UNBOUND && !(s->h.flags & JT_SYM_SPECFORM)) return JT_NIL;
  gf_error(S, JT_SYM(S, PROGRAM_ERROR), "%s already names an ordinary function or a macro", name);
}

static void recompute_dispatch(jt_State *S, jt_V gf);

jt_V jt_gf_ensure(jt_State *S, jt_V name, jt_V lambda_list) {
  jt_V gf = jt_gf_find(S, name);
  if (gf != JT_NIL) return gf;
  LL ll;
  if (!ll_parse(S, lambda_list, &ll) || ll.aux)
    gf_error(S, JT_SYM(S, PROGRAM_ERROR), "malformed generic function lambda list %s", lambda_list);
  bool setf;
  jt_Symbol *s = name_symbol(S, name, &setf);
  jt_check_definable(S, s, setf ? "a setf generic function" : "a generic function");
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, lambda_list);
  jt_Generic *g = (jt_Generic *)jt_alloc(S, JT_TGENERIC, sizeof(jt_Generic));
  g->name = base[0];
  g->lambda_list = base[1];
  g->methods = g->eqls = g->doc = g->form = g->cache = JT_NIL;
  g->nreq = (uint16_t)ll.nreq;
  g->nopt = (uint16_t)ll.nopt;
  if (ll.rest || ll.key) g->h.flags |= JT_GF_REST;
  if (ll.key) g->h.flags |= JT_GF_KEY;
  if (ll.allow) g->h.flags |= JT_GF_ALLOW;
  g->epoch = S->clos_epoch;
  gf = (jt_V)g;
  s = name_symbol(S, base[0], &setf);
  if (setf) JT_SET(S, s, s->setf_fn, gf);
  else JT_SET(S, s, s->function, gf);
  S->sp = base;
  return gf;
}

/* --------------------------------------------------------------- methods */

jt_V jt_method_make(jt_State *S, jt_V qualifiers, jt_V specializers, jt_V lambda_list,
                    jt_V function, unsigned flags) {
  jt_V *base = S->sp;
  JT_PUSH(S, qualifiers);
  JT_PUSH(S, specializers);
  JT_PUSH(S, lambda_list);
  JT_PUSH(S, function);
  jt_Method *m = (jt_Method *)jt_alloc(S, JT_TMETHOD, sizeof(jt_Method));
  m->gf = JT_NIL;
  m->qualifiers = base[0];
  m->specializers = base[1];
  m->lambda_list = base[2];
  m->function = base[3];
  m->slot = m->form = m->doc = JT_NIL;
  m->h.flags = (uint16_t)flags;
  S->sp = base;
  return (jt_V)m;
}

static bool eql_spec_p(jt_State *S, jt_V spec) {
  return jt_iscons(spec) && jt_car(spec) == JT_SYM(S, EQL);
}

static bool same_specializers(jt_State *S, jt_V a, jt_V b) {
  for (; jt_iscons(a) && jt_iscons(b); a = jt_cdr(a), b = jt_cdr(b)) {
    jt_V x = jt_car(a), y = jt_car(b);
    if (x == y) continue;
    if (eql_spec_p(S, x) && eql_spec_p(S, y) && jt_eql(jt_car(jt_cdr(x)), jt_car(jt_cdr(y)))) continue;
    return false;
  }
  return a == b;
}

jt_V jt_gf_find_method(jt_State *S, jt_V gf, jt_V qualifiers, jt_V specializers) {
  for (jt_V l = GF(gf)->methods; jt_iscons(l); l = jt_cdr(l)) {
    jt_V m = jt_car(l);
    if (jt_equal(S, METH(m)->qualifiers, qualifiers) && same_specializers(S, METH(m)->specializers, specializers))
      return m;
  }
  return JT_NIL;
}

/* The dispatch mask and the canonical EQL specializers of each position,
** from the methods.  A method's (EQL x) specializer is replaced by the
** canonical one, so that a cache key can be compared with EQ. */
static void recompute_dispatch(jt_State *S, jt_V gf) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  int nreq = GF(gf)->nreq;
  uint32_t mask = 0;
  bool any_eql = false;
  for (jt_V l = GF(gf)->methods; jt_iscons(l); l = jt_cdr(l)) {
    int i = 0;
    for (jt_V s = METH(jt_car(l))->specializers; jt_iscons(s) && i < 32; s = jt_cdr(s), i++) {
      if (jt_car(s) != JT_CLASS(S, T)) mask |= 1u << i;
      if (eql_spec_p(S, jt_car(s))) any_eql = true;
    }
  }
  jt_V eqls = JT_NIL;
  if (any_eql) {
    eqls = jt_make_vector(S, (size_t)nreq, JT_NIL);
    JT_PUSH(S, eqls);
    for (jt_V l = GF(base[0])->methods; jt_iscons(l); l = jt_cdr(l)) {
      int i = 0;
      for (jt_V s = METH(jt_car(l))->specializers; jt_iscons(s); s = jt_cdr(s), i++) {
        jt_V spec = jt_car(s);
        if (!eql_spec_p(S, spec)) continue;
        jt_V canon = JT_NIL;
        for (jt_V c = jt_vec_(S->sp[-1])->items[i]; jt_iscons(c) && canon == JT_NIL; c = jt_cdr(c))
          if (jt_eql(jt_car(jt_cdr(jt_car(c))), jt_car(jt_cdr(spec)))) canon = jt_car(c);
        if (canon == JT_NIL) {
          JT_PUSH(S, l);
          jt_V cell = jt_cons(S, spec, jt_vec_(S->sp[-2])->items[i]);
          l = S->sp[-1];
          JT_POP(S, 1);
          jt_vec_(S->sp[-1])->items[i] = cell;
        } else if (canon != spec) {
          JT_SET(S, s, jt_cons_(s)->car, canon);
        }
      }
    }
    eqls = S->sp[-1];
  }
  JT_SET(S, base[0], GF(base[0])->eqls, eqls);
  JT_TOUCH(S, base[0]);
  GF(base[0])->dispatch = mask;
  S->sp = base;
}

static void method_detach(jt_State *S, jt_V gf, jt_V m) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  JT_PUSH(S, m);
  int n = 0;
  for (jt_V l = GF(gf)->methods; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(l) != m) { JT_PUSH(S, jt_car(l)); n++; }
  jt_V ms = jt_list_from(S, n, base + 2);
  JT_SET(S, base[0], GF(base[0])->methods, ms);
  JT_SET(S, base[1], METH(base[1])->gf, JT_NIL);
  S->sp = base;
}

void jt_gf_add_method(jt_State *S, jt_V gf, jt_V m) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  JT_PUSH(S, m);
  if (METH(m)->gf != JT_NIL && METH(m)->gf != gf)
    gf_error(S, JT_SYM(S, SIMPLE_ERROR), "the method %s already belongs to another generic function", m);
  int n = 0;
  for (jt_V s = METH(m)->specializers; jt_iscons(s); s = jt_cdr(s)) n++;
  if (n != GF(gf)->nreq)
    gf_error(S, JT_SYM(S, PROGRAM_ERROR), "wrong number of specializers for the generic function %s",
             GF(gf)->name);
  if (!(METH(m)->h.flags & (JT_METH_READER | JT_METH_WRITER)))
    check_congruent(S, gf, METH(m)->lambda_list, gf);
  jt_V old = jt_gf_find_method(S, gf, METH(m)->qualifiers, METH(m)->specializers);
  if (old != JT_NIL) method_detach(S, base[0], old);
  jt_V ms = jt_cons(S, base[1], GF(base[0])->methods);
  JT_SET(S, base[0], GF(base[0])->methods, ms);
  JT_SET(S, base[1], METH(base[1])->gf, base[0]);
  recompute_dispatch(S, base[0]);
  jt_clos_changed(S);
  S->sp = base;
}

void jt_gf_remove_method(jt_State *S, jt_V gf, jt_V m) {
  if (METH(m)->gf != gf) return;   /* CLHS: no effect if it is not a method of gf */
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  method_detach(S, gf, m);
  recompute_dispatch(S, base[0]);
  jt_clos_changed(S);
  S->sp = base;
}

/* ----------------------------------------------------------- the cache */

static inline jt_V eql_key(jt_State *S, jt_V specs, jt_V arg) {
  (void)S;
  for (; jt_iscons(specs); specs = jt_cdr(specs))
    if (jt_eql(jt_car(jt_cdr(jt_car(specs))), arg)) return jt_car(specs);
  return JT_NIL;
}

/* Keys of a call: for each dispatched position, the canonical EQL
** specializer the argument matches or its class.  Returns the count, -1
** when more positions are dispatched than the cache handles, or -2 when an
** argument is an instance of a redefined class not yet updated. */
static int call_keys(jt_State *S, jt_Generic *g, jt_V *argv, jt_V *keys) {
  uint32_t mask = g->dispatch;
  int nk = 0;
  for (int i = 0; mask; i++, mask >>= 1) {
    if (!(mask & 1)) continue;
    if (nk == MAX_KEYS) return -1;
    jt_V a = argv[i], k = JT_NIL;
    if (g->eqls != JT_NIL) k = eql_key(S, jt_vec_(g->eqls)->items[i], a);
    if (k == JT_NIL) {
      if (jt_is(a, JT_TINSTANCE)) {
        jt_V w = jt_inst_(a)->wrapper;
        k = jt_vec_(w)->items[JT_W_CLASS];
        if (jt_class_(k)->wrapper != w) return -2;
      } else {
        k = jt_class_of(S, a);
      }
    }
    keys[nk++] = k;
  }
  return nk;
}

static inline size_t key_hash(const jt_V *keys, int nk) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < nk; i++) h = (h ^ (keys[i] >> 4)) * 0xBF58476D1CE4E5B9ull;
  return (size_t)(h >> 29);
}

static jt_V cache_lookup(jt_Generic *g, const jt_V *keys, int nk) {
  jt_V c = g->cache;
  if (c == JT_NIL) return JT_NOVALUE;
  jt_Vector *v = jt_vec_(c);
  size_t stride = (size_t)nk + 1, cap = v->len / stride, mask = cap - 1;
  for (size_t i = key_hash(keys, nk) & mask, probes = 0; probes < cap; i = (i + 1) & mask, probes++) {
    jt_V *row = v->items + i * stride;
    if (row[nk] == JT_NOVALUE) return JT_NOVALUE;   /* empty row */
    int k = 0;
    while (k < nk && row[k] == keys[k]) k++;
    if (k == nk) return row[nk];
  }
  return JT_NOVALUE;
}

static void cache_insert_row(jt_State *S, jt_V c, const jt_V *keys, int nk, jt_V em) {
  jt_Vector *v = jt_vec_(c);
  size_t stride = (size_t)nk + 1, cap = v->len / stride, mask = cap - 1;
  size_t i = key_hash(keys, nk) & mask;
  while (v->items[i * stride + nk] != JT_NOVALUE) i = (i + 1) & mask;
  for (int k = 0; k < nk; k++) JT_SET_GC(S, c, v->items[i * stride + k], keys[k]);
  JT_SET_GC(S, c, v->items[i * stride + nk], em);
}

static void cache_put(jt_State *S, jt_V gf, const jt_V *keys, int nk, jt_V em) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  JT_PUSH(S, em);
  for (int k = 0; k < nk; k++) JT_PUSH(S, keys[k]);
  jt_Generic *g = GF(gf);
  size_t stride = (size_t)nk + 1;
  size_t cap = g->cache == JT_NIL ? 0 : jt_vec_(g->cache)->len / stride;
  if ((g->ncached + 1) * 2 > cap) {
    size_t ncap = cap ? cap * 2 : (nk ? 8 : 1);
    jt_V nc = jt_make_vector(S, ncap * stride, JT_NOVALUE);
    g = GF(base[0]);
    if (g->cache != JT_NIL) {
      jt_Vector *o = jt_vec_(g->cache);
      for (size_t r = 0; r < cap; r++)
        if (o->items[r * stride + nk] != JT_NOVALUE)
          cache_insert_row(S, nc, o->items + r * stride, nk, o->items[r * stride + nk]);
    }
    JT_SET_GC(S, g, g->cache, nc);
  }
  cache_insert_row(S, g->cache, base + 2, nk, base[1]);
  g->ncached++;
  S->sp = base;
}

static inline void cache_check_epoch(jt_State *S, jt_Generic *g) {
  if (g->epoch != S->clos_epoch) {
    JT_SET_GC(S, g, g->cache, JT_NIL);
    g->ncached = 0;
    g->epoch = S->clos_epoch;
  }
}

/* ------------------------------------------------- computing an effective method */

static bool applicable(jt_State *S, jt_V m, jt_V *argv, jt_V *classes) {
  int i = 0;
  for (jt_V s = METH(m)->specializers; jt_iscons(s); s = jt_cdr(s), i++) {
    jt_V spec = jt_car(s);
    if (spec == JT_CLASS(S, T)) continue;
    if (eql_spec_p(S, spec)) {
      if (!jt_eql(jt_car(jt_cdr(spec)), argv[i])) return false;
    } else if (!jt_class_subclassp(classes[i], spec)) {
      return false;
    }
  }
  return true;
}

/* The options of a generic function's defgeneric form (NIL for an
** implicit one); the form was a proper list when it was defined. */
static jt_V gf_options(jt_V gf) {
  jt_V form = GF(gf)->form;
  if (!jt_iscons(form) || !jt_iscons(jt_cdr(form)) || !jt_iscons(jt_cdr(jt_cdr(form)))) return JT_NIL;
  return jt_cdr(jt_cdr(jt_cdr(form)));
}

/* The rest of the generic function's option whose keyword is `k`, or
** JT_NOVALUE when it has none. */
static jt_V gf_option(jt_V gf, jt_V k) {
  int n = 0;
  for (jt_V o = gf_options(gf); jt_iscons(o) && n < 10000; o = jt_cdr(o), n++)
    if (jt_iscons(jt_car(o)) && jt_car(jt_car(o)) == k) return jt_cdr(jt_car(o));
  return JT_NOVALUE;
}

/* The method combination of a generic function: (name . options), or NIL
** for the standard one, which the C code runs itself. */
static jt_V gf_combination(jt_State *S, jt_V gf) {
  jt_V spec = gf_option(gf, JT_CSYM(S, K_METHOD_COMBINATION));
  if (spec == JT_NOVALUE || (jt_car(spec) == JT_CSYM(S, STANDARD) && jt_cdr(spec) == JT_NIL)) return JT_NIL;
  return spec;
}

#define MAX_ORDERED 64   /* required arguments an :argument-precedence-order reorders */

/* The order in which the required arguments decide which method is more
** specific: the :argument-precedence-order, else left to right (NULL). */
static const int *gf_precedence(jt_State *S, jt_V gf, int *order) {
  int nreq = GF(gf)->nreq;
  jt_V apo = gf_option(gf, JT_CSYM(S, K_ARGUMENT_PRECEDENCE_ORDER));
  if (apo == JT_NOVALUE || nreq > MAX_ORDERED) return NULL;
  int k = 0;
  for (; jt_iscons(apo) && k < nreq; apo = jt_cdr(apo), k++) {
    int i = 0;
    jt_V r = jt_car(jt_cdr(jt_cdr(GF(gf)->form)));   /* the lambda list */
    for (; jt_iscons(r) && jt_car(r) != jt_car(apo) && i < nreq; r = jt_cdr(r)) i++;
    if (i >= nreq) return NULL;   /* checked when defined: only a changed form gets here */
    order[k] = i;
  }
  return k == nreq ? order : NULL;
}

static jt_V nth_spec(jt_V l, int i) {
  while (i-- > 0) l = jt_cdr(l);
  return jt_car(l);
}

/* Whether m1 is more specific than m2 for arguments of these classes,
** comparing the arguments in `order` (NULL: left to right). */
static bool more_specific(jt_State *S, jt_V m1, jt_V m2, jt_V *classes, const int *order, int nreq) {
  jt_V a = METH(m1)->specializers, b = METH(m2)->specializers;
  for (int k = 0; k < nreq && jt_iscons(a) && jt_iscons(b); k++) {
    int i = order ? order[k] : k;
    jt_V x = order ? nth_spec(METH(m1)->specializers, i) : jt_car(a);
    jt_V y = order ? nth_spec(METH(m2)->specializers, i) : jt_car(b);
    a = jt_cdr(a), b = jt_cdr(b);
    if (x == y) continue;
    if (eql_spec_p(S, x)) return true;
    if (eql_spec_p(S, y)) return false;
    for (jt_V l = CLS(classes[i])->cpl; jt_iscons(l); l = jt_cdr(l)) {
      if (jt_car(l) == x) return true;
      if (jt_car(l) == y) return false;
    }
    return false;
  }
  return false;
}

/* The effective method for these arguments (CLHS 7.6.6.2). */
static jt_V compute_em(jt_State *S, jt_V gf, int argc, jt_V *argv) {
  (void)argc;
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  int nreq = GF(gf)->nreq;
  jt_V *classes = S->sp;
  for (int i = 0; i < nreq; i++) { jt_V c = jt_class_of(S, argv[i]); JT_PUSH(S, c); }
  /* applicable methods, sorted most specific first (insertion sort) */
  int order_buf[MAX_ORDERED];
  const int *order = gf_precedence(S, base[0], order_buf);
  jt_V *ms = S->sp;
  int n = 0;
  for (jt_V l = GF(base[0])->methods; jt_iscons(l); l = jt_cdr(l)) {
    jt_V m = jt_car(l);
    if (!applicable(S, m, argv, classes)) continue;
    JT_PUSH(S, m);
    int j = n++;
    while (j > 0 && more_specific(S, m, ms[j - 1], classes, order, nreq)) { ms[j] = ms[j - 1]; j--; }
    ms[j] = m;
  }
  jt_V em;
  jt_V comb = n ? gf_combination(S, base[0]) : JT_NIL;
  if (n == 0) {
    em = EM_NONE;
  } else if (comb != JT_NIL) {
    /* another combination: the library makes its effective method, a
    ** function of the arguments (60-clos.lisp, %combined-method) */
    jt_V ml = jt_list_from(S, n, ms);
    JT_PUSH(S, ml);
    jt_V f = jt_symobj(S, jt_intern(S, "%COMBINED-METHOD"))->function;
    em = jt_funcall(S, f, 3, base[0], ml, gf_combination(S, base[0]));
    if (!jt_is(em, JT_TCLOSURE)) gf_error(S, JT_SYM(S, SIMPLE_ERROR), "not an effective method: %s", em);
  } else {
    for (int i = 0; i < n; i++)
      if (METH(ms[i])->h.flags & JT_METH_OTHER) {
        char *q = jt_print_cstr(S, METH(ms[i])->qualifiers, true, 200);
        char *g = jt_print_cstr(S, GF(base[0])->name, true, 200);
        snprintf(S->msgbuf, sizeof S->msgbuf,
                 "invalid method error: a method of %s has the qualifiers %s, but the standard method "
                 "combination takes none or one of :before, :after and :around (give the generic function "
                 "another combination with (:method-combination NAME) in its defgeneric)", g, q);
        free(q); free(g);
        jt_error(S, "%s", S->msgbuf);
      }
    int counts[4] = {0};
    for (int i = 0; i < n; i++) counts[JT_METH_QUAL(METH(ms[i]))]++;
    if (counts[JT_METH_PRIMARY] == 0) {
      em = EM_NO_PRIMARY;
    } else if (n == 1) {
      em = ms[0];
    } else {
      jt_V *parts = S->sp;
      for (int p = 0; p < 4; p++) JT_PUSH(S, JT_NIL);
      /* build each list from its end: afters run least specific first */
      for (int i = n - 1; i >= 0; i--) {
        int q = JT_METH_QUAL(METH(ms[i]));
        if (q == JT_METH_AFTER) continue;
        parts[q] = jt_cons(S, ms[i], parts[q]);
      }
      for (int i = 0; i < n; i++)
        if (JT_METH_QUAL(METH(ms[i])) == JT_METH_AFTER) parts[JT_METH_AFTER] = jt_cons(S, ms[i], parts[JT_METH_AFTER]);
      jt_V inner;
      if (parts[JT_METH_BEFORE] == JT_NIL && parts[JT_METH_AFTER] == JT_NIL) {
        inner = parts[JT_METH_PRIMARY];   /* primaries only: a chain of methods */
        if (jt_cdr(inner) == JT_NIL) inner = jt_car(inner);
      } else {
        inner = jt_make_vector(S, EM_COUNT, JT_NIL);
        jt_vec_(inner)->items[EM_BEFORES] = parts[JT_METH_BEFORE];
        jt_vec_(inner)->items[EM_PRIMARIES] = parts[JT_METH_PRIMARY];
        jt_vec_(inner)->items[EM_AFTERS] = parts[JT_METH_AFTER];
      }
      JT_PUSH(S, inner);
      /* the :around methods in front, ending in the inner combination */
      jt_V chain = S->sp[-1];
      int na = 0;
      for (jt_V l = parts[JT_METH_AROUND]; jt_iscons(l); l = jt_cdr(l)) na++;
      for (int i = na - 1; i >= 0; i--) {
        jt_V l = parts[JT_METH_AROUND];
        for (int k = 0; k < i; k++) l = jt_cdr(l);
        chain = jt_cons(S, jt_car(l), S->sp[-1]);
        S->sp[-1] = chain;
      }
      em = S->sp[-1];
    }
  }
  S->sp = base;
  return em;
}

/* --------------------------------------------------- running a combination */

static jt_V run_chain(jt_State *S, jt_V gf, jt_V chain, int argc, jt_V *argv);

/* Call fn with a private copy of argv: the callee may use its arguments as
** its frame, and the caller still needs them. */
static jt_V apply_copy(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  jt_V *base = S->sp;
  if (base + argc + 1 >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < argc; i++) *S->sp++ = argv[i];
  jt_V r = jt_apply(S, fn, argc, base);
  S->sp = base;
  return r;
}

static JT_NORETURN void wrong_args(jt_State *S, int argc) {
  jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "invalid number of arguments: %d", argc);
}

/* Call one method; `next` is what call-next-method does inside it. */
static jt_V call_method(jt_State *S, jt_V m, jt_V next, int argc, jt_V *argv) {
  jt_Method *M = METH(m);
  if (M->h.flags & JT_METH_READER) {
    if (argc != 1) wrong_args(S, argc);
    S->nvals = 1;
    return jt_slot_get(S, argv[0], M->slot);
  }
  if (M->h.flags & JT_METH_WRITER) {
    if (argc != 2) wrong_args(S, argc);
    jt_slot_set(S, argv[1], M->slot, argv[0]);
    S->nvals = 1;
    return argv[0];
  }
  if (!(M->h.flags & JT_METH_CTX)) return apply_copy(S, M->function, argc, argv);
  /* the context: (method next . arguments), conses only */
  jt_V *base = S->sp;
  JT_PUSH(S, m);
  JT_PUSH(S, next);
  jt_V ctx = jt_list_from(S, argc, argv);
  ctx = jt_cons(S, base[1], ctx);
  ctx = jt_cons(S, base[0], ctx);
  jt_V *args_at = S->sp;
  if (S->sp + argc + 2 >= S->stack_end) jt_stack_overflow(S);
  *S->sp++ = ctx;
  for (int i = 0; i < argc; i++) *S->sp++ = argv[i];
  jt_V r = jt_apply(S, METH(base[0])->function, argc + 1, args_at);
  S->sp = base;
  return r;
}

static jt_V no_method(jt_State *S, jt_V gf, jt_V which, int argc, jt_V *argv) {
  jt_V *base = S->sp;
  JT_PUSH(S, which);
  JT_PUSH(S, gf);
  for (int i = 0; i < argc; i++) JT_PUSH(S, argv[i]);
  jt_V r = jt_apply(S, base[0], argc + 1, base + 1);
  S->sp = base;
  return r;
}

static void check_method(jt_State *S, jt_V m) {
  if (!jt_is(m, JT_TMETHOD)) gf_error(S, JT_SYM(S, SIMPLE_ERROR), "not a method: %s", m);
}

/* The inner standard combination: befores, primaries, afters. */
static jt_V run_inner(jt_State *S, jt_V gf, jt_V em, int argc, jt_V *argv) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  JT_PUSH(S, em);
  if (jt_vec_(em)->len != EM_COUNT) gf_error(S, JT_SYM(S, SIMPLE_ERROR), "not an effective method: %s", em);
  for (jt_V l = jt_vec_(em)->items[EM_BEFORES]; jt_iscons(l); l = jt_cdr(l)) {
    check_method(S, jt_car(l));
    JT_PUSH(S, l);
    call_method(S, jt_car(l), JT_NIL, argc, argv);
    l = S->sp[-1];
    JT_POP(S, 1);
  }
  jt_V prims = jt_vec_(base[1])->items[EM_PRIMARIES];
  jt_V r;
  if (!jt_iscons(prims)) {
    r = no_method(S, base[0], JT_GENERIC(S, NO_APPLICABLE_METHOD), argc, argv);
  } else {
    check_method(S, jt_car(prims));
    r = call_method(S, jt_car(prims), jt_cdr(prims), argc, argv);
  }
  jt_V afters = jt_vec_(base[1])->items[EM_AFTERS];
  if (afters == JT_NIL) { S->sp = base; return r; }
  /* keep the primary's values across the :after methods */
  int nv = S->nvals;
  if (nv == 1) JT_PUSH(S, r);
  else for (int i = 0; i < nv; i++) JT_PUSH(S, S->mv[i]);
  jt_V *vals = S->sp - nv;
  for (jt_V l = jt_vec_(base[1])->items[EM_AFTERS]; jt_iscons(l); l = jt_cdr(l)) {
    check_method(S, jt_car(l));
    JT_PUSH(S, l);
    call_method(S, jt_car(l), JT_NIL, argc, argv);
    l = S->sp[-1];
    JT_POP(S, 1);
  }
  r = jt_values(S, nv, vals);
  if (nv == 0) r = JT_NIL;
  S->sp = base;
  return r;
}

/* Run an effective method or the rest of one (see the top of the file). */
static jt_V run_chain(jt_State *S, jt_V gf, jt_V chain, int argc, jt_V *argv) {
  if (jt_is(chain, JT_TMETHOD)) return call_method(S, chain, JT_NIL, argc, argv);
  if (jt_iscons(chain)) {
    check_method(S, jt_car(chain));
    return call_method(S, jt_car(chain), jt_cdr(chain), argc, argv);
  }
  if (jt_isvector(chain)) return run_inner(S, gf, chain, argc, argv);
  if (chain == EM_NONE) return no_method(S, gf, JT_GENERIC(S, NO_APPLICABLE_METHOD), argc, argv);
  if (jt_is(chain, JT_TCLOSURE)) {   /* another combination's effective method */
    JT_PUSH(S, chain);
    jt_V r = apply_copy(S, chain, argc, argv);
    JT_POP(S, 1);
    return r;
  }
  if (chain == EM_NO_PRIMARY) {
    char *n = jt_print_cstr(S, GF(gf)->name, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf, "there is no primary method for the generic function %s", n);
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  gf_error(S, JT_SYM(S, SIMPLE_ERROR), "not an effective method: %s", chain);
}

/* Instances of a redefined class are brought up to date when they are
** dispatched on, before any method sees them (as PCL does). */
static void update_obsolete_args(jt_State *S, jt_Generic *g, jt_V *argv) {
  uint32_t mask = g->dispatch;
  for (int i = 0; mask; i++, mask >>= 1)
    if ((mask & 1) && jt_is(argv[i], JT_TINSTANCE) && jt_instance_obsolete(argv[i]))
      jt_instance_slots(S, argv[i]);
}

static jt_V effective_method(jt_State *S, jt_V gf, int argc, jt_V *argv) {
  jt_Generic *g = GF(gf);
  cache_check_epoch(S, g);
  jt_V keys[MAX_KEYS];
  int nk = call_keys(S, g, argv, keys);
  if (nk == -2) {
    JT_PUSH(S, gf);
    update_obsolete_args(S, g, argv);   /* may run methods: anything may change */
    gf = S->sp[-1];
    JT_POP(S, 1);
    g = GF(gf);
    cache_check_epoch(S, g);
    nk = call_keys(S, g, argv, keys);
  }
  if (nk < 0) return compute_em(S, gf, argc, argv);
  jt_V em = cache_lookup(g, keys, nk);
  if (em != JT_NOVALUE) return em;
  JT_PUSH(S, gf);
  em = compute_em(S, gf, argc, argv);
  cache_put(S, S->sp[-1], keys, nk, em);
  JT_POP(S, 1);
  return em;
}

/* Whether the &key part of a lambda list names keyword k; *allow is set
** when it has &allow-other-keys. */
static bool names_key(jt_State *S, jt_V ll, jt_V k, bool *allow) {
  bool in_keys = false, found = false;
  for (; jt_iscons(ll); ll = jt_cdr(ll)) {
    jt_V p = jt_car(ll);
    if (p == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) { *allow = true; return true; }
    if (p == JT_SYM(S, AND_KEY)) { in_keys = true; continue; }
    if (lambda_keyword(S, p)) { in_keys = false; continue; }
    if (!in_keys || found) continue;
    jt_V spec = jt_iscons(p) ? jt_car(p) : p;   /* var, or (keyword var) */
    if (jt_iscons(spec)) found = jt_car(spec) == k;
    else found = jt_issymbol(spec) && jt_iskeyword(k) && strcmp(jt_symname(S, spec), jt_symname(S, k)) == 0;
  }
  return found;
}

/* CLHS 7.6.5: a call's keyword arguments must be ones the generic
** function's lambda list or an applicable method's names, unless one of
** them has &allow-other-keys or the call passes :allow-other-keys true.
** (Each method's own function accepts any keyword, so that methods do not
** refuse each other's.) */
static void check_call_keys(jt_State *S, jt_V gf, int argc, jt_V *argv) {
  int from = GF(gf)->nreq + GF(gf)->nopt;
  if ((argc - from) % 2) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "odd number of keyword arguments");
  for (int i = from; i < argc; i += 2)
    if (argv[i] == JT_SYM(S, K_ALLOW_OTHER_KEYS)) {
      if (argv[i + 1] != JT_NIL) return;
      break;
    }
  jt_V *base = S->sp;
  jt_V *classes = NULL;
  for (int i = from; i < argc; i += 2) {
    jt_V k = argv[i];
    if (!jt_issymbol(k)) gf_error(S, JT_SYM(S, PROGRAM_ERROR), "%s is not a keyword argument", k);
    bool allow = false;
    if (k == JT_SYM(S, K_ALLOW_OTHER_KEYS) || names_key(S, GF(gf)->lambda_list, k, &allow)) continue;
    if (!classes) {
      classes = S->sp;
      JT_PUSH(S, gf);
      for (int j = 0; j < GF(base[0])->nreq; j++) { jt_V c = jt_class_of(S, argv[j]); JT_PUSH(S, c); }
      gf = base[0];
      classes = base + 1;
    }
    bool ok = false;
    for (jt_V l = GF(gf)->methods; jt_iscons(l) && !ok; l = jt_cdr(l))
      if (!(METH(jt_car(l))->h.flags & (JT_METH_READER | JT_METH_WRITER)) && applicable(S, jt_car(l), argv, classes))
        ok = names_key(S, METH(jt_car(l))->lambda_list, k, &allow);
    if (allow) break;
    if (!ok) {
      char *kn = jt_print_cstr(S, k, true, 100);
      char *n = jt_print_cstr(S, GF(gf)->name, true, 200);
      snprintf(S->msgbuf, sizeof S->msgbuf,
               "the keyword argument %s is not accepted by %s or any of its methods that apply", kn, n);
      free(kn); free(n);
      jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
    }
  }
  S->sp = base;
}

jt_V jt_gf_call(jt_State *S, jt_V gf, int argc, jt_V *argv) {
  jt_Generic *g = GF(gf);
  if (argc < g->nreq || (!(g->h.flags & JT_GF_REST) && argc > g->nreq + g->nopt)) wrong_args(S, argc);
  if ((g->h.flags & (JT_GF_KEY | JT_GF_ALLOW)) == JT_GF_KEY && argc > g->nreq + g->nopt) {
    check_call_keys(S, gf, argc, argv);
    g = GF(gf);
  }
  jt_V em = effective_method(S, gf, argc, argv);
  if (jt_is(em, JT_TMETHOD)) {
    unsigned flags = jt_method_(em)->h.flags;
    if (!(flags & (JT_METH_CTX | JT_METH_READER | JT_METH_WRITER))) {
      /* the fast path: one primary method, called like an ordinary
      ** function (its arguments are already on top of the stack) */
      jt_V fn = jt_method_(em)->function;
      if (jt_is(fn, JT_TCLOSURE)) return jt_apply_closure(S, fn, argc, argv);
      return jt_apply(S, fn, argc, argv);
    }
    if ((flags & JT_METH_READER) && argc == 1) {
      /* a slot reader on an up-to-date instance: read it here */
      jt_V v = jt_instance_read(argv[0], jt_method_(em)->slot);
      if (v != JT_NOVALUE) {
        JT_READ(S, JITI_READ_SLOT, argv[0], jt_method_(em)->slot, v);
        S->nvals = 1;
        return v;
      }
    }
  }
  JT_PUSH(S, gf);
  jt_V r = run_chain(S, S->sp[-1], em, argc, argv);
  JT_POP(S, 1);
  return r;
}

bool jt_gf_user_methods_apply(jt_State *S, jt_V gf, int argc, jt_V *argv) {
  jt_V em = effective_method(S, gf, argc, argv);
  return !(jt_is(em, JT_TMETHOD) && (jt_method_(em)->h.flags & JT_METH_LOCKED));
}

/* (%call-next-method context), (%call-next-method-with context arg...) and
** (%next-method-p context): what call-next-method and next-method-p
** expand into inside a method body.  The context is checked, so a forged
** one can only reach methods the caller could have called anyway. */
static void check_ctx(jt_State *S, jt_V ctx) {
  if (!jt_iscons(ctx) || !jt_is(jt_car(ctx), JT_TMETHOD) || !jt_iscons(jt_cdr(ctx)))
    jt_error(S, "call-next-method: not inside a method");
}

static jt_V applicable_sorted(jt_State *S, jt_V gf, jt_V *args);

/* call-next-method with arguments: the methods that apply to them must be
** the ones that apply to the call's (CLHS call-next-method).  The same
** dispatch keys are enough; otherwise both lists are compared. */
static void check_next_arguments(jt_State *S, jt_V ctx, int argc, jt_V *argv) {
  jt_V gf = METH(jt_car(ctx))->gf;
  if (!jt_is(gf, JT_TGENERIC) || argc < GF(gf)->nreq) return;
  jt_V *base = S->sp;
  JT_PUSH(S, ctx);
  JT_PUSH(S, gf);
  jt_V *orig = S->sp;
  int n = 0;
  for (jt_V l = jt_cdr(jt_cdr(ctx)); jt_iscons(l) && n < GF(gf)->nreq; l = jt_cdr(l), n++) JT_PUSH(S, jt_car(l));
  if (n < GF(gf)->nreq) { S->sp = base; return; }
  jt_V k1[MAX_KEYS], k2[MAX_KEYS];
  int n1 = call_keys(S, GF(gf), orig, k1), n2 = call_keys(S, GF(gf), argv, k2);
  bool same = n1 >= 0 && n1 == n2;
  for (int i = 0; same && i < n1; i++) same = k1[i] == k2[i];
  if (!same) {
    jt_V a = applicable_sorted(S, base[1], orig);
    JT_PUSH(S, a);
    jt_V b = applicable_sorted(S, base[1], argv);
    same = jt_equal(S, S->sp[-1], b);
  }
  if (!same)
    gf_error(S, JT_SYM(S, SIMPLE_ERROR),
             "call-next-method: the methods of %s that apply to the new arguments are not those that apply "
             "to the call's (call the generic function again instead)", GF(base[1])->name);
  S->sp = base;
}

static jt_V call_next(jt_State *S, jt_V ctx, int argc, jt_V *argv) {
  jt_V m = jt_car(ctx), next = jt_car(jt_cdr(ctx));
  jt_V gf = METH(m)->gf;
  if (next == JT_NIL) {
    jt_V *base = S->sp;
    JT_PUSH(S, JT_GENERIC(S, NO_NEXT_METHOD));
    JT_PUSH(S, gf);
    JT_PUSH(S, m);
    for (int i = 0; i < argc; i++) JT_PUSH(S, argv[i]);
    jt_V r = jt_apply(S, base[0], argc + 2, base + 1);
    S->sp = base;
    return r;
  }
  if (!jt_is(gf, JT_TGENERIC) || argc < GF(gf)->nreq) wrong_args(S, argc);
  return run_chain(S, gf, next, argc, argv);
}

/* The next method with the arguments in a list. */
static jt_V call_next_list(jt_State *S, jt_V ctx, jt_V args) {
  jt_V *base = S->sp;
  JT_PUSH(S, ctx);
  JT_PUSH(S, args);
  int n = 0;
  jt_V l = args;
  for (; jt_iscons(l); l = jt_cdr(l)) {
    if (n > 100000) jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "call-next-method: too many arguments");
    JT_PUSH(S, jt_car(l));
    n++;
  }
  if (l != JT_NIL) jt_type_error(S, base[1], JT_SYM(S, LIST));
  jt_V r = call_next(S, base[0], n, base + 2);
  S->sp = base;
  return r;
}

JT_FN(f_call_next_method) {
  check_ctx(S, argv[0]);
  return call_next_list(S, argv[0], jt_cdr(jt_cdr(argv[0])));
}

JT_FN(f_call_next_method_list) {
  check_ctx(S, argv[0]);
  jt_V *base = S->sp;
  int n = 0;
  jt_Walk w = jt_walk(argv[1]);
  for (jt_V l = argv[1]; jt_iscons(l); l = jt_walk_next(S, &w, l), n++) JT_PUSH(S, jt_car(l));
  check_next_arguments(S, argv[0], n, base);
  S->sp = base;
  return call_next_list(S, argv[0], argv[1]);
}

JT_FN(f_call_next_method_with) {
  check_ctx(S, argv[0]);
  check_next_arguments(S, argv[0], argc - 1, argv + 1);
  return call_next(S, argv[0], argc - 1, argv + 1);
}

JT_FN(f_next_method_p) {
  check_ctx(S, argv[0]);
  return jt_bool(jt_car(jt_cdr(argv[0])) != JT_NIL);
}

/* ------------------------------------------------------------ defmethod */

/* Whether the tree mentions call-next-method or next-method-p (bounded:
** source read with #n# can share structure). */
static bool mentions_next(jt_State *S, jt_V x, size_t *budget) {
  jt_check_cstack(S);   /* the budget alone allows more nesting than the C stack */
  while (jt_iscons(x)) {
    if (*budget == 0) return true;   /* too big to tell: assume it does */
    --*budget;
    if (mentions_next(S, jt_car(x), budget)) return true;
    x = jt_cdr(x);
  }
  return x == JT_CSYM(S, CALL_NEXT_METHOD) || x == JT_CSYM(S, NEXT_METHOD_P);
}

/* The method lambda list with &allow-other-keys after the keys (a generic
** function accepts the keys of every applicable method, so one method must
** not refuse another's). */
static jt_V method_lambda_list(jt_State *S, jt_V ll, bool key, bool allow) {
  if (!key || allow) return ll;
  jt_V *base = S->sp;
  JT_PUSH(S, ll);
  int n = 0;
  bool placed = false;
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    if (jt_car(l) == JT_SYM(S, AND_AUX) && !placed) { JT_PUSH(S, JT_SYM(S, AND_ALLOW_OTHER_KEYS)); n++; placed = true; }
    JT_PUSH(S, jt_car(l));
    n++;
  }
  if (!placed) { JT_PUSH(S, JT_SYM(S, AND_ALLOW_OTHER_KEYS)); n++; }
  jt_V r = jt_list_from(S, n, base + 1);
  S->sp = base;
  return r;
}

/* A generic function's lambda list made from a method's (for defmethod
** without defgeneric): the required and optional names, &rest, &key. */
static jt_V implicit_lambda_list(jt_State *S, jt_V plain) {
  jt_V *base = S->sp;
  JT_PUSH(S, plain);
  int n = 0, state = 0;
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V x = jt_car(l);
    if (x == JT_SYM(S, AND_OPTIONAL)) { state = 1; JT_PUSH(S, x); n++; continue; }
    if (x == JT_SYM(S, AND_REST)) { state = 2; JT_PUSH(S, x); n++; continue; }
    if (x == JT_SYM(S, AND_KEY)) { state = 3; JT_PUSH(S, x); n++; continue; }
    if (x == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) continue;
    if (x == JT_SYM(S, AND_AUX)) break;
    if (state == 3) continue;
    JT_PUSH(S, jt_iscons(x) ? jt_car(x) : x);
    n++;
  }
  jt_V r = jt_list_from(S, n, base + 1);
  S->sp = base;
  return r;
}

/* The method's role in the standard combination, or JT_METH_OTHER: its
** qualifiers are for another combination, which judges them when it
** computes an effective method (CLHS 7.6.6.1: an invalid qualifier is an
** error then, not when the method is defined). */
static unsigned qualifier_kind(jt_State *S, jt_V quals) {
  if (quals == JT_NIL) return JT_METH_PRIMARY;
  if (jt_cdr(quals) == JT_NIL) {
    jt_V q = jt_car(quals);
    if (q == JT_CSYM(S, K_BEFORE)) return JT_METH_BEFORE;
    if (q == JT_CSYM(S, K_AFTER)) return JT_METH_AFTER;
    if (q == JT_CSYM(S, K_AROUND)) return JT_METH_AROUND;
  }
  return JT_METH_OTHER;
}

/* Whether the tree contains (function call-next-method) or (function
** next-method-p): the local functions are then needed as objects. */
static bool next_as_function(jt_State *S, jt_V x, size_t *budget) {
  jt_check_cstack(S);
  while (jt_iscons(x)) {
    if (*budget == 0) return true;
    --*budget;
    jt_V a = jt_car(x);
    if (a == JT_SYM(S, FUNCTION) && jt_iscons(jt_cdr(x)) &&
        (jt_car(jt_cdr(x)) == JT_CSYM(S, CALL_NEXT_METHOD) || jt_car(jt_cdr(x)) == JT_CSYM(S, NEXT_METHOD_P)))
      return true;
    if (next_as_function(S, a, budget)) return true;
    x = jt_cdr(x);
  }
  return false;
}

/* The body of a method that uses call-next-method or next-method-p,
** around `body`, with `ctx` the variable holding the context.  Local
** macros when the body only calls them — no closure to make at each call,
** and the method's variables stay on the stack:
**   (macrolet ((call-next-method (&rest a)
**                (if a (list* '%call-next-method-with 'ctx a)
**                      (list '%call-next-method 'ctx)))
**              (next-method-p () (list '%next-method-p 'ctx)))
**     . body)
** and local functions when it takes them as objects (#'call-next-method):
**   (flet ((call-next-method (&rest a)
**            (if a (%call-next-method-list ctx a) (%call-next-method ctx)))
**          (next-method-p () (%next-method-p ctx)))
**     . body) */
static jt_V next_method_wrapper(jt_State *S, jt_V ctx, jt_V body) {
  jt_V *base = S->sp;
  JT_PUSH(S, ctx);
  JT_PUSH(S, body);
  size_t budget = 1000000;
  bool fns = next_as_function(S, body, &budget);
  jt_V a = jt_make_symbol(S, jt_string_from_cstr(S, "ARGS"));
  JT_PUSH(S, a);                                   /* base[2] */
  jt_V q = jt_list(S, 2, JT_SYM(S, QUOTE), base[0]);
  JT_PUSH(S, q);                                   /* base[3]: 'ctx */
  jt_V with = jt_intern(S, "%CALL-NEXT-METHOD-WITH");
  JT_PUSH(S, with);                                /* base[4] */
  jt_V then, els, np;
  if (fns) {
    JT_PUSH(S, JT_NIL);
    then = jt_list(S, 3, jt_intern(S, "%CALL-NEXT-METHOD-LIST"), base[0], base[2]);
    JT_PUSH(S, then);
    els = jt_list(S, 2, JT_CSYM(S, PCALL_NEXT), base[0]);
    JT_PUSH(S, els);
    np = jt_list(S, 2, JT_CSYM(S, PNEXT_P), base[0]);
    JT_PUSH(S, np);
  } else {
    jt_V qw = jt_list(S, 2, JT_SYM(S, QUOTE), base[4]);
    JT_PUSH(S, qw);
    then = jt_list(S, 4, jt_intern(S, "LIST*"), S->sp[-1], base[3], base[2]);
    JT_PUSH(S, then);
    jt_V qc = jt_list(S, 2, JT_SYM(S, QUOTE), JT_CSYM(S, PCALL_NEXT));
    JT_PUSH(S, qc);
    els = jt_list(S, 3, JT_SYM(S, LIST), S->sp[-1], base[3]);
    S->sp[-1] = els;
    jt_V qn = jt_list(S, 2, JT_SYM(S, QUOTE), JT_CSYM(S, PNEXT_P));
    JT_PUSH(S, qn);
    np = jt_list(S, 3, JT_SYM(S, LIST), S->sp[-1], base[3]);
    S->sp[-1] = np;
  }
  /* stack now: ..., then, els, np */
  jt_V iff = jt_list(S, 4, jt_intern(S, "IF"), base[2], S->sp[-3], S->sp[-2]);
  JT_PUSH(S, iff);
  jt_V ll1 = jt_list(S, 2, JT_SYM(S, AND_REST), base[2]);
  JT_PUSH(S, ll1);
  jt_V d1 = jt_list(S, 3, JT_CSYM(S, CALL_NEXT_METHOD), S->sp[-1], S->sp[-2]);
  JT_PUSH(S, d1);
  jt_V d2 = jt_list(S, 3, JT_CSYM(S, NEXT_METHOD_P), JT_NIL, S->sp[-4]);
  JT_PUSH(S, d2);
  jt_V defs = jt_list(S, 2, S->sp[-2], S->sp[-1]);
  JT_PUSH(S, defs);
  jt_V w = jt_cons(S, S->sp[-1], base[1]);
  w = jt_cons(S, fns ? JT_CSYM(S, FLET) : jt_intern(S, "MACROLET"), w);
  S->sp = base;
  return w;
}

/* A value a store keeps exactly and gives back without evaluating
** anything: a number, a character, a string, or a symbol of a package
** (an uninterned symbol would be another symbol once read back). */
static bool kept_exactly(jt_State *S, jt_V v) {
  if (jt_isnumber(v) || jt_ischar(v) || jt_isstring(v)) return true;
  if (!jt_issymbol(v) || jt_is_internal(v)) return false;
  jt_V home = jt_package_of_index(S, jt_symobj(S, v)->package);
  return jt_symobj(S, v)->package != JT_PKG_NONE && home != JT_NIL && jt_pkg_(home)->name != JT_NIL;
}

/* The value of the x of an (EQL x) specializer when x is a literal of such
** a value — itself (a number, character, string, keyword, T, NIL), or
** quoted — else JT_NOVALUE.  A specializer is part of the method's name
** and of the revision that stores it: it must be the same value in every
** world the revision is imported into, and importing runs no code, so no
** other form is taken (an instance, a list or a vector, a variable's
** value, a call). */
static jt_V eql_literal(jt_State *S, jt_V x) {
  if (jt_iscons(x)) {
    if (jt_car(x) != JT_SYM(S, QUOTE) || !jt_iscons(jt_cdr(x)) || jt_cdr(jt_cdr(x)) != JT_NIL) return JT_NOVALUE;
    x = jt_car(jt_cdr(x));
    return kept_exactly(S, x) ? x : JT_NOVALUE;
  }
  if (jt_issymbol(x)) return x == JT_NIL || x == JT_T || jt_iskeyword(x) ? x : JT_NOVALUE;
  return kept_exactly(S, x) ? x : JT_NOVALUE;
}

/* The value of the (EQL x) specializer sname.  Defining a method (want ==
** JT_NOVALUE): a literal x (eql_literal) is its value; another x is a form
** the defmethod macro evaluated where the defmethod stands, its value in
** `evaluated` (an alist from each such form, by identity, to its value),
** and *kept turns false: the method cannot be stored.  Importing one: the
** value is the one its entry's name holds (want, an (EQL v)), which a
** literal x must agree with; a form of a store written before the rule (a
** variable, a call) is not evaluated. */
static jt_V eql_value(jt_State *S, jt_V sname, jt_V want, jt_V form, jt_V evaluated, bool *kept) {
  jt_V v = eql_literal(S, jt_car(jt_cdr(sname)));
  if (want == JT_NOVALUE) {
    if (v != JT_NOVALUE) return v;
    for (jt_V l = evaluated; jt_iscons(l); l = jt_cdr(l))
      if (jt_iscons(jt_car(l)) && jt_car(jt_car(l)) == jt_car(jt_cdr(sname))) {
        *kept = false;
        return jt_cdr(jt_car(l));
      }
    jt_clos_form_error(S, "an (EQL x) specializer needs x to be a literal number, character, string or "
                          "(quoted) symbol of a package, which a stored world keeps exactly; its form "
                          "is never evaluated again", sname);
  }
  if (!eql_spec_p(S, want) || (v != JT_NOVALUE && !jt_equal(S, v, jt_car(jt_cdr(want)))))
    jt_clos_form_error(S, "the stored form does not define the method its entry is named after", form);
  return jt_car(jt_cdr(want));
}

/* Build a method from (DEFMETHOD name qualifier* lambda-list . body) — a
** defmethod form, or a defgeneric :method option made into one.  Does not
** add it.  want: the specializers its entry's name holds, when it is
** imported (else JT_NOVALUE). */
static jt_V method_from_form(jt_State *S, jt_V form, jt_V gf_name, bool lazy, unsigned extra, jt_V want,
                             jt_V evaluated, bool *kept) {
  JT_PUSH(S, want);                           /* base[-1], then its rest */
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  JT_PUSH(S, gf_name);
  /* qualifiers, then the specialized lambda list */
  jt_V rest = jt_cdr(jt_cdr(form));
  JT_PUSH(S, JT_NIL);                         /* base[2]: qualifiers (reversed) */
  for (; jt_iscons(rest) && !jt_islist(jt_car(rest)); rest = jt_cdr(rest))
    base[2] = jt_cons(S, jt_car(rest), base[2]);
  if (!jt_iscons(rest)) jt_clos_form_error(S, "malformed defmethod (no lambda list)", form);
  base[2] = jt_nreverse_list(base[2]);
  unsigned qual = qualifier_kind(S, base[2]);
  jt_V sll = jt_car(rest);
  jt_V body = jt_cdr(rest);
  if (!jt_clos_proper_list(sll)) jt_clos_form_error(S, "malformed specialized lambda list", form);
  /* required parameters: names and specializers */
  JT_PUSH(S, JT_NIL);                         /* base[3]: specializers (reversed) */
  JT_PUSH(S, JT_NIL);                         /* base[4]: plain lambda list (reversed) */
  jt_V l = sll;
  for (; jt_iscons(l) && !lambda_keyword(S, jt_car(l)); l = jt_cdr(l)) {
    jt_V *pb = S->sp;
    JT_PUSH(S, l);                            /* pb[0] */
    jt_V p = jt_car(l), var = p;
    JT_PUSH(S, JT_CLASS(S, T));               /* pb[1]: the specializer */
    if (jt_iscons(p)) {
      if (!jt_iscons(jt_cdr(p)) || jt_cdr(jt_cdr(p)) != JT_NIL) jt_clos_form_error(S, "malformed specialized parameter", p);
      var = jt_car(p);
      jt_V sname = jt_car(jt_cdr(p));
      if (jt_iscons(sname)) {
        if (jt_car(sname) != JT_SYM(S, EQL) || !jt_iscons(jt_cdr(sname)) || jt_cdr(jt_cdr(sname)) != JT_NIL)
          jt_clos_form_error(S, "malformed specializer", sname);
        jt_V wanted = base[-1] == JT_NOVALUE ? JT_NOVALUE
                    : jt_iscons(base[-1]) ? jt_car(base[-1]) : JT_NIL;
        jt_V v = eql_value(S, sname, wanted, base[0], evaluated, kept);
        JT_PUSH(S, v);
        pb[1] = jt_list(S, 2, JT_SYM(S, EQL), v);
      } else {
        if (!jt_issymbol(sname)) jt_clos_form_error(S, "malformed specializer", sname);
        bool found;
        pb[1] = jt_hash_get(S, JT_CLOS(S, JT_CLOS_CLASSES), sname, &found);
        /* importing: a class only named so far (a superclass not yet
        ** defined, which a method may specialize on) comes back named only */
        if (!found && base[-1] != JT_NOVALUE) pb[1] = jt_class_ensure(S, sname);
        else if (!found) gf_error(S, JT_SYM(S, SIMPLE_ERROR), "there is no class named %s", sname);
      }
    }
    if (!jt_issymbol(var) || var == JT_NIL || var == JT_T || jt_iskeyword(var))
      jt_clos_form_error(S, "a required parameter is not a symbol", form);
    base[3] = jt_cons(S, pb[1], base[3]);
    base[4] = jt_cons(S, var, base[4]);       /* var is in the form: reachable */
    if (jt_iscons(base[-1])) base[-1] = jt_cdr(base[-1]);
    l = pb[0];
    S->sp = pb;
  }
  base[3] = jt_nreverse_list(base[3]);
  base[4] = jt_nreverse_list(base[4]);
  /* the rest of the lambda list as written */
  for (jt_V *t = &base[4]; ; ) {
    if (*t == JT_NIL) { *t = l; break; }
    t = &jt_cons_(*t)->cdr;
  }
  LL info;
  if (!ll_parse(S, base[4], &info)) jt_clos_form_error(S, "malformed lambda list in", form);
  /* documentation and declarations */
  JT_PUSH(S, body);                           /* base[5]: body */
  JT_PUSH(S, JT_NIL);                         /* base[6]: doc */
  JT_PUSH(S, JT_NIL);                         /* base[7]: declarations (reversed) */
  if (!jt_clos_proper_list(body)) jt_clos_form_error(S, "malformed method body", form);
  for (;;) {
    jt_V b = base[5];
    if (!jt_iscons(b)) break;
    jt_V f = jt_car(b);
    if (jt_isstring(f) && jt_iscons(jt_cdr(b)) && base[6] == JT_NIL) { base[6] = f; base[5] = jt_cdr(b); continue; }
    if (jt_iscons(f) && jt_car(f) == JT_SYM(S, DECLARE)) {
      base[7] = jt_cons(S, f, base[7]);
      base[5] = jt_cdr(base[5]);
      continue;
    }
    break;
  }
  size_t budget = 1000000;
  bool ctx = mentions_next(S, base[5], &budget);
  /* (DEFUN gf-name (ctx? . lambda-list) decl* body): the block is named
  ** after the generic function, as CLHS requires */
  jt_V mll = method_lambda_list(S, base[4], info.key, info.allow);
  JT_PUSH(S, mll);                            /* base[8] */
  jt_V fbody = base[5];
  JT_PUSH(S, fbody);                          /* base[9] */
  if (ctx) {
    jt_V cvar = jt_make_symbol(S, jt_string_from_cstr(S, "NEXT"));
    JT_PUSH(S, cvar);                         /* base[10] */
    jt_V wrapper = next_method_wrapper(S, base[10], base[5]);
    base[9] = jt_list(S, 1, wrapper);
    base[8] = jt_cons(S, base[10], base[8]);
  }
  /* declarations stay at the head of the function's body */
  for (jt_V d = base[7]; jt_iscons(d); d = jt_cdr(d)) base[9] = jt_cons(S, jt_car(d), base[9]);
  jt_V def = jt_cons(S, base[8], base[9]);
  def = jt_cons(S, base[1], def);
  def = jt_cons(S, JT_SYM(S, DEFUN), def);
  JT_PUSH(S, def);
  jt_V fn = jt_make_lazy_closure(S, def);
  JT_PUSH(S, fn);
  if (!lazy) jt_closure_lambda(S, fn);
  jt_V m = jt_method_make(S, base[2], base[3], base[4], fn,
                          qual | (ctx ? JT_METH_CTX : 0) | extra);
  JT_SET(S, m, METH(m)->doc, base[6]);
  S->sp = base - 1;
  return m;
}

/* Whether a method may be added to a built-in generic function: one of its
** specializers must be a class the program defined. */
static void check_builtin_gf(jt_State *S, jt_V gf, jt_V m) {
  if (!(GF(gf)->h.flags & JT_GF_LOCKED)) return;
  for (jt_V s = METH(m)->specializers; jt_iscons(s); s = jt_cdr(s))
    if (jt_is(jt_car(s), JT_TCLASS) && !(CLS(jt_car(s))->h.flags & JT_CLASS_LOCKED)) return;
  char *n = jt_print_cstr(S, GF(gf)->name, true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf,
           "a method on the built-in generic function %s needs a specializer that is a class "
           "defined by the program", n);
  free(n);
  jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "%s", S->msgbuf);
}

static void check_function_name(jt_State *S, jt_V form, jt_V name) {
  if (!jt_clos_function_name_p(S, name)) jt_clos_form_error(S, "not a function name in", form);
}

/* EQL compares strings by identity, and the string of an (EQL "text")
** specializer is not the one an import reads back from the method's name:
** a generic function keeps one string per text, so that a method defined
** again with the same text replaces the old one, as its stored entry
** (named by the text) does. */
static void share_string_specializers(jt_State *S, jt_V gf, jt_V m) {
  for (jt_V s = METH(m)->specializers; jt_iscons(s); s = jt_cdr(s)) {
    jt_V spec = jt_car(s);
    if (!eql_spec_p(S, spec) || !jt_isstring(jt_car(jt_cdr(spec)))) continue;
    jt_V same = JT_NOVALUE;
    for (jt_V ms = GF(gf)->methods; jt_iscons(ms) && same == JT_NOVALUE; ms = jt_cdr(ms))
      for (jt_V o = METH(jt_car(ms))->specializers; jt_iscons(o) && same == JT_NOVALUE; o = jt_cdr(o))
        if (eql_spec_p(S, jt_car(o)) && jt_isstring(jt_car(jt_cdr(jt_car(o)))) &&
            jt_equal(S, jt_car(jt_cdr(jt_car(o))), jt_car(jt_cdr(spec))))
          same = jt_car(jt_cdr(jt_car(o)));
    if (same != JT_NOVALUE) JT_SET(S, jt_cdr(spec), jt_cons_(jt_cdr(spec))->car, same);
  }
}

jt_V jt_method_define(jt_State *S, jt_V form, bool lazy, jt_V expect, jt_V evaluated) {
  JT_PUSH(S, expect);                          /* base[-1] */
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  JT_ROOT(S, evaluated);
  bool kept = true;
  if (!jt_clos_proper_list(form) || !jt_iscons(jt_cdr(form)) || !jt_iscons(jt_cdr(jt_cdr(form))))
    jt_clos_form_error(S, "malformed defmethod", form);
  jt_V name = jt_car(jt_cdr(form));
  check_function_name(S, form, name);
  jt_V gf = jt_gf_find(S, name);
  JT_PUSH(S, gf);                              /* base[1] */
  /* importing: the specializers its entry's name holds (the last of it) */
  jt_V want = JT_NOVALUE;
  if (expect != JT_NOVALUE) {
    want = JT_NIL;
    for (jt_V l = expect; jt_iscons(l); l = jt_cdr(l)) want = jt_car(l);
  }
  jt_V m = method_from_form(S, form, name, lazy, 0, want, evaluated, &kept);
  JT_PUSH(S, m);                               /* base[2] */
  JT_SET(S, m, METH(m)->form, base[0]);
  if (base[1] == JT_NIL) {
    jt_V ll = implicit_lambda_list(S, METH(m)->lambda_list);
    base[1] = jt_gf_ensure(S, name, ll);
  }
  check_builtin_gf(S, base[1], base[2]);
  share_string_specializers(S, base[1], base[2]);
  if (base[-1] != JT_NOVALUE) {
    /* import: the form must define the method its entry is named after */
    JT_SET(S, base[2], METH(base[2])->gf, base[1]);
    jt_V key = jt_method_key(S, base[2]);
    JT_SET(S, base[2], METH(base[2])->gf, JT_NIL);
    if (!jt_equal(S, key, base[-1]))
      jt_clos_form_error(S, "the stored form does not define the method its entry is named after", base[0]);
  }
  jt_V old = jt_gf_find_method(S, base[1], METH(base[2])->qualifiers, METH(base[2])->specializers);
  if (old != JT_NIL && (METH(old)->h.flags & JT_METH_LOCKED))
    gf_error(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot replace the built-in method %s", old);
  jt_gf_add_method(S, base[1], base[2]);
  if (S->world_define) {
    jt_V key = jt_method_key(S, base[2]);
    JT_PUSH(S, key);
    /* a specializer made by evaluating a form: kept so that the commit
    ** refuses it (an import evaluates nothing) */
    jt_V src = kept ? base[0] : jt_list(S, 2, jt_intern_keyword(S, "UNEXPORTABLE"), base[0]);
    JT_PUSH(S, src);
    S->world_define(S, key, JT_DEF_METHOD, src, base[2]);
  }
  m = base[2];
  S->sp = base - 1;
  JT_UNROOT(S, 1);
  return m;
}

jt_V jt_method_key(jt_State *S, jt_V m) {
  jt_V *base = S->sp;
  JT_PUSH(S, m);
  int n = 0;
  for (jt_V s = METH(m)->specializers; jt_iscons(s); s = jt_cdr(s)) {
    jt_V spec = jt_car(s);
    JT_PUSH(S, jt_is(spec, JT_TCLASS) ? CLS(spec)->name : spec);
    n++;
  }
  jt_V specs = jt_list_from(S, n, base + 1);
  S->sp = base + 1;
  JT_PUSH(S, specs);                           /* base[1] */
  jt_V key = jt_list(S, 1, specs);
  JT_PUSH(S, key);                             /* base[2] */
  jt_V *qb = S->sp;
  int nq = 0;
  for (jt_V l = METH(base[0])->qualifiers; jt_iscons(l); l = jt_cdr(l)) { JT_PUSH(S, jt_car(l)); nq++; }
  for (int i = nq - 1; i >= 0; i--) base[2] = jt_cons(S, qb[i], base[2]);
  S->sp = qb;
  jt_V gfname = METH(base[0])->gf != JT_NIL ? GF(METH(base[0])->gf)->name : JT_NIL;
  key = jt_cons(S, gfname, base[2]);
  S->sp = base;
  return key;
}

/* ----------------------------------------------------------- defgeneric */

jt_V jt_gf_define(jt_State *S, jt_V form, bool lazy) {
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  if (!jt_clos_proper_list(form) || !jt_iscons(jt_cdr(form)) || !jt_iscons(jt_cdr(jt_cdr(form))))
    jt_clos_form_error(S, "malformed defgeneric", form);
  jt_V name = jt_car(jt_cdr(form));
  check_function_name(S, form, name);
  jt_V ll = jt_car(jt_cdr(jt_cdr(form)));
  LL info;
  if (!ll_parse(S, ll, &info) || info.aux) jt_clos_form_error(S, "malformed generic function lambda list in", form);
  for (jt_V l = ll; jt_iscons(l); l = jt_cdr(l))
    if (jt_iscons(jt_car(l)) && !jt_clos_memq(JT_SYM(S, AND_KEY), ll))
      jt_clos_form_error(S, "a generic function's optional parameters have no defaults", form);
  /* options: checked before anything changes */
  jt_V doc = JT_NIL;
  for (jt_V o = jt_cdr(jt_cdr(jt_cdr(form))); jt_iscons(o); o = jt_cdr(o)) {
    jt_V opt = jt_car(o);
    if (!jt_iscons(opt) || !jt_clos_proper_list(opt)) jt_clos_form_error(S, "malformed defgeneric option", opt);
    jt_V k = jt_car(opt);
    if (k == JT_CSYM(S, K_METHOD) || k == JT_SYM(S, DECLARE)) continue;
    for (jt_V p = jt_cdr(jt_cdr(jt_cdr(form))); p != o; p = jt_cdr(p))
      if (jt_iscons(jt_car(p)) && jt_car(jt_car(p)) == k) jt_clos_form_error(S, "a defgeneric option given twice", opt);
    if (k == JT_CSYM(S, K_DOCUMENTATION) && jt_iscons(jt_cdr(opt)) && jt_isstring(jt_car(jt_cdr(opt)))) {
      doc = jt_car(jt_cdr(opt));
      continue;
    }
    /* (:method-combination name option...): the combination must exist and
    ** accept the options (61-combination.lisp); it is looked up again when
    ** an effective method is computed */
    if (k == JT_CSYM(S, K_METHOD_COMBINATION) && jt_iscons(jt_cdr(opt)) && jt_issymbol(jt_car(jt_cdr(opt))) &&
        jt_car(jt_cdr(opt)) != JT_NIL) {
      if (jt_car(jt_cdr(opt)) != JT_CSYM(S, STANDARD) || jt_cdr(jt_cdr(opt)) != JT_NIL)
        jt_funcall(S, jt_symobj(S, jt_intern(S, "%CHECK-METHOD-COMBINATION"))->function, 1, jt_cdr(opt));
      continue;
    }
    if ((k == JT_CSYM(S, K_GENERIC_FUNCTION_CLASS) &&
         jt_car(jt_cdr(opt)) == CLS(JT_CLASS(S, STANDARD_GENERIC_FUNCTION))->name) ||
        (k == JT_CSYM(S, K_METHOD_CLASS) && jt_car(jt_cdr(opt)) == CLS(JT_CLASS(S, STANDARD_METHOD))->name))
      continue;
    if (k == JT_CSYM(S, K_ARGUMENT_PRECEDENCE_ORDER)) {
      /* each required parameter once, in any order */
      int na = 0;
      bool ok = true;
      for (jt_V a = jt_cdr(opt); jt_iscons(a); a = jt_cdr(a)) {
        na++;
        int seen = 0;
        for (jt_V p = ll; jt_iscons(p) && !lambda_keyword(S, jt_car(p)); p = jt_cdr(p))
          if (jt_car(p) == jt_car(a)) seen++;
        for (jt_V b = jt_cdr(opt); b != a; b = jt_cdr(b))
          if (jt_car(b) == jt_car(a)) seen = 0;
        if (seen != 1) ok = false;
      }
      if (ok && na == info.nreq) continue;
      jt_clos_form_error(S, ":argument-precedence-order must name each required parameter once", opt);
    }
    jt_clos_form_error(S, "unsupported defgeneric option", opt);
  }
  JT_PUSH(S, doc);                              /* base[1] */
  jt_V gf = jt_gf_find(S, name);
  if (gf != JT_NIL && (GF(gf)->h.flags & JT_GF_LOCKED))
    gf_error(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot redefine the built-in generic function %s", name);
  if (gf == JT_NIL) {
    gf = jt_gf_ensure(S, name, ll);
  } else {
    /* the methods defined by defmethod must fit the new lambda list */
    for (jt_V l = GF(gf)->methods; jt_iscons(l); l = jt_cdr(l)) {
      jt_V m = jt_car(l);
      if (METH(m)->h.flags & (JT_METH_INLINE | JT_METH_READER | JT_METH_WRITER)) continue;
      check_congruent(S, gf, METH(m)->lambda_list, m);
      LL a;
      ll_parse(S, METH(m)->lambda_list, &a);
      if (a.nreq != info.nreq || a.nopt != info.nopt || (a.rest || a.key) != (info.rest || info.key))
        gf_error(S, JT_SYM(S, PROGRAM_ERROR), "the new lambda list does not fit the method %s", m);
    }
  }
  JT_PUSH(S, gf);                               /* base[2] */
  /* the methods of the previous defgeneric form go */
  for (jt_V l = GF(gf)->methods; jt_iscons(l); l = jt_cdr(l))
    if (METH(jt_car(l))->h.flags & JT_METH_INLINE) {
      JT_PUSH(S, l);
      jt_gf_remove_method(S, base[2], jt_car(l));
      l = S->sp[-1];
      JT_POP(S, 1);
    }
  JT_SET(S, base[2], GF(base[2])->lambda_list, jt_car(jt_cdr(jt_cdr(base[0]))));
  JT_SET(S, base[2], GF(base[2])->doc, base[1]);
  JT_SET(S, base[2], GF(base[2])->form, base[0]);
  JT_TOUCH(S, base[2]);
  GF(base[2])->nreq = (uint16_t)info.nreq;
  GF(base[2])->nopt = (uint16_t)info.nopt;
  GF(base[2])->h.flags = (uint16_t)((GF(base[2])->h.flags & ~(JT_GF_REST | JT_GF_KEY | JT_GF_ALLOW)) |
                                    (info.rest || info.key ? JT_GF_REST : 0) | (info.key ? JT_GF_KEY : 0) |
                                    (info.allow ? JT_GF_ALLOW : 0));
  /* (:method ...) options, as (defmethod name ...) */
  for (jt_V o = jt_cdr(jt_cdr(jt_cdr(base[0]))); jt_iscons(o); o = jt_cdr(o)) {
    jt_V opt = jt_car(o);
    if (jt_car(opt) != JT_CSYM(S, K_METHOD)) continue;
    jt_V *mb = S->sp;
    JT_PUSH(S, o);
    jt_V mform = jt_cons(S, jt_car(jt_cdr(base[0])), jt_cdr(opt));
    mform = jt_cons(S, JT_CSYM(S, DEFMETHOD), mform);
    JT_PUSH(S, mform);
    bool kept = true;
    jt_V m = method_from_form(S, mform, jt_car(jt_cdr(base[0])), lazy, JT_METH_INLINE, JT_NOVALUE, JT_NIL, &kept);
    JT_PUSH(S, m);
    jt_gf_add_method(S, base[2], m);
    o = mb[0];
    S->sp = mb;
  }
  jt_clos_changed(S);
  if (S->world_define) S->world_define(S, jt_car(jt_cdr(base[0])), JT_DEF_GENERIC, base[0], base[2]);
  gf = base[2];
  S->sp = base;
  return gf;
}

/* ------------------------------------------------------------ primitives */

static jt_V check_gf(jt_State *S, jt_V gf) {
  if (!jt_is(gf, JT_TGENERIC)) jt_type_error(S, gf, CLS(JT_CLASS(S, GENERIC_FUNCTION))->name);
  return gf;
}

/* (%defgeneric form) (%defmethod form): the expansions of the macros */
JT_FN(f_defgeneric) { JT_UNUSED_ARGS; return jt_gf_define(S, argv[0], false); }
JT_FN(f_defmethod) { return jt_method_define(S, argv[0], false, JT_NOVALUE, argc > 1 ? argv[1] : JT_NIL); }

/* (find-method gf qualifiers specializers &optional (errorp t)) */
JT_FN(f_find_method) {
  jt_V gf = check_gf(S, argv[0]);
  jt_V *base = S->sp;
  int n = 0;
  jt_V l = argv[2];
  jt_Walk w = jt_walk(l);
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l), n++) {
    jt_V s = jt_car(l);
    if (jt_issymbol(s)) {
      jt_V c = jt_find_class(S, s);
      if (c == JT_NIL) gf_error(S, JT_SYM(S, SIMPLE_ERROR), "there is no class named %s", s);
      s = c;
    }
    JT_PUSH(S, s);
  }
  if (n != GF(gf)->nreq)
    gf_error(S, JT_SYM(S, SIMPLE_ERROR), "find-method: the generic function %s takes another number "
             "of required arguments", GF(gf)->name);
  jt_V specs = jt_list_from(S, n, base);
  S->sp = base;
  JT_PUSH(S, specs);
  jt_V m = jt_gf_find_method(S, gf, argv[1], specs);
  JT_POP(S, 1);
  if (m == JT_NIL && (argc < 4 || argv[3] != JT_NIL))
    gf_error(S, JT_SYM(S, SIMPLE_ERROR), "find-method: no such method for %s", GF(gf)->name);
  return m;
}

/* (remove-method gf method) */
JT_FN(f_remove_method) {
  jt_V gf = check_gf(S, argv[0]);
  if (!jt_is(argv[1], JT_TMETHOD)) jt_type_error(S, argv[1], CLS(JT_CLASS(S, METHOD))->name);
  if (METH(argv[1])->h.flags & JT_METH_LOCKED)
    gf_error(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot remove the built-in method %s", argv[1]);
  if (METH(argv[1])->gf != gf) return gf;
  jt_V key = JT_NIL;
  if (METH(argv[1])->form != JT_NIL) key = jt_method_key(S, argv[1]);
  JT_PUSH(S, key);
  jt_gf_remove_method(S, gf, argv[1]);
  if (key != JT_NIL && S->world_define) S->world_define(S, key, JT_DEF_METHOD_REMOVED, JT_NIL, JT_NIL);
  JT_POP(S, 1);
  return gf;
}

JT_FN(f_add_method) {
  jt_V gf = check_gf(S, argv[0]);
  if (!jt_is(argv[1], JT_TMETHOD)) jt_type_error(S, argv[1], CLS(JT_CLASS(S, METHOD))->name);
  check_builtin_gf(S, gf, argv[1]);
  jt_gf_add_method(S, gf, argv[1]);
  if (METH(argv[1])->form != JT_NIL && S->world_define) {
    jt_V key = jt_method_key(S, argv[1]);
    JT_PUSH(S, key);
    S->world_define(S, key, JT_DEF_METHOD, METH(argv[1])->form, argv[1]);
    JT_POP(S, 1);
  }
  return gf;
}


static jt_V check_method_arg(jt_State *S, jt_V m) {
  if (!jt_is(m, JT_TMETHOD)) jt_type_error(S, m, CLS(JT_CLASS(S, METHOD))->name);
  return m;
}
/* a copy: the method's own list is walked whenever it is printed or keyed */
JT_FN(f_method_qualifiers) { return jt_list_copy(S, METH(check_method_arg(S, argv[0]))->qualifiers); }

/* (%function-keywords method) => the keywords of its &key parameters, and
** whether it allows other keys */
JT_FN(f_function_keywords) {
  jt_V m = check_method_arg(S, argv[0]);
  jt_V *base = S->sp;
  JT_PUSH(S, m);
  JT_PUSH(S, JT_NIL);                                /* base[1]: the keywords, reversed */
  bool keys = false, other = false;
  for (jt_V l = METH(m)->lambda_list; jt_iscons(l); l = jt_cdr(l)) {
    jt_V p = jt_car(l);
    if (p == JT_SYM(S, AND_KEY)) { keys = true; continue; }
    if (p == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) { other = true; continue; }
    if (p == JT_SYM(S, AND_AUX) || p == JT_SYM(S, AND_REST) || p == JT_SYM(S, AND_OPTIONAL)) { keys = false; continue; }
    if (!keys) continue;
    /* var, (var [init [supplied-p]]) or ((keyword var) [init [supplied-p]]) */
    jt_V v = jt_iscons(p) ? jt_car(p) : p;
    jt_V key = jt_iscons(v) ? jt_car(v) : jt_issymbol(v) ? jt_intern_keyword(S, jt_symname(S, v)) : JT_NIL;
    base[1] = jt_cons(S, key, base[1]);
  }
  jt_V r = jt_nreverse_list(base[1]);
  S->sp = base;
  return jt_values2(S, r, jt_bool(other));
}

/* (compute-applicable-methods gf arguments) */
JT_FN(f_compute_applicable_methods) {
  jt_V gf = check_gf(S, argv[0]);
  jt_V *base = S->sp;
  int n = 0;
  jt_Walk w = jt_walk(argv[1]);
  for (jt_V l = argv[1]; jt_iscons(l); l = jt_walk_next(S, &w, l), n++) JT_PUSH(S, jt_car(l));
  if (n < GF(gf)->nreq) wrong_args(S, n);
  jt_V r = applicable_sorted(S, gf, base);
  S->sp = base;
  return r;
}

/* The methods of gf applicable to args (its required arguments, rooted),
** most specific first. */
static jt_V applicable_sorted(jt_State *S, jt_V gf, jt_V *args) {
  jt_V *base = S->sp;
  JT_PUSH(S, gf);
  jt_V *classes = S->sp;
  for (int i = 0; i < GF(gf)->nreq; i++) { jt_V c = jt_class_of(S, args[i]); JT_PUSH(S, c); }
  int order_buf[MAX_ORDERED];
  const int *order = gf_precedence(S, gf, order_buf);
  jt_V *ms = S->sp;
  int k = 0;
  for (jt_V l = GF(gf)->methods; jt_iscons(l); l = jt_cdr(l)) {
    jt_V m = jt_car(l);
    if (!applicable(S, m, args, classes)) continue;
    JT_PUSH(S, m);
    int j = k++;
    while (j > 0 && more_specific(S, m, ms[j - 1], classes, order, GF(gf)->nreq)) { ms[j] = ms[j - 1]; j--; }
    ms[j] = m;
  }
  jt_V r = jt_list_from(S, k, ms);
  S->sp = base;
  return r;
}

/* (%call-method method next-methods arguments): CALL-METHOD in an
** effective method that a method combination other than the standard one
** made: call METHOD with ARGUMENTS, its call-next-method calling the
** methods of NEXT-METHODS in turn. */
JT_FN(f_call_method) {
  JT_UNUSED_ARGS;
  check_method(S, argv[0]);
  jt_Walk w = jt_walk(argv[1]);
  for (jt_V l = argv[1]; jt_iscons(l); l = jt_walk_next(S, &w, l)) check_method(S, jt_car(l));
  jt_V *base = S->sp;
  int n = 0;
  jt_V l = argv[2];
  w = jt_walk(l);
  for (; jt_iscons(l); l = jt_walk_next(S, &w, l), n++) JT_PUSH(S, jt_car(l));
  if (n < 1 && jt_is(METH(argv[0])->gf, JT_TGENERIC) && GF(METH(argv[0])->gf)->nreq > 0) wrong_args(S, n);
  jt_V r = call_method(S, argv[0], argv[1], n, base);
  S->sp = base;
  return r;
}

/* (%make-method function): MAKE-METHOD's method, of no generic function:
** FUNCTION takes the arguments it is called with. */
JT_FN(f_make_method) {
  JT_UNUSED_ARGS;
  if (!jt_is(argv[0], JT_TCLOSURE)) jt_type_error(S, argv[0], JT_SYM(S, FUNCTION));
  return jt_method_make(S, JT_NIL, JT_NIL, JT_NIL, argv[0], 0);
}

/* (%clos-changed): a method combination was (re)defined: every effective
** method computed before is stale. */
JT_FN(f_clos_changed) {
  JT_UNUSED_ARGS;
  jt_clos_changed(S);
  return JT_NIL;
}

/* (%generic-function-definition gf) => its defgeneric form (NIL when
** defmethod made it), its lambda list (ensure-generic-function). */
JT_FN(f_gf_definition) {
  JT_UNUSED_ARGS;
  jt_V vals[2] = {GF(check_gf(S, argv[0]))->form, GF(argv[0])->lambda_list};
  return jt_values(S, 2, vals);
}

static const jt_Reg gf_fns[] = {
  {"%CALL-METHOD", f_call_method, 3, 3, "(%call-method method next-methods arguments) Call METHOD with ARGUMENTS, its next methods NEXT-METHODS."},
  {"%MAKE-METHOD", f_make_method, 1, 1, "(%make-method function) A method of no generic function that calls FUNCTION."},
  {"%CLOS-CHANGED", f_clos_changed, 0, 0, "(%clos-changed) Forget every effective method computed so far."},
  {"%GENERIC-FUNCTION-DEFINITION", f_gf_definition, 1, 1, "(%generic-function-definition gf) Its defgeneric form and lambda list."},
  {"%DEFGENERIC", f_defgeneric, 1, 1, "(%defgeneric form) Define a generic function from a defgeneric form."},
  {"%DEFMETHOD", f_defmethod, 1, 2, "(%defmethod form [evaluated]) Define a method from a defmethod form "
   "(evaluated: the values of its (EQL form) specializers, jt_method_define)."},
  {"%CALL-NEXT-METHOD", f_call_next_method, 1, 1, "(%call-next-method context) The next method with the original arguments."},
  {"%CALL-NEXT-METHOD-WITH", f_call_next_method_with, 1, -1, "(%call-next-method-with context &rest arguments) The next method with these arguments."},
  {"%CALL-NEXT-METHOD-LIST", f_call_next_method_list, 2, 2, "(%call-next-method-list context arguments) The next method with the arguments of a list."},
  {"%NEXT-METHOD-P", f_next_method_p, 1, 1, "(%next-method-p context)"},
  {"%FIND-METHOD", f_find_method, 3, 4, "(%find-method gf qualifiers specializers &optional errorp) The method with exactly these qualifiers and specializers."},
  {"%REMOVE-METHOD", f_remove_method, 2, 2, "(%remove-method gf method) Remove METHOD from GF; returns GF."},
  {"%ADD-METHOD", f_add_method, 2, 2, "(%add-method gf method) Add METHOD (replacing one with the same specializers); returns GF."},
  {"%METHOD-QUALIFIERS", f_method_qualifiers, 1, 1, "(%method-qualifiers method) The qualifiers of METHOD."},
  {"%FUNCTION-KEYWORDS", f_function_keywords, 1, 1, "(%function-keywords method) The keywords of METHOD's &key "
   "parameters, and whether it allows other keys."},
  {"%COMPUTE-APPLICABLE-METHODS", f_compute_applicable_methods, 2, 2, "(%compute-applicable-methods gf arguments) The methods that apply, most specific first."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_generic(jt_State *S) { jt_register(S, gf_fns); }
