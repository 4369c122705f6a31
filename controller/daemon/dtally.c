/*
** dtally.c — what the kernel counts instead of recording one event each
** (daemon.h, docs/store.md "Counters"): calls and previews that publish
** nothing, queries, replays and refused key reuses, per kind (the op) and
** outcome (the reason, "ok", "replayed", an error code); and the outcomes
** such calls leave only as their idempotency keys' records.
**
** A call costs a counter's increment here, not a record in the store:
** the counts pending are written with the kernel's timed writes of events
** (devents.c: by the store writer, journaled, at most TALLY_DELAY after
** the first is counted), together with the attempt numbers handed out
** since (the store's attempt mark: no number is handed out twice).
** `jiti status` shows the totals, `jiti events counters` the store's.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "daemon.h"

#define TALLY_DELAY 0.1

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static Count *find(Tally *t, const char *kind, const char *outcome) {
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->c[i].kind, kind) && !strcmp(t->c[i].outcome, outcome)) return &t->c[i];
  if (strlen(kind) > STORE_COUNTER_NAME_MAX || strlen(outcome) > STORE_COUNTER_NAME_MAX || !*kind || !*outcome)
    return NULL;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    Count *c = realloc(t->c, cap * sizeof *c);
    if (!c) return NULL;
    t->c = c;
    t->cap = cap;
  }
  Count *c = &t->c[t->n++];
  memset(c, 0, sizeof *c);
  strcpy(c->kind, kind);
  strcpy(c->outcome, outcome);
  return c;
}

static int load_one(void *arg, const store_count *sc) {
  Count *c = find(arg, sc->kind, sc->outcome);
  if (c) c->total = sc->n;
  return 0;
}

void dtally_load(Daemon *D) {
  if (store_counters_read(dstore(D), load_one, &D->tally) != STORE_OK)
    dlog(D, "could not read the counters: %s", store_errmsg(dstore(D)));
  D->tally.attempt_saved = D->next_attempt ? D->next_attempt - 1 : 0;
}

void dtally_free(Daemon *D) {
  Tally *t = &D->tally;
  for (size_t i = 0; i < t->nkeys; i++) free(t->key[i]);
  free(t->key);
  free(t->klen);
  free(t->ktime);
  free(t->c);
  memset(t, 0, sizeof *t);
}

static void pending_from_now(Tally *t) {
  if (!t->first) t->first = daemon_now();
}

void dtally_count(Daemon *D, const char *kind, const char *outcome) {
  Count *c = kind && outcome ? find(&D->tally, kind, outcome) : NULL;
  if (!c) return;
  int64_t ms = now_ms();
  c->total++;
  if (!c->pending++) c->first_ms = ms;
  c->last_ms = ms;
  pending_from_now(&D->tally);
}

void dtally_key(Daemon *D, char *text, size_t len) {
  Tally *t = &D->tally;
  if (!text) return;
  if (t->nkeys == t->kcap) {
    size_t cap = t->kcap ? t->kcap * 2 : 64;
    char **k = realloc(t->key, cap * sizeof *k);
    if (k) t->key = k;
    size_t *l = k ? realloc(t->klen, cap * sizeof *l) : NULL;
    if (l) t->klen = l;
    int64_t *tm = l ? realloc(t->ktime, cap * sizeof *tm) : NULL;
    if (!tm) {
      dlog(D, "could not keep an idempotency key: out of memory (a retry with it runs again)");
      free(text);
      return;
    }
    t->ktime = tm;
    t->kcap = cap;
  }
  t->key[t->nkeys] = text;
  t->klen[t->nkeys] = len;
  t->ktime[t->nkeys++] = now_ms();
  pending_from_now(t);
}

double dtally_due(Daemon *D) {
  if (!D->tally.first) return -1;
  double d = D->tally.first + TALLY_DELAY - daemon_now();
  return d > 0 ? d : 0;
}

int dtally_take(Daemon *D, DTally *out) {
  Tally *t = &D->tally;
  memset(out, 0, sizeof *out);
  uint64_t mark = D->next_attempt ? D->next_attempt - 1 : 0;
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) n += t->c[i].pending > 0;
  if (!n && !t->nkeys && mark <= t->attempt_saved) return 0;
  out->copy = n ? malloc(n * sizeof *out->copy) : NULL;
  out->counts = n ? malloc(n * sizeof *out->counts) : NULL;
  out->keys = t->nkeys ? malloc(t->nkeys * sizeof *out->keys) : NULL;
  if ((n && (!out->copy || !out->counts)) || (t->nkeys && !out->keys)) {
    free(out->copy);
    free(out->counts);
    free(out->keys);
    memset(out, 0, sizeof *out);
    return 0;   /* out of memory: they stay pending */
  }
  for (size_t i = 0; i < t->n; i++) {
    Count *c = &t->c[i];
    if (!c->pending) continue;
    Count *k = &out->copy[out->ncounts];
    *k = *c;
    out->counts[out->ncounts++] = (store_count){k->kind, k->outcome, c->pending, c->first_ms, c->last_ms};
    c->pending = 0;
  }
  for (size_t i = 0; i < t->nkeys; i++) out->keys[i] = (store_ev){NULL, t->key[i], t->klen[i], t->ktime[i]};
  out->nkeys = t->nkeys;
  t->nkeys = 0;
  out->attempt = mark;
  t->first = 0;
  return 1;
}

void dtally_done(Daemon *D, DTally *d, int ok) {
  Tally *t = &D->tally;
  if (ok) {
    if (d->attempt > t->attempt_saved) t->attempt_saved = d->attempt;
    for (size_t i = 0; i < d->nkeys; i++) free((char *)d->keys[i].members);
  } else {   /* pending again, to be written with the next */
    for (size_t i = 0; i < d->ncounts; i++) {
      Count *c = find(t, d->copy[i].kind, d->copy[i].outcome);
      if (!c) continue;
      if (!c->pending || d->counts[i].first_ms < c->first_ms) c->first_ms = d->counts[i].first_ms;
      c->pending += d->counts[i].n;
    }
    for (size_t i = 0; i < d->nkeys; i++) dtally_key(D, (char *)d->keys[i].members, d->keys[i].len);
    pending_from_now(t);
  }
  free(d->copy);
  free(d->counts);
  free(d->keys);
  memset(d, 0, sizeof *d);
}

static int by_name(const void *a, const void *b) {
  const Count *x = *(Count *const *)a, *y = *(Count *const *)b;
  int c = strcmp(x->kind, y->kind);
  return c ? c : strcmp(x->outcome, y->outcome);
}

json_t *dtally_json(Daemon *D) {
  Tally *t = &D->tally;
  json_t *a = json_array();
  Count **v = t->n ? malloc(t->n * sizeof *v) : NULL;
  for (size_t i = 0; v && i < t->n; i++) v[i] = &t->c[i];
  if (v) qsort(v, t->n, sizeof *v, by_name);   /* as the store lists them */
  for (size_t i = 0; a && v && i < t->n; i++)
    json_array_append_new(a, json_pack("{s:s, s:s, s:I}", "kind", v[i]->kind, "outcome", v[i]->outcome, "count",
                                       (json_int_t)v[i]->total));
  free(v);
  return a ? a : json_array();
}
