/* embed.c — a complete host program using libjiti (see kernel/jiti.h).
**
** It registers a C primitive, evaluates Lisp that calls it, runs code under
** a fuel limit, and handles an error in the debugger hook by choosing a
** restart, so the computation continues where it stopped. */
#include <stdio.h>
#include <string.h>
#include "jiti.h"

static jiti_Value c_celsius(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud;
  int64_t f;
  if (!jiti_tointeger(S, argv[0], &f)) jiti_error(S, "celsius: an integer is required");
  return jiti_integer(S, (f - 32) * 5 / 9);
}

/* On an unhandled error, pick the USE-VALUE restart with argument 0. */
static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud) {
  printf("paused: %s\n", p->report);
  for (int i = 0; i < p->nrestarts; i++)
    if (strcmp(p->restarts[i].name, "USE-VALUE") == 0) {
      d->action = JITI_DECIDE_RESTART;
      d->restart_id = p->restarts[i].id;
      d->args = "(list 0)";
      return;
    }
  d->action = JITI_DECIDE_ABORT;
}

static void show(jiti_State *S, const char *src) {
  jiti_Result r;
  if (jiti_eval_string(S, src, strlen(src), &r) == JITI_OK) printf("%s => %s\n", src, r.value);
  else printf("%s => error %s: %s\n", src, r.condition_type, r.message);
  jiti_result_free(&r);
}

int main(void) {
  jiti_State *S = jiti_open();
  if (!S) return 1;
  jiti_register(S, "celsius", c_celsius, NULL, 1, 1, "(celsius f) Fahrenheit to Celsius.");
  show(S, "(mapcar #'celsius '(32 212 98))");

  jiti_Limits lim = {.fuel = 100000};
  jiti_Result r;
  jiti_eval_limited(S, "(loop)", 6, &lim, &r);
  printf("(loop) under a fuel limit => %s\n", r.condition_type);
  jiti_result_free(&r);

  jiti_set_debugger_hook(S, hook, NULL);
  show(S, "(defun safe-div (a b) (restart-case (/ a b) (use-value (v) v)))");
  show(S, "(+ 1 (safe-div 10 0))");
  jiti_close(S);
  printf("embed: ok\n");
  return 0;
}
