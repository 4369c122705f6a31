/*
** outbox.c — frames the worker holds back while a batch of calls runs
** (worker.h "The outbox").
**
** A batch ("attempts") is a run of application calls; a short one costs
** the worker about as much as the system call that sends its outcome.  So
** the outcomes of a batch are framed into the outbox and go out together,
** one write for the batch, when its last call ends.  A call that runs long
** must not keep the outcomes before it from the kernel (their callers wait
** for them, and their group cannot commit without them): a flusher thread
** sends what is held once the oldest of it has waited OUTBOX_DELAY_MS.
**
** The worker thread is the only one that adds frames; it sends anything
** else of its own only after emptying the outbox (outbox_flush), so frames
** leave in the order they were made.  Both threads send under the mutex.
*/
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "worker.h"

#define OUTBOX_DELAY_MS 1
#define OUTBOX_KEEP ((size_t)1 << 20)   /* a larger buffer is freed once sent */
#define OUTBOX_HOLD ((size_t)1 << 20)   /* more held than this goes out at once: a
                                           batch of large changes is not held whole */

int outbox_init(Outbox *o, int fd) {
  memset(o, 0, sizeof *o);
  o->fd = fd;
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca)) return -1;
  int rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) || pthread_cond_init(&o->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc) return -1;
  if (pthread_mutex_init(&o->mu, NULL)) {
    pthread_cond_destroy(&o->cv);
    return -1;
  }
  o->ready = 1;
  return 0;
}

void outbox_destroy(Outbox *o) {
  if (!o->ready) return;
  pthread_mutex_destroy(&o->mu);
  pthread_cond_destroy(&o->cv);
  free(o->buf);
  int fd = o->fd;
  memset(o, 0, sizeof *o);
  o->fd = fd;   /* frames put from now on go out at once */
}

/* Send what is held; the caller holds the mutex.  -1 when the kernel is
** gone. */
static int send_held(Outbox *o) {
  if (!o->len) return 0;
  int rc = wire_send_bytes(o->fd, o->buf, o->len);
  o->len = 0;
  if (o->cap > OUTBOX_KEEP) {
    free(o->buf);
    o->buf = NULL;
    o->cap = 0;
  }
  return rc;
}

int outbox_put(Outbox *o, const char *json, size_t n, const void *blob, size_t bloblen, int hold) {
  if (!o->ready) return wire_send_text(o->fd, json, n, blob, bloblen);
  pthread_mutex_lock(&o->mu);
  int was_empty = o->len == 0;
  int rc = wire_frame_text(json, n, blob, bloblen, &o->buf, &o->len, &o->cap);
  if (rc == 0 && (!hold || o->len >= OUTBOX_HOLD)) {
    rc = send_held(o);
  } else if (rc == 0 && was_empty) {
    clock_gettime(CLOCK_MONOTONIC, &o->due);
    long ns = o->due.tv_nsec + OUTBOX_DELAY_MS * 1000000L;
    o->due.tv_sec += ns / 1000000000L;
    o->due.tv_nsec = ns % 1000000000L;
    if (o->idle) pthread_cond_signal(&o->cv);  /* a flusher in a timed wait wakes by itself */
  }
  pthread_mutex_unlock(&o->mu);
  return rc;
}

int outbox_flush(Outbox *o) {
  if (!o->ready) return 0;
  pthread_mutex_lock(&o->mu);
  int rc = send_held(o);
  pthread_mutex_unlock(&o->mu);
  return rc;
}

static int passed(const struct timespec *t) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

int outbox_run(Outbox *o) {
  int rc = 0;
  pthread_mutex_lock(&o->mu);
  while (!o->stop && rc == 0) {
    if (!o->len) {
      o->idle = 1;
      pthread_cond_wait(&o->cv, &o->mu);
      o->idle = 0;
    } else if (passed(&o->due)) {
      rc = send_held(o);
    } else {
      pthread_cond_timedwait(&o->cv, &o->mu, &o->due);
    }
  }
  pthread_mutex_unlock(&o->mu);
  return rc;
}

void outbox_stop(Outbox *o) {
  if (!o->ready) return;
  pthread_mutex_lock(&o->mu);
  o->stop = 1;
  pthread_cond_signal(&o->cv);
  pthread_mutex_unlock(&o->mu);
}
