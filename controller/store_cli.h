/*
** store_cli.h — shared pieces of the store commands (init, apply, invariant,
** recover-session, log, show, diff, rollback, events).  Internal to the
** controller; the commands themselves are declared in cli.h.
**
** Exit statuses of every store command: 0 success, 1 failure (the message
** names the store path), 2 usage.
*/
#ifndef jiti_store_cli_h
#define jiti_store_cli_h

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "jiti.h"
#include "jiti_world.h"
#include "store.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* ---- stack.c: evaluation needs a large C stack */

#ifdef __SANITIZE_ADDRESS__
#define CLI_STACK_SIZE ((size_t)48 << 20)
#else
#define CLI_STACK_SIZE ((size_t)1 << 30)
#endif

/* Run cmd(argc, argv) on a thread with a CLI_STACK_SIZE stack (or on this
** thread if one cannot be made) and return its status. */
int cli_on_big_stack(int (*cmd)(int, char **), int argc, char **argv);

/* A fresh interpreter with the world layer enabled and the stack size set.
** NULL (with a message on stderr naming `who`) when memory is exhausted. */
jiti_State *cli_new_world(const char *who);

/* ---- store_common.c: options, opening, revisions, events, loading */

/* The store directory: --store DIR, else $JITI_STORE, else ./.jiti. */
const char *cli_default_store(void);

/* If argv[*i] is --store DIR or --store=DIR, consume it into *dir and return
** 1; return -1 (after a message) when DIR is missing; 0 otherwise. */
int cli_store_opt(const char *cmd, int argc, char **argv, int *i, const char **dir);

/* Parse a non-negative decimal count (for -n, --fuel ...); 1 on success. */
int cli_parse_count(const char *s, uint64_t *out);
/* Parse a byte size with an optional K, M or G suffix; 1 on success. */
int cli_parse_size(const char *s, uint64_t *out);

/* Open the store in dir (it must exist).  writer: take the write lock.
** On failure prints "jiti CMD: <message>" and returns NULL. */
store_env *cli_open_store(const char *cmd, const char *dir, int writer);

/* Resolve a REV argument against CURRENT: a positive decimal number,
** "previous" (CURRENT-1), "HEAD" (CURRENT) or "HEAD~N".  Returns EXIT_OK
** with *rev set, EXIT_USAGE for malformed text, EXIT_FAIL for a revision
** that does not exist; messages go to stderr. */
int cli_resolve_rev(const char *cmd, store_env *s, const char *text, uint64_t *rev);

/* ISO 8601 UTC time of ms since the epoch into buf (at least 32 bytes). */
void cli_iso_time(int64_t ms, char *buf, size_t len);

/* Kind conversions between the kernel (jiti_EntryKind) and the store. */
int cli_store_kind(jiti_EntryKind k);
int cli_kernel_kind(int store_kind);   /* -1 if unknown */

/* One entry of a map held in memory. */
typedef struct cli_entry {
  int kind;            /* store kind */
  char *name;
  unsigned char *bytes;
  size_t len;
  uint8_t hash[32];
} cli_entry;

typedef struct cli_map {
  cli_entry *v;
  size_t n, cap;
  int with_bytes;       /* set before loading: copy the bytes too */
  int only_kind;        /* set before loading: keep only this store kind (0: all) */
  struct cli_chunk *chunks;  /* names and bytes live here */
} cli_map;

/* Load revision rev's map (STORE_REV_CURRENT for the current one), in the
** store's (kind, name) order.  Returns a store_err. */
int cli_map_load(store_env *s, uint64_t rev, cli_map *m);
void cli_map_free(cli_map *m);

/* Import revision rev's map (STORE_REV_CURRENT: the current one) into S
** straight from the store — no copy of the map — kind by kind in the
** kernel's import order (structures, macros, functions, variables, data,
** invariants), all of it read in one store transaction.  which: one of
** CLI_IMPORT_ALL, _NO_INVARIANTS, _ONLY_INVARIANTS.  The data table and
** the registry are sized for the store's counts first.  Returns
** CLI_IMPORT_OK; CLI_IMPORT_ESTORE when reading failed (err holds
** the store's message, *store_rc (may be NULL) its store_err); or
** CLI_IMPORT_EENTRY when an entry cannot be imported (err: "cannot import
** KIND NAME: why").  Functions and macros are analysed at their first call
** (see jiti_import_entry). */
enum { CLI_IMPORT_ALL, CLI_IMPORT_NO_INVARIANTS, CLI_IMPORT_ONLY_INVARIANTS };
/* The store kinds of an import (which: CLI_IMPORT_...) in the kernel's
** import order (types, macros, functions, variables, data, invariants);
** how many. */
size_t cli_import_kinds(int which, int kinds[JITI_ENTRY_KIND_COUNT]);
enum { CLI_IMPORT_OK, CLI_IMPORT_ESTORE, CLI_IMPORT_EENTRY };
int cli_import_rev(jiti_State *S, store_env *s, uint64_t rev, int which, int *store_rc,
                   char *err, size_t errlen);

/* Count a manifest's changes: added, changed, removed. */
void cli_count_changes(const store_manifest *man, size_t *added, size_t *changed,
                       size_t *removed);

/* The generation recorded in revision rev's manifest (0 if none). */
uint64_t cli_generation(store_env *s, uint64_t rev);

/* The next attempt number: one more than the largest "attempt" of the
** recent events. */
uint64_t cli_next_attempt(store_env *s);

/* Append an event built from a jansson object (stolen).  Failures are
** reported on stderr but do not change the command's outcome. */
struct json_t;
void cli_event(store_env *s, const char *cmd, struct json_t *obj);

/* ---- txn.c: an offline transaction on the store (the daemon will run
** these itself; until then the commands do).  Usage:
**   cli_txn_open → [resolve arguments] → cli_txn_start → evaluate / change
**   the world → cli_txn_check_invariants → cli_txn_publish → cli_txn_close.
** Every step after cli_txn_start that fails restores the checkpoint, writes
** the attempt's outcome event and prints why; nothing is published. */
typedef struct cli_txn {
  const char *cmd;         /* "apply", "invariant add", ... */
  store_env *s;
  uint64_t parent;         /* CURRENT when the store was opened */
  uint64_t generation;     /* the store's generation high-water mark */
  uint64_t attempt;        /* 0 until started */
  jiti_State *S;
  jiti_Limits limits;
  int outcome_written;
} cli_txn;

/* Open the store for writing and read CURRENT.  EXIT_OK or EXIT_FAIL. */
int cli_txn_open(cli_txn *t, const char *cmd, const char *dir);

/* Write the "started" event (extra members from `extra`, stolen, may be
** NULL), make a fresh world, import revision load_rev into it (0: nothing)
** and open a checkpoint.  EXIT_OK or EXIT_FAIL. */
int cli_txn_start(cli_txn *t, struct json_t *extra, uint64_t load_rev);

/* Write the attempt's outcome event: event is a store outcome name
** (accepted, rejected, failed), outcome the specific one (accepted, unsafe,
** error, limit, rejected); extra (stolen, may be NULL) adds members. */
void cli_txn_outcome(cli_txn *t, const char *event, const char *outcome,
                     struct json_t *extra);

/* Run every invariant of the world.  On failure: restore, print
** "unsafe: <reason>", write the outcome and return EXIT_FAIL. */
int cli_txn_check_invariants(cli_txn *t);

/* Report an evaluation result that is not JITI_OK: restore, print the
** condition, write the outcome (error or limit); returns EXIT_FAIL. */
int cli_txn_eval_failed(cli_txn *t, const jiti_Result *res);

/* Publish what changed since the checkpoint as an `action` revision with
** generation + 1 (only entries that differ from CURRENT), commit the
** checkpoint, write "accepted" and print the revision.  EXIT_OK or
** EXIT_FAIL (then nothing was published). */
int cli_txn_publish(cli_txn *t, const char *summary);

/* Release the world and the store. */
void cli_txn_close(cli_txn *t);

/* history_cmds.c: one human-readable line for an event record. */
void cli_event_line(FILE *out, const char *json, size_t len);

/* ---- textdiff.c */

/* Write a unified diff of a and b (line based, LCS) to out with 3 lines of
** context; labels name the two sides.  Nothing when they are equal. */
void cli_unified_diff(FILE *out, const char *label_a, const char *a,
                      const char *label_b, const char *b);

#endif
