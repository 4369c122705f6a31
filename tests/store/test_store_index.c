/* test_store_index.c — what the store keeps of its events beside them
** (format 3): the open attempts and the attempt mark, idempotency keys
** (their digests, the newest STORE_KEYS_MAX, key-only records), counters,
** the migration of an older store, the retention policy (what is pruned
** and what is always kept), and all of it through the journal. */
#include "st_test.h"
#include <jansson.h>

static void hex_of(const char *key, char hex[65]) {
  uint8_t d[32];
  store_digest(key, strlen(key), d);
  store_hash_hex(d, hex);
}

/* An event as members text (store_ev), time 0. */
static store_ev text_ev(const char *members) { return (store_ev){NULL, members, strlen(members), 0}; }

typedef struct Keys { int n; char first[4096], last[4096]; uint8_t first_digest[32], last_digest[32]; } Keys;

static int take_key(void *arg, const uint8_t digest[32], const char *json, size_t len) {
  Keys *k = arg;
  char *dst = k->n++ ? k->last : k->first;
  snprintf(dst, 4096, "%.*s", (int)len, json);
  memcpy(k->n == 1 ? k->first_digest : k->last_digest, digest, 32);
  if (k->n == 1) { memcpy(k->last, k->first, 4096); memcpy(k->last_digest, digest, 32); }
  return 0;
}

static Keys keys_of(store_env *s) {
  Keys k;
  memset(&k, 0, sizeof k);
  CHECK(store_keys_read(s, take_key, &k) == STORE_OK);
  return k;
}

typedef struct Counts { int n; char text[2048]; } Counts;

static int take_count(void *arg, const store_count *c) {
  Counts *a = arg;
  size_t at = strlen(a->text);
  snprintf(a->text + at, sizeof a->text - at, "%s/%s=%llu;", c->kind, c->outcome, (unsigned long long)c->n);
  a->n++;
  return 0;
}

static uint64_t next_attempt(store_env *s) {
  uint64_t n = 0;
  CHECK(store_next_attempt(s, &n) == STORE_OK);
  return n;
}

/* ---- attempts */

static void test_attempts(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t count = 9;
  store_stat st;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(next_attempt(s) == 1);
  store_ev ev[] = {text_ev("\"event\":\"started\",\"attempt\":1"), text_ev("\"event\":\"accepted\",\"attempt\":1"),
                   text_ev("\"event\":\"started\",\"attempt\":2,\"source\":\"(f)\""),
                   text_ev("\"event\":\"started\",\"attempt\":3"),
                   text_ev("\"event\":\"rejected\",\"attempt\":3,\"outcome\":\"unsafe\"")};
  CHECK(store_events_append_later(s, ev, 5, NULL) == STORE_OK);
  json_t *o = json_pack("{s:s, s:i}", "event", "started", "attempt", 4);
  CHECK(store_events_append_objects(s, &o, NULL, 1, NULL) == STORE_OK);
  json_decref(o);
  CHECK(next_attempt(s) == 5);
  CHECK(store_stats(s, &st) == STORE_OK && st.open_attempts == 2 && st.format == STORE_FORMAT_VERSION);
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 2);
  CHECK(store_stats(s, &st) == STORE_OK && st.open_attempts == 0 && st.last_event == 8);
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 0);
  /* a tally raises the mark: numbers handed out without events are not
  ** handed out again */
  store_tally t = {NULL, 0, NULL, 0, 9};
  CHECK(store_tally_add(s, &t, 0) == STORE_OK);
  CHECK(next_attempt(s) == 10);
  store_close(s);
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(next_attempt(s) == 10);
  CHECK(store_mark_interrupted(s, &count) == STORE_EPERM);
  store_close(s);
  rm_store(dir);
}

/* ---- keys */

static void test_keys(void) {
  char dir[4096], err[1024], hex[65], other[65], m[512];
  store_env *s;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  /* a key that looks like an API key: only its digest is written, so
  ** redaction never sees it */
  hex_of("sk-abcdefgh12345678", hex);
  hex_of("[redacted]", other);
  snprintf(m, sizeof m, "\"event\":\"started\",\"attempt\":1,\"idempotency\":\"%s\"", hex);
  store_ev started = text_ev(m);
  CHECK(store_events_append_later(s, &started, 1, NULL) == STORE_OK);
  Keys k = keys_of(s);
  CHECK(k.n == 0);   /* a start is not an outcome */
  char m2[512];
  snprintf(m2, sizeof m2, "\"event\":\"accepted\",\"attempt\":1,\"outcome\":\"accepted\",\"revision\":4,"
           "\"idempotency\":\"%s\",\"request\":\"%s\"", hex, other);
  store_ev acc = text_ev(m2);
  CHECK(store_events_append_later(s, &acc, 1, NULL) == STORE_OK);
  k = keys_of(s);
  CHECK(k.n == 1 && strstr(k.first, "\"seq\":2,") == k.first + 1 && strstr(k.first, hex) && strstr(k.first, "\"revision\":4"));
  char want[65];
  store_hash_hex(k.first_digest, want);
  CHECK_STR(want, hex);
  /* the key "[redacted]" is a key of its own */
  json_t *o = json_pack("{s:s, s:i, s:s, s:s}", "event", "aborted", "attempt", 2, "outcome", "error", "idempotency", other);
  CHECK(store_events_append_objects(s, &o, NULL, 1, NULL) == STORE_OK);
  json_decref(o);
  k = keys_of(s);
  CHECK(k.n == 2 && strstr(k.last, "\"outcome\":\"error\"") && strstr(k.first, "\"revision\":4"));
  /* a value that is not a digest keeps nothing; the same key again
  ** replaces its record (it becomes the newest) */
  store_ev plain = text_ev("\"event\":\"accepted\",\"attempt\":3,\"idempotency\":\"k-1\"");
  snprintf(m2, sizeof m2, "\"event\":\"failed\",\"attempt\":4,\"outcome\":\"limit\",\"idempotency\":\"%s\"", hex);
  store_ev again = text_ev(m2);
  CHECK(store_events_append_later(s, &plain, 1, NULL) == STORE_OK);
  CHECK(store_events_append_later(s, &again, 1, NULL) == STORE_OK);
  k = keys_of(s);
  CHECK(k.n == 2 && strstr(k.first, other) && strstr(k.last, "\"outcome\":\"limit\""));
  /* key-only records: kept as keys, not as events, with seq 0 */
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 5 && st.keys == 2);
  char m3[512];
  char third[65];
  hex_of("k-3", third);
  snprintf(m3, sizeof m3, "\"event\":\"accepted\",\"attempt\":7,\"outcome\":\"accepted\",\"idempotency\":\"%s\"", third);
  store_ev ko[2] = {text_ev(m3), text_ev("\"event\":\"accepted\",\"attempt\":8")};
  store_tally t = {NULL, 0, ko, 2, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_OK);
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 5 && st.keys == 3);
  k = keys_of(s);
  CHECK(k.n == 3 && strncmp(k.last, "{\"seq\":0,\"time\":", 16) == 0 && strstr(k.last, third));
  CHECK(next_attempt(s) == 9);
  store_ev bad = text_ev("not members");
  t = (store_tally){NULL, 0, &bad, 1, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_EINVAL);
  /* the newest STORE_KEYS_MAX: the oldest go */
  size_t n = STORE_KEYS_MAX + 5;
  store_ev *many = calloc(n, sizeof *many);
  char (*texts)[160] = calloc(n, sizeof *texts);
  for (size_t i = 0; i < n; i++) {
    char key[32], h[65];
    snprintf(key, sizeof key, "bulk-%zu", i);
    hex_of(key, h);
    snprintf(texts[i], sizeof texts[i], "\"event\":\"accepted\",\"attempt\":%zu,\"idempotency\":\"%s\"", 100 + i, h);
    many[i] = text_ev(texts[i]);
  }
  t = (store_tally){NULL, 0, many, n, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_OK);
  k = keys_of(s);
  char h0[65], hn[65];
  hex_of("bulk-5", h0);   /* the 3 before and bulk-0..4 went */
  hex_of("bulk-10004", hn);
  CHECK(k.n == (int)STORE_KEYS_MAX && strstr(k.first, h0) && strstr(k.last, hn));
  CHECK(store_stats(s, &st) == STORE_OK && st.keys == STORE_KEYS_MAX);
  free(many);
  free(texts);
  store_close(s);
  /* a read-only handle reads them */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  k = keys_of(s);
  CHECK(k.n == (int)STORE_KEYS_MAX);
  store_close(s);
  rm_store(dir);
}

/* ---- counters */

static void test_counters(void) {
  char dir[4096], err[1024];
  store_env *s;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_count c[] = {{"call", "accepted", 3, 0, 1000}, {"call", "error", 1, 0, 0}, {"observe", "ok", 2, 0, 0}};
  store_tally t = {c, 3, NULL, 0, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_OK);
  store_count more = {"call", "accepted", 2, 0, 2000};
  t = (store_tally){&more, 1, NULL, 0, 0};
  CHECK(store_tally_add(s, &t, STORE_GROUP_SYNC_LATER) == STORE_OK);
  Counts a = {0, ""};
  CHECK(store_counters_read(s, take_count, &a) == STORE_OK);
  CHECK_STR(a.text, "call/accepted=5;call/error=1;observe/ok=2;");
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.counters == 3 && st.events == 0);
  /* bad names write nothing */
  store_count bad[] = {{"call", "ok", 1, 0, 0}, {"", "x", 1, 0, 0}};
  t = (store_tally){bad, 2, NULL, 0, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_EINVAL);
  char longname[STORE_COUNTER_NAME_MAX + 2];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  store_count toolong = {longname, "ok", 1, 0, 0};
  t = (store_tally){&toolong, 1, NULL, 0, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_EINVAL);
  CHECK(store_tally_add(s, NULL, 0) == STORE_EINVAL);
  memset(&a, 0, sizeof a);
  CHECK(store_counters_read(s, take_count, &a) == STORE_OK && a.n == 3);
  store_close(s);
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  t = (store_tally){c, 1, NULL, 0, 0};
  CHECK(store_tally_add(s, &t, 0) == STORE_EPERM);
  memset(&a, 0, sizeof a);
  CHECK(store_counters_read(s, take_count, &a) == STORE_OK);
  CHECK_STR(a.text, "call/accepted=5;call/error=1;observe/ok=2;");
  store_close(s);
  rm_store(dir);
}

/* ---- the migration from format 2 */

static int drop_db(const char *dir, const char *db) {
  raw r;
  if (raw_open(&r, dir, db) != 0) return -1;
  mdb_drop(r.txn, r.dbi, 1);
  return raw_close(&r, 1);
}

static void test_migration(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t count = 0;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  /* what an older kernel wrote: the key itself in "idempotency" (one
  ** that looked like a secret was redacted) */
  const char *evs[] = {
    "{\"event\":\"started\",\"attempt\":1,\"idempotency\":\"k-legacy\"}",
    "{\"event\":\"accepted\",\"attempt\":1,\"outcome\":\"accepted\",\"revision\":2,\"idempotency\":\"k-legacy\"}",
    "{\"event\":\"started\",\"attempt\":2,\"idempotency\":\"sk-abcdefgh12345678\"}",
    "{\"event\":\"aborted\",\"attempt\":2,\"outcome\":\"error\",\"idempotency\":\"sk-abcdefgh12345678\"}",
    "{\"event\":\"started\",\"attempt\":3}",
  };
  for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) CHECK(store_event_append(s, evs[i], NULL) == STORE_OK);
  store_close(s);
  /* make it a format-2 store: no indices */
  unsigned char v2[4] = {0, 0, 0, 2};
  CHECK(drop_db(dir, "attempts") == 0 && drop_db(dir, "keys") == 0 && drop_db(dir, "keyorder") == 0 &&
        drop_db(dir, "counters") == 0);
  CHECK(raw_del(dir, "meta", "attempt", 7) == 0);
  CHECK(raw_put(dir, "meta", "format", 6, v2, 4) == 0);
  /* read as it is: no indices, the attempt counted from the events */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(next_attempt(s) == 4);
  Keys k = keys_of(s);
  CHECK(k.n == 0);
  Counts a = {0, ""};
  CHECK(store_counters_read(s, take_count, &a) == STORE_OK && a.n == 0);
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.events == 5 && st.keys == 0);
  store_close(s);
  unsigned char fmt[4];
  CHECK(raw_get(dir, "meta", "format", 6, fmt, 4) == 4 && fmt[3] == 2);
  /* opened for writing: upgraded, the indices built from the events */
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(raw_get(dir, "meta", "format", 6, fmt, 4) == 4 && fmt[3] == STORE_FORMAT_VERSION);
  CHECK(next_attempt(s) == 4);
  k = keys_of(s);
  char hex[65], want[65];
  hex_of("k-legacy", hex);
  store_hash_hex(k.first_digest, want);
  CHECK(k.n == 1 && !strcmp(want, hex) && strstr(k.first, "\"revision\":2"));   /* not "[redacted]" */
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 1);
  store_close(s);
  rm_store(dir);
}

/* ---- retention */

typedef struct Seqs { int n; uint64_t v[256]; } Seqs;

static int take_seq(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)json, (void)len;
  Seqs *q = arg;
  if (q->n < 256) q->v[q->n] = seq;
  q->n++;
  return 0;
}

static int has_seq(const Seqs *q, uint64_t seq) {
  for (int i = 0; i < q->n && i < 256; i++)
    if (q->v[i] == seq) return 1;
  return 0;
}

static Seqs seqs_of(store_env *s) {
  Seqs q;
  memset(&q, 0, sizeof q);
  CHECK(store_events_read(s, 0, 0, 0, take_seq, &q) == STORE_OK);
  return q;
}

static void test_prune(void) {
  char dir[4096], err[1024], hex[65];
  store_env *s;
  store_pruned out;
  uint64_t count = 0;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  hex_of("kept-key", hex);
  /* 100 events at times 1000, 2000, ...: a transcript at 5 and 50, the
  ** open attempt 7 started at 10, a keyed outcome at 20 */
  for (int i = 1; i <= 100; i++) {
    json_t *o;
    if (i == 5 || i == 50) o = json_pack("{s:s, s:s}", "session", "s1", "event", "session-step");
    else if (i == 10) o = json_pack("{s:s, s:i}", "event", "started", "attempt", 7);
    else if (i == 20) o = json_pack("{s:s, s:i, s:s, s:s}", "event", "accepted", "attempt", 8, "outcome", "accepted",
                                    "idempotency", hex);
    else o = json_pack("{s:s, s:i}", "event", "condition", "n", i);
    int64_t t = 1000 * (int64_t)i;
    CHECK(store_events_append_objects(s, &o, &t, 1, NULL) == STORE_OK);
    json_decref(o);
  }
  store_retention r = {0};
  CHECK(store_events_prune(s, &r, &out) == STORE_EINVAL);   /* no bound */
  r.keep = 20;
  r.max_delete = 30;
  CHECK(store_events_prune(s, &r, &out) == STORE_OK && out.deleted == 30 && out.more == 1);
  r.max_delete = 0;
  CHECK(store_events_prune(s, &r, &out) == STORE_OK);
  CHECK(out.deleted == 47 && out.more == 0 && out.remaining == 23);
  Seqs q = seqs_of(s);
  CHECK(q.n == 23 && q.v[0] == 5 && q.v[1] == 10 && q.v[2] == 50 && q.v[3] == 81 && q.v[22] == 100);
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.first_event == 5 && st.last_event == 100 && st.events == 23);
  /* nothing more to do: nothing changes */
  CHECK(store_events_prune(s, &r, &out) == STORE_OK && out.deleted == 0 && out.remaining == 23);
  /* the key outlives its event */
  Keys k = keys_of(s);
  CHECK(k.n == 1 && strstr(k.first, hex) && strstr(k.first, "\"seq\":20,"));
  /* recovery after pruning: the open attempt is marked, its start is
  ** reported, and may then go */
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 1);
  q = seqs_of(s);
  CHECK(q.n == 24 && q.v[23] == 101);
  CHECK(store_events_prune(s, &r, &out) == STORE_OK && out.deleted == 2);   /* 10 and 81 */
  q = seqs_of(s);
  CHECK(!has_seq(&q, 10) && !has_seq(&q, 81) && has_seq(&q, 5) && has_seq(&q, 50) && has_seq(&q, 101));
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 0);
  /* by age: everything older than 30 s at t = 120 s goes (82..89), but
  ** the transcripts stay */
  store_retention age = {0, 30000, 120000, 0, 0};
  CHECK(store_events_prune(s, &age, &out) == STORE_OK && out.deleted == 8);
  q = seqs_of(s);
  CHECK(q.n == 14 && q.v[0] == 5 && q.v[1] == 50 && q.v[2] == 90 && q.v[13] == 101);
  age.now_ms = INT64_MAX / 2;
  CHECK(store_events_prune(s, &age, &out) == STORE_OK);
  q = seqs_of(s);
  CHECK(q.n == 3 && q.v[0] == 5 && q.v[1] == 50 && q.v[2] == 101);   /* the newest stays: the sequence goes on */
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  uint64_t seq = 0;
  CHECK(store_event_append(s, "{\"event\":\"x\"}", &seq) == STORE_OK && seq == 102);
  CHECK(keys_of(s).n == 1);
  store_close(s);
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(store_events_prune(s, &r, &out) == STORE_EPERM);
  store_close(s);
  rm_store(dir);
}

/* ---- through the journal */

static int journal_child(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  if (store_open(dir, 0, &s, err, n) != STORE_OK || store_journal_begin(s) != STORE_OK) return 1;
  store_ev ev[] = {text_ev("\"event\":\"started\",\"attempt\":11"), text_ev("\"event\":\"started\",\"attempt\":12"),
                   text_ev("\"event\":\"accepted\",\"attempt\":12")};
  store_count c = {"call", "accepted", 4, 0, 0};
  store_tally t = {&c, 1, NULL, 0, 13};
  store_retention r = {1, 0, 0, 0, STORE_GROUP_SYNC_LATER};
  store_pruned out;
  if (store_events_append_later(s, ev, 3, NULL) != STORE_OK || store_tally_add(s, &t, STORE_GROUP_SYNC_LATER) ||
      store_events_prune(s, &r, &out) != STORE_OK || out.deleted != 1 ||
      store_sync(s, err, n) != STORE_OK) {
    snprintf(err, n, "%s", store_errmsg(s));
    return 1;
  }
  _exit(0);   /* no checkpoint */
}

static void test_journal(void) {
  char dir[4096], err[1024], msg[1024];
  store_env *s;
  uint64_t count = 0;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_close(s);
  CHECK(st_in_child(journal_child, dir, NULL, msg, sizeof msg) == 0);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  Counts a = {0, ""};
  CHECK(store_counters_read(s, take_count, &a) == STORE_OK);
  CHECK_STR(a.text, "call/accepted=4;");
  CHECK(next_attempt(s) == 14);
  Seqs q = seqs_of(s);
  CHECK(q.n == 2 && q.v[0] == 1 && q.v[1] == 3);   /* 2 pruned; the open attempt's start kept */
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 1);
  store_close(s);
  rm_store(dir);
}

int main(void) {
  test_attempts();
  test_keys();
  test_counters();
  test_migration();
  test_prune();
  test_journal();
  return CHECK_DONE();
}
