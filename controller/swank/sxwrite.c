/*
** sxwrite.c — text for Emacs's `read` (sexp.h): strings escape only " and
** \ (Emacs reads the rest, newlines and UTF-8 included, as themselves).
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sexp.h"

void sxw_init(sxw *w) { memset(w, 0, sizeof *w), w->first = 1; }

void sxw_free(sxw *w) {
  free(w->buf);
  sxw_init(w);
}

static void put(sxw *w, const char *s, size_t n) {
  if (w->oom) return;
  if (w->len + n + 1 > w->cap) {
    size_t nc = w->cap ? w->cap : 256;
    while (w->len + n + 1 > nc) nc *= 2;
    char *nb = realloc(w->buf, nc);
    if (!nb) {
      w->oom = 1;
      return;
    }
    w->buf = nb, w->cap = nc;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  w->buf[w->len] = 0;
}

/* A blank before every item of a list but its first. */
static void item(sxw *w) {
  if (!w->first) put(w, " ", 1);
  w->first = 0;
}

void sxw_open(sxw *w) {
  item(w);
  put(w, "(", 1);
  w->depth++, w->first = 1;
}

void sxw_close(sxw *w) {
  put(w, ")", 1);
  w->depth--, w->first = 0;
}

void sxw_sym(sxw *w, const char *name) {
  item(w);
  put(w, name, strlen(name));
}

void sxw_raw(sxw *w, const char *text) { sxw_sym(w, text); }

void sxw_strn(sxw *w, const char *s, size_t n) {
  item(w);
  put(w, "\"", 1);
  size_t from = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '"' || s[i] == '\\') {
      put(w, s + from, i - from);
      put(w, "\\", 1);
      from = i;
    }
  put(w, s + from, n - from);
  put(w, "\"", 1);
}

void sxw_str(sxw *w, const char *s) { sxw_strn(w, s ? s : "", s ? strlen(s) : 0); }

void sxw_str_or_nil(sxw *w, const char *s) {
  if (s) sxw_str(w, s);
  else sxw_sym(w, "nil");
}

void sxw_int(sxw *w, int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRId64, v);
  sxw_sym(w, b);
}
