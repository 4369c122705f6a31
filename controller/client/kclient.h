/*
** kclient.h — the client side of the kernel protocol (docs/protocol.md),
** shared by the one-shot client commands (commands.c), `jiti repl`
** (repl.c) and the store commands when a kernel serves the store: a
** connection to DIR/kernel.sock that carries any number of requests, one
** at a time.  It prints nothing: a failure leaves its message in k->err,
** and printing (replies, failures) is render.h's.
*/
#ifndef jiti_kclient_h
#define jiti_kclient_h

#include <signal.h>
#include <stdio.h>
#include <jansson.h>

struct net_ClientOpts;   /* net.h */
struct net_Conn;

typedef struct kclient {
  int fd;               /* -1 when not connected */
  struct net_Conn *conn;  /* a kernel on another machine: what carries fd (net.h), or NULL */
  const char *cmd;      /* the command it serves ("eval", "repl"), for the caller's messages */
  const char *dir;      /* the store directory */
  char *buf;            /* bytes received and not yet consumed */
  size_t len, cap;
  json_int_t next_id;   /* the "id" of the next request */
  char err[512];        /* why the last failure happened, for people */
  json_t *refused;      /* the kernel's refusal of the connection (busy), read
                        ** when a request could not be sent */
  void (*waiting)(const char *line);  /* told once when a reply is slow to come
                        ** (NULL: nobody is told); kclient_call_keyed sets it */
  double waiting_after; /* seconds without a reply before it is told */
  json_int_t awaited;   /* the "id" of the last request kclient_call or kclient_send sent */
} kclient;

/* Every connection this process makes goes to a kernel on another machine
** (net.h: --connect, or the leader of --replicate/--world) instead of
** DIR/kernel.sock: set once by main, before the command runs (o: NULL for
** the local socket; kept, not copied).  progress (may be NULL) is told of
** a wait for a leader, a line for people.  Then k->dir names that kernel in
** messages, kclient_serving is always 1 (a remote kernel is never replaced
** by the local store), and kclient_call_keyed follows a replicated world
** to its next leader. */
void kclient_remote(const struct net_ClientOpts *o, void (*progress)(const char *line));
/* The remote options set, or NULL. */
const struct net_ClientOpts *kclient_remote_opts(void);

/* Seconds a client with --replicate waits for the world to have a leader
** it can reach (a takeover: the lease plus the new leader's start). */
#define KCLIENT_LEADER_WAIT 30.0

/* A client of the kernel serving dir; not connected yet. */
void kclient_init(kclient *k, const char *cmd, const char *dir);

/* Connect to DIR/kernel.sock.  0, or -1 with k->err set: when nobody
** listens "no kernel is running for DIR; start one with: jiti kernel
** --store DIR". */
int kclient_connect(kclient *k);

/* 1 when the connection is open and the kernel has not closed its end
** (checked without waiting).  A closed connection is closed here too. */
int kclient_alive(kclient *k);

/* Close the connection (if open) and drop unread bytes; k can connect again. */
void kclient_close(kclient *k);

enum {
  KCLIENT_OK,           /* *reply is the kernel's answer */
  KCLIENT_UNSENT,       /* the request could not be sent: the kernel never saw it */
  KCLIENT_NO_REPLY,     /* sent, but the connection closed (or broke) before the reply */
  KCLIENT_INTERRUPTED,  /* *intr was set while waiting; the reply will be skipped */
  KCLIENT_TIMEOUT,      /* kclient_event: nothing came in time */
  KCLIENT_READABLE      /* kclient_await_fd: the other descriptor is readable; the reply is still awaited */
};

/* Send req (stolen) with a fresh "id" and wait for the reply repeating it.
** Lines that are not replies (events) and replies to earlier, abandoned
** requests are skipped.  The reply's "id" is removed before it is returned.
** intr (may be NULL): a flag a signal handler sets; waiting stops when it is
** set.  On anything but KCLIENT_OK the connection is closed, except after
** KCLIENT_INTERRUPTED, and k->err says what happened. */
int kclient_call(kclient *k, json_t *req, json_t **reply, volatile sig_atomic_t *intr);

/* On a subscribed connection: the next event line (a JSON object with an
** "event" member; replies and other lines are skipped) into *ev, waiting
** at most timeout seconds (< 0: no limit).  KCLIENT_OK, KCLIENT_TIMEOUT,
** KCLIENT_INTERRUPTED (*intr set), KCLIENT_NO_REPLY (the kernel closed the
** connection: then it is closed here, k->err says so). */
int kclient_event(kclient *k, double timeout, json_t **ev, volatile sig_atomic_t *intr);

/* After KCLIENT_INTERRUPTED: wait again for the reply to the request that
** was interrupted (kclient_call's return codes, no request sent). */
int kclient_await(kclient *k, json_t **reply, volatile sig_atomic_t *intr);

/* kclient_await, also watching the descriptor `also` (a client that
** serves someone else while the kernel works: `jiti swank` reads its
** editor's messages meanwhile): KCLIENT_READABLE as soon as `also` is
** readable (or closed) before the reply came — call it again to go on
** waiting — else kclient_await's codes. */
int kclient_await_fd(kclient *k, int also, json_t **reply);

/* Stop the running transaction whose request carried idempotency key
** `key` (jiti eval's and jiti repl's Ctrl-C), on a connection of its own:
** an interrupt (it pauses), or a cancel when it cannot pause.  The reply
** (*op: "interrupt" or "cancel", the last one sent), or NULL with the
** reason in err. */
json_t *kclient_stop_keyed(const char *dir, const char *key, const char **op, char *err, size_t errlen);

/* Send req (stolen) with a fresh "id" without waiting for its reply, which
** the next kclient_call skips (a request whose answer does not matter: it
** costs no round trip; kclient_await_fd waits for it).  KCLIENT_OK or KCLIENT_UNSENT (then the connection
** is closed and k->err says why). */
int kclient_send(kclient *k, json_t *req);

/* 1 when a kernel serves dir (its socket accepts a connection), 0 when
** none does. */
int kclient_serving(const char *dir);

/* One request on a connection of its own: the reply, or NULL with the
** reason in err (errlen bytes).  req is stolen (NULL: it could not be
** made).  render_request_once prints the reason. */
json_t *kclient_once(const char *dir, json_t *req, char *err, size_t errlen);

/* A fresh idempotency key (128 random bits, in hex). */
void kclient_fresh_key(char out[33]);

/* 1 when reply says a request with its key is still waiting or running
** (come back for its outcome). */
int kclient_key_running(json_t *reply);

/* 1 when reply says the kernel no longer leads its replicated world (it
** was fenced, so nothing of the request was kept; or it stands by): the
** request belongs with the next leader. */
int kclient_not_leader(json_t *reply);

/* Seconds without a reply before a keyed call says it is still waiting. */
#define KCLIENT_WAITING_AFTER 2.0

/* Whether lines about a wait in progress are shown: when standard error is
** a terminal, or as JITI_PROGRESS says (1: always, 0: never). */
int kclient_progress_shown(void);

/* kclient_call for a transaction that must not run twice, on k (connected
** or not): req (stolen, a call or an act) gets the idempotency key `key`
** (NULL: a fresh random one).  When the connection drops before the reply
** (the kernel was restarted or killed, or closed an idle connection), or
** the kernel says the first try is still running, it reconnects and sends
** the same request again, with the same key, for up to `patience` seconds:
** the kernel replays the first try's outcome if it ran, or runs it if it
** did not.  progress (may be NULL) is called before a retry with a line
** for people, and once per try when no reply has come after
** KCLIENT_WAITING_AFTER seconds (a long call, or one behind a pause) if
** kclient_progress_shown().  Following a replicated world (kclient_remote
** with --replicate), a refused connection or a reply of kclient_not_leader
** is retried on the leader etcd names next, with the same key, within the
** patience too.  KCLIENT_OK (*reply set, its "replayed" member says it was
** recorded earlier), KCLIENT_INTERRUPTED, or KCLIENT_NO_REPLY (no kernel,
** or none answered in time; k->err says why). */
int kclient_call_keyed(kclient *k, json_t *req, const char *key, double patience,
                       void (*progress)(const char *line), volatile sig_atomic_t *intr, json_t **reply);

/* kclient_call_keyed on a connection of its own: the reply, or NULL with
** the reason in err (errlen bytes).  req is stolen. */
json_t *kclient_once_keyed(const char *dir, json_t *req, const char *key, double patience,
                           void (*progress)(const char *line), char *err, size_t errlen);

/* ---- reading replies */

/* The string member k of o, "" when absent; the integer member, 0 when absent. */
const char *kclient_str(json_t *o, const char *k);
json_int_t kclient_int(json_t *o, const char *k);

#endif
