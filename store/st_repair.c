/* st_repair.c — the repair policy (format 4, database "repair"): rules
** keyed by their selector, and which rule applies to a function.
**
** A rule's record (the value under its selector):
**   u8 1 (encoding version)  u8 mode  u8 n
**   n times: u8 kind (1 condition, 2 report), u16 length, text
** The policy is small (at most STORE_REPAIR_RULES_MAX rules) and read
** whole: matching walks every rule once and keeps the most specific. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "jtext.h"
#include "st_int.h"

#define RULE_V1 1

static const char *const mode_names[STORE_REPAIR_MODE_COUNT] = {NULL, "fail", "pause"};
static const char *const expect_names[STORE_EXPECT_COUNT] = {NULL, "condition", "report"};

const char *store_repair_mode_name(int mode) {
  return mode > 0 && mode < STORE_REPAIR_MODE_COUNT ? mode_names[mode] : NULL;
}

int store_repair_mode_parse(const char *s) {
  for (int i = 1; s && i < STORE_REPAIR_MODE_COUNT; i++)
    if (!strcmp(s, mode_names[i])) return i;
  return 0;
}

const char *store_expect_kind_name(int kind) {
  return kind > 0 && kind < STORE_EXPECT_COUNT ? expect_names[kind] : NULL;
}

int store_expect_kind_parse(const char *s) {
  for (int i = 1; s && i < STORE_EXPECT_COUNT; i++)
    if (!strcmp(s, expect_names[i])) return i;
  return 0;
}

/* 1..max bytes of UTF-8 without control characters. */
static int clean_text(const char *t, size_t n, size_t max) {
  if (!n || n > max || !jtext_utf8_valid(t, n)) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f) return 0;
  return 1;
}

static int selector_kind_n(const char *sel, size_t n) {
  if (!sel || !clean_text(sel, n, STORE_NAME_MAX)) return 0;
  if (sel[n - 1] == '*') return n > 1 ? STORE_SEL_PREFIX : 0;
  if (sel[n - 1] == ':') return n > 1 && sel[n - 2] != ':' ? STORE_SEL_PACKAGE : 0;
  return STORE_SEL_NAME;
}

int store_selector_kind(const char *sel) { return sel ? selector_kind_n(sel, strlen(sel)) : 0; }

/* The length of function's package name (what precedes its first "::"
** outside |bars|), or -1 when it has none (COMMON-LISP-USER's). */
static long package_len(const char *f) {
  int bar = 0;
  for (const char *p = f; *p; p++) {
    if (*p == '\\' && p[1]) p++;
    else if (*p == '|') bar = !bar;
    else if (!bar && p[0] == ':' && p[1] == ':') return p - f;
  }
  return -1;
}

long store_repair_pick(const store_repair_rule *rules, size_t n, const char *function) {
  static const char cl_user[] = "COMMON-LISP-USER";
  long best = -1;
  size_t best_len = 0;
  int best_kind = 0;   /* precedence: name 3, prefix 2, package 1 */
  if (!rules || !function) return -1;
  size_t flen = strlen(function);
  long pl = package_len(function);
  const char *pkg = pl >= 0 ? function : cl_user;
  size_t plen = pl >= 0 ? (size_t)pl : sizeof cl_user - 1;
  for (size_t i = 0; i < n; i++) {
    const char *sel = rules[i].selector;
    size_t sl = sel ? strlen(sel) : 0;
    int kind = selector_kind_n(sel, sl), rank = 0;
    if (kind == STORE_SEL_NAME && sl == flen && !memcmp(sel, function, flen)) rank = 3;
    else if (kind == STORE_SEL_PREFIX && sl - 1 <= flen && !memcmp(sel, function, sl - 1)) rank = 2;
    else if (kind == STORE_SEL_PACKAGE && sl - 1 == plen && !memcmp(sel, pkg, plen)) rank = 1;
    if (rank > best_kind || (rank && rank == best_kind && sl > best_len)) {
      best = (long)i;
      best_kind = rank;
      best_len = sl;
    }
  }
  return best;
}

int store_repair_expected(const store_repair_rule *rule, const char *condition, const char *report) {
  for (size_t i = 0; rule && i < rule->nexpected; i++) {
    const store_expect *e = &rule->expected[i];
    if (!e->text) continue;
    if (e->kind == STORE_EXPECT_CONDITION && condition && !strcmp(condition, e->text)) return 1;
    if (e->kind == STORE_EXPECT_REPORT && report && strstr(report, e->text)) return 1;
  }
  return 0;
}

/* ---- records */

/* Check rule r: STORE_OK, or STORE_EINVAL with the reason. */
static int check_rule(store_env *s, const store_repair_rule *r) {
  if (!r) return st_fail(s, STORE_EINVAL, "no rule");
  if (!store_selector_kind(r->selector))
    return st_fail(s, STORE_EINVAL, "the selector '%.100s' is not one: a function's name (APP::RUN), a prefix "
                   "of names ending in '*' (APP::PARSE-*), or a package ending in one ':' (APP:), 1 to %u "
                   "bytes of UTF-8 without control characters", r->selector ? r->selector : "(null)",
                   STORE_NAME_MAX);
  if (!store_repair_mode_name(r->mode))
    return st_fail(s, STORE_EINVAL, "the rule's mode is %d: it is 'fail' or 'pause'", r->mode);
  if (r->nexpected > STORE_REPAIR_EXPECTED_MAX || (r->nexpected && !r->expected))
    return st_fail(s, STORE_EINVAL, "a rule lists at most %u expected conditions (this one %zu)",
                   STORE_REPAIR_EXPECTED_MAX, r->nexpected);
  for (size_t i = 0; i < r->nexpected; i++) {
    const store_expect *e = &r->expected[i];
    if (!store_expect_kind_name(e->kind))
      return st_fail(s, STORE_EINVAL, "expected condition %zu: its kind is %d: it is a 'condition' type or "
                     "a 'report' substring", i + 1, e->kind);
    if (!e->text || !clean_text(e->text, strlen(e->text), STORE_REPAIR_EXPECT_MAX))
      return st_fail(s, STORE_EINVAL, "expected condition %zu: 1 to %u bytes of UTF-8 without control "
                     "characters", i + 1, STORE_REPAIR_EXPECT_MAX);
  }
  return STORE_OK;
}

static size_t rule_size(const store_repair_rule *r) {
  size_t n = 3;
  for (size_t i = 0; i < r->nexpected; i++) n += 3 + strlen(r->expected[i].text);
  return n;
}

static void rule_encode(uint8_t *out, const store_repair_rule *r) {
  st_wr w = {out};
  st_wr_u8(&w, RULE_V1);
  st_wr_u8(&w, (uint8_t)r->mode);
  st_wr_u8(&w, (uint8_t)r->nexpected);
  for (size_t i = 0; i < r->nexpected; i++) {
    size_t n = strlen(r->expected[i].text);
    st_wr_u8(&w, (uint8_t)r->expected[i].kind);
    st_wr_u16(&w, (uint16_t)n);
    st_wr_bytes(&w, r->expected[i].text, n);
  }
}

/* Check record v[0..n) of selector key[0..klen): 0, or -1 with *why.  With
** out (a rule) and texts (room for the texts, NUL-terminated, as
** rule_room counted), fill them. */
static int rule_decode(const uint8_t *key, size_t klen, const void *v, size_t n, store_repair_rule *out,
                       store_expect *ex, char **texts, const char **why) {
  st_rd rd = {v, (const uint8_t *)v + n, 0};
  if (!selector_kind_n((const char *)key, klen) || memchr(key, 0, klen)) return *why = "its selector is not one", -1;
  if (st_rd_u8(&rd) != RULE_V1) return *why = "its encoding version is unknown", -1;
  int mode = st_rd_u8(&rd);
  size_t ne = st_rd_u8(&rd);
  if (!store_repair_mode_name(mode)) return *why = "its mode is unknown", -1;
  if (ne > STORE_REPAIR_EXPECTED_MAX) return *why = "it lists too many expected conditions", -1;
  for (size_t i = 0; i < ne; i++) {
    int kind = st_rd_u8(&rd);
    size_t tl = st_rd_u16(&rd);
    const uint8_t *t = st_rd_take(&rd, tl);
    if (rd.bad) break;
    if (!store_expect_kind_name(kind) || !clean_text((const char *)t, tl, STORE_REPAIR_EXPECT_MAX))
      return *why = "an expected condition is malformed", -1;
    if (ex) {
      memcpy(*texts, t, tl);
      (*texts)[tl] = '\0';
      ex[i] = (store_expect){kind, *texts};
      *texts += tl + 1;
    }
  }
  if (rd.bad || rd.p != rd.end) return *why = "its length does not match its contents", -1;
  if (out) {
    memcpy(*texts, key, klen);
    (*texts)[klen] = '\0';
    *out = (store_repair_rule){*texts, mode, ne, ex};
    *texts += klen + 1;
  }
  return 0;
}

/* Bytes a decoded rule needs besides its store_repair_rule: expectations
** and texts (an upper bound: the record's size covers them). */
static size_t rule_room(size_t klen, size_t vlen) {
  return STORE_REPAIR_EXPECTED_MAX * sizeof(store_expect) + klen + 1 + vlen + STORE_REPAIR_EXPECTED_MAX;
}

static int corrupt_rule(store_env *s, const void *key, size_t klen, const char *why) {
  return st_fail(s, STORE_ECORRUPT, "the 'repair' database: the rule of selector '%.*s' is damaged: %s",
                 (int)(klen > 200 ? 200 : klen), (const char *)key, why);
}

/* ---- writing */

typedef struct Put { const store_repair_rule *r; } Put;

static int put_txn(store_env *s, MDB_txn *txn, void *arg) {
  const store_repair_rule *r = ((Put *)arg)->r;
  size_t kl = strlen(r->selector), n = rule_size(r);
  MDB_val k = {kl, (void *)r->selector}, v;
  int rc = mdb_get(txn, s->repair, &k, &v);
  if (rc == MDB_NOTFOUND) {
    MDB_stat st;
    if ((rc = mdb_stat(txn, s->repair, &st)) != 0) return st_mdb(s, rc, "counting the repair rules");
    if (st.ms_entries >= STORE_REPAIR_RULES_MAX)
      return st_fail(s, STORE_EINVAL, "the policy holds %u rules, the most it may; delete one first, or "
                     "cover several functions with a prefix (NAME*) or a package (PKG:)", STORE_REPAIR_RULES_MAX);
  } else if (rc) {
    return st_mdb(s, rc, "reading the repair policy");
  }
  uint8_t *buf = malloc(n);
  if (!buf) return st_fail(s, STORE_ENOMEM, "out of memory writing a repair rule");
  rule_encode(buf, r);
  int res = st_put(s, txn, s->repair, r->selector, kl, buf, n, 0, "writing a repair rule");
  free(buf);
  return res;
}

int store_repair_put(store_env *s, const store_repair_rule *rule) {
  s->msg[0] = '\0';
  int r = check_rule(s, rule);
  if (r != STORE_OK) return r;
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  Put p = {rule};
  return st_write(s, put_txn, &p, 0);
}

static int del_txn(store_env *s, MDB_txn *txn, void *arg) {
  const char *sel = arg;
  MDB_val k = {strlen(sel), (void *)sel}, v;
  int rc = mdb_get(txn, s->repair, &k, &v);
  if (rc == MDB_NOTFOUND) return st_fail(s, STORE_ENOENT, "no repair rule has the selector '%.200s'", sel);
  if (rc) return st_mdb(s, rc, "reading the repair policy");
  return st_del(s, txn, s->repair, sel, k.mv_size, "deleting a repair rule");
}

int store_repair_delete(store_env *s, const char *sel) {
  s->msg[0] = '\0';
  if (!store_selector_kind(sel))
    return st_fail(s, STORE_EINVAL, "'%.100s' is not a selector", sel ? sel : "(null)");
  if (s->lockfd < 0) return st_fail(s, STORE_EPERM, "the store was opened read-only");
  return st_write(s, del_txn, (void *)sel, 0);
}

/* ---- reading */

/* Every rule, in one allocation. */
static int read_rules(store_env *s, MDB_txn *txn, store_repair_rule **out, size_t *nout) {
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  size_t n = 0, room = 0;
  int rc, r = STORE_OK;
  *out = NULL;
  *nout = 0;
  if ((rc = mdb_cursor_open(txn, s->repair, &cur)) != 0) return st_mdb(s, rc, "reading the repair policy");
  /* sizes first, then one allocation filled in a second pass */
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    n++;
    room += rule_room(k.mv_size, v.mv_size);
  }
  if (rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading the repair policy"); goto done; }
  if (!n) goto done;
  store_repair_rule *rules = malloc(n * sizeof *rules + room);
  if (!rules) { r = st_fail(s, STORE_ENOMEM, "out of memory reading the repair policy"); goto done; }
  store_expect *ex = (store_expect *)(rules + n);
  char *texts = (char *)(ex + n * STORE_REPAIR_EXPECTED_MAX);
  size_t i = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && i < n; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), i++) {
    const char *why = NULL;
    if (rule_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, &rules[i], ex + i * STORE_REPAIR_EXPECTED_MAX,
                    &texts, &why) != 0) {
      r = corrupt_rule(s, k.mv_data, k.mv_size, why);
      free(rules);
      goto done;
    }
  }
  *out = rules;
  *nout = i;
done:
  mdb_cursor_close(cur);
  return r;
}

int store_repair_list(store_env *s, store_repair_rule **rules, size_t *n) {
  MDB_txn *txn;
  s->msg[0] = '\0';
  if (!rules || !n) return st_fail(s, STORE_EINVAL, "store_repair_list: no place for the rules");
  *rules = NULL;
  *n = 0;
  if (!s->repairs) return STORE_OK;
  int r = st_read_begin(s, &txn);
  if (r != STORE_OK) return r;
  r = read_rules(s, txn, rules, n);
  mdb_txn_abort(txn);
  return r;
}

int store_repair_match(store_env *s, const char *function, store_repair_rule **out) {
  store_repair_rule *rules;
  size_t n;
  s->msg[0] = '\0';
  if (!out || !function || !*function) return st_fail(s, STORE_EINVAL, "store_repair_match: no function");
  *out = NULL;
  int r = store_repair_list(s, &rules, &n);
  if (r != STORE_OK) return r;
  long i = store_repair_pick(rules, n, function);
  if (i < 0) {
    free(rules);
    return st_fail(s, STORE_ENOENT, "no repair rule applies to %.200s", function);
  }
  /* the one rule, copied out of the list's allocation */
  const store_repair_rule *w = &rules[i];
  size_t room = sizeof *w + w->nexpected * sizeof(store_expect) + strlen(w->selector) + 1;
  for (size_t j = 0; j < w->nexpected; j++) room += strlen(w->expected[j].text) + 1;
  store_repair_rule *one = malloc(room);
  if (!one) {
    free(rules);
    return st_fail(s, STORE_ENOMEM, "out of memory reading the repair policy");
  }
  store_expect *ex = (store_expect *)(one + 1);
  char *t = (char *)(ex + w->nexpected);
  *one = (store_repair_rule){t, w->mode, w->nexpected, ex};
  t = stpcpy(t, w->selector) + 1;
  for (size_t j = 0; j < w->nexpected; j++) {
    ex[j] = (store_expect){w->expected[j].kind, t};
    t = stpcpy(t, w->expected[j].text) + 1;
  }
  free(rules);
  *out = one;
  return STORE_OK;
}

int st_verify_repair(store_env *s, MDB_txn *txn) {
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  int rc, r = STORE_OK;
  if (!s->repairs) return STORE_OK;
  if ((rc = mdb_cursor_open(txn, s->repair, &cur)) != 0) return st_mdb(s, rc, "reading the repair policy");
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    const char *why = NULL;
    if (rule_decode(k.mv_data, k.mv_size, v.mv_data, v.mv_size, NULL, NULL, NULL, &why) != 0) {
      r = corrupt_rule(s, k.mv_data, k.mv_size, why);
      break;
    }
  }
  if (r == STORE_OK && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the repair policy");
  mdb_cursor_close(cur);
  return r;
}
