/*
** drepl.c — `jiti kernel --replicate URLS --world NAME`: the kernel as the
** leader of a world replicated through etcd, or a standby waiting to take
** it over (daemon.h, docs/replication.md).
**
** Before the kernel serves (drepl_open), it wins the world's leader key:
** at once, or — with --standby — after applying every revision etcd has
** while the leader lives and campaigning until its lease lapses.  Then its
** store is brought to etcd's CURRENT (an empty world is seeded from the
** store), and the generation moved past every one a former leader could
** have handed out.  While it serves, a thread of its own renews the lease
** (drepl_start); each group the store writer writes is committed to etcd
** before it is synced and answered (drepl_commit, on the writer's thread),
** and so is each revision published on its own (on the loop).  When the
** lease cannot be renewed in time, or a commit's compare fails, the kernel
** is fenced: nothing more is written or acknowledged, and it shuts down
** (drepl_fence).
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "cli.h"
#include "daemon.h"
#include "replica.h"

struct DRepl {
  replica *r;
  int64_t lease_ms;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int running, stop;
  int efd;       /* the renewer wakes the loop through it when fenced */
  char why[512]; /* why the lease was lost (under mu) */
};

static int64_t now_ms(void) { return (int64_t)(mono_now() * 1000.0); }

int drepl_option(int argc, char **argv, int *i, DReplOpts *o, char *err, size_t errlen) {
  const char *a = argv[*i];
  if (!strcmp(a, "--standby")) {
    o->standby = 1;
    return 1;
  }
  if (strcmp(a, "--replicate") && strcmp(a, "--world") && strcmp(a, "--lease")) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, errlen, "%s needs a value", a);
    return -1;
  }
  const char *v = argv[++*i];
  if (!strcmp(a, "--replicate")) o->urls = v;
  else if (!strcmp(a, "--world")) o->world = v;
  else {
    char *end;
    long s = strtol(v, &end, 10);
    if (*end || end == v || s < 2 || s > 600) {
      snprintf(err, errlen, "--lease needs a number of seconds from 2 to 600");
      return -1;
    }
    o->lease = (int)s;
  }
  return 1;
}

int drepl_check(const DReplOpts *o, char *err, size_t errlen) {
  if (!o->urls && !o->world && !o->standby && !o->lease) return 0;
  if (!o->urls || !o->world) {
    snprintf(err, errlen, "--replicate URLS and --world NAME go together (--lease and --standby need both)");
    return -1;
  }
  return 0;
}

/* A standby's wait: 1 when SIGTERM or SIGINT came (they are blocked until
** the loop runs; the wait takes them). */
static int wait_ms(long ms) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  return sigtimedwait(&set, NULL, &ts) > 0;
}

/* The store's CURRENT equal to etcd's, or etcd's empty world seeded from
** the store (its initial revision made first when it has none). */
static int bring_up(Daemon *D, store_env *s, char *err, size_t errlen) {
  DRepl *R = D->repl;
  replica_Head h;
  uint64_t cur = 0, applied = 0;
  replica_Error re = replica_head(R->r, &h);
  if (!re && h.current == 0) {
    if (store_current(s, &cur) != STORE_OK) {
      snprintf(err, errlen, "%s", store_errmsg(s));
      return -1;
    }
    if (cur == 0) {
      store_rev_info info = {STORE_REV_INITIAL, 1, 0, JITI_VERSION, "initial: an empty world", NULL, NULL};
      if (store_publish(s, 0, &info, NULL, 0, NULL, 0, &cur) != STORE_OK) {
        snprintf(err, errlen, "cannot create the initial revision: %s", store_errmsg(s));
        return -1;
      }
    }
    dlog(D, "world %s is new in etcd: seeding it with the store's %" PRIu64 " revision%s", D->repl_opts.world, cur,
         cur == 1 ? "" : "s");
    re = replica_publish(R->r, s, 1, cur, NULL);
  } else if (!re) {
    re = replica_catch_up(R->r, s, &applied);
  }
  if (re) {
    snprintf(err, errlen, "%s", replica_errmsg(R->r));
    return -1;
  }
  return 0;
}

/* A kernel's identity as the leader key and a standby's report hold it
** (JSON: host, pid, store, and listen: its --listen HOST:PORT; a standby's with the revision and generation
** it has applied, when revision >= 0).  -1 when it does not fit. */
static int identity(const char *host, const char *dir, const char *listen, int64_t revision, uint64_t gen, char *out,
                    size_t cap) {
  json_t *o = json_pack("{s:s, s:i, s:s}", "host", host, "pid", (int)getpid(), "store", dir);
  /* where clients on other machines reach it (net.h's leader lookup) */
  if (o && listen) json_object_set_new(o, "listen", json_string(listen + strlen("tcp://")));
  if (o && revision >= 0) {
    json_object_set_new(o, "revision", json_integer((json_int_t)revision));
    json_object_set_new(o, "generation", json_integer((json_int_t)gen));
  }
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  int rc = text && strlen(text) < cap ? 0 : -1;
  if (!rc) memcpy(out, text, strlen(text) + 1);
  free(text);
  return rc;
}

int drepl_open(Daemon *D, store_env *s, char *err, size_t errlen) {
  const DReplOpts *o = &D->repl_opts;
  if (!o->urls) return 0;
  DRepl *R = calloc(1, sizeof *R);
  if (!R) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  R->efd = -1;
  pthread_mutex_init(&R->mu, NULL);
  pthread_cond_init(&R->cv, NULL);
  D->repl = R;
  if (!(R->r = replica_new(o->urls, o->world, err, errlen))) return -1;
  int lease = o->lease ? o->lease : DREPL_LEASE_DEFAULT;
  R->lease_ms = (int64_t)lease * 1000;
  char host[128] = "?", id[1024];
  gethostname(host, sizeof host - 1);
  if (identity(host, D->dir, D->net_opts.listen, -1, 0, id, sizeof id) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  char sid[300];
  snprintf(sid, sizeof sid, "%s:%d", host, (int)getpid());
  int won = 0, told = 0;
  for (;;) {
    replica_Error re = REPLICA_OK;
    uint64_t applied = 0;
    if (o->standby) {
      re = replica_catch_up(R->r, s, &applied);
      if (re == REPLICA_EDIVERGED || re == REPLICA_ESTORE || re == REPLICA_EPROTO) {
        snprintf(err, errlen, "%s", replica_errmsg(R->r));
        return -1;
      }
    }
    if (!re && o->standby) { /* for jiti replicate status: what this standby has */
      uint64_t gen = 0;
      store_generation(s, &gen);
      char text[1024];
      if (identity(host, D->dir, D->net_opts.listen, (int64_t)applied, gen, text, sizeof text) == 0)
        (void)replica_report(R->r, sid, text, lease, now_ms());
    }
    if (!re) re = replica_campaign(R->r, lease, id, now_ms(), &won);
    if (won) break;
    if (!o->standby) {
      snprintf(err, errlen, "%s", replica_errmsg(R->r));
      if (!re)
        snprintf(err + strlen(err), errlen - strlen(err),
                 "; start this kernel with --standby to take over when it goes");
      return -1;
    }
    if (!told || re) {
      dlog(D, "standing by for world %s (applied revision %" PRIu64 "): %s", o->world, applied, replica_errmsg(R->r));
      dlog_flush(D);
      told = 1;
    }
    if (wait_ms(200)) {
      (void)replica_report(R->r, sid, NULL, 0, 0);
      snprintf(err, errlen, "stopped while standing by");
      return 1;
    }
  }
  if (o->standby) (void)replica_report(R->r, sid, NULL, 0, 0); /* a standby no more */
  /* renewed from now on: bringing the store up and starting the worker may
     take longer than the lease */
  if (drepl_start(D, err, errlen) != 0) return -1;
  if (bring_up(D, s, err, errlen) != 0) {
    replica_resign(R->r);
    return -1;
  }
  uint64_t floor = 0, first = 0;
  if (store_generation(s, &floor) != STORE_OK) {
    snprintf(err, errlen, "%s", store_errmsg(s));
    return -1;
  }
  if (replica_take_over(R->r, floor, &first) != REPLICA_OK) {
    snprintf(err, errlen, "%s", replica_errmsg(R->r));
    return -1;
  }
  /* the kernel counts on from the store's mark: past the former leader's ceiling */
  if (first > floor + 1 && store_advance_generation(s, first - 1, NULL, NULL, 0, NULL) != STORE_OK) {
    snprintf(err, errlen, "%s", store_errmsg(s));
    return -1;
  }
  dlog(D, "leading world %s through etcd (lease %d s, generations from %" PRIu64 ")", o->world, lease, first);
  dlog_flush(D);
  return 0;
}

/* The renewer: every third of the lease, one renewal; fenced when one says
** the lease is gone or none succeeded in time. */
static void *renewer(void *arg) {
  DRepl *R = arg;
  int64_t every = R->lease_ms / 3;
  pthread_mutex_lock(&R->mu);
  while (!R->stop) {
    pthread_mutex_unlock(&R->mu);
    int64_t t0 = now_ms();
    replica_Error re = replica_renew(R->r, t0);
    int lost = re == REPLICA_EFENCED || !replica_may_write(R->r, now_ms());
    pthread_mutex_lock(&R->mu);
    if (lost) {
      snprintf(R->why, sizeof R->why, "%s",
               re == REPLICA_EFENCED ? replica_renew_errmsg(R->r) : "fenced: the lease was not renewed in time");
      uint64_t one = 1;
      (void)!write(R->efd, &one, sizeof one);
      break;
    }
    /* a failed renewal is tried again soon: the deadline is what counts */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t wait = re ? 200 : every;
    ts.tv_sec += wait / 1000;
    ts.tv_nsec += (wait % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    if (!R->stop) pthread_cond_timedwait(&R->cv, &R->mu, &ts);
  }
  pthread_mutex_unlock(&R->mu);
  return NULL;
}

static void fenced_ready(void *ud, int fd, unsigned r) {
  (void)r;
  Daemon *D = ud;
  uint64_t n;
  (void)!read(fd, &n, sizeof n);
  pthread_mutex_lock(&D->repl->mu);
  char why[sizeof D->repl->why];
  snprintf(why, sizeof why, "%s", D->repl->why);
  pthread_mutex_unlock(&D->repl->mu);
  drepl_fence(D, why);
}

int drepl_start(Daemon *D, char *err, size_t errlen) {
  DRepl *R = D->repl;
  if (!R || R->running) return 0;
  R->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (R->efd < 0 || dpoll_add(D->poll, R->efd, DPOLL_IN, RANK_SYNC, fenced_ready, D) != 0) {
    snprintf(err, errlen, "cannot watch the lease's renewals: %s", strerror(errno));
    return -1;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&R->thread, NULL, renewer, R);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) {
    snprintf(err, errlen, "cannot start the lease's renewals: %s", strerror(rc));
    return -1;
  }
  R->running = 1;
  return 0;
}

void drepl_stop(Daemon *D) {
  DRepl *R = D->repl;
  if (!R) return;
  if (R->running) {
    pthread_mutex_lock(&R->mu);
    R->stop = 1;
    pthread_cond_signal(&R->cv);
    pthread_mutex_unlock(&R->mu);
    pthread_join(R->thread, NULL);
  }
  /* a clean stop gives the world up at once: a standby need not wait for the lease */
  if (!D->fenced) replica_resign(R->r);
  if (R->efd >= 0) {
    if (D->poll) dpoll_del(D->poll, R->efd);
    close(R->efd);
  }
  replica_free(R->r);
  pthread_mutex_destroy(&R->mu);
  pthread_cond_destroy(&R->cv);
  free(R);
  D->repl = NULL;
}

int drepl_may_write(DRepl *R) { return !R || replica_may_write(R->r, now_ms()); }

int drepl_commit(DRepl *R, store_env *s, uint64_t from, uint64_t to, const replica_Events *ev, char *err,
                 size_t errlen) {
  if (!R || to < from) return 0;
  if (!replica_may_write(R->r, now_ms())) {
    snprintf(err, errlen, "fenced: this kernel's lease was not renewed in time; nothing was acknowledged");
    return -1;
  }
  replica_Error re = replica_publish(R->r, s, from, to, ev);
  if (re == REPLICA_OK) return 0;
  snprintf(err, errlen, "%s", replica_errmsg(R->r));
  /* sent, and no answer: etcd may hold it, so it may be neither undone nor acknowledged */
  return re == REPLICA_EUNCERTAIN || re == REPLICA_EUNAVAILABLE ? -2 : -1;
}

void drepl_uncertain(Daemon *D, const char *why) {
  dlog(D,
       "%s; whether etcd holds it is unknown, so this kernel answers nothing more and stops at once "
       "(a standby takes the world over from etcd)",
       why);
  dlog_flush(D);
  _exit(EXIT_FAIL);
}

void drepl_fence(Daemon *D, const char *why) {
  if (D->fenced) return;
  D->fenced = 1;
  snprintf(D->fence_why, sizeof D->fence_why, "%s", why);
  dlog(D, "%s; this kernel writes nothing more and stops", why);
  if (!D->stop_why) D->stop_why = D->fence_why;
}
