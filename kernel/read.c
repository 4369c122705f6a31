/*
** read.c — the reader.
**
** A recursive-descent reader over UTF-8 source.  Positions are byte
** offsets; an error names the line and column instead (jt_reader_where),
** which a person can find.
**
** The kernel's reads of source (jt_read with a reader that is not a
** program's) always use the standard syntax and refuse #.: nothing may run
** before the form gate has seen a form.  A program's reads (READ,
** READ-FROM-STRING, ...: jt_Reader.program) honour *read-eval* and
** *readtable*.  The standard syntax is the fast path: a table lookup per
** ASCII character.  Any other readtable (55-io.lisp describes its table)
** takes the `custom` path, which asks the readtable for each character's
** syntax (cached per read for ASCII), folds case as readtable-case says,
** and calls reader macro functions with the stream being read.
**
** Tokens are scanned twice: a first pass finds their extent and shape
** (escapes, package markers, dots) without allocating, so that an error in
** an unfinished token leaves nothing behind; numbers are then parsed straight
** from the source bytes (a number token never contains escapes), and symbol
** names are built in a fresh Lisp string by the second pass.
**
** #+/#- skip their form with `suppress` set: the form is scanned for its
** extent only, so foreign syntax such as sb-ext:foo does not raise errors.
** Nesting depth is bounded so that "((((..." cannot exhaust the C stack.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"

#define MAX_DEPTH 5000
#define CSTACK_MARGIN (64 * 1024)

/* A readtable's case (readtable-case), in the order of case_names. */
typedef enum { RC_UPCASE, RC_DOWNCASE, RC_PRESERVE, RC_INVERT } RdCase;

/* The syntax types a custom readtable gives a character (readtable.lisp
** stores the first four as these fixnums; macro characters are conses
** and dispatching ones vectors). */
enum { SY_CONST, SY_WS, SY_CONSTITUENT, SY_SESC, SY_MESC, SY_TMACRO, SY_NMACRO, SY_UNKNOWN = 0xFF };

typedef struct Rd {
  jt_State *S;
  jt_Reader *R;
  bool keywords;   /* unqualified symbols are keywords (feature expressions) */
  bool suppress;   /* reading a form only to skip it */
  bool custom;     /* a program's read with a readtable other than the standard one */
  int bq;          /* backquote nesting: commas are legal when > 0 */
  int base;        /* *read-base* */
  RdCase rcase;    /* the readtable's case (custom only) */
  uint32_t delim;  /* read-delimited-list: its character also ends tokens */
  jt_V labels;     /* #n= labels: alist (n . object-or-placeholder), rooted */
  jt_V syntax;     /* custom: the readtable's table (character -> entry), rooted */
  jt_V stream;     /* the stream read (NIL: a buffer), for macro functions; rooted */
  unsigned char syn[128];   /* custom: the ASCII characters' syntax, as looked up */
} Rd;

#define SRC   (d->R->src)
#define LEN   (d->R->len)
#define POS   (d->R->pos)

static jt_V read_item(Rd *d);
static jt_V std_dispatch(Rd *d, uint32_t c, long arg, size_t start);

/* ------------------------------------------------------------- characters */

static bool at_end(Rd *d) { return POS >= LEN; }

/* The code point at byte `p`, its end in *np. */
static uint32_t char_at(Rd *d, size_t p, size_t *np)
{
  unsigned char b = (unsigned char)SRC[p];
  if (b < 0x80) { *np = p + 1; return b; }
  size_t i = p;
  /* a program's read decodes a surrogate as the Lisp string held it; the
  ** kernel's source is text from outside */
  uint32_t c = d->R->program ? jt_utf8_decode_lisp(SRC, LEN, &i) : jt_utf8_decode(SRC, LEN, &i);
  *np = i;
  return c;
}

/* The syntax of the ASCII characters that are not plain constituents
** (those are 0): one table lookup per character. */
enum { C_WS = 1, C_DELIM = 2, C_ESC = 4, C_COLON = 8, C_INVALID = 16 };
#define WS_ C_WS | C_DELIM
static const unsigned char ascii_class[128] = {
  ['\t'] = WS_, ['\n'] = WS_, ['\v'] = WS_, ['\f'] = WS_, ['\r'] = WS_, [' '] = WS_,
  ['('] = C_DELIM, [')'] = C_DELIM, ['\''] = C_DELIM, ['"'] = C_DELIM,
  [';'] = C_DELIM, ['`'] = C_DELIM, [','] = C_DELIM,
  ['|'] = C_ESC, ['\\'] = C_ESC, [':'] = C_COLON,
  ['\b'] = C_INVALID, [127] = C_INVALID,
};

/* Characters whose constituent trait is invalid: an unescaped one in a
** token is a reader error (whitespace made a constituent shows it). */
static bool invalid_trait(uint32_t c)
{
  return c == '\b' || c == 127 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}
#undef WS_

static bool is_ws(uint32_t c) { return c < 128 && (ascii_class[c] & C_WS); }

/* Whitespace or a terminating macro character: ends a token. */
static bool is_delim(uint32_t c) { return c < 128 && (ascii_class[c] & C_DELIM); }

/* Readtable case :upcase, for every character that has case. */
static uint32_t upcase(uint32_t c)
{
  if (c < 128) return c >= 'a' && c <= 'z' ? c - 32 : c;
  return jt_char_upcase(c);
}

/* ------------------------------------------------------------ readtables */

/* A program's read with a readtable other than the standard one (custom)
** asks these; every other read is the fast path above, whatever
** *readtable* holds (the kernel's reads of source always use the standard
** syntax). */

static int std_syntax(uint32_t c)
{
  if (c >= 128) return SY_CONSTITUENT;
  unsigned k = ascii_class[c];
  if (k & C_WS) return SY_WS;
  if (k & C_DELIM) return SY_TMACRO;
  return c == '\\' ? SY_SESC : c == '|' ? SY_MESC : c == '#' ? SY_NMACRO : SY_CONSTITUENT;
}

/* The readtable's entry for c, or JT_NOVALUE when c has its standard syntax. */
static jt_V entry_of(Rd *d, uint32_t c)
{
  if (d->syntax == JT_NIL) return JT_NOVALUE;
  bool found;
  jt_V e = jt_hash_get(d->S, d->syntax, jt_mkchar(c), &found);
  return found ? e : JT_NOVALUE;
}

static int entry_syntax(jt_V e, uint32_t c)
{
  if (e == JT_NOVALUE) return std_syntax(c);
  if (jt_isfix(e)) return jt_fixval(e) >= SY_WS && jt_fixval(e) <= SY_MESC ? (int)jt_fixval(e) : SY_CONSTITUENT;
  if (jt_iscons(e)) return jt_cdr(e) != JT_NIL ? SY_NMACRO : SY_TMACRO;
  if (jt_isvector(e) && jt_vec_(e)->len >= 3) return jt_vec_(e)->items[0] != JT_NIL ? SY_NMACRO : SY_TMACRO;
  return SY_CONSTITUENT;
}

static int syntax_of(Rd *d, uint32_t c)
{
  if (!d->custom) return std_syntax(c);
  if (c >= 128) return entry_syntax(entry_of(d, c), c);
  if (d->syn[c] == SY_UNKNOWN) d->syn[c] = (unsigned char)entry_syntax(entry_of(d, c), c);
  return d->syn[c];
}

/* Whitespace or a terminating macro character in this read's syntax. */
static bool ends_token(Rd *d, uint32_t c)
{
  if (!d->custom) return is_delim(c);
  int k = syntax_of(d, c);
  return k == SY_WS || k == SY_TMACRO;
}

static bool is_sesc(Rd *d, uint32_t c)
{
  return d->custom ? syntax_of(d, c) == SY_SESC : c == '\\';
}

void jt_reader_where(const jt_Reader *R, size_t pos, long *line, long *col)
{
  long l = R->line0 > 0 ? R->line0 : 1, c = 1;
  const unsigned char *p = (const unsigned char *)R->src;
  if (pos > R->len) pos = R->len;
  for (size_t i = 0; i < pos; i++) {
    if (p[i] == '\n') { l++; c = 1; }
    else if ((p[i] & 0xC0) != 0x80) c++;   /* a character's first byte */
  }
  /* the first line starts where the host's text starts in its origin */
  if (l == (R->line0 > 0 ? R->line0 : 1) && R->col0 > 1) c += R->col0 - 1;
  *line = l;
  *col = c;
}

/* Signal `type` at byte pos with the report what, placed as jt_read says. */
JT_NORETURN static void signal_at(Rd *d, jt_V type, size_t pos, const char *what)
{
  long line, col;
  jt_reader_where(d->R, pos, &line, &col);
  char msg[1200];
  if (d->R->origin) snprintf(msg, sizeof msg, "%s:%ld:%ld: %s", d->R->origin, line, col, what);
  else snprintf(msg, sizeof msg, "%s (at %ld:%ld)", what, line, col);
  jt_V stream = d->stream;
  if (stream == JT_NIL && d->R->program) {
    /* read-from-string reads its bytes directly: the condition's stream is
    ** one over the text, at the error */
    jt_V text = jt_string_from_utf8(d->S, SRC, LEN);
    size_t at = 0;
    for (size_t i = 0; i < pos && i < LEN; i++)
      if (((unsigned char)SRC[i] & 0xC0) != 0x80) at++;
    JT_PUSH(d->S, text);
    stream = jt_make_string_input_stream(d->S, text, at, jt_str_(text)->len);
    JT_POP(d->S, 1);
  }
  jt_reader_error(d->S, type, pos, msg, stream);
}

JT_NORETURN JT_PRINTF(3, 4) static void rd_error(Rd *d, size_t pos, const char *fmt, ...)
{
  char what[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  signal_at(d, JT_SYM(d->S, READER_ERROR), pos, what);
}

/* The text ended inside something opened at `start`: the error is at the
** end, and says where the unfinished thing began. */
JT_NORETURN static void eof_error(Rd *d, const char *what, size_t start)
{
  long line, col;
  jt_reader_where(d->R, start, &line, &col);
  char msg[300];
  snprintf(msg, sizeof msg, "end of file inside %s opened at %ld:%ld", what, line, col);
  signal_at(d, JT_SYM(d->S, END_OF_FILE), LEN, msg);
}

static void enter(Rd *d)
{
  if (++d->R->depth > MAX_DEPTH)
    rd_error(d, POS, "forms nested more than %d deep", MAX_DEPTH);
  jt_State *S = d->S;
  if (S->cstack_base && S->cstack_limit) {
    char here;
    char *base = S->cstack_base;
    size_t used = base > &here ? (size_t)(base - &here) : (size_t)(&here - base);
    if (used + CSTACK_MARGIN > S->cstack_limit)
      rd_error(d, POS, "forms nested too deeply");
  }
}

static void leave(Rd *d) { d->R->depth--; }

/* Skip #| ... |# (nested); POS is just past the opening "#|". */
static void skip_block_comment(Rd *d, size_t start)
{
  int level = 1;
  while (level > 0) {
    if (POS + 1 >= LEN) eof_error(d, "a #| comment", start);
    if (SRC[POS] == '|' && SRC[POS + 1] == '#') { level--; POS += 2; }
    else if (SRC[POS] == '#' && SRC[POS + 1] == '|') { level++; POS += 2; }
    else POS++;
  }
}

/* Skip whitespace and comments. */
static void skip_ws(Rd *d)
{
  if (d->custom) {
    /* comments are the macro characters ; and #| there (read_item) */
    size_t np;
    while (POS < LEN && syntax_of(d, char_at(d, POS, &np)) == SY_WS) POS = np;
    return;
  }
  const char *src = SRC;
  size_t len = LEN, p = POS;
  while (p < len) {
    char c = src[p];
    if (is_ws((unsigned char)c)) {
      p++;
    } else if (c == ';') {
      const char *nl = memchr(src + p, '\n', len - p);
      p = nl ? (size_t)(nl - src) : len;
    } else if (c == '#' && p + 1 < len && src[p + 1] == '|') {
      POS = p + 2;
      skip_block_comment(d, p);
      p = POS;
    } else {
      break;
    }
  }
  POS = p;
}

/* A lone unescaped dot at POS (as in (a . b)). */
static bool at_dot(Rd *d)
{
  if (POS >= LEN || SRC[POS] != '.') return false;
  if (POS + 1 >= LEN) return true;
  size_t np;
  return ends_token(d, char_at(d, POS + 1, &np));
}

/* The bytes of a closing parenthesis at POS (or a character with its
** syntax), or 0. */
static size_t at_close(Rd *d)
{
  if (!d->custom) return SRC[POS] == ')';
  size_t np;
  uint32_t c = char_at(d, POS, &np);
  jt_V e = entry_of(d, c);
  if (e == JT_NOVALUE ? c == ')' : jt_iscons(e) && jt_car(e) == jt_mkchar(')')) return np - POS;
  return 0;
}

/* ------------------------------------------------------------------ tokens */

enum { MAXC = 64 };
enum { F_UP, F_DOWN, F_NONE };   /* a name this long or shorter is encoded on the stack */

typedef struct Tok {
  size_t start, end;     /* bytes */
  size_t n;              /* characters, escapes removed */
  bool escaped;          /* some character was escaped: never a number */
  bool alldots;          /* only unescaped dots */
  bool digit;            /* some decimal digit: a number needs one in base <= 10 */
  bool plain;            /* at most MAXC characters, all ASCII, none escaped:
                            `text` holds them, upcased (sizing pass only) */
  int fold;              /* what the case of unescaped characters becomes */
  int ncolons;           /* unescaped package markers */
  size_t colon1;         /* character index of the first one */
  char text[MAXC];
} Tok;

/* Scan the token at t->start.  Characters with index in [lo, hi) go to
** out[i - lo] (out may be NULL for the sizing pass). */
static void scan_token(Rd *d, Tok *t, uint32_t *out, size_t lo, size_t hi)
{
  size_t p = t->start, i = 0;
  bool bar = false;
  t->escaped = false;
  t->alldots = true;
  t->digit = false;
  t->plain = false;
  t->ncolons = 0;
  t->colon1 = 0;
  bool upper = false, lower = false;
  if (!out) {
    t->fold = F_UP;
    if (d->custom) goto general;
    /* Most tokens are short plain ASCII: scanned (and upcased into text)
    ** here in one pass; anything else starts over below. */
    const unsigned char *src = (const unsigned char *)SRC;
    size_t len = LEN;
    uint32_t stop = d->delim;
    bool digit = false, nondot = false;
    for (;;) {
      if (p >= len) break;
      unsigned char c = src[p];
      if (c >= 128) goto general;
      if (c == stop && stop != 0) break;
      unsigned k = ascii_class[c];
      if (k) {
        if (k & C_DELIM) break;
        if (k & (C_ESC | C_INVALID)) goto general;
        if (t->ncolons++ == 0) t->colon1 = i;   /* C_COLON */
      }
      if (i == MAXC) goto general;
      if ((unsigned)(c - 'a') < 26) c = (unsigned char)(c - 32);
      else if ((unsigned)(c - '0') < 10) digit = true;
      nondot |= c != '.';
      t->text[i++] = (char)c;
      p++;
    }
    t->digit = digit;
    t->alldots = !nondot;
    t->plain = true;
    t->end = p;
    t->n = i;
    return;
  general:
    p = t->start;
    i = 0;
    t->alldots = true;
    t->digit = false;
    t->ncolons = 0;
    t->colon1 = 0;
  }
  for (;;) {
    if (p >= LEN) {
      if (bar) eof_error(d, "a |...| symbol name", t->start);
      break;
    }
    size_t np;
    uint32_t c = char_at(d, p, &np);
    bool esc = false;
    int k = d->custom ? syntax_of(d, c)
          : c == '|' ? SY_MESC : c == '\\' ? SY_SESC : is_delim(c) ? SY_WS : SY_CONSTITUENT;
    if (k == SY_MESC) { bar = !bar; t->escaped = true; p = np; continue; }
    if (k == SY_SESC) {
      if (np >= LEN) eof_error(d, "a token (after \\)", t->start);
      c = char_at(d, np, &np);
      esc = true;
    } else if (bar) {
      esc = true;
    } else if (k == SY_WS || k == SY_TMACRO || (c == d->delim && c != 0)) {
      break;
    } else if (invalid_trait(c) && !d->suppress) {
      rd_error(d, p, "an invalid constituent character (code %u) in a token: escape it", (unsigned)c);
    }
    p = np;
    if (esc) {
      t->escaped = true;
      t->alldots = false;
    } else {
      if (out) {
        if (t->fold == F_UP) c = upcase(c);
        else if (t->fold == F_DOWN) c = c < 128 ? (c >= 'A' && c <= 'Z' ? c + 32 : c) : jt_char_downcase(c);
      } else if (d->custom) {
        upper |= jt_char_downcase(c) != c;
        lower |= jt_char_upcase(c) != c;
      }
      if (c >= '0' && c <= '9') t->digit = true;
      if (c != '.') t->alldots = false;
      if (c == ':') { if (t->ncolons++ == 0) t->colon1 = i; }
    }
    if (out && i >= lo && i < hi) out[i - lo] = c;
    i++;
  }
  t->end = p;
  t->n = i;
  if (!out && d->custom) {
    static const int folds[] = {[RC_UPCASE] = F_UP, [RC_DOWNCASE] = F_DOWN, [RC_PRESERVE] = F_NONE};
    t->fold = d->rcase != RC_INVERT ? folds[d->rcase]
            : upper && lower ? F_NONE : upper ? F_DOWN : lower ? F_UP : F_NONE;
  }
}

/* A fresh string holding characters [lo, hi) of the token. */
static jt_V token_string(Rd *d, Tok *t, size_t lo, size_t hi)
{
  jt_V s = jt_make_string(d->S, hi - lo, 0);
  Tok t2 = *t;
  scan_token(d, &t2, jt_str_(s)->chars, lo, hi);
  return s;
}

/* The UTF-8 of characters [lo, hi) of the token, for a symbol or package
** name.  Up to 64 characters are encoded on the stack (in buf), so that
** looking up an existing name allocates nothing; a longer name is encoded
** in the storage of a scratch string, which *holder keeps alive (the caller
** roots it). */
static const char *token_bytes(Rd *d, Tok *t, size_t lo, size_t hi, char buf[MAXC * 4 + 1],
                               size_t *len, jt_V *holder)
{
  size_t n = hi - lo, k = 0;
  char *out = buf;
  uint32_t small[MAXC];
  uint32_t *cs = small;
  if (t->plain) {
    memcpy(out, t->text + lo, n);
    k = n;
  } else if (n > MAXC) {
    jt_V str = token_string(d, t, lo, hi);
    *holder = str;
    cs = jt_str_(str)->chars;
    size_t bytes = 0;
    char u[4];
    for (size_t i = 0; i < n; i++) bytes += jt_utf8_encode(cs[i], u);
    jt_V store = jt_make_string(d->S, bytes / sizeof(uint32_t) + 1, 0);
    cs = jt_str_(*holder)->chars;   /* objects never move; re-read for clarity */
    *holder = store;                /* the characters are no longer needed */
    out = (char *)jt_str_(store)->chars;
    for (size_t i = 0; i < n; i++) k += jt_utf8_encode(cs[i], out + k);
  } else {
    Tok t2 = *t;
    scan_token(d, &t2, cs, lo, hi);
    for (size_t i = 0; i < n; i++) k += jt_utf8_encode(cs[i], out + k);
  }
  out[k] = 0;
  *len = k;
  return out;
}

/* The package named by the token's prefix, or a reader error. */
static jt_V token_package(Rd *d, Tok *t)
{
  char buf[MAXC * 4 + 1];
  size_t len;
  jt_V holder = JT_NIL;
  JT_ROOT(d->S, holder);
  const char *name = token_bytes(d, t, 0, t->colon1, buf, &len, &holder);
  jt_V pkg = jt_package_named(d->S, name, len);
  if (pkg == JT_NIL && d->R->make_packages) pkg = jt_package_named_or_made(d->S, name, len);
  if (pkg == JT_NIL)
    rd_error(d, t->start, "package %.64s%s does not exist", name, len > 64 ? "..." : "");
  JT_UNROOT(d->S, 1);
  return pkg;
}

/* The symbol named by characters [lo, hi) of the token: a keyword; an
** external symbol of pkg (`external`); or the symbol of that name
** accessible in pkg, interned there when new. */
static jt_V token_symbol(Rd *d, Tok *t, size_t lo, size_t hi, jt_V pkg, bool keyword,
                         bool external)
{
  jt_State *S = d->S;
  char buf[MAXC * 4 + 1];
  size_t len;
  jt_V holder = JT_NIL;
  JT_ROOT(S, holder);
  JT_ROOT(S, pkg);
  const char *name = token_bytes(d, t, lo, hi, buf, &len, &holder);
  jt_V sym;
  if (keyword) {
    sym = jt_intern_bytes(S, name, len, JT_PKG_KEYWORD);
  } else if (external) {
    sym = jt_package_read_external(S, pkg, name, len);
    if (sym == JT_NOVALUE && d->R->make_packages) sym = jt_package_read_intern(S, pkg, name, len);
    if (sym == JT_NOVALUE) {
      jt_V pname = jt_pkg_(pkg)->name;
      char *pn = jt_string_utf8(S, pname, NULL);
      char msg[200];
      snprintf(msg, sizeof msg, "%.64s", pn);
      free(pn);
      rd_error(d, t->start, "%s %.64s in package %s",
                      jt_find_symbol(S, name, len, (int)jt_o(pkg)->aux) != JT_NOVALUE
                          ? "there is no external symbol named" : "there is no symbol named",
                      name, msg);
    }
  } else {
    sym = jt_package_read_intern(S, pkg, name, len);
  }
  JT_UNROOT(S, 2);
  return sym;
}

/* Whether tok is a ratio in `base` whose denominator is zero ("1/0"): a
** reader error, not a division. */
static bool zero_denominator(const char *tok, size_t len, int base)
{
  size_t i = len > 0 && (tok[0] == '+' || tok[0] == '-'), digits = 0;
  for (; i < len && tok[i] != '/'; i++, digits++) {
    int c = (unsigned char)tok[i], v = c >= '0' && c <= '9' ? c - '0'
          : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
    if (v >= base) return false;
  }
  if (digits == 0 || i + 1 >= len) return false;
  for (i++; i < len; i++)
    if (tok[i] != '0') return false;
  return true;
}

/* Read a token: a number or a symbol.  `uninterned` after #:. */
static jt_V read_token(Rd *d, bool uninterned)
{
  Tok t;
  t.start = POS;
  scan_token(d, &t, NULL, 0, 0);
  POS = t.end;
  if (d->suppress) return JT_NIL;

  if (uninterned) {
    if (t.ncolons)
      rd_error(d, t.start, "a symbol after #: cannot have a package prefix");
    jt_V name = token_string(d, &t, 0, t.n);
    JT_ROOT(d->S, name);
    jt_V sym = jt_make_symbol(d->S, name);
    JT_UNROOT(d->S, 1);
    return sym;
  }
  if (!t.escaped && t.ncolons == 0) {
    if (t.alldots)
      rd_error(d, t.start, t.n == 1 ? "dot in the wrong context"
                                             : "a token of only dots");
    /* every number has a digit, and in base 10 or less a digit is 0-9 */
    if (t.digit || d->base > 10) {
      if (zero_denominator(SRC + t.start, t.end - t.start, d->base))
        rd_error(d, t.start, "%.*s: a ratio's denominator cannot be zero",
                 (int)(t.end - t.start > 40 ? 40 : t.end - t.start), SRC + t.start);
      jt_V num = jt_num_parse(d->S, SRC + t.start, t.end - t.start, d->base);
      if (num != JT_NOVALUE) return num;
    }
  }
  if (t.ncolons == 0) {
    if (d->keywords) return token_symbol(d, &t, 0, t.n, JT_NIL, true, false);
    return token_symbol(d, &t, 0, t.n, jt_current_package(d->S), false, false);
  }

  /* package-qualified: the markers must be one ':' or '::' together */
  size_t last = t.colon1 + (size_t)t.ncolons - 1;
  if (t.ncolons > 2)
    rd_error(d, t.start, "too many package markers in a symbol");
  if (t.ncolons == 2) {
    /* the second colon must follow the first immediately */
    uint32_t second;
    Tok t2 = t;
    scan_token(d, &t2, &second, t.colon1 + 1, t.colon1 + 2);
    if (second != ':')
      rd_error(d, t.start, "too many package markers in a symbol");
  }
  if (t.colon1 == 0) {
    if (t.ncolons != 1)
      rd_error(d, t.start, "too many package markers in a keyword");
    return token_symbol(d, &t, last + 1, t.n, JT_NIL, true, false);
  }
  jt_V pkg = token_package(d, &t);
  /* pkg::|| names the symbol whose name is empty; pkg:: alone names none */
  if (last + 1 == t.n && SRC[t.end - 1] == ':')
    rd_error(d, t.start, "missing symbol name after a package marker");
  if (jt_o(pkg)->aux == JT_PKG_KEYWORD) return token_symbol(d, &t, last + 1, t.n, JT_NIL, true, false);
  if (t.ncolons == 2 && (jt_o(pkg)->flags & JT_PACKAGE_LOCKED) && !d->S->kernel_mode) {
    /* pkg::name in a locked package names only what is there already */
    JT_ROOT(d->S, pkg);
    char buf[MAXC * 4 + 1];
    size_t len;
    jt_V holder = JT_NIL;
    JT_ROOT(d->S, holder);
    const char *name = token_bytes(d, &t, last + 1, t.n, buf, &len, &holder);
    if (jt_find_symbol(d->S, name, len, (int)jt_o(pkg)->aux) == JT_NOVALUE &&
        jt_package_read_external(d->S, pkg, name, len) == JT_NOVALUE) {
      int st = 0;
      (void)st;
      jt_V acc = JT_NOVALUE;
      for (jt_V u = jt_pkg_(pkg)->use_list; jt_iscons(u) && acc == JT_NOVALUE; u = jt_cdr(u))
        acc = jt_package_read_external(d->S, jt_car(u), name, len);
      if (acc == JT_NOVALUE)
        rd_error(d, t.start, "cannot make the symbol %.64s in the locked package %s",
                        name, jt_o(pkg)->aux == JT_PKG_LISP ? "COMMON-LISP" : "JITI");
    }
    JT_UNROOT(d->S, 2);
  }
  return token_symbol(d, &t, last + 1, t.n, pkg, false, t.ncolons == 1);
}

/* ----------------------------------------------------------------- strings */

/* POS is past the opening character; `close` ends the string. */
static jt_V read_string(Rd *d, uint32_t close, size_t start)
{
  size_t n = 0, p = POS, np;
  /* sizing pass */
  for (;;) {
    if (p >= LEN) eof_error(d, "a string", start);
    uint32_t c = char_at(d, p, &np);
    if (c == close) break;
    if (is_sesc(d, c)) {
      if (np >= LEN) eof_error(d, "a string", start);
      char_at(d, np, &np);
    }
    p = np;
    n++;
  }
  if (d->suppress) { char_at(d, p, &np); POS = np; return JT_NIL; }
  jt_V s = jt_make_string(d->S, n, 0);
  uint32_t *out = jt_str_(s)->chars;
  for (size_t i = 0; i < n; i++) {
    uint32_t c = char_at(d, POS, &np);
    if (is_sesc(d, c)) c = char_at(d, np, &np);
    out[i] = c;
    POS = np;
  }
  char_at(d, POS, &np);
  POS = np;   /* the closing character */
  return s;
}

/* --------------------------------------------------------------- characters */

/* #\x, #\Name, #\U+XXXX; POS is just past the backslash. */
static jt_V read_char(Rd *d, size_t start)
{
  size_t from = POS;
  if (at_end(d)) eof_error(d, "a character literal", start);
  size_t np;
  uint32_t first = char_at(d, POS, &np);
  size_t p = np, n = 1;
  uint32_t name[24];
  name[0] = upcase(first);
  while (p < LEN) {
    uint32_t c = char_at(d, p, &np);
    if (ends_token(d, c)) break;
    if (n < sizeof name / sizeof name[0]) name[n] = upcase(c);
    n++;
    p = np;
  }
  POS = p;
  if (d->suppress) return JT_NIL;
  if (n == 1) return jt_mkchar(first);
  uint32_t code;
  if (n <= sizeof name / sizeof name[0] && jt_char_by_name(name, n, &code)) return jt_mkchar(code);
  rd_error(d, start, "unknown character name #\\%.*s",
                  (int)(p - from > 40 ? 40 : p - from), SRC + from);
}

/* ------------------------------------------------------------------- lists */

/* The next object, skipping suppressed ones; `what` names the construct
** that needs it, for the error messages. */
static jt_V read_required(Rd *d, const char *what, size_t start)
{
  for (;;) {
    skip_ws(d);
    if (at_end(d)) eof_error(d, what, start);
    if (at_close(d))
      rd_error(d, POS, "missing object after %s", what);
    jt_V x = read_item(d);
    if (x != JT_NOVALUE) return x;
  }
}

static jt_V cons_rooted(jt_State *S, jt_V a, jt_V b)
{
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  jt_V c = jt_cons(S, a, b);
  JT_UNROOT(S, 2);
  return c;
}

/* POS is past the '(' at start.  `allow_dot` is false for #( vectors. */
static jt_V read_list(Rd *d, bool allow_dot, size_t start)
{
  jt_State *S = d->S;
  const char *what = allow_dot ? "a list" : "a vector";
  jt_V head = JT_NIL, tail = JT_NIL;
  JT_ROOT(S, head);
  JT_ROOT(S, tail);
  enter(d);
  for (;;) {
    skip_ws(d);
    if (at_end(d)) eof_error(d, what, start);
    size_t close = at_close(d);
    if (close) { POS += close; break; }
    if (at_dot(d) && d->suppress) {   /* nothing is made: any dot will do */
      POS++;
      continue;
    }
    if (at_dot(d)) {
      if (!allow_dot || head == JT_NIL)
        rd_error(d, POS, "dot in the wrong context");
      size_t dotpos = POS++;
      jt_V x = read_required(d, "a dot", dotpos);
      jt_cons_(tail)->cdr = x;   /* our own fresh cons: no barrier */
      skip_ws(d);
      if (at_end(d)) eof_error(d, what, start);
      close = at_close(d);
      if (!close)
        rd_error(d, POS, "more than one object after a dot");
      POS += close;
      break;
    }
    jt_V x = read_item(d);
    if (x == JT_NOVALUE) continue;
    jt_V cell = cons_rooted(S, x, JT_NIL);
    if (head == JT_NIL) head = cell;
    else jt_cons_(tail)->cdr = cell;
    tail = cell;
  }
  leave(d);
  JT_UNROOT(S, 2);
  return d->suppress ? JT_NIL : head;
}

/* #( ... ) and #n( ... ); POS is past the '('.  n < 0: no length given. */
static jt_V read_vector(Rd *d, long n, size_t start)
{
  jt_State *S = d->S;
  jt_V items = read_list(d, false, start);
  if (d->suppress) return JT_NIL;
  JT_ROOT(S, items);
  size_t len = 0;
  for (jt_V x = items; x != JT_NIL; x = jt_cdr(x)) len++;
  size_t size = n < 0 ? len : (size_t)n;
  if (len > size)
    rd_error(d, start, "vector longer than its given length %ld", n);
  if (len == 0 && size > 0)
    rd_error(d, start, "vector of length %ld with no elements", n);
  jt_V v = jt_make_vector(S, size, JT_NIL);
  jt_V *it = jt_vec_(v)->items, last = JT_NIL;
  size_t i = 0;
  for (jt_V x = items; x != JT_NIL; x = jt_cdr(x)) it[i++] = last = jt_car(x);
  for (; i < size; i++) it[i] = last;   /* #n( repeats the last element */
  JT_UNROOT(S, 1);
  return v;
}

static bool keyword_named(jt_State *S, jt_V v, const char *name);

/* Whether slot `slot` (a symbol) is named by kname (a string or character). */
static bool slot_named(jt_State *S, jt_V slot, jt_V kname)
{
  jt_V sn = jt_symobj(S, slot)->name;
  if (jt_ischar(kname)) return jt_str_(sn)->len == 1 && jt_str_(sn)->chars[0] == jt_charcode(kname);
  size_t n = jt_str_(sn)->len;
  return jt_str_(kname)->len == n && !memcmp(jt_str_(sn)->chars, jt_str_(kname)->chars, n * sizeof(uint32_t));
}

/* #S(name :slot value ...): a structure, as the printer writes one.  Slots
** not named are NIL (no constructor runs: the object is the one printed). */
static void resync(Rd *d);

/* #P"namestring": the pathname PATHNAME makes of the string (57-pathnames.lisp). */
static jt_V read_pathname(Rd *d, size_t start)
{
  jt_State *S = d->S;
  jt_V x = read_required(d, "#P", start);
  if (d->suppress) return JT_NIL;
  if (!jt_stringp(x)) rd_error(d, start, "#P needs a string: #P\"/dir/name.type\"");
  JT_PUSH(S, x);
  if (d->stream != JT_NIL) jt_stream_reader_end(S, d->stream, d->R);
  jt_V p = jt_funcall(S, jt_intern(S, "PATHNAME"), 1, S->sp[-1]);
  if (d->stream != JT_NIL) {
    JT_PUSH(S, p);
    resync(d);
    JT_POP(S, 1);
  }
  JT_POP(S, 1);
  return p;
}

/* #S(RANDOM-STATE :STATE (w0 w1 w2 w3)), as the printer writes a random
** state readably: its four 64-bit generator words. */
static jt_V read_random_state(Rd *d, size_t start, jt_V slots)
{
  jt_State *S = d->S;
  uint64_t w[4];
  jt_V l = jt_iscons(slots) && keyword_named(S, jt_car(slots), "STATE") &&
           jt_iscons(jt_cdr(slots)) && jt_cdr(jt_cdr(slots)) == JT_NIL
           ? jt_car(jt_cdr(slots)) : JT_NIL;
  int n = 0;
  for (; jt_iscons(l) && n < 4; l = jt_cdr(l), n++) {
    jt_V x = jt_car(l);
    if (jt_isfix(x) && jt_fixval(x) >= 0) {
      w[n] = (uint64_t)jt_fixval(x);
    } else if (jt_isbig(x) && mpz_sgn(jt_big_(x)->z) > 0 &&
               mpz_sizeinbase(jt_big_(x)->z, 2) <= 64) {
      mpz_srcptr z = jt_big_(x)->z;
      w[n] = 0;
      mpz_export(&w[n], NULL, -1, sizeof w[n], 0, 0, z);
    } else {
      break;
    }
  }
  if (n != 4 || l != JT_NIL || (w[0] | w[1] | w[2] | w[3]) == 0)
    rd_error(d, start, "#S(RANDOM-STATE :STATE (w0 w1 w2 w3)) needs four "
             "unsigned 64-bit words, not all zero");
  return jt_make_random_state(S, w);
}

static jt_V read_struct(Rd *d, size_t start)
{
  jt_State *S = d->S;
  if (at_end(d) || SRC[POS] != '(') rd_error(d, start, "#S needs a list: #S(name :slot value ...)");
  POS++;
  jt_V spec = read_list(d, false, start);
  if (d->suppress) return JT_NIL;
  JT_ROOT(S, spec);
  jt_V name = jt_iscons(spec) ? jt_car(spec) : JT_NIL;
  if (name == jt_intern(S, "RANDOM-STATE")) {
    jt_V rs = read_random_state(d, start, jt_cdr(spec));
    JT_UNROOT(S, 1);
    return rs;
  }
  jt_V layout = jt_issymbol(name) ? jt_find_layout(S, name) : JT_NIL;
  if (layout == JT_NIL)
    rd_error(d, start, "#S: no structure type named %s", jt_issymbol(name) ? jt_symname(S, name) : "?");
  jt_Layout *L = jt_layout_(layout);
  if (L->h.flags & JT_LAYOUT_CONDITION) rd_error(d, start, "#S: %s is a condition type", jt_symname(S, name));
  jt_V obj = jt_make_struct(S, layout, L->nslots);
  JT_ROOT(S, obj);
  /* slot names are string designators; as with keyword arguments the
  ** first of a name wins, and :allow-other-keys true allows other names */
  bool other_keys = false;
  for (jt_V l = jt_cdr(spec); jt_iscons(l) && jt_iscons(jt_cdr(l)); l = jt_cdr(jt_cdr(l)))
    if (keyword_named(S, jt_car(l), "ALLOW-OTHER-KEYS")) { other_keys = jt_car(jt_cdr(l)) != JT_NIL; break; }
  uint64_t set = 0;
  for (jt_V l = jt_cdr(spec); jt_iscons(l); l = jt_cdr(jt_cdr(l))) {
    jt_V key = jt_car(l);
    if (!jt_iscons(jt_cdr(l)) || !(jt_issymbol(key) || jt_isstring(key) || jt_ischar(key)))
      rd_error(d, start, "#S(%s ...): slots come as :slot value pairs", jt_symname(S, name));
    if (keyword_named(S, key, "ALLOW-OTHER-KEYS")) continue;
    jt_V kname = jt_issymbol(key) ? jt_symobj(S, key)->name : key;
    L = jt_layout_(layout);
    uint32_t k = 0;
    while (k < L->nslots && !slot_named(S, jt_vec_(L->slot_names)->items[k], kname)) k++;
    if (k == L->nslots) {
      if (other_keys) continue;
      rd_error(d, start, "#S: structure %s has no slot named %s", jt_symname(S, name),
               jt_issymbol(key) ? jt_symname(S, key) : "given");
    }
    if (k < 64 && (set >> k & 1)) continue;
    if (k < 64) set |= (uint64_t)1 << k;
    jt_struct_(obj)->slots[k] = jt_car(jt_cdr(l));
  }
  JT_UNROOT(S, 2);
  return obj;
}

/* ------------------------------------------------------------- features */

static bool keyword_named(jt_State *S, jt_V v, const char *name)
{
  return jt_iskeyword(v) && strcmp(jt_symname(S, v), name) == 0;
}

static bool feature_true(Rd *d, jt_V f, size_t pos)
{
  jt_State *S = d->S;
  if (jt_issymbol(f)) {
    jt_V list = jt_symobj(S, JT_SYM(S, FEATURES))->value;
    for (size_t k = 0; jt_iscons(list) && k < 100000; list = jt_cdr(list), k++)
      if (jt_car(list) == f) return true;
    return false;
  }
  if (jt_iscons(f)) {
    /* #n= labels can make the expression hold itself */
    jt_check_cstack(S);
    jt_V op = jt_car(f), args = jt_cdr(f);
    bool is_and = keyword_named(S, op, "AND"), is_or = keyword_named(S, op, "OR");
    if (is_and || is_or) {
      jt_Walk w = jt_walk(args);
      for (; jt_iscons(args); args = jt_walk_next(S, &w, args))
        if (feature_true(d, jt_car(args), pos) == is_or) return is_or;
      if (args == JT_NIL) return is_and;
    } else if (keyword_named(S, op, "NOT")) {
      if (jt_iscons(args) && jt_cdr(args) == JT_NIL)
        return !feature_true(d, jt_car(args), pos);
    }
  }
  rd_error(d, pos, "invalid feature expression");
}

/* #+ / #-; POS is past the dispatch character. */
static jt_V read_conditional(Rd *d, bool plus, size_t start)
{
  bool kw = d->keywords;
  d->keywords = true;
  jt_V f = read_required(d, "a #+/#- feature expression", start);
  d->keywords = kw;
  bool take = d->suppress ? false : feature_true(d, f, start) == plus;
  if (take) return read_required(d, "a #+/#- form", start);
  bool sup = d->suppress;
  d->suppress = true;
  read_required(d, "a #+/#- form", start);
  d->suppress = sup;
  return JT_NOVALUE;
}

/* ------------------------------------------------------------ #n= and #n# */

/* Replace every reference to `ph` inside `x` by `obj`.  The structure is
** fresh from this read, so plain stores are fine; `seen` (an EQ table)
** makes the walk terminate on the cycles that earlier labels created. */
static void patch(Rd *d, jt_V x, jt_V ph, jt_V obj, jt_V seen, int rec)
{
  jt_State *S = d->S;
  while ((jt_iscons(x) || jt_isvector(x)) && x != ph && rec < 2 * MAX_DEPTH) {
    bool found;
    jt_hash_get(S, seen, x, &found);
    if (found) return;
    jt_hash_put(S, seen, x, JT_T);
    if (jt_isvector(x)) {
      jt_Vector *v = jt_vec_(x);
      for (size_t i = 0; i < v->len; i++) {
        if (v->items[i] == ph) v->items[i] = obj;
        else patch(d, v->items[i], ph, obj, seen, rec + 1);
      }
      return;
    }
    if (jt_car(x) == ph) jt_cons_(x)->car = obj;
    else patch(d, jt_car(x), ph, obj, seen, rec + 1);
    if (jt_cdr(x) == ph) { jt_cons_(x)->cdr = obj; return; }
    x = jt_cdr(x);
  }
}

static jt_V find_label(Rd *d, long n)
{
  for (jt_V l = d->labels; l != JT_NIL; l = jt_cdr(l))
    if (jt_car(jt_car(l)) == jt_mkfix(n)) return jt_car(l);
  return JT_NIL;
}

/* #n=object: the label may be referred to (#n#) inside the object. */
static jt_V read_label_def(Rd *d, long n, size_t start)
{
  jt_State *S = d->S;
  if (d->suppress) {
    read_required(d, "#=", start);
    return JT_NIL;
  }
  if (n < 0) rd_error(d, start, "#= needs a label number");
  if (find_label(d, n) != JT_NIL)
    rd_error(d, start, "label #%ld= is defined twice", n);
  /* a fresh cons stands for the object until it is complete */
  jt_V entry = jt_cons(S, jt_mkfix(n), JT_NIL);
  JT_ROOT(S, entry);
  jt_V ph = jt_cons(S, JT_NIL, JT_NIL);
  jt_cons_(entry)->cdr = ph;
  d->labels = cons_rooted(S, entry, d->labels);
  jt_V x = read_required(d, "#=", start);
  if (x == ph) rd_error(d, start, "label #%ld= refers only to itself", n);
  jt_cons_(entry)->cdr = x;
  JT_ROOT(S, x);
  jt_V seen = jt_make_hash(S, JT_HASH_EQ, 0);
  JT_ROOT(S, seen);
  patch(d, x, ph, x, seen, 0);
  JT_UNROOT(S, 3);
  return x;
}

/* #n#: the object (or, while it is being read, its placeholder). */
static jt_V read_label_ref(Rd *d, long n, size_t start)
{
  if (d->suppress) return JT_NIL;
  jt_V e = n < 0 ? JT_NIL : find_label(d, n);
  if (e == JT_NIL) rd_error(d, start, "undefined label #%ld#", n);
  return jt_cdr(e);
}

/* -------------------------------------------------------------- dispatch */

/* #b #o #x #nR: a rational in the given radix. */
static jt_V read_radix(Rd *d, int base, size_t start)
{
  if (at_end(d)) {
    if (d->suppress) return JT_NIL;
    eof_error(d, "a #r number", start);
  }
  Tok t;
  t.start = POS;
  scan_token(d, &t, NULL, 0, 0);
  POS = t.end;
  if (d->suppress) return JT_NIL;
  jt_V num = JT_NOVALUE;
  if (!t.escaped && t.ncolons == 0 && t.n > 0) {
    if (zero_denominator(SRC + t.start, t.end - t.start, base))
      rd_error(d, start, "%.*s: a ratio's denominator cannot be zero",
               (int)(t.end - t.start > 40 ? 40 : t.end - t.start), SRC + t.start);
    num = jt_num_parse(d->S, SRC + t.start, t.end - t.start, base);
  }
  if (num == JT_NOVALUE || !jt_isrational(num))
    rd_error(d, start, "%.*s is not a rational in base %d",
                    (int)(t.end - t.start > 40 ? 40 : t.end - t.start),
                    SRC + t.start, base);
  return num;
}

static jt_V wrap(Rd *d, jt_V head, const char *what, size_t start)
{
  enter(d);
  jt_V x = read_required(d, what, start);
  leave(d);
  return d->suppress ? JT_NIL : jt_list(d->S, 2, head, x);
}

/* #*0101 and #n*: a simple bit vector; POS is past the '*'. */
static jt_V read_bits(Rd *d, long n, size_t start)
{
  jt_State *S = d->S;
  size_t p = POS, nbits = 0;
  while (p < LEN && !ends_token(d, (unsigned char)SRC[p])) {
    if (SRC[p] != '0' && SRC[p] != '1' && !d->suppress)
      rd_error(d, start, "#* takes only the digits 0 and 1");
    p++;
    nbits++;
  }
  if (d->suppress) { POS = p; return JT_NIL; }
  size_t size = n < 0 ? nbits : (size_t)n;
  if (nbits > size) rd_error(d, start, "#%ld* has more than %ld bits", n, n);
  if (nbits == 0 && size > 0) rd_error(d, start, "#%ld* has no bits", n);
  jt_V v = jt_make_simple_array1(S, JT_ELT_BIT, size);
  jt_V *it = jt_vec_(v)->items;
  for (size_t i = 0; i < size; i++)
    it[i] = jt_mkfix(SRC[POS + (i < nbits ? i : nbits - 1)] - '0');
  POS = p;
  return v;
}

/* #nA contents: an array of rank n; POS is past the 'A'. */
static jt_V read_array(Rd *d, long rank, size_t start)
{
  if (rank < 0 && !d->suppress) rd_error(d, start, "#A needs a rank, as in #2A");
  enter(d);
  jt_V contents = read_required(d, "#A", start);
  leave(d);
  if (d->suppress) return JT_NIL;
  if (rank > 64) rd_error(d, start, "#%ldA: the rank is too large", rank);
  JT_ROOT(d->S, contents);
  jt_V a = jt_make_array_from_contents(d->S, (int)rank, contents);
  JT_UNROOT(d->S, 1);
  return a;
}

/* #C(real imag): a complex number; POS is past the 'C'. */
static jt_V read_complex(Rd *d, size_t start)
{
  enter(d);
  jt_V parts = read_required(d, "#C", start);
  leave(d);
  if (d->suppress) return JT_NIL;
  if (!jt_iscons(parts) || !jt_iscons(jt_cdr(parts)) || jt_cdr(jt_cdr(parts)) != JT_NIL ||
      !jt_isreal(jt_car(parts)) || !jt_isreal(jt_car(jt_cdr(parts))))
    rd_error(d, start, "#C needs a list of two reals, as in #C(1 2)");
  JT_ROOT(d->S, parts);
  jt_V z = jt_make_complex(d->S, jt_car(parts), jt_car(jt_cdr(parts)));
  JT_UNROOT(d->S, 1);
  return z;
}

/* A character for an error message: itself when printable ASCII. */
static const char *char_text(uint32_t c, char buf[16])
{
  if (c > 32 && c < 127) snprintf(buf, 16, "#\\%c", (char)c);
  else snprintf(buf, 16, "#\\U+%04X", (unsigned)c);
  return buf;
}

/* After a reader macro function ran on the stream: its position moved
** (and its UTF-8 may be new), so the buffer is taken again. */
static void resync(Rd *d)
{
  jt_Reader t;
  jt_stream_reader_begin(d->S, d->stream, &t);
  d->R->src = t.src;
  d->R->len = t.len;
  d->R->pos = t.pos;
}

/* Call a reader macro function (stream char) or dispatch function (stream
** char arg; n = 3) of a custom readtable.  JT_NOVALUE when it returned no
** values (it read a comment). */
static jt_V call_macro(Rd *d, jt_V fn, int n, uint32_t c, jt_V arg)
{
  jt_State *S = d->S;
  if (d->stream == JT_NIL) rd_error(d, POS, "a reader macro function needs a stream");
  if (!jt_isfunction(fn) && !jt_issymbol(fn))
    rd_error(d, POS, "the reader macro of %s is not a function", char_text(c, (char[16]){0}));
  jt_stream_reader_end(S, d->stream, d->R);
  jt_V x = n == 2 ? jt_funcall(S, fn, 2, d->stream, jt_mkchar(c))
                  : jt_funcall(S, fn, 3, d->stream, jt_mkchar(c), arg);
  int nv = S->nvals;
  JT_PUSH(S, x);
  resync(d);
  JT_POP(S, 1);
  if (nv == 0) return JT_NOVALUE;
  return d->suppress ? JT_NIL : x;
}

/* #.form: the form's value when a program reads with *read-eval* true.
** The kernel's reads of source (what clients and models send, the world's
** stored text) never evaluate: the form gate must see every form before it
** runs. */
static jt_V read_eval(Rd *d, size_t start)
{
  jt_State *S = d->S;
  if (d->suppress) { read_required(d, "#.", start); return JT_NIL; }
  if (!d->R->program)
    rd_error(d, start, "read-time evaluation (#.) is not allowed: evaluate the expression instead");
  jt_V on = jt_symobj(S, JT_SYM(S, READ_EVAL))->value;
  if (on == JT_NIL || on == JT_UNBOUND)
    rd_error(d, start, "read-time evaluation (#.) is off: *read-eval* is NIL");
  jt_V form = read_required(d, "#.", start);
  JT_PUSH(S, form);   /* ending the read may allocate (an echo stream echoes) */
  if (d->stream != JT_NIL) jt_stream_reader_end(S, d->stream, d->R);
  jt_V x = jt_eval(S, form);
  JT_POP(S, 1);
  if (d->stream != JT_NIL) {
    JT_PUSH(S, x);
    resync(d);
    JT_POP(S, 1);
  }
  return x;
}

/* POS is past the dispatching character at start.  `e`: its custom entry
** (a vector #(non-terminating-p table standard-p)), or NIL for the
** standard #. */
static jt_V read_dispatch(Rd *d, size_t start, jt_V e)
{
  jt_State *S = d->S;
  long arg = -1;
  while (POS < LEN && SRC[POS] >= '0' && SRC[POS] <= '9') {
    long digit = SRC[POS++] - '0';
    arg = arg < 0 ? digit : (arg > 100000000 ? arg : arg * 10 + digit);
  }
  if (at_end(d)) eof_error(d, "a # syntax", start);
  size_t np;
  uint32_t c = char_at(d, POS, &np);
  POS = np;
  if (e != JT_NIL) {
    jt_V table = jt_vec_(e)->items[1];
    bool found = false;
    jt_V fn = jt_ishash(table) ? jt_hash_get(S, table, jt_mkchar(upcase(c)), &found) : JT_NIL;
    if (found && jt_ischar(fn)) c = jt_charcode(fn);   /* the standard syntax of that character */
    else if (found && fn != JT_NIL)
      return call_macro(d, fn, 3, c, arg < 0 ? JT_NIL : jt_mkfix(arg));
    else if (found || jt_vec_(e)->items[2] == JT_NIL) {
      if (d->suppress) return JT_NIL;
      rd_error(d, start, "no dispatch function for the sub-character %s", char_text(c, (char[16]){0}));
    }
  }
  return std_dispatch(d, c, arg, start);
}

/* The standard # syntax of sub-character c, POS past it; arg < 0: none. */
static jt_V std_dispatch(Rd *d, uint32_t c, long arg, size_t start)
{
  jt_State *S = d->S;
  switch (c) {
  case '\\': return read_char(d, start);
  case '\'': return wrap(d, JT_SYM(S, FUNCTION), "#'", start);
  case '(': return read_vector(d, arg, start);
  case 's': case 'S': return read_struct(d, start);
  case 'p': case 'P': return read_pathname(d, start);
  case ':': return read_token(d, true);
  case '|': skip_block_comment(d, start); return JT_NOVALUE;
  case '+': case '-': return read_conditional(d, c == '+', start);
  case 'b': case 'B': return read_radix(d, 2, start);
  case 'o': case 'O': return read_radix(d, 8, start);
  case 'x': case 'X': return read_radix(d, 16, start);
  case 'r': case 'R':
    if ((arg < 2 || arg > 36) && !d->suppress)
      rd_error(d, start, "#r needs a radix between 2 and 36");
    return read_radix(d, (int)arg, start);
  case '*': return read_bits(d, arg, start);
  case 'c': case 'C': return read_complex(d, start);
  case 'a': case 'A': return read_array(d, arg, start);
  case '=': return read_label_def(d, arg, start);
  case '#': return read_label_ref(d, arg, start);
  case '.': return read_eval(d, start);
  default:
    if (d->suppress && !ends_token(d, c) && c != '<' && c != ')') {
      /* foreign syntax in a skipped form: skip the object it prefixes */
      read_required(d, "a # syntax", start);
      return JT_NIL;
    }
    if (c < 128 && c > 32)
      rd_error(d, start, "unknown dispatch macro character #%c", (char)c);
    rd_error(d, start, "unknown dispatch macro character after #");
  }
}

/* The standard reader macro of character k, invoked by c (the same
** character, or one given k's syntax); POS is past c, at start. */
static jt_V std_macro(Rd *d, uint32_t k, uint32_t c, size_t start)
{
  jt_State *S = d->S;
  switch (k) {
  case '(': return read_list(d, true, start);
  case ')': if (d->suppress) return JT_NIL; rd_error(d, start, "unmatched close parenthesis");
  case '"': return read_string(d, c, start);
  case '\'': return wrap(d, JT_SYM(S, QUOTE), "a quote", start);
  case '`': {
    d->bq++;
    jt_V x = wrap(d, JT_SYM(S, QUASIQUOTE), "a backquote", start);
    d->bq--;
    return x;
  }
  case ',': {
    if (d->bq <= 0 && !d->suppress)
      rd_error(d, start, "comma not inside a backquote");
    jt_V head = JT_SYM(S, UNQUOTE);
    if (POS < LEN && (SRC[POS] == '@' || SRC[POS] == '.')) {
      head = JT_SYM(S, UNQUOTE_SPLICING);
      POS++;
    }
    d->bq--;
    jt_V x = wrap(d, head, "a comma", start);
    d->bq++;
    return x;
  }
  case ';': {
    /* the newline ends the comment and goes with it, as SBCL's comment
    ** reader takes it: a newline given ;'s syntax starts a comment that
    ** the next newline ends, not one at every newline */
    const char *nl = memchr(SRC + POS, '\n', LEN - POS);
    POS = nl ? (size_t)(nl - SRC) + 1 : LEN;
    return JT_NOVALUE;
  }
  case '#': {
    jt_V e = d->custom ? entry_of(d, c) : JT_NOVALUE;
    return read_dispatch(d, start, jt_isvector(e) && jt_vec_(e)->len >= 3 ? e : JT_NIL);
  }
  default: rd_error(d, start, "no standard reader macro for this character");
  }
}

/* A character with an entry in a custom readtable, at POS (its end at np). */
static jt_V read_entry(Rd *d, uint32_t c, jt_V e, size_t np)
{
  size_t start = POS;
  if (jt_isfix(e)) {
    if (jt_fixval(e) != SY_WS) return read_token(d, false);
    POS = np;
    return JT_NOVALUE;
  }
  if (jt_iscons(e)) {
    POS = np;
    jt_V fn = jt_car(e);
    if (jt_ischar(fn)) return std_macro(d, jt_charcode(fn), c, start);
    return call_macro(d, fn, 2, c, JT_NIL);
  }
  if (jt_isvector(e) && jt_vec_(e)->len >= 3) {
    POS = np;
    return read_dispatch(d, start, e);
  }
  return read_token(d, false);
}

/* One object starting at POS (which is not whitespace), or JT_NOVALUE when
** the syntax there produced nothing (#| |#, a skipped #+ form). */
static jt_V read_item(Rd *d)
{
  size_t start = POS;
  if (d->custom) {
    size_t np;
    uint32_t c = char_at(d, POS, &np);
    jt_V e = entry_of(d, c);
    if (e != JT_NOVALUE) return read_entry(d, c, e, np);
    if (c >= 128) return read_token(d, false);
  }
  switch (SRC[POS]) {
  case '(': case ')': case '"': case '\'': case '`': case ',': case ';': case '#':
    POS++;
    return std_macro(d, (unsigned char)SRC[start], (unsigned char)SRC[start], start);
  default: return read_token(d, false);
  }
}

/* ------------------------------------------------------------ entry points */

void jt_reader_init(jt_Reader *R, const char *src, size_t len)
{
  R->src = src;
  R->len = len;
  R->pos = 0;
  R->depth = 0;
  R->bom = true;
  R->preserve_whitespace = false;
  R->make_packages = false;
  R->origin = NULL;
  R->line0 = R->col0 = 1;
  R->form_start = R->form_end = 0;
  R->program = false;
  R->stream = JT_NIL;
}

/* The current readtable when it is not the standard syntax (some
** character's syntax changed, or a case other than :upcase), else NIL. */
static jt_V custom_readtable(jt_State *S)
{
  jt_V rt = jt_symobj(S, JT_SYM(S, READTABLE_VAR))->value;
  if (!jt_isstruct(rt) || jt_layout_(jt_struct_(rt)->layout)->name != JT_SYM(S, READTABLE) ||
      jt_o(rt)->aux < 2)
    return JT_NIL;
  return jt_struct_(rt)->slots[0] != JT_SYM(S, K_UPCASE) || jt_ishash(jt_struct_(rt)->slots[1]) ? rt : JT_NIL;
}

/* Whitespace in the current readtable (peek-char's peek type T). */
bool jt_read_whitespace_p(jt_State *S, uint32_t c)
{
  jt_V rt = custom_readtable(S);
  if (rt == JT_NIL || !jt_ishash(jt_struct_(rt)->slots[1])) return std_syntax(c) == SY_WS;
  bool found;
  jt_V e = jt_hash_get(S, jt_struct_(rt)->slots[1], jt_mkchar(c), &found);
  return entry_syntax(found ? e : JT_NOVALUE, c) == SY_WS;
}

static void rd_init(Rd *d, jt_State *S, jt_Reader *R)
{
  *d = (Rd){.S = S, .R = R, .base = 10, .labels = JT_NIL, .syntax = JT_NIL, .stream = R->stream};
  jt_V b = jt_symobj(S, JT_SYM(S, READ_BASE))->value;
  if (jt_isfix(b) && jt_fixval(b) >= 2 && jt_fixval(b) <= 36)
    d->base = (int)jt_fixval(b);
  jt_V sup = jt_symobj(S, JT_SYM(S, READ_SUPPRESS))->value;
  d->suppress = sup != JT_UNBOUND && sup != JT_NIL;   /* every object reads as NIL */
  if (R->program && R->stream != JT_NIL) {
    /* *readtable*: anything but the standard syntax takes the custom path
    ** (reader macro functions read from a stream: a program's READ has
    ** one; jiti run's source text is read with the standard syntax) */
    jt_V rt = custom_readtable(S);
    if (rt != JT_NIL) {
      jt_V rcase = jt_struct_(rt)->slots[0], table = jt_struct_(rt)->slots[1];
      d->custom = true;
      d->syntax = jt_ishash(table) ? table : JT_NIL;
      d->rcase = rcase == JT_SYM(S, K_DOWNCASE) ? RC_DOWNCASE : rcase == JT_SYM(S, K_PRESERVE) ? RC_PRESERVE
               : rcase == JT_SYM(S, K_INVERT) ? RC_INVERT : RC_UPCASE;
      memset(d->syn, SY_UNKNOWN, sizeof d->syn);
    }
  }
  R->depth = 0;
  /* a UTF-8 byte order mark at the very start is not part of the source */
  if (R->bom && R->pos == 0 && R->len >= 3 && memcmp(R->src, "\xEF\xBB\xBF", 3) == 0)
    R->pos = 3;
}

jt_V jt_read(jt_State *S, jt_Reader *R)
{
  Rd d;
  rd_init(&d, S, R);
  JT_ROOT(S, d.labels);
  JT_ROOT(S, d.syntax);
  JT_ROOT(S, d.stream);
  for (;;) {
    skip_ws(&d);
    if (R->pos >= R->len) { JT_UNROOT(S, 3); return JT_EOF; }
    if (at_close(&d))
      rd_error(&d, R->pos, "unmatched close parenthesis");
    R->form_start = R->pos;
    jt_V x = read_item(&d);
    if (x == JT_NOVALUE) continue;
    R->form_end = R->pos;
    /* Like read (not read-preserving-whitespace), consume one whitespace
    ** character after the datum, so read-from-string's index lies after it. */
    if (!R->preserve_whitespace && R->pos < R->len) {
      size_t np;
      if (syntax_of(&d, char_at(&d, R->pos, &np)) == SY_WS) R->pos = np;
    }
    JT_UNROOT(S, 3);
    return x;
  }
}

/* The objects up to the character `close` (consumed), as a list. */
static jt_V read_delimited(jt_State *S, jt_Reader *R, uint32_t close)
{
  Rd d;
  rd_init(&d, S, R);
  d.delim = close;
  jt_V head = JT_NIL, tail = JT_NIL;
  JT_ROOT(S, d.labels);
  JT_ROOT(S, d.syntax);
  JT_ROOT(S, d.stream);
  JT_ROOT(S, head);
  JT_ROOT(S, tail);
  size_t start = R->pos;
  for (;;) {
    skip_ws(&d);
    if (R->pos >= R->len) eof_error(&d, "READ-DELIMITED-LIST", start);
    size_t np;
    if (char_at(&d, R->pos, &np) == close) { R->pos = np; break; }
    if (at_close(&d))
      rd_error(&d, R->pos, "unmatched close parenthesis");
    jt_V x = read_item(&d);
    if (x == JT_NOVALUE) continue;
    jt_V cell = cons_rooted(S, x, JT_NIL);
    if (head == JT_NIL) head = cell;
    else jt_cons_(tail)->cdr = cell;
    tail = cell;
  }
  JT_UNROOT(S, 5);
  return d.suppress ? JT_NIL : head;
}

/* (read &optional stream (eof-error-p t) eof-value recursive-p), and with
** `preserve` read-preserving-whitespace */
static jt_V read_stream(jt_State *S, int argc, jt_V *argv, bool preserve)
{
  jt_V stream = jt_input_stream(S, argc > 0 ? argv[0] : JT_NIL);
  JT_PUSH(S, stream);
  jt_Reader R;
  jt_stream_reader_begin(S, stream, &R);
  R.preserve_whitespace = preserve;
  R.program = true;
  R.stream = stream;
  jt_V x = jt_read(S, &R);
  JT_PUSH(S, x);   /* ending the read may allocate (an echo stream echoes) */
  jt_stream_reader_end(S, stream, &R);
  JT_POP(S, 2);
  if (x == JT_EOF) {
    if (argc <= 1 || argv[1] != JT_NIL) jt_end_of_file(S, stream);
    return argc > 2 ? argv[2] : JT_NIL;
  }
  return x;
}

JT_FN(f_read) { return read_stream(S, argc, argv, false); }
JT_FN(f_read_preserving_whitespace) { return read_stream(S, argc, argv, true); }

/* (read-delimited-list char &optional stream recursive-p) */
JT_FN(f_read_delimited_list)
{
  uint32_t close = jt_check_char(S, argv[0]);
  jt_V stream = jt_input_stream(S, argc > 1 ? argv[1] : JT_NIL);
  JT_PUSH(S, stream);
  jt_Reader R;
  jt_stream_reader_begin(S, stream, &R);
  R.program = true;
  R.stream = stream;
  jt_V l = read_delimited(S, &R, close);
  JT_PUSH(S, l);
  jt_stream_reader_end(S, stream, &R);
  JT_POP(S, 2);
  return l;
}

/* (read-from-string string &optional (eof-error-p t) eof-value
**  &key start end) => object, index.  `program`: a program's read, with
** *readtable* and *read-eval*; else the kernel's read of source (the form
** gate's): the standard syntax, and #. refused. */
static jt_V read_from_string(jt_State *S, int argc, jt_V *argv, bool program)
{
  static const int keys[] = {JT_S_K_START, JT_S_K_END, JT_S_K_PRESERVE_WHITESPACE};
  jt_V str = jt_check_string(S, argv[0]);
  jt_V eof_error_p = argc > 1 ? argv[1] : JT_T;
  jt_V eof_value = argc > 2 ? argv[2] : JT_NIL;
  jt_V kv[3] = {JT_NOVALUE, JT_NOVALUE, JT_NOVALUE};
  if (argc > 3) jt_parse_keys(S, argc, argv, 3, keys, 3, kv);
  size_t len = jt_str_(str)->len;
  size_t start = kv[0] == JT_NOVALUE ? 0 : jt_check_index(S, kv[0]);
  size_t end = (kv[1] == JT_NOVALUE || kv[1] == JT_NIL) ? len
             : jt_check_index(S, kv[1]);
  if (end > len)
    jt_type_error(S, kv[1], jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0),
                                    jt_mkfix(len)));
  if (start > end)
    jt_type_error(S, kv[0], jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0),
                                    jt_mkfix(end)));

  /* The reader works on UTF-8.  The bytes live in the character storage of
  ** a scratch string, so the collector owns them and an error unwinding out
  ** of the reader leaks nothing. */
  size_t nbytes = 0;
  char u[4];
  for (size_t i = start; i < end; i++)
    nbytes += jt_utf8_encode(jt_str_(str)->chars[i], u);
  jt_V scratch = jt_make_string(S, nbytes / sizeof(uint32_t) + 1, 0);
  JT_PUSH(S, scratch);
  char *bytes = (char *)jt_str_(scratch)->chars;
  size_t k = 0;
  for (size_t i = start; i < end; i++)
    k += jt_utf8_encode(jt_str_(str)->chars[i], bytes + k);

  jt_Reader R;
  jt_V x;
  size_t idx = start;
  if (program && custom_readtable(S) != JT_NIL) {
    /* reader macro functions read from a stream */
    jt_V stream = jt_make_string_input_stream(S, str, start, end);
    JT_PUSH(S, stream);
    jt_stream_reader_begin(S, stream, &R);
    R.preserve_whitespace = kv[2] != JT_NOVALUE && kv[2] != JT_NIL;
    R.program = true;
    R.stream = stream;
    x = jt_read(S, &R);
    JT_PUSH(S, x);
    jt_stream_reader_end(S, stream, &R);
    idx = jt_stream_(stream)->pos;
    JT_POP(S, 3);
  } else {
    jt_reader_init(&R, bytes, nbytes);
    R.preserve_whitespace = kv[2] != JT_NOVALUE && kv[2] != JT_NIL;
    R.program = program;
    x = jt_read(S, &R);
    /* index = start + characters consumed: count UTF-8 lead bytes */
    for (size_t i = 0; i < R.pos; i++)
      if (((unsigned char)bytes[i] & 0xC0) != 0x80) idx++;
    JT_POP(S, 1);
  }
  if (x == JT_EOF) {
    if (eof_error_p != JT_NIL)
      jt_errorc(S, JT_SYM(S, END_OF_FILE),
                "end of input reading from a string at index %zu", idx);
    x = eof_value;
  }
  return jt_values2(S, x, jt_mkfix(idx));
}

JT_FN(f_read_from_string) { return read_from_string(S, argc, argv, true); }

/* What get-macro-character and get-dispatch-macro-character give for the
** standard syntax: the reader's own code for standard character k, on a
** stream, as a function called by the reader would be. */
static jt_V standard_macro(jt_State *S, int argc, jt_V *argv, bool dispatch)
{
  jt_V stream = jt_input_stream(S, argv[0]);
  uint32_t c = jt_check_char(S, argv[1]);
  uint32_t k = jt_check_char(S, argv[dispatch ? 3 : 2]);
  long arg = dispatch && jt_isfix(argv[2]) ? jt_fixval(argv[2]) : -1;
  JT_PUSH(S, stream);
  jt_Reader R;
  jt_stream_reader_begin(S, stream, &R);
  R.program = true;
  R.stream = stream;
  Rd d;
  rd_init(&d, S, &R);
  JT_ROOT(S, d.labels);
  JT_ROOT(S, d.syntax);
  JT_ROOT(S, d.stream);
  size_t start = R.pos;
  jt_V x = dispatch ? std_dispatch(&d, k, arg, start) : std_macro(&d, k, c, start);
  JT_PUSH(S, x);   /* ending the read may allocate (an echo stream echoes) */
  jt_stream_reader_end(S, stream, &R);
  JT_POP(S, 1);
  JT_UNROOT(S, 3);
  JT_POP(S, 1);
  if (x == JT_NOVALUE) return jt_values(S, 0, NULL);
  return x;
}

JT_FN(f_standard_reader_macro) { return standard_macro(S, argc, argv, false); }
JT_FN(f_standard_dispatch_macro) { return standard_macro(S, argc, argv, true); }
JT_FN(f_read_source_from_string) { return read_from_string(S, argc, argv, false); }

static const jt_Reg read_fns[] = {
  {"READ", f_read, 0, 4,
   "(read &optional stream (eof-error-p t) eof-value recursive-p) Read one "
   "object from STREAM."},
  {"READ-PRESERVING-WHITESPACE", f_read_preserving_whitespace, 0, 4,
   "(read-preserving-whitespace &optional stream (eof-error-p t) eof-value "
   "recursive-p) Read one object, leaving the whitespace after it unread."},
  {"READ-DELIMITED-LIST", f_read_delimited_list, 1, 3,
   "(read-delimited-list char &optional stream recursive-p) Read objects up "
   "to CHAR; return them as a list."},
  {"READ-FROM-STRING", f_read_from_string, 1, -1,
   "(read-from-string string &optional (eof-error-p t) eof-value &key start "
   "end preserve-whitespace) Read one object from STRING; return it and the "
   "index after it."},
  {"%STANDARD-READER-MACRO", f_standard_reader_macro, 3, 3,
   "(%standard-reader-macro stream char k) The standard reader macro of character K, invoked by CHAR."},
  {"%STANDARD-DISPATCH-MACRO", f_standard_dispatch_macro, 4, 4,
   "(%standard-dispatch-macro stream sub-char arg k) The standard # syntax of sub-character K."},
  {"%READ-SOURCE-FROM-STRING", f_read_source_from_string, 1, -1,
   "(%read-source-from-string string &optional (eof-error-p t) eof-value &key start end) "
   "READ-FROM-STRING as the kernel reads source it has not yet checked (the form gate's): "
   "the standard syntax whatever *readtable* holds, and #. refused whatever *read-eval* says."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_read(jt_State *S)
{
  jt_register(S, read_fns);
}
