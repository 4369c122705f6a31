/*
** offline.h — the store commands' shared parts (offline/): the offline
** transaction, event lines, text diffs.
*/
#ifndef jiti_offline_h
#define jiti_offline_h

#include <stdio.h>
#include "cli.h"
#include "engine.h"

/* ---- txn.c: an offline transaction on the store (the daemon will run
** these itself; until then the commands do).  Usage:
**   otxn_open → [resolve arguments] → otxn_start → evaluate / change
**   the world → otxn_check_invariants → otxn_publish → otxn_close.
** Every step after otxn_start that fails restores the checkpoint, writes
** the attempt's outcome event and prints why; nothing is published. */
typedef struct otxn {
  const char *cmd;         /* "apply", "invariant add", ... */
  store_env *s;
  uint64_t parent;         /* CURRENT when the store was opened */
  uint64_t generation;     /* the store's generation high-water mark */
  uint64_t attempt;        /* 0 until started */
  jiti_State *S;
  jiti_Limits limits;
  int outcome_written;
} otxn;

/* Open the store for writing and read CURRENT.  EXIT_OK or EXIT_FAIL. */
int otxn_open(otxn *t, const char *cmd, const char *dir);

/* Write the "started" event (extra members from `extra`, stolen, may be
** NULL), make a fresh world, import revision load_rev into it (0: nothing)
** and open a checkpoint.  EXIT_OK or EXIT_FAIL. */
int otxn_start(otxn *t, struct json_t *extra, uint64_t load_rev);

/* Write the attempt's outcome event: event is a store outcome name
** (accepted, rejected, failed), outcome the specific one (accepted, unsafe,
** error, limit, rejected); extra (stolen, may be NULL) adds members. */
void otxn_outcome(otxn *t, const char *event, const char *outcome,
                     struct json_t *extra);

/* Run every invariant of the world.  On failure: restore, print
** "unsafe: <reason>", write the outcome and return EXIT_FAIL. */
int otxn_check_invariants(otxn *t);

/* Report an evaluation result that is not JITI_OK: restore, print the
** condition, write the outcome (error or limit); returns EXIT_FAIL. */
int otxn_eval_failed(otxn *t, const jiti_Result *res);

/* Publish what changed since the checkpoint as an `action` revision with
** generation + 1 (only entries that differ from CURRENT), commit the
** checkpoint, write "accepted" and print the revision.  EXIT_OK or
** EXIT_FAIL (then nothing was published). */
int otxn_publish(otxn *t, const char *summary);

/* Release the world and the store. */
void otxn_close(otxn *t);

/* history.c: one human-readable line for an event record. */
void history_event_line(FILE *out, const char *json, size_t len);

/* ---- textdiff.c */

/* Write a unified diff of a and b (line based, LCS) to out with 3 lines of
** context; labels name the two sides.  Nothing when they are equal. */
void textdiff_unified(FILE *out, const char *label_a, const char *a,
                      const char *label_b, const char *b);


#endif
