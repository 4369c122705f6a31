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
#include "jtext.h"

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

int publish_entries(json_t *changes, const unsigned char *blob, size_t bloblen, store_entry *ch, size_t *nc,
                    store_key *rm, size_t *nr, size_t *slot) {
  size_t n = json_array_size(changes), at = 0;
  *nc = *nr = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(changes, i);
    const char *kind = json_string_value(json_object_get(c, "kind"));
    const char *name = json_string_value(json_object_get(c, "name"));
    json_int_t len = json_integer_value(json_object_get(c, "len"));
    int sk = kind ? store_kind_parse(kind) : 0;
    if (!sk || !name || len < 0 || (size_t)len > bloblen - at) return -1;
    if (json_is_true(json_object_get(c, "removed"))) continue;
    slot[i] = *nc;
    ch[(*nc)++] = (store_entry){sk, name, blob + at, (size_t)len};
    at += (size_t)len;
  }
  for (size_t i = 0; i < n; i++) {  /* the store reports the removals' effects after the entries' */
    json_t *c = json_array_get(changes, i);
    if (!json_is_true(json_object_get(c, "removed"))) continue;
    slot[i] = *nc + *nr;
    rm[(*nr)++] = (store_key){store_kind_parse(json_string_value(json_object_get(c, "kind"))),
                              json_string_value(json_object_get(c, "name"))};
  }
  return 0;
}

void publish_effects_write(jtext_writer *w, json_t *changes, const size_t *slot, const uint8_t *effects) {
  size_t i;
  json_t *c;
  jtext_begin(w, '[');
  json_array_foreach(changes, i, c) {
    int e = effects[slot[i]];
    if (e == STORE_SAME) continue;
    json_t *kind = json_object_get(c, "kind"), *name = json_object_get(c, "name");
    if (!kind || !name) { w->failed = 1; break; }   /* checked by publish_entries */
    jtext_begin(w, '{');
    jtext_key(w, "kind");
    jtext_json(w, kind);
    jtext_key(w, "name");
    jtext_json(w, name);
    jtext_key(w, "removed");
    jtext_bool(w, e == STORE_REMOVED);
    if (e == STORE_ADDED) jtext_key(w, "added"), jtext_bool(w, 1);
    jtext_end(w, '}');
  }
  jtext_end(w, ']');
}

json_t *publish_effects(json_t *changes, const size_t *slot, const uint8_t *effects) {
  jtext_writer w = {0};
  publish_effects_write(&w, changes, slot, effects);
  json_t *a = w.failed ? NULL : jtext_load(w.buf, w.len, 0, NULL);
  free(w.buf);
  return a;
}

/* The accepted event names the revision the store gave the attempt and the
** generation after it: the one asked for if a revision was written, the
** one before (the worker keeps the attempt without moving it) if not. */
typedef struct Naming { json_t *accepted; uint64_t generation; } Naming;

static void name_revision(void *arg, size_t i, uint64_t rev, int changed) {
  Naming *n = arg;
  (void)i;
  if (!n->accepted) return;
  json_object_set_new(n->accepted, "revision", json_integer((json_int_t)rev));
  json_object_set_new(n->accepted, "generation", json_integer((json_int_t)(changed ? n->generation : n->generation - 1)));
}

int publish_outcome(store_env *s, uint64_t parent, const store_rev_info *info, json_t *changes,
                    const unsigned char *blob, size_t bloblen, json_t *const *events,
                    const int64_t *times, size_t nevents, json_t *accepted, uint64_t incident,
                    int tentative, publish_Result *r) {
  memset(r, 0, sizeof *r);
  r->revision = parent;
  size_t n = json_array_size(changes), nc = 0, nr = 0;
  store_entry *ch = calloc(n ? n : 1, sizeof *ch);
  store_key *rm = calloc(n ? n : 1, sizeof *rm);
  size_t *slot = calloc(n ? n : 1, sizeof *slot);
  uint8_t *effects = calloc(n ? n : 1, 1);
  store_ev *all = calloc(nevents + 1, sizeof *all);
  int rc = STORE_OK;
  if (!ch || !rm || !slot || !effects || !all) {
    rc = STORE_ENOMEM;
    snprintf(r->error, sizeof r->error, "out of memory publishing");
  }
  if (rc == STORE_OK && publish_entries(changes, blob, bloblen, ch, &nc, rm, &nr, slot) != 0) {
    rc = STORE_EINVAL;
    snprintf(r->error, sizeof r->error, "the worker reported a malformed change");
  }
  /* The outcome is known before the publish (the store has one writer):
  ** it goes in the revision's own transaction, after the events before it,
  ** completed with the revision by the store's callback. */
  size_t n_all = nevents;
  if (rc == STORE_OK) {
    for (size_t i = 0; i < nevents; i++) all[i] = (store_ev){events[i], NULL, 0, times ? times[i] : 0};
    if (accepted) all[n_all++] = (store_ev){accepted, NULL, 0, 0};
    /* a removal of a key CURRENT lacks (made and removed inside the
    ** transaction) is no change: STORE_GROUP_ABSENT_OK */
    store_rev_in in = {info, ch, nc, rm, nr, all, n_all, 0, 0, effects};
    Naming nm = {accepted, info->generation};
    unsigned flags = STORE_GROUP_ABSENT_OK | (tentative ? STORE_GROUP_TENTATIVE : 0);
    rc = incident ? store_publish_group_incidents(s, parent, &in, 1, flags, name_revision, &nm, &incident)
                  : store_publish_group(s, parent, &in, 1, STORE_GROUP_ABSENT_OK, name_revision, &nm);
    if (rc != STORE_OK) {
      snprintf(r->error, sizeof r->error, "%s", store_errmsg(s));
    } else {
      r->revision = in.rev;
      r->first_event = in.first_event;
      r->changes = publish_effects(changes, slot, effects);
    }
  }
  json_decref(accepted);
  free(all);
  free(ch);
  free(rm);
  free(slot);
  free(effects);
  r->code = rc;
  r->changed = rc == STORE_OK && r->revision != parent;
  if (rc != STORE_OK) r->revision = parent;
  return rc;
}
