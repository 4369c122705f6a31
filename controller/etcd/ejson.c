/*
** ejson.c — etcd's gateway JSON (etcd_int.h): 64-bit integers as decimal
** strings (a lease id does not fit a double), bytes as base64 through
** libcrypto's EVP codec, key-values and ranges.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "etcd_int.h"

int ejson_i64(json_t *o, const char *name, int64_t *v) {
  json_t *x = json_object_get(o, name);
  *v = 0;
  if (!x || json_is_null(x)) return 0;
  if (json_is_integer(x)) {
    *v = json_integer_value(x);
    return 0;
  }
  if (!json_is_string(x)) return -1;
  const char *s = json_string_value(x);
  char *endp;
  errno = 0;
  /* member ids are unsigned 64-bit: kept as their bits */
  long long n = *s == '-' ? strtoll(s, &endp, 10) : (long long)strtoull(s, &endp, 10);
  if (errno || endp == s || *endp) return -1;
  *v = n;
  return 0;
}

json_t *ejson_i64_new(int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return json_string(buf);
}

json_t *ejson_bytes(const void *p, size_t n) {
  if (n > (size_t)INT32_MAX / 2) return NULL;
  size_t cap = 4 * ((n + 2) / 3) + 1;
  unsigned char *b = malloc(cap);
  if (!b) return NULL;
  int len = n ? EVP_EncodeBlock(b, p, (int)n) : 0;
  json_t *s = json_stringn((const char *)b, (size_t)len);
  free(b);
  return s;
}

int ejson_unbytes(json_t *s, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  const char *t = "";
  size_t n = 0;
  if (s && !json_is_null(s)) {
    if (!json_is_string(s)) return -1;
    t = json_string_value(s);
    n = json_string_length(s);
  }
  if (n % 4) return -1;
  char *b = malloc(n / 4 * 3 + 1);
  if (!b) return -1;
  int got = n ? EVP_DecodeBlock((unsigned char *)b, (const unsigned char *)t, (int)n) : 0;
  if (got < 0) {
    free(b);
    return -1;
  }
  /* EVP_DecodeBlock counts the padding's bytes as zeros */
  if (n && t[n - 1] == '=') got--;
  if (n > 1 && t[n - 2] == '=') got--;
  b[got] = 0;
  *out = b;
  *len = (size_t)got;
  return 0;
}

int ejson_set(json_t *o, const char *name, json_t *v) {
  if (!v) return -1;
  return json_object_set_new(o, name, v) ? -1 : 0;
}

void ejson_kv_free(etcd_KV *kv) {
  free(kv->key);
  free(kv->value);
  memset(kv, 0, sizeof *kv);
}

int ejson_kv(json_t *kv, etcd_KV *out) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(kv)) return -1;
  if (ejson_unbytes(json_object_get(kv, "key"), &out->key, &out->key_len) ||
      ejson_unbytes(json_object_get(kv, "value"), &out->value, &out->value_len) ||
      ejson_i64(kv, "create_revision", &out->create_revision) || ejson_i64(kv, "mod_revision", &out->mod_revision) ||
      ejson_i64(kv, "version", &out->version) || ejson_i64(kv, "lease", &out->lease)) {
    ejson_kv_free(out);
    return -1;
  }
  return 0;
}

void etcd_range_free(etcd_Range *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) ejson_kv_free(&r->kvs[i]);
  free(r->kvs);
  memset(r, 0, sizeof *r);
}

int ejson_range(json_t *o, etcd_Range *out) {
  memset(out, 0, sizeof *out);
  json_t *kvs = json_object_get(o, "kvs");
  if (ejson_i64(json_object_get(o, "header"), "revision", &out->revision) || ejson_i64(o, "count", &out->count))
    return -1;
  json_t *more = json_object_get(o, "more");
  out->more = json_is_true(more);
  if (!kvs || json_is_null(kvs)) return 0;
  if (!json_is_array(kvs)) return -1;
  size_t n = json_array_size(kvs);
  if (n) {
    out->kvs = calloc(n, sizeof *out->kvs);
    if (!out->kvs) return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (ejson_kv(json_array_get(kvs, i), &out->kvs[i])) {
      etcd_range_free(out);
      return -1;
    }
    out->n = i + 1;
  }
  return 0;
}
