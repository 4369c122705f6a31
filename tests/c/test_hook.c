/* test_hook.c — the debugger hook (jiti_set_debugger_hook): a pause keeps
** the failing computation's stack; the hook sees the condition, the restarts
** (innermost first) and a backtrace; it evaluates repairs in the same world,
** then resumes through a restart (with arguments) or aborts.  Refused
** decisions, inactive restarts, the redefinition-while-paused rule, nested
** pauses, and collection at every allocation while paused. */
#include <stdint.h>
#include <stdlib.h>
#include "jiti.h"
#include "check.h"

/* ------------------------------------------------------------ helpers */


/* Evaluate; return the printed value, or "!TYPE" for a failure. */

/* Evaluate and keep the whole result (the caller frees it). */
static jiti_Status ev_full(jiti_State *S, const char *src, jiti_Result *r) {
  return jiti_eval_string(S, src, strlen(src), r);
}

/* A copy of what one call of the hook saw. */
#define MAXR 8
typedef struct Snap {
  int depth;
  char type[64];
  char report[512];
  char decision_error[512];  /* "" when NULL */
  int has_decision_error;
  int nrestarts;
  uint32_t ids[MAXR];
  char names[MAXR][64];
  char reports[MAXR][256];
  char backtrace[8192];
  char printed[512];         /* jiti_print of pause->condition */
} Snap;

#define MAXSNAP 16
static Snap snaps[MAXSNAP];
static int ncalls;

typedef void (*Script)(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call);
static Script script;

static void copy(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", src ? src : "(null)");
}

static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud) {
  (void)ud;
  int call = ncalls++;
  if (call < MAXSNAP) {
    Snap *s = &snaps[call];
    memset(s, 0, sizeof *s);
    s->depth = p->depth;
    copy(s->type, sizeof s->type, p->condition_type);
    copy(s->report, sizeof s->report, p->report);
    s->has_decision_error = p->decision_error != NULL;
    copy(s->decision_error, sizeof s->decision_error, p->decision_error ? p->decision_error : "");
    s->nrestarts = p->nrestarts;
    for (int i = 0; i < p->nrestarts && i < MAXR; i++) {
      s->ids[i] = p->restarts[i].id;
      copy(s->names[i], sizeof s->names[i], p->restarts[i].name);
      copy(s->reports[i], sizeof s->reports[i], p->restarts[i].report);
    }
    copy(s->backtrace, sizeof s->backtrace, p->backtrace);
    char *pr = jiti_print(S, p->condition, 400);
    copy(s->printed, sizeof s->printed, pr);
    free(pr);
  }
  d->action = JITI_DECIDE_ABORT;
  if (call > 40) return;  /* a runaway test: abort */
  if (script) script(S, p, d, call);
}

static void reset(Script s) {
  script = s;
  ncalls = 0;
  memset(snaps, 0, sizeof snaps);
}

static uint32_t rid(const jiti_Pause *p, const char *name) {
  for (int i = 0; i < p->nrestarts; i++)
    if (strcmp(p->restarts[i].name, name) == 0) return p->restarts[i].id;
  return 0;
}

static void choose(const jiti_Pause *p, jiti_Decision *d, const char *name, const char *args) {
  uint32_t id = rid(p, name);
  if (!id) return;  /* not offered: abort */
  d->action = JITI_DECIDE_RESTART;
  d->restart_id = id;
  d->args = args;
}

/* Results of evaluations made from inside the hook, checked afterwards. */
static char inner[8][512];
static jiti_Status inner_st[8];
static void inner_eval(jiti_State *S, int k, const char *src) {
  jiti_Result r;
  inner_st[k] = ev_full(S, src, &r);
  if (r.status == JITI_OK) snprintf(inner[k], sizeof inner[k], "%s", r.value);
  else snprintf(inner[k], sizeof inner[k], "!%s", r.condition_type ? r.condition_type : "?");
  jiti_result_free(&r);
}
static void inner_reset(void) {
  memset(inner, 0, sizeof inner);
  for (int k = 0; k < 8; k++) inner_st[k] = (jiti_Status)-1;
}

/* Position of `needle` in `hay`, or -1. */
static long pos(const char *hay, const char *needle) {
  const char *p = strstr(hay, needle);
  return p ? (long)(p - hay) : -1;
}

/* --------------------------------------------------------- the program */

static const char *program =
  "(define-condition bad-input (error) ((value :initarg :value :reader bad-value))"
  "  (:report (lambda (c s) (format s \"bad input ~s\" (bad-value c)))))"
  "(defun helper (x) (if (eql x 0) (error 'bad-input :value x) (list :old-helper x)))"
  "(defun call-helper (x)"
  "  (restart-case (helper x)"
  "    (retry () :report \"Call HELPER again.\" (call-helper x))))"
  "(defun level3 (z) (list :l3 (call-helper (- z z))))"
  "(defun level2 (y) (list :l2 (level3 (* 2 y))))"
  "(defun level1 (x)"
  "  (restart-case (list :l1 (level2 (+ x 1)))"
  "    (use-value (v) :report \"Use a value instead.\" (list :used v))))";

static const char *old_helper = "(defun helper (x) (if (eql x 0) (error 'bad-input :value x) (list :old-helper x)))";

/* 1. pause inside three nested calls; repair; retry */
static void s_repair_retry(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  if (call != 0) return;
  inner_eval(S, 0, "(defun helper (x) (list :new-helper x))");
  inner_eval(S, 1, "(helper 5)");
  choose(p, d, "RETRY", NULL);
}

/* 2. use-value with arguments */
static void s_use_value(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S;
  if (call == 0) choose(p, d, "USE-VALUE", "(list 42)");
}

/* 3. an unknown id, then abort */
static void s_unknown_id(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S; (void)p;
  if (call == 0) {
    d->action = JITI_DECIDE_RESTART;
    d->restart_id = 987654;
  }
}

/* 4. arguments that fail, that are not a list, then good ones.  An error
** while evaluating the arguments may pause again (depth 2): abort there. */
static int s_bad_args_depth1;
static void s_bad_args(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S; (void)call;
  /* abort a pause for the arguments' own error */
  if (p->depth > 1 || strcmp(p->condition_type, "BAD-INPUT") != 0) return;
  switch (s_bad_args_depth1++) {
    case 0: choose(p, d, "USE-VALUE", "(car 1)"); break;
    case 1: choose(p, d, "USE-VALUE", "42"); break;
    case 2: choose(p, d, "USE-VALUE", "(list 7)"); break;
    default: break;
  }
}

/* 5. a stale id from an earlier pause */
static uint32_t stale_id;
static void s_remember_retry(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S;
  if (call != 0) return;
  stale_id = rid(p, "RETRY");
  inner_eval(S, 0, "(defun helper (x) (list :fixed x))");
  choose(p, d, "RETRY", NULL);
}
static void s_stale_id(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S; (void)p;
  if (call == 0) {
    d->action = JITI_DECIDE_RESTART;
    d->restart_id = stale_id;
  }
}

/* 6. the redefinition-while-paused rule */
static void s_redefine(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  if (call != 0) return;
  inner_eval(S, 0, "(defun h (x) (list :new-h x))");
  inner_eval(S, 1, "(defun o (x n) (list :new-o (h x) n))");
  inner_eval(S, 2, "(o :probe 9)");  /* a new call sees the new O */
  choose(p, d, "RETRY", NULL);
}

/* 7. collection at every allocation while paused */
static void s_gc(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  if (call != 0) return;
  inner_eval(S, 0, "(defparameter *junk* (let ((l nil)) (dotimes (i 300) (push (make-string 7 :initial-element #\\z) l)) l))");
  inner_eval(S, 1, "(defun helper (x) (let ((acc nil)) (dotimes (i 50) (push (list i (format nil \"~a\" i)) acc)) (list :gc-helper x (length acc) (second (first acc)))))");
  inner_eval(S, 2, "(length (make-list 5000 :initial-element (list 1 2)))");
  inner_eval(S, 3, "(format nil \"~{~a~^,~}\" (subseq *junk* 0 2))");
  char *pr = jiti_print(S, p->condition, 400);  /* the condition survived */
  snprintf(inner[4], sizeof inner[4], "%s", pr);
  free(pr);
  choose(p, d, "RETRY", NULL);
}
static void s_gc_use_value(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  if (call != 0) return;
  inner_eval(S, 0, "(length (let ((l nil)) (dotimes (i 200) (push (copy-list '(a b c)) l)) l))");
  choose(p, d, "USE-VALUE", "(list (make-list 3 :initial-element (format nil \"v~a\" 1)))");
}

/* 8. a nested pause: an error inside a repair evaluated from the hook */
static void s_nested(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  if (p->depth == 1 && call == 0) {
    inner_eval(S, 0, "(helper-that-is-undefined 1)");   /* pauses at depth 2 */
    inner_eval(S, 1, "(defun helper (x) (list :after-nested x))");
    inner_eval(S, 2, "(+ 1 2)");
    choose(p, d, "RETRY", NULL);
  } else if (p->depth == 2) {
    inner_eval(S, 3, "(list :inside-depth-2 (+ 20 22))");
    /* abort: back to the repair's jiti_eval_string */
  }
}

/* 9. cerror's continue restart */
static void s_continue(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S;
  if (call == 0) choose(p, d, "CONTINUE", NULL);
}

/* 10. a restart that returns normally */
static void s_returns(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S;
  if (call == 0) choose(p, d, "COME-BACK", NULL);
}

/* 11. abort at once */
static void s_abort(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S; (void)p; (void)d; (void)call;
}

/* -------------------------------------------------------------- tests */

static void test_three_nested(jiti_State *S) {
  CHECK_STR(check_eval(S, program), "LEVEL1");
  reset(s_repair_retry);
  inner_reset();
  jiti_Result r;
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_OK);
  CHECK_STR(r.value, "(:L1 (:L2 (:L3 (:NEW-HELPER 0))))");
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  Snap *s = &snaps[0];
  CHECK(s->depth == 1);
  CHECK_STR(s->type, "BAD-INPUT");
  CHECK_STR(s->report, "bad input 0");
  CHECK(!s->has_decision_error);
  /* restarts: innermost first, names, reports, unique ids */
  CHECK(s->nrestarts == 2);
  CHECK_STR(s->names[0], "RETRY");
  CHECK_STR(s->reports[0], "Call HELPER again.");
  CHECK_STR(s->names[1], "USE-VALUE");
  CHECK_STR(s->reports[1], "Use a value instead.");
  CHECK(s->ids[0] != 0 && s->ids[1] != 0 && s->ids[0] != s->ids[1]);
  /* the backtrace: the functions with their arguments, innermost first */
  long ph = pos(s->backtrace, "(HELPER 0)");
  long pc = pos(s->backtrace, "(CALL-HELPER 0)");
  long p3 = pos(s->backtrace, "(LEVEL3 4)");
  long p2 = pos(s->backtrace, "(LEVEL2 2)");
  long p1 = pos(s->backtrace, "(LEVEL1 1)");
  CHECK(ph >= 0);
  CHECK(pc >= 0);
  CHECK(p3 >= 0);
  CHECK(p2 >= 0);
  CHECK(p1 >= 0);
  CHECK(ph < pc && pc < p3 && p3 < p2 && p2 < p1);
  if (!(ph >= 0 && p1 >= 0)) fprintf(stderr, "backtrace was:\n%s\n", s->backtrace);
  /* the repair, evaluated in the paused world */
  CHECK(inner_st[0] == JITI_OK);
  CHECK_STR(inner[0], "HELPER");
  CHECK_STR(inner[1], "(:NEW-HELPER 5)");
  /* the new definition stays */
  CHECK_STR(check_eval(S, "(level1 1)"), "(:L1 (:L2 (:L3 (:NEW-HELPER 0))))");
  CHECK(ncalls == 1);

  /* a second pause gets fresh ids, distinct from the first's */
  uint32_t first_ids[2] = {s->ids[0], s->ids[1]};
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_abort);
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_ABORTED);
  CHECK_STR(r.condition_type, "BAD-INPUT");
  CHECK(r.message && strstr(r.message, "bad input 0") != NULL);
  jiti_result_free(&r);
  CHECK(ncalls == 1 && snaps[0].nrestarts == 2);
  CHECK(snaps[0].ids[0] != first_ids[0] && snaps[0].ids[0] != first_ids[1]);
  CHECK(snaps[0].ids[1] != first_ids[0] && snaps[0].ids[1] != first_ids[1]);
  /* the state is usable after an abort */
  CHECK_STR(check_eval(S, "(+ 1 2)"), "3");
}

static void test_use_value(jiti_State *S) {
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_use_value);
  CHECK_STR(check_eval(S, "(list :outer (level1 1))"), "(:OUTER (:USED 42))");
  CHECK(ncalls == 1);
  /* use-value through a restart from C's jiti_call too */
  reset(s_use_value);
  const char *args[] = {"1"};
  jiti_Result r;
  CHECK(jiti_call(S, "level1", 1, args, &r) == JITI_OK);
  CHECK_STR(r.value, "(:USED 42)");
  jiti_result_free(&r);
}

static void test_refused_decisions(jiti_State *S) {
  jiti_Result r;
  /* unknown id: the hook is called again with decision_error, then aborts */
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_unknown_id);
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 2);
  CHECK(!snaps[0].has_decision_error);
  CHECK(snaps[1].has_decision_error);
  CHECK(strstr(snaps[1].decision_error, "987654") != NULL);
  CHECK(snaps[1].depth == 1);
  CHECK_STR(snaps[1].type, "BAD-INPUT");
  CHECK(snaps[1].nrestarts == 2);  /* the same restarts are still offered */
  CHECK_STR(snaps[1].names[0], "RETRY");

  /* arguments that fail, then a non-list, then good arguments */
  reset(s_bad_args);
  s_bad_args_depth1 = 0;
  CHECK_STR(check_eval(S, "(level1 1)"), "(:USED 7)");
  int d1 = 0, with_err = 0, args_error_at_depth1 = 0;
  const char *errs[3] = {NULL, NULL, NULL};
  for (int i = 0; i < ncalls && i < MAXSNAP; i++)
    if (snaps[i].depth == 1 && strcmp(snaps[i].type, "BAD-INPUT") != 0) args_error_at_depth1++;
  /* The arguments' own error (TYPE-ERROR from (car 1)) is evaluated while
  ** the first pause is still deciding: it must not look like a fresh
  ** first-level pause (either no pause at all, or depth 2). */
  CHECK(args_error_at_depth1 == 0);
  for (int i = 0; i < ncalls && i < MAXSNAP; i++)
    if (snaps[i].depth == 1 && strcmp(snaps[i].type, "BAD-INPUT") == 0) {
      if (d1 < 3) errs[d1] = snaps[i].has_decision_error ? snaps[i].decision_error : NULL;
      if (snaps[i].has_decision_error) with_err++;
      d1++;
    }
  CHECK(d1 == 3);
  CHECK(with_err == 2);
  CHECK(errs[0] == NULL);
  CHECK(errs[1] != NULL && strstr(errs[1], "failed") != NULL);
  CHECK(errs[2] != NULL && strstr(errs[2], "list") != NULL);

  /* a restart that returns normally is refused too */
  reset(s_returns);
  CHECK(ev_full(S, "(restart-bind ((come-back (lambda () :came-back))) (error \"stuck\"))", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 2);
  CHECK(snaps[1].has_decision_error);
  CHECK(strstr(snaps[1].decision_error, "returned") != NULL);

  /* an id from an earlier, finished pause is refused */
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_remember_retry);
  inner_reset();
  CHECK_STR(check_eval(S, "(level1 1)"), "(:L1 (:L2 (:L3 (:FIXED 0))))");
  CHECK(stale_id != 0);
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_stale_id);
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 2);
  CHECK(snaps[1].has_decision_error);
  CHECK(snaps[0].ids[0] != stale_id && snaps[0].ids[1] != stale_id);
}

static void test_inactive_restart(jiti_State *S) {
  /* without a hook: control-error as an ordinary error */
  jiti_set_debugger_hook(S, NULL, NULL);
  CHECK_STR(check_eval(S, "(defvar *saved-restart* nil)"), "*SAVED-RESTART*");
  CHECK_STR(check_eval(S, "(restart-case (progn (setq *saved-restart* (find-restart 'later)) :done) (later () :later))"), ":DONE");
  CHECK_STR(check_eval(S, "(not (null *saved-restart*))"), "T");
  CHECK_STR(check_eval(S, "(find-restart *saved-restart*)"), "NIL");
  CHECK_STR(check_eval(S, "(invoke-restart *saved-restart*)"), "!CONTROL-ERROR");
  CHECK_STR(check_eval(S, "(handler-case (invoke-restart *saved-restart*) (control-error () :caught))"), ":CAUGHT");
  /* with the hook: the control-error pauses */
  jiti_set_debugger_hook(S, hook, NULL);
  reset(s_abort);
  jiti_Result r;
  CHECK(ev_full(S, "(invoke-restart *saved-restart*)", &r) == JITI_ABORTED);
  CHECK_STR(r.condition_type, "CONTROL-ERROR");
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].type, "CONTROL-ERROR");
  /* no hook: an unhandled error returns JITI_ERROR with the report */
  jiti_set_debugger_hook(S, NULL, NULL);
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_ERROR);
  CHECK_STR(r.condition_type, "BAD-INPUT");
  CHECK_STR(r.message, "bad input 0");
  jiti_result_free(&r);
  jiti_set_debugger_hook(S, hook, NULL);
}

static void test_redefinition_rule(jiti_State *S) {
  CHECK_STR(check_eval(S, "(defun h (x) (if (eq x :bad) (error \"H got ~s\" x) (list :old-h x)))"), "H");
  CHECK_STR(check_eval(S, "(defun o (x n)"
                  "  (list :old-o"
                  "        (restart-case (h x) (retry () :report \"Call H again.\" (h x)))"
                  "        (if (> n 0) (o :fine (- n 1)) :end)))"), "O");
  CHECK_STR(check_eval(S, "(o :fine 0)"), "(:OLD-O (:OLD-H :FINE) :END)");
  reset(s_redefine);
  inner_reset();
  jiti_Result r;
  CHECK(ev_full(S, "(o :bad 1)", &r) == JITI_OK);
  /* the running O finishes with its old body; the retry calls the new H by
  ** name; O's recursive call after resuming is a new call: the new O */
  CHECK_STR(r.value, "(:OLD-O (:NEW-H :BAD) (:NEW-O (:NEW-H :FINE) 0))");
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].type, "SIMPLE-ERROR");
  CHECK_STR(snaps[0].report, "H got :BAD");
  CHECK(pos(snaps[0].backtrace, "(H :BAD)") >= 0);
  CHECK(pos(snaps[0].backtrace, "(O :BAD 1)") > pos(snaps[0].backtrace, "(H :BAD)"));
  CHECK_STR(inner[0], "H");
  CHECK_STR(inner[1], "O");
  CHECK_STR(inner[2], "(:NEW-O (:NEW-H :PROBE) 9)");
  /* afterwards every call is new */
  CHECK_STR(check_eval(S, "(o :bad 3)"), "(:NEW-O (:NEW-H :BAD) 3)");
}

static void test_gc_stress(jiti_State *S) {
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  jiti_set_gc_stress(S, 1);
  reset(s_gc);
  inner_reset();
  jiti_Result r;
  CHECK(ev_full(S, "(let ((keep (list :a (make-string 3 :initial-element #\\k)))) (list keep (level1 1) keep))", &r) == JITI_OK);
  CHECK_STR(r.value, "((:A \"kkk\") (:L1 (:L2 (:L3 (:GC-HELPER 0 50 \"49\")))) (:A \"kkk\"))");
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].report, "bad input 0");
  CHECK_STR(inner[0], "*JUNK*");
  CHECK_STR(inner[1], "HELPER");
  CHECK_STR(inner[2], "5000");
  CHECK_STR(inner[3], "\"zzzzzzz,zzzzzzz\"");
  CHECK_STR(inner[4], snaps[0].printed);  /* same printed condition after collections */
  /* use-value with allocating arguments, under stress */
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_gc_use_value);
  inner_reset();
  CHECK_STR(check_eval(S, "(level1 1)"), "(:USED (\"v1\" \"v1\" \"v1\"))");
  CHECK_STR(inner[0], "200");
  /* nested pause under stress */
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_nested);
  inner_reset();
  CHECK_STR(check_eval(S, "(level1 1)"), "(:L1 (:L2 (:L3 (:AFTER-NESTED 0))))");
  CHECK(inner_st[0] == JITI_ABORTED);
  jiti_set_gc_stress(S, 0);
}

static void test_nested_pause(jiti_State *S) {
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_nested);
  inner_reset();
  jiti_Result r;
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_OK);
  CHECK_STR(r.value, "(:L1 (:L2 (:L3 (:AFTER-NESTED 0))))");
  jiti_result_free(&r);
  /* the error in the repair paused again, one level deeper */
  CHECK(ncalls == 2);
  CHECK(snaps[0].depth == 1);
  CHECK_STR(snaps[0].type, "BAD-INPUT");
  CHECK(snaps[1].depth == 2);
  CHECK_STR(snaps[1].type, "UNDEFINED-FUNCTION");
  CHECK(strstr(snaps[1].report, "HELPER-THAT-IS-UNDEFINED") != NULL);
  CHECK(!snaps[1].has_decision_error);
  /* the outer computation's restarts are still active at the inner pause */
  int has_retry = 0;
  for (int i = 0; i < snaps[1].nrestarts; i++)
    if (!strcmp(snaps[1].names[i], "RETRY") && snaps[1].ids[i] == snaps[0].ids[0]) has_retry = 1;
  CHECK(has_retry);
  /* the inner pause could evaluate too; aborting it ended only the repair */
  CHECK_STR(inner[3], "(:INSIDE-DEPTH-2 42)");
  CHECK(inner_st[0] == JITI_ABORTED);
  CHECK_STR(inner[0], "!UNDEFINED-FUNCTION");
  /* then the outer pause continued: more repairs, and the retry */
  CHECK(inner_st[1] == JITI_OK);
  CHECK_STR(inner[2], "3");
  /* the depth counter is back to 1 for the next pause */
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_abort);
  CHECK(ev_full(S, "(level1 1)", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 1 && snaps[0].depth == 1);
}

static void test_misc(jiti_State *S) {
  jiti_Result r;
  /* cerror: the continue restart resumes after the cerror call */
  reset(s_continue);
  CHECK_STR(check_eval(S, "(list (cerror \"Go on with ~a.\" \"soft failure ~a\" 5) :after)"), "(NIL :AFTER)");
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].type, "SIMPLE-ERROR");
  CHECK_STR(snaps[0].report, "soft failure 5");
  CHECK(snaps[0].nrestarts >= 1);
  CHECK_STR(snaps[0].names[0], "CONTINUE");
  CHECK_STR(snaps[0].reports[0], "Go on with 5.");
  /* an error handled in Lisp never reaches the hook */
  reset(s_abort);
  CHECK_STR(check_eval(S, "(handler-case (level1 1) (bad-input (c) (list :handled (bad-value c))))"), "(:HANDLED 0)");
  CHECK_STR(check_eval(S, "(ignore-errors (error \"x\"))"), "NIL");
  CHECK(ncalls == 0);
  /* neither do signal and warn */
  CHECK_STR(check_eval(S, "(signal \"just a signal\")"), "NIL");
  CHECK_STR(check_eval(S, "(let ((*error-output* (make-string-output-stream))) (warn \"w\"))"), "NIL");
  CHECK(ncalls == 0);
  /* a handler that declines: the hook is called, with the stack intact */
  CHECK(ev_full(S, "(handler-bind ((error (lambda (c) c nil))) (level1 1))", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  /* invoke-debugger calls the hook for any condition */
  reset(s_abort);
  CHECK(ev_full(S, "(invoke-debugger (make-condition 'simple-error :format-control \"dbg ~a\" :format-arguments '(1)))", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].report, "dbg 1");
  /* a resource limit is not a pause: it aborts with JITI_LIMIT */
  reset(s_abort);
  jiti_Limits lim = {0};
  lim.fuel = 50000;
  CHECK(jiti_eval_limited(S, "(loop)", 6, &lim, &r) == JITI_LIMIT);
  CHECK_STR(r.condition_type, "FUEL-EXHAUSTED");
  jiti_result_free(&r);
  CHECK(ncalls == 0);
  /* errors in a mapcar callback pause with mapcar's frame in the backtrace */
  CHECK_STR(check_eval(S, old_helper), "HELPER");
  reset(s_use_value);
  CHECK_STR(check_eval(S, "(mapcar (lambda (x) (restart-case (helper x) (use-value (v) (list :u v)))) '(1 0 2))"),
            "((:OLD-HELPER 1) (:U 42) (:OLD-HELPER 2))");
  CHECK(ncalls == 1);
  CHECK(pos(snaps[0].backtrace, "MAPCAR") >= 0);
  /* break pauses past the handlers and *debugger-hook*; its continue
  ** restart returns NIL from it */
  reset(s_continue);
  CHECK_STR(check_eval(S, "(let ((*debugger-hook* (lambda (c h) h (throw :hooked c))))"
                          "  (catch :hooked (handler-bind ((condition (lambda (c) (throw :hooked c))))"
                          "    (list (break \"stop ~a\" 3) :after))))"),
            "(NIL :AFTER)");
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].type, "SIMPLE-CONDITION");
  CHECK_STR(snaps[0].report, "stop 3");
  CHECK_STR(snaps[0].names[0], "CONTINUE");
  /* the program's *debugger-hook* comes before the host's, bound to NIL
  ** while it runs; when it returns, the host's hook pauses */
  reset(s_abort);
  CHECK_STR(check_eval(S, "(catch :out (let ((*debugger-hook* (lambda (c h) (throw :out (list (princ-to-string c) (functionp h) *debugger-hook*)))))"
                          "  (error \"bad ~a\" 1)))"),
            "(\"bad 1\" T NIL)");
  CHECK(ncalls == 0);
  CHECK(ev_full(S, "(let ((*debugger-hook* (lambda (c h) c h :declined))) (error \"still\"))", &r) == JITI_ABORTED);
  jiti_result_free(&r);
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].report, "still");
  /* *break-on-signals* breaks before the handlers run */
  reset(s_continue);
  CHECK_STR(check_eval(S, "(let ((*break-on-signals* 'simple-error)) (handler-case (error \"seen\") (error () :handled)))"),
            ":HANDLED");
  CHECK(ncalls == 1);
  CHECK(pos(snaps[0].report, "seen") >= 0);
  /* the traced set and the hooks last until the host resets the
  ** evaluation's scratch (a transaction's start and end) */
  CHECK_STR(check_eval(S, "(defun traced-here (x) x) (trace traced-here)"), "(TRACED-HERE)");
  CHECK_STR(check_eval(S, "(setq *debugger-hook* #'list *break-on-signals* 'warning) (trace)"), "(TRACED-HERE)");
  jiti_reset_io_syntax(S);
  CHECK_STR(check_eval(S, "(list (trace) *debugger-hook* *break-on-signals*)"), "(NIL NIL NIL)");
}

int main(void) {
  jiti_State *S = jiti_open();
  CHECK(S != NULL);
  if (!S) return CHECK_DONE();
  jiti_set_debugger_hook(S, hook, NULL);
  test_three_nested(S);
  test_use_value(S);
  test_refused_decisions(S);
  test_inactive_restart(S);
  test_redefinition_rule(S);
  test_nested_pause(S);
  test_misc(S);
  test_gc_stress(S);
  /* the state is fine at the end */
  CHECK_STR(check_eval(S, "(length (make-list 1000))"), "1000");
  jiti_close(S);
  return CHECK_DONE();
}
