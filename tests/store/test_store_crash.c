/* test_store_crash.c — crash safety under SIGKILL, of single publishes and
** of groups (store_publish_group).
**
** A forked child opens the store (after the fork), reads CURRENT and runs a
** scripted series of commits from there, most of them in groups of one to
** four revisions in one write transaction; before each it writes
** "committing FIRST LAST" to a pipe and after it "committed LAST".  Each
** revision's "accepted" event is written inside the group's transaction,
** completed with its revision number by the group's callback.  The child
** dies by SIGKILL either at an injected point inside the publish (the
** store's test hook: before the write transaction, after a revision's
** entries, after a revision's manifest — both once per revision of a group,
** so the nth one can be inside a group's second or third revision — just
** before mdb_txn_commit, just after it; on the nth time the point is
** reached) or at a random moment chosen by the parent.  The parent then
** opens the store, verifies it, and asserts:
**   - CURRENT is the last revision reported committed, or the last revision
**     of the group after it only if that group's commit had started
**     ("committing" seen) and, for injected kills, only when the kill came
**     after mdb_txn_commit returned — never a revision inside a group;
**   - the map of CURRENT (and of CURRENT-1, rebuilt from the deltas) equals
**     exactly what the script says that revision holds — never a mix;
**   - every "accepted" event names its own revision, at most CURRENT, and no
**     revision is accepted twice;
**   - mark_interrupted closes every attempt left open.
** The script: revision 1 is the initial world (30 functions, 100 data rows);
** each later revision changes one function (every fifth one is large, to use
** overflow pages), writes one row and adds or removes another; every seventh
** is a rollback to three revisions back, published alone.  Every 250 kills a
** new store starts.
**
** Usage: test_store_crash [KILLS]   (default 250; or JITI_STORE_SOAK=KILLS) */
#include "st_test.h"
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

enum { NFN = 30, NROW = 100, PER_STORE = 250, CHILD_COMMITS = 40 };

/* A revision's map: a version per function and per row, -1 if absent. */
typedef struct wmap { int fn[NFN], row[NROW]; } wmap;

typedef struct script { wmap *maps; size_t n, cap; } script;

/* The map of revision r (0 = empty), computed by the script. */
static const wmap *script_map(script *sc, uint64_t r) {
  while (sc->n <= r) {
    if (sc->n == sc->cap) {
      sc->cap = sc->cap ? sc->cap * 2 : 256;
      sc->maps = realloc(sc->maps, sc->cap * sizeof *sc->maps);
    }
    wmap *m = &sc->maps[sc->n];
    uint64_t R = sc->n;
    if (R == 0) {
      for (int i = 0; i < NFN; i++) m->fn[i] = -1;
      for (int i = 0; i < NROW; i++) m->row[i] = -1;
    } else if (R == 1) {
      for (int i = 0; i < NFN; i++) m->fn[i] = 0;
      for (int i = 0; i < NROW; i++) m->row[i] = 0;
    } else if (R % 7 == 0) {
      *m = sc->maps[R - 3];
    } else {
      *m = sc->maps[R - 1];
      m->fn[R % NFN] = (int)R;
      m->row[R * 7 % NROW] = (int)R;
      int k = (int)(R * 13 % NROW);
      if (k != (int)(R * 7 % NROW)) m->row[k] = m->row[k] < 0 ? (int)R : -1;
    }
    sc->n++;
  }
  return &sc->maps[r];
}

static size_t render_fn(char *buf, size_t n, int i, int v) {
  int w = snprintf(buf, n, "(defun fn-%d () %d)", i, v);
  if (v % 5 == 0 && v > 0) {   /* large: past a page, into overflow pages */
    memset(buf + w, ';', 6000);
    w += 6000;
    buf[w] = '\0';
  }
  return (size_t)w;
}

static size_t render_row(char *buf, size_t n, int i, int v) {
  return (size_t)snprintf(buf, n, "(%d . %d)", i, v);
}

/* ---- the child */

/* done: revisions of the group being written that are complete (the
** callback saw them); fd: the report pipe. */
typedef struct crash_at { int point, nth, seen, done, fd; } crash_at;

static void crash_hook(void *arg, store_point at) {
  crash_at *c = arg;
  if (at == STORE_AT_BEFORE_TXN) c->done = 0;
  if ((int)at == c->point && ++c->seen == c->nth) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "killed-after %d\n", c->done);
    if (write(c->fd, buf, (size_t)n) != n) _exit(20);
    raise(SIGKILL);
  }
}

static void say(int fd, const char *what, uint64_t r) {
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%s %llu\n", what, (unsigned long long)r);
  if (write(fd, buf, (size_t)n) != n) _exit(20);
}

static void say2(int fd, const char *what, uint64_t a, uint64_t b) {
  char buf[80];
  int n = snprintf(buf, sizeof buf, "%s %llu %llu\n", what, (unsigned long long)a, (unsigned long long)b);
  if (write(fd, buf, (size_t)n) != n) _exit(20);
}

/* The revisions of the group that starts at R: a rollback (every seventh)
** goes alone; otherwise 1 to 4 revisions, stopping before a rollback. */
static uint64_t group_last(uint64_t R) {
  if (R == 1 || R % 7 == 0) return R;
  uint64_t last = R + R % 4;
  for (uint64_t r = R + 1; r <= last; r++)
    if (r % 7 == 0) return r - 1;
  return last;
}

/* Fill es/rm with the changes from map a to map b; bodies and names live in
** the slots from *slot on. */
static void diff_maps(const wmap *a, const wmap *b, store_entry *es, size_t *ne, store_key *rm, size_t *nr,
                      char (*names)[16], char (*bodies)[6100], size_t *slot) {
  *ne = *nr = 0;
  for (int i = 0; i < NFN; i++) {
    if (a->fn[i] == b->fn[i]) continue;
    char *nm = names[*slot], *body = bodies[*slot];
    (*slot)++;
    snprintf(nm, 16, "fn-%d", i);
    size_t len = render_fn(body, sizeof bodies[0], i, b->fn[i]);
    es[(*ne)++] = (store_entry){ STORE_FUNCTION, nm, body, len };
  }
  for (int i = 0; i < NROW; i++) {
    if (a->row[i] == b->row[i]) continue;
    char *nm = names[*slot], *body = bodies[*slot];
    (*slot)++;
    snprintf(nm, 16, "row-%d", i);
    if (b->row[i] < 0) {
      rm[(*nr)++] = (store_key){ STORE_DATA, nm };
    } else {
      size_t len = render_row(body, sizeof bodies[0], i, b->row[i]);
      es[(*ne)++] = (store_entry){ STORE_DATA, nm, body, len };
    }
  }
}

/* Each revision's "accepted" event names the revision the store gave it. */
typedef struct naming { json_t **accepted; crash_at *ca; } naming;

static void name_revision(void *arg, size_t i, uint64_t rev, int changed) {
  naming *nm = arg;
  (void)changed;
  json_object_set_new(nm->accepted[i], "revision", json_integer((json_int_t)rev));
  nm->ca->done = (int)i + 1;
}

enum { GMAX = 4, PER_REV = NFN + NROW };

static void child(const char *dir, int fd, int point, int nth, script *sc) {
  char err[1024];
  static char names[GMAX * PER_REV][16];
  static char bodies[GMAX * PER_REV][6100];
  static store_entry es[GMAX][PER_REV];
  static store_key rm[GMAX][NROW];
  crash_at ca = { point, nth, 0, 0, fd };
  store_options opt = { .hook = point ? crash_hook : NULL, .hook_arg = &ca };
  store_env *s;
  uint64_t cur, rev;
  if (store_open_with(dir, 0, &opt, &s, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "child: %s\n", err);
    _exit(21);
  }
  if (store_current(s, &cur) != STORE_OK) _exit(22);
  say(fd, "opened", cur);
  for (int k = 0; k < CHILD_COMMITS;) {
    uint64_t R = cur + 1, L = group_last(R);
    size_t n = (size_t)(L - R + 1), slot = 0;
    json_t *started[GMAX], *accepted[GMAX];
    store_rev_info infos[GMAX];
    store_rev_in g[GMAX];
    store_ev evs[GMAX];
    for (size_t i = 0; i < n; i++) {
      uint64_t r = R + i;
      started[i] = json_pack("{s:s, s:I}", "event", "started", "attempt", (json_int_t)r);
      accepted[i] = json_pack("{s:s, s:I}", "event", "accepted", "attempt", (json_int_t)r);
      infos[i] = info_of(r == 1 ? STORE_REV_INITIAL : STORE_REV_ACTION, r * 10, "scripted");
    }
    if (store_events_append_objects(s, started, NULL, n, NULL) != STORE_OK) _exit(23);
    say2(fd, "committing", R, L);
    int r;
    if (R > 1 && R % 7 == 0) {
      r = store_publish_revert(s, cur, R - 3, &infos[0], &rev);
      if (r == STORE_OK && store_events_append_objects(s, accepted, NULL, 1, NULL) != STORE_OK) _exit(25);
    } else {
      for (size_t i = 0; i < n; i++) {
        const wmap *b = script_map(sc, R + i), *a = script_map(sc, R + i - 1);  /* b may grow it */
        size_t ne, nr;
        diff_maps(a, b, es[i], &ne, rm[i], &nr, names, bodies, &slot);
        evs[i] = (store_ev){ accepted[i], NULL, 0, 0 };
        g[i] = (store_rev_in){ &infos[i], es[i], ne, rm[i], nr, &evs[i], 1, 0, 0, NULL };
      }
      naming nm = { accepted, &ca };
      r = store_publish_group(s, cur, g, n, 0, name_revision, &nm);
      rev = g[n - 1].rev;
    }
    if (r != STORE_OK || rev != L) {
      fprintf(stderr, "child: publish %llu..%llu: %s\n", (unsigned long long)R, (unsigned long long)L,
              store_errmsg(s));
      _exit(24);
    }
    say(fd, "committed", L);
    for (size_t i = 0; i < n; i++) json_decref(started[i]), json_decref(accepted[i]);
    cur = L;
    k += (int)n;
  }
  /* Done: wait to be killed (the parent always kills). */
  for (;;) pause();
}

/* ---- the parent's checks */

typedef struct cmp { const wmap *want; int count, bad; char what[200]; } cmp;

static int compare(void *arg, const store_entry *e, const uint8_t hash[32]) {
  cmp *c = arg;
  char buf[6200];
  int i;
  size_t len;
  (void)hash;
  c->count++;
  if (e->kind == STORE_FUNCTION && sscanf(e->name, "fn-%d", &i) == 1 && i >= 0 && i < NFN &&
      c->want->fn[i] >= 0)
    len = render_fn(buf, sizeof buf, i, c->want->fn[i]);
  else if (e->kind == STORE_DATA && sscanf(e->name, "row-%d", &i) == 1 && i >= 0 && i < NROW &&
           c->want->row[i] >= 0)
    len = render_row(buf, sizeof buf, i, c->want->row[i]);
  else {
    snprintf(c->what, sizeof c->what, "unexpected entry %s", e->name);
    c->bad++;
    return 1;
  }
  if (len != e->len || memcmp(buf, e->bytes, len) != 0) {
    snprintf(c->what, sizeof c->what, "%s holds \"%.30s\", expected \"%.30s\"", e->name,
             (const char *)e->bytes, buf);
    c->bad++;
    return 1;
  }
  return 0;
}

static int map_matches(store_env *s, uint64_t rev, const wmap *want, char *why, size_t n) {
  cmp c = { want, 0, 0, "" };
  int expect = 0;
  for (int i = 0; i < NFN; i++) expect += want->fn[i] >= 0;
  for (int i = 0; i < NROW; i++) expect += want->row[i] >= 0;
  int r = store_map_foreach(s, rev, compare, &c);
  if (r != STORE_OK) { snprintf(why, n, "%s", store_errmsg(s)); return 0; }
  if (c.bad) { snprintf(why, n, "revision %llu: %s", (unsigned long long)rev, c.what); return 0; }
  if (c.count != expect) {
    snprintf(why, n, "revision %llu: %d entries, expected %d", (unsigned long long)rev, c.count, expect);
    return 0;
  }
  return 1;
}

/* Every "accepted" event names the revision its attempt made (attempt R
** made revision R), at most CURRENT, and no revision is accepted twice. */
typedef struct acc_check { uint64_t cur; unsigned char *seen; int bad; char what[200]; } acc_check;

static int check_accepted(void *arg, uint64_t seq, const char *json, size_t len) {
  acc_check *a = arg;
  json_t *o = json_loadb(json, len, 0, NULL);
  const char *ev = json_string_value(json_object_get(o, "event"));
  if (ev && !strcmp(ev, "accepted")) {
    json_int_t at = json_integer_value(json_object_get(o, "attempt"));
    json_t *rv = json_object_get(o, "revision");
    json_int_t r = rv ? json_integer_value(rv) : at;  /* a rollback's event names none */
    if (r != at || r < 1 || (uint64_t)r > a->cur || a->seen[r]++) {
      snprintf(a->what, sizeof a->what, "event %llu: accepted attempt %lld revision %lld (CURRENT %llu%s)",
               (unsigned long long)seq, (long long)at, (long long)r, (unsigned long long)a->cur,
               r >= 1 && (uint64_t)r <= a->cur && a->seen[r] > 1 ? ", twice" : "");
      a->bad++;
    }
  }
  json_decref(o);
  return a->bad != 0;
}

static const char *point_names[] = {
  "random", "before-txn", "after-entries", "after-manifest", "before-commit", "after-commit"
};

/* The group being committed (first and last revision) and the last
** revision reported committed. */
typedef struct outcome { long long committing, committing_last, committed; int killed_after; } outcome;

static void read_reports(int fd, outcome *o) {
  char buf[65536];
  size_t got = 0;
  ssize_t k;
  o->committing = o->committing_last = o->committed = 0;
  o->killed_after = -1;
  while (got < sizeof buf - 1 && (k = read(fd, buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)k;
  buf[got] = '\0';
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
    unsigned long long r, l;
    if (sscanf(line, "committing %llu %llu", &r, &l) == 2) o->committing = (long long)r, o->committing_last = (long long)l;
    else if (sscanf(line, "committed %llu", &r) == 1) o->committed = (long long)r;
    else if (sscanf(line, "killed-after %llu", &r) == 1) o->killed_after = (int)r;
  }
}

/* One kill.  point 0: a random kill delay_us after the child opened the
** store (a negative delay: -delay_us after the fork).  Returns 1 if all
** checks held. */
/* Where a random kill landed. */
enum { IN_OPEN, BETWEEN, MID_OLD, MID_NEW, NLANDED };

static int one_kill(const char *dir, int point, int nth, long delay_us, script *sc,
                    uint64_t *last_current, int *landed, int *mid_group) {
  int fds[2], status, ok = 1;
  char err[1024], why[512];
  outcome o;
  store_env *s;
  uint64_t cur;
  if (pipe(fds) != 0) { perror("pipe"); exit(2); }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(dir, fds[1], point, nth, sc);
    _exit(0);
  }
  close(fds[1]);
  if (point == 0) {
    if (delay_us >= 0) {   /* measure the delay from the child's open */
      char ch;
      while (read(fds[0], &ch, 1) == 1 && ch != '\n') {}
    } else {
      delay_us = -delay_us;
    }
    struct timespec ts = { delay_us / 1000000, (delay_us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
  }   /* else the hook kills the child at its point */
  read_reports(fds[0], &o);   /* EOF when the child is dead */
  *mid_group = o.killed_after > 0;
  if (getenv("JITI_STORE_DEBUG")) fprintf(stderr, "kill %s:%d delay %ld: committing %lld committed %lld\n", point_names[point], nth, delay_us, o.committing, o.committed);
  close(fds[0]);
  waitpid(pid, &status, 0);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    fprintf(stderr, "FAIL child (%s:%d) ended with status %d, not SIGKILL\n",
            point_names[point], nth, status);
    return 0;
  }
  if (store_open(dir, 0, &s, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "FAIL reopen after kill (%s:%d): %s\n", point_names[point], nth, err);
    return 0;
  }
  if (store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "FAIL verify after kill (%s:%d): %s\n", point_names[point], nth, err);
    ok = 0;
    goto done;
  }
  if (store_current(s, &cur) != STORE_OK) { ok = 0; goto done; }
  {
    long long c = (long long)cur, started = o.committing, last = o.committing_last;
    long long done_r = o.committed ? o.committed : (long long)*last_current;
    int may_be_next = started == done_r + 1;
    /* never part of a group: all of it (its last revision) or none */
    if (point >= 1 && point <= 4) ok = c == done_r && may_be_next;
    else if (point == 5) ok = c == last && may_be_next;
    else ok = c == done_r || (may_be_next && c == last);
    *landed = started == 0 && o.committed == 0 ? IN_OPEN
            : !may_be_next ? BETWEEN : c == done_r ? MID_OLD : MID_NEW;
    if (!ok)
      fprintf(stderr, "FAIL kill at %s:%d: CURRENT %lld; child reported committing %lld..%lld, "
              "committed %lld\n", point_names[point], nth, c, started, last, o.committed);
  }
  if (ok && !map_matches(s, STORE_REV_CURRENT, script_map(sc, cur), why, sizeof why)) {
    fprintf(stderr, "FAIL kill at %s:%d: the map of CURRENT %llu: %s\n", point_names[point],
            nth, (unsigned long long)cur, why);
    ok = 0;
  }
  if (ok && cur > 1 && !map_matches(s, cur - 1, script_map(sc, cur - 1), why, sizeof why)) {
    fprintf(stderr, "FAIL kill at %s:%d: rebuilt revision %llu: %s\n", point_names[point],
            nth, (unsigned long long)cur - 1, why);
    ok = 0;
  }
  if (ok) {
    acc_check a = { cur, calloc(cur + 2, 1), 0, "" };
    if (store_events_read(s, 1, 0, 0, check_accepted, &a) != STORE_OK || a.bad) {
      fprintf(stderr, "FAIL kill at %s:%d: %s\n", point_names[point], nth, a.bad ? a.what : store_errmsg(s));
      ok = 0;
    }
    free(a.seen);
  }
  if (ok) {
    uint64_t n1, n2;
    ok = store_mark_interrupted(s, &n1) == STORE_OK && store_mark_interrupted(s, &n2) == STORE_OK &&
         n2 == 0 && n1 <= GMAX;
    if (!ok) fprintf(stderr, "FAIL mark_interrupted after kill: %s\n", store_errmsg(s));
  }
  *last_current = cur;
done:
  store_close(s);
  return ok;
}

int main(int argc, char **argv) {
  char dir[4096];
  const char *soak = getenv("JITI_STORE_SOAK");
  long kills = argc > 1 ? atol(argv[1]) : soak ? atol(soak) : 250;
  long injected = 0, random_kills = 0, after_commit = 0, mid_group = 0, landed_n[NLANDED] = { 0 };
  script sc = { NULL, 0, 0 };
  uint64_t last = 0;
  struct timespec t0, t1;
  unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
  const char *seed_env = getenv("JITI_STORE_SEED");
  if (seed_env) seed = (unsigned)atol(seed_env);
  srand(seed);
  printf("crash test: %ld kills, seed %u\n", kills, seed);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  dir[0] = '\0';
  for (long i = 0; i < kills; i++) {
    if (i % PER_STORE == 0) {
      if (dir[0]) rm_store(dir);
      tmp_store(dir, sizeof dir);
      last = 0;
    }
    /* Three kills in five are injected (the five points in turn, on the
    ** first to third publish of the child); the rest are random. */
    int point = 0, nth = 1;
    long delay = 0;
    if (i % 5 < 3) {
      point = 1 + (int)((i / 5 * 3 + i % 5) % 5);
      nth = 1 + (int)((i / 7) % 3);
      injected++;
      after_commit += point == 5;
    } else {
      /* One in four from the fork (up to 30 ms: often inside the open),
      ** the others up to 60 ms after the child opened the store. */
      delay = i % 4 == 0 ? -(rand() % 30000) - 1 : rand() % 60000;
      random_kills++;
    }
    int landed = BETWEEN, mid = 0;
    if (one_kill(dir, point, nth, delay, &sc, &last, &landed, &mid)) check_passed++;
    else {
      check_failed++;
      fprintf(stderr, "  (kill %ld, store %s, seed %u)\n", i, dir, seed);
    }
    if (point == 0) landed_n[landed]++;
    mid_group += mid;
  }
  if (dir[0]) rm_store(dir);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%ld kills (%ld injected, %ld after commit, %ld inside a group past its first revision; "
         "%ld random) in %.1f s\n", kills, injected, after_commit, mid_group, random_kills,
         (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  printf("random kills landed: %ld before the first report, %ld between commits, "
         "%ld inside a commit (old revision kept), %ld inside a commit (new revision "
         "durable)\n", landed_n[IN_OPEN], landed_n[BETWEEN], landed_n[MID_OLD], landed_n[MID_NEW]);
  free(sc.maps);
  return CHECK_DONE();
}
