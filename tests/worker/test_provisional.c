/* test_provisional.c — attempts run on top of accepted attempts that await
** their commit (txn_set_stacking), as the kernel daemon runs them while a
** group of revisions is being made durable.
**
** First a walk through by hand (each awaiting attempt reports only its own
** changes; commits keep the oldest, the others stay open and still restore
** exactly; a restore undoes every awaiting attempt; a failing attempt on
** top undoes only itself; read-only calls fold into the level below; the
** stacking bound; previews, invariant operations and unsafe attempts on
** top; no stacking in a faulted world).  Then seeded random histories of
** RUN (an attempt on top), COMMIT (the oldest), RESTORE (all) against an
** independent model: after every step the world equals the model's newest
** state, the reported changes equal the model's difference against the
** level below, the count of awaiting attempts and the generation match;
** at the end, committing everything leaves a world whose export equals
** that of a plain world that ran only the committed attempts one by one.
**
**   JITI_TXN_SOAK=N  histories (default 150; 30 under GC stress)
**   JITI_TXN_SEED=S  first seed */
#include <stdlib.h>
#include "txn.h"
#include "check.h"

static char evbuf[8192];
static const char *ev(txn_World *W, const char *src) {
  jiti_Result r;
  jiti_Status st = jiti_eval_string(txn_state(W), src, strlen(src), &r);
  if (st == JITI_OK) snprintf(evbuf, sizeof evbuf, "%s", r.value);
  else snprintf(evbuf, sizeof evbuf, "!%s: %s", r.condition_type, r.message);
  jiti_result_free(&r);
  return evbuf;
}

static txn_Reason att(txn_World *W, const char *src, txn_Kind kind, txn_Outcome *o) {
  return txn_attempt(W, txn_generation(W), src, kind, NULL, NULL, o);
}

static int has_change(const txn_Outcome *o, jiti_EntryKind k, const char *name, int removed) {
  for (int i = 0; i < o->nchanges; i++)
    if (o->changes[i].kind == k && !strcmp(o->changes[i].name, name) && o->changes[i].removed == removed) return 1;
  return 0;
}

static void test_walk(void) {
  txn_World *W = txn_open(NULL);
  txn_Outcome o;
  CHECK(att(W, "(defvar *v* (list 1))", TXN_ACTION, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  CHECK(txn_commit(W) == -1 && txn_restore(W, NULL) == -1 && txn_keep_unchanged(W) == -1);
  /* without stacking, one awaits at a time */
  CHECK(att(W, "(world-put :a 1)", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(att(W, "(world-put :b 1)", TXN_APPLICATION, &o) == TXN_INVALID_ARGUMENTS);
  CHECK(strstr(o.message, "awaiting commit") != NULL);
  txn_outcome_free(&o);
  CHECK(txn_restore(W, NULL) == 0);

  txn_set_stacking(W, 4);
  uint64_t g0 = txn_generation(W);
  /* A, B, C on top of each other: each reports its own changes only */
  CHECK(att(W, "(progn (defvar *w* (list :a)) (world-put :a 1) (defun f () 1))", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 3 && has_change(&o, JITI_ENTRY_VARIABLE, "*W*", 0));
  txn_outcome_free(&o);
  CHECK(att(W, "(progn (push 2 *v*) (world-put :b (length *v*)))", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  /* *v* changed in place, so every variable was exported: *w* (made by A,
  ** unchanged since) is not a change of B */
  CHECK(o.nchanges == 2 && has_change(&o, JITI_ENTRY_VARIABLE, "*V*", 0) && has_change(&o, JITI_ENTRY_DATA, ":B", 0));
  txn_outcome_free(&o);
  CHECK(att(W, "(progn (world-rem :a) (setf *w* (list :a)) (f))", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "1");
  /* *w* set to an equal value: no change against A */
  CHECK(o.nchanges == 1 && has_change(&o, JITI_ENTRY_DATA, ":A", 1));
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 3 && txn_status(W) == TXN_ST_AWAITING);
  CHECK(txn_generation(W) == g0);
  /* a read-only call folds into C */
  CHECK(att(W, "(list (world-get :a) (world-get :b) *v*)", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(NIL 2 (2 1))");
  CHECK(o.nchanges == 0);
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 4);
  CHECK(txn_keep_unchanged(W) == 0 && txn_awaiting(W) == 3);
  CHECK(txn_keep_unchanged(W) == -1);   /* C changed entries */
  /* a failing attempt on top undoes itself only */
  CHECK(att(W, "(progn (world-put :c 1) (push 3 *v*) (error \"no\"))", TXN_APPLICATION, &o) == TXN_ERROR);
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 3 && txn_status(W) == TXN_ST_AWAITING);
  CHECK_STR(ev(W, "(list (world-get :a) (world-get :b) (world-get :c) *v* (f))"), "(NIL 2 NIL (2 1) 1)");
  /* a preview on top too */
  CHECK(att(W, "(world-put :b 99)", TXN_PREVIEW, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 3 && txn_status(W) == TXN_ST_AWAITING);
  CHECK_STR(ev(W, "(world-get :b)"), "2");
  /* A becomes permanent; B and C stay open */
  uint64_t g = txn_generation(W);
  CHECK(txn_commit(W) == 0);
  CHECK(txn_generation(W) == g + 1 && txn_awaiting(W) == 2 && txn_status(W) == TXN_ST_AWAITING);
  /* the bound: 4 awaiting, then refused */
  CHECK(att(W, "(world-put :d 1)", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_invariant_add(W, txn_generation(W), "b-small", "(< (world-get :b 0) 10)", &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1);
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 4);
  CHECK(att(W, "(world-put :e 1)", TXN_APPLICATION, &o) == TXN_INVALID_ARGUMENTS);
  txn_outcome_free(&o);
  /* B's publication fails: B, C, D and the invariant are undone, A stays */
  g = txn_generation(W);
  CHECK(txn_restore(W, &o) == 0);
  CHECK(o.reason == TXN_PUBLICATION_FAILED && strstr(o.message, "4 awaiting"));
  txn_outcome_free(&o);
  /* none of them paused: the world views showed before B is back, and the
  ** generation stays */
  CHECK(txn_awaiting(W) == 0 && txn_status(W) == TXN_ST_IDLE && txn_generation(W) == g);
  CHECK_STR(ev(W, "(list (world-get :a) (world-get :b) (world-get :d) *v* *w* (f))"), "(1 NIL NIL (1) (:A) 1)");
  CHECK(jiti_world_count(txn_state(W), JITI_ENTRY_INVARIANT) == 0);
  /* what B did is a change again */
  CHECK(att(W, "(push 2 *v*)", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1 && has_change(&o, JITI_ENTRY_VARIABLE, "*V*", 0));
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);

  /* an invariant checked against the awaiting attempts' state */
  CHECK(txn_invariant_add(W, txn_generation(W), "short", "(< (length *v*) 4)", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(att(W, "(push 3 *v*)", TXN_APPLICATION, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(att(W, "(push 4 *v*)", TXN_APPLICATION, &o) == TXN_UNSAFE);
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 2);
  CHECK_STR(ev(W, "*v*"), "(3 2 1)");
  CHECK(txn_commit(W) == 0 && txn_commit(W) == 0 && txn_commit(W) == -1);
  CHECK(txn_status(W) == TXN_ST_IDLE);
  CHECK_STR(ev(W, "*v*"), "(3 2 1)");

  /* no stacking in a faulted world */
  char err[512];
  CHECK_STR(ev(W, "(push 0 *v*)"), "(0 3 2 1)");
  CHECK(txn_check_baseline(W, err, sizeof err) == 1);
  CHECK(att(W, "(pop *v*)", TXN_OPERATOR, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(att(W, "(world-put :z 1)", TXN_OPERATOR, &o) == TXN_INVALID_ARGUMENTS);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0 && txn_status(W) == TXN_ST_IDLE);
  txn_close(W);
}

/* ------------------------------------------------------------ histories */

#define NK 4
#define MAXLV 6

/* A state of the model: data rows k0..k3 (-1 absent), *x*, f's value. */
typedef struct St { int k[NK]; int x; int f; } St;

typedef enum { R_PUT, R_REM, R_SETX, R_DEFUN, R_READ, R_FAIL, R_UNSAFE, R_COUNT_RUN } RunKind;
typedef enum { OP_RUN, OP_COMMIT, OP_RESTORE } OpKind;
typedef struct Op { OpKind op; RunKind kind; int key, val; } Op;

typedef struct Model {
  St committed, lv[MAXLV + 1];   /* lv[i]: the state after awaiting attempt i */
  int nlv, changes[MAXLV + 1];
  uint64_t gen;
  Op kept[512];                  /* the committed runs, in order */
  int nkept;
  Op pending[MAXLV + 1];
} Model;

static const St *top(const Model *m) { return m->nlv ? &m->lv[m->nlv - 1] : &m->committed; }

static void source_of(const Op *o, char *buf, size_t n) {
  switch (o->kind) {
    case R_PUT: snprintf(buf, n, "(world-put :k%d %d)", o->key, o->val); break;
    case R_REM: snprintf(buf, n, "(world-rem :k%d)", o->key); break;
    case R_SETX: snprintf(buf, n, "(setf *x* (list %d))", o->val); break;
    case R_DEFUN: snprintf(buf, n, "(defun f () %d)", o->val); break;
    case R_READ: snprintf(buf, n, "(list (world-get :k%d) (first *x*) (f))", o->key); break;
    case R_FAIL: snprintf(buf, n, "(progn (world-put :k%d %d) (setf *x* (list -1)) (error \"no\"))", o->key, o->val); break;
    case R_UNSAFE: snprintf(buf, n, "(world-put :k%d 13)", o->key); break;
    default: buf[0] = 0;
  }
}

/* What the run changes in s; the number of changes it reports. */
static int apply_run(St *s, const Op *o) {
  switch (o->kind) {
    case R_PUT: s->k[o->key] = o->val; return 1;
    case R_REM: if (s->k[o->key] < 0) return 0; s->k[o->key] = -1; return 1;
    case R_SETX: if (s->x == o->val) return 0; s->x = o->val; return 1;
    case R_DEFUN: s->f = o->val; return 1;
    default: return 0;
  }
}

static int check_state(txn_World *W, const St *s, char *why, size_t n) {
  char want[256], *p = want;
  p += sprintf(p, "(");
  for (int i = 0; i < NK; i++) p += sprintf(p, s->k[i] < 0 ? "NIL " : "%d ", s->k[i]);
  sprintf(p, "%d %d)", s->x, s->f);
  const char *got = ev(W, "(list (world-get :k0) (world-get :k1) (world-get :k2) (world-get :k3) (first *x*) (f))");
  if (strcmp(got, want)) { snprintf(why, n, "world %.400s, model %.400s", got, want); return 0; }
  return 1;
}

static void setup(txn_World *W) {
  txn_Outcome o;
  att(W, "(progn (defvar *x* (list 0)) (defun f () 0))", TXN_OPERATOR, &o);
  txn_outcome_free(&o);
  txn_commit(W);
  txn_invariant_add(W, txn_generation(W), "no-13", "(not (member 13 (list (world-get :k0) (world-get :k1) (world-get :k2) (world-get :k3))))", &o);
  txn_outcome_free(&o);
  txn_commit(W);
}

/* One step; 1 when it matched the model. */
static int step(txn_World *W, Model *m, const Op *op, char *why, size_t n) {
  txn_Outcome o;
  if (op->op == OP_COMMIT) {
    int r = txn_commit(W);
    if (!m->nlv) { if (r != -1) { snprintf(why, n, "commit with nothing awaiting: %d", r); return 0; } return 1; }
    if (r != 0) { snprintf(why, n, "commit: %d", r); return 0; }
    if (m->changes[0]) m->gen++;
    m->committed = m->lv[0];
    m->kept[m->nkept++] = m->pending[0];
    memmove(m->lv, m->lv + 1, sizeof m->lv[0] * (size_t)(m->nlv - 1));
    memmove(m->changes, m->changes + 1, sizeof m->changes[0] * (size_t)(m->nlv - 1));
    memmove(m->pending, m->pending + 1, sizeof m->pending[0] * (size_t)(m->nlv - 1));
    m->nlv--;
    return 1;
  }
  if (op->op == OP_RESTORE) {
    int r = txn_restore(W, NULL);
    if (!m->nlv) { if (r != -1) { snprintf(why, n, "restore with nothing awaiting: %d", r); return 0; } return 1; }
    if (r != 0) { snprintf(why, n, "restore: %d", r); return 0; }
    m->nlv = 0;   /* nothing paused: the generation stays */
    return 1;
  }
  char src[256];
  source_of(op, src, sizeof src);
  txn_Reason r = att(W, src, TXN_APPLICATION, &o);
  txn_Reason want = TXN_ACCEPTED;
  if (m->nlv >= MAXLV) want = TXN_INVALID_ARGUMENTS;
  else if (op->kind == R_FAIL) want = TXN_ERROR;
  else if (op->kind == R_UNSAFE) want = TXN_UNSAFE;
  int ok = r == want;
  if (!ok) snprintf(why, n, "%s: %s (%s), expected %s", src, txn_reason_name(r), o.message, txn_reason_name(want));
  if (ok && want == TXN_ACCEPTED) {
    St s = *top(m);
    int ch = apply_run(&s, op);
    if (o.nchanges != ch) {
      snprintf(why, n, "%s reported %d changes, model %d", src, o.nchanges, ch);
      ok = 0;
    } else if (op->kind == R_READ) {
      char want_v[64];
      const St *t = top(m);
      if (t->k[op->key] < 0) snprintf(want_v, sizeof want_v, "(NIL %d %d)", t->x, t->f);
      else snprintf(want_v, sizeof want_v, "(%d %d %d)", t->k[op->key], t->x, t->f);
      if (strcmp(o.value, want_v)) { snprintf(why, n, "%s returned %s, model %s", src, o.value, want_v); ok = 0; }
    }
    if (ok && ch == 0) {
      /* nothing to publish: kept at once, in the level below */
      if (txn_keep_unchanged(W) != 0) { snprintf(why, n, "keep_unchanged refused"); ok = 0; }
      /* (nothing to replay: it changed nothing) */
    } else if (ok) {
      m->lv[m->nlv] = s;
      m->changes[m->nlv] = ch;
      m->pending[m->nlv] = *op;
      m->nlv++;
    }
  }   /* a failing attempt restores itself; it never paused: the generation stays */
  txn_outcome_free(&o);
  return ok;
}

static int gen_ops(unsigned seed, Op *ops, int max) {
  srand(seed);
  int n = 10 + rand() % (max - 10);
  for (int i = 0; i < n; i++) {
    int r = rand() % 100;
    Op o = { OP_RUN, R_PUT, rand() % NK, rand() % 3 };
    if (r < 12) o.op = OP_COMMIT;
    else if (r < 16) o.op = OP_RESTORE;
    else o.kind = (RunKind)(rand() % R_COUNT_RUN);
    ops[i] = o;
  }
  return n;
}

typedef struct { char *buf; size_t n, cap; } Bytes;
static int append(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  Bytes *x = ud;
  size_t need = x->n + strlen(name) + len + 32;
  if (need > x->cap) { x->cap = need * 2; x->buf = realloc(x->buf, x->cap); }
  x->n += (size_t)sprintf(x->buf + x->n, "%d %s %zu:", (int)k, name, len);
  memcpy(x->buf + x->n, b, len);
  x->n += len;
  x->buf[x->n++] = '\n';
  return 0;
}

/* -1 when the history passes, else the failing step (n: the final check). */
static int run_history(const Op *ops, int n, char *why, size_t wn) {
  txn_World *W = txn_open(NULL);
  static Model m;
  memset(&m, 0, sizeof m);
  setup(W);
  txn_set_stacking(W, MAXLV);
  m.gen = txn_generation(W);
  for (int i = 0; i < NK; i++) m.committed.k[i] = -1;
  int fail = -1;
  for (int i = 0; i < n && fail < 0; i++) {
    if (!step(W, &m, &ops[i], why, wn) || !check_state(W, top(&m), why, wn)) fail = i;
    else if (txn_awaiting(W) != m.nlv) { snprintf(why, wn, "%d awaiting, model %d", txn_awaiting(W), m.nlv); fail = i; }
    else if (txn_generation(W) != m.gen) {
      snprintf(why, wn, "generation %llu, model %llu", (unsigned long long)txn_generation(W), (unsigned long long)m.gen);
      fail = i;
    }
  }
  if (fail < 0) {
    /* commit the rest; the export equals a plain world's that ran only the
    ** committed attempts, one at a time */
    Op c = { OP_COMMIT, R_PUT, 0, 0 };
    while (m.nlv && fail < 0) if (!step(W, &m, &c, why, wn)) fail = n;
    txn_World *P = txn_open(NULL);
    setup(P);
    for (int i = 0; i < m.nkept && fail < 0; i++) {
      char src[256];
      txn_Outcome o;
      source_of(&m.kept[i], src, sizeof src);
      if (att(P, src, TXN_APPLICATION, &o) != TXN_ACCEPTED) { snprintf(why, wn, "replay of %s: %s", src, o.message); fail = n; }
      else txn_commit(P);
      txn_outcome_free(&o);
    }
    Bytes a = {0}, b = {0};
    char err[256];
    if (fail < 0 && (jiti_export_all(txn_state(W), append, &a, err, sizeof err) != JITI_OK ||
                     jiti_export_all(txn_state(P), append, &b, err, sizeof err) != JITI_OK ||
                     a.n != b.n || memcmp(a.buf, b.buf, a.n))) {
      snprintf(why, wn, "the export differs from a plain world's that ran the committed attempts");
      if (getenv("JITI_TXN_DEBUG")) fprintf(stderr, "---- stacked\n%.*s---- plain\n%.*s", (int)a.n, a.buf, (int)b.n, b.buf);
      fail = n;
    }
    free(a.buf);
    free(b.buf);
    txn_close(P);
  }
  txn_close(W);
  return fail;
}

static const char *const op_names[] = { "run", "commit", "restore" };
static const char *const run_names[] = { "put", "rem", "setx", "defun", "read", "fail", "unsafe" };

int main(void) {
  test_walk();
  int stress = getenv("JITI_GC_STRESS") && getenv("JITI_GC_STRESS")[0] && getenv("JITI_GC_STRESS")[0] != '0';
#ifdef JITI_TXN_GC_STRESS_BUILD
  if (!getenv("JITI_GC_STRESS") || getenv("JITI_GC_STRESS")[0] != '0') stress = 1;
#endif
  int count = stress ? 30 : 150;
  if (getenv("JITI_TXN_SOAK")) count = atoi(getenv("JITI_TXN_SOAK"));
  unsigned seed0 = getenv("JITI_TXN_SEED") ? (unsigned)strtoul(getenv("JITI_TXN_SEED"), NULL, 10) : 4242u;
  long steps = 0;
  for (int h = 0; h < count; h++) {
    Op ops[80];
    int n = gen_ops(seed0 + (unsigned)h, ops, 80);
    char why[1024] = "";
    steps += n;
    int at = run_history(ops, n, why, sizeof why);
    CHECK(at < 0);
    if (at >= 0) {
      fprintf(stderr, "FAIL history seed %u, step %d: %s\n", seed0 + (unsigned)h, at, why);
      for (int i = 0; i <= at && i < n; i++)
        fprintf(stderr, "  %d: %s %s k%d %d\n", i, op_names[ops[i].op], ops[i].op == OP_RUN ? run_names[ops[i].kind] : "",
                ops[i].key, ops[i].val);
      break;
    }
  }
  fprintf(stderr, "%d histories, %ld operations, first seed %u%s\n", count, steps, seed0, stress ? " (GC stress)" : "");
  return CHECK_DONE();
}
