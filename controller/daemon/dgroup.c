/*
** dgroup.c — group commit of the application calls (daemon.h,
** docs/transactions.md "Group commit", docs/protocol.md).
**
** A writing call's revision must be durable before its client hears of it,
** and a durable commit costs a disk sync or two.  So the worker does not
** wait for it: a call without a generation that the worker accepted stays
** open in the worker (txn_set_stacking: each in its own checkpoint, on top
** of the ones before) while the worker goes on with the next calls, and its
** outcome is *held* here.  At the top of every turn of the poll loop
** everything held is published in one store transaction
** (store_publish_group) — each call still its own revision, with its own
** number, manifest, generation and events, in the order they ran — and
** then, durable, answered; the worker is told to keep them ("commit" with
** their count).  Calls the worker finishes while that transaction syncs
** are the next group.
**
** A call that ran on top of held ones — one that changed nothing, or
** failed — saw their state, so its reply is held too and goes out with
** them.  If the group cannot be published, nothing of it was written: every
** held call and everything the worker ran on top of them is undone (one
** "restore") and their clients get publication-failed.  Outcomes that
** arrive between that restore and its answer ran on undone state: they are
** answered publication-failed too.  So a client never sees a state that is
** not durable (docs/transactions.md says exactly what it may see).
**
** Other transactions (actions, previews, operator commands, calls with a
** generation) and queries wait until nothing is held and no restore is
** pending (dsched.c): they run alone, as before.
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "daemon.h"
#include "txn.h"

/* ---------------------------------------------------------------- queue */

static Held *at(Group *g, size_t i) { return &g->v[(g->head + i) % g->cap]; }

static int push(Group *g, Held h) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 64;
    Held *v = malloc(cap * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < g->n; i++) v[i] = *at(g, i);
    free(g->v);
    g->v = v;
    g->cap = cap;
    g->head = 0;
  }
  *at(g, g->n++) = h;
  return 0;
}

static void held_free(Held *h) {
  json_decref(h->id);
  json_decref(h->reply);
  json_decref(h->event);
  json_decref(h->changes);
  free(h->blob);
  free(h->source);
  free(h->summary);
  memset(h, 0, sizeof *h);
}

int dgroup_holds(Daemon *D) { return D->group.n || D->group.restoring; }

int dgroup_waits(Daemon *D, uint64_t client) {
  for (size_t i = 0; i < D->group.n; i++)
    if (at(&D->group, i)->client == client) return 1;
  return 0;
}

/* ------------------------------------------------------------ outcomes */

static const char UNDONE[] =
  "the revision this call ran on could not be published, so it was undone, and this call with it: "
  "nothing of it was kept; retry it";

/* Answer a call that ran on state since undone. */
static void answer_undone(Daemon *D, Txn *t) {
  const char *reason = txn_reason_name(TXN_PUBLICATION_FAILED);
  devents_add(D, events_outcome(t->attempt, proto_op_name(t->op), reason, UNDONE));
  dclients_reply(D, t->responder, t->responder_id,
                 json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", reason, "outcome", reason, "message",
                           UNDONE, "generation", (json_int_t)D->gen));
  dlog_soon(D, "attempt %" PRIu64 " %s %s: ran on a revision that could not be published", t->attempt,
            proto_op_name(t->op), reason);
}

int dgroup_outcome(Daemon *D, Txn *t, json_t *m, const unsigned char *blob, size_t bloblen) {
  Group *g = &D->group;
  const char *reason = json_string_value(json_object_get(m, "reason"));
  int accepted = txn_reason_parse(reason) == TXN_ACCEPTED;
  int writes = accepted && !json_is_true(json_object_get(m, "committed"));
  if (g->restoring) {
    answer_undone(D, t);
    return 1;
  }
  if (!writes && !g->n) return 0;   /* nothing below it awaits durability */
  Held h = {t->attempt, t->responder, t->responder_id, t->t0, t->source, t->summary, NULL, NULL, NULL, NULL, 0, 0, 0,
            daemon_now()};
  /* The reply in the shape an unheld one has (dsched.c); revision,
  ** changes and generation are placeholders the commit fills in. */
  json_t *v;
  if (accepted) {
    h.reply = json_pack("{s:b, s:s, s:i, s:[]}", "ok", 1, "outcome", reason, "revision", 0, "changes");
    if ((v = json_object_get(m, "value"))) json_object_set(h.reply, "value", v);
    if ((v = json_object_get(m, "values"))) json_object_set(h.reply, "values", v);
    if (!writes) json_object_set_new(h.reply, "generation", json_integer(0));
    h.event = events_accepted(t->attempt, proto_op_name(t->op), 0, 0);
  } else {
    const char *msg = json_string_value(json_object_get(m, "message"));
    h.reply = json_pack("{s:b, s:s, s:s, s:s, s:i}", "ok", 0, "code", reason ? reason : "error", "outcome",
                        reason ? reason : "error", "message", msg ? msg : "", "generation", 0);
    h.event = events_outcome(t->attempt, proto_op_name(t->op), reason, msg ? msg : "");
  }
  if ((v = json_object_get(m, "output"))) json_object_set(h.reply, "output", v);
  dkeys_tag_event(D, h.event);   /* its idempotency key, durable with its outcome */
  if (writes) {
    h.changes = json_incref(json_object_get(m, "changes"));
    if (bloblen && (h.blob = malloc(bloblen))) memcpy(h.blob, blob, bloblen);
    h.bloblen = h.blob ? bloblen : 0;
  }
  if (!h.reply || !h.event || (writes && bloblen && !h.blob) || push(g, h) != 0) {
    h.id = NULL;   /* still the Txn's */
    h.source = h.summary = NULL;
    held_free(&h);
    dclients_reply_err(D, t->responder, t->responder_id, "busy", "the kernel is out of memory; retry later");
    if (writes) {  /* it cannot be held, so nothing on top of it may stand */
      dlog(D, "attempt %" PRIu64 ": out of memory holding its outcome; undoing the calls not yet durable",
           t->attempt);
      for (size_t i = g->committed; i < g->n; i++) {   /* those written stand */
        Held *o = at(g, i);
        dclients_reply_err(D, o->client, o->id, "busy", "the kernel is out of memory; retry later");
        held_free(o);
      }
      g->n = g->committed;
      g->restoring = 1;
      g->acks++;
      dworker_send(D, json_pack("{s:s}", "op", wire_op_name(WIRE_RESTORE)));
    }
    return 1;
  }
  t->responder_id = NULL;   /* now the held call's */
  t->source = t->summary = NULL;
  return 1;
}

/* ------------------------------------------------------------ publishing */

/* Per published revision: where its entries and events are, and what the
** store did with them. */
typedef struct Rev {
  size_t held;               /* its index in the group */
  size_t first, n;           /* its events: all[first..first+n) */
  size_t *slot;              /* per worker change: its index in effects */
  uint8_t *effects;
} Rev;

typedef struct Pub {
  Daemon *D;
  store_rev_info *infos;
  Rev *revs;
  size_t nrevs;
  uint64_t gen;              /* the generation before the group */
  uint64_t *held_rev, *held_gen;  /* per held call: the revision and generation it answers */
} Pub;

/* The store decided revision i: number the generations of the revisions
** written, and complete the events and the answers of it and of the calls
** after it (up to the next revision). */
static void decided(void *arg, size_t i, uint64_t rev, int changed) {
  Pub *p = arg;
  Group *g = &p->D->group;
  uint64_t gen = i == 0 ? p->gen : p->held_gen[p->revs[i - 1].held];
  if (changed) p->infos[i].generation = ++gen;
  size_t end = i + 1 < p->nrevs ? p->revs[i + 1].held : g->n;
  for (size_t k = p->revs[i].held; k < end; k++) {
    Held *h = at(g, k);
    p->held_rev[k] = rev;
    p->held_gen[k] = gen;
    json_object_set_new(h->event, "revision", json_integer((json_int_t)rev));
    json_object_set_new(h->event, "generation", json_integer((json_int_t)gen));
  }
}

/* The group v[committed..n) could not be published: nothing of it was
** written.  Its calls and everything the worker ran on top of them are
** undone; the groups before it, written, are not (the worker keeps them). */
static void failed(Daemon *D, const char *why) {
  Group *g = &D->group;
  const char *reason = txn_reason_name(TXN_PUBLICATION_FAILED);
  char msg[1200];
  snprintf(msg, sizeof msg, "publishing failed (%s), so this call was undone: nothing of it was kept; retry it", why);
  size_t k = g->n - g->committed;
  dlog(D, "publishing %zu call%s failed: %s; undoing them", k, k == 1 ? "" : "s", why);
  for (size_t i = g->committed; i < g->n; i++) {
    Held *h = at(g, i);
    devents_add(D, events_outcome(h->attempt, "call", reason, why));
    dclients_reply(D, h->client, h->id,
                   json_pack("{s:b, s:s, s:s, s:s, s:I}", "ok", 0, "code", reason, "outcome", reason, "message",
                             msg, "generation", (json_int_t)D->gen));
    held_free(h);
  }
  g->n = g->committed;
  g->restoring = 1;
  g->acks++;
  dworker_send(D, json_pack("{s:s}", "op", wire_op_name(WIRE_RESTORE)));
}

/* Complete held call i's reply with what its commit decided; it is sent
** once durable (answer). */
static void complete(Held *h, uint64_t rev, uint64_t gen, json_t *changes) {
  json_t *rep = h->reply;
  if (json_object_get(rep, "revision")) json_object_set_new(rep, "revision", json_integer((json_int_t)rev));
  if (changes) json_object_set_new(rep, "changes", changes);
  json_object_set_new(rep, "generation", json_integer((json_int_t)gen));
  h->rev = rev;
  h->gen = gen;
}

static void answer(Daemon *D);

/* Group v[committed..n) was written: it waits for its sync, in order
** behind the ones before. */
static void syncing(Daemon *D, uint64_t rev0, uint64_t gen0, uint64_t first_event, size_t nevents) {
  Group *g = &D->group;
  g->syncing[g->nsyncing++] = (Synced){g->n - g->committed, ++g->seq, rev0, gen0, first_event, nevents};
  g->committed = g->n;
  dsync_want(D, g->seq);
}

/* Calls the worker was sent and has not answered yet: finished in a
** moment, they can join the group about to be written. */
static int worker_busy(Daemon *D) { return D->batch.n || (D->cur.active && D->cur.grouped); }

double dgroup_due(Daemon *D) {
  Group *g = &D->group;
  if (g->n == g->committed || g->restoring) return -1;
  double d = at(g, g->committed)->held_at + GROUP_DELAY - daemon_now();
  return d > 0 ? d : 0;
}

void dgroup_publish(Daemon *D) {
  Group *g = &D->group;
  size_t c = g->committed;
  if (g->n == c || g->restoring || D->w.fd < 0 || g->nsyncing == GROUP_SYNCING_MAX) return;
  /* the calls the worker is finishing go with this group, unless the
  ** oldest held one has waited GROUP_DELAY: one sync for all of them */
  if (worker_busy(D) && dgroup_due(D) > 0) return;
  size_t nrevs = 0, nev = D->events.n + g->n, nchanges = 0;
  for (size_t i = c; i < g->n; i++)
    if (at(g, i)->changes) nrevs++, nchanges += json_array_size(at(g, i)->changes);
  if (!nrevs) {
    /* calls that wrote nothing, run on a group still syncing: answered
    ** with it, their events written with the next */
    for (size_t i = c; i < g->n; i++) {
      Held *h = at(g, i);
      complete(h, D->revision, D->gen, NULL);
      json_object_set_new(h->event, "revision", json_integer((json_int_t)D->revision));
      json_object_set_new(h->event, "generation", json_integer((json_int_t)D->gen));
      devents_add(D, json_incref(h->event));
    }
    if (g->nsyncing) {
      g->syncing[g->nsyncing - 1].n += g->n - c;
      g->committed = g->n;
    } else {   /* not held behind a write (cannot happen): durable already */
      g->syncing[g->nsyncing++] = (Synced){g->n - c, g->seq, D->revision, D->gen, 0, 0};
      g->committed = g->n;
      answer(D);
    }
    return;
  }
  Pub p = {D, NULL, NULL, nrevs, D->gen, NULL, NULL};
  store_rev_in *in = calloc(nrevs + 1, sizeof *in);
  p.infos = calloc(nrevs + 1, sizeof *p.infos);
  p.revs = calloc(nrevs + 1, sizeof *p.revs);
  p.held_rev = calloc(g->n, sizeof *p.held_rev);
  p.held_gen = calloc(g->n, sizeof *p.held_gen);
  json_t **all = calloc(nev, sizeof *all);
  int64_t *times = calloc(nev, sizeof *times);
  store_entry *ch = calloc(nchanges + 1, sizeof *ch);
  store_key *rm = calloc(nchanges + 1, sizeof *rm);
  size_t *slots = calloc(nchanges + 1, sizeof *slots);
  uint8_t *effects = calloc(nchanges + 1, 1);
  char err[1024] = "";
  int ok = in && p.infos && p.revs && p.held_rev && p.held_gen && all && times && ch && rm && slots && effects;
  if (!ok) snprintf(err, sizeof err, "out of memory publishing");
  /* The events: those buffered (started, ...) go first, with the first
  ** revision; then each call's outcome, after the revision it wrote or ran
  ** on (calls before the first revision ran on the group before: theirs
  ** go with the first too).  Each revision's entries and removals take the
  ** next stretch of ch / rm / effects, as long as its list of changes. */
  size_t ne = 0, nr = 0, used = 0;
  for (size_t i = 0; ok && i < D->events.n; i++) all[ne] = D->events.ev[i], times[ne++] = D->events.time_ms[i];
  for (size_t i = c; ok && i < g->n; i++) {
    Held *h = at(g, i);
    p.held_rev[i] = D->revision;   /* until a revision of this group decides */
    p.held_gen[i] = D->gen;
    if (h->changes) {
      Rev *r = &p.revs[nr];
      size_t nc, nrm;
      r->held = i;
      r->first = nr ? ne : 0;
      r->slot = slots + used;
      r->effects = effects + used;
      if (publish_entries(h->changes, h->blob, h->bloblen, ch + used, &nc, rm + used, &nrm, r->slot) != 0) {
        snprintf(err, sizeof err, "the worker reported a malformed change");
        ok = 0;
        break;
      }
      p.infos[nr] = (store_rev_info){STORE_REV_APPLICATION, p.gen, 0, JITI_VERSION, h->summary, NULL, D->grant_text};
      in[nr] = (store_rev_in){&p.infos[nr], ch + used, nc, rm + used, nrm, NULL, NULL, 0, 0, 0, r->effects};
      used += json_array_size(h->changes);
      nr++;
    } else if (!nr) {
      json_object_set_new(h->event, "revision", json_integer((json_int_t)D->revision));
      json_object_set_new(h->event, "generation", json_integer((json_int_t)D->gen));
    }
    all[ne] = h->event;
    times[ne++] = 0;
    if (nr) p.revs[nr - 1].n = ne - p.revs[nr - 1].first;
  }
  for (size_t i = 0; ok && i < nrevs; i++) {
    in[i].events = all + p.revs[i].first;
    in[i].event_times = times + p.revs[i].first;
    in[i].nevents = p.revs[i].n;
  }
#ifdef JITI_TEST_HOOKS
  /* jiti-testhooks only: JITI_TEST_FAIL_PUBLISH=N fails the Nth group as
  ** a store error would (the crash tests' undo path) */
  static int publishes;
  const char *fail = getenv("JITI_TEST_FAIL_PUBLISH");
  if (ok && fail && ++publishes == atoi(fail)) {
    snprintf(err, sizeof err, "store %s: the test hook failed this group", D->dir);
    ok = 0;
  }
#endif
  /* the meta page's sync is the sync thread's: the loop goes on meanwhile */
  if (ok && store_publish_group(D->s, D->revision, in, nrevs, STORE_GROUP_ABSENT_OK | STORE_GROUP_SYNC_LATER,
                                decided, &p) != STORE_OK) {
    snprintf(err, sizeof err, "%s", store_errmsg(D->s));
    ok = 0;
  }
  if (!ok) {
    failed(D, err);
  } else {
    /* written: the buffered events with it (the held calls' are theirs to
    ** free); subscribers get them all once durable */
    devents_written(D, 0);
    uint64_t rev0 = D->revision, gen0 = D->gen;
    D->revision = in[nrevs - 1].rev;
    D->gen = p.held_gen[g->n - 1];
    if (D->gen > D->gen_saved) D->gen_saved = D->gen;  /* recorded with the revisions */
    json_t *unchanged = json_array();
    for (size_t r = 0; r < nrevs; r++) {
      uint64_t prev = r ? in[r - 1].rev : rev0;
      if (in[r].rev == prev) json_array_append_new(unchanged, json_integer((json_int_t)r));
    }
    for (size_t i = c, r = 0; i < g->n; i++) {
      Held *h = at(g, i);
      json_t *changes = NULL;
      if (h->changes) {
        changes = publish_effects(h->changes, p.revs[r].slot, p.revs[r].effects);
        r++;
      }
      complete(h, p.held_rev[i], p.held_gen[i], changes);
    }
    g->commits++;
    g->revisions += nrevs;
    g->acks++;
    uint64_t first = in[0].first_event, last = in[nrevs - 1].first_event + in[nrevs - 1].nevents;
    syncing(D, rev0, gen0, first, first ? (size_t)(last - first) : 0);
    /* the worker keeps them now: they are in the store, whatever happens
    ** to the sync (a failed one stops the kernel).  After syncing(): a
    ** worker found dead by this send loses only the calls not written. */
    dworker_send(D, json_pack("{s:s, s:I, s:I, s:o}", "op", wire_op_name(WIRE_COMMIT), "revision",
                              (json_int_t)D->revision, "count", (json_int_t)nrevs, "unchanged", unchanged));
  }
  free(in);
  free(p.infos);
  free(p.revs);
  free(p.held_rev);
  free(p.held_gen);
  free(all);
  free(times);
  free(ch);
  free(rm);
  free(slots);
  free(effects);
}

/* The oldest group syncing is durable: its subscribers' events, then its
** answers. */
static void answer(Daemon *D) {
  Group *g = &D->group;
  Synced y = g->syncing[0];
  memmove(g->syncing, g->syncing + 1, (g->nsyncing - 1) * sizeof *g->syncing);
  g->nsyncing--;
  devents_tell(D, y.first_event, y.nevents);
  for (size_t i = 0; i < y.n; i++) {
    Held *h = at(g, 0);
    json_t *rep = h->reply;
    h->reply = NULL;
    char src[80];
    request_snippet(h->source, src, sizeof src);
    dlog_soon(D, "attempt %" PRIu64 " call %s (%.1f ms, generation %" PRIu64 ") -> revision %" PRIu64 ": %s",
              h->attempt, json_string_value(json_object_get(rep, "outcome")), (daemon_now() - h->t0) * 1000, h->gen,
              h->rev, src);
    dclients_reply(D, h->client, h->id, rep);
    held_free(h);
    g->head = (g->head + 1) % g->cap;
    g->n--;
    g->committed--;
  }
  if (!g->n) g->head = 0;
}

void dgroup_synced(Daemon *D) {
  Group *g = &D->group;
  uint64_t done;
  char err[1024] = "";
  if (dsync_done(D, &done, err, sizeof err) != 0) {
    /* the disk's state is unknown: nothing more may be written or
    ** answered.  The clients waiting lose their connections; recovery
    ** starts from what the disk kept. */
    dlog(D, "%s; stopping at once", err);
    dlog_flush(D);
    _exit(EXIT_FAIL);
  }
  while (g->nsyncing && g->syncing[0].seq <= done) answer(D);
  dlog_flush(D);
}

void dgroup_sync_later(Daemon *D) { dsync_want(D, ++D->group.seq); }

void dgroup_durable(Daemon *D, uint64_t *rev, uint64_t *gen) {
  Group *g = &D->group;
  *rev = g->nsyncing ? g->syncing[0].rev0 : D->revision;
  *gen = g->nsyncing ? g->syncing[0].gen0 : D->gen;
}

/* ---------------------------------------------------------------- acks */

int dgroup_ack(Daemon *D, json_t *m, int ev) {
  Group *g = &D->group;
  if (!g->acks || (ev != WIRE_COMMITTED && ev != WIRE_RESTORED)) return 0;
  g->acks--;
  json_t *gen = json_object_get(m, "generation");
  if (json_is_integer(gen) && (uint64_t)json_integer_value(gen) > D->gen) D->gen = (uint64_t)json_integer_value(gen);
  const char *st = json_string_value(json_object_get(m, "status"));
  if (st) snprintf(D->wstatus, sizeof D->wstatus, "%s", st);
  if (ev == WIRE_RESTORED) g->restoring = 0;
  return 1;
}

void dgroup_worker_died(Daemon *D, const char *how) {
  Group *g = &D->group;
  /* the groups written stand (a fresh worker imports them) and are
  ** answered once synced; the calls after them are lost */
  for (size_t i = g->committed; i < g->n; i++) {
    Held *h = at(g, i);
    json_t *ev = events_outcome(h->attempt, "call", store_event_name(STORE_EV_INTERRUPTED), NULL);
    json_object_set_new(ev, "reason", json_string(how));
    devents_add(D, ev);
    dclients_reply_err(D, h->client, h->id, "interrupted",
                       "the worker %s before this call's revision was published; nothing of it was kept", how);
    held_free(h);
  }
  g->n = g->committed;
  if (!g->n) g->head = 0;
  g->restoring = 0;
  g->acks = 0;
}
