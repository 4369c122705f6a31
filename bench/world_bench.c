/* world_bench.c — cost of checkpoint + one change + restore (and + commit)
** in worlds of 1e2, 1e4 and 1e6 data rows.  The target: the largest
** world costs at most 1.5x the smallest (the cost follows the change, not
** the world).
**
** What is measured: one round is jiti_checkpoint, jiti_eval_string of
** "(world-put 7 (list :changed 1))" (read, analysed, evaluated and its value
** printed, as a host would), then jiti_restore or jiti_commit.  A batch is
** `iters` rounds timed by the process's CPU clock; restore and commit
** batches alternate, so both see the same machine.  Each world is built in a
** child process of its own (fresh heap and malloc state), warmed up, then
** timed; the three worlds run one after another and the whole sequence is
** repeated `passes` times, so slow drifts of a shared machine hit every
** size alike.  The figure is the median over all batches.
**
** Steady state, not first touch: the warm-up (default 20,000 rounds,
** about 25 MB of allocation) takes each world through several young
** collections, the first of which promotes the freshly built rows.  A batch
** of 2,000 rounds allocates ~2.5 MB, so every batch pays for about one
** young collection: their cost is inside the figures.  A full collection
** comes only when the old generation has doubled, which these rounds (about
** 2 bytes of promoted garbage each) would take tens of millions to do.
**
** Usage: world_bench [--publish] [--iters N] [--batches N] [--passes N] [--warmup N] [N]
**
** --publish measures a worker's publish path instead: each round exports
** the changed entries before the commit, and the two kinds of batch are
** without and with the proof that each imports back (jiti_entry_verify),
** which must also cost what the change did, not the size of the world.
**
** world_bench --clos [N] measures CLOS in the world instead (N instances,
** default 100000, each in a data row): building them, exporting the world,
** importing it into a fresh state and exporting that again (compared byte
** for byte); redefining the class with one more slot inside a checkpoint
** (every instance migrated), exporting the changed entries and restoring;
** the same redefinition when the N rows hold plain data and only 100 hold
** instances (the walk over managed state); and checkpoint + defmethod +
** restore in worlds of 1e2, 1e4 and N instances (it should not grow).
*/
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "jiti.h"
#include "jiti_world.h"

#define NSIZES 3
#define MAX_SAMPLES 1024

static const long sizes[NSIZES] = {100, 10000, 1000000};

typedef struct Opts { long iters, batches, passes, warmup, publish; } Opts;

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* What a round does after the change: restore it, commit it, or (the
** publish path of --publish) export the changed entries and commit, the
** export followed or not by the proof that each entry imports back. */
enum { ROUND_RESTORE, ROUND_COMMIT, ROUND_EXPORT, ROUND_PROVE };

static int prove(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  jiti_State *S = ud;
  char err[256];
  if (b && jiti_entry_verify(S, k, name, b, len, err, sizeof err) != JITI_OK) {
    fprintf(stderr, "world_bench: %s %s does not import back: %s\n", jiti_entry_kind_name(k), name, err);
    exit(1);
  }
  return 0;
}

static int ignore(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  (void)ud; (void)k; (void)name; (void)b; (void)len;
  return 0;
}

static void rounds(jiti_State *S, long n, int how) {
  for (long i = 0; i < n; i++) {
    jiti_checkpoint(S);
    ev(S, "(world-put 7 (list :changed 1))");
    if (how >= ROUND_EXPORT) {
      char err[256];
      if (jiti_export_changed(S, how == ROUND_PROVE ? prove : ignore, S, err, sizeof err) != JITI_OK) {
        fprintf(stderr, "world_bench: export_changed: %s\n", err);
        exit(1);
      }
    }
    if (how == ROUND_RESTORE) jiti_restore(S); else jiti_commit(S);
  }
}

/* CPU microseconds per round of one batch. */
static double batch(jiti_State *S, long iters, int how) {
  double t0 = cpu_now();
  rounds(S, iters, how);
  return (cpu_now() - t0) / iters * 1e6;
}

/* In a child: build a world of `rows` rows, warm it up, write
** batches x {restore, commit} timings to `fd`. */
static void run_world(long rows, const Opts *o, int fd) {
  jiti_State *S = jiti_open();
  if (!S) { fprintf(stderr, "world_bench: jiti_open failed\n"); exit(1); }
  jiti_world_enable(S);
  char src[200];
  snprintf(src, sizeof src, "(dotimes (i %ld) (world-put i (list i \"row\")))", rows);
  ev(S, src);
  ev(S, "(defvar *counter* 0) (defun bump () (incf *counter*))");
  /* the two kinds of batch, alternating */
  int how0 = o->publish ? ROUND_EXPORT : ROUND_RESTORE, how1 = o->publish ? ROUND_PROVE : ROUND_COMMIT;
  rounds(S, o->warmup / 2, how0);
  rounds(S, o->warmup - o->warmup / 2, how1);
  double t[2 * MAX_SAMPLES];
  for (long b = 0; b < o->batches; b++) {
    t[2 * b] = batch(S, o->iters, how0);
    t[2 * b + 1] = batch(S, o->iters, how1);
  }
  jiti_close(S);
  size_t n = (size_t)o->batches * 2 * sizeof(double);
  if (write(fd, t, n) != (ssize_t)n) exit(1);
}

/* ------------------------------------------------------------------ CLOS */

typedef struct { jiti_EntryKind *kind; char **name; unsigned char **bytes; size_t *len; size_t n, cap, total; } Ents;

static int keep(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Ents *e = ud;
  if (e->n == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 1024;
    e->kind = realloc(e->kind, e->cap * sizeof *e->kind);
    e->name = realloc(e->name, e->cap * sizeof *e->name);
    e->bytes = realloc(e->bytes, e->cap * sizeof *e->bytes);
    e->len = realloc(e->len, e->cap * sizeof *e->len);
  }
  e->kind[e->n] = k;
  e->name[e->n] = strdup(name);
  e->bytes[e->n] = b ? malloc(len ? len : 1) : NULL;
  if (b) memcpy(e->bytes[e->n], b, len);
  e->len[e->n] = len;
  e->total += len;
  e->n++;
  return 0;
}

static void ents_free(Ents *e) {
  for (size_t i = 0; i < e->n; i++) { free(e->name[i]); free(e->bytes[i]); }
  free(e->kind); free(e->name); free(e->bytes); free(e->len);
  memset(e, 0, sizeof *e);
}

static bool ents_equal(const Ents *a, const Ents *b) {
  if (a->n != b->n) return false;
  for (size_t i = 0; i < a->n; i++)
    if (a->kind[i] != b->kind[i] || strcmp(a->name[i], b->name[i]) || a->len[i] != b->len[i] ||
        memcmp(a->bytes[i], b->bytes[i], a->len[i]))
      return false;
  return true;
}

static jiti_State *clos_open(void) {
  jiti_State *S = jiti_open();
  if (!S) { fprintf(stderr, "world_bench: jiti_open failed\n"); exit(1); }
  jiti_world_enable(S);
  return S;
}

static const char *PT =
  "(defclass pt () ((x :initarg :x :accessor px) (y :initarg :y :accessor py)))"
  "(defmethod print-object ((p pt) s) (format s \"<~a>\" (px p)))";
static const char *PT2 =
  "(defclass pt () ((x :initarg :x :accessor px) (y :initarg :y :accessor py) (z :initform 0)))";

/* CPU seconds of one redefinition migrating what the world holds,
** its export of changed entries and the restore. */
static void migrate(jiti_State *S, double *t_def, double *t_export, double *t_restore, size_t *changed) {
  jiti_checkpoint(S);
  double t0 = cpu_now();
  ev(S, PT2);
  double t1 = cpu_now();
  Ents ch = {0};
  char err[512];
  if (jiti_export_changed(S, keep, &ch, err, sizeof err) != JITI_OK) {
    fprintf(stderr, "world_bench: export_changed: %s\n", err);
    exit(1);
  }
  double t2 = cpu_now();
  jiti_restore(S);
  double t3 = cpu_now();
  *t_def = t1 - t0;
  *t_export = t2 - t1;
  *t_restore = t3 - t2;
  *changed = ch.n;
  ents_free(&ch);
}

/* Microseconds per round of checkpoint + defmethod + restore. */
static double method_rounds(jiti_State *S, long iters) {
  double t0 = cpu_now();
  for (long i = 0; i < iters; i++) {
    jiti_checkpoint(S);
    ev(S, "(defmethod area ((p pt)) (* (px p) 2))");
    jiti_restore(S);
  }
  return (cpu_now() - t0) / iters * 1e6;
}

static int clos_main(long n) {
  char src[300];
  printf("world_bench --clos: %ld instances, one per data row; CPU seconds of the process\n\n", n);
  jiti_State *S = clos_open();
  ev(S, PT);
  double t0 = cpu_now();
  snprintf(src, sizeof src, "(dotimes (i %ld) (world-put i (make-instance 'pt :x i :y (list i \"row\"))))", n);
  ev(S, src);
  double t_build = cpu_now() - t0;
  Ents a = {0}, b = {0};
  char err[512];
  t0 = cpu_now();
  if (jiti_export_all(S, keep, &a, err, sizeof err) != JITI_OK) { fprintf(stderr, "world_bench: %s\n", err); return 1; }
  double t_export = cpu_now() - t0;
  jiti_State *T = clos_open();
  t0 = cpu_now();
  jiti_world_reserve(T, JITI_ENTRY_DATA, (size_t)n);
  for (size_t i = 0; i < a.n; i++)
    if (jiti_import_entry(T, a.kind[i], a.name[i], a.bytes[i], a.len[i], err, sizeof err) != JITI_OK) {
      fprintf(stderr, "world_bench: import %s: %s\n", a.name[i], err);
      return 1;
    }
  double t_import = cpu_now() - t0;
  t0 = cpu_now();
  jiti_export_all(T, keep, &b, err, sizeof err);
  double t_reexport = cpu_now() - t0;
  bool same = ents_equal(&a, &b);
  jiti_close(T);
  double d, e, r;
  size_t changed;
  migrate(S, &d, &e, &r, &changed);
  printf("| step | seconds | per instance (us) |\n|---|---:|---:|\n");
  printf("| make-instance + world-put | %.3f | %.2f |\n", t_build, t_build / n * 1e6);
  printf("| export (%zu entries, %.1f MB) | %.3f | %.2f |\n", a.n, a.total / 1e6, t_export, t_export / n * 1e6);
  printf("| import into a fresh world | %.3f | %.2f |\n", t_import, t_import / n * 1e6);
  printf("| export again: %s | %.3f | %.2f |\n", same ? "byte-identical" : "DIFFERENT", t_reexport, t_reexport / n * 1e6);
  printf("| redefine the class: migrate every instance | %.3f | %.2f |\n", d, d / n * 1e6);
  printf("| export the changed entries (%zu) | %.3f | %.2f |\n", changed, e, e / n * 1e6);
  printf("| restore (class and instances as before) | %.3f | %.2f |\n", r, r / n * 1e6);
  ents_free(&a);
  ents_free(&b);
  jiti_close(S);

  /* the same redefinition when the rows are plain data and 100 hold instances */
  S = clos_open();
  ev(S, PT);
  snprintf(src, sizeof src, "(dotimes (i %ld) (world-put i (if (< i 100) (make-instance 'pt :x i) (list i \"row\"))))", n);
  ev(S, src);
  migrate(S, &d, &e, &r, &changed);
  printf("| redefine with 100 instances among %ld rows | %.3f | - |\n", n, d);
  printf("| export the changed entries (%zu) + restore | %.3f | - |\n", changed, e + r);
  jiti_close(S);

  /* checkpoint + defmethod + restore does not grow with the world */
  printf("\n| instances | checkpoint + defmethod + restore (us, CPU) |\n|---:|---:|\n");
  long ns[3] = {100, 10000, n};
  for (int k = 0; k < 3; k++) {
    S = clos_open();
    ev(S, PT);
    snprintf(src, sizeof src, "(defgeneric area (s)) (dotimes (i %ld) (world-put i (make-instance 'pt :x i)))", ns[k]);
    ev(S, src);
    method_rounds(S, 200);   /* warm-up */
    printf("| %ld | %.1f |\n", ns[k], method_rounds(S, 2000));
    jiti_close(S);
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: world_bench [--publish] [--iters N] [--batches N] [--passes N] [--warmup N] [N]\n"
          "  --iters N    rounds per batch (default 2000; a bare N means the same)\n"
          "  --batches N  restore and commit batches per world per pass (default 7)\n"
          "  --passes N   times the three worlds are built and measured (default 3)\n"
          "  --warmup N   rounds before timing starts (default 20000)\n"
          "Prints the median CPU time per round of checkpoint + change + restore and\n"
          "checkpoint + change + commit in worlds of 1e2, 1e4 and 1e6 data rows.\n"
          "  --publish    instead: checkpoint + change + export of the changed entries\n"
          "               + commit, without and with the proof that each imports back\n"
          "               (jiti_entry_verify), as a worker publishes\n"
          "world_bench --clos [N]: CLOS in the world (see the top of bench/world_bench.c).\n");
}

int main(int argc, char **argv) {
  Opts o = {2000, 7, 3, 20000, 0};
  if (argc > 1 && !strcmp(argv[1], "--clos")) {
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : 100000;
    if (n < 100) { usage(stderr); return 2; }
    return clos_main(n);
  }
  for (int i = 1; i < argc; i++) {
    long *dst = NULL;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
    if (!strcmp(argv[i], "--publish")) { o.publish = 1; continue; }
    if (!strcmp(argv[i], "--iters")) dst = &o.iters;
    else if (!strcmp(argv[i], "--batches")) dst = &o.batches;
    else if (!strcmp(argv[i], "--passes")) dst = &o.passes;
    else if (!strcmp(argv[i], "--warmup")) dst = &o.warmup;
    char *end;
    const char *arg = dst ? (i + 1 < argc ? argv[++i] : "") : argv[i];
    long v = strtol(arg, &end, 10);
    if (*arg == 0 || *end || v < 0 || (!dst && v == 0)) { usage(stderr); return 2; }
    *(dst ? dst : &o.iters) = v;
  }
  if (o.iters < 1 || o.batches < 1 || o.passes < 1 || o.batches * o.passes > MAX_SAMPLES) {
    usage(stderr);
    return 2;
  }
  size_t per = (size_t)o.batches * 2;
  double *samples[NSIZES][2];
  for (int k = 0; k < NSIZES; k++)
    for (int m = 0; m < 2; m++) samples[k][m] = malloc(sizeof(double) * o.passes * o.batches);
  for (long p = 0; p < o.passes; p++) {
    for (int k = 0; k < NSIZES; k++) {
      int fds[2];
      if (pipe(fds) != 0) { perror("pipe"); return 1; }
      fflush(stdout);
      pid_t pid = fork();
      if (pid < 0) { perror("fork"); return 1; }
      if (pid == 0) {
        close(fds[0]);
        run_world(sizes[k], &o, fds[1]);
        _exit(0);
      }
      close(fds[1]);
      double t[2 * MAX_SAMPLES];
      size_t got = 0;
      while (got < per * sizeof(double)) {
        ssize_t r = read(fds[0], (char *)t + got, per * sizeof(double) - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
      }
      close(fds[0]);
      int status;
      waitpid(pid, &status, 0);
      if (got != per * sizeof(double) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "world_bench: the %ld-row world failed\n", sizes[k]);
        return 1;
      }
      for (long b = 0; b < o.batches; b++) {
        samples[k][0][p * o.batches + b] = t[2 * b];
        samples[k][1][p * o.batches + b] = t[2 * b + 1];
      }
    }
  }
  size_t n = (size_t)(o.passes * o.batches);
  double med[NSIZES][2], lo[NSIZES][2], hi[NSIZES][2];
  for (int k = 0; k < NSIZES; k++)
    for (int m = 0; m < 2; m++) {
      med[k][m] = median(samples[k][m], n);  /* sorts */
      lo[k][m] = samples[k][m][0];
      hi[k][m] = samples[k][m][n - 1];
    }
  printf("world_bench: %ld rounds per batch, %ld batches x %ld passes per world, warm-up %ld rounds;\n"
         "CPU time per round, median over %zu batches [min, max]\n\n",
         o.iters, o.batches, o.passes, o.warmup, n);
  const char *m0 = o.publish ? "export" : "restore", *m1 = o.publish ? "export + proof" : "commit";
  if (o.publish)
    printf("| data rows | checkpoint + change + export + commit (us) | the same + proof (us) |\n");
  else
    printf("| data rows | checkpoint + change + restore (us) | checkpoint + change + commit (us) |\n");
  printf("|---:|---:|---:|\n");
  for (int k = 0; k < NSIZES; k++)
    printf("| %ld | %.2f [%.2f, %.2f] | %.2f [%.2f, %.2f] |\n", sizes[k], med[k][0], lo[k][0],
           hi[k][0], med[k][1], lo[k][1], hi[k][1]);
  printf("\nratio 1e6/1e2: %s %.2f, %s %.2f (target <= 1.5)\n", m0, med[2][0] / med[0][0], m1,
         med[2][1] / med[0][1]);
  printf("ratio 1e4/1e2: %s %.2f, %s %.2f\n", m0, med[1][0] / med[0][0], m1, med[1][1] / med[0][1]);
  if (o.publish)
    for (int k = 0; k < NSIZES; k++)
      printf("the proof in the %ld-row world: %.2f us a round (%.0f%% of the round)\n", sizes[k],
             med[k][1] - med[k][0], 100 * (med[k][1] - med[k][0]) / med[k][1]);
  return 0;
}
