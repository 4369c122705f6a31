/*
** eval.c — the evaluator: node functions, function application and
** parameter binding, top-level evaluation.
**
** Conventions every node function keeps:
**  - it returns the primary value and sets S->nvals; when nvals > 1 the
**    values are in S->mv[0..nvals) (mv[0] equal to the primary);
**  - it leaves S->sp and S->fp as it found them;
**  - `env` (the innermost heap frame or NIL) is rooted by whoever made it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_analyze.h"
#include "jt_clos.h"
#include "jt_world.h"

#define EV(node, e) ((node)->ev(S, (node), (e)))

/* ----------------------------------------------------------- variables */

static inline jt_V frame_up(jt_V env, int depth) {
  while (depth-- > 0) env = jt_frame_(env)->parent;
  return env;
}

static inline jt_V load_loc(jt_State *S, jt_VarLoc loc, jt_V env) {
  if (loc.depth < 0) return S->fp[loc.index];
  return jt_frame_(frame_up(env, loc.depth))->slots[loc.index];
}

static inline void store_loc(jt_State *S, jt_VarLoc loc, jt_V env, jt_V v) {
  if (loc.depth < 0) {
    S->fp[loc.index] = v;
  } else {
    jt_V f = frame_up(env, loc.depth);
    JT_SET_GC(S, f, jt_frame_(f)->slots[loc.index], v);  /* a closure's frame may be old */
  }
}

static jt_V new_frame(jt_State *S, int n, jt_V parent) {
  JT_PUSH(S, parent);
  jt_Frame *f = (jt_Frame *)jt_alloc(S, JT_TFRAME, sizeof(jt_Frame) + (size_t)n * sizeof(jt_V));
  JT_POP(S, 1);
  f->h.aux = (uint32_t)n;
  f->parent = parent;
  for (int i = 0; i < n; i++) f->slots[i] = JT_NIL;
  return (jt_V)f;
}

static inline void reserve(jt_State *S, int n) {
  if (S->sp + n >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < n; i++) S->sp[i] = JT_NIL;
  S->sp += n;
}

jt_V jt_ev_const(jt_State *S, const jt_Node *n, jt_V env) {
  S->nvals = 1;
  return n->u.value;
}

jt_V jt_ev_lref_stack(jt_State *S, const jt_Node *n, jt_V env) {
  S->nvals = 1;
  return S->fp[n->u.var.index];
}

jt_V jt_ev_lref0(jt_State *S, const jt_Node *n, jt_V env) {
  S->nvals = 1;
  return jt_frame_(env)->slots[n->u.var.index];
}

jt_V jt_ev_lref(jt_State *S, const jt_Node *n, jt_V env) {
  S->nvals = 1;
  return load_loc(S, n->u.var, env);
}

jt_V jt_ev_lset_stack(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V v = EV(n->u.set.val, env);
  S->fp[n->u.set.var.index] = v;
  S->nvals = 1;
  return v;
}

jt_V jt_ev_lset(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V v = EV(n->u.set.val, env);
  store_loc(S, n->u.set.var, env, v);
  S->nvals = 1;
  return v;
}

jt_V jt_ev_gref(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V v = jt_sym_(n->u.gset.sym)->value;
  if (v == JT_UNBOUND) v = jt_unbound_variable_value(S, n->u.gset.sym);
  JT_READ(S, JITI_READ_VARIABLE, n->u.gset.sym, JT_NIL, v);
  S->nvals = 1;
  return v;
}

jt_V jt_ev_gset(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V v = EV(n->u.gset.val, env);
  JT_PUSH(S, v);
  jt_set_symbol_value(S, n->u.gset.sym, v);
  JT_POP(S, 1);
  S->nvals = 1;
  return v;
}

/* ------------------------------------------------------------ control */

jt_V jt_ev_if(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V t = EV(n->u.if_.test, env);
  const jt_Node *b = t != JT_NIL ? n->u.if_.then : n->u.if_.els;
  return EV(b, env);
}

/* (or a b ... z), analysed without its expansion (analyze.c,
** standard_macro): the first true primary value of the forms before the
** last, else every value of the last.  Only the last can be a local
** transfer's path. */
jt_V jt_ev_or(jt_State *S, const jt_Node *n, jt_V env) {
  int last = n->u.progn.n - 1;
  const jt_Node **forms = n->u.progn.body;
  for (int i = 0; i < last; i++) {
    jt_V v = EV(forms[i], env);
    if (v != JT_NIL) {
      S->nvals = 1;
      return v;
    }
  }
  return EV(forms[last], env);
}

jt_V jt_ev_progn(jt_State *S, const jt_Node *n, jt_V env) {
  int last = n->u.progn.n - 1;
  const jt_Node **body = n->u.progn.body;
  for (int i = 0; i < last; i++)
    if (EV(body[i], env) == JT_XFER) return JT_XFER;
  return EV(body[last], env);
}

jt_V jt_ev_let(jt_State *S, const jt_Node *n, jt_V env) {
  int k = n->u.let.n;
  size_t nbind = S->nbind;
  jt_V *base = S->sp;
  jt_V frame = env;
  if (n->u.let.sequential) {
    if (n->u.let.heap) {
      frame = new_frame(S, n->u.let.nheap, env);
      jt_frame_(frame)->h.flags = n->u.let.scope_id;  /* a pause finds its variables (frames.c) */
      JT_PUSH(S, frame);
    }
    for (int i = 0; i < k; i++) {
      jt_V v = EV(n->u.let.inits[i], frame);
      if (n->u.let.specials[i]) jt_bind(S, n->u.let.specials[i], v);
      else if (n->u.let.heap) jt_frame_(frame)->slots[n->u.let.slots[i]] = v;
      else S->fp[n->u.let.slots[i]] = v;
    }
  } else {
    for (int i = 0; i < k; i++) {
      jt_V v = EV(n->u.let.inits[i], env);
      JT_PUSH(S, v);
    }
    if (n->u.let.heap) {
      frame = new_frame(S, n->u.let.nheap, env);
      jt_frame_(frame)->h.flags = n->u.let.scope_id;
      JT_PUSH(S, frame);
    }
    for (int i = 0; i < k; i++) {
      jt_V v = base[i];
      if (n->u.let.specials[i]) jt_bind(S, n->u.let.specials[i], v);
      else if (n->u.let.heap) jt_frame_(frame)->slots[n->u.let.slots[i]] = v;
      else S->fp[n->u.let.slots[i]] = v;
    }
  }
  jt_V r = EV(n->u.let.body, frame);
  if (S->nbind != nbind) jt_unbind_to(S, nbind);
  S->sp = base;
  return r;
}

jt_V jt_ev_lambda(jt_State *S, const jt_Node *n, jt_V env) {
  const jt_Lambda *L = n->u.lambda.lam;
  jt_Closure *c = (jt_Closure *)jt_alloc(S, JT_TCLOSURE, sizeof(jt_Closure));
  c->lam = L;
  c->code = L->code;
  c->env = env;
  c->name = L->name;
  S->nvals = 1;
  return (jt_V)c;
}

/* ---------------------------------------------------- blocks and tags */

#define JMP_TAG(j) ((jt_V)(uintptr_t)(j) | 1)
#define JMP_OF(v)  ((jt_Jmp *)((v) & ~(jt_V)1))

jt_V jt_ev_block(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V r = EV(n->u.block.body, env);
  if (r == JT_XFER && S->xfer_node == n) r = S->xfer_val;
  return r;
}

jt_V jt_ev_block_nl(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V *volatile base = S->sp;
  volatile jt_V frame = env;
  if (n->u.block.heap) {
    frame = new_frame(S, 1, env);
    JT_PUSH(S, frame);
  }
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_BLOCK, JT_NIL);
  store_loc(S, n->u.block.slot, frame, JMP_TAG(&j));
  jt_V r;
  if (_setjmp(j.jb) == 0) {
    r = EV(n->u.block.body, frame);
    if (r == JT_XFER && S->xfer_node == n) r = S->xfer_val;
    jt_jmp_pop(S, &j);
  } else {
    r = S->pending;
  }
  store_loc(S, n->u.block.slot, frame, JT_NIL);
  S->sp = base;
  return r;
}

jt_V jt_ev_return_local(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V v = EV(n->u.xfer.val, env);
  S->xfer_val = v;
  S->xfer_node = n->u.xfer.target;
  return JT_XFER;
}

static JT_NORETURN void dead_exit(jt_State *S, const char *what) {
  jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "%s: its extent has already been exited", what);
}

jt_V jt_ev_return_nl(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V v = EV(n->u.xfer.val, env);
  jt_V slot = load_loc(S, n->u.xfer.slot, env);
  if (slot == JT_NIL) {
    S->nvals = 1;
    char *name = jt_print_cstr(S, n->u.xfer.target->u.block.name, true, 100);
    snprintf(S->msgbuf, sizeof S->msgbuf, "return-from %s", name);
    free(name);
    dead_exit(S, S->msgbuf);
  }
  S->pending = v;
  jt_unwind_to(S, JMP_OF(slot), 0);
}

static jt_V run_tagbody(jt_State *S, const jt_Node *n, jt_V env, int i) {
  int ns = n->u.tagbody.n;
  const jt_Node **stmts = n->u.tagbody.stmts;
  while (i < ns) {
    jt_V r = EV(stmts[i], env);
    if (r == JT_XFER) {
      if (S->xfer_node != n) return r;
      i = n->u.tagbody.tagpos[S->xfer_index];
      jt_tick(S);
      continue;
    }
    i++;
  }
  S->nvals = 1;
  return JT_NIL;
}

jt_V jt_ev_tagbody(jt_State *S, const jt_Node *n, jt_V env) {
  if (!n->u.tagbody.nonlocal) return run_tagbody(S, n, env, 0);
  jt_V *volatile base = S->sp;
  volatile jt_V frame = env;
  if (n->u.tagbody.heap) {
    frame = new_frame(S, 1, env);
    JT_PUSH(S, frame);
  }
  jt_Jmp j;
  int start = 0;
  jt_jmp_push(S, &j, JT_JMP_TAGBODY, JT_NIL);
  store_loc(S, n->u.tagbody.slot, frame, JMP_TAG(&j));
  if (_setjmp(j.jb) != 0) {
    start = n->u.tagbody.tagpos[j.code];
    jt_jmp_push(S, &j, JT_JMP_TAGBODY, JT_NIL);  /* re-arm for the next go */
    jt_tick(S);
  }
  jt_V r = run_tagbody(S, n, frame, start);
  jt_jmp_pop(S, &j);
  store_loc(S, n->u.tagbody.slot, frame, JT_NIL);
  S->sp = base;
  return r;
}

jt_V jt_ev_go_local(jt_State *S, const jt_Node *n, jt_V env) {
  S->xfer_node = n->u.xfer.target;
  S->xfer_index = n->u.xfer.index;
  return JT_XFER;
}

jt_V jt_ev_go_nl(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V slot = load_loc(S, n->u.xfer.slot, env);
  if (slot == JT_NIL) dead_exit(S, "go");
  jt_unwind_to(S, JMP_OF(slot), n->u.xfer.index);
}

jt_V jt_ev_catch(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V tag = EV(n->u.two.a, env);
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_CATCH, tag);
  jt_V r;
  if (_setjmp(j.jb) == 0) {
    r = EV(n->u.two.b, env);
    jt_jmp_pop(S, &j);
  } else {
    r = S->pending;
  }
  return r;
}

jt_V jt_ev_throw(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V tag = EV(n->u.two.a, env);
  JT_PUSH(S, tag);
  jt_V v = EV(n->u.two.b, env);
  JT_POP(S, 1);
  for (jt_Jmp *j = S->jmp; j; j = j->prev)
    if (j->kind == JT_JMP_CATCH && j->tag == tag) {
      S->pending = v;
      jt_unwind_to(S, j, 0);
    }
  JT_PUSH(S, tag);
  char *t = jt_print_cstr(S, tag, true, 100);
  snprintf(S->msgbuf, sizeof S->msgbuf, "attempt to throw to a tag that does not exist: %s", t);
  free(t);
  jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "%s", S->msgbuf);
}

/* Save the current values on the value stack; returns the count pushed. */
static int save_values(jt_State *S, jt_V primary) {
  int n = S->nvals;
  if (n == 1) { JT_PUSH(S, primary); }
  else for (int i = 0; i < n; i++) JT_PUSH(S, S->mv[i]);
  JT_PUSH(S, jt_mkfix(n));
  return n + 1;
}

static jt_V restore_values(jt_State *S) {
  int n = (int)jt_fixval(S->sp[-1]);
  jt_V *vals = S->sp - 1 - n;
  S->nvals = n;
  for (int i = 0; i < n; i++) S->mv[i] = vals[i];
  jt_V primary = n ? vals[0] : JT_NIL;
  S->sp = vals;
  return primary;
}

jt_V jt_ev_unwind_protect(jt_State *S, const jt_Node *n, jt_V env) {
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_UNWIND, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jt_V r = EV(n->u.two.a, env);
    jt_jmp_pop(S, &j);
    save_values(S, r);
    EV(n->u.two.b, env);
    return restore_values(S);
  }
  /* An exit is passing through: run the cleanup, then continue it. */
  jt_Jmp *target = S->unwind_target;
  int code = S->unwind_code;
  JT_PUSH(S, S->pending);
  save_values(S, S->pending);
  EV(n->u.two.b, env);
  restore_values(S);
  S->pending = S->sp[-1];
  JT_POP(S, 1);
  if (!jt_jmp_active(S, target)) dead_exit(S, "non-local exit");
  jt_unwind_to(S, target, code);
}

/* -------------------------------------------------------------- functions */

jt_V jt_ev_fglobal(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V fn = jt_symobj(S, n->u.gset.sym)->function;
  if (fn == JT_UNBOUND || jt_is_macro(fn)) fn = jt_undefined_function_value(S, n->u.gset.sym);
  S->nvals = 1;
  return fn;
}

jt_V jt_ev_fsetf(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V fn = jt_symobj(S, n->u.gset.sym)->setf_fn;
  if (fn == JT_UNBOUND) {
    jt_V name = jt_list(S, 2, JT_SYM(S, SETF), n->u.gset.sym);
    fn = jt_undefined_function_value(S, name);
  }
  S->nvals = 1;
  return fn;
}

static JT_NORETURN void not_a_function(jt_State *S, jt_V fn) {
  jt_type_error(S, fn, JT_SYM(S, FUNCTION));
}

/* A call node tells its activation's call record where the call was made:
** the heap frames of the activation's LETs hang from it (frames.c). */
#define NOTE_ENV(S, env) do { if ((S)->ci) (S)->ci->env_now = (env); } while (0)

/* Call `fn` with argv[0..argc) which lie on the value stack. */
static inline jt_V call_now(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  if (jt_is(fn, JT_TCLOSURE)) return jt_apply_closure(S, fn, argc, argv);
  if (!jt_is(fn, JT_TPRIM)) {
    if (jt_is(fn, JT_TGENERIC)) return jt_gf_call(S, fn, argc, argv);
    not_a_function(S, fn);
  }
  jt_Prim *p = jt_prim_(fn);
  if (argc < p->minargs || (p->maxargs >= 0 && argc > p->maxargs)) jt_arg_count_error(S, fn, argc);
  jt_CallInfo ci = {S->ci, fn, argc, argv, NULL, JT_NIL, JT_NIL};
  S->ci = &ci;
  S->nvals = 1;
  jt_V r = p->fn(S, argc, argv);
  S->ci = ci.prev;
  /* a primitive that called a function (mapcar's) and returns one value
  ** of its own: the callee's values are not its values */
  if (__builtin_expect(S->nvals > 1, 0) && S->mv[0] != r) S->nvals = 1;
  return r;
}

jt_V jt_call_now(jt_State *S, jt_V fn, int argc, jt_V *argv) { return call_now(S, fn, argc, argv); }

/* With frames caught, a call is a point a pause may return to (frames.c). */
static inline jt_V call_untraced(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  if (__builtin_expect(S->frame_catch, 0)) return jt_frame_call(S, fn, argc, argv);
  return call_now(S, fn, argc, argv);
}

jt_V jt_call_untraced(jt_State *S, jt_V fn, int argc, jt_V *argv) { return call_untraced(S, fn, argc, argv); }

/* A traced function's call is reported (trace.c); with frames caught, the
** call is a frame.  One flag keeps both tests off the common path. */
static __attribute__((noinline)) jt_V call_hooked(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  if (S->traced != JT_NIL) {
    jt_V name = jt_trace_name(S, fn);
    if (name != JT_NOVALUE) return jt_trace_call(S, name, fn, argc, argv);
  }
  return call_untraced(S, fn, argc, argv);
}

static inline jt_V call(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  if (__builtin_expect(S->call_hooked, 0)) return call_hooked(S, fn, argc, argv);
  return call_now(S, fn, argc, argv);
}

jt_V jt_ev_callg(jt_State *S, const jt_Node *n, jt_V env) {
  int argc = n->u.callg.argc;
  jt_V *base = S->sp;
  if (base + argc >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < argc; i++) {
    jt_V v = EV(n->u.callg.args[i], env);
    *S->sp++ = v;
  }
  NOTE_ENV(S, env);
  jt_V fn = jt_sym_(n->u.callg.sym)->function;
  if (!jt_isptr(fn) || jt_is_macro(fn)) fn = jt_undefined_function_callee(S, n->u.callg.sym);
  jt_V r = call(S, fn, argc, base);
  S->sp = base;
  return r;
}

/* jt_ev_callg for the call a host watches (jt_CallWatch): the same steps,
** the watch told between the arguments and the function's lookup (it runs
** no Lisp: nothing else changes). */
static jt_V ev_callg_watched(jt_State *S, const jt_Node *n, jt_V env, const jt_CallWatch *w) {
  int argc = n->u.callg.argc;
  jt_V *base = S->sp;
  if (base + argc >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < argc; i++) {
    jt_V v = EV(n->u.callg.args[i], env);
    *S->sp++ = v;
  }
  w->seen(S, w->ud, n->u.callg.sym, argc, base);
  NOTE_ENV(S, env);
  jt_V fn = jt_sym_(n->u.callg.sym)->function;
  if (!jt_isptr(fn) || jt_is_macro(fn)) fn = jt_undefined_function_callee(S, n->u.callg.sym);
  jt_V r = call(S, fn, argc, base);
  S->sp = base;
  return r;
}

/* A call whose operator is NIL or T: those are immediates with no function
** cell and can never be defined, so the call is an undefined function once
** its arguments have been evaluated (as for any other undefined one). */
jt_V jt_ev_callundef(jt_State *S, const jt_Node *n, jt_V env) {
  for (int i = 0; i < n->u.callg.argc; i++) EV(n->u.callg.args[i], env);
  NOTE_ENV(S, env);
  jt_undefined_function(S, n->u.callg.sym);
}

jt_V jt_ev_calll(jt_State *S, const jt_Node *n, jt_V env) {
  int argc = n->u.calll.argc;
  jt_V *base = S->sp;
  if (base + argc >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < argc; i++) {
    jt_V v = EV(n->u.calll.args[i], env);
    *S->sp++ = v;
  }
  jt_V fn = load_loc(S, n->u.calll.var, env);
  NOTE_ENV(S, env);
  jt_V r = call(S, fn, argc, base);
  S->sp = base;
  return r;
}

jt_V jt_ev_callx(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V fn = EV(n->u.callx.fn, env);
  JT_PUSH(S, fn);
  int argc = n->u.callx.argc;
  jt_V *base = S->sp;
  if (base + argc >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < argc; i++) {
    jt_V v = EV(n->u.callx.args[i], env);
    *S->sp++ = v;
  }
  NOTE_ENV(S, env);
  jt_V r = call(S, base[-1], argc, base);
  S->sp = base - 1;
  return r;
}

jt_V jt_apply(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  jt_V *base = S->sp;
  /* The callee may use the arguments as its stack frame: put them on top. */
  if (argv != base - argc || argv < S->stack) {
    if (base + argc + 1 >= S->stack_end) jt_stack_overflow(S);
    JT_PUSH(S, fn);
    for (int i = 0; i < argc; i++) *S->sp++ = argv[i];
    argv = base + 1;
    fn = base[0];
  }
  if (jt_issymbol(fn)) fn = jt_callee(S, fn);
  JT_WORK(S);  /* a closure ticks on its own; a primitive called from C would not */
  jt_V r = call(S, fn, argc, argv);
  S->sp = base;
  return r;
}

jt_V jt_funcall(jt_State *S, jt_V fn, int n, ...) {
  jt_V *base = S->sp;
  if (base + n + 1 >= S->stack_end) jt_stack_overflow(S);
  JT_PUSH(S, fn);
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) *S->sp++ = va_arg(ap, jt_V);
  va_end(ap);
  jt_V r = jt_apply(S, base[0], n, base + 1);
  S->sp = base;
  return r;
}

/* ------------------------------------------------------- parameter binding */

static void bind_one(jt_State *S, jt_V name, int slot, bool special, jt_V frame, jt_V v) {
  if (special) jt_bind(S, name, v);
  else if (frame != JT_NIL) jt_frame_(frame)->slots[slot] = v;
  else S->fp[slot] = v;
}

static void bind_list(jt_State *S, const jt_Lambda *L, jt_V list, jt_V frame, jt_V env, jt_V fn);

static void bind_param(jt_State *S, const jt_Param *p, jt_V frame, jt_V env, jt_V v, jt_V fn) {
  if (p->sub) bind_list(S, p->sub, v, frame, env, fn);
  else bind_one(S, p->name, p->slot, p->special, frame, v);
}

static JT_NORETURN void bad_args(jt_State *S, jt_V fn, const char *fmt, jt_V detail) {
  char *name = jt_print_cstr(S, fn, true, 120);
  char *d = detail != JT_NOVALUE ? jt_print_cstr(S, detail, true, 120) : NULL;
  snprintf(S->msgbuf, sizeof S->msgbuf, fmt, name, d ? d : "");
  free(name);
  free(d);
  jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
}

/* Bind from argv[0..argc) plus a dotted `tail` (destructuring only). */
static void bind_args(jt_State *S, const jt_Lambda *L, int argc, jt_V *argv, jt_V tail,
                      jt_V frame, jt_V env, jt_V fn) {
  jt_V evenv = frame != JT_NIL ? frame : env;
  int i = 0;
  if (argc < L->nreq) {
    if (tail != JT_NIL) bad_args(S, fn, "%s: malformed argument list (dotted)%s", JT_NOVALUE);
    bad_args(S, fn, "%s: too few arguments%s", JT_NOVALUE);
  }
  for (int k = 0; k < L->nreq; k++) bind_param(S, &L->req[k], frame, evenv, argv[i++], fn);
  for (int k = 0; k < L->nopt; k++) {
    const jt_Param *p = &L->opt[k];
    jt_V v, sup;
    if (i < argc) { v = argv[i++]; sup = JT_T; }
    else { v = p->init ? EV(p->init, evenv) : JT_NIL; sup = JT_NIL; }
    bind_param(S, p, frame, evenv, v, fn);
    if (p->svar_slot >= 0) bind_one(S, p->svar_name, p->svar_slot, p->svar_special, frame, sup);
  }
  if (L->has_rest) {
    jt_V rest = tail;
    JT_PUSH(S, rest);
    for (int k = argc - 1; k >= i; k--) S->sp[-1] = jt_cons(S, argv[k], S->sp[-1]);
    rest = S->sp[-1];
    bind_param(S, &L->rest, frame, evenv, rest, fn);
    JT_POP(S, 1);
  } else if (!L->has_key && (i < argc || tail != JT_NIL)) {
    bad_args(S, fn, "%s: too many arguments%s", JT_NOVALUE);
  }
  if (L->has_key) {
    if ((argc - i) % 2 != 0) bad_args(S, fn, "%s: odd number of keyword arguments%s", JT_NOVALUE);
    bool allow = L->allow_other_keys;
    for (int k = i; k < argc; k += 2)
      if (argv[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS)) { allow = allow || argv[k + 1] != JT_NIL; break; }
    if (!allow)
      for (int k = i; k < argc; k += 2) {
        bool known = argv[k] == JT_SYM(S, K_ALLOW_OTHER_KEYS);
        for (int q = 0; q < L->nkeys && !known; q++) known = L->keys[q].key == argv[k];
        if (!known) bad_args(S, fn, "%s: unknown keyword argument %s", argv[k]);
      }
    for (int q = 0; q < L->nkeys; q++) {
      const jt_Param *p = &L->keys[q];
      jt_V v = JT_NOVALUE;
      for (int k = i; k < argc; k += 2)
        if (argv[k] == p->key) { v = argv[k + 1]; break; }
      jt_V sup = JT_T;
      if (v == JT_NOVALUE) { v = p->init ? EV(p->init, evenv) : JT_NIL; sup = JT_NIL; }
      bind_param(S, p, frame, evenv, v, fn);
      if (p->svar_slot >= 0) bind_one(S, p->svar_name, p->svar_slot, p->svar_special, frame, sup);
    }
  }
  for (int k = 0; k < L->naux; k++) {
    const jt_Param *p = &L->aux[k];
    jt_V v = p->init ? EV(p->init, evenv) : JT_NIL;
    bind_param(S, p, frame, evenv, v, fn);
  }
}

static void bind_list(jt_State *S, const jt_Lambda *L, jt_V list, jt_V frame, jt_V env, jt_V fn) {
  jt_V *base = S->sp;
  JT_PUSH(S, list);
  if (L->has_whole) bind_param(S, &L->whole, frame, env, list, fn);
  jt_V l = list;
  int n = 0;
  jt_Walk w = jt_walk(list);
  while (jt_iscons(l)) {
    if (S->sp >= S->stack_end) jt_stack_overflow(S);
    *S->sp++ = jt_car(l);
    l = jt_walk_next(S, &w, l);
    n++;
  }
  if (l != JT_NIL && !L->has_rest)
    bad_args(S, fn, "%s: cannot destructure the dotted list %s", list);
  bind_args(S, L, n, base + 1, l, frame, env, fn);
  S->sp = base;
}

/* Past the depth or C stack limit: an error, unless the limit has tripped in
** this call already and the handlers' grace (an eighth more stack, 64 more
** calls) still holds.  Kept off the call path: grace only widens the limits,
** so a call within them never comes here. */
static __attribute__((noinline, cold)) void depth_check_grace(jt_State *S, size_t used) {
  bool grace = (S->limit_tripped >> JT_LIMIT_DEPTH) & 1;
  if (used > S->cstack_limit + (grace ? S->cstack_limit / 8 : 0) ||
      (S->limits.depth && (uint32_t)S->depth >= S->limits.depth + (grace ? 64u : 0u)))
    jt_limit_exceeded(S, JT_LIMIT_DEPTH);
}

jt_V jt_apply_closure(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  const jt_Lambda *L = jt_clo_(fn)->lam;
  char probe;
  size_t used = (size_t)(S->cstack_base - &probe);
  if (__builtin_expect(used > S->cstack_limit || (S->limits.depth && (uint32_t)S->depth >= S->limits.depth), 0))
    depth_check_grace(S, used);
  jt_tick(S);
  S->depth++;
  jt_CallInfo ci = {S->ci, fn, argc, argv, NULL, JT_NIL, JT_NIL};
  S->ci = &ci;
  if (__builtin_expect(L == NULL, 0)) L = jt_closure_lambda(S, fn);  /* first call */
  jt_V *saved_fp = S->fp, *saved_sp = S->sp;
  size_t nbind = S->nbind;
  jt_V env = jt_clo_(fn)->env;
  if (L->simple) {
    if (argc != L->nreq) jt_arg_count_error(S, fn, argc);
    S->fp = argv;
    if (L->nstack > argc) {
      S->sp = argv + argc;
      reserve(S, L->nstack - argc);
    }
  } else {
    S->fp = S->sp;
    reserve(S, L->nstack);
    jt_V frame = JT_NIL;
    if (L->heap) {
      frame = new_frame(S, L->nheap, env);
      JT_PUSH(S, frame);
      env = frame;
    }
    ci.env = frame;
    bind_args(S, L, argc, argv, JT_NIL, frame, env, fn);
  }
  ci.fp = S->fp;  /* where a pause finds its locals (frames.c) */
  jt_V r = EV(L->body, env);
  if (S->nbind != nbind) jt_unbind_to(S, nbind);
  S->fp = saved_fp;
  S->sp = saved_sp;
  S->ci = ci.prev;
  S->depth--;
  return r;
}

/* ------------------------------------------------------ multiple values */

jt_V jt_values(jt_State *S, int n, const jt_V *vals) {
  if (n > JT_MV_LIMIT) jt_error(S, "too many values (%d; the limit is %d)", n, JT_MV_LIMIT);
  for (int i = 0; i < n; i++) S->mv[i] = vals[i];
  S->nvals = n;
  return n ? vals[0] : JT_NIL;
}

jt_V jt_values2(jt_State *S, jt_V a, jt_V b) {
  S->mv[0] = a;
  S->mv[1] = b;
  S->nvals = 2;
  return a;
}

/* Push the values of the last form (primary `r`); returns how many. */
static int push_values(jt_State *S, jt_V r) {
  int n = S->nvals;
  if (S->sp + n >= S->stack_end) jt_stack_overflow(S);
  if (n == 1) *S->sp++ = r;
  else for (int i = 0; i < n; i++) *S->sp++ = S->mv[i];
  return n;
}

jt_V jt_ev_mvcall(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V *base = S->sp;
  jt_V fn = EV(n->u.mvcall.fn, env);
  JT_PUSH(S, fn);
  int argc = 0;
  for (int i = 0; i < n->u.mvcall.n; i++) {
    jt_V r = EV(n->u.mvcall.forms[i], env);
    argc += push_values(S, r);
  }
  NOTE_ENV(S, env);
  jt_V r = jt_apply(S, base[0], argc, base + 1);
  S->sp = base;
  return r;
}

jt_V jt_ev_mvprog1(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V r = EV(n->u.two.a, env);
  save_values(S, r);
  EV(n->u.two.b, env);
  return restore_values(S);
}

static jt_V run_bind(jt_State *S, const jt_Node *n, jt_V env, int argc, jt_V *argv, jt_V list) {
  const jt_Lambda *L = n->u.bind.lam;
  size_t nbind = S->nbind;
  jt_V frame = JT_NIL, benv = env;
  if (L->heap) {
    frame = new_frame(S, L->nheap, env);
    JT_PUSH(S, frame);
    benv = frame;
  }
  if (argv) bind_args(S, L, argc, argv, JT_NIL, frame, benv, JT_SYM(S, DESTRUCTURING_BIND));
  else bind_list(S, L, list, frame, benv, JT_SYM(S, DESTRUCTURING_BIND));
  jt_V r = EV(n->u.bind.body, benv);
  if (S->nbind != nbind) jt_unbind_to(S, nbind);
  return r;
}

jt_V jt_ev_mvbind(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V *base = S->sp;
  jt_V r = EV(n->u.bind.form, env);
  int argc = push_values(S, r);
  /* more values than variables are ignored */
  const jt_Lambda *L = n->u.bind.lam;
  if (argc > L->nopt) argc = L->nopt;
  r = run_bind(S, n, env, argc, base, JT_NIL);
  S->sp = base;
  return r;
}

jt_V jt_ev_dbind(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V *base = S->sp;
  jt_V list = EV(n->u.bind.form, env);
  JT_PUSH(S, list);
  jt_V r = run_bind(S, n, env, 0, NULL, list);
  S->sp = base;
  return r;
}

jt_V jt_ev_progv(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V *base = S->sp;
  jt_V syms = EV(n->u.mvcall.forms[0], env);
  JT_PUSH(S, syms);
  jt_V vals = EV(n->u.mvcall.forms[1], env);
  JT_PUSH(S, vals);
  size_t nbind = S->nbind;
  jt_Walk w = jt_walk(syms);
  for (jt_V l = syms; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V sym = jt_check_symbol(S, jt_car(l));
    if (jt_symobj(S, sym)->h.flags & JT_SYM_CONSTANT) jt_error(S, "progv: cannot bind the constant %s", jt_symname(S, sym));
    if (jt_is_internal(sym)) jt_error(S, "progv: cannot bind the kernel-internal symbol %s", jt_symname(S, sym));
    if (jt_iscons(vals)) { jt_bind(S, sym, jt_car(vals)); vals = jt_cdr(vals); }
    else jt_bind(S, sym, JT_UNBOUND);
  }
  jt_V r = EV(n->u.mvcall.forms[2], env);
  jt_unbind_to(S, nbind);
  S->sp = base;
  return r;
}

/* Install fn as sym's definition of this kind (JT_DEF_FUNCTION, _MACRO or
** _SETF_FUNCTION) made by form, and tell the world. */
static void install_definition(jt_State *S, jt_V sym, jt_DefKind kind, jt_V form, jt_V fn) {
  jt_Symbol *s = jt_symobj(S, sym);
  jt_clos_forget_generic(S, kind == JT_DEF_SETF_FUNCTION ? s->setf_fn : s->function);
  if (kind == JT_DEF_MACRO) jt_o(fn)->flags |= JT_CLO_MACRO;
  if (kind == JT_DEF_SETF_FUNCTION) JT_SET(S, s, s->setf_fn, fn);
  else JT_SET(S, s, s->function, fn);
  if (S->world_define) S->world_define(S, sym, kind, form, fn);
}

jt_V jt_ev_defun(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V sym = n->u.def.sym;
  /* the library gives built-in accessors their setf functions */
  jt_DefKind kind = n->u.def.kind;
  if (!(S->kernel_mode && kind == JT_DEF_SETF_FUNCTION))
    jt_check_definable(S, jt_symobj(S, sym), kind == JT_DEF_MACRO           ? "a macro"
                                             : kind == JT_DEF_SETF_FUNCTION ? "a setf function"
                                                                            : "a function");
  install_definition(S, sym, kind, n->u.def.form, EV(n->u.def.fn, env));
  S->nvals = 1;
  /* the function name: (setf sym) for a setf function */
  return kind == JT_DEF_SETF_FUNCTION ? jt_list(S, 2, JT_SYM(S, SETF), sym) : sym;
}

/* ------------------------------------------------------ lazy definitions
** Importing a world installs its functions and macros without analysing
** them (jt_define_lazily); most of a big world's functions are never called
** in a session, and analysing them all dominated recovery.  See jt_eval.h
** for the contract. */

bool jt_define_lazily(jt_State *S, jt_V form) {
  if (!jt_iscons(form)) return false;
  jt_V head = jt_car(form), args = jt_cdr(form);
  int kind;
  if (head == JT_SYM(S, DEFUN)) kind = JT_DEF_FUNCTION;
  else if (head == JT_SYM(S, DEFMACRO)) kind = JT_DEF_MACRO;
  else return false;
  /* the checks of analyze_def and jt_ev_defun: anything they would refuse
  ** is left to them, so that the error is the same */
  jt_V sym = JT_NIL;
  kind = jt_def_name(S, args, kind, &sym);
  if (kind < 0 || !jt_definable(jt_symobj(S, sym))) return false;
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  jt_V fn = jt_make_lazy_closure(S, form);
  if (S->kernel_mode) jt_o(fn)->flags |= JT_CLO_KERNEL;
  JT_PUSH(S, fn);
  install_definition(S, sym, (jt_DefKind)kind, base[0], fn);
  S->sp = base;
  return true;
}

jt_V jt_make_lazy_closure(jt_State *S, jt_V form) {
  JT_PUSH(S, form);
  jt_Closure *c = (jt_Closure *)jt_alloc(S, JT_TCLOSURE, sizeof(jt_Closure));
  c->lam = NULL;
  c->code = S->sp[-1];
  c->env = JT_NIL;
  c->name = jt_car(jt_cdr(S->sp[-1]));
  JT_POP(S, 1);
  return (jt_V)c;
}

const jt_Lambda *jt_closure_lambda(jt_State *S, jt_V fn) {
  jt_Closure *c = jt_clo_(fn);
  if (c->lam) return c->lam;
  if (c->h.flags & JT_CLO_ANALYSING) {
    char buf[256], *name = jt_print_cstr(S, c->name, true, sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", name);
    free(name);
    jt_error(S, "%s was called while its own definition was being analysed (by a macro "
             "it uses)", buf);
  }
  jt_V *base = S->sp;
  JT_PUSH(S, fn);
  /* A function of the world: a checkpoint keeps its lazy state.  One of
  ** the kernel's library is analysed as the library is, in kernel mode,
  ** and is no part of the world: its analysis is kept whatever a restore
  ** does, and costs the caller no fuel and no heap allowance, so that what
  ** a program is charged does not depend on which library functions the
  ** process happened to call before. */
  bool kernel = (c->h.flags & JT_CLO_KERNEL) != 0;
  volatile bool saved_mode = S->kernel_mode;
  volatile uint64_t saved_fuel = S->fuel_left;
  volatile size_t saved_heap = S->limits.heap;
  if (kernel) {
    S->kernel_mode = true;
    S->fuel_left = UINT64_MAX;
    S->limits.heap = 0;
  } else {
    JT_TOUCH(S, fn);
  }
  c->h.flags |= JT_CLO_ANALYSING;
  /* the flag and the caller's mode and limits must not outlive an error in
  ** the analysis (a macro may signal) */
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_UNWIND, JT_NIL);
  if (_setjmp(j.jb) != 0) {
    jt_clo_(fn)->h.flags &= (uint16_t)~JT_CLO_ANALYSING;
    if (kernel) {
      S->kernel_mode = saved_mode;
      S->fuel_left = saved_fuel;
      S->limits.heap = saved_heap;
    }
    jt_Jmp *target = S->unwind_target;
    if (!jt_jmp_active(S, target)) dead_exit(S, "non-local exit");
    jt_unwind_to(S, target, S->unwind_code);
  }
  const jt_Node *root;
  int nstack;
  jt_V code = jt_analyze_toplevel(S, c->code, &root, &nstack);
  jt_jmp_pop(S, &j);
  if (kernel) {
    S->kernel_mode = saved_mode;
    S->fuel_left = saved_fuel;
    S->limits.heap = saved_heap;
  }
  /* root is the definition's node; its function is a lambda */
  if (root->ev != jt_ev_defun || root->u.def.fn->ev != jt_ev_lambda) {
    c->h.flags &= (uint16_t)~JT_CLO_ANALYSING;
    jt_error(S, "internal error: a lazy definition did not analyse into a definition");
  }
  c->lam = root->u.def.fn->u.lambda.lam;
  if (kernel) JT_SET_GC(S, c, c->code, code);   /* not world state (above) */
  else JT_SET(S, c, c->code, code);
  c->h.flags &= (uint16_t)~JT_CLO_ANALYSING;
  S->sp = base;
  return c->lam;
}

/* ---------------------------------------------------- inlined built-ins
** Calls to a few locked built-ins are analysed into these nodes: the fixnum
** cases run inline, everything else goes to the general routine. */

#define EV2(a, b) \
  jt_V a = EV(n->u.callg.args[0], env); \
  JT_PUSH(S, a); \
  jt_V b = EV(n->u.callg.args[1], env); \
  JT_POP(S, 1); \
  S->nvals = 1

jt_V jt_ev_add2(jt_State *S, const jt_Node *n, jt_V env) {
  EV2(a, b);
  intptr_t r;
  if (jt_isfix(a) && jt_isfix(b) && !__builtin_add_overflow(jt_fixval(a), jt_fixval(b), &r) && jt_fixfits(r))
    return jt_mkfix(r);
  return jt_num_add(S, a, b);
}

jt_V jt_ev_sub2(jt_State *S, const jt_Node *n, jt_V env) {
  EV2(a, b);
  intptr_t r;
  if (jt_isfix(a) && jt_isfix(b) && !__builtin_sub_overflow(jt_fixval(a), jt_fixval(b), &r) && jt_fixfits(r))
    return jt_mkfix(r);
  return jt_num_sub(S, a, b);
}

#define CMP2(name, op) \
  jt_V jt_ev_##name(jt_State *S, const jt_Node *n, jt_V env) { \
    EV2(a, b); \
    if (jt_isfix(a) && jt_isfix(b)) return jt_bool((intptr_t)a op (intptr_t)b); \
    return jt_bool(jt_num_cmp(S, a, b) op 0); \
  }
CMP2(lt2, <)
CMP2(gt2, >)
CMP2(le2, <=)
CMP2(ge2, >=)

jt_V jt_ev_numeq2(jt_State *S, const jt_Node *n, jt_V env) {
  EV2(a, b);
  if (jt_isfix(a) && jt_isfix(b)) return jt_bool(a == b);
  return jt_bool(jt_num_equal(S, a, b));
}

jt_V jt_ev_add1(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V a = EV(n->u.callg.args[0], env);
  S->nvals = 1;
  if (jt_isfix(a) && jt_fixval(a) < JT_FIXMAX) return jt_mkfix(jt_fixval(a) + 1);
  return jt_num_add(S, a, jt_mkfix(1));
}

jt_V jt_ev_sub1(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V a = EV(n->u.callg.args[0], env);
  S->nvals = 1;
  if (jt_isfix(a) && jt_fixval(a) > JT_FIXMIN) return jt_mkfix(jt_fixval(a) - 1);
  return jt_num_sub(S, a, jt_mkfix(1));
}

jt_V jt_ev_car(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V a = EV(n->u.callg.args[0], env);
  S->nvals = 1;
  if (jt_iscons(a)) return jt_car(a);
  if (a == JT_NIL) return JT_NIL;
  jt_type_error(S, a, JT_SYM(S, LIST));
}

jt_V jt_ev_cdr(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V a = EV(n->u.callg.args[0], env);
  S->nvals = 1;
  if (jt_iscons(a)) return jt_cdr(a);
  if (a == JT_NIL) return JT_NIL;
  jt_type_error(S, a, JT_SYM(S, LIST));
}

jt_V jt_ev_cons(jt_State *S, const jt_Node *n, jt_V env) {
  EV2(a, b);
  return jt_cons(S, a, b);
}

jt_V jt_ev_eq(jt_State *S, const jt_Node *n, jt_V env) {
  EV2(a, b);
  return jt_bool(a == b);
}

jt_V jt_ev_not(jt_State *S, const jt_Node *n, jt_V env) {
  jt_V a = EV(n->u.callg.args[0], env);
  S->nvals = 1;
  return jt_bool(a == JT_NIL);
}

/* ------------------------------------------------------------- top level */

jt_V jt_eval(jt_State *S, jt_V form) {
  /* the form whose call a host watches: taken before anything else (its
  ** analysis may expand macros) evaluates */
  jt_CallWatch *watch = NULL;
  if (__builtin_expect(S->call_watch != NULL, 0) && form == S->call_watch->form) {
    watch = S->call_watch;
    S->call_watch = NULL;
  }
  jt_V *base = S->sp;
  jt_V *saved_fp = S->fp;
  JT_PUSH(S, form);
  const jt_Node *root;
  int nstack;
  jt_V code = jt_analyze_toplevel(S, form, &root, &nstack);
  JT_PUSH(S, code);
  S->fp = S->sp;
  reserve(S, nstack);
  jt_V r = watch && root->ev == jt_ev_callg && root->u.callg.sym == jt_car(form) ? ev_callg_watched(S, root, JT_NIL, watch)
                                                                                  : EV(root, JT_NIL);
  S->fp = saved_fp;
  S->sp = base;
  return r;
}

jt_V jt_eval_toplevel(jt_State *S, jt_V form) {
  jt_check_cstack(S);   /* (progn (progn ...)) nested in itself */
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  for (;;) {
    if (!jt_iscons(form)) break;
    jt_V head = jt_car(form);
    if (head == JT_SYM(S, PROGN) && jt_iscons(jt_cdr(form))) {
      jt_V r = JT_NIL;
      jt_Walk w = jt_walk(form);
      for (jt_V l = jt_cdr(form); jt_iscons(l); l = jt_walk_next(S, &w, l)) {
        JT_PUSH(S, l);
        r = jt_eval_toplevel(S, jt_car(l));
        JT_POP(S, 1);
      }
      S->sp = base;
      return r;
    }
    bool expanded;
    jt_V e = jt_macroexpand_1(S, form, &expanded);
    if (!expanded) break;
    form = e;
    base[0] = e;
  }
  /* The library's functions and macros are analysed at their first call
  ** (a macro's: its first expansion): a program uses few of them, and
  ** analysing them all was most of the start-up.  An expander is analysed
  ** with the macros of that moment, so it must not use a macro defined
  ** later whose expansion uses it (kernel-conventions.md). */
  if (S->kernel_mode && jt_iscons(form) &&
      (jt_car(form) == JT_SYM(S, DEFUN) || jt_car(form) == JT_SYM(S, DEFMACRO)) &&
      jt_define_lazily(S, form)) {
    S->sp = base;
    S->nvals = 1;
    return jt_car(jt_cdr(form));
  }
  jt_V r = jt_eval(S, form);
  S->sp = base;
  return r;
}

void jt_source_reader(jt_State *S, jt_Reader *R, const char *src, size_t len) {
  jt_reader_init(R, src, len);
  R->origin = S->src_name ? S->src_name : "<input>";
  R->line0 = S->src_line0;
  R->col0 = S->src_col0;
}

void jt_source_span(const jt_Reader *R, size_t *at, long *line, jt_SourceSpan *span) {
  /* lines counted on from the last form's start: a source of n forms costs
  ** one pass over its text, not n */
  const char *p = R->src;
  for (; *at < R->form_start; ++*at)
    if (p[*at] == '\n') ++*line;
  size_t bol = R->form_start;
  while (bol > 0 && p[bol - 1] != '\n') bol--;
  long col = 1;
  for (size_t i = bol; i < R->form_start; i++)
    if (((unsigned char)p[i] & 0xC0) != 0x80) col++;
  if (*line == R->line0 && R->col0 > 1) col += R->col0 - 1;
  *span = (jt_SourceSpan){p + R->form_start, R->form_end - R->form_start, *line, col};
}

jt_V jt_eval_source(jt_State *S, const char *src, size_t len, bool host) {
  jt_Reader R;
  jt_source_reader(S, &R, src, len);
  R.program = S->src_program;   /* jiti run's files: #. as a program reads it */
  jt_V r = JT_NIL;
  JT_ROOT(S, r);
  /* a source evaluated inside a top-level form (restart arguments) */
  jt_V outer_form = S->top_form;
  jt_SourceSpan outer_span = S->top_span;
  JT_ROOT(S, outer_form);
  size_t at = 0;
  long line = R.line0;
  for (;;) {
    jt_V form = jt_read(S, &R);
    if (form == JT_EOF) break;
    jt_source_span(&R, &at, &line, &S->top_span);
    S->top_form = form;
    r = jt_eval_toplevel(S, form);
    if (S->world_form_done) {
      JT_PUSH(S, r);
      S->world_form_done(S);
      JT_POP(S, 1);
    }
    S->top_form = JT_NIL;
    if (host) jt_gc_safepoint(S, false);
  }
  S->top_form = outer_form;
  S->top_span = outer_span;
  JT_UNROOT(S, 2);
  return r;
}

/* C-side work: a trap found here never takes an interrupt (state.c). */
void jt_fuel_tick(jt_State *S) {
  if (--S->fuel_left == 0) jt_fuel_out_work(S);
}

void jt_check_cstack(jt_State *S) {
  char probe;
  /* Outside an entry point (the world layer comparing keys while it
  ** restores) there is nothing to signal to: the recorded base is an
  ** earlier call's.  A frame above the base (a host's) uses none of it. */
  if (!S->jmp || !S->cstack_base || !S->cstack_limit) return;
  ptrdiff_t used = S->cstack_base - &probe;
  if (used > (ptrdiff_t)S->cstack_limit) jt_limit_exceeded(S, JT_LIMIT_DEPTH);
}

void jt_fuel_charge(jt_State *S, uint64_t n) {
  if (S->fuel_left > n) { S->fuel_left -= n; return; }
  if (S->interrupt) {  /* the counter is the interrupt's trap: the fuel is saved */
    if (S->fuel_saved > n) { S->fuel_saved -= n; return; }
    S->fuel_saved = 1;
  }
  S->fuel_left = 1;
  jt_fuel_tick(S);
}
