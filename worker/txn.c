/*
** txn.c — transactions over a jiti world: attempts with pause / repair /
** resume / abort, invariants, changed entries, goals, generations, the
** faulted state, and the operator's invariant operations.  See txn.h and
** docs/transactions.md.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include "jiti_limits.h"
#include "txn_int.h"

/* ------------------------------------------------------------- helpers */

char *txn_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

/* A printed value (n bytes) for people and models: a NUL character in it
** (a string holding (code-char 0)) is shown as U+2400 SYMBOL FOR NULL, as
** the kernel shows it in entries, so the value is not cut there. */
static char *shown_value(const char *s, size_t n) {
  if (!s) return NULL;
  size_t nul = 0;
  for (size_t i = 0; i < n; i++) nul += s[i] == 0;
  char *p = malloc(n + 2 * nul + 1), *q = p;
  if (!p) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (s[i]) *q++ = s[i];
    else { memcpy(q, "\xe2\x90\x80", 3); q += 3; }
  }
  *q = 0;
  return p;
}

char *txn_fmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = malloc((size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

/* S as a Lisp string literal ("..." with " and \\ escaped), malloc'd. */
char *txn_string_literal(const char *s) {
  size_t len = strlen(s);
  char *p = malloc(2 * len + 3);
  if (!p) return NULL;
  size_t k = 0;
  p[k++] = '"';
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '"' || s[i] == '\\') p[k++] = '\\';
    p[k++] = s[i];
  }
  p[k++] = '"';
  p[k] = 0;
  return p;
}

static const char *reason_names[TXN_REASON_COUNT] = {
  "accepted", "unsafe", "rejected-by-gate", "repair-failed", "invalid-arguments",
  "aborted", "limit", "budget-exhausted", "stale", "publication-failed", "error", "faulted",
  "cancelled", "fenced"};

const char *txn_reason_name(txn_Reason r) {
  return (unsigned)r < TXN_REASON_COUNT ? reason_names[r] : "?";
}

/* The index of s in names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *s) {
  for (int i = 0; s && i < n; i++)
    if (!strcmp(names[i], s)) return i;
  return -1;
}

int txn_reason_parse(const char *s) { return name_index(reason_names, TXN_REASON_COUNT, s); }

static const char *const kind_names[TXN_KIND_COUNT] = {"action", "application", "preview", "operator"};

const char *txn_kind_name(txn_Kind k) { return (unsigned)k < TXN_KIND_COUNT ? kind_names[k] : "?"; }
int txn_kind_parse(const char *s) { return name_index(kind_names, TXN_KIND_COUNT, s); }

static const char *const cmd_names[TXN_CMD_COUNT] = {"evaluate", "resume", "abort", "return-from-frame",
                                                     "restart-frame"};

const char *txn_cmd_name(txn_CmdType t) { return (unsigned)t < TXN_CMD_COUNT ? cmd_names[t] : "?"; }
int txn_cmd_parse(const char *s) { return name_index(cmd_names, TXN_CMD_COUNT, s); }

const char *txn_status_name(txn_Status s) {
  switch (s) {
    case TXN_ST_IDLE: return "idle";
    case TXN_ST_PAUSED: return "paused";
    case TXN_ST_AWAITING: return "awaiting-commit";
    case TXN_ST_FAULTED: return "faulted";
  }
  return "?";
}

void txn_diagnosis_free(txn_Diagnosis *d) {
  if (!d) return;
  free(d->condition_type);
  free(d->report);
  free(d->backtrace);
  json_decref(d->frames);
  json_decref(d->reads);
  for (int i = 0; i < d->nrestarts; i++) {
    free((char *)d->restarts[i].name);
    free((char *)d->restarts[i].report);
    free((char *)d->restarts[i].lambda_list);
  }
  free(d->restarts);
  free(d);
}

void txn_outcome_free(txn_Outcome *o) {
  if (!o) return;
  txn_diagnosis_free(o->diagnosis);
  free(o->noted_function);
  free(o->noted_signature);
  free(o->message);
  free(o->value);
  for (int i = 0; o->values && i < o->nvalues; i++) free(o->values[i]);
  free(o->values);
  for (int i = 0; i < o->nchanges; i++) {
    free(o->changes[i].name);
    free(o->changes[i].bytes);
  }
  free(o->changes);
  for (int i = 0; i < o->nevents; i++) {
    free(o->events[i].type);
    free(o->events[i].detail);
  }
  free(o->events);
  for (int i = 0; i < o->ngoals; i++) {
    free(o->goals[i].source);
    free(o->goals[i].message);
  }
  free(o->goals);
  memset(o, 0, sizeof *o);
}

static void event(txn_World *W, const char *type, const char *detail) {
  if (W->nevents == W->capevents) {
    int cap = W->capevents ? 2 * W->capevents : 8;
    txn_Event *e = realloc(W->events, (size_t)cap * sizeof *e);
    if (!e) return;
    W->events = e;
    W->capevents = cap;
  }
  txn_Event *e = &W->events[W->nevents++];
  e->type = txn_strdup(type);
  e->detail = txn_strdup(detail ? detail : "");
  e->generation = W->gen;
}

/* Move the collected events into the outcome. */
static void take_events(txn_World *W, txn_Outcome *out) {
  if (out) {
    out->events = W->events;
    out->nevents = W->nevents;
  } else {
    for (int i = 0; i < W->nevents; i++) {
      free(W->events[i].type);
      free(W->events[i].detail);
    }
    free(W->events);
  }
  W->events = NULL;
  W->nevents = W->capevents = 0;
}

/* Every transaction starts and ends with the standard reader and printer
** variables: a (setq *read-base* 36) is the attempt's scratch, not a way to
** change how every later transaction is read (those variables are not
** entries: a restart or a recovery would forget it anyway). */
static txn_Reason finish(txn_World *W, txn_Outcome *out, txn_Reason r, char *msg) {
  jiti_reset_io_syntax(W->S);
  out->reason = r;
  free(out->message);
  out->message = msg ? msg : txn_strdup(txn_reason_name(r));
  out->generation = W->gen;
  take_events(W, out);
  return r;
}

static void pause_clear(txn_PauseInfo *p) {
  free(p->condition_type);
  free(p->report);
  free(p->backtrace);
  for (int i = 0; i < p->nrestarts; i++) {
    free(p->ids[i]);
    free(p->names[i]);
    free(p->reports[i]);
    free(p->lambdas[i]);
  }
  memset(p, 0, sizeof *p);
}

/* ----------------------------------------------------------- lifecycle */

static jiti_Value f_escaped(jiti_State *S, void *ud, int argc, jiti_Value *argv);

static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud);
static void pend_clear(txn_World *W);
static void level_drop(txn_World *W, int i);

static void discard_output(void *ud, const char *s, size_t n) { (void)ud; (void)s; (void)n; }

txn_World *txn_open(const txn_Options *opt) {
  txn_World *W = calloc(1, sizeof *W);
  if (!W) return NULL;
  W->lim.fuel = JITI_LIMITS_FUEL;
  W->lim.depth = JITI_LIMITS_DEPTH;
  W->lim.heap = JITI_LIMITS_HEAP;
  W->lim.output = JITI_LIMITS_OUTPUT;
  W->budget = 20;
  W->max_source = 16384;
  if (opt) {
    if (opt->limits.fuel) W->lim.fuel = opt->limits.fuel;
    if (opt->limits.depth) W->lim.depth = opt->limits.depth;
    if (opt->limits.heap) W->lim.heap = opt->limits.heap;
    if (opt->limits.output) W->lim.output = opt->limits.output;
    if (opt->step_budget > 0) W->budget = opt->step_budget;
    if (opt->max_source) W->max_source = opt->max_source;
  }
  W->S = jiti_open();
  if (!W->S) { free(W); return NULL; }
  jiti_set_output(W->S, discard_output, NULL);
  /* scratch helpers, defined before the world is enabled: never entries */
  if (jiti_register(W->S, "%txn-escaped", f_escaped, W, 0, 0,
                    "(%txn-escaped) Marks the end of a repair (txn).") != JITI_OK ||
      txn_gate_install(W->S) != 0 || txn_complete_install(W->S) != 0) {
    jiti_close(W->S);
    free(W);
    return NULL;
  }
  jiti_world_enable(W->S);
  jiti_set_debugger_hook(W->S, hook, W);
  W->status = TXN_ST_IDLE;
  W->max_levels = 1;
  return W;
}

void txn_close(txn_World *W) {
  if (!W) return;
  jiti_close(W->S);
  for (int l = 0; l < TXN_MAXLEVEL; l++) pause_clear(&W->plev[l]);
  take_events(W, NULL);
  for (int i = 0; i < W->ngoals; i++) free(W->goals[i]);
  free(W->goals);
  if (W->goal_results) {
    for (int i = 0; i < W->ngoals; i++) {
      free(W->goal_results[i].source);
      free(W->goal_results[i].message);
    }
    free(W->goal_results);
  }
  free(W->end_msg);
  free(W->resume_args);
  free(W->repair_src);
  txn_diagnosis_free(W->diag);
  free(W->inv_msg);
  free(W->import_fault);
  for (size_t i = 0; i < W->capvars; i++) free(W->vars[i].name);
  free(W->vars);
  pend_clear(W);
  free(W->pend);
  while (W->nlevels) level_drop(W, W->nlevels - 1);
  free(W->levels);
  free(W);
}

jiti_State *txn_state(txn_World *W) { return W ? W->S : NULL; }

txn_Status txn_status(txn_World *W) {
  if (txn_pause_now(W)) return TXN_ST_PAUSED;
  return W->status;
}

uint64_t txn_generation(txn_World *W) { return W->gen; }

void txn_set_revision(txn_World *W, uint64_t revision) { W->revision = revision; }

void txn_set_stacking(txn_World *W, int n) { W->max_levels = n > 1 ? n : 1; }
void txn_set_entry_max(txn_World *W, size_t n) { W->entry_max = n; }

void txn_set_park(txn_World *W, txn_ParkFn fn, void *ud) {
  W->park_fn = fn;
  W->park_ud = ud;
}

int txn_awaiting(txn_World *W) { return W->nlevels; }

void txn_set_limits(txn_World *W, const jiti_Limits *limits) { W->lim = *limits; }
void txn_get_limits(txn_World *W, jiti_Limits *limits) { *limits = W->lim; }

static void goal_results_free(txn_World *W) {
  if (!W->goal_results) return;
  for (int i = 0; i < W->ngoals; i++) {
    free(W->goal_results[i].source);
    free(W->goal_results[i].message);
  }
  free(W->goal_results);
  W->goal_results = NULL;
}

void txn_set_goals(txn_World *W, int n, const char *const *sources) {
  goal_results_free(W);
  for (int i = 0; i < W->ngoals; i++) free(W->goals[i]);
  free(W->goals);
  W->goals = NULL;
  W->ngoals = 0;
  if (n <= 0) return;
  W->goals = calloc((size_t)n, sizeof *W->goals);
  if (!W->goals) return;
  for (int i = 0; i < n; i++) W->goals[i] = txn_strdup(sources[i]);
  W->ngoals = n;
}

/* ---------------------------------------------------------- invariants */

/* Run every invariant inside a checkpoint that is always restored (an
** invariant must not change the world).  0 = all hold. */
static int check_invariants(txn_World *W, char *err, size_t n) {
  err[0] = 0;
  if (jiti_world_count(W->S, JITI_ENTRY_INVARIANT) == 0) {
    /* nothing to run (and jiti_invariants_check with no invariants passes
    ** NULL to qsort: a UBSan report, see the kernel issue test) */
    W->inv_checked = 1;
    W->inv_ok = 1;
    free(W->inv_msg);
    W->inv_msg = txn_strdup("");
    return 0;
  }
  int saved = W->pausable;
  W->pausable = 0;
  jiti_checkpoint(W->S);
  err[0] = 0;
  jiti_Status st = jiti_invariants_check(W->S, &W->lim, err, n);
  jiti_restore(W->S);
  W->pausable = saved;
  W->inv_checked = 1;
  W->inv_ok = st == JITI_OK;
  free(W->inv_msg);
  W->inv_msg = txn_strdup(st == JITI_OK ? "" : err);
  if (st != JITI_OK && !err[0]) snprintf(err, n, "an invariant failed (status %d)", (int)st);
  return st == JITI_OK ? 0 : 1;
}

typedef struct EachArgs {
  void (*each)(void *ud, const char *name, const char *message);
  void *ud;
  int failed;
} EachArgs;

static void each_failed(void *ud, const char *name, jiti_Status st, const char *message) {
  EachArgs *a = ud;
  (void)st;
  a->failed++;
  a->each(a->ud, name, message);
}

int txn_invariants_each(txn_World *W, void (*each)(void *ud, const char *name, const char *message), void *ud) {
  EachArgs a = {each, ud, 0};
  if (jiti_world_count(W->S, JITI_ENTRY_INVARIANT) == 0) return 0;   /* (as check_invariants) */
  int saved = W->pausable;
  W->pausable = 0;
  jiti_checkpoint(W->S);
  jiti_Status st = jiti_invariants_each(W->S, &W->lim, each_failed, &a);
  jiti_restore(W->S);
  if (st != JITI_OK && !a.failed) each_failed(&a, "", st, "the invariants could not be run");
  W->pausable = saved;
  return a.failed;
}

void txn_set_import_fault(txn_World *W, const char *msg) {
  if (!W || W->import_fault) return;  /* the first failure is the one to fix */
  W->import_fault = txn_strdup(msg);
}

/* The refusal of every transaction in a world that did not import whole. */
static char *import_refusal(txn_World *W) {
  return txn_fmt("the world of revision %llu could not be imported (%s); it answers queries only: return to "
                 "a revision that imports with 'jiti rollback REV' (for example 'jiti rollback previous')",
                 (unsigned long long)W->revision, W->import_fault);
}

int txn_check_baseline(txn_World *W, char *msg, size_t msglen) {
  char err[1024];
  if (W->import_fault) {
    if (!W->faulted) W->gen++;
    W->faulted = 1;
    W->status = TXN_ST_FAULTED;
    if (msg && msglen) snprintf(msg, msglen, "import-failed: %s", W->import_fault);
    return 1;
  }
  if (check_invariants(W, err, sizeof err) == 0) {
    if (W->faulted) { W->faulted = 0; W->gen++; }
    W->status = TXN_ST_IDLE;
    if (msg && msglen) msg[0] = 0;
    return 0;
  }
  if (!W->faulted) W->gen++;
  W->faulted = 1;
  W->status = TXN_ST_FAULTED;
  if (msg && msglen) snprintf(msg, msglen, "invalid-baseline: %s", err);
  return 1;
}

/* ------------------------------------------------- variables' hashes */

static size_t name_hash(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

/* The slot of `name` (NULL if absent and !create, or out of memory). */
static txn_VarHash *var_slot(txn_World *W, const char *name, int create) {
  if (create && (W->nvars + 1) * 2 > W->capvars) {
    size_t cap = W->capvars ? W->capvars * 2 : 64;
    txn_VarHash *t = calloc(cap, sizeof *t);
    if (!t) return NULL;
    for (size_t i = 0; i < W->capvars; i++) {
      if (!W->vars[i].name) continue;
      size_t k = name_hash(W->vars[i].name) & (cap - 1);
      while (t[k].name) k = (k + 1) & (cap - 1);
      t[k] = W->vars[i];
    }
    free(W->vars);
    W->vars = t;
    W->capvars = cap;
  }
  if (!W->capvars) return NULL;
  size_t k = name_hash(name) & (W->capvars - 1);
  while (W->vars[k].name) {
    if (!strcmp(W->vars[k].name, name)) return &W->vars[k];
    k = (k + 1) & (W->capvars - 1);
  }
  if (!create || !(W->vars[k].name = txn_strdup(name))) return NULL;
  W->vars[k].hash[0] = 0;
  W->nvars++;
  return &W->vars[k];
}

static void var_set(txn_World *W, const char *name, const char *hash) {
  txn_VarHash *v = var_slot(W, name, 1);
  if (v) snprintf(v->hash, sizeof v->hash, "%s", hash);
}

static void pend_clear(txn_World *W) {
  for (int i = 0; i < W->npend; i++) free(W->pend[i].name);
  W->npend = 0;
}

static void pend_add(txn_World *W, const char *name, const char *hash) {
  if (W->npend == W->cappend) {
    int cap = W->cappend ? 2 * W->cappend : 8;
    txn_VarHash *p = realloc(W->pend, (size_t)cap * sizeof *p);
    if (!p) return;
    W->pend = p;
    W->cappend = cap;
  }
  char *n = txn_strdup(name);
  if (!n) return;
  W->pend[W->npend].name = n;
  snprintf(W->pend[W->npend].hash, sizeof W->pend[W->npend].hash, "%s", hash);
  W->npend++;
}

/* The hash of variable `name` as the world stands before the running
** attempt: the newest awaiting attempt that changed it, else the last
** committed (or imported) one; NULL when unknown. */
static const char *var_hash_now(txn_World *W, const char *name) {
  for (int l = W->nlevels - 1; l >= 0; l--)
    for (int i = 0; i < W->levels[l].nvars; i++)
      if (!strcmp(W->levels[l].vars[i].name, name)) return W->levels[l].vars[i].hash;
  txn_VarHash *v = var_slot(W, name, 0);
  return v ? v->hash : NULL;
}

/* Variables and property lists change in place, so the world exports
** every one that may have changed: their hashes tell which did.  The key is
** a variable's name, or "plist:NAME" (no printed name begins so: a symbol
** with lower-case letters is written with bars).  Malloc'd; NULL for the
** other kinds (or out of memory). */
static char *hashed_key(jiti_EntryKind kind, const char *name) {
  if (kind == JITI_ENTRY_VARIABLE) return txn_strdup(name);
  if (kind == JITI_ENTRY_PLIST) return txn_fmt("plist:%s", name);
  return NULL;
}

void txn_note_entry(txn_World *W, jiti_EntryKind kind, const char *name,
                    const unsigned char *bytes, size_t len) {
  if (!W || !name) return;
  char *key = hashed_key(kind, name);
  if (!key) return;
  char h[65] = "";
  if (bytes) jiti_entry_hash(kind, name, bytes, len, h);
  var_set(W, key, h);
  free(key);
}

/* ------------------------------------------------------------ changes */

typedef struct { txn_World *W; txn_Outcome *out; int cap; } ChangeAcc;

static int collect_change(void *ud, jiti_EntryKind kind, const char *name,
                          const unsigned char *bytes, size_t len) {
  ChangeAcc *a = ud;
  txn_Outcome *o = a->out;
  char h[65] = "";  /* the entry hash, computed once */
  if (bytes) jiti_entry_hash(kind, name, bytes, len, h);
  char *key = hashed_key(kind, name);
  if (key) {  /* every variable and property list comes: only changed ones count */
    const char *was = var_hash_now(a->W, key);
    int same = was && was[0] && !strcmp(was, h);
    if (!same) pend_add(a->W, key, h);
    free(key);
    if (same) return 0;
  }
  if (o->nchanges == a->cap) {
    int cap = a->cap ? 2 * a->cap : 8;
    txn_Change *c = realloc(o->changes, (size_t)cap * sizeof *c);
    if (!c) return 1;
    o->changes = c;
    a->cap = cap;
  }
  txn_Change *c = &o->changes[o->nchanges++];
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->name = txn_strdup(name);
  if (bytes) {
    c->bytes = malloc(len ? len : 1);
    if (c->bytes) memcpy(c->bytes, bytes, len);
    c->len = len;
    memcpy(c->hash, h, sizeof h);
  } else {
    c->removed = 1;
  }
  return 0;
}

static void changes_clear(txn_Outcome *o) {
  for (int i = 0; i < o->nchanges; i++) {
    free(o->changes[i].name);
    free(o->changes[i].bytes);
  }
  free(o->changes);
  o->changes = NULL;
  o->nchanges = 0;
}

/* Export the changed entries into out; 0 on success, else err names the
** place. */
static int collect_changes(txn_World *W, txn_Outcome *out, char *err, size_t n) {
  ChangeAcc a = {W, out, 0};
  err[0] = 0;
  pend_clear(W);
  /* only the attempt's own level: those below are awaiting revisions of
  ** their own */
  jiti_Status st = jiti_export_changed_since(W->S, W->depth, collect_change, &a, err, n);
  if (st != JITI_OK) {
    changes_clear(out);
    if (!err[0]) snprintf(err, n, "the changed entries could not be exported");
    return 1;
  }
  /* what is published must import back as this world: the next worker
  ** starts from it, and a store it cannot import would be faulted */
  for (int i = 0; i < out->nchanges; i++) {
    txn_Change *c = &out->changes[i];
    char why[768];
    size_t encoded = 3 + strlen(c->name) + c->len;   /* kind, name length, name, bytes */
    if (c->bytes && W->entry_max && encoded > W->entry_max) {
      snprintf(err, n, "%s %.200s would be %zu bytes stored, and this world is replicated through etcd, whose "
               "requests (1.5 MiB, its --max-request-bytes) take an entry of at most %zu: keep it smaller (split "
               "the data over several entries)", jiti_entry_kind_name(c->kind), c->name, encoded, W->entry_max);
      changes_clear(out);
      return 1;
    }
    if (!c->bytes || jiti_entry_verify(W->S, c->kind, c->name, c->bytes, c->len, why, sizeof why) == JITI_OK)
      continue;
    snprintf(err, n, "%s %s would not import back as itself: %s", jiti_entry_kind_name(c->kind), c->name, why);
    changes_clear(out);
    return 1;
  }
  return 0;
}

/* --------------------------------------------------------------- goals */

/* Evaluate one goal in a checkpoint that is always restored, so a goal
** never changes the world (nor the generation: nothing a view shows moved). */
static void eval_goal(txn_World *W, const char *src, txn_GoalResult *g) {
  jiti_Result r;
  int saved = W->pausable;
  W->pausable = 0;
  jiti_checkpoint(W->S);
  jiti_Status st = jiti_eval_limited(W->S, src, strlen(src), &W->lim, &r);
  jiti_restore(W->S);
  W->pausable = saved;
  g->source = txn_strdup(src);
  g->pass = st == JITI_OK && r.value && strcmp(r.value, "NIL") != 0;
  g->message = st == JITI_OK ? txn_strdup(r.value ? r.value : "")
                             : txn_fmt("%s: %s", r.condition_type ? r.condition_type : "error",
                                       r.message ? r.message : "");
  jiti_result_free(&r);
}

static void run_goals(txn_World *W, txn_Outcome *out) {
  goal_results_free(W);
  if (W->ngoals == 0) return;
  W->goal_results = calloc((size_t)W->ngoals, sizeof *W->goal_results);
  out->goals = calloc((size_t)W->ngoals, sizeof *out->goals);
  if (!W->goal_results || !out->goals) return;
  out->ngoals = W->ngoals;
  for (int i = 0; i < W->ngoals; i++) {
    eval_goal(W, W->goals[i], &W->goal_results[i]);
    out->goals[i].source = txn_strdup(W->goal_results[i].source);
    out->goals[i].pass = W->goal_results[i].pass;
    out->goals[i].message = txn_strdup(W->goal_results[i].message);
    char *d = txn_fmt("%s %s", out->goals[i].pass ? "pass" : "fail", W->goals[i]);
    event(W, "goal", d);
    free(d);
  }
}

txn_GoalResult *txn_eval_goals(txn_World *W, int n, const char *const *sources) {
  txn_Status st = txn_status(W);
  if (n <= 0 || (st != TXN_ST_IDLE && st != TXN_ST_FAULTED)) return NULL;
  txn_GoalResult *g = calloc((size_t)n, sizeof *g);
  if (!g) return NULL;
  for (int i = 0; i < n; i++) eval_goal(W, sources[i], &g[i]);
  return g;
}

void txn_goal_results_free(txn_GoalResult *g, int n) {
  if (!g) return;
  for (int i = 0; i < n; i++) {
    free(g[i].source);
    free(g[i].message);
  }
  free(g);
}

/* ---------------------------------------------------------- the hook */

/* ud: the world it was registered in (its flags are read only while an
** attempt's repair is open, and cleared when an attempt starts).  The
** cleanup that runs belongs to the innermost repair still open. */
static jiti_Value f_escaped(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)S; (void)argc; (void)argv;
  txn_World *W = ud;
  for (int l = W->hook_level - 1; l >= 0; l--)
    if (W->plev[l].repair_open) { W->plev[l].escape_flag = 1; break; }
  return jiti_nil();
}

static void end_attempt(txn_World *W, txn_Reason r, char *msg) {
  if (!W->ended) {
    W->ended = 1;
    W->end_reason = r;
    free(W->end_msg);
    W->end_msg = msg;
  } else {
    free(msg);
  }
}

/* Build the pause-scoped restart menu of level P: only restarts newer than
** the attempt's watermark, with ids "p<pause>-<index>".  Restarts an outer
** level offers already are that level's (they keep their ids there). */
static void pause_fill(txn_World *W, txn_PauseInfo *P, const jiti_Pause *p, int level) {
  pause_clear(P);
  P->active = 1;
  P->pause = W->npauses;
  P->condition_type = txn_strdup(p->condition_type ? p->condition_type : "ERROR");
  P->report = txn_strdup(p->report ? p->report : "");
  P->backtrace = txn_strdup(p->backtrace ? p->backtrace : "");
  int k = 0;
  for (int i = 0; i < p->nrestarts && k < TXN_MAXR; i++) {
    if (p->restarts[i].id <= W->watermark) continue;
    int outer = 0;
    for (int l = 0; l < level - 1 && !outer; l++)
      for (int j = 0; j < W->plev[l].nrestarts; j++)
        if (W->plev[l].kernel_ids[j] == p->restarts[i].id) outer = 1;
    if (outer) continue;
    P->kernel_ids[k] = p->restarts[i].id;
    P->ids[k] = txn_fmt("p%d-%d", W->npauses, k);
    P->names[k] = txn_strdup(p->restarts[i].name ? p->restarts[i].name : "");
    P->reports[k] = txn_strdup(p->restarts[i].report ? p->restarts[i].report : "");
    P->lambdas[k] = txn_strdup(p->restarts[i].lambda_list ? p->restarts[i].lambda_list : "");
    P->restarts[k].lambda_list = P->lambdas[k];
    P->restarts[k].id = P->ids[k];
    P->restarts[k].name = P->names[k];
    P->restarts[k].report = P->reports[k];
    P->restarts[k].level = level;
    k++;
  }
  P->nrestarts = k;
}

/* The menu of every open level, innermost level first, into W->menu. */
int txn_menu(txn_World *W) {
  int n = 0;
  for (int l = W->hook_level - 1; l >= 0; l--)
    for (int i = 0; i < W->plev[l].nrestarts; i++) W->menu[n++] = W->plev[l].restarts[i];
  return n;
}

/* The level and index of restart id, or 0.  An id that is no restart's is
** taken as a restart's name (case-insensitively, as the reader folds it):
** the first of that name in the menu, innermost level first — what a Lisp
** debugger's (invoke-restart 'continue) would choose. */
static int find_restart_id(txn_World *W, const char *id, int *index) {
  for (int l = W->hook_level; id && l >= 1; l--)
    for (int i = 0; i < W->plev[l - 1].nrestarts; i++)
      if (!strcmp(W->plev[l - 1].ids[i], id)) { *index = i; return l; }
  for (int l = W->hook_level; id && *id && l >= 1; l--)
    for (int i = 0; i < W->plev[l - 1].nrestarts; i++)
      if (!strcasecmp(W->plev[l - 1].names[i], id)) { *index = i; return l; }
  return 0;
}

/* A control transfer out of a repair: its cleanup ran (escape flag) while
** the pause it was evaluated from is still waiting for it. */
static int repair_escaped(txn_World *W) {
  for (int l = 0; l < W->hook_level; l++)
    if (W->plev[l].repair_open && W->plev[l].escape_flag) return 1;
  return 0;
}

/* Evaluate a repair from level P, in a checkpoint of its own: an error in
** it pauses at the next level, and leaving that level by an abort undoes
** what the repair (and the repairs made up there) changed.  Returns 0 with
** *value on success; otherwise the repair is over and the caller looks at
** W (ended, target_level, level_aborted). */
static int run_repair(txn_World *W, txn_PauseInfo *P, const txn_Command *c, char **value, char *err, size_t n) {
  free(W->repair_src);  /* kept in W: an escaping repair never comes back */
  W->repair_src = txn_string_literal(c->source);
  char *plit = c->package ? txn_string_literal(c->package) : NULL;
  char frame[16] = "nil";
  if (c->type == TXN_CMD_EVALUATE && c->in_frame) snprintf(frame, sizeof frame, "%d", c->frame);
  const char *args[3] = {W->repair_src, plit ? plit : "nil", frame};
  P->repair_open = 1;
  P->escape_flag = 0;
  int level = (int)(P - W->plev) + 1;
  jiti_checkpoint(W->S);
  jiti_Result r;
  jiti_allow_interrupt(W->S);  /* jiti interrupt: a repair pauses a level up */
  jiti_Status st = jiti_call_limited(W->S, "%TXN-REPAIR", 3, args, &W->lim, &r);
  free(plit);
  P->repair_open = 0;
  P->escape_flag = 0;
  free(W->repair_src);
  W->repair_src = NULL;
  txn_PauseInfo *up = level < TXN_MAXLEVEL ? &W->plev[level] : NULL;
  if (up && up->resume_pending) {  /* a restart of the level above let the repair go on */
    up->resume_pending = 0;
    W->gen++;
    event(W, "resumed", "");
  }
  if (up) pause_clear(up);
  /* what an outer resume leaves behind stays, as SBCL's debugger keeps it */
  int keep = st == JITI_OK || (W->target_level && W->target_level <= level);
  if (keep) jiti_commit(W->S);
  else jiti_restore(W->S);
  if (st == JITI_OK) {
    *value = shown_value(r.value, r.value_len);
    jiti_result_free(&r);
    return 0;
  }
  if (st == JITI_LIMIT)
    end_attempt(W, TXN_REPAIR_FAILED, txn_fmt("the repair hit a limit: %s: %s",
                                              r.condition_type ? r.condition_type : "limit",
                                              r.message ? r.message : ""));
  snprintf(err, n, "%s: %s", r.condition_type ? r.condition_type : "error", r.message ? r.message : "");
  jiti_result_free(&r);
  return 1;
}

/* What a pause would have shown of p, for an attempt nobody can answer:
** the restarts the attempt established (as the menu would list them).
** NULL when out of memory (the failure is reported without it). */
static txn_Diagnosis *diagnosis_of(txn_World *W, const jiti_Pause *p) {
  txn_Diagnosis *g = calloc(1, sizeof *g);
  if (!g || (p->nrestarts && !(g->restarts = calloc((size_t)p->nrestarts, sizeof *g->restarts)))) {
    free(g);
    return NULL;
  }
  g->condition_type = txn_strdup(p->condition_type ? p->condition_type : "ERROR");
  g->report = txn_strdup(p->report ? p->report : "");
  g->backtrace = txn_strdup(p->backtrace ? p->backtrace : "");
  g->frames = txn_frames_value(p->nframes, p->frames);   /* copied: the kernel's live only here */
  g->reads = txn_reads_value(W->S, &g->reads_more);
  for (int i = 0; i < p->nrestarts; i++) {
    if (p->restarts[i].id <= W->watermark) continue;
    txn_Restart *r = &g->restarts[g->nrestarts++];
    r->level = 1;
    r->name = txn_strdup(p->restarts[i].name ? p->restarts[i].name : "");
    r->report = txn_strdup(p->restarts[i].report ? p->restarts[i].report : "");
    r->lambda_list = txn_strdup(p->restarts[i].lambda_list ? p->restarts[i].lambda_list : "");
  }
  return g;
}

/* A command's restart arguments or return values (Lisp source, may be
** NULL) through the gate: 1 with why in errbuf when refused. */
static int args_refused(txn_World *W, const char *args, char *errbuf, size_t n) {
  char reason[512];
  if (!args || !txn_gate_run(W, args, NULL, 1, reason, sizeof reason)) return 0;
  snprintf(errbuf, n, "arguments: %s", reason);
  return 1;
}

/* A frame number the pause does not list: why (in buf). */
static int frame_refused(const txn_PauseInfo *P, int level, int frame, char *buf, size_t n) {
  if (frame >= 0 && frame < P->nframes) return 0;
  if (!P->nframes)
    snprintf(buf, n, "this pause has no frame %d: it lists no frames", frame);
  else
    snprintf(buf, n, "this pause has no frame %d: its frames are 0 to %d", frame, P->nframes - 1);
  if (level > 1)
    snprintf(buf + strlen(buf), n - strlen(buf),
             " (pause level %d lists its repair's calls only; the frames of level %d are reached after "
             "leaving this level with abort)", level, level - 1);
  return 1;
}

static void hook(jiti_State *S, const jiti_Pause *p, jiti_Decision *d, void *ud) {
  txn_World *W = ud;
  (void)S;
  d->action = JITI_DECIDE_ABORT;
  if (!W->in_txn || !W->pausable) return;
  if (repair_escaped(W)) {
    /* a repair's cleanup ran but control never came back to its pause */
    W->escaped = 1;
    end_attempt(W, TXN_REPAIR_FAILED,
                txn_strdup("a repair transferred control out of the pause"));
    return;
  }
  if (!W->cmd_fn && !W->ended && !W->hook_level && !W->diag) {
    if (W->park_asked && W->park_fn && !W->parked) {   /* a copy of the world as it failed */
      int pid = W->park_fn(W->park_ud);
      W->parked = pid > 0 ? pid : 0;
    }
    W->diag = diagnosis_of(W, p);   /* the stack unwinds after this */
    return;
  }
  if (W->ended || !W->cmd_fn) return;
  int level = W->hook_level + 1;
  /* a pause outside a repair is the attempt's own (level 1); inside one it
  ** is the level above the repair's; at the deepest the repair just fails */
  if (level > 1 && (level > TXN_MAXLEVEL || !W->plev[level - 2].repair_open)) return;
  txn_PauseInfo *P = &W->plev[level - 1];

  char errbuf[1024];
  const char *error = NULL;
  txn_Reason refusal = TXN_ACCEPTED;
  char *last_value = NULL;
  if (p->decision_error && P->resume_pending) {
    /* the kernel refused our restart decision: still the same pause */
    P->resume_pending = 0;
    snprintf(errbuf, sizeof errbuf, "%s", p->decision_error);
    error = errbuf;
    refusal = TXN_INVALID_ARGUMENTS;
    event(W, "refused", errbuf);
  } else {
    if (P->resume_pending) {
      P->resume_pending = 0;
      W->gen++;
      event(W, "resumed", "");
    }
    W->npauses++;
    W->gen++;
    pause_fill(W, P, p, level);
    char *dsc = level > 1 ? txn_fmt("level %d: %s: %s", level, P->condition_type, P->report)
                          : txn_fmt("%s: %s", P->condition_type, P->report);
    event(W, "paused", dsc);
    free(dsc);
  }
  P->active = 1;
  P->frames = p->frames;
  P->nframes = p->frames ? p->nframes : 0;
  W->hook_level = level;
  for (;;) {
    txn_View v;
    memset(&v, 0, sizeof v);
    v.generation = W->gen;
    v.pause = P->pause;
    v.level = level;
    v.condition_type = P->condition_type;
    v.report = P->report;
    v.backtrace = P->backtrace;
    v.nframes = P->nframes;
    v.frames = P->frames;
    v.nrestarts = txn_menu(W);
    v.restarts = W->menu;
    v.steps_used = W->steps;
    v.step_budget = W->budget;
    v.refusal = refusal;
    v.error = error;
    v.last_value = last_value;
    txn_Command c;
    memset(&c, 0, sizeof c);
    c.type = TXN_CMD_ABORT;
    int rc = W->cmd_fn(W->ud, &v, &c);
    free(last_value);
    last_value = NULL;
    error = NULL;
    refusal = TXN_ACCEPTED;
    if (rc != 0) {
      end_attempt(W, TXN_ABORTED, txn_strdup("the controller gave up"));
      break;
    }
    if (W->steps >= W->budget) {
      end_attempt(W, TXN_BUDGET_EXHAUSTED,
                  txn_fmt("the step budget of %d commands while paused is exhausted", W->budget));
      break;
    }
    if (c.type == TXN_CMD_ABORT && level == 1) {
      end_attempt(W, TXN_ABORTED, txn_strdup("aborted while paused"));
      break;
    }
    W->steps++;
    if (c.generation != W->gen) {
      snprintf(errbuf, sizeof errbuf, "stale generation %llu (current %llu)",
               (unsigned long long)c.generation, (unsigned long long)W->gen);
      error = errbuf;
      refusal = TXN_STALE;
      event(W, "refused", errbuf);
      continue;
    }
    if (c.type == TXN_CMD_ABORT) {  /* leave this level for the one below */
      W->level_aborted = 1;
      break;
    }
    if (c.type == TXN_CMD_EVALUATE) {
      char reason[512];
      if (txn_gate_run(W, c.source, c.package, 1, reason, sizeof reason)) {
        snprintf(errbuf, sizeof errbuf, "%s", reason);
        error = errbuf;
        refusal = TXN_REJECTED_BY_GATE;
        event(W, "refused", errbuf);
        continue;
      }
      if (c.in_frame && frame_refused(P, level, c.frame, errbuf, sizeof errbuf)) {
        error = errbuf;
        refusal = TXN_INVALID_ARGUMENTS;
        event(W, "refused", errbuf);
        continue;
      }
      char *value = NULL, why[600];
      W->level_aborted = 0;
      /* a pause inside the repair calls cmd_fn again, which may free the
      ** command's strings: the event names a copy */
      char *source = txn_strdup(c.source);
      int failed = run_repair(W, P, &c, &value, why, sizeof why);
      if (!W->ended && !W->escaped && !W->target_level) {  /* the repair may have set a frame's locals */
        const jiti_Frame *fr;
        int nfr = jiti_pause_frames(W->S, &fr);
        P->frames = fr;
        P->nframes = fr ? nfr : 0;
      }
      if (!failed) {
        last_value = value;
        event(W, "repaired", source ? source : "");
        free(source);
        continue;
      }
      free(source);
      if (W->ended || W->escaped) break;
      if (W->target_level && W->target_level < level) break;  /* on down to the outer level */
      if (W->target_level == level) {  /* resume here what was chosen up there */
        W->target_level = 0;
        W->gen++;
        event(W, "left-level", "to resume an outer level's restart");
        d->action = JITI_DECIDE_RESTART;
        d->restart_id = P->kernel_ids[W->target_index];
        d->args = W->resume_args;
        P->resume_pending = 1;
        break;
      }
      if (W->level_aborted) {  /* the level the repair's error opened was aborted */
        W->level_aborted = 0;
        W->gen++;
        snprintf(errbuf, sizeof errbuf, "level %d aborted, what its repair changed restored; the repair signalled %s",
                 level + 1, why);
        event(W, "left-level", errbuf);
        refusal = TXN_ABORTED;
      } else {
        snprintf(errbuf, sizeof errbuf, "the repair failed at the deepest level (%d): %s; what it changed is restored",
                 TXN_MAXLEVEL, why);
        event(W, "refused", errbuf);
        refusal = TXN_REPAIR_FAILED;
      }
      error = errbuf;
      continue;
    }
    if (c.type == TXN_CMD_RESUME) {
      int found = -1, at = find_restart_id(W, c.restart_id, &found);
      if (!at) {
        snprintf(errbuf, sizeof errbuf, "unknown or expired restart %.100s (give an id or a name of the menu)",
                 c.restart_id ? c.restart_id : "(none)");
        error = errbuf;
        refusal = TXN_INVALID_ARGUMENTS;
        event(W, "refused", errbuf);
        continue;
      }
      if (args_refused(W, c.args, errbuf, sizeof errbuf)) {
        error = errbuf;
        refusal = TXN_REJECTED_BY_GATE;
        event(W, "refused", errbuf);
        continue;
      }
      free(W->resume_args);
      W->resume_args = c.args ? txn_strdup(c.args) : NULL;
      if (at < level) {  /* an outer level's restart: leave the levels above it */
        W->target_level = at;
        W->target_index = found;
        break;
      }
      d->action = JITI_DECIDE_RESTART;
      d->restart_id = P->kernel_ids[found];
      d->args = W->resume_args;
      P->resume_pending = 1;
      break;
    }
    if (c.type == TXN_CMD_RETURN_FROM_FRAME || c.type == TXN_CMD_RESTART_FRAME) {
      if (frame_refused(P, level, c.frame, errbuf, sizeof errbuf)) {
        error = errbuf;
        refusal = TXN_INVALID_ARGUMENTS;
        event(W, "refused", errbuf);
        continue;
      }
      int values = c.type == TXN_CMD_RETURN_FROM_FRAME && c.args;
      if (values && args_refused(W, c.args, errbuf, sizeof errbuf)) {
        error = errbuf;
        refusal = TXN_REJECTED_BY_GATE;
        event(W, "refused", errbuf);
        continue;
      }
      /* the kernel unwinds to the frame; a refusal (values that fail or
      ** are not a list, a frame it cannot return to) comes back as a
      ** decision error at this same pause */
      free(W->resume_args);
      W->resume_args = values ? txn_strdup(c.args) : NULL;
      d->action = c.type == TXN_CMD_RETURN_FROM_FRAME ? JITI_DECIDE_RETURN : JITI_DECIDE_RESTART_FRAME;
      d->frame = c.frame;
      d->args = W->resume_args;
      P->resume_pending = 1;
      break;
    }
    snprintf(errbuf, sizeof errbuf, "unknown command type %d", (int)c.type);
    error = errbuf;
    refusal = TXN_INVALID_ARGUMENTS;
  }
  free(last_value);
  W->hook_level = level - 1;
  P->active = 0;
  P->frames = NULL;  /* the kernel's, gone when the hook returns */
  P->nframes = 0;
}

/* ----------------------------------------------------------- attempts */

/* A restore brings back the world as it was when the attempt began.  Views
** made before the attempt saw exactly that world, so they stay current —
** unless the generation moved during the attempt (a pause, a resume): views
** made since showed the attempt's own state, and must become stale. */
static void restored(txn_World *W) {
  if (W->gen != W->gen0) W->gen++;
}

/* The status when no attempt is running: awaiting while accepted attempts
** wait for their commit. */
static txn_Status resting_status(txn_World *W) {
  return W->nlevels ? TXN_ST_AWAITING : W->faulted ? TXN_ST_FAULTED : TXN_ST_IDLE;
}

/* Restore the attempt's checkpoint and report `r`. */
static txn_Reason restore_with(txn_World *W, txn_Outcome *out, txn_Reason r, char *msg) {
  jiti_restore(W->S);
  restored(W);
  W->status = resting_status(W);
  event(W, "restored", txn_reason_name(r));
  changes_clear(out);
  if (r != TXN_ACCEPTED) { free(out->value); out->value = NULL; }
  return finish(W, out, r, msg);
}

/* An attempt may start on top of awaiting ones up to max_levels of them,
** never in a faulted world (a commit there re-checks the invariants, which
** must see only what it keeps). */
static int busy(txn_World *W) {
  if (W->in_txn || txn_pause_now(W)) return 1;
  return W->status == TXN_ST_AWAITING && (W->nlevels >= W->max_levels || W->faulted);
}

/* The running attempt was accepted: it awaits its commit as the newest
** level, with the variables it changed.  -1 when out of memory (nothing
** changed). */
static int level_push(txn_World *W, int changes) {
  if (W->nlevels == W->caplevels) {
    int cap = W->caplevels ? 2 * W->caplevels : 4;
    txn_Level *l = realloc(W->levels, (size_t)cap * sizeof *l);
    if (!l) return -1;
    W->levels = l;
    W->caplevels = cap;
  }
  txn_Level *L = &W->levels[W->nlevels++];
  L->changes = changes;
  L->moved = W->gen != W->gen0;
  L->vars = W->pend;
  L->nvars = W->npend;
  W->pend = NULL;
  W->npend = W->cappend = 0;
  W->status = TXN_ST_AWAITING;
  return 0;
}

/* Forget level i (its checkpoint already closed) and its records. */
static void level_drop(txn_World *W, int i) {
  txn_Level *L = &W->levels[i];
  for (int k = 0; k < L->nvars; k++) free(L->vars[k].name);
  free(L->vars);
  memmove(L, L + 1, (size_t)(W->nlevels - i - 1) * sizeof *L);
  W->nlevels--;
}

static void reset_attempt(txn_World *W) {
  W->npauses = W->steps = W->hook_level = 0;
  W->escaped = W->level_aborted = W->target_level = 0;
  W->ended = 0;
  W->end_reason = TXN_ACCEPTED;
  free(W->end_msg);
  W->end_msg = NULL;
  for (int l = 0; l < TXN_MAXLEVEL; l++) pause_clear(&W->plev[l]);
  txn_diagnosis_free(W->diag);
  W->diag = NULL;
}

txn_Reason txn_attempt(txn_World *W, uint64_t generation, const char *source,
                       txn_Kind kind, txn_CommandFn cmd_fn, void *ud,
                       txn_Outcome *out) {
  txn_Request rq = {kind, generation, source, 0, NULL, NULL, 0, 0, 0, NULL, 0, 0, 0, 0, 0};
  return txn_run(W, &rq, cmd_fn, ud, out);
}

/* The gate for a request: one form (held for evaluation when the kernel
** read it clean: *held), or every form of a program (wrapped in
** a PROGN for the check only, so that the gate sees them as one form; the
** newlines keep a final comment from swallowing the closing parenthesis). */
static int gate_request(txn_World *W, const txn_Request *rq, int *held, char *reason, size_t n) {
  *held = 0;
  if (!rq->program) return txn_gate_form(W, rq->source, held, reason, n);
  size_t len = strlen(rq->source);
  if (len > TXN_PROGRAM_MAX) {
    snprintf(reason, n, "the source is %zu bytes, more than the limit of %zu", len, (size_t)TXN_PROGRAM_MAX);
    return 1;
  }
  /* a form that does not read is placed in the source as sent (the
  ** wrapping below would move it a line, and blame the PROGN for an
  ** unfinished list) */
  if (txn_gate_read_check(W, rq->source, 1, reason, n)) return 1;
  char *wrapped = txn_fmt("(progn\n%s\n)", rq->source);
  if (!wrapped) { snprintf(reason, n, "out of memory"); return 1; }
  size_t saved = W->max_source;
  W->max_source = TXN_PROGRAM_MAX + 16;
  int refused = txn_gate_run(W, wrapped, NULL, 0, reason, n);
  W->max_source = saved;
  free(wrapped);
  return refused;
}

txn_Reason txn_run(txn_World *W, const txn_Request *rq, txn_CommandFn cmd_fn, void *ud,
                   txn_Outcome *out) {
  if (!out) return TXN_INVALID_ARGUMENTS;
  uint64_t generation = rq ? rq->generation : 0;
  const char *source = rq ? rq->source : NULL;
  txn_Kind kind = rq ? rq->kind : TXN_ACTION;
  memset(out, 0, sizeof *out);
  if (!W) {
    out->reason = TXN_INVALID_ARGUMENTS;
    out->message = txn_strdup("no world");
    return out->reason;
  }
  take_events(W, NULL);
  if (!source || kind < TXN_ACTION || kind >= TXN_KIND_COUNT)
    return finish(W, out, TXN_INVALID_ARGUMENTS, txn_strdup(!source ? "no source" : "unknown kind"));
  if (busy(W))
    return finish(W, out, TXN_INVALID_ARGUMENTS,
                  txn_strdup(W->in_txn || txn_pause_now(W) ? "a transaction is in progress (paused)"
                             : "a transaction is in progress (awaiting commit)"));
  if (generation != W->gen)
    return finish(W, out, TXN_STALE,
                  txn_fmt("stale generation %llu (current %llu)",
                          (unsigned long long)generation, (unsigned long long)W->gen));
  if (W->import_fault) return finish(W, out, TXN_FAULTED, import_refusal(W));
  if (W->faulted && kind != TXN_OPERATOR)
    return finish(W, out, TXN_FAULTED,
                  txn_fmt("the world is faulted (invalid-baseline: %s); only operator operations are accepted",
                          W->inv_msg ? W->inv_msg : ""));
  char reason[512];
  jiti_reset_io_syntax(W->S);
  /* the request's source is placed where it was written, until it ends */
  jiti_set_source_origin(W->S, rq->origin_file,
                         (rq->origin_file ? JITI_SOURCE_FILE : 0) | (rq->canonical ? JITI_SOURCE_CANONICAL : 0),
                         rq->origin_line, rq->origin_column);
  /* the source is read and evaluated in the request's package; the world's
  ** current package stays (the binding ends with the attempt) */
  if (rq->package && jiti_package_bind(W->S, rq->package, reason, sizeof reason) != JITI_OK)
    return finish(W, out, TXN_INVALID_ARGUMENTS, txn_strdup(reason));
  int held;
  if (gate_request(W, rq, &held, reason, sizeof reason)) {
    jiti_package_unbind(W->S);
    jiti_set_source_origin(W->S, NULL, 0, 1, 1);
    return finish(W, out, TXN_REJECTED_BY_GATE, txn_strdup(reason));
  }

  reset_attempt(W);
  W->gen0 = W->gen;
  W->in_txn = 1;
  W->kind = kind;
  W->cmd_fn = cmd_fn;
  W->ud = ud;
  W->watermark = jiti_restart_watermark(W->S);  /* the attempt's restarts are newer */
  event(W, "started", txn_kind_name(kind));
  W->depth = jiti_checkpoint(W->S);
  W->pausable = 1;
  /* a pause may return from a frame or restart it: every call of an
  ** attempt someone answers is a point to unwind to */
  jiti_set_frame_catch(W->S, cmd_fn != NULL);
  jiti_Result r;
  const jiti_Limits *lim = rq->limits ? rq->limits : &W->lim;
  /* the form the gate read and checked, or (a program) the source again;
  ** an attempt that may pause may be interrupted (jiti interrupt) */
  if (cmd_fn) jiti_allow_interrupt(W->S);
  jiti_CallNote note = {NULL, NULL};
  int noting = held && rq->note && !rq->listening && kind == TXN_APPLICATION;
  /* a failing call may open an incident: what it read is part of the
  ** evidence its diagnosis shows */
  int reading = rq->reads && kind == TXN_APPLICATION && !cmd_fn;
  if (reading) jiti_reads_begin(W->S);
  W->park_asked = rq->park && kind == TXN_APPLICATION && !cmd_fn;
  W->parked = 0;
  jiti_Status st = !held ? jiti_eval_limited(W->S, source, strlen(source), lim, &r)
                 : rq->listening ? jiti_form_eval_listening(W->S, lim, &r)
                 : noting ? jiti_form_eval_noting(W->S, lim, &r, TXN_NOTE_SIGNATURE_MAX, &note)
                 : jiti_form_eval(W->S, lim, &r);
  if (reading) jiti_reads_end(W->S);
  W->pausable = 0;
  jiti_set_frame_catch(W->S, 0);
  jiti_set_source_origin(W->S, NULL, 0, 1, 1);   /* invariants and views after it are not its */
  int left_open = 0;
  for (int l = 0; l < TXN_MAXLEVEL; l++) left_open |= W->plev[l].repair_open;
  if (left_open) {  /* control left a repair and never came back */
    W->escaped = 1;
    end_attempt(W, TXN_REPAIR_FAILED, txn_strdup("a repair transferred control out of the pause"));
    /* the checkpoints of the repairs it left are still open */
    while (jiti_checkpoint_depth(W->S) > W->depth) jiti_restore(W->S);
  }
  W->hook_level = 0;
  if (W->plev[0].resume_pending) {  /* the last resume completed the evaluation */
    W->plev[0].resume_pending = 0;
    W->gen++;
    event(W, "resumed", "");
  }
  txn_Reason res;
  char err[1024];
  if (W->escaped || (st != JITI_OK && W->ended)) {
    char *m = W->end_msg;
    W->end_msg = NULL;
    txn_Reason er = W->end_reason;
    res = restore_with(W, out, er, m);
  } else if (st == JITI_LIMIT) {
    res = restore_with(W, out, TXN_LIMIT, txn_fmt("%s: %s", r.condition_type ? r.condition_type : "limit",
                                                  r.message ? r.message : ""));
  } else if (st != JITI_OK) {
    /* with nobody to answer a pause (an application call, an operator's
    ** command), an unhandled error is the attempt's outcome */
    txn_Reason er = kind == TXN_APPLICATION || kind == TXN_OPERATOR ? TXN_ERROR : TXN_ABORTED;
    if (st == JITI_READ_ERROR) er = TXN_REJECTED_BY_GATE;
    res = restore_with(W, out, er, txn_fmt("%s: %s", r.condition_type ? r.condition_type : "error",
                                           r.message ? r.message : ""));
    if (er == TXN_ERROR) {
      out->diagnosis = W->diag;
      W->diag = NULL;
    }
  } else {
    out->value = shown_value(r.value, r.value_len);
    if (r.values) {  /* not exactly one value: every one of them */
      out->values = r.values;
      out->nvalues = r.nvalues;
      r.values = NULL;
    }
    event(W, "completed", r.value);
    if (!(W->faulted && kind == TXN_OPERATOR) && !rq->no_invariants && check_invariants(W, err, sizeof err)) {
      res = restore_with(W, out, TXN_UNSAFE, txn_strdup(err));
    } else if (collect_changes(W, out, err, sizeof err)) {
      res = restore_with(W, out, TXN_UNSAFE, txn_fmt("unexportable: %s", err));
    } else {
      run_goals(W, out);
      if (kind == TXN_PREVIEW) {
        jiti_restore(W->S);
        restored(W);
        W->status = resting_status(W);
        event(W, "restored", "preview");
        res = finish(W, out, TXN_ACCEPTED, txn_strdup("preview: restored"));
      } else if (level_push(W, out->nchanges) != 0) {
        res = restore_with(W, out, TXN_ERROR, txn_strdup("out of memory keeping the attempt"));
      } else {
        res = finish(W, out, TXN_ACCEPTED, txn_strdup("completed, awaiting commit"));
      }
    }
  }
  jiti_result_free(&r);
  /* the call is noted only when it succeeded */
  if (res == TXN_ACCEPTED && !W->npauses && note.function && strlen(note.function) <= TXN_NOTE_NAME_MAX) {
    out->noted_function = note.function;
    out->noted_signature = note.signature;
  } else {
    jiti_call_note_free(&note);
  }
  W->in_txn = 0;
  W->cmd_fn = NULL;
  W->ud = NULL;
  out->parked = W->parked;   /* (only an unhandled error parks) */
  W->park_asked = W->parked = 0;
  free(W->resume_args);
  W->resume_args = NULL;
  free(W->repair_src);
  W->repair_src = NULL;
  for (int l = 0; l < TXN_MAXLEVEL; l++) pause_clear(&W->plev[l]);
  jiti_package_unbind(W->S);
  return res;
}

/* Keep the oldest awaiting attempt; changed: its entries differ from what
** views showed before it. */
static int commit(txn_World *W, int changed) {
  if (!W || W->status != TXN_ST_AWAITING || W->in_txn || !W->nlevels) return -1;
  txn_Level *L = &W->levels[0];
  /* the attempts after it keep their checkpoints */
  jiti_commit_outermost(W->S);
  for (int i = 0; i < L->nvars; i++) var_set(W, L->vars[i].name, L->vars[i].hash);
  /* Keeping what changed nothing is no change a view could show (a
  ** read-only call, a definition evaluated again unchanged: views stay
  ** current); a faulted world's status may change below. */
  if ((changed && L->changes) || W->faulted) W->gen++;
  level_drop(W, 0);
  W->status = resting_status(W);
  if (W->faulted && !W->nlevels) {
    char err[1024];
    if (check_invariants(W, err, sizeof err) == 0) {
      W->faulted = 0;
      W->status = TXN_ST_IDLE;
    }
  }
  return 0;
}

int txn_commit(txn_World *W) { return commit(W, 1); }

int txn_commit_unchanged(txn_World *W) { return commit(W, 0); }

int txn_keep_unchanged(txn_World *W) {
  if (!W || W->status != TXN_ST_AWAITING || W->in_txn || !W->nlevels ||
      W->levels[W->nlevels - 1].changes)
    return -1;
  if (W->nlevels == 1) return txn_commit(W);
  /* what it did (scratch at most) now stands or falls with the level below */
  jiti_commit(W->S);
  level_drop(W, W->nlevels - 1);
  return 0;
}

int txn_restore_newest(txn_World *W) {
  if (!W || W->status != TXN_ST_AWAITING || W->in_txn || !W->nlevels) return -1;
  int moved = W->levels[W->nlevels - 1].moved;
  jiti_restore(W->S);
  level_drop(W, W->nlevels - 1);
  if (moved) W->gen++;
  W->status = resting_status(W);
  return 0;
}

int txn_restore(txn_World *W, txn_Outcome *out) {
  if (!W || W->status != TXN_ST_AWAITING || W->in_txn || !W->nlevels) return -1;
  if (out) memset(out, 0, sizeof *out);
  int n = W->nlevels, moved = 0;
  while (W->nlevels) {   /* newest first */
    moved |= W->levels[W->nlevels - 1].moved;
    jiti_restore(W->S);
    level_drop(W, W->nlevels - 1);
  }
  /* as for one attempt (restored): the world is what views showed before
  ** the oldest began, unless one of them paused and views showed its state */
  if (moved) W->gen++;
  W->status = resting_status(W);
  if (out) {
    char *d = txn_fmt("publication-failed (%d attempt%s)", n, n == 1 ? "" : "s");
    event(W, "restored", d);
    free(d);
    finish(W, out, TXN_PUBLICATION_FAILED,
           n == 1 ? txn_strdup("restored: publication failed")
                  : txn_fmt("restored: publication failed (%d awaiting attempts)", n));
  }
  return 0;
}

/* ---------------------------------------------------------- invariants */

static txn_Reason invariant_op(txn_World *W, uint64_t generation, const char *name,
                               const char *source, int add, txn_Outcome *out) {
  if (!out) return TXN_INVALID_ARGUMENTS;
  memset(out, 0, sizeof *out);
  if (!W) { out->reason = TXN_INVALID_ARGUMENTS; out->message = txn_strdup("no world"); return out->reason; }
  take_events(W, NULL);
  if (!name || (add && !source))
    return finish(W, out, TXN_INVALID_ARGUMENTS, txn_strdup("missing name or source"));
  if (busy(W))
    return finish(W, out, TXN_INVALID_ARGUMENTS, txn_strdup("a transaction is in progress"));
  if (generation != W->gen)
    return finish(W, out, TXN_STALE,
                  txn_fmt("stale generation %llu (current %llu)",
                          (unsigned long long)generation, (unsigned long long)W->gen));
  if (W->import_fault) return finish(W, out, TXN_FAULTED, import_refusal(W));
  W->in_txn = 1;
  W->gen0 = W->gen;
  event(W, "started", add ? "invariant-add" : "invariant-remove");
  W->depth = jiti_checkpoint(W->S);
  char err[1024] = "";
  jiti_Status st = add ? jiti_invariant_add(W->S, name, source, err, sizeof err)
                       : jiti_invariant_remove(W->S, name);
  txn_Reason res;
  if (st != JITI_OK) {
    res = restore_with(W, out, TXN_INVALID_ARGUMENTS,
                       err[0] ? txn_strdup(err) : add ? txn_strdup("the invariant was refused")
                       : txn_fmt("there is no invariant named %s (see the invariant list)", name));
  } else if (add && !W->faulted && check_invariants(W, err, sizeof err)) {
    res = restore_with(W, out, TXN_UNSAFE, txn_strdup(err));
  } else if (collect_changes(W, out, err, sizeof err)) {
    res = restore_with(W, out, TXN_UNSAFE, txn_fmt("unexportable: %s", err));
  } else if (level_push(W, out->nchanges) != 0) {
    res = restore_with(W, out, TXN_ERROR, txn_strdup("out of memory keeping the operation"));
  } else {
    event(W, "completed", name);
    res = finish(W, out, TXN_ACCEPTED, txn_strdup("completed, awaiting commit"));
  }
  W->in_txn = 0;
  return res;
}

txn_Reason txn_invariant_add(txn_World *W, uint64_t generation, const char *name,
                             const char *source, txn_Outcome *out) {
  return invariant_op(W, generation, name, source, 1, out);
}

txn_Reason txn_invariant_remove(txn_World *W, uint64_t generation, const char *name,
                                txn_Outcome *out) {
  return invariant_op(W, generation, name, NULL, 0, out);
}
