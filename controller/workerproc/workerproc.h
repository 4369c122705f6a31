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
** end of a socketpair as WORKER_FD; it never opens the store.  It gets
** none of the kernel's environment but the few variables WPROC_ENV names,
** and its stderr is a pipe of its own that the caller reads (wstderr.c):
** never the kernel's log, which the worker could otherwise write lines
** into that look like the kernel's.
*/
#ifndef jiti_workerproc_h
#define jiti_workerproc_h

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine.h"
#include "wire.h"

/* The worker's environment, all it gets of the kernel's: the locale and
** time zone (LC_* is every variable of that prefix), where libraries are
** found (a granted library named as dlopen finds it is found by the worker
** as by `jiti run`), the garbage collector's stress switch and the switch
** that skips the sandbox for debugging (both read by the worker itself),
** and, in a sanitizer build, the sanitizers' options. */
#define WPROC_ENV_COMMON "LANG", "LC_*", "TZ", "LD_LIBRARY_PATH", "JITI_GC_STRESS", "JITI_WORKER_NO_SANDBOX"
#if defined(JITI_TEST_HOOKS)      /* the test build's worker reads its hooks */
#define WPROC_ENV_HOOKS , "JITI_TEST_*"
#else
#define WPROC_ENV_HOOKS
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WPROC_ENV WPROC_ENV_COMMON, "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS" WPROC_ENV_HOOKS
#else
#define WPROC_ENV WPROC_ENV_COMMON WPROC_ENV_HOOKS
#endif

/* A worker's stderr as log lines (wstderr.c): each line escaped (control
** characters, backslashes and bytes that are not UTF-8 as \t \r \\ \xHH,
** invisible format characters such as bidirectional overrides as
** \u{XXXX}), cut past WPROC_ERR_LINE_MAX bytes as escaped ("[N bytes
** cut]"), and at most WPROC_ERR_LINES lines or WPROC_ERR_BYTES bytes a
** second passed on: the lines past that are dropped, and their number is
** reported once the second is over. */
#define WPROC_ERR_LINE_MAX 1024
#define WPROC_ERR_LINES 100
#define WPROC_ERR_BYTES 16384

/* Where the lines go: the worker pid's line text (n bytes, escaped, no
** newline), or with note set the reader's own remark about the stream
** (lines dropped), which a log must tell apart from the worker's lines. */
typedef void (*wproc_ErrFn)(void *ud, int pid, const char *text, size_t n, int note);

typedef struct wproc_Err {
  int fd;                   /* the pipe's read end (non-blocking); -1: none */
  int pid;                  /* the worker whose stderr it is */
  wproc_ErrFn fn;           /* NULL: this process's stderr, the worker's lines
                               as "worker[PID]: text", notes as "jiti: worker
                               PID: text" */
  void *ud;
  unsigned char line[WPROC_ERR_LINE_MAX];  /* the line so far, raw */
  size_t n, cut;            /* its bytes, and those past the buffer */
  int64_t second;           /* the second that lines and bytes count in */
  unsigned lines;
  size_t bytes;
  uint64_t dropped;         /* lines dropped and not yet reported */
} wproc_Err;

typedef struct wproc {
  int fd;              /* the kernel's end of the socketpair; -1: none */
  int report;          /* the kernel's end of the report socket (wire.h; the
                          live worker's, its shadows' reports), non-blocking;
                          -1: none */
  pid_t pid;           /* 0: none */
  wire_reader rd;      /* frames read and not yet handed out */
  const worker_Progress *progress;  /* shared with the worker, or NULL */
  uint64_t outcomes_seen;           /* outcome frames its reader counted */
  wproc_Err err;       /* its stderr (err.fn, err.ud: set after the spawn) */
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
  size_t entry_max;          /* the largest entry encoding it may publish
                                (0: the store's bound; txn_set_entry_max) */
} wproc_Plan;

/* Start a worker process granted the libraries of grant (NULL: none; they
** become its --allow-foreign arguments), with the environment WPROC_ENV
** allows and its stderr a pipe; w->fd, w->pid and w->err.fd set, and its
** lines going to this process's stderr until w->err.fn says otherwise.
** With report (the kernel's live worker) it also gets a report socket
** (w->report; WORKER_REPORT_FD in the worker): its shadows' reports, and
** its sandbox's fork gate; without one it can never make a process.
** 0, or -1 with a message in err (nothing left running). */
int wproc_spawn(wproc *w, const grant_List *grant, int report, char *err, size_t errlen);

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
** 2 s (or at once with kill set); then its last stderr lines (wproc_err_close).
** w is reset. */
void wproc_stop(wproc *w, int kill);

/* wframe.c: the frames sent after start-up, one builder per shape (NULL
** when out of memory; wproc_send sends NULL as a failure). */

/* commit: keep the count oldest accepted attempts awaiting their commit,
** the last published as revision; those at the indexes unchanged (of
** count) the store had already, and they do not move the generation. */
struct json_t *wframe_commit(uint64_t revision, size_t count, const size_t *unchanged, size_t nunchanged);
struct json_t *wframe_restore(void);   /* undo every accepted attempt awaiting its commit */
struct json_t *wframe_exit(void);
/* A shadow (docs/worker-frames.md, "Shadows"): id the kernel's number for
** it (1 to 2^32 - 1), definitions the candidate's source, repro a form's
** (NULL: none), replay the n recorded requests' sources, limits every
** evaluation's. */
struct json_t *wframe_shadow(uint32_t id, const char *definitions, const char *repro, const char *const *replay,
                             size_t n, const jiti_Limits *limits);
/* A command to a paused attempt: type (txn_CmdType's name) at generation,
** with the members of an act's action that go with it (source,
** restart_id, arguments, package; action may be NULL). */
struct json_t *wframe_command(const char *type, struct json_t *generation, struct json_t *action);

/* An accepted attempt awaiting its commit (changes and blob: its outcome's)
** published on parent (engine.h publish_outcome, with events and the
** accepted event), and the worker's decision that follows: commit when
** the store took it, restore when not (pr->code); incident: a repair's
** (publish_outcome), else 0; tentative: its incident becomes tentative.  Returns the frame. */
struct json_t *wproc_publish(store_env *s, uint64_t parent, const store_rev_info *info, struct json_t *changes,
                             const unsigned char *blob, size_t bloblen, struct json_t *const *events,
                             const int64_t *times, size_t nevents, struct json_t *accepted, uint64_t incident,
                             int tentative, publish_Result *pr);

/* wstderr.c.  The synchronous calls above (wproc_start, wproc_recv) read
** the worker's stderr themselves while they wait; a caller with a poll loop
** of its own (the kernel daemon) polls w->err.fd and calls these. */

/* Read what the worker's stderr holds now (at most 1 MiB, without
** waiting), passing its complete lines on.  0, or -1 once the pipe is
** closed (the last line passed on, w->err.fd -1). */
int wproc_err_read(wproc *w);
/* Seconds until the lines dropped must be reported (wproc_err_tick); < 0:
** none were. */
double wproc_err_due(const wproc *w);
void wproc_err_tick(wproc *w);
/* The worker is reaped: read what is left, pass on the last line and the
** lines dropped, close the pipe. */
void wproc_err_close(wproc *w);

/* ---- wmain.c: the worker's side */

/* `jiti __worker [--allow-foreign LIB]...`, hidden: the process wproc_start
** starts (WORKER_FD its socket); the worker's exit status. */
int cmd_worker_internal(int argc, char **argv);

#endif
