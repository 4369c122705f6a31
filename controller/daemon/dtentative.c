/*
** dtentative.c — tentative repairs (docs/repair.md, "Tentative repairs
** and promotion"): a repair applied with "promote": "manual" is live but
** its incident stays tentative until an operator promotes it (repaired)
** or rejects it (undone by a revision of kind repair, the incident
** captured again: dwatch.c does the undo between transactions).
**
** The kernel counts the calls and failures of each tentative repair's
** function since the repair (what jiti repairs shows); a kernel that
** starts undoes every tentative repair first, newest revision first, so
** the world comes back at its last promoted state.  Undoing restores
** definitions only: data rows the tentative code wrote stay.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"

void dtentative_started(Daemon *D, uint64_t incident, const char *function, uint64_t revision) {
  DTentative *t = realloc(D->tentative, (D->ntentative + 1) * sizeof *t);
  if (!t) {
    dlog(D, "incident %" PRIu64 ": out of memory: its tentative repair's calls are not counted", incident);
    return;
  }
  D->tentative = t;
  t = &D->tentative[D->ntentative++];
  memset(t, 0, sizeof *t);
  t->incident = incident;
  t->revision = revision;
  snprintf(t->function, sizeof t->function, "%s", function);
}

void dtentative_call(Daemon *D, const char *function, int failed) {
  for (size_t i = 0; i < D->ntentative; i++)
    if (!strcmp(D->tentative[i].function, function)) {
      D->tentative[i].calls++;
      D->tentative[i].failures += failed != 0;
    }
}

void dtentative_ended(Daemon *D, uint64_t incident) {
  for (size_t i = 0; i < D->ntentative; i++)
    if (D->tentative[i].incident == incident) D->tentative[i--] = D->tentative[--D->ntentative];
}

void dtentative_free(Daemon *D) {
  free(D->tentative);
  D->tentative = NULL;
  D->ntentative = 0;
}

static const DTentative *counted(Daemon *D, uint64_t incident) {
  for (size_t i = 0; i < D->ntentative; i++)
    if (D->tentative[i].incident == incident) return &D->tentative[i];
  return NULL;
}

/* 1 when a reject of incident is queued. */
static int reject_queued(Daemon *D, uint64_t incident) {
  for (size_t i = 0; i < D->nundos; i++)
    if (D->undos[i].reject && D->undos[i].incident == incident) return 1;
  return 0;
}

/* ------------------------------------------------------------ list */

typedef struct Listing { Daemon *D; json_t *a; } Listing;

static int list_one(void *arg, const store_incident *inc) {
  Listing *l = arg;
  const DTentative *t = counted(l->D, inc->id);
  json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:b}", "incident", (json_int_t)inc->id, "function",
                        inc->function, "kind", store_incident_kind_name(inc->kind), "revision",
                        (json_int_t)inc->revision, "calls", (json_int_t)(t ? t->calls : 0), "failures",
                        (json_int_t)(t ? t->failures : 0), "rejecting", reject_queued(l->D, inc->id));
  if (o) json_array_append_new(l->a, o);
  return 0;
}

static void list(Daemon *D, uint64_t client, json_t *id) {
  Listing l = {D, json_array()};
  if (store_incidents_list(dstore(D), 1u << STORE_INC_TENTATIVE, 0, list_one, &l) != STORE_OK) {
    json_decref(l.a);
    dreply_err(D, client, id, "store-error", "cannot list the tentative repairs: %s", store_errmsg(dstore(D)));
    return;
  }
  dreply(D, client, id, json_pack("{s:b, s:o}", "ok", 1, "repairs", l.a));
}

/* ------------------------------------------------------------ promote, reject */

/* Incident n, tentative, into *out; 0 after answering why not. */
static int tentative_read(Daemon *D, uint64_t client, json_t *id, uint64_t n, const char *action,
                          store_incident **out) {
  int rc = store_incident_get(dstore(D), n, out);
  if (rc == STORE_ENOENT) {
    dreply_err(D, client, id, "not-found", "no incident %" PRIu64 " (jiti repairs lists the tentative repairs)", n);
    return 0;
  }
  if (rc != STORE_OK) {
    dreply_err(D, client, id, "store-error", "cannot read incident %" PRIu64 ": %s", n, store_errmsg(dstore(D)));
    return 0;
  }
  if ((*out)->status != STORE_INC_TENTATIVE || reject_queued(D, n)) {
    dreply_err(D, client, id, "conflict", "incident %" PRIu64 " is %s: only a tentative repair can be %s (jiti "
               "repairs lists them)", n, reject_queued(D, n) ? "being rejected" :
               store_incident_status_name((*out)->status), action);
    store_free(*out);
    *out = NULL;
    return 0;
  }
  return 1;
}

static void promote(Daemon *D, uint64_t client, json_t *id, uint64_t n) {
  store_incident *inc = NULL;
  if (!tentative_read(D, client, id, n, "promoted", &inc)) return;
  if (store_incident_transition(dstore(D), n, STORE_INC_TENTATIVE, STORE_INC_REPAIRED, 0, NULL) != STORE_OK) {
    dreply_err(D, client, id, "store-error", "cannot promote incident %" PRIu64 ": %s", n, store_errmsg(dstore(D)));
    store_free(inc);
    return;
  }
  devents_tell_stored(D);
  dlog(D, "incident %" PRIu64 ": its repair (revision %" PRIu64 ") promoted", n, inc->revision);
  dtentative_ended(D, n);
  dreply(D, client, id, json_pack("{s:b, s:{s:I, s:s, s:s, s:I}}", "ok", 1, "repair", "incident", (json_int_t)n,
                                  "status", "repaired", "function", inc->function, "revision",
                                  (json_int_t)inc->revision));
  store_free(inc);
}

static void reject(Daemon *D, uint64_t client, json_t *id, uint64_t n) {
  store_incident *inc = NULL;
  if (!tentative_read(D, client, id, n, "rejected", &inc)) return;
  /* undone between transactions, on durable state, as the watch undoes */
  if (dwatch_queue_reject(D, n, inc->revision, inc->function, client, id) != 0)
    dreply_err(D, client, id, "busy", "the kernel is out of memory; retry later");
  else
    dlog(D, "incident %" PRIu64 ": the operator rejects its tentative repair (revision %" PRIu64 ")", n,
         inc->revision);
  store_free(inc);
}

void dtentative_op(Daemon *D, uint64_t client, json_t *id, json_t *req) {
  const char *action = json_string_value(json_object_get(req, "action"));
  uint64_t n = (uint64_t)json_integer_value(json_object_get(req, "incident"));
  if (!action || !strcmp(action, "list"))
    list(D, client, id);
  else if (!strcmp(action, "promote"))
    promote(D, client, id, n);
  else
    reject(D, client, id, n);
}

/* ------------------------------------------------------------ restart */

typedef struct Tent { uint64_t id, revision; char function[STORE_NAME_MAX + 1]; } Tent;
typedef struct Found { Tent *a; size_t n, cap; } Found;

static int found_one(void *arg, const store_incident *inc) {
  Found *f = arg;
  if (f->n == f->cap) {
    Tent *m = realloc(f->a, (f->cap = f->cap ? 2 * f->cap : 8) * sizeof *m);
    if (!m) return 1;
    f->a = m;
  }
  Tent *t = &f->a[f->n++];
  t->id = inc->id;
  t->revision = inc->revision;
  snprintf(t->function, sizeof t->function, "%s", inc->function);
  return 0;
}

static int newest_first(const void *a, const void *b) {
  const Tent *x = a, *y = b;
  return x->revision < y->revision ? 1 : x->revision > y->revision ? -1 : 0;
}

void dtentative_restart(Daemon *D) {
  Found f = {0};
  if (store_incidents_list(dstore(D), 1u << STORE_INC_TENTATIVE, 0, found_one, &f) != STORE_OK) {
    dlog(D, "cannot read the tentative repairs: %s; they stay as they are", store_errmsg(dstore(D)));
    goto out;
  }
  if (f.n) qsort(f.a, f.n, sizeof *f.a, newest_first);
  for (size_t i = 0; i < f.n; i++) {
    const Tent *inc = &f.a[i];
    char summary[STORE_SUMMARY_MAX], err[CLI_MSG_MAX];
    snprintf(summary, sizeof summary, "restart: undo the tentative repair of incident %" PRIu64 " (%s, revision %"
             PRIu64 "), never promoted", inc->id, inc->function, inc->revision);
    uint64_t g = D->gen_saved + 1, rev = 0;
    int r = dwatch_revert(D, inc->id, inc->revision, STORE_INC_TENTATIVE, g, summary,
                          "the kernel restarted with the repair tentative: undone (the last promoted state)", &rev,
                          err, sizeof err);
    if (r == 0) {
      D->gen_saved = g;
      dlog(D, "incident %" PRIu64 ": its tentative repair (revision %" PRIu64 ") undone at start by revision %" PRIu64,
           inc->id, inc->revision, rev);
    } else if (r == 1 &&
               store_incident_transition(dstore(D), inc->id, STORE_INC_TENTATIVE, STORE_INC_STALE, 0, NULL) ==
                   STORE_OK) {
      dlog(D, "incident %" PRIu64 ": its tentative repair is not undone (%s): stale", inc->id, err);
    } else {
      dlog(D, "incident %" PRIu64 ": its tentative repair cannot be undone: %s", inc->id, err);
    }
  }
  D->live.base = D->gen_saved + 1;
out:
  free(f.a);
}
