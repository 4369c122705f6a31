/*
** etcd.h — an etcd v3 client over etcd's JSON gateway (docs/replication.md).
**
** jitietcd is a library of its own: it needs nothing of jiti but the
** model library's HTTP transport (mhttp.h: libcurl, loaded at the first
** request), and jansson.  Keys and values are bytes (any content, NUL
** included): the gateway carries them base64-encoded, which this file's
** callers never see.
**
** One client is a list of members' URLs ("http://H1:2379,http://H2:2379")
** and one HTTP connection.  A request goes to the member that answered
** last; when that member cannot be reached it goes to the next, in order,
** until one answers or all have been tried.  Not thread-safe: one client
** per thread (a watch blocks its client while it streams).
**
** Every call returns an etcd_Error; on failure etcd_errmsg(e) says what
** failed, which member, and what to do, in one line.  Outputs are set only
** on ETCD_OK unless a call says otherwise.
**
** Writes that may have been applied though no answer came back (the
** request timed out, the connection broke after it was sent, etcd answered
** "request timed out" or "leader changed") are ETCD_EUNCERTAIN, and are
** never retried on another member: a caller that needs to know reads the
** state back.  Each write goes on a connection of its own, since libcurl
** sends a request again by itself when a reused connection dies before
** any answer — the write would land twice, or once with the answer of the
** second send, and no caller would know the first was sent.  A request
** never sent (connection refused, no route) is tried on the next member.
*/
#ifndef jiti_etcd_h
#define jiti_etcd_h

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

typedef struct etcd etcd;

typedef enum etcd_Error {
  ETCD_OK = 0,
  ETCD_EUNAVAILABLE, /* no member answered (each refused, timed out a read, or has no quorum) */
  ETCD_EUNCERTAIN,   /* a write was sent and no answer came: it may or may not have been applied */
  ETCD_EFAILED,      /* etcd refused the request (its message is in etcd_errmsg) */
  ETCD_ELEASE,       /* the lease does not exist or has expired */
  ETCD_ECOMPACTED,   /* the revision asked for is older than etcd's compaction */
  ETCD_ETOOBIG,      /* the request is larger than etcd takes (etcd_set_max_request) */
  ETCD_ENOSPACE,     /* etcd's database is at its quota: compact and defragment */
  ETCD_EPROTO,       /* the reply is not what etcd's gateway sends */
  ETCD_ESTOPPED,     /* a watch ended by its callback or its stop flag */
  ETCD_EINVAL,       /* a bad argument (the message names it) */
  ETCD_ENOMEM
} etcd_Error;

/* "ok", "unavailable", "uncertain", "failed", "lease", "compacted",
** "too-big", "no-space", "protocol", "stopped", "invalid", "no-memory". */
const char *etcd_error_name(etcd_Error err);

/* ------------------------------------------------------------ the client */

/* A client of the members in urls: a comma-separated list of http:// or
** https:// URLs (scheme, host, port; no path, no credentials), at most
** 16.  NULL on a bad list or no memory, with the reason in err. */
etcd *etcd_new(const char *urls, char *err, size_t errlen);
void etcd_free(etcd *e);

/* Timeouts in milliseconds (0 keeps the value): connecting to a member
** (default 1000) and a whole request (default 5000). */
void etcd_set_timeouts(etcd *e, long connect_ms, long request_ms);

/* The largest request this client sends, in bytes (default 1.5 MiB, etcd's
** --max-request-bytes); a larger one is refused before it is sent
** (ETCD_ETOOBIG).  0 keeps the value. */
void etcd_set_max_request(etcd *e, size_t bytes);

/* What the last failed call said ("" after a success). */
const char *etcd_errmsg(const etcd *e);

/* The URL of the member that answered the last request (or will get the
** next one). */
const char *etcd_member(const etcd *e);

/* ------------------------------------------------------------ keys */

typedef struct etcd_KV {
  char *key, *value; /* NUL-terminated for convenience; may hold NULs */
  size_t key_len, value_len;
  int64_t create_revision, mod_revision, version, lease;
} etcd_KV;

typedef struct etcd_Range {
  int64_t revision; /* etcd's revision the read was made at */
  etcd_KV *kvs;
  size_t n;
  int64_t count; /* keys in the range (more than n under a limit) */
  int more;      /* a limit left some out */
} etcd_Range;

void etcd_range_free(etcd_Range *r);

/* The end of the range of keys that begin with prefix (the prefix with its
** last byte that is not 0xff incremented, the rest dropped), written to
** end (at least len bytes).  Returns its length; 1 (end = "\0") for a
** prefix of 0xff bytes only: every key from it on. */
size_t etcd_prefix_end(const void *prefix, size_t len, void *end);

/* Keys in [key, end) (end NULL: key alone) at etcd revision `revision`
** (0: the latest), at most limit (0: all), in key order; keys_only leaves
** values out.  A linearizable read.  *out: free with etcd_range_free.
** ETCD_ECOMPACTED: revision was compacted. */
etcd_Error etcd_range(etcd *e, const void *key, size_t key_len, const void *end, size_t end_len, int64_t revision,
                      int64_t limit, int keys_only, etcd_Range *out);

/* Put value under key, bound to lease (0: none).  *revision (may be
** NULL): the etcd revision of the put.  ETCD_ELEASE: no such lease. */
etcd_Error etcd_put(etcd *e, const void *key, size_t key_len, const void *value, size_t value_len, int64_t lease,
                    int64_t *revision);

/* Delete the keys in [key, end) (end NULL: key alone).  *deleted (may be
** NULL): how many. */
etcd_Error etcd_delete(etcd *e, const void *key, size_t key_len, const void *end, size_t end_len, int64_t *deleted);

/* Compact etcd's history before revision (physical: waits until done).
** ETCD_ECOMPACTED: it was compacted already; ETCD_EFAILED: revision is
** in the future. */
etcd_Error etcd_compact(etcd *e, int64_t revision);

/* ------------------------------------------------------------ transactions */

/* What a compare looks at, and how. */
typedef enum etcd_Target { ETCD_VERSION, ETCD_CREATE, ETCD_MOD, ETCD_VALUE, ETCD_LEASE } etcd_Target;
typedef enum etcd_Cmp { ETCD_EQUAL, ETCD_GREATER, ETCD_LESS, ETCD_NOT_EQUAL } etcd_Cmp;
/* Which branch an operation is in. */
typedef enum etcd_Branch { ETCD_SUCCESS, ETCD_FAILURE } etcd_Branch;

typedef struct etcd_txn etcd_txn;

/* A transaction being built; NULL without memory.  The builders return 0,
** or -1 (out of memory, or a bad target for the call: nothing added),
** after which etcd_txn_commit fails with ETCD_ENOMEM or ETCD_EINVAL. */
etcd_txn *etcd_txn_new(void);
void etcd_txn_free(etcd_txn *t);

/* Compare an integer target (ETCD_VERSION, ETCD_CREATE, ETCD_MOD,
** ETCD_LEASE) of key; an absent key has 0 for each. */
int etcd_txn_compare(etcd_txn *t, const void *key, size_t key_len, etcd_Target target, etcd_Cmp cmp, int64_t value);
/* Compare key's value (an absent key fails every value compare). */
int etcd_txn_compare_value(etcd_txn *t, const void *key, size_t key_len, etcd_Cmp cmp, const void *value,
                           size_t value_len);
int etcd_txn_put(etcd_txn *t, etcd_Branch b, const void *key, size_t key_len, const void *value, size_t value_len,
                 int64_t lease);
int etcd_txn_delete(etcd_txn *t, etcd_Branch b, const void *key, size_t key_len, const void *end, size_t end_len);
int etcd_txn_range(etcd_txn *t, etcd_Branch b, const void *key, size_t key_len, const void *end, size_t end_len);

/* Operations in the transaction so far (compares not counted): etcd takes
** at most 128 by default (--max-txn-ops). */
size_t etcd_txn_ops(const etcd_txn *t);
/* The size of the request it makes, in bytes. */
size_t etcd_txn_size(const etcd_txn *t);

typedef struct etcd_TxnResult {
  int succeeded;      /* every compare held: the success branch ran */
  int64_t revision;   /* etcd's revision after it */
  etcd_Range *ranges; /* one per range operation of the branch that ran, in order */
  size_t nranges;
} etcd_TxnResult;

void etcd_txn_result_free(etcd_TxnResult *r);

/* Send the transaction (t is kept: the caller frees it).  A failed compare
** is ETCD_OK with succeeded = 0.  ETCD_EUNCERTAIN: it may have been
** applied; ETCD_ELEASE: a put names a lease that does not exist. */
etcd_Error etcd_txn_commit(etcd *e, const etcd_txn *t, etcd_TxnResult *out);

/* ------------------------------------------------------------ leases */

/* A lease of ttl seconds (id 0: etcd chooses its id).  *granted: the TTL
** etcd granted (it may raise a small one to its minimum). */
etcd_Error etcd_lease_grant(etcd *e, int64_t ttl, int64_t id, int64_t *lease, int64_t *granted);

/* Renew the lease once; *ttl (may be NULL): its TTL from now.
** ETCD_ELEASE: it expired or was revoked. */
etcd_Error etcd_lease_keepalive(etcd *e, int64_t lease, int64_t *ttl);

/* Revoke the lease: every key bound to it is deleted.  ETCD_ELEASE: it
** did not exist (expired already). */
etcd_Error etcd_lease_revoke(etcd *e, int64_t lease);

/* The lease's remaining TTL in seconds; ETCD_ELEASE when it has expired. */
etcd_Error etcd_lease_ttl(etcd *e, int64_t lease, int64_t *ttl);

/* ------------------------------------------------------------ watches */

typedef enum etcd_EventType { ETCD_PUT, ETCD_DELETE } etcd_EventType;

typedef struct etcd_Event {
  etcd_EventType type;
  etcd_KV kv; /* a deletion: the key and its mod_revision only */
} etcd_Event;

/* One response of a watch: the events of one or more etcd revisions, in
** order (events of one transaction share a mod_revision and are never
** split between two calls). */
typedef struct etcd_WatchBatch {
  int64_t revision; /* etcd's revision when it was sent */
  const etcd_Event *events;
  size_t n;
} etcd_WatchBatch;

/* Called per batch; return 0 to go on, non-zero to end the watch
** (etcd_watch then returns ETCD_ESTOPPED). */
typedef int (*etcd_watch_fn)(void *ud, const etcd_WatchBatch *b);

typedef struct etcd_Watch {
  const void *key, *end; /* the range [key, end); end NULL: key alone */
  size_t key_len, end_len;
  int64_t start_revision;      /* the first revision to report (0: from now) */
  volatile sig_atomic_t *stop; /* may be NULL: once set, the watch ends within about a second */
  long window_ms;              /* a stream is reopened after this long (default 10000) */
  int64_t next_revision;       /* out: the first revision not reported yet */
  int64_t compact_revision;    /* out, with ETCD_ECOMPACTED: the oldest revision left */
} etcd_Watch;

/* Stream the changes of the range to fn until fn or stop ends it
** (ETCD_ESTOPPED), start_revision has been compacted (ETCD_ECOMPACTED), or
** no member can be reached (ETCD_EUNAVAILABLE).  Reconnects by itself: a
** member that goes away, or a stream open for window_ms (which also bounds
** how long a member that stopped answering holds it), is left for the next
** member, from the revision after the last one reported: no event is
** missed or reported twice.  w->next_revision says where to resume. */
etcd_Error etcd_watch(etcd *e, etcd_Watch *w, etcd_watch_fn fn, void *ud);

/* ------------------------------------------------------------ the cluster */

typedef struct etcd_Status {
  char version[32];
  int64_t db_size, db_size_in_use;
  uint64_t member_id, leader; /* leader 0: the member knows no leader */
  int64_t raft_term, raft_index;
} etcd_Status;

/* The status of the member that answers (etcd_member says which). */
etcd_Error etcd_status(etcd *e, etcd_Status *out);

#endif
