/*
** jt_eval.h — analysed code and the evaluator.
**
** A top-level form is analysed once into a tree of nodes; each node carries
** the C function that evaluates it, so evaluation is a chain of indirect
** calls with no dispatch on the form's shape.  Macros are expanded and
** variables resolved during analysis:
**
**  - A variable lives either in a *heap frame* (a jt_Frame, when some nested
**    lambda captures it) or in a *stack slot* of the current activation
**    (S->fp[i] on the value stack).  Which one is decided when its scope
**    closes; references are patched afterwards (see analyze.c).
**  - Global and special variables are read from the symbol's value cell
**    (shallow binding: a dynamic binding saves the old value on S->bindings).
**
** Local transfers.  A `go` or `return-from` whose path to its target crosses
** only "transparent" positions (progn statements, if branches, let bodies,
** tagbody statements, block bodies) does not longjmp: it returns the
** sentinel JT_XFER, which those nodes pass upward until the target tagbody
** or block recognises it.  Every other transfer is non-local and goes
** through a jump record (jt_Jmp).  Loops therefore cost no setjmp per
** iteration.
**
** Nodes live in an arena owned by a jt_Code object; the constants they refer
** to are recorded in the jt_Code so the collector keeps them.  A closure
** holds its jt_Code, and a running call holds its function in its call
** record, so code being executed is never freed — even if its function is
** redefined meanwhile (that call keeps its old body; new calls see the new).
*/
#ifndef jt_eval_h
#define jt_eval_h

#include "jt_lib.h"

#define JT_XFER ((jt_V)0x52)   /* local transfer in progress (see above) */

typedef struct jt_Node jt_Node;
typedef jt_V (*jt_EvalFn)(jt_State *S, const jt_Node *n, jt_V env);

/* Lambda lists, analysed. */
struct jt_Lambda;
typedef struct jt_Param {
  jt_V name;          /* symbol (NIL when `sub` destructures instead) */
  const struct jt_Lambda *sub;  /* nested destructuring pattern or NULL */
  int slot;           /* index in frame or stack area */
  bool special;       /* dynamically bound */
  const jt_Node *init;/* default form or NULL (NIL) */
  jt_V key;           /* keyword for &key */
  int svar_slot;      /* supplied-p variable slot or -1 */
  bool svar_special;
  jt_V svar_name;
} jt_Param;

/* A lexical variable of an activation, for a pause's frames (frames.c):
** its value is in the activation's stack slot `slot`; or (heap) in slot
** `slot` of its own heap frame (jt_CallInfo.env) when `scope` is 0, else of
** the heap frame a LET of it made, the one whose h.flags is `scope`, found
** up the activation's current environment (jt_CallInfo.env_now). */
typedef struct jt_Local {
  jt_V name;
  int slot;
  bool heap;
  uint16_t scope;
} jt_Local;

typedef struct jt_Lambda {
  jt_V name;             /* for backtraces and printing */
  int nlocals;           /* its variables, in the order they are bound */
  const jt_Local *locals;
  int nreq, nopt;
  jt_Param *req, *opt, *keys, *aux;
  int nkeys, naux;
  bool has_rest, has_key, allow_other_keys;
  jt_Param rest;
  bool has_whole;
  jt_Param whole;
  bool simple;           /* required parameters only, none special */
  bool heap;             /* parameters live in a heap frame */
  int nheap;             /* slots in the heap frame */
  int nstack;            /* stack slots of an activation */
  const jt_Node *body;
  jt_V lambda_list;      /* original, for printing and describe */
  jt_V body_form;        /* the original body (function-lambda-expression) */
  jt_V code;             /* the jt_Code whose arena holds this lambda */
  const char *doc;
  bool kernel;            /* analysed in kernel mode: see jt_kernel_caller */
} jt_Lambda;

/* Variable reference target, resolved after analysis. */
typedef struct jt_VarLoc {
  int16_t depth;   /* heap frames to walk up; -1: stack slot */
  int16_t index;
} jt_VarLoc;

struct jt_Node {
  jt_EvalFn ev;
  union {
    jt_V value;                                     /* CONST */
    jt_VarLoc var;                                  /* LREF */
    struct { jt_VarLoc var; const jt_Node *val; } set;   /* LSET */
    struct { jt_V sym; const jt_Node *val; } gset;  /* GREF/GSET */
    struct { const jt_Node *test, *then, *els; } if_;
    struct { int n; const jt_Node **body; } progn;
    struct {
      int n;
      const jt_Node **inits;
      int *slots;        /* per var: slot index */
      jt_V *specials;    /* per var: symbol if special, else 0 */
      bool heap;         /* allocate a heap frame */
      int nheap;
      uint16_t scope_id; /* a heap frame's h.flags: which of its lambda's
                            LETs made it (jt_Local.scope), 0 for none */
      bool sequential;   /* let* */
      bool any_special;
      const jt_Node *body;
    } let;
    struct { const jt_Lambda *lam; } lambda;
    struct { jt_V sym; int argc; const jt_Node **args; } callg;
    struct { jt_VarLoc var; int argc; const jt_Node **args; } calll;
    struct { const jt_Node *fn; int argc; const jt_Node **args; } callx;
    struct {
      const jt_Node *body;
      jt_VarLoc slot;     /* where the jump record lives when non-local */
      bool nonlocal;
      bool heap;          /* the slot needs its own heap frame */
      jt_V name;
    } block;
    struct {
      const jt_Node *target;  /* the block or tagbody node */
      jt_VarLoc slot;
      bool nonlocal;
      int index;              /* go: statement index */
      const jt_Node *val;     /* return-from value */
    } xfer;
    struct {
      int n;
      const jt_Node **stmts;
      int *tagpos;            /* tag index -> statement index */
      int ntags;
      jt_VarLoc slot;
      bool nonlocal;
      bool heap;
    } tagbody;
    struct { const jt_Node *a, *b; } two;   /* catch, throw, unwind-protect ... */
    struct { const jt_Node *fn; int n; const jt_Node **forms; } mvcall;
    struct { const jt_Lambda *lam; const jt_Node *form, *body; } bind;
                                         /* multiple-value-bind, destructuring-bind */
    struct { jt_V sym; const jt_Node *fn; jt_DefKind kind; jt_V form; } def;  /* defun, defmacro */
  } u;
};

/* Analyse `form` (in the null lexical environment) into a fresh jt_Code;
** returns the code object and its root node in *root and the number of
** stack slots the top-level activation needs in *nstack. */
jt_V jt_analyze_toplevel(jt_State *S, jt_V form, const jt_Node **root,
                         int *nstack);
void jt_code_free(jt_State *S, jt_Code *c);

/* Evaluate a top-level form: analyses and runs it. */
jt_V jt_eval(jt_State *S, jt_V form);
/* Evaluate the forms of a source text in order. */
/* Read and evaluate every form of `src`; the value of the last.  `host`:
** called by an outermost host call, so the end of each form is a safepoint
** of the collector (jt_gc.h). */
/* A reader over a host's source, placed where jiti_set_source_origin says. */
void jt_source_reader(jt_State *S, jt_Reader *R, const char *src, size_t len);
/* The text and place of the datum R just read, into span; *at and *line
** carry the line count from one form to the next (start them at 0 and
** R->line0). */
void jt_source_span(const jt_Reader *R, size_t *at, long *line, jt_SourceSpan *span);
jt_V jt_eval_source(jt_State *S, const char *src, size_t len, bool host);

/* Macro expansion (one step); *expanded tells whether it did anything. */
jt_V jt_macroexpand_1(jt_State *S, jt_V form, bool *expanded);
/* The same in the lexical environment ENV an expander received (NIL: the
** global one). */
jt_V jt_macroexpand_1_env(jt_State *S, jt_V form, jt_V env, bool *expanded);
/* NAME's macro function in the lexical environment ENV (a local macro's
** expander), NIL when a local function shadows it, JT_NOVALUE when ENV
** does not bind the name. */
jt_V jt_local_macro_function(jt_State *S, jt_V name, jt_V env);
/* The internal special form a standard macro that is a special form here
** (defun, defmacro, lambda, multiple-value-bind, destructuring-bind)
** expands into; NIL for any other symbol. */
jt_V jt_standard_macro_alias(jt_State *S, jt_V sym);

/* Evaluate a form as a top-level form: progn subforms and macro expansions
** of the top level are processed one at a time, so a macro defined by an
** earlier subform is seen by a later one. */
jt_V jt_eval_toplevel(jt_State *S, jt_V form);
static inline bool jt_is_macro(jt_V fn) {
  return jt_is(fn, JT_TCLOSURE) && (jt_o(fn)->flags & JT_CLO_MACRO);
}

/* Apply with a known closure (argv on the value stack). */
jt_V jt_apply_closure(jt_State *S, jt_V fn, int argc, jt_V *argv);

/* Lazy definitions (world import).  jt_define_lazily installs the function
** of a top-level (DEFUN name lambda-list . body) or (DEFMACRO ...) form as
** evaluating it would — the function or setf-function cell, the macro flag,
** the world's record of the definition — but leaves the body unanalysed:
** the closure keeps the form.  It returns false, doing nothing, when the
** form is anything else or would be refused (a malformed head, a bad or
** locked name); the caller then evaluates the form, which reports why.
** jt_closure_lambda returns a closure's analysed lambda, analysing a lazy
** definition first, exactly as the evaluator would have analysed its form
** (in the null lexical environment, with the macros and special
** declarations of the moment).  The closure keeps the result; the change
** passes the write barrier, so restoring a checkpoint taken before makes it
** lazy again.  Analysis errors are signalled to the caller, and the closure
** stays lazy; a call made while its own definition is being analysed (by
** a macro it uses) is an error.  In kernel mode (the library's DEFUNs,
** jt_eval_toplevel) the closure is marked JT_CLO_KERNEL: its analysis is
** done in kernel mode, is not world state (a restore keeps it), and costs
** the caller neither fuel nor heap allowance. */
bool jt_define_lazily(jt_State *S, jt_V form);
/* A closure of the null lexical environment whose definition is `form`, a
** (DEFUN name lambda-list . body), analysed at its first call (or by
** jt_closure_lambda); nothing is installed or recorded.  CLOS makes method
** functions and initforms this way. */
jt_V jt_make_lazy_closure(jt_State *S, jt_V form);

/* The name of a (DEFUN name ...) (kind JT_DEF_FUNCTION) or (DEFMACRO name
** ...) (JT_DEF_MACRO) whose cdr is args: the symbol in *sym, and the
** definition's kind — JT_DEF_FUNCTION, JT_DEF_MACRO, or
** JT_DEF_SETF_FUNCTION for (DEFUN (SETF name) ...).  -1 when args is too
** short, -2 when the name is not a definable function name (not a symbol,
** or NIL, T, a keyword). */
int jt_def_name(jt_State *S, jt_V args, jt_DefKind kind, jt_V *sym);
const jt_Lambda *jt_closure_lambda(jt_State *S, jt_V fn);

/* --------------------------------------------------------- control (ctl.c) */

/* Establish a jump record: fill `j` from the state, link it.  Must be
** followed by setjmp(j->jb) in the same function. */
void jt_jmp_push(jt_State *S, jt_Jmp *j, int kind, jt_V tag);
/* Unlink `j` after normal completion of its extent. */
void jt_jmp_pop(jt_State *S, jt_Jmp *j);
/* Transfer to `target` with `code`, running unwind-protect cleanups on the
** way.  The carried values are in S->pending / S->mv / S->nvals. */
__attribute__((noreturn)) void jt_unwind_to(jt_State *S, jt_Jmp *target, int code);
/* Restore the state's chains to the heights saved in j (the landing site
** calls this before doing anything else). */
void jt_jmp_restore(jt_State *S, jt_Jmp *j);

bool jt_jmp_active(jt_State *S, const jt_Jmp *j);

/* Abort to the innermost host entry with status and condition. */
__attribute__((noreturn)) void jt_abort_to_top(jt_State *S, int status, jt_V condition);

/* ------------------------------------------------------------------ limits */

enum { JT_LIMIT_FUEL, JT_LIMIT_DEPTH, JT_LIMIT_HEAP, JT_LIMIT_OUTPUT };
__attribute__((noreturn)) void jt_limit_exceeded(jt_State *S, int which);

/* The fuel ran out, or a host's jiti_cancel_async or
** jiti_interrupt_async made it look so (state.c): a cancel aborts, a real
** exhaustion is the fuel limit, an interrupt is taken at an evaluation
** step (jt_fuel_out, the evaluator's tick) and waits through C-side work
** (jt_fuel_out_work: jt_fuel_tick, jt_fuel_charge). */
void jt_fuel_out(jt_State *S);
void jt_fuel_out_work(jt_State *S);
/* An interrupt could be taken here (the host allowed it in this call, and
** a debugger hook would see it); one is pending and could. */
bool jt_interrupt_possible(jt_State *S);
bool jt_interrupt_takeable(jt_State *S);
/* Take the pending interrupt: the debugger with INTERACTIVE-INTERRUPT and a
** CONTINUE restart, which returns here (the values of the form under way
** kept).  Only where running any Lisp is sound: an evaluation step. */
void jt_take_interrupt(jt_State *S);

static inline void jt_tick(jt_State *S) {
  if (--S->fuel_left == 0) jt_fuel_out(S);
}

/* ------------------------------------------------------------- layouts */

jt_V jt_define_layout(jt_State *S, jt_V name, jt_V parents, jt_V slots, jt_V report,
                      bool condition);
jt_V jt_instance_from_initargs(jt_State *S, jt_V layout, int n2, const jt_V *initargs);
void jt_analyze_init(jt_State *S);
bool jt_special_form_p(jt_State *S, jt_V sym);

/* ------------------------------------------------------------- conditions */

/* Signal `condition`; returns if no handler transfers control. */
void jt_signal(jt_State *S, jt_V condition);
/* frames.c: the frames of a pause (jiti.h, jiti_Frame). */
/* The calls a pause shows, innermost first (the kernel's insides hidden),
** down to the call the enclosing pause began in; returns how many (<= max). */
int jt_frames_collect(jt_State *S, jt_CallInfo **out, int max);
/* The visible frames of the innermost pause, while its hook runs. */
typedef struct jt_PauseFrames {
  uint32_t serial;               /* which pause (S->pause_serial) */
  int n;
  jt_CallInfo *ci[JITI_FRAME_MAX];
  jiti_Frame *desc;              /* as the host sees them (jiti_pause_frames) */
} jt_PauseFrames;
/* The frames as the host sees them (malloc'd; jt_frames_free). */
jiti_Frame *jt_frames_describe(jt_State *S, jt_CallInfo *const *cis, int n);
void jt_frames_free(jiti_Frame *fr, int n);
/* The call stack as text ("N: (FN ARGS...)" per frame), bounded (malloc'd). */
char *jt_backtrace(jt_State *S, int max_frames, size_t max_bytes);
/* After S->frame_catch or S->traced changes: whether calls take the slow path. */
static inline void jt_call_hooks_note(jt_State *S) { S->call_hooked = S->frame_catch || S->traced != JT_NIL; }
/* A call with a JT_JMP_FRAME record (S->frame_catch), and one without. */
jt_V jt_frame_call(jt_State *S, jt_V fn, int argc, jt_V *argv);
jt_V jt_call_now(jt_State *S, jt_V fn, int argc, jt_V *argv);
/* A call as the evaluator makes it, except that a traced function is not
** reported (trace.c calls the traced function so). */
jt_V jt_call_untraced(jt_State *S, jt_V fn, int argc, jt_V *argv);
/* The jump record of frame `frame` of pf: NULL with *out set, or why not
** (written into why). */
const char *jt_frame_target(jt_State *S, const jt_PauseFrames *pf, int frame, jt_Jmp **out, char *why,
                            size_t n);
/* Return `values` (a list) from the frame of j, or call it again. */
JT_NORETURN void jt_frame_unwind(jt_State *S, jt_Jmp *j, bool restart, jt_V values);
void jt_restart_report(jt_State *S, jt_V stream, jt_V restart);
/* Enter the debugger: the program's *debugger-hook*, then the host's (a
** pause, or an abort without one); never returns. */
__attribute__((noreturn)) void jt_invoke_debugger(jt_State *S, jt_V condition);
/* The host's debugger alone, past *debugger-hook* (BREAK). */
__attribute__((noreturn)) void jt_enter_debugger(jt_State *S, jt_V condition);

#endif
