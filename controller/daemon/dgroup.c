/*
** dgroup.c — group commit of the application calls (daemon.h,
** docs/transactions.md "Group commit", docs/protocol.md).
**
** A writing call's revision must be durable before its client hears of it,
** and a durable commit costs a disk sync or two.  So the worker does not
** wait for it: a call without a generation that the worker accepted stays
** open in the worker (txn_set_stacking: each in its own checkpoint, on top
** of the ones before) while the worker goes on with the next calls, and its
** outcome is *held* here.  Whenever the store writer (dsync.c) is free,
** everything held is handed to it, to be published in one store
** transaction (store_publish_group) — each call still its own revision,
** with its own number, manifest, generation and events, in the order they
** ran — and then, durable, answered; the worker is told to keep them
** ("commit" with their count).  What comes of each call — held, completed,
** answered — is dcall.c's; this file writes the groups.  Calls the worker finishes while that
** transaction is written and synced are the next group.
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
#include "replica.h"
#include "txn.h"

/* ---------------------------------------------------------------- queue */

Held *dgroup_at(Group *g, size_t i) { return &g->v[(g->head + i) % g->cap]; }
#define at dgroup_at

int dgroup_push(Group *g, Held h) {
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

void dgroup_held_free(Held *h) {
  json_decref(h->id);
  json_decref(h->out.m);
  free(h->reply.buf);
  free(h->event);
  json_decref(h->changes);
  free(h->blob);
  free(h->source);
  free(h->summary);
  dtraffic_call_free(h->traffic);
  memset(h, 0, sizeof *h);
}

int dgroup_holds(Daemon *D) { return D->group.n || D->group.restoring; }

int dgroup_waits(Daemon *D, uint64_t client) {
  for (size_t i = 0; i < D->group.n; i++)
    if (at(&D->group, i)->client == client) return 1;
  return 0;
}

/* ------------------------------------------------------------ publishing */

/* Per published revision: where its entries and events are, and what the
** store did with them. */
typedef struct Rev {
  size_t held;               /* its call's index in the group */
  size_t first, n;           /* its events: all[first..first+n) */
  size_t *slot;              /* per worker change: its index in effects */
  uint8_t *effects;
} Rev;

/* A held call's outcome event, open (Held.event): the writer thread's
** copy, as the FIFO of held calls may move while it writes. */
typedef struct OpenEv { const char *text; size_t len, split; } OpenEv;

/* A group handed to the store writer (dsync.c).  It owns everything the
** writer thread touches — decided() included — so that the loop may go on
** holding calls (the FIFO may move) while it is written.  Its calls are
** v[committed..committed+ncalls) of the FIFO. */
typedef struct Pub {
  DWrite w;                  /* first: the writer's handle on it */
  uint64_t parent;           /* the revision it is written on */
  size_t ncalls, nrevs, nbuffered;
  uint64_t gen;              /* the generation before the group */
  uint64_t restarts;         /* the worker it ran in (Daemon.restarts) */
  store_rev_in *in;
  store_rev_info *infos;
  Rev *revs;
  OpenEv *hev;               /* per call: its outcome event's open text (Held.event) */
  size_t *evat;              /* per call: its event's index in all */
  size_t nall;
  uint64_t *held_rev, *held_gen;  /* per call: the revision and generation it answers */
  store_ev *all;             /* the events: nbuffered buffered ones (owned), then the calls' */
  store_entry *ch;
  store_key *rm;
  size_t *slots;
  uint8_t *effects;
  size_t *unchanged;         /* per revision: the indexes of those the store had already */
  DTraffic traffic;          /* calls for the traffic sample: those waiting, then
                                the group's own; written after its revisions */
  DRepl *repl;               /* replicated: committed to etcd before it is synced */
  char fence[600];           /* why etcd did not take it (the kernel is fenced) */
  int uncertain;             /* etcd gave no answer: nothing more may be answered */
  int fenced;                /* the world is no longer this kernel's: its calls are answered `fenced` */
#ifdef JITI_TEST_HOOKS
  int fail_in_store;         /* JITI_TEST_FAIL_PUBLISH=N:store */
#endif
} Pub;

static void pub_free(Pub *p) {
  if (!p) return;
  for (size_t i = 0; i < p->traffic.n; i++) dtraffic_call_free(p->traffic.v[i]);
  free(p->traffic.v);
  for (size_t i = 0; p->all && i < p->nall; i++) {   /* the buffered events', the calls' texts */
    json_decref(p->all[i].obj);
    free((char *)p->all[i].members);
  }
  free(p->evat);
  free(p->in);
  free(p->infos);
  free(p->revs);
  free(p->hev);
  free(p->held_rev);
  free(p->held_gen);
  free(p->all);
  free(p->ch);
  free(p->rm);
  free(p->slots);
  free(p->effects);
  free(p->unchanged);
  free(p);
}

/* Write held call h's outcome event, closed with its revision and
** generation, into e (again when the store calls decided() again).  Out of
** memory, it stays empty: the store writes {} rather than lose the seq. */
static void close_event(store_ev *e, OpenEv o, uint64_t rev, uint64_t gen) {
  free((char *)e->members);
  e->members = NULL;
  e->len = 0;
  if (o.text) e->members = events_text_close(o.text, o.len, o.split, rev, gen, &e->len);
}

static OpenEv open_of(const Held *h) { return (OpenEv){h->event, h->event_len, h->event_split}; }

/* The store decided revision i (on the writer thread): number the
** generations of the revisions written, and complete the events and the
** answers of it and of the calls after it (up to the next revision). */
static void decided(void *arg, size_t i, uint64_t rev, int changed) {
  Pub *p = arg;
  uint64_t gen = i == 0 ? p->gen : p->held_gen[p->revs[i - 1].held];
  if (changed) p->infos[i].generation = ++gen;
  size_t end = i + 1 < p->nrevs ? p->revs[i + 1].held : p->ncalls;
  for (size_t k = p->revs[i].held; k < end; k++) {
    p->held_rev[k] = rev;
    p->held_gen[k] = gen;
    if (p->evat[k] != SIZE_MAX) close_event(&p->all[p->evat[k]], p->hev[k], rev, gen);
  }
}

static void answer(Daemon *D);

/* The next n held calls were written in commit seq: they wait for its
** sync, in order behind the ones before. */
static void syncing(Daemon *D, size_t n, uint64_t seq, uint64_t rev0, uint64_t gen0, uint64_t first_event,
                    size_t nevents) {
  Group *g = &D->group;
  g->syncing[g->nsyncing++] = (Synced){n, seq, rev0, gen0, first_event, nevents};
  g->committed += n;
  dsync_want(D, seq);
}

/* Calls that wrote nothing, run on a group still syncing: answered with
** it, their events written with the next. */
static void ride_along(Daemon *D) {
  Group *g = &D->group;
  size_t c = g->committed;
  for (size_t i = c; i < g->n; i++) {
    Held *h = at(g, i);
    dcall_complete(h, D->revision, D->gen, NULL, NULL);
    dcall_held_event(D, h, D->revision, D->gen, 0);
    dtraffic_add(D, h->traffic);   /* with the next write */
    h->traffic = NULL;
  }
  if (g->nsyncing) {
    g->syncing[g->nsyncing - 1].n += g->n - c;
    g->committed = g->n;
  } else {   /* not held behind a write (cannot happen): durable already */
    g->syncing[g->nsyncing++] = (Synced){g->n - c, g->seq, D->revision, D->gen, 0, 0};
    g->committed = g->n;
    answer(D);
  }
}

/* Build the group of the held calls v[committed..n) for the writer: the
** events buffered (started, ...) first, with the first revision; then each
** call's outcome, after the revision it wrote or ran on (calls before the
** first revision ran on the group before: theirs go with the first too).
** Each revision's entries and removals take the next stretch of ch / rm /
** effects, as long as its list of changes.  NULL, err set, on failure. */
static Pub *prepare(Daemon *D, size_t nrevs, size_t nchanges, char *err, size_t errlen) {
  Group *g = &D->group;
  size_t c = g->committed, ncalls = g->n - c, nev = D->events.n + ncalls;
  Pub *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory publishing");
    return NULL;
  }
  p->ncalls = ncalls;
  p->nrevs = nrevs;
  p->gen = D->gen;
  p->restarts = D->restarts;
  p->in = calloc(nrevs, sizeof *p->in);
  p->infos = calloc(nrevs, sizeof *p->infos);
  p->revs = calloc(nrevs, sizeof *p->revs);
  p->hev = calloc(ncalls, sizeof *p->hev);
  p->evat = calloc(ncalls, sizeof *p->evat);
  p->held_rev = calloc(ncalls, sizeof *p->held_rev);
  p->held_gen = calloc(ncalls, sizeof *p->held_gen);
  p->all = calloc(nev, sizeof *p->all);
  p->ch = calloc(nchanges + 1, sizeof *p->ch);
  p->rm = calloc(nchanges + 1, sizeof *p->rm);
  p->slots = calloc(nchanges + 1, sizeof *p->slots);
  p->effects = calloc(nchanges + 1, 1);
  p->unchanged = calloc(nrevs, sizeof *p->unchanged);
  if (!p->unchanged || !p->in || !p->infos || !p->revs || !p->hev || !p->evat || !p->held_rev || !p->held_gen || !p->all ||
      !p->ch || !p->rm || !p->slots || !p->effects) {
    snprintf(err, errlen, "out of memory publishing");
    pub_free(p);
    return NULL;
  }
  size_t ne = 0, nr = 0, used = 0;
  for (EventBuf *b = &D->events; ne < b->n; ne++)
    p->all[ne] = (store_ev){b->ev[ne], b->text[ne], b->len[ne], b->time_ms[ne]};
  p->nall = ne;
  for (size_t k = 0; k < ncalls; k++) {
    Held *h = at(g, c + k);
    p->hev[k] = open_of(h);
    p->held_rev[k] = D->revision;   /* until a revision of this group decides */
    p->held_gen[k] = D->gen;
    if (h->changes) {
      Rev *r = &p->revs[nr];
      size_t nc, nrm;
      r->held = k;
      r->first = nr ? ne : 0;
      r->slot = p->slots + used;
      r->effects = p->effects + used;
      if (publish_entries(h->changes, h->blob, h->bloblen, p->ch + used, &nc, p->rm + used, &nrm, r->slot) != 0) {
        snprintf(err, errlen, "the worker reported a malformed change");
        memset(p->all, 0, D->events.n * sizeof *p->all);   /* the buffered events stay D's */
        pub_free(p);
        return NULL;
      }
      p->infos[nr] = (store_rev_info){STORE_REV_APPLICATION, p->gen, 0, JITI_VERSION, h->summary, NULL, D->grant_text};
      p->in[nr] = (store_rev_in){&p->infos[nr], p->ch + used, nc, p->rm + used, nrm, NULL, 0, 0, 0, r->effects};
      used += json_array_size(h->changes);
      nr++;
    }
    if (h->quiet) {   /* no event: written() keeps its key's record */
      p->evat[k] = SIZE_MAX;
      continue;
    }
    p->evat[k] = ne;
    p->all[ne] = (store_ev){0};   /* a call after a revision: decided() writes it */
    if (!nr) close_event(&p->all[ne], p->hev[k], D->revision, D->gen);
    p->nall = ++ne;
    if (nr) p->revs[nr - 1].n = ne - p->revs[nr - 1].first;
  }
  for (size_t i = 0; i < nrevs; i++) {
    p->in[i].events = p->all + p->revs[i].first;
    p->in[i].nevents = p->revs[i].n;
  }
  /* the buffered events are the group's now (it gives them back if it fails) */
  p->nbuffered = D->events.n;
  D->events.n = 0;
  /* the calls waiting for the traffic sample, then the group's: written
  ** after its revisions, and only if they are */
  dtraffic_take(D, &p->traffic);
  for (size_t k = 0; k < ncalls; k++) {
    Held *h = at(g, c + k);
    dtraffic_push(D, &p->traffic, h->traffic);
    h->traffic = NULL;
  }
  return p;
}

static int write_group(store_env *s, DWrite *w);
static void written(Daemon *D, DWrite *w);

void dgroup_publish(Daemon *D) {
  Group *g = &D->group;
  size_t c = g->committed;
  /* Everything held goes as soon as the writer is free: while it writes
  ** and syncs one group, the outcomes that come in are the next (a slow
  ** disk gives larger groups), and the clients answered meanwhile send
  ** their next calls, which the worker runs meanwhile. */
  if (g->n == c || g->restoring || D->live.w.fd < 0 || g->nsyncing == GROUP_SYNCING_MAX || dsync_busy(D) ||
      g->acks >= GROUP_ACKS_MAX)
    return;
  if (D->fenced) {   /* the world is another kernel's now: nothing more is written */
    dcall_group_failed(D, c, D->fence_why, 1, D->fence_lost);
    return;
  }
  size_t nrevs = 0, nchanges = 0;
  for (size_t i = c; i < g->n; i++)
    if (at(g, i)->changes) nrevs++, nchanges += json_array_size(at(g, i)->changes);
  if (!nrevs) {
    ride_along(D);
    return;
  }
  char err[1024] = "";
  Pub *p = prepare(D, nrevs, nchanges, err, sizeof err);
#ifdef JITI_TEST_HOOKS
  /* jiti-testhooks only: JITI_TEST_FAIL_PUBLISH=N fails the Nth group as
  ** a store error would (the crash tests' undo path); N:store makes the
  ** store fail it after its puts (publish_failing) */
  static int publishes;
  const char *fail = getenv("JITI_TEST_FAIL_PUBLISH");
  int nth = p && fail && ++publishes == atoi(fail);
  if (nth && strstr(fail, ":store")) p->fail_in_store = 1;
  else if (nth) {
    devents_put_back(D, p->all, p->nbuffered);   /* theirs again */
    memset(p->all, 0, p->nbuffered * sizeof *p->all);
    p->nbuffered = 0;
    pub_free(p);
    p = NULL;
    snprintf(err, sizeof err, "store %s: the test hook failed this group", D->dir);
  }
#endif
  if (!p) {
    dcall_group_failed(D, c, err, 1, 0);
    return;
  }
  p->parent = D->revision;
  p->repl = D->repl;
  p->w = (DWrite){write_group, written, ++g->seq, STORE_OK, "", D->subscribers > 0, {0}};
  g->writing = p->ncalls;
  dsync_write(D, &p->w);
}

#ifdef JITI_TEST_HOOKS
/* jiti-testhooks only: the group as it is, but its last revision also
** removes a key no map has, and absent keys are refused: the store fails
** the group after writing the rest of it, and has to take that back. */
static int publish_failing(store_env *s, Pub *p) {
  store_rev_in *last = &p->in[p->nrevs - 1], saved = *last;
  store_key *rm = malloc((last->nremoved + 1) * sizeof *rm);
  if (!rm) return STORE_ENOMEM;
  if (last->nremoved) memcpy(rm, last->removed, last->nremoved * sizeof *rm);
  rm[last->nremoved] = (store_key){STORE_DATA, "jiti-test-never-there"};
  last->removed = rm;
  last->nremoved++;
  last->effects = NULL;   /* sized for the group as it is */
  int rc = store_publish_group(s, p->parent, p->in, p->nrevs, STORE_GROUP_SYNC_LATER, decided, p);
  *last = saved;
  free(rm);
  return rc;
}
#endif

/* On the writer thread; the meta page's sync is the writer's too. */
static int write_group(store_env *s, DWrite *w) {
  Pub *p = (Pub *)w;
#ifdef JITI_TEST_HOOKS
  if (p->fail_in_store) return publish_failing(s, p);
#endif
  /* replicated: a kernel whose lease may have lapsed writes nothing */
  if (!drepl_may_write(p->repl)) {
    snprintf(p->fence, sizeof p->fence, "fenced: this kernel's lease was not renewed in time");
    p->fenced = 1;
    return STORE_EPERM;
  }
  int rc = store_publish_group(s, p->parent, p->in, p->nrevs, STORE_GROUP_ABSENT_OK | STORE_GROUP_SYNC_LATER,
                               decided, p);
  /* then to etcd, before the sync that acknowledges it; if etcd did not
     take it, nothing of it is answered and the kernel stops (its store,
     which holds the group, is no longer the world's) */
  if (rc == STORE_OK && p->repl && p->in[p->nrevs - 1].rev > p->parent) {
    /* each written revision's events: the keyed outcomes go with it */
    replica_Events *ev = calloc(p->nrevs, sizeof *ev);
    size_t nw = 0;
    for (size_t i = 0; ev && i < p->nrevs; i++)
      if (p->in[i].rev > (i ? p->in[i - 1].rev : p->parent)) ev[nw++] = (replica_Events){p->in[i].first_event, p->in[i].nevents};
    int c = ev ? drepl_commit(p->repl, s, p->parent + 1, p->in[p->nrevs - 1].rev, ev, p->fence, sizeof p->fence) : -1;
    if (!ev) snprintf(p->fence, sizeof p->fence, "out of memory replicating a group");
    free(ev);
    if (c) {
      p->uncertain = c == -2;
      p->fenced = c == DREPL_FENCED;
      return STORE_EPERM;
    }
  }
  if (rc == STORE_OK) {   /* for the subscribers: else the store is read */
    uint64_t first = p->in[0].first_event, last = p->in[p->nrevs - 1].first_event + p->in[p->nrevs - 1].nevents;
    (void)devents_read_back(s, w, first, first ? (size_t)(last - first) : 0);
    /* its calls' sample: journaled behind the revisions, made durable by
    ** the same sync; a refusal (logged) costs the group nothing */
    (void)dtraffic_write(s, &p->traffic, STORE_GROUP_SYNC_LATER);
  }
  return rc;
}

/* Back on the loop: the writer is done with the group. */
static void written(Daemon *D, DWrite *w) {
  Pub *p = (Pub *)w;
  Group *g = &D->group;
  size_t c = g->committed;
  int same_worker = p->restarts == D->restarts;
  g->writing = 0;
  devents_stored(D, w);   /* told when the group is durable, or before by a later write */
  dtraffic_done(D, &p->traffic, p->w.rc == STORE_OK);   /* (undone calls: not recorded) */
  if (p->w.rc != STORE_OK) {
    /* nothing of it was written: its buffered events wait for the next
    ** write, its calls are undone (a worker started since has none of it) */
    devents_put_back(D, p->all, p->nbuffered);   /* theirs again */
    memset(p->all, 0, p->nbuffered * sizeof *p->all);
    p->nbuffered = 0;
    if (p->uncertain) drepl_uncertain(D, p->fence);
    const char *why = p->fence[0] ? p->fence : p->w.err;
    dcall_group_failed(D, c, why, same_worker, p->fenced);
    if (p->fence[0]) drepl_fence(D, p->fence, p->fenced);
    pub_free(p);
    return;
  }
  uint64_t rev0 = D->revision, gen0 = D->gen;
  size_t nrevs = p->nrevs;
  D->revision = p->in[nrevs - 1].rev;
  if (p->held_gen[p->ncalls - 1] > D->gen) D->gen = p->held_gen[p->ncalls - 1];
  if (D->gen > D->gen_saved) D->gen_saved = D->gen;  /* recorded with the revisions */
  size_t nunchanged = 0, *unchanged = p->unchanged;
  for (size_t r = 0; r < nrevs; r++) {
    uint64_t prev = r ? p->in[r - 1].rev : rev0;
    if (p->in[r].rev == prev) unchanged[nunchanged++] = r;
  }
  for (size_t k = 0, r = 0; k < p->ncalls; k++) {
    Held *h = at(g, c + k);
    Rev *rv = h->changes ? &p->revs[r++] : NULL;   /* the revision it wrote */
    dcall_complete(h, p->held_rev[k], p->held_gen[k], rv ? rv->slot : NULL, rv ? rv->effects : NULL);
    dcall_held_event(D, h, p->held_rev[k], p->held_gen[k], 1);   /* (its event went with the group) */
  }
  g->commits++;
  g->revisions += nrevs;
  uint64_t first = p->in[0].first_event, last = p->in[nrevs - 1].first_event + p->in[nrevs - 1].nevents;
  syncing(D, p->ncalls, p->w.seq, rev0, gen0, first, first ? (size_t)(last - first) : 0);
  /* the worker keeps them now: they are in the store, whatever happens to
  ** the sync (a failed one stops the kernel).  A worker started since the
  ** group was handed over imported them from the store already. */
  if (same_worker) dcall_commit_group(D, nrevs, unchanged, nunchanged);
  pub_free(p);
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
    dcall_answer(D, h);
    dgroup_held_free(h);
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
  dsync_settle(D);
  while (g->nsyncing && g->syncing[0].seq <= done) answer(D);
  dlog_flush(D);
}

static void synced_ready(void *ud, int fd, unsigned r) {
  (void)fd;
  if (r & DPOLL_IN) dgroup_synced(ud);
}

int dgroup_watch(Daemon *D) { return dpoll_add(D->poll, dsync_fd(D), DPOLL_IN, RANK_SYNC, synced_ready, D); }

double dgroup_before(void *ud, double now) {
  (void)now;
  /* Everything the worker finished ahead of the durable revisions, in one
  ** store transaction; what it finishes meanwhile is the next group. */
  dgroup_publish(ud);
  return -1;
}

void dgroup_durable(Daemon *D, uint64_t *rev, uint64_t *gen) {
  Group *g = &D->group;
  *rev = g->nsyncing ? g->syncing[0].rev0 : D->revision;
  *gen = g->nsyncing ? g->syncing[0].gen0 : D->gen;
}

/* ---------------------------------------------------------------- acks */

int dgroup_ack(Daemon *D, json_t *m, int ev) {
  Group *g = &D->group;
  if (!g->acks || (ev != WIRE_COMMITTED && ev != WIRE_RESTORED)) return 0;
  g->acks--;   /* its generation vouched for (dvouch.c) */
  json_t *gen = json_object_get(m, "generation");
  if (json_is_integer(gen) && (uint64_t)json_integer_value(gen) > D->gen) D->gen = (uint64_t)json_integer_value(gen);
  const char *st = json_string_value(json_object_get(m, "status"));
  if (st) snprintf(D->live.status, sizeof D->live.status, "%s", st);
  if (ev == WIRE_RESTORED) g->restoring = 0;
  return 1;
}

void dgroup_worker_died(Daemon *D, const char *how) {
  Group *g = &D->group;
  /* the groups written stand (a fresh worker imports them) and are
  ** answered once synced, and so does a group being written, if its
  ** write succeeds; the calls after them are lost */
  for (size_t i = g->committed + g->writing; i < g->n; i++) {
    Held *h = at(g, i);
    dcall_held_lost(D, h, how);
    dgroup_held_free(h);
  }
  g->n = g->committed + g->writing;
  if (!g->n) g->head = 0;
  g->restoring = 0;
  g->acks = 0;
  g->ackhead = 0;
}

void dgroup_check(Daemon *D) {
  const Group *g = &D->group;
  DAEMON_ASSERT(g->committed + g->writing <= g->n);
  DAEMON_ASSERT(g->n <= g->cap);
  DAEMON_ASSERT(!g->cap || g->head < g->cap);
  DAEMON_ASSERT(g->nsyncing <= GROUP_SYNCING_MAX);
  size_t covered = 0;
  for (size_t i = 0; i < g->nsyncing; i++) {
    covered += g->syncing[i].n;
    DAEMON_ASSERT(g->syncing[i].seq <= g->seq);
    DAEMON_ASSERT(i == 0 || g->syncing[i - 1].seq <= g->syncing[i].seq);
  }
  DAEMON_ASSERT(covered == g->committed);
  DAEMON_ASSERT(g->acks >= 0 && (size_t)g->acks <= GROUP_ACKS_MAX);
  DAEMON_ASSERT(g->ackhead < GROUP_ACKS_MAX);
  DAEMON_ASSERT(!g->writing || dsync_busy(D));
}
