/*
** offline.h — the store commands' shared parts (offline/): the offline
** transaction, event lines, text diffs.
*/
#ifndef jiti_offline_h
#define jiti_offline_h

#include <stdio.h>
#include "cli.h"
#include "engine.h"
#include "proto.h"
#include "workerproc.h"

/* ---- the store commands: --store DIR (default $JITI_STORE, else
** ./.jiti).  apply, invariant and rollback go through the store's kernel
** when one serves it, else run on the store directly.  Each returns its
** exit status (cli.h). */
int cmd_init(int argc, char **argv);             /* change.c */
int cmd_apply(int argc, char **argv);
int cmd_invariant(int argc, char **argv);
int cmd_repair(int argc, char **argv);      /* repair.c */
int cmd_incidents(int argc, char **argv);   /* incidents.c */
int cmd_traffic(int argc, char **argv);     /* traffic.c */
int cmd_rollback(int argc, char **argv);
int cmd_log(int argc, char **argv);              /* history.c */
int cmd_show(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_recover_session(int argc, char **argv);  /* recover.c */

/* ---- ostore.c: the engine's store helpers with their messages printed
** ("jiti CMD: ...") */

/* storeio_open: NULL after the message. */
store_env *ostore_open(const char *cmd, const char *dir, int writer);
/* storeio_resolve_rev: its status, after the message when not EXIT_OK. */
int ostore_rev(const char *cmd, store_env *s, const char *text, uint64_t *rev);
/* storeio_event (obj stolen): a warning when it could not be recorded; the
** command goes on. */
void ostore_event(store_env *s, const char *cmd, json_t *obj);

/* ---- otxn.c: a transaction on a store no kernel serves, on the same
** engine as the kernel: a sandboxed worker started from a revision runs it
** (gate, limits, invariants), the publish step of engine.h publishes it, and
** its records are the kernel's.  Usage:
**   otxn_open -> [resolve arguments] -> otxn_start (the request)
**   -> otxn_run -> render_change (the reply) -> otxn_close.
** The request is the one the kernel would get (docs/protocol.md): its
** frame, summary and records come from engine.h, as the kernel's do.
** Every step records what it must in the store's events and prints why it
** failed; nothing is published on a failure. */
typedef struct otxn {
  const char *cmd;         /* for messages: "apply", "invariant add", ... */
  json_t *req;             /* the protocol request (borrowed), from otxn_start */
  proto_Op op;             /* its op */
  store_env *s;
  uint64_t parent;         /* CURRENT */
  uint64_t generation;     /* the store's generation high-water mark */
  uint64_t attempt;        /* 0 until started */
  limits_Table limits;
  grant_List grant;        /* the C libraries its worker is granted */
  char grant_text[STORE_FOREIGN_MAX + 1];  /* as the revision records it */
  wproc w;
  int outcome_written;
  int faulted;             /* the world started faulted: an invariant fails */
  char fault[1024];        /* why */
  vouch_Checker vouch;     /* checks the entries its worker reports */
} otxn;

/* Open the store for writing, read CURRENT and the generation; L: the
** limits (NULL: the defaults); g: the libraries granted (NULL: none).
** EXIT_OK, or EXIT_FAIL after a message. */
int otxn_open(otxn *t, const char *cmd, const char *dir, const limits_Table *L, const grant_List *g);

/* Record the "started" event of req (borrowed: it must outlive t; its "op"
** one of apply, invariant-add, invariant-remove, rollback) and start a
** worker from revision rev's world (current_invariants: without rev's
** invariants, with CURRENT's).  EXIT_OK, or EXIT_FAIL after a message (its
** outcome recorded). */
int otxn_start(otxn *t, json_t *req, uint64_t rev, int current_invariants);

/* Run the request in the worker and carry it through: its outcome, the
** publish of what it accepted (a revision of kind action with the request's
** summary, the outcome event in the same LMDB transaction), the commit or
** restore.  Returns the reply the kernel would give (docs/protocol.md;
** failures also carry "revision": CURRENT). */
json_t *otxn_run(otxn *t);

/* Refuse before running: record the outcome; the failure reply. */
json_t *otxn_refuse(otxn *t, const char *reason, const char *message);

/* Stop the worker, close the store (an attempt left without an outcome gets
** one: error). */
void otxn_close(otxn *t);

/* history.c: one human-readable line for an event record. */
void history_event_line(FILE *out, const char *json, size_t len);

/* ---- retain.c */

/* `jiti events counters|prune ...` (argv[1] the subcommand): its exit
** status, or -1 when argv[1] is neither. */
int events_sub_main(int argc, char **argv);

/* ---- textdiff.c */

/* Write a unified diff of a and b (line based, LCS) to out with 3 lines of
** context; labels name the two sides.  Nothing when they are equal. */
void textdiff_unified(FILE *out, const char *label_a, const char *a,
                      const char *label_b, const char *b);

#endif
