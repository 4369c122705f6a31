/*
** dsync.c — the store writer: the daemon's routine store transactions and
** their syncs, off the poll loop (daemon.h, docs/transactions.md "Group
** commit").
**
** An LMDB commit syncs twice: the new pages, then the meta page that makes
** them CURRENT.  A group of calls waits for both before its replies go out;
** if the loop made those syncs itself, the worker and every client would
** wait with it, and fifty clients would move in one convoy, group after
** group.  So the loop hands a prepared write — a group of calls
** (dgroup.c), or the events buffered for 10 ms (devents.c) — to this
** thread (dsync_write), which runs its store transaction (with the meta
** page's sync left for later) and wakes the loop through an eventfd; the
** loop settles it (dsync_settle: the write's done()) and asks for the
** meta page's sync (dsync_want, with the number of commits made so far).
** Meanwhile the loop goes on reading outcomes and requests, and the calls
** of the clients already answered run in the worker: they are the next
** group.
**
** The store is in journal mode (store.h "The journal"): a write touches
** no page of data.mdb on disk; its puts and deletes are appended to the
** journal, and the sync that makes it durable is the journal's — one
** sequential append's, where an LMDB commit syncs a dozen scattered pages
** and then its meta page.  The syncs run on a second thread: while one
** is in the kernel, the writer writes the next group, and the sync after
** it covers every group written meanwhile, so under load one sync covers
** several groups and a slow disk gives larger groups, not a queue.  The
** highest commit number a sync covered is recorded; a group is durable —
** its calls are answered — once that number reaches its own.
**
** The journaled writes live in one long LMDB transaction of this thread's
** until a checkpoint commits it in full: CHECKPOINT_DELAY after the first,
** or at once when the loop wants the store (dstore), which sees only what
** is committed.
**
** While a write is under way, or journaled writes wait for their
** checkpoint, the thread owns the store handle: the loop reaches the store
** only through dstore(), which first waits for the write and has the
** checkpoint made (the handle is not shared between threads, an LMDB write
** transaction ends on the thread that began it, and the map may only grow
** while no transaction of the process is open).  The thread shares
** nothing else with the loop but the fields below, under the mutex; a
** write's objects are the loop's again once it ended.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <time.h>
#include "daemon.h"

/* A checkpoint stops the writer for the time of LMDB's full commit: ~25 ms
** after 200 ms of steady writes on a small disk, ~45 ms after a second's
** (pages written again are written once), so once a second costs the
** writer a quarter of what five times did (docs/benchmarks.md). */
#define CHECKPOINT_DELAY_MS 1000

struct DSync {
  pthread_t thread;        /* the writer: writes and checkpoints */
  pthread_t syncer;        /* the syncs */
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* the writer waits on it for work */
  pthread_cond_t owed;     /* the syncer waits on it for a commit to sync */
  pthread_cond_t idle;     /* dstore waits on it for the write under way */
  store_env *s;
  int efd;                 /* readable when a write or a sync ended */
  DWrite *job;             /* handed over, not yet taken by the thread */
  DWrite *writing;         /* being written */
  DWrite *written;         /* written (or failed), not yet taken by the loop */
  uint64_t wanted;         /* commits the loop wants durable */
  uint64_t done;           /* commits made durable */
  uint64_t last;           /* the last commit made */
  int pending;             /* journaled writes wait for a checkpoint */
  struct timespec due;     /* CLOCK_MONOTONIC: when it is due */
  struct timespec late;    /* when a due one stops waiting for the syncs owed */
  int checkpoint;          /* the loop waits for one (dstore) */
  int failed, stop;
  char err[1024];          /* the failed sync's reason */
  int fail_at;             /* jiti-testhooks: JITI_TEST_FAIL_SYNC=N fails the Nth sync */
  int slow_ms;             /* jiti-testhooks: JITI_TEST_SLOW_WRITE=MS waits before each write */
};

static void wake_loop(DSync *y) {
  uint64_t one = 1;
  (void)!write(y->efd, &one, sizeof one);
}

static void write_one(DSync *y, DWrite *w) {
  if (y->slow_ms) usleep((useconds_t)y->slow_ms * 1000);
  w->rc = w->run(y->s, w);
  if (w->rc != STORE_OK) snprintf(w->err, sizeof w->err, "%s", store_errmsg(y->s));
}

/* Commit the journaled writes (the thread's, under the mutex): everything
** written so far is then durable in data.mdb. */
static void checkpoint(DSync *y) {
  pthread_mutex_unlock(&y->mu);
  int rc = store_checkpoint(y->s);
  char err[1024];
  if (rc != STORE_OK) snprintf(err, sizeof err, "%s", store_errmsg(y->s));
  /* room for the next epoch, now that no transaction is open (a map that
  ** cannot grow is reported by the commit that needs it) */
  else (void)store_make_room(y->s);
  pthread_mutex_lock(&y->mu);
  y->pending = 0;
  y->checkpoint = 0;
  if (rc == STORE_OK) {
    if (y->last > y->done) y->done = y->last;
  } else {
    y->failed = 1;
    snprintf(y->err, sizeof y->err, "%s", err);
  }
  pthread_cond_broadcast(&y->idle);
  wake_loop(y);
}

static int due(const struct timespec *t) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void after_ms(struct timespec *t, long ms) {
  clock_gettime(CLOCK_MONOTONIC, t);
  t->tv_nsec += ms * 1000000L;
  t->tv_sec += t->tv_nsec / 1000000000L;
  t->tv_nsec %= 1000000000L;
}

static void *run(void *arg) {
  DSync *y = arg;
  pthread_mutex_lock(&y->mu);
  for (;;) {
    while (!y->stop && !y->job && !y->failed) {
      /* a checkpoint waits for the syncs owed: the groups they answer
      ** would otherwise wait for its commit's syncs too; but not for
      ** long, or a steady load of writes, always one sync ahead, would
      ** put it off until the journal is full */
      if (y->checkpoint && (y->wanted <= y->done || due(&y->late))) break;
      if (y->checkpoint) {
        pthread_cond_timedwait(&y->cv, &y->mu, &y->late);
      } else if (!y->pending) {
        pthread_cond_wait(&y->cv, &y->mu);
      } else if (pthread_cond_timedwait(&y->cv, &y->mu, &y->due) == ETIMEDOUT || due(&y->due)) {
        y->checkpoint = 1;
        after_ms(&y->late, CHECKPOINT_DELAY_MS);
      }
    }
    if (y->stop || y->failed) break;
    if (y->job) {
      DWrite *w = y->writing = y->job;
      y->job = NULL;
      pthread_mutex_unlock(&y->mu);
      write_one(y, w);
      int pending = store_journal_pending(y->s);
      const char *broken = store_journal_broken(y->s);
      pthread_mutex_lock(&y->mu);
      if (broken && !y->failed) {   /* as a failed sync: the disk's state is unknown */
        y->failed = 1;
        snprintf(y->err, sizeof y->err, "store: a checkpoint of the journal failed (%s); the next start replays it",
                 broken);
      }
      if (w->rc == STORE_OK) {
        y->last = w->seq;
        /* outside journal mode its commit's first sync covered the meta
        ** pages of every commit before it */
        if (!pending && w->seq - 1 > y->done) y->done = w->seq - 1;
        /* its own sync is owed: the sync thread makes it once the one in
        ** the kernel returns (the loop asks for it too, once it has taken
        ** the write: no need to wait for that) */
        if (w->seq > y->wanted) y->wanted = w->seq;
        pthread_cond_signal(&y->owed);
      }
      if (pending && !y->pending) after_ms(&y->due, CHECKPOINT_DELAY_MS);
      y->pending = pending;
      y->writing = NULL;
      y->written = w;
      pthread_cond_broadcast(&y->idle);
      wake_loop(y);
      continue;
    }
    checkpoint(y);   /* due or wanted */
  }
  pthread_mutex_unlock(&y->mu);
  return NULL;
}

/* The syncs, on a thread of their own: while one is in the kernel, the
** writer writes the next group, which the sync after it covers.  Syncing
** a file needs nothing of the store handle but its descriptors (store.h),
** so this thread shares it with the writer. */
static void *run_syncs(void *arg) {
  DSync *y = arg;
  pthread_mutex_lock(&y->mu);
  for (;;) {
    while (!y->stop && !y->failed && y->wanted <= y->done) pthread_cond_wait(&y->owed, &y->mu);
    if (y->stop || y->failed) break;
    uint64_t target = y->wanted;   /* every commit asked for so far has returned */
    pthread_mutex_unlock(&y->mu);
    char err[1024] = "";
    int rc = y->fail_at && !--y->fail_at ? STORE_EIO : store_sync(y->s, err, sizeof err);
    if (rc != STORE_OK && !err[0]) snprintf(err, sizeof err, "store: the test hook failed this sync");
    pthread_mutex_lock(&y->mu);
    if (rc == STORE_OK) {
      if (target > y->done) y->done = target;
    } else {
      y->failed = 1;
      snprintf(y->err, sizeof y->err, "%s", err);
      pthread_cond_broadcast(&y->idle);
    }
    /* a checkpoint may wait for this sync; a failure stops the writer */
    if (y->checkpoint || y->failed) pthread_cond_signal(&y->cv);
    wake_loop(y);
  }
  pthread_mutex_unlock(&y->mu);
  return NULL;
}

int dsync_start(Daemon *D, char *err, size_t errlen) {
  DSync *y = calloc(1, sizeof *y);
  if (!y) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  y->s = D->store;
  if (store_journal_begin(y->s) != STORE_OK)   /* then every write syncs data.mdb itself */
    dlog(D, "writing without a journal: %s", store_errmsg(y->s));
#ifdef JITI_TEST_HOOKS
  const char *fail = getenv("JITI_TEST_FAIL_SYNC");
  y->fail_at = fail ? atoi(fail) : 0;
  const char *slow = getenv("JITI_TEST_SLOW_WRITE");
  y->slow_ms = slow ? atoi(slow) : 0;
#endif
  y->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (y->efd < 0) {
    snprintf(err, errlen, "eventfd: %s", strerror(errno));
    free(y);
    return -1;
  }
  pthread_mutex_init(&y->mu, NULL);
  pthread_condattr_t ca;   /* the checkpoint's timed wait counts monotonic time */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&y->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&y->idle, NULL);
  pthread_cond_init(&y->owed, NULL);
  /* the threads block no signal the loop expects: SIGTERM's handler only
  ** sets a flag, and the loop's wait unblocks what it waits for */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&y->thread, NULL, run, y);
  if (rc == 0 && (rc = pthread_create(&y->syncer, NULL, run_syncs, y)) != 0) {
    pthread_mutex_lock(&y->mu);
    y->stop = 1;
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->mu);
    pthread_join(y->thread, NULL);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start the store writer thread: %s", strerror(rc));
    close(y->efd);
    pthread_mutex_destroy(&y->mu);
    pthread_cond_destroy(&y->cv);
    pthread_cond_destroy(&y->idle);
    pthread_cond_destroy(&y->owed);
    free(y);
    return -1;
  }
  D->sync = y;
  return 0;
}

void dsync_stop(Daemon *D) {
  DSync *y = D->sync;
  if (!y) return;
  dstore(D);   /* a write under way is finished first */
  dsync_settle(D);
  pthread_mutex_lock(&y->mu);
  y->stop = 1;
  pthread_cond_signal(&y->cv);
  pthread_cond_signal(&y->owed);
  pthread_mutex_unlock(&y->mu);
  pthread_join(y->thread, NULL);
  pthread_join(y->syncer, NULL);
  dpoll_del(D->poll, y->efd);
  close(y->efd);
  pthread_mutex_destroy(&y->mu);
  pthread_cond_destroy(&y->cv);
  pthread_cond_destroy(&y->idle);
  pthread_cond_destroy(&y->owed);
  free(y);
  D->sync = NULL;
}

int dsync_fd(Daemon *D) { return D->sync ? D->sync->efd : -1; }

void dsync_want(Daemon *D, uint64_t commits) {
  DSync *y = D->sync;
  pthread_mutex_lock(&y->mu);
  if (commits > y->wanted) y->wanted = commits;
  pthread_cond_signal(&y->owed);
  pthread_mutex_unlock(&y->mu);
}

int dsync_done(Daemon *D, uint64_t *done, char *err, size_t errlen) {
  DSync *y = D->sync;
  uint64_t n;
  (void)!read(y->efd, &n, sizeof n);   /* drain the wake-up */
  pthread_mutex_lock(&y->mu);
  *done = y->done;
  int failed = y->failed;
  if (failed) snprintf(err, errlen, "%s", y->err);
  pthread_mutex_unlock(&y->mu);
  return failed ? -1 : 0;
}

void dsync_write(Daemon *D, DWrite *w) {
  DSync *y = D->sync;
  pthread_mutex_lock(&y->mu);
  y->job = w;
  pthread_cond_signal(&y->cv);
  pthread_mutex_unlock(&y->mu);
}

int dsync_busy(Daemon *D) {
  DSync *y = D->sync;
  if (!y) return 0;
  pthread_mutex_lock(&y->mu);
  int busy = y->job || y->writing || y->written;
  pthread_mutex_unlock(&y->mu);
  return busy;
}

void dsync_settle(Daemon *D) {
  DSync *y = D->sync;
  if (!y) return;
  pthread_mutex_lock(&y->mu);
  DWrite *w = y->written;
  y->written = NULL;
  pthread_mutex_unlock(&y->mu);
  if (w) w->done(D, w);
}

store_env *dstore(Daemon *D) {
  DSync *y = D->sync;
  if (y) {
    pthread_mutex_lock(&y->mu);
    /* a write under way is always finished; a queued one is never taken
    ** by a writer a failed sync stopped (the loop stops once it reads the
    ** failure, which may be after this wait began) */
    while (y->writing || (y->job && !y->failed)) pthread_cond_wait(&y->idle, &y->mu);
    if (y->pending && !y->failed) {   /* only what is committed can be read here */
      y->checkpoint = 1;
      pthread_cond_signal(&y->cv);
      while (y->checkpoint && !y->failed) pthread_cond_wait(&y->idle, &y->mu);
    }
    pthread_mutex_unlock(&y->mu);
  }
  return D->store;
}
