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
#include <jansson.h>

/* Append the compact JSON text of v to *buf (*len bytes used of *cap;
** *buf may be NULL and is realloc'd as needed; no NUL is added): the bytes
** json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes, with ascii also
** JSON_ENSURE_ASCII.  Returns 0, or -1 when json_dumps would fail (a
** string that is not UTF-8, a cycle) or memory ran out; *len is then
** unchanged. */
int jtext_append(json_t *v, int ascii, char **buf, size_t *len, size_t *cap);

/* Append the JSON text of the string s[0..n) (UTF-8; with ascii, escaped
** to ASCII), or of the integer v, as jtext_append would write them: for
** records written member by member in a hot path, without building a
** jansson value.  0, or -1 (s not UTF-8, out of memory: *len unchanged). */
int jtext_append_string(const char *s, size_t n, int ascii, char **buf, size_t *len, size_t *cap);
int jtext_append_int(long long v, char **buf, size_t *len, size_t *cap);

/* The value of the JSON text s[0..n) as json_loadb(s, n, flags, err) reads
** it (an object or an array, nothing after it but white space); flags 0 or
** JSON_REJECT_DUPLICATES.  What this reader does not take itself (a real
** number, a value nested deeper than 512, a key given twice, other flags,
** any error) goes to json_loadb, whose value or error (in err, may be
** NULL) it returns. */
json_t *jtext_load(const char *s, size_t n, size_t flags, json_error_t *err);

#endif
