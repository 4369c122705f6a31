/* st_verify.c — store_verify: check everything recovery relies on, in one
** read transaction, and report the first problem precisely.
**
** 1. The revisions database holds exactly 1..CURRENT.
** 2. Every entry of the current map exists, decodes, carries the kind and
**    name of its key, and re-hashes to its hash (looked up in hash order,
**    st_fetch.c; nothing copied).
** 3. From CURRENT down to 1, each manifest has a good checksum and a sound
**    structure, parent = number - 1, and the entry counts agree: the map has
**    CURRENT's count, and each revision's count is its parent's plus what it
**    adds minus what it removes, down to 0 before revision 1.
** 4. With STORE_VERIFY_HISTORY: the current map is loaded into memory and
**    every delta is undone in turn from CURRENT (st_map_undo checks that
**    each matches the map), every hash a delta puts exists, and revision 1
**    undone leaves the empty map: every old revision can be rebuilt.
** 5. The records of repair (format 4): every rule, incident and traffic
**    record decodes, the open incidents are exactly those the 'incopen'
**    index names, each traffic header counts what it holds
**    (st_repair.c, st_incident.c, st_traffic.c).
** Cost: O(current entries + manifest bytes + records of repair); with the
** history, O(current entries + all changes ever) time and O(current
** entries) memory. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "st_int.h"

static int is_zero(const uint8_t h[32]) {
  for (int i = 0; i < 32; i++) if (h[i]) return 0;
  return 1;
}

/* Step 4. */
static int verify_history(store_env *s, MDB_txn *txn, uint64_t current) {
  st_map m;
  MDB_val val;
  int rc, r;
  st_map_init(&m);
  if ((r = st_map_load(s, txn, &m)) != STORE_OK) goto done;
  for (uint64_t rev = current; rev >= 1; rev--) {
    store_manifest *man;
    if ((r = st_manifest_get(s, txn, rev, 1, &man)) != STORE_OK) goto done;
    for (size_t i = 0; r == STORE_OK && i < man->nchanges; i++) {
      const store_change *c = &man->changes[i];
      MDB_val hk = { 32, (void *)c->new_hash };
      if (is_zero(c->new_hash)) continue;
      rc = mdb_get(txn, s->entries, &hk, &val);
      if (rc == MDB_NOTFOUND) {
        char hex[65];
        store_hash_hex(c->new_hash, hex);
        r = st_fail(s, STORE_ECORRUPT, "revision %llu: entry %s (%s %s) is missing",
                    (unsigned long long)rev, hex, store_kind_name(c->kind), c->name);
      } else if (rc) {
        r = st_mdb(s, rc, "reading an entry");
      }
    }
    if (r == STORE_OK) r = st_map_undo(s, &m, man);
    free(man);
    if (r != STORE_OK) goto done;
  }
  if (m.count != 0)
    r = st_fail(s, STORE_ECORRUPT, "undoing every revision leaves %zu entries; the "
                "history does not account for the current map", m.count);
done:
  st_map_free(&m);
  return r;
}

static int verify(store_env *s, MDB_txn *txn, unsigned flags) {
  uint64_t current, last = 0, count = 0, expect;
  MDB_stat ms;
  MDB_cursor *cur = NULL;
  MDB_val k, val;
  st_hasher hs;
  st_refs refs = { NULL, 0, 0 };
  int rc, r;
  if (st_hasher_init(&hs) != STORE_OK) return st_fail(s, STORE_ENOMEM, "out of memory verifying");
  if ((r = st_get_current(s, txn, &current)) != STORE_OK) goto done;
  /* 1 */
  if ((rc = mdb_stat(txn, s->revs, &ms)) != 0 ||
      (rc = mdb_cursor_open(txn, s->revs, &cur)) != 0) {
    r = st_mdb(s, rc, "reading the revisions");
    goto done;
  }
  rc = mdb_cursor_get(cur, &k, &val, MDB_LAST);
  if (rc == 0) last = k.mv_size == 8 ? st_get_u64(k.mv_data) : UINT64_MAX;
  else if (rc != MDB_NOTFOUND) { r = st_mdb(s, rc, "reading the revisions"); goto done; }
  mdb_cursor_close(cur);
  cur = NULL;
  if (ms.ms_entries != current || last != current) {
    r = st_fail(s, STORE_ECORRUPT, "CURRENT is revision %llu, but the revisions "
                "database holds %llu records up to %llu", (unsigned long long)current,
                (unsigned long long)ms.ms_entries, (unsigned long long)last);
    goto done;
  }
  /* 2: the keys first, then their entries in hash order (st_fetch.c) */
  if ((rc = mdb_stat(txn, s->names, &ms)) != 0 || (rc = mdb_cursor_open(txn, s->names, &cur)) != 0) {
    r = st_mdb(s, rc, "reading the current map");
    goto done;
  }
  if (st_refs_reserve(&refs, ms.ms_entries) != 0) {
    r = st_fail(s, STORE_ENOMEM, "out of memory verifying");
    goto done;
  }
  if ((r = st_refs_gather(s, cur, 0, 1, &refs)) != STORE_OK) goto done;
  if ((r = st_refs_fetch(s, txn, &refs, &hs)) != STORE_OK) goto done;
  count = refs.n;
  /* 3 */
  expect = count;
  for (uint64_t rev = current; rev >= 1; rev--) {
    uint8_t key[8];
    MDB_val rk = { 8, key };
    store_manifest h;
    uint64_t nadd, nrem;
    const char *why = NULL;
    st_put_u64(key, rev);
    rc = mdb_get(txn, s->revs, &rk, &val);
    if (rc == MDB_NOTFOUND) {
      r = st_fail(s, STORE_ECORRUPT, "revision %llu is missing from the chain ending "
                  "at CURRENT %llu", (unsigned long long)rev, (unsigned long long)current);
      goto done;
    }
    if (rc) { r = st_mdb(s, rc, "reading a manifest"); goto done; }
    if (st_manifest_check(val.mv_data, val.mv_size, &h, &nadd, &nrem, &why) != STORE_OK)
      r = st_fail(s, STORE_ECORRUPT, "revision %llu: %s", (unsigned long long)rev, why);
    else if (h.parent != rev - 1)
      r = st_fail(s, STORE_ECORRUPT, "revision %llu names parent %llu, expected %llu",
                  (unsigned long long)rev, (unsigned long long)h.parent,
                  (unsigned long long)(rev - 1));
    else if (h.rollback_of >= rev)
      r = st_fail(s, STORE_ECORRUPT, "revision %llu rolls back to a later revision %llu",
                  (unsigned long long)rev, (unsigned long long)h.rollback_of);
    else if (h.nentries != expect)
      r = st_fail(s, STORE_ECORRUPT, "revision %llu: its manifest counts %llu entries, "
                  "but its map has %llu", (unsigned long long)rev,
                  (unsigned long long)h.nentries, (unsigned long long)expect);
    else if (nadd > expect)
      r = st_fail(s, STORE_ECORRUPT, "revision %llu: its delta adds more entries than "
                  "its map holds", (unsigned long long)rev);
    if (r != STORE_OK) goto done;
    expect = expect - nadd + nrem;
  }
  if (expect != 0) {
    r = st_fail(s, STORE_ECORRUPT, "revision 1's delta leaves %llu entries before the "
                "first revision; the history does not account for the map",
                (unsigned long long)expect);
    goto done;
  }
  /* 4 */
  if (flags & STORE_VERIFY_HISTORY) r = verify_history(s, txn, current);
  /* 5 */
  if (r == STORE_OK) r = st_verify_repair(s, txn);
  if (r == STORE_OK) r = st_verify_incidents(s, txn);
  if (r == STORE_OK) r = st_verify_traffic(s, txn);
done:
  if (cur) mdb_cursor_close(cur);
  st_hasher_free(&hs);
  st_refs_free(&refs);
  return r;
}

int store_verify(store_env *s, unsigned flags, char *errbuf, size_t errlen) {
  MDB_txn *txn;
  int r;
  s->msg[0] = '\0';
  if ((r = st_read_begin(s, &txn)) == STORE_OK) {
    r = verify(s, txn, flags);
    mdb_txn_abort(txn);
  }
  if (errbuf && errlen) snprintf(errbuf, errlen, "%s", s->msg);
  return r;
}
