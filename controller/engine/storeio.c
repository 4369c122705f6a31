/*
** storeio.c — the store as the commands and the daemon use it (engine.h):
** opening it with a clear message (for the caller to print), REV syntax,
** time formatting, entry kinds, loading a revision's map and the order of
** its import into a world, attempt numbers and events.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include "engine.h"
#include "cli.h"

store_env *storeio_open(const char *dir, int writer, char *err, size_t errlen) {
  char why[1024] = "", hint[CLI_MSG_MAX / 2];
  store_env *s = NULL;
  int rc = store_open(dir, writer ? STORE_NOCREATE : STORE_RDONLY, &s, why, sizeof why);
  if (rc == STORE_OK) return s;
  if (rc == STORE_ENOENT) {
    snprintf(err, errlen,
             "no store at %s (create one with 'jiti init --store %s', "
             "or name another with --store DIR or $JITI_STORE)",
             dir, dir);
  } else {
    storeio_open_hint(dir, rc, hint, sizeof hint);
    snprintf(err, errlen, "cannot open the store at %s: %s%s%s", dir, why[0] ? why : store_strerror(rc),
             hint[0] ? "\n" : "", hint);
  }
  return NULL;
}

void storeio_open_hint(const char *dir, int rc, char *buf, size_t n) {
  buf[0] = '\0';
  if (rc == STORE_EJOURNAL)
    snprintf(buf, n,
             "the writes after the damage stay in %s/journal until you choose: copy it away to keep "
             "them, then 'jiti recover-session --store %s --accept-loss' replays what precedes the damage, "
             "drops the rest and records what it dropped",
             dir, dir);
}

/* [1-9][0-9]* that fits in 63 bits. */
static int parse_positive(const char *p, uint64_t *out) {
  if (*p < '1' || *p > '9') return 0;
  size_t n = strspn(p, "0123456789");
  if (p[n] || n > 18) return 0;
  *out = strtoull(p, NULL, 10);
  return 1;
}

int storeio_resolve_rev(store_env *s, const char *text, uint64_t *rev, char *err, size_t errlen) {
  uint64_t cur = 0, back = 0, r = 0;
  int rc = store_current(s, &cur);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "%s", store_errmsg(s));
    return EXIT_FAIL;
  }
  if (!strcmp(text, "HEAD")) {
    r = cur;
  } else if (!strcmp(text, "previous")) {
    back = 1;
  } else if (!strncmp(text, "HEAD~", 5)) {
    const char *p = text + 5;
    size_t n = strspn(p, "0123456789");
    if (n == 0 || p[n] || n > 18) goto bad;
    back = strtoull(p, NULL, 10);
  } else if (parse_positive(text, &r)) {
    if (r > cur) {
      snprintf(err, errlen, "no revision %s in the store at %s (CURRENT is %" PRIu64 ")", text, store_path(s), cur);
      return EXIT_FAIL;
    }
  } else {
    goto bad;
  }
  if (back) {
    if (back >= cur) {
      snprintf(err, errlen, "%s is before revision 1 in the store at %s (CURRENT is %" PRIu64 ")", text, store_path(s),
               cur);
      return EXIT_FAIL;
    }
    r = cur - back;
  }
  if (r == 0) {
    snprintf(err, errlen, "the store at %s has no revisions yet (run 'jiti init')", store_path(s));
    return EXIT_FAIL;
  }
  *rev = r;
  return EXIT_OK;
bad:
  snprintf(err, errlen, "'%s' is not a revision: use a number from 1, HEAD, HEAD~N or previous", text);
  return EXIT_USAGE;
}

void storeio_iso_time(int64_t ms, char *buf, size_t len) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm)) snprintf(buf, len, "@%" PRId64 "ms", ms);
}

int storeio_store_kind(jiti_EntryKind k) { return store_kind_parse(jiti_entry_kind_name(k)); }

int storeio_kernel_kind(int store_kind) {
  const char *n = store_kind_name(store_kind);
  return n ? jiti_entry_kind_parse(n) : -1;
}

/* ---- maps */

typedef struct {
  storeio_map *m;
  int rc;
} LoadArgs;

/* Names and bytes are copied into chunks of at least 1 MiB: one malloc per
** chunk instead of one per entry (a world has ~10^5 entries). */
struct storeio_chunk {
  struct storeio_chunk *next;
  size_t used, cap;
  char data[];
};

static char *map_alloc(storeio_map *m, size_t n) {
  struct storeio_chunk *c = m->chunks;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > ((size_t)1 << 20) ? n : (size_t)1 << 20;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    if (m->chunks && n > ((size_t)1 << 19)) {
      /* a big one: keep filling the current chunk afterwards */
      c->next = m->chunks->next;
      m->chunks->next = c;
    } else {
      c->next = m->chunks;
      m->chunks = c;
    }
  }
  char *p = c->data + c->used;
  c->used += n;
  return p;
}

static int load_one(void *arg, const store_entry *e, const uint8_t hash[32]) {
  LoadArgs *a = arg;
  storeio_map *m = a->m;
  if (m->only_kind && e->kind != m->only_kind) return 0;
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    storeio_entry *v = realloc(m->v, cap * sizeof *v);
    if (!v) {
      a->rc = STORE_ENOMEM;
      return 1;
    }
    m->v = v;
    m->cap = cap;
  }
  storeio_entry *x = &m->v[m->n];
  size_t nl = strlen(e->name) + 1;
  size_t bl = m->with_bytes ? e->len : 0;
  char *p = map_alloc(m, nl + bl);
  if (!p) {
    a->rc = STORE_ENOMEM;
    return 1;
  }
  memcpy(p, e->name, nl);
  if (bl) memcpy(p + nl, e->bytes, bl);
  x->kind = e->kind;
  x->name = p;
  x->bytes = m->with_bytes ? (unsigned char *)p + nl : NULL;
  x->len = m->with_bytes ? e->len : 0;
  memcpy(x->hash, hash, 32);
  m->n++;
  return 0;
}

int storeio_map_load(store_env *s, uint64_t rev, storeio_map *m) {
  LoadArgs a = {m, STORE_OK};
  int rc = store_map_foreach(s, rev, load_one, &a);
  return rc != STORE_OK ? rc : a.rc;
}

void storeio_map_free(storeio_map *m) {
  while (m->chunks) {
    struct storeio_chunk *c = m->chunks;
    m->chunks = c->next;
    free(c);
  }
  free(m->v);
  m->v = NULL;
  m->n = m->cap = 0;
}

/* The kernel's import order: packages before the names in them, types
** before the code and values that use them, macros and symbol macros before
** functions, methods after their generic functions (see jiti_export_all). */
static const jiti_EntryKind import_order[] = {
  JITI_ENTRY_PACKAGE,        JITI_ENTRY_STRUCTURE,    JITI_ENTRY_CLASS,    JITI_ENTRY_FOREIGN,
  JITI_ENTRY_MACRO,          JITI_ENTRY_SYMBOL_MACRO, JITI_ENTRY_TYPE,     JITI_ENTRY_SETF_EXPANDER,
  JITI_ENTRY_COMPILER_MACRO, JITI_ENTRY_FUNCTION,     JITI_ENTRY_VARIABLE, JITI_ENTRY_PLIST,
  JITI_ENTRY_DOCUMENTATION,  JITI_ENTRY_METHOD_COMBINATION, JITI_ENTRY_GENERIC, JITI_ENTRY_METHOD,
  JITI_ENTRY_DATA,           JITI_ENTRY_FILE,         JITI_ENTRY_INVARIANT};
_Static_assert(sizeof import_order / sizeof *import_order == JITI_ENTRY_KIND_COUNT,
               "every entry kind has its place in the import order");

size_t storeio_import_kinds(int which, int kinds[JITI_ENTRY_KIND_COUNT]) {
  size_t n = 0;
  for (size_t i = 0; i < sizeof import_order / sizeof import_order[0]; i++) {
    int inv = import_order[i] == JITI_ENTRY_INVARIANT;
    if ((which == STOREIO_IMPORT_NO_INVARIANTS && inv) || (which == STOREIO_IMPORT_ONLY_INVARIANTS && !inv)) continue;
    kinds[n++] = storeio_store_kind(import_order[i]);
  }
  return n;
}

static int zero_hash(const uint8_t h[32]) {
  for (int i = 0; i < 32; i++)
    if (h[i]) return 0;
  return 1;
}

void storeio_count_changes(const store_manifest *man, size_t *added, size_t *changed, size_t *removed) {
  *added = *changed = *removed = 0;
  for (size_t i = 0; i < man->nchanges; i++) {
    if (zero_hash(man->changes[i].old_hash)) ++*added;
    else if (zero_hash(man->changes[i].new_hash)) ++*removed;
    else ++*changed;
  }
}

json_t *storeio_revision_changes(store_env *s, uint64_t rev) {
  json_t *a = json_array();
  store_manifest *man = NULL;
  if (store_manifest_read(s, rev, &man) != STORE_OK) return a;
  for (size_t i = 0; i < man->nchanges; i++) {
    const store_change *c = &man->changes[i];
    int removed = zero_hash(c->new_hash);
    json_t *x = json_pack("{s:s, s:s, s:b}", "kind", store_kind_name(c->kind), "name", c->name, "removed", removed);
    if (!removed && zero_hash(c->old_hash)) json_object_set_new(x, "added", json_true());
    json_array_append_new(a, x);
  }
  store_free(man);
  return a;
}

/* ---- events */

uint64_t storeio_next_attempt(store_env *s) {
  uint64_t next = 1;
  if (store_next_attempt(s, &next) != STORE_OK || !next) next = 1;
  return next;
}

int storeio_event(store_env *s, json_t *obj, char *err, size_t errlen) {
  if (!obj) return STORE_OK;
  int rc = store_events_append_objects(s, &obj, NULL, 1, NULL);
  if (rc != STORE_OK) snprintf(err, errlen, "%s", store_errmsg(s));
  json_decref(obj);
  return rc;
}

/* ---- automatic repair's incidents */

json_t *storeio_incident_json(const store_incident *inc, int full) {
  char def[65], when[40], last[40];
  store_hash_hex(inc->definition, def);
  storeio_iso_time(inc->first_ms, when, sizeof when);
  storeio_iso_time(inc->last_ms, last, sizeof last);
  json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:I}", "id", (json_int_t)inc->id, "status",
                        store_incident_status_name(inc->status), "kind", store_incident_kind_name(inc->kind),
                        "function", inc->function, "condition",
                        inc->condition, "definition", def, "count", (json_int_t)inc->count, "first", when, "last",
                        last, "revision", (json_int_t)inc->revision);
  if (!full || !o) return o;
  json_t *ev = json_loadb(inc->evidence, inc->evidence_len, 0, NULL);
  json_object_set_new(o, "evidence", ev ? ev : json_null());
  json_t *args = inc->arguments ? json_loadb(inc->arguments, inc->arguments_len, 0, NULL) : NULL;
  json_object_set_new(o, "arguments", args ? args : json_null());
  json_t *log = json_array();
  for (size_t i = 0; i < inc->nlog; i++) {
    char t[40];
    storeio_iso_time(inc->log[i].time_ms, t, sizeof t);
    json_t *text = json_loadb(inc->log[i].text, inc->log[i].len, 0, NULL);
    json_array_append_new(log, json_pack("{s:s, s:s, s:o}", "time", t, "kind", store_note_kind_name(inc->log[i].kind),
                                         "entry", text ? text : json_null()));
  }
  json_object_set_new(o, "log", log);
  json_object_set_new(o, "log_dropped", json_integer((json_int_t)inc->dropped));
  return o;
}
