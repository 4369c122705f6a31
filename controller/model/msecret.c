/*
** msecret.c — API key loading and redaction (msecret.h).
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "msecret.h"

#define MAX_KEY 4096

static int fail(char *err, size_t len, const char *msg, const char *arg) {
  snprintf(err, len, msg, arg);
  return -1;
}

/* A key goes into an "Authorization: Bearer" header: printable ASCII, no
** blanks (a newline would inject a header). */
static int valid_key(const char *k) {
  if (!*k) return 0;
  for (const unsigned char *p = (const unsigned char *)k; *p; p++)
    if (*p <= ' ' || *p >= 0x7f) return 0;
  return 1;
}

static char *trimmed_copy(const char *s, size_t n) {
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  while (n && (*s == ' ' || *s == '\t')) s++, n--;
  return strndup(s, n);
}

static int read_key_file(const char *path, char **key, char *err, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, len, "cannot read OPENAI_API_KEY_FILE %s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(err, len, "OPENAI_API_KEY_FILE %s is not a regular file", path);
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    close(fd);
    return fail(err, len, "OPENAI_API_KEY_FILE %s is accessible by group or others; run: chmod 600 it", path);
  }
  char buf[MAX_KEY + 1];
  size_t n = 0;
  ssize_t got;
  while (n < sizeof buf && (got = read(fd, buf + n, sizeof buf - n)) > 0) n += (size_t)got;
  close(fd);
  if (n > MAX_KEY) {
    explicit_bzero(buf, sizeof buf);
    return fail(err, len, "OPENAI_API_KEY_FILE %s is too large to hold a key", path);
  }
  *key = trimmed_copy(buf, n);
  explicit_bzero(buf, sizeof buf);
  if (!*key) return fail(err, len, "out of memory%s", "");
  return 0;
}

int msecret_load(char **key, char *err, size_t errlen) {
  *key = NULL;
  const char *env = getenv("OPENAI_API_KEY"), *file = getenv("OPENAI_API_KEY_FILE");
  int rc;
  if (env && *env) {
    *key = trimmed_copy(env, strlen(env));
    rc = *key ? 0 : fail(err, errlen, "out of memory%s", "");
  } else if (file && *file) {
    rc = read_key_file(file, key, err, errlen);
  } else {
    return 1;
  }
  if (rc) return rc;
  if (!valid_key(*key)) {
    msecret_wipe(*key);
    *key = NULL;
    return fail(err, errlen, "the API key (%s) is empty or has characters that cannot go in an HTTP header",
                env && *env ? "OPENAI_API_KEY" : "OPENAI_API_KEY_FILE");
  }
  /* a core file would hold the key */
  struct rlimit rl = {0, 0};
  setrlimit(RLIMIT_CORE, &rl);
  return 0;
}

void msecret_wipe(char *key) {
  if (!key) return;
  explicit_bzero(key, strlen(key));
  free(key);
}

static int key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '*' || c == '.';
}

typedef struct Buf {
  char *p;
  size_t n, cap;
  int nomem;
} Buf;

static void put(Buf *b, const char *s, size_t n) {
  if (b->nomem || !n) return;
  if (b->n + n + 1 > b->cap) {
    size_t c = b->cap * 2 > b->n + n + 1 ? b->cap * 2 : b->n + n + 1;
    char *p = realloc(b->p, c);
    if (!p) {
      b->nomem = 1;
      return;
    }
    b->p = p;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

char *msecret_redact(const char *s, size_t len, const char *key, size_t *outlen) {
  static const char mark[] = "[redacted]";
  size_t klen = key ? strlen(key) : 0;
  if (klen < MSECRET_MIN_KEY) klen = 0;
  Buf b = {.p = malloc(len + 1), .cap = len + 1};
  if (!b.p) return NULL;
  size_t i = 0, lit = 0;   /* s[lit..i) is copied as it is */
  while (i < len) {
    /* most bytes start nothing to redact: one test before the comparisons */
    char ch = s[i];
    if (ch != 'b' && ch != 'B' && ch != 's' && !(klen && ch == key[0])) {
      i++;
      continue;
    }
    size_t skip = 0;
    const char *keep = NULL;
    size_t keep_len = 0;
    if (klen && i + klen <= len && !memcmp(s + i, key, klen)) {
      skip = klen;
    } else if (i + 8 <= len && !strncasecmp(s + i, "bearer ", 7) && key_char(s[i + 7])) {
      size_t j = i + 7;
      while (j < len && key_char(s[j])) j++;
      keep = s + i, keep_len = 7, skip = j - i;
    } else if (i + 3 <= len && !memcmp(s + i, "sk-", 3) && (i == 0 || !key_char(s[i - 1]))) {
      size_t j = i + 3;
      while (j < len && key_char(s[j])) j++;
      if (j - i >= 3 + 8) keep = "sk-", keep_len = 3, skip = j - i;
    }
    if (!skip) {
      i++;
      continue;
    }
    put(&b, s + lit, i - lit);
    put(&b, keep, keep_len);
    put(&b, mark, sizeof mark - 1);
    i += skip;
    lit = i;
  }
  put(&b, s + lit, len - lit);
  if (b.nomem) {
    free(b.p);
    return NULL;
  }
  b.p[b.n] = 0;
  if (outlen) *outlen = b.n;
  return b.p;
}

/* A redacted copy of s as a JSON string, or NULL when it needs none (or
** memory is exhausted: *nomem). */
static json_t *redacted(const char *s, size_t n, const char *key, int *nomem) {
  size_t m;
  char *r = msecret_redact(s, n, key, &m);
  if (!r) {
    *nomem = 1;
    return NULL;
  }
  json_t *v = m == n && !memcmp(r, s, n) ? NULL : json_stringn(r, m);
  free(r);
  return v;
}

int msecret_redact_json(json_t *j, const char *key) {
  int nomem = 0;
  if (json_is_object(j)) {
    const char *k;
    json_t *v, *nv;
    void *tmp;
    json_object_foreach_safe(j, tmp, k, v) {
      if (json_is_string(v)) {
        if ((nv = redacted(json_string_value(v), json_string_length(v), key, &nomem)))
          json_object_set_new(j, k, nv);
      } else if (msecret_redact_json(v, key) != 0) {
        nomem = 1;
      }
      json_t *nk = redacted(k, strlen(k), key, &nomem);
      if (nk) {   /* a member name holding a secret: renamed */
        json_object_set(j, json_string_value(nk), json_object_get(j, k));
        json_object_del(j, k);
        json_decref(nk);
      }
    }
  } else if (json_is_array(j)) {
    for (size_t i = 0; i < json_array_size(j); i++) {
      json_t *v = json_array_get(j, i), *nv;
      if (json_is_string(v)) {
        if ((nv = redacted(json_string_value(v), json_string_length(v), key, &nomem))) json_array_set_new(j, i, nv);
      } else if (msecret_redact_json(v, key) != 0) {
        nomem = 1;
      }
    }
  }
  return nomem ? -1 : 0;
}
