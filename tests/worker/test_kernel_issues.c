/* test_kernel_issues.c — minimal reproductions of kernel problems found
** while building the transaction layer (worker/).  They use only the public
** kernel API; each check fails until the kernel is fixed.
**
** 1. jiti_invariants_check on a world with no invariants, and
**    jiti_export_changed on a checkpoint with no changes, call
**    qsort(NULL, 0, ...) (kernel/world.c check_body, export_items): UBSan
**    aborts the sanitizer build ("null pointer passed as argument 1").
**    (Fixed in the working tree meanwhile; kept as a regression check.)
** 2. A form evaluated from the debugger hook that transfers control to a
**    catch (or restart) of the paused computation unwinds through the hook
**    without the hook returning: the paused computation simply continues,
**    and the kernel's pause depth is never decremented, so every later
**    pause reports depth 2, 3, ...  The pause's malloc'd report, backtrace
**    and restart table (kernel/cond.c jt_invoke_debugger) leak too (LSan). */
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

static int nothing(void *ud, jiti_EntryKind k, const char *n, const unsigned char *b, size_t l) {
  (void)ud; (void)k; (void)n; (void)b; (void)l;
  return 0;
}

static int depth_seen[4], calls;
static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud) {
  (void)ud;
  d->action = JITI_DECIDE_ABORT;
  if (calls < 4) depth_seen[calls] = p->depth;
  if (calls++ == 0) {
    jiti_Result r;
    jiti_eval_string(S, "(throw 'out :escaped)", 21, &r);  /* never returns */
    jiti_result_free(&r);
  }
}

int main(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  char err[256];
  /* 1 */
  CHECK(jiti_invariants_check(S, NULL, err, sizeof err) == JITI_OK);
  jiti_checkpoint(S);
  CHECK(jiti_export_changed(S, nothing, NULL, err, sizeof err) == JITI_OK);
  jiti_restore(S);
  /* 2 */
  jiti_set_debugger_hook(S, hook, NULL);
  jiti_Result r;
  jiti_eval_string(S, "(catch 'out (error \"one\"))", 26, &r);
  jiti_result_free(&r);
  jiti_eval_string(S, "(error \"two\")", 13, &r);
  jiti_result_free(&r);
  CHECK(calls == 2);
  CHECK(depth_seen[0] == 1);
  CHECK(depth_seen[1] == 1);   /* fails: 2 (the escaped pause never ended) */
  jiti_close(S);
  return CHECK_DONE();
}
