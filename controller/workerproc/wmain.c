/*
** wmain.c — `jiti __worker`: the worker's side of workerproc.h, the
** process that wproc_start starts for the kernel and for an offline
** change alike.  Hidden from `jiti --help`; worker/worker_main.c runs it.
*/
#include <stdio.h>
#include <sys/stat.h>
#include "cli.h"
#include "workerproc.h"

/* Refused unless WORKER_FD is a socket: only wproc_start starts it. */
int cmd_worker_internal(int argc, char **argv) {
  struct stat sb;
  if (fstat(WORKER_FD, &sb) != 0 || !S_ISSOCK(sb.st_mode)) {
    fprintf(stderr, "jiti __worker: internal command, started by 'jiti kernel' only\n");
    return EXIT_USAGE;
  }
  grant_List g = {0};
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = grant_option(argc, argv, &i, &g, err, sizeof err);
    if (r == 1) continue;
    if (r == 0) fprintf(stderr, "jiti __worker: unexpected argument '%s'\n", argv[i]);
    else fprintf(stderr, "jiti __worker: %s\n", err);
    return EXIT_USAGE;
  }
  worker_Options opt = {g.lib, g.n};
  return worker_main(WORKER_FD, &opt);
}
