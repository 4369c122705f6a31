/*
** pretty.c — the pretty printer's streams and its layout (Waters' XP
** algorithm, as CLHS 22.2 describes it).
**
** A logical block started on an ordinary stream opens a pretty stream: a
** string output stream (flag JT_STREAM_PRETTY) that captures the block's
** text flat while a list of operations records, at their positions in the
** text, where blocks start and end, the conditional newlines, the
** indentation changes and the tabs.  Nested blocks, and the printer's own
** lists and vectors under *print-pretty*, add to the same capture.  When
** the outermost block ends, jt_pretty_layout decides the line breaks over
** the whole text and the result goes to the original stream.
**
** Having the whole text at hand, the layout decides each break exactly as
** XP's queue does once it knows enough: a logical block whose section (its
** text and what follows it up to the next newline of an enclosing block)
** fits on the line is copied as one literal; otherwise its linear newlines
** break, its fill newlines break when their section does not fit or the
** previous section took more than one line, its miser newlines break in
** miser style.  A newline character written into a block is a literal
** newline: it breaks and repeats the per-line prefixes.  Past
** *print-lines* lines the output ends with " .." and the open blocks'
** suffixes.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_eval.h"

/* ---------------------------------------------------------------- layout */

typedef struct Frame {
  size_t start_col;      /* column just after the block's prefix */
  size_t per_line_end;   /* prefix columns that repeat on literal newlines */
  size_t prefix_len;     /* current indentation */
  size_t section_line;   /* output line its current section started on */
  size_t end_op;         /* index of its END operation (nops: none) */
} Frame;

typedef struct Out {
  uint32_t *p;
  size_t n, cap, max;
  size_t col;
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
  o->col = c == '\n' ? 0 : o->col + 1;
  return true;
}

static bool is_newline(int kind)
{
  return kind >= JT_PP_LINEAR && kind <= JT_PP_LITERAL;
}

static bool is_tab(int kind)
{
  return kind >= JT_PP_TAB_LINE && kind <= JT_PP_TAB_SECTION_REL;
}

/* Spaces a tab writes at `col` (the section starting at column `sect`). */
static size_t tab_size(const jt_PPOp *t, size_t sect, size_t col)
{
  bool section = t->kind == JT_PP_TAB_SECTION || t->kind == JT_PP_TAB_SECTION_REL;
  bool relative = t->kind == JT_PP_TAB_LINE_REL || t->kind == JT_PP_TAB_SECTION_REL;
  intptr_t colnum = t->a, colinc = t->b;
  intptr_t origin = section ? (intptr_t)sect : 0;
  intptr_t pos = (intptr_t)col - origin;
  if (relative) {
    if (colinc > 1) {
      intptr_t rem = (pos + colnum) % colinc;
      if (rem) colnum += colinc - rem;
    }
    return colnum > 0 ? (size_t)colnum : 0;
  }
  if (pos < colnum) return (size_t)(colnum - pos);
  if (colinc == 0) return 0;
  return (size_t)(colinc - (pos - colnum) % colinc);
}

typedef struct Layout {
  const uint32_t *text;
  size_t n;
  jt_PPOp *ops;
  size_t nops;
  size_t *send;          /* per op: the text position its section ends at */
  const jt_PPOptions *opt;
  Out o;
  Frame *frames;
  size_t nframes;
  uint32_t *prefix;      /* what starts each continuation line */
  size_t prefix_cap;
  size_t lines;          /* newlines the layout wrote */
  size_t sect_col;       /* column of the last section start (for tabs) */
  bool done;             /* *print-lines* reached */
  bool ok;
} Layout;

/* Would the text from the current point (text position i, the next
** operation op) to position `end` fit on the current line? */
static bool fits(const Layout *L, size_t i, size_t op, size_t end)
{
  size_t col = L->o.col, sect = L->sect_col, width = L->opt->width;
  for (size_t p = i; p < end; p++) {
    for (; op < L->nops && L->ops[op].pos == p; op++) {
      const jt_PPOp *x = &L->ops[op];
      if (x->kind == JT_PP_MANDATORY || x->kind == JT_PP_LITERAL) return false;
      if (is_tab(x->kind)) col += tab_size(x, sect, col);
      else if (is_newline(x->kind) || x->kind == JT_PP_START) sect = col;
    }
    col++;
    if (col > width) return false;
  }
  return col <= width;
}

static bool prefix_room(Layout *L, size_t n)
{
  if (n <= L->prefix_cap) return true;
  size_t cap = L->prefix_cap ? L->prefix_cap : 64;
  while (cap < n) cap *= 2;
  uint32_t *p = realloc(L->prefix, cap * sizeof *p);
  if (!p) return false;
  for (size_t k = L->prefix_cap; k < cap; k++) p[k] = ' ';
  L->prefix = p;
  L->prefix_cap = cap;
  return true;
}

static void set_indentation(Layout *L, intptr_t column)
{
  Frame *f = &L->frames[L->nframes - 1];
  size_t col = column < 0 ? 0 : (size_t)column;
  if (col < f->per_line_end) col = f->per_line_end;
  if (!prefix_room(L, col)) { L->ok = false; return; }
  for (size_t k = f->prefix_len; k < col; k++) L->prefix[k] = ' ';
  f->prefix_len = col;
}

static bool misering(const Layout *L)
{
  if (L->opt->miser < 0 || !L->nframes) return false;
  size_t start = L->frames[L->nframes - 1].start_col;
  return start >= L->opt->width || L->opt->width - start <= (size_t)L->opt->miser;
}

/* Break the line at a taken newline. */
static void output_line(Layout *L, bool literal)
{
  Frame *f = &L->frames[L->nframes - 1];
  Out *o = &L->o;
  if (!literal) {
    size_t keep = o->n;
    while (keep > 0 && o->p[keep - 1] == ' ' && o->col > 0) { keep--; o->col--; }
    o->n = keep;
  }
  L->lines++;
  if (L->opt->lines >= 0 && L->lines >= (size_t)L->opt->lines) {
    /* " .." and the suffixes of the open blocks, innermost first */
    for (const char *s = " .."; *s && L->ok; s++) L->ok = put(o, (uint32_t)*s);
    for (size_t k = L->nframes; k-- > 0 && L->ok;) {
      size_t e = L->frames[k].end_op;
      if (e >= L->nops) continue;
      const jt_PPOp *end = &L->ops[e];
      for (intptr_t c = 0; c < end->a && L->ok; c++) L->ok = put(o, L->text[end->pos + (size_t)c]);
    }
    L->done = true;
    return;
  }
  L->ok = put(o, '\n');
  size_t np = literal ? f->per_line_end : f->prefix_len;
  if (L->ok && !prefix_room(L, np)) L->ok = false;
  for (size_t k = 0; k < np && L->ok; k++) L->ok = put(o, L->prefix[k]);
  if (!literal) f->section_line = L->lines;
  L->sect_col = o->col;
}

/* Section ends: a block start's or a newline's section ends at the next
** newline of the same or an enclosing block, or at the end of the text.
** The operations still waiting for theirs are kept in a list per depth
** (head[d], linked through link[]): a newline at depth d ends every
** waiting section at depth d or deeper, so each operation is settled once
** and each depth looked at once per newline that empties it -- linear
** however deep the nesting. */
static bool section_ends(Layout *L, size_t *end_op)
{
  const size_t NONE = SIZE_MAX;
  size_t nops = L->nops;
  size_t *link = malloc((nops + 1) * sizeof *link);
  size_t *head = malloc((nops + 2) * sizeof *head);
  size_t *bstack = malloc((nops + 1) * sizeof *bstack);
  if (!link || !head || !bstack) {
    free(link); free(head); free(bstack);
    return false;
  }
  for (size_t d = 0; d < nops + 2; d++) head[d] = NONE;
  size_t depth = 0, top = 0, nb = 0;
  for (size_t i = 0; i < nops; i++) {
    int kind = L->ops[i].kind;
    end_op[i] = nops;
    if (kind == JT_PP_END) {
      if (depth) depth--;
      if (nb) end_op[bstack[--nb]] = i;
      continue;
    }
    if (is_newline(kind)) {
      for (size_t d = top + 1; d-- > depth;) {
        for (size_t k = head[d]; k != NONE; k = link[k]) L->send[k] = L->ops[i].pos;
        head[d] = NONE;
      }
      top = depth;
    }
    if (kind == JT_PP_START || is_newline(kind)) {
      link[i] = head[depth];
      head[depth] = i;
      if (depth > top) top = depth;
    }
    if (kind == JT_PP_START) {
      bstack[nb++] = i;
      depth++;
    }
  }
  for (size_t d = 0; d <= top; d++)
    for (size_t k = head[d]; k != NONE; k = link[k]) L->send[k] = L->n;
  free(link);
  free(head);
  free(bstack);
  return true;
}

/* The operations with the text's newline characters merged in as
** literal newlines (those inside a block). */
static jt_PPOp *merge_literals(const uint32_t *text, size_t n, const jt_PPOp *ops,
                               size_t nops, size_t *outn)
{
  size_t extra = 0;
  for (size_t i = 0; i < n; i++) extra += text[i] == '\n';
  jt_PPOp *m = malloc((nops + extra + 1) * sizeof *m);
  if (!m) return NULL;
  size_t k = 0, j = 0, depth = 0;
  for (size_t i = 0; i <= n; i++) {
    for (; j < nops && ops[j].pos <= i; j++) {
      m[k++] = ops[j];
      if (ops[j].kind == JT_PP_START) depth++;
      else if (ops[j].kind == JT_PP_END && depth) depth--;
    }
    if (i < n && text[i] == '\n' && depth)
      m[k++] = (jt_PPOp){JT_PP_LITERAL, i, 0, 0};
  }
  *outn = k;
  return m;
}

uint32_t *jt_pretty_layout(const uint32_t *text, size_t n, const jt_PPOp *ops0,
                           size_t nops0, const jt_PPOptions *opt, size_t *outlen)
{
  Layout L;
  memset(&L, 0, sizeof L);
  L.text = text;
  L.n = n;
  L.opt = opt;
  L.o.max = opt->max;
  L.o.col = opt->col0;
  L.ok = true;
  L.ops = merge_literals(text, n, ops0, nops0, &L.nops);
  size_t *end_op = NULL;
  if (!L.ops) L.ok = false;
  if (L.ok) {
    L.send = malloc((L.nops + 1) * sizeof *L.send);
    end_op = malloc((L.nops + 1) * sizeof *end_op);
    L.frames = malloc((L.nops + 1) * sizeof *L.frames);
    L.ok = L.send && end_op && L.frames && section_ends(&L, end_op);
  }
  L.sect_col = opt->col0;
  size_t op = 0, literal_until = SIZE_MAX;   /* END op of a block copied as is */
  for (size_t i = 0; L.ok && !L.done && i <= n && L.o.n < L.o.max; i++) {
    bool consumed = false;
    for (; L.ok && !L.done && op < L.nops && L.ops[op].pos == i; op++) {
      jt_PPOp *x = &L.ops[op];
      if (literal_until != SIZE_MAX) {
        /* inside a block that fits: only its tabs matter */
        if (is_tab(x->kind)) {
          size_t k = tab_size(x, L.sect_col, L.o.col);
          while (k-- && L.ok) L.ok = put(&L.o, ' ');
        } else if (is_newline(x->kind) || x->kind == JT_PP_START) {
          L.sect_col = L.o.col;
        }
        if (op == literal_until) literal_until = SIZE_MAX;
        continue;
      }
      switch (x->kind) {
      case JT_PP_START:
        if (fits(&L, i, op + 1, L.send[op]) && end_op[op] < L.nops) {
          literal_until = end_op[op];
          L.sect_col = L.o.col;
          break;
        } else {
          Frame *f = &L.frames[L.nframes];
          const Frame *up = L.nframes ? &L.frames[L.nframes - 1] : NULL;
          f->start_col = L.o.col;
          f->per_line_end = up ? up->per_line_end : 0;
          f->prefix_len = up ? up->prefix_len : 0;
          f->section_line = L.lines;
          f->end_op = end_op[op];
          L.nframes++;
          set_indentation(&L, (intptr_t)L.o.col);
          if (x->a > 0 && L.ok) {
            /* the per-line prefix: the text just before this operation */
            size_t len = (size_t)x->a, col = L.o.col;
            if (len > col) len = col;
            for (size_t k = 0; k < len; k++) L.prefix[col - len + k] = text[i - len + k];
            f->per_line_end = col;
          }
          L.sect_col = L.o.col;
        }
        break;
      case JT_PP_END:
        if (L.nframes) {
          Frame *old = &L.frames[--L.nframes];
          if (L.nframes) {
            Frame *f = &L.frames[L.nframes - 1];
            if (f->prefix_len > old->prefix_len) {
              if (!prefix_room(&L, f->prefix_len)) { L.ok = false; break; }
              for (size_t k = old->prefix_len; k < f->prefix_len; k++) L.prefix[k] = ' ';
            }
          }
        }
        break;
      case JT_PP_INDENT_BLOCK:
      case JT_PP_INDENT_CURRENT:
        if (L.nframes && !misering(&L)) {
          intptr_t base = x->kind == JT_PP_INDENT_BLOCK
                              ? (intptr_t)L.frames[L.nframes - 1].start_col
                              : (intptr_t)L.o.col;
          set_indentation(&L, base + x->a);
        }
        break;
      default:
        if (is_tab(x->kind)) {
          size_t k = tab_size(x, L.sect_col, L.o.col);
          while (k-- && L.ok) L.ok = put(&L.o, ' ');
          break;
        }
        if (!L.nframes) break;
        bool brk;
        switch (x->kind) {
        case JT_PP_LINEAR: case JT_PP_MANDATORY: case JT_PP_LITERAL: brk = true; break;
        case JT_PP_MISER: brk = misering(&L); break;
        default:   /* fill */
          brk = misering(&L) || L.lines > L.frames[L.nframes - 1].section_line ||
                !fits(&L, i, op + 1, L.send[op]);
          break;
        }
        if (brk) {
          output_line(&L, x->kind == JT_PP_LITERAL);
          if (x->kind == JT_PP_LITERAL) consumed = true;
        } else {
          L.sect_col = L.o.col;
        }
        break;
      }
    }
    if (L.ok && !L.done && i < n && !consumed) L.ok = put(&L.o, text[i]);
  }
  free(L.ops);
  free(L.send);
  free(end_op);
  free(L.frames);
  free(L.prefix);
  if (L.ok && !L.o.p) L.ok = (L.o.p = malloc(sizeof *L.o.p)) != NULL;   /* empty text */
  if (!L.ok) {
    free(L.o.p);
    return NULL;
  }
  *outlen = L.o.n;
  return L.o.p;
}

/* --------------------------------------------------------- pretty streams */

/* The state of a pretty stream, a simple vector: the stream its text goes
** to, the operations, how many, the blocks open, and under *print-circle*
** the printer's table of what the outermost block's object shares (its
** storage vector and capacity) and the last label given. */
enum { PP_TARGET, PP_OPS, PP_NOPS, PP_DEPTH, PP_CIRCLE, PP_CIRCLE_CAP, PP_LABELS, PP_SIZE };
#define OP_WORDS 4   /* kind, position, a, b: fixnums in the PP_OPS vector */

bool jt_pretty_stream_p(jt_V stream)
{
  return jt_is(stream, JT_TSTREAM) && (jt_o(stream)->flags & JT_STREAM_PRETTY) &&
         jt_isvector(jt_stream_(stream)->pretty);
}

static jt_V *pp_state(jt_V stream)
{
  return jt_vec_(jt_stream_(stream)->pretty)->items;
}

/* Record an operation at the current end of the captured text, `pending`
** characters on (the printer's, not written yet). */
static void pp_record_at(jt_State *S, jt_V stream, int kind, intptr_t a, intptr_t b,
                         size_t pending)
{
  JT_ROOT(S, stream);
  jt_V *st = pp_state(stream);
  size_t nops = (size_t)jt_fixval(st[PP_NOPS]);
  jt_V ops = st[PP_OPS];
  if ((nops + 1) * OP_WORDS > jt_vec_(ops)->len) {
    jt_V bigger = jt_make_vector(S, 2 * jt_vec_(ops)->len, jt_mkfix(0));
    ops = pp_state(stream)[PP_OPS];
    memcpy(jt_vec_(bigger)->items, jt_vec_(ops)->items, nops * OP_WORDS * sizeof(jt_V));
    JT_SET(S, jt_stream_(stream)->pretty, jt_vec_(jt_stream_(stream)->pretty)->items[PP_OPS], bigger);
    ops = bigger;
    st = pp_state(stream);
  }
  jt_V *w = jt_vec_(ops)->items + nops * OP_WORDS;
  w[0] = jt_mkfix(kind);
  w[1] = jt_mkfix((intptr_t)(jt_str_(jt_stream_(stream)->buffer)->len + pending));
  w[2] = jt_mkfix(a);
  w[3] = jt_mkfix(b);
  st[PP_NOPS] = jt_mkfix((intptr_t)nops + 1);
  JT_UNROOT(S, 1);
}

static void pp_record(jt_State *S, jt_V stream, int kind, intptr_t a, intptr_t b)
{
  pp_record_at(S, stream, kind, a, b, 0);
}

void jt_pp_op_pending(jt_State *S, jt_V stream, int kind, intptr_t a, size_t pending)
{
  if (!jt_pretty_stream_p(stream) || jt_fixval(pp_state(stream)[PP_DEPTH]) == 0) return;
  pp_record_at(S, stream, kind, a, 0, pending);
}

bool jt_pp_nest(jt_State *S, jt_V stream, size_t pending)
{
  if (!jt_pretty_stream_p(stream)) return false;
  intptr_t depth = jt_fixval(pp_state(stream)[PP_DEPTH]);
  if (depth < 1) return false;
  pp_record_at(S, stream, JT_PP_START, 0, 0, pending);
  pp_state(stream)[PP_DEPTH] = jt_mkfix(depth + 1);
  return true;
}

bool jt_pp_unnest(jt_State *S, jt_V stream, size_t suffix_len, size_t pending)
{
  if (!jt_pretty_stream_p(stream)) return false;
  intptr_t depth = jt_fixval(pp_state(stream)[PP_DEPTH]);
  if (depth < 2) return false;
  pp_record_at(S, stream, JT_PP_END, (intptr_t)suffix_len, 0, pending);
  pp_state(stream)[PP_DEPTH] = jt_mkfix(depth - 1);
  return true;
}

jt_V jt_pp_begin(jt_State *S, jt_V stream, const uint32_t *prefix, size_t plen,
                 bool per_line)
{
  JT_ROOT(S, stream);
  if (!jt_pretty_stream_p(stream)) {
    jt_V target = stream;
    JT_ROOT(S, target);
    stream = jt_make_string_stream(S);
    jt_o(stream)->flags |= JT_STREAM_PRETTY;
    jt_stream_(stream)->column = jt_stream_(target)->column;
    jt_V st = jt_make_vector(S, PP_SIZE, jt_mkfix(0));
    jt_vec_(st)->items[PP_CIRCLE] = JT_NIL;
    jt_stream_(stream)->pretty = st;   /* fresh: no barrier */
    jt_V ops = jt_make_vector(S, 16 * OP_WORDS, jt_mkfix(0));
    jt_vec_(st)->items[PP_OPS] = ops;   /* st is fresh */
    jt_vec_(st)->items[PP_TARGET] = target;
    JT_UNROOT(S, 1);
  }
  if (plen) jt_stream_write(S, stream, prefix, plen);
  pp_record(S, stream, JT_PP_START, per_line ? (intptr_t)plen : 0, 0);
  jt_V *st = pp_state(stream);
  st[PP_DEPTH] = jt_mkfix(jt_fixval(st[PP_DEPTH]) + 1);
  JT_UNROOT(S, 1);
  return stream;
}

jt_V jt_pp_circle(jt_V stream, size_t *cap)
{
  if (!jt_pretty_stream_p(stream)) return JT_NIL;
  jt_V *st = pp_state(stream);
  *cap = (size_t)jt_fixval(st[PP_CIRCLE_CAP]);
  return st[PP_CIRCLE];
}

void jt_pp_set_circle(jt_State *S, jt_V stream, jt_V table, size_t cap, intptr_t labels)
{
  if (!jt_pretty_stream_p(stream)) return;
  jt_V state = jt_stream_(stream)->pretty;
  JT_SET(S, state, jt_vec_(state)->items[PP_CIRCLE], table);
  jt_vec_(state)->items[PP_CIRCLE_CAP] = jt_mkfix((intptr_t)cap);
  jt_vec_(state)->items[PP_LABELS] = jt_mkfix(labels);
}

intptr_t jt_pp_next_label(jt_V stream)
{
  jt_V *st = pp_state(stream);
  intptr_t n = jt_fixval(st[PP_LABELS]) + 1;
  st[PP_LABELS] = jt_mkfix(n);
  return n;
}

intptr_t jt_pp_labels(jt_V stream)
{
  return jt_pretty_stream_p(stream) ? jt_fixval(pp_state(stream)[PP_LABELS]) : 0;
}

size_t jt_pp_depth(jt_V stream)
{
  if (!jt_pretty_stream_p(stream)) return 0;
  return (size_t)jt_fixval(pp_state(stream)[PP_DEPTH]);
}

void jt_pp_op(jt_State *S, jt_V stream, int kind, intptr_t a, intptr_t b)
{
  if (!jt_pretty_stream_p(stream) || jt_fixval(pp_state(stream)[PP_DEPTH]) == 0) return;
  pp_record(S, stream, kind, a, b);
}

static void fix_var(jt_State *S, int sym, intptr_t dflt, intptr_t *out)
{
  jt_V v = jt_symobj(S, S->sym[sym])->value;
  *out = jt_isfix(v) && jt_fixval(v) >= 0 ? jt_fixval(v) : dflt;
}

/* Lay out the captured text and write it to the target. */
static void pp_flush(jt_State *S, jt_V stream)
{
  jt_V *st = pp_state(stream);
  jt_V target = st[PP_TARGET];
  JT_ROOT(S, stream);
  JT_ROOT(S, target);
  jt_PPOptions opt;
  intptr_t width, miser, lines;
  fix_var(S, JT_S_PRINT_RIGHT_MARGIN, 80, &width);
  fix_var(S, JT_S_PRINT_MISER_WIDTH, -1, &miser);
  fix_var(S, JT_S_PRINT_LINES, -1, &lines);
  jt_V readably = jt_symobj(S, JT_SYM(S, PRINT_READABLY))->value;
  if (readably != JT_NIL && readably != JT_UNBOUND) lines = -1;
  opt.width = width > 0 ? (size_t)width : 80;
  opt.miser = miser;
  opt.lines = lines;
  opt.col0 = jt_stream_(target)->column;
  /* no more than the target can take: what the output limit lets through,
  ** or a string as large as the heap limit (writing it trips the limit) */
  opt.max = SIZE_MAX;
  if (jt_o(target)->aux == JT_STREAM_HOST && S->limits.output)
    opt.max = (S->output_used < S->limits.output ? S->limits.output - S->output_used : 1) + 1;
  else if (S->limits.heap)
    opt.max = S->limits.heap / sizeof(uint32_t) + 1;
  size_t nops = (size_t)jt_fixval(st[PP_NOPS]);
  jt_PPOp *ops = malloc((nops + 1) * sizeof *ops);
  if (!ops) jt_error(S, "out of memory while printing");
  jt_V *w = jt_vec_(st[PP_OPS])->items;
  for (size_t i = 0; i < nops; i++) {
    ops[i].kind = (int)jt_fixval(w[i * OP_WORDS]);
    ops[i].pos = (size_t)jt_fixval(w[i * OP_WORDS + 1]);
    ops[i].a = jt_fixval(w[i * OP_WORDS + 2]);
    ops[i].b = jt_fixval(w[i * OP_WORDS + 3]);
  }
  jt_String *text = jt_str_(jt_stream_(stream)->buffer);
  size_t n;
  uint32_t *out = jt_pretty_layout(text->chars, text->len, ops, nops, &opt, &n);
  free(ops);
  if (!out) jt_error(S, "out of memory while printing");
  /* the stream is spent: later writes to it (a closure that kept it) go
  ** to the target unlaid */
  st[PP_NOPS] = jt_mkfix(0);
  /* writing may signal (a closed stream, a full string, a limit): the
  ** laid-out text is freed on the way out too */
  uint32_t *volatile keep = out;
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_UNWIND, JT_NIL);
  if (_setjmp(j.jb) != 0) {
    free(keep);
    jt_unwind_to(S, S->unwind_target, S->unwind_code);
  }
  jt_stream_write(S, target, out, n);
  jt_jmp_pop(S, &j);
  free(out);
  JT_UNROOT(S, 2);
}

jt_V jt_pp_end(jt_State *S, jt_V stream, const uint32_t *suffix, size_t slen)
{
  if (!jt_pretty_stream_p(stream)) return stream;
  jt_V *st = pp_state(stream);
  intptr_t depth = jt_fixval(st[PP_DEPTH]);
  if (depth <= 0) return stream;
  JT_ROOT(S, stream);
  pp_record(S, stream, JT_PP_END, (intptr_t)slen, 0);
  if (slen) jt_stream_write(S, stream, suffix, slen);
  st = pp_state(stream);
  st[PP_DEPTH] = jt_mkfix(depth - 1);
  jt_V res = stream;
  if (depth == 1) {
    pp_flush(S, stream);
    res = pp_state(stream)[PP_TARGET];
  }
  JT_UNROOT(S, 1);
  return res;
}

void jt_pp_reset_dispatch(jt_State *S)
{
  jt_Symbol *var = jt_symobj(S, JT_SYM(S, PRINT_PPRINT_DISPATCH));
  if (var->value == JT_UNBOUND) return;   /* before the library defines it */
  jt_V layout = jt_find_layout(S, jt_intern(S, "PPRINT-DISPATCH-TABLE"));
  if (layout == JT_NIL || jt_layout_(layout)->nslots != 1) return;
  jt_V cur = var->value;
  if (jt_isstruct(cur) && jt_struct_(cur)->layout == layout && jt_struct_(cur)->slots[0] == JT_NIL)
    return;
  jt_V fresh = jt_make_struct(S, layout, 1);
  jt_struct_(fresh)->slots[0] = JT_NIL;
  JT_SET(S, var, var->value, fresh);
}

/* A capture longer than what the output limit lets through is written at
** once, flat, since laying it out makes it no shorter: a circular list
** printed to the host ends at the output limit, not at the heap's. */
void jt_pp_check_size(jt_State *S, jt_V stream)
{
  if (!jt_pretty_stream_p(stream)) return;
  jt_V target = pp_state(stream)[PP_TARGET];
  if (!jt_is(target, JT_TSTREAM) || jt_o(target)->aux != JT_STREAM_HOST || !S->limits.output)
    return;
  size_t room = S->output_used < S->limits.output ? S->limits.output - S->output_used : 1;
  jt_String *text = jt_str_(jt_stream_(stream)->buffer);
  if (text->len > room) jt_stream_write(S, target, text->chars, text->len);
}

/* ------------------------------------------------------------- built-ins */

/* The index of `v` among the keywords `names` (NULL-terminated), or a
** type-error naming them. */
static int keyword_arg(jt_State *S, jt_V v, const char *const *names)
{
  jt_V members = JT_NIL;
  JT_ROOT(S, members);
  int found = -1, n = 0;
  for (; names[n]; n++)
    if (found < 0 && v == jt_intern_keyword(S, names[n])) found = n;
  if (found < 0) {
    while (n-- > 0) members = jt_cons(S, jt_intern_keyword(S, names[n]), members);
    members = jt_cons(S, JT_SYM(S, MEMBER), members);
    jt_type_error(S, v, members);
  }
  JT_UNROOT(S, 1);
  return found;
}

static intptr_t integer_arg(jt_State *S, jt_V v, bool real)
{
  if (jt_isfix(v) && (real || jt_fixval(v) >= 0)) return jt_fixval(v);
  if (real && jt_isreal(v)) {
    jt_V r = jt_funcall(S, jt_sym_(jt_intern(S, "ROUND"))->function, 1, v);
    if (jt_isfix(r)) return jt_fixval(r);
  }
  jt_type_error(S, v, real ? JT_SYM(S, REAL) : jt_list(S, 2, JT_SYM(S, INTEGER), jt_mkfix(0)));
}

static bool pretty_on(jt_State *S)
{
  jt_V p = jt_symobj(S, JT_SYM(S, PRINT_PRETTY))->value;
  return p != JT_NIL && p != JT_UNBOUND;
}

static jt_V opt_stream(jt_State *S, int argc, jt_V *argv, int i)
{
  return jt_output_stream(S, argc > i ? argv[i] : JT_NIL);
}

/* (pprint-newline kind &optional stream) */
JT_FN(f_pprint_newline)
{
  static const char *const kinds[] = {"LINEAR", "FILL", "MISER", "MANDATORY", NULL};
  int k = keyword_arg(S, argv[0], kinds);
  jt_V st = opt_stream(S, argc, argv, 1);
  if (pretty_on(S)) jt_pp_op(S, st, JT_PP_LINEAR + k, 0, 0);
  return JT_NIL;
}

/* (pprint-indent relative-to n &optional stream) */
JT_FN(f_pprint_indent)
{
  static const char *const kinds[] = {"BLOCK", "CURRENT", NULL};
  int k = keyword_arg(S, argv[0], kinds);
  intptr_t n = integer_arg(S, argv[1], true);
  jt_V st = opt_stream(S, argc, argv, 2);
  if (pretty_on(S)) jt_pp_op(S, st, JT_PP_INDENT_BLOCK + k, n, 0);
  jt_V nil = JT_NIL;
  return jt_values(S, 1, &nil);   /* not ROUND's two values */
}

/* (pprint-tab kind colnum colinc &optional stream) */
JT_FN(f_pprint_tab)
{
  static const char *const kinds[] = {"LINE", "SECTION", "LINE-RELATIVE", "SECTION-RELATIVE", NULL};
  int k = keyword_arg(S, argv[0], kinds);
  intptr_t colnum = integer_arg(S, argv[1], false);
  intptr_t colinc = integer_arg(S, argv[2], false);
  jt_V st = opt_stream(S, argc, argv, 3);
  if (pretty_on(S)) jt_pp_op(S, st, JT_PP_TAB_LINE + k, colnum, colinc);
  return JT_NIL;
}

static void string_arg(jt_State *S, jt_V v)
{
  if (v != JT_NIL && !jt_isstring(v)) jt_type_error(S, v, JT_SYM(S, STRING));
}

/* Write #n= or #n# before a block's object under *print-circle*; true
** for #n# (the object was printed before: no block). */
static bool circle_label(jt_State *S, jt_V stream, jt_V object)
{
  intptr_t n = jt_print_circle_mark(S, stream, object, true);
  if (n == 0) return false;
  char tmp[32];
  snprintf(tmp, sizeof tmp, n < 0 ? "#%ld#" : "#%ld=", (long)(n < 0 ? -n : n));
  jt_stream_puts(S, stream, tmp);
  return n < 0;
}

jt_V jt_pp_begin_object(jt_State *S, jt_V st, const uint32_t *prefix, size_t plen,
                        bool per_line, jt_V object)
{
  JT_ROOT(S, st);
  JT_ROOT(S, object);
  if (jt_symbol_value(S, JT_SYM(S, PRINT_CIRCLE)) != JT_NIL) {
    if (!jt_pretty_stream_p(st)) {
      /* the outermost block: a pretty stream with no block yet, that
      ** keeps the table of what the object shares */
      jt_V target = st;
      JT_ROOT(S, target);
      st = jt_pp_begin(S, st, NULL, 0, false);
      jt_print_circle_scan(S, st, object);
      pp_state(st)[PP_DEPTH] = jt_mkfix(0);
      pp_state(st)[PP_NOPS] = jt_mkfix(0);
      JT_UNROOT(S, 1);
    }
    if (circle_label(S, st, object)) {
      if (jt_pp_depth(st) == 0) pp_flush(S, st);
      JT_UNROOT(S, 2);
      return JT_NIL;
    }
  }
  st = jt_pp_begin(S, st, prefix, plen, per_line);
  JT_UNROOT(S, 2);
  return st;
}

/* (%pp-begin stream prefix per-line-p object): the pretty stream of a new
** block for OBJECT, or NIL when *print-circle* printed it as #n#. */
/* The arguments of %pp-begin and %pp-end that pass the text of a prefix or
** suffix: run() gets a private copy of STR's characters (the string may be
** the very one the stream writes to), freed however run() ends. */
typedef struct PpCall {
  jt_V stream, object;
  bool per_line;
  jt_V result;
} PpCall;

static void with_chars(jt_State *S, jt_V str, PpCall *c,
                       void (*run)(jt_State *S, PpCall *c, const uint32_t *cs, size_t n))
{
  size_t n = jt_str_(str)->len;
  uint32_t *buf = malloc((n + 1) * sizeof *buf);
  if (!buf) jt_error(S, "out of memory while printing");
  memcpy(buf, jt_str_(str)->chars, n * sizeof *buf);
  uint32_t *volatile keep = buf;
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_UNWIND, JT_NIL);
  if (_setjmp(j.jb) != 0) {
    free(keep);
    jt_unwind_to(S, S->unwind_target, S->unwind_code);
  }
  run(S, c, buf, n);
  jt_jmp_pop(S, &j);
  free(buf);
}

static void run_begin(jt_State *S, PpCall *c, const uint32_t *cs, size_t n)
{
  c->result = jt_pp_begin_object(S, c->stream, cs, n, c->per_line, c->object);
}

static void run_end(jt_State *S, PpCall *c, const uint32_t *cs, size_t n)
{
  jt_pp_end(S, c->stream, cs, n);
}

JT_FN(f_pp_begin)
{
  jt_V prefix = argv[1], object = argv[3];
  string_arg(S, prefix);
  jt_V st = jt_output_stream(S, argv[0]);
  if (!jt_isstring(prefix)) return jt_pp_begin_object(S, st, NULL, 0, false, object);
  PpCall c = {st, object, argv[2] != JT_NIL, JT_NIL};
  with_chars(S, prefix, &c, run_begin);
  return c.result;
}

/* (%pp-end stream suffix) */
JT_FN(f_pp_end)
{
  jt_V suffix = argv[1];
  string_arg(S, suffix);
  if (!jt_pretty_stream_p(argv[0])) return JT_NIL;
  if (!jt_isstring(suffix)) { jt_pp_end(S, argv[0], NULL, 0); return JT_NIL; }
  PpCall c = {argv[0], JT_NIL, false, JT_NIL};
  with_chars(S, suffix, &c, run_end);
  return JT_NIL;
}

/* (%pretty-stream-p object): the number of blocks open on a pretty
** stream, else NIL */
/* (%pp-circle-shared object stream): true when OBJECT is shared in the
** circle table of the logical blocks on STREAM */
JT_FN(f_pp_circle_shared)
{
  return jt_bool(jt_print_circle_mark(S, argv[1], argv[0], false) != 0);
}

JT_FN(f_pretty_stream_p)
{
  return jt_pretty_stream_p(argv[0]) ? jt_mkfix((intptr_t)jt_pp_depth(argv[0])) : JT_NIL;
}

static const jt_Reg pretty_fns[] = {
  {"PPRINT-NEWLINE", f_pprint_newline, 1, 2,
   "(pprint-newline kind &optional stream) A conditional newline (:linear "
   ":fill :miser :mandatory) in the current logical block."},
  {"PPRINT-INDENT", f_pprint_indent, 2, 3,
   "(pprint-indent relative-to n &optional stream) Indent the block's next "
   "lines N columns from its start (:block) or from here (:current)."},
  {"PPRINT-TAB", f_pprint_tab, 3, 4,
   "(pprint-tab kind colnum colinc &optional stream) Move to a column (:line "
   ":section :line-relative :section-relative) within a logical block."},
  {"%PP-BEGIN", f_pp_begin, 4, 4, "(%pp-begin stream prefix per-line-p object)"},
  {"%PP-END", f_pp_end, 2, 2, "(%pp-end stream suffix)"},
  {"%PP-CIRCLE-SHARED", f_pp_circle_shared, 2, 2, "(%pp-circle-shared object stream)"},
  {"%PRETTY-STREAM-P", f_pretty_stream_p, 1, 1, "(%pretty-stream-p object)"},
  {NULL, NULL, 0, 0, NULL}
};

/* Called from jt_open_print (print.c). */
void jt_open_pretty(jt_State *S)
{
  jt_register(S, pretty_fns);
}
