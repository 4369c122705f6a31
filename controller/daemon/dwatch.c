/*
** dwatch.c — the watch after a repair, and every undo of a repair
** (docs/repair.md, "Watch"; an operator's reject and the undo at start of a
** tentative repair use the same undo, dtentative.c): for the
** next `window` calls of the repaired function after a repair is applied
** (a successful call the worker noted as a call of it, or a call that
** failed with it in its diagnosis's frames), the kernel counts those that
** fail.  When more fail than the function's rate before the repair allows
** over the window, the repair is undone: a revision (kind
** repair) puts back the entries the repair changed, as they were before
** it, the incident goes from repaired back to captured (a supervisor takes
** it again), and the live worker is started afresh from the new CURRENT.
**
** The rate before is the function's own: its failures over its calls
** that this kernel counted since the repair before (a selected function's
** calls are noted: dtraffic.c); for a function it counted no call of (a kernel
** started since), the incident's failures over every application call it
** served.  A function that failed once in a hundred calls may fail about
** once in a hundred after.
** The undo runs between transactions, on durable state (no call held for
** group commit), as a rollback does.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"
#include "txn.h"
#include "proto.h"

static void watch_end(Daemon *D, size_t i);

/* The calls and failures of a selected function this kernel counted (make:
** a slot for it, the least used one reused when all are taken); NULL if
** none. */
static DCount *count_of(Daemon *D, const char *function, int make) {
  DCount *least = NULL;
  for (size_t i = 0; i < DWATCH_COUNTED; i++) {
    DCount *k = &D->counts[i];
    if (k->function[0] && !strcmp(k->function, function)) return k;
    if (!least || k->calls < least->calls) least = k;
  }
  if (!make) return NULL;
  memset(least, 0, sizeof *least);
  snprintf(least->function, sizeof least->function, "%s", function);
  return least;
}

void dwatch_start(Daemon *D, uint64_t incident, const char *function, uint64_t revision, unsigned window,
                  uint64_t failures_before) {
  for (size_t i = 0; i < D->nwatches; i++)   /* a newer repair of the function: the older one's watch ends */
    if (!strcmp(D->watches[i].function, function)) watch_end(D, i--);
  if (!window) return;
  DWatch *w = realloc(D->watches, (D->nwatches + 1) * sizeof *w);
  if (!w) {
    dlog(D, "incident %" PRIu64 ": out of memory: its repair is not watched", incident);
    return;
  }
  D->watches = w;
  w = &D->watches[D->nwatches++];
  memset(w, 0, sizeof *w);
  w->incident = incident;
  w->revision = revision;
  w->window = window;
  snprintf(w->function, sizeof w->function, "%s", function);
  DCount *k = count_of(D, function, 0);
  uint64_t served = D->calls_served ? D->calls_served : 1;
  w->rate_before = k && k->calls ? (double)k->failures / (double)k->calls : (double)failures_before / (double)served;
  if (k) k->calls = k->failures = 0;   /* the repaired definition's own count starts */
  if (w->rate_before > 1) w->rate_before = 1;
  dlog(D, "incident %" PRIu64 ": watching %s for %u calls (failure rate before the repair %.3f)", incident, function,
       window, w->rate_before);
}

static void watch_end(Daemon *D, size_t i) { D->watches[i] = D->watches[--D->nwatches]; }

/* Queue an undo (u's id: taken). 0, or -1 out of memory (u's id released). */
static int undo_push(Daemon *D, const DUndo *u) {
  DUndo *q = realloc(D->undos, (D->nundos + 1) * sizeof *q);
  if (!q) {
    json_decref(u->id);
    return -1;
  }
  D->undos = q;
  D->undos[D->nundos++] = *u;
  return 0;
}

int dwatch_queue_reject(Daemon *D, uint64_t incident, uint64_t revision, const char *function, uint64_t client,
                        json_t *id) {
  DUndo u = {.incident = incident, .revision = revision, .reject = 1, .client = client,
             .id = id ? json_incref(id) : NULL};
  snprintf(u.function, sizeof u.function, "%s", function);
  return undo_push(D, &u);
}

/* 1 when function is one of the diagnosis's frames. */
static int failed_in(json_t *diag, const char *function) {
  json_t *f;
  size_t i;
  json_array_foreach(json_object_get(diag, "frames"), i, f) {
    char name[STORE_NAME_MAX + 8];
    if (!dincident_frame_function(f, name, sizeof name) && !strcmp(name, function)) return 1;
  }
  return 0;
}

/* 1 when the function's live definition is still the repair's (its
** revision's entry for it). */
static int repair_live(Daemon *D, const DWatch *w) {
  store_manifest *m = NULL;
  int live = 0;
  if (store_manifest_read(dstore(D), w->revision, &m) == STORE_OK)
    for (size_t i = 0; i < m->nchanges; i++) {
      uint8_t now[32];
      if (m->changes[i].kind == STORE_FUNCTION && !strcmp(m->changes[i].name, w->function))
        live = store_lookup(dstore(D), STORE_FUNCTION, w->function, now) == STORE_OK &&
               !memcmp(now, m->changes[i].new_hash, 32);
    }
  store_free(m);
  return live;
}

void dwatch_call(Daemon *D, const Txn *t, const char *called, const char *failed, json_t *diag) {
  if (t->op != PROTO_CALL) return;
  D->calls_served++;
  DCount *k = called || failed ? count_of(D, called ? called : failed, 1) : NULL;
  if (k) {
    k->calls++;
    k->failures += failed != NULL;
  }
  if (called) dtentative_call(D, called, 0);
  if (failed && (!called || strcmp(called, failed))) dtentative_call(D, failed, 1);
  for (size_t i = 0; i < D->nwatches; i++) {
    DWatch *w = &D->watches[i];
    if (D->nundos) break;   /* one undo at a time; counting waits for it */
    int fails = diag && failed_in(diag, w->function);
    if (!fails && !(called && !strcmp(called, w->function))) continue;   /* not a call of it */
    w->calls++;
    w->failures += fails;
    /* above the rate before, over the whole window, whatever comes next */
    if ((double)w->failures > w->rate_before * w->window && w->failures >= 2 && !repair_live(D, w)) {
      dlog(D, "incident %" PRIu64 ": %s changed since its repair: the watch ends", w->incident, w->function);
      watch_end(D, i--);
      continue;
    }
    if ((double)w->failures > w->rate_before * w->window && w->failures >= 2) {
      dlog(D, "incident %" PRIu64 ": %s failed %u of %u calls since its repair (rate before %.3f): undoing it",
           w->incident, w->function, w->failures, w->calls, w->rate_before);
      DUndo u = {.incident = w->incident, .revision = w->revision, .failures = w->failures, .calls = w->calls};
      snprintf(u.function, sizeof u.function, "%s", w->function);
      watch_end(D, i);
      if (undo_push(D, &u) != 0) dlog(D, "incident %" PRIu64 ": out of memory: its repair stays", u.incident);
      return;
    }
    if (w->calls >= w->window) {
      dlog(D, "incident %" PRIu64 ": %s failed %u of %u calls since its repair: the repair stands", w->incident,
           w->function, w->failures, w->calls);
      watch_end(D, i--);
    }
  }
}

/* The entries revision rev changed, as they were before it: changed[]
** (entries of rev's parent, store_free each) and removed[] (keys rev
** added).  0; 1 when one changed since (the repair is no longer what
** runs) or the repair changed too many; 2 when every one is as before the
** repair already (undone, its incident not moved yet); -1 the store (its
** message). */
typedef struct Undo {
  store_entry *changed[64];
  store_key removed[64];
  size_t nchanged, nremoved;
  store_manifest *m;
} Undo;

static void undo_free(Undo *u) {
  for (size_t i = 0; i < u->nchanged; i++) store_free(u->changed[i]);
  store_free(u->m);
}

static int undo_read(Daemon *D, uint64_t revision, Undo *u, char *err, size_t errlen) {
  store_env *s = dstore(D);
  static const uint8_t zero[32];
  size_t undone = 0;
  if (store_manifest_read(s, revision, &u->m) != STORE_OK) {
    snprintf(err, errlen, "%s", store_errmsg(s));
    return -1;
  }
  if (u->m->nchanges > 64) {
    snprintf(err, errlen, "revision %" PRIu64 " changed %zu entries; an undo restores 64 at most", revision,
             u->m->nchanges);
    return 1;
  }
  for (size_t i = 0; i < u->m->nchanges; i++) {
    const store_change *c = &u->m->changes[i];
    uint8_t now[32];
    int present = store_lookup(s, c->kind, c->name, now) == STORE_OK;
    /* as before the repair already (an undo whose incident was not moved:
    ** a kernel killed between the two writes) */
    undone += present ? !memcmp(now, c->old_hash, 32) : !memcmp(c->old_hash, zero, 32);
    /* changed again since: the repair is no longer what runs */
    if (!present || memcmp(now, c->new_hash, 32)) {
      snprintf(err, errlen, "the %s %s changed since revision %" PRIu64 ": the repair is no longer what runs",
               store_kind_name(c->kind), c->name, revision);
      continue;
    }
    if (!memcmp(c->old_hash, zero, 32)) {
      u->removed[u->nremoved++] = (store_key){c->kind, c->name};
    } else if (store_get_entry(s, c->old_hash, &u->changed[u->nchanged]) == STORE_OK) {
      u->nchanged++;
    } else {
      snprintf(err, errlen, "%s", store_errmsg(s));
      return -1;
    }
  }
  if (u->m->nchanges && undone == u->m->nchanges) return 2;
  return u->nchanged + u->nremoved == u->m->nchanges ? 0 : 1;
}

int dwatch_revert(Daemon *D, uint64_t incident, uint64_t revision, int from, uint64_t gen, const char *summary,
                  const char *why, uint64_t *rev, char *err, size_t errlen) {
  Undo u = {0};
  *rev = 0;
  int r = undo_read(D, revision, &u, err, errlen);
  if (r == 2) {   /* restored already: only the incident is left to move */
    undo_free(&u);
    *rev = D->revision;
    goto moved;
  }
  if (r != 0) {
    undo_free(&u);
    return r;
  }
  store_entry *changed = calloc(u.nchanged ? u.nchanged : 1, sizeof *changed);
  for (size_t k = 0; changed && k < u.nchanged; k++) changed[k] = *u.changed[k];
  devents_flush(D);
  store_rev_info info = {STORE_REV_REPAIR, gen, 0, JITI_VERSION, summary, NULL, D->grant_text};
  int rc = changed ? store_publish(dstore(D), D->revision, &info, changed, u.nchanged, u.removed, u.nremoved, rev)
                   : STORE_ENOMEM;
  free(changed);
  undo_free(&u);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "%s", rc == STORE_ENOMEM ? "out of memory" : store_errmsg(dstore(D)));
    return -1;
  }
  int rrc = drepl_commit(D->repl, dstore(D), *rev, *rev, NULL, err, errlen);   /* replicated: etcd's too */
  if (rrc == -2) drepl_uncertain(D, err);
  if (rrc) {
    drepl_fence(D, err, rrc == DREPL_FENCED);
    return -1;
  }
  D->revision = *rev;
moved:
  err[0] = 0;
  if (store_incident_transition(dstore(D), incident, from, STORE_INC_CAPTURED, 0, NULL) != STORE_OK)
    snprintf(err, errlen, "%s", store_errmsg(dstore(D)));
  json_t *o = json_pack("{s:b, s:s, s:I}", "passed", 0, "reason", why, "undone_by", (json_int_t)*rev);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  if (text) store_incident_note(dstore(D), incident, STORE_NOTE_VERIFICATION, text, strlen(text), 0, 0);
  free(text);
  json_decref(o);
  dtentative_ended(D, incident);
  devents_tell_stored(D);
  dlog(D, "incident %" PRIu64 ": repair undone by revision %" PRIu64 "%s%s", incident, *rev, err[0] ? "; " : "",
       err);
  return 0;
}

int dwatch_undo_due(Daemon *D) { return D->nundos != 0; }

/* Answer a reject (its client, when it waits). */
static void reject_answer(Daemon *D, DUndo *u, json_t *r) {
  if (u->reject && u->client) dreply(D, u->client, u->id, r);
  else json_decref(r);
}

void dwatch_undo(Daemon *D) {
  DUndo u = D->undos[0];
  memmove(D->undos, D->undos + 1, --D->nundos * sizeof *D->undos);
  char err[CLI_MSG_MAX], summary[STORE_SUMMARY_MAX], why[256];
  store_incident *inc = NULL;
  int from = store_incident_get(dstore(D), u.incident, &inc) == STORE_OK ? inc->status : 0;
  store_free(inc);
  if (u.reject && from != STORE_INC_TENTATIVE) {   /* promoted meanwhile, or the watch undid it */
    reject_answer(D, &u, json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "conflict", "message",
                                   "the incident is no longer tentative (promoted or undone meanwhile): nothing "
                                   "was rejected; jiti repairs lists what is tentative"));
    json_decref(u.id);
    return;
  }
  if (u.reject) {
    snprintf(summary, sizeof summary, "reject the tentative repair of incident %" PRIu64 " (%s, revision %" PRIu64
             ")", u.incident, u.function, u.revision);
    snprintf(why, sizeof why, "the operator rejected the tentative repair");
  } else {
    snprintf(summary, sizeof summary, "undo the repair of incident %" PRIu64 " (%s, revision %" PRIu64 "): %u of "
             "%u calls failed after it", u.incident, u.function, u.revision, u.failures, u.calls);
    snprintf(why, sizeof why, "the watch undid the repair: %u of %u calls failed after it", u.failures, u.calls);
  }
  uint64_t g = D->gen + 1, rev = 0;
  int r = from == STORE_INC_TENTATIVE || from == STORE_INC_REPAIRED
              ? dwatch_revert(D, u.incident, u.revision, from, g, summary, why, &rev, err, sizeof err)
              : (snprintf(err, sizeof err, "the incident is %s", store_incident_status_name(from)), 1);
  if (r != 0) {
    dlog(D, "incident %" PRIu64 ": the repair of %s cannot be undone: %s; it stays", u.incident, u.function, err);
    if (u.reject && r == 1) {   /* what runs is a later change: the tentative repair is stale */
      char e2[CLI_MSG_MAX + 200];
      if (store_incident_transition(dstore(D), u.incident, STORE_INC_TENTATIVE, STORE_INC_STALE, 0, NULL) ==
          STORE_OK) {
        devents_tell_stored(D);
        dtentative_ended(D, u.incident);
      }
      snprintf(e2, sizeof e2, "%s; nothing was undone and incident %" PRIu64 " is stale (change the function "
               "itself, or roll back with jiti rollback)", err, u.incident);
      reject_answer(D, &u, json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "conflict", "message", e2));
    } else {
      reject_answer(D, &u, json_pack("{s:b, s:s, s:s}", "ok", 0, "code", "store-error", "message", err));
    }
    json_decref(u.id);
    return;
  }
  reject_answer(D, &u, json_pack("{s:b, s:{s:I, s:s, s:s, s:I}}", "ok", 1, "repair", "incident",
                                 (json_int_t)u.incident, "status", "captured", "function", u.function, "revision",
                                 (json_int_t)rev));
  json_decref(u.id);
  D->gen = g;
  if (g > D->gen_saved) D->gen_saved = g;
  /* the live world becomes the new CURRENT's: a fresh worker */
  dworker_stop(D);
  D->live.wait = W_NONE;
  D->live.base = g;
  dworker_restart(D);
}

void dwatch_free(Daemon *D) {
  free(D->watches);
  D->watches = NULL;
  D->nwatches = 0;
  for (size_t i = 0; i < D->nundos; i++) json_decref(D->undos[i].id);
  free(D->undos);
  D->undos = NULL;
  D->nundos = 0;
}
