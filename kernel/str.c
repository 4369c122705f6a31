/*
** str.c — characters and strings.
**
** Characters are immediates holding a code point.  Case is a one-to-one
** mapping (CL requires char-upcase and char-downcase to be inverse on cased
** characters), taken from a small range table covering ASCII, Latin-1,
** Latin Extended-A, Greek and Cyrillic; characters with only a one-way
** Unicode mapping (dotless i, long s, final sigma, micro sign) have no case,
** as in SBCL.  No locale is consulted: the C library's is process-global.
**
** Strings hold code points; len is the active length (the fill pointer),
** and every string function works on the active characters.
*/
#include <stdio.h>
#include <string.h>
#include "jt_lib.h"

/* ------------------------------------------------------------------ case */

/* Upper-case characters lo, lo+step, ... hi have lower-case partners at
** c + delta. */
typedef struct CaseRange { uint32_t lo, hi; int32_t delta; uint32_t step; } CaseRange;

static const CaseRange case_ranges[] = {
  {0x0041, 0x005A, 32, 1},   {0x00C0, 0x00D6, 32, 1},  {0x00D8, 0x00DE, 32, 1},
  {0x0100, 0x012E, 1, 2},    {0x0132, 0x0136, 1, 2},   {0x0139, 0x0147, 1, 2},
  {0x014A, 0x0176, 1, 2},    {0x0178, 0x0178, -0x79, 1}, {0x0179, 0x017D, 1, 2},
  {0x0386, 0x0386, 38, 1},   {0x0388, 0x038A, 37, 1},  {0x038C, 0x038C, 64, 1},
  {0x038E, 0x038F, 63, 1},   {0x0391, 0x03A1, 32, 1},  {0x03A3, 0x03AB, 32, 1},
  {0x0400, 0x040F, 80, 1},   {0x0410, 0x042F, 32, 1},
};
#define NCASE (sizeof case_ranges / sizeof case_ranges[0])

uint32_t jt_char_downcase(uint32_t c)
{
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  for (size_t i = 0; i < NCASE; i++) {
    const CaseRange *r = &case_ranges[i];
    if (c >= r->lo && c <= r->hi && (c - r->lo) % r->step == 0)
      return (uint32_t)((int32_t)c + r->delta);
  }
  return c;
}

uint32_t jt_char_upcase(uint32_t c)
{
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  for (size_t i = 0; i < NCASE; i++) {
    const CaseRange *r = &case_ranges[i];
    uint32_t u = (uint32_t)((int32_t)c - r->delta);
    if (u >= r->lo && u <= r->hi && (u - r->lo) % r->step == 0) return u;
  }
  return c;
}

static bool is_upper(uint32_t c) { return jt_char_downcase(c) != c; }
static bool is_lower(uint32_t c) { return jt_char_upcase(c) != c; }

/* Letters without case, besides the cased ones (approximate Unicode
** coverage: the common alphabets and scripts). */
static const uint32_t alpha_ranges[][2] = {
  {0x00AA, 0x00AA}, {0x00B5, 0x00B5}, {0x00BA, 0x00BA}, {0x00DF, 0x00DF},
  {0x0100, 0x02AF}, {0x0370, 0x0373}, {0x0376, 0x0377}, {0x037B, 0x037D},
  {0x0386, 0x0386}, {0x0388, 0x03FF}, {0x0400, 0x0481}, {0x048A, 0x052F},
  {0x0531, 0x0556}, {0x0561, 0x0587}, {0x05D0, 0x05EA}, {0x0620, 0x064A},
  {0x0904, 0x0939}, {0x0E01, 0x0E30}, {0x10A0, 0x10FF}, {0x1E00, 0x1FFF},
  {0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x3105, 0x312F}, {0x3400, 0x4DBF},
  {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFF21, 0xFF3A},
  {0xFF41, 0xFF5A}, {0x20000, 0x2FA1F},
};

static bool is_alpha(uint32_t c)
{
  if (c < 0x80) return (c | 32) >= 'a' && (c | 32) <= 'z';
  if (c >= 0xC0 && c <= 0xFF) return c != 0xD7 && c != 0xF7;
  if (is_upper(c) || is_lower(c)) return true;
  for (size_t i = 0; i < sizeof alpha_ranges / sizeof alpha_ranges[0]; i++)
    if (c >= alpha_ranges[i][0] && c <= alpha_ranges[i][1])
      /* Greek punctuation sits inside the block */
      return c != 0x0387 && c != 0x03F6;
  return false;
}

static bool is_digit10(uint32_t c) { return c >= '0' && c <= '9'; }
static bool is_alnum(uint32_t c) { return is_digit10(c) || is_alpha(c); }
bool jt_char_alphanumeric(uint32_t c) { return is_alnum(c); }

/* C0 and C1 controls and DEL are the non-graphic characters. */
static bool is_graphic(uint32_t c)
{
  return c >= 0x20 && c != 0x7F && !(c >= 0x80 && c <= 0x9F);
}

/* The weight of c as a digit in base 36, or 36 if it is none. */
static uint32_t digit_weight(uint32_t c)
{
  if (is_digit10(c)) return c - '0';
  if (c < 0x80 && (c | 32) >= 'a' && (c | 32) <= 'z') return (c | 32) - 'a' + 10;
  return 36;
}

/* ---------------------------------------------------------- argument help */

static jt_V index_type(jt_State *S, size_t lo, size_t hi)
{
  return jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(lo), jt_mkfix(hi));
}

/* :start/:end bounding indices for a sequence of `len` elements; an absent
** or NIL end is the length. */
static void get_bounds(jt_State *S, jt_V startv, jt_V endv, size_t len,
                       size_t *start, size_t *end)
{
  size_t e = len;
  if (endv != JT_NOVALUE && endv != JT_NIL) {
    if (!jt_isfix(endv) || jt_fixval(endv) < 0 || (size_t)jt_fixval(endv) > len)
      jt_type_error(S, endv, jt_list(S, 3, JT_SYM(S, OR), JT_SYM(S, NULL_),
                                     index_type(S, 0, len)));
    e = (size_t)jt_fixval(endv);
  }
  size_t s = 0;
  if (startv != JT_NOVALUE) {
    if (!jt_isfix(startv) || jt_fixval(startv) < 0
        || (size_t)jt_fixval(startv) > e)
      jt_type_error(S, startv, index_type(S, 0, e));
    s = (size_t)jt_fixval(startv);
  }
  *start = s;
  *end = e;
}

static uint32_t *chars_of(jt_V s) { return jt_str_(s)->chars; }
static size_t len_of(jt_V s) { return jt_str_(s)->len; }

/* A valid index into `str` for char, schar and their setters. */
static jt_V copy_string(jt_State *S, jt_V str, size_t from, size_t to)
{
  JT_ROOT(S, str);
  jt_V r = jt_make_string(S, to - from, 0);
  JT_UNROOT(S, 1);
  if (to > from)
    memcpy(chars_of(r), chars_of(str) + from, (to - from) * sizeof(uint32_t));
  return r;
}

/* ------------------------------------------------------------ characters */

JT_FN(f_characterp) { return jt_bool(jt_ischar(argv[0])); }

enum { CMP_EQ, CMP_NE, CMP_LT, CMP_GT, CMP_LE, CMP_GE };

static bool cmp_holds(int op, uint32_t a, uint32_t b)
{
  switch (op) {
  case CMP_EQ: return a == b;
  case CMP_NE: return a != b;
  case CMP_LT: return a < b;
  case CMP_GT: return a > b;
  case CMP_LE: return a <= b;
  default:     return a >= b;
  }
}

/* The n-ary character comparisons.  Case-insensitive ones compare the
** lower-case forms, which orders letters against punctuation like SBCL. */
static jt_V char_compare(jt_State *S, int argc, jt_V *argv, int op, bool fold)
{
  for (int i = 0; i < argc; i++) jt_check_char(S, argv[i]);
#define KEY(v) (fold ? jt_char_downcase(jt_charcode(v)) : jt_charcode(v))
  if (op == CMP_NE) {
    for (int i = 0; i < argc; i++)
      for (int j = i + 1; j < argc; j++)
        if (KEY(argv[i]) == KEY(argv[j])) return JT_NIL;
    return JT_T;
  }
  for (int i = 0; i + 1 < argc; i++)
    if (!cmp_holds(op, KEY(argv[i]), KEY(argv[i + 1]))) return JT_NIL;
  return JT_T;
#undef KEY
}

JT_FN(f_char_eq)  { return char_compare(S, argc, argv, CMP_EQ, false); }
JT_FN(f_char_ne)  { return char_compare(S, argc, argv, CMP_NE, false); }
JT_FN(f_char_lt)  { return char_compare(S, argc, argv, CMP_LT, false); }
JT_FN(f_char_gt)  { return char_compare(S, argc, argv, CMP_GT, false); }
JT_FN(f_char_le)  { return char_compare(S, argc, argv, CMP_LE, false); }
JT_FN(f_char_ge)  { return char_compare(S, argc, argv, CMP_GE, false); }
JT_FN(f_char_equal)         { return char_compare(S, argc, argv, CMP_EQ, true); }
JT_FN(f_char_not_equal)     { return char_compare(S, argc, argv, CMP_NE, true); }
JT_FN(f_char_lessp)         { return char_compare(S, argc, argv, CMP_LT, true); }
JT_FN(f_char_greaterp)      { return char_compare(S, argc, argv, CMP_GT, true); }
JT_FN(f_char_not_greaterp)  { return char_compare(S, argc, argv, CMP_LE, true); }
JT_FN(f_char_not_lessp)     { return char_compare(S, argc, argv, CMP_GE, true); }

JT_FN(f_char_upcase)   { return jt_mkchar(jt_char_upcase(jt_check_char(S, argv[0]))); }
JT_FN(f_char_downcase) { return jt_mkchar(jt_char_downcase(jt_check_char(S, argv[0]))); }
JT_FN(f_char_code)     { return jt_mkfix(jt_check_char(S, argv[0])); }

/* (code-char code): every code point below char-code-limit is a character,
** surrogates included, as in SBCL. */
JT_FN(f_code_char)
{
  jt_V v = argv[0];
  if (!jt_isfix(v) || jt_fixval(v) < 0 || jt_fixval(v) >= JT_CHAR_LIMIT)
    jt_type_error(S, v, jt_list(S, 2, JT_SYM(S, MOD), jt_mkfix(JT_CHAR_LIMIT)));
  return jt_mkchar((uint32_t)jt_fixval(v));
}

/* Names of the ASCII controls, space and rubout, as SBCL prints them. */
static const char *const control_names[33] = {
  "Nul", "Soh", "Stx", "Etx", "Eot", "Enq", "Ack", "Bel", "Backspace", "Tab",
  "Newline", "Vt", "Page", "Return", "So", "Si", "Dle", "Dc1", "Dc2", "Dc3",
  "Dc4", "Nak", "Syn", "Etb", "Can", "Em", "Sub", "Esc", "Fs", "Gs", "Rs",
  "Us", "Space"
};

/* Further names name-char accepts. */
static const struct { const char *name; uint32_t code; } name_aliases[] = {
  {"Null", 0}, {"Bell", 7}, {"Linefeed", 10}, {"Lf", 10}, {"Escape", 27},
  {"Altmode", 27}, {"Rubout", 127}, {"Del", 127}, {"Delete", 127},
};

/* The Unicode names of the graphic ASCII characters, ! to ~, spelled as
** SBCL spells them (spaces as underscores): char-name's answer and
** name-char's (the printer writes these characters as themselves). */
static const char *const ascii_names[94] = {
  "EXCLAMATION_MARK", "QUOTATION_MARK", "NUMBER_SIGN", "DOLLAR_SIGN", "PERCENT_SIGN", "AMPERSAND",
  "APOSTROPHE", "LEFT_PARENTHESIS", "RIGHT_PARENTHESIS", "ASTERISK", "PLUS_SIGN", "COMMA",
  "HYPHEN-MINUS", "FULL_STOP", "SOLIDUS", "DIGIT_ZERO", "DIGIT_ONE", "DIGIT_TWO", "DIGIT_THREE",
  "DIGIT_FOUR", "DIGIT_FIVE", "DIGIT_SIX", "DIGIT_SEVEN", "DIGIT_EIGHT", "DIGIT_NINE", "COLON",
  "SEMICOLON", "LESS-THAN_SIGN", "EQUALS_SIGN", "GREATER-THAN_SIGN", "QUESTION_MARK",
  "COMMERCIAL_AT", "LATIN_CAPITAL_LETTER_A", "LATIN_CAPITAL_LETTER_B", "LATIN_CAPITAL_LETTER_C",
  "LATIN_CAPITAL_LETTER_D", "LATIN_CAPITAL_LETTER_E", "LATIN_CAPITAL_LETTER_F",
  "LATIN_CAPITAL_LETTER_G", "LATIN_CAPITAL_LETTER_H", "LATIN_CAPITAL_LETTER_I",
  "LATIN_CAPITAL_LETTER_J", "LATIN_CAPITAL_LETTER_K", "LATIN_CAPITAL_LETTER_L",
  "LATIN_CAPITAL_LETTER_M", "LATIN_CAPITAL_LETTER_N", "LATIN_CAPITAL_LETTER_O",
  "LATIN_CAPITAL_LETTER_P", "LATIN_CAPITAL_LETTER_Q", "LATIN_CAPITAL_LETTER_R",
  "LATIN_CAPITAL_LETTER_S", "LATIN_CAPITAL_LETTER_T", "LATIN_CAPITAL_LETTER_U",
  "LATIN_CAPITAL_LETTER_V", "LATIN_CAPITAL_LETTER_W", "LATIN_CAPITAL_LETTER_X",
  "LATIN_CAPITAL_LETTER_Y", "LATIN_CAPITAL_LETTER_Z", "LEFT_SQUARE_BRACKET", "REVERSE_SOLIDUS",
  "RIGHT_SQUARE_BRACKET", "CIRCUMFLEX_ACCENT", "LOW_LINE", "GRAVE_ACCENT", "LATIN_SMALL_LETTER_A",
  "LATIN_SMALL_LETTER_B", "LATIN_SMALL_LETTER_C", "LATIN_SMALL_LETTER_D", "LATIN_SMALL_LETTER_E",
  "LATIN_SMALL_LETTER_F", "LATIN_SMALL_LETTER_G", "LATIN_SMALL_LETTER_H", "LATIN_SMALL_LETTER_I",
  "LATIN_SMALL_LETTER_J", "LATIN_SMALL_LETTER_K", "LATIN_SMALL_LETTER_L", "LATIN_SMALL_LETTER_M",
  "LATIN_SMALL_LETTER_N", "LATIN_SMALL_LETTER_O", "LATIN_SMALL_LETTER_P", "LATIN_SMALL_LETTER_Q",
  "LATIN_SMALL_LETTER_R", "LATIN_SMALL_LETTER_S", "LATIN_SMALL_LETTER_T", "LATIN_SMALL_LETTER_U",
  "LATIN_SMALL_LETTER_V", "LATIN_SMALL_LETTER_W", "LATIN_SMALL_LETTER_X", "LATIN_SMALL_LETTER_Y",
  "LATIN_SMALL_LETTER_Z", "LEFT_CURLY_BRACKET", "VERTICAL_LINE", "RIGHT_CURLY_BRACKET", "TILDE"};

const char *jt_char_name_of(uint32_t c)
{
  return c <= 32 ? control_names[c] : c == 127 ? "Rubout" : NULL;
}

/* (char-name char): graphic characters beyond ASCII have no name here (no
** Unicode name table);
** other unnamed non-graphic ones are named U+<hex>, as the printer and ~:C
** spell them, which name-char reads. */
JT_FN(f_char_name)
{
  uint32_t c = jt_check_char(S, argv[0]);
  const char *name = jt_char_name_of(c);
  if (name) return jt_string_from_cstr(S, name);
  if (c > 32 && c < 127) return jt_string_from_cstr(S, ascii_names[c - 33]);
  if (is_graphic(c)) return JT_NIL;
  char buf[16];
  snprintf(buf, sizeof buf, "U+%04X", (unsigned)c);
  return jt_string_from_cstr(S, buf);
}

static bool name_is(const uint32_t *cs, size_t n, const char *name)
{
  if (strlen(name) != n) return false;
  for (size_t i = 0; i < n; i++)
    if (jt_char_downcase(cs[i]) != jt_char_downcase((unsigned char)name[i])) return false;
  return true;
}

bool jt_char_by_name(const uint32_t *cs, size_t n, uint32_t *code)
{
  for (uint32_t c = 0; c <= 32; c++)
    if (name_is(cs, n, control_names[c])) { *code = c; return true; }
  for (size_t i = 0; i < sizeof name_aliases / sizeof name_aliases[0]; i++)
    if (name_is(cs, n, name_aliases[i].name)) { *code = name_aliases[i].code; return true; }
  for (uint32_t c = 33; c < 127; c++)
    if (name_is(cs, n, ascii_names[c - 33])) { *code = c; return true; }
  /* U<hex> or U+<hex> */
  size_t i = 1;
  if (n < 2 || (cs[0] | 32) != 'u') return false;
  if (cs[1] == '+') i = 2;
  if (i == n || n - i > 6) return false;
  uint32_t v = 0;
  for (; i < n; i++) {
    uint32_t w = digit_weight(cs[i]);
    if (w >= 16) return false;
    v = v * 16 + w;
  }
  if (v >= JT_CHAR_LIMIT) return false;
  *code = v;
  return true;
}

/* (name-char name) => character or NIL; names are case-insensitive. */
JT_FN(f_name_char)
{
  jt_V str = jt_string_designator(S, argv[0]);
  uint32_t c;
  return jt_char_by_name(chars_of(str), len_of(str), &c) ? jt_mkchar(c) : JT_NIL;
}

static uint32_t check_radix(jt_State *S, int argc, jt_V *argv, int i)
{
  if (argc <= i) return 10;
  jt_V r = argv[i];
  if (!jt_isfix(r) || jt_fixval(r) < 2 || jt_fixval(r) > 36)
    jt_type_error(S, r, index_type(S, 2, 36));
  return (uint32_t)jt_fixval(r);
}

/* (digit-char-p char &optional radix) => weight or NIL */
JT_FN(f_digit_char_p)
{
  uint32_t c = jt_check_char(S, argv[0]);
  uint32_t radix = check_radix(S, argc, argv, 1);
  uint32_t w = digit_weight(c);
  return w < radix ? jt_mkfix(w) : JT_NIL;
}

/* (digit-char weight &optional radix) => upper-case digit character or NIL */
JT_FN(f_digit_char)
{
  jt_V w = argv[0];
  uint32_t radix = check_radix(S, argc, argv, 1);
  if (!jt_isinteger(w) || jt_num_cmp(S, w, jt_mkfix(0)) < 0)
    jt_type_error(S, w, JT_SYM(S, UNSIGNED_BYTE));
  if (!jt_isfix(w) || (uint64_t)jt_fixval(w) >= radix) return JT_NIL;
  intptr_t n = jt_fixval(w);
  return jt_mkchar(n < 10 ? '0' + n : 'A' + n - 10);
}

JT_FN(f_alpha_char_p)   { return jt_bool(is_alpha(jt_check_char(S, argv[0]))); }
JT_FN(f_alphanumericp)  { return jt_bool(is_alnum(jt_check_char(S, argv[0]))); }
JT_FN(f_upper_case_p)   { return jt_bool(is_upper(jt_check_char(S, argv[0]))); }
JT_FN(f_lower_case_p)   { return jt_bool(is_lower(jt_check_char(S, argv[0]))); }
JT_FN(f_graphic_char_p) { return jt_bool(is_graphic(jt_check_char(S, argv[0]))); }

JT_FN(f_both_case_p)
{
  uint32_t c = jt_check_char(S, argv[0]);
  return jt_bool(is_upper(c) || is_lower(c));
}

JT_FN(f_standard_char_p)
{
  uint32_t c = jt_check_char(S, argv[0]);
  return jt_bool(c == '\n' || (c >= 32 && c <= 126));
}

/* --------------------------------------------------------------- strings */

JT_FN(f_stringp) { return jt_bool(jt_stringp(argv[0])); }

JT_FN(f_simple_string_p)
{
  return jt_bool(jt_isstring(argv[0]) && jt_simple_array_p(argv[0]));
}

/* A displaced string (an array header of characters): char and the
** destructive functions reach its elements through the header. */
static bool displaced_string(jt_V v) { return jt_is(v, JT_TARRAY) && jt_stringp(v); }

/* An index of char and schar: below the total size, whatever the fill
** pointer says. */
static size_t header_index(jt_State *S, jt_V str, jt_V iv)
{
  size_t n = jt_array_total(str);
  if (!jt_isfix(iv) || jt_fixval(iv) < 0 || (size_t)jt_fixval(iv) >= n)
    jt_index_error(S, str, iv, n, JT_INDEX_AREF);
  return (size_t)jt_fixval(iv);
}

/* (char string index); schar is the same here: simple strings need no
** special path.  Both ignore a fill pointer. */
JT_FN(f_char)
{
  if (displaced_string(argv[0]))
    return jt_array_ref(S, argv[0], header_index(S, argv[0], argv[1]));
  jt_V str = jt_check_string(S, argv[0]);
  return jt_mkchar(chars_of(str)[header_index(S, str, argv[1])]);
}

/* (%set-char string index char) => char */
JT_FN(f_set_char)
{
  if (displaced_string(argv[0])) {
    jt_array_set(S, argv[0], header_index(S, argv[0], argv[1]), argv[2]);
    return argv[2];
  }
  jt_V str = jt_check_string(S, argv[0]);
  size_t i = header_index(S, str, argv[1]);
  uint32_t c = jt_check_char(S, argv[2]);
  JT_TOUCH(S, str);
  chars_of(str)[i] = c;
  return argv[2];
}

/* (make-string size &key initial-element element-type) */
JT_FN(f_make_string)
{
  static const int keys[] = {JT_S_K_INITIAL_ELEMENT, JT_S_K_ELEMENT_TYPE};
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 1, keys, 2, kv);
  size_t n = jt_check_index(S, argv[0]);
  uint32_t fill = kv[0] == JT_NOVALUE ? 0 : jt_check_char(S, kv[0]);
  if (kv[1] != JT_NOVALUE) {
    /* any name of a character type will do; all strings hold characters */
    jt_V et = kv[1];
    if (et != JT_SYM(S, CHARACTER) && et != JT_SYM(S, STANDARD_CHAR)
        && et != jt_intern(S, "BASE-CHAR") && et != jt_intern(S, "EXTENDED-CHAR"))
      jt_type_error(S, et, jt_list(S, 5, JT_SYM(S, MEMBER), JT_SYM(S, CHARACTER),
                                   jt_intern(S, "BASE-CHAR"),
                                   JT_SYM(S, STANDARD_CHAR),
                                   jt_intern(S, "EXTENDED-CHAR")));
  }
  return jt_make_string(S, n, fill);
}

/* (string designator) */
JT_FN(f_string) { return jt_string_designator(S, argv[0]); }

/* Case conversion of chars[start..end): upcase, downcase or capitalize.
** Capitalisation treats the region alone: a word is a maximal run of
** alphanumeric characters, and the region's first character starts one. */
enum { CASE_UP, CASE_DOWN, CASE_CAP };

static void convert_case(uint32_t *cs, size_t start, size_t end, int mode)
{
  bool in_word = false;
  for (size_t i = start; i < end; i++) {
    uint32_t c = cs[i], r;
    if (mode == CASE_UP) r = jt_char_upcase(c);
    else if (mode == CASE_DOWN) r = jt_char_downcase(c);
    else if (is_alnum(c)) { r = in_word ? jt_char_downcase(c) : jt_char_upcase(c); in_word = true; }
    else { r = c; in_word = false; }
    if (r != c) cs[i] = r;  /* barrier: raw char write */
  }
}

static const int bound_keys[] = {JT_S_K_START, JT_S_K_END};

/* (string-upcase designator &key start end) and friends: a fresh string */
static jt_V case_copy(jt_State *S, int argc, jt_V *argv, int mode)
{
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 1, bound_keys, 2, kv);
  jt_V src = jt_string_designator(S, argv[0]);
  size_t start, end;
  get_bounds(S, kv[0], kv[1], len_of(src), &start, &end);
  jt_V r = copy_string(S, src, 0, len_of(src));
  convert_case(chars_of(r), start, end, mode);
  return r;
}

/* (nstring-upcase string &key start end) and friends: in place */
static jt_V case_inplace(jt_State *S, int argc, jt_V *argv, int mode)
{
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 1, bound_keys, 2, kv);
  jt_V str = jt_check_string(S, argv[0]);
  size_t start, end;
  get_bounds(S, kv[0], kv[1], len_of(str), &start, &end);
  JT_TOUCH(S, str);
  convert_case(chars_of(str), start, end, mode);
  if (str != argv[0]) {
    /* a displaced string: convert its copy, then write the copy back */
    JT_PUSH(S, str);
    for (size_t i = start; i < end; i++)
      jt_array_set(S, argv[0], i, jt_mkchar(chars_of(str)[i]));
    JT_POP(S, 1);
    return argv[0];
  }
  return str;
}

JT_FN(f_string_upcase)      { return case_copy(S, argc, argv, CASE_UP); }
JT_FN(f_string_downcase)    { return case_copy(S, argc, argv, CASE_DOWN); }
JT_FN(f_string_capitalize)  { return case_copy(S, argc, argv, CASE_CAP); }
JT_FN(f_nstring_upcase)     { return case_inplace(S, argc, argv, CASE_UP); }
JT_FN(f_nstring_downcase)   { return case_inplace(S, argc, argv, CASE_DOWN); }
JT_FN(f_nstring_capitalize) { return case_inplace(S, argc, argv, CASE_CAP); }

/* Is c in the character bag (a list, string or vector of characters)?
** Elements that are not characters simply never match. */
static bool bag_has(jt_V bag, uint32_t c)
{
  if (jt_isstring(bag)) {
    for (size_t i = 0; i < len_of(bag); i++)
      if (chars_of(bag)[i] == c) return true;
  } else if (jt_isvector(bag)) {
    jt_Vector *v = jt_vec_(bag);
    for (size_t i = 0; i < v->len; i++)
      if (v->items[i] == jt_mkchar(c)) return true;
  } else {
    for (; jt_iscons(bag); bag = jt_cdr(bag))
      if (jt_car(bag) == jt_mkchar(c)) return true;
  }
  return false;
}

enum { TRIM_LEFT = 1, TRIM_RIGHT = 2 };

/* (string-trim char-bag designator) and the one-sided variants */
static jt_V trim(jt_State *S, jt_V bag, jt_V desig, int sides)
{
  if (jt_islist(bag)) jt_list_length(S, bag);  /* rejects dotted and circular */
  else if (!jt_isstring(bag) && !jt_isvector(bag))
    jt_type_error(S, bag, JT_SYM(S, SEQUENCE));
  jt_V str = jt_string_designator(S, desig);
  size_t start = 0, end = len_of(str);
  if (sides & TRIM_LEFT)
    while (start < end && bag_has(bag, chars_of(str)[start])) start++;
  if (sides & TRIM_RIGHT)
    while (end > start && bag_has(bag, chars_of(str)[end - 1])) end--;
  return copy_string(S, str, start, end);
}

JT_FN(f_string_trim)       { return trim(S, argv[0], argv[1], TRIM_LEFT | TRIM_RIGHT); }
JT_FN(f_string_left_trim)  { return trim(S, argv[0], argv[1], TRIM_LEFT); }
JT_FN(f_string_right_trim) { return trim(S, argv[0], argv[1], TRIM_RIGHT); }

/* The string comparisons: (string< s1 s2 &key start1 end1 start2 end2).
** string= and string-equal return a boolean; the others return the index in
** s1 of the first mismatch (or end1 when the regions are equal) when the
** relation holds, else NIL. */
static jt_V string_compare(jt_State *S, int argc, jt_V *argv, int op, bool fold)
{
  static const int keys[] = {JT_S_K_START1, JT_S_K_END1, JT_S_K_START2, JT_S_K_END2};
  jt_V kv[4];
  jt_parse_keys(S, argc, argv, 2, keys, 4, kv);
  jt_V s1 = jt_string_designator(S, argv[0]);
  JT_ROOT(S, s1);  /* a character designator for s2 allocates */
  jt_V s2 = jt_string_designator(S, argv[1]);
  JT_ROOT(S, s2);
  size_t b1, e1, b2, e2;
  get_bounds(S, kv[0], kv[1], len_of(s1), &b1, &e1);
  get_bounds(S, kv[2], kv[3], len_of(s2), &b2, &e2);
  JT_UNROOT(S, 2);
  /* nothing below allocates */
  const uint32_t *c1 = chars_of(s1) + b1, *c2 = chars_of(s2) + b2;
  size_t n1 = e1 - b1, n2 = e2 - b2, k = 0;
  int cmp = 0;
  for (;; k++) {
    if (k == n1 || k == n2) {
      cmp = k == n1 ? (k == n2 ? 0 : -1) : 1;
      break;
    }
    uint32_t a = fold ? jt_char_downcase(c1[k]) : c1[k];
    uint32_t b = fold ? jt_char_downcase(c2[k]) : c2[k];
    if (a != b) { cmp = a < b ? -1 : 1; break; }
  }
  bool holds;
  switch (op) {
  case CMP_EQ: return jt_bool(cmp == 0);
  case CMP_NE: holds = cmp != 0; break;
  case CMP_LT: holds = cmp < 0; break;
  case CMP_GT: holds = cmp > 0; break;
  case CMP_LE: holds = cmp <= 0; break;
  default:     holds = cmp >= 0; break;
  }
  return holds ? jt_mkfix(b1 + k) : JT_NIL;
}

JT_FN(f_string_eq) { return string_compare(S, argc, argv, CMP_EQ, false); }
JT_FN(f_string_ne) { return string_compare(S, argc, argv, CMP_NE, false); }
JT_FN(f_string_lt) { return string_compare(S, argc, argv, CMP_LT, false); }
JT_FN(f_string_gt) { return string_compare(S, argc, argv, CMP_GT, false); }
JT_FN(f_string_le) { return string_compare(S, argc, argv, CMP_LE, false); }
JT_FN(f_string_ge) { return string_compare(S, argc, argv, CMP_GE, false); }
JT_FN(f_string_equal)         { return string_compare(S, argc, argv, CMP_EQ, true); }
JT_FN(f_string_not_equal)     { return string_compare(S, argc, argv, CMP_NE, true); }
JT_FN(f_string_lessp)         { return string_compare(S, argc, argv, CMP_LT, true); }
JT_FN(f_string_greaterp)      { return string_compare(S, argc, argv, CMP_GT, true); }
JT_FN(f_string_not_greaterp)  { return string_compare(S, argc, argv, CMP_LE, true); }
JT_FN(f_string_not_lessp)     { return string_compare(S, argc, argv, CMP_GE, true); }

/* ---------------------------------------------------------- registration */

#define CHARCMP(name, fn, what) \
  {name, fn, 1, -1, "(" name " char &rest chars) True if the characters " what "."}
#define STRCMP(name, fn, what) \
  {name, fn, 2, -1, "(" name " string1 string2 &key start1 end1 start2 end2) " what}

static const jt_Reg str_fns[] = {
  {"CHARACTERP", f_characterp, 1, 1, "(characterp object) True if OBJECT is a character."},
  CHARCMP("CHAR=", f_char_eq, "are all the same"),
  CHARCMP("CHAR/=", f_char_ne, "are all different"),
  CHARCMP("CHAR<", f_char_lt, "are in increasing order"),
  CHARCMP("CHAR>", f_char_gt, "are in decreasing order"),
  CHARCMP("CHAR<=", f_char_le, "are in non-decreasing order"),
  CHARCMP("CHAR>=", f_char_ge, "are in non-increasing order"),
  CHARCMP("CHAR-EQUAL", f_char_equal, "are all the same, ignoring case"),
  CHARCMP("CHAR-NOT-EQUAL", f_char_not_equal, "are all different, ignoring case"),
  CHARCMP("CHAR-LESSP", f_char_lessp, "increase, ignoring case"),
  CHARCMP("CHAR-GREATERP", f_char_greaterp, "decrease, ignoring case"),
  CHARCMP("CHAR-NOT-GREATERP", f_char_not_greaterp, "do not decrease, ignoring case"),
  CHARCMP("CHAR-NOT-LESSP", f_char_not_lessp, "do not increase, ignoring case"),
  {"CHAR-UPCASE", f_char_upcase, 1, 1, "(char-upcase char) Return the upper-case CHAR."},
  {"CHAR-DOWNCASE", f_char_downcase, 1, 1, "(char-downcase char) Return the lower-case CHAR."},
  {"CHAR-CODE", f_char_code, 1, 1, "(char-code char) Return the code point of CHAR."},
  {"CHAR-INT", f_char_code, 1, 1, "(char-int char) Return the code point of CHAR."},
  {"CODE-CHAR", f_code_char, 1, 1, "(code-char code) Return the character with code point CODE."},
  {"CHAR-NAME", f_char_name, 1, 1, "(char-name char) Return the name of CHAR, or NIL."},
  {"NAME-CHAR", f_name_char, 1, 1, "(name-char name) Return the character named NAME, or NIL."},
  {"DIGIT-CHAR-P", f_digit_char_p, 1, 2,
   "(digit-char-p char &optional radix) Return the weight of CHAR as a digit, or NIL."},
  {"DIGIT-CHAR", f_digit_char, 1, 2,
   "(digit-char weight &optional radix) Return the digit character of WEIGHT, or NIL."},
  {"ALPHA-CHAR-P", f_alpha_char_p, 1, 1, "(alpha-char-p char) True if CHAR is a letter."},
  {"ALPHANUMERICP", f_alphanumericp, 1, 1,
   "(alphanumericp char) True if CHAR is a letter or a digit."},
  {"UPPER-CASE-P", f_upper_case_p, 1, 1, "(upper-case-p char) True if CHAR is upper case."},
  {"LOWER-CASE-P", f_lower_case_p, 1, 1, "(lower-case-p char) True if CHAR is lower case."},
  {"BOTH-CASE-P", f_both_case_p, 1, 1, "(both-case-p char) True if CHAR has case."},
  {"GRAPHIC-CHAR-P", f_graphic_char_p, 1, 1,
   "(graphic-char-p char) True if CHAR is printed as itself."},
  {"STANDARD-CHAR-P", f_standard_char_p, 1, 1,
   "(standard-char-p char) True if CHAR is one of the 96 standard characters."},
  {"STRINGP", f_stringp, 1, 1, "(stringp object) True if OBJECT is a string."},
  {"SIMPLE-STRING-P", f_simple_string_p, 1, 1,
   "(simple-string-p object) True if OBJECT is a string with neither fill pointer "
   "nor adjustability."},
  {"CHAR", f_char, 2, 2, "(char string index) Return the character at INDEX."},
  {"SCHAR", f_char, 2, 2, "(schar string index) Return the character at INDEX."},
  {"%SET-CHAR", f_set_char, 3, 3,
   "(%set-char string index char) Store CHAR at INDEX; the setf of char."},
  {"%SET-SCHAR", f_set_char, 3, 3,
   "(%set-schar string index char) Store CHAR at INDEX; the setf of schar."},
  {"MAKE-STRING", f_make_string, 1, -1,
   "(make-string size &key initial-element element-type) Return a new string."},
  {"STRING", f_string, 1, 1,
   "(string designator) Return the string a string, symbol or character designates."},
  {"STRING-UPCASE", f_string_upcase, 1, -1,
   "(string-upcase string &key start end) Return a copy with the region upper-cased."},
  {"STRING-DOWNCASE", f_string_downcase, 1, -1,
   "(string-downcase string &key start end) Return a copy with the region lower-cased."},
  {"STRING-CAPITALIZE", f_string_capitalize, 1, -1,
   "(string-capitalize string &key start end) Return a copy with each word of the "
   "region capitalized."},
  {"NSTRING-UPCASE", f_nstring_upcase, 1, -1,
   "(nstring-upcase string &key start end) Upper-case the region in place."},
  {"NSTRING-DOWNCASE", f_nstring_downcase, 1, -1,
   "(nstring-downcase string &key start end) Lower-case the region in place."},
  {"NSTRING-CAPITALIZE", f_nstring_capitalize, 1, -1,
   "(nstring-capitalize string &key start end) Capitalize the region's words in place."},
  {"STRING-TRIM", f_string_trim, 2, 2,
   "(string-trim char-bag string) Return STRING without the bag's characters at "
   "either end."},
  {"STRING-LEFT-TRIM", f_string_left_trim, 2, 2,
   "(string-left-trim char-bag string) Return STRING without the bag's leading "
   "characters."},
  {"STRING-RIGHT-TRIM", f_string_right_trim, 2, 2,
   "(string-right-trim char-bag string) Return STRING without the bag's trailing "
   "characters."},
  STRCMP("STRING=", f_string_eq, "True if the regions are the same."),
  STRCMP("STRING/=", f_string_ne, "Mismatch index if the regions differ, else NIL."),
  STRCMP("STRING<", f_string_lt, "Mismatch index if region 1 sorts first, else NIL."),
  STRCMP("STRING>", f_string_gt, "Mismatch index if region 1 sorts last, else NIL."),
  STRCMP("STRING<=", f_string_le, "Mismatch index unless region 1 sorts last, else NIL."),
  STRCMP("STRING>=", f_string_ge, "Mismatch index unless region 1 sorts first, else NIL."),
  STRCMP("STRING-EQUAL", f_string_equal, "True if the regions are the same, ignoring case."),
  STRCMP("STRING-NOT-EQUAL", f_string_not_equal,
         "Mismatch index if the regions differ ignoring case, else NIL."),
  STRCMP("STRING-LESSP", f_string_lessp,
         "Mismatch index if region 1 sorts first ignoring case, else NIL."),
  STRCMP("STRING-GREATERP", f_string_greaterp,
         "Mismatch index if region 1 sorts last ignoring case, else NIL."),
  STRCMP("STRING-NOT-GREATERP", f_string_not_greaterp,
         "Mismatch index unless region 1 sorts last ignoring case, else NIL."),
  STRCMP("STRING-NOT-LESSP", f_string_not_lessp,
         "Mismatch index unless region 1 sorts first ignoring case, else NIL."),
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_str(jt_State *S)
{
  jt_register(S, str_fns);
  jt_defglobal(S, "CHAR-CODE-LIMIT", jt_mkfix(JT_CHAR_LIMIT));
  jt_symobj(S, jt_intern(S, "CHAR-CODE-LIMIT"))->h.flags |= JT_SYM_CONSTANT | JT_SYM_LOCKED;
}
