/*
** format.c — FORMAT.
**
** The control string is interpreted directly: `run` walks a segment of it,
** copying literal text to the stream and parsing each directive where it
** stands.  Constructs with bodies (~[ ~{ ~( ~<) find their closing directive
** by scanning forward (skipping nested constructs whole) and then run the
** body segment as often as needed.  Nothing is precompiled, so a call costs
** nothing beyond the directives it executes, and no memory outlives it.
**
** Characters of the control string are always re-read through the string
** object with a bounds check: user code run by the printer or by ~? may
** mutate the string (it may even be the destination), and that must give odd
** output, never a wild read.
**
** Numbers are laid out in small C buffers on the stack; floats use exact
** rational arithmetic (GMP) for rounding, so ~,2F of 0.125 is "0.13" (ties
** away from zero, as SBCL does) while 2.675, really 2.67499..., gives "2.67".
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_eval.h"   /* jump records: a logical block's end */

#define MAXPARAMS 32       /* ~E takes seven, ~/name/ as many as it likes */
#define MAXDEPTH 64        /* nesting of constructs and ~? recursion */
#define PARAM_MAX 100000000 /* a count or width beyond this is refused where
                               it would make that much output */
#define SCALE_MAX 400      /* |k| bound: keeps digit buffers bounded */
#define NUMBUF 1024        /* > 309 + SCALE_MAX integer digits, > 324 + 17 +
                              SCALE_MAX fraction digits */
#define END_CHAR 0xFFFFFFFFu

/* ------------------------------------------------------------------ types */

/* An integer parameter of any size: v is exact when it fits an intptr_t,
** else saturated at INTPTR_MAX or -INTPTR_MAX; a V argument that is a
** bignum is kept in `big` (rooted by the arguments) for exact ~^ tests. */
enum { P_NONE, P_INT, P_CHAR };
typedef struct Param { int kind; intptr_t v; jt_V big; } Param;

typedef struct Dir {
  size_t pos;      /* index of the tilde */
  size_t end;      /* index just past the directive (after ~/name/) */
  uint32_t ch;     /* directive character, upper-cased */
  uint32_t raw;    /* as written, for messages */
  bool colon, at;
  int np;
  Param p[MAXPARAMS];
  size_t name_start, name_end;  /* ~/name/ */
} Dir;

/* One interpretation context: a control string writing to a stream.  Both
** values are rooted by whoever creates the context. */
typedef struct Fmt {
  jt_State *S;
  jt_V stream;
  jt_V ctl;
  int depth;
  bool single;   /* the real ~F ~E ~G ~$ print is a single-float (real_arg) */
  bool fill;     /* the body of ~<...~:@>: a fill newline after each blank run */
} Fmt;

/* The arguments a segment consumes: either a vector (format's own argv, on
** the value stack) or a list (~{, ~?).  List-mode head and tail are rooted
** by the creator.  `outer` is the enclosing ~:{ iteration, for ~:^. */
typedef struct Args {
  jt_V *argv;
  jt_V head, tail;
  size_t pos, count;
  bool list;
  struct Args *outer;
  /* the list of a logical block (~<...~:>): taking an argument is
  ** PPRINT-POP, which may end the block by jumping to block_exit */
  jt_Jmp *block_exit;
  jt_V block_stream;
  size_t popped;
} Args;

/* What running a segment ended with: normally, or a ~^ / ~:^ escape. */
enum { RUN_OK, RUN_ESC, RUN_ESC_ALL };

static int run(Fmt *F, size_t start, size_t end, Args *a);

/* ------------------------------------------------------------ the string */

static inline size_t ctl_len(const Fmt *F) { return jt_str_(F->ctl)->len; }

static inline uint32_t cat(const Fmt *F, size_t i)
{
  const jt_String *s = jt_str_(F->ctl);
  return i < s->len ? s->chars[i] : END_CHAR;
}

/* Case as char-upcase and char-downcase map it (not the C locale's). */
static uint32_t upcase(uint32_t c)
{
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  return jt_char_upcase(c);
}

static uint32_t downcase(uint32_t c)
{
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  return jt_char_downcase(c);
}

static bool alnum(uint32_t c)
{
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
  return jt_char_alphanumeric(c);
}

/* ----------------------------------------------------------------- errors */

/* Signal a simple-error naming the position and quoting (a bounded prefix
** of) the control string. */
JT_PRINTF(3, 4) JT_NORETURN
static void fmt_error(Fmt *F, size_t pos, const char *fmt, ...)
{
  char msg[256], quoted[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t n = 0, len = ctl_len(F);
  for (size_t i = 0; i < len && n < 240; i++) {
    uint32_t c = cat(F, i);
    if (c == '"' || c == '\\') quoted[n++] = '\\';
    if (c == '\n') { quoted[n++] = '\\'; c = 'n'; }
    n += jt_utf8_encode(c, quoted + n);
  }
  if (n >= 240) { memcpy(quoted + n, "...", 3); n += 3; }
  quoted[n] = 0;
  jt_error(F->S, "format: %s at position %zu in \"%s\"", msg, pos, quoted);
}

/* The directive as written ("~A", "~:@R"), for messages. */
static const char *dname(const Dir *d, char out[16])
{
  size_t n = 0;
  out[n++] = '~';
  if (d->colon) out[n++] = ':';
  if (d->at) out[n++] = '@';
  if (d->raw == '\n') { memcpy(out + n, "newline", 7); n += 7; }
  else n += jt_utf8_encode(d->raw, out + n);
  out[n] = 0;
  return out;
}

static void enter(Fmt *F, size_t pos)
{
  if (++F->depth > MAXDEPTH)
    fmt_error(F, pos, "directives nested more than %d deep", MAXDEPTH);
}

/* -------------------------------------------------------------- arguments */

static void args_vector(Args *a, jt_V *argv, int argc)
{
  a->argv = argv;
  a->head = a->tail = JT_NIL;
  a->pos = 0;
  a->count = (size_t)argc;
  a->list = false;
  a->outer = NULL;
  a->block_exit = NULL;
  a->block_stream = JT_NIL;
  a->popped = 0;
}

/* The caller roots a->head and a->tail. */
static void args_list(jt_State *S, Args *a, jt_V list)
{
  if (!jt_islist(list)) jt_type_error(S, list, JT_SYM(S, LIST));
  a->argv = NULL;
  a->head = a->tail = list;
  a->pos = 0;
  a->count = jt_list_length(S, list);
  a->list = true;
  a->outer = NULL;
  a->block_exit = NULL;
  a->block_stream = JT_NIL;
  a->popped = 0;
}

/* A logical block's list: it may be dotted or circular (the block prints
** ". rest" or ". #n#" and ends), so it has no length; what remains is
** whether it is exhausted. */
static void args_block(Args *a, jt_V list, jt_Jmp *exit, jt_V stream)
{
  a->argv = NULL;
  a->head = a->tail = list;
  a->pos = 0;
  a->count = SIZE_MAX / 2;
  a->list = true;
  a->outer = NULL;
  a->block_exit = exit;
  a->block_stream = stream;
  a->popped = 0;
}

static size_t remaining(const Args *a)
{
  if (a->block_exit) return a->tail == JT_NIL ? 0 : 1;
  return a->count - a->pos;
}

/* PPRINT-POP's checks before a logical block's next argument: a dotted
** tail, *print-length* reached, or a tail printed before under
** *print-circle* end the block (after ". tail", "..." or ". #n#"). */
static void block_pop(Fmt *F, Args *a)
{
  jt_State *S = F->S;
  jt_V st = a->block_stream, tail = a->tail;
  bool end = false, rest = false;
  if (!jt_islist(tail)) {
    end = rest = true;
  } else {
    jt_V len = jt_symbol_value(S, JT_SYM(S, PRINT_LENGTH));
    jt_V readably = jt_symbol_value(S, JT_SYM(S, PRINT_READABLY));
    if (jt_isfix(len) && readably == JT_NIL && a->popped >= (size_t)jt_fixval(len)) {
      jt_stream_puts(S, st, "...");
      end = true;
    } else if (a->popped > 0 && jt_symbol_value(S, JT_SYM(S, PRINT_CIRCLE)) != JT_NIL &&
               jt_print_circle_mark(S, st, tail, false) != 0) {
      end = rest = true;
    }
  }
  if (rest) {
    jt_stream_puts(S, st, ". ");
    jt_print(S, st, tail, jt_symbol_value(S, JT_SYM(S, PRINT_ESCAPE)) != JT_NIL);
  }
  if (end) {
    S->pending = JT_NIL;
    jt_unwind_to(S, a->block_exit, 1);
  }
  a->popped++;
}

static jt_V arg_next(Fmt *F, Args *a, const Dir *d)
{
  char nm[16];
  if (a->pos >= a->count)
    fmt_error(F, d->pos, "no more arguments for %s", dname(d, nm));
  jt_V v;
  if (a->block_exit) block_pop(F, a);
  if (a->list) {
    if (!jt_iscons(a->tail))  /* the list was cut short under us */
      fmt_error(F, d->pos, "argument list modified during formatting");
    v = jt_car(a->tail);
    a->tail = jt_cdr(a->tail);
  } else {
    v = a->argv[a->pos];
  }
  a->pos++;
  return v;
}

static void arg_goto(Fmt *F, Args *a, intptr_t n, const Dir *d)
{
  if (n < 0 || (size_t)n > a->count)
    fmt_error(F, d->pos, "cannot move to argument %jd of %zu", (intmax_t)n,
              a->count);
  a->pos = (size_t)n;
  if (a->list) {
    jt_V t = a->head;
    for (intptr_t i = 0; i < n; i++) {
      if (!jt_iscons(t))
        fmt_error(F, d->pos, "argument list modified during formatting");
      t = jt_cdr(t);
    }
    a->tail = t;
  }
}

/* ----------------------------------------------------------------- output */

static void out_c(Fmt *F, uint32_t c) { jt_stream_putc(F->S, F->stream, c); }

static void out_n(Fmt *F, uint32_t c, intptr_t n)
{
  uint32_t buf[64];
  if (n <= 0) return;
  for (int i = 0; i < 64; i++) buf[i] = c;
  while (n > 0) {
    size_t k = n > 64 ? 64 : (size_t)n;
    jt_stream_write(F->S, F->stream, buf, k);
    n -= (intptr_t)k;
  }
}

static void out_ascii(Fmt *F, const char *s, size_t n)
{
  uint32_t buf[128];
  while (n > 0) {
    size_t k = n > 128 ? 128 : n;
    for (size_t i = 0; i < k; i++) buf[i] = (unsigned char)s[i];
    jt_stream_write(F->S, F->stream, buf, k);
    s += k;
    n -= k;
  }
}

/* Characters [from, to) of a Lisp string (rooted by the caller), copied out
** in chunks: the stream may be backed by that very string. */
static void out_lstr(Fmt *F, jt_V str, size_t from, size_t to)
{
  uint32_t buf[128];
  while (from < to) {
    const jt_String *s = jt_str_(str);
    if (from >= s->len) return;
    size_t k = to - from;
    if (k > 128) k = 128;
    if (k > s->len - from) k = s->len - from;
    memcpy(buf, s->chars + from, k * sizeof(uint32_t));
    jt_stream_write(F->S, F->stream, buf, k);
    from += k;
  }
}

static bool pretty_on(Fmt *F)
{
  jt_V p = jt_symbol_value(F->S, JT_SYM(F->S, PRINT_PRETTY));
  return p != JT_NIL;
}

/* Literal text of the control string; in the body of ~<...~:@>, each run
** of blanks is followed by a fill newline (~:_). */
static void out_text(Fmt *F, size_t from, size_t to)
{
  if (!F->fill) { out_lstr(F, F->ctl, from, to); return; }
  size_t i = from;
  while (i < to) {
    size_t j = i;
    while (j < to && cat(F, j) != ' ') j++;
    while (j < to && cat(F, j) == ' ') j++;
    out_lstr(F, F->ctl, i, j);
    if (j > i && cat(F, j - 1) == ' ' && pretty_on(F))
      jt_pp_op(F->S, F->stream, JT_PP_FILL, 0, 0);
    i = j;
  }
}

static size_t column(const Fmt *F)
{
  return jt_is(F->stream, JT_TSTREAM) ? jt_stream_column(F->S, F->stream) : 0;
}

/* Padding as ~A does it: at least minpad, then colinc at a time up to
** mincol. */
static intptr_t pad_amount(size_t len, intptr_t mincol, intptr_t colinc,
                           intptr_t minpad)
{
  intptr_t pad = minpad > 0 ? minpad : 0;
  if (colinc < 1) colinc = 1;
  intptr_t have = (intptr_t)len + pad;
  if (have < mincol) pad += (mincol - have + colinc - 1) / colinc * colinc;
  return pad;
}

/* ------------------------------------------------------ directive parsing */

static void add_param(Fmt *F, Dir *d, Param p, size_t pos)
{
  if (d->np >= MAXPARAMS)
    fmt_error(F, pos, "too many parameters (at most %d)", MAXPARAMS);
  d->p[d->np++] = p;
}

/* Parse the directive whose tilde is at `i`.  With `a`, V and # parameters
** take their values from the arguments; without (scanning), they are left
** empty and consume nothing. */
static void parse_dir(Fmt *F, size_t i, Dir *d, Args *a)
{
  size_t k = i + 1;
  d->pos = i;
  d->np = 0;
  d->colon = d->at = false;
  for (;;) {
    Param p = {P_NONE, 0, JT_NIL};
    bool any = true;
    uint32_t c = cat(F, k);
    if ((c >= '0' && c <= '9') ||
        ((c == '+' || c == '-') && cat(F, k + 1) >= '0' && cat(F, k + 1) <= '9')) {
      bool neg = c == '-';
      if (c == '+' || c == '-') k++;
      intptr_t v = 0;
      while ((c = cat(F, k)) >= '0' && c <= '9') {
        intptr_t dg = (intptr_t)(c - '0');
        v = v > (INTPTR_MAX - dg) / 10 ? INTPTR_MAX : v * 10 + dg;
        k++;
      }
      p.kind = P_INT;
      p.v = neg ? -v : v;
    } else if (c == '\'') {
      uint32_t pc = cat(F, k + 1);
      if (pc == END_CHAR)
        fmt_error(F, i, "control string ends inside a directive");
      p.kind = P_CHAR;
      p.v = pc;
      k += 2;
    } else if (c == 'v' || c == 'V') {
      k++;
      if (a) {
        jt_V v = arg_next(F, a, &(Dir){.pos = i, .raw = 'V'});
        if (jt_isfix(v)) {
          p.kind = P_INT;
          p.v = jt_fixval(v);
        } else if (jt_isbig(v)) {
          p.kind = P_INT;
          p.v = mpz_sgn(jt_big_(v)->z) < 0 ? -INTPTR_MAX : INTPTR_MAX;
          p.big = v;
        } else if (jt_ischar(v)) {
          p.kind = P_CHAR;
          p.v = jt_charcode(v);
        } else if (v != JT_NIL) {
          fmt_error(F, i, "a V parameter must be an integer, a character or NIL");
        }
      }
    } else if (c == '#') {
      k++;
      if (a) { p.kind = P_INT; p.v = (intptr_t)remaining(a); }
    } else {
      any = false;
    }
    if (cat(F, k) == ',') {
      add_param(F, d, p, i);
      k++;
      continue;
    }
    if (any) add_param(F, d, p, i);
    break;
  }
  for (;;) {
    uint32_t c = cat(F, k);
    if (c == ':') d->colon = true;
    else if (c == '@') d->at = true;
    else break;
    k++;
  }
  uint32_t c = cat(F, k);
  if (c == END_CHAR) fmt_error(F, i, "control string ends inside a directive");
  d->raw = c;
  d->ch = upcase(c);
  d->end = k + 1;
  if (c == '/') {  /* ~/name/: the name runs to the next slash */
    size_t j = k + 1;
    while (cat(F, j) != '/' && cat(F, j) != END_CHAR) j++;
    if (cat(F, j) == END_CHAR) fmt_error(F, i, "~/ without closing /");
    d->name_start = k + 1;
    d->name_end = j;
    d->end = j + 1;
  }
}

static bool has_param(const Dir *d, int i)
{
  return i < d->np && d->p[i].kind != P_NONE;
}

static intptr_t pexact(Fmt *F, const Dir *d, int i, intptr_t dflt)
{
  char nm[16];
  if (!has_param(d, i)) return dflt;
  if (d->p[i].kind != P_INT)
    fmt_error(F, d->pos, "parameter %d of %s must be an integer", i + 1,
              dname(d, nm));
  return d->p[i].v;
}

/* An integer parameter used as a count, width or column: any negative
** value acts as the most negative one PARAM_MAX allows (none asks for
** output), a positive one beyond PARAM_MAX is refused, since it would ask
** for that much output. */
static intptr_t pint(Fmt *F, const Dir *d, int i, intptr_t dflt)
{
  char nm[16];
  intptr_t v = pexact(F, d, i, dflt);
  if (v > PARAM_MAX)
    fmt_error(F, d->pos, "parameter %d of %s is too large (at most %d)",
              i + 1, dname(d, nm), PARAM_MAX);
  return v < -PARAM_MAX ? -PARAM_MAX - 1 : v;
}

/* An integer parameter that only selects or bounds (a clause number, an
** iteration limit, a comma interval): any size, clipped to +-PARAM_MAX+1,
** which selects or bounds nothing a control string can reach. */
static intptr_t pbound(Fmt *F, const Dir *d, int i, intptr_t dflt)
{
  intptr_t v = pexact(F, d, i, dflt);
  return v > PARAM_MAX ? PARAM_MAX + 1 : v < -PARAM_MAX ? -PARAM_MAX - 1 : v;
}

static uint32_t pchar(Fmt *F, const Dir *d, int i, uint32_t dflt)
{
  char nm[16];
  if (!has_param(d, i)) return dflt;
  if (d->p[i].kind != P_CHAR)
    fmt_error(F, d->pos, "parameter %d of %s must be a character", i + 1,
              dname(d, nm));
  return (uint32_t)d->p[i].v;
}

static void max_params(Fmt *F, const Dir *d, int n)
{
  char nm[16];
  if (d->np > n)
    fmt_error(F, d->pos, "%s takes at most %d parameter%s", dname(d, nm), n,
              n == 1 ? "" : "s");
}

/* ------------------------------------------------------- structure scan */

static size_t skip_construct(Fmt *F, const Dir *open, Dir *close, int depth);

static uint32_t closer_of(uint32_t open)
{
  switch (open) {
  case '[': return ']';
  case '{': return '}';
  case '(': return ')';
  case '<': return '>';
  default: return 0;
  }
}

/* From `i`, find the next ~; or closing directive at this nesting level;
** constructs opened on the way are skipped whole. */
static void next_sep(Fmt *F, size_t i, const Dir *open, Dir *out, int depth)
{
  char nm[16];
  for (;;) {
    size_t len = ctl_len(F);
    while (i < len && cat(F, i) != '~') i++;
    if (i >= len)
      fmt_error(F, open->pos, "%s has no matching ~%c", dname(open, nm),
                (char)closer_of(open->ch));
    parse_dir(F, i, out, NULL);
    switch (out->ch) {
    case '[': case '{': case '(': case '<': {
      Dir inner = *out, cl;
      i = skip_construct(F, &inner, &cl, depth + 1);
      break;
    }
    case ']': case '}': case ')': case '>': case ';':
      return;
    default:
      i = out->end;
    }
  }
}

/* Skip the construct opened by `open`; returns the index after its close,
** which is stored in `close`. */
static size_t skip_construct(Fmt *F, const Dir *open, Dir *close, int depth)
{
  char nm[16], nm2[16];
  if (depth + F->depth > MAXDEPTH)
    fmt_error(F, open->pos, "directives nested more than %d deep", MAXDEPTH);
  size_t i = open->end;
  for (;;) {
    next_sep(F, i, open, close, depth);
    if (close->ch == ';') {
      if (open->ch != '[' && open->ch != '<')
        fmt_error(F, close->pos, "~; is not allowed inside %s",
                  dname(open, nm));
      i = close->end;
      continue;
    }
    if (close->ch != closer_of(open->ch))
      fmt_error(F, close->pos, "%s does not match %s", dname(close, nm2),
                dname(open, nm));
    return close->end;
  }
}

/* -------------------------------------------------------------- integers */

/* Digits of |v| (an integer) in `base`, upper case, as code points.  Small
** values use `buf`; bignums a fresh Lisp string stored in *store (rooted by
** the caller).  Returns the digit array; *n gets its length, *neg the sign. */
static const uint32_t *int_digits(jt_State *S, jt_V v, int base, uint32_t *buf,
                                  size_t *n, bool *neg, jt_V *store)
{
  static const char dig[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  if (jt_isfix(v)) {
    intptr_t x = jt_fixval(v);
    uintptr_t u = x < 0 ? (uintptr_t)0 - (uintptr_t)x : (uintptr_t)x;
    uint32_t tmp[72];
    size_t k = 0;
    do { tmp[k++] = (uint32_t)dig[u % (unsigned)base]; u /= (unsigned)base; }
    while (u);
    for (size_t i = 0; i < k; i++) buf[i] = tmp[k - 1 - i];
    *n = k;
    *neg = x < 0;
    return buf;
  }
  jt_num_charge_print(S, v);
  mpz_srcptr z = jt_big_(v)->z;
  size_t cap = mpz_sizeinbase(z, base) + 2;
  *store = jt_make_string(S, cap, 0);
  /* Nothing below signals, so the temporary cannot leak. */
  char *tmp = malloc(cap + 1);
  if (!tmp) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  mpz_get_str(tmp, -base, z);
  const char *p = tmp;
  *neg = *p == '-';
  if (*neg) p++;
  size_t k = 0;
  uint32_t *out = jt_str_(*store)->chars;
  while (*p) out[k++] = (unsigned char)*p++;
  free(tmp);
  *n = k;
  return out;
}

/* ~D ~B ~O ~X and ~radixR: parameters from index `pi`. */
static void fmt_integer(Fmt *F, jt_V v, int base, const Dir *d, int pi)
{
  jt_State *S = F->S;
  if (!jt_isinteger(v)) {
    /* Not an integer: princ in that base (SBCL ignores the padding). */
    size_t nb = S->nbind;
    jt_bind(S, JT_SYM(S, PRINT_BASE), jt_mkfix(base));
    jt_bind(S, JT_SYM(S, PRINT_RADIX), JT_NIL);
    jt_princ(S, F->stream, v);
    jt_unbind_to(S, nb);
    return;
  }
  intptr_t mincol = pint(F, d, pi, 0);
  uint32_t padchar = pchar(F, d, pi + 1, ' ');
  uint32_t comma = pchar(F, d, pi + 2, ',');
  intptr_t interval = pbound(F, d, pi + 3, 3);
  if (interval < 1) interval = 3;

  uint32_t buf[72];
  size_t nd;
  bool neg;
  jt_V store = JT_NIL;
  JT_ROOT(S, v);  /* a bignum is read after int_digits allocates */
  JT_ROOT(S, store);
  const uint32_t *dg = int_digits(S, v, base, buf, &nd, &neg, &store);
  size_t ncommas = d->colon ? (nd - 1) / (size_t)interval : 0;
  bool sign = neg || d->at;
  size_t total = (sign ? 1 : 0) + nd + ncommas;
  if (mincol > 0 && (size_t)mincol > total) out_n(F, padchar, mincol - (intptr_t)total);
  if (sign) out_c(F, neg ? '-' : '+');
  if (ncommas == 0) {
    jt_stream_write(S, F->stream, dg, nd);
  } else {
    size_t first = nd - ncommas * (size_t)interval;
    jt_stream_write(S, F->stream, dg, first);
    for (size_t i = first; i < nd; i += (size_t)interval) {
      out_c(F, comma);
      jt_stream_write(S, F->stream, dg + i, (size_t)interval);
    }
  }
  JT_UNROOT(S, 2);
}

/* ------------------------------------------------------------ English ~R */

static const char *const ones[] = {
  "zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
  "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
  "sixteen", "seventeen", "eighteen", "nineteen"};
static const char *const tens[] = {
  "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
  "ninety"};
static const char *const scales[] = {
  "", "thousand", "million", "billion", "trillion", "quadrillion",
  "quintillion", "sextillion", "septillion", "octillion", "nonillion",
  "decillion", "undecillion", "duodecillion", "tredecillion",
  "quattuordecillion", "quindecillion", "sexdecillion", "septendecillion",
  "octodecillion", "novemdecillion", "vigintillion"};
#define NSCALES (sizeof scales / sizeof scales[0])

/* Decimal digits of |v| into buf (NUL-terminated); returns count or 0 when
** there are more than `max`. */
static size_t decimal_digits(jt_V v, char *buf, size_t max, bool *neg)
{
  if (jt_isfix(v)) {
    intptr_t x = jt_fixval(v);
    *neg = x < 0;
    uintptr_t u = x < 0 ? (uintptr_t)0 - (uintptr_t)x : (uintptr_t)x;
    return (size_t)snprintf(buf, max + 1, "%ju", (uintmax_t)u);
  }
  mpz_srcptr z = jt_big_(v)->z;
  *neg = mpz_sgn(z) < 0;
  if (mpz_sizeinbase(z, 10) > max + 1) return 0;  /* may overestimate by 1 */
  char tmp[128];
  mpz_get_str(tmp, 10, z);
  const char *p = tmp + (*neg ? 1 : 0);
  size_t n = strlen(p);
  if (n > max) return 0;
  memcpy(buf, p, n + 1);
  return n;
}

static void cat_word(jt_Buf *b, const char *w)
{
  if (b->n > 0 && b->p[b->n - 1] != '-') jt_buf_putc(b, ' ');
  jt_buf_puts(b, w);
}

static void english_below_1000(jt_Buf *b, int n)
{
  if (n >= 100) {
    cat_word(b, ones[n / 100]);
    cat_word(b, "hundred");
    n %= 100;
  }
  if (n >= 20) {
    cat_word(b, tens[n / 10]);
    if (n % 10) { jt_buf_putc(b, '-'); jt_buf_puts(b, ones[n % 10]); }
  } else if (n > 0) {
    cat_word(b, ones[n]);
  }
}

/* Replace the last word of `b` by its ordinal form. */
static void make_ordinal(jt_Buf *b)
{
  static const struct { const char *card, *ord; } irregular[] = {
    {"one", "first"}, {"two", "second"}, {"three", "third"},
    {"five", "fifth"}, {"eight", "eighth"}, {"nine", "ninth"},
    {"twelve", "twelfth"}};
  size_t w = b->n;
  while (w > 0 && b->p[w - 1] != ' ' && b->p[w - 1] != '-') w--;
  for (size_t i = 0; i < sizeof irregular / sizeof irregular[0]; i++) {
    if (b->n - w == strlen(irregular[i].card) &&
        memcmp(b->p + w, irregular[i].card, b->n - w) == 0) {
      b->n = w;
      jt_buf_puts(b, irregular[i].ord);
      return;
    }
  }
  if (b->p[b->n - 1] == 'y') { b->n--; jt_buf_puts(b, "ieth"); }
  else jt_buf_puts(b, "th");
}

static void fmt_english(Fmt *F, jt_V v, const Dir *d, bool ordinal)
{
  char digits[80];
  bool neg;
  size_t nd = decimal_digits(v, digits, 3 * NSCALES, &neg);
  if (nd == 0) fmt_error(F, d->pos, "number too large to print in English");
  /* Assemble in a C buffer: nothing here can signal until it is freed. */
  jt_Buf b = {NULL, 0, 0};
  if (neg) jt_buf_puts(&b, "negative");
  if (nd == 1 && digits[0] == '0') {
    cat_word(&b, "zero");
  } else {
    size_t ngroups = (nd + 2) / 3, first = nd - (ngroups - 1) * 3, at = 0;
    for (size_t g = 0; g < ngroups; g++) {
      size_t len = g == 0 ? first : 3;
      int val = 0;
      for (size_t j = 0; j < len; j++) val = val * 10 + (digits[at + j] - '0');
      at += len;
      if (val == 0) continue;
      english_below_1000(&b, val);
      size_t scale = ngroups - 1 - g;
      if (scale > 0) cat_word(&b, scales[scale]);
    }
  }
  if (ordinal) make_ordinal(&b);
  char local[2048];
  size_t n = b.n < sizeof local ? b.n : sizeof local;
  memcpy(local, b.p, n);
  jt_buf_free(&b);
  out_ascii(F, local, n);
}

static void fmt_roman(Fmt *F, jt_V v, const Dir *d, bool old)
{
  static const struct { int val; const char *s; } table[] = {
    {1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"},
    {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}};
  intptr_t limit = old ? 4999 : 3999;
  if (!jt_isfix(v) || jt_fixval(v) < 1 || jt_fixval(v) > limit)
    fmt_error(F, d->pos, "%s prints only integers from 1 to %jd",
              old ? "~:@R" : "~@R", (intmax_t)limit);
  intptr_t n = jt_fixval(v);
  char buf[32];
  size_t k = 0;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (old && table[i].s[1]) continue;  /* old style has no IV, IX, ... */
    while (n >= table[i].val) {
      for (const char *p = table[i].s; *p; p++) buf[k++] = *p;
      n -= table[i].val;
    }
  }
  out_ascii(F, buf, k);
}

/* ---------------------------------------------------------------- floats */

/* Shortest decimal digits that read back as ax (finite, > 0) in its
** format (single-float when `single`): 1..17 digits with no trailing zeros
** into buf; ax = 0.DIGITS x 10^*x10. */
static int shortest_digits(double ax, bool single, char *buf, int *x10)
{
  /* the printer's digits (a tie between two shortest strings goes up, as
  ** SBCL prints 2515367.25 as 2515367.3) */
  int e, n = jt_float_shortest(ax, single, buf, &e);
  *x10 = e + 1;
  return n;
}

/* round(ax x 10^scale), ties away from zero, computed exactly; decimal
** digits into buf (which the callers size for the bounded scales they
** use).  Returns the digit count ("0" for zero). */
static size_t round_scaled(double ax, int scale, char *buf)
{
  mpz_t num, den, t;
  int e;
  double m = frexp(ax, &e);
  mpz_init_set_d(num, ldexp(m, 53));
  e -= 53;
  mpz_init_set_ui(den, 1);
  mpz_init(t);
  if (e > 0) mpz_mul_2exp(num, num, (mp_bitcnt_t)e);
  else mpz_mul_2exp(den, den, (mp_bitcnt_t)-e);
  mpz_ui_pow_ui(t, 10, (unsigned long)(scale < 0 ? -scale : scale));
  if (scale > 0) mpz_mul(num, num, t);
  else mpz_mul(den, den, t);
  mpz_mul_2exp(num, num, 1);
  mpz_add(num, num, den);
  mpz_mul_2exp(den, den, 1);
  mpz_fdiv_q(num, num, den);
  mpz_get_str(buf, 10, num);
  mpz_clears(num, den, t, NULL);
  return strlen(buf);
}

/* A laid-out real: [sign] int "." frac zeros exp. */
typedef struct Fl {
  char sign;            /* 0, '+' or '-' */
  const char *ip; size_t nip;
  bool lead0;           /* ip is empty: a "0" may go before the point */
  const char *fp; size_t nfp;
  size_t zeros;         /* '0's after fp (digits beyond the exact ones) */
  char ex[40]; size_t nex;   /* exponent marker and sign */
  size_t exzeros;            /* zeros padding the exponent digits */
  char exd[24]; size_t nexd; /* exponent digits */
} Fl;

static size_t fl_width(const Fl *f)
{
  return (f->sign ? 1 : 0) + f->nip + 1 + f->nfp + f->zeros + f->nex +
         f->exzeros + f->nexd;
}

/* Write `f` in a field of width w (w < 0: no field).  The optional leading
** zero is printed when there is room, or when it would be the only digit
** (~0,0F of 0.01 is "0.", not "."). */
static void fl_emit(Fmt *F, Fl *f, intptr_t w, uint32_t ovf, uint32_t pad,
                    bool sign_first)
{
  size_t width = fl_width(f);
  bool zero = f->lead0 && (w < 0 || (intptr_t)width < w ||
                           f->nfp + f->zeros == 0);
  if (zero) width++;
  if (w >= 0 && (intptr_t)width > w && ovf != END_CHAR) {
    out_n(F, ovf, w);
    return;
  }
  if (sign_first && f->sign) out_c(F, (uint32_t)f->sign);
  if (w >= 0) out_n(F, pad, w - (intptr_t)width);
  if (!sign_first && f->sign) out_c(F, (uint32_t)f->sign);
  if (zero) out_c(F, '0');
  out_ascii(F, f->ip, f->nip);
  out_c(F, '.');
  out_ascii(F, f->fp, f->nfp);
  out_n(F, '0', (intptr_t)f->zeros);
  out_ascii(F, f->ex, f->nex);
  out_n(F, '0', (intptr_t)f->exzeros);
  out_ascii(F, f->exd, f->nexd);
}

/* Split rounded digits R (the value times 10^d) into int and fraction of d
** digits, the fraction built in `fb` when it needs leading zeros.  An
** integer part of 0 becomes the optional leading zero. */
static void split_fixed(Fl *f, const char *r, size_t len, size_t d, char *fb)
{
  if (len > d) {
    f->ip = r;
    f->nip = len - d;
    f->fp = r + len - d;
    f->nfp = d;
  } else {
    size_t z = d - len;
    memset(fb, '0', z);
    memcpy(fb + z, r, len);
    f->ip = "";
    f->nip = 0;
    f->fp = fb;
    f->nfp = d;
  }
  if (f->nip == 1 && f->ip[0] == '0') f->nip = 0;
  f->lead0 = f->nip == 0;
}

/* Shortest digits of ax (zero gives "0" with X = 1), the decimal exponent
** shifted by k: ax x 10^k = 0.SD x 10^X. */
static int digits_of(double ax, bool single, intptr_t k, char *sd, int *X)
{
  if (ax == 0) { strcpy(sd, "0"); *X = 1; return 1; }
  int n = shortest_digits(ax, single, sd, X);
  *X += (int)k;
  return n;
}

/* Lay out 0.SD x 10^X as integer and fraction digits (ib, fb: buffers). */
static void layout(Fl *f, const char *sd, int n, int X, char *ib, char *fb)
{
  if (X > 0) {
    for (int i = 0; i < X; i++) ib[i] = i < n ? sd[i] : '0';
    f->ip = ib;
    f->nip = (size_t)X;
    f->fp = n > X ? sd + X : "";
    f->nfp = n > X ? (size_t)(n - X) : 0;
  } else {
    memset(fb, '0', (size_t)-X);
    memcpy(fb - X, sd, (size_t)n);
    f->ip = "";
    f->nip = 0;
    f->fp = fb;
    f->nfp = (size_t)(n - X);
  }
  f->lead0 = f->nip == 0;
}

/* Fix the fraction at exactly d digits.  Like SBCL (dragon4 with a cutoff)
** the shortest digits are kept and padded with zeros when they fit; only
** when they do not is the exact value rounded, so ~,20F of 0.1 shows no
** binary noise while ~,2F of 2.675 (really 2.67499...) gives 2.67. */
static void fix_fraction(Fl *f, double ax, intptr_t k, size_t d, char *r,
                         char *fb)
{
  if (f->nfp <= d) {
    f->zeros = d - f->nfp;
    return;
  }
  size_t len = round_scaled(ax, (int)d + (int)k, r);
  split_fixed(f, r, len, d, fb);
}

/* The value as a real, or false (it is printed some other way); sets
** F->single to its format.  A rational is printed as a single-float, as
** SBCL prints it. */
static bool real_arg(Fmt *F, jt_V v, double *x)
{
  if (jt_isfloat(v)) {
    *x = jt_floatval(v);
    F->single = jt_issingle(v);
  } else if (jt_isrational(v)) {
    *x = (double)(float)jt_to_double(F->S, v);
    F->single = true;
  } else {
    return false;
  }
  return isfinite(*x);
}

/* A non-number under ~F ~E ~G: princ, padded on the right to w (SBCL). */
static void fmt_nonreal(Fmt *F, jt_V v, intptr_t w)
{
  if (w <= 0) { jt_princ(F->S, F->stream, v); return; }
  jt_V s = jt_print_to_string(F->S, v, false);
  JT_ROOT(F->S, s);
  size_t len = jt_str_(s)->len;
  out_lstr(F, s, 0, len);
  out_n(F, ' ', w - (intptr_t)len);
  JT_UNROOT(F->S, 1);
}

static void check_scale(Fmt *F, const Dir *d, intptr_t k)
{
  if (k > SCALE_MAX || k < -SCALE_MAX)
    fmt_error(F, d->pos, "scale factor %jd out of range", (intmax_t)k);
}

/* ~w,d,k,ovf,padF on a finite double. */
static void fixed(Fmt *F, const Dir *d, double x, intptr_t w, intptr_t dd,
                  intptr_t k, uint32_t ovf, uint32_t pad, bool at)
{
  char r[NUMBUF], ib[NUMBUF], fb[NUMBUF], sd[24];
  Fl f = {0};
  double ax = fabs(x);
  f.sign = signbit(x) ? '-' : at ? '+' : 0;
  check_scale(F, d, k);
  int X, n = digits_of(ax, F->single, k, sd, &X);
  layout(&f, sd, n, X, ib, fb);
  if (dd >= 0) {
    fix_fraction(&f, ax, k, (size_t)dd, r, fb);
  } else if (w >= 0) {
    /* Only w: round to the fraction digits the field has room for,
    ** dropping trailing zeros; a fraction that rounds to nothing is
    ** printed as one zero even past the field (~2F of 1.1 is "1.0"). */
    intptr_t avail = w - (f.sign ? 1 : 0) - (intptr_t)f.nip - 1;
    if ((intptr_t)f.nfp > avail) {
      size_t keep = avail > 0 ? (size_t)avail : 0;
      size_t len = round_scaled(ax, (int)keep + (int)k, r);
      split_fixed(&f, r, len, keep, fb);
      while (f.nfp > 0 && f.fp[f.nfp - 1] == '0') f.nfp--;
    }
    if (f.nfp == 0 && (ovf == END_CHAR || (intptr_t)fl_width(&f) < w)) {
      f.fp = "0";
      f.nfp = 1;
    }
  } else if (f.nfp == 0) {
    f.fp = "0";
    f.nfp = 1;
  }
  fl_emit(F, &f, w, ovf, pad, false);
}

/* Digits of ax rounded to s significant digits: D into buf (exactly s
** digits), *X such that ax ~ 0.D x 10^X.  ax > 0. */
static void round_sig(double ax, bool single, int s, char *buf, int *X)
{
  char sd[24];
  shortest_digits(ax, single, sd, X);
  for (int tries = 0; tries < 3; tries++) {
    size_t len = round_scaled(ax, s - *X, buf);
    if (len == (size_t)s) return;
    if (len > (size_t)s) {  /* rounded up to 10^s */
      (*X)++;
      buf[s] = 0;
      return;
    }
    (*X)--;  /* the shortest form crossed a power of ten the value did not */
  }
}

/* ~w,d,e,k,ovf,pad,expE on a finite double. */
static void exponential(Fmt *F, const Dir *d, double x, intptr_t w,
                        intptr_t dd, intptr_t e, intptr_t k, uint32_t ovf,
                        uint32_t pad, uint32_t expch, bool at)
{
  char dg[NUMBUF], fb[NUMBUF];
  Fl f = {0};
  double ax = fabs(x);
  f.sign = signbit(x) ? '-' : at ? '+' : 0;
  check_scale(F, d, k);
  int X, n;
  if (ax == 0) { strcpy(dg, "0"); n = 1; X = (int)k; }
  else n = shortest_digits(ax, F->single, dg, &X);

  intptr_t s = -1;  /* significant digits wanted; -1: the shortest */
  if (dd >= 0) {
    s = k > 0 ? dd + 1 : dd + k;
  } else if (w >= 0) {
    /* Only w: the fraction shrinks to fit (the exponent cannot). */
    int ex = X - (int)k;
    char t[32];
    intptr_t explen = 2 + snprintf(t, sizeof t, "%d", ex < 0 ? -ex : ex);
    if (e > explen - 2) explen = e + 2;
    intptr_t intpart = k > 0 ? k : 0;
    intptr_t frac = k > 0 ? (n > k ? n - k : 1) : n - k;
    intptr_t avail = w - (f.sign ? 1 : 0) - intpart - 1 - explen;
    if (frac > avail && avail >= 0) s = k > 0 ? k + avail : avail + k;
  }
  if (s >= 0 && s < 1) s = 1;
  if (s >= 1 && s < n) {  /* round the exact value */
    round_sig(ax, F->single, (int)s, dg, &X);
    n = (int)s;
  }
  /* Pad the digits with zeros up to s: materialised as far as the integer
  ** part needs them, the rest counted. */
  size_t zeros = s > n ? (size_t)(s - n) : 0;
  while (n < k) {
    dg[n++] = '0';
    if (zeros) zeros--;
  }
  if (k > 0) {
    f.ip = dg;
    f.nip = (size_t)k;
    f.fp = dg + k;
    f.nfp = (size_t)(n - k);
    if (f.nfp == 0 && zeros == 0 && s < 0) { f.fp = "0"; f.nfp = 1; }
    f.lead0 = false;
  } else {
    memset(fb, '0', (size_t)-k);
    memcpy(fb - k, dg, (size_t)n);
    f.ip = "";
    f.nip = 0;
    f.fp = fb;
    f.nfp = (size_t)(n - k);
    f.lead0 = true;
  }
  f.zeros = zeros;
  int ex = ax == 0 ? 0 : X - (int)k;
  char t[32];
  int nt = snprintf(t, sizeof t, "%d", ex < 0 ? -ex : ex);
  if (e >= 0 && nt > e && ovf != END_CHAR && w >= 0) {
    out_n(F, ovf, w);
    return;
  }
  f.nex = jt_utf8_encode(expch, f.ex);
  f.ex[f.nex++] = ex < 0 ? '-' : '+';
  f.exzeros = e > nt ? (size_t)(e - nt) : 0;
  memcpy(f.exd, t, (size_t)nt);
  f.nexd = (size_t)nt;
  fl_emit(F, &f, w, ovf, pad, false);
}

/* The exponent marker of ~E and ~G for the real real_arg saw: e for the
** default float format, else the format's own (d, f), as the printer. */
static uint32_t exponent_char(Fmt *F)
{
  if (F->single == jt_num_default_single(F->S)) return 'e';
  return F->single ? 'f' : 'd';
}

static void fmt_F(Fmt *F, const Dir *d, jt_V v)
{
  max_params(F, d, 5);
  intptr_t w = pint(F, d, 0, -1), dd = pint(F, d, 1, -1), k = pint(F, d, 2, 0);
  uint32_t ovf = pchar(F, d, 3, END_CHAR), pad = pchar(F, d, 4, ' ');
  double x;
  if (!real_arg(F, v, &x)) { fmt_nonreal(F, v, w); return; }
  fixed(F, d, x, w, dd, k, ovf, pad, d->at);
}

static void fmt_E(Fmt *F, const Dir *d, jt_V v)
{
  max_params(F, d, 7);
  intptr_t w = pint(F, d, 0, -1), dd = pint(F, d, 1, -1), e = pint(F, d, 2, -1);
  intptr_t k = pint(F, d, 3, 1);
  uint32_t ovf = pchar(F, d, 4, END_CHAR), pad = pchar(F, d, 5, ' ');
  uint32_t expch = pchar(F, d, 6, 0);
  double x;
  if (!real_arg(F, v, &x)) { fmt_nonreal(F, v, w); return; }
  if (expch == 0) expch = exponent_char(F);
  exponential(F, d, x, w, dd, e, k, ovf, pad, expch, d->at);
}

/* ~G, as CLHS 22.3.3.3 describes it: fixed notation followed by spaces
** where the magnitude allows, exponential otherwise. */
static void fmt_G(Fmt *F, const Dir *d, jt_V v)
{
  max_params(F, d, 7);
  intptr_t w = pint(F, d, 0, -1), dd = pint(F, d, 1, -1), e = pint(F, d, 2, -1);
  intptr_t k = pint(F, d, 3, 1);
  uint32_t ovf = pchar(F, d, 4, END_CHAR), pad = pchar(F, d, 5, ' ');
  uint32_t expch = pchar(F, d, 6, 0);
  double x;
  if (!real_arg(F, v, &x)) { fmt_nonreal(F, v, w); return; }
  if (expch == 0) expch = exponent_char(F);
  char sd[24];
  int X = 0, q = 1;
  if (x != 0) {
    int nd = shortest_digits(fabs(x), F->single, sd, &X);
    q = X > 0 && X > nd ? X : nd;
  }
  intptr_t n = X;
  intptr_t ee = e >= 0 ? e + 2 : 4;
  intptr_t ww = w >= 0 ? (w - ee > 0 ? w - ee : 0) : -1;
  intptr_t dg = dd >= 0 ? dd : (q > (n < 7 ? n : 7) ? q : (n < 7 ? n : 7));
  intptr_t d2 = dg - n;
  if (d2 >= 0 && d2 <= dg) {
    fixed(F, d, x, ww, d2, 0, ovf, pad, d->at);
    out_n(F, ' ', ee);
  } else {
    exponential(F, d, x, w, dg, e, k, ovf, pad, expch, d->at);
  }
}

/* ~d,n,w,pad$ */
static void fmt_dollar(Fmt *F, const Dir *d, jt_V v)
{
  max_params(F, d, 4);
  intptr_t dd = pint(F, d, 0, 2), n = pint(F, d, 1, 1), w = pint(F, d, 2, 0);
  uint32_t pad = pchar(F, d, 3, ' ');
  double x;
  if (!real_arg(F, v, &x)) { jt_princ(F->S, F->stream, v); return; }
  if (dd < 0) dd = 0;
  if (n < 0) n = 0;
  if (n > SCALE_MAX) fmt_error(F, d->pos, "parameter too large");
  char r[NUMBUF], fb[NUMBUF], ib[NUMBUF], sd[24];
  Fl f = {0};
  double ax = fabs(x);
  f.sign = signbit(x) ? '-' : d->at ? '+' : 0;
  int X, nd = digits_of(ax, F->single, 0, sd, &X);
  layout(&f, sd, nd, X, ib, fb);
  fix_fraction(&f, ax, 0, (size_t)dd, r, fb);
  f.lead0 = false;
  if (f.nip < (size_t)n) {  /* at least n integer digits */
    char *q = f.ip == ib ? r : ib;  /* a buffer f.ip is not in */
    size_t z = (size_t)n - f.nip;
    memset(q, '0', z);
    memcpy(q + z, f.ip, f.nip);
    f.ip = q;
    f.nip = (size_t)n;
  }
  fl_emit(F, &f, w, END_CHAR, pad, d->colon);
}

/* ------------------------------------------------------------- ~A and ~S */

static void fmt_object(Fmt *F, const Dir *d, jt_V v, bool escape)
{
  jt_State *S = F->S;
  max_params(F, d, 4);
  bool empty = d->colon && v == JT_NIL;  /* ~:A prints NIL as () */
  if (d->np == 0) {
    if (empty) out_ascii(F, "()", 2);
    else if (escape) jt_print(S, F->stream, v, true);
    else jt_princ(S, F->stream, v);
    return;
  }
  intptr_t mincol = pint(F, d, 0, 0), colinc = pint(F, d, 1, 1);
  intptr_t minpad = pint(F, d, 2, 0);
  uint32_t padchar = pchar(F, d, 3, ' ');
  jt_V s = empty ? jt_string_from_cstr(S, "()") : jt_print_to_string(S, v, escape);
  JT_ROOT(S, s);
  size_t len = jt_str_(s)->len;
  intptr_t pad = pad_amount(len, mincol, colinc, minpad);
  if (d->at) out_n(F, padchar, pad);
  out_lstr(F, s, 0, len);
  if (!d->at) out_n(F, padchar, pad);
  JT_UNROOT(S, 1);
}

/* ------------------------------------------------------------------- ~C */

static void fmt_char(Fmt *F, const Dir *d, jt_V v)
{
  jt_State *S = F->S;
  max_params(F, d, 0);
  if (!jt_ischar(v)) jt_type_error(S, v, JT_SYM(S, CHARACTER));
  uint32_t c = jt_charcode(v);
  if (d->at && !d->colon) {
    jt_print(S, F->stream, v, true);
  } else if (d->colon && jt_char_name_of(c) != NULL) {
    const char *name = jt_char_name_of(c);   /* Space too, though graphic */
    out_ascii(F, name, strlen(name));
  } else if (d->colon && (c < ' ' || (c >= 0x7F && c <= 0xA0))) {
    /* A named character: the printer's name, without the #\ prefix. */
    jt_V s = jt_print_to_string(S, v, true);
    JT_ROOT(S, s);
    const jt_String *t = jt_str_(s);
    size_t len = t->len, from = 0;
    if (len > 2 && t->chars[0] == '#' && t->chars[1] == '\\') from = 2;
    out_lstr(F, s, from, len);
    JT_UNROOT(S, 1);
  } else {
    out_c(F, c);
  }
}

/* ------------------------------------------------------------------- ~T */

static void fmt_tab(Fmt *F, const Dir *d)
{
  max_params(F, d, 2);
  intptr_t col = pint(F, d, 0, 1), inc = pint(F, d, 1, 1);
  /* on a pretty stream, a tab of the layout (~:T: section-relative) */
  if (jt_pretty_stream_p(F->stream) || d->colon) {
    if (pretty_on(F) && col >= 0 && inc >= 0)
      jt_pp_op(F->S, F->stream,
               d->colon ? (d->at ? JT_PP_TAB_SECTION_REL : JT_PP_TAB_SECTION)
                        : (d->at ? JT_PP_TAB_LINE_REL : JT_PP_TAB_LINE),
               col, inc);
    return;
  }
  intptr_t cur = (intptr_t)column(F);
  if (d->at) {  /* relative: col spaces, then to a multiple of inc */
    if (col < 0) col = 0;
    intptr_t to = cur + col;
    if (inc > 0 && to % inc) to += inc - to % inc;
    out_n(F, ' ', to - cur);
    return;
  }
  if (cur < col) out_n(F, ' ', col - cur);
  else if (inc > 0) out_n(F, ' ', inc - (cur - col) % inc);
}

/* ---------------------------------------------------------- case ~( ~) */

static void fmt_case(Fmt *F, const Dir *d, size_t body, size_t bend, Args *a,
                     int *status)
{
  jt_State *S = F->S;
  max_params(F, d, 0);
  jt_V ss = jt_make_string_stream(S), str = JT_NIL;
  JT_ROOT(S, ss);
  JT_ROOT(S, str);
  jt_stream_(ss)->column = column(F);  /* so ~& and ~T inside behave */
  Fmt sub = *F;
  sub.stream = ss;
  enter(&sub, d->pos);
  *status = run(&sub, body, bend, a);
  str = jt_stream_contents(S, ss, false);
  jt_String *s = jt_str_(str);
  bool inword = false, first = true;
  for (size_t i = 0; i < s->len; i++) {
    uint32_t c = s->chars[i];
    bool an = alnum(c);
    if (d->colon && d->at) c = upcase(c);
    else if (d->colon) c = an && !inword ? upcase(c) : downcase(c);
    else if (d->at) {
      c = an && first ? upcase(c) : downcase(c);
      if (an) first = false;
    } else c = downcase(c);
    inword = an;
    s->chars[i] = c;  /* str is fresh and private: a raw write is fine */
  }
  out_lstr(F, str, 0, s->len);
  JT_UNROOT(S, 2);
}

/* --------------------------------------------------------- conditional */

static size_t fmt_cond(Fmt *F, const Dir *d, Args *a, int *status)
{
  jt_State *S = F->S;
  char nm[16];
  max_params(F, d, 1);
  intptr_t want;
  if (d->colon && d->at)
    fmt_error(F, d->pos, "~:@[ is not a valid directive");
  if (d->colon) {
    want = arg_next(F, a, d) != JT_NIL;
  } else if (d->at) {
    want = arg_next(F, a, d) != JT_NIL ? 0 : -1;
    if (want == 0) arg_goto(F, a, (intptr_t)a->pos - 1, d);
  } else if (has_param(d, 0)) {
    want = pbound(F, d, 0, 0);
  } else {
    jt_V v = arg_next(F, a, d);
    if (!jt_isinteger(v)) jt_type_error(S, v, JT_SYM(S, INTEGER));
    want = jt_isfix(v) ? jt_fixval(v) : -1;
  }
  size_t start = d->end, cs = 0, ce = 0, ds = 0, de = 0;
  bool chosen = false, has_default = false, next_default = false;
  intptr_t idx = 0;
  Dir sep;
  for (;;) {
    next_sep(F, start, d, &sep, 1);
    if (idx == want) { cs = start; ce = sep.pos; chosen = true; }
    if (next_default) { ds = start; de = sep.pos; has_default = true; }
    if (sep.ch == ']') break;
    if (sep.ch != ';')
      fmt_error(F, sep.pos, "%s does not match ~[", dname(&sep, nm));
    if (next_default)
      fmt_error(F, sep.pos, "~:; must introduce the last clause of ~[");
    next_default = sep.colon;
    start = sep.end;
    idx++;
  }
  if (d->colon && idx != 1)
    fmt_error(F, d->pos, "~:[ takes exactly two clauses");
  if (d->at && idx != 0)
    fmt_error(F, d->pos, "~@[ takes exactly one clause");
  if (!chosen && has_default) { cs = ds; ce = de; chosen = true; }
  if (chosen) {
    enter(F, d->pos);
    *status = run(F, cs, ce, a);
    F->depth--;
  }
  return sep.end;
}

/* ---------------------------------------------------------- iteration */

/* Call a control function (made by formatter) on the stream and the
** elements of `args`; returns the arguments it did not use. */
static jt_V call_control(Fmt *F, jt_V fn, jt_V args)
{
  jt_State *S = F->S;
  jt_V *base = S->sp;
  JT_PUSH(S, fn);
  JT_PUSH(S, F->stream);
  jt_Walk w = jt_walk(args);
  for (jt_V l = args; jt_iscons(l); l = jt_walk_next(S, &w, l)) JT_PUSH(S, jt_car(l));
  jt_V rest = jt_apply(S, base[0], (int)(S->sp - base - 1), base + 1);
  S->sp = base;
  return jt_islist(rest) ? rest : JT_NIL;
}

/* ~{~} whose control argument is a function: each iteration calls it on
** the arguments left (~:{: on each sublist). */
static void iter_function(Fmt *F, const Dir *d, jt_V fn, Args *it, intptr_t maxn, bool once)
{
  jt_State *S = F->S;
  jt_V rest = JT_NIL;
  JT_ROOT(S, fn);
  JT_ROOT(S, rest);
  if (it->list) {
    rest = it->tail;
  } else {
    for (size_t i = it->count; i-- > it->pos;) rest = jt_cons(S, it->argv[i], rest);
  }
  for (intptr_t count = 0;; count++) {
    if (maxn >= 0 && count >= maxn) break;
    if (rest == JT_NIL && !(once && count == 0)) break;
    jt_fuel_tick(S);
    if (d->colon) {
      jt_V sublist = jt_iscons(rest) ? jt_car(rest) : JT_NIL;
      rest = jt_iscons(rest) ? jt_cdr(rest) : JT_NIL;
      call_control(F, fn, sublist);
    } else {
      jt_V before = rest;
      rest = call_control(F, fn, rest);
      if (rest == before && rest != JT_NIL && maxn < 0)
        fmt_error(F, d->pos, "the function of ~{ consumes no arguments and would loop forever");
    }
  }
  /* what is left is not the iteration's: the arguments it used are gone */
  size_t left = 0;
  for (jt_V l = rest; jt_iscons(l); l = jt_cdr(l)) left++;
  if (it->list) it->tail = rest;
  it->pos = it->count >= left ? it->count - left : it->count;
  JT_UNROOT(S, 2);
}

static size_t fmt_iter(Fmt *F, const Dir *d, Args *a, int *status)
{
  jt_State *S = F->S;
  Dir close;
  max_params(F, d, 1);
  size_t after = skip_construct(F, d, &close, 1);
  intptr_t maxn = pbound(F, d, 0, -1);
  bool once = close.colon;
  Fmt body = *F;
  size_t bs = d->end, be = close.pos;
  JT_ROOT(S, body.ctl);
  jt_V fn = JT_NIL;
  JT_ROOT(S, fn);
  if (bs == be) {  /* empty body: the control string is an argument */
    body.ctl = arg_next(F, a, d);
    if (jt_isfunction(body.ctl)) fn = body.ctl, body.ctl = F->ctl;
    else if (!jt_isstring(body.ctl))
      jt_type_error(S, body.ctl, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, STRING), JT_SYM(S, FUNCTION)));
    bs = 0;
    be = (size_t)-1;
  }
  Args own, *it = a;
  own.head = own.tail = JT_NIL;
  JT_ROOT(S, own.head);
  JT_ROOT(S, own.tail);
  if (!d->at) {
    args_list(S, &own, arg_next(F, a, d));
    it = &own;
  }
  enter(&body, d->pos);
  if (fn != JT_NIL) {
    iter_function(&body, d, fn, it, maxn, once);
    JT_UNROOT(S, 4);
    *status = RUN_OK;
    return after;
  }
  for (intptr_t count = 0;; count++) {
    if (maxn >= 0 && count >= maxn) break;
    if (remaining(it) == 0 && !(once && count == 0)) break;
    jt_fuel_tick(S);
    if (d->colon) {
      Args step;
      step.head = step.tail = JT_NIL;
      JT_ROOT(S, step.head);
      JT_ROOT(S, step.tail);
      args_list(S, &step, remaining(it) ? arg_next(F, it, d) : JT_NIL);
      step.outer = it;
      int st = run(&body, bs, be, &step);
      JT_UNROOT(S, 2);
      if (st == RUN_ESC_ALL) break;
    } else {
      size_t before = it->pos;
      if (run(&body, bs, be, it) != RUN_OK) break;
      if (it->pos == before && maxn < 0 && remaining(it) > 0)
        fmt_error(F, d->pos, "the body of ~{ consumes no arguments and "
                  "would loop forever");
    }
  }
  JT_UNROOT(S, 4);
  *status = RUN_OK;
  return after;
}

/* ------------------------------------------------------- logical blocks */

/* The literal text of clause [from, to) (a prefix or suffix) as a string. */
static jt_V clause_text(Fmt *F, size_t from, size_t to)
{
  jt_V s = jt_make_string(F->S, 0, 0);
  jt_o(s)->flags |= JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR;
  JT_ROOT(F->S, s);
  for (size_t i = from; i < to && i < ctl_len(F); i++) {
    if (cat(F, i) == '~')
      fmt_error(F, i, "the prefix and suffix of ~<...~:> are text without directives");
    jt_string_push(F->S, s, cat(F, i));
  }
  JT_UNROOT(F->S, 1);
  return s;
}

/* Run a logical block's body on `it`; `own` when it is the block's list
** argument, whose PPRINT-POP may end the body early.  ~^ ends it too: the
** suffix follows either way. */
static void run_block_body(Fmt *sub, size_t body, size_t body_end, Args *it, jt_V list, bool own)
{
  jt_Jmp j;
  jt_jmp_push(sub->S, &j, JT_JMP_BLOCK, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    if (own) args_block(it, list, &j, sub->stream);
    run(sub, body, body_end, it);
    jt_jmp_pop(sub->S, &j);
  }
}

/* ~<prefix~;body~;suffix~:> (~@; before the body: a per-line prefix): a
** logical block of the pretty printer over the list argument, or the
** remaining arguments with ~@<.  ~:< defaults the prefix and suffix to
** parentheses; ~:@> puts a fill newline after each run of blanks of the
** body.  Returns the index after the construct. */
static size_t fmt_block(Fmt *F, const Dir *d, Args *a, size_t nclause, bool fill)
{
  jt_State *S = F->S;
  if (nclause > 2) fmt_error(F, d->pos, "~<...~:> has at most three clauses");
  Dir c1, c2, close;
  size_t body = d->end, body_end;
  jt_V prefix = JT_NIL, suffix = JT_NIL, stream = JT_NIL;
  JT_ROOT(S, prefix);
  JT_ROOT(S, suffix);
  JT_ROOT(S, stream);
  next_sep(F, d->end, d, &c1, 1);
  bool per_line = false;
  if (nclause >= 1) {
    per_line = c1.at;
    prefix = clause_text(F, d->end, c1.pos);
    body = c1.end;
    next_sep(F, c1.end, d, &c2, 1);
    body_end = c2.pos;
    if (nclause == 2) {
      next_sep(F, c2.end, d, &close, 1);
      suffix = clause_text(F, c2.end, close.pos);
    } else {
      close = c2;
    }
  } else {
    body_end = c1.pos;
    close = c1;
  }
  if (d->colon && nclause == 0) prefix = jt_string_from_cstr(S, "(");
  if (d->colon && nclause < 2) suffix = jt_string_from_cstr(S, ")");
  Args own, *it = a;
  own.head = own.tail = JT_NIL;
  JT_ROOT(S, own.head);
  JT_ROOT(S, own.tail);
  jt_V l = JT_NIL;
  if (!d->at) {
    l = arg_next(F, a, d);
    if (!jt_islist(l)) {
      /* not a list: printed as by ~W, the block skipped */
      jt_print(S, F->stream, l, jt_symbol_value(S, JT_SYM(S, PRINT_ESCAPE)) != JT_NIL);
      JT_UNROOT(S, 5);
      return close.end;
    }
    own.head = own.tail = l;
    it = &own;
  }
  uint32_t none = 0;
  const jt_String *p = jt_isstring(prefix) ? jt_str_(prefix) : NULL;
  stream = jt_pp_begin_object(S, F->stream, p ? p->chars : &none, p ? p->len : 0, per_line, l);
  if (stream == JT_NIL) {   /* #n#: printed before */
    JT_UNROOT(S, 5);
    return close.end;
  }
  Fmt sub = *F;
  sub.stream = stream;
  sub.fill = fill;
  enter(&sub, d->pos);
  run_block_body(&sub, body, body_end, it, l, !d->at);
  const jt_String *x = jt_isstring(suffix) ? jt_str_(suffix) : NULL;
  jt_pp_end(S, stream, x ? x->chars : &none, x ? x->len : 0);
  JT_UNROOT(S, 5);
  return close.end;
}

/* ------------------------------------------------------- justification */

/* Whether [from, to) holds a directive of the pretty printer: ~W, ~_, ~I,
** ~:T or a logical block -- which justification cannot lay out. */
static bool has_pretty_directive(Fmt *F, size_t from, size_t to)
{
  size_t len = ctl_len(F);
  if (to > len) to = len;
  for (size_t i = from; i < to; i++) {
    if (cat(F, i) != '~') continue;
    Dir d;
    parse_dir(F, i, &d, NULL);
    if (d.ch == 'W' || d.ch == '_' || d.ch == 'I' || (d.ch == 'T' && d.colon)) return true;
    if (d.ch == '<') {
      Dir close;
      skip_construct(F, &d, &close, 1);
      if (close.colon) return true;
    }
    i = d.end - 1;
  }
  return false;
}

/* ~mincol,colinc,minpad,padchar<...~>: segments are formatted into strings
** first, then laid out with padding between them.  A first clause ended
** by ~spare,width:; is written before them when they would not fit on the
** line (width: *print-right-margin*, else 72).  ~<...~:> is a logical
** block (fmt_block). */
static size_t fmt_justify(Fmt *F, const Dir *d, Args *a, int *status)
{
  jt_State *S = F->S;
  max_params(F, d, 4);
  intptr_t mincol = pint(F, d, 0, 0), colinc = pint(F, d, 1, 1);
  intptr_t minpad = pint(F, d, 2, 0);
  uint32_t padchar = pchar(F, d, 3, ' ');
  if (colinc < 1) colinc = 1;
  jt_V segs = JT_NIL, ss = jt_make_string_stream(S), str = JT_NIL, overflow = JT_NIL;
  JT_ROOT(S, segs);
  JT_ROOT(S, ss);
  JT_ROOT(S, str);
  JT_ROOT(S, overflow);
  Fmt sub = *F;
  sub.stream = ss;
  enter(&sub, d->pos);
  /* First find the clauses and the close, which decides the kind. */
  size_t start = d->end, nclause = 0;
  Dir sep, overflow_sep;
  bool prefix_clause = false;
  for (;;) {
    next_sep(F, start, d, &sep, 1);
    if (sep.ch == '>') break;
    if (sep.ch != ';') {
      char nm[16];
      fmt_error(F, sep.pos, "%s does not match ~<", dname(&sep, nm));
    }
    if (sep.colon && nclause == 0) { prefix_clause = true; overflow_sep = sep; }
    start = sep.end;
    nclause++;
  }
  size_t after = sep.end;
  *status = RUN_OK;
  if (sep.colon) {
    after = fmt_block(F, d, a, nclause, sep.at);
    JT_UNROOT(S, 4);
    return after;
  }
  /* justification lays out text: the pretty printer's directives cannot
  ** be inside it, nor anywhere with its ~:; form (CLHS 22.3.5.2) */
  if (has_pretty_directive(F, d->end, sep.pos) ||
      (prefix_clause && has_pretty_directive(F, 0, ctl_len(F))))
    fmt_error(F, d->pos, "~<...~> cannot hold ~W, ~_, ~I, ~:T or ~<...~:>, and its ~:; form "
              "cannot be used with them in one control string");
  size_t nsegs = 0, total = 0;
  start = d->end;
  for (size_t c = 0; c <= nclause; c++) {
    Dir s;
    next_sep(F, start, d, &s, 1);
    int st = run(&sub, start, s.pos, a);
    str = jt_stream_contents(S, ss, true);
    if (st != RUN_OK) break;  /* only completed segments count */
    if (c == 0 && prefix_clause) overflow = str;
    if (!(c == 0 && prefix_clause)) {
      segs = jt_cons(S, str, segs);
      total += jt_str_(str)->len;
      nsegs++;
    }
    start = s.end;
  }
  segs = jt_nreverse_list(segs);
  intptr_t gaps = (intptr_t)nsegs - 1 + (d->colon ? 1 : 0) + (d->at ? 1 : 0);
  bool right = false;
  /* minpad goes between segments (and outside them with : and @): a lone
  ** segment gets none, it is only right-justified in mincol */
  intptr_t need = (intptr_t)total + (gaps > 0 ? gaps : 0) * (minpad > 0 ? minpad : 0);
  if (gaps <= 0) { gaps = 1; right = !d->at; }
  intptr_t width = mincol;
  if (need > width) width += (need - mincol + colinc - 1) / colinc * colinc;
  intptr_t padding = width - (intptr_t)total;
  intptr_t each = padding / gaps, extra = padding % gaps, gap = 0;
  if (jt_isstring(overflow)) {
    jt_V m = jt_symbol_value(S, JT_SYM(S, PRINT_RIGHT_MARGIN));
    intptr_t spare = pint(F, &overflow_sep, 0, 0);
    intptr_t line = pint(F, &overflow_sep, 1, jt_isfix(m) && jt_fixval(m) > 0 ? jt_fixval(m) : 72);
    if ((intptr_t)column(F) + width + spare > line)
      out_lstr(F, overflow, 0, jt_str_(overflow)->len);
  }
  /* The remainder goes to the rightmost gaps. */
#define GAP() do { out_n(F, padchar, each + (gap >= gaps - extra ? 1 : 0)); \
                   gap++; } while (0)
  if (d->colon || (right && nsegs <= 1)) GAP();
  for (jt_V l = segs; jt_iscons(l); l = jt_cdr(l)) {
    out_lstr(F, jt_car(l), 0, jt_str_(jt_car(l))->len);
    if (jt_iscons(jt_cdr(l))) GAP();
  }
  if (d->at && gap < gaps) GAP();
#undef GAP
  JT_UNROOT(S, 4);
  return after;
}

/* -------------------------------------------------------------- ~? and ~/ */

/* Format with another control (string or function) over `a`. */
static void subformat(Fmt *F, const Dir *d, jt_V ctl, Args *a)
{
  jt_State *S = F->S;
  if (jt_isfunction(ctl) && a->list) {
    jt_V *base = S->sp;
    JT_PUSH(S, F->stream);
    jt_Walk w = jt_walk(a->tail);
    for (jt_V l = a->tail; jt_iscons(l); l = jt_walk_next(S, &w, l)) JT_PUSH(S, jt_car(l));
    jt_apply(S, ctl, (int)(S->sp - base), base);
    S->sp = base;
    return;
  }
  if (!jt_isstring(ctl)) jt_type_error(S, ctl, JT_SYM(S, STRING));
  Fmt sub = *F;
  sub.ctl = ctl;
  JT_ROOT(S, sub.ctl);
  enter(&sub, d->pos);
  run(&sub, 0, (size_t)-1, a);  /* ~^ ends just this control string */
  JT_UNROOT(S, 1);
}

static void fmt_indirect(Fmt *F, const Dir *d, Args *a)
{
  jt_State *S = F->S;
  max_params(F, d, 0);
  jt_V ctl = arg_next(F, a, d);
  JT_ROOT(S, ctl);
  if (d->at) {
    if (!jt_isstring(ctl)) jt_type_error(S, ctl, JT_SYM(S, STRING));
    subformat(F, d, ctl, a);
  } else {
    Args own;
    own.head = own.tail = JT_NIL;
    JT_ROOT(S, own.head);
    JT_ROOT(S, own.tail);
    args_list(S, &own, arg_next(F, a, d));
    subformat(F, d, ctl, &own);
    JT_UNROOT(S, 2);
  }
  JT_UNROOT(S, 1);
}

/* ~/name/: call the function with stream, argument, colon, at and the
** parameters. */
static void fmt_call(Fmt *F, const Dir *d, Args *a)
{
  jt_State *S = F->S;
  char name[128], pname[128];
  size_t n = 0, pn = 0;
  size_t from = d->name_start, colon = d->name_end;
  /* pkg:name or pkg::name (the name may hold colons); without a package,
  ** COMMON-LISP-USER */
  for (size_t i = d->name_start; i < d->name_end; i++)
    if (cat(F, i) == ':') {
      colon = i;
      from = i + 1 < d->name_end && cat(F, i + 1) == ':' ? i + 2 : i + 1;
      break;
    }
  for (size_t i = d->name_start; i < colon && colon < d->name_end; i++) {
    if (pn > sizeof pname - 8) fmt_error(F, d->pos, "package name too long");
    pn += jt_utf8_encode(upcase(cat(F, i)), pname + pn);
  }
  for (size_t i = from; i < d->name_end; i++) {
    if (n > sizeof name - 8) fmt_error(F, d->pos, "function name too long");
    n += jt_utf8_encode(upcase(cat(F, i)), name + n);
  }
  jt_V pkg = colon < d->name_end ? jt_package_named(S, pname, pn) : jt_package_of_index(S, JT_PKG_USER);
  if (pkg == JT_NIL) fmt_error(F, d->pos, "~/%.*s/ names a package that does not exist", (int)pn, pname);
  jt_V sym = jt_find_accessible(S, pkg, name, n);
  if (sym == JT_NOVALUE || sym == JT_UNBOUND || sym == 0)
    fmt_error(F, d->pos, "~/%.*s/ names no function", (int)n, name);
  jt_V fn = jt_fdefinition(S, sym);
  jt_V arg = arg_next(F, a, d);
  jt_V *base = S->sp;
  JT_PUSH(S, fn);
  JT_PUSH(S, F->stream);
  JT_PUSH(S, arg);
  JT_PUSH(S, jt_bool(d->colon));
  JT_PUSH(S, jt_bool(d->at));
  for (int i = 0; i < d->np; i++) {
    const Param *p = &d->p[i];
    jt_V pv = p->big != JT_NIL ? p->big
              : p->kind == P_INT ? jt_make_integer(S, p->v)
              : p->kind == P_CHAR ? jt_mkchar((uint32_t)p->v) : JT_NIL;
    JT_PUSH(S, pv);
  }
  jt_apply(S, base[0], (int)(S->sp - base - 1), base + 1);
  S->sp = base;
}

/* ------------------------------------------------------------ the engine */

/* p <=> q, exactly when either is a bignum V argument. */
static int param_cmp(Fmt *F, const Param *p, const Param *q)
{
  if (p->big != JT_NIL || q->big != JT_NIL) {
    jt_State *S = F->S;
    jt_V x = p->big != JT_NIL ? p->big : jt_make_integer(S, p->v);
    JT_ROOT(S, x);
    jt_V y = q->big != JT_NIL ? q->big : jt_make_integer(S, q->v);
    JT_UNROOT(S, 1);
    return jt_num_cmp(S, x, y);
  }
  return p->v < q->v ? -1 : p->v > q->v;
}

static bool escape_test(Fmt *F, const Dir *d, Args *a)
{
  const Param *v[3];
  int n = 0;
  for (int i = 0; i < d->np && n < 3; i++)
    if (d->p[i].kind != P_NONE) v[n++] = &d->p[i];
  switch (n) {
  case 0:
    if (d->colon) return a->outer ? remaining(a->outer) == 0 : remaining(a) == 0;
    return remaining(a) == 0;
  case 1: return v[0]->v == 0;
  case 2: return param_cmp(F, v[0], v[1]) == 0;
  default: return param_cmp(F, v[0], v[1]) <= 0 && param_cmp(F, v[1], v[2]) <= 0;
  }
}

/* Run the control string from `start` to `end` (clipped to its length). */
static int run(Fmt *F, size_t start, size_t end, Args *a)
{
  jt_State *S = F->S;
  char nm[16];
  size_t i = start;
  for (;;) {
    size_t len = ctl_len(F), lim = end < len ? end : len, j = i;
    while (j < lim && cat(F, j) != '~') j++;
    if (j > i) out_text(F, i, j);
    if (j >= lim) return RUN_OK;
    Dir d;
    parse_dir(F, j, &d, a);
    i = d.end;
    int status = RUN_OK;
    switch (d.ch) {
    case 'A': fmt_object(F, &d, arg_next(F, a, &d), false); break;
    case 'S': fmt_object(F, &d, arg_next(F, a, &d), true); break;
    case 'W':
      max_params(F, &d, 0);
      jt_print(S, F->stream, arg_next(F, a, &d),
               jt_symbol_value(S, JT_SYM(S, PRINT_ESCAPE)) != JT_NIL);
      break;
    case 'D': max_params(F, &d, 4); fmt_integer(F, arg_next(F, a, &d), 10, &d, 0); break;
    case 'B': max_params(F, &d, 4); fmt_integer(F, arg_next(F, a, &d), 2, &d, 0); break;
    case 'O': max_params(F, &d, 4); fmt_integer(F, arg_next(F, a, &d), 8, &d, 0); break;
    case 'X': max_params(F, &d, 4); fmt_integer(F, arg_next(F, a, &d), 16, &d, 0); break;
    case 'R': {
      max_params(F, &d, 5);
      jt_V v = arg_next(F, a, &d);
      if (has_param(&d, 0)) {
        intptr_t radix = pint(F, &d, 0, 10);
        if (radix < 2 || radix > 36)
          fmt_error(F, d.pos, "radix %jd is not between 2 and 36", (intmax_t)radix);
        fmt_integer(F, v, (int)radix, &d, 1);
        break;
      }
      if (!jt_isinteger(v)) jt_type_error(S, v, JT_SYM(S, INTEGER));
      if (d.at) fmt_roman(F, v, &d, d.colon);
      else fmt_english(F, v, &d, d.colon);
      break;
    }
    case 'P': {
      max_params(F, &d, 0);
      if (d.colon) arg_goto(F, a, (intptr_t)a->pos - 1, &d);
      bool plural = !jt_eql(arg_next(F, a, &d), jt_mkfix(1));
      if (d.at) out_ascii(F, plural ? "ies" : "y", plural ? 3 : 1);
      else if (plural) out_c(F, 's');
      break;
    }
    case 'C': fmt_char(F, &d, arg_next(F, a, &d)); break;
    case 'F': fmt_F(F, &d, arg_next(F, a, &d)); break;
    case 'E': fmt_E(F, &d, arg_next(F, a, &d)); break;
    case 'G': fmt_G(F, &d, arg_next(F, a, &d)); break;
    case '$': fmt_dollar(F, &d, arg_next(F, a, &d)); break;
    case '%': case '|': case '~': {
      max_params(F, &d, 1);
      uint32_t c = d.ch == '%' ? '\n' : d.ch == '|' ? '\f' : '~';
      out_n(F, c, pint(F, &d, 0, 1));
      break;
    }
    case '&': {
      max_params(F, &d, 1);
      intptr_t n = pint(F, &d, 0, 1);
      if (n > 0) { jt_stream_fresh_line(S, F->stream); out_n(F, '\n', n - 1); }
      break;
    }
    case '\n':
      max_params(F, &d, 0);
      if (d.at) out_c(F, '\n');
      if (!d.colon) {
        uint32_t c;
        while ((c = cat(F, i)) == ' ' || c == '\t' || c == '\f' || c == '\r') i++;
      }
      break;
    case 'T': fmt_tab(F, &d); break;
    case '_':  /* ~_ linear, ~:_ fill, ~@_ miser, ~:@_ mandatory */
      max_params(F, &d, 0);
      if (pretty_on(F))
        jt_pp_op(S, F->stream, d.colon ? (d.at ? JT_PP_MANDATORY : JT_PP_FILL)
                                       : (d.at ? JT_PP_MISER : JT_PP_LINEAR), 0, 0);
      break;
    case 'I':  /* ~nI from the block's start, ~n:I from here */
      max_params(F, &d, 1);
      if (pretty_on(F))
        jt_pp_op(S, F->stream, d.colon ? JT_PP_INDENT_CURRENT : JT_PP_INDENT_BLOCK,
                 pint(F, &d, 0, 0), 0);
      break;
    case '*': {
      max_params(F, &d, 1);
      if (d.at) arg_goto(F, a, pint(F, &d, 0, 0), &d);
      else {
        intptr_t n = pint(F, &d, 0, 1);
        arg_goto(F, a, d.colon ? (intptr_t)a->pos - n : (intptr_t)a->pos + n, &d);
      }
      break;
    }
    case '?': fmt_indirect(F, &d, a); break;
    case '/': fmt_call(F, &d, a); break;
    case '(': {
      Dir close;
      i = skip_construct(F, &d, &close, 1);
      fmt_case(F, &d, d.end, close.pos, a, &status);
      break;
    }
    case '[': i = fmt_cond(F, &d, a, &status); break;
    case '{': i = fmt_iter(F, &d, a, &status); break;
    case '<': i = fmt_justify(F, &d, a, &status); break;
    case '^':
      max_params(F, &d, 3);
      if (escape_test(F, &d, a)) return d.colon ? RUN_ESC_ALL : RUN_ESC;
      break;
    case ']': case '}': case ')': case '>':
      fmt_error(F, d.pos, "%s without a matching opening directive",
                dname(&d, nm));
    case ';':
      fmt_error(F, d.pos, "~; outside ~[ or ~<");
    default:
      fmt_error(F, d.pos, "unknown directive %s", dname(&d, nm));
    }
    if (status != RUN_OK) return status;
  }
}

/* ------------------------------------------------------------- interface */

void jt_format(jt_State *S, jt_V stream, jt_V control, int argc, jt_V *argv)
{
  Fmt F = {S, stream, control, 0, false, false};
  JT_ROOT(S, F.stream);
  JT_ROOT(S, F.ctl);
  if (jt_isfunction(control)) {
    /* A function made by formatter: (fn stream args...). */
    jt_V *base = S->sp;
    JT_PUSH(S, stream);
    for (int i = 0; i < argc; i++) JT_PUSH(S, argv[i]);
    jt_apply(S, control, argc + 1, base);
    S->sp = base;
  } else {
    if (!jt_isstring(control))
      jt_type_error(S, control, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, STRING),
                                        JT_SYM(S, FUNCTION)));
    Args a;
    args_vector(&a, argv, argc);
    run(&F, 0, (size_t)-1, &a);
  }
  JT_UNROOT(S, 2);
}

/* (format destination control-string &rest args) */
JT_FN(f_format)
{
  jt_V dest = argv[0];
  if (dest == JT_NIL || jt_isstring(dest)) {
    if (dest != JT_NIL && !(jt_o(dest)->flags & JT_ARR_FILLPTR))
      jt_type_error(S, dest, jt_list(S, 3, JT_SYM(S, AND), JT_SYM(S, STRING),
                                     jt_list(S, 2, JT_SYM(S, SATISFIES),
                                             jt_intern(S, "ARRAY-HAS-FILL-POINTER-P"))));
    jt_V ss = jt_make_string_stream(S), res = JT_NIL;
    JT_ROOT(S, ss);
    JT_ROOT(S, res);
    if (dest != JT_NIL) {  /* start at the string's current column */
      const jt_String *s = jt_str_(dest);
      size_t k = s->len;
      while (k > 0 && s->chars[k - 1] != '\n') k--;
      jt_stream_(ss)->column = s->len - k;
    }
    jt_format(S, ss, argv[1], argc - 2, argv + 2);
    res = jt_stream_contents(S, ss, false);
    if (dest != JT_NIL) {
      for (size_t i = 0; i < jt_str_(res)->len; i++)
        jt_string_push(S, dest, jt_str_(res)->chars[i]);
      res = JT_NIL;
    }
    JT_UNROOT(S, 2);
    return res;
  }
  if (dest != JT_T && !jt_is(dest, JT_TSTREAM))
    jt_type_error(S, dest, jt_list(S, 5, JT_SYM(S, OR), JT_SYM(S, NULL_),
                                   JT_SYM(S, BOOLEAN), JT_SYM(S, STREAM),
                                   JT_SYM(S, STRING)));
  /* format's T is *standard-output* (a stream designator's T is *terminal-io*) */
  jt_format(S, jt_output_stream(S, dest == JT_T ? JT_NIL : dest), argv[1], argc - 2, argv + 2);
  return JT_NIL;
}

/* (%format-with-rest stream control args): format ARGS (a list) under the
** string CONTROL to STREAM; the arguments not consumed.  What a function
** made by formatter returns. */
JT_FN(f_format_with_rest)
{
  JT_UNUSED_ARGS;
  jt_V stream = jt_output_stream(S, argv[0]);
  if (!jt_isstring(argv[1])) jt_type_error(S, argv[1], JT_SYM(S, STRING));
  jt_V *base = S->sp;
  int n = 0;
  jt_Walk w = jt_walk(argv[2]);
  for (jt_V l = argv[2]; jt_iscons(l); l = jt_walk_next(S, &w, l)) { JT_PUSH(S, jt_car(l)); n++; }
  Fmt F = {S, stream, argv[1], 0, false, false};
  JT_ROOT(S, F.stream);
  JT_ROOT(S, F.ctl);
  Args a;
  args_vector(&a, base, n);
  run(&F, 0, (size_t)-1, &a);
  JT_UNROOT(S, 2);
  jt_V rest = argv[2];
  for (size_t i = 0; i < a.pos && jt_iscons(rest); i++) rest = jt_cdr(rest);
  S->sp = base;
  return rest;
}

static const jt_Reg format_fns[] = {
  {"%FORMAT-WITH-REST", f_format_with_rest, 3, 3,
   "(%format-with-rest stream control args) Format ARGS; the ones not consumed."},
  {"FORMAT", f_format, 2, -1,
   "(format destination control-string &rest args) Format ARGS under "
   "CONTROL-STRING to DESTINATION: NIL returns a string, T writes to "
   "*standard-output*, a stream or a string with a fill pointer receive "
   "the output."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_format(jt_State *S) { jt_register(S, format_fns); }
