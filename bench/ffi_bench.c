/* ffi_bench.c — the cost of a foreign call: (my-cos x) declared with
** define-foreign against libm's cos, beside the built-in COS, both called
** from the same interpreted loop in one run.  Prints ns per call for each
** and their ratio (foreign / built-in), the median of several batches timed
** by the process's CPU clock, the two alternating so that both see the
** same machine.
**
** Usage: ffi_bench [--calls N] [--batches N]      (defaults 1000000, 9) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jiti.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double run(jiti_State *S, const char *src) {
  jiti_Result r;
  double t0 = cpu_now();
  jiti_Status st = jiti_eval_string(S, src, strlen(src), &r);
  double t = cpu_now() - t0;
  if (st != JITI_OK) { fprintf(stderr, "ffi_bench: %s\n", r.message); exit(1); }
  jiti_result_free(&r);
  return t;
}

int main(int argc, char **argv) {
  long calls = 1000000;
  int batches = 9;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--calls") && i + 1 < argc) calls = atol(argv[++i]);
    else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = atoi(argv[++i]);
    else { fprintf(stderr, "usage: ffi_bench [--calls N] [--batches N]\n"); return 2; }
  }
  if (batches < 1 || batches > 99 || calls < 1) { fprintf(stderr, "ffi_bench: bad counts\n"); return 2; }
  jiti_State *S = jiti_open();
  char err[256];
  if (jiti_foreign_grant(S, "libm.so.6", err, sizeof err) != JITI_OK) { fprintf(stderr, "%s\n", err); return 1; }
  run(S, "(define-foreign my-cos \"libm.so.6\" \"cos\" :double (:double))");
  char foreign[256], builtin[256], empty[256];
  snprintf(foreign, sizeof foreign, "(let ((s 0d0)) (dotimes (i %ld) (setq s (+ s (my-cos 0.5d0)))) s)", calls);
  snprintf(builtin, sizeof builtin, "(let ((s 0d0)) (dotimes (i %ld) (setq s (+ s (cos 0.5d0)))) s)", calls);
  snprintf(empty, sizeof empty, "(let ((s 0d0)) (dotimes (i %ld) (setq s (+ s 0.5d0))) s)", calls);
  double tf[99], tb[99], te[99];
  run(S, foreign); run(S, builtin);  /* warm-up */
  for (int b = 0; b < batches; b++) {
    tf[b] = run(S, foreign);
    tb[b] = run(S, builtin);
    te[b] = run(S, empty);
  }
  qsort(tf, batches, sizeof *tf, cmp);
  qsort(tb, batches, sizeof *tb, cmp);
  qsort(te, batches, sizeof *te, cmp);
  double f = tf[batches / 2] / calls * 1e9, bi = tb[batches / 2] / calls * 1e9, e = te[batches / 2] / calls * 1e9;
  printf("| call | ns per call (loop included) | ns per call (loop subtracted) |\n|---|---:|---:|\n");
  printf("| built-in (cos x) | %.1f | %.1f |\n", bi, bi - e);
  printf("| foreign (my-cos x), libm cos | %.1f | %.1f |\n", f, f - e);
  printf("\nforeign / built-in: %.2f (loop included), %.2f (loop subtracted); %ld calls, median of %d batches\n",
         f / bi, (f - e) / (bi - e), calls, batches);
  jiti_close(S);
  return 0;
}
