/* test_jtext.c — jtext_load reads what json_loadb reads (the same values,
** members in the same order; the same failures, with jansson's message),
** for random values in both text forms, for every kind of malformed or
** borderline text and for random mutations of valid ones; and
** jtext_append writes exactly what json_dumps
** (JSON_COMPACT, with and without JSON_ENSURE_ASCII) writes: every escape,
** every byte below 0x80, UTF-8 of every length, surrogate pairs, integers
** at both ends, reals, member order, nesting, empty containers, appending
** to a buffer already in use; and fails where json_dumps fails (a string
** that is not UTF-8).  Random values against jansson itself.  The
** jtext_writer writes, member by member, what json_dumps writes for the
** same values (random ones, reals aside), writes U+FFFD for bytes that are
** not UTF-8, and fails past 64 levels. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../c/check.h"
#include "jtext.h"

static unsigned long long rng = 88172645463325252ULL;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng % n);
}

/* A valid UTF-8 string: ASCII (controls, quotes, backslashes, slash, DEL
** included) and 2-, 3- and 4-byte sequences. */
static json_t *rand_string(void) {
  char b[256];
  size_t n = 0, want = rnd(24);
  while (n < want && n + 4 < sizeof b) {
    unsigned k = rnd(10), cp;
    if (k < 5) cp = rnd(0x80);
    else if (k < 7) cp = 0x80 + rnd(0x800 - 0x80);
    else if (k < 9) { do cp = 0x800 + rnd(0x10000 - 0x800); while (cp >= 0xD800 && cp <= 0xDFFF); }
    else cp = 0x10000 + rnd(0x110000 - 0x10000);
    if (cp < 0x80) b[n++] = (char)cp;
    else if (cp < 0x800) { b[n++] = (char)(0xC0 | cp >> 6); b[n++] = (char)(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
      b[n++] = (char)(0xE0 | cp >> 12); b[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[n++] = (char)(0x80 | (cp & 0x3F));
    } else {
      b[n++] = (char)(0xF0 | cp >> 18); b[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
      b[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[n++] = (char)(0x80 | (cp & 0x3F));
    }
  }
  return json_stringn(b, n);
}

static json_t *rand_value(int depth) {
  static const json_int_t ints[] = {0, 1, -1, 42, 9223372036854775807LL, -9223372036854775807LL - 1, 1000000007};
  static const double reals[] = {0.0, -0.5, 1e300, 3.141592653589793, 1e-7, 100.0, -2.5e-300};
  unsigned k = rnd(depth > 4 ? 6 : 8);
  switch (k) {
    case 0: return json_integer(rnd(3) ? ints[rnd(7)] : (json_int_t)rnd(1000000) - 500000);
    case 1: return json_real(reals[rnd(7)]);
    case 2: return rnd(2) ? json_true() : json_false();
    case 3: return json_null();
    case 4: case 5: return rand_string();
    case 6: {
      json_t *a = json_array();
      for (unsigned i = rnd(5); i > 0; i--) json_array_append_new(a, rand_value(depth + 1));
      return a;
    }
    default: {
      json_t *o = json_object();
      for (unsigned i = rnd(6); i > 0; i--) {
        json_t *key = rand_string();
        json_object_setn_new(o, json_string_value(key), json_string_length(key), rand_value(depth + 1));
        json_decref(key);
      }
      return o;
    }
  }
}

/* v's text both ways, after a prefix already in the buffer. */
static int same(json_t *v, int ascii) {
  char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | (ascii ? JSON_ENSURE_ASCII : 0));
  char *buf = malloc(4);
  size_t len = 3, cap = 4;
  memcpy(buf, "ab,", 3);
  int rc = jtext_append(v, ascii, &buf, &len, &cap);
  int ok = want ? rc == 0 && len == 3 + strlen(want) && !memcmp(buf + 3, want, len - 3)
                : rc == -1 && len == 3;
  if (!ok) fprintf(stderr, "want %s\n got %.*s\n", want ? want : "(failure)", (int)len, buf);
  free(want);
  free(buf);
  return ok;
}

static void test_fixed(void) {
  json_t *o = json_pack("{s:s, s:I, s:b, s:n, s:[], s:{}, s:[i, s, {s:i}]}", "a\"b\\c/\x01\x1f\x7f\n\t\r\b\f",
                        "x\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "i", (json_int_t)-7, "t", 1, "n", "e", "o", "l", 1,
                        "\xe2\x82\xac", "k", 2);
  CHECK(o != NULL);
  CHECK(same(o, 0) && same(o, 1));
  json_decref(o);
  /* not UTF-8: both fail (jansson refuses it too) */
  json_t *bad = json_object();
  json_object_set_new_nocheck(bad, "k", json_stringn_nocheck("\xff\xfe", 2));
  CHECK(same(bad, 0) && same(bad, 1));
  json_decref(bad);
  /* deeper than the writer follows: jansson's text, the same */
  json_t *deep = json_array(), *in = deep;
  for (int i = 0; i < 600; i++) {
    json_t *next = json_array();
    json_array_append_new(in, next);
    in = next;
  }
  CHECK(same(deep, 0));
  json_decref(deep);
  /* a scalar at the top */
  json_t *s = json_string("x\x02y");
  CHECK(same(s, 1));
  json_decref(s);
}

static void test_random(void) {
  int bad = 0;
  for (int i = 0; i < 20000 && bad < 5; i++) {
    json_t *v = rand_value(0);
    if (!same(v, i & 1)) bad++;
    json_decref(v);
  }
  CHECK(bad == 0);
}

/* Write v with the jtext_writer calls; 0 when v holds what the frames
** never carry (a real, null, a key with a NUL in it), else 1. */
static int write_with(jtext_writer *w, json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: {
      jtext_begin(w, '{');
      for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it)) {
        const char *k = json_object_iter_key(it);
        if (strlen(k) != json_object_iter_key_len(it)) return 0;
        jtext_key(w, k);
        if (!write_with(w, json_object_iter_value(it))) return 0;
      }
      jtext_end(w, '}');
      return 1;
    }
    case JSON_ARRAY: {
      jtext_begin(w, '[');
      for (size_t i = 0; i < json_array_size(v); i++)
        if (!write_with(w, json_array_get(v, i))) return 0;
      jtext_end(w, ']');
      return 1;
    }
    case JSON_STRING: jtext_string(w, json_string_value(v), json_string_length(v)); return 1;
    case JSON_INTEGER: jtext_int(w, json_integer_value(v)); return 1;
    case JSON_TRUE: case JSON_FALSE: jtext_bool(w, json_is_true(v)); return 1;
    default: return 0;   /* null and reals: not the frames' */
  }
}

static void test_writer(void) {
  jtext_writer w = {0};
  int bad = 0, tried = 0;
  for (int i = 0; i < 20000 && bad < 5; i++) {
    json_t *v = json_array();   /* a container at the top, as a frame has */
    json_array_append_new(v, rand_value(0));
    jtext_reset(&w);
    if (write_with(&w, v)) {
      tried++;
      char *want = json_dumps(v, JSON_COMPACT);
      if (w.failed || w.len != strlen(want) || memcmp(w.buf, want, w.len)) {
        bad++;
        fprintf(stderr, "writer: want %s\n got %.*s\n", want, (int)w.len, w.buf);
      }
      free(want);
    }
    json_decref(v);
  }
  CHECK(bad == 0 && tried > 5000);
  /* not UTF-8: U+FFFD for each byte that does not belong, key and value */
  jtext_reset(&w);
  jtext_begin(&w, '{');
  jtext_key(&w, "k\xff");
  jtext_string(&w, "a\xc3(b\xed\xa0\x80\xe2\x82", 9);
  jtext_key(&w, "n");
  jtext_string(&w, NULL, 0);
  jtext_end(&w, '}');
  const char *want = "{\"k\xef\xbf\xbd\":\"a\xef\xbf\xbd(b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\",\"n\":\"\"}";
  CHECK(!w.failed && w.len == strlen(want) && !memcmp(w.buf, want, w.len));
  json_t *back = jtext_load(w.buf, w.len, 0, NULL);
  CHECK(back != NULL);
  json_decref(back);
  /* 64 levels, not 65 */
  jtext_reset(&w);
  for (int i = 0; i < 64; i++) jtext_begin(&w, '[');
  CHECK(!w.failed);
  jtext_begin(&w, '[');
  CHECK(w.failed);
  free(w.buf);
}

/* s[0..n) read both ways: both fail alike, or give values whose texts
** are the same. */
static int reads_alike_flags(const char *s, size_t n, size_t flags) {
  json_error_t e1, e2;
  json_t *a = jtext_load(s, n, flags, &e1), *b = json_loadb(s, n, flags, &e2);
  int ok;
  if (!a || !b) {
    ok = !a && !b && !strcmp(e1.text, e2.text) && e1.position == e2.position;
  } else {
    char *ta = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY), *tb = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    ok = ta && tb && !strcmp(ta, tb) && json_equal(a, b);
    free(ta);
    free(tb);
  }
  if (!ok) fprintf(stderr, "reads differently: %.*s\n", (int)(n > 200 ? 200 : n), s);
  json_decref(a);
  json_decref(b);
  return ok;
}

static int reads_alike(const char *s, size_t n) {
  return reads_alike_flags(s, n, 0) && reads_alike_flags(s, n, JSON_REJECT_DUPLICATES);
}

static int reads(const char *s) { return reads_alike(s, strlen(s)); }

static void test_load_fixed(void) {
  static const char *const texts[] = {
    "{}", "[]", " { } ", "\t[\r\n]\n", "[0]", "[-0]", "[01]", "[-]", "[1.5]", "[1e5]", "[-2E-3]", "[1.]",
    "[9223372036854775807]", "[9223372036854775808]", "[-9223372036854775808]", "[-9223372036854775809]",
    "[12345678901234567890123]", "[true,false,null]", "[tru]", "[nul]", "[True]",
    "{\"a\":1,\"a\":2,\"b\":3}", "{\"a\":{\"b\":1,\"b\":[]}}", "[{\"k\":1},{\"k\":2}]", "{\"a\" : [ 1 , { \"b\" : \"c\" } ] }",
    "[\"\\u00e9\\u20AC\\ud83d\\ude00\"]", "[\"\\ud83d\"]", "[\"\\ude00\"]", "[\"\\ud83dx\"]",
    "[\"\\u0000\"]", "[\"\\u12\"]", "[\"\\x\"]", "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"]",
    "[\"\x01\"]", "[\"\xff\"]", "[\"\xc3\xa9\"]", "[\"\xed\xa0\x80\"]", "[\"unterminated]",
    "{\"a\":1}x", "{\"a\":1} ", "{\"a\" 1}", "{\"a\":}", "{,}", "[1,]", "[,1]", "{\"a\":1,}", "",
    "   ", "1", "\"s\"", "null", "[1 2]", "{1:2}", "{\"\":0}",
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) bad += !reads(texts[i]);
  /* a NUL inside the text, and nesting past what jtext follows */
  bad += !reads_alike("[\"a\0b\"]", 6);
  char deep[2 * 700 + 1];
  for (int i = 0; i < 700; i++) deep[i] = '[', deep[1399 - i] = ']';
  deep[1400] = '\0';
  bad += !reads(deep);
  CHECK(bad == 0);
}

static void test_load_random(void) {
  int bad = 0;
  for (int i = 0; i < 20000 && bad < 5; i++) {
    json_t *v = json_array();
    json_array_append_new(v, rand_value(0));
    char *t = json_dumps(v, JSON_COMPACT | (i & 1 ? JSON_ENSURE_ASCII : 0) | (i & 2 ? JSON_INDENT(1) : 0));
    size_t n = strlen(t);
    if (!reads_alike(t, n)) bad++;
    /* a few bytes changed: read alike still, whatever they make of it */
    for (int m = 0; m < 3 && n; m++) {
      size_t at = rnd((unsigned)n);
      static const char pool[] = "{}[]\",:\\u0123456789.eE-+tfnl \x01\x80\xc3\xa9";
      t[at] = pool[rnd(sizeof pool - 1)];
      if (!reads_alike(t, n - rnd(2))) bad++;
    }
    free(t);
    json_decref(v);
  }
  CHECK(bad == 0);
}

int main(void) {
  test_fixed();
  test_random();
  test_writer();
  test_load_fixed();
  test_load_random();
  return CHECK_DONE();
}
