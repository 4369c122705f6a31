/* test_census.c — %FORM-CENSUS (kernel/census.c), the walk of a host's form
** gate: each finding, in the order of the walk, on forms built at run time
** (shared and circular structure the reader would refuse to make), the
** part limit, argument errors, and a deep form (no recursion on the C
** stack).  It is callable only from kernel-mode code (a host's library). */
#include <stdlib.h>
#include "jiti.h"
#include "check.h"

static const char *lib =
  "(defun %census (form &optional (limit 1000) names subs) (%form-census form limit names subs))\n"
  "(defun %shared-list () (%census (let ((x (list 1 2))) (list x x))))\n"
  "(defun %circular () (%census (let ((x (list 1 2))) (setf (cdr (cdr x)) x) x)))\n"
  "(defun %shared-vector () (%census (let ((s (copy-seq \"s\"))) (vector 1 s s))))\n"
  "(defun %with-internal () (%census (list 'a (list 'b '%helper))))\n"
  "(defun %deep (n) (%census (let ((x nil)) (dotimes (i n) (setq x (list x))) x) 1000000))\n";

/* Call fn with args (each read, not evaluated: data). */
static const char *call(jiti_State *S, const char *fn, int argc, const char *const *args) {
  static char buf[4096];
  jiti_Result r;
  jiti_Status st = jiti_call(S, fn, argc, args, &r);
  if (st == JITI_OK) snprintf(buf, sizeof buf, "%s", r.value);
  else snprintf(buf, sizeof buf, "!%s", r.condition_type ? r.condition_type : "?");
  jiti_result_free(&r);
  return buf;
}

int main(void) {
  jiti_State *S = jiti_open();
  jiti_Result r;
  CHECK(jiti_load_library(S, lib, strlen(lib), &r) == JITI_OK);
  jiti_result_free(&r);
  const char *a1[] = {"(defun f (x) (list x \"str\" #(1 2) 'y))"};
  CHECK_STR(call(S, "%CENSUS", 1, a1), "NIL");
  /* the same symbol, string contents or number twice is no sharing */
  const char *a2[] = {"(a a \"s\" \"s\" 1 1)"};
  CHECK_STR(call(S, "%CENSUS", 1, a2), "NIL");
  CHECK_STR(call(S, "%SHARED-LIST", 0, NULL), "(:SHARED (1 2))");
  CHECK(strncmp(call(S, "%CIRCULAR", 0, NULL), "(:SHARED", 8) == 0);
  CHECK_STR(call(S, "%SHARED-VECTOR", 0, NULL), "(:SHARED \"s\")");
  CHECK(strstr(call(S, "%WITH-INTERNAL", 0, NULL), ":INTERNAL") != NULL);
  /* names and substrings are the host's */
  const char *a7[] = {"(catch 'x (throw 'x 1))", "1000", "(\"THROW\")", "nil"};
  CHECK_STR(call(S, "%CENSUS", 4, a7), "(:SYMBOL THROW)");
  const char *a8[] = {"(format nil \"a ~/b/ c\" 1)", "1000", "nil", "(\"~/\")"};
  CHECK_STR(call(S, "%CENSUS", 4, a8), "(:SUBSTRING \"a ~/b/ c\")");
  const char *a9[] = {"(format nil \"a ~/b/ c\" 1)", "1000", "nil", "nil"};
  CHECK_STR(call(S, "%CENSUS", 4, a9), "NIL");
  /* the first finding in the walk's order: car before cdr */
  const char *a10[] = {"(throw \"~/\")", "1000", "(\"THROW\")", "(\"~/\")"};
  CHECK_STR(call(S, "%CENSUS", 4, a10), "(:SYMBOL THROW)");
  const char *a11[] = {"(\"~/\" throw)", "1000", "(\"THROW\")", "(\"~/\")"};
  CHECK_STR(call(S, "%CENSUS", 4, a11), "(:SUBSTRING \"~/\")");
  /* the limit counts every part visited (conses, atoms, NIL ends) */
  const char *a12[] = {"(a b c)", "7"};
  CHECK_STR(call(S, "%CENSUS", 2, a12), "NIL");
  const char *a13[] = {"(a b c)", "6"};
  CHECK_STR(call(S, "%CENSUS", 2, a13), "(:TOO-LARGE 6)");
  /* a deep form: no C recursion */
  const char *a14[] = {"200000"};
  CHECK_STR(call(S, "%DEEP", 1, a14), "NIL");
  const char *a15[] = {"x", "-1"};
  CHECK_STR(call(S, "%CENSUS", 2, a15), "!TYPE-ERROR");
  /* user code cannot name it */
  jiti_Status st = jiti_eval_string(S, "(%form-census 1 2 nil nil)", 26, &r);
  CHECK(st != JITI_OK);
  jiti_result_free(&r);
  jiti_close(S);
  return CHECK_DONE();
}
