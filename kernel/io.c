/*
** io.c — output streams.
**
** Two kinds of stream exist.  A string stream accumulates characters in an
** adjustable string (its `buffer`); a host stream encodes to UTF-8 and hands
** the bytes to the host's write function (standard output by default).
** Every character written to a host stream is charged against the output
** limit, so one choke point (host_write) enforces it.  Both kinds track the
** column for fresh-line.
**
** The printer's built-ins live in print.c; jt_open_io registers them too so
** that state.c needs no separate entry point for the printer.
*/
#include <stdio.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_eval.h"   /* jt_limit_exceeded */

void jt_open_print(jt_State *S);  /* print.c: the printer's built-ins */

/* ------------------------------------------------------------ construction */

static jt_V new_stream(jt_State *S, int kind)
{
  jt_Stream *st = (jt_Stream *)jt_alloc(S, JT_TSTREAM, sizeof(jt_Stream));
  st->h.aux = (uint32_t)kind;
  st->buffer = JT_NIL;
  st->column = 0;
  return (jt_V)st;
}

/* An empty string that grows with jt_string_push. */
static jt_V new_buffer(jt_State *S)
{
  jt_V s = jt_make_string(S, 0, 0);
  jt_o(s)->flags |= JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR;
  return s;
}

jt_V jt_make_string_stream(jt_State *S)
{
  jt_V st = new_stream(S, JT_STREAM_STRING);
  JT_ROOT(S, st);
  jt_V buf = new_buffer(S);
  jt_stream_(st)->buffer = buf;   /* st is fresh: no barrier needed */
  JT_UNROOT(S, 1);
  return st;
}

static bool is_string_stream(jt_V v)
{
  return jt_is(v, JT_TSTREAM) && jt_o(v)->aux == JT_STREAM_STRING;
}

/* The accumulated characters as a fresh simple string; `clear` starts the
** stream afresh by giving it a new buffer (through the barrier, so that a
** checkpoint can undo it). */
jt_V jt_stream_contents(jt_State *S, jt_V stream, bool clear)
{
  if (!is_string_stream(stream))
    jt_type_error(S, stream, jt_intern(S, "STRING-STREAM"));
  jt_V res = JT_NIL;
  JT_ROOT(S, stream);
  JT_ROOT(S, res);
  size_t n = jt_str_(jt_stream_(stream)->buffer)->len;
  res = jt_make_string(S, n, 0);
  /* re-read the buffer: the allocation above may have run a collection,
  ** which never moves objects but keep the access obviously fresh */
  jt_String *buf = jt_str_(jt_stream_(stream)->buffer);
  if (n) memcpy(jt_str_(res)->chars, buf->chars, n * sizeof(uint32_t));
  if (clear) {
    jt_V nb = new_buffer(S);
    JT_SET(S, stream, jt_stream_(stream)->buffer, nb);
    jt_stream_(stream)->column = 0;
  }
  JT_UNROOT(S, 2);
  return res;
}

jt_V jt_output_stream(jt_State *S, jt_V designator)
{
  if (designator == JT_T || designator == JT_NIL) {
    jt_V v = jt_symbol_value(S, JT_SYM(S, STANDARD_OUTPUT));
    if (!jt_is(v, JT_TSTREAM)) jt_type_error(S, v, JT_SYM(S, STREAM));
    return v;
  }
  if (!jt_is(designator, JT_TSTREAM))
    jt_type_error(S, designator, JT_SYM(S, STREAM));
  return designator;
}

/* ------------------------------------------------------------------ output */

static void host_emit(jt_State *S, const uint32_t *cs, size_t n)
{
  char buf[1024];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > sizeof buf - 4) {
      if (S->write_fn) S->write_fn(S->write_ud, buf, k);
      else fwrite(buf, 1, k, stdout);
      k = 0;
    }
    k += jt_utf8_encode(cs[i], buf + k);
  }
  if (k) {
    if (S->write_fn) S->write_fn(S->write_ud, buf, k);
    else fwrite(buf, 1, k, stdout);
  }
}

/* Charge the output limit: what fits is written, then the limit is
** signalled, so the host sees output up to exactly the limit. */
static void host_write(jt_State *S, const uint32_t *cs, size_t n)
{
  size_t limit = S->limits.output;
  if (limit != 0) {
    size_t room = S->output_used < limit ? limit - S->output_used : 0;
    if (n > room) {
      host_emit(S, cs, room);
      S->output_used = limit;
      jt_limit_exceeded(S, JT_LIMIT_OUTPUT);
    }
  }
  S->output_used += n;
  host_emit(S, cs, n);
}

static void update_column(jt_Stream *st, const uint32_t *cs, size_t n)
{
  size_t i = n;
  while (i > 0 && cs[i - 1] != '\n') i--;
  st->column = i > 0 ? n - i : st->column + n;
}

/* `stream` must be reachable (rooted by the caller): writing to a string
** stream allocates. */
void jt_stream_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
{
  if (!jt_is(stream, JT_TSTREAM)) jt_type_error(S, stream, JT_SYM(S, STREAM));
  if (n == 0) return;
  jt_Stream *st = jt_stream_(stream);
  if (st->h.aux == JT_STREAM_HOST) {
    host_write(S, cs, n);
  } else {
    for (size_t i = 0; i < n; i++) jt_string_push(S, st->buffer, cs[i]);
  }
  update_column(st, cs, n);
}

void jt_stream_putc(jt_State *S, jt_V stream, uint32_t c)
{
  jt_stream_write(S, stream, &c, 1);
}

void jt_stream_puts(jt_State *S, jt_V stream, const char *utf8)
{
  uint32_t chunk[256];
  size_t len = strlen(utf8), i = 0, k = 0;
  while (i < len) {
    chunk[k++] = jt_utf8_decode(utf8, len, &i);
    if (k == 256) { jt_stream_write(S, stream, chunk, k); k = 0; }
  }
  jt_stream_write(S, stream, chunk, k);
}

void jt_stream_fresh_line(jt_State *S, jt_V stream)
{
  if (!jt_is(stream, JT_TSTREAM)) jt_type_error(S, stream, JT_SYM(S, STREAM));
  if (jt_stream_(stream)->column != 0) jt_stream_putc(S, stream, '\n');
}

/* --------------------------------------------------------------- built-ins */

static jt_V opt_stream(jt_State *S, int argc, jt_V *argv, int i)
{
  return jt_output_stream(S, argc > i ? argv[i] : JT_NIL);
}

/* (make-string-output-stream &key element-type) */
JT_FN(f_make_string_output_stream)
{
  static const int keys[] = {JT_S_K_ELEMENT_TYPE};
  jt_V out[1];
  jt_parse_keys(S, argc, argv, 0, keys, 1, out);
  return jt_make_string_stream(S);
}

/* (get-output-stream-string stream) */
JT_FN(f_get_output_stream_string)
{
  return jt_stream_contents(S, argv[0], true);
}

/* (write-char char &optional stream) */
JT_FN(f_write_char)
{
  uint32_t c = jt_check_char(S, argv[0]);
  jt_stream_putc(S, opt_stream(S, argc, argv, 1), c);
  return argv[0];
}

/* Bounding indices :start/:end of a sequence of length len. */
static void check_bounds(jt_State *S, jt_V startv, jt_V endv, size_t len,
                         size_t *start, size_t *end)
{
  *start = startv == JT_NOVALUE ? 0 : jt_check_index(S, startv);
  *end = (endv == JT_NOVALUE || endv == JT_NIL) ? len : jt_check_index(S, endv);
  if (*end > len)
    jt_type_error(S, endv, jt_list(S, 3, JT_SYM(S, INTEGER),
                                   jt_mkfix(*start), jt_mkfix(len)));
  if (*start > *end)
    jt_type_error(S, startv, jt_list(S, 3, JT_SYM(S, INTEGER),
                                     jt_mkfix(0), jt_mkfix(*end)));
}

static jt_V write_string(jt_State *S, int argc, jt_V *argv, bool newline)
{
  static const int keys[] = {JT_S_K_START, JT_S_K_END};
  jt_V str = jt_check_string(S, argv[0]);
  jt_V stream = opt_stream(S, argc, argv, 1);
  jt_V kv[2] = {JT_NOVALUE, JT_NOVALUE};
  if (argc > 2) jt_parse_keys(S, argc, argv, 2, keys, 2, kv);
  size_t start, end;
  check_bounds(S, kv[0], kv[1], jt_str_(str)->len, &start, &end);
  /* str is rooted in argv and objects never move, so its characters can
  ** be written directly even if the stream write collects */
  jt_stream_write(S, stream, jt_str_(str)->chars + start, end - start);
  if (newline) jt_stream_putc(S, stream, '\n');
  return argv[0];
}

/* (write-string string &optional stream &key start end) */
JT_FN(f_write_string) { return write_string(S, argc, argv, false); }
/* (write-line string &optional stream &key start end) */
JT_FN(f_write_line) { return write_string(S, argc, argv, true); }

/* (terpri &optional stream) */
JT_FN(f_terpri)
{
  jt_stream_putc(S, opt_stream(S, argc, argv, 0), '\n');
  return JT_NIL;
}

/* (fresh-line &optional stream) => true if a newline was written */
JT_FN(f_fresh_line)
{
  jt_V st = opt_stream(S, argc, argv, 0);
  if (jt_stream_(st)->column == 0) return JT_NIL;
  jt_stream_putc(S, st, '\n');
  return JT_T;
}

/* (finish-output &optional stream), force-output, clear-output: output is
** unbuffered at this level, so these only validate the designator. */
JT_FN(f_flush_output)
{
  opt_stream(S, argc, argv, 0);
  return JT_NIL;
}

/* (streamp object) */
JT_FN(f_streamp) { return jt_bool(jt_is(argv[0], JT_TSTREAM)); }

/* (output-stream-p stream): every stream here is an output stream. */
JT_FN(f_output_stream_p)
{
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  return JT_T;
}

static const jt_Reg io_fns[] = {
  {"MAKE-STRING-OUTPUT-STREAM", f_make_string_output_stream, 0, -1,
   "(make-string-output-stream &key element-type) Return a stream that "
   "accumulates its output in a string."},
  {"GET-OUTPUT-STREAM-STRING", f_get_output_stream_string, 1, 1,
   "(get-output-stream-string stream) Return the characters written to the "
   "string STREAM so far and clear it."},
  {"WRITE-CHAR", f_write_char, 1, 2,
   "(write-char char &optional stream) Write CHAR; return it."},
  {"WRITE-STRING", f_write_string, 1, -1,
   "(write-string string &optional stream &key start end) Write the "
   "characters of STRING; return STRING."},
  {"WRITE-LINE", f_write_line, 1, -1,
   "(write-line string &optional stream &key start end) Write STRING and a "
   "newline; return STRING."},
  {"TERPRI", f_terpri, 0, 1,
   "(terpri &optional stream) Write a newline; return NIL."},
  {"FRESH-LINE", f_fresh_line, 0, 1,
   "(fresh-line &optional stream) Write a newline unless at the start of a "
   "line; return true if one was written."},
  {"FINISH-OUTPUT", f_flush_output, 0, 1,
   "(finish-output &optional stream) Ensure output is delivered; return NIL."},
  {"FORCE-OUTPUT", f_flush_output, 0, 1,
   "(force-output &optional stream) Initiate delivery of output; return NIL."},
  {"CLEAR-OUTPUT", f_flush_output, 0, 1,
   "(clear-output &optional stream) Discard pending output; return NIL."},
  {"STREAMP", f_streamp, 1, 1,
   "(streamp object) True if OBJECT is a stream."},
  {"OUTPUT-STREAM-P", f_output_stream_p, 1, 1,
   "(output-stream-p stream) True if STREAM can be written to."},
  {NULL, NULL, 0, 0, NULL}
};

/* The printer's and reader's control variables, declared special, with
** their standard values (those of with-standard-io-syntax that this Lisp
** has): at start-up, and again whenever the host wants them back. */
/* A variable already holding its standard value is left alone: a store
** would cost a copy in every open checkpoint (the world layer saves what
** the barrier sees), and the hosts reset before and after every
** transaction. */
void jt_reset_io_syntax(jt_State *S)
{
  jt_V out = S->stdout_stream;
  const struct { jt_V sym, value; } vars[] = {
    {JT_SYM(S, STANDARD_OUTPUT), out}, {JT_SYM(S, ERROR_OUTPUT), out},
    {JT_SYM(S, TRACE_OUTPUT), out}, {JT_SYM(S, PRINT_ESCAPE), JT_T},
    {JT_SYM(S, PRINT_READABLY), JT_NIL}, {JT_SYM(S, PRINT_BASE), jt_mkfix(10)},
    {JT_SYM(S, PRINT_RADIX), JT_NIL}, {JT_SYM(S, PRINT_LENGTH), JT_NIL},
    {JT_SYM(S, PRINT_LEVEL), JT_NIL}, {JT_SYM(S, PRINT_CIRCLE), JT_NIL},
    {JT_SYM(S, PRINT_PRETTY), JT_NIL}, {JT_SYM(S, PRINT_CASE), JT_SYM(S, K_UPCASE)},
    {JT_SYM(S, READ_BASE), jt_mkfix(10)},
  };
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    jt_Symbol *s = jt_symobj(S, vars[i].sym);
    s->h.flags |= JT_SYM_SPECIAL;
    if (s->value != vars[i].value) JT_SET(S, s, s->value, vars[i].value);
  }
  /* *features*: (:JITI :COMMON-LISP), a fresh list unless the one there
  ** still is exactly that (it may have been changed in place) */
  jt_V jiti = jt_intern_keyword(S, "JITI"), cl = jt_intern_keyword(S, "COMMON-LISP");
  jt_Symbol *f = jt_symobj(S, JT_SYM(S, FEATURES));
  f->h.flags |= JT_SYM_SPECIAL;
  jt_V v = f->value;
  if (!(jt_iscons(v) && jt_car(v) == jiti && jt_iscons(jt_cdr(v)) && jt_car(jt_cdr(v)) == cl &&
        jt_cdr(jt_cdr(v)) == JT_NIL))
    JT_SET(S, f, f->value, jt_list(S, 2, jiti, cl));
}

void jt_open_io(jt_State *S)
{
  S->stdout_stream = new_stream(S, JT_STREAM_HOST);   /* a state slot: a root from here on */
  jt_reset_io_syntax(S);

  jt_register(S, io_fns);
  jt_open_print(S);
}
