/*
** jt_world.h — internal interface of the world layer (world.c, export.c,
** defs.c, describe.c, reimport.c): entries, the registry, the data table,
** the canonical encoding.  The checkpoints it stands on are ckpt.c's
** (jt_ckpt.h), which the modules with C-side tables call directly.
*/
#ifndef jt_world_h
#define jt_world_h

#include "jt_lib.h"
#include "jt_ckpt.h"
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
** without running the program's print-object methods; a package that does
** not exist is made (empty), so that names in it can be printed. */
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

/* A walk's set of objects already visited: an EQ table of scratch (the
** checkpoint never copies it, so filling it is no change of the world),
** made at the first visit in *seen, which starts as JT_NIL and which the
** caller roots.  True the first time v is offered (v is remembered). */
bool jt_world_first_visit(jt_State *S, jt_V *seen, jt_V v);

/* source.c: a definition's source as written.  jt_source_record makes
** the world's record of it (with `digest`: the canonical encoding's it was
** written for, or NIL); jt_source_of_record reads one back (pointing into
** it: valid while it is alive); jt_source_digest: an encoding's digest, as
** a fixnum; jt_source_prefix: the prefix an entry's bytes carry it in. */
jt_V jt_source_record(jt_State *S, const jiti_EntrySource *src, jt_V digest);
void jt_source_of_record(jt_V rec, jiti_EntrySource *src);
jt_V jt_source_record_digest(jt_V rec);
/* Whether rec holds src's text and file (its line and column aside). */
bool jt_source_same_text(jt_V rec, const jiti_EntrySource *src);
jt_V jt_source_digest(const unsigned char *p, size_t n);
void jt_source_prefix(const jiti_EntrySource *src, jt_Buf *out);

void jt_open_world(jt_State *S);

/* The world's current package (its entry *PACKAGE*, else
** COMMON-LISP-USER). */
jt_V jt_world_current_package(jt_State *S);

/* A class was redefined: update the instances reachable from the world's
** managed state now (see world.c). */
void jt_world_update_instances(jt_State *S);

/* Whether the world records an entry (kind, name). */
bool jt_world_has_entry(jt_State *S, int kind, jt_V name);

/* defs.c: the entries kept as a symbol's kernel properties and the like —
** types, symbol macros, setf expanders, compiler macros, documentation,
** property lists — and a DEFINE-MODIFY-MACRO's macro entry.
** jt_defs_imports: whether an entry of `kind` holding `form` is imported by
** jt_defs_import (which evaluates the kernel's own defining macro on the
** form, or for documentation and property lists applies it without
** evaluating anything); jt_defs_form_ok: whether `form` is what such an
** entry named `name` must hold (checked before anything runs). */
bool jt_defs_imports(jt_State *S, int kind, jt_V form);
bool jt_defs_form_ok(jt_State *S, int kind, jt_V name, jt_V form);
void jt_defs_import(jt_State *S, int kind, jt_V name, jt_V form);
/* Whether jt_defs_import is making a definition now: the functions the
** definition makes are then left unanalysed, as imported functions are. */
bool jt_world_importing(jt_State *S);
/* Tell the world that the entry (kind, name) is now made by `form`, or
** is gone (form NIL). */
void jt_defs_record(jt_State *S, int kind, jt_V name, jt_V form);
/* (SETF (SYMBOL-PLIST 'sym) 'plist): the form a plist entry is exported as. */
jt_V jt_defs_plist_form(jt_State *S, jt_V sym);

/* The world's own parts, for reimport.c and package.c: whether it records
** entries; the registry ((kind . name) -> source) and the data table (key
** -> (seq . value)); an entry's name read as the import reads it; the
** import's check that a form is the defining form of its entry's name; a
** call that turns a signalled error into a status and a message. */
bool jt_world_recording(jt_State *S);   /* jiti_world_enable was called */
jt_V jt_world_registry(jt_State *S);
jt_V jt_world_data(jt_State *S);
/* The file table: a managed EQUAL hash, namestring -> #(octets write-date)
** (fstream.c reads and writes it; export and import keep it as file
** entries). */
jt_V jt_world_files(jt_State *S);
jt_V jt_world_read_name(jt_State *S, const char *name);
bool jt_world_entry_form_ok(jt_State *S, jiti_EntryKind kind, jt_V name, jt_V form);
jiti_Status jt_world_guarded(jt_State *S, jiti_Status (*fn)(jt_State *, void *), void *ud, char *err,
                             size_t errlen);

/* reimport.c: the first entry of managed state — a name, a source form,
** the value of a variable or of a :class slot, a data row's key or value
** — inside which `hit` returns true for some object (it is called on
** every symbol, structure and instance in them, each shared object once),
** as text ("function APP::RUN", "data :ORDERS"; malloc'd), or NULL when
** there is none; with names_only, in the entries' names alone (data rows:
** their keys).  It reads all of managed state: for changes that are rare
** and would otherwise leave stored entries unreadable or renamed (a
** package deleted, a name uninterned, a structure redefined under its
** stored instances, a change of what COMMON-LISP-USER sees). */
typedef bool (*jt_MentionFn)(jt_State *S, jt_V obj, void *ud);
char *jt_world_mentions(jt_State *S, jt_MentionFn hit, void *ud, bool names_only);

/* callnote.c: jiti_form_eval_noting's watch on its form's call
** (jt_CallWatch.seen, ud a jt_CallNoting): a call of a world function is
** noted — its entry name, its arguments' classes — within max bytes each. */
typedef struct jt_CallNoting { jiti_CallNote *note; size_t max; } jt_CallNoting;
void jt_call_note_seen(jt_State *S, void *ud, jt_V name, int argc, const jt_V *argv);

/* reads.c: what an application call read (jiti_reads_begin).  The read
** sites call jt_reads_note only while S->reads_on: one test of a flag
** when nobody records.  kind is a jiti_ReadKind; a is the variable's
** symbol, the instance or structure, or the row's key; b the slot's name
** (NIL otherwise); v the value read. */
void jt_reads_note(jt_State *S, int kind, jt_V a, jt_V b, jt_V v);
void jt_reads_mark(jt_State *S);   /* the collector's: what was noted */
void jt_reads_close(jt_State *S);  /* at jiti_close */
/* A read already kept (or known not to be the world's) is found in a
** small direct-mapped filter of the state, without a call: a loop reading
** the same slots pays a comparison per read. */
#define JT_READ_SLOT(a, b) ((((uintptr_t)(a) >> 3) ^ ((uintptr_t)(b) >> 2)) & 15)
#define JT_READ(S, kind, a, b, v)                                                    \
  do {                                                                             \
    if (__builtin_expect((S)->reads_on, 0)) {                                      \
      const struct jt_ReadSeen *seen_ = &(S)->reads_seen[JT_READ_SLOT(a, b)];      \
      if (seen_->obj != (a) || seen_->key != (b) || seen_->what != (kind)) jt_reads_note(S, kind, a, b, v); \
    }                                                                              \
  } while (0)

#endif
