/*
** reimport.c — what a world publishes imports back as the same world.
**
** A revision holds source and data, and a worker starting from it imports
** them (world.c, jiti_import_entry).  Exporting an entry only shows that
** it can be written; this file shows, before a revision is published, that
** what was written reads back as the entry itself (jiti_entry_verify), so
** that an accepted change can never leave a store that faults at the next
** start.  The proof is a real round trip that evaluates nothing: the name
** is read as the import reads it and must name this very entry, and the
** bytes are decoded and encoded again, and must come out the same.
**
** Some changes spoil entries that stay as they were stored: deleting a
** package the stored entries name symbols of, uninterning such a symbol,
** redefining a structure under its stored instances.  Those are refused
** when they are made, after a walk of managed state (jt_world_mentions).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_world.h"
#include "jt_clos.h"

/* ------------------------------------------------------------ the proof */

typedef struct VerifyArgs {
  jiti_EntryKind kind;
  const char *name;
  const unsigned char *bytes;
  size_t len;
} VerifyArgs;

static JT_NORETURN void refuse(jt_State *S, const char *fmt, const char *arg) {
  snprintf(S->msgbuf, sizeof S->msgbuf, fmt, arg);
  jt_error(S, "%s", S->msgbuf);
}

/* Why a name did not read back as itself, for the reason given. */
static const char *name_trouble(const char *name) {
  if (strstr(name, "#:"))
    return "it is named by an uninterned symbol, which nothing can name again once stored "
           "(name it with a symbol of a package)";
  return "its name does not read back as the name it is stored under (a name must be printable and "
         "readable in full: no NUL character, no unreadable object)";
}

/* Decode the values of an entry's encoding from *pos to the end and encode
** each again: the same bytes, or the entry is refused.  The decoded values
** are left on the value stack, first to last; returns how many. */
static int decode_again(jt_State *S, const VerifyArgs *a, size_t pos) {
  jt_Buf again = {0};
  int n = 0;
  while (pos < a->len) {
    size_t from = pos;
    jt_V v = jt_decode_at(S, a->bytes, a->len, &pos);
    JT_PUSH(S, v);
    n++;
    const char *why = NULL;
    again.n = 0;
    bool ok = jt_encode(S, v, &again, &why);
    bool same = ok && again.n == pos - from && memcmp(again.p, a->bytes + from, again.n) == 0;
    jt_buf_free(&again);
    if (!ok) refuse(S, "what it reads back as cannot be stored again: %s", why);
    if (!same)
      refuse(S, "%s", "it reads back as a different value (an instance of a structure defined again "
                      "since it was made, or a symbol that reads as another)");
  }
  return n;
}

/* The name, read as the import reads it; JT_NOVALUE when it does not read. */
static jt_V read_back(jt_State *S, const char *text) {
  jt_Jmp j;
  jt_jmp_push(S, &j, JT_JMP_TOP, JT_NIL);
  if (_setjmp(j.jb) == 0) {
    jt_V name = jt_world_read_name(S, text);
    jt_jmp_pop(S, &j);
    return name;
  }
  S->pending = JT_NIL;
  return JT_NOVALUE;
}

static jiti_Status verify_body(jt_State *S, void *ud) {
  const VerifyArgs *a = ud;
  jt_V *base = S->sp;
  if (a->len < 1) jt_error(S, "empty entry encoding");
  size_t pos = 1;
  if (a->kind == JITI_ENTRY_FILE) {   /* a file: its date, then its octets as they are */
    if (a->bytes[0] != 'P' || jt_get_uleb(a->bytes, a->len, &pos) == UINT64_MAX || pos > a->len)
      jt_error(S, "not a file encoding");
    jt_V name = read_back(S, a->name);
    if (name == JT_NOVALUE || !jt_isstring(name)) refuse(S, "%s", name_trouble(a->name));
    JT_PUSH(S, name);
    bool found;
    jt_hash_get(S, jt_world_files(S), name, &found);
    if (!found) refuse(S, "%s", name_trouble(a->name));
    S->sp = base;
    return JITI_OK;
  }
  if (a->bytes[0] == 'Q') {   /* a data row: its position, then key and value */
    if (jt_get_uleb(a->bytes, a->len, &pos) == UINT64_MAX) jt_error(S, "bad row position");
  }
  int n = decode_again(S, a, pos);
  jt_V *vals = base;
  if (n < 1) jt_error(S, "an entry encoding without a value");
  jt_V name = read_back(S, a->name);
  if (name == JT_NOVALUE) refuse(S, "%s", name_trouble(a->name));
  JT_PUSH(S, name);
  bool found;
  if (a->kind == JITI_ENTRY_DATA) {
    /* the key must find this row again, and its name must be that key */
    if (n != 2) jt_error(S, "a data row encoding without a key and a value");
    jt_hash_get(S, jt_world_data(S), vals[0], &found);
    if (!found)
      refuse(S, "%s", "its key would not find the row again after an import (EQUAL compares a "
                      "vector, a structure, an instance or an uninterned symbol by identity: use "
                      "a number, character, string, interned symbol, or a list of them)");
    if (!jt_equal(S, name, vals[0])) refuse(S, "%s", name_trouble(a->name));
  } else {
    jt_V key = jt_cons(S, jt_mkfix(a->kind), name);
    jt_hash_get(S, jt_world_registry(S), key, &found);
    if (!found) refuse(S, "%s", name_trouble(a->name));
    switch (a->kind) {
      case JITI_ENTRY_VARIABLE:
        if (name == JT_SYM(S, PACKAGE_VAR) && jt_find_package(S, vals[0]) != jt_world_current_package(S))
          jt_error(S, "the current package does not read back");
        break;
      case JITI_ENTRY_PACKAGE: {
        jt_V form = vals[0];
        if (!jt_iscons(form) || jt_car(form) != jt_intern(S, "DEFPACKAGE") || !jt_iscons(jt_cdr(form)) ||
            !jt_equal(S, jt_car(jt_cdr(form)), name))
          jt_error(S, "its definition does not name it");
        break;
      }
      case JITI_ENTRY_DATA: case JITI_ENTRY_INVARIANT:
        break;
      case JITI_ENTRY_PLIST:   /* its form is made from the list, which a program can set to anything */
        if (!jt_world_entry_form_ok(S, a->kind, name, vals[0]))
          refuse(S, "%s", "its property list is not a proper list of indicators and values (an even number "
                          "of elements), which GET could not read and an import would refuse");
        break;
      case JITI_ENTRY_STRUCTURE:   /* its form, then the package it was defined in if not CL-USER */
        if (n > 2 || (n == 2 && (!jt_isstring(vals[1]) || jt_find_package(S, vals[1]) == JT_NIL)))
          jt_error(S, "the package its structure was defined in does not read back");
        if (!jt_world_entry_form_ok(S, a->kind, name, vals[0]))
          refuse(S, "%s", "its form is not the defining form of its name once read back");
        break;
      default:
        /* a source entry: the import evaluates its form only when it is
        ** the defining form of this very name */
        if (!jt_world_entry_form_ok(S, a->kind, name, vals[0]))
          refuse(S, "%s", "its form is not the defining form of its name once read back");
    }
  }
  S->sp = base;
  return JITI_OK;
}

jiti_Status jiti_entry_verify(jiti_State *S, jiti_EntryKind kind, const char *name, const unsigned char *bytes,
                              size_t len, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if ((unsigned)kind >= JITI_ENTRY_KIND_COUNT || !name || !bytes) {
    if (err) snprintf(err, errlen, "no entry to verify");
    return JITI_BADARG;
  }
  /* the source as written in front is shown, never imported: the
  ** canonical encoding after it is what must import back */
  size_t off;
  if (jiti_entry_source(bytes, len, NULL, &off) < 0) {
    if (err) snprintf(err, errlen, "its source as written is malformed");
    return JITI_ERROR;
  }
  VerifyArgs a = {kind, name, bytes + off, len - off};
  /* decoding is work the export already paid for: it runs unmetered */
  jiti_Limits saved = S->limits;
  uint64_t fuel = S->fuel_left;
  S->limits.fuel = 0;
  S->limits.heap = 0;
  jiti_Status st = jt_world_guarded(S, verify_body, &a, err, errlen);
  S->limits = saved;
  S->fuel_left = fuel;
  return st == JITI_OK ? JITI_OK : JITI_ERROR;
}

/* ------------------------------------------------- walking managed state */

/* Every symbol, structure and instance inside managed state, each shared
** object visited once (an EQ table of the containers seen), conses
** followed along their cdrs (a circular tail is seen once). */
typedef struct Walk { jt_MentionFn hit; void *ud; jt_V seen; bool found; } Walk;

static void walk(jt_State *S, Walk *w, jt_V v, int depth) {
  if (w->found || !jt_isptr(v) || depth > 10000) return;
  jt_V *base = S->sp;
  JT_PUSH(S, v);
  switch (jt_type(v)) {
    case JT_TSYMBOL:
      w->found = w->hit(S, v, w->ud);
      break;
    case JT_TCONS: {
      jt_V slow = v;
      size_t n = 0;
      for (jt_V l = v; jt_iscons(l) && !w->found; l = jt_cdr(l)) {
        JT_PUSH(S, l);
        walk(S, w, jt_car(l), depth + 1);
        l = S->sp[-1];
        JT_POP(S, 1);
        if ((++n & 1) == 0) {
          slow = jt_cdr(slow);
          if (slow == jt_cdr(l)) break;   /* a circular tail: every cell seen */
        }
        if (!jt_iscons(jt_cdr(l))) walk(S, w, jt_cdr(l), depth + 1);
      }
      break;
    }
    case JT_TVECTOR:
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      for (size_t i = 0; i < jt_vec_(base[0])->len && !w->found; i++)
        walk(S, w, jt_vec_(base[0])->items[i], depth + 1);
      break;
    case JT_TARRAY: {
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      jt_V x;
      for (size_t i = 0, n = jt_array_total(base[0]); i < n && !w->found; i++)
        if (jt_array_peek(base[0], i, &x)) walk(S, w, x, depth + 1);
      break;
    }
    case JT_THASH:
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      for (size_t i = 0; i < jt_hash_(base[0])->nentries && !w->found; i++) {
        jt_HashEntry e = jt_hash_(base[0])->entries[i];
        if (e.key == JT_HASH_DELETED) continue;
        walk(S, w, e.key, depth + 1);
        walk(S, w, jt_hash_(base[0])->entries[i].val, depth + 1);
      }
      break;
    case JT_TSTRUCT:
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      w->found = w->hit(S, v, w->ud);
      for (uint32_t i = 0; i < jt_o(base[0])->aux && !w->found; i++)
        walk(S, w, jt_struct_(base[0])->slots[i], depth + 1);
      break;
    case JT_TINSTANCE:
      if (!jt_is(jt_vec_(jt_inst_(v)->wrapper)->items[JT_W_CLASS], JT_TCLASS)) break;  /* a stand-in */
      if (!jt_world_first_visit(S, &w->seen, v)) break;
      w->found = w->hit(S, v, w->ud);
      for (size_t i = 0; i < jt_vec_(jt_inst_(base[0])->slots)->len && !w->found; i++)
        walk(S, w, jt_vec_(jt_inst_(base[0])->slots)->items[i], depth + 1);
      break;
    default:
      break;
  }
  S->sp = base;
}

/* The entry as text, for a reason: "function APP::RUN". */
static char *entry_text(jt_State *S, int kind, jt_V name) {
  char *n = jt_print_canonical(S, name, 200);
  size_t len = strlen(n) + 32;
  char *t = malloc(len);
  if (t) snprintf(t, len, "%s %s", jiti_entry_kind_name((jiti_EntryKind)kind), n);
  free(n);
  return t;
}

char *jt_world_mentions(jt_State *S, jt_MentionFn hit, void *ud, bool names_only) {
  if (!S->world) return NULL;
  Walk w = {hit, ud, JT_NIL, false};
  JT_ROOT(S, w.seen);
  char *where = NULL;
  /* the entries (their names, sources, values): re-read the table at each
  ** step, since the walk allocates (its table of objects seen) */
  for (size_t i = 0; i < jt_hash_(jt_world_registry(S))->nentries && !where; i++) {
    jt_HashEntry e = jt_hash_(jt_world_registry(S))->entries[i];
    if (e.key == JT_HASH_DELETED) continue;
    int kind = (int)jt_fixval(jt_car(e.key));
    jt_V name = jt_cdr(e.key);
    walk(S, &w, name, 0);
    if (names_only)
      ;
    else if (kind == JITI_ENTRY_VARIABLE && jt_issymbol(name) && name != JT_SYM(S, PACKAGE_VAR))
      walk(S, &w, jt_symobj(S, name)->value, 0);
    else if (kind == JITI_ENTRY_PLIST && jt_issymbol(name))   /* the entry is the symbol's list as it is */
      walk(S, &w, jt_symobj(S, name)->plist, 0);
    else if (kind == JITI_ENTRY_CLASS) {
      walk(S, &w, e.val, 0);
      jt_V cls = jt_find_class(S, name);
      if (jt_is(cls, JT_TCLASS)) walk(S, &w, jt_class_shared_cells(S, cls), 0);
    } else if (kind != JITI_ENTRY_PACKAGE && kind != JITI_ENTRY_VARIABLE)
      walk(S, &w, e.val, 0);
    if (w.found) where = entry_text(S, kind, jt_cdr(jt_hash_(jt_world_registry(S))->entries[i].key));
  }
  for (size_t i = 0; i < jt_hash_(jt_world_data(S))->nentries && !where; i++) {
    jt_HashEntry e = jt_hash_(jt_world_data(S))->entries[i];
    if (e.key == JT_HASH_DELETED) continue;
    walk(S, &w, e.key, 0);
    if (!names_only) walk(S, &w, jt_cdr(jt_hash_(jt_world_data(S))->entries[i].val), 0);
    if (w.found) where = entry_text(S, JITI_ENTRY_DATA, jt_hash_(jt_world_data(S))->entries[i].key);
  }
  JT_UNROOT(S, 1);
  return where;
}
