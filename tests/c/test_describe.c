/* test_describe.c — an entry's text from its encoding alone
** (jiti_entry_text, jiti_entry_form) and the order of hash tables and data
** rows across export and import:
**   - every kind of storable value is shown without its types defined, as a
**     form that, evaluated in a fresh world, gives back the same entries
**     (a variable holding nested hash tables, structures, symbols, quoted
**     lists, strings, characters, numbers; data rows keyed by lists);
**   - laid out in lines when it is long, so a changed line shows alone;
**   - hash tables, nested ones included, and the data table keep their
**     insertion order through export and import, and through a restore;
**   - damage is shown as such;
**   - a structure defined in another package names it. */
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

typedef struct Ent { int kind; char name[200]; unsigned char *bytes; size_t len; } Ent;
typedef struct Ents { Ent v[64]; int n; } Ents;

static int collect(void *ud, jiti_EntryKind kind, const char *name, const unsigned char *bytes, size_t len) {
  Ents *e = ud;
  if (e->n == 64) return 1;
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

static jiti_State *world(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  /* canonical entries: what this file describes (test_source.c has the
  ** text as written) */
  jiti_set_source_origin(S, NULL, JITI_SOURCE_CANONICAL, 1, 1);
  return S;
}

static void run(jiti_State *S, const char *src) {
  jiti_Result r;
  if (jiti_eval_string(S, src, strlen(src), &r) != JITI_OK)
    fprintf(stderr, "  (%s: %s: %s)\n", src, r.condition_type, r.message);
  jiti_result_free(&r);
}

static const Ent *find(const Ents *e, int kind, const char *name) {
  for (int i = 0; i < e->n; i++)
    if (e->v[i].kind == kind && !strcmp(e->v[i].name, name)) return &e->v[i];
  return NULL;
}

/* Each entry's form, evaluated in a fresh world (which defines the
** structure first, as the entry would), gives the same entries back. */
static void test_pasteable(void) {
  jiti_State *S = world();
  run(S, "(defstruct order id items)");
  run(S, "(defvar *h* (make-hash-table :test 'equal))");
  run(S, "(setf (gethash \"w\" *h*) 1 (gethash \"g\" *h*) (list 'a \"b\" #\\c) (gethash '(1 k) *h*) 2/3)");
  run(S, "(defparameter *nested* (let ((n (make-hash-table))) (setf (gethash :z n) 1.5 (gethash :a n) 'x) "
         "(list 1 n (vector 2 'y \"s\"))))");
  run(S, "(defparameter *sym* 'hello)");
  run(S, "(defparameter *str* (format nil \"two~%lines \\\"quoted\\\"\"))");
  run(S, "(defconstant +big+ 123456789012345678901234567890)");
  run(S, "(defparameter *dotted* (cons 'a 'b))");
  run(S, "(world-put :order (make-order :id 7 :items (list :x 'y)))");
  run(S, "(world-put '(:k 1 \"two\") (vector 1 'q))");
  run(S, "(world-put 'plain-symbol nil)");
  run(S, "(defun long-function (price item-type) (let ((rate (if (eq item-type :food) 0.02 0.08))) "
         "(+ price (* price rate) (if (> price 1000) (- (* price 0.01)) 0))))");
  Ents a = {0};
  char err[512];
  CHECK(jiti_export_all(S, collect, &a, err, sizeof err) == JITI_OK);
  /* evaluated in a fresh world: the same entries */
  jiti_State *T = world();
  const Ent *st = find(&a, JITI_ENTRY_STRUCTURE, "ORDER");
  CHECK(st != NULL);
  for (int pass = 0; pass < 2; pass++)  /* the structure first */
    for (int i = 0; i < a.n; i++) {
      if ((a.v[i].kind == JITI_ENTRY_STRUCTURE) != (pass == 0)) continue;
      char *form = jiti_entry_form(S, a.v[i].name, a.v[i].bytes, a.v[i].len, 40);
      CHECK(form && !strstr(form, "undecodable"));
      if (form) run(T, form);
      free(form);
    }
  Ents b = {0};
  CHECK(jiti_export_all(T, collect, &b, err, sizeof err) == JITI_OK);
  CHECK(a.n == b.n);
  for (int i = 0; i < a.n; i++) {
    const Ent *x = &a.v[i], *y = find(&b, x->kind, x->name);
    CHECK(y != NULL);
    if (!y) { fprintf(stderr, "  missing %s\n", x->name); continue; }
    /* data rows: their text (a row's position is not in it) */
    char *tx = jiti_entry_text(S, x->bytes, x->len), *ty = jiti_entry_text(T, y->bytes, y->len);
    int same = x->kind == JITI_ENTRY_DATA ? !strcmp(tx, ty)
                                          : x->len == y->len && !memcmp(x->bytes, y->bytes, x->len);
    CHECK(same);
    if (!same) fprintf(stderr, "  %s differs:\n    %s\n    %s\n", x->name, tx, ty);
    free(tx);
    free(ty);
  }
  /* a long definition is laid out in lines; one line without a width */
  const Ent *fn = find(&a, JITI_ENTRY_FUNCTION, "LONG-FUNCTION");
  char *laid = jiti_entry_form(S, fn->name, fn->bytes, fn->len, 60);
  char *flat = jiti_entry_text(S, fn->bytes, fn->len);
  CHECK(laid && strchr(laid, '\n') && !strchr(flat, '\n'));
  CHECK(laid && !strncmp(laid, "(DEFUN LONG-FUNCTION (PRICE ITEM-TYPE)\n  (LET ", 46));
  for (char *line = laid; line && *line;) {  /* every line within the width here */
    size_t n = strcspn(line, "\n");
    CHECK(n <= 60);
    line += n + (line[n] == '\n');
  }
  free(laid);
  free(flat);
  /* values are forms: quoted where they must be */
  const Ent *sym = find(&a, JITI_ENTRY_VARIABLE, "*SYM*");
  char *t = jiti_entry_form(S, sym->name, sym->bytes, sym->len, 0);
  CHECK_STR(t, "(DEFPARAMETER *SYM* 'HELLO)");
  free(t);
  const Ent *big = find(&a, JITI_ENTRY_VARIABLE, "+BIG+");
  t = jiti_entry_form(S, big->name, big->bytes, big->len, 0);
  CHECK_STR(t, "(DEFCONSTANT +BIG+ 123456789012345678901234567890)");
  free(t);
  const Ent *row = find(&a, JITI_ENTRY_DATA, ":ORDER");
  t = jiti_entry_form(S, row->name, row->bytes, row->len, 0);
  CHECK_STR(t, "(WORLD-PUT :ORDER #S(ORDER :ID 7 :ITEMS (:X Y)))");
  free(t);
  /* a structure whose type this state never saw: shown all the same */
  jiti_State *U = world();
  t = jiti_entry_text(U, row->bytes, row->len);
  CHECK_STR(t, "#S(ORDER :ID 7 :ITEMS (:X Y))");
  free(t);
  const Ent *h = find(&a, JITI_ENTRY_VARIABLE, "*H*");
  t = jiti_entry_text(U, h->bytes, h->len);
  CHECK(t && strstr(t, "(LET ((H (MAKE-HASH-TABLE :TEST 'EQUAL))) (SETF (GETHASH \"w\" H) 1) "
                       "(SETF (GETHASH \"g\" H) '(A \"b\" #\\c))"));
  free(t);
  /* damage */
  unsigned char cut[8];
  memcpy(cut, row->bytes, sizeof cut);
  t = jiti_entry_text(U, cut, sizeof cut);
  CHECK(t && !strncmp(t, "#<undecodable: ", 15));
  free(t);
  ents_free(&a);
  ents_free(&b);
  jiti_close(U);
  jiti_close(T);
  jiti_close(S);
}

/* Insertion order through export and import: data rows (imported in the
** store's name order), a variable's hash table and one nested in it. */
static void test_order(void) {
  jiti_State *S = world();
  run(S, "(progn (world-put \"W1\" 1) (world-put \"G1\" 2) (world-put \"B1\" 3) (world-put \"A0\" 4))");
  run(S, "(world-put \"G1\" 20)");  /* put again: keeps its place */
  run(S, "(defvar *t* (make-hash-table :test 'equal))");
  run(S, "(progn (setf (gethash \"w\" *t*) 1 (gethash \"g\" *t*) (make-hash-table)) "
         "(setf (gethash :z (gethash \"g\" *t*)) 1 (gethash :a (gethash \"g\" *t*)) 2) "
         "(setf (gethash \"b\" *t*) 3))");
  const char *keys = "(world-keys)";
  const char *order = "(let (r) (maphash (lambda (k v) (push k r)) *t*) "
                      "(maphash (lambda (k v) (push k r)) (gethash \"g\" *t*)) (reverse r))";
  CHECK_STR(check_eval(S, keys), "(\"W1\" \"G1\" \"B1\" \"A0\")");
  CHECK_STR(check_eval(S, order), "(\"w\" \"g\" \"b\" :Z :A)");
  Ents a = {0};
  char err[512];
  CHECK(jiti_export_all(S, collect, &a, err, sizeof err) == JITI_OK);
  jiti_State *T = world();
  for (int i = 0; i < a.n; i++)  /* in export order: rows by name */
    CHECK(jiti_import_entry(T, (jiti_EntryKind)a.v[i].kind, a.v[i].name, a.v[i].bytes, a.v[i].len, err,
                            sizeof err) == JITI_OK);
  CHECK_STR(check_eval(T, keys), "(\"W1\" \"G1\" \"B1\" \"A0\")");
  CHECK_STR(check_eval(T, order), "(\"w\" \"g\" \"b\" :Z :A)");
  CHECK_STR(check_eval(T, "(world-get \"G1\")"), "20");
  /* new rows go after the imported ones; a restored removal keeps its place */
  run(T, "(world-put \"C9\" 5)");
  jiti_checkpoint(T);
  run(T, "(world-rem \"W1\")");
  CHECK_STR(check_eval(T, keys), "(\"G1\" \"B1\" \"A0\" \"C9\")");
  jiti_restore(T);
  CHECK_STR(check_eval(T, keys), "(\"W1\" \"G1\" \"B1\" \"A0\" \"C9\")");
  /* export -> import -> export is byte-identical */
  Ents b = {0}, c = {0};
  CHECK(jiti_export_all(T, collect, &b, err, sizeof err) == JITI_OK);
  jiti_State *U = world();
  for (int i = 0; i < b.n; i++)
    jiti_import_entry(U, (jiti_EntryKind)b.v[i].kind, b.v[i].name, b.v[i].bytes, b.v[i].len, err, sizeof err);
  CHECK(jiti_export_all(U, collect, &c, err, sizeof err) == JITI_OK);
  CHECK(b.n == c.n);
  for (int i = 0; i < b.n && i < c.n; i++)
    CHECK(b.v[i].len == c.v[i].len && !memcmp(b.v[i].bytes, c.v[i].bytes, b.v[i].len));
  ents_free(&a);
  ents_free(&b);
  ents_free(&c);
  jiti_close(U);
  jiti_close(T);
  jiti_close(S);
}

/* A structure defined in another package than COMMON-LISP-USER: its form,
** then a comment line naming the package its accessors were named in; it
** comes back in that package. */
static void test_structure_package(void) {
  jiti_State *S = world();
  run(S, "(defpackage :geo (:use :cl))");
  run(S, "(in-package :geo)");
  run(S, "(defstruct pt x y)");
  run(S, "(cl:in-package :cl-user)");
  Ents e = {.n = 0};
  char err[256];
  CHECK(jiti_export_all(S, collect, &e, err, sizeof err) == JITI_OK);
  const Ent *st = find(&e, JITI_ENTRY_STRUCTURE, "GEO::PT");
  CHECK(st != NULL);
  if (st) {
    char *f = jiti_entry_form(S, "GEO::PT", st->bytes, st->len, 80);
    CHECK_STR(f, "(DEFSTRUCT GEO::PT GEO::X GEO::Y)\n;; defined in the package \"GEO\"");
    free(f);
    jiti_State *T = world();
    const Ent *pkg = find(&e, JITI_ENTRY_PACKAGE, "\"GEO\"");
    CHECK(pkg && jiti_import_entry(T, JITI_ENTRY_PACKAGE, pkg->name, pkg->bytes, pkg->len, err, sizeof err) == JITI_OK);
    CHECK(jiti_import_entry(T, JITI_ENTRY_STRUCTURE, st->name, st->bytes, st->len, err, sizeof err) == JITI_OK);
    CHECK_STR(check_eval(T, "(list (geo::pt-x (geo::make-pt :x 3)) (fboundp 'make-pt))"), "(3 NIL)");
    jiti_close(T);
  }
  ents_free(&e);
  jiti_close(S);
}

int main(void) {
  test_structure_package();
  test_pasteable();
  test_order();
  return CHECK_DONE();
}
