/*
** dwatch.c — the watch after a repair (docs/repair.md, "Watch"): for the
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

static void watch_end(Daemon *D, size_t i) {
  D->watches[i] = D->watches[--D->nwatches];
  if (D->watch_undo == i + 1) D->watch_undo = 0;
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
  for (size_t i = 0; i < D->nwatches; i++) {
    DWatch *w = &D->watches[i];
    if (D->watch_undo) break;   /* one undo at a time; counting waits for it */
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
      D->watch_undo = i + 1;
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
** added).  0, or -1 (logged). */
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

static int undo_read(Daemon *D, const DWatch *w, Undo *u) {
  store_env *s = dstore(D);
  static const uint8_t zero[32];
  if (store_manifest_read(s, w->revision, &u->m) != STORE_OK || u->m->nchanges > 64) return -1;
  for (size_t i = 0; i < u->m->nchanges; i++) {
    const store_change *c = &u->m->changes[i];
    uint8_t now[32];
    /* changed again since: the repair is no longer what runs */
    if (store_lookup(s, c->kind, c->name, now) != STORE_OK || memcmp(now, c->new_hash, 32)) return -1;
    if (!memcmp(c->old_hash, zero, 32)) {
      u->removed[u->nremoved++] = (store_key){c->kind, c->name};
    } else if (store_get_entry(s, c->old_hash, &u->changed[u->nchanged]) == STORE_OK) {
      u->nchanged++;
    } else {
      return -1;
    }
  }
  return 0;
}

int dwatch_undo_due(Daemon *D) { return D->watch_undo != 0; }

void dwatch_undo(Daemon *D) {
  size_t i = D->watch_undo - 1;
  DWatch w = D->watches[i];
  watch_end(D, i);
  Undo u = {0};
  char err[CLI_MSG_MAX], summary[STORE_SUMMARY_MAX];
  if (undo_read(D, &w, &u) != 0) {
    dlog(D, "incident %" PRIu64 ": the repair of %s cannot be undone (changed since, or the store: %s); it stays",
         w.incident, w.function, store_errmsg(dstore(D)));
    undo_free(&u);
    return;
  }
  store_entry *changed = calloc(u.nchanged ? u.nchanged : 1, sizeof *changed);
  for (size_t k = 0; changed && k < u.nchanged; k++) changed[k] = *u.changed[k];
  snprintf(summary, sizeof summary, "undo the repair of incident %" PRIu64 " (%s, revision %" PRIu64 "): %u of %u "
           "calls failed after it", w.incident, w.function, w.revision, w.failures, w.calls);
  devents_flush(D);
  uint64_t g = D->gen + 1, rev = 0;
  store_rev_info info = {STORE_REV_REPAIR, g, 0, JITI_VERSION, summary, NULL, D->grant_text};
  int rc = changed ? store_publish(dstore(D), D->revision, &info, changed, u.nchanged, u.removed, u.nremoved, &rev)
                   : STORE_ENOMEM;
  free(changed);
  undo_free(&u);
  if (rc != STORE_OK) {
    dlog(D, "incident %" PRIu64 ": undoing its repair failed: %s", w.incident, store_errmsg(dstore(D)));
    return;
  }
  if (store_incident_transition(dstore(D), w.incident, STORE_INC_REPAIRED, STORE_INC_CAPTURED, 0, NULL) != STORE_OK)
    snprintf(err, sizeof err, "%s", store_errmsg(dstore(D)));
  else
    err[0] = 0;
  char note[512];
  snprintf(note, sizeof note, "{\"passed\":false,\"reason\":\"the watch undid the repair: %u of %u calls failed "
           "after it\",\"undone_by\":%" PRIu64 "}", w.failures, w.calls, rev);
  store_incident_note(dstore(D), w.incident, STORE_NOTE_VERIFICATION, note, strlen(note), 0, 0);
  devents_tell_stored(D);
  dlog(D, "incident %" PRIu64 ": repair undone by revision %" PRIu64 "%s%s", w.incident, rev, err[0] ? "; " : "",
       err);
  D->revision = rev;
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
}
