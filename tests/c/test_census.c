/* test_census.c — %FORM-CENSUS (kernel/census.c), the walk of a host's form
** gate: each finding, in the order of the walk, on forms built at run time
** (shared and circular structure the reader would refuse to make), the
** part limit, argument errors, and a deep form (no recursion on the C
** stack).  It is callable only from kernel-mode code (a host's library).
** Then the same walk through the embedding API: jiti_form_read's verdicts,
** jiti_form_eval of the form it holds, and their errors. */
#include <stdlib.h>
#include <string.h>
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

static const char *const form_symbols[] = {"THROW"};
static const char *const form_substrings[] = {"~/", "\xc3\xa9t\xc3\xa9"};
static const jiti_FormPolicy form_policy = {1000, form_symbols, 1, form_substrings, 2};

/* jiti_form_read's verdict for src, or -1 - status when it fails. */
static int verdict(jiti_State *S, const char *src) {
  jiti_FormVerdict v = JITI_FORM_CLEAN;
  jiti_Result r;
  jiti_Status st = jiti_form_read(S, src, strlen(src), &form_policy, NULL, &v, &r);
  jiti_result_free(&r);
  return st == JITI_OK ? (int)v : -1 - (int)st;
}

/* Evaluate the held form: its printed value, or "!TYPE". */
static const char *eval_held(jiti_State *S) {
  static char buf[256];
  jiti_Result r;
  jiti_Status st = jiti_form_eval(S, NULL, &r);
  if (st == JITI_OK) snprintf(buf, sizeof buf, "%s", r.value);
  else snprintf(buf, sizeof buf, "!%s", st == JITI_BADARG ? "BADARG" : r.condition_type ? r.condition_type : "?");
  jiti_result_free(&r);
  return buf;
}

static void form_api(void) {
  jiti_State *S = jiti_open();
  CHECK(verdict(S, "  (+ 1 2) ; done\n #| and |# ") == JITI_FORM_CLEAN);
  CHECK_STR(eval_held(S), "3");
  CHECK_STR(eval_held(S), "!BADARG");  /* evaluated once: let go */
  CHECK(verdict(S, "  ; nothing\n") == JITI_FORM_EMPTY);
  CHECK_STR(eval_held(S), "!BADARG");
  CHECK(verdict(S, "(+ 1 2) (+ 3 4)") == JITI_FORM_TRAILING);
  CHECK(verdict(S, "(+ 1 2) )") == JITI_FORM_TRAILING);  /* what follows does not read */
  CHECK(verdict(S, "(+ 1 2) (") == JITI_FORM_TRAILING);
  CHECK(verdict(S, "(+ 1") == -1 - JITI_READ_ERROR);
  CHECK_STR(eval_held(S), "!BADARG");  /* nothing held after a failed read */
  CHECK(verdict(S, "(catch 'x (throw 'x 1))") == JITI_FORM_SYMBOL);
  CHECK(verdict(S, "(format nil \"a ~/b/\")") == JITI_FORM_SUBSTRING);
  CHECK(verdict(S, "(list \"l'\xc3\xa9t\xc3\xa9\")") == JITI_FORM_SUBSTRING);
  CHECK(verdict(S, "(list \"l'\xc3\xa9te\")") == JITI_FORM_CLEAN);
  CHECK(verdict(S, "(list \"e\")") == JITI_FORM_CLEAN);
  /* trailing text is found before the walk's findings */
  CHECK(verdict(S, "(throw 'x 1) 2") == JITI_FORM_TRAILING);
  /* a form of 64+ parts leaves the walk's room on the C stack */
  char big[4096] = "(list";
  for (int i = 0; i < 300; i++) strcat(big, " \"s\"");
  strcat(big, ")");
  CHECK(verdict(S, big) == JITI_FORM_CLEAN);
  CHECK(strncmp(eval_held(S), "(\"s\" \"s\" ", 9) == 0);
  /* the part limit */
  char wide[8192] = "(list";
  for (int i = 0; i < 600; i++) strcat(wide, " 1");
  strcat(wide, ")");
  CHECK(verdict(S, wide) == JITI_FORM_TOO_LARGE);
  /* the held form survives collections and is what runs: its symbols were
  ** interned by the read, its literals are the read's objects */
  CHECK(verdict(S, "(let ((acc nil)) (dotimes (i 2000) (push (make-string 100) acc)) (length acc))") == JITI_FORM_CLEAN);
  CHECK_STR(check_eval(S, "(length (let ((l nil)) (dotimes (i 20000) (push (list i) l)) l))"), "20000");
  CHECK_STR(eval_held(S), "2000");
  /* a limit on the evaluation */
  CHECK(verdict(S, "(loop)") == JITI_FORM_CLEAN);
  jiti_Limits lim = {.fuel = 10000};
  jiti_Result r;
  CHECK(jiti_form_eval(S, &lim, &r) == JITI_LIMIT);
  jiti_result_free(&r);
  /* dropped */
  CHECK(verdict(S, "(+ 1 2)") == JITI_FORM_CLEAN);
  jiti_form_drop(S);
  CHECK_STR(eval_held(S), "!BADARG");
  jiti_close(S);
}

int main(void) {
  form_api();
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
  /* a deep form: no C recursion (under GC stress, where building it costs a
  ** collection per cons, deep enough for the walk but not the C stack) */
#ifdef JITI_GC_STRESS_DEFAULT
  const char *a14[] = {"20000"};
#else
  const char *a14[] = {"200000"};
#endif
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
