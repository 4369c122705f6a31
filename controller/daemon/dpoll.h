/*
** dpoll.h — the daemon's event loop (dpoll.c): descriptors registered
** with what they wait for and a callback, timers, and hooks run before each
** sleep.  It knows nothing of the daemon; the daemon's parts register what
** they wait for, and dloop.c runs it.
**
** A turn: the timers that are due fire; the hooks run in the order they
** were registered (each says how soon it must run again); the loop sleeps
** until a descriptor is ready or the soonest of those times; the ready
** descriptors' callbacks run by rank (lowest first; in the order the system
** reports them within a rank).  A callback may add, change or remove any
** registration, its own included: an event for a descriptor removed (or
** removed and registered again) earlier in the same turn is not delivered.
*/
#ifndef jiti_dpoll_h
#define jiti_dpoll_h

#include <signal.h>
#include <stdint.h>

/* What a descriptor waits for, and what it is ready for. */
enum { DPOLL_IN = 1, DPOLL_OUT = 2, DPOLL_HUP = 4 /* hang-up or error: ready only */ };

typedef struct DPoll DPoll;

/* fd is ready for `ready` (DPOLL_ bits; DPOLL_HUP is reported whatever
** the mask). */
typedef void (*dpoll_IoFn)(void *ud, int fd, unsigned ready);
/* A timer is due (now: the monotonic clock, as daemon_now): the time it is
** due again, or < 0 to end it. */
typedef double (*dpoll_TimerFn)(void *ud, double now);
/* Before the loop sleeps: seconds within which it must run again; < 0:
** it does not mind. */
typedef double (*dpoll_BeforeFn)(void *ud, double now);

/* A loop, or NULL (errno set: out of memory, or no epoll). */
DPoll *dpoll_open(void);
void dpoll_close(DPoll *P);            /* closes its epoll set, not the descriptors */
/* Register fd (or change a registration), waiting for mask.  0, or -1
** (errno: the system refused to watch it, or out of memory). */
int dpoll_add(DPoll *P, int fd, unsigned mask, int rank, dpoll_IoFn fn, void *ud);
/* Change what fd waits for (no system call when it is unchanged).  0, or
** -1 (errno). */
int dpoll_mask(DPoll *P, int fd, unsigned mask);
/* Forget fd; before it is closed (a copy held by a child not yet exec'd
** would keep it watched).  Harmless for a descriptor not registered. */
void dpoll_del(DPoll *P, int fd);
/* A timer due at `when` (the monotonic clock): its id, or 0 (out of
** memory). */
uint64_t dpoll_timer(DPoll *P, double when, dpoll_TimerFn fn, void *ud);
void dpoll_timer_del(DPoll *P, uint64_t id);   /* harmless for one ended */
/* A hook run before each sleep, after those registered before it.  0, or
** -1 (out of memory). */
int dpoll_before(DPoll *P, dpoll_BeforeFn fn, void *ud);
/* From a hook or a callback: the turn ends at once and dpoll_run returns. */
void dpoll_stop(DPoll *P);
/* Turns until dpoll_stop: 0; -1 when the wait failed (errno).  Signals are
** delivered only during the wait, with `during` as the signal mask. */
int dpoll_run(DPoll *P, const sigset_t *during);

#endif
