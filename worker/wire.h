/*
** wire.h — what the kernel daemon may know of its worker
** (docs/worker-frames.md, docs/protocol.md "Kernel and worker"): the
** descriptors it hands over, the frames and their vocabularies, the
** progress page, and the entry point of `jiti __worker`.  The worker's own
** internals (its outbox, its sandbox) are in worker.h, which the kernel's
** side has no need of.
**
** Framing (both directions): an 8-byte header — the JSON length and the
** blob length, each a 32-bit big-endian unsigned integer — then the JSON
** text (one object) and the blob (binary parts referenced by "len" members
** of the JSON, concatenated in order).
*/
#ifndef jiti_wire_h
#define jiti_wire_h

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#define WORKER_FD 3
#define WORKER_PROGRESS_FD 4   /* the progress page's memfd, until mapped */
#define WORKER_REPORT_FD 5     /* the live worker's report socket (below) */
#define WIRE_JSON_MAX ((size_t)64 << 20)    /* bytes of one frame's JSON */
#define WIRE_BLOB_MAX ((size_t)1 << 30)     /* bytes of one frame's blob */

/* The vocabulary of the frames (docs/worker-frames.md, schema
** docs/schema/frames.json): what the kernel asks ("op") and what the worker
** answers ("event").  One name table each, shared by both ends. */
typedef enum wire_Op {
  WIRE_INIT, WIRE_IMPORT, WIRE_START, WIRE_OBSERVE, WIRE_INSPECT, WIRE_INVARIANT_LIST,
  WIRE_INVARIANT, WIRE_ATTEMPT, WIRE_ATTEMPTS, WIRE_COMMAND, WIRE_COMMIT, WIRE_RESTORE,
  WIRE_EXIT, WIRE_ANALYZE, WIRE_SHADOW, WIRE_COMPLETE, WIRE_OP_COUNT
} wire_Op;

typedef enum wire_Event {
  WIRE_READY, WIRE_FATAL, WIRE_VIEW, WIRE_ENTRY, WIRE_INVARIANTS, WIRE_PAUSED, WIRE_OUTCOME,
  WIRE_COMMITTED, WIRE_RESTORED, WIRE_ERROR, WIRE_ANALYZED, WIRE_SHADOWED, WIRE_COMPLETIONS, WIRE_EVENT_COUNT
} wire_Event;

/* "init", "import", ...; the op named by a frame's "op" member, or -1. */
const char *wire_op_name(wire_Op op);
int wire_op_of(json_t *msg);
/* "ready", "fatal", ...; the event named by a frame's "event" member, or -1. */
const char *wire_event_name(wire_Event ev);
int wire_event_of(json_t *msg);

/* Send one frame (blocking, EINTR-safe).  0 on success, -1 on error. */
int wire_send(int fd, json_t *msg, const void *blob, size_t bloblen);
/* The same with the frame's JSON text already written (n bytes of one
** object: jtext_writer). */
int wire_send_text(int fd, const char *json, size_t n, const void *blob, size_t bloblen);

/* Append one frame's bytes to the growing buffer *buf (*len used, *cap
** allocated), for a sender that writes without blocking.  0, or -1 (out of
** memory or too large; the buffer is unchanged). */
int wire_frame(json_t *msg, const void *blob, size_t bloblen, unsigned char **buf, size_t *len,
               size_t *cap);
/* The same with the frame's JSON text already written. */
int wire_frame_text(const char *json, size_t n, const void *blob, size_t bloblen, unsigned char **buf,
                    size_t *len, size_t *cap);
/* Send bytes already framed (wire_frame) whole, blocking.  0, or -1. */
int wire_send_bytes(int fd, const void *p, size_t n);

/* Buffered reading of frames: one read() brings what the socket holds. */
typedef struct wire_reader {
  unsigned char *buf;
  size_t off, len, cap;   /* unread bytes are buf[off..len) */
  size_t want;            /* bytes of the incomplete frame at off, once known */
} wire_reader;

/* The next whole frame already read: 1 (then *msg, a JSON object, and
** *blob, malloc'd or NULL when empty, belong to the caller; blob may be
** NULL to drop it), 0 when no whole frame is buffered, -1 with a message in
** err when the stream is malformed. */
int wire_next(wire_reader *r, json_t **msg, unsigned char **blob, size_t *bloblen, char *err,
              size_t errlen);

/* One read() into the buffer: bytes read, 0 at end of file, -1 (errno). */
ssize_t wire_fill(int fd, wire_reader *r);

/* Receive one frame (blocking).  0, or -1 with a message in err: "eof"
** when the peer closed between frames. */
int wire_recv(int fd, wire_reader *r, json_t **msg, unsigned char **blob, size_t *bloblen,
              char *err, size_t errlen);

/* Drop whatever is buffered and free the buffer (for a new connection). */
void wire_reader_reset(wire_reader *r);

/* The progress page (progress.c): a page of memory the kernel shares with
** its worker (a sealed memfd handed over as WORKER_PROGRESS_FD, mapped and
** closed before the sandbox), where the worker counts the outcome frames
** it made.
** Should the worker die, those the kernel did not receive were held in its
** outbox and died with it: the calls they answered ran to their end, and
** the call after them is the one that was running.  A worker without the
** page holds no outcome. */
typedef struct worker_Progress {
  uint64_t outcomes;       /* written by the worker only, release order */
  /* A cancel (docs/protocol.md, "Cancelling a running call"): the kernel
  ** writes the number of outcomes the worker will have made once the call
  ** to cancel ends, plus one, then sends SIGUSR1 (again every 10 ms until
  ** the outcome comes).  The worker cancels only the call whose outcome
  ** would be that one, so a signal arriving late never cancels the next
  ** call of a batch.  0: none. */
  uint64_t cancel_at;      /* written by the kernel only */
  /* An interrupt (docs/protocol.md, "Interrupting a running transaction"):
  ** as a cancel, for the attempt whose outcome would be interrupt_at - 1
  ** (0: none), with the same signal; interrupt_seq numbers the requests,
  ** written before interrupt_at, so that the worker acts on each once
  ** however often the signal comes (again every 10 ms until the pause or
  ** the outcome), and not at all once it has paused. */
  uint64_t interrupt_at;   /* written by the kernel only */
  uint64_t interrupt_seq;  /* written by the kernel only */
} worker_Progress;
#define WORKER_CANCEL_SIGNAL SIGUSR1
#define WORKER_PROGRESS_SIZE ((size_t)4096)

/* The report socket (docs/worker-frames.md, "Shadows"): a SOCK_SEQPACKET
** socketpair the kernel makes for its live worker, handed over as
** WORKER_REPORT_FD and kept through the sandbox.  Its records go one way,
** worker to kernel; each is whole or not sent (a process killed in the
** middle of one sends nothing of it): a header of WIRE_RECORD_HEAD bytes —
** the kind, three zero bytes, the shadow's id (32-bit big-endian, the
** kernel's, from the "shadow" frame) — then the record's bytes:
**   L  the fork gate's seccomp listener, passed as SCM_RIGHTS (id 0): the
**      first record, sent as the sandbox goes up, before any input;
**   D  a piece of a shadow's report (JSON text, in order);
**   E  its last piece: the report is whole;
**   X  the shadow ended and its worker reaped it: its wait status (32-bit
**      big-endian), sent by the worker, never by the shadow.
** A record is at most WIRE_RECORD_MAX bytes, header included. */
enum { WIRE_REC_LISTENER = 'L', WIRE_REC_DATA = 'D', WIRE_REC_END = 'E', WIRE_REC_EXITED = 'X' };
#define WIRE_RECORD_HEAD 8
#define WIRE_RECORD_MAX ((size_t)32 << 10)
/* Shadows alive at once, at most (the kernel's count and the worker's),
** a parked one included. */
#define WIRE_SHADOWS_MAX 2
/* The id of a parked shadow's X record when it ended before its job came
** (no kernel id is ever this). */
#define WIRE_SHADOW_PARKED 0xffffffffu

/* How the kernel starts its worker (`jiti __worker` arguments). */
typedef struct worker_Options {
  const char *const *foreign;  /* C libraries granted (--allow-foreign): opened
                                  before the sandbox, which forbids it later */
  size_t nforeign;
} worker_Options;

/* Serve the kernel on fd until it says "exit" or goes away.  Returns the
** process exit status.  Runs the world on a thread with a large stack.
** opt may be NULL (no grants). */
int worker_main(int fd, const worker_Options *opt);

#endif
