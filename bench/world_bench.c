/* world_bench.c — cost of checkpoint + one change + restore (and + commit)
** in worlds of 1e2, 1e4 and 1e6 data rows.  Issue 4's target: the largest
** world costs at most 1.5x the smallest (the cost follows the change, not
** the world).  Usage: world_bench [iterations]   (default 2000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jiti.h"
#include "jiti_world.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ev(jiti_State *S, const char *src) {
  jiti_Result r;
  if (jiti_eval_string(S, src, strlen(src), &r) != JITI_OK) {
    fprintf(stderr, "world_bench: %s: %s\n", src, r.message);
    exit(1);
  }
  jiti_result_free(&r);
}

/* Median of `reps` timings of `iters` rounds, in microseconds per round. */
static double measure(jiti_State *S, int iters, int commit) {
  double best[5];
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (int i = 0; i < iters; i++) {
      jiti_checkpoint(S);
      ev(S, "(world-put 7 (list :changed 1))");
      if (commit) jiti_commit(S); else jiti_restore(S);
    }
    best[rep] = (now() - t0) / iters * 1e6;
  }
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (best[j] < best[i]) { double t = best[i]; best[i] = best[j]; best[j] = t; }
  return best[2];
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 2000;
  const long sizes[] = {100, 10000, 1000000};
  double restore[3], commit[3];
  for (int k = 0; k < 3; k++) {
    jiti_State *S = jiti_open();
    jiti_world_enable(S);
    char src[200];
    snprintf(src, sizeof src, "(dotimes (i %ld) (world-put i (list i \"row\")))", sizes[k]);
    ev(S, src);
    ev(S, "(defvar *counter* 0) (defun bump () (incf *counter*))");
    /* Start both sizes from a collected heap, so that the rounds allocate
    ** from recycled memory in either world (steady state) instead of the
    ** large world alone faulting in fresh pages. */
    ev(S, "(%gc)");
    restore[k] = measure(S, iters, 0);
    commit[k] = measure(S, iters, 1);
    jiti_close(S);
  }
  printf("| data rows | checkpoint + change + restore (us) | checkpoint + change + commit (us) |\n");
  printf("|---:|---:|---:|\n");
  for (int k = 0; k < 3; k++) printf("| %ld | %.2f | %.2f |\n", sizes[k], restore[k], commit[k]);
  printf("\nratio 1e6/1e2: restore %.2f, commit %.2f (target <= 1.5)\n",
         restore[2] / restore[0], commit[2] / commit[0]);
  return 0;
}
