/*
** grant.c — the C libraries the operator grants a world (engine.h): the
** --allow-foreign option of the commands that start a worker, the worker's
** own arguments, and the text a revision's manifest records.  The grant is
** the operator's alone: nothing a transaction sends can widen it, because a
** worker opens its libraries before it enters its sandbox and can open none
** afterwards (docs/security.md).
*/
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"

const char GRANT_HELP[] =
  "  --allow-foreign LIB  grant the world the C library LIB (a name dlopen finds,\n"
  "                    e.g. libm.so.6, or a path): the functions it defines\n"
  "                    itself (not those of the libraries it depends on) may be\n"
  "                    declared with define-foreign and are re-created from the\n"
  "                    store (repeat for more libraries; docs/security.md)\n";

/* The bytes lib takes in a manifest's grant: the name and its newline. */
static size_t manifest_bytes(const grant_List *g) {
  size_t n = 0;
  for (size_t k = 0; k < g->n; k++) n += strlen(g->lib[k]) + 1;
  return n;
}

int grant_add(grant_List *g, const char *lib, char *err, size_t errlen) {
  if (!lib || !*lib || strchr(lib, '\n')) {
    snprintf(err, errlen, "--allow-foreign needs a library name (without a newline)");
    return -1;
  }
  for (size_t k = 0; k < g->n; k++)
    if (!strcmp(g->lib[k], lib)) return 0; /* granted already */
  if (g->n == GRANT_MAX) {
    snprintf(err, errlen, "at most %d libraries may be granted", GRANT_MAX);
    return -1;
  }
  if (manifest_bytes(g) + strlen(lib) + 1 > STORE_FOREIGN_MAX) {
    snprintf(err, errlen, "the libraries granted must fit in %u bytes", STORE_FOREIGN_MAX);
    return -1;
  }
  g->lib[g->n++] = lib;
  return 0;
}

int grant_option(int argc, char **argv, int *i, grant_List *g, char *err, size_t errlen) {
  if (strcmp(argv[*i], "--allow-foreign")) return 0;
  if (*i + 1 >= argc) {
    snprintf(err, errlen, "--allow-foreign needs a library (e.g. --allow-foreign libm.so.6)");
    return -1;
  }
  return grant_add(g, argv[++*i], err, errlen) != 0 ? -1 : 1;
}

void grant_manifest(const grant_List *g, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (size_t k = 0; g && k < g->n && at < n; k++) at += (size_t)snprintf(buf + at, n - at, "%s\n", g->lib[k]);
}

json_t *grant_json(const grant_List *g) {
  json_t *a = json_array();
  for (size_t k = 0; g && k < g->n; k++) json_array_append_new(a, json_string(g->lib[k]));
  return a;
}
