/*
** jt_stream.h — the operations of a kind of stream, for the modules that
** implement one (io.c: string and host streams; compound.c: two-way, echo,
** concatenated, broadcast and synonym streams).
**
** io.c keeps the one table from a stream's kind (jt_Stream's aux, the enum
** in jt_obj.h) to its jt_StreamOps, and the stream functions of jt_lib.h
** and the built-ins go through it: they check the argument, its direction
** (the JT_STREAM_INPUT and JT_STREAM_OUTPUT flags, set when the stream is
** made) and that it is open, follow `forward`, and call the operation.  A
** new kind adds its enum value, its ops and its row in that table.
**
** The input and output operations get a stream of their kind, open and of
** that direction; the others (column, element_type, position) any stream
** of their kind.  A NULL operation has the default its comment gives.
** Every operation may allocate and signal; the stream is rooted by the
** caller.  jt_stream_new sets JT_STREAM_FORWARDS on a stream whose kind has
** `forward`, so that the common case (a stream doing its own input or
** output) is found with one test of the flags; io.c calls the string and
** host streams' read and write operations directly, for speed.
*/
#ifndef jt_stream_h
#define jt_stream_h

#include "jt_lib.h"

enum { JT_FLUSH_FINISH, JT_FLUSH_FORCE, JT_FLUSH_CLEAR };

typedef struct jt_StreamOps {
  const char *type; /* its type name ("TWO-WAY-STREAM"): typep, class-of */
  int class_id;     /* its class (JT_CLASS_* of jt_clos.h) */
  /* The stream that input (`input`) or output operations go to instead,
  ** or JT_NIL to handle them itself.  NULL: JT_NIL. */
  jt_V (*forward)(jt_State *S, jt_V st, bool input);
  /* input: the next character, consumed or not; -1 at the end */
  int32_t (*read_char)(jt_State *S, jt_V st, bool consume);
  /* input: put back c, the last character read (signals if it was not) */
  void (*unread_char)(jt_State *S, jt_V st, uint32_t c);
  /* input: the next byte (an integer), or JT_EOF at the end.  NULL: not a
  ** binary stream */
  jt_V (*read_byte)(jt_State *S, jt_V st);
  /* input: set the reader up on what is left (as UTF-8), and move past
  ** what it consumed (jt_lib.h's jt_stream_reader_begin) */
  void (*reader_begin)(jt_State *S, jt_V st, struct jt_Reader *R);
  void (*reader_end)(jt_State *S, jt_V st, const struct jt_Reader *R);
  /* input: discard what is buffered.  NULL: nothing is */
  void (*clear_input)(jt_State *S, jt_V st);
  /* output: write n characters (cs may be the characters of the string
  ** written to), keeping the column */
  void (*write)(jt_State *S, jt_V st, const uint32_t *cs, size_t n);
  /* output: write the byte b.  NULL: not a binary stream */
  void (*write_byte)(jt_State *S, jt_V st, jt_V b);
  /* output: the column of the next character.  NULL: st's column */
  size_t (*column)(jt_State *S, jt_V st);
  /* output: finish, force or clear (JT_FLUSH_*).  NULL: nothing to do */
  void (*flush)(jt_State *S, jt_V st, int how);
  /* its element type.  NULL: CHARACTER */
  jt_V (*element_type)(jt_State *S, jt_V st);
  /* file-position: with `to` JT_NOVALUE the position (or NIL), else move
  ** there (:START, :END or an index): T, or NIL when it cannot.  NULL: NIL */
  jt_V (*position)(jt_State *S, jt_V st, jt_V to);
  /* file-string-length of a string or character.  NULL: NIL */
  jt_V (*string_length)(jt_State *S, jt_V st, jt_V object);
  /* close: release what the stream holds (called once; the stream is
  ** marked closed after).  NULL: nothing */
  void (*close)(jt_State *S, jt_V st, bool abort);
} jt_StreamOps;

/* compound.c */
extern const jt_StreamOps jt_two_way_stream_ops, jt_echo_stream_ops, jt_concatenated_stream_ops,
  jt_broadcast_stream_ops, jt_synonym_stream_ops;
void jt_open_compound(jt_State *S); /* their built-ins */

/* compound.c: the streams of *terminal-io* and *query-io*. */
jt_V jt_make_two_way_stream(jt_State *S, jt_V in, jt_V out);
jt_V jt_make_synonym_stream(jt_State *S, jt_V symbol);
/* compound.c: the stream FILE-LENGTH measures for `stream`: a synonym
** stream's stream, a broadcast stream's last one (JT_NIL when it has none),
** else `stream` itself. */
jt_V jt_stream_file_target(jt_State *S, jt_V stream);

/* io.c: the protocol on any stream (designators resolved by the caller),
** for the kinds whose operations use their parts' (these check the parts
** as the built-ins check their argument). */
jt_V jt_stream_read_byte(jt_State *S, jt_V stream); /* JT_EOF at the end */
void jt_stream_write_byte(jt_State *S, jt_V stream, jt_V b);
void jt_stream_flush(jt_State *S, jt_V stream, int how);
jt_V jt_stream_element_type(jt_State *S, jt_V stream);
jt_V jt_stream_position(jt_State *S, jt_V stream, jt_V to);
jt_V jt_stream_string_length(jt_State *S, jt_V stream, jt_V object);
/* input-stream-p (`input`) or output-stream-p */
bool jt_stream_direction_p(jt_State *S, jt_V stream, bool input);

/* io.c: a fresh stream of a kind, with the INPUT/OUTPUT flags `dir`. */
jt_V jt_stream_new(jt_State *S, int kind, uint16_t dir);
/* The operations of a stream's kind. */
const jt_StreamOps *jt_stream_ops(jt_V st);
/* Signal the type-error of a stream that is not an input (an output)
** stream. */
JT_NORETURN void jt_stream_not_input(jt_State *S, jt_V st);
JT_NORETURN void jt_stream_not_output(jt_State *S, jt_V st);

#endif
