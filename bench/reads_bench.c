/* reads_bench.c — what recording a call's reads costs (jiti_reads_begin,
** kernel/reads.c): the worker records them for every call that cannot
** pause while a repair policy selects anything, so that a failure's
** evidence lists the state the call read.
**
** Three forms, each a call of a world function as an application makes it:
**   sale    a vending machine's sale: a global, five slots through
**           accessors, a hash table in a slot, two slot writes
**   rows    a function reading 8 data rows (world-get) and a global
**   loop    a loop reading one slot and one global 1,000 times (the scan
**           of the table for every read after the first)
** Each is timed (CPU clock of the process) in batches of --iters
** evaluations (jiti_eval_string: read, analysed, evaluated, printed, as a
** host evaluates), without and with recording (begin before, end after),
** the two kinds of batch alternating so both see the same machine; the
** figure is the median batch's time per evaluation, and the ratio.
**
** Usage: reads_bench [--iters N] [--batches N]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jiti.h"
#include "jiti_world.h"

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void eval_or_die(jiti_State *S, const char *src) {
  jiti_Result r;
  if (jiti_eval_string(S, src, strlen(src), &r) != JITI_OK) {
    fprintf(stderr, "reads_bench: %s: %s\n", src, r.message ? r.message : "failed");
    exit(1);
  }
  jiti_result_free(&r);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median time per evaluation of src (µs) over batches, recording or not. */
static double timed(jiti_State *S, const char *src, int iters, int batches, int record, double *out) {
  for (int b = 0; b < batches; b++) {
    double t0 = cpu_now();
    for (int i = 0; i < iters; i++) {
      if (record) jiti_reads_begin(S);
      eval_or_die(S, src);
      if (record) jiti_reads_end(S);
    }
    out[b] = (cpu_now() - t0) / iters * 1e6;
  }
  qsort(out, (size_t)batches, sizeof *out, cmp);
  return out[batches / 2];
}

int main(int argc, char **argv) {
  int iters = 20000, batches = 9;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: reads_bench [--iters N] [--batches N]\n");
      return 2;
    }
  }
  if (iters < 1 || batches < 1) return 2;
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  eval_or_die(S, "(defclass product () ((name :initarg :name :accessor product-name)"
                 " (price :initarg :price :accessor product-price) (stock :initarg :stock :accessor product-stock)))");
  eval_or_die(S, "(defclass machine () ((credit :initform 0 :accessor machine-credit)"
                 " (sales :initform 0 :accessor machine-sales) (slots :initform (make-hash-table :test 'equal)"
                 " :accessor machine-slots)))");
  eval_or_die(S, "(defvar *machine* (make-instance 'machine))");
  eval_or_die(S, "(setf (gethash \"A1\" (machine-slots *machine*)) (make-instance 'product :name \"cola\" "
                 ":price 150 :stock 1000000000))");
  eval_or_die(S, "(defun sale (code) (let ((p (gethash code (machine-slots *machine*)))) (setf (machine-credit "
                 "*machine*) (+ (machine-credit *machine*) (product-price p))) (decf (product-stock p)) (incf "
                 "(machine-sales *machine*)) (list (product-name p) (machine-credit *machine*))))");
  eval_or_die(S, "(dotimes (i 8) (world-put i (* i i)))");
  eval_or_die(S, "(defvar *scale* 3)");
  eval_or_die(S, "(defun rows () (let ((s 0)) (dotimes (i 8) (incf s (world-get i))) (* s *scale*)))");
  eval_or_die(S, "(defun spin () (let ((s 0)) (dotimes (i 1000) (incf s (+ *scale* (machine-sales *machine*)))) s))");
  static const char *const forms[][2] = {{"sale", "(sale \"A1\")"}, {"rows", "(rows)"}, {"loop", "(spin)"}};
  double *tmp = calloc((size_t)batches, sizeof *tmp);
  printf("| form | µs/eval without | µs/eval recording | ratio |\n|---|---:|---:|---:|\n");
  for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
    int n = !strcmp(forms[f][0], "loop") ? iters / 20 + 1 : iters;
    timed(S, forms[f][1], n / 4 + 1, 1, 0, tmp);   /* warm-up */
    timed(S, forms[f][1], n / 4 + 1, 1, 1, tmp);
    double off = 0, on = 0, *a = calloc((size_t)batches, sizeof *a), *b = calloc((size_t)batches, sizeof *b);
    for (int k = 0; k < batches; k++) {   /* alternate: both see the same machine */
      timed(S, forms[f][1], n, 1, 0, &a[k]);
      timed(S, forms[f][1], n, 1, 1, &b[k]);
    }
    qsort(a, (size_t)batches, sizeof *a, cmp);
    qsort(b, (size_t)batches, sizeof *b, cmp);
    off = a[batches / 2];
    on = b[batches / 2];
    printf("| %s | %.2f | %.2f | %.3f |\n", forms[f][0], off, on, on / off);
    free(a);
    free(b);
  }
  free(tmp);
  jiti_close(S);
  return 0;
}
