/*
** st_journal.c — the journal: a write made durable by one sequential
** append instead of an LMDB commit's two syncs of scattered pages
** (store.h "The journal", docs/store.md).
**
** A handle in journal mode makes its SYNC_LATER writes inside one long LMDB
** write transaction and records every put and delete such a write makes;
** when the write ends well, its puts and deletes are appended to
** DIR/journal as one record.  store_sync then syncs the journal alone.
** store_checkpoint commits the long transaction (LMDB's full commit, both
** syncs) and starts a new epoch of the journal, making its records stale.
** A write that fails after changing the long transaction is taken back
** by aborting it and committing the epoch's records again from the
** journal (rewind_epoch).
**
** So data.mdb on disk is always a state LMDB committed in full: the last
** checkpoint, or the one before it when the machine stopped between a
** checkpoint's commit and the new epoch's header.  Opening the store for
** writing replays the records of the journal's epoch on top.  A record
** sets each key it names to a definite value (a put overwrites, a delete
** removes), so replaying the epoch's records in order gives the same
** result on either state.
**
** File layout (integers big-endian):
**   header, J_HEAD bytes:  "JITIJNL1"  u64 epoch  u64 check
**   records from J_HEAD:   u32 magic  u32 length  u64 epoch  u64 seq
**                          u64 check  payload[length]
**   payload: operations:   u8 op (1 put, 2 delete)  u8 database
**                          u32 key length  u32 value length  key  value
** check: the first 8 bytes of the SHA-256 of what precedes it in the
** header, or of the record's first 24 bytes and its payload.  Replay stops
** at the first record that is torn, of another epoch or out of sequence:
** the tail of a crash, or what a former epoch left further on.
*/
#define _GNU_SOURCE
/* SHA256_Init/Update/Final: deprecated in OpenSSL 3 for EVP, which looks
** the digest up on every use; a record's check is one small digest */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <openssl/sha.h>
#include "st_int.h"

#define J_MAGIC "JITIJNL1"
#define J_HEAD 4096u              /* the header's room: records start here */
#define J_REC_MAGIC 0x4a524543u   /* "JREC" */
#define J_REC_HEAD 32u
#define J_GROW ((uint64_t)8 << 20)  /* preallocated at a time: an append that
                                       stays inside the file changes no metadata */
#define J_FULL ((uint64_t)64 << 20) /* a journal this long is checkpointed */

enum { J_PUT = 1, J_DEL = 2 };

static int check8(const void *a, size_t na, const void *b, size_t nb, uint8_t out[8]) {
  uint8_t h[32];
  SHA256_CTX c;
  if (!SHA256_Init(&c) || !SHA256_Update(&c, a, na) || (nb && !SHA256_Update(&c, b, nb)) || !SHA256_Final(h, &c))
    return -1;
  memcpy(out, h, 8);
  return 0;
}

static int db_index(const store_env *s, MDB_dbi dbi) {
  MDB_dbi all[ST_NDBS];
  st_dbis(s, all);
  for (int i = 0; i < ST_NDBS; i++)
    if (all[i] == dbi) return i;
  return -1;
}

static MDB_dbi db_of(const store_env *s, int i) {
  MDB_dbi all[ST_NDBS];
  st_dbis(s, all);
  return all[i];
}

static int write_all(int fd, const void *p, size_t n, uint64_t off) {
  const uint8_t *b = p;
  while (n) {
    ssize_t w = pwrite(fd, b, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w; n -= (size_t)w; off += (uint64_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n, uint64_t off) {
  uint8_t *b = p;
  while (n) {
    ssize_t r = pread(fd, b, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    b += r; n -= (size_t)r; off += (uint64_t)r;
  }
  return 0;
}

/* ---- capture */

void st_journal_op(store_env *s, int del, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen) {
  st_journal *j = &s->j;
  if (!j->capture || j->failed) return;
  int db = db_index(s, dbi);
  size_t need = j->len + 10 + klen + vlen;
  if (db < 0 || klen > UINT32_MAX || vlen > UINT32_MAX) {
    j->failed = 1;
    return;
  }
  if (need > j->cap) {
    size_t cap = j->cap ? j->cap : 4096;
    while (cap < need) cap *= 2;
    uint8_t *b = realloc(j->ops, cap);
    if (!b) {
      j->failed = 1;   /* the write fails: it could not be recorded */
      return;
    }
    j->ops = b;
    j->cap = cap;
  }
  uint8_t *p = j->ops + j->len;
  p[0] = (uint8_t)(del ? J_DEL : J_PUT);
  p[1] = (uint8_t)db;
  st_put_u32(p + 2, (uint32_t)klen);
  st_put_u32(p + 6, (uint32_t)vlen);
  memcpy(p + 10, k, klen);
  if (vlen) memcpy(p + 10 + klen, v, vlen);
  j->len = need;
}

/* ---- the file */

static int write_header(store_env *s, uint64_t epoch) {
  uint8_t h[J_HEAD] = {0};
  memcpy(h, J_MAGIC, 8);
  st_put_u64(h + 8, epoch);
  if (check8(h, 16, NULL, 0, h + 16) != 0) return st_fail(s, STORE_ENOMEM, "out of memory checking the journal");
  if (write_all(s->j.fd, h, sizeof h, 0) != 0 || fdatasync(s->j.fd) != 0)
    return st_mdb(s, errno, "writing the journal's header");
  s->j.epoch = epoch;
  s->j.seq = 0;
  s->j.off = J_HEAD;
  return STORE_OK;
}

/* The epoch of a valid header, else 0. */
static uint64_t read_header(int fd) {
  uint8_t h[24], c[8];
  if (read_all(fd, h, sizeof h, 0) != 0 || memcmp(h, J_MAGIC, 8) != 0) return 0;
  if (check8(h, 16, NULL, 0, c) != 0 || memcmp(c, h + 16, 8) != 0) return 0;
  return st_get_u64(h + 8);
}

static int open_file(store_env *s, int create, int *fd) {
  char path[4200];
  snprintf(path, sizeof path, "%s/journal", s->path);
  *fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
  if (*fd < 0 && errno == ENOENT && !create) return STORE_ENOENT;
  if (*fd < 0) return st_fail(s, st_code(errno), "opening the journal: %s", strerror(errno));
  return STORE_OK;
}

/* ---- replay */

typedef struct replay { const uint8_t *p; size_t n; } replay;   /* the records' operations, end to end */

/* A record whose check passed but whose operations do not parse: not a
** torn tail but damage (or a bug); replaying past it could be wrong. */
static int malformed(store_env *s) {
  return st_fail(s, STORE_ECORRUPT, "a record of the journal is malformed though its check passed; nothing was "
                 "replayed; to open the store without the writes it holds, move %s/journal aside", s->path);
}

static int apply_ops(store_env *s, MDB_txn *txn, const uint8_t *p, size_t n) {
  while (n) {
    if (n < 10) return malformed(s);
    uint32_t klen = st_get_u32(p + 2), vlen = st_get_u32(p + 6);
    if (p[1] >= ST_NDBS || (p[0] != J_PUT && p[0] != J_DEL) || (size_t)klen + vlen > n - 10)
      return malformed(s);
    MDB_val k = { klen, (void *)(p + 10) }, v = { vlen, (void *)(p + 10 + klen) };
    int rc = p[0] == J_PUT ? mdb_put(txn, db_of(s, p[1]), &k, &v, 0) : mdb_del(txn, db_of(s, p[1]), &k, NULL);
    if (rc && !(p[0] == J_DEL && rc == MDB_NOTFOUND)) return st_mdb(s, rc, "replaying the journal");
    p += 10 + klen + vlen;
    n -= 10 + (size_t)klen + vlen;
  }
  return STORE_OK;
}

static int replay_txn(store_env *s, MDB_txn *txn, void *arg) {
  replay *r = arg;
  return apply_ops(s, txn, r->p, r->n);
}

/* Commit the epoch's records in fd to data.mdb in full; their number in
** *records. */
static int replay_epoch(store_env *s, int fd, uint64_t epoch, size_t *records) {
  uint8_t *all = NULL;   /* the records' payloads end to end: operations delimit themselves */
  size_t len = 0, cap = 0;
  uint64_t off = J_HEAD, seq = 0;
  struct stat st;
  uint64_t end = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
  int r = STORE_OK;
  for (; epoch;) {
    uint8_t h[J_REC_HEAD], c[8];
    if (read_all(fd, h, sizeof h, off) != 0) break;
    uint32_t plen = st_get_u32(h + 4);
    if (st_get_u32(h) != J_REC_MAGIC || st_get_u64(h + 8) != epoch || st_get_u64(h + 16) != seq) break;
    if (plen > end - off - J_REC_HEAD) break;   /* longer than the file: torn */
    if (cap - len < (size_t)plen) {
      size_t nc = cap ? cap : 65536;
      while (nc - len < (size_t)plen) nc *= 2;
      uint8_t *b = realloc(all, nc);
      if (!b) {
        r = st_fail(s, STORE_ENOMEM, "out of memory replaying the journal");
        goto out;
      }
      all = b;
      cap = nc;
    }
    if (read_all(fd, all + len, plen, off + J_REC_HEAD) != 0) break;   /* torn */
    if (check8(h, 24, all + len, plen, c) != 0 || memcmp(c, h + 24, 8) != 0) break;
    len += plen;
    off += J_REC_HEAD + plen;
    seq++;
  }
  if (len) {
    replay rp = { all, len };
    r = st_write_direct(s, replay_txn, &rp, 0);   /* a full commit; grows the map as needed */
  }
  *records = (size_t)seq;
out:
  free(all);
  return r;
}

int st_journal_recover(store_env *s, size_t *records) {
  int fd, r = open_file(s, 0, &fd);
  *records = 0;
  if (r == STORE_ENOENT) return STORE_OK;
  if (r != STORE_OK) return r;
  uint64_t epoch = read_header(fd);
  r = replay_epoch(s, fd, epoch, records);
  if (r == STORE_OK && *records) {   /* the records are in data.mdb now: a new epoch makes them stale */
    s->j.fd = fd;
    r = write_header(s, epoch + 1);
    s->j.fd = -1;
  }
  close(fd);
  return r;
}

/* ---- readers
**
** A reader (a read-only handle) sees data.mdb only.  So that it sees every
** write made durable before it opened, it first waits for the journal's
** records to reach data.mdb: with the writer gone (a crash) it replays them
** itself, through a writable open; with the writer alive, it waits for the
** writer's next checkpoint (a new epoch), which a writer makes soon after
** its first pending write. */

#define J_READER_WAIT_MS 10000

/* The journal's epoch when it holds a record of it, else 0. */
static uint64_t records_pending(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/journal", dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  uint64_t epoch = read_header(fd);
  uint8_t h[J_REC_HEAD];
  if (epoch && (read_all(fd, h, sizeof h, J_HEAD) != 0 || st_get_u32(h) != J_REC_MAGIC ||
                st_get_u64(h + 8) != epoch || st_get_u64(h + 16) != 0))
    epoch = 0;
  close(fd);
  return epoch;
}

void st_journal_settle(const char *dir) {
  uint64_t epoch = records_pending(dir);
  if (!epoch) return;
  store_env *w;
  int r = store_open(dir, STORE_NOCREATE, &w, NULL, 0);   /* replays them */
  if (r == STORE_OK) {
    store_close(w);
    return;
  }
  if (r != STORE_EBUSY) return;   /* the reader reports what it finds */
  for (int waited = 0; waited < J_READER_WAIT_MS; waited += 2) {
    usleep(2000);
    if (records_pending(dir) != epoch) return;
  }
}

/* ---- journal mode */

/* The file at least `need` bytes long, J_GROW more when the disk has
** them (appends inside the file change no metadata for the sync to
** write), else just `need`. */
static int allocate(store_env *s, uint64_t need) {
  st_journal *j = &s->j;
  uint64_t want = (need / J_GROW + 1) * J_GROW;
  int e = posix_fallocate(j->fd, 0, (off_t)want);
  if (e == ENOSPC || e == EDQUOT) e = posix_fallocate(j->fd, 0, (off_t)(want = need));
  if (e) return st_mdb(s, e, "allocating room in the journal");
  if (want > j->size) j->size = want;
  return STORE_OK;
}

int store_journal_begin(store_env *s) {
  s->msg[0] = '\0';
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  if (s->j.fd >= 0) return STORE_OK;
  int fd, r = open_file(s, 1, &fd);
  if (r != STORE_OK) return r;
  uint64_t epoch = read_header(fd);   /* replayed at open: its records are stale */
  s->j.fd = fd;
  if ((r = allocate(s, J_HEAD + (uint64_t)J_REC_HEAD)) != STORE_OK) goto fail;
  if ((r = write_header(s, epoch + 1)) != STORE_OK) goto fail;
  /* the file's name is durable too, before any write counts on it */
  int dfd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) != 0) {
    r = st_fail(s, STORE_EIO, "syncing the store directory: %s", strerror(errno));
    if (dfd >= 0) close(dfd);
    goto fail;
  }
  close(dfd);
  return STORE_OK;
fail:
  close(fd);
  s->j.fd = -1;
  return r;
}

int store_journal_pending(const store_env *s) { return s->j.txn != NULL; }

const char *store_journal_broken(const store_env *s) { return s->j.broken ? s->j.why : NULL; }

/* A failed checkpoint breaks the handle; its message is kept, as later
** calls reuse the handle's. */
static int break_handle(store_env *s, int r) {
  s->j.broken = 1;
  snprintf(s->j.why, sizeof s->j.why, "%.255s", s->msg);
  return r;
}

/* Append the captured operations as record seq of the epoch. */
static int append(store_env *s) {
  st_journal *j = &s->j;
  uint64_t rec = J_REC_HEAD + j->len;
  int r;
  if (j->off + rec > j->size && (r = allocate(s, j->off + rec)) != STORE_OK) return r;
  uint8_t h[J_REC_HEAD];
  st_put_u32(h, J_REC_MAGIC);
  st_put_u32(h + 4, (uint32_t)j->len);
  st_put_u64(h + 8, j->epoch);
  st_put_u64(h + 16, j->seq);
  if (check8(h, 24, j->ops, j->len, h + 24) != 0) return st_fail(s, STORE_ENOMEM, "out of memory checking the journal");
  struct iovec iov[2] = { { h, sizeof h }, { j->ops, j->len } };
  ssize_t w;
  do w = pwritev(j->fd, iov, j->len ? 2 : 1, (off_t)j->off);
  while (w < 0 && errno == EINTR);
  if (w != (ssize_t)rec) {
    /* a short write leaves bytes replay would stop at anyway: the next
    ** record overwrites them */
    return w < 0 ? st_mdb(s, errno, "appending to the journal")
                 : st_fail(s, STORE_EIO, "appending to the journal: a short write");
  }
  return STORE_OK;
}

static int owned_here(store_env *s) {
  if (!s->j.txn || pthread_equal(s->j.owner, pthread_self())) return 1;
  st_fail(s, STORE_EPERM, "journaled writes are pending on another thread; checkpoint there first");
  return 0;
}

/* The epoch's records are in data.mdb: a new epoch makes them stale, or
** the handle breaks. */
static int next_epoch(store_env *s) {
  int r = write_header(s, s->j.epoch + 1);
  return r == STORE_OK ? r : break_handle(s, r);
}

/* Commit the epoch's records to data.mdb from the journal, the long
** transaction that held them being gone: all of them, or the handle
** breaks. */
static int recommit_epoch(store_env *s) {
  st_journal *j = &s->j;
  size_t n = 0;
  int r = replay_epoch(s, j->fd, j->epoch, &n);
  if (r == STORE_OK && n != j->seq)
    r = st_fail(s, STORE_EIO, "committing the journal: %zu of its %llu records read back", n,
                (unsigned long long)j->seq);
  return r == STORE_OK ? r : break_handle(s, r);
}

/* Whether the write that just failed changed the long transaction (it
** recorded operations, or could not record them all) or left it unusable
** (LMDB refuses a transaction after a failed put with MDB_BAD_TXN). */
static int spoiled(store_env *s) {
  if (s->j.len || s->j.failed) return 1;
  MDB_val k = { 7, "current" }, v;
  int rc = mdb_get(s->j.txn, s->meta, &k, &v);
  return rc != 0 && rc != MDB_NOTFOUND;
}

/* Take back a failed write that spoiled the long transaction: abort it,
** which also drops the epoch's earlier writes, and commit those again
** from the journal; a new epoch makes its records stale.  The failed
** write's message is kept. */
static int rewind_epoch(store_env *s) {
  st_journal *j = &s->j;
  char why[ST_MSG_MAX];
  memcpy(why, s->msg, sizeof why);
  mdb_txn_abort(j->txn);
  j->txn = NULL;
  if (j->seq) {
    int r = recommit_epoch(s);
    if (r == STORE_OK) r = next_epoch(s);
    if (r != STORE_OK) return r;
  }
  memcpy(s->msg, why, sizeof why);
  return STORE_OK;
}

/* A write goes straight into the long transaction: a nested transaction
** per write would copy every page it touches once more and merge its
** dirty list into the long one's, a cost that grows with the store.  A
** write that fails after changing something is taken back by
** rewind_epoch, which is slow but rare: the callers check what they can
** before their first put. */
int st_journal_write(store_env *s, st_txn_fn fn, void *arg, int flags) {
  st_journal *j = &s->j;
  if (j->broken) return st_fail(s, STORE_EIO, "an earlier checkpoint failed; reopen the store to recover");
  if (!owned_here(s)) return STORE_EPERM;
  for (;;) {
    int rc, r;
    if (!j->txn) {
      rc = mdb_txn_begin(s->env, NULL, 0, &j->txn);
      if (rc == MDB_MAP_RESIZED && (rc = mdb_env_set_mapsize(s->env, 0)) == 0)
        rc = mdb_txn_begin(s->env, NULL, 0, &j->txn);
      if (rc) {
        j->txn = NULL;
        return st_mdb(s, rc, "beginning a write transaction");
      }
      j->owner = pthread_self();
    }
    j->len = 0;
    j->failed = 0;
    j->capture = 1;
    s->txn_full = 0;   /* what this write's failure was, not an earlier one's */
    r = fn(s, j->txn, arg);
    j->capture = 0;
    if (r == STORE_OK && j->failed) r = st_fail(s, STORE_ENOMEM, "out of memory recording a write in the journal");
    if (r == STORE_OK) {
      if (flags & ST_W_HOOKS) st_hook(s, STORE_AT_BEFORE_COMMIT);
      s->no_room = 0;
      if ((r = append(s)) != STORE_OK) {
        int no_room = s->no_room;
        if ((rc = rewind_epoch(s)) != STORE_OK) return rc;
        if (!no_room) return r;
        /* the disk has no room for the record, data.mdb may have free
        ** pages: this write as a full commit */
        return st_write_direct(s, fn, arg, flags & ~ST_W_SYNC_LATER);
      }
      j->off += J_REC_HEAD + j->len;
      j->seq++;
      if (flags & ST_W_HOOKS) st_hook(s, STORE_AT_AFTER_COMMIT);
      /* the write is in the journal whatever the checkpoint does: a
      ** failed one breaks the handle (store_journal_broken), not this write */
      if (j->off > J_FULL) (void)store_checkpoint(s);
      return STORE_OK;
    }
    if (spoiled(s) && (rc = rewind_epoch(s)) != STORE_OK) return rc;
    if (r == ST_NOCHANGE) return STORE_OK;
    if (r != ST_MAPFULL && !(r == STORE_EIO && s->txn_full)) return r;
    /* the long transaction has the map, or LMDB's dirty-page list, to
    ** itself: commit it (a rewind already did), grow the map if that was
    ** the limit, run again */
    if ((rc = store_checkpoint(s)) != STORE_OK) return rc;
    if (r == ST_MAPFULL && (rc = st_grow(s)) != STORE_OK) return rc;
  }
}

int store_checkpoint(store_env *s) {
  st_journal *j = &s->j;
  s->msg[0] = '\0';
  if (!j->txn) return STORE_OK;
  if (!owned_here(s)) return STORE_EPERM;
  st_hook(s, STORE_AT_BEFORE_CHECKPOINT);
  int rc = mdb_txn_commit(j->txn);   /* both of LMDB's syncs; frees the txn */
  j->txn = NULL;
  if (rc == MDB_MAP_FULL) {
    /* the commit's own bookkeeping (the free list) found no room; the
    ** journal holds every write the transaction made: a larger map, and
    ** they are committed again from there */
    int r = st_grow(s);
    if (r != STORE_OK) return break_handle(s, r);
    if ((r = recommit_epoch(s)) != STORE_OK) return r;
    rc = 0;
  }
  /* data.mdb holds the last checkpoint, the journal the rest */
  if (rc) return break_handle(s, st_mdb(s, rc, "checkpointing the journal"));
  st_hook(s, STORE_AT_AFTER_CHECKPOINT);
  return next_epoch(s);
}

int st_journal_sync(store_env *s) { return fdatasync(s->j.fd); }

void st_journal_close(store_env *s) {
  st_journal *j = &s->j;
  if (j->txn) {
    if (pthread_equal(j->owner, pthread_self())) (void)store_checkpoint(s);
    else j->txn = NULL;   /* another thread's: the journal keeps its writes for the next open */
  }
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
  free(j->ops);
  j->ops = NULL;
}
