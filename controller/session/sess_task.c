/*
** sess_task.c — task files: a request with its goals and invariants
** (sess.h).
**
** Lisp form (goals and invariants keep their source text as written):
**   (:request "Create a sales-tax calculator using a 5% tax rate"
**    :goals ((= (total-price 100) 105))
**    :invariants ((tax-never-negative (>= (sales-tax 100) 0))))
** JSON form:
**   {"request": "...", "goals": ["(= (total-price 100) 105)"],
**    "invariants": [{"name": "tax-never-negative", "source": "(>= ...)"}]}
** The controller does not evaluate the file: the Lisp form is only split
** into the source text of its elements.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sess.h"

int sess_task_add_goal(sess_Task *t, const char *source) {
  char **g = realloc(t->goals, (size_t)(t->ngoals + 1) * sizeof *g);
  if (!g) return -1;
  t->goals = g;
  if (!(g[t->ngoals] = strdup(source))) return -1;
  t->ngoals++;
  return 0;
}

int sess_task_add_invariant(sess_Task *t, const char *name, const char *source) {
  sess_Invariant *v = realloc(t->invariants, (size_t)(t->ninvariants + 1) * sizeof *v);
  if (!v) return -1;
  t->invariants = v;
  char def[48];
  snprintf(def, sizeof def, "session-invariant-%d", t->ninvariants + 1);
  v[t->ninvariants].name = strdup(name ? name : def);
  v[t->ninvariants].source = strdup(source);
  if (!v[t->ninvariants].name || !v[t->ninvariants].source) return -1;
  t->ninvariants++;
  return 0;
}

void sess_task_free(sess_Task *t) {
  free(t->request);
  for (int i = 0; i < t->ngoals; i++) free(t->goals[i]);
  free(t->goals);
  for (int i = 0; i < t->ninvariants; i++) {
    free(t->invariants[i].name);
    free(t->invariants[i].source);
  }
  free(t->invariants);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------- the Lisp form */

typedef struct Src {
  const char *s;
  size_t n, i;
  const char *path;
  char *err;
  size_t errlen;
} Src;

static int fail(Src *p, const char *fmt, ...) {
  int line = 1;
  for (size_t j = 0; j < p->i && j < p->n; j++) line += p->s[j] == '\n';
  int k = snprintf(p->err, p->errlen, "%s:%d: ", p->path, line);
  va_list ap;
  va_start(ap, fmt);
  if (k >= 0 && (size_t)k < p->errlen) vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
  va_end(ap);
  return -1;
}

/* Skip blanks and comments (";" lines, nesting "#| |#"). */
static int skip(Src *p) {
  for (;;) {
    while (p->i < p->n && isspace((unsigned char)p->s[p->i])) p->i++;
    if (p->i < p->n && p->s[p->i] == ';') {
      while (p->i < p->n && p->s[p->i] != '\n') p->i++;
    } else if (p->i + 1 < p->n && p->s[p->i] == '#' && p->s[p->i + 1] == '|') {
      int depth = 1;
      p->i += 2;
      while (p->i < p->n && depth) {
        if (p->i + 1 < p->n && p->s[p->i] == '|' && p->s[p->i + 1] == '#') depth--, p->i += 2;
        else if (p->i + 1 < p->n && p->s[p->i] == '#' && p->s[p->i + 1] == '|') depth++, p->i += 2;
        else p->i++;
      }
      if (depth) return fail(p, "a #| comment is not closed");
    } else {
      return 0;
    }
  }
}

static int delimiter(char c) { return isspace((unsigned char)c) || c == '(' || c == ')' || c == '"' || c == ';'; }

/* Scan one element; [*a, *b) is its text. */
static int element(Src *p, size_t *a, size_t *b) {
  if (skip(p)) return -1;
  if (p->i >= p->n) return fail(p, "the file ends inside a form");
  *a = p->i;
  char c = p->s[p->i];
  if (c == ')') return fail(p, "unexpected )");
  if (c == '\'' || c == '`' || c == ',') {   /* a prefix, then its element */
    p->i++;
    if (c == ',' && p->i < p->n && p->s[p->i] == '@') p->i++;
    size_t x, y;
    if (element(p, &x, &y)) return -1;
    *b = y;
    return 0;
  }
  if (c == '"') {
    for (p->i++; p->i < p->n && p->s[p->i] != '"'; p->i++)
      if (p->s[p->i] == '\\') p->i++;
    if (p->i >= p->n) return fail(p, "a string is not closed");
    *b = ++p->i;
    return 0;
  }
  if (c == '#' && p->i + 1 < p->n && p->s[p->i + 1] == '\\') {   /* #\x, #\Space */
    p->i += 3;
    while (p->i < p->n && !delimiter(p->s[p->i])) p->i++;
    *b = p->i;
    return 0;
  }
  if (c == '#' && p->i + 1 < p->n && (p->s[p->i + 1] == '\'' || p->s[p->i + 1] == '(')) {
    p->i++;
    if (p->s[p->i] == '\'') p->i++;
    size_t x, y;
    if (element(p, &x, &y)) return -1;
    *b = y;
    return 0;
  }
  if (c == '(') {
    p->i++;
    for (;;) {
      if (skip(p)) return -1;
      if (p->i >= p->n) return fail(p, "a list is not closed");
      if (p->s[p->i] == ')') {
        *b = ++p->i;
        return 0;
      }
      size_t x, y;
      if (element(p, &x, &y)) return -1;
    }
  }
  while (p->i < p->n && !delimiter(p->s[p->i])) {
    if (p->s[p->i] == '\\' && p->i + 1 < p->n) {
      p->i++;
    } else if (p->s[p->i] == '|') {
      for (p->i++; p->i < p->n && p->s[p->i] != '|'; p->i++) {}
      if (p->i >= p->n) return fail(p, "a |symbol| is not closed");
    }
    p->i++;
  }
  *b = p->i;
  return 0;
}

/* The elements of the list at [a, b): their spans (malloc'd), how many. */
static int list_elements(Src *p, size_t a, size_t b, size_t **spans, int *n) {
  *spans = NULL;
  *n = 0;
  if (p->s[a] != '(') return fail(p, "a list was expected");
  size_t save = p->i;
  p->i = a + 1;
  for (;;) {
    if (skip(p)) return -1;
    if (p->i >= b - 1) break;
    size_t x, y;
    if (element(p, &x, &y)) return -1;
    size_t *v = realloc(*spans, (size_t)(*n + 1) * 2 * sizeof *v);
    if (!v) return fail(p, "out of memory");
    *spans = v;
    v[2 * *n] = x;
    v[2 * *n + 1] = y;
    (*n)++;
  }
  p->i = save;
  return 0;
}

static char *string_value(const char *s, size_t a, size_t b) {
  char *out = malloc(b - a + 1), *o = out;
  if (!out) return NULL;
  for (size_t i = a + 1; i + 1 < b; i++) {
    if (s[i] == '\\' && i + 2 < b) i++;
    *o++ = s[i];
  }
  *o = 0;
  return out;
}

static int load_lisp(Src *p, sess_Task *t) {
  size_t a, b;
  if (element(p, &a, &b)) return -1;
  if (skip(p) || p->i < p->n) return p->i < p->n ? fail(p, "one form was expected, there is more after it") : -1;
  size_t *el;
  int n;
  p->i = a;
  if (list_elements(p, a, b, &el, &n)) return -1;
  int rc = 0;
  for (int k = 0; k + 1 < n && !rc; k += 2) {
    const char *key = p->s + el[2 * k];
    size_t klen = el[2 * k + 1] - el[2 * k], va = el[2 * k + 2], vb = el[2 * k + 3];
    p->i = el[2 * k];
    if (klen == 8 && !strncasecmp(key, ":request", 8)) {
      if (p->s[va] != '"') { rc = fail(p, ":request must be a string"); break; }
      free(t->request);
      t->request = string_value(p->s, va, vb);
    } else if (klen == 6 && !strncasecmp(key, ":goals", 6)) {
      size_t *g;
      int ng;
      if ((rc = list_elements(p, va, vb, &g, &ng))) break;
      for (int j = 0; j < ng && !rc; j++) {
        char *src = strndup(p->s + g[2 * j], g[2 * j + 1] - g[2 * j]);
        rc = !src || sess_task_add_goal(t, src);
        free(src);
      }
      free(g);
    } else if (klen == 11 && !strncasecmp(key, ":invariants", 11)) {
      size_t *iv;
      int ni;
      if ((rc = list_elements(p, va, vb, &iv, &ni))) break;
      for (int j = 0; j < ni && !rc; j++) {
        size_t *pair;
        int np;
        p->i = iv[2 * j];
        if ((rc = list_elements(p, iv[2 * j], iv[2 * j + 1], &pair, &np))) break;
        if (np != 2) {
          rc = fail(p, "an invariant is (NAME FORM)");
        } else {
          char *name = strndup(p->s + pair[0], pair[1] - pair[0]);
          char *src = strndup(p->s + pair[2], pair[3] - pair[2]);
          for (char *c = name; c && *c; c++) *c = (char)tolower((unsigned char)*c);
          rc = !name || !src || sess_task_add_invariant(t, name, src);
          free(name);
          free(src);
        }
        free(pair);
      }
      free(iv);
    } else {
      rc = fail(p, "unknown key %.*s (:request, :goals, :invariants)", (int)(klen < 40 ? klen : 40), key);
    }
  }
  if (!rc && n % 2) rc = fail(p, "a key without a value");
  free(el);
  return rc;
}

/* ------------------------------------------------------- the JSON form */

static int load_json(const char *path, const char *text, sess_Task *t, char *err, size_t errlen) {
  json_error_t je;
  json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!json_is_object(j)) {
    snprintf(err, errlen, "%s:%d: %s", path, je.line, j ? "a JSON object was expected" : je.text);
    json_decref(j);
    return -1;
  }
  int rc = 0;
  const char *k;
  json_t *v;
  json_object_foreach(j, k, v) {
    size_t i;
    json_t *x;
    if (!strcmp(k, "request") && json_is_string(v)) {
      free(t->request);
      t->request = strdup(json_string_value(v));
    } else if (!strcmp(k, "goals") && json_is_array(v)) {
      json_array_foreach(v, i, x) {
        if (!json_is_string(x)) { rc = -1; break; }
        sess_task_add_goal(t, json_string_value(x));
      }
    } else if (!strcmp(k, "invariants") && json_is_array(v)) {
      json_array_foreach(v, i, x) {
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *src = json_is_string(x) ? json_string_value(x) : json_string_value(json_object_get(x, "source"));
        if (!src) { rc = -1; break; }
        sess_task_add_invariant(t, name, src);
      }
    } else {
      rc = -1;
    }
    if (rc) {
      snprintf(err, errlen, "%s: \"%s\" must be %s", path, k,
               !strcmp(k, "request") ? "a string" : !strcmp(k, "goals") ? "an array of Lisp sources"
               : !strcmp(k, "invariants") ? "an array of {\"name\", \"source\"}" : "one of request, goals, invariants");
      break;
    }
  }
  json_decref(j);
  return rc;
}

int sess_task_load(const char *path, sess_Task *t, char *err, size_t errlen) {
  FILE *f = fopen(path, "re");
  if (!f) {
    snprintf(err, errlen, "cannot read the task %s: %s", path, strerror(errno));
    return -1;
  }
  char *text = NULL;
  size_t cap = 0, len = 0;
  char buf[8192];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    if (len + got + 1 > cap) {
      cap = (len + got + 1) * 2;
      char *p = realloc(text, cap);
      if (!p) {
        free(text);
        fclose(f);
        snprintf(err, errlen, "out of memory reading %s", path);
        return -1;
      }
      text = p;
    }
    memcpy(text + len, buf, got);
    len += got;
  }
  fclose(f);
  if (!text) text = calloc(1, 1);
  if (!text) return -1;
  text[len] = 0;
  size_t first = strspn(text, " \t\r\n");
  int rc;
  if (text[first] == '{') {
    rc = load_json(path, text, t, err, errlen);
  } else {
    Src p = {text, len, 0, path, err, errlen};
    rc = load_lisp(&p, t);
  }
  free(text);
  return rc;
}
