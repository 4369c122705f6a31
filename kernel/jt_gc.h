/*
** jt_gc.h — allocation and the garbage collector.
**
** The collector is precise, non-moving mark and sweep.  It runs inside an
** allocation, so any call that allocates may free every object that is not
** reachable from a root.  The roots are:
**   - the value stack (S->stack .. S->sp): arguments and pushed temporaries;
**   - C locals registered with JT_ROOT (their *addresses*, so reassigning the
**     local is safe) and released with JT_UNROOT in reverse order;
**   - every symbol in the symbol table, the state's fixed slots, the dynamic
**     binding stack, handler and restart clusters, call records, the
**     multiple-value buffer, and S->pending.
** A non-local exit restores the root count saved in its jump record, so a
** function that is exited by an error need not unroot.
**
** Rule of thumb for C code: a jt_V held in a local across any call that can
** allocate (cons, make-string, intern, calling Lisp, signalling) must be
** rooted.  The GC-stress mode (collect at every allocation) makes a missed
** root fail loudly under ASan.
**
** Generations.  Objects are born young.  Survivors become old only at a
** safepoint (jt_gc_safepoint): a moment between host calls, or between the
** top-level forms of a host call, when no kernel C code is half-way through
** filling an object.  A young collection marks from the roots but stops at
** old objects, so its cost follows the young objects (what the recent calls
** allocated), not the whole heap — a world of a million data rows costs
** its transactions no more than a small one.  It is correct because every
** store into an old object passes the write barrier (JT_SET, JT_TOUCH,
** JT_SET_GC), which records the object (or, for a vector or hash table, the
** one slot) when it may now point to a young object; the young collection
** marks from those records too.  Promoting only at safepoints is what makes
** "fresh objects may be filled directly" safe: an object being filled is
** still young, however many collections happen meanwhile.
**
** Collections at an allocation never promote: they are full collections
** (when the allocation since the last collection passes the threshold), or
** in the stress mode alternately young and full.  A safepoint runs a young
** collection once the young generation has passed the nursery size, or a
** full one when the old generation has doubled since the last full one.
*/
#ifndef jt_gc_h
#define jt_gc_h

#include "jt_state.h"

/* Allocate a heap object of `size` bytes (header included) of type `t`.
** The header is filled in; the rest is zeroed.  May collect first.  Signals
** heap-exhausted when the heap limit would be exceeded. */
jt_Obj *jt_alloc(jt_State *S, int t, size_t size);

/* Account for `n` bytes of out-of-object memory (array buffers, GMP limbs)
** owned by a heap object; may collect and may signal heap-exhausted.
** jt_gc_release gives the bytes back when a buffer shrinks or is freed. */
void jt_gc_account(jt_State *S, size_t n);
void jt_gc_release(jt_State *S, size_t n);

/* malloc/realloc that account the bytes and signal storage-condition on
** failure instead of returning NULL. */
void *jt_malloc(jt_State *S, size_t n);
void *jt_realloc(jt_State *S, void *p, size_t oldn, size_t newn);
void jt_free(jt_State *S, void *p, size_t n);

/* A full collection, safe anywhere; survivors keep their generation. */
void jt_gc_collect(jt_State *S);
/* Only where no kernel C code is in the middle of building an object (the
** start of an outermost host call, between the top-level forms of one):
** collects and promotes the survivors when due; `full` forces a full
** collection. */
void jt_gc_safepoint(jt_State *S, bool full);
/* Tell the collector that `o` was changed behind the barrier's back (the
** world layer's restore copies old contents back). */
void jt_gc_remember(jt_State *S, jt_Obj *o);
/* Mark what the fields of o refer to, as a collection would (o may be a
** copy of an object's fixed part: the world's saved bodies). */
void jt_gc_trace_fields(jt_State *S, const jt_Obj *o);
size_t jt_gc_obj_size(const jt_Obj *o);  /* bytes of the fixed part */
/* Call fn on every object of the heap not yet freed (live, or garbage not
** yet swept); fn must not allocate. */
void jt_gc_each_object(jt_State *S, void (*fn)(jt_State *S, jt_Obj *o, void *ud), void *ud);
void jt_gc_free_all(jt_State *S);   /* at close */

/* Roots for C locals. */
void jt_root_grow(jt_State *S);
#define JT_ROOT(S, var) \
  do { if ((S)->nroots == (S)->rootcap) jt_root_grow(S); \
       (S)->roots[(S)->nroots++] = &(var); } while (0)
#define JT_UNROOT(S, n) ((S)->nroots -= (n))

/* The value stack. */
void jt_stack_overflow(jt_State *S) __attribute__((noreturn));
#define JT_PUSH(S, v) \
  do { if ((S)->sp >= (S)->stack_end) jt_stack_overflow(S); *(S)->sp++ = (v); } while (0)
#define JT_POP(S, n) ((S)->sp -= (n))

/* Mark one value (used by the world layer for its own roots). */
void jt_gc_mark(jt_State *S, jt_V v);

#endif
