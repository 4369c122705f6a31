/* test_interrupt.c — interactive interrupts (jiti_interrupt_async): the
** debugger hook sees INTERACTIVE-INTERRUPT with a CONTINUE restart that
** resumes where the computation stopped (values, fuel and all); only in a
** call the host allowed it in; waiting through C-side work and nested
** calls; an abort; and inside a long GMP product, from a real signal
** handler: the product abandoned (its memory freed: the sanitizer build
** reports a leak otherwise), the pause taken, CONTINUE computing it again
** right, and a cancel stopping it. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include "jiti.h"
#include "check.h"

typedef struct Seen {
  int calls;
  char type[64], report[128], first_restart[64], first_report[128];
  char value[256];          /* a repair's value */
  char backtrace[4096];
  int abort;                /* decide abort instead of CONTINUE */
  const char *repair;       /* evaluated from the pause, or NULL */
} Seen;

static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud) {
  Seen *s = ud;
  s->calls++;
  snprintf(s->type, sizeof s->type, "%s", p->condition_type);
  snprintf(s->report, sizeof s->report, "%s", p->report);
  snprintf(s->backtrace, sizeof s->backtrace, "%s", p->backtrace ? p->backtrace : "");
  if (p->nrestarts > 0) {
    snprintf(s->first_restart, sizeof s->first_restart, "%s", p->restarts[0].name);
    snprintf(s->first_report, sizeof s->first_report, "%s", p->restarts[0].report);
  }
  if (s->repair) {
    jiti_Result r;
    jiti_eval_string(S, s->repair, strlen(s->repair), &r);
    snprintf(s->value, sizeof s->value, "%s", r.status == JITI_OK ? r.value : "!");
    jiti_result_free(&r);
  }
  d->action = JITI_DECIDE_ABORT;
  if (s->abort || s->calls > 5) return;
  for (int i = 0; i < p->nrestarts; i++)
    if (!strcmp(p->restarts[i].name, "CONTINUE")) {
      d->action = JITI_DECIDE_RESTART;
      d->restart_id = p->restarts[i].id;
      return;
    }
}

/* (interrupt-me): the host's request, made synchronously mid-evaluation */
static jiti_Value interrupt_me(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud; (void)argc; (void)argv;
  jiti_interrupt_async(S);
  return jiti_nil();
}

static jiti_Status ev(jiti_State *S, const char *src, const jiti_Limits *lim, char *out, size_t n) {
  jiti_Result r;
  jiti_Status st = jiti_eval_limited(S, src, strlen(src), lim, &r);
  snprintf(out, n, "%s", st == JITI_OK ? r.value : r.condition_type ? r.condition_type : "?");
  jiti_result_free(&r);
  return st;
}

static void test_continue(jiti_State *S, Seen *s) {
  char out[256];
  memset(s, 0, sizeof *s);
  s->repair = "(list :i *i*)";
  jiti_allow_interrupt(S);
  jiti_Status st = ev(S, "(progn (defvar *i* 0) (setq *i* 0)"
                         " (dotimes (k 10) (when (= k 3) (interrupt-me)) (incf *i*)) (list *i* (floor 7 2)))",
                      NULL, out, sizeof out);
  CHECK(st == JITI_OK);
  CHECK_STR(out, "(10 3)");
  CHECK(s->calls == 1);
  CHECK_STR(s->type, "INTERACTIVE-INTERRUPT");
  CHECK_STR(s->report, "Interactive interrupt.");
  CHECK_STR(s->first_restart, "CONTINUE");
  CHECK_STR(s->first_report, "Continue the interrupted computation.");
  CHECK_STR(s->value, "(:I 4)");   /* stopped at the step after the request */
  CHECK(!jiti_interrupt_pending(S));
}

/* values of the form under way survive the pause (the step may be inside
** a call whose caller set them) */
static void test_values(jiti_State *S, Seen *s) {
  char out[256];
  memset(s, 0, sizeof *s);
  s->repair = "(values 1 2 3 4)";
  jiti_allow_interrupt(S);
  CHECK(ev(S, "(multiple-value-list (floor (progn (interrupt-me) (funcall (lambda () 17))) 5))", NULL, out, sizeof out) == JITI_OK);
  CHECK_STR(out, "(3 2)");
  CHECK(s->calls == 1);
}

/* not allowed: no pause; it waits, pending, until a call that allows it */
static void test_not_allowed(jiti_State *S, Seen *s) {
  char out[256];
  memset(s, 0, sizeof *s);
  CHECK(ev(S, "(let ((n 0)) (interrupt-me) (dotimes (k 100) (incf n)) n)", NULL, out, sizeof out) == JITI_OK);
  CHECK_STR(out, "100");
  CHECK(s->calls == 0);
  CHECK(jiti_interrupt_pending(S));
  jiti_allow_interrupt(S);
  CHECK(ev(S, "(let ((n 0)) (dotimes (k 100) (incf n)) n)", NULL, out, sizeof out) == JITI_OK);
  CHECK(s->calls == 1);
  CHECK(!jiti_interrupt_pending(S));
  /* cleared: nothing happens */
  CHECK(ev(S, "(interrupt-me)", NULL, out, sizeof out) == JITI_OK);
  jiti_interrupt_clear(S);
  jiti_allow_interrupt(S);
  CHECK(ev(S, "(let ((n 0)) (dotimes (k 100) (incf n)) n)", NULL, out, sizeof out) == JITI_OK);
  CHECK(s->calls == 1);
}

/* a nested call (a repair the host did not allow) lets it wait; C-side
** work (a long LENGTH) does too; abort ends the call */
static void test_nested_and_abort(jiti_State *S, Seen *s) {
  char out[256];
  memset(s, 0, sizeof *s);
  s->abort = 1;
  jiti_allow_interrupt(S);
  jiti_Status st = ev(S, "(let ((l (make-list 100000))) (interrupt-me) (length l) (loop))", NULL, out, sizeof out);
  CHECK(st == JITI_ABORTED);
  CHECK(s->calls == 1);
}

/* the fuel goes on being counted across the pause */
static void test_fuel(jiti_State *S, Seen *s) {
  char out[256];
  memset(s, 0, sizeof *s);
  jiti_Limits lim;
  jiti_get_limits(S, &lim);
  lim.fuel = 20000;
  jiti_allow_interrupt(S);
  CHECK(ev(S, "(progn (interrupt-me) (loop))", &lim, out, sizeof out) == JITI_LIMIT);
  CHECK_STR(out, "FUEL-EXHAUSTED");
  CHECK(s->calls == 1);
}

/* ------------------------------------------------ inside a GMP product */

static jiti_State *signal_state;
static volatile sig_atomic_t cancel_instead;

static void on_alarm(int sig) {
  (void)sig;
  if (cancel_instead) jiti_cancel_async(signal_state);
  else jiti_interrupt_async(signal_state);
}

static void alarm_in(long ms) {
  struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

static void test_gmp(jiti_State *S, Seen *s) {
  char out[256];
  signal_state = S;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  jiti_Limits lim;
  jiti_get_limits(S, &lim);
  lim.fuel = 0;
  lim.heap = 0;
  CHECK(ev(S, "(progn (defvar *a* (1- (ash 1 60000000))) (defvar *b* (+ *a* 12345)) t)", &lim, out, sizeof out) == JITI_OK);
  /* the product takes about a second: the alarm comes inside it */
  memset(s, 0, sizeof *s);
  s->repair = "(+ 1 2)";
  cancel_instead = 0;
  alarm_in(30);
  jiti_allow_interrupt(S);
  CHECK(ev(S, "(let ((p (* *a* *b*))) (list (integer-length p) (= (floor p *b*) *a*) (mod p 1000003)))", &lim, out,
           sizeof out) == JITI_OK);
  CHECK(s->calls == 1);
  CHECK_STR(s->type, "INTERACTIVE-INTERRUPT");
  CHECK_STR(s->value, "3");
  CHECK(strstr(s->backtrace, ": (* ") != NULL);   /* taken inside the product */
  char want[256];
  CHECK(ev(S, "(let ((p (* *a* *b*))) (list (integer-length p) (= (floor p *b*) *a*) (mod p 1000003)))", &lim, want,
           sizeof want) == JITI_OK);
  CHECK_STR(out, want);
  if (strncmp(out, "(120000001 T ", 13)) fprintf(stderr, "product: %s\n", out);
  CHECK(strncmp(out, "(120000001 T ", 13) == 0);
  /* a cancel inside it aborts at once */
  memset(s, 0, sizeof *s);
  cancel_instead = 1;
  alarm_in(30);
  CHECK(ev(S, "(integer-length (* *a* *b*))", &lim, out, sizeof out) == JITI_ABORTED);
  CHECK(s->calls == 0);
  /* an EXPT: interrupted and continued */
  memset(s, 0, sizeof *s);
  cancel_instead = 0;
  alarm_in(30);
  jiti_allow_interrupt(S);
  CHECK(ev(S, "(integer-length (expt 7 30000000))", &lim, out, sizeof out) == JITI_OK);
  CHECK_STR(out, "84220648");
  CHECK(s->calls == 1);
  CHECK(strstr(s->backtrace, ": (EXPT 7 30000000)") != NULL);
  alarm_in(0);
  signal(SIGALRM, SIG_DFL);
  CHECK(ev(S, "(progn (makunbound '*a*) (makunbound '*b*) t)", NULL, out, sizeof out) == JITI_OK);
}

int main(void) {
  jiti_State *S = jiti_open();
  CHECK(S != NULL);
  if (!S) return CHECK_DONE();
  Seen s;
  jiti_set_debugger_hook(S, hook, &s);
  CHECK(jiti_register(S, "INTERRUPT-ME", interrupt_me, NULL, 0, 0, "ask for an interrupt") == JITI_OK);
  test_continue(S, &s);
  test_values(S, &s);
  test_not_allowed(S, &s);
  test_nested_and_abort(S, &s);
  test_fuel(S, &s);
  test_gmp(S, &s);
  jiti_close(S);
  return CHECK_DONE();
}
