/*
** fuzz_eval.c — libFuzzer harness for the reader and the evaluator: any
** bytes, read and evaluated as one transaction's source under small limits
** in a world, then restored.  What it finds is a crash, a sanitizer report,
** a hang past the limits, or a leak; a Lisp error is an ordinary outcome.
**
** One state serves every input: the checkpoint restores whatever an input
** changed (definitions included), so inputs do not see each other.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"

static jiti_State *S;

static void discard(void *ud, const char *s, size_t n) { (void)ud; (void)s; (void)n; }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  S = jiti_open();
  if (!S) abort();
  jiti_set_output(S, discard, NULL);
  jiti_world_enable(S);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A step may do up to 255 steps of C work besides (JT_TICK): 20,000
  ** bound an input to ~5 M conses, about 2 s in this instrumented build,
  ** well inside libFuzzer's 10 s slow-unit report. */
  jiti_Limits lim = {.fuel = 20000, .depth = 400, .heap = (uint64_t)64 << 20, .output = 65536};
  jiti_checkpoint(S);
  jiti_Result r;
  jiti_eval_limited(S, (const char *)data, size, &lim, &r);
  jiti_result_free(&r);
  jiti_restore(S);
  jiti_reset_io_syntax(S);
  return 0;
}
