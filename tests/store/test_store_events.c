/* test_store_events.c — the event log: append and read both ways,
** redaction, the size bound, invalid input, interrupted attempts. */
#include "st_test.h"
#include <jansson.h>

typedef struct got { int n; uint64_t seqs[64]; char last[20000]; size_t lastlen; } got;

static int take(void *arg, uint64_t seq, const char *json, size_t len) {
  got *g = arg;
  if (g->n < 64) g->seqs[g->n] = seq;
  g->n++;
  if (len < sizeof g->last) { memcpy(g->last, json, len); g->last[len] = '\0'; g->lastlen = len; }
  return 0;
}

static int take_two(void *arg, uint64_t seq, const char *json, size_t len) {
  take(arg, seq, json, len);
  return ((got *)arg)->n >= 2;
}

/* The text of event seq. */
static const char *event_text(store_env *s, uint64_t seq, got *g) {
  memset(g, 0, sizeof *g);
  if (store_events_read(s, seq, 1, 0, take, g) != STORE_OK || g->n != 1 || g->seqs[0] != seq)
    return "(missing)";
  return g->last;
}

static void test_append_read(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t seq = 0;
  got g;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 0, 0, STORE_NEWEST_FIRST, take, &g) == STORE_OK && g.n == 0);
  for (int i = 1; i <= 10; i++) {
    char buf[128];
    snprintf(buf, sizeof buf, "{\"event\":\"condition\",\"n\":%d,\"seq\":999}", i);
    CHECK(store_event_append(s, buf, &seq) == STORE_OK && seq == (uint64_t)i);
  }
  /* seq and time come first, the caller's seq is replaced. */
  const char *t = event_text(s, 3, &g);
  CHECK(strncmp(t, "{\"seq\":3,\"time\":", 16) == 0);
  CHECK(strstr(t, "\"event\":\"condition\",\"n\":3}") != NULL);
  CHECK(strstr(t, "\"seq\":999") == NULL);  /* not "999": the time may hold it */
  /* Oldest first from 4, at most 3. */
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 4, 3, 0, take, &g) == STORE_OK);
  CHECK(g.n == 3 && g.seqs[0] == 4 && g.seqs[2] == 6);
  /* Newest first, from the end. */
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 0, 4, STORE_NEWEST_FIRST, take, &g) == STORE_OK);
  CHECK(g.n == 4 && g.seqs[0] == 10 && g.seqs[3] == 7);
  /* Newest first from 5 down; from beyond the end starts at the end. */
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 5, 0, STORE_NEWEST_FIRST, take, &g) == STORE_OK);
  CHECK(g.n == 5 && g.seqs[0] == 5 && g.seqs[4] == 1);
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 100, 2, STORE_NEWEST_FIRST, take, &g) == STORE_OK);
  CHECK(g.n == 2 && g.seqs[0] == 10);
  /* The callback stops the walk. */
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 1, 0, 0, take_two, &g) == STORE_OK && g.n == 2);
  /* Oldest first from beyond the end: nothing. */
  memset(&g, 0, sizeof g);
  CHECK(store_events_read(s, 11, 0, 0, take, &g) == STORE_OK && g.n == 0);
  /* Invalid input. */
  CHECK(store_event_append(s, "not json", &seq) == STORE_EINVAL);
  CHECK(strstr(store_errmsg(s), "not valid JSON") != NULL);
  CHECK(store_event_append(s, "[1,2]", &seq) == STORE_EINVAL);
  CHECK(store_event_append(s, "{\"a\":1,\"a\":2}", &seq) == STORE_EINVAL);
  CHECK(store_event_append(s, NULL, &seq) == STORE_EINVAL);
  CHECK(store_events_read(s, 0, 0, 0, NULL, NULL) == STORE_EINVAL);
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.events == 10 && st.last_event == 10);
  /* Survives reopening; numbering continues. */
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_event_append(s, "{\"event\":\"x\"}", &seq) == STORE_OK && seq == 11);
  store_close(s);
  rm_store(dir);
}

static void test_redaction_and_bounds(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t seq;
  got g;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_event_append(s,
        "{\"event\":\"model_request\",\"model\":\"gpt\",\"api_key\":\"abc123\","
        "\"headers\":{\"Authorization\":\"Bearer xyz\",\"X-Trace\":\"ok\"},"
        "\"usage\":{\"input_tokens\":12,\"output_tokens\":3},"
        "\"Secret\":{\"nested\":\"s1\",\"list\":[\"s2\",4]},"
        "\"note\":\"sk-live-999\",\"args\":[\"Bearer q\",\"plain\"],"
        "\"PASSWORD\":\"hunter2\",\"session_token\":\"t0k\"}", &seq) == STORE_OK);
  const char *t = event_text(s, seq, &g);
  CHECK(strstr(t, "abc123") == NULL);
  CHECK(strstr(t, "xyz") == NULL);
  CHECK(strstr(t, "s1") == NULL && strstr(t, "s2") == NULL);
  CHECK(strstr(t, "sk-live") == NULL);
  CHECK(strstr(t, "hunter2") == NULL && strstr(t, "t0k") == NULL);
  CHECK(strstr(t, "Bearer q") == NULL);
  CHECK(strstr(t, "\"api_key\":\"[redacted]\"") != NULL);
  CHECK(strstr(t, "\"X-Trace\":\"ok\"") != NULL);
  CHECK(strstr(t, "\"input_tokens\":12") != NULL);   /* numbers are kept */
  CHECK(strstr(t, "\"plain\"") != NULL && strstr(t, "\"model\":\"gpt\"") != NULL);
  CHECK(strstr(t, "4]") != NULL);

  /* A record beyond the bound is replaced by a bounded, valid one. */
  size_t big = 100000;
  char *buf = malloc(big + 100);
  int n = snprintf(buf, big + 100, "{\"event\":\"condition\",\"attempt\":7,\"report\":\"");
  memset(buf + n, 'x', big);
  strcpy(buf + n + big, "\"}");
  CHECK(store_event_append(s, buf, &seq) == STORE_OK);
  free(buf);
  t = event_text(s, seq, &g);
  CHECK(g.lastlen <= STORE_EVENT_MAX);
  CHECK(strstr(t, "\"truncated\":true") != NULL);
  CHECK(strstr(t, "\"event\":\"condition\"") != NULL && strstr(t, "\"attempt\":7") != NULL);
  json_t *j = json_loads(t, 0, NULL);
  CHECK(j != NULL);
  CHECK(json_integer_value(json_object_get(j, "original_bytes")) > 100000);
  json_decref(j);
  /* Escape-heavy text also stays within the bound. */
  buf = malloc(big * 2 + 100);
  n = snprintf(buf, big * 2 + 100, "{\"event\":\"x\",\"r\":\"");
  for (size_t i = 0; i < big; i++) memcpy(buf + n + 2 * i, "\\n", 2);
  strcpy(buf + n + 2 * big, "\"}");
  CHECK(store_event_append(s, buf, &seq) == STORE_OK);
  free(buf);
  event_text(s, seq, &g);
  CHECK(g.lastlen <= STORE_EVENT_MAX);

  /* Parsed events: an empty object, and members named seq and time (the
  ** store's own come first and are the only ones); redacted in place. */
  json_t *objs[2] = {json_object(), json_pack("{s:i, s:s, s:i, s:s}", "seq", 99, "event", "y", "time", 5,
                                               "token", "t1")};
  uint64_t first = 0;
  int64_t when[2] = {1000, 2000};
  CHECK(store_events_append_objects(s, objs, when, 2, &first) == STORE_OK && first == seq + 1);
  char want[128];
  snprintf(want, sizeof want, "{\"seq\":%llu,\"time\":1000}", (unsigned long long)first);
  CHECK_STR(event_text(s, first, &g), want);
  snprintf(want, sizeof want, "{\"seq\":%llu,\"time\":2000,\"event\":\"y\",\"token\":\"[redacted]\"}",
           (unsigned long long)first + 1);
  CHECK_STR(event_text(s, first + 1, &g), want);
  CHECK_STR(json_string_value(json_object_get(objs[1], "token")), "[redacted]");
  json_t *arr = json_array();
  CHECK(store_events_append_objects(s, &arr, NULL, 1, NULL) == STORE_EINVAL);
  json_decref(arr);
  json_decref(objs[0]);
  json_decref(objs[1]);
  store_close(s);
  rm_store(dir);
}

static int count_interrupted(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  int *n = arg;
  if (memmem(json, len, "\"event\":\"interrupted\"", 21)) (*n)++;
  return 0;
}

static void test_mark_interrupted(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t count = 99;
  got g;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 0);
  const char *evs[] = {
    "{\"event\":\"started\",\"attempt\":1}",
    "{\"event\":\"accepted\",\"attempt\":1}",
    "{\"event\":\"started\",\"attempt\":2}",
    "{\"event\":\"condition\",\"attempt\":2}",
    "{\"event\":\"paused\",\"attempt\":2}",
    "{\"event\":\"started\",\"attempt\":3}",
    "{\"event\":\"rejected\",\"attempt\":3,\"reason\":\"unsafe\"}",
    "{\"event\":\"started\",\"attempt\":4}",
    "{\"event\":\"accepted\",\"attempt\":5}",      /* an outcome with no start */
    "{\"event\":\"started\"}",                     /* no attempt id: ignored */
    "{\"event\":\"started\",\"attempt\":\"6\"}",   /* not an integer: ignored */
  };
  for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
    CHECK(store_event_append(s, evs[i], NULL) == STORE_OK);
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 2);
  const char *t = event_text(s, 12, &g);
  CHECK(strstr(t, "\"event\":\"interrupted\",\"attempt\":2") != NULL);
  CHECK(strstr(t, "\"started_seq\":3") != NULL);
  t = event_text(s, 13, &g);
  CHECK(strstr(t, "\"attempt\":4") != NULL);
  /* Marking again finds nothing new. */
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 0);
  /* An attempt id reused after its outcome is open again. */
  CHECK(store_event_append(s, "{\"event\":\"started\",\"attempt\":1}", NULL) == STORE_OK);
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 1);
  int n = 0;
  CHECK(store_events_read(s, 0, 0, 0, count_interrupted, &n) == STORE_OK && n == 3);
  store_close(s);
  /* Read-only handles cannot mark. */
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_OK);
  CHECK(store_mark_interrupted(s, &count) == STORE_EPERM && count == 0);
  store_close(s);
  rm_store(dir);
}

/* A revision and the events that led to it, in one transaction: both or
** neither. */
static void test_publish_with_events(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t rev = 0, first = 0, cur;
  got g;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_entry e = {STORE_DATA, ":k", (const uint8_t *)"1", 1};
  store_rev_info info = {STORE_REV_INITIAL, 1, 0, "t", "first", NULL, NULL};
  json_t *ev[2] = {json_pack("{s:s, s:i}", "event", "started", "attempt", 1),
                   json_pack("{s:s, s:s}", "event", "note", "password", "pw")};
  CHECK(store_publish_with_events(s, 0, &info, &e, 1, NULL, 0, ev, NULL, 2, &rev, &first) == STORE_OK);
  CHECK(rev == 1 && first == 1);
  CHECK(strstr(event_text(s, 1, &g), "\"event\":\"started\"") != NULL);
  CHECK(strstr(event_text(s, 2, &g), "\"password\":\"[redacted]\"") != NULL);
  /* nothing changes: no revision, the events are still written */
  info.kind = STORE_REV_APPLICATION;
  CHECK(store_publish_with_events(s, 1, &info, &e, 1, NULL, 0, ev, NULL, 1, &rev, &first) == STORE_OK);
  CHECK(rev == 1 && first == 3);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 1);
  /* a stale parent: neither */
  store_entry e2 = {STORE_DATA, ":k", (const uint8_t *)"2", 1};
  CHECK(store_publish_with_events(s, 0, &info, &e2, 1, NULL, 0, ev, NULL, 2, &rev, &first) == STORE_ESTALE);
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 3);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 1);
  /* a bad event: neither */
  json_t *bad = json_array();
  CHECK(store_publish_with_events(s, 1, &info, &e2, 1, NULL, 0, &bad, NULL, 1, &rev, &first) == STORE_EINVAL);
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == 3);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 1);
  json_decref(bad);
  json_decref(ev[0]);
  json_decref(ev[1]);
  store_close(s);
  rm_store(dir);
}

/* Events given as members text (store_append_later's store_ev) are stored
** exactly as their objects would be, redacted and bounded the same way;
** text that is not JSON members is refused and nothing is written. */
static void test_members_text(void) {
  char dir[4096], err[1024];
  store_env *s;
  uint64_t first = 0, last = 0;
  got g;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  static const char *const texts[] = {
    "\"event\":\"started\",\"attempt\":3,\"source\":\"(f \\\"\\u00E9\\\")\",\"n\":[1,{\"a\":null}]",
    "\"event\":\"x\",\"api_key\":\"abc123\"",            /* a secret name: redacted */
    "\"event\":\"x\",\"note\":\"sk-live-999\"",          /* a secret value */
    "\"event\":\"x\",\"note\":\"\\u0042earer q\"",     /* one behind an escape */
    "\"seq\":99,\"event\":\"x\",\"time\":5",             /* the store's own members */
    "",                                                   /* {} */
  };
  size_t n = sizeof texts / sizeof texts[0];
  store_ev ev[8];
  for (size_t i = 0; i < n; i++) ev[i] = (store_ev){NULL, texts[i], strlen(texts[i]), 1764480000000 + (int64_t)i};
  CHECK(store_events_append_later(s, ev, n, &first) == STORE_OK && first > 0);
  /* the same events as objects, the object's way */
  json_t *objs[8];
  int64_t times[8];
  for (size_t i = 0; i < n; i++) {
    char t[512];
    snprintf(t, sizeof t, "{%s}", texts[i]);
    objs[i] = json_loads(t, 0, NULL);
    CHECK(objs[i] != NULL);
    times[i] = ev[i].time_ms;
  }
  CHECK(store_events_append_objects(s, objs, times, n, &last) == STORE_OK && last == first + n);
  for (size_t i = 0; i < n; i++) {
    char a[sizeof g.last];
    const char *x = event_text(s, first + i, &g);
    memcpy(a, x, strlen(x) + 1);
    const char *b = event_text(s, last + i, &g);
    /* equal but for the sequence numbers */
    const char *ra = strchr(a, ','), *rb = strchr(b, ',');
    CHECK(ra && rb && !strcmp(ra, rb));
    json_decref(objs[i]);
  }
  CHECK(strstr(event_text(s, first + 1, &g), "abc123") == NULL);
  CHECK(strstr(event_text(s, first + 2, &g), "sk-live") == NULL);
  CHECK(strstr(event_text(s, first + 3, &g), "[redacted]") != NULL);
  CHECK(strstr(event_text(s, first + 4, &g), "99") == NULL);
  CHECK(!strcmp(strchr(event_text(s, first + 5, &g), ','), ",\"time\":1764480000005}"));
  /* not JSON members: refused, nothing written */
  static const char *const bad[] = {"\"a\":", "\"a\":1}", "\"a\":\"open", "\"a\" 1", "[1]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    store_ev b[2] = {{NULL, "\"event\":\"ok\"", 13, 0}, {NULL, bad[i], strlen(bad[i]), 0}};
    uint64_t f = 0;
    CHECK(store_events_append_later(s, b, 2, &f) == STORE_EINVAL);
  }
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == last + n - 1);
  store_close(s);
  rm_store(dir);
}

int main(void) {
  test_members_text();
  test_append_read();
  test_publish_with_events();
  test_redaction_and_bounds();
  test_mark_interrupted();
  return CHECK_DONE();
}
