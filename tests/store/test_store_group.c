/* test_store_group.c — several revisions in one write transaction
** (store_publish_group): numbering, manifests chained inside the group,
** deltas against the revision before (not against CURRENT), revisions that
** change nothing, events and the per-revision callback, all-or-nothing on
** every kind of refusal, map growth in the middle of a group, and that the
** history of a grouped store verifies and rebuilds like any other. */
#include "st_test.h"
#include <jansson.h>
#include <signal.h>


/* The events from seq on, as "event:attempt[:revision]," text. */
static int ev_collect(void *arg, uint64_t seq, const char *json, size_t len) {
  st_coll *c = arg;
  json_t *o = json_loadb(json, len, 0, NULL);
  json_t *r = json_object_get(o, "revision");
  char rev[32] = "";
  if (r) snprintf(rev, sizeof rev, ":%lld", (long long)json_integer_value(r));
  int w = snprintf(c->buf + c->n, sizeof c->buf - c->n, "%s:%lld%s,",
                   json_string_value(json_object_get(o, "event")),
                   (long long)json_integer_value(json_object_get(o, "attempt")), rev);
  (void)seq;
  if (w > 0 && (size_t)w < sizeof c->buf - c->n) c->n += (size_t)w;
  json_decref(o);
  return 0;
}

static const char *events_from(store_env *s, uint64_t from, st_coll *c) {
  c->n = 0;
  c->buf[0] = '\0';
  if (store_events_read(s, from, 0, 0, ev_collect, c) != STORE_OK) return "(error)";
  return c->buf;
}

static uint64_t current(store_env *s) {
  uint64_t c = 0;
  CHECK(store_current(s, &c) == STORE_OK);
  return c;
}

static uint64_t last_event(store_env *s) {
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK);
  return st.last_event;
}

/* The callback: the "accepted" event of revision i names its revision. */
typedef struct acc { json_t *ev[8]; int calls; uint64_t revs[8]; int changed[8]; } acc;

static void on_rev(void *arg, size_t i, uint64_t rev, int changed) {
  acc *a = arg;
  a->calls++;
  a->revs[i] = rev;
  a->changed[i] = changed;
  if (a->ev[i]) json_object_set_new(a->ev[i], "revision", json_integer((json_int_t)rev));
}

/* The events of the revisions built below, as store_ev (a test's few). */
static store_ev ev_pool[512];
static size_t ev_used;

static const store_ev *evs_of(json_t *const *ev, size_t nev) {
  if (!nev) return NULL;
  CHECK(ev_used + nev <= sizeof ev_pool / sizeof ev_pool[0]);
  store_ev *e = &ev_pool[ev_used];
  for (size_t i = 0; i < nev; i++) e[i] = (store_ev){ev[i], NULL, 0, 0};
  ev_used += nev;
  return e;
}

static store_rev_in rev_in(const store_rev_info *info, const store_entry *ch, size_t nch,
                           const store_key *rm, size_t nrm, json_t *const *ev, size_t nev) {
  store_rev_in r = { info, ch, nch, rm, nrm, evs_of(ev, nev), nev, 0, 0, NULL };
  return r;
}

static void test_group(void) {
  char dir[4096], err[1024];
  store_env *s;
  st_coll c;
  store_manifest *m;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_rev_info i0 = info_of(STORE_REV_INITIAL, 1, "initial");
  store_entry base[] = { ent(STORE_FUNCTION, "f", "(defun f () 0)"), ent(STORE_DATA, "k", "0") };
  CHECK(store_publish(s, 0, &i0, base, 2, NULL, 0, NULL) == STORE_OK);

  /* Four revisions: f=1; f=2 and k removed; nothing (f=2 again); k back. */
  store_rev_info a = info_of(STORE_REV_APPLICATION, 2, "one"), b = info_of(STORE_REV_APPLICATION, 3, "two"),
                 n = info_of(STORE_REV_APPLICATION, 4, "none"), d = info_of(STORE_REV_ACTION, 5, "four");
  store_entry ea = ent(STORE_FUNCTION, "f", "(defun f () 1)"), eb = ent(STORE_FUNCTION, "f", "(defun f () 2)"),
              ed = ent(STORE_DATA, "k", "4");
  store_key kb = { STORE_DATA, "k" };
  acc ac = { { NULL }, 0, { 0 }, { 0 } };
  json_t *started[4], *accepted[4];
  for (int i = 0; i < 4; i++) {
    started[i] = json_pack("{s:s, s:i}", "event", "started", "attempt", 10 + i);
    accepted[i] = json_pack("{s:s, s:i}", "event", "accepted", "attempt", 10 + i);
    ac.ev[i] = accepted[i];
  }
  json_t *e0[] = { started[0], accepted[0] }, *e1[] = { started[1], accepted[1] },
         *e2[] = { started[2], accepted[2] }, *e3[] = { started[3], accepted[3] };
  store_rev_in g[] = { rev_in(&a, &ea, 1, NULL, 0, e0, 2), rev_in(&b, &eb, 1, &kb, 1, e1, 2),
                       rev_in(&n, &eb, 1, NULL, 0, e2, 2), rev_in(&d, &ed, 1, NULL, 0, e3, 2) };
  uint8_t fx[4][2];
  memset(fx, 0xff, sizeof fx);
  for (int i = 0; i < 4; i++) g[i].effects = fx[i];
  uint64_t ev_before = last_event(s);
  CHECK(store_publish_group(s, 1, g, 4, 0, on_rev, &ac) == STORE_OK);
  CHECK(fx[0][0] == STORE_REPLACED && fx[1][0] == STORE_REPLACED && fx[1][1] == STORE_REMOVED &&
        fx[2][0] == STORE_SAME && fx[3][0] == STORE_ADDED);
  CHECK(current(s) == 4);
  CHECK(g[0].rev == 2 && g[1].rev == 3 && g[2].rev == 3 && g[3].rev == 4);
  CHECK(ac.calls == 4 && ac.revs[0] == 2 && ac.revs[2] == 3 && ac.revs[3] == 4);
  CHECK(ac.changed[0] && ac.changed[1] && !ac.changed[2] && ac.changed[3]);
  CHECK(g[0].first_event == ev_before + 1 && g[1].first_event == ev_before + 3 &&
        g[2].first_event == ev_before + 5 && g[3].first_event == ev_before + 7);
  CHECK_STR(events_from(s, ev_before + 1, &c),
            "started:10,accepted:10:2,started:11,accepted:11:3,started:12,accepted:12:3,"
            "started:13,accepted:13:4,");
  /* Each its own revision, chained, its delta against the one before. */
  CHECK(store_manifest_read(s, 2, &m) == STORE_OK);
  CHECK(m->parent == 1 && m->generation == 2 && m->kind == STORE_REV_APPLICATION && m->nchanges == 1 &&
        m->nentries == 2);
  CHECK_STR(m->summary, "one");
  store_free(m);
  CHECK(store_manifest_read(s, 3, &m) == STORE_OK);
  CHECK(m->parent == 2 && m->generation == 3 && m->nchanges == 2 && m->nentries == 1);
  {
    uint8_t h1[32];
    CHECK(store_entry_hash(&ea, h1, NULL) == STORE_OK);
    /* f's old hash is revision 2's f, not CURRENT's (revision 1's) */
    CHECK(m->changes[0].kind == STORE_FUNCTION && memcmp(m->changes[0].old_hash, h1, 32) == 0);
    CHECK(m->changes[1].kind == STORE_DATA && !m->changes[1].new_hash[0] && !m->changes[1].new_hash[31]);
  }
  store_free(m);
  CHECK(store_manifest_read(s, 4, &m) == STORE_OK);
  CHECK(m->parent == 3 && m->generation == 5 && m->kind == STORE_REV_ACTION && m->nentries == 2);
  CHECK_STR(m->summary, "four");
  store_free(m);
  CHECK(store_manifest_read(s, 5, &m) == STORE_ENOENT);
  CHECK_STR(st_map_of(s, 2, &c), "function f=(defun f () 1);data k=0;");
  CHECK_STR(st_map_of(s, 3, &c), "function f=(defun f () 2);");
  CHECK_STR(st_map_of(s, 4, &c), "function f=(defun f () 2);data k=4;");
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);

  /* A group whose revisions change nothing and carry no events writes
  ** nothing; with events, only the events. */
  store_rev_in same[] = { rev_in(&a, &ed, 1, NULL, 0, NULL, 0), rev_in(&b, &eb, 1, NULL, 0, NULL, 0) };
  ev_before = last_event(s);
  CHECK(store_publish_group(s, 4, same, 2, 0, NULL, NULL) == STORE_OK);
  CHECK(current(s) == 4 && same[0].rev == 4 && same[1].rev == 4 && last_event(s) == ev_before);
  json_t *lone = json_pack("{s:s, s:i}", "event", "started", "attempt", 20);
  same[1].events = evs_of(&lone, 1);
  same[1].nevents = 1;
  CHECK(store_publish_group(s, 4, same, 2, 0, NULL, NULL) == STORE_OK);
  CHECK(current(s) == 4 && last_event(s) == ev_before + 1 && same[1].first_event == ev_before + 1);
  json_decref(lone);
  for (int i = 0; i < 4; i++) json_decref(started[i]), json_decref(accepted[i]);
  store_close(s);
  rm_store(dir);
}

/* A callback that numbers only the revisions written: each gets the next
** generation, which the manifest records. */
typedef struct numbering { store_rev_info *infos; uint64_t base, gen; } numbering;

static void number(void *arg, size_t i, uint64_t rev, int changed) {
  numbering *nb = arg;
  (void)rev;
  if (i == 0) nb->gen = nb->base;   /* a rerun starts again */
  if (changed) nb->infos[i].generation = ++nb->gen;
}

static void test_generations_in_callback(void) {
  char dir[4096], err[1024];
  store_env *s;
  store_manifest *m;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_rev_info i0 = info_of(STORE_REV_INITIAL, 7, "initial");
  store_entry x0 = ent(STORE_DATA, "x", "0"), x1 = ent(STORE_DATA, "x", "1"), y1 = ent(STORE_DATA, "y", "1");
  CHECK(store_publish(s, 0, &i0, &x0, 1, NULL, 0, NULL) == STORE_OK);
  store_rev_info infos[4];
  for (int i = 0; i < 4; i++) infos[i] = info_of(STORE_REV_APPLICATION, 999, "n");
  /* x=0 again (nothing), x=1, x=1 again (nothing), y=1 */
  store_rev_in g[] = { rev_in(&infos[0], &x0, 1, NULL, 0, NULL, 0), rev_in(&infos[1], &x1, 1, NULL, 0, NULL, 0),
                       rev_in(&infos[2], &x1, 1, NULL, 0, NULL, 0), rev_in(&infos[3], &y1, 1, NULL, 0, NULL, 0) };
  numbering nb = { infos, 7, 0 };
  CHECK(store_publish_group(s, 1, g, 4, 0, number, &nb) == STORE_OK);
  CHECK(g[0].rev == 1 && g[1].rev == 2 && g[2].rev == 2 && g[3].rev == 3 && nb.gen == 9);
  CHECK(store_manifest_read_header(s, 2, &m) == STORE_OK && m->generation == 8);
  store_free(m);
  CHECK(store_manifest_read_header(s, 3, &m) == STORE_OK && m->generation == 9);
  store_free(m);
  store_close(s);
  rm_store(dir);
}

/* Every refusal leaves the store exactly as it was: no revision, no entry,
** no event of any revision of the group. */
static void test_all_or_nothing(void) {
  char dir[4096], err[1024];
  store_env *s;
  st_coll c;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_rev_info i0 = info_of(STORE_REV_INITIAL, 1, "initial");
  store_entry base = ent(STORE_FUNCTION, "f", "(defun f () 0)");
  CHECK(store_publish(s, 0, &i0, &base, 1, NULL, 0, NULL) == STORE_OK);
  store_stat before, after;
  CHECK(store_stats(s, &before) == STORE_OK);
  store_rev_info a = info_of(STORE_REV_APPLICATION, 2, "a"), bad = info_of(99, 3, "bad");
  store_entry e1 = ent(STORE_FUNCTION, "g", "(defun g () 1)"), e2 = ent(STORE_DATA, "r", "2"),
              twice[] = { ent(STORE_DATA, "x", "1"), ent(STORE_DATA, "x", "2") },
              badkind = { 42, "q", "1", 1 }, noname = ent(STORE_DATA, "", "1");
  store_key absent = { STORE_DATA, "nope" };
  json_t *ev = json_pack("{s:s, s:i}", "event", "started", "attempt", 1);
  json_t *notobj = json_string("x");
  json_t *evs[] = { ev }, *bads[] = { notobj };
  struct { const char *what; store_rev_in second; int code; } cases[] = {
    { "a removed key the map lacks", rev_in(&a, &e2, 1, &absent, 1, evs, 1), STORE_EINVAL },
    { "a key twice in one revision", rev_in(&a, twice, 2, NULL, 0, evs, 1), STORE_EINVAL },
    { "an invalid entry kind", rev_in(&a, &badkind, 1, NULL, 0, evs, 1), STORE_EINVAL },
    { "an empty name", rev_in(&a, &noname, 1, NULL, 0, evs, 1), STORE_EINVAL },
    { "an invalid revision kind", rev_in(&bad, &e2, 1, NULL, 0, evs, 1), STORE_EINVAL },
    { "an event that is not an object", rev_in(&a, &e2, 1, NULL, 0, bads, 1), STORE_EINVAL },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    store_rev_in g[] = { rev_in(&a, &e1, 1, NULL, 0, evs, 1), cases[i].second };
    int r = store_publish_group(s, 1, g, 2, 0, NULL, NULL);
    if (r != cases[i].code) fprintf(stderr, "case %s: %d (%s)\n", cases[i].what, r, store_errmsg(s));
    CHECK(r == cases[i].code);
    CHECK(store_errmsg(s)[0] != '\0');
    CHECK(store_stats(s, &after) == STORE_OK);
    CHECK(after.current == 1 && after.revisions == before.revisions && after.entries == before.entries &&
          after.events == before.events && after.names == before.names);
  }
  /* A stale parent: nothing. */
  store_rev_in g2[] = { rev_in(&a, &e1, 1, NULL, 0, evs, 1), rev_in(&a, &e2, 1, NULL, 0, evs, 1) };
  CHECK(store_publish_group(s, 0, g2, 2, 0, NULL, NULL) == STORE_ESTALE);
  CHECK(store_stats(s, &after) == STORE_OK && after.current == 1 && after.events == before.events);
  /* Bad calls. */
  CHECK(store_publish_group(s, 1, g2, 0, 0, NULL, NULL) == STORE_EINVAL);
  CHECK(store_publish_group(s, 1, NULL, 2, 0, NULL, NULL) == STORE_EINVAL);
  CHECK(store_publish_group(s, 1, g2, 2, 0x80, NULL, NULL) == STORE_EINVAL);
  /* The same removal is no change with STORE_GROUP_ABSENT_OK; a key the
  ** first revision adds, the second may remove. */
  store_key rg = { STORE_FUNCTION, "g" };
  store_rev_in g3[] = { rev_in(&a, &e1, 1, &absent, 1, NULL, 0), rev_in(&a, NULL, 0, &rg, 1, NULL, 0),
                        rev_in(&a, NULL, 0, &absent, 1, NULL, 0) };
  CHECK(store_publish_group(s, 1, g3, 3, 0, NULL, NULL) == STORE_EINVAL);
  uint8_t fx3[3][2];
  for (int i = 0; i < 3; i++) g3[i].effects = fx3[i];
  CHECK(store_publish_group(s, 1, g3, 3, STORE_GROUP_ABSENT_OK, NULL, NULL) == STORE_OK);
  CHECK(fx3[0][0] == STORE_ADDED && fx3[0][1] == STORE_SAME && fx3[1][0] == STORE_REMOVED && fx3[2][0] == STORE_SAME);
  CHECK(g3[0].rev == 2 && g3[1].rev == 3 && g3[2].rev == 3 && current(s) == 3);
  CHECK_STR(st_map_of(s, 2, &c), "function f=(defun f () 0);function g=(defun g () 1);");
  CHECK_STR(st_map_of(s, 3, &c), "function f=(defun f () 0);");
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  /* Read-only handles cannot. */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(store_publish_group(s, 3, g2, 2, 0, NULL, NULL) == STORE_EPERM);
  store_close(s);
  json_decref(ev);
  json_decref(notobj);
  rm_store(dir);
}

/* A group bigger than the map: the transaction runs again from the start
** after the map grows, and the callback sees the same numbers again. */
static void test_group_grows_map(void) {
  char dir[4096], err[1024];
  store_env *s;
  store_options opt = { .mapsize = 256 << 10 };
  tmp_store(dir, sizeof dir);
  CHECK(store_open_with(dir, 0, &opt, &s, err, sizeof err) == STORE_OK);
  enum { N = 8, PER = 40 };
  static char names[N][PER][16], body[4000];
  store_entry es[N][PER];
  store_rev_info infos[N];
  store_rev_in g[N];
  memset(body, 'x', sizeof body - 1);
  for (int i = 0; i < N; i++) {
    infos[i] = info_of(i == 0 ? STORE_REV_INITIAL : STORE_REV_APPLICATION, (uint64_t)i + 1, "grow");
    for (int k = 0; k < PER; k++) {
      snprintf(names[i][k], 16, "r%d-%d", i, k);
      es[i][k] = (store_entry){ STORE_DATA, names[i][k], body, sizeof body - 1 };
    }
    g[i] = rev_in(&infos[i], es[i], PER, NULL, 0, NULL, 0);
  }
  acc ac = { { NULL }, 0, { 0 }, { 0 } };
  CHECK(store_publish_group(s, 0, g, N, 0, on_rev, &ac) == STORE_OK);
  CHECK(current(s) == N && g[N - 1].rev == N);
  CHECK(ac.calls > N);   /* it ran more than once */
  for (int i = 0; i < N; i++) CHECK(ac.revs[i] == (uint64_t)i + 1 && ac.changed[i]);
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.mapsize > (size_t)(256 << 10) && st.names == N * PER);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

/* Random groups against a model: every revision's map rebuilt from the
** store equals the model's, whatever the group boundaries. */
static void test_random_groups(void) {
  char dir[4096], err[1024];
  store_env *s;
  enum { KEYS = 12, REVS = 120 };
  static int model[REVS + 2][KEYS];   /* -1 absent, else the value */
  static char names[KEYS][8], vals[REVS + 2][KEYS][16];
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  srand(7);
  for (int k = 0; k < KEYS; k++) {
    snprintf(names[k], sizeof names[k], "k%d", k);
    model[0][k] = model[1][k] = -1;
  }
  store_rev_info i0 = info_of(STORE_REV_INITIAL, 1, "initial");
  CHECK(store_publish(s, 0, &i0, NULL, 0, NULL, 0, NULL) == STORE_OK);
  uint64_t rev = 1;   /* model index = revision */
  int steps = 0;
  while (rev < REVS && steps++ < 1000) {
    int n = 1 + rand() % 4;
    store_rev_in g[4];
    store_rev_info infos[4];
    store_entry es[4][KEYS];
    store_key rm[4][KEYS];
    int view[KEYS], expect_rev[4];
    uint64_t r = rev;
    memcpy(view, model[rev], sizeof view);
    for (int i = 0; i < n; i++) {
      size_t ne = 0, nr = 0;
      infos[i] = info_of(STORE_REV_APPLICATION, r + 1, "random");
      for (int k = 0; k < KEYS; k++) {
        int roll = rand() % 6;
        if (roll == 0 && view[k] >= 0) {
          rm[i][nr++] = (store_key){ STORE_DATA, names[k] };
          view[k] = -1;
        } else if (roll == 1) {
          int v = rand() % 3;   /* often the same value: no change */
          snprintf(vals[r + 1][k], 16, "%d", v);
          es[i][ne++] = (store_entry){ STORE_DATA, names[k], vals[r + 1][k], strlen(vals[r + 1][k]) };
          view[k] = v;
        }
      }
      g[i] = rev_in(&infos[i], es[i], ne, rm[i], nr, NULL, 0);
      int changed = memcmp(view, model[r], sizeof view) != 0;
      if (changed) memcpy(model[++r], view, sizeof view);
      expect_rev[i] = (int)r;
      if (r >= REVS) { n = i + 1; break; }
    }
    if (store_publish_group(s, rev, g, (size_t)n, 0, NULL, NULL) != STORE_OK) {
      fprintf(stderr, "random group: %s\n", store_errmsg(s));
      CHECK(0);
      break;
    }
    for (int i = 0; i < n; i++) CHECK(g[i].rev == (uint64_t)expect_rev[i]);
    rev = r;
    CHECK(current(s) == rev);
  }
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  for (uint64_t r = 1; r <= rev; r++) {
    st_coll c, want;
    want.n = 0;
    want.buf[0] = '\0';
    /* the store's map order is (kind, name): k0, k1, k10, k11, k2, ... */
    const int order[KEYS] = { 0, 1, 10, 11, 2, 3, 4, 5, 6, 7, 8, 9 };
    for (int i = 0; i < KEYS; i++) {
      int k = order[i];
      if (model[r][k] >= 0)
        want.n += (size_t)snprintf(want.buf + want.n, sizeof want.buf - want.n, "data %s=%d;", names[k],
                                   model[r][k]);
    }
    CHECK_STR(st_map_of(s, r, &c), want.buf);
  }
  store_close(s);
  rm_store(dir);
}

/* STORE_GROUP_SYNC_LATER: the group is CURRENT at once — for this handle,
** for another process, and after this process dies before store_sync —
** and store_sync is where the sync hooks run.  A read-only handle cannot
** sync; unknown flags are still refused. */
typedef struct points { int seen[16]; } points;

static void record_point(void *arg, store_point at) { ((points *)arg)->seen[at]++; }

static int child_current(const char *dir, void *arg, char *err, size_t n) {
  store_env *r;
  uint64_t cur = 0;
  if (store_open(dir, STORE_RDONLY, &r, err, n) != STORE_OK) return 1;
  int ok = store_current(r, &cur) == STORE_OK && cur == *(uint64_t *)arg;
  char e[256] = "";
  int rc = store_sync(r, e, sizeof e);
  ok = ok && rc == STORE_EPERM && strstr(e, "read-only");
  if (!ok) snprintf(err, n, "current %llu, sync %d (%s)", (unsigned long long)cur, rc, e);
  store_close(r);
  return ok ? 0 : 1;
}

/* Commit a group without its sync, then die (as a kernel killed before
** its sync thread ran). */
static int child_commit_and_die(const char *dir, void *arg, char *err, size_t n) {
  store_env *s;
  (void)arg;
  if (store_open(dir, 0, &s, err, n) != STORE_OK) return 1;
  store_rev_info info = info_of(STORE_REV_APPLICATION, 50, "unsynced");
  store_entry z = ent(STORE_DATA, "z", "9");
  store_rev_in g = rev_in(&info, &z, 1, NULL, 0, NULL, 0);
  if (store_publish_group(s, 3, &g, 1, STORE_GROUP_SYNC_LATER, NULL, NULL) != STORE_OK || g.rev != 4) {
    snprintf(err, n, "%s", store_errmsg(s));
    return 1;
  }
  raise(SIGKILL);
  return 1;
}

static void test_sync_later(void) {
  char dir[4096], err[1024], msg[1024];
  store_env *s;
  st_coll c;
  points pt = {{0}};
  store_options opt = {0};
  opt.hook = record_point;
  opt.hook_arg = &pt;
  tmp_store(dir, sizeof dir);
  CHECK(store_open_with(dir, 0, &opt, &s, err, sizeof err) == STORE_OK);
  store_rev_info i0 = info_of(STORE_REV_INITIAL, 1, "initial");
  CHECK(store_publish(s, 0, &i0, NULL, 0, NULL, 0, NULL) == STORE_OK);
  store_rev_info infos[2] = { info_of(STORE_REV_APPLICATION, 2, "a"), info_of(STORE_REV_APPLICATION, 3, "b") };
  store_entry x = ent(STORE_DATA, "x", "1"), y = ent(STORE_DATA, "y", "2");
  store_rev_in g[] = { rev_in(&infos[0], &x, 1, NULL, 0, NULL, 0), rev_in(&infos[1], &y, 1, NULL, 0, NULL, 0) };
  memset(&pt, 0, sizeof pt);
  CHECK(store_publish_group(s, 1, g, 2, STORE_GROUP_SYNC_LATER, NULL, NULL) == STORE_OK);
  CHECK(g[1].rev == 3 && current(s) == 3);
  CHECK(!strcmp(st_map_of(s, 3, &c), "data x=1;data y=2;"));
  CHECK(pt.seen[STORE_AT_AFTER_COMMIT] == 1 && pt.seen[STORE_AT_BEFORE_SYNC] == 0);
  uint64_t want = 3;
  CHECK(st_in_child(child_current, dir, &want, msg, sizeof msg) == 0);
  if (msg[0]) fprintf(stderr, "child: %s\n", msg);
  CHECK(store_sync(s, err, sizeof err) == STORE_OK);
  CHECK(pt.seen[STORE_AT_BEFORE_SYNC] == 1 && pt.seen[STORE_AT_AFTER_SYNC] == 1);
  /* a plain publish after it syncs in full, as before */
  store_rev_info i3 = info_of(STORE_REV_APPLICATION, 4, "c");
  store_entry x2 = ent(STORE_DATA, "x", "2");
  g[0] = rev_in(&i3, &x2, 1, NULL, 0, NULL, 0);
  CHECK(store_publish_group(s, 3, g, 1, 0x4u, NULL, NULL) == STORE_EINVAL);
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);
  /* committed, then killed before any sync: still there for the next opener */
  int rc = st_in_child(child_commit_and_die, dir, NULL, msg, sizeof msg);
  CHECK(rc == -SIGKILL);
  if (rc != -SIGKILL) fprintf(stderr, "child: %d %s\n", rc, msg);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 4 && !strcmp(st_map_of(s, 4, &c), "data x=1;data y=2;data z=9;"));
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

int main(void) {
  test_group();
  test_sync_later();
  test_generations_in_callback();
  test_all_or_nothing();
  test_group_grows_map();
  test_random_groups();
  return CHECK_DONE();
}
