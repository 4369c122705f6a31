/* test_ffi.c — foreign functions: the grant, declaring, every type's
** conversion and range checks at its limits, counts, fuel, pointers,
** redefinition across a restored checkpoint; declarations as entries of the
** world (recorded, replaced, exported, imported with and without their
** library, repaired by a later grant, refused when malformed); all against
** tests/c/ffi_probe.c built as a shared library (PROBE_LIB). */
#define _GNU_SOURCE  /* memmem */
#include <stdlib.h>
#include <string.h>
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

/* ---- the world's entries, gathered by an export */

typedef struct Ent { int kind; char name[128]; unsigned char bytes[1024]; size_t len; } Ent;
typedef struct Ents { Ent v[64]; int n; } Ents;

static int gather(void *ud, jiti_EntryKind kind, const char *name, const unsigned char *bytes, size_t len) {
  Ents *e = ud;
  if (e->n == 64 || len > sizeof e->v[0].bytes) return 1;
  Ent *x = &e->v[e->n++];
  x->kind = (int)kind;
  snprintf(x->name, sizeof x->name, "%s", name);
  memcpy(x->bytes, bytes, len);
  x->len = len;
  return 0;
}

static Ents ents;
static void export_all(jiti_State *S) {
  char err[256];
  ents.n = 0;
  CHECK(jiti_export_all(S, gather, &ents, err, sizeof err) == JITI_OK);
}

/* The text of the entry (kind, name), or NULL (a static buffer). */
static const char *entry(jiti_State *S, jiti_EntryKind kind, const char *name) {
  static char text[2048];
  for (int i = 0; i < ents.n; i++)
    if (ents.v[i].kind == (int)kind && !strcmp(ents.v[i].name, name)) {
      char *t = jiti_entry_text(S, ents.v[i].bytes, ents.v[i].len);
      snprintf(text, sizeof text, "%s", t ? t : "?");
      free(t);
      return text;
    }
  return NULL;
}

/* Import every gathered entry into T; the status of the first failure. */
static jiti_Status import_all(jiti_State *T, char *err, size_t errlen) {
  for (int i = 0; i < ents.n; i++) {
    jiti_Status st = jiti_import_entry(T, (jiti_EntryKind)ents.v[i].kind, ents.v[i].name, ents.v[i].bytes,
                                       ents.v[i].len, err, errlen);
    if (st != JITI_OK) return st;
  }
  return jiti_import_done(T, err, errlen);
}

typedef struct Unav { int n; char text[16384]; } Unav;
static void note_unavailable(void *ud, const char *name, const char *library, const char *symbol,
                             const char *why) {
  Unav *u = ud;
  size_t at = strlen(u->text);
  snprintf(u->text + at, sizeof u->text - at, "%s|%s|%s|%s\n", name, library, symbol, why);
  u->n++;
}

/* The world's foreign entries: recorded, replaced, exported and imported. */
static void test_entries(jiti_State *S) {
  char err[512];
  /* the declaration is recorded in one canonical spelling */
  CHECK(ev(S, "(define-foreign p-twice \"" PROBE_LIB "\" \"probe_scale\" :DOUBLE (:double :double))")[0] != '!');
  export_all(S);
  CHECK_STR(entry(S, JITI_ENTRY_FOREIGN, "P-TWICE"),
            "(DEFINE-FOREIGN P-TWICE \"" PROBE_LIB "\" \"probe_scale\" :DOUBLE (:DOUBLE :DOUBLE))");
  CHECK(entry(S, JITI_ENTRY_FUNCTION, "P-TWICE") == NULL);
  CHECK(jiti_world_count(S, JITI_ENTRY_FOREIGN) > 1);
  CHECK_STR(jiti_entry_kind_name(JITI_ENTRY_FOREIGN), "foreign");
  CHECK(jiti_entry_kind_parse("foreign") == JITI_ENTRY_FOREIGN);
  /* a defun replaces it, and a declaration replaces the defun */
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(progn (defun p-twice (a b) (list a b)) (p-twice 1 2))"), "(1 2)");
  export_all(S);
  CHECK(entry(S, JITI_ENTRY_FOREIGN, "P-TWICE") == NULL);
  CHECK(entry(S, JITI_ENTRY_FUNCTION, "P-TWICE") != NULL);
  CHECK(ev(S, DECL("p-twice", "probe_add", ":int", "(:int :int)"))[0] != '!');
  export_all(S);
  CHECK(entry(S, JITI_ENTRY_FUNCTION, "P-TWICE") == NULL);
  CHECK(strstr(entry(S, JITI_ENTRY_FOREIGN, "P-TWICE"), "probe_add") != NULL);
  /* a macro of that name and a generic function give way too */
  CHECK(ev(S, "(defmacro p-mac (x) x)")[0] != '!');
  CHECK(ev(S, DECL("p-mac", "probe_not", ":bool", "(:bool)"))[0] != '!');
  CHECK(ev(S, "(defgeneric p-gen (x))")[0] != '!');
  CHECK(ev(S, DECL("p-gen", "probe_not", ":bool", "(:bool)"))[0] != '!');
  CHECK_STR(ev(S, "(list (p-mac nil) (p-gen t))"), "(T NIL)");
  export_all(S);
  CHECK(entry(S, JITI_ENTRY_MACRO, "P-MAC") == NULL);
  CHECK(entry(S, JITI_ENTRY_GENERIC, "P-GEN") == NULL);
  CHECK(entry(S, JITI_ENTRY_FOREIGN, "P-GEN") != NULL);
  CHECK(strstr(ev(S, "(defgeneric p-gen (x))"), "ordinary function") != NULL);
  CHECK(ev(S, "(fmakunbound 'p-mac)")[0] != '!');
  CHECK(ev(S, "(fmakunbound 'p-gen)")[0] != '!');
  export_all(S);
  CHECK(entry(S, JITI_ENTRY_FOREIGN, "P-GEN") == NULL);
  CHECK(entry(S, JITI_ENTRY_FOREIGN, "P-MAC") == NULL);
  jiti_restore(S);
  export_all(S);
  CHECK(strstr(entry(S, JITI_ENTRY_FOREIGN, "P-TWICE"), "probe_scale") != NULL);
  CHECK(entry(S, JITI_ENTRY_FOREIGN, "P-MAC") == NULL);
  CHECK_STR(ev(S, "(p-twice 2 3)"), "6.0d0");

  /* a world rebuilt where the library is granted: every declaration works */
  export_all(S);
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  CHECK(jiti_foreign_grant(T, PROBE_LIB, err, sizeof err) == JITI_OK);
  CHECK(import_all(T, err, sizeof err) == JITI_OK);
  CHECK(jiti_foreign_unavailable(T, NULL, NULL) == 0);
  CHECK_STR(ev(T, "(list (p-twice 2 3) (p-add 2 3) (p-echo \"x\"))"), "(6.0d0 5 \"x\")");
  jiti_close(T);

  /* ... and where it is not: the rest of the world comes back, the
  ** declarations are there but unavailable, naming library, symbol and the
  ** option; granting the library then makes them work */
  T = jiti_open();
  jiti_world_enable(T);
  CHECK(import_all(T, err, sizeof err) == JITI_OK);
  static Unav u;
  size_t nforeign = jiti_world_count(T, JITI_ENTRY_FOREIGN);
  CHECK(nforeign > 10);
  CHECK(jiti_foreign_unavailable(T, note_unavailable, &u) == nforeign);
  CHECK(u.n == (int)nforeign);
  CHECK(strstr(u.text, "P-TWICE|" PROBE_LIB "|probe_scale|the library " PROBE_LIB " is not granted") != NULL);
  CHECK(strstr(u.text, "--allow-foreign " PROBE_LIB) != NULL);
  const char *m = ev(T, "(p-twice 2 3)");
  CHECK(strstr(m, "P-TWICE") && strstr(m, "probe_scale") && strstr(m, PROBE_LIB) && strstr(m, "--allow-foreign"));
  CHECK(strstr(ev(T, DECL("p-new", "probe_add", ":int", "(:int :int)")), "not granted") != NULL);
  export_all(T);  /* an unavailable declaration is still part of the world */
  CHECK(entry(T, JITI_ENTRY_FOREIGN, "P-TWICE") != NULL);
  /* a grant that fails is remembered in the reason */
  CHECK(jiti_foreign_grant(T, "/no/such/libjitiprobe.so", err, sizeof err) == JITI_ERROR);
  CHECK(strstr(ev(T, "(define-foreign p-x \"/no/such/libjitiprobe.so\" \"f\" :int ())"), "cannot be opened") != NULL);
  CHECK(jiti_foreign_grant(T, PROBE_LIB, err, sizeof err) == JITI_OK);
  CHECK(jiti_foreign_unavailable(T, NULL, NULL) == 0);
  CHECK_STR(ev(T, "(list (p-twice 2 3) (p-add 2 3))"), "(6.0d0 5)");
  jiti_close(T);

  /* a symbol gone from the library (the stored form of P-ADD, its symbol
  ** renamed in place: same length, so still a valid encoding) */
  T = jiti_open();
  jiti_world_enable(T);
  CHECK(jiti_foreign_grant(T, PROBE_LIB, err, sizeof err) == JITI_OK);
  Ent *add = NULL;
  for (int i = 0; i < ents.n; i++)
    if (ents.v[i].kind == JITI_ENTRY_FOREIGN && !strcmp(ents.v[i].name, "P-ADD")) add = &ents.v[i];
  CHECK(add != NULL);
  if (add) {
    Ent gone = *add;
    unsigned char *at = memmem(gone.bytes, gone.len, "probe_add", 9);
    CHECK(at != NULL);
    if (at) memcpy(at, "probe_zzz", 9);
    CHECK(jiti_import_entry(T, JITI_ENTRY_FOREIGN, "P-ADD", gone.bytes, gone.len, err, sizeof err) == JITI_OK);
    u.n = 0;
    u.text[0] = 0;
    CHECK(jiti_foreign_unavailable(T, note_unavailable, &u) == 1);
    CHECK(strstr(u.text, "P-ADD|" PROBE_LIB "|probe_zzz|the library " PROBE_LIB " has no symbol probe_zzz") != NULL);
    m = ev(T, "(p-add 1 2)");
    CHECK(strstr(m, "unavailable") && strstr(m, "probe_zzz"));
    /* a later declaration of the name replaces the unavailable one */
    CHECK(ev(T, DECL("p-add", "probe_add", ":int", "(:int :int)"))[0] != '!');
    CHECK(jiti_foreign_unavailable(T, NULL, NULL) == 0);
    CHECK_STR(ev(T, "(p-add 1 2)"), "3");
    /* stored forms that are not a declaration of that very name are refused */
    CHECK(jiti_import_entry(T, JITI_ENTRY_FOREIGN, "P-OTHER", add->bytes, add->len, err, sizeof err) == JITI_ERROR);
    CHECK(strstr(err, "DEFINE-FOREIGN") != NULL);
    Ent f = *add;
    at = memmem(f.bytes, f.len, "INT", 3);  /* :INT -> :INX, not a foreign type */
    if (at) at[2] = 'X';
    CHECK(jiti_import_entry(T, JITI_ENTRY_FOREIGN, "P-ADD", f.bytes, f.len, err, sizeof err) == JITI_ERROR);
    CHECK(strstr(err, "not a foreign") != NULL);
  }
  for (int i = 0; i < ents.n; i++)  /* a defun stored as a foreign entry */
    if (ents.v[i].kind == JITI_ENTRY_FUNCTION)
      CHECK(jiti_import_entry(T, JITI_ENTRY_FOREIGN, ents.v[i].name, ents.v[i].bytes, ents.v[i].len, err,
                              sizeof err) == JITI_ERROR);
  jiti_close(T);
}

/* Every type at the ends of its range, through identity functions. */
static void test_limits(jiti_State *S) {
  const char *decls[] = {
    DECL("id-int", "probe_id_int", ":int", "(:int)"), DECL("id-long", "probe_id_long", ":long", "(:long)"),
    DECL("id-i64", "probe_id_i64", ":int64", "(:int64)"), DECL("id-u64", "probe_id_u64", ":uint64", "(:uint64)"),
    DECL("id-size", "probe_id_size", ":size", "(:size)"), DECL("id-double", "probe_id_double", ":double", "(:double)"),
    DECL("id-float", "probe_id_float", ":float", "(:float)"), DECL("id-bool", "probe_id_bool", ":bool", "(:bool)"),
    DECL("bad-utf8", "probe_bad_utf8", ":string", "()"),
  };
  for (size_t i = 0; i < sizeof decls / sizeof decls[0]; i++) CHECK(ev(S, decls[i])[0] != '!');
  struct { const char *src, *want; } ok[] = {
    {"(list (id-int 2147483647) (id-int -2147483648) (id-int 0))", "(2147483647 -2147483648 0)"},
    {"(list (id-long (- (expt 2 63) 1)) (id-long (- (expt 2 63))))", "(9223372036854775807 -9223372036854775808)"},
    {"(list (id-i64 (- (expt 2 63) 1)) (id-i64 (- (expt 2 63))))", "(9223372036854775807 -9223372036854775808)"},
    {"(list (id-u64 (- (expt 2 64) 1)) (id-u64 0) (id-u64 (expt 2 63)))",
     "(18446744073709551615 0 9223372036854775808)"},
    {"(list (id-size (- (expt 2 64) 1)) (id-size 0))", "(18446744073709551615 0)"},
    {"(list (id-double most-positive-double-float) (id-double least-positive-double-float))",
     "(1.7976931348623157d308 5.0d-324)"},
    {"(= (id-double most-negative-double-float) most-negative-double-float)", "T"},
    {"(id-double 1/3)", "0.3333333333333333d0"},
    {"(list (type-of (id-double 1)) (type-of (id-float 1)) (id-float 1/3))", "(DOUBLE-FLOAT SINGLE-FLOAT 0.33333334)"},
    {"(list (= (id-float 3.4028234663852886d38) 3.4028234663852886d38) (id-float -0.5))", "(T -0.5)"},
    {"(list (id-bool nil) (id-bool t) (id-bool 0) (id-bool \"\"))", "(NIL T T T)"},
    {"(list (p-size \"\") (p-echo \"\") (length (p-echo (make-string 100000 :initial-element #\\a))))",
     "(0 \"\" 100000)"},
    {"(p-echo (coerce (list (code-char 955) (code-char 128512)) 'string))", "\"\u03bb\U0001f600\""},
    {"(length (bad-utf8))", "4"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    const char *got = ev(S, ok[i].src);
    if (strcmp(got, ok[i].want)) fprintf(stderr, "%s -> %s\n", ok[i].src, got);
    CHECK_STR(got, ok[i].want);
  }
  struct { const char *src, *want; } bad[] = {
    {"(id-int 2147483648)", "TYPE-ERROR"}, {"(id-int -2147483649)", "TYPE-ERROR"},
    {"(id-long (expt 2 63))", "TYPE-ERROR"}, {"(id-long (- -1 (expt 2 63)))", "TYPE-ERROR"},
    {"(id-i64 (- -1 (expt 2 63)))", "TYPE-ERROR"}, {"(id-u64 (expt 2 64))", "TYPE-ERROR"},
    {"(id-size -1)", "TYPE-ERROR"}, {"(id-size (expt 2 64))", "TYPE-ERROR"}, {"(id-size 1.0)", "TYPE-ERROR"},
    {"(id-float 3.5d38)", "TYPE-ERROR"}, {"(id-float -3.5d38)", "TYPE-ERROR"}, {"(id-double #\\a)", "TYPE-ERROR"},
    {"(id-int nil)", "TYPE-ERROR"}, {"(p-echo #\\a)", "TYPE-ERROR"}, {"(p-echo (coerce (list #\\a (code-char 0)) 'string))", "SIMPLE-ERROR"},
    {"(id-int)", "PROGRAM-ERROR"}, {"(id-bool 1 2)", "PROGRAM-ERROR"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ev(S, bad[i].src);
    if (strncmp(out + 1, bad[i].want, strlen(bad[i].want)) != 0) fprintf(stderr, "%s -> %s\n", bad[i].src, out);
    CHECK(strncmp(out + 1, bad[i].want, strlen(bad[i].want)) == 0);
  }
  CHECK_STR(ev(S, "(handler-case (id-u64 -1) (type-error (c) (type-error-expected-type c)))"), "(UNSIGNED-BYTE 64)");
  CHECK_STR(ev(S, "(handler-case (id-long (expt 2 63)) (type-error (c) (type-error-expected-type c)))"),
            "(SIGNED-BYTE 64)");
}

/* A grant is exactly its library: dlsym on libm's handle also finds libc's
** functions (libm depends on libc), and those are refused, when declared
** and when a stored declaration is imported; libm's own functions work, a
** data symbol is no function, and a library granted under its own name is
** named in the reason. */
static void test_grant_is_library(void) {
  char err[512];
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(jiti_foreign_grant(S, "libm.so.6", err, sizeof err) == JITI_OK);
  CHECK_STR(ev(S, "(progn (define-foreign m-cos \"libm.so.6\" \"cos\" :double (:double)) (m-cos 0))"), "1.0d0");
  CHECK_STR(ev(S, "(progn (define-foreign m-ldexp \"libm.so.6\" \"ldexp\" :double (:double :int)) (m-ldexp 1 3))"),
            "8.0d0");
  const char *want = "!PROGRAM-ERROR: define-foreign: getpid is not defined in libm.so.6 (it comes from libc.so.6, "
                     "which is not granted)";
  CHECK_STR(ev(S, "(define-foreign m-getpid \"libm.so.6\" \"getpid\" :int ())"), want);
  CHECK_STR(ev(S, "(fboundp 'm-getpid)"), "NIL");
  for (const char *const *sym = (const char *const[]){"system", "open", "write", "malloc", "syscall", "getenv", NULL};
       *sym; sym++) {
    char src[200];
    snprintf(src, sizeof src, "(define-foreign m-x \"libm.so.6\" \"%s\" :int ())", *sym);
    const char *got = ev(S, src);
    if (!strstr(got, "is not defined in libm.so.6 (it comes from libc.so.6")) fprintf(stderr, "%s -> %s\n", *sym, got);
    CHECK(strstr(got, "is not defined in libm.so.6 (it comes from libc.so.6, which is not granted)") != NULL);
  }
  CHECK(strstr(ev(S, "(define-foreign m-sg \"libm.so.6\" \"signgam\" :int ())"), "signgam of libm.so.6 is not a function") != NULL);
  /* libc granted too: the reason names it as granted, the declaration
  ** must still name it */
  CHECK(jiti_foreign_grant(S, "libc.so.6", err, sizeof err) == JITI_OK);
  CHECK(strstr(ev(S, "(define-foreign m-getpid \"libm.so.6\" \"getpid\" :int ())"),
               "it comes from libc.so.6, granted as libc.so.6: name that library in the declaration") != NULL);
  CHECK(ev(S, "(define-foreign m-getpid \"libc.so.6\" \"getpid\" :int ())")[0] != '!');
  CHECK(atoi(ev(S, "(m-getpid)")) > 0);
  /* a stored declaration of libc's getpid in libm (the entry of the one
  ** above with the library renamed in place, same length): imported
  ** where libm alone is granted, it is unavailable and says why */
  export_all(S);
  Ent *e = NULL;
  for (int i = 0; i < ents.n; i++)
    if (ents.v[i].kind == JITI_ENTRY_FOREIGN && !strcmp(ents.v[i].name, "M-GETPID")) e = &ents.v[i];
  CHECK(e != NULL);
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  CHECK(jiti_foreign_grant(T, "libm.so.6", err, sizeof err) == JITI_OK);
  if (e) {
    unsigned char *at = memmem(e->bytes, e->len, "libc.so.6", 9);
    CHECK(at != NULL);
    if (at) memcpy(at, "libm.so.6", 9);
    CHECK(jiti_import_entry(T, JITI_ENTRY_FOREIGN, "M-GETPID", e->bytes, e->len, err, sizeof err) == JITI_OK);
    Unav u = {0};
    CHECK(jiti_foreign_unavailable(T, note_unavailable, &u) == 1);
    CHECK_STR(u.text, "M-GETPID|libm.so.6|getpid|getpid is not defined in libm.so.6 (it comes from libc.so.6, which "
                      "is not granted)\n");
    const char *m = ev(T, "(m-getpid)");
    CHECK(strstr(m, "unavailable: getpid is not defined in libm.so.6") != NULL);
  }
  jiti_close(T);
  jiti_close(S);
}

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
  CHECK_STR(ev(S, "(p-scale 1.5 2)"), "3.0d0");
  CHECK_STR(ev(S, "(p-scale 1/4 4)"), "1.0d0");
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
  /* pointers cannot be forged or stored, and print without their address */
  CHECK(strstr(ev(S, "(world-put :p (p-box 1))"), "not storable") != NULL);
  CHECK_STR(ev(S, "(prin1-to-string (p-box 1))"), "\"#<FOREIGN :POINTER>\"");
  CHECK_STR(ev(S, "(format nil \"~a ~s\" (p-box 1) (list (p-box 2)))"), "\"#<FOREIGN :POINTER> (#<FOREIGN :POINTER>)\"");
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
  CHECK_STR(ev(S, "(p-add 2 3)"), "6.0d0");
  jiti_restore(S);
  CHECK_STR(ev(S, "(p-add 2 3)"), "5");
  test_limits(S);
  test_entries(S);
  test_grant_is_library();
  jiti_close(S);
  return CHECK_DONE();
}
