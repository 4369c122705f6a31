/* test_store_basic.c — publishing and reading revisions: round trip,
** content addressing, stale parents, removal, old revisions, rollback,
** argument checking, read-only handles, format versions. */
#include "st_test.h"
#include <sys/stat.h>
#include <jansson.h>

/* Collect a map as "kind name=bytes;" text. */

static int stop_after_one(void *arg, const store_entry *e, const uint8_t hash[32]) {
  (void)e; (void)hash;
  ++*(int *)arg;
  return 1;
}

static void test_hashes(void) {
  store_entry e = ent(STORE_FUNCTION, "f", "(defun f () 1)");
  uint8_t h[32], h2[32];
  char hex[65];
  CHECK(store_entry_hash(&e, h, hex) == STORE_OK);
  CHECK(strlen(hex) == 64);
  CHECK(store_hash_parse(hex, h2) == STORE_OK && memcmp(h, h2, 32) == 0);
  CHECK(store_hash_parse("xyz", h2) == STORE_EINVAL);
  /* The kind is part of the hash. */
  store_entry m = ent(STORE_MACRO, "f", "(defun f () 1)");
  CHECK(store_entry_hash(&m, h2, NULL) == STORE_OK && memcmp(h, h2, 32) != 0);
  /* "ab" + "c" differs from "a" + "bc": the NUL separates name and bytes. */
  store_entry a = ent(STORE_DATA, "ab", "c"), b = ent(STORE_DATA, "a", "bc");
  CHECK(store_entry_hash(&a, h, NULL) == STORE_OK && store_entry_hash(&b, h2, NULL) == STORE_OK);
  CHECK(memcmp(h, h2, 32) != 0);
  CHECK_STR(store_kind_name(STORE_INVARIANT), "invariant");
  CHECK(store_kind_parse("structure") == STORE_STRUCTURE);
  CHECK(store_kind_parse("nope") == 0);
  CHECK_STR(store_rev_kind_name(STORE_REV_INITIAL), "initial");
  CHECK(store_rev_kind_parse("rollback") == STORE_REV_ROLLBACK);
  CHECK_STR(store_strerror(STORE_ESTALE), "stale parent revision");
}

static void test_round_trip(void) {
  char dir[4096], err[1024];
  store_env *s;
  st_coll c;
  struct stat st;
  uint64_t rev = 99, cur;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, STORE_NOCREATE, &s, err, sizeof err) == STORE_ENOENT);
  CHECK(strstr(err, dir) != NULL);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  {
    char p[4200];
    snprintf(p, sizeof p, "%s/data.mdb", dir);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600);
  }
  CHECK(store_current(s, &cur) == STORE_OK && cur == 0);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c), "");

  store_entry e1[] = {
    ent(STORE_FUNCTION, "area", "(defun area (r) (* 3 r r))"),
    ent(STORE_VARIABLE, "*rate*", "0.07"),
    ent(STORE_DATA, "\"milk\"", "1.20"),
    ent(STORE_INVARIANT, "positive-rate", "(> *rate* 0)"),
  };
  store_rev_info i1 = info_of(STORE_REV_INITIAL, 1, "the initial world");
  i1.response_id = "resp_123";
  CHECK(store_publish(s, 0, &i1, e1, 4, NULL, 0, &rev) == STORE_OK);
  CHECK(rev == 1);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 1);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c),
            "function area=(defun area (r) (* 3 r r));variable *rate*=0.07;"
            "data \"milk\"=1.20;invariant positive-rate=(> *rate* 0);");

  /* Revision 2 changes one definition and adds a row. */
  store_entry e2[] = {
    ent(STORE_FUNCTION, "area", "(defun area (r) (* pi r r))"),
    ent(STORE_DATA, "\"bread\"", "2.50"),
    ent(STORE_VARIABLE, "*rate*", "0.07"),   /* unchanged: not a change */
  };
  store_rev_info i2 = info_of(STORE_REV_ACTION, 7, "use pi");
  CHECK(store_publish(s, 1, &i2, e2, 3, NULL, 0, &rev) == STORE_OK && rev == 2);

  store_manifest *m = NULL;
  CHECK(store_manifest_read(s, 2, &m) == STORE_OK);
  if (m) {
    CHECK(m->rev == 2 && m->parent == 1 && m->generation == 7);
    CHECK(m->kind == STORE_REV_ACTION && m->nentries == 5);
    CHECK_STR(m->summary, "use pi");
    CHECK_STR(m->kernel_version, "jiti-test 0");
    CHECK_STR(m->response_id, "");
    CHECK(m->nchanges == 2);
    CHECK(m->time_ms > 1600000000000LL);
    if (m->nchanges == 2) {
      /* sorted by (kind, name): function before data */
      CHECK_STR(m->changes[0].name, "area");
      CHECK(m->changes[0].kind == STORE_FUNCTION);
      CHECK_STR(m->changes[1].name, "\"bread\"");
      uint8_t z[32] = { 0 };
      CHECK(memcmp(m->changes[1].old_hash, z, 32) == 0);   /* added */
      CHECK(memcmp(m->changes[0].old_hash, z, 32) != 0);   /* changed */
    }
  }
  store_free(m);
  CHECK(store_manifest_read(s, 1, &m) == STORE_OK && m && m->nchanges == 4);
  if (m) CHECK_STR(m->response_id, "resp_123");
  store_free(m);
  CHECK(store_manifest_read(s, 3, &m) == STORE_ENOENT && m == NULL);

  /* store_lookup / store_get_entry */
  uint8_t h[32], h2[32];
  CHECK(store_lookup(s, STORE_FUNCTION, "area", h) == STORE_OK);
  CHECK(store_entry_hash(&e2[0], h2, NULL) == STORE_OK && memcmp(h, h2, 32) == 0);
  store_entry *got = NULL;
  CHECK(store_get_entry(s, h, &got) == STORE_OK && got);
  if (got) {
    CHECK_STR(got->name, "area");
    CHECK_STR((const char *)got->bytes, "(defun area (r) (* pi r r))");
    CHECK(got->kind == STORE_FUNCTION);
  }
  store_free(got);
  CHECK(store_lookup(s, STORE_MACRO, "area", h) == STORE_ENOENT);
  memset(h2, 0xee, 32);
  CHECK(store_get_entry(s, h2, &got) == STORE_ENOENT && got == NULL);

  /* A callback may stop early. */
  int seen = 0;
  CHECK(store_map_foreach(s, STORE_REV_CURRENT, stop_after_one, &seen) == STORE_OK && seen == 1);

  /* Kind by kind, in the caller's order, with the counts known up front;
  ** the current map and a rebuilt one alike. */
  {
    const int order[] = { STORE_INVARIANT, STORE_DATA, STORE_FUNCTION };
    size_t counts[3] = { 9, 9, 9 };
    c.n = 0; c.buf[0] = '\0';
    CHECK(store_map_foreach_kinds(s, STORE_REV_CURRENT, order, 3, counts, st_coll_entry, &c) == STORE_OK);
    CHECK_STR(c.buf, "invariant positive-rate=(> *rate* 0);data \"bread\"=2.50;"
                     "data \"milk\"=1.20;function area=(defun area (r) (* pi r r));");
    CHECK(counts[0] == 1 && counts[1] == 2 && counts[2] == 1);
    c.n = 0; c.buf[0] = '\0';
    CHECK(store_map_foreach_kinds(s, 1, order, 3, counts, st_coll_entry, &c) == STORE_OK);
    CHECK_STR(c.buf, "invariant positive-rate=(> *rate* 0);data \"milk\"=1.20;"
                     "function area=(defun area (r) (* 3 r r));");
    CHECK(counts[0] == 1 && counts[1] == 1 && counts[2] == 1);
    const int none[] = { STORE_MACRO, STORE_STRUCTURE };
    c.n = 0; c.buf[0] = '\0';
    CHECK(store_map_foreach_kinds(s, STORE_REV_CURRENT, none, 2, counts, st_coll_entry, &c) == STORE_OK);
    CHECK_STR(c.buf, "");
    CHECK(counts[0] == 0 && counts[1] == 0);
    CHECK(store_map_foreach_kinds(s, STORE_REV_CURRENT, none, 0, NULL, st_coll_entry, &c) == STORE_OK);
    seen = 0;
    CHECK(store_map_foreach_kinds(s, 2, order, 3, NULL, stop_after_one, &seen) == STORE_OK &&
          seen == 1);
    const int twice[] = { STORE_DATA, STORE_DATA }, bad[] = { 0 };
    CHECK(store_map_foreach_kinds(s, STORE_REV_CURRENT, twice, 2, NULL, st_coll_entry, &c) == STORE_EINVAL);
    CHECK(store_map_foreach_kinds(s, STORE_REV_CURRENT, bad, 1, NULL, st_coll_entry, &c) == STORE_EINVAL);
    CHECK(store_map_foreach_kinds(s, STORE_REV_CURRENT, NULL, 1, NULL, st_coll_entry, &c) == STORE_EINVAL);
    CHECK(store_map_foreach_kinds(s, 3, order, 3, NULL, st_coll_entry, &c) == STORE_ENOENT);
  }

  /* The header of a manifest without its changes. */
  CHECK(store_manifest_read_header(s, 2, &m) == STORE_OK && m);
  if (m) {
    CHECK(m->rev == 2 && m->parent == 1 && m->generation == 7 && m->kind == STORE_REV_ACTION);
    CHECK(m->nentries == 5 && m->nchanges == 2 && m->changes == NULL);
    CHECK_STR(m->summary, "use pi");
    CHECK_STR(m->kernel_version, "jiti-test 0");
  }
  store_free(m);
  CHECK(store_manifest_read_header(s, 1, &m) == STORE_OK && m && m->nchanges == 4);
  if (m) CHECK_STR(m->response_id, "resp_123");
  store_free(m);
  CHECK(store_manifest_read_header(s, 3, &m) == STORE_ENOENT && m == NULL);

  /* An action with no change publishes nothing. */
  CHECK(store_publish(s, 2, &i2, e2, 1, NULL, 0, &rev) == STORE_OK && rev == 2);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 2);

  /* Reopen: the data survived. */
  store_close(s);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 2);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

static void test_dedup_stale_remove_history(void) {
  char dir[4096], err[1024];
  store_env *s;
  st_coll c;
  uint64_t rev, cur;
  store_stat st0, st1;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  store_rev_info act = info_of(STORE_REV_ACTION, 2, "act");

  /* Identical entries under two keys are two entries; the same entry
  ** published again in a later revision is stored once. */
  store_entry a[] = { ent(STORE_DATA, "x", "1"), ent(STORE_DATA, "y", "2") };
  CHECK(store_publish(s, 0, &in, a, 2, NULL, 0, &rev) == STORE_OK && rev == 1);
  store_entry b[] = { ent(STORE_DATA, "x", "5") };
  CHECK(store_publish(s, 1, &act, b, 1, NULL, 0, &rev) == STORE_OK && rev == 2);
  CHECK(store_stats(s, &st0) == STORE_OK && st0.entries == 3);
  store_entry back[] = { ent(STORE_DATA, "x", "1") };
  CHECK(store_publish(s, 2, &act, back, 1, NULL, 0, &rev) == STORE_OK && rev == 3);
  CHECK(store_stats(s, &st1) == STORE_OK && st1.entries == 3);   /* stored once */
  CHECK(st1.revisions == 3 && st1.names == 2 && st1.current == 3);

  /* A stale parent is refused and nothing changes. */
  store_entry z[] = { ent(STORE_DATA, "z", "9") };
  CHECK(store_publish(s, 2, &act, z, 1, NULL, 0, &rev) == STORE_ESTALE);
  CHECK(strstr(store_errmsg(s), "CURRENT is revision 3") != NULL);
  CHECK(strstr(store_errmsg(s), dir) != NULL);
  CHECK(store_stats(s, &st0) == STORE_OK && st0.entries == 3 && st0.revisions == 3);
  CHECK(store_lookup(s, STORE_DATA, "z", (uint8_t[32]){0}) == STORE_ENOENT);
  CHECK(store_publish(s, 0, &act, z, 1, NULL, 0, &rev) == STORE_ESTALE);

  /* Removal. */
  store_key rm[] = { { STORE_DATA, "y" } };
  CHECK(store_publish(s, 3, &act, NULL, 0, rm, 1, &rev) == STORE_OK && rev == 4);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c), "data x=1;");
  /* Removing what is not there is refused, nothing written. */
  CHECK(store_publish(s, 4, &act, NULL, 0, rm, 1, &rev) == STORE_EINVAL);
  CHECK(strstr(store_errmsg(s), "not in the current map") != NULL);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 4);
  /* Put and remove in one publish. */
  store_key rmx[] = { { STORE_DATA, "x" } };
  CHECK(store_publish(s, 4, &act, z, 1, rmx, 1, &rev) == STORE_OK && rev == 5);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c), "data z=9;");

  /* Old revisions, rebuilt from the deltas. */
  CHECK_STR(st_map_of(s, 0, &c), "");
  CHECK_STR(st_map_of(s, 1, &c), "data x=1;data y=2;");
  CHECK_STR(st_map_of(s, 2, &c), "data x=5;data y=2;");
  CHECK_STR(st_map_of(s, 3, &c), "data x=1;data y=2;");
  CHECK_STR(st_map_of(s, 4, &c), "data x=1;");
  CHECK_STR(st_map_of(s, 5, &c), "data z=9;");
  CHECK(store_map_foreach(s, 6, st_coll_entry, &c) == STORE_ENOENT);

  /* Rollback to 2: a new revision 6 equal to 2; history kept. */
  store_rev_info rb = info_of(STORE_REV_ACTION, 9, "rollback to 2");
  CHECK(store_publish_revert(s, 5, 2, &rb, &rev) == STORE_OK && rev == 6);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c), "data x=5;data y=2;");
  store_manifest *m = NULL;
  CHECK(store_manifest_read(s, 6, &m) == STORE_OK && m);
  if (m) {
    CHECK(m->kind == STORE_REV_ROLLBACK && m->rollback_of == 2 && m->nentries == 2);
    CHECK(m->nchanges == 3);   /* x changed, y added, z removed */
  }
  store_free(m);
  CHECK_STR(st_map_of(s, 5, &c), "data z=9;");
  /* Stale rollback refused; rollback beyond CURRENT refused. */
  CHECK(store_publish_revert(s, 5, 1, &rb, &rev) == STORE_ESTALE);
  CHECK(store_publish_revert(s, 6, 7, &rb, &rev) == STORE_ENOENT);
  /* Rollback to the current map still publishes (rollbacks always do). */
  CHECK(store_publish_revert(s, 6, 6, &rb, &rev) == STORE_OK && rev == 7);
  /* Rollback to the empty map. */
  CHECK(store_publish_revert(s, 7, 0, &rb, &rev) == STORE_OK && rev == 8);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c), "");
  CHECK_STR(st_map_of(s, 6, &c), "data x=5;data y=2;");
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

static void test_invalid_args(void) {
  char dir[4096], err[1024], longname[600];
  store_env *s;
  uint64_t rev, cur;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(NULL, 0, &s, err, sizeof err) == STORE_EINVAL);
  CHECK(store_open("", 0, &s, err, sizeof err) == STORE_EINVAL);
  CHECK(store_open(dir, 0x100, &s, err, sizeof err) == STORE_EINVAL);
  CHECK(store_open("/dev/null", 0, &s, err, sizeof err) == STORE_EINVAL);
  CHECK(strstr(err, "not a directory") != NULL);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_rev_info act = info_of(STORE_REV_ACTION, 1, "x");
  store_entry bad_kind = ent(99, "f", "x");
  CHECK(store_publish(s, 0, &act, &bad_kind, 1, NULL, 0, &rev) == STORE_EINVAL);
  store_entry no_name = ent(STORE_FUNCTION, "", "x");
  CHECK(store_publish(s, 0, &act, &no_name, 1, NULL, 0, &rev) == STORE_EINVAL);
  store_entry bad_utf8 = ent(STORE_FUNCTION, "f\xc3\x28", "x");
  CHECK(store_publish(s, 0, &act, &bad_utf8, 1, NULL, 0, &rev) == STORE_EINVAL);
  CHECK(strstr(store_errmsg(s), "UTF-8") != NULL);
  store_entry overlong = ent(STORE_FUNCTION, "\xc0\xaf", "x");
  CHECK(store_publish(s, 0, &act, &overlong, 1, NULL, 0, &rev) == STORE_EINVAL);
  store_entry utf8 = ent(STORE_FUNCTION, "f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "x");
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  store_entry too_long = ent(STORE_FUNCTION, longname, "x");
  CHECK(store_publish(s, 0, &act, &too_long, 1, NULL, 0, &rev) == STORE_EINVAL);
  longname[STORE_NAME_MAX] = '\0';
  store_entry max_name = ent(STORE_FUNCTION, longname, "x");
  store_entry dup[] = { ent(STORE_DATA, "k", "1"), ent(STORE_DATA, "k", "2") };
  CHECK(store_publish(s, 0, &act, dup, 2, NULL, 0, &rev) == STORE_EINVAL);
  CHECK(strstr(store_errmsg(s), "twice") != NULL);
  store_key rmdup[] = { { STORE_DATA, "k" } };
  CHECK(store_publish(s, 0, &act, dup, 1, rmdup, 1, &rev) == STORE_EINVAL);
  store_rev_info bad_info = info_of(42, 1, "x");
  CHECK(store_publish(s, 0, &bad_info, &utf8, 1, NULL, 0, &rev) == STORE_EINVAL);
  CHECK(store_publish(s, 0, NULL, &utf8, 1, NULL, 0, &rev) == STORE_EINVAL);
  CHECK(store_publish(s, 0, &act, NULL, 1, NULL, 0, &rev) == STORE_EINVAL);
  CHECK(store_current(s, &cur) == STORE_OK && cur == 0);
  /* Valid edge cases. */
  store_entry ok[] = { utf8, max_name, ent(STORE_DATA, "empty", "") };
  char big_summary[3000];
  memset(big_summary, 's', sizeof big_summary - 1);
  big_summary[sizeof big_summary - 1] = '\0';
  store_rev_info long_sum = info_of(STORE_REV_ACTION, 1, big_summary);
  CHECK(store_publish(s, 0, &long_sum, ok, 3, NULL, 0, &rev) == STORE_OK && rev == 1);
  store_manifest *m = NULL;
  CHECK(store_manifest_read(s, 1, &m) == STORE_OK && m && strlen(m->summary) == STORE_SUMMARY_MAX);
  store_free(m);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

static void test_readonly_and_version(void) {
  char dir[4096], err[1024];
  store_env *s, *ro;
  uint64_t rev, cur;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, STORE_RDONLY, &ro, err, sizeof err) == STORE_ENOENT);
  CHECK(strstr(err, dir) != NULL);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  store_entry a = ent(STORE_FUNCTION, "f", "(defun f () 1)");
  CHECK(store_publish(s, 0, &in, &a, 1, NULL, 0, &rev) == STORE_OK);
  store_close(s);
  /* A read-only handle reads and cannot write. */
  CHECK(store_open(dir, STORE_RDONLY, &ro, err, sizeof err) == STORE_OK);
  CHECK(store_current(ro, &cur) == STORE_OK && cur == 1);
  CHECK(store_publish(ro, 1, &in, &a, 1, NULL, 0, &rev) == STORE_EPERM);
  CHECK(store_event_append(ro, "{\"event\":\"x\"}", NULL) == STORE_EPERM);
  CHECK(store_verify(ro, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(ro);
  /* A store of format 1 (before package-qualified names) is read as it is
  ** by a read-only handle and brought to the current format by a writable one, in
  ** one write transaction; its entries stay as they were. */
  unsigned char v1[4] = { 0, 0, 0, 1 };
  CHECK(raw_put(dir, "meta", "format", 6, v1, 4) == 0);
  CHECK(store_open(dir, STORE_RDONLY, &ro, err, sizeof err) == STORE_OK);
  CHECK(store_current(ro, &cur) == STORE_OK && cur == 1);
  uint8_t h[32];
  CHECK(store_lookup(ro, STORE_FUNCTION, "f", h) == STORE_OK);
  store_close(ro);
  unsigned char fmt[4];
  CHECK(raw_get(dir, "meta", "format", 6, fmt, 4) == 4 && fmt[3] == 1);   /* untouched */
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(raw_get(dir, "meta", "format", 6, fmt, 4) == 4 && fmt[3] == STORE_FORMAT_VERSION);   /* upgraded */
  CHECK(store_lookup(s, STORE_FUNCTION, "f", h) == STORE_OK);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_entry p = ent(STORE_PACKAGE, "\"APP\"", "(defpackage \"APP\")");
  store_rev_info ac = info_of(STORE_REV_ACTION, 2, "a package");
  CHECK(store_publish(s, 1, &ac, &p, 1, NULL, 0, &rev) == STORE_OK && rev == 2);
  store_close(s);
  /* A newer format, or one no migration knows, is refused, naming both. */
  unsigned char v5[4] = { 0, 0, 0, 5 }, v0[4] = { 0, 0, 0, 0 };
  CHECK(raw_put(dir, "meta", "format", 6, v5, 4) == 0);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_EVERSION);
  CHECK(strstr(err, "format version 5") != NULL && strstr(err, "format versions 1 to 4") != NULL);
  CHECK(strstr(err, dir) != NULL);
  CHECK(store_open(dir, STORE_RDONLY, &s, err, sizeof err) == STORE_EVERSION);
  CHECK(raw_put(dir, "meta", "format", 6, v0, 4) == 0);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_EVERSION);
  store_close(NULL);
  rm_store(dir);
}

/* Closed descriptors 0-2 are reopened on /dev/null before any store file. */
static void test_closed_std_fds(void) {
  char dir[4096], err[1024];
  store_env *s;
  tmp_store(dir, sizeof dir);
  int saved = dup(0);
  close(0);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  char link[64], target[256];
  snprintf(link, sizeof link, "/proc/self/fd/0");
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n > 0) target[n] = '\0';
  CHECK(n > 0 && strcmp(target, "/dev/null") == 0);
  store_close(s);
  dup2(saved, 0);
  close(saved);
  rm_store(dir);
}

/* Foreign declarations are entries like any other, and a revision's
** manifest records the libraries the world was granted; a revision made
** without a grant keeps the first manifest encoding. */
static void test_foreign(void) {
  char dir[4096], err[1024];
  store_env *s;
  st_coll c;
  uint64_t rev;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK_STR(store_kind_name(STORE_FOREIGN), "foreign");
  CHECK(store_kind_parse("foreign") == STORE_FOREIGN);
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  CHECK(store_publish(s, 0, &in, NULL, 0, NULL, 0, &rev) == STORE_OK && rev == 1);
  store_entry e[] = { ent(STORE_FOREIGN, "MY-COS", "(define-foreign my-cos \"libm.so.6\" \"cos\" :double (:double))") };
  store_rev_info act = info_of(STORE_REV_ACTION, 2, "declare cos");
  act.foreign = "libm.so.6\nlibc.so.6\n";
  CHECK(store_publish(s, 1, &act, e, 1, NULL, 0, &rev) == STORE_OK && rev == 2);
  CHECK_STR(st_map_of(s, STORE_REV_CURRENT, &c),
            "foreign MY-COS=(define-foreign my-cos \"libm.so.6\" \"cos\" :double (:double));");
  store_manifest *m = NULL;
  CHECK(store_manifest_read(s, 2, &m) == STORE_OK && m);
  if (m) {
    CHECK_STR(m->foreign, "libm.so.6\nlibc.so.6\n");
    CHECK_STR(m->summary, "declare cos");
    CHECK(m->nchanges == 1 && m->changes[0].kind == STORE_FOREIGN);
  }
  store_free(m);
  CHECK(store_manifest_read_header(s, 2, &m) == STORE_OK && m);
  if (m) CHECK_STR(m->foreign, "libm.so.6\nlibc.so.6\n");
  store_free(m);
  CHECK(store_manifest_read(s, 1, &m) == STORE_OK && m);
  if (m) CHECK_STR(m->foreign, "");
  store_free(m);
  /* too long a grant is refused, nothing written */
  char big[STORE_FOREIGN_MAX + 2];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  act.foreign = big;
  store_entry e2[] = { ent(STORE_FOREIGN, "MY-SIN", "x") };
  CHECK(store_publish(s, 2, &act, e2, 1, NULL, 0, &rev) == STORE_EINVAL);
  CHECK(strstr(store_errmsg(s), "foreign grant") != NULL);
  big[STORE_FOREIGN_MAX] = 0;
  CHECK(store_publish(s, 2, &act, e2, 1, NULL, 0, &rev) == STORE_OK && rev == 3);
  CHECK(store_manifest_read(s, 3, &m) == STORE_OK && m && strlen(m->foreign) == STORE_FOREIGN_MAX);
  store_free(m);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

/* The generation high-water mark: recorded by publishes (revert too) and by
** store_advance_generation (with its events, one transaction), never lowered,
** kept across reopening; a store without the record reports CURRENT's
** generation. */
static void test_generation(void) {
  char dir[4096], err[1024];
  store_env *s, *ro;
  uint64_t g = 99, rev, seq = 0;
  tmp_store(dir, sizeof dir);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_generation(s, &g) == STORE_OK && g == 0);
  CHECK(store_generation(s, NULL) == STORE_EINVAL);
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
  CHECK(store_publish(s, 0, &in, NULL, 0, NULL, 0, &rev) == STORE_OK);
  CHECK(store_generation(s, &g) == STORE_OK && g == 1);
  /* advanced without a revision, with an event in the same transaction */
  json_t *ev = json_pack("{s:s, s:i}", "event", "paused", "attempt", 3);
  CHECK(store_advance_generation(s, 40, &ev, NULL, 1, &seq) == STORE_OK && seq == 1);
  json_decref(ev);
  CHECK(store_generation(s, &g) == STORE_OK && g == 40);
  /* never lowered: by a smaller advance or by a publish recording less */
  CHECK(store_advance_generation(s, 7, NULL, NULL, 0, NULL) == STORE_OK);
  store_rev_info act = info_of(STORE_REV_ACTION, 2, "stale generation");
  store_entry a = ent(STORE_FUNCTION, "f", "(defun f () 1)");
  CHECK(store_publish(s, 1, &act, &a, 1, NULL, 0, &rev) == STORE_OK && rev == 2);
  CHECK(store_generation(s, &g) == STORE_OK && g == 40);
  /* a publish recording more raises it; so does a rollback */
  act.generation = 41;
  store_entry b = ent(STORE_FUNCTION, "f", "(defun f () 2)");
  CHECK(store_publish(s, 2, &act, &b, 1, NULL, 0, &rev) == STORE_OK && rev == 3);
  CHECK(store_generation(s, &g) == STORE_OK && g == 41);
  store_rev_info rb = info_of(STORE_REV_ROLLBACK, 42, "rollback");
  CHECK(store_publish_revert(s, 3, 2, &rb, &rev) == STORE_OK && rev == 4);
  CHECK(store_generation(s, &g) == STORE_OK && g == 42);
  /* a publish that changes nothing records nothing */
  act.generation = 50;
  CHECK(store_publish(s, 4, &act, &a, 1, NULL, 0, &rev) == STORE_OK && rev == 4);
  CHECK(store_generation(s, &g) == STORE_OK && g == 42);
  /* a bad event: nothing written */
  json_t *bad = json_integer(1);
  CHECK(store_advance_generation(s, 60, &bad, NULL, 1, NULL) == STORE_EINVAL);
  json_decref(bad);
  CHECK(store_generation(s, &g) == STORE_OK && g == 42);
  store_close(s);
  /* kept across reopening; readable beside a writer; not writable read-only */
  CHECK(store_open(dir, STORE_RDONLY, &ro, err, sizeof err) == STORE_OK);
  CHECK(store_generation(ro, &g) == STORE_OK && g == 42);
  CHECK(store_advance_generation(ro, 43, NULL, NULL, 0, NULL) == STORE_EPERM);
  store_close(ro);
  /* a store written before the record existed: CURRENT's generation */
  CHECK(raw_del(dir, "meta", "generation", 10) == 0);
  CHECK(store_open(dir, 0, &s, err, sizeof err) == STORE_OK);
  CHECK(store_generation(s, &g) == STORE_OK && g == 42);  /* the rollback's manifest */
  CHECK(store_advance_generation(s, 43, NULL, NULL, 0, NULL) == STORE_OK);
  CHECK(store_generation(s, &g) == STORE_OK && g == 43);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  rm_store(dir);
}

int main(void) {
  test_hashes();
  test_foreign();
  test_round_trip();
  test_dedup_stale_remove_history();
  test_invalid_args();
  test_readonly_and_version();
  test_closed_std_fds();
  test_generation();
  return CHECK_DONE();
}
