/* st_test.h — helpers shared by the store tests: temporary store
** directories, work in a child process, and test-only damage done through
** LMDB directly. */
#ifndef st_test_h
#define st_test_h
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <lmdb.h>
#include "store.h"
#include "../c/check.h"

/* A fresh directory under $TMPDIR (or /tmp); the store goes in DIR/s. */
static inline char *tmp_store(char *buf, size_t n) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, n, "%s/jiti-store-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(buf)) { perror("mkdtemp"); exit(2); }
  strncat(buf, "/s", n - strlen(buf) - 1);
  return buf;
}

static inline int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb; (void)flag; (void)f;
  return remove(p);
}

/* Remove the store and its temporary parent. */
static inline void rm_store(const char *path) {
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = '\0';
  nftw(parent, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Work done in a child process (a store opened there is never shared
** with the parent across fork): fn writes its message into err and returns
** its exit status. */
typedef int (*st_child_fn)(const char *dir, void *arg, char *err, size_t n);

/* Run fn in a child; its message in msg.  Returns its exit status, or
** -signal if it died of one. */
static inline int st_in_child(st_child_fn fn, const char *dir, void *arg, char *msg, size_t n) {
  int fds[2], status;
  if (pipe(fds) != 0) { perror("pipe"); exit(2); }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    char err[1024] = "";
    close(fds[0]);
    int r = fn(dir, arg, err, sizeof err);
    if (write(fds[1], err, strlen(err)) < 0) _exit(100);
    _exit(r);
  }
  close(fds[1]);
  ssize_t got = 0, k;
  while ((k = read(fds[0], msg + got, n - 1 - (size_t)got)) > 0) got += k;
  msg[got] = '\0';
  close(fds[0]);
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WEXITSTATUS(status);
}

static inline store_entry ent(int kind, const char *name, const char *text) {
  store_entry e = { kind, name, text, strlen(text) };
  return e;
}

static inline store_rev_info info_of(int kind, uint64_t gen, const char *summary) {
  store_rev_info i = { kind, gen, 0, "jiti-test 0", summary, NULL, NULL };
  return i;
}

/* ---- direct LMDB access for damaging a store (test only) */

typedef struct raw { MDB_env *env; MDB_txn *txn; MDB_dbi dbi; } raw;

/* Open DIR's environment and database `db` in a write transaction. */
static inline int raw_open(raw *r, const char *dir, const char *db) {
  int rc;
  memset(r, 0, sizeof *r);
  if ((rc = mdb_env_create(&r->env)) || (rc = mdb_env_set_maxdbs(r->env, 8)) ||
      (rc = mdb_env_open(r->env, dir, 0, 0600)) ||
      (rc = mdb_txn_begin(r->env, NULL, 0, &r->txn)) ||
      (rc = mdb_dbi_open(r->txn, db, 0, &r->dbi))) {
    fprintf(stderr, "raw_open %s %s: %s\n", dir, db, mdb_strerror(rc));
    if (r->txn) mdb_txn_abort(r->txn);
    mdb_env_close(r->env);
    return -1;
  }
  return 0;
}

static inline int raw_close(raw *r, int commit) {
  int rc = commit ? mdb_txn_commit(r->txn) : (mdb_txn_abort(r->txn), 0);
  mdb_env_close(r->env);
  return rc;
}

/* Flip one byte at offset off (from the end if negative) of the value of key
** in database db. */
static inline int raw_flip(const char *dir, const char *db, const void *key, size_t klen, long off) {
  raw r;
  MDB_val k = { klen, (void *)key }, v;
  if (raw_open(&r, dir, db) != 0) return -1;
  if (mdb_get(r.txn, r.dbi, &k, &v) != 0) { raw_close(&r, 0); return -1; }
  unsigned char *copy = malloc(v.mv_size);
  memcpy(copy, v.mv_data, v.mv_size);
  size_t at = off < 0 ? v.mv_size - (size_t)(-off) : (size_t)off;
  copy[at] ^= 0x5a;
  MDB_val nv = { v.mv_size, copy };
  int rc = mdb_put(r.txn, r.dbi, &k, &nv, 0);
  free(copy);
  if (rc) { raw_close(&r, 0); return -1; }
  return raw_close(&r, 1);
}

/* Delete key from database db. */
static inline int raw_del(const char *dir, const char *db, const void *key, size_t klen) {
  raw r;
  MDB_val k = { klen, (void *)key };
  if (raw_open(&r, dir, db) != 0) return -1;
  if (mdb_del(r.txn, r.dbi, &k, NULL) != 0) { raw_close(&r, 0); return -1; }
  return raw_close(&r, 1);
}

/* Put key -> value in database db. */
static inline int raw_put(const char *dir, const char *db, const void *key, size_t klen,
                   const void *val, size_t vlen) {
  raw r;
  MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
  if (raw_open(&r, dir, db) != 0) return -1;
  if (mdb_put(r.txn, r.dbi, &k, &v, 0) != 0) { raw_close(&r, 0); return -1; }
  return raw_close(&r, 1);
}

/* Read key's value of database db into buf (at most n bytes): its size, or
** -1. */
static inline int raw_get(const char *dir, const char *db, const void *key, size_t klen,
                          void *buf, size_t n) {
  raw r;
  MDB_val k = { klen, (void *)key }, v;
  if (raw_open(&r, dir, db) != 0) return -1;
  if (mdb_get(r.txn, r.dbi, &k, &v) != 0) { raw_close(&r, 0); return -1; }
  memcpy(buf, v.mv_data, v.mv_size < n ? v.mv_size : n);
  int size = (int)v.mv_size;
  raw_close(&r, 0);
  return size;
}

static inline void be64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--) { p[i] = (unsigned char)v; v >>= 8; }
}


/* A revision's map as "kind name=bytes;" text, for comparing maps. */
typedef struct st_coll { char buf[8192]; size_t n; } st_coll;

static inline int st_coll_entry(void *arg, const store_entry *e, const uint8_t hash[32]) {
  st_coll *c = arg;
  int w = snprintf(c->buf + c->n, sizeof c->buf - c->n, "%s %s=%.*s;",
                   store_kind_name(e->kind), e->name, (int)e->len, (const char *)e->bytes);
  (void)hash;
  if (w > 0 && (size_t)w < sizeof c->buf - c->n) c->n += (size_t)w;
  return 0;
}

/* Revision rev's map in c->buf (returned), or "(error)" with the reason
** on stderr. */
static inline const char *st_map_of(store_env *s, uint64_t rev, st_coll *c) {
  c->n = 0;
  c->buf[0] = '\0';
  if (store_map_foreach(s, rev, st_coll_entry, c) != STORE_OK) {
    fprintf(stderr, "map_of(%llu): %s\n", (unsigned long long)rev, store_errmsg(s));
    return "(error)";
  }
  return c->buf;
}

#endif
