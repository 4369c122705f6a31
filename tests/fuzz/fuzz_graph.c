/*
** fuzz_graph.c — libFuzzer harness for the walks over structure a program
** builds at run time: the bytes describe a small graph of conses (circular
** through cdrs or cars, or a DAG that shares its parts), and name the entry
** points that get it — the analyser (forms given to eval), the package
** functions, the list and sequence functions, equality and hashing, format,
** typep and subtypep, the printer, the world's encoder.  Each input is one
** transaction under small limits, then restored.  A Lisp error or a limit
** is the expected outcome; a crash, a sanitizer report, a hang past the
** limits or a leak is a finding.
**
** Input: byte 0 gives the number of conses n (1..32); then two bytes per
** cons, its car and its cdr: a byte with the top bit set names cons
** (b & 0x7f) % n, any other an atom of ATOMS.  Every byte after that names
** an entry point of ENTRIES (low 7 bits) applied to the cons its top bit
** and the next byte choose (0 or another), at most 8 calls per input.
** The graph is made by Lisp source built from the bytes, so the same input
** can be replayed by hand: the harness prints the source with JITI_FUZZ_SHOW=1.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"

static jiti_State *S;
static int show;

static void discard(void *ud, const char *s, size_t n) { (void)ud; (void)s; (void)n; }

/* What a car or cdr may hold besides another cons: the atoms that steer the
** walks into their cases (special operators, lambda-list keywords, type
** specifier heads, package names). */
static const char *const ATOMS[] = {
  "nil", "t", "'a", "'b", "1", "2", "\"s\"", ":a", "'progn", "'let", "'lambda",
  "'quote", "'or", "'and", "'not", "'member", "'integer", "'string", "'&rest",
  "'&optional", "'&key", "'x", "'declare", "'special", "'function", "'setq",
  "'cons", "'list", "'if", "'block", "'tagbody", "\"COMMON-LISP\"", "'defun",
  "'defmacro", "'flet", "'eql", "'satisfies", "'vector", "'quasiquote",
  "'unquote", "1.5d0", "'(1 2)", "#(1 2)", "'&whole", "'&body", "'go",
};
#define NATOMS (sizeof ATOMS / sizeof ATOMS[0])

/* The entry points: "@" stands for the chosen cons. */
static const char *const ENTRIES[] = {
  /* the analyser: a form, or a part of one */
  "(eval @)", "(eval (cons 'progn @))", "(eval (list* 'let @ nil))",
  "(eval (list* 'let* '((x 1)) @))", "(eval (list* 'lambda @ nil))",
  "(eval (list 'function (list* 'lambda @)))", "(eval (list* 'defun 'fz-f @))",
  "(eval (list* 'defmacro 'fz-m @))", "(eval (cons 'tagbody @))", "(eval (cons 'setq @))",
  "(eval (list* 'flet @ nil))", "(eval (list* 'labels @ nil))", "(eval (list* 'macrolet @ nil))",
  "(eval (list* 'symbol-macrolet @ nil))", "(eval (list 'quasiquote @))",
  "(eval (list* 'destructuring-bind @ '(list 1 2) nil))",
  "(eval (list* 'multiple-value-bind @ '(values 1 2) nil))", "(eval (list* 'handler-case 1 @))",
  "(eval (list* 'handler-bind @ nil))", "(eval (list* 'defstruct @))",
  "(eval (list* 'defclass 'fz-c nil @))", "(eval (list* 'defgeneric 'fz-g @))",
  "(eval (list* 'defmethod 'fz-g @))", "(eval (list* 'defpackage \"FZ-D\" @))",
  "(eval (list* 'case 1 @))", "(eval (list* 'cond @))", "(eval (list* 'and @))",
  "(eval (list* 'locally @))", "(eval (list* 'eval-when @ nil))", "(eval (list* 'progv @ nil))",
  "(eval (list* 'loop @))", "(eval (list 'let nil (cons 'declare @)))", "(macroexpand @)",
  /* packages */
  "(export @)", "(unexport @)", "(import @)", "(shadow @)", "(shadowing-import @)",
  "(use-package @)", "(unuse-package @)", "(make-package \"FZ-P\" :use @)",
  "(make-package \"FZ-Q\" :nicknames @)", "(find-all-symbols @)",
  /* lists and sequences */
  "(length @)", "(list-length @)", "(reverse @)", "(nreverse @)", "(append @ '(1))",
  "(nconc (list 1) @)", "(last @)", "(butlast @)", "(copy-list @)", "(copy-alist @)",
  "(copy-tree @)", "(member 'a @)", "(assoc 'a @)", "(rassoc 'a @)", "(find 'a @)",
  "(position 'a @ :from-end t)", "(count 'a @)", "(remove 'a @)", "(delete 'a @)",
  "(sort @ (lambda (a b) (and (realp a) (realp b) (< a b))))", "(mapcar #'identity @)",
  "(mapc #'identity @)", "(mapcan #'list @)", "(reduce #'cons @)", "(every #'atom @)",
  "(union @ '(1))", "(intersection @ @)", "(subst 'x 'a @)", "(nsubst 'x 'a @)",
  "(sublis '((a . b)) @)", "(tree-equal @ @)", "(equal @ (copy-tree '(a b)))", "(equal @ @)",
  "(equalp @ (list 'a))", "(sxhash @)", "(getf @ :a)", "(get-properties @ '(:a))", "(nth 9 @)",
  "(subseq @ 1)", "(fill @ 0)", "(coerce @ 'vector)", "(apply #'list @)", "(values-list @)",
  "(destructuring-bind (a &rest b) @ (list a b))", "(ldiff @ 'z)", "(tailp 'z @)",
  "(adjoin 'z @)", "(remove-duplicates @)", "(pairlis @ @)",
  "(let ((h (make-hash-table :test 'equal))) (setf (gethash @ h) 1) (gethash @ h))",
  "(let ((s (gensym))) (setf (symbol-plist s) @) (list (get s 'a) (remprop s 'b)))",
  "(make-array 2 :initial-contents @)", "(make-array @)",
  /* format */
  "(format nil \"~{~a~}\" @)", "(format nil \"~:{~a~}\" @)", "(format nil \"~a\" @)",
  "(apply #'format nil \"~a ~s~%\" @)", "(format nil \"~<~a~:>\" @)", "(format nil \"~@{~a~}\" @)",
  /* types */
  "(typep 1 @)", "(typep 'a @)", "(typep @ @)", "(subtypep @ 'integer)", "(subtypep 'integer @)",
  "(coerce 1 @)", "(make-array 2 :element-type @)", "(typep 1 (cons 'or @))",
  "(subtypep (cons 'and @) 'number)",
  /* the printer and the world */
  "(prin1-to-string @)", "(let ((*print-circle* t)) (prin1-to-string @))",
  "(let ((*print-circle* t)) (read-from-string (prin1-to-string @)))",
  "(let ((*print-length* 5) (*print-level* 3)) (write-to-string @ :pretty t))",
  "(princ-to-string (make-condition 'simple-error :format-control \"~a\" :format-arguments @))",
  "(describe @)", "(world-put :fz @)",
};
#define NENTRIES (sizeof ENTRIES / sizeof ENTRIES[0])

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  S = jiti_open();
  if (!S) abort();
  jiti_set_output(S, discard, NULL);
  jiti_world_enable(S);
  const char *e = getenv("JITI_FUZZ_SHOW");
  show = e && e[0] == '1';
  return 0;
}

typedef struct Buf { char *p; size_t n, cap; } Buf;

static void put(Buf *b, const char *s) {
  size_t k = strlen(s);
  if (b->n + k + 1 > b->cap) {
    b->cap = (b->n + k + 1) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->n, s, k + 1);
  b->n += k;
}

/* The car or cdr spec byte c as a Lisp expression. */
static void put_spec(Buf *b, uint8_t c, int n) {
  char t[32];
  if (c & 0x80) {
    snprintf(t, sizeof t, "(aref v %d)", (c & 0x7f) % n);
    put(b, t);
  } else {
    put(b, ATOMS[c % NATOMS]);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  int n = 1 + data[0] % 32;
  if (size < 1 + 2 * (size_t)n + 1) return 0;
  Buf b = {0};
  char t[64];
  snprintf(t, sizeof t, "(let ((v (make-array %d)))", n);
  put(&b, t);
  snprintf(t, sizeof t, "(dotimes (i %d) (setf (aref v i) (cons nil nil)))", n);
  put(&b, t);
  for (int i = 0; i < n; i++) {
    snprintf(t, sizeof t, "(setf (car (aref v %d)) ", i);
    put(&b, t);
    put_spec(&b, data[1 + 2 * i], n);
    snprintf(t, sizeof t, " (cdr (aref v %d)) ", i);
    put(&b, t);
    put_spec(&b, data[2 + 2 * i], n);
    put(&b, ")");
  }
  /* each call is its own handler-case: one's error leaves the next to run */
  size_t k = 1 + 2 * (size_t)n;
  for (int calls = 0; k < size && calls < 8; calls++) {
    uint8_t e = data[k++];
    int root = 0;
    if ((e & 0x80) && k < size) root = data[k++] % n;
    snprintf(t, sizeof t, "(aref v %d)", root);
    put(&b, "(handler-case ");
    for (const char *s = ENTRIES[(e & 0x7f) % NENTRIES]; *s; s++) {
      if (*s == '@') put(&b, t);
      else { char c[2] = {*s, 0}; put(&b, c); }
    }
    put(&b, " (error () nil))");
  }
  put(&b, " nil)");   /* the result is no structure to print */
  if (show) fprintf(stderr, "%s\n", b.p);
  /* as fuzz_eval (a tick of fuel may stand for 255 steps of C work), with
  ** less heap: printing a circular list to a string, or copying a shared
  ** graph, ends at the heap limit, which an instrumented build is slow to
  ** fill */
  jiti_Limits lim = {.fuel = 20000, .depth = 400, .heap = (uint64_t)4 << 20, .output = 65536};
  jiti_checkpoint(S);
  jiti_Result r;
  jiti_eval_limited(S, b.p, b.n, &lim, &r);
  jiti_result_free(&r);
  jiti_restore(S);
  jiti_reset_io_syntax(S);
  free(b.p);
  return 0;
}
