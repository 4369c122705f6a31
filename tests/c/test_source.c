/* test_source.c — a definition's source as written, through the API:
**   - a top-level definition exports its text and place in front of its
**     canonical encoding (jiti_entry_source); one inside a PROGN, and one a
**     program builds and evaluates, have none; JITI_SOURCE_CANONICAL keeps
**     none;
**   - export -> import -> export is byte-identical with the text, and the
**     entry checks (jiti_entry_check, jiti_entry_verify) accept it;
**   - a variable's text goes once its value changes; a restored checkpoint
**     brings it back;
**   - a malformed prefix is refused by every call, without a crash;
**   - reader errors are placed with the origin's line and column. */
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

typedef struct Ent { int kind; char name[200]; unsigned char *bytes; size_t len; } Ent;
typedef struct Ents { Ent v[32]; int n; } Ents;

static int collect(void *ud, jiti_EntryKind kind, const char *name, const unsigned char *bytes, size_t len) {
  Ents *e = ud;
  if (e->n == 32 || !bytes) return 0;
  Ent *x = &e->v[e->n++];
  x->kind = kind;
  snprintf(x->name, sizeof x->name, "%s", name);
  x->bytes = malloc(len ? len : 1);
  memcpy(x->bytes, bytes, len);
  x->len = len;
  return 0;
}

static void ents_free(Ents *e) {
  for (int i = 0; i < e->n; i++) free(e->v[i].bytes);
  e->n = 0;
}

static const Ent *find(const Ents *e, int kind, const char *name) {
  for (int i = 0; i < e->n; i++)
    if (e->v[i].kind == kind && !strcmp(e->v[i].name, name)) return &e->v[i];
  return NULL;
}

static jiti_State *world(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  return S;
}

static void export_all(jiti_State *S, Ents *e) {
  char err[256];
  ents_free(e);
  CHECK(jiti_export_all(S, collect, e, err, sizeof err) == JITI_OK);
}

/* the text an entry carries, or "" (a static buffer) */
static const char *text_of(const Ent *x) {
  static char buf[1024];
  jiti_EntrySource src;
  buf[0] = 0;
  if (x && jiti_entry_source(x->bytes, x->len, &src, NULL) == 1)
    snprintf(buf, sizeof buf, "%.*s@%.*s:%ld:%ld", (int)src.len, src.text, (int)src.filelen,
             src.file ? src.file : "", src.line, src.column);
  return buf;
}

static const char *SRC =
    ";; header\n"
    "(defvar *rate* 5/100) ; five\n"
    "  (defun price (n)\n"
    "    ;; kept\n"
    "    (* n 'x))\n"
    "(progn (defun inner () 1))\n"
    "(eval (list 'defun 'built '() 2))\n";

static void test_export_import(void) {
  jiti_State *S = world();
  jiti_set_source_origin(S, "app.lisp", JITI_SOURCE_FILE, 10, 1);
  jiti_Result r;
  CHECK(jiti_eval_string(S, SRC, strlen(SRC), &r) == JITI_OK);
  jiti_result_free(&r);
  Ents e = {0};
  export_all(S, &e);
  CHECK_STR(text_of(find(&e, JITI_ENTRY_FUNCTION, "PRICE")),
            "(defun price (n)\n    ;; kept\n    (* n 'x))@app.lisp:12:3");
  CHECK_STR(text_of(find(&e, JITI_ENTRY_VARIABLE, "*RATE*")), "(defvar *rate* 5/100)@app.lisp:11:1");
  CHECK_STR(text_of(find(&e, JITI_ENTRY_FUNCTION, "INNER")), "");
  CHECK_STR(text_of(find(&e, JITI_ENTRY_FUNCTION, "BUILT")), "");
  /* the canonical form is what jiti_entry_form shows */
  const Ent *p = find(&e, JITI_ENTRY_FUNCTION, "PRICE");
  char *form = p ? jiti_entry_form(S, p->name, p->bytes, p->len, 0) : NULL;
  CHECK_STR(form, "(DEFUN PRICE (N) (* N (QUOTE X)))");
  free(form);
  /* checked and verified as the kernel does, then imported elsewhere */
  char err[256];
  jiti_State *T = world();
  for (int i = 0; i < e.n; i++) {
    CHECK(jiti_entry_check(S, e.v[i].kind, e.v[i].name, e.v[i].bytes, e.v[i].len, NULL, 0, err, sizeof err) ==
          JITI_OK);
    CHECK(jiti_entry_verify(S, e.v[i].kind, e.v[i].name, e.v[i].bytes, e.v[i].len, err, sizeof err) == JITI_OK);
  }
  for (int i = 0; i < e.n; i++)
    CHECK(jiti_import_entry(T, e.v[i].kind, e.v[i].name, e.v[i].bytes, e.v[i].len, err, sizeof err) == JITI_OK);
  Ents f = {0};
  export_all(T, &f);
  CHECK(f.n == e.n);
  for (int i = 0; i < e.n; i++) {
    const Ent *y = find(&f, e.v[i].kind, e.v[i].name);
    CHECK(y && y->len == e.v[i].len && !memcmp(y->bytes, e.v[i].bytes, y->len));
  }
  CHECK_STR(check_eval(T, "(list (fboundp 'price) *rate*)"), "(T 1/20)");
  ents_free(&f);
  jiti_close(T);

  /* a variable set since shows canonically; a restore brings its text back */
  jiti_checkpoint(S);
  CHECK_STR(check_eval(S, "(setf *rate* 7/100)"), "7/100");
  export_all(S, &e);
  CHECK_STR(text_of(find(&e, JITI_ENTRY_VARIABLE, "*RATE*")), "");
  jiti_restore(S);
  export_all(S, &e);
  CHECK_STR(text_of(find(&e, JITI_ENTRY_VARIABLE, "*RATE*")), "(defvar *rate* 5/100)@app.lisp:11:1");

  /* the same definition again keeps its text; another one (canonical) drops it */
  jiti_set_source_origin(S, NULL, JITI_SOURCE_CANONICAL, 1, 1);
  CHECK_STR(check_eval(S, "(defun price (n) (* n 'x))"), "PRICE");
  export_all(S, &e);
  CHECK(text_of(find(&e, JITI_ENTRY_FUNCTION, "PRICE"))[0] != 0);
  CHECK_STR(check_eval(S, "(defun price (n) (* n 'y))"), "PRICE");
  export_all(S, &e);
  CHECK_STR(text_of(find(&e, JITI_ENTRY_FUNCTION, "PRICE")), "");
  ents_free(&e);
  jiti_close(S);
}

static void test_malformed(void) {
  jiti_State *S = world();
  char err[256];
  /* 'W' 1, line 1, column 1, no file, a text longer than the bytes */
  const unsigned char bad[] = {'W', 1, 1, 1, 0, 50, '(', 'x'};
  const unsigned char nocanon[] = {'W', 1, 1, 1, 0, 1, 'x'};
  const unsigned char version[] = {'W', 9, 1, 1, 0, 0, 'F', 'N'};
  jiti_EntrySource src;
  CHECK(jiti_entry_source(bad, sizeof bad, &src, NULL) == -1);
  CHECK(jiti_entry_source(nocanon, sizeof nocanon, &src, NULL) == -1);
  CHECK(jiti_entry_source(version, sizeof version, &src, NULL) == -1);
  CHECK(jiti_entry_source((const unsigned char *)"F", 1, &src, NULL) == 0);
  CHECK(jiti_import_entry(S, JITI_ENTRY_FUNCTION, "F", bad, sizeof bad, err, sizeof err) == JITI_ERROR);
  CHECK(strstr(err, "source as written") != NULL);
  CHECK(jiti_entry_check(S, JITI_ENTRY_FUNCTION, "F", bad, sizeof bad, NULL, 0, err, sizeof err) == JITI_ERROR);
  CHECK(jiti_entry_verify(S, JITI_ENTRY_FUNCTION, "F", nocanon, sizeof nocanon, err, sizeof err) == JITI_ERROR);
  char *t = jiti_entry_form(S, "F", version, sizeof version, 0);
  CHECK(t && strstr(t, "#<undecodable") != NULL);
  free(t);
  jiti_close(S);
}

static void test_positions(void) {
  jiti_State *S = world();
  jiti_set_source_origin(S, "buf.lisp", JITI_SOURCE_FILE, 40, 5);
  jiti_Result r;
  const char *src = "(a b)) ";
  CHECK(jiti_eval_string(S, src, strlen(src), &r) != JITI_OK);
  jiti_result_free(&r);
  CHECK(jiti_source_check(S, src, strlen(src), NULL, &r) == JITI_READ_ERROR);
  CHECK_STR(r.message, "buf.lisp:40:10: unmatched close parenthesis");
  jiti_result_free(&r);
  src = "(list 1\n  \"open";
  CHECK(jiti_source_check(S, src, strlen(src), NULL, &r) == JITI_READ_ERROR);
  CHECK_STR(r.message, "buf.lisp:41:8: end of file inside a string opened at 41:3");
  jiti_result_free(&r);
  jiti_set_source_origin(S, NULL, 0, 0, 0);
  CHECK(jiti_source_check(S, "#.(+ 1 2)", 9, NULL, &r) == JITI_READ_ERROR);
  CHECK(r.message && strstr(r.message, "<input>:1:1: read-time evaluation") == r.message);
  jiti_result_free(&r);
  CHECK_STR(check_eval_message(S, "(read-from-string \"(a\")"),
            "!END-OF-FILE: end of file inside a list opened at 1:1 (at 1:3)");
  jiti_close(S);
}

int main(void) {
  test_export_import();
  test_malformed();
  test_positions();
  return CHECK_DONE();
}
