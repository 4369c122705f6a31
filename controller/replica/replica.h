/*
** replica.h — a world's revisions in etcd (docs/replication.md): its keys,
** the leader's lease and fencing, fenced commits of a store's revisions,
** and a standby's store brought up to etcd's CURRENT.
**
** A replica is one world on one etcd client.  It knows the store (revisions
** are read from one and applied to another) and nothing of the kernel: the
** daemon decides when to campaign, renew, publish and catch up.  A
** leader's renewals (replica_renew) and replica_may_write may run on a
** thread of their own; every other call on one other thread at a time.
**
** The keys of world W, under "jiti/W/":
**   leader            the leader's identity (text), bound to its lease
**   generation        the generation ceiling, decimal: every generation the
**                     leader hands out is below it (the fencing token)
**   current           "N" — CURRENT, revision N
**   rev/<20 digits>   revision N's record (JSON: its manifest's fields and
**                     changes, the entries by hash)
**   entry/<hash hex>  an entry: u8 kind, u16 name length (big-endian), the
**                     name, the bytes — the store's own encoding
**
** Every call returns a replica_Error; replica_errmsg says what failed and
** what to do.
*/
#ifndef jiti_replica_h
#define jiti_replica_h

#include <stddef.h>
#include <stdint.h>
#include "etcd.h"
#include "store.h"

typedef enum replica_Error {
  REPLICA_OK = 0,
  REPLICA_EFENCED,      /* this kernel is not (or no longer) the leader: its lease lapsed or another holds the key */
  REPLICA_EUNCERTAIN,   /* a commit was sent and no answer came: etcd may or may not hold it */
  REPLICA_EUNAVAILABLE, /* no etcd member answered (no quorum?) */
  REPLICA_ETOOBIG,      /* an entry too large for one etcd request */
  REPLICA_EDIVERGED,    /* the store holds a revision etcd does not (or another one) */
  REPLICA_ESTORE,       /* the local store failed */
  REPLICA_EPROTO,       /* a record in etcd is damaged or not jiti's */
  REPLICA_EETCD,        /* etcd refused a request for another reason */
  REPLICA_EINVAL,
  REPLICA_ENOMEM
} replica_Error;

/* "ok", "fenced", "uncertain", "unavailable", "too-big", "diverged",
** "store", "protocol", "etcd", "invalid", "no-memory". */
const char *replica_error_name(replica_Error err);

/* Generations are reserved in etcd in blocks of this many: the leader
** raises the ceiling by a block whenever it would reach it. */
#define REPLICA_GENERATION_BLOCK 1000u

typedef struct replica replica;

/* World `world` (1-64 of [A-Za-z0-9._-]) on the etcd members urls
** (etcd_new's syntax).  NULL with the reason in err. */
replica *replica_new(const char *urls, const char *world, char *err, size_t errlen);
void replica_free(replica *r);
const char *replica_errmsg(const replica *r);
etcd *replica_etcd(replica *r);

/* The world as etcd has it, read at one etcd revision. */
typedef struct replica_Head {
  uint64_t current; /* 0: nothing replicated yet */
  uint64_t ceiling; /* the generation ceiling (0: none yet) */
  int64_t etcd_revision;
  char leader[1024]; /* the leader key's value, "" when there is no leader */
  int64_t leader_lease;
  int64_t leader_create; /* the leader key's create revision (0: none) */
  int64_t ceiling_mod;   /* the ceiling's mod revision (0: none) */
} replica_Head;

replica_Error replica_head(replica *r, replica_Head *h);

/* ------------------------------------------------------------ leadership */

/* Grant a lease of ttl seconds (once), and put the leader key with
** identity if no one holds it.  *won: this replica leads (also when it led
** already).  now_ms: the caller's monotonic clock, read before the call. */
replica_Error replica_campaign(replica *r, int64_t ttl, const char *identity, int64_t now_ms, int *won);

/* Lead on with a lease a replica of this world won in another process
** (the same kernel restarted as the leader, drepl.c): lease (of ttl
** seconds) still holds the leader key, whose value is identity.  *won: the
** key is this lease's and the lease was renewed (its deadline starts at
** now_ms); else nothing changed and the caller campaigns as usual. */
replica_Error replica_adopt(replica *r, int64_t lease, int64_t ttl, const char *identity, int64_t now_ms, int *won);

/* The lease this replica holds (0: none), to hand to replica_adopt. */
int64_t replica_lease(replica *r);

/* Renew the lease once (now_ms: read before the call).  REPLICA_EFENCED:
** it expired; the replica no longer leads. */
replica_Error replica_renew(replica *r, int64_t now_ms);

/* What the last failed replica_renew said (its own message: it may run on
** a thread of its own). */
const char *replica_renew_errmsg(const replica *r);

/* Whether this replica may still write at now_ms: it won, was not fenced,
** and its last renewal etcd answered was sent less than the TTL minus a
** margin (1 s, or a quarter of the TTL if larger) ago — before then etcd
** cannot have let the lease lapse. */
int replica_may_write(replica *r, int64_t now_ms);

/* Stop leading: the lease is revoked (its leader key goes with it).
** Harmless when not leading. */
replica_Error replica_resign(replica *r);

/* Take over as the new leader (after replica_campaign won): the ceiling
** moves one block past both etcd's and floor, in a fenced transaction.
** *first: the first generation this leader may hand out (the old ceiling,
** or floor + 1 if higher). */
replica_Error replica_take_over(replica *r, uint64_t floor, uint64_t *first);

/* The current ceiling as this leader last wrote or read it. */
uint64_t replica_ceiling(const replica *r);

/* ------------------------------------------------------------ commits */

/* Put revisions from..to of store s into etcd, with their entries (those a
** revision added or replaced), move `current` to `to`, and raise the
** ceiling past the highest generation among them if it reached it — in as
** few fenced transactions as etcd's limits allow (128 operations, the
** client's request size), each comparing the leader key (this replica's
** create revision and lease) and the ceiling's mod revision.  Returns
** REPLICA_OK only when all of them succeeded.  REPLICA_EFENCED: nothing
** of them is the world's (a split commit may have written its first
** parts, which no `current` names); REPLICA_EUNCERTAIN also when fenced
** after an earlier transaction of the same commit moved `current`: some of
** them are the world's, and when a try got no answer and its retry's compare
** failed with the ceiling moved by another leader (that try may have
** landed before it took over). */
/* The events a revision was written with: seqs first..first+n-1 of the
** store.  Those that carry an idempotency key's digest go into etcd with
** the revision, so that a standby replays a keyed call instead of running
** it twice. */
typedef struct replica_Events {
  uint64_t first;
  size_t n;
} replica_Events;

/* ev: per revision from..to, its events (NULL: none). */
replica_Error replica_publish(replica *r, store_env *s, uint64_t from, uint64_t to, const replica_Events *ev);

/* History compaction.  etcd keeps every version of every key until its
** history is compacted, and a leader's every commit overwrites `current`
** and `generation`.  Every `every` commits (REPLICA_COMPACT_EVERY unless
** set; 0: never) a compaction becomes due at the etcd revision of the
** commit `every` commits before: etcd keeps the history of at least the
** last `every` commits, so a standby's catch-up, which pages through
** etcd at one revision, rarely finds it compacted (it then reads again at
** a newer one, keeping what it applied).  replica_compact does the due
** one (etcd_compact, physical: it may take a while) with a client of its
** own: it runs on a thread of its own, beside the commits and renewals.
** *done: the revision compacted to (0: none was due).  A failure's
** message goes to msg (msglen bytes), not replica_errmsg. */
#define REPLICA_COMPACT_EVERY 1000
void replica_set_compaction(replica *r, int64_t every);
int64_t replica_compaction_due(replica *r);   /* (any thread) 0: none */
replica_Error replica_compact(replica *r, int64_t *done, char *msg, size_t msglen);

/* The largest entry replica_publish takes: its store encoding (u8 kind,
** u16 name length, the name, the bytes) in bytes.  A larger one cannot
** go in one etcd request (1.5 MiB with base64 and JSON): replica_publish
** refuses it (REPLICA_ETOOBIG); a kernel refuses it at the call that
** makes it, before the store. */
size_t replica_entry_max(const replica *r);

/* ------------------------------------------------------------ standbys */

/* Apply to s every revision etcd has after s's CURRENT, up to etcd's
** `current`, each checked against its record: the revision the store
** writes must describe the same change, generation and time.  The keyed
** outcomes replicated with a revision are written with it (the store's
** index of keys follows).
** *applied: s's CURRENT afterwards.  REPLICA_EDIVERGED: s's CURRENT is
** ahead of etcd's, or its revision differs from etcd's record of it. */
replica_Error replica_catch_up(replica *r, store_env *s, uint64_t *applied);

/* A standby's report under standby/<id> (id: 1-200 bytes, no '/'):
** text, bound to this replica's lease (granted with ttl seconds if it has
** none, renewed otherwise), so that a standby that goes away leaves no
** report behind; text NULL deletes the report. */
replica_Error replica_report(replica *r, const char *id, const char *text, int64_t ttl, int64_t now_ms);

/* The standbys' reports: *out as etcd_range gives them (keys are the whole
** keys; free with etcd_range_free). */
replica_Error replica_standbys(replica *r, etcd_Range *out);

/* The remaining TTL of the leader's lease in seconds (h from replica_head),
** -1 when it has none. */
replica_Error replica_leader_ttl(replica *r, const replica_Head *h, int64_t *ttl);

/* `jiti replicate status --replicate URLS --world NAME [--json]` (rstatus.c). */
int cmd_replicate(int argc, char **argv);

#endif
