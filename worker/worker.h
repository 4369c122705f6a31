/*
** worker.h — the worker process's internals (docs/protocol.md, "Kernel and
** worker"): its outbox, its progress page's mapping, its sandbox.  What
** the kernel daemon may see — the frames, their vocabularies, the
** descriptors, the entry point — is wire.h, included here.
**
** The kernel daemon starts the worker as `jiti __worker` with one end of a
** socketpair on descriptor WORKER_FD.  The worker opens a world, enters its
** sandbox (worker_sandbox), receives CURRENT's entries from the kernel (it
** never opens the store), and then serves framed requests: observe,
** attempt, command (while paused), commit, restore, exit.
*/
#ifndef jiti_worker_h
#define jiti_worker_h

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include "txn.h"
#include "wire.h"

/* The outbox: frames the worker holds back while a batch of calls runs,
** to send them with one write (outbox.c).  A frame held is sent at the
** latest OUTBOX_DELAY_MS after it was put, by the thread in outbox_run. */
typedef struct Outbox {
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* a frame held, or stop */
  int fd;
  int ready;               /* initialised: otherwise frames go out at once */
  unsigned char *buf;
  size_t len, cap;         /* framed bytes held */
  struct timespec due;     /* CLOCK_MONOTONIC: when the oldest must go */
  int idle;                /* outbox_run waits for a frame, with no deadline */
  int stop;
} Outbox;

/* 0, or -1 (then frames are sent to fd as they are put). */
int outbox_init(Outbox *o, int fd);
/* After it, frames are sent to fd as they are put. */
void outbox_destroy(Outbox *o);
/* Frame one message (its JSON text already written) and hold it, or with
** hold 0 (or once 1 MiB is held) send it and everything held before it.
** 0, or -1: out of memory, too large, or the kernel is gone. */
int outbox_put(Outbox *o, const char *json, size_t n, const void *blob, size_t bloblen, int hold);
/* Send everything held (before the worker sends anything else or waits
** for the kernel).  0, or -1 when the kernel is gone. */
int outbox_flush(Outbox *o);
/* The flusher: sends what was held too long, until outbox_stop.  0, or -1
** when a send failed. */
int outbox_run(Outbox *o);
void outbox_stop(Outbox *o);

/* Map the page handed over as WORKER_PROGRESS_FD and close the descriptor:
** the page, or NULL (none handed over; a descriptor there that is not a
** progress page is left alone). */
worker_Progress *worker_progress_map(void);

/* AddressSanitizer's build: its runtime needs a few more system calls
** (the filters allow them: sandbox.c, shadow.c). */
#if defined(__SANITIZE_ADDRESS__)
#define WORKER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKER_ASAN 1
#endif
#endif

/* The flags of the one clone a worker makes: glibc's fork() (a process,
** never a thread: no CLONE_VM, no CLONE_THREAD). */
#define WORKER_FORK_FLAGS (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD)

/* Enter the sandbox: no new privileges, parent-death signal, resource
** limits and the seccomp allow-list (kill-process on anything else).
** fd is the kernel's socket; report the report socket (wire.h), or -1:
** with it the fork gate goes up where the system has it (*gate set: the
** listener was sent as its first record), without it no process is ever
** made; park the park socket's ends (shadow_park_fds; -1: none), kept with
** the gate: the worker writes jobs to [0], a parked shadow reads [1].  0 on success; -1 with a message in err. */
int worker_sandbox(int fd, int report, const int park[2], int *gate, char *err, size_t errlen);

/* Shadows (shadow.c; docs/worker-frames.md, "Shadows"): copies of the live
** worker, forked between attempts, that verify a candidate and report.
** Before the sandbox and before the other threads start: the shadow's own
** filter built, the handler that reaps shadows installed (SIGCHLD, taken
** by the threads that do not block it: the world's thread does).  0, or
** -1 (no shadows: every "shadow" frame is refused). */
int shadow_prepare(void);
/* The world's thread, between requests: reap the shadows that ended (the
** handler does it as they end, on the other thread) and report each on
** the report socket. */
void shadow_reap(void);
/* Serve a "shadow" frame m: fork a copy of W, whose report goes to the
** report socket; the answer frame (shadowed {pid}, or error {message}) is
** returned.  In the copy, pg (the progress page, or NULL) is unmapped and
** the kernel's socket fd closed; the copy never returns.
** With "parked": true in m, no fork: the job goes to the parked shadow,
** which the answer names. */
struct json_t *shadow_fork(txn_World *W, struct json_t *m, worker_Progress *pg, int fd, int gate);
/* The park function of W's attempts that were asked to park (txn_set_park):
** fork a copy of the failed call's world before it unwinds; the copy
** waits for its job at the failure (a "shadow" frame with "parked").  The
** copy's pid in the worker, 0 in the copy (its caller lets the failed call
** unwind, then calls shadow_parked_run), -1 when none was made (no gate,
** one parked already, no free slot). */
int shadow_park(txn_World *W, worker_Progress *pg, int fd, int gate);
/* In a parked copy whose job came: 1.  Then shadow_parked_run(W) verifies
** and ends it. */
int shadow_parked(void);
_Noreturn void shadow_parked_run(txn_World *W);
/* The park socket's two ends (shadow_prepare made them; -1: none), kept
** through the sandbox. */
void shadow_park_fds(int fds[2]);

#endif
