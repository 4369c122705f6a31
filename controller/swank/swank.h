/*
** swank.h — `jiti swank`: a Swank server, so that Emacs's SLIME works on a
** running kernel's world (docs/editor.md).  A client of the kernel like
** `jiti repl`: it speaks SLIME's wire to the editor on 127.0.0.1 and the
** kernel's JSON protocol (docs/protocol.md) to DIR/kernel.sock; the
** sandboxed worker gains no socket.  Exit status: 0 after the editor
** disconnects (without --loop) or SIGINT/SIGTERM, 1 no kernel, no secret or
** the port is taken, 2 usage.
*/
#ifndef jiti_swank_h
#define jiti_swank_h

int cmd_swank(int argc, char **argv);  /* sserver.c */

#endif
