/* store_bench.c — the store's two targets, measured on this disk.
**
** 1. Bytes added per revision that changes one definition, in a world of
**    1e2 definitions and in one of 1e4 definitions + 1e5 data rows.  Target:
**    large / small <= 2 (a revision costs O(change), not O(world)).
**    Measured as the growth of the pages held by the B-trees (free pages
**    excluded), averaged over many revisions, and as the growth of data.mdb.
** 2. Commits per second of store_publish (one changed definition, large
**    world) against a bare LMDB write transaction carrying the same payload
**    (the entry record and a manifest-sized value) in an environment on the
**    same file system.  Target: ratio >= 0.7.  Both are fsync-bound, and a
**    shared disk's fsync time swings tenfold within seconds: short rounds
**    alternate between the two so that both see the same moods, and the
**    median of the rounds' ratios is reported beside the ratio of the
**    totals.  The CPU time per commit (user + system, this process) is the
**    store's own cost, which no disk mood hides.
** 3. Group commit: revisions per second when store_publish_group writes 8
**    and 32 revisions (one changed definition each) per transaction.
** Also: the time to verify and to read the whole large world (recovery's
** share of the work).
**
** Usage: store_bench [--quick] [DIR]   (DIR defaults to $TMPDIR or /tmp) */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <lmdb.h>
#include "store.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, const char *msg) {
  fprintf(stderr, "store_bench: %s: %s\n", what, msg);
  exit(1);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb; (void)flag; (void)f;
  return remove(p);
}

/* A definition of about 200 bytes, version v. */
static size_t defun(char *buf, size_t n, int i, int v) {
  return (size_t)snprintf(buf, n,
    "(defun fn-%d (order)\n  \"Compute line %d of the order total.\"\n"
    "  (let ((base (* (order-qty order) (order-price order))))\n"
    "    (+ base (* base %d/1000))))", i, i, v);
}

typedef struct world {
  store_env *s;
  uint64_t rev;
  int ndefs, nrows;
} world;

/* Publish the initial world in batches of 5000 entries. */
static void build(world *w, const char *dir, int ndefs, int nrows) {
  char err[1024];
  store_rev_info in = { STORE_REV_INITIAL, 1, 0, "bench", "initial", NULL, NULL };
  enum { BATCH = 5000 };
  store_entry *es = calloc(BATCH, sizeof *es);
  char (*names)[24] = calloc(BATCH, 24);
  char (*bodies)[320] = calloc(BATCH, 320);
  if (store_open(dir, 0, &w->s, err, sizeof err) != STORE_OK) die("open", err);
  w->rev = 0;
  w->ndefs = ndefs;
  w->nrows = nrows;
  int total = ndefs + nrows;
  for (int base = 0; base < total; base += BATCH) {
    int n = total - base < BATCH ? total - base : BATCH;
    for (int j = 0; j < n; j++) {
      int i = base + j;
      size_t len;
      if (i < ndefs) {
        snprintf(names[j], 24, "fn-%d", i);
        len = defun(bodies[j], 320, i, 0);
        es[j] = (store_entry){ STORE_FUNCTION, names[j], bodies[j], len };
      } else {
        snprintf(names[j], 24, "\"sku-%d\"", i - ndefs);
        len = (size_t)snprintf(bodies[j], 320, "(:price %d :qty %d)", i * 7 % 1000, i % 50);
        es[j] = (store_entry){ STORE_DATA, names[j], bodies[j], len };
      }
    }
    if (store_publish(w->s, w->rev, &in, es, (size_t)n, NULL, 0, &w->rev) != STORE_OK)
      die("initial publish", store_errmsg(w->s));
    in.kind = STORE_REV_IMPORT;
  }
  free(es); free(names); free(bodies);
}

/* One revision changing definition i to version v. */
static void change_one(world *w, int i, int v) {
  char name[24], body[320];
  store_rev_info act = { STORE_REV_ACTION, (uint64_t)v, 0, "bench", "change one definition", "resp_0123456789", NULL };
  snprintf(name, sizeof name, "fn-%d", i);
  store_entry e = { STORE_FUNCTION, name, body, defun(body, sizeof body, i, v) };
  if (store_publish(w->s, w->rev, &act, &e, 1, NULL, 0, &w->rev) != STORE_OK)
    die("publish", store_errmsg(w->s));
}

/* A group of n revisions, revision k changing definition i+k to version v+k. */
static void change_group(world *w, int n, int i, int v) {
  enum { GMAX = 64 };
  char names[GMAX][24], bodies[GMAX][320];
  store_entry es[GMAX];
  store_rev_info infos[GMAX];
  store_rev_in g[GMAX];
  for (int k = 0; k < n && k < GMAX; k++) {
    snprintf(names[k], sizeof names[k], "fn-%d", (i + k) % w->ndefs);
    es[k] = (store_entry){ STORE_FUNCTION, names[k], bodies[k], defun(bodies[k], sizeof bodies[k], (i + k) % w->ndefs, v + k) };
    infos[k] = (store_rev_info){ STORE_REV_APPLICATION, (uint64_t)(v + k), 0, "bench", "change one definition", NULL, NULL };
    g[k] = (store_rev_in){ &infos[k], &es[k], 1, NULL, 0, NULL, 0, 0, 0, NULL };
  }
  if (store_publish_group(w->s, w->rev, g, (size_t)n, 0, NULL, NULL) != STORE_OK)
    die("publish group", store_errmsg(w->s));
  w->rev = g[n - 1].rev;
}

typedef struct growth { double tree, file; } growth;

static growth bytes_per_rev(world *w, int nrevs) {
  store_stat a, b;
  growth g;
  /* Warm up: let the free list reach its steady state. */
  for (int k = 0; k < 20; k++) change_one(w, k % w->ndefs, 100000 + k);
  store_stats(w->s, &a);
  for (int k = 0; k < nrevs; k++) change_one(w, (k * 37) % w->ndefs, 200000 + k);
  store_stats(w->s, &b);
  g.tree = (double)(b.pages_used - a.pages_used) * (double)a.page_size / nrevs;
  g.file = (double)(b.file_pages - a.file_pages) * (double)a.page_size / nrevs;
  return g;
}

/* ---- bare LMDB with the same payload */

typedef struct bare { MDB_env *env; MDB_dbi data, meta; uint64_t n; } bare;

static void bare_open(bare *b, const char *dir) {
  MDB_txn *t;
  int rc;
  if ((rc = mdb_env_create(&b->env)) || (rc = mdb_env_set_maxdbs(b->env, 4)) ||
      (rc = mdb_env_set_mapsize(b->env, (size_t)64 << 20)) ||
      (rc = mdb_env_open(b->env, dir, 0, 0600)) ||
      (rc = mdb_txn_begin(b->env, NULL, 0, &t)) ||
      (rc = mdb_dbi_open(t, "data", MDB_CREATE, &b->data)) ||
      (rc = mdb_dbi_open(t, "meta", MDB_CREATE, &b->meta)) ||
      (rc = mdb_txn_commit(t)))
    die("bare LMDB", mdb_strerror(rc));
  b->n = 0;
}

/* A commit carrying an entry-sized and a manifest-sized value, and a
** counter, like a publish. */
static void bare_commit(bare *b, size_t entry_len, size_t manifest_len) {
  unsigned char key[32] = { 0 }, val[1024], cnt[8];
  MDB_txn *t;
  int rc;
  b->n++;
  memcpy(key, &b->n, sizeof b->n);
  memset(val, (int)b->n, sizeof val);
  MDB_val k1 = { 32, key }, v1 = { entry_len, val };
  MDB_val k2 = { 8, key }, v2 = { manifest_len, val };
  MDB_val k3 = { 7, "current" }, v3 = { 8, cnt };
  memcpy(cnt, &b->n, 8);
  if ((rc = mdb_txn_begin(b->env, NULL, 0, &t)) || (rc = mdb_put(t, b->data, &k1, &v1, 0)) ||
      (rc = mdb_put(t, b->data, &k2, &v2, 0)) || (rc = mdb_put(t, b->meta, &k3, &v3, 0)) ||
      (rc = mdb_txn_commit(t)))
    die("bare commit", mdb_strerror(rc));
}

static int count_entry(void *arg, const store_entry *e, const uint8_t h[32]) {
  (void)h;
  ((size_t *)arg)[0]++;
  ((size_t *)arg)[1] += e->len;
  return 0;
}

int main(int argc, char **argv) {
  const char *base = getenv("TMPDIR");
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else base = argv[i];
  }
  if (!base || !*base) base = "/tmp";
  char root[4096], small_dir[4200], large_dir[4200], bare_dir[4200];
  snprintf(root, sizeof root, "%s/jiti-store-bench-XXXXXX", base);
  if (!mkdtemp(root)) die("mkdtemp", root);
  snprintf(small_dir, sizeof small_dir, "%s/small", root);
  snprintf(large_dir, sizeof large_dir, "%s/large", root);
  snprintf(bare_dir, sizeof bare_dir, "%s/bare", root);
  int nrevs = quick ? 100 : 400, rounds = quick ? 10 : 24, per_round = quick ? 10 : 15;

  printf("store benchmark (%s, in %s)\n\n", quick ? "quick" : "full", root);
  world small, large;
  double t0 = now();
  build(&small, small_dir, 100, 0);
  double t1 = now();
  build(&large, large_dir, 10000, 100000);
  double t2 = now();
  growth gs = bytes_per_rev(&small, nrevs);
  growth gl = bytes_per_rev(&large, nrevs);

  /* Commits per second, alternating rounds. */
  mkdir(bare_dir, 0700);
  bare b;
  bare_open(&b, bare_dir);
  size_t entry_len, manifest_len;
  {
    char body[320];
    entry_len = 3 + 8 + defun(body, sizeof body, 1234, 999999);
    store_manifest *m;
    if (store_manifest_read(large.s, large.rev, &m) != STORE_OK) die("manifest", store_errmsg(large.s));
    manifest_len = 2 + 8 * 3 + 1 + 8 * 2 + 6 + strlen(m->kernel_version) + strlen(m->summary) +
                   strlen(m->response_id) + 4 + 32;
    for (size_t i = 0; i < m->nchanges; i++) manifest_len += 4 + strlen(m->changes[i].name) + 64;
    store_free(m);
  }
  double ts = 0, tb = 0, cs = 0, cb = 0, ratios[64];
  int v = 300000;
  for (int r = 0; r < rounds; r++) {
    double a = now(), ca = cpu();
    for (int k = 0; k < per_round; k++) change_one(&large, (v * 13) % large.ndefs, v), v++;
    double m = now(), cm = cpu();
    for (int k = 0; k < per_round; k++) bare_commit(&b, entry_len, manifest_len);
    double e = now(), ce = cpu();
    ts += m - a;
    tb += e - m;
    cs += cm - ca;
    cb += ce - cm;
    ratios[r] = (e - m) / (m - a);
  }
  int ncommits = rounds * per_round;
  double cps_store = ncommits / ts, cps_bare = ncommits / tb;
  qsort(ratios, (size_t)rounds, sizeof ratios[0], cmp_double);
  double median = rounds % 2 ? ratios[rounds / 2] : (ratios[rounds / 2 - 1] + ratios[rounds / 2]) / 2;

  /* Group commit: single publishes and groups of 8 and 32, alternating. */
  static const int sizes[] = { 1, 8, 32 };
  double gt[3] = { 0, 0, 0 };
  int grevs[3] = { 0, 0, 0 };
  for (int r = 0; r < (quick ? 3 : 6); r++)
    for (int z = 0; z < 3; z++) {
      double a = now();
      int n = 0;
      while (n < 32) change_group(&large, sizes[z], (v * 13) % large.ndefs, v), v += sizes[z], n += sizes[z];
      gt[z] += now() - a;
      grevs[z] += n;
    }
  /* Recovery's share: verify, and read every entry of the large world. */
  char err[1024];
  size_t acc[2] = { 0, 0 };
  double r0 = now();
  if (store_verify(large.s, 0, err, sizeof err) != STORE_OK) die("verify", err);
  double r1 = now();
  if (store_verify(large.s, STORE_VERIFY_HISTORY, err, sizeof err) != STORE_OK) die("verify", err);
  double r1h = now();
  double verify_quick = r1 - r0, verify_history = r1h - r1;
  r1 = now();
  if (store_map_foreach(large.s, STORE_REV_CURRENT, count_entry, acc) != STORE_OK)
    die("read", store_errmsg(large.s));
  double r2 = now();
  size_t acc_old[2] = { 0, 0 };
  uint64_t old = large.rev > 100 ? large.rev - 100 : 1;
  if (store_map_foreach(large.s, old, count_entry, acc_old) != STORE_OK)
    die("read old", store_errmsg(large.s));
  double r3 = now();
  store_stat st;
  store_stats(large.s, &st);

  printf("| measure | 1e2 defs | 1e4 defs + 1e5 rows | ratio | target |\n");
  printf("|---|---|---|---|---|\n");
  printf("| tree bytes added per revision (one definition changed) | %.0f | %.0f | %.2f | <= 2 |\n",
         gs.tree, gl.tree, gl.tree / (gs.tree > 0 ? gs.tree : 1));
  printf("| data.mdb bytes added per revision | %.0f | %.0f | | |\n", gs.file, gl.file);
  printf("| initial publish | %.3f s | %.3f s | | |\n", t1 - t0, t2 - t1);
  printf("\n| commits per second (one definition, large world) | store_publish | bare LMDB | ratio | target |\n");
  printf("|---|---|---|---|---|\n");
  printf("| %d commits each, %d alternating rounds: totals | %.1f | %.1f | %.2f | >= 0.7 |\n",
         ncommits, rounds, cps_store, cps_bare, cps_store / cps_bare);
  printf("| median of the rounds' ratios | | | %.2f | >= 0.7 |\n", median);
  printf("| CPU per commit (user + system) | %.0f us | %.0f us | | |\n", cs / ncommits * 1e6,
         cb / ncommits * 1e6);
  printf("\n| group commit (one definition per revision, large world) | revisions/s | per single publish |\n");
  printf("|---|---|---|\n");
  for (int z = 0; z < 3; z++)
    printf("| %d revision%s per transaction | %.1f | %.2f |\n", sizes[z], sizes[z] > 1 ? "s" : "",
           grevs[z] / gt[z], (grevs[z] / gt[z]) / (grevs[0] / gt[0]));
  printf("\n| large world (%zu entries, %.1f MiB of entry bytes, %llu revisions) | time |\n",
         acc[0], (double)acc[1] / 1048576.0, (unsigned long long)st.current);
  printf("|---|---|\n");
  printf("| store_verify (chain + re-hash of every current entry) | %.3f s |\n", verify_quick);
  printf("| store_verify with STORE_VERIFY_HISTORY (+ replay of every delta) | %.3f s |\n", verify_history);
  printf("| read every current entry with its bytes | %.3f s |\n", r2 - r1);
  printf("| rebuild and read revision CURRENT-%llu | %.3f s |\n",
         (unsigned long long)(large.rev - old), r3 - r2);
  printf("| data.mdb size | %.1f MiB |\n", (double)st.file_pages * (double)st.page_size / 1048576.0);

  store_close(small.s);
  store_close(large.s);
  mdb_env_close(b.env);
  nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}
