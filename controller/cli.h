/*
** cli.h — subcommands of the `jiti` program.  Each returns the process exit
** status: 0 success, 1 the evaluation failed (error, limit), 2 usage error,
** 3 an input file could not be read (run only).
*/
#ifndef jiti_cli_h
#define jiti_cli_h

#include "jiti.h"

int cmd_run(int argc, char **argv);

/* Store commands (store_cmds.c, history_cmds.c, recover.c): all take
** --store DIR (default $JITI_STORE, else ./.jiti); exit 0 success, 1 failure
** (the message names the store path), 2 usage. */
int cmd_init(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_invariant(int argc, char **argv);
int cmd_recover_session(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_rollback(int argc, char **argv);
int cmd_events(int argc, char **argv);

/* The kernel daemon (daemon.c) and its clients (client.c, repl.c): all
** take --store DIR; exit 0 success, 1 failure (no kernel running, an error
** reply, a failed transaction), 2 usage.  docs/protocol.md. */
int cmd_kernel(int argc, char **argv);
int cmd_worker_internal(int argc, char **argv);  /* `jiti __worker`, hidden */
int cmd_eval(int argc, char **argv);
int cmd_observe(int argc, char **argv);
int cmd_act(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_repl(int argc, char **argv);     /* repl.c */

/* A model grows the world (session/): exit statuses in session/sess.h. */
int cmd_session(int argc, char **argv);
int cmd_sessions(int argc, char **argv);

#endif
