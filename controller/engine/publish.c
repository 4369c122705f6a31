/*
** publish.c — an accepted attempt becomes a revision (engine.h): the one
** publish step of every transaction, offline or in the kernel.  The worker
** reports its changes as an outcome frame's "changes" ({kind, name, hash,
** removed, len}) and the entry bytes in the frame's blob; entries identical
** to CURRENT's, and removals of keys CURRENT does not have (made and removed
** inside the transaction), are no change — the store skips the first
** itself, the second are dropped here.
*/
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"

/* CURRENT's hash of (kind, name) as hex, or "" when it has none. */
static void current_hash(store_env *s, int kind, const char *name, char hex[65]) {
  uint8_t h[32];
  hex[0] = 0;
  if (store_lookup(s, kind, name, h) == STORE_OK) store_hash_hex(h, hex);
}

json_t *publish_brief(store_env *s, json_t *changes) {
  json_t *a = json_array();
  size_t i;
  json_t *c;
  json_array_foreach(changes, i, c) {
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *hash = json_string_value(json_object_get(c, "hash"));
    int removed = json_is_true(json_object_get(c, "removed"));
    int sk = kind ? store_kind_parse(kind) : 0;
    if (!sk || !name) continue;
    char hex[65];
    current_hash(s, sk, name, hex);
    if (removed ? !hex[0] : hash && !strcmp(hash, hex)) continue;  /* no change */
    json_t *b = json_pack("{s:s, s:s, s:b}", "kind", kind, "name", name, "removed", removed);
    if (!removed && !hex[0]) json_object_set_new(b, "added", json_true());
    json_array_append_new(a, b);
  }
  return a;
}

int publish_outcome(store_env *s, uint64_t parent, const store_rev_info *info, json_t *changes,
                    const unsigned char *blob, size_t bloblen, json_t *const *events,
                    const int64_t *times, size_t nevents, json_t *accepted, publish_Result *r) {
  memset(r, 0, sizeof *r);
  r->revision = parent;
  size_t n = json_array_size(changes), nc = 0, nr = 0, at = 0;
  store_entry *ch = calloc(n ? n : 1, sizeof *ch);
  store_key *rm = calloc(n ? n : 1, sizeof *rm);
  int rc = STORE_OK;
  if (!ch || !rm) {
    rc = STORE_ENOMEM;
    snprintf(r->error, sizeof r->error, "out of memory publishing");
  }
  for (size_t i = 0; rc == STORE_OK && i < n; i++) {
    json_t *c = json_array_get(changes, i);
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *name = json_string_value(json_object_get(c, "name"));
    json_int_t len = json_integer_value(json_object_get(c, "len"));
    int sk = kind ? store_kind_parse(kind) : 0;
    if (!sk || !name || len < 0 || (size_t)len > bloblen - at) {
      rc = STORE_EINVAL;
      snprintf(r->error, sizeof r->error, "the worker reported a malformed change");
    } else if (json_is_true(json_object_get(c, "removed"))) {
      uint8_t h[32];
      if (store_lookup(s, sk, name, h) == STORE_OK) rm[nr++] = (store_key){sk, name};
    } else {
      ch[nc++] = (store_entry){sk, name, blob + at, (size_t)len};
      at += (size_t)len;
    }
  }
  if (rc == STORE_OK) r->changes = publish_brief(s, changes);  /* against CURRENT, before it moves */
  /* The outcome is known before the publish (the store has one writer):
  ** it goes in the revision's own transaction, after the events before it. */
  json_t **all = calloc(nevents + 1, sizeof *all);
  int64_t *tm = calloc(nevents + 1, sizeof *tm);
  if (rc == STORE_OK && (!all || !tm)) {
    rc = STORE_ENOMEM;
    snprintf(r->error, sizeof r->error, "out of memory publishing");
  }
  size_t n_all = nevents;
  if (rc == STORE_OK) {
    for (size_t i = 0; i < nevents; i++) {
      all[i] = events[i];
      tm[i] = times ? times[i] : 0;
    }
    if (accepted) {
      int will = json_array_size(r->changes) > 0;
      json_object_set_new(accepted, "revision", json_integer((json_int_t)(will ? parent + 1 : parent)));
      json_object_set_new(accepted, "generation", json_integer((json_int_t)(will ? info->generation
                                                                                 : info->generation - 1)));
      all[n_all++] = accepted;
    }
    rc = store_publish_with_events(s, parent, info, ch, nc, rm, nr, all, tm, n_all, &r->revision,
                                   &r->first_event);
    if (rc != STORE_OK) snprintf(r->error, sizeof r->error, "%s", store_errmsg(s));
  }
  json_decref(accepted);
  free(all);
  free(tm);
  free(ch);
  free(rm);
  r->code = rc;
  r->changed = rc == STORE_OK && r->revision != parent;
  if (rc != STORE_OK) {
    json_decref(r->changes);
    r->changes = NULL;
    r->revision = parent;
  }
  return rc;
}
