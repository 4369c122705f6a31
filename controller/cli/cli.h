/*
** cli.h — what every command of the `jiti` program shares, at the bottom
** of the controller (any folder may include it; it includes nothing of
** the controller): the exit statuses, the option helpers (opts.c), the
** large evaluation stack (stack.c), the monotonic clock (mono.c), and the
** guard that turns a damaged store's faults into a message (fault.c).  Each subcommand's entry point
** is declared by its own folder's header; main/main.c has the table.
**
** Exit statuses: 0 success, 1 failure (the message names the store or the
** kernel, and the fix where there is one), 2 usage error; `jiti run` also 3
** (a file could not be read) and 4 (a syntax error).
**
** Nothing here prints but the fault guard (a signal handler: nobody is left
** to print for it).  A helper that can fail returns a code and writes why
** into the caller's buffer, without the "jiti CMD: " the caller puts in
** front of it (the convention of engine.h too).
*/
#ifndef jiti_cli_h
#define jiti_cli_h

#include <stddef.h>
#include <stdint.h>
#include "jiti.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Room for any message of the controller's helpers, paths included. */
#define CLI_MSG_MAX 20480

/* ---- opts.c: options */

/* The store directory: --store DIR, else $JITI_STORE, else ./.jiti. */
const char *opts_default_store(void);

/* If argv[*i] is --store DIR or --store=DIR, consume it into *dir and return
** 1; return -1 with a message in err when DIR is missing; 0 otherwise. */
int opts_store(int argc, char **argv, int *i, const char **dir, char *err, size_t errlen);

/* Parse a non-negative decimal count (for -n, --fuel ...); 1 on success. */
int opts_count(const char *s, uint64_t *out);
/* Parse a byte size with an optional K, M or G suffix; 1 on success. */
int opts_size(const char *s, uint64_t *out);
/* Parse a duration: digits, then s, m, h, d or w (seconds without), from
** 1 s to 100 years, into milliseconds; 1 on success. */
int opts_duration(const char *s, int64_t *ms);

/* The whole of a file (path "-": standard input), NUL-terminated, its
** length in *len; NULL with errno set when it cannot be read. */
char *opts_read_file(const char *path, size_t *len);
/* The Lisp source a command was given: EXPR, or the whole of FILE (-:
** standard input) when EXPR is NULL; its length in *len.  NULL after a
** message on standard error naming CMD when it cannot be read, holds a NUL
** byte or is not valid UTF-8 ("nothing was DONE"). */
char *opts_read_source(const char *cmd, const char *done, const char *expr, const char *file,
                       size_t *len);

/* ---- mono.c: time */

/* Seconds on the monotonic clock (CLOCK_MONOTONIC): for durations and
** deadlines, which a change of the wall clock must not move. */
double mono_now(void);

/* ---- fault.c: a damaged data.mdb is reported, not a crash */

/* For the rest of the process (every command, the kernel included): a
** SIGBUS or SIGSEGV at an address a store's data.mdb or lock.mdb is mapped
** at prints "jiti CMD: the store at DIR is damaged ..." naming
** 'jiti recover-session', and exits EXIT_FAIL; any other fault keeps the
** action it had (a core dump, a sanitizer's report). */
void fault_guard(const char *cmd);

/* ---- stack.c: evaluation needs a large C stack */

#ifdef __SANITIZE_ADDRESS__
#define STACK_SIZE ((size_t)48 << 20)
#else
#define STACK_SIZE ((size_t)1 << 30)
#endif

/* Run cmd(argc, argv) on a thread with a STACK_SIZE stack (or on this
** thread if one cannot be made) and return its status. */
int stack_run(int (*cmd)(int, char **), int argc, char **argv);

/* A fresh interpreter with the world layer enabled and the stack size set.
** NULL when memory is exhausted. */
jiti_State *stack_new_world(void);

#endif
