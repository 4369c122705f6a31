/*
** run.h — `jiti run`: evaluate files or one expression in a fresh
** in-memory world (no kernel, no store).
*/
#ifndef jiti_run_h
#define jiti_run_h

/* The exit status: cli.h's, and also 3 (a file could not be read) and 4
** (a reader error). */
int cmd_run(int argc, char **argv);

#endif
