/*
** io.c — streams: the protocol, string streams and the host stream.
**
** Every stream function goes through one table from a stream's kind to its
** operations (jt_stream.h; `kinds` below).  The generic layer checks the
** stream (its type, its direction, that it is open), follows the kinds
** that hand their input or output to another stream (a synonym stream to
** its variable's value, a two-way stream to its halves, an echo stream's
** output to its output stream), and calls the operation.
**
** Three kinds live here.  A string output stream accumulates characters
** in a string (its `buffer`: its own adjustable string, or the caller's
** string with a fill pointer for with-output-to-string); a host stream
** encodes to UTF-8 and hands the bytes to the host's write function
** (standard output by default); a string input stream reads the characters
** of a string.  Every character written to a host stream is charged against
** the output limit, so one choke point (host_write) enforces it.  Output
** streams track the column for fresh-line.  The compound streams are
** compound.c's.  The world has no terminal: *standard-input* is an input
** stream with nothing in it, and *terminal-io* joins it to the host output.
**
** The printer's built-ins live in print.c; jt_open_io registers them too so
** that state.c needs no separate entry point for the printer.
*/
#include <stdio.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_clos.h"   /* JT_CLASS_* */
#include "jt_eval.h"   /* jt_limit_exceeded */
#include "jt_stream.h"
#include "jt_world.h"  /* jt_world_current_package */

void jt_open_print(jt_State *S);  /* print.c: the printer's built-ins */

static const jt_StreamOps string_output_ops, host_ops, string_input_ops;

/* The one place a stream's kind is looked up. */
static const jt_StreamOps *const kinds[JT_STREAM_NKINDS] = {
  [JT_STREAM_STRING] = &string_output_ops,
  [JT_STREAM_HOST] = &host_ops,
  [JT_STREAM_STRING_INPUT] = &string_input_ops,
  [JT_STREAM_TWO_WAY] = &jt_two_way_stream_ops,
  [JT_STREAM_ECHO] = &jt_echo_stream_ops,
  [JT_STREAM_CONCATENATED] = &jt_concatenated_stream_ops,
  [JT_STREAM_BROADCAST] = &jt_broadcast_stream_ops,
  [JT_STREAM_SYNONYM] = &jt_synonym_stream_ops,
};

const jt_StreamOps *jt_stream_ops(jt_V st) { return kinds[jt_o(st)->aux]; }

/* ------------------------------------------------------------ construction */

jt_V jt_stream_new(jt_State *S, int kind, uint16_t dir)
{
  jt_Stream *st = (jt_Stream *)jt_alloc(S, JT_TSTREAM, sizeof(jt_Stream));
  st->h.aux = (uint32_t)kind;
  st->h.flags = dir | (kinds[kind]->forward ? JT_STREAM_FORWARDS : 0);
  st->buffer = st->bytes = st->in = st->out = st->etype = JT_NIL;
  st->pretty = st->file = JT_NIL;
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
  jt_V st = jt_stream_new(S, JT_STREAM_STRING, JT_STREAM_OUTPUT);
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

/* -------------------------------------------------------------- protocol */

JT_NORETURN void jt_stream_not_input(jt_State *S, jt_V stream)
{
  jt_type_error(S, stream, jt_list(S, 2, JT_SYM(S, SATISFIES),
                                   jt_intern(S, "INPUT-STREAM-P")));
}

JT_NORETURN void jt_stream_not_output(jt_State *S, jt_V stream)
{
  jt_type_error(S, stream, jt_list(S, 2, JT_SYM(S, SATISFIES),
                                   jt_intern(S, "OUTPUT-STREAM-P")));
}

/* A stream-error on `stream` with the message `what`. */
static JT_NORETURN void stream_error(jt_State *S, jt_V stream, const char *what)
{
  JT_PUSH(S, stream);
  jt_V args[4] = {JT_SYM(S, K_STREAM), stream, JT_SYM(S, K_FORMAT_CONTROL),
                  jt_string_from_cstr(S, what)};
  jt_signal_error(S, jt_make_condition(S, JT_SYM(S, STREAM_ERROR), 4, args));
}

static jt_V check_stream(jt_State *S, jt_V v)
{
  if (!jt_is(v, JT_TSTREAM)) jt_type_error(S, v, JT_SYM(S, STREAM));
  return v;
}

/* Synonym streams may name each other in a ring: following stops here. */
#define MAX_FORWARDS 64

static JT_NORETURN void forward_loop(jt_State *S, jt_V stream)
{
  stream_error(S, stream, "the stream stands for itself: its synonym streams form a ring");
}

/* The stream that does the input (`input`) or output of `stream`: it, or
** the one its kind hands the operation to.  Each one on the way must be
** open and of that direction. */
static jt_V resolve_slow(jt_State *S, jt_V stream, bool input)
{
  jt_V st = stream;
  for (int hops = 0;; hops++) {
    check_stream(S, st);
    uint16_t f = jt_o(st)->flags;
    if (!(f & (input ? JT_STREAM_INPUT : JT_STREAM_OUTPUT))) {
      if (input) jt_stream_not_input(S, st);
      jt_stream_not_output(S, st);
    }
    if (f & JT_STREAM_CLOSED)
      stream_error(S, st, input ? "cannot read from a closed stream" : "cannot write to a closed stream");
    const jt_StreamOps *ops = kinds[jt_o(st)->aux];
    jt_V next = ops->forward ? ops->forward(S, st, input) : JT_NIL;
    if (next == JT_NIL) return st;
    if (hops == MAX_FORWARDS) forward_loop(S, stream);
    st = next;
  }
}

/* The common case first (every character read or written comes here): an
** open stream of that direction that does the operation itself. */
static inline jt_V resolve(jt_State *S, jt_V stream, bool input)
{
  if (jt_is(stream, JT_TSTREAM)) {
    uint16_t want = input ? JT_STREAM_INPUT : JT_STREAM_OUTPUT;
    if ((jt_o(stream)->flags & (want | JT_STREAM_CLOSED | JT_STREAM_FORWARDS)) == want) return stream;
  }
  return resolve_slow(S, stream, input);
}

/* The same without the checks of direction and state: the stream a
** predicate (input-stream-p, stream-element-type) asks. */
static jt_V follow(jt_State *S, jt_V stream, bool input)
{
  jt_V st = stream;
  for (int hops = 0;; hops++) {
    check_stream(S, st);
    const jt_StreamOps *ops = kinds[jt_o(st)->aux];
    jt_V next = ops->forward ? ops->forward(S, st, input) : JT_NIL;
    if (next == JT_NIL) return st;
    if (hops == MAX_FORWARDS) forward_loop(S, stream);
    st = next;
  }
}

/* input-stream-p / output-stream-p */
bool jt_stream_direction_p(jt_State *S, jt_V stream, bool input)
{
  jt_V st = follow(S, stream, input);
  return (jt_o(st)->flags & (input ? JT_STREAM_INPUT : JT_STREAM_OUTPUT)) != 0;
}

jt_V jt_output_stream(jt_State *S, jt_V designator)
{
  jt_V v = designator;
  if (v == JT_NIL) v = jt_symbol_value(S, JT_SYM(S, STANDARD_OUTPUT));
  else if (v == JT_T) v = jt_symbol_value(S, JT_SYM(S, TERMINAL_IO));
  return check_stream(S, v);
}

/* The stream an input stream designator designates (not yet checked). */
static jt_V designated_input(jt_State *S, jt_V designator)
{
  if (designator == JT_NIL) return jt_symbol_value(S, JT_SYM(S, STANDARD_INPUT));
  if (designator == JT_T) return jt_symbol_value(S, JT_SYM(S, TERMINAL_IO));
  return designator;
}

jt_V jt_input_stream(jt_State *S, jt_V designator)
{
  jt_V v = designated_input(S, designator);
  resolve(S, v, true);   /* an open input stream, or signal */
  return v;
}

static inline int32_t string_read_char(jt_State *S, jt_V stream, bool consume)
    __attribute__((always_inline));
static inline void string_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
    __attribute__((always_inline));
static inline void host_stream_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
    __attribute__((always_inline));

/* The next character of `st`, an open input stream that does its input
** itself (resolved). */
static inline int32_t read_char_of(jt_State *S, jt_V st, bool consume)
{
  /* the string input stream's operation called directly (inlined): the
  ** common case of a loop over characters costs no indirect call */
  if (jt_o(st)->aux == JT_STREAM_STRING_INPUT) return string_read_char(S, st, consume);
  return kinds[jt_o(st)->aux]->read_char(S, st, consume);
}

int32_t jt_stream_read_char(jt_State *S, jt_V stream, bool consume)
{
  return read_char_of(S, resolve(S, stream, true), consume);
}

void jt_stream_unread_char(jt_State *S, jt_V stream, uint32_t c)
{
  jt_V st = resolve(S, stream, true);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  if (!ops->unread_char) stream_error(S, stream, "UNREAD-CHAR: this stream cannot take back a character");
  ops->unread_char(S, st, c);
}

static JT_NORETURN void not_binary(jt_State *S, jt_V stream, bool input)
{
  jt_type_error(S, stream, jt_list(S, 2, JT_SYM(S, SATISFIES),
                                   jt_intern(S, input ? "%BINARY-INPUT-STREAM-P"
                                                      : "%BINARY-OUTPUT-STREAM-P")));
}

/* The next byte of a binary input stream, or JT_EOF at its end.  A binary
** file stream (fstream.c) is a string stream whose characters are its
** octets: fstream.c reads and writes its elements. */
jt_V jt_stream_read_byte(jt_State *S, jt_V stream)
{
  jt_V st = resolve(S, stream, true);
  if (jt_file_stream_binary_p(st)) return jt_file_read_element(S, st);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  if (!ops->read_byte) not_binary(S, stream, true);
  return ops->read_byte(S, st);
}

void jt_stream_write_byte(jt_State *S, jt_V stream, jt_V b)
{
  jt_V st = resolve(S, stream, false);
  if (jt_file_stream_binary_p(st)) {
    jt_file_write_element(S, st, b);
    return;
  }
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  if (!ops->write_byte) not_binary(S, stream, false);
  ops->write_byte(S, st, b);
}

void jt_end_of_file(jt_State *S, jt_V stream)
{
  JT_PUSH(S, stream);
  jt_V args[4] = {JT_SYM(S, K_STREAM), stream, JT_SYM(S, K_FORMAT_CONTROL),
                  jt_string_from_cstr(S, "end of file")};
  jt_signal_error(S, jt_make_condition(S, JT_SYM(S, END_OF_FILE), 4, args));
}

void jt_stream_reader_begin(jt_State *S, jt_V stream, jt_Reader *R)
{
  jt_V st = resolve(S, stream, true);
  kinds[jt_o(st)->aux]->reader_begin(S, st, R);
}

void jt_stream_reader_end(jt_State *S, jt_V stream, const jt_Reader *R)
{
  jt_V st = resolve(S, stream, true);
  kinds[jt_o(st)->aux]->reader_end(S, st, R);
}

/* `stream` must be reachable (rooted by the caller): writing to a string
** stream allocates. */
void jt_stream_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
{
  jt_V st = resolve(S, stream, false);
  if (n == 0) return;
  /* the printer's and format's own string streams, and the host output:
  ** their operations called directly */
  if (jt_o(st)->aux == JT_STREAM_STRING) string_write(S, st, cs, n);
  else if (jt_o(st)->aux == JT_STREAM_HOST) host_stream_write(S, st, cs, n);
  else kinds[jt_o(st)->aux]->write(S, st, cs, n);
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

size_t jt_stream_column(jt_State *S, jt_V stream)
{
  jt_V st = follow(S, stream, false);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  return ops->column ? ops->column(S, st) : jt_stream_(st)->column;
}

void jt_stream_fresh_line(jt_State *S, jt_V stream)
{
  if (jt_stream_column(S, stream) != 0) jt_stream_putc(S, stream, '\n');
}

jt_V jt_stream_sink(jt_State *S, jt_V stream) { return follow(S, stream, false); }

jt_V jt_stream_element_type(jt_State *S, jt_V stream)
{
  jt_V st = follow(S, stream, !jt_stream_direction_p(S, stream, false));
  if (jt_o(st)->flags & JT_STREAM_FILE) return jt_file_stream_element_type(S, st);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  return ops->element_type ? ops->element_type(S, st) : JT_SYM(S, CHARACTER);
}

/* typep of the stream types: 1 or 0, -1 when `name` is none of them. */
int jt_stream_typep(jt_State *S, const char *name, jt_V v)
{
  (void)S;
  if (!strcmp(name, "STREAM")) return jt_is(v, JT_TSTREAM);
  /* a file stream (fstream.c) is a string stream flagged as a file's */
  bool file = jt_is(v, JT_TSTREAM) && (jt_o(v)->flags & JT_STREAM_FILE);
  if (!strcmp(name, "FILE-STREAM")) return file;
  if (file) return 0;
  bool known = false;
  for (int k = 0; k < JT_STREAM_NKINDS; k++)
    if (kinds[k]->type && !strcmp(name, kinds[k]->type)) {
      known = true;
      if (jt_is(v, JT_TSTREAM) && (int)jt_o(v)->aux == k) return 1;
    }
  return known ? 0 : -1;
}

jt_V jt_stream_class(jt_State *S, jt_V v)
{
  if (jt_o(v)->flags & JT_STREAM_FILE) return JT_CLASS(S, FILE_STREAM);
  return JT_CLOS(S, kinds[jt_o(v)->aux]->class_id);
}

const char *jt_stream_print_name(jt_V v)
{
  if (jt_o(v)->flags & JT_STREAM_FILE) return "FILE-STREAM";   /* a string stream inside */
  switch (jt_o(v)->aux) {   /* the string streams' types name no direction */
  case JT_STREAM_STRING: return "STRING-OUTPUT-STREAM";
  case JT_STREAM_STRING_INPUT: return "STRING-INPUT-STREAM";
  case JT_STREAM_HOST: return "HOST-OUTPUT-STREAM";
  default: return kinds[jt_o(v)->aux]->type ? kinds[jt_o(v)->aux]->type : "STREAM";
  }
}

/* ----------------------------------------------------- string output */

/* The column after writing cs at `column`. */
static size_t next_column(size_t column, const uint32_t *cs, size_t n)
{
  size_t i = n;
  while (i > 0 && cs[i - 1] != '\n') i--;
  return i > 0 ? n - i : column + n;
}

/* Append to the caller's string of with-output-to-string: at its fill
** pointer, growing it only if it is adjustable. */
static void target_write(jt_State *S, jt_V str, const uint32_t *cs, size_t n)
{
  if (!jt_isstring(str)) {
    /* a displaced string: element by element, within its size */
    size_t fill = jt_vector_length(str);
    if (fill + n > jt_array_total(str))
      jt_error(S, "the string given to WITH-OUTPUT-TO-STRING is full (%zu "
               "characters)", jt_array_total(str));
    for (size_t i = 0; i < n; i++) jt_array_set(S, str, fill + i, jt_mkchar(cs[i]));
    jt_set_fill_pointer(S, str, fill + n);
    return;
  }
  jt_String *t = jt_str_(str);
  if (!(t->h.flags & JT_ARR_ADJUSTABLE) && t->len + n > t->cap)
    jt_error(S, "the string given to WITH-OUTPUT-TO-STRING is full (%zu "
             "characters) and not adjustable", t->cap);
  jt_string_append(S, str, cs, n);
}

static inline void string_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
{
  jt_Stream *st = jt_stream_(stream);
  /* before the write: cs may be the characters of the string written to,
  ** which the write moves when it grows the string */
  size_t column = next_column(st->column, cs, n);
  if (st->h.flags & JT_STREAM_TARGET) target_write(S, st->buffer, cs, n);
  else jt_string_append(S, st->buffer, cs, n);
  st->column = column;
}

static jt_V string_output_element_type(jt_State *S, jt_V st)
{
  jt_V e = jt_stream_(st)->etype;
  return e == JT_NIL ? JT_SYM(S, CHARACTER) : e;
}

/* A string output stream's position is its length; it does not move. */
static jt_V string_output_position(jt_State *S, jt_V st, jt_V to)
{
  (void)S;
  if (to != JT_NOVALUE) return JT_NIL;
  return jt_mkfix((intptr_t)jt_str_(jt_stream_(st)->buffer)->len);
}

static const jt_StreamOps string_output_ops = {
  .type = "STRING-STREAM", .class_id = JT_CLOS_C_STRING_STREAM,
  .write = string_write,
  .element_type = string_output_element_type,
  .position = string_output_position,
};

/* ------------------------------------------------------------------ host */

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

static inline void host_stream_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
{
  jt_Stream *st = jt_stream_(stream);
  size_t column = next_column(st->column, cs, n);
  host_write(S, cs, n);
  st->column = column;
}

/* finish-output and force-output hand what was written to the host's
** output on (a pipe or a file gets it now); nothing waits to be cleared. */
static void host_flush(jt_State *S, jt_V st, int how)
{
  (void)st;
  if (how != JT_FLUSH_CLEAR && S->flush_fn) S->flush_fn();
}

static const jt_StreamOps host_ops = {
  .type = NULL, .class_id = JT_CLOS_C_STREAM,
  .write = host_stream_write,
  .flush = host_flush,
};

/* ---------------------------------------------------------- string input */

jt_V jt_make_string_input_stream(jt_State *S, jt_V str, size_t start, size_t end)
{
  JT_PUSH(S, str);
  jt_V st = jt_stream_new(S, JT_STREAM_STRING_INPUT, JT_STREAM_INPUT);
  JT_POP(S, 1);
  jt_Stream *x = jt_stream_(st);
  x->buffer = str;   /* st is fresh: no barrier needed */
  x->pos = start;
  x->end = end;
  return st;
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

static inline int32_t string_read_char(jt_State *S, jt_V stream, bool consume)
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

static void string_unread_char(jt_State *S, jt_V stream, uint32_t c)
{
  jt_Stream *st = jt_stream_(stream);
  if (st->pos == 0 || jt_str_(st->buffer)->chars[st->pos - 1] != c)
    jt_error(S, "UNREAD-CHAR: %s was not the last character read",
             c < 128 && c > 32 ? (char[]){(char)c, 0} : "the character");
  st->pos--;
  st->bpos -= utf8_len(c);
}

static void string_reader_begin(jt_State *S, jt_V stream, jt_Reader *R)
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

static void string_reader_end(jt_State *S, jt_V stream, const jt_Reader *R)
{
  (void)S;
  jt_Stream *st = jt_stream_(stream);
  const unsigned char *p = (const unsigned char *)R->src;
  for (size_t i = st->bpos; i < R->pos; i++)
    if ((p[i] & 0xC0) != 0x80) st->pos++;
  st->bpos = R->pos;
}

/* A string input stream's index, which may be set (by reading or
** unreading, which keeps the byte offset right). */
static jt_V string_input_position(jt_State *S, jt_V stream, jt_V to)
{
  jt_Stream *x = jt_stream_(stream);
  if (to == JT_NOVALUE) return jt_mkfix((intptr_t)x->pos);
  size_t at;
  if (to == JT_SYM(S, K_START)) at = 0;
  else if (to == JT_SYM(S, K_END)) at = input_end(x);
  else if (jt_isfix(to) && jt_fixval(to) >= 0) at = (size_t)jt_fixval(to);
  else jt_type_error(S, to, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, UNSIGNED_BYTE),
                                    jt_list(S, 3, JT_SYM(S, MEMBER), JT_SYM(S, K_START),
                                            JT_SYM(S, K_END))));
  if (at > input_end(x)) return JT_NIL;
  while (x->pos > at) { x->pos--; x->bpos -= utf8_len(jt_str_(x->buffer)->chars[x->pos]); }
  while (x->pos < at) string_read_char(S, stream, true);
  return JT_T;
}

/* A file stream opened for :io (fstream.c) is a string input stream over
** its own copy of the file that is an output stream too: a write replaces
** the characters at the position and extends the string past its end.
** No other string input stream is an output stream. */
static void string_input_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n)
{
  jt_Stream *st = jt_stream_(stream);
  size_t column = next_column(st->column, cs, n);
  jt_V buf = st->buffer;
  size_t len = jt_str_(buf)->len, over = st->pos < len ? len - st->pos : 0;
  if (over > n) over = n;
  JT_TOUCH(S, buf);
  memcpy(jt_str_(buf)->chars + st->pos, cs, over * sizeof(uint32_t));
  if (over < n) jt_string_append(S, buf, cs + over, n - over);
  st->pos += n;
  if (st->end < st->pos) st->end = st->pos;
  st->bytes = JT_NIL;   /* the reader's UTF-8 of the string is made again */
  st->column = column;
}

static const jt_StreamOps string_input_ops = {
  .type = "STRING-STREAM", .class_id = JT_CLOS_C_STRING_STREAM,
  .write = string_input_write,
  .read_char = string_read_char,
  .unread_char = string_unread_char,
  .reader_begin = string_reader_begin,
  .reader_end = string_reader_end,
  .position = string_input_position,
};

/* --------------------------------------------------------------- built-ins */

static jt_V opt_stream(jt_State *S, int argc, jt_V *argv, int i)
{
  return jt_output_stream(S, argc > i ? argv[i] : JT_NIL);
}

/* A character element type (a string stream's): CHARACTER and its
** subtypes, decided by subtypep. */
static bool character_type_p(jt_State *S, jt_V type)
{
  if (type == JT_SYM(S, CHARACTER) || type == JT_SYM(S, STANDARD_CHAR)) return true;
  jt_V r = jt_funcall(S, jt_intern(S, "SUBTYPEP"), 2, type, JT_SYM(S, CHARACTER));
  return r != JT_NIL;
}

/* (make-string-output-stream &key element-type) */
JT_FN(f_make_string_output_stream)
{
  static const int keys[] = {JT_S_K_ELEMENT_TYPE};
  jt_V out[1] = {JT_NOVALUE};
  jt_parse_keys(S, argc, argv, 0, keys, 1, out);
  jt_V etype = out[0] == JT_NOVALUE ? JT_NIL : out[0];
  if (etype != JT_NIL && !character_type_p(S, etype))
    jt_error(S, "MAKE-STRING-OUTPUT-STREAM: a string stream holds characters: its element "
             "type is CHARACTER or one of its subtypes");
  JT_PUSH(S, etype);
  jt_V st = jt_make_string_stream(S);
  jt_stream_(st)->etype = S->sp[-1];   /* st is fresh: no barrier needed */
  JT_POP(S, 1);
  return st;
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

/* The characters start..end of any string (displaced, with a fill
** pointer...) written to stream. */
static inline __attribute__((always_inline)) void write_chars(jt_State *S, jt_V stream, jt_V str, size_t start, size_t end)
{
  if (jt_isstring(str)) {
    /* str is rooted by the caller and objects never move, so its
    ** characters can be written directly even if the stream write collects */
    jt_stream_write(S, stream, jt_str_(str)->chars + start, end - start);
    return;
  }
  uint32_t chunk[256];
  size_t k = 0;
  for (size_t i = start; i < end; i++) {
    chunk[k++] = jt_charcode(jt_array_ref(S, str, i));
    if (k == 256) { jt_stream_write(S, stream, chunk, k); k = 0; }
  }
  jt_stream_write(S, stream, chunk, k);
}

static jt_V check_string(jt_State *S, jt_V v)
{
  if (!jt_stringp(v)) jt_type_error(S, v, JT_SYM(S, STRING));
  return v;
}

static jt_V write_string(jt_State *S, int argc, jt_V *argv, bool newline)
{
  static const int keys[] = {JT_S_K_START, JT_S_K_END};
  jt_V str = argv[0];
  jt_V stream = opt_stream(S, argc, argv, 1);
  size_t start = 0, end;
  if (jt_isstring(str) && argc <= 2) {
    end = jt_str_(str)->len;   /* the common case: all of a string */
  } else {
    check_string(S, str);
    jt_V kv[2] = {JT_NOVALUE, JT_NOVALUE};
    if (argc > 2) jt_parse_keys(S, argc, argv, 2, keys, 2, kv);
    check_bounds(S, kv[0], kv[1], jt_vector_length(str), &start, &end);
  }
  JT_PUSH(S, stream);
  write_chars(S, stream, str, start, end);
  if (newline) jt_stream_putc(S, stream, '\n');
  JT_POP(S, 1);
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
  resolve(S, st, false);   /* an open output stream, or signal */
  if (jt_stream_column(S, st) == 0) return JT_NIL;
  jt_stream_putc(S, st, '\n');
  return JT_T;
}

void jt_stream_flush(jt_State *S, jt_V stream, int how)
{
  jt_V st = resolve(S, stream, false);
  if ((jt_o(st)->flags & JT_STREAM_FILE) && how != JT_FLUSH_CLEAR) {
    jt_file_stream_finish(S, st);
    return;
  }
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  if (ops->flush) ops->flush(S, st, how);
}

static jt_V flush_output(jt_State *S, int argc, jt_V *argv, int how)
{
  jt_stream_flush(S, opt_stream(S, argc, argv, 0), how);
  return JT_NIL;
}

/* (finish-output &optional stream), force-output, clear-output */
JT_FN(f_finish_output) { return flush_output(S, argc, argv, JT_FLUSH_FINISH); }
JT_FN(f_force_output) { return flush_output(S, argc, argv, JT_FLUSH_FORCE); }
JT_FN(f_clear_output) { return flush_output(S, argc, argv, JT_FLUSH_CLEAR); }

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
** read-char-no-hang: no stream of a world waits for input. */
JT_FN(f_read_char)
{
  jt_V st = designated_input(S, argc > 0 ? argv[0] : JT_NIL);
  int32_t c = read_char_of(S, resolve(S, st, true), true);
  return c < 0 ? at_eof(S, argc, argv, 1, st) : jt_mkchar((uint32_t)c);
}

/* (peek-char &optional peek-type stream (eof-error-p t) eof-value
**  recursive-p): peek-type NIL the next character, T the next one that is
** not whitespace (in the current readtable), a character the next one
** equal to it (the characters skipped are consumed). */
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
    if (type == JT_NIL || (type == JT_T && !jt_read_whitespace_p(S, (uint32_t)c)) ||
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

/* (clear-input &optional stream) */
JT_FN(f_clear_input)
{
  jt_V st = resolve(S, opt_input(S, argc, argv, 0), true);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  if (ops->clear_input) ops->clear_input(S, st);
  return JT_NIL;
}

/* (read-line &optional stream (eof-error-p t) eof-value recursive-p)
** => line, missing-newline-p */
JT_FN(f_read_line)
{
  jt_V st = opt_input(S, argc, argv, 0);
  int32_t c = jt_stream_read_char(S, st, true);
  if (c < 0) return jt_values2(S, at_eof(S, argc, argv, 1, st), JT_T);
  jt_V line = new_buffer(S);
  JT_PUSH(S, line);
  while (c >= 0 && c != '\n') {
    jt_string_push(S, line, (uint32_t)c);
    c = jt_stream_read_char(S, st, true);
  }
  line = jt_simple_string_copy(S, line);
  JT_POP(S, 1);
  return jt_values2(S, line, jt_bool(c < 0));
}

/* (make-string-input-stream string &optional (start 0) end) */
JT_FN(f_make_string_input_stream)
{
  jt_V str = check_string(S, argv[0]);
  size_t start, end;
  check_bounds(S, argc > 1 ? argv[1] : JT_NOVALUE, argc > 2 ? argv[2] : JT_NOVALUE,
               jt_vector_length(str), &start, &end);
  if (!jt_isstring(str)) {
    /* a displaced or otherwise general string: its characters, copied */
    jt_V copy = jt_make_string(S, end - start, 0);
    JT_PUSH(S, copy);
    for (size_t i = start; i < end; i++)
      jt_str_(copy)->chars[i - start] = jt_charcode(jt_array_ref(S, str, i));
    JT_POP(S, 1);
    str = copy;
    end -= start;
    start = 0;
  }
  return jt_make_string_input_stream(S, str, start, end);
}

/* (%string-input-stream-index stream): the index in its string of the next
** character (with-input-from-string :index). */
JT_FN(f_string_input_stream_index)
{
  if (!is_input(argv[0])) jt_stream_not_input(S, argv[0]);
  return jt_mkfix((intptr_t)jt_stream_(argv[0])->pos);
}

/* (%make-string-output-stream-to string): a stream writing at the fill
** pointer of STRING (with-output-to-string with a string). */
JT_FN(f_make_string_output_stream_to)
{
  jt_V str = argv[0];
  if (!jt_stringp(str) || !(jt_o(str)->flags & JT_ARR_FILLPTR))
    jt_type_error(S, str, jt_list(S, 3, JT_SYM(S, AND), JT_SYM(S, STRING),
                                  jt_list(S, 2, JT_SYM(S, SATISFIES),
                                          jt_intern(S, "ARRAY-HAS-FILL-POINTER-P"))));
  jt_V st = jt_stream_new(S, JT_STREAM_STRING, JT_STREAM_OUTPUT);
  jt_stream_(st)->buffer = argv[0];   /* st is fresh: no barrier needed */
  jt_o(st)->flags |= JT_STREAM_TARGET;
  return st;
}

/* The length of a sequence read-sequence or write-sequence take (a
** type-error for anything else). */
static size_t stream_seq_length(jt_State *S, jt_V seq)
{
  if (jt_vectorp(seq)) return jt_vector_length(seq);
  if (jt_islist(seq)) return jt_list_length(S, seq);
  jt_type_error(S, seq, JT_SYM(S, SEQUENCE));
}

/* A stream's elements are characters (else bytes). */
static bool character_stream_p(jt_State *S, jt_V stream)
{
  jt_V e = jt_stream_element_type(S, stream);
  return e == JT_SYM(S, CHARACTER) || e == JT_NIL || e == JT_SYM(S, STANDARD_CHAR) ||
         character_type_p(S, e);
}

/* (read-sequence sequence stream &key start end) => index of the first
** element not filled.  Characters, or bytes from a binary stream. */
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
  bool binary = jt_file_stream_binary_p(st);   /* a binary file stream reads integers */
  if (binary && jt_isstring(seq)) jt_type_error(S, seq, JT_SYM(S, VECTOR));
  bool chars = !binary && (jt_stringp(seq) || character_stream_p(S, st));
  jt_V l = seq;
  if (jt_islist(seq)) for (i = 0; i < start; i++) l = jt_cdr(l);
  for (i = start; i < end; i++) {
    jt_V x;
    if (chars) {
      int32_t c = jt_stream_read_char(S, st, true);
      if (c < 0) break;
      x = jt_mkchar((uint32_t)c);
    } else {
      x = jt_stream_read_byte(S, st);
      if (x == JT_EOF) break;
    }
    if (jt_isstring(seq)) {
      JT_TOUCH(S, seq);
      jt_str_(seq)->chars[i] = jt_charcode(x);
    } else if (jt_isvector(seq) && !(jt_o(seq)->flags & JT_ARR_BIT)) {
      JT_SET(S, seq, jt_vec_(seq)->items[i], x);
    } else if (jt_vectorp(seq)) {
      jt_array_set(S, seq, i, x);
    } else {
      JT_SET(S, l, jt_cons_(l)->car, x);
      l = jt_cdr(l);
    }
  }
  return jt_mkfix((intptr_t)i);
}

/* (write-sequence sequence stream &key start end) => sequence: characters
** are written as characters, integers as bytes. */
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
  bool binary = jt_file_stream_binary_p(st);   /* a binary file stream writes integers */
  if (jt_stringp(seq) && !binary) {
    write_chars(S, st, seq, start, end);
    return seq;
  }
  if (binary && !jt_isvector(seq) && !jt_islist(seq)) jt_type_error(S, seq, JT_SYM(S, VECTOR));
  jt_V l = seq;
  for (size_t i = 0; i < end; i++) {
    jt_V x;
    if (jt_vectorp(seq)) x = jt_array_ref(S, seq, i);
    else { x = jt_car(l); l = jt_cdr(l); }
    if (i < start) continue;
    if (binary) jt_file_write_element(S, st, x);
    else if (jt_ischar(x)) jt_stream_putc(S, st, jt_charcode(x));
    else jt_stream_write_byte(S, st, x);
  }
  return seq;
}

/* (read-byte stream &optional (eof-error-p t) eof-value) */
JT_FN(f_read_byte)
{
  jt_V st = check_stream(S, argv[0]);
  jt_V b = jt_stream_read_byte(S, st);
  return b == JT_EOF ? at_eof(S, argc, argv, 1, st) : b;
}

/* (write-byte byte stream) => byte */
JT_FN(f_write_byte)
{
  jt_stream_write_byte(S, check_stream(S, argv[1]), argv[0]);
  return argv[0];
}

/* (input-stream-p stream) */
JT_FN(f_input_stream_p) { return jt_bool(jt_stream_direction_p(S, argv[0], true)); }

/* (output-stream-p stream) */
JT_FN(f_output_stream_p) { return jt_bool(jt_stream_direction_p(S, argv[0], false)); }

/* (interactive-stream-p stream): no stream of a world is interactive. */
JT_FN(f_interactive_stream_p)
{
  check_stream(S, argv[0]);
  return JT_NIL;
}

/* (open-stream-p stream) */
JT_FN(f_open_stream_p)
{
  check_stream(S, argv[0]);
  return jt_bool(!(jt_o(argv[0])->flags & JT_STREAM_CLOSED));
}

/* (close stream &key abort) => T.  The state's own streams stay open:
** closing the host output would silence every later evaluation. */
JT_FN(f_close)
{
  static const int keys[] = {JT_S_K_ABORT};
  jt_V kv[1] = {JT_NOVALUE};
  jt_V st = check_stream(S, argv[0]);
  jt_parse_keys(S, argc, argv, 1, keys, 1, kv);
  uint16_t f = jt_o(st)->flags;
  if (f & JT_STREAM_FILE) return jt_file_stream_close(S, st, kv[0] != JT_NOVALUE && kv[0] != JT_NIL);
  if (f & (JT_STREAM_KEPT | JT_STREAM_CLOSED)) return JT_T;
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  if (ops->close) ops->close(S, st, kv[0] != JT_NOVALUE && kv[0] != JT_NIL);
  jt_o(st)->flags |= JT_STREAM_CLOSED;
  return JT_T;
}

/* (stream-element-type stream) */
JT_FN(f_stream_element_type) { return jt_stream_element_type(S, argv[0]); }

jt_V jt_stream_position(jt_State *S, jt_V stream, jt_V to)
{
  jt_V st = follow(S, stream, !jt_stream_direction_p(S, stream, false));
  if (jt_o(st)->flags & JT_STREAM_FILE) return jt_file_stream_position(S, st, to);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  return ops->position ? ops->position(S, st, to) : JT_NIL;
}

jt_V jt_stream_string_length(jt_State *S, jt_V stream, jt_V object)
{
  jt_V st = resolve(S, stream, false);
  if (jt_o(st)->flags & JT_STREAM_FILE) return jt_file_string_length(S, object);
  const jt_StreamOps *ops = kinds[jt_o(st)->aux];
  return ops->string_length ? ops->string_length(S, st, object) : JT_NIL;
}

/* (file-position stream &optional position) */
JT_FN(f_file_position)
{
  check_stream(S, argv[0]);
  jt_V to = argc > 1 ? argv[1] : JT_NOVALUE;
  if (to != JT_NOVALUE && to != JT_SYM(S, K_START) && to != JT_SYM(S, K_END) &&
      !(jt_isfix(to) && jt_fixval(to) >= 0)) {
    if (!jt_isinteger(to) || jt_num_cmp(S, to, jt_mkfix(0)) < 0)
      jt_type_error(S, to, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, UNSIGNED_BYTE),
                                   jt_list(S, 3, JT_SYM(S, MEMBER), JT_SYM(S, K_START),
                                           JT_SYM(S, K_END))));
    return JT_NIL;   /* a bignum: past any end */
  }
  return jt_stream_position(S, argv[0], to);
}

/* (file-string-length stream object): how far writing OBJECT (a string or
** a character) would move the position of STREAM, or NIL. */
JT_FN(f_file_string_length)
{
  jt_V x = argv[1];
  if (!jt_ischar(x) && !jt_stringp(x))
    jt_type_error(S, x, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, STRING), JT_SYM(S, CHARACTER)));
  return jt_stream_string_length(S, argv[0], x);
}

/* (streamp object) */
JT_FN(f_streamp) { return jt_bool(jt_is(argv[0], JT_TSTREAM)); }

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
  {"FINISH-OUTPUT", f_finish_output, 0, 1,
   "(finish-output &optional stream) Deliver what was written (standard "
   "output reaches its pipe or file now); return NIL."},
  {"FORCE-OUTPUT", f_force_output, 0, 1,
   "(force-output &optional stream) Deliver what was written; return NIL."},
  {"CLEAR-OUTPUT", f_clear_output, 0, 1,
   "(clear-output &optional stream) Discard output not yet delivered; return NIL."},
  {"READ-CHAR", f_read_char, 0, 4,
   "(read-char &optional stream (eof-error-p t) eof-value recursive-p) The "
   "next character of STREAM."},
  {"READ-CHAR-NO-HANG", f_read_char, 0, 4,
   "(read-char-no-hang &optional stream (eof-error-p t) eof-value recursive-p) "
   "The next character of STREAM (no stream of a world waits)."},
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
   "elements of STREAM; return the index of the first element not filled."},
  {"WRITE-SEQUENCE", f_write_sequence, 2, -1,
   "(write-sequence sequence stream &key start end) Write the elements of "
   "SEQUENCE; return SEQUENCE."},
  {"READ-BYTE", f_read_byte, 1, 3,
   "(read-byte stream &optional (eof-error-p t) eof-value) The next byte of "
   "the binary stream STREAM."},
  {"WRITE-BYTE", f_write_byte, 2, 2,
   "(write-byte byte stream) Write BYTE to the binary stream STREAM; return it."},
  {"INPUT-STREAM-P", f_input_stream_p, 1, 1,
   "(input-stream-p stream) True if STREAM can be read from."},
  {"OUTPUT-STREAM-P", f_output_stream_p, 1, 1,
   "(output-stream-p stream) True if STREAM can be written to."},
  {"INTERACTIVE-STREAM-P", f_interactive_stream_p, 1, 1,
   "(interactive-stream-p stream) NIL: no stream of a world is interactive."},
  {"OPEN-STREAM-P", f_open_stream_p, 1, 1,
   "(open-stream-p stream) True unless STREAM was closed."},
  {"CLOSE", f_close, 1, -1, "(close stream &key abort) Close STREAM; return T."},
  {"STREAM-ELEMENT-TYPE", f_stream_element_type, 1, 1,
   "(stream-element-type stream) The type of STREAM's elements."},
  {"FILE-POSITION", f_file_position, 1, 2,
   "(file-position stream &optional position) The position of STREAM (a "
   "string stream's index); with POSITION, move an input stream there."},
  {"FILE-STRING-LENGTH", f_file_string_length, 2, 2,
   "(file-string-length stream object) How far writing OBJECT would move "
   "STREAM's position, or NIL."},
  {"%STRING-INPUT-STREAM-INDEX", f_string_input_stream_index, 1, 1,
   "(%string-input-stream-index stream) Index of the next character."},
  {"%MAKE-STRING-OUTPUT-STREAM-TO", f_make_string_output_stream_to, 1, 1,
   "(%make-string-output-stream-to string) A stream writing at STRING's "
   "fill pointer."},
  {"STREAMP", f_streamp, 1, 1,
   "(streamp object) True if OBJECT is a stream."},
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
    /* no terminal: it reads the empty *standard-input*, and what is
    ** written to it is the transaction's output too */
    {JT_SYM(S, TERMINAL_IO), S->terminal_io}, {JT_SYM(S, QUERY_IO), S->query_io},
    {JT_SYM(S, DEBUG_IO), S->query_io},
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
  /* *readtable*: the world's (a program may keep its syntax: world.c
  ** stores it), else the standard syntax in a readtable of its own */
  jt_Symbol *rt = jt_symobj(S, JT_SYM(S, READTABLE_VAR));
  jt_V layout = rt->value == JT_UNBOUND ? JT_NIL : jt_find_layout(S, JT_SYM(S, READTABLE));
  if (layout != JT_NIL && jt_layout_(layout)->nslots == 2 &&
      !(jt_isstruct(rt->value) && jt_struct_(rt->value)->layout == layout)) {
    jt_V fresh = jt_make_struct(S, layout, 2);
    jt_struct_(fresh)->slots[0] = JT_SYM(S, K_UPCASE);
    jt_struct_(fresh)->slots[1] = JT_NIL;
    JT_SET(S, rt, rt->value, fresh);
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

/* The state's own streams (state slots: roots from here on), which CLOSE
** leaves open. */
void jt_open_io(jt_State *S)
{
  S->stdout_stream = jt_stream_new(S, JT_STREAM_HOST, JT_STREAM_OUTPUT | JT_STREAM_KEPT);
  jt_V empty = jt_make_string(S, 0, 0);
  JT_PUSH(S, empty);
  S->stdin_stream = jt_make_string_input_stream(S, empty, 0, 0);
  JT_POP(S, 1);
  jt_o(S->stdin_stream)->flags |= JT_STREAM_KEPT;
  S->terminal_io = jt_make_two_way_stream(S, S->stdin_stream, S->stdout_stream);
  jt_o(S->terminal_io)->flags |= JT_STREAM_KEPT;
  S->query_io = jt_make_synonym_stream(S, JT_SYM(S, TERMINAL_IO));
  jt_o(S->query_io)->flags |= JT_STREAM_KEPT;
  jt_reset_io_syntax(S);

  jt_register(S, io_fns);
  jt_open_compound(S);
  jt_open_print(S);
}
