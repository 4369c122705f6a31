/* store.h — the jiti store: durable revisions of a Lisp world in LMDB.
**
** A store is one directory holding one LMDB environment.  It records the
** world's managed entries (functions, macros, variables, data rows,
** structures, invariants, classes, generic functions, methods, foreign
** function declarations) as a chain of revisions 1, 2, 3 ... ending at
** CURRENT, plus a log of events.  docs/store.md describes the on-disk layout
** and the guarantees; this header is the contract.
**
** Entries.  An entry is (kind, name, bytes).  The bytes are the canonical
** encoding the kernel produced; the store never interprets them.  Its content
** hash is SHA-256 over  kind "\0" name "\0" bytes  (kind spelled as in
** store_kind_name).  Each distinct entry is stored once, keyed by its hash.
** The pair (kind, name) is the entry's key: at most one entry per key is in
** a revision's map.
**
** Revisions.  store_publish writes, in ONE LMDB write transaction, the new
** entries, the update of the current map, the manifest of the new revision
** (its parent, generation, time, kernel version, kind, summary, model
** response id and the delta against the parent) and the move of CURRENT.
** After a crash the store shows either the old CURRENT or the new one, never
** a mix.  A publish whose caller read an older CURRENT is refused
** (STORE_ESTALE) and changes nothing.
**
** Errors.  Every function returns a store_err code; STORE_OK is 0.  On
** failure the store keeps a human-readable message naming the store path and
** the problem, returned by store_errmsg() until the next call on the same
** handle.  store_open, which has no handle yet, writes it to errbuf.  No
** function aborts or exits.
**
** Caveats (read these).
** - One writer per store.  store_open takes an exclusive flock on DIR/lock
**   (holding the process id); a second writer gets STORE_EBUSY naming it.
**   Read-only handles (STORE_RDONLY) take no lock and may run beside it.
** - Never use a store handle after fork(), in either process; never fork
**   while a callback of this API is running.  Open the store in the process
**   that uses it.  The lock and LMDB descriptors are close-on-exec.
** - A handle is not thread-safe; use it from one thread at a time.
** - Pointers handed to callbacks point into the memory map and are valid
**   only during the callback.
*/
#ifndef store_h
#define store_h

#include <stddef.h>
#include <stdint.h>

/* Format 2: entry names and stored symbols are package-qualified, and
** there are package entries.  Format 3: the store keeps indices of its
** events beside them (open attempts, the attempt mark, idempotency keys)
** and counters.  Format 4: the records of automatic repair (the policy,
** incidents, the traffic sample).  An older store is read as is and
** upgraded when opened for writing (see st_migrate.c). */
#define STORE_FORMAT_VERSION 4u

/* Return codes.  The messages of store_strerror name them. */
typedef enum store_err {
  STORE_OK = 0,
  STORE_ENOENT,    /* no such store, revision or entry */
  STORE_EBUSY,     /* another process holds the store's write lock */
  STORE_ECORRUPT,  /* the files are damaged: truncated, bad hash, broken chain */
  STORE_EVERSION,  /* the store was written with another format version */
  STORE_ESTALE,    /* CURRENT is not the parent the caller expected */
  STORE_EPERM,     /* permission denied, or a write on a read-only handle */
  STORE_EIO,       /* an I/O error, or disk / address space exhausted */
  STORE_ENOMEM,    /* out of memory */
  STORE_EINVAL,    /* an invalid argument (bad name, kind, size, JSON ...) */
  STORE_EJOURNAL,  /* the journal is damaged, not merely torn: replaying it
                      would lose writes it holds (store_options.accept_loss) */
  STORE_ECONFLICT  /* a record is not in the state the caller expected (an
                      incident's status moved: another writer got there
                      first); nothing was written */
} store_err;

typedef struct store_env store_env;

/* ---- kinds */

typedef enum store_kind {
  STORE_FUNCTION = 1, STORE_MACRO, STORE_VARIABLE, STORE_DATA,
  STORE_STRUCTURE, STORE_INVARIANT, STORE_CLASS, STORE_GENERIC, STORE_METHOD,
  STORE_FOREIGN, STORE_PACKAGE, STORE_TYPE, STORE_SYMBOL_MACRO,
  STORE_SETF_EXPANDER, STORE_COMPILER_MACRO, STORE_DOCUMENTATION, STORE_PLIST,
  STORE_METHOD_COMBINATION,
  STORE_FILE                  /* a file of the world's file table */
} store_kind;

typedef enum store_rev_kind {
  STORE_REV_ACTION = 1, STORE_REV_APPLICATION, STORE_REV_ROLLBACK,
  STORE_REV_IMPORT, STORE_REV_INITIAL,
  STORE_REV_REPAIR            /* automatic repair: names its incident */
} store_rev_kind;
#define STORE_REV_KIND_LAST STORE_REV_REPAIR

/* "function", "macro", ... / "action", "application", ...; NULL if invalid. */
const char *store_kind_name(int kind);
const char *store_rev_kind_name(int kind);
/* The kind named by s, or 0 if none. */
int store_kind_parse(const char *s);
int store_rev_kind_parse(const char *s);
/* A static description of an error code. */
const char *store_strerror(int err);

/* ---- limits */

#define STORE_NAME_MAX     480u          /* bytes of UTF-8 in a name */
#define STORE_ENTRY_MAX    (256u << 20)  /* bytes of an entry's encoding */
#define STORE_SUMMARY_MAX  1024u         /* bytes; longer summaries are cut */
#define STORE_VERSION_MAX  128u          /* kernel version string */
#define STORE_RESPONSE_MAX 256u          /* model response id */
#define STORE_EVENT_MAX    16384u        /* bytes of a stored event record */
#define STORE_FOREIGN_MAX  4096u         /* bytes of a revision's foreign grant */

/* ---- opening */

#define STORE_RDONLY 0x1u  /* read-only: no lock, no writes, must exist */
#define STORE_NOCREATE 0x2u /* fail with STORE_ENOENT if the store is missing */

/* Points in a publish (store_publish, store_publish_group, store_publish_revert)
** where a test hook is called (see store_options). */
typedef enum store_point {
  STORE_AT_BEFORE_TXN = 1,   /* before the write transaction begins */
  STORE_AT_AFTER_ENTRIES,    /* entries and map written, no manifest yet
                                (once per revision of a group) */
  STORE_AT_AFTER_MANIFEST,   /* manifest written, CURRENT not yet moved
                                (once per revision of a group) */
  STORE_AT_BEFORE_COMMIT,    /* everything written, mdb_txn_commit next */
  STORE_AT_AFTER_COMMIT,     /* mdb_txn_commit returned success */
  STORE_AT_BEFORE_SYNC,      /* store_sync: fdatasync next */
  STORE_AT_AFTER_SYNC,       /* store_sync: fdatasync returned success */
  STORE_AT_BEFORE_CHECKPOINT, /* store_checkpoint: the long transaction's commit next */
  STORE_AT_AFTER_CHECKPOINT   /* committed; the journal's records not yet stale */
} store_point;

/* What a damaged journal holds (see "The journal" below): filled by a
** store_open that returns STORE_EJOURNAL, or by one with accept_loss that
** dropped it.  A torn tail is not damage and is not reported here. */
typedef struct store_journal_loss {
  int damaged;            /* 0: the journal was sound (the rest is 0) */
  int header;             /* its header is damaged: no record could be replayed */
  uint64_t epoch;         /* the epoch read (0 when the header is damaged) */
  uint64_t seq, offset;   /* the damaged record's sequence number and byte
                             offset in DIR/journal; records 0..seq-1 replay */
  uint64_t records;       /* intact records of the epoch after it: writes that
                             were acknowledged (docs/store.md says when not) */
  uint64_t revisions;     /* the revisions lost, first_rev..last_rev (0 when
                             none): from the one after CURRENT as the replay
                             leaves it (the damaged record's own) to the last
                             one the intact records publish; for a damaged
                             header, those its records publish */
  uint64_t first_rev, last_rev;
  uint64_t events;        /* the events the intact records append */
  uint64_t event_seq;     /* accept_loss: the "journal-loss" event recorded */
  char why[96];           /* what is wrong with the damaged record */
} store_journal_loss;

/* Options for store_open_with; zero-initialise and set what you need. */
typedef struct store_options {
  size_t mapsize;  /* initial map size in bytes; 0 = 64 MiB.  The map grows
                      by doubling when a commit finds it full. */
  /* Test only: called at each store_point of every publish. */
  void (*hook)(void *arg, store_point at);
  void *hook_arg;
  /* A writable open of a store whose journal is damaged replays the records
  ** before the damage, drops the damaged one and every one after it, records
  ** a "journal-loss" event naming them (in the same commit) and starts a new
  ** epoch, where it would otherwise return STORE_EJOURNAL and change
  ** nothing.  The operator's choice, never a default. */
  int accept_loss;
  /* Receives what a damaged journal holds or what accept_loss dropped (may
  ** be NULL; zeroed by every open). */
  store_journal_loss *loss;
} store_options;

/* Open (and unless STORE_RDONLY/STORE_NOCREATE, create) the store in DIR.
**   dir     the store directory; created with mode 0700 if missing, its files
**           get mode 0600 whatever the umask.
**   flags   0, or STORE_RDONLY and/or STORE_NOCREATE.
**   out     receives the handle; NULL on failure.
**   errbuf  receives a message on failure (may be NULL); errlen its size.
** Closed descriptors 0-2 are first reopened on /dev/null, so that no store
** file can become stdout or stderr.  Stale LMDB readers are cleared.
** Returns STORE_OK, or:
**   STORE_ENOENT    the store does not exist (RDONLY or NOCREATE)
**   STORE_EBUSY     another process (named by its pid) holds the write lock
**   STORE_ECORRUPT  data.mdb is truncated, not an LMDB file, or lacks the
**                   store's metadata
**   STORE_EJOURNAL  DIR/journal is damaged before writes it holds (a
**                   record that fails its check followed by intact ones, a
**                   record that passes its check but does not parse, a
**                   damaged header); the message names the record and what
**                   follows it, opts->loss receives them, and nothing was
**                   replayed or written.  A read-only open reports it too
**                   when no writer holds the store (it would replay).
**   STORE_EVERSION  the store has another format version (both are named)
**   STORE_EPERM     permission denied on the directory or a file
**   STORE_EIO       an I/O error
**   STORE_ENOMEM    out of memory
**   STORE_EINVAL    dir is NULL, empty or too long; unknown flags */
int store_open(const char *dir, unsigned flags, store_env **out,
               char *errbuf, size_t errlen);
/* As store_open, with options (opts may be NULL). */
int store_open_with(const char *dir, unsigned flags, const store_options *opts,
                    store_env **out, char *errbuf, size_t errlen);

/* Close the handle and release the lock.  NULL is ignored. */
void store_close(store_env *s);

/* The message of the last failed call on s ("" after a success). */
const char *store_errmsg(const store_env *s);

/* The directory s was opened on. */
const char *store_path(const store_env *s);

/* ---- entries */

typedef struct store_entry {
  int kind;              /* a store_kind */
  const char *name;      /* UTF-8, NUL-terminated, 1..STORE_NAME_MAX bytes */
  const void *bytes;     /* the canonical encoding */
  size_t len;            /* its length, 0..STORE_ENTRY_MAX */
} store_entry;

typedef struct store_key {
  int kind;
  const char *name;
} store_key;

/* The content hash of e (SHA-256, 32 bytes) and its lowercase hex form
** (64 characters and a NUL).  hex may be NULL.  Returns STORE_OK, or
** STORE_EINVAL if the kind or name is invalid. */
int store_entry_hash(const store_entry *e, uint8_t hash[32], char hex[65]);
/* hex: 65 bytes, receives 64 hex digits and a NUL. */
void store_hash_hex(const uint8_t hash[32], char hex[65]);
/* Parse 64 hex digits; returns STORE_OK or STORE_EINVAL. */
int store_hash_parse(const char *hex, uint8_t hash[32]);

/* ---- publishing */

/* What the caller tells about a new revision. */
typedef struct store_rev_info {
  int kind;                   /* a store_rev_kind */
  uint64_t generation;        /* the kernel's generation at publish */
  int64_t time_ms;            /* ms since the epoch; 0 = now */
  const char *kernel_version; /* may be NULL; at most STORE_VERSION_MAX */
  const char *summary;        /* may be NULL; cut to STORE_SUMMARY_MAX */
  const char *response_id;    /* model response id; NULL if none */
  const char *foreign;        /* the C libraries the world was granted
                                 (--allow-foreign), each followed by '\n';
                                 NULL or "" if none; at most STORE_FOREIGN_MAX */
} store_rev_info;

/* Publish a revision: CURRENT's map, with changed[0..nchanged) put (added
** or replaced) and removed[0..nremoved) taken out, becomes revision
** CURRENT+1, and CURRENT moves to it, all in one transaction.
**   parent    the CURRENT the caller started from (0 for an empty store).
**   info      the manifest fields.
**   new_rev   receives the new revision number (may be NULL).
** An entry identical to the one already in the map is not a change.  When
** nothing changes, an ACTION or APPLICATION publish writes nothing and
** *new_rev is the parent; INITIAL, IMPORT and ROLLBACK always publish.  A
** revision written also raises the generation high-water mark to
** info->generation (store_generation).
** Returns STORE_OK, or:
**   STORE_ESTALE    CURRENT != parent; nothing was written
**   STORE_EINVAL    a bad kind, name (empty, too long, not UTF-8), size,
**                   a key given twice, a removed key not in the map, info
**                   kind invalid, an info string too long; nothing was
**                   written
**   STORE_EPERM     the handle is read-only
**   STORE_ECORRUPT  the map refers to a missing entry, or a record is damaged
**   STORE_EIO, STORE_ENOMEM */
int store_publish(store_env *s, uint64_t parent, const store_rev_info *info,
                  const store_entry *changed, size_t nchanged,
                  const store_key *removed, size_t nremoved,
                  uint64_t *new_rev);

/* store_publish, with events[0..nevents) appended in the same transaction
** (as store_events_append_objects does: redacted in place; event_times may
** be NULL): the revision and the events that led to it cost one sync.  The
** events are written even when nothing changes; *first_event_seq (may be
** NULL) receives the first one's sequence number.  On failure neither is
** written. */
struct json_t;
int store_publish_with_events(store_env *s, uint64_t parent, const store_rev_info *info,
                              const store_entry *changed, size_t nchanged,
                              const store_key *removed, size_t nremoved,
                              struct json_t *const *events, const int64_t *event_times,
                              size_t nevents, uint64_t *new_rev, uint64_t *first_event_seq);

/* An event given to store_events_append_later: a jansson object, or —
** cheaper for the records a hot path writes — its members already written
** as compact JSON text, `"event":"started","attempt":7,...` without the
** braces (jtext's writing, so that the stored record reads as the object's
** would; no "seq" or "time" of its own).  The store redacts and bounds a
** text as it would the object: one that redaction would change, that is
** too long or that it cannot vouch for is parsed and written the object's
** way; one that is not JSON members is STORE_EINVAL. */
typedef struct store_ev {
  struct json_t *obj;      /* the event (redacted in place), or NULL: */
  const char *members;     /* its members as text */
  size_t len;
  int64_t time_ms;         /* its time in ms since the epoch; 0: now */
} store_ev;

/* ---- group commit
**
** Several revisions in ONE write transaction: one sync for all of them.
** Each is still a revision of its own — its own number, manifest (parent,
** generation, summary, delta) and events — exactly as if published one
** after the other: revision i+1's delta is taken against revision i's map,
** and CURRENT ends at the last.  All or nothing: if any of them is refused
** or the commit fails, nothing of any of them is written, and after a crash
** the store shows CURRENT before the group or at its last revision, never
** in between. */

/* One revision of a group: in as for store_publish_with_events; rev and
** first_event are filled on success.  info is checked before the
** transaction; a callback may change its generation during it. */
typedef struct store_rev_in {
  const store_rev_info *info;
  const store_entry *changed;
  size_t nchanged;
  const store_key *removed;
  size_t nremoved;
  const store_ev *events;         /* appended after the revision (may be NULL;
                                     store_events_append_later says how) */
  size_t nevents;
  uint64_t rev;                   /* out: its revision, or the revision it left
                                     CURRENT at when it changed nothing */
  uint64_t first_event;           /* out: the seq of events[0] (0: none) */
  uint8_t *effects;               /* out, may be NULL: nchanged + nremoved
                                     slots, one store_effect per entry of
                                     changed[] then of removed[] */
} store_rev_in;

/* What a revision of a group did with each entry it was given. */
typedef enum store_effect {
  STORE_SAME = 0,   /* nothing: identical to the map's, or (ABSENT_OK) a
                       removal of a key the map lacks */
  STORE_ADDED,      /* a key the map lacked */
  STORE_REPLACED,   /* another entry under the key before */
  STORE_REMOVED     /* the key taken out */
} store_effect;

/* Called inside the write transaction for each revision in order, once
** its changes are applied to the map and before its manifest and events
** are written: rev is its number (or, when it changes nothing and writes
** no revision, the revision before it), changed whether it writes one.
** The caller may still change what revs[i].info points to (its
** generation: a caller that numbers only the revisions written) and
** complete its events (an "accepted" event naming its revision: members
** of an object, or the text of a store_ev the caller owns); the store
** reads and checks them after fn returns.  fn must not call this API.  A
** transaction that finds the map full runs again from the start, so fn is
** then called again from i = 0: it must compute what it sets from its
** arguments (and from what it set for the revisions before i). */
typedef void (*store_group_fn)(void *arg, size_t i, uint64_t rev, int changed);

#define STORE_GROUP_ABSENT_OK 0x1u  /* a removal of a key the map (as left by
                                       the revisions before) lacks is no
                                       change, not STORE_EINVAL */
#define STORE_GROUP_SYNC_LATER 0x2u /* the commit syncs the revisions' pages
                                       but not the meta page that makes them
                                       CURRENT on disk (LMDB's
                                       MDB_NOMETASYNC): from its return they
                                       are visible (to other processes too)
                                       and survive a crash of the process,
                                       but a crash of the machine only once
                                       a store_sync begun after it, or any
                                       later commit, has returned.  The store
                                       stays consistent either way. */
#define STORE_GROUP_TENTATIVE 0x4u  /* store_publish_group_incidents: the
                                       incidents go to tentative, not
                                       repaired (a repair awaiting promotion) */

/* Publish revs[0..n) on top of parent in one write transaction, in order.
** An ACTION or APPLICATION revision that changes nothing writes no revision
** (its events are still appended); the others always publish.  fn may be
** NULL.  Every revision's arguments are checked before the transaction
** begins, its events inside it (after fn).  Returns STORE_OK, or as store_publish (the message names the
** revision's entry); on failure nothing at all was written.  STORE_EINVAL
** also for n == 0, revs NULL or unknown flags. */
int store_publish_group(store_env *s, uint64_t parent, store_rev_in *revs, size_t n,
                        unsigned flags, store_group_fn fn, void *arg);
/* store_publish_group where some revisions repair an incident (a repair
** transaction, docs/repair.md): incidents[i] (incidents may be NULL) is 0
** or the incident revs[i] repairs, which moves from verifying to repaired
** with revs[i].rev as its revision, its "incident" event after the
** revision's events, in the group's one transaction — so a repair is
** applied, and its incident repaired, together or not at all.  Returns as
** store_publish_group, and STORE_ECONFLICT (an incident is not verifying)
** or STORE_ENOENT (no such incident): then nothing at all was written.
** With STORE_GROUP_TENTATIVE in flags the incidents move to tentative
** instead of repaired (the same guarantees; STORE_EINVAL without
** incidents). */
int store_publish_group_incidents(store_env *s, uint64_t parent, store_rev_in *revs, size_t n,
                                  unsigned flags, store_group_fn fn, void *arg, const uint64_t *incidents);

/* Make every commit returned so far durable (fdatasync of the data file,
** or in journal mode of the journal): the second half of a
** STORE_GROUP_SYNC_LATER publish.  The one store call that may run on
** another thread while this handle is used by its own (it reads only the
** handle's file descriptors and test hook, fixed at open and at
** store_journal_begin): a sync may overlap the next write.  A failure is
** written to err (errlen bytes), not to store_errmsg.  Returns STORE_OK,
** STORE_EPERM (read-only), STORE_EIO (the file's state on disk is
** unknown: stop writing). */
int store_sync(store_env *s, char *err, size_t errlen);

/* ---- the journal
**
** A handle in journal mode makes its SYNC_LATER writes (store_publish_group
** with STORE_GROUP_SYNC_LATER, store_events_append_later) without touching
** data.mdb on disk: each runs in one long LMDB write transaction, and the
** puts and deletes it made are appended to
** DIR/journal as one record; store_sync then syncs the journal alone —
** one sequential append where an LMDB commit syncs a dozen scattered pages
** and then its meta page.  store_checkpoint commits the long transaction
** in full and starts the journal's next epoch.  A write that fails after its
** first put is taken back whole (the long transaction is aborted and the
** epoch's earlier writes are committed again from the journal): slow, and
** only on such a failure.  Opening the store for
** writing replays the records of the current epoch, so after a crash of
** the process or the machine every write a store_sync covered is there.
** An incomplete last record (a torn tail: an append the crash stopped,
** never acknowledged) is dropped.  Damage — a record that fails its check
** with intact records of the epoch after it, one that passes its check
** but does not parse, a header damaged in both copies — is not replayed
** past and not dropped: store_open returns STORE_EJOURNAL and writes
** nothing, until an open with store_options.accept_loss drops it
** (docs/store.md, "Reading it back").
**
** Until the checkpoint those writes are seen by this handle on the thread
** that made them, and by nothing else: this handle on another thread gets
** STORE_EPERM, and a read-only handle opened elsewhere waits, as it opens,
** for them to reach data.mdb — replaying them itself when their writer is
** gone, else until the writer's next checkpoint (the kernel makes one
** within a second of a write).  A
** full commit (any write that is not SYNC_LATER) checkpoints first; so does
** a journal grown past 64 MiB.  A write that fills the map or LMDB's list
** of dirty pages has the epoch's earlier writes committed again from the
** journal, and then runs again.  store_close checkpoints when called on
** the thread that wrote. */

/* Enter journal mode (creating DIR/journal, 0600).  Returns STORE_OK,
** STORE_EPERM (read-only), STORE_EIO. */
int store_journal_begin(store_env *s);
/* Nonzero while journaled writes wait for a checkpoint. */
int store_journal_pending(const store_env *s);
/* NULL, or once a checkpoint failed, why: every later write fails; data.mdb
** holds the last checkpoint and the journal the rest, for the next open. */
const char *store_journal_broken(const store_env *s);
/* Commit the journaled writes to data.mdb, durably, on the thread that
** made them.  STORE_OK (also when none wait), STORE_EPERM (another
** thread's), STORE_EIO (the handle is then unusable: data.mdb holds the
** last checkpoint and the journal the rest, for the next open). */
int store_checkpoint(store_env *s);
/* Double the map when more than half of it is in use, while no write
** transaction is open (right after store_checkpoint, on its thread).
** Otherwise a long transaction that outgrows the map finds out at its
** commit, and its epoch is written again from the journal into a larger
** map: a stall as long as the epoch.  STORE_OK (also when there was room
** or journaled writes are pending), STORE_EIO (the map cannot grow). */
int store_make_room(store_env *s);

/* Publish a revision whose map equals revision target's map (kind ROLLBACK;
** info->kind is ignored; target 0 means the empty map).  The delta is
** computed against CURRENT.  Returns as store_publish, and STORE_ENOENT if
** target > CURRENT. */
int store_publish_revert(store_env *s, uint64_t parent, uint64_t target,
                         const store_rev_info *info, uint64_t *new_rev);

/* ---- reading */

/* CURRENT (0 for an empty store). */
int store_current(store_env *s, uint64_t *rev);

typedef struct store_change {
  int kind;
  const char *name;
  uint8_t old_hash[32];   /* all zero if the key was added */
  uint8_t new_hash[32];   /* all zero if the key was removed */
} store_change;

typedef struct store_manifest {
  uint64_t rev, parent, generation;
  int64_t time_ms;
  int kind;                 /* a store_rev_kind */
  uint64_t rollback_of;     /* the target of a rollback, else 0 */
  uint64_t nentries;        /* entries in this revision's map */
  const char *kernel_version, *summary, *response_id;  /* "" if none */
  const char *foreign;      /* as store_rev_info's; "" if none */
  size_t nchanges;
  store_change *changes;    /* sorted by (kind, name) */
} store_manifest;

/* Read revision rev's manifest into *out (one allocation; release it with
** store_free).  Returns STORE_OK, STORE_ENOENT (no such revision),
** STORE_ECORRUPT (a damaged record), STORE_ENOMEM, STORE_EIO. */
int store_manifest_read(store_env *s, uint64_t rev, store_manifest **out);

/* The same without the changes: every field but `changes` (NULL) is filled,
** nchanges included.  The record's checksum and structure are checked all
** the same, but nothing is allocated per change, so it is the cheap way to
** learn a revision's generation, kind or time.  Returns as
** store_manifest_read. */
int store_manifest_read_header(store_env *s, uint64_t rev, store_manifest **out);

/* Release memory returned by this API.  NULL is ignored. */
void store_free(void *p);

/* Called once per entry of a map, in (kind, name) order.  Return 0 to go
** on, nonzero to stop (the iterating call then returns STORE_OK). */
typedef int (*store_entry_fn)(void *arg, const store_entry *e,
                              const uint8_t hash[32]);

#define STORE_REV_CURRENT UINT64_MAX

/* Call fn for every entry of revision rev's map (STORE_REV_CURRENT: the
** current map, read directly, O(entries)).  An older revision's map is
** rebuilt by undoing the deltas from CURRENT back to rev: O(entries +
** changes made after rev) time.  Either way the keys are gathered first and
** their entries looked up in hash order before fn sees any (O(entries)
** memory, ~50 bytes each; the bytes handed out point into the store's
** memory map and are valid only during the call).
** Returns STORE_OK, STORE_ENOENT (no such revision), STORE_ECORRUPT,
** STORE_ENOMEM, STORE_EIO. */
int store_map_foreach(store_env *s, uint64_t rev, store_entry_fn fn, void *arg);

/* The same, kind by kind: first every entry of kinds[0] (by name), then
** every entry of kinds[1], ...; kinds not listed are skipped.  This lets a
** reader take the entries in an order of its own (the kernel imports types
** before code) straight from the store, without a copy of the map.  All of
** it is one read transaction, so the entries are those of one revision even
** while a writer publishes.  For the current map each kind is one cursor
** range.  counts (NULL, or nkinds slots) receive the number of entries of
** each listed kind before fn is first called (to size tables ahead).
** Every entry is looked up and checked before the first call (in hash
** order, the cheapest way through the entries database), so a damaged or
** missing entry is reported without fn having seen any.  Returns as
** store_map_foreach, and STORE_EINVAL if a kind is invalid or given twice
** (nothing is read then). */
int store_map_foreach_kinds(store_env *s, uint64_t rev, const int *kinds, size_t nkinds,
                            size_t *counts, store_entry_fn fn, void *arg);

/* The hash of the entry with key (kind, name) in the current map.
** Returns STORE_OK, STORE_ENOENT, STORE_EINVAL, STORE_EIO. */
int store_lookup(store_env *s, int kind, const char *name, uint8_t hash[32]);

/* The entry with this hash, copied into one allocation (*out, with name and
** bytes inside it; release with store_free).  Returns STORE_OK, STORE_ENOENT,
** STORE_ECORRUPT (the record is malformed), STORE_ENOMEM, STORE_EIO. */
int store_get_entry(store_env *s, const uint8_t hash[32], store_entry **out);

typedef struct store_stat {
  uint64_t current;
  uint32_t format;
  uint8_t id[16];          /* the store id, random at creation */
  uint64_t revisions, entries, names, events;  /* records per database */
  uint64_t last_event;     /* highest event sequence number, 0 if none */
  uint64_t first_event;    /* lowest one still kept (retention), 0 if none */
  uint64_t open_attempts, keys, counters;  /* records of the indices (format 3) */
  uint64_t repair_rules, incidents, open_incidents;  /* format 4 */
  size_t page_size, mapsize;
  uint64_t pages_used;     /* pages held by all trees (excluding free pages) */
  uint64_t file_pages;     /* pages ever allocated in data.mdb */
} store_stat;

int store_stats(store_env *s, store_stat *st);

/* ---- generations
**
** A generation is the kernel's concurrency token (docs/transactions.md): a
** store-wide counter that only grows, so that no generation is ever handed
** out twice for two different worlds — across kernel restarts, crashes,
** recoveries and offline commands.  The store keeps its high-water mark,
** the largest generation a writer recorded, in `meta`.  A writer records a
** generation before it hands it out: every publish records
** info->generation in its own transaction, and store_advance_generation
** records one that moved without a revision (a pause, a resume, a kernel
** start).  A writer starting up counts on from store_generation + 1. */

/* The high-water mark: the largest generation recorded, and at least
** CURRENT's manifest generation (stores written before the mark was kept);
** 0 for an empty store.  Returns STORE_OK, STORE_ECORRUPT, STORE_EIO,
** STORE_EINVAL (gen NULL). */
int store_generation(store_env *s, uint64_t *gen);

/* Raise the high-water mark to gen (a smaller gen leaves it unchanged) and
** append events[0..nevents) (nevents may be 0; as
** store_events_append_objects, with first_seq), in one write transaction:
** one sync.  Returns STORE_OK, STORE_EPERM (read-only), STORE_EINVAL (an
** event is not an object), STORE_ECORRUPT, STORE_EIO, STORE_ENOMEM. */
int store_advance_generation(store_env *s, uint64_t gen, struct json_t *const *events,
                             const int64_t *event_times, size_t nevents, uint64_t *first_seq);

/* ---- digests */

/* SHA-256 of p[0..n) into out (the digest of an idempotency key or of a
** request, as the indices keep them).  Returns STORE_OK or STORE_ENOMEM. */
int store_digest(const void *p, size_t n, uint8_t out[32]);

/* ---- verification */

/* Check the store, in one read transaction:
**  - the revisions database holds exactly revisions 1..CURRENT;
**  - every entry of the current map exists, re-hashes to its hash and
**    carries its key's kind and name;
**  - the manifest chain from CURRENT to 1: every manifest's checksum and
**    structure, parents consecutive, entry counts consistent with the map
**    and with each delta.
** With STORE_VERIFY_HISTORY also: every delta, undone in turn from the
** current map, matches it, every entry any revision puts exists, and
** undoing revision 1 leaves the empty map — so every old revision can be
** rebuilt.  Cost: O(current entries + manifest bytes); the history check
** adds O(all changes ever) time and O(current entries) memory.
** Reports the first problem in errbuf (may be NULL) and store_errmsg,
** naming the revision or entry and the store path.
** Returns STORE_OK, STORE_ECORRUPT, STORE_ENOMEM, STORE_EIO. */
#define STORE_VERIFY_HISTORY 0x1u
int store_verify(store_env *s, unsigned flags, char *errbuf, size_t errlen);

/* ---- events
**
** An event is one JSON object, stored under a sequence number 1, 2, 3 ...
** The store adds "seq" and "time" (ms since the epoch) as its first members.
** Conventional members: "event" (started, accepted, rejected, aborted,
** failed, interrupted, condition, paused, resumed, model_request, ...),
** "attempt" (an integer identifying a transaction attempt). */

/* The event names the kernel, its worker's outcomes and the store
** commands record (docs/store.md, "Events"): one table, store_event_name.
** The outcomes of an attempt are ACCEPTED, REJECTED, ABORTED, FAILED and
** INTERRUPTED (store_event_is_outcome); an attempt is a "started" event and
** at most one outcome with the same "attempt" number. */
typedef enum store_event {
  STORE_EV_STARTED, STORE_EV_ACCEPTED, STORE_EV_REJECTED, STORE_EV_ABORTED, STORE_EV_FAILED,
  STORE_EV_INTERRUPTED, STORE_EV_PAUSED, STORE_EV_WORKER_RESTARTED, STORE_EV_KERNEL_STARTED,
  STORE_EV_KERNEL_STOPPED, STORE_EV_INITIALISED, STORE_EV_RECOVERED, STORE_EV_DROPPED,
  STORE_EV_JOURNAL_LOSS, STORE_EV_INCIDENT,
  STORE_EV_COUNT
} store_event;

/* "started", "accepted", ...; NULL if invalid. */
const char *store_event_name(int ev);
/* The event named s, or -1. */
int store_event_parse(const char *s);
/* 1 for the outcome events. */
int store_event_is_outcome(int ev);

/* Append one event.  json is one JSON object (text).  String values under a
** key containing "key", "token", "secret", "authorization" or "password"
** (any case), and string values starting with "Bearer " or "sk-", become
** "[redacted]".  A record longer than STORE_EVENT_MAX is replaced by a
** bounded one marked "truncated":true that keeps "event", "attempt", the
** original size and the start of the text.
**   seq  receives the sequence number (may be NULL).
** Returns STORE_OK, STORE_EINVAL (not a JSON object), STORE_EPERM
** (read-only), STORE_EIO, STORE_ENOMEM. */
int store_event_append(store_env *s, const char *json, uint64_t *seq);

/* Append objs[0..n) (jansson objects, as the kernel daemon builds them:
** no text to parse) as consecutive events in one transaction (one sync):
** all or none.  time_ms[i] is event i's time in ms since the epoch (NULL,
** or 0, for now).  The objects are redacted in place and their "seq" and
** "time" members removed; the caller still owns them.  first_seq receives
** the first event's sequence number (may be NULL).  Returns as
** store_event_append. */
int store_events_append_objects(store_env *s, struct json_t *const *objs, const int64_t *time_ms,
                                size_t n, uint64_t *first_seq);


/* As store_events_append_objects, with the events as store_ev, but the
** commit syncs the events' pages and not the meta page that makes them
** part of the store on disk (the rule of STORE_GROUP_SYNC_LATER): they
** survive a crash of the process at once, a crash of the machine once a
** later store_sync or full commit has returned.  For the kernel's timed
** flushes of diagnostic events, which should not hold a thread for two
** syncs. */
int store_events_append_later(store_env *s, const store_ev *ev, size_t n, uint64_t *first_seq);

#define STORE_NEWEST_FIRST 0x1u

/* Called per event; return 0 to go on, nonzero to stop. */
typedef int (*store_event_fn)(void *arg, uint64_t seq, const char *json,
                              size_t len);

/* Call fn for at most max events (0 = no limit), oldest first from from_seq
** upwards, or with STORE_NEWEST_FIRST from from_seq downwards (from_seq 0
** means the newest).  Returns STORE_OK, STORE_EIO, STORE_ECORRUPT. */
int store_events_read(store_env *s, uint64_t from_seq, size_t max,
                      unsigned flags, store_event_fn fn, void *arg);

/* For every attempt with a "started" event and no later outcome event
** (accepted, rejected, aborted, failed, interrupted) for the same attempt,
** append {"event":"interrupted","attempt":N,"started_seq":S,"reason":...},
** in one transaction, in the order of their numbers.  Reads the index of
** open attempts (below), not the events: O(open attempts).  count
** receives how many were marked (may be NULL).  Returns STORE_OK,
** STORE_EPERM, STORE_EIO, STORE_ENOMEM. */
int store_mark_interrupted(store_env *s, uint64_t *count);

/* ---- what the store keeps of its events (format 3)
**
** Every event written is also noted, in the same transaction, in indices
** that let a writer starting up read what it needs rather than every
** event (docs/store.md, "Indices of the events"):
**   - the attempts without an outcome: a "started" event with an integer
**     "attempt" opens it, an outcome event of the same attempt closes it
**     (store_mark_interrupted);
**   - the largest "attempt" ever recorded (store_next_attempt);
**   - idempotency keys: an outcome event whose "idempotency" member is 64
**     lowercase hex digits (the SHA-256 of a request's key, store_digest)
**     is also kept, as stored, under that digest — the newest
**     STORE_KEYS_MAX such keys, a newer record of a key replacing the
**     older, whatever the events' retention (store_keys_read);
**   - counters: tallies of what a caller counts rather than records one
**     event each (store_tally_add, store_counters_read).
** These are never pruned with the events. */

#define STORE_KEYS_MAX 10000u          /* idempotency keys kept */
#define STORE_COUNTER_NAME_MAX 64u     /* bytes of a counter's kind or outcome */
#define STORE_PRUNE_BATCH 20000u       /* events store_events_prune deletes at most per call by default */

/* The next attempt number: one more than the largest "attempt" of any
** event or tally recorded (on a read-only handle of an older store: of
** the newest 4096 events).  O(1).  Returns STORE_OK, STORE_EINVAL,
** STORE_ECORRUPT, STORE_EIO. */
int store_next_attempt(store_env *s, uint64_t *next);

/* Called per key, oldest first: its digest and its outcome's record (the
** event's JSON text as stored; "seq" 0 for a key-only record of
** store_tally_add).  Return 0 to go on, nonzero to stop. */
typedef int (*store_key_fn)(void *arg, const uint8_t digest[32], const char *json, size_t len);
/* Every key kept (at most STORE_KEYS_MAX), oldest first, in one read
** transaction.  None on a read-only handle of an older store.  Returns
** STORE_OK, STORE_EINVAL, STORE_ECORRUPT, STORE_EIO. */
int store_keys_read(store_env *s, store_key_fn fn, void *arg);

/* A counter: how many of (kind, outcome) — each 1 to
** STORE_COUNTER_NAME_MAX bytes of UTF-8 — happened, and when the first
** and the last did (ms since the epoch). */
typedef struct store_count {
  const char *kind, *outcome;
  uint64_t n;
  int64_t first_ms, last_ms;
} store_count;
typedef int (*store_count_fn)(void *arg, const store_count *c);
/* Every counter, by kind then outcome.  Returns as store_keys_read. */
int store_counters_read(store_env *s, store_count_fn fn, void *arg);

/* What a caller keeps of work that leaves no events, written in one
** transaction: counts added to the counters (n to each; last_ms its time,
** 0 for now; first_ms 0 or the time of its first), key-only records (an
** outcome event, given as store_ev, kept under its "idempotency" digest
** as store_keys_read gives it back but not as an event; one without such
** a digest keeps nothing) and the attempt mark raised to at least
** `attempt` (numbers handed out without an event are never handed out
** again). */
typedef struct store_tally {
  const store_count *counts;
  size_t ncounts;
  const store_ev *keys;
  size_t nkeys;
  uint64_t attempt;
} store_tally;
/* flags: 0, or STORE_GROUP_SYNC_LATER (as store_events_append_later).
** Returns STORE_OK, STORE_EINVAL (a bad name, a key record that is not
** JSON members), STORE_EPERM (read-only), STORE_EIO, STORE_ENOMEM. */
int store_tally_add(store_env *s, const store_tally *t, unsigned flags);

/* ---- retention */

/* Prune events beyond the newest `keep` sequence numbers (0: no such
** bound) or older than max_age_ms (0: none) at now_ms (0: now) — at least
** one bound.  Kept whatever their age: the newest event (the sequence goes
** on from it), the "started" event of every attempt without an outcome,
** and sessions' transcripts ("session", "session-..." events).  At most
** max_delete events (0: STORE_PRUNE_BATCH) go per call, oldest first, in
** one write transaction (flags: STORE_GROUP_SYNC_LATER as for
** store_events_append_later); out->more says that more are due.  Keys
** and counters are not events: they stay. */
typedef struct store_retention {
  uint64_t keep;
  int64_t max_age_ms;
  int64_t now_ms;
  size_t max_delete;
  unsigned flags;
} store_retention;
typedef struct store_pruned {
  uint64_t deleted;        /* events deleted by this call */
  uint64_t kept;           /* events within the bounds' reach kept for a reason above */
  uint64_t remaining;      /* events in the store after it */
  int more;                /* max_delete was reached: call again */
} store_pruned;
/* Returns STORE_OK, STORE_EINVAL (no bound), STORE_EPERM (read-only),
** STORE_EIO, STORE_ENOMEM, STORE_ECORRUPT. */
int store_events_prune(store_env *s, const store_retention *r, store_pruned *out);

/* ---- automatic repair (format 4)
**
** The records the repair loop keeps (docs/repair.md; layouts in
** docs/store.md, "Automatic repair"): the policy that opts functions in,
** incidents (failing calls of opted-in functions, deduplicated, taken
** through a fixed set of statuses), and a sample of successful calls to
** replay against a candidate.  Every write is one write transaction; the
** ones taking flags accept STORE_GROUP_SYNC_LATER, which makes them
** journaled writes in journal mode (store_events_append_later says how
** durable that is).  A read-only handle on an older store has none of
** these records: lists are empty and lookups STORE_ENOENT.  A record that
** does not decode is STORE_ECORRUPT naming its database and key. */

#define STORE_REPAIR_RULES_MAX      1024u        /* rules in the policy */
#define STORE_REPAIR_EXPECTED_MAX   16u          /* expected conditions per rule */
#define STORE_REPAIR_EXPECT_MAX     256u         /* bytes of one of them */
#define STORE_EVIDENCE_MAX          (64u << 10)  /* bytes of an incident's evidence */
#define STORE_ARGUMENTS_MAX         (16u << 10)  /* bytes of its latest arguments */
#define STORE_NOTE_MAX              (64u << 10)  /* bytes of one log entry */
#define STORE_INCIDENT_LOG_ENTRIES  64u          /* log entries kept per incident */
#define STORE_INCIDENT_LOG_BYTES    (256u << 10) /* bytes of log texts kept per incident */
#define STORE_TRAFFIC_PER_SIGNATURE 8u           /* calls kept per argument signature */
#define STORE_TRAFFIC_SIGNATURES    16u          /* signatures kept per function */
#define STORE_TRAFFIC_BYTES         (256u << 10) /* bytes of requests and results per function */
#define STORE_TRAFFIC_TEXT_MAX      (16u << 10)  /* bytes of one request or result */
#define STORE_SIGNATURE_MAX         1024u        /* bytes of an argument signature */

/* -- the policy (database "repair")
**
** A rule opts functions in.  Its selector names them:
**   NAME    that function: its entry name, package-qualified as entry
**           names are (TOTAL, APP::RUN); not ending in '*' or ':'
**   NAME*   every function whose name starts with NAME (non-empty): so
**           FOO* also covers FOO* itself and FOO
**   PKG:    every function of package PKG (one ':'): a name's package is
**           what precedes its first "::" outside |bars|; a name without
**           one is COMMON-LISP-USER's
** Each 1..STORE_NAME_MAX bytes of UTF-8 without control characters.  The
** rule's mode says what a failing call does (docs/repair.md, "Modes"),
** and its expected conditions — condition type names (exact) and
** substrings of the condition's report — never open an incident. */
typedef enum store_repair_mode {
  STORE_REPAIR_FAIL = 1,     /* "fail": the call fails at once (the default) */
  STORE_REPAIR_PAUSE,        /* "pause": the call waits at its error */
  STORE_REPAIR_MODE_COUNT
} store_repair_mode;
typedef enum store_selector {
  STORE_SEL_NAME = 1, STORE_SEL_PREFIX, STORE_SEL_PACKAGE
} store_selector;
typedef enum store_expect_kind {
  STORE_EXPECT_CONDITION = 1,   /* "condition": a condition type's name */
  STORE_EXPECT_REPORT,          /* "report": a substring of the report */
  STORE_EXPECT_COUNT
} store_expect_kind;
typedef struct store_expect {
  int kind;                  /* a store_expect_kind */
  const char *text;          /* 1..STORE_REPAIR_EXPECT_MAX bytes of UTF-8 */
} store_expect;
typedef struct store_repair_rule {
  const char *selector;
  int mode;                  /* a store_repair_mode */
  size_t nexpected;          /* 0..STORE_REPAIR_EXPECTED_MAX */
  const store_expect *expected;
} store_repair_rule;

/* "fail", "pause" / "condition", "report"; NULL if invalid.  The parsers
** return the value named, or 0. */
const char *store_repair_mode_name(int mode);
int store_repair_mode_parse(const char *s);
const char *store_expect_kind_name(int kind);
int store_expect_kind_parse(const char *s);
/* The kind of selector sel (a store_selector), or 0 when it is not one. */
int store_selector_kind(const char *sel);

/* Put a rule, replacing the one with the same selector.  Returns STORE_OK,
** or STORE_EINVAL (a bad selector, mode or expected condition, too many
** of them, or a new selector beyond STORE_REPAIR_RULES_MAX; the message
** says which), STORE_EPERM (read-only), STORE_EIO, STORE_ENOMEM. */
int store_repair_put(store_env *s, const store_repair_rule *rule);
/* Delete the rule of selector sel.  Returns STORE_OK, STORE_ENOENT (no
** such rule), STORE_EINVAL, STORE_EPERM, STORE_EIO. */
int store_repair_delete(store_env *s, const char *sel);
/* Every rule, by selector (bytewise), in one allocation (*rules, release
** with store_free; NULL when there are none) of *n rules.  Returns
** STORE_OK, STORE_ECORRUPT, STORE_ENOMEM, STORE_EIO, STORE_EINVAL. */
int store_repair_list(store_env *s, store_repair_rule **rules, size_t *n);
/* The rule that applies to function (an entry name): the most specific
** one — its exact name over the longest prefix over its package — in one
** allocation (*out, store_free).  Returns STORE_OK, STORE_ENOENT (no rule
** applies: the function is not opted in), and as store_repair_list. */
int store_repair_match(store_env *s, const char *function, store_repair_rule **out);
/* The same over rules[0..n) in memory (a caller's copy of the list): the
** index of the rule that applies, or -1. */
long store_repair_pick(const store_repair_rule *rules, size_t n, const char *function);
/* 1 when a condition of type condition (may be NULL) with report report
** (may be NULL) is one rule expects (never an incident), else 0. */
int store_repair_expected(const store_repair_rule *rule, const char *condition, const char *report);

/* -- incidents (databases "incidents", "incopen")
**
** An incident is a failing call of an opted-in function, kept under a u64
** id (1, 2, 3 ... never reused).  Its status is one of: */
typedef enum store_incident_status {
  STORE_INC_CAPTURED = 1,        /* "captured": recorded, nobody took it yet */
  STORE_INC_AWAITING_MODEL,      /* "awaiting-model": a supervisor asked a model */
  STORE_INC_VERIFYING,           /* "verifying": a candidate runs in a shadow */
  STORE_INC_REPAIRED,            /* "repaired": a repair was applied */
  STORE_INC_REJECTED,            /* "rejected": no candidate passed */
  STORE_INC_DECLINED_EXPECTED,   /* "declined-expected": the model says it is expected */
  STORE_INC_DECLINED_INSUFFICIENT, /* "declined-insufficient-evidence" */
  STORE_INC_STALE,               /* "stale": the definition changed meanwhile */
  STORE_INC_CANCELLED,           /* "cancelled": repair disabled, supervisor stopped */
  STORE_INC_FAILED,              /* "failed": the loop itself failed (model, budget) */
  STORE_INC_INTERRUPTED,         /* "interrupted": the kernel died while verifying */
  STORE_INC_TENTATIVE,           /* "tentative": a repair applied, not yet promoted */
  STORE_INC_STATUS_COUNT
} store_incident_status;
/* The open statuses (a mask of 1u << status): a failure joins an incident
** only while it is open. */
#define STORE_INC_OPEN_MASK ((1u << STORE_INC_CAPTURED) | (1u << STORE_INC_AWAITING_MODEL) | \
                             (1u << STORE_INC_VERIFYING))
/* "captured", ...; NULL if invalid / the status named, or 0. */
const char *store_incident_status_name(int status);
int store_incident_status_parse(const char *s);
/* 1 when status is open (captured, awaiting-model, verifying). */
int store_incident_is_open(int status);
/* 1 when from -> to is a transition store_incident_transition allows:
**
**   from             to
**   captured         awaiting-model, stale, cancelled, failed
**   awaiting-model   verifying, declined-expected,
**                    declined-insufficient-evidence, rejected, stale,
**                    cancelled, failed
**   verifying        awaiting-model (another attempt), repaired, tentative,
**                    rejected, stale, cancelled, failed, interrupted
**   tentative        repaired (promoted), captured (rejected, undone by the
**                    watch or a restart), stale (its entries changed since)
**   repaired         captured (the watch reopens it)
**   any other        none: the other statuses are terminal
*/
int store_incident_transition_allowed(int from, int to);

/* What opened an incident: */
typedef enum store_incident_kind {
  STORE_INCK_FAILURE = 1,      /* "failure": a failing call, captured */
  STORE_INCK_EXPLICIT,         /* "explicit": an operator's heal; never joined */
  STORE_INCK_COUNT
} store_incident_kind;
/* "failure", ...; NULL if invalid / the kind named, or 0. */
const char *store_incident_kind_name(int kind);
int store_incident_kind_parse(const char *s);

/* What an incident's log holds: one entry per exchange with a model or
** per verification, each a JSON text the supervisor writes. */
typedef enum store_note_kind {
  STORE_NOTE_EXCHANGE = 1,     /* "exchange" */
  STORE_NOTE_VERIFICATION,     /* "verification" */
  STORE_NOTE_COUNT
} store_note_kind;
const char *store_note_kind_name(int kind);
int store_note_kind_parse(const char *s);

typedef struct store_note {
  int64_t time_ms;
  int kind;                    /* a store_note_kind */
  const char *text;            /* NUL-terminated JSON text */
  size_t len;
} store_note;

typedef struct store_incident {
  uint64_t id;
  int status;                  /* a store_incident_status */
  int kind;                    /* a store_incident_kind */
  const char *function;        /* entry name */
  const char *condition;       /* condition type */
  uint8_t definition[32];      /* the failing definition's entry hash */
  uint64_t count;              /* failures it holds (1 + joins) */
  int64_t first_ms, last_ms;   /* the first and the latest failure */
  uint64_t revision;           /* the revision it became, 0 none */
  const char *evidence;        /* JSON text (the first failure's) */
  size_t evidence_len;
  const char *arguments;       /* the latest failure's arguments (text) */
  size_t arguments_len;
  uint64_t dropped;            /* log entries dropped, oldest first */
  size_t nlog;
  const store_note *log;       /* oldest first */
} store_incident;

/* A failing call, for store_incident_open. */
typedef struct store_failure {
  const char *function;        /* 1..STORE_NAME_MAX bytes of UTF-8 */
  const char *condition;       /* the condition type, the same bounds */
  uint8_t definition[32];      /* entry hash of the function's definition */
  const char *evidence;        /* JSON text, at most STORE_EVIDENCE_MAX */
  size_t evidence_len;
  const char *arguments;       /* UTF-8 text, at most STORE_ARGUMENTS_MAX (may be NULL) */
  size_t arguments_len;
  int64_t time_ms;             /* 0: now */
  int kind;                    /* a store_incident_kind (0: failure) */
} store_failure;

/* Record a failure: it joins the open incident (captured, awaiting-model,
** verifying) of the same kind failure, function, condition type and
** definition hash —
** its count goes up by one, its last time becomes time_ms (if later) and
** its latest arguments f's; its evidence stays the first failure's — or,
** when there is none, opens a new one (captured, count 1) and appends an
** "incident" event {"incident":ID,"status":"captured","function":F} in
** the same transaction (a join appends none).  A failure of kind explicit
** never joins: it always opens its own.  *id receives the
** incident's id, *joined (may be NULL) 1 when it joined.  flags: 0 or
** STORE_GROUP_SYNC_LATER.  Returns STORE_OK, STORE_EINVAL (a bad name,
** evidence that is not JSON or is longer than STORE_EVIDENCE_MAX,
** arguments longer than STORE_ARGUMENTS_MAX or not UTF-8), STORE_EPERM
** (read-only), STORE_ECORRUPT, STORE_EIO, STORE_ENOMEM. */
int store_incident_open(store_env *s, const store_failure *f, unsigned flags, uint64_t *id, int *joined);

/* Incident id, in one allocation (*out, store_free).  Returns STORE_OK,
** STORE_ENOENT, STORE_ECORRUPT, STORE_ENOMEM, STORE_EIO, STORE_EINVAL. */
int store_incident_get(store_env *s, uint64_t id, store_incident **out);

/* Called per incident; inc is valid during the call only.  Return 0 to go
** on, nonzero to stop. */
typedef int (*store_incident_fn)(void *arg, const store_incident *inc);
/* The incidents whose status is in status_mask (1u << status each; 0:
** all), newest (highest id) first, at most limit (0: no limit), in one
** read transaction.  A mask of open statuses only reads the open ones
** (O(open incidents)); any other reads back from the newest.  Returns as
** store_incident_get (STORE_EINVAL: a mask with unknown bits). */
int store_incidents_list(store_env *s, unsigned status_mask, size_t limit, store_incident_fn fn, void *arg);

/* Move incident id from status `from` to `to`, and append an "incident"
** event {"incident":ID,"status":TO,"from":FROM,"function":F} in the same
** transaction (*event_seq, may be NULL, receives its seq).  The move is
** refused unless the incident is at `from` now: two supervisors, or a
** supervisor and a racing edit, cannot both take it.  Leaving the open
** statuses takes it out of deduplication; repaired -> captured puts it
** back (when another open incident has its key, failures join the one
** with the lower id).  flags: 0 or STORE_GROUP_SYNC_LATER.  Returns STORE_OK,
** STORE_ECONFLICT (its status is not `from`: nothing written; the message
** names it), STORE_EINVAL (from -> to is not an allowed transition, or a
** status is invalid), STORE_ENOENT (no such incident), STORE_EPERM,
** STORE_ECORRUPT, STORE_EIO, STORE_ENOMEM. */
int store_incident_transition(store_env *s, uint64_t id, int from, int to, unsigned flags, uint64_t *event_seq);

/* Append an entry to incident id's log (any status): kind, a JSON text of
** at most STORE_NOTE_MAX bytes, time_ms (0: now).  The log keeps the
** newest STORE_INCIDENT_LOG_ENTRIES entries within
** STORE_INCIDENT_LOG_BYTES of texts: older ones are dropped, oldest first,
** and counted in `dropped` (the marker a reader shows).  flags: 0 or
** STORE_GROUP_SYNC_LATER.  Returns STORE_OK, STORE_EINVAL, STORE_ENOENT,
** STORE_EPERM, STORE_ECORRUPT, STORE_EIO, STORE_ENOMEM. */
int store_incident_note(store_env *s, uint64_t id, int kind, const char *text, size_t len, int64_t time_ms,
                        unsigned flags);

/* Record the revision incident id became (1..CURRENT; 0 clears it).
** Returns STORE_OK, STORE_EINVAL (a revision beyond CURRENT), STORE_ENOENT,
** STORE_EPERM, STORE_ECORRUPT, STORE_EIO. */
int store_incident_set_revision(store_env *s, uint64_t id, uint64_t rev, unsigned flags);

/* At recovery: every incident `verifying` becomes `interrupted` (a repair
** is applied by one transaction or not at all; the verification is not
** resumed), each with its "incident" event, in one full commit.  Reads the
** open incidents only.  *count (may be NULL) receives how many.  Returns
** STORE_OK, STORE_EPERM, STORE_ECORRUPT, STORE_EIO, STORE_ENOMEM. */
int store_incidents_interrupt_verifying(store_env *s, uint64_t *count);

/* -- the traffic sample (database "traffic")
**
** Per function, per argument signature (a string the caller computes, e.g.
** the type of each argument, 0..STORE_SIGNATURE_MAX bytes of UTF-8), a
** reservoir of STORE_TRAFFIC_PER_SIGNATURE recorded successful calls, each
** the exact request source, the printed result, its 32-byte digest and
** its time.  At most STORE_TRAFFIC_SIGNATURES signatures per function (a
** call of a further signature is not kept) and STORE_TRAFFIC_BYTES of
** requests and results per function (a call that would go beyond is not
** kept).  Sampling is reservoir sampling (algorithm R) per signature: the
** n-th call offered of a signature fills slot n while n <= the capacity,
** and afterwards replaces slot (rng % n) when that is below the capacity
** — deterministic given the caller's random values. */
typedef enum store_traffic_outcome {
  STORE_TRAFFIC_KEPT = 1,     /* it filled a free slot */
  STORE_TRAFFIC_REPLACED,     /* it replaced an earlier call */
  STORE_TRAFFIC_SAMPLED_OUT,  /* the reservoir chose not to keep it */
  STORE_TRAFFIC_FULL          /* beyond the signatures or bytes of its function */
} store_traffic_outcome;

typedef struct store_traffic_call {
  const char *signature;       /* NUL-terminated, as are request and result */
  const char *request;
  size_t request_len;
  const char *result;
  size_t result_len;
  uint8_t digest[32];
  int64_t time_ms;
  unsigned slot;               /* its place in the reservoir, 1.. */
} store_traffic_call;

/* Offer a successful call of function (an entry name) with signature,
** request and result (each at most STORE_TRAFFIC_TEXT_MAX bytes of UTF-8:
** callers record only small, readable calls), digest (32 bytes), time_ms
** (0: now) and a random value rng.  *outcome (may be NULL) receives a
** store_traffic_outcome.  flags: 0 or STORE_GROUP_SYNC_LATER.  Returns
** STORE_OK, STORE_EINVAL (a bad name or signature, a text too long or not
** UTF-8), STORE_EPERM, STORE_ECORRUPT, STORE_EIO, STORE_ENOMEM. */
int store_traffic_record(store_env *s, const char *function, const char *signature, const char *request,
                         const char *result, const uint8_t digest[32], int64_t time_ms, uint64_t rng,
                         unsigned flags, int *outcome);
/* Several calls offered in one write transaction (the kernel's: those a
** group of calls, or its timed writes, carry), in order, each exactly as
** store_traffic_record would take it.  outcomes (may be NULL) receives
** one store_traffic_outcome per call.  Every call is checked before the
** transaction: one that breaks a rule is STORE_EINVAL, and nothing is
** written.  flags: STORE_GROUP_SYNC_LATER, and STORE_TRAFFIC_HASH_RESULT:
** each call's digest is the SHA-256 of its result, computed by the store
** for the calls it keeps only (the offers' digests are not read; most
** calls of a busy signature are sampled out).  Returns as
** store_traffic_record. */
#define STORE_TRAFFIC_HASH_RESULT 0x100u
typedef struct store_traffic_offer {
  const char *function, *signature, *request, *result;   /* NUL-terminated */
  uint8_t digest[32];
  int64_t time_ms;
  uint64_t rng;
} store_traffic_offer;
int store_traffic_record_many(store_env *s, const store_traffic_offer *calls, size_t n, unsigned flags,
                              int *outcomes);
/* Called per call kept; c is valid during the call only.  Return 0 to go
** on, nonzero to stop. */
typedef int (*store_traffic_fn)(void *arg, const store_traffic_call *c);
/* The calls kept for function, by signature (in the order of their
** digests), then by slot.  Returns STORE_OK (also when none are kept),
** STORE_EINVAL, STORE_ECORRUPT, STORE_ENOMEM, STORE_EIO. */
int store_traffic_list(store_env *s, const char *function, store_traffic_fn fn, void *arg);
/* Forget every call kept for function (its definition changed, or repair
** was disabled).  flags: 0 or STORE_GROUP_SYNC_LATER.  Returns STORE_OK
** (also when none were kept), STORE_EINVAL, STORE_EPERM, STORE_EIO. */
int store_traffic_forget(store_env *s, const char *function, unsigned flags);
/* Called per function that has calls kept (in the order of the digests of
** their names); function is valid during the call only.  Return 0 to go
** on, nonzero to stop. */
typedef int (*store_traffic_function_fn)(void *arg, const char *function, uint32_t signatures, uint64_t bytes);
/* The functions with a sample, each with its signatures and bytes kept
** (a scan of the database, for the rare change that forgets some).
** Returns STORE_OK, STORE_EINVAL (no callback), STORE_ECORRUPT,
** STORE_ENOMEM, STORE_EIO. */
int store_traffic_functions(store_env *s, store_traffic_function_fn fn, void *arg);

#endif
