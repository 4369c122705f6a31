/* test_txn.c — transactions (worker/txn.h): unsafe edits, live repair with
** an old frame, abort undoing repairs, restart menus and pause-scoped ids,
** the step budget, stale generations, the form gate, previews,
** application calls, goals, the faulted state, invariant operations,
** observe and inspect. */
#include <stdlib.h>
#include <jansson.h>
#include "txn.h"
#include "check.h"

/* ------------------------------------------------------------ scripts */

/* One scripted command.  For RESUME: `restart` is a restart name (the
** first offered with that name), or "#k" for the k-th offered, or "=ID"
** for a literal id. */
typedef struct Step {
  txn_CmdType type;
  const char *source;
  const char *restart;
  const char *args;
  int gen_delta;   /* added to the view's generation (to test stale) */
} Step;

#define MAXV 32
typedef struct Seen {
  uint64_t generation;
  int pause;
  int level;
  char type[64];
  char report[256];
  int nrestarts;
  char ids[8][32];
  int levels[8];
  char names[8][64];
  char reports[8][128];
  txn_Reason refusal;
  char error[256];
  char last_value[256];
  int steps_used;
  char observe_status[32];
} Seen;

typedef struct Script {
  const Step *steps;
  int n, next;
  Seen seen[MAXV];
  int nseen;
  char idbuf[64];
} Script;

static int script_fn(void *ud, const txn_View *v, txn_Command *c);
static txn_World *cur_world;

static int script_fn(void *ud, const txn_View *v, txn_Command *c) {
  Script *s = ud;
  if (s->nseen < MAXV) {
    Seen *x = &s->seen[s->nseen++];
    memset(x, 0, sizeof *x);
    x->generation = v->generation;
    x->pause = v->pause;
    x->level = v->level;
    snprintf(x->type, sizeof x->type, "%s", v->condition_type);
    snprintf(x->report, sizeof x->report, "%s", v->report);
    x->nrestarts = v->nrestarts;
    for (int i = 0; i < v->nrestarts && i < 8; i++) {
      snprintf(x->ids[i], sizeof x->ids[i], "%s", v->restarts[i].id);
      x->levels[i] = v->restarts[i].level;
      snprintf(x->names[i], sizeof x->names[i], "%s", v->restarts[i].name);
      snprintf(x->reports[i], sizeof x->reports[i], "%s", v->restarts[i].report);
    }
    x->refusal = v->refusal;
    snprintf(x->error, sizeof x->error, "%s", v->error ? v->error : "");
    snprintf(x->last_value, sizeof x->last_value, "%s", v->last_value ? v->last_value : "");
    x->steps_used = v->steps_used;
    if (cur_world) {
      char *o = txn_observe(cur_world, 0);
      json_t *j = json_loads(o, 0, NULL);
      const char *st = json_string_value(json_object_get(j, "status"));
      snprintf(x->observe_status, sizeof x->observe_status, "%s", st ? st : "?");
      json_decref(j);
      free(o);
    }
  }
  if (s->next >= s->n) { c->type = TXN_CMD_ABORT; c->generation = v->generation; return 0; }
  const Step *st = &s->steps[s->next++];
  c->type = st->type;
  c->generation = v->generation + (uint64_t)(int64_t)st->gen_delta;
  c->source = st->source;
  c->args = st->args;
  c->restart_id = NULL;
  if (st->type == TXN_CMD_RESUME && st->restart) {
    if (st->restart[0] == '=') c->restart_id = st->restart + 1;
    else if (st->restart[0] == '#') {
      int k = atoi(st->restart + 1);
      c->restart_id = k < v->nrestarts ? v->restarts[k].id : "none";
    } else {
      for (int i = 0; i < v->nrestarts; i++)
        if (strcmp(v->restarts[i].name, st->restart) == 0) { c->restart_id = v->restarts[i].id; break; }
      if (!c->restart_id) c->restart_id = "missing";
    }
  }
  return 0;
}

/* ------------------------------------------------------------ helpers */

static char evbuf[8192];
/* Evaluate directly on the state (test set-up and probes). */
static const char *ev(txn_World *W, const char *src) {
  jiti_Result r;
  jiti_Status st = jiti_eval_string(txn_state(W), src, strlen(src), &r);
  if (st == JITI_OK) snprintf(evbuf, sizeof evbuf, "%s", r.value);
  else snprintf(evbuf, sizeof evbuf, "!%s: %s", r.condition_type, r.message);
  jiti_result_free(&r);
  return evbuf;
}

/* Attempt + commit when accepted. */
static txn_Reason run(txn_World *W, const char *src, txn_Kind kind, Script *s, txn_Outcome *o) {
  cur_world = W;
  txn_Reason r = txn_attempt(W, txn_generation(W), src, kind, s ? script_fn : NULL, s, o);
  if (r == TXN_ACCEPTED && kind != TXN_PREVIEW) CHECK(txn_commit(W) == 0);
  return r;
}

static txn_Reason run1(txn_World *W, const char *src) {
  txn_Outcome o;
  txn_Reason r = run(W, src, TXN_ACTION, NULL, &o);
  if (r != TXN_ACCEPTED) fprintf(stderr, "  (%s: %s)\n", txn_reason_name(r), o.message);
  txn_outcome_free(&o);
  return r;
}

static int has_change(const txn_Outcome *o, jiti_EntryKind k, const char *name) {
  for (int i = 0; i < o->nchanges; i++)
    if (o->changes[i].kind == k && strcmp(o->changes[i].name, name) == 0) return 1;
  return 0;
}

static int has_event(const txn_Outcome *o, const char *type) {
  for (int i = 0; i < o->nevents; i++)
    if (strcmp(o->events[i].type, type) == 0) return 1;
  return 0;
}

/* -------------------------------------------------------------- tests */

static void test_unsafe(void) {
  txn_World *W = txn_open(NULL);
  CHECK(W != NULL);
  CHECK(txn_generation(W) == 0);
  CHECK(run1(W, "(defun price (n) (* n 10))") == TXN_ACCEPTED);
  CHECK(run1(W, "(world-put :stock 5)") == TXN_ACCEPTED);
  uint64_t g = txn_generation(W);
  CHECK(g == 2);  /* two commits */
  txn_Outcome o;
  CHECK(txn_invariant_add(W, g, "positive-price", "(> (price 1) 0)", &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_INVARIANT, "POSITIVE-PRICE"));
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  CHECK(txn_invariant_add(W, txn_generation(W), "stock", "(>= (world-get :stock 0) 0)", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  /* an invariant that does not hold now is refused */
  CHECK(txn_invariant_add(W, txn_generation(W), "never", "nil", &o) == TXN_UNSAFE);
  txn_outcome_free(&o);
  char *l = txn_invariant_list(W);
  CHECK(l && strstr(l, "POSITIVE-PRICE") && strstr(l, "STOCK") && !strstr(l, "NEVER"));
  free(l);

  /* an edit that breaks an invariant: code and data both restored */
  g = txn_generation(W);
  CHECK(run(W, "(progn (world-put :stock 99) (defun price (n) (- n)))", TXN_ACTION, NULL, &o) == TXN_UNSAFE);
  CHECK(strstr(o.message, "POSITIVE-PRICE") != NULL);
  CHECK(strncmp(o.message, "unsafe", 6) != 0);  /* the reason is not repeated in the message */
  CHECK(o.generation == g);  /* restored without a pause: views made before stay current */
  CHECK(o.nchanges == 0);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (price 2) (world-get :stock))"), "(20 5)");
  CHECK(run(W, "(world-put :stock -1)", TXN_ACTION, NULL, &o) == TXN_UNSAFE);
  CHECK(strstr(o.message, "STOCK") != NULL);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :stock)"), "5");
  /* an unexportable value in a managed place names the place */
  CHECK(run(W, "(defvar *f* (lambda (x) x))", TXN_ACTION, NULL, &o) == TXN_UNSAFE);
  CHECK(strstr(o.message, "*F*") != NULL);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(boundp '*f*)"), "NIL");
  /* accepted: the outcome lists the changed entries with hashes */
  CHECK(txn_attempt(W, txn_generation(W), "(progn (world-put :stock 6) (defun tax (x) (* x 2)) :ok)",
                    TXN_ACTION, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, ":OK");
  CHECK(has_change(&o, JITI_ENTRY_DATA, ":STOCK"));
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "TAX"));
  CHECK(o.nchanges >= 2 && strlen(o.changes[0].hash) == 64);
  CHECK(has_event(&o, "started") && has_event(&o, "completed"));
  CHECK(txn_status(W) == TXN_ST_AWAITING);
  txn_Outcome o2;
  /* nothing else runs while awaiting commit */
  CHECK(txn_attempt(W, txn_generation(W), "1", TXN_ACTION, NULL, NULL, &o2) == TXN_INVALID_ARGUMENTS);
  txn_outcome_free(&o2);
  /* publication failed: restore */
  CHECK(txn_restore(W, &o2) == 0);
  CHECK(o2.reason == TXN_PUBLICATION_FAILED);
  txn_outcome_free(&o2);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (world-get :stock) (fboundp 'tax))"), "(5 NIL)");
  CHECK(txn_commit(W) == -1);
  /* removal of an invariant is a transaction too */
  CHECK(txn_invariant_remove(W, txn_generation(W), "NOPE", &o) == TXN_INVALID_ARGUMENTS);
  txn_outcome_free(&o);
  CHECK(txn_invariant_remove(W, txn_generation(W), "stock", &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1 && o.changes[0].removed);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  CHECK(run1(W, "(world-put :stock -1)") == TXN_ACCEPTED);
  txn_close(W);
}

static const char *PROGRAM[] = {
  "(defun helper (x) (if (eql x 0) (error \"helper got ~s\" x) (list :old-helper x)))",
  "(defun outer (x) (list :old-outer (restart-case (helper x) (retry () :report \"Call HELPER again.\" (helper x)))"
  "                       (helper 7)))",
  NULL};

static void load(txn_World *W, const char **forms) {
  for (int i = 0; forms[i]; i++) CHECK(run1(W, forms[i]) == TXN_ACCEPTED);
}

static void test_live_repair(void) {
  txn_World *W = txn_open(NULL);
  load(W, PROGRAM);
  uint64_t g0 = txn_generation(W);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(defun helper (x) (list :new-helper x))", NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(defun outer (x) (list :new-outer x))", NULL, NULL, 0},
    {TXN_CMD_RESUME, NULL, "RETRY", NULL, 0},
  };
  Script s = {steps, 3, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(list (world-put :progress 1) (outer 0))", TXN_ACTION, &s, &o) == TXN_ACCEPTED);
  /* the running OUTER finishes with its old body; HELPER calls are new */
  CHECK_STR(o.value, "(1 (:OLD-OUTER (:NEW-HELPER 0) (:NEW-HELPER 7)))");
  CHECK(s.nseen == 3);
  CHECK_STR(s.seen[0].type, "SIMPLE-ERROR");
  CHECK_STR(s.seen[0].report, "helper got 0");
  CHECK(s.seen[0].nrestarts == 1);
  CHECK_STR(s.seen[0].names[0], "RETRY");
  CHECK_STR(s.seen[0].reports[0], "Call HELPER again.");
  CHECK_STR(s.seen[0].ids[0], "p1-0");
  CHECK(s.seen[0].generation == g0 + 1);     /* the pause */
  CHECK_STR(s.seen[0].observe_status, "paused");
  CHECK_STR(s.seen[1].last_value, "HELPER");
  CHECK(s.seen[2].generation == g0 + 1);     /* repairs do not change it */
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "HELPER"));
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "OUTER"));
  CHECK(has_change(&o, JITI_ENTRY_DATA, ":PROGRESS"));
  CHECK(has_event(&o, "paused") && has_event(&o, "repaired") && has_event(&o, "resumed"));
  CHECK(o.generation == g0 + 2);             /* pause + resume */
  txn_outcome_free(&o);
  CHECK(txn_generation(W) == g0 + 3);        /* + commit */
  CHECK_STR(ev(W, "(outer 5)"), "(:NEW-OUTER 5)");
  char *t = txn_inspect(W, "function", "HELPER");
  CHECK(t && strstr(t, ":NEW-HELPER"));
  free(t);
  CHECK(txn_inspect(W, "function", "NOPE") == NULL);
  txn_close(W);
}

static void test_abort_undoes_repairs(void) {
  txn_World *W = txn_open(NULL);
  load(W, PROGRAM);
  CHECK(run1(W, "(world-put :n 1)") == TXN_ACCEPTED);
  uint64_t g0 = txn_generation(W);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(defun helper (x) (list :new-helper x))", NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(progn (world-put :n 2) (world-put :m 3) (defvar *added* 1))", NULL, NULL, 0},
    {TXN_CMD_ABORT, NULL, NULL, NULL, 0},
  };
  Script s = {steps, 3, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(progn (world-put :n 10) (outer 0))", TXN_ACTION, &s, &o) == TXN_ABORTED);
  CHECK(o.generation == g0 + 2);  /* pause + restore */
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (world-get :n) (world-get :m) (boundp '*added*) (helper 1))"),
            "(1 NIL NIL (:OLD-HELPER 1))");
  /* a repair that signals opens level 2; aborting it comes back to level 1
  ** (what the failing repair did restored, the earlier repair kept) */
  Step bad[] = {
    {TXN_CMD_EVALUATE, "(world-put :n 77)", NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(progn (world-put :n 78) (car 1))", NULL, NULL, 0},
    {TXN_CMD_ABORT, NULL, NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(world-get :n)", NULL, NULL, 0},
    {TXN_CMD_ABORT, NULL, NULL, NULL, 0},
  };
  Script s2 = {bad, 5, 0, {{0}}, 0, ""};
  CHECK(run(W, "(outer 0)", TXN_ACTION, &s2, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(s2.nseen == 5);
  CHECK(s2.seen[2].level == 2 && s2.seen[2].pause == 2);
  CHECK_STR(s2.seen[2].type, "TYPE-ERROR");
  CHECK(s2.seen[3].level == 1 && s2.seen[3].pause == 1);
  CHECK(s2.seen[3].refusal == TXN_ABORTED && strstr(s2.seen[3].error, "level 2 aborted"));
  CHECK_STR(s2.seen[4].last_value, "77");
  CHECK_STR(ev(W, "(world-get :n)"), "1");
  /* a repair that invokes a restart of the paused computation is refused
  ** (a control-error, at level 2); aborting both levels restores it all */
  Step esc[] = {
    {TXN_CMD_EVALUATE, "(progn (world-put :n 55) (continue))", NULL, NULL, 0},
  };
  Script s3 = {esc, 1, 0, {{0}}, 0, ""};
  CHECK(run(W, "(list (world-put :n 9) (cerror \"go on\" \"soft ~a\" 1) :after)", TXN_ACTION, &s3, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(s3.nseen == 3 && s3.seen[1].level == 2 && s3.seen[2].level == 1);
  CHECK_STR(ev(W, "(world-get :n)"), "1");
  /* a repair that loops: limit -> repair-failed */
  txn_close(W);
  txn_Options opt = {{.fuel = 200000}, 0, 0};
  W = txn_open(&opt);
  load(W, PROGRAM);
  Step loop[] = {{TXN_CMD_EVALUATE, "(loop)", NULL, NULL, 0}};
  Script s4 = {loop, 1, 0, {{0}}, 0, ""};
  CHECK(run(W, "(outer 0)", TXN_ACTION, &s4, &o) == TXN_REPAIR_FAILED);
  txn_outcome_free(&o);
  /* the attempt itself looping: limit */
  CHECK(run(W, "(progn (world-put :x 1) (loop))", TXN_ACTION, NULL, &o) == TXN_LIMIT);
  CHECK(strstr(o.message, "FUEL") != NULL);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :x)"), "NIL");
  txn_close(W);
}

static void test_restart_menu(void) {
  txn_World *W = txn_open(NULL);
  CHECK(run1(W, "(defun twice () (restart-case (restart-case (restart-bind ((nil (lambda () (throw :t :unnamed))"
                "  :report-function (lambda (s) (format s \"anonymous\"))))"
                "     (error \"stuck\"))"
                "   (choose () :report \"inner\" :inner))"
                "  (choose () :report \"outer\" :outer)))") == TXN_ACCEPTED);
  Step steps[] = {
    {TXN_CMD_RESUME, NULL, "=p9-0", NULL, 0},       /* unknown */
    {TXN_CMD_RESUME, NULL, "#1", NULL, 0},          /* the inner CHOOSE */
  };
  Script s = {steps, 2, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(catch :t (twice))", TXN_ACTION, &s, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, ":INNER");
  txn_outcome_free(&o);
  CHECK(s.nseen == 2);
  CHECK(s.seen[0].nrestarts == 3);
  CHECK_STR(s.seen[0].names[0], "");
  CHECK_STR(s.seen[0].reports[0], "anonymous");
  CHECK_STR(s.seen[0].names[1], "CHOOSE");
  CHECK_STR(s.seen[0].names[2], "CHOOSE");
  CHECK_STR(s.seen[0].reports[1], "inner");
  CHECK_STR(s.seen[0].reports[2], "outer");
  CHECK(strcmp(s.seen[0].ids[1], s.seen[0].ids[2]) != 0);
  CHECK(strcmp(s.seen[0].ids[0], s.seen[0].ids[1]) != 0);
  /* the unknown id left it paused, same generation, with a message */
  CHECK(s.seen[1].refusal == TXN_INVALID_ARGUMENTS);
  CHECK(strstr(s.seen[1].error, "p9-0") != NULL);
  CHECK(s.seen[1].generation == s.seen[0].generation);
  CHECK(s.seen[1].nrestarts == 3);

  /* the unnamed restart and the outer one are usable */
  Step s_un[] = {{TXN_CMD_RESUME, NULL, "#0", NULL, 0}};
  Script su = {s_un, 1, 0, {{0}}, 0, ""};
  CHECK(run(W, "(catch :t (twice))", TXN_ACTION, &su, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, ":UNNAMED");
  txn_outcome_free(&o);
  Step s_out[] = {{TXN_CMD_RESUME, NULL, "#2", NULL, 0}};
  Script so = {s_out, 1, 0, {{0}}, 0, ""};
  CHECK(run(W, "(catch :t (twice))", TXN_ACTION, &so, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, ":OUTER");
  txn_outcome_free(&o);

  /* an id from an earlier pause (same attempt) is refused */
  CHECK(run1(W, "(defun two-pauses () (list (restart-case (error \"one\") (r1 () 1))"
                "                        (restart-case (error \"two\") (r2 () 2))))") == TXN_ACCEPTED);
  Step s2[] = {
    {TXN_CMD_RESUME, NULL, "R1", NULL, 0},
    {TXN_CMD_RESUME, NULL, "=p1-0", NULL, 0},   /* from pause 1: expired */
    {TXN_CMD_RESUME, NULL, "R2", NULL, 0},
  };
  Script sp = {s2, 3, 0, {{0}}, 0, ""};
  CHECK(run(W, "(two-pauses)", TXN_ACTION, &sp, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(1 2)");
  txn_outcome_free(&o);
  CHECK(sp.nseen == 3);
  CHECK_STR(sp.seen[0].ids[0], "p1-0");
  CHECK_STR(sp.seen[1].ids[0], "p2-0");
  CHECK(sp.seen[1].generation == sp.seen[0].generation + 2);  /* resume + pause */
  CHECK(sp.seen[2].refusal == TXN_INVALID_ARGUMENTS);
  CHECK(sp.seen[2].generation == sp.seen[1].generation);

  /* restarts established before the attempt are not offered; arguments */
  CHECK(run1(W, "(defun needs-value () (restart-case (error \"need\") (use-value (v) (list :got v))))") == TXN_ACCEPTED);
  Step s3[] = {
    {TXN_CMD_RESUME, NULL, "USE-VALUE", "(car 1)", 0},    /* args fail */
    {TXN_CMD_RESUME, NULL, "USE-VALUE", "42", 0},         /* not a list */
    {TXN_CMD_RESUME, NULL, "USE-VALUE", "(%gc)", 0},      /* a user's %GC: undefined */
    {TXN_CMD_RESUME, NULL, "USE-VALUE", "(list (+ 40 2))", 0},
  };
  Script sa = {s3, 4, 0, {{0}}, 0, ""};
  CHECK(run(W, "(needs-value)", TXN_ACTION, &sa, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(:GOT 42)");
  txn_outcome_free(&o);
  CHECK(sa.nseen == 4);
  CHECK(sa.seen[1].refusal == TXN_INVALID_ARGUMENTS && strstr(sa.seen[1].error, "failed"));
  CHECK(sa.seen[2].refusal == TXN_INVALID_ARGUMENTS && strstr(sa.seen[2].error, "list"));
  CHECK(sa.seen[3].refusal == TXN_INVALID_ARGUMENTS && strstr(sa.seen[3].error, "%GC"));
  CHECK(sa.seen[1].generation == sa.seen[0].generation);
  /* stale command while paused: refused, still paused */
  Step s4[] = {
    {TXN_CMD_EVALUATE, "(world-put :stale 1)", NULL, NULL, -1},
    {TXN_CMD_RESUME, NULL, "USE-VALUE", "(list 1)", 0},
  };
  Script ss = {s4, 2, 0, {{0}}, 0, ""};
  CHECK(run(W, "(needs-value)", TXN_ACTION, &ss, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(ss.seen[1].refusal == TXN_STALE);
  CHECK_STR(ev(W, "(world-get :stale)"), "NIL");
  txn_close(W);
}

static void test_budget(void) {
  txn_Options opt = {{0}, 3, 0};
  txn_World *W = txn_open(&opt);
  load(W, PROGRAM);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(world-put :a 1)", NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(world-put :b 2)", NULL, NULL, 0},
    {TXN_CMD_RESUME, NULL, "=nope", NULL, 0},
    {TXN_CMD_EVALUATE, "(world-put :c 3)", NULL, NULL, 0},
    {TXN_CMD_RESUME, NULL, "RETRY", NULL, 0},
  };
  Script s = {steps, 5, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(outer 0)", TXN_ACTION, &s, &o) == TXN_BUDGET_EXHAUSTED);
  txn_outcome_free(&o);
  CHECK(s.nseen == 4);
  CHECK_STR(ev(W, "(list (world-get :a) (world-get :b) (world-get :c))"), "(NIL NIL NIL)");
  CHECK(txn_status(W) == TXN_ST_IDLE);
  txn_close(W);
}

static void test_stale(void) {
  txn_World *W = txn_open(NULL);
  CHECK(run1(W, "(world-put :k 1)") == TXN_ACCEPTED);
  uint64_t g = txn_generation(W);
  txn_Outcome o;
  CHECK(txn_attempt(W, g - 1, "(world-put :k 2)", TXN_ACTION, NULL, NULL, &o) == TXN_STALE);
  CHECK(o.generation == g);
  txn_outcome_free(&o);
  CHECK(txn_attempt(W, g + 5, "(world-put :k 2)", TXN_APPLICATION, NULL, NULL, &o) == TXN_STALE);
  txn_outcome_free(&o);
  CHECK(txn_invariant_add(W, g + 1, "x", "t", &o) == TXN_STALE);
  txn_outcome_free(&o);
  CHECK(txn_generation(W) == g);
  CHECK_STR(ev(W, "(world-get :k)"), "1");
  txn_close(W);
}

/* Declarations of granted libraries pass the gate; a declaration built at
** run time (which the gate cannot see) is refused by the kernel itself. */
static void test_gate_foreign(void) {
  txn_World *W = txn_open(NULL);
  char why[512];
  const char *decl = "(define-foreign c \"libm.so.6\" \"cos\" :double (:double))";
  CHECK(txn_gate(W, decl, why, sizeof why) == 1);
  CHECK(jiti_foreign_grant(txn_state(W), "libm.so.6", why, sizeof why) == JITI_OK);
  CHECK(txn_gate(W, decl, why, sizeof why) == 0);
  txn_Outcome o;
  CHECK(txn_attempt(W, txn_generation(W), decl, TXN_ACTION, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1 && o.changes[0].kind == JITI_ENTRY_FOREIGN && !strcmp(o.changes[0].name, "C"));
  txn_outcome_free(&o);
  txn_commit(W);
  CHECK_STR(ev(W, "(c 0)"), "1.0d0");
  const char *sly = "(eval (list 'define-foreign 's (concatenate 'string \"libc\" \".so.6\") \"strlen\" :size '(:string)))";
  CHECK(txn_gate(W, sly, why, sizeof why) == 0);
  CHECK(txn_attempt(W, txn_generation(W), sly, TXN_APPLICATION, NULL, NULL, &o) == TXN_ERROR);
  CHECK(strstr(o.message, "--allow-foreign libc.so.6") != NULL);
  txn_outcome_free(&o);
  CHECK(jiti_world_count(txn_state(W), JITI_ENTRY_FOREIGN) == 1);
  txn_close(W);
}

/* A transaction that declares a foreign function and calls it (and calls it
** again from a repair while paused), then is aborted: the declaration and
** every change to the world are undone.  What the C function did to its
** own memory is not: the library's state lies outside the world. */
static void test_foreign_pause_abort(void) {
  txn_World *W = txn_open(NULL);
  char why[512];
  CHECK(jiti_foreign_grant(txn_state(W), PROBE_LIB, why, sizeof why) == JITI_OK);
  CHECK(run1(W, "(define-foreign p-count \"" PROBE_LIB "\" \"probe_count\" :int ())") == TXN_ACCEPTED);
  CHECK_STR(ev(W, "(p-count)"), "0");
  uint64_t g0 = txn_generation(W);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(progn (p-bump) (world-put :repaired (p-count)))", NULL, NULL, 0},
    {TXN_CMD_ABORT, NULL, NULL, NULL, 0},
  };
  Script s = {steps, 2, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(progn (define-foreign p-bump \"" PROBE_LIB "\" \"probe_bump\" :void ()) (p-bump)"
               " (world-put :n (p-count)) (error \"stop after ~a\" (p-count)))", TXN_ACTION, &s, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(s.nseen == 2 && strstr(s.seen[0].report, "stop after 1") != NULL);
  CHECK(txn_generation(W) > g0);
  CHECK_STR(ev(W, "(list (fboundp 'p-bump) (world-get :n) (world-get :repaired))"), "(NIL NIL NIL)");
  CHECK(jiti_world_count(txn_state(W), JITI_ENTRY_FOREIGN) == 1);
  CHECK_STR(ev(W, "(p-count)"), "2");
  txn_close(W);
}

/* The gate reads what it is sent with the standard syntax and never
** evaluates #., whatever the world's *read-eval* and *readtable* say: a
** reader macro or #. would run before the checks.  A program's own reads
** honour both. */
static void test_gate_syntax(void) {
  txn_World *W = txn_open(NULL);
  char why[512];
  /* (the world keeps its readtable: its functions are named) */
  CHECK_STR(ev(W, "(progn (defvar *ran* nil) (setq *read-eval* t)"
                  " (defun ran-macro (s c) (declare (ignore s c)) (setq *ran* :macro) 1)"
                  " (defun ran-dispatch (s c n) (declare (ignore s c n)) (setq *ran* :dispatch) 1)"
                  " (setq *readtable* (copy-readtable nil))"
                  " (set-macro-character #\\! 'ran-macro)"
                  " (set-dispatch-macro-character #\\# #\\! 'ran-dispatch)"
                  " t)"), "T");
  CHECK(txn_gate(W, "#.(setq *ran* :eval)", why, sizeof why) == 1);
  CHECK(strstr(why, "#.") != NULL);
  CHECK(txn_gate(W, "(list #.(setq *ran* :eval))", why, sizeof why) == 1);
  CHECK(txn_gate(W, "(list !x)", why, sizeof why) == 0);      /* the symbol !X, nothing run */
  CHECK(txn_gate(W, "(list #!x)", why, sizeof why) == 1);     /* no such standard # syntax */
  CHECK_STR(ev(W, "*ran*"), "NIL");
  /* an attempt: refused and nothing evaluated, by the gate or the read */
  txn_Outcome o;
  uint64_t g = txn_generation(W);
  CHECK(txn_attempt(W, g, "(progn (world-put :x 1) #.(progn (setq *ran* :eval) (world-put :y 1)))",
                    TXN_ACTION, NULL, NULL, &o) == TXN_REJECTED_BY_GATE);
  txn_outcome_free(&o);
  CHECK(txn_generation(W) == g);
  CHECK_STR(ev(W, "(list *ran* (world-count))"), "(NIL 0)");
  /* inside a program #. evaluates (the default *read-eval* is T), and NIL turns it off */
  CHECK(run(W, "(world-put :r (read-from-string \"#.(+ 1 2)\"))", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :r)"), "3");
  CHECK(run(W, "(world-put :s (handler-case (let ((*read-eval* nil)) (read-from-string \"#.(+ 1 2)\"))"
               " (reader-error () :refused)))", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :s)"), ":REFUSED");
  /* the world's readtable lasts: a later transaction's program reads with it */
  CHECK(run(W, "(world-put :m (read-from-string \"(!x #!y)\"))", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (world-get :m) *ran*)"), "((1 X 1 Y) :DISPATCH)");
  txn_close(W);
}

static void test_gate(void) {
  txn_World *W = txn_open(NULL);
  char why[512];
  struct { const char *src; const char *why; } bad[] = {
    {"#.(+ 1 2)", "#."},
    {"(list #.(+ 1 2))", "#."},
    {"(+ 1 2) (+ 3 4)", "more than one"},
    {"", "no form"},
    {"  ; only a comment", "no form"},
    {"(jiti::brand-new-name '(1))", "JITI"},         /* locked: the reader makes no symbol */
    {"(cl-user:car '(1))", "COMMON-LISP-USER"},      /* CAR is not external there */
    {"(no-such-package:car '(1))", "NO-SUCH-PACKAGE"},
    {"(||::%txn-gate \"1\" nil)", "does not read"},   /* the internal home has no name */
    {"(list '#1=(a . #1#))", "#n="},
    {"(list '(#1=(x) #1#))", "#n="},
    {"(format nil \"~/car/\" 1)", "~/"},
    {"(car", "does not read"},
    /* a library the operator did not grant: refused, naming the option */
    {"(define-foreign c \"libm.so.6\" \"cos\" :double (:double))", "--allow-foreign libm.so.6"},
    {"(progn (defun f () 1) (when t (define-foreign s \"libc.so.6\" \"strlen\" :size (:string))))",
     "the library libc.so.6 is not granted"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int r = txn_gate(W, bad[i].src, why, sizeof why);
    CHECK(r == 1);
    if (r != 1 || !strstr(why, bad[i].why))
      fprintf(stderr, "gate: %s -> %d %s (expected %s)\n", bad[i].src, r, why, bad[i].why);
    CHECK(strstr(why, bad[i].why) != NULL);
    /* an attempt's gate reads the form once for its evaluation: its
    ** refusal is the same, word for word */
    txn_Outcome o;
    CHECK(txn_attempt(W, txn_generation(W), bad[i].src, TXN_APPLICATION, NULL, NULL, &o) == TXN_REJECTED_BY_GATE);
    CHECK_STR(o.message, why);
    txn_outcome_free(&o);
  }
  const char *good[] = {
    "(+ 1 2)", "(cl:car '(1 2))", "(common-lisp:list :a)", "(cl-user::list 1)", "(list :key 'sym \"str %x\" #\\% #\\:)",
    "(defun f (x) (restart-case (g x) (use-value (v) v)))", "(list '(a b) '(a b))", "(list 'a 'a 'a)",
"(list \"a\" \"a\")", "(list |a:b|)", "(list #\\( #\\))", "(list #|block %gc|# 1)",
    "(+ 1 2) ; trailing comment", "'sym%with-percent-inside",
    "(jiti::car '(1))", "(list #+sbcl (foo:bar) 1)", "(jiti:world-get :k)",
    /* the user's own %-names are ordinary symbols: the kernel's cannot be
    ** named (the wall is tested in test_internal_wall) */
    "(progn (quote (a b (c %internal))))", "(progn 1 (progn 2 '(x (y (z #(1 (%gc)))))))",
    "(list '|%x|)", "(list #+jiti %gc #-jiti 1)", "(list `(a ,(b '%gc)))", "(list :%secret)",
    "(list '#:%unint)", "(%txn-gate \"x\" nil)", "(defun %helper (x) (* 2 x))",
    /* application code may use restarts it establishes, read and intern */
    "(restart-case (invoke-restart 'mine 1) (mine (x) x))",
    "(handler-bind ((error (lambda (c) (invoke-restart 'use-value 0)))) (restart-case (error \"x\") (use-value (v) v)))",
    "(invoke-debugger (make-condition 'error))", "(funcall (intern \"CAR\") '(1))",
    "(read-from-string \"(1 2)\")", "(macroexpand '(push 1 x))",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    int r = txn_gate(W, good[i], why, sizeof why);
    if (r != 0) fprintf(stderr, "gate refused good %s: %s\n", good[i], why);
    CHECK(r == 0);
    txn_Outcome o;
    txn_Reason a = txn_attempt(W, txn_generation(W), good[i], TXN_APPLICATION, NULL, NULL, &o);
    if (a == TXN_REJECTED_BY_GATE) fprintf(stderr, "attempt refused good %s: %s\n", good[i], o.message);
    CHECK(a != TXN_REJECTED_BY_GATE || strstr(o.message, "READER-ERROR"));
    txn_outcome_free(&o);
    if (txn_status(W) == TXN_ST_AWAITING) txn_restore(W, NULL);
  }
  /* size: 16 KiB ok, 16 KiB + 1 refused */
  char *big = malloc(16386);
  memset(big, ' ', 16385);
  big[0] = '1';
  big[16384] = 0;
  CHECK(txn_gate(W, big, why, sizeof why) == 0);
  big[16384] = ' ';
  big[16385] = 0;
  CHECK(txn_gate(W, big, why, sizeof why) == 1);
  CHECK(strstr(why, "16385") != NULL);
  free(big);
  /* a refused attempt runs nothing and leaves the generation alone */
  uint64_t g = txn_generation(W);
  txn_Outcome o;
  CHECK(txn_attempt(W, g, "(progn (world-put :x 1) #.(list 1 2))", TXN_ACTION, NULL, NULL, &o) == TXN_REJECTED_BY_GATE);
  CHECK(strstr(o.message, "#.") != NULL);
  txn_outcome_free(&o);
  CHECK(txn_attempt(W, g, "(world-put :x 1) (world-put :y 2)", TXN_APPLICATION, NULL, NULL, &o) == TXN_REJECTED_BY_GATE);
  txn_outcome_free(&o);
  CHECK(txn_generation(W) == g);
  CHECK_STR(ev(W, "(world-count)"), "0");
  /* repairs are gated too, and THROW is refused in them */
  load(W, PROGRAM);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "#.(%gc)", NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(throw :x 1)", NULL, NULL, 0},
    {TXN_CMD_ABORT, NULL, NULL, NULL, 0},
  };
  Script s = {steps, 3, 0, {{0}}, 0, ""};
  CHECK(run(W, "(outer 0)", TXN_ACTION, &s, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(s.seen[1].refusal == TXN_REJECTED_BY_GATE && strstr(s.seen[1].error, "#."));
  CHECK(s.seen[2].refusal == TXN_REJECTED_BY_GATE && strstr(s.seen[2].error, "THROW"));
  txn_close(W);
  test_gate_syntax();
  test_gate_foreign();
}

static void test_preview_application_goals(void) {
  txn_World *W = txn_open(NULL);
  CHECK(run1(W, "(world-put :count 1)") == TXN_ACCEPTED);
  uint64_t g = txn_generation(W);
  txn_Outcome o;
  /* preview: reports, always restores */
  CHECK(txn_attempt(W, g, "(progn (world-put :count 2) (defun p () 1) :previewed)", TXN_PREVIEW, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, ":PREVIEWED");
  CHECK(has_change(&o, JITI_ENTRY_DATA, ":COUNT") && has_change(&o, JITI_ENTRY_FUNCTION, "P"));
  CHECK(o.generation == g);  /* nothing a view showed changed */
  txn_outcome_free(&o);
  CHECK(txn_status(W) == TXN_ST_IDLE);
  CHECK_STR(ev(W, "(list (world-get :count) (fboundp 'p))"), "(1 NIL)");
  /* application calls: a failing call restores its own partial writes */
  CHECK(run1(W, "(defun bump (fail) (world-put :count (+ 1 (world-get :count))) (when fail (error \"failed after writing\")) (world-get :count))") == TXN_ACCEPTED);
  CHECK(run(W, "(bump t)", TXN_APPLICATION, NULL, &o) == TXN_ERROR);
  CHECK(strstr(o.message, "failed after writing") != NULL);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :count)"), "1");
  /* the commit of changes that turn out to be none (the store had them):
  ** the generation stays; a real one moves it */
  g = txn_generation(W);
  CHECK(txn_attempt(W, g, "(world-put :count 1)", TXN_ACTION, NULL, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit_unchanged(W) == 0 && txn_generation(W) == g);
  CHECK(txn_commit_unchanged(W) == -1);
  CHECK(txn_attempt(W, g, "(world-put :count 1)", TXN_ACTION, NULL, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0 && txn_generation(W) == g + 1);
  CHECK(run(W, "(bump nil)", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "2");
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :count)"), "2");
  /* goals: reported, never rejecting a safe step */
  const char *goals[] = {"(>= (world-get :count) 3)", "(fboundp 'bump)", "(car 1)"};
  txn_set_goals(W, 3, goals);
  CHECK(run(W, "(world-put :count 2)", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.ngoals == 3 && !o.goals[0].pass && o.goals[1].pass && !o.goals[2].pass);
  txn_outcome_free(&o);
  CHECK(run(W, "(world-put :count 3)", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.ngoals == 3 && o.goals[0].pass);
  txn_outcome_free(&o);
  char *obs = txn_observe(W, 0);
  json_t *j = json_loads(obs, 0, NULL);
  CHECK(j != NULL);
  json_t *gl = json_object_get(j, "goals");
  CHECK(json_array_size(gl) == 3);
  CHECK(json_is_true(json_object_get(json_array_get(gl, 0), "pass")));
  CHECK(json_integer_value(json_object_get(j, "generation")) == (json_int_t)txn_generation(W));
  CHECK_STR(json_string_value(json_object_get(j, "status")), "idle");
  json_decref(j);
  free(obs);
  txn_close(W);
}

static void test_faulted(void) {
  txn_World *W = txn_open(NULL);
  /* import a world whose baseline is invalid */
  jiti_State *S = txn_state(W);
  char err[512];
  CHECK_STR(ev(W, "(world-put :level -5)"), "-5");
  CHECK(jiti_invariant_add(S, "level-positive", "(> (world-get :level 0) 0)", err, sizeof err) == JITI_OK);
  CHECK(txn_check_baseline(W, err, sizeof err) == 1);
  CHECK(strstr(err, "invalid-baseline") && strstr(err, "LEVEL-POSITIVE"));
  CHECK(txn_status(W) == TXN_ST_FAULTED);
  txn_Outcome o;
  CHECK(txn_attempt(W, txn_generation(W), "(world-put :level 5)", TXN_ACTION, NULL, NULL, &o) == TXN_FAULTED);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(world-get :level)"), "-5");
  char *obs = txn_observe(W, 0);
  CHECK(obs && strstr(obs, "\"faulted\""));
  free(obs);
  /* an operator repair is accepted; committing clears the fault */
  CHECK(txn_attempt(W, txn_generation(W), "(world-put :level 5)", TXN_OPERATOR, NULL, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  CHECK(txn_status(W) == TXN_ST_IDLE);
  CHECK(run1(W, "(world-put :level 6)") == TXN_ACCEPTED);
  /* removing the failing invariant also clears a fault */
  CHECK_STR(ev(W, "(world-put :level -1)"), "-1");
  CHECK(txn_check_baseline(W, err, sizeof err) == 1);
  CHECK(txn_invariant_remove(W, txn_generation(W), "level-positive", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  CHECK(txn_status(W) == TXN_ST_IDLE);
  txn_close(W);
}

static void test_observe_budget(void) {
  txn_World *W = txn_open(NULL);
  CHECK(run1(W, "(dotimes (i 300) (world-put i (make-string 50 :initial-element #\\x)))") == TXN_ACCEPTED);
  CHECK(run1(W, "(defun small () 1)") == TXN_ACCEPTED);
  txn_Outcome o;
  CHECK(txn_invariant_add(W, txn_generation(W), "ok", "t", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  txn_set_revision(W, 7);
  char *s = txn_observe(W, 4000);
  CHECK(s && strlen(s) < 40000);
  json_t *j = json_loads(s, 0, NULL);
  CHECK(json_integer_value(json_object_get(j, "revision")) == 7);
  json_t *data = json_object_get(j, "data");
  CHECK(json_integer_value(json_object_get(data, "count")) == 300);
  json_t *tr = json_object_get(j, "truncated");
  CHECK(json_integer_value(json_object_get(tr, "omitted")) > 0);
  CHECK(json_integer_value(json_object_get(tr, "summarized")) > 0);
  CHECK(json_array_size(json_object_get(j, "invariants")) == 1);
  CHECK(json_array_size(json_object_get(j, "entries")) == 1);
  json_decref(j);
  free(s);
  s = txn_observe(W, 1 << 20);
  j = json_loads(s, 0, NULL);
  CHECK(json_array_size(json_object_get(json_object_get(j, "data"), "rows")) == 300);
  json_decref(j);
  free(s);
  s = txn_inspect(W, "data", "299");
  CHECK(s && strstr(s, "xxxxx"));
  free(s);
  txn_close(W);
}

/* Every variable is exported after an attempt (mutation is not tracked);
** only those whose encoding changed since the last commit (or the noted
** import) are reported. */
static void test_variable_changes(void) {
  txn_World *W = txn_open(NULL);
  txn_Outcome o;
  CHECK(run(W, "(defvar *v* (list 1 2))", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_VARIABLE, "*V*"));
  txn_outcome_free(&o);
  CHECK(run(W, "(length *v*)", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 0);
  txn_outcome_free(&o);
  CHECK(run(W, "(push 0 (cdr *v*))", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_VARIABLE, "*V*") && o.nchanges == 1);
  txn_outcome_free(&o);
  /* a mutation that is restored (publication failed) is reported again */
  CHECK(txn_attempt(W, txn_generation(W), "(push 9 (cdr *v*))", TXN_APPLICATION, NULL, NULL, &o) ==
        TXN_ACCEPTED);
  CHECK(o.nchanges == 1);
  txn_outcome_free(&o);
  CHECK(txn_restore(W, &o) == 0);
  txn_outcome_free(&o);
  CHECK(run(W, "(length *v*)", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 0);
  txn_outcome_free(&o);
  CHECK(run(W, "(push 9 (cdr *v*))", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1);
  txn_outcome_free(&o);
  /* an unchanged value written back is not a change; a preview reports
  ** changes but they are not remembered */
  CHECK(run(W, "(setf *v* (copy-list *v*))", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 0);
  txn_outcome_free(&o);
  CHECK(run(W, "(setf *v* 5)", TXN_PREVIEW, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1);
  txn_outcome_free(&o);
  CHECK(run(W, "(setf *v* 5)", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "*v*"), "5");
  txn_close(W);

  /* imported variables: noted encodings count as committed */
  txn_World *A = txn_open(NULL), *B = txn_open(NULL);
  CHECK(run1(A, "(defvar *w* (list :a 1))") == TXN_ACCEPTED);
  char err[256];
  /* export A's variable, import it into B, note it */
  CHECK(txn_attempt(A, txn_generation(A), "(push :b *w*)", TXN_APPLICATION, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 1);
  unsigned char *bytes = o.changes[0].bytes;
  size_t len = o.changes[0].len;
  CHECK(jiti_import_entry(txn_state(B), JITI_ENTRY_VARIABLE, "*W*", bytes, len, err, sizeof err) == JITI_OK);
  txn_note_entry(B, JITI_ENTRY_VARIABLE, "*W*", bytes, len);
  txn_outcome_free(&o);
  CHECK(run(B, "(length *w*)", TXN_APPLICATION, NULL, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "3");
  CHECK(o.nchanges == 0);
  txn_outcome_free(&o);
  txn_close(A);
  txn_close(B);
}


/* Kernel internals cannot be reached from user code by any route: the
** reproduction of a store poisoned through a helper found in DEFSTRUCT's
** expansion, each route to a symbol's cells, and the helpers that do
** appear in expansions doing no more than the form they stand for. */
static void test_internal_wall(void) {
  txn_World *W = txn_open(NULL);
  txn_Outcome o;
  /* walk an expansion for a symbol named %NAME */
  CHECK(run1(W, "(defun find-named (x name) (cond ((and (symbolp x) (string= (symbol-name x) name)) x) "
                "((consp x) (or (find-named (car x) name) (find-named (cdr x) name)))))") == TXN_ACCEPTED);
  /* the original attack: no %RECORD-TYPE in the expansion any more, and
  ** the helper that is there, called with a poisoned form, refuses it */
  CHECK_STR(ev(W, "(find-named (macroexpand-1 '(defstruct pt a)) \"%RECORD-TYPE\")"), "NIL");
  CHECK(run(W, "(funcall (find-named (macroexpand-1 '(defstruct pt a)) \"%DEFSTRUCT\") '(error \"poisoned\") nil)",
            TXN_ACTION, NULL, &o) == TXN_ABORTED);
  CHECK(strstr(o.message, "undefined") != NULL);
  txn_outcome_free(&o);
  CHECK(run(W, "(eval (list (find-named (macroexpand-1 '(defstruct pt a)) \"%DEFSTRUCT\") ''(error \"poisoned\")))",
            TXN_ACTION, NULL, &o) == TXN_ABORTED);
  CHECK(strstr(o.message, "not a DEFSTRUCT form") != NULL);
  txn_outcome_free(&o);
  CHECK(run(W, "(eval (list (find-named (macroexpand-1 '(define-condition c1 (error) ())) \"%DEFINE-CONDITION-FORM\") "
               "''(error \"poisoned\")))", TXN_ACTION, NULL, &o) == TXN_ABORTED);
  CHECK(strstr(o.message, "not a DEFINE-CONDITION form") != NULL);
  txn_outcome_free(&o);
  /* guarded helpers called from user code are undefined, whatever the route */
  const char *routes[] = {
    "(funcall '%record-type 'zz '(error \"poisoned\"))",
    "(let ((s (find-named (macroexpand-1 '(defstruct pt a)) \"%DEFSTRUCT\"))) (symbol-function s))",
    "(let ((s (find-named (macroexpand-1 '(defstruct pt a)) \"%DEFSTRUCT\"))) (fdefinition s))",
    "(let ((s (find-named (macroexpand-1 '(defstruct pt a)) \"%DEFSTRUCT\"))) (apply s '(nil nil)))",
    "(let ((s (find-named (macroexpand '(setf (car y) 1)) \"%SET-CAR\"))) (funcall s (list 1) 2))",
  };
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    txn_Reason r = run(W, routes[i], TXN_ACTION, NULL, &o);
    if (r != TXN_ABORTED || !strstr(o.message, "undefined"))
      fprintf(stderr, "route %s -> %s: %s\n", routes[i], txn_reason_name(r), o.message ? o.message : "");
    CHECK(r == TXN_ABORTED && strstr(o.message, "undefined"));
    txn_outcome_free(&o);
  }
  CHECK_STR(ev(W, "(let ((s (find-named (macroexpand-1 '(defstruct pt a)) \"%DEFSTRUCT\"))) "
                  "(list (fboundp s) (macro-function s) (documentation s 'function) (find-symbol (symbol-name s))))"),
            "(NIL NIL NIL NIL)");
  /* an internal symbol held as a value cannot be stored: a store could not
  ** give it back (the worker could not be rebuilt from it) */
  CHECK(run(W, "(eval (list 'defvar '*leak* (list 'quote (find-named (macroexpand '(setf (car y) 1)) \"%SET-CAR\"))))",
            TXN_ACTION, NULL, &o) == TXN_UNSAFE);
  CHECK(strstr(o.message, "kernel-internal symbol") != NULL);
  txn_outcome_free(&o);
  CHECK(run(W, "(world-put :leak (list 1 (find-named (macroexpand '(setf (car y) 1)) \"%SET-CAR\")))",
            TXN_ACTION, NULL, &o) == TXN_ABORTED);
  CHECK(strstr(o.message, "kernel-internal symbol") != NULL);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (boundp '*leak*) (world-get :leak))"), "(NIL NIL)");
  /* the functions a type defines belong to the type's entry; everything
  ** else, even when a type's initform or default runs it, is recorded */
  CHECK(run1(W, "(defun foo () :good)") == TXN_ACCEPTED);
  CHECK(run1(W, "(defmacro evil-m () (eval '(defun foo () :evil)) nil)") == TXN_ACCEPTED);
  CHECK(run(W, "(defstruct (pt2 (:constructor mk2 (&optional (a (evil-m))))) a)", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "FOO") && has_change(&o, JITI_ENTRY_STRUCTURE, "PT2"));
  CHECK(!has_change(&o, JITI_ENTRY_FUNCTION, "MK2") && !has_change(&o, JITI_ENTRY_FUNCTION, "PT2-A"));
  txn_outcome_free(&o);
  CHECK(run1(W, "(defun make-q () :mine)") == TXN_ACCEPTED);
  CHECK(run(W, "(defstruct q x)", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "MAKE-Q"));   /* removed: the type owns it now */
  txn_outcome_free(&o);
  /* a defstruct still records exactly its form, and types defined by a
  ** user still work */
  CHECK(run1(W, "(defstruct pt a (b 2))") == TXN_ACCEPTED);
  CHECK_STR(ev(W, "(pt-b (make-pt :a 1))"), "2");
  CHECK(run1(W, "(deftype small () '(integer 0 9))") == TXN_ACCEPTED);
  CHECK_STR(ev(W, "(list (typep 5 'small) (typep 50 'small))"), "(T NIL)");
  /* the kernel's own types and setf expansions cannot be redefined */
  CHECK(run(W, "(deftype integer () 'string)", TXN_ACTION, NULL, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(run(W, "(defsetf car my-set-car)", TXN_ACTION, NULL, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(let ((x (list 1))) (setf (car x) 2) (typep 1 'integer))"), "T");
  /* the language's own variables are not managed state: defining one is
  ** refused, and setting one lasts until the end of the transaction */
  CHECK(run(W, "(defvar *features* nil)", TXN_ACTION, NULL, &o) == TXN_ABORTED);
  CHECK(strstr(o.message, "built-in variable") != NULL);
  txn_outcome_free(&o);
  CHECK(run(W, "(defparameter *read-base* 16)", TXN_ACTION, NULL, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(run1(W, "(progn (setq *features* nil *read-base* 16) 1)") == TXN_ACCEPTED);
  CHECK(run(W, "(list (read-from-string \"#+jiti 10 20\") (read-from-string \"10\"))", TXN_ACTION, NULL, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(10 10)");
  txn_outcome_free(&o);
  txn_close(W);
}

/* A repair may invoke restarts it establishes itself, never the paused
** computation's: those are chosen by resuming. */
static void test_repair_restarts(void) {
  txn_World *W = txn_open(NULL);
  CHECK(run1(W, "(defun needs () (restart-case (error \"need\") (use-value (v) (list :got v))))") == TXN_ACCEPTED);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(restart-case (invoke-restart 'mine 7) (mine (x) (* x 6)))", NULL, NULL, 0},
    {TXN_CMD_RESUME, NULL, "USE-VALUE", "(list 2)", 0},
  };
  Script s = {steps, 2, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(needs)", TXN_ACTION, &s, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(:GOT 2)");
  txn_outcome_free(&o);
  Step steps2[] = {{TXN_CMD_EVALUATE, "(invoke-restart 'use-value 1)", NULL, NULL, 0}};
  Script s2 = {steps2, 1, 0, {{0}}, 0, ""};
  CHECK(run(W, "(needs)", TXN_ACTION, &s2, &o) == TXN_ABORTED);
  CHECK(s2.nseen >= 2 && s2.seen[1].level == 2);
  CHECK(strstr(s2.seen[1].report, "chosen by resuming") != NULL);
  txn_outcome_free(&o);
  txn_close(W);
}

/* An action whose source is read and evaluated in package `package`. */
static txn_Reason attempt_in(txn_World *W, const char *source, const char *package, txn_Outcome *o) {
  txn_Request rq = {TXN_ACTION, txn_generation(W), source, 0, NULL, package, 0, 0, 0, NULL, 0, 0, 0, 0, 0};
  return txn_run(W, &rq, NULL, NULL, o);
}

/* An attempt read and evaluated in a named package: the world's current
** package stays; an unknown name runs nothing; in-package as an action
** changes the world's package, and a refused attempt puts it back. */
static void test_attempt_package(void) {
  txn_World *W = txn_open(NULL);
  CHECK(run1(W, "(defpackage :shop (:use :cl) (:export #:price))") == TXN_ACCEPTED);
  txn_Outcome o;
  CHECK(attempt_in(W, "(defun price (x) (list x *package*))", "SHOP", &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "SHOP::PRICE"));
  CHECK(txn_commit(W) == 0);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (package-name *package*) (shop:price 1))"),
            "(\"COMMON-LISP-USER\" (1 #<PACKAGE \"COMMON-LISP-USER\">))");
  CHECK(attempt_in(W, "(in-package :shop)", "shop", &o) == TXN_ACCEPTED);
  CHECK(o.nchanges == 0);   /* the binding changed, not the world */
  CHECK(txn_commit(W) == 0);
  txn_outcome_free(&o);
  CHECK(attempt_in(W, "1", "NO-SUCH", &o) == TXN_INVALID_ARGUMENTS);
  CHECK(o.message && strstr(o.message, "no package is named NO-SUCH"));
  txn_outcome_free(&o);
  CHECK(attempt_in(W, "(no-such:x)", NULL, &o) == TXN_REJECTED_BY_GATE);
  txn_outcome_free(&o);
  /* durable: in-package without a package */
  CHECK(txn_attempt(W, txn_generation(W), "(in-package :shop)", TXN_ACTION, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_VARIABLE, "*PACKAGE*"));
  CHECK(txn_commit(W) == 0);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(list (package-name *package*) (price 2))"), "(\"SHOP\" (2 #<PACKAGE \"SHOP\">))");
  CHECK(txn_attempt(W, txn_generation(W), "(progn (cl:in-package :cl-user) (car 5))", TXN_ACTION, NULL, NULL, &o)
        == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK_STR(ev(W, "(package-name *package*)"), "\"SHOP\"");
  txn_close(W);
}

/* Pause levels: an error inside a repair pauses at level 2 with its own
** restarts above level 1's; a level-2 restart lets the repair go on; an
** outer restart chosen at level 2 leaves level 2 (keeping what it did) and
** resumes level 1; observe shows the levels. */
static void test_levels(void) {
  txn_World *W = txn_open(NULL);
  load(W, PROGRAM);
  uint64_t g0 = txn_generation(W);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(restart-case (error \"inner ~a\" 1) (fix (v) (list :fixed v)))", NULL, NULL, 0},
    {TXN_CMD_RESUME, NULL, "FIX", "(list 5)", 0},
    {TXN_CMD_EVALUATE, "(progn (world-put :w 1) (car 2))", NULL, NULL, 0},
    {TXN_CMD_EVALUATE, "(defun helper (x) (list :level-2-helper x))", NULL, NULL, 0},
    {TXN_CMD_RESUME, NULL, "RETRY", NULL, 0},
  };
  Script s = {steps, 5, 0, {{0}}, 0, ""};
  txn_Outcome o;
  CHECK(run(W, "(outer 0)", TXN_ACTION, &s, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(:OLD-OUTER (:LEVEL-2-HELPER 0) (:LEVEL-2-HELPER 7))");
  CHECK(s.nseen == 5);
  /* level 2: its FIX first, then level 1's RETRY with its level-1 id */
  CHECK(s.seen[1].level == 2 && s.seen[1].pause == 2 && s.seen[1].generation == g0 + 2);
  CHECK_STR(s.seen[1].report, "inner 1");
  CHECK(s.seen[1].nrestarts == 2);
  CHECK_STR(s.seen[1].names[0], "FIX");
  CHECK_STR(s.seen[1].ids[0], "p2-0");
  CHECK(s.seen[1].levels[0] == 2);
  CHECK_STR(s.seen[1].names[1], "RETRY");
  CHECK_STR(s.seen[1].ids[1], "p1-0");
  CHECK(s.seen[1].levels[1] == 1);
  /* FIX returned from the repair: level 1 again, the repair's value shown */
  CHECK(s.seen[2].level == 1 && s.seen[2].pause == 1);
  CHECK_STR(s.seen[2].last_value, "(:FIXED 5)");
  /* the second error: level 2 again (pause 3); RETRY from there */
  CHECK(s.seen[3].level == 2 && s.seen[3].pause == 3);
  CHECK_STR(s.seen[3].type, "TYPE-ERROR");
  CHECK(has_change(&o, JITI_ENTRY_DATA, ":W"));   /* kept: left by an outer resume */
  CHECK(has_change(&o, JITI_ENTRY_FUNCTION, "HELPER"));
  CHECK(has_event(&o, "left-level"));
  txn_outcome_free(&o);
  /* observe while at level 2 */
  Step st2[] = {{TXN_CMD_EVALUATE, "(car 3)", NULL, NULL, 0}, {TXN_CMD_ABORT, NULL, NULL, NULL, 0}};
  Script s2 = {st2, 2, 0, {{0}}, 0, ""};
  CHECK(run(W, "(error \"top\")", TXN_ACTION, &s2, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  CHECK(s2.nseen == 3 && s2.seen[1].level == 2 && s2.seen[2].level == 1);
  CHECK_STR(s2.seen[1].observe_status, "paused");
  /* the step budget counts commands at every level */
  txn_close(W);
  txn_Options opt = {{0}, 3, 0};
  W = txn_open(&opt);
  load(W, PROGRAM);
  Step st3[] = {{TXN_CMD_EVALUATE, "(car 1)", NULL, NULL, 0}, {TXN_CMD_EVALUATE, "(car 2)", NULL, NULL, 0},
                {TXN_CMD_EVALUATE, "(car 3)", NULL, NULL, 0}, {TXN_CMD_EVALUATE, "(car 4)", NULL, NULL, 0}};
  Script s3 = {st3, 4, 0, {{0}}, 0, ""};
  CHECK(run(W, "(outer 0)", TXN_ACTION, &s3, &o) == TXN_BUDGET_EXHAUSTED);
  txn_outcome_free(&o);
  CHECK(s3.nseen == 4 && s3.seen[3].level == 4);
  txn_close(W);
}

/* What observe shows at level 2: the level, each level, every restart with
** its level. */
static int observe_fn(void *ud, const txn_View *v, txn_Command *c) {
  txn_World *W = ud;
  c->generation = v->generation;
  if (v->level == 1 && !v->error) {
    c->type = TXN_CMD_EVALUATE;
    c->source = "(restart-case (error \"deep\") (fix () 1))";
    return 0;
  }
  if (v->level == 2) {
    char *t = txn_observe(W, 0);
    json_t *j = json_loads(t, 0, NULL), *p = json_object_get(j, "pause");
    CHECK(json_integer_value(json_object_get(p, "level")) == 2);
    CHECK(json_array_size(json_object_get(p, "levels")) == 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(p, "levels"), 0), "report")),
              "helper got 0");
    json_t *r0 = json_array_get(json_object_get(p, "restarts"), 0);
    json_t *r1 = json_array_get(json_object_get(p, "restarts"), 1);
    CHECK_STR(json_string_value(json_object_get(r0, "id")), "p2-0");
    CHECK(json_integer_value(json_object_get(r0, "level")) == 2);
    CHECK(json_integer_value(json_object_get(r1, "level")) == 1);
    json_decref(j);
    free(t);
  }
  c->type = TXN_CMD_ABORT;
  return 0;
}

static void test_levels_observe(void) {
  txn_World *W = txn_open(NULL);
  load(W, PROGRAM);
  txn_Outcome o;
  CHECK(txn_attempt(W, txn_generation(W), "(outer 0)", TXN_ACTION, observe_fn, W, &o) == TXN_ABORTED);
  txn_outcome_free(&o);
  txn_close(W);
}

/* What a shadow does with the world (worker/shadow.c): a candidate kept
** without its invariants (no_invariants), every invariant run past a
** failure (txn_invariants_each), calls on top of the candidate each undone
** alone (txn_restore_newest), the candidate staying below them. */
typedef struct Fails { char names[4][64]; int n; } Fails;

static void failed_inv(void *ud, const char *name, const char *message) {
  Fails *f = ud;
  CHECK(message && strstr(message, name) != NULL);
  if (f->n < 4) snprintf(f->names[f->n], sizeof f->names[0], "%s", name);
  f->n++;
}

static void test_shadow_ops(void) {
  txn_World *W = txn_open(NULL);
  txn_set_stacking(W, 4);
  CHECK(run1(W, "(defvar *n* 1)") == TXN_ACCEPTED);
  txn_Outcome o;
  CHECK(txn_invariant_add(W, txn_generation(W), "a-positive", "(> *n* 0)", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  CHECK(txn_invariant_add(W, txn_generation(W), "b-small", "(< *n* 10)", &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  CHECK(txn_commit(W) == 0);
  uint64_t g = txn_generation(W);
  Fails f = {0};
  CHECK(txn_invariants_each(W, failed_inv, &f) == 0 && f.n == 0);
  /* a candidate that breaks both invariants: kept all the same */
  txn_Request rq = {TXN_APPLICATION, g, "(setf *n* -20) (defun twice (x) (* 2 x))", 1, NULL, NULL, 0, 1, 0, NULL, 0, 0, 0, 0, 0};
  CHECK(txn_run(W, &rq, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK(has_change(&o, JITI_ENTRY_VARIABLE, "*N*") && has_change(&o, JITI_ENTRY_FUNCTION, "TWICE"));
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 1);
  CHECK(txn_invariants_each(W, failed_inv, &f) == 1 && f.n == 1 && !strcmp(f.names[0], "A-POSITIVE"));
  f.n = 0;
  /* a call on it (with the invariants, as a client's): refused; another,
  ** accepted and undone alone */
  txn_Request call = {TXN_APPLICATION, txn_generation(W), "(twice *n*)", 0, NULL, NULL, 0, 0, 0, NULL, 0, 0, 0, 0, 0};
  CHECK(txn_run(W, &call, NULL, NULL, &o) == TXN_UNSAFE && strstr(o.message, "A-POSITIVE"));
  txn_outcome_free(&o);
  CHECK(txn_restore_newest(W) == 0 && txn_awaiting(W) == 0);   /* (the refused call left nothing: the candidate goes) */
  CHECK(!strcmp(ev(W, "*n*"), "1"));
  rq.generation = txn_generation(W);
  rq.source = "(setf *n* 5) (defun twice (x) (* 2 x))";
  CHECK(txn_run(W, &rq, NULL, NULL, &o) == TXN_ACCEPTED);
  txn_outcome_free(&o);
  call.generation = txn_generation(W);
  call.source = "(progn (setf *n* 7) (twice *n*))";
  CHECK(txn_run(W, &call, NULL, NULL, &o) == TXN_ACCEPTED && !strcmp(o.value, "14"));
  txn_outcome_free(&o);
  CHECK(txn_awaiting(W) == 2);
  CHECK(txn_restore_newest(W) == 0 && txn_awaiting(W) == 1);
  CHECK(!strcmp(ev(W, "*n*"), "5"));   /* the call undone, the candidate kept */
  CHECK(txn_invariants_each(W, failed_inv, &f) == 0);
  CHECK(txn_restore_newest(W) == 0 && txn_restore_newest(W) == -1);
  CHECK(!strcmp(ev(W, "*n*"), "1") && txn_generation(W) == g);
  txn_close(W);
}

int main(void) {
  test_shadow_ops();
  test_levels();
  test_levels_observe();
  test_attempt_package();
  test_variable_changes();
  test_unsafe();
  test_live_repair();
  test_abort_undoes_repairs();
  test_restart_menu();
  test_budget();
  test_stale();
  test_gate();
  test_foreign_pause_abort();
  test_internal_wall();
  test_repair_restarts();
  test_preview_application_goals();
  test_faulted();
  test_observe_budget();
  return CHECK_DONE();
}
