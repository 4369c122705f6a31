/*
** package.c — packages and the symbol table.
**
** The symbol table.  One open-addressing table of the state holds an entry
** (package index, symbol, flags) for every symbol present in a package:
** once for its home package, once more for each package it was imported
** into.  An entry's hash is the symbol name's hash mixed with the package
** index, so "the symbol named N present in P" is one probe sequence, and
** the reader looks a name up without making a string.  The flag
** JT_SE_EXTERNAL marks the symbols a package exports.
**
** Packages are heap objects (jt_Package) holding names and relations: use
** list, used-by list, shadowing symbols.  Their index (the home recorded in
** each symbol) is handed out once and never reused, so a symbol never
** changes package because some other package was deleted and recreated.
** The registry of names (package_names) is a managed map: its changes are
** logged and a restored checkpoint undoes them at the cost of the change.
** Changes of the symbol table are logged the same way (jt_ckpt_log_undo);
** a package object's own fields pass the write barrier like any object's.
** So a transaction that made a package, imported, exported or uninterned
** leaves no trace when it is rolled back.
**
** Fixed packages: COMMON-LISP (the 978 standard symbols, locked), KEYWORD,
** COMMON-LISP-USER (the default *package*, using COMMON-LISP and JITI), JITI
** (jiti's extensions and the library's own names, locked) and the unnamed
** internal home of the kernel's helpers (see jt_obj.h), which no name
** reaches.  While the state is built everything is interned in
** COMMON-LISP; jt_packages_finish then moves every name that is not a
** standard one to JITI.
**
** Errors are package-errors (with the package) for name conflicts, locked
** packages and unknown package names.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_grow.h"
#include "jt_world.h"

extern const char *const jt_cl_symbol_names[];

/* --------------------------------------------------------------- hashing */

static uint32_t hash_name(const char *s, size_t n)
{
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static uint32_t entry_hash(uint32_t namehash, int pkg)
{
  uint32_t h = namehash ^ ((uint32_t)pkg * 0x9E3779B1u);
  return h ^ (h >> 15);
}

uint32_t jt_symbol_name_hash(const char *name, size_t len) { return hash_name(name, len); }

/* --------------------------------------------------------- symbol table */

#define EMPTY ((jt_V)0)
#define GONE JT_UNBOUND

static bool named(jt_V sym, const char *name, size_t len)
{
  const char *c = jt_sym_(sym)->cname;
  return strncmp(c, name, len) == 0 && c[len] == 0;
}

/* The slot of the entry for the symbol named `name` present in `pkg`, or
** SIZE_MAX. */
static size_t slot_find(jt_State *S, const char *name, size_t len, uint32_t nh, int pkg)
{
  if (!S->symcap) return SIZE_MAX;
  uint32_t h = entry_hash(nh, pkg);
  size_t mask = S->symcap - 1;
  for (size_t k = h & mask;; k = (k + 1) & mask) {
    jt_SymEntry *e = &S->symtab[k];
    if (e->sym == EMPTY) return SIZE_MAX;
    if (e->sym != GONE && e->hash == h && e->pkg == pkg && named(e->sym, name, len)) return k;
  }
}

static void table_resize(jt_State *S, size_t ncap, bool quiet)
{
  jt_SymEntry *t = calloc(ncap, sizeof *t);
  if (!t) {
    if (quiet) abort();   /* a restore cannot signal */
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  }
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE) continue;
    size_t k = e->hash & (ncap - 1);
    while (t[k].sym != EMPTY) k = (k + 1) & (ncap - 1);
    t[k] = *e;
  }
  free(S->symtab);
  S->symtab = t;
  S->symcap = ncap;
  S->nsymdel = 0;
}

/* Add the entry; the caller made sure it is not there.  Never signals when
** `quiet` (a restore undoing a removal): a failed allocation aborts. */
static void slot_insert(jt_State *S, jt_V sym, int pkg, uint16_t flags, bool quiet)
{
  if ((S->nsyms + S->nsymdel + 1) * 2 > S->symcap) {
    /* rehash, dropping removed entries; at most a quarter full after it */
    size_t ncap = S->symcap ? S->symcap : 4096;
    while ((S->nsyms + 1) * 4 > ncap) ncap *= 2;
    table_resize(S, ncap, quiet);
  }
  jt_Symbol *s = jt_sym_(sym);
  uint32_t h = entry_hash(s->hash, pkg);
  size_t mask = S->symcap - 1, k = h & mask;
  while (S->symtab[k].sym != EMPTY && S->symtab[k].sym != GONE) k = (k + 1) & mask;
  if (S->symtab[k].sym == GONE) S->nsymdel--;
  S->symtab[k] = (jt_SymEntry){sym, h, (uint16_t)pkg, flags};
  S->nsyms++;
}

static jt_SymEntry *entry_of(jt_State *S, jt_V sym, int pkg)
{
  jt_Symbol *s = jt_sym_(sym);
  size_t k = slot_find(S, s->cname, strlen(s->cname), s->hash, pkg);
  if (k == SIZE_MAX || S->symtab[k].sym != sym) return NULL;
  return &S->symtab[k];
}

static void slot_remove(jt_State *S, jt_SymEntry *e)
{
  e->sym = GONE;
  S->nsyms--;
  S->nsymdel++;
}

/* Undo records (jt_ckpt_log_undo): a = symbol, c = pkg | flags << 16. */
static void undo_insert(jt_State *S, jt_V sym, jt_V unused, uintptr_t c)
{
  (void)unused;
  jt_SymEntry *e = entry_of(S, sym, (int)(c & 0xFFFF));
  if (e) slot_remove(S, e);
}

static void undo_remove(jt_State *S, jt_V sym, jt_V unused, uintptr_t c)
{
  (void)unused;
  if (!entry_of(S, sym, (int)(c & 0xFFFF)))
    slot_insert(S, sym, (int)(c & 0xFFFF), (uint16_t)(c >> 16), true);
}

static void undo_flags(jt_State *S, jt_V sym, jt_V unused, uintptr_t c)
{
  (void)unused;
  jt_SymEntry *e = entry_of(S, sym, (int)(c & 0xFFFF));
  if (e) e->flags = (uint16_t)(c >> 16);
}

/* The three changes of the table, each undone by a restored checkpoint. */
static void present_add(jt_State *S, jt_V sym, int pkg, uint16_t flags)
{
  slot_insert(S, sym, pkg, flags, false);
  jt_ckpt_log_undo(S, undo_insert, sym, JT_NIL, (uintptr_t)pkg);
}

static void present_remove(jt_State *S, jt_SymEntry *e)
{
  jt_V sym = e->sym;
  uintptr_t c = e->pkg | ((uintptr_t)e->flags << 16);
  slot_remove(S, e);
  jt_ckpt_log_undo(S, undo_remove, sym, JT_NIL, c);
}

static void present_flags(jt_State *S, jt_SymEntry *e, uint16_t flags)
{
  jt_ckpt_log_undo(S, undo_flags, e->sym, JT_NIL, e->pkg | ((uintptr_t)e->flags << 16));
  e->flags = flags;
}

/* ------------------------------------------------------------- symbols */

static jt_V immediate_of(jt_State *S, jt_V sym)
{
  if (sym == S->nil_sym) return JT_NIL;
  if (sym == S->t_sym) return JT_T;
  return sym;
}

static jt_V symbol_object(jt_State *S, jt_V sym)
{
  if (sym == JT_NIL) return S->nil_sym;
  if (sym == JT_T) return S->t_sym;
  return sym;
}

jt_V jt_find_symbol(jt_State *S, const char *name, size_t len, int package)
{
  size_t k = slot_find(S, name, len, hash_name(name, len), package);
  return k == SIZE_MAX ? JT_NOVALUE : immediate_of(S, S->symtab[k].sym);
}

/* A new symbol homed and present in package `pkg`. */
static jt_V make_present(jt_State *S, const char *name, size_t len, int pkg, jt_V namestr)
{
  if (namestr == JT_NIL) namestr = jt_string_from_name_utf8(S, name, len);
  JT_PUSH(S, namestr);
  jt_V sym = jt_make_symbol_utf8(S, namestr, name, len);
  JT_POP(S, 1);
  jt_Symbol *s = jt_sym_(sym);
  s->package = (uint16_t)pkg;
  s->h.flags |= JT_SYM_INTERNED;
  uint16_t flags = 0;
  if (pkg == JT_PKG_KEYWORD) {
    s->value = sym;
    s->h.flags |= JT_SYM_KEYWORD | JT_SYM_CONSTANT;
    flags = JT_SE_EXTERNAL;
  }
  JT_PUSH(S, sym);
  present_add(S, sym, pkg, flags);
  JT_POP(S, 1);
  return sym;
}

/* The package a %-name goes to: C code (trusted) and kernel-mode reading
** intern the kernel's helpers in the internal home; everything else, the
** user's own %FOO included, where it was asked for. */
static int home_of(jt_State *S, const char *name, size_t len, int package, bool trusted)
{
  if (package != JT_PKG_KEYWORD && package != JT_PKG_NONE && len > 1 && name[0] == '%' &&
      (trusted || S->kernel_mode))
    return JT_PKG_INTERNAL;
  return package;
}

static jt_V intern_raw(jt_State *S, const char *name, size_t len, int pkg, jt_V namestr)
{
  jt_V found = jt_find_symbol(S, name, len, pkg);
  if (found != JT_NOVALUE) return found;
  return make_present(S, name, len, pkg, namestr);
}

void jt_intern_symbol_object(jt_State *S, jt_V sym)
{
  jt_Symbol *s = jt_sym_(sym);
  s->package = JT_PKG_LISP;
  s->h.flags |= JT_SYM_INTERNED;
  slot_insert(S, sym, JT_PKG_LISP, JT_SE_EXTERNAL, false);
}

/* C code names the kernel's symbols: a standard name is COMMON-LISP's, a
** %-name is internal, any other is jiti's own (JITI). */
jt_V jt_intern(jt_State *S, const char *name)
{
  size_t len = strlen(name);
  int pkg = home_of(S, name, len, JT_PKG_LISP, true);
  if (pkg == JT_PKG_INTERNAL || jt_pkg_(S->packages[JT_PKG_JITI])->name == JT_NIL)
    return intern_raw(S, name, len, pkg, JT_NIL);   /* still building: all in COMMON-LISP */
  jt_V found = jt_find_symbol(S, name, len, JT_PKG_LISP);
  if (found != JT_NOVALUE) return found;
  return intern_raw(S, name, len, JT_PKG_JITI, JT_NIL);
}

jt_V jt_intern_keyword(jt_State *S, const char *name)
{
  return intern_raw(S, name, strlen(name), JT_PKG_KEYWORD, JT_NIL);
}

jt_V jt_intern_bytes(jt_State *S, const char *name, size_t len, int package)
{
  return intern_raw(S, name, len, home_of(S, name, len, package, false), JT_NIL);
}

/* ------------------------------------------------------------- packages */

static jt_V pkg_at(jt_State *S, int index)
{
  return index > 0 && (size_t)index < S->npackages ? S->packages[index] : JT_NIL;
}

jt_V jt_package_of_index(jt_State *S, int index) { return pkg_at(S, index); }

bool jt_packages_ready(jt_State *S)
{
  return S->npackages > JT_PKG_JITI && jt_pkg_(S->packages[JT_PKG_JITI])->name != JT_NIL;
}

static int pkg_index(jt_V pkg) { return (int)jt_o(pkg)->aux; }

static bool locked(jt_V pkg) { return (jt_o(pkg)->flags & JT_PACKAGE_LOCKED) != 0; }

/* A string's text in buf (cut to n bytes), for messages. */
static const char *text_of(jt_State *S, jt_V str, char *buf, size_t n)
{
  if (!jt_isstring(str)) return "(deleted)";
  char *c = jt_string_utf8(S, str, NULL);
  snprintf(buf, n, "%s", c);
  free(c);
  return buf;
}

static const char *pkg_cname(jt_State *S, jt_V pkg, char *buf, size_t n)
{
  return text_of(S, jt_pkg_(pkg)->name, buf, n);
}

static jt_V copy_string(jt_State *S, jt_V str)
{
  JT_PUSH(S, str);
  size_t n = jt_str_(str)->len;
  jt_V r = jt_make_string(S, n, 0);
  memcpy(jt_str_(r)->chars, jt_str_(S->sp[-1])->chars, n * sizeof(uint32_t));
  JT_POP(S, 1);
  return r;
}

/* Signal a package-error about pkg (may be NIL) with a formatted message. */
static JT_NORETURN void package_error(jt_State *S, jt_V pkg, const char *fmt, ...)
  JT_PRINTF(3, 4);
static JT_NORETURN void package_error(jt_State *S, jt_V pkg, const char *fmt, ...)
{
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  JT_PUSH(S, pkg);
  jt_V text = jt_string_from_cstr(S, msg);
  JT_PUSH(S, text);
  jt_V args[4] = {jt_intern_keyword(S, "PACKAGE"), pkg, JT_SYM(S, K_FORMAT_CONTROL), text};
  jt_signal_error(S, jt_make_condition(S, JT_SYM(S, PACKAGE_ERROR), 4, args));
}

/* A correctable package-error: CERROR's continue restart (reported by
** `resume`) returns here, and the caller goes on as the report says. */
static void package_cerror(jt_State *S, jt_V pkg, const char *resume, const char *fmt, ...)
  JT_PRINTF(4, 5);
static void package_cerror(jt_State *S, jt_V pkg, const char *resume, const char *fmt, ...)
{
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jt_V *base = S->sp;
  JT_PUSH(S, pkg);
  jt_V text = jt_string_from_cstr(S, msg);
  JT_PUSH(S, text);
  jt_V args[4] = {jt_intern_keyword(S, "PACKAGE"), pkg, JT_SYM(S, K_FORMAT_CONTROL), text};
  jt_V cond = jt_make_condition(S, JT_SYM(S, PACKAGE_ERROR), 4, args);
  JT_PUSH(S, cond);
  jt_V r = jt_string_from_cstr(S, resume);
  JT_PUSH(S, r);
  jt_funcall(S, jt_fdefinition(S, jt_intern(S, "CERROR")), 2, base[3], base[2]);
  S->sp = base;
}

static void check_unlocked(jt_State *S, jt_V pkg, const char *what)
{
  if (locked(pkg) && !S->kernel_mode) {
    char b[200];
    package_error(S, pkg, "cannot %s: the package %s is locked", what, pkg_cname(S, pkg, b, sizeof b));
  }
}

static jt_V new_package(jt_State *S, jt_V name)
{
  if (S->npackages >= 0xFFFF) jt_error(S, "too many packages were made in this world (%zu)", S->npackages);
  if (S->npackages == S->pkgcap) {
    size_t old = S->pkgcap;
    jt_V *p = jt_grow(S->packages, &S->pkgcap, S->npackages + 1, sizeof *p, 16);
    if (!p) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    for (size_t i = old; i < S->pkgcap; i++) p[i] = JT_NIL;
    S->packages = p;
  }
  JT_PUSH(S, name);
  jt_Package *p = (jt_Package *)jt_alloc(S, JT_TPACKAGE, sizeof(jt_Package));
  JT_POP(S, 1);
  p->h.aux = (uint32_t)S->npackages;
  p->name = name;
  p->nicknames = p->use_list = p->used_by = p->shadowing = p->doc = JT_NIL;
  S->packages[S->npackages++] = (jt_V)p;   /* a root from now on */
  return (jt_V)p;
}

/* A string designator as a fresh or shared string: the package name. */
static jt_V name_of(jt_State *S, jt_V designator)
{
  if (jt_is(designator, JT_TPACKAGE)) return jt_pkg_(designator)->name;
  return jt_string_designator(S, designator);
}

jt_V jt_find_package(jt_State *S, jt_V designator)
{
  if (jt_is(designator, JT_TPACKAGE))
    return jt_pkg_(designator)->name == JT_NIL ? JT_NIL : designator;
  jt_V name = name_of(S, designator);
  bool found;
  jt_V p = jt_hash_get(S, S->package_names, name, &found);
  return found ? p : JT_NIL;
}

/* The package named by a designator, or a package-error. */
static jt_V need_package(jt_State *S, jt_V designator)
{
  jt_V p = jt_find_package(S, designator);
  if (p != JT_NIL) return p;
  if (jt_is(designator, JT_TPACKAGE))
    package_error(S, designator, "the package has been deleted");
  char *n = jt_string_utf8(S, name_of(S, designator), NULL);
  char msg[300];
  snprintf(msg, sizeof msg, "package %.200s does not exist", n);
  free(n);
  package_error(S, designator, "%s", msg);
}

jt_V jt_package_named(jt_State *S, const char *name, size_t len)
{
  jt_V str = jt_string_from_utf8(S, name, len);
  return jt_find_package(S, str);
}

static void register_name(jt_State *S, jt_V name, jt_V pkg)
{
  jt_ckpt_map_put(S, S->package_names, name, pkg);
}

/* The current package: *package*'s value, which must be a live package
** (otherwise it is set back to COMMON-LISP-USER and a type-error says why). */
jt_V jt_current_package(jt_State *S)
{
  jt_V p = jt_symobj(S, JT_SYM(S, PACKAGE_VAR))->value;
  if (jt_is(p, JT_TPACKAGE) && jt_pkg_(p)->name != JT_NIL) return p;
  jt_V user = pkg_at(S, JT_PKG_USER);
  if (p == JT_UNBOUND || user == JT_NIL) return pkg_at(S, JT_PKG_LISP);
  jt_set_symbol_value(S, JT_SYM(S, PACKAGE_VAR), user);
  jt_type_error(S, p, JT_SYM(S, PACKAGE));
}

/* ---------------------------------------------------------- accessibility */

enum { ST_NONE, ST_INTERNAL, ST_EXTERNAL, ST_INHERITED };

/* The symbol named `name` accessible in pkg, and how (ST_*). */
static jt_V find_in(jt_State *S, jt_V pkg, const char *name, size_t len, int *status)
{
  uint32_t nh = hash_name(name, len);
  size_t k = slot_find(S, name, len, nh, pkg_index(pkg));
  if (k != SIZE_MAX) {
    *status = (S->symtab[k].flags & JT_SE_EXTERNAL) ? ST_EXTERNAL : ST_INTERNAL;
    return immediate_of(S, S->symtab[k].sym);
  }
  for (jt_V u = jt_pkg_(pkg)->use_list; jt_iscons(u); u = jt_cdr(u)) {
    k = slot_find(S, name, len, nh, pkg_index(jt_car(u)));
    if (k != SIZE_MAX && (S->symtab[k].flags & JT_SE_EXTERNAL)) {
      *status = ST_INHERITED;
      return immediate_of(S, S->symtab[k].sym);
    }
  }
  *status = ST_NONE;
  return JT_NOVALUE;
}

static jt_V find_in_string(jt_State *S, jt_V pkg, jt_V name, int *status)
{
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  jt_V r = find_in(S, pkg, c, len, status);
  free(c);
  return r;
}

/* The symbol named `name` in pkg: accessible, or interned there as a new
** internal symbol (refused in a locked package). */
static jt_V intern_in(jt_State *S, jt_V pkg, const char *name, size_t len, jt_V namestr, int *status)
{
  jt_V found = find_in(S, pkg, name, len, status);
  if (found != JT_NOVALUE) return found;
  check_unlocked(S, pkg, "intern a new symbol");
  JT_PUSH(S, pkg);
  jt_V sym = make_present(S, name, len, pkg_index(pkg), namestr);
  JT_POP(S, 1);
  return sym;
}

jt_V jt_package_read_intern(jt_State *S, jt_V pkg, const char *name, size_t len)
{
  int st;
  int home = home_of(S, name, len, pkg_index(pkg), false);
  if (home == JT_PKG_INTERNAL) return intern_raw(S, name, len, home, JT_NIL);
  return intern_in(S, pkg, name, len, JT_NIL, &st);
}

jt_V jt_package_read_external(jt_State *S, jt_V pkg, const char *name, size_t len)
{
  size_t k = slot_find(S, name, len, hash_name(name, len), pkg_index(pkg));
  if (k == SIZE_MAX || !(S->symtab[k].flags & JT_SE_EXTERNAL)) return JT_NOVALUE;
  return immediate_of(S, S->symtab[k].sym);
}

jt_V jt_find_accessible(jt_State *S, jt_V pkg, const char *name, size_t len)
{
  int st;
  return find_in(S, pkg, name, len, &st);
}

bool jt_symbol_accessible(jt_State *S, jt_V sym, jt_V pkg)
{
  jt_Symbol *s = jt_symobj(S, sym);
  int st;
  return find_in(S, pkg, s->cname, strlen(s->cname), &st) == sym;
}

bool jt_symbol_external(jt_State *S, jt_V sym)
{
  jt_Symbol *s = jt_symobj(S, sym);
  jt_SymEntry *e = entry_of(S, symbol_object(S, sym), s->package);
  return e && (e->flags & JT_SE_EXTERNAL);
}

/* ----------------------------------------------------- package operations */

static jt_V symbol_status(jt_State *S, int st)
{
  switch (st) {
  case ST_INTERNAL: return jt_intern_keyword(S, "INTERNAL");
  case ST_EXTERNAL: return jt_intern_keyword(S, "EXTERNAL");
  case ST_INHERITED: return jt_intern_keyword(S, "INHERITED");
  default: return JT_NIL;
  }
}

/* The optional package argument of intern, find-symbol, export ...:
** the current package when absent. */
static jt_V pkg_arg(jt_State *S, int argc, jt_V *argv, int i)
{
  return argc > i ? need_package(S, argv[i]) : jt_current_package(S);
}

/* A symbol or list of symbols (export, import, ...), as a list. */
static jt_V symbol_list(jt_State *S, jt_V x)
{
  if (jt_issymbol(x) && x != JT_NIL) return jt_list(S, 1, x);
  jt_Walk w = jt_walk(x);
  for (jt_V l = x; l != JT_NIL; l = jt_walk_next(S, &w, l)) {
    if (!jt_iscons(l)) jt_type_error(S, x, JT_SYM(S, LIST));
    jt_check_symbol(S, jt_car(l));
  }
  return x;
}

static bool memq(jt_V x, jt_V l)
{
  for (; jt_iscons(l); l = jt_cdr(l))
    if (jt_car(l) == x) return true;
  return false;
}

static jt_V list_remove(jt_State *S, jt_V x, jt_V l)
{
  if (!jt_iscons(l)) return JT_NIL;
  if (jt_car(l) == x) return jt_cdr(l);
  JT_PUSH(S, l);
  jt_V rest = list_remove(S, x, jt_cdr(l));
  jt_V r = rest == jt_cdr(l) ? l : jt_cons(S, jt_car(S->sp[-1]), rest);
  JT_POP(S, 1);
  return r;
}

static jt_V list_append1(jt_State *S, jt_V l, jt_V x)
{
  JT_PUSH(S, l);
  jt_V tail = jt_list(S, 1, x);
  JT_PUSH(S, tail);
  jt_V r = jt_funcall(S, jt_fdefinition(S, JT_SYM(S, APPEND)), 2, S->sp[-2], tail);
  JT_POP(S, 2);
  return r;
}

/* World hook: a package's definition (name, uses, exports ...) changed. */
static void changed(jt_State *S, jt_V pkg)
{
  if (S->world_define && pkg_index(pkg) >= JT_PKG_USER && pkg_index(pkg) != JT_PKG_JITI)
    S->world_define(S, pkg, JT_DEF_PACKAGE, JT_NIL, JT_NIL);
}

static void shadowing_add(jt_State *S, jt_V pkg, jt_V sym)
{
  if (memq(sym, jt_pkg_(pkg)->shadowing)) return;
  jt_V l = jt_cons(S, sym, jt_pkg_(pkg)->shadowing);
  JT_SET(S, pkg, jt_pkg_(pkg)->shadowing, l);
}

static const char *sym_cname(jt_State *S, jt_V sym) { return jt_symobj(S, sym)->cname; }

/* ------------------------------------------ what stored entries rely on */

/* A revision stores a symbol by its home package's name (or by the name
** it has in COMMON-LISP-USER), and a package by the names of what it uses
** and imports.  Deleting or renaming a package, or uninterning a symbol,
** would leave the entries stored before unreadable, or reading as other
** symbols, at the next import, while those entries are not stored again:
** such a change is refused while the world relies on what it takes away
** (the world's current package, symbols named by its managed state,
** other packages' uses and imports).  Finding them reads all of managed
** state: these changes are rare. */
static bool homed_in(jt_State *S, jt_V obj, void *pi)
{
  (void)S;
  return jt_is(obj, JT_TSYMBOL) && jt_sym_(obj)->package == *(int *)pi;
}

static bool is_symbol(jt_State *S, jt_V obj, void *sym)
{
  (void)S;
  return obj == (jt_V)sym;
}

/* The first package other than its home in which a symbol homed in `pi`
** (or, given, `only` that symbol) is present, as an index; -1 if none. */
static int present_elsewhere(jt_State *S, int pi, jt_V only)
{
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE || e->pkg == pi || jt_sym_(e->sym)->package != pi) continue;
    if (only == JT_NIL || e->sym == only) return e->pkg;
  }
  return -1;
}

/* Refuse to `what` (delete, rename) pkg while the world relies on it. */
static void check_package_unused(jt_State *S, jt_V pkg, const char *what)
{
  char b[200], o[200];
  pkg_cname(S, pkg, b, sizeof b);
  if (!jt_world_recording(S)) return;
  if (pkg == jt_world_current_package(S))
    package_error(S, pkg, "cannot %s the package %s: it is the world's current package (in-package another "
                  "one first)", what, b);
  if (jt_pkg_(pkg)->used_by != JT_NIL)
    package_error(S, pkg, "cannot %s the package %s: %s uses it (unuse it there first)", what, b,
                  pkg_cname(S, jt_car(jt_pkg_(pkg)->used_by), o, sizeof o));
  int pi = pkg_index(pkg);
  int other = present_elsewhere(S, pi, JT_NIL);
  if (other >= 0)
    package_error(S, pkg, "cannot %s the package %s: %s imports its symbols (unintern them there first)",
                  what, b, pkg_cname(S, pkg_at(S, other), o, sizeof o));
  char *where = jt_world_mentions(S, homed_in, &pi, false);
  if (where) {
    char w[300];
    snprintf(w, sizeof w, "%s", where);
    free(where);
    package_error(S, pkg, "cannot %s the package %s: the world's entries name its symbols (%s), and the stored "
                  "ones would not read back (remove those entries or define them in another package first)",
                  what, b, w);
  }
  /* a structure defined while it was the current package is rebuilt in it */
  jt_Hash *r = jt_hash_(jt_world_registry(S));
  for (size_t i = 0; i < r->nentries; i++) {
    jt_HashEntry *e = &r->entries[i];
    if (e->key == JT_HASH_DELETED || jt_car(e->key) != jt_mkfix(JITI_ENTRY_STRUCTURE)) continue;
    if (!jt_iscons(e->val) || !jt_isstring(jt_car(e->val)) || !jt_equal(S, jt_car(e->val), jt_pkg_(pkg)->name))
      continue;
    char n[200];
    snprintf(n, sizeof n, "%s", jt_symobj(S, jt_cdr(e->key))->cname);
    package_error(S, pkg, "cannot %s the package %s: the structure %s was defined in it, and is rebuilt in it "
                  "(define it again in another package first)", what, b, n);
  }
}

/* Refuse to unintern sym from pkg while the world names it: from its home
** it would have none, and from COMMON-LISP-USER its stored name, read
** there, would be another symbol. */
static void check_symbol_unused(jt_State *S, jt_V pkg, jt_V sym)
{
  if (!jt_world_recording(S)) return;
  jt_V so = symbol_object(S, sym);
  bool home = jt_sym_(so)->package == pkg_index(pkg);
  if (!home && pkg_index(pkg) != JT_PKG_USER) return;
  char b[200], o[200];
  pkg_cname(S, pkg, b, sizeof b);
  int other = home ? present_elsewhere(S, pkg_index(pkg), so) : -1;
  if (other >= 0)
    package_error(S, pkg, "cannot unintern %s from %s: %s imports it (unintern it there first)", sym_cname(S, so),
                  b, pkg_cname(S, pkg_at(S, other), o, sizeof o));
  char *where = jt_world_mentions(S, is_symbol, (void *)so, false);
  if (where) {
    char w[300];
    snprintf(w, sizeof w, "%s", where);
    free(where);
    package_error(S, pkg, "cannot unintern %s from %s: the world's entries name it (%s), and the stored ones "
                  "would not read back (remove those entries first)", sym_cname(S, so), b, w);
  }
}

/* A symbol COMMON-LISP-USER sees is stored by its bare name, and an entry
** named by it is named so.  A change of what it sees would rename the
** entries named by a symbol it comes to see (their stored names stay), and
** make a stored bare name read as another symbol once it no longer sees
** that one: refused while managed state relies on such a symbol — its
** names for what it comes to see, all of it for what it stops seeing. */
typedef struct Seen { jt_V sym; int used; } Seen;

/* Is obj the symbol, or an external of the package `used` that
** COMMON-LISP-USER sees only through using it? */
static bool seen_changes(jt_State *S, jt_V obj, void *ud)
{
  Seen *c = ud;
  if (!jt_is(obj, JT_TSYMBOL)) return false;
  if (obj == c->sym) return true;
  if (c->used < 0) return false;
  jt_SymEntry *e = entry_of(S, obj, c->used);
  return e && (e->flags & JT_SE_EXTERNAL) && !entry_of(S, obj, JT_PKG_USER);
}

static void check_user_sees(jt_State *S, jt_V pkg, jt_V sym, int used, bool comes, const char *what)
{
  if (!jt_world_recording(S)) return;
  Seen c = {sym == JT_NOVALUE ? JT_NOVALUE : symbol_object(S, sym), used};
  char *where = jt_world_mentions(S, seen_changes, &c, comes);
  if (!where) return;
  char w[300];
  snprintf(w, sizeof w, "%s", where);
  free(where);
  package_error(S, pkg, "cannot %s: COMMON-LISP-USER would %s a symbol the world's entries %s (%s), and the "
                "stored ones would %s (remove those entries first)", what, comes ? "come to see" : "no longer see",
                comes ? "are named by" : "name", w, comes ? "keep their old names" : "not read back");
}

/* Make sym present in pkg (import), refusing a distinct accessible symbol
** of the same name unless `shadowing` (shadowing-import replaces it). */
static void import_one(jt_State *S, jt_V pkg, jt_V sym, bool shadowing)
{
  jt_Symbol *s = jt_symobj(S, sym);
  int st;
  jt_V old = find_in(S, pkg, s->cname, strlen(s->cname), &st);
  char b[200];
  if (old == sym && st != ST_INHERITED) {
    if (shadowing) shadowing_add(S, pkg, sym);
    return;
  }
  if (old != JT_NOVALUE && old != sym && !shadowing) {
    package_cerror(S, pkg, "Do not import the symbol.",
                   "importing %s into %s conflicts with the symbol %s already accessible there",
                   s->cname, pkg_cname(S, pkg, b, sizeof b), sym_cname(S, old));
    return;
  }
  if (pkg_index(pkg) == JT_PKG_USER) {
    if (old != JT_NOVALUE && old != sym) check_user_sees(S, pkg, old, -1, false, "shadowing-import it");
    if (old != sym) check_user_sees(S, pkg, sym, -1, true, "import it");
  }
  JT_PUSH(S, sym);
  if (old != JT_NOVALUE && st != ST_INHERITED) {
    /* shadowing-import: the present symbol of that name is uninterned */
    jt_SymEntry *e = entry_of(S, symbol_object(S, old), pkg_index(pkg));
    if (e) present_remove(S, e);
    jt_Symbol *os = jt_symobj(S, old);
    if (os->package == pkg_index(pkg)) {
      JT_TOUCH(S, old);
      os->package = JT_PKG_NONE;
    }
    JT_SET(S, pkg, jt_pkg_(pkg)->shadowing, list_remove(S, old, jt_pkg_(pkg)->shadowing));
  }
  jt_V so = symbol_object(S, sym);
  present_add(S, so, pkg_index(pkg), 0);
  if (jt_symobj(S, sym)->package == JT_PKG_NONE) {
    /* a symbol with no home gets this one, and with it a name the world
    ** can store its property list by */
    JT_TOUCH(S, so);
    jt_sym_(so)->package = (uint16_t)pkg_index(pkg);
    jt_sym_(so)->h.flags |= JT_SYM_INTERNED;
    jt_plist_changed(S, so);
  }
  if (shadowing) shadowing_add(S, pkg, sym);
  JT_POP(S, 1);
}

/* Would exporting sym from pkg clash in a package that uses pkg? */
static void check_export_conflicts(jt_State *S, jt_V pkg, jt_V sym)
{
  const char *n = sym_cname(S, sym);
  for (jt_V u = jt_pkg_(pkg)->used_by; jt_iscons(u); u = jt_cdr(u)) {
    jt_V q = jt_car(u);
    int st;
    jt_V other = find_in(S, q, n, strlen(n), &st);
    if (other != JT_NOVALUE && other != sym && !memq(other, jt_pkg_(q)->shadowing)) {
      char b1[200], b2[200];
      package_error(S, pkg, "exporting %s from %s conflicts with %s in %s, which uses it", n,
                    pkg_cname(S, pkg, b1, sizeof b1), sym_cname(S, other), pkg_cname(S, q, b2, sizeof b2));
    }
  }
}

static void export_one(jt_State *S, jt_V pkg, jt_V sym)
{
  const char *n = sym_cname(S, sym);
  int st;
  jt_V found = find_in(S, pkg, n, strlen(n), &st);
  char b[200];
  if (found != sym)
    package_error(S, pkg, "cannot export %s: it is not accessible in %s", n, pkg_cname(S, pkg, b, sizeof b));
  if (st == ST_EXTERNAL) return;
  check_export_conflicts(S, pkg, sym);
  jt_V user = pkg_at(S, JT_PKG_USER);
  if (memq(pkg, jt_pkg_(user)->use_list) && find_in(S, user, n, strlen(n), &st) != sym)
    check_user_sees(S, pkg, sym, -1, true, "export it");
  if (st == ST_INHERITED) import_one(S, pkg, sym, false);
  jt_SymEntry *e = entry_of(S, symbol_object(S, sym), pkg_index(pkg));
  present_flags(S, e, e->flags | JT_SE_EXTERNAL);
}

static void unexport_one(jt_State *S, jt_V pkg, jt_V sym)
{
  const char *n = sym_cname(S, sym);
  int st;
  jt_V found = find_in(S, pkg, n, strlen(n), &st);
  char b[200];
  if (found != sym || st == ST_INHERITED)
    package_error(S, pkg, "cannot unexport %s: it is not present in %s", n, pkg_cname(S, pkg, b, sizeof b));
  jt_V user = pkg_at(S, JT_PKG_USER);
  if (st == ST_EXTERNAL && memq(pkg, jt_pkg_(user)->use_list) && !entry_of(S, symbol_object(S, sym), JT_PKG_USER))
    check_user_sees(S, pkg, sym, -1, false, "unexport it");
  jt_SymEntry *e = entry_of(S, symbol_object(S, sym), pkg_index(pkg));
  if (e->flags & JT_SE_EXTERNAL) present_flags(S, e, e->flags & ~JT_SE_EXTERNAL);
}

static void shadow_one(jt_State *S, jt_V pkg, jt_V name)
{
  int st;
  jt_V sym = find_in_string(S, pkg, name, &st);
  JT_PUSH(S, name);
  if (sym != JT_NOVALUE && st == ST_INHERITED && pkg_index(pkg) == JT_PKG_USER)
    check_user_sees(S, pkg, sym, -1, false, "shadow it");
  if (sym == JT_NOVALUE || st == ST_INHERITED) {
    size_t len;
    char *c = jt_string_utf8(S, name, &len);
    sym = make_present(S, c, len, pkg_index(pkg), JT_NIL);
    free(c);
  }
  JT_PUSH(S, sym);
  shadowing_add(S, pkg, sym);
  JT_POP(S, 2);
}

/* Does using `used` from `pkg` bring a symbol clashing with one accessible
** in pkg? */
static void check_use_conflicts(jt_State *S, jt_V pkg, jt_V used)
{
  int ui = pkg_index(used);
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE || e->pkg != ui || !(e->flags & JT_SE_EXTERNAL)) continue;
    const char *n = jt_sym_(e->sym)->cname;
    int st;
    jt_V other = find_in(S, pkg, n, strlen(n), &st);
    jt_V mine = immediate_of(S, e->sym);
    if (other != JT_NOVALUE && other != mine && !memq(other, jt_pkg_(pkg)->shadowing)) {
      char b1[200], b2[200];
      package_error(S, pkg, "using %s in %s: its symbol %s conflicts with %s already accessible there",
                    pkg_cname(S, used, b1, sizeof b1), pkg_cname(S, pkg, b2, sizeof b2), n,
                    sym_cname(S, other));
    }
  }
}

/* pkg uses used from now on (the caller checked for conflicts). */
static void link_use(jt_State *S, jt_V pkg, jt_V used)
{
  JT_SET(S, pkg, jt_pkg_(pkg)->use_list, list_append1(S, jt_pkg_(pkg)->use_list, used));
  jt_V l = jt_cons(S, pkg, jt_pkg_(used)->used_by);
  JT_SET(S, used, jt_pkg_(used)->used_by, l);
}

static void use_one(jt_State *S, jt_V pkg, jt_V used)
{
  if (used == pkg || memq(used, jt_pkg_(pkg)->use_list)) return;
  if (pkg_index(used) == JT_PKG_KEYWORD) {
    char b[200];
    package_error(S, used, "the package %s cannot be used", pkg_cname(S, used, b, sizeof b));
  }
  check_use_conflicts(S, pkg, used);
  if (pkg_index(pkg) == JT_PKG_USER) check_user_sees(S, used, JT_NOVALUE, pkg_index(used), true, "use it");
  link_use(S, pkg, used);
}

static void unuse_one(jt_State *S, jt_V pkg, jt_V used)
{
  if (pkg_index(pkg) == JT_PKG_USER && memq(used, jt_pkg_(pkg)->use_list))
    check_user_sees(S, used, JT_NOVALUE, pkg_index(used), false, "unuse it");
  JT_SET(S, pkg, jt_pkg_(pkg)->use_list, list_remove(S, used, jt_pkg_(pkg)->use_list));
  JT_SET(S, used, jt_pkg_(used)->used_by, list_remove(S, pkg, jt_pkg_(used)->used_by));
}

/* Remove sym from pkg; its home becomes none if pkg was its home. */
static bool unintern_one(jt_State *S, jt_V pkg, jt_V sym)
{
  jt_V so = symbol_object(S, sym);
  jt_SymEntry *e = entry_of(S, so, pkg_index(pkg));
  if (!e) return false;
  if (memq(sym, jt_pkg_(pkg)->shadowing)) {
    /* two used packages exporting distinct symbols of this name would now clash */
    const char *n = sym_cname(S, sym);
    jt_V seen = JT_NOVALUE;
    for (jt_V u = jt_pkg_(pkg)->use_list; jt_iscons(u); u = jt_cdr(u)) {
      jt_V x = jt_package_read_external(S, jt_car(u), n, strlen(n));
      if (x == JT_NOVALUE) continue;
      if (seen != JT_NOVALUE && seen != x) {
        char b[200];
        package_error(S, pkg, "uninterning %s from %s would make %s and %s conflict", n,
                      pkg_cname(S, pkg, b, sizeof b), sym_cname(S, seen), sym_cname(S, x));
      }
      seen = x;
    }
    JT_SET(S, pkg, jt_pkg_(pkg)->shadowing, list_remove(S, sym, jt_pkg_(pkg)->shadowing));
  }
  present_remove(S, e);
  if (jt_sym_(so)->package == pkg_index(pkg)) {
    JT_TOUCH(S, so);
    jt_sym_(so)->package = JT_PKG_NONE;
  }
  return true;
}

static jt_V make_package(jt_State *S, jt_V name, jt_V nicknames, jt_V use)
{
  jt_V *base = S->sp;
  jt_list_count(S, nicknames);   /* circular lists are refused before any change */
  jt_list_count(S, use);
  name = jt_string_designator(S, name);
  JT_PUSH(S, name);
  if (jt_find_package(S, name) != JT_NIL) {
    char b[200];
    package_cerror(S, jt_find_package(S, name), "Return the existing package.",
                   "a package named %s already exists", text_of(S, name, b, sizeof b));
    jt_V old = jt_find_package(S, base[0]);
    if (old != JT_NIL) {
      S->sp = base;
      return old;
    }
  }
  /* the nicknames as strings, all free */
  jt_V nicks = JT_NIL;
  JT_PUSH(S, nicks);
  for (jt_V l = nicknames; jt_iscons(l); l = jt_cdr(l)) {
    jt_V n = jt_string_designator(S, jt_car(l));
    if (jt_find_package(S, n) != JT_NIL) {
      char b[200];
      package_cerror(S, jt_find_package(S, n), "Leave the nickname out.",
                     "the nickname %s is already a package's name", text_of(S, n, b, sizeof b));
      continue;
    }
    base[1] = jt_cons(S, n, base[1]);
  }
  base[1] = jt_nreverse_list(base[1]);
  jt_V copy = copy_string(S, base[0]);
  JT_PUSH(S, copy);
  jt_V pkg = new_package(S, copy);
  JT_PUSH(S, pkg);
  jt_pkg_(pkg)->nicknames = base[1];
  register_name(S, jt_pkg_(pkg)->name, pkg);
  for (jt_V l = base[1]; jt_iscons(l); l = jt_cdr(l)) register_name(S, jt_car(l), pkg);
  for (jt_V l = use; jt_iscons(l); l = jt_cdr(l)) use_one(S, pkg, need_package(S, jt_car(l)));
  changed(S, pkg);
  S->sp = base;
  return pkg;
}

/* The package named name, made (using nothing) when there is none: for
** showing a stored entry outside the world it was written in. */
jt_V jt_package_named_or_made(jt_State *S, const char *name, size_t len)
{
  jt_V pkg = jt_package_named(S, name, len);
  if (pkg != JT_NIL) return pkg;
  return make_package(S, jt_string_from_utf8(S, name, len), JT_NIL, JT_NIL);
}

/* A name the host gave meaning (jiti_register): external in JITI, so that
** COMMON-LISP-USER sees it. */
void jt_publish(jt_State *S, jt_V sym)
{
  jt_Symbol *s = jt_symobj(S, sym);
  jt_V jiti = pkg_at(S, JT_PKG_JITI);
  if (s->package != JT_PKG_JITI || jt_symbol_external(S, sym)) return;
  JT_PUSH(S, sym);
  check_export_conflicts(S, jiti, sym);
  jt_SymEntry *e = entry_of(S, symbol_object(S, sym), JT_PKG_JITI);
  present_flags(S, e, e->flags | JT_SE_EXTERNAL);
  JT_POP(S, 1);
}

/* ------------------------------------------------------------ built-ins */

JT_FN(f_find_package) { return jt_find_package(S, argv[0]); }
JT_FN(f_packagep) { return jt_bool(jt_is(argv[0], JT_TPACKAGE)); }

JT_FN(f_package_name)
{
  jt_V p = jt_is(argv[0], JT_TPACKAGE) ? argv[0] : need_package(S, argv[0]);
  return jt_pkg_(p)->name;
}

/* The package's own lists are handed out as copies: the program may change
** what it is given (even make it circular), never the package itself. */
JT_FN(f_package_nicknames) { return jt_list_copy(S, jt_pkg_(need_package(S, argv[0]))->nicknames); }
JT_FN(f_package_use_list) { return jt_list_copy(S, jt_pkg_(need_package(S, argv[0]))->use_list); }
JT_FN(f_package_used_by_list) { return jt_list_copy(S, jt_pkg_(need_package(S, argv[0]))->used_by); }
JT_FN(f_package_shadowing_symbols) { return jt_list_copy(S, jt_pkg_(need_package(S, argv[0]))->shadowing); }

JT_FN(f_list_all_packages)
{
  JT_UNUSED_ARGS;
  jt_V l = JT_NIL;
  JT_ROOT(S, l);
  for (size_t i = S->npackages; i > 0; i--) {
    jt_V p = S->packages[i - 1];
    if (p == JT_NIL || jt_pkg_(p)->name == JT_NIL || jt_find_package(S, p) != p) continue;
    if (jt_find_package(S, jt_pkg_(p)->name) != p) continue;   /* not registered (restored away) */
    l = jt_cons(S, p, l);
  }
  JT_UNROOT(S, 1);
  return l;
}

/* (symbol-package symbol): its home package, or NIL (also for the
** kernel's internal symbols, whose home has no name). */
JT_FN(f_symbol_package)
{
  jt_Symbol *s = jt_symobj(S, jt_check_symbol(S, argv[0]));
  if (s->package == JT_PKG_INTERNAL) return JT_NIL;
  jt_V p = pkg_at(S, s->package);
  return p != JT_NIL && jt_pkg_(p)->name != JT_NIL ? p : JT_NIL;
}

/* (make-package name &key nicknames use) */
JT_FN(f_make_package)
{
  static const int keys[] = {JT_S_K_NICKNAMES, JT_S_K_USE};
  jt_V kv[2];
  jt_parse_keys(S, argc, argv, 1, keys, 2, kv);
  jt_V use = kv[1] == JT_NOVALUE ? JT_NIL : kv[1];
  return make_package(S, argv[0], kv[0] == JT_NOVALUE ? JT_NIL : kv[0], use);
}

/* (intern string &optional package) => symbol, status */
JT_FN(f_intern)
{
  jt_V name = jt_check_string(S, argv[0]);
  jt_V pkg = pkg_arg(S, argc, argv, 1);
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  int st;
  jt_V sym = JT_NIL;
  if (pkg_index(pkg) == JT_PKG_KEYWORD) {
    jt_V found = jt_find_symbol(S, c, len, JT_PKG_KEYWORD);
    st = found == JT_NOVALUE ? ST_NONE : ST_EXTERNAL;
    sym = found != JT_NOVALUE ? found : make_present(S, c, len, JT_PKG_KEYWORD, JT_NIL);
  } else {
    jt_V found = find_in(S, pkg, c, len, &st);
    if (found == JT_NOVALUE) {
      if (locked(pkg) && !S->kernel_mode) { free(c); check_unlocked(S, pkg, "intern a new symbol"); }
      sym = make_present(S, c, len, pkg_index(pkg), JT_NIL);
    } else {
      sym = found;
    }
  }
  free(c);
  return jt_values2(S, sym, symbol_status(S, st));
}

/* (find-symbol string &optional package) => symbol, status */
JT_FN(f_find_symbol)
{
  jt_V name = jt_check_string(S, argv[0]);
  jt_V pkg = pkg_arg(S, argc, argv, 1);
  int st;
  jt_V sym = find_in_string(S, pkg, name, &st);
  if (sym == JT_NOVALUE) return jt_values2(S, JT_NIL, JT_NIL);
  return jt_values2(S, sym, symbol_status(S, st));
}

/* (unintern symbol &optional package) => true if it was present */
JT_FN(f_unintern)
{
  jt_V sym = jt_check_symbol(S, argv[0]);
  jt_V pkg = pkg_arg(S, argc, argv, 1);
  check_unlocked(S, pkg, "unintern a symbol");
  if (entry_of(S, symbol_object(S, sym), pkg_index(pkg))) check_symbol_unused(S, pkg, sym);
  bool was = unintern_one(S, pkg, sym);
  if (was) changed(S, pkg);
  return jt_bool(was);
}

/* export, unexport, import, shadowing-import: (f symbols &optional package) => T */
static jt_V each_symbol(jt_State *S, int argc, jt_V *argv, const char *what,
                        void (*fn)(jt_State *, jt_V, jt_V))
{
  jt_V pkg = pkg_arg(S, argc, argv, 1);
  JT_PUSH(S, pkg);
  jt_V syms = symbol_list(S, argv[0]);
  JT_PUSH(S, syms);
  check_unlocked(S, pkg, what);
  for (jt_V l = syms; jt_iscons(l); l = jt_cdr(l)) fn(S, pkg, jt_car(l));   /* checked: proper */
  changed(S, pkg);
  JT_POP(S, 2);
  return JT_T;
}

static void import_plain(jt_State *S, jt_V pkg, jt_V sym) { import_one(S, pkg, sym, false); }
static void import_shadowing(jt_State *S, jt_V pkg, jt_V sym) { import_one(S, pkg, sym, true); }

JT_FN(f_export) { return each_symbol(S, argc, argv, "export", export_one); }
JT_FN(f_unexport) { return each_symbol(S, argc, argv, "unexport", unexport_one); }
JT_FN(f_import) { return each_symbol(S, argc, argv, "import", import_plain); }
JT_FN(f_shadowing_import) { return each_symbol(S, argc, argv, "shadowing-import", import_shadowing); }

/* (shadow names &optional package) => T */
JT_FN(f_shadow)
{
  jt_V pkg = pkg_arg(S, argc, argv, 1);
  JT_PUSH(S, pkg);
  check_unlocked(S, pkg, "shadow");
  jt_V names = argv[0];
  if (!jt_islist(names) || names == JT_NIL) names = jt_list(S, 1, names);
  JT_PUSH(S, names);
  jt_list_count(S, names);   /* a circular list is refused before any change */
  for (jt_V l = names; jt_iscons(l); l = jt_cdr(l))
    shadow_one(S, pkg, jt_string_designator(S, jt_car(l)));
  changed(S, pkg);
  JT_POP(S, 2);
  return JT_T;
}

/* (use-package packages &optional package) and unuse-package => T */
static jt_V each_package(jt_State *S, int argc, jt_V *argv, bool use)
{
  jt_V pkg = pkg_arg(S, argc, argv, 1);
  JT_PUSH(S, pkg);
  check_unlocked(S, pkg, use ? "use a package" : "unuse a package");
  jt_V l = argv[0];
  if (!jt_islist(l)) l = jt_list(S, 1, l);
  JT_PUSH(S, l);
  jt_list_count(S, l);   /* a circular list is refused before any change */
  for (; jt_iscons(l); l = jt_cdr(l)) {
    jt_V p = need_package(S, jt_car(l));
    if (use) use_one(S, pkg, p);
    else unuse_one(S, pkg, p);
  }
  changed(S, pkg);
  JT_POP(S, 2);
  return JT_T;
}

JT_FN(f_use_package) { return each_package(S, argc, argv, true); }
JT_FN(f_unuse_package) { return each_package(S, argc, argv, false); }

/* (rename-package package new-name &optional new-nicknames) => package */
JT_FN(f_rename_package)
{
  jt_V pkg = need_package(S, argv[0]);
  JT_PUSH(S, pkg);
  check_unlocked(S, pkg, "rename the package");
  jt_V name = copy_string(S, name_of(S, argv[1]));
  JT_PUSH(S, name);
  if (!jt_equal(S, name, jt_pkg_(pkg)->name)) check_package_unused(S, pkg, "rename");
  jt_V other = jt_find_package(S, name);
  if (other != JT_NIL && other != pkg)
    package_error(S, other, "a package named so already exists");
  jt_V nicks = JT_NIL;
  JT_PUSH(S, nicks);
  jt_Walk w = jt_walk(argc > 2 ? argv[2] : JT_NIL);
  for (jt_V l = argc > 2 ? argv[2] : JT_NIL; jt_iscons(l); l = jt_walk_next(S, &w, l)) {
    jt_V n = jt_string_designator(S, jt_car(l));
    jt_V o = jt_find_package(S, n);
    if (o != JT_NIL && o != pkg) package_error(S, o, "the nickname is already a package's name");
    S->sp[-1] = jt_cons(S, n, S->sp[-1]);
  }
  S->sp[-1] = jt_nreverse_list(S->sp[-1]);
  if (S->world_define) S->world_define(S, pkg, JT_DEF_PACKAGE_GONE, JT_NIL, JT_NIL);   /* the old name's entry goes */
  jt_ckpt_map_rem(S, S->package_names, jt_pkg_(pkg)->name);
  for (jt_V l = jt_pkg_(pkg)->nicknames; jt_iscons(l); l = jt_cdr(l))
    jt_ckpt_map_rem(S, S->package_names, jt_car(l));
  JT_SET(S, pkg, jt_pkg_(pkg)->name, S->sp[-2]);
  JT_SET(S, pkg, jt_pkg_(pkg)->nicknames, S->sp[-1]);
  register_name(S, jt_pkg_(pkg)->name, pkg);
  for (jt_V l = jt_pkg_(pkg)->nicknames; jt_iscons(l); l = jt_cdr(l)) register_name(S, jt_car(l), pkg);
  changed(S, pkg);
  JT_POP(S, 3);
  return pkg;
}

/* (delete-package package) => T, or NIL if it was already deleted */
JT_FN(f_delete_package)
{
  jt_V pkg = argv[0];
  if (jt_is(pkg, JT_TPACKAGE) && jt_pkg_(pkg)->name == JT_NIL) return JT_NIL;
  if (!jt_is(pkg, JT_TPACKAGE) && jt_find_package(S, pkg) == JT_NIL) {
    char b[200];
    package_cerror(S, pkg, "Return NIL.", "package %s does not exist", text_of(S, name_of(S, pkg), b, sizeof b));
    return JT_NIL;
  }
  pkg = need_package(S, pkg);
  JT_PUSH(S, pkg);
  check_unlocked(S, pkg, "delete the package");
  if (pkg_index(pkg) == JT_PKG_USER || pkg_index(pkg) == JT_PKG_KEYWORD) {
    char b[200];
    package_error(S, pkg, "the package %s cannot be deleted", pkg_cname(S, pkg, b, sizeof b));
  }
  if (jt_pkg_(pkg)->used_by != JT_NIL) {
    package_cerror(S, pkg, "Unuse the package in the packages that use it, and delete it.",
                   "the package is used by other packages (unuse it there first)");
    while (jt_iscons(jt_pkg_(pkg)->used_by)) unuse_one(S, jt_car(jt_pkg_(pkg)->used_by), pkg);
  }
  check_package_unused(S, pkg, "delete");
  while (jt_iscons(jt_pkg_(pkg)->use_list)) unuse_one(S, pkg, jt_car(jt_pkg_(pkg)->use_list));
  /* its symbols leave it; those it was home to have no home any more */
  int pi = pkg_index(pkg);
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE || e->pkg != pi) continue;
    jt_V so = e->sym;
    present_remove(S, e);
    if (jt_sym_(so)->package == pi) {
      JT_TOUCH(S, so);
      jt_sym_(so)->package = JT_PKG_NONE;
    }
  }
  if (S->world_define) S->world_define(S, pkg, JT_DEF_PACKAGE_GONE, JT_NIL, JT_NIL);
  jt_ckpt_map_rem(S, S->package_names, jt_pkg_(pkg)->name);
  for (jt_V l = jt_pkg_(pkg)->nicknames; jt_iscons(l); l = jt_cdr(l))
    jt_ckpt_map_rem(S, S->package_names, jt_car(l));
  JT_SET(S, pkg, jt_pkg_(pkg)->name, JT_NIL);
  JT_SET(S, pkg, jt_pkg_(pkg)->nicknames, JT_NIL);
  JT_SET(S, pkg, jt_pkg_(pkg)->shadowing, JT_NIL);
  JT_POP(S, 1);
  return JT_T;
}

/* (%package-symbols package kinds) => list of (symbol . status) for the
** symbols of PACKAGE: kinds 1 present, 2 external only, 3 accessible (the
** inherited ones too). */
JT_FN(f_package_symbols)
{
  jt_V pkg = need_package(S, argv[0]);
  intptr_t kinds = jt_check_fixnum(S, argv[1]);
  jt_V result = JT_NIL, pair = JT_NIL;
  JT_ROOT(S, result);
  JT_ROOT(S, pair);
  int pi = pkg_index(pkg);
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE || e->pkg != pi) continue;
    if (kinds == 2 && !(e->flags & JT_SE_EXTERNAL)) continue;
    pair = jt_cons(S, immediate_of(S, e->sym), symbol_status(S, (e->flags & JT_SE_EXTERNAL) ? ST_EXTERNAL : ST_INTERNAL));
    result = jt_cons(S, pair, result);
  }
  if (kinds == 3)
    for (jt_V u = jt_pkg_(pkg)->use_list; jt_iscons(u); u = jt_cdr(u)) {
      int ui = pkg_index(jt_car(u));
      for (size_t i = 0; i < S->symcap; i++) {
        jt_SymEntry *e = &S->symtab[i];
        if (e->sym == EMPTY || e->sym == GONE || e->pkg != ui || !(e->flags & JT_SE_EXTERNAL)) continue;
        jt_V sym = immediate_of(S, e->sym);
        int st;
        if (find_in(S, pkg, jt_sym_(e->sym)->cname, strlen(jt_sym_(e->sym)->cname), &st) != sym ||
            st != ST_INHERITED)
          continue;   /* shadowed by a present symbol */
        pair = jt_cons(S, sym, symbol_status(S, ST_INHERITED));
        result = jt_cons(S, pair, result);
      }
    }
  JT_UNROOT(S, 2);
  return result;
}

/* (find-all-symbols string) => the symbols of that name in any package */
JT_FN(f_find_all_symbols)
{
  jt_V name = jt_string_designator(S, argv[0]);
  size_t len;
  char *c = jt_string_utf8(S, name, &len);
  jt_V result = JT_NIL;
  JT_ROOT(S, result);
  for (size_t i = 0; i < S->npackages; i++) {
    jt_V p = S->packages[i];
    if (p == JT_NIL || jt_pkg_(p)->name == JT_NIL || jt_find_package(S, jt_pkg_(p)->name) != p) continue;
    jt_V sym = jt_find_symbol(S, c, len, (int)i);
    if (sym != JT_NOVALUE && !memq(sym, result)) result = jt_cons(S, sym, result);
  }
  free(c);
  JT_UNROOT(S, 1);
  return result;
}

/* (%in-package name): what in-package does */
JT_FN(f_in_package)
{
  jt_V pkg = need_package(S, argv[0]);
  jt_set_symbol_value(S, JT_SYM(S, PACKAGE_VAR), pkg);
  return pkg;
}

/* (%package-documentation package [doc]) */
JT_FN(f_package_documentation)
{
  jt_V pkg = need_package(S, argv[0]);
  if (argc > 1) {
    if (argv[1] != JT_NIL) jt_check_string(S, argv[1]);
    JT_SET(S, pkg, jt_pkg_(pkg)->doc, argv[1]);
    changed(S, pkg);
  }
  return jt_pkg_(pkg)->doc;
}

/* In a lenient %defpackage (a world importing its packages, in any order):
** a package named but not there yet is made empty (its own definition
** comes later), a symbol named but not there is interned in it. */
static jt_V lenient_package(jt_State *S, jt_V designator, bool lenient)
{
  jt_V p = jt_find_package(S, designator);
  if (p != JT_NIL || !lenient) return need_package(S, designator);
  return make_package(S, designator, JT_NIL, JT_NIL);
}

static jt_V lenient_symbol(jt_State *S, jt_V from, jt_V sname, bool lenient)
{
  int st;
  jt_V sym = find_in_string(S, from, sname, &st);
  if (sym != JT_NOVALUE) return sym;
  char b[200], pb[200];
  if (!lenient)
    package_error(S, from, "no symbol named %s in the package %s", text_of(S, sname, b, sizeof b),
                  pkg_cname(S, from, pb, sizeof pb));
  size_t len;
  char *c = jt_string_utf8(S, sname, &len);
  sym = make_present(S, c, len, pkg_index(from), JT_NIL);
  free(c);
  return sym;
}

/* (%defpackage name nicknames use shadow shadowing-import-from import-from
**  intern export doc lenient): the effect of a defpackage form.  A package that
** exists keeps what it has and gets what the form adds (uses, exports,
** ...); its nicknames become the form's.  Options are applied in the
** standard's order: shadows, uses, imports and interns, exports.  The
** -from options are lists (package-name symbol-name...). */
JT_FN(f_defpackage)
{
  jt_V *base = S->sp;
  /* the option lists are the expansion's, but the helper can be called
  ** with any: each must be a proper list (a type-error for a circular one) */
  for (int i = 1; i <= 7; i++) jt_list_count(S, argv[i]);
  for (int i = 4; i <= 5; i++)
    for (jt_V l = argv[i]; jt_iscons(l); l = jt_cdr(l))
      jt_list_count(S, jt_check_cons(S, jt_car(l)));   /* (package name...) */
  jt_V name = jt_string_designator(S, argv[0]);
  JT_PUSH(S, name);
  bool lenient = argv[9] != JT_NIL;
  jt_V pkg = jt_find_package(S, name);
  if (pkg == JT_NIL) {
    pkg = make_package(S, name, argv[1], JT_NIL);
  } else {
    check_unlocked(S, pkg, "redefine the package");
    /* the nicknames of the form replace the old ones */
    jt_V nicks = JT_NIL;
    JT_PUSH(S, pkg);
    JT_PUSH(S, nicks);
    for (jt_V l = argv[1]; jt_iscons(l); l = jt_cdr(l)) {
      jt_V n = jt_string_designator(S, jt_car(l));
      jt_V o = jt_find_package(S, n);
      if (o != JT_NIL && o != pkg) package_error(S, o, "the nickname is already a package's name");
      base[2] = jt_cons(S, n, base[2]);
    }
    for (jt_V l = jt_pkg_(pkg)->nicknames; jt_iscons(l); l = jt_cdr(l))
      jt_ckpt_map_rem(S, S->package_names, jt_car(l));
    JT_SET(S, pkg, jt_pkg_(pkg)->nicknames, jt_nreverse_list(base[2]));
    for (jt_V l = jt_pkg_(pkg)->nicknames; jt_iscons(l); l = jt_cdr(l)) register_name(S, jt_car(l), pkg);
  }
  S->sp = base;
  JT_PUSH(S, pkg);
  for (jt_V l = argv[3]; jt_iscons(l); l = jt_cdr(l)) shadow_one(S, pkg, jt_string_designator(S, jt_car(l)));
  for (jt_V l = argv[4]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V from = lenient_package(S, jt_car(jt_car(l)), lenient);
    JT_PUSH(S, from);
    for (jt_V n = jt_cdr(jt_car(l)); jt_iscons(n); n = jt_cdr(n))
      import_one(S, pkg, lenient_symbol(S, from, jt_string_designator(S, jt_car(n)), lenient), true);
    JT_POP(S, 1);
  }
  if (lenient) {
    /* an imported definition is the package's whole use list */
    jt_V keep = argv[2];
    for (jt_V u = jt_pkg_(pkg)->use_list; jt_iscons(u);) {
      jt_V used = jt_car(u);
      u = jt_cdr(u);
      bool listed = false;
      for (jt_V k = keep; jt_iscons(k) && !listed; k = jt_cdr(k))
        listed = jt_find_package(S, jt_car(k)) == used;
      if (!listed) unuse_one(S, pkg, used);
    }
  }
  for (jt_V l = argv[2]; jt_iscons(l); l = jt_cdr(l)) use_one(S, pkg, lenient_package(S, jt_car(l), lenient));
  for (jt_V l = argv[5]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V from = lenient_package(S, jt_car(jt_car(l)), lenient);
    JT_PUSH(S, from);
    for (jt_V n = jt_cdr(jt_car(l)); jt_iscons(n); n = jt_cdr(n))
      import_one(S, pkg, lenient_symbol(S, from, jt_string_designator(S, jt_car(n)), lenient), false);
    JT_POP(S, 1);
  }
  for (jt_V l = argv[6]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sname = jt_string_designator(S, jt_car(l));
    size_t len;
    char *c = jt_string_utf8(S, sname, &len);
    int st;
    intern_in(S, pkg, c, len, JT_NIL, &st);
    free(c);
  }
  for (jt_V l = argv[7]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sname = jt_string_designator(S, jt_car(l));
    size_t len;
    char *c = jt_string_utf8(S, sname, &len);
    int st;
    jt_V sym = intern_in(S, pkg, c, len, JT_NIL, &st);
    free(c);
    JT_PUSH(S, sym);
    export_one(S, pkg, sym);
    JT_POP(S, 1);
  }
  if (argv[8] != JT_NIL) JT_SET(S, pkg, jt_pkg_(pkg)->doc, jt_check_string(S, argv[8]));
  changed(S, pkg);
  S->sp = base;
  return pkg;
}

static const jt_Reg package_fns[] = {
  {"FIND-PACKAGE", f_find_package, 1, 1, "(find-package name) The package named NAME (or a nickname), or NIL."},
  {"PACKAGEP", f_packagep, 1, 1, "(packagep object) True if OBJECT is a package."},
  {"PACKAGE-NAME", f_package_name, 1, 1, "(package-name package) Its name (NIL once deleted)."},
  {"PACKAGE-NICKNAMES", f_package_nicknames, 1, 1, "(package-nicknames package) Its nicknames."},
  {"PACKAGE-USE-LIST", f_package_use_list, 1, 1, "(package-use-list package) The packages it uses."},
  {"PACKAGE-USED-BY-LIST", f_package_used_by_list, 1, 1, "(package-used-by-list package) The packages using it."},
  {"PACKAGE-SHADOWING-SYMBOLS", f_package_shadowing_symbols, 1, 1,
   "(package-shadowing-symbols package) Its shadowing symbols."},
  {"LIST-ALL-PACKAGES", f_list_all_packages, 0, 0, "(list-all-packages) Every package."},
  {"SYMBOL-PACKAGE", f_symbol_package, 1, 1, "(symbol-package symbol) Its home package, or NIL."},
  {"MAKE-PACKAGE", f_make_package, 1, -1, "(make-package name &key nicknames use) A new package."},
  {"INTERN", f_intern, 1, 2,
   "(intern string &optional package) The symbol named STRING in PACKAGE (made if new), and its status."},
  {"FIND-SYMBOL", f_find_symbol, 1, 2,
   "(find-symbol string &optional package) The symbol named STRING accessible in PACKAGE and its "
   "status (:internal, :external or :inherited), or NIL and NIL."},
  {"UNINTERN", f_unintern, 1, 2, "(unintern symbol &optional package) Remove SYMBOL from PACKAGE."},
  {"EXPORT", f_export, 1, 2, "(export symbols &optional package) Make SYMBOLS external in PACKAGE."},
  {"UNEXPORT", f_unexport, 1, 2, "(unexport symbols &optional package) Make SYMBOLS internal in PACKAGE."},
  {"IMPORT", f_import, 1, 2, "(import symbols &optional package) Make SYMBOLS present in PACKAGE."},
  {"SHADOWING-IMPORT", f_shadowing_import, 1, 2,
   "(shadowing-import symbols &optional package) Import SYMBOLS, replacing any of the same name."},
  {"SHADOW", f_shadow, 1, 2, "(shadow names &optional package) Make symbols of these names present and shadowing."},
  {"USE-PACKAGE", f_use_package, 1, 2, "(use-package packages &optional package) Inherit their external symbols."},
  {"UNUSE-PACKAGE", f_unuse_package, 1, 2, "(unuse-package packages &optional package) Stop inheriting from them."},
  {"RENAME-PACKAGE", f_rename_package, 2, 3,
   "(rename-package package new-name &optional new-nicknames) Rename PACKAGE."},
  {"DELETE-PACKAGE", f_delete_package, 1, 1, "(delete-package package) Delete PACKAGE."},
  {"FIND-ALL-SYMBOLS", f_find_all_symbols, 1, 1, "(find-all-symbols name) The symbols named NAME in any package."},
  {"%PACKAGE-SYMBOLS", f_package_symbols, 2, 2, "(%package-symbols package kinds) (symbol . status) pairs."},
  {"%IN-PACKAGE", f_in_package, 1, 1, "(%in-package name) Make the package named NAME current."},
  {"%PACKAGE-DOCUMENTATION", f_package_documentation, 1, 2, "(%package-documentation package [doc])"},
  {"%DEFPACKAGE", f_defpackage, 10, 10, "(%defpackage name nicknames use shadow shadowing-import-from "
   "import-from intern export doc lenient) What defpackage does."},
  {NULL, NULL, 0, 0, NULL}
};

/* ------------------------------------------------------ stored definition */

/* Strings sorted (string<), for a canonical definition. */
static jt_V sorted_strings(jt_State *S, jt_V l)
{
  if (l == JT_NIL) return l;
  JT_PUSH(S, l);
  jt_V r = jt_funcall(S, jt_fdefinition(S, jt_intern(S, "SORT")), 2, l,
                      jt_fdefinition(S, jt_intern(S, "STRING<")));
  JT_POP(S, 1);
  return r;
}

static jt_V option(jt_State *S, const char *key, jt_V items)
{
  JT_PUSH(S, items);
  jt_V k = jt_intern_keyword(S, key);
  jt_V r = jt_cons(S, k, S->sp[-1]);
  JT_POP(S, 1);
  return r;
}

/* (from-package-name symbol-name ...) groups of the symbols in `syms`
** (a list), by home package, each sorted, the groups by package name. */
static jt_V grouped(jt_State *S, jt_V syms)
{
  jt_V *base = S->sp;
  JT_PUSH(S, syms);
  JT_PUSH(S, JT_NIL);   /* alist home-name -> names */
  for (jt_V l = base[0]; jt_iscons(l); l = jt_cdr(l)) {
    jt_Symbol *s = jt_symobj(S, jt_car(l));
    jt_V home = pkg_at(S, s->package);
    jt_V hname = home != JT_NIL && jt_pkg_(home)->name != JT_NIL ? jt_pkg_(home)->name : JT_NIL;
    if (hname == JT_NIL) continue;
    jt_V cell = JT_NIL;
    for (jt_V a = base[1]; jt_iscons(a); a = jt_cdr(a))
      if (jt_equal(S, jt_car(jt_car(a)), hname)) cell = jt_car(a);
    if (cell == JT_NIL) {
      cell = jt_cons(S, hname, JT_NIL);
      JT_PUSH(S, cell);
      base[1] = jt_cons(S, cell, base[1]);
      JT_POP(S, 1);
    }
    jt_V n = jt_cons(S, s->name, jt_cdr(cell));
    JT_SET(S, cell, jt_cons_(cell)->cdr, n);
  }
  jt_V groups = JT_NIL;
  JT_PUSH(S, groups);
  for (jt_V a = base[1]; jt_iscons(a); a = jt_cdr(a)) {
    jt_V names = sorted_strings(S, jt_cdr(jt_car(a)));
    jt_V g = jt_cons(S, jt_car(jt_car(a)), names);
    base[2] = jt_cons(S, g, base[2]);
  }
  jt_V r = jt_funcall(S, jt_fdefinition(S, jt_intern(S, "SORT")), 4, base[2],
                      jt_fdefinition(S, jt_intern(S, "STRING<")), JT_SYM(S, K_KEY),
                      jt_fdefinition(S, jt_intern(S, "CAR")));
  S->sp = base;
  return r;
}

/* A package's definition as the world stores it: (DEFPACKAGE "NAME"
** (:NICKNAMES ...) (:USE ...) (:SHADOW ...) (:SHADOWING-IMPORT-FROM ...)
** (:IMPORT-FROM ...) (:EXPORT ...) (:DOCUMENTATION ...)), every list sorted,
** so that it depends only on the package. */
jt_V jt_package_definition(jt_State *S, jt_V pkg)
{
  jt_V *base = S->sp;
  JT_PUSH(S, pkg);
  int pi = pkg_index(pkg);
  jt_V shadow = JT_NIL, shimport = JT_NIL, import = JT_NIL, export = JT_NIL, uses = JT_NIL;
  JT_PUSH(S, shadow);   /* base[1] */
  JT_PUSH(S, shimport); /* base[2] */
  JT_PUSH(S, import);   /* base[3] */
  JT_PUSH(S, export);   /* base[4] */
  JT_PUSH(S, uses);     /* base[5] */
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE || e->pkg != pi) continue;
    jt_V sym = immediate_of(S, e->sym);
    jt_Symbol *s = jt_sym_(e->sym);
    bool shadowing = memq(sym, jt_pkg_(pkg)->shadowing);
    if (s->package == pi) {
      if (shadowing) base[1] = jt_cons(S, s->name, base[1]);
    } else if (shadowing) {
      base[2] = jt_cons(S, sym, base[2]);
    } else {
      base[3] = jt_cons(S, sym, base[3]);
    }
    if (e->flags & JT_SE_EXTERNAL) base[4] = jt_cons(S, s->name, base[4]);
  }
  for (jt_V u = jt_pkg_(pkg)->use_list; jt_iscons(u); u = jt_cdr(u))
    base[5] = jt_cons(S, jt_pkg_(jt_car(u))->name, base[5]);
  jt_V opts = JT_NIL;
  JT_PUSH(S, opts);     /* base[6] */
  if (jt_pkg_(pkg)->doc != JT_NIL) {
    jt_V d = jt_list(S, 1, jt_pkg_(pkg)->doc);
    base[6] = jt_cons(S, option(S, "DOCUMENTATION", d), base[6]);
  }
  jt_V parts[] = {base[4], base[3], base[2], base[1], base[5], jt_pkg_(pkg)->nicknames};
  const char *keys[] = {"EXPORT", "IMPORT-FROM", "SHADOWING-IMPORT-FROM", "SHADOW", "USE", "NICKNAMES"};
  for (int k = 0; k < 6; k++) {
    jt_V items = (k == 1 || k == 2) ? grouped(S, parts[k]) : sorted_strings(S, jt_funcall(S, jt_fdefinition(S, jt_intern(S, "COPY-LIST")), 1, parts[k]));
    if (items == JT_NIL) continue;
    JT_PUSH(S, items);
    jt_V o = option(S, keys[k], items);
    JT_POP(S, 1);
    base[6] = jt_cons(S, o, base[6]);
  }
  jt_V form = jt_cons(S, jt_pkg_(pkg)->name, base[6]);
  form = jt_cons(S, jt_intern(S, "DEFPACKAGE"), form);
  S->sp = base;
  return form;
}

/* Make a package from its stored definition (see jt_package_definition). */
void jt_package_import(jt_State *S, jt_V form)
{
  jt_V *base = S->sp;
  JT_PUSH(S, form);
  jt_V args[10];
  for (int i = 0; i < 10; i++) args[i] = JT_NIL;
  args[0] = jt_car(jt_cdr(form));
  const char *keys[] = {NULL, "NICKNAMES", "USE", "SHADOW", "SHADOWING-IMPORT-FROM", "IMPORT-FROM",
                        "INTERN", "EXPORT", "DOCUMENTATION"};
  jt_Walk w = jt_walk(form);
  for (jt_V o = jt_cdr(jt_cdr(form)); jt_iscons(o); o = jt_walk_next(S, &w, o)) {
    jt_V opt = jt_car(o);
    if (!jt_iscons(opt) || !jt_iskeyword(jt_car(opt))) jt_error(S, "a malformed package definition");
    for (int k = 1; k < 9; k++)
      if (!strcmp(jt_symname(S, jt_car(opt)), keys[k]))
        args[k] = k == 8 ? jt_car(jt_cdr(opt)) : jt_cdr(opt);
  }
  args[9] = JT_T;
  for (int i = 0; i < 10; i++) JT_PUSH(S, args[i]);
  f_defpackage(S, 10, base + 1);
  S->sp = base;
}

/* ------------------------------------------------------------- bootstrap */

static jt_V boot_package(jt_State *S, int index, const char *name, const char *nick)
{
  jt_V n = jt_string_from_cstr(S, name);
  JT_PUSH(S, n);
  jt_V p = new_package(S, n);
  if ((int)jt_o(p)->aux != index) abort();   /* the fixed indices */
  JT_PUSH(S, p);
  if (nick) {
    jt_V nn = jt_string_from_cstr(S, nick);
    jt_pkg_(p)->nicknames = jt_cons(S, nn, JT_NIL);
  }
  JT_POP(S, 2);
  return p;
}

/* The fixed packages, before anything is interned.  Index 0 is no package. */
void jt_open_packages(jt_State *S)
{
  S->package_names = jt_make_hash(S, JT_HASH_EQUAL, 64);
  jt_o(S->package_names)->flags |= JT_HASH_MANAGED;
  S->npackages = 1;
  S->pkgcap = 16;
  S->packages = calloc(S->pkgcap, sizeof(jt_V));
  if (!S->packages) abort();
  for (size_t i = 0; i < S->pkgcap; i++) S->packages[i] = JT_NIL;
  boot_package(S, JT_PKG_LISP, "COMMON-LISP", "CL");
  boot_package(S, JT_PKG_KEYWORD, "KEYWORD", NULL);
  boot_package(S, JT_PKG_INTERNAL, "", NULL);   /* never registered by name */
  boot_package(S, JT_PKG_USER, "COMMON-LISP-USER", "CL-USER");
  /* JITI's name is given in jt_packages_finish: until then jt_intern
  ** interns everything in COMMON-LISP */
  jt_V j = boot_package(S, JT_PKG_JITI, "JITI", NULL);
  jt_pkg_(j)->name = JT_NIL;
}

void jt_open_package_fns(jt_State *S)
{
  jt_register(S, package_fns);
}

/* After the library is loaded: COMMON-LISP keeps exactly the standard
** names (all external; those not defined yet are made), everything else
** moves to JITI; the names are registered and the packages related. */
void jt_packages_finish(jt_State *S)
{
  jt_V cl = pkg_at(S, JT_PKG_LISP), user = pkg_at(S, JT_PKG_USER), jiti = pkg_at(S, JT_PKG_JITI);
  /* mark the standard names: intern any missing one */
  jt_V standard = jt_make_hash(S, JT_HASH_EQ, 2048);
  JT_PUSH(S, standard);
  for (int i = 0; jt_cl_symbol_names[i]; i++) {
    jt_V sym = intern_raw(S, jt_cl_symbol_names[i], strlen(jt_cl_symbol_names[i]), JT_PKG_LISP, JT_NIL);
    jt_hash_put(S, standard, symbol_object(S, sym), JT_T);
  }
  /* the slot names of the built-in condition types are public (slot-value) */
  jt_Hash *lh = jt_hash_(S->layouts);
  for (size_t i = 0; i < lh->nentries; i++) {
    if (lh->entries[i].key == JT_HASH_DELETED) continue;
    jt_V names = jt_layout_(lh->entries[i].val)->slot_names;
    for (size_t k = 0; jt_isvector(names) && k < jt_vec_(names)->len; k++) {
      bool found;
      jt_hash_get(S, standard, jt_vec_(names)->items[k], &found);
      if (!found) jt_hash_put(S, standard, jt_vec_(names)->items[k], jt_mkfix(1));
    }
  }
  /* move the others */
  jt_V movers = JT_NIL;
  JT_PUSH(S, movers);
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == EMPTY || e->sym == GONE || e->pkg != JT_PKG_LISP) continue;
    bool found;
    jt_V mark = jt_hash_get(S, standard, e->sym, &found);
    if (found && mark == JT_T) {
      e->flags |= JT_SE_EXTERNAL;
    } else {
      S->sp[-1] = jt_cons(S, e->sym, S->sp[-1]);
    }
  }
  for (jt_V l = S->sp[-1]; jt_iscons(l); l = jt_cdr(l)) {
    jt_V so = jt_car(l);
    jt_SymEntry *e = entry_of(S, so, JT_PKG_LISP);
    slot_remove(S, e);
    jt_Symbol *s = jt_sym_(so);
    s->package = JT_PKG_JITI;
    /* jiti's public names are those the library defined (functions,
    ** macros, variables, types); the rest are names its code uses */
    bool found;
    jt_hash_get(S, standard, so, &found);   /* a slot name */
    bool public = found || s->function != JT_UNBOUND || s->value != JT_UNBOUND ||
                  (s->h.flags & (JT_SYM_SPECFORM | JT_SYM_TYPE)) || jt_find_layout(S, so) != JT_NIL;
    slot_insert(S, so, JT_PKG_JITI, public ? JT_SE_EXTERNAL : 0, false);
  }
  JT_POP(S, 2);
  jt_pkg_(jiti)->name = jt_string_from_cstr(S, "JITI");
  register_name(S, jt_pkg_(cl)->name, cl);
  for (jt_V n = jt_pkg_(cl)->nicknames; jt_iscons(n); n = jt_cdr(n)) register_name(S, jt_car(n), cl);
  jt_V kw = pkg_at(S, JT_PKG_KEYWORD);
  register_name(S, jt_pkg_(kw)->name, kw);
  register_name(S, jt_pkg_(user)->name, user);
  for (jt_V n = jt_pkg_(user)->nicknames; jt_iscons(n); n = jt_cdr(n)) register_name(S, jt_car(n), user);
  register_name(S, jt_pkg_(jiti)->name, jiti);
  /* No conflicts to look for (a walk of the whole table): JITI holds only
  ** names that are not COMMON-LISP's, and COMMON-LISP-USER is empty. */
  link_use(S, jiti, cl);
  link_use(S, user, cl);
  link_use(S, user, jiti);
  jt_o(cl)->flags |= JT_PACKAGE_LOCKED;
  jt_o(jiti)->flags |= JT_PACKAGE_LOCKED;
  jt_defglobal(S, "*PACKAGE*", user);
}
