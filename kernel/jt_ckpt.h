/*
** jt_ckpt.h — checkpoint levels (ckpt.c): the service below the world
** layer that makes a change undoable.
**
** While a checkpoint is open, each level holds
**   - copies of the objects first touched at that level, taken by the
**     write barrier (jt_ckpt_touch, called from JT_SET and JT_TOUCH);
**   - operation logs of the managed maps (hash tables flagged
**     JT_HASH_MANAGED, which the barrier leaves alone): jt_ckpt_map_put,
**     jt_ckpt_map_rem;
**   - undo records of C-side tables (the symbol table) and counters:
**     jt_ckpt_log_undo.
** A restore replays the undo records and the logs backwards and puts the
** copies back; a commit drops the level or hands its records to the
** enclosing one.  Everything here is per state (S->ckpt, made at the
** first checkpoint).  Nothing here knows about entries, packages or
** exports: the world layer (world.c) and the modules that own C-side
** tables call down into this file, never the other way.
*/
#ifndef jt_ckpt_h
#define jt_ckpt_h

#include "jt_lib.h"

/* Flag on a hash table whose changes are logged as operations (the
** world's registry and data table, the package names, a walk's scratch
** table): the barrier never copies it. */
#define JT_HASH_MANAGED 0x8000

/* Open a level; returns the new depth (1 for the outermost). */
int jt_ckpt_open(jt_State *S);
/* Levels open (S->ckpt_depth mirrors it for the barrier's fast test). */
int jt_ckpt_depth(jt_State *S);
/* Undo everything the innermost level recorded and close it; nothing
** happens when none is open.  Never signals. */
void jt_ckpt_restore(jt_State *S);
/* Keep the innermost level's changes: its records go to the enclosing
** level (a restore of that one still undoes them), or are dropped when it
** is the outermost. */
void jt_ckpt_commit(jt_State *S);
/* Keep the outermost level's changes, leaving the levels inside it open
** (each still restores to the state of its own opening). */
void jt_ckpt_commit_outermost(jt_State *S);

/* The write barrier's half (jt_barrier_slow calls it while a level is
** open): save a copy of o the first time the innermost level sees it.
** Frames, code, streams, scratch random states and managed maps are never
** saved. */
void jt_ckpt_touch(jt_State *S, jt_Obj *o);

/* While a checkpoint is open, record how to undo a change of a C-side
** table: fn(S, a, b, c) runs when the checkpoint is restored (newest
** first; a and b are kept alive until then).  fn must not signal.
** Nothing is recorded when no checkpoint is open. */
typedef void (*jt_UndoFn)(jt_State *S, jt_V a, jt_V b, uintptr_t c);
void jt_ckpt_log_undo(jt_State *S, jt_UndoFn fn, jt_V a, jt_V b, uintptr_t c);

/* Put and remove in a managed map, logged so that a restore undoes them
** (a plain put or remove when no checkpoint is open).  jt_ckpt_map_rem:
** whether the key was there. */
void jt_ckpt_map_put(jt_State *S, jt_V map, jt_V key, jt_V val);
bool jt_ckpt_map_rem(jt_State *S, jt_V map, jt_V key);

/* What the open levels hold, for the export of what changed (levels are
** numbered from 0, the outermost).  A map log: `old` is JT_NOVALUE when
** the key was absent. */
typedef struct jt_MapLog {
  jt_V map, key, old;
} jt_MapLog;
size_t jt_ckpt_log_count(jt_State *S, int level);
jt_MapLog jt_ckpt_log_at(jt_State *S, int level, size_t i);
size_t jt_ckpt_saved_count(jt_State *S, int level);
jt_Obj *jt_ckpt_saved_at(jt_State *S, int level, size_t i);
/* Whether the levels from `from` on (there is one) logged or saved
** nothing at all. */
bool jt_ckpt_untouched_since(jt_State *S, int from);
/* Whether the levels from `from` on (there is one) saved only symbols. */
bool jt_ckpt_only_symbols_since(jt_State *S, int from);

/* Whether a level from `level` on saved a copy of o. */
bool jt_ckpt_saved_since(jt_State *S, int level, const jt_Obj *o);

/* ---- the consistency check (ckptcheck.c) ----
** On, every level opened digests the heap, and closing it checks that
** every object changed since was saved by the barrier (a store that
** skipped it is a change a restore cannot undo) and, after a restore, that
** every object is as it was.  The GC-stress build turns it on for every
** state, aborting with a description on a failure; a test turns it on
** without aborting and asks jt_ckpt_check_now. */
void jt_ckpt_check_enable(jt_State *S, bool on, bool abort_on_failure);
/* The innermost level's check now (it stays open): a malloc'd
** description of the first object changed behind the barrier, or NULL
** (also when the check is off or the level was open before it was on). */
char *jt_ckpt_check_now(jt_State *S);
/* Hooks: ckpt.c as a level opens, before it closes, after it closed (its
** index; restored or not); gc.c as it frees an object. */
void jt_ckpt_check_opened(jt_State *S);
void jt_ckpt_check_closing(jt_State *S, int level);
void jt_ckpt_check_closed(jt_State *S, int level, bool restored);
void jt_ckpt_check_freed(jt_State *S, jt_Obj *o);

/* The collector's roots: the saved copies, their owners, the logged keys
** and values, the undo records' values. */
void jt_ckpt_mark(jt_State *S);
void jt_ckpt_free(jt_State *S);   /* at close */

#endif
