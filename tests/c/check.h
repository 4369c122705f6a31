/* check.h — a tiny assertion helper for the C tests: every failing check
** names itself; main ends with CHECK_DONE(), which prints the summary line
** "N passed, N failed" and returns the exit status. */
#ifndef check_h
#define check_h
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond) do { \
    if (cond) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } \
  } while (0)

#define CHECK_STR(got, want) do { \
    const char *g_ = (got), *w_ = (want); \
    if (g_ && w_ && strcmp(g_, w_) == 0) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s is \"%s\", expected \"%s\"\n", \
                                   __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_); } \
  } while (0)

/* With jiti.h included first: evaluate `src` and return its printed value,
** or "!TYPE" for a failure (a static buffer, valid until the next call). */
#ifdef jiti_h
#include <stdlib.h>
__attribute__((unused)) static const char *check_eval(jiti_State *S, const char *src) {
  static char buf[8192];
  jiti_Result r;
  jiti_Status st = jiti_eval_string(S, src, strlen(src), &r);
  if (st == JITI_OK) snprintf(buf, sizeof buf, "%s", r.value);
  else snprintf(buf, sizeof buf, "!%s", r.condition_type ? r.condition_type : "?");
  jiti_result_free(&r);
  return buf;
}

/* The same with the condition's message: "!TYPE: message". */
__attribute__((unused)) static const char *check_eval_message(jiti_State *S, const char *src) {
  static char buf[16384];
  jiti_Result r;
  jiti_Status st = jiti_eval_string(S, src, strlen(src), &r);
  if (st == JITI_OK) snprintf(buf, sizeof buf, "%s", r.value);
  else snprintf(buf, sizeof buf, "!%s: %s", r.condition_type ? r.condition_type : "?", r.message ? r.message : "");
  jiti_result_free(&r);
  return buf;
}
#endif

#define CHECK_DONE() \
  (printf("%d passed, %d failed\n", check_passed, check_failed), check_failed ? 1 : 0)

#endif
