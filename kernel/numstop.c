/*
** numstop.c — stopping a long GMP operation from a signal handler.
**
** A single GMP call on multi-megabyte integers (a product, an EXPT, a
** division, a conversion to digits) runs for seconds without returning to
** the evaluator, so neither a cancel nor an interrupt, which wait for the
** next evaluation step, would be seen before it ends.  Such a call runs
** here in a region the handler of jiti_cancel_async / jiti_interrupt_async
** may leave with siglongjmp.  Why that is sound:
**
** - GMP keeps no state of its own between or during calls (it is
**   reentrant; Debian builds it with reentrant temporary allocation): what
**   an abandoned call leaves is the integers it was writing and the memory
**   it had allocated.  The operations run here write only integers they
**   initialise themselves (jt_NumOp), which are abandoned with the call and
**   never read; their operands are only read.
** - The memory: GMP allocates through the functions installed once, at the
**   first region, with mp_set_memory_functions.  They pass every call on
**   to the functions installed before them, so outside a region nothing
**   changes (blocks made before they were installed are freed the same
**   way); inside a region they record each live block, and after an
**   escape every block still recorded is freed.  A region that would
**   record more than NUMSTOP_BLOCKS blocks stops being stoppable (it runs
**   to its end; nothing leaks).
** - The allocator itself is never left half-way: while GMP is inside one
**   of those functions (malloc, realloc, free, the record) the handler
**   only notes the stop, and the function leaves the region itself once
**   the allocator has returned.  The handler runs on the world's thread
**   (the worker blocks its signal elsewhere), the thread that set the
**   region up, and it jumps only while the region is armed: after its
**   sigsetjmp, before the operation's results are taken.
** - sigsetjmp saves the signal mask, so the signal blocked while its
**   handler ran is unblocked again after the jump.
**
** GMP's memory functions take no user data, so the region running on a
** thread is found through one thread-local pointer: the one mutable static
** of the kernel (with the functions saved at installation), unavoidable
** for a process-wide hook.  ASan sees every block: a leak after an escape
** fails tests/c/test_interrupt.c under the sanitizer build.
*/
#include <gmp.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_numstop.h"

#define NUMSTOP_BLOCKS 64

struct jt_NumStop {
  sigjmp_buf jb;
  volatile sig_atomic_t armed;      /* the handler may jump */
  volatile sig_atomic_t in_alloc;   /* GMP is in the allocator: never jump */
  volatile sig_atomic_t deferred;   /* a stop came while it was */
  bool pause_ok;                    /* an interrupt stops it too */
  bool overflow;                    /* more blocks than it can record */
  int n;
  void *block[NUMSTOP_BLOCKS];
  size_t size[NUMSTOP_BLOCKS];
};

static __thread struct jt_NumStop *running;
static void *(*prev_alloc)(size_t);
static void *(*prev_realloc)(void *, size_t, size_t);
static void (*prev_free)(void *, size_t);
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void record(struct jt_NumStop *R, void *p, size_t n) {
  if (R->n < NUMSTOP_BLOCKS) {
    R->block[R->n] = p;
    R->size[R->n] = n;
    R->n++;
    return;
  }
  R->overflow = true;   /* a block it cannot free: it must run to its end */
  R->armed = 0;
}

static int find(struct jt_NumStop *R, void *p) {
  for (int i = R->n - 1; i >= 0; i--)
    if (R->block[i] == p) return i;
  return -1;
}

/* The allocator has returned: a stop noted meanwhile leaves now. */
static void allocated(struct jt_NumStop *R) {
  R->in_alloc = 0;
  if (R->deferred && R->armed) {
    R->armed = 0;
    siglongjmp(R->jb, 1);
  }
}

static void *ns_alloc(size_t n) {
  struct jt_NumStop *R = running;
  if (!R) return prev_alloc(n);
  R->in_alloc = 1;
  void *p = prev_alloc(n);
  record(R, p, n);
  allocated(R);
  return p;
}

static void *ns_realloc(void *old, size_t on, size_t nn) {
  struct jt_NumStop *R = running;
  if (!R) return prev_realloc(old, on, nn);
  R->in_alloc = 1;
  int i = find(R, old);
  void *p = prev_realloc(old, on, nn);
  if (i >= 0) {
    R->block[i] = p;
    R->size[i] = nn;
  } else {
    record(R, p, nn);
  }
  allocated(R);
  return p;
}

static void ns_free(void *p, size_t n) {
  struct jt_NumStop *R = running;
  if (!R) {
    prev_free(p, n);
    return;
  }
  R->in_alloc = 1;
  int i = find(R, p);
  if (i >= 0) {
    R->n--;
    R->block[i] = R->block[R->n];
    R->size[i] = R->size[R->n];
  }
  prev_free(p, n);
  allocated(R);
}

static void install(void) {
  mp_get_memory_functions(&prev_alloc, &prev_realloc, &prev_free);
  mp_set_memory_functions(ns_alloc, ns_realloc, ns_free);
}

void jt_numstop_free(void *p, size_t n) {
  void (*f)(void *, size_t);
  mp_get_memory_functions(NULL, NULL, &f);
  f(p, n);
}

/* The request that stops R now, if any: a cancel (inside a host call,
** where it can abort), or an interrupt R may take. */
static bool stops(jt_State *S, const struct jt_NumStop *R) {
  return (S->cancel && S->jmp) || (S->interrupt && R->pause_ok);
}

void jt_numstop_async(jt_State *S) {
  struct jt_NumStop *R = S->numstop;
  if (!R || !R->armed || !stops(S, R)) return;
  if (R->in_alloc) {
    R->deferred = 1;
    return;
  }
  R->armed = 0;
  siglongjmp(R->jb, 1);
}

void jt_numstop_run(jt_State *S, size_t limbs, bool pause_ok, jt_NumOp op, void *ud) {
  if (limbs < JT_NUMSTOP_LIMBS) {
    op(ud);
    return;
  }
  pthread_once(&installed, install);
  struct jt_NumStop R;
  struct jt_NumStop *volatile r = &R;
  volatile bool may_pause = pause_ok;
  for (;;) {
    memset(&R, 0, offsetof(struct jt_NumStop, block));
    R.pause_ok = may_pause && jt_interrupt_possible(S);
    if (sigsetjmp(R.jb, 1) == 0) {
      running = &R;
      S->numstop = &R;
      R.armed = 1;
      /* a stop that came before the region was armed found none */
      if (stops(S, &R)) {
        R.armed = 0;
        siglongjmp(R.jb, 1);
      }
      op(ud);
      R.armed = 0;
      S->numstop = NULL;
      running = NULL;
      return;   /* the blocks recorded are the results' now */
    }
    S->numstop = NULL;
    running = NULL;
    for (int i = 0; i < r->n; i++) prev_free(r->block[i], r->size[i]);
    r->n = 0;
    if (S->cancel && S->jmp) jt_fuel_out_work(S);   /* aborts */
    if (r->pause_ok && jt_interrupt_takeable(S)) {
      jt_take_interrupt(S);   /* CONTINUE returns: the operation again */
    } else {
      may_pause = false;      /* the interrupt waits for the next step */
    }
  }
}
