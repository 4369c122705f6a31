/* st_env.c — the store handle: opening and closing, error messages, the
** write-transaction runner that grows the map, and small shared helpers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "st_int.h"

/* The largest map we ever ask for: beyond this a full map is reported. */
#define ST_MAPSIZE_CAP ((size_t)1 << 40)

static const char *const err_names[] = {
  "success", "no such store, revision or entry", "store is in use",
  "store is corrupt", "unsupported store format version",
  "stale parent revision", "permission denied", "input/output error",
  "out of memory", "invalid argument", "the journal is damaged before writes it holds",
  "the record is not in the state the caller expected"
};

const char *store_strerror(int err) {
  if (err < 0 || err >= (int)(sizeof err_names / sizeof err_names[0]))
    return "unknown error";
  return err_names[err];
}

int st_fail(store_env *s, int code, const char *fmt, ...) {
  va_list ap;
  int n = snprintf(s->msg, sizeof s->msg, "store %s: ", s->path);
  if (n < 0 || (size_t)n >= sizeof s->msg) return code;
  va_start(ap, fmt);
  vsnprintf(s->msg + n, sizeof s->msg - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

int st_code(int rc) {
  switch (rc) {
  case 0: return STORE_OK;
  case MDB_NOTFOUND: return STORE_ENOENT;
  case MDB_MAP_FULL: return ST_MAPFULL;
  case MDB_CORRUPTED: case MDB_PAGE_NOTFOUND: case MDB_INVALID:
  case MDB_VERSION_MISMATCH: case MDB_INCOMPATIBLE: case MDB_BAD_VALSIZE:
    return STORE_ECORRUPT;
  case ENOMEM: return STORE_ENOMEM;
  case EACCES: case EPERM: case EROFS: return STORE_EPERM;
  case ENOENT: return STORE_ENOENT;
  case EINVAL: return STORE_EINVAL;
  case EAGAIN: case EBUSY: return STORE_EBUSY;
  default: return STORE_EIO;
  }
}

/* LMDB reports a write that the file system cut short as EIO: a full file
** system is told apart by its free space (less than 1 MiB left, counting
** the blocks kept for root when running as root). */
static int disk_full(store_env *s, int rc) {
  if (rc == ENOSPC || rc == EDQUOT) return 1;
  struct statvfs v;
  if (rc != EIO || statvfs(s->path, &v) != 0) return 0;
  unsigned long long blocks = geteuid() == 0 ? v.f_bfree : v.f_bavail;
  return blocks * (unsigned long long)v.f_frsize < (1ull << 20);
}

int st_mdb(store_env *s, int rc, const char *what) {
  int code = st_code(rc);
  s->txn_full = rc == MDB_TXN_FULL;
  s->no_room = 0;
  if (code == ST_MAPFULL) return code;
  if ((s->no_room = disk_full(s, rc)))
    return st_fail(s, STORE_EIO, "%s: no space left on device: the file system holding the store is full; "
                   "nothing was written; free some space there, then retry", what);
  return st_fail(s, code, "%s: %s", what, mdb_strerror(rc));
}

int64_t st_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void st_hook(store_env *s, store_point at) {
  if (s->hook) s->hook(s->hook_arg, at);
}

int st_put(store_env *s, MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen,
           const void *v, size_t vlen, unsigned flags, const char *what) {
  MDB_val key = { klen, (void *)k }, val = { vlen, (void *)v };
  int rc = mdb_put(txn, dbi, &key, &val, flags);
  if (rc == MDB_KEYEXIST && (flags & MDB_NOOVERWRITE)) return STORE_OK;
  if (rc) return st_mdb(s, rc, what);
  if (s->j.capture) st_journal_op(s, 0, dbi, k, klen, v, vlen);
  return STORE_OK;
}

int st_del(store_env *s, MDB_txn *txn, MDB_dbi dbi, const void *k, size_t klen, const char *what) {
  MDB_val key = { klen, (void *)k };
  int rc = mdb_del(txn, dbi, &key, NULL);
  if (rc == MDB_NOTFOUND) return STORE_OK;
  if (rc) return st_mdb(s, rc, what);
  if (s->j.capture) st_journal_op(s, 1, dbi, k, klen, NULL, 0);
  return STORE_OK;
}

int st_cursor_del(store_env *s, MDB_cursor *cur, MDB_dbi dbi, const void *k, size_t klen, const char *what) {
  int rc = mdb_cursor_del(cur, 0);
  if (rc) return st_mdb(s, rc, what);
  if (s->j.capture) st_journal_op(s, 1, dbi, k, klen, NULL, 0);
  return STORE_OK;
}

int st_get_current(store_env *s, MDB_txn *txn, uint64_t *rev) {
  MDB_val k = { 7, "current" }, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size != 8))
    return st_fail(s, STORE_ECORRUPT, "the CURRENT record is missing or malformed");
  if (rc) return st_mdb(s, rc, "reading CURRENT");
  *rev = st_get_u64(v.mv_data);
  return STORE_OK;
}

int st_grow(store_env *s) {
  MDB_envinfo info;
  size_t next;
  int rc;
  if ((rc = mdb_env_info(s->env, &info)) != 0)
    return st_mdb(s, rc, "reading the map size");
  next = info.me_mapsize * 2;
  if (next <= info.me_mapsize || next > ST_MAPSIZE_CAP)
    return st_fail(s, STORE_EIO, "the map is full at %zu bytes and cannot grow",
                   info.me_mapsize);
  if ((rc = mdb_env_set_mapsize(s->env, next)) != 0)
    return st_fail(s, st_code(rc) == ST_MAPFULL ? STORE_EIO : st_code(rc),
                   "growing the map to %zu bytes: %s", next, mdb_strerror(rc));
  return STORE_OK;
}

int store_make_room(store_env *s) {
  s->msg[0] = '\0';
  if (s->lockfd < 0 || s->j.txn) return STORE_OK;
  MDB_envinfo info;
  MDB_stat st;
  int rc;
  if ((rc = mdb_env_info(s->env, &info)) != 0 || (rc = mdb_env_stat(s->env, &st)) != 0)
    return st_mdb(s, rc, "reading the map size");
  if ((info.me_last_pgno + 1) * (size_t)st.ms_psize <= info.me_mapsize / 2) return STORE_OK;
  return st_grow(s);
}

int st_read_begin(store_env *s, MDB_txn **txn) {
  if (s->j.txn) {
    if (!pthread_equal(s->j.owner, pthread_self()))
      return st_fail(s, STORE_EPERM, "journaled writes are pending on another thread; checkpoint there first");
    int rc = mdb_txn_begin(s->env, s->j.txn, 0, txn);
    return rc ? st_mdb(s, rc, "beginning a nested transaction") : STORE_OK;
  }
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
  if (rc == MDB_MAP_RESIZED) {  /* another process grew it: adopt its size */
    if ((rc = mdb_env_set_mapsize(s->env, 0)) == 0)
      rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
  }
  return rc ? st_mdb(s, rc, "beginning a read transaction") : STORE_OK;
}

int st_write(store_env *s, st_txn_fn fn, void *arg, int flags) {
  if (s->lockfd < 0)
    return st_fail(s, STORE_EPERM, "the store was opened read-only");
  if (s->j.fd >= 0) {
    if (flags & ST_W_SYNC_LATER) return st_journal_write(s, fn, arg, flags);
    int r = store_checkpoint(s);   /* a full commit comes after the journaled ones */
    if (r != STORE_OK) return r;
  }
  return st_write_direct(s, fn, arg, flags);
}

/* LMDB never writes the overflow pages a transaction allocates and frees
** again before its commit (a record of several pages written twice in one
** transaction: common in the journal's long one), yet counts them in the
** last page number its meta page records; when they lie past the end of
** data.mdb, the file is left shorter than that, and the next open would
** take it for a truncated one (st_check_datafile).  Those pages are free,
** so the file is extended to cover them (zeros, sparse), right after the
** commit.  A crash between the commit and this leaves the short file. */
void st_datafile_extend(store_env *s) {
  MDB_envinfo info;
  MDB_stat st;
  struct stat fs;
  if (s->datafd < 0 || mdb_env_info(s->env, &info) != 0 || mdb_env_stat(s->env, &st) != 0 ||
      fstat(s->datafd, &fs) != 0)
    return;
  off_t need = (off_t)(info.me_last_pgno + 1) * (off_t)st.ms_psize;
  if (fs.st_size < need && ftruncate(s->datafd, need) == 0) (void)fdatasync(s->datafd);
}

int st_write_direct(store_env *s, st_txn_fn fn, void *arg, int flags) {
  for (;;) {
    MDB_txn *txn;
    int r, rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc == MDB_MAP_RESIZED && (rc = mdb_env_set_mapsize(s->env, 0)) == 0)
      rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc) return st_mdb(s, rc, "beginning a write transaction");
    r = fn(s, txn, arg);
    if (r == STORE_OK) {
      if (flags & ST_W_HOOKS) st_hook(s, STORE_AT_BEFORE_COMMIT);
      /* MDB_NOMETASYNC for this commit only: every other commit of this
      ** process syncs in full (the flag is the environment's, and only
      ** this thread writes) */
      if (flags & ST_W_SYNC_LATER) mdb_env_set_flags(s->env, MDB_NOMETASYNC, 1);
      rc = mdb_txn_commit(txn);   /* frees txn whatever the outcome */
      if (flags & ST_W_SYNC_LATER) mdb_env_set_flags(s->env, MDB_NOMETASYNC, 0);
      if (rc == 0) {
        st_datafile_extend(s);
        if (flags & ST_W_HOOKS) st_hook(s, STORE_AT_AFTER_COMMIT);
        return STORE_OK;
      }
      r = st_mdb(s, rc, "committing");
    } else {
      mdb_txn_abort(txn);
      if (r == ST_NOCHANGE) return STORE_OK;
    }
    if (r != ST_MAPFULL) return r;
    if ((r = st_grow(s)) != STORE_OK) return r;
  }
}

int store_sync(store_env *s, char *err, size_t errlen) {
  if (s->datafd < 0) {
    if (err && errlen) snprintf(err, errlen, "store %s: the store was opened read-only", s->path);
    return STORE_EPERM;
  }
  st_hook(s, STORE_AT_BEFORE_SYNC);
  if (s->j.fd >= 0 ? st_journal_sync(s) != 0 : fdatasync(s->datafd) != 0) {
    if (err && errlen)
      snprintf(err, errlen, "store %s: syncing %s: %s", s->path, s->j.fd >= 0 ? "the journal" : "data.mdb",
               strerror(errno));
    return STORE_EIO;
  }
  st_hook(s, STORE_AT_AFTER_SYNC);
  return STORE_OK;
}

/* ---- opening */

/* Open the databases and read the format version into *format (checked by
** st_format_check once the journal's records are in). */
static int open_dbis(store_env *s, uint32_t *format_out) {
  MDB_dbi *dbis[] = { &s->meta, &s->revs, &s->entries, &s->names, &s->events };
  MDB_txn *txn = NULL;
  MDB_val k, v;
  uint32_t format;
  uint64_t cur;
  int rc, r = st_read_begin(s, &txn);
  if (r != STORE_OK) return r;
  for (size_t i = 0; i < ST_NDBS_V2; i++) {
    rc = mdb_dbi_open(txn, st_db_names[i], 0, dbis[i]);
    if (rc == MDB_NOTFOUND) {
      r = st_fail(s, STORE_ECORRUPT, "the '%s' database is missing", st_db_names[i]);
      goto done;
    }
    if (rc) { r = st_mdb(s, rc, "opening the databases"); goto done; }
  }
  k.mv_data = "format"; k.mv_size = 6;
  rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size != 4)) {
    r = st_fail(s, STORE_ECORRUPT, "the format version record is missing or malformed");
    goto done;
  }
  if (rc) { r = st_mdb(s, rc, "reading the format version"); goto done; }
  format = st_get_u32(v.mv_data);
  if (format < ST_FORMAT_OLDEST || format > STORE_FORMAT_VERSION) {
    r = st_format_check(s, format);
    goto done;
  }
  k.mv_data = "id"; k.mv_size = 2;
  rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND || (rc == 0 && v.mv_size != 16)) {
    r = st_fail(s, STORE_ECORRUPT, "the store id record is missing or malformed");
    goto done;
  }
  if (rc) { r = st_mdb(s, rc, "reading the store id"); goto done; }
  if ((r = st_get_current(s, txn, &cur)) != STORE_OK) goto done;
  /* format 3's indices; an older store gets them when opened for writing */
  if (format >= 3 && (r = st_open_index_dbs(s, txn, 0)) != STORE_OK) goto done;
  /* format 4's records of repair, likewise */
  if (format >= 4 && (r = st_open_repair_dbs(s, txn, 0)) != STORE_OK) goto done;
  /* Committing a read-only transaction keeps its database handles open. */
  rc = mdb_txn_commit(txn);
  txn = NULL;
  if (rc) r = st_mdb(s, rc, "opening the databases");
  *format_out = format;
done:
  if (txn) mdb_txn_abort(txn);
  return r;
}

int store_open(const char *dir, unsigned flags, store_env **out,
               char *errbuf, size_t errlen) {
  return store_open_with(dir, flags, NULL, out, errbuf, errlen);
}

int store_open_with(const char *dir, unsigned flags, const store_options *opts,
                    store_env **out, char *errbuf, size_t errlen) {
  store_env *s = NULL;
  size_t mapsize = opts && opts->mapsize ? opts->mapsize : ST_DEFAULT_MAPSIZE;
  size_t hdr_mapsize = 0;
  char lockmdb[4200];
  struct stat st;
  int lock_mdb_new, dead, rc, r;
  if (out) *out = NULL;
  if (errbuf && errlen) errbuf[0] = '\0';
  if (!out || !dir || !*dir || strlen(dir) >= sizeof s->path - 32 ||
      (flags & ~(STORE_RDONLY | STORE_NOCREATE))) {
    if (errbuf && errlen)
      snprintf(errbuf, errlen, "store %s: invalid arguments to store_open",
               dir ? dir : "(null)");
    return STORE_EINVAL;
  }
  if (!(s = calloc(1, sizeof *s))) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "store %s: out of memory", dir);
    return STORE_ENOMEM;
  }
  s->lockfd = -1;
  s->datafd = -1;
  s->j.fd = -1;
  s->flags = flags;
  if (opts) { s->hook = opts->hook; s->hook_arg = opts->hook_arg; }
  strcpy(s->path, dir);
  if (st_fix_std_fds() != 0) {
    r = st_fail(s, STORE_EIO, "cannot open /dev/null for closed descriptors 0-2: %s",
                strerror(errno));
    goto fail;
  }
  if (stat(dir, &st) != 0) {
    if (errno != ENOENT) {
      r = st_fail(s, st_code(errno), "cannot reach the directory: %s", strerror(errno));
      goto fail;
    }
    if (flags & (STORE_RDONLY | STORE_NOCREATE)) {
      r = st_fail(s, STORE_ENOENT, "no store here (the directory does not exist)");
      goto fail;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
      r = st_fail(s, st_code(errno), "cannot create the directory: %s", strerror(errno));
      goto fail;
    }
    if (chmod(dir, 0700) != 0 || stat(dir, &st) != 0) {
      r = st_fail(s, st_code(errno), "cannot set up the directory: %s", strerror(errno));
      goto fail;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    r = st_fail(s, STORE_EINVAL, "not a directory");
    goto fail;
  }
  /* Another user who can write the directory can replace the kernel's
  ** socket or the store's files under it: refuse, naming the fix. */
  if (st.st_uid != geteuid()) {
    r = st_fail(s, STORE_EPERM, "the directory belongs to another user (uid %u); a store must be its owner's",
                (unsigned)st.st_uid);
    goto fail;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    r = st_fail(s, STORE_EPERM, "the directory is writable by %s (mode %03o); run: chmod go-w %s",
                (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 0777), dir);
    goto fail;
  }
  if (!(flags & STORE_RDONLY) && (r = st_lock(s)) != STORE_OK) goto fail;
  if (opts && opts->loss) memset(opts->loss, 0, sizeof *opts->loss);
  /* what a journal made durable, in data.mdb */
  if ((flags & STORE_RDONLY) && (r = st_journal_settle(s, opts ? opts->loss : NULL)) != STORE_OK) goto fail;
  r = st_check_datafile(s, &hdr_mapsize);
  if (r == STORE_ENOENT) {
    if (flags & (STORE_RDONLY | STORE_NOCREATE)) {
      r = st_fail(s, STORE_ENOENT, "no store here (data.mdb does not exist)");
      goto fail;
    }
    if ((r = st_create(s, mapsize)) != STORE_OK) goto fail;
    r = st_check_datafile(s, &hdr_mapsize);
  }
  if (r != STORE_OK) goto fail;
  if (hdr_mapsize > mapsize) mapsize = hdr_mapsize;

  snprintf(lockmdb, sizeof lockmdb, "%s/lock.mdb", dir);
  lock_mdb_new = stat(lockmdb, &st) != 0;
  if ((rc = mdb_env_create(&s->env)) != 0) {
    r = st_mdb(s, rc, "creating the LMDB environment");
    goto fail;
  }
  if ((rc = mdb_env_set_maxdbs(s->env, ST_NDBS)) != 0 ||
      (rc = mdb_env_set_mapsize(s->env, mapsize)) != 0) {
    r = st_mdb(s, rc, "configuring the LMDB environment");
    goto fail;
  }
  /* Full sync, no MDB_WRITEMAP: a commit is durable when it returns and a
  ** stray pointer write cannot reach the file. */
  rc = mdb_env_open(s->env, dir, (flags & STORE_RDONLY) ? MDB_RDONLY : 0, 0600);
  if (rc) {
    r = st_mdb(s, rc, "opening the LMDB environment");
    goto fail;
  }
  if (lock_mdb_new && !(flags & STORE_RDONLY)) (void)chmod(lockmdb, 0600);
  /* LMDB opens the data file without close-on-exec: a process the kernel
  ** starts (its worker) must not inherit write access to the store */
  mdb_filehandle_t dfd;
  if (mdb_env_get_fd(s->env, &dfd) == 0) {
    (void)fcntl(dfd, F_SETFD, fcntl(dfd, F_GETFD) | FD_CLOEXEC);
    if (!(flags & STORE_RDONLY)) s->datafd = dfd;
  }
  if ((rc = mdb_reader_check(s->env, &dead)) != 0) {
    r = st_mdb(s, rc, "clearing stale readers");
    goto fail;
  }
  uint32_t format = 0;
  if ((r = open_dbis(s, &format)) != STORE_OK) goto fail;
  /* the writes a journal made durable after the last checkpoint */
  if (!(flags & STORE_RDONLY) && (r = st_journal_recover(s, opts)) != STORE_OK) goto fail;
  /* an older format: upgraded when writable, once every event is in */
  if ((r = st_format_check(s, format)) != STORE_OK) goto fail;
  s->msg[0] = '\0';
  *out = s;
  return STORE_OK;
fail:
  if (errbuf && errlen) snprintf(errbuf, errlen, "%s", s->msg);
  store_close(s);
  return r;
}

void store_close(store_env *s) {
  if (!s) return;
  st_journal_close(s);
  if (s->env) mdb_env_close(s->env);
  st_unlock(s);
  free(s);
}

const char *store_errmsg(const store_env *s) { return s ? s->msg : ""; }
const char *store_path(const store_env *s) { return s ? s->path : ""; }
void store_free(void *p) { free(p); }

int store_current(store_env *s, uint64_t *rev) {
  MDB_txn *txn;
  int r;
  s->msg[0] = '\0';
  if (!rev) return st_fail(s, STORE_EINVAL, "store_current: rev is NULL");
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  r = st_get_current(s, txn, rev);
  mdb_txn_abort(txn);
  return r;
}

int store_stats(store_env *s, store_stat *st) {
  MDB_txn *txn;
  MDB_stat ms;
  MDB_envinfo info;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  MDB_dbi dbis[ST_NDBS];
  uint64_t *counts[ST_NDBS] = { NULL, &st->revisions, &st->entries, &st->names, &st->events,
                                &st->open_attempts, &st->keys, NULL, &st->counters,
                                &st->repair_rules, &st->incidents, &st->open_incidents, NULL };
  int rc, r;
  s->msg[0] = '\0';
  memset(st, 0, sizeof *st);
  st_dbis(s, dbis);
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((r = st_get_current(s, txn, &st->current)) != STORE_OK) goto done;
  st->format = STORE_FORMAT_VERSION;
  k.mv_data = "id"; k.mv_size = 2;
  if ((rc = mdb_get(txn, s->meta, &k, &v)) != 0 || v.mv_size != 16) {
    r = rc ? st_mdb(s, rc, "reading the store id")
           : st_fail(s, STORE_ECORRUPT, "the store id is malformed");
    goto done;
  }
  memcpy(st->id, v.mv_data, 16);
  for (int dbi = 0; dbi < 2; dbi++) {  /* FREE_DBI 0 and MAIN_DBI 1 */
    if ((rc = mdb_stat(txn, (MDB_dbi)dbi, &ms)) != 0) {
      r = st_mdb(s, rc, "reading statistics");
      goto done;
    }
    if (dbi == 1) st->pages_used += ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    st->page_size = ms.ms_psize;
  }
  for (int i = 0; i < (s->repairs ? ST_NDBS : s->indexed ? ST_NDBS_V3 : ST_NDBS_V2); i++) {
    if ((rc = mdb_stat(txn, dbis[i], &ms)) != 0) {
      r = st_mdb(s, rc, "reading statistics");
      goto done;
    }
    st->pages_used += ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    if (counts[i]) *counts[i] = ms.ms_entries;
  }
  if ((rc = mdb_cursor_open(txn, s->events, &cur)) != 0) {
    r = st_mdb(s, rc, "reading events");
    goto done;
  }
  rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  if (rc == 0 && k.mv_size == 8) st->last_event = st_get_u64(k.mv_data);
  else if (rc && rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading events"); goto done; }
  rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  if (rc == 0 && k.mv_size == 8) st->first_event = st_get_u64(k.mv_data);
  else if (rc && rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading events"); goto done; }
  if ((rc = mdb_env_info(s->env, &info)) != 0) {
    r = st_mdb(s, rc, "reading the environment");
    goto done;
  }
  st->mapsize = info.me_mapsize;
  st->file_pages = (uint64_t)info.me_last_pgno + 1;
done:
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}
