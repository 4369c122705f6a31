/*
** jt_world.h — internal interface of the world layer (world.c, export.c).
*/
#ifndef jt_world_h
#define jt_world_h

#include "jt_lib.h"
#include "jiti_world.h"

/* Canonical encoding (export.c).  jt_encode appends to `out`; on failure
** returns false with *why describing the unexportable part.  jt_decode
** signals an error on malformed bytes. */
bool jt_encode(jt_State *S, jt_V v, jt_Buf *out, const char **why);
/* JT_LIMIT_FUEL or JT_LIMIT_HEAP when jt_encode stopped because that
** budget ran out (the caller frees what it holds, then signals it), else -1. */
int jt_encode_limit(const char *why);
jt_V jt_decode(jt_State *S, const unsigned char *bytes, size_t len);
/* Unsigned LEB128, as the encoding writes counts and lengths: append v; read
** one at *pos (advancing it; UINT64_MAX when malformed or truncated). */
void jt_put_uleb(jt_Buf *b, uint64_t v);
uint64_t jt_get_uleb(const unsigned char *p, size_t n, size_t *pos);
/* Decode one value starting at *pos, advancing it. */
jt_V jt_decode_at(jt_State *S, const unsigned char *bytes, size_t len, size_t *pos);
/* The same for reading (show, diff, views): structures and instances
** decode as stand-ins that print without their type being defined and
** without running the program's print-object methods. */
jt_V jt_decode_text(jt_State *S, const unsigned char *bytes, size_t len);
jt_V jt_decode_text_at(jt_State *S, const unsigned char *bytes, size_t len, size_t *pos);

/* describe.c: the entry encoded in bytes as text, laid out in lines of at
** most width characters (0: one line); name: the entry's name, which a
** variable's form needs (NULL: a variable shows its value alone).  Signals
** on a malformed encoding; *scratch (set first) must be released with
** jt_describe_free after the call, whether it returned or not. */
char *jt_describe(jt_State *S, const unsigned char *bytes, size_t len, const char *name, int width,
                  void **scratch);
void jt_describe_free(void *scratch);

/* Flag on a hash table that the world manages with operation logs (the data
** table, the entry registry): the object barrier leaves it alone. */
#define JT_HASH_MANAGED 0x8000

void jt_open_world(jt_State *S);

/* A class was redefined: update the instances reachable from the world's
** managed state now (see world.c). */
void jt_world_update_instances(jt_State *S);

#endif
