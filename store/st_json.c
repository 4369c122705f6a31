/*
** st_json.c — compact JSON text of a jansson value (store_json_append).
**
** Every event the store writes is rendered to JSON text, and the kernel
** renders every reply; jansson's json_dumps spends about 2 µs on an object
** of a few members (a callback per token, a growing buffer, printf for each
** integer), several times per application call.  This writer produces the
** same bytes as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY [|
** JSON_ENSURE_ASCII]) — members in their order, the same escapes, reals
** through jansson itself — straight into the caller's buffer.  Whatever it
** is not sure to write exactly as jansson would (a value nested deeper than
** it follows, a string that is not UTF-8) makes it fail, and the caller
** falls back to json_dumps, which reports the same failure if it is one.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "store.h"

#define DEPTH_MAX 512   /* deeper values (or a cycle) go to jansson */

typedef struct W { char *b; size_t n, cap; } W;

static int reserve(W *w, size_t k) {
  if (w->n + k <= w->cap) return 0;
  size_t c = w->cap ? w->cap : 256;
  while (c < w->n + k) c *= 2;
  char *p = realloc(w->b, c);
  if (!p) return -1;
  w->b = p;
  w->cap = c;
  return 0;
}

static int put(W *w, const char *s, size_t k) {
  if (reserve(w, k)) return -1;
  memcpy(w->b + w->n, s, k);
  w->n += k;
  return 0;
}

/* The code point of the UTF-8 sequence at s (n bytes left) and its length
** in *len; -1 when it is not well-formed UTF-8 (jansson's rules: no
** overlong forms, no surrogates, nothing past U+10FFFF). */
static long utf8_next(const unsigned char *s, size_t n, size_t *len) {
  unsigned c = s[0];
  size_t k;
  long cp;
  if (c < 0x80) { *len = 1; return c; }
  if (c >= 0xC2 && c <= 0xDF) k = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) k = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) k = 4, cp = c & 0x07;
  else return -1;
  if (k > n) return -1;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return -1;
  *len = k;
  return cp;
}

static const char HEX[] = "0123456789ABCDEF";

static int put_u4(W *w, unsigned v) {
  char e[6] = {'\\', 'u', HEX[(v >> 12) & 15], HEX[(v >> 8) & 15], HEX[(v >> 4) & 15], HEX[v & 15]};
  return put(w, e, 6);
}

static int put_string(W *w, const char *str, size_t n, int ascii) {
  const unsigned char *s = (const unsigned char *)str;
  if (put(w, "\"", 1)) return -1;
  size_t run = 0, i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) { i++; continue; }
    size_t len = 1;
    long cp = c;
    if (c >= 0x80) {
      if ((cp = utf8_next(s + i, n - i, &len)) < 0) return -1;
      if (!ascii) { i += len; continue; }
    }
    if (put(w, str + run, i - run)) return -1;
    const char *e = NULL;
    switch (cp) {
      case '\\': e = "\\\\"; break;
      case '"': e = "\\\""; break;
      case '\b': e = "\\b"; break;
      case '\f': e = "\\f"; break;
      case '\n': e = "\\n"; break;
      case '\r': e = "\\r"; break;
      case '\t': e = "\\t"; break;
      default: break;
    }
    int rc;
    if (e) rc = put(w, e, 2);
    else if (cp < 0x10000) rc = put_u4(w, (unsigned)cp);
    else rc = put_u4(w, 0xD800 | (unsigned)((cp - 0x10000) >> 10)) || put_u4(w, 0xDC00 | (unsigned)((cp - 0x10000) & 0x3FF));
    if (rc) return -1;
    i += len;
    run = i;
  }
  if (put(w, str + run, n - run)) return -1;
  return put(w, "\"", 1);
}

static int put_int(W *w, json_int_t v) {
  char d[24];
  size_t k = sizeof d;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do d[--k] = (char)('0' + u % 10); while ((u /= 10));
  if (v < 0) d[--k] = '-';
  return put(w, d + k, sizeof d - k);
}

static int value(W *w, json_t *v, int ascii, int depth) {
  if (depth > DEPTH_MAX) return -1;
  switch (json_typeof(v)) {
    case JSON_OBJECT: {
      const char *key;
      json_t *x;
      void *it;
      int first = 1;
      if (put(w, "{", 1)) return -1;
      for (it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        key = json_object_iter_key(it);
        x = json_object_iter_value(it);
        if ((!first && put(w, ",", 1)) || put_string(w, key, json_object_iter_key_len(it), ascii) ||
            put(w, ":", 1) || value(w, x, ascii, depth + 1))
          return -1;
        first = 0;
      }
      return put(w, "}", 1);
    }
    case JSON_ARRAY: {
      size_t n = json_array_size(v);
      if (put(w, "[", 1)) return -1;
      for (size_t i = 0; i < n; i++)
        if ((i && put(w, ",", 1)) || value(w, json_array_get(v, i), ascii, depth + 1)) return -1;
      return put(w, "]", 1);
    }
    case JSON_STRING: return put_string(w, json_string_value(v), json_string_length(v), ascii);
    case JSON_INTEGER: return put_int(w, json_integer_value(v));
    case JSON_REAL: {   /* jansson's own digits */
      char d[64];
      size_t k = json_dumpb(v, d, sizeof d, JSON_COMPACT | JSON_ENCODE_ANY);
      return k && k <= sizeof d ? put(w, d, k) : -1;
    }
    case JSON_TRUE: return put(w, "true", 4);
    case JSON_FALSE: return put(w, "false", 5);
    case JSON_NULL: return put(w, "null", 4);
  }
  return -1;
}

int store_json_append(struct json_t *v, int ascii, char **buf, size_t *len, size_t *cap) {
  if (!v) return -1;
  W w = {*buf, *len, *cap};
  int rc = value(&w, v, ascii, 0);
  if (rc == 0) {
    *buf = w.b;
    *len = w.n;
    *cap = w.cap;
    return 0;
  }
  *buf = w.b;   /* kept: it may have grown */
  *cap = w.cap;
  /* not ours to write: jansson's text, or its failure */
  char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | (ascii ? JSON_ENSURE_ASCII : 0));
  if (!t) return -1;
  w.n = *len;
  rc = put(&w, t, strlen(t));
  free(t);
  *buf = w.b;
  *cap = w.cap;
  if (rc == 0) *len = w.n;
  return rc;
}
