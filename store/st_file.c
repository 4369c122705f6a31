/* st_file.c — the store's files on disk, outside LMDB's own handling:
** descriptors 0-2, the write lock DIR/lock, the data-file header check that
** runs before LMDB maps the file, and the atomic creation of a new store. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "st_int.h"

int st_fix_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    /* open returns the lowest free descriptor: this one. */
    int nfd = open("/dev/null", O_RDWR);
    if (nfd < 0) return -1;
    if (nfd != fd) { close(nfd); errno = EBADF; return -1; }
  }
  return 0;
}

/* ---- the write lock: an exclusive flock on DIR/lock, which holds the pid */

int st_lock(store_env *s) {
  char path[4200], buf[32];
  int fd, r = STORE_OK;
  snprintf(path, sizeof path, "%s/lock", s->path);
  fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return st_fail(s, st_code(errno), "cannot open the lock file %s: %s", path,
                   strerror(errno));
  if (fchmod(fd, 0600) != 0) { /* not ours to change: keep its mode */ }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
      long pid = 0;
      buf[n > 0 ? n : 0] = '\0';
      pid = strtol(buf, NULL, 10);
      if (pid > 0)
        r = st_fail(s, STORE_EBUSY, "in use by process %ld (it holds %s); "
                    "only one process may write to a store", pid, path);
      else
        r = st_fail(s, STORE_EBUSY, "in use by another process (it holds %s)", path);
    } else {
      r = st_fail(s, STORE_EIO, "cannot lock %s: %s", path, strerror(errno));
    }
    close(fd);
    return r;
  }
  int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
    r = st_fail(s, STORE_EIO, "cannot write the lock file %s: %s", path, strerror(errno));
    close(fd);
    return r;
  }
  s->lockfd = fd;
  return STORE_OK;
}

void st_unlock(store_env *s) {
  if (s->lockfd >= 0) {
    /* Leave the file; an empty pid says nobody holds it. */
    if (ftruncate(s->lockfd, 0) != 0) { /* harmless */ }
    close(s->lockfd);
    s->lockfd = -1;
  }
}

/* ---- the data-file header
**
** LMDB (data format version 1, 64-bit build) begins data.mdb with two meta
** pages.  Each page starts with a 16-byte page header; the meta record
** follows it:
**   +0  u32 magic 0xBEEFC0DE   +4  u32 version (1)   +8  address
**   +16 map size               +24 two 48-byte tree records, the first of
**   which starts with the page size (u32)             +120 last page number
**   +128 transaction id
** LMDB reads pages up to the newest meta's last page number through the
** memory map; if the file is shorter, that read raises SIGBUS.  So the file
** size is checked here first. */

#define META_OFF 16
#define META_LEN 136

typedef struct meta_rec { uint32_t magic, version, psize; uint64_t mapsize, last_pg, txnid; } meta_rec;

static void meta_read(const uint8_t *p, meta_rec *m) {
  memcpy(&m->magic, p, 4);
  memcpy(&m->version, p + 4, 4);
  memcpy(&m->mapsize, p + 16, 8);
  memcpy(&m->psize, p + 24, 4);
  memcpy(&m->last_pg, p + 120, 8);
  memcpy(&m->txnid, p + 128, 8);
}

int st_check_datafile(store_env *s, size_t *mapsize) {
  char path[4200];
  uint8_t buf[META_LEN];
  meta_rec m[2];
  struct stat st;
  int fd, r = STORE_OK;
  uint64_t last;
  snprintf(path, sizeof path, "%s/data.mdb", s->path);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return STORE_ENOENT;
    return st_fail(s, st_code(errno), "cannot open %s: %s", path, strerror(errno));
  }
  if (sizeof(size_t) != 8) goto done;  /* the layout below is the 64-bit one */
  if (fstat(fd, &st) != 0) {
    r = st_fail(s, STORE_EIO, "cannot stat %s: %s", path, strerror(errno));
    goto done;
  }
  if (st.st_size < META_OFF + META_LEN ||
      pread(fd, buf, META_LEN, META_OFF) != META_LEN) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb is truncated (%lld bytes, shorter than "
                "its header)", (long long)st.st_size);
    goto done;
  }
  meta_read(buf, &m[0]);
  if (m[0].magic != 0xBEEFC0DEu) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb is not an LMDB data file (bad magic number)");
    goto done;
  }
  if (m[0].version != 1) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb has LMDB data version %u; this build reads 1",
                m[0].version);
    goto done;
  }
  if (m[0].psize < 512 || m[0].psize > 65536 || (m[0].psize & (m[0].psize - 1))) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb has an invalid page size %u", m[0].psize);
    goto done;
  }
  if (st.st_size < (off_t)m[0].psize + META_OFF + META_LEN ||
      pread(fd, buf, META_LEN, (off_t)m[0].psize + META_OFF) != META_LEN) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb is truncated (%lld bytes, shorter than "
                "its two meta pages)", (long long)st.st_size);
    goto done;
  }
  meta_read(buf, &m[1]);
  if (m[1].magic != 0xBEEFC0DEu || m[1].version != 1) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb: the second meta page is damaged");
    goto done;
  }
  last = m[0].last_pg > m[1].last_pg ? m[0].last_pg : m[1].last_pg;
  /* A writer beside a read-only open writes its pages before the meta page
     that names them: the size taken after reading the metas covers them
     (the one taken before may not: a false "truncated"). */
  if (fstat(fd, &st) != 0) {
    r = st_fail(s, STORE_EIO, "cannot stat %s: %s", path, strerror(errno));
    goto done;
  }
  if (last > (uint64_t)INT64_MAX / m[0].psize - 1 ||
      (uint64_t)st.st_size < (last + 1) * m[0].psize) {
    r = st_fail(s, STORE_ECORRUPT, "data.mdb is truncated: %lld bytes, but its pages "
                "reach %llu bytes", (long long)st.st_size,
                (unsigned long long)((last + 1) * m[0].psize));
    goto done;
  }
  *mapsize = (size_t)(m[0].txnid > m[1].txnid ? m[0].mapsize : m[1].mapsize);
done:
  close(fd);
  return r;
}

/* ---- creating a store
**
** The new environment is built as DIR/data.mdb.new (LMDB's MDB_NOSUBDIR
** mode), initialised and committed, then renamed to DIR/data.mdb.  So a
** data.mdb that exists is always a complete store, and a short or empty one
** is damage, never a store that was being created. */

static int init_txn(store_env *s, MDB_env *env) {
  MDB_txn *txn = NULL;
  MDB_dbi dbi, meta = 0;
  uint8_t fmt[4], cur[8], id[16];
  int rc, r;
  size_t got = 0;
  while (got < sizeof id) {
    ssize_t n = getrandom(id + got, sizeof id - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return st_fail(s, STORE_EIO, "getrandom: %s", strerror(errno));
    got += (size_t)n;
  }
  if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0)
    return st_mdb(s, rc, "initialising the store");
  for (int i = 0; i < ST_NDBS; i++) {
    if ((rc = mdb_dbi_open(txn, st_db_names[i], MDB_CREATE, &dbi)) != 0) goto fail;
    if (i == 0) meta = dbi;
  }
  st_put_u32(fmt, STORE_FORMAT_VERSION);
  st_put_u64(cur, 0);
  {
    MDB_val k1 = { 6, "format" }, v1 = { 4, fmt };
    MDB_val k2 = { 2, "id" }, v2 = { 16, id };
    MDB_val k3 = { 7, "current" }, v3 = { 8, cur };
    if ((rc = mdb_put(txn, meta, &k1, &v1, 0)) != 0 ||
        (rc = mdb_put(txn, meta, &k2, &v2, 0)) != 0 ||
        (rc = mdb_put(txn, meta, &k3, &v3, 0)) != 0)
      goto fail;
  }
  rc = mdb_txn_commit(txn);
  txn = NULL;
  if (rc) goto fail;
  return STORE_OK;
fail:
  if (txn) mdb_txn_abort(txn);
  r = st_mdb(s, rc, "initialising the store");
  return r == ST_MAPFULL ? st_fail(s, STORE_EIO, "initial map too small") : r;
}

int st_create(store_env *s, size_t mapsize) {
  char tmp[4200], tmplock[4210], final[4200];
  MDB_env *env = NULL;
  int rc, fd, r;
  snprintf(tmp, sizeof tmp, "%s/data.mdb.new", s->path);
  snprintf(tmplock, sizeof tmplock, "%s-lock", tmp);
  snprintf(final, sizeof final, "%s/data.mdb", s->path);
  /* Leftovers of a creation that crashed: we hold the lock, remove them. */
  (void)unlink(tmp);
  (void)unlink(tmplock);
  if ((rc = mdb_env_create(&env)) != 0 ||
      (rc = mdb_env_set_maxdbs(env, ST_NDBS)) != 0 ||
      (rc = mdb_env_set_mapsize(env, mapsize)) != 0 ||
      (rc = mdb_env_open(env, tmp, MDB_NOSUBDIR, 0600)) != 0) {
    r = st_mdb(s, rc, "creating the store");
    goto done;
  }
  if ((r = init_txn(s, env)) != STORE_OK) goto done;
  mdb_env_close(env);
  env = NULL;
  if (chmod(tmp, 0600) != 0 || rename(tmp, final) != 0) {
    r = st_fail(s, st_code(errno), "creating data.mdb: %s", strerror(errno));
    goto done;
  }
  /* Make the rename durable before anything is written to the store. */
  if ((fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fsync(fd) != 0) {
    r = st_fail(s, STORE_EIO, "syncing the directory: %s", strerror(errno));
    if (fd >= 0) close(fd);
    goto done;
  }
  close(fd);
  r = STORE_OK;
done:
  if (env) mdb_env_close(env);
  (void)unlink(tmplock);
  if (r != STORE_OK) (void)unlink(tmp);
  return r;
}
