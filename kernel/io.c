/*
** io.c — streams.
**
** Three kinds of stream exist.  A string output stream accumulates
** characters in a string (its `buffer`: its own adjustable string, or the
** caller's string with a fill pointer for with-output-to-string); a host
** stream encodes to UTF-8 and hands the bytes to the host's write function
** (standard output by default); a string input stream reads the characters
** of a string.  Every character written to a host stream is charged against
** the output limit, so one choke point (host_write) enforces it.  Output
** streams track the column for fresh-line.  The world has no files and no
** terminal: *standard-input* is an input stream with nothing in it.
**
** The printer's built-ins live in print.c; jt_open_io registers them too so
** that state.c needs no separate entry point for the printer.
*/
#include <stdio.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_eval.h"   /* jt_limit_exceeded */
#include "jt_world.h"  /* jt_world_current_package */

void jt_open_print(jt_State *S);  /* print.c: the printer's built-ins */

/* ------------------------------------------------------------ construction */

static jt_V new_stream(jt_State *S, int kind)
{
  jt_Stream *st = (jt_Stream *)jt_alloc(S, JT_TSTREAM, sizeof(jt_Stream));
  st->h.aux = (uint32_t)kind;
  st->buffer = JT_NIL;
  st->bytes = JT_NIL;
  st->pretty = JT_NIL;
  st->file = JT_NIL;
  st->column = 0;
  st->pos = st->end = st->bpos = st->bend = 0;
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
  return jt_is(v, JT_TSTREAM) && jt_o(v)->aux == JT_STREAM_STRING &&
         !(jt_o(v)->flags & (JT_STREAM_TARGET | JT_STREAM_FILE));
}

static bool is_input(jt_V v)
{
  return jt_is(v, JT_TSTREAM) && jt_o(v)->aux == JT_STREAM_STRING_INPUT;
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

/* The column after writing cs at `column`. */
static size_t next_column(size_t column, const uint32_t *cs, size_t n)
{
  size_t i = n;
  while (i > 0 && cs[i - 1] != '\n') i--;
  return i > 0 ? n - i : column + n;
}

static JT_NORETURN void not_output(jt_State *S, jt_V stream)
{
  jt_type_error(S, stream, jt_list(S, 2, JT_SYM(S, SATISFIES),
                                   jt_intern(S, "OUTPUT-STREAM-P")));
}

/* Append to the caller's string of with-output-to-string: at its fill
** pointer, growing it only if it is adjustable. */
static void target_write(jt_State *S, jt_V str, const uint32_t *cs, size_t n)
{
  jt_String *t = jt_str_(str);
  if (!(t->h.flags & JT_ARR_ADJUSTABLE) && t->len + n > t->cap)
    jt_error(S, "the string given to WITH-OUTPUT-TO-STRING is full (%zu "
             "characters) and not adjustable", t->cap);
  jt_string_append(S, str, cs, n);
}

/* `stream` must be reachable (rooted by the caller): writing to a string
** stream allocates. */
void jt_stream_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
{
  if (!jt_is(stream, JT_TSTREAM)) jt_type_error(S, stream, JT_SYM(S, STREAM));
  jt_Stream *st = jt_stream_(stream);
  if (st->h.aux == JT_STREAM_STRING_INPUT) not_output(S, stream);
  if (st->h.flags & JT_STREAM_CLOSED)
    jt_errorc(S, JT_SYM(S, STREAM_ERROR), "cannot write to a closed stream");
  if (n == 0) return;
  /* before the write: cs may be the characters of the string written to,
  ** which the write moves when it grows the string */
  size_t column = next_column(st->column, cs, n);
  if (st->h.aux == JT_STREAM_HOST) {
    host_write(S, cs, n);
  } else if (st->h.flags & JT_STREAM_TARGET) {
    target_write(S, st->buffer, cs, n);
  } else {
    jt_string_append(S, st->buffer, cs, n);
  }
  st->column = column;
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

/* ------------------------------------------------------------------- input */

jt_V jt_make_string_input_stream(jt_State *S, jt_V str, size_t start, size_t end)
{
  JT_PUSH(S, str);
  jt_V st = new_stream(S, JT_STREAM_STRING_INPUT);
  JT_POP(S, 1);
  jt_Stream *x = jt_stream_(st);
  x->buffer = str;   /* st is fresh: no barrier needed */
  x->pos = start;
  x->end = end;
  return st;
}

static JT_NORETURN void not_input(jt_State *S, jt_V stream)
{
  jt_type_error(S, stream, jt_list(S, 2, JT_SYM(S, SATISFIES),
                                   jt_intern(S, "INPUT-STREAM-P")));
}

jt_V jt_input_stream(jt_State *S, jt_V designator)
{
  jt_V v = designator;
  if (v == JT_T || v == JT_NIL) v = jt_symbol_value(S, JT_SYM(S, STANDARD_INPUT));
  if (!jt_is(v, JT_TSTREAM)) jt_type_error(S, v, JT_SYM(S, STREAM));
  if (!is_input(v)) not_input(S, v);
  if (jt_o(v)->flags & JT_STREAM_CLOSED)
    jt_errorc(S, JT_SYM(S, STREAM_ERROR), "cannot read from a closed stream");
  return v;
}

/* The end of what is left to read: the string may have been shortened
** (a fill pointer moved back) since the stream was made. */
static size_t input_end(const jt_Stream *st)
{
  size_t n = jt_str_(st->buffer)->len;
  return st->end < n ? st->end : n;
}

static size_t utf8_len(uint32_t c)
{
  return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

int32_t jt_stream_read_char(jt_State *S, jt_V stream, bool consume)
{
  (void)S;
  jt_Stream *st = jt_stream_(stream);
  if (st->pos >= input_end(st)) return -1;
  uint32_t c = jt_str_(st->buffer)->chars[st->pos];
  if (consume) {
    st->pos++;
    st->bpos += utf8_len(c);
  }
  return (int32_t)c;
}

void jt_stream_unread_char(jt_State *S, jt_V stream, uint32_t c)
{
  jt_Stream *st = jt_stream_(stream);
  if (st->pos == 0 || jt_str_(st->buffer)->chars[st->pos - 1] != c)
    jt_error(S, "UNREAD-CHAR: %s was not the last character read",
             c < 128 && c > 32 ? (char[]){(char)c, 0} : "the character");
  st->pos--;
  st->bpos -= utf8_len(c);
}

void jt_end_of_file(jt_State *S, jt_V stream)
{
  JT_PUSH(S, stream);
  jt_V args[4] = {JT_SYM(S, K_STREAM), stream, JT_SYM(S, K_FORMAT_CONTROL),
                  jt_string_from_cstr(S, "end of file on a string input stream")};
  jt_signal_error(S, jt_make_condition(S, JT_SYM(S, END_OF_FILE), 4, args));
}

void jt_stream_reader_begin(jt_State *S, jt_V stream, jt_Reader *R)
{
  jt_Stream *st = jt_stream_(stream);
  size_t end = input_end(st);
  if (st->bytes == JT_NIL) {
    /* the UTF-8 of the whole readable range, made once per stream and kept
    ** in a string's storage (the collector owns it); bpos follows pos from
    ** now on */
    const uint32_t *cs = jt_str_(st->buffer)->chars;
    size_t nbytes = 0, before = 0;
    for (size_t i = 0; i < end; i++) {
      if (i == st->pos) before = nbytes;
      nbytes += utf8_len(cs[i]);
    }
    if (st->pos >= end) before = nbytes;
    jt_V b = jt_make_string(S, nbytes / sizeof(uint32_t) + 1, 0);
    char *p = (char *)jt_str_(b)->chars;
    cs = jt_str_(st->buffer)->chars;   /* re-read after the allocation */
    size_t k = 0;
    for (size_t i = 0; i < end; i++) k += jt_utf8_encode(cs[i], p + k);
    JT_SET_GC(S, stream, st->bytes, b);   /* streams are never part of a checkpoint */
    st->bpos = before;
    st->bend = nbytes;
  }
  jt_reader_init(R, (const char *)jt_str_(st->bytes)->chars, st->bend);
  R->pos = st->bpos;
  R->bom = false;
}

void jt_stream_reader_end(jt_State *S, jt_V stream, const jt_Reader *R)
{
  (void)S;
  jt_Stream *st = jt_stream_(stream);
  const unsigned char *p = (const unsigned char *)R->src;
  for (size_t i = st->bpos; i < R->pos; i++)
    if ((p[i] & 0xC0) != 0x80) st->pos++;
  st->bpos = R->pos;
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

/* ------------------------------------------------------- input built-ins */

static jt_V opt_input(jt_State *S, int argc, jt_V *argv, int i)
{
  return jt_input_stream(S, argc > i ? argv[i] : JT_NIL);
}

/* At the end of `stream`: signal end-of-file, or with eof-error-p (argv[i])
** NIL return eof-value (argv[i + 1]). */
static jt_V at_eof(jt_State *S, int argc, jt_V *argv, int i, jt_V stream)
{
  if (argc <= i || argv[i] != JT_NIL) jt_end_of_file(S, stream);
  return argc > i + 1 ? argv[i + 1] : JT_NIL;
}

/* (read-char &optional stream (eof-error-p t) eof-value recursive-p), and
** read-char-no-hang: a string stream never waits. */
JT_FN(f_read_char)
{
  jt_V st = opt_input(S, argc, argv, 0);
  int32_t c = jt_stream_read_char(S, st, true);
  return c < 0 ? at_eof(S, argc, argv, 1, st) : jt_mkchar((uint32_t)c);
}

static bool whitespace2(uint32_t c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == 10;
}

/* (peek-char &optional peek-type stream (eof-error-p t) eof-value
**  recursive-p): peek-type NIL the next character, T the next one that is
** not whitespace, a character the next one equal to it (the characters
** skipped are consumed). */
JT_FN(f_peek_char)
{
  jt_V type = argc > 0 ? argv[0] : JT_NIL;
  if (type != JT_NIL && type != JT_T && !jt_ischar(type))
    jt_type_error(S, type, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, BOOLEAN),
                                   JT_SYM(S, CHARACTER)));
  jt_V st = opt_input(S, argc, argv, 1);
  for (;;) {
    int32_t c = jt_stream_read_char(S, st, false);
    if (c < 0) return at_eof(S, argc, argv, 2, st);
    if (type == JT_NIL || (type == JT_T && !whitespace2((uint32_t)c)) ||
        (jt_ischar(type) && jt_charcode(type) == (uint32_t)c))
      return jt_mkchar((uint32_t)c);
    jt_stream_read_char(S, st, true);
  }
}

/* (unread-char char &optional stream) */
JT_FN(f_unread_char)
{
  uint32_t c = jt_check_char(S, argv[0]);
  jt_stream_unread_char(S, opt_input(S, argc, argv, 1), c);
  return JT_NIL;
}

/* (listen &optional stream): true if a character is available now. */
JT_FN(f_listen)
{
  return jt_bool(jt_stream_read_char(S, opt_input(S, argc, argv, 0), false) >= 0);
}

/* (clear-input &optional stream): nothing is buffered. */
JT_FN(f_clear_input)
{
  opt_input(S, argc, argv, 0);
  return JT_NIL;
}

/* (read-line &optional stream (eof-error-p t) eof-value recursive-p)
** => line, missing-newline-p */
JT_FN(f_read_line)
{
  jt_V st = opt_input(S, argc, argv, 0);
  jt_Stream *x = jt_stream_(st);
  size_t end = input_end(x), from = x->pos, to = from;
  if (from >= end) return jt_values2(S, at_eof(S, argc, argv, 1, st), JT_T);
  const uint32_t *cs = jt_str_(x->buffer)->chars;
  while (to < end && cs[to] != '\n') to++;
  jt_V line = jt_make_string(S, to - from, 0);
  x = jt_stream_(st);
  memcpy(jt_str_(line)->chars, jt_str_(x->buffer)->chars + from, (to - from) * sizeof(uint32_t));
  bool missing = to >= end;
  while (x->pos < to + !missing) jt_stream_read_char(S, st, true);
  return jt_values2(S, line, jt_bool(missing));
}

/* (make-string-input-stream string &optional (start 0) end) */
JT_FN(f_make_string_input_stream)
{
  jt_V str = jt_check_string(S, argv[0]);
  size_t start, end;
  check_bounds(S, argc > 1 ? argv[1] : JT_NOVALUE, argc > 2 ? argv[2] : JT_NOVALUE,
               jt_str_(str)->len, &start, &end);
  return jt_make_string_input_stream(S, str, start, end);
}

/* (%string-input-stream-index stream): the index in its string of the next
** character (with-input-from-string :index). */
JT_FN(f_string_input_stream_index)
{
  if (!is_input(argv[0])) not_input(S, argv[0]);
  return jt_mkfix((intptr_t)jt_stream_(argv[0])->pos);
}

/* (%make-string-output-stream-to string): a stream writing at the fill
** pointer of STRING (with-output-to-string with a string). */
JT_FN(f_make_string_output_stream_to)
{
  jt_V str = argv[0];
  if (!jt_isstring(str) || !(jt_o(str)->flags & JT_ARR_FILLPTR))
    jt_type_error(S, str, jt_list(S, 3, JT_SYM(S, AND), JT_SYM(S, STRING),
                                  jt_list(S, 2, JT_SYM(S, SATISFIES),
                                          jt_intern(S, "ARRAY-HAS-FILL-POINTER-P"))));
  jt_V st = new_stream(S, JT_STREAM_STRING);
  jt_stream_(st)->buffer = argv[0];   /* st is fresh: no barrier needed */
  jt_o(st)->flags |= JT_STREAM_TARGET;
  return st;
}

/* The length of a sequence read-sequence or write-sequence take: a string,
** a simple vector or a list (type-error otherwise). */
static size_t stream_seq_length(jt_State *S, jt_V seq) {
  if (jt_isstring(seq)) return jt_str_(seq)->len;
  if (jt_isvector(seq)) return jt_vec_(seq)->len;
  if (jt_islist(seq)) return jt_list_length(S, seq);
  jt_type_error(S, seq, JT_SYM(S, SEQUENCE));
}

/* (read-sequence sequence stream &key start end) => index of the first
** element not filled */
JT_FN(f_read_sequence)
{
  static const int keys[] = {JT_S_K_START, JT_S_K_END};
  jt_V seq = argv[0];
  jt_V st = jt_input_stream(S, argv[1]);
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 2, keys, 2, kv);
  size_t len = stream_seq_length(S, seq);
  size_t start, end, i;
  check_bounds(S, kv[0], kv[1], len, &start, &end);
  jt_V l = seq;
  bool octets = jt_file_stream_binary_p(st);   /* an octet file stream reads integers */
  if (octets && jt_isstring(seq)) jt_type_error(S, seq, JT_SYM(S, VECTOR));
  if (jt_islist(seq)) for (i = 0; i < start; i++) l = jt_cdr(l);
  for (i = start; i < end; i++) {
    int32_t c = jt_stream_read_char(S, st, true);
    if (c < 0) break;
    jt_V ch = octets ? jt_mkfix(c) : jt_mkchar((uint32_t)c);
    if (jt_isstring(seq)) {
      JT_TOUCH(S, seq);
      jt_str_(seq)->chars[i] = (uint32_t)c;
    } else if (jt_isvector(seq)) {
      JT_SET(S, seq, jt_vec_(seq)->items[i], ch);
    } else {
      JT_SET(S, l, jt_cons_(l)->car, ch);
      l = jt_cdr(l);
    }
  }
  return jt_mkfix((intptr_t)i);
}

/* (write-sequence sequence stream &key start end) => sequence */
JT_FN(f_write_sequence)
{
  static const int keys[] = {JT_S_K_START, JT_S_K_END};
  jt_V seq = argv[0];
  jt_V st = jt_output_stream(S, argv[1]);
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 2, keys, 2, kv);
  size_t len = stream_seq_length(S, seq);
  size_t start, end;
  check_bounds(S, kv[0], kv[1], len, &start, &end);
  bool octets = jt_file_stream_binary_p(st);   /* an octet file stream writes integers */
  if (jt_isstring(seq) && !octets) {
    jt_stream_write(S, st, jt_str_(seq)->chars + start, end - start);
    return seq;
  }
  if (octets && !jt_isvector(seq) && !jt_islist(seq)) jt_type_error(S, seq, JT_SYM(S, VECTOR));
  jt_V l = seq;
  for (size_t i = 0; i < end; i++) {
    jt_V x = jt_isvector(seq) ? jt_vec_(seq)->items[i] : jt_car(l);
    if (!jt_isvector(seq)) l = jt_cdr(l);
    if (i >= start) jt_stream_putc(S, st, octets ? jt_file_octet(S, x) : jt_check_char(S, x));
  }
  return seq;
}

/* (input-stream-p stream) */
JT_FN(f_input_stream_p)
{
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  return jt_bool(is_input(argv[0]));
}

/* (interactive-stream-p stream): no stream of a world is interactive. */
JT_FN(f_interactive_stream_p)
{
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  return JT_NIL;
}

/* (open-stream-p stream) */
JT_FN(f_open_stream_p)
{
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  return jt_bool(!(jt_o(argv[0])->flags & JT_STREAM_CLOSED));
}

/* (close stream &key abort) => T.  The host stream stays open: closing it
** would silence every later evaluation of the world. */
JT_FN(f_close)
{
  static const int keys[] = {JT_S_K_ABORT};
  jt_V kv[1];
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  jt_parse_keys(S, argc, argv, 1, keys, 1, kv);
  if (jt_o(argv[0])->flags & JT_STREAM_FILE) return jt_file_stream_close(S, argv[0], kv[0] != JT_NIL && kv[0] != JT_NOVALUE);
  if (jt_o(argv[0])->aux != JT_STREAM_HOST) jt_o(argv[0])->flags |= JT_STREAM_CLOSED;
  return JT_T;
}

/* (stream-element-type stream): every stream holds characters. */
JT_FN(f_stream_element_type)
{
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  if (jt_o(argv[0])->flags & JT_STREAM_FILE) return jt_file_stream_element_type(S, argv[0]);
  return JT_SYM(S, CHARACTER);
}

/* (file-position stream &optional position): a string input stream's
** index, which may be set; a string output stream's length; NIL for the
** host stream, which has none. */
JT_FN(f_file_position)
{
  jt_V st = argv[0];
  if (!jt_is(st, JT_TSTREAM)) jt_type_error(S, st, JT_SYM(S, STREAM));
  jt_Stream *x = jt_stream_(st);
  if (argc < 2) {
    if (x->h.aux == JT_STREAM_STRING_INPUT) return jt_mkfix((intptr_t)x->pos);
    if (x->h.aux == JT_STREAM_STRING) return jt_mkfix((intptr_t)jt_str_(x->buffer)->len);
    return JT_NIL;
  }
  if (x->h.aux != JT_STREAM_STRING_INPUT) return JT_NIL;
  jt_V p = argv[1];
  size_t to;
  if (jt_iskeyword(p) && !strcmp(jt_symname(S, p), "START")) to = 0;
  else if (jt_iskeyword(p) && !strcmp(jt_symname(S, p), "END")) to = input_end(x);
  else to = jt_check_index(S, p);
  if (to > input_end(x)) return JT_NIL;
  /* move by reading or unreading, which keeps the byte offset right */
  while (x->pos > to) { x->pos--; x->bpos -= utf8_len(jt_str_(x->buffer)->chars[x->pos]); }
  while (x->pos < to) jt_stream_read_char(S, st, true);
  return JT_T;
}

/* (streamp object) */
JT_FN(f_streamp) { return jt_bool(jt_is(argv[0], JT_TSTREAM)); }

/* (output-stream-p stream) */
JT_FN(f_output_stream_p)
{
  if (!jt_is(argv[0], JT_TSTREAM)) jt_type_error(S, argv[0], JT_SYM(S, STREAM));
  return jt_bool(!is_input(argv[0]));
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
  {"READ-CHAR", f_read_char, 0, 4,
   "(read-char &optional stream (eof-error-p t) eof-value recursive-p) The "
   "next character of STREAM."},
  {"READ-CHAR-NO-HANG", f_read_char, 0, 4,
   "(read-char-no-hang &optional stream (eof-error-p t) eof-value recursive-p) "
   "The next character of STREAM (a string stream never waits)."},
  {"PEEK-CHAR", f_peek_char, 0, 5,
   "(peek-char &optional peek-type stream (eof-error-p t) eof-value "
   "recursive-p) The next character (the next non-whitespace one, or the next "
   "one equal to PEEK-TYPE), left unread."},
  {"UNREAD-CHAR", f_unread_char, 1, 2,
   "(unread-char char &optional stream) Put back CHAR, the last character read."},
  {"LISTEN", f_listen, 0, 1,
   "(listen &optional stream) True if a character can be read now."},
  {"CLEAR-INPUT", f_clear_input, 0, 1,
   "(clear-input &optional stream) Discard buffered input; return NIL."},
  {"READ-LINE", f_read_line, 0, 4,
   "(read-line &optional stream (eof-error-p t) eof-value recursive-p) The "
   "next line, and whether it ended without a newline."},
  {"MAKE-STRING-INPUT-STREAM", f_make_string_input_stream, 1, 3,
   "(make-string-input-stream string &optional (start 0) end) A stream "
   "reading the characters of STRING from START to END."},
  {"READ-SEQUENCE", f_read_sequence, 2, -1,
   "(read-sequence sequence stream &key start end) Fill SEQUENCE with "
   "characters of STREAM; return the index of the first element not filled."},
  {"WRITE-SEQUENCE", f_write_sequence, 2, -1,
   "(write-sequence sequence stream &key start end) Write the characters of "
   "SEQUENCE; return SEQUENCE."},
  {"INPUT-STREAM-P", f_input_stream_p, 1, 1,
   "(input-stream-p stream) True if STREAM can be read from."},
  {"INTERACTIVE-STREAM-P", f_interactive_stream_p, 1, 1,
   "(interactive-stream-p stream) NIL: no stream of a world is interactive."},
  {"OPEN-STREAM-P", f_open_stream_p, 1, 1,
   "(open-stream-p stream) True unless STREAM was closed."},
  {"CLOSE", f_close, 1, -1, "(close stream &key abort) Close STREAM; return T."},
  {"STREAM-ELEMENT-TYPE", f_stream_element_type, 1, 1,
   "(stream-element-type stream) CHARACTER."},
  {"FILE-POSITION", f_file_position, 1, 2,
   "(file-position stream &optional position) The index of a string stream; "
   "with POSITION, move a string input stream there."},
  {"%STRING-INPUT-STREAM-INDEX", f_string_input_stream_index, 1, 1,
   "(%string-input-stream-index stream) Index of the next character."},
  {"%MAKE-STRING-OUTPUT-STREAM-TO", f_make_string_output_stream_to, 1, 1,
   "(%make-string-output-stream-to string) A stream writing at STRING's "
   "fill pointer."},
  {"STREAMP", f_streamp, 1, 1,
   "(streamp object) True if OBJECT is a stream."},
  {"OUTPUT-STREAM-P", f_output_stream_p, 1, 1,
   "(output-stream-p stream) True if STREAM can be written to."},
  {NULL, NULL, 0, 0, NULL}
};

/* The printer's and reader's control variables, declared special, with
** their standard values (those of with-standard-io-syntax that this Lisp
** has): at start-up, and again whenever the host wants them back.  A
** variable already holding its standard value is left alone: a store
** would cost a copy in every open checkpoint (the world layer saves what
** the barrier sees), and the hosts reset before and after every
** transaction. */
void jt_reset_io_syntax(jt_State *S)
{
  jt_V out = S->stdout_stream;
  const struct { jt_V sym, value; } vars[] = {
    {JT_SYM(S, STANDARD_OUTPUT), out}, {JT_SYM(S, ERROR_OUTPUT), out},
    {JT_SYM(S, TRACE_OUTPUT), out}, {JT_SYM(S, PRINT_ESCAPE), JT_T},
    /* no terminal: what is written to it is the transaction's output too */
    {JT_SYM(S, TERMINAL_IO), out}, {JT_SYM(S, QUERY_IO), out}, {JT_SYM(S, DEBUG_IO), out},
    {JT_SYM(S, PRINT_READABLY), JT_NIL}, {JT_SYM(S, PRINT_BASE), jt_mkfix(10)},
    {JT_SYM(S, PRINT_RADIX), JT_NIL}, {JT_SYM(S, PRINT_LENGTH), JT_NIL},
    {JT_SYM(S, PRINT_LEVEL), JT_NIL}, {JT_SYM(S, PRINT_CIRCLE), JT_NIL},
    {JT_SYM(S, PRINT_PRETTY), JT_T}, {JT_SYM(S, PRINT_CASE), JT_SYM(S, K_UPCASE)},
    {JT_SYM(S, PRINT_ARRAY), JT_T},
    {JT_SYM(S, READ_BASE), jt_mkfix(10)}, {JT_SYM(S, STANDARD_INPUT), S->stdin_stream},
    {JT_SYM(S, READ_DEFAULT_FLOAT_FORMAT), JT_SYM(S, SINGLE_FLOAT)},
    {JT_SYM(S, READ_EVAL), JT_T}, {JT_SYM(S, READ_SUPPRESS), JT_NIL},
    {JT_SYM(S, PRINT_GENSYM), JT_T}, {JT_SYM(S, MACROEXPAND_HOOK), JT_SYM(S, FUNCALL)},
    /* not syntax, but the same kind of scratch: a hook set by one
    ** evaluation is not the next one's */
    {JT_SYM(S, DEBUGGER_HOOK), JT_NIL}, {JT_SYM(S, BREAK_ON_SIGNALS), JT_NIL},
  };
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    jt_Symbol *s = jt_symobj(S, vars[i].sym);
    s->h.flags |= JT_SYM_SPECIAL;
    if (s->value != vars[i].value) JT_SET(S, s, s->value, vars[i].value);
  }
  /* *features*: (:JITI :COMMON-LISP), a fresh list unless the one there
  ** still is exactly that (it may have been changed in place) */
  jt_V jiti = JT_SYM(S, K_JITI), cl = JT_SYM(S, K_COMMON_LISP);
  jt_Symbol *f = jt_symobj(S, JT_SYM(S, FEATURES));
  f->h.flags |= JT_SYM_SPECIAL;
  jt_V v = f->value;
  if (!(jt_iscons(v) && jt_car(v) == jiti && jt_iscons(jt_cdr(v)) && jt_car(jt_cdr(v)) == cl &&
        jt_cdr(jt_cdr(v)) == JT_NIL))
    JT_SET(S, f, f->value, jt_list(S, 2, jiti, cl));
  /* *readtable*: the standard syntax, in a readtable of its own (a change
  ** of syntax lasts for one transaction: the world's stored source must
  ** read the same way in every one) */
  jt_Symbol *rt = jt_symobj(S, JT_SYM(S, READTABLE_VAR));
  jt_V layout = rt->value == JT_UNBOUND ? JT_NIL : jt_find_layout(S, JT_SYM(S, READTABLE));
  if (layout != JT_NIL && jt_layout_(layout)->nslots == 2) {
    jt_V cur = rt->value;
    bool standard = jt_isstruct(cur) && jt_struct_(cur)->layout == layout &&
                    jt_struct_(cur)->slots[0] == JT_SYM(S, K_UPCASE) && jt_struct_(cur)->slots[1] == JT_NIL;
    if (!standard) {
      jt_V fresh = jt_make_struct(S, layout, 2);
      jt_struct_(fresh)->slots[0] = JT_SYM(S, K_UPCASE);
      jt_struct_(fresh)->slots[1] = JT_NIL;
      JT_SET(S, rt, rt->value, fresh);
    }
  }
  jt_pp_reset_dispatch(S);
  /* logical pathname translations: none (they last for one transaction,
  ** as a change of syntax does: 57-pathnames.lisp) */
  if (jt_packages_ready(S)) {
    jt_Symbol *lh = jt_symobj(S, jt_intern(S, "*%LOGICAL-HOSTS*"));
    if (jt_ishash(lh->value) && jt_hash_(lh->value)->count > 0) {
      jt_V fresh = jt_make_hash(S, JT_HASH_EQUAL, 8);
      JT_SET(S, lh, lh->value, fresh);
    }
  }
  /* the current package is the world's (once the packages are made) */
  if (jt_packages_ready(S)) {
    jt_Symbol *s = jt_symobj(S, JT_SYM(S, PACKAGE_VAR));
    jt_V pkg = jt_world_current_package(S);
    if (s->value != pkg) JT_SET(S, s, s->value, pkg);
  }
}

void jt_open_io(jt_State *S)
{
  S->stdout_stream = new_stream(S, JT_STREAM_HOST);   /* a state slot: a root from here on */
  jt_V empty = jt_make_string(S, 0, 0);
  JT_PUSH(S, empty);
  S->stdin_stream = jt_make_string_input_stream(S, empty, 0, 0);
  JT_POP(S, 1);
  jt_reset_io_syntax(S);

  jt_register(S, io_fns);
  jt_open_print(S);
}
