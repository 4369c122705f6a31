/*
** daemon.h — the kernel daemon (`jiti kernel`): its state and its parts;
** docs/protocol.md is the reference for what they implement.
**
**   dloop.c      options; the kernel opened, served, closed.  The top: no
**                other part calls into it (to stop, a part sets stop_why)
**   dpoll.c      the event loop (dpoll.h): descriptors, timers and the
**                hooks run before each sleep, registered by the parts
**   dclients.c   client connections, bytes only: request lines in,
**                buffered lines out
**   dreply.c     every reply: a keyed request's recorded (dkeys.c), none
**                sent before the generation it may carry is durable
**   drequests.c  each request checked against its op before anything is
**                queued; those the daemon answers itself (hello, status,
**                history, subscribe, shutdown)
**   dqueue.c     the FIFO queues requests wait in
**   dsched.c     what the worker does next (queries, transactions, batches
**                of calls, commands to a paused transaction, a rollback
**                and its check), the frames it answers with
**   dcall.c      a transaction's end, from its outcome frame to its reply:
**                held for group commit, published on its own, or answered;
**                the reply (engine.h reply_write) and outcome event of each
**   dgroup.c     group commit: the calls the worker finished ahead of the
**                durable revisions (held by dcall.c), written together in
**                one store transaction by the store writer, decided, synced
**   dsync.c      the store writer: the thread that writes a group and
**                syncs it off the loop; dstore() for everything else
**   dshadow.c    verifications on shadows of the live worker (copies it
**                forks between attempts): queued, sent as "shadow" frames,
**                their forks let through the worker's fork gate, their
**                reports read from the report socket, killed at their
**                timeout and when the kernel stops
**   dworker.c    the worker processes (DWorker): the live one, started
**                from CURRENT (workerproc.h) without blocking the loop, its
**                frames in, its death and replacement; helpers for one piece
**                of work each (a rollback's check), driven alike; every
**                worker's stderr into the log
**   dvouch.c     every frame of the worker checked against what the daemon
**                expects (engine.h vouch_); a worker that breaks a rule
**                is killed
**   dkeys.c      idempotency keys: outcomes replayed to retried requests,
**                a key reused for another request refused
**   devents.c    the attempts' events, group-committed to the store with
**                the generation; subscribers' event lines; a call that
**                publishes nothing leaves no events (dtally.c counts it)
**   dtally.c     what is counted instead of recorded one event each:
**                counters, key-only records
**   dretain.c    the events' retention (--events-keep, --events-max-age)
**   dincident.c  failing calls of opted-in functions become incidents
**   dtraffic.c   successful calls of opted-in functions, sampled: the
**                traffic a repair is checked against
**   dlog.c       log lines, buffered
**
** One Daemon object holds all of the daemon's state; the only global is the
** SIGTERM flag, which a signal handler must reach.
*/
#ifndef jiti_daemon_h
#define jiti_daemon_h

#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <jansson.h>
#include "cli.h"
#include "dpoll.h"
#include "engine.h"
#include "jtext.h"
#include "net.h"
#include "proto.h"
#include "workerproc.h"

#define DAEMON_MAX_CLIENTS 1000     /* default --max-clients */
#define DAEMON_RESERVED_SLOTS 8     /* connections past it, served status and stop only */
#define DAEMON_IDLE_TIMEOUT 600     /* default --idle-timeout, seconds */
#define DAEMON_OUTPUT_MAX ((size_t)256 << 20)  /* unread replies held for all clients */
#define DAEMON_MAX_QUEUE 10000
#define DAEMON_MAX_BATCH 64   /* application calls handed to the worker at once */
#define DAEMON_MAX_AHEAD 1024 /* accepted calls the worker may hold awaiting
                                 their commit (its stacking) */

/* The order in which the loop hands out what is ready in one turn (dpoll.h
** ranks): a group made durable first, the worker's stderr before its
** frames, the clients, and new connections last. */
enum { RANK_SYNC, RANK_WORKER_ERR, RANK_WORKER, RANK_CLIENT, RANK_LISTENER };

typedef struct Client {
  int fd;
  uint64_t serial;      /* never reused: replies find their client by it */
  char *in;
  size_t inlen, incap;
  char *out;
  size_t outlen, outoff, outcap;
  int closing;          /* 1: close once the output is flushed; 2: now */
  int subscribed;       /* receives event lines */
  int reserved;         /* accepted into an operator slot: status and stop only */
  int cut_off;          /* closed for too much unread output: 1 its own, 2 everyone's */
  double active;        /* daemon_now() of its last request or accepted output */
  size_t *held;         /* the daemon's count of unread reply bytes (outbytes) */
  struct Daemon *D;     /* (for its loop callback) */
} Client;

/* A request waiting for the worker. */
typedef struct Pending {
  uint64_t client;      /* serial; 0 = nobody (timeouts, shutdown) */
  json_t *id;           /* the request's id, or NULL */
  json_t *req;
  proto_Op op;
  int retried;          /* a query already re-sent to a fresh worker */
  int note;             /* what a call was sent to note (dtraffic_asks, REQUEST_NOTE_*
                           bits): its outcome may say which world function it
                           called, its diagnosis what it read */
} Pending;

/* FIFO: the n requests v[head..head+n); popping is O(1). */
typedef struct Queue { Pending *v; size_t head, n, cap; } Queue;

/* What the daemon waits for from a worker.  W_CHECK: nothing from the
** live worker, while a helper checks for the running transaction.
** W_SHADOW: the answer to a "shadow" frame (dshadow.c). */
enum { W_NONE, W_START, W_QUERY, W_ATTEMPT, W_COMMIT, W_CHECK, W_SHADOW };

/* Events as stored (seq and time added, secrets redacted), one record
** after another: u64 seq, u32 length, the JSON text.  The store writer
** reads back the events a write stored when someone has subscribed, inside
** its own transaction, so that the loop can tell them without reading the
** store, which would first need the journal checkpointed. */
typedef struct StoredEvs { unsigned char *buf; size_t len, cap, off; } StoredEvs;

/* A counter of what leaves no events (dtally.c): its total, and what of
** it the store does not have yet. */
typedef struct Count {
  char kind[STORE_COUNTER_NAME_MAX + 1], outcome[STORE_COUNTER_NAME_MAX + 1];
  uint64_t total, pending;
  int64_t first_ms, last_ms;   /* of the total; of the pending ones */
} Count;

/* The counters, and the key-only records (outcomes kept only as their
** idempotency keys' records) not yet written. */
typedef struct Tally {
  Count *c;
  size_t n, cap;
  char **key;                  /* members text of each key-only record */
  size_t *klen;
  int64_t *ktime;
  size_t nkeys, kcap;
  uint64_t attempt_saved;      /* the attempt mark the store has */
  double first;                /* daemon_now() of the oldest pending; 0: none */
} Tally;

/* A tally taken for a write: its own copies (the loop may count on). */
typedef struct DTally {
  store_count *counts;
  Count *copy;
  size_t ncounts;
  store_ev *keys;
  size_t nkeys;
  uint64_t attempt;
} DTally;

/* Events waiting to be written to the store in one transaction (group
** commit: one sync for many events; see devents.c). */
typedef struct EventBuf {
  json_t **ev;           /* event i: an object, or NULL and */
  char **text;           /* its members as text (devents_add_text) */
  size_t *len;
  int64_t *time_ms;
  size_t n, cap;
  double first;          /* daemon_now() when the oldest was buffered */
  uint64_t told;         /* the last stored event subscribers got (the last
                            stored when the first subscribed); 0 while
                            nobody listens */
  StoredEvs untold;      /* read back by the store writer, not yet told */
  /* the "started" of the running call or preview, held until its outcome
  ** says whether it leaves events (devents_started) */
  struct { uint64_t attempt; char *text; size_t len; int64_t time_ms; double since; } held;
  uint64_t quiet;        /* the last attempt counted rather than recorded */
  int written;           /* events were written since the last prune looked */
} EventBuf;

/* The events' retention (dretain.c): the bounds, and the prunes made. */
typedef struct Retain {
  uint64_t keep;         /* --events-keep (0: no bound) */
  int64_t max_age_ms;    /* --events-max-age (0: none) */
  double next;           /* daemon_now() before which no prune starts */
  double age_next;       /* when events may have aged past the bound */
  int more;              /* the last prune stopped at its batch: more are due */
  int running;           /* a prune is with the store writer */
  int done;              /* prunes made */
  uint64_t pruned;       /* events pruned since the kernel started */
  uint64_t remaining;    /* events in the store after the last prune */
} Retain;

/* A successful call offered to the traffic sample (dtraffic.c): its own
** copies, each NUL-terminated UTF-8 within the store's bounds. */
typedef struct TrafficCall {
  char *function, *signature, *request, *result;
  int64_t time_ms;
  uint64_t rng;
} TrafficCall;

/* The calls offered and not yet handed to a write, and the generator of
** their random values (dtraffic.c). */
typedef struct Traffic {
  TrafficCall **v;
  size_t n, cap;
  double first;          /* daemon_now() when the oldest was offered; 0: none */
  uint64_t rng;          /* the generator's state: the same start in every kernel */
  uint64_t offered, skipped, kept, dropped;  /* since the kernel started */
} Traffic;

/* Calls taken for a write: the writer's while it writes (dtraffic.c). */
typedef struct DTraffic {
  TrafficCall **v;
  size_t n, cap;
  size_t waiting;        /* v[0..waiting) came from the calls waiting: given
                            back should the write fail (a group's own are undone) */
  int rc;                /* the store's code (STORE_OK until written) */
  size_t kept;           /* those it kept (a free slot, or one replaced) */
  char err[256];
} DTraffic;

typedef struct DWorker DWorker;
typedef struct Daemon Daemon;

/* Verifications on shadows (dshadow.c): those waiting for the worker and
** those running, in the order they were asked for; the live worker's fork
** gate. */
typedef struct DShadow DShadow;
typedef struct Shadows {
  DShadow *first, *last;
  uint32_t next_id;      /* the kernel's numbers for them (never 0) */
  int running;           /* sent and not yet reaped by the worker (its count) */
  int listener;          /* the live worker's fork gate (a seccomp listener); -1: none */
  int permit;            /* one clone may pass the gate: a "shadow" frame is out */
  DShadow *forking;      /* the one whose "shadow" frame is out (W_SHADOW) */
  /* A shadow parked at a failure (docs/repair.md, "Modes"): calls asked to
  ** park whose outcomes are still to come, whether a clone passed the gate
  ** for one of them, and the one parked (pid 0: none; it holds one of the
  ** worker's slots until the worker reaps it, killed or not). */
  int park_asks;
  int park_cloned;
  struct { pid_t pid; int pidfd; uint64_t incident; } parked;
  int park_fd;           /* the copy an outcome just named, held (dshadow_park_vouch); -1 */
} Shadows;

/* The running transaction: call, act, preview, apply, invariant-add/-remove. */
typedef struct Txn {
  int active;
  uint64_t attempt;
  proto_Op op;
  char *source;          /* for logs and events */
  char *summary;         /* the revision's summary when it publishes */
  double t0;
  uint64_t responder;    /* client to answer with the worker's next message */
  json_t *responder_id;
  double deadline;       /* pause timeout */
  int timed_out, aborting_for_shutdown;
  int grouped;           /* a call without a generation: published by
                            group commit (dgroup.c) */
  json_t *req;           /* a grouped call's request: run again should the
                            worker die with its outcome (dsched_worker_died) */
  int published;
  uint64_t revision;     /* published revision */
  uint64_t published_gen;  /* the generation after its commit */
  json_t *outcome;       /* the outcome frame published on its own: its
                            reply waits for the worker's answer (dcall.c) */
  json_t *changes;       /* its changes as the store took them */
  char *failure;         /* why its publication failed, or NULL */
  int fenced;            /* ... because this kernel no longer leads its replicated world */
  int standby_call;      /* a standby's call run as a preview: refused if it changed the world */
  events_Key *key;       /* the request's idempotency key (digests), or NULL */
  char *invariant;       /* an invariant-add/-remove: the name it gave */
  int sent;              /* what the worker was sent last: TXN_SENT_ATTEMPT or a txn_CmdType */
  DWorker *check;        /* a rollback's: the helper checking its world (W_CHECK) */
  uint64_t target;       /* a rollback's revision */
  int pause_no;          /* the number of the pause it showed last (0: none) */
  int pause_max;         /* the highest pause number it showed */
  int decision;          /* W_COMMIT: WIRE_COMMIT or WIRE_RESTORE sent */
  int decided_changed;   /* the commit said changed */
  uint64_t cancel_timer; /* the cancel signal sent again until the outcome (0: none) */
  int keep_on_disconnect;  /* "on_disconnect": "keep": its client's leaving cancels nothing */
  int pausable;          /* an act, or a call that asked "on_error": "pause"
                            (request_pausable): and so it may be interrupted */
  uint64_t interrupt_timer;  /* the interrupt signal sent again until a pause or the outcome (0: none) */
  json_t *repair;        /* a repair's apply (drepair.c): its request, with
                            incident, function, verification, response_id */
  int noting;            /* what the worker was asked to note (Pending.note,
                            REQUEST_NOTE_* bits) */
  TrafficCall *traffic;  /* one published on its own: its call for the traffic
                            sample once committed (dcall.c), or NULL */
} Txn;

#define TXN_SENT_ATTEMPT (-1)

/* What becomes of a helper worker (dworker_helper). */
typedef struct DWorkerOps {
  /* its "ready" (m, not yet vouched for: vouch_ready is the op's); the op
  ** ends the helper once done with it (dworker_helper_end) */
  void (*ready)(Daemon *D, DWorker *k, json_t *m);
  /* it could not start (why, escaped: its "fatal" message, its death, the
  ** start-up deadline); it is ended after */
  void (*failed)(Daemon *D, DWorker *k, const char *why);
} DWorkerOps;

/* One worker process and the daemon's conversation with it (dworker.c):
** the live worker that serves the clients (Daemon.live, driven by
** dsched.c), or a helper started for one piece of work (Daemon.helpers,
** dworker_helper: a rollback's check), both read and written from the loop
** through the same callbacks, none ever waited for. */
struct DWorker {
  Daemon *D;
  const char *role;      /* for the log: "worker", "checking worker" */
  wproc w;
  int wait;              /* W_... */
  struct { unsigned char *buf; size_t len, off, cap; } out;  /* start-up frames not yet written */
  size_t start_entries;
  double start_deadline;
  uint64_t base;         /* its generations count from here */
  uint64_t wgen;         /* its generation as the daemon counts it (dvouch.c):
                         ** every frame's is checked against it */
  char status[32];       /* its transaction status, as it last said */
  char violation[160];   /* how it broke a frame rule, for its death */
  jtext_writer frame;    /* the frame of calls being written (dsched.c): its buffer is kept */
  uint64_t restart;      /* the timer that retries a failed start (0: none) */
  /* its work (dsched.c: the live worker's) */
  Txn cur;               /* the transaction it runs */
  Queue batch;           /* calls sent to it with cur, to run after it */
  Pending query;         /* the query it is answering (W_QUERY) */
  int in_pause;
  json_t *pause;         /* the pause (as it reported it) while in_pause */
  const DWorkerOps *ops; /* a helper's; NULL for the live worker */
  void *job;             /* a helper's work (its ops' business) */
  DWorker *next;         /* the next helper */
};

/* An outcome frame decoded once (dcall.c): pointers into m, which the
** holder keeps referenced. */
typedef struct DOutcome {
  json_t *m;
  const char *reason;    /* never NULL: "error" when it gave none */
  int accepted;          /* reason is accepted */
  int committed;         /* kept already (it changed nothing) */
  int awaiting;          /* status awaiting-commit: to be published */
  const char *status, *message;   /* or NULL */
  json_t *value, *values, *output, *changes;   /* or NULL */
  json_t *diagnosis;     /* a failure that could not pause: why (or NULL) */
  json_t *incident;      /* the incident it opened or joined (dincident.c), or NULL */
} DOutcome;

/* A call the worker finished whose reply must wait: it wrote a revision
** not yet durable, or ran on top of one (dgroup.c). */
typedef struct Held {
  uint64_t attempt, client;
  json_t *id;
  double t0;
  char *source;          /* for the log */
  char *summary;         /* its revision's */
  DOutcome out;          /* the worker's outcome (out.m referenced) */
  jtext_writer reply;    /* its reply, written once its commit decided
                            (complete), still open for the id */
  char *event;           /* its outcome event's text, open where the commit's
                            revision and generation go (events_text_close) */
  size_t event_len, event_split;
  json_t *changes;       /* what it wrote (the outcome's "changes"); NULL: nothing */
  unsigned char *blob;   /* their encodings */
  size_t bloblen;
  uint64_t rev, gen;     /* what its commit decided: the reply's */
  int quiet;             /* it published nothing and leaves no events: its
                            outcome is counted, and kept only as its key's
                            record (devents_ended) */
  int keyed;             /* its request had an idempotency key */
  TrafficCall *traffic;  /* its call for the traffic sample, written with its
                            group (dgroup.c), or NULL */
} Held;

/* Groups committed whose sync has not yet returned (dsync.c), oldest first:
** each covers the next n held calls of the FIFO. */
#define GROUP_SYNCING_MAX 8
typedef struct Synced {
  size_t n;              /* its calls */
  uint64_t seq;          /* durable once a sync covered this many commits */
  uint64_t rev0, gen0;   /* the durable revision and generation before it */
  uint64_t first_event;  /* its events in the store: first_event.. */
  size_t nevents;
} Synced;

typedef struct DSync DSync;

/* A write handed to the store writer (dsync.c): a group of calls
** (dgroup.c) or a batch of events (devents.c), embedded first in what
** the write needs. */
typedef struct DWrite DWrite;
struct DWrite {
  int (*run)(store_env *s, DWrite *w);   /* on the writer thread: the store call */
  void (*done)(Daemon *D, DWrite *w);    /* then on the loop: what came of it */
  uint64_t seq;          /* the commit's number (Group.seq) */
  int rc;                /* run's STORE_ code */
  char err[1024];        /* the store's message when rc is not STORE_OK */
  int read_back;         /* someone subscribed when it was handed over */
  StoredEvs stored;      /* the events it stored, read back (devents_read_back) */
};

/* Decisions (commit, restore) the worker may leave unanswered: each commit
** keeps at least one of its at most DAEMON_MAX_AHEAD awaiting calls. */
#define GROUP_ACKS_MAX (DAEMON_MAX_AHEAD + 8)

typedef struct Group {
  Held *v;               /* FIFO: v[head..head+n), oldest first; the first
                            `committed` are written, awaiting their sync */
  size_t head, n, cap, committed;
  size_t writing;        /* the next calls after those, in a group the store
                            writer has (dsync.c) */
  Synced syncing[GROUP_SYNCING_MAX];
  size_t nsyncing;
  uint64_t seq;          /* commits made that wait for a sync */
  int restoring;         /* a restore was sent and not yet answered: the
                            outcomes before its answer ran on what it undid */
  int acks;              /* commit / restore frames not yet answered */
  struct { int ev; uint64_t moves; } ackq[GROUP_ACKS_MAX];  /* their answers, due
                            in order (ring from ackhead): the event and how far
                            each moves the worker's generation */
  size_t ackhead;
  uint64_t commits, revisions;  /* group commits, revisions published in them */
} Group;

/* A selected function's calls and failures, as the watch counts them
** (dwatch.c): a bounded table, the least called slot reused. */
#define DWATCH_COUNTED 64
typedef struct DCount {
  char function[STORE_NAME_MAX + 1];
  uint64_t calls, failures;
} DCount;

/* A repair being watched (dwatch.c). */
typedef struct DWatch {
  char function[STORE_NAME_MAX + 1];
  uint64_t incident, revision;   /* the incident and the repair's revision */
  unsigned window, calls, failures;
  double rate_before;            /* failures per call before the repair */
} DWatch;

/* A tentative repair's function as this kernel counted it since the
** repair (dtentative.c): what jiti repairs shows. */
typedef struct DTentative {
  char function[STORE_NAME_MAX + 1];
  uint64_t incident, revision, calls, failures;
} DTentative;

/* A repair to undo between transactions (dwatch.c): the watch's, or an
** operator's reject (client and id: answered when it is done; id NULL
** for none). */
typedef struct DUndo {
  char function[STORE_NAME_MAX + 1];
  uint64_t incident, revision;
  unsigned failures, calls;      /* the watch's count (a reject: 0) */
  int reject;                    /* 1: an operator's reject */
  uint64_t client;
  json_t *id;
} DUndo;

/* A call waiting for the repair of its incident (dpark.c). */
typedef struct DParked {
  uint64_t client;
  json_t *id, *req;              /* to run again */
  json_t *failure;               /* the reply it gets if no repair comes */
  uint64_t incident;
  double deadline;
} DParked;

/* Replication through etcd (drepl.c, docs/replication.md): the options,
** and the leader's state (opaque). */
#define DREPL_LEASE_DEFAULT 5   /* seconds */
typedef struct DReplOpts {
  const char *urls, *world;    /* --replicate, --world; NULL: not replicated */
  int lease;                   /* --lease seconds (0: DREPL_LEASE_DEFAULT) */
  int standby;                 /* --standby */
  int standby_at;              /* its index in cmd_kernel's argv (0: none) */
} DReplOpts;
typedef struct DRepl DRepl;

typedef struct Daemon {
  const char *dir;
  const char *wire_trace;  /* JITI_WIRE_TRACE: a file for every frame (dworker.c), or NULL */
  char sock[128];
  char pidfile[4096];
  store_env *store;      /* reached through dstore() only (dsync.c) */
  int lfd;
  int spare_fd;          /* given up to refuse a client when out of descriptors */
  Client **clients;      /* max_clients + DAEMON_RESERVED_SLOTS */
  DPoll *poll;           /* the event loop (dpoll.h) */
  int nclients, max_clients;
  double idle_timeout;   /* close a connection idle this long (0: never) */
  double idle_sweep;     /* daemon_now() of the next look for idle ones */
  size_t outbytes;       /* unread reply bytes of all clients (DAEMON_OUTPUT_MAX) */
  uint64_t next_serial;
  limits_Table limits;   /* every transaction's, and the pause timeout */
  grant_List grant;      /* the C libraries granted (--allow-foreign) */
  char grant_text[STORE_FOREIGN_MAX + 1];  /* as each revision's manifest records it */
  json_t *foreign_failed;  /* the granted libraries the worker could not open:
                           ** [{library, message}] from its last "ready" */
  /* the worker */
  DWorker live;          /* the one that serves the clients */
  DWorker *helpers;      /* others, each for one piece of work */
  uint64_t gen, revision;  /* the generation clients see; CURRENT */
  vouch_Checker vouch;   /* decodes the entries the worker reports */
  uint64_t gen_saved;    /* the store's generation high-water mark: no
                         ** generation above it may reach a client */
  Queue txq, queryq, cmdq;  /* transactions, queries, pause commands */
  store_repair_rule *repair_rules;  /* the repair policy (dincident.c), read once */
  size_t nrepair_rules;
  int repair_loaded;
  DWatch *watches;       /* repairs being watched (dwatch.c) */
  size_t nwatches;
  DUndo *undos;          /* repairs to undo between transactions, in order */
  size_t nundos;
  DTentative *tentative; /* tentative repairs' functions, counted (dtentative.c) */
  size_t ntentative;
  uint64_t calls_served; /* application calls ended since the kernel started */
  DCount counts[DWATCH_COUNTED];  /* selected functions' calls (dwatch.c) */
  DParked *parked;       /* calls waiting for a repair (dpark.c) */
  size_t nparked;
  Group group;           /* calls finished ahead of the durable revisions */
  Shadows shadows;       /* verifications on shadows (dshadow.c) */
  DSync *sync;           /* the thread that syncs committed groups (dsync.c) */
  DReplOpts repl_opts;
  net_ServerOpts net_opts;  /* --listen and its TLS options (net.h) */
  net_Server *net;       /* the TCP listener, or NULL */
  DRepl *repl;           /* replicated through etcd (drepl.c), or NULL */
  int fenced;            /* etcd no longer takes this kernel's commits: nothing more is written or acknowledged */
  int fence_lost;        /* ... because the world is no longer this kernel's (lease lapsed, compare failed):
                            its calls are answered `fenced`, and it steps down to standby */
  char fence_why[600];
  int64_t adopt_lease;   /* a standby that won: the lease its restart as the leader leads on with (drepl_stop) */
  int adopt_ttl;
  EventBuf events;
  Tally tally;           /* dtally.c */
  Traffic traffic;       /* dtraffic.c */
  Retain retain;         /* dretain.c */
  /* counters */
  uint64_t next_attempt, attempts, restarts, consecutive_failures, subscribers;
  double started;
  const char *stop_why;  /* set by any part: the loop begins the shutdown */
  int stopping;
  double stop_deadline;
  int detached;
  struct { char *buf; size_t len, cap; int urgent; time_t second; char when[40]; } log;  /* log lines not yet
                         ** written; the time of their second */
  struct {
    json_t *done;        /* key digest -> {reply, bytes, request?}: outcomes to replay */
    json_t *flight;      /* "client id" -> {key, request} digests: keyed requests not answered yet */
    json_t *order;       /* key digests of done, oldest first */
    size_t bytes;        /* of the recorded replies */
  } keys;                /* dkeys.c */
} Daemon;

/* DAEMON_ASSERT(cond): an invariant of the daemon's own state (never a
** check of input: a worker or a client that breaks a rule is answered, not
** asserted on).  Compiled into the GC-stress and sanitizer builds and any
** build without NDEBUG; nothing otherwise.  A failure is logged and
** aborts. */
#if defined(JITI_GC_STRESS_DEFAULT) || defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
#define DAEMON_CHECKS 1
#define DAEMON_ASSERT(c) ((c) ? (void)0 : daemon_assert_failed(#c, __FILE__, __LINE__))
#else
#define DAEMON_CHECKS 0
#define DAEMON_ASSERT(c) ((void)0)
#endif
void daemon_assert_failed(const char *what, const char *file, int line) __attribute__((noreturn));

/* The daemon's name for the controller's one clock (cli.h). */
static inline double daemon_now(void) { return mono_now(); }

/* dlog.c */
void dlog(Daemon *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));  /* buffered */
void dlog_soon(Daemon *D, const char *fmt, ...)  /* buffered until the next events write */
    __attribute__((format(printf, 2, 3)));
/* The line of a finished attempt, buffered as dlog_soon's: "attempt N OP
** OUTCOME[ EXTRA] (T ms since t0, generation G)[ -> revision REV]: source"
** (rev 0: none; extra may be NULL). */
void dlog_attempt(Daemon *D, uint64_t attempt, const char *op, const char *outcome, const char *extra, double t0,
                  uint64_t gen, uint64_t rev, const char *source);
void dlog_flush(Daemon *D);           /* write the buffered log lines */
/* A line from a thread other than the loop's (net.h's listener): written at
** once, in one write, the loop's buffer untouched (ud: unused). */
void dlog_thread(void *ud, const char *text);
double dlog_before(void *ud, double now);  /* hook before each sleep: the lines written
                                      ** unless they go with the events */
/* A line of the worker's stderr, escaped already (workerproc.h): "<time>
** worker[PID]: text", never a line of the kernel's. */
void dlog_worker(Daemon *D, int pid, const char *text, size_t n);

/* dclients.c: the connections; bytes only */
Client *dclients_find(Daemon *D, uint64_t serial);
void dclients_line(Client *c, const char *text, size_t n);  /* one line to a client */
void dclients_flush(Client *c);
void dclients_read(Daemon *D, Client *c);
void dclients_free(Daemon *D, int i);
void dclients_accept(Daemon *D);
int dclients_listen(Daemon *D);         /* the loop accepts on D->lfd; -1 (errno) */
/* Hooks run before each sleep (dpoll.h): dclients_reap closes the
** connections done with; dclients_before sets what each waits for and
** closes idle ones (seconds until the next look). */
double dclients_reap(void *ud, double now);
double dclients_before(void *ud, double now);

/* dreply.c: every reply; a keyed request's recorded, none before its
** generation is durable */
void dreply(Daemon *D, uint64_t serial, json_t *id, json_t *msg);  /* steals msg */
/* The same for a reply written as text: w holds its object, still open
** (its id is added, then the brace); frees w's buffer. */
void dreply_text(Daemon *D, uint64_t serial, json_t *id, jtext_writer *w);
void dreply_err(Daemon *D, uint64_t serial, json_t *id, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* dvouch.c: the daemon trusts no frame */
/* 0 when frame m (blob: its entry bytes) is one the worker may send now;
** else the worker has been killed (logged, its request answered as for a
** crash: interrupted) and -1 returned: nothing of m may be used. */
int dvouch_frame(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen);
/* The worker's stream does not read as frames (why): as for a broken rule. */
void dvouch_unreadable(Daemon *D, const char *why);
/* 0 for a ready frame the starting worker may send; -1 logged (the start
** fails). */
int dvouch_ready(Daemon *D, json_t *m);
/* A decision sent to the worker for the group (dgroup.c): its answer is
** due after those before it; moves: the generations it adds. */
void dvouch_expect_ack(Daemon *D, int ev, uint64_t moves);
/* The worker made (or claimed) a process the kernel did not ask for (why,
** escaped): the rule `process` is broken, the worker killed as above. */
void dvouch_process(Daemon *D, const char *why);

/* dkeys.c: idempotency keys */
void dkeys_init(Daemon *D);
void dkeys_free(Daemon *D);
void dkeys_load(Daemon *D);            /* the keys the store keeps (store_keys_read) */
const char *dkeys_of(json_t *req);     /* the request's key, or NULL */
int dkeys_in_flight(Daemon *D, const char *key);  /* a request with key waits or runs */
int dkeys_replay(Daemon *D, uint64_t client, json_t *id, json_t *req);  /* 1: answered:
                                       ** with the outcome recorded for its key, or
                                       ** key-conflict when the key was another request's */
void dkeys_expect(Daemon *D, uint64_t client, json_t *id, json_t *req);  /* it was queued */
void dkeys_replied(Daemon *D, uint64_t client, json_t *id, json_t *reply);  /* record it */
int dkeys_awaits(Daemon *D, uint64_t client, json_t *id);  /* a keyed request's reply is to be recorded */
void dkeys_forget(Daemon *D, uint64_t client, json_t *id);  /* dropped unanswered */
void dkeys_tag_event(Daemon *D, json_t *ev);  /* the running attempt's key on its events */

/* dqueue.c */
int dqueue_push(Queue *q, uint64_t client, json_t *id, json_t *req, proto_Op op);
Pending dqueue_pop(Queue *q);
Pending dqueue_pop_back(Queue *q);
Pending *dqueue_peek(Queue *q);                   /* the head, or NULL */
Pending *dqueue_back(Queue *q);                   /* the tail, or NULL */
int dqueue_push_front(Queue *q, Pending p);       /* takes p's references */
void dqueue_pending_free(Pending *p);

/* dincident.c */
/* The repair policy read from the store once (D->repair_rules,
** nrepair_rules): 0, or -1 when it cannot be read (logged once: it is
** read again only after a repair-policy request). */
int dincident_policy(Daemon *D);
/* A diagnosis frame's function as the world's entry name (frames print
** names as the world's package sees them: a bare name is COMMON-LISP-
** USER's) into name (n bytes, STORE_NAME_MAX + 8 is enough): 0, or -1
** when it is no name. */
int dincident_frame_function(json_t *frame, char *name, size_t n);
/* A failed call's diagnosis (the outcome's) of running transaction t: the
** incident it opened or joined, {id, joined, function}, or NULL when none
** (not a call, no function the policy selects, an expected condition, or
** the store refused: logged).  *pause: 1 when the rule's mode is pause
** (the call waits for the repair: dpark.c), else 0. */
json_t *dincident_capture(Daemon *D, const Txn *t, json_t *diagnosis, int *pause);
/* The policy changed (a repair-policy request): read it again when needed. */
void dincident_policy_changed(Daemon *D);

/* dpark.c: calls that wait for their repair (a rule of mode pause).
** call: park t (its failure reply, its incident): 1, and t's client is
** answered later; 0: it cannot wait (answer it now).  incident: incident
** moved to status: repaired runs its waiting calls again, first in the
** queue; any other closed status answers them their failure.  before: the
** pause timeouts (a hook).  stop: every waiting call answered (shutdown). */
int dpark_call(Daemon *D, const Txn *t, json_t *failure, uint64_t incident);
void dpark_incident(Daemon *D, uint64_t incident, int status);
double dpark_before(void *ud, double now);
void dpark_stop(Daemon *D);

/* dwatch.c: the watch after a repair.  start: watch function for the next
** window calls (0: not at all), failures_before its failures before the
** repair.  call: every transaction's end is counted (called: the selected
** function a successful call was noted calling, failed: the function of
** the incident a failed one opened or joined, diagnosis: its diagnosis;
** each may be NULL).  undo_due: a repair is to be undone (the watch's, or
** queued by reject); undo does the first (a rollback revision of the
** repair's entries, the incident captured again, a fresh worker), between
** transactions on durable state.  queue: an operator's reject of the
** tentative repair of incident (its revision, function), answered to
** client/id when done: 0, or -1 out of memory.  revert: the undo itself
** on the store (no worker restart): the revision restoring the entries
** repair revision `revision` changed, published on D->revision with
** generation gen (*rev), then incident moved from `from` to captured with
** a note (why).  0 (also when the entries were restored already and only
** the incident moved: *rev is CURRENT); 1 when the repair's entries
** changed since (nothing written; err says what); -1 when the store failed
** (err). */
void dwatch_start(Daemon *D, uint64_t incident, const char *function, uint64_t revision, unsigned window,
                  uint64_t failures_before);
void dwatch_call(Daemon *D, const Txn *t, const char *called, const char *failed, json_t *diagnosis);
int dwatch_undo_due(Daemon *D);
void dwatch_undo(Daemon *D);
int dwatch_queue_reject(Daemon *D, uint64_t incident, uint64_t revision, const char *function, uint64_t client,
                        json_t *id);
int dwatch_revert(Daemon *D, uint64_t incident, uint64_t revision, int from, uint64_t gen, const char *summary,
                  const char *why, uint64_t *rev, char *err, size_t errlen);
void dwatch_free(Daemon *D);

/* drepair.c: automatic repair's requests (docs/repair.md), their members
** checked by drequests.c.  incident: read one (with "traffic": its
** function's recorded calls), move it ("from", "to": a supervisor's
** statuses), log an exchange ("note").  repair: verify a candidate on a
** shadow of the live worker, then queue its apply (op PROTO_REPAIR) or
** answer why not. */
void drepair_incident(Daemon *D, uint64_t client, json_t *id, json_t *req);
/* incidents: those in the statuses "status" names (all when absent),
** newest first, at most "limit", as jiti incidents --json lists them. */
void drepair_incidents(Daemon *D, uint64_t client, json_t *id, json_t *req);
void drepair_start(Daemon *D, uint64_t client, json_t *id, json_t *req);
/* A repair's apply about to start: when the failing definition changed
** since (someone edited it), the incident becomes stale, the client is
** answered, and 1 is returned: the apply does not run. */
int drepair_stale(Daemon *D, uint64_t client, json_t *id, json_t *req);
/* A repair apply's reply member {incident, status, function,
** verification} (NULL: t is no repair's apply). */
json_t *drepair_reply(const Txn *t, int repaired);
/* A repair's apply ended: published (its incident repaired by the same
** store transaction: subscribers told) or not (back to awaiting-model,
** with a note of why: reason, message). */
void drepair_apply_ended(Daemon *D, const Txn *t, int published, const char *reason, const char *message);
/* 1 when t is a repair's apply whose repair stays tentative ("promote":
** "manual"): its incident becomes tentative, not repaired. */
int drepair_tentative(const Txn *t);

/* dheal.c: heal, an operator's explicit repair request: an incident of
** kind explicit (the problem, the function, an optional repro and its
** expected value, the scope), from there on as any incident. */
void dheal_open(Daemon *D, uint64_t client, json_t *id, json_t *req);

/* dtentative.c: tentative repairs (docs/repair.md).  op: the repairs
** request (action list, promote, reject).  started: a tentative repair
** applied (counted from now).  call: a call of function (failed or not)
** counted for its tentative repair.  ended: incident no longer tentative.
** restart: at start, before the worker, every tentative repair undone,
** newest first (the last promoted state), or made stale when changed
** since.  free: the table. */
void dtentative_op(Daemon *D, uint64_t client, json_t *id, json_t *req);
void dtentative_started(Daemon *D, uint64_t incident, const char *function, uint64_t revision);
void dtentative_call(Daemon *D, const char *function, int failed);
void dtentative_ended(Daemon *D, uint64_t incident);
void dtentative_restart(Daemon *D);
void dtentative_free(Daemon *D);
/* dtraffic.c: the traffic sample of automatic repair (docs/repair.md) */
/* What the worker is to note of the call req of op (REQUEST_NOTE_* bits,
** engine.h), when a repair policy selects anything: the reads of any call
** that cannot pause (a failure may open an incident); the call itself
** ("note") of a plain call, its source within the sample's bounds, whose
** head may name a function the policy selects (a cheap, conservative
** reading of the source). */
int dtraffic_asks(Daemon *D, proto_Op op, json_t *req);
/* The running transaction t's call for the sample, from its outcome o: a
** call that succeeded, whose note names a function the policy selects,
** its result readable and within bounds; or NULL. */
TrafficCall *dtraffic_offer(Daemon *D, const Txn *t, const DOutcome *o);
void dtraffic_add(Daemon *D, TrafficCall *c);   /* for the next write (steals; NULL: none) */
void dtraffic_call_free(TrafficCall *c);
/* The calls waiting, into t (zeroed first), then those of a group's calls
** (dtraffic_push, steals): each only while the policy still selects it. */
void dtraffic_take(Daemon *D, DTraffic *t);
void dtraffic_push(Daemon *D, DTraffic *t, TrafficCall *c);
/* On the writer thread: t's calls offered to the store in one transaction
** (store_traffic_record_many); the store's code, also in t->rc. */
int dtraffic_write(store_env *s, DTraffic *t, unsigned flags);
/* Back on the loop: counted, a failure logged, freed.  written 0: the
** write did not happen (a group that failed: its own calls were undone,
** and are dropped; those that were waiting wait again). */
void dtraffic_done(Daemon *D, DTraffic *t, int written);
double dtraffic_due(Daemon *D);       /* seconds until the waiting calls are due (< 0: none) */
void dtraffic_policy_changed(Daemon *D);  /* the waiting calls the policy no longer selects dropped */
void dtraffic_free(Daemon *D);
struct json_t *dtraffic_json(Daemon *D);  /* status: {offered, kept, skipped, waiting} */

/* devents.c */
void devents_add(Daemon *D, json_t *ev);   /* buffer an event for the store; steals */
/* An attempt's "started" (text, stolen; NULL: out of memory, logged): a
** call's or a preview's is held until its outcome (devents_ended), any
** other's buffered at once. */
void devents_started(Daemon *D, uint64_t attempt, proto_Op op, char *text, size_t len);
/* The attempt's outcome is known: record, it publishes a revision or
** failed on an unhandled error (its diagnosis is evidence worth keeping).
** A call or preview that publishes nothing, ran on nothing undone and is
** still within a second of its start leaves no events: its start is
** dropped, its outcome counted (dtally.c), and 1 is returned; otherwise its
** start is buffered (first, when it was held) and 0 returned. */
int devents_ended(Daemon *D, uint64_t attempt, proto_Op op, const char *reason, int record);
int devents_quiet(Daemon *D, uint64_t attempt);   /* devents_ended counted it */
/* An attempt's outcome event (text, stolen): buffered; for an attempt
** counted instead, kept only as its key's record when keyed, else dropped. */
void devents_outcome(Daemon *D, uint64_t attempt, int keyed, char *text, size_t len);
/* Buffer an event given as its members' text (the hot path's: engine.h
** events_*_text); steals text, malloc'd; NULL (out of memory building it) is
** logged. */
void devents_add_text(Daemon *D, char *text, size_t len);
/* Make every buffered event an object (events.ev complete), for a store
** call that takes objects; -1 (logged) when out of memory. */
int devents_objects(Daemon *D);
void devents_put_back(Daemon *D, const store_ev *ev, size_t n);
                                      /* events taken out of the buffer and not
                                      ** written go back to its front (steals) */
void devents_flush(Daemon *D);        /* write the buffered events (and the
                                      ** generation), tell subscribers */
void devents_written(Daemon *D, uint64_t first);  /* they were written from seq first
                                                    ** on (0: lost): tell, drop them */
void devents_tell(Daemon *D, uint64_t first, size_t n);  /* subscribers get the n stored
                                                    ** from seq first on, and any
                                                    ** stored before them not told yet */
/* Subscribers get every event the store holds that they have not: after
** a write of the loop's own, synced, outside the event buffer (an incident). */
void devents_tell_stored(Daemon *D);
void devents_subscribed(Daemon *D);   /* a client subscribed (subscribers counts it) */
void devents_free(Daemon *D);         /* the buffers, at close (after the last flush) */
/* On the writer thread, after w stored events first..first+n-1: read them
** back into w->stored when w->read_back.  Returns the store's code. */
int devents_read_back(store_env *s, DWrite *w, uint64_t first, size_t n);
void devents_stored(Daemon *D, DWrite *w);   /* on the loop: w's read-back events
                                             ** wait to be told (takes them) */
double devents_due(Daemon *D);        /* seconds until a flush is due; < 0: none waits */
double devents_before(void *ud, double now);  /* hook before each sleep: a due flush
                                      ** (devents_flush_due); seconds until the next */
void devents_flush_due(Daemon *D);    /* the timed flush: as devents_flush, the meta
                                      ** page synced by the store writer */

/* dtally.c: what is counted instead of recorded */
void dtally_load(Daemon *D);          /* the store's counters, at start */
void dtally_free(Daemon *D);
void dtally_count(Daemon *D, const char *kind, const char *outcome);
void dtally_key(Daemon *D, char *text, size_t len);  /* a key-only record (members text; steals) */
double dtally_due(Daemon *D);         /* seconds until the pending ones are due (< 0: none) */
/* The pending ones (and the attempt mark), for a write: t owns copies;
** after it, dtally_done (ok 0: they are pending again). */
int dtally_take(Daemon *D, DTally *t); /* 0: nothing pending */
void dtally_done(Daemon *D, DTally *t, int ok);
struct json_t *dtally_json(Daemon *D); /* [{kind, outcome, count}] for status */

/* dretain.c: the events' retention */
/* If argv[*i] is --events-keep COUNT or --events-max-age DURATION, consume
** it and return 1; -1 after a message; 0 for another argument. */
int dretain_option(const char *cmd, int argc, char **argv, int *i, Retain *r);
extern const char DRETAIN_HELP[];     /* their lines of --help */
double dretain_due(Daemon *D);        /* seconds until a prune is due (< 0: none) */
void dretain_run(Daemon *D);          /* hand a due prune to the store writer */
struct json_t *dretain_json(Daemon *D);  /* status: the events kept and pruned */

/* drequests.c */
void drequests_handle(Daemon *D, Client *c, const char *line, size_t len);
/* A request line past PROTO_LINE_MAX (unended: none has ended yet, the
** connection's buffer is full): answered line-too-long; the connection
** closes. */
void drequests_too_long(Daemon *D, Client *c, int unended);

/* dsched.c */
void dsched_pump(Daemon *D);           /* give the worker its next request */
void dsched_frame(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen);  /* a frame from it */
/* What the worker was doing ends; lost: outcome frames it made that were
** never read (wproc_outcomes_unseen), held in its outbox when it died. */
void dsched_worker_died(Daemon *D, const char *how, uint64_t lost);
void dsched_abort_pause(Daemon *D, const char *why);
void dsched_fail_commands(Daemon *D, const char *code, const char *why);
void dsched_txn_clear(Daemon *D);      /* the running transaction's state freed */
void dsched_pause_end(Daemon *D);      /* the pause, if any, is over */
int dsched_client_waits(Daemon *D, uint64_t client);  /* 1: something it asked for waits */
/* Cancel the running transaction (attempt: the one asked for, 0: whichever
** runs).  0 when the worker was asked (its outcome answers the caller
** `cancelled`), else a proto_Code's name with a message in why. */
const char *dsched_cancel(Daemon *D, uint64_t attempt, char *why, size_t n);
/* Interrupt the running transaction (attempt as for dsched_cancel): it
** pauses at its next evaluation step with INTERACTIVE-INTERRUPT and a
** CONTINUE restart.  0 when the worker was asked (the pause answers the
** transaction's client), else a proto_Code's name with a message in why:
** not-running, not-found, paused (nothing runs: it is paused already),
** not-pausable (it cannot pause: jiti cancel stops it), not-allowed. */
const char *dsched_interrupt(Daemon *D, uint64_t attempt, char *why, size_t n);
/* A client left: the transaction it waits for is cancelled unless it asked
** to keep it. */
void dsched_client_gone(Daemon *D, uint64_t client);
void dsched_reply_paused(Daemon *D, uint64_t client, json_t *id);  /* "paused": a transaction
                                      ** that would wait behind the pause */
/* Hooks run before each sleep (dpoll.h): dsched_before gives the worker its
** next request (dsched_pump); dsched_before_pause aborts a pause past its
** timeout (seconds until it is due). */
double dsched_before(void *ud, double now);
double dsched_before_pause(void *ud, double now);
/* The invariants of the live worker's wait state (DAEMON_ASSERT): what the
** daemon waits for agrees with what it holds (a query, a transaction, a
** decision, a check, a pause). */
void dsched_check(Daemon *D);

/* dcall.c: a transaction's end, from its outcome frame to its reply */
void dcall_decode(DOutcome *o, json_t *m);
void dcall_outcome(Daemon *D, json_t *m, const unsigned char *blob, size_t bloblen);  /* the outcome frame */
void dcall_committed(Daemon *D, json_t *m);  /* the answer to a commit or restore of one published on its own */
void dcall_reply_decided(Daemon *D);  /* the reply of one published on its own (or refused), at D->gen */
/* The outcome event of the running transaction (message may be NULL, the
** idempotency key added); more members may be added before it is recorded. */
json_t *dcall_event(Daemon *D, const char *reason, const char *message);
void dcall_finish(Daemon *D, const char *reason, const char *extra);  /* logged; the running one ends */
void dcall_reply(Daemon *D, uint64_t client, json_t *id, const reply_Outcome *r);
/* Held calls (dgroup.c's FIFO): the worker told to undo them, or to keep
** count of them (unchanged: the indexes the store had already); a held
** call's reply completed at its commit (slot, effects: how the store took
** its changes, NULL when it wrote none), its outcome event recorded
** (recorded: it went with the group; a counted one keeps its key's record
** only), its reply sent, its end when the worker died; the calls v[from..n)
** answered publication-failed, or fenced when this kernel no longer leads
** its replicated world (and undone when restore). */
void dcall_restore_group(Daemon *D);
void dcall_commit_group(Daemon *D, size_t count, const size_t *unchanged, size_t nunchanged);
void dcall_complete(Held *h, uint64_t rev, uint64_t gen, const size_t *slot, const uint8_t *effects);
void dcall_held_event(Daemon *D, Held *h, uint64_t rev, uint64_t gen, int recorded);
void dcall_answer(Daemon *D, Held *h);
void dcall_held_lost(Daemon *D, Held *h, const char *how);
void dcall_group_failed(Daemon *D, size_t from, const char *why, int restore, int fenced);

/* dgroup.c */
Held *dgroup_at(Group *g, size_t i);  /* the i-th held call, oldest first */
int dgroup_push(Group *g, Held h);    /* -1: out of memory */
void dgroup_held_free(Held *h);
int dgroup_holds(Daemon *D);          /* 1: replies of later calls must wait, and
                                      ** other transactions and queries too */
int dgroup_waits(Daemon *D, uint64_t client);  /* 1: a reply of the client's is held */
void dgroup_publish(Daemon *D);       /* publish what is held, in one store transaction */
int dgroup_ack(Daemon *D, json_t *m, int ev);  /* a committed / restored answer: 1 if the group's */
void dgroup_worker_died(Daemon *D, const char *how);
void dgroup_synced(Daemon *D);        /* the writer woke the loop: take its group, answer what is durable */
int dgroup_watch(Daemon *D);          /* the loop hears the writer (dsync_fd); -1 (errno) */
double dgroup_before(void *ud, double now);  /* hook before each sleep: dgroup_publish */
/* The invariants of the held calls' FIFO and its indexes (DAEMON_ASSERT):
** committed + writing <= n <= cap, the groups syncing cover exactly the
** committed ones in commit order, the decisions awaited fit their ring. */
void dgroup_check(Daemon *D);
/* The durable revision and generation: before the oldest group still syncing. */
void dgroup_durable(Daemon *D, uint64_t *rev, uint64_t *gen);

/* drepl.c: replication through etcd (docs/replication.md) */
/* --replicate, --world, --lease, --standby: 1 consumed (and *i moved), 0 not
** one of them, -1 a bad value (err). */
int drepl_option(int argc, char **argv, int *i, DReplOpts *o, char *err, size_t errlen);
int drepl_check(const DReplOpts *o, char *err, size_t errlen);   /* -1: an incomplete set */
/* Before the kernel serves, on its freshly opened store: win the world's
** leader key (a standby: apply what etcd has until it wins), bring the store
** to etcd's CURRENT or seed an empty world, move the generation past the
** former leader's.  0; 1 when SIGTERM or SIGINT stopped a standby (err
** says so); -1 (err).  Nothing when not replicated. */
int drepl_open(Daemon *D, store_env *s, char *err, size_t errlen);
int drepl_start(Daemon *D, char *err, size_t errlen);   /* the lease's renewals (drepl_open, once won); -1 (err) */
void drepl_stop(Daemon *D);   /* the renewals stopped, the lease revoked (unless a standby that won keeps it) */
int drepl_may_write(DRepl *R);  /* 1: not replicated, or the lease holds (any thread) */
size_t drepl_entry_max(const DRepl *R);  /* the largest entry one etcd request takes; 0: not replicated */
/* Commit revisions from..to of s to etcd (the store writer's thread, or the
** loop with dstore()), with their events ev (per revision, or NULL).  0
** (also when not replicated); -1 with err: fenced, nothing of them is in
** etcd; -2: uncertain (drepl_uncertain); DREPL_FENCED: fenced, because
** this kernel no longer leads the world (its lease lapsed or a compare
** failed: its calls are answered `fenced`).  Nothing of them may be
** acknowledged unless 0. */
#define DREPL_FENCED (-3)
struct replica_Events;
int drepl_commit(DRepl *R, store_env *s, uint64_t from, uint64_t to, const struct replica_Events *ev, char *err,
                 size_t errlen);
/* A commit whose outcome etcd did not give (drepl_commit's -2): the kernel
** ends at once, answering nothing (its clients retry their keys on the
** next leader). */
void drepl_uncertain(Daemon *D, const char *why) __attribute__((noreturn));
/* etcd takes nothing more of this kernel's: nothing more is written or
** acknowledged, and it shuts down.  lost: because the world is no longer
** this kernel's (drepl_commit's DREPL_FENCED, a lapsed lease): it then
** steps down to standby (drepl_step_down); otherwise it stops. */
void drepl_fence(Daemon *D, const char *why, int lost);
/* After the kernel closed (kernel_close): if it was fenced because the
** world is no longer its own, the same command again, in this process
** (execv), as a standby; if it was a standby that won, the same command
** without --standby, leading on with the lease it won with (the
** environment carries it) — argv as cmd_kernel got it ("kernel" first),
** without its --detach at detach_at (-1: none).  Returns only when it
** does neither or the exec failed (said on stderr). */
void drepl_restart(const Daemon *D, int argc, char **argv, int detach_at);
/* A standby serving reads (drepl_open returned with it standing by). */
int drepl_standing(const DRepl *R);
/* Hook before each sleep (dpoll.h): a standby's round every 200 ms — what
** etcd has applied to the store, its report, its campaign (won: it stops,
** to restart as the leader) — and its idle worker replaced from the new
** CURRENT at most once a second.  On the loop: etcd's requests block it. */
double drepl_before(void *ud, double now);
/* A request a standby does not serve: answered `standby` (naming the
** leader) and 1.  0: serve it as *as_op (a call that may be a read runs as
** a preview, its reply dcall.c's). */
int drepl_refuses(Daemon *D, uint64_t client, json_t *id, int op, json_t *req, int *as_op);
/* The refusal's message: what, and where to send it. */
void drepl_refusal(const Daemon *D, const char *what, char *out, size_t n);
/* A standby's part of status: world, leader, the revision and generation it
** has applied; NULL when not standing by. */
json_t *drepl_status(const Daemon *D);
/* Set by drepl_step_down for the process it becomes when detached: it is
** detached already (stderr is DIR/kernel.log) and forks no more. */
#define DREPL_DETACHED_ENV "JITI_KERNEL_DETACHED"

/* dsync.c */
int dsync_start(Daemon *D, char *err, size_t errlen);  /* after the store opens; -1 */
void dsync_stop(Daemon *D);           /* waits for a write or sync under way */
int dsync_fd(Daemon *D);              /* readable when a write or a sync ended; -1 */
void dsync_write(Daemon *D, DWrite *w);  /* hand a write over (only when !dsync_busy) */
int dsync_busy(Daemon *D);            /* 1: a write is handed over, under way, or
                                      ** ended and not yet settled */
void dsync_settle(Daemon *D);         /* the write just ended, if any: its done() */
store_env *dstore(Daemon *D);         /* the store, once no write is under way */
void dsync_want(Daemon *D, uint64_t commits);  /* make the first commits durable */
/* The commits made durable so far (and drain the wake-up); -1 when a sync
** failed, its reason in err. */
int dsync_done(Daemon *D, uint64_t *done, char *err, size_t errlen);

/* dshadow.c: verifications on shadows of the live worker (docs/repair.md;
** docs/worker-frames.md, "Shadows").  A shadow is a copy-on-write fork of
** the live worker made at its next quiescent point (between attempts, no
** calls held for their commit; ahead of transactions, after queries),
** which applies the candidate and reports without changing the live world
** or its generation. */
#define DSHADOW_TIMEOUT_DEFAULT 60000   /* ms */
#define DSHADOW_TIMEOUT_MAX 3600000
#define DSHADOW_REPLAY_MAX 1000         /* recorded requests of one verification */
#define DSHADOW_QUEUE_MAX 64            /* verifications waiting or running */
typedef struct DShadowSpec {
  const char *definitions;      /* the candidate's source (a program) */
  const char *repro;            /* a form's source; NULL: none */
  const char *const *replay;    /* nreplay recorded requests' sources */
  size_t nreplay;
  int64_t timeout_ms;           /* 0: DSHADOW_TIMEOUT_DEFAULT */
  uint64_t incident;            /* the incident it verifies a repair of (0: none):
                                   its shadow parked at the failure, if any, runs it */
} DShadowSpec;
/* The verification ended: report, the shadow's report with its changes
** compared with CURRENT (borrowed during the call), or NULL with err set:
** "timeout: killed after N ms", "the shadow died: killed by signal 31 ...",
** "the worker died ...", "the kernel is shutting down" ... */
typedef void (*dshadow_done_fn)(Daemon *D, void *arg, json_t *report, const char *err);
/* Queue a verification (spec copied; done called exactly once, never from
** within this call).  0, or -1 with why in err (then done is never
** called): the kernel is stopping, too many wait, the spec is out of its
** bounds, the worker cannot make shadows (no fork gate). */
int dshadow_start(Daemon *D, const DShadowSpec *spec, dshadow_done_fn done, void *arg, char *err, size_t errlen);
/* One waits that may go to the worker now (a slot is free and the worker
** has a gate): calls are not started past it (dsched_pump). */
int dshadow_ready(Daemon *D);
/* Send the next one's "shadow" frame (the live worker idle, nothing held):
** 1 when sent (wait W_SHADOW). */
int dshadow_pump(Daemon *D);
void dshadow_forked(Daemon *D, json_t *m);     /* its answer, vouched for: shadowed or error */
/* Parked shadows: whether a call may be asked to park (REQUEST_NOTE_PARK,
** or 0: a rule of the policy pauses, the gate is up, none is parked or
** being made); the outcome m of a call that was asked, its failed call
** now waiting for the repair of incident (0: not waiting: a shadow it
** parked is killed); an incident that ended, or a wait given up (its
** parked shadow killed). */
int dshadow_park_asks(Daemon *D);
/* An outcome's "parked" copy, before anything of the outcome is taken: it
** must be the worker's child (held by a pidfd until dshadow_park_outcome);
** 0, or -1 with f filled (the rule process). */
int dshadow_park_vouch(Daemon *D, json_t *m, vouch_Fail *f);
void dshadow_park_outcome(Daemon *D, json_t *m, uint64_t incident);
void dshadow_park_release(Daemon *D, uint64_t incident);
/* The live worker's report socket and fork gate, watched with its socket
** (dworker.c); the worker gone (how): its shadows fail (those with a whole
** report already read are answered with it), those queued wait for the next. */
int dshadow_watch(Daemon *D);
void dshadow_unwatch(Daemon *D);
/* The live worker said ready (still W_START): the records its sandbox sent
** before (the fork gate's listener) are read now, before it serves. */
void dshadow_started(Daemon *D);
void dshadow_worker_gone(Daemon *D, const char *how);
/* The kernel stops: those queued are answered shutting-down, those running
** killed and waited for (at most 2 s), the worker's reaping seen. */
void dshadow_stop(Daemon *D);
/* The invariants of the shadows' list and counts (DAEMON_ASSERT). */
void dshadow_check(Daemon *D);

/* dworker.c */
int dworker_start_first(Daemon *D);    /* the first one: waits; -1 (logged) */
void dworker_restart(Daemon *D);       /* a replacement: does not wait */
void dworker_writable(DWorker *k);     /* write queued start-up frames */
void dworker_readable(DWorker *k);
void dworker_stderr(DWorker *k);       /* its stderr is readable: into the log */
/* A helper started from plan, driven from the loop: its ops say what
** comes of it (role: for the log).  NULL, with a message in err, when it
** cannot start; nothing of it is left then. */
DWorker *dworker_helper(Daemon *D, const char *role, const wproc_Plan *plan, const DWorkerOps *ops, void *job,
                        char *err, size_t errlen);
/* A helper done with: asked to exit (killed with kill set) and freed. */
void dworker_helper_end(Daemon *D, DWorker *k, int kill);
/* Hooks run before each sleep (dpoll.h): a start that takes too long is
** killed; lines of its stderr dropped are reported once their second is over. */
double dworker_before_start(void *ud, double now);
double dworker_before_err(void *ud, double now);
int dworker_send(Daemon *D, json_t *m);  /* steals m; -1 when it died (handled) */
/* The same for a frame written as text (NULL: it could not be, out of
** memory, which ends the worker as a failed send does). */
int dworker_send_text(Daemon *D, const char *text, size_t n);
void dworker_died(Daemon *D);
void dworker_stop(Daemon *D);          /* ask it to exit, then reap it */
/* A line of JITI_WIRE_TRACE's file (way: ">" sent, "<" received, "R" a
** shadow's report as it came); nothing without one. */
void dworker_trace(Daemon *D, const char *way, const char *text, size_t n);

/* `jiti kernel --store DIR ...` (dloop.c): its exit status (cli.h). */
int cmd_kernel(int argc, char **argv);

#endif
