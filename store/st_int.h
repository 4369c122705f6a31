/* st_int.h — the store's internal interfaces.
**
** Modules and their prefixes:
**   st_env.c     the handle: open/close, errors, transactions, map growth
**   st_file.c    files on disk: directory, write lock, data-file header check,
**                atomic creation of a new store
**   st_codec.c   byte order, kinds, hashing, entry and manifest records
**   st_map.c     an in-memory map  key -> hash  (old revisions, verify, revert)
**   st_fetch.c   fetching the entries of many keys at once, in hash order
**   st_rev.c     publishing and reading revisions
**   st_verify.c  store_verify
**   st_event.c   events
**   st_index.c   what the store keeps of its events beside them: the open
**                attempts, the attempt mark, idempotency keys; counters
**   st_retain.c  pruning old events (the retention policy)
**   st_journal.c the journal: SYNC_LATER writes as one append each,
**                checkpoints, replay at open
**   st_repair.c  the repair policy: rules by selector, matching (format 4)
**   st_incident.c incidents: records, deduplication, transitions (format 4)
**   st_traffic.c the traffic sample: reservoirs of successful calls (format 4)
**
** Keys and values in the named databases (all integers big-endian):
**   meta       "format" -> u32,  "id" -> 16 bytes,  "current" -> u64,
**              "generation" -> u64 (the high-water mark; absent until raised)
**   revisions  u64 revision -> manifest (st_codec.c)
**   entries    32-byte hash -> u8 kind, u16 name length, name, bytes
**   names      u8 kind, name -> 32-byte hash           (the current map)
**   events     u64 sequence -> JSON text
**   attempts   u64 attempt -> u64 seq of its "started" event: the attempts
**              without an outcome (format 3)
**   keys       32-byte SHA-256 of an idempotency key -> u64 order number,
**              then the JSON text of its outcome (format 3)
**   keyorder   u64 order number -> 32-byte key digest (format 3)
**   counters   kind NUL outcome -> u64 count, i64 first ms, i64 last ms
**              (format 3)
**   repair     selector -> rule (st_repair.c)                  (format 4)
**   incidents  u64 id -> incident record (st_incident.c)       (format 4)
**   incopen    32-byte dedup digest, u64 id -> "" : the open incidents
**              (format 4)
**   traffic    32-byte function digest [, 32-byte signature digest, u8
**              slot] -> header or sample (st_traffic.c)         (format 4)
** and in meta: "attempt" -> u64 the largest attempt number recorded,
** "keyseq" -> u64 the last key order number (format 3), "incident" -> u64
** the last incident id handed out (format 4).
*/
#ifndef st_int_h
#define st_int_h

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <lmdb.h>
#include <openssl/evp.h>
#include "store.h"

#define ST_MSG_MAX 1024
#define ST_DEFAULT_MAPSIZE ((size_t)64 << 20)

/* Internal result beside the store_err codes: the map is full, grow and
** retry the transaction (never returned to a caller of the public API). */
#define ST_MAPFULL (-1)
/* Internal: the transaction made no change, abort it and report success. */
#define ST_NOCHANGE (-2)

/* A handle's journal (st_journal.c); fd -1 outside journal mode. */
typedef struct st_journal {
  int fd;
  uint64_t epoch, seq;       /* the records being appended; the next one's number */
  uint64_t off, size;        /* where the next record goes; the file's allocated size */
  MDB_txn *txn;              /* the long transaction: writes since the checkpoint */
  pthread_t owner;           /* the thread that began it (LMDB: it alone may end it) */
  uint8_t *ops;              /* the puts and deletes of the write under way */
  size_t len, cap;
  int capture;               /* st_put and deletes record into ops */
  int failed;                /* ops could not grow: the write fails */
  int broken;                /* a checkpoint failed: only reopening recovers */
  char why[256];             /* the failed checkpoint's message */
} st_journal;

struct store_env {
  MDB_env *env;
  MDB_dbi meta, revs, entries, names, events;
  MDB_dbi attempts, keys, keyorder, counters;   /* format 3 */
  MDB_dbi repair, incidents, incopen, traffic;  /* format 4 */
  int indexed;               /* the format-3 databases are open: 0 only for a
                                read-only handle on an older store */
  int repairs;               /* the format-4 databases are open (the same) */
  int lockfd;                /* -1 for a read-only handle */
  int datafd;                /* data.mdb (LMDB's), for store_sync; -1 read-only */
  unsigned flags;
  void (*hook)(void *, store_point);
  void *hook_arg;
  char path[4096];
  char msg[ST_MSG_MAX];
  st_journal j;
  int txn_full;              /* the last st_mdb error was MDB_TXN_FULL */
  int no_room;               /* the last st_mdb error was a full disk */
};

/* The named databases in one fixed order (meta, revisions, entries,
** names, events, then format 3's attempts, keys, keyorder, counters, then
** format 4's repair, incidents, incopen, traffic): the journal's database
** numbers. */
#define ST_NDBS 13
#define ST_NDBS_V2 5   /* those of formats 1 and 2 */
#define ST_NDBS_V3 9   /* those of format 3 */
extern const char *const st_db_names[ST_NDBS];
static inline void st_dbis(const store_env *s, MDB_dbi out[ST_NDBS]) {
  out[0] = s->meta, out[1] = s->revs, out[2] = s->entries, out[3] = s->names, out[4] = s->events;
  out[5] = s->attempts, out[6] = s->keys, out[7] = s->keyorder, out[8] = s->counters;
  out[9] = s->repair, out[10] = s->incidents, out[11] = s->incopen, out[12] = s->traffic;
}

/* ---- st_migrate.c */

#define ST_FORMAT_OLDEST 1u   /* the oldest format a migration brings up to date */
/* A store of format `format` may be used: the current version, or an older
** one (read as is by a read-only handle, upgraded in one write transaction
** otherwise); else STORE_EVERSION.  Called once the journal's records are
** in (a migration indexes every event). */
int st_format_check(store_env *s, uint32_t format);
/* Open (create: within txn, a write transaction) format 3's databases. */
int st_open_index_dbs(store_env *s, MDB_txn *txn, int create);
/* The same for format 4's (repair, incidents, incopen, traffic). */
int st_open_repair_dbs(store_env *s, MDB_txn *txn, int create);

/* ---- st_env.c */

/* Record "store PATH: <fmt ...>" as the message and return code. */
int st_fail(store_env *s, int code, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* Map an LMDB or errno code to a store_err (MDB_MAP_FULL -> ST_MAPFULL),
** recording "store PATH: WHAT: <reason>" unless it is ST_MAPFULL. */
int st_mdb(store_env *s, int rc, const char *what);
/* The same mapping without a message. */
int st_code(int rc);

typedef int (*st_txn_fn)(store_env *s, MDB_txn *txn, void *arg);
/* Run fn in a write transaction and commit it.  fn returns STORE_OK to
** commit, ST_NOCHANGE to abort and report success, ST_MAPFULL to abort,
** double the map and run again, or an error to abort and return it.
** flags: ST_W_HOOKS calls the test hook before and after mdb_txn_commit;
** ST_W_SYNC_LATER commits without syncing the meta page (see
** STORE_GROUP_SYNC_LATER). */
#define ST_W_HOOKS 0x1
#define ST_W_SYNC_LATER 0x2
int st_write(store_env *s, st_txn_fn fn, void *arg, int flags);
/* st_write without the journal (no journaled writes may be pending). */
int st_write_direct(store_env *s, st_txn_fn fn, void *arg, int flags);
/* After a commit: data.mdb extended to the last page LMDB's meta page
** counts (st_env.c says why). */
void st_datafile_extend(store_env *s);

/* st_event.c: events inside a write transaction.  st_events_check
** validates and redacts them first (outside it); st_events_put appends
** them, the first sequence number in *first (may be NULL). */
struct json_t;
int st_events_check(store_env *s, struct json_t *const *objs, size_t n);
int st_events_put(store_env *s, MDB_txn *txn, struct json_t *const *objs, const int64_t *times,
                  size_t n, uint64_t *first);
/* The same for events given as store_ev: st_events_prepare (outside the
** transaction) checks and redacts the objects, vouches for each text or
** parses it, and gives the objects to write (*obj[i], NULL for a text
** written as it is; st_events_release frees them); st_events_put_ev
** appends. */
int st_events_prepare(store_env *s, const store_ev *ev, size_t n, struct json_t ***obj);
void st_events_release(struct json_t **obj, size_t n);
/* objs[0..n) (times may be NULL) as store_ev, malloc'd; NULL when out of memory. */
store_ev *st_ev_of_objects(struct json_t *const *objs, const int64_t *times, size_t n);
int st_events_put_ev(store_env *s, MDB_txn *txn, const store_ev *ev, struct json_t *const *obj, size_t n,
                     uint64_t *first);
/* What the indices need of an event (st_index.c): its "event" (a
** store_event, or -1), its "attempt" (has_attempt), and the digest of
** its "idempotency" member (has_key: 64 hex digits; a legacy store's
** events held the key itself: legacy_keys hashes such a value). */
typedef struct st_evinfo {
  int ev;
  int has_attempt, has_key;
  uint64_t attempt;
  uint8_t key[32];
} st_evinfo;
/* The members of event object o. */
void st_evinfo_of_object(struct json_t *o, st_evinfo *info, int legacy_keys);
/* The same from members text m[0..n) (JSON members, as st_events_prepare
** vouched for them): the top level's "event", "attempt" and
** "idempotency".  0, or -1 when it is not JSON members (or, legacy_keys,
** the key is escaped: parse it and take st_evinfo_of_object's). */
int st_evinfo_of_members(const char *m, size_t n, st_evinfo *info, int legacy_keys);
/* Render the record of event e (obj: its prepared object, or NULL for
** plain members) as stored under seq at time t: into *buf (grown),
** *text and *len the record (not *buf when cut short: the caller frees it). */
int st_event_render(store_env *s, const store_ev *e, struct json_t *obj, uint64_t seq, int64_t t, char **buf,
                    size_t *cap, char **text, size_t *len);
/* Begin a read-only transaction (adopting a map grown by another process).
** With journaled writes pending on this thread: a nested transaction of
** theirs (the caller aborts it as it would the other). */
int st_read_begin(store_env *s, MDB_txn **txn);
/* Double the map.  No transaction of this handle may be active. */
int st_grow(store_env *s);
void st_hook(store_env *s, store_point at);
/* CURRENT as seen by txn. */
int st_get_current(store_env *s, MDB_txn *txn, uint64_t *rev);
/* mdb_put with MDB_MAP_FULL reported as ST_MAPFULL. */
int st_put(store_env *s, MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen,
           const void *v, size_t vlen, unsigned flags, const char *what);
/* mdb_del of key k (all its value), recorded in the journal; a key that
** is not there is no error. */
int st_del(store_env *s, MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, const char *what);
/* The same for the record under cur (a cursor of txn on dbi). */
int st_cursor_del(store_env *s, MDB_cursor *cur, MDB_dbi dbi, const void *k, size_t klen, const char *what);
int64_t st_now_ms(void);

/* ---- st_index.c */

/* Keep the indices of event seq (its record text[0..len)), written in txn:
** a "started" opens its attempt, an outcome closes it, and an outcome
** with an idempotency digest records its key.  *mark rises to its
** attempt.  A no-op on a handle without the format-3 databases. */
int st_index_event(store_env *s, MDB_txn *txn, uint64_t seq, const st_evinfo *info, const char *text,
                   size_t len, uint64_t *mark);
/* Raise meta "attempt" to mark (a smaller one leaves it). */
int st_raise_attempt(store_env *s, MDB_txn *txn, uint64_t mark);
/* Record key record text[0..len) under digest key (st_index_event's, and
** store_tally's key-only records), keeping the newest STORE_KEYS_MAX. */
int st_key_put(store_env *s, MDB_txn *txn, const uint8_t key[32], const char *text, size_t len);
/* Build every index from the events (the migration to format 3), within
** txn: one read of every event, O(open attempts + STORE_KEYS_MAX) memory
** and writes; once. */
int st_index_rebuild(store_env *s, MDB_txn *txn);

/* ---- st_repair.c, st_incident.c, st_traffic.c: store_verify's checks of
** their databases within txn (every record decodes, the indices agree).
** STORE_OK on a handle without them. */
int st_verify_repair(store_env *s, MDB_txn *txn);
int st_verify_incidents(store_env *s, MDB_txn *txn);
int st_verify_traffic(store_env *s, MDB_txn *txn);
/* Within txn: incident id moves from verifying to repaired (tentative:
** to tentative), its revision rev, with its event (a group's revision that
** repairs it, st_rev.c). */
int st_incident_repaired(store_env *s, MDB_txn *txn, uint64_t id, uint64_t rev, int tentative);
/* A meta u64 (0 when absent), and writing one (st_index.c). */
int st_meta_u64(store_env *s, MDB_txn *txn, const char *name, uint64_t *v);
int st_put_meta_u64(store_env *s, MDB_txn *txn, const char *name, uint64_t v);

/* Reading a record: each call takes bytes from the front; a read past the
** end sets bad (and returns zeros), so a decoder checks once at its end. */
typedef struct st_rd { const uint8_t *p, *end; int bad; } st_rd;
static inline const uint8_t *st_rd_take(st_rd *r, size_t n) {
  if (r->bad || (size_t)(r->end - r->p) < n) { r->bad = 1; return NULL; }
  const uint8_t *at = r->p;
  r->p += n;
  return at;
}
static inline uint8_t st_rd_u8(st_rd *r) { const uint8_t *p = st_rd_take(r, 1); return p ? p[0] : 0; }
static inline uint16_t st_rd_u16(st_rd *r) {
  const uint8_t *p = st_rd_take(r, 2);
  return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}
static inline uint32_t st_rd_u32(st_rd *r) {
  const uint8_t *p = st_rd_take(r, 4);
  return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}
static inline uint64_t st_rd_u64(st_rd *r) {
  const uint8_t *p = st_rd_take(r, 8);
  uint64_t v = 0;
  for (int i = 0; p && i < 8; i++) v = v << 8 | p[i];
  return v;
}
/* Writing one into a buffer of the size computed first. */
typedef struct st_wr { uint8_t *p; } st_wr;
static inline void st_wr_u8(st_wr *w, uint8_t v) { *w->p++ = v; }
static inline void st_wr_u16(st_wr *w, uint16_t v) { *w->p++ = (uint8_t)(v >> 8); *w->p++ = (uint8_t)v; }
static inline void st_wr_u32(st_wr *w, uint32_t v) { for (int i = 3; i >= 0; i--) *w->p++ = (uint8_t)(v >> (8 * i)); }
static inline void st_wr_u64(st_wr *w, uint64_t v) { for (int i = 7; i >= 0; i--) *w->p++ = (uint8_t)(v >> (8 * i)); }
static inline void st_wr_bytes(st_wr *w, const void *b, size_t n) {
  if (n) memcpy(w->p, b, n);
  w->p += n;
}

/* ---- st_journal.c */

/* A put (del 0, value v) or delete (del 1) made in a journaled write, to
** record with it (nothing outside one). */
void st_journal_op(store_env *s, int del, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen);
/* st_write for ST_W_SYNC_LATER in journal mode. */
int st_journal_write(store_env *s, st_txn_fn fn, void *arg, int flags);
/* At open, for writing: apply the records of DIR/journal's epoch (a full
** commit) and start a new epoch.  A torn tail is dropped; damage returns
** STORE_EJOURNAL and changes nothing, unless o->accept_loss (o may be
** NULL); o->loss receives it. */
int st_journal_recover(store_env *s, const store_options *o);
/* fdatasync of the journal: 0 or -1 (errno). */
int st_journal_sync(store_env *s);
/* Before a read-only open of s->path: the journal's records reach
** data.mdb (replayed here when no writer holds the store, else its next
** checkpoint awaited, for at most 10 s).  STORE_EJOURNAL (message in s,
** what it holds in *loss when loss is not NULL) when the journal is
** damaged; otherwise STORE_OK, and the reader reports what it finds. */
int st_journal_settle(store_env *s, store_journal_loss *loss);
/* At close: a checkpoint when this thread may make it. */
void st_journal_close(store_env *s);

/* ---- st_file.c */

int st_fix_std_fds(void);
int st_lock(store_env *s);
void st_unlock(store_env *s);
/* Check DIR/data.mdb before LMDB maps it: magic, version, and that the file
** holds every page its newest meta page claims.  *mapsize receives the map
** size recorded in the header.  STORE_ENOENT when the file is missing. */
int st_check_datafile(store_env *s, size_t *mapsize);
/* Create a new, initialised DIR/data.mdb atomically (built beside it, then
** renamed into place). */
int st_create(store_env *s, size_t mapsize);

/* ---- st_codec.c */

void st_put_u16(uint8_t *p, uint16_t v);
void st_put_u32(uint8_t *p, uint32_t v);
void st_put_u64(uint8_t *p, uint64_t v);
uint16_t st_get_u16(const uint8_t *p);
uint32_t st_get_u32(const uint8_t *p);
uint64_t st_get_u64(const uint8_t *p);

int st_valid_kind(int kind);
/* Validate kind and name; on failure record a message and return EINVAL. */
int st_check_key(store_env *s, int kind, const char *name, size_t *nlen);

/* A digest context and the SHA-256 implementation fetched once: hashing
** many entries through one is several times cheaper than one-off calls. */
typedef struct st_hasher { EVP_MD_CTX *ctx; EVP_MD *md; } st_hasher;
/* STORE_OK or STORE_ENOMEM (then nothing needs freeing). */
int st_hasher_init(st_hasher *h);
void st_hasher_free(st_hasher *h);

/* SHA-256 of kind "\0" name "\0" bytes.  reuse: a hasher (for loops), or
** NULL. */
int st_hash(st_hasher *reuse, int kind, const char *name, size_t nlen,
            const void *bytes, size_t len, uint8_t out[32]);
/* SHA-256 of a buffer. */
int st_sha256(st_hasher *reuse, const void *p, size_t n, uint8_t out[32]);   /* reuse may be NULL */

/* The names-database key: u8 kind, name.  buf: 1 + STORE_NAME_MAX bytes. */
size_t st_key_make(uint8_t *buf, int kind, const char *name, size_t nlen);

/* An entries-database value. */
size_t st_entry_size(size_t nlen, size_t len);
void st_entry_encode(uint8_t *out, int kind, const char *name, size_t nlen,
                     const void *bytes, size_t len);
/* Decode in place (name is not NUL-terminated: *nlen).  0 or -1. */
int st_entry_decode(const void *v, size_t vlen, int *kind, const char **name,
                    size_t *nlen, const void **bytes, size_t *len);

/* A manifest being written. */
typedef struct st_change {
  int kind;
  const char *name;
  size_t nlen;
  int has_old, has_new;
  uint8_t old_hash[32], new_hash[32];
} st_change;

typedef struct st_manifest_in {
  uint64_t parent, generation, rollback_of, nentries;
  int64_t time_ms;
  int kind;
  const char *kernel_version, *summary, *response_id, *foreign;
  const st_change *changes;
  size_t nchanges;
} st_manifest_in;

size_t st_manifest_size(const st_manifest_in *m);
void st_manifest_encode(uint8_t *out, const st_manifest_in *m, st_hasher *hs);   /* hs may be NULL */
/* Decode into one allocation (store_free).  rev is stored in the result.
** changes 0: the header only (nchanges counted, changes NULL), though the
** checksum and the structure of the whole record are still checked.
** Returns STORE_OK, STORE_ECORRUPT (with *why set), STORE_ENOMEM. */
int st_manifest_decode(const void *v, size_t vlen, uint64_t rev, int changes,
                       store_manifest **out, const char **why);
/* Check a manifest without decoding its strings and changes: fills the
** header fields of *hdr (nchanges included) and counts the changes that add
** and that remove a key.  Returns STORE_OK or STORE_ECORRUPT with *why. */
int st_manifest_check(const void *v, size_t vlen, store_manifest *hdr,
                      uint64_t *nadd, uint64_t *nrem, const char **why);

/* ---- st_map.c: key (kind byte + name) -> 32-byte hash */

typedef struct st_map st_map;
typedef struct st_slot {
  uint8_t *key;       /* NULL: empty; key[0] is the kind */
  size_t klen;
  uint8_t hash[32];
  int dead;           /* a tombstone */
} st_slot;
struct st_map {
  st_slot *slots;
  size_t cap, count, used;   /* used counts live + dead slots */
};

void st_map_init(st_map *m);
void st_map_free(st_map *m);
/* 0, or -1 when out of memory. */
int st_map_set(st_map *m, const uint8_t *key, size_t klen, const uint8_t hash[32]);
const uint8_t *st_map_get(const st_map *m, const uint8_t *key, size_t klen);
/* 1 if removed, 0 if absent. */
int st_map_del(st_map *m, const uint8_t *key, size_t klen);
/* The live slots sorted by key, in a new array of *n pointers (NULL + *n 0
** when empty; NULL + -1 return when out of memory). */
int st_map_sorted(const st_map *m, st_slot ***out, size_t *n);
/* Make room for n keys. 0 or -1. */
int st_map_reserve(st_map *m, size_t n);
/* Fill m with the names database as seen by txn. */
int st_map_load(store_env *s, MDB_txn *txn, st_map *m);
/* Undo revision rev's delta in m (m must be revision rev's map).
** Returns STORE_OK, or STORE_ECORRUPT naming the inconsistency. */
int st_map_undo(store_env *s, st_map *m, const store_manifest *man);

/* ---- st_fetch.c: the entries of many map keys, fetched in hash order */

typedef struct st_ref {
  uint64_t top;            /* the first 8 bytes of hash, big-endian (sort key) */
  const uint8_t *key;      /* the map key: kind byte + name */
  size_t klen;
  const uint8_t *hash;     /* 32 bytes */
  const void *bytes;       /* the entry's encoding, once fetched */
  size_t len;
} st_ref;
typedef struct st_refs { st_ref *v; size_t n, cap; } st_refs;

/* Room for n refs in one allocation (an upper bound is fine: untouched
** memory costs nothing).  0, or -1 out of memory. */
int st_refs_reserve(st_refs *r, size_t n);
/* Append a ref (key and hash are not copied).  0, or -1 out of memory. */
int st_refs_add(st_refs *r, const uint8_t *key, size_t klen, const uint8_t *hash);
void st_refs_free(st_refs *r);
/* Append the current map's records of one kind (kind > 0) or of all kinds
** (kind 0) in key order, read through cur (a cursor on the names
** database); check_kind: a record of no valid kind is malformed too.
** Returns STORE_OK, STORE_ECORRUPT (a malformed record), STORE_ENOMEM,
** STORE_EIO. */
int st_refs_gather(store_env *s, MDB_cursor *cur, int kind, int check_kind, st_refs *refs);
/* Look up the entry of every ref, in hash order, and check that it exists,
** decodes and carries its key's kind and name; with verify (a hasher) also
** that it re-hashes to its hash, reported in store_verify's words.  Fills
** bytes and len.  Returns STORE_OK, or the first problem in hash order:
** STORE_ECORRUPT, STORE_ENOMEM, STORE_EIO. */
int st_refs_fetch(store_env *s, MDB_txn *txn, st_refs *r, st_hasher *verify);

/* ---- st_rev.c */

/* Raise the generation high-water mark to gen within txn (a smaller gen
** leaves it alone). */
int st_raise_generation(store_env *s, MDB_txn *txn, uint64_t gen);

/* Read and decode revision rev's manifest in txn. */
int st_manifest_get(store_env *s, MDB_txn *txn, uint64_t rev, int changes,
                    store_manifest **out);

#endif
