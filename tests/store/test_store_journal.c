/* test_store_journal.c — journal mode (store.h "The journal"): journaled
** writes survive a process that dies before any checkpoint, exactly as
** synced, and a reader opening after it sees them (it replays them); a
** reader beside a live writer waits for its checkpoint; a checkpoint makes the records stale (a shorter epoch written
** over a longer one replays only its own); a torn tail is ignored; a
** failed write leaves nothing behind; damage that is not a torn tail (a
** record that fails its check with intact ones after it, one that passes
** its check but does not parse, a header damaged in both copies) stops the
** open, naming the record and what it would lose, and changes nothing,
** until accept_loss drops it and records what it dropped; the file cut
** short or followed by garbage is a torn tail; reads on the writing thread see the
** pending writes and another thread is refused; a long transaction that
** fills the map checkpoints, grows it and goes on, and so does a checkpoint
** whose commit finds the map full (from the journal); events appended later
** are journaled too; the files are the owner's only. */
#define OPENSSL_SUPPRESS_DEPRECATED   /* SHA256_*: to forge a record's check */
#include "st_test.h"
#include <fcntl.h>
#include <openssl/sha.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

static uint64_t current(store_env *s) {
  uint64_t c = 0;
  CHECK(store_current(s, &c) == STORE_OK);
  return c;
}

/* The value of data key k at CURRENT, as text ("" when absent). */
static const char *value_of(store_env *s, const char *k, char *buf, size_t n) {
  store_entry *e = NULL;
  uint8_t h[32];
  buf[0] = '\0';
  if (store_lookup(s, STORE_DATA, k, h) == STORE_OK && store_get_entry(s, h, &e) == STORE_OK) {
    snprintf(buf, n, "%.*s", (int)e->len, (const char *)e->bytes);
    store_free(e);
  }
  return buf;
}

/* One revision setting data key k to v, with one event, SYNC_LATER. */
static int put_later(store_env *s, uint64_t parent, const char *k, const char *v, uint64_t gen) {
  store_rev_info info = info_of(STORE_REV_APPLICATION, gen, "put");
  store_entry e = ent(STORE_DATA, k, v);
  char ev[128];
  int n = snprintf(ev, sizeof ev, "\"event\":\"accepted\",\"attempt\":%llu", (unsigned long long)gen);
  store_ev one = { NULL, ev, (size_t)n, 0 };
  store_rev_in in = { &info, &e, 1, NULL, 0, &one, 1, 0, 0, NULL };
  return store_publish_group(s, parent, &in, 1, STORE_GROUP_SYNC_LATER, NULL, NULL);
}

/* A new store at dir holding the initial revision; o may be NULL. */
static int base_with(const char *dir, const store_options *o) {
  char err[1024];
  store_env *s;
  if (store_open_with(dir, 0, o, &s, err, sizeof err) != STORE_OK) return -1;
  store_rev_info i0 = info_of(STORE_REV_INITIAL, 1, "initial");
  store_entry e = ent(STORE_DATA, "k", "0");
  int r = store_publish(s, 0, &i0, &e, 1, NULL, 0, NULL);
  store_close(s);
  return r;
}

static int base(const char *dir) { return base_with(dir, NULL); }

/* In a child: journal mode, n writes k=1..n synced, then (checkpoint
** after `checkpoint_after` of them, when nonzero) die without closing. */
typedef struct plan { int n, checkpoint_after, sync; } plan;

static int writer(const char *dir, void *arg, char *err, size_t n) {
  plan *p = arg;
  store_env *s;
  if (store_open(dir, 0, &s, err, n) != STORE_OK) return 1;
  if (store_journal_begin(s) != STORE_OK) return snprintf(err, n, "%s", store_errmsg(s)), 2;
  uint64_t cur = current(s);
  for (int i = 1; i <= p->n; i++) {
    char v[32];
    snprintf(v, sizeof v, "%d", i);
    if (put_later(s, cur, "k", v, cur + 1) != STORE_OK) return snprintf(err, n, "%s", store_errmsg(s)), 3;
    cur++;
    if (current(s) != cur) return snprintf(err, n, "CURRENT not seen by the writing thread"), 4;
    if (p->checkpoint_after && i == p->checkpoint_after && store_checkpoint(s) != STORE_OK) return 5;
  }
  if (p->sync && store_sync(s, err, n) != STORE_OK) return 6;
  _exit(0);   /* no checkpoint, no close: a crash */
}

/* A fresh store (base) in dir whose writer made n journaled writes
** (checkpointing after `checkpoint_after` of them), synced them and died;
** jp (may be NULL) receives the journal's path. */
static void after_crash(char *dir, size_t n, int writes, int checkpoint_after, char *jp, size_t jn) {
  char msg[1024];
  tmp_store(dir, n);
  CHECK(base(dir) == STORE_OK);
  plan p = { writes, checkpoint_after, 1 };
  CHECK(st_in_child(writer, dir, &p, msg, sizeof msg) == 0);
  if (jp) snprintf(jp, jn, "%s/journal", dir);
}

/* The payload length in a record's 32-byte head. */
static unsigned rec_len(const unsigned char *h) { return (unsigned)h[4] << 24 | h[5] << 16 | h[6] << 8 | h[7]; }

static void test_replay(void) {
  char dir[4096], err[1024], buf[64], jp[4200];
  store_env *s;
  after_crash(dir, sizeof dir, 20, 0, jp, sizeof jp);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 21);
  CHECK_STR(value_of(s, "k", buf, sizeof buf), "20");
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 20);
  char v[32];
  CHECK(store_verify(s, 0, v, sizeof v) == STORE_OK);
  store_close(s);
  /* replayed once: opening again changes nothing */
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 21);
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 20);
  store_close(s);
  /* the journal is the owner's alone */
  struct stat sb;
  CHECK(stat(jp, &sb) == 0 && (sb.st_mode & 0777) == 0600);
  rm_store(dir);
}

static void test_epochs(void) {
  char dir[4096], err[1024], buf[64];
  store_env *s;
  /* 10 writes, a checkpoint after 8, then 2 more: records 0..7 of the old
  ** epoch lie beyond the new epoch's two and must not be replayed */
  after_crash(dir, sizeof dir, 10, 8, NULL, 0);
  /* a reader first replays what the dead writer's journal holds */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 11);
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 11);
  CHECK_STR(value_of(s, "k", buf, sizeof buf), "10");
  store_close(s);
  rm_store(dir);
}

static void test_torn_tail(void) {
  char dir[4096], err[1024], buf[64], jp[4200];
  store_env *s;
  after_crash(dir, sizeof dir, 3, 0, jp, sizeof jp);
  /* cut the third record in half, as a crash in mid-append would */
  int fd = open(jp, O_RDWR);
  CHECK(fd >= 0);
  unsigned char b[4096];
  off_t off = 4096;
  for (int i = 0; i < 2; i++) {   /* skip two records: 32-byte head, payload */
    CHECK(pread(fd, b, 32, off) == 32);
    off += 32 + (off_t)rec_len(b);
  }
  CHECK(pread(fd, b, 32, off) == 32);
  unsigned len = rec_len(b);
  memset(b, 0, sizeof b);
  CHECK(pwrite(fd, b, len / 2, off + 32 + len / 2) == (ssize_t)(len / 2));
  close(fd);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 3);
  CHECK_STR(value_of(s, "k", buf, sizeof buf), "2");
  store_close(s);
  rm_store(dir);
}

/* A live writer: 5 journaled writes synced, a checkpoint 300 ms later,
** then it lingers (holding the store) until killed. */
static int live_writer(const char *dir, void *arg, char *err, size_t n) {
  int *ready = arg;
  store_env *s;
  if (store_open(dir, 0, &s, err, n) != STORE_OK || store_journal_begin(s) != STORE_OK) return 1;
  for (int i = 1; i <= 5; i++) {
    char v[32];
    snprintf(v, sizeof v, "live%d", i);
    if (put_later(s, (uint64_t)i, "k", v, (uint64_t)i + 1) != STORE_OK) return 2;
  }
  if (store_sync(s, err, n) != STORE_OK) return 3;
  if (write(ready[1], "r", 1) != 1) return 4;
  usleep(300000);
  if (store_checkpoint(s) != STORE_OK) return 5;
  pause();
  return 0;
}

static void test_live_writer(void) {
  char dir[4096], err[1024], buf[64];
  store_env *s;
  tmp_store(dir, sizeof dir);
  CHECK(base(dir) == STORE_OK);
  int ready[2];
  CHECK(pipe(ready) == 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    char e[1024] = "";
    close(ready[0]);
    _exit(live_writer(dir, ready, e, sizeof e));
  }
  close(ready[1]);
  char c;
  CHECK(read(ready[0], &c, 1) == 1);
  close(ready[0]);
  /* its writes are durable, not yet in data.mdb: the reader waits for them */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 6);
  CHECK_STR(value_of(s, "k", buf, sizeof buf), "live5");
  store_close(s);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  rm_store(dir);
}

/* ---- damage
**
** A journal of 10 records (revisions 2..11, one event each; CURRENT 11
** when all replay), damaged in each way there is.  A torn tail is dropped
** silently; damage with intact records after it is refused with a message
** naming the record and what follows, leaving every file as it was, and
** accept_loss replays the records before it, drops the rest, says what it
** dropped and records a journal-loss event. */

enum { NREC = 10 };

typedef struct recs { off_t off[NREC + 1]; unsigned len[NREC]; } recs;   /* off[NREC]: the end */

/* A store after a crash with NREC journaled writes, and its records' places. */
static void damage_setup(char *dir, size_t n, char *jp, size_t jn, recs *r) {
  after_crash(dir, n, NREC, 0, jp, jn);
  int fd = open(jp, O_RDONLY);
  CHECK(fd >= 0);
  unsigned char h[32];
  r->off[0] = 4096;
  for (int i = 0; i < NREC; i++) {
    CHECK(pread(fd, h, 32, r->off[i]) == 32);
    r->len[i] = rec_len(h);
    r->off[i + 1] = r->off[i] + 32 + (off_t)r->len[i];
  }
  close(fd);
}

static void flip_bits(const char *jp, off_t at, unsigned char bits) {
  int fd = open(jp, O_RDWR);
  unsigned char b;
  CHECK(fd >= 0 && pread(fd, &b, 1, at) == 1);
  b ^= bits;
  CHECK(pwrite(fd, &b, 1, at) == 1);
  close(fd);
}

static void flip(const char *jp, off_t at) { flip_bits(jp, at, 0x10); }

/* The file's bytes, malloc'd, its size in *n. */
static unsigned char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  unsigned char *b = malloc(16u << 20);
  *n = f ? fread(b, 1, 16u << 20, f) : 0;
  if (f) fclose(f);
  return b;
}

static int same_file(const unsigned char *b, size_t n, const char *p) {
  size_t m;
  unsigned char *c = slurp(p, &m);
  int same = m == n && !memcmp(b, c, n);
  free(c);
  return same;
}

/* CURRENT after a writable open that succeeds. */
static uint64_t opened_current(const char *dir, const store_options *o) {
  char err[1024];
  store_env *s;
  uint64_t c = 0;
  int r = store_open_with(dir, 0, o, &s, err, sizeof err);
  CHECK(r == STORE_OK);
  if (r != STORE_OK) {
    fprintf(stderr, "  %s\n", err);
    return 0;
  }
  c = current(s);
  char v[256];
  CHECK(store_verify(s, 0, v, sizeof v) == STORE_OK);
  store_close(s);
  return c;
}

static int last_event(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  snprintf(arg, 1024, "%.*s", (int)len, json);
  return 1;
}

/* Damage that is no torn tail: refused (writable and read-only opens
** alike) with a message naming record `rec` at its byte and the intact
** records after it; nothing changes; then accept_loss drops them. */
static void check_refused(const char *dir, const char *jp, const recs *r, int rec, const char *why) {
  char err[1024], want[128], ev[1024] = "";
  store_env *s = NULL;
  size_t n, dn;
  unsigned char *before = slurp(jp, &n), *data;
  char dp[4200];
  snprintf(dp, sizeof dp, "%s/data.mdb", dir);
  data = slurp(dp, &dn);
  store_journal_loss loss;
  store_options o = { .loss = &loss };
  CHECK(store_open_with(dir, 0, &o, &s, err, sizeof err) == STORE_EJOURNAL && !s);
  snprintf(want, sizeof want, "record %d of epoch", rec);
  CHECK(strstr(err, want) != NULL);
  snprintf(want, sizeof want, "at byte %lld of", (long long)r->off[rec]);
  CHECK(strstr(err, want) != NULL);
  CHECK(strstr(err, why) != NULL);
  if (!strstr(err, why)) fprintf(stderr, "  %s\n", err);
  snprintf(want, sizeof want, "%d intact record%s after it", NREC - 1 - rec, NREC - 1 - rec == 1 ? "" : "s");
  CHECK(strstr(err, want) != NULL);
  /* record rec held revision rec + 2: from there to 11 */
  snprintf(want, sizeof want, "revisions %d to %d and %d event%s would be lost", rec + 2, NREC + 1, NREC - 1 - rec,
           NREC - 1 - rec == 1 ? "" : "s");
  CHECK(strstr(err, want) != NULL);
  if (!strstr(err, want)) fprintf(stderr, "  %s\n", err);
  CHECK(loss.damaged && !loss.header && loss.seq == (uint64_t)rec && loss.offset == (uint64_t)r->off[rec]);
  CHECK(loss.records == (uint64_t)(NREC - 1 - rec) && loss.revisions == (uint64_t)(NREC - rec));
  CHECK(loss.first_rev == (uint64_t)rec + 2 && loss.last_rev == NREC + 1 && loss.events == loss.records);
  /* a reader, with no writer to wait for, reports it too */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_EJOURNAL && strstr(err, want));
  /* nothing was written: the operator can copy the journal away first */
  CHECK(same_file(before, n, jp));
  CHECK(same_file(data, dn, dp));
  free(before);
  free(data);
  /* the operator's choice: the records before it replay, the rest goes */
  o.accept_loss = 1;
  CHECK(opened_current(dir, &o) == (uint64_t)rec + 1);
  CHECK(loss.damaged && loss.records == (uint64_t)(NREC - 1 - rec) && loss.event_seq == (uint64_t)rec + 1);
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(store_events_read(s, 0, 1, STORE_NEWEST_FIRST, last_event, ev) == STORE_OK);
  store_close(s);
  snprintf(want, sizeof want, "\"record\":%d,\"offset\":%lld", rec, (long long)r->off[rec]);
  CHECK(strstr(ev, "\"event\":\"journal-loss\"") && strstr(ev, want));
  snprintf(want, sizeof want, "\"first_revision\":%d,\"last_revision\":%d", rec + 2, NREC + 1);
  CHECK(strstr(ev, want) != NULL);
  /* dropped for good: the next open replays nothing and loses nothing more */
  o.accept_loss = 0;
  CHECK(opened_current(dir, &o) == (uint64_t)rec + 1 && !loss.damaged);
}

static void test_damage_head(void) {
  char dir[4096], jp[4200];
  recs r;
  /* the first record's epoch set back (1 to 0): no longer a record of the
  ** epoch, not an intact old one either (a reader must not take it for one) */
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip_bits(jp, r.off[0] + 15, 0x01);
  check_refused(dir, jp, &r, 0, "has a damaged head");
  rm_store(dir);
  /* each field of a middle record's head: magic, length (a length that
  ** still fits the file is told by the check), epoch, sequence, check */
  static const struct { int at; const char *why; } field[] = {
    { 1, "has a damaged head" }, { 6, "fails its check" }, { 15, "has a damaged head" },
    { 23, "has a damaged head" }, { 30, "fails its check" } };
  for (size_t i = 0; i < sizeof field / sizeof field[0]; i++) {
    damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
    flip(jp, r.off[4] + field[i].at);
    check_refused(dir, jp, &r, 4, field[i].why);
    rm_store(dir);
  }
}

static void test_damage_body(void) {
  char dir[4096], jp[4200];
  recs r;
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, r.off[4] + 32 + r.len[4] / 2);
  check_refused(dir, jp, &r, 4, "fails its check");
  rm_store(dir);
  /* the first record, and the one before the last */
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, r.off[0] + 32 + 3);
  check_refused(dir, jp, &r, 0, "fails its check");
  rm_store(dir);
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, r.off[NREC - 2] + 40);
  check_refused(dir, jp, &r, NREC - 2, "fails its check");
  rm_store(dir);
}

/* The last record damaged, cut short, or the file cut inside a record:
** what a crash in the middle of an append leaves (the record was never
** acknowledged), dropped silently with the records before it replayed. */
static void test_torn_tails(void) {
  char dir[4096], jp[4200];
  recs r;
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, r.off[NREC - 1] + 32 + r.len[NREC - 1] - 1);
  CHECK(opened_current(dir, NULL) == NREC);
  rm_store(dir);
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, r.off[NREC - 1] + 5);
  CHECK(opened_current(dir, NULL) == NREC);
  rm_store(dir);
  /* the file cut in the middle of record 6: indistinguishable from a crash
  ** during its append once the rest is gone */
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  CHECK(truncate(jp, r.off[6] + 20) == 0);
  CHECK(opened_current(dir, NULL) == 7);
  rm_store(dir);
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  CHECK(truncate(jp, r.off[6] + 32 + r.len[6] / 2) == 0);
  CHECK(opened_current(dir, NULL) == 7);
  rm_store(dir);
}

/* What lies past the last record — zeros, garbage, even the records'
** magic — changes nothing. */
static void test_trailing(void) {
  char dir[4096], jp[4200];
  recs r;
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  int fd = open(jp, O_RDWR);
  unsigned char junk[300];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 37 + 11);
  memcpy(junk + 100, "JREC", 4);
  CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, r.off[NREC]) == (ssize_t)sizeof junk);
  close(fd);
  CHECK(opened_current(dir, NULL) == NREC + 1);
  rm_store(dir);
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);   /* zeros: what a preallocated file holds */
  CHECK(truncate(jp, r.off[NREC]) == 0 && truncate(jp, r.off[NREC] + (1 << 20)) == 0);
  CHECK(opened_current(dir, NULL) == NREC + 1);
  rm_store(dir);
}

/* The header is written twice: one damaged copy is outvoted; both
** damaged, the records' epoch cannot be told apart from an old one. */
static void test_damage_header(void) {
  char dir[4096], jp[4200], err[1024];
  recs r;
  store_env *s;
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, 9);
  CHECK(opened_current(dir, NULL) == NREC + 1);
  rm_store(dir);
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, 2048 + 20);
  CHECK(opened_current(dir, NULL) == NREC + 1);
  rm_store(dir);
  damage_setup(dir, sizeof dir, jp, sizeof jp, &r);
  flip(jp, 9);
  flip(jp, 2048 + 9);
  store_journal_loss loss;
  store_options o = { .loss = &loss };
  CHECK(store_open_with(dir, 0, &o, &s, err, sizeof err) == STORE_EJOURNAL);
  CHECK(strstr(err, "its header is damaged (both copies)") && strstr(err, "10 intact records of epoch"));
  CHECK(loss.header && loss.records == NREC && loss.revisions == NREC);
  o.accept_loss = 1;
  CHECK(opened_current(dir, &o) == 1 && loss.header && loss.event_seq == 1);
  o.accept_loss = 0;
  CHECK(opened_current(dir, &o) == 1 && !loss.damaged);
  /* and journal mode goes on from an epoch past every one in the file */
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK && store_journal_begin(s) == STORE_OK);
  CHECK(put_later(s, 1, "k", "after", 2) == STORE_OK && store_sync(s, err, sizeof err) == STORE_OK);
  store_close(s);
  CHECK(opened_current(dir, NULL) == 2);
  rm_store(dir);
}

/* Records of a former epoch beyond the current one's are not counted as
** writes the damage would lose, and stop the search for them. */
static void test_damage_among_old_records(void) {
  char dir[4096], jp[4200], err[1024];
  store_env *s;
  /* 10 writes, a checkpoint after 8: the new epoch's 2 records lie over
  ** the old epoch's first ones, its records 2..7 beyond them */
  after_crash(dir, sizeof dir, 10, 8, jp, sizeof jp);
  unsigned char h[32];
  int fd = open(jp, O_RDONLY);
  CHECK(fd >= 0 && pread(fd, h, 32, 4096) == 32);
  close(fd);
  off_t second = 4096 + 32 + rec_len(h);
  /* the new epoch's first record damaged: its second one follows, the old ones do not count */
  flip(jp, 4096 + 40);
  store_journal_loss loss;
  store_options o = { .loss = &loss };
  CHECK(store_open_with(dir, 0, &o, &s, err, sizeof err) == STORE_EJOURNAL);
  CHECK(loss.records == 1 && loss.revisions == 2 && loss.first_rev == 10 && loss.last_rev == 11);
  CHECK(strstr(err, "1 intact record after it") && strstr(err, "revisions 10 to 11"));
  rm_store(dir);
  /* the new epoch's last record torn: the old records after it are no writes of its */
  after_crash(dir, sizeof dir, 10, 8, jp, sizeof jp);
  flip(jp, second + 40);
  CHECK(opened_current(dir, NULL) == 10);
  rm_store(dir);
}

/* A writer killed right after its checkpoint's commit, before the next
** epoch's header: data.mdb holds the whole epoch, whose records are still
** the journal's.  Damage among them then loses nothing, and replaying only
** the records before it must not set the keys they touch back. */
static void kill_hook(void *arg, store_point at) {
  (void)arg;
  if (at == STORE_AT_AFTER_CHECKPOINT) raise(SIGKILL);
}

static int checkpointed_writer(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  store_options o = { .hook = kill_hook };
  if (store_open_with(dir, 0, &o, &s, err, n) != STORE_OK || store_journal_begin(s) != STORE_OK) return 1;
  for (int i = 1; i <= NREC; i++) {
    char v[32];
    snprintf(v, sizeof v, "%d", i);
    if (put_later(s, (uint64_t)i, "k", v, (uint64_t)i + 1) != STORE_OK) return 2;
  }
  if (store_sync(s, err, n) != STORE_OK) return 3;
  (void)store_checkpoint(s);   /* dies in it */
  return 4;
}

static void test_damage_after_checkpoint(void) {
  char dir[4096], jp[4200], msg[1024], buf[64];
  for (int torn = 0; torn < 2; torn++) {
    tmp_store(dir, sizeof dir);
    CHECK(base(dir) == STORE_OK);
    CHECK(st_in_child(checkpointed_writer, dir, NULL, msg, sizeof msg) == -SIGKILL);
    snprintf(jp, sizeof jp, "%s/journal", dir);
    recs r;
    int fd = open(jp, O_RDONLY);
    unsigned char h[32];
    r.off[0] = 4096;
    for (int i = 0; i < NREC; i++) {
      CHECK(fd >= 0 && pread(fd, h, 32, r.off[i]) == 32);
      r.off[i + 1] = r.off[i] + 32 + (off_t)rec_len(h);
    }
    close(fd);
    flip(jp, torn ? r.off[NREC] - 3 : r.off[4] + 40);
    CHECK(opened_current(dir, NULL) == NREC + 1);
    store_env *s;
    CHECK(store_open(dir, STORE_RDONLY, &s, msg, sizeof msg) == STORE_OK);
    CHECK_STR(value_of(s, "k", buf, sizeof buf), "10");
    store_close(s);
    rm_store(dir);
  }
}

/* A record whose check passes but whose operations do not parse is no
** torn tail (it was written whole): refused, even as the last record. */
static void test_malformed_record(void) {
  char dir[4096], err[1024], jp[4200];
  store_env *s;
  after_crash(dir, sizeof dir, 1, 0, jp, sizeof jp);
  int fd = open(jp, O_RDWR);
  CHECK(fd >= 0);
  unsigned char h[32], payload[4096];
  CHECK(pread(fd, h, 32, 4096) == 32);
  unsigned len = rec_len(h);
  CHECK(len < sizeof payload && pread(fd, payload, len, 4096 + 32) == (ssize_t)len);
  payload[0] = 9;   /* no such operation */
  unsigned char md[32];
  SHA256_CTX c;
  SHA256_Init(&c);
  SHA256_Update(&c, h, 24);
  SHA256_Update(&c, payload, len);
  SHA256_Final(md, &c);
  memcpy(h + 24, md, 8);
  CHECK(pwrite(fd, h, 32, 4096) == 32 && pwrite(fd, payload, len, 4096 + 32) == (ssize_t)len);
  close(fd);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_EJOURNAL);
  CHECK(strstr(err, "record 0 of epoch") && strstr(err, "matches its check but its operations do not parse"));
  /* moved aside, the store opens at its last checkpoint */
  char aside[4300];
  snprintf(aside, sizeof aside, "%s.aside", jp);
  CHECK(rename(jp, aside) == 0);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 1);
  store_close(s);
  /* or dropped by the operator's choice */
  CHECK(rename(aside, jp) == 0);
  store_journal_loss loss;
  store_options o = { .accept_loss = 1, .loss = &loss };
  CHECK(opened_current(dir, &o) == 1 && loss.damaged && loss.records == 0);
  rm_store(dir);
}

typedef struct other { store_env *s; int r; } other;

static void *from_other(void *arg) {
  other *o = arg;
  uint64_t c;
  o->r = store_current(o->s, &c);
  return NULL;
}

static void test_in_process(void) {
  char dir[4096], err[1024], buf[64];
  store_env *s;
  tmp_store(dir, sizeof dir);
  CHECK(base(dir) == STORE_OK);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_journal_begin(s) == STORE_OK);
  CHECK(!store_journal_pending(s));
  CHECK(put_later(s, 1, "k", "a", 2) == STORE_OK);
  CHECK(store_journal_pending(s));
  /* a write on a stale parent fails and leaves nothing */
  CHECK(put_later(s, 1, "k", "b", 3) == STORE_ESTALE);
  CHECK(current(s) == 2);
  CHECK_STR(value_of(s, "k", buf, sizeof buf), "a");
  /* another thread is refused while writes are pending */
  other o = { s, -1 };
  pthread_t t;
  CHECK(pthread_create(&t, NULL, from_other, &o) == 0);
  pthread_join(t, NULL);
  CHECK(o.r == STORE_EPERM);
  /* events appended later are journaled with them */
  const char *note = "\"event\":\"note\"";
  store_ev e = { NULL, note, strlen(note), 0 };
  uint64_t first = 0;
  CHECK(store_events_append_later(s, &e, 1, &first) == STORE_OK && first == 2);
  /* a full commit checkpoints first, then goes on */
  store_rev_info i3 = info_of(STORE_REV_APPLICATION, 3, "full");
  store_entry e3 = ent(STORE_DATA, "k", "c");
  CHECK(store_publish(s, 2, &i3, &e3, 1, NULL, 0, NULL) == STORE_OK);
  CHECK(!store_journal_pending(s));
  CHECK(current(s) == 3);
  /* the other thread may read again */
  o.r = -1;
  CHECK(pthread_create(&t, NULL, from_other, &o) == 0);
  pthread_join(t, NULL);
  CHECK(o.r == STORE_OK);
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 3);
  CHECK_STR(value_of(s, "k", buf, sizeof buf), "c");
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 2);
  store_close(s);
  rm_store(dir);
}

/* Journaled writes that outgrow the map: checkpoint, grow, go on. */
static void test_map_growth(void) {
  char dir[4096], err[1024], buf[64];
  store_env *s;
  tmp_store(dir, sizeof dir);
  CHECK(base(dir) == STORE_OK);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_journal_begin(s) == STORE_OK);
  size_t big = 3u << 20;
  char *text = malloc(big + 1);
  uint64_t cur = 1;
  for (int i = 0; i < 40; i++) {   /* 120 MiB of entries through a 64 MiB map */
    memset(text, 'a' + i % 26, big);
    text[big] = '\0';
    char name[16];
    snprintf(name, sizeof name, "blob%d", i);
    store_rev_info info = info_of(STORE_REV_APPLICATION, cur + 1, "big");
    store_entry e = ent(STORE_DATA, name, text);
    store_rev_in in = { &info, &e, 1, NULL, 0, NULL, 0, 0, 0, NULL };
    int r = store_publish_group(s, cur, &in, 1, STORE_GROUP_SYNC_LATER, NULL, NULL);
    CHECK(r == STORE_OK);
    if (r != STORE_OK) {
      fprintf(stderr, "%s\n", store_errmsg(s));
      break;
    }
    cur++;
  }
  free(text);
  CHECK(store_sync(s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 41);
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 41);
  CHECK(strlen(value_of(s, "blob39", buf, sizeof buf)) > 0);
  store_close(s);
  rm_store(dir);
}

/* Writes that overwrite the same rows free as many pages as they take:
** when the checkpoint's commit finds no room for its free list, the map
** grows and the journal's records are committed again, in full. */
static void test_checkpoint_map_full(void) {
  char dir[4096], err[1024];
  store_env *s;
  tmp_store(dir, sizeof dir);
  CHECK(base(dir) == STORE_OK);
  store_options o = { .mapsize = 1u << 20 };
  CHECK(store_open_with(dir, 0, &o, &s, err, sizeof err) == STORE_OK);
  CHECK(store_journal_begin(s) == STORE_OK);
  char v[2048];
  uint64_t cur = 1;
  int failed = 0;
  for (int i = 1; i <= 20000 && !failed; i++) {
    snprintf(v, sizeof v, "%0*d", (int)sizeof v - 1, i);
    failed = put_later(s, cur, "k", v, cur + 1) != STORE_OK || store_journal_broken(s);
    if (failed) fprintf(stderr, "write %d: %s\n", i, store_journal_broken(s) ? store_journal_broken(s) : store_errmsg(s));
    cur += !failed;
    if (i % 1000 == 0 && !failed) failed = store_checkpoint(s) != STORE_OK;
  }
  CHECK(!failed);
  CHECK(store_checkpoint(s) == STORE_OK);
  CHECK(current(s) == 20001);
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 20001);
  CHECK(atoi(value_of(s, "k", v, sizeof v)) == 20000);
  store_close(s);
  rm_store(dir);
}

/* After a checkpoint, a map more than half in use is doubled; one with
** room, or a handle with journaled writes pending, is left as it is. */
static void test_make_room(void) {
  char dir[4096], err[1024], v[2048];
  store_env *s;
  store_stat st;
  tmp_store(dir, sizeof dir);
  store_options o = { .mapsize = 1u << 20 };
  CHECK(base_with(dir, &o) == STORE_OK);
  CHECK(store_open_with(dir, 0, &o, &s, err, sizeof err) == STORE_OK);
  CHECK(store_journal_begin(s) == STORE_OK);
  CHECK(store_make_room(s) == STORE_OK);
  CHECK(store_stats(s, &st) == STORE_OK && st.mapsize == 1u << 20);   /* room enough */
  uint64_t cur = 1;
  int i = 0;
  for (; st.file_pages * st.page_size <= st.mapsize / 2 && i < 1000; i++) {
    char k[32];
    snprintf(k, sizeof k, "k%d", i);
    snprintf(v, sizeof v, "%0*d", (int)sizeof v - 1, i);
    int r = put_later(s, cur, k, v, cur + 1);
    CHECK(r == STORE_OK);
    if (r != STORE_OK) {
      fprintf(stderr, "write %d: %s\n", i, store_errmsg(s));
      break;
    }
    cur++;
    CHECK(store_make_room(s) == STORE_OK);   /* pending writes: not now */
    CHECK(store_checkpoint(s) == STORE_OK);
    CHECK(store_stats(s, &st) == STORE_OK);
    CHECK(st.mapsize == 1u << 20);
  }
  CHECK(i < 1000);
  CHECK(store_make_room(s) == STORE_OK);   /* more than half in use: doubled */
  CHECK(store_stats(s, &st) == STORE_OK && st.mapsize == 2u << 20);
  CHECK(put_later(s, cur, "after", "x", cur + 1) == STORE_OK);   /* writes go on */
  CHECK(store_checkpoint(s) == STORE_OK);
  CHECK(current(s) == cur + 1);
  store_close(s);
  rm_store(dir);
}

/* A group whose second revision fails after the first has written, as
** revision 3 of a store whose revision 2 is journaled and not yet
** checkpointed; its message is the failure's. */
static int failing_group(store_env *s) {
  store_rev_info i1 = info_of(STORE_REV_APPLICATION, 3, "first"), i2 = info_of(STORE_REV_APPLICATION, 3, "second");
  store_entry e1 = ent(STORE_DATA, "grouped", "yes");
  store_key gone = { STORE_DATA, "never-there" };
  store_rev_in in[2] = {
    { &i1, &e1, 1, NULL, 0, NULL, 0, 0, 0, NULL },
    { &i2, NULL, 0, &gone, 1, NULL, 0, 0, 0, NULL },   /* removes a key the map lacks: fails */
  };
  int r = store_publish_group(s, 2, in, 2, STORE_GROUP_SYNC_LATER, NULL, NULL);
  if (r == STORE_EINVAL && !strstr(store_errmsg(s), "cannot remove")) return -1;
  return r;
}

/* In a child: a write, the failing group, a write, synced; then a crash. */
static int fail_between(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  if (store_open(dir, 0, &s, err, n) != STORE_OK) return 1;
  if (store_journal_begin(s) != STORE_OK) return 2;
  if (put_later(s, 1, "before", "1", 2) != STORE_OK) return 3;
  if (failing_group(s) != STORE_EINVAL) return snprintf(err, n, "%s", store_errmsg(s)), 4;
  if (put_later(s, 2, "after", "3", 3) != STORE_OK) return snprintf(err, n, "%s", store_errmsg(s)), 5;
  if (store_sync(s, err, n) != STORE_OK) return 6;
  _exit(0);
}

/* What a reopened store holds after `before`, the failing group, `after`. */
static void check_failed_group_gone(const char *dir) {
  char err[1024], buf[64], v[32];
  store_env *s;
  store_stat st;
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(current(s) == 3);
  CHECK(strcmp(value_of(s, "grouped", buf, sizeof buf), "") == 0);
  CHECK(strcmp(value_of(s, "before", buf, sizeof buf), "1") == 0);
  CHECK(strcmp(value_of(s, "after", buf, sizeof buf), "3") == 0);
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 2);   /* each put's event, once */
  CHECK(store_verify(s, 0, v, sizeof v) == STORE_OK);
  store_close(s);
}

/* In journal mode a group is one record: when one of its revisions fails
** after the others have written their entries, nothing of the group is
** kept — not in this handle, not after a checkpoint, not after a reopen,
** not after a crash — the journaled write before it stays, and the writes
** after it go on from the same parent. */
static void test_failed_group_leaves_nothing(void) {
  char dir[4096], err[1024], buf[64];
  store_env *s;
  /* in the handle, then through a checkpoint */
  tmp_store(dir, sizeof dir);
  CHECK(base(dir) == STORE_OK);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_journal_begin(s) == STORE_OK);
  CHECK(put_later(s, 1, "before", "1", 2) == STORE_OK);
  CHECK(failing_group(s) == STORE_EINVAL);
  CHECK(current(s) == 2);
  CHECK(strcmp(value_of(s, "grouped", buf, sizeof buf), "") == 0);
  CHECK(strcmp(value_of(s, "before", buf, sizeof buf), "1") == 0);
  CHECK(store_journal_broken(s) == NULL);
  CHECK(put_later(s, 2, "after", "3", 3) == STORE_OK);   /* the next write takes revision 3 */
  CHECK(current(s) == 3);
  CHECK(store_sync(s, err, sizeof err) == STORE_OK);
  store_close(s);   /* checkpoints */
  check_failed_group_gone(dir);
  rm_store(dir);
  /* through a crash: the journal alone holds `after` */
  tmp_store(dir, sizeof dir);
  CHECK(base(dir) == STORE_OK);
  CHECK(st_in_child(fail_between, dir, NULL, err, sizeof err) == 0);
  check_failed_group_gone(dir);
  rm_store(dir);
}

int main(void) {
  test_replay();
  test_epochs();
  test_torn_tail();
  test_live_writer();
  test_malformed_record();
  test_damage_head();
  test_damage_body();
  test_torn_tails();
  test_trailing();
  test_damage_header();
  test_damage_among_old_records();
  test_damage_after_checkpoint();
  test_in_process();
  test_map_growth();
  test_checkpoint_map_full();
  test_make_room();
  test_failed_group_leaves_nothing();
  return CHECK_DONE();
}
