/*
** st_migrate.c — bringing a store of an older format version up to date.
**
** store_open reads the format version first.  A store of the current
** version opens as is; one of an older version that a migration below
** knows is upgraded when it is opened for writing (one write transaction:
** the migration's changes and the new version number, all or nothing), and
** is read as it is by a read-only handle (an older format is always one
** this program can read).  Any other version is refused.
**
** Migrations, by the version they start from:
**
**   1 -> 2  Entry names and stored symbols became package-qualified, and the
**           entry kind `package` appeared.  A name without a package prefix
**           is the symbol of that name in COMMON-LISP-USER, which is what
**           every name of a format-1 store denotes, and format 1 has no
**           package entries: nothing is rewritten, only the version moves.
**   2 -> 3  The store keeps indices of its events beside them (st_index.c):
**           the attempts without an outcome, the largest attempt number,
**           idempotency keys, counters.  They are built from the events
**           once, here (O(events)); an outcome event of an older kernel
**           carried its request's key itself in "idempotency" (where the
**           store's redaction may have replaced it: such a key is not
**           kept), and is kept under that key's digest.
**   3 -> 4  The records of automatic repair: the databases repair (the
**           policy), incidents and incopen (incidents and the open ones
**           by their deduplication key), traffic (the sample of
**           successful calls).  They start empty: only the databases are
**           created and the version moves.
*/
#include <string.h>
#include "st_int.h"

static int put_format(store_env *s, MDB_txn *txn, uint32_t format)
{
  uint8_t buf[4];
  st_put_u32(buf, format);
  MDB_val k = {6, "format"}, v = {4, buf};
  int rc = mdb_put(txn, s->meta, &k, &v, 0);
  return rc ? st_mdb(s, rc, "writing the format version") : STORE_OK;
}

static int migrate_txn(store_env *s, MDB_txn *txn, void *arg)
{
  uint32_t from = *(const uint32_t *)arg;
  int r = STORE_OK;
  /* each step from `from` up; 1 -> 2 changes no record */
  if (from < 3 && (r = st_open_index_dbs(s, txn, 1)) == STORE_OK) r = st_index_rebuild(s, txn);
  if (r == STORE_OK && from < 4) r = st_open_repair_dbs(s, txn, 1);
  return r == STORE_OK ? put_format(s, txn, STORE_FORMAT_VERSION) : r;
}

int st_format_check(store_env *s, uint32_t format)
{
  if (format == STORE_FORMAT_VERSION) return STORE_OK;
  if (format < ST_FORMAT_OLDEST || format > STORE_FORMAT_VERSION)
    return st_fail(s, STORE_EVERSION, "the store has format version %u; this program reads "
                   "format versions %u to %u", format, ST_FORMAT_OLDEST, STORE_FORMAT_VERSION);
  if (s->flags & STORE_RDONLY) return STORE_OK;
  return st_write(s, migrate_txn, &format, 0);
}
