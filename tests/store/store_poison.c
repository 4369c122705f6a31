/*
** store_poison — a test tool: publish, on top of CURRENT, an entry that
** cannot import, as a hostile or damaged store would hold it.  The entry of
** kind FROM named NAME in CURRENT is published again under kind TO (same
** name, same bytes: a stored function offered as a structure, say).  Its
** hash is right, so the store verifies; only importing it fails.
**
**   store_poison DIR FROM NAME TO     e.g.  store_poison s function ZZ structure
**
** Exit status 0 published, 1 failure (the message says why), 2 usage.
*/
#include <stdio.h>
#include <string.h>
#include "store.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: store_poison DIR FROM-KIND NAME TO-KIND\n");
    return 2;
  }
  int from = store_kind_parse(argv[2]), to = store_kind_parse(argv[4]);
  if (!from || !to) {
    fprintf(stderr, "store_poison: unknown kind\n");
    return 2;
  }
  store_env *s;
  char err[512];
  if (store_open(argv[1], 0, &s, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "store_poison: %s\n", err);
    return 1;
  }
  uint64_t cur, gen, rev;
  uint8_t hash[32];
  store_entry *e = NULL;
  int rc = store_current(s, &cur);
  if (rc == STORE_OK) rc = store_generation(s, &gen);
  if (rc == STORE_OK) rc = store_lookup(s, from, argv[3], hash);
  if (rc == STORE_OK) rc = store_get_entry(s, hash, &e);
  if (rc == STORE_OK) {
    store_entry poison = {to, argv[3], e->bytes, e->len};
    store_rev_info info = {STORE_REV_ACTION, gen + 1, 0, "test", "poisoned entry", NULL, NULL};
    rc = store_publish(s, cur, &info, &poison, 1, NULL, 0, &rev);
  }
  if (rc != STORE_OK) fprintf(stderr, "store_poison: %s\n", store_errmsg(s));
  else printf("revision %llu\n", (unsigned long long)rev);
  store_free(e);
  store_close(s);
  return rc == STORE_OK ? 0 : 1;
}
