/*
** replica_int.h — what the files of controller/replica/ share.
*/
#ifndef jiti_replica_int_h
#define jiti_replica_int_h

#include <jansson.h>
#include <pthread.h>
#include "replica.h"

#define REPLICA_WORLD_MAX 64
#define REPLICA_REQUEST_MS 10000   /* a commit's, a campaign's, a catch-up's etcd requests */

/* Threads: a leader's renewals run on a thread of their own, with their own
** etcd client (ek); everything else on one other thread at a time (e).  mu
** guards the leadership's fields; a commit holds it from its first compare
** to its last answer, so that a renewal that finds the lease lost cannot
** interleave with it. */
struct replica {
  etcd *e, *ek;
  etcd *ec; /* replica_compact's, on a thread of its own */
  pthread_mutex_t mu;
  char prefix[REPLICA_WORLD_MAX + 8]; /* "jiti/W/" */
  size_t plen;
  /* leadership */
  int64_t lease, ttl_ms;
  int64_t leader_create; /* create revision of this replica's leader key; 0: not leading */
  int64_t ceiling_mod;   /* mod revision of `generation` as this leader last wrote or read it */
  uint64_t ceiling;
  int64_t renewed_ms; /* when the last renewal etcd answered was sent (the caller's clock) */
  int fenced;
  /* history compaction (under mu): every compact_every commits, the etcd
     revision of the commit compact_every commits earlier becomes due */
  int64_t compact_every, commits, compact_mark, compact_due;
  char errmsg[512];
  char renew_msg[512];     /* replica_renew's, apart: it runs on a thread of its own */
};

replica_Error rfail(replica *r, replica_Error err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An etcd failure as a replica_Error, with etcd's message. */
replica_Error retcd(replica *r, etcd_Error err, const char *what);

/* The key prefix + suffix into out (cap bytes); its length. */
size_t rkey(const replica *r, char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The leader's compares: its key's create revision and lease, and the
** ceiling's mod revision. */
int rfence(replica *r, etcd_txn *t);
/* After a failed compare: who holds the world now, in the message. */
replica_Error rfenced(replica *r, const char *what);

/* A revision's record (JSON) and its entries, read from store s.  *nnew:
** how many of hashes[] the revision added or replaced (those to put). */
typedef struct rrev {
  uint64_t rev, generation;
  json_t *record;
  store_entry **entries; /* the entries it added or replaced (store_free each) */
  size_t n;
} rrev;
/* with_entries 0: the record alone (a check of it needs no entry bytes). */
replica_Error rrev_read(replica *r, store_env *s, uint64_t rev, int with_entries, rrev *out);
void rrev_free(rrev *v);

/* The entry encoding of etcd's entry/<hash> (malloc'd) and back. */
void *rentry_encode(const store_entry *e, size_t *len);
int rentry_decode(const char *p, size_t n, store_entry *out); /* out points into p */

#endif
