/*
** ffi.c — foreign functions through libffi, a capability the host grants.
**
** The host grants libraries by name before anything untrusted runs
** (jiti_foreign_grant: the library is opened then, so that a sandbox that
** forbids executable mappings can come down afterwards).  Lisp declares a
** function of a granted library with
**
**   (define-foreign name "libm.so.6" "cos" :double (:double))
**
** which resolves the symbol — in that library itself: a grant is exactly
** the library named, not the libraries it depends on, which dlsym would
** search too — prepares the libffi call interface once, and
** makes NAME a primitive whose calls convert and range-check every argument
** (a wrong type or an integer out of range is a type-error, a wrong count a
** program-error), pay fuel like a built-in, and call through ffi_call.  A
** library that is not granted is refused, naming the option that grants it.
**
** Types: :int :long :int64 :uint64 :size :double :float :bool :void,
** :string (NUL-terminated UTF-8, copied in for the call and copied out of a
** result; NIL is the null pointer), :pointer (an opaque object Lisp can pass
** back but not make, change or see the address of: no conversion here
** turns a pointer into an integer or back, and it prints without its
** address; NIL is the null pointer).  What cannot be checked is a
** declaration's truth: a C parameter or result that is a pointer declared
** as an integer type is a lie the kernel cannot see (docs/security.md).
**
** Declarations are managed entries of the world (kind foreign): the world
** records each one's canonical form, and importing a world declares them
** again (jt_ffi_import) — where a library is no longer granted or a symbol
** is gone, the declaration is kept but unavailable, so that the rest of
** the world still comes back, and granting the library later repairs it.
**
** A declaration lives in a table of the state's (its primitive's aux field
** is the index).  Declaring a name again makes a new entry: a checkpoint
** restored puts the old primitive back, and it must still find its own
** types.  A declaration can be unavailable — its library or symbol missing
** when a world is imported — and then a call signals why.
*/
#define _GNU_SOURCE  /* dlinfo, dladdr1, dl_iterate_phdr */
#include <dlfcn.h>
#include <ffi.h>
#include <link.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "jt_eval.h"
#include "jt_ffi.h"
#include "jt_clos.h"

#define MAX_ARGS 16
/* Declarations are kept for the state's life (a restored checkpoint may
** bring back any of them), so their number is bounded. */
#define MAX_DECLS 10000

/* One name table for the foreign types. */
enum { FT_VOID, FT_INT, FT_LONG, FT_INT64, FT_UINT64, FT_SIZE, FT_DOUBLE, FT_FLOAT,
       FT_BOOL, FT_STRING, FT_POINTER, FT_COUNT };
static const struct { const char *name; ffi_type *type; } ftypes[FT_COUNT] = {
  [FT_VOID] = {"VOID", &ffi_type_void},       [FT_INT] = {"INT", &ffi_type_sint},
  [FT_LONG] = {"LONG", &ffi_type_slong},      [FT_INT64] = {"INT64", &ffi_type_sint64},
  [FT_UINT64] = {"UINT64", &ffi_type_uint64}, [FT_SIZE] = {"SIZE", &ffi_type_uint64},
  [FT_DOUBLE] = {"DOUBLE", &ffi_type_double}, [FT_FLOAT] = {"FLOAT", &ffi_type_float},
  [FT_BOOL] = {"BOOL", &ffi_type_sint},       [FT_STRING] = {"STRING", &ffi_type_pointer},
  [FT_POINTER] = {"POINTER", &ffi_type_pointer},
};

typedef struct Grant {
  char *name;
  void *handle;             /* NULL: the grant failed (why says how) */
  char *why;
} Grant;

typedef struct Decl {
  jt_V name;                /* kept alive by its primitive, the only caller */
  char *library, *symbol;
  int ret, nargs, args[MAX_ARGS];
  ffi_type *atypes[MAX_ARGS];
  ffi_cif cif;
  void (*fn)(void);
  char *unavailable;        /* why calls fail, or NULL */
} Decl;

/* Declarations are allocated one by one: a prepared call interface points
** into its own declaration (the argument types), so a declaration never
** moves. */
struct jt_FFI {
  Grant *grants;            /* opened and failed alike, in grant order */
  size_t ngrants;
  Decl **decls;
  size_t ndecls, cap;
  jt_Buf scratch;           /* a call's argument strings: owned by the state,
                               so an error converting the result leaks nothing */
};

static jt_FFI *ffi(jt_State *S) {
  if (!S->ffi) {
    S->ffi = calloc(1, sizeof *S->ffi);
    if (!S->ffi) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  }
  return S->ffi;
}

void jt_ffi_close(jt_State *S) {
  jt_FFI *F = S->ffi;
  if (!F) return;
  for (size_t i = 0; i < F->ngrants; i++) {
    free(F->grants[i].name);
    free(F->grants[i].why);
    if (F->grants[i].handle) dlclose(F->grants[i].handle);
  }
  for (size_t i = 0; i < F->ndecls; i++) {
    free(F->decls[i]->library);
    free(F->decls[i]->symbol);
    free(F->decls[i]->unavailable);
    free(F->decls[i]);
  }
  free(F->grants);
  free(F->decls);
  jt_buf_free(&F->scratch);
  free(F);
  S->ffi = NULL;
}

/* A malloc'd printf, or NULL when memory is exhausted. */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(NULL, 0, f, ap);
  va_end(ap);
  char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (p) {
    va_start(ap, f);
    vsnprintf(p, (size_t)n + 1, f, ap);
    va_end(ap);
  }
  return p;
}

/* ---------------------------------------------------------------- grants */

static Grant *find_grant(jt_FFI *F, const char *library) {
  for (size_t i = 0; F && i < F->ngrants; i++)
    if (strcmp(F->grants[i].name, library) == 0) return &F->grants[i];
  return NULL;
}

/* Why a declaration naming `library` cannot be made (malloc'd, NULL when
** memory is exhausted): the library was never granted, or its grant
** failed to open it.  Both name the option that grants it. */
static char *why_no_library(jt_FFI *F, const char *library) {
  Grant *g = find_grant(F, library);
  if (g && g->why)
    return fmt("the library %s is granted (--allow-foreign %s) but cannot be opened: %s", library, library, g->why);
  return fmt("the library %s is not granted to this world (the operator grants it with --allow-foreign %s)",
             library, library);
}

static char *why_no_symbol(const char *library, const char *symbol) {
  return fmt("the library %s has no symbol %s", library, symbol);
}

/* The loaded object a handle or an address belongs to. */
static struct link_map *object_of_handle(void *handle) {
  struct link_map *lm = NULL;
  return dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 ? lm : NULL;
}

static struct link_map *object_of_address(void *p) {
  Dl_info info;
  struct link_map *lm = NULL;
  return dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP) ? lm : NULL;
}

/* How an object is named in a message: its file's name, as a grant
** usually names it ("libc.so.6"), or the program itself. */
static const char *object_name(const struct link_map *lm) {
  const char *n = lm && lm->l_name ? lm->l_name : "";
  const char *slash = strrchr(n, '/');
  return !*n ? "the jiti program itself" : slash ? slash + 1 : n;
}

/* Whether p lies in an executable segment of lm: a function's code, not
** data (an IFUNC's address, resolved by dlsym, is its implementation's). */
typedef struct Seg { const struct link_map *lm; uintptr_t p; int exec; } Seg;
static int segment_of(struct dl_phdr_info *info, size_t size, void *arg) {
  Seg *s = arg;
  (void)size;
  if (info->dlpi_addr != s->lm->l_addr || strcmp(info->dlpi_name ? info->dlpi_name : "", s->lm->l_name ? s->lm->l_name : ""))
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && s->p >= lo && s->p - lo < ph->p_memsz) {
      s->exec = (ph->p_flags & PF_X) != 0;
      break;
    }
  }
  return 1;
}

/* The function `symbol` of the granted library g itself, or NULL with why
** (malloc'd; NULL too when memory is exhausted).  dlsym on a handle also
** searches the libraries it depends on (libm's handle finds libc's
** getpid), but a grant is exactly the library it names: a symbol found in
** another object is refused, naming where it comes from, and so is one
** that is data rather than code. */
static void *resolve(jt_FFI *F, Grant *g, const char *symbol, char **why) {
  *why = NULL;
  void *p = dlsym(g->handle, symbol);
  if (!p) {
    *why = why_no_symbol(g->name, symbol);
    return NULL;
  }
  struct link_map *own = object_of_handle(g->handle), *at = object_of_address(p);
  if (!own || !at) {
    *why = fmt("the address of %s cannot be told to belong to %s", symbol, g->name);
    return NULL;
  }
  if (at != own) {
    const char *as = NULL;
    for (size_t i = 0; i < F->ngrants && !as; i++)
      if (F->grants[i].handle && object_of_handle(F->grants[i].handle) == at) as = F->grants[i].name;
    *why = as ? fmt("%s is not defined in %s (it comes from %s, granted as %s: name that library in the declaration)",
                    symbol, g->name, object_name(at), as)
              : fmt("%s is not defined in %s (it comes from %s, which is not granted)", symbol, g->name,
                    object_name(at));
    return NULL;
  }
  Seg seg = {own, (uintptr_t)p, 0};
  dl_iterate_phdr(segment_of, &seg);
  if (!seg.exec) {
    *why = fmt("%s of %s is not a function (it is not in the library's code)", symbol, g->name);
    return NULL;
  }
  return p;
}

static void set_why(Decl *d, char *why) {
  free(d->unavailable);
  d->unavailable = why ? why : strdup("unavailable");  /* NULL only when out of memory */
}

jiti_Status jiti_foreign_grant(jiti_State *S, const char *library, char *err, size_t errlen) {
  if (!library || !*library) {
    if (err) snprintf(err, errlen, "no library named");
    return JITI_BADARG;
  }
  if (!S->ffi && !(S->ffi = calloc(1, sizeof *S->ffi))) return JITI_ERROR;
  jt_FFI *F = S->ffi;
  Grant *g = find_grant(F, library);
  if (g && g->handle) return JITI_OK;
  if (!g) {
    Grant *ng = realloc(F->grants, (F->ngrants + 1) * sizeof *ng);
    char *name = strdup(library);
    if (!ng || !name) {
      free(name);
      if (ng) F->grants = ng;
      if (err) snprintf(err, errlen, "out of memory");
      return JITI_ERROR;
    }
    F->grants = ng;
    g = &F->grants[F->ngrants++];
    *g = (Grant){name, NULL, NULL};
  }
  /* A grant that fails is kept, so that declarations of its library say
  ** why they cannot be made; granting the library again retries. */
  g->handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  free(g->why);
  g->why = g->handle ? NULL : strdup(dlerror());
  if (!g->handle && err) snprintf(err, errlen, "cannot open %s: %s", library, g->why ? g->why : "?");
  /* declarations left unavailable for want of this library: resolve them
  ** again, or say why not now */
  for (size_t i = 0; i < F->ndecls; i++) {
    Decl *d = F->decls[i];
    if (!d->unavailable || strcmp(d->library, library) != 0) continue;
    char *why = NULL;
    void *p = g->handle ? resolve(F, g, d->symbol, &why) : NULL;
    if (p) {
      d->fn = (void (*)(void))p;
      free(d->unavailable);
      d->unavailable = NULL;
    } else {
      set_why(d, g->handle ? why : why_no_library(F, library));
    }
  }
  return g->handle ? JITI_OK : JITI_ERROR;
}

size_t jiti_foreign_grant_count(jiti_State *S) {
  size_t n = 0;
  for (size_t i = 0; S->ffi && i < S->ffi->ngrants; i++) n += S->ffi->grants[i].handle != NULL;
  return n;
}

const char *jiti_foreign_grant_name(jiti_State *S, size_t i) {
  for (size_t k = 0; S->ffi && k < S->ffi->ngrants; k++)
    if (S->ffi->grants[k].handle && i-- == 0) return S->ffi->grants[k].name;
  return NULL;
}

/* ------------------------------------------------------------ declaring */

static int type_of(jt_State *S, jt_V k, bool result) {
  if (jt_iskeyword(k))
    for (int t = 0; t < FT_COUNT; t++)
      if ((t != FT_VOID || result) && strcmp(jt_symname(S, k), ftypes[t].name) == 0) return t;
  char *p = jt_print_cstr(S, k, true, 80);
  snprintf(S->msgbuf, sizeof S->msgbuf,
           "define-foreign: %s is not a foreign %s type (:int :long :int64 :uint64 :size :double :float "
           ":bool :string :pointer%s)", p, result ? "result" : "argument", result ? " :void" : "");
  free(p);
  jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
}

static char *string_arg(jt_State *S, jt_V v, const char *what) {
  if (!jt_isstring(v)) {
    snprintf(S->msgbuf, sizeof S->msgbuf, "define-foreign: the %s must be a string", what);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
  return jt_string_utf8(S, v, NULL);
}

static jt_V f_foreign_call(jt_State *S, int argc, jt_V *argv);

/* The declaration primitive fn calls, or NULL when fn is not one. */
static Decl *decl_of(jt_State *S, jt_V fn) {
  if (!jt_is(fn, JT_TPRIM) || jt_prim_(fn)->fn != f_foreign_call || !S->ffi) return NULL;
  uint32_t i = jt_o(fn)->aux;
  return i < S->ffi->ndecls ? S->ffi->decls[i] : NULL;
}

/* The entry the world records: the declaration spelled one way whatever
** the source looked like (fresh strings, the types as keywords), so that
** what is exported is what was declared, even if the source form is
** changed afterwards. */
static jt_V canonical_form(jt_State *S, const Decl *d) {
  jt_V *base = S->sp;
  JT_PUSH(S, jt_intern(S, "DEFINE-FOREIGN"));
  JT_PUSH(S, d->name);
  JT_PUSH(S, jt_string_from_cstr(S, d->library));
  JT_PUSH(S, jt_string_from_cstr(S, d->symbol));
  JT_PUSH(S, jt_intern_keyword(S, ftypes[d->ret].name));
  for (int k = 0; k < d->nargs; k++) JT_PUSH(S, jt_intern_keyword(S, ftypes[d->args[k]].name));
  jt_V args = jt_list_from(S, d->nargs, base + 5);
  S->sp = base + 5;
  JT_PUSH(S, args);
  jt_V form = jt_list_from(S, 6, base);
  S->sp = base;
  return form;
}

/* Check a declaration form, make its declaration and install NAME's
** primitive.  A form that is not a declaration, a bad type or a name that
** cannot be defined signals.  A library that is not granted (or did not
** open) or a symbol it lacks signals too, unless `importing`: a world being
** rebuilt keeps the declaration, unavailable, and a call says why. */
static jt_V declare(jt_State *S, jt_V form, bool importing) {
  jt_V parts[6];
  int n = 0;
  for (jt_V l = form; jt_iscons(l) && n < 6; l = jt_cdr(l)) parts[n++] = jt_car(l);
  if (n != 6 || jt_list_length(S, form) != 6)
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR),
              "define-foreign wants (define-foreign name \"library\" \"symbol\" result-type (argument-types...))");
  jt_V name = jt_check_symbol(S, parts[1]);
  jt_Symbol *s = jt_symobj(S, name);
  jt_check_definable(S, s, "a foreign function");
  int ret = type_of(S, parts[4], true), args[MAX_ARGS], nargs = 0;
  if (!jt_islist(parts[5])) jt_type_error(S, parts[5], JT_SYM(S, LIST));
  for (jt_V l = parts[5]; jt_iscons(l); l = jt_cdr(l)) {
    if (nargs == MAX_ARGS)
      jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "define-foreign: at most %d arguments", MAX_ARGS);
    args[nargs++] = type_of(S, jt_car(l), false);
  }
  jt_FFI *F = ffi(S);
  if (F->ndecls >= MAX_DECLS)
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "define-foreign: more than %d declarations in one world", MAX_DECLS);
  /* both strings checked before either is copied: a signal then leaks nothing */
  if (!jt_isstring(parts[2]) || !jt_isstring(parts[3])) {
    string_arg(S, parts[2], "library");
    string_arg(S, parts[3], "symbol");
  }
  char *library = string_arg(S, parts[2], "library");
  char *symbol = string_arg(S, parts[3], "symbol");
  Grant *g = find_grant(F, library);
  char *why = NULL;
  void *p = g && g->handle ? resolve(F, g, symbol, &why) : NULL;
  if (!p && !(g && g->handle)) why = why_no_library(F, library);
  if (!p && !importing) {
    snprintf(S->msgbuf, sizeof S->msgbuf, "define-foreign: %s", why ? why : "out of memory");
    free(library);
    free(symbol);
    free(why);
    jt_errorc(S, JT_SYM(S, PROGRAM_ERROR), "%s", S->msgbuf);
  }
  Decl *d = calloc(1, sizeof *d);
  if (d && F->ndecls == F->cap) {
    size_t cap = F->cap ? 2 * F->cap : 8;
    Decl **nd = realloc(F->decls, cap * sizeof *nd);
    if (nd) { F->decls = nd; F->cap = cap; }
  }
  if (!d || F->ndecls == F->cap || (!p && !why)) {
    free(d); free(library); free(symbol); free(why);
    jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
  }
  size_t i = F->ndecls++;
  F->decls[i] = d;
  d->name = name;
  d->library = library;
  d->symbol = symbol;
  d->unavailable = why;
  d->ret = ret;
  d->nargs = nargs;
  for (int k = 0; k < nargs; k++) { d->args[k] = args[k]; d->atypes[k] = ftypes[args[k]].type; }
  d->fn = (void (*)(void))p;
  if (ffi_prep_cif(&d->cif, FFI_DEFAULT_ABI, (unsigned)nargs, ftypes[ret].type, d->atypes) != FFI_OK) {
    set_why(d, strdup("libffi cannot prepare the call"));
    jt_error(S, "define-foreign: libffi cannot prepare a call of %s", d->symbol);
  }
  /* From here on the declaration is complete; what follows only allocates
  ** Lisp objects.  A signal leaves it in the table, unreferenced. */
  jt_V *base = S->sp;
  JT_PUSH(S, canonical_form(S, d));
  JT_PUSH(S, jt_make_prim(S, name, f_foreign_call, nargs, nargs, "A foreign function (define-foreign)."));
  jt_o(base[1])->aux = (uint32_t)i;
  jt_clos_forget_generic(S, s->function);
  JT_SET(S, s, s->function, base[1]);
  if (S->world_define) S->world_define(S, name, JT_DEF_FOREIGN, base[0], base[1]);
  S->sp = base;
  return name;
}

/* (%define-foreign '(define-foreign name library symbol result (args...)))
** What the macro DEFINE-FOREIGN expands into: the whole form, so calling
** this directly does exactly what writing the declaration does. */
JT_FN(f_define_foreign) { (void)argc; return declare(S, argv[0], false); }

jt_V jt_ffi_import(jt_State *S, jt_V form) { return declare(S, form, true); }

/* (%foreign-granted-p library) True when the host granted LIBRARY (a
** string) and it opened: the worker's gate asks before a declaration runs. */
JT_FN(f_foreign_granted_p) {
  (void)argc;
  if (!jt_isstring(argv[0]) || !S->ffi) return JT_NIL;
  char *library = jt_string_utf8(S, argv[0], NULL);
  Grant *g = find_grant(S->ffi, library);
  free(library);
  return jt_bool(g && g->handle);
}

size_t jiti_foreign_unavailable(jiti_State *S, jiti_ForeignFn fn, void *ud) {
  size_t n = 0;
  for (size_t i = 0; S->ffi && i < S->ffi->ndecls; i++) {
    Decl *d = S->ffi->decls[i];
    /* only the declarations in force: an older one a redefinition replaced
    ** (and a restore might bring back) is not part of the world */
    if (!d->unavailable || decl_of(S, jt_symobj(S, d->name)->function) != d) continue;
    n++;
    if (!fn) continue;
    /* named as the world's entries are (printing a symbol allocates no
    ** Lisp object, so this needs no entry point) */
    char *name = jt_print_cstr(S, d->name, true, 4096);
    fn(ud, name ? name : jt_symname(S, d->name), d->library, d->symbol, d->unavailable);
    free(name);
  }
  return n;
}

/* ---------------------------------------------------------------- calling */

typedef union Val { int i; long l; int64_t i64; uint64_t u64; double d; float f; void *p; } Val;

/* A type-error whose expected type is (SIGNED-BYTE bits) or (UNSIGNED-BYTE
** bits), or the symbol `name` when bits is 0. */
static JT_NORETURN void range_error(jt_State *S, jt_V v, const char *name, int bits) {
  JT_PUSH(S, v);
  jt_V t = jt_intern(S, name);
  if (bits) t = jt_list(S, 2, t, jt_mkfix(bits));
  JT_POP(S, 1);
  jt_type_error(S, v, t);
}

/* Check and convert one argument.  Nothing here allocates: strings are
** copied afterwards, once every argument has passed. */
static void convert(jt_State *S, int t, jt_V v, Val *out) {
  switch (t) {
    case FT_INT: case FT_BOOL:
      if (t == FT_BOOL) { out->i = v != JT_NIL; return; }
      if (!jt_isfix(v) || jt_fixval(v) < INT_MIN || jt_fixval(v) > INT_MAX) range_error(S, v, "SIGNED-BYTE", 32);
      out->i = (int)jt_fixval(v);
      return;
    case FT_LONG: case FT_INT64:
      if (!jt_isinteger(v)) jt_type_error(S, v, JT_SYM(S, INTEGER));
      if (jt_isfix(v)) { out->i64 = jt_fixval(v); return; }
      if (!mpz_fits_slong_p(jt_big_(v)->z)) range_error(S, v, "SIGNED-BYTE", 64);
      out->i64 = mpz_get_si(jt_big_(v)->z);
      return;
    case FT_UINT64: case FT_SIZE:
      if (!jt_isinteger(v)) jt_type_error(S, v, JT_SYM(S, INTEGER));
      if (jt_isfix(v)) {
        if (jt_fixval(v) < 0) range_error(S, v, "UNSIGNED-BYTE", 64);
        out->u64 = (uint64_t)jt_fixval(v);
        return;
      }
      if (mpz_sgn(jt_big_(v)->z) < 0 || mpz_sizeinbase(jt_big_(v)->z, 2) > 64)
        range_error(S, v, "UNSIGNED-BYTE", 64);
      out->u64 = mpz_get_ui(jt_big_(v)->z);
      return;
    case FT_DOUBLE: out->d = jt_to_double(S, v); return;
    case FT_FLOAT: {
      double d = jt_to_double(S, v);
      if (d > 3.4028234663852886e38 || d < -3.4028234663852886e38) range_error(S, v, "SINGLE-FLOAT", 0);
      out->f = (float)d;
      return;
    }
    case FT_STRING:
      if (v != JT_NIL && !jt_isstring(v)) jt_type_error(S, v, JT_SYM(S, STRING));
      /* C would see the string end at its first NUL: refused, not cut */
      for (size_t i = 0; v != JT_NIL && i < jt_str_(v)->len; i++)
        if (jt_str_(v)->chars[i] == 0) jt_error(S, "a string holding a NUL character cannot be passed to C as :string");
      out->p = NULL;
      return;
    case FT_POINTER:
      if (v == JT_NIL) { out->p = NULL; return; }
      if (!jt_is(v, JT_TFOREIGN)) jt_type_error(S, v, jt_intern_keyword(S, "POINTER"));
      out->p = ((jt_Foreign *)v)->ptr;
      return;
  }
}

static jt_V f_foreign_call(jt_State *S, int argc, jt_V *argv) {
  jt_FFI *F = S->ffi;
  Decl *d = F->decls[jt_o(S->ci->fn)->aux];
  if (d->unavailable)
    jt_error(S, "the foreign function %s (%s of %s) is unavailable: %s", jt_symname(S, d->name), d->symbol,
             d->library, d->unavailable);
  jt_fuel_charge(S, 1);
  Val vals[MAX_ARGS];
  void *avals[MAX_ARGS];
  for (int k = 0; k < argc; k++) {
    convert(S, d->args[k], argv[k], &vals[k]);
    avals[k] = &vals[k];
  }
  /* strings as UTF-8 in the scratch buffer, pointed to once it stops moving */
  size_t at[MAX_ARGS];
  F->scratch.n = 0;
  for (int k = 0; k < argc; k++) {
    if (d->args[k] != FT_STRING || argv[k] == JT_NIL) continue;
    at[k] = F->scratch.n;
    jt_String *str = jt_str_(argv[k]);
    for (size_t i = 0; i < str->len; i++) {
      char u[4];
      jt_buf_put(&F->scratch, u, jt_utf8_encode(str->chars[i], u));
    }
    jt_buf_putc(&F->scratch, 0);
  }
  for (int k = 0; k < argc; k++)
    if (d->args[k] == FT_STRING && argv[k] != JT_NIL) vals[k].p = F->scratch.p + at[k];
  union { ffi_arg a; ffi_sarg s; int64_t i64; uint64_t u64; double d; float f; void *p; } r;
  memset(&r, 0, sizeof r);
  ffi_call(&d->cif, d->fn, &r, avals);
  switch (d->ret) {
    case FT_VOID: return JT_NIL;
    case FT_INT: return jt_make_integer(S, (int)r.s);
    case FT_BOOL: return jt_bool((int)r.s != 0);
    case FT_LONG: case FT_INT64: return jt_make_integer(S, r.i64);
    case FT_UINT64: case FT_SIZE: {
      if (r.u64 <= (uint64_t)INT64_MAX) return jt_make_integer(S, (int64_t)r.u64);
      mpz_t z;
      mpz_init_set_ui(z, r.u64);
      jt_V v = jt_make_integer_mpz(S, z);
      mpz_clear(z);
      return v;
    }
    case FT_DOUBLE: return jt_make_float(S, r.d);
    case FT_FLOAT: return jt_make_float_as(S, (double)r.f, true);
    case FT_STRING: return r.p ? jt_string_from_cstr(S, r.p) : JT_NIL;
    case FT_POINTER: return r.p ? jt_make_foreign(S, r.p, jt_intern_keyword(S, "POINTER")) : JT_NIL;
  }
  return JT_NIL;
}

static const jt_Reg ffi_fns[] = {
  {"%DEFINE-FOREIGN", f_define_foreign, 1, 1, "(%define-foreign form) What (define-foreign ...) does."},
  {"%FOREIGN-GRANTED-P", f_foreign_granted_p, 1, 1, "(%foreign-granted-p library) True if LIBRARY is granted."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_ffi(jt_State *S) { jt_register(S, ffi_fns); }
