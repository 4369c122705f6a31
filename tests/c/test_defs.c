/* test_defs.c — the definitions kept beside a symbol's cells are world
** entries: deftype, define-symbol-macro, defsetf (both forms),
** define-setf-expander, define-compiler-macro, define-modify-macro, a
** name's documentation and a symbol's property list.  Each is defined in a
** transaction of its own, used by a function, and the world is imported into
** a fresh state (as a restarted worker is): the function still works.
** Redefinitions and removals survive the same way; a restored transaction
** leaves no trace; the language's own symbols cannot be given any of them;
** an import checks each stored form before anything of it runs.  A
** define-method-combination is such an entry too, and so is the world's
** syntax (its readtables). */
#include <stdlib.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"

#define ev check_eval_message

/* "kind name hash" per entry: the world's entries, to compare two worlds. */
typedef struct { char *text; size_t n; } Dump;
static int collect(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Dump *d = ud;
  char hash[65] = "-";
  if (b) jiti_entry_hash(k, name, b, len, hash);
  char line[4096];
  int m = snprintf(line, sizeof line, "%s %s %s\n", jiti_entry_kind_name(k), name, hash);
  d->text = realloc(d->text, d->n + (size_t)m + 1);
  memcpy(d->text + d->n, line, (size_t)m + 1);
  d->n += (size_t)m;
  return 0;
}

static char *dump(jiti_State *S) {
  Dump d = {NULL, 0};
  char err[512];
  if (jiti_export_all(S, collect, &d, err, sizeof err) != JITI_OK) {
    free(d.text);
    return strdup(err);
  }
  return d.text ? d.text : strdup("");
}

/* The entries changed since the open checkpoint, as collect writes them. */
static char *changed(jiti_State *S) {
  Dump d = {NULL, 0};
  char err[512];
  if (jiti_export_changed(S, collect, &d, err, sizeof err) != JITI_OK) {
    free(d.text);
    return strdup(err);
  }
  return d.text ? d.text : strdup("");
}

typedef struct { jiti_State *to; int failures; } Copy;
static int import_one(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Copy *c = ud;
  char err[512];
  if (jiti_import_entry(c->to, k, name, b, len, err, sizeof err) != JITI_OK) {
    fprintf(stderr, "import of %s %s failed: %s\n", jiti_entry_kind_name(k), name, err);
    c->failures++;
  }
  return 0;
}

/* S started again: a fresh state holding S's entries, imported in export
** order as a worker imports CURRENT.  Its own export is S's, byte for byte. */
static jiti_State *restart(jiti_State *S) {
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  Copy c = {T, 0};
  char err[512];
  CHECK(jiti_export_all(S, import_one, &c, err, sizeof err) == JITI_OK);
  CHECK(c.failures == 0);
  CHECK(jiti_import_done(T, err, sizeof err) == JITI_OK);
  char *a = dump(S), *b = dump(T);
  CHECK_STR(b, a);
  free(a);
  free(b);
  return T;
}

/* One transaction: the source runs inside a checkpoint that is kept. */
static const char *txn(jiti_State *S, const char *src) {
  jiti_checkpoint(S);
  const char *r = ev(S, src);
  if (r[0] == '!') jiti_restore(S);
  else jiti_commit(S);
  return r;
}

/* What the uses below print, in the world that made the definitions and in
** every world started from it. */
static const char *const USES =
  "(list (small-p 3) (small-p 30) (bump-head) (set-kar (list 1 2)) (set-kdr (list 1 2)) (set-kar2 (list 1 2))"
  " (twice-of-3) (append-to (list 1)) (documentation 'appendf 'function) (documentation '*rate* 'variable)"
  " (documentation 'small-p 'function) (prec 'plus) (prec 'times))";

static void test_each_kind_survives_a_restart(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  /* each definition in a transaction of its own, then a function using it */
  CHECK_STR(txn(S, "(deftype small () '(integer 0 9))"), "SMALL");
  CHECK_STR(txn(S, "(defun small-p (x) (typep x 'small))"), "SMALL-P");
  CHECK_STR(txn(S, "(defvar *pair* (list 1 2)) (define-symbol-macro head (car *pair*))"), "HEAD");
  CHECK_STR(txn(S, "(defun bump-head () (let ((*pair* (list 1 2))) (incf head) *pair*))"), "BUMP-HEAD");
  CHECK_STR(txn(S, "(defun kar (c) (car c)) (defun store-kar (c v) (setf (car c) (* 10 v))) (defsetf kar store-kar)"),
            "KAR");
  CHECK_STR(txn(S, "(defun set-kar (c) (setf (kar c) 4) c)"), "SET-KAR");
  CHECK_STR(txn(S, "(defsetf kdr (c) (v) \"Write the tail.\" `(setf (cdr ,c) (list ,v)))"), "KDR");
  CHECK_STR(txn(S, "(defun set-kdr (c) (setf (kdr c) 5) c)"), "SET-KDR");
  CHECK_STR(txn(S, "(define-setf-expander kar2 (c &environment env) (declare (ignore env))"
                   " (let ((g (gensym)) (s (gensym)))"
                   "  (values (list g) (list c) (list s) `(setf (car ,g) (+ 1000 ,s)) `(car ,g))))"), "KAR2");
  CHECK_STR(txn(S, "(defun set-kar2 (c) (setf (kar2 c) 3) c)"), "SET-KAR2");
  CHECK_STR(txn(S, "(defun sq (x) (* x x)) (define-compiler-macro sq (&whole w x) (if (numberp x) (* x x) w))"), "SQ");
  CHECK_STR(txn(S, "(defun twice-of-3 () (funcall (compiler-macro-function 'sq) '(sq 3) nil))"), "TWICE-OF-3");
  CHECK_STR(txn(S, "(define-modify-macro appendf (&rest lists) append \"Append to a place.\")"), "APPENDF");
  CHECK_STR(txn(S, "(defun append-to (l) (appendf l (list 2) (list 3)) l)"), "APPEND-TO");
  CHECK_STR(txn(S, "(defvar *rate* 5 \"The rate.\") (setf (documentation 'small-p 'function) \"Small or not.\")"),
            "\"Small or not.\"");
  CHECK_STR(txn(S, "(setf (get 'plus 'precedence) 1 (get 'times 'precedence) 2)"), "2");
  CHECK_STR(txn(S, "(defun prec (op) (get op 'precedence))"), "PREC");
  const char *want = "(T NIL (2 2) (40 2) (1 5) (1003 2) 9 (1 2 3) \"Append to a place.\" \"The rate.\""
                     " \"Small or not.\" 1 2)";
  CHECK_STR(txn(S, USES), want);
  /* one entry each, of its own kind (define-modify-macro: a macro entry
  ** holding its own form, which names no kernel helper) */
  CHECK(jiti_world_count(S, JITI_ENTRY_TYPE) == 1);
  CHECK(jiti_world_count(S, JITI_ENTRY_SYMBOL_MACRO) == 1);
  CHECK(jiti_world_count(S, JITI_ENTRY_SETF_EXPANDER) == 3);
  CHECK(jiti_world_count(S, JITI_ENTRY_COMPILER_MACRO) == 1);
  CHECK(jiti_world_count(S, JITI_ENTRY_MACRO) == 1);
  CHECK(jiti_world_count(S, JITI_ENTRY_DOCUMENTATION) == 2);
  CHECK(jiti_world_count(S, JITI_ENTRY_PLIST) == 2);

  jiti_State *T = restart(S);
  CHECK_STR(ev(T, USES), want);
  CHECK_STR(ev(T, "(list (macroexpand-1 'head) (nth-value 1 (macroexpand-1 '(appendf x 1))))"), "((CAR *PAIR*) T)");

  /* redefinitions and removals, each a transaction, survive a restart */
  CHECK_STR(txn(T, "(deftype small () '(integer 0 99))"), "SMALL");
  CHECK_STR(txn(T, "(define-symbol-macro head (cadr *pair*))"), "HEAD");
  CHECK_STR(txn(T, "(define-setf-expander kar (c) (let ((g (gensym)) (s (gensym)))"
                   " (values (list g) (list c) (list s) `(setf (car ,g) (- ,s)) `(car ,g))))"), "KAR");
  CHECK_STR(txn(T, "(defsetf kar2 store-kar)"), "KAR2");
  CHECK_STR(txn(T, "(setf (compiler-macro-function 'sq) nil)"), "NIL");
  CHECK_STR(txn(T, "(defmacro appendf (place x) `(setf ,place (append ,place ,x)))"), "APPENDF");
  CHECK_STR(txn(T, "(remprop 'plus 'precedence)"), "T");
  CHECK_STR(txn(T, "(setf (get 'times 'precedence) 20)"), "20");
  CHECK_STR(txn(T, "(setf (documentation 'small-p 'function) nil)"), "NIL");
  /* (functions analysed before a redefinition keep what they expanded
  ** to, as compiled code does: these forms are analysed afresh) */
  const char *after = "(list (typep 30 'small) (let ((*pair* (list 1 2))) (incf head) *pair*)"
                      " (let ((c (list 1 2))) (setf (kar c) 4) c) (let ((c (list 1 2))) (setf (kar2 c) 3) c)"
                      " (compiler-macro-function 'sq) (macroexpand-1 '(appendf x 1)) (prec 'plus) (prec 'times)"
                      " (documentation 'small-p 'function))";
  const char *want2 = "(T (1 3) (-4 2) (30 2) NIL (SETF X (APPEND X 1)) NIL 20 NIL)";
  CHECK_STR(ev(T, after), want2);
  CHECK(jiti_world_count(T, JITI_ENTRY_COMPILER_MACRO) == 0);
  CHECK(jiti_world_count(T, JITI_ENTRY_PLIST) == 1);
  jiti_State *U = restart(T);
  CHECK_STR(ev(U, after), want2);

  /* a structure or class of a deftype's name replaces the type (the later
  ** definition wins, as in SBCL); a deftype of a structure's name would
  ** never be used and is refused */
  CHECK_STR(txn(U, "(defstruct small a)"), "SMALL");
  CHECK(jiti_world_count(U, JITI_ENTRY_TYPE) == 0);
  CHECK(strstr(txn(U, "(deftype small () 'integer)"), "it names a structure or condition type"));
  jiti_State *V = restart(U);
  CHECK_STR(ev(V, "(list (small-p 3) (small-p (make-small)))"), "(NIL T)");
  /* a symbol macro and a variable do not share a name */
  CHECK(strstr(txn(V, "(defvar head 1)"), "it is a symbol macro"));
  CHECK(strstr(txn(V, "(define-symbol-macro *rate* 1)"), "it is a special variable"));
  jiti_close(V);
  jiti_close(U);
  jiti_close(T);
  jiti_close(S);
}

/* What a deftype's, a setf expander's or a compiler macro's function uses
** when it is made — a macro, a symbol macro — is imported before it. */
static void test_import_order(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(txn(S, "(defmacro upto (n) `'(integer 0 ,n)) (define-symbol-macro lim 9)"
                   "(deftype by-macro () (upto 5)) (deftype by-symbol-macro () `(integer 0 ,lim))"
                   "(defsetf lim-place (x) (v) `(setf (car ,x) (min ,v ,lim)))"
                   "(list (typep 5 'by-macro) (typep 9 'by-symbol-macro) (let ((c (list 0))) (setf (lim-place c) 20) c))"),
            "(T T (9))");
  jiti_State *T = restart(S);
  CHECK_STR(ev(T, "(list (typep 5 'by-macro) (typep 9 'by-symbol-macro) (let ((c (list 0))) (setf (lim-place c) 20) c))"),
            "(T T (9))");
  jiti_close(T);
  jiti_close(S);
}

/* A transaction that defines all of them and is restored leaves no trace:
** no entry, no definition, no documentation, no property. */
static void test_restored_leaves_no_trace(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(txn(S, "(defun base () 1) (setf (get 'base 'kept) :yes)"), ":YES");
  char *before = dump(S);
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(deftype gone-type () 'integer)"
                  "(define-symbol-macro gone-sm 1)"
                  "(defsetf gone-acc gone-writer)"
                  "(define-setf-expander gone-acc2 (x) (values nil nil nil x x))"
                  "(define-compiler-macro base (&whole w) w)"
                  "(define-modify-macro gone-appendf (&rest l) append)"
                  "(setf (documentation 'base 'function) \"gone\")"
                  "(setf (get 'base 'kept) :no (get 'base 'extra) 1 (get 'fresh 'p) 2)"
                  "(typep 1 'gone-type)"), "T");
  char *during = changed(S);
  CHECK(strstr(during, "type GONE-TYPE "));
  CHECK(strstr(during, "symbol-macro GONE-SM "));
  CHECK(strstr(during, "setf-expander GONE-ACC "));
  CHECK(strstr(during, "setf-expander GONE-ACC2 "));
  CHECK(strstr(during, "compiler-macro BASE "));
  CHECK(strstr(during, "macro GONE-APPENDF "));
  CHECK(strstr(during, "documentation (BASE FUNCTION) "));
  CHECK(strstr(during, "plist BASE "));
  CHECK(strstr(during, "plist FRESH "));
  free(during);
  jiti_restore(S);
  char *after = dump(S);
  CHECK_STR(after, before);
  CHECK_STR(ev(S, "(typep 1 'gone-type)"), "!SIMPLE-ERROR: unknown type specifier: GONE-TYPE");
  CHECK_STR(ev(S, "(list (macroexpand-1 'gone-sm) (compiler-macro-function 'base) (fboundp 'gone-appendf)"
                  " (documentation 'base 'function) (symbol-plist 'base) (symbol-plist 'fresh)"
                  " (car (fourth (multiple-value-list (get-setf-expansion '(gone-acc x))))))"),
            "(GONE-SM NIL NIL NIL (KEPT :YES) NIL FUNCALL)");
  free(before);
  free(after);
  jiti_close(S);
}

/* A property list changed in place (not through GET) is exported as a
** variable's value is: with every other such entry when some object other
** than a symbol changed. */
static void test_plist_changed_in_place(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(txn(S, "(setf (get 'box 'items) (list 1 2) (get 'other 'x) 1)"), "1");
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(rplacd (get 'box 'items) (list 9)) (get 'box 'items)"), "(1 9)");
  char *c = changed(S);
  CHECK(strstr(c, "plist BOX "));
  free(c);
  jiti_commit(S);
  jiti_State *T = restart(S);
  CHECK_STR(ev(T, "(list (get 'box 'items) (get 'other 'x))"), "((1 9) 1)");
  /* a property added to a list that is an entry already: only the symbol
  ** changed, and its list is exported, not the others */
  jiti_checkpoint(T);
  CHECK_STR(ev(T, "(setf (get 'box 'count) 0)"), "0");
  c = changed(T);
  CHECK(strstr(c, "plist BOX "));
  CHECK(!strstr(c, "plist OTHER"));
  free(c);
  jiti_commit(T);
  /* a loop of them (a value changed in place, then every list may have) */
  jiti_checkpoint(T);
  CHECK_STR(ev(T, "(dotimes (i 1000) (setf (get 'box 'count) i)) (get 'box 'count)"), "999");
  c = changed(T);
  CHECK(strstr(c, "plist BOX "));
  free(c);
  jiti_commit(T);
  jiti_State *T2 = restart(T);
  CHECK_STR(ev(T2, "(get 'box 'count)"), "999");
  jiti_close(T2);
  /* a property list emptied is no entry: the entry is removed */
  jiti_checkpoint(T);
  CHECK_STR(ev(T, "(setf (symbol-plist 'other) nil)"), "NIL");
  c = changed(T);
  CHECK(strstr(c, "plist OTHER -"));
  free(c);
  jiti_commit(T);
  CHECK(jiti_world_count(T, JITI_ENTRY_PLIST) == 1);
  /* an uninterned symbol's properties are scratch: no name to store them by */
  CHECK_STR(txn(T, "(let ((s (make-symbol \"U\"))) (setf (get s 'p) 1))"), "1");
  CHECK(jiti_world_count(T, JITI_ENTRY_PLIST) == 1);
  /* a value the world cannot store is refused at export, naming the entry */
  jiti_checkpoint(T);
  CHECK_STR(ev(T, "(setf (get 'box 'fn) #'car) 1"), "1");
  c = changed(T);
  CHECK(strstr(c, "plist BOX holds an unexportable value"));
  free(c);
  jiti_restore(T);
  jiti_close(T);
  jiti_close(S);
}

/* The language's symbols keep their types, setf expanders, symbol macros,
** compiler macros, documentation and property lists: each change is
** refused like a redefinition of CAR, so none can leak from one
** transaction into the next. */
static void test_builtins_refused(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  char *before = dump(S);
  struct { const char *src, *want; } cases[] = {
    {"(setf (get 'car 'colour) 1)", "!LOCKED-SYMBOL-ERROR: cannot change the property list of CAR"},
    {"(setf (symbol-plist 'length) (list 'a 1))", "!LOCKED-SYMBOL-ERROR: cannot change the property list of LENGTH"},
    {"(setf (get nil 'x) 1)", "!LOCKED-SYMBOL-ERROR: cannot change the property list of NIL"},
    {"(setf (get 'world-put 'x) 1)", "!LOCKED-SYMBOL-ERROR: cannot change the property list of WORLD-PUT"},
    {"(setf (documentation 'car 'function) \"x\")", "!LOCKED-SYMBOL-ERROR: cannot change the documentation of CAR"},
    {"(setf (documentation '*print-base* 'variable) \"x\")",
     "!LOCKED-SYMBOL-ERROR: cannot change the documentation of *PRINT-BASE*"},
    {"(setf (documentation #'car 'function) \"x\")", "!LOCKED-SYMBOL-ERROR: cannot change the documentation of CAR"},
    {"(define-compiler-macro car (x) x)", "!LOCKED-SYMBOL-ERROR: cannot define CAR as a compiler macro"},
    {"(setf (compiler-macro-function 'cons) (lambda (f e) (declare (ignore e)) f))",
     "!LOCKED-SYMBOL-ERROR: cannot define CONS as a compiler macro"},
    {"(deftype car () 'integer)", "!LOCKED-SYMBOL-ERROR: cannot define CAR as a type"},
    {"(deftype integer () 'string)", "!LOCKED-SYMBOL-ERROR: cannot define INTEGER as a type"},
    {"(defsetf car set-car)", "!LOCKED-SYMBOL-ERROR: cannot define CAR as a setf expander"},
    {"(define-setf-expander cdr (x) (values nil nil nil x x))", "!LOCKED-SYMBOL-ERROR: cannot define CDR as a setf expander"},
    {"(define-symbol-macro list 1)", "!LOCKED-SYMBOL-ERROR: cannot define LIST as a symbol macro"},
    {"(define-modify-macro incf (&optional (d 1)) +)", "!LOCKED-SYMBOL-ERROR: cannot define INCF as a macro"},
    {"(set 'car 5)", "!LOCKED-SYMBOL-ERROR: cannot set the value of CAR"},
    {"(setq list 5)", "!LOCKED-SYMBOL-ERROR: cannot set the value of LIST"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *got = txn(S, cases[i].src);
    if (strncmp(got, cases[i].want, strlen(cases[i].want)) != 0)
      fprintf(stderr, "%s: %s\n", cases[i].src, got);
    CHECK(strncmp(got, cases[i].want, strlen(cases[i].want)) == 0);
  }
  /* nothing of them is left, and reading them is fine */
  CHECK_STR(ev(S, "(list (get 'car 'colour) (symbol-plist 'length) (compiler-macro-function 'car)"
                  " (stringp (documentation 'car 'function)) (boundp 'car))"), "(NIL NIL NIL T NIL)");
  /* the language's variables can still be set (they are reset between
  ** transactions, not stored) */
  CHECK_STR(ev(S, "(let ((*print-base* 10)) (setq *print-base* 16) *print-base*)"), "16");
  char *after = dump(S);
  CHECK_STR(after, before);
  /* a kernel helper found in an expansion does no more than the form */
  CHECK(strstr(ev(S, "(eval (list (car (macroexpand-1 '(deftype x () 'integer))) ''(deftype car () 'integer)))"),
               "cannot define CAR as a type"));
  CHECK(strstr(ev(S, "(eval (list (car (macroexpand-1 '(deftype x () 'integer))) ''(defun evil () 1)))"),
               "is not a DEFTYPE form"));
  CHECK(strstr(ev(S, "(eval (list (car (macroexpand-1 '(defsetf x y))) ''(defsetf)))"), "is not a DEFSETF form"));
  CHECK_STR(ev(S, "(fboundp 'evil)"), "NIL");
  free(before);
  free(after);
  jiti_close(S);
}

/* The bytes of one exported entry. */
typedef struct { jiti_EntryKind kind; const char *name; unsigned char *bytes; size_t len; } Grab;
static int grab(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Grab *g = ud;
  if (k != g->kind || strcmp(name, g->name) != 0 || !b) return 0;
  g->bytes = malloc(len);
  memcpy(g->bytes, b, len);
  g->len = len;
  return 1;
}

/* An import takes only the defining form of the entry's own name, and
** never a built-in one; nothing of a refused entry runs. */
static void test_import_checks_forms(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(ev(S, "(deftype ty () 'integer) (define-symbol-macro sm 1) (defsetf acc writer)"
              "(define-compiler-macro cm (x) x) (define-modify-macro mm () 1+)"
              "(setf (documentation 'ty 'type) \"doc\") (setf (get 'pl 'p) 1)")[0] != '!');
  char err[512];
  Grab g[] = {{JITI_ENTRY_TYPE, "TY", NULL, 0}, {JITI_ENTRY_SYMBOL_MACRO, "SM", NULL, 0},
              {JITI_ENTRY_SETF_EXPANDER, "ACC", NULL, 0}, {JITI_ENTRY_COMPILER_MACRO, "CM", NULL, 0},
              {JITI_ENTRY_MACRO, "MM", NULL, 0}, {JITI_ENTRY_DOCUMENTATION, "(TY TYPE)", NULL, 0},
              {JITI_ENTRY_PLIST, "PL", NULL, 0}};
  enum { NG = sizeof g / sizeof *g };
  for (int i = 0; i < NG; i++) {
    jiti_export_all(S, grab, &g[i], err, sizeof err);
    CHECK(g[i].bytes != NULL);
  }
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  /* under another name, as another kind, or for a built-in symbol */
  for (int i = 0; i < NG; i++) {
    const char *other = g[i].kind == JITI_ENTRY_DOCUMENTATION ? "(OTHER TYPE)" : "OTHER";
    CHECK(jiti_import_entry(T, g[i].kind, other, g[i].bytes, g[i].len, err, sizeof err) != JITI_OK);
    CHECK(strstr(err, "is not") != NULL);
    jiti_EntryKind k2 = g[(i + 1) % NG].kind;
    CHECK(jiti_import_entry(T, k2, g[i].name, g[i].bytes, g[i].len, err, sizeof err) != JITI_OK);
  }
  CHECK(jiti_world_count(T, JITI_ENTRY_TYPE) + jiti_world_count(T, JITI_ENTRY_PLIST) == 0);
  CHECK_STR(ev(T, "(list (fboundp 'other) (symbol-plist 'other) (macroexpand-1 'other))"), "(NIL NIL OTHER)");
  /* a property list or documentation of a built-in symbol: a world cannot
  ** make one, so a user symbol's entries are renamed (XAR to CAR, the
  ** same length) as a damaged or forged store might hold them */
  jiti_State *K = jiti_open();
  jiti_world_enable(K);
  CHECK_STR(ev(K, "(setf (get 'xar 'a) 1 (documentation 'xar 'function) \"x\")"), "\"x\"");
  Grab kp = {JITI_ENTRY_PLIST, "XAR", NULL, 0}, kd = {JITI_ENTRY_DOCUMENTATION, "(XAR FUNCTION)", NULL, 0};
  jiti_export_all(K, grab, &kp, err, sizeof err);
  jiti_export_all(K, grab, &kd, err, sizeof err);
  CHECK(kp.bytes && kd.bytes);
  Grab *forged[] = {&kp, &kd};
  for (int i = 0; i < 2; i++) {
    unsigned char *x = forged[i]->bytes;
    int renamed = 0;
    for (size_t j = 0; j + 3 <= forged[i]->len; j++)
      if (!memcmp(x + j, "XAR", 3)) { x[j] = 'C'; renamed++; }
    CHECK(renamed == 1);
  }
  CHECK(jiti_import_entry(T, JITI_ENTRY_PLIST, "CAR", kp.bytes, kp.len, err, sizeof err) != JITI_OK);
  CHECK(strstr(err, "cannot change the property list of CAR") != NULL);
  CHECK(jiti_import_entry(T, JITI_ENTRY_DOCUMENTATION, "(CAR FUNCTION)", kd.bytes, kd.len, err, sizeof err) !=
        JITI_OK);
  CHECK(strstr(err, "cannot change the documentation of CAR") != NULL);
  CHECK_STR(ev(T, "(list (symbol-plist 'car) (documentation 'car 'function))"),
            "(NIL \"(car list) The first element of LIST.\")");
  /* the genuine entries import */
  for (int i = 0; i < NG; i++) {
    jiti_Status st = jiti_import_entry(T, g[i].kind, g[i].name, g[i].bytes, g[i].len, err, sizeof err);
    if (st != JITI_OK) fprintf(stderr, "%s %s: %s\n", jiti_entry_kind_name(g[i].kind), g[i].name, err);
    CHECK(st == JITI_OK);
    free(g[i].bytes);
  }
  CHECK_STR(ev(T, "(list (typep 1 'ty) sm (get 'pl 'p) (documentation 'ty 'type) (let ((x 1)) (mm x) x))"),
            "(T 1 1 \"doc\" 2)");
  free(kp.bytes);
  free(kd.bytes);
  jiti_close(K);
  jiti_close(T);
  jiti_close(S);
}

/* The function a type, setf expander, compiler macro or modify macro
** makes is analysed at its first call once imported (its macros may use
** what is imported after it), and jiti_world_analyze analyses the ones
** still pending, naming the entry of one that fails. */
static void test_imported_functions_analysed_later(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(ev(S, "(defvar *ok* t) (defmacro m () (if *ok* ''integer (error \"the macro fails\")))"
              "(deftype ty () (m)) (define-compiler-macro cm (x) (list x (m)))"
              "(defsetf acc (c) (v) (list 'setf (list 'car c) (list 'list (m) v)))"
              "(define-setf-expander acc2 (c) (values nil nil (list (gensym)) (m) c))"
              "(setf *ok* nil)")[0] != '!');
  jiti_State *T = restart(S);
  char err[512];
  CHECK(jiti_world_analyze(T, NULL, err, sizeof err) == JITI_ERROR);
  CHECK(strstr(err, "cannot analyse ") && strstr(err, ": the macro fails"));
  const char *kinds[] = {"cannot analyse type TY", "cannot analyse compiler-macro CM",
                         "cannot analyse setf-expander ACC:", "cannot analyse setf-expander ACC2"};
  /* each in turn: a failed analysis leaves the function pending */
  for (int round = 0; round < 4; round++) {
    CHECK(jiti_world_analyze(T, NULL, err, sizeof err) == JITI_ERROR);
    int which = -1;
    for (int k = 0; k < 4; k++) if (strstr(err, kinds[k])) which = k;
    if (which < 0) fprintf(stderr, "analysed: %s\n", err);
    CHECK(which >= 0);
    /* defined again in working order, it is analysed, and the next fails */
    const char *again[] = {"(deftype ty () 'integer)", "(define-compiler-macro cm (x) x)",
                           "(defsetf acc (c) (v) (list 'setf (list 'car c) v))",
                           "(define-setf-expander acc2 (c) (values nil nil (list (gensym)) c c))"};
    if (which >= 0) CHECK(txn(T, again[which])[0] != '!');
  }
  CHECK(jiti_world_analyze(T, NULL, err, sizeof err) == JITI_OK);
  jiti_close(T);
  jiti_close(S);
}

/* Entries as forms: show, diff and inspect print them as Lisp text. */
static void test_entry_text(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK(ev(S, "(deftype digit () \"A digit.\" '(integer 0 9)) (setf (get 'op 'prec) (list 1 \"a\"))"
              "(setf (documentation 'digit 'type) \"A digit.\")")[0] != '!');
  char err[512];
  Grab t = {JITI_ENTRY_TYPE, "DIGIT", NULL, 0}, p = {JITI_ENTRY_PLIST, "OP", NULL, 0},
       d = {JITI_ENTRY_DOCUMENTATION, "(DIGIT TYPE)", NULL, 0};
  jiti_export_all(S, grab, &t, err, sizeof err);
  jiti_export_all(S, grab, &p, err, sizeof err);
  jiti_export_all(S, grab, &d, err, sizeof err);
  char *a = jiti_entry_form(S, "DIGIT", t.bytes, t.len, 0);
  CHECK_STR(a, "(DEFTYPE DIGIT NIL \"A digit.\" (QUOTE (INTEGER 0 9)))");
  char *b = jiti_entry_form(S, "OP", p.bytes, p.len, 0);
  CHECK_STR(b, "(SETF (SYMBOL-PLIST (QUOTE OP)) (QUOTE (PREC (1 \"a\"))))");
  char *c = jiti_entry_form(S, "(DIGIT TYPE)", d.bytes, d.len, 0);
  CHECK_STR(c, "(SETF (DOCUMENTATION (QUOTE DIGIT) (QUOTE TYPE)) \"A digit.\")");
  free(a);
  free(b);
  free(c);
  free(t.bytes);
  free(p.bytes);
  free(d.bytes);
  jiti_close(S);
}


/* A DEFINE-METHOD-COMBINATION, short or long form, is an entry of its own:
** the generic functions that use it work in a world started again, and
** after a redefinition; a restored one leaves no trace; the language's
** combinations cannot be redefined. */
static void test_method_combination(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(txn(S, "(define-method-combination times :operator * :documentation \"Product.\")"), "TIMES");
  CHECK_STR(txn(S, "(define-method-combination early-first () ((early (:early)) (others () :required t))"
                   " \"Early methods, then the others.\""
                   " `(vector ,@(mapcar (lambda (m) `(call-method ,m)) (append early others))))"),
            "EARLY-FIRST");
  CHECK_STR(txn(S, "(defgeneric prod (x) (:method-combination times)"
                   " (:method times ((x integer)) 2) (:method times ((x real)) 5)) 'ok"), "OK");
  CHECK_STR(txn(S, "(defgeneric vec (x) (:method-combination early-first)"
                   " (:method ((x t)) 'last) (:method :early ((x integer)) 'first)) 'ok"), "OK");
  const char *uses = "(list (prod 1) (prod 1.0) (vec 1) (vec 'a) (documentation 'times 'method-combination)"
                     " (documentation 'early-first 'method-combination))";
  const char *want = "(10 5 #(FIRST LAST) #(LAST) \"Product.\" \"Early methods, then the others.\")";
  CHECK_STR(ev(S, uses), want);
  CHECK(jiti_world_count(S, JITI_ENTRY_METHOD_COMBINATION) == 2);
  jiti_State *T = restart(S);
  CHECK_STR(ev(T, uses), want);
  /* a redefinition changes the effective methods already computed */
  CHECK_STR(txn(T, "(define-method-combination times :operator +)"), "TIMES");
  CHECK_STR(ev(T, "(prod 1)"), "7");
  jiti_State *U = restart(T);
  CHECK_STR(ev(U, "(list (prod 1) (documentation 'times 'method-combination))"), "(7 NIL)");
  /* restored: no entry, no combination */
  char *before = dump(U);
  jiti_checkpoint(U);
  CHECK_STR(ev(U, "(define-method-combination gone :operator list)"
                  "(defgeneric uses-gone (x) (:method-combination gone) (:method gone ((x t)) x))"
                  "(uses-gone 1)"), "(1)");
  char *during = changed(U);
  CHECK(strstr(during, "method-combination GONE "));
  free(during);
  jiti_restore(U);
  char *after = dump(U);
  CHECK_STR(after, before);
  free(before);
  free(after);
  CHECK(strstr(ev(U, "(progn (defgeneric uses-gone2 (x) (:method-combination gone) (:method gone ((x t)) x))"
                     " (uses-gone2 1))"), "there is no method combination named GONE"));
  /* the language's own combinations are not the program's to change */
  CHECK(strstr(txn(U, "(define-method-combination + :operator *)"), "is the language's"));
  CHECK(strstr(txn(U, "(define-method-combination standard)"), "is the language's"));
  CHECK_STR(ev(U, "(prod 1)"), "7");
  /* an invalid method is an error when the effective method is computed */
  CHECK(strstr(txn(U, "(defmethod prod ((x symbol)) 1) (prod 'a)"), "invalid method error"));
  jiti_close(U);
  jiti_close(T);
  jiti_close(S);
}

/* The world's syntax is world state: *readtable* (the entry *READTABLE*,
** while it is not the standard syntax) and the readtables variables and
** rows hold last from one transaction to the next (the host resets the
** other reader and printer variables), survive a restart and import back
** byte for byte; a restored transaction takes its change of syntax back; a
** function object in one is refused at the export, naming the fix; and an
** import takes only a readtable as the world's readtable. */
static const char *const READS =
  "(list (readtable-case *readtable*) (read-from-string \"!z\")"
  " (let ((*readtable* *down*)) (read-from-string \"(#@Ab !c)\"))"
  " (let ((*readtable* (world-get :rt))) (read-from-string \"#@q\"))"
  " (get-macro-character #\\! *down*))";
static const char *const READS_WANT = "(:UPCASE (:BANG Z) ((:AT |Ab|) !C) (:AT Q) NIL)";

static void test_readtables(void) {
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  CHECK_STR(txn(S, "(defun bang-reader (s c) (declare (ignore c)) (list :bang (read s t nil t)))"
                   "(defun sharp-at (s c n) (declare (ignore c n)) (list :at (read s t nil t)))"
                   "(setq *readtable* (copy-readtable nil))"
                   "(set-macro-character #\\! 'bang-reader)"
                   "(defvar *down* (copy-readtable nil))"
                   "(setf (readtable-case *down*) :invert)"
                   "(set-dispatch-macro-character #\\# #\\@ 'sharp-at *down*)"
                   "(world-put :rt (copy-readtable *down*))"
                   "(read-from-string \"!x\")"), "(:BANG X)");
  char *d = dump(S);
  CHECK(strstr(d, "variable *READTABLE* ") && strstr(d, "variable *DOWN* ") && strstr(d, "data :RT "));
  free(d);
  jiti_reset_io_syntax(S);   /* as a host does between transactions */
  CHECK_STR(ev(S, READS), READS_WANT);
  /* a restored transaction: its change of syntax goes, in place or not */
  char *before = dump(S);
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(set-macro-character #\\! nil) (setf (readtable-case *readtable*) :downcase)"
                  "(set-macro-character #\\! 'bang-reader nil *down*)"
                  "(setq *readtable* (copy-readtable *down*)) (readtable-case *readtable*)"), ":invert");
  jiti_restore(S);
  jiti_reset_io_syntax(S);
  char *after = dump(S);
  CHECK_STR(after, before);
  free(after);
  CHECK_STR(ev(S, READS), READS_WANT);
  /* a restart: the same entries, the same reads */
  jiti_State *T = restart(S);
  CHECK_STR(ev(T, READS), READS_WANT);
  /* a function object cannot be stored: refused, naming the fix */
  jiti_checkpoint(T);
  CHECK(ev(T, "(set-macro-character #\\? (lambda (s c) (declare (ignore s c)) 1))")[0] != '!');
  char *refused = changed(T);
  CHECK(strstr(refused, "variable *READTABLE* holds an unexportable value: a readtable holding a function "
                        "object (name the function: (set-macro-character char 'reader nil table)") != NULL);
  free(refused);
  jiti_restore(T);
  /* the standard syntax again: the entry goes */
  jiti_checkpoint(T);
  CHECK_STR(ev(T, "(setq *readtable* (copy-readtable nil)) (readtable-case *readtable*)"), ":UPCASE");
  char *gone = changed(T);
  CHECK(strstr(gone, "variable *READTABLE* -\n") != NULL);
  free(gone);
  jiti_commit(T);
  d = dump(T);
  CHECK(strstr(d, "*READTABLE*") == NULL);
  free(d);
  /* an import takes only a readtable as the world's readtable */
  Grab g = {JITI_ENTRY_VARIABLE, "*DOWN*", NULL, 0}, x = {JITI_ENTRY_VARIABLE, "*X*", NULL, 0};
  char err[512];
  CHECK(ev(T, "(defvar *x* 5)")[0] != '!');
  jiti_export_all(T, grab, &g, err, sizeof err);
  jiti_export_all(T, grab, &x, err, sizeof err);
  CHECK(g.bytes && x.bytes);
  jiti_State *U = jiti_open();
  jiti_world_enable(U);
  CHECK(jiti_entry_check(U, JITI_ENTRY_VARIABLE, "*READTABLE*", x.bytes, x.len, NULL, 0, err, sizeof err) != JITI_OK);
  CHECK(strstr(err, "readtable is not a readtable") != NULL);
  CHECK(jiti_import_entry(U, JITI_ENTRY_VARIABLE, "*READTABLE*", x.bytes, x.len, err, sizeof err) != JITI_OK);
  CHECK(strstr(err, "readtable of the world is not a readtable") != NULL);
  CHECK(jiti_entry_check(U, JITI_ENTRY_VARIABLE, "*READTABLE*", g.bytes, g.len, NULL, 0, err, sizeof err) == JITI_OK);
  CHECK(jiti_import_entry(U, JITI_ENTRY_VARIABLE, "*READTABLE*", g.bytes, g.len, err, sizeof err) == JITI_OK);
  CHECK_STR(ev(U, "(list (readtable-case *readtable*) (symbol-name (read-from-string \"abc\")))"),
            "(:invert \"ABC\")");
  /* entry names are printed with the standard syntax, whatever the world's */
  d = dump(U);
  CHECK(strstr(d, "variable *READTABLE* ") != NULL);
  free(d);
  char *text = jiti_entry_text(U, g.bytes, g.len);
  CHECK(text && strstr(text, ":CASE :INVERT") != NULL);
  free(text);
  free(g.bytes);
  free(x.bytes);
  free(before);
  jiti_close(U);
  jiti_close(T);
  jiti_close(S);
}

/* (declaim (declaration name)) is kept as NAME's type entry (no name is
** both): after a restart the name is still accepted without a warning and
** still cannot become a type; a restored proclamation leaves no trace. */
static void test_declaration_names(void) {
  static const char *const WARNS =
    "(block w (handler-bind ((warning (lambda (c) (declare (ignore c)) (return-from w :warned))))"
    " (eval '(let ((x 1)) (declare (%s x)) x))))";
  char q[512];
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  snprintf(q, sizeof q, WARNS, "my-note");
  CHECK_STR(txn(S, q), ":WARNED");
  CHECK_STR(txn(S, "(declaim (declaration my-note))"), "NIL");
  CHECK(jiti_world_count(S, JITI_ENTRY_TYPE) == 1);
  CHECK_STR(txn(S, q), "1");
  char *before = dump(S);
  jiti_checkpoint(S);
  CHECK_STR(ev(S, "(proclaim '(declaration gone-note))"), "NIL");
  char *during = changed(S);
  CHECK(strstr(during, "type GONE-NOTE "));
  free(during);
  jiti_restore(S);
  char *after = dump(S);
  CHECK_STR(after, before);
  snprintf(q, sizeof q, WARNS, "gone-note");
  CHECK_STR(ev(S, q), ":WARNED");
  CHECK_STR(ev(S, "(deftype gone-note () t)"), "GONE-NOTE");

  jiti_State *T = restart(S);
  snprintf(q, sizeof q, WARNS, "my-note");
  CHECK_STR(ev(T, q), "1");
  CHECK(strstr(txn(T, "(defstruct my-note a)"), "it is proclaimed a declaration name"));
  CHECK(strstr(txn(T, "(deftype my-type () 'integer) (proclaim '(declaration my-type))"), "it names a type"));
  CHECK(strstr(txn(T, "(proclaim '(declaration car))"), "built-in name"));
  free(before);
  free(after);
  jiti_close(T);
  jiti_close(S);
}

int main(void) {
  test_declaration_names();
  test_each_kind_survives_a_restart();
  test_method_combination();
  test_import_order();
  test_restored_leaves_no_trace();
  test_plist_changed_in_place();
  test_builtins_refused();
  test_import_checks_forms();
  test_imported_functions_analysed_later();
  test_entry_text();
  test_readtables();
  return CHECK_DONE();
}
