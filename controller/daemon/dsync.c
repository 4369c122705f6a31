/*
** dsync.c — the second half of a group commit, off the poll loop
** (daemon.h, docs/transactions.md "Group commit").
**
** An LMDB commit syncs twice: the new pages, then the meta page that makes
** them CURRENT.  dgroup.c commits a group with STORE_GROUP_SYNC_LATER,
** which returns after the first; this thread does the second
** (store_sync), while the loop goes on reading outcomes and requests and
** may already write the next group.  The loop asks for a sync with the
** number of commits made so far; the thread syncs, records the highest
** number that sync covered, and wakes the loop through an eventfd.  A
** group is durable — its calls are answered — once that number reaches
** its own.  One sync covers every commit before it, so a slow disk gives
** larger groups, not a queue of syncs.
**
** Only this thread calls store_sync, and the store handle gives it nothing
** but the data file's descriptor (store.h), so it shares no state with the
** loop beyond the three counters below, under the mutex.
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
  pthread_cond_t cv;
  store_env *s;
  int efd;                 /* readable when a sync ended */
  uint64_t wanted;         /* commits the loop wants durable */
  uint64_t done;           /* commits made durable */
  int failed, stop;
  char err[1024];          /* the failed sync's reason */
  int fail_at;             /* jiti-testhooks: JITI_TEST_FAIL_SYNC=N fails the Nth sync */
};

static void *run(void *arg) {
  DSync *y = arg;
  pthread_mutex_lock(&y->mu);
  for (;;) {
    while (!y->stop && y->wanted == y->done && !y->failed) pthread_cond_wait(&y->cv, &y->mu);
    if (y->stop || y->failed) break;
    uint64_t target = y->wanted;   /* every commit asked for so far has returned */
    pthread_mutex_unlock(&y->mu);
    char err[1024] = "";
    int rc = y->fail_at && !--y->fail_at ? STORE_EIO : store_sync(y->s, err, sizeof err);
    if (rc != STORE_OK && !err[0]) snprintf(err, sizeof err, "store: the test hook failed this sync");
    pthread_mutex_lock(&y->mu);
    if (rc == STORE_OK) {
      y->done = target;
    } else {
      y->failed = 1;
      snprintf(y->err, sizeof y->err, "%s", err);
    }
    uint64_t one = 1;
    (void)!write(y->efd, &one, sizeof one);
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
  y->s = D->s;
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
  /* the thread blocks no signal the loop expects: SIGTERM's handler only
  ** sets a flag, and ppoll unblocks what it waits for */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&y->thread, NULL, run, y);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start the sync thread: %s", strerror(rc));
    close(y->efd);
    pthread_mutex_destroy(&y->mu);
    pthread_cond_destroy(&y->cv);
    free(y);
    return -1;
  }
  D->sync = y;
  return 0;
}

void dsync_stop(Daemon *D) {
  DSync *y = D->sync;
  if (!y) return;
  pthread_mutex_lock(&y->mu);
  y->stop = 1;
  pthread_cond_signal(&y->cv);
  pthread_mutex_unlock(&y->mu);
  pthread_join(y->thread, NULL);
  close(y->efd);
  pthread_mutex_destroy(&y->mu);
  pthread_cond_destroy(&y->cv);
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
