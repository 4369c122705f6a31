/* events_bench.c — builds stores holding a million calls' records straight
** through the store API, as a kernel of this version records them, for
** bench/events_bench.sh (docs/benchmarks.md, "Events").
**
**   events_bench build DIR N [--events]
**       DIR gets N keyed read-only calls recorded the way this version's
**       kernel does: before format 3, a "started" and an "accepted" event
**       each, the key itself in them; from format 3, counters and key-only
**       records (the newest STORE_KEYS_MAX).  --events writes the two
**       events of each call, without a key, in any version: a store whose
**       events grew (writing calls, acts) before it had a retention bound.
**   events_bench stat DIR
**       events, their first and last seq, tree bytes (pages the B-trees
**       hold), data.mdb's size, keys and counters.
**
** It uses only what both versions' store.h declare, and what format 3
** adds under #ifdef STORE_KEYS_MAX, so that the same file builds against
** an older tree's store (the "before" figures).
*/
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "store.h"

#define BATCH 10000   /* calls per transaction */

static int fail(store_env *s, const char *what) {
  fprintf(stderr, "events_bench: %s: %s\n", what, s ? store_errmsg(s) : "");
  return 1;
}

/* The members of a call's two events, as the kernel writes them.  key: the
** member "idempotency" holds (the key before format 3, on both; its digest
** after, on the outcome, with the request's); NULL: none. */
static void call_events(uint64_t i, const char *key, const char *request, char *started, char *outcome, size_t n) {
  char km[200] = "";
  if (key) snprintf(km, sizeof km, ",\"idempotency\":\"%s\"", key);
  snprintf(started, n, "\"event\":\"started\",\"attempt\":%" PRIu64 ",\"command\":\"call\",\"source\":"
           "\"(world-get :counter)\",\"parent\":1,\"generation\":2%s", i, request ? "" : km);
  snprintf(outcome, n, "\"event\":\"accepted\",\"attempt\":%" PRIu64 ",\"command\":\"call\",\"outcome\":"
           "\"accepted\",\"revision\":1,\"generation\":2%s%s%s%s", i, km, request ? ",\"request\":\"" : "",
           request ? request : "", request ? "\"" : "");
}

/* A random-looking key of call i, as `jiti eval` makes one. */
static void key_of(uint64_t i, char *out, size_t n) {
  snprintf(out, n, "e%016" PRIx64 "-%08" PRIx64, (uint64_t)(i * 0x9E3779B97F4A7C15ull), i);
}

#ifdef STORE_KEYS_MAX
static void hex_digest(const char *s, char out[65]) {
  uint8_t d[32];
  store_digest(s, strlen(s), d);
  store_hash_hex(d, out);
}
#endif

static int build(const char *dir, uint64_t n, int as_events) {
  char err[1024];
  store_env *s;
  if (store_open(dir, 0, &s, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "events_bench: %s\n", err);
    return 1;
  }
  uint64_t cur = 0;
  if (store_current(s, &cur) != STORE_OK) return fail(s, "current");
  if (!cur) {
    store_rev_info info = {STORE_REV_INITIAL, 1, 0, "bench", "initial", NULL, NULL};
    if (store_publish(s, 0, &info, NULL, 0, NULL, 0, &cur) != STORE_OK) return fail(s, "initial revision");
  }
  store_ev *ev = calloc(2 * BATCH, sizeof *ev);
  char (*text)[512] = calloc(2 * BATCH, sizeof *text);
  if (!ev || !text) return fail(NULL, "out of memory");
#ifdef STORE_KEYS_MAX
  store_count count = {"call", "accepted", 0, 0, 0};
#endif
  for (uint64_t done = 0; done < n;) {
    size_t m = n - done < BATCH ? (size_t)(n - done) : BATCH, ne = 0;
    for (size_t j = 0; j < m; j++) {
      uint64_t i = done + j + 1;
      char key[64];
      key_of(i, key, sizeof key);
#ifdef STORE_KEYS_MAX
      if (as_events) {
        call_events(i, NULL, NULL, text[2 * j], text[2 * j + 1], sizeof text[0]);
        ev[ne++] = (store_ev){NULL, text[2 * j], strlen(text[2 * j]), 0};
      } else {
        char kd[65], rd[65], req[128];
        hex_digest(key, kd);
        snprintf(req, sizeof req, "{\"op\":\"call\",\"source\":\"(world-get :counter)\"}");
        hex_digest(req, rd);
        call_events(i, kd, rd, text[2 * j], text[2 * j + 1], sizeof text[0]);
      }
      ev[ne++] = (store_ev){NULL, text[2 * j + 1], strlen(text[2 * j + 1]), 0};
#else
      call_events(i, as_events ? NULL : key, NULL, text[2 * j], text[2 * j + 1], sizeof text[0]);
      ev[ne++] = (store_ev){NULL, text[2 * j], strlen(text[2 * j]), 0};
      ev[ne++] = (store_ev){NULL, text[2 * j + 1], strlen(text[2 * j + 1]), 0};
#endif
    }
#ifdef STORE_KEYS_MAX
    if (!as_events) {   /* this version's kernel: counted, the outcome kept as its key's record */
      count.n = m;
      store_tally t = {&count, 1, ev, ne, done + m};
      if (store_tally_add(s, &t, STORE_GROUP_SYNC_LATER) != STORE_OK) return fail(s, "tally");
      done += m;
      continue;
    }
#endif
    if (store_events_append_later(s, ev, ne, NULL) != STORE_OK) return fail(s, "events");
    done += m;
  }
  char e2[256];
  if (store_sync(s, e2, sizeof e2) != STORE_OK) return fail(s, e2);
  free(ev);
  free(text);
  store_close(s);
  return 0;
}

static int stat_store(const char *dir) {
  char err[1024], path[4200];
  store_env *s;
  if (store_open(dir, STORE_RDONLY, &s, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "events_bench: %s\n", err);
    return 1;
  }
  store_stat st;
  if (store_stats(s, &st) != STORE_OK) return fail(s, "stats");
  struct stat sb;
  snprintf(path, sizeof path, "%s/data.mdb", dir);
  long long file = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
  printf("events %" PRIu64 " last_seq %" PRIu64 " tree_bytes %" PRIu64 " file_bytes %lld", st.events, st.last_event,
         st.pages_used * (uint64_t)st.page_size, file);
#ifdef STORE_KEYS_MAX
  printf(" first_seq %" PRIu64 " keys %" PRIu64 " counters %" PRIu64 " open_attempts %" PRIu64, st.first_event, st.keys,
         st.counters, st.open_attempts);
#endif
  printf("\n");
  store_close(s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "build"))
    return build(argv[2], strtoull(argv[3], NULL, 10), argc >= 5 && !strcmp(argv[4], "--events"));
  if (argc == 3 && !strcmp(argv[1], "stat")) return stat_store(argv[2]);
  fprintf(stderr, "usage: events_bench build DIR N [--events] | events_bench stat DIR\n");
  return 2;
}
