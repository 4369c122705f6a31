/*
** sexp.h — the s-expressions of SLIME's wire (docs/editor.md): a strict
** reader for what Emacs sends and a writer for what it reads.  Only what
** the wire carries: lists, symbols (keywords included), strings, integers,
** and 'x for (quote x).  Everything else (dotted pairs, floats, vectors,
** #-syntax) is refused: the wire never needs it, and a client that sends
** it gets its connection closed.
*/
#ifndef jiti_sexp_h
#define jiti_sexp_h

#include <stddef.h>
#include <stdint.h>

#define SX_DEPTH_MAX 64        /* nesting of lists: deeper is refused */
#define SX_NODES_MAX 100000    /* nodes in one message */

typedef enum { SX_LIST, SX_SYMBOL, SX_STRING, SX_INT } sx_Type;

typedef struct sx {
  sx_Type type;
  size_t len;          /* SX_LIST: items; SX_SYMBOL, SX_STRING: bytes */
  char *str;           /* SX_SYMBOL, SX_STRING: NUL-terminated (a string may hold NULs: len counts) */
  int64_t num;         /* SX_INT */
  struct sx **items;   /* SX_LIST */
} sx;

/* Read exactly one s-expression from text[0..n) (blanks may surround it).
** The tree, to free with sx_free; NULL with why in err (errlen bytes):
** malformed, too deep (SX_DEPTH_MAX), too many nodes, an integer out of
** range, text after the expression, bytes that are not UTF-8. */
sx *sx_read(const char *text, size_t n, char *err, size_t errlen);
void sx_free(sx *x);

/* ---- reading a tree (each tolerates NULL and the wrong type) */

/* Item i of a list, NULL past its end or for a non-list. */
sx *sx_at(const sx *x, size_t i);
/* 1 when x is the symbol named name, compared without case (Emacs sends
** swank:connection-info, the server's names are lower case). */
int sx_is(const sx *x, const char *name);
/* 1 for nil: the symbol nil or the empty list. */
int sx_nil(const sx *x);
/* The string (or symbol) text, or NULL. */
const char *sx_str(const sx *x);
/* The value of keyword `key` in the property list items[from..], or NULL. */
sx *sx_plist(const sx *x, size_t from, const char *key);

/* ---- writing: text Emacs reads back with `read` */

typedef struct sxw {
  char *buf;
  size_t len, cap;
  int oom;             /* an allocation failed: the text is incomplete */
  int depth;           /* lists open: to put blanks between items */
  int first;           /* the next item is the first of its list */
} sxw;

void sxw_init(sxw *w);
void sxw_free(sxw *w);
void sxw_open(sxw *w);                    /* ( */
void sxw_close(sxw *w);                   /* ) */
void sxw_sym(sxw *w, const char *name);   /* a symbol as given: :ok, nil, t */
void sxw_str(sxw *w, const char *s);      /* a string, escaped */
void sxw_strn(sxw *w, const char *s, size_t n);
void sxw_int(sxw *w, int64_t v);
void sxw_raw(sxw *w, const char *text);   /* text already in wire syntax (0.0) */
/* nil for NULL, else the string */
void sxw_str_or_nil(sxw *w, const char *s);

#endif
