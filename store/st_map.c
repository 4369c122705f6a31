/* st_map.c — an in-memory map from an entry key (kind byte + name) to the
** entry's hash: open addressing with linear probing and tombstones.  Used to
** rebuild old revisions, to compute a rollback's delta and by verify. */
#include <stdlib.h>
#include <string.h>
#include "st_int.h"

static uint64_t hash_key(const uint8_t *k, size_t n) {
  uint64_t h = 1469598103934665603ull;            /* FNV-1a */
  for (size_t i = 0; i < n; i++) { h ^= k[i]; h *= 1099511628211ull; }
  /* FNV's low bits are weak and the table indexes by them: mix (the
  ** finaliser of MurmurHash3). */
  h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
  return h;
}

void st_map_init(st_map *m) { memset(m, 0, sizeof *m); }

void st_map_free(st_map *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->slots[i].key);
  free(m->slots);
  st_map_init(m);
}

/* The slot holding key, or (insert) the first reusable slot for it. */
static st_slot *find(const st_map *m, const uint8_t *key, size_t klen, int insert) {
  st_slot *reuse = NULL;
  size_t i;
  if (!m->cap) return NULL;
  i = hash_key(key, klen) & (m->cap - 1);
  for (;;) {
    st_slot *sl = &m->slots[i];
    if (!sl->key) {
      if (!sl->dead) return insert ? (reuse ? reuse : sl) : NULL;
      if (!reuse) reuse = sl;
    } else if (sl->klen == klen && memcmp(sl->key, key, klen) == 0) {
      return sl;
    }
    i = (i + 1) & (m->cap - 1);
  }
}

static int rehash(st_map *m, size_t cap) {
  st_slot *old = m->slots;
  size_t oldcap = m->cap;
  if (!(m->slots = calloc(cap, sizeof *m->slots))) { m->slots = old; return -1; }
  m->cap = cap;
  m->used = m->count;
  for (size_t i = 0; i < oldcap; i++) {
    if (!old[i].key) continue;
    st_slot *sl = find(m, old[i].key, old[i].klen, 1);
    *sl = old[i];
  }
  free(old);
  return 0;
}

int st_map_reserve(st_map *m, size_t n) {
  size_t cap = 64;
  while (n * 2 >= cap) cap *= 2;
  return cap > m->cap ? rehash(m, cap) : 0;
}

int st_map_set(st_map *m, const uint8_t *key, size_t klen, const uint8_t hash[32]) {
  st_slot *sl;
  if ((m->used + 1) * 4 >= m->cap * 3) {
    size_t cap = m->cap ? m->cap : 64;
    while ((m->count + 1) * 2 >= cap) cap *= 2;
    if (rehash(m, cap) != 0) return -1;
  }
  sl = find(m, key, klen, 1);
  if (!sl->key) {
    uint8_t *k = malloc(klen);
    if (!k) return -1;
    memcpy(k, key, klen);
    if (!sl->dead) m->used++;
    sl->key = k;
    sl->klen = klen;
    sl->dead = 0;
    m->count++;
  }
  memcpy(sl->hash, hash, 32);
  return 0;
}

const uint8_t *st_map_get(const st_map *m, const uint8_t *key, size_t klen) {
  st_slot *sl = find(m, key, klen, 0);
  return sl ? sl->hash : NULL;
}

int st_map_del(st_map *m, const uint8_t *key, size_t klen) {
  st_slot *sl = find(m, key, klen, 0);
  if (!sl) return 0;
  free(sl->key);
  sl->key = NULL;
  sl->dead = 1;
  m->count--;
  return 1;
}

static int cmp_slots(const void *a, const void *b) {
  const st_slot *x = *(st_slot *const *)a, *y = *(st_slot *const *)b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = memcmp(x->key, y->key, n);
  return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

int st_map_sorted(const st_map *m, st_slot ***out, size_t *n) {
  st_slot **v;
  size_t j = 0;
  *out = NULL;
  *n = 0;
  if (!m->count) return 0;
  if (!(v = malloc(m->count * sizeof *v))) return -1;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key) v[j++] = &m->slots[i];
  qsort(v, j, sizeof *v, cmp_slots);
  *out = v;
  *n = j;
  return 0;
}

int st_map_load(store_env *s, MDB_txn *txn, st_map *m) {
  MDB_cursor *cur;
  MDB_val k, v;
  int rc, r = STORE_OK;
  MDB_stat ms;
  if ((rc = mdb_stat(txn, s->names, &ms)) != 0 || (rc = mdb_cursor_open(txn, s->names, &cur)) != 0)
    return st_mdb(s, rc, "reading the current map");
  if (st_map_reserve(m, m->count + ms.ms_entries) != 0) {
    mdb_cursor_close(cur);
    return st_fail(s, STORE_ENOMEM, "out of memory loading the current map");
  }
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size < 2 || v.mv_size != 32 || !st_valid_kind(((uint8_t *)k.mv_data)[0])) {
      r = st_fail(s, STORE_ECORRUPT, "the current map holds a malformed record");
      break;
    }
    if (st_map_set(m, k.mv_data, k.mv_size, v.mv_data) != 0) {
      r = st_fail(s, STORE_ENOMEM, "out of memory loading the current map");
      break;
    }
  }
  if (r == STORE_OK && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading the current map");
  mdb_cursor_close(cur);
  return r;
}

static int is_zero(const uint8_t h[32]) {
  for (int i = 0; i < 32; i++) if (h[i]) return 0;
  return 1;
}

int st_map_undo(store_env *s, st_map *m, const store_manifest *man) {
  uint8_t key[1 + STORE_NAME_MAX];
  if (m->count != man->nentries)
    return st_fail(s, STORE_ECORRUPT, "revision %llu: its manifest counts %llu "
                   "entries, but its map has %zu", (unsigned long long)man->rev,
                   (unsigned long long)man->nentries, m->count);
  for (size_t i = 0; i < man->nchanges; i++) {
    const store_change *c = &man->changes[i];
    size_t klen = st_key_make(key, c->kind, c->name, strlen(c->name));
    const uint8_t *have = st_map_get(m, key, klen);
    int added = is_zero(c->old_hash), removed = is_zero(c->new_hash);
    if (removed ? have != NULL : (!have || memcmp(have, c->new_hash, 32) != 0))
      return st_fail(s, STORE_ECORRUPT, "revision %llu: its delta for %s %s does "
                     "not match the map", (unsigned long long)man->rev,
                     store_kind_name(c->kind), c->name);
    if (added) st_map_del(m, key, klen);
    else if (st_map_set(m, key, klen, c->old_hash) != 0)
      return st_fail(s, STORE_ENOMEM, "out of memory rebuilding revision %llu",
                     (unsigned long long)man->rev);
  }
  return STORE_OK;
}
