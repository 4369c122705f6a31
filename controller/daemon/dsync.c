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
** The thread prefers a waiting write to a sync: the next commit's first
** sync covers the meta pages written before it, so under load each group
** costs one sync, and a slow disk gives larger groups, not a queue.  It
** records the highest commit number a sync covered; a group is durable —
** its calls are answered — once that number reaches its own.
**
** While a write is under way the thread owns the store handle: the loop
** reaches the store only through dstore(), which first waits for it (the
** handle is not shared between threads, and an LMDB map may only grow
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
#include "daemon.h"

struct DSync {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* the thread waits on it for work */
  pthread_cond_t idle;     /* dstore waits on it for the write under way */
  store_env *s;
  int efd;                 /* readable when a write or a sync ended */
  DWrite *job;             /* handed over, not yet taken by the thread */
  DWrite *writing;         /* being written */
  DWrite *written;         /* written (or failed), not yet taken by the loop */
  uint64_t wanted;         /* commits the loop wants durable */
  uint64_t done;           /* commits made durable */
  int failed, stop;
  char err[1024];          /* the failed sync's reason */
  int fail_at;             /* jiti-testhooks: JITI_TEST_FAIL_SYNC=N fails the Nth sync */
};

static void wake_loop(DSync *y) {
  uint64_t one = 1;
  (void)!write(y->efd, &one, sizeof one);
}

static void write_one(DSync *y, DWrite *w) {
  w->rc = w->run(y->s, w);
  if (w->rc != STORE_OK) snprintf(w->err, sizeof w->err, "%s", store_errmsg(y->s));
}

static void *run(void *arg) {
  DSync *y = arg;
  pthread_mutex_lock(&y->mu);
  for (;;) {
    while (!y->stop && !y->job && y->wanted == y->done && !y->failed) pthread_cond_wait(&y->cv, &y->mu);
    if (y->stop || y->failed) break;
    if (y->job) {
      DWrite *w = y->writing = y->job;
      y->job = NULL;
      pthread_mutex_unlock(&y->mu);
      write_one(y, w);
      pthread_mutex_lock(&y->mu);
      /* its first sync covered the meta pages of every commit before it */
      if (w->rc == STORE_OK && w->seq - 1 > y->done) y->done = w->seq - 1;
      y->writing = NULL;
      y->written = w;
      pthread_cond_broadcast(&y->idle);
      wake_loop(y);
      continue;
    }
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
    }
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
#ifdef JITI_TEST_HOOKS
  const char *fail = getenv("JITI_TEST_FAIL_SYNC");
  y->fail_at = fail ? atoi(fail) : 0;
#endif
  y->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (y->efd < 0) {
    snprintf(err, errlen, "eventfd: %s", strerror(errno));
    free(y);
    return -1;
  }
  pthread_mutex_init(&y->mu, NULL);
  pthread_cond_init(&y->cv, NULL);
  pthread_cond_init(&y->idle, NULL);
  /* the thread blocks no signal the loop expects: SIGTERM's handler only
  ** sets a flag, and ppoll unblocks what it waits for */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&y->thread, NULL, run, y);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start the store writer thread: %s", strerror(rc));
    close(y->efd);
    pthread_mutex_destroy(&y->mu);
    pthread_cond_destroy(&y->cv);
    pthread_cond_destroy(&y->idle);
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
  pthread_mutex_unlock(&y->mu);
  pthread_join(y->thread, NULL);
  close(y->efd);
  pthread_mutex_destroy(&y->mu);
  pthread_cond_destroy(&y->cv);
  pthread_cond_destroy(&y->idle);
  free(y);
  D->sync = NULL;
}

int dsync_fd(Daemon *D) { return D->sync ? D->sync->efd : -1; }

void dsync_want(Daemon *D, uint64_t commits) {
  DSync *y = D->sync;
  pthread_mutex_lock(&y->mu);
  if (commits > y->wanted) y->wanted = commits;
  pthread_cond_signal(&y->cv);
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
    while (y->job || y->writing) pthread_cond_wait(&y->idle, &y->mu);
    pthread_mutex_unlock(&y->mu);
  }
  return D->store;
}
