/*
** sess_pretty.c — a proposal's Lisp source laid out for a person to read
** (sess.h): a model often sends a whole definition on one line.  The text
** is only re-indented, never re-read: every atom, string, comment and
** reader prefix keeps its spelling, and a source that does not balance, or
** that already has lines of its own, is shown as it came.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sess.h"

#define MAX_NODES 4096
#define MAX_DEPTH 200

typedef struct Node {
  const char *text; /* an atom's spelling, or a list's prefix ("'", "#'", "`", "#", ...) */
  int len;          /* of text */
  int list;         /* 1: a list; its children follow as kids */
  int first, n;     /* kids: indices into the node array */
  int comment;      /* a ; comment: a line ends after it */
  int flat;         /* width written on one line */
} Node;

typedef struct Tree {
  Node nodes[MAX_NODES];
  int kids[MAX_NODES];
  int nn, nk;
} Tree;

/* One datum from *p: its node index, or -1 (unbalanced, too deep, too big). */
static int parse(Tree *t, const char **p, int depth);

static const char *skip_space(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

static int new_node(Tree *t) { return t->nn < MAX_NODES ? t->nn++ : -1; }

static int parse_list(Tree *t, const char **p, int depth, const char *prefix, int plen) {
  int me = new_node(t);
  if (me < 0 || depth > MAX_DEPTH) return -1;
  int tmp[MAX_NODES / 4], n = 0;
  const char *s = *p + 1;
  for (;;) {
    s = skip_space(s);
    if (!*s) return -1;
    if (*s == ')') break;
    int k = parse(t, &s, depth + 1);
    if (k < 0 || n >= (int)(sizeof tmp / sizeof *tmp)) return -1;
    tmp[n++] = k;
  }
  if (t->nk + n > MAX_NODES) return -1;
  Node *x = &t->nodes[me];
  *x = (Node){.text = prefix, .len = plen, .list = 1, .first = t->nk, .n = n};
  memcpy(t->kids + t->nk, tmp, (size_t)n * sizeof *tmp);
  t->nk += n;
  *p = s + 1;
  return me;
}

static int parse(Tree *t, const char **p, int depth) {
  const char *s = *p, *start = s;
  /* reader prefixes stay glued to what they prefix */
  while (*s == '\'' || *s == '`' || *s == ',' || *s == '@' || (*s == '#' && (s[1] == '\'' || s[1] == '(')))
    s += *s == '#' && s[1] == '\'' ? 2 : 1;
  if (*s == '(') {
    *p = s;
    return parse_list(t, p, depth, start, (int)(s - start));
  }
  if (*s == ';') {
    int me = new_node(t);
    if (me < 0) return -1;
    size_t n = strlen(start);
    t->nodes[me] = (Node){.text = start, .len = (int)n, .comment = 1};
    *p = start + n;
    return me;
  }
  while (*s && !strchr(" \t()", *s)) {
    if (*s == '"' || *s == '|') { /* a string or an escaped name, to its closing mark */
      char q = *s++;
      while (*s && *s != q) s += *s == '\\' && s[1] ? 2 : 1;
      if (!*s) return -1;
      s++;
    } else if (*s == '#' && s[1] == '\\') { /* a character: #\( is one atom */
      s += s[2] ? 3 : 2;
    } else if (*s == '\\' && s[1]) {
      s += 2;
    } else if (*s == ';') {
      break;
    } else {
      s++;
    }
  }
  if (s == start) return -1;
  int me = new_node(t);
  if (me < 0) return -1;
  t->nodes[me] = (Node){.text = start, .len = (int)(s - start)};
  *p = s;
  return me;
}

static int measure(Tree *t, int i) {
  Node *x = &t->nodes[i];
  if (!x->list) return x->flat = x->comment ? 10000 : x->len;
  int w = x->len + 2;
  for (int k = 0; k < x->n; k++) w += measure(t, t->kids[x->first + k]) + (k > 0);
  return x->flat = w;
}

/* Forms whose first `body` arguments stay on the head's line and whose
** body is indented by two, as Lisp editors do. */
static int body_after(const Node *head) {
  static const struct {
    const char *name;
    int args;
  } forms[] = {{"defun", 2},
               {"defmacro", 2},
               {"defmethod", 2},
               {"defgeneric", 2},
               {"define-condition", 2},
               {"defclass", 2},
               {"defstruct", 1},
               {"defvar", 1},
               {"defparameter", 1},
               {"defconstant", 1},
               {"lambda", 1},
               {"let", 1},
               {"let*", 1},
               {"flet", 1},
               {"labels", 1},
               {"macrolet", 1},
               {"when", 1},
               {"unless", 1},
               {"dolist", 1},
               {"dotimes", 1},
               {"do", 2},
               {"do*", 2},
               {"destructuring-bind", 2},
               {"multiple-value-bind", 2},
               {"handler-case", 1},
               {"restart-case", 1},
               {"handler-bind", 1},
               {"case", 1},
               {"ecase", 1},
               {"typecase", 1},
               {"etypecase", 1},
               {"block", 1},
               {"progn", 0},
               {"prog1", 1},
               {"unwind-protect", 1},
               {"loop", 0},
               {NULL, 0}};
  if (head->list) return -1;
  for (int i = 0; forms[i].name; i++)
    if ((int)strlen(forms[i].name) == head->len && !strncasecmp(head->text, forms[i].name, (size_t)head->len))
      return forms[i].args;
  if (head->len > 5 && !strncasecmp(head->text, "with-", 5)) return 1;
  if (head->len > 3 && !strncasecmp(head->text, "def", 3)) return 2;
  return -1;
}

static void put_flat(FILE *f, Tree *t, int i) {
  Node *x = &t->nodes[i];
  fwrite(x->text, 1, (size_t)x->len, f);
  if (!x->list) return;
  fputc('(', f);
  for (int k = 0; k < x->n; k++) {
    if (k) fputc(' ', f);
    put_flat(f, t, t->kids[x->first + k]);
  }
  fputc(')', f);
}

typedef struct Out {
  FILE *f;
  int width;
} Out;

static void newline(FILE *f, int col) { fprintf(f, "\n%*s", col, ""); }

/* Write node i starting at column col. */
static void layout(Out *o, Tree *t, int i, int col) {
  Node *x = &t->nodes[i];
  if (!x->list || (x->flat <= o->width - col)) {
    put_flat(o->f, t, i);
    return;
  }
  fwrite(x->text, 1, (size_t)x->len, o->f);
  fputc('(', o->f);
  int c = col + x->len + 1;
  if (!x->n) {
    fputc(')', o->f);
    return;
  }
  Node *head = &t->nodes[t->kids[x->first]];
  int body = body_after(head);
  int k = 0;
  int align;
  if (body >= 0) { /* (defun name args \n  body) */
    int stop = 1 + body < x->n ? 1 + body : x->n;
    int cc = c;
    for (; k < stop; k++) {
      if (k) fputc(' ', o->f), cc++;
      layout(o, t, t->kids[x->first + k], cc);
      cc += t->nodes[t->kids[x->first + k]].flat;
    }
    align = col + x->len + 2;
  } else if (!head->list && x->n > 1 && head->flat < 20) { /* (f a \n   b): under the first argument */
    put_flat(o->f, t, t->kids[x->first]);
    fputc(' ', o->f);
    align = c + head->flat + 1;
    layout(o, t, t->kids[x->first + 1], align);
    k = 2;
  } else { /* a list of lists, or a long head: one under the other */
    align = c;
    layout(o, t, t->kids[x->first], align);
    k = 1;
  }
  for (; k < x->n; k++) {
    newline(o->f, align);
    layout(o, t, t->kids[x->first + k], align);
  }
  if (x->n && t->nodes[t->kids[x->first + x->n - 1]].comment) newline(o->f, align);
  fputc(')', o->f);
}

char *sess_pretty_lisp(const char *src, int width) {
  if (!src) return NULL;
  if (strchr(src, '\n')) return strdup(src); /* laid out already: the author's lines */
  Tree *t = calloc(1, sizeof *t);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = t ? open_memstream(&buf, &len) : NULL;
  if (!f) {
    free(t);
    return strdup(src);
  }
  Out o = {f, width < 20 ? 20 : width};
  const char *p = skip_space(src);
  int ok = 1, forms = 0;
  while (*p && ok) {
    int i = parse(t, &p, 0);
    if (i < 0 || (*p == ')')) {
      ok = 0;
      break;
    }
    measure(t, i);
    if (forms++) fputc('\n', f);
    layout(&o, t, i, 0);
    p = skip_space(p);
  }
  fclose(f);
  free(t);
  if (!ok || !buf) {
    free(buf);
    return strdup(src);
  }
  return buf;
}
