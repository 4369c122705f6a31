/*
** jt_numstop.h — long GMP operations that a cancel or an interrupt stops
** (numstop.c; docs/security.md, "Stopping a running computation").
*/
#ifndef jt_numstop_h
#define jt_numstop_h

#include <stdbool.h>
#include <stddef.h>
#include "jt_state.h"

/* Operands of at least this many limbs (32 KiB numbers, a product of them
** takes about 0.1 ms) make an operation stoppable; smaller ones run as they
** are, since they end before a stop could be noticed anyway. */
#define JT_NUMSTOP_LIMBS 4096

/* An operation of GMP calls only: it initialises (mpz_init) every integer
** it writes, reads operands that nothing changes while it runs, and calls
** nothing of the kernel's.  It may be abandoned half-way and run again. */
typedef void (*jt_NumOp)(void *ud);

/* Run op, about `limbs` limbs large.  When large, a cancel that comes while
** it runs stops it at once (its memory freed) and aborts as a cancel does;
** an interrupt stops it too when pause_ok (the caller is a number
** primitive: nothing but rooted numbers is live in it), is taken there
** (the debugger; CONTINUE returns) and op runs again from its start; with
** pause_ok false the interrupt waits for the next evaluation step.  When
** it returns, op ran to its end once: what it initialised is the caller's
** (mpz_clear it). */
void jt_numstop_run(jt_State *S, size_t limbs, bool pause_ok, jt_NumOp op, void *ud);

/* From jiti_cancel_async / jiti_interrupt_async (a signal handler): leave
** the running operation now if the request stops it (siglongjmp), or as
** soon as GMP's allocator returns. */
void jt_numstop_async(jt_State *S);

/* GMP's free function (the one a string mpz_get_str allocated must go
** back to). */
void jt_numstop_free(void *p, size_t n);

#endif
