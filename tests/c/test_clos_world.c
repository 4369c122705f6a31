/* test_clos_world.c — classes, generic functions and methods as managed
** entries; instances as stored data; class redefinition migrating the
** instances of managed state inside a checkpoint. */
#include <stdbool.h>
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

#define ev check_eval_message

/* An export as entries kept in memory (kind, name, bytes). */
typedef struct { jiti_EntryKind kind; char *name; unsigned char *bytes; size_t len; } Ent;
typedef struct { Ent *v; size_t n, cap; } Ents;

static int keep(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Ents *e = ud;
  if (e->n == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 64;
    e->v = realloc(e->v, e->cap * sizeof *e->v);
  }
  Ent *x = &e->v[e->n++];
  x->kind = k;
  x->name = strdup(name);
  x->len = len;
  x->bytes = NULL;
  if (b) {
    x->bytes = malloc(len ? len : 1);
    memcpy(x->bytes, b, len);
  }
  return 0;
}

static void ents_free(Ents *e) {
  for (size_t i = 0; i < e->n; i++) { free(e->v[i].name); free(e->v[i].bytes); }
  free(e->v);
  memset(e, 0, sizeof *e);
}

/* "kind name hash" lines of a whole export, to compare worlds. */
static char *dump(jiti_State *S) {
  Ents e = {0};
  char err[512];
  if (jiti_export_all(S, keep, &e, err, sizeof err) != JITI_OK) return strdup(err);
  size_t cap = 256, n = 0;
  char *t = malloc(cap);
  t[0] = 0;
  for (size_t i = 0; i < e.n; i++) {
    char hash[65], line[1024];
    jiti_entry_hash(e.v[i].kind, e.v[i].name, e.v[i].bytes, e.v[i].len, hash);
    int m = snprintf(line, sizeof line, "%s %s %s\n", jiti_entry_kind_name(e.v[i].kind), e.v[i].name, hash);
    while (n + (size_t)m + 1 > cap) t = realloc(t, cap *= 2);
    memcpy(t + n, line, (size_t)m + 1);
    n += (size_t)m;
  }
  ents_free(&e);
  return t;
}

static const Ent *find(const Ents *e, jiti_EntryKind k, const char *name) {
  for (size_t i = 0; i < e->n; i++)
    if (e->v[i].kind == k && !strcmp(e->v[i].name, name)) return &e->v[i];
  return NULL;
}

/* Import entries kind by kind (the store's order); within a kind, last
** name first when `reverse` (the order must not matter). */
static const jiti_EntryKind order[] = {
  JITI_ENTRY_STRUCTURE, JITI_ENTRY_CLASS, JITI_ENTRY_MACRO, JITI_ENTRY_FUNCTION,
  JITI_ENTRY_VARIABLE, JITI_ENTRY_GENERIC, JITI_ENTRY_METHOD, JITI_ENTRY_DATA,
  JITI_ENTRY_INVARIANT};

static jiti_State *import_all(const Ents *e, bool reverse) {
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
    for (size_t j = 0; j < e->n; j++) {
      const Ent *x = &e->v[reverse ? e->n - 1 - j : j];
      if (x->kind != order[k]) continue;
      char err[512];
      if (jiti_import_entry(T, x->kind, x->name, x->bytes, x->len, err, sizeof err) != JITI_OK) {
        fprintf(stderr, "import of %s %s failed: %s\n", jiti_entry_kind_name(x->kind), x->name, err);
        CHECK(0);
      }
    }
  return T;
}

static const char *WORLD =
  /* the subclass sorts before its superclass: import meets it first */
  "(defclass b-square (shape) ((side :initarg :side :accessor side)) (:default-initargs :name \"sq\"))"
  "(defclass shape () ((name :initarg :name :accessor shape-name)"
  "                    (made :allocation :class :initform 0 :accessor made)"
  "                    (registry :allocation :class :initform nil :accessor registry)"
  "                    (note :initarg :note)))"
  "(defmethod initialize-instance :after ((s shape) &key)"
  "  (incf (made s)) (push (shape-name s) (registry s)))"
  "(defgeneric area (s) (:documentation \"the area\") (:method ((s b-square)) (* (side s) (side s))))"
  "(defmethod area :around ((s shape)) (list :area (call-next-method)))"
  "(defgeneric react (e))"
  "(defmethod react ((e (eql :click))) 'clicked)"
  "(defmethod react ((e t)) 'other)"
  "(defmethod print-object ((s shape) stream) (format stream \"<~a>\" (shape-name s)))"
  "(defvar *shapes* (list (make-instance 'b-square :side 3) (make-instance 'b-square :side 4 :name \"big\")))"
  "(world-put :one (make-instance 'b-square :side 5 :name \"row\"))"
  "(world-put :list (list 1 (make-instance 'shape :name \"plain\")))";

static void test_entries_and_round_trip(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(strncmp(ev(S, WORLD), "!", 1) != 0);
  CHECK(jiti_world_count(S, JITI_ENTRY_CLASS) == 2);
  CHECK(jiti_world_count(S, JITI_ENTRY_GENERIC) == 2);
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD) == 5);   /* accessors and inline methods are not entries */
  Ents e = {0};
  char err[512];
  CHECK(jiti_export_all(S, keep, &e, err, sizeof err) == JITI_OK);
  CHECK(find(&e, JITI_ENTRY_METHOD, "(AREA :AROUND (SHAPE))") != NULL);
  CHECK(find(&e, JITI_ENTRY_METHOD, "(REACT ((EQL :CLICK)))") != NULL);
  CHECK(find(&e, JITI_ENTRY_METHOD, "(INITIALIZE-INSTANCE :AFTER (SHAPE))") != NULL);
  CHECK(find(&e, JITI_ENTRY_METHOD, "(PRINT-OBJECT (SHAPE T))") != NULL);
  CHECK(find(&e, JITI_ENTRY_GENERIC, "AREA") != NULL);
  CHECK(find(&e, JITI_ENTRY_CLASS, "B-SQUARE") != NULL);

  /* readable without the classes: a fresh world writes an instance as the
  ** form that builds it (unbound slots left out), a class with the values
  ** of its shared slots */
  jiti_State *R = jiti_open();
  const Ent *row = find(&e, JITI_ENTRY_DATA, ":ONE");
  static const char one[] =
    "(WORLD-PUT :ONE (LET ((I (ALLOCATE-INSTANCE (FIND-CLASS 'B-SQUARE)))) "
    "(SETF (SLOT-VALUE I 'NAME) \"row\") (SETF (SLOT-VALUE I 'SIDE) 5) I))";
  char *t = jiti_entry_form(R, row->name, row->bytes, row->len, 0);
  CHECK_STR(t, one);
  free(t);
  const Ent *cl = find(&e, JITI_ENTRY_CLASS, "SHAPE");
  t = jiti_entry_form(R, cl->name, cl->bytes, cl->len, 0);
  CHECK(strstr(t, "(DEFCLASS SHAPE NIL") == t);
  CHECK(strstr(t, "\n;; :class slot MADE = 4\n;; :class slot REGISTRY = '(\"plain\" \"row\" \"big\" \"sq\")") != NULL);
  free(t);
  /* a live world's view decodes them the same way: no print-object runs */
  t = jiti_entry_form(S, row->name, row->bytes, row->len, 0);
  CHECK_STR(t, one);
  free(t);
  jiti_close(R);

  /* export -> import -> export is byte-identical, in either order within
  ** a kind (forward references, provisional layouts of shared values) */
  char *before = dump(S);
  for (int rev = 0; rev < 2; rev++) {
    jiti_State *T = import_all(&e, rev);
    char *after = dump(T);
    CHECK_STR(after, before);
    free(after);
    CHECK_STR(ev(T, "(mapcar #'area *shapes*)"), "((:AREA 9) (:AREA 16))");
    CHECK_STR(ev(T, "(list (react :click) (react 1))"), "(CLICKED OTHER)");
    CHECK_STR(ev(T, "(format nil \"~a ~a\" *shapes* (world-get :one))"), "\"(<sq> <big>) <row>\"");
    CHECK_STR(ev(T, "(list (made (first *shapes*)) (slot-boundp (first *shapes*) 'note))"), "(4 NIL)");
    CHECK_STR(ev(T, "(progn (make-instance 'b-square :side 1) (list (made (first *shapes*)) (first (registry (first *shapes*)))))"),
              "(5 \"sq\")");
    CHECK_STR(ev(T, "(documentation 'area 'function)"), "\"the area\"");
    /* the shown form builds an instance like the stored one */
    CHECK_STR(ev(T, "(let ((i (LET ((I (ALLOCATE-INSTANCE (FIND-CLASS 'B-SQUARE)))) "
                    "(SETF (SLOT-VALUE I 'NAME) \"row\") (SETF (SLOT-VALUE I 'SIDE) 5) I))) "
                    "(list (slot-value i 'name) (slot-value i 'side) (slot-boundp i 'note) (area i)))"),
              "(\"row\" 5 NIL (:AREA 25))");
    jiti_close(T);
  }
  free(before);
  ents_free(&e);
  jiti_close(S);
}

static void test_migration(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(strncmp(ev(S,
    "(defclass pt () ((x :initarg :x :accessor x) (y :initarg :y :accessor y)))"
    "(defvar *pts* (list (make-instance 'pt :x 1 :y 2) (make-instance 'pt :x 3)))"
    "(defvar *other* 5)"
    "(world-put :p (make-instance 'pt :x 10 :y 20))"
    "(world-put :plain 7)"), "!", 1) != 0);
  char *before = dump(S);

  /* redefinition inside a checkpoint: every instance of managed state is
  ** updated now, by the program's method */
  jiti_checkpoint(S);
  CHECK_STR(ev(S,
    "(defmethod update-instance-for-redefined-class :after ((p pt) added discarded plist &key)"
    "  (setf (slot-value p 'r) (+ (getf plist 'x 0) (or (getf plist 'y) 0))))"
    "(defclass pt () ((r :accessor r) (z :initform 0 :accessor z)))"
    "(list (mapcar #'r *pts*) (r (world-get :p)) (z (world-get :p)))"), "((3 3) 30 0)");
  Ents ch = {0};
  CHECK(jiti_export_changed(S, keep, &ch, NULL, 0) == JITI_OK);
  CHECK(find(&ch, JITI_ENTRY_CLASS, "PT") != NULL);
  CHECK(find(&ch, JITI_ENTRY_DATA, ":P") != NULL);
  CHECK(find(&ch, JITI_ENTRY_DATA, ":PLAIN") == NULL);
  CHECK(find(&ch, JITI_ENTRY_VARIABLE, "*PTS*") != NULL);
  CHECK(find(&ch, JITI_ENTRY_METHOD, "(UPDATE-INSTANCE-FOR-REDEFINED-CLASS :AFTER (PT T T T))") != NULL);
  /* the changed row holds the new shape */
  jiti_State *R = jiti_open();
  const Ent *p = find(&ch, JITI_ENTRY_DATA, ":P");
  char *t = jiti_entry_form(R, p->name, p->bytes, p->len, 0);
  CHECK_STR(t, "(WORLD-PUT :P (LET ((I (ALLOCATE-INSTANCE (FIND-CLASS 'PT)))) (SETF (SLOT-VALUE I 'R) 30) "
               "(SETF (SLOT-VALUE I 'Z) 0) I))");
  free(t);
  jiti_close(R);
  ents_free(&ch);
  /* a restore brings back the class and every instance exactly */
  jiti_restore(S);
  char *after = dump(S);
  CHECK_STR(after, before);
  free(after);
  CHECK_STR(ev(S, "(list (x (first *pts*)) (y (world-get :p)) (slot-exists-p (first *pts*) 'r))"), "(1 20 NIL)");

  /* an error in a migration method leaves everything to the restore */
  jiti_checkpoint(S);
  CHECK(strstr(ev(S,
    "(defmethod update-instance-for-redefined-class :before ((p pt) added discarded plist &key)"
    "  (when (eql (getf plist 'x) 3) (error \"cannot migrate ~a\" (getf plist 'x))))"
    "(defclass pt () ((w :initform 1)))"), "cannot migrate 3") != NULL);
  jiti_restore(S);
  after = dump(S);
  CHECK_STR(after, before);
  free(after);
  CHECK_STR(ev(S, "(list (x (second *pts*)) (x (world-get :p)))"), "(3 10)");

  /* committed: the migrated world exports, imports and exports the same */
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(defclass pt () ((x :initarg :x :accessor x) (y :initarg :y :accessor y) (z :initform 9)))"
                  "(mapcar (lambda (p) (slot-value p 'z)) *pts*)"), "(9 9)");
  jiti_commit(S);
  Ents e = {0};
  CHECK(jiti_export_all(S, keep, &e, NULL, 0) == JITI_OK);
  free(before);
  before = dump(S);
  jiti_State *T = import_all(&e, false);
  after = dump(T);
  CHECK_STR(after, before);
  CHECK_STR(ev(T, "(list (slot-value (world-get :p) 'z) (x (second *pts*)) (slot-boundp (second *pts*) 'y))"),
            "(9 3 NIL)");
  free(after);
  jiti_close(T);
  ents_free(&e);

  /* an instance that missed the migration (held only by a closure) is
  ** not storable until it is used */
  CHECK(strstr(ev(S, "(let ((old (make-instance 'pt :x 1)))"
                     "  (defclass pt () ((x :initarg :x :accessor x)))"
                     "  (world-put :stale old))"), "redefined since") != NULL);
  CHECK_STR(ev(S, "(let ((old (make-instance 'pt :x 1)))"
                  "  (defclass pt () ((x :initarg :x :accessor x) (q :initform 2)))"
                  "  (x old) (world-put :fresh old) (slot-value (world-get :fresh) 'q))"), "2");
  free(before);
  jiti_close(S);
}

static void test_locks_and_removal(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(strstr(ev(S, "(defmethod print-object ((x integer) s) (princ 1 s))"), "LOCKED-SYMBOL-ERROR"));
  CHECK(strstr(ev(S, "(defmethod print-object ((x (eql 5)) s) (princ 1 s))"), "LOCKED-SYMBOL-ERROR"));
  CHECK(strstr(ev(S, "(defgeneric print-object (a b))"), "LOCKED-SYMBOL-ERROR"));
  CHECK(strstr(ev(S, "(defclass standard-object () ())"), "LOCKED-SYMBOL-ERROR"));
  CHECK(strstr(ev(S, "(defclass integer () ())"), "LOCKED-SYMBOL-ERROR"));
  CHECK(strstr(ev(S, "(defclass error () ())"), "LOCKED-SYMBOL-ERROR"));
  CHECK(strstr(ev(S, "(remove-method #'print-object (first (compute-applicable-methods #'print-object (list 1 t))))"),
               "LOCKED-SYMBOL-ERROR"));
  CHECK(ev(S, "(defmethod car ((x t)) 1)")[0] == '!');
  CHECK_STR(ev(S, "(progn (defclass c () ()) (defmethod print-object ((x c) s) (princ \"c!\" s)) (prin1-to-string (make-instance 'c)))"),
            "\"c!\"");
  CHECK_STR(ev(S, "(prin1-to-string 5)"), "\"5\"");
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD) == 1);

  /* remove-method, fmakunbound and defun forget the entries */
  CHECK_STR(ev(S, "(defgeneric g (x)) (defmethod g ((x c)) 1) (defmethod g ((x t)) 2)"
                  "(remove-method #'g (find-method #'g nil (list (find-class 'c)))) (g (make-instance 'c))"), "2");
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD) == 2);
  CHECK(jiti_world_count(S, JITI_ENTRY_GENERIC) == 1);
  ev(S, "(fmakunbound 'g)");
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD) == 1);
  CHECK(jiti_world_count(S, JITI_ENTRY_GENERIC) == 0);
  ev(S, "(defmethod h ((x c)) 1) (defun h (x) x)");
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD) == 1);
  CHECK(jiti_world_count(S, JITI_ENTRY_FUNCTION) == 1);

  /* a restore makes dispatch caches stale */
  CHECK_STR(ev(S, "(defgeneric k (x)) (defmethod k ((x t)) 'old) (k 1)"), "OLD");
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(defmethod k ((x integer)) 'new) (k 1)"), "NEW");
  jiti_restore(S);
  CHECK_STR(ev(S, "(k 1)"), "OLD");

  /* import refuses an entry whose form defines something else */
  Ents e = {0};
  CHECK(jiti_export_all(S, keep, &e, NULL, 0) == JITI_OK);
  const Ent *m = find(&e, JITI_ENTRY_METHOD, "(PRINT-OBJECT (C T))");
  CHECK(m != NULL);
  const Ent *c = find(&e, JITI_ENTRY_CLASS, "C");
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  char err[512];
  CHECK(jiti_import_entry(T, JITI_ENTRY_CLASS, "C", c->bytes, c->len, err, sizeof err) == JITI_OK);
  CHECK(jiti_import_entry(T, JITI_ENTRY_METHOD, "(PRINT-OBJECT (T T))", m->bytes, m->len, err, sizeof err) == JITI_ERROR);
  CHECK(strstr(err, "does not define the method") != NULL);
  CHECK(jiti_import_entry(T, JITI_ENTRY_CLASS, "D", c->bytes, c->len, err, sizeof err) == JITI_ERROR);
  CHECK(jiti_import_entry(T, JITI_ENTRY_GENERIC, "K", m->bytes, m->len, err, sizeof err) == JITI_ERROR);
  CHECK(jiti_world_count(T, JITI_ENTRY_METHOD) == 0);
  jiti_close(T);
  ents_free(&e);
  jiti_close(S);
}

/* A stored method's (eql x) specializer is a literal value.  Any other x
** is a form, evaluated once where the defmethod stands (as the standard
** says): the method works, but cannot be stored, and the export refuses it
** naming the fix.  An import takes the value from the entry's name and
** evaluates nothing, even for a form that a store written before literals
** were required holds. */
static void test_eql_specializers_are_values(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  jiti_set_source_origin(S, NULL, JITI_SOURCE_CANONICAL, 1, 1);   /* the bytes below are canonical */
  CHECK(strncmp(ev(S, "(defgeneric g (x))"), "!", 1) != 0);
  const char *forms[] = {"(defmethod g ((x (eql (progn (setq *print-base* *print-base*) 'z)))) :z) (g 'z)",
                         "(defmethod g ((x (eql *print-base*))) :ten) (g 10)",
                         "(defmethod g ((x (eql '(1 2)))) :list) (list :list)",
                         "(defmethod g ((x (eql '#:sym))) :sym) :sym", "(defmethod g ((x (eql #(1)))) :vec) :vec"};
  const char *values[] = {":Z", ":TEN", "(:LIST)", ":SYM", ":VEC"};
  for (int i = 0; i < 5; i++) {
    jiti_checkpoint(S);
    CHECK_STR(ev(S, forms[i]), values[i]);
    Ents refused = {0};
    char why[512];
    CHECK(jiti_export_changed(S, keep, &refused, why, sizeof why) == JITI_ERROR);
    CHECK(strstr(why, "a method whose (EQL x) specializer is the value of a form (an import evaluates nothing: "
                      "write the object itself") != NULL);
    ents_free(&refused);
    jiti_restore(S);
  }
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD) == 0);
  /* literals of every kind dispatch as in SBCL */
  CHECK_STR(ev(S, "(defmethod g ((x (eql 3))) :three) (defmethod g ((x (eql 'sym))) :sym)"
                  "(defmethod g ((x (eql #\\a))) :char) (defmethod g ((x (eql 1.5d0))) :float)"
                  "(defmethod g ((x (eql :kw))) :kw) (defmethod g ((x (eql nil))) :nil)"
                  "(list (g 3) (g 'sym) (g #\\a) (g 1.5d0) (g :kw) (g nil))"),
            "(:THREE :SYM :CHAR :FLOAT :KW :NIL)");
  /* a stored form whose specializer is a call, as an older store may hold */
  CHECK(strncmp(ev(S, "(defparameter *old* '(defmethod g ((x (eql (progn (world-put :ran t) 3)))) :old))"
                      "(defparameter *wrong* '(defmethod g ((x (eql 4))) :four))"), "!", 1) != 0);
  Ents e = {0};
  char err[512];
  CHECK(jiti_export_all(S, keep, &e, err, sizeof err) == JITI_OK);
  const Ent *old = find(&e, JITI_ENTRY_VARIABLE, "*OLD*"), *wrong = find(&e, JITI_ENTRY_VARIABLE, "*WRONG*");
  CHECK(old && wrong);
  if (old && wrong) {
    old->bytes[0] = wrong->bytes[0] = 'F';   /* a variable's value, as a source entry's form */
    jiti_State *T = jiti_open();
    jiti_world_enable(T);
    CHECK(jiti_import_entry(T, JITI_ENTRY_METHOD, "(G ((EQL 3)))", old->bytes, old->len, err, sizeof err) == JITI_OK);
    CHECK_STR(ev(T, "(list (g 3) (world-get :ran :no))"), "(:OLD :NO)");
    CHECK(jiti_import_entry(T, JITI_ENTRY_METHOD, "(G ((EQL 3)))", wrong->bytes, wrong->len, err, sizeof err) != JITI_OK);
    CHECK(strstr(err, "does not define the method its entry is named after") != NULL);
    CHECK_STR(ev(T, "(g 3)"), ":OLD");
    jiti_close(T);
  }
  ents_free(&e);
  jiti_close(S);
}

/* A world keeps each class under the name its defclass gave it: setting
** find-class or class-name to anything else is refused there (its methods
** and stored instances name the class), and changes nothing; a state that
** keeps no world does it, as the standard says. */
static void test_class_names(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(ev(S, "(defclass c () ()) (defclass d () ()) :ok"), ":OK");
  CHECK(strstr(ev(S, "(setf (find-class 'c) nil)"),
               "!PROGRAM-ERROR: (setf find-class): a world keeps each class under the name its DEFCLASS gave it"));
  CHECK(strstr(ev(S, "(setf (find-class 'c) (find-class 'd))"), "cannot be given another class"));
  CHECK(strstr(ev(S, "(setf (class-name (find-class 'c)) 'e)"),
               "!PROGRAM-ERROR: (setf class-name): a world keeps each class under the name its DEFCLASS gave it"));
  CHECK_STR(ev(S, "(list (class-name (find-class 'c)) (eq (setf (find-class 'c) (find-class 'c)) (find-class 'c))"
                  " (setf (class-name (find-class 'c)) 'c))"), "(C T C)");
  jiti_close(S);
  jiti_State *R = jiti_open();   /* no world: nothing is kept */
  CHECK_STR(ev(R, "(defclass c () ()) (let ((old (find-class 'c))) (setf (find-class 'c) nil)"
                  " (list (find-class 'c nil) (class-name old) (setf (class-name old) 'e) (class-name old)))"),
            "(NIL C E E)");
  CHECK(strstr(ev(R, "(setf (find-class 'integer) nil)"), "is not a standard class the program defined"));
  jiti_close(R);
}

int main(void) {
  test_class_names();
  test_eql_specializers_are_values();
  test_entries_and_round_trip();
  test_migration();
  test_locks_and_removal();
  return CHECK_DONE();
}
