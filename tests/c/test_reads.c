/* test_reads.c — jiti_reads_*: what a call read of the world's state (the
** evidence of a failing call).  Between begin and end, the world's global
** variables, the slots of instances (slot-value, accessors, with-slots) and
** of structures, and data rows read by world-get are recorded, each once,
** with the value seen first; the standard's variables, locals and a
** host's own globals are not; past JITI_READS_MAX reads are counted; a
** printing method that reads slots itself adds nothing; nothing is
** recorded outside begin/end; a collection in between keeps the values. */
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

/* The reads described as "kind name[ of object] = value; ..." */
static const char *described(jiti_State *S) {
  static char buf[16384];
  jiti_Read *r;
  int more, n = jiti_reads_describe(S, &r, &more);
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < n && at < sizeof buf; i++)
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s %s%s%s = %s", i ? "; " : "",
                           jiti_read_kind_name(r[i].kind), r[i].name, r[i].object ? " of " : "",
                           r[i].object ? r[i].object : "", r[i].value);
  if (more && at < sizeof buf) snprintf(buf + at, sizeof buf - at, " (+%d)", more);
  jiti_reads_free(r, n);
  return buf;
}

/* Evaluate src recording its reads; their description. */
static const char *reads_of(jiti_State *S, const char *src) {
  jiti_reads_begin(S);
  check_eval(S, src);
  static char buf[16384];
  snprintf(buf, sizeof buf, "%s", described(S));
  jiti_reads_end(S);
  return buf;
}

int main(void) {
  jiti_State *S = jiti_open();
  CHECK_STR(check_eval(S, "(defvar *host-only* 1)"), "*HOST-ONLY*");   /* before the world records */
  jiti_world_enable(S);
  CHECK_STR(check_eval(S, "(defvar *rate* 5)"), "*RATE*");
  CHECK_STR(check_eval(S, "(defclass acct () ((balance :initarg :balance :accessor balance) (owner :initform \"ann\")))"),
            "#<STANDARD-CLASS ACCT>");
  CHECK_STR(check_eval(S, "(defvar *a* (make-instance 'acct :balance 10))"), "*A*");
  CHECK_STR(check_eval(S, "(defstruct pt x y)"), "PT");
  CHECK_STR(check_eval(S, "(defvar *p* (make-pt :x 3 :y 4))"), "*P*");
  CHECK_STR(check_eval(S, "(world-put :orders '(1 2))"), "(1 2)");
  CHECK_STR(check_eval(S, "(defun fee (x) (* x *rate*))"), "FEE");

  /* nothing is recorded unless asked */
  check_eval(S, "(fee 2)");
  CHECK_STR(described(S), "");

  /* a global the world defines, once, with the value read; locals and the
  ** standard's variables are not the world's state */
  CHECK_STR(reads_of(S, "(let ((y 2)) (+ (fee y) (fee 3) *print-base* (symbol-value '*rate*)))"),
            "variable *RATE* = 5");
  CHECK_STR(reads_of(S, "*host-only*"), "");
  /* slots through an accessor (the reader's fast path), slot-value and with-slots */
  const char *t = reads_of(S, "(list (balance *a*) (slot-value *a* 'owner) (with-slots (balance) *a* balance))");
  CHECK(strstr(t, "variable *A* = #<ACCT") == t);
  CHECK(strstr(t, "; slot BALANCE of #<ACCT ") != NULL && strstr(t, "> = 10") != NULL);
  CHECK(strstr(t, "; slot OWNER of #<ACCT ") != NULL && strstr(t, "> = \"ann\"") != NULL);
  CHECK(strstr(strstr(t, "slot BALANCE") + 1, "slot BALANCE") == NULL);   /* once */
  /* a structure's slots through its accessors */
  t = reads_of(S, "(+ (pt-x *p*) (pt-y *p*) (pt-x *p*))");
  CHECK(strstr(t, "slot X of #S(PT :X 3 :Y 4) = 3; slot Y of #S(PT :X 3 :Y 4) = 4") != NULL);
  /* a data row, and the value first seen even when the call changes it after */
  CHECK_STR(reads_of(S, "(progn (world-get :orders) (world-get :missing) (world-get :orders))"),
            "row :ORDERS = (1 2)");
  t = reads_of(S, "(progn (balance *a*) (setf (balance *a*) 99) (balance *a*))");
  CHECK(strstr(t, "> = 10") != NULL && strstr(t, "> = 99") == NULL);
  CHECK_STR(check_eval(S, "(setf (balance *a*) 10)"), "10");

  /* bounded: the first JITI_READS_MAX distinct reads, the rest counted */
  CHECK_STR(check_eval(S, "(dotimes (i 40) (world-put i i))"), "NIL");
  t = reads_of(S, "(dotimes (i 40) (world-get i))");
  CHECK(strstr(t, "row 0 = 0; row 1 = 1") == t);
  CHECK(strstr(t, "row 31 = 31 (+8)") != NULL && strstr(t, "row 32") == NULL);

  /* a printing method reading slots adds nothing while the reads are
  ** described, and an error while printing does not escape */
  CHECK(!strncmp(check_eval(S, "(defmethod print-object ((a acct) s) (format s \"<acct ~a>\" (slot-value a 'owner)))"),
                 "#<STANDARD-METHOD PRINT-OBJECT (ACCT T)", 38));
  t = reads_of(S, "(balance *a*)");
  CHECK_STR(t, "variable *A* = <acct ann>; slot BALANCE of <acct ann> = 10");

  /* values stay alive across a collection while recorded */
  CHECK_STR(check_eval(S, "(world-put :tmp (list (make-string 3 :initial-element #\\z)))"), "(\"zzz\")");
  jiti_reads_begin(S);
  check_eval(S, "(world-get :tmp)");   /* a copy: only the record holds it */
  jiti_set_gc_stress(S, 1);            /* a collection at every allocation */
  check_eval(S, "(progn (world-rem :tmp) (make-list 100))");
  CHECK_STR(described(S), "row :TMP = (\"zzz\")");
  jiti_set_gc_stress(S, 0);
  jiti_reads_end(S);
  CHECK_STR(described(S), "");
  jiti_close(S);
  return CHECK_DONE();
}
