/*
** jiti.h — the embedding API of the jiti kernel (libjiti).
**
** libjiti is a Common Lisp subset interpreter that lives entirely inside one
** state object: open as many states as you like, each is independent, and
** nothing is shared between them.  A state is not thread-safe; use one per
** thread.
**
** Values.  A jiti_Value is a machine word naming a Lisp object of one state.
** Values handed to a C primitive (its argv) stay valid until it returns.
** Anything else a host wants to keep must be pinned (jiti_pin) or re-read;
** the collector may reclaim unpinned objects at any allocation.
**
** Errors.  Every call that evaluates returns a jiti_Status.  When evaluation
** signals an error that no Lisp handler takes, the debugger hook (if any) is
** called before anything unwinds; without a hook, or when the hook aborts,
** the call returns JITI_ERROR and the result holds the condition's report.
** Resource limits (fuel, depth, heap, output) are conditions of their own
** types; tripping one never harms the state, which stays usable.
*/
#ifndef jiti_h
#define jiti_h

#include <stddef.h>
#include <stdint.h>

#define JITI_VERSION "0.1.0"

typedef struct jt_State jiti_State;
typedef uintptr_t jiti_Value;

/* Status codes returned by evaluating calls. */
typedef enum jiti_Status {
  JITI_OK = 0,        /* evaluation completed normally */
  JITI_ERROR = 1,     /* an unhandled error aborted evaluation */
  JITI_READ_ERROR = 2,/* the source could not be read (syntax) */
  JITI_LIMIT = 3,     /* a resource limit aborted evaluation */
  JITI_ABORTED = 4,   /* the debugger hook chose to abort */
  JITI_BADARG = 5     /* the host passed an invalid argument */
} jiti_Status;

/* Resource limits; 0 means unlimited.  Fuel and output are per top-level
** call (each jiti_eval_* call starts with a full budget). */
typedef struct jiti_Limits {
  uint64_t fuel;    /* evaluation steps (calls and loop iterations) */
  uint32_t depth;   /* nesting of function calls */
  size_t heap;      /* live heap bytes */
  size_t output;    /* characters written to the host's output */
} jiti_Limits;

/* Where printed output goes: called with UTF-8 bytes. */
typedef void (*jiti_WriteFn)(void *ud, const char *utf8, size_t len);

/* The outcome of an evaluation: strings are malloc'd and owned by the
** result; release them with jiti_result_free. */
typedef struct jiti_Result {
  jiti_Status status;
  char *value;           /* prin1 of the primary value (JITI_OK), bounded;
                            NUL-terminated, but may contain NUL characters */
  size_t value_len;      /* bytes in value, not counting the terminator */
  int nvalues;           /* JITI_OK: how many values the last form returned */
  char **values;         /* when nvalues is not 1: prin1 of each (bounded);
                            NULL for exactly one (it is `value`) */
  char *message;         /* condition report (JITI_ERROR/LIMIT/READ_ERROR) */
  char *condition_type;  /* e.g. "DIVISION-BY-ZERO" */
} jiti_Result;

/* ------------------------------------------------------------ lifecycle */

/* Open a new state with the standard library loaded.  Returns NULL when
** memory is exhausted. */
jiti_State *jiti_open(void);

/* Release every object of the state and the state itself. */
void jiti_close(jiti_State *S);

/* Send output (print, format t, ...) to `fn`.  Default (fn NULL):
** standard output, which finish-output and force-output flush (fflush);
** with a host function they do nothing more: what `fn` got is delivered. */
void jiti_set_output(jiti_State *S, jiti_WriteFn fn, void *ud);

/* Give the reader's and printer's control variables (*read-base*,
** *print-base*, *print-circle*, *print-case*, *standard-output*, ...)
** their standard values again, set *debugger-hook* and *break-on-signals*
** to NIL and untrace every traced function.  A host running untrusted code
** calls it between evaluations, so that one evaluation's setq cannot
** change how the next one is read, printed, debugged or traced. */
void jiti_reset_io_syntax(jiti_State *S);

/* ---------------------------------------------------------------- limits */

void jiti_set_limits(jiti_State *S, const jiti_Limits *limits);
void jiti_get_limits(jiti_State *S, jiti_Limits *limits);

/* Tell the state how many bytes of C stack the thread that evaluates has
** (default: derived from RLIMIT_STACK).  Evaluation uses at most about
** three quarters of it and signals depth-exceeded before it runs out, so
** deep recursion never overflows the C stack.  A host that wants deep
** recursion runs the state on a thread with a large stack and says so. */
void jiti_set_cstack_size(jiti_State *S, size_t bytes);

/* Collect garbage at every allocation (1) or normally (0). */
void jiti_set_gc_stress(jiti_State *S, int on);

/* ------------------------------------------------------------ evaluation */

/* Read and evaluate every form of `src` (`len` bytes of UTF-8) in order.
** `res` (may be NULL) receives the outcome.  Returns res->status.
** JITI_READ_ERROR: malformed source; forms before the bad one have run. */
jiti_Status jiti_eval_string(jiti_State *S, const char *src, size_t len,
                             jiti_Result *res);

/* Where the sources evaluated from now on come from (until the next call):
** `name` for the positions of their reader errors ("NAME:LINE:COLUMN:
** what"; NULL: "<input>"), and the line and column (from 1; 0: 1) their
** first byte has there.  A definition a top-level form makes keeps that
** form's text as written and its place (jiti_world.h, jiti_entry_source),
** unless flags has JITI_SOURCE_CANONICAL; JITI_SOURCE_FILE: name is a
** file's, which the place names.  JITI_SOURCE_PROGRAM: jiti_eval_string
** reads the source as a program's READ would, so `#.` evaluates when
** *read-eval* is true — only for source nothing has to check before it
** runs (jiti run's own files; never what a client or a model sends, which
** the form gate reads with `#.` refused). */
enum { JITI_SOURCE_FILE = 1, JITI_SOURCE_CANONICAL = 2, JITI_SOURCE_PROGRAM = 4 };
void jiti_set_source_origin(jiti_State *S, const char *name, int flags, long line, long column);

/* Like jiti_eval_string, but `limits` apply to this call only. */
jiti_Status jiti_eval_limited(jiti_State *S, const char *src, size_t len,
                              const jiti_Limits *limits, jiti_Result *res);

/* Call the global function named `name` (read as a symbol) with `argc`
** arguments, each given as Lisp source read as data.  Returns the status;
** JITI_BADARG when an argument does not read. */
jiti_Status jiti_call(jiti_State *S, const char *name, int argc,
                      const char *const *args, jiti_Result *res);

/* Like jiti_call, with `limits` for this call only. */
jiti_Status jiti_call_limited(jiti_State *S, const char *name, int argc, const char *const *args,
                              const jiti_Limits *limits, jiti_Result *res);

/* Evaluate a host's own Lisp library: like jiti_eval_string, except that
** names beginning with % it reads are the host's private helpers — user
** code evaluated later cannot name them (its %FOO is another symbol), and
** they are locked.  The host reaches them with jiti_call("%NAME", ...). */
jiti_Status jiti_load_library(jiti_State *S, const char *src, size_t len, jiti_Result *res);

void jiti_result_free(jiti_Result *res);

/* ------------------------------------------------- checked evaluation */

/* A host that checks a form before it lets it run (a gate) reads it once:
** jiti_form_read reads the first form of a source and walks all of it;
** jiti_form_eval then evaluates that very form — what was checked is what
** runs, and the source is not read twice.  The state holds one form at a
** time. */

/* What the walk looks for, besides kernel-internal symbols and shared or
** circular structure (a cons, string or vector reached twice), which it
** always reports. */
typedef struct jiti_FormPolicy {
  size_t max_parts;                /* parts (atoms, conses, ...) visited at most */
  const char *const *symbols;      /* symbol names (as the reader interns
                                      them: "THROW") to report */
  int nsymbols;
  const char *const *substrings;   /* UTF-8 texts to report inside strings */
  int nsubstrings;
} jiti_FormPolicy;

typedef enum jiti_FormVerdict {
  JITI_FORM_CLEAN,      /* exactly one form, and the walk found nothing */
  JITI_FORM_EMPTY,      /* the source holds no form */
  JITI_FORM_TRAILING,   /* another form (or text that does not read) follows */
  JITI_FORM_TOO_LARGE,  /* more than max_parts parts */
  JITI_FORM_SHARED,     /* shared or circular structure */
  JITI_FORM_INTERNAL,   /* a kernel-internal symbol */
  JITI_FORM_SYMBOL,     /* a symbol the policy names */
  JITI_FORM_SUBSTRING   /* a string holding a substring the policy names */
} jiti_FormVerdict;

/* Read the first form of `src` (`len` bytes of UTF-8; in the current
** package and reader syntax, as jiti_eval_string reads), walk it with
** `policy` and report the first finding in *verdict (the walk visits a
** cons's car before its cdr).  The form is held, whatever the verdict,
** until jiti_form_eval or jiti_form_drop (or the next jiti_form_read).
** `limits` (may be NULL) bound the read and the walk.  Returns JITI_OK
** (then *verdict is set), JITI_READ_ERROR or JITI_ERROR when the first form
** does not read (res, which may be NULL, says why; nothing is held), or
** JITI_LIMIT.  When the first form reads but what follows it does not,
** the verdict is JITI_FORM_TRAILING. */
jiti_Status jiti_form_read(jiti_State *S, const char *src, size_t len, const jiti_FormPolicy *policy,
                           const jiti_Limits *limits, jiti_FormVerdict *verdict, jiti_Result *res);

/* Read every form of `src` (as jiti_eval_string would, placed as
** jiti_set_source_origin says) and evaluate none: JITI_OK when all read,
** JITI_READ_ERROR with the reader's report in res (may be NULL), or
** JITI_LIMIT.  Reading interns the symbols it names, as evaluating would. */
jiti_Status jiti_source_check(jiti_State *S, const char *src, size_t len, const jiti_Limits *limits,
                              jiti_Result *res);

/* Evaluate the held form as jiti_eval_limited would have evaluated it
** from its source, and let it go.  JITI_BADARG (res->message says so)
** when no form is held. */
jiti_Status jiti_form_eval(jiti_State *S, const jiti_Limits *limits, jiti_Result *res);

/* jiti_form_eval as a Lisp listener evaluates a form it read (CLHS
** 25.1.1): `-` is the form while it runs; once it returns, `+`, `++` and
** `+++` are the form and the two before it, `*`, `**` and `***` its
** primary value and the two before, `/`, `//` and `///` the list of its
** values and the two before.  Those variables are the kernel's, not the
** world's: set inside the caller's checkpoint (a restore takes them back),
** never exported. */
jiti_Status jiti_form_eval_listening(jiti_State *S, const jiti_Limits *limits, jiti_Result *res);

/* Let the held form go (nothing happens when none is held). */
void jiti_form_drop(jiti_State *S);

/* ---------------------------------------------------- C primitives */

/* A primitive receives the user data it was registered with and its
** arguments in argv[0..argc-1], and returns one value.  Signal errors with
** jiti_error (never return after it). */
typedef jiti_Value (*jiti_CFunction)(jiti_State *S, void *ud, int argc, jiti_Value *argv);

/* Define global function `name` (upcased like the reader) implemented in C;
** every call passes it `ud` (the state keeps the pointer, not what it
** points to: it must outlive the state or the function's definition), so
** that hosts with several states need no globals.  maxargs -1 accepts any
** number.  Calls with a wrong count signal program-error before fn runs.
** JITI_OK; JITI_BADARG if the name is a locked built-in or the counts are
** inconsistent; JITI_ERROR when out of memory. */
jiti_Status jiti_register(jiti_State *S, const char *name, jiti_CFunction fn, void *ud,
                          int minargs, int maxargs, const char *doc);

/* ------------------------------------------------- foreign functions */

/* Grant the state the C library `library` (a name dlopen understands, e.g.
** "libm.so.6"): it is opened now, so that code in the state can later
** declare its functions with (define-foreign ...).  Grant before entering a
** sandbox that forbids executable mappings.  JITI_OK (also when granted
** already); JITI_ERROR with the loader's message when it cannot be opened
** (the state remembers it: a declaration of that library then says why it
** cannot be made, and granting again retries); JITI_BADARG for an empty
** name.  Declarations that were unavailable for want of this library
** become usable (or, if it lacks their symbol, say so). */
jiti_Status jiti_foreign_grant(jiti_State *S, const char *library, char *err, size_t errlen);
/* The libraries granted and opened, in grant order. */
size_t jiti_foreign_grant_count(jiti_State *S);
const char *jiti_foreign_grant_name(jiti_State *S, size_t i);  /* NULL past the end */

/* The foreign declarations in force that cannot be called: imported (from
** a store) while their library was not granted, did not open, or lacked
** their symbol.  fn (may be NULL) is called for each with the function's
** name (printed as the name of its world entry), the library, the symbol and why, a sentence naming the library and
** --allow-foreign where a grant is the remedy; the strings are valid
** during the call only.  Returns how many there are. */
typedef void (*jiti_ForeignFn)(void *ud, const char *name, const char *library, const char *symbol,
                               const char *why);
size_t jiti_foreign_unavailable(jiti_State *S, jiti_ForeignFn fn, void *ud);

/* Signal a simple-error with a printf-style message.  Does not return. */
void jiti_error(jiti_State *S, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

/* Conversions for primitives. */
jiti_Value jiti_integer(jiti_State *S, int64_t n);
int jiti_tointeger(jiti_State *S, jiti_Value v, int64_t *out);  /* 1 if fits */
jiti_Value jiti_string(jiti_State *S, const char *utf8, size_t len);
/* Copy a string's UTF-8 into buf (NUL terminated, truncated to size);
** returns the full length, or -1 if v is not a string. */
long jiti_tostring(jiti_State *S, jiti_Value v, char *buf, size_t size);
jiti_Value jiti_nil(void);
int jiti_isnil(jiti_Value v);

/* Print a value (prin1) into a malloc'd string of at most `max` bytes
** (a longer representation ends in "..."); circular structure is bounded. */
char *jiti_print(jiti_State *S, jiti_Value v, size_t max);

/* ------------------------------------------------------ debugger hook */

/* A restart offered at a pause. */
typedef struct jiti_RestartInfo {
  uint32_t id;        /* identity, valid while this pause lasts */
  const char *name;   /* symbol name, or "" for an unnamed restart */
  const char *report; /* report text */
  const char *lambda_list;  /* the arguments it takes, as Lisp text (restart-case:
                               its clause's lambda list); "" when unknown */
} jiti_RestartInfo;

/* A frame of a pause (docs/transactions.md, "Frames"): a call the program
** made, innermost first, numbered from 0.  The kernel's own insides are
** not frames: its internal helpers, the anonymous functions they call (the
** bodies of restart-case, handler-case and the like), what they call in
** turn but a program's named function, and the signalling functions
** (ERROR, SIGNAL, CERROR, WARN, INVOKE-DEBUGGER) above the call that
** signalled.  Only this pause's own frames are listed: a pause in a repair
** lists the repair's calls, not those of the pause it repairs.  Texts are
** printed with *print-escape* and bounded (JITI_FRAME_* below); once the
** pause's frames hold JITI_FRAME_TEXT_MAX bytes, the remaining frames
** come without arguments and locals. */
typedef struct jiti_FrameLocal {
  const char *name;            /* the variable's printed name */
  const char *value;           /* its printed value */
} jiti_FrameLocal;

typedef struct jiti_Frame {
  int number;                  /* 0: the innermost frame */
  const char *function;        /* printed name; "(LAMBDA)" when anonymous */
  int nargs;
  const char *const *args;     /* the arguments it was called with */
  int nlocals;
  const jiti_FrameLocal *locals;  /* its lexical variables, in binding order
                                     (a closure's; none for a primitive) */
} jiti_Frame;

#define JITI_FRAME_MAX 40            /* frames listed */
#define JITI_FRAME_ARGS_MAX 16       /* arguments listed per frame */
#define JITI_FRAME_LOCALS_MAX 32     /* locals listed per frame */
#define JITI_FRAME_NAME_MAX 120      /* bytes of a function or variable name */
#define JITI_FRAME_VALUE_MAX 200     /* bytes of an argument or value */
#define JITI_FRAME_TEXT_MAX 32768    /* bytes of every frame's texts together */

typedef struct jiti_Pause {
  jiti_Value condition;
  const char *condition_type;
  const char *report;          /* princ of the condition */
  int nrestarts;
  const jiti_RestartInfo *restarts;  /* innermost first */
  const char *backtrace;       /* one frame per line, innermost first, bounded */
  int depth;                   /* nesting: 1 for the first pause */
  const char *decision_error;  /* why the previous decision at this pause
                                  was refused, or NULL */
  int nframes;                 /* the frames the backtrace lists, as data */
  const jiti_Frame *frames;
} jiti_Pause;

/* What the hook decided. */
typedef struct jiti_Decision {
  enum {
    JITI_DECIDE_ABORT,
    JITI_DECIDE_RESTART,
    JITI_DECIDE_RETURN,        /* frame `frame` returns the values of `args`'s
                                  list; its caller continues */
    JITI_DECIDE_RESTART_FRAME  /* frame `frame` is called again with the
                                  arguments it shows (a function redefined
                                  since by name: the new definition) */
  } action;
  uint32_t restart_id;         /* for JITI_DECIDE_RESTART */
  const char *args;            /* Lisp source of an expression evaluating to
                                  the list of arguments (the values for
                                  JITI_DECIDE_RETURN); NULL = none */
  int frame;                   /* for the frame decisions: a pause frame's
                                  number */
} jiti_Decision;

/* Called for an unhandled error before anything unwinds.  The stack of the
** failing computation is intact: the hook may evaluate further forms (with
** jiti_eval_string: repairs; in a frame's lexical environment with
** jiti_eval_in_frame) and then decides.  A restart decision whose id is
** unknown or whose arguments fail is refused, and so is a frame decision
** naming no frame of this pause, a frame that cannot be returned to (the
** state did not catch frames, jiti_set_frame_catch, when it was called; a
** method called by its generic function), or values that fail or are not
** a list: the hook is called again with a fresh pause whose
** decision_error says why. */
typedef void (*jiti_DebuggerHook)(jiti_State *S, const jiti_Pause *pause,
                                  jiti_Decision *decision, void *ud);

void jiti_set_debugger_hook(jiti_State *S, jiti_DebuggerHook hook, void *ud);

/* Make every call from now on a point a pause can return from or restart
** (JITI_DECIDE_RETURN, JITI_DECIDE_RESTART_FRAME), on = 1; or not, 0.  It
** costs each call a jump record: a host turns it on for evaluations that
** may pause and are answered by someone who may choose those decisions. */
void jiti_set_frame_catch(jiti_State *S, int on);

/* Inside the debugger hook: the frames of the pause being decided described
** again, with the values their arguments and locals hold now (a repair may
** have set them); returns how many.  The pause's `frames` and those of an
** earlier call are freed: use these until the next call or the hook's
** return.  0 (NULL) outside a pause. */
int jiti_pause_frames(jiti_State *S, const jiti_Frame **frames);

/* Inside the debugger hook: evaluate the one form of `src` (read in the
** current package) in frame `frame` of the pause being decided, under
** `limits` (NULL: the state's): the frame's local variables are visible by
** name, and a SETQ of one changes the frame's variable (seen when the
** computation goes on; a later restore of a checkpoint does not undo it).
** A frame the pause does not list signals a control-error naming the
** frames it has.  A host library (jiti_load_library) evaluating repairs
** its own way wraps a form it read with (%frame-form FORM FRAME) and
** evaluates the result. */
jiti_Status jiti_eval_in_frame(jiti_State *S, int frame, const char *src,
                               const jiti_Limits *limits, jiti_Result *res);

/* Cancel the evaluation running on S, from a signal handler or another
** thread (async-signal-safe: two stores).  It stops at its next step (a
** call, a loop iteration, a unit of C-side work), unwinding through its
** unwind-protect cleanups; no handler sees it and it does not pause: the
** evaluating call returns JITI_ABORTED (message "aborted"; the host, which
** asked, knows why).
** A long operation on big numbers (a product of multi-megabyte integers,
** an EXPT, a conversion to digits) is stopped inside GMP too, its memory
** freed (docs/security.md, "Stopping a running computation").  Each
** evaluating call clears a cancel left over from before it
** (jiti_cancel_clear for a host that must be sure). */
void jiti_cancel_async(jiti_State *S);
void jiti_cancel_clear(jiti_State *S);

/* Interrupt the evaluation running on S (async-signal-safe, like
** jiti_cancel_async): at its next evaluation step the debugger hook is
** called with a condition of type INTERACTIVE-INTERRUPT (a
** SERIOUS-CONDITION of the JITI package, not an ERROR; report "Interactive
** interrupt."; no handler sees it) and a CONTINUE restart ("Continue the
** interrupted computation."), which resumes exactly where it stopped;
** every outer restart is offered too.  Inside a long GMP operation called
** by a number primitive the operation is abandoned, its memory freed, and
** run again after CONTINUE.
** The interrupt is taken only in a call the host allowed it in
** (jiti_allow_interrupt before that call; the calls nested in it are not
** allowed unless allowed themselves) with a debugger hook set; elsewhere
** (C-side work, a nested call, no hook) it waits, pending, for a step
** where it may be.  It stays pending across calls until taken or cleared
** (jiti_interrupt_clear); jiti_interrupt_pending says whether it is. */
void jiti_interrupt_async(jiti_State *S);
void jiti_interrupt_clear(jiti_State *S);
int jiti_interrupt_pending(jiti_State *S);
/* The next evaluating call made on S (jiti_eval_*, jiti_call_*,
** jiti_form_eval) may take an interrupt. */
void jiti_allow_interrupt(jiti_State *S);

/* The largest restart id handed out so far: every restart established
** later has a larger id (a host can tell the restarts its own evaluation
** made from older ones). */
uint32_t jiti_restart_watermark(jiti_State *S);

#endif
