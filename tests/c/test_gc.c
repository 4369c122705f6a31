/* test_gc.c — the generational collector: old objects (promoted between
** host calls) given young values through every kind of store, then enough
** allocation for several young collections, then the values read back.
** A store that missed the write barrier loses its value here (under ASan
** and the GC-stress mode: a use-after-free report). */
#include <stdbool.h>
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

/* The GC-stress mode collects at every allocation and promotes at every
** host call already: the loops below shrink so that it finishes. */
static bool stress;
static char churn_src[200], garbage_src[100], many_src[400], many_check[400];

/* About 1.3 MB of garbage per call, in calls of their own: each call starts
** at a safepoint, so the young generation is collected and promoted between
** them. */
static void churn(jiti_State *S) {
  for (int i = 0; i < (stress ? 1 : 8); i++)
    CHECK(check_eval(S, churn_src)[0] != '!');
}

static const char *OLD =
  "(defvar *cons* (list 1 2 3))"
  "(defvar *vec* (make-array 4 :initial-element 0))"
  "(defvar *adj* (make-array 2 :adjustable t :fill-pointer 0))"
  "(defvar *hash* (make-hash-table :test 'equal))"
  "(defvar *big* (let ((h (make-hash-table))) (dotimes (i 5000 h) (setf (gethash i h) i))))"
  "(defstruct box content)"
  "(defvar *box* (make-box))"
  "(defvar *sym* nil)"
  "(defvar *out* (make-string-output-stream))"
  "(let ((kept nil)) (defun keep (x) (push x kept) x) (defun kept () kept))"
  "(defvar *tail* (list :a))";

static const char *const STORES[] = {
  "(setf (car *cons*) (list :car 1))",
  "(setf (cdr (last *cons*)) (list :end))",
  "(setf (aref *vec* 2) (list :vec 2))",
  "(vector-push-extend (list :adj 0) *adj*)",
  "(dotimes (i 10) (vector-push-extend (format nil \"adj~d\" i) *adj*))",
  "(setf (gethash \"new\" *hash*) (list :hash 1))",
  "(setf (gethash 7 *big*) (list :big 7))",
  "(setf (gethash 9000 *big*) (list :big 9000))",
  "(setf (box-content *box*) (copy-seq \"boxed\"))",
  "(setq *sym* (list :sym))",
  "(setf (get '*sym* 'prop) (list :prop))",
  "(write-string (make-string 300 :initial-element #\\x) *out*)",
  "(keep (list :closure 1))",
  "(nconc *tail* (list :b (list :c)))",
  "(world-put 1 (list :row 1))",
  NULL};

static const char *READ_BACK =
  "(list (car *cons*) (last *cons*) (aref *vec* 2) (aref *adj* 0) (aref *adj* 10)"
  " (gethash \"new\" *hash*) (gethash 7 *big*) (gethash 9000 *big*) (hash-table-count *big*)"
  " (box-content *box*) *sym* (get '*sym* 'prop) (length (get-output-stream-string *out*))"
  " (kept) *tail* (world-get 1))";

static const char *EXPECTED =
  "((:CAR 1) (:END) (:VEC 2) (:ADJ 0) \"adj9\" (:HASH 1) (:BIG 7) (:BIG 9000) 5001 \"boxed\""
  " (:SYM) (:PROP) 300 ((:CLOSURE 1)) (:A :B (:C)) (:ROW 1))";

/* Old objects changed by each kind of store, read back after young
** collections. */
static void test_stores(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(check_eval(S, OLD), "*TAIL*");
  churn(S);  /* everything above is old now */
  char all[4096] = "(progn ";
  for (int i = 0; STORES[i]; i++) strcat(all, STORES[i]);
  strcat(all, " t)");
  CHECK_STR(check_eval(S, all), "T");
  churn(S);
  CHECK_STR(check_eval(S, READ_BACK), EXPECTED);
  /* the same stores one call at a time, each followed by collections */
  jiti_close(S);
  S = jiti_open();
  jiti_world_enable(S);
  check_eval(S, OLD);
  churn(S);
  for (int i = 0; STORES[i]; i++) {
    CHECK(check_eval(S, STORES[i])[0] != '!');
    check_eval(S, garbage_src);
  }
  churn(S);
  CHECK_STR(check_eval(S, READ_BACK), EXPECTED);
  jiti_close(S);
}

/* A checkpoint restores old objects to contents that young collections
** must keep; a commit keeps the new ones. */
static void test_checkpoints(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  check_eval(S, "(defvar *v* (make-array 3 :initial-element (list :orig)))"
                "(defvar *h* (make-hash-table))"
                "(setf (gethash 1 *h*) (list :orig))");
  for (int i = 0; i < 100; i++) check_eval(S, "(world-put (list :k (random 1000)) (list :v (random 1000)))");
  check_eval(S, "(world-put :fixed (list :orig))");
  churn(S);
  jiti_checkpoint(S);
  CHECK_STR(check_eval(S, "(progn (setf (aref *v* 1) (list :new)) (setf (gethash 1 *h*) (list :new))"
                          " (world-put :fixed (list :new)) (world-put :added (list :added)) t)"), "T");
  churn(S);
  jiti_restore(S);
  churn(S);
  CHECK_STR(check_eval(S, "(list (aref *v* 1) (gethash 1 *h*) (world-get :fixed) (world-get :added))"),
            "((:ORIG) (:ORIG) (:ORIG) NIL)");
  jiti_checkpoint(S);
  check_eval(S, "(progn (setf (aref *v* 1) (list :new)) (setf (gethash 1 *h*) (list :new))"
                " (world-put :fixed (list :new)) t)");
  jiti_checkpoint(S);  /* nested: committed into the outer level */
  check_eval(S, "(progn (setf (aref *v* 2) (list :inner)) (world-put :inner (list :inner)) t)");
  churn(S);
  jiti_commit(S);
  churn(S);
  jiti_commit(S);
  churn(S);
  CHECK_STR(check_eval(S, "(list (aref *v* 1) (aref *v* 2) (gethash 1 *h*) (world-get :fixed) (world-get :inner))"),
            "((:NEW) (:INNER) (:NEW) (:NEW) (:INNER))");
  jiti_close(S);
}

/* Many rows changed in one call, more than the collector remembers one by
** one: it falls back to rescanning the tables whole. */
static void test_many_slots(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  check_eval(S, "(dotimes (i 1000) (world-put i 0))");
  check_eval(S, stress ? "(defvar *vec* (make-array 300 :initial-element 0))"
                       : "(defvar *vec* (make-array 100000 :initial-element 0))");
  churn(S);
  CHECK_STR(check_eval(S, many_src), "T");
  churn(S);
  CHECK_STR(check_eval(S, many_check), "T");
  jiti_close(S);
}

int main(void) {
  const char *env = getenv("JITI_GC_STRESS");
  stress = env && env[0] && env[0] != '0';
  int n = stress ? 300 : 100000, rows = stress ? 30 : 1000;
  snprintf(churn_src, sizeof churn_src, "(let ((n 0)) (dotimes (i %d) (incf n (length (list i i)))) n)",
           stress ? 20 : 20000);
  snprintf(garbage_src, sizeof garbage_src, "(dotimes (i %d) (list i i))", stress ? 20 : 30000);
  snprintf(many_src, sizeof many_src,
           "(progn (dotimes (i %d) (setf (aref *vec* i) (list i))) (dotimes (i %d) (world-put i (list i))) t)",
           n, rows);
  snprintf(many_check, sizeof many_check,
           "(let ((ok t)) (dotimes (i %d) (unless (equal (aref *vec* i) (list i)) (setq ok nil)))"
           " (dotimes (i %d) (unless (equal (world-get i) (list i)) (setq ok nil))) ok)", n, rows);
  test_stores();
  test_checkpoints();
  test_many_slots();
  return CHECK_DONE();
}
