/* test_store_corrupt.c — damaged stores give a clear STORE_ECORRUPT naming
** the problem and the store path, never a crash, and nothing is
** overwritten.  Every damaged case runs in a forked child (opened after the
** fork) so that a crash would be seen by the parent as a finding; the child
** reports its return code as its exit status and its message on a pipe.
** Also: permission errors (as root, checked in a child that drops to
** nobody). */
#include "st_test.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static uint8_t g_hash_f[32];   /* hash of function f at CURRENT */

/* Four revisions: f changes, rows come and go. */
static void build(const char *dir) {
  char err[1024];
  store_env *s;
  uint64_t rev;
  if (store_open(dir, 0, &s, err, sizeof err) != STORE_OK) { fprintf(stderr, "%s\n", err); exit(2); }
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  store_entry e1[] = { ent(STORE_FUNCTION, "f", "(defun f () 1)"), ent(STORE_DATA, "r1", "10"),
                       ent(STORE_DATA, "r2", "20") };
  store_entry e2[] = { ent(STORE_FUNCTION, "f", "(defun f () 2)") };
  store_entry e3[] = { ent(STORE_DATA, "r3", "30") };
  store_key k3[] = { { STORE_DATA, "r1" } };
  store_entry e4[] = { ent(STORE_FUNCTION, "f", "(defun f () 3)") };
  CHECK(store_publish(s, 0, &in, e1, 3, NULL, 0, &rev) == STORE_OK);
  in.kind = STORE_REV_ACTION;
  CHECK(store_publish(s, 1, &in, e2, 1, NULL, 0, &rev) == STORE_OK);
  CHECK(store_publish(s, 2, &in, e3, 1, k3, 1, &rev) == STORE_OK);
  CHECK(store_publish(s, 3, &in, e4, 1, NULL, 0, &rev) == STORE_OK);
  CHECK(store_lookup(s, STORE_FUNCTION, "f", g_hash_f) == STORE_OK);
  store_close(s);
}

/* Run fn in a child; returns its exit code, or -signal if it died. */
static int in_child(st_child_fn fn, const char *dir, char *msg, size_t n) {
  int r = st_in_child(fn, dir, NULL, msg, n);
  if (r < 0) fprintf(stderr, "FINDING: the child died of signal %d\n", -r);
  return r;
}

static int do_open(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  int r = store_open(dir, 0, &s, err, n);
  store_close(s);
  return r;
}

static int do_verify(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  int r = store_open(dir, 0, &s, err, n);
  if (r == STORE_OK) r = store_verify(s, STORE_VERIFY_HISTORY, err, n);
  store_close(s);
  return r;
}

static int do_verify_quick(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  int r = store_open(dir, 0, &s, err, n);
  if (r == STORE_OK) r = store_verify(s, 0, err, n);
  store_close(s);
  return r;
}

static int cb_nothing(void *a, const store_entry *e, const uint8_t h[32]) {
  (void)a; (void)e; (void)h;
  return 0;
}

/* Reading the current map and rolling back, on a store with a missing entry. */
static int do_read_and_revert(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  uint64_t rev;
  int r = store_open(dir, 0, &s, err, n);
  if (r != STORE_OK) return 50;
  r = store_map_foreach(s, STORE_REV_CURRENT, cb_nothing, NULL);
  if (r != STORE_ECORRUPT) { store_close(s); return 51; }
  store_rev_info rb = info_of(STORE_REV_ROLLBACK, 1, "rb");
  r = store_publish_revert(s, 4, 2, &rb, &rev);   /* the target needs f@2: fine */
  if (r != STORE_OK) { snprintf(err, n, "%s", store_errmsg(s)); store_close(s); return 52; }
  r = store_publish_revert(s, 5, 4, &rb, &rev);   /* needs f@4: missing */
  snprintf(err, n, "%s", store_errmsg(s));
  store_close(s);
  return r;
}

static int drop_root(char *err, size_t n) {
  if (setgid(65534) != 0 || setuid(65534) != 0) {
    snprintf(err, n, "cannot drop privileges");
    return 60;
  }
  return 0;
}

static int do_open_as_nobody(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  int r = drop_root(err, n);
  return r ? r : do_open(dir, NULL, err, n);
}

static int do_open_ro_as_nobody(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  int r = drop_root(err, n);
  if (r) return r;
  r = store_open(dir, STORE_RDONLY, &s, err, n);
  store_close(s);
  return r;
}

static off_t file_size(const char *dir) {
  char p[4200];
  struct stat st;
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  return stat(p, &st) == 0 ? st.st_size : -1;
}

static void truncate_to(const char *dir, off_t size) {
  char p[4200];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  if (truncate(p, size) != 0) perror("truncate");
}

static void poke(const char *dir, off_t off, const void *bytes, size_t n) {
  char p[4200];
  snprintf(p, sizeof p, "%s/data.mdb", dir);
  int fd = open(p, O_WRONLY);
  if (fd < 0 || pwrite(fd, bytes, n, off) != (ssize_t)n) perror("poke");
  if (fd >= 0) close(fd);
}

/* Expect fn to report STORE_ECORRUPT with a message holding want and dir. */
static void expect_corrupt(const char *what, st_child_fn fn, const char *dir, const char *want) {
  char msg[2048];
  int r = in_child(fn, dir, msg, sizeof msg);
  if (r != STORE_ECORRUPT || !strstr(msg, want) || !strstr(msg, dir)) {
    fprintf(stderr, "FAIL %s: code %d, message \"%s\" (expected \"%s\")\n", what, r, msg, want);
    check_failed++;
  } else {
    check_passed++;
    printf("ok %s: %s\n", what, msg);
  }
}

static void fresh(char *dir, size_t n) {
  tmp_store(dir, n);
  build(dir);
}

int main(void) {
  char dir[4096], msg[2048];
  uint8_t key[64];

  /* Truncated data files: refused before LMDB maps them; nothing written. */
  fresh(dir, sizeof dir);
  off_t full = file_size(dir);
  CHECK(in_child(do_verify, dir, msg, sizeof msg) == STORE_OK);
  truncate_to(dir, full / 2);
  expect_corrupt("truncated to half", do_open, dir, "truncated");
  CHECK(file_size(dir) == full / 2);
  truncate_to(dir, 5000);
  expect_corrupt("truncated inside the second meta page", do_open, dir, "truncated");
  truncate_to(dir, 100);
  expect_corrupt("truncated inside the header", do_open, dir, "truncated");
  truncate_to(dir, 0);
  expect_corrupt("truncated to zero", do_open, dir, "truncated");
  CHECK(file_size(dir) == 0);
  rm_store(dir);

  /* Not an LMDB file; a damaged second meta page. */
  fresh(dir, sizeof dir);
  poke(dir, 16, "\0\0\0\0", 4);
  expect_corrupt("bad magic", do_open, dir, "not an LMDB data file");
  rm_store(dir);
  fresh(dir, sizeof dir);
  poke(dir, 4096 + 16, "\0\0\0\0", 4);
  expect_corrupt("bad second meta page", do_open, dir, "second meta page");
  rm_store(dir);

  /* A flipped byte in an entry's bytes. */
  fresh(dir, sizeof dir);
  CHECK(raw_flip(dir, "entries", g_hash_f, 32, -2) == 0);
  expect_corrupt("entry bytes flipped", do_verify, dir, "do not match its hash");
  expect_corrupt("entry bytes flipped (names f)", do_verify, dir, "function f");
  rm_store(dir);

  /* A flipped kind byte: the entry no longer carries its key. */
  fresh(dir, sizeof dir);
  CHECK(raw_flip(dir, "entries", g_hash_f, 32, 0) == 0);
  expect_corrupt("entry kind flipped", do_verify, dir, "entry");
  rm_store(dir);

  /* A deleted entry: verify, reading the map and a rollback needing it. */
  fresh(dir, sizeof dir);
  CHECK(raw_del(dir, "entries", g_hash_f, 32) == 0);
  expect_corrupt("entry deleted", do_verify, dir, "is missing");
  expect_corrupt("entry deleted: read + rollback", do_read_and_revert, dir, "is missing");
  rm_store(dir);

  /* An entry only an old revision needs: the quick check passes, the
  ** history check names the revision. */
  fresh(dir, sizeof dir);
  {
    uint8_t h2[32];
    store_entry f2 = ent(STORE_FUNCTION, "f", "(defun f () 2)");
    CHECK(store_entry_hash(&f2, h2, NULL) == STORE_OK);
    CHECK(raw_del(dir, "entries", h2, 32) == 0);
    CHECK(in_child(do_verify_quick, dir, msg, sizeof msg) == STORE_OK);
    expect_corrupt("old entry deleted", do_verify, dir, "revision 2: entry");
  }
  rm_store(dir);

  /* A flipped byte in a manifest: its checksum names the revision. */
  fresh(dir, sizeof dir);
  be64(key, 2);
  CHECK(raw_flip(dir, "revisions", key, 8, 20) == 0);
  expect_corrupt("manifest flipped", do_verify_quick, dir, "revision 2: the manifest's checksum");
  rm_store(dir);

  /* A revision missing from the chain. */
  fresh(dir, sizeof dir);
  be64(key, 3);
  CHECK(raw_del(dir, "revisions", key, 8) == 0);
  expect_corrupt("revision deleted", do_verify, dir, "revisions database holds 3");
  rm_store(dir);

  /* A revision beyond CURRENT (cannot happen by a crash; by damage only). */
  fresh(dir, sizeof dir);
  be64(key, 5);
  CHECK(raw_put(dir, "revisions", key, 8, "junk", 4) == 0);
  expect_corrupt("revision beyond CURRENT", do_verify, dir, "up to 5");
  rm_store(dir);

  /* The map lost a key that the history put there. */
  fresh(dir, sizeof dir);
  key[0] = STORE_DATA; memcpy(key + 1, "r2", 2);
  CHECK(raw_del(dir, "names", key, 3) == 0);
  expect_corrupt("map key deleted", do_verify_quick, dir, "revision 4: its manifest counts 3");
  rm_store(dir);

  /* The map points a key at another entry that exists. */
  fresh(dir, sizeof dir);
  key[0] = STORE_DATA; memcpy(key + 1, "r2", 2);
  CHECK(raw_put(dir, "names", key, 3, g_hash_f, 32) == 0);
  expect_corrupt("map key re-pointed", do_verify, dir, "filed under data r2");
  rm_store(dir);

  /* CURRENT or the format record gone. */
  fresh(dir, sizeof dir);
  CHECK(raw_del(dir, "meta", "current", 7) == 0);
  expect_corrupt("CURRENT deleted", do_open, dir, "CURRENT record is missing");
  rm_store(dir);
  fresh(dir, sizeof dir);
  CHECK(raw_del(dir, "meta", "format", 6) == 0);
  expect_corrupt("format deleted", do_open, dir, "format version record");
  rm_store(dir);
  fresh(dir, sizeof dir);
  {
    raw r;
    if (raw_open(&r, dir, "events") == 0) { mdb_drop(r.txn, r.dbi, 1); raw_close(&r, 1); }
  }
  expect_corrupt("events database dropped", do_open, dir, "'events' database is missing");
  rm_store(dir);

  /* Permission denied: a clear STORE_EPERM.  Root bypasses permissions, so
  ** as root the child drops to uid/gid 65534 (nobody) first. */
  fresh(dir, sizeof dir);
  {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", dir);
    *strrchr(parent, '/') = '\0';
    chmod(parent, 0755);
    chmod(dir, 0);
    int r = in_child(geteuid() == 0 ? do_open_as_nobody : do_open, dir, msg, sizeof msg);
    CHECK(r == STORE_EPERM);
    /* as nobody, the directory is another user's: refused before any access */
    CHECK(strstr(msg, dir) != NULL &&
          (strstr(msg, "ermission denied") != NULL || strstr(msg, "belongs to another user") != NULL));
    printf("ok permission denied: %s\n", msg);
    r = in_child(geteuid() == 0 ? do_open_ro_as_nobody : do_open, dir, msg, sizeof msg);
    CHECK(r == STORE_EPERM);
    chmod(dir, 0700);
  }
  rm_store(dir);
  return CHECK_DONE();
}
