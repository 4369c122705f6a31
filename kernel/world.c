/*
** world.c — checkpoints, the registry of managed entries, the data table and
** invariants (see docs/world.md).
**
** Checkpoint levels each hold (a) copies of the objects first touched at
** that level, taken by the write barrier, and (b) operation logs of the
** managed maps.  Restore puts copies back and replays logs backwards;
** commit drops the level or hands its records to the enclosing level.
*/
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
/* SHA256_Init/Update/Final: deprecated in OpenSSL 3 in favour of EVP, whose
** digest fetches its implementation by name on every init (that fetch was
** most of an entry's hashing, which every writing call does).  The
** one-shot SHA256() cannot take the hash's three parts. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include "jt_eval.h"
#include "jt_grow.h"
#include "jt_world.h"
#include "jt_ckpt.h"
#include "jt_clos.h"
#include "jt_ffi.h"
#include "jiti_limits.h"

typedef struct World {
  bool enabled;
  jt_V registry;    /* managed equal hash: (kind . name) -> source form or T */
  jt_V data;        /* managed equal hash: key -> (seq . value), the value a
                       private copy; seq orders the rows (below) */
  jt_V defining;    /* symbol %DEFINING-TYPE */
  int64_t next_seq; /* the seq of the next new row */
  jt_Buf copybuf;   /* world-put / world-get copies: the world's, so that an
                       error while decoding one leaks nothing */
  jt_V pending;     /* imported types waiting for a type they name: list of
                       (form . package it is evaluated in) */
  size_t package_mark;   /* binding depth below jiti_package_bind's binding */
  bool package_bound;
  bool importing;   /* jt_defs_import is making an entry's definition (defs.c
                       then leaves the functions it makes unanalysed) */
  jt_V sources;     /* managed equal hash: (kind . name) -> the definition's
                       source as written (source.c's record) */
  jt_V def_form;    /* while world_define runs: the defining form (compared
                       with the top-level form by identity only) */
  bool in_define;
  const jiti_EntrySource *import_src;   /* jiti_import_entry's entry carries one */
  int import_kind;
  jt_V import_digest;   /* of the canonical encoding it came with (a fixnum) */
  jt_V fresh;       /* variables given their text by the top-level form
                       running now: their value is taken when it returns */
  jt_V files;       /* managed equal hash: the file table (fstream.c),
                       namestring -> #(octets write-date) */
} World;

#define W(S) ((World *)(S)->world)

static const char *const kind_names[JITI_ENTRY_KIND_COUNT] = {
  "function", "macro", "variable", "structure", "data", "invariant",
  "class", "generic", "method", "foreign", "package", "type", "symbol-macro", "setf-expander",
  "compiler-macro", "documentation", "plist", "method-combination", "file"};

const char *jiti_entry_kind_name(jiti_EntryKind k) {
  return (unsigned)k < JITI_ENTRY_KIND_COUNT ? kind_names[k] : "?";
}

int jiti_entry_kind_parse(const char *name) {
  for (int i = 0; i < JITI_ENTRY_KIND_COUNT; i++)
    if (!strcmp(name, kind_names[i])) return i;
  return -1;
}

static void world_mark(jt_State *S, void *ud) {
  World *w = ud;
  jt_gc_mark(S, w->registry);
  jt_gc_mark(S, w->data);
  jt_gc_mark(S, w->defining);
  jt_gc_mark(S, w->pending);
  jt_gc_mark(S, w->sources);
  jt_gc_mark(S, w->import_digest);
  jt_gc_mark(S, w->fresh);
  jt_gc_mark(S, w->files);
}

/* A data row: (seq . value) under its key.  seq orders the rows as they
** were first put — world-keys returns them so, and export keeps it, so
** the order survives export and import (and a checkpoint's restore).  A
** key put again keeps its seq; a new key (seq < 0) gets the next one; an
** imported row brings its own. */
static void row_put(jt_State *S, jt_V key, jt_V val, int64_t seq) {
  World *w = W(S);
  JT_PUSH(S, key);
  JT_PUSH(S, val);
  if (seq < 0) {
    bool found;
    jt_V old = jt_hash_get(S, w->data, key, &found);
    seq = found ? jt_fixval(jt_car(old)) : w->next_seq;
  }
  if (seq >= w->next_seq) w->next_seq = seq + 1;
  jt_V cell = jt_cons(S, jt_mkfix(seq), S->sp[-1]);
  jt_ckpt_map_put(S, w->data, S->sp[-2], cell);
  JT_POP(S, 2);
}

/* ------------------------------------------------------------ checkpoints */

/* The levels themselves are ckpt.c's; the world adds its row counter (an
** undo record puts it back, so that a row's encoding does not depend on
** attempts that were undone) and drops the CLOS caches a restore makes
** stale. */
static void undo_next_seq(jt_State *S, jt_V a, jt_V b, uintptr_t c) {
  (void)a; (void)b;
  W(S)->next_seq = (int64_t)c;
}

int jiti_checkpoint(jiti_State *S) {
  int depth = jt_ckpt_open(S);
  jt_ckpt_log_undo(S, undo_next_seq, JT_NIL, JT_NIL, (uintptr_t)W(S)->next_seq);
  return depth;
}

int jiti_checkpoint_depth(jiti_State *S) { return jt_ckpt_depth(S); }

void jiti_restore(jiti_State *S) {
  if (jt_ckpt_depth(S) == 0) return;
  jt_ckpt_restore(S);
  jt_clos_changed(S);   /* CLOS caches filled since the checkpoint are stale */
}

void jiti_commit(jiti_State *S) { jt_ckpt_commit(S); }

void jiti_commit_outermost(jiti_State *S) { jt_ckpt_commit_outermost(S); }

/* ----------------------------------------------------------------- entries */

/* A special variable's global value: the value under its outermost
** dynamic binding when it is bound (jiti_package_bind, or a LET in the
** code). */
static jt_V global_value(jt_State *S, jt_V sym) {
  for (size_t i = 0; i < S->nbind; i++)
    if (S->bindings[i].sym == sym) return S->bindings[i].old;
  return jt_symobj(S, sym)->value;
}

static jt_V entry_key(jt_State *S, int kind, jt_V name) {
  return jt_cons(S, jt_mkfix(kind), name);
}

/* The kinds whose entries are definitions a program writes, and so may
** keep their source as written: not the data table, nor what is exported
** from the state of the moment (a package's symbols, a property list, a
** documentation string), nor an invariant (the operator's, by name). */
static bool written_kind(int kind) {
  switch (kind) {
    case JITI_ENTRY_DATA: case JITI_ENTRY_PACKAGE: case JITI_ENTRY_PLIST: case JITI_ENTRY_DOCUMENTATION:
    case JITI_ENTRY_INVARIANT:
      return false;
    default:
      return true;
  }
}

/* Whether the top-level form being evaluated is the definition of (kind,
** name) the world is told of: its defining form itself, or for a variable
** a DEFVAR, DEFPARAMETER or DEFCONSTANT of it (which tell the world of the
** name alone).  A definition inside another form (a PROGN, a macro's
** expansion) is not: its text would be another form's. */
static bool written_here(jt_State *S, int kind, jt_V name) {
  World *w = W(S);
  jt_V top = S->top_form;
  if (!w->in_define || S->src_canonical || top == JT_NIL || !jt_iscons(top)) return false;
  if (w->def_form == top) return true;
  if (kind != JITI_ENTRY_VARIABLE || !jt_iscons(jt_cdr(top)) || jt_car(jt_cdr(top)) != name) return false;
  jt_V head = jt_car(top);
  return head == jt_intern(S, "DEFVAR") || head == jt_intern(S, "DEFPARAMETER") ||
         head == jt_intern(S, "DEFCONSTANT");
}

/* key (rooted by the caller) was recorded: its source as written is the
** top-level form's text when that form is its definition, the imported
** entry's when an import made it, else it has none — a definition made
** another way replaces the text of the one before, unless it is the same
** definition again (same: its form is EQUAL to the one recorded), which
** keeps it. */
static void note_source(jt_State *S, int kind, jt_V key, bool same) {
  World *w = W(S);
  if (!written_kind(kind)) return;
  jt_V rec = JT_NIL;
  if (w->import_src) {
    if (kind == w->import_kind) rec = jt_source_record(S, w->import_src, w->import_digest);
  } else if (written_here(S, kind, jt_cdr(key))) {
    jiti_EntrySource src = {S->top_span.text, S->top_span.len,
                            S->src_is_file ? S->src_name : NULL, S->src_is_file ? strlen(S->src_name) : 0,
                            S->top_span.line, S->top_span.column};
    /* the same definition, written the same, only moved (a line added
    ** above it in its file): not a change — its place stays the first one
    ** (an editor finds the form near it by its text) */
    bool found;
    jt_V was = same ? jt_hash_get(S, w->sources, key, &found) : JT_NIL;
    if (same && found && jt_source_same_text(was, &src)) return;
    rec = jt_source_record(S, &src, JT_NIL);
  }
  if (rec == JT_NIL && same) return;   /* the same definition again: its text stays */
  if (rec != JT_NIL) {
    JT_PUSH(S, rec);
    jt_ckpt_map_put(S, w->sources, key, rec);
    if (kind == JITI_ENTRY_VARIABLE && !w->import_src) w->fresh = jt_cons(S, key, w->fresh);
    JT_POP(S, 1);
  } else {
    bool found;
    jt_hash_get(S, w->sources, key, &found);
    if (found) jt_ckpt_map_rem(S, w->sources, key);
  }
}

static void record(jt_State *S, int kind, jt_V name, jt_V source) {
  World *w = W(S);
  jt_V *base = S->sp;
  JT_PUSH(S, source);
  jt_V key = entry_key(S, kind, name);
  JT_PUSH(S, key);
  bool found;
  jt_V old = jt_hash_get(S, w->registry, key, &found);
  bool same = found && jt_equal(S, old, base[0]);
  jt_ckpt_map_put(S, w->registry, key, base[0]);
  note_source(S, kind, base[1], same);
  S->sp = base;
}

static void unrecord(jt_State *S, int kind, jt_V name) {
  World *w = W(S);
  jt_V key = entry_key(S, kind, name);
  JT_PUSH(S, key);
  jt_ckpt_map_rem(S, w->registry, key);
  bool found;
  jt_hash_get(S, w->sources, key, &found);
  if (found) jt_ckpt_map_rem(S, w->sources, S->sp[-1]);
  JT_POP(S, 1);
}

bool jt_world_has_entry(jt_State *S, int kind, jt_V name) {
  World *w = W(S);
  if (!w || !w->enabled) return false;
  jt_V key = entry_key(S, kind, name);
  bool found;
  jt_hash_get(S, w->registry, key, &found);
  return found;
}

/* Entries of a generic function that is going away (its name was
** fmakunbound or defined as an ordinary function): its defgeneric and the
** methods defmethod made. */
static void unrecord_generic(jt_State *S, jt_V name, jt_V gf) {
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  JT_PUSH(S, gf);
  unrecord(S, JITI_ENTRY_GENERIC, name);
  if (jt_is(gf, JT_TGENERIC))
    for (jt_V l = jt_gf_(gf)->methods; jt_iscons(l); l = jt_cdr(l)) {
      if (jt_method_(jt_car(l))->form == JT_NIL) continue;
      JT_PUSH(S, l);
      jt_V key = jt_method_key(S, jt_car(l));
      JT_PUSH(S, key);
      unrecord(S, JITI_ENTRY_METHOD, key);
      JT_POP(S, 1);
      l = S->sp[-1];
      JT_POP(S, 1);
    }
  S->sp = base;
}

/* True when a type's definition is installing the function `name`
** (JT_DEF_FUNCTION or _FUNCTION_SET: a symbol; JT_DEF_SETF_FUNCTION:
** (setf name)) as one of its own: %DEFINING-TYPE then holds the names the
** type defines (40-struct.lisp). */
static bool type_owns(jt_State *S, jt_V name, jt_DefKind kind) {
  for (jt_V l = jt_sym_(W(S)->defining)->value; jt_iscons(l); l = jt_cdr(l)) {
    jt_V n = jt_car(l);
    if (kind == JT_DEF_SETF_FUNCTION ? jt_iscons(n) && jt_iscons(jt_cdr(n)) && jt_car(jt_cdr(n)) == name : n == name) return true;
  }
  return false;
}

/* Hook from the modules (S->world_define; jt_DefKind in jt_state.h): the
** entries a definition records or removes.  A name's function cell holds
** one definition: whichever kind defines it replaces the entries of the
** others. */
static void world_define(jt_State *S, jt_V name, jt_DefKind kind, jt_V form, jt_V fn) {
  World *w = W(S);
  if (!w->enabled) return;
  if ((kind == JT_DEF_FUNCTION || kind == JT_DEF_SETF_FUNCTION || kind == JT_DEF_FUNCTION_SET) &&
      type_owns(S, name, kind)) {
    /* the type's entry rebuilds it: no entry of its own, nor a stale one */
    if (kind == JT_DEF_SETF_FUNCTION) {
      jt_V sname = jt_list(S, 2, JT_SYM(S, SETF), name);
      JT_PUSH(S, sname);
      unrecord(S, JITI_ENTRY_FUNCTION, sname);
      JT_POP(S, 1);
    } else {
      unrecord(S, JITI_ENTRY_FUNCTION, name);
      unrecord(S, JITI_ENTRY_MACRO, name);
      unrecord(S, JITI_ENTRY_FOREIGN, name);
    }
    return;
  }
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  JT_PUSH(S, fn);
  bool was_defining = w->in_define;
  jt_V was_form = w->def_form;
  w->in_define = true;
  w->def_form = form;
  switch (kind) {
    case JT_DEF_FUNCTION: case JT_DEF_MACRO: case JT_DEF_FUNCTION_SET: {
      jt_V src = base[0];
      if (kind == JT_DEF_FUNCTION_SET || (jt_is(base[1], JT_TCLOSURE) && jt_clo_(base[1])->env != JT_NIL)) {
        /* not reproducible from source: recorded so export can refuse it
        ** (one allocation at a time: an argument of jt_list is not rooted
        ** while the next one is being made) */
        jt_V why = jt_string_from_cstr(S, kind == JT_DEF_FUNCTION_SET ? "was set without a defining form"
                                                     : "is a closure over a lexical environment");
        JT_PUSH(S, why);
        jt_V tag = jt_intern_keyword(S, "UNEXPORTABLE");
        src = jt_list(S, 2, tag, base[2]);
      }
      JT_PUSH(S, src);  /* unrecord allocates */
      unrecord(S, kind == JT_DEF_MACRO ? JITI_ENTRY_FUNCTION : JITI_ENTRY_MACRO, name);
      unrecord(S, JITI_ENTRY_FOREIGN, name);
      record(S, kind == JT_DEF_MACRO ? JITI_ENTRY_MACRO : JITI_ENTRY_FUNCTION, name, src);
      break;
    }
    case JT_DEF_SETF_FUNCTION: {
      jt_V sname = jt_list(S, 2, JT_SYM(S, SETF), name);
      JT_PUSH(S, sname);
      record(S, JITI_ENTRY_FUNCTION, sname, base[0]);
      break;
    }
    case JT_DEF_VARIABLE: case JT_DEF_CONSTANT:
      record(S, JITI_ENTRY_VARIABLE, name, jt_bool(kind == JT_DEF_CONSTANT));
      break;
    /* a package (here `name`) was made or changed, or goes (renamed or
    ** deleted).  Its definition is taken from the package when exported. */
    case JT_DEF_PACKAGE: record(S, JITI_ENTRY_PACKAGE, jt_pkg_(name)->name, name); break;
    case JT_DEF_PACKAGE_GONE: unrecord(S, JITI_ENTRY_PACKAGE, jt_pkg_(name)->name); break;
    case JT_DEF_TYPE: {
      /* a structure's accessors and constructor are named in the current
      ** package: the entry keeps its name with the form when it is not
      ** COMMON-LISP-USER, where an import evaluates the form otherwise */
      jt_V cur = jt_symobj(S, JT_SYM(S, PACKAGE_VAR))->value;
      jt_V src = base[0];
      if (jt_is(cur, JT_TPACKAGE) && jt_pkg_(cur)->name != JT_NIL && cur != jt_package_of_index(S, JT_PKG_USER))
        src = jt_cons(S, jt_pkg_(cur)->name, src);
      JT_PUSH(S, src);
      record(S, JITI_ENTRY_STRUCTURE, name, src);
      break;
    }
    case JT_DEF_FUNCTION_REMOVED:
      unrecord(S, JITI_ENTRY_FUNCTION, name);
      unrecord(S, JITI_ENTRY_MACRO, name);
      unrecord(S, JITI_ENTRY_FOREIGN, name);
      break;
    case JT_DEF_FOREIGN:
      unrecord(S, JITI_ENTRY_FUNCTION, name);
      unrecord(S, JITI_ENTRY_MACRO, name);
      record(S, JITI_ENTRY_FOREIGN, name, base[0]);
      break;
    case JT_DEF_CLASS: record(S, JITI_ENTRY_CLASS, name, base[0]); break;
    case JT_DEF_GENERIC: record(S, JITI_ENTRY_GENERIC, name, base[0]); break;
    case JT_DEF_METHOD: record(S, JITI_ENTRY_METHOD, name, base[0]); break;
    case JT_DEF_METHOD_REMOVED: unrecord(S, JITI_ENTRY_METHOD, name); break;
    case JT_DEF_GENERIC_REMOVED: unrecord_generic(S, name, base[1]); break;
    case JT_DEF_ENTRY: case JT_DEF_ENTRY_GONE: {  /* the kinds defs.c records as they are given */
      intptr_t k = jt_isfix(base[1]) ? jt_fixval(base[1]) : -1;
      if (k < 0 || k >= JITI_ENTRY_KIND_COUNT) break;
      if (kind == JT_DEF_ENTRY) record(S, (int)k, name, base[0]);
      else unrecord(S, (int)k, name);
      break;
    }
    case JT_DEF_KIND_COUNT: break;
  }
  w->in_define = was_defining;
  w->def_form = was_form;
  S->sp = base;
}

/* Name of an entry as text: symbols print as their name, (setf f) as a
** list; data keys print readably. */
static char *entry_name(jt_State *S, jt_V name) {
  return jt_print_canonical(S, name, 4096);
}

/* depth: for a type, how many types it stands on (its :include chain, its
** parent conditions), so that a type is imported after those it names. */
typedef struct Item { int kind; int depth; char *name; jt_V key; } Item;

static int layout_depth(jt_V layout, int guard) {
  int d = 0;
  if (guard > 64) return d;
  for (jt_V p = jt_layout_(layout)->parents; jt_iscons(p); p = jt_cdr(p)) {
    int k = 1 + layout_depth(jt_car(p), guard + 1);
    if (k > d) d = k;
  }
  return d;
}

/* Export order is import order: types before the code and values that use
** them, macros before the functions whose bodies they expand in.  Foreign
** declarations stand on nothing; they come before the code that calls
** them.  A deftype's, a setf expander's or a compiler macro's function is
** analysed at its first call (defs.c, %definition-function), like a
** function's, so it may use anything imported after it.  Property lists
** hold values, as variables do. */
static const int import_rank[JITI_ENTRY_KIND_COUNT] = {
  [JITI_ENTRY_PACKAGE] = 0, [JITI_ENTRY_STRUCTURE] = 1, [JITI_ENTRY_CLASS] = 2, [JITI_ENTRY_FOREIGN] = 3,
  [JITI_ENTRY_MACRO] = 4, [JITI_ENTRY_SYMBOL_MACRO] = 5, [JITI_ENTRY_TYPE] = 6,
  [JITI_ENTRY_SETF_EXPANDER] = 7, [JITI_ENTRY_COMPILER_MACRO] = 8, [JITI_ENTRY_FUNCTION] = 9,
  [JITI_ENTRY_VARIABLE] = 10, [JITI_ENTRY_PLIST] = 11, [JITI_ENTRY_DOCUMENTATION] = 12,
  [JITI_ENTRY_METHOD_COMBINATION] = 13, [JITI_ENTRY_GENERIC] = 14, [JITI_ENTRY_METHOD] = 15,
  [JITI_ENTRY_DATA] = 16, [JITI_ENTRY_FILE] = 17, [JITI_ENTRY_INVARIANT] = 18};

static int item_cmp(const void *a, const void *b) {
  const Item *x = a, *y = b;
  if (x->kind != y->kind) return import_rank[x->kind] - import_rank[y->kind];
  if (x->depth != y->depth) return x->depth - y->depth;
  return strcmp(x->name, y->name);
}

/* Encode one registry entry; false with *why on an unexportable value. */
static bool encode_entry(jt_State *S, int kind, jt_V name, jt_V src, jt_Buf *out, const char **why) {
  switch (kind) {
    case JITI_ENTRY_VARIABLE: {
      jt_V v = jt_symobj(S, name)->value;
      /* the world's current package is stored by name, its readtable as it is */
      if (name == JT_SYM(S, PACKAGE_VAR)) v = jt_is(src, JT_TPACKAGE) ? jt_pkg_(src)->name : JT_NIL;
      else if (name == JT_SYM(S, READTABLE_VAR)) v = global_value(S, name);
      jt_buf_putc(out, src == JT_T ? 'K' : 'V');   /* constant or variable */
      return jt_encode(S, v, out, why);
    }
    case JITI_ENTRY_PACKAGE: {
      jt_V form = jt_package_definition(S, src);
      jt_buf_putc(out, 'F');
      return jt_encode(S, form, out, why);
    }
    case JITI_ENTRY_FILE: {  /* src: #(octets write-date): the date, then the octets as they are */
      jt_V octets = jt_vec_(src)->items[0], date = jt_vec_(src)->items[1];
      jt_buf_putc(out, 'P');
      jt_put_uleb(out, jt_isfix(date) && jt_fixval(date) > 0 ? (uint64_t)jt_fixval(date) : 0);
      for (size_t i = 0; i < jt_str_(octets)->len; i++) jt_buf_putc(out, (char)jt_str_(octets)->chars[i]);
      return true;
    }
    case JITI_ENTRY_DATA: {  /* src: the row's (seq . value) */
      jt_buf_putc(out, 'Q');
      jt_put_uleb(out, (uint64_t)jt_fixval(jt_car(src)));
      return jt_encode(S, name, out, why) && jt_encode(S, jt_cdr(src), out, why);
    }
    case JITI_ENTRY_PLIST: {  /* the symbol's property list as it is now, as the form that sets it */
      jt_V form = jt_defs_plist_form(S, name);
      JT_PUSH(S, form);
      jt_buf_putc(out, 'F');
      bool ok = jt_encode(S, S->sp[-1], out, why);
      JT_POP(S, 1);
      return ok;
    }
    case JITI_ENTRY_CLASS: {
      if (jt_iscons(src) && jt_car(src) == jt_intern_keyword(S, "UNEXPORTABLE")) {
        *why = "a class whose initforms close over a lexical environment (define it at top level, "
               "where its initforms may use global variables and functions)";
        return false;
      }
      /* the defclass form, then the values of the class's own :class
      ** slots as a list of (name . value), unbound ones as unbound */
      jt_V cls = jt_find_class(S, name);
      jt_V cells = jt_is(cls, JT_TCLASS) ? jt_class_shared_cells(S, cls) : JT_NIL;
      JT_PUSH(S, cells);
      jt_buf_putc(out, 'C');
      bool ok = jt_encode(S, src, out, why) && jt_encode(S, S->sp[-1], out, why);
      JT_POP(S, 1);
      return ok;
    }
    default:
      if (kind == JITI_ENTRY_STRUCTURE && jt_iscons(src) && jt_isstring(jt_car(src))) {
        /* (package-name . form): the form, then the package it was defined in */
        jt_buf_putc(out, 'F');
        return jt_encode(S, jt_cdr(src), out, why) && jt_encode(S, jt_car(src), out, why);
      }
      if (jt_iscons(src) && jt_car(src) == jt_intern_keyword(S, "UNEXPORTABLE")) {
        *why = kind == JITI_ENTRY_METHOD
                   ? "a method whose (EQL x) specializer is the value of a form (an import evaluates nothing: "
                     "write the object itself, a number, character, string or quoted symbol of a package, "
                     "as in (eql 1) or (eql :key))"
                   : "a function that cannot be rebuilt from source";
        return false;
      }
      jt_buf_putc(out, 'F');
      return jt_encode(S, src, out, why);
  }
}

/* A top-level form has returned: the variables it defined with their text
** take their value now, which the text describes (a later change in
** place, or a SETF, is then told apart from it at export). */
static void world_form_done(jt_State *S) {
  World *w = W(S);
  if (!w || w->fresh == JT_NIL) return;
  jt_V *base = S->sp;
  JT_PUSH(S, w->fresh);
  w->fresh = JT_NIL;
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V key = jt_car(l);
    bool found;
    jt_V src = jt_hash_get(S, w->registry, key, &found);
    jt_V rec = jt_hash_get(S, w->sources, key, &found);
    if (!found) continue;
    JT_PUSH(S, l);
    JT_PUSH(S, rec);
    jt_Buf b = {0};
    const char *why = NULL;
    bool ok = encode_entry(S, JITI_ENTRY_VARIABLE, jt_cdr(key), src, &b, &why);
    if (ok) {
      jiti_EntrySource es;
      jt_source_of_record(S->sp[-1], &es);
      jt_V now = jt_source_record(S, &es, jt_source_digest((const unsigned char *)b.p, b.n));
      JT_PUSH(S, now);
      jt_ckpt_map_put(S, w->sources, jt_car(S->sp[-3]), now);
    }
    jt_buf_free(&b);
    l = base[1];
    S->sp = base + 1;
  }
  S->sp = base;
}

/* The source as written to put in front of the entry (kind, name) whose
** canonical encoding is canon, into pre: false when it has none, or none
** that still describes it (a variable whose value changed since). */
static bool written_prefix(jt_State *S, int kind, jt_V name, const jt_Buf *canon, jt_Buf *pre) {
  World *w = W(S);
  if (!written_kind(kind) || jt_hash_(w->sources)->count == 0) return false;
  jt_V key = entry_key(S, kind, name);
  JT_PUSH(S, key);
  bool found;
  jt_V rec = jt_hash_get(S, w->sources, key, &found);
  bool ok = found;
  if (found && kind == JITI_ENTRY_VARIABLE) {
    jt_V digest = jt_source_digest((const unsigned char *)canon->p, canon->n);
    jt_V was = jt_source_record_digest(rec);
    if (was == JT_NIL) {   /* the first export after its definition: its value now */
      JT_PUSH(S, rec);
      jiti_EntrySource src;
      jt_source_of_record(S->sp[-1], &src);
      jt_V now = jt_source_record(S, &src, digest);
      JT_PUSH(S, now);
      jt_ckpt_map_put(S, w->sources, S->sp[-3], now);
      rec = S->sp[-1];
      JT_POP(S, 2);
    } else if (was != digest) {
      /* changed since: the text no longer describes it, now or later (as
      ** a world imported from this export would not have it either) */
      jt_ckpt_map_rem(S, w->sources, S->sp[-1]);
      ok = false;
    }
  }
  if (ok) {
    jiti_EntrySource src;
    jt_source_of_record(rec, &src);
    jt_source_prefix(&src, pre);
  }
  JT_POP(S, 1);
  return ok;
}

static jiti_Status emit(jt_State *S, int kind, jt_V name, jt_V src, jiti_EntryFn fn, void *ud,
                        char *err, size_t errlen, bool *stop) {
  jt_Buf b = {0}, pre = {0};
  const char *why = NULL;
  char *n = entry_name(S, name);
  jiti_Status st = JITI_OK;
  bool encoded = encode_entry(S, kind, name, src, &b, &why);
  if (encoded && written_prefix(S, kind, name, &b, &pre)) {
    jt_buf_put(&pre, b.p, b.n);   /* the prefix, then the canonical encoding */
    jt_buf_free(&b);
    b = pre;
  }
  if (!encoded) {
    if (jt_encode_limit(why) >= 0) {
      if (err) snprintf(err, errlen, "%s %s: %s", kind_names[kind], n, why);
      st = JITI_LIMIT;
    } else {
      if (err) snprintf(err, errlen, "%s %s holds an unexportable value: %s", kind_names[kind], n, why);
      st = JITI_ERROR;
    }
  } else if (fn(ud, (jiti_EntryKind)kind, n, (const unsigned char *)b.p, b.n)) {
    *stop = true;
  }
  free(n);
  jt_buf_free(&b);
  return st;
}

static jiti_Status export_items(jt_State *S, Item *items, size_t n, jiti_EntryFn fn, void *ud,
                                char *err, size_t errlen) {
  World *w = W(S);
  if (n > 1) qsort(items, n, sizeof *items, item_cmp);  /* items is NULL when n == 0 */
  jiti_Status st = JITI_OK;
  bool stop = false;
  for (size_t i = 0; i < n && st == JITI_OK && !stop; i++) {
    jt_V key = items[i].key;
    bool found;
    if (items[i].kind == JITI_ENTRY_DATA || items[i].kind == JITI_ENTRY_FILE) {
      jt_V v = jt_hash_get(S, items[i].kind == JITI_ENTRY_DATA ? w->data : w->files, key, &found);
      if (!found) { fn(ud, (jiti_EntryKind)items[i].kind, items[i].name, NULL, 0); continue; }
      st = emit(S, items[i].kind, key, v, fn, ud, err, errlen, &stop);
    } else {
      jt_V src = jt_hash_get(S, w->registry, key, &found);
      if (!found) { fn(ud, (jiti_EntryKind)items[i].kind, items[i].name, NULL, 0); continue; }
      st = emit(S, items[i].kind, jt_cdr(key), src, fn, ud, err, errlen, &stop);
    }
  }
  return st;
}

static void add_item(jt_State *S, Item **items, size_t *n, size_t *cap, int kind, jt_V key, jt_V name) {
  if (*n == *cap) {
    Item *p = jt_grow(*items, cap, *n + 1, sizeof *p, 8);
    if (!p) abort();
    *items = p;
  }
  (*items)[*n].kind = kind;
  jt_V layout = kind == JITI_ENTRY_STRUCTURE && jt_issymbol(name) ? jt_find_layout(S, name) : JT_NIL;
  (*items)[*n].depth = layout != JT_NIL ? layout_depth(layout, 0) : 0;
  (*items)[*n].name = entry_name(S, name);
  (*items)[*n].key = key;
  (*n)++;
}

static void free_items(Item *items, size_t n) {
  for (size_t i = 0; i < n; i++) free(items[i].name);
  free(items);
}

typedef jiti_Status (*WorldBody)(jt_State *S, void *ud);

/* Run `fn` with an entry point, so a signalled error becomes a status. */
static jiti_Status guarded(jt_State *S, jiti_Status (*fn)(jt_State *, void *), void *ud,
                           char *err, size_t errlen) {
  char here;
  bool outer = S->jmp == NULL;
  if (outer) {
    S->cstack_base = &here;
    jt_gc_safepoint(S, false);
    S->fuel_left = S->limits.fuel ? S->limits.fuel : UINT64_MAX;  /* export pays as it goes */
  }
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jiti_Status st = fn(S, ud);
    jt_jmp_pop(S, &j);
    return st;
  }
  if (err) {
    char *m = jt_print_cstr(S, S->pending, false, errlen);
    snprintf(err, errlen, "%s", m);
    free(m);
  }
  if (outer) S->pending = JT_NIL;
  return j.code == JITI_OK ? JITI_ERROR : (jiti_Status)j.code;
}

/* from: the index of the first level whose changes count (changed only). */
typedef struct ExportArgs { jiti_EntryFn fn; void *ud; char *err; size_t errlen; bool changed; int from; } ExportArgs;

/* True the first time key is put in seen (an EQUAL table, rooted by the
** caller); false when it was there already. */
bool jt_world_first_visit(jt_State *S, jt_V *seen, jt_V v) {
  if (*seen == JT_NIL) {
    JT_PUSH(S, v);
    *seen = jt_make_hash(S, JT_HASH_EQ, 16);
    jt_o(*seen)->flags |= JT_HASH_MANAGED;
    JT_POP(S, 1);
  }
  bool found;
  jt_hash_get(S, *seen, v, &found);
  if (found) return false;
  JT_PUSH(S, v);
  jt_hash_put(S, *seen, v, JT_T);
  JT_POP(S, 1);
  return true;
}

static bool first_time(jt_State *S, jt_V seen, jt_V key) {
  bool dup;
  jt_hash_get(S, seen, key, &dup);
  if (!dup) jt_hash_put(S, seen, key, JT_T);
  return !dup;
}

static void note_current_package(jt_State *S);
static void note_current_readtable(jt_State *S);

static jiti_Status export_body(jt_State *S, void *ud) {
  ExportArgs *a = ud;
  World *w = W(S);
  Item *items = NULL;
  size_t n = 0, cap = 0;
  note_current_package(S);
  note_current_readtable(S);
  /* Keys stay reachable from the registry, the data table, the logs or
  ** `seen` (on the value stack until the end), which are all GC roots. */
  jt_V *base = S->sp;
  if (!a->changed) {
    jt_Hash *r = jt_hash_(w->registry);
    for (size_t i = 0; i < r->nentries; i++)
      if (r->entries[i].key != JT_HASH_DELETED)
        add_item(S, &items, &n, &cap, (int)jt_fixval(jt_car(r->entries[i].key)),
                 r->entries[i].key, jt_cdr(r->entries[i].key));
    jt_Hash *d = jt_hash_(w->data);
    for (size_t i = 0; i < d->nentries; i++)
      if (d->entries[i].key != JT_HASH_DELETED)
        add_item(S, &items, &n, &cap, JITI_ENTRY_DATA, d->entries[i].key, d->entries[i].key);
    jt_Hash *f = jt_hash_(w->files);
    for (size_t i = 0; i < f->nentries; i++)
      if (f->entries[i].key != JT_HASH_DELETED)
        add_item(S, &items, &n, &cap, JITI_ENTRY_FILE, f->entries[i].key, f->entries[i].key);
  } else if (jt_ckpt_untouched_since(S, a->from)) {
    /* nothing logged or copied: nothing changed (a read-only call) */
  } else {
    /* logged keys (deduplicated), plus the variables whose value may have
    ** changed (only_symbols_touched).  `seen` is scratch: exempt from the
    ** checkpoint's copies like the managed maps, so that filling it does
    ** not look like a change of the world. */
    jt_V seen = jt_make_hash(S, JT_HASH_EQUAL, 8);  /* a call changes a few entries: it grows */
    jt_o(seen)->flags |= JT_HASH_MANAGED;
    JT_PUSH(S, seen);
    for (int l = a->from; l < jt_ckpt_depth(S); l++) {
      for (size_t i = 0; i < jt_ckpt_log_count(S, l); i++) {
        jt_MapLog m = jt_ckpt_log_at(S, l, i);
        jt_V key = m.key;
        if (!first_time(S, seen, key)) continue;
        if (m.map == w->data) add_item(S, &items, &n, &cap, JITI_ENTRY_DATA, key, key);
        else if (m.map == w->files) add_item(S, &items, &n, &cap, JITI_ENTRY_FILE, key, key);
        else if (m.map == w->registry)
          add_item(S, &items, &n, &cap, (int)jt_fixval(jt_car(key)), key, jt_cdr(key));
        /* other managed maps (the package registry) are not entries */
      }
    }
    if (jt_ckpt_only_symbols_since(S, a->from)) {
      for (int l = a->from; l < jt_ckpt_depth(S); l++) {
        for (size_t i = 0; i < jt_ckpt_saved_count(S, l); i++) {
          jt_V sym = (jt_V)jt_ckpt_saved_at(S, l, i);
          if (sym == S->nil_sym || sym == S->t_sym) continue;
          /* its value, and its property list, where they are entries */
          static const int of_symbol[] = {JITI_ENTRY_VARIABLE, JITI_ENTRY_PLIST};
          for (size_t k = 0; k < sizeof of_symbol / sizeof *of_symbol; k++) {
            int kind = of_symbol[k];
            jt_V key = entry_key(S, kind, sym);
            JT_PUSH(S, key);
            bool var;
            jt_hash_get(S, w->registry, key, &var);
            if (var && first_time(S, seen, key)) add_item(S, &items, &n, &cap, kind, key, sym);
            JT_POP(S, 1);
          }
        }
      }
    } else {
      /* every variable and property list, and every class with :class
      ** slots (their values are exported with the class and may have
      ** changed in place too) */
      for (size_t i = 0; i < jt_hash_(w->registry)->nentries; i++) {
        jt_V key = jt_hash_(w->registry)->entries[i].key;
        if (key == JT_HASH_DELETED) continue;
        int kind = (int)jt_fixval(jt_car(key));
        if (kind == JITI_ENTRY_CLASS) {
          jt_V cls = jt_find_class(S, jt_cdr(key));
          if (!jt_is(cls, JT_TCLASS) || jt_class_shared_cells(S, cls) == JT_NIL) continue;
        } else if (kind != JITI_ENTRY_VARIABLE && kind != JITI_ENTRY_PLIST) {
          continue;
        }
        if (first_time(S, seen, key)) add_item(S, &items, &n, &cap, kind, key, jt_cdr(key));
      }
    }
  }
  jiti_Status st = export_items(S, items, n, a->fn, a->ud, a->err, a->errlen);
  S->sp = base;
  free_items(items, n);
  return st;
}

jiti_Status jiti_export_all(jiti_State *S, jiti_EntryFn fn, void *ud, char *err, size_t errlen) {
  ExportArgs a = {fn, ud, err, errlen, false, 0};
  return guarded(S, export_body, &a, err, errlen);
}

jiti_Status jiti_export_changed(jiti_State *S, jiti_EntryFn fn, void *ud, char *err, size_t errlen) {
  return jiti_export_changed_since(S, 1, fn, ud, err, errlen);
}

jiti_Status jiti_export_changed_since(jiti_State *S, int depth, jiti_EntryFn fn, void *ud, char *err,
                                      size_t errlen) {
  int open = jt_ckpt_depth(S);
  if (depth < 1) depth = 1;
  /* no checkpoint at that depth: nothing logged, but every variable may
  ** have changed (jt_ckpt_only_symbols_since is false for no level) */
  ExportArgs a = {fn, ud, err, errlen, true, depth - 1 < open ? depth - 1 : open};
  return guarded(S, export_body, &a, err, errlen);
}

typedef struct ImportArgs { int kind; const char *name; const unsigned char *bytes; size_t len; } ImportArgs;

/* An entry's name, read as it was printed: in COMMON-LISP-USER. */
static jt_V read_name(jt_State *S, const char *name) {
  jt_Reader R;
  jt_reader_init(&R, name, strlen(name));
  size_t mark = S->nbind;
  jt_bind(S, JT_SYM(S, PACKAGE_VAR), jt_package_of_index(S, JT_PKG_USER));
  jt_V v = jt_read(S, &R);
  jt_unbind_to(S, mark);
  if (v == JT_EOF) jt_error(S, "empty entry name");
  return v;
}

/* ---------------------------------------------------- the current package */

/* The world's current package is *package*'s global value (in-package at
** top level changes it; a restored checkpoint puts it back).  The entry
** *PACKAGE* (variable kind) records it, as of the last export or import;
** when *package* holds no live package, that one, else COMMON-LISP-USER. */
static jt_V live_package(jt_V p) {
  return jt_is(p, JT_TPACKAGE) && jt_pkg_(p)->name != JT_NIL ? p : JT_NIL;
}

static jt_V recorded_package(jt_State *S) {
  World *w = W(S);
  if (!w || w->registry == JT_NIL) return JT_NIL;
  jt_V key = entry_key(S, JITI_ENTRY_VARIABLE, JT_SYM(S, PACKAGE_VAR));
  bool found;
  jt_V p = jt_hash_get(S, w->registry, key, &found);
  return found ? live_package(p) : JT_NIL;
}

static jt_V package_global(jt_State *S) { return global_value(S, JT_SYM(S, PACKAGE_VAR)); }

jt_V jt_world_current_package(jt_State *S) {
  jt_V user = jt_package_of_index(S, JT_PKG_USER);
  if (user == JT_NIL) return user;
  jt_V cur = live_package(package_global(S));
  if (cur != JT_NIL) return cur;
  jt_V rec = recorded_package(S);
  return rec != JT_NIL ? rec : user;
}

typedef struct BindArgs { const char *name; } BindArgs;

static jiti_Status bind_body(jt_State *S, void *ud) {
  const char *name = ((BindArgs *)ud)->name;
  size_t len = strlen(name);
  jt_V pkg = jt_package_named(S, name, len);
  if (pkg == JT_NIL) {   /* as the reader reads the name unescaped */
    char *up = malloc(len + 1);
    if (!up) jt_error(S, "out of memory");
    for (size_t i = 0; i <= len; i++) up[i] = (char)toupper((unsigned char)name[i]);
    pkg = jt_package_named(S, up, len);
    free(up);
  }
  if (pkg == JT_NIL) jt_error(S, "no package is named %.200s", name);
  W(S)->package_mark = S->nbind;
  jt_bind(S, JT_SYM(S, PACKAGE_VAR), pkg);
  W(S)->package_bound = true;
  return JITI_OK;
}

jiti_Status jiti_package_bind(jiti_State *S, const char *name, char *err, size_t errlen) {
  if (!W(S) || W(S)->package_bound || !name) {
    if (err) snprintf(err, errlen, "%s", !name ? "no package name" : "a package is already bound");
    return JITI_BADARG;
  }
  BindArgs a = {name};
  return guarded(S, bind_body, &a, err, errlen);
}

void jiti_package_unbind(jiti_State *S) {
  if (!W(S) || !W(S)->package_bound) return;
  jt_unbind_to(S, W(S)->package_mark);
  W(S)->package_bound = false;
}

char *jiti_world_package(jiti_State *S) {
  jt_V p = jt_world_current_package(S);
  if (p == JT_NIL) return strdup("COMMON-LISP-USER");
  return jt_string_utf8(S, jt_pkg_(p)->name, NULL);
}

/* At export: *package*'s global value is the world's current package
** (in-package changed it); when it differs from the recorded one, the
** entry *PACKAGE* is recorded again (a logged change, undone by a
** restore). */
static void note_current_package(jt_State *S) {
  jt_V cur = package_global(S);
  if (!jt_is(cur, JT_TPACKAGE) || jt_pkg_(cur)->name == JT_NIL) return;
  jt_V rec = recorded_package(S);
  if (cur == rec || (rec == JT_NIL && cur == jt_package_of_index(S, JT_PKG_USER))) return;
  record(S, JITI_ENTRY_VARIABLE, JT_SYM(S, PACKAGE_VAR), cur);
}

/* ------------------------------------------------- the current readtable */

/* The world's syntax is *readtable*'s global value: a program's reads use
** it (the kernel reads source with the standard syntax), and it lasts
** from one transaction to the next (jt_reset_io_syntax keeps it).  The
** entry *READTABLE* (variable kind) stores it while it is anything but the
** standard syntax; its readtable is encoded like any structure, its
** functions by name (export.c). */
static bool is_readtable(jt_State *S, jt_V v) {
  return jt_isstruct(v) && jt_layout_(jt_struct_(v)->layout)->name == JT_SYM(S, READTABLE) &&
         jt_layout_(jt_struct_(v)->layout)->nslots == 2;
}

/* At export: the entry follows *readtable*'s global value (a logged
** change, undone by a restore). */
static void note_current_readtable(jt_State *S) {
  World *w = W(S);
  jt_V sym = JT_SYM(S, READTABLE_VAR);
  jt_V cur = global_value(S, sym);
  bool standard = !is_readtable(S, cur) ||
                  (jt_struct_(cur)->slots[0] == JT_SYM(S, K_UPCASE) && jt_struct_(cur)->slots[1] == JT_NIL);
  bool kept;
  jt_hash_get(S, w->registry, entry_key(S, JITI_ENTRY_VARIABLE, sym), &kept);
  if (standard && kept) unrecord(S, JITI_ENTRY_VARIABLE, sym);
  else if (!standard && !kept) record(S, JITI_ENTRY_VARIABLE, sym, JT_NIL);
}

/* True when `form` is what an entry of `kind` named `name` must hold: the
** defining form of that very name, and nothing else.  A store written by
** another program (or damaged) can hold anything; importing evaluates only
** forms this admits, so no entry can run code of its own at import. */
static bool entry_form_ok(jt_State *S, jiti_EntryKind kind, jt_V name, jt_V form) {
  if (!jt_iscons(form) || !jt_iscons(jt_cdr(form))) return false;
  if (jt_defs_imports(S, kind, form)) return jt_defs_form_ok(S, kind, name, form);
  jt_V head = jt_car(form), second = jt_car(jt_cdr(form));
  switch (kind) {
    case JITI_ENTRY_FUNCTION: case JITI_ENTRY_MACRO: {
      if (head != (kind == JITI_ENTRY_MACRO ? JT_SYM(S, DEFMACRO) : JT_SYM(S, DEFUN))) return false;
      jt_V sym = JT_NIL;
      int k = jt_def_name(S, jt_cdr(form), kind == JITI_ENTRY_MACRO ? JT_DEF_MACRO : JT_DEF_FUNCTION, &sym);
      if (k == JT_DEF_SETF_FUNCTION) return jt_equal(S, name, second);
      return k >= 0 && name == sym;
    }
    case JITI_ENTRY_STRUCTURE:
      if (head == jt_intern(S, "DEFSTRUCT")) {
        jt_V n = jt_iscons(second) ? jt_car(second) : second;
        return n == name;
      }
      return head == jt_intern(S, "DEFINE-CONDITION") && second == name;
    case JITI_ENTRY_CLASS: return head == JT_CSYM(S, DEFCLASS) && second == name;
    case JITI_ENTRY_GENERIC: return head == JT_CSYM(S, DEFGENERIC) && jt_equal(S, second, name);
    case JITI_ENTRY_METHOD:  /* the rest of the name is checked when the method is made */
      return head == JT_CSYM(S, DEFMETHOD) && jt_iscons(name) && jt_equal(S, second, jt_car(name));
    case JITI_ENTRY_FOREIGN:  /* the rest is checked as the declaration is made */
      return head == jt_intern(S, "DEFINE-FOREIGN") && jt_issymbol(name) && second == name;
    default:
      return false;
  }
}

static JT_NORETURN void bad_entry_form(jt_State *S, jiti_EntryKind kind, jt_V form) {
  static const char *const wanted[JITI_ENTRY_KIND_COUNT] = {
    [JITI_ENTRY_FUNCTION] = "a DEFUN", [JITI_ENTRY_MACRO] = "a DEFMACRO",
    [JITI_ENTRY_STRUCTURE] = "a DEFSTRUCT or DEFINE-CONDITION", [JITI_ENTRY_CLASS] = "a DEFCLASS",
    [JITI_ENTRY_GENERIC] = "a DEFGENERIC", [JITI_ENTRY_METHOD] = "a DEFMETHOD",
    [JITI_ENTRY_FOREIGN] = "a DEFINE-FOREIGN", [JITI_ENTRY_TYPE] = "a DEFTYPE",
    [JITI_ENTRY_SYMBOL_MACRO] = "a DEFINE-SYMBOL-MACRO",
    [JITI_ENTRY_SETF_EXPANDER] = "a DEFSETF or DEFINE-SETF-EXPANDER",
    [JITI_ENTRY_COMPILER_MACRO] = "a DEFINE-COMPILER-MACRO",
    [JITI_ENTRY_DOCUMENTATION] = "a (SETF (DOCUMENTATION 'NAME 'DOC-TYPE) string)",
    [JITI_ENTRY_PLIST] = "a (SETF (SYMBOL-PLIST 'NAME) 'plist)",
    [JITI_ENTRY_METHOD_COMBINATION] = "a DEFINE-METHOD-COMBINATION"};
  char *f = jt_print_cstr(S, form, true, 120);
  snprintf(S->msgbuf, sizeof S->msgbuf, "its stored form %s is not %s form of that name or defines a built-in name",
           f, wanted[kind] ? wanted[kind] : "a defining");
  free(f);
  jt_error(S, "%s", S->msgbuf);
}

/* The types a DEFSTRUCT (:include) or DEFINE-CONDITION (parents) form
** names.  The store hands entries over in its own order (by name), so a type
** can arrive before the type it stands on: such a form waits in
** W->pending and is defined as soon as what it names is. */
static bool type_ready(jt_State *S, jt_V form) {
  jt_V second = jt_car(jt_cdr(form));
  if (jt_car(form) == jt_intern(S, "DEFSTRUCT")) {
    for (jt_V o = jt_iscons(second) ? jt_cdr(second) : JT_NIL; jt_iscons(o); o = jt_cdr(o)) {
      jt_V opt = jt_car(o);
      if (jt_iscons(opt) && jt_car(opt) == jt_intern_keyword(S, "INCLUDE") && jt_iscons(jt_cdr(opt)) &&
          jt_issymbol(jt_car(jt_cdr(opt))) && jt_find_layout(S, jt_car(jt_cdr(opt))) == JT_NIL)
        return false;
    }
    return true;
  }
  jt_V rest = jt_cdr(jt_cdr(form));
  for (jt_V p = jt_iscons(rest) ? jt_car(rest) : JT_NIL; jt_iscons(p); p = jt_cdr(p))
    if (jt_issymbol(jt_car(p)) && jt_find_layout(S, jt_car(p)) == JT_NIL) return false;
  return true;
}

/* Evaluate a stored type definition in the package current at its
** definition (COMMON-LISP-USER unless the entry names another): a
** structure's accessors and constructor were named in it. */
static void eval_type_form(jt_State *S, jt_V form, jt_V pkg) {
  size_t mark = S->nbind;
  jt_bind(S, JT_SYM(S, PACKAGE_VAR), pkg != JT_NIL ? pkg : jt_package_of_index(S, JT_PKG_USER));
  jt_eval_toplevel(S, form);
  jt_unbind_to(S, mark);
}

/* Define every waiting type whose types now exist, until none is left that
** can be. */
static void define_pending(jt_State *S) {
  World *w = W(S);
  bool progress = true;
  while (progress) {
    progress = false;
    for (jt_V l = w->pending, prev = JT_NIL; jt_iscons(l); prev = l, l = jt_cdr(l)) {
      jt_V waiting = jt_car(l);   /* (form . package) */
      if (!type_ready(S, jt_car(waiting))) continue;
      if (prev == JT_NIL) w->pending = jt_cdr(l);
      else JT_SET(S, prev, jt_cons_(prev)->cdr, jt_cdr(l));
      JT_PUSH(S, waiting);
      eval_type_form(S, jt_car(waiting), jt_cdr(waiting));
      JT_POP(S, 1);
      progress = true;
      break;
    }
  }
}

/* Importing evaluates only the kernel's own defining macros, but under a
** budget all the same: the state's limits where the host set them, these
** otherwise (a transaction's fuel; more heap than one's, for a whole
** world). */
#define IMPORT_HEAP ((uint64_t)1 << 30)

static void import_budget(jt_State *S) {
  if (!S->limits.fuel) S->limits.fuel = JITI_LIMITS_FUEL;
  if (!S->limits.heap) S->limits.heap = IMPORT_HEAP;
  S->fuel_left = S->limits.fuel;
  S->limit_tripped = 0;
}

static jiti_Status import_body(jt_State *S, void *ud) {
  ImportArgs *a = ud;
  World *w = W(S);
  if (a->len < 1) jt_error(S, "empty entry encoding");
  char tag = (char)a->bytes[0];
  size_t pos = 1;
  switch (a->kind) {
    case JITI_ENTRY_VARIABLE: {
      if (tag != 'V' && tag != 'K') jt_error(S, "not a variable encoding");
      jt_V sym = jt_check_symbol(S, read_name(S, a->name));
      JT_PUSH(S, sym);
      jt_V v = jt_decode(S, a->bytes + 1, a->len - 1);
      if (sym == JT_SYM(S, PACKAGE_VAR)) {
        /* the world's current package, by name */
        jt_V pkg = jt_find_package(S, v);
        if (pkg == JT_NIL) jt_error(S, "the current package of the world does not exist");
        JT_PUSH(S, pkg);
        jt_set_symbol_value(S, sym, pkg);
        record(S, JITI_ENTRY_VARIABLE, sym, pkg);
        JT_POP(S, 2);
        break;
      }
      if (sym == JT_SYM(S, READTABLE_VAR)) {
        /* the world's readtable */
        if (!is_readtable(S, v)) jt_error(S, "the readtable of the world is not a readtable");
        jt_set_symbol_value(S, sym, v);
        record(S, JITI_ENTRY_VARIABLE, sym, JT_NIL);
        JT_POP(S, 1);
        break;
      }
      jt_Symbol *s = jt_symobj(S, sym);
      if (s->h.flags & (JT_SYM_LOCKED | JT_SYM_CONSTANT))
        jt_errorc(S, JT_SYM(S, LOCKED_SYMBOL_ERROR), "cannot import variable %s: it is a built-in or constant", s->cname);
      s->h.flags |= JT_SYM_SPECIAL;
      JT_SET(S, s, s->value, v);
      if (tag == 'K') s->h.flags |= JT_SYM_CONSTANT;
      record(S, JITI_ENTRY_VARIABLE, sym, jt_bool(tag == 'K'));
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_DATA: {
      if (tag != 'Q' && tag != 'R') jt_error(S, "not a data row encoding");
      int64_t seq = -1;  /* 'R' (no position): after the rows there are */
      if (tag == 'Q') {
        uint64_t q = jt_get_uleb(a->bytes, a->len, &pos);
        if (q > ((uint64_t)1 << 60)) jt_error(S, "bad row position in a data row encoding");
        seq = (int64_t)q;
      }
      jt_V key = jt_decode_at(S, a->bytes, a->len, &pos);
      JT_PUSH(S, key);
      jt_V val = jt_decode_at(S, a->bytes, a->len, &pos);
      if (pos != a->len) jt_error(S, "trailing bytes in a data row encoding");
      row_put(S, S->sp[-1], val, seq);
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_FILE: {
      if (tag != 'P') jt_error(S, "not a file encoding");
      uint64_t date = jt_get_uleb(a->bytes, a->len, &pos);
      if (date > ((uint64_t)1 << 60) || pos > a->len) jt_error(S, "bad write date in a file encoding");
      jt_V key = read_name(S, a->name);
      if (!jt_isstring(key)) jt_error(S, "a file's name is not a string");
      JT_PUSH(S, key);
      jt_V octets = jt_make_string(S, a->len - pos, 0);
      for (size_t i = pos; i < a->len; i++) jt_str_(octets)->chars[i - pos] = a->bytes[i];
      JT_PUSH(S, octets);
      jt_V rec = jt_make_vector(S, 2, JT_NIL);
      jt_vec_(rec)->items[0] = S->sp[-1];
      jt_vec_(rec)->items[1] = jt_mkfix((intptr_t)date);
      JT_PUSH(S, rec);
      jt_ckpt_map_put(S, w->files, S->sp[-3], rec);
      JT_POP(S, 3);
      break;
    }
    case JITI_ENTRY_INVARIANT: {
      if (tag != 'F') jt_error(S, "not a source encoding");
      jt_V sym = jt_check_symbol(S, read_name(S, a->name));
      JT_PUSH(S, sym);
      jt_V form = jt_decode(S, a->bytes + 1, a->len - 1);
      record(S, JITI_ENTRY_INVARIANT, S->sp[-1], form);
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_PACKAGE: {
      if (tag != 'F') jt_error(S, "not a source encoding");
      jt_V name = read_name(S, a->name);
      JT_PUSH(S, name);
      jt_V form = jt_decode(S, a->bytes + 1, a->len - 1);
      JT_PUSH(S, form);
      if (!jt_iscons(form) || jt_car(form) != jt_intern(S, "DEFPACKAGE") || !jt_iscons(jt_cdr(form)) ||
          !jt_isstring(name) || !jt_equal(S, jt_car(jt_cdr(form)), name))
        bad_entry_form(S, a->kind, form);
      jt_package_import(S, form);
      jt_V pkg = jt_find_package(S, name);
      record(S, JITI_ENTRY_PACKAGE, jt_pkg_(pkg)->name, pkg);
      JT_POP(S, 2);
      break;
    }
    case JITI_ENTRY_FUNCTION: case JITI_ENTRY_MACRO: case JITI_ENTRY_STRUCTURE:
    case JITI_ENTRY_GENERIC: case JITI_ENTRY_METHOD: case JITI_ENTRY_FOREIGN:
    case JITI_ENTRY_TYPE: case JITI_ENTRY_SYMBOL_MACRO: case JITI_ENTRY_SETF_EXPANDER:
    case JITI_ENTRY_COMPILER_MACRO: case JITI_ENTRY_DOCUMENTATION: case JITI_ENTRY_PLIST:
    case JITI_ENTRY_METHOD_COMBINATION: {
      if (tag != 'F') jt_error(S, "not a source encoding");
      jt_V name = read_name(S, a->name);
      JT_PUSH(S, name);
      jt_V form = jt_decode_at(S, a->bytes, a->len, &pos);
      JT_PUSH(S, form);
      /* a structure defined in another package than COMMON-LISP-USER:
      ** that package's name */
      jt_V pkg = JT_NIL;
      if (pos < a->len && a->kind == JITI_ENTRY_STRUCTURE) {
        jt_V pname = jt_decode_at(S, a->bytes, a->len, &pos);
        pkg = jt_isstring(pname) ? jt_find_package(S, pname) : JT_NIL;
        if (pkg == JT_NIL) jt_error(S, "the package its structure was defined in does not exist");
      }
      if (pos != a->len) jt_error(S, "trailing bytes in a source encoding");
      JT_PUSH(S, pkg);
      if (!entry_form_ok(S, a->kind, S->sp[-3], form)) bad_entry_form(S, a->kind, form);
      /* jiti_import_entry puts the limits import_budget sets back */
      if (jt_defs_imports(S, a->kind, form)) {
        import_budget(S);
        w->importing = true;   /* jiti_import_entry clears it, error or not */
        jt_defs_import(S, a->kind, S->sp[-3], form);
        w->importing = false;
        JT_POP(S, 3);
        break;
      }
      switch (a->kind) {
        case JITI_ENTRY_STRUCTURE:
          import_budget(S);
          if (!type_ready(S, form)) {
            jt_V waiting = jt_cons(S, form, pkg);
            w->pending = jt_cons(S, waiting, w->pending);
          } else {
            eval_type_form(S, form, pkg);
            define_pending(S);
          }
          break;
        /* bodies are analysed at their first call; an (eql x)
        ** specializer's value is the one the entry's name holds */
        case JITI_ENTRY_GENERIC: import_budget(S); jt_gf_define(S, form, true); break;
        case JITI_ENTRY_METHOD: import_budget(S); jt_method_define(S, form, true, S->sp[-3], JT_NIL); break;
        /* unavailable rather than an error when its library is not granted */
        case JITI_ENTRY_FOREIGN: jt_ffi_import(S, form); break;
        default:  /* functions and macros are analysed at their first call */
          if (!jt_define_lazily(S, form)) bad_entry_form(S, a->kind, form);
      }
      JT_POP(S, 3);
      break;
    }
    case JITI_ENTRY_CLASS: {
      if (tag != 'C') jt_error(S, "not a class encoding");
      jt_V name = read_name(S, a->name);
      JT_PUSH(S, name);
      jt_V form = jt_decode_at(S, a->bytes, a->len, &pos);
      JT_PUSH(S, form);
      if (!entry_form_ok(S, a->kind, S->sp[-2], form)) bad_entry_form(S, a->kind, form);
      /* initforms are analysed at their first use, like imported functions */
      jt_V cls = jt_class_define(S, form, JT_NIL, true);
      JT_PUSH(S, cls);
      jt_V cells = jt_decode_at(S, a->bytes, a->len, &pos);
      if (pos != a->len) jt_error(S, "trailing bytes in a class encoding");
      jt_class_set_shared(S, S->sp[-1], cells);
      JT_POP(S, 3);
      break;
    }
    default:
      jt_error(S, "unknown entry kind %d", (int)a->kind);
  }
  return JITI_OK;
}

/* bytes without the source as written in front of them (*src, when they
** carry one: 1), or -1 with why in err when that prefix is malformed. */
static int split_source(const unsigned char **bytes, size_t *len, jiti_EntrySource *src, char *err,
                        size_t errlen) {
  size_t off;
  int has = jiti_entry_source(*bytes, *len, src, &off);
  if (has < 0) {
    if (err) snprintf(err, errlen, "its source as written is malformed");
    return -1;
  }
  *bytes += off;
  *len -= off;
  return has;
}

jiti_Status jiti_import_entry(jiti_State *S, jiti_EntryKind kind, const char *name,
                              const unsigned char *bytes, size_t len, char *err, size_t errlen) {
  jiti_EntrySource src;
  int has = split_source(&bytes, &len, &src, err, errlen);
  if (has < 0) return JITI_ERROR;
  ImportArgs a = {kind, name, bytes, len};
  jiti_Limits saved = S->limits;
  uint64_t fuel = S->fuel_left;
  World *w = W(S);
  w->import_src = has && written_kind(kind) ? &src : NULL;
  w->import_kind = kind;
  w->import_digest = jt_source_digest(bytes, len);
  jiti_Status st = guarded(S, import_body, &a, err, errlen);
  w->import_src = NULL;
  S->limits = saved;
  S->fuel_left = fuel;
  w->importing = false;
  return st;
}

/* ------------------------------------------------ entries a host receives */

typedef struct EntryCheckArgs {
  int kind;
  const char *name;
  const unsigned char *bytes;
  size_t len;
  char *library;            /* a foreign declaration's library, or NULL */
  size_t liblen;
} EntryCheckArgs;

/* A name read only to be compared: a package it names that this state
** lacks is made (empty), inside the caller's checkpoint. */
static jt_V read_name_made(jt_State *S, const char *name) {
  jt_Reader R;
  jt_reader_init(&R, name, strlen(name));
  R.make_packages = true;
  size_t mark = S->nbind;
  jt_bind(S, JT_SYM(S, PACKAGE_VAR), jt_package_of_index(S, JT_PKG_USER));
  jt_V v = jt_read(S, &R);
  jt_unbind_to(S, mark);
  if (v == JT_EOF) jt_error(S, "empty entry name");
  JT_PUSH(S, v);
  if (jt_read(S, &R) != JT_EOF) jt_error(S, "the entry name is more than one datum");
  JT_POP(S, 1);
  return v;
}

/* The name must be written as an export writes the value it reads as. */
static void canonical_name(jt_State *S, jt_V v, const char *name) {
  char *n = entry_name(S, v);
  bool same = n && !strcmp(n, name);
  if (!same) {
    snprintf(S->msgbuf, sizeof S->msgbuf, "the name is not written as the world writes it (%.100s)", n ? n : "?");
    free(n);
    jt_error(S, "%s", S->msgbuf);
  }
  free(n);
}

/* A data key printed by identity (a hash table, an instance: #<... {ID}>)
** names its row by the address it had in the world that wrote it, which
** no other state can reproduce.  budget: parts looked at. */
static bool holds_identity(jt_State *S, jt_V v, int depth, size_t *budget) {
  for (;;) {
    if (depth > 200 || *budget == 0) return true;   /* too large to tell */
    (*budget)--;
    if (jt_ishash(v) || jt_is(v, JT_TINSTANCE)) return true;
    if (jt_isstruct(v)) {
      jt_Struct *st = (jt_Struct *)v;
      for (uint32_t i = 0; i < st->h.aux; i++)
        if (holds_identity(S, st->slots[i], depth + 1, budget)) return true;
      return false;
    }
    if (jt_arrayp(v) && !jt_stringp(v) && !jt_bit_vector_p(v)) {
      size_t n = jt_array_total(v);
      for (size_t i = 0; i < n; i++) {
        jt_V x;
        if (!jt_array_peek(v, i, &x) || holds_identity(S, x, depth + 1, budget)) return true;
      }
      return false;
    }
    if (!jt_iscons(v)) return false;
    if (holds_identity(S, jt_car(v), depth + 1, budget)) return true;
    v = jt_cdr(v);
  }
}

static jiti_Status entry_check_body(jt_State *S, void *ud) {
  EntryCheckArgs *a = ud;
  if (a->len < 1) jt_error(S, "empty entry encoding");
  char tag = (char)a->bytes[0];
  size_t pos = 1;
  switch (a->kind) {
    case JITI_ENTRY_DATA: {
      if (tag != 'Q' && tag != 'R') jt_error(S, "not a data row encoding");
      if (tag == 'Q' && jt_get_uleb(a->bytes, a->len, &pos) > ((uint64_t)1 << 60))
        jt_error(S, "bad row position in a data row encoding");
      jt_V key = jt_decode_text_at(S, a->bytes, a->len, &pos);
      JT_PUSH(S, key);
      jt_decode_text_at(S, a->bytes, a->len, &pos);
      if (pos != a->len) jt_error(S, "trailing bytes in a data row encoding");
      size_t budget = 100000;
      if (!holds_identity(S, S->sp[-1], 0, &budget)) canonical_name(S, S->sp[-1], a->name);
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_FILE: {
      if (tag != 'P') jt_error(S, "not a file encoding");
      if (jt_get_uleb(a->bytes, a->len, &pos) > ((uint64_t)1 << 60) || pos > a->len)
        jt_error(S, "bad write date in a file encoding");
      jt_V key = read_name_made(S, a->name);
      if (!jt_isstring(key)) jt_error(S, "a file's name is not a string");
      JT_PUSH(S, key);
      canonical_name(S, key, a->name);
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_VARIABLE: {
      if (tag != 'V' && tag != 'K') jt_error(S, "not a variable encoding");
      jt_V sym = jt_check_symbol(S, read_name_made(S, a->name));
      JT_PUSH(S, sym);
      canonical_name(S, sym, a->name);
      jt_V v = jt_decode_text(S, a->bytes + 1, a->len - 1);
      if (sym == JT_SYM(S, PACKAGE_VAR)) {
        if (!jt_isstring(v)) jt_error(S, "the world's current package is not named by a string");
      } else if (sym == JT_SYM(S, READTABLE_VAR)) {
        /* a stand-in of its type's name (text mode) */
        if (!jt_isstruct(v) || jt_layout_(jt_struct_(v)->layout)->name != JT_SYM(S, READTABLE))
          jt_error(S, "the world's readtable is not a readtable");
      } else if (jt_symobj(S, sym)->h.flags & (JT_SYM_LOCKED | JT_SYM_CONSTANT)) {
        jt_error(S, "it is a built-in or constant");
      }
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_INVARIANT: {
      if (tag != 'F') jt_error(S, "not a source encoding");
      jt_V sym = jt_check_symbol(S, read_name_made(S, a->name));
      JT_PUSH(S, sym);
      canonical_name(S, sym, a->name);
      jt_decode_text(S, a->bytes + 1, a->len - 1);
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_PACKAGE: {
      if (tag != 'F') jt_error(S, "not a source encoding");
      jt_V name = read_name_made(S, a->name);
      JT_PUSH(S, name);
      canonical_name(S, name, a->name);
      jt_V form = jt_decode_text(S, a->bytes + 1, a->len - 1);
      if (!jt_iscons(form) || jt_car(form) != jt_intern(S, "DEFPACKAGE") || !jt_iscons(jt_cdr(form)) ||
          !jt_isstring(S->sp[-1]) || !jt_equal(S, jt_car(jt_cdr(form)), S->sp[-1]))
        jt_error(S, "its form is not the DEFPACKAGE of that name");
      JT_POP(S, 1);
      break;
    }
    case JITI_ENTRY_FUNCTION: case JITI_ENTRY_MACRO: case JITI_ENTRY_STRUCTURE: case JITI_ENTRY_CLASS:
    case JITI_ENTRY_GENERIC: case JITI_ENTRY_METHOD: case JITI_ENTRY_FOREIGN:
    case JITI_ENTRY_TYPE: case JITI_ENTRY_SYMBOL_MACRO: case JITI_ENTRY_SETF_EXPANDER:
    case JITI_ENTRY_COMPILER_MACRO: case JITI_ENTRY_DOCUMENTATION: case JITI_ENTRY_PLIST:
    case JITI_ENTRY_METHOD_COMBINATION: {
      if (tag != (a->kind == JITI_ENTRY_CLASS ? 'C' : 'F')) jt_error(S, "not a %s encoding", kind_names[a->kind]);
      jt_V name = read_name_made(S, a->name);
      JT_PUSH(S, name);
      canonical_name(S, name, a->name);
      jt_V form = jt_decode_text_at(S, a->bytes, a->len, &pos);
      JT_PUSH(S, form);
      if (a->kind == JITI_ENTRY_CLASS) jt_decode_text_at(S, a->bytes, a->len, &pos);  /* its :class slots */
      if (a->kind == JITI_ENTRY_STRUCTURE && pos < a->len) {  /* the package it was defined in */
        jt_V pname = jt_decode_text_at(S, a->bytes, a->len, &pos);
        if (!jt_isstring(pname)) jt_error(S, "the package of its structure is not named by a string");
      }
      if (pos != a->len) jt_error(S, "trailing bytes in the entry's encoding");
      if (!entry_form_ok(S, a->kind, S->sp[-2], form)) bad_entry_form(S, a->kind, form);
      if (a->kind == JITI_ENTRY_FUNCTION || a->kind == JITI_ENTRY_MACRO) {
        jt_V sym = JT_NIL;
        if (jt_def_name(S, jt_cdr(form), a->kind == JITI_ENTRY_MACRO ? JT_DEF_MACRO : JT_DEF_FUNCTION, &sym) < 0 || !jt_issymbol(sym) ||
            !jt_definable(jt_symobj(S, sym)))
          bad_entry_form(S, a->kind, form);
      }
      if (a->kind == JITI_ENTRY_FOREIGN) {
        /* (DEFINE-FOREIGN name "library" "symbol" result (args...)) */
        jt_V rest = jt_cdr(jt_cdr(form));
        jt_V lib = jt_iscons(rest) ? jt_car(rest) : JT_NIL;
        if (!jt_isstring(lib)) jt_error(S, "its declaration names no library");
        if (a->library) {
          size_t n = 0;
          char *u = jt_string_utf8(S, lib, &n);
          snprintf(a->library, a->liblen, "%s", u ? u : "");
          bool whole = u && n == strlen(u) && n < a->liblen;
          free(u);
          if (!whole) jt_error(S, "its library's name is too long or holds a NUL");
        }
      }
      JT_POP(S, 2);
      break;
    }
    default:
      jt_error(S, "unknown entry kind %d", (int)a->kind);
  }
  return JITI_OK;
}

jiti_Status jiti_entry_check(jiti_State *S, jiti_EntryKind kind, const char *name, const unsigned char *bytes,
                             size_t len, char *library, size_t liblen, char *err, size_t errlen) {
  if (library && liblen) library[0] = 0;
  if (!W(S) || !name || (!bytes && len)) {
    if (err) snprintf(err, errlen, "%s", !W(S) ? "the world is not enabled" : "no name or bytes");
    return JITI_BADARG;
  }
  if (split_source(&bytes, &len, NULL, err, errlen) < 0) return JITI_ERROR;
  EntryCheckArgs a = {kind, name, bytes, len, library, liblen};
  jiti_Limits saved = S->limits;
  import_budget(S);   /* decoding allocates: bounded as an import is */
  jiti_checkpoint(S);
  jiti_Status st = guarded(S, entry_check_body, &a, err, errlen);
  jiti_restore(S);
  S->limits = saved;
  return st;
}

typedef struct NameArgs { const char *text; char *out; size_t n; } NameArgs;

static jiti_Status name_body(jt_State *S, void *ud) {
  NameArgs *a = ud;
  jt_V sym = jt_check_symbol(S, read_name_made(S, a->text));
  char *n = entry_name(S, sym);
  if (!n) jt_error(S, "out of memory");
  bool fits = strlen(n) < a->n;
  snprintf(a->out, a->n, "%s", n);
  free(n);
  if (!fits) jt_error(S, "the name is too long");
  return JITI_OK;
}

jiti_Status jiti_entry_symbol_name(jiti_State *S, const char *text, char *out, size_t n, char *err, size_t errlen) {
  if (!W(S) || !text || !out || !n) {
    if (err) snprintf(err, errlen, "no world, text or room");
    return JITI_BADARG;
  }
  NameArgs a = {text, out, n};
  jiti_checkpoint(S);
  jiti_Status st = guarded(S, name_body, &a, err, errlen);
  jiti_restore(S);
  return st;
}

typedef struct TextArgs {
  const unsigned char *bytes;
  size_t len;
  const char *name;
  int width;
  char *out;
  void *scratch;
} TextArgs;

static jiti_Status text_body(jt_State *S, void *ud) {
  TextArgs *a = ud;
  /* an entry is read with the standard syntax, and shown with it whatever
  ** the world's *readtable* (an error unwinds the binding) */
  size_t mark = S->nbind;
  jt_V standard = jt_symobj(S, jt_intern(S, "*%STANDARD-READTABLE*"))->value;
  if (standard != JT_UNBOUND) jt_bind(S, JT_SYM(S, READTABLE_VAR), standard);
  a->out = jt_describe(S, a->bytes, a->len, a->name, a->width, &a->scratch);
  jt_unbind_to(S, mark);
  return JITI_OK;
}

static char *describe(jiti_State *S, const unsigned char *bytes, size_t len, const char *name, int width) {
  size_t off = 0;
  if (jiti_entry_source(bytes, len, NULL, &off) < 0) return strdup("#<undecodable: its source as written is malformed>");
  TextArgs a = {bytes + off, len - off, name, width, NULL, NULL};
  char err[256];
  jiti_Status st = guarded(S, text_body, &a, err, sizeof err);
  jt_describe_free(a.scratch);
  if (st != JITI_OK) {
    free(a.out);
    size_t n = strlen(err) + 32;
    a.out = malloc(n);
    if (a.out) snprintf(a.out, n, "#<undecodable: %s>", err);
  }
  return a.out;
}

jiti_Status jiti_import_done(jiti_State *S, char *err, size_t errlen) {
  World *w = W(S);
  if (w->pending == JT_NIL) return JITI_OK;
  if (err) {
    jt_Buf b = {0};
    for (jt_V l = w->pending; jt_iscons(l); l = jt_cdr(l)) {
      jt_V second = jt_car(jt_cdr(jt_car(jt_car(l))));   /* (form . package) */
      char *n = jt_print_cstr(S, jt_iscons(second) ? jt_car(second) : second, true, 100);
      jt_buf_printf(&b, "%s%s", b.n ? ", " : "", n);
      free(n);
    }
    snprintf(err, errlen, "the types %.*s name types the world does not define", (int)b.n, b.p ? b.p : "");
    jt_buf_free(&b);
  }
  w->pending = JT_NIL;
  return JITI_ERROR;
}

char *jiti_entry_text(jiti_State *S, const unsigned char *bytes, size_t len) {
  return describe(S, bytes, len, NULL, 0);
}

char *jiti_entry_form(jiti_State *S, const char *name, const unsigned char *bytes, size_t len, int width) {
  return describe(S, bytes, len, name, width);
}

/* ------------------------------------------------------------- invariants */

typedef struct InvArgs { const char *name; const char *source; } InvArgs;

static jiti_Status inv_add_body(jt_State *S, void *ud) {
  InvArgs *a = ud;
  jt_V sym = jt_check_symbol(S, read_name(S, a->name));
  JT_PUSH(S, sym);
  jt_Reader R;
  jt_reader_init(&R, a->source, strlen(a->source));
  jt_V form = jt_read(S, &R);
  if (form == JT_EOF) jt_error(S, "the invariant's source is empty");
  JT_PUSH(S, form);
  if (jt_read(S, &R) != JT_EOF) jt_error(S, "the invariant's source must be exactly one form");
  record(S, JITI_ENTRY_INVARIANT, S->sp[-2], S->sp[-1]);
  JT_POP(S, 2);
  return JITI_OK;
}

jiti_Status jiti_invariant_add(jiti_State *S, const char *name, const char *source, char *err, size_t errlen) {
  InvArgs a = {name, source};
  return guarded(S, inv_add_body, &a, err, errlen);
}

static jiti_Status inv_rem_body(jt_State *S, void *ud) {
  jt_V sym = jt_check_symbol(S, read_name(S, ud));
  jt_V key = entry_key(S, JITI_ENTRY_INVARIANT, sym);
  JT_PUSH(S, key);
  bool had = jt_ckpt_map_rem(S, W(S)->registry, key);
  JT_POP(S, 1);
  return had ? JITI_OK : JITI_BADARG;
}

jiti_Status jiti_invariant_remove(jiti_State *S, const char *name) {
  return guarded(S, inv_rem_body, (void *)name, NULL, 0);
}

/* each: called for every invariant that fails, and the check goes on to
** the next (jiti_invariants_each); NULL: the check stops at the first. */
typedef struct CheckArgs {
  const jiti_Limits *limits;
  char *err;
  size_t errlen;
  jiti_InvariantFn each;
  void *ud;
} CheckArgs;

static jiti_Status check_body(jt_State *S, void *ud) {
  CheckArgs *c = ud;
  World *w = W(S);
  /* Collect the invariants first (sorted by name): evaluating them may
  ** touch the registry. */
  Item *items = NULL;
  size_t n = 0, cap = 0;
  jt_Hash *r = jt_hash_(w->registry);
  for (size_t i = 0; i < r->nentries; i++) {
    jt_V key = r->entries[i].key;
    if (key != JT_HASH_DELETED && jt_car(key) == jt_mkfix(JITI_ENTRY_INVARIANT))
      add_item(S, &items, &n, &cap, JITI_ENTRY_INVARIANT, key, jt_cdr(key));
  }
  if (n > 1) qsort(items, n, sizeof *items, item_cmp);  /* items is NULL when n == 0 */
  jiti_Status st = JITI_OK;
  for (size_t i = 0; i < n && (st == JITI_OK || c->each); i++) {
    bool found;
    jt_V form = jt_hash_get(S, w->registry, items[i].key, &found);
    if (!found) continue;
    jt_Jmp j;
    volatile jiti_Status one = JITI_OK;
    char why[700] = "";
    uint64_t fuel = S->fuel_left;
    if (c->limits && c->limits->fuel) S->fuel_left = c->limits->fuel;
    if (c->each) S->limit_tripped = 0;   /* each invariant from the whole of the limits */
    jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
    if (_setjmp(j.jb) == 0) {
      jt_V v = jt_eval(S, form);
      jt_jmp_pop(S, &j);
      if (v == JT_NIL) {
        one = JITI_ERROR;
        snprintf(why, sizeof why, "invariant %s returned NIL", items[i].name);
      }
    } else {
      one = j.code == JITI_LIMIT ? JITI_LIMIT : JITI_ERROR;
      char *m = jt_print_cstr(S, S->pending, false, 300);
      snprintf(why, sizeof why, "invariant %s %s: %s", items[i].name,
               one == JITI_LIMIT ? "exceeded a limit" : "signalled an error", m);
      free(m);
      S->pending = JT_NIL;
    }
    S->fuel_left = fuel;
    if (one == JITI_OK) continue;
    if (st == JITI_OK) {
      st = one;
      if (c->err) snprintf(c->err, c->errlen, "%s", why);
    }
    if (c->each) c->each(c->ud, items[i].name, one, why);
  }
  free_items(items, n);
  return st;
}

/* The invariants run under the whole of the given limits — heap, depth and
** output as well as fuel — so an invariant passes or trips the same way in
** the kernel, an offline change and a recovery. */
static jiti_Status invariants_run(jiti_State *S, const jiti_Limits *limits, char *err, size_t errlen,
                                  jiti_InvariantFn each, void *ud) {
  CheckArgs c = {limits, err, errlen, each, ud};
  if (err && errlen) err[0] = 0;
  jiti_Limits saved = S->limits;
  size_t output_used = S->output_used;
  if (limits) S->limits = *limits;
  S->output_used = 0;
  S->limit_tripped = 0;
  jiti_Status st = guarded(S, check_body, &c, err, errlen);
  S->limits = saved;
  S->output_used = output_used;
  return st;
}

jiti_Status jiti_invariants_check(jiti_State *S, const jiti_Limits *limits, char *err, size_t errlen) {
  return invariants_run(S, limits, err, errlen, NULL, NULL);
}

jiti_Status jiti_invariants_each(jiti_State *S, const jiti_Limits *limits, jiti_InvariantFn each, void *ud) {
  return invariants_run(S, limits, NULL, 0, each, ud);
}

void jiti_entry_hash(jiti_EntryKind kind, const char *name, const unsigned char *bytes,
                     size_t len, char out[65]) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  const char *k = jiti_entry_kind_name(kind);
  SHA256_Update(&ctx, k, strlen(k) + 1);
  SHA256_Update(&ctx, name, strlen(name) + 1);
  SHA256_Update(&ctx, bytes, len);
  SHA256_Final(md, &ctx);
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  out[64] = 0;
}

size_t jiti_world_count(jiti_State *S, jiti_EntryKind kind) {
  World *w = W(S);
  if (kind == JITI_ENTRY_DATA) return jt_hash_(w->data)->count;
  if (kind == JITI_ENTRY_FILE) return jt_hash_(w->files)->count;
  size_t n = 0;
  jt_Hash *r = jt_hash_(w->registry);
  for (size_t i = 0; i < r->nentries; i++)
    if (r->entries[i].key != JT_HASH_DELETED && jt_car(r->entries[i].key) == jt_mkfix(kind)) n++;
  return n;
}

typedef struct ReserveArgs { jiti_EntryKind kind; size_t n; } ReserveArgs;

static jiti_Status reserve_body(jt_State *S, void *ud) {
  ReserveArgs *a = ud;
  jt_V table = a->kind == JITI_ENTRY_DATA ? W(S)->data : a->kind == JITI_ENTRY_FILE ? W(S)->files : W(S)->registry;
  jt_hash_reserve(S, table, jt_hash_(table)->count + a->n);
  return JITI_OK;
}

jiti_Status jiti_world_reserve(jiti_State *S, jiti_EntryKind kind, size_t n) {
  ReserveArgs a = {kind, n};
  if ((unsigned)kind >= JITI_ENTRY_KIND_COUNT) return JITI_BADARG;
  return guarded(S, reserve_body, &a, NULL, 0);
}

/* ------------------------------------------------------ lazy definitions */

typedef struct AnalyzeArgs { char name[256]; const char *what; } AnalyzeArgs;

/* The unanalysed closures a definition kept beside a symbol's cells
** (meta.c) holds: its function itself, or a closure of the library's
** whose environment holds it (a long DEFSETF's writer).  Each is pushed on
** *todo as (kind . (name . closure)). */
static void note_lazy_meta(jt_State *S, jt_V *todo, int kind, jt_V name, jt_V fn) {
  jt_V *base = S->sp;
  JT_PUSH(S, name);
  if (jt_is(fn, JT_TCLOSURE) && jt_clo_(fn)->lam != NULL && jt_is(jt_clo_(fn)->env, JT_TFRAME)) {
    jt_V frame = jt_clo_(fn)->env;
    fn = JT_NIL;
    for (uint32_t i = 0; i < jt_o(frame)->aux; i++) {
      jt_V x = ((jt_Frame *)jt_o(frame))->slots[i];
      if (jt_is(x, JT_TCLOSURE) && jt_clo_(x)->lam == NULL) fn = x;
    }
  }
  if (jt_is(fn, JT_TCLOSURE) && jt_clo_(fn)->lam == NULL) {
    JT_PUSH(S, fn);
    jt_V item = jt_cons(S, base[0], fn);
    JT_PUSH(S, item);
    item = jt_cons(S, jt_mkfix(kind), item);
    JT_PUSH(S, item);
    *todo = jt_cons(S, item, *todo);
  }
  S->sp = base;
}

static jiti_Status analyze_body(jt_State *S, void *ud) {
  AnalyzeArgs *a = ud;
  World *w = W(S);
  /* The closures first (analysis runs macros, which may change the
  ** registry), in registry order: the order they were imported in. */
  jt_V todo = JT_NIL;
  JT_ROOT(S, todo);
  jt_Hash *r = jt_hash_(w->registry);
  for (size_t i = r->nentries; i-- > 0;) {
    jt_V key = jt_hash_(w->registry)->entries[i].key;
    if (key == JT_HASH_DELETED) continue;
    int kind = (int)jt_fixval(jt_car(key));
    jt_V name = jt_cdr(key);
    if (kind == JITI_ENTRY_FUNCTION || kind == JITI_ENTRY_MACRO) {
      jt_V fn = jt_iscons(name) ? jt_symobj(S, jt_car(jt_cdr(name)))->setf_fn : jt_symobj(S, name)->function;
      if (jt_is(fn, JT_TCLOSURE) && jt_clo_(fn)->lam == NULL) {
        jt_V item = jt_cons(S, name, fn);
        JT_PUSH(S, item);
        item = jt_cons(S, jt_mkfix((jt_o(fn)->flags & JT_CLO_MACRO) ? JITI_ENTRY_MACRO : JITI_ENTRY_FUNCTION), item);
        JT_POP(S, 1);
        todo = jt_cons(S, item, todo);
      }
    } else if (kind == JITI_ENTRY_TYPE || kind == JITI_ENTRY_SETF_EXPANDER || kind == JITI_ENTRY_COMPILER_MACRO) {
      /* their functions are made unanalysed by an import too (defs.c) */
      bool setf = jt_iscons(name);
      jt_V sym = setf ? jt_car(jt_cdr(name)) : name;
      if (!jt_issymbol(sym)) continue;
      const char *k = kind == JITI_ENTRY_TYPE ? "%DEFTYPE"
                    : kind == JITI_ENTRY_SETF_EXPANDER ? "%SETF-EXPANDER"
                    : setf ? "%SETF-COMPILER-MACRO" : "%COMPILER-MACRO";
      note_lazy_meta(S, &todo, kind, name, jt_meta_get(S, sym, jt_intern(S, k)));
    }
  }
  for (jt_V l = todo; l != JT_NIL; l = jt_cdr(l)) {
    jt_V item = jt_car(l);
    char *name = jt_print_cstr(S, jt_car(jt_cdr(item)), true, sizeof a->name - 1);
    snprintf(a->name, sizeof a->name, "%s", name);
    free(name);
    a->what = kind_names[jt_fixval(jt_car(item))];
    jt_closure_lambda(S, jt_cdr(jt_cdr(item)));
  }
  JT_UNROOT(S, 1);
  return JITI_OK;
}

jiti_Status jiti_world_analyze(jiti_State *S, const jiti_Limits *limits, char *err, size_t errlen) {
  AnalyzeArgs a = {"", "function"};
  char why[1024];
  uint64_t fuel = S->fuel_left;
  if (limits && limits->fuel) S->fuel_left = limits->fuel;
  jiti_Status st = guarded(S, analyze_body, &a, why, sizeof why);
  S->fuel_left = fuel;
  if (st != JITI_OK && err) snprintf(err, errlen, "cannot analyse %s %s: %s", a.what, a.name, why);
  return st;
}

void jiti_world_enable(jiti_State *S) { W(S)->enabled = true; }

/* ------------------------------------------------ for reimport.c's proof */

/* reimport.c proves, before a revision is published, that its entries
** import back: with the import's own reading of names and its own check of
** forms, over the world's maps. */
bool jt_world_recording(jt_State *S) { return W(S) && W(S)->enabled; }
bool jt_world_importing(jt_State *S) { return W(S) && W(S)->importing; }
jt_V jt_world_registry(jt_State *S) { return W(S)->registry; }
jt_V jt_world_data(jt_State *S) { return W(S)->data; }
jt_V jt_world_files(jt_State *S) { return W(S)->files; }
jt_V jt_world_read_name(jt_State *S, const char *name) { return read_name(S, name); }
bool jt_world_entry_form_ok(jt_State *S, jiti_EntryKind kind, jt_V name, jt_V form) {
  return entry_form_ok(S, kind, name, form);
}
jiti_Status jt_world_guarded(jt_State *S, jiti_Status (*fn)(jt_State *, void *), void *ud, char *err,
                             size_t errlen) {
  return guarded(S, fn, ud, err, errlen);
}

/* ------------------------------------------------------ class redefinition */

/* A class was redefined: bring every instance reachable from managed state
** (variables, property lists, :class slots, data rows) to the class's new
** shape now, inside the transaction.  A data row whose instances changed is
** logged as changed, so the commit exports it; the instances themselves
** were saved by the write barrier, so a restore brings back their old
** shape. */
void jt_world_update_instances(jt_State *S) {
  World *w = W(S);
  if (!w) return;
  /* the update methods run user code, which may change either table:
  ** re-read the entries at every step */
  for (size_t i = 0; i < jt_hash_(w->registry)->nentries; i++) {
    jt_V key = jt_hash_(w->registry)->entries[i].key;
    if (key == JT_HASH_DELETED) continue;
    if (jt_car(key) == jt_mkfix(JITI_ENTRY_VARIABLE))
      jt_class_update_reachable(S, jt_symobj(S, jt_cdr(key))->value);
    else if (jt_car(key) == jt_mkfix(JITI_ENTRY_PLIST))   /* a property list holds values as a variable does */
      jt_class_update_reachable(S, jt_symobj(S, jt_cdr(key))->plist);
    else if (jt_car(key) == jt_mkfix(JITI_ENTRY_CLASS)) {   /* and so do the :class slots exported with a class */
      jt_V cls = jt_find_class(S, jt_cdr(key));
      if (jt_is(cls, JT_TCLASS)) jt_class_update_reachable(S, jt_class_shared_cells(S, cls));
    }
  }
  for (size_t i = 0; i < jt_hash_(w->data)->nentries; i++) {
    jt_HashEntry e = jt_hash_(w->data)->entries[i];
    if (e.key == JT_HASH_DELETED || !jt_isptr(e.val)) continue;
    JT_PUSH(S, e.key);
    JT_PUSH(S, e.val);
    if (jt_class_update_reachable(S, e.val)) jt_ckpt_map_put(S, w->data, S->sp[-2], S->sp[-1]);
    JT_POP(S, 2);
  }
}

/* ------------------------------------------------------------- data table */

/* A private copy through the canonical encoding: rows have value semantics. */
static jt_V copy_value(jt_State *S, jt_V v, const char *what) {
  jt_Buf *b = &W(S)->copybuf;
  b->n = 0;
  const char *why = NULL;
  if (!jt_encode(S, v, b, &why)) {
    if (b->cap > ((size_t)1 << 20)) jt_buf_free(b);
    int limit = jt_encode_limit(why);
    if (limit >= 0) jt_limit_exceeded(S, limit);
    char *p = jt_print_cstr(S, v, true, 200);
    snprintf(S->msgbuf, sizeof S->msgbuf, "%s: %s is not storable in the world: %s", what, p, why);
    free(p);
    jt_error(S, "%s", S->msgbuf);
  }
  jt_V r = jt_decode(S, (const unsigned char *)b->p, b->n);
  if (b->cap > ((size_t)1 << 20)) jt_buf_free(b);  /* keep a small one for the next copy */
  return r;
}

JT_FN(f_world_get) {
  bool found;
  jt_V v = jt_hash_get(S, W(S)->data, argv[0], &found);
  if (!found) return jt_values2(S, argc > 1 ? argv[1] : JT_NIL, JT_NIL);
  v = copy_value(S, jt_cdr(v), "world-get");
  JT_READ(S, JITI_READ_ROW, argv[0], JT_NIL, v);
  return jt_values2(S, v, JT_T);
}

JT_FN(f_world_put) {
  jt_V key = copy_value(S, argv[0], "world-put");
  JT_PUSH(S, key);
  jt_V val = copy_value(S, argv[1], "world-put");
  row_put(S, S->sp[-1], val, -1);
  JT_POP(S, 1);
  return argv[1];
}

JT_FN(f_world_rem) { return jt_bool(jt_ckpt_map_rem(S, W(S)->data, argv[0])); }

/* A row on the value stack while world-keys sorts: its seq and its key. */
typedef struct RowAt { jt_V seq, key; } RowAt;

static int row_cmp(const void *a, const void *b) {
  intptr_t x = jt_fixval(((const RowAt *)a)->seq), y = jt_fixval(((const RowAt *)b)->seq);
  return x < y ? -1 : x > y;
}

JT_FN(f_world_keys) {
  /* In insertion order: by seq.  The table's own order is that order until
  ** an import (rows come in the store's order) or a restore (a removed row
  ** goes back at the end) changes it; then the copies are sorted, in place
  ** on the value stack (nothing to free if a copy signals). */
  jt_V *base = S->sp;
  size_t n = 0;
  bool sorted = true;
  for (size_t i = 0; i < jt_hash_(W(S)->data)->nentries; i++) {
    jt_Hash *d = jt_hash_(W(S)->data);
    if (d->entries[i].key == JT_HASH_DELETED) continue;
    jt_V seq = jt_car(d->entries[i].val);
    if (n && jt_fixval(seq) < jt_fixval(base[2 * n - 2])) sorted = false;
    JT_PUSH(S, seq);
    jt_V k = copy_value(S, jt_hash_(W(S)->data)->entries[i].key, "world-keys");
    JT_PUSH(S, k);
    n++;
  }
  if (!sorted) qsort(base, n, sizeof(RowAt), row_cmp);
  for (size_t k = 0; k < n; k++) base[k] = base[2 * k + 1];
  S->sp = base + n;
  jt_V l = jt_list_from(S, (int)n, base);
  S->sp = base;
  return l;
}

JT_FN(f_world_count) { return jt_mkfix(jt_hash_(W(S)->data)->count); }

/* (%record-type name form): defstruct and define-condition expansions call
** this so the type is one structure entry (its accessors come with it). */
JT_FN(f_record_type) {
  jt_check_kernel_caller(S);  /* records any form as the type's definition */
  world_define(S, jt_check_symbol(S, argv[0]), JT_DEF_TYPE, argv[1], JT_NIL);
  return argv[0];
}

/* (%world-recording-p) True when the state keeps a world (its changes are
** recorded as entries): what a world could not store is refused then. */
JT_FN(f_world_recording_p) { JT_UNUSED_ARGS; return jt_bool(jt_world_recording(S)); }

static const jt_Reg world_fns[] = {
  {"%WORLD-RECORDING-P", f_world_recording_p, 0, 0, "(%world-recording-p) True when the state keeps a world."},
  {"WORLD-GET", f_world_get, 1, 2, "(world-get key &optional default) The data row KEY (a copy) and whether it exists."},
  {"WORLD-PUT", f_world_put, 2, 2, "(world-put key value) Store a copy of VALUE as data row KEY."},
  {"WORLD-REM", f_world_rem, 1, 1, "(world-rem key) Remove data row KEY; true if it existed."},
  {"WORLD-KEYS", f_world_keys, 0, 0, "(world-keys) The keys of the data table, in insertion order."},
  {"WORLD-COUNT", f_world_count, 0, 0, "(world-count) The number of data rows."},
  {"%RECORD-TYPE", f_record_type, 2, 2, "(%record-type name form) Record a type definition."},
  {NULL, NULL, 0, 0, NULL}
};

static void world_free(jt_State *S) {
  World *w = W(S);
  if (!w) return;
  jt_buf_free(&w->copybuf);
  free(w);
  S->world = NULL;
}

void jt_open_world(jt_State *S) {
  World *w = calloc(1, sizeof *w);
  if (!w) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  w->registry = w->data = w->defining = w->pending = w->sources = w->def_form = w->import_digest = w->fresh = w->files = JT_NIL;
  S->world = w;
  S->world_mark = world_mark;
  S->world_define = world_define;
  S->world_free = world_free;
  S->world_form_done = world_form_done;
  w->registry = jt_make_hash(S, JT_HASH_EQUAL, 64);
  jt_o(w->registry)->flags |= JT_HASH_MANAGED;
  w->data = jt_make_hash(S, JT_HASH_EQUAL, 64);
  jt_o(w->data)->flags |= JT_HASH_MANAGED;
  w->sources = jt_make_hash(S, JT_HASH_EQUAL, 64);
  jt_o(w->sources)->flags |= JT_HASH_MANAGED;
  w->files = jt_make_hash(S, JT_HASH_EQUAL, 16);
  jt_o(w->files)->flags |= JT_HASH_MANAGED;
  w->defining = jt_intern(S, "%DEFINING-TYPE");
  jt_defglobal(S, "%DEFINING-TYPE", JT_NIL);
  jt_register(S, world_fns);
}
