/*
** jtext.c — JSON text to and from jansson values, fast (jtext.h).
**
** Writing produces the bytes of json_dumps(v, JSON_COMPACT |
** JSON_ENCODE_ANY [| JSON_ENSURE_ASCII]) — members in their order, the same
** escapes, reals through jansson itself — straight into the caller's
** buffer.  Reading builds the same values as json_loadb(s, n, 0, ...) for
** objects, arrays, strings (every escape), integers, true, false and null
** in one pass over the text, with jansson's own constructors.  Whatever
** either is not sure to do exactly as jansson would (a value nested deeper
** than it follows, a string that is not UTF-8, a real number, any error)
** goes to jansson, which then gives the same result or the same failure.
*/
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jtext.h"

#define DEPTH_MAX 512   /* deeper values (or a cycle) go to jansson */

/* --------------------------------------------------------------- UTF-8 */

/* The one strict UTF-8 check of jiti (jtext.h): jansson's rules. */
long jtext_utf8_next(const unsigned char *s, size_t n, size_t *len) {
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

int jtext_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0, len;
  while (i < n) {
    if (s[i] < 0x80) { i++; continue; }
    if (jtext_utf8_next(s + i, n - i, &len) < 0) return 0;
    i += len;
  }
  return 1;
}

/* The two-character escapes: the letter after the backslash, the byte it
** stands for.  jansson writes all but "\/" (JSON_ESCAPE_SLASH), reads all. */
static const char ESCAPES[8][2] = {{'"', '"'}, {'\\', '\\'}, {'b', '\b'}, {'f', '\f'},
                                   {'n', '\n'}, {'r', '\r'}, {'t', '\t'}, {'/', '/'}};

/* The letter that escapes byte c in writing; 0 if none does. */
static char escape_letter(long c) {
  for (int i = 0; i < 7; i++)
    if (ESCAPES[i][1] == c) return ESCAPES[i][0];
  return 0;
}

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
  if (!k) return 0;   /* memcpy with a buffer not yet allocated */
  if (reserve(w, k)) return -1;
  memcpy(w->b + w->n, s, k);
  w->n += k;
  return 0;
}

static const char HEX[] = "0123456789ABCDEF";

static int put_u4(W *w, unsigned v) {
  char e[6] = {'\\', 'u', HEX[(v >> 12) & 15], HEX[(v >> 8) & 15], HEX[(v >> 4) & 15], HEX[v & 15]};
  return put(w, e, 6);
}

/* 1 for the bytes a string holds as they are: printable ASCII but the
** quote and the backslash. */
static const unsigned char PLAIN[256] = {
#define P16 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
  [0x20] = 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,   /* no '"' */
  [0x30] = P16, P16,
  [0x50] = 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,   /* no '\\' */
  [0x60] = P16, P16,
#undef P16
};

/* A string; one that is not UTF-8 fails, unless lossy: then each byte
** that does not belong is written as U+FFFD. */
static int put_string_as(W *w, const char *str, size_t n, int ascii, int lossy) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n && PLAIN[s[i]]) i++;
  if (i == n) {   /* the common case: nothing to escape, one copy */
    if (reserve(w, n + 2)) return -1;
    w->b[w->n] = '"';
    memcpy(w->b + w->n + 1, str, n);
    w->b[w->n + 1 + n] = '"';
    w->n += n + 2;
    return 0;
  }
  if (put(w, "\"", 1)) return -1;
  size_t run = 0;
  while (i < n) {
    unsigned c = s[i];
    if (PLAIN[c]) { i++; continue; }
    size_t len = 1;
    long cp = c;
    if (c >= 0x80) {
      if ((cp = jtext_utf8_next(s + i, n - i, &len)) < 0) {
        if (!lossy) return -1;
        len = 1;
        cp = 0xFFFD;
        if (!ascii) {
          if (put(w, str + run, i - run) || put(w, "\xEF\xBF\xBD", 3)) return -1;
          run = ++i;
          continue;
        }
      } else if (!ascii) {
        i += len;
        continue;
      }
    }
    if (put(w, str + run, i - run)) return -1;
    char letter = escape_letter(cp), e[2] = {'\\', letter};
    int rc;
    if (letter) rc = put(w, e, 2);
    else if (cp < 0x10000) rc = put_u4(w, (unsigned)cp);
    else rc = put_u4(w, 0xD800 | (unsigned)((cp - 0x10000) >> 10)) || put_u4(w, 0xDC00 | (unsigned)((cp - 0x10000) & 0x3FF));
    if (rc) return -1;
    i += len;
    run = i;
  }
  if (put(w, str + run, n - run)) return -1;
  return put(w, "\"", 1);
}

static int put_string(W *w, const char *str, size_t n, int ascii) { return put_string_as(w, str, n, ascii, 0); }

static int put_int(W *w, json_int_t v) {
  char d[24];
  size_t k = sizeof d;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do d[--k] = (char)('0' + u % 10); while ((u /= 10));
  if (v < 0) d[--k] = '-';
  return put(w, d + k, sizeof d - k);
}

static int write_value(W *w, json_t *v, int ascii, int depth) {
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
            put(w, ":", 1) || write_value(w, x, ascii, depth + 1))
          return -1;
        first = 0;
      }
      return put(w, "}", 1);
    }
    case JSON_ARRAY: {
      size_t n = json_array_size(v);
      if (put(w, "[", 1)) return -1;
      for (size_t i = 0; i < n; i++)
        if ((i && put(w, ",", 1)) || write_value(w, json_array_get(v, i), ascii, depth + 1)) return -1;
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

/* ---------------------------------------------------------------- writing */

int jtext_append(json_t *v, int ascii, char **buf, size_t *len, size_t *cap) {
  if (!v) return -1;
  W w = {*buf, *len, *cap};
  int rc = write_value(&w, v, ascii, 0);
  if (rc == 0) {
    *buf = w.b;
    *len = w.n;
    *cap = w.cap;
    return 0;
  }
  *buf = w.b;   /* kept: it may have grown */
  *cap = w.cap;
  /* not this writer's: jansson's text, or its failure */
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

/* ------------------------------------------------------ writing directly */

/* Before a key, an array element or a value at the top: the comma that
** separates it from the one before (the value after a key needs none). */
static void item(jtext_writer *w) {
  if (w->after_key) { w->after_key = 0; return; }
  if (!w->nest) return;
  uint64_t bit = (uint64_t)1 << ((w->nest - 1) & 63);
  if (w->more & bit) {
    W b = {w->buf, w->len, w->cap};
    if (put(&b, ",", 1)) w->failed = 1;
    w->buf = b.b, w->len = b.n, w->cap = b.cap;
  }
  w->more |= bit;
}

static void emit(jtext_writer *w, const char *s, size_t n) {
  W b = {w->buf, w->len, w->cap};
  if (put(&b, s, n)) w->failed = 1;
  w->buf = b.b, w->len = b.n, w->cap = b.cap;
}

static void emit_string(jtext_writer *w, const char *s, size_t n) {
  W b = {w->buf, w->len, w->cap};
  if (put_string_as(&b, s ? s : "", s ? n : 0, w->ascii, 1)) w->failed = 1;
  w->buf = b.b, w->len = b.n, w->cap = b.cap;
}

void jtext_begin(jtext_writer *w, char open) {
  item(w);
  emit(w, &open, 1);
  if (++w->nest > 64) w->failed = 1;
  w->more &= ~((uint64_t)1 << ((w->nest - 1) & 63));
}

void jtext_end(jtext_writer *w, char close) {
  emit(w, &close, 1);
  if (w->nest) w->nest--;
}

void jtext_key(jtext_writer *w, const char *key) {
  item(w);
  emit_string(w, key, strlen(key));
  emit(w, ":", 1);
  w->after_key = 1;
}

void jtext_string(jtext_writer *w, const char *s, size_t n) {
  item(w);
  emit_string(w, s, n);
}

void jtext_int(jtext_writer *w, json_int_t v) {
  item(w);
  W b = {w->buf, w->len, w->cap};
  if (put_int(&b, v)) w->failed = 1;
  w->buf = b.b, w->len = b.n, w->cap = b.cap;
}

void jtext_json(jtext_writer *w, json_t *v) {
  item(w);
  if (jtext_append(v, w->ascii, &w->buf, &w->len, &w->cap) != 0) w->failed = 1;
}

void jtext_bool(jtext_writer *w, int v) {
  item(w);
  emit(w, v ? "true" : "false", v ? 4 : 5);
}

void jtext_reset(jtext_writer *w) {
  w->len = 0;
  w->failed = 0;
  w->nest = 0;
  w->after_key = 0;
  w->more = 0;
}

/* ---------------------------------------------------------------- reading */

typedef struct R {
  const char *p, *end;
  char *tmp;            /* a string with escapes, unescaped */
  size_t cap;
} R;

static void ws(R *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')) r->p++;
}

static int hex4(const char *p, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
               : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
    if (d > 15) return -1;
    *v = *v << 4 | d;
  }
  return 0;
}

static int tmp_put(R *r, size_t at, const char *s, size_t k) {
  if (!k) return 0;
  if (at + k > r->cap) {
    size_t c = r->cap ? r->cap : 256;
    while (c < at + k) c *= 2;
    char *t = realloc(r->tmp, c);
    if (!t) return -1;
    r->tmp = t;
    r->cap = c;
  }
  memcpy(r->tmp + at, s, k);
  return 0;
}

/* A string token at r->p (the opening quote): its bytes in *s, *n (into
** the text itself when it has no escape, else into r->tmp).  -1: not one
** this reader takes (jansson decides). */
static int string(R *r, const char **s, size_t *n) {
  const char *p = ++r->p, *run = p;
  size_t k = 0;
  int esc = 0;
  while (p < r->end) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') {
      if (!esc) {
        *s = run;
        *n = (size_t)(p - run);
      } else {
        if (tmp_put(r, k, run, (size_t)(p - run))) return -1;
        *s = r->tmp;
        *n = k + (size_t)(p - run);
      }
      r->p = p + 1;
      return 0;
    }
    if (c < 0x20) return -1;
    if (c >= 0x80) {
      size_t len;
      if (jtext_utf8_next((const unsigned char *)p, (size_t)(r->end - p), &len) < 0) return -1;
      p += len;
      continue;
    }
    if (c != '\\') {
      p++;
      continue;
    }
    /* an escape: what came before it, then what it stands for */
    if (tmp_put(r, k, run, (size_t)(p - run))) return -1;
    k += (size_t)(p - run);
    esc = 1;
    if (p + 1 >= r->end) return -1;
    char one = 0;
    for (int e = 0; e < 8; e++)
      if (ESCAPES[e][0] == p[1]) one = ESCAPES[e][1];
    if (one) {
      if (tmp_put(r, k, &one, 1)) return -1;
      k++;
      p += 2;
      run = p;
      continue;
    }
    if (p[1] != 'u') return -1;
    /* \uXXXX, or a surrogate pair of them */
    unsigned cp, lo;
    if (r->end - p < 6 || hex4(p + 2, &cp)) return -1;
    p += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return -1;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (r->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
        return -1;
      p += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp == 0) return -1;   /* jansson refuses NUL without JSON_ALLOW_NUL */
    char u[4];
    size_t m;
    if (cp < 0x80) u[0] = (char)cp, m = 1;
    else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), m = 2;
    else if (cp < 0x10000)
      u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[2] = (char)(0x80 | (cp & 0x3F)),
      m = 3;
    else
      u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
      u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), m = 4;
    if (tmp_put(r, k, u, m)) return -1;
    k += m;
    run = p;
    continue;
  }
  return -1;
}

/* An integer token (no fraction, no exponent: those are jansson's). */
static json_t *number(R *r) {
  const char *p = r->p;
  int neg = p < r->end && *p == '-';
  if (neg) p++;
  if (p >= r->end || *p < '0' || *p > '9') return NULL;
  if (*p == '0' && p + 1 < r->end && p[1] >= '0' && p[1] <= '9') return NULL;
  uint64_t v = 0;
  const char *d = p;
  while (p < r->end && *p >= '0' && *p <= '9') {
    if (v > (UINT64_MAX - 9) / 10) return NULL;
    v = v * 10 + (uint64_t)(*p++ - '0');
  }
  if (p - d > 19 || (p < r->end && (*p == '.' || *p == 'e' || *p == 'E'))) return NULL;
  if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return NULL;
  r->p = p;
  return json_integer(neg ? (json_int_t)(0 - v) : (json_int_t)v);
}

static json_t *read_value(R *r, int depth);

/* An object or an array: members or elements up to close ('}' or ']'). */
static json_t *container(R *r, int depth, char close) {
  json_t *c = close == '}' ? json_object() : json_array();
  if (!c) return NULL;
  r->p++;
  ws(r);
  if (r->p < r->end && *r->p == close) {
    r->p++;
    return c;
  }
  for (;;) {
    ws(r);
    if (close == ']') {
      json_t *v = read_value(r, depth + 1);
      if (!v || json_array_append_new(c, v) != 0) break;
    } else {
      const char *k;
      size_t kn;
      if (r->p >= r->end || *r->p != '"' || string(r, &k, &kn)) break;
      /* the key's copy: r->tmp is reused by the value (no NUL: string()
      ** refuses one) */
      char small[64], *key = kn < sizeof small ? small : malloc(kn + 1);
      if (!key) break;
      memcpy(key, k, kn);
      key[kn] = '\0';
      ws(r);
      json_t *v = NULL;
      if (r->p < r->end && *r->p == ':') {
        r->p++;
        ws(r);
        v = read_value(r, depth + 1);
      }
      /* a key given twice: jansson keeps the last, or refuses it (its message) */
      int bad = !v;
      if (!bad && json_object_getn(c, key, kn)) {
        json_decref(v);
        bad = 1;
      } else if (!bad && json_object_setn_new_nocheck(c, key, kn, v) != 0) {   /* v freed */
        bad = 1;
      }
      if (key != small) free(key);
      if (bad) break;
    }
    ws(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == close) {
      r->p++;
      return c;
    }
    break;
  }
  json_decref(c);
  return NULL;
}

static int word(R *r, const char *w, size_t n) {
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n)) return 0;
  r->p += n;
  return 1;
}

static json_t *read_value(R *r, int depth) {
  if (depth > DEPTH_MAX || r->p >= r->end) return NULL;
  switch (*r->p) {
    case '{': return container(r, depth, '}');
    case '[': return container(r, depth, ']');
    case '"': {
      const char *s;
      size_t n;
      if (string(r, &s, &n)) return NULL;
      return json_stringn_nocheck(s, n);   /* UTF-8 checked above */
    }
    case 't': return word(r, "true", 4) ? json_true() : NULL;
    case 'f': return word(r, "false", 5) ? json_false() : NULL;
    case 'n': return word(r, "null", 4) ? json_null() : NULL;
    default: return number(r);
  }
}

json_t *jtext_load(const char *s, size_t n, size_t flags, json_error_t *err) {
  R r = {s, s + n, NULL, 0};
  json_t *v = NULL;
  ws(&r);
  if ((flags & ~(size_t)JSON_REJECT_DUPLICATES) == 0 && r.p < r.end && (*r.p == '{' || *r.p == '['))
    v = read_value(&r, 1);
  ws(&r);
  free(r.tmp);
  if (v && r.p == r.end) return v;
  json_decref(v);
  return json_loadb(s, n, flags, err);   /* not this reader's: jansson's value, or its error */
}

json_t *jtext_load_members(const char *s, size_t n, size_t flags, json_error_t *err) {
  char *t = malloc(n + 2);   /* the text has no room for the braces */
  if (!t) return NULL;
  t[0] = '{';
  if (n) memcpy(t + 1, s, n);
  t[n + 1] = '}';
  json_t *o = jtext_load(t, n + 2, flags, err);
  free(t);
  return o;
}
