/*
** engine.h — what the store commands and the kernel daemon share on the
** store's side of a transaction: opening a store with a clear message, REV
** syntax, revisions' maps and their import into a world, attempt numbers
** and events.  Internal to the controller.
*/
#ifndef jiti_engine_h
#define jiti_engine_h

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "jiti.h"
#include "jiti_world.h"
#include "store.h"

/* ---- storeio.c */

/* Open the store in dir (it must exist).  writer: take the write lock.
** On failure prints "jiti CMD: <message>" and returns NULL. */
store_env *storeio_open(const char *cmd, const char *dir, int writer);

/* Resolve a REV argument against CURRENT: a positive decimal number,
** "previous" (CURRENT-1), "HEAD" (CURRENT) or "HEAD~N".  Returns EXIT_OK
** with *rev set, EXIT_USAGE for malformed text, EXIT_FAIL for a revision
** that does not exist; messages go to stderr. */
int storeio_resolve_rev(const char *cmd, store_env *s, const char *text, uint64_t *rev);

/* ISO 8601 UTC time of ms since the epoch into buf (at least 32 bytes). */
void storeio_iso_time(int64_t ms, char *buf, size_t len);

/* Kind conversions between the kernel (jiti_EntryKind) and the store. */
int storeio_store_kind(jiti_EntryKind k);
int storeio_kernel_kind(int store_kind);   /* -1 if unknown */

/* One entry of a map held in memory. */
typedef struct storeio_entry {
  int kind;            /* store kind */
  char *name;
  unsigned char *bytes;
  size_t len;
  uint8_t hash[32];
} storeio_entry;

typedef struct storeio_map {
  storeio_entry *v;
  size_t n, cap;
  int with_bytes;       /* set before loading: copy the bytes too */
  int only_kind;        /* set before loading: keep only this store kind (0: all) */
  struct storeio_chunk *chunks;  /* names and bytes live here */
} storeio_map;

/* Load revision rev's map (STORE_REV_CURRENT for the current one), in the
** store's (kind, name) order.  Returns a store_err. */
int storeio_map_load(store_env *s, uint64_t rev, storeio_map *m);
void storeio_map_free(storeio_map *m);

/* Import revision rev's map (STORE_REV_CURRENT: the current one) into S
** straight from the store — no copy of the map — kind by kind in the
** kernel's import order (structures, macros, functions, variables, data,
** invariants), all of it read in one store transaction.  which: one of
** STOREIO_IMPORT_ALL, _NO_INVARIANTS, _ONLY_INVARIANTS.  The data table and
** the registry are sized for the store's counts first.  Returns
** STOREIO_IMPORT_OK; STOREIO_IMPORT_ESTORE when reading failed (err holds
** the store's message, *store_rc (may be NULL) its store_err); or
** STOREIO_IMPORT_EENTRY when an entry cannot be imported (err: "cannot import
** KIND NAME: why").  Functions and macros are analysed at their first call
** (see jiti_import_entry). */
enum { STOREIO_IMPORT_ALL, STOREIO_IMPORT_NO_INVARIANTS, STOREIO_IMPORT_ONLY_INVARIANTS };
/* The store kinds of an import (which: STOREIO_IMPORT_...) in the kernel's
** import order (types, macros, functions, variables, data, invariants);
** how many. */
size_t storeio_import_kinds(int which, int kinds[JITI_ENTRY_KIND_COUNT]);
enum { STOREIO_IMPORT_OK, STOREIO_IMPORT_ESTORE, STOREIO_IMPORT_EENTRY };
int storeio_import_rev(jiti_State *S, store_env *s, uint64_t rev, int which, int *store_rc,
                   char *err, size_t errlen);

/* Count a manifest's changes: added, changed, removed. */
void storeio_count_changes(const store_manifest *man, size_t *added, size_t *changed,
                       size_t *removed);

/* The next attempt number: one more than the largest "attempt" of the
** recent events. */
uint64_t storeio_next_attempt(store_env *s);

/* Append an event built from a jansson object (stolen).  Failures are
** reported on stderr but do not change the command's outcome. */
struct json_t;
void storeio_event(store_env *s, const char *cmd, struct json_t *obj);

#endif
