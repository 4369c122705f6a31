/*
** cli.h — subcommands of the `jiti` program.  Each returns the process exit
** status: 0 success, 1 the evaluation failed (error, limit), 2 usage error,
** 3 an input file could not be read.
*/
#ifndef jiti_cli_h
#define jiti_cli_h

#include "jiti.h"

int cmd_run(int argc, char **argv);

#endif
