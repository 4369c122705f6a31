/* test_store_mapfull.c — a store opened with a tiny map (256 KiB) grows it
** when a commit finds it full: 5 MiB of entries in one publish succeed, and
** so do many small publishes and events after it; the grown size is kept
** when the store is reopened with the small size again. */
#include "st_test.h"

int main(void) {
  char dir[4096], err[1024], name[32];
  store_env *s;
  uint64_t rev;
  store_stat st;
  store_options opt = { .mapsize = 256 << 10 };
  enum { N = 80, SZ = 64 << 10 };          /* 80 x 64 KiB = 5 MiB */
  tmp_store(dir, sizeof dir);
  CHECK(store_open_with(dir, 0, &opt, &s, err, sizeof err) == STORE_OK);
  CHECK(store_stats(s, &st) == STORE_OK && st.mapsize == (256u << 10));
  char *blob = malloc((size_t)N * SZ);
  store_entry *es = calloc(N, sizeof *es);
  char (*names)[32] = calloc(N, 32);
  for (int i = 0; i < N; i++) {
    memset(blob + (size_t)i * SZ, 'a' + i % 26, SZ);
    snprintf(names[i], 32, "row-%d", i);
    es[i] = (store_entry){ STORE_DATA, names[i], blob + (size_t)i * SZ, SZ };
  }
  store_rev_info in = info_of(STORE_REV_INITIAL, 1, "5 MiB");
  CHECK(store_publish(s, 0, &in, es, N, NULL, 0, &rev) == STORE_OK && rev == 1);
  if (rev != 1) fprintf(stderr, "%s\n", store_errmsg(s));
  CHECK(store_stats(s, &st) == STORE_OK && st.mapsize >= (8u << 20) && st.names == N);
  printf("map grew from 256 KiB to %zu KiB\n", st.mapsize >> 10);
  /* Many small commits and events after the growth. */
  store_rev_info act = info_of(STORE_REV_ACTION, 2, "small");
  for (int i = 0; i < 50; i++) {
    snprintf(name, sizeof name, "f%d", i);
    store_entry e = ent(STORE_FUNCTION, name, "(defun f () 1)");
    CHECK(store_publish(s, rev, &act, &e, 1, NULL, 0, &rev) == STORE_OK);
    CHECK(store_event_append(s, "{\"event\":\"accepted\"}", NULL) == STORE_OK);
  }
  CHECK(rev == 51);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  size_t grown = st.mapsize;
  store_close(s);
  /* Reopened with the tiny size: the recorded size wins. */
  CHECK(store_open_with(dir, 0, &opt, &s, err, sizeof err) == STORE_OK);
  CHECK(store_stats(s, &st) == STORE_OK && st.mapsize >= grown && st.current == 51);
  CHECK(store_verify(s, STORE_VERIFY_HISTORY, err, sizeof err) == STORE_OK);
  store_close(s);
  /* A store too big for a tiny map also grows on its first event. */
  opt.mapsize = 64 << 10;
  rm_store(dir);
  tmp_store(dir, sizeof dir);
  CHECK(store_open_with(dir, 0, &opt, &s, err, sizeof err) == STORE_OK);
  char *ev = malloc(15000);
  memcpy(ev, "{\"event\":\"x\",\"p\":\"", 18);
  memset(ev + 18, 'p', 14000);
  strcpy(ev + 18 + 14000, "\"}");
  for (int i = 0; i < 40; i++) CHECK(store_event_append(s, ev, NULL) == STORE_OK);
  CHECK(store_stats(s, &st) == STORE_OK && st.events == 40 && st.mapsize > (64u << 10));
  store_close(s);
  free(ev);
  free(blob); free(es); free(names);
  rm_store(dir);
  return CHECK_DONE();
}
