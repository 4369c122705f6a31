/*
** engine.h — the one transaction engine's controller half, shared by the
** store commands (offline/) and the kernel daemon (daemon/): the limits
** table, the publish step, the records of an attempt, and the store as
** both use it (opening it with a clear message, REV syntax, revisions' maps
** and the order of their import into a world, attempt numbers).  The other
** half is the worker (worker/txn.h: gate, checkpoint, limits, invariants),
** which both run as a sandboxed process (workerproc.h).  Internal to the
** controller.
**
** Errors, one convention for all of it: nothing here prints, the callers
** (the commands, the kernel) do.  A function that can fail returns a code
** — 0 on success (STORE_OK or EXIT_OK where the code is one of those),
** anything else documented with it — or a pointer that is
** NULL on failure, and writes why into a buffer the caller passes (err,
** errlen; CLI_MSG_MAX holds any): lines for people, naming the fix where
** there is one, without the "jiti CMD: " the caller puts in front.  The
** results that have several parts carry that message in a member
** (publish_Result.error, vouch_Fail's rule and detail).
*/
#ifndef jiti_engine_h
#define jiti_engine_h

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "jiti.h"
#include "jiti_world.h"
#include "jiti_limits.h"
#include "store.h"
#include "proto.h"

struct json_t;
struct jtext_writer;

/* ---- storeio.c */

/* Open the store in dir (it must exist).  writer: take the write lock.
** NULL on failure, with the message (and the way out, when there is one)
** in err. */
store_env *storeio_open(const char *dir, int writer, char *err, size_t errlen);
/* After the message of a failed store_open (rc): the way out, for the
** failures that have one of their own (a damaged journal), as a line of its
** own into buf; "" for the rest. */
void storeio_open_hint(const char *dir, int rc, char *buf, size_t n);

/* Resolve a REV argument against CURRENT: a positive decimal number,
** "previous" (CURRENT-1), "HEAD" (CURRENT) or "HEAD~N".  Returns EXIT_OK
** with *rev set, EXIT_USAGE for malformed text, EXIT_FAIL for a revision
** that does not exist (with the message in err). */
int storeio_resolve_rev(store_env *s, const char *text, uint64_t *rev, char *err, size_t errlen);

/* ISO 8601 UTC time of ms since the epoch into buf (at least 32 bytes). */
void storeio_iso_time(int64_t ms, char *buf, size_t len);

/* An incident as JSON (docs/repair.md): {id, status, function, condition,
** definition (hex), count, first, last (ISO times), revision}; full adds
** evidence, arguments, log [{time, kind, entry}] and log_dropped.  NULL when
** out of memory. */
struct json_t *storeio_incident_json(const store_incident *inc, int full);

/* Kind conversions between the kernel (jiti_EntryKind) and the store. */
int storeio_store_kind(jiti_EntryKind k);
int storeio_kernel_kind(int store_kind);   /* -1 if unknown */

/* One entry of a map held in memory. */
typedef struct storeio_entry {
  int kind;            /* store kind */
  char *name;
  unsigned char *bytes;
  size_t len;
  uint8_t hash[32];
} storeio_entry;

typedef struct storeio_map {
  storeio_entry *v;
  size_t n, cap;
  int with_bytes;       /* set before loading: copy the bytes too */
  int only_kind;        /* set before loading: keep only this store kind (0: all) */
  struct storeio_chunk *chunks;  /* names and bytes live here */
} storeio_map;

/* Load revision rev's map (STORE_REV_CURRENT for the current one), in the
** store's (kind, name) order.  Returns a store_err. */
int storeio_map_load(store_env *s, uint64_t rev, storeio_map *m);
void storeio_map_free(storeio_map *m);

/* The store kinds of a revision's import (which: STOREIO_IMPORT_ALL,
** _NO_INVARIANTS, _ONLY_INVARIANTS) in the kernel's import order (packages,
** types, foreign declarations, macros, functions, variables, generic
** functions, methods, data, invariants: see jiti_export_all); how many.
** A worker started from a revision gets its entries in this order
** (workerproc.h). */
enum { STOREIO_IMPORT_ALL, STOREIO_IMPORT_NO_INVARIANTS, STOREIO_IMPORT_ONLY_INVARIANTS };
size_t storeio_import_kinds(int which, int kinds[JITI_ENTRY_KIND_COUNT]);

/* Revision rev's changes as clients see them: [{kind, name, removed,
** added?}] (empty when the manifest cannot be read). */
struct json_t *storeio_revision_changes(store_env *s, uint64_t rev);

/* Count a manifest's changes: added, changed, removed. */
void storeio_count_changes(const store_manifest *man, size_t *added, size_t *changed,
                       size_t *removed);

/* The next attempt number: one more than the largest ever recorded
** (store_next_attempt, O(1)); 1 when the store cannot say. */
uint64_t storeio_next_attempt(store_env *s);

/* Append an event built from a jansson object (stolen; NULL: nothing to
** append).  STORE_OK, or the store's error with its message in err: the
** callers warn, and go on. */
int storeio_event(store_env *s, struct json_t *obj, char *err, size_t errlen);

/* ---- limits.c: one table of limits for every transaction */

/* The defaults are jiti_limits.h's, the worker's too. */
typedef struct limits_Table {
  jiti_Limits eval;        /* the form's evaluation, its repairs, the
                              invariants and goals: 0 = unlimited */
  double pause_timeout;    /* seconds a pause may wait for an answer */
  unsigned given;          /* which were set by an option: bit 0 fuel,
                              1 depth, 2 heap, 3 output, 4 pause timeout */
} limits_Table;

/* The option lines of --help for the four evaluation limits, and for
** --pause-timeout. */
extern const char LIMITS_HELP[];
extern const char LIMITS_PAUSE_HELP[];

void limits_default(limits_Table *L);

/* If argv[*i] is --fuel N, --depth N, --heap BYTES, --output N (or, with
** pause, --pause-timeout SECONDS), consume it into L and return 1; -1 with
** a message in err for a bad value; 0 for another argument. */
int limits_option(int argc, char **argv, int *i, limits_Table *L, int pause, char *err, size_t errlen);

/* {fuel, depth, heap, output} */
struct json_t *limits_json(const jiti_Limits *l);

/* The evaluation limits options set, as a request's "limits" member (NULL
** when none was). */
struct json_t *limits_given_json(const limits_Table *L);

/* A request's "limits" member (NULL: none) over base into *out: each member
** optional, a non-negative integer, 0 = unlimited.  cap: none may exceed
** base's (0 in base is unlimited).  0, or -1 with a message in err. */
int limits_from_json(struct json_t *o, const jiti_Limits *base, int cap, jiti_Limits *out, char *err,
                     size_t n);

/* ---- grant.c: the C libraries the operator grants a world (--allow-foreign) */

#define GRANT_MAX 32

/* The libraries, in the order granted, without repeats; the strings are
** borrowed (argv's). */
typedef struct grant_List {
  const char *lib[GRANT_MAX];
  size_t n;
} grant_List;

/* The option line of --help for --allow-foreign. */
extern const char GRANT_HELP[];

/* Grant lib (borrowed) once.  0, or -1 with a message in err: an empty name
** or one holding a newline, more than GRANT_MAX libraries, or more than a
** manifest's STORE_FOREIGN_MAX bytes in all. */
int grant_add(grant_List *g, const char *lib, char *err, size_t errlen);

/* If argv[*i] is --allow-foreign LIB, consume it into g and return 1; -1
** with a message in err for a missing or refused LIB; 0 for another
** argument. */
int grant_option(int argc, char **argv, int *i, grant_List *g, char *err, size_t errlen);

/* The grant as a manifest records it (store_rev_info.foreign): each
** library followed by '\n'; "" for none.  n: at least STORE_FOREIGN_MAX+1. */
void grant_manifest(const grant_List *g, char *buf, size_t n);

/* The libraries as a JSON array (g may be NULL: empty). */
struct json_t *grant_json(const grant_List *g);

/* ---- publish.c: an accepted attempt's changes become a revision */

typedef struct publish_Result {
  int code;                 /* STORE_OK, or what store_publish returned */
  uint64_t revision;        /* CURRENT after: the new revision, or the parent */
  int changed;              /* a revision was written */
  struct json_t *changes;   /* [{kind, name, removed, added?}] against CURRENT
                               before; the caller owns it (NULL on failure) */
  uint64_t first_event;     /* the sequence number of events[0] */
  char error[1024];         /* the store's message when code != STORE_OK */
} publish_Result;

/* Publish what an outcome frame reports (changes: its "changes" array;
** blob: the entry bytes) on top of parent, with info (kind, summary, and
** the generation after the commit: info->generation) and
** events[0..nevents), then the attempt's outcome event `accepted` (may be
** NULL; stolen) completed with its revision and generation, all in the same
** LMDB transaction: a revision is never durable without the records of the
** attempt that made it.  Entries identical to CURRENT's and removals of keys
** CURRENT lacks are no change; when nothing changes only the events are
** written (and the generation after is info->generation - 1: the worker
** keeps the attempt without moving it).  incident: 0, or the incident a
** repair's revision repairs (info->kind STORE_REV_REPAIR), moved from
** verifying to repaired in the same transaction
** (store_publish_group_incidents), or to tentative when tentative is 1
** (a repair awaiting promotion).  Returns r->code: STORE_OK,
** STORE_EINVAL (a malformed change), or a store error (nothing written;
** STORE_ECONFLICT: the incident is no longer verifying). */
int publish_outcome(store_env *s, uint64_t parent, const store_rev_info *info, struct json_t *changes,
                    const unsigned char *blob, size_t bloblen, struct json_t *const *events,
                    const int64_t *times, size_t nevents, struct json_t *accepted, uint64_t incident,
                    int tentative, publish_Result *r);

/* The entries and removals an outcome frame reports (its "changes" and the
** blob of their encodings), for the store: ch[0..*nc) and rm[0..*nr) (room
** for as many as there are changes); slot[i] receives where the store
** reports the effect of change i (store_rev_in.effects: the entries', then
** the removals').  Names point into changes, bytes into blob.  0, or -1
** when a change is malformed. */
int publish_entries(struct json_t *changes, const unsigned char *blob, size_t bloblen, store_entry *ch,
                    size_t *nc, store_key *rm, size_t *nr, size_t *slot);

/* The changes as clients see them ([{kind, name, removed, added?}]), from
** what the store did with each (effects, found through slot); _write
** writes the same array as text into w (jtext.h), for a reply written as
** text. */
struct json_t *publish_effects(struct json_t *changes, const size_t *slot, const uint8_t *effects);
void publish_effects_write(struct jtext_writer *w, struct json_t *changes, const size_t *slot,
                           const uint8_t *effects);

/* The changes as clients see them (as publish_Result.changes), without
** publishing: a preview's.  s is read only when changes is not empty. */
struct json_t *publish_brief(store_env *s, struct json_t *changes);

/* ---- vouch.c: the kernel trusts no frame (docs/worker-frames.md, "What
** the kernel checks").  Each check returns 0, or -1 with f filled: the
** rule the frame broke and what was seen (escaped, for the log; a client
** is told the rule only).  The caller kills the worker on -1. */

#define VOUCH_GENERATION_MAX ((uint64_t)1 << 53)  /* no generation reaches it (JSON's exact integers) */
#define VOUCH_NAME_MAX 8192                       /* bytes of an entry's name (written at most 4096) */

/* The rules, named in logs and in the client's message. */
extern const char VOUCH_SYNTAX[], VOUCH_SHAPE[], VOUCH_EVENT[], VOUCH_REASON[], VOUCH_STATUS[], VOUCH_GENERATION[],
    VOUCH_REVISION[], VOUCH_PAUSE[], VOUCH_KIND[], VOUCH_LENGTHS[], VOUCH_ENTRY[], VOUCH_HASH[], VOUCH_GRANT[],
    VOUCH_INVARIANT[], VOUCH_PROCESS[], VOUCH_NOTE[];

typedef struct vouch_Fail {
  const char *rule;      /* one of the VOUCH_ names */
  char detail[640];      /* what broke it, escaped: for the log */
} vouch_Fail;

/* The entry kinds an outcome of a request of op may change, a bit per
** jiti_EntryKind: the one table (call, act, preview, apply: all but
** invariants; invariant-add and invariant-remove: invariants, the one
** named; a rollback's changes are the kernel's own, from the store;
** queries none). */
unsigned vouch_may_change(proto_Op op);

/* What the kernel expects of the worker's next frame, from its own count. */
typedef struct vouch_Expect {
  proto_Op op;              /* the request it answers */
  const char *invariant;    /* invariant-add/-remove: the name the operator gave */
  uint64_t gen;             /* the worker's generation before it, as the kernel counts */
  unsigned steps;           /* the generations it may carry: gen + k for each bit k */
  int pausable;             /* the request may pause (an act) */
  int pause_no;             /* the pause the kernel saw last (0: none) */
  int pause_max;            /* the highest pause number of the attempt: leaving
                            ** levels shows an earlier pause, a new one is next */
  int with_gen;             /* the request carried a generation (stale is possible) */
  int stacked;              /* a call of a group commit: it may leave others awaiting */
  int noting;               /* a call the worker was asked to note ("note": the
                            ** outcome's "noted" is allowed, if it succeeded) */
  int reads;                /* ... to record the reads of ("reads": a diagnosis
                            ** may list them) */
  int park;                 /* ... to park at a failure ("park": the outcome's
                            ** "parked") */
} vouch_Expect;

/* Entries are decoded in a world of the checker's own, opened at first
** use; grant: the libraries a foreign declaration may name (borrowed). */
typedef struct vouch_Checker {
  jiti_State *S;
  const grant_List *grant;
} vouch_Checker;
int vouch_checker_open(vouch_Checker *c, char *err, size_t errlen);
void vouch_checker_close(vouch_Checker *c);

/* ready: a worker started with generations from base, granted g. */
int vouch_ready(struct json_t *m, uint64_t base, const grant_List *g, vouch_Fail *f);
/* paused: only for a pausable request; its generation and pause number. */
int vouch_paused(struct json_t *m, const vouch_Expect *x, vouch_Fail *f);
/* outcome (blob: the entry bytes): reason, status, generation, and every
** change — its kind allowed for x->op, its bytes decoding as its kind and
** name (jiti_entry_check), its hash if claimed, a foreign declaration's
** library granted, the lengths adding up to the blob; a note ("noted")
** only of a successful call the kernel asked to note, within its bounds. */
int vouch_outcome(vouch_Checker *c, struct json_t *m, const unsigned char *blob, size_t bloblen,
                  const vouch_Expect *x, vouch_Fail *f);
/* committed / restored: the answer wanted, its generation. */
int vouch_decided(struct json_t *m, int want, const vouch_Expect *x, vouch_Fail *f);  /* want: a wire_Event */
/* the answer to a query (observe: view, with x's generation and revision
** CURRENT; inspect: entry; invariant-list: invariants). */
int vouch_answer(struct json_t *m, int query, const vouch_Expect *x, uint64_t revision, vouch_Fail *f);  /* query: a wire_Op */

/* the answer to a shadow frame: shadowed {pid}, or error {message}. */
int vouch_shadowed(struct json_t *m, vouch_Fail *f);
/* A shadow's report (docs/worker-frames.md, "Shadows"): its members and
** their types, results that are a value or a failure of the vocabulary,
** changes of entry kinds, nreplay replayed requests (those that were
** sent), nothing of a candidate that did not apply.  The shadow ran the
** candidate: a report that passes says what the candidate made it say. */
int vouch_report(struct json_t *m, size_t nreplay, vouch_Fail *f);

/* s[0..n) for a log line: printable ASCII as is, anything else \xNN,
** cut with "..." to fit len. */
void vouch_escape(const char *s, size_t n, char *buf, size_t len);

/* ---- request.c: a client request (docs/protocol.md), of op op, as the
** engine runs it */

/* Its "source" (an act's action's), "" when it has none. */
const char *request_source(struct json_t *req);

/* Whether an unhandled error pauses it — an act, or a call that asked
** "on_error": "pause" — and so whether it may be interrupted (jiti
** interrupt). */
int request_pausable(proto_Op op, struct json_t *req);

/* s on one line (newlines and tabs as spaces), cut to fit n with "...". */
void request_snippet(const char *s, char *buf, size_t n);

/* The worker frame that runs it (docs/worker-frames.md): an invariant
** frame, or an attempt of the kind the op is (call: application, preview,
** apply: operator and a program of forms, act: action), pausable as
** request_pausable says, with the request's limits (already checked and complete) and, if
** with_gen, the generation it must find.  NULL when out of memory.
** request_frame_write writes the same frame as text into w (jtext.h): the
** kernel's hot path, which sends it without making it an object first;
** note is a set of REQUEST_NOTE_* bits: what a call's attempt asks the
** worker to note — the call of a world function its form makes ("note":
** true; the outcome's "noted"), what it reads of the world's state
** ("reads": true; a diagnosis' "reads"), a copy of the world made at its
** failure ("park": true; the outcome's "parked", shadow.c). */
enum { REQUEST_NOTE_CALL = 1, REQUEST_NOTE_READS = 2, REQUEST_NOTE_PARK = 4 };
struct json_t *request_frame(proto_Op op, struct json_t *req, int with_gen, uint64_t generation);
void request_frame_write(struct jtext_writer *w, proto_Op op, struct json_t *req, int with_gen,
                         uint64_t generation, int note);

/* The summary of the revision it makes: its own "summary", else "OP:
** source", "invariant-add NAME: source", "invariant-remove NAME",
** "rollback to revision N". */
void request_summary(proto_Op op, struct json_t *req, char *buf, size_t n);

/* What it runs, for events and logs: its source cut to n, or its summary
** when it has no source. */
void request_brief(proto_Op op, struct json_t *req, char *buf, size_t n);

/* What it asks for, as 64 hex digits: the SHA-256 of its members but
** "id", "key" and "wait" (which change how it is answered, not what
** runs), written as compact JSON with sorted keys.  Two requests with the
** same digest run the same thing (op, source, action, generation, limits,
** package ...).  0, or -1 when out of memory. */
int request_digest(struct json_t *req, char hex[65]);

/* ---- reply.c: a transaction's reply (docs/protocol.md), the one writer
** of its shape */

typedef struct reply_Outcome {
  const char *reason;        /* a txn reason name, or "interrupted" (NULL:
                                "error"); "accepted" is ok, any other not */
  const char *message;       /* not accepted: why (NULL: "") */
  uint64_t revision;         /* accepted: the revision CURRENT is after it */
  int show_revision;         /* not accepted: the revision that stays is named */
  uint64_t target;           /* a rollback's (0: not one) */
  struct json_t *changes;    /* accepted: as clients see them (NULL: none);
                                with effects: the worker's, as the store took
                                them (publish_effects_write) */
  const size_t *slot;
  const uint8_t *effects;
  struct json_t *value, *values, *output;  /* the worker's, or NULL */
  struct json_t *diagnosis;  /* not accepted: the worker's (an unhandled
                                error of a call that could not pause), or NULL */
  struct json_t *incident;   /* with it: the incident of automatic repair it
                                opened or joined, {id, joined, function}, or NULL */
  int restored;              /* a preview's: restored at once */
  uint64_t generation;
  struct json_t *repair;     /* a repair's apply: {incident, status, function,
                                verification}, or NULL */
} reply_Outcome;

/* The reply, member by member, into w: {"ok", "outcome", "revision",
** "target"?, "changes", "value"?, "values"?, "restored"?, "generation",
** "output"?} accepted, else {"ok", "code", "outcome", "message",
** "diagnosis"?, "generation", "revision"?, "output"?}; left open (an id may follow: the
** caller ends it). */
void reply_write(struct jtext_writer *w, const reply_Outcome *o);
/* The same as an object (the text parsed); NULL when out of memory. */
struct json_t *reply_object(const reply_Outcome *o);

/* ---- repairpol.c: the repair policy request (docs/repair.md): which
** functions may become incidents */

typedef enum repairpol_Action {
  REPAIRPOL_ENABLE, REPAIRPOL_DISABLE, REPAIRPOL_LIST, REPAIRPOL_ACTION_COUNT
} repairpol_Action;
const char *repairpol_action_name(int action);   /* "enable", ...; NULL if invalid */
int repairpol_action_parse(const char *s);       /* the action named, or -1 */

/* The selector in (a function, a prefix NAME*, a package PKG:) as the
** store keeps it, into out (n bytes): folded to upper case as the reader
** folds a name (not within |bars| or after \\), a package's one colon made
** two, COMMON-LISP-USER's prefix dropped (its names are entry names
** without one).  0, or -1 with why in err (blanks or parentheses: no name). */
int repairpol_selector(const char *in, char *out, size_t n, char *err, size_t errlen);

/* The rules as a reply shows them: [{selector, mode, expected: [{kind,
** text}]}].  A new reference. */
struct json_t *repairpol_rules_json(const store_repair_rule *rules, size_t n);

/* Carry out a repair-policy request req ({action, selector?, mode?,
** expected?}) on store s (its writer): enable puts the rule of selector
** (mode fail unless given), disable deletes it and cancels the open
** incidents of the functions no rule selects any more (their ids in the
** reply's "cancelled") and forgets their traffic samples (their names in
** "forgotten"), list changes nothing.  The
** reply {"ok": true, "rules": [...every rule after it]}, or NULL with an
** error code in code and why in err: invalid-request (the request's shape),
** invalid-arguments (a selector that is no name, a rule the store refuses:
** too long, too many), not-found (disable: no such rule), store-error. */
struct json_t *repairpol_apply(store_env *s, struct json_t *req, char *code, size_t codelen, char *err,
                               size_t errlen);

/* ---- events.c: the records of an attempt */

/* The store event recording an outcome reason (txn reason names, and
** "interrupted"): STORE_EV_ACCEPTED, _REJECTED, _ABORTED, _FAILED or
** _INTERRUPTED. */
int events_of_reason(const char *reason);

/* {"event":"started", attempt, command, source, parent, generation} */
struct json_t *events_started(uint64_t attempt, const char *command, const char *source, uint64_t parent,
                              uint64_t generation);

/* {"event": events_of_reason(reason), attempt, command, "outcome": reason,
** message?}; the caller adds revision, generation ... */
struct json_t *events_outcome(uint64_t attempt, const char *command, const char *reason,
                              const char *message);

/* The outcome "accepted" with the revision CURRENT is after the attempt and
** the generation after it (publish_outcome makes the one of a revision). */
struct json_t *events_accepted(uint64_t attempt, const char *command, uint64_t revision, uint64_t generation);

/* The members that tie an attempt to the idempotency key of its request:
** the key's digest (SHA-256, 64 hex digits: the key itself is never
** written, so no redaction can change it and no key is kept in the clear)
** and, on outcomes, the request's digest (request_digest), by which a key
** reused for another request is told apart.  The store keeps an outcome
** with a key digest under it (store.h, "what the store keeps of its
** events"). */
#define EVENTS_KEY_MEMBER "idempotency"
#define EVENTS_REQUEST_MEMBER "request"

typedef struct events_Key {
  char key[65];        /* SHA-256 of the key, hex */
  char request[65];    /* request_digest */
} events_Key;

/* The key of request req (its "key" member), malloc'd; NULL when it has
** none or out of memory. */
events_Key *events_key_new(struct json_t *req);

/* The same three events as their members' text (store_ev.members: compact,
** ASCII-escaped, the members in the objects' order), for the kernel's hot
** path, which would otherwise build, write and free an object per event;
** on outcomes, diagnosis (when not NULL: a call that failed on an
** unhandled error, txn.h txn_Diagnosis) follows the message, and key (when not NULL) adds EVENTS_KEY_MEMBER and
** EVENTS_REQUEST_MEMBER last (a start carries no key: its outcome does).  malloc'd, its length in *len; NULL when
** out of memory (a string that is not UTF-8 is written with U+FFFD for
** each byte that does not belong: jtext_writer). */
char *events_started_text(uint64_t attempt, const char *command, const char *source, uint64_t parent,
                          uint64_t generation, size_t *len);
char *events_outcome_text(uint64_t attempt, const char *command, const char *reason, const char *message,
                          struct json_t *diagnosis, const events_Key *key, size_t *len);
char *events_accepted_text(uint64_t attempt, const char *command, uint64_t revision, uint64_t generation,
                           const events_Key *key, size_t *len);
/* key's members added to event object ev (key may be NULL: nothing). */
void events_tag(struct json_t *ev, const events_Key *key);
/* An outcome event whose revision and generation are not known yet (a call
** held for group commit): the text of events_outcome_text (of
** events_accepted_text for "accepted"), less those two members, with *split
** the place they go; events_text_close writes them in there, giving what
** events_accepted_text, or events_outcome's object completed with them,
** would.  malloc'd; NULL when out of memory. */
char *events_outcome_text_open(uint64_t attempt, const char *command, const char *reason, const char *message,
                               struct json_t *diagnosis, const events_Key *key, size_t *len, size_t *split);
char *events_text_close(const char *open, size_t len, size_t split, uint64_t revision, uint64_t generation,
                        size_t *outlen);

#endif
