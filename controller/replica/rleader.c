/*
** rleader.c — the leader key, its lease, and fencing (replica.h,
** docs/replication.md "The leader key, the lease and fencing").
**
** Safety never rests on a clock: every write of a leader compares the
** leader key's create revision and lease and the ceiling's mod revision,
** so a leader whose lease lapsed (its key deleted, perhaps re-created by
** another) writes nothing.  The deadline of replica_may_write only makes
** a leader stop sooner, before another could have won, and say so.
*/
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replica_int.h"

int rfence(replica *r, etcd_txn *t) {
  char kl[128], kg[128];
  size_t nl = rkey(r, kl, sizeof kl, "leader"), ng = rkey(r, kg, sizeof kg, "generation");
  return etcd_txn_compare(t, kl, nl, ETCD_CREATE, ETCD_EQUAL, r->leader_create) |
    etcd_txn_compare(t, kl, nl, ETCD_LEASE, ETCD_EQUAL, r->lease) |
    etcd_txn_compare(t, kg, ng, ETCD_MOD, ETCD_EQUAL, r->ceiling_mod);
}

replica_Error rfenced(replica *r, const char *what) {
  r->fenced = 1;
  r->leader_create = 0;
  replica_Head h;
  char lost[sizeof r->errmsg];
  snprintf(lost, sizeof lost, "%s", what);
  if (replica_head(r, &h) != REPLICA_OK)
    return rfail(r, REPLICA_EFENCED, "fenced: %s, and etcd could not say who leads now", lost);
  if (h.leader[0])
    return rfail(r, REPLICA_EFENCED, "fenced: %s; world %.*s is led by %s now", lost, (int)(r->plen - 6), r->prefix + 5,
                 h.leader);
  return rfail(r, REPLICA_EFENCED, "fenced: %s; this kernel's lease lapsed and no one leads yet", lost);
}

replica_Error replica_campaign(replica *r, int64_t ttl, const char *identity, int64_t now_ms, int *won) {
  *won = 0;
  if (r->leader_create && !r->fenced) {
    *won = 1;
    return REPLICA_OK;
  }
  if (ttl < 2) return rfail(r, REPLICA_EINVAL, "a leader's lease must be at least 2 seconds");
  char kl[128], kg[128];
  size_t nl = rkey(r, kl, sizeof kl, "leader"), ng = rkey(r, kg, sizeof kg, "generation");
  etcd_TxnResult res;
  etcd_Error err = ETCD_ELEASE;
  /* a candidate's lease is not renewed while it waits: one that lapsed
     meanwhile is replaced once */
  for (int tries = 0; tries < 2 && err == ETCD_ELEASE; tries++) {
    if (!r->lease || r->fenced) {
      int64_t granted = 0;
      err = etcd_lease_grant(r->e, ttl, 0, &r->lease, &granted);
      if (err) {
        r->lease = 0;
        return retcd(r, err, "granting the leader's lease");
      }
      r->ttl_ms = granted * 1000;
      r->renewed_ms = now_ms;
      r->fenced = 0;
    }
    etcd_txn *t = etcd_txn_new();
    if (!t) return rfail(r, REPLICA_ENOMEM, "out of memory");
    etcd_txn_compare(t, kl, nl, ETCD_CREATE, ETCD_EQUAL, 0);
    etcd_txn_put(t, ETCD_SUCCESS, kl, nl, identity, strlen(identity), r->lease);
    etcd_txn_range(t, ETCD_SUCCESS, kg, ng, NULL, 0);
    etcd_txn_range(t, ETCD_FAILURE, kl, nl, NULL, 0);
    err = etcd_txn_commit(r->e, t, &res);
    etcd_txn_free(t);
    if (err == ETCD_ELEASE) r->lease = 0;
  }
  if (err) return retcd(r, err, "campaigning for the leader key");
  replica_Error out = REPLICA_OK;
  if (res.succeeded && res.nranges == 1) {
    const etcd_Range *g = &res.ranges[0];
    char *end = NULL;
    r->ceiling = g->n ? strtoull(g->kvs[0].value, &end, 10) : 0;
    if (g->n && (!g->kvs[0].value_len || *end)) {
      out = rfail(r, REPLICA_EPROTO, "etcd's %sgeneration is not a number: not a jiti world?", r->prefix);
    } else {
      r->ceiling_mod = g->n ? g->kvs[0].mod_revision : 0;
      r->leader_create = res.revision;
      *won = 1;
    }
  } else if (res.nranges == 1 && res.ranges[0].n) {
    rfail(r, REPLICA_OK, "world %.*s is led by %.*s", (int)(r->plen - 6), r->prefix + 5,
          (int)res.ranges[0].kvs[0].value_len, res.ranges[0].kvs[0].value);
  }
  etcd_txn_result_free(&res);
  /* a candidate's lease may be old: renewed at once, its deadline starts now */
  if (!out && *won && (out = replica_renew(r, now_ms))) {
    *won = 0;
    rfail(r, out, "%s", r->renew_msg);
  }
  return out;
}

replica_Error replica_adopt(replica *r, int64_t lease, int64_t ttl, const char *identity, int64_t now_ms, int *won) {
  *won = 0;
  if (lease <= 0 || ttl < 2) return rfail(r, REPLICA_EINVAL, "no lease to lead on with");
  replica_Head h;
  replica_Error err = replica_head(r, &h);
  if (err) return err;
  if (h.leader_lease != lease || strcmp(h.leader, identity))
    return rfail(r, REPLICA_OK, "the lease %" PRIx64 " no longer holds the leader key", (uint64_t)lease);
  pthread_mutex_lock(&r->mu);
  r->lease = lease;
  r->ttl_ms = ttl * 1000;
  r->renewed_ms = now_ms;
  r->fenced = 0;
  r->leader_create = h.leader_create;
  r->ceiling = h.ceiling;
  r->ceiling_mod = h.ceiling_mod;
  pthread_mutex_unlock(&r->mu);
  /* its deadline starts now, as a campaign's */
  if ((err = replica_renew(r, now_ms))) {
    pthread_mutex_lock(&r->mu);
    r->leader_create = 0;
    pthread_mutex_unlock(&r->mu);
    return rfail(r, err, "%s", r->renew_msg);
  }
  *won = 1;
  return REPLICA_OK;
}

int64_t replica_lease(replica *r) {
  pthread_mutex_lock(&r->mu);
  int64_t lease = r->lease;
  pthread_mutex_unlock(&r->mu);
  return lease;
}

/* replica_renew's messages go to their own buffer (r->mu held or not
** needed): the renewer's thread must not write the one the committing
** thread reads. */
static replica_Error rnfail(replica *r, replica_Error err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static replica_Error rnfail(replica *r, replica_Error err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->renew_msg, sizeof r->renew_msg, fmt, ap);
  va_end(ap);
  return err;
}

const char *replica_renew_errmsg(const replica *r) { return r->renew_msg; }

replica_Error replica_renew(replica *r, int64_t now_ms) {
  pthread_mutex_lock(&r->mu);
  int64_t lease = r->lease;
  if (!lease) rnfail(r, REPLICA_EFENCED, "fenced: this kernel holds no lease");
  pthread_mutex_unlock(&r->mu);
  if (!lease) return REPLICA_EFENCED;
  etcd_Error err = etcd_lease_keepalive(r->ek, lease, NULL);
  pthread_mutex_lock(&r->mu);
  replica_Error out = REPLICA_OK;
  if (r->lease != lease) {
    out = rnfail(r, REPLICA_EFENCED, "fenced: the lease was given up meanwhile");
  } else if (err == ETCD_ELEASE) {
    r->lease = 0;
    r->fenced = 1;
    r->leader_create = 0;
    out =
      rnfail(r, REPLICA_EFENCED, "fenced: the leader's lease expired before it was renewed (%s)", etcd_errmsg(r->ek));
  } else if (err) {
    out = rnfail(r, err == ETCD_EUNAVAILABLE ? REPLICA_EUNAVAILABLE : REPLICA_EETCD, "renewing the leader's lease: %s",
                etcd_errmsg(r->ek));
  } else if (now_ms > r->renewed_ms) {
    r->renewed_ms = now_ms;
  }
  pthread_mutex_unlock(&r->mu);
  return out;
}

int replica_may_write(replica *r, int64_t now_ms) {
  pthread_mutex_lock(&r->mu);
  int64_t margin = r->ttl_ms / 4 > 1000 ? r->ttl_ms / 4 : 1000;
  int ok = r->leader_create && !r->fenced && r->lease && now_ms < r->renewed_ms + r->ttl_ms - margin;
  pthread_mutex_unlock(&r->mu);
  return ok;
}

replica_Error replica_resign(replica *r) {
  pthread_mutex_lock(&r->mu);
  int64_t lease = r->lease;
  r->lease = 0;
  r->leader_create = 0;
  pthread_mutex_unlock(&r->mu);
  if (!lease) return REPLICA_OK;
  etcd_Error err = etcd_lease_revoke(r->e, lease);
  if (err && err != ETCD_ELEASE) return retcd(r, err, "revoking the leader's lease");
  return REPLICA_OK;
}

replica_Error replica_take_over(replica *r, uint64_t floor, uint64_t *first) {
  if (!r->leader_create || r->fenced)
    return rfail(r, REPLICA_EFENCED, "fenced: this kernel has not won the leader key");
  char kg[128], val[24];
  size_t ng = rkey(r, kg, sizeof kg, "generation");
  /* the ceiling as it is now (the campaign read it, but a former leader's
     last commit may have landed since: then the compare below says so) */
  uint64_t from = r->ceiling > floor ? r->ceiling : floor + 1;
  uint64_t ceiling = from + REPLICA_GENERATION_BLOCK;
  etcd_txn *t = etcd_txn_new();
  if (!t) return rfail(r, REPLICA_ENOMEM, "out of memory");
  rfence(r, t);
  int n = snprintf(val, sizeof val, "%" PRIu64, ceiling);
  etcd_txn_put(t, ETCD_SUCCESS, kg, ng, val, (size_t)n, 0);
  etcd_TxnResult res;
  etcd_Error err = etcd_txn_commit(r->e, t, &res);
  etcd_txn_free(t);
  if (err) return retcd(r, err, "moving the generation past the former leader's");
  int ok = res.succeeded;
  int64_t rev = res.revision;
  etcd_txn_result_free(&res);
  if (!ok) return rfenced(r, "the generation or the leader key changed during the takeover");
  r->ceiling = ceiling;
  r->ceiling_mod = rev;
  *first = from;
  return REPLICA_OK;
}

replica_Error replica_report(replica *r, const char *id, const char *text, int64_t ttl, int64_t now_ms) {
  char key[320];
  if (!id || !*id || strlen(id) > 200 || strchr(id, '/'))
    return rfail(r, REPLICA_EINVAL, "a standby's id must be 1-200 bytes, no '/'");
  size_t klen = rkey(r, key, sizeof key, "standby/%s", id);
  if (!text) {
    etcd_Error err = etcd_delete(r->e, key, klen, NULL, 0, NULL);
    return err ? retcd(r, err, "removing a standby's report") : REPLICA_OK;
  }
  pthread_mutex_lock(&r->mu);
  int64_t lease = r->lease;
  pthread_mutex_unlock(&r->mu);
  etcd_Error err = lease ? etcd_lease_keepalive(r->e, lease, NULL) : ETCD_ELEASE;
  if (err == ETCD_ELEASE) {
    int64_t granted = 0;
    if ((err = etcd_lease_grant(r->e, ttl, 0, &lease, &granted))) return retcd(r, err, "granting a standby's lease");
    pthread_mutex_lock(&r->mu);
    r->lease = lease;
    r->ttl_ms = granted * 1000;
    r->renewed_ms = now_ms;
    r->fenced = 0;
    pthread_mutex_unlock(&r->mu);
  } else if (err) {
    return retcd(r, err, "renewing a standby's lease");
  }
  err = etcd_put(r->e, key, klen, text, strlen(text), lease, NULL);
  return err ? retcd(r, err, "reporting a standby") : REPLICA_OK;
}

replica_Error replica_standbys(replica *r, etcd_Range *out) {
  char key[128], end[128];
  size_t klen = rkey(r, key, sizeof key, "standby/");
  size_t elen = etcd_prefix_end(key, klen, end);
  etcd_Error err = etcd_range(r->e, key, klen, end, elen, 0, 0, 0, out);
  return err ? retcd(r, err, "reading the standbys") : REPLICA_OK;
}

replica_Error replica_leader_ttl(replica *r, const replica_Head *h, int64_t *ttl) {
  *ttl = -1;
  if (!h->leader_lease) return REPLICA_OK;
  etcd_Error err = etcd_lease_ttl(r->e, h->leader_lease, ttl);
  if (err == ETCD_ELEASE) {
    *ttl = -1;
    return REPLICA_OK;
  }
  return err ? retcd(r, err, "reading the leader's lease") : REPLICA_OK;
}
