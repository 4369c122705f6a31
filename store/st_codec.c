/* st_codec.c — how things are written down: byte order, kind names, UTF-8
** checks, content hashes, entry records and manifests.
**
** A manifest (the value of revisions[rev]; integers big-endian):
**   u8  'M'                 u8  manifest version (1 or 2)
**   u64 parent              u64 generation          i64 time (ms)
**   u8  kind                u64 rollback_of         u64 nentries
**   u16 n + kernel version  u16 n + summary         u16 n + response id
**   version 2 only: u16 n + foreign grant
**   u32 nchanges, then per change, sorted by (kind, name):
**       u8 kind, u16 n + name, u8 flags (1: old hash follows, 2: new hash
**       follows), [32 old hash], [32 new hash]
**   32  SHA-256 of every byte before it
** The delta is reversible (each change carries the hash it replaced), so an
** old revision's map is rebuilt by undoing deltas from CURRENT.  A revision
** made without a foreign grant is written as version 1, byte for byte what
** it was before grants existed. */
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "jtext.h"
#include "st_int.h"

void st_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
void st_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 3; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
}
void st_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 7; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
}
uint16_t st_get_u16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
uint32_t st_get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = v << 8 | p[i];
  return v;
}
uint64_t st_get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

/* ---- kinds */

static const char *const kind_names[] = {
  NULL, "function", "macro", "variable", "data", "structure", "invariant",
  "class", "generic", "method", "foreign", "package", "type", "symbol-macro",
  "setf-expander", "compiler-macro", "documentation", "plist", "method-combination", "file"
};
static const char *const rev_kind_names[] = {
  NULL, "action", "application", "rollback", "import", "initial", "repair"
};

int st_valid_kind(int kind) { return kind >= STORE_FUNCTION && kind <= STORE_FILE; }

const char *store_kind_name(int kind) {
  return st_valid_kind(kind) ? kind_names[kind] : NULL;
}
const char *store_rev_kind_name(int kind) {
  return kind >= STORE_REV_ACTION && kind <= STORE_REV_KIND_LAST ? rev_kind_names[kind] : NULL;
}
int store_kind_parse(const char *s) {
  for (int i = STORE_FUNCTION; s && i <= STORE_FILE; i++)
    if (strcmp(s, kind_names[i]) == 0) return i;
  return 0;
}
int store_rev_kind_parse(const char *s) {
  for (int i = STORE_REV_ACTION; s && i <= STORE_REV_KIND_LAST; i++)
    if (strcmp(s, rev_kind_names[i]) == 0) return i;
  return 0;
}

int st_check_key(store_env *s, int kind, const char *name, size_t *nlen) {
  size_t n;
  if (!st_valid_kind(kind))
    return st_fail(s, STORE_EINVAL, "invalid entry kind %d", kind);
  if (!name || !*name)
    return st_fail(s, STORE_EINVAL, "an entry of kind %s has no name", kind_names[kind]);
  n = strlen(name);
  if (n > STORE_NAME_MAX)
    return st_fail(s, STORE_EINVAL, "the %s name \"%.40s...\" is %zu bytes long; "
                   "the limit is %u", kind_names[kind], name, n, STORE_NAME_MAX);
  if (!jtext_utf8_valid(name, n))
    return st_fail(s, STORE_EINVAL, "the %s name \"%.40s\" is not valid UTF-8",
                   kind_names[kind], name);
  if (nlen) *nlen = n;
  return STORE_OK;
}

/* ---- hashing */

int st_hasher_init(st_hasher *h) {
  /* An explicitly fetched SHA-256: EVP_sha256() makes OpenSSL 3 look the
  ** implementation up again at every EVP_DigestInit_ex. */
  h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
  h->ctx = EVP_MD_CTX_new();
  if (h->md && h->ctx) return STORE_OK;
  st_hasher_free(h);
  return STORE_ENOMEM;
}

void st_hasher_free(st_hasher *h) {
  EVP_MD_CTX_free(h->ctx);
  EVP_MD_free(h->md);
  h->ctx = NULL;
  h->md = NULL;
}

int st_hash(st_hasher *reuse, int kind, const char *name, size_t nlen,
            const void *bytes, size_t len, uint8_t out[32]) {
  st_hasher one = { NULL, NULL };
  st_hasher *h = reuse;
  const char *k = kind_names[kind];
  unsigned olen = 0;
  int ok;
  if (!h) {
    if (!(one.ctx = EVP_MD_CTX_new())) return STORE_ENOMEM;
    h = &one;
  }
  ok = EVP_DigestInit_ex(h->ctx, h->md ? h->md : EVP_sha256(), NULL) &&
       EVP_DigestUpdate(h->ctx, k, strlen(k) + 1) &&   /* with its NUL */
       EVP_DigestUpdate(h->ctx, name, nlen) &&
       EVP_DigestUpdate(h->ctx, "", 1) &&
       (len == 0 || EVP_DigestUpdate(h->ctx, bytes, len)) &&
       EVP_DigestFinal_ex(h->ctx, out, &olen) && olen == 32;
  if (!reuse) EVP_MD_CTX_free(one.ctx);
  return ok ? STORE_OK : STORE_ENOMEM;
}

int st_sha256(st_hasher *reuse, const void *p, size_t n, uint8_t out[32]) {
  unsigned olen = 0;
  int ok = reuse ? EVP_DigestInit_ex(reuse->ctx, reuse->md, NULL) && EVP_DigestUpdate(reuse->ctx, p, n) &&
                   EVP_DigestFinal_ex(reuse->ctx, out, &olen)
                 : EVP_Digest(p, n, out, &olen, EVP_sha256(), NULL);
  return ok && olen == 32 ? STORE_OK : STORE_ENOMEM;
}

int store_digest(const void *p, size_t n, uint8_t out[32]) { return st_sha256(NULL, p, n, out); }

void store_hash_hex(const uint8_t hash[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[hash[i] >> 4];
    hex[2 * i + 1] = digits[hash[i] & 15];
  }
  hex[64] = '\0';
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int store_hash_parse(const char *hex, uint8_t hash[32]) {
  if (!hex || strlen(hex) != 64) return STORE_EINVAL;
  for (int i = 0; i < 32; i++) {
    int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return STORE_EINVAL;
    hash[i] = (uint8_t)(hi << 4 | lo);
  }
  return STORE_OK;
}

int store_entry_hash(const store_entry *e, uint8_t hash[32], char hex[65]) {
  size_t nlen;
  if (!e || !hash || !st_valid_kind(e->kind) || !e->name || !*e->name ||
      (nlen = strlen(e->name)) > STORE_NAME_MAX || !jtext_utf8_valid(e->name, nlen) ||
      (e->len && !e->bytes) || e->len > STORE_ENTRY_MAX)
    return STORE_EINVAL;
  if (st_hash(NULL, e->kind, e->name, nlen, e->bytes, e->len, hash) != STORE_OK)
    return STORE_ENOMEM;
  if (hex) store_hash_hex(hash, hex);
  return STORE_OK;
}

/* ---- keys and entry records */

size_t st_key_make(uint8_t *buf, int kind, const char *name, size_t nlen) {
  buf[0] = (uint8_t)kind;
  memcpy(buf + 1, name, nlen);
  return nlen + 1;
}

size_t st_entry_size(size_t nlen, size_t len) { return 3 + nlen + len; }

void st_entry_encode(uint8_t *out, int kind, const char *name, size_t nlen,
                     const void *bytes, size_t len) {
  out[0] = (uint8_t)kind;
  st_put_u16(out + 1, (uint16_t)nlen);
  memcpy(out + 3, name, nlen);
  if (len) memcpy(out + 3 + nlen, bytes, len);
}

int st_entry_decode(const void *v, size_t vlen, int *kind, const char **name,
                    size_t *nlen, const void **bytes, size_t *len) {
  const uint8_t *p = v;
  size_t n;
  if (vlen < 3 || !st_valid_kind(p[0])) return -1;
  n = st_get_u16(p + 1);
  if (n == 0 || n > STORE_NAME_MAX || 3 + n > vlen) return -1;
  *kind = p[0];
  *name = (const char *)p + 3;
  *nlen = n;
  *bytes = p + 3 + n;
  *len = vlen - 3 - n;
  return 0;
}

/* ---- manifests */

static size_t str_len(const char *s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  return n > max ? max : n;
}

/* Cut a summary at a character boundary at most max bytes in. */
static size_t utf8_cut(const char *s, size_t max) {
  size_t n = str_len(s, max);
  if (s && strlen(s) > max)
    while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80) n--;
  return n;
}

size_t st_manifest_size(const st_manifest_in *m) {
  size_t n = 2 + 8 * 3 + 1 + 8 * 2 + 6 + 4 + 32;
  n += str_len(m->kernel_version, STORE_VERSION_MAX) +
       utf8_cut(m->summary, STORE_SUMMARY_MAX) +
       str_len(m->response_id, STORE_RESPONSE_MAX);
  if (str_len(m->foreign, STORE_FOREIGN_MAX)) n += 2 + str_len(m->foreign, STORE_FOREIGN_MAX);
  for (size_t i = 0; i < m->nchanges; i++) {
    const st_change *c = &m->changes[i];
    n += 1 + 2 + c->nlen + 1 + (c->has_old ? 32 : 0) + (c->has_new ? 32 : 0);
  }
  return n;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t n) {
  st_put_u16(p, (uint16_t)n);
  if (n) memcpy(p + 2, s, n);
  return p + 2 + n;
}

void st_manifest_encode(uint8_t *out, const st_manifest_in *m, st_hasher *hs) {
  uint8_t *p = out;
  size_t nforeign = str_len(m->foreign, STORE_FOREIGN_MAX);
  *p++ = 'M';
  *p++ = nforeign ? 2 : 1;
  st_put_u64(p, m->parent); p += 8;
  st_put_u64(p, m->generation); p += 8;
  st_put_u64(p, (uint64_t)m->time_ms); p += 8;
  *p++ = (uint8_t)m->kind;
  st_put_u64(p, m->rollback_of); p += 8;
  st_put_u64(p, m->nentries); p += 8;
  p = put_str(p, m->kernel_version, str_len(m->kernel_version, STORE_VERSION_MAX));
  p = put_str(p, m->summary, utf8_cut(m->summary, STORE_SUMMARY_MAX));
  p = put_str(p, m->response_id, str_len(m->response_id, STORE_RESPONSE_MAX));
  if (nforeign) p = put_str(p, m->foreign, nforeign);
  st_put_u32(p, (uint32_t)m->nchanges); p += 4;
  for (size_t i = 0; i < m->nchanges; i++) {
    const st_change *c = &m->changes[i];
    *p++ = (uint8_t)c->kind;
    p = put_str(p, c->name, c->nlen);
    *p++ = (uint8_t)((c->has_old ? 1 : 0) | (c->has_new ? 2 : 0));
    if (c->has_old) { memcpy(p, c->old_hash, 32); p += 32; }
    if (c->has_new) { memcpy(p, c->new_hash, 32); p += 32; }
  }
  st_sha256(hs, out, (size_t)(p - out), p);
}

/* A bounds-checked reader. */
typedef struct rd { const uint8_t *p, *end; int bad; } rd;

static const uint8_t *take(rd *r, size_t n) {
  const uint8_t *q = r->p;
  if (r->bad || (size_t)(r->end - r->p) < n) { r->bad = 1; return NULL; }
  r->p += n;
  return q;
}
static unsigned take8(rd *r) { const uint8_t *q = take(r, 1); return q ? *q : 0; }
static const uint8_t *take_str(rd *r, size_t *n) {
  const uint8_t *q = take(r, 2);
  *n = q ? st_get_u16(q) : 0;
  return take(r, *n);
}

/* Check a manifest's checksum and structure without allocating; fill the
** header fields of *m (not its strings or changes) and count the changes
** that add (*nadd) and remove (*nrem) keys.  *after points at the first
** change.  Returns STORE_OK or STORE_ECORRUPT with *why. */
static int scan(const void *v, size_t vlen, store_manifest *m, uint64_t *nadd,
                uint64_t *nrem, rd *strs, rd *after, size_t *strbytes, int *v2, const char **why) {
  rd r = { v, (const uint8_t *)v + vlen, 0 };
  uint8_t sum[32];
  const uint8_t *h;
  size_t n;
  if (vlen < 32 + 2) { *why = "the manifest is too short"; return STORE_ECORRUPT; }
  if (st_sha256(NULL, v, vlen - 32, sum) != STORE_OK) { *why = "hashing failed"; return STORE_ECORRUPT; }
  if (memcmp(sum, (const uint8_t *)v + vlen - 32, 32) != 0) {
    *why = "the manifest's checksum does not match its contents";
    return STORE_ECORRUPT;
  }
  r.end -= 32;
  unsigned version = take8(&r) == 'M' ? take8(&r) : 0;
  if (version != 1 && version != 2) {
    *why = "the manifest has an unknown encoding";
    return STORE_ECORRUPT;
  }
  *v2 = version == 2;
  if ((h = take(&r, 8 * 3 + 1 + 8 * 2)) != NULL) {
    m->parent = st_get_u64(h);
    m->generation = st_get_u64(h + 8);
    m->time_ms = (int64_t)st_get_u64(h + 16);
    m->kind = h[24];
    m->rollback_of = st_get_u64(h + 25);
    m->nentries = st_get_u64(h + 33);
  }
  *strs = r;
  take_str(&r, &n);
  take_str(&r, &n);
  take_str(&r, &n);
  if (*v2) take_str(&r, &n);
  { const uint8_t *q = take(&r, 4); m->nchanges = q ? st_get_u32(q) : 0; }
  *after = r;
  *nadd = *nrem = 0;
  *strbytes = 0;
  for (size_t i = 0; i < m->nchanges && !r.bad; i++) {
    unsigned kind = take8(&r), flags;
    take_str(&r, &n);
    flags = take8(&r);
    if (!st_valid_kind((int)kind) || n == 0 || flags == 0 || flags > 3) r.bad = 1;
    take(&r, (flags & 1 ? 32 : 0) + (flags & 2 ? 32 : 0));
    *nadd += flags == 2;
    *nrem += flags == 1;
    *strbytes += n + 1;
  }
  if (r.bad || r.p != r.end) { *why = "the manifest is malformed"; return STORE_ECORRUPT; }
  if (!store_rev_kind_name(m->kind)) {
    *why = "the manifest has an invalid revision kind";
    return STORE_ECORRUPT;
  }
  return STORE_OK;
}

int st_manifest_check(const void *v, size_t vlen, store_manifest *hdr,
                      uint64_t *nadd, uint64_t *nrem, const char **why) {
  rd strs, after;
  size_t strbytes;
  int v2;
  memset(hdr, 0, sizeof *hdr);
  return scan(v, vlen, hdr, nadd, nrem, &strs, &after, &strbytes, &v2, why);
}

int st_manifest_decode(const void *v, size_t vlen, uint64_t rev, int changes,
                       store_manifest **out, const char **why) {
  store_manifest hdr, *m;
  rd r, strs;
  const uint8_t *kv, *su, *ri, *fo = NULL;
  size_t kvn, sun, rin, fon = 0, nch, strbytes;
  int v2;
  uint64_t nadd, nrem;
  char *sp;
  int rc;
  *out = NULL;
  memset(&hdr, 0, sizeof hdr);
  if ((rc = scan(v, vlen, &hdr, &nadd, &nrem, &strs, &r, &strbytes, &v2, why)) != STORE_OK)
    return rc;
  nch = changes ? hdr.nchanges : 0;
  if (!changes) strbytes = 0;
  kv = take_str(&strs, &kvn);
  su = take_str(&strs, &sun);
  ri = take_str(&strs, &rin);
  if (v2) fo = take_str(&strs, &fon);
  if (nch > (SIZE_MAX - sizeof *m - strbytes) / (sizeof(store_change) + 1))
    return STORE_ENOMEM;
  m = malloc(sizeof *m + nch * sizeof(store_change) + strbytes + kvn + sun + rin + fon + 4);
  if (!m) return STORE_ENOMEM;
  *m = hdr;
  m->rev = rev;
  m->nchanges = hdr.nchanges;
  m->changes = changes ? (store_change *)(m + 1) : NULL;
  sp = (char *)((store_change *)(m + 1) + nch);
  memcpy(sp, kv, kvn); sp[kvn] = '\0'; m->kernel_version = sp; sp += kvn + 1;
  memcpy(sp, su, sun); sp[sun] = '\0'; m->summary = sp; sp += sun + 1;
  memcpy(sp, ri, rin); sp[rin] = '\0'; m->response_id = sp; sp += rin + 1;
  if (fon) memcpy(sp, fo, fon);
  sp[fon] = '\0'; m->foreign = sp; sp += fon + 1;
  for (size_t i = 0; i < nch; i++) {
    store_change *c = &m->changes[i];
    size_t n;
    const uint8_t *name;
    unsigned flags;
    c->kind = (int)take8(&r);
    name = take_str(&r, &n);
    memcpy(sp, name, n); sp[n] = '\0'; c->name = sp; sp += n + 1;
    flags = take8(&r);
    memset(c->old_hash, 0, 32);
    memset(c->new_hash, 0, 32);
    if (flags & 1) memcpy(c->old_hash, take(&r, 32), 32);
    if (flags & 2) memcpy(c->new_hash, take(&r, 32), 32);
  }
  *out = m;
  return STORE_OK;
}
