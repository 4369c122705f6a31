/*
** daemon.h — the kernel daemon (`jiti kernel`): its state and its parts;
** docs/protocol.md is the reference for what they implement.
**
**   dloop.c      options, start-up, the poll loop, shutdown.  The top: no
**                other part calls into it (to stop, a part sets stop_why)
**   dclients.c   client connections: request lines in, buffered replies out
**   drequests.c  each request checked against its op before anything is
**                queued; those the daemon answers itself (hello, status,
**                history, subscribe, shutdown)
**   dqueue.c     the FIFO queues requests wait in
**   dsched.c     what the worker does next (queries, transactions, batches
**                of calls, commands to a paused transaction), the frames it
**                answers with, the ends of transactions and publishing
**   dgroup.c     group commit: the calls the worker finished ahead of the
**                durable revisions, held, then published together in one
**                store transaction (or undone together), answered once
**                synced
**   dsync.c      the store writer: the thread that writes a group and
**                syncs it off the loop; dstore() for everything else
**   dworker.c    the worker process: its start from CURRENT (workerproc.h)
**                without blocking the loop, its frames in, its stderr into
**                the log, its death
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
**   dlog.c       log lines, buffered
**
** One Daemon object holds all of the daemon's state; the only global is the
** SIGTERM flag, which a signal handler must reach.
*/
#ifndef jiti_daemon_h
#define jiti_daemon_h

#include <sys/epoll.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <jansson.h>
#include "cli.h"
#include "engine.h"
#include "jtext.h"
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

typedef struct Client {
  int fd;
  uint64_t serial;      /* never reused: replies find their client by it */
  char *in;
  size_t inlen, incap;
  char *out;
  size_t outlen, outoff, outcap;
  int closing;          /* 1: close once the output is flushed; 2: now */
  unsigned polled;      /* the events its epoll entry asks for (dloop.c) */
  int subscribed;       /* receives event lines */
  int reserved;         /* accepted into an operator slot: status and stop only */
  int cut_off;          /* closed for too much unread output: 1 its own, 2 everyone's */
  double active;        /* daemon_now() of its last request or accepted output */
  size_t *held;         /* the daemon's count of unread reply bytes (outbytes) */
} Client;

/* A request waiting for the worker. */
typedef struct Pending {
  uint64_t client;      /* serial; 0 = nobody (timeouts, shutdown) */
  json_t *id;           /* the request's id, or NULL */
  json_t *req;
  proto_Op op;
  int retried;          /* a query already re-sent to a fresh worker */
} Pending;

/* FIFO: the n requests v[head..head+n); popping is O(1). */
typedef struct Queue { Pending *v; size_t head, n, cap; } Queue;

/* What the daemon waits for from the worker. */
enum { W_NONE, W_START, W_QUERY, W_ATTEMPT, W_COMMIT };

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
  json_t *reply;         /* reply held until the worker acknowledges */
  events_Key *key;       /* the request's idempotency key (digests), or NULL */
  char *invariant;       /* an invariant-add/-remove: the name it gave */
  int sent;              /* what the worker was sent last: TXN_SENT_ATTEMPT or a txn_CmdType */
  int pause_no;          /* the number of the pause it showed last (0: none) */
  int decision;          /* W_COMMIT: WIRE_COMMIT or WIRE_RESTORE sent */
  int decided_changed;   /* the commit said changed */
} Txn;

#define TXN_SENT_ATTEMPT (-1)

/* A call the worker finished whose reply must wait: it wrote a revision
** not yet durable, or ran on top of one (dgroup.c). */
typedef struct Held {
  uint64_t attempt, client;
  json_t *id;
  double t0;
  char *source;          /* for the log */
  char *summary;         /* its revision's */
  json_t *outcome;       /* the worker's outcome frame: its reply's value,
                            values, message and output */
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
typedef struct Daemon Daemon;

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

typedef struct Daemon {
  const char *dir;
  const char *wire_trace;  /* JITI_WIRE_TRACE: a file for every frame (dworker.c), or NULL */
  char sock[128];
  char pidfile[4096];
  store_env *store;      /* reached through dstore() only (dsync.c) */
  int lfd;
  int spare_fd;          /* given up to refuse a client when out of descriptors */
  Client **clients;      /* max_clients + DAEMON_RESERVED_SLOTS */
  int ep;                /* epoll set of the clients (dloop.c) */
  struct epoll_event *eev;  /* its ready list, one per client */
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
  wproc w;
  uint64_t base, gen, revision;
  uint64_t wgen;         /* the worker's generation as the daemon counts it
                         ** (dvouch.c): every frame's is checked against it */
  vouch_Checker vouch;   /* decodes the entries the worker reports */
  char violation[160];   /* how the worker broke a frame rule, for its death */
  uint64_t gen_saved;    /* the store's generation high-water mark: no
                         ** generation above it may reach a client */
  char wstatus[32];
  int wait;              /* W_... */
  struct { unsigned char *buf; size_t len, off, cap; } wout;  /* start-up frames not yet written */
  jtext_writer wframe;   /* the frame of calls being written (dsched.c): its buffer is kept */
  size_t start_entries;  /* entries the starting worker imports */
  double start_deadline, restart_at;  /* restart_at: retry a failed start (0: none) */
  int in_pause;
  json_t *pause;         /* the pause (as the worker reported it) while in_pause */
  Pending query;         /* the query the worker is answering (W_QUERY) */
  Txn cur;
  Queue txq, queryq, cmdq;  /* transactions, queries, pause commands */
  Queue batch;           /* calls sent to the worker with cur, to run after it */
  Group group;           /* calls finished ahead of the durable revisions */
  DSync *sync;           /* the thread that syncs committed groups (dsync.c) */
  EventBuf events;
  Tally tally;           /* dtally.c */
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
/* A line of the worker's stderr, escaped already (workerproc.h): "<time>
** worker[PID]: text", never a line of the kernel's. */
void dlog_worker(Daemon *D, int pid, const char *text, size_t n);

/* dclients.c */
Client *dclients_find(Daemon *D, uint64_t serial);
void dclients_reply(Daemon *D, uint64_t serial, json_t *id, json_t *msg);  /* steals msg */
/* The same for a reply written as text: w holds its object, still open
** (its id is added, then the brace); frees w's buffer. */
void dclients_reply_text(Daemon *D, uint64_t serial, json_t *id, jtext_writer *w);
void dclients_reply_err(Daemon *D, uint64_t serial, json_t *id, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void dclients_line(Client *c, const char *text, size_t n);  /* one line to a client */
void dclients_flush(Client *c);
void dclients_read(Daemon *D, Client *c);
void dclients_free(Daemon *D, int i);
void dclients_accept(Daemon *D);
double dclients_sweep_idle(Daemon *D);  /* close idle connections; seconds until
                                        ** the next look is due */
int dclients_reserved_refuses(Daemon *D, Client *c, proto_Op op, json_t *id);  /* 1: a
                                        ** reserved slot's connection asked for more
                                        ** than status or stop (answered busy) */

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
int dqueue_push_front(Queue *q, Pending p);       /* takes p's references */
void dqueue_pending_free(Pending *p);

/* devents.c */
void devents_add(Daemon *D, json_t *ev);   /* buffer an event for the store; steals */
/* An attempt's "started" (text, stolen; NULL: out of memory, logged): a
** call's or a preview's is held until its outcome (devents_ended), any
** other's buffered at once. */
void devents_started(Daemon *D, uint64_t attempt, proto_Op op, char *text, size_t len);
/* The attempt's outcome is known: wrote, it publishes a revision.  A call
** or preview that publishes nothing, ran on nothing undone and is still
** within a second of its start leaves no events: its start is dropped, its
** outcome counted (dtally.c), and 1 is returned; otherwise its start is
** buffered (first, when it was held) and 0 returned. */
int devents_ended(Daemon *D, uint64_t attempt, proto_Op op, const char *reason, int wrote);
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
void devents_subscribed(Daemon *D);   /* a client subscribed (subscribers counts it) */
/* On the writer thread, after w stored events first..first+n-1: read them
** back into w->stored when w->read_back.  Returns the store's code. */
int devents_read_back(store_env *s, DWrite *w, uint64_t first, size_t n);
void devents_stored(Daemon *D, DWrite *w);   /* on the loop: w's read-back events
                                             ** wait to be told (takes them) */
double devents_due(Daemon *D);        /* seconds until a flush is due; < 0: none waits */
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

/* dsched.c */
void dsched_pump(Daemon *D);           /* give the worker its next request */
void dsched_frame(Daemon *D, json_t *m, unsigned char *blob, size_t bloblen);  /* a frame from it */
/* What the worker was doing ends; lost: outcome frames it made that were
** never read (wproc_outcomes_unseen), held in its outbox when it died. */
void dsched_worker_died(Daemon *D, const char *how, uint64_t lost);
void dsched_abort_pause(Daemon *D, const char *why);
void dsched_fail_commands(Daemon *D, const char *code, const char *why);
int dsched_client_waits(Daemon *D, uint64_t client);  /* 1: something it asked for waits */
void dsched_reply_paused(Daemon *D, uint64_t client, json_t *id);  /* "paused": a transaction
                                      ** that would wait behind the pause */

/* dgroup.c */
int dgroup_holds(Daemon *D);          /* 1: replies of later calls must wait, and
                                      ** other transactions and queries too */
int dgroup_waits(Daemon *D, uint64_t client);  /* 1: a reply of the client's is held */
/* A grouped call's outcome (frame m, its blob): held, or answered now when
** nothing below it awaits durability.  1 when it took the outcome. */
int dgroup_outcome(Daemon *D, Txn *t, json_t *m, const unsigned char *blob, size_t bloblen);
void dgroup_publish(Daemon *D);       /* publish what is held, in one store transaction */
int dgroup_ack(Daemon *D, json_t *m, int ev);  /* a committed / restored answer: 1 if the group's */
void dgroup_worker_died(Daemon *D, const char *how);
void dgroup_synced(Daemon *D);        /* the writer woke the loop: take its group, answer what is durable */
/* The durable revision and generation: before the oldest group still syncing. */
void dgroup_durable(Daemon *D, uint64_t *rev, uint64_t *gen);

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

/* dworker.c */
int dworker_start_first(Daemon *D);    /* the first one: waits; -1 (logged) */
void dworker_restart(Daemon *D);       /* a replacement: does not wait */
void dworker_writable(Daemon *D);      /* write queued start-up frames */
void dworker_readable(Daemon *D);
void dworker_stderr(Daemon *D);        /* its stderr is readable: into the log */
int dworker_send(Daemon *D, json_t *m);  /* steals m; -1 when it died (handled) */
/* The same for a frame written as text (NULL: it could not be, out of
** memory, which ends the worker as a failed send does). */
int dworker_send_text(Daemon *D, const char *text, size_t n);
void dworker_died(Daemon *D);
void dworker_stop(Daemon *D);          /* ask it to exit, then reap it */

/* `jiti kernel --store DIR ...` (dloop.c): its exit status (cli.h). */
int cmd_kernel(int argc, char **argv);

#endif
