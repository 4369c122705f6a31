/*
** describe.c — an entry's canonical encoding as Lisp text people read and
** can paste back (jiti_entry_text, jiti_entry_form; jt_world.h).
**
** The encoding is read as a tree without rebuilding the value, so nothing
** the value refers to has to exist: a structure of a type this state does not
** know prints as #S(NAME :SLOT value ...), and a hash table, which has no
** printed form a reader takes back, with its contents as a form that builds
** it, and an instance of a standard class as a form that allocates it and
** sets its bound slots.  Only atoms (numbers, characters, strings, symbols)
** are decoded, one at a time, and printed by the printer, so they read
** exactly as evaluated text does; no print-object method of the program
** runs.
**
** A form is then laid out in lines of at most `width` characters where it
** can: a group that fits stays on one line; one that does not puts its
** parts on lines of their own, definitions and binding forms with their
** body indented by two, calls with their arguments aligned under the first,
** data one element per line.  So a diff of two versions of a definition
** shows the lines that changed, not one long line each.
**
** Values are written as forms that evaluate to them wherever a form is
** expected (a variable's value, a data row's key and value): a symbol or a
** list quoted, a list holding a hash table or an instance backquoted with
** its constructor unquoted inside.  (One inside a vector or a structure is
** shown by its constructor too; such a value does not paste back.)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jt_eval.h"
#include "jt_grow.h"
#include "jt_world.h"

#define MAX_NEST 10000

/* ------------------------------------------------------------ the tree */

enum { N_ATOM, N_LIST, N_VECTOR, N_STRUCT, N_HASH, N_INSTANCE };

typedef struct Node {
  int type;
  char *text;            /* atom: printed; struct, instance: type name; hash:
                            test name */
  int symbol;            /* atom: a symbol that does not evaluate to itself */
  int unbound;           /* atom: an unbound slot's marker */
  int built;             /* a hash table or an instance is in it (itself
                            included): only a form that builds it shows it */
  struct Node **kids;    /* list, vector: elements; struct: :slot, value...;
                            instance: slot, value...; hash: key, value, ... */
  size_t nkids;
  struct Node *tail;     /* a dotted list's tail, or NULL */
} Node;

/* Every node made is also in the pool, so that all of them are freed
** whether reading ends normally or an error unwinds past it. */
typedef struct Pool { Node **v; size_t n, cap; } Pool;

typedef struct Reader {
  jt_State *S;
  const unsigned char *p;
  size_t n, pos;
  int depth;
  Pool *pool;
} Reader;

static JT_NORETURN void broken(Reader *r, const char *what) {
  jt_error(r->S, "corrupt entry encoding at byte %zu: %s", r->pos, what);
}

static JT_NORETURN void no_memory(jt_State *S) {
  jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory describing an entry");
}

static Node *node(Reader *r, int type) {
  Pool *p = r->pool;
  if (p->n == p->cap) {
    Node **v = jt_grow(p->v, &p->cap, p->n + 1, sizeof *v, 64);
    if (!v) no_memory(r->S);
    p->v = v;
  }
  Node *x = calloc(1, sizeof *x);
  if (!x) no_memory(r->S);
  x->type = type;
  p->v[p->n++] = x;
  return x;
}

static void pool_free(Pool *p) {
  for (size_t i = 0; i < p->n; i++) {
    free(p->v[i]->kids);
    free(p->v[i]->text);
    free(p->v[i]);
  }
  free(p->v);
  p->v = NULL;
  p->n = p->cap = 0;
}

static uint64_t uleb(Reader *r) {
  uint64_t v = jt_get_uleb(r->p, r->n, &r->pos);
  if (v == UINT64_MAX) broken(r, "truncated number");
  return v;
}

static void add_kid(Reader *r, Node *x, Node *k, size_t cap) {
  if (!x->kids && !(x->kids = calloc(cap ? cap : 1, sizeof *x->kids))) no_memory(r->S);
  x->kids[x->nkids++] = k;
  x->built |= k->built;
}

/* An atom: decoded alone and printed.  Decoded for reading: a symbol of a
** package the world lacks makes that package (empty), so that it prints
** with its prefix; a structure inside an array becomes a stand-in. */
static Node *atom(Reader *r) {
  jt_State *S = r->S;
  jt_V v = jt_decode_text_at(S, r->p, r->n, &r->pos);
  JT_PUSH(S, v);
  Node *x = node(r, N_ATOM);
  x->text = jt_print_cstr(S, v, true, (size_t)1 << 20);
  if (!x->text) no_memory(S);
  x->symbol = jt_issymbol(v) && v != JT_NIL && v != JT_T && !jt_iskeyword(v);
  JT_POP(S, 1);
  return x;
}

static Node *read_value(Reader *r) {
  if (r->pos >= r->n) broken(r, "truncated value");
  if (++r->depth > MAX_NEST) broken(r, "nested too deeply");
  Node *x;
  switch (r->p[r->pos]) {
    case 'L': {
      r->pos++;
      uint64_t n = uleb(r);
      if (n > r->n - r->pos) broken(r, "list longer than its encoding");
      x = node(r, N_LIST);
      for (uint64_t i = 0; i < n; i++) add_kid(r, x, read_value(r), (size_t)n);
      x->tail = read_value(r);
      if (x->tail->type == N_ATOM && !strcmp(x->tail->text, "NIL")) {
        x->tail = NULL;  /* a proper list (the pool frees the node) */
      } else {
        x->built |= x->tail->built;
      }
      if (!n && !x->tail) {  /* () is NIL */
        x->type = N_ATOM;
        x->text = strdup("NIL");
      }
      break;
    }
    case 'V': {
      r->pos++;
      uint64_t n = uleb(r);
      if (n > r->n - r->pos) broken(r, "vector longer than its encoding");
      x = node(r, N_VECTOR);
      for (uint64_t i = 0; i < n; i++) add_kid(r, x, read_value(r), (size_t)n);
      break;
    }
    case 'D': {  /* structure: type name, n, (slot name, value)* */
      r->pos++;
      x = node(r, N_STRUCT);
      Node *name = atom(r);
      x->text = name->text;
      name->text = NULL;
      uint64_t n = uleb(r);
      if (n > r->n - r->pos) broken(r, "structure larger than its encoding");
      for (uint64_t i = 0; i < n; i++) {
        Node *slot = atom(r);  /* shown as a keyword, as #S takes it */
        size_t len = strlen(slot->text);
        char *kw = malloc(len + 2);
        if (kw) {
          kw[0] = ':';
          memcpy(kw + 1, slot->text, len + 1);
          free(slot->text);
          slot->text = kw;
        }
        slot->symbol = 0;
        add_kid(r, x, slot, (size_t)(2 * n));
        add_kid(r, x, read_value(r), (size_t)(2 * n));
      }
      break;
    }
    case 'O': {  /* instance: class name, n, (slot name, value or 'U')* */
      r->pos++;
      x = node(r, N_INSTANCE);
      Node *name = atom(r);
      x->text = name->text;
      name->text = NULL;
      x->built = 1;
      uint64_t n = uleb(r);
      if (n > r->n - r->pos) broken(r, "instance larger than its encoding");
      for (uint64_t i = 0; i < n; i++) {
        Node *slot = atom(r);
        Node *v = read_value(r);
        if (v->unbound) continue;  /* left unbound by the constructor too */
        add_kid(r, x, slot, (size_t)(2 * n));
        add_kid(r, x, v, (size_t)(2 * n));
      }
      break;
    }
    case 'U':  /* an unbound slot */
      r->pos++;
      x = node(r, N_ATOM);
      if (!(x->text = strdup("#<UNBOUND>"))) no_memory(r->S);
      x->unbound = 1;
      break;
    case 'H': {  /* hash table: test, n, (key, value)* in its order */
      r->pos++;
      if (r->pos >= r->n) broken(r, "truncated hash table");
      int test = r->p[r->pos++];
      static const char *const tests[] = {"EQ", "EQL", "EQUAL", "EQUALP"};
      if (test < 0 || test > 3) broken(r, "bad hash table test");
      uint64_t n = uleb(r);
      if (n > r->n - r->pos) broken(r, "hash table larger than its encoding");
      x = node(r, N_HASH);
      x->text = strdup(tests[test]);
      x->built = 1;
      for (uint64_t i = 0; i < 2 * n; i++) add_kid(r, x, read_value(r), (size_t)(2 * n));
      break;
    }
    default:
      x = atom(r);
  }
  r->depth--;
  return x;
}

/* ------------------------------------------------------------ documents
**
** What is laid out: text, or a group (open, items, close) with a style that
** says how to break it. */

enum { S_CALL, S_BODY, S_DATA, S_PAIRS };

typedef struct Doc {
  char *text;             /* a text (no items), or the group's opening */
  const char *close;      /* a group's closing text */
  struct Doc **items;
  size_t nitems, cap;
  int style, header;      /* S_BODY: how many items after the head stay on its line */
  size_t flat;            /* length on one line */
} Doc;

typedef struct Out { jt_Buf b; int failed; } Out;

static Doc *doc_new(const char *text, const char *close) {
  Doc *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->text = strdup(text);
  d->close = close;
  if (!d->text) { free(d); return NULL; }
  return d;
}

static void doc_free(Doc *d) {
  if (!d) return;
  for (size_t i = 0; i < d->nitems; i++) doc_free(d->items[i]);
  free(d->items);
  free(d->text);
  free(d);
}

static Doc *doc_add(Doc *g, Doc *x) {
  if (!g || !x) { doc_free(x); return g; }
  if (g->nitems == g->cap) {
    Doc **v = jt_grow(g->items, &g->cap, g->nitems + 1, sizeof *v, 4);
    if (!v) { doc_free(x); return g; }
    g->items = v;
  }
  g->items[g->nitems++] = x;
  return g;
}

/* Text with a prefix ("'", "`", ","): one more text, or the group's
** opening gets it. */
static Doc *prefixed(const char *prefix, Doc *d) {
  if (!d || !*prefix) return d;
  size_t n = strlen(prefix) + strlen(d->text) + 1;
  char *t = malloc(n);
  if (!t) return d;
  snprintf(t, n, "%s%s", prefix, d->text);
  free(d->text);
  d->text = t;
  return d;
}

/* The forms whose first `n` arguments stay on the head's line while the rest
** (a body) goes on lines indented by two. */
static int body_header(const char *head) {
  static const struct { const char *name; int n; } forms[] = {
    {"DEFUN", 2}, {"DEFMACRO", 2}, {"DEFGENERIC", 2}, {"DEFMETHOD", 2}, {"LAMBDA", 1},
    {"LET", 1}, {"LET*", 1}, {"FLET", 1}, {"LABELS", 1}, {"MACROLET", 1}, {"WHEN", 1},
    {"UNLESS", 1}, {"DOLIST", 1}, {"DOTIMES", 1}, {"DO", 2}, {"BLOCK", 1},
    {"MULTIPLE-VALUE-BIND", 2}, {"DESTRUCTURING-BIND", 2}, {"DEFSTRUCT", 1},
    {"DEFINE-CONDITION", 2}, {"DEFCLASS", 2}, {"UNWIND-PROTECT", 1}, {"CATCH", 1},
    {"CASE", 1}, {"ECASE", 1}, {"TYPECASE", 1}, {"ETYPECASE", 1}, {"HANDLER-CASE", 1},
    {"RESTART-CASE", 1}, {"HANDLER-BIND", 1}, {"PROGN", 0}, {"COND", 0}, {"LOOP", 0},
    {"TAGBODY", 0}, {"DEFVAR", 1}, {"DEFPARAMETER", 1}, {"DEFCONSTANT", 1},
    {"WITH-OUTPUT-TO-STRING", 1}, {"WITH-SIMPLE-RESTART", 1}, {"PROG1", 1}, {"DEFTYPE", 2},
    {"DEFSETF", 3}, {"DEFINE-SETF-EXPANDER", 2}, {"DEFINE-COMPILER-MACRO", 2},
    {"DEFINE-MODIFY-MACRO", 3}, {"DEFINE-SYMBOL-MACRO", 1}};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
    if (!strcmp(head, forms[i].name)) return forms[i].n;
  return -1;
}

/* Contexts a value is written in. */
enum { C_CODE, C_EVAL, C_QUOTED, C_BACKQUOTED };

static Doc *doc_of(Node *x, int ctx);

/* The form that builds a hash table or an instance (x: pairs of kids):
**   (LET ((H (MAKE-HASH-TABLE :TEST 'TEST))) (SETF (GETHASH K H) V) ... H)
**   (LET ((I (ALLOCATE-INSTANCE (FIND-CLASS 'NAME)))) (SETF (SLOT-VALUE I 'S) V) ... I) */
static Doc *constructor(Node *x) {
  int hash = x->type == N_HASH;
  const char *var = hash ? "H" : "I";
  size_t n = strlen(x->text) + 64;
  char *make = malloc(n);
  if (!make) return NULL;
  snprintf(make, n, hash ? "((H (MAKE-HASH-TABLE :TEST '%s)))" : "((I (ALLOCATE-INSTANCE (FIND-CLASS '%s))))",
           x->text);
  Doc *g = doc_new("(", ")");
  g = doc_add(g, doc_new("LET", NULL));
  g = doc_add(g, doc_new(make, NULL));
  free(make);
  for (size_t i = 0; g && i + 1 < x->nkids; i += 2) {
    Doc *place = doc_new("(", ")");
    place = doc_add(place, doc_new(hash ? "GETHASH" : "SLOT-VALUE", NULL));
    if (hash) {
      place = doc_add(place, doc_of(x->kids[i], C_EVAL));
      place = doc_add(place, doc_new(var, NULL));
    } else {
      place = doc_add(place, doc_new(var, NULL));
      place = doc_add(place, prefixed("'", doc_new(x->kids[i]->text, NULL)));
    }
    Doc *set = doc_new("(", ")");
    set = doc_add(set, doc_new("SETF", NULL));
    set = doc_add(set, place);
    set = doc_add(set, doc_of(x->kids[i + 1], C_EVAL));
    g = doc_add(g, set);
  }
  g = doc_add(g, doc_new(var, NULL));
  if (g) { g->style = S_BODY; g->header = 1; }
  return g;
}

static Doc *doc_of(Node *x, int ctx) {
  Doc *d;
  switch (x->type) {
    case N_ATOM:
      d = doc_new(x->text, NULL);
      return ctx == C_EVAL && x->symbol ? prefixed("'", d) : d;
    case N_HASH: case N_INSTANCE:
      d = constructor(x);
      return ctx == C_BACKQUOTED ? prefixed(",", d) : d;
    case N_VECTOR: case N_STRUCT: {
      int inner = ctx == C_CODE ? C_CODE : C_QUOTED;
      d = doc_new(x->type == N_VECTOR ? "#(" : "#S(", ")");
      if (x->type == N_STRUCT) d = doc_add(d, doc_new(x->text, NULL));
      for (size_t i = 0; d && i < x->nkids; i++) d = doc_add(d, doc_of(x->kids[i], inner));
      if (d) d->style = x->type == N_VECTOR ? S_DATA : S_PAIRS;
      return d;
    }
    default: {  /* a list */
      int inner = ctx;
      const char *prefix = "";
      if (ctx == C_EVAL) {
        inner = x->built ? C_BACKQUOTED : C_QUOTED;
        prefix = x->built ? "`" : "'";
      }
      d = doc_new("(", ")");
      for (size_t i = 0; d && i < x->nkids; i++) d = doc_add(d, doc_of(x->kids[i], inner));
      if (d && x->tail) {
        d = doc_add(d, doc_new(".", NULL));
        d = doc_add(d, doc_of(x->tail, inner));
      }
      if (d) {
        d->style = S_DATA;
        if (ctx == C_CODE && x->nkids && x->kids[0]->type == N_ATOM) {
          d->header = body_header(x->kids[0]->text);
          d->style = d->header >= 0 ? S_BODY : S_CALL;
        }
      }
      return prefixed(prefix, d);
    }
  }
}

/* ------------------------------------------------------------- layout */

static size_t measure(Doc *d) {
  size_t n = strlen(d->text);
  if (d->close) {
    n += strlen(d->close);
    for (size_t i = 0; i < d->nitems; i++) n += measure(d->items[i]) + (i ? 1 : 0);
  }
  d->flat = n;
  return n;
}

static void put_flat(jt_Buf *b, Doc *d) {
  jt_buf_puts(b, d->text);
  if (!d->close) return;
  for (size_t i = 0; i < d->nitems; i++) {
    if (i) jt_buf_putc(b, ' ');
    put_flat(b, d->items[i]);
  }
  jt_buf_puts(b, d->close);
}

static void newline(jt_Buf *b, size_t col) {
  jt_buf_putc(b, '\n');
  for (size_t i = 0; i < col; i++) jt_buf_putc(b, ' ');
}

/* Lay d out starting at column col; the column after it. */
static size_t lay(jt_Buf *b, Doc *d, size_t col, size_t width) {
  if (!d->close || !d->nitems || !width || col + d->flat <= width) {
    put_flat(b, d);
    return col + d->flat;
  }
  jt_buf_puts(b, d->text);
  size_t open = col + strlen(d->text), c = open, from;
  if (d->style == S_DATA || (d->style == S_CALL && d->items[0]->close)) {
    /* one item per line, under the first */
    for (size_t i = 0; i < d->nitems; i++) {
      if (i) newline(b, open);
      c = lay(b, d->items[i], open, width);
    }
  } else {
    /* the head (and a body form's header items) on the first line */
    size_t keep = d->style == S_BODY ? 1 + (size_t)d->header : d->style == S_PAIRS ? 1 : 2;
    size_t indent = d->style == S_CALL ? open + d->items[0]->flat + 1 : d->style == S_PAIRS ? open : col + 2;
    if (d->style == S_CALL && indent > col + width / 2) indent = col + 2;  /* a long head */
    for (from = 0; from < d->nitems && from < keep; from++) {
      if (from) jt_buf_putc(b, ' '), c++;
      c = lay(b, d->items[from], c, width);
    }
    for (size_t i = from; i < d->nitems; i++) {
      newline(b, indent);
      c = lay(b, d->items[i], indent, width);
      if (d->style == S_PAIRS && i + 1 < d->nitems) {  /* a slot and its value */
        jt_buf_putc(b, ' ');
        c = lay(b, d->items[++i], c + 1, width);
      }
    }
  }
  jt_buf_puts(b, d->close);
  return c + strlen(d->close);
}

/* ------------------------------------------------------------- entries */

typedef struct Parts { Pool pool; Node *a, *b, *cells, *package; Doc *doc; } Parts;

/* The entry's document: its source form, a variable as DEFPARAMETER /
** DEFCONSTANT name, a data row as (WORLD-PUT key value) — or, without a
** name, a variable's or a row's value alone.  A class is its DEFCLASS form;
** with a name, p->cells holds the values of its :class slots, which
** jt_describe writes as comment lines after it, as it writes the package a
** structure was defined in when the entry names one. */
static Doc *entry_doc(Reader *r, Parts *p, const char *name) {
  if (r->n < 1) broken(r, "empty entry encoding");
  char tag = (char)r->p[r->pos++];
  Doc *d = NULL;
  switch (tag) {
    case 'F':
      p->a = read_value(r);
      /* a structure defined in another package than COMMON-LISP-USER:
      ** its name, written as a comment line after the form */
      if (r->pos < r->n) p->package = read_value(r);
      return doc_of(p->a, C_CODE);
    case 'C':  /* the DEFCLASS form, then ((slot . value) ...) */
      p->a = read_value(r);
      p->b = read_value(r);
      if (name) p->cells = p->b;
      return doc_of(p->a, C_CODE);
    case 'V': case 'K':
      p->a = read_value(r);
      if (!name) return doc_of(p->a, C_EVAL);
      d = doc_new("(", ")");
      d = doc_add(d, doc_new(tag == 'K' ? "DEFCONSTANT" : "DEFPARAMETER", NULL));
      d = doc_add(d, doc_new(name, NULL));
      d = doc_add(d, doc_of(p->a, C_EVAL));
      break;
    case 'Q': case 'R':  /* a data row (Q: with its position, which the text leaves out) */
      if (tag == 'Q') uleb(r);
      p->a = read_value(r);
      p->b = read_value(r);
      if (!name) return doc_of(p->b, C_EVAL);
      d = doc_new("(", ")");
      d = doc_add(d, doc_new("WORLD-PUT", NULL));
      d = doc_add(d, doc_of(p->a, C_EVAL));
      d = doc_add(d, doc_of(p->b, C_EVAL));
      break;
    default:
      broken(r, "unknown entry tag");
  }
  if (d) { d->style = S_BODY; d->header = 1; }
  return d;
}

/* A file of the world's file table ('P': its write date, then its octets):
** a comment line naming it, then its text when the octets are UTF-8 text
** (so that jiti diff shows the lines that changed), else their count. */
static char *describe_file(const unsigned char *bytes, size_t len, const char *name) {
  size_t pos = 1;
  uint64_t date = 0;
  for (int shift = 0; pos < len && shift < 64; shift += 7) {
    date |= (uint64_t)(bytes[pos] & 0x7F) << shift;
    if (!(bytes[pos++] & 0x80)) break;
  }
  const unsigned char *o = bytes + pos;
  size_t n = len - pos;
  bool text = true;
  for (size_t i = 0; i < n && text;) {
    unsigned char c = o[i];
    size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (k == 0 || i + k > n || (c < 0x20 && c != '\n' && c != '\t' && c != '\r')) text = false;
    for (size_t j = 1; text && j < k; j++)
      if ((o[i + j] & 0xC0) != 0x80) text = false;
    i += k ? k : 1;
  }
  jt_Buf b = {0};
  /* universal time: seconds since 1900 */
  time_t t = (time_t)((int64_t)date - 2208988800LL);
  struct tm tm;
  char when[32] = "?";
  if (date && gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  if (name) jt_buf_printf(&b, ";; file %s, %zu octets, written %s", name, n, when);
  else jt_buf_printf(&b, ";; %zu octets, written %s", n, when);
  if (text && n) {
    jt_buf_putc(&b, '\n');
    jt_buf_put(&b, (const char *)o, n);
  } else if (n) {
    jt_buf_puts(&b, "\n;; (binary)");
  }
  return jt_buf_cstr(&b);
}

char *jt_describe(jt_State *S, const unsigned char *bytes, size_t len, const char *name, int width,
                  void **scratch) {
  if (len > 0 && bytes[0] == 'P') {
    *scratch = NULL;
    char *t = describe_file(bytes, len, name);
    if (!t) no_memory(S);
    return t;
  }
  Parts *p = calloc(1, sizeof *p);
  if (!p) no_memory(S);
  *scratch = p;  /* freed by jt_describe_free, also when an error unwinds past here */
  Reader r = {S, bytes, len, 0, 0, &p->pool};
  p->doc = entry_doc(&r, p, name);
  if (r.pos != len) broken(&r, "trailing bytes");
  if (!p->doc) no_memory(S);
  measure(p->doc);
  jt_Buf b = {0};
  lay(&b, p->doc, 0, width > 0 ? (size_t)width : 0);
  if (p->package) jt_buf_printf(&b, "\n;; defined in the package %s", p->package->text);
  Node *cells = p->cells && p->cells->type == N_LIST ? p->cells : NULL;
  for (size_t i = 0; cells && i < cells->nkids; i++) {
    Node *c = cells->kids[i];  /* (slot . value) */
    if (c->type != N_LIST || c->nkids < 1) continue;
    Node rest = *c;            /* the value: the cell's tail, or the rest of it when it is a list */
    rest.kids = c->kids + 1;
    rest.nkids = c->nkids - 1;
    Node *value = c->nkids == 1 ? c->tail : &rest;
    jt_buf_printf(&b, "\n;; :class slot %s ", c->kids[0]->text);
    if (value && value->unbound) {
      jt_buf_puts(&b, "is unbound");
    } else {
      Doc *v = value ? doc_of(value, C_EVAL) : doc_new("NIL", NULL);
      if (!v) no_memory(S);
      measure(v);
      jt_buf_puts(&b, "= ");
      lay(&b, v, 0, 0);
      doc_free(v);
    }
  }
  return jt_buf_cstr(&b);  /* a string holding NUL stays whole */
}

void jt_describe_free(void *scratch) {
  Parts *p = scratch;
  if (!p) return;
  pool_free(&p->pool);
  doc_free(p->doc);
  free(p);
}
