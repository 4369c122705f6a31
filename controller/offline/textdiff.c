/*
** textdiff.c — a small line-based unified diff (longest common subsequence)
** for `jiti diff`.  Common leading and trailing lines are trimmed first;
** when the remaining middle is too large for the quadratic table, it is
** shown as all removed then all added (still a correct diff).
*/
#include <stdlib.h>
#include <string.h>
#include "offline.h"

typedef struct { const char **p; size_t *n; size_t count; } Lines;

static int split(const char *s, Lines *L) {
  size_t cap = 1;
  for (const char *q = s; *q; q++) cap += *q == '\n';
  L->p = malloc(cap * sizeof *L->p);
  L->n = malloc(cap * sizeof *L->n);
  L->count = 0;
  if (!L->p || !L->n) return 0;
  const char *q = s;
  while (*q) {
    const char *e = strchr(q, '\n');
    size_t n = e ? (size_t)(e - q) : strlen(q);
    L->p[L->count] = q;
    L->n[L->count++] = n;
    q += n + (e ? 1 : 0);
  }
  return 1;
}

static int same(const Lines *a, size_t i, const Lines *b, size_t j) {
  return a->n[i] == b->n[j] && !memcmp(a->p[i], b->p[j], a->n[i]);
}

/* An edit script: one op per line, ' ' keep, '-' remove (from a), '+' add. */
typedef struct { char op; size_t line; } Op;

#define MAX_CELLS ((size_t)16 << 20)
#define CONTEXT 3

void textdiff_unified(FILE *out, const char *label_a, const char *a,
                      const char *label_b, const char *b) {
  if (!strcmp(a, b)) return;
  Lines A = {0}, B = {0};
  Op *ops = NULL;
  uint32_t *t = NULL;
  if (!split(a, &A) || !split(b, &B)) goto done;
  size_t pre = 0, suf = 0;
  while (pre < A.count && pre < B.count && same(&A, pre, &B, pre)) pre++;
  while (suf < A.count - pre && suf < B.count - pre &&
         same(&A, A.count - 1 - suf, &B, B.count - 1 - suf)) suf++;
  size_t n = A.count - pre - suf, m = B.count - pre - suf;
  ops = malloc((A.count + B.count + 1) * sizeof *ops);
  if (!ops) goto done;
  size_t nops = 0;
  for (size_t i = 0; i < pre; i++) ops[nops++] = (Op){' ', i};
  if ((n + 1) * (m + 1) <= MAX_CELLS && (t = malloc((n + 1) * (m + 1) * sizeof *t))) {
    /* t[i][j] = LCS length of A[pre+i..] and B[pre+j..] (middle part) */
#define T(i, j) t[(i) * (m + 1) + (j)]
    for (size_t i = n + 1; i-- > 0;)
      for (size_t j = m + 1; j-- > 0;) {
        if (i == n || j == m) T(i, j) = 0;
        else if (same(&A, pre + i, &B, pre + j)) T(i, j) = T(i + 1, j + 1) + 1;
        else T(i, j) = T(i + 1, j) >= T(i, j + 1) ? T(i + 1, j) : T(i, j + 1);
      }
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && same(&A, pre + i, &B, pre + j)) {
        ops[nops++] = (Op){' ', pre + i}; i++; j++;
      } else if (j == m || (i < n && T(i + 1, j) >= T(i, j + 1))) {
        ops[nops++] = (Op){'-', pre + i}; i++;
      } else {
        ops[nops++] = (Op){'+', pre + j}; j++;
      }
    }
#undef T
  } else {
    for (size_t i = 0; i < n; i++) ops[nops++] = (Op){'-', pre + i};
    for (size_t j = 0; j < m; j++) ops[nops++] = (Op){'+', pre + j};
  }
  for (size_t i = 0; i < suf; i++) ops[nops++] = (Op){' ', A.count - suf + i};

  fprintf(out, "--- %s\n+++ %s\n", label_a, label_b);
  /* Hunks: runs of changes with up to CONTEXT kept lines around them;
  ** changes closer than 2*CONTEXT lines share a hunk. */
  size_t k = 0;
  while (k < nops) {
    while (k < nops && ops[k].op == ' ') k++;
    if (k == nops) break;
    size_t start = k >= CONTEXT ? k - CONTEXT : 0;
    size_t end = k;  /* one past the last change of the hunk */
    for (size_t q = k; q < nops; q++) {
      if (ops[q].op != ' ') end = q + 1;
      else if (q - end >= 2 * CONTEXT) break;
    }
    size_t stop = end + CONTEXT < nops ? end + CONTEXT : nops;
    /* line numbers (1-based) of the hunk in a and b */
    size_t la = 0, lb = 0;  /* lines of a/b before start */
    for (size_t q = 0; q < start; q++) {
      if (ops[q].op != '+') la++;
      if (ops[q].op != '-') lb++;
    }
    size_t ca = 0, cb = 0;
    for (size_t q = start; q < stop; q++) {
      if (ops[q].op != '+') ca++;
      if (ops[q].op != '-') cb++;
    }
    fprintf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ca ? la + 1 : la, ca, cb ? lb + 1 : lb, cb);
    for (size_t q = start; q < stop; q++) {
      const Lines *L = ops[q].op == '+' ? &B : &A;
      fprintf(out, "%c%.*s\n", ops[q].op, (int)L->n[ops[q].line], L->p[ops[q].line]);
    }
    k = stop;
  }
done:
  free(t);
  free(ops);
  free(A.p); free(A.n);
  free(B.p); free(B.n);
}
