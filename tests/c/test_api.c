/* test_api.c — the embedding API: lifecycle, independent states, eval,
** C primitives, statuses, and collection during nested evaluation. */
#include <stdlib.h>
#include "jiti.h"
#include "check.h"


static jiti_Value c_add3(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud;
  int64_t a, b, c;
  if (!jiti_tointeger(S, argv[0], &a) || !jiti_tointeger(S, argv[1], &b) ||
      !jiti_tointeger(S, argv[2], &c))
    jiti_error(S, "add3: integers expected");
  return jiti_integer(S, a + b + c);
}

/* A primitive that evaluates Lisp from inside a call: nested evaluation
** with a collection at every allocation must keep the outer values alive. */
static jiti_Value c_nested(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud;
  jiti_Result r;
  const char *src = "(let ((l nil)) (dotimes (i 200) (push (make-string 10) l)) (length l))";
  jiti_eval_string(S, src, strlen(src), &r);
  jiti_Value v = jiti_string(S, r.value ? r.value : "?", r.value ? strlen(r.value) : 1);
  jiti_result_free(&r);
  return v;
}

static jiti_Value c_greet(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud;
  char name[64];
  if (jiti_tostring(S, argv[0], name, sizeof name) < 0) jiti_error(S, "greet: a string expected");
  char buf[128];
  snprintf(buf, sizeof buf, "hello, %s", name);
  return jiti_string(S, buf, strlen(buf));
}

/* A host's per-state data, reached through the user data: two states in
** one process each count their own calls, and one state's function never
** sees the other's data (a global in the host would be overwritten). */
typedef struct Tally { const char *who; int64_t calls; } Tally;

static jiti_Value c_tally(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  Tally *t = ud;
  int64_t by = 1;
  if (argc > 0 && !jiti_tointeger(S, argv[0], &by)) jiti_error(S, "tally: an integer is required");
  t->calls += by;
  char buf[64];
  snprintf(buf, sizeof buf, "%s:%lld", t->who, (long long)t->calls);
  return jiti_string(S, buf, strlen(buf));
}

static void two_states_user_data(void) {
  jiti_State *A = jiti_open(), *B = jiti_open();
  CHECK(A != NULL && B != NULL);
  Tally ta = {"a", 0}, tb = {"b", 100};
  CHECK(jiti_register(A, "tally", c_tally, &ta, 0, 1, "(tally &optional by)") == JITI_OK);
  CHECK(jiti_register(B, "tally", c_tally, &tb, 0, 1, "(tally &optional by)") == JITI_OK);
  /* interleaved calls: each state's function gets its own data */
  CHECK_STR(check_eval(A, "(tally)"), "\"a:1\"");
  CHECK_STR(check_eval(B, "(tally)"), "\"b:101\"");
  CHECK_STR(check_eval(A, "(tally 5)"), "\"a:6\"");
  CHECK_STR(check_eval(B, "(progn (tally) (tally))"), "\"b:103\"");
  CHECK(ta.calls == 6 && tb.calls == 103);
  /* called from Lisp through funcall and mapcar, as any function */
  CHECK_STR(check_eval(A, "(mapcar #'tally '(1 1))"), "(\"a:7\" \"a:8\")");
  /* registered again with other data: the new definition has it */
  Tally tc = {"c", 0};
  CHECK(jiti_register(A, "tally", c_tally, &tc, 0, 1, "(tally &optional by)") == JITI_OK);
  CHECK_STR(check_eval(A, "(funcall 'tally)"), "\"c:1\"");
  CHECK(ta.calls == 8 && tb.calls == 103);
  /* its errors and argument counts are as any primitive's */
  CHECK_STR(check_eval(B, "(tally :x)"), "!SIMPLE-ERROR");
  CHECK_STR(check_eval(B, "(tally 1 2)"), "!PROGRAM-ERROR");
  CHECK(tb.calls == 103);
  CHECK(jiti_register(B, "tally", NULL, &tb, 0, 1, NULL) == JITI_BADARG);
  jiti_close(A);
  jiti_close(B);
}

int main(void) {
  two_states_user_data();
  jiti_State *A = jiti_open(), *B = jiti_open();
  CHECK(A != NULL && B != NULL);

  /* two states are independent */
  CHECK_STR(check_eval(A, "(defvar *who* :a)"), "*WHO*");
  CHECK_STR(check_eval(B, "(defvar *who* :b)"), "*WHO*");
  CHECK_STR(check_eval(A, "*who*"), ":A");
  CHECK_STR(check_eval(B, "*who*"), ":B");
  CHECK_STR(check_eval(A, "(defun f (x) (* x 2))"), "F");
  CHECK_STR(check_eval(B, "(fboundp 'f)"), "NIL");
  CHECK_STR(check_eval(A, "(f 21)"), "42");

  /* statuses */
  jiti_Result r;
  CHECK(jiti_eval_string(A, "(car 1)", 7, &r) == JITI_ERROR);
  CHECK_STR(r.condition_type, "TYPE-ERROR");
  CHECK(r.message && strstr(r.message, "is not of type LIST") != NULL);
  jiti_result_free(&r);
  CHECK(jiti_eval_string(A, "(1 2", 4, &r) == JITI_READ_ERROR);
  jiti_result_free(&r);
  CHECK(jiti_eval_string(A, "#.(+ 1 2)", 9, &r) == JITI_READ_ERROR);
  jiti_result_free(&r);
  /* the status does not depend on asking for the result */
  CHECK(jiti_eval_string(A, "(1 2", 4, NULL) == JITI_READ_ERROR);
  CHECK(jiti_eval_string(A, "(car 1)", 7, NULL) == JITI_ERROR);
  CHECK(jiti_eval_string(A, "(+ 1 1)", 7, NULL) == JITI_OK);
  CHECK_STR(check_eval(A, "(no-such-function 1)"), "!UNDEFINED-FUNCTION");
  CHECK_STR(check_eval(A, "no-such-variable"), "!UNBOUND-VARIABLE");
  CHECK_STR(check_eval(A, "(f 1 2)"), "!PROGRAM-ERROR");
  CHECK_STR(check_eval(A, "(/ 1 0)"), "!DIVISION-BY-ZERO");
  /* the state is still usable after every error */
  CHECK_STR(check_eval(A, "(f 5)"), "10");

  /* C primitives */
  CHECK(jiti_register(A, "add3", c_add3, NULL, 3, 3, "(add3 a b c) Sum of three integers.") == JITI_OK);
  CHECK(jiti_register(A, "greet", c_greet, NULL, 1, 1, "(greet name)") == JITI_OK);
  CHECK(jiti_register(A, "car", c_add3, NULL, 1, 1, "no") == JITI_BADARG);  /* locked built-in */
  CHECK(jiti_register(A, "bad", c_add3, NULL, 3, 1, "no") == JITI_BADARG);
  CHECK_STR(check_eval(A, "(add3 1 2 3)"), "6");
  CHECK_STR(check_eval(A, "(add3 1 2)"), "!PROGRAM-ERROR");
  CHECK_STR(check_eval(A, "(add3 1 2 \"x\")"), "!SIMPLE-ERROR");
  CHECK_STR(check_eval(A, "(greet \"world\")"), "\"hello, world\"");
  CHECK_STR(check_eval(A, "(car 1)"), "!TYPE-ERROR");
  CHECK_STR(check_eval(A, "(mapcar (lambda (x) (add3 x x x)) '(1 2 3))"), "(3 6 9)");

  /* jiti_call */
  const char *args[] = {"20", "(1 2)"};
  CHECK(jiti_call(A, "f", 1, args, &r) == JITI_OK);
  CHECK_STR(r.value, "40");
  jiti_result_free(&r);
  CHECK(jiti_call(A, "length", 1, args + 1, &r) == JITI_OK);
  CHECK_STR(r.value, "2");
  jiti_result_free(&r);
  CHECK(jiti_call(A, "nope", 0, NULL, &r) == JITI_ERROR);
  jiti_result_free(&r);

  /* collection at every allocation during nested evaluation */
  jiti_set_gc_stress(A, 1);
  CHECK(jiti_register(A, "nested", c_nested, NULL, 0, 0, "(nested)") == JITI_OK);
  CHECK_STR(check_eval(A, "(let ((x (list 1 2 3))) (list (nested) x (nested)))"), "(\"200\" (1 2 3) \"200\")");
  CHECK_STR(check_eval(A, "(let ((h (make-hash-table :test 'equal))) "
                  "(dotimes (i 50) (setf (gethash (format nil \"k~d\" i) h) (list i))) "
                  "(gethash \"k42\" h))"), "(42)");
  jiti_set_gc_stress(A, 0);

  /* printing a value bounded */
  CHECK_STR(check_eval(A, "(defparameter *l* (make-list 100000 :initial-element 7))"), "*L*");

  jiti_close(A);
  jiti_close(B);
  return CHECK_DONE();
}
