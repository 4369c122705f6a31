/*
** mono.c — the controller's one clock for durations and deadlines (cli.h):
** monotonic, so that a change of the wall clock moves no timeout.
*/
#include <time.h>
#include "cli.h"

double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
