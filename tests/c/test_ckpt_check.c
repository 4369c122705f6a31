/* test_ckpt_check.c — the checkpoint consistency check (kernel/ckptcheck.c)
** catches a store that skipped the write barrier: written raw into a cons
** of the world, and made by Lisp code while the barrier is switched off
** (a broken barrier).  Changes that pass the barrier, in nested levels,
** committed or restored, are reported as consistent. */
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"
#include "jt_ckpt.h"
#include "check.h"

static void ok_now(jiti_State *S) {
  char *m = jt_ckpt_check_now(S);
  if (m) fprintf(stderr, "unexpected: %s\n", m);
  CHECK(m == NULL);
  free(m);
}

static jt_V value_of(jiti_State *S, const char *name) {
  return jt_symobj(S, jt_find_symbol(S, name, strlen(name), JT_PKG_USER))->value;
}

int main(void) {
  jiti_State *S = jiti_open();
  CHECK(S != NULL);
  jiti_world_enable(S);
  jt_ckpt_check_enable(S, true, false);
  CHECK_STR(check_eval(S, "(defvar *x* (list 1 2 3))"), "*X*");
  CHECK_STR(check_eval(S, "(defvar *v* (vector 1 2 3))"), "*V*");

  /* changes through the barrier: consistent, at every level, and a
  ** restore brings every object back */
  jiti_checkpoint(S);
  CHECK_STR(check_eval(S, "(progn (setf (car *x*) 10 (aref *v* 0) 20) (world-put :k (list 1)) (defvar *new* 5))"), "*NEW*");
  ok_now(S);
  jiti_checkpoint(S);
  CHECK_STR(check_eval(S, "(progn (setf (cadr *x*) 11) (defun f () 1) (make-package \"P1\") 1)"), "1");
  ok_now(S);
  jiti_restore(S);
  ok_now(S);
  jiti_checkpoint(S);
  CHECK_STR(check_eval(S, "(setf (caddr *x*) 12)"), "12");
  jiti_commit(S);
  ok_now(S);
  jiti_restore(S);
  CHECK_STR(check_eval(S, "(list *x* *v* (boundp '*new*) (find-package \"P1\"))"), "((1 2 3) #(1 2 3) NIL NIL)");

  /* a store written raw, past the barrier: caught, naming the object */
  jiti_checkpoint(S);
  CHECK_STR(check_eval(S, "(setf (car *x*) 7)"), "7");
  ok_now(S);
  jt_V cell = jt_cdr(value_of(S, "*X*"));
  jt_cons_(cell)->car = jt_mkfix(99);    /* the second cons, never saved at this level */
  char *m = jt_ckpt_check_now(S);
  CHECK(m != NULL && strstr(m, "without passing the write barrier") && strstr(m, "(99 3)"));
  free(m);
  jt_cons_(cell)->car = jt_mkfix(2);     /* put back by hand: consistent again */
  ok_now(S);
  jiti_restore(S);

  /* a broken barrier: Lisp code whose stores the barrier does not see (as
  ** if JT_SET forgot the world's half) — every kind of object it changes is
  ** caught */
  static const char *const changes[] = {
    "(setf (cadr *x*) 8)", "(setf (aref *v* 2) 9)", "(setf *x* nil)", "(setf (symbol-plist '*v*) '(:a 1))"};
  for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
    jiti_checkpoint(S);
    int depth = S->ckpt_depth;
    S->ckpt_depth = 0;                  /* the barrier thinks no checkpoint is open */
    check_eval(S, changes[i]);
    S->ckpt_depth = depth;
    m = jt_ckpt_check_now(S);
    CHECK(m != NULL && strstr(m, "without passing the write barrier"));
    free(m);
    jiti_commit(S);   /* keep the change: the next one starts from it */
  }
  CHECK_STR(check_eval(S, "(list *x* *v* (symbol-plist '*v*))"), "(NIL #(1 2 9) (:A 1))");

  /* off: nothing is checked */
  jt_ckpt_check_enable(S, false, false);
  jiti_checkpoint(S);
  jt_vec_(value_of(S, "*V*"))->items[0] = jt_mkfix(5);
  CHECK(jt_ckpt_check_now(S) == NULL);
  jiti_restore(S);
  jiti_close(S);
  return CHECK_DONE();
}
