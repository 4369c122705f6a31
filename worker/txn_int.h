/* txn_int.h — internals shared by txn.c, gate.c and view.c. */
#ifndef txn_int_h
#define txn_int_h

#include "txn.h"

#define TXN_MAXR 64      /* restarts shown per pause */

/* One pause level: the pause itself and the repair being evaluated from it
** (an error inside that repair opens the next level). */
typedef struct txn_PauseInfo {
  int active;
  int pause;              /* its pause number within the attempt */
  int repair_open;        /* a repair is being evaluated from this level */
  int escape_flag;        /* set by %TXN-ESCAPED (cleanup of that repair) */
  int resume_pending;     /* a restart decision was handed to the kernel */
  char *condition_type, *report, *backtrace;
  int nframes;            /* the kernel's, valid while its hook runs */
  const jiti_Frame *frames;
  int nrestarts;
  txn_Restart restarts[TXN_MAXR];
  uint32_t kernel_ids[TXN_MAXR];
  char *ids[TXN_MAXR], *names[TXN_MAXR], *reports[TXN_MAXR], *lambdas[TXN_MAXR];
} txn_PauseInfo;

struct txn_World {
  jiti_State *S;
  jiti_Limits lim;
  int budget;
  size_t max_source;
  uint64_t gen, revision;
  uint64_t gen0;          /* the generation when the running attempt
                             began: a restore moves the generation only if
                             it moved since (a pause was seen) */
  txn_Status status;      /* idle / awaiting / faulted (paused is derived) */
  int faulted;

  /* Accepted attempts awaiting their commit, oldest first: each one's
  ** checkpoint is still open, the newest innermost (levels[i] is
  ** checkpoint depth i + 1).  At most max_levels (txn_set_stacking). */
  struct txn_Level *levels;
  int nlevels, caplevels, max_levels;
  size_t entry_max;   /* an entry's largest encoding it may publish (0: the store's bound) */
  int depth;              /* checkpoint depth of the running attempt */

  /* the attempt in progress */
  int in_txn;             /* an attempt/operation is running */
  int pausable;           /* the hook may pause (evaluation of the form) */
  int park_asked;         /* the attempt's request asked to park (txn_Request.park) */
  int parked;             /* ... and a copy was made: its pid */
  txn_ParkFn park_fn;     /* txn_set_park */
  void *park_ud;
  txn_Kind kind;
  txn_CommandFn cmd_fn;
  void *ud;
  uint32_t watermark;     /* restart ids <= this existed before the attempt */
  int npauses, steps;
  int hook_level;         /* pause levels open: plev[0 .. hook_level) */
  int escaped;            /* a repair transferred control out of the pause */
  int level_aborted;      /* the innermost level was left by an abort */
  int target_level;       /* resuming a restart of this outer level (0: none) */
  int target_index;       /* ... its index in that level's menu */
  int ended;              /* the attempt decided to end (abort) */
  txn_Reason end_reason;
  char *end_msg;
  char *repair_src;       /* the wrapped repair being evaluated */
  char *resume_args;      /* kept until the kernel evaluated them */
  txn_Diagnosis *diag;    /* an unpausable attempt's unhandled error */
  txn_PauseInfo plev[TXN_MAXLEVEL];  /* the pause levels, outermost first */
  txn_Restart menu[TXN_MAXLEVEL * TXN_MAXR];  /* every level's restarts,
                                                 innermost level first */

  /* events of the current operation */
  txn_Event *events;
  int nevents, capevents;

  /* goals and last results */
  char **goals;
  int ngoals;
  txn_GoalResult *goal_results;  /* last results, ngoals of them or NULL */
  int have_goal_results;

  /* last invariant check */
  int inv_checked, inv_ok;
  char *inv_msg;
  char *import_fault;     /* the world did not import whole: why (txn_set_import_fault) */

  /* Entry hashes of the variables and property lists (keyed "plist:NAME")
  ** as last committed (or imported): the kernel exports every one that may
  ** have changed after each attempt (their values can change by mutation),
  ** and only those whose encoding changed are reported.  Open addressing,
  ** capvars a power of two. */
  struct txn_VarHash *vars;
  size_t nvars, capvars;
  struct txn_VarHash *pend;  /* variables the running attempt changed */
  int npend, cappend;
};

/* An accepted attempt awaiting its commit. */
typedef struct txn_Level {
  int changes;             /* entries it changed */
  int moved;               /* the generation moved while it ran (it paused) */
  struct txn_VarHash *vars;  /* the new hashes of the variables it changed */
  int nvars;
} txn_Level;

typedef struct txn_VarHash {
  char *name;
  char hash[65];           /* "" = removed / unknown */
} txn_VarHash;

/* The innermost open pause level, or NULL when not paused. */
static inline txn_PauseInfo *txn_pause_now(txn_World *W) {
  return W->hook_level > 0 && W->plev[W->hook_level - 1].active ? &W->plev[W->hook_level - 1] : NULL;
}

/* txn.c: every open level's restarts into W->menu, innermost level
** first; returns how many. */
int txn_menu(txn_World *W);

/* gate.c; txn_library_install loads a helper library of the transaction
** layer's own (what names it in the message when it does not load): 0, or -1 */
int txn_library_install(jiti_State *S, const char *lisp, const char *what);
int txn_gate_install(jiti_State *S);
/* complete.c: the completion helper, loaded with the gate.  0, or -1. */
int txn_complete_install(jiti_State *S);
int txn_gate_run(txn_World *W, const char *source, const char *package, int repair, char *reason, size_t n);
/* The gate for an attempt's one form (not a repair): 0 when it may run,
** then with *held set when the kernel holds the form it checked
** (jiti_form_read: evaluate it with jiti_form_eval, not the source again);
** 1 refused, with the reason. */
int txn_gate_form(txn_World *W, const char *source, int *held, char *reason, size_t n);
/* Whether every form of source reads, placed where the request's origin
** says: 0, or 1 with the refusal (unreadable, the reader's report) in
** reason. */
int txn_gate_read_check(txn_World *W, const char *source, int all, char *reason, size_t n);

/* helpers */
char *txn_strdup(const char *s);
char *txn_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *txn_string_literal(const char *s);

#endif
