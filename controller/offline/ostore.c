/*
** ostore.c — the engine's store helpers (engine.h storeio_) as the store
** commands use them: what the engine returns as a message is printed
** here, as "jiti CMD: ...", since the engine prints nothing.
*/
#include <stdio.h>
#include "offline.h"

store_env *ostore_open(const char *cmd, const char *dir, int writer) {
  char err[CLI_MSG_MAX];
  store_env *s = storeio_open(dir, writer, err, sizeof err);
  if (!s) fprintf(stderr, "jiti %s: %s\n", cmd, err);
  return s;
}

int ostore_rev(const char *cmd, store_env *s, const char *text, uint64_t *rev) {
  char err[CLI_MSG_MAX];
  int status = storeio_resolve_rev(s, text, rev, err, sizeof err);
  if (status != EXIT_OK) fprintf(stderr, "jiti %s: %s\n", cmd, err);
  return status;
}

void ostore_event(store_env *s, const char *cmd, json_t *obj) {
  char err[1024];
  if (storeio_event(s, obj, err, sizeof err) != STORE_OK)
    fprintf(stderr, "jiti %s: warning: could not record an event: %s\n", cmd, err);
}
