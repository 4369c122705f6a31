/* test_store_json.c — store_json_append writes exactly what json_dumps
** (JSON_COMPACT, with and without JSON_ENSURE_ASCII) writes: every escape,
** every byte below 0x80, UTF-8 of every length, surrogate pairs, integers
** at both ends, reals, member order, nesting, empty containers, appending
** to a buffer already in use; and fails where json_dumps fails (a string
** that is not UTF-8).  Random values against jansson itself. */
#include "st_test.h"
#include <jansson.h>

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
  int rc = store_json_append(v, ascii, &buf, &len, &cap);
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

int main(void) {
  test_fixed();
  test_random();
  return CHECK_DONE();
}
