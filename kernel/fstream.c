/*
** fstream.c — the world's files: the file table's rows and the streams
** that read and write them.
**
** A world's files live in its file table (world.c's, a managed map:
** namestring -> #(octets write-date)), never in the operating system's.
** The octets are a simple string of characters 0..255.  Being a managed
** map, the table rolls back with a failed transaction and is exported
** and imported as file entries like the data table's rows.
**
** A file stream is a string stream flagged JT_STREAM_FILE: an input
** stream reads the file's contents (its octets, or for characters their
** UTF-8 decoded once at OPEN), an output stream collects what is written
** and puts it in the table at FINISH-OUTPUT and when it is closed (CLOSE
** :ABORT T leaves the table as it was before the OPEN); an :io stream is
** an input stream over a copy of the file that writes replace and extend.
** Everything io.c does with string streams (READ-CHAR, READ-LINE, READ,
** FILE-POSITION...) works on them unchanged.  OPEN's
** keywords, pathnames and LOAD are 57-pathnames.lisp's and 58-files.lisp's;
** this file has the table's primitives and the binary operations.
**
** A binary file's element is (unsigned-byte 8k) or (signed-byte 8k): OPEN
** rounds the element type it is given up to whole octets (SBCL to 8, 16,
** 32 or 64 bits, then to octets: the same layout on those sizes).
** An element takes k octets, least significant first, a signed one in
** two's complement, so a file written as (unsigned-byte 16) reads as
** (unsigned-byte 8) two octets an element.  FILE-LENGTH and FILE-POSITION
** count elements; octets past the last whole element are not read.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jt_lib.h"
#include "jt_eval.h"
#include "jt_world.h"
#include "jt_ckpt.h"
#include "jt_stream.h"

/* The largest file a world keeps, and the most all its files may hold. */
#define FILE_MAX_OCTETS   ((size_t)16 << 20)
#define FILES_MAX_OCTETS  ((size_t)64 << 20)

/* The widest element a binary file holds, in octets (58-files.lisp's
** OPEN searches the element types up to it). */
#define ELEMENT_MAX_OCTETS 128

/* The slots of a file stream's `file` vector.  FS_ETYPE: NIL for
** characters, else (unsigned-byte 8k) or (signed-byte 8k); FS_WIDTH: k, 0
** for characters; FS_SIGNED: true for signed-byte; FS_OLD: the file's
** octets when it was opened (NIL when the OPEN made it); FS_FINISHED: true
** once FINISH-OUTPUT has put what was written in the table. */
enum { FS_PATHNAME, FS_KEY, FS_ETYPE, FS_WIDTH, FS_SIGNED, FS_OUTPUT, FS_MODE, FS_OLD, FS_FINISHED, FS_NSLOTS };

/* Seconds from 1900 to 1970: universal time from the clock's. */
#define UNIX_TO_UNIVERSAL 2208988800LL

static jt_V check_key(jt_State *S, jt_V key)
{
  if (!jt_isstring(key)) jt_type_error(S, key, JT_SYM(S, STRING));
  return key;
}

static size_t table_octets(jt_State *S)
{
  jt_Hash *h = jt_hash_(jt_world_files(S));
  size_t n = 0;
  for (size_t i = 0; i < h->nentries; i++)
    if (h->entries[i].key != JT_HASH_DELETED) n += jt_str_(jt_vec_(h->entries[i].val)->items[0])->len;
  return n;
}

/* Put octets as the file `key` now; the size limits are checked first. */
static void file_put(jt_State *S, jt_V key, jt_V octets)
{
  size_t n = jt_str_(octets)->len;
  char *k = NULL;
  if (n > FILE_MAX_OCTETS) {
    k = jt_string_utf8(S, key, NULL);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "the file %s would hold %zu octets, more than a world's file may (%zu): write it in smaller "
             "files, or keep large values in data rows (world-put)", k, n, FILE_MAX_OCTETS);
    free(k);
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "%s", S->msgbuf);
  }
  bool found;
  jt_V old = jt_hash_get(S, jt_world_files(S), key, &found);
  size_t total = table_octets(S) - (found ? jt_str_(jt_vec_(old)->items[0])->len : 0) + n;
  if (total > FILES_MAX_OCTETS) {
    k = jt_string_utf8(S, key, NULL);
    snprintf(S->msgbuf, sizeof S->msgbuf,
             "writing %s would make the world's files hold %zu octets, more than a world may (%zu): delete "
             "files the world no longer needs (delete-file)", k, total, FILES_MAX_OCTETS);
    free(k);
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "%s", S->msgbuf);
  }
  jt_V *base = S->sp;
  JT_PUSH(S, key);
  JT_PUSH(S, octets);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  jt_V date = jt_make_integer(S, (int64_t)ts.tv_sec + UNIX_TO_UNIVERSAL);
  JT_PUSH(S, date);
  jt_V rec = jt_make_vector(S, 2, JT_NIL);
  jt_vec_(rec)->items[0] = base[1];
  jt_vec_(rec)->items[1] = base[2];
  JT_PUSH(S, rec);
  /* the key is the table's own copy: the caller's string may change */
  jt_V k2 = jt_simple_string_copy(S, base[0]);
  JT_PUSH(S, k2);
  jt_ckpt_map_put(S, jt_world_files(S), k2, rec);
  S->sp = base;
}

/* How many octets characters take in a file: their UTF-8's. */
static size_t chars_octets(const uint32_t *cs, size_t n)
{
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += cs[i] < 0x80 ? 1 : cs[i] < 0x800 ? 2 : cs[i] < 0x10000 ? 3 : 4;
  return k;
}

/* The octets of characters: their UTF-8. */
static jt_V encode_chars(jt_State *S, jt_V str)
{
  size_t n = chars_octets(jt_str_(str)->chars, jt_str_(str)->len);
  char tmp[4];
  JT_PUSH(S, str);
  jt_V out = jt_make_string(S, n, 0);
  str = S->sp[-1];
  JT_POP(S, 1);
  size_t k = 0;
  for (size_t i = 0; i < jt_str_(str)->len; i++) {
    size_t m = jt_utf8_encode(jt_str_(str)->chars[i], tmp);
    for (size_t j = 0; j < m; j++) jt_str_(out)->chars[k++] = (unsigned char)tmp[j];
  }
  return out;
}

/* The character at octets[*i] taken as UTF-8 (U+FFFD for a malformed
** sequence), *i moved past it. */
static uint32_t utf8_at(const uint32_t *o, size_t n, size_t *i)
{
  uint32_t c = o[(*i)++];
  int more = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
  if (more < 0) return 0xFFFD;
  if (more == 0) return c;
  c &= 0x3F >> more;
  for (int k = 0; k < more; k++) {
    if (*i >= n || (o[*i] & 0xC0) != 0x80) return 0xFFFD;
    c = c << 6 | (o[(*i)++] & 0x3F);
  }
  return c < JT_CHAR_LIMIT ? c : 0xFFFD;
}

/* Characters from octets taken as UTF-8. */
static jt_V decode_octets(jt_State *S, jt_V octets)
{
  size_t n = jt_str_(octets)->len, count = 0;
  for (size_t i = 0; i < n; count++) utf8_at(jt_str_(octets)->chars, n, &i);
  JT_PUSH(S, octets);
  jt_V s = jt_make_string(S, count, 0);
  octets = S->sp[-1];
  JT_POP(S, 1);
  size_t k = 0;
  for (size_t i = 0; i < n;) jt_str_(s)->chars[k++] = utf8_at(jt_str_(octets)->chars, n, &i);
  return s;
}

static bool octets_p(jt_V s)
{
  if (!jt_isstring(s)) return false;
  for (size_t i = 0; i < jt_str_(s)->len; i++)
    if (jt_str_(s)->chars[i] > 255) return false;
  return true;
}

/* ------------------------------------------------------------ the table */

/* (%file-get key) => octets, write-date; NIL when there is no such file */
JT_FN(f_file_get)
{
  bool found;
  jt_V rec = jt_hash_get(S, jt_world_files(S), check_key(S, argv[0]), &found);
  if (!found) return JT_NIL;
  return jt_values2(S, jt_vec_(rec)->items[0], jt_vec_(rec)->items[1]);
}

/* (%file-put key octets) => octets */
JT_FN(f_file_put)
{
  check_key(S, argv[0]);
  if (!octets_p(argv[1])) jt_type_error(S, argv[1], JT_SYM(S, STRING));
  jt_V copy = jt_simple_string_copy(S, argv[1]);
  JT_PUSH(S, copy);
  file_put(S, argv[0], copy);
  JT_POP(S, 1);
  return argv[1];
}

/* (%file-remove key) => true if there was such a file */
JT_FN(f_file_remove)
{
  return jt_bool(jt_ckpt_map_rem(S, jt_world_files(S), check_key(S, argv[0])));
}

/* (%file-keys) => the names of every file, in no order */
JT_FN(f_file_keys)
{
  jt_V *base = S->sp;
  jt_Hash *h = jt_hash_(jt_world_files(S));
  size_t n = 0;
  for (size_t i = 0; i < h->nentries; i++) {
    jt_V k = jt_hash_(jt_world_files(S))->entries[i].key;
    if (k == JT_HASH_DELETED) continue;
    JT_PUSH(S, k);
    n++;
  }
  jt_V l = jt_list_from(S, (int)n, base);
  S->sp = base;
  return l;
}

/* ----------------------------------------------------------- the streams */

static bool is_file_stream(jt_V v)
{
  return jt_is(v, JT_TSTREAM) && (jt_o(v)->flags & JT_STREAM_FILE);
}

static jt_V fs_slot(jt_V stream, int i) { return jt_vec_(jt_stream_(stream)->file)->items[i]; }

/* The width in octets of a binary file's element type, (unsigned-byte 8k)
** or (signed-byte 8k) with 8k at most ELEMENT_MAX_OCTETS * 8; 0 for NIL
** (characters).  *sign tells signed-byte. */
static int element_width(jt_State *S, jt_V etype, bool *sign)
{
  *sign = false;
  if (etype == JT_NIL) return 0;
  jt_V kind = jt_iscons(etype) ? jt_car(etype) : JT_NIL;
  jt_V bits = jt_iscons(etype) && jt_iscons(jt_cdr(etype)) ? jt_car(jt_cdr(etype)) : JT_NIL;
  bool known = kind == JT_SYM(S, UNSIGNED_BYTE) || kind == jt_intern(S, "SIGNED-BYTE");
  if (!known || !jt_isfix(bits) || jt_cdr(jt_cdr(etype)) != JT_NIL || jt_fixval(bits) <= 0 ||
      jt_fixval(bits) % 8 != 0)
    jt_error(S, "%%OPEN-FILE-STREAM: the element type is NIL, (unsigned-byte 8k) or (signed-byte 8k)");
  if (jt_fixval(bits) > ELEMENT_MAX_OCTETS * 8)
    jt_error(S, "OPEN: a world's binary files hold elements of at most %d bits: write wider integers "
             "as several elements", ELEMENT_MAX_OCTETS * 8);
  *sign = kind != JT_SYM(S, UNSIGNED_BYTE);
  return (int)(jt_fixval(bits) / 8);
}

/* (%open-file-stream pathname key direction etype mode) => a file stream.
** DIRECTION: :input, :output or :io.  ETYPE: NIL for characters, else
** (unsigned-byte 8k) or (signed-byte 8k).  MODE: :new (the file was made
** by this OPEN), :supersede, :append or :overwrite; for input it is
** ignored.  The file must exist unless the stream is an output one.
** An :io stream is an input stream over a copy of the file (none for
** :new and :supersede) that writes replace and extend at its position:
** the end for :append, else the start. */
JT_FN(f_open_file_stream)
{
  jt_V *base = S->sp;
  check_key(S, argv[1]);
  bool io = argv[2] == jt_intern_keyword(S, "IO");
  bool output = io || argv[2] == jt_intern_keyword(S, "OUTPUT"), sign;
  if (!output && argv[2] != jt_intern_keyword(S, "INPUT"))
    jt_error(S, "%%OPEN-FILE-STREAM: the direction is :input, :output or :io");
  int width = element_width(S, argv[3], &sign);
  bool binary = width > 0;
  jt_V mode = argv[4];
  bool found;
  jt_V rec = jt_hash_get(S, jt_world_files(S), argv[1], &found);
  jt_V octets = found ? jt_vec_(rec)->items[0] : JT_NIL;
  JT_PUSH(S, octets);                                   /* base[0] */
  jt_V file = jt_make_vector(S, FS_NSLOTS, JT_NIL);
  JT_PUSH(S, file);                                     /* base[1] */
  jt_vec_(file)->items[FS_PATHNAME] = argv[0];
  jt_vec_(file)->items[FS_KEY] = argv[1];
  jt_vec_(file)->items[FS_ETYPE] = argv[3];
  jt_vec_(file)->items[FS_WIDTH] = jt_mkfix(width);
  jt_vec_(file)->items[FS_SIGNED] = jt_bool(sign);
  jt_vec_(file)->items[FS_OUTPUT] = jt_bool(output);
  jt_vec_(file)->items[FS_MODE] = mode;
  jt_vec_(file)->items[FS_OLD] = base[0];
  jt_V st;
  if (io) {
    bool keep = found && (mode == jt_intern_keyword(S, "APPEND") || mode == jt_intern_keyword(S, "OVERWRITE"));
    jt_V text = !keep ? jt_make_string(S, 0, 0) : binary ? jt_simple_string_copy(S, base[0]) : decode_octets(S, base[0]);
    JT_PUSH(S, text);
    st = jt_make_string_input_stream(S, text, 0, jt_str_(text)->len);
    jt_o(st)->flags |= JT_STREAM_OUTPUT;
    if (mode == jt_intern_keyword(S, "APPEND")) jt_stream_(st)->pos = jt_str_(text)->len;
  } else if (!output) {
    if (!found) jt_error(S, "%%OPEN-FILE-STREAM: no such file");
    jt_V text = binary ? base[0] : decode_octets(S, base[0]);
    JT_PUSH(S, text);
    st = jt_make_string_input_stream(S, text, 0, jt_str_(text)->len);
  } else {
    st = jt_make_string_stream(S);
    JT_PUSH(S, st);
    if (mode == jt_intern_keyword(S, "APPEND") && found) {
      jt_V text = binary ? base[0] : decode_octets(S, base[0]);
      JT_PUSH(S, text);
      jt_stream_write(S, base[2], jt_str_(text)->chars, jt_str_(text)->len);
    }
    st = base[2];
  }
  jt_o(st)->flags |= JT_STREAM_FILE;
  jt_stream_(st)->file = base[1];   /* streams are never part of a checkpoint */
  S->sp = base;
  return st;
}

/* Put what an output stream has written in the table as its file. */
static void put_written(jt_State *S, jt_V stream)
{
  jt_V *base = S->sp;
  JT_PUSH(S, stream);
  jt_V buf = jt_stream_(stream)->buffer;
  jt_V octets = fs_slot(stream, FS_ETYPE) != JT_NIL ? jt_simple_string_copy(S, buf) : encode_chars(S, buf);
  JT_PUSH(S, octets);
  jt_V old = fs_slot(base[0], FS_OLD);
  if (fs_slot(base[0], FS_MODE) == jt_intern_keyword(S, "OVERWRITE") && jt_isstring(old) &&
      jt_str_(old)->len > jt_str_(base[1])->len) {
    /* what was written replaces the start; the rest stays */
    size_t w = jt_str_(base[1])->len, n = jt_str_(old)->len;
    jt_V all = jt_make_string(S, n, 0);
    old = fs_slot(base[0], FS_OLD);
    memcpy(jt_str_(all)->chars, jt_str_(base[1])->chars, w * sizeof(uint32_t));
    memcpy(jt_str_(all)->chars + w, jt_str_(old)->chars + w, (n - w) * sizeof(uint32_t));
    base[1] = all;
  }
  file_put(S, fs_slot(base[0], FS_KEY), base[1]);
  S->sp = base;
}

void jt_file_stream_finish(jt_State *S, jt_V stream)
{
  if (fs_slot(stream, FS_OUTPUT) == JT_NIL) return;
  put_written(S, stream);
  JT_SET(S, jt_stream_(stream)->file, jt_vec_(jt_stream_(stream)->file)->items[FS_FINISHED], JT_T);
}

/* CLOSE of a file stream (io.c): an output stream puts what was written in
** the table, unless aborted; an aborted stream that made its file removes
** it, one that FINISH-OUTPUT wrote puts back what the file held.  T the
** first time, NIL when it was closed already. */
jt_V jt_file_stream_close(jt_State *S, jt_V stream, bool abort)
{
  if (jt_o(stream)->flags & JT_STREAM_CLOSED) return JT_NIL;
  jt_V *base = S->sp;
  JT_PUSH(S, stream);
  if (fs_slot(stream, FS_OUTPUT) != JT_NIL) {
    bool made = fs_slot(stream, FS_MODE) == jt_intern_keyword(S, "NEW");
    if (!abort) put_written(S, stream);
    else if (made) jt_ckpt_map_rem(S, jt_world_files(S), fs_slot(stream, FS_KEY));
    else if (fs_slot(stream, FS_FINISHED) != JT_NIL) file_put(S, fs_slot(stream, FS_KEY), fs_slot(stream, FS_OLD));
  }
  jt_o(base[0])->flags |= JT_STREAM_CLOSED;
  S->sp = base;
  return JT_T;
}

jt_V jt_file_stream_element_type(jt_State *S, jt_V stream)
{
  jt_V etype = fs_slot(stream, FS_ETYPE);
  return etype == JT_NIL ? JT_SYM(S, CHARACTER) : etype;
}

/* Octets per element of a file stream: 0 for characters. */
static size_t fs_width(jt_V stream) { return (size_t)jt_fixval(fs_slot(stream, FS_WIDTH)); }

bool jt_file_stream_binary_p(jt_V stream)
{
  return is_file_stream(stream) && fs_width(stream) > 0;
}

_Static_assert(GMP_NAIL_BITS == 0, "elements are put in GMP limbs octet by octet");

/* Negate the two's complement integer of n octets o (least significant
** first) in place. */
static void negate_octets(unsigned char *o, size_t n)
{
  unsigned carry = 1;
  for (size_t i = 0; i < n; i++) {
    unsigned v = (unsigned)(unsigned char)~o[i] + carry;
    o[i] = (unsigned char)v;
    carry = v >> 8;
  }
}

/* The integer a binary file stream's next element holds, or JT_EOF at the
** end (an element cut short by the end is not read). */
jt_V jt_file_read_element(jt_State *S, jt_V stream)
{
  size_t w = fs_width(stream);
  if (w == 1 && fs_slot(stream, FS_SIGNED) == JT_NIL) {   /* octets: the common case */
    int32_t c = jt_stream_read_char(S, stream, true);
    return c < 0 ? JT_EOF : jt_mkfix(c);
  }
  unsigned char o[ELEMENT_MAX_OCTETS];
  for (size_t i = 0; i < w; i++) {
    int32_t c = jt_stream_read_char(S, stream, true);
    if (c < 0) return JT_EOF;
    o[i] = (unsigned char)c;
  }
  bool neg = fs_slot(stream, FS_SIGNED) != JT_NIL && (o[w - 1] & 0x80);
  if (w < 8) {
    uint64_t u = 0;
    for (size_t i = w; i-- > 0;) u = u << 8 | o[i];
    return jt_make_integer(S, neg ? (int64_t)u - ((int64_t)1 << (8 * w)) : (int64_t)u);
  }
  if (neg) negate_octets(o, w);   /* the magnitude */
  enum { LIMB = sizeof(mp_limb_t) };
  mp_limb_t limbs[(ELEMENT_MAX_OCTETS + LIMB - 1) / LIMB] = {0};
  for (size_t i = 0; i < w; i++) limbs[i / LIMB] |= (mp_limb_t)o[i] << (8 * (i % LIMB));
  mp_size_t n = (mp_size_t)((w + LIMB - 1) / LIMB);
  while (n > 0 && limbs[n - 1] == 0) n--;
  mpz_t z;
  return jt_make_integer_mpz(S, mpz_roinit_n(z, limbs, neg ? -n : n));
}

/* Write the integer x as a binary file stream's next element: a type-error
** when it is not of the stream's element type. */
void jt_file_write_element(jt_State *S, jt_V stream, jt_V x)
{
  size_t w = fs_width(stream);
  bool sign = fs_slot(stream, FS_SIGNED) != JT_NIL;
  /* x in two's complement over w + 1 octets: in range when the extra octet
  ** (and for signed-byte the top bit of the last) only extends the sign */
  unsigned char o[ELEMENT_MAX_OCTETS + 1] = {0};
  bool neg = false, fits = jt_isinteger(x);
  if (fits && jt_isfix(x)) {
    intptr_t v = jt_fixval(x);
    neg = v < 0;
    uint64_t m = neg ? -(uint64_t)v : (uint64_t)v;
    for (size_t i = 0; i < sizeof m; i++, m >>= 8) {
      if (i <= w) o[i] = (unsigned char)m;
      else if (m) fits = false;
    }
  } else if (fits) {
    mpz_srcptr z = jt_big_(x)->z;
    neg = mpz_sgn(z) < 0;
    if ((mpz_sizeinbase(z, 2) + 7) / 8 > w + 1) fits = false;
    else mpz_export(o, NULL, -1, 1, 0, 0, z);
  }
  if (fits) {
    if (neg) negate_octets(o, w + 1);
    fits = sign ? o[w] == (neg ? 0xFF : 0) && ((o[w - 1] & 0x80) != 0) == neg : !neg && o[w] == 0;
  }
  if (!fits) jt_type_error(S, x, jt_file_stream_element_type(S, stream));
  uint32_t cs[ELEMENT_MAX_OCTETS];
  for (size_t i = 0; i < w; i++) cs[i] = o[i];
  jt_stream_write(S, stream, cs, w);
}

/* FILE-POSITION of a file stream: a binary one's counts elements. */
jt_V jt_file_stream_position(jt_State *S, jt_V stream, jt_V to)
{
  const jt_StreamOps *ops = jt_stream_ops(stream);
  size_t w = fs_width(stream);
  if (w <= 1) return ops->position(S, stream, to);
  if (to == JT_NOVALUE) {
    jt_V at = ops->position(S, stream, to);
    return jt_isfix(at) ? jt_mkfix(jt_fixval(at) / (intptr_t)w) : at;
  }
  if (to == JT_SYM(S, K_END)) {   /* past the last whole element */
    size_t n = jt_str_(jt_stream_(stream)->buffer)->len;
    to = jt_mkfix((intptr_t)(n / w));
  }
  if (jt_isfix(to)) {
    if ((size_t)jt_fixval(to) > FILE_MAX_OCTETS / w) return JT_NIL;
    to = jt_mkfix(jt_fixval(to) * (intptr_t)w);
  }
  return ops->position(S, stream, to);
}

/* FILE-STRING-LENGTH of a character file stream: the octets OBJECT (a
** character or a string) takes. */
jt_V jt_file_string_length(jt_State *S, jt_V object)
{
  if (jt_ischar(object)) {
    uint32_t c = jt_charcode(object);
    return jt_mkfix((intptr_t)chars_octets(&c, 1));
  }
  size_t n = 0, len = jt_vector_length(object);
  for (size_t i = 0; i < len; i++) {
    uint32_t c = jt_charcode(jt_array_ref(S, object, i));
    n += chars_octets(&c, 1);
  }
  return jt_mkfix((intptr_t)n);
}

/* (file-length stream): a file stream's length in its elements (octets
** for characters); a synonym stream's stream's; a broadcast stream's last
** stream's, 0 when it has none */
JT_FN(f_file_length)
{
  jt_V st = jt_stream_file_target(S, argv[0]);
  if (st == JT_NIL) return jt_mkfix(0);
  if (!is_file_stream(st)) jt_type_error(S, argv[0], jt_intern(S, "FILE-STREAM"));
  jt_V buf = jt_stream_(st)->buffer;
  size_t w = fs_width(st);
  if (w > 0) return jt_mkfix((intptr_t)(jt_str_(buf)->len / w));
  if (fs_slot(st, FS_OUTPUT) == JT_NIL && jt_isstring(fs_slot(st, FS_OLD)))
    return jt_mkfix((intptr_t)jt_str_(fs_slot(st, FS_OLD))->len);
  return jt_mkfix((intptr_t)chars_octets(jt_str_(buf)->chars, jt_str_(buf)->len));
}

/* (%file-stream-name stream) => the pathname a file stream was opened
** with, or NIL for another stream */
JT_FN(f_file_stream_name)
{
  return is_file_stream(argv[0]) ? fs_slot(argv[0], FS_PATHNAME) : JT_NIL;
}

/* (%file-stream-p object) */
JT_FN(f_file_stream_p) { return jt_bool(is_file_stream(argv[0])); }

static const jt_Reg fstream_fns[] = {
  {"%FILE-GET", f_file_get, 1, 1, "(%file-get namestring) The file's octets and write date, or NIL."},
  {"%FILE-PUT", f_file_put, 2, 2, "(%file-put namestring octets) Make the file hold OCTETS (a string of codes below 256)."},
  {"%FILE-REMOVE", f_file_remove, 1, 1, "(%file-remove namestring) Remove the file; true if it existed."},
  {"%FILE-KEYS", f_file_keys, 0, 0, "(%file-keys) The namestrings of the world's files."},
  {"%OPEN-FILE-STREAM", f_open_file_stream, 5, 5,
   "(%open-file-stream pathname namestring direction element-type mode) A stream over the file."},
  {"%FILE-STREAM-NAME", f_file_stream_name, 1, 1, "(%file-stream-name stream) A file stream's pathname, or NIL."},
  {"%FILE-STREAM-P", f_file_stream_p, 1, 1, "(%file-stream-p object) True for a file stream."},
  {"FILE-LENGTH", f_file_length, 1, 1, "(file-length stream) The length of a file stream's file, in its elements (octets for characters)."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_fstream(jt_State *S) { jt_register(S, fstream_fns); }
