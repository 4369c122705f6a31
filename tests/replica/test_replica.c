/*
** test_replica.c — a world's revisions in etcd (controller/replica/)
** against a real 3-member etcd cluster (tests/etcd.sh starts it): two
** kernels' replicas of one world and their stores.  The leader wins the
** key, takes over the generation, commits revisions (one large group split
** over etcd's limits) that a standby's store applies and checks; then the
** leader stops renewing (as a kernel stopped with SIGSTOP would), the
** standby wins once the lease lapses and moves the generation past every
** one the old leader could hand out, and the old leader, resumed, writes
** nothing: its commit is fenced, its store found diverged.  An entry too
** large for etcd is refused with its name.  etcd's history is compacted
** behind the commits.  A commit whose answer is lost (a proxy in front of
** etcd breaks the connection once etcd applied it) is found landed when
** the world is still the kernel's, and is uncertain, never fenced, when
** the lease went meanwhile, or when its retry is refused for another
** reason.
**
**   test_replica URL,URL,URL PID,PID,PID
*/
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "replica.h"
#include "store.h"

static char urls[1024];
static char tmp[] = "/tmp/jiti-replica-XXXXXX";

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int has(const char *s, const char *needle) { return s && strstr(s, needle) != NULL; }

static replica *rep(const char *world) {
  char err[256];
  replica *r = replica_new(urls, world, err, sizeof err);
  if (!r) {
    fprintf(stderr, "replica_new: %s\n", err);
    exit(1);
  }
  return r;
}

static store_env *open_store(const char *name) {
  char dir[256], err[256];
  snprintf(dir, sizeof dir, "%s/%s", tmp, name);
  store_env *s;
  if (store_open(dir, 0, &s, err, sizeof err)) {
    fprintf(stderr, "store_open %s: %s\n", dir, err);
    exit(1);
  }
  return s;
}

/* Publish a revision of n data entries named PREFIX0.. with values of size
** bytes (the entry's text then its number) at generation gen; its number. */
static uint64_t publish(store_env *s, const char *prefix, int n, size_t size, uint64_t gen, const char *remove) {
  uint64_t cur = 0, rev = 0;
  store_current(s, &cur);
  store_entry *ch = calloc((size_t)n + 1, sizeof *ch);
  char(*names)[32] = calloc((size_t)n + 1, sizeof *names);
  char *bytes = malloc(size + 32);
  memset(bytes, 'v', size + 32);
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], "%s%d", prefix, i);
    ch[i] = (store_entry){store_kind_parse("data"), names[i], bytes, size};
  }
  snprintf(bytes, 32, "%llu", (unsigned long long)gen);
  store_key rm = {store_kind_parse("data"), remove};
  store_rev_info info = {
    .kind = STORE_REV_APPLICATION, .generation = gen, .summary = "a test revision", .kernel_version = "test"};
  int se = store_publish(s, cur, &info, ch, (size_t)n, remove ? &rm : NULL, remove ? 1 : 0, &rev);
  if (se) fprintf(stderr, "store_publish: %s\n", store_errmsg(s));
  free(ch);
  free(names);
  free(bytes);
  return se ? 0 : rev;
}

/* replica_publish, its failure told */
static replica_Error rpub(replica *r, store_env *s, uint64_t from, uint64_t to) {
  replica_Error err = replica_publish(r, s, from, to, NULL);
  if (err)
    fprintf(stderr, "  publish %llu..%llu: %s: %s\n", (unsigned long long)from, (unsigned long long)to,
            replica_error_name(err), replica_errmsg(r));
  return err;
}

static int lookup(store_env *s, const char *name) {
  uint8_t h[32];
  return store_lookup(s, store_kind_parse("data"), name, h) == STORE_OK;
}

static void test_new(void) {
  char err[256];
  CHECK(!replica_new(urls, "", err, sizeof err) && has(err, "is not 1-64"));
  CHECK(!replica_new(urls, "a/b", err, sizeof err));
  CHECK(!replica_new(urls, "..", err, sizeof err));
  CHECK(!replica_new("nonsense", "w", err, sizeof err) && has(err, "http://HOST:PORT"));
  CHECK_STR(replica_error_name(REPLICA_EFENCED), "fenced");
}

static void test_failover(void) {
  replica *a = rep("sales"), *b = rep("sales");
  store_env *sa = open_store("a"), *sb = open_store("b");
  replica_Head h;
  CHECK(replica_head(a, &h) == REPLICA_OK && h.current == 0 && h.ceiling == 0 && !h.leader[0]);

  /* A wins, B sees who leads */
  int won = 0;
  int64_t t0 = now_ms();
  CHECK(replica_campaign(a, 2, "kernel-a", t0, &won) == REPLICA_OK && won);
  CHECK(replica_campaign(b, 2, "kernel-b", now_ms(), &won) == REPLICA_OK && !won && has(replica_errmsg(b), "kernel-a"));
  CHECK(replica_may_write(a, t0) && !replica_may_write(b, t0));
  uint64_t first = 0;
  CHECK(replica_take_over(a, 5, &first) == REPLICA_OK && first == 6 &&
        replica_ceiling(a) == 6 + REPLICA_GENERATION_BLOCK);
  CHECK(replica_take_over(b, 0, &first) == REPLICA_EFENCED);
  CHECK(replica_head(b, &h) == REPLICA_OK && !strcmp(h.leader, "kernel-a") && h.ceiling == 1006 && h.leader_lease != 0);

  /* A commits three revisions (one removes a key); B's store follows */
  CHECK(publish(sa, "k", 3, 10, 6, NULL) == 1);
  CHECK(publish(sa, "k", 2, 12, 7, NULL) == 2);
  CHECK(publish(sa, "m", 1, 5, 8, "k2") == 3);
  CHECK(replica_renew(a, now_ms()) == REPLICA_OK);
  CHECK(rpub(a, sa, 1, 3) == REPLICA_OK);
  CHECK(replica_head(b, &h) == REPLICA_OK && h.current == 3 && h.ceiling == 1006);
  uint64_t applied = 0;
  CHECK(replica_catch_up(b, sb, &applied) == REPLICA_OK && applied == 3);
  CHECK(lookup(sb, "k0") && lookup(sb, "k1") && !lookup(sb, "k2") && lookup(sb, "m0"));
  uint64_t gen = 0;
  CHECK(store_generation(sb, &gen) == STORE_OK && gen == 8);
  /* nothing new: nothing applied, the store checked all the same */
  CHECK(replica_catch_up(b, sb, &applied) == REPLICA_OK && applied == 3);

  /* a group larger than one etcd transaction: 300 entries of 4 KiB */
  CHECK(publish(sa, "big", 300, 4096, 9, NULL) == 4);
  CHECK(publish(sa, "n", 1, 5, 10, NULL) == 5);
  CHECK(replica_renew(a, now_ms()) == REPLICA_OK);   /* (a slow build may have spent the lease meanwhile) */
  CHECK(rpub(a, sa, 4, 5) == REPLICA_OK);
  CHECK(replica_catch_up(b, sb, &applied) == REPLICA_OK && applied == 5);
  CHECK(lookup(sb, "big0") && lookup(sb, "big299") && lookup(sb, "n0"));

  /* A stops renewing (stopped, as by SIGSTOP): by its own clock it stops
     writing before the lease can lapse at etcd... */
  int64_t stopped = now_ms();
  CHECK(replica_renew(a, stopped) == REPLICA_OK);   /* its last renewal: the deadline counts from it */
  CHECK(replica_may_write(a, stopped) && !replica_may_write(a, stopped + 2000));
  /* ...and B wins once it has */
  won = 0;
  for (int i = 0; i < 150 && !won; i++) {
    usleep(100000);
    CHECK(replica_campaign(b, 2, "kernel-b", now_ms(), &won) == REPLICA_OK);
  }
  CHECK(won);
  uint64_t floor = 0;
  store_generation(sb, &floor);
  CHECK(replica_take_over(b, floor, &first) == REPLICA_OK);
  /* past every generation A could hand out (below its ceiling) */
  CHECK(first == 1006 && replica_ceiling(b) == 2006);

  /* A, resumed, commits a revision it made meanwhile: fenced, nothing written */
  CHECK(publish(sa, "late", 1, 5, 11, NULL) == 6);
  CHECK(rpub(a, sa, 6, 6) == REPLICA_EFENCED && has(replica_errmsg(a), "kernel-b"));
  CHECK(!replica_may_write(a, now_ms()));
  CHECK(rpub(a, sa, 6, 6) == REPLICA_EFENCED);
  CHECK(replica_renew(a, now_ms()) == REPLICA_EFENCED);
  CHECK(replica_head(a, &h) == REPLICA_OK && h.current == 5 && !strcmp(h.leader, "kernel-b") && h.ceiling == 2006);

  /* B serves: its own revision 6 */
  CHECK(publish(sb, "b", 1, 5, first, NULL) == 6);
  CHECK(rpub(b, sb, 6, 6) == REPLICA_OK);
  CHECK(replica_renew(b, now_ms()) == REPLICA_OK);
  /* A's store holds another revision 6: it cannot stand by on it */
  CHECK(replica_catch_up(a, sa, &applied) == REPLICA_EDIVERGED && has(replica_errmsg(a), "revision 6"));
  /* a fresh standby directory fills from etcd */
  store_env *sc = open_store("c");
  CHECK(replica_catch_up(a, sc, &applied) == REPLICA_OK && applied == 6 && lookup(sc, "b0") && !lookup(sc, "late0"));
  /* a store ahead of etcd diverged too */
  CHECK(publish(sa, "more", 1, 5, 12, NULL) == 7);
  CHECK(replica_catch_up(a, sa, &applied) == REPLICA_EDIVERGED && has(replica_errmsg(a), "no one"));

  /* B resigns: the key goes with its lease */
  CHECK(replica_resign(b) == REPLICA_OK && !replica_may_write(b, now_ms()));
  CHECK(replica_head(a, &h) == REPLICA_OK && !h.leader[0]);
  CHECK(rpub(b, sb, 6, 6) == REPLICA_EFENCED);

  store_close(sa);
  store_close(sb);
  store_close(sc);
  replica_free(a);
  replica_free(b);
}

static void test_too_big(void) {
  replica *a = rep("big");
  store_env *s = open_store("d");
  int won = 0;
  uint64_t first;
  CHECK(replica_campaign(a, 5, "kernel-d", now_ms(), &won) == REPLICA_OK && won);
  CHECK(replica_take_over(a, 0, &first) == REPLICA_OK && first == 1);
  CHECK(publish(s, "huge", 1, (size_t)1200 << 10, 1, NULL) == 1);
  CHECK(rpub(a, s, 1, 1) == REPLICA_ETOOBIG && has(replica_errmsg(a), "entry data huge0 of revision 1") &&
        has(replica_errmsg(a), "1.5 MiB"));
  replica_Head h;
  CHECK(replica_head(a, &h) == REPLICA_OK && h.current == 0);
  CHECK(replica_resign(a) == REPLICA_OK);
  store_close(s);
  replica_free(a);
}

/* Every `every` commits the history older than the commit `every` before
** is compacted: a read at a revision before it is refused, the world is
** whole, and a fresh standby still fills from etcd. */
static void test_compaction(void) {
  replica *a = rep("compact"), *b = rep("compact");
  store_env *s = open_store("e"), *fresh = open_store("f");
  int won = 0;
  uint64_t first, applied = 0;
  CHECK(replica_campaign(a, 5, "kernel-e", now_ms(), &won) == REPLICA_OK && won);
  CHECK(replica_take_over(a, 0, &first) == REPLICA_OK);
  replica_set_compaction(a, 2);
  int64_t done = 0;
  char msg[256] = "";
  CHECK(replica_compact(a, &done, msg, sizeof msg) == REPLICA_OK && done == 0);   /* none due */
  for (uint64_t i = 1; i <= 6; i++) {
    CHECK(publish(s, "row", 1, 16, first + i, NULL) == i);
    CHECK(rpub(a, s, i, i) == REPLICA_OK);
    if (i < 4) CHECK(replica_compaction_due(a) == 0);   /* the first mark is set at 2, due at 4 */
  }
  int64_t due = replica_compaction_due(a);
  CHECK(due > 0);
  CHECK(replica_compact(a, &done, msg, sizeof msg) == REPLICA_OK && done == due);
  CHECK(replica_compaction_due(a) == 0);
  etcd_Range g;
  CHECK(etcd_range(replica_etcd(a), "jiti/compact/current", 20, NULL, 0, done - 1, 0, 0, &g) == ETCD_ECOMPACTED);
  CHECK(etcd_range(replica_etcd(a), "jiti/compact/current", 20, NULL, 0, done, 0, 0, &g) == ETCD_OK);
  etcd_range_free(&g);
  replica_Head h;
  CHECK(replica_head(a, &h) == REPLICA_OK && h.current == 6);
  CHECK(replica_catch_up(b, fresh, &applied) == REPLICA_OK && applied == 6);
  CHECK(lookup(fresh, "row0"));
  CHECK(replica_resign(a) == REPLICA_OK);
  store_close(s);
  store_close(fresh);
  replica_free(a);
  replica_free(b);
}

/* ------------------------------------------------ a proxy that loses answers */

/* A TCP proxy on loopback in front of the first etcd member.  Armed, it
** forwards the next request and, once etcd's answer comes back (etcd
** applied it), runs its hook and breaks the connection without passing the
** answer on: the client cannot tell whether its write landed. */
typedef struct Proxy {
  int lfd, port, up_port;
  int drop;                  /* (atomic) the next answer is lost */
  int refuse;                /* (atomic) the next request is refused, as etcd refuses a malformed one */
  void (*hook)(void *);      /* run as it is lost (NULL: none) */
  void *arg;
} Proxy;

typedef struct Pipe {
  Proxy *p;
  int c;
} Pipe;

static void *proxy_pipe(void *arg) {
  Pipe *pp = arg;
  Proxy *p = pp->p;
  int c = pp->c;
  free(pp);
  int u = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->up_port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof a) != 0) goto out;
  char buf[1 << 16];
  for (;;) {
    struct pollfd f[2] = {{c, POLLIN, 0}, {u, POLLIN, 0}};
    if (poll(f, 2, -1) < 0) break;
    if (f[0].revents) {
      ssize_t n = read(c, buf, sizeof buf);
      if (n <= 0) break;
      if (__atomic_exchange_n(&p->refuse, 0, __ATOMIC_SEQ_CST)) {
        static const char no[] = "{\"error\":\"refused by the test\",\"code\":3,\"message\":\"refused by the test\"}";
        char head[200];
        int hn = snprintf(head, sizeof head, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n", sizeof no - 1);
        if (write(c, head, (size_t)hn) == hn && write(c, no, sizeof no - 1)) {}
        break;
      }
      if (write(u, buf, (size_t)n) != n) break;
    }
    if (f[1].revents) {
      ssize_t n = read(u, buf, sizeof buf);
      if (n <= 0) break;
      if (__atomic_exchange_n(&p->drop, 0, __ATOMIC_SEQ_CST)) {
        if (p->hook) p->hook(p->arg);
        break;   /* the answer is lost with the connection */
      }
      if (write(c, buf, (size_t)n) != n) break;
    }
  }
out:
  if (u >= 0) close(u);
  close(c);
  return NULL;
}

static void *proxy_accept(void *arg) {
  Proxy *p = arg;
  for (;;) {
    int c = accept(p->lfd, NULL, NULL);
    if (c < 0) return NULL;
    Pipe *pp = malloc(sizeof *pp);
    pthread_t t;
    if (!pp) exit(1);
    *pp = (Pipe){p, c};
    if (pthread_create(&t, NULL, proxy_pipe, pp) != 0) exit(1);
    pthread_detach(t);
  }
}

/* Start p in front of the first member of urls ("http://127.0.0.1:PORT,..."). */
static void proxy_start(Proxy *p) {
  const char *colon = strrchr(strtok(strdup(urls), ","), ':');
  p->up_port = colon ? atoi(colon + 1) : 0;
  p->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  pthread_t t;
  if (!p->up_port || p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->lfd, 16) != 0 ||
      getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0 || pthread_create(&t, NULL, proxy_accept, p) != 0) {
    fprintf(stderr, "cannot start the proxy\n");
    exit(1);
  }
  pthread_detach(t);
  p->port = ntohs(a.sin_port);
}

/* The hook: the leader's lease revoked (its key goes), as when it lapses
** while the answer is on its way. */
typedef struct Revoke {
  etcd *e;
  int64_t lease;
} Revoke;

static void revoke_lease(void *arg) {
  Revoke *v = arg;
  CHECK(etcd_lease_revoke(v->e, v->lease) == ETCD_OK);
}

/* The hook: the retry of the lost try refused. */
static void refuse_next(void *arg) { __atomic_store_n(&((Proxy *)arg)->refuse, 1, __ATOMIC_SEQ_CST); }

static void test_unanswered(void) {
  static Proxy p;
  proxy_start(&p);
  char via[64], err[256];
  snprintf(via, sizeof via, "http://127.0.0.1:%d", p.port);
  replica *a = replica_new(via, "lost", err, sizeof err), *b = rep("lost");
  CHECK(a != NULL);
  if (!a) return;
  store_env *s = open_store("g");
  int won = 0;
  uint64_t first;
  replica_Head h;
  CHECK(replica_campaign(a, 5, "kernel-g", now_ms(), &won) == REPLICA_OK && won);
  CHECK(replica_take_over(a, 0, &first) == REPLICA_OK);
  CHECK(publish(s, "r", 1, 8, first, NULL) == 1);
  CHECK(rpub(a, s, 1, 1) == REPLICA_OK);

  /* the answer lost while the world is still this kernel's: the retry's
     compare fails, and its reads show the try landed */
  CHECK(publish(s, "r", 1, 9, first + 1, NULL) == 2);
  __atomic_store_n(&p.drop, 1, __ATOMIC_SEQ_CST);
  CHECK(rpub(a, s, 2, 2) == REPLICA_OK);
  CHECK(replica_head(b, &h) == REPLICA_OK && h.current == 2 && !strcmp(h.leader, "kernel-g"));

  /* lost while the lease goes: the commit is in etcd, so it must not be
     called fenced (which promises nothing of it is): uncertain */
  Revoke v = {replica_etcd(b), replica_lease(a)};
  p.hook = revoke_lease;
  p.arg = &v;
  CHECK(publish(s, "r", 1, 10, first + 2, NULL) == 3);
  __atomic_store_n(&p.drop, 1, __ATOMIC_SEQ_CST);
  replica_Error re = replica_publish(a, s, 3, 3, NULL);
  CHECK(replica_head(b, &h) == REPLICA_OK && h.current == 3 && !h.leader[0]);
  CHECK(re == REPLICA_EUNCERTAIN && has(replica_errmsg(a), "may hold"));
  if (re != REPLICA_EUNCERTAIN) fprintf(stderr, "  publish 3: %s: %s\n", replica_error_name(re), replica_errmsg(a));
  CHECK(!replica_may_write(a, now_ms()));
  p.hook = NULL;

  /* lost, and its retry refused for another reason: that says nothing of
     the try that got no answer — uncertain, not a failure */
  replica *a2 = replica_new(via, "lost", err, sizeof err);
  CHECK(a2 && replica_campaign(a2, 5, "kernel-g2", now_ms(), &won) == REPLICA_OK && won);
  CHECK(a2 && replica_take_over(a2, first + 2, &first) == REPLICA_OK);
  CHECK(publish(s, "r", 1, 11, first, NULL) == 4);
  p.hook = refuse_next;
  p.arg = &p;
  __atomic_store_n(&p.drop, 1, __ATOMIC_SEQ_CST);
  re = a2 ? replica_publish(a2, s, 4, 4, NULL) : REPLICA_EINVAL;
  CHECK(replica_head(b, &h) == REPLICA_OK && h.current == 4);
  CHECK(re == REPLICA_EUNCERTAIN && a2 && has(replica_errmsg(a2), "may hold"));
  if (re != REPLICA_EUNCERTAIN && a2) fprintf(stderr, "  publish 4: %s: %s\n", replica_error_name(re), replica_errmsg(a2));
  p.hook = NULL;
  if (a2) {
    replica_resign(a2);
    replica_free(a2);
  }
  store_close(s);
  replica_free(a);
  replica_free(b);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_replica URL,URL,URL PID,PID,PID (run by tests/etcd.sh)\n");
    return 2;
  }
  snprintf(urls, sizeof urls, "%s", argv[1]);
  if (!mkdtemp(tmp)) return 2;
  test_new();
  test_failover();
  test_too_big();
  test_compaction();
  test_unanswered();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
  return CHECK_DONE();
}
