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
**   header, J_HEAD bytes:  "JITIJNL1"  u64 epoch  u64 check, at offset 0
**                          and again at 2048 (older journals: at 0 only)
**   records from J_HEAD:   u32 magic  u32 length  u64 epoch  u64 seq
**                          u64 check  payload[length]
**   payload: operations:   u8 op (1 put, 2 delete)  u8 database
**                          u32 key length  u32 value length  key  value
** check: the first 8 bytes of the SHA-256 of what precedes it in the
** header, or of the record's first 24 bytes and its payload.  Replay stops
** at the first record that is torn, of another epoch or out of sequence:
** the tail of a crash, or what a former epoch left further on — unless
** intact records of the epoch follow it, which makes it damage ("reading
** the records back", below).  Epoch and sequence number in every record
** are what let those be found and told from a former epoch's: the format
** needed no change for it, only the header its second copy, which older
** programs never read.
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
#include <jansson.h>
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

/* The header's two copies, in different sectors of its room: a copy
** damaged alone is outvoted, a header write torn between them leaves one. */
static const uint64_t header_copy[2] = { 0, 2048 };

static int write_header(store_env *s, uint64_t epoch) {
  uint8_t h[J_HEAD] = {0};
  memcpy(h, J_MAGIC, 8);
  st_put_u64(h + 8, epoch);
  if (check8(h, 16, NULL, 0, h + 16) != 0) return st_fail(s, STORE_ENOMEM, "out of memory checking the journal");
  memcpy(h + header_copy[1], h, 24);
  if (write_all(s->j.fd, h, sizeof h, 0) != 0 || fdatasync(s->j.fd) != 0)
    return st_mdb(s, errno, "writing the journal's header");
  s->j.epoch = epoch;
  s->j.seq = 0;
  s->j.off = J_HEAD;
  return STORE_OK;
}

typedef enum j_header { J_HDR_NONE, J_HDR_OK, J_HDR_DAMAGED } j_header;

/* The header's epoch: the larger of its valid copies (a write of the next
** epoch's header torn between them leaves the former one, whose records
** replay onto either state of data.mdb: see the top).  NONE when it was
** never written (zeros, or no room), DAMAGED when something else is there. */
static j_header read_header(int fd, uint64_t *epoch) {
  uint8_t h[J_HEAD], c[8];
  int valid = 0, blank = 1;
  *epoch = 0;
  ssize_t got = pread(fd, h, sizeof h, 0);
  if (got < 0) got = 0;
  memset(h + got, 0, sizeof h - (size_t)got);
  for (int i = 0; i < 2; i++) {
    const uint8_t *p = h + header_copy[i];
    for (int k = 0; k < 24; k++) blank &= p[k] == 0;
    if (memcmp(p, J_MAGIC, 8) != 0 || check8(p, 16, NULL, 0, c) != 0 || memcmp(c, p + 16, 8) != 0) continue;
    if (st_get_u64(p + 8) > *epoch) *epoch = st_get_u64(p + 8);
    valid = 1;
  }
  return valid ? J_HDR_OK : blank ? J_HDR_NONE : J_HDR_DAMAGED;
}

static int open_file(store_env *s, int create, int *fd) {
  char path[4200];
  snprintf(path, sizeof path, "%s/journal", s->path);
  *fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
  if (*fd < 0 && errno == ENOENT && !create) return STORE_ENOENT;
  if (*fd < 0) return st_fail(s, st_code(errno), "opening the journal: %s", strerror(errno));
  return STORE_OK;
}

/* ---- reading the records back
**
** From the start of the records, each one of the epoch in sequence, whole
** and matching its check, replays.  Where that stops, the rest tells a torn
** tail from damage:
**   - a torn tail: a crash stopped the append of the last record, which was
**     not acknowledged (an append is acknowledged once a sync after it has
**     returned).  Nothing intact of the epoch follows it; what follows is
**     zeros, the torn record's own bytes, or records of a former epoch.
**   - damage: a record that fails its check with intact records of the
**     epoch after it, found by resynchronising on the records' magic (an
**     intact record is whole, matches its check and carries the epoch and a
**     later sequence number), or a record that matches its check but does
**     not parse.  Replaying past it is impossible (its writes are lost) and
**     stopping there silently would drop the acknowledged writes after it.
** The search for intact records stops at the first intact record of a
** former epoch: records are appended end to end from the start of the
** records, so one of this epoch lies beyond an old one only when the
** machine stopped before a sync (the old one's place was written but never
** reached the disk), and then none of those records was acknowledged.  It
** never feeds replay: it only counts what damage would lose. */

enum { J_DB_REVISIONS = 1, J_DB_EVENTS = 4 };   /* database numbers (st_dbis order) */

typedef struct j_file {
  int fd;
  uint64_t size;
  uint8_t *rec;          /* the payload of the record read last */
  size_t rec_cap;
  uint8_t *scan;         /* room for the search for the magic */
} j_file;

#define J_SCAN 65536

/* The epoch as read back. */
typedef struct j_read {
  uint8_t *ops;          /* the replayable records' payloads end to end */
  size_t len, cap;
  uint64_t records;      /* how many */
  uint64_t first_rev, first_ev;   /* the first revision and event any intact
                                     record of the epoch adds (0: none) */
  store_journal_loss loss;   /* damage, when loss.damaged */
} j_read;

static void file_free(j_file *f) {
  free(f->rec);
  free(f->scan);
}

static int file_init(store_env *s, j_file *f, int fd) {
  struct stat st;
  memset(f, 0, sizeof *f);
  f->fd = fd;
  if (fstat(fd, &st) != 0) return st_fail(s, STORE_EIO, "reading the journal: %s", strerror(errno));
  f->size = (uint64_t)st.st_size;
  return STORE_OK;
}

/* A record head at off that fits the file: 1 (in h), else 0. */
static int head_at(j_file *f, uint64_t off, uint8_t h[J_REC_HEAD]) {
  if (off > f->size || f->size - off < J_REC_HEAD || read_all(f->fd, h, J_REC_HEAD, off) != 0) return 0;
  return st_get_u32(h) == J_REC_MAGIC && st_get_u32(h + 4) <= f->size - off - J_REC_HEAD;
}

/* The payload of the record whose head h is at off, in f->rec: 1 when it
** matches the check, 0 when not, -1 when out of memory. */
static int body_ok(j_file *f, uint64_t off, const uint8_t h[J_REC_HEAD]) {
  uint32_t plen = st_get_u32(h + 4);
  uint8_t c[8];
  if (plen > f->rec_cap) {
    uint8_t *b = realloc(f->rec, plen);
    if (!b) return -1;
    f->rec = b;
    f->rec_cap = plen;
  }
  if (read_all(f->fd, f->rec, plen, off + J_REC_HEAD) != 0) return 0;
  if (check8(h, 24, f->rec, plen, c) != 0) return -1;
  return memcmp(c, h + 24, 8) == 0;
}

/* The first offset >= from where the records' magic begins: 1 (*at),
** 0 when there is none, -1 when out of memory. */
static int next_magic(j_file *f, uint64_t from, uint64_t *at) {
  static const uint8_t m[4] = { 0x4a, 0x52, 0x45, 0x43 };   /* J_REC_MAGIC */
  if (!f->scan && !(f->scan = malloc(J_SCAN))) return -1;
  while (from < f->size && f->size - from >= 4) {
    size_t n = f->size - from < J_SCAN ? (size_t)(f->size - from) : J_SCAN;
    ssize_t got = pread(f->fd, f->scan, n, (off_t)from);
    if (got < 4) return 0;
    const uint8_t *p = memmem(f->scan, (size_t)got, m, sizeof m);
    if (p) {
      *at = from + (uint64_t)(p - f->scan);
      return 1;
    }
    from += (uint64_t)got - 3;   /* a magic across the boundary is found next time */
  }
  return 0;
}

/* Whether a record's operations parse. */
static int ops_parse(const uint8_t *p, size_t n) {
  while (n) {
    if (n < 10) return 0;
    uint32_t klen = st_get_u32(p + 2), vlen = st_get_u32(p + 6);
    if (p[1] >= ST_NDBS || (p[0] != J_PUT && p[0] != J_DEL) || (size_t)klen + vlen > n - 10) return 0;
    p += 10 + (size_t)klen + vlen;
    n -= 10 + (size_t)klen + vlen;
  }
  return 1;
}

/* Note the revisions and events an intact record of the epoch adds; after
** the damage (tally), count them too. */
static void note(j_read *r, const uint8_t *p, size_t n, int tally) {
  store_journal_loss *l = &r->loss;
  if (tally) l->records++;
  if (!ops_parse(p, n)) return;
  while (n) {
    uint32_t klen = st_get_u32(p + 2), vlen = st_get_u32(p + 6);
    uint64_t key = klen == 8 ? st_get_u64(p + 10) : 0;
    if (p[0] == J_PUT && p[1] == J_DB_REVISIONS && key) {
      if (!r->first_rev || key < r->first_rev) r->first_rev = key;
      if (tally) {
        l->revisions++;
        if (!l->first_rev || key < l->first_rev) l->first_rev = key;
        if (key > l->last_rev) l->last_rev = key;
      }
    }
    if (p[0] == J_PUT && p[1] == J_DB_EVENTS && key) {
      if (!r->first_ev || key < r->first_ev) r->first_ev = key;
      l->events += tally;
    }
    p += 10 + (size_t)klen + vlen;
    n -= 10 + (size_t)klen + vlen;
  }
}

/* The intact records of `epoch` with a sequence number from `seq` on, from
** offset `from` up to the first intact record of another epoch, counted
** into r->loss.  STORE_OK or STORE_ENOMEM. */
static int find_intact(j_file *f, uint64_t epoch, uint64_t from, uint64_t seq, j_read *r) {
  uint64_t at;
  uint8_t h[J_REC_HEAD];
  int m;
  while ((m = next_magic(f, from, &at)) == 1) {
    from = at + 1;
    if (!head_at(f, at, h)) continue;
    uint64_t e = st_get_u64(h + 8), q = st_get_u64(h + 16);
    /* only an old record (it stops the search) or a later one of ours can matter */
    if (!(e == epoch ? q >= seq : e && e < epoch)) continue;
    int ok = body_ok(f, at, h);
    if (ok < 0) return STORE_ENOMEM;
    if (!ok) continue;
    if (e != epoch) break;
    note(r, f->rec, st_get_u32(h + 4), 1);
    seq = q + 1;
    from = at + J_REC_HEAD + st_get_u32(h + 4);
  }
  return m < 0 ? STORE_ENOMEM : STORE_OK;
}

/* Read back the records of `epoch`: those that replay into r->ops; with
** `classify`, also what stops them (r->loss).  STORE_OK or STORE_ENOMEM
** (message set). */
static int read_epoch(store_env *s, j_file *f, uint64_t epoch, int classify, j_read *r) {
  uint64_t off = J_HEAD, seq = 0;
  uint8_t h[J_REC_HEAD];
  int ok = 0;
  memset(r, 0, sizeof *r);
  while (epoch && head_at(f, off, h) && st_get_u64(h + 8) == epoch && st_get_u64(h + 16) == seq) {
    uint32_t plen = st_get_u32(h + 4);
    if ((ok = body_ok(f, off, h)) != 1) break;
    if (!ops_parse(f->rec, plen)) {
      ok = 2;
      break;
    }
    if (r->cap - r->len < (size_t)plen) {
      size_t nc = r->cap ? r->cap : 65536;
      while (nc - r->len < (size_t)plen) nc *= 2;
      uint8_t *b = realloc(r->ops, nc);
      if (!b) {
        ok = -1;
        break;
      }
      r->ops = b;
      r->cap = nc;
    }
    memcpy(r->ops + r->len, f->rec, plen);
    note(r, f->rec, plen, 0);
    r->len += plen;
    off += J_REC_HEAD + plen;
    seq++;
  }
  r->records = seq;
  if (ok < 0) return st_fail(s, STORE_ENOMEM, "out of memory reading the journal back");
  if (!classify || !epoch) return STORE_OK;
  store_journal_loss *l = &r->loss;
  l->epoch = epoch;
  l->seq = seq;
  l->offset = off;
  if (ok == 2) {   /* whole and checked, yet no operations: not a tear */
    l->damaged = 1;
    snprintf(l->why, sizeof l->why, "matches its check but its operations do not parse");
  }
  if (find_intact(f, epoch, off, seq + 1, r) != STORE_OK)
    return st_fail(s, STORE_ENOMEM, "out of memory reading the journal back");
  if (l->records && !l->damaged) {
    l->damaged = 1;
    int head = head_at(f, off, h) && st_get_u64(h + 8) == epoch && st_get_u64(h + 16) == seq;
    snprintf(l->why, sizeof l->why, "%s", head ? "fails its check" : "has a damaged head");
  }
  if (!l->damaged) memset(l, 0, sizeof *l);   /* the end, or a torn tail */
  return STORE_OK;
}

/* A header that does not check: whether the file holds any intact record
** (then the header was damaged: whether the newest epoch's records are
** already in data.mdb cannot be told); those of the newest epoch are
** counted into r->loss, and *top receives that epoch, which the next one
** must pass. */
static int read_headless(store_env *s, j_file *f, j_read *r, uint64_t *top) {
  uint64_t from = J_HEAD, at;
  uint8_t h[J_REC_HEAD];
  int m;
  memset(r, 0, sizeof *r);
  *top = 0;
  while ((m = next_magic(f, from, &at)) == 1) {
    from = at + 1;
    if (!head_at(f, at, h) || !st_get_u64(h + 8)) continue;
    int ok = body_ok(f, at, h);
    if (ok < 0) {
      m = -1;
      break;
    }
    if (!ok) continue;
    uint64_t e = st_get_u64(h + 8);
    if (e > *top) {   /* a newer epoch: the older ones' records are stale */
      memset(r, 0, sizeof *r);
      *top = e;
    }
    if (e == *top) note(r, f->rec, st_get_u32(h + 4), 1);
    from = at + J_REC_HEAD + st_get_u32(h + 4);
  }
  if (m < 0) return st_fail(s, STORE_ENOMEM, "out of memory reading the journal back");
  if (r->loss.records) {
    r->loss.damaged = r->loss.header = 1;
    r->loss.epoch = *top;
    r->loss.offset = 0;
    snprintf(r->loss.why, sizeof r->loss.why, "its header is damaged (both copies)");
  }
  return STORE_OK;
}

/* ---- replay */

typedef struct replay {
  const uint8_t *p;
  size_t n;                       /* the records' operations, end to end */
  struct json_t *loss;            /* accept_loss: the event, else NULL */
  uint64_t event_seq;
} replay;

static int apply_ops(store_env *s, MDB_txn *txn, const uint8_t *p, size_t n) {
  while (n) {
    uint32_t klen = st_get_u32(p + 2), vlen = st_get_u32(p + 6);   /* parsed when read back */
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
  int rc = apply_ops(s, txn, r->p, r->n);
  if (rc == STORE_OK && r->loss) rc = st_events_put(s, txn, &r->loss, NULL, 1, &r->event_seq);
  return rc;
}

/* Commit the epoch's records in fd to data.mdb in full (the journal's own
** handle, in journal mode); their number in *records. */
static int replay_epoch(store_env *s, int fd, uint64_t epoch, size_t *records) {
  j_file f;
  j_read r;
  int rc = file_init(s, &f, fd);
  if (rc == STORE_OK) rc = read_epoch(s, &f, epoch, 0, &r);
  if (rc == STORE_OK) {
    replay rp = { r.ops, r.len, NULL, 0 };
    if (r.len) rc = st_write_direct(s, replay_txn, &rp, 0);   /* a full commit; grows the map as needed */
    *records = (size_t)r.records;
    free(r.ops);
  }
  file_free(&f);
  return rc;
}

/* Whether data.mdb already holds the epoch: a machine that stopped between
** a checkpoint's commit and the next epoch's header leaves it so, and then
** its records are no writes to lose — and replaying only some of them
** would set the keys they touch back.  data.mdb holds either the
** checkpoint before the epoch or the one that ends it, and every record
** adds a revision or an event, which the former lacks. */
static int epoch_in_data(store_env *s, const j_read *r, int *in) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  uint64_t current = 0, last_ev = 0;
  int rc = st_read_begin(s, &txn);
  if (rc != STORE_OK) return rc;
  if ((rc = st_get_current(s, txn, &current)) == STORE_OK) {
    int m = mdb_cursor_open(txn, s->events, &cur);
    if (!m) m = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    if (!m && k.mv_size == 8) last_ev = st_get_u64(k.mv_data);
    else if (m && m != MDB_NOTFOUND) rc = st_mdb(s, m, "reading the events");
    if (cur) mdb_cursor_close(cur);
  }
  mdb_txn_abort(txn);
  *in = (r->first_rev && current >= r->first_rev) || (r->first_ev && last_ev >= r->first_ev);
  return rc;
}

/* The revisions the intact records after the damage reach are lost from
** the one after CURRENT as the replay leaves it (the damaged record's own
** included): first_rev and the count from there. */
static int count_lost(store_env *s, j_read *r) {
  store_journal_loss *l = &r->loss;
  uint64_t cur = 0;
  int found = 0;
  const uint8_t *p = r->ops;
  for (size_t n = r->len; n;) {   /* the last CURRENT the replayed records set */
    uint32_t klen = st_get_u32(p + 2), vlen = st_get_u32(p + 6);
    if (p[0] == J_PUT && p[1] == 0 && klen == 7 && !memcmp(p + 10, "current", 7) && vlen == 8) {
      cur = st_get_u64(p + 17);
      found = 1;
    }
    p += 10 + (size_t)klen + vlen;
    n -= 10 + (size_t)klen + vlen;
  }
  if (!found) {
    MDB_txn *txn;
    int rc = st_read_begin(s, &txn);
    if (rc != STORE_OK) return rc;
    rc = st_get_current(s, txn, &cur);
    mdb_txn_abort(txn);
    if (rc != STORE_OK) return rc;
  }
  if (l->last_rev > cur) {
    l->first_rev = cur + 1;
    l->revisions = l->last_rev - cur;
  } else {
    l->first_rev = l->last_rev = l->revisions = 0;
  }
  return STORE_OK;
}

/* What the intact records after the damage hold, in words. */
static void loss_words(const store_journal_loss *l, char *buf, size_t n) {
  char revs[64] = "";
  if (l->revisions == 1) snprintf(revs, sizeof revs, "revision %llu and ", (unsigned long long)l->first_rev);
  else if (l->revisions)
    snprintf(revs, sizeof revs, "revisions %llu to %llu and ", (unsigned long long)l->first_rev,
             (unsigned long long)l->last_rev);
  snprintf(buf, n, "%s%llu event%s", revs, (unsigned long long)l->events, l->events == 1 ? "" : "s");
}

/* The message of a damaged journal. */
static int loss_message(store_env *s, const store_journal_loss *l) {
  char what[160];
  loss_words(l, what, sizeof what);
  if (l->header)
    return st_fail(s, STORE_EJOURNAL, "the journal is damaged: %s, so whether its %llu intact record%s of "
                   "epoch %llu (%s) are already in data.mdb cannot be told; nothing was replayed or changed",
                   l->why, (unsigned long long)l->records, l->records == 1 ? "" : "s",
                   (unsigned long long)l->epoch, what);
  if (!l->records)
    return st_fail(s, STORE_EJOURNAL, "the journal is damaged: record %llu of epoch %llu, at byte %llu "
                   "of %s/journal, %s; nothing was replayed or changed", (unsigned long long)l->seq,
                   (unsigned long long)l->epoch, (unsigned long long)l->offset, s->path, l->why);
  return st_fail(s, STORE_EJOURNAL, "the journal is damaged: record %llu of epoch %llu, at byte %llu of "
                 "%s/journal, %s, and %llu intact record%s after it hold acknowledged writes that replay "
                 "cannot reach: %s would be lost; nothing was replayed or changed",
                 (unsigned long long)l->seq, (unsigned long long)l->epoch, (unsigned long long)l->offset,
                 s->path, l->why, (unsigned long long)l->records, l->records == 1 ? "" : "s", what);
}

/* The "journal-loss" event of what accept_loss drops. */
static struct json_t *loss_event(const store_journal_loss *l) {
  json_t *o = json_pack("{s:s, s:b, s:I, s:I, s:I, s:s, s:I, s:I, s:I}", "event",
                        store_event_name(STORE_EV_JOURNAL_LOSS), "header", l->header, "epoch",
                        (json_int_t)l->epoch, "record", (json_int_t)l->seq, "offset", (json_int_t)l->offset,
                        "damage", l->why, "records", (json_int_t)l->records, "revisions",
                        (json_int_t)l->revisions, "events", (json_int_t)l->events);
  if (o && l->revisions) {
    json_object_set_new(o, "first_revision", json_integer((json_int_t)l->first_rev));
    json_object_set_new(o, "last_revision", json_integer((json_int_t)l->last_rev));
  }
  return o;
}

int st_journal_recover(store_env *s, const store_options *o) {
  int fd, r = open_file(s, 0, &fd);
  store_journal_loss *out = o ? o->loss : NULL;
  if (r == STORE_ENOENT) return STORE_OK;
  if (r != STORE_OK) return r;
  j_file f;
  j_read rd = {0};
  uint64_t epoch, top = 0;
  json_t *ev = NULL;
  if ((r = file_init(s, &f, fd)) != STORE_OK) goto out;
  if (read_header(fd, &epoch) != J_HDR_OK) {
    r = read_headless(s, &f, &rd, &top);
    epoch = top;   /* with accept_loss: the next epoch passes every one in the file */
  } else {
    r = read_epoch(s, &f, epoch, 1, &rd);
  }
  int in = 0;
  if (r == STORE_OK && !rd.loss.header && (rd.records || rd.loss.damaged) &&
      (r = epoch_in_data(s, &rd, &in)) == STORE_OK && in) {
    rd.len = 0;   /* nothing to replay, nothing lost: the records are stale */
    memset(&rd.loss, 0, sizeof rd.loss);
  }
  if (r == STORE_OK && rd.loss.damaged && !rd.loss.header) r = count_lost(s, &rd);
  if (r != STORE_OK) goto out;
  if (out) *out = rd.loss;
  if (rd.loss.damaged && !(o && o->accept_loss)) {
    r = loss_message(s, &rd.loss);
    goto out;
  }
  if (rd.loss.damaged) {
    if (!(ev = loss_event(&rd.loss)) || (r = st_events_check(s, &ev, 1)) != STORE_OK) {
      if (!ev) r = st_fail(s, STORE_ENOMEM, "out of memory recording the journal's loss");
      goto out;
    }
  }
  if (rd.len || ev) {
    replay rp = { rd.ops, rd.len, ev, 0 };
    if ((r = st_write_direct(s, replay_txn, &rp, 0)) != STORE_OK) goto out;   /* a full commit */
    if (out) out->event_seq = rp.event_seq;
  }
  if (rd.records || rd.loss.damaged || in) {   /* the records are in data.mdb, or dropped: a new epoch makes them stale */
    s->j.fd = fd;
    r = write_header(s, epoch + 1);
    s->j.fd = -1;
  }
out:
  json_decref(ev);
  free(rd.ops);
  file_free(&f);
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

/* 0 when the journal holds nothing to replay (none, or the first record's
** place holds zeros or an intact record of an older epoch), else a value
** that changes when the writer checkpoints (the header's epoch; UINT64_MAX
** when the header is damaged: the writable open reports it).  Anything
** else at the first record's place — a record of the epoch, a torn or a
** damaged one — is for the writable open to sort out. */
static uint64_t records_pending(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/journal", dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  uint64_t epoch;
  j_header hd = read_header(fd, &epoch);
  uint8_t h[J_REC_HEAD] = {0}, zero[J_REC_HEAD] = {0};
  ssize_t got = pread(fd, h, sizeof h, J_HEAD);
  int blank = got <= 0 || !memcmp(h, zero, sizeof h), stale = 0;
  if (hd == J_HDR_OK && !blank && st_get_u64(h + 8) < epoch) {
    j_file f;
    struct stat st;
    memset(&f, 0, sizeof f);
    f.fd = fd;
    f.size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    stale = head_at(&f, J_HEAD, h) && st_get_u64(h + 8) < epoch && body_ok(&f, J_HEAD, h) == 1;
    file_free(&f);
  }
  close(fd);
  if (hd != J_HDR_OK) return blank ? 0 : UINT64_MAX;
  return blank || stale ? 0 : epoch;
}

/* Replay through a writable open: STORE_OK (done), STORE_EBUSY (a writer
** holds the store), or STORE_EJOURNAL with the message in s. */
static int replay_here(store_env *s, store_journal_loss *loss) {
  store_env *w;
  store_options o = {0};
  o.loss = loss;
  char err[ST_MSG_MAX];
  int r = store_open_with(s->path, STORE_NOCREATE, &o, &w, err, sizeof err);   /* replays them */
  if (r == STORE_OK) store_close(w);
  if (r == STORE_EJOURNAL) snprintf(s->msg, sizeof s->msg, "%s", err);   /* damage is reported, never read past */
  return r == STORE_EBUSY || r == STORE_EJOURNAL ? r : STORE_OK;   /* else the reader reports what it finds */
}

int st_journal_settle(store_env *s, store_journal_loss *loss) {
  uint64_t epoch = records_pending(s->path);
  if (!epoch) return STORE_OK;
  int r = replay_here(s, loss);
  /* a writer holds the store: wait for its checkpoint, or for it to let go
  ** (another reader replaying, or refusing a damaged journal) */
  for (int waited = 0; r == STORE_EBUSY && waited < J_READER_WAIT_MS; waited += 2) {
    usleep(2000);
    if (records_pending(s->path) != epoch) return STORE_OK;
    if (waited % 50 == 48) r = replay_here(s, loss);
  }
  return r == STORE_EJOURNAL ? r : STORE_OK;
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
  uint64_t epoch;
  (void)read_header(fd, &epoch);   /* replayed at open: its records are stale */
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
  st_datafile_extend(s);
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
