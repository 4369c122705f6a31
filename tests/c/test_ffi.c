/* test_ffi.c — foreign functions: the grant, declaring, every type's
** conversion and range checks, counts, fuel, pointers, redefinition across a
** restored checkpoint; all against tests/c/ffi_probe.c built as a shared
** library (PROBE_LIB). */
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

static char out[4096];
static const char *ev(jiti_State *S, const char *src) {
  jiti_Result r;
  jiti_Status st = jiti_eval_string(S, src, strlen(src), &r);
  if (st == JITI_OK) snprintf(out, sizeof out, "%s", r.value);
  else snprintf(out, sizeof out, "!%s: %s", r.condition_type, r.message);
  jiti_result_free(&r);
  return out;
}

#define DECL(name, sym, ret, args) "(define-foreign " name " \"" PROBE_LIB "\" \"" sym "\" " ret " " args ")"

int main(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  char err[512];
  /* not granted: refused, naming the option that grants it */
  CHECK(strstr(ev(S, DECL("p-add", "probe_add", ":int", "(:int :int)")), "--allow-foreign") != NULL);
  CHECK(strstr(out, "not granted") != NULL);
  CHECK_STR(ev(S, "(fboundp 'p-add)"), "NIL");
  CHECK(jiti_foreign_grant(S, "/no/such/libzz.so", err, sizeof err) == JITI_ERROR);
  CHECK(strstr(err, "libzz") != NULL);
  CHECK(jiti_foreign_grant(S, "", err, sizeof err) == JITI_BADARG);
  CHECK(jiti_foreign_grant(S, PROBE_LIB, err, sizeof err) == JITI_OK);
  CHECK(jiti_foreign_grant(S, PROBE_LIB, err, sizeof err) == JITI_OK);  /* again: nothing new */
  CHECK(jiti_foreign_grant_count(S) == 1);
  CHECK_STR(jiti_foreign_grant_name(S, 0), PROBE_LIB);
  CHECK(jiti_foreign_grant_name(S, 1) == NULL);

  /* every type */
  const char *decls[] = {
    DECL("p-add", "probe_add", ":int", "(:int :int)"), DECL("p-long", "probe_long", ":long", "(:long)"),
    DECL("p-i64", "probe_i64", ":int64", "(:int64)"), DECL("p-u64", "probe_u64", ":uint64", "(:uint64)"),
    DECL("p-size", "probe_size", ":size", "(:string)"), DECL("p-scale", "probe_scale", ":double", "(:double :double)"),
    DECL("p-half", "probe_half", ":float", "(:float)"), DECL("p-not", "probe_not", ":bool", "(:bool)"),
    DECL("p-echo", "probe_echo", ":string", "(:string)"), DECL("p-null", "probe_null", ":string", "()"),
    DECL("p-bump", "probe_bump", ":void", "()"), DECL("p-count", "probe_count", ":int", "()"),
    DECL("p-box", "probe_box", ":pointer", "(:int)"), DECL("p-unbox", "probe_unbox", ":int", "(:pointer)"),
  };
  for (size_t i = 0; i < sizeof decls / sizeof decls[0]; i++) CHECK(ev(S, decls[i])[0] != '!');
  CHECK_STR(ev(S, "(p-add 2 40)"), "42");
  CHECK_STR(ev(S, "(p-add -2147483648 0)"), "-2147483648");
  CHECK_STR(ev(S, "(p-long 21)"), "42");
  CHECK_STR(ev(S, "(p-i64 (- (expt 2 63) 1))"), "9223372036854775806");
  CHECK_STR(ev(S, "(p-u64 (- (expt 2 64) 2))"), "18446744073709551615");
  CHECK_STR(ev(S, "(p-size \"héllo\")"), "6");  /* UTF-8 bytes */
  CHECK_STR(ev(S, "(p-size nil)"), "0");
  CHECK_STR(ev(S, "(p-scale 1.5 2)"), "3.0");
  CHECK_STR(ev(S, "(p-scale 1/4 4)"), "1.0");
  CHECK_STR(ev(S, "(p-half 3)"), "1.5");
  CHECK_STR(ev(S, "(list (p-not nil) (p-not t) (p-not 0))"), "(T NIL NIL)");
  CHECK_STR(ev(S, "(p-echo \"héllo, wörld\")"), "\"héllo, wörld\"");
  CHECK_STR(ev(S, "(p-null)"), "NIL");
  CHECK_STR(ev(S, "(progn (p-bump) (p-bump) (p-count))"), "2");
  CHECK_STR(ev(S, "(p-bump)"), "NIL");
  CHECK_STR(ev(S, "(let ((b (p-box 7))) (list (p-unbox b) (p-unbox nil)))"), "(7 -1)");

  /* wrong types, out of range, wrong counts: conditions, never a crash */
  struct { const char *src, *want; } bad[] = {
    {"(p-add 1 2147483648)", "TYPE-ERROR"}, {"(p-add 1 -2147483649)", "TYPE-ERROR"},
    {"(p-add 1 1.5)", "TYPE-ERROR"}, {"(p-add \"1\" 2)", "TYPE-ERROR"},
    {"(p-i64 (expt 2 63))", "TYPE-ERROR"}, {"(p-u64 -1)", "TYPE-ERROR"}, {"(p-u64 (expt 2 64))", "TYPE-ERROR"},
    {"(p-half 1d300)", "TYPE-ERROR"}, {"(p-scale 'x 1)", "TYPE-ERROR"}, {"(p-size 5)", "TYPE-ERROR"},
    {"(p-unbox 12345)", "TYPE-ERROR"}, {"(p-unbox \"ptr\")", "TYPE-ERROR"},
    {"(p-add 1)", "PROGRAM-ERROR"}, {"(p-add 1 2 3)", "PROGRAM-ERROR"}, {"(p-count 1)", "PROGRAM-ERROR"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ev(S, bad[i].src);
    if (strncmp(out + 1, bad[i].want, strlen(bad[i].want)) != 0) fprintf(stderr, "%s -> %s\n", bad[i].src, out);
    CHECK(strncmp(out + 1, bad[i].want, strlen(bad[i].want)) == 0);
  }
  CHECK_STR(ev(S, "(handler-case (p-add 1 (expt 2 40)) (type-error (c) (type-error-expected-type c)))"),
            "(SIGNED-BYTE 32)");
  /* bad declarations */
  CHECK(strstr(ev(S, DECL("p-x", "no_such_symbol", ":int", "()")), "no symbol no_such_symbol") != NULL);
  CHECK(strstr(ev(S, DECL("p-x", "probe_add", ":integer", "(:int)")), "not a foreign result type") != NULL);
  CHECK(strstr(ev(S, DECL("p-x", "probe_add", ":int", "(:void)")), "not a foreign argument type") != NULL);
  CHECK(strstr(ev(S, DECL("car", "probe_add", ":int", "(:int :int)")), "built-in") != NULL);
  CHECK(strstr(ev(S, "(define-foreign p-x \"lib\")"), "define-foreign") != NULL);
  CHECK(strstr(ev(S, "(%define-foreign '(define-foreign p-x 1 2 3 4))"), "undefined") != NULL);
  /* pointers cannot be forged or stored */
  CHECK(strstr(ev(S, "(world-put :p (p-box 1))"), "not storable") != NULL);
  /* calls pay fuel like any built-in */
  jiti_Limits lim = {.fuel = 10000};
  jiti_Result r;
  const char *spin = "(loop (p-count))";
  CHECK(jiti_eval_limited(S, spin, strlen(spin), &lim, &r) == JITI_LIMIT);
  jiti_result_free(&r);
  /* a declaration replaced inside a checkpoint that is restored: the old
  ** one is back with its own types */
  jiti_checkpoint(S);
  CHECK(ev(S, DECL("p-add", "probe_scale", ":double", "(:double :double)"))[0] != '!');
  CHECK_STR(ev(S, "(p-add 2 3)"), "6.0");
  jiti_restore(S);
  CHECK_STR(ev(S, "(p-add 2 3)"), "5");
  jiti_close(S);
  return CHECK_DONE();
}
