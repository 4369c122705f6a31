/* test_store_incidents.c — the records of automatic repair (format 4):
** the policy (selectors, precedence, bounds), incidents (deduplication
** against open incidents only, transitions refused from the wrong status
** and out of terminal ones, their events, the log's bound, the evidence's,
** interrupting verifications, a repair revision repairing its incident in
** the same transaction), the traffic sample (reservoir sampling and
** its bounds, deterministic), all of it through the journal, the
** migration of a format-3 store, verify catching damage, and a reopen. */
#include "st_test.h"
#include <jansson.h>

static store_env *open_new(char *dir, size_t n) {
  char err[1024];
  store_env *s = NULL;
  tmp_store(dir, n);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  return s;
}

static store_env *reopen(const char *dir, unsigned flags) {
  char err[1024];
  store_env *s = NULL;
  if (store_open(dir, flags, &s, err, sizeof err) != STORE_OK) fprintf(stderr, "reopen: %s\n", err);
  return s;
}

/* ---- the policy */

static void test_policy(void) {
  char dir[4096];
  store_env *s = open_new(dir, sizeof dir);
  store_expect ex[] = {{STORE_EXPECT_CONDITION, "APP::NOT-FOUND"}, {STORE_EXPECT_REPORT, "no such order"}};
  store_repair_rule rules[] = {
    {"APP:", STORE_REPAIR_FAIL, 0, NULL},
    {"APP::PARSE-*", STORE_REPAIR_PAUSE, 2, ex},
    {"APP::PARSE-ORDER*", STORE_REPAIR_FAIL, 0, NULL},
    {"APP::PARSE-ORDER-LINE", STORE_REPAIR_PAUSE, 1, ex},
    {"TOTAL", STORE_REPAIR_FAIL, 0, NULL},
    {"COMMON-LISP-USER:", STORE_REPAIR_PAUSE, 0, NULL},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) CHECK(store_repair_put(s, &rules[i]) == STORE_OK);
  CHECK(store_selector_kind("APP:") == STORE_SEL_PACKAGE && store_selector_kind("A*") == STORE_SEL_PREFIX &&
        store_selector_kind("APP::RUN") == STORE_SEL_NAME);
  /* precedence: the exact name, then the longest prefix, then the package */
  struct { const char *fn, *sel; } cases[] = {
    {"APP::PARSE-ORDER-LINE", "APP::PARSE-ORDER-LINE"}, {"APP::PARSE-ORDER-LINES", "APP::PARSE-ORDER*"},
    {"APP::PARSE-ORDER", "APP::PARSE-ORDER*"}, {"APP::PARSE-DATE", "APP::PARSE-*"}, {"APP::RUN", "APP:"},
    {"TOTAL", "TOTAL"}, {"TOTALS", "COMMON-LISP-USER:"}, {"|A::B|", "COMMON-LISP-USER:"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    store_repair_rule *r = NULL;
    CHECK(store_repair_match(s, cases[i].fn, &r) == STORE_OK && r);
    if (r) CHECK_STR(r->selector, cases[i].sel);
    store_free(r);
  }
  store_repair_rule *r = NULL;
  CHECK(store_repair_match(s, "OTHER::RUN", &r) == STORE_ENOENT && !r);
  CHECK(strstr(store_errmsg(s), "OTHER::RUN"));
  /* the rule and its expected conditions come back whole */
  CHECK(store_repair_match(s, "APP::PARSE-X", &r) == STORE_OK && r->mode == STORE_REPAIR_PAUSE && r->nexpected == 2);
  CHECK(r && r->expected[0].kind == STORE_EXPECT_CONDITION && !strcmp(r->expected[1].text, "no such order"));
  CHECK(store_repair_expected(r, "APP::NOT-FOUND", NULL) == 1);
  CHECK(store_repair_expected(r, "ERROR", "there is no such order: 7") == 1);
  CHECK(store_repair_expected(r, "ERROR", "division by zero") == 0);
  store_free(r);
  /* replace, list in selector order, delete */
  store_repair_rule again = {"TOTAL", STORE_REPAIR_PAUSE, 0, NULL};
  CHECK(store_repair_put(s, &again) == STORE_OK);
  store_repair_rule *all = NULL;
  size_t n = 0;
  CHECK(store_repair_list(s, &all, &n) == STORE_OK && n == 6);
  CHECK(all && !strcmp(all[0].selector, "APP:") && !strcmp(all[5].selector, "TOTAL") &&
        all[5].mode == STORE_REPAIR_PAUSE);
  CHECK(all && store_repair_pick(all, n, "APP::PARSE-ORDER-LINE") == 3);
  store_free(all);
  CHECK(store_repair_delete(s, "TOTAL") == STORE_OK);
  CHECK(store_repair_delete(s, "TOTAL") == STORE_ENOENT);
  CHECK(store_repair_match(s, "TOTAL", &r) == STORE_OK && !strcmp(r->selector, "COMMON-LISP-USER:"));
  store_free(r);
  /* bad selectors and bounds, each named */
  const char *bad[] = {"", "*", ":", "APP::", "A\tB", "\xff"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    store_repair_rule b = {bad[i], STORE_REPAIR_FAIL, 0, NULL};
    CHECK(store_repair_put(s, &b) == STORE_EINVAL && strstr(store_errmsg(s), "selector"));
  }
  char longsel[STORE_NAME_MAX + 2];
  memset(longsel, 'A', sizeof longsel - 1);
  longsel[sizeof longsel - 1] = '\0';
  store_repair_rule lr = {longsel, STORE_REPAIR_FAIL, 0, NULL};
  CHECK(store_repair_put(s, &lr) == STORE_EINVAL);
  store_repair_rule bm = {"F", 3, 0, NULL};
  CHECK(store_repair_put(s, &bm) == STORE_EINVAL && strstr(store_errmsg(s), "mode"));
  store_expect many[STORE_REPAIR_EXPECTED_MAX + 1];
  for (size_t i = 0; i < STORE_REPAIR_EXPECTED_MAX + 1; i++) many[i] = (store_expect){STORE_EXPECT_CONDITION, "E"};
  store_repair_rule bx = {"F", STORE_REPAIR_FAIL, STORE_REPAIR_EXPECTED_MAX + 1, many};
  CHECK(store_repair_put(s, &bx) == STORE_EINVAL && strstr(store_errmsg(s), "at most 16"));
  bx.nexpected = STORE_REPAIR_EXPECTED_MAX;
  CHECK(store_repair_put(s, &bx) == STORE_OK);
  char longt[STORE_REPAIR_EXPECT_MAX + 2];
  memset(longt, 'x', sizeof longt - 1);
  longt[sizeof longt - 1] = '\0';
  store_expect lt = {STORE_EXPECT_REPORT, longt}, bk = {9, "E"}, empty = {STORE_EXPECT_REPORT, ""};
  store_repair_rule bt = {"F", STORE_REPAIR_FAIL, 1, &lt};
  CHECK(store_repair_put(s, &bt) == STORE_EINVAL);
  bt.expected = &bk;
  CHECK(store_repair_put(s, &bt) == STORE_EINVAL && strstr(store_errmsg(s), "kind"));
  bt.expected = &empty;
  CHECK(store_repair_put(s, &bt) == STORE_EINVAL);
  CHECK(store_repair_delete(s, "*") == STORE_EINVAL);
  CHECK(store_repair_mode_parse("pause") == STORE_REPAIR_PAUSE && !store_repair_mode_parse("PAUSE") &&
        !strcmp(store_repair_mode_name(STORE_REPAIR_FAIL), "fail") && !store_repair_mode_name(0));
  CHECK(store_expect_kind_parse("report") == STORE_EXPECT_REPORT && !store_expect_kind_name(3));
  store_close(s);
  /* at most STORE_REPAIR_RULES_MAX rules: a new selector beyond is refused, replacing one is not */
  raw w;
  CHECK(raw_open(&w, dir, "repair") == 0);
  for (unsigned i = 0; i < STORE_REPAIR_RULES_MAX; i++) {
    char sel[32];
    unsigned char rec[3] = {1, STORE_REPAIR_FAIL, 0};
    snprintf(sel, sizeof sel, "R%04u", i);
    MDB_val k = {strlen(sel), sel}, v = {3, rec};
    mdb_put(w.txn, w.dbi, &k, &v, 0);
  }
  CHECK(raw_close(&w, 1) == 0);
  s = reopen(dir, 0);
  store_repair_rule more = {"NEW", STORE_REPAIR_FAIL, 0, NULL}, old = {"R0007", STORE_REPAIR_PAUSE, 0, NULL};
  CHECK(store_repair_put(s, &more) == STORE_EINVAL && strstr(store_errmsg(s), "delete one first"));
  CHECK(store_repair_put(s, &old) == STORE_OK);
  store_close(s);
  /* read-only: reads, no writes */
  s = reopen(dir, STORE_RDONLY);
  CHECK(store_repair_match(s, "R0007", &r) == STORE_OK && r->mode == STORE_REPAIR_PAUSE);
  store_free(r);
  CHECK(store_repair_put(s, &old) == STORE_EPERM && store_repair_delete(s, "R0007") == STORE_EPERM);
  store_close(s);
  rm_store(dir);
}

/* ---- incidents */

static store_failure failure(const char *fn, const char *cond, int def, const char *args, int64_t t) {
  store_failure f = {fn, cond, {0}, "{\"frames\":[]}", 13, args, args ? strlen(args) : 0, t, 0};
  memset(f.definition, def, 32);
  return f;
}

static store_incident *get(store_env *s, uint64_t id) {
  store_incident *inc = NULL;
  if (store_incident_get(s, id, &inc) != STORE_OK) fprintf(stderr, "get %llu: %s\n", (unsigned long long)id,
                                                           store_errmsg(s));
  return inc;
}

static int status_of(store_env *s, uint64_t id) {
  store_incident *inc = get(s, id);
  int st = inc ? inc->status : 0;
  store_free(inc);
  return st;
}

typedef struct Ids { size_t n; uint64_t id[64]; } Ids;

static int take_id(void *arg, const store_incident *inc) {
  Ids *a = arg;
  if (a->n < 64) a->id[a->n++] = inc->id;
  return 0;
}

static Ids list(store_env *s, unsigned mask, size_t limit) {
  Ids a = {0, {0}};
  CHECK(store_incidents_list(s, mask, limit, take_id, &a) == STORE_OK);
  return a;
}

/* The newest event's text. */
static int take_last(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  snprintf(arg, 1024, "%.*s", (int)len, json);
  return 1;
}

static const char *last_event(store_env *s) {
  static char buf[1024];
  buf[0] = '\0';
  CHECK(store_events_read(s, 0, 1, STORE_NEWEST_FIRST, take_last, buf) == STORE_OK);
  return buf;
}

static void test_incidents(void) {
  char dir[4096], err[1024];
  store_env *s = open_new(dir, sizeof dir);
  uint64_t id = 0, id2, seq = 0;
  int joined = -1;
  store_failure f = failure("APP::RUN", "DIVISION-BY-ZERO", 1, "(1 0)", 1000);
  CHECK(store_incident_open(s, &f, 0, &id, &joined) == STORE_OK && id == 1 && joined == 0);
  CHECK(strstr(last_event(s), "\"event\":\"incident\",\"incident\":1,\"status\":\"captured\",\"function\":\"APP::RUN\""));
  /* the same function, condition and definition joins it */
  store_failure again = failure("APP::RUN", "DIVISION-BY-ZERO", 1, "(2 0)", 3000);
  again.evidence = "{\"other\":1}";
  again.evidence_len = strlen(again.evidence);
  store_stat st;
  CHECK(store_stats(s, &st) == STORE_OK);
  uint64_t events = st.events;
  CHECK(store_incident_open(s, &again, 0, &id2, &joined) == STORE_OK && id2 == 1 && joined == 1);
  CHECK(store_stats(s, &st) == STORE_OK && st.events == events);   /* a join writes no event */
  store_incident *inc = get(s, 1);
  CHECK(inc && inc->count == 2 && inc->first_ms == 1000 && inc->last_ms == 3000 && !strcmp(inc->arguments, "(2 0)"));
  CHECK(inc && !strcmp(inc->evidence, "{\"frames\":[]}") && !strcmp(inc->function, "APP::RUN") &&
        !strcmp(inc->condition, "DIVISION-BY-ZERO") && inc->definition[31] == 1 && inc->revision == 0);
  store_free(inc);
  /* another condition, another definition, another function: new incidents */
  store_failure c2 = failure("APP::RUN", "TYPE-ERROR", 1, NULL, 0), d2 = failure("APP::RUN", "DIVISION-BY-ZERO", 2,
                                                                                  NULL, 0);
  store_failure f3 = failure("TOTAL", "DIVISION-BY-ZERO", 1, NULL, 0);
  CHECK(store_incident_open(s, &c2, 0, &id, &joined) == STORE_OK && id == 2 && !joined);
  CHECK(store_incident_open(s, &d2, 0, &id, &joined) == STORE_OK && id == 3 && !joined);
  CHECK(store_incident_open(s, &f3, 0, &id, &joined) == STORE_OK && id == 4 && !joined);
  inc = get(s, 2);
  CHECK(inc && inc->arguments_len == 0 && !strcmp(inc->arguments, "") && inc->first_ms > 0);
  store_free(inc);
  /* transitions: from the right status only, each with its event */
  CHECK(store_incident_transition(s, 1, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, 0, &seq) == STORE_OK && seq);
  CHECK(strstr(last_event(s), "\"incident\":1,\"status\":\"awaiting-model\",\"from\":\"captured\",\"function\":\"APP::RUN\""));
  CHECK(store_incident_transition(s, 1, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, 0, &seq) == STORE_ECONFLICT);
  CHECK(strstr(store_errmsg(s), "incident 1 is awaiting-model, not captured") && seq == 0);
  CHECK(store_incident_transition(s, 1, STORE_INC_CAPTURED, STORE_INC_REPAIRED, 0, NULL) == STORE_EINVAL);
  CHECK(store_incident_transition(s, 99, STORE_INC_CAPTURED, STORE_INC_STALE, 0, NULL) == STORE_ENOENT);
  CHECK(store_incident_transition(s, 1, 0, STORE_INC_STALE, 0, NULL) == STORE_EINVAL);
  CHECK(store_incident_transition(s, 1, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, 7, NULL) == STORE_EINVAL);
  /* still open: failures join it whatever its open status */
  CHECK(store_incident_transition(s, 1, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, 0, NULL) == STORE_OK);
  CHECK(store_incident_open(s, &f, 0, &id, &joined) == STORE_OK && id == 1 && joined);
  /* closed: a failure opens a new one */
  CHECK(store_incident_transition(s, 2, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, 0, NULL) == STORE_OK);
  CHECK(store_incident_transition(s, 2, STORE_INC_AWAITING_MODEL, STORE_INC_DECLINED_EXPECTED, 0, NULL) == STORE_OK);
  CHECK(store_incident_open(s, &c2, 0, &id, &joined) == STORE_OK && id == 5 && !joined);
  /* terminal statuses: no way out (every target refused), whatever the caller believes */
  for (int to = 1; to < STORE_INC_STATUS_COUNT; to++)
    CHECK(store_incident_transition(s, 2, STORE_INC_DECLINED_EXPECTED, to, 0, NULL) == STORE_EINVAL);
  for (int from = STORE_INC_REPAIRED; from < STORE_INC_TENTATIVE; from++)
    for (int to = 1; to < STORE_INC_STATUS_COUNT; to++)
      CHECK(store_incident_transition_allowed(from, to) == (from == STORE_INC_REPAIRED && to == STORE_INC_CAPTURED));
  CHECK(status_of(s, 2) == STORE_INC_DECLINED_EXPECTED);
  /* repaired, then reopened by the watch: open again, joined again */
  CHECK(store_incident_transition(s, 1, STORE_INC_VERIFYING, STORE_INC_REPAIRED, 0, NULL) == STORE_OK);
  CHECK(store_incident_set_revision(s, 1, 5, 0) == STORE_EINVAL && strstr(store_errmsg(s), "CURRENT is 0"));
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  store_entry e = ent(STORE_FUNCTION, "APP::RUN", "(defun run () 1)");
  uint64_t rev;
  CHECK(store_publish(s, 0, &in, &e, 1, NULL, 0, &rev) == STORE_OK && rev == 1);
  CHECK(store_incident_set_revision(s, 1, 1, 0) == STORE_OK);
  CHECK(store_incident_set_revision(s, 77, 1, 0) == STORE_ENOENT);
  CHECK(store_incident_open(s, &f, 0, &id, &joined) == STORE_OK && id == 6 && !joined);
  CHECK(store_incident_transition(s, 1, STORE_INC_REPAIRED, STORE_INC_CAPTURED, 0, NULL) == STORE_OK);
  CHECK(strstr(last_event(s), "\"status\":\"captured\",\"from\":\"repaired\""));
  inc = get(s, 1);
  CHECK(inc && inc->status == STORE_INC_CAPTURED && inc->revision == 1 && inc->count == 3);
  store_free(inc);
  CHECK(store_incident_open(s, &f, 0, &id, &joined) == STORE_OK && id == 1 && joined);   /* the older one */
  /* lists: newest first, limited, filtered (open ones through the index, the others by reading back) */
  Ids a = list(s, 0, 0);
  CHECK(a.n == 6 && a.id[0] == 6 && a.id[5] == 1);
  a = list(s, 0, 2);
  CHECK(a.n == 2 && a.id[0] == 6 && a.id[1] == 5);
  a = list(s, STORE_INC_OPEN_MASK, 0);
  CHECK(a.n == 5 && a.id[0] == 6 && a.id[4] == 1);
  a = list(s, 1u << STORE_INC_CAPTURED, 3);
  CHECK(a.n == 3 && a.id[0] == 6 && a.id[1] == 5 && a.id[2] == 4);
  a = list(s, 1u << STORE_INC_DECLINED_EXPECTED, 0);
  CHECK(a.n == 1 && a.id[0] == 2);
  a = list(s, (1u << STORE_INC_DECLINED_EXPECTED) | (1u << STORE_INC_CAPTURED), 0);
  CHECK(a.n == 6 && a.id[0] == 6 && a.id[5] == 1);
  CHECK(store_incidents_list(s, 1u << 20, 0, take_id, &a) == STORE_EINVAL);
  CHECK(store_incidents_list(s, 1u, 0, take_id, &a) == STORE_EINVAL);
  CHECK(store_incident_get(s, 42, &inc) == STORE_ENOENT && !inc);
  /* at recovery, every verification is interrupted; nothing else moves */
  uint64_t count = 9;
  for (uint64_t i = 5; i <= 6; i++) {
    CHECK(store_incident_transition(s, i, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, 0, NULL) == STORE_OK);
    CHECK(store_incident_transition(s, i, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, 0, NULL) == STORE_OK);
  }
  CHECK(store_incidents_interrupt_verifying(s, &count) == STORE_OK && count == 2);
  CHECK(status_of(s, 5) == STORE_INC_INTERRUPTED && status_of(s, 6) == STORE_INC_INTERRUPTED &&
        status_of(s, 4) == STORE_INC_CAPTURED && status_of(s, 1) == STORE_INC_CAPTURED);
  CHECK(strstr(last_event(s), "\"status\":\"interrupted\",\"from\":\"verifying\""));
  CHECK(store_incidents_interrupt_verifying(s, &count) == STORE_OK && count == 0);
  CHECK(store_incident_transition(s, 5, STORE_INC_INTERRUPTED, STORE_INC_CAPTURED, 0, NULL) == STORE_EINVAL);
  /* bad failures */
  store_failure b = f;
  char big[STORE_EVIDENCE_MAX + 2];
  memset(big, 'x', sizeof big);
  big[0] = '"';
  big[STORE_EVIDENCE_MAX - 1] = '"';   /* a JSON string of exactly the bound */
  b.evidence = big;
  b.evidence_len = STORE_EVIDENCE_MAX;
  CHECK(store_incident_open(s, &b, 0, &id, &joined) == STORE_OK && id == 1);
  big[STORE_EVIDENCE_MAX - 1] = 'x';
  big[STORE_EVIDENCE_MAX] = '"';
  b.evidence_len = STORE_EVIDENCE_MAX + 1;
  CHECK(store_incident_open(s, &b, 0, &id, &joined) == STORE_EINVAL && strstr(store_errmsg(s), "65536"));
  b.evidence = "{not json";
  b.evidence_len = 9;
  CHECK(store_incident_open(s, &b, 0, &id, &joined) == STORE_EINVAL && strstr(store_errmsg(s), "JSON"));
  b = f;
  b.arguments = big;
  b.arguments_len = STORE_ARGUMENTS_MAX + 1;
  CHECK(store_incident_open(s, &b, 0, &id, &joined) == STORE_EINVAL);
  b = f;
  b.function = "";
  CHECK(store_incident_open(s, &b, 0, &id, &joined) == STORE_EINVAL);
  b = f;
  b.condition = NULL;
  CHECK(store_incident_open(s, &b, 0, &id, &joined) == STORE_EINVAL);
  CHECK(store_incident_open(s, &f, 4, &id, &joined) == STORE_EINVAL);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  /* durable, and read-only handles read and cannot write */
  s = reopen(dir, STORE_RDONLY);
  CHECK(status_of(s, 2) == STORE_INC_DECLINED_EXPECTED && status_of(s, 1) == STORE_INC_CAPTURED);
  inc = get(s, 1);
  CHECK(inc && inc->count == 5 && inc->revision == 1);
  store_free(inc);
  CHECK(store_incident_open(s, &f, 0, &id, &joined) == STORE_EPERM);
  CHECK(store_incident_transition(s, 1, STORE_INC_CAPTURED, STORE_INC_STALE, 0, NULL) == STORE_EPERM);
  CHECK(store_incidents_interrupt_verifying(s, &count) == STORE_EPERM);
  CHECK(store_stats(s, &st) == STORE_OK && st.incidents == 6 && st.open_incidents == 3);
  store_close(s);
  rm_store(dir);
}

/* The log: the newest 64 entries within 256 KiB, the oldest dropped first and counted. */
static void test_log(void) {
  char dir[4096];
  store_env *s = open_new(dir, sizeof dir);
  uint64_t id;
  store_failure f = failure("F", "ERROR", 1, NULL, 0);
  CHECK(store_incident_open(s, &f, 0, &id, NULL) == STORE_OK && id == 1);
  CHECK(store_journal_begin(s) == STORE_OK);
  for (int i = 1; i <= 70; i++) {
    char t[64];
    snprintf(t, sizeof t, "{\"n\":%d}", i);
    CHECK(store_incident_note(s, 1, i % 2 ? STORE_NOTE_EXCHANGE : STORE_NOTE_VERIFICATION, t, strlen(t), i,
                              STORE_GROUP_SYNC_LATER) == STORE_OK);
  }
  store_incident *inc = get(s, 1);
  CHECK(inc && inc->nlog == STORE_INCIDENT_LOG_ENTRIES && inc->dropped == 6);
  CHECK(inc && !strcmp(inc->log[0].text, "{\"n\":7}") && inc->log[0].time_ms == 7 &&
        inc->log[0].kind == STORE_NOTE_EXCHANGE && !strcmp(inc->log[63].text, "{\"n\":70}") &&
        inc->log[63].kind == STORE_NOTE_VERIFICATION);
  store_free(inc);
  /* by bytes: 60 KiB entries, four fit in 256 KiB */
  static char big[60 << 10];
  memset(big, 'y', sizeof big);
  big[0] = '"';
  big[sizeof big - 1] = '"';
  for (int i = 0; i < 6; i++)
    CHECK(store_incident_note(s, 1, STORE_NOTE_EXCHANGE, big, sizeof big, 0, STORE_GROUP_SYNC_LATER) == STORE_OK);
  inc = get(s, 1);
  CHECK(inc && inc->nlog == 4 && inc->dropped == 6 + 64 + 2 && inc->log[3].len == sizeof big);
  store_free(inc);
  CHECK(store_incident_note(s, 1, 3, "{}", 2, 0, 0) == STORE_EINVAL);
  CHECK(store_incident_note(s, 1, STORE_NOTE_EXCHANGE, "nope", 4, 0, 0) == STORE_EINVAL);
  static char huge[STORE_NOTE_MAX + 1];
  memset(huge, ' ', sizeof huge);
  huge[0] = '1';
  CHECK(store_incident_note(s, 1, STORE_NOTE_EXCHANGE, huge, sizeof huge, 0, 0) == STORE_EINVAL);
  CHECK(store_incident_note(s, 2, STORE_NOTE_EXCHANGE, "{}", 2, 0, 0) == STORE_ENOENT);
  store_close(s);   /* checkpoints */
  s = reopen(dir, 0);
  inc = get(s, 1);
  CHECK(inc && inc->nlog == 4 && inc->dropped == 72);
  store_free(inc);
  store_close(s);
  rm_store(dir);
}

/* Journaled incident writes survive a writer that dies before its checkpoint. */
static int journal_child(const char *dir, void *arg, char *err, size_t n) {
  (void)arg;
  store_env *s;
  uint64_t id;
  if (store_open(dir, 0, &s, err, n) != STORE_OK || store_journal_begin(s) != STORE_OK) return 1;
  store_failure f = failure("J", "ERROR", 3, "(j)", 0);
  uint8_t d[32] = {0};
  if (store_incident_open(s, &f, STORE_GROUP_SYNC_LATER, &id, NULL) != STORE_OK ||
      store_incident_transition(s, id, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, STORE_GROUP_SYNC_LATER,
                                NULL) != STORE_OK ||
      store_incident_transition(s, id, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, STORE_GROUP_SYNC_LATER,
                                NULL) != STORE_OK ||
      store_traffic_record(s, "J", "(symbol)", "(j 'a)", "A", d, 5, 0, STORE_GROUP_SYNC_LATER, NULL) != STORE_OK) {
    snprintf(err, n, "%s", store_errmsg(s));
    return 2;
  }
  store_repair_rule r = {"J", STORE_REPAIR_FAIL, 0, NULL};
  if (store_repair_put(s, &r) != STORE_OK) return 3;   /* a full commit: checkpoints first */
  if (store_incident_note(s, id, STORE_NOTE_EXCHANGE, "{\"a\":1}", 7, 0, STORE_GROUP_SYNC_LATER) != STORE_OK ||
      store_sync(s, err, n) != STORE_OK)
    return 4;
  _exit(0);   /* no checkpoint: the note is only in the journal */
}

static int count_calls(void *arg, const store_traffic_call *c) {
  (void)c;
  ++*(int *)arg;
  return 0;
}

static void test_journal(void) {
  char dir[4096], msg[1024], err[1024];
  tmp_store(dir, sizeof dir);
  CHECK(st_in_child(journal_child, dir, NULL, msg, sizeof msg) == 0);
  if (*msg) fprintf(stderr, "child: %s\n", msg);
  store_env *s = reopen(dir, 0);
  store_incident *inc = get(s, 1);
  CHECK(inc && inc->status == STORE_INC_VERIFYING && inc->nlog == 1 && !strcmp(inc->log[0].text, "{\"a\":1}"));
  store_free(inc);
  int n = 0;
  CHECK(store_traffic_list(s, "J", count_calls, &n) == STORE_OK && n == 1);
  /* the recovery a kernel makes */
  uint64_t count = 0;
  CHECK(store_incidents_interrupt_verifying(s, &count) == STORE_OK && count == 1 && status_of(s, 1) == STORE_INC_INTERRUPTED);
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

/* A repair's revision and its incident's move to repaired: one transaction. */
static void test_repair_group(void) {
  char dir[4096], err[1024];
  store_env *s = open_new(dir, sizeof dir);
  store_rev_info init = info_of(STORE_REV_INITIAL, 1, "init"), act = info_of(STORE_REV_ACTION, 2, "repair");
  store_entry e1 = ent(STORE_FUNCTION, "F", "(defun f (x) (/ 1 x))"), e2 = ent(STORE_FUNCTION, "F", "(defun f (x) 0)");
  uint64_t rev, id, other, seq;
  store_stat st;
  CHECK(store_publish(s, 0, &init, &e1, 1, NULL, 0, &rev) == STORE_OK && rev == 1);
  store_failure f = failure("F", "DIVISION-BY-ZERO", 1, "(0)", 0), g = failure("G", "ERROR", 1, NULL, 0);
  CHECK(store_incident_open(s, &f, 0, &id, NULL) == STORE_OK && store_incident_open(s, &g, 0, &other, NULL) == STORE_OK);
  /* not verifying, or no such incident: nothing of the group is written */
  const char *accepted = "\"event\":\"accepted\",\"attempt\":3";
  store_ev ev = {NULL, accepted, strlen(accepted), 0};
  store_rev_in in = {&act, &e2, 1, NULL, 0, &ev, 1, 0, 0, NULL};
  uint64_t incidents[1] = {other};
  CHECK(store_stats(s, &st) == STORE_OK);
  uint64_t events = st.events;
  CHECK(store_publish_group_incidents(s, 1, &in, 1, 0, NULL, NULL, incidents) == STORE_ECONFLICT);
  CHECK(strstr(store_errmsg(s), "is captured, not verifying"));
  incidents[0] = 999;
  CHECK(store_publish_group_incidents(s, 1, &in, 1, 0, NULL, NULL, incidents) == STORE_ENOENT);
  CHECK(store_stats(s, &st) == STORE_OK && st.current == 1 && st.events == events);
  CHECK(status_of(s, other) == STORE_INC_CAPTURED);
  /* verifying: the revision, its events, then the incident repaired and its event */
  CHECK(store_incident_transition(s, id, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, 0, NULL) == STORE_OK);
  CHECK(store_incident_transition(s, id, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, 0, &seq) == STORE_OK);
  incidents[0] = id;
  CHECK(store_journal_begin(s) == STORE_OK);
  CHECK(store_publish_group_incidents(s, 1, &in, 1, STORE_GROUP_SYNC_LATER, NULL, NULL, incidents) == STORE_OK &&
        in.rev == 2 && in.first_event == seq + 1);
  store_incident *inc = get(s, id);
  CHECK(inc && inc->status == STORE_INC_REPAIRED && inc->revision == 2);
  store_free(inc);
  CHECK(strstr(last_event(s), "\"seq\":") && strstr(last_event(s), "\"status\":\"repaired\",\"from\":\"verifying\""));
  CHECK(store_stats(s, &st) == STORE_OK && st.last_event == seq + 2);
  /* a group's revisions without incidents are unaffected */
  CHECK(store_publish_group_incidents(s, 2, &in, 1, 0, NULL, NULL, NULL) == STORE_OK && in.rev == 2);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

/* An operator's heal (kind explicit) never joins and keeps its kind; a
** repair published tentative moves its incident to tentative, from where
** it is promoted, reopened or made stale. */
static void test_explicit_tentative(void) {
  char dir[4096], err[1024];
  store_env *s = open_new(dir, sizeof dir);
  store_rev_info init = info_of(STORE_REV_INITIAL, 1, "init"), act = info_of(STORE_REV_ACTION, 2, "repair");
  store_entry e1 = ent(STORE_FUNCTION, "F", "(defun f (x) (/ 1 x))"), e2 = ent(STORE_FUNCTION, "F", "(defun f (x) 0)");
  uint64_t rev, a, b, c;
  int joined = 1;
  CHECK(store_publish(s, 0, &init, &e1, 1, NULL, 0, &rev) == STORE_OK);
  store_failure f = failure("F", "explicit", 1, NULL, 0), g = failure("F", "explicit", 1, NULL, 0);
  f.kind = g.kind = STORE_INCK_EXPLICIT;
  CHECK(store_incident_open(s, &f, 0, &a, &joined) == STORE_OK && !joined);
  CHECK(store_incident_open(s, &g, 0, &b, &joined) == STORE_OK && !joined && b == a + 1);
  store_failure h = failure("F", "explicit", 1, NULL, 0);   /* kind failure: its own key */
  CHECK(store_incident_open(s, &h, 0, &c, &joined) == STORE_OK && !joined);
  uint64_t none;
  f.kind = 99;
  CHECK(store_incident_open(s, &f, 0, &none, NULL) == STORE_EINVAL);
  store_incident *inc = get(s, a);
  CHECK(inc && inc->kind == STORE_INCK_EXPLICIT && inc->count == 1);
  store_free(inc);
  inc = get(s, c);
  CHECK(inc && inc->kind == STORE_INCK_FAILURE);
  store_free(inc);
  /* tentative: only with incidents; then verifying -> tentative with the revision */
  store_rev_in in = {&act, &e2, 1, NULL, 0, NULL, 0, 0, 0, NULL};
  uint64_t incidents[1] = {a};
  CHECK(store_publish_group(s, 1, &in, 1, STORE_GROUP_TENTATIVE, NULL, NULL) == STORE_EINVAL);
  CHECK(store_incident_transition(s, a, STORE_INC_CAPTURED, STORE_INC_AWAITING_MODEL, 0, NULL) == STORE_OK);
  CHECK(store_incident_transition(s, a, STORE_INC_AWAITING_MODEL, STORE_INC_VERIFYING, 0, NULL) == STORE_OK);
  CHECK(store_publish_group_incidents(s, 1, &in, 1, STORE_GROUP_TENTATIVE, NULL, NULL, incidents) == STORE_OK &&
        in.rev == 2);
  inc = get(s, a);
  CHECK(inc && inc->status == STORE_INC_TENTATIVE && inc->revision == 2 && inc->kind == STORE_INCK_EXPLICIT);
  store_free(inc);
  CHECK(strstr(last_event(s), "\"status\":\"tentative\",\"from\":\"verifying\""));
  CHECK(store_incident_transition_allowed(STORE_INC_TENTATIVE, STORE_INC_REPAIRED) &&
        store_incident_transition_allowed(STORE_INC_TENTATIVE, STORE_INC_CAPTURED) &&
        store_incident_transition_allowed(STORE_INC_TENTATIVE, STORE_INC_STALE) &&
        !store_incident_transition_allowed(STORE_INC_TENTATIVE, STORE_INC_AWAITING_MODEL) &&
        !store_incident_transition_allowed(STORE_INC_REPAIRED, STORE_INC_TENTATIVE));
  /* reopened (reject), then promoted after another repair */
  CHECK(store_incident_transition(s, a, STORE_INC_TENTATIVE, STORE_INC_CAPTURED, 0, NULL) == STORE_OK);
  CHECK(store_incident_transition(s, a, STORE_INC_TENTATIVE, STORE_INC_REPAIRED, 0, NULL) == STORE_ECONFLICT);
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

/* ---- traffic */

typedef struct Calls { int n; char text[8192]; } Calls;

static int take_call(void *arg, const store_traffic_call *c) {
  Calls *a = arg;
  size_t at = strlen(a->text);
  snprintf(a->text + at, sizeof a->text - at, "%s#%u %s=%s@%lld;", c->signature, c->slot, c->request, c->result,
           (long long)c->time_ms);
  a->n++;
  return 0;
}

static Calls calls_of(store_env *s, const char *fn) {
  Calls a;
  memset(&a, 0, sizeof a);
  CHECK(store_traffic_list(s, fn, take_call, &a) == STORE_OK);
  return a;
}

/* A deterministic stream of random values. */
static uint64_t next_rng(uint64_t *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return *x;
}

static void feed(store_env *s, uint64_t seed, int calls) {
  uint8_t d[32] = {0};
  for (int i = 1; i <= calls; i++) {
    char req[64], res[32];
    snprintf(req, sizeof req, "(f %d)", i);
    snprintf(res, sizeof res, "%d", 2 * i);
    int out;
    CHECK(store_traffic_record(s, "APP::F", i % 3 ? "(fixnum)" : "(string)", req, res, d, i, next_rng(&seed),
                               STORE_GROUP_SYNC_LATER, &out) == STORE_OK);
  }
}

static void test_traffic(void) {
  char dir[4096], dir2[4096], err[1024];
  store_env *s = open_new(dir, sizeof dir);
  uint8_t d[32];
  memset(d, 7, 32);
  int out = 0;
  /* the first 8 calls of a signature fill its slots; then rng % n decides */
  for (int i = 1; i <= 8; i++) {
    char req[32];
    snprintf(req, sizeof req, "(g %d)", i);
    CHECK(store_traffic_record(s, "G", "(fixnum)", req, "1", d, i, 0, 0, &out) == STORE_OK && out == STORE_TRAFFIC_KEPT);
  }
  CHECK(store_traffic_record(s, "G", "(fixnum)", "(g 9)", "1", d, 9, 9 * 5 + 3, 0, &out) == STORE_OK &&
        out == STORE_TRAFFIC_REPLACED);   /* 3 < 8: slot 4 */
  CHECK(store_traffic_record(s, "G", "(fixnum)", "(g 10)", "1", d, 10, 10 * 7 + 9, 0, &out) == STORE_OK &&
        out == STORE_TRAFFIC_SAMPLED_OUT);   /* 9 >= 8 */
  Calls c = calls_of(s, "G");
  CHECK(c.n == 8 && strstr(c.text, "(fixnum)#4 (g 9)=1@9;") && !strstr(c.text, "(g 4)") && !strstr(c.text, "(g 10)"));
  int seen = 0;
  /* at most 16 signatures per function */
  for (int i = 0; i < (int)STORE_TRAFFIC_SIGNATURES; i++) {
    char sig[32];
    snprintf(sig, sizeof sig, "(t%d)", i);
    CHECK(store_traffic_record(s, "H", sig, "(h)", "nil", d, 0, 0, 0, &out) == STORE_OK && out == STORE_TRAFFIC_KEPT);
  }
  CHECK(store_traffic_record(s, "H", "(another)", "(h)", "nil", d, 0, 0, 0, &out) == STORE_OK &&
        out == STORE_TRAFFIC_FULL);
  CHECK(store_traffic_record(s, "H", "(t3)", "(h)", "nil", d, 0, 0, 0, &out) == STORE_OK && out == STORE_TRAFFIC_KEPT);
  c = calls_of(s, "H");
  CHECK(c.n == STORE_TRAFFIC_SIGNATURES + 1 && !strstr(c.text, "(another)"));
  /* at most 256 KiB per function: 16 KiB requests (and a byte of result), the 16th does not fit */
  static char req[STORE_TRAFFIC_TEXT_MAX + 2];
  memset(req, 'q', sizeof req);
  req[STORE_TRAFFIC_TEXT_MAX] = '\0';
  CHECK(store_journal_begin(s) == STORE_OK);
  for (int i = 0; i < 15; i++) {
    char sig[16];
    snprintf(sig, sizeof sig, "(b%d)", i / 8);
    CHECK(store_traffic_record(s, "B", sig, req, "r", d, 0, 0, STORE_GROUP_SYNC_LATER, &out) == STORE_OK &&
          out == STORE_TRAFFIC_KEPT);
  }
  CHECK(store_traffic_record(s, "B", "(b1)", req, "r", d, 0, 0, STORE_GROUP_SYNC_LATER, &out) == STORE_OK &&
        out == STORE_TRAFFIC_FULL);
  CHECK(store_traffic_record(s, "B", "(b2)", "(small)", "", d, 0, 0, STORE_GROUP_SYNC_LATER, &out) == STORE_OK &&
        out == STORE_TRAFFIC_KEPT);
  seen = 0;
  CHECK(store_traffic_list(s, "B", count_calls, &seen) == STORE_OK && seen == 16);
  /* bounds of a call */
  req[STORE_TRAFFIC_TEXT_MAX] = 'q';
  req[STORE_TRAFFIC_TEXT_MAX + 1] = '\0';
  CHECK(store_traffic_record(s, "B", "(b0)", req, "", d, 0, 0, 0, &out) == STORE_EINVAL &&
        strstr(store_errmsg(s), "small, readable"));
  CHECK(store_traffic_record(s, "B", "(b0)", "(x)", req, d, 0, 0, 0, &out) == STORE_EINVAL);
  CHECK(store_traffic_record(s, "", "(b0)", "(x)", "1", d, 0, 0, 0, &out) == STORE_EINVAL);
  CHECK(store_traffic_record(s, "B", "(b0)", "(x)", "1", NULL, 0, 0, 0, &out) == STORE_EINVAL);
  CHECK(store_traffic_record(s, "B", "\xc3", "(x)", "1", d, 0, 0, 0, &out) == STORE_EINVAL);
  CHECK(store_traffic_record(s, "B", "(b0)", "(x)", "1", d, 0, 0, 8, &out) == STORE_EINVAL);
  /* forgetting one function leaves the others */
  CHECK(store_traffic_forget(s, "B", STORE_GROUP_SYNC_LATER) == STORE_OK);
  seen = 0;
  CHECK(store_traffic_list(s, "B", count_calls, &seen) == STORE_OK && seen == 0);
  CHECK(store_traffic_forget(s, "NOTHING", 0) == STORE_OK);
  c = calls_of(s, "G");
  CHECK(c.n == 8);
  /* deterministic: the same calls and random values keep the same sample */
  feed(s, 88172645463325252ull, 200);
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);   /* checkpoints: overflow pages written and freed in one transaction, then reopened below */
  store_env *s2 = open_new(dir2, sizeof dir2);
  CHECK(store_journal_begin(s2) == STORE_OK);
  feed(s2, 88172645463325252ull, 200);
  Calls x = calls_of(s2, "APP::F");
  store_close(s2);
  s = reopen(dir, STORE_RDONLY);
  Calls y = calls_of(s, "APP::F");
  CHECK(x.n == 16 && y.n == 16 && !strcmp(x.text, y.text));
  CHECK(store_traffic_record(s, "G", "(fixnum)", "(g)", "1", d, 0, 0, 0, &out) == STORE_EPERM);
  CHECK(store_traffic_forget(s, "G", 0) == STORE_EPERM);
  c = calls_of(s, "G");
  CHECK(c.n == 8);
  store_close(s);
  s2 = reopen(dir2, 0);
  feed(s2, 1, 200);   /* other random values, another sample */
  Calls z = calls_of(s2, "APP::F");
  CHECK(z.n == 16 && strcmp(z.text, x.text));
  store_close(s2);
  rm_store(dir);
  rm_store(dir2);
}

typedef struct Digests { int n; char req[8][32]; uint8_t d[8][32]; } Digests;

static int take_digest(void *arg, const store_traffic_call *c) {
  Digests *g = arg;
  if (g->n == 8) return 1;
  snprintf(g->req[g->n], sizeof g->req[0], "%s", c->request);
  memcpy(g->d[g->n++], c->digest, 32);
  return 0;
}

/* Functions with a sample, "NAME:sigs:bytes;" each. */
static int take_function(void *arg, const char *function, uint32_t sigs, uint64_t bytes) {
  char *t = arg;
  size_t at = strlen(t);
  snprintf(t + at, 1024 - at, "%s:%u:%llu;", function, sigs, (unsigned long long)bytes);
  return 0;
}

/* Several calls in one transaction: the same sample and outcomes as one by
** one; one bad call refuses them all; the functions with a sample listed. */
static void test_traffic_many(void) {
  char dir[4096], dir2[4096], err[1024], fns[1024] = "";
  store_env *s = open_new(dir, sizeof dir), *s2 = open_new(dir2, sizeof dir2);
  CHECK(store_journal_begin(s) == STORE_OK);
  store_traffic_offer v[30];
  char req[30][32], res[30][32];
  int one[30], many[30];
  uint64_t seed = 7;
  for (int i = 0; i < 30; i++) {
    snprintf(req[i], sizeof req[i], "(k %d)", i);
    snprintf(res[i], sizeof res[i], "%d", i * i);
    v[i] = (store_traffic_offer){i % 4 ? "K" : "APP::L", i % 2 ? "fixnum" : "string", req[i], res[i], {0}, i + 1,
                                 next_rng(&seed)};
    memset(v[i].digest, i, 32);
    CHECK(store_traffic_record(s2, v[i].function, v[i].signature, v[i].request, v[i].result, v[i].digest,
                               v[i].time_ms, v[i].rng, 0, &one[i]) == STORE_OK);
  }
  CHECK(store_traffic_record_many(s, v, 30, STORE_GROUP_SYNC_LATER, many) == STORE_OK);
  CHECK(!memcmp(one, many, sizeof one) && many[0] == STORE_TRAFFIC_KEPT && many[29] != 0);
  Calls a = calls_of(s, "K"), b = calls_of(s2, "K");
  CHECK(a.n == 15 && !strcmp(a.text, b.text));   /* 8 fixnum of 15, all 7 string */
  a = calls_of(s, "APP::L"), b = calls_of(s2, "APP::L");
  CHECK(a.n == 8 && !strcmp(a.text, b.text));
  CHECK(store_traffic_functions(s, take_function, fns) == STORE_OK);
  CHECK(strstr(fns, "K:2:") && strstr(fns, "APP::L:1:") && strlen(fns) < 40);
  /* a bad call: nothing of the others written */
  v[1].signature = "\xff";
  CHECK(store_traffic_record_many(s, v + 0, 2, 0, many) == STORE_EINVAL && many[0] == 0);
  v[1].signature = "fixnum";
  v[0].request = NULL;
  CHECK(store_traffic_record_many(s, v, 2, 0, NULL) == STORE_EINVAL);
  CHECK(store_traffic_record_many(s, NULL, 1, 0, NULL) == STORE_EINVAL);
  CHECK(store_traffic_record_many(s, v, 0, 0, NULL) == STORE_OK);
  a = calls_of(s, "K");
  b = calls_of(s2, "K");
  CHECK(a.n == 15 && !strcmp(a.text, b.text));   /* 8 fixnum of 15, all 7 string */
  CHECK(store_traffic_forget(s, "K", 0) == STORE_OK);
  fns[0] = 0;
  CHECK(store_traffic_functions(s, take_function, fns) == STORE_OK && !strncmp(fns, "APP::L:1:", 9) &&
        !strstr(fns, "K:"));
  CHECK(store_traffic_functions(s, NULL, NULL) == STORE_EINVAL);
  /* the results' digests by the store: the SHA-256 of each result kept */
  store_traffic_offer h[3] = {{"H", "fixnum", "(h 1)", "one", {9}, 1, 0}, {"H", "fixnum", "(h 2)", "two", {9}, 2, 0},
                              {"H", "string", "(h \"x\")", "", {9}, 3, 0}};
  CHECK(store_traffic_record_many(s, h, 3, STORE_TRAFFIC_HASH_RESULT | STORE_GROUP_SYNC_LATER, many) == STORE_OK);
  Digests dg = {0};
  CHECK(store_traffic_list(s, "H", take_digest, &dg) == STORE_OK && dg.n == 3);
  for (int i = 0; i < 3; i++) {
    uint8_t want[32];
    CHECK(store_digest(h[i].result, strlen(h[i].result), want) == STORE_OK);
    int found = 0;
    for (int k = 0; k < dg.n; k++) found |= !strcmp(dg.req[k], h[i].request) && !memcmp(dg.d[k], want, 32);
    CHECK(found);
  }
  CHECK(store_traffic_record_many(s, h, 1, 0x400, NULL) == STORE_EINVAL);   /* an unknown flag */
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);
  store_close(s2);
  rm_store(dir);
  rm_store(dir2);
}

/* ---- the migration from format 3 */

static int drop_db(const char *dir, const char *db) {
  raw r;
  if (raw_open(&r, dir, db) != 0) return -1;
  mdb_drop(r.txn, r.dbi, 1);
  return raw_close(&r, 1);
}

static void test_migration(void) {
  char dir[4096], err[1024];
  store_env *s = open_new(dir, sizeof dir);
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  store_entry e = ent(STORE_FUNCTION, "F", "(defun f () 1)");
  CHECK(store_publish(s, 0, &in, &e, 1, NULL, 0, NULL) == STORE_OK);
  CHECK(store_event_append(s, "{\"event\":\"started\",\"attempt\":4}", NULL) == STORE_OK);
  store_close(s);
  /* what format 3 had: none of the databases of repair */
  unsigned char v3[4] = {0, 0, 0, 3}, fmt[4];
  CHECK(drop_db(dir, "repair") == 0 && drop_db(dir, "incidents") == 0 && drop_db(dir, "incopen") == 0 &&
        drop_db(dir, "traffic") == 0);
  CHECK(raw_put(dir, "meta", "format", 6, v3, 4) == 0);
  /* read as it is: no records of repair */
  s = reopen(dir, STORE_RDONLY);
  CHECK(s != NULL);
  store_repair_rule *rules = NULL, *r = NULL;
  size_t n = 9;
  CHECK(store_repair_list(s, &rules, &n) == STORE_OK && n == 0 && !rules);
  CHECK(store_repair_match(s, "F", &r) == STORE_ENOENT);
  store_incident *inc = NULL;
  CHECK(store_incident_get(s, 1, &inc) == STORE_ENOENT);
  Ids a = list(s, 0, 0);
  CHECK(a.n == 0);
  Calls c = calls_of(s, "F");
  CHECK(c.n == 0);
  CHECK(store_verify(s, 0, err, sizeof err) == STORE_OK);
  store_close(s);
  CHECK(raw_get(dir, "meta", "format", 6, fmt, 4) == 4 && fmt[3] == 3);
  /* opened for writing: format 4, the databases there, nothing else changed */
  s = reopen(dir, 0);
  CHECK(s != NULL);
  CHECK(raw_get(dir, "meta", "format", 6, fmt, 4) == 4 && fmt[3] == 4);
  uint64_t next = 0, count = 0, id = 0;
  CHECK(store_next_attempt(s, &next) == STORE_OK && next == 5);
  store_failure f = failure("F", "ERROR", 1, NULL, 0);
  CHECK(store_incident_open(s, &f, 0, &id, NULL) == STORE_OK && id == 1);
  store_repair_rule rule = {"F", STORE_REPAIR_FAIL, 0, NULL};
  CHECK(store_repair_put(s, &rule) == STORE_OK);
  CHECK(store_mark_interrupted(s, &count) == STORE_OK && count == 1);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

/* ---- damage */

static int expect_damage(const char *dir, const char *want) {
  char err[1024];
  store_env *s = reopen(dir, STORE_RDONLY);
  int r = s ? store_verify(s, 0, err, sizeof err) : -1;
  int ok = r == STORE_ECORRUPT && strstr(err, want) != NULL;
  if (!ok) fprintf(stderr, "expected damage naming \"%s\", got %d: %s\n", want, r, s ? err : "(no store)");
  store_close(s);
  return ok;
}

static int sound(const char *dir) {
  char err[1024];
  store_env *s = reopen(dir, STORE_RDONLY);
  int r = s ? store_verify(s, 0, err, sizeof err) : -1;
  if (r != STORE_OK) fprintf(stderr, "expected a sound store, got %d: %s\n", r, s ? err : "(no store)");
  store_close(s);
  return r == STORE_OK;
}

static void test_damage(void) {
  char dir[4096];
  store_env *s = open_new(dir, sizeof dir);
  uint64_t id;
  uint8_t d[32] = {0};
  store_failure f = failure("F", "ERROR", 1, NULL, 0);
  CHECK(store_incident_open(s, &f, 0, &id, NULL) == STORE_OK);
  store_repair_rule rule = {"F", STORE_REPAIR_FAIL, 0, NULL};
  CHECK(store_repair_put(s, &rule) == STORE_OK);
  CHECK(store_traffic_record(s, "F", "()", "(f)", "1", d, 1, 0, 0, NULL) == STORE_OK);
  store_close(s);
  unsigned char k1[8];
  be64(k1, 1);
  /* an incident's status byte */
  CHECK(raw_flip(dir, "incidents", k1, 8, 1) == 0);
  CHECK(expect_damage(dir, "the 'incidents' database: incident 1 is damaged: its status is unknown"));
  s = reopen(dir, STORE_RDONLY);
  store_incident *inc = NULL;
  CHECK(store_incident_get(s, 1, &inc) == STORE_ECORRUPT && !inc && strstr(store_errmsg(s), "incident 1"));
  store_close(s);
  CHECK(raw_flip(dir, "incidents", k1, 8, 1) == 0);
  CHECK(sound(dir));
  /* its last byte: the record's length no longer matches */
  CHECK(raw_flip(dir, "incidents", k1, 8, -1) == 0);
  s = reopen(dir, 0);
  CHECK(store_incident_transition(s, 1, STORE_INC_CAPTURED, STORE_INC_STALE, 0, NULL) == STORE_ECORRUPT);
  CHECK(store_incident_open(s, &f, 0, &id, NULL) == STORE_ECORRUPT);
  store_close(s);
  CHECK(raw_flip(dir, "incidents", k1, 8, -1) == 0);
  CHECK(sound(dir));
  /* the index of open incidents missing one */
  unsigned char ok[40];
  raw w;
  CHECK(raw_open(&w, dir, "incopen") == 0);
  MDB_cursor *cur;
  MDB_val k, v;
  CHECK(mdb_cursor_open(w.txn, w.dbi, &cur) == 0 && mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0 && k.mv_size == 40);
  memcpy(ok, k.mv_data, 40);
  mdb_cursor_close(cur);
  raw_close(&w, 0);
  CHECK(raw_del(dir, "incopen", ok, 40) == 0);
  CHECK(expect_damage(dir, "incident 1 is captured but not in the 'incopen' index"));
  CHECK(raw_put(dir, "incopen", ok, 40, "", 0) == 0);
  CHECK(sound(dir));
  /* a rule's encoding version */
  CHECK(raw_flip(dir, "repair", "F", 1, 0) == 0);
  CHECK(expect_damage(dir, "the 'repair' database: the rule of selector 'F' is damaged"));
  s = reopen(dir, STORE_RDONLY);
  store_repair_rule *r = NULL;
  CHECK(store_repair_match(s, "F", &r) == STORE_ECORRUPT && !r);
  store_close(s);
  CHECK(raw_flip(dir, "repair", "F", 1, 0) == 0);
  CHECK(sound(dir));
  /* a call kept: its length */
  uint8_t fd[32];
  CHECK(store_digest("F", 1, fd) == STORE_OK);
  unsigned char sk[65];
  memcpy(sk, fd, 32);
  CHECK(store_digest("()", 2, sk + 32) == STORE_OK);
  sk[64] = 1;
  CHECK(raw_flip(dir, "traffic", sk, 65, 45) == 0);
  CHECK(expect_damage(dir, "the 'traffic' database: a record of F is damaged"));
  s = reopen(dir, STORE_RDONLY);
  CHECK(store_traffic_list(s, "F", count_calls, &(int){0}) == STORE_ECORRUPT);
  store_close(s);
  rm_store(dir);
}

static void test_names(void) {
  for (int i = 1; i < STORE_INC_STATUS_COUNT; i++)
    CHECK(store_incident_status_parse(store_incident_status_name(i)) == i);
  CHECK(!store_incident_status_name(0) && !store_incident_status_name(STORE_INC_STATUS_COUNT) &&
        !store_incident_status_parse("open"));
  CHECK_STR(store_incident_status_name(STORE_INC_DECLINED_INSUFFICIENT), "declined-insufficient-evidence");
  CHECK(store_incident_is_open(STORE_INC_VERIFYING) && !store_incident_is_open(STORE_INC_REPAIRED) &&
        !store_incident_is_open(0));
  CHECK(store_note_kind_parse("verification") == STORE_NOTE_VERIFICATION && !store_note_kind_name(0));
  for (int i = 1; i < STORE_INCK_COUNT; i++) CHECK(store_incident_kind_parse(store_incident_kind_name(i)) == i);
  CHECK(!store_incident_kind_name(0) && !store_incident_kind_parse("operator"));
  CHECK_STR(store_incident_status_name(STORE_INC_TENTATIVE), "tentative");
  CHECK_STR(store_event_name(STORE_EV_INCIDENT), "incident");
  CHECK(!store_event_is_outcome(STORE_EV_INCIDENT));
  CHECK_STR(store_strerror(STORE_ECONFLICT), "the record is not in the state the caller expected");
}

int main(void) {
  test_names();
  test_policy();
  test_incidents();
  test_log();
  test_journal();
  test_repair_group();
  test_explicit_tentative();
  test_traffic();
  test_traffic_many();
  test_migration();
  test_damage();
  return CHECK_DONE();
}
