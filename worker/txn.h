/*
** txn.h — the transaction layer of the jiti worker (libjitiworker).
**
** A txn_World wraps one jiti_State whose world is enabled (see
** kernel/jiti_world.h) and runs every unit of work on it as a transaction
** (docs/transactions.md):
**
**   gate -> checkpoint -> evaluate under limits -> [pause: evaluate repairs,
**   resume, abort] -> invariants -> changed entries -> goals
**   -> caller commits (txn_commit) or restores (txn_restore).
**
** Generations.  W has a generation counter, starting at 0, incremented on
** every change a view could show: a commit of changed entries, a pause, a
** resume, the restore of an attempt during which the generation moved (it
** paused), entering or leaving the faulted state.  A restore of an attempt
** that never paused brings back exactly the world views made before it
** showed, so it leaves the generation alone; so does the commit of an
** attempt that changed nothing.  Every operation that changes the world
** takes the caller's generation; a mismatch is refused with reason
** TXN_STALE, nothing executes and the world is unchanged.
**
** Ownership.  Every char * returned by this API is malloc'd and owned by
** the caller (free it), except where a comment says otherwise.  Outcomes
** are released with txn_outcome_free.
**
** Threads.  A txn_World is not thread-safe; use it from one thread.
*/
#ifndef txn_h
#define txn_h

#include <stddef.h>
#include <stdint.h>
#include "jiti.h"
#include "jiti_world.h"

typedef struct txn_World txn_World;

/* ------------------------------------------------------------- options */

typedef struct txn_Options {
  jiti_Limits limits;   /* per attempt; 0 fields take the defaults
                           of jiti_limits.h (JITI_LIMITS_FUEL ...) */
  int step_budget;      /* commands accepted while paused, per attempt
                           (evaluate + resume, refused ones included);
                           0 = default 20 */
  size_t max_source;    /* gate: largest source in bytes; 0 = 16384 */
} txn_Options;

/* ------------------------------------------------------------ outcomes */

/* The closed set of outcome reasons. */
typedef enum txn_Reason {
  TXN_ACCEPTED = 0,        /* completed; checkpoint open awaiting commit (or,
                              for a preview, restored after reporting) */
  TXN_UNSAFE,              /* an invariant failed (false, error or limit), or
                              a managed place holds an unexportable value;
                              restored */
  TXN_REJECTED_BY_GATE,    /* the form gate refused the source; nothing ran */
  TXN_REPAIR_FAILED,       /* a repair evaluated while paused hit a limit or
                              transferred control out of the pause; the
                              whole attempt restored.  (A repair that
                              signals opens a pause level instead.) */
  TXN_INVALID_ARGUMENTS,   /* the request itself is malformed (NULL source,
                              unknown kind, a transaction already in
                              progress, a bad invariant); nothing ran.  Also
                              the refusal reason of a resume whose restart id
                              is unknown/expired or whose arguments fail */
  TXN_ABORTED,             /* the caller aborted a paused attempt (or gave
                              no cmd_fn); restored */
  TXN_LIMIT,               /* fuel, depth, heap or output limit; restored */
  TXN_BUDGET_EXHAUSTED,    /* more commands while paused than the step
                              budget allows; restored */
  TXN_STALE,               /* generation mismatch; nothing ran */
  TXN_PUBLICATION_FAILED,  /* the caller restored an accepted attempt with
                              txn_restore (publication failed) */
  TXN_ERROR,               /* an application call or an operator's command
                              signalled an error and was aborted; its
                              partial writes restored */
  TXN_FAULTED,             /* the world is faulted (invalid baseline): only
                              operator operations are accepted; nothing ran */
  TXN_CANCELLED,           /* the kernel cancelled the running attempt (a
                              client's cancel, or its caller disconnected);
                              restored */
  TXN_FENCED,              /* replicated: this kernel no longer leads its
                              world (its lease lapsed, or another kernel
                              moved the fencing token); nothing of the
                              attempt was kept or acknowledged */
  TXN_REASON_COUNT
} txn_Reason;

/* "accepted", "unsafe", "rejected-by-gate", "repair-failed",
** "invalid-arguments", "aborted", "limit", "budget-exhausted", "stale",
** "publication-failed", "error", "faulted", "cancelled", "fenced" (one table: the kernel daemon,
** its worker and the store's events all use these names). */
const char *txn_reason_name(txn_Reason r);
/* The reason named s, or -1. */
int txn_reason_parse(const char *s);

/* One changed managed entry. */
typedef struct txn_Change {
  jiti_EntryKind kind;
  char *name;              /* printed name (data rows: the printed key) */
  char hash[65];           /* SHA-256 hex (jiti_entry_hash); "" if removed */
  unsigned char *bytes;    /* canonical encoding; NULL if removed */
  size_t len;
  int removed;
} txn_Change;

/* One event of the transaction's life, for the store's event log:
** type is one of "started", "paused", "repaired", "refused", "resumed",
** "completed", "restored", "committed", "goal". */
typedef struct txn_Event {
  char *type;
  char *detail;            /* free text, may be "" */
  uint64_t generation;     /* generation after the event */
} txn_Event;

typedef struct txn_GoalResult {
  char *source;
  int pass;                /* 1 pass, 0 fail (false, error or limit) */
  char *message;           /* printed value or error report */
} txn_GoalResult;

/* Why an attempt that could not pause failed on an unhandled error (an
** application call, an operator's change): what a pause would have shown,
** taken before the stack unwound. */
typedef struct txn_Diagnosis {
  char *condition_type;
  char *report;
  char *backtrace;         /* one frame per line, innermost first (bounded) */
  struct json_t *frames;   /* the same frames as data, as a pause shows them
                              (txn_frames_value: function, arguments, locals) */
  struct json_t *reads;    /* what the call read of the world's state, when
                              it was recorded (txn_reads_value), or NULL */
  int reads_more;          /* distinct reads past those listed */
  int nrestarts;
  struct txn_Restart *restarts;  /* those the attempt established, innermost
                                    first: id NULL, level 1 */
} txn_Diagnosis;

typedef struct txn_Outcome {
  txn_Reason reason;
  char *message;           /* human-readable, names the invariant, the gate
                              rule or the place; never NULL after a call */
  uint64_t generation;     /* W's generation after the operation */
  char *value;             /* prin1 of the (primary) value (bounded), or NULL */
  int nvalues;             /* with values: how many the form returned */
  char **values;           /* prin1 of each value when there are not
                              exactly one, else NULL */
  int nchanges;
  txn_Change *changes;
  int nevents;
  txn_Event *events;
  int ngoals;
  txn_GoalResult *goals;   /* evaluated only for accepted attempts */
  txn_Diagnosis *diagnosis;  /* reason TXN_ERROR from an unhandled error of
                                an attempt that could not pause; else NULL */
  /* An application call asked to note (txn_Request.note), accepted, whose
  ** form is a call of a world function: its entry name and its arguments'
  ** classes (jiti_CallNote, jiti_world.h), at most TXN_NOTE_NAME_MAX and
  ** TXN_NOTE_SIGNATURE_MAX bytes; else both NULL. */
  char *noted_function, *noted_signature;
  /* An attempt asked to park (txn_Request.park) that failed on an unhandled
  ** error: the pid of the copy the park function made at the failure,
  ** before anything unwound (txn_set_park), or 0. */
  int parked;
} txn_Outcome;

#define TXN_NOTE_NAME_MAX 480        /* the store's bound on a function's name */
#define TXN_NOTE_SIGNATURE_MAX 1024  /* and on an argument signature */

void txn_outcome_free(txn_Outcome *o);
void txn_diagnosis_free(txn_Diagnosis *d);  /* (NULL: nothing) */

/* --------------------------------------------------------- lifecycle */

/* Open a world: a fresh jiti_State with the world enabled, the gate's
** helper defined (outside the world: never exported), the debugger hook
** installed.  opt may be NULL (all defaults).  NULL on out of memory. */
txn_World *txn_open(const txn_Options *opt);
void txn_close(txn_World *W);

/* The underlying state, for import (jiti_import_entry) and export.  Do not
** evaluate on it while a transaction is in progress. */
jiti_State *txn_state(txn_World *W);

typedef enum txn_Status {
  TXN_ST_IDLE = 0,            /* ready for a transaction */
  TXN_ST_PAUSED,              /* an attempt is paused (only inside cmd_fn) */
  TXN_ST_AWAITING,            /* completed, checkpoint open: txn_commit or
                              txn_restore must follow */
  TXN_ST_FAULTED           /* invalid baseline: operator operations only */
} txn_Status;

const char *txn_status_name(txn_Status s);  /* "idle", "paused",
                                               "awaiting-commit", "faulted" */
txn_Status txn_status(txn_World *W);
uint64_t txn_generation(txn_World *W);

/* The revision number shown by txn_observe (set by the caller, who owns
** revisions: the store's chain). */
void txn_set_revision(txn_World *W, uint64_t revision);

/* The limits of every evaluation from now on — attempts, repairs,
** invariants, goals — exactly as given (0: unlimited; txn_Options' zeros
** mean the defaults instead).  A request may lower them for its own
** evaluation (txn_Request.limits). */
void txn_set_limits(txn_World *W, const jiti_Limits *limits);
void txn_get_limits(txn_World *W, jiti_Limits *limits);

/* Goal predicates for the following requests: n Lisp sources, each one
** expression that should return true.  Copied.  Evaluated after each
** accepted attempt, in the provisional world, inside a checkpoint that is
** always restored; a failing goal never rejects a safe step.  n = 0 clears. */
void txn_set_goals(txn_World *W, int n, const char *const *sources);

/* Evaluate n goal sources now against the world, each in a checkpoint that
** is always restored (the world and the generation stay as they were),
** without touching the goals of txn_set_goals.  Only when idle or faulted:
** NULL otherwise (and when n <= 0 or memory is exhausted).  Release with
** txn_goal_results_free. */
txn_GoalResult *txn_eval_goals(txn_World *W, int n, const char *const *sources);
void txn_goal_results_free(txn_GoalResult *g, int n);

/* Run every invariant against the current world (call after importing).
** Returns 0 when all hold (status idle).  Otherwise the status becomes
** TXN_ST_FAULTED (reason "invalid-baseline", generation incremented) and 1 is
** returned; `msg` (may be NULL) receives the failure.  While faulted, only
** operator operations run (txn_attempt kind TXN_OPERATOR,
** txn_invariant_add/remove); everything else gets TXN_FAULTED.  A commit
** while faulted re-runs the invariants and clears the fault when all hold. */
int txn_check_baseline(txn_World *W, char *msg, size_t msglen);

/* The world did not import whole: msg names the entry and why.  W stays
** faulted for good: queries are answered (observe shows what did import),
** every transaction and invariant operation gets TXN_FAULTED naming the
** fix (a rollback, which replaces the world); txn_check_baseline reports
** "import-failed: msg". */
void txn_set_import_fault(txn_World *W, const char *msg);

/* The encoding of an entry imported into txn_state(W) (bytes NULL: none).
** Exports list every variable and property list after each attempt that
** changed an object in place, since a value can change by mutation; txn
** reports one as changed only when its encoding differs from the one noted
** here or last committed. */
void txn_note_entry(txn_World *W, jiti_EntryKind kind, const char *name,
                    const unsigned char *bytes, size_t len);

/* ------------------------------------------------------- transactions */

typedef enum txn_Kind {
  TXN_ACTION = 0,          /* a model action */
  TXN_APPLICATION,         /* an application call (`jiti eval`) */
  TXN_PREVIEW,             /* evaluate, report, always restore */
  TXN_OPERATOR,            /* an operator command; allowed while faulted,
                              where invariants are not required to hold */
  TXN_KIND_COUNT
} txn_Kind;

/* "action", "application", "preview", "operator"; the kind named s, or -1. */
const char *txn_kind_name(txn_Kind k);
int txn_kind_parse(const char *s);

/* Pause levels: an error inside a repair evaluated at level n pauses at
** level n + 1, up to this many (at the deepest, the repair fails and the
** pause stays). */
#define TXN_MAXLEVEL 8

/* A restart offered at a pause.  `id` is pause-scoped: "p<N>-<i>" where N
** is the pause number of the level that offers it; it is refused once that
** level is left. */
typedef struct txn_Restart {
  const char *id;
  int level;               /* the pause level that offers it (1 outermost) */
  const char *name;        /* symbol name, "" for an unnamed restart */
  const char *report;
  const char *lambda_list; /* the arguments it takes ("" when unknown) */
} txn_Restart;

/* What cmd_fn sees while an attempt is paused.  Every pointer is owned by
** W and valid only during the cmd_fn call. */
typedef struct txn_View {
  uint64_t generation;     /* commands must carry this */
  int pause;               /* pause number within the attempt (1, 2, ...) */
  int level;               /* pause level: 1, or n + 1 when an error inside
                              a repair evaluated at level n paused */
  const char *condition_type;
  const char *report;
  const char *backtrace;   /* one frame per line, innermost first */
  int nframes;             /* the same frames as data: function, arguments,
                              locals (jiti.h, jiti_Frame); this level's only */
  const jiti_Frame *frames;
  int nrestarts;
  const txn_Restart *restarts;   /* only those the attempt established:
                                    this level's innermost first, then each
                                    outer level's (their `level` says) */
  int steps_used, step_budget;
  /* The result of the previous command at this pause: */
  txn_Reason refusal;      /* TXN_ACCEPTED when the previous command (if
                              any) was carried out; otherwise why it was
                              refused: TXN_STALE, TXN_REJECTED_BY_GATE,
                              TXN_INVALID_ARGUMENTS; or why the previous
                              repair came back without a value: TXN_ABORTED
                              (it signalled, and the level its error opened
                              was aborted: what it changed is restored),
                              TXN_REPAIR_FAILED (it signalled at the deepest
                              level, TXN_MAXLEVEL: restored likewise) */
  const char *error;       /* refusal message, or NULL */
  const char *last_value;  /* printed value of the previous repair, or NULL */
} txn_View;

typedef enum txn_CmdType {
  TXN_CMD_EVALUATE,
  TXN_CMD_RESUME,
  TXN_CMD_ABORT,
  TXN_CMD_RETURN_FROM_FRAME,  /* frame `frame` returns the values of `args` */
  TXN_CMD_RESTART_FRAME,      /* frame `frame` is called again */
  TXN_CMD_COUNT
} txn_CmdType;

/* "evaluate", "resume", "abort", "return-from-frame", "restart-frame"; the
** command type named s, or -1. */
const char *txn_cmd_name(txn_CmdType t);
int txn_cmd_parse(const char *s);

/* A command while paused.  Strings are copied before cmd_fn is called
** again, so they only need to live until cmd_fn's next call. */
typedef struct txn_Command {
  txn_CmdType type;
  uint64_t generation;     /* the view's generation */
  const char *source;      /* EVALUATE: one form (gated) */
  const char *restart_id;  /* RESUME: an id from view->restarts */
  const char *args;        /* RESUME: Lisp source of an expression that
                              evaluates to the argument list (gated);
                              NULL = no arguments.  RETURN_FROM_FRAME: the
                              same for the list of values to return */
  const char *package;     /* EVALUATE: the package the repair is read and
                              evaluated in; NULL = the paused action's */
  int in_frame;            /* EVALUATE: evaluate in frame `frame`'s lexical
                              environment (its locals read and set by name) */
  int frame;               /* EVALUATE with in_frame, RETURN_FROM_FRAME,
                              RESTART_FRAME: a frame of view->frames; a
                              number it does not list is refused
                              (TXN_INVALID_ARGUMENTS), as is a frame the
                              kernel cannot return to */
} txn_Command;

/* Called while paused to get the next command.  Fill *cmd and return 0;
** a non-zero return aborts the attempt.  cmd_fn may call txn_observe and
** txn_inspect; it must not start another transaction. */
typedef int (*txn_CommandFn)(void *ud, const txn_View *view, txn_Command *cmd);

/* Run `source` as a transaction of kind `kind`.
**
** Refused before anything runs: TXN_INVALID_ARGUMENTS (NULL W/source/out,
** unknown kind, status paused or awaiting commit), TXN_STALE (generation !=
** W's), TXN_FAULTED (faulted world, kind != TXN_OPERATOR),
** TXN_REJECTED_BY_GATE (see gate.c and docs/transactions.md: one form,
** <= 16 KiB, that reads (#. never evaluates; a package prefix must name a
** package of the world), no kernel-internal symbol, no shared or circular
** literal (#n= / #n#), no format directive ~/.../ in a string literal).
**
** Otherwise a checkpoint is opened and the form evaluated under the limits.
** An unhandled error pauses (generation++) when cmd_fn is given: cmd_fn is
** called until it resumes or aborts; without cmd_fn the attempt aborts at
** once.  Ends:
**   TXN_ACCEPTED            completed, invariants hold, changes exported;
**                           status TXN_ST_AWAITING (checkpoint still open) —
**                           except TXN_PREVIEW: restored (as a failure),
**                           status back to idle, changes reported anyway
**   TXN_UNSAFE, TXN_REPAIR_FAILED, TXN_ABORTED, TXN_ERROR (application calls
**   and operator commands instead of TXN_ABORTED), TXN_LIMIT,
**   TXN_BUDGET_EXHAUSTED
**                           restored (generation++ only if the attempt
**                           paused), status idle/faulted
** out->value holds the printed value for TXN_ACCEPTED.  Always fills *out
** (free it with txn_outcome_free) and returns out->reason. */
txn_Reason txn_attempt(txn_World *W, uint64_t generation, const char *source,
                       txn_Kind kind, txn_CommandFn cmd_fn, void *ud,
                       txn_Outcome *out);

/* txn_attempt with more to say: the whole request. */
typedef struct txn_Request {
  txn_Kind kind;
  uint64_t generation;
  const char *source;
  int program;               /* source is any number of forms, evaluated in
                                order as one transaction (an operator's
                                file, `jiti eval --file`): the gate checks
                                every form, and allows up to TXN_PROGRAM_MAX
                                bytes instead of the single form's limit */
  const jiti_Limits *limits; /* the evaluation's limits (NULL: the world's);
                                invariants always run under the world's */
  const char *package;       /* the package the source is read and evaluated
                                in (NULL: the world's current package).  The
                                world's current package stays as it was: an
                                in-package in such a source changes the
                                attempt's binding only.  No package of that
                                name: TXN_INVALID_ARGUMENTS, nothing ran */
  int listening;             /* a listener's form (jiti repl): it sets the
                                history variables *, +, / ... as it returns
                                (jiti_form_eval_listening); one form only */
  int no_invariants;         /* accepted without running the invariants: a
                                candidate applied in a shadow, whose
                                invariants are then run one by one
                                (txn_invariants_each) to say which fail */
  int note;                  /* an application call's form (not a
                                listener's, nor a program): note the call of
                                a world function it makes, for the outcome
                                (txn_Outcome.noted_function); evaluated
                                exactly as without */
  const char *origin_file;   /* where the source was written, for the
                                positions of its reader errors and the
                                definitions it makes (jiti_set_source_origin):
                                a file's name, NULL: "<input>" */
  long origin_line, origin_column;   /* of the source's first byte (0: 1) */
  int canonical;             /* its definitions keep no text as written (a
                                model's change: docs/world.md, "Source as
                                written") */
  int reads;                 /* an application call: record what it reads of
                                the world's state for its diagnosis
                                (txn_Diagnosis.reads) */
  int park;                  /* an application call that cannot pause: on an
                                unhandled error, call the park function
                                (txn_set_park) before the stack unwinds */
} txn_Request;

/* What copies the world at a failure, before it unwinds: the worker's
** parked shadows (shadow.c).  Returns the copy's pid in the caller, 0 in
** the copy (which then unwinds and ends the attempt like the caller,
** txn_Outcome.parked 0), -1 when no copy was made. */
typedef int (*txn_ParkFn)(void *ud);
void txn_set_park(txn_World *W, txn_ParkFn fn, void *ud);

#define TXN_PROGRAM_MAX ((size_t)16 << 20)

txn_Reason txn_run(txn_World *W, const txn_Request *rq, txn_CommandFn cmd_fn, void *ud,
                   txn_Outcome *out);

/* Keep an accepted attempt (after publishing it): closes the checkpoint,
** generation++ when it changed entries, status idle (or faulted if still
** invalid).  With several attempts awaiting (txn_set_stacking) this keeps
** the OLDEST one — revisions are published in the order the attempts ran —
** and the others go on awaiting (status stays TXN_ST_AWAITING).  Returns 0,
** or -1 (nothing done) when the status is not TXN_ST_AWAITING or an attempt
** is running. */
int txn_commit(txn_World *W);

/* The same, for an attempt whose changes turned out to be no change (the
** store holds identical entries already: e.g. a definition evaluated again
** unchanged): the generation stays, since no view could tell. */
int txn_commit_unchanged(txn_World *W);

/* Keep the NEWEST accepted attempt at once, which changed no entry (a
** read-only call: nothing to publish): its checkpoint folds into the
** awaiting attempt below it, so that it stands or falls with that one (it
** may have read what that one wrote); with none below, as txn_commit.
** Returns 0, or -1 (nothing done) when nothing awaits, an attempt is
** running, or the newest awaiting attempt changed entries. */
int txn_keep_unchanged(txn_World *W);

/* Undo only the NEWEST accepted attempt awaiting its commit; those below
** it go on awaiting theirs (a shadow's call, run on top of the candidate it
** verifies and undone after: worker/shadow.c).  Returns 0, or -1 when
** nothing awaits or an attempt is running. */
int txn_restore_newest(txn_World *W);

/* Undo EVERY accepted attempt awaiting its commit (publication failed: the
** failed revision and all that ran on top of it): restores their
** checkpoints newest first, status idle; generation++ only if the
** generation moved while one of them ran (it paused).  Fills
** *out (may be NULL) with reason TXN_PUBLICATION_FAILED.  Returns 0, or -1
** when not TXN_ST_AWAITING or an attempt is running. */
int txn_restore(txn_World *W, txn_Outcome *out);

/* ------------------------------------------------- provisional attempts
**
** A host that publishes revisions in groups (one durable commit for many)
** lets later attempts run before the earlier ones are durable: up to n
** accepted attempts await their commit at once, each in its own
** checkpoint on top of the one before (default n = 1: none on top).  While
** fewer than n await, txn_attempt, txn_run and the invariant operations
** may start; each sees the world as the awaiting attempts left it, and
** reports only its own changes (against the newest awaiting attempt, not
** against the last commit).  txn_commit keeps them oldest first;
** txn_restore undoes all of them; txn_keep_unchanged keeps a newest one
** that changed nothing.  Nothing starts on top of awaiting attempts in a
** faulted world.
**
** Provisional state is visible to whatever runs in the world —
** txn_observe, txn_inspect, later attempts — so a host must not show any
** of it to a client before the commits below it are durable (the kernel
** daemon holds such replies; docs/transactions.md). */
void txn_set_stacking(txn_World *W, int n);
/* The largest entry (its store encoding: kind, name length, name, bytes)
** the world may publish; 0 (the default): the store's own bound.  A change
** larger is refused unsafe ("unexportable: ...", naming the entry and the
** bound) and the attempt restored: a replicated world's entry must fit one
** etcd request. */
void txn_set_entry_max(txn_World *W, size_t n);
/* How many accepted attempts await their commit. */
int txn_awaiting(txn_World *W);

/* -------------------------------------------------------- invariants */

/* Operator operations.  Each is a transaction: it leaves the checkpoint open
** with status TXN_ST_AWAITING and one changed `invariant` entry; the caller
** commits or restores as for an attempt.  txn_invariant_add refuses
** (TXN_INVALID_ARGUMENTS) a source that is not one form; outside the faulted
** state it refuses (TXN_UNSAFE) an invariant set that does not hold.
** txn_invariant_remove: TXN_INVALID_ARGUMENTS for an unknown name.  Both:
** TXN_STALE, TXN_INVALID_ARGUMENTS while a transaction is in progress. */
txn_Reason txn_invariant_add(txn_World *W, uint64_t generation, const char *name,
                             const char *source, txn_Outcome *out);
txn_Reason txn_invariant_remove(txn_World *W, uint64_t generation, const char *name,
                                txn_Outcome *out);
/* Run every invariant against the world as it is now (awaiting attempts
** included) under the world's limits, in a checkpoint that is always
** restored, as a commit would run them, but on past a failure: `each` gets
** the name and the message of every invariant that fails.  0 when all
** hold, else how many failed. */
int txn_invariants_each(txn_World *W, void (*each)(void *ud, const char *name, const char *message), void *ud);
/* JSON array [{"name","source","hash"}] of the invariants (caller frees). */
char *txn_invariant_list(txn_World *W);

/* -------------------------------------------------------------- views */

/* The world as JSON (caller frees), at most about budget_bytes (0 = 64 KiB):
** {"generation","revision","status","counts":{kind:n},
**  "entries":[{"kind","name","hash","text"}]       non-data entries
**  "data":{"count","rows":[{"key","hash","value"}]},
**  "invariants":[{"name","hash","source"}], "last_invariant_check":{ok,message},
**  "goals":[{"source","pass","message"}],
**  "truncated": {"summarized": n, "omitted": n},
**  "pause": {...} when paused: condition_type, report, backtrace,
**           restarts [{id,name,report}], steps_used, step_budget,
**  "foreign": txn_foreign_value's, when a library is granted or a foreign
**           declaration is unavailable}
** Past the budget entries carry only name and hash; past twice the budget
** they are only counted (truncated.omitted). */
char *txn_observe(txn_World *W, size_t budget_bytes);

/* One entry in full as JSON {"kind","name","hash","text"}, or NULL when
** there is no such entry.  kind is "function", "data", ... (see
** jiti_entry_kind_name); for data rows name is the printed key.  A foreign
** declaration that cannot be called also has "unavailable": why. */
char *txn_inspect(txn_World *W, const char *kind, const char *name);

/* The same three as jansson values (the caller decrefs; NULL where the
** text versions return NULL), for a host that sends them on as JSON. */
struct json_t;
struct json_t *txn_observe_value(txn_World *W, size_t budget_bytes);
struct json_t *txn_inspect_value(txn_World *W, const char *kind, const char *name);
struct json_t *txn_invariant_list_value(txn_World *W);

/* The completions of text, a symbol as typed (NAME, :NAME, PKG:NAME,
** PKG::NAME): an array of strings written as they complete text (lower
** case, with its package prefix), at most 200; empty while a transaction
** runs or is paused (complete.c). */
struct json_t *txn_complete(txn_World *W, const char *text);

/* The world's foreign functions: {"granted": [library...] (opened, in
** grant order), "unavailable": [{"name","library","symbol","reason"}]}
** (jiti_foreign_grant, jiti_foreign_unavailable). */
struct json_t *txn_foreign_value(txn_World *W);

/* A pause's frames as JSON: [{"frame", "function", "args": [text...],
** "locals": [{"name", "value"}]}] (the kernel bounds every text,
** JITI_FRAME_*). */
struct json_t *txn_frames_value(int n, const jiti_Frame *frames);

/* What the application call being evaluated on S read so far
** (jiti_reads_describe): [{"kind", "name", "object" (a slot's), "value"}],
** with *more set to the distinct reads past JITI_READS_MAX; NULL when it
** read nothing of the world's state (or recorded nothing). */
struct json_t *txn_reads_value(jiti_State *S, int *more);

/* The form gate's rules: one row per refusal (gate.c).  what: what it
** refuses, a line of Markdown (docs/transactions.md lists the rows, and the
** model's reference embeds that list); reason: the refusal's words, {1}
** and {2} standing for its arguments. */
typedef enum txn_GateRuleId {
  TXN_GATE_SIZE, TXN_GATE_NO_FORM, TXN_GATE_MORE_FORMS, TXN_GATE_UNREADABLE, TXN_GATE_NO_PACKAGE,
  TXN_GATE_LABELS, TXN_GATE_SHARED, TXN_GATE_TOO_LARGE, TXN_GATE_INTERNAL, TXN_GATE_FORMAT_CALL,
  TXN_GATE_FOREIGN, TXN_GATE_THROW, TXN_GATE_RULE_COUNT
} txn_GateRuleId;
typedef struct txn_GateRule { const char *name, *what, *reason; } txn_GateRule;
const txn_GateRule *txn_gate_rule(txn_GateRuleId id);   /* NULL out of range */
/* Every rule as a Markdown list, one "- `NAME`: WHAT;" line each, the last
** ending with a full stop (malloc'd; NULL on out of memory). */
char *txn_gate_rules_markdown(void);

/* The gate alone (used by txn_attempt, commands and tests): 0 when `source`
** may be evaluated, else 1 with the reason in `reason`. */
int txn_gate(txn_World *W, const char *source, char *reason, size_t reasonlen);

#endif
