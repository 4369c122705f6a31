/*
** test_etcd.c — the etcd client (controller/etcd/) against a real
** 3-member etcd cluster that tests/etcd.sh starts on loopback ports:
** binary keys and values, ranges, history, transactions and both their
** branches, leases that are renewed, revoked and left to expire, watches
** (history, live, stopped, compacted), etcd's limits, and the cluster
** losing members: one (everything goes on through the others, a watch
** included, nothing missed or doubled), then two (no quorum: clear errors).
**
**   test_etcd URL,URL,URL PID,PID,PID
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "etcd.h"

static char urls[1024];
static pid_t pids[3];
static char member_url[3][256];

static etcd *client(void) {
  char err[256];
  etcd *e = etcd_new(urls, err, sizeof err);
  if (!e) {
    fprintf(stderr, "etcd_new: %s\n", err);
    exit(1);
  }
  return e;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

/* ------------------------------------------------------------ the client */

static void test_new(void) {
  char err[256];
  CHECK(!etcd_new("", err, sizeof err) && has(err, "no etcd member URL"));
  CHECK(!etcd_new("ftp://127.0.0.1:1", err, sizeof err) && has(err, "is not http://HOST:PORT"));
  CHECK(!etcd_new("http://127.0.0.1:1/v3", err, sizeof err) && has(err, "is not http://HOST:PORT"));
  CHECK(!etcd_new("http://user:pw@127.0.0.1:1", err, sizeof err));
  CHECK(!etcd_new("http://127.0.0.1:1,,http://127.0.0.1:2", err, sizeof err));
  etcd *e = etcd_new("http://127.0.0.1:1,https://[::1]:2", err, sizeof err);
  CHECK(e != NULL);
  etcd_free(e);
  CHECK_STR(etcd_error_name(ETCD_EUNCERTAIN), "uncertain");
  CHECK_STR(etcd_error_name(ETCD_ENOMEM), "no-memory");
}

/* ------------------------------------------------------------ keys */

static const char bkey[] = "jiti/t/bin\0\xff\x01";
static const char bval[] = "\0value\0with\xffNULs\n";

static void test_kv(etcd *e) {
  int64_t rev1 = 0, rev2 = 0;
  CHECK(etcd_put(e, bkey, sizeof bkey - 1, bval, sizeof bval - 1, 0, &rev1) == ETCD_OK && rev1 > 0);
  etcd_Range r;
  CHECK(etcd_range(e, bkey, sizeof bkey - 1, NULL, 0, 0, 0, 0, &r) == ETCD_OK);
  CHECK(r.n == 1 && r.count == 1 && !r.more && r.revision >= rev1);
  if (r.n == 1) {
    CHECK(r.kvs[0].key_len == sizeof bkey - 1 && !memcmp(r.kvs[0].key, bkey, sizeof bkey - 1));
    CHECK(r.kvs[0].value_len == sizeof bval - 1 && !memcmp(r.kvs[0].value, bval, sizeof bval - 1));
    CHECK(r.kvs[0].mod_revision == rev1 && r.kvs[0].create_revision == rev1 && r.kvs[0].version == 1);
  }
  etcd_range_free(&r);

  /* an overwrite; the old value is still there at its revision */
  CHECK(etcd_put(e, bkey, sizeof bkey - 1, "", 0, 0, &rev2) == ETCD_OK && rev2 > rev1);
  CHECK(etcd_range(e, bkey, sizeof bkey - 1, NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 1 && r.kvs[0].value_len == 0 &&
        r.kvs[0].version == 2 && r.kvs[0].create_revision == rev1);
  etcd_range_free(&r);
  CHECK(etcd_range(e, bkey, sizeof bkey - 1, NULL, 0, rev1, 0, 0, &r) == ETCD_OK && r.n == 1 &&
        r.kvs[0].value_len == sizeof bval - 1);
  etcd_range_free(&r);

  /* an absent key: no kvs, count 0 */
  CHECK(etcd_range(e, "jiti/t/absent", 13, NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 0 && r.count == 0);
  etcd_range_free(&r);

  /* a prefix: order, limit, keys only */
  char k[32], end[64];
  for (int i = 5; i >= 1; i--) {
    snprintf(k, sizeof k, "jiti/t/p/%d", i);
    CHECK(etcd_put(e, k, strlen(k), "v", 1, 0, NULL) == ETCD_OK);
  }
  size_t elen = etcd_prefix_end("jiti/t/p/", 9, end);
  CHECK(elen == 9 && !memcmp(end, "jiti/t/p0", 9));
  CHECK(etcd_prefix_end("a\xff\xff", 3, end) == 1 && end[0] == 'b');
  CHECK(etcd_prefix_end("\xff", 1, end) == 1 && end[0] == 0);
  elen = etcd_prefix_end("jiti/t/p/", 9, end);
  CHECK(etcd_range(e, "jiti/t/p/", 9, end, elen, 0, 2, 0, &r) == ETCD_OK);
  CHECK(r.n == 2 && r.count == 5 && r.more && !strcmp(r.kvs[0].key, "jiti/t/p/1") &&
        !strcmp(r.kvs[1].key, "jiti/t/p/2"));
  etcd_range_free(&r);
  CHECK(etcd_range(e, "jiti/t/p/", 9, end, elen, 0, 0, 1, &r) == ETCD_OK && r.n == 5 && r.kvs[4].value_len == 0);
  etcd_range_free(&r);
  int64_t deleted = 0;
  CHECK(etcd_delete(e, "jiti/t/p/", 9, end, elen, &deleted) == ETCD_OK && deleted == 5);
  CHECK(etcd_delete(e, "jiti/t/p/", 9, end, elen, &deleted) == ETCD_OK && deleted == 0);
}

/* ------------------------------------------------------------ transactions */

static void test_txn(etcd *e) {
  const char *key = "jiti/t/leader";
  etcd_delete(e, key, strlen(key), NULL, 0, NULL);

  /* put if absent: succeeds once */
  etcd_txn *t = etcd_txn_new();
  etcd_txn_compare(t, key, strlen(key), ETCD_CREATE, ETCD_EQUAL, 0);
  etcd_txn_put(t, ETCD_SUCCESS, key, strlen(key), "me", 2, 0);
  etcd_txn_range(t, ETCD_FAILURE, key, strlen(key), NULL, 0);
  CHECK(etcd_txn_ops(t) == 2 && etcd_txn_size(t) > 50);
  etcd_TxnResult res;
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && res.succeeded && res.nranges == 0 && res.revision > 0);
  int64_t created = res.revision;
  etcd_txn_result_free(&res);
  /* again: the compare fails, the failure branch reads who holds it */
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && !res.succeeded && res.nranges == 1);
  if (res.nranges == 1)
    CHECK(res.ranges[0].n == 1 && !strcmp(res.ranges[0].kvs[0].value, "me") &&
          res.ranges[0].kvs[0].create_revision == created);
  etcd_txn_result_free(&res);
  etcd_txn_free(t);

  /* every compare must hold: create revision, mod revision, value, lease */
  t = etcd_txn_new();
  etcd_txn_compare(t, key, strlen(key), ETCD_CREATE, ETCD_EQUAL, created);
  etcd_txn_compare(t, key, strlen(key), ETCD_MOD, ETCD_EQUAL, created);
  etcd_txn_compare_value(t, key, strlen(key), ETCD_EQUAL, "me", 2);
  etcd_txn_compare(t, key, strlen(key), ETCD_LEASE, ETCD_EQUAL, 0);
  etcd_txn_compare(t, key, strlen(key), ETCD_VERSION, ETCD_GREATER, 0);
  etcd_txn_put(t, ETCD_SUCCESS, "jiti/t/gen", 10, "7", 1, 0);
  etcd_txn_put(t, ETCD_SUCCESS, key, strlen(key), "me", 2, 0);
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && res.succeeded);
  etcd_txn_result_free(&res);
  /* the key's mod revision moved: the same transaction now fails */
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && !res.succeeded);
  etcd_txn_result_free(&res);
  etcd_txn_free(t);

  t = etcd_txn_new();
  etcd_txn_compare_value(t, key, strlen(key), ETCD_NOT_EQUAL, "me", 2);
  etcd_txn_put(t, ETCD_SUCCESS, "jiti/t/gen", 10, "8", 1, 0);
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && !res.succeeded);
  etcd_txn_result_free(&res);
  etcd_txn_free(t);
  etcd_Range r;
  CHECK(etcd_range(e, "jiti/t/gen", 10, NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 1 && !strcmp(r.kvs[0].value, "7"));
  etcd_range_free(&r);

  /* bad arguments are refused before anything is sent */
  t = etcd_txn_new();
  CHECK(etcd_txn_compare(t, key, strlen(key), ETCD_VALUE, ETCD_EQUAL, 1) == -1);
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_EINVAL && has(etcd_errmsg(e), "bad compare"));
  etcd_txn_free(t);

  /* etcd's own limit on operations (128 by default) */
  t = etcd_txn_new();
  char k[32];
  for (int i = 0; i < 129; i++) {
    snprintf(k, sizeof k, "jiti/t/many/%03d", i);
    etcd_txn_put(t, ETCD_SUCCESS, k, strlen(k), "x", 1, 0);
  }
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_EFAILED && has(etcd_errmsg(e), "too many operations"));
  etcd_txn_free(t);
}

/* ------------------------------------------------------------ limits */

static void test_limits(etcd *e) {
  size_t n = 2u << 20;
  char *big = malloc(n);
  memset(big, 'x', n);
  /* refused by the client: never sent */
  CHECK(etcd_put(e, "jiti/t/big", 10, big, n, 0, NULL) == ETCD_ETOOBIG && has(etcd_errmsg(e), "over the limit"));
  /* refused by etcd, when the client would send it */
  etcd_set_max_request(e, 8u << 20);
  etcd_Error err = etcd_put(e, "jiti/t/big", 10, big, n, 0, NULL);
  CHECK(err == ETCD_ETOOBIG);
  if (err != ETCD_ETOOBIG) fprintf(stderr, "  etcd said: %s: %s\n", etcd_error_name(err), etcd_errmsg(e));
  etcd_set_max_request(e, 3u << 19);
  free(big);
  etcd_Range r;
  CHECK(etcd_range(e, "jiti/t/big", 10, NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 0);
  etcd_range_free(&r);
}

/* ------------------------------------------------------------ leases */

static void test_leases(etcd *e) {
  int64_t lease = 0, granted = 0, ttl = 0;
  CHECK(etcd_lease_grant(e, 0, 0, &lease, &granted) == ETCD_EINVAL);
  CHECK(etcd_lease_grant(e, 30, 0, &lease, &granted) == ETCD_OK && lease != 0 && granted == 30);
  CHECK(etcd_put(e, "jiti/t/leased", 13, "x", 1, lease, NULL) == ETCD_OK);
  etcd_Range r;
  CHECK(etcd_range(e, "jiti/t/leased", 13, NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 1 && r.kvs[0].lease == lease);
  etcd_range_free(&r);
  CHECK(etcd_lease_keepalive(e, lease, &ttl) == ETCD_OK && ttl == 30);
  CHECK(etcd_lease_ttl(e, lease, &ttl) == ETCD_OK && ttl > 0 && ttl <= 30);

  /* a compare on the key's lease */
  etcd_txn *t = etcd_txn_new();
  etcd_txn_compare(t, "jiti/t/leased", 13, ETCD_LEASE, ETCD_EQUAL, lease);
  etcd_TxnResult res;
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && res.succeeded);
  etcd_txn_result_free(&res);

  /* revoked: its key is gone, and the lease is unknown from then on */
  CHECK(etcd_lease_revoke(e, lease) == ETCD_OK);
  CHECK(etcd_range(e, "jiti/t/leased", 13, NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 0);
  etcd_range_free(&r);
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && !res.succeeded);
  etcd_txn_result_free(&res);
  etcd_txn_free(t);
  CHECK(etcd_lease_keepalive(e, lease, &ttl) == ETCD_ELEASE && has(etcd_errmsg(e), "expired or was revoked"));
  CHECK(etcd_lease_ttl(e, lease, &ttl) == ETCD_ELEASE);
  CHECK(etcd_lease_revoke(e, lease) == ETCD_ELEASE);
  CHECK(etcd_put(e, "jiti/t/leased", 13, "x", 1, lease, NULL) == ETCD_ELEASE);

  /* a lease left alone expires, and its key with it */
  CHECK(etcd_lease_grant(e, 1, 0, &lease, &granted) == ETCD_OK && granted >= 1);
  CHECK(etcd_put(e, "jiti/t/short", 12, "x", 1, lease, NULL) == ETCD_OK);
  int gone = 0;
  for (int i = 0; i < 200 && !gone; i++) {
    sleep_ms(100);
    CHECK(etcd_range(e, "jiti/t/short", 12, NULL, 0, 0, 0, 0, &r) == ETCD_OK);
    gone = r.n == 0;
    etcd_range_free(&r);
  }
  CHECK(gone);
  CHECK(etcd_lease_keepalive(e, lease, &ttl) == ETCD_ELEASE);
}

/* ------------------------------------------------------------ watches */

typedef struct Seen {
  etcd_EventType type[64];
  char key[64][32];
  int64_t rev[64];
  size_t batch[64]; /* which call reported it */
  size_t n, calls, want;
} Seen;

static int collect(void *ud, const etcd_WatchBatch *b) {
  Seen *s = ud;
  for (size_t i = 0; i < b->n && s->n < 64; i++) {
    s->type[s->n] = b->events[i].type;
    snprintf(s->key[s->n], sizeof s->key[0], "%s", b->events[i].kv.key);
    s->rev[s->n] = b->events[i].kv.mod_revision;
    s->batch[s->n] = s->calls;
    s->n++;
  }
  s->calls++;
  return s->n >= s->want;
}

static void test_watch_history(etcd *e) {
  int64_t rev0 = 0;
  CHECK(etcd_put(e, "jiti/t/w/a", 10, "1", 1, 0, &rev0) == ETCD_OK);
  CHECK(etcd_put(e, "jiti/t/w/b", 10, "2", 1, 0, NULL) == ETCD_OK);
  CHECK(etcd_delete(e, "jiti/t/w/a", 10, NULL, 0, NULL) == ETCD_OK);
  etcd_txn *t = etcd_txn_new();
  etcd_txn_put(t, ETCD_SUCCESS, "jiti/t/w/c", 10, "3", 1, 0);
  etcd_txn_put(t, ETCD_SUCCESS, "jiti/t/w/d", 10, "4", 1, 0);
  etcd_TxnResult res;
  CHECK(etcd_txn_commit(e, t, &res) == ETCD_OK && res.succeeded);
  int64_t last = res.revision;
  etcd_txn_result_free(&res);
  etcd_txn_free(t);
  CHECK(etcd_put(e, "jiti/t/x", 8, "outside", 7, 0, NULL) == ETCD_OK);

  char end[32];
  size_t elen = etcd_prefix_end("jiti/t/w/", 9, end);
  Seen s = {.want = 5};
  etcd_Watch w = {.key = "jiti/t/w/", .key_len = 9, .end = end, .end_len = elen, .start_revision = rev0};
  CHECK(etcd_watch(e, &w, collect, &s) == ETCD_ESTOPPED);
  CHECK(s.n == 5);
  CHECK(s.type[0] == ETCD_PUT && !strcmp(s.key[0], "jiti/t/w/a") && s.rev[0] == rev0);
  CHECK(s.type[1] == ETCD_PUT && !strcmp(s.key[1], "jiti/t/w/b"));
  CHECK(s.type[2] == ETCD_DELETE && !strcmp(s.key[2], "jiti/t/w/a"));
  CHECK(!strcmp(s.key[3], "jiti/t/w/c") && !strcmp(s.key[4], "jiti/t/w/d") && s.rev[3] == last && s.rev[4] == last);
  CHECK(s.batch[3] == s.batch[4]); /* one transaction, one call */
  CHECK(w.next_revision == last + 1);

  /* compacted history: the watch says so, and from where it could resume */
  CHECK(etcd_compact(e, last) == ETCD_OK);
  CHECK(etcd_compact(e, last) == ETCD_ECOMPACTED);
  Seen s2 = {.want = 1};
  w.start_revision = rev0;
  CHECK(etcd_watch(e, &w, collect, &s2) == ETCD_ECOMPACTED && w.compact_revision == last && s2.n == 0);
  CHECK(has(etcd_errmsg(e), "compacted"));
  etcd_Range r;
  CHECK(etcd_range(e, "jiti/t/w/a", 10, NULL, 0, rev0, 0, 0, &r) == ETCD_ECOMPACTED);
}

/* A watch on its own thread and client, from now on. */
typedef struct Watcher {
  pthread_t th;
  etcd *e;
  etcd_Watch w;
  char end[32];
  Seen s;
  volatile sig_atomic_t stop;
  etcd_Error err;
} Watcher;

static void *watch_thread(void *ud) {
  Watcher *x = ud;
  x->err = etcd_watch(x->e, &x->w, collect, &x->s);
  return NULL;
}

static void watcher_start(Watcher *x, const char *prefix, size_t want, long window_ms) {
  memset(x, 0, sizeof *x);
  x->e = client();
  size_t elen = etcd_prefix_end(prefix, strlen(prefix), x->end);
  x->w = (etcd_Watch){
    .key = prefix, .key_len = strlen(prefix), .end = x->end, .end_len = elen, .stop = &x->stop, .window_ms = window_ms};
  x->s.want = want;
  pthread_create(&x->th, NULL, watch_thread, x);
  sleep_ms(300); /* the stream is open (what a live watch misses before that is not its fault) */
}

static void watcher_join(Watcher *x) {
  pthread_join(x->th, NULL);
  etcd_free(x->e);
}

static void test_watch_live(etcd *e) {
  Watcher x;
  watcher_start(&x, "jiti/t/live/", 2, 0);
  CHECK(etcd_put(e, "jiti/t/live/1", 13, "a", 1, 0, NULL) == ETCD_OK);
  CHECK(etcd_put(e, "jiti/t/live/2", 13, "b", 1, 0, NULL) == ETCD_OK);
  watcher_join(&x);
  CHECK(x.err == ETCD_ESTOPPED && x.s.n == 2 && !strcmp(x.s.key[0], "jiti/t/live/1") &&
        !strcmp(x.s.key[1], "jiti/t/live/2"));

  /* the stop flag ends a quiet watch */
  watcher_start(&x, "jiti/t/quiet/", 1, 0);
  x.stop = 1;
  watcher_join(&x);
  CHECK(x.err == ETCD_ESTOPPED && x.s.n == 0);

  /* short windows: the stream is reopened many times, nothing missed or doubled */
  watcher_start(&x, "jiti/t/win/", 20, 150);
  char k[32];
  for (int i = 0; i < 20; i++) {
    snprintf(k, sizeof k, "jiti/t/win/%02d", i);
    CHECK(etcd_put(e, k, strlen(k), "v", 1, 0, NULL) == ETCD_OK);
    sleep_ms(40);
  }
  watcher_join(&x);
  CHECK(x.err == ETCD_ESTOPPED && x.s.n == 20);
  int inorder = 1;
  for (size_t i = 0; i < x.s.n; i++) {
    snprintf(k, sizeof k, "jiti/t/win/%02zu", i);
    inorder &= !strcmp(x.s.key[i], k);
  }
  CHECK(inorder);
}

static void test_status(etcd *e) {
  etcd_Status st;
  CHECK(etcd_status(e, &st) == ETCD_OK);
  CHECK(!strncmp(st.version, "3.", 2) && st.leader != 0 && st.member_id != 0 && st.db_size > 0 && st.raft_term > 0);
}

/* ------------------------------------------------------------ losing members */

static void test_one_member_lost(etcd *e) {
  /* the watch and the writer both start on member 0 */
  Watcher x;
  watcher_start(&x, "jiti/t/fail/", 10, 0);
  char k[48];
  for (int i = 0; i < 5; i++) {
    snprintf(k, sizeof k, "jiti/t/fail/%d", i);
    CHECK(etcd_put(e, k, strlen(k), "v", 1, 0, NULL) == ETCD_OK);
  }
  CHECK_STR(etcd_member(e), member_url[0]);
  kill(pids[0], SIGKILL);
  sleep_ms(100);
  /* writes go on through the others (a new election, if m0 led, takes a moment) */
  for (int i = 5; i < 10; i++) {
    snprintf(k, sizeof k, "jiti/t/fail/%d", i);
    /* a put that met the election may be uncertain: read back before sending it again */
    etcd_Error err = ETCD_EUNAVAILABLE;
    for (int tries = 0; tries < 20; tries++) {
      err = etcd_put(e, k, strlen(k), "v", 1, 0, NULL);
      if (err != ETCD_EUNAVAILABLE && err != ETCD_EUNCERTAIN) break;
      fprintf(stderr, "  during the election: %s: %s\n", etcd_error_name(err), etcd_errmsg(e));
      sleep_ms(200);
      etcd_Range r;
      if (etcd_range(e, k, strlen(k), NULL, 0, 0, 0, 0, &r) == ETCD_OK && r.n == 1) err = ETCD_OK;
      etcd_range_free(&r);
      if (!err) break;
    }
    CHECK(err == ETCD_OK);
    if (err) fprintf(stderr, "  put %s: %s: %s\n", k, etcd_error_name(err), etcd_errmsg(e));
  }
  CHECK(strcmp(etcd_member(e), member_url[0]) != 0);
  watcher_join(&x);
  /* the watch moved to another member: every event once, in order */
  CHECK(x.err == ETCD_ESTOPPED && x.s.n == 10);
  int inorder = 1;
  for (size_t i = 0; i < x.s.n; i++) {
    snprintf(k, sizeof k, "jiti/t/fail/%zu", i);
    inorder &= !strcmp(x.s.key[i], k);
  }
  CHECK(inorder);

  /* a client of the lost member alone */
  char err[256];
  etcd *lone = etcd_new(member_url[0], err, sizeof err);
  etcd_Range r;
  CHECK(etcd_range(lone, "k", 1, NULL, 0, 0, 0, 0, &r) == ETCD_EUNAVAILABLE &&
        has(etcd_errmsg(lone), "cannot be reached"));
  etcd_free(lone);
}

static void test_quorum_lost(etcd *e) {
  kill(pids[1], SIGKILL);
  sleep_ms(100);
  etcd_set_timeouts(e, 0, 1500);
  etcd_Error err = etcd_put(e, "jiti/t/noquorum", 15, "v", 1, 0, NULL);
  CHECK(err == ETCD_EUNCERTAIN || err == ETCD_EUNAVAILABLE);
  CHECK(etcd_errmsg(e)[0] != 0);
  fprintf(stderr, "  a put without quorum: %s: %s\n", etcd_error_name(err), etcd_errmsg(e));
  etcd_Range r;
  err = etcd_range(e, "jiti/t/noquorum", 15, NULL, 0, 0, 0, 0, &r);
  CHECK(err == ETCD_EUNAVAILABLE && has(etcd_errmsg(e), "no etcd member answered"));
  fprintf(stderr, "  a read without quorum: %s: %s\n", etcd_error_name(err), etcd_errmsg(e));
  int64_t lease;
  CHECK(etcd_lease_grant(e, 5, 0, &lease, NULL) != ETCD_OK);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_etcd URL,URL,URL PID,PID,PID (run by tests/etcd.sh)\n");
    return 2;
  }
  snprintf(urls, sizeof urls, "%s", argv[1]);
  if (sscanf(argv[2], "%d,%d,%d", &pids[0], &pids[1], &pids[2]) != 3) return 2;
  const char *p = urls;
  for (int i = 0; i < 3; i++) {
    size_t n = strcspn(p, ",");
    snprintf(member_url[i], sizeof member_url[i], "%.*s", (int)n, p);
    p += n + (p[n] == ',');
  }
  test_new();
  etcd *e = client();
  test_kv(e);
  test_txn(e);
  test_limits(e);
  test_leases(e);
  test_watch_history(e);
  test_watch_live(e);
  test_status(e);
  test_one_member_lost(e);
  test_quorum_lost(e);
  etcd_free(e);
  return CHECK_DONE();
}
