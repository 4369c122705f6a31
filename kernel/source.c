/*
** source.c — a definition's source as written (docs/world.md, "Source as
** written"): the text of the top-level form that made it, comments and
** spelling kept, and where that form lay (a file, a line, a column).
**
** An entry that has it carries it in front of its canonical encoding:
**
**   'W' 1  uleb line  uleb column  uleb n + file (n = 0: not a file)
**          uleb n + text           then the canonical encoding
**
** so it is part of the entry's bytes, and of its content hash: the same
** definition written differently is a different entry (a changed comment
** is a change a revision records), and an entry's bytes still say all of
** it.  The canonical part is what the world imports; the text is only
** shown.  Entries written before the prefix existed have none and are
** shown canonically, as before.
**
** In the world, the prefix's parts live in a record per entry key
** (world.c's `sources` map, a managed map a checkpoint restores): a vector
** #(text-blob text-bytes file-blob file-bytes line column digest).  The
** blobs are strings whose character storage holds the UTF-8 bytes as they
** came (nothing but this file reads them).  The digest is of the canonical
** encoding the text was written for, taken at the first export (NIL
** before): a variable's value changes without a definition, and its text
** is shown only while the value is still the one it describes.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_world.h"

enum { REC_TEXT, REC_TEXT_LEN, REC_FILE, REC_FILE_LEN, REC_LINE, REC_COLUMN, REC_DIGEST, REC_SIZE };

#define SOURCE_TAG 'W'
#define SOURCE_VERSION 1
/* A prefix longer than this is damage (a source is at most a few MiB). */
#define SOURCE_MAX ((uint64_t)1 << 31)

static jt_V blob(jt_State *S, const char *p, size_t n) {
  jt_V s = jt_make_string(S, n / sizeof(uint32_t) + 1, 0);
  memcpy(jt_str_(s)->chars, p, n);
  return s;
}

static const char *blob_bytes(jt_V s) { return (const char *)jt_str_(s)->chars; }

jt_V jt_source_record(jt_State *S, const jiti_EntrySource *src, jt_V digest) {
  jt_V *base = S->sp;
  JT_PUSH(S, digest);
  jt_V rec = jt_make_vector(S, REC_SIZE, JT_NIL);
  JT_PUSH(S, rec);
  jt_V text = blob(S, src->text, src->len);
  jt_vec_(base[1])->items[REC_TEXT] = text;   /* a fresh vector: no barrier */
  if (src->file) {
    jt_V file = blob(S, src->file, src->filelen);
    jt_vec_(base[1])->items[REC_FILE] = file;
  }
  jt_V *it = jt_vec_(base[1])->items;
  it[REC_TEXT_LEN] = jt_mkfix((intptr_t)src->len);
  it[REC_FILE_LEN] = jt_mkfix((intptr_t)(src->file ? src->filelen : 0));
  it[REC_LINE] = jt_mkfix(src->line);
  it[REC_COLUMN] = jt_mkfix(src->column);
  it[REC_DIGEST] = base[0];
  rec = base[1];
  S->sp = base;
  return rec;
}

void jt_source_of_record(jt_V rec, jiti_EntrySource *src) {
  jt_V *it = jt_vec_(rec)->items;
  src->text = blob_bytes(it[REC_TEXT]);
  src->len = (size_t)jt_fixval(it[REC_TEXT_LEN]);
  src->file = it[REC_FILE] != JT_NIL ? blob_bytes(it[REC_FILE]) : NULL;
  src->filelen = (size_t)jt_fixval(it[REC_FILE_LEN]);
  src->line = (long)jt_fixval(it[REC_LINE]);
  src->column = (long)jt_fixval(it[REC_COLUMN]);
}

jt_V jt_source_record_digest(jt_V rec) { return jt_vec_(rec)->items[REC_DIGEST]; }

jt_V jt_source_digest(const unsigned char *p, size_t n) {
  /* FNV-1a, cut to a fixnum: it only tells whether a value is still the
  ** one its text made, which a collision would merely keep showing */
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
  return jt_mkfix((intptr_t)(h >> 8));
}

void jt_source_prefix(const jiti_EntrySource *src, jt_Buf *out) {
  jt_buf_putc(out, SOURCE_TAG);
  jt_buf_putc(out, SOURCE_VERSION);
  jt_put_uleb(out, (uint64_t)src->line);
  jt_put_uleb(out, (uint64_t)src->column);
  jt_put_uleb(out, src->file ? src->filelen : 0);
  if (src->file) jt_buf_put(out, src->file, src->filelen);
  jt_put_uleb(out, src->len);
  jt_buf_put(out, src->text, src->len);
}

static bool span(const unsigned char *b, size_t n, size_t *pos, size_t *len) {
  uint64_t v = jt_get_uleb(b, n, pos);
  if (v == UINT64_MAX || v > SOURCE_MAX || v > n - *pos) return false;
  *len = (size_t)v;
  return true;
}

int jiti_entry_source(const unsigned char *bytes, size_t len, jiti_EntrySource *src, size_t *canonical) {
  jiti_EntrySource s = {0};
  if (canonical) *canonical = 0;
  if (src) *src = s;
  if (!bytes || len < 1 || bytes[0] != SOURCE_TAG) return 0;
  if (len < 2 || bytes[1] != SOURCE_VERSION) return -1;
  size_t pos = 2, flen, tlen;
  uint64_t line = jt_get_uleb(bytes, len, &pos), col = jt_get_uleb(bytes, len, &pos);
  if (line == UINT64_MAX || col == UINT64_MAX || line > SOURCE_MAX || col > SOURCE_MAX) return -1;
  if (!span(bytes, len, &pos, &flen)) return -1;
  s.file = flen ? (const char *)bytes + pos : NULL;
  s.filelen = flen;
  pos += flen;
  if (!span(bytes, len, &pos, &tlen)) return -1;
  s.text = (const char *)bytes + pos;
  s.len = tlen;
  pos += tlen;
  if (pos >= len) return -1;   /* no canonical encoding after it */
  s.line = (long)line;
  s.column = (long)col;
  if (src) *src = s;
  if (canonical) *canonical = pos;
  return 1;
}

bool jt_source_same_text(jt_V rec, const jiti_EntrySource *src) {
  jiti_EntrySource was;
  jt_source_of_record(rec, &was);
  if (was.len != src->len || memcmp(was.text, src->text, src->len)) return false;
  if (!was.file != !src->file) return false;
  return !was.file || (was.filelen == src->filelen && !memcmp(was.file, src->file, src->filelen));
}
