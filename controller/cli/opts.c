/*
** opts.c — the option helpers every command shares (cli.h): the store
** directory, counts and sizes, reading a file or standard input.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "jtext.h"

const char *opts_default_store(void) {
  const char *e = getenv("JITI_STORE");
  return e && *e ? e : ".jiti";
}

int opts_store(int argc, char **argv, int *i, const char **dir, char *err, size_t errlen) {
  const char *a = argv[*i];
  if (!strncmp(a, "--store=", 8)) {
    *dir = a + 8;
  } else if (!strcmp(a, "--store")) {
    if (*i + 1 >= argc) {
      snprintf(err, errlen, "--store needs a directory");
      return -1;
    }
    *dir = argv[++*i];
  } else {
    return 0;
  }
  if (!**dir) {
    snprintf(err, errlen, "--store needs a non-empty directory");
    return -1;
  }
  return 1;
}

int opts_count(const char *s, uint64_t *out) {
  if (!s || !*s) return 0;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return 0;
  *out = v;
  return 1;
}

int opts_size(const char *s, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return 0;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return 0;
  unsigned shift = 0;
  if (*end == 'k' || *end == 'K') {
    shift = 10;
    end++;
  } else if (*end == 'm' || *end == 'M') {
    shift = 20;
    end++;
  } else if (*end == 'g' || *end == 'G') {
    shift = 30;
    end++;
  }
  if (*end || (shift && v > (UINT64_MAX >> shift))) return 0;
  *out = v << shift;
  return 1;
}

int opts_duration(const char *s, int64_t *ms) {
  uint64_t v;
  char digits[32];
  size_t n = s ? strspn(s, "0123456789") : 0;
  if (!n || n >= sizeof digits) return 0;
  memcpy(digits, s, n);
  digits[n] = '\0';
  if (!opts_count(digits, &v) || !v) return 0;
  int64_t unit = 1;
  switch (s[n]) {
  case '\0':
  case 's': unit = 1; break;
  case 'm': unit = 60; break;
  case 'h': unit = 3600; break;
  case 'd': unit = 86400; break;
  case 'w': unit = 7 * 86400; break;
  default: return 0;
  }
  if (s[n] && s[n + 1]) return 0;
  if (v > (uint64_t)(100LL * 366 * 86400 / unit)) return 0;
  *ms = (int64_t)v * unit * 1000;
  return 1;
}

char *opts_read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
    if (n == cap) {
      char *nb = realloc(buf, cap * 2 + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  if (bad) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  if (!buf) {
    errno = ENOMEM;
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

char *opts_read_source(const char *cmd, const char *done, const char *expr, const char *file,
                       size_t *len) {
  const char *what = expr ? "the source" : strcmp(file, "-") ? file : "standard input";
  char *src = expr ? strdup(expr) : opts_read_file(file, len);
  if (!src) {
    fprintf(stderr, "jiti %s: cannot read %s: %s\n", cmd, what, strerror(expr ? ENOMEM : errno));
    return NULL;
  }
  if (expr) *len = strlen(expr);
  size_t nul = strlen(src);
  if (nul != *len) {
    fprintf(stderr, "jiti %s: %s holds a NUL byte (at byte %zu); nothing was %s\n", cmd, what, nul, done);
    free(src);
    return NULL;
  }
  /* the kernel's requests are JSON, which carries only well-formed UTF-8 */
  const unsigned char *u = (const unsigned char *)src;
  for (size_t i = 0, n; i < *len; i += n) {
    n = 1;
    if (u[i] >= 0x80 && jtext_utf8_next(u + i, *len - i, &n) < 0) {
      fprintf(stderr, "jiti %s: %s is not valid UTF-8 (at byte %zu); nothing was %s\n", cmd, what, i, done);
      free(src);
      return NULL;
    }
  }
  return src;
}
