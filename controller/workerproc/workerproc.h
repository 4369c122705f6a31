/*
** workerproc.h — a sandboxed worker process started from a revision of a
** store, and talked to in frames (docs/worker-frames.md).  The kernel
** daemon starts its workers with it (and drives them from its poll loop);
** the store commands run their transactions through one, synchronously, so
** that offline and in the kernel a transaction is the same code: the same
** gate, limits, invariants and publish step.  A verifier that must check a
** world without touching the live one starts one too.
**
** The worker is `jiti __worker` (fork + exec of /proc/self/exe: a fresh
** address space without the store's memory map or descriptors) with one
** end of a socketpair as WORKER_FD; it never opens the store.
*/
#ifndef jiti_workerproc_h
#define jiti_workerproc_h

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine.h"
#include "worker.h"

typedef struct wproc {
  int fd;              /* the kernel's end of the socketpair; -1: none */
  pid_t pid;           /* 0: none */
  wire_reader rd;      /* frames read and not yet handed out */
  const worker_Progress *progress;  /* shared with the worker, or NULL */
  uint64_t outcomes_seen;           /* outcome frames its reader counted */
} wproc;

/* The world a worker starts with. */
typedef struct wproc_Plan {
  uint64_t rev;              /* the revision whose map it imports
                                (STORE_REV_CURRENT: CURRENT) */
  int current_invariants;    /* rev's map without its invariants, plus
                                CURRENT's: a rollback's check */
  uint64_t shown;            /* the revision its views name */
  uint64_t base;             /* its generations count from here */
  const jiti_Limits *limits; /* every evaluation's (NULL: the defaults of
                                the limits table) */
  const grant_List *grant;   /* the C libraries it opens before its sandbox
                                (NULL: none) */
  int stack;                 /* accepted attempts that may await their
                                commit at once (0 or 1: one; the kernel's
                                group commit runs later calls on top) */
} wproc_Plan;

/* Start a worker process granted the libraries of grant (NULL: none; they
** become its --allow-foreign arguments); w->fd and w->pid set.  0, or -1
** with a message in err (nothing left running). */
int wproc_spawn(wproc *w, const grant_List *grant, char *err, size_t errlen);

/* Append the start-up frames of plan — init, the map's entries in import
** batches (straight from the store, kind by kind in the import order), start
** — to the growing buffer *buf (*len used, *cap allocated); *nentries
** receives the number of entries.  0, or -1 with a message in err. */
int wproc_frames(store_env *s, const wproc_Plan *plan, unsigned char **buf, size_t *len, size_t *cap,
                 size_t *nentries, char *err, size_t errlen);

/* Outcome frames the worker made and the reader has not counted
** (outcomes_seen): after its death, the outcomes it died with. */
uint64_t wproc_outcomes_unseen(const wproc *w);

/* How a process ended (a waitpid status), in words. */
void wproc_describe(int status, char *buf, size_t n);

/* Spawn a worker, write it plan's frames and wait for "ready" (*ready,
** the frame; the caller frees it).  0, or -1 with a message in err: the
** worker reported "fatal", or died (how). */
int wproc_start(wproc *w, store_env *s, const wproc_Plan *plan, struct json_t **ready, char *err,
                size_t errlen);

/* Send one frame (msg stolen).  0, or -1 (the worker is gone). */
int wproc_send(wproc *w, struct json_t *msg, const void *blob, size_t len);
/* The same for a frame without a blob whose JSON is text already. */
int wproc_send_text(wproc *w, const char *json, size_t n);

/* The next frame (blocking): 0 with *msg and *blob (malloc'd or NULL; blob
** may be NULL to drop it), or -1 with a message in err — "the worker
** HOW" when it died, reaped. */
int wproc_recv(wproc *w, struct json_t **msg, unsigned char **blob, size_t *bloblen, char *err,
               size_t errlen);

/* Ask the worker to exit and reap it; kill it if it has not exited within
** 2 s (or at once with kill set).  w is reset. */
void wproc_stop(wproc *w, int kill);

#endif
