/*
** compound.c — streams made of other streams: two-way, echo, concatenated,
** broadcast and synonym streams (CLHS 21.1.1), their operations for io.c's
** table of kinds (jt_stream.h) and their built-ins.
**
** A two-way stream hands its input to one stream and its output to
** another; a synonym stream hands both to the value its symbol has at each
** operation; an echo stream's output is its output stream's.  What they do
** themselves: an echo stream writes each character (or byte) read from its
** input to its output, except one read again after unread-char; a
** concatenated stream reads its streams in turn, dropping each one at its
** end; a broadcast stream writes to all of its streams (the last one
** answers for the position, the column and the element type).  Closing a
** compound stream leaves its parts open.
**
** READ works on the UTF-8 of a string input stream (io.c): an echo stream
** lends its input's and echoes what the reader consumed; a concatenated
** stream with more than one stream left first joins what they hold into
** one string input stream, so that an object may span two of them.
**
** Streams are never part of a checkpoint (nor of the world), so their
** fields are written with the collector's half of the barrier only.
*/
#include <string.h>
#include "jt_lib.h"
#include "jt_clos.h" /* JT_CLOS_C_* */
#include "jt_stream.h"

static jt_V type_sym(jt_State *S, const jt_StreamOps *ops) { return jt_intern(S, ops->type); }

/* argv[i] must be a stream of the kind `ops` describes. */
static jt_V check_kind(jt_State *S, jt_V v, int kind, const jt_StreamOps *ops) {
  if (!jt_is(v, JT_TSTREAM) || (int)jt_o(v)->aux != kind) jt_type_error(S, v, type_sym(S, ops));
  return v;
}

static jt_V check_input(jt_State *S, jt_V v) {
  if (!jt_is(v, JT_TSTREAM)) jt_type_error(S, v, JT_SYM(S, STREAM));
  if (!jt_stream_direction_p(S, v, true)) jt_stream_not_input(S, v);
  return v;
}

static jt_V check_output(jt_State *S, jt_V v) {
  if (!jt_is(v, JT_TSTREAM)) jt_type_error(S, v, JT_SYM(S, STREAM));
  if (!jt_stream_direction_p(S, v, false)) jt_stream_not_output(S, v);
  return v;
}

static jt_V last_of(jt_V list) {
  jt_V x = JT_NIL;
  for (jt_V l = list; jt_iscons(l); l = jt_cdr(l)) x = jt_car(l);
  return x;
}

/* -------------------------------------------------------------- two-way */

static jt_V two_way_forward(jt_State *S, jt_V st, bool input) {
  (void)S;
  return input ? jt_stream_(st)->in : jt_stream_(st)->out;
}

const jt_StreamOps jt_two_way_stream_ops = {
  .type = "TWO-WAY-STREAM",
  .class_id = JT_CLOS_C_TWO_WAY_STREAM,
  .forward = two_way_forward,
};

/* A stream of two parts (in and out rooted by the caller). */
static jt_V make_pair(jt_State *S, int kind, jt_V in, jt_V out) {
  JT_PUSH(S, in);
  JT_PUSH(S, out);
  jt_V st = jt_stream_new(S, kind, JT_STREAM_INPUT | JT_STREAM_OUTPUT);
  jt_stream_(st)->in = in; /* st is fresh: no barrier needed */
  jt_stream_(st)->out = out;
  JT_POP(S, 2);
  return st;
}

jt_V jt_make_two_way_stream(jt_State *S, jt_V in, jt_V out) { return make_pair(S, JT_STREAM_TWO_WAY, in, out); }

/* ----------------------------------------------------------------- echo */

static jt_V echo_forward(jt_State *S, jt_V st, bool input) {
  (void)S;
  return input ? JT_NIL : jt_stream_(st)->out;
}

/* Reading consumed c: echo it, unless it was unread (and echoed) before. */
static bool echo_once(jt_V st) {
  if (jt_o(st)->flags & JT_STREAM_UNREAD) {
    jt_o(st)->flags &= (uint16_t)~JT_STREAM_UNREAD;
    return false;
  }
  return true;
}

static int32_t echo_read_char(jt_State *S, jt_V st, bool consume) {
  int32_t c = jt_stream_read_char(S, jt_stream_(st)->in, consume);
  if (consume && c >= 0 && echo_once(st)) jt_stream_putc(S, jt_stream_(st)->out, (uint32_t)c);
  return c;
}

static void echo_unread_char(jt_State *S, jt_V st, uint32_t c) {
  jt_stream_unread_char(S, jt_stream_(st)->in, c);
  jt_o(st)->flags |= JT_STREAM_UNREAD;
}

static jt_V echo_read_byte(jt_State *S, jt_V st) {
  jt_V b = jt_stream_read_byte(S, jt_stream_(st)->in);
  if (b != JT_EOF) {
    JT_PUSH(S, b);   /* a bignum element: the write may allocate */
    jt_stream_write_byte(S, jt_stream_(st)->out, b);
    JT_POP(S, 1);
  }
  return b;
}

/* The reader reads the input's UTF-8 from R->pos on; where it began is
** kept in bpos, and what it consumed is echoed at the end. */
static void echo_reader_begin(jt_State *S, jt_V st, jt_Reader *R) {
  jt_stream_reader_begin(S, jt_stream_(st)->in, R);
  jt_stream_(st)->bpos = R->pos;
}

static void echo_reader_end(jt_State *S, jt_V st, const jt_Reader *R) {
  size_t i = jt_stream_(st)->bpos;
  bool first = true;
  uint32_t chunk[256];
  size_t k = 0;
  while (i < R->pos) {
    uint32_t c = jt_utf8_decode(R->src, R->pos, &i);
    if (first && !echo_once(st)) {
      first = false;
      continue;
    }
    first = false;
    chunk[k++] = c;
    if (k == 256) {
      jt_stream_write(S, jt_stream_(st)->out, chunk, k);
      k = 0;
    }
  }
  jt_stream_write(S, jt_stream_(st)->out, chunk, k);
  jt_stream_(st)->bpos = R->pos;
  jt_stream_reader_end(S, jt_stream_(st)->in, R);
}

static jt_V echo_element_type(jt_State *S, jt_V st) { return jt_stream_element_type(S, jt_stream_(st)->in); }

const jt_StreamOps jt_echo_stream_ops = {
  .type = "ECHO-STREAM",
  .class_id = JT_CLOS_C_ECHO_STREAM,
  .forward = echo_forward,
  .read_char = echo_read_char,
  .unread_char = echo_unread_char,
  .read_byte = echo_read_byte,
  .reader_begin = echo_reader_begin,
  .reader_end = echo_reader_end,
  .element_type = echo_element_type,
};

/* --------------------------------------------------------- concatenated */

/* Drop the first stream (at its end). */
static void concat_pop(jt_State *S, jt_V st) { JT_SET_GC(S, st, jt_stream_(st)->in, jt_cdr(jt_stream_(st)->in)); }

static int32_t concat_read_char(jt_State *S, jt_V st, bool consume) {
  while (jt_iscons(jt_stream_(st)->in)) {
    int32_t c = jt_stream_read_char(S, jt_car(jt_stream_(st)->in), consume);
    if (c >= 0) return c;
    concat_pop(S, st);
  }
  return -1;
}

/* The character read last came from the first stream: one at its end is
** dropped only when the next read finds it so. */
static void concat_unread_char(jt_State *S, jt_V st, uint32_t c) {
  if (!jt_iscons(jt_stream_(st)->in)) jt_error(S, "UNREAD-CHAR: nothing was read from this concatenated stream");
  jt_stream_unread_char(S, jt_car(jt_stream_(st)->in), c);
}

static jt_V concat_read_byte(jt_State *S, jt_V st) {
  while (jt_iscons(jt_stream_(st)->in)) {
    jt_V b = jt_stream_read_byte(S, jt_car(jt_stream_(st)->in));
    if (b != JT_EOF) return b;
    concat_pop(S, st);
  }
  return JT_EOF;
}

/* The reader reads one string: the streams at their end are dropped, and
** two or more left are joined into one string input stream first. */
static void concat_reader_begin(jt_State *S, jt_V st, jt_Reader *R) {
  while (jt_iscons(jt_stream_(st)->in) && jt_stream_read_char(S, jt_car(jt_stream_(st)->in), false) < 0)
    concat_pop(S, st);
  jt_V in = jt_stream_(st)->in;
  if (!jt_iscons(in)) {
    jt_reader_init(R, "", 0);
    R->bom = false;
    return;
  }
  if (jt_iscons(jt_cdr(in))) {
    jt_V text = jt_make_string(S, 0, 0);
    jt_o(text)->flags |= JT_ARR_ADJUSTABLE | JT_ARR_FILLPTR;
    JT_PUSH(S, text);
    for (int32_t c; (c = concat_read_char(S, st, true)) >= 0;) jt_string_push(S, text, (uint32_t)c);
    jt_V one = jt_make_string_input_stream(S, S->sp[-1], 0, jt_str_(S->sp[-1])->len);
    JT_PUSH(S, one);
    jt_V list = jt_cons(S, one, JT_NIL);
    JT_SET_GC(S, st, jt_stream_(st)->in, list);
    JT_POP(S, 2);
  }
  jt_stream_reader_begin(S, jt_car(jt_stream_(st)->in), R);
}

static void concat_reader_end(jt_State *S, jt_V st, const jt_Reader *R) {
  if (jt_iscons(jt_stream_(st)->in)) jt_stream_reader_end(S, jt_car(jt_stream_(st)->in), R);
}

static jt_V concat_element_type(jt_State *S, jt_V st) {
  jt_V in = jt_stream_(st)->in;
  return jt_iscons(in) ? jt_stream_element_type(S, jt_car(in)) : JT_NIL;
}

const jt_StreamOps jt_concatenated_stream_ops = {
  .type = "CONCATENATED-STREAM",
  .class_id = JT_CLOS_C_CONCATENATED_STREAM,
  .read_char = concat_read_char,
  .unread_char = concat_unread_char,
  .read_byte = concat_read_byte,
  .reader_begin = concat_reader_begin,
  .reader_end = concat_reader_end,
  .element_type = concat_element_type,
};

/* ------------------------------------------------------------ broadcast */

static void broadcast_write(jt_State *S, jt_V st, const uint32_t *cs, size_t n) {
  jt_V list = jt_stream_(st)->out;
  if (!jt_iscons(list)) return;
  if (jt_iscons(jt_cdr(list))) {
    /* cs may be the characters of a string one of the streams writes to,
    ** which that write may move: the others get a copy */
    jt_V copy = jt_make_string(S, n, 0);
    memcpy(jt_str_(copy)->chars, cs, n * sizeof(uint32_t));
    JT_PUSH(S, copy);
    for (jt_V l = jt_stream_(st)->out; jt_iscons(l); l = jt_cdr(l))
      jt_stream_write(S, jt_car(l), jt_str_(S->sp[-1])->chars, n);
    JT_POP(S, 1);
    return;
  }
  jt_stream_write(S, jt_car(list), cs, n);
}

static void broadcast_write_byte(jt_State *S, jt_V st, jt_V b) {
  for (jt_V l = jt_stream_(st)->out; jt_iscons(l); l = jt_cdr(l)) jt_stream_write_byte(S, jt_car(l), b);
}

static size_t broadcast_column(jt_State *S, jt_V st) {
  jt_V last = last_of(jt_stream_(st)->out);
  return last == JT_NIL ? 0 : jt_stream_column(S, last);
}

static void broadcast_flush(jt_State *S, jt_V st, int how) {
  for (jt_V l = jt_stream_(st)->out; jt_iscons(l); l = jt_cdr(l)) jt_stream_flush(S, jt_car(l), how);
}

static jt_V broadcast_element_type(jt_State *S, jt_V st) {
  jt_V last = last_of(jt_stream_(st)->out);
  return last == JT_NIL ? JT_T : jt_stream_element_type(S, last);
}

static jt_V broadcast_position(jt_State *S, jt_V st, jt_V to) {
  jt_V last = last_of(jt_stream_(st)->out);
  if (last == JT_NIL) return to == JT_NOVALUE ? jt_mkfix(0) : JT_NIL;
  return jt_stream_position(S, last, to);
}

static jt_V broadcast_string_length(jt_State *S, jt_V st, jt_V object) {
  jt_V last = last_of(jt_stream_(st)->out);
  return last == JT_NIL ? jt_mkfix(1) : jt_stream_string_length(S, last, object);
}

const jt_StreamOps jt_broadcast_stream_ops = {
  .type = "BROADCAST-STREAM",
  .class_id = JT_CLOS_C_BROADCAST_STREAM,
  .write = broadcast_write,
  .write_byte = broadcast_write_byte,
  .column = broadcast_column,
  .flush = broadcast_flush,
  .element_type = broadcast_element_type,
  .position = broadcast_position,
  .string_length = broadcast_string_length,
};

/* -------------------------------------------------------------- synonym */

static jt_V synonym_forward(jt_State *S, jt_V st, bool input) {
  (void)input;
  jt_V v = jt_symbol_value(S, jt_stream_(st)->in);
  if (!jt_is(v, JT_TSTREAM)) jt_type_error(S, v, JT_SYM(S, STREAM));
  return v;
}

const jt_StreamOps jt_synonym_stream_ops = {
  .type = "SYNONYM-STREAM",
  .class_id = JT_CLOS_C_SYNONYM_STREAM,
  .forward = synonym_forward,
};

jt_V jt_make_synonym_stream(jt_State *S, jt_V symbol) {
  JT_PUSH(S, symbol);
  jt_V st = jt_stream_new(S, JT_STREAM_SYNONYM, JT_STREAM_INPUT | JT_STREAM_OUTPUT);
  jt_stream_(st)->in = symbol; /* st is fresh: no barrier needed */
  JT_POP(S, 1);
  return st;
}

/* Synonym and broadcast streams followed before FILE-LENGTH gives up on a
** ring of them. */
#define FILE_TARGET_HOPS 64

jt_V jt_stream_file_target(jt_State *S, jt_V stream) {
  jt_V st = stream;
  for (int hops = 0;; hops++) {
    if (!jt_is(st, JT_TSTREAM)) jt_type_error(S, st, JT_SYM(S, STREAM));
    int kind = (int)jt_o(st)->aux;
    if (kind != JT_STREAM_SYNONYM && kind != JT_STREAM_BROADCAST) return st;
    if (hops == FILE_TARGET_HOPS) jt_error(S, "FILE-LENGTH: the stream stands for itself: its synonym streams form a ring");
    st = kind == JT_STREAM_SYNONYM ? synonym_forward(S, st, true) : last_of(jt_stream_(st)->out);
    if (st == JT_NIL) return JT_NIL;
  }
}

/* ------------------------------------------------------------ built-ins */

/* (make-two-way-stream input-stream output-stream) */
JT_FN(f_make_two_way_stream) {
  return make_pair(S, JT_STREAM_TWO_WAY, check_input(S, argv[0]), check_output(S, argv[1]));
}

/* (make-echo-stream input-stream output-stream) */
JT_FN(f_make_echo_stream) { return make_pair(S, JT_STREAM_ECHO, check_input(S, argv[0]), check_output(S, argv[1])); }

/* A stream of kind `kind` over the streams argv[0..argc), each checked. */
static jt_V make_list_stream(jt_State *S, int kind, int argc, jt_V *argv, bool input) {
  for (int i = 0; i < argc; i++) input ? check_input(S, argv[i]) : check_output(S, argv[i]);
  jt_V list = JT_NIL;
  JT_ROOT(S, list);
  for (int i = argc; i-- > 0;) list = jt_cons(S, argv[i], list);
  jt_V st = jt_stream_new(S, kind, input ? JT_STREAM_INPUT : JT_STREAM_OUTPUT);
  if (input) jt_stream_(st)->in = list; /* st is fresh: no barrier needed */
  else jt_stream_(st)->out = list;
  JT_UNROOT(S, 1);
  return st;
}

/* (make-concatenated-stream &rest input-streams) */
JT_FN(f_make_concatenated_stream) { return make_list_stream(S, JT_STREAM_CONCATENATED, argc, argv, true); }

/* (make-broadcast-stream &rest output-streams) */
JT_FN(f_make_broadcast_stream) { return make_list_stream(S, JT_STREAM_BROADCAST, argc, argv, false); }

/* (make-synonym-stream symbol) */
JT_FN(f_make_synonym_stream) {
  if (!jt_issymbol(argv[0])) jt_type_error(S, argv[0], JT_SYM(S, SYMBOL));
  return jt_make_synonym_stream(S, argv[0]);
}

/* The accessors: one part of a stream of one kind. */
JT_FN(f_two_way_stream_input_stream) {
  return jt_stream_(check_kind(S, argv[0], JT_STREAM_TWO_WAY, &jt_two_way_stream_ops))->in;
}
JT_FN(f_two_way_stream_output_stream) {
  return jt_stream_(check_kind(S, argv[0], JT_STREAM_TWO_WAY, &jt_two_way_stream_ops))->out;
}
JT_FN(f_echo_stream_input_stream) {
  return jt_stream_(check_kind(S, argv[0], JT_STREAM_ECHO, &jt_echo_stream_ops))->in;
}
JT_FN(f_echo_stream_output_stream) {
  return jt_stream_(check_kind(S, argv[0], JT_STREAM_ECHO, &jt_echo_stream_ops))->out;
}
JT_FN(f_synonym_stream_symbol) {
  return jt_stream_(check_kind(S, argv[0], JT_STREAM_SYNONYM, &jt_synonym_stream_ops))->in;
}
/* A fresh list: the program may change it without changing the stream. */
JT_FN(f_concatenated_stream_streams) {
  return jt_list_copy(S, jt_stream_(check_kind(S, argv[0], JT_STREAM_CONCATENATED, &jt_concatenated_stream_ops))->in);
}
JT_FN(f_broadcast_stream_streams) {
  return jt_list_copy(S, jt_stream_(check_kind(S, argv[0], JT_STREAM_BROADCAST, &jt_broadcast_stream_ops))->out);
}

static const jt_Reg compound_fns[] = {{"MAKE-TWO-WAY-STREAM", f_make_two_way_stream, 2, 2,
                                       "(make-two-way-stream input-stream output-stream) A stream that reads from "
                                       "INPUT-STREAM and writes to OUTPUT-STREAM."},
                                      {"MAKE-ECHO-STREAM", f_make_echo_stream, 2, 2,
                                       "(make-echo-stream input-stream output-stream) A two-way stream that also "
                                       "writes what it reads to OUTPUT-STREAM."},
                                      {"MAKE-CONCATENATED-STREAM", f_make_concatenated_stream, 0, -1,
                                       "(make-concatenated-stream &rest input-streams) A stream that reads each of "
                                       "INPUT-STREAMS in turn, to its end."},
                                      {"MAKE-BROADCAST-STREAM", f_make_broadcast_stream, 0, -1,
                                       "(make-broadcast-stream &rest output-streams) A stream that writes to all "
                                       "of OUTPUT-STREAMS (to none when there are none)."},
                                      {"MAKE-SYNONYM-STREAM", f_make_synonym_stream, 1, 1,
                                       "(make-synonym-stream symbol) A stream that reads and writes the stream "
                                       "SYMBOL's value is at the time."},
                                      {"TWO-WAY-STREAM-INPUT-STREAM", f_two_way_stream_input_stream, 1, 1,
                                       "(two-way-stream-input-stream stream) The stream a two-way stream reads."},
                                      {"TWO-WAY-STREAM-OUTPUT-STREAM", f_two_way_stream_output_stream, 1, 1,
                                       "(two-way-stream-output-stream stream) The stream a two-way stream writes."},
                                      {"ECHO-STREAM-INPUT-STREAM", f_echo_stream_input_stream, 1, 1,
                                       "(echo-stream-input-stream stream) The stream an echo stream reads."},
                                      {"ECHO-STREAM-OUTPUT-STREAM", f_echo_stream_output_stream, 1, 1,
                                       "(echo-stream-output-stream stream) The stream an echo stream writes and "
                                       "echoes to."},
                                      {"CONCATENATED-STREAM-STREAMS", f_concatenated_stream_streams, 1, 1,
                                       "(concatenated-stream-streams stream) The streams a concatenated stream "
                                       "has yet to read, the current one first."},
                                      {"BROADCAST-STREAM-STREAMS", f_broadcast_stream_streams, 1, 1,
                                       "(broadcast-stream-streams stream) The streams a broadcast stream writes to."},
                                      {"SYNONYM-STREAM-SYMBOL", f_synonym_stream_symbol, 1, 1,
                                       "(synonym-stream-symbol stream) The symbol whose value a synonym stream uses."},
                                      {NULL, NULL, 0, 0, NULL}};

void jt_open_compound(jt_State *S) { jt_register(S, compound_fns); }
