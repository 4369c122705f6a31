/*
** analyze.c — turns forms into node trees (see jt_eval.h for the model).
**
** Analysis keeps a tree of compile-time scopes.  Each variable gets a stack
** slot in its activation when it is created; when its scope closes, the
** scope becomes a heap frame instead if any of its variables was referenced
** from a nested lambda (captured).  Variable references are recorded and
** patched once the whole top-level form has been analysed, when every
** scope's decision is final.
**
** Transparent positions (see jt_eval.h) are analysed with analyze_tail;
** everything else raises the opaque level, which decides whether a go or
** return-from can be a local transfer.
*/
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_analyze.h"
#include "jt_grow.h"

/* ------------------------------------------------------------------ arena */

typedef struct jt_Arena {
  struct jt_Arena *next;
  size_t used, cap;
  max_align_t data[];
} jt_Arena;

static void *arena_alloc(jt_State *S, jt_Code *c, size_t n) {
  n = (n + 15) & ~(size_t)15;
  jt_Arena *a = c->arena;
  if (!a || a->used + n > a->cap) {
    /* start small (most top-level forms are small) and double */
    size_t cap = a ? (a->cap < 32768 ? a->cap * 2 : 32768) : 512;
    if (cap < n) cap = n;
    jt_Arena *b = jt_malloc(S, sizeof(jt_Arena) + cap);
    b->next = a;
    b->used = 0;
    b->cap = cap;
    c->arena = a = b;
  }
  void *p = (char *)a->data + a->used;
  a->used += n;
  memset(p, 0, n);
  return p;
}

void jt_code_free(jt_State *S, jt_Code *c) {
  jt_Arena *a = c->arena;
  while (a) {
    jt_Arena *next = a->next;
    jt_free(S, a, sizeof(jt_Arena) + a->cap);
    a = next;
  }
  c->arena = NULL;
  jt_free(S, c->consts, c->constcap * sizeof(jt_V));
  c->consts = NULL;
}

/* --------------------------------------------------------- analysis state */

enum { VAR_LEX, VAR_SPECIAL, VAR_FUN, VAR_MACRO, VAR_BLOCK, VAR_TAGBODY, VAR_SYMMACRO };
enum { SC_LAMBDA, SC_LET };

typedef struct Scope Scope;
typedef struct Var {
  jt_V name;
  int kind;
  bool captured;
  bool used;
  int stack_slot;
  int index;           /* position within its scope = heap slot */
  Scope *scope;
  jt_Node *node;       /* block / tagbody node */
  int level;           /* opaque level where the block/tagbody was made */
  jt_V tags;           /* tagbody: list of tags, position = tag index */
  jt_V macro;          /* macrolet expander; symbol-macrolet expansion */
} Var;

struct Scope {
  Scope *parent;
  int kind;
  Scope *lambda;       /* enclosing activation (self for SC_LAMBDA) */
  Var **vars;
  int nvars, cap;
  bool heap;
  int nstack;          /* SC_LAMBDA: stack slots handed out so far */
  int nslots_hint;
  Var **all;           /* SC_LAMBDA: every variable of the activation, in order */
  int nall, capall;
  int heap_id;         /* a heap LET: its frames' h.flags (jt_Local.scope); SC_LAMBDA:
                          the ids handed out */
};

typedef struct Ref {
  struct Ref *next;
  jt_VarLoc *loc;
  jt_Node *node;       /* lref/lset node to specialise, or NULL */
  Scope *from;
  Var *var;
} Ref;

typedef struct A {
  jt_State *S;
  jt_V code;
  Scope *scope;
  int opaque;
  Ref *refs;
  jt_V setf_keys;      /* alist symbol -> the key its local (setf symbol) is bound under */
} A;

#define CODE(a) jt_code_(a->code)
#define NEW(a, T) ((T *)arena_alloc(a->S, CODE(a), sizeof(T)))
#define NEWN(a, T, n) ((T *)arena_alloc(a->S, CODE(a), sizeof(T) * (size_t)((n) ? (n) : 1)))

static jt_V konst(A *a, jt_V v) {
  jt_Code *c = CODE(a);
  if (!jt_isptr(v)) return v;
  if (c->nconsts == c->constcap) {
    /* growing may collect: v is not yet reachable from the code object */
    size_t n = jt_grow_cap(c->constcap, c->nconsts + 1, sizeof(jt_V), 16);
    if (!n) jt_errorc(a->S, JT_SYM(a->S, STORAGE_CONDITION), "out of memory");
    JT_PUSH(a->S, v);
    c->consts = jt_realloc(a->S, c->consts, c->constcap * sizeof(jt_V), n * sizeof(jt_V));
    JT_POP(a->S, 1);
    c->constcap = n;
  }
  c->consts[c->nconsts++] = v;
  return v;
}

static jt_Node *mknode(A *a, jt_EvalFn ev) {
  jt_Node *n = NEW(a, jt_Node);
  n->ev = ev;
  return n;
}

static JT_NORETURN void syntax_error(A *a, const char *fmt, jt_V form) {
  jt_State *S = a->S;
  char *s = jt_print_cstr(S, form, true, 200);
  snprintf(S->msgbuf, sizeof S->msgbuf, fmt, s);
  free(s);
  jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
}

/* ----------------------------------------------------------------- scopes */

static Scope *scope_open(A *a, int kind) {
  Scope *s = NEW(a, Scope);
  s->parent = a->scope;
  s->kind = kind;
  s->lambda = kind == SC_LAMBDA ? s : (a->scope ? a->scope->lambda : s);
  a->scope = s;
  return s;
}

static void scope_close(A *a, Scope *s) {
  for (int i = 0; i < s->nvars; i++)
    if (s->vars[i]->captured) s->heap = true;
  a->scope = s->parent;
}

static Var *var_add(A *a, jt_V name, int kind) {
  Scope *s = a->scope;
  if (s->nvars == s->cap) {
    int n = s->cap ? s->cap * 2 : 4;
    Var **v = NEWN(a, Var *, n);
    if (s->nvars) memcpy(v, s->vars, sizeof(Var *) * (size_t)s->nvars);
    s->vars = v;
    s->cap = n;
  }
  Var *v = NEW(a, Var);
  v->name = konst(a, name);
  v->kind = kind;
  v->scope = s;
  v->index = s->nvars;
  v->stack_slot = s->lambda->nstack++;
  s->vars[s->nvars++] = v;
  Scope *l = s->lambda;
  if (l->nall == l->capall) {
    int n = l->capall ? l->capall * 2 : 8;
    Var **all = NEWN(a, Var *, n);
    if (l->nall) memcpy(all, l->all, sizeof(Var *) * (size_t)l->nall);
    l->all = all;
    l->capall = n;
  }
  l->all[l->nall++] = v;
  return v;
}

/* The activation's lexical variables a pause can show (jt_Local): those
** in its stack slots, its own heap frame and its LETs' heap frames; not
** other heap frames' (a MULTIPLE-VALUE-BIND's), nor an uninterned or
** kernel-internal name (the variables of macro expansions). */
static void lambda_locals(A *a, Scope *s, jt_Lambda *L) {
  int n = 0;
  jt_Local *locals = NEWN(a, jt_Local, s->nall);
  for (int i = 0; i < s->nall; i++) {
    Var *v = s->all[i];
    if (v->kind != VAR_LEX || (v->scope->heap && v->scope != s && !v->scope->heap_id)) continue;
    if (!jt_is(v->name, JT_TSYMBOL) || jt_sym_(v->name)->package == JT_PKG_NONE || jt_is_internal(v->name)) continue;
    locals[n].name = v->name;
    locals[n].heap = v->scope->heap;
    locals[n].scope = (uint16_t)(v->scope != s ? v->scope->heap_id : 0);
    locals[n].slot = v->scope->heap ? v->index : v->stack_slot;
    n++;
  }
  L->locals = locals;
  L->nlocals = n;
}

/* Find the innermost binding of `name` among kinds in `mask`. */
static Var *lookup(A *a, jt_V name, unsigned mask) {
  for (Scope *s = a->scope; s; s = s->parent)
    for (int i = s->nvars - 1; i >= 0; i--) {
      Var *v = s->vars[i];
      if (v->name == name && ((1u << v->kind) & mask)) return v;
    }
  return NULL;
}

#define VARKINDS ((1u << VAR_LEX) | (1u << VAR_SPECIAL) | (1u << VAR_SYMMACRO))
#define FUNKINDS ((1u << VAR_FUN) | (1u << VAR_MACRO))

/* Record a reference from the current scope; marks capture across lambdas. */
static void ref_add(A *a, jt_VarLoc *loc, Var *v, jt_Node *node) {
  Ref *r = NEW(a, Ref);
  r->loc = loc;
  r->node = node;
  r->from = a->scope;
  r->var = v;
  r->next = a->refs;
  a->refs = r;
  v->used = true;
  if (a->scope->lambda != v->scope->lambda) v->captured = true;
}

static void refs_patch(A *a) {
  for (Ref *r = a->refs; r; r = r->next) {
    Var *v = r->var;
    if (!v->scope->heap) {
      r->loc->depth = -1;
      r->loc->index = (int16_t)v->stack_slot;
      continue;
    }
    int depth = 0;
    for (Scope *s = r->from; s && s != v->scope; s = s->parent)
      if (s->heap) depth++;
    r->loc->depth = (int16_t)depth;
    r->loc->index = (int16_t)v->index;
  }
}

/* ---------------------------------------------------------------- helpers */

/* A form built at run time may hold a circular list anywhere, and a macro
** expanded part-way through analysing a form may change the form under
** the walk.  So each list of a form is counted first (a circular one is a
** type-error), its walk goes no further than the count, and a list found
** to have changed since is refused. */
static JT_NORETURN void form_changed(A *a, jt_V form) {
  syntax_error(a, "a form changed while it was analysed (by a macro?): %s", form);
}

/* The number of conses of l (dotted or not); a circular list is a
** type-error. */
static int list_count(A *a, jt_V l, jt_V form) {
  size_t n = jt_list_count(a->S, l);
  if (n > INT32_MAX / 2) syntax_error(a, "form too long: %s", form);
  return (int)n;
}

static int list_len(A *a, jt_V l, jt_V form) {
  int n = list_count(a, l, form);
  for (int i = 0; i < n; i++) l = jt_cdr(l);
  if (l != JT_NIL) syntax_error(a, "malformed form (dotted list): %s", form);
  return n;
}

static jt_Node *analyze(A *a, jt_V form);
static jt_Node *analyze_tail(A *a, jt_V form);
static jt_Node *analyze_body(A *a, jt_V body);

static jt_Node *const_node(A *a, jt_V v) {
  jt_Node *n = mknode(a, jt_ev_const);
  n->u.value = konst(a, v);
  return n;
}

static bool is_special_sym(jt_State *S, jt_V sym) {
  return (jt_symobj(S, sym)->h.flags & JT_SYM_SPECIAL) != 0;
}

static bool is_constant_sym(jt_State *S, jt_V sym) {
  return (jt_symobj(S, sym)->h.flags & JT_SYM_CONSTANT) != 0;
}

/* The declaration identifiers of the standard (CLHS 3.3.3) besides the
** ones parse_decls compares first; a type name is one too. */
static const char *const standard_decls[] = {"TYPE", "FTYPE", "INLINE", "NOTINLINE", "DYNAMIC-EXTENT",
                                             "DECLARATION"};

/* A declaration specifier whose identifier is none of the standard's, no
** type and no proclaimed declaration name is warned about, as SBCL warns
** (a misspelt IGNORE would otherwise pass unseen).  WARN runs handlers,
** which may leave by a non-local exit: everything analysis made so far is
** in the code object's arena, which the collector frees. */
static void check_decl_identifier(A *a, jt_V spec) {
  jt_State *S = a->S;
  jt_V id = jt_car(spec);
  if (S->kernel_mode || jt_iscons(id)) return;   /* a compound type specifier */
  if (jt_issymbol(id)) {
    if (jt_symobj(S, id)->package == JT_PKG_LISP) {
      const char *n = jt_symname(S, id);
      for (size_t i = 0; i < sizeof standard_decls / sizeof *standard_decls; i++)
        if (!strcmp(n, standard_decls[i])) return;
    }
    if (jt_names_declaration(S, id) || jt_names_type(S, id)) return;
  }
  jt_V warn = jt_symobj(S, jt_intern(S, "WARN"))->function;
  if (!jt_isfunction(warn)) return;
  jt_V *base = S->sp;
  JT_PUSH(S, spec);
  jt_V msg = jt_string_from_cstr(S, "unrecognized declaration ~S");
  JT_PUSH(S, msg);
  jt_funcall(S, warn, 2, base[1], base[0]);
  S->sp = base;
}

/* Declarations at the head of a body: returns the rest of the body and
** collects (declare (special ...)) names into *specials (a Lisp list). */
static jt_V parse_decls(A *a, jt_V body, jt_V *specials, bool allow_doc, jt_V *doc) {
  jt_State *S = a->S;
  jt_Walk wb = jt_walk(body);
  while (jt_iscons(body)) {
    jt_V f = jt_car(body);
    if (allow_doc && jt_isstring(f) && jt_iscons(jt_cdr(body)) && doc && *doc == JT_NIL) {
      *doc = f;
      body = jt_walk_next(S, &wb, body);
      continue;
    }
    if (!jt_iscons(f) || jt_car(f) != JT_SYM(S, DECLARE)) break;
    jt_Walk wd = jt_walk(jt_cdr(f));
    for (jt_V d = jt_cdr(f); jt_iscons(d); d = jt_walk_next(S, &wd, d)) {
      jt_V spec = jt_car(d);
      if (!jt_iscons(spec)) continue;
      if (jt_car(spec) != JT_SYM(S, SPECIAL)) {
        jt_V id = jt_car(spec);
        if (id != JT_SYM(S, IGNORE) && id != JT_SYM(S, IGNORABLE) && id != JT_SYM(S, OPTIMIZE))
          check_decl_identifier(a, spec);
        continue;
      }
      jt_Walk wn = jt_walk(jt_cdr(spec));
      for (jt_V n = jt_cdr(spec); jt_iscons(n); n = jt_walk_next(S, &wn, n)) {
        jt_V sym = jt_car(n);
        if (jt_is_internal(sym) && !S->kernel_mode)
          syntax_error(a, "a kernel-internal symbol cannot be declared special: %s", spec);
        *specials = jt_cons(S, sym, *specials);
      }
    }
    body = jt_walk_next(S, &wb, body);
  }
  return body;
}

static bool memq(jt_V x, jt_V l) {
  for (; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(l) == x) return true;
  return false;
}

/* The kernel's internal variables (%DEFINING-TYPE) are its own: user code
** that got hold of such a symbol may not read, bind or assign it. */
static void check_user_variable(A *a, jt_V sym, jt_V form) {
  if (jt_is_internal(sym) && !a->S->kernel_mode)
    syntax_error(a, "a kernel-internal symbol cannot be used as a variable: %s", form);
}

static void check_bindable(A *a, jt_V sym, jt_V form) {
  jt_State *S = a->S;
  if (!jt_issymbol(sym)) syntax_error(a, "not a variable name in %s", form);
  check_user_variable(a, sym, form);
  if (is_constant_sym(S, sym) || jt_iskeyword(sym))
    syntax_error(a, "cannot bind a constant in %s", form);
}

/* ------------------------------------------------------------- variables */

/* The expansion of `sym` as a symbol macro where it is referred to: a
** symbol-macrolet binding, or else a define-symbol-macro of a symbol that
** is not lexically bound; JT_NOVALUE when it is no symbol macro. */
static jt_V symbol_macro(A *a, jt_V sym) {
  if (!jt_is(sym, JT_TSYMBOL)) return JT_NOVALUE;
  Var *v = lookup(a, sym, VARKINDS);
  if (v) return v->kind == VAR_SYMMACRO ? v->macro : JT_NOVALUE;
  jt_V box = jt_meta_get(a->S, sym, jt_intern(a->S, "%SYMBOL-MACRO"));
  return jt_iscons(box) ? jt_car(box) : JT_NOVALUE;
}

static jt_Node *var_ref(A *a, jt_V sym) {
  jt_State *S = a->S;
  if (sym == JT_NIL || sym == JT_T || jt_iskeyword(sym)) return const_node(a, sym);
  check_user_variable(a, sym, sym);
  jt_V expansion = symbol_macro(a, sym);
  if (expansion != JT_NOVALUE) {
    JT_PUSH(S, expansion);
    S->nest++;
    jt_Node *n = analyze(a, expansion);
    S->nest--;
    JT_POP(S, 1);
    return n;
  }
  Var *v = lookup(a, sym, VARKINDS);
  if (v && v->kind == VAR_LEX) {
    jt_Node *n = mknode(a, jt_ev_lref);
    ref_add(a, &n->u.var, v, n);
    return n;
  }
  if (!v && is_constant_sym(S, sym)) {
    jt_Symbol *s = jt_symobj(S, sym);
    if (s->value != JT_UNBOUND) return const_node(a, s->value);
  }
  jt_Node *n = mknode(a, jt_ev_gref);
  n->u.gset.sym = konst(a, sym);
  return n;
}

static jt_Node *var_set(A *a, jt_V sym, jt_Node *val, jt_V form) {
  jt_State *S = a->S;
  if (!jt_issymbol(sym)) syntax_error(a, "setq of a non-symbol in %s", form);
  check_user_variable(a, sym, form);
  if (sym == JT_NIL || sym == JT_T || jt_iskeyword(sym) || is_constant_sym(S, sym)) {
    Var *v = lookup(a, sym, VARKINDS);
    if (!v || v->kind != VAR_LEX) syntax_error(a, "cannot assign to a constant in %s", form);
  }
  Var *v = lookup(a, sym, VARKINDS);
  if (v && v->kind == VAR_LEX) {
    jt_Node *n = mknode(a, jt_ev_lset);
    n->u.set.val = val;
    ref_add(a, &n->u.set.var, v, n);
    return n;
  }
  jt_Node *n = mknode(a, jt_ev_gset);
  n->u.gset.sym = konst(a, sym);
  n->u.gset.val = val;
  return n;
}

/* After refs_patch, choose the faster evaluators for stack variables. */
static void specialise_refs(A *a) {
  for (Ref *r = a->refs; r; r = r->next) {
    jt_Node *n = r->node;
    if (!n) continue;
    if (n->ev == jt_ev_lref) {
      if (r->loc->depth < 0) n->ev = jt_ev_lref_stack;
      else if (r->loc->depth == 0) n->ev = jt_ev_lref0;
    } else if (n->ev == jt_ev_lset && r->loc->depth < 0) {
      n->ev = jt_ev_lset_stack;
    }
  }
}

/* ------------------------------------------------------------ lambda lists */

enum { LL_ORDINARY, LL_MACRO, LL_DESTRUCTURING };


static void param_var(A *a, jt_Param *p, jt_V sym, jt_V specials, jt_V form) {
  check_bindable(a, sym, form);
  p->name = konst(a, sym);
  p->special = is_special_sym(a->S, sym) || memq(sym, specials);
  Var *v = var_add(a, sym, p->special ? VAR_SPECIAL : VAR_LEX);
  v->used = true;
  p->slot = v->index;  /* provisional; fixed in lambda_finish */
  p->svar_slot = -1;
}

static jt_Lambda *parse_lambda_list(A *a, jt_V ll, int kind, jt_V specials, jt_V form);

/* In a macro or destructuring lambda list a pattern may stand for a
** variable; NIL there is the empty pattern, which matches NIL. */
static void param_pattern(A *a, jt_Param *p, jt_V spec, int kind, jt_V specials, jt_V form) {
  if ((jt_iscons(spec) || spec == JT_NIL) && kind != LL_ORDINARY) {
    p->name = JT_NIL;
    p->sub = parse_lambda_list(a, spec, LL_DESTRUCTURING, specials, form);
    p->svar_slot = -1;
  } else {
    param_var(a, p, spec, specials, form);
  }
}

/* Parameters are added to the current scope in binding order, so init
** forms see the earlier parameters. */
static jt_Lambda *parse_lambda_list(A *a, jt_V ll, int kind, jt_V specials, jt_V form) {
  jt_State *S = a->S;
  jt_check_cstack(S);   /* a destructuring pattern nested in itself */
  jt_Lambda *L = NEW(a, jt_Lambda);
  L->kernel = S->kernel_mode;
  L->lambda_list = konst(a, ll);
  enum { REQ, OPT, REST, KEY, AUX, DONE } state = REQ;
  /* every parameter takes a cons of the list, and each pass of the loop
  ** below at least one: `cap` bounds both */
  int cap = list_count(a, ll, form) + 1, passes = 0;
  L->req = NEWN(a, jt_Param, cap);
  L->opt = NEWN(a, jt_Param, cap);
  L->keys = NEWN(a, jt_Param, cap);
  L->aux = NEWN(a, jt_Param, cap);
  jt_V l = ll;
  if (kind != LL_ORDINARY && jt_iscons(l) && jt_car(l) == JT_SYM(S, AND_WHOLE)) {
    l = jt_cdr(l);
    if (!jt_iscons(l)) syntax_error(a, "&whole needs a variable in %s", form);
    L->has_whole = true;
    param_pattern(a, &L->whole, jt_car(l), kind, specials, form);
    l = jt_cdr(l);
  }
  for (; l != JT_NIL; ) {
    if (++passes > cap) form_changed(a, form);
    if (!jt_iscons(l)) {
      /* dotted lambda list (a b . rest) in macros */
      if (kind == LL_ORDINARY) syntax_error(a, "malformed lambda list in %s", form);
      L->has_rest = true;
      param_var(a, &L->rest, l, specials, form);
      break;
    }
    jt_V x = jt_car(l);
    l = jt_cdr(l);
    if (x == JT_SYM(S, AND_OPTIONAL)) {
      if (state >= OPT) syntax_error(a, "misplaced &optional in %s", form);
      state = OPT; continue;
    }
    if (x == JT_SYM(S, AND_REST) || x == JT_SYM(S, AND_BODY)) {
      if (state >= REST || !jt_iscons(l)) syntax_error(a, "misplaced &rest in %s", form);
      L->has_rest = true;
      param_pattern(a, &L->rest, jt_car(l), kind, specials, form);
      l = jt_cdr(l);
      state = REST;
      continue;
    }
    if (x == JT_SYM(S, AND_KEY)) {
      if (state >= KEY) syntax_error(a, "misplaced &key in %s", form);
      L->has_key = true;
      state = KEY; continue;
    }
    if (x == JT_SYM(S, AND_ALLOW_OTHER_KEYS)) {
      if (state != KEY) syntax_error(a, "misplaced &allow-other-keys in %s", form);
      L->allow_other_keys = true; continue;
    }
    if (x == JT_SYM(S, AND_AUX)) {
      if (state >= AUX) syntax_error(a, "misplaced &aux in %s", form);
      state = AUX; continue;
    }
    if (x == JT_SYM(S, AND_ENVIRONMENT)) {
      if (!jt_iscons(l)) syntax_error(a, "&environment needs a variable in %s", form);
      jt_Param *p = &L->aux[L->naux++];
      param_var(a, p, jt_car(l), specials, form);
      l = jt_cdr(l);
      continue;
    }
    if (x == JT_SYM(S, AND_WHOLE))
      syntax_error(a, "misplaced &whole in %s", form);
    switch (state) {
      case REQ: param_pattern(a, &L->req[L->nreq++], x, kind, specials, form); break;
      case OPT: case KEY: case AUX: {
        jt_Param *p = state == OPT ? &L->opt[L->nopt++]
                    : state == KEY ? &L->keys[L->nkeys++] : &L->aux[L->naux++];
        jt_V var = x, init = JT_NIL, svar = JT_NIL, key = JT_NIL;
        bool has_init = false;
        if (jt_iscons(x)) {
          var = jt_car(x);
          if (jt_iscons(jt_cdr(x))) {
            init = jt_car(jt_cdr(x));
            has_init = true;
            if (state != AUX && jt_iscons(jt_cdr(jt_cdr(x))))
              svar = jt_car(jt_cdr(jt_cdr(x)));
          }
        }
        if (state == KEY) {
          if (jt_iscons(var)) {   /* ((:keyword var) init) */
            key = jt_car(var);
            var = jt_iscons(jt_cdr(var)) ? jt_car(jt_cdr(var)) : JT_NIL;
          } else {
            if (!jt_issymbol(var)) syntax_error(a, "bad &key parameter in %s", form);
            key = jt_intern_keyword(S, jt_symname(S, var));
          }
          p->key = konst(a, key);
        }
        /* the init form sees the parameters before this one */
        if (has_init) {
          a->opaque++;
          p->init = analyze(a, init);
          a->opaque--;
        }
        param_pattern(a, p, var, kind, specials, form);
        if (svar != JT_NIL) {
          check_bindable(a, svar, form);
          bool sp = is_special_sym(S, svar) || memq(svar, specials);
          Var *v = var_add(a, svar, sp ? VAR_SPECIAL : VAR_LEX);
          v->used = true;
          p->svar_slot = v->index;
          p->svar_special = sp;
          p->svar_name = konst(a, svar);
        }
        break;
      }
      default: syntax_error(a, "malformed lambda list in %s", form);
    }
  }
  L->simple = L->nopt == 0 && !L->has_rest && !L->has_key && L->naux == 0 && !L->has_whole;
  for (int i = 0; i < L->nreq && L->simple; i++)
    if (L->req[i].special || L->req[i].sub) L->simple = false;
  return L;
}

/* Convert provisional slots (indices in the lambda scope) to final ones:
** heap frame index when the scope is heap, else the stack slot. */
static void fix_param(Scope *s, jt_Param *p);
static void fix_lambda(Scope *s, const jt_Lambda *Lc) {
  jt_Lambda *L = (jt_Lambda *)Lc;
  if (L->has_whole) fix_param(s, &L->whole);
  for (int i = 0; i < L->nreq; i++) fix_param(s, &L->req[i]);
  for (int i = 0; i < L->nopt; i++) fix_param(s, &L->opt[i]);
  if (L->has_rest) fix_param(s, &L->rest);
  for (int i = 0; i < L->nkeys; i++) fix_param(s, &L->keys[i]);
  for (int i = 0; i < L->naux; i++) fix_param(s, &L->aux[i]);
}

static void fix_param(Scope *s, jt_Param *p) {
  if (p->sub) { fix_lambda(s, p->sub); }
  else if (!s->heap) p->slot = s->vars[p->slot]->stack_slot;
  if (p->svar_slot >= 0 && !s->heap) p->svar_slot = s->vars[p->svar_slot]->stack_slot;
}

/* Analyse (lambda-list . body) into a jt_Lambda in a new activation. */
static jt_Lambda *analyze_lambda(A *a, jt_V name, jt_V ll, jt_V body, int kind,
                                 bool block) {
  jt_State *S = a->S;
  jt_V specials = JT_NIL, doc = JT_NIL, whole_body = body;
  JT_ROOT(S, specials);
  body = parse_decls(a, body, &specials, true, &doc);
  int saved_opaque = a->opaque;
  a->opaque += 1000;  /* a new activation: no local transfers across it */
  Scope *s = scope_open(a, SC_LAMBDA);
  jt_Lambda *L = parse_lambda_list(a, ll, kind, specials, ll);
  L->name = konst(a, name);
  L->body_form = konst(a, whole_body);
  L->code = a->code;
  /* Declared-special free references inside the body, shadowing any
  ** lexical binding around the lambda (the lambda's own parameters were made
  ** special by parse_lambda_list). */
  for (jt_V l = specials; jt_iscons(l); l = jt_cdr(l)) {
    Var *v = lookup(a, jt_car(l), VARKINDS);
    if (!v || v->scope != s) var_add(a, jt_car(l), VAR_SPECIAL);
  }
  if (doc != JT_NIL) {
    char *d = jt_string_utf8(S, doc, NULL);
    size_t n = strlen(d) + 1;
    char *copy = arena_alloc(S, CODE(a), n);
    memcpy(copy, d, n);
    free(d);
    L->doc = copy;
  }
  if (block) {
    jt_V bname = name;
    if (jt_iscons(bname)) bname = jt_car(jt_cdr(bname));  /* (setf foo) -> foo */
    jt_V form = jt_cons(S, bname, body);
    form = jt_cons(S, JT_SYM(S, BLOCK), form);
    JT_PUSH(S, form);
    L->body = analyze_tail(a, form);
    JT_POP(S, 1);
  } else {
    L->body = analyze_body(a, body);
  }
  scope_close(a, s);
  L->heap = s->heap;
  L->nheap = s->nvars;
  L->nstack = s->nstack;
  if (L->heap) L->simple = false;
  fix_lambda(s, L);
  lambda_locals(a, s, L);
  a->opaque = saved_opaque;
  JT_UNROOT(S, 1);
  return L;
}

static jt_Node *lambda_node(A *a, jt_V name, jt_V ll, jt_V body) {
  jt_Node *n = mknode(a, jt_ev_lambda);
  n->u.lambda.lam = analyze_lambda(a, name, ll, body, LL_ORDINARY, name != JT_NIL);
  return n;
}

/* ----------------------------------------------------------- special forms */

typedef jt_Node *(*SpecialFn)(A *a, jt_V form, jt_V args, bool tail);


static jt_Node *sf_quote(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args) || jt_cdr(args) != JT_NIL) syntax_error(a, "malformed quote: %s", form);
  return const_node(a, jt_car(args));
}

/* A local function named (setf sym) is bound under a symbol of its own,
** the same for every binding and reference in one analysis (kept rooted
** among the code's constants). */
static jt_V setf_key(A *a, jt_V sym) {
  jt_State *S = a->S;
  for (jt_V l = a->setf_keys; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(jt_car(l)) == sym) return jt_cdr(jt_car(l));
  char name[300];
  snprintf(name, sizeof name, "(SETF %.250s)", jt_symobj(S, sym)->cname);
  jt_V key = jt_make_symbol(S, jt_string_from_cstr(S, name));
  JT_PUSH(S, key);
  jt_V pair = jt_cons(S, sym, key);
  JT_PUSH(S, pair);
  a->setf_keys = konst(a, jt_cons(S, pair, a->setf_keys));
  S->sp -= 2;
  return key;
}

static bool setf_name_p(jt_State *S, jt_V x) {
  return jt_iscons(x) && jt_car(x) == JT_SYM(S, SETF) && jt_iscons(jt_cdr(x)) &&
         jt_issymbol(jt_car(jt_cdr(x))) && jt_cdr(jt_cdr(x)) == JT_NIL;
}

static jt_Node *function_node(A *a, jt_V spec, jt_V form) {
  jt_State *S = a->S;
  if (jt_issymbol(spec)) {
    Var *v = lookup(a, spec, FUNKINDS);
    if (v && v->kind == VAR_FUN) {
      jt_Node *n = mknode(a, jt_ev_lref);
      ref_add(a, &n->u.var, v, n);
      return n;
    }
    if (v) syntax_error(a, "cannot take the function of local macro %s", form);
    /* the kernel's helpers are reached only by calls in its own code and
    ** expansions: as a function object (for funcall, apply) not at all */
    if (jt_is_internal(spec) && !S->kernel_mode) jt_undefined_function(S, spec);
    jt_Node *n = mknode(a, jt_ev_fglobal);
    n->u.gset.sym = konst(a, spec);
    return n;
  }
  if (jt_iscons(spec) && jt_car(spec) == JT_SYM(S, LAMBDA) && jt_iscons(jt_cdr(spec)))
    return lambda_node(a, JT_NIL, jt_car(jt_cdr(spec)), jt_cdr(jt_cdr(spec)));
  if (jt_iscons(spec) && jt_car(spec) == jt_intern(S, "NAMED-LAMBDA") &&
      jt_iscons(jt_cdr(spec)) && jt_iscons(jt_cdr(jt_cdr(spec)))) {
    jt_V rest = jt_cdr(spec);
    return lambda_node(a, jt_car(rest), jt_car(jt_cdr(rest)), jt_cdr(jt_cdr(rest)));
  }
  if (setf_name_p(S, spec)) {
    Var *v = lookup(a, setf_key(a, jt_car(jt_cdr(spec))), 1u << VAR_FUN);
    if (v) {   /* a local (setf f) */
      jt_Node *n = mknode(a, jt_ev_lref);
      ref_add(a, &n->u.var, v, n);
      return n;
    }
    jt_Node *n = mknode(a, jt_ev_fsetf);
    n->u.gset.sym = konst(a, jt_car(jt_cdr(spec)));
    return n;
  }
  syntax_error(a, "not a function name: %s", form);
}

static jt_Node *sf_function(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args) || jt_cdr(args) != JT_NIL) syntax_error(a, "malformed function: %s", form);
  return function_node(a, jt_car(args), form);
}

static jt_Node *sf_lambda(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args)) syntax_error(a, "malformed lambda: %s", form);
  return lambda_node(a, JT_NIL, jt_car(args), jt_cdr(args));
}

static jt_Node *sf_named_lambda(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args) || !jt_iscons(jt_cdr(args))) syntax_error(a, "malformed named-lambda: %s", form);
  return lambda_node(a, jt_car(args), jt_car(jt_cdr(args)), jt_cdr(jt_cdr(args)));
}

static jt_Node *sf_if(A *a, jt_V form, jt_V args, bool tail) {
  int n = list_len(a, args, form);
  if (n < 2 || n > 3) syntax_error(a, "if takes 2 or 3 arguments: %s", form);
  jt_Node *node = mknode(a, jt_ev_if);
  node->u.if_.test = analyze(a, jt_car(args));
  jt_Node *(*br)(A *, jt_V) = tail ? analyze_tail : analyze;
  node->u.if_.then = br(a, jt_car(jt_cdr(args)));
  node->u.if_.els = n == 3 ? br(a, jt_car(jt_cdr(jt_cdr(args)))) : const_node(a, JT_NIL);
  return node;
}

static jt_Node *progn_of(A *a, jt_V body, bool tail) {
  int n = list_len(a, body, body);
  if (n == 0) return const_node(a, JT_NIL);
  if (n == 1) return tail ? analyze_tail(a, jt_car(body)) : analyze(a, jt_car(body));
  jt_Node *node = mknode(a, jt_ev_progn);
  node->u.progn.n = n;
  const jt_Node **v = NEWN(a, const jt_Node *, n);
  jt_V l = body;
  for (int i = 0; i < n; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l)) form_changed(a, body);
    v[i] = tail ? analyze_tail(a, jt_car(l)) : analyze(a, jt_car(l));
  }
  node->u.progn.body = v;
  return node;
}

static jt_Node *analyze_body(A *a, jt_V body) { return progn_of(a, body, true); }

static jt_Node *sf_progn(A *a, jt_V form, jt_V args, bool tail) {
  return progn_of(a, args, tail);
}

static jt_Node *sf_locally(A *a, jt_V form, jt_V args, bool tail) {
  jt_V specials = JT_NIL;
  JT_ROOT(a->S, specials);
  jt_V body = parse_decls(a, args, &specials, false, NULL);
  Scope *s = scope_open(a, SC_LET);
  for (jt_V l = specials; jt_iscons(l); l = jt_cdr(l)) var_add(a, jt_car(l), VAR_SPECIAL);
  jt_Node *n = progn_of(a, body, tail);
  scope_close(a, s);
  JT_UNROOT(a->S, 1);
  return n;
}

static jt_Node *analyze_let(A *a, jt_V form, jt_V args, bool tail, bool sequential) {
  jt_State *S = a->S;
  if (!jt_iscons(args)) syntax_error(a, "malformed let: %s", form);
  jt_V bindings = jt_car(args);
  int nb = list_len(a, bindings, form);
  jt_V specials = JT_NIL;
  JT_ROOT(S, specials);
  jt_V body = parse_decls(a, jt_cdr(args), &specials, false, NULL);
  jt_Node *n = mknode(a, jt_ev_let);
  n->u.let.n = nb;
  n->u.let.sequential = sequential;
  n->u.let.inits = NEWN(a, const jt_Node *, nb);
  n->u.let.slots = NEWN(a, int, nb);
  n->u.let.specials = NEWN(a, jt_V, nb);
  Var **vars = NEWN(a, Var *, nb);
  /* For let, init forms are analysed outside the new scope. */
  Scope *s = NULL;
  if (sequential) s = scope_open(a, SC_LET);
  int i = 0;
  for (jt_V l = bindings; i < nb; l = jt_cdr(l), i++) {
    if (!jt_iscons(l)) form_changed(a, form);
    jt_V b = jt_car(l), sym = b, init = JT_NIL;
    if (jt_iscons(b)) {
      sym = jt_car(b);
      if (jt_iscons(jt_cdr(b))) {
        init = jt_car(jt_cdr(b));
        if (jt_cdr(jt_cdr(b)) != JT_NIL) syntax_error(a, "malformed let binding in %s", form);
      }
    }
    check_bindable(a, sym, form);
    a->opaque++;
    n->u.let.inits[i] = analyze(a, init);
    a->opaque--;
    bool sp = is_special_sym(S, sym) || memq(sym, specials);
    if (sp) {
      n->u.let.specials[i] = konst(a, sym);
      n->u.let.any_special = true;
    }
    if (sequential) vars[i] = var_add(a, sym, sp ? VAR_SPECIAL : VAR_LEX);
  }
  if (!sequential) {
    s = scope_open(a, SC_LET);
    i = 0;
    for (jt_V l = bindings; i < nb; l = jt_cdr(l), i++) {
      if (!jt_iscons(l)) form_changed(a, form);
      jt_V b = jt_car(l), sym = jt_iscons(b) ? jt_car(b) : b;
      if (!jt_issymbol(sym)) form_changed(a, form);
      vars[i] = var_add(a, sym, n->u.let.specials[i] ? VAR_SPECIAL : VAR_LEX);
    }
  }
  for (jt_V l = specials; jt_iscons(l); l = jt_cdr(l))
    if (!lookup(a, jt_car(l), VARKINDS) || lookup(a, jt_car(l), VARKINDS)->scope != s)
      var_add(a, jt_car(l), VAR_SPECIAL);
  n->u.let.body = progn_of(a, body, tail);
  scope_close(a, s);
  n->u.let.heap = s->heap;
  n->u.let.nheap = s->nvars;
  if (s->heap && s->lambda->heap_id < UINT16_MAX) n->u.let.scope_id = (uint16_t)(s->heap_id = ++s->lambda->heap_id);
  for (i = 0; i < nb; i++)
    n->u.let.slots[i] = s->heap ? vars[i]->index : vars[i]->stack_slot;
  JT_UNROOT(S, 1);
  return n;
}

static jt_Node *sf_let(A *a, jt_V form, jt_V args, bool tail) {
  return analyze_let(a, form, args, tail, false);
}
static jt_Node *sf_letstar(A *a, jt_V form, jt_V args, bool tail) {
  return analyze_let(a, form, args, tail, true);
}

/* One pair of a setq: a symbol macro is assigned as (setf expansion value). */
static jt_Node *setq_pair(A *a, jt_V sym, jt_V value, jt_V form) {
  jt_State *S = a->S;
  jt_V expansion = symbol_macro(a, sym);
  if (expansion != JT_NOVALUE) {
    jt_V f = jt_list(S, 3, JT_SYM(S, SETF), expansion, value);
    JT_PUSH(S, f);
    jt_Node *n = analyze(a, f);
    JT_POP(S, 1);
    return n;
  }
  return var_set(a, sym, analyze(a, value), form);
}

static jt_Node *sf_setq(A *a, jt_V form, jt_V args, bool tail) {
  int n = list_len(a, args, form);
  if (n % 2) syntax_error(a, "odd number of arguments to setq: %s", form);
  if (n == 0) return const_node(a, JT_NIL);
  if (n == 2) return setq_pair(a, jt_car(args), jt_car(jt_cdr(args)), form);
  jt_Node *p = mknode(a, jt_ev_progn);
  p->u.progn.n = n / 2;
  const jt_Node **v = NEWN(a, const jt_Node *, n / 2);
  jt_V l = args;
  for (int i = 0; i < n / 2; i++, l = jt_cdr(jt_cdr(l))) {
    if (!jt_iscons(l) || !jt_iscons(jt_cdr(l))) form_changed(a, form);
    v[i] = setq_pair(a, jt_car(l), jt_car(jt_cdr(l)), form);
  }
  p->u.progn.body = v;
  return p;
}

/* (symbol-macrolet ((symbol expansion)*) declaration* form*) */
static jt_Node *sf_symbol_macrolet(A *a, jt_V form, jt_V args, bool tail) {
  jt_State *S = a->S;
  if (!jt_iscons(args)) syntax_error(a, "malformed symbol-macrolet: %s", form);
  jt_V specials = JT_NIL;
  JT_ROOT(S, specials);
  jt_V body = parse_decls(a, jt_cdr(args), &specials, false, NULL);
  Scope *s = scope_open(a, SC_LET);
  jt_Walk w = jt_walk(jt_car(args));
  for (jt_V l = jt_car(args); jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V b = jt_car(l);
    if (!jt_iscons(b) || !jt_iscons(jt_cdr(b)) || jt_cdr(jt_cdr(b)) != JT_NIL)
      syntax_error(a, "malformed symbol-macrolet binding in %s", form);
    jt_V sym = jt_car(b);
    check_bindable(a, sym, form);
    if (is_special_sym(S, sym) || memq(sym, specials))
      syntax_error(a, "a special variable cannot be a symbol macro: %s", form);
    Var *v = var_add(a, sym, VAR_SYMMACRO);
    v->macro = konst(a, jt_car(jt_cdr(b)));
  }
  /* free special declarations, as in locally */
  for (jt_V l = specials; jt_iscons(l); l = jt_cdr(l)) var_add(a, jt_car(l), VAR_SPECIAL);
  jt_Node *n = progn_of(a, body, tail);
  scope_close(a, s);
  JT_UNROOT(S, 1);
  return n;
}

/* (load-time-value form [read-only-p]): FORM is evaluated once, in the null
** lexical environment, when the code around it is analysed (there is no
** separate loading: analysis is when code is prepared to run). */
static jt_Node *sf_load_time_value(A *a, jt_V form, jt_V args, bool tail) {
  (void)tail;
  int n = list_len(a, args, form);
  if (n < 1 || n > 2) syntax_error(a, "malformed load-time-value: %s", form);
  return const_node(a, jt_eval(a->S, jt_car(args)));
}

/* A local function definition (name lambda-list . body): NAME a symbol
** that is not a built-in, or (setf symbol). */
static void check_local_function(A *a, jt_V d, jt_V form) {
  jt_State *S = a->S;
  if (!jt_iscons(d) || !jt_iscons(jt_cdr(d)) || !(jt_issymbol(jt_car(d)) || setf_name_p(S, jt_car(d))))
    syntax_error(a, "malformed local function in %s", form);
  /* a locked name may be bound locally only when it names no function,
  ** macro or special operator (NIL, T, a standard name jiti leaves out) */
  jt_V name = jt_car(d);
  if (jt_issymbol(name) && (jt_symobj(S, name)->h.flags & JT_SYM_LOCKED) &&
      (jt_symobj(S, name)->function != JT_UNBOUND || jt_special_form_p(S, name) || jt_is_internal(name)))
    syntax_error(a, "cannot bind a built-in function locally: %s", form);
}

static jt_V local_fname(A *a, jt_V name) {
  return setf_name_p(a->S, name) ? setf_key(a, jt_car(jt_cdr(name))) : name;
}

static jt_Node *analyze_flet(A *a, jt_V form, jt_V args, bool tail, bool labels) {
  jt_State *S = a->S;
  if (!jt_iscons(args)) syntax_error(a, "malformed flet: %s", form);
  jt_V defs = jt_car(args);
  int nb = list_len(a, defs, form);
  jt_Node *n = mknode(a, jt_ev_let);
  n->u.let.n = nb;
  n->u.let.sequential = labels;
  n->u.let.inits = NEWN(a, const jt_Node *, nb);
  n->u.let.slots = NEWN(a, int, nb);
  n->u.let.specials = NEWN(a, jt_V, nb);
  Var **vars = NEWN(a, Var *, nb);
  Scope *s = NULL;
  if (labels) {
    s = scope_open(a, SC_LET);
    jt_V l = defs;
    for (int i = 0; i < nb; i++, l = jt_cdr(l)) {
      check_local_function(a, jt_car(l), form);
      vars[i] = var_add(a, local_fname(a, jt_car(jt_car(l))), VAR_FUN);
    }
  }
  jt_V l = defs;
  for (int i = 0; i < nb; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l)) form_changed(a, form);
    jt_V d = jt_car(l);
    check_local_function(a, d, form);
    n->u.let.inits[i] = lambda_node(a, jt_car(d), jt_car(jt_cdr(d)), jt_cdr(jt_cdr(d)));
  }
  int i;
  if (!labels) {
    s = scope_open(a, SC_LET);
    l = defs;
    for (i = 0; i < nb; i++, l = jt_cdr(l)) {
      if (!jt_iscons(l)) form_changed(a, form);
      check_local_function(a, jt_car(l), form);
      vars[i] = var_add(a, local_fname(a, jt_car(jt_car(l))), VAR_FUN);
    }
  }
  jt_V specials = JT_NIL;
  JT_ROOT(S, specials);
  jt_V body = parse_decls(a, jt_cdr(args), &specials, false, NULL);
  n->u.let.body = progn_of(a, body, tail);
  JT_UNROOT(S, 1);
  scope_close(a, s);
  n->u.let.heap = s->heap;
  n->u.let.nheap = s->nvars;
  for (i = 0; i < nb; i++)
    n->u.let.slots[i] = s->heap ? vars[i]->index : vars[i]->stack_slot;
  return n;
}

static jt_Node *sf_flet(A *a, jt_V form, jt_V args, bool tail) { return analyze_flet(a, form, args, tail, false); }
static jt_Node *sf_labels(A *a, jt_V form, jt_V args, bool tail) { return analyze_flet(a, form, args, tail, true); }

/* FORM wrapped in the local macro definitions visible here, as CLHS
** (macrolet) makes a local macro's expander see them: the symbol macros
** (symbol-macrolet) and the macros (macrolet) around it, not its lexical
** variables and functions.  FORM itself when there are none. */
static jt_V in_local_macros(A *a, Scope *from, jt_V form) {
  jt_State *S = a->S;
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  JT_PUSH(S, JT_NIL);   /* base[1]: the symbol macros' bindings */
  JT_PUSH(S, JT_NIL);   /* base[2]: the macros' definitions */
  JT_PUSH(S, JT_NIL);   /* base[3..5]: the expanders' variables */
  JT_PUSH(S, JT_NIL);
  JT_PUSH(S, JT_NIL);
  Scope *now = a->scope;
  a->scope = from;   /* lookup from there: a sibling definition shadows nothing */
  for (Scope *sc = from; sc; sc = sc->parent)
    for (int i = sc->nvars - 1; i >= 0; i--) {
      Var *v = sc->vars[i];
      if (v->kind == VAR_SYMMACRO && lookup(a, v->name, VARKINDS) == v) {
        jt_V b = jt_list(S, 2, v->name, v->macro);
        base[1] = jt_cons(S, b, base[1]);
      } else if (v->kind == VAR_MACRO && lookup(a, v->name, FUNKINDS) == v) {
        /* (name (&whole w &environment e &rest r) (funcall 'expander w e)) */
        if (base[3] == JT_NIL) {
          base[3] = jt_string_from_cstr(S, "WHOLE");
          base[3] = jt_make_symbol(S, base[3]);
          base[4] = jt_string_from_cstr(S, "ENV");
          base[4] = jt_make_symbol(S, base[4]);
          base[5] = jt_string_from_cstr(S, "ARGS");
          base[5] = jt_make_symbol(S, base[5]);
        }
        jt_V w = base[3], e = base[4];
        jt_V q = jt_list(S, 2, JT_SYM(S, QUOTE), v->macro);
        JT_PUSH(S, q);
        jt_V call = jt_list(S, 4, JT_SYM(S, FUNCALL), q, w, e);
        S->sp[-1] = call;
        jt_V ll = jt_list(S, 6, JT_SYM(S, AND_WHOLE), w, JT_SYM(S, AND_ENVIRONMENT), e, JT_SYM(S, AND_REST),
                          base[5]);
        JT_PUSH(S, ll);
        jt_V decl = jt_list(S, 2, JT_SYM(S, IGNORE), base[5]);
        JT_PUSH(S, decl);
        decl = jt_list(S, 2, JT_SYM(S, DECLARE), decl);
        S->sp[-1] = decl;
        jt_V def = jt_list(S, 4, v->name, ll, decl, call);
        JT_POP(S, 3);
        base[2] = jt_cons(S, def, base[2]);
      }
    }
  a->scope = now;
  if (base[2] != JT_NIL) base[0] = jt_list(S, 3, jt_intern(S, "MACROLET"), base[2], base[0]);
  if (base[1] != JT_NIL) base[0] = jt_list(S, 3, jt_intern(S, "SYMBOL-MACROLET"), base[1], base[0]);
  jt_V r = base[0];
  S->sp = base;
  return r;
}

static jt_Node *sf_macrolet(A *a, jt_V form, jt_V args, bool tail) {
  jt_State *S = a->S;
  if (!jt_iscons(args)) syntax_error(a, "malformed macrolet: %s", form);
  Scope *s = scope_open(a, SC_LET);
  jt_Walk w = jt_walk(jt_car(args));
  for (jt_V l = jt_car(args); jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V d = jt_car(l);
    if (!jt_iscons(d) || !jt_issymbol(jt_car(d)) || !jt_iscons(jt_cdr(d)))
      syntax_error(a, "malformed macrolet definition in %s", form);
    /* (%macro-lambda name lambda-list . body) builds the expander */
    jt_V mf = jt_cons(S, JT_SYM(S, MACRO_LAMBDA), d);
    JT_PUSH(S, mf);
    S->sp[-1] = in_local_macros(a, s->parent, mf);
    jt_V fn = jt_eval(S, S->sp[-1]);
    S->sp[-1] = fn;   /* var_add allocates (the arena), which may collect */
    Var *v = var_add(a, jt_car(d), VAR_MACRO);
    v->macro = konst(a, fn);
    JT_POP(S, 1);
  }
  jt_Node *n = sf_locally(a, form, jt_cdr(args), tail);   /* its declarations too */
  scope_close(a, s);
  return n;
}

/* block / return-from */
static jt_Node *sf_block(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args) || !jt_issymbol(jt_car(args))) syntax_error(a, "malformed block: %s", form);
  jt_Node *n = mknode(a, jt_ev_block);
  n->u.block.name = konst(a, jt_car(args));
  Scope *s = scope_open(a, SC_LET);
  Var *v = var_add(a, jt_car(args), VAR_BLOCK);
  v->node = n;
  v->level = a->opaque;
  n->u.block.body = progn_of(a, jt_cdr(args), true);
  scope_close(a, s);
  n->u.block.heap = s->heap;
  if (n->u.block.nonlocal) {
    n->ev = jt_ev_block_nl;
    ref_add(a, &n->u.block.slot, v, NULL);
    /* the reference above is from inside the scope's parent: fix `from` */
    a->refs->from = s;
  }
  return n;
}

static jt_Node *sf_return_from(A *a, jt_V form, jt_V args, bool tail) {
  int len = list_len(a, args, form);
  if (len < 1 || len > 2 || !jt_issymbol(jt_car(args))) syntax_error(a, "malformed return-from: %s", form);
  Var *v = lookup(a, jt_car(args), 1u << VAR_BLOCK);
  if (!v) syntax_error(a, "return-from unknown block: %s", form);
  jt_Node *n = mknode(a, jt_ev_return_local);
  n->u.xfer.target = v->node;
  a->opaque++;
  n->u.xfer.val = analyze(a, len == 2 ? jt_car(jt_cdr(args)) : JT_NIL);
  a->opaque--;
  if (!tail || a->opaque != v->level) {
    n->ev = jt_ev_return_nl;
    n->u.xfer.nonlocal = true;
    v->node->u.block.nonlocal = true;
    ref_add(a, &n->u.xfer.slot, v, NULL);
  }
  return n;
}

/* tagbody / go */
static bool is_tag(jt_V x) { return jt_issymbol(x) || jt_isinteger(x); }

static jt_Node *sf_tagbody(A *a, jt_V form, jt_V args, bool tail) {
  int total = list_len(a, args, form);
  jt_Node *n = mknode(a, jt_ev_tagbody);
  Scope *s = scope_open(a, SC_LET);
  Var *v = var_add(a, JT_NIL, VAR_TAGBODY);
  v->node = n;
  v->level = a->opaque;
  int ntags = 0;
  jt_V tags = JT_NIL;
  JT_ROOT(a->S, tags);
  jt_V l = args;
  for (int i = 0; i < total; i++, l = jt_cdr(l))
    if (is_tag(jt_car(l))) { ntags++; tags = jt_cons(a->S, jt_car(l), tags); }
  tags = jt_nreverse_list(tags);
  v->tags = konst(a, tags);
  JT_UNROOT(a->S, 1);
  n->u.tagbody.ntags = ntags;
  n->u.tagbody.tagpos = NEWN(a, int, ntags);
  n->u.tagbody.stmts = NEWN(a, const jt_Node *, total - ntags);
  int ns = 0, nt = 0;
  l = args;
  for (int i = 0; i < total; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l)) form_changed(a, form);
    if (is_tag(jt_car(l))) {
      if (nt == ntags) form_changed(a, form);
      n->u.tagbody.tagpos[nt++] = ns;
    } else {
      if (ns == total - ntags) form_changed(a, form);
      n->u.tagbody.stmts[ns++] = analyze_tail(a, jt_car(l));
    }
  }
  if (nt != ntags) form_changed(a, form);
  n->u.tagbody.n = ns;
  scope_close(a, s);
  n->u.tagbody.heap = s->heap;
  if (n->u.tagbody.nonlocal) {
    ref_add(a, &n->u.tagbody.slot, v, NULL);
    a->refs->from = s;
  }
  return n;
}

static jt_Node *sf_go(A *a, jt_V form, jt_V args, bool tail) {
  if (list_len(a, args, form) != 1 || !is_tag(jt_car(args))) syntax_error(a, "malformed go: %s", form);
  jt_V tag = jt_car(args);
  for (Scope *s = a->scope; s; s = s->parent)
    for (int i = s->nvars - 1; i >= 0; i--) {
      Var *v = s->vars[i];
      if (v->kind != VAR_TAGBODY) continue;
      int idx = 0;
      for (jt_V l = v->tags; jt_iscons(l); l = jt_cdr(l), idx++)
        if (jt_eql(jt_car(l), tag)) {
          jt_Node *n = mknode(a, jt_ev_go_local);
          n->u.xfer.target = v->node;
          n->u.xfer.index = idx;
          if (!tail || a->opaque != v->level) {
            n->ev = jt_ev_go_nl;
            n->u.xfer.nonlocal = true;
            v->node->u.tagbody.nonlocal = true;
            ref_add(a, &n->u.xfer.slot, v, NULL);
          }
          return n;
        }
    }
  syntax_error(a, "go to an unknown tag: %s", form);
}

static jt_Node *two_node(A *a, jt_EvalFn ev, jt_Node *x, jt_Node *y) {
  jt_Node *n = mknode(a, ev);
  n->u.two.a = x;
  n->u.two.b = y;
  return n;
}

static jt_Node *sf_catch(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args)) syntax_error(a, "malformed catch: %s", form);
  jt_Node *tag = analyze(a, jt_car(args));
  a->opaque++;
  jt_Node *body = progn_of(a, jt_cdr(args), false);
  a->opaque--;
  return two_node(a, jt_ev_catch, tag, body);
}

static jt_Node *sf_throw(A *a, jt_V form, jt_V args, bool tail) {
  if (list_len(a, args, form) != 2) syntax_error(a, "malformed throw: %s", form);
  return two_node(a, jt_ev_throw, analyze(a, jt_car(args)), analyze(a, jt_car(jt_cdr(args))));
}

static jt_Node *sf_unwind_protect(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args)) syntax_error(a, "malformed unwind-protect: %s", form);
  a->opaque++;
  jt_Node *p = analyze(a, jt_car(args));
  jt_Node *c = progn_of(a, jt_cdr(args), false);
  a->opaque--;
  return two_node(a, jt_ev_unwind_protect, p, c);
}

static jt_Node *sf_the(A *a, jt_V form, jt_V args, bool tail) {
  if (list_len(a, args, form) != 2) syntax_error(a, "malformed the: %s", form);
  return tail ? analyze_tail(a, jt_car(jt_cdr(args))) : analyze(a, jt_car(jt_cdr(args)));
}

/* Code is evaluated, never compiled to a file, so only :execute (or EVAL)
** matters, at top level or not (CLHS 3.2.3.1), as SBCL's load of source. */
static jt_Node *sf_eval_when(A *a, jt_V form, jt_V args, bool tail) {
  jt_State *S = a->S;
  if (!jt_iscons(args)) syntax_error(a, "malformed eval-when: %s", form);
  jt_V sits = jt_car(args);
  bool run = false;
  jt_Walk w = jt_walk(sits);
  for (jt_V l = sits; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V x = jt_car(l);
    if (x == JT_SYM(S, K_EXECUTE) || x == jt_intern(S, "EVAL")) run = true;
  }
  return run ? progn_of(a, jt_cdr(args), tail) : const_node(a, JT_NIL);
}

static jt_Node *sf_mvcall(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args)) syntax_error(a, "malformed multiple-value-call: %s", form);
  jt_Node *n = mknode(a, jt_ev_mvcall);
  n->u.mvcall.fn = analyze(a, jt_car(args));
  int k = list_len(a, jt_cdr(args), form);
  n->u.mvcall.n = k;
  n->u.mvcall.forms = NEWN(a, const jt_Node *, k);
  jt_V l = jt_cdr(args);
  for (int i = 0; i < k; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l)) form_changed(a, form);
    n->u.mvcall.forms[i] = analyze(a, jt_car(l));
  }
  return n;
}

static jt_Node *sf_mvprog1(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args)) syntax_error(a, "malformed multiple-value-prog1: %s", form);
  jt_Node *first = analyze(a, jt_car(args));
  return two_node(a, jt_ev_mvprog1, first, progn_of(a, jt_cdr(args), false));
}

/* (multiple-value-bind (vars) form . body) and (destructuring-bind ll form . body):
** both bind a lambda list in a new scope from a list of values. */
static jt_Node *analyze_bind(A *a, jt_V form, jt_V args, bool tail, int kind) {
  jt_State *S = a->S;
  if (!jt_iscons(args) || !jt_iscons(jt_cdr(args))) syntax_error(a, "malformed binding form: %s", form);
  jt_Node *n = mknode(a, kind == LL_ORDINARY ? jt_ev_mvbind : jt_ev_dbind);
  n->u.bind.form = analyze(a, jt_car(jt_cdr(args)));
  jt_V specials = JT_NIL;
  JT_ROOT(S, specials);
  jt_V body = parse_decls(a, jt_cdr(jt_cdr(args)), &specials, false, NULL);
  Scope *s = scope_open(a, SC_LET);
  jt_V ll = jt_car(args);
  if (kind == LL_ORDINARY) {
    /* m-v-bind vars are optional parameters defaulting to NIL */
    ll = jt_cons(S, JT_SYM(S, AND_OPTIONAL), ll);
    JT_PUSH(S, ll);
  }
  jt_Lambda *L = parse_lambda_list(a, ll, kind, specials, form);
  if (kind == LL_ORDINARY) JT_POP(S, 1);
  n->u.bind.body = progn_of(a, body, tail);
  scope_close(a, s);
  L->heap = s->heap;
  L->nheap = s->nvars;
  fix_lambda(s, L);
  n->u.bind.lam = L;
  JT_UNROOT(S, 1);
  return n;
}

static jt_Node *sf_mvbind(A *a, jt_V form, jt_V args, bool tail) {
  return analyze_bind(a, form, args, tail, LL_ORDINARY);
}
static jt_Node *sf_dbind(A *a, jt_V form, jt_V args, bool tail) {
  return analyze_bind(a, form, args, tail, LL_DESTRUCTURING);
}

/* A macro expander: (lambda (form env)
**   (destructuring-bind ll (cdr form) (block name . body)))
** with &whole bound to the form and &environment to ENV.  Built as a form,
** then analysed. */
static jt_Lambda *macro_lambda(A *a, jt_V name, jt_V ll, jt_V body) {
  jt_State *S = a->S;
  jt_V whole = JT_NIL, doc = JT_NIL, envvar = JT_NIL;
  if (jt_iscons(ll) && jt_car(ll) == JT_SYM(S, AND_WHOLE) && jt_iscons(jt_cdr(ll))) {
    whole = jt_car(jt_cdr(ll));
    ll = jt_cdr(jt_cdr(ll));
  }
  /* &environment var, anywhere at the top level: taken out of the list */
  jt_Walk w = jt_walk(ll);
  for (jt_V l = ll, prev = JT_NIL; jt_iscons(l); prev = l, l = jt_walk_next(S, &w, l)) {
    if (jt_car(l) != JT_SYM(S, AND_ENVIRONMENT)) continue;
    if (!jt_iscons(jt_cdr(l))) syntax_error(a, "&environment needs a variable in %s", ll);
    envvar = jt_car(jt_cdr(l));
    jt_V rest = jt_cdr(jt_cdr(l));
    if (prev == JT_NIL) {
      ll = rest;
    } else {
      JT_PUSH(S, rest);
      jt_V head = JT_NIL, tail = JT_NIL;
      JT_PUSH(S, ll);
      for (jt_V m = ll; m != l; m = jt_cdr(m)) {   /* copy the part before it */
        jt_V c = jt_cons(S, jt_car(m), JT_NIL);
        if (head == JT_NIL) { head = c; JT_PUSH(S, head); } else jt_cons_(tail)->cdr = c;
        tail = c;
      }
      jt_cons_(tail)->cdr = S->sp[-3];
      ll = head;
      S->sp -= 3;
    }
    break;
  }
  if (jt_iscons(body) && jt_isstring(jt_car(body)) && jt_iscons(jt_cdr(body))) {
    doc = jt_car(body);
    body = jt_cdr(body);
  }
  /* the body's declarations go before the block, into the binding form */
  jt_V decls = body;
  jt_Walk wb = jt_walk(body);
  while (jt_iscons(body) && jt_iscons(jt_car(body)) && jt_car(jt_car(body)) == JT_SYM(S, DECLARE))
    body = jt_walk_next(S, &wb, body);
  jt_V *base = S->sp;
  JT_PUSH(S, ll);
  JT_PUSH(S, body);
  JT_PUSH(S, whole);
  JT_PUSH(S, doc);
  jt_V formsym = jt_make_symbol(S, jt_string_from_cstr(S, "FORM"));
  JT_PUSH(S, formsym);
  jt_V envsym = jt_make_symbol(S, jt_string_from_cstr(S, "ENV"));
  JT_PUSH(S, envsym);
  jt_V x = jt_cons(S, name, body);                       /* (name . body) */
  x = jt_cons(S, JT_SYM(S, BLOCK), x);                   /* (block name . body) */
  JT_PUSH(S, x);
  jt_V target = jt_list(S, 2, JT_SYM(S, CDR), formsym);  /* (cdr form) */
  JT_PUSH(S, target);
  /* (destructuring-bind ll (cdr form) decls... (block name . body)) */
  JT_PUSH(S, decls);                                     /* base[8] */
  size_t nd = 0;
  for (jt_V d = decls; d != body; d = jt_cdr(d)) nd++;
  x = jt_list(S, 1, base[6]);
  JT_PUSH(S, x);                                         /* base[9] */
  for (size_t i = nd; i > 0; i--) {
    jt_V d = base[8];
    for (size_t k = 1; k < i; k++) d = jt_cdr(d);
    base[9] = jt_cons(S, jt_car(d), base[9]);
  }
  base[9] = jt_cons(S, base[7], base[9]);
  base[9] = jt_cons(S, base[0], base[9]);
  x = jt_cons(S, JT_SYM(S, DESTRUCTURING_BIND), base[9]);
  base[6] = x;
  if (jt_iscons(whole)) {          /* &whole (pattern): destructured too */
    x = jt_list(S, 4, JT_SYM(S, DESTRUCTURING_BIND), whole, formsym, base[6]);
    base[6] = x;
  } else if (whole != JT_NIL) {
    jt_V b = jt_list(S, 2, whole, formsym);
    b = jt_list(S, 1, b);
    x = jt_list(S, 3, JT_SYM(S, LET), b, base[6]);
    base[6] = x;
  }
  if (envvar != JT_NIL) {
    JT_PUSH(S, envvar);
    jt_V b = jt_list(S, 2, envvar, envsym);
    b = jt_list(S, 1, b);
    x = jt_list(S, 3, JT_SYM(S, LET), b, base[6]);
    base[6] = x;
    JT_POP(S, 1);
  }
  jt_V decl = jt_list(S, 2, JT_SYM(S, IGNORABLE), envsym);
  decl = jt_list(S, 2, JT_SYM(S, DECLARE), decl);
  jt_V lbody = jt_list(S, 2, decl, base[6]);
  if (doc != JT_NIL) lbody = jt_cons(S, doc, lbody);
  base[7] = lbody;
  jt_V lam = jt_list(S, 2, formsym, envsym);
  JT_PUSH(S, lam);
  jt_Lambda *L = analyze_lambda(a, name, lam, base[7], LL_ORDINARY, false);
  S->sp = base;
  return L;
}

static jt_Node *sf_macro_lambda(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args) || !jt_iscons(jt_cdr(args)) || !jt_issymbol(jt_car(args)))
    syntax_error(a, "malformed macro definition: %s", form);
  jt_Node *n = mknode(a, jt_ev_lambda);
  n->u.lambda.lam = macro_lambda(a, jt_car(args), jt_car(jt_cdr(args)), jt_cdr(jt_cdr(args)));
  return n;
}

/* defun and defmacro are special forms here (CL allows implementing a
** standard macro as a special form); analysing them directly keeps loading
** large files fast. */
int jt_def_name(jt_State *S, jt_V args, jt_DefKind kind, jt_V *sym) {
  if (!jt_iscons(args) || !jt_iscons(jt_cdr(args))) return -1;
  jt_V name = jt_car(args);
  *sym = name;
  if (kind == JT_DEF_FUNCTION && jt_iscons(name) && jt_car(name) == JT_SYM(S, SETF) &&
      jt_iscons(jt_cdr(name)) && jt_cdr(jt_cdr(name)) == JT_NIL) {
    *sym = jt_car(jt_cdr(name));
    kind = JT_DEF_SETF_FUNCTION;
  }
  if (!jt_issymbol(*sym) || *sym == JT_NIL || *sym == JT_T || jt_iskeyword(*sym)) return -2;
  return kind;
}

static jt_Node *analyze_def(A *a, jt_V form, jt_V args, jt_DefKind kind) {
  jt_State *S = a->S;
  jt_V sym = JT_NIL;
  int def = jt_def_name(S, args, kind, &sym);
  if (def == -1) syntax_error(a, "malformed definition: %s", form);
  if (def == -2) syntax_error(a, "bad function name in %s", form);
  jt_Node *n = mknode(a, jt_ev_defun);
  n->u.def.sym = konst(a, sym);
  n->u.def.kind = def;
  n->u.def.form = konst(a, form);
  jt_Node *fn = mknode(a, jt_ev_lambda);
  if (kind == JT_DEF_MACRO)
    fn->u.lambda.lam = macro_lambda(a, sym, jt_car(jt_cdr(args)), jt_cdr(jt_cdr(args)));
  else
    fn->u.lambda.lam = analyze_lambda(a, jt_car(args), jt_car(jt_cdr(args)), jt_cdr(jt_cdr(args)),
                                      LL_ORDINARY, true);
  n->u.def.fn = fn;
  return n;
}

static jt_Node *sf_defun(A *a, jt_V form, jt_V args, bool tail) { return analyze_def(a, form, args, JT_DEF_FUNCTION); }
static jt_Node *sf_defmacro(A *a, jt_V form, jt_V args, bool tail) { return analyze_def(a, form, args, JT_DEF_MACRO); }

static jt_Node *sf_progv(A *a, jt_V form, jt_V args, bool tail) {
  if (list_len(a, args, form) < 2) syntax_error(a, "malformed progv: %s", form);
  jt_Node *n = mknode(a, jt_ev_progv);
  n->u.mvcall.fn = NULL;
  n->u.mvcall.n = 3;
  n->u.mvcall.forms = NEWN(a, const jt_Node *, 3);
  n->u.mvcall.forms[0] = analyze(a, jt_car(args));
  n->u.mvcall.forms[1] = analyze(a, jt_car(jt_cdr(args)));
  a->opaque++;
  n->u.mvcall.forms[2] = progn_of(a, jt_cdr(jt_cdr(args)), false);
  a->opaque--;
  return n;
}

/* Backquote: (quasiquote x) expands into calls of LIST, APPEND and APPLY. */
static jt_V bq_expand(A *a, jt_V x, int depth);

static jt_V bq_list_expand(A *a, jt_V x, int depth) {
  jt_State *S = a->S;
  /* (append seg1 seg2 ... tail): each seg is (list item) or a splice. */
  jt_V segs = JT_NIL;
  JT_ROOT(S, segs);
  JT_ROOT(S, x);
  jt_Walk w = jt_walk(x);
  while (jt_iscons(x)) {
    jt_V item = jt_car(x);
    if (item == JT_SYM(S, UNQUOTE) || item == JT_SYM(S, QUASIQUOTE)) break;  /* `(a . ,b) */
    jt_V seg;
    if (jt_iscons(item) && jt_car(item) == JT_SYM(S, UNQUOTE_SPLICING) && depth == 0) {
      if (!jt_iscons(jt_cdr(item))) syntax_error(a, "malformed ,@ in %s", item);
      seg = jt_car(jt_cdr(item));
    } else {
      seg = bq_expand(a, item, depth);
      seg = jt_list(S, 2, JT_SYM(S, LIST), seg);
    }
    segs = jt_cons(S, seg, segs);
    x = jt_walk_next(S, &w, x);
  }
  jt_V tail = x == JT_NIL ? JT_NIL : bq_expand(a, x, depth);
  segs = jt_cons(S, tail, segs);
  segs = jt_nreverse_list(segs);
  segs = jt_cons(S, JT_SYM(S, APPEND), segs);
  JT_UNROOT(S, 2);
  return segs;
}

static jt_V bq_expand(A *a, jt_V x, int depth) {
  jt_State *S = a->S;
  jt_check_cstack(S);
  if (jt_iscons(x)) {
    jt_V head = jt_car(x);
    bool nested = head == JT_SYM(S, QUASIQUOTE);
    if ((head == JT_SYM(S, UNQUOTE) || nested) && jt_iscons(jt_cdr(x))) {
      if (head == JT_SYM(S, UNQUOTE) && depth == 0) return jt_car(jt_cdr(x));
      jt_V inner = bq_expand(a, jt_car(jt_cdr(x)), nested ? depth + 1 : depth - 1);
      JT_PUSH(S, inner);
      jt_V q = jt_list(S, 2, JT_SYM(S, QUOTE), head);
      jt_V r = jt_list(S, 3, JT_SYM(S, LIST), q, S->sp[-1]);
      JT_POP(S, 1);
      return r;
    }
    if (head == JT_SYM(S, UNQUOTE_SPLICING) && depth == 0)
      syntax_error(a, ",@ in an illegal position: %s", x);
    return bq_list_expand(a, x, depth);
  }
  if (jt_isvector(x)) {
    jt_Vector *v = jt_vec_(x);
    jt_V l = jt_list_from(S, (int)v->len, v->items);
    JT_PUSH(S, l);
    jt_V e = bq_list_expand(a, l, depth);
    S->sp[-1] = e;
    jt_V f = jt_list(S, 2, JT_SYM(S, FUNCTION), JT_SYM(S, VECTOR));
    jt_V r = jt_list(S, 3, JT_SYM(S, APPLY), f, S->sp[-1]);
    JT_POP(S, 1);
    return r;
  }
  if (jt_issymbol(x) && x != JT_NIL && x != JT_T && !jt_iskeyword(x))
    return jt_list(S, 2, JT_SYM(S, QUOTE), x);
  return x;
}

static jt_Node *sf_quasiquote(A *a, jt_V form, jt_V args, bool tail) {
  if (!jt_iscons(args) || jt_cdr(args) != JT_NIL) syntax_error(a, "malformed backquote: %s", form);
  jt_V e = bq_expand(a, jt_car(args), 0);
  JT_PUSH(a->S, e);
  jt_Node *n = tail ? analyze_tail(a, e) : analyze(a, e);
  JT_POP(a->S, 1);
  return n;
}

static jt_Node *sf_unquote(A *a, jt_V form, jt_V args, bool tail) {
  syntax_error(a, "comma outside a backquote: %s", form);
}

static const struct { const char *name; SpecialFn fn; } special_forms[] = {
  {"QUOTE", sf_quote}, {"FUNCTION", sf_function}, {"IF", sf_if},
  {"PROGN", sf_progn}, {"LET", sf_let}, {"LET*", sf_letstar},
  {"SETQ", sf_setq}, {"FLET", sf_flet}, {"LABELS", sf_labels},
  {"MACROLET", sf_macrolet}, {"BLOCK", sf_block},
  {"RETURN-FROM", sf_return_from}, {"TAGBODY", sf_tagbody}, {"GO", sf_go},
  {"CATCH", sf_catch}, {"THROW", sf_throw},
  {"UNWIND-PROTECT", sf_unwind_protect}, {"THE", sf_the},
  {"EVAL-WHEN", sf_eval_when}, {"LOCALLY", sf_locally},
  {"MULTIPLE-VALUE-CALL", sf_mvcall}, {"MULTIPLE-VALUE-PROG1", sf_mvprog1},
  {"MULTIPLE-VALUE-BIND", sf_mvbind}, {"DESTRUCTURING-BIND", sf_dbind},
  {"LAMBDA", sf_lambda}, {"NAMED-LAMBDA", sf_named_lambda},
  {"DEFUN", sf_defun}, {"DEFMACRO", sf_defmacro}, {"PROGV", sf_progv},
  {"%MACRO-LAMBDA", sf_macro_lambda}, {"QUASIQUOTE", sf_quasiquote}, {"UNQUOTE", sf_unquote},
  {"UNQUOTE-SPLICING", sf_unquote},
  {"SYMBOL-MACROLET", sf_symbol_macrolet}, {"LOAD-TIME-VALUE", sf_load_time_value},
  /* the standard's macros that are special forms here, by the names their
  ** macro functions expand into (jt_standard_macro_alias) */
  {"%DEFUN", sf_defun}, {"%DEFMACRO", sf_defmacro}, {"%LAMBDA", sf_lambda},
  {"%MULTIPLE-VALUE-BIND", sf_mvbind}, {"%DESTRUCTURING-BIND", sf_dbind},
  {NULL, NULL}
};

/* DEFUN, DEFMACRO, LAMBDA, MULTIPLE-VALUE-BIND and DESTRUCTURING-BIND are
** macros in the standard and special forms here.  The standard requires
** them to have macro functions too: theirs expand into the internal
** special form of the same meaning.  Returns that form's operator, or NIL
** for any other symbol. */
jt_V jt_standard_macro_alias(jt_State *S, jt_V sym) {
  static const char *const names[][2] = {
    {"DEFUN", "%DEFUN"}, {"DEFMACRO", "%DEFMACRO"}, {"LAMBDA", "%LAMBDA"},
    {"MULTIPLE-VALUE-BIND", "%MULTIPLE-VALUE-BIND"},
    {"DESTRUCTURING-BIND", "%DESTRUCTURING-BIND"}};
  if (!jt_issymbol(sym) || jt_symobj(S, sym)->package != JT_PKG_LISP) return JT_NIL;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(jt_symobj(S, sym)->cname, names[i][0]) == 0) return jt_intern(S, names[i][1]);
  return JT_NIL;
}

void jt_analyze_init(jt_State *S) {
  for (int i = 0; special_forms[i].name; i++) {
    jt_V sym = jt_intern(S, special_forms[i].name);
    jt_Symbol *s = jt_symobj(S, sym);
    s->h.flags |= JT_SYM_SPECFORM | JT_SYM_LOCKED;
    s->h.aux = (uint32_t)i;
  }
}

bool jt_special_form_p(jt_State *S, jt_V sym) {
  return jt_issymbol(sym) && (jt_symobj(S, sym)->h.flags & JT_SYM_SPECFORM);
}

/* ------------------------------------------------------------------ calls */

static const struct { const char *name; int argc; jt_EvalFn ev; } inline_ops[] = {
  {"+", 2, jt_ev_add2}, {"-", 2, jt_ev_sub2}, {"<", 2, jt_ev_lt2},
  {">", 2, jt_ev_gt2}, {"<=", 2, jt_ev_le2}, {">=", 2, jt_ev_ge2},
  {"=", 2, jt_ev_numeq2}, {"1+", 1, jt_ev_add1}, {"1-", 1, jt_ev_sub1},
  {"CAR", 1, jt_ev_car}, {"CDR", 1, jt_ev_cdr}, {"CONS", 2, jt_ev_cons},
  {"EQ", 2, jt_ev_eq}, {"NOT", 1, jt_ev_not}, {"NULL", 1, jt_ev_not},
  {NULL, 0, NULL}
};

static const jt_Node **analyze_args(A *a, jt_V args, int n, jt_V form) {
  const jt_Node **v = NEWN(a, const jt_Node *, n);
  jt_V l = args;
  for (int i = 0; i < n; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l)) form_changed(a, form);
    v[i] = analyze(a, jt_car(l));
  }
  return v;
}

static jt_Node *analyze_call(A *a, jt_V form, jt_V head, jt_V args) {
  jt_State *S = a->S;
  int argc = list_len(a, args, form);
  if (jt_issymbol(head)) {
    Var *v = lookup(a, head, 1u << VAR_FUN);
    if (v) {
      jt_Node *n = mknode(a, jt_ev_calll);
      n->u.calll.argc = argc;
      n->u.calll.args = analyze_args(a, args, argc, form);
      ref_add(a, &n->u.calll.var, v, NULL);
      return n;
    }
    jt_Symbol *s = jt_symobj(S, head);
    if ((s->h.flags & JT_SYM_LOCKED) && jt_is(s->function, JT_TPRIM)) {
      for (int i = 0; inline_ops[i].name; i++)
        if (inline_ops[i].argc == argc && strcmp(inline_ops[i].name, s->cname) == 0) {
          jt_Node *n = mknode(a, inline_ops[i].ev);
          n->u.callg.sym = konst(a, head);
          n->u.callg.argc = argc;
          n->u.callg.args = analyze_args(a, args, argc, form);
          return n;
        }
    }
    /* A standard name with no definition cannot get one (COMMON-LISP is
    ** locked): its call is refused when reached, before its arguments are
    ** evaluated, so the report says why (refuse.c) and nothing else fails
    ** first.  The kernel's own library may still be defining it. */
    if (s->package == JT_PKG_LISP && s->function == JT_UNBOUND && !(s->h.flags & JT_SYM_SPECFORM) &&
        !S->kernel_mode && jt_packages_ready(S)) {
      jt_Node *n = mknode(a, jt_ev_callundef);
      n->u.callg.sym = konst(a, head);
      n->u.callg.argc = 0;
      n->u.callg.args = NULL;
      return n;
    }
    jt_Node *n = mknode(a, head == JT_NIL || head == JT_T ? jt_ev_callundef : jt_ev_callg);
    n->u.callg.sym = konst(a, head);
    n->u.callg.argc = argc;
    n->u.callg.args = analyze_args(a, args, argc, form);
    return n;
  }
  if (jt_iscons(head) && jt_car(head) == JT_SYM(S, LAMBDA)) {
    jt_Node *n = mknode(a, jt_ev_callx);
    n->u.callx.fn = function_node(a, head, form);
    n->u.callx.argc = argc;
    n->u.callx.args = analyze_args(a, args, argc, form);
    return n;
  }
  syntax_error(a, "illegal function call: %s", form);
}

/* ------------------------------------------------------ macro expansion */

/* The lexical environment a macro expander receives (&environment): NIL
** when no local macro or symbol macro is in scope, else (:ENVIRONMENT .
** entries), innermost first, each (name :macro . expander), (name
** :function), (name :symbol-macro . expansion) or (name :variable), so that
** macroexpand with it sees what the code around the form sees. */
static jt_V lexical_env(A *a) {
  if (!a) return JT_NIL;
  bool any = false;
  for (Scope *s = a->scope; s && !any; s = s->parent)
    for (int i = 0; i < s->nvars; i++)
      if (s->vars[i]->kind == VAR_MACRO || s->vars[i]->kind == VAR_SYMMACRO) { any = true; break; }
  if (!any) return JT_NIL;
  jt_State *S = a->S;
  jt_V *base = S->sp;
  JT_PUSH(S, JT_NIL);   /* entries, reversed */
  for (Scope *s = a->scope; s; s = s->parent)
    for (int i = s->nvars - 1; i >= 0; i--) {
      Var *v = s->vars[i];
      jt_V kind;
      bool with_value = false;
      switch (v->kind) {
        case VAR_MACRO: kind = jt_intern_keyword(S, "MACRO"); with_value = true; break;
        case VAR_SYMMACRO: kind = jt_intern_keyword(S, "SYMBOL-MACRO"); with_value = true; break;
        case VAR_FUN: kind = jt_intern_keyword(S, "FUNCTION"); break;
        case VAR_LEX: case VAR_SPECIAL: kind = jt_intern_keyword(S, "VARIABLE"); break;
        default: continue;
      }
      jt_V tail = with_value ? jt_cons(S, kind, v->macro) : jt_list(S, 1, kind);
      JT_PUSH(S, tail);
      jt_V e = jt_cons(S, v->name, tail);
      S->sp[-1] = e;
      base[0] = jt_cons(S, e, base[0]);
      JT_POP(S, 1);
    }
  jt_V env = jt_cons(S, jt_intern_keyword(S, "ENVIRONMENT"), jt_nreverse_list(base[0]));
  S->sp = base;
  return env;
}

/* The entry for `name` in an environment made by lexical_env, in the
** function namespace (fn) or the variable one; NIL when none. */
static jt_V env_entry(jt_State *S, jt_V env, jt_V name, bool fn) {
  if (!jt_iscons(env) || jt_car(env) != jt_intern_keyword(S, "ENVIRONMENT")) return JT_NIL;
  jt_V mac = jt_intern_keyword(S, fn ? "MACRO" : "SYMBOL-MACRO");
  jt_V plain = jt_intern_keyword(S, fn ? "FUNCTION" : "VARIABLE");
  jt_Walk w = jt_walk(jt_cdr(env));   /* the program may pass any list */
  for (jt_V l = jt_cdr(env); jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V e = jt_car(l);
    if (!jt_iscons(e) || jt_car(e) != name || !jt_iscons(jt_cdr(e))) continue;
    jt_V k = jt_car(jt_cdr(e));
    if (k == mac || k == plain) return e;
  }
  return JT_NIL;
}

/* Call a macro expander through *macroexpand-hook* (FUNCALL unless the
** program binds another function). */
static jt_V call_expander(jt_State *S, jt_V fn, jt_V form, jt_V env) {
  jt_V hook = jt_sym_(JT_SYM(S, MACROEXPAND_HOOK))->value;
  if (hook == JT_UNBOUND || hook == JT_NIL || hook == JT_SYM(S, FUNCALL) ||
      hook == jt_sym_(JT_SYM(S, FUNCALL))->function)
    return jt_funcall(S, fn, 2, form, env);
  return jt_funcall(S, hook, 3, fn, form, env);
}

static jt_V local_macro(A *a, jt_V head) {
  if (!a || !jt_issymbol(head)) return JT_NOVALUE;
  Var *v = lookup(a, head, FUNKINDS);
  if (v && v->kind == VAR_MACRO) return v->macro;
  return v ? JT_NIL : JT_NOVALUE;   /* a local function shadows a macro */
}

static jt_V expand_1(jt_State *S, A *a, jt_V form, bool *expanded) {
  *expanded = false;
  if (!jt_iscons(form)) return form;
  jt_V head = jt_car(form);
  if (!jt_issymbol(head)) return form;
  jt_V fn = local_macro(a, head);
  if (fn == JT_NIL) return form;
  if (fn == JT_NOVALUE) {
    jt_Symbol *s = jt_symobj(S, head);
    if (!jt_is_macro(s->function) || (s->h.flags & JT_SYM_SPECFORM)) return form;
    fn = s->function;
  }
  *expanded = true;
  jt_V *base = S->sp;
  JT_PUSH(S, fn);
  JT_PUSH(S, form);
  jt_V env = lexical_env(a);
  JT_PUSH(S, env);
  jt_V r = call_expander(S, fn, form, env);
  S->sp = base;
  return r;
}

/* (macro-function name env): a local macro of ENV, NIL when a local
** function shadows the name there, else JT_NOVALUE (look globally). */
jt_V jt_local_macro_function(jt_State *S, jt_V name, jt_V env) {
  jt_V e = env_entry(S, env, name, true);
  if (e == JT_NIL) return JT_NOVALUE;
  return jt_car(jt_cdr(e)) == jt_intern_keyword(S, "MACRO") ? jt_cdr(jt_cdr(e)) : JT_NIL;
}

jt_V jt_macroexpand_1(jt_State *S, jt_V form, bool *expanded) {
  return jt_macroexpand_1_env(S, form, JT_NIL, expanded);
}

jt_V jt_macroexpand_1_env(jt_State *S, jt_V form, jt_V env, bool *expanded) {
  *expanded = false;
  if (jt_is(form, JT_TSYMBOL)) {
    jt_V e = env_entry(S, env, form, false);
    if (e != JT_NIL) {   /* lexically a symbol macro, or a variable */
      *expanded = jt_car(jt_cdr(e)) == jt_intern_keyword(S, "SYMBOL-MACRO");
      return *expanded ? jt_cdr(jt_cdr(e)) : form;
    }
    jt_V box = jt_meta_get(S, form, jt_intern(S, "%SYMBOL-MACRO"));
    *expanded = jt_iscons(box);
    return *expanded ? jt_car(box) : form;
  }
  if (jt_iscons(form) && jt_issymbol(jt_car(form))) {
    jt_V e = env_entry(S, env, jt_car(form), true);
    if (e != JT_NIL) {   /* a local macro, or a local function shadowing one */
      if (jt_car(jt_cdr(e)) != jt_intern_keyword(S, "MACRO")) return form;
      *expanded = true;
      return call_expander(S, jt_cdr(jt_cdr(e)), form, env);
    }
    jt_Symbol *s = jt_symobj(S, jt_car(form));
    if (!jt_is_macro(s->function) || (s->h.flags & JT_SYM_SPECFORM)) return form;
    *expanded = true;
    return call_expander(S, s->function, form, env);
  }
  return form;
}

/* ---------------------------------------------------------------- analyse */

/* ---------------------------------------------- the commonest macros */

/* AND, OR, WHEN, UNLESS and COND are macros (00-base.lisp), and nearly
** every form uses one.  Expanding one runs its Lisp expander, and OR and
** COND make a gensym for a LET; a call's form is analysed afresh each
** time, so that was a large part of analysing it.  Here a well-formed use
** is analysed straight into the nodes its expansion would give (OR into
** one node of its own, jt_ev_or), in the same order, with the same
** transparent positions.  Their macro functions stay what macroexpand
** and macro-function see.  Not taken when the name is bound locally, when
** the program binds *macroexpand-hook* (it must see each expansion), or
** for a malformed use (the expander reports it). */

static bool expands_as_standard(A *a, jt_V head) {
  jt_State *S = a->S;
  if (lookup(a, head, FUNKINDS)) return false;
  jt_V hook = jt_sym_(JT_SYM(S, MACROEXPAND_HOOK))->value;
  return hook == JT_UNBOUND || hook == JT_NIL || hook == JT_SYM(S, FUNCALL) ||
         hook == jt_sym_(JT_SYM(S, FUNCALL))->function;
}

/* The length of a proper list, else -1 (a circular list is a type-error). */
static int proper_len(A *a, jt_V l) {
  int n = list_count(a, l, l);
  for (int i = 0; i < n; i++) l = jt_cdr(l);
  return l == JT_NIL ? n : -1;
}

static jt_Node *if_node(A *a, const jt_Node *test, const jt_Node *then, const jt_Node *els) {
  jt_Node *n = mknode(a, jt_ev_if);
  n->u.if_.test = test;
  n->u.if_.then = then;
  n->u.if_.els = els;
  return n;
}

static jt_Node *or_node(A *a, const jt_Node **forms, int n) {
  jt_Node *node = mknode(a, jt_ev_or);
  node->u.progn.n = n;
  node->u.progn.body = forms;
  return node;
}

/* The n (> 0) forms of args analysed in order; only the last may be in
** tail position. */
static const jt_Node **analyze_forms(A *a, jt_V args, int n, bool tail) {
  const jt_Node **f = NEWN(a, const jt_Node *, n);
  jt_V l = args;
  for (int i = 0; i < n; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l)) form_changed(a, args);
    f[i] = i == n - 1 && tail ? analyze_tail(a, jt_car(l)) : analyze(a, jt_car(l));
  }
  return f;
}

/* (and a ... y z): (if a (and ... y z) nil), the chain built from the end. */
static jt_Node *std_and(A *a, jt_V args, int n, bool tail) {
  if (n == 0) return const_node(a, JT_T);
  const jt_Node **f = analyze_forms(a, args, n, tail);
  const jt_Node *acc = f[n - 1];
  for (int i = n - 2; i >= 0; i--) acc = if_node(a, f[i], acc, const_node(a, JT_NIL));
  return (jt_Node *)acc;
}

static jt_Node *std_or(A *a, jt_V args, int n, bool tail) {
  if (n == 0) return const_node(a, JT_NIL);
  const jt_Node **f = analyze_forms(a, args, n, tail);
  return n == 1 ? (jt_Node *)f[0] : or_node(a, f, n);
}

/* (cond (test form...) ...): clauses analysed in order up to the first
** whose test is T and has forms (the expander ignores the rest), the
** chain built from the end: (test) is (or test rest), (t form...) is
** (progn form...), anything else (if test (progn form...) rest). */
static jt_Node *std_cond(A *a, jt_V clauses, int nclauses, bool tail) {
  int n = 0;
  jt_V l = clauses;
  for (; n < nclauses; l = jt_cdr(l), n++) {
    jt_V c = jt_car(l);
    if (!jt_iscons(c) || proper_len(a, c) < 0) return NULL;
    if (jt_car(c) == JT_T && jt_cdr(c) != JT_NIL) {
      n++;
      break;
    }
  }
  if (n == 0) return const_node(a, JT_NIL);
  const jt_Node **test = NEWN(a, const jt_Node *, n), **body = NEWN(a, const jt_Node *, n);
  l = clauses;
  for (int i = 0; i < n; i++, l = jt_cdr(l)) {
    if (!jt_iscons(l) || !jt_iscons(jt_car(l))) form_changed(a, clauses);
    jt_V c = jt_car(l);
    bool last_t = jt_car(c) == JT_T && jt_cdr(c) != JT_NIL;
    test[i] = last_t ? NULL : analyze(a, jt_car(c));
    body[i] = jt_cdr(c) == JT_NIL ? NULL : progn_of(a, jt_cdr(c), tail);
  }
  bool ends_t = test[n - 1] == NULL;
  const jt_Node *acc = ends_t ? body[n - 1] : const_node(a, JT_NIL);
  for (int i = ends_t ? n - 2 : n - 1; i >= 0; i--) {
    if (body[i]) {
      acc = if_node(a, test[i], body[i], acc);
    } else {
      const jt_Node **f = NEWN(a, const jt_Node *, 2);
      f[0] = test[i];
      f[1] = acc;
      acc = or_node(a, f, 2);
    }
  }
  return (jt_Node *)acc;
}

/* The nodes of a standard macro's well-formed use, or NULL to expand it. */
static jt_Node *standard_macro(A *a, jt_V form, jt_V head, bool tail) {
  jt_State *S = a->S;
  if (head != JT_SYM(S, AND) && head != JT_SYM(S, OR) && head != JT_SYM(S, WHEN) &&
      head != JT_SYM(S, UNLESS) && head != JT_SYM(S, COND))
    return NULL;
  jt_V args = jt_cdr(form);
  int n = proper_len(a, args);
  if (n < 0 || !expands_as_standard(a, head)) return NULL;
  if (head == JT_SYM(S, AND)) return std_and(a, args, n, tail);
  if (head == JT_SYM(S, OR)) return std_or(a, args, n, tail);
  if (head == JT_SYM(S, COND)) return std_cond(a, args, n, tail);
  if (n == 0) return NULL;
  const jt_Node *test = analyze(a, jt_car(args));
  const jt_Node *body = progn_of(a, jt_cdr(args), tail), *nil = const_node(a, JT_NIL);
  return head == JT_SYM(S, WHEN) ? if_node(a, test, body, nil) : if_node(a, test, nil, body);
}

static jt_Node *analyze_form(A *a, jt_V form, bool tail) {
  jt_State *S = a->S;
  if (S->nest > 2000) jt_limit_exceeded(S, JT_LIMIT_DEPTH);
  jt_check_cstack(S);   /* a form nested in itself through its cars */
  if (jt_issymbol(form)) return var_ref(a, form);
  if (!jt_iscons(form)) return const_node(a, form);
  jt_V head = jt_car(form);
  if (head == JT_SYM(S, DECLARE)) return const_node(a, JT_NIL);  /* misplaced: ignored */
  if (jt_issymbol(head)) {
    jt_Symbol *s = jt_symobj(S, head);
    if ((s->h.flags & JT_SYM_SPECFORM) && !lookup(a, head, FUNKINDS))
      return special_forms[s->h.aux].fn(a, form, jt_cdr(form), tail);
    jt_Node *std = standard_macro(a, form, head, tail);
    if (std) return std;
    bool expanded;
    jt_V e = expand_1(S, a, form, &expanded);
    if (expanded) {
      JT_PUSH(S, e);
      S->nest++;
      jt_Node *n = analyze_form(a, e, tail);
      S->nest--;
      JT_POP(S, 1);
      return n;
    }
  }
  return analyze_call(a, form, head, jt_cdr(form));
}

static jt_Node *analyze(A *a, jt_V form) {
  a->opaque++;
  jt_Node *n = analyze_form(a, form, false);
  a->opaque--;
  return n;
}

static jt_Node *analyze_tail(A *a, jt_V form) { return analyze_form(a, form, true); }

jt_V jt_analyze_toplevel(jt_State *S, jt_V form, const jt_Node **root, int *nstack) {
  A a;
  memset(&a, 0, sizeof a);
  a.S = S;
  a.code = JT_NIL;
  a.setf_keys = JT_NIL;
  JT_ROOT(S, form);
  JT_ROOT(S, a.code);
  a.code = (jt_V)jt_alloc(S, JT_TCODE, sizeof(jt_Code));
  Scope *top = scope_open(&a, SC_LAMBDA);
  jt_Node *n = analyze_form(&a, form, true);
  scope_close(&a, top);
  refs_patch(&a);
  specialise_refs(&a);
  *root = n;
  *nstack = top->nstack;
  JT_UNROOT(S, 2);
  return a.code;
}
