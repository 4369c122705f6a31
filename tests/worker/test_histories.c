/* test_histories.c — generated stateful histories over worker/txn.h.
**
** A seeded random sequence of operations (set data, define, failing define,
** failing call then repair then resume, stale action, invalid action,
** preview, abort while paused, unsafe edit, failing application call,
** publication failure) runs against a txn_World; after every step the
** world (data rows, function results) and the generation are compared with
** an independent model (a C struct).  On a failure the seed and a shrunk
** history (operations deleted while it still fails) are printed.  After
** each history, export -> import into a fresh state -> export must be
** byte-identical.
**
**   JITI_TXN_SOAK=N    number of histories (default 200; 40 under GC stress)
**   JITI_TXN_SEED=S    first seed (default 20240601)
*/
#include <stdlib.h>
#include "txn.h"
#include "check.h"

#define NKEYS 5
#define NFNS 3
#define MAXOPS 64

typedef enum {
  OP_SET, OP_DEFINE, OP_FAILING_DEFINE, OP_REPAIR_RESUME, OP_STALE, OP_INVALID,
  OP_PREVIEW, OP_ABORT, OP_UNSAFE, OP_APP_FAIL, OP_PUB_FAIL, OP_COUNT
} OpType;

static const char *op_names[OP_COUNT] = {
  "set", "define", "failing-define", "fail-repair-resume", "stale", "invalid",
  "preview", "abort", "unsafe", "application-fail", "publication-failed"};

typedef struct Op { OpType type; int k, k2, f, v, v2; } Op;

/* The independent model. */
typedef struct Model {
  int has[NKEYS]; long val[NKEYS];
  int def[NFNS]; long ret[NFNS];
  uint64_t gen;
} Model;

static char msgbuf[2048];

/* ------------------------------------------------------- command script */

typedef struct Cmds { int n, next; txn_Command c[4]; int pauses; } Cmds;

static int cmd_fn(void *ud, const txn_View *v, txn_Command *c) {
  Cmds *s = ud;
  s->pauses++;
  if (s->next >= s->n) { c->type = TXN_CMD_ABORT; return 0; }
  *c = s->c[s->next++];
  c->generation = v->generation;
  if (c->type == TXN_CMD_RESUME) {
    const char *want = c->restart_id;
    c->restart_id = "missing";
    for (int i = 0; i < v->nrestarts; i++)
      if (strcmp(v->restarts[i].name, want) == 0) c->restart_id = v->restarts[i].id;
  }
  return 0;
}

/* ------------------------------------------------------------ checking */

static int check_world(txn_World *W, const Model *m, char *why, size_t n) {
  char src[1024], want[1024];
  int k = snprintf(src, sizeof src, "(list");
  int w = snprintf(want, sizeof want, "(");
  for (int i = 0; i < NKEYS; i++) {
    k += snprintf(src + k, sizeof src - (size_t)k, " (world-get :k%d :absent)", i);
    if (m->has[i]) w += snprintf(want + w, sizeof want - (size_t)w, "%s%ld", w > 1 ? " " : "", m->val[i]);
    else w += snprintf(want + w, sizeof want - (size_t)w, "%s:ABSENT", w > 1 ? " " : "");
  }
  for (int i = 0; i < NFNS; i++) {
    k += snprintf(src + k, sizeof src - (size_t)k, " (if (fboundp 'f%d) (f%d) :undefined)", i, i);
    if (m->def[i]) w += snprintf(want + w, sizeof want - (size_t)w, " %ld", m->ret[i]);
    else w += snprintf(want + w, sizeof want - (size_t)w, " :UNDEFINED");
  }
  snprintf(src + k, sizeof src - (size_t)k, ")");
  snprintf(want + w, sizeof want - (size_t)w, ")");
  jiti_Result r;
  jiti_Status st = jiti_eval_string(txn_state(W), src, strlen(src), &r);
  int ok = st == JITI_OK && strcmp(r.value, want) == 0;
  if (!ok) snprintf(why, n, "world is %s, model says %s", st == JITI_OK ? r.value : r.message, want);
  jiti_result_free(&r);
  if (ok && txn_generation(W) != m->gen) {
    snprintf(why, n, "generation is %llu, model says %llu",
             (unsigned long long)txn_generation(W), (unsigned long long)m->gen);
    ok = 0;
  }
  if (ok && txn_status(W) != TXN_ST_IDLE) { snprintf(why, n, "status is %s", txn_status_name(txn_status(W))); ok = 0; }
  return ok;
}

/* ------------------------------------------------------------ export */

typedef struct { char *buf; size_t n, cap; } Bytes;
static int append(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Bytes *x = ud;
  size_t need = x->n + strlen(name) + len + 32;
  if (need > x->cap) {
    x->cap = need * 2;
    x->buf = realloc(x->buf, x->cap);
  }
  x->n += (size_t)sprintf(x->buf + x->n, "%d %s %zu:", (int)k, name, len);
  memcpy(x->buf + x->n, b, len);
  x->n += len;
  x->buf[x->n++] = '\n';
  return 0;
}
typedef struct { jiti_State *to; int failures; char err[1024]; } Copy;
static int import_one(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Copy *c = ud;
  char err[512];
  if (jiti_import_entry(c->to, k, name, b, len, err, sizeof err) != JITI_OK) {
    snprintf(c->err, sizeof c->err, "import of %s %s: %s", jiti_entry_kind_name(k), name, err);
    c->failures++;
  }
  return 0;
}

/* export -> import -> export byte-identical; 1 on success */
static int roundtrip(jiti_State *S, char *why, size_t n) {
  Bytes a = {0}, b = {0};
  char err[512];
  if (jiti_export_all(S, append, &a, err, sizeof err) != JITI_OK) {
    snprintf(why, n, "export failed: %s", err);
    free(a.buf);
    return 0;
  }
  jiti_State *T = jiti_open();
  jiti_world_enable(T);
  Copy c = {T, 0, ""};
  jiti_export_all(S, import_one, &c, err, sizeof err);
  int ok = c.failures == 0;
  if (!ok) snprintf(why, n, "%s", c.err);
  if (ok && jiti_export_all(T, append, &b, err, sizeof err) != JITI_OK) {
    snprintf(why, n, "re-export failed: %s", err);
    ok = 0;
  }
  if (ok && (a.n != b.n || memcmp(a.buf, b.buf, a.n) != 0)) {
    snprintf(why, n, "export -> import -> export differs (%zu vs %zu bytes)", a.n, b.n);
    ok = 0;
  }
  jiti_close(T);
  free(a.buf);
  free(b.buf);
  return ok;
}

/* ------------------------------------------------------------ histories */

static void gen_ops(unsigned seed, Op *ops, int *n) {
  srand(seed);
  *n = 5 + rand() % 26;
  for (int i = 0; i < *n; i++) {
    Op *o = &ops[i];
    o->type = (OpType)(rand() % OP_COUNT);
    o->k = rand() % NKEYS;
    o->k2 = rand() % NKEYS;
    o->f = rand() % NFNS;
    o->v = rand() % 20 - 5;
    o->v2 = rand() % 20 - 5;
    if (o->v == 13) o->v = 14;   /* 13 is forbidden for :k0 by the invariant */
    if (o->v2 == 13) o->v2 = 12;
  }
}

static void describe(const Op *o, char *buf, size_t n) {
  snprintf(buf, n, "%s k=%d k2=%d f=%d v=%d v2=%d", op_names[o->type], o->k, o->k2, o->f, o->v, o->v2);
}

static txn_Reason attempt(txn_World *W, uint64_t gen, const char *src, txn_Kind kind, Cmds *c,
                          txn_Outcome *o) {
  return txn_attempt(W, gen, src, kind, c ? cmd_fn : NULL, c, o);
}

/* Run one operation; update the model; 1 if the reply was as expected. */
static int step(txn_World *W, Model *m, const Op *o, char *why, size_t n) {
  char src[512];
  txn_Outcome out;
  txn_Reason r, want;
  Cmds cmds;
  memset(&cmds, 0, sizeof cmds);
  uint64_t g = txn_generation(W);
  switch (o->type) {
  case OP_SET:
    snprintf(src, sizeof src, "(world-put :k%d %d)", o->k, o->v);
    r = attempt(W, g, src, TXN_ACTION, NULL, &out);
    want = TXN_ACCEPTED;
    if (r == TXN_ACCEPTED) {
      int seen = 0;
      char key[16];
      snprintf(key, sizeof key, ":K%d", o->k);
      for (int i = 0; i < out.nchanges; i++) if (!strcmp(out.changes[i].name, key)) seen = 1;
      if (!seen) { snprintf(why, n, "changed entries lack %s", key); txn_outcome_free(&out); txn_commit(W); m->gen += 1; m->has[o->k] = 1; m->val[o->k] = o->v; return 0; }
      txn_commit(W);
      m->has[o->k] = 1;
      m->val[o->k] = o->v;
      m->gen += 1;
    }
    break;
  case OP_DEFINE:
    snprintf(src, sizeof src, "(defun f%d () %d)", o->f, o->v);
    r = attempt(W, g, src, TXN_ACTION, NULL, &out);
    want = TXN_ACCEPTED;
    if (r == TXN_ACCEPTED) { txn_commit(W); m->def[o->f] = 1; m->ret[o->f] = o->v; m->gen += 1; }
    break;
  case OP_FAILING_DEFINE:
    snprintf(src, sizeof src, "(progn (defun f%d () %d) (world-put :k%d %d) (error \"boom ~a\" %d))",
             o->f, o->v, o->k, o->v2, o->v);
    r = attempt(W, g, src, TXN_ACTION, NULL, &out);
    want = TXN_ABORTED;  /* restored, never paused: the generation stays */
    break;
  case OP_REPAIR_RESUME: {
    /* a call fails inside a restart-case; the repair defines f; retry
    ** calls it and stores its value */
    snprintf(src, sizeof src,
             "(progn (world-put :k%d %d)"
             "  (restart-case (error \"need f%d\") (retry () (world-put :k%d (f%d)))))",
             o->k, o->v, o->f, o->k2, o->f);
    char repair[128];
    snprintf(repair, sizeof repair, "(defun f%d () %d)", o->f, o->v2);
    cmds.n = 2;
    cmds.c[0].type = TXN_CMD_EVALUATE;
    cmds.c[0].source = repair;
    cmds.c[1].type = TXN_CMD_RESUME;
    cmds.c[1].restart_id = "RETRY";
    r = attempt(W, g, src, TXN_ACTION, &cmds, &out);
    want = TXN_ACCEPTED;
    if (r == TXN_ACCEPTED) {
      txn_commit(W);
      m->has[o->k] = 1; m->val[o->k] = o->v;
      m->def[o->f] = 1; m->ret[o->f] = o->v2;
      m->has[o->k2] = 1; m->val[o->k2] = o->v2;
      m->gen += 3;  /* pause, resume, commit */
      if (o->k == 0 && o->v == 13) want = TXN_UNSAFE;
    }
    break;
  }
  case OP_STALE:
    snprintf(src, sizeof src, "(world-put :k%d %d)", o->k, o->v);
    r = attempt(W, g - 1 - (uint64_t)(o->v & 1), src, TXN_ACTION, NULL, &out);
    want = TXN_STALE;
    break;
  case OP_INVALID: {
    const char *forms[] = {"(progn (world-put :k%d %d) (format nil \"~/car/\" '(a (b))))",
                           "(world-put :k%d %d) (world-put :k0 1)",
                           "(progn (world-put :k%d %d) '#1=(a . #1#))",
                           "(world-put :k%d #.(+ %d 1))"};
    snprintf(src, sizeof src, forms[(o->v2 + 5) % 4], o->k, o->v);
    r = attempt(W, g, src, TXN_ACTION, NULL, &out);
    want = TXN_REJECTED_BY_GATE;
    break;
  }
  case OP_PREVIEW:
    snprintf(src, sizeof src, "(progn (world-put :k%d %d) (defun f%d () %d))", o->k, o->v, o->f, o->v2);
    r = attempt(W, g, src, TXN_PREVIEW, NULL, &out);
    want = TXN_ACCEPTED;  /* restored, never paused: the generation stays */
    if (r == TXN_ACCEPTED && out.nchanges < 2) { snprintf(why, n, "preview reported %d changes", out.nchanges); txn_outcome_free(&out); return 0; }
    break;
  case OP_ABORT: {
    snprintf(src, sizeof src, "(progn (world-put :k%d %d) (error \"stop\"))", o->k, o->v);
    char repair[128];
    snprintf(repair, sizeof repair, "(progn (world-put :k%d %d) (defun f%d () %d))", o->k2, o->v2, o->f, o->v2);
    cmds.n = 2;
    cmds.c[0].type = TXN_CMD_EVALUATE;
    cmds.c[0].source = repair;
    cmds.c[1].type = TXN_CMD_ABORT;
    r = attempt(W, g, src, TXN_ACTION, &cmds, &out);
    want = TXN_ABORTED;
    m->gen += 2;  /* pause, restore */
    break;
  }
  case OP_UNSAFE:
    snprintf(src, sizeof src, "(progn (defun f%d () %d) (world-put :k%d %d) (world-put :k0 13))", o->f, o->v, o->k, o->v2);
    r = attempt(W, g, src, TXN_ACTION, NULL, &out);
    want = TXN_UNSAFE;  /* restored, never paused */
    break;
  case OP_APP_FAIL:
    snprintf(src, sizeof src, "(progn (world-put :k%d %d) (car %d))", o->k, o->v, o->v2);
    r = attempt(W, g, src, TXN_APPLICATION, NULL, &out);
    want = TXN_ERROR;  /* restored, never paused */
    break;
  case OP_PUB_FAIL:
  default:
    snprintf(src, sizeof src, "(progn (world-put :k%d %d) (defun f%d () %d))", o->k, o->v, o->f, o->v2);
    r = attempt(W, g, src, TXN_ACTION, NULL, &out);
    want = TXN_ACCEPTED;
    if (r == TXN_ACCEPTED) {
      txn_Outcome o2;
      txn_restore(W, &o2);
      if (o2.reason != TXN_PUBLICATION_FAILED) r = o2.reason;
      txn_outcome_free(&o2);  /* restored, never paused: the generation stays */
    }
    break;
  }
  int ok = r == want;
  if (!ok) snprintf(why, n, "reply %s (%s), expected %s", txn_reason_name(r), out.message ? out.message : "",
                    txn_reason_name(want));
  if (ok && out.generation != m->gen && o->type != OP_SET && o->type != OP_DEFINE &&
      o->type != OP_REPAIR_RESUME && o->type != OP_PUB_FAIL) {
    snprintf(why, n, "outcome generation %llu, model %llu", (unsigned long long)out.generation,
             (unsigned long long)m->gen);
    ok = 0;
  }
  txn_outcome_free(&out);
  return ok;
}

/* Run a history; returns -1 when it passes, else the index of the failing
** step (n for a failing round trip); `why` says what. */
static int run_history(const Op *ops, int n, char *why, size_t wn) {
  txn_World *W = txn_open(NULL);
  Model m;
  memset(&m, 0, sizeof m);
  txn_Outcome o;
  int fail = -1;
  if (txn_invariant_add(W, 0, "not-thirteen", "(not (eql (world-get :k0) 13))", &o) != TXN_ACCEPTED) {
    snprintf(why, wn, "invariant-add: %s", o.message);
    fail = 0;
  }
  txn_outcome_free(&o);
  txn_commit(W);
  m.gen = 1;
  for (int i = 0; fail < 0 && i < n; i++) {
    if (!step(W, &m, &ops[i], why, wn)) fail = i;
    else if (!check_world(W, &m, why, wn)) fail = i;
  }
  if (fail < 0 && !roundtrip(txn_state(W), why, wn)) fail = n;
  txn_close(W);
  return fail;
}

static void report_failure(unsigned seed, const Op *ops, int n) {
  Op cur[MAXOPS];
  int cn = n;
  memcpy(cur, ops, sizeof(Op) * (size_t)n);
  char why[2048];
  /* shrink: delete operations while it still fails */
  int changed = 1;
  while (changed) {
    changed = 0;
    for (int i = 0; i < cn; i++) {
      Op trial[MAXOPS];
      int tn = 0;
      for (int j = 0; j < cn; j++) if (j != i) trial[tn++] = cur[j];
      if (run_history(trial, tn, why, sizeof why) >= 0) {
        memcpy(cur, trial, sizeof(Op) * (size_t)tn);
        cn = tn;
        changed = 1;
        break;
      }
    }
  }
  int at = run_history(cur, cn, why, sizeof why);
  fprintf(stderr, "FAIL history seed %u (%d ops); shrunk to %d ops, failing at step %d: %s\n",
          seed, n, cn, at, why);
  for (int i = 0; i < cn; i++) {
    char d[128];
    describe(&cur[i], d, sizeof d);
    fprintf(stderr, "  %d: %s\n", i, d);
  }
}

/* Every entry kind and every readable data type survive a round trip (the
** foreign declaration into a world without its grant: unavailable there,
** but exported the same). */
static void test_all_kinds(void) {
  txn_World *W = txn_open(NULL);
  char gerr[256];
  CHECK(jiti_foreign_grant(txn_state(W), "libm.so.6", gerr, sizeof gerr) == JITI_OK);
  const char *forms[] = {
    "(define-foreign cosine \"libm.so.6\" \"cos\" :double (:double))",
    "(defstruct item name (price 0) tags)",
    "(define-condition out-of-stock (error) ((item :initarg :item)))",
    "(defmacro twice (x) `(progn ,x ,x))",
    "(defun total (items) (reduce #'+ items :key #'item-price))",
    "(defun (setf first-price) (v items) (setf (item-price (first items)) v))",
    "(defvar *items* (list (make-item :name \"a\" :price 1) (make-item :name \"b\" :price 2 :tags '(:x))))",
    "(defparameter *table* (let ((h (make-hash-table :test 'equal))) (setf (gethash \"k\" h) 1/3) (setf (gethash \"j\" h) #(1 2.5 #\\c)) h))",
    "(defconstant +rate+ 5)",
    "(defclass shape () ((name :initarg :name :accessor name) (made :allocation :class :initform 0)))",
    "(defgeneric area (s) (:method ((s t)) 0))",
    "(defmethod area :around ((s shape)) (1+ (call-next-method)))",
    "(world-put :int 42)",
    "(world-put :big (expt 2 100))",
    "(world-put :ratio -7/3)",
    "(world-put :float 2.5d0)",
    "(world-put :single 1.5)",
    "(world-put :char #\\λ)",
    "(world-put :string \"héllo \\\"q\\\"\")",
    "(world-put :symbol 'some-symbol)",
    "(world-put :keyword :kw)",
    "(world-put :list (list 1 \"two\" 'three 4.5 nil t))",
    "(world-put :dotted (cons 1 2))",
    "(world-put :vector (vector 1 #\\a \"s\" (list 2)))",
    "(world-put :struct (make-item :name \"row\" :tags (list 1 2)))",
    "(world-put :instance (make-instance 'shape :name (list \"s\" 1)))",
    "(world-put :hash (let ((h (make-hash-table))) (setf (gethash 1 h) :one (gethash 2 h) :two) h))",
    "(world-put '(composite key) :composite)",
    "(world-put \"string key\" 0)",
    "(defpackage :hist (:use :cl) (:export #:thing))",
    "(deftype price () '(integer 0 1000))",
    "(define-symbol-macro first-item (first *items*))",
    "(defsetf item-label (item) (v) `(setf (item-name ,item) ,v))",
    "(define-setf-expander cheapest (items) (let ((g (gensym)) (s (gensym))) "
    "(values (list g) (list items) (list s) `(setf (item-price (first ,g)) ,s) `(item-price (first ,g)))))",
    "(define-compiler-macro total (&whole w items) (declare (ignore items)) w)",
    "(define-modify-macro appendf (&rest lists) append \"Append to a place.\")",
    "(setf (documentation 'total 'function) \"The sum of the prices.\")",
    "(defvar *limit* 10 \"The most items.\")",
    "(setf (get 'item 'colour) :red (get 'item 'shelf) (list 1 \"a\"))",
    "(define-method-combination times :operator * :documentation \"Product.\")",
    "(defgeneric scale (x) (:method-combination times) (:method times ((x t)) 2) (:method times ((x integer)) 3))",
    "(with-open-file (s \"/notes/items.txt\" :direction :output) (format s \"~a items~%\" 3))",
    "(with-open-file (s \"/notes/raw.bin\" :direction :output :element-type '(unsigned-byte 8)) (write-byte 0 s) (write-byte 200 s))",
    "(world-put :path #p\"/notes/items.txt\")",
    NULL};
  for (int i = 0; forms[i]; i++) {
    txn_Outcome o;
    txn_Reason r = txn_attempt(W, txn_generation(W), forms[i], TXN_ACTION, NULL, NULL, &o);
    if (r != TXN_ACCEPTED) fprintf(stderr, "%s: %s %s\n", forms[i], txn_reason_name(r), o.message);
    CHECK(r == TXN_ACCEPTED);
    txn_outcome_free(&o);
    if (r == TXN_ACCEPTED) txn_commit(W);
  }
  txn_Outcome o;
  CHECK(txn_invariant_add(W, txn_generation(W), "total-positive", "(> (total *items*) 0)", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  txn_commit(W);
  for (int k = 0; k < JITI_ENTRY_KIND_COUNT; k++)
    CHECK(jiti_world_count(txn_state(W), (jiti_EntryKind)k) > 0);
  char why[1024] = "";
  int ok = roundtrip(txn_state(W), why, sizeof why);
  if (!ok) fprintf(stderr, "round trip: %s\n", why);
  CHECK(ok);
  txn_close(W);
}

int main(void) {
  int stress = getenv("JITI_GC_STRESS") && getenv("JITI_GC_STRESS")[0] && getenv("JITI_GC_STRESS")[0] != '0';
#ifdef JITI_TXN_GC_STRESS_BUILD
  if (!getenv("JITI_GC_STRESS") || getenv("JITI_GC_STRESS")[0] != '0') stress = 1;
#endif
  int count = stress ? 40 : 200;
  if (getenv("JITI_TXN_SOAK")) count = atoi(getenv("JITI_TXN_SOAK"));
  unsigned seed0 = getenv("JITI_TXN_SEED") ? (unsigned)strtoul(getenv("JITI_TXN_SEED"), NULL, 10) : 20240601u;
  test_all_kinds();
  int failed = 0;
  long steps = 0;
  for (int h = 0; h < count; h++) {
    Op ops[MAXOPS];
    int n;
    unsigned seed = seed0 + (unsigned)h;
    gen_ops(seed, ops, &n);
    steps += n;
    int at = run_history(ops, n, msgbuf, sizeof msgbuf);
    CHECK(at < 0);
    if (at >= 0) {
      report_failure(seed, ops, n);
      if (++failed >= 3) break;
    }
  }
  fprintf(stderr, "%d histories, %ld operations, first seed %u%s\n", count, steps, seed0, stress ? " (GC stress)" : "");
  return CHECK_DONE();
}
