/*
** jtext.h — JSON text to and from jansson values, fast, for the hot paths:
** the kernel<->worker frames, the store's events, the kernel's replies.
**
** jansson spends microseconds on an object of a few members (a callback
** per character or token, a growing buffer, printf for every integer), and
** a writing call crosses JSON several times.  These functions give the
** same results as jansson — byte for byte when writing, value for value
** when reading — for the JSON those paths carry, and hand everything else
** to jansson itself, so that a caller never sees a difference but speed.
*/
#ifndef jtext_h
#define jtext_h

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* UTF-8 as JSON requires it, the one check of it in jiti (the store's
** names, the protocol's lines, the worker's stderr): well-formed, no
** overlong forms, no surrogates, nothing past U+10FFFF.  _next: the code
** point of the sequence at s (n > 0 bytes left) and its length in *len, or
** -1 when it is not well-formed (or cut short); _valid: 1 when all of
** s[0..n) is. */
long jtext_utf8_next(const unsigned char *s, size_t n, size_t *len);
int jtext_utf8_valid(const char *s, size_t n);

/* Append the compact JSON text of v to *buf (*len bytes used of *cap;
** *buf may be NULL and is realloc'd as needed; no NUL is added): the bytes
** json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes, with ascii also
** JSON_ENSURE_ASCII.  Returns 0, or -1 when json_dumps would fail (a
** string that is not UTF-8, a cycle) or memory ran out; *len is then
** unchanged. */
int jtext_append(json_t *v, int ascii, char **buf, size_t *len, size_t *cap);

/* Writing JSON text straight from C values, member by member, for a frame
** built on a hot path (no jansson values made and freed): the bytes
** jtext_append writes for the same values built with jansson (compact,
** members in the order written) — except that a string that is not UTF-8
** is written with U+FFFD in place of each byte that does not belong, where
** jansson refuses the string.  Start from a zeroed writer (or jtext_reset,
** which keeps the buffer); calls append to buf[0..len).  Out of memory, or
** nesting deeper than 64, sets failed (the text is then not to be used).
** The caller frees buf.  With ascii set, strings are escaped to ASCII, as
** jtext_append's ascii (JSON_ENSURE_ASCII) writes them: the store's
** events. */
typedef struct jtext_writer {
  char *buf;
  size_t len, cap;
  int failed;
  int ascii;          /* the caller's: strings escaped to ASCII */
  unsigned nest;      /* open objects and arrays */
  int after_key;      /* a key was written: its value comes next */
  uint64_t more;      /* bit k: nesting level k+1 has an item already */
} jtext_writer;

void jtext_reset(jtext_writer *w);
void jtext_begin(jtext_writer *w, char open);   /* '{' or '[' */
void jtext_end(jtext_writer *w, char close);    /* '}' or ']' */
void jtext_key(jtext_writer *w, const char *key);  /* a member's name (UTF-8) */
void jtext_string(jtext_writer *w, const char *s, size_t n);  /* NULL: "" */
void jtext_int(jtext_writer *w, json_int_t v);
void jtext_bool(jtext_writer *w, int v);
void jtext_json(jtext_writer *w, json_t *v);  /* a jansson value, as jtext_append writes it */

/* The object whose members are the JSON text s[0..n) (`"a":1,"b":2`, no
** braces), read as jtext_load reads "{" s "}"; NULL when out of memory or
** the text is not JSON members (err, may be NULL, says why). */
json_t *jtext_load_members(const char *s, size_t n, size_t flags, json_error_t *err);

/* The value of the JSON text s[0..n) as json_loadb(s, n, flags, err) reads
** it (an object or an array, nothing after it but white space); flags 0 or
** JSON_REJECT_DUPLICATES.  What this reader does not take itself (a real
** number, a value nested deeper than 512, a key given twice, other flags,
** any error) goes to json_loadb, whose value or error (in err, may be
** NULL) it returns. */
json_t *jtext_load(const char *s, size_t n, size_t flags, json_error_t *err);

#endif
