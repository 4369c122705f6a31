/* st_rev.c — publishing revisions (store_publish, store_publish_revert) and
** reading them back (manifests, maps, single entries). */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "st_int.h"

/* One change requested of a publish. */
typedef struct st_op {
  int kind;
  const char *name;
  size_t nlen;
  int remove;               /* take the key out of the map */
  uint8_t hash[32];         /* the entry to put */
  const store_entry *e;     /* its bytes, or NULL: the entry must exist */
} st_op;

/* One revision of a write transaction: what it asks, and what came of it. */
typedef struct job {
  const store_rev_info *info;
  int kind;
  uint64_t rollback_of;
  int64_t time_ms;
  const st_op *ops;
  size_t nops;
  const store_ev *events;         /* appended after the revision */
  struct json_t **event_objs;     /* st_events_prepare's */
  size_t nevents;
  uint64_t rev;                   /* out: the revision, or its parent (no change) */
  uint64_t first_event;           /* out */
  uint8_t *effects;               /* out, may be NULL: a store_effect per op */
  uint64_t incident;              /* the incident it repairs, or 0 */
} job;

/* A write transaction of revisions on top of parent. */
typedef struct pub {
  uint64_t parent;
  job *jobs;
  size_t njobs;
  unsigned flags;           /* STORE_GROUP_... */
  store_group_fn fn;
  void *fn_arg;
  st_change *changes;       /* room for the largest job's ops */
  uint8_t *buf;             /* scratch for entry records and manifests */
  size_t bufcap;
  st_hasher hs;             /* the manifests' hashes: SHA-256 fetched once a group */
} pub;

static int cmp_changes(const void *a, const void *b) {
  const st_change *x = a, *y = b;
  size_t n;
  int c;
  if (x->kind != y->kind) return x->kind - y->kind;
  n = x->nlen < y->nlen ? x->nlen : y->nlen;
  c = memcmp(x->name, y->name, n);
  return c ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

static int scratch(store_env *s, pub *p, size_t need) {
  if (need <= p->bufcap) return STORE_OK;
  uint8_t *nb = realloc(p->buf, need);
  if (!nb) return st_fail(s, STORE_ENOMEM, "out of memory publishing");
  p->buf = nb;
  p->bufcap = need;
  return STORE_OK;
}

/* Apply j's changes to the current map in txn and, when something changed
** (or the kind always publishes), write revision *cur + 1 and advance *cur.
** CURRENT itself is moved by the caller, once for the whole transaction. */
static int publish_one(store_env *s, MDB_txn *txn, pub *p, job *j, uint64_t *cur) {
  uint8_t key[1 + STORE_NAME_MAX], revkey[8];
  size_t nch = 0, klen, mlen;
  MDB_stat ms;
  MDB_val k, v;
  st_manifest_in mi;
  const uint64_t before = *cur;
  int rc, r;
  for (size_t i = 0; i < j->nops; i++) {
    const st_op *op = &j->ops[i];
    st_change *c = &p->changes[nch];
    klen = st_key_make(key, op->kind, op->name, op->nlen);
    k.mv_data = key; k.mv_size = klen;
    rc = mdb_get(txn, s->names, &k, &v);
    if (rc && rc != MDB_NOTFOUND) return st_mdb(s, rc, "reading the current map");
    if (rc == 0 && v.mv_size != 32)
      return st_fail(s, STORE_ECORRUPT, "the map record of %s %.*s is malformed",
                     store_kind_name(op->kind), (int)op->nlen, op->name);
    memset(c, 0, sizeof *c);
    c->kind = op->kind; c->name = op->name; c->nlen = op->nlen;
    if (rc == 0) { c->has_old = 1; memcpy(c->old_hash, v.mv_data, 32); }
    if (j->effects) j->effects[i] = STORE_SAME;
    if (op->remove) {
      if (!c->has_old) {
        if (p->flags & STORE_GROUP_ABSENT_OK) continue;   /* no change */
        return st_fail(s, STORE_EINVAL, "cannot remove %s %.*s: it is not in the "
                       "current map", store_kind_name(op->kind), (int)op->nlen, op->name);
      }
      if ((rc = mdb_del(txn, s->names, &k, NULL)) != 0)
        return st_mdb(s, rc, "updating the current map");
      if (s->j.capture) st_journal_op(s, 1, s->names, key, klen, NULL, 0);
      if (j->effects) j->effects[i] = STORE_REMOVED;
      nch++;
      continue;
    }
    if (c->has_old && memcmp(c->old_hash, op->hash, 32) == 0) continue;  /* same */
    c->has_new = 1;
    memcpy(c->new_hash, op->hash, 32);
    if (op->e) {
      size_t need = st_entry_size(op->nlen, op->e->len);
      if ((r = scratch(s, p, need)) != STORE_OK) return r;
      st_entry_encode(p->buf, op->kind, op->name, op->nlen, op->e->bytes, op->e->len);
      /* Each distinct entry is stored once: an existing hash is kept. */
      if ((r = st_put(s, txn, s->entries, op->hash, 32, p->buf, need,
                      MDB_NOOVERWRITE, "writing an entry")) != STORE_OK)
        return r;
    } else {
      MDB_val hk = { 32, (void *)op->hash };
      rc = mdb_get(txn, s->entries, &hk, &v);
      if (rc == MDB_NOTFOUND) {
        char hex[65];
        store_hash_hex(op->hash, hex);
        return st_fail(s, STORE_ECORRUPT, "entry %s (%s %.*s) is missing",
                       hex, store_kind_name(op->kind), (int)op->nlen, op->name);
      }
      if (rc) return st_mdb(s, rc, "reading an entry");
    }
    if ((r = st_put(s, txn, s->names, key, klen, op->hash, 32, 0,
                    "updating the current map")) != STORE_OK)
      return r;
    if (j->effects) j->effects[i] = c->has_old ? STORE_REPLACED : STORE_ADDED;
    nch++;
  }
  int writes = nch || (j->kind != STORE_REV_ACTION && j->kind != STORE_REV_APPLICATION);
  j->rev = writes ? before + 1 : before;
  /* the caller may still set the revision's generation and complete its
  ** events, now that it knows whether it writes one */
  if (p->fn) p->fn(p->fn_arg, (size_t)(j - p->jobs), j->rev, writes);
  if (writes) {
    st_hook(s, STORE_AT_AFTER_ENTRIES);
    if ((rc = mdb_stat(txn, s->names, &ms)) != 0) return st_mdb(s, rc, "counting the map");
    if (nch > 1) qsort(p->changes, nch, sizeof *p->changes, cmp_changes);
    mi.parent = before;
    mi.generation = j->info->generation;
    mi.rollback_of = j->rollback_of;
    mi.nentries = ms.ms_entries;
    mi.time_ms = j->time_ms;
    mi.kind = j->kind;
    mi.kernel_version = j->info->kernel_version;
    mi.summary = j->info->summary;
    mi.response_id = j->info->response_id;
    mi.foreign = j->info->foreign;
    mi.changes = p->changes;
    mi.nchanges = nch;
    mlen = st_manifest_size(&mi);
    if ((r = scratch(s, p, mlen)) != STORE_OK) return r;
    st_manifest_encode(p->buf, &mi, p->hs.md ? &p->hs : NULL);
    st_put_u64(revkey, j->rev);
    k.mv_data = revkey; k.mv_size = 8;
    v.mv_data = p->buf; v.mv_size = mlen;
    rc = mdb_put(txn, s->revs, &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST)
      return st_fail(s, STORE_ECORRUPT, "revision %llu already exists beyond CURRENT",
                     (unsigned long long)j->rev);
    if (rc) return st_mdb(s, rc, "writing the manifest");
    if (s->j.capture) st_journal_op(s, 0, s->revs, revkey, 8, p->buf, mlen);
    st_hook(s, STORE_AT_AFTER_MANIFEST);
    if ((r = st_raise_generation(s, txn, j->info->generation)) != STORE_OK) return r;
    *cur = j->rev;
  }
  if (j->nevents) {
    /* read now, after fn: it may have completed them */
    st_events_release(j->event_objs, j->nevents);
    j->event_objs = NULL;
    if ((r = st_events_prepare(s, j->events, j->nevents, &j->event_objs)) != STORE_OK) return r;
    if ((r = st_events_put_ev(s, txn, j->events, j->event_objs, j->nevents, &j->first_event)) != STORE_OK)
      return r;
  }
  /* the incident it repairs: repaired by this very transaction or not at all */
  return j->incident ? st_incident_repaired(s, txn, j->incident, j->rev, (p->flags & STORE_GROUP_TENTATIVE) != 0)
                     : STORE_OK;
}

static int publish_txn(store_env *s, MDB_txn *txn, void *arg) {
  pub *p = arg;
  uint8_t curbuf[8];
  uint64_t current, cur;
  size_t nevents = 0;
  int r;
  if ((r = st_get_current(s, txn, &current)) != STORE_OK) return r;
  if (current != p->parent)
    return st_fail(s, STORE_ESTALE, "CURRENT is revision %llu, not the expected "
                   "parent %llu; nothing was written", (unsigned long long)current,
                   (unsigned long long)p->parent);
  cur = current;
  for (size_t i = 0; i < p->njobs; i++) {
    if ((r = publish_one(s, txn, p, &p->jobs[i], &cur)) != STORE_OK) return r;
    nevents += p->jobs[i].nevents + (p->jobs[i].incident != 0);
  }
  if (cur == current) return nevents ? STORE_OK : ST_NOCHANGE;
  st_put_u64(curbuf, cur);
  return st_put(s, txn, s->meta, "current", 7, curbuf, 8, 0, "moving CURRENT");
}

/* Run the write transaction of p (its jobs validated and hashed). */
static int publish_jobs(store_env *s, pub *p) {
  size_t most = 0;
  int r;
  for (size_t i = 0; i < p->njobs; i++)
    if (p->jobs[i].nops > most) most = p->jobs[i].nops;
  if (most && !(p->changes = malloc(most * sizeof *p->changes)))
    return st_fail(s, STORE_ENOMEM, "out of memory publishing");
  if (st_hasher_init(&p->hs) != STORE_OK) p->hs = (st_hasher){NULL, NULL};  /* EVP_Digest then */
  st_hook(s, STORE_AT_BEFORE_TXN);
  r = st_write(s, publish_txn, p, ST_W_HOOKS | ((p->flags & STORE_GROUP_SYNC_LATER) ? ST_W_SYNC_LATER : 0));
  st_hasher_free(&p->hs);
  free(p->changes);
  free(p->buf);
  p->changes = NULL;
  p->buf = NULL;
  return r;
}

static int check_info(store_env *s, const store_rev_info *info) {
  if (!info) return st_fail(s, STORE_EINVAL, "no revision info");
  if (!store_rev_kind_name(info->kind))
    return st_fail(s, STORE_EINVAL, "invalid revision kind %d", info->kind);
  if (info->kernel_version && strlen(info->kernel_version) > STORE_VERSION_MAX)
    return st_fail(s, STORE_EINVAL, "the kernel version string is longer than %u bytes",
                   STORE_VERSION_MAX);
  if (info->response_id && strlen(info->response_id) > STORE_RESPONSE_MAX)
    return st_fail(s, STORE_EINVAL, "the response id is longer than %u bytes",
                   STORE_RESPONSE_MAX);
  if (info->foreign && strlen(info->foreign) > STORE_FOREIGN_MAX)
    return st_fail(s, STORE_EINVAL, "the foreign grant is longer than %u bytes", STORE_FOREIGN_MAX);
  return STORE_OK;
}

/* Validate and hash one revision's changes into ops[0..nchanged+nremoved):
** valid keys and sizes, no key twice (checked in seen, which the caller
** clears between revisions). */
static int make_ops(store_env *s, st_hasher *hs, st_map *seen, const store_rev_in *in, st_op *ops) {
  size_t nchanged = in->nchanged, n = in->nchanged + in->nremoved;
  uint8_t key[1 + STORE_NAME_MAX];
  static const uint8_t zero[32];
  int r;
  for (size_t i = 0; i < n; i++) {
    st_op *op = &ops[i];
    size_t klen;
    if (i < nchanged) {
      const store_entry *e = &in->changed[i];
      if ((r = st_check_key(s, e->kind, e->name, &op->nlen)) != STORE_OK) return r;
      if (e->len > STORE_ENTRY_MAX || (e->len && !e->bytes))
        return st_fail(s, STORE_EINVAL, "%s %s: invalid bytes (%zu bytes; the limit is %u)",
                       store_kind_name(e->kind), e->name, e->len, STORE_ENTRY_MAX);
      op->kind = e->kind; op->name = e->name; op->e = e;
      if ((r = st_hash(hs, e->kind, e->name, op->nlen, e->bytes, e->len, op->hash)) != STORE_OK)
        return st_fail(s, r, "hashing %s %s failed", store_kind_name(e->kind), e->name);
    } else {
      const store_key *k = &in->removed[i - nchanged];
      if ((r = st_check_key(s, k->kind, k->name, &op->nlen)) != STORE_OK) return r;
      op->kind = k->kind; op->name = k->name; op->remove = 1;
    }
    if (n == 1) break;   /* one key cannot be given twice */
    klen = st_key_make(key, op->kind, op->name, op->nlen);
    if (st_map_get(seen, key, klen))
      return st_fail(s, STORE_EINVAL, "%s %s is given twice in one publish",
                     store_kind_name(op->kind), op->name);
    if (st_map_set(seen, key, klen, zero) != 0)
      return st_fail(s, STORE_ENOMEM, "out of memory publishing");
  }
  return STORE_OK;
}

int store_publish_group(store_env *s, uint64_t parent, store_rev_in *revs, size_t n,
                        unsigned flags, store_group_fn fn, void *arg) {
  return store_publish_group_incidents(s, parent, revs, n, flags, fn, arg, NULL);
}

int store_publish_group_incidents(store_env *s, uint64_t parent, store_rev_in *revs, size_t n,
                                  unsigned flags, store_group_fn fn, void *arg, const uint64_t *incidents) {
  pub p = { .parent = parent, .njobs = n, .flags = flags, .fn = fn, .fn_arg = arg };
  st_op *ops = NULL;
  st_map seen;
  st_hasher hs = { NULL, NULL };
  size_t nops = 0, at = 0;
  int r = STORE_OK, hashing = 0;
  s->msg[0] = '\0';
  st_map_init(&seen);
  if (!n || !revs) return st_fail(s, STORE_EINVAL, "no revisions to publish");
  if (flags & ~(unsigned)(STORE_GROUP_ABSENT_OK | STORE_GROUP_SYNC_LATER | STORE_GROUP_TENTATIVE) ||
      ((flags & STORE_GROUP_TENTATIVE) && !incidents))
    return st_fail(s, STORE_EINVAL, "unknown publish flags 0x%x", flags);
  for (size_t i = 0; i < n; i++) {
    const store_rev_in *in = &revs[i];
    size_t k = in->nchanged + in->nremoved;
    if ((r = check_info(s, in->info)) != STORE_OK) return r;
    if ((in->nchanged && !in->changed) || (in->nremoved && !in->removed) || k < in->nchanged)
      return st_fail(s, STORE_EINVAL, "invalid entry arrays");
    if (nops + k < nops) return st_fail(s, STORE_EINVAL, "invalid entry arrays");
    nops += k;
    hashing |= in->nchanged != 0;
  }
  if (!(p.jobs = calloc(n, sizeof *p.jobs)) || (nops && !(ops = calloc(nops, sizeof *ops))) ||
      (hashing && st_hasher_init(&hs) != STORE_OK)) {
    r = st_fail(s, STORE_ENOMEM, "out of memory publishing");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    store_rev_in *in = &revs[i];
    job *j = &p.jobs[i];
    if ((r = make_ops(s, &hs, &seen, in, ops + at)) != STORE_OK) goto done;
    st_map_free(&seen);
    j->info = in->info;
    j->kind = in->info->kind;
    j->time_ms = in->info->time_ms ? in->info->time_ms : st_now_ms();
    j->ops = ops + at;
    j->nops = in->nchanged + in->nremoved;
    j->events = in->events;
    j->nevents = in->nevents;
    j->effects = in->effects;
    j->incident = incidents ? incidents[i] : 0;
    at += j->nops;
  }
  if ((r = publish_jobs(s, &p)) == STORE_OK)
    for (size_t i = 0; i < n; i++) {
      revs[i].rev = p.jobs[i].rev;
      revs[i].first_event = p.jobs[i].first_event;
    }
done:
  st_map_free(&seen);
  st_hasher_free(&hs);
  free(ops);
  for (size_t i = 0; p.jobs && i < n; i++) st_events_release(p.jobs[i].event_objs, p.jobs[i].nevents);
  free(p.jobs);
  return r;
}

int store_publish(store_env *s, uint64_t parent, const store_rev_info *info,
                  const store_entry *changed, size_t nchanged,
                  const store_key *removed, size_t nremoved, uint64_t *new_rev) {
  return store_publish_with_events(s, parent, info, changed, nchanged, removed, nremoved, NULL, NULL,
                                   0, new_rev, NULL);
}

int store_publish_with_events(store_env *s, uint64_t parent, const store_rev_info *info,
                              const store_entry *changed, size_t nchanged,
                              const store_key *removed, size_t nremoved,
                              struct json_t *const *events, const int64_t *event_times,
                              size_t nevents, uint64_t *new_rev, uint64_t *first_event_seq) {
  store_ev *ev = nevents ? st_ev_of_objects(events, event_times, nevents) : NULL;
  if (nevents && !ev) return st_fail(s, STORE_ENOMEM, "out of memory publishing");
  store_rev_in in = { info, changed, nchanged, removed, nremoved, ev, nevents, 0, 0, NULL };
  int r = store_publish_group(s, parent, &in, 1, 0, NULL, NULL);
  free(ev);
  if (r == STORE_OK && new_rev) *new_rev = in.rev;
  if (r == STORE_OK && first_event_seq) *first_event_seq = in.first_event;
  return r;
}

/* Rebuild revision rev's map in m, reading through txn. */
static int load_map(store_env *s, MDB_txn *txn, uint64_t rev, st_map *m) {
  uint64_t current;
  int r;
  if ((r = st_get_current(s, txn, &current)) != STORE_OK) return r;
  if (rev != STORE_REV_CURRENT && rev > current)
    return st_fail(s, STORE_ENOENT, "no revision %llu (CURRENT is %llu)",
                   (unsigned long long)rev, (unsigned long long)current);
  if ((r = st_map_load(s, txn, m)) != STORE_OK) return r;
  if (rev == STORE_REV_CURRENT) return STORE_OK;
  for (uint64_t i = current; i > rev && r == STORE_OK; i--) {
    store_manifest *man;
    if ((r = st_manifest_get(s, txn, i, 1, &man)) != STORE_OK) break;
    r = st_map_undo(s, m, man);
    free(man);
  }
  return r;
}

int store_publish_revert(store_env *s, uint64_t parent, uint64_t target,
                         const store_rev_info *info, uint64_t *new_rev) {
  MDB_txn *txn = NULL;
  st_map cur, old;
  st_slot **v = NULL;
  st_op *ops = NULL;
  size_t nv = 0, nops = 0;
  uint64_t current;
  store_rev_info ri;
  int r;
  s->msg[0] = '\0';
  st_map_init(&cur);
  st_map_init(&old);
  if (!info) return st_fail(s, STORE_EINVAL, "no revision info");
  ri = *info;
  ri.kind = STORE_REV_ROLLBACK;
  if ((r = check_info(s, &ri)) != STORE_OK) return r;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((r = st_get_current(s, txn, &current)) != STORE_OK) goto done;
  if (current != parent) {
    r = st_fail(s, STORE_ESTALE, "CURRENT is revision %llu, not the expected parent "
                "%llu; nothing was written", (unsigned long long)current,
                (unsigned long long)parent);
    goto done;
  }
  if (target == STORE_REV_CURRENT) target = current;
  if ((r = load_map(s, txn, target, &old)) != STORE_OK) goto done;
  if ((r = st_map_load(s, txn, &cur)) != STORE_OK) goto done;
  /* The delta: keys of the target that differ, and current keys it lacks.
  ** The ops point at map keys, which live until the end of this function. */
  if (!(ops = calloc(old.count + cur.count + 1, sizeof *ops))) {
    r = st_fail(s, STORE_ENOMEM, "out of memory computing the rollback");
    goto done;
  }
  for (int pass = 0; pass < 2; pass++) {
    st_map *a = pass ? &cur : &old, *b = pass ? &old : &cur;
    free(v);
    if (st_map_sorted(a, &v, &nv) != 0) {
      r = st_fail(s, STORE_ENOMEM, "out of memory computing the rollback");
      goto done;
    }
    for (size_t i = 0; i < nv; i++) {
      const uint8_t *h = st_map_get(b, v[i]->key, v[i]->klen);
      st_op *op;
      if (pass == 0 ? (h && memcmp(h, v[i]->hash, 32) == 0) : h != NULL) continue;
      op = &ops[nops++];
      op->kind = v[i]->key[0];
      /* Not NUL-terminated: the publish uses nlen only. */
      op->name = (const char *)v[i]->key + 1;
      op->nlen = v[i]->klen - 1;
      op->remove = pass == 1;
      if (!op->remove) memcpy(op->hash, v[i]->hash, 32);
    }
  }
  mdb_txn_abort(txn);
  txn = NULL;
  {
    job j = { .info = &ri, .kind = STORE_REV_ROLLBACK, .rollback_of = target,
              .time_ms = ri.time_ms ? ri.time_ms : st_now_ms(), .ops = ops, .nops = nops };
    pub p = { .parent = parent, .jobs = &j, .njobs = 1 };
    if ((r = publish_jobs(s, &p)) == STORE_OK && new_rev) *new_rev = j.rev;
  }
done:
  if (txn) mdb_txn_abort(txn);
  free(v);
  free(ops);
  st_map_free(&cur);
  st_map_free(&old);
  return r;
}

/* ---- generations */

/* The recorded high-water mark in txn (0 when none was recorded). */
static int get_generation(store_env *s, MDB_txn *txn, uint64_t *gen) {
  MDB_val k = { 10, "generation" }, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  *gen = 0;
  if (rc == MDB_NOTFOUND) return STORE_OK;
  if (rc) return st_mdb(s, rc, "reading the generation");
  if (v.mv_size != 8) return st_fail(s, STORE_ECORRUPT, "the generation record is malformed");
  *gen = st_get_u64(v.mv_data);
  return STORE_OK;
}

int st_raise_generation(store_env *s, MDB_txn *txn, uint64_t gen) {
  uint64_t old;
  uint8_t buf[8];
  int r;
  if ((r = get_generation(s, txn, &old)) != STORE_OK || gen <= old) return r;
  st_put_u64(buf, gen);
  return st_put(s, txn, s->meta, "generation", 10, buf, 8, 0, "recording the generation");
}

int store_generation(store_env *s, uint64_t *gen) {
  MDB_txn *txn;
  uint64_t g = 0, current = 0;
  int r;
  s->msg[0] = '\0';
  if (!gen) return st_fail(s, STORE_EINVAL, "store_generation: gen is NULL");
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((r = get_generation(s, txn, &g)) == STORE_OK && (r = st_get_current(s, txn, &current)) == STORE_OK &&
      current) {
    /* a store written before the mark was kept: CURRENT's generation */
    store_manifest *man = NULL;
    if ((r = st_manifest_get(s, txn, current, 0, &man)) == STORE_OK && man->generation > g)
      g = man->generation;
    free(man);
  }
  mdb_txn_abort(txn);
  if (r == STORE_OK) *gen = g;
  return r;
}

typedef struct adv { uint64_t gen; json_t *const *events; const int64_t *times; size_t n; uint64_t first; } adv;

static int advance_txn(store_env *s, MDB_txn *txn, void *arg) {
  adv *a = arg;
  int r = st_raise_generation(s, txn, a->gen);
  if (r == STORE_OK && a->n) r = st_events_put(s, txn, a->events, a->times, a->n, &a->first);
  return r;
}

int store_advance_generation(store_env *s, uint64_t gen, json_t *const *events,
                             const int64_t *event_times, size_t nevents, uint64_t *first_seq) {
  adv a = { gen, events, event_times, nevents, 0 };
  int r;
  s->msg[0] = '\0';
  if ((r = st_events_check(s, events, nevents)) != STORE_OK) return r;
  r = st_write(s, advance_txn, &a, 0);
  if (r == STORE_OK && first_seq) *first_seq = a.first;
  return r;
}

/* ---- reading */

int st_manifest_get(store_env *s, MDB_txn *txn, uint64_t rev, int changes,
                    store_manifest **out) {
  uint8_t key[8];
  MDB_val k = { 8, key }, v;
  const char *why = NULL;
  int rc, r;
  st_put_u64(key, rev);
  rc = mdb_get(txn, s->revs, &k, &v);
  if (rc == MDB_NOTFOUND)
    return st_fail(s, STORE_ENOENT, "no revision %llu", (unsigned long long)rev);
  if (rc) return st_mdb(s, rc, "reading a manifest");
  r = st_manifest_decode(v.mv_data, v.mv_size, rev, changes, out, &why);
  if (r == STORE_ECORRUPT)
    return st_fail(s, r, "revision %llu: %s", (unsigned long long)rev, why);
  if (r != STORE_OK) return st_fail(s, r, "out of memory reading revision %llu",
                                    (unsigned long long)rev);
  return STORE_OK;
}

static int manifest_read(store_env *s, uint64_t rev, int changes, store_manifest **out) {
  MDB_txn *txn;
  int r;
  s->msg[0] = '\0';
  if (!out) return st_fail(s, STORE_EINVAL, "store_manifest_read: out is NULL");
  *out = NULL;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  r = st_manifest_get(s, txn, rev, changes, out);
  mdb_txn_abort(txn);
  return r;
}

int store_manifest_read(store_env *s, uint64_t rev, store_manifest **out) {
  return manifest_read(s, rev, 1, out);
}

int store_manifest_read_header(store_env *s, uint64_t rev, store_manifest **out) {
  return manifest_read(s, rev, 0, out);
}

/* The first of the n sorted slots whose key has this kind (n if none). */
static size_t first_of_kind(st_slot **sl, size_t n, int kind) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sl[mid]->key[0] < kind) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* store_map_foreach (all: every kind, in key order) and
** store_map_foreach_kinds (kinds[0..nkinds), kind by kind).  The keys are
** gathered first, their entries fetched in hash order (st_fetch.c), then
** handed out in key order; for the current map everything points into
** LMDB's memory map, nothing is copied. */
static int map_walk(store_env *s, uint64_t rev, int all, const int *kinds, size_t nkinds,
                    size_t *counts, store_entry_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  st_map m;
  st_slot **sl = NULL;
  st_refs refs = { NULL, 0, 0 };
  size_t n = 0, nwalks = all ? 1 : nkinds;
  char name[STORE_NAME_MAX + 1];
  uint64_t current;
  int rc, r;
  s->msg[0] = '\0';
  if (!fn || (!all && nkinds && !kinds))
    return st_fail(s, STORE_EINVAL, "store_map_foreach: no callback or no kinds");
  for (size_t i = 0; !all && i < nkinds; i++) {
    int seen = 0;
    for (size_t j = 0; j < i; j++) seen |= kinds[j] == kinds[i];
    if (!st_valid_kind(kinds[i]) || seen)
      return st_fail(s, STORE_EINVAL, "store_map_foreach_kinds: kind %d is invalid or "
                     "given twice", kinds[i]);
  }
  st_map_init(&m);
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((r = st_get_current(s, txn, &current)) != STORE_OK) goto done;
  if (rev == current) rev = STORE_REV_CURRENT;
  if (rev == STORE_REV_CURRENT) {
    /* Straight from the names database; a kind is one run of keys (the
    ** kind is their first byte). */
    MDB_stat ms;
    if ((rc = mdb_stat(txn, s->names, &ms)) != 0 || (rc = mdb_cursor_open(txn, s->names, &cur)) != 0) {
      r = st_mdb(s, rc, "reading the current map");
      goto done;
    }
    if (st_refs_reserve(&refs, ms.ms_entries) != 0) {
      r = st_fail(s, STORE_ENOMEM, "out of memory reading the current map");
      goto done;
    }
    for (size_t w = 0; w < nwalks && r == STORE_OK; w++) {
      size_t before = refs.n;
      r = st_refs_gather(s, cur, all ? 0 : kinds[w], 0, &refs);
      if (counts) counts[w] = refs.n - before;
    }
  } else {
    if ((r = load_map(s, txn, rev, &m)) != STORE_OK) goto done;
    if (st_map_sorted(&m, &sl, &n) != 0 || st_refs_reserve(&refs, n) != 0) {
      r = st_fail(s, STORE_ENOMEM, "out of memory rebuilding revision %llu",
                  (unsigned long long)rev);
      goto done;
    }
    for (size_t w = 0; w < nwalks && r == STORE_OK; w++) {
      size_t i = all ? 0 : first_of_kind(sl, n, kinds[w]), before = refs.n;
      for (; i < n && (all || sl[i]->key[0] == kinds[w]); i++)
        if (st_refs_add(&refs, sl[i]->key, sl[i]->klen, sl[i]->hash) != 0) {
          r = st_fail(s, STORE_ENOMEM, "out of memory rebuilding revision %llu",
                      (unsigned long long)rev);
          break;
        }
      if (counts) counts[w] = refs.n - before;
    }
  }
  if (r == STORE_OK) r = st_refs_fetch(s, txn, &refs, NULL);
  for (size_t i = 0; r == STORE_OK && i < refs.n; i++) {
    const st_ref *x = &refs.v[i];
    store_entry e = { x->key[0], name, x->bytes, x->len };
    memcpy(name, x->key + 1, x->klen - 1);
    name[x->klen - 1] = '\0';
    if (fn(arg, &e, x->hash)) break;
  }
done:
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  st_refs_free(&refs);
  free(sl);
  st_map_free(&m);
  return r;
}

int store_map_foreach(store_env *s, uint64_t rev, store_entry_fn fn, void *arg) {
  return map_walk(s, rev, 1, NULL, 0, NULL, fn, arg);
}

int store_map_foreach_kinds(store_env *s, uint64_t rev, const int *kinds, size_t nkinds,
                            size_t *counts, store_entry_fn fn, void *arg) {
  return map_walk(s, rev, 0, kinds, nkinds, counts, fn, arg);
}

int store_lookup(store_env *s, int kind, const char *name, uint8_t hash[32]) {
  uint8_t key[1 + STORE_NAME_MAX];
  size_t nlen;
  MDB_txn *txn;
  MDB_val k, v;
  int rc, r;
  s->msg[0] = '\0';
  if ((r = st_check_key(s, kind, name, &nlen)) != STORE_OK) return r;
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  k.mv_data = key;
  k.mv_size = st_key_make(key, kind, name, nlen);
  rc = mdb_get(txn, s->names, &k, &v);
  if (rc == MDB_NOTFOUND) r = st_fail(s, STORE_ENOENT, "no %s %s in the current map",
                                      store_kind_name(kind), name);
  else if (rc) r = st_mdb(s, rc, "reading the current map");
  else if (v.mv_size != 32) r = st_fail(s, STORE_ECORRUPT, "the map record of %s %s "
                                        "is malformed", store_kind_name(kind), name);
  else memcpy(hash, v.mv_data, 32);
  mdb_txn_abort(txn);
  return r;
}

int store_get_entry(store_env *s, const uint8_t hash[32], store_entry **out) {
  MDB_txn *txn;
  MDB_val k = { 32, (void *)hash }, v;
  const char *name;
  const void *bytes;
  size_t nlen, len;
  int kind, rc, r;
  char hex[65];
  s->msg[0] = '\0';
  if (!out || !hash) return st_fail(s, STORE_EINVAL, "store_get_entry: NULL argument");
  *out = NULL;
  store_hash_hex(hash, hex);
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  rc = mdb_get(txn, s->entries, &k, &v);
  if (rc == MDB_NOTFOUND) r = st_fail(s, STORE_ENOENT, "no entry %s", hex);
  else if (rc) r = st_mdb(s, rc, "reading an entry");
  else if (st_entry_decode(v.mv_data, v.mv_size, &kind, &name, &nlen, &bytes, &len) != 0)
    r = st_fail(s, STORE_ECORRUPT, "entry %s is malformed", hex);
  else {
    store_entry *e = malloc(sizeof *e + nlen + 1 + len + 1);
    if (!e) r = st_fail(s, STORE_ENOMEM, "out of memory reading entry %s", hex);
    else {
      char *p = (char *)(e + 1);
      memcpy(p, name, nlen);
      p[nlen] = '\0';
      memcpy(p + nlen + 1, bytes, len);
      p[nlen + 1 + len] = '\0';   /* convenience: bytes are NUL-terminated too */
      e->kind = kind;
      e->name = p;
      e->bytes = p + nlen + 1;
      e->len = len;
      *out = e;
    }
  }
  mdb_txn_abort(txn);
  return r;
}
