/*
** pretty.c — line breaking for the pretty printer.
**
** The printer writes a list or vector flat, as without *print-pretty*, and
** marks where each list or vector opens and closes and where the spaces
** between its elements are.  This file lays that text out as SBCL's pretty
** printer does for data: the elements of a list are filled onto lines of
** at most the right margin, a list that goes on a new line is indented
** under its first element (one column after its parenthesis, two after
** "#(", or, for a function call, under its first argument).  Having the
** whole text at hand, the layout looks ahead exactly as Waters' algorithm
** does: a space between elements becomes a line break when the section
** that follows it (up to and including the next separating space, or to
** the end of the list) does not fit on the line, or when the element
** before it took more than one line.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"

typedef struct Frame {
  size_t indent;      /* column continuation lines start at */
  bool fits;          /* the block, up to its section's end, fits on the line */
  size_t sect_line;   /* line on which the current section started */
  size_t nsep;        /* separators seen */
  bool call;          /* function-call style: indent under the first argument */
} Frame;

typedef struct Out {
  uint32_t *p;
  size_t n, cap, max;
  size_t col, line;
} Out;

/* Append c; past `max` characters the text is cut (true: not an error). */
static bool put(Out *o, uint32_t c)
{
  if (o->n >= o->max) return true;
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 256;
    uint32_t *p = realloc(o->p, cap * sizeof *p);
    if (!p) return false;
    o->p = p;
    o->cap = cap;
  }
  o->p[o->n++] = c;
  if (c == '\n') { o->col = 0; o->line++; }
  else o->col++;
  return true;
}

uint32_t *jt_pretty_layout(const uint32_t *text, size_t n, const intptr_t *marks,
                           size_t nmarks, size_t col0, size_t width, size_t max,
                           size_t *outlen)
{
  /* end[i] for a separator or an opening: where its section ends -- just
  ** after the next separator at the same depth or an outer one (SBCL's
  ** section end), or n when there is none.  An opening's section is the
  ** whole block and what follows it up to that separator.  The marks
  ** still waiting for theirs are kept in a list per depth (head[d], linked
  ** through link[]): a separator at depth d ends every waiting section at
  ** depth d or deeper, so each mark is settled once and each depth looked
  ** at once per separator that empties it -- linear however deep the
  ** nesting (one list of all the waiting marks made it quadratic). */
  const size_t NONE = SIZE_MAX;
  size_t *end = malloc((nmarks + 1) * sizeof *end);
  size_t *link = malloc((nmarks + 1) * sizeof *link);
  size_t *head = malloc((nmarks + 2) * sizeof *head);
  Frame *frames = malloc((nmarks + 1) * sizeof *frames);
  Out o = {NULL, 0, 0, max, col0, 0};
  bool ok = end && link && head && frames;
  for (size_t d = 0; ok && d < nmarks + 2; d++) head[d] = NONE;
  size_t depth = 0, top = 0;   /* top: no list deeper than it waits */
  for (size_t i = 0; ok && i < nmarks; i++) {
    intptr_t kind = marks[2 * i];
    if (kind == JT_PP_CLOSE) {
      if (depth) depth--;
      continue;
    }
    if (kind == JT_PP_SEP || kind == JT_PP_LINEAR) {
      size_t at = (size_t)marks[2 * i + 1] + 1;
      for (size_t d = top + 1; d-- > depth;) {
        for (size_t k = head[d]; k != NONE; k = link[k]) end[k] = at;
        head[d] = NONE;
      }
      top = depth;
    }
    link[i] = head[depth];   /* it waits at the current depth */
    head[depth] = i;
    if (depth > top) top = depth;
    if (kind != JT_PP_SEP && kind != JT_PP_LINEAR) depth++;   /* an opening */
  }
  for (size_t d = 0; ok && d <= top; d++)
    for (size_t k = head[d]; k != NONE; k = link[k]) end[k] = n;
  size_t mi = 0;
  depth = 0;
  for (size_t i = 0; ok && i <= n && o.n < o.max; i++) {
    bool skip = false;
    for (; mi < nmarks && (size_t)marks[2 * mi + 1] == i; mi++) {
      intptr_t kind = marks[2 * mi];
      if (kind == JT_PP_OPEN || kind == JT_PP_OPEN_VEC || kind == JT_PP_OPEN_CALL) {
        Frame *f = &frames[depth++];
        f->fits = o.col + (end[mi] - i) <= width;
        f->indent = o.col + (kind == JT_PP_OPEN_VEC ? 2 : 1);
        f->sect_line = o.line;
        f->nsep = 0;
        f->call = kind == JT_PP_OPEN_CALL;
      } else if (kind == JT_PP_CLOSE) {
        if (depth) depth--;
      } else if (depth && i < n && text[i] == ' ') {
        Frame *f = &frames[depth - 1];
        /* a linear newline: taken when the block does not fit; a fill
        ** newline: when the section does not fit, or when the block's
        ** current section already took more than one line */
        bool brk = kind == JT_PP_LINEAR
                       ? !f->fits
                       : !f->fits && (o.col + (end[mi] - i) > width || o.line > f->sect_line);
        if (brk) {
          ok = put(&o, '\n');
          for (size_t k = 0; ok && k < f->indent; k++) ok = put(&o, ' ');
          f->sect_line = o.line;
        } else {
          ok = put(&o, ' ');
        }
        /* a call's arguments go under the first one (~:I after the
        ** operator's newline) */
        if (f->call && f->nsep == 0) f->indent = o.col;
        f->nsep++;
        skip = true;
      }
    }
    if (ok && i < n && !skip) ok = put(&o, text[i]);
  }
  free(end);
  free(link);
  free(head);
  free(frames);
  if (ok && !o.p) ok = (o.p = malloc(sizeof *o.p)) != NULL;   /* empty text */
  if (!ok) {
    free(o.p);
    return NULL;
  }
  *outlen = o.n;
  return o.p;
}
