/*
** jiti_limits.h — the one table of jiti's default limits (jiti_Limits,
** jiti.h), spelled once for every part that needs them: a transaction's,
** in the worker (worker/txn.c) and in the controller's limits table and
** its options (controller/engine/limits.c); an import's fuel where the
** host set none (world.c); `jiti run`'s (controller/run/run.c).  0 in a
** jiti_Limits means unlimited.  Constants only: nothing to link.
*/
#ifndef jiti_limits_h
#define jiti_limits_h

/* A transaction: the form, its repairs, the invariants, the goals. */
#define JITI_LIMITS_FUEL 10000000u            /* evaluation steps */
#define JITI_LIMITS_DEPTH 10000u              /* call depth */
#define JITI_LIMITS_HEAP ((size_t)256 << 20)  /* live heap bytes */
#define JITI_LIMITS_OUTPUT ((size_t)64 << 10) /* characters printed */

/* The largest depth an option may ask for (more is cut to it). */
#define JITI_LIMITS_DEPTH_MAX 10000000u

/* A paused transaction: seconds it waits for an answer by default, and at
** most (a week). */
#define JITI_LIMITS_PAUSE_TIMEOUT 120.0
#define JITI_LIMITS_PAUSE_MAX 604800

/* `jiti run`: a program of one's own, unlimited but for its depth. */
#define JITI_LIMITS_RUN_DEPTH 100000u

#endif
