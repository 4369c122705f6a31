/*
** sinspect.c — SLIME's inspector.  The world hands no object to a
** client, so an inspected value is kept as the expression that makes it:
** the one the editor typed, then (second (nth I (PARTS E))) for its part
** I.  Each view evaluates its expression again as a read-only call: an
** expression with side effects has them again, and a part of a value the
** world has since changed shows the value as it is now.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "swank_int.h"

#define PARTS_MAX 200
#define EXPR_MAX 12000  /* bytes of an expression: the gate refuses a source past 16 KiB */

/* PARTS: a value's parts as (label value) pairs. */
#define PARTS_FN                                                                                          \
  "(lambda (v)"                                                                                           \
  " (let ((r nil) (i 0))"                                                                                 \
  "  (cond ((and (consp v) (null (cdr (last v))))"                                                        \
  "         (dolist (e v) (when (< i 200) (push (list (format nil \"~D\" i) e) r)) (incf i)))"           \
  "        ((consp v) (push (list \"car\" (car v)) r) (push (list \"cdr\" (cdr v)) r))"                   \
  "        ((and (vectorp v) (not (stringp v)))"                                                          \
  "         (dotimes (k (min 200 (length v))) (push (list (format nil \"~D\" k) (aref v k)) r)))"        \
  "        ((hash-table-p v)"                                                                             \
  "         (maphash (lambda (k x) (when (< i 200) (push (list (prin1-to-string k) x) r)) (incf i)) v))" \
  "        ((symbolp v)"                                                                                  \
  "         (push (list \"name\" (symbol-name v)) r) (push (list \"package\" (symbol-package v)) r)"      \
  "         (when (boundp v) (push (list \"value\" (symbol-value v)) r))))"                               \
  "  (nreverse r)))"

static void push_expr(Swank *S, char *e) {
  if (S->ninsp > SWANK_INSPECT_DEPTH) {  /* the oldest goes: its expression would only grow */
    free(S->insp[0]);
    memmove(S->insp, S->insp + 1, (size_t)(S->ninsp - 1) * sizeof *S->insp);
    S->ninsp--;
  }
  S->insp[S->ninsp++] = e;
}

/* Show the innermost expression: (:title T :id N :content (ITEMS LEN 0 LEN)),
** or its content alone. */
static int show_view(Swank *S, const sx *pkg, sxw *out, int content_only) {
  if (!S->ninsp) {
    sxw_sym(out, "nil");
    return RPC_OK;
  }
  char *src = NULL;
  if (asprintf(&src,
               "(let ((v %s\n)) (list (prin1-to-string v) (prin1-to-string (type-of v))"
               " (mapcar (lambda (p) (list (first p) (prin1-to-string (second p)))) (funcall (function " PARTS_FN
               ") v))))",
               S->insp[S->ninsp - 1]) < 0) {
    swank_set_abort(S, "out of memory");
    return RPC_ABORT;
  }
  sx *r = skernel_helper(S, src, skernel_package(pkg));
  free(src);
  if (!r || r->type != SX_LIST || r->len < 3) {
    sx_free(r);
    free(S->insp[--S->ninsp]);
    swank_set_abort(S, "it could not be inspected: the evaluation failed (is the world paused, or the form wrong?)");
    return RPC_ABORT;
  }
  sx *parts = sx_at(r, 2);
  if (!content_only) {
    sxw_open(out);
    sxw_sym(out, ":title"), sxw_str(out, sx_str(sx_at(r, 0)));
    sxw_sym(out, ":id"), sxw_int(out, S->ninsp - 1);
    sxw_sym(out, ":content");
  }
  sxw_open(out), sxw_open(out);
  sxw_str(out, "Type: "), sxw_str(out, sx_str(sx_at(r, 1))), sxw_str(out, "\n");
  size_t n = 0;
  for (size_t i = 0; parts && parts->type == SX_LIST && i < parts->len && i < PARTS_MAX; i++, n++) {
    char label[300];
    snprintf(label, sizeof label, "%s: ", sx_str(sx_at(parts->items[i], 0)) ? sx_str(sx_at(parts->items[i], 0)) : "?");
    sxw_str(out, label);
    sxw_open(out), sxw_sym(out, ":value"), sxw_str(out, sx_str(sx_at(parts->items[i], 1))), sxw_int(out, (int64_t)i);
    sxw_close(out);
    sxw_str(out, "\n");
  }
  size_t items = 3 + 3 * n;
  sxw_close(out), sxw_int(out, (int64_t)items), sxw_int(out, 0), sxw_int(out, (int64_t)items), sxw_close(out);
  if (!content_only) sxw_close(out);
  sx_free(r);
  return RPC_OK;
}

int sinspect_init(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *src = sx_str(sx_at(f, 1));
  if (!src) {
    swank_set_abort(S, "expected a form to inspect");
    return RPC_ABORT;
  }
  while (S->ninsp) free(S->insp[--S->ninsp]);
  char *e = strdup(src);
  if (!e) return RPC_ABORT;
  push_expr(S, e);
  return show_view(S, pkg, out, 0);
}

int sinspect_part(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  sx *n = sx_at(f, 1);
  if (!S->ninsp || !n || n->type != SX_INT || n->num < 0 || n->num >= PARTS_MAX) {
    swank_set_abort(S, "no such part");
    return RPC_ABORT;
  }
  char *e = NULL;
  if (asprintf(&e, "(second (nth %lld (funcall (function " PARTS_FN ") %s\n)))", (long long)n->num,
               S->insp[S->ninsp - 1]) < 0)
    return RPC_ABORT;
  if (strlen(e) > EXPR_MAX) {
    free(e);
    swank_set_abort(S, "this part is too deep to inspect from here: inspect an expression that makes it instead");
    return RPC_ABORT;
  }
  push_expr(S, e);
  return show_view(S, pkg, out, 0);
}

int sinspect_pop(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)id;
  if (S->ninsp <= 1) {
    sxw_sym(out, "nil");
    return RPC_OK;
  }
  free(S->insp[--S->ninsp]);
  return show_view(S, pkg, out, 0);
}

int sinspect_reinspect(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)id;
  return show_view(S, pkg, out, 0);
}

int sinspect_range(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)id;
  return show_view(S, pkg, out, 1);  /* one view holds all of it: any range is the whole */
}

int sinspect_quit(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)pkg, (void)id;
  while (S->ninsp) free(S->insp[--S->ninsp]);
  sxw_sym(out, "nil");
  return RPC_OK;
}
