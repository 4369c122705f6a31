/*
** jt_state.h — the interpreter state.  Everything the kernel knows hangs off
** one jt_State; there are no mutable globals, so independent states can live
** side by side in one process.
**
** Dynamic-extent records (jump records, call records, handler and restart
** clusters) live on the C stack of the function that establishes them and
** are chained from the state; a non-local exit restores every chain to the
** heights saved in its target record (ctl.c; jt_eval.h, "control").
*/
#ifndef jt_state_h
#define jt_state_h

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include "jt_obj.h"
#include "jt_syms.h"
#include "jiti.h"

#define JT_MV_LIMIT 64   /* multiple-values-limit */
#define JT_POOL_CLASSES 5
#define JT_STACK_RESERVE 4096  /* value-stack slots kept for signalling overflow */
#define JT_STACK_GUARD 64

/* What a definition did, as the modules tell the world layer:
** S->world_define(S, name, kind, form, fn), `form` the defining form (or
** NIL), `fn` the function made (or NIL).  world.c (world_define) says
** which entries each kind records or removes.  The first three are also
** the evaluator's kinds of DEFUN and DEFMACRO (jt_def_name). */
typedef enum jt_DefKind {
  JT_DEF_FUNCTION,          /* defun */
  JT_DEF_MACRO,             /* defmacro */
  JT_DEF_SETF_FUNCTION,     /* (defun (setf name) ...) */
  JT_DEF_VARIABLE,          /* defvar, defparameter */
  JT_DEF_CONSTANT,          /* defconstant */
  JT_DEF_TYPE,              /* defstruct, define-condition (%record-type) */
  JT_DEF_FUNCTION_SET,      /* a function set without a defining form (setf fdefinition) */
  JT_DEF_FUNCTION_REMOVED,  /* fmakunbound */
  JT_DEF_CLASS,             /* defclass */
  JT_DEF_GENERIC,           /* defgeneric */
  JT_DEF_METHOD,            /* defmethod (name: the method's key) */
  JT_DEF_METHOD_REMOVED,    /* remove-method (name: the method's key) */
  JT_DEF_GENERIC_REMOVED,   /* a generic function going away (fn: it) */
  JT_DEF_FOREIGN,           /* define-foreign (form: its canonical form) */
  JT_DEF_PACKAGE,           /* a package made or changed (name: the package) */
  JT_DEF_PACKAGE_GONE,      /* a package renamed or deleted (name: the package) */
  JT_DEF_ENTRY,             /* an entry recorded as given (defs.c, jt_defs_record): fn is
                               its jiti_EntryKind as a fixnum */
  JT_DEF_ENTRY_GONE,        /* that entry is gone (fn: its kind as a fixnum) */
  JT_DEF_KIND_COUNT
} jt_DefKind;

/* An entry of the symbol table: `sym` is present in the package of index
** `pkg`.  A symbol is present in its home package and in every package it
** was imported into. */

/* A function the host registered (jiti_register) and its user data. */
typedef struct jt_HostFn {
  jiti_CFunction fn;
  void *ud;
} jt_HostFn;

/* A top-level form's text in its source, and where it starts (line and
** column from 1, as the reader counts them). */
typedef struct jt_SourceSpan {
  const char *text;
  size_t len;
  long line, column;
} jt_SourceSpan;

typedef struct jt_SymEntry {
  jt_V sym;          /* 0: empty slot; JT_UNBOUND: removed */
  uint32_t hash;     /* of the name and the package */
  uint16_t pkg;
  uint16_t flags;    /* JT_SE_EXTERNAL */
} jt_SymEntry;
#define JT_SE_EXTERNAL 0x0001

/* A call record: one per active function call, for backtraces and a
** pause's frames (frames.c).  A closure's activation also records where its
** variables live, so that a pause can show and change them: `fp`, its stack
** slots (jt_Lambda.locals name them), `env`, its own heap frame when its
** parameters are captured (else NIL), and `env_now`.  Primitives leave
** them empty. */
typedef struct jt_CallInfo {
  struct jt_CallInfo *prev;
  jt_V fn;
  int argc;
  jt_V *argv;  /* on the value stack, so rooted */
  jt_V *fp;    /* a closure's stack slots, or NULL */
  jt_V env;    /* a closure's own heap frame (rooted on the value stack), or NIL */
  jt_V env_now;  /* the environment of the last call it made (set by the
                    call nodes; the heap frames of its LETs hang there) */
} jt_CallInfo;

/* A dynamic binding of a special variable: restored on unwind. */
typedef struct jt_Binding {
  jt_V sym;
  jt_V old;
} jt_Binding;

/* Jump records, the one mechanism behind every non-local exit. */
enum jt_JmpKind {
  JT_JMP_TOP,       /* host entry point: catches aborts */
  JT_JMP_BLOCK,     /* block / return-from */
  JT_JMP_TAGBODY,   /* tagbody / go */
  JT_JMP_CATCH,     /* catch / throw (tag = catch tag) */
  JT_JMP_UNWIND,    /* unwind-protect: runs cleanup, then continues the exit */
  JT_JMP_HANDLER,   /* handler-case clause transfer */
  JT_JMP_RESTART,   /* restart-case clause transfer */
  JT_JMP_FRAME      /* a call a pause may return from or restart (frames.c;
                       only while S->frame_catch): tag = the called function */
};

typedef struct jt_Jmp {
  struct jt_Jmp *prev;
  jmp_buf jb;
  int kind;
  jt_V tag;                       /* identity for catch; otherwise unused */
  /* heights saved at establishment, restored on landing */
  jt_V *sp;
  jt_V *fp;
  size_t nroots;
  size_t nbind;
  struct jt_Handlers *handlers;
  struct jt_Restarts *restarts;
  jt_CallInfo *ci;
  int depth;
  int nest;                       /* analysis/macroexpansion nesting */
  /* filled by the exit that lands here */
  int code;                       /* which clause / go tag / reason */
} jt_Jmp;

/* A handler cluster (handler-bind): `list` is ((type . function) ...). */
typedef struct jt_Handlers {
  struct jt_Handlers *prev;
  jt_V list;
} jt_Handlers;

/* A restart cluster (restart-case, restart-bind): `list` of restart objects. */
typedef struct jt_Restarts {
  struct jt_Restarts *prev;
  jt_V list;
} jt_Restarts;

typedef struct jt_Restart {
  jt_Obj h;          /* aux = id, unique per state */
  jt_V name;         /* symbol or NIL */
  jt_V function;
  jt_V report;       /* string, function or NIL */
  jt_V test;         /* function or NIL */
  jt_V interactive;  /* function or NIL */
  jt_V conditions;   /* the conditions it is associated with (with-condition-restarts) */
  jt_V lambda_list;  /* restart-case: the clause's lambda list (for a pause's
                        menu); T when unknown (restart-bind) */
  jt_Jmp *jmp;       /* restart-case clause target, or NULL for restart-bind */
  int clause;
  bool active;       /* false once its establishing frame has been left */
} jt_Restart;

/* A host's watch on the call one form makes (jiti_form_eval_noting):
** when jt_eval begins that very form (compared only: its evaluation roots
** it) it takes the watch, and if the form is a call of a global function,
** calls seen once the arguments are evaluated, before the function is
** looked up and applied.  seen must run no Lisp code; it may allocate. */
typedef struct jt_CallWatch {
  jt_V form;
  void (*seen)(jt_State *S, void *ud, jt_V name, int argc, const jt_V *argv);
  void *ud;
} jt_CallWatch;

struct jt_State {
  /* ---- heap (gc.c; the generations are explained in jt_gc.h) */
  jt_Obj *objects;          /* large objects of the old generation */
  jt_Obj *young_objects;    /* large objects of the young generation */
  struct jt_Page *pages;    /* every page of small objects */
  struct jt_Page *young_pages;  /* pages allocated from since the last promotion */
  struct jt_Page *avail[JT_POOL_CLASSES];  /* pages with free slots, next to allocate from */
  struct jt_Slab *slabs;    /* the memory the pages are carved from */
  jt_Obj *freelist[JT_POOL_CLASSES];  /* free slots of the page being allocated from */
  size_t bytes_live;        /* bytes held by live objects after last GC + since */
  size_t bytes_since_gc;
  size_t gc_threshold;      /* a full collection when bytes_since_gc passes it */
  size_t live_after_full;   /* bytes_live after the last full collection */
  size_t gc_count;
  int gc_stress;            /* collect at every allocation */
  int gc_inhibit;           /* > 0: do not collect (state construction) */
  uint8_t gc_skip;          /* gcflags bits that stop marking (JT_GC_OLD in a young collection) */
  jt_Obj **gray;            /* mark stack */
  size_t ngray, graycap;
  jt_Obj **remembered;      /* old objects to rescan whole (gcflags JT_GC_REM) */
  size_t nremembered, remcap;
  struct jt_SlotRef *slotlog;  /* single slots of old containers that got young values */
  size_t nslotlog, slotlogcap;

  /* ---- roots: addresses of C locals holding values (see jt_gc.h) */
  jt_V **roots;
  size_t nroots, rootcap;

  /* ---- value stack: arguments and temporaries; everything below sp is live */
  jt_V *stack, *sp, *stack_end;
  size_t stack_slots;

  /* ---- symbols and packages (package.c) */
  struct jt_SymEntry *symtab;  /* (package, symbol) for every symbol present in a package */
  size_t nsyms, nsymdel, symcap;  /* live entries, deleted entries, slots */
  jt_V *packages;           /* index -> package object (never reused) */
  size_t npackages, pkgcap;
  jt_V package_names;       /* managed EQUAL hash: name or nickname -> package */
  jt_V nil_sym, t_sym;      /* symbol objects standing for NIL and T */
  jt_V sym[JT_S_COUNT];

  /* ---- types */
  jt_V layouts;             /* hash table: symbol -> layout */
  jt_V clos;                /* CLOS roots: classes, built-in generics (clos.c) */
  uint64_t clos_epoch;      /* bumped by every class or method change and every
                               restore: dispatch caches of older epochs are stale */
  jt_V symmeta;             /* hash table: symbol -> kernel properties (meta.c) */

  /* ---- evaluation */
  int nvals;                /* number of values of the last form */
  jt_V mv[JT_MV_LIMIT];     /* the values; mv[0] mirrors the primary */
  jt_Binding *bindings;
  size_t nbind, bindcap;
  jt_Jmp *jmp;              /* innermost jump record */
  jt_CallInfo *ci;          /* innermost call */
  jt_Handlers *handlers;
  jt_Restarts *restarts;
  uint32_t next_restart_id;
  jt_V pending;             /* value or condition carried by a non-local exit */
  jt_V *fp;                 /* stack slots of the current activation */
  const struct jt_Node *xfer_node;  /* target of a local transfer (JT_XFER) */
  int xfer_index;
  jt_V xfer_val;
  jt_V held_form;           /* the form jiti_form_read holds for jiti_form_eval */
  bool form_held;
  jt_SourceSpan held_span;  /* its text (malloc'd), for the world */
  /* Where the host's sources come from (jiti_set_source_origin): the name
  ** their reader errors give (malloc'd; NULL: "<input>"), whether it names
  ** a file, and the line and column their first byte has there. */
  char *src_name;
  bool src_is_file;
  bool src_canonical;       /* its definitions keep no text as written */
  bool src_program;         /* read as a program reads (#. evaluates): jiti run's */
  long src_line0, src_col0;
  /* The top-level form being evaluated and its text as written (text not
  ** owned: the host's source, or held_span's), or form NIL: world.c keeps
  ** a definition's text when its defining form is this one. */
  jt_V top_form;
  jt_SourceSpan top_span;
  struct jt_CallWatch *call_watch;  /* jiti_form_eval_noting's, or NULL */
  bool reads_on;            /* note what is read (reads.c, jiti_reads_begin) */
  struct jt_Reads *reads;   /* what was noted; kept between recordings */
  struct jt_ReadSeen { jt_V obj, key; int what; } reads_seen[16];  /* reads kept or known: JT_READ's filter */
  struct jt_Jmp *unwind_target;   /* exit continuing past an unwind-protect */
  int unwind_code;
  int nest;                 /* nesting of analysis inside evaluation */
  /* Loading the kernel's (or a host's) own library: %-names read and
  ** interned now are internal, and the functions analysed now are kernel
  ** code (jt_Lambda.kernel), which alone may call the guarded internals. */
  bool kernel_mode;
  uint32_t restart_floor;   /* restarts with smaller ids may not be invoked */

  /* ---- limits (0 = unlimited); see jiti.h */
  jiti_Limits limits;
  uint64_t fuel_left;       /* counts down while limits.fuel != 0 */
  int depth;                /* current call depth */
  size_t output_used;       /* characters written to host streams this call */
  char *cstack_base;        /* address near the bottom of the host's C stack */
  size_t cstack_limit;      /* bytes of C stack evaluation may use */
  bool in_limit;            /* a limit condition is being signalled */
  uint8_t limit_tripped;    /* bit per JT_LIMIT_*: tripped in this call */
  volatile sig_atomic_t cancel;  /* jiti_cancel_async: abort at the next tick */
  /* An interactive interrupt (jiti_interrupt_async, state.c): pending, it
  ** rides on the fuel counter as a cancel does, the fuel left when it came
  ** kept in fuel_saved; it is taken (the debugger, with CONTINUE) at the
  ** next evaluation step of a call the host allowed it in (interruptible),
  ** and waits through any other step. */
  volatile sig_atomic_t interrupt;
  uint64_t fuel_saved;
  bool interruptible;       /* the running host call may take an interrupt */
  bool interrupt_next;      /* jiti_allow_interrupt: the next host call may */
  struct jt_NumStop *numstop;  /* the GMP operation a signal may stop (numstop.c) */
  uint32_t work;            /* C-side steps (comparisons, calls from C): every
                               16 cost a unit of fuel (JT_WORK) */

  /* ---- I/O */
  jiti_WriteFn write_fn;
  void *write_ud;
  jt_V stdout_stream;
  jt_V stdin_stream;         /* *standard-input*: an empty string input stream */
  jt_V terminal_io;          /* *terminal-io*: a two-way stream of the two above */
  jt_V query_io;             /* *query-io*, *debug-io*: a synonym of *terminal-io* */
  void (*flush_fn)(void);    /* delivers what write_fn wrote (finish-output), or NULL */

  /* ---- traced functions (trace.c): (function . name) pairs, for one
  ** transaction; the evaluator's call tests it first */
  jt_V traced;

  /* ---- debugger hook */
  jiti_DebuggerHook debugger_hook;
  void *debugger_ud;
  int pause_depth;          /* nesting of active debugger hook calls */
  /* Frames (frames.c): with frame_catch on, every call establishes a
  ** JT_JMP_FRAME record, so that a pause can return from it or restart it.
  ** pause_ci is the innermost call when the innermost pause began (the
  ** frames of an outer pause lie below it); pause_frames, that pause's
  ** visible frames while its hook runs (a repair evaluated in a frame). */
  bool frame_catch;
  bool call_hooked;         /* frame_catch, or a function traced: the slow call path */
  jt_CallInfo *pause_ci;
  struct jt_PauseFrames *pause_frames;
  uint32_t pause_serial;    /* pauses so far: a frame form names its pause */

  /* ---- random numbers: the initial *random-state* (also a root) */
  jt_V random_state;

  /* ---- checkpoint levels (ckpt.c); ckpt_depth is 0 when none is open */
  int ckpt_depth;
  struct jt_Ckpt *ckpt;
  struct jt_CkptCheck *ckpt_check;   /* the consistency check, when on (ckptcheck.c) */

  /* ---- world layer (world.c) */
  void *world;
  void (*world_mark)(jt_State *S, void *world);  /* marks the world's roots */
  /* a definition was evaluated (jt_DefKind above) */
  void (*world_define)(jt_State *S, jt_V name, jt_DefKind kind, jt_V form, jt_V fn);
  void (*world_free)(jt_State *S);
  /* a top-level form with its text (S->top_form) has returned */
  void (*world_form_done)(jt_State *S);

  /* ---- host functions (jiti_register): index = the primitive's aux */
  struct jt_HostFn *hostfns;
  size_t nhostfns, hostfncap;

  /* ---- foreign functions (ffi.c): granted libraries, declarations */
  struct jt_FFI *ffi;

  /* ---- scratch for printing C-side messages */
  char msgbuf[512];
};

#define jt_barrier_active(S) ((S)->ckpt_depth > 0)

#endif
