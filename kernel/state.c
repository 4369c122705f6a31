/*
** state.c — opening and closing a state, and the embedding API (jiti.h).
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "jt_eval.h"
#include "jt_grow.h"
#include "jt_ffi.h"
#include "jt_ckpt.h"
#include "jt_world.h"
#include "jt_numstop.h"
#include "jt_clos.h"

#define VALUE_STACK_SLOTS ((size_t)1 << 20)
#define DEFAULT_CSTACK ((size_t)8 << 20)

extern const struct { const char *name; const char *src; size_t len; } jt_prelude_files[];

static void stdout_write(void *ud, const char *s, size_t n) {
  (void)ud;
  fwrite(s, 1, n, stdout);
}

/* finish-output: what the program wrote reaches the pipe or file now, so a
** crash later loses none of it. */
static void stdout_flush(void) { fflush(stdout); }

/* C stack available to evaluation: most of the thread's stack, leaving room
** for the host and for signalling the depth condition itself. */
static size_t cstack_budget(void) {
  struct rlimit rl;
  size_t size = DEFAULT_CSTACK;
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) size = (size_t)rl.rlim_cur;
  if (size > ((size_t)1 << 30)) size = (size_t)1 << 30;
  return size / 2;
}

/* Run fn(S, ud) inside a host entry record; returns the status and leaves
** the condition of a failure in S->pending. */
typedef jt_V (*Body)(jt_State *S, void *ud);

static jiti_Status protect(jt_State *S, Body fn, void *ud, jt_V *out) {
  char here;
  bool outermost = S->jmp == NULL;
  if (outermost) {
    S->cstack_base = &here;
    /* nothing of the kernel's is on the C stack: the collector may promote */
    jt_gc_safepoint(S, false);
  }
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jt_V v = fn(S, ud);
    jt_jmp_pop(S, &j);
    if (out) *out = v;
    return JITI_OK;
  }
  return (jiti_Status)j.code;
}

static jt_V load_prelude(jt_State *S, void *ud) {
  (void)ud;
  S->kernel_mode = true;
  for (int i = 0; jt_prelude_files[i].name; i++)
    jt_eval_source(S, jt_prelude_files[i].src, jt_prelude_files[i].len, true);
  S->kernel_mode = false;
  return JT_NIL;
}

/* After the library is loaded every symbol it defined is a locked built-in;
** every name of COMMON-LISP and JITI is the language's. */
static void lock_builtins(jt_State *S) {
  for (size_t i = 0; i < S->symcap; i++) {
    jt_V v = S->symtab[i].sym;
    if (v == 0 || v == JT_UNBOUND) continue;
    jt_Symbol *s = jt_sym_(v);
    if (s->function != JT_UNBOUND || s->setf_fn != JT_UNBOUND || s->package == JT_PKG_INTERNAL)
      s->h.flags |= JT_SYM_LOCKED;
    if (s->package == JT_PKG_LISP || s->package == JT_PKG_JITI) s->h.flags |= JT_SYM_BUILTIN;
    if (jt_find_layout(S, v) != JT_NIL) s->h.flags |= JT_SYM_TYPE;
  }
}

static jt_V finish_packages(jt_State *S, void *ud) {
  (void)ud;
  jt_packages_finish(S);
  return JT_NIL;
}

jiti_State *jiti_open(void) {
  jt_State *volatile S = calloc(1, sizeof *S);
  if (!S) return NULL;
  S->gc_threshold = (size_t)8 << 20;
  S->gc_skip = JT_GC_MARK;
  S->gc_inhibit = 1;
  S->stack = malloc(VALUE_STACK_SLOTS * sizeof(jt_V));
  if (!S->stack) { free(S); return NULL; }
  S->sp = S->fp = S->stack;
  S->stack_slots = VALUE_STACK_SLOTS;
  S->stack_end = S->stack + VALUE_STACK_SLOTS - JT_STACK_RESERVE;
  S->nvals = 1;
  S->mv[0] = JT_NIL;
  S->pending = JT_NIL;
  S->xfer_val = JT_NIL;
  S->held_form = JT_NIL;
  S->top_form = JT_NIL;
  S->src_line0 = S->src_col0 = 1;
  S->layouts = JT_NIL;
  S->clos = JT_NIL;
  S->symmeta = JT_NIL;
  S->nil_sym = S->t_sym = JT_NIL;
  S->stdout_stream = JT_NIL;
  S->stdin_stream = JT_NIL;
  S->traced = JT_NIL;
  S->terminal_io = S->query_io = JT_NIL;
  S->cstack_limit = cstack_budget();
  S->fuel_left = UINT64_MAX;
  S->write_fn = stdout_write;
  S->flush_fn = stdout_flush;
  S->random_state = JT_NIL;
  for (int i = 0; i < JT_S_COUNT; i++) S->sym[i] = JT_NIL;
  S->package_names = JT_NIL;

  /* Bootstrapping: nothing may signal until the condition types exist, and
  ** the collector stays off (gc_inhibit) until the state is complete. */
  jt_open_packages(S);
  jt_V nilname = jt_string_from_cstr(S, "NIL");
  S->nil_sym = jt_make_symbol(S, nilname);
  jt_V tname = jt_string_from_cstr(S, "T");
  S->t_sym = jt_make_symbol(S, tname);
  /* intern them so the reader finds NIL and T (mapped to the immediates) */
  jt_Symbol *ns = jt_sym_(S->nil_sym), *ts = jt_sym_(S->t_sym);
  ns->value = JT_NIL;
  ts->value = JT_T;
  ns->h.flags |= JT_SYM_CONSTANT | JT_SYM_LOCKED;
  ts->h.flags |= JT_SYM_CONSTANT | JT_SYM_LOCKED;
  jt_intern_symbol_object(S, S->nil_sym);
  jt_intern_symbol_object(S, S->t_sym);
  static const char *const names[] = {
#define JT_X_NAME(id, name) name,
    JT_SYMBOL_LIST(JT_X_NAME)
#undef JT_X_NAME
  };
  for (int i = 0; i < JT_S_COUNT; i++)
    S->sym[i] = names[i][0] == ':' ? jt_intern_keyword(S, names[i] + 1) : jt_intern(S, names[i]);
  S->layouts = jt_make_hash(S, JT_HASH_EQ, 64);

  jiti_Status st = JITI_OK;
  {
    char here;
    S->cstack_base = &here;
    jt_Jmp j;
    jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
    if (_setjmp(j.jb) == 0) {
      jt_analyze_init(S);
      jt_open_clos(S);   /* before any layout: every layout gets a class */
      jt_open_cond(S);
      jt_open_frames(S);
      jt_open_base(S);
      jt_open_num(S);
      jt_open_complex(S);
      jt_open_list(S);
      jt_open_seq(S);
      jt_open_array(S);
      jt_open_str(S);
      jt_open_hash(S);
      jt_open_struct(S);
      jt_open_trace(S);
      jt_open_io(S);
      jt_open_read(S);
      jt_open_format(S);
      jt_open_env(S);
      jt_open_world(S);
      jt_open_fstream(S);
      jt_open_meta(S);
      jt_open_census(S);
      jt_open_defs(S);
      jt_open_package_fns(S);
      jt_open_ffi(S);
      jt_jmp_pop(S, &j);
    } else {
      st = (jiti_Status)j.code;
    }
  }
  S->gc_inhibit = 0;
#ifdef JITI_GC_STRESS_DEFAULT
  bool stress = true;
#else
  bool stress = false;
#endif
  const char *env = getenv("JITI_GC_STRESS");
  if (env) stress = env[0] && env[0] != '0';
  if (st == JITI_OK) st = protect(S, load_prelude, NULL, NULL);
  if (st == JITI_OK) st = protect(S, finish_packages, NULL, NULL);
  if (st != JITI_OK) {
    char *m = S->pending != JT_NIL ? jt_print_cstr(S, S->pending, false, 500) : NULL;
    fprintf(stderr, "jiti: the built-in library failed to load: %s\n", m ? m : "?");
    free(m);
    jiti_close(S);
    return NULL;
  }
  lock_builtins(S);
  jt_clos_finish(S);
  S->pending = JT_NIL;
  jt_gc_safepoint(S, true);  /* the built-ins start out old */
  S->gc_stress = stress;
#ifdef JITI_GC_STRESS_DEFAULT
  /* every checkpoint checked: a store that skipped the barrier aborts */
  jt_ckpt_check_enable(S, true, true);
#endif
  return S;
}

void jiti_close(jiti_State *S) {
  if (!S) return;
  jt_ckpt_check_enable(S, false, false);
  if (S->world_free) S->world_free(S);
  jt_ckpt_free(S);
  jt_ffi_close(S);
  jt_reads_close(S);
  jt_gc_free_all(S);
  free(S->stack);
  free(S->roots);
  free(S->symtab);
  free(S->packages);
  free(S->bindings);
  free(S->hostfns);
  free(S->src_name);
  free((char *)S->held_span.text);
  free(S);
}

void jiti_set_source_origin(jiti_State *S, const char *name, int flags, long line, long column) {
  free(S->src_name);
  S->src_name = name ? strdup(name) : NULL;   /* out of memory: "<input>" */
  S->src_is_file = name && (flags & JITI_SOURCE_FILE) && S->src_name;
  S->src_canonical = (flags & JITI_SOURCE_CANONICAL) != 0;
  S->src_program = (flags & JITI_SOURCE_PROGRAM) != 0;
  S->src_line0 = line > 0 ? line : 1;
  S->src_col0 = column > 0 ? column : 1;
}

void jiti_reset_io_syntax(jiti_State *S) {
  jt_reset_io_syntax(S);
  jt_trace_reset(S);
}

void jiti_set_output(jiti_State *S, jiti_WriteFn fn, void *ud) {
  S->write_fn = fn ? fn : stdout_write;
  S->flush_fn = fn ? NULL : stdout_flush;
  S->write_ud = ud;
}

void jiti_set_limits(jiti_State *S, const jiti_Limits *limits) { S->limits = *limits; }
void jiti_get_limits(jiti_State *S, jiti_Limits *limits) { *limits = S->limits; }
void jiti_set_cstack_size(jiti_State *S, size_t bytes) {
  S->cstack_limit = bytes / 4 * 3;
}

void jiti_set_gc_stress(jiti_State *S, int on) { S->gc_stress = on != 0; }

void jiti_set_debugger_hook(jiti_State *S, jiti_DebuggerHook hook, void *ud) {
  S->debugger_hook = hook;
  S->debugger_ud = ud;
}

/* A cancel rides on the fuel counter, so that the evaluator's hot path
** pays nothing for it: the next tick finds it "out of fuel" and asks here. */
void jiti_cancel_async(jiti_State *S) {
  S->cancel = 1;
  S->fuel_left = 1;
  jt_numstop_async(S);
}

void jiti_cancel_clear(jiti_State *S) { S->cancel = 0; }

/* An interrupt rides on the counter too, but the computation goes on
** after it, so the fuel left is kept.  A trap the main line overwrote (its
** decrement was under way when the signal came) shows as a counter above 1:
** that is the fuel left then, and the trap is set again. */
void jiti_interrupt_async(jiti_State *S) {
  if (!S->interrupt || S->fuel_left > 1) S->fuel_saved = S->fuel_left;
  S->interrupt = 1;
  S->fuel_left = 1;
  jt_numstop_async(S);
}

void jiti_interrupt_clear(jiti_State *S) {
  if (!S->interrupt) return;
  S->interrupt = 0;
  S->fuel_left = S->fuel_saved ? S->fuel_saved : 1;
}

int jiti_interrupt_pending(jiti_State *S) { return S->interrupt != 0; }

void jiti_allow_interrupt(jiti_State *S) { S->interrupt_next = true; }

bool jt_interrupt_possible(jt_State *S) {
  return S->interruptible && S->jmp && S->debugger_hook;
}

bool jt_interrupt_takeable(jt_State *S) { return S->interrupt && jt_interrupt_possible(S); }

/* The debugger for an interrupt, with CONTINUE coming back here
** (%INTERACTIVE-INTERRUPT, 30-conditions.lisp).  The values of the form
** under way are kept: the step it interrupted may be inside a primitive
** whose caller set them. */
void jt_take_interrupt(jt_State *S) {
  S->interrupt = 0;
  S->fuel_left = S->fuel_saved ? S->fuel_saved : 1;   /* the trap's fuel back */
  int n = S->nvals < JT_MV_LIMIT ? S->nvals : JT_MV_LIMIT;
  jt_V *base = S->sp;
  if (base + n + 1 >= S->stack_end) jt_stack_overflow(S);
  for (int i = 0; i < n; i++) JT_PUSH(S, S->mv[i]);
  jt_V fn = jt_symobj(S, jt_intern(S, "%INTERACTIVE-INTERRUPT"))->function;
  if (jt_isfunction(fn)) jt_funcall(S, fn, 0);
  for (int i = 0; i < n; i++) S->mv[i] = base[i];
  S->nvals = n;
  S->sp = base;
}

/* The fuel trap fired: a cancel, an interrupt, or the budget spent.  An
** interrupt is taken only at an evaluation step (step), where nothing but
** rooted Lisp values is live; in C-side work (a loop over a vector may
** hold its storage) it waits for the next step, paying one unit a tick. */
static void fuel_trap(jt_State *S, bool step) {
  if (S->cancel && S->jmp) {
    S->cancel = 0;
    S->interrupt = 0;
    S->fuel_left = S->limits.fuel ? S->limits.fuel : UINT64_MAX;
    jt_abort_to_top(S, JITI_ABORTED, JT_NIL);
  }
  if (S->interrupt) {
    uint64_t left = S->fuel_saved;
    if (left > 1 || !S->limits.fuel) {
      left = left > 1 ? left - 1 : UINT64_MAX;
      if (step && jt_interrupt_takeable(S)) {
        S->fuel_saved = left;
        jt_take_interrupt(S);
        return;
      }
      S->fuel_saved = left;
      S->fuel_left = 1;
      return;
    }
    S->interrupt = 0;  /* the budget is spent, interrupt or not */
    S->fuel_left = 0;
  }
  if (S->fuel_left == 0 && !S->limits.fuel) {  /* a cancel cleared meanwhile */
    S->fuel_left = UINT64_MAX;
    return;
  }
  jt_limit_exceeded(S, JT_LIMIT_FUEL);
}

void jt_fuel_out(jt_State *S) { fuel_trap(S, true); }
void jt_fuel_out_work(jt_State *S) { fuel_trap(S, false); }

/* ------------------------------------------------------------ evaluation */

typedef struct { const char *src; size_t len; bool outer; } SrcArgs;

static jt_V eval_src_body(jt_State *S, void *ud) {
  SrcArgs *a = ud;
  return jt_eval_source(S, a->src, a->len, a->outer);
}

static const char *condition_type_name(jt_State *S, jt_V c) {
  if (jt_is_condition(c)) return jt_symname(S, jt_layout_(jt_struct_(c)->layout)->name);
  return "ERROR";
}

/* The outcome into res; printed (values too) only when the host wants it. */
static void fill_result(jt_State *S, jiti_Status st, jt_V value, jiti_Result *res, bool print) {
  memset(res, 0, sizeof *res);
  if (st == JITI_OK) res->nvalues = S->nvals < JT_MV_LIMIT ? S->nvals : JT_MV_LIMIT;
  if (st == JITI_OK && !print) {
    res->status = st;
    return;
  }
  if (st == JITI_OK && res->nvalues != 1) {
    /* all the values, held before printing one (a print method could set them) */
    int n = res->nvalues;
    jt_V *base = S->sp;
    for (int i = 0; i < n; i++) JT_PUSH(S, S->mv[i]);
    res->values = calloc((size_t)n + 1, sizeof *res->values);
    for (int i = 0; res->values && i < n; i++) res->values[i] = jt_print_cstr(S, base[i], true, 1 << 20);
    S->sp = base;
  }
  if (st == JITI_OK) {
    res->value = jt_print_cstr_len(S, value, true, 1 << 20, &res->value_len);
  } else {
    jt_V c = S->pending;
    if (st == JITI_ERROR && jt_is_condition(c)) {
      jt_V reader_error = jt_find_layout(S, JT_SYM(S, READER_ERROR));
      jt_V eof = jt_find_layout(S, JT_SYM(S, END_OF_FILE));
      jt_V l = jt_struct_(c)->layout;
      if (jt_subtypep_layout(l, reader_error) || jt_subtypep_layout(l, eof)) st = JITI_READ_ERROR;
    }
    res->message = c != JT_NIL ? jt_print_cstr(S, c, false, 4000) : strdup("aborted");
    res->condition_type = strdup(condition_type_name(S, c));
  }
  res->status = st;
}

static void begin_call(jt_State *S, const jiti_Limits *limits, jiti_Limits *saved) {
  if (S->jmp != NULL) return;  /* nested call from a hook: shares the budget */
  S->top_form = JT_NIL;   /* a form an earlier call left by an error is not this call's */
  *saved = S->limits;
  if (limits) S->limits = *limits;
  S->fuel_left = S->limits.fuel ? S->limits.fuel : UINT64_MAX;
  if (S->interrupt) {  /* still pending: the trap on the fresh budget */
    S->fuel_saved = S->fuel_left;
    S->fuel_left = 1;
  }
  S->cancel = 0;
  S->output_used = 0;
  S->limit_tripped = 0;
  S->stack_end = S->stack + S->stack_slots - JT_STACK_RESERVE;
}

/* One host call: a fresh budget (unless nested in a hook), `body` under an
** entry point, the outcome into `res`, the state tidied for the next call. */
static jiti_Status host_call(jiti_State *S, Body body, void *ud, const jiti_Limits *limits,
                             jiti_Result *res) {
  bool outer = S->jmp == NULL;
  jiti_Limits saved;
  begin_call(S, limits, &saved);
  /* an interrupt is for the calls the host allowed it in, not the calls
  ** nested in them (a gate's check, an export) */
  bool interruptible = S->interruptible;
  S->interruptible = S->interrupt_next;
  S->interrupt_next = false;
  jt_V v = JT_NIL;
  jiti_Status st = protect(S, body, ud, &v);
  S->interruptible = interruptible;
  JT_ROOT(S, v);
  jiti_Result scratch;
  fill_result(S, st, v, res ? res : &scratch, res != NULL);
  st = res ? res->status : scratch.status;
  if (!res) jiti_result_free(&scratch);
  JT_UNROOT(S, 1);
  if (outer) {
    S->limits = saved;
    S->pending = JT_NIL;
    S->nvals = 1;
  }
  return st;
}

static jiti_Status eval_common(jiti_State *S, const char *src, size_t len,
                               const jiti_Limits *limits, jiti_Result *res) {
  /* a call nested in a debugger hook runs while the paused evaluation may
  ** be half-way through building objects: no safepoints there */
  SrcArgs a = {src, len, S->jmp == NULL};
  return host_call(S, eval_src_body, &a, limits, res);
}

jiti_Status jiti_eval_string(jiti_State *S, const char *src, size_t len, jiti_Result *res) {
  return eval_common(S, src, len, NULL, res);
}

jiti_Status jiti_eval_limited(jiti_State *S, const char *src, size_t len,
                              const jiti_Limits *limits, jiti_Result *res) {
  return eval_common(S, src, len, limits, res);
}

typedef struct { const char *name; int argc; const char *const *args; } CallArgs;

/* The host names the function, so a %-name is the kernel's or the host's
** own helper (interned as C code interns); any other name is read. */
static jt_V call_body(jt_State *S, void *ud) {
  CallArgs *a = ud;
  jt_Reader R;
  jt_V fn;
  if (a->name[0] == '%') {
    char up[256];
    size_t n = strlen(a->name);
    if (n >= sizeof up) jt_error(S, "function name too long: %.40s...", a->name);
    for (size_t i = 0; i <= n; i++) up[i] = (char)toupper((unsigned char)a->name[i]);
    fn = jt_intern(S, up);
  } else {
    jt_reader_init(&R, a->name, strlen(a->name));
    fn = jt_read(S, &R);
  }
  if (!jt_issymbol(fn)) jt_error(S, "not a function name: %s", a->name);
  jt_V *base = S->sp;
  JT_PUSH(S, fn);
  for (int i = 0; i < a->argc; i++) {
    jt_reader_init(&R, a->args[i], strlen(a->args[i]));
    jt_V v = jt_read(S, &R);
    if (v == JT_EOF) jt_errorc(S, JT_SYM(S, READER_ERROR), "empty argument %d", i + 1);
    JT_PUSH(S, v);
  }
  jt_V f = jt_symobj(S, base[0])->function;
  if (f == JT_UNBOUND || jt_is_macro(f)) jt_undefined_function(S, base[0]);
  jt_V r = jt_apply(S, f, a->argc, base + 1);
  S->sp = base;
  return r;
}

jiti_Status jiti_call(jiti_State *S, const char *name, int argc, const char *const *args,
                      jiti_Result *res) {
  CallArgs a = {name, argc, args};
  return host_call(S, call_body, &a, NULL, res);
}

jiti_Status jiti_call_limited(jiti_State *S, const char *name, int argc, const char *const *args,
                              const jiti_Limits *limits, jiti_Result *res) {
  CallArgs a = {name, argc, args};
  return host_call(S, call_body, &a, limits, res);
}

typedef struct { int frame; const char *src; } FrameEvalArgs;

/* %FRAME-EVAL (30-conditions.lisp) reads and wraps the form (frames.c). */
static jt_V frame_eval_body(jt_State *S, void *ud) {
  FrameEvalArgs *a = ud;
  jt_V src = jt_string_from_cstr(S, a->src);
  JT_PUSH(S, src);
  jt_V r = jt_funcall(S, jt_symobj(S, jt_intern(S, "%FRAME-EVAL"))->function, 2, src, jt_mkfix(a->frame));
  JT_POP(S, 1);
  return r;
}

jiti_Status jiti_eval_in_frame(jiti_State *S, int frame, const char *src, const jiti_Limits *limits,
                               jiti_Result *res) {
  FrameEvalArgs a = {frame, src};
  return host_call(S, frame_eval_body, &a, limits, res);
}

/* ------------------------------------------------- checked evaluation */

typedef struct {
  const char *src;
  size_t len;
  const jiti_FormPolicy *policy;
  jiti_FormVerdict verdict;
} FormArgs;

/* Does the reader find nothing but whitespace and comments after the
** form?  An error reading on is an answer (no), not the call's failure;
** a resource limit is the call's. */
static bool rest_is_empty(jt_State *S, jt_Reader *R) {
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    bool empty = jt_read(S, R) == JT_EOF;
    jt_jmp_pop(S, &j);
    return empty;
  }
  if (j.code == JITI_LIMIT) jt_abort_to_top(S, JITI_LIMIT, S->pending);
  S->pending = JT_NIL;
  return false;
}

static jt_V form_read_body(jt_State *S, void *ud) {
  FormArgs *a = ud;
  jt_Reader R;
  jt_source_reader(S, &R, a->src, a->len);
  jt_V form = jt_read(S, &R);
  if (form == JT_EOF) {
    a->verdict = JITI_FORM_EMPTY;
    return JT_NIL;
  }
  size_t at = 0;
  long line = R.line0;
  jt_SourceSpan span;
  jt_source_span(&R, &at, &line, &span);
  char *text = malloc(span.len + 1);
  if (text) {  /* without it the form is held without its text */
    memcpy(text, span.text, span.len);
    text[span.len] = 0;
    span.text = text;
    S->held_span = span;
  }
  S->held_form = form;
  S->form_held = true;
  a->verdict = rest_is_empty(S, &R) ? jt_form_census(S, form, a->policy) : JITI_FORM_TRAILING;
  return JT_NIL;
}

jiti_Status jiti_form_read(jiti_State *S, const char *src, size_t len, const jiti_FormPolicy *policy,
                           const jiti_Limits *limits, jiti_FormVerdict *verdict, jiti_Result *res) {
  jiti_form_drop(S);
  FormArgs a = {src, len, policy, JITI_FORM_EMPTY};
  /* a source that does not read is the answer, not a pause */
  jiti_DebuggerHook hook = S->debugger_hook;
  S->debugger_hook = NULL;
  jiti_Status st = host_call(S, form_read_body, &a, limits, res);
  S->debugger_hook = hook;
  if (st != JITI_OK) jiti_form_drop(S);
  else *verdict = a.verdict;
  return st;
}

static jt_V source_check_body(jt_State *S, void *ud) {
  FormArgs *a = ud;
  jt_Reader R;
  jt_source_reader(S, &R, a->src, a->len);
  while (jt_read(S, &R) != JT_EOF) {}
  return JT_NIL;
}

jiti_Status jiti_source_check(jiti_State *S, const char *src, size_t len, const jiti_Limits *limits,
                              jiti_Result *res) {
  FormArgs a = {src, len, NULL, JITI_FORM_EMPTY};
  jiti_DebuggerHook hook = S->debugger_hook;   /* an answer, not a pause */
  S->debugger_hook = NULL;
  jiti_Status st = host_call(S, source_check_body, &a, limits, res);
  S->debugger_hook = hook;
  return st;
}

typedef struct { bool outer, listening; } FormEval;

/* A listener's history after form returned r (S->mv its values). */
static void listener_record(jt_State *S, jt_V form, jt_V r) {
  int n = S->nvals < JT_MV_LIMIT ? S->nvals : JT_MV_LIMIT;
  jt_V *base = S->sp;
  for (int i = 0; i < n; i++) JT_PUSH(S, i ? S->mv[i] : r);
  JT_PUSH(S, form);
  jt_V values = jt_list_from(S, n, base);
  static const char *const shifts[][3] = {{"***", "**", "*"}, {"+++", "++", "+"}, {"///", "//", "/"}};
  jt_V now[3] = {n ? r : JT_NIL, form, values};
  for (int k = 0; k < 3; k++) {
    jt_V a = jt_intern(S, shifts[k][0]), b = jt_intern(S, shifts[k][1]), c = jt_intern(S, shifts[k][2]);
    jt_set_symbol_value(S, a, jt_sym_(b)->value);
    jt_set_symbol_value(S, b, jt_sym_(c)->value);
    jt_set_symbol_value(S, c, now[k]);
  }
  S->sp = base;
}

static jt_V form_eval_body(jt_State *S, void *ud) {
  FormEval *fe = ud;
  bool outer = fe->outer;
  jt_V form = S->held_form;
  S->held_form = JT_NIL;
  S->form_held = false;
  if (fe->listening) {
    JT_ROOT(S, form);
    jt_set_symbol_value(S, jt_intern(S, "-"), form);
    JT_UNROOT(S, 1);
  }
  S->top_form = form;
  S->top_span = S->held_span;   /* its text stays S->held_span's */
  jt_V r = jt_eval_toplevel(S, form);  /* (it roots the form) */
  if (S->world_form_done) {
    JT_PUSH(S, r);
    S->world_form_done(S);
    JT_POP(S, 1);
  }
  S->top_form = JT_NIL;
  if (fe->listening) {
    JT_ROOT(S, r);
    listener_record(S, jt_sym_(jt_intern(S, "-"))->value, r);
    JT_UNROOT(S, 1);
  }
  if (outer) {  /* as jt_eval_source after each form of a host's source */
    JT_ROOT(S, r);
    jt_gc_safepoint(S, false);
    JT_UNROOT(S, 1);
  }
  return r;
}

static jiti_Status form_eval(jiti_State *S, bool listening, const jiti_Limits *limits, jiti_Result *res) {
  if (!S->form_held) {
    if (res) {
      memset(res, 0, sizeof *res);
      res->status = JITI_BADARG;
      res->message = strdup("no form is held (jiti_form_read)");
      res->condition_type = strdup("ERROR");
    }
    return JITI_BADARG;
  }
  FormEval fe = {S->jmp == NULL, listening};
  return host_call(S, form_eval_body, &fe, limits, res);
}

jiti_Status jiti_form_eval(jiti_State *S, const jiti_Limits *limits, jiti_Result *res) {
  return form_eval(S, false, limits, res);
}

jiti_Status jiti_form_eval_listening(jiti_State *S, const jiti_Limits *limits, jiti_Result *res) {
  return form_eval(S, true, limits, res);
}

jiti_Status jiti_form_eval_noting(jiti_State *S, const jiti_Limits *limits, jiti_Result *res, size_t max,
                                  jiti_CallNote *note) {
  memset(note, 0, sizeof *note);
  jt_CallNoting n = {note, max};
  jt_CallWatch w = {S->held_form, jt_call_note_seen, &n};
  if (S->form_held && jt_iscons(S->held_form)) S->call_watch = &w;
  jiti_Status st = form_eval(S, false, limits, res);
  S->call_watch = NULL;   /* (not taken: the form was never evaluated as read) */
  return st;
}

void jiti_form_drop(jiti_State *S) {
  S->held_form = JT_NIL;
  S->form_held = false;
  free((char *)S->held_span.text);
  S->held_span = (jt_SourceSpan){NULL, 0, 0, 0};
}

/* Internal symbols a library defined are locked like the kernel's own. */
static void lock_internals(jt_State *S) {
  for (size_t i = 0; i < S->symcap; i++) {
    jt_V v = S->symtab[i].sym;
    if (v != 0 && v != JT_UNBOUND && jt_sym_(v)->package == JT_PKG_INTERNAL)
      jt_sym_(v)->h.flags |= JT_SYM_LOCKED;
  }
}

/* A host library is read in JITI: its names are the host's, not the
** user's (and its %-names are internal). */
jiti_Status jiti_load_library(jiti_State *S, const char *src, size_t len, jiti_Result *res) {
  jt_Symbol *pv = jt_symobj(S, JT_SYM(S, PACKAGE_VAR));
  jt_V saved = pv->value;
  pv->value = jt_package_of_index(S, JT_PKG_JITI);
  S->kernel_mode = true;
  jiti_Status st = eval_common(S, src, len, NULL, res);
  S->kernel_mode = false;
  pv->value = saved;
  lock_internals(S);
  return st;
}

void jiti_result_free(jiti_Result *res) {
  if (!res) return;
  free(res->value);
  for (int i = 0; res->values && i < res->nvalues; i++) free(res->values[i]);
  free(res->values);
  free(res->message);
  free(res->condition_type);
  memset(res, 0, sizeof *res);
}

/* --------------------------------------------------------- C primitives */

typedef struct { const char *name; jiti_CFunction fn; void *ud; int min, max; const char *doc; } RegArgs;

/* Every host function is this primitive; its aux indexes the state's
** table of (function, user data), as a foreign function's indexes its
** declaration. */
static jt_V host_fn_call(jt_State *S, int argc, jt_V *argv) {
  const jt_HostFn *h = &S->hostfns[jt_o(S->ci->fn)->aux];
  return h->fn(S, h->ud, argc, argv);
}

static jt_V register_body(jt_State *S, void *ud) {
  RegArgs *a = ud;
  char up[256];
  size_t n = strlen(a->name);
  if (n == 0 || n >= sizeof up) jt_error(S, "bad primitive name");
  for (size_t i = 0; i <= n; i++) {
    char c = a->name[i];
    up[i] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
  }
  jt_V sym = jt_intern(S, up);
  jt_Symbol *s = jt_symobj(S, sym);
  if (s->h.flags & (JT_SYM_LOCKED | JT_SYM_SPECFORM)) return JT_NIL;
  if (S->nhostfns == S->hostfncap) {
    jt_HostFn *t = S->nhostfns < UINT32_MAX ? jt_grow(S->hostfns, &S->hostfncap, S->nhostfns + 1, sizeof *t, 8) : NULL;
    if (!t) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory registering %s", up);
    S->hostfns = t;
  }
  jt_V p = jt_make_prim(S, sym, host_fn_call, a->min, a->max, a->doc);
  S->hostfns[S->nhostfns] = (jt_HostFn){a->fn, a->ud};
  jt_o(p)->aux = (uint32_t)S->nhostfns++;
  JT_SET(S, s, s->function, p);
  jt_publish(S, sym);
  return JT_T;
}

jiti_Status jiti_register(jiti_State *S, const char *name, jiti_CFunction fn, void *ud, int minargs,
                          int maxargs, const char *doc) {
  if (!name || !fn || minargs < 0 || (maxargs >= 0 && maxargs < minargs) || maxargs > 1000)
    return JITI_BADARG;
  RegArgs a = {name, fn, ud, minargs, maxargs, doc};
  jt_V r = JT_NIL;
  jiti_Status st = protect(S, register_body, &a, &r);
  if (st != JITI_OK) return st;
  return r == JT_T ? JITI_OK : JITI_BADARG;
}

void jiti_error(jiti_State *S, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  jt_error(S, "%s", buf);
}

jiti_Value jiti_integer(jiti_State *S, int64_t n) { return jt_make_integer(S, n); }

int jiti_tointeger(jiti_State *S, jiti_Value v, int64_t *out) {
  if (jt_isfix(v)) { *out = jt_fixval(v); return 1; }
  if (jt_isbig(v) && mpz_fits_slong_p(jt_big_(v)->z)) { *out = mpz_get_si(jt_big_(v)->z); return 1; }
  return 0;
}

jiti_Value jiti_string(jiti_State *S, const char *utf8, size_t len) {
  return jt_string_from_utf8(S, utf8, len);
}

long jiti_tostring(jiti_State *S, jiti_Value v, char *buf, size_t size) {
  if (!jt_isstring(v)) return -1;
  size_t n;
  char *s = jt_string_utf8(S, v, &n);
  if (size) {
    size_t k = n < size - 1 ? n : size - 1;
    memcpy(buf, s, k);
    buf[k] = 0;
  }
  free(s);
  return (long)n;
}

jiti_Value jiti_nil(void) { return JT_NIL; }
int jiti_isnil(jiti_Value v) { return v == JT_NIL; }

char *jiti_print(jiti_State *S, jiti_Value v, size_t max) {
  return jt_print_cstr(S, v, true, max);
}
