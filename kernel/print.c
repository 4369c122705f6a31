/*
** print.c — the printer.
**
** One recursive printer serves two sinks.  Stream mode (jt_print) batches
** characters into a small buffer flushed to a Lisp stream; it honours every
** *print-...* variable, may signal (print-not-readable, output limits) and
** may run Lisp code (condition reports).  Safe mode (jt_print_cstr) writes
** UTF-8 into a C buffer with a byte budget and never signals: it is what
** error reports, backtraces and the host API use, so it must work on any
** value, however broken the dynamic environment.  Its only Lisp code is a
** condition's report, run under its own host-entry jump record.
**
** Termination.  Lists are walked iteratively along the cdr, so only car
** nesting recurses, and that recursion is capped (and checked against the
** C stack budget).  With *print-circle* a first pass counts how often each
** cons, vector and structure is reached; the second pass labels the shared
** ones #n= and refers back with #n#.  The visit counts live in a C-side open
** addressing table whose storage is a Lisp vector in stream mode (so an
** error unwinding through the printer leaks nothing) and malloc'd memory in
** safe mode (which must not allocate Lisp objects that could signal).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_grow.h"
#include "jt_eval.h"   /* jt_Lambda: anonymous functions print their lambda list */
#include "jt_clos.h"   /* print-object, metaobjects */

#define MAX_REC       10000  /* stream mode: deeper car nesting prints "..." */
#define MAX_REC_SAFE  100    /* safe mode: deeper nesting prints "#" */
#define SCAN_LIMIT_SAFE 1000000  /* safe mode: objects visited for circle */
#define CSTACK_MARGIN (64 * 1024)
#define PEND 256
#define EMPTY JT_NIL      /* key of a free slot in the circle table */

enum { CASE_UP, CASE_DOWN, CASE_CAP };
/* The readtable's case, which decides which letters need escapes. */
enum { RT_UPCASE, RT_DOWNCASE, RT_PRESERVE, RT_INVERT };

typedef struct Printer {
  jt_State *S;
  /* sink */
  jt_V stream;          /* stream mode target */
  uint32_t pend[PEND];  /* stream mode: characters not yet written */
  size_t npend;
  jt_Buf *cbuf;         /* safe mode target */
  size_t max;           /* safe mode byte budget */
  bool full;            /* budget exhausted: print nothing more */
  bool safe;
  /* settings, read once from the special variables */
  bool escape, readably, radix, circle, array, gensym;
  /* canonical: symbols are qualified relative to COMMON-LISP-USER, always
  ** with "::" (entry names and keys of a world: they must not depend on
  ** the current package or on what is exported) */
  bool canonical;
  jt_V package;         /* the current package (prefixes are relative to it) */
  int base, pcase, rcase;
  intptr_t length, level;  /* -1: unlimited */
  int maxrec, rec;
  size_t ticks;
  /* circle table: 2*cap words of (key, fixnum) pairs; the fixnum is the
  ** visit count (1, 2) or, once labelled, minus the label */
  jt_V table;           /* stream mode: the vector owning the words */
  jt_V *words;
  size_t cap, count;
  intptr_t nextlabel;
  /* the table is the pretty stream's (P->stream), shared with the logical
  ** blocks printing to it: labels are numbered through the stream */
  bool shared;
  size_t scanned;
  jt_V plain;           /* print-object's default method: printed without it */
  /* pretty printing: lists, vectors and structures are logical blocks of
  ** the pretty stream (pretty.c) that `stream` becomes */
  bool pretty;
  jt_V dispatch;        /* a pprint dispatch table with entries, or NIL */
} Printer;

static void print_obj(Printer *P, jt_V v, intptr_t depth);
static void out_ascii(Printer *P, const char *s);
void jt_open_pretty(jt_State *S);  /* pretty.c: the pretty printer's built-ins */
static void printer_init(Printer *P, jt_State *S);
static void load_settings(Printer *P, bool escape);

/* ------------------------------------------------------------------- sink */

static void flush(Printer *P)
{
  if (P->npend) {
    size_t n = P->npend;
    P->npend = 0;
    jt_stream_write(P->S, P->stream, P->pend, n);
    if (P->pretty) jt_pp_check_size(P->S, P->stream);
  }
}

/* Pretty printing (stream mode under *print-pretty*): a logical block with
** a prefix and suffix of ASCII text, its conditional newlines and
** indentation.  The first block opens a pretty stream on the target and
** the outermost one's end writes the laid-out text back to it. */
static size_t ascii_chars(const char *s, uint32_t *buf, size_t cap)
{
  size_t n = 0;
  for (; s[n] && n < cap; n++) buf[n] = (unsigned char)s[n];
  return n;
}

static void pp_open(Printer *P, const char *prefix)
{
  if (!P->pretty) { out_ascii(P, prefix); return; }
  if (P->npend + 8 < PEND && jt_pp_depth(P->stream) > 0) {
    /* a nested block: no need to write out what is pending */
    out_ascii(P, prefix);
    jt_pp_nest(P->S, P->stream, P->npend);   /* cannot fail: a block is open */
    return;
  }
  flush(P);
  uint32_t buf[8];
  size_t n = ascii_chars(prefix, buf, 8);
  jt_V before = P->stream;
  P->stream = jt_pp_begin(P->S, P->stream, buf, n, false);
  /* a new pretty stream: what it prints inside shares the circle table */
  if (P->stream != before && P->circle && P->words && !P->shared) {
    jt_pp_set_circle(P->S, P->stream, P->table, P->cap, P->nextlabel);
    P->shared = true;
  }
}

static void pp_close(Printer *P, const char *suffix)
{
  if (!P->pretty) { out_ascii(P, suffix); return; }
  if (P->npend + 8 < PEND && jt_pp_unnest(P->S, P->stream, strlen(suffix), P->npend)) {
    out_ascii(P, suffix);
    return;
  }
  flush(P);
  uint32_t buf[8];
  size_t n = ascii_chars(suffix, buf, 8);
  jt_V before = P->stream;
  P->stream = jt_pp_end(P->S, P->stream, buf, n);
  if (P->stream != before && P->shared) {
    P->nextlabel = jt_pp_labels(before);
    P->shared = false;
  }
}

static void pp_op(Printer *P, int kind, intptr_t amount)
{
  if (!P->pretty) return;
  jt_pp_op_pending(P->S, P->stream, kind, amount, P->npend);
}

/* Safe mode: append bytes within the budget.  On overflow the text is cut
** back to a character boundary and ends in "...". */
static void out_bytes(Printer *P, const char *s, size_t n)
{
  if (P->full) return;
  jt_Buf *b = P->cbuf;
  if (b->n + n <= P->max) { jt_buf_put(b, s, n); return; }
  /* Cut at L <= max - 3 in the text b->p followed by s; the byte at L
  ** exists because L < b->n + n.  Back up while it continues a character. */
  size_t L = P->max >= 3 ? P->max - 3 : 0;
  for (;;) {
    unsigned char c = L < b->n ? (unsigned char)b->p[L] : (unsigned char)s[L - b->n];
    if (L == 0 || (c & 0xC0) != 0x80) break;
    L--;
  }
  if (L > b->n) jt_buf_put(b, s, L - b->n);
  else b->n = L;
  jt_buf_put(b, "...", P->max - L < 3 ? P->max - L : 3);
  P->full = true;
}

static void out_char(Printer *P, uint32_t c)
{
  if (P->safe) {
    char u[4];
    out_bytes(P, u, jt_utf8_encode(c, u));
    return;
  }
  P->pend[P->npend++] = c;
  if (P->npend == PEND) flush(P);
}

static void out_ascii(Printer *P, const char *s)
{
  if (P->safe) { out_bytes(P, s, strlen(s)); return; }
  while (*s) out_char(P, (unsigned char)*s++);
}

static void out_utf8(Printer *P, const char *s, size_t n)
{
  if (P->safe) { out_bytes(P, s, n); return; }
  size_t i = 0;
  while (i < n) out_char(P, jt_utf8_decode(s, n, &i));
}

static void out_hexid(Printer *P, jt_V v)
{
  char tmp[32];
  snprintf(tmp, sizeof tmp, "{%lX}", (unsigned long)(v >> 3));
  out_ascii(P, tmp);
}

/* ---------------------------------------------------------------- settings */

/* The current dynamic value of a special, or `dflt` when unbound. */
static jt_V var(Printer *P, jt_V sym, jt_V dflt)
{
  jt_V v = jt_symobj(P->S, sym)->value;
  return v == JT_UNBOUND ? dflt : v;
}

/* *print-length* / *print-level*: NIL or a non-negative integer. */
static intptr_t limit_var(Printer *P, jt_V sym)
{
  jt_State *S = P->S;
  jt_V v = var(P, sym, JT_NIL);
  if (v == JT_NIL) return -1;
  if (jt_isfix(v) && jt_fixval(v) >= 0) return jt_fixval(v);
  if (jt_isbig(v) && mpz_sgn(jt_big_(v)->z) > 0) return -1;  /* practically unlimited */
  if (P->safe) return -1;
  jt_V bad = v;
  jt_bind(S, sym, JT_NIL);   /* so that the error report itself prints */
  jt_type_error(S, bad, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, NULL_),
                                JT_SYM(S, UNSIGNED_BYTE)));
}

static void load_settings(Printer *P, bool escape)
{
  jt_State *S = P->S;
  P->readably = !P->safe && var(P, JT_SYM(S, PRINT_READABLY), JT_NIL) != JT_NIL;
  P->escape = escape || P->readably;
  P->radix = var(P, JT_SYM(S, PRINT_RADIX), JT_NIL) != JT_NIL;
  P->circle = var(P, JT_SYM(S, PRINT_CIRCLE), JT_NIL) != JT_NIL;
  P->array = P->readably || var(P, JT_SYM(S, PRINT_ARRAY), JT_T) != JT_NIL;
  P->gensym = P->readably || var(P, JT_SYM(S, PRINT_GENSYM), JT_T) != JT_NIL;
  jt_V pkg = var(P, JT_SYM(S, PACKAGE_VAR), JT_NIL);
  if (!jt_is(pkg, JT_TPACKAGE) || jt_pkg_(pkg)->name == JT_NIL || P->canonical)
    pkg = jt_package_of_index(S, JT_PKG_USER);
  P->package = pkg;
  jt_V c = var(P, JT_SYM(S, PRINT_CASE), JT_NIL);
  P->pcase = c == JT_SYM(S, K_DOWNCASE) ? CASE_DOWN
           : c == JT_SYM(S, K_CAPITALIZE) ? CASE_CAP : CASE_UP;
  jt_V rt = var(P, JT_SYM(S, READTABLE_VAR), JT_NIL);
  /* printing readably: for the standard readtable, as SBCL does; an
  ** entry's name (canonical): for the kernel's reads, which use it */
  P->rcase = RT_UPCASE;
  if (!P->readably && !P->canonical && jt_isstruct(rt) && jt_o(rt)->aux >= 1 && jt_layout_(jt_struct_(rt)->layout)->name == JT_SYM(S, READTABLE)) {
    jt_V rc = jt_struct_(rt)->slots[0];
    P->rcase = rc == JT_SYM(S, K_DOWNCASE) ? RT_DOWNCASE : rc == JT_SYM(S, K_PRESERVE) ? RT_PRESERVE
             : rc == JT_SYM(S, K_INVERT) ? RT_INVERT : RT_UPCASE;
  }
  jt_V b = var(P, JT_SYM(S, PRINT_BASE), jt_mkfix(10));
  if (jt_isfix(b) && jt_fixval(b) >= 2 && jt_fixval(b) <= 36) {
    P->base = (int)jt_fixval(b);
  } else {
    P->base = 10;
    if (!P->safe) {
      jt_bind(S, JT_SYM(S, PRINT_BASE), jt_mkfix(10));
      jt_type_error(S, b, jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(2),
                                  jt_mkfix(36)));
    }
  }
  P->length = limit_var(P, JT_SYM(S, PRINT_LENGTH));
  P->level = limit_var(P, JT_SYM(S, PRINT_LEVEL));
  if (P->readably) P->length = P->level = -1;   /* ignored, as *print-lines* is */
  P->pretty = !P->safe && var(P, JT_SYM(S, PRINT_PRETTY), JT_NIL) != JT_NIL;
  /* the standard table has no entries: what it does is this printer's */
  jt_V table = P->pretty ? var(P, JT_SYM(S, PRINT_PPRINT_DISPATCH), JT_NIL) : JT_NIL;
  if (jt_isstruct(table) && jt_struct_(table)->h.aux >= 1 && jt_iscons(jt_struct_(table)->slots[0]))
    P->dispatch = table;
  P->maxrec = P->safe ? MAX_REC_SAFE : MAX_REC;
}

/* True when printing one level deeper could exhaust the C stack. */
static bool too_deep(Printer *P)
{
  if (P->rec >= P->maxrec) return true;
  jt_State *S = P->S;
  if (S->cstack_base && S->cstack_limit) {
    char here;
    char *base = S->cstack_base;
    size_t used = base > &here ? (size_t)(base - &here) : (size_t)(&here - base);
    if (used + CSTACK_MARGIN > S->cstack_limit) return true;
  }
  return false;
}

/* Charge long prints against the fuel budget (stream mode only: safe mode
** is bounded by its byte budget and must not signal). */
static void tick(Printer *P)
{
  if (!P->safe && (++P->ticks & 4095) == 0) jt_fuel_tick(P->S);
}

/* ------------------------------------------------------------ circle table */

/* Objects *print-circle* labels: the aggregates, and the uninterned
** symbols (#1=#:X ... #1# reads back as one symbol). */
static bool shareable(jt_V v)
{
  return jt_iscons(v) || jt_isvector(v) || jt_isstruct(v) || jt_is(v, JT_TARRAY) ||
         (jt_is(v, JT_TSYMBOL) && jt_sym_(v)->package == JT_PKG_NONE);
}

static size_t slot_of(jt_V key, size_t cap)
{
  uint64_t h = (uint64_t)(key >> 3) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

/* Storage for `cap` pairs, all empty, or NULL (safe mode, no memory).
** Empty keys are NIL, which is never shareable and harmless to the GC. */
static jt_V *table_alloc(Printer *P, size_t cap)
{
  jt_V *w;
  if (P->safe) {
    w = malloc(2 * cap * sizeof(jt_V));
    if (!w) return NULL;
  } else {
    /* Held on the value stack until table_install roots it via P->table,
    ** so that both the old and the new storage survive the rehash. */
    jt_V vec = jt_make_vector(P->S, 2 * cap, JT_NIL);
    JT_PUSH(P->S, vec);
    w = jt_vec_(vec)->items;
  }
  for (size_t i = 0; i < cap; i++) { w[2 * i] = EMPTY; w[2 * i + 1] = jt_mkfix(0); }
  return w;
}

static void table_install(Printer *P, jt_V *w, size_t cap)
{
  if (P->safe) {
    free(P->words);
  } else {
    P->table = P->S->sp[-1];
    JT_POP(P->S, 1);
  }
  P->words = w;
  P->cap = cap;
}

/* Find `key`, inserting it with count 0 if absent (NULL if no memory). */
static jt_V *table_ref(Printer *P, jt_V key)
{
  if (!P->words || (P->count + 1) * 2 > P->cap) {
    size_t ncap = jt_grow_cap(P->cap, P->cap + 1, 2 * sizeof(jt_V), 64);
    jt_V *w = ncap ? table_alloc(P, ncap) : NULL;
    if (!w) return NULL;
    for (size_t i = 0; i < P->cap; i++) {
      jt_V k = P->words[2 * i];
      if (k == EMPTY) continue;
      size_t j = slot_of(k, ncap);
      while (w[2 * j] != EMPTY) j = (j + 1) & (ncap - 1);
      w[2 * j] = k;
      w[2 * j + 1] = P->words[2 * i + 1];
    }
    table_install(P, w, ncap);
  }
  size_t j = slot_of(key, P->cap);
  while (P->words[2 * j] != EMPTY && P->words[2 * j] != key)
    j = (j + 1) & (P->cap - 1);
  if (P->words[2 * j] == EMPTY) {
    P->words[2 * j] = key;
    P->words[2 * j + 1] = jt_mkfix(0);
    P->count++;
  }
  return &P->words[2 * j + 1];
}

static jt_V table_get(Printer *P, jt_V key)
{
  if (!P->words) return jt_mkfix(0);
  size_t j = slot_of(key, P->cap);
  while (P->words[2 * j] != EMPTY) {
    if (P->words[2 * j] == key) return P->words[2 * j + 1];
    j = (j + 1) & (P->cap - 1);
  }
  return jt_mkfix(0);
}

/* First pass: count how often each shareable object is reached.  Only the
** first visit descends, so this terminates on any graph.  What
** *print-length* and *print-level* cut off is not printed, so it is not
** counted either: only what is printed twice gets a label. */
static void scan(Printer *P, jt_V v, int rec)
{
  intptr_t n = 0;   /* elements of this list so far */
  while (shareable(v)) {
    if (P->safe && ++P->scanned > SCAN_LIMIT_SAFE) return;
    if (rec >= P->maxrec) return;
    /* a dotted tail prints even past the length: only conses count */
    if (jt_iscons(v) && P->length >= 0 && n++ >= P->length) return;
    if (P->level >= 0 && rec >= P->level && !jt_is(v, JT_TSYMBOL)) return;
    tick(P);
    jt_V *cnt = table_ref(P, v);
    if (!cnt) { P->circle = false; return; }
    if (*cnt != jt_mkfix(0)) { *cnt = jt_mkfix(2); return; }
    *cnt = jt_mkfix(1);
    if (jt_iscons(v)) {
      scan(P, jt_car(v), rec + 1);
      v = jt_cdr(v);
    } else if (jt_isvector(v)) {
      for (size_t i = 0; i < jt_vec_(v)->len; i++) {
        if (P->length >= 0 && i >= (size_t)P->length) break;
        scan(P, jt_vec_(v)->items[i], rec + 1);
      }
      return;
    } else if (jt_is(v, JT_TARRAY)) {
      jt_V x;
      if (jt_array_elt(v) != JT_ELT_T) return;
      for (size_t i = 0; i < jt_array_total(v) && jt_array_peek(v, i, &x); i++)
        scan(P, x, rec + 1);
      return;
    } else if (jt_is(v, JT_TSYMBOL)) {
      return;
    } else {
      jt_Struct *st = jt_struct_(v);
      if (jt_isstruct(st->layout) &&
          (jt_layout_(st->layout)->h.flags & JT_LAYOUT_CONDITION))
        return;
      for (uint32_t i = 0; i < st->h.aux; i++) scan(P, st->slots[i], rec + 1);
      return;
    }
  }
}

static bool is_shared(Printer *P, jt_V v)
{
  return P->circle && jt_fixval(table_get(P, v)) != 1 &&
         jt_fixval(table_get(P, v)) != 0;
}

/* Print #n# (returning true: the object is done) or the #n= prefix of a
** shared object's first appearance. */
static bool circle_mark(Printer *P, jt_V v)
{
  if (!P->circle) return false;
  jt_V c = table_get(P, v);
  intptr_t n = jt_fixval(c);
  if (n == 0 || n == 1) return false;
  char tmp[32];
  if (n < 0) {
    snprintf(tmp, sizeof tmp, "#%ld#", (long)-n);
    out_ascii(P, tmp);
    return true;
  }
  intptr_t label = P->shared ? jt_pp_next_label(P->stream) : ++P->nextlabel;
  *table_ref(P, v) = jt_mkfix(-label);
  snprintf(tmp, sizeof tmp, "#%ld=", (long)label);
  out_ascii(P, tmp);
  return false;
}

/* A logical block started on an ordinary stream under *print-circle*: the
** circle table of `object`, kept by the block's new pretty stream. */
void jt_print_circle_scan(jt_State *S, jt_V stream, jt_V object)
{
  if (!shareable(object)) return;
  Printer P;
  printer_init(&P, S);
  P.stream = stream;
  JT_ROOT(S, object);
  JT_ROOT(S, P.table);
  load_settings(&P, true);
  P.circle = true;
  scan(&P, object, 0);
  if (P.circle && P.words) jt_pp_set_circle(S, stream, P.table, P.cap, 0);
  JT_UNROOT(S, 2);
}

/* What a logical block on `stream` prints before `object` under
** *print-circle*: 0 (nothing: not shared, or no table), -n (#n#: printed
** before), n (#n=: shared, labelled now when `assign`), or with `assign`
** false for a shared object not yet printed, INTPTR_MAX. */
intptr_t jt_print_circle_mark(jt_State *S, jt_V stream, jt_V object, bool assign)
{
  size_t cap;
  jt_V t = jt_pp_circle(stream, &cap);
  if (t == JT_NIL || !shareable(object)) return 0;
  Printer P;
  printer_init(&P, S);
  P.table = t;
  P.words = jt_vec_(t)->items;
  P.cap = cap;
  jt_V c = table_get(&P, object);
  intptr_t n = jt_fixval(c);
  if (n == 0 || n == 1) return 0;
  if (n < 0) return n;
  if (!assign) return INTPTR_MAX;
  intptr_t label = jt_pp_next_label(stream);
  *table_ref(&P, object) = jt_mkfix(-label);
  return label;
}

/* -------------------------------------------------------------- unreadable */

/* An object with no readable syntax: refuse under *print-readably*. */
static void unreadable(Printer *P, jt_V v, const char *what)
{
  if (!P->readably) return;
  flush(P);
  jt_State *S = P->S;
  char msg[96];
  snprintf(msg, sizeof msg, "cannot print %s readably", what);
  JT_PUSH(S, v);
  jt_V args[4] = {jt_intern_keyword(S, "OBJECT"), v, JT_SYM(S, K_FORMAT_CONTROL),
                  jt_string_from_cstr(S, msg)};
  jt_signal_error(S, jt_make_condition(S, JT_SYM(S, PRINT_NOT_READABLE), 4, args));
}

/* ----------------------------------------------------------------- atoms */

static void print_number(Printer *P, jt_V v)
{
  jt_Buf b = {0};
  if (P->safe) {
    /* Safe mode may not signal, so it cannot pay for converting a huge
    ** number: one longer than the whole budget is described instead. */
    size_t bits = jt_isbig(v) ? mpz_sizeinbase(jt_big_(v)->z, 2)
                : jt_isratio(v) ? mpz_sizeinbase(mpq_numref(jt_ratio_(v)->q), 2) +
                                  mpz_sizeinbase(mpq_denref(jt_ratio_(v)->q), 2)
                : 0;
    if (bits / 4 > P->max) {
      char d[96];
      snprintf(d, sizeof d, "#<%s of about %zu digits>", jt_isbig(v) ? "INTEGER" : "RATIO",
               (size_t)((double)bits * 0.30103) + 1);
      out_bytes(P, d, strlen(d));
      return;
    }
  } else {
    jt_num_charge_print(P->S, v);
  }
  jt_num_print(P->S, v, P->base, P->radix, &b);
  if (P->safe) {
    out_bytes(P, b.p, b.n);
    jt_buf_free(&b);
    return;
  }
  /* Writing to the stream can signal (output limit), which would leak the
  ** malloc'd text: move it somewhere an unwind cannot lose first. */
  char small[128];
  size_t n = b.n;
  if (n <= sizeof small) {
    if (n) memcpy(small, b.p, n);
    jt_buf_free(&b);
    out_utf8(P, small, n);
    return;
  }
  jt_V str = jt_string_from_utf8(P->S, b.p, n);
  jt_buf_free(&b);
  JT_PUSH(P->S, str);
  flush(P);
  jt_stream_write(P->S, P->stream, jt_str_(str)->chars, jt_str_(str)->len);
  JT_POP(P->S, 1);
}

static bool is_graphic(uint32_t c)
{
  return (c >= 32 && c < 127) ||
         (c >= 0xA0 && c < JT_CHAR_LIMIT && !(c >= 0xD800 && c <= 0xDFFF));
}

static void print_char(Printer *P, uint32_t c)
{
  if (!P->escape) { out_char(P, c); return; }
  out_ascii(P, "#\\");
  /* Space is graphic: printed as itself (#\ followed by a space), as SBCL
  ** does, so output compared with SBCL's matches; it reads back. */
  const char *name = c == ' ' ? NULL : jt_char_name_of(c);
  if (name) {
    out_ascii(P, name);
  } else if (is_graphic(c)) {
    out_char(P, c);
  } else {
    char tmp[16];
    snprintf(tmp, sizeof tmp, "U+%04X", (unsigned)c);
    out_ascii(P, tmp);
  }
}

static void print_string(Printer *P, jt_V v)
{
  jt_String *s = jt_str_(v);
  if (!P->escape) {
    if (P->safe) {
      for (size_t i = 0; i < s->len && !P->full; i++) out_char(P, s->chars[i]);
    } else {
      flush(P);
      jt_stream_write(P->S, P->stream, s->chars, s->len);
    }
    return;
  }
  out_char(P, '"');
  for (size_t i = 0; i < s->len && !P->full; i++) {
    uint32_t c = s->chars[i];
    if (c == '"' || c == '\\') out_char(P, '\\');
    out_char(P, c);
  }
  out_char(P, '"');
}

/* ---------------------------------------------------------------- symbols */

static bool is_digit(uint32_t c) { return c >= '0' && c <= '9'; }

static int digit_value(uint32_t c)
{
  return c >= '0' && c <= '9' ? (int)(c - '0') : c >= 'a' && c <= 'z' ? (int)(c - 'a' + 10)
       : c >= 'A' && c <= 'Z' ? (int)(c - 'A' + 10) : 99;
}

/* Would the reader take these characters for an integer or ratio in
** `base` (above 10, where letters are digits)? */
static bool looks_numeric_in_base(const uint32_t *c, size_t n, int base)
{
  size_t i = 0, d1 = 0, d2 = 0;
  if (i < n && (c[i] == '+' || c[i] == '-')) i++;
  for (; i < n && digit_value(c[i]) < base; i++) d1++;
  if (i == n) return d1 > 0;
  if (c[i] != '/' || d1 == 0) return false;
  for (i++; i < n && digit_value(c[i]) < base; i++) d2++;
  return d2 > 0 && i == n;
}

/* Would the reader take these characters for a number (base 10)? */
static bool looks_numeric(const uint32_t *c, size_t n)
{
  size_t i = 0, d1 = 0, d2 = 0, d3 = 0;
  if (i < n && (c[i] == '+' || c[i] == '-')) i++;
  while (i < n && is_digit(c[i])) i++, d1++;
  if (i == n) return d1 > 0;
  if (c[i] == '/') {
    i++;
    while (i < n && is_digit(c[i])) i++, d2++;
    return d1 > 0 && d2 > 0 && i == n;
  }
  if (c[i] == '.') {
    i++;
    while (i < n && is_digit(c[i])) i++, d2++;
    if (d1 == 0 && d2 == 0) return false;
    if (i == n) return true;
  } else if (d1 == 0) {
    return false;
  }
  if (c[i] >= 128 || !c[i] || !strchr("eEsSfFdDlL", (int)c[i])) return false;
  i++;
  if (i < n && (c[i] == '+' || c[i] == '-')) i++;
  while (i < n && is_digit(c[i])) i++, d3++;
  return d3 > 0 && i == n;
}

/* Characters the reader would not take as part of a symbol token as is. */
static bool needs_escape_char(uint32_t c, int rcase)
{
  if (c < 33 || c == 127) return true;
  /* a letter the reader would change */
  if (rcase == RT_UPCASE && ((c >= 'a' && c <= 'z') || (c >= 128 && jt_char_upcase(c) != c))) return true;
  if (rcase == RT_DOWNCASE && jt_char_downcase(c) != c) return true;
  switch (c) {
  case '(': case ')': case '\'': case '"': case ';': case '`': case ',':
  case '|': case '\\': case ':':
    return true;
  default:
    return false;
  }
}

static bool needs_bars(const uint32_t *c, size_t n, int rcase, int base)
{
  if (base > 10 && looks_numeric_in_base(c, n, base)) return true;
  if (n == 0 || c[0] == '#') return true;
  bool dots = true;
  for (size_t i = 0; i < n; i++) {
    if (needs_escape_char(c[i], rcase)) return true;
    if (c[i] != '.') dots = false;
  }
  return dots || looks_numeric(c, n);
}

/* A name without bars under a readtable case other than :upcase: with
** :downcase *print-case* applies to the lowercase letters, :preserve
** prints the name as it is, :invert inverts a name of one case. */
static void print_name_case(Printer *P, const uint32_t *c, size_t n)
{
  bool has_up = false, has_low = false;
  for (size_t i = 0; i < n; i++) {
    has_up |= jt_char_downcase(c[i]) != c[i];
    has_low |= jt_char_upcase(c[i]) != c[i];
  }
  bool word_start = true;
  for (size_t i = 0; i < n && !P->full; i++) {
    uint32_t ch = c[i], up = jt_char_upcase(ch), low = jt_char_downcase(ch);
    bool alnum = up != ch || low != ch || is_digit(ch);
    if (P->rcase == RT_INVERT && has_up != has_low)
      ch = has_up ? low : up;
    else if (P->rcase == RT_DOWNCASE && up != ch &&
             (P->pcase == CASE_UP || (P->pcase == CASE_CAP && word_start)))
      ch = up;
    word_start = !alnum;
    out_char(P, ch);
  }
}

static void print_name(Printer *P, const uint32_t *c, size_t n)
{
  if (P->escape && needs_bars(c, n, P->rcase, P->base)) {
    out_char(P, '|');
    for (size_t i = 0; i < n && !P->full; i++) {
      if (c[i] == '|' || c[i] == '\\') out_char(P, '\\');
      out_char(P, c[i]);
    }
    out_char(P, '|');
    return;
  }
  if (P->rcase != RT_UPCASE) {
    print_name_case(P, c, n);
    return;
  }
  bool word_start = true;
  for (size_t i = 0; i < n && !P->full; i++) {
    uint32_t ch = c[i];
    uint32_t lower = jt_char_downcase(ch);
    bool upper = lower != ch;
    bool alnum = upper || jt_char_upcase(ch) != ch || is_digit(ch);
    if (upper && (P->pcase == CASE_DOWN || (P->pcase == CASE_CAP && !word_start)))
      ch = lower;
    word_start = !alnum;
    out_char(P, ch);
  }
}

/* The package prefix of a symbol that is not accessible in the current
** package: its home's name and ':' (external) or '::'.  The kernel's
** internal symbols print bare: their home has no name. */
static void print_prefix(Printer *P, jt_V v, jt_Symbol *s)
{
  jt_State *S = P->S;
  if (s->package == JT_PKG_KEYWORD) { out_char(P, ':'); return; }
  if (s->package == JT_PKG_INTERNAL) return;
  jt_V home = jt_package_of_index(S, s->package);
  if (s->package == JT_PKG_NONE || home == JT_NIL || jt_pkg_(home)->name == JT_NIL) {
    if (P->gensym) out_ascii(P, "#:");
    return;
  }
  if (P->package == JT_NIL || jt_symbol_accessible(S, v, P->package)) return;
  jt_V name = jt_pkg_(home)->name;
  print_name(P, jt_str_(name)->chars, jt_str_(name)->len);
  out_ascii(P, !P->canonical && jt_symbol_external(S, v) ? ":" : "::");
}

static void print_symbol(Printer *P, jt_V v)
{
  jt_Symbol *s = jt_symobj(P->S, v);
  if (P->escape) print_prefix(P, v, s);
  if (jt_isstring(s->name)) {
    print_name(P, jt_str_(s->name)->chars, jt_str_(s->name)->len);
  } else if (s->cname) {
    out_utf8(P, s->cname, strlen(s->cname));
  }
}

/* A symbol printed as a keyword, e.g. a structure slot name. */
static void print_as_keyword(Printer *P, jt_V sym)
{
  jt_Symbol *s = jt_symobj(P->S, sym);
  out_char(P, ':');
  if (jt_isstring(s->name))
    print_name(P, jt_str_(s->name)->chars, jt_str_(s->name)->len);
}

/* Print a name-like object (a symbol, or (setf f)) with escapes on. */
static void print_escaped(Printer *P, jt_V v, intptr_t depth)
{
  bool e = P->escape;
  P->escape = true;
  print_obj(P, v, depth);
  P->escape = e;
}

/* ---------------------------------------------------------------- conses */

static const char *quote_prefix(Printer *P, jt_V v)
{
  jt_State *S = P->S;
  jt_V head = jt_car(v), rest = jt_cdr(v);
  if (!jt_issymbol(head) || !jt_iscons(rest) || jt_cdr(rest) != JT_NIL)
    return NULL;
  if (is_shared(P, rest)) return NULL;
  if (head == JT_SYM(S, QUOTE)) return "'";
  if (head == JT_SYM(S, FUNCTION)) return "#'";
  if (head == JT_SYM(S, QUASIQUOTE)) return "`";
  if (head == JT_SYM(S, UNQUOTE)) return ",";
  if (head == JT_SYM(S, UNQUOTE_SPLICING)) return ",@";
  return NULL;
}

static void print_list(Printer *P, jt_V v, intptr_t depth)
{
  jt_State *S = P->S;
  if (P->level >= 0 && depth >= P->level) { out_char(P, '#'); return; }
  const char *prefix = quote_prefix(P, v);
  if (prefix) {
    out_ascii(P, prefix);
    print_obj(P, jt_car(jt_cdr(v)), depth + 1);
    return;
  }
  /* Lisp code run while printing (a condition report) could mutate the list:
  ** keep the cursor rooted so that it stays valid whatever happens. */
  jt_V x = v;
  JT_ROOT(S, x);
  /* a call of a function, macro or special operator: its arguments are
  ** indented under the first one, as SBCL lays out code */
  jt_V head = jt_car(v);
  bool call = P->pretty && jt_is(head, JT_TSYMBOL) && !jt_iskeyword(head) &&
              !jt_is_internal(head) &&
              (jt_sym_(head)->function != JT_UNBOUND || (jt_sym_(head)->h.flags & JT_SYM_SPECFORM));
  pp_open(P, "(");
  for (intptr_t n = 0; !P->full; n++) {
    if (P->length >= 0 && n >= P->length) { out_ascii(P, "..."); break; }
    print_obj(P, jt_car(x), depth + 1);
    jt_V d = jt_cdr(x);
    if (d == JT_NIL) break;
    if (!jt_iscons(d) || is_shared(P, d)) {
      out_char(P, ' ');
      pp_op(P, JT_PP_FILL, 0);
      out_ascii(P, ". ");
      print_obj(P, d, depth + 1);
      break;
    }
    out_char(P, ' ');
    pp_op(P, JT_PP_FILL, 0);
    if (call && n == 0) pp_op(P, JT_PP_INDENT_CURRENT, 0);
    x = d;
    tick(P);
  }
  pp_close(P, ")");
  JT_UNROOT(S, 1);
}

/* #<(SIMPLE-VECTOR 3) {id}>: an array under *print-array* NIL. */
static void print_array_unreadably(Printer *P, jt_V v)
{
  jt_State *S = P->S;
  out_ascii(P, "#<(");
  out_ascii(P, jt_symname(S, jt_array_type_of(S, v)));
  for (int i = 0; i < jt_array_rank(v); i++) {
    char tmp[32];
    snprintf(tmp, sizeof tmp, " %zu", jt_array_dim(v, i));
    out_ascii(P, tmp);
  }
  out_ascii(P, ") ");
  out_hexid(P, v);
  out_char(P, '>');
}

/* #*0101: a bit vector (its active bits). */
static void print_bits(Printer *P, jt_V v)
{
  if (!P->array) { print_array_unreadably(P, v); return; }
  out_ascii(P, "#*");
  jt_V x;
  for (size_t i = 0; i < jt_vector_length(v) && !P->full && jt_array_peek(v, i, &x); i++) {
    out_char(P, x == jt_mkfix(1) ? '1' : '0');
    tick(P);
  }
}

/* The elements of an array header along `axis`, from row-major index
** *k on, as nested lists: #2A((1 2) (3 4)). */
static void print_axis(Printer *P, jt_V v, int axis, size_t *k, intptr_t depth)
{
  int rank = jt_array_rank(v);
  if (axis == rank) {
    jt_V x = JT_NIL;
    if (!jt_array_peek(v, (*k)++, &x)) { out_ascii(P, "#<MISSING>"); return; }
    print_obj(P, x, depth);
    return;
  }
  if (P->level >= 0 && depth >= P->level) { out_char(P, '#'); return; }
  size_t n = jt_array_dim(v, axis), stride = 1;
  for (int a = axis + 1; a < rank; a++) stride *= jt_array_dim(v, a);
  pp_open(P, "(");
  for (size_t i = 0; i < n && !P->full; i++) {
    /* pretty: rows one to a line, the innermost axis filled (SBCL) */
    if (i) { out_char(P, ' '); pp_op(P, axis + 1 < rank ? JT_PP_LINEAR : JT_PP_FILL, 0); }
    if (P->length >= 0 && i >= (size_t)P->length) {
      out_ascii(P, "...");
      *k += (n - i) * stride;
      break;
    }
    print_axis(P, v, axis + 1, k, depth + 1);
  }
  pp_close(P, ")");
}

/* True when #nA syntax cannot give back an array like v: its elements
** are specialized (characters or bits in more than one dimension), or a
** zero dimension hides the dimensions after it. */
static bool array_needs_constructor(jt_V v)
{
  int rank = jt_array_rank(v);
  if (jt_array_elt(v) != JT_ELT_T) return true;
  for (int i = 0; i + 1 < rank; i++)
    if (jt_array_dim(v, i) == 0)
      for (int j = i + 1; j < rank; j++)
        if (jt_array_dim(v, j) != 0) return true;
  return false;
}

/* Readably, such an array is the form that makes it, under #. (only when
** *read-eval* lets the reader evaluate it: else it is not readable). */
static void print_array_constructor(Printer *P, jt_V v, intptr_t depth)
{
  jt_State *S = P->S;
  jt_V re = var(P, JT_SYM(S, READ_EVAL), JT_T);
  if (re == JT_NIL) unreadable(P, v, "a specialized array with *read-eval* false");
  out_ascii(P, "#.(");
  print_obj(P, jt_intern(S, "MAKE-ARRAY"), depth);
  out_ascii(P, " '(");
  for (int i = 0; i < jt_array_rank(v); i++) {
    if (i) out_char(P, ' ');
    print_obj(P, jt_mkfix((intptr_t)jt_array_dim(v, i)), depth);
  }
  out_ascii(P, ") ");
  print_obj(P, JT_SYM(S, K_ELEMENT_TYPE), depth);
  out_ascii(P, " '");
  print_obj(P, jt_array_element_type(S, v), depth);
  out_char(P, ' ');
  print_obj(P, JT_SYM(S, K_INITIAL_CONTENTS), depth);
  out_ascii(P, " '");
  size_t k = 0;
  print_axis(P, v, 0, &k, depth);
  out_char(P, ')');
}

/* An array header: a displaced vector prints like a vector of its kind,
** any other rank as #nA. */
static void print_array(Printer *P, jt_V v, intptr_t depth)
{
  if (jt_vectorp(v)) {
    if (jt_stringp(v)) {
      jt_V x;
      if (P->escape) out_char(P, '"');
      for (size_t i = 0; i < jt_vector_length(v) && !P->full && jt_array_peek(v, i, &x); i++) {
        uint32_t c = jt_charcode(x);
        if (P->escape && (c == '"' || c == '\\')) out_char(P, '\\');
        out_char(P, c);
      }
      if (P->escape) out_char(P, '"');
      return;
    }
    if (jt_bit_vector_p(v)) { print_bits(P, v); return; }
  }
  if (!P->array) { print_array_unreadably(P, v); return; }
  if (P->level >= 0 && depth >= P->level) { out_char(P, '#'); return; }
  if (jt_vectorp(v)) {
    jt_V x;
    pp_open(P, "#(");
    for (size_t i = 0; i < jt_vector_length(v) && !P->full && jt_array_peek(v, i, &x); i++) {
      if (i) { out_char(P, ' '); pp_op(P, JT_PP_FILL, 0); }
      if (P->length >= 0 && i >= (size_t)P->length) { out_ascii(P, "..."); break; }
      print_obj(P, x, depth + 1);
      tick(P);
    }
    pp_close(P, ")");
    return;
  }
  if (P->readably && array_needs_constructor(v)) {
    print_array_constructor(P, v, depth);
    return;
  }
  char tmp[32];
  snprintf(tmp, sizeof tmp, "#%dA", jt_array_rank(v));
  out_ascii(P, tmp);
  size_t k = 0;
  print_axis(P, v, 0, &k, depth);
}

static void print_vector(Printer *P, jt_V v, intptr_t depth)
{
  if (jt_o(v)->flags & JT_ARR_BIT) { print_bits(P, v); return; }
  if (!P->array) { print_array_unreadably(P, v); return; }
  if (P->level >= 0 && depth >= P->level) { out_char(P, '#'); return; }
  pp_open(P, "#(");
  /* len is re-read each time: a report function could shrink the vector */
  for (size_t i = 0; i < jt_vec_(v)->len && !P->full; i++) {
    if (i) { out_char(P, ' '); pp_op(P, JT_PP_FILL, 0); }
    if (P->length >= 0 && i >= (size_t)P->length) { out_ascii(P, "..."); break; }
    print_obj(P, jt_vec_(v)->items[i], depth + 1);
    tick(P);
  }
  pp_close(P, ")");
}

/* ------------------------------------------------------------ structures */

/* The condition's report as a string, or NIL if producing it failed.  Safe
** mode runs the report under a host-entry jump record, so that an error in
** a report function is contained instead of escaping the printer. */
static jt_V report_string(Printer *P, jt_V cond)
{
  jt_State *S = P->S;
  if (!P->safe) {
    jt_V ss = jt_make_string_stream(S);
    JT_PUSH(S, ss);
    /* inside #<...> a report stays on one line */
    size_t nbind = S->nbind;
    jt_bind(S, JT_SYM(S, PRINT_PRETTY), JT_NIL);
    jt_condition_report(S, ss, cond);
    jt_unbind_to(S, nbind);
    jt_V r = jt_stream_contents(S, ss, false);
    JT_POP(S, 1);
    return r;
  }
  if (S->stack_end - S->sp < 16) return JT_NIL;  /* no room to run Lisp */
  jt_V saved = S->pending;
  JT_PUSH(S, saved);
  JT_PUSH(S, JT_NIL);
  jt_V *slot = S->sp - 1;   /* memory, not a local: survives the longjmp */
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jt_V ss = jt_make_string_stream(S);
    JT_PUSH(S, ss);
    /* the host's messages keep a report on one line too */
    size_t nbind = S->nbind;
    jt_bind(S, JT_SYM(S, PRINT_PRETTY), JT_NIL);
    jt_condition_report(S, ss, cond);
    jt_unbind_to(S, nbind);
    *slot = jt_stream_contents(S, ss, false);
    JT_POP(S, 1);
    jt_jmp_pop(S, &j);
  }
  /* a failed report landed here with every stack restored */
  jt_V r = *slot;
  S->pending = saved;
  JT_POP(S, 2);
  return r;
}

static void print_condition(Printer *P, jt_V v, jt_V layout, intptr_t depth)
{
  jt_State *S = P->S;
  unreadable(P, v, "a condition");
  flush(P);
  if (!P->escape && !P->safe) {
    jt_condition_report(S, P->stream, v);
    return;
  }
  jt_V report = report_string(P, v);
  if (!P->escape && jt_isstring(report)) {
    print_string(P, report);
    return;
  }
  JT_PUSH(S, report);
  out_ascii(P, "#<");
  print_escaped(P, jt_layout_(layout)->name, depth + 1);
  if (jt_isstring(report)) {
    out_char(P, ' ');
    bool e = P->escape;
    P->escape = true;
    print_string(P, report);
    P->escape = e;
  }
  out_char(P, '>');
  flush(P);
  JT_POP(S, 1);
}

/* Print v with a print-object method of the program's when one applies
** (instances, structures, conditions); false when the printer's own
** representation is wanted.  Safe mode runs the method into a string,
** with its errors contained. */
static bool print_via_method(Printer *P, jt_V v)
{
  jt_State *S = P->S;
  if (P->plain == v || P->canonical) return false;
  if (P->safe) {
    jt_V str = jt_clos_print_object_string(S, v, P->escape);
    if (!jt_isstring(str)) return false;
    size_t n;
    char *u = jt_string_utf8(S, str, &n);
    out_bytes(P, u, n);
    free(u);
    return true;
  }
  flush(P);
  return jt_clos_print_object(S, P->stream, v, P->escape);
}

static void print_instance(Printer *P, jt_V v, intptr_t depth)
{
  jt_V w = jt_inst_(v)->wrapper;
  if (!jt_is(jt_vec_(w)->items[JT_W_CLASS], JT_TCLASS)) {
    /* a stand-in decoded for reading (jt_decode_text): #<NAME :SLOT v ...> */
    unreadable(P, v, "an instance");
    if (P->level >= 0 && depth >= P->level) { out_char(P, '#'); return; }
    out_ascii(P, "#<");
    print_escaped(P, jt_vec_(w)->items[JT_W_CLASS], depth + 1);
    jt_Vector *names = jt_vec_(jt_vec_(w)->items[JT_W_NAMES]);
    for (size_t i = 0; i < names->len && !P->full; i++) {
      out_char(P, ' ');
      print_as_keyword(P, names->items[i]);
      out_char(P, ' ');
      print_obj(P, jt_vec_(jt_inst_(v)->slots)->items[i], depth + 1);
    }
    out_char(P, '>');
    return;
  }
  if (print_via_method(P, v)) return;
  unreadable(P, v, "an instance");
  out_ascii(P, "#<");
  print_escaped(P, jt_class_(jt_vec_(w)->items[JT_W_CLASS])->name, depth + 1);
  out_char(P, ' ');
  out_hexid(P, v);
  out_char(P, '>');
}

static void print_struct(Printer *P, jt_V v, intptr_t depth)
{
  if (print_via_method(P, v)) return;
  jt_Struct *st = jt_struct_(v);
  jt_V layout = st->layout;
  if (!jt_is(layout, JT_TLAYOUT)) {
    unreadable(P, v, "a structure");
    out_ascii(P, "#<STRUCTURE>");
    return;
  }
  jt_Layout *ly = jt_layout_(layout);
  if (ly->h.flags & JT_LAYOUT_CONDITION) {
    print_condition(P, v, layout, depth);
    return;
  }
  if (P->level >= 0 && depth >= P->level) { out_char(P, '#'); return; }
  /* pretty: one slot to a line when the structure does not fit on one */
  pp_open(P, "#S(");
  print_escaped(P, ly->name, depth + 1);
  jt_V names = ly->slot_names;
  for (uint32_t i = 0; i < st->h.aux && !P->full; i++) {
    if (P->length >= 0 && i >= (size_t)P->length) { out_ascii(P, " ..."); break; }
    out_char(P, ' ');
    pp_op(P, JT_PP_LINEAR, 0);
    if (jt_isvector(names) && i < jt_vec_(names)->len &&
        jt_issymbol(jt_vec_(names)->items[i])) {
      print_as_keyword(P, jt_vec_(names)->items[i]);
    } else {
      char tmp[32];
      snprintf(tmp, sizeof tmp, ":SLOT%u", (unsigned)i);
      out_ascii(P, tmp);
    }
    out_char(P, ' ');
    print_obj(P, st->slots[i], depth + 1);
  }
  pp_close(P, ")");
}

/* ---------------------------------------------------------- other objects */

static void print_function(Printer *P, jt_V v, intptr_t depth)
{
  unreadable(P, v, "a function");
  jt_V name = jt_is(v, JT_TPRIM) ? jt_prim_(v)->name : jt_clo_(v)->name;
  out_ascii(P, "#<FUNCTION ");
  if (name == JT_NIL) {
    const jt_Lambda *lam = jt_is(v, JT_TCLOSURE) ? jt_clo_(v)->lam : NULL;
    out_ascii(P, "(LAMBDA ");
    if (lam && lam->lambda_list != JT_NIL)
      print_escaped(P, lam->lambda_list, depth + 1);
    else
      out_ascii(P, "()");
    out_char(P, ')');
  } else {
    print_escaped(P, name, depth + 1);
  }
  out_char(P, '>');
}

static void print_hash(Printer *P, jt_V v)
{
  static const char *const tests[] = {"EQ", "EQL", "EQUAL", "EQUALP"};
  unreadable(P, v, "a hash table");
  jt_Hash *h = jt_hash_(v);
  char tmp[96];
  snprintf(tmp, sizeof tmp, "#<HASH-TABLE :TEST %s :COUNT %zu ",
           h->h.aux < 4 ? tests[h->h.aux] : "?", h->count);
  out_ascii(P, tmp);
  out_hexid(P, v);
  out_char(P, '>');
}

static void print_other(Printer *P, jt_V v, intptr_t depth)
{
  switch (jt_type(v)) {
  case JT_TSTREAM:
    unreadable(P, v, "a stream");
    out_ascii(P, "#<");
    out_ascii(P, jt_stream_print_name(v));
    out_char(P, '>');
    return;
  case JT_TRESTART:
    unreadable(P, v, "a restart");
    if (!P->escape && !P->safe) {   /* princ of a restart is its report */
      flush(P);
      jt_restart_report(P->S, P->stream, v);
      return;
    }
    out_ascii(P, "#<RESTART ");
    print_escaped(P, ((jt_Restart *)v)->name, depth + 1);
    out_char(P, '>');
    return;
  case JT_TLAYOUT:
    unreadable(P, v, "a class");
    out_ascii(P, (jt_o(v)->flags & JT_LAYOUT_CONDITION) ? "#<CONDITION-CLASS "
                                                        : "#<STRUCTURE-CLASS ");
    print_escaped(P, jt_layout_(v)->name, depth + 1);
    out_char(P, '>');
    return;
  case JT_TCLASS: {
    static const char *const kinds[] = {"#<STANDARD-CLASS ", "#<BUILT-IN-CLASS ", "#<STRUCTURE-CLASS ",
                                        "#<CONDITION-CLASS ", "#<FORWARD-REFERENCED-CLASS "};
    unreadable(P, v, "a class");
    unsigned k = JT_CLASS_KIND(jt_class_(v));
    out_ascii(P, k < 5 ? kinds[k] : "#<CLASS ");
    print_escaped(P, jt_class_(v)->name, depth + 1);
    out_char(P, '>');
    return;
  }
  case JT_TGENERIC: {
    unreadable(P, v, "a generic function");
    out_ascii(P, "#<STANDARD-GENERIC-FUNCTION ");
    print_escaped(P, jt_gf_(v)->name, depth + 1);
    size_t n = 0;
    for (jt_V l = jt_gf_(v)->methods; jt_iscons(l); l = jt_cdr(l)) n++;
    char tmp[32];
    snprintf(tmp, sizeof tmp, " (%zu)>", n);
    out_ascii(P, tmp);
    return;
  }
  case JT_TMETHOD: {
    jt_Method *m = jt_method_(v);
    unreadable(P, v, "a method");
    out_ascii(P, "#<STANDARD-METHOD ");
    print_escaped(P, m->gf != JT_NIL ? jt_gf_(m->gf)->name : JT_NIL, depth + 1);
    for (jt_V q = m->qualifiers; jt_iscons(q); q = jt_cdr(q)) {
      out_char(P, ' ');
      print_escaped(P, jt_car(q), depth + 1);
    }
    out_ascii(P, " (");
    for (jt_V l = m->specializers; jt_iscons(l); l = jt_cdr(l)) {
      jt_V sp = jt_car(l);
      print_escaped(P, jt_is(sp, JT_TCLASS) ? jt_class_(sp)->name : sp, depth + 1);
      if (jt_iscons(jt_cdr(l))) out_char(P, ' ');
    }
    out_ascii(P, ") ");
    out_hexid(P, v);
    out_char(P, '>');
    return;
  }
  case JT_TFOREIGN:
    unreadable(P, v, "a foreign pointer");
    /* never the address: printing must not turn a pointer into a number */
    out_ascii(P, "#<FOREIGN ");
    print_escaped(P, ((jt_Foreign *)v)->tag, depth + 1);
    out_char(P, '>');
    return;
  case JT_TPACKAGE:
    unreadable(P, v, "a package");
    out_ascii(P, "#<PACKAGE ");
    if (jt_isstring(jt_pkg_(v)->name)) {
      bool e = P->escape;
      P->escape = true;
      print_string(P, jt_pkg_(v)->name);
      P->escape = e;
    } else {
      out_ascii(P, "(deleted)");
    }
    out_char(P, '>');
    return;
  case JT_TRANDOM:
    if (P->readably) {
      /* its generator words, in hexadecimal whatever *read-base* is; the
      ** reader's #S makes a random state of them (read.c) */
      out_ascii(P, "#S(");
      print_obj(P, jt_intern(P->S, "RANDOM-STATE"), depth);   /* CL's, prefixed if need be */
      out_char(P, ' ');
      print_obj(P, jt_intern_keyword(P->S, "STATE"), depth);
      out_ascii(P, " (");
      for (int i = 0; i < 4; i++) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "%s#x%llX", i ? " " : "",
                 (unsigned long long)((jt_Random *)v)->s[i]);
        out_ascii(P, tmp);
      }
      out_ascii(P, "))");
      return;
    }
    out_ascii(P, "#<RANDOM-STATE ");
    out_hexid(P, v);
    out_char(P, '>');
    return;
  case JT_TFRAME:
    unreadable(P, v, "an environment");
    out_ascii(P, "#<ENVIRONMENT>");
    return;
  case JT_TCODE:
    unreadable(P, v, "code");
    out_ascii(P, "#<CODE>");
    return;
  default:
    unreadable(P, v, "an object");
    out_ascii(P, "#<OBJECT>");
    return;
  }
}

/* ------------------------------------------------------------- dispatch */

/* Under *print-pretty*, an entry of the current pprint dispatch table
** for v prints it: true when one did. */
static bool print_dispatched(Printer *P, jt_V v)
{
  jt_State *S = P->S;
  JT_ROOT(S, v);
  jt_V lookup = jt_sym_(jt_intern(S, "%PPRINT-DISPATCH-FUNCTION"))->function;
  jt_V fn = jt_funcall(S, lookup, 2, v, P->dispatch);
  bool done = fn != JT_NIL;
  if (done) {
    JT_ROOT(S, fn);
    flush(P);
    fn = jt_check_function(S, fn);
    jt_funcall(S, fn, 2, P->stream, v);
    JT_UNROOT(S, 1);
  }
  JT_UNROOT(S, 1);
  return done;
}

static void print_obj(Printer *P, jt_V v, intptr_t depth)
{
  if (P->full) return;
  if (P->dispatch != JT_NIL && v != P->plain && print_dispatched(P, v)) return;
  if (jt_isfix(v)) { print_number(P, v); return; }
  if (jt_ischar(v)) { print_char(P, jt_charcode(v)); return; }
  if (v == JT_NIL || v == JT_T) { print_symbol(P, v); return; }
  if (!jt_isptr(v)) {
    /* internal markers leak into printing only through kernel bugs, but
    ** the printer is what reports those: never fail on them */
    unreadable(P, v, "an internal marker");
    out_ascii(P, v == JT_UNBOUND ? "#<UNBOUND>" : v == JT_EOF ? "#<EOF>"
                 : v == JT_NOVALUE ? "#<NO-VALUE>" : "#<IMMEDIATE>");
    return;
  }
  switch (jt_type(v)) {
  case JT_TSYMBOL:
    /* an uninterned symbol printed with #: gets its label */
    if (!(P->circle && P->escape && P->gensym) || !circle_mark(P, v))
      print_symbol(P, v);
    return;
  case JT_TSTRING: print_string(P, v); return;
  case JT_TBIGNUM: case JT_TRATIO: case JT_TFLOAT: case JT_TCOMPLEX: print_number(P, v); return;
  case JT_THASH: print_hash(P, v); return;
  default: break;
  }
  if (too_deep(P)) { out_ascii(P, P->safe ? "#" : "..."); return; }
  /* Stream mode can run Lisp code (condition reports) that might detach
  ** this object from the structure being printed: keep it rooted. */
  JT_ROOT(P->S, v);
  P->rec++;
  switch (jt_type(v)) {
  case JT_TCONS:
    if (!circle_mark(P, v)) print_list(P, v, depth);
    break;
  case JT_TVECTOR:
    if (!circle_mark(P, v)) print_vector(P, v, depth);
    break;
  case JT_TARRAY:
    if (!circle_mark(P, v)) print_array(P, v, depth);
    break;
  case JT_TSTRUCT:
    if (!circle_mark(P, v)) print_struct(P, v, depth);
    break;
  case JT_TPRIM: case JT_TCLOSURE:
    print_function(P, v, depth);
    break;
  case JT_TINSTANCE:
    print_instance(P, v, depth);
    break;
  default:
    print_other(P, v, depth);
    break;
  }
  P->rec--;
  JT_UNROOT(P->S, 1);
}

static void printer_init(Printer *P, jt_State *S)
{
  memset(P, 0, sizeof *P);
  P->S = S;
  P->stream = JT_NIL;
  P->table = JT_NIL;
  P->package = JT_NIL;
  P->plain = JT_NOVALUE;
  P->dispatch = JT_NIL;
}

static void run(Printer *P, jt_V v)
{
  if (P->circle && !P->safe && jt_pretty_stream_p(P->stream)) {
    /* inside a logical block: its table, if it has one */
    size_t cap;
    jt_V t = jt_pp_circle(P->stream, &cap);
    if (t != JT_NIL) {
      P->table = t;
      P->words = jt_vec_(t)->items;
      P->cap = cap;
      P->shared = true;
    }
  }
  if (P->circle && !P->shared && shareable(v)) {
    scan(P, v, 0);
    P->scanned = 0;
  }
  /* inside logical blocks, *print-level* counts them */
  print_obj(P, v, P->safe ? 0 : (intptr_t)jt_pp_depth(P->stream));
}

/* ------------------------------------------------------------ entry points */

/* Print v to a stream; `plain` is printed without its print-object method
** (print-object's default method is printing it), or JT_NOVALUE. */
static void print_stream(jt_State *S, jt_V stream, jt_V v, bool escape, jt_V plain)
{
  Printer P;
  printer_init(&P, S);
  P.stream = jt_output_stream(S, stream);
  JT_ROOT(S, v);
  JT_ROOT(S, P.stream);
  JT_ROOT(S, P.table);
  JT_ROOT(S, P.dispatch);
  load_settings(&P, escape);
  P.plain = plain;
  run(&P, v);
  flush(&P);
  JT_UNROOT(S, 4);
}

void jt_print(jt_State *S, jt_V stream, jt_V v, bool escape)
{
  print_stream(S, stream, v, escape, JT_NOVALUE);
}

void jt_princ(jt_State *S, jt_V stream, jt_V v)
{
  jt_V r = jt_sym_(JT_SYM(S, PRINT_READABLY))->value;
  if (r == JT_NIL || r == JT_UNBOUND) {
    print_stream(S, stream, v, false, JT_NOVALUE);
    return;
  }
  /* princ binds *print-readably* to NIL as well, for the methods it calls */
  size_t mark = S->nbind;
  jt_bind(S, JT_SYM(S, PRINT_READABLY), JT_NIL);
  print_stream(S, stream, v, false, JT_NOVALUE);
  jt_unbind_to(S, mark);
}

void jt_print_default(jt_State *S, jt_V stream, jt_V v)
{
  jt_V e = jt_symobj(S, JT_SYM(S, PRINT_ESCAPE))->value;
  print_stream(S, stream, v, e != JT_NIL && e != JT_UNBOUND, v);
}

/* What write (princ: false) or princ (true) prints, as a string. */
static jt_V print_string_of(jt_State *S, jt_V v, bool escape, bool princ)
{
  jt_V ss = jt_make_string_stream(S);
  JT_PUSH(S, ss);
  if (princ) jt_princ(S, ss, v);
  else jt_print(S, ss, v, escape);
  jt_V res = jt_stream_contents(S, ss, false);
  JT_POP(S, 1);
  return res;
}

jt_V jt_print_to_string(jt_State *S, jt_V v, bool escape)
{
  return print_string_of(S, v, escape, !escape);
}

/* A C string for display (reports, values shown by the kernel): a NUL
** character in the text does not end it (jt_buf_cstr). */
char *jt_print_cstr(jt_State *S, jt_V v, bool escape, size_t max)
{
  size_t n;
  char *p = jt_print_cstr_len(S, v, escape, max, &n);
  if (!memchr(p, 0, n)) return p;
  jt_Buf b = {p, n, n + 1};
  return jt_buf_cstr(&b);
}

/* Canonical text (entry names and data keys of a world) depends on the
** value alone: whatever the program set the printer variables to, and
** whatever print-object methods it defined, the standard settings print
** it, so that the kernel, which has neither, prints the same name from the
** entry's encoding. */
static void bind_standard(jt_State *S)
{
  const jt_V vars[][2] = {
    {JT_SYM(S, PRINT_BASE), jt_mkfix(10)}, {JT_SYM(S, PRINT_RADIX), JT_NIL},
    {JT_SYM(S, PRINT_CASE), JT_SYM(S, K_UPCASE)}, {JT_SYM(S, PRINT_LENGTH), JT_NIL},
    {JT_SYM(S, PRINT_LEVEL), JT_NIL}, {JT_SYM(S, PRINT_CIRCLE), JT_NIL},
    {JT_SYM(S, PRINT_ARRAY), JT_T}, {JT_SYM(S, PRINT_GENSYM), JT_T},
    {JT_SYM(S, READ_DEFAULT_FLOAT_FORMAT), JT_SYM(S, SINGLE_FLOAT)}};
  /* only those the program changed (unbound reads as the standard value,
  ** and so does NIL for *print-case*): a binding is a write the world's
  ** checkpoints save */
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    jt_V v = jt_symobj(S, vars[i][0])->value;
    if (v != vars[i][1] && v != JT_UNBOUND && !(i == 2 && v == JT_NIL)) jt_bind(S, vars[i][0], vars[i][1]);
  }
}

static char *print_safely(jt_State *S, jt_V v, bool escape, bool canonical, size_t max, size_t *len)
{
  jt_Buf b = {0};
  JT_ROOT(S, v);   /* condition reports run Lisp code, which may collect */
  size_t mark = S->nbind;
  if (canonical) bind_standard(S);
  Printer P;
  printer_init(&P, S);
  P.safe = true;
  P.canonical = canonical;
  P.cbuf = &b;
  P.max = max;
  load_settings(&P, escape);
  run(&P, v);
  jt_unbind_to(S, mark);
  JT_UNROOT(S, 1);
  free(P.words);
  if (len) *len = b.n;
  jt_buf_putc(&b, '\0');
  return b.p;
}

char *jt_print_cstr_len(jt_State *S, jt_V v, bool escape, size_t max, size_t *len)
{
  return print_safely(S, v, escape, false, max, len);
}

char *jt_print_canonical(jt_State *S, jt_V v, size_t max)
{
  return print_safely(S, v, true, true, max, NULL);
}

/* --------------------------------------------------------------- built-ins */

static jt_V opt_stream(jt_State *S, int argc, jt_V *argv, int i)
{
  return jt_output_stream(S, argc > i ? argv[i] : JT_NIL);
}

/* (prin1 object &optional stream) */
JT_FN(f_prin1)
{
  jt_print(S, opt_stream(S, argc, argv, 1), argv[0], true);
  return argv[0];
}

/* (princ object &optional stream) */
JT_FN(f_princ)
{
  jt_princ(S, opt_stream(S, argc, argv, 1), argv[0]);
  return argv[0];
}

/* (print object &optional stream): newline, prin1, space. */
JT_FN(f_print)
{
  jt_V st = opt_stream(S, argc, argv, 1);
  jt_stream_putc(S, st, '\n');
  jt_print(S, st, argv[0], true);
  jt_stream_putc(S, st, ' ');
  return argv[0];
}

/* (pprint object &optional stream): newline, prin1 under *print-pretty*. */
JT_FN(f_pprint)
{
  jt_V st = opt_stream(S, argc, argv, 1);
  JT_ROOT(S, st);
  jt_stream_putc(S, st, '\n');
  size_t mark = S->nbind;
  jt_bind(S, JT_SYM(S, PRINT_PRETTY), JT_T);
  jt_print(S, st, argv[0], true);
  jt_unbind_to(S, mark);
  JT_UNROOT(S, 1);
  return jt_values(S, 0, NULL);
}

/* The keys of write and write-to-string, in order; :stream first. */
static const int write_keys[] = {
  JT_S_K_STREAM, JT_S_K_ESCAPE, JT_S_K_READABLY, JT_S_K_BASE, JT_S_K_RADIX,
  JT_S_K_LEVEL, JT_S_K_LENGTH, JT_S_K_CIRCLE, JT_S_K_PRETTY, JT_S_K_CASE,
  JT_S_K_ARRAY, JT_S_K_GENSYM, JT_S_K_LINES, JT_S_K_MISER_WIDTH, JT_S_K_RIGHT_MARGIN,
  JT_S_K_PPRINT_DISPATCH
};
#define NWRITE_KEYS ((int)(sizeof write_keys / sizeof write_keys[0]))

/* Bind the specials named by the keyword arguments; returns the stream
** argument (JT_NOVALUE if absent).  The caller unbinds. */
static jt_V bind_write_keys(jt_State *S, int argc, jt_V *argv)
{
  const int vars[NWRITE_KEYS] = {
    -1, JT_S_PRINT_ESCAPE, JT_S_PRINT_READABLY, JT_S_PRINT_BASE,
    JT_S_PRINT_RADIX, JT_S_PRINT_LEVEL, JT_S_PRINT_LENGTH, JT_S_PRINT_CIRCLE,
    JT_S_PRINT_PRETTY, JT_S_PRINT_CASE, JT_S_PRINT_ARRAY, JT_S_PRINT_GENSYM,
    JT_S_PRINT_LINES, JT_S_PRINT_MISER_WIDTH, JT_S_PRINT_RIGHT_MARGIN,
    JT_S_PRINT_PPRINT_DISPATCH
  };
  jt_V out[NWRITE_KEYS];
  jt_parse_keys(S, argc, argv, 1, write_keys, NWRITE_KEYS, out);
  for (int i = 1; i < NWRITE_KEYS; i++)
    if (out[i] != JT_NOVALUE && vars[i] >= 0) jt_bind(S, S->sym[vars[i]], out[i]);
  return out[0];
}

static bool escape_now(jt_State *S)
{
  jt_V e = jt_symobj(S, JT_SYM(S, PRINT_ESCAPE))->value;
  return e != JT_NIL && e != JT_UNBOUND;
}

/* (write object &key stream escape readably base radix level length circle
**  pretty case) */
JT_FN(f_write)
{
  size_t mark = S->nbind;
  jt_V st = bind_write_keys(S, argc, argv);
  st = jt_output_stream(S, st == JT_NOVALUE ? JT_NIL : st);
  jt_print(S, st, argv[0], escape_now(S));
  jt_unbind_to(S, mark);
  return argv[0];
}

/* (write-to-string object &key escape readably base radix ...) */
JT_FN(f_write_to_string)
{
  size_t mark = S->nbind;
  jt_V st = bind_write_keys(S, argc, argv);
  if (st != JT_NOVALUE)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "WRITE-TO-STRING does not accept the :STREAM keyword");
  jt_V res = print_string_of(S, argv[0], escape_now(S), false);
  jt_unbind_to(S, mark);
  return res;
}

/* (prin1-to-string object) */
JT_FN(f_prin1_to_string) { return jt_print_to_string(S, argv[0], true); }

/* (princ-to-string object) */
JT_FN(f_princ_to_string) { return jt_print_to_string(S, argv[0], false); }

static const jt_Reg print_fns[] = {
  {"PRIN1", f_prin1, 1, 2,
   "(prin1 object &optional stream) Print OBJECT readably (with escapes); "
   "return it."},
  {"PRINC", f_princ, 1, 2,
   "(princ object &optional stream) Print OBJECT for people (no escapes); "
   "return it."},
  {"PRINT", f_print, 1, 2,
   "(print object &optional stream) Print a newline, OBJECT as by prin1, "
   "and a space; return OBJECT."},
  {"PPRINT", f_pprint, 1, 2,
   "(pprint object &optional stream) Print a newline and OBJECT as by prin1; "
   "return no values."},
  {"WRITE", f_write, 1, -1,
   "(write object &key stream escape readably base radix level length circle "
   "pretty case array) Print OBJECT with the given printer settings; return it."},
  {"WRITE-TO-STRING", f_write_to_string, 1, -1,
   "(write-to-string object &key escape readably base radix level length "
   "circle pretty case array) Return what write would print, as a string."},
  {"PRIN1-TO-STRING", f_prin1_to_string, 1, 1,
   "(prin1-to-string object) Return what prin1 would print, as a string."},
  {"PRINC-TO-STRING", f_princ_to_string, 1, 1,
   "(princ-to-string object) Return what princ would print, as a string."},
  {NULL, NULL, 0, 0, NULL}
};

/* Called from jt_open_io (io.c). */
void jt_open_print(jt_State *S)
{
  jt_register(S, print_fns);
  jt_open_pretty(S);
}
