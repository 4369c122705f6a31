/*
** frames.c — the frames of a pause: which calls are the program's, their
** arguments and local variables, a form evaluated in a frame, and the
** frame decisions (return from a frame, call it again).
**
** Which calls are frames.  Every call has a record (jt_CallInfo); a pause
** lists those a programmer would recognise, the way SBCL's debugger does,
** and hides the kernel's insides.  Walking from the outermost call of the
** pause inward, a call is hidden when
**   - its function is named by a kernel-internal symbol (%RESTART-BIND,
**     %UNDEFINED-FUNCTION-CALLEE, a host library's %TXN-REPAIR ...);
**   - it is an anonymous function of the kernel's own library (analysed in
**     kernel mode);
**   - it is a primitive called by the kernel's own code (a kernel closure,
**     or a primitive called so: EVAL of a repair, FUNCALL in a helper);
**   - or its caller is hidden and it is not a program's named function:
**     an anonymous function the kernel's helpers call (the thunks of the
**     program's restart-case and handler-case), a library function they
**     call.
** What a program's own function calls is a frame again, the standard
** functions included.
** Then the calls above the one that signalled go: hidden ones and the
** signalling functions (ERROR, CERROR, SIGNAL, WARN, INVOKE-DEBUGGER), as
** SBCL starts at the frame that erred.  A pause inside a repair lists only
** the calls made since the pause it repairs (S->pause_ci).
**
** Returning to a frame.  While S->frame_catch is on, every call from an
** evaluator node or jt_apply goes through jt_frame_call, which establishes
** a JT_JMP_FRAME record tagged with the function called; the record's saved
** call record is the caller's, so a frame's record is the one whose `ci`
** is the frame's `prev` and whose tag is its function.  A frame decision
** unwinds to it (running unwind-protect cleanups on the way) with code
** FRAME_RETURN (the values in S->pending, a list) or FRAME_RESTART.  With
** frame_catch off a call costs only the flag's test.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"

enum { FRAME_RETURN = 1, FRAME_RESTART = 2 };

/* ------------------------------------------------------------ which calls */

static jt_V fn_name(jt_V fn) {
  if (jt_is(fn, JT_TCLOSURE)) return jt_clo_(fn)->name;
  if (jt_is(fn, JT_TPRIM)) return jt_prim_(fn)->name;
  if (jt_is(fn, JT_TGENERIC)) return ((jt_Generic *)fn)->name;
  return JT_NIL;
}

static bool internal_name(jt_V name) {
  if (jt_iscons(name) && jt_iscons(jt_cdr(name))) name = jt_car(jt_cdr(name)); /* (setf %x) */
  return jt_is_internal(name);
}

static bool kernel_closure(jt_V fn) { return jt_is(fn, JT_TCLOSURE) && jt_clo_(fn)->lam && jt_clo_(fn)->lam->kernel; }

static bool signaller(jt_State *S, jt_V fn) {
  static const char *const names[] = {"ERROR", "CERROR", "SIGNAL", "WARN", "INVOKE-DEBUGGER"};
  jt_V name = fn_name(fn);
  if (!jt_is(name, JT_TSYMBOL) || jt_sym_(name)->package != JT_PKG_LISP) return false;
  const char *n = jt_symname(S, name);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(n, names[i])) return true;
  return false;
}

int jt_frames_collect(jt_State *S, jt_CallInfo **out, int max) {
  /* the calls of this pause, innermost first (bounded: the depth limit
  ** does not bound a state without limits) */
  enum { WALK_MAX = 4096 };
  jt_CallInfo **all = malloc(WALK_MAX * sizeof *all);
  bool *hidden = malloc(WALK_MAX * sizeof *hidden);
  if (!all || !hidden) {
    free(all);
    free(hidden);
    return 0;
  }
  int n = 0;
  for (jt_CallInfo *ci = S->ci; ci && ci != S->pause_ci && n < WALK_MAX; ci = ci->prev) all[n++] = ci;
  /* hidden: not a frame; kernel: the call runs the kernel's code (its
  ** callees that are primitives are its insides) */
  bool caller_hidden = false, caller_kernel = false;
  for (int i = n - 1; i >= 0; i--) {
    jt_V fn = all[i]->fn;
    bool internal = internal_name(fn_name(fn)), kernel;
    if (jt_is(fn, JT_TCLOSURE)) {
      kernel = kernel_closure(fn);
      bool named = jt_clo_(fn)->name != JT_NIL;
      /* a program's named function is always a frame; an anonymous one is
      ** not when the kernel's insides call it (restart-case's thunk) */
      hidden[i] = internal || (kernel && !named) || (!(named && !kernel) && caller_hidden);
    } else {
      kernel = internal || caller_kernel;
      hidden[i] = internal || caller_kernel;
    }
    caller_hidden = hidden[i];
    caller_kernel = kernel;
  }
  int top = 0;
  while (top < n && (hidden[top] || signaller(S, all[top]->fn))) top++;
  int k = 0;
  for (int i = top; i < n && k < max; i++)
    if (!hidden[i]) out[k++] = all[i];
  free(all);
  free(hidden);
  return k;
}

/* ------------------------------------------------------------- locals */

/* The heap frame LET `scope` of the activation made, up the environment
** of its last call (its LETs' frames lie between that and the closure's
** own environment), or NIL. */
static jt_V let_frame(jt_CallInfo *ci, uint16_t scope) {
  jt_V stop = jt_clo_(ci->fn)->env;
  jt_V e = ci->env_now;
  for (int steps = 0; steps < 1024 && jt_is(e, JT_TFRAME) && e != stop && e != ci->env; steps++) {
    if (jt_frame_(e)->h.flags == scope) return e;
    e = jt_frame_(e)->parent;
  }
  return JT_NIL;
}

/* The address of local k of a closure's frame, or NULL; *frame, the heap
** frame holding it (NIL: a stack slot). */
static jt_V *local_place_in(jt_CallInfo *ci, int k, jt_V *frame) {
  *frame = JT_NIL;
  if (!jt_is(ci->fn, JT_TCLOSURE) || !ci->fp) return NULL;
  const jt_Lambda *L = jt_clo_(ci->fn)->lam;
  if (!L || k < 0 || k >= L->nlocals) return NULL;
  const jt_Local *l = &L->locals[k];
  if (!l->heap) return &ci->fp[l->slot];
  jt_V f = l->scope ? let_frame(ci, l->scope) : ci->env;
  if (!jt_is(f, JT_TFRAME) || (uint32_t)l->slot >= jt_frame_(f)->h.aux) return NULL;
  *frame = f;
  return &jt_frame_(f)->slots[l->slot];
}

static jt_V *local_place(jt_CallInfo *ci, int k) {
  jt_V frame;
  return local_place_in(ci, k, &frame);
}

static int local_count(jt_CallInfo *ci) {
  if (!jt_is(ci->fn, JT_TCLOSURE) || !ci->fp || !jt_clo_(ci->fn)->lam) return 0;
  return jt_clo_(ci->fn)->lam->nlocals;
}

static bool shown_value(jt_V v) { return v != JT_UNBOUND && v != JT_NOVALUE; }

/* ---------------------------------------------------------- describing */

static char *name_text(jt_State *S, jt_V fn) {
  jt_V name = fn_name(fn);
  return name != JT_NIL ? jt_print_cstr(S, name, true, JITI_FRAME_NAME_MAX) : strdup("(LAMBDA)");
}

jiti_Frame *jt_frames_describe(jt_State *S, jt_CallInfo *const *cis, int n) {
  jiti_Frame *fr = calloc((size_t)n + 1, sizeof *fr);
  if (!fr) return NULL;
  size_t budget = JITI_FRAME_TEXT_MAX;
  for (int i = 0; i < n; i++) {
    jt_CallInfo *ci = cis[i];
    fr[i].number = i;
    fr[i].function = name_text(S, ci->fn);
    if (budget < JITI_FRAME_VALUE_MAX + JITI_FRAME_NAME_MAX) continue;
    int na = ci->argc < JITI_FRAME_ARGS_MAX ? ci->argc : JITI_FRAME_ARGS_MAX;
    char **args = calloc((size_t)na + 1, sizeof *args);
    int ka = 0;
    for (int k = 0; args && k < na && budget > JITI_FRAME_VALUE_MAX; k++) {
      args[ka] = jt_print_cstr(S, ci->argv[k], true, JITI_FRAME_VALUE_MAX);
      budget -= strlen(args[ka]);
      ka++;
    }
    fr[i].args = (const char *const *)args;
    fr[i].nargs = args ? ka : 0;
    int nl = local_count(ci);
    jiti_FrameLocal *locals =
      calloc((size_t)(nl < JITI_FRAME_LOCALS_MAX ? nl : JITI_FRAME_LOCALS_MAX) + 1, sizeof *locals);
    int kl = 0;
    for (int k = 0; locals && k < nl && kl < JITI_FRAME_LOCALS_MAX; k++) {
      jt_V *p = local_place(ci, k);
      if (!p || !shown_value(*p)) continue;
      if (budget < JITI_FRAME_VALUE_MAX + JITI_FRAME_NAME_MAX) break;
      char *name = jt_print_cstr(S, jt_clo_(ci->fn)->lam->locals[k].name, true, JITI_FRAME_NAME_MAX);
      char *value = jt_print_cstr(S, *p, true, JITI_FRAME_VALUE_MAX);
      budget -= strlen(name) + strlen(value);
      locals[kl].name = name;
      locals[kl].value = value;
      kl++;
    }
    fr[i].locals = locals;
    fr[i].nlocals = locals ? kl : 0;
  }
  return fr;
}

void jt_frames_free(jiti_Frame *fr, int n) {
  if (!fr) return;
  for (int i = 0; i < n; i++) {
    free((char *)fr[i].function);
    for (int k = 0; k < fr[i].nargs; k++) free((char *)fr[i].args[k]);
    free((void *)fr[i].args);
    for (int k = 0; k < fr[i].nlocals; k++) {
      free((char *)fr[i].locals[k].name);
      free((char *)fr[i].locals[k].value);
    }
    free((void *)fr[i].locals);
  }
  free(fr);
}

char *jt_backtrace(jt_State *S, int max_frames, size_t max_bytes) {
  jt_CallInfo *cis[JITI_FRAME_MAX];
  if (max_frames > JITI_FRAME_MAX) max_frames = JITI_FRAME_MAX;
  int n = jt_frames_collect(S, cis, max_frames);
  jt_Buf b = {0};
  for (int i = 0; i < n; i++) {
    jt_CallInfo *ci = cis[i];
    char *name = name_text(S, ci->fn);
    jt_buf_printf(&b, "%d: (%s", i, name);
    free(name);
    for (int k = 0; k < ci->argc && k < 8; k++) {
      char *a = jt_print_cstr(S, ci->argv[k], true, 60);
      jt_buf_printf(&b, " %s", a);
      free(a);
    }
    jt_buf_puts(&b, ci->argc > 8 ? " ...)\n" : ")\n");
    if (b.n > max_bytes) break;
  }
  if (!b.p) jt_buf_puts(&b, "");
  if (b.n > max_bytes) {
    b.p[max_bytes] = 0;
    b.n = max_bytes;
  }
  return b.p;
}

/* ------------------------------------------------------ returning to frames */

jt_V jt_frame_call(jt_State *S, jt_V fn, int argc, jt_V *argv) {
  volatile jt_V f = fn;
  jt_Jmp j;
  for (;;) {
    jt_jmp_push(S, &j, JT_JMP_FRAME, f);
    if (_setjmp(j.jb) == 0) {
      jt_V r = jt_call_now(S, f, argc, argv);
      jt_jmp_pop(S, &j);
      return r;
    }
    if (j.code == FRAME_RETURN) {
      jt_V vals = S->pending;
      jt_V *base = S->sp;
      int n = 0;
      for (jt_V l = vals; jt_iscons(l) && n < JT_MV_LIMIT; l = jt_cdr(l), n++) JT_PUSH(S, jt_car(l));
      jt_V r = jt_values(S, n, base);
      S->sp = base;
      return r;
    }
    /* called again: a function redefined by name since runs as it is now */
    jt_V name = fn_name(f);
    if (jt_is(f, JT_TCLOSURE) && jt_is(name, JT_TSYMBOL)) {
      jt_V now = jt_sym_(name)->function;
      if (jt_isfunction(now) && !jt_is_macro(now)) f = now;
    }
  }
}

/* The jump record of frame ci, or NULL when it has none. */
static jt_Jmp *frame_jmp(jt_State *S, jt_CallInfo *ci) {
  for (jt_Jmp *j = S->jmp; j; j = j->prev) {
    if (j->kind == JT_JMP_TOP) return NULL; /* the frame is not in this evaluation */
    if (j->kind == JT_JMP_FRAME && j->ci == ci->prev && j->tag == ci->fn) return j;
  }
  return NULL;
}

const char *jt_frame_target(jt_State *S, const jt_PauseFrames *pf, int frame, jt_Jmp **out, char *why, size_t n) {
  if (frame < 0 || frame >= pf->n) {
    if (pf->n)
      snprintf(why, n,
               "this pause has no frame %d (its frames are 0 to %d; frames of an outer pause level are "
               "reached after leaving this one)",
               frame, pf->n - 1);
    else snprintf(why, n, "this pause has no frame %d (it lists no frames)", frame);
    return why;
  }
  *out = frame_jmp(S, pf->ci[frame]);
  if (!*out) {
    snprintf(why, n,
             "frame %d cannot be returned to (it was called before frames were caught, or by its "
             "generic function)",
             frame);
    return why;
  }
  return NULL;
}

JT_NORETURN void jt_frame_unwind(jt_State *S, jt_Jmp *j, bool restart, jt_V values) {
  S->pending = values;
  jt_unwind_to(S, j, restart ? FRAME_RESTART : FRAME_RETURN);
}

void jiti_set_frame_catch(jiti_State *S, int on) {
  S->frame_catch = on != 0;
  jt_call_hooks_note(S);
}

int jiti_pause_frames(jiti_State *S, const jiti_Frame **frames) {
  jt_PauseFrames *pf = S->pause_frames;
  *frames = NULL;
  if (!pf) return 0;
  jiti_Frame *fresh = jt_frames_describe(S, pf->ci, pf->n);
  if (!fresh) return pf->desc ? pf->n : 0;
  jt_frames_free(pf->desc, pf->n);
  pf->desc = fresh;
  *frames = fresh;
  return pf->n;
}

/* ------------------------------------------------------ evaluating in frames */

static jt_CallInfo *pause_frame(jt_State *S, jt_V serial, jt_V frame) {
  const jt_PauseFrames *pf = S->pause_frames;
  if (!pf || !jt_isfix(serial) || (uint32_t)jt_fixval(serial) != pf->serial)
    jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "the pause this frame belonged to is over");
  if (!jt_isfix(frame) || jt_fixval(frame) < 0 || jt_fixval(frame) >= pf->n) {
    snprintf(S->msgbuf, sizeof S->msgbuf, "this pause has no such frame (its frames are 0 to %d)", pf->n - 1);
    jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "%s", S->msgbuf);
  }
  return pf->ci[jt_fixval(frame)];
}

/* (%frame-form form frame) FORM wrapped so that it sees frame FRAME's
** locals: (symbol-macrolet ((var (%frame-local serial frame k)) ...) form),
** the binding of a name bound twice being its later one. */
JT_FN(f_frame_form) {
  jt_check_kernel_caller(S);
  if (!S->pause_frames) jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "nothing is paused: there are no frames");
  jt_V serial = jt_mkfix(S->pause_frames->serial);
  jt_CallInfo *ci = pause_frame(S, serial, argv[1]);
  int nl = local_count(ci);
  jt_V *base = S->sp;
  jt_V acc = JT_NIL;
  JT_PUSH(S, acc);
  jt_V local = jt_intern(S, "%FRAME-LOCAL");
  for (int k = nl - 1; k >= 0; k--) {
    jt_V name = jt_clo_(ci->fn)->lam->locals[k].name;
    bool later = false;
    for (int q = k + 1; q < nl && !later; q++) later = jt_clo_(ci->fn)->lam->locals[q].name == name;
    jt_V *p = local_place(ci, k);
    if (later || !p || !shown_value(*p)) continue;
    jt_V place = jt_list(S, 4, local, serial, argv[1], jt_mkfix(k));
    JT_PUSH(S, place);
    jt_V binding = jt_list(S, 2, name, place);
    base[0] = jt_cons(S, binding, base[0]);
    JT_POP(S, 1);
  }
  jt_V r = jt_list(S, 3, jt_intern(S, "SYMBOL-MACROLET"), base[0], argv[0]);
  S->sp = base;
  return r;
}

static jt_V *checked_place(jt_State *S, int argc, jt_V *argv) {
  (void)argc;
  jt_CallInfo *ci = pause_frame(S, argv[0], argv[1]);
  jt_V *p = jt_isfix(argv[2]) ? local_place(ci, (int)jt_fixval(argv[2])) : NULL;
  if (!p) jt_errorc(S, JT_SYM(S, CONTROL_ERROR), "the frame has no such variable");
  return p;
}

/* (%frame-local serial frame k) The value of local K of a pause's frame. */
JT_FN(f_frame_local) { return *checked_place(S, argc, argv); }

/* (%set-frame-local serial frame k value) Set it (setf %frame-local). */
JT_FN(f_set_frame_local) {
  checked_place(S, argc, argv);
  jt_V frame;
  jt_V *p = local_place_in(pause_frame(S, argv[0], argv[1]), (int)jt_fixval(argv[2]), &frame);
  if (frame != JT_NIL) JT_SET_GC(S, frame, *p, argv[3]); /* a closure's frame may be old */
  else *p = argv[3];
  return argv[3];
}

static const jt_Reg frame_fns[] = {
  {"%FRAME-FORM", f_frame_form, 2, 2, "(%frame-form form frame) FORM seeing the locals of a pause's FRAME."},
  {"%FRAME-LOCAL", f_frame_local, 3, 3, "(%frame-local serial frame k) A local of a pause's frame."},
  {"%SET-FRAME-LOCAL", f_set_frame_local, 4, 4, "(%set-frame-local serial frame k value) Set it."},
  {NULL, NULL, 0, 0, NULL}};

void jt_open_frames(jt_State *S) { jt_register(S, frame_fns); }
