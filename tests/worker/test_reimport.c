/* test_reimport.c — a published world always imports back as the same world.
**
** Property: random histories of calls (ordinary definitions of every kind,
** structures and classes with stored instances, methods, packages, data
** rows, and the calls that once made a store unimportable: names that are
** uninterned symbols or hold a NUL, packages deleted or renamed under their
** entries, a structure redefined under its instances or over a class, eql
** specializers that are not literals) each run as a transaction in a
** worker's world.  What an accepted call changed is published into a model
** store (kind and name -> bytes, as the store keeps them).  At the end of a
** history, and now and then in the middle of one (the history then goes on
** in the new world, as after a kernel restart), the store is imported into
** a fresh world the way the worker imports a revision (kinds in the store's
** order, a failed entry faults the world, then jiti_import_done and the
** baseline check).  The imported world must not be faulted, must export
** exactly what the live world exports (the entries of the store), and must
** answer a set of probes (functions, methods, variables, rows, structures,
** instances, packages, symbols) as the live world does.
**
** On a failure the seed and a shrunk history (calls deleted while it still
** fails) are printed.
**
**   JITI_REIMPORT_ROUNDS=N  histories (default 100; 5 under GC stress)
**   JITI_REIMPORT_SEED=S    first seed (default 20261207)
**
** Then, one test per rule: each call is refused with its reason, the world
** keeps serving, and the store imports back unfaulted.
*/
#include <stdlib.h>
#include <stdint.h>
#include "txn.h"
#include "check.h"

/* ------------------------------------------------------------ the calls */

/* $I, $J: small indices (0..2); $V: a small integer. */
static const char *const calls[] = {
  /* ordinary definitions */
  "(defun f$I () $V)",
  "(defun f$I () (list $V (ignore-errors (f$J))))",
  "(defmacro m$I (x) `(list ,x $V))",
  "(defun uses-m$I () (m$I $V))",
  "(defun (setf f$I) (v) (list :set v $V))",
  "(fmakunbound 'f$I)",
  "(defvar *v$I* $V)",
  "(defparameter *v$I* (list $V 'sym \"s\" #\\c 1.5 :kw))",
  "(defparameter *v$I* (make-s$J :a $V))",
  "(defparameter *v$I* (make-instance 'c$J :a $V))",
  "(progn (defvar *v$I* nil) (setf *v$I* (list $V *v$J*)))",
  "(defconstant +k$I+ $V)",
  "(defstruct s$I a b)",
  "(defstruct s$I a b c)",
  "(defstruct s$I a)",
  "(defstruct s$I (a $V) b)",
  "(world-put :k$J (make-s$I :a $V))",
  "(defclass c$I () ((a :initarg :a :accessor c$I-a)))",
  "(defclass c$I () ((a :initarg :a :accessor c$I-a) (b :initform $V :accessor c$I-b)))",
  "(world-put :k$J (make-instance 'c$I :a $V))",
  "(defgeneric g$I (x))",
  "(defmethod g$I ((x integer)) (+ x $V))",
  "(defmethod g$I ((x (eql :k$J))) $V)",
  "(defmethod g$I ((x (eql $V))) (list :eql $V))",
  "(defmethod g$I ((x (eql 'sym))) (list :sym $V))",
  "(defmethod g$I ((x (eql \"abc\"))) (list :abc $V))",
  "(defmethod g$I ((x c$J)) (list :c (c$J-a x)))",
  "(defmethod g$I :around ((x t)) (list :around (call-next-method)))",
  "(defpackage :p$I (:use :cl))",
  "(defun p$I::f () $V)",
  "(world-put :k$J 'p$I::sym)",
  "(in-package :p$I)",
  "(cl:in-package :cl-user)",
  "(world-put :k$J $V)",
  "(world-rem :k$J)",
  "(world-put \"k$J\" (list $V \"x\" #\\y))",
  "(world-put '(:k $J) (vector $V 2.5d0))",
  "(defstruct (s$I (:include s$J)) d)",
  "(defclass c$I (c$J) ((d :initform $V :allocation :class :accessor c$I-d)))",
  "(define-condition e$I (error) ((a :initarg :a :reader e$I-a)))",
  "(defgeneric g$I (x) (:method ((x string)) (list :string $V)))",
  "(world-put :k$J (let ((h (make-hash-table :test 'equal))) (setf (gethash \"a\" h) $V (gethash 'sym h) (list $V)) h))",
  "(defpackage :p$I (:use :cl) (:export #:sym #:f))",
  "(use-package :p$I)",
  "(unuse-package :p$I)",
  "(export 'p$I::sym :p$I)",
  "(unexport 'p$I::sym :p$I)",
  "(import 'p$I::sym)",
  "(shadow \"SYM\")",
  "(defvar *v$I* (list 'sym 'p$J::sym))",
  "(defmacro defthing (n) (let ((x (gensym))) `(defun ,n (,x) (* 2 ,x))))",
  "(defthing dbl$I)",
  /* calls that once left the store unimportable */
  "(defun #:x$I () $V)",
  "(defmacro #:m$I () $V)",
  "(defvar #:v$I $V)",
  "(defparameter #:v$I $V)",
  "(defconstant #:k$I $V)",
  "(defstruct #:s$I a)",
  "(define-condition #:e$I (error) ())",
  "(defclass #:c$I () ())",
  "(defgeneric #:g$I (x))",
  "(defmethod #:g$I ((x t)) $V)",
  "(defun (setf #:x$I) (v) v)",
  "(delete-package :p$I)",
  "(rename-package :p$I :q$I)",
  "(progn (in-package :p$I) (cl:delete-package :p$I))",
  "(unintern 'f$I)",
  "(defstruct c$I a)",
  "(defclass s$I () ())",
  "(define-condition c$I (error) ())",
  "(defmethod g$I ((x (eql (make-instance 'c$J)))) $V)",
  "(defmethod g$I ((x (eql (list $V 2)))) 1)",
  "(defmethod g$I ((x (eql (vector $V)))) 1)",
  "(defmethod g$I ((x (eql '#:sym$V))) 1)",
  "(defmethod g$I ((x (eql *v$J*))) 1)",
  "(world-put (intern (format nil \"K$J~cX\" (code-char 0)) :keyword) $V)",
  "(eval (list 'defun (intern (format nil \"F$I~cX\" (code-char 0))) () $V))",
  "(eval (list 'defvar (intern (format nil \"*V$I~cX*\" (code-char 0))) $V))",
  "(make-package (format nil \"P$I~cX\" (code-char 0)))",
  "(world-put (format nil \"k$J~cz\" (code-char 0)) $V)",
  "(world-put (vector $V) 1)",
  "(world-put (make-s$I :a $V) 1)",
  NULL};

#define NCALLS ((int)(sizeof calls / sizeof calls[0]) - 1)

/* The probes, evaluated in COMMON-LISP-USER in both worlds (inside a
** checkpoint that is restored): what a program would see. */
static const char probe_src[] =
  "(labels ((try (thunk) (handler-case (funcall thunk) (error () :error)))"
  "         (show (v) (cond ((consp v) (mapcar #'show v))"
  "                         ((hash-table-p v) (let ((r nil)) (maphash (lambda (k x) (push (list (show k) (show x)) r)) v)"
  "                                             (list :hash (hash-table-test v) (reverse r))))"
  "                         ((typep v '(or number character symbol string vector structure-object)) v)"
  "                         (t (list :instance (type-of v) (try (lambda () (slot-value v 'a)))"
  "                                  (try (lambda () (slot-value v 'b)))))))"
  "         (fn (name &rest args) (if (fboundp name) (try (lambda () (show (apply name args)))) :undefined))"
  "         (var (name) (if (boundp name) (show (symbol-value name)) :unbound)))"
  "  (list (mapcar #'fn '(f0 f1 f2))"
  "        (mapcar (lambda (f) (fn f 3)) '(dbl0 dbl1 dbl2))"
  "        (mapcar (lambda (i) (if (fboundp (list 'setf i)) (try (lambda () (funcall (fdefinition (list 'setf i)) 7))) :undefined))"
  "                '(f0 f1 f2))"
  "        (mapcar (lambda (g) (mapcar (lambda (a) (fn g a)) (list 1 3 :k0 :k1 'sym \"abc\" (world-get :k0) (world-get :k1))))"
  "                '(g0 g1 g2))"
  "        (mapcar #'var '(*v0* *v1* *v2* +k0+ +k1+ +k2+))"
  "        (mapcar (lambda (v) (if (boundp v) (mapcar (lambda (x) (if (symbolp x) (list x (symbol-package x)) (show x)))"
  "                                                      (if (listp (symbol-value v)) (symbol-value v) nil))"
  "                                :unbound)) '(*v0* *v1* *v2*))"
  "        (multiple-value-list (find-symbol \"SYM\" \"COMMON-LISP-USER\"))"
  "        (mapcar (lambda (k) (list k (show (world-get k)))) (world-keys))"
  "        (mapcar (lambda (s) (if (fboundp s) (try (lambda () (show (funcall s :a 1)))) :undefined))"
  "                '(make-s0 make-s1 make-s2))"
  "        (mapcar (lambda (c) (if (find-class c nil) (try (lambda () (show (make-instance c :a 2)))) :no-class))"
  "                '(c0 c1 c2))"
  "        (sort (mapcar #'package-name (list-all-packages)) #'string<)"
  "        (mapcar (lambda (p) (let ((s (and (find-package p) (find-symbol \"F\" p))))"
  "                              (if (and s (fboundp s)) (try (lambda () (funcall s))) :none)))"
  "                '(\"P0\" \"P1\" \"P2\" \"Q0\" \"Q1\" \"Q2\"))))";

static uint64_t rng_state;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}

typedef struct Op { int call, i, j, v, restart; } Op;
#define MAXOPS 48

static void expand(const Op *o, char *out, size_t n) {
  const char *t = calls[o->call];
  size_t k = 0;
  for (; *t && k + 8 < n; t++) {
    if (t[0] == '$' && (t[1] == 'I' || t[1] == 'J' || t[1] == 'V')) {
      k += (size_t)snprintf(out + k, n - k, "%d", t[1] == 'I' ? o->i : t[1] == 'J' ? o->j : o->v);
      t++;
    } else {
      out[k++] = *t;
    }
  }
  out[k] = 0;
}

/* ------------------------------------------------------- the model store */

typedef struct Entry { int kind; char *name; unsigned char *bytes; size_t len; } Entry;
typedef struct Store { Entry *e; int n, cap; } Store;

static void store_free(Store *s) {
  for (int i = 0; i < s->n; i++) { free(s->e[i].name); free(s->e[i].bytes); }
  free(s->e);
  memset(s, 0, sizeof *s);
}

static void store_set(Store *s, int kind, const char *name, const unsigned char *bytes, size_t len) {
  int at = -1;
  for (int i = 0; i < s->n && at < 0; i++)
    if (s->e[i].kind == kind && !strcmp(s->e[i].name, name)) at = i;
  if (!bytes) {
    if (at >= 0) {
      free(s->e[at].name);
      free(s->e[at].bytes);
      s->e[at] = s->e[--s->n];
    }
    return;
  }
  if (at < 0) {
    if (s->n == s->cap) {
      s->cap = s->cap ? 2 * s->cap : 32;
      s->e = realloc(s->e, (size_t)s->cap * sizeof *s->e);
    }
    at = s->n++;
    s->e[at].kind = kind;
    s->e[at].name = strdup(name);
  } else {
    free(s->e[at].bytes);
  }
  s->e[at].bytes = malloc(len ? len : 1);
  memcpy(s->e[at].bytes, bytes, len);
  s->e[at].len = len;
}

/* The store's order: kinds as the kernel imports them, names in byte order. */
static const int kind_rank[JITI_ENTRY_KIND_COUNT] = {
  [JITI_ENTRY_PACKAGE] = 0, [JITI_ENTRY_STRUCTURE] = 1, [JITI_ENTRY_CLASS] = 2, [JITI_ENTRY_FOREIGN] = 3,
  [JITI_ENTRY_MACRO] = 4, [JITI_ENTRY_FUNCTION] = 5, [JITI_ENTRY_VARIABLE] = 6,
  [JITI_ENTRY_GENERIC] = 7, [JITI_ENTRY_METHOD] = 8, [JITI_ENTRY_DATA] = 9,
  [JITI_ENTRY_INVARIANT] = 10};

static int entry_cmp(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  if (x->kind != y->kind) return kind_rank[x->kind] - kind_rank[y->kind];
  return strcmp(x->name, y->name);
}

static int collect(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  store_set(ud, (int)k, name, b, len);
  return 0;
}

/* Do two stores hold the same entries — and, with `bytes`, the same
** encodings?  (A stored symbol is named as COMMON-LISP-USER sees it when it
** is written; an import or an export since may name it another way that
** reads as the same symbol, so an entry not written again can keep other
** bytes than a fresh export.)  why names the first difference. */
static int same_store(Store *a, Store *b, int bytes, const char *what, char *why, size_t n) {
  if (a->n > 1) qsort(a->e, (size_t)a->n, sizeof *a->e, entry_cmp);
  if (b->n > 1) qsort(b->e, (size_t)b->n, sizeof *b->e, entry_cmp);
  for (int i = 0; i < a->n || i < b->n; i++) {
    Entry *x = i < a->n ? &a->e[i] : NULL, *y = i < b->n ? &b->e[i] : NULL;
    if (x && y && x->kind == y->kind && !strcmp(x->name, y->name) &&
        (!bytes || (x->len == y->len && !memcmp(x->bytes, y->bytes, x->len))))
      continue;
    snprintf(why, n, "%s: one has %s %s, the other %s %s%s", what, x ? jiti_entry_kind_name(x->kind) : "nothing",
             x ? x->name : "", y ? jiti_entry_kind_name(y->kind) : "nothing", y ? y->name : "",
             x && y && x->kind == y->kind && !strcmp(x->name, y->name) ? " (other bytes)" : "");
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------ a restart */

/* The store imported into a fresh world as the worker imports a revision;
** NULL with why when it is faulted. */
static txn_World *restart(Store *s, char *why, size_t n) {
  txn_World *W = txn_open(NULL);
  jiti_State *S = txn_state(W);
  if (s->n > 1) qsort(s->e, (size_t)s->n, sizeof *s->e, entry_cmp);
  char fault[1024] = "";
  for (int i = 0; i < s->n; i++) {
    char err[512];
    if (jiti_import_entry(S, (jiti_EntryKind)s->e[i].kind, s->e[i].name, s->e[i].bytes, s->e[i].len, err,
                          sizeof err) != JITI_OK) {
      snprintf(fault, sizeof fault, "cannot import %s %s: %s", jiti_entry_kind_name(s->e[i].kind),
               s->e[i].name, err);
      txn_set_import_fault(W, fault);
    } else {
      txn_note_entry(W, (jiti_EntryKind)s->e[i].kind, s->e[i].name, s->e[i].bytes, s->e[i].len);
    }
  }
  char err[512];
  if (jiti_import_done(S, err, sizeof err) != JITI_OK) {
    snprintf(fault, sizeof fault, "cannot import: %s", err);
    txn_set_import_fault(W, fault);
  }
  char msg[1024] = "";
  if (txn_check_baseline(W, msg, sizeof msg) || txn_status(W) == TXN_ST_FAULTED) {
    snprintf(why, n, "the restarted world is faulted: %s", fault[0] ? fault : msg);
    txn_close(W);
    return NULL;
  }
  return W;
}

static char *probe(txn_World *W) {
  jiti_State *S = txn_state(W);
  char err[256];
  jiti_checkpoint(S);
  jiti_package_bind(S, "COMMON-LISP-USER", err, sizeof err);
  jiti_Result r;
  jiti_Status st = jiti_eval_string(S, probe_src, strlen(probe_src), &r);
  jiti_package_unbind(S);
  jiti_restore(S);
  size_t len = (r.value ? strlen(r.value) : 0) + (r.message ? strlen(r.message) : 0) + 64;
  char *out = malloc(len);
  snprintf(out, len, "%s%s", st == JITI_OK ? "" : "probe failed: ", st == JITI_OK ? r.value : r.message);
  jiti_result_free(&r);
  return out;
}

/* The live world, the store, and the store imported afresh agree; the
** imported world replaces the live one (*W) when `replace`. */
static int agree(txn_World **W, Store *store, int replace, char *why, size_t n) {
  Store live = {0}, back = {0};
  char err[512];
  int ok = 1;
  if (jiti_export_all(txn_state(*W), collect, &live, err, sizeof err) != JITI_OK) {
    snprintf(why, n, "the live world does not export: %s", err);
    ok = 0;
  }
  if (ok) ok = same_store(store, &live, 0, "the store and the live world", why, n);
  txn_World *T = ok ? restart(store, why, n) : NULL;
  if (!T) ok = 0;
  if (ok && jiti_export_all(txn_state(T), collect, &back, err, sizeof err) != JITI_OK) {
    snprintf(why, n, "the imported world does not export: %s", err);
    ok = 0;
  }
  if (ok) ok = same_store(&live, &back, 1, "the live world and the imported one", why, n);
  if (ok) {
    char *a = jiti_world_package(txn_state(*W)), *b = jiti_world_package(txn_state(T));
    if (strcmp(a, b)) {
      snprintf(why, n, "the current package is %s, imported %s", a, b);
      ok = 0;
    }
    free(a);
    free(b);
  }
  if (ok) {
    char *a = probe(*W), *b = probe(T);
    if (strcmp(a, b)) {
      snprintf(why, n, "the imported world answers differently:\n    live:     %.1500s\n    imported: %.1500s", a, b);
      ok = 0;
    }
    free(a);
    free(b);
  }
  store_free(&live);
  store_free(&back);
  if (ok && replace) {
    txn_close(*W);
    *W = T;
  } else if (T) {
    txn_close(T);
  }
  return ok;
}

/* -------------------------------------------------------------- histories */

/* Run a history: -1 when it holds, else the index of the failing call (n:
** the final restart). */
static int run_history(const Op *ops, int n, char *why, size_t wn) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  int fail = -1;
  for (int i = 0; i < n && fail < 0; i++) {
    char src[512];
    expand(&ops[i], src, sizeof src);
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), src, TXN_ACTION, NULL, NULL, &o);
    if (r == TXN_ACCEPTED) {
      for (int c = 0; c < o.nchanges; c++)
        store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
      txn_commit(W);
    }
    txn_outcome_free(&o);
    if (txn_status(W) != TXN_ST_IDLE) {
      snprintf(why, wn, "after %s the world is %s", src, txn_status_name(txn_status(W)));
      fail = i;
    } else if (ops[i].restart && !agree(&W, &store, 1, why, wn)) {
      fail = i;
    }
  }
  if (fail < 0 && !agree(&W, &store, 0, why, wn)) fail = n;
  txn_close(W);
  store_free(&store);
  return fail;
}

static void gen_ops(unsigned seed, Op *ops, int *n) {
  rng_state = 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0x100000001B3ull);
  if (!rng_state) rng_state = 1;
  *n = 8 + (int)(rnd() % 33);
  for (int k = 0; k < *n; k++) {
    Op *o = &ops[k];
    o->call = (int)(rnd() % NCALLS);
    o->i = (int)(rnd() % 3);
    o->j = (int)(rnd() % 3);
    o->v = (int)(rnd() % 12) - 2;
    o->restart = rnd() % 10 == 0;
  }
}

static void report_failure(unsigned seed, const Op *ops, int n) {
  Op cur[MAXOPS];
  int cn = n;
  memcpy(cur, ops, sizeof(Op) * (size_t)n);
  char why[4096];
  for (int changed = 1; changed;) {   /* shrink: delete calls while it still fails */
    changed = 0;
    for (int i = 0; i < cn && !changed; i++) {
      Op trial[MAXOPS];
      int tn = 0;
      for (int k = 0; k < cn; k++) if (k != i) trial[tn++] = cur[k];
      if (run_history(trial, tn, why, sizeof why) >= 0) {
        memcpy(cur, trial, sizeof(Op) * (size_t)tn);
        cn = tn;
        changed = 1;
      }
    }
  }
  int at = run_history(cur, cn, why, sizeof why);
  fprintf(stderr, "FAIL history seed %u (%d calls), shrunk to %d, failing at %d: %s\n", seed, n, cn, at, why);
  for (int i = 0; i < cn; i++) {
    char src[512];
    expand(&cur[i], src, sizeof src);
    fprintf(stderr, "  %d: %s%s\n", i, src, cur[i].restart ? "   ; then a restart" : "");
  }
}

/* ------------------------------------------------------- each rule alone */

/* `setup` accepted call by call, then `call` refused with a reason holding
** `reason`; the world idle; the store imports back unfaulted and equal. */
static void refused(const char *setup[], const char *call, txn_Reason want, const char *reason) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  for (int i = 0; setup && setup[i]; i++) {
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), setup[i], TXN_ACTION, NULL, NULL, &o);
    if (r != TXN_ACCEPTED) fprintf(stderr, "setup %s: %s %s\n", setup[i], txn_reason_name(r), o.message);
    CHECK(r == TXN_ACCEPTED);
    for (int c = 0; c < o.nchanges; c++)
      store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
    txn_outcome_free(&o);
    txn_commit(W);
  }
  txn_Outcome o;
  txn_Reason r = txn_attempt(W, txn_generation(W), call, TXN_APPLICATION, NULL, NULL, &o);
  int ok = r == want && o.message && strstr(o.message, reason) && o.nchanges == 0;
  if (!ok) fprintf(stderr, "%s: %s \"%s\", expected %s \"...%s...\"\n", call, txn_reason_name(r),
                   o.message ? o.message : "", txn_reason_name(want), reason);
  CHECK(ok);
  txn_outcome_free(&o);
  CHECK(txn_status(W) == TXN_ST_IDLE);
  /* the kernel keeps serving */
  r = txn_attempt(W, txn_generation(W), "(jiti:world-put :after 1)", TXN_ACTION, NULL, NULL, &o);
  if (r != TXN_ACCEPTED) fprintf(stderr, "after %s: %s %s\n", call, txn_reason_name(r), o.message);
  CHECK(r == TXN_ACCEPTED);
  for (int c = 0; c < o.nchanges; c++)
    store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
  txn_outcome_free(&o);
  txn_commit(W);
  char why[4096];
  int agreed = agree(&W, &store, 0, why, sizeof why);
  if (!agreed) fprintf(stderr, "%s: %s\n", call, why);
  CHECK(agreed);
  txn_close(W);
  store_free(&store);
}

#define UNSAFE TXN_UNSAFE
#define ERROR TXN_ERROR

static void test_each_rule(void) {
  const char *pkg[] = {"(defpackage :p1 (:use :cl))", "(defun p1::f () 1)", NULL};
  const char *pkg_current[] = {"(defpackage :p1 (:use :cl))", "(in-package :p1)", NULL};
  const char *pkg_row[] = {"(defpackage :p1 (:use :cl))", "(world-put :k 'p1::x)", NULL};
  const char *fn[] = {"(defun f0 () 1)", "(defun g0 () (h0))", NULL};
  const char *st[] = {"(defstruct s1 a b)", "(world-put :k (make-s1 :a 1 :b 2))", NULL};
  const char *st_var[] = {"(defstruct s1 a b)", "(defvar *s* (list (make-s1 :a 1 :b 2)))", NULL};
  const char *st_inc[] = {"(defstruct s1 a)", "(defstruct (s2 (:include s1)) b)", NULL};
  const char *cls[] = {"(defclass c1 () ((a :initarg :a)))", "(defgeneric g (x))", NULL};
  const char *sup[] = {"(defclass c2 (c1) ())", NULL};
  const char *sto[] = {"(defstruct s1 a)", NULL};
  const char *row[] = {"(world-put :foo 1)", "(world-put \"k\" 2)", NULL};
  /* names the store cannot give back */
  refused(NULL, "(defun #:x () 1)", UNSAFE, "unexportable: function #:X would not import back as itself: it is named by an uninterned symbol");
  refused(NULL, "(defmacro #:m () 1)", UNSAFE, "macro #:M would not import back");
  refused(NULL, "(defvar #:v 1)", UNSAFE, "variable #:V would not import back");
  refused(NULL, "(defparameter #:v 1)", UNSAFE, "variable #:V would not import back");
  refused(NULL, "(defconstant #:k 1)", UNSAFE, "variable #:K would not import back");
  refused(NULL, "(defstruct #:s a)", UNSAFE, "structure #:S would not import back");
  refused(NULL, "(define-condition #:e (error) ())", UNSAFE, "structure #:E would not import back");
  refused(NULL, "(defclass #:c () ())", UNSAFE, "class #:C would not import back");
  refused(NULL, "(defgeneric #:g (x))", UNSAFE, "generic #:G would not import back");
  refused(NULL, "(defmethod #:g ((x t)) 1)", UNSAFE, "method (#:G (T)) would not import back");
  refused(NULL, "(defun (setf #:x) (v) v)", UNSAFE, "function (SETF #:X) would not import back");
  refused(row, "(world-put (intern (format nil \"FOO~cBAR\" (code-char 0)) :keyword) 2)", ERROR,
          "is not storable in the world: a symbol whose name holds a NUL character");
  refused(row, "(eval (list 'defun (intern (format nil \"F~cX\" (code-char 0))) () 1))", UNSAFE,
          "a symbol whose name holds a NUL character");
  refused(row, "(eval (list 'defvar (intern (format nil \"*V~cX*\" (code-char 0))) 1))", UNSAFE,
          "would not import back as itself: its name does not read back");
  refused(row, "(make-package (format nil \"P~cX\" (code-char 0)))", UNSAFE, "would not import back as itself");
  refused(row, "(world-put (format nil \"k~cz\" (code-char 0)) 3)", UNSAFE, "would not import back as itself");
  refused(row, "(world-put (vector 1) 2)", UNSAFE, "its key would not find the row again");
  /* packages and symbols the stored entries rely on */
  refused(pkg, "(delete-package :p1)", ERROR, "cannot delete the package P1: the world's entries name its symbols (function P1::F)");
  refused(pkg, "(rename-package :p1 :p2)", ERROR, "cannot rename the package P1");
  refused(pkg_current, "(cl:delete-package :p1)", ERROR, "it is the world's current package");
  refused(pkg_row, "(delete-package :p1)", ERROR, "(data :K)");
  const char *pkg_struct[] = {"(defpackage :p1 (:use :cl))", "(in-package :p1)", "(defstruct cl-user::thing cl-user::a)",
                              "(cl:in-package :cl-user)", NULL};
  refused(pkg_struct, "(delete-package :p1)", ERROR, "the structure THING was defined in it");
  refused(fn, "(unintern 'f0)", ERROR, "cannot unintern F0 from COMMON-LISP-USER: the world's entries name it (function F0)");
  refused(fn, "(unintern 'h0)", ERROR, "(function G0)");
  const char *seen[] = {"(defpackage :p1 (:use :cl) (:export #:x))", "(use-package :p1)", "(defvar *v* 'x)", NULL};
  const char *unseen[] = {"(defpackage :p1 (:use :cl))", "(defun p1::f () 1)", NULL};
  refused(seen, "(unuse-package :p1)", ERROR,
          "cannot unuse it: COMMON-LISP-USER would no longer see a symbol the world's entries name (variable *V*)");
  refused(seen, "(unexport 'p1:x :p1)", ERROR, "cannot unexport it");
  refused(seen, "(shadow \"X\")", ERROR, "cannot shadow it");
  refused(unseen, "(import 'p1::f)", ERROR,
          "cannot import it: COMMON-LISP-USER would come to see a symbol the world's entries are named by (function P1::F)");
  refused(unseen, "(progn (export 'p1::f :p1) (use-package :p1))", ERROR, "cannot use it");
  /* stored instances fit their structure or class; a type's name is one type's */
  const char *inst[] = {"(defclass c1 () ((a :initarg :a)))", "(world-put :k (make-instance 'c1 :a 1))", NULL};
  refused(inst, "(defclass c1 (c9) ((a :initarg :a)))", ERROR,
          "cannot redefine the class C1 on a superclass that is not defined: the world stores instances of it (data :K)");
  refused(st, "(defstruct s1 a)", ERROR, "cannot redefine the structure S1 with other slots: the world stores instances of it (data :K)");
  refused(st_var, "(defstruct s1 a b c)", ERROR, "(variable *S*)");
  refused(st_inc, "(defstruct s1 a c)", ERROR, "the structure S2 includes it");
  refused(cls, "(defstruct c1 a)", ERROR, "cannot define C1 as a structure type: it names a class");
  refused(cls, "(define-condition c1 (error) ())", ERROR, "cannot define C1 as a condition type");
  refused(sup, "(defstruct c1 a)", ERROR, "named as a superclass");
  refused(sto, "(defclass s1 () ())", ERROR, "it names a structure");
  /* eql specializers are literal values */
  refused(cls, "(defmethod g ((x (eql (make-instance 'c1)))) 1)", ERROR, "an (EQL x) specializer needs x to be a literal");
  refused(cls, "(defmethod g ((x (eql (list 1 2)))) 1)", ERROR, "(EQL (LIST 1 2))");
  refused(cls, "(defmethod g ((x (eql (vector 1)))) 1)", ERROR, "needs x to be a literal");
  refused(cls, "(defmethod g ((x (eql '#:foo))) 1)", ERROR, "needs x to be a literal");
  refused(cls, "(defmethod g ((x (eql *print-base*))) 1)", ERROR, "needs x to be a literal");
  refused(cls, "(defgeneric h (x) (:method ((x (eql (+ 1 2)))) 1))", ERROR, "needs x to be a literal");
}

/* What still works, and comes back: a compatible structure redefinition
** keeps its stored instances of the type; a gensym bound and used in one
** stored form stays one symbol; literal eql specializers of every kind;
** a package nobody relies on can go. */
static void test_allowed(void) {
  txn_World *W = txn_open(NULL);
  Store store = {0};
  const char *calls_ok[] = {
    "(defstruct s1 a b)", "(defvar *s* (make-s1 :a 1))", "(world-put :s (make-s1 :a 2))",
    "(defstruct s1 (a 10) b)",
    "(defmacro defthing (n) (let ((x (gensym))) `(defun ,n (,x) (* 2 ,x))))", "(defthing dbl)",
    "(defgeneric g (x))", "(defmethod g ((x (eql 3))) :three)", "(defmethod g ((x (eql 2.5d0))) :float)",
    "(defmethod g ((x (eql #\\a))) :char)", "(defmethod g ((x (eql :kw))) :kw)",
    "(defmethod g ((x (eql 'sym))) :sym)", "(defmethod g ((x (eql \"abc\"))) :abc1)",
    "(defmethod g ((x (eql \"abc\"))) :abc2)", "(defmethod g ((x (eql nil))) :nil)",
    "(defpackage :gone (:use :cl))", "(defun gone::f () 1)", "(fmakunbound 'gone::f)", "(delete-package :gone)",
    "(defpackage :old (:use :cl))", "(rename-package :old :new)",
    "(defpackage :geo (:use :cl))", "(in-package :geo)", "(defstruct pt x y)", "(cl:in-package :cl-user)", NULL};
  for (int i = 0; calls_ok[i]; i++) {
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), calls_ok[i], TXN_ACTION, NULL, NULL, &o);
    if (r != TXN_ACCEPTED) fprintf(stderr, "%s: %s %s\n", calls_ok[i], txn_reason_name(r), o.message);
    CHECK(r == TXN_ACCEPTED);
    for (int c = 0; c < o.nchanges; c++)
      store_set(&store, (int)o.changes[c].kind, o.changes[c].name, o.changes[c].bytes, o.changes[c].len);
    txn_outcome_free(&o);
    txn_commit(W);
  }
  const char *want = "(S1 T T 1 10 6 :THREE :FLOAT :CHAR :KW :SYM :NIL NIL (\"NEW\") 3 NIL)";
  /* a structure's accessors are those of the package it was defined in */
  const char *src = "(list (type-of *s*) (s1-p *s*) (s1-p (world-get :s)) (s1-a *s*) (s1-a (make-s1)) (dbl 3)"
                    " (g 3) (g 2.5d0) (g #\\a) (g :kw) (g 'sym)"
                    " (g nil) (find-package :gone) (mapcar #'package-name (list (find-package :new)))"
                    " (geo::pt-x (geo::make-pt :x 3)) (fboundp 'make-pt))";
  /* the two (eql "abc") methods are one, as their one entry is */
  CHECK(jiti_world_count(txn_state(W), JITI_ENTRY_METHOD) == 7);
  CHECK_STR(check_eval(txn_state(W), src), want);
  char why[4096];
  txn_World *T = restart(&store, why, sizeof why);
  CHECK(T != NULL);
  if (!T) fprintf(stderr, "%s\n", why);
  if (T) {
    CHECK_STR(check_eval(txn_state(T), src), want);
    txn_close(T);
  }
  CHECK(agree(&W, &store, 0, why, sizeof why));
  txn_close(W);
  store_free(&store);
}

int main(void) {
  int stress = getenv("JITI_GC_STRESS") && getenv("JITI_GC_STRESS")[0] && getenv("JITI_GC_STRESS")[0] != '0';
#ifdef JITI_TXN_GC_STRESS_BUILD
  if (!getenv("JITI_GC_STRESS") || getenv("JITI_GC_STRESS")[0] != '0') stress = 1;
#endif
  test_each_rule();
  test_allowed();
  int rounds = stress ? 5 : 100;
  if (getenv("JITI_REIMPORT_ROUNDS")) rounds = atoi(getenv("JITI_REIMPORT_ROUNDS"));
  unsigned seed0 = getenv("JITI_REIMPORT_SEED") ? (unsigned)strtoul(getenv("JITI_REIMPORT_SEED"), NULL, 10)
                                                 : 20261207u;
  int failed = 0;
  long steps = 0;
  char why[4096];
  for (int h = 0; h < rounds; h++) {
    Op ops[MAXOPS];
    int n;
    unsigned seed = seed0 + (unsigned)h;
    gen_ops(seed, ops, &n);
    steps += n;
    int at = run_history(ops, n, why, sizeof why);
    CHECK(at < 0);
    if (at >= 0) {
      report_failure(seed, ops, n);
      if (++failed >= 3) break;
    }
  }
  fprintf(stderr, "%d histories, %ld calls, first seed %u%s\n", rounds, steps, seed0, stress ? " (GC stress)" : "");
  return CHECK_DONE();
}
