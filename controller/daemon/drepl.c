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
** is fenced: nothing more is written or acknowledged, it shuts down
** (drepl_fence) and restarts as a standby (drepl_restart).
**
** A standby serves reads once its store holds a revision of the world:
** drepl_open returns with it standing by, the kernel starts its worker from
** the store's CURRENT and listens, and every 200 ms (drepl_before, on the
** loop) it applies what etcd has, reports itself and campaigns.  Writes are
** refused naming the leader (drepl_refuses); a call runs as a preview,
** refused when it would change the world.  Its worker is replaced from the
** new CURRENT once revisions were applied, when idle and at most once a
** second.  When it wins, it restarts as the leader in the same process
** (drepl_restart), leading on with the lease it won with: a fresh kernel
** on the store, with the takeover of a leader's start.
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
#include "proto.h"
#include "replica.h"

#define STANDBY_TICK 0.2      /* seconds between a standby's rounds of catch-up, report, campaign */
#define STANDBY_REFRESH 1.0   /* at most one worker replacement a second on a standby */
#define DREPL_ADOPT_ENV "JITI_KERNEL_ADOPT_LEASE"   /* drepl_restart to the leader it becomes: "LEASE:TTL" */

struct DRepl {
  replica *r;
  int lease;         /* seconds */
  int64_t lease_ms;
  pthread_t thread, compactor;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int running, stop;
  int efd;       /* the renewer wakes the loop through it when fenced */
  char why[512]; /* why the lease was lost (under mu) */
  int64_t compacted;        /* etcd's history compacted to this revision (under mu) */
  char compact_err[512];    /* why the last compaction failed, "" (under mu) */
  /* standing by while serving reads (drepl_before, on the loop) */
  int standing, stepping_up;
  double next_tick, refreshed;
  uint64_t applied;          /* the store's CURRENT: applied from etcd (D->revision: what the worker serves) */
  uint64_t applied_gen;      /* the generation of the revision applied last */
  char host[128], id[1024], sid[300];
  char leader[1024];         /* the leader's identity as last read ("" : none) */
  char stopping[600];        /* why a standby stops */
};

static int64_t now_ms(void) { return (int64_t)(mono_now() * 1000.0); }

int drepl_option(int argc, char **argv, int *i, DReplOpts *o, char *err, size_t errlen) {
  const char *a = argv[*i];
  if (!strcmp(a, "--standby")) {
    o->standby = 1;
    o->standby_at = *i;
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
** (JSON: host, pid, store, and listen: its --listen HOST:PORT, where clients
** on other machines reach it).  -1 when it does not fit. */
static int identity(const char *host, const char *dir, const char *listen, char *out, size_t cap) {
  json_t *o = json_pack("{s:s, s:i, s:s}", "host", host, "pid", (int)getpid(), "store", dir);
  if (o && listen) json_object_set_new(o, "listen", json_string(listen + strlen("tcp://")));
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  int rc = text && strlen(text) < cap ? 0 : -1;
  if (!rc) memcpy(out, text, strlen(text) + 1);
  free(text);
  return rc;
}

/* A standby's report under standby/ (for jiti replicate status): its
** identity with the revision it has applied and that revision's
** generation (kept in R->applied_gen for its replies). */
static void standby_report(DRepl *R, store_env *s, uint64_t applied) {
  uint64_t gen = 0;
  store_manifest *m;
  if (applied && store_manifest_read_header(s, applied, &m) == STORE_OK) {
    gen = m->generation;
    store_free(m);
  }
  R->applied = applied;
  R->applied_gen = gen;
  json_t *o = json_loads(R->id, 0, NULL);
  char *text = o && !json_object_set_new(o, "revision", json_integer((json_int_t)applied)) &&
                   !json_object_set_new(o, "generation", json_integer((json_int_t)gen))
                 ? json_dumps(o, JSON_COMPACT) : NULL;
  if (text) (void)replica_report(R->r, R->sid, text, R->lease, now_ms());
  free(text);
  json_decref(o);
}

/* The leader's identity, as etcd has it now, into R->leader. */
static void read_leader(DRepl *R) {
  replica_Head h;
  if (replica_head(R->r, &h) == REPLICA_OK) snprintf(R->leader, sizeof R->leader, "%s", h.leader);
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
  R->lease = o->lease ? o->lease : DREPL_LEASE_DEFAULT;
  R->lease_ms = (int64_t)R->lease * 1000;
  snprintf(R->host, sizeof R->host, "?");
  gethostname(R->host, sizeof R->host - 1);
  if (identity(R->host, D->dir, D->net_opts.listen, R->id, sizeof R->id) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  snprintf(R->sid, sizeof R->sid, "%s:%d", R->host, (int)getpid());
  int won = 0, told = 0, standby = o->standby;
  /* a standby that won, restarted as the leader: it leads on with its lease */
  const char *adopt = getenv(DREPL_ADOPT_ENV);
  if (adopt) {
    long long lease = 0;
    int ttl = 0;
    int ok = sscanf(adopt, "%llx:%d", &lease, &ttl) == 2;
    unsetenv(DREPL_ADOPT_ENV);
    if (!ok || replica_adopt(R->r, (int64_t)lease, ttl, R->id, now_ms(), &won) != REPLICA_OK || !won) {
      dlog(D, "cannot lead world %s on with the lease won while standing by (%s): standing by again", o->world,
           ok ? replica_errmsg(R->r) : "a malformed lease");
      standby = 1;
    }
  }
  while (!won) {
    replica_Error re = REPLICA_OK;
    uint64_t applied = 0;
    if (standby) {
      re = replica_catch_up(R->r, s, &applied);
      if (re == REPLICA_EDIVERGED || re == REPLICA_ESTORE || re == REPLICA_EPROTO) {
        snprintf(err, errlen, "%s", replica_errmsg(R->r));
        return -1;
      }
    }
    if (!re && standby) standby_report(R, s, applied);
    if (!re) re = replica_campaign(R->r, R->lease, R->id, now_ms(), &won);
    if (won) break;
    if (!standby) {
      snprintf(err, errlen, "%s", replica_errmsg(R->r));
      if (!re)
        snprintf(err + strlen(err), errlen - strlen(err),
                 "; start this kernel with --standby to take over when it goes");
      return -1;
    }
    if (!re && applied) {   /* it has the world: it serves reads while it stands by */
      R->standing = 1;
      read_leader(R);
      dlog(D, "standing by for world %s, serving reads at revision %" PRIu64 " (generation %" PRIu64
           "); writes go to its leader %s", o->world, applied, R->applied_gen, R->leader[0] ? R->leader : "(none yet)");
      dlog_flush(D);
      return 0;
    }
    if (!told || re) {
      dlog(D, "standing by for world %s (applied revision %" PRIu64 "): %s", o->world, applied, replica_errmsg(R->r));
      dlog_flush(D);
      told = 1;
    }
    if (wait_ms(200)) {
      (void)replica_report(R->r, R->sid, NULL, 0, 0);
      snprintf(err, errlen, "stopped while standing by");
      return 1;
    }
  }
  if (standby) (void)replica_report(R->r, R->sid, NULL, 0, 0); /* a standby no more */
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
  dlog(D, "leading world %s through etcd (lease %d s, generations from %" PRIu64 ")", o->world, R->lease, first);
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

/* The compactor: etcd's history compacted behind the commits when due
** (replica_compact), on a thread of its own: a physical compaction of a
** large database takes a while, and neither a commit nor a renewal may
** wait for it. */
static void *compactor(void *arg) {
  DRepl *R = arg;
  pthread_mutex_lock(&R->mu);
  while (!R->stop) {
    pthread_mutex_unlock(&R->mu);
    int64_t done = 0;
    char msg[512] = "";
    replica_Error re = replica_compaction_due(R->r) ? replica_compact(R->r, &done, msg, sizeof msg) : REPLICA_OK;
    pthread_mutex_lock(&R->mu);
    if (done) R->compacted = done;
    if (re) snprintf(R->compact_err, sizeof R->compact_err, "%s", msg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
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
  drepl_fence(D, why, 1);
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
  if (!rc && (rc = pthread_create(&R->compactor, NULL, compactor, R))) {
    pthread_mutex_lock(&R->mu);
    R->stop = 1;
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
    pthread_join(R->thread, NULL);
  }
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
    pthread_cond_broadcast(&R->cv);
    pthread_mutex_unlock(&R->mu);
    pthread_join(R->thread, NULL);
    pthread_join(R->compactor, NULL);
  }
  if (R->stepping_up && !D->fenced) {   /* a standby that won: its restart leads on with this lease */
    D->adopt_lease = replica_lease(R->r);
    D->adopt_ttl = R->lease;
  } else {
    /* a clean stop gives the world up at once: a standby need not wait for
       the lease; so does a fenced one, whose own deadline may have fenced it
       while etcd still holds the key under its lease */
    replica_resign(R->r);
  }
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

size_t drepl_entry_max(const DRepl *R) { return R ? replica_entry_max(R->r) : 0; }

int drepl_commit(DRepl *R, store_env *s, uint64_t from, uint64_t to, const replica_Events *ev, char *err,
                 size_t errlen) {
  if (!R || to < from) return 0;
  if (!replica_may_write(R->r, now_ms())) {
    snprintf(err, errlen, "fenced: this kernel's lease was not renewed in time; nothing was acknowledged");
    return DREPL_FENCED;
  }
  replica_Error re = replica_publish(R->r, s, from, to, ev);
  if (re == REPLICA_OK) return 0;
  snprintf(err, errlen, "%s", replica_errmsg(R->r));
  if (re == REPLICA_EFENCED) return DREPL_FENCED;
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

void drepl_fence(Daemon *D, const char *why, int lost) {
  if (D->fenced) return;
  D->fenced = 1;
  D->fence_lost = lost;
  snprintf(D->fence_why, sizeof D->fence_why, "%s", why);
  dlog(D, "%s; this kernel writes nothing more and %s", why, lost ? "steps down to standby" : "stops");
  if (!D->stop_why) D->stop_why = D->fence_why;
}

void drepl_restart(const Daemon *D, int argc, char **argv, int detach_at) {
  const DReplOpts *o = &D->repl_opts;
  int down = D->fenced && D->fence_lost, up = !D->fenced && D->adopt_lease;
  if (!o->urls || (!down && !up)) return;
  /* A fresh process on the same store, recovered as any start.  Down: it
  ** stands by, and its store is checked against etcd first — one holding a
  ** group etcd refused differs from etcd's records, and the standby refuses
  ** it, naming the revision.  Up: it leads on with the lease it won with.
  ** The same pid: whoever waits for this kernel still does. */
  char **v = calloc((size_t)argc + 3, sizeof *v);
  if (!v) return;
  int n = 0;
  v[n++] = "jiti";
  for (int i = 0; i < argc; i++)
    if (i != detach_at && !(up && o->standby_at && i == o->standby_at)) v[n++] = argv[i];
  if (down && !o->standby) v[n++] = "--standby";
  v[n] = NULL;
  if (D->detached) setenv(DREPL_DETACHED_ENV, "1", 1);   /* already detached: no second fork */
  if (up) {
    char lease[64];
    snprintf(lease, sizeof lease, "%llx:%d", (unsigned long long)D->adopt_lease, D->adopt_ttl);
    setenv(DREPL_ADOPT_ENV, lease, 1);
  }
  fprintf(stderr, "jiti kernel: world %s: restarting as %s (pid %d)\n", o->world, up ? "its leader" : "a standby",
          (int)getpid());
  fflush(NULL);
  execv("/proc/self/exe", v);
  fprintf(stderr, "jiti kernel: cannot restart as %s: %s; start it again%s\n", up ? "the leader" : "a standby",
          strerror(errno), up ? "" : " with --standby");
  free(v);
}

/* ------------------------------------------------------------ standing by */

int drepl_standing(const DRepl *R) { return R && R->standing; }

/* Replace an idle worker with one from the store's CURRENT, once revisions
** were applied, at most once a second: a read then sees a world at most
** that much behind the store's. */
static void refresh_worker(Daemon *D, double now) {
  DRepl *R = D->repl;
  if (R->applied == D->revision || now < R->refreshed + STANDBY_REFRESH || D->live.w.fd < 0 ||
      D->live.wait != W_NONE || D->live.cur.active || D->live.in_pause || dgroup_holds(D))
    return;
  R->refreshed = now;
  D->revision = R->applied;   /* the world the next worker serves */
  dworker_stop(D);
  D->live.wait = W_NONE;
  D->live.base = (D->gen > D->gen_saved ? D->gen : D->gen_saved) + 1;
  D->gen = D->live.base;
  dworker_restart(D);
}

/* One round: what etcd has applied, the report, the campaign. */
static void standby_round(Daemon *D) {
  DRepl *R = D->repl;
  store_env *s = dstore(D);
  uint64_t applied = 0;
  replica_Error re = replica_catch_up(R->r, s, &applied);
  if (re == REPLICA_EDIVERGED || re == REPLICA_ESTORE || re == REPLICA_EPROTO) {
    snprintf(R->stopping, sizeof R->stopping, "%s", replica_errmsg(R->r));
    dlog(D, "%s; this standby stops", R->stopping);
    D->stop_why = R->stopping;
    return;
  }
  if (re) return;   /* etcd unreachable: it serves on at what it has, and tries again */
  uint64_t g;
  if (applied != R->applied && store_generation(s, &g) == STORE_OK && g > D->gen_saved) D->gen_saved = g;
  standby_report(R, s, applied);   /* (R->applied: the worker is replaced from it, refresh_worker) */
  read_leader(R);
  int won = 0;
  if (replica_campaign(R->r, R->lease, R->id, now_ms(), &won) != REPLICA_OK || !won) return;
  /* won: renewed from now on, through the restart as the leader */
  R->stepping_up = 1;
  (void)replica_report(R->r, R->sid, NULL, 0, 0);
  char err[256];
  if (drepl_start(D, err, sizeof err) != 0) dlog(D, "%s", err);
  snprintf(R->stopping, sizeof R->stopping, "this standby won world %s: restarting as its leader", D->repl_opts.world);
  dlog(D, "%s", R->stopping);
  D->stop_why = R->stopping;
}

double drepl_before(void *ud, double now) {
  Daemon *D = ud;
  DRepl *R = D->repl;
  if (!R || !R->standing || R->stepping_up || D->stopping || D->stop_why) return -1;
  if (now >= R->next_tick) {
    R->next_tick = now + STANDBY_TICK;
    standby_round(D);
  }
  if (!D->stop_why) refresh_worker(D, now);
  return R->next_tick - now;
}

void drepl_refusal(const Daemon *D, const char *what, char *out, size_t n) {
  const DRepl *R = D->repl;
  snprintf(out, n,
           "%s: this kernel stands by for world %s (it has applied revision %" PRIu64 ", generation %" PRIu64
           ") and takes no writes; send it to the world's leader%s%s (find it with 'jiti replicate status "
           "--replicate URLS --world %s')",
           what, D->repl_opts.world, R ? R->applied : 0, R ? R->applied_gen : 0, R && R->leader[0] ? ", " : "",
           R && R->leader[0] ? R->leader : "", D->repl_opts.world);
}

int drepl_refuses(Daemon *D, uint64_t client, json_t *id, int op, json_t *req, int *as_op) {
  *as_op = op;
  if (!drepl_standing(D->repl)) return 0;
  const char *what = NULL;
  switch (op) {
  case PROTO_HELLO: case PROTO_STATUS: case PROTO_OBSERVE: case PROTO_INSPECT: case PROTO_COMPLETE:
  case PROTO_HISTORY: case PROTO_SUBSCRIBE: case PROTO_PREVIEW: case PROTO_INVARIANT_LIST: case PROTO_INCIDENTS:
  case PROTO_SHUTDOWN: case PROTO_CANCEL: case PROTO_INTERRUPT:
    return 0;
  case PROTO_CALL:
    /* a read runs as a preview: the world is restored whatever it did, and
       a call that changed it is refused (dcall.c).  Its idempotency key
       is dropped: a read may run again, and a write is refused, recording
       nothing, so that it runs once on the leader. */
    if (json_is_true(json_object_get(req, "listening"))) what = "a listener's call";
    else if (!strcmp(json_string_value(json_object_get(req, "on_error")) ?: "", "pause")) what = "a call that may pause";
    if (!what) {
      json_object_del(req, "key");
      *as_op = PROTO_PREVIEW;
      return 0;
    }
    break;
  default:
    what = "this request writes";
  }
  char msg[1600];
  drepl_refusal(D, what, msg, sizeof msg);
  dreply_err(D, client, id, proto_code_name(PROTO_STANDBY), "%s", msg);
  return 1;
}

json_t *drepl_status(const Daemon *D) {
  const DRepl *R = D->repl;
  if (!drepl_standing(R)) return NULL;
  json_t *leader = R->leader[0] ? json_loads(R->leader, 0, NULL) : NULL;
  return json_pack("{s:s, s:o, s:I, s:I}", "world", D->repl_opts.world, "leader", leader ? leader : json_null(),
                   "revision", (json_int_t)R->applied, "generation", (json_int_t)R->applied_gen);
}
