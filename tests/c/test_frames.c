/* test_frames.c — a pause's frames (kernel/frames.c): only the program's
** calls are listed (the kernel's helpers, the signalling functions above
** the erring call and a repair's wrappers are not), with their arguments
** and locals; a form evaluated in a frame reads and sets its locals; a
** frame returns given values (JITI_DECIDE_RETURN) or is called again
** (JITI_DECIDE_RESTART_FRAME, a redefined function's new definition); the
** refusals (no such frame, values that fail or are not a list, frames not
** caught); a pause in a repair lists the repair's frames only. */
#include <stdint.h>
#include <stdlib.h>
#include "jiti.h"
#include "check.h"

#define MAXF 16
typedef struct Snap {
  char backtrace[8192];
  int nframes;
  char fn[MAXF][128];
  char args[MAXF][256];   /* arguments joined by spaces */
  char locals[MAXF][512]; /* "NAME=VALUE " ... */
  char decision_error[512];
  int depth;
} Snap;

static Snap snaps[8];
static int ncalls;
typedef void (*Script)(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call);
static Script script;
static char evals[8][512]; /* results of evaluations in frames */
static int nevals;

static void in_frame(jiti_State *S, int frame, const char *src) {
  jiti_Result r;
  jiti_Status st = jiti_eval_in_frame(S, frame, src, NULL, &r);
  if (nevals < 8) {
    if (st == JITI_OK) snprintf(evals[nevals], sizeof evals[0], "%s", r.value);
    else
      snprintf(evals[nevals], sizeof evals[0], "!%s: %s", r.condition_type ? r.condition_type : "?",
               r.message ? r.message : "");
  }
  nevals++;
  jiti_result_free(&r);
}

static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud) {
  (void)ud;
  int call = ncalls++;
  if (call < 8) {
    Snap *s = &snaps[call];
    memset(s, 0, sizeof *s);
    snprintf(s->backtrace, sizeof s->backtrace, "%s", p->backtrace);
    snprintf(s->decision_error, sizeof s->decision_error, "%s", p->decision_error ? p->decision_error : "");
    s->depth = p->depth;
    s->nframes = p->nframes;
    for (int i = 0; i < p->nframes && i < MAXF; i++) {
      const jiti_Frame *f = &p->frames[i];
      CHECK(f->number == i);
      snprintf(s->fn[i], sizeof s->fn[i], "%s", f->function);
      for (int k = 0; k < f->nargs; k++) {
        size_t n = strlen(s->args[i]);
        snprintf(s->args[i] + n, sizeof s->args[i] - n, "%s%s", k ? " " : "", f->args[k]);
      }
      for (int k = 0; k < f->nlocals; k++) {
        size_t n = strlen(s->locals[i]);
        snprintf(s->locals[i] + n, sizeof s->locals[i] - n, "%s=%s ", f->locals[k].name, f->locals[k].value);
      }
    }
  }
  d->action = JITI_DECIDE_ABORT;
  if (call > 20) return;
  if (script) script(S, p, d, call);
}

static void reset(Script s) {
  script = s;
  ncalls = 0;
  nevals = 0;
  memset(snaps, 0, sizeof snaps);
  memset(evals, 0, sizeof evals);
}

static uint32_t restart_named(const jiti_Pause *p, const char *name) {
  for (int i = 0; i < p->nrestarts; i++)
    if (!strcmp(p->restarts[i].name, name)) return p->restarts[i].id;
  return 0;
}

/* ---------------------------------------------------------- the frames */

static void test_listing(jiti_State *S) {
  reset(NULL);
  CHECK_STR(check_eval(S, "(defun ratio (n) (let ((d 0)) (/ n d)))"), "RATIO");
  CHECK_STR(check_eval(S, "(ratio 10)"), "!DIVISION-BY-ZERO");
  CHECK(ncalls == 1);
  CHECK_STR(snaps[0].backtrace, "0: (/ 10 0)\n1: (RATIO 10)\n");
  CHECK(snaps[0].nframes == 2);
  CHECK_STR(snaps[0].fn[0], "/");
  CHECK_STR(snaps[0].args[0], "10 0");
  CHECK_STR(snaps[0].locals[0], "");
  CHECK_STR(snaps[0].fn[1], "RATIO");
  CHECK_STR(snaps[0].args[1], "10");
  CHECK_STR(snaps[0].locals[1], "N=10 D=0 ");

  /* an undefined function: none of the kernel's helpers, no ERROR */
  reset(NULL);
  CHECK_STR(check_eval(S, "(nosuch 3)"), "!UNDEFINED-FUNCTION");
  CHECK_STR(snaps[0].backtrace, "");
  CHECK(snaps[0].nframes == 0);
  reset(NULL);
  CHECK_STR(check_eval(S, "(defun calls-nosuch (x) (nosuch x))"), "CALLS-NOSUCH");
  CHECK_STR(check_eval(S, "(calls-nosuch 4)"), "!UNDEFINED-FUNCTION");
  CHECK_STR(snaps[0].backtrace, "0: (CALLS-NOSUCH 4)\n");

  /* ERROR above the erring frame goes; restart-case's thunk is not a frame;
  ** a program's function called from it is */
  reset(NULL);
  CHECK_STR(check_eval(S, "(defun boom (x) (error \"boom ~a\" x))"), "BOOM");
  CHECK_STR(check_eval(S, "(defun guarded (y) (restart-case (boom (1+ y)) (skip () :skipped)))"), "GUARDED");
  CHECK_STR(check_eval(S, "(guarded 1)"), "!SIMPLE-ERROR");
  CHECK_STR(snaps[0].backtrace, "0: (BOOM 2)\n1: (GUARDED 1)\n");
  CHECK_STR(snaps[0].locals[0], "X=2 ");

  /* a standard function the program calls, and the program's lambda it calls */
  reset(NULL);
  CHECK_STR(check_eval(S, "(defun each (l) (mapcar (lambda (x) (car x)) l))"), "EACH");
  CHECK_STR(check_eval(S, "(each '((1) 2))"), "!TYPE-ERROR");
  CHECK(snaps[0].nframes >= 3);
  CHECK_STR(snaps[0].fn[snaps[0].nframes - 1], "EACH");
  CHECK(strstr(snaps[0].backtrace, "MAPCAR") != NULL);
  CHECK(strstr(snaps[0].backtrace, "%") == NULL);

  /* bounded: long values are cut */
  reset(NULL);
  CHECK_STR(check_eval(S, "(defun big (s) (let ((long (make-string 5000 :initial-element #\\a))) (car long)))"), "BIG");
  CHECK_STR(check_eval(S, "(big 1)"), "!TYPE-ERROR");
  CHECK(strlen(snaps[0].locals[0]) < 512);
}

/* --------------------------------------------------- evaluating in a frame */

static void s_eval_setq(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  if (call != 0) return;
  in_frame(S, 1, "d");
  in_frame(S, 1, "(list n d)");
  in_frame(S, 1, "(setq d 2)");
  in_frame(S, 1, "d");
  in_frame(S, 0, "d"); /* a primitive's frame has no locals */
  in_frame(S, 7, "d"); /* no such frame */
  d->action = JITI_DECIDE_RESTART;
  d->restart_id = restart_named(p, "RETRY");
}

static void test_eval_in_frame(jiti_State *S) {
  CHECK_STR(check_eval(S,
                       "(defun ratio2 (n)"
                       "  (let ((d 0))"
                       "    (loop (restart-case (return (/ n d)) (retry () nil)))))"),
            "RATIO2");
  reset(s_eval_setq);
  CHECK_STR(check_eval(S, "(ratio2 10)"), "5");
  CHECK(ncalls == 3); /* the two evaluations that signal pause a level up */
  CHECK_STR(evals[0], "0");
  CHECK_STR(evals[1], "(10 0)");
  CHECK_STR(evals[2], "2");
  CHECK_STR(evals[3], "2");
  CHECK(strncmp(evals[4], "!UNBOUND-VARIABLE", 17) == 0);
  CHECK(strncmp(evals[5], "!CONTROL-ERROR: this pause has no such frame", 44) == 0);
  /* outside a pause */
  jiti_Result r;
  CHECK(jiti_eval_in_frame(S, 0, "1", NULL, &r) != JITI_OK);
  CHECK(r.condition_type && !strcmp(r.condition_type, "CONTROL-ERROR"));
  jiti_result_free(&r);
}

/* ---------------------------------------------------- return and restart */

static void s_return(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S;
  (void)p;
  d->frame = 0;
  d->action = JITI_DECIDE_RETURN;
  if (call == 0) d->args = "(cons 1 2)";                 /* refused: not a list */
  else if (call == 1) d->args = "(error \"no values\")"; /* refused: signals */
  else if (call == 2) {
    d->frame = 9;
    d->args = "(list 1)";
  } /* refused: no frame */
  else
    d->args = "(list 7)";
}

static void s_restart_frame(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)p;
  if (call != 0) return;
  in_frame(S, 1, "(defun ratio (n) (* n 2))");
  d->action = JITI_DECIDE_RESTART_FRAME;
  d->frame = 1;
}

static void s_return_values(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)S;
  (void)p;
  (void)call;
  d->action = JITI_DECIDE_RETURN;
  d->frame = 1;
  d->args = "(list :a :b)";
}

static void test_return_restart(jiti_State *S) {
  CHECK_STR(check_eval(S, "(defun ratio (n) (let ((d 0)) (/ n d)))"), "RATIO");
  /* frames not caught: a return is refused, then the abort ends it */
  reset(s_restart_frame);
  CHECK_STR(check_eval(S, "(ratio 10)"), "!DIVISION-BY-ZERO");
  CHECK(ncalls == 2);
  CHECK(strstr(snaps[1].decision_error, "cannot be returned to") != NULL);
  CHECK_STR(check_eval(S, "(defun ratio (n) (let ((d 0)) (/ n d)))"), "RATIO");

  jiti_set_frame_catch(S, 1);
  reset(s_return);
  CHECK_STR(check_eval(S, "(list (ratio 10) :after)"), "(7 :AFTER)");
  CHECK(ncalls == 4);
  CHECK(strstr(snaps[1].decision_error, "must evaluate to a list") != NULL);
  CHECK(strstr(snaps[2].decision_error, "the values to return failed: no values") != NULL);
  CHECK(strstr(snaps[3].decision_error, "this pause has no frame 9") != NULL);

  /* multiple values; unwind-protect cleanups run on the way */
  reset(s_return_values);
  CHECK_STR(check_eval(S, "(defvar *cleaned* nil)"), "*CLEANED*");
  CHECK_STR(check_eval(S, "(defun ratio3 (n) (unwind-protect (/ n 0) (setq *cleaned* t)))"), "RATIO3");
  CHECK_STR(check_eval(S, "(multiple-value-list (ratio3 1))"), "(:A :B)");
  CHECK_STR(check_eval(S, "*cleaned*"), "T");

  /* restart-frame runs the function's new definition */
  reset(s_restart_frame);
  CHECK_STR(check_eval(S, "(+ 1 (ratio 10))"), "21");
  CHECK(ncalls == 1);
  CHECK_STR(evals[0], "RATIO");
  jiti_set_frame_catch(S, 0);
}

/* ------------------------------------------------- a pause in a repair */

static void s_nested(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, int call) {
  (void)p;
  (void)d;
  if (call == 0) {
    jiti_Result r;
    jiti_Status st = jiti_eval_string(S, "(inner-fail 5)", 14, &r);
    (void)st;
    jiti_result_free(&r);
    in_frame(S, 1, "n"); /* level 1's frames again, after level 2 */
  } else if (call == 1) {
    in_frame(S, 0, "k"); /* level 2's frame 0 */
    in_frame(S, 1, "n"); /* RATIO is level 1's: not a frame here */
  }
}

static void test_nested(jiti_State *S) {
  CHECK_STR(check_eval(S, "(defun inner-fail (k) (car k))"), "INNER-FAIL");
  CHECK_STR(check_eval(S, "(defun ratio (n) (let ((d 0)) (/ n d)))"), "RATIO");
  reset(s_nested);
  CHECK_STR(check_eval(S, "(ratio 10)"), "!DIVISION-BY-ZERO");
  CHECK(ncalls == 3); /* the refused frame pauses a level further up */
  CHECK(snaps[1].depth == 2);
  CHECK_STR(snaps[1].backtrace, "0: (INNER-FAIL 5)\n");
  CHECK_STR(snaps[1].locals[0], "K=5 ");
  CHECK_STR(evals[0], "5");
  CHECK(strncmp(evals[1], "!CONTROL-ERROR", 14) == 0);
  CHECK_STR(evals[2], "10");
}

int main(void) {
  jiti_State *S = jiti_open();
  CHECK(S != NULL);
  if (!S) return CHECK_DONE();
  jiti_set_debugger_hook(S, hook, NULL);
  test_listing(S);
  test_eval_in_frame(S);
  test_return_restart(S);
  test_nested(S);
  CHECK_STR(check_eval(S, "(length (make-list 1000))"), "1000");
  jiti_close(S);
  return CHECK_DONE();
}
