/*
** client.h — the client commands of a running kernel (docs/protocol.md):
** the one-shot commands (commands.c) and `jiti repl` (repl.c).  Each takes
** --store DIR (default $JITI_STORE, else ./.jiti) and returns its exit
** status (cli.h).  The protocol client they share is kclient.h's, the
** printing of replies render.h's.
*/
#ifndef jiti_client_h
#define jiti_client_h

int cmd_eval(int argc, char **argv); /* commands.c */
int cmd_preview(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_observe(int argc, char **argv);
int cmd_act(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_interrupt(int argc, char **argv);
int cmd_repl(int argc, char **argv); /* repl.c */
int cmd_heal(int argc, char **argv); /* heal.c */
int cmd_repairs(int argc, char **argv);
int cmd_promote(int argc, char **argv);
int cmd_reject(int argc, char **argv);

#endif
