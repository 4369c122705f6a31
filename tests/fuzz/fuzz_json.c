/*
** fuzz_json — libFuzzer harness for the fast JSON text paths (jtext.h),
** differential: any bytes read by jtext_load and by json_loadb must give
** the same value or the same error (text and position), with and without
** JSON_REJECT_DUPLICATES; every value read is written by jtext_append and
** by json_dumps, which must give the same bytes (ASCII-only and not).
** A difference aborts, so the finding is kept.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jtext.h"

static void writes_alike(json_t *v, int ascii) {
  char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | (ascii ? JSON_ENSURE_ASCII : 0));
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int rc = jtext_append(v, ascii, &buf, &len, &cap);
  int ok = want ? rc == 0 && len == strlen(want) && !memcmp(buf, want, len) : rc == -1 && len == 0;
  if (!ok) {
    fprintf(stderr, "fuzz_json: written differently\n want %s\n got %.*s\n", want ? want : "(failure)", (int)len,
            buf ? buf : "");
    abort();
  }
  free(want);
  free(buf);
}

static void reads_alike(const char *s, size_t n, size_t flags) {
  json_error_t e1, e2;
  json_t *a = jtext_load(s, n, flags, &e1), *b = json_loadb(s, n, flags, &e2);
  if (!a || !b) {
    if (a || b || strcmp(e1.text, e2.text) || e1.position != e2.position) {
      fprintf(stderr, "fuzz_json: read differently (flags %zu): jtext %s at %d, jansson %s at %d\n", flags,
              a ? "(value)" : e1.text, e1.position, b ? "(value)" : e2.text, e2.position);
      abort();
    }
    return;
  }
  if (!json_equal(a, b)) {
    fprintf(stderr, "fuzz_json: read different values (flags %zu)\n", flags);
    abort();
  }
  writes_alike(a, 0);
  writes_alike(a, 1);
  json_decref(a);
  json_decref(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reads_alike((const char *)data, size, 0);
  reads_alike((const char *)data, size, JSON_REJECT_DUPLICATES);
  return 0;
}
