/*
** sxread.c — the strict reader of SLIME's wire (sexp.h).  Recursive
** descent bounded by SX_DEPTH_MAX and SX_NODES_MAX, so no message can
** exhaust the stack or memory beyond its own size.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sexp.h"
#include "jtext.h"

typedef struct Reader {
  const char *s;
  size_t n, i;
  size_t nodes;
  char *err;
  size_t errlen;
} Reader;

static sx *fail(Reader *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static sx *fail(Reader *R, const char *fmt, ...) {
  if (R->err[0]) return NULL;  /* the innermost reason stays */
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(R->err, R->errlen, fmt, ap);
  va_end(ap);
  if (k >= 0 && (size_t)k < R->errlen)
    snprintf(R->err + k, R->errlen - (size_t)k, " (at byte %zu)", R->i);
  return NULL;
}

static void skip_blanks(Reader *R) {
  while (R->i < R->n && strchr(" \t\r\n\f", R->s[R->i]) && R->s[R->i]) R->i++;
}

static sx *node(Reader *R, sx_Type t) {
  if (++R->nodes > SX_NODES_MAX) return fail(R, "more than %d nodes in one message", SX_NODES_MAX);
  sx *x = calloc(1, sizeof *x);
  if (!x) return fail(R, "out of memory");
  x->type = t;
  return x;
}

/* A token ends at a blank, a parenthesis, a quote or a string. */
static int token_end(char c) { return strchr(" \t\r\n\f()'\"", c) != NULL || c == 0; }

/* c appended to the token or string being read (*b of *cap bytes, room
** kept for its terminating NUL): 0, or -1 when out of memory (*b intact). */
static int put_char(char **b, size_t *len, size_t *cap, char c) {
  if (*len + 2 > *cap) {
    char *nb = realloc(*b, *cap * 2);
    if (!nb) return -1;
    *b = nb;
    *cap *= 2;
  }
  (*b)[(*len)++] = c;
  return 0;
}

static sx *read_string(Reader *R) {
  R->i++;  /* the opening " */
  size_t cap = 16, len = 0;
  char *b = malloc(cap);
  if (!b) return fail(R, "out of memory");
  for (;;) {
    if (R->i >= R->n) {
      free(b);
      return fail(R, "end of message inside a string");
    }
    char c = R->s[R->i++];
    if (c == '"') break;
    if (c == '\\') {
      if (R->i >= R->n) {
        free(b);
        return fail(R, "end of message after a backslash");
      }
      c = R->s[R->i++];
    }
    if (put_char(&b, &len, &cap, c)) {
      free(b);
      return fail(R, "out of memory");
    }
  }
  b[len] = 0;
  sx *x = node(R, SX_STRING);
  if (!x) {
    free(b);
    return NULL;
  }
  x->str = b, x->len = len;
  return x;
}

/* An integer when the whole token is one ([+-]digits), else a symbol. */
static sx *read_atom(Reader *R) {
  size_t start = R->i, len = 0, cap = 16;
  char *b = malloc(cap);
  if (!b) return fail(R, "out of memory");
  int escaped = 0;
  while (R->i < R->n && !token_end(R->s[R->i])) {
    char c = R->s[R->i++];
    if (c == '#' || c == '`' || c == ',' || c == ';' || c == '|') {
      free(b);
      R->i--;
      return fail(R, "'%c' is not part of the wire's syntax", c);
    }
    if (c == '\\') {
      if (R->i >= R->n) {
        free(b);
        return fail(R, "end of message after a backslash");
      }
      c = R->s[R->i++], escaped = 1;
    }
    if (put_char(&b, &len, &cap, c)) {
      free(b);
      return fail(R, "out of memory");
    }
  }
  b[len] = 0;
  if (R->i == start) {
    free(b);
    return fail(R, "expected an expression");
  }
  const char *d = b + (b[0] == '-' || b[0] == '+');
  if (!escaped && *d && strspn(d, "0123456789") == strlen(d)) {
    errno = 0;
    char *e;
    long long v = strtoll(b, &e, 10);
    if (errno || *e) {
      free(b);
      return fail(R, "integer out of range");
    }
    sx *x = node(R, SX_INT);
    free(b);
    if (x) x->num = v;
    return x;
  }
  if (!strcmp(b, ".")) {
    free(b);
    return fail(R, "dotted pairs are not part of the wire's syntax");
  }
  sx *x = node(R, SX_SYMBOL);
  if (!x) {
    free(b);
    return NULL;
  }
  x->str = b, x->len = len;
  return x;
}

static sx *read_expr(Reader *R, int depth);

static sx *read_list(Reader *R, int depth) {
  R->i++;  /* ( */
  sx *x = node(R, SX_LIST);
  if (!x) return NULL;
  size_t cap = 0;
  for (;;) {
    skip_blanks(R);
    if (R->i >= R->n) {
      sx_free(x);
      return fail(R, "end of message inside a list");
    }
    if (R->s[R->i] == ')') {
      R->i++;
      return x;
    }
    sx *item = read_expr(R, depth + 1);
    if (!item) {
      sx_free(x);
      return NULL;
    }
    if (x->len == cap) {
      size_t nc = cap ? cap * 2 : 4;
      sx **ni = realloc(x->items, nc * sizeof *ni);
      if (!ni) {
        sx_free(item);
        sx_free(x);
        return fail(R, "out of memory");
      }
      x->items = ni, cap = nc;
    }
    x->items[x->len++] = item;
  }
}

static sx *read_expr(Reader *R, int depth) {
  if (depth > SX_DEPTH_MAX) return fail(R, "nested deeper than %d", SX_DEPTH_MAX);
  skip_blanks(R);
  if (R->i >= R->n) return fail(R, "expected an expression, found the end of the message");
  char c = R->s[R->i];
  if (c == '(') return read_list(R, depth);
  if (c == ')') return fail(R, "unmatched close parenthesis");
  if (c == '"') return read_string(R);
  if (c == '\'') {  /* 'x: (quote x) */
    R->i++;
    sx *q = node(R, SX_LIST), *sym = node(R, SX_SYMBOL), *v = NULL;
    if (q && sym) sym->str = strdup("quote"), sym->len = 5;
    if (q && sym && sym->str) v = read_expr(R, depth + 1);
    if (!v || !(q->items = malloc(2 * sizeof *q->items))) {
      sx_free(q), sx_free(sym), sx_free(v);
      return fail(R, "out of memory");
    }
    q->items[0] = sym, q->items[1] = v, q->len = 2;
    return q;
  }
  return read_atom(R);
}

sx *sx_read(const char *text, size_t n, char *err, size_t errlen) {
  err[0] = 0;
  Reader R = {.s = text, .n = n, .err = err, .errlen = errlen};
  if (!jtext_utf8_valid(text, n)) {
    snprintf(err, errlen, "the message is not UTF-8");
    return NULL;
  }
  sx *x = read_expr(&R, 0);
  if (!x) {
    if (!err[0]) snprintf(err, errlen, "malformed message");
    return NULL;
  }
  skip_blanks(&R);
  if (R.i < R.n) {
    sx_free(x);
    fail(&R, "more than one expression in the message");
    return NULL;
  }
  return x;
}

void sx_free(sx *x) {
  if (!x) return;
  for (size_t i = 0; x->type == SX_LIST && i < x->len; i++) sx_free(x->items[i]);
  free(x->items);
  free(x->str);
  free(x);
}

sx *sx_at(const sx *x, size_t i) { return x && x->type == SX_LIST && i < x->len ? x->items[i] : NULL; }

int sx_is(const sx *x, const char *name) { return x && x->type == SX_SYMBOL && !strcasecmp(x->str, name); }

int sx_nil(const sx *x) { return !x || (x->type == SX_LIST && !x->len) || sx_is(x, "nil"); }

const char *sx_str(const sx *x) { return x && (x->type == SX_STRING || x->type == SX_SYMBOL) ? x->str : NULL; }

sx *sx_plist(const sx *x, size_t from, const char *key) {
  for (size_t i = from; x && x->type == SX_LIST && i + 1 < x->len; i += 2)
    if (sx_is(x->items[i], key)) return x->items[i + 1];
  return NULL;
}
