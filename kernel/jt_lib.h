/*
** jt_lib.h — the kernel's internal library interface.
**
** What one kernel module offers the others: constructors, equality, list and
** string helpers, calling Lisp from C, argument checking, and the entry
** points of the reader, printer, streams, numbers, hash tables and format.
** Built-in functions are C functions of type jt_CFn registered with jt_Reg
** tables; each module has a jt_open_<module> that registers its table.
*/
#ifndef jt_lib_h
#define jt_lib_h

#include <stdarg.h>
#include <stdbool.h>
#include "jt_state.h"
#include "jt_gc.h"
#include "jt_err.h"

/* ----------------------------------------------------- built-in functions */

/* Declare a primitive: JT_FN(car) { ... } defines `static jt_V car(...)`. */
#define JT_FN(cname) static jt_V cname(jt_State *S, int argc, jt_V *argv)
#define JT_UNUSED_ARGS ((void)S, (void)argc, (void)argv)

typedef struct jt_Reg {
  const char *name;   /* Lisp name, exactly as printed (upper case) */
  jt_CFn fn;
  int16_t minargs, maxargs;  /* maxargs -1: &rest */
  const char *doc;    /* "(name lambda-list) what it does" */
} jt_Reg;

/* Register a NULL-terminated table; the symbols become locked built-ins. */
void jt_register(jt_State *S, const jt_Reg *regs);
jt_V jt_make_prim(jt_State *S, jt_V name, jt_CFn fn, int minargs, int maxargs,
                  const char *doc);

/* Module entry points, called by jt_state_open in this order. */
void jt_open_base(jt_State *S);     /* obj.c: symbols, equality, types, misc */
void jt_open_cond(jt_State *S);     /* cond.c: conditions and restarts */
void jt_open_frames(jt_State *S);   /* frames.c: a pause's frames */
void jt_open_num(jt_State *S);      /* num.c */
void jt_open_list(jt_State *S);     /* list.c: conses and lists */
void jt_open_seq(jt_State *S);      /* seq.c: generic sequence functions */
void jt_open_array(jt_State *S);    /* array.c: arrays and bit vectors */
void jt_open_env(jt_State *S);      /* env.c: the clock and the environment */
void jt_open_str(jt_State *S);      /* str.c: characters and strings */
void jt_open_hash(jt_State *S);     /* hash.c */
void jt_open_struct(jt_State *S);   /* struct.c: structure runtime */
void jt_open_trace(jt_State *S);    /* trace.c: traced functions */
/* trace.c: the name a traced function is traced under, or JT_NOVALUE (also
** while a trace report prints); the traced call, reported; the set
** emptied (per transaction: jiti_reset_io_syntax). */
jt_V jt_trace_name(jt_State *S, jt_V fn);
jt_V jt_trace_call(jt_State *S, jt_V name, jt_V fn, int argc, jt_V *argv);
void jt_trace_reset(jt_State *S);
void jt_open_io(jt_State *S);       /* io.c: streams, print functions */
void jt_open_fstream(jt_State *S);  /* fstream.c: the world's files and their streams */
void jt_reset_io_syntax(jt_State *S);  /* io.c: standard printer/reader variables */
void jt_open_read(jt_State *S);     /* read.c: read-from-string etc. */
void jt_open_format(jt_State *S);   /* format.c */
void jt_open_meta(jt_State *S);     /* meta.c: kernel properties of symbols */
void jt_open_census(jt_State *S);   /* census.c: a form gate's walk */
void jt_open_defs(jt_State *S);     /* defs.c: definitions beside a symbol's cells as entries */
/* census.c: the walk of jiti_form_read (JITI_FORM_CLEAN or the first
** finding); signals storage-condition when out of memory. */
jiti_FormVerdict jt_form_census(jt_State *S, jt_V form, const jiti_FormPolicy *policy);

/* Kernel properties of a symbol (meta.c): a deftype's expander under
** %DEFTYPE, a defsetf's under %SETF-UPDATER / %SETF-EXPANDER.  Kept apart
** from the symbol's own plist, which user code can rewrite. */
jt_V jt_meta_get(jt_State *S, jt_V sym, jt_V key);
void jt_meta_put(jt_State *S, jt_V sym, jt_V key, jt_V val);
/* A structure, condition or class named NAME is being defined: a DEFTYPE
** of that name goes (its entry with it), as the later definition wins. */
void jt_meta_type_replaced(jt_State *S, jt_V name);
/* defs.c: SYM's property list is about to change (signals
** locked-symbol-error for a built-in symbol: its properties are the
** language's), and has changed (the world records it). */
void jt_plist_check(jt_State *S, jt_V sym);
void jt_plist_changed(jt_State *S, jt_V sym);

/* ----------------------------------------------------------- constructors */

jt_V jt_cons(jt_State *S, jt_V car, jt_V cdr);
jt_V jt_list(jt_State *S, int n, ...);       /* arguments need no rooting */
jt_V jt_list_from(jt_State *S, int n, const jt_V *items);
jt_V jt_make_float(jt_State *S, double d);   /* a double-float */
/* A float of either format: d rounded to a single-float when `single`
** (the result may be infinite: callers check the range). */
jt_V jt_make_float_as(jt_State *S, double d, bool single);
jt_V jt_make_vector(jt_State *S, size_t n, jt_V fill);
jt_V jt_make_string(jt_State *S, size_t n, uint32_t fill);
jt_V jt_string_from_utf8(jt_State *S, const char *s, size_t len);
/* The same for a name the kernel encoded itself: surrogates survive. */
jt_V jt_string_from_name_utf8(jt_State *S, const char *s, size_t len);
jt_V jt_string_from_cstr(jt_State *S, const char *s);
jt_V jt_make_symbol(jt_State *S, jt_V name);  /* uninterned */
/* The same, given the name's UTF-8 too (not kept: the symbol copies it). */
jt_V jt_make_symbol_utf8(jt_State *S, jt_V name, const char *utf8, size_t len);
jt_V jt_make_struct(jt_State *S, jt_V layout, uint32_t nslots);
jt_V jt_make_foreign(jt_State *S, void *ptr, jt_V tag);

/* UTF-8 <-> code points.  jt_string_utf8 returns a malloc'd NUL-terminated
** copy (caller frees) and its byte length in *len (may be NULL). */
char *jt_string_utf8(jt_State *S, jt_V str, size_t *len);
size_t jt_utf8_encode(uint32_t c, char out[4]);
/* Decode one code point at s[*i] (advancing *i); invalid bytes give U+FFFD. */
uint32_t jt_utf8_decode(const char *s, size_t len, size_t *i);
/* The same for a Lisp string's own UTF-8 (names, a program's reads): a
** surrogate code point jt_utf8_encode wrote decodes back to itself. */
uint32_t jt_utf8_decode_lisp(const char *s, size_t len, size_t *i);

/* Setter primitives follow one convention so that setf can find them: the
** setter of accessor ACC is the primitive %SET-ACC taking the accessor's
** arguments followed by the new value, and returning the new value, e.g.
** (%SET-AREF vector index value), (%SET-GETHASH key table value),
** (%SET-CHAR string index char), (%SET-NTH n list value). */

/* Simple (one-to-one) case mapping of a code point (str.c); equalp,
** char-equal and equalp hash tables all fold with jt_char_downcase. */
uint32_t jt_char_upcase(uint32_t c);
uint32_t jt_char_downcase(uint32_t c);
/* alphanumericp: a letter (alpha-char-p) or a decimal digit. */
bool jt_char_alphanumeric(uint32_t c);
/* The character named cs[0..n) (any case: Space, Soh, Rubout, U+41, ...),
** as name-char and the reader's #\Name know it; false if none. */
bool jt_char_by_name(const uint32_t *cs, size_t n, uint32_t *code);
/* The name the printer and char-name give c (Nul, Soh, ..., Space, Rubout),
** or NULL for a character without one. */
const char *jt_char_name_of(uint32_t c);

/* Grow an adjustable string/vector by one element (vector-push-extend);
** jt_string_append adds n characters at once (cs may be the string's own). */
void jt_string_push(jt_State *S, jt_V str, uint32_t c);
void jt_string_append(jt_State *S, jt_V str, const uint32_t *cs, size_t n);
void jt_vector_push(jt_State *S, jt_V vec, jt_V v);

/* ---------------------------------------------------------------- symbols */

/* Symbols and packages (package.c).  jt_intern is for C code naming the
** kernel's own symbols: a standard name gives COMMON-LISP's symbol, a
** %-name the internal one, any other JITI's.  The others take a package
** index (JT_PKG_*); jt_find_symbol finds a symbol present in it. */
jt_V jt_intern(jt_State *S, const char *name);          /* exact name */
jt_V jt_intern_keyword(jt_State *S, const char *name);  /* name without ':' */
/* Put an existing symbol object into the symbol table (bootstrap). */
void jt_intern_symbol_object(jt_State *S, jt_V sym);
jt_V jt_intern_bytes(jt_State *S, const char *name, size_t len, int package);  /* UTF-8 */
jt_V jt_find_symbol(jt_State *S, const char *name, size_t len, int package);
uint32_t jt_symbol_name_hash(const char *name, size_t len);
void jt_open_packages(jt_State *S);     /* the fixed packages, first of all */
void jt_open_package_fns(jt_State *S);  /* the package functions */
void jt_packages_finish(jt_State *S);   /* after the library: split COMMON-LISP and JITI */
jt_V jt_package_of_index(jt_State *S, int index);
bool jt_packages_ready(jt_State *S);    /* true once jt_packages_finish ran */
/* The package named by a string designator (or a package), or NIL. */
jt_V jt_find_package(jt_State *S, jt_V designator);
jt_V jt_package_named(jt_State *S, const char *name, size_t len);
jt_V jt_package_named_or_made(jt_State *S, const char *name, size_t len);

/* refuse.c: why a standard name jiti leaves out is missing (NULL: no
** recorded reason); jt_refusal_report writes the report of an undefined
** function or unbound variable named by a COMMON-LISP symbol and returns
** true, false for any other name. */
const char *jt_refusal_reason(const char *name);
bool jt_refusal_report(jt_State *S, jt_V sym, bool function, jt_V stream);
/* *package* (checked: a type-error resets it to COMMON-LISP-USER). */
jt_V jt_current_package(jt_State *S);
/* package.c, for the reader: lookups in pkg: an unqualified name (interned when new;
** refused in a locked package), and pkg:name (external only; NOVALUE). */
jt_V jt_package_read_intern(jt_State *S, jt_V pkg, const char *name, size_t len);
jt_V jt_package_read_external(jt_State *S, jt_V pkg, const char *name, size_t len);
/* A package's definition as a world stores it (a canonical DEFPACKAGE
** form), and the package made (or brought up to date) from one, leniently:
** packages and symbols it names but that are not there yet are made. */
jt_V jt_package_definition(jt_State *S, jt_V pkg);
void jt_package_import(jt_State *S, jt_V form);
/* Make a JITI symbol external (a name the host defined). */
void jt_publish(jt_State *S, jt_V sym);
/* The symbol named `name` accessible in pkg, or JT_NOVALUE. */
jt_V jt_find_accessible(jt_State *S, jt_V pkg, const char *name, size_t len);
/* Is sym what its name designates in pkg?  Is it external in its home? */
bool jt_symbol_accessible(jt_State *S, jt_V sym, jt_V pkg);
bool jt_symbol_external(jt_State *S, jt_V sym);
jt_Symbol *jt_symobj(jt_State *S, jt_V sym);  /* handles NIL and T */
const char *jt_symname(jt_State *S, jt_V sym);
bool jt_iskeyword(jt_V v);

/* Global value and function cells (respect dynamic bindings). */
jt_V jt_symbol_value(jt_State *S, jt_V sym);      /* signals unbound-variable */
void jt_set_symbol_value(jt_State *S, jt_V sym, jt_V v);  /* checks locks */
jt_V jt_fdefinition(jt_State *S, jt_V name);      /* undefined-function, with restarts */
/* NAME's function, or JT_UNBOUND when it names none a program may call (a
** macro, a special operator, a kernel-internal helper). */
jt_V jt_function_or_unbound(jt_State *S, jt_V name);
/* The function a call of NAME (funcall, apply) calls: as jt_fdefinition,
** but an undefined NAME offers the call's restarts (jt_err.h). */
jt_V jt_callee(jt_State *S, jt_V name);
/* In a primitive: return if its caller is kernel code, else signal that the
** primitive is an undefined function (see obj.c). */
void jt_check_kernel_caller(jt_State *S);
/* Signal locked-symbol-error unless user code may define s as `what` ("a
** function", "a macro", ...): built-in symbols and special operators are
** locked; the message says which the symbol is. */
void jt_check_definable(jt_State *S, jt_Symbol *s, const char *what);
/* Whether jt_check_definable would let it be defined. */
static inline bool jt_definable(const jt_Symbol *s) {
  return !(s->h.flags & (JT_SYM_LOCKED | JT_SYM_SPECFORM));
}
/* The same for a new structure or condition type: built-in type names
** (error, cons, integer, ...) and locked symbols are refused. */
void jt_check_type_definable(jt_State *S, jt_V name, const char *what);
/* Whether NAME is a symbol naming a type (a built-in type, a structure,
** condition or class, a DEFTYPE), and whether it was proclaimed a
** declaration name ((declaim (declaration name))); no symbol is both. */
bool jt_names_type(jt_State *S, jt_V name);
bool jt_names_declaration(jt_State *S, jt_V name);
void jt_defglobal(jt_State *S, const char *name, jt_V value);  /* special var */
/* Dynamic binding: push a binding; jt_unbind_to restores. */
void jt_bind(jt_State *S, jt_V sym, jt_V value);
void jt_unbind_to(jt_State *S, size_t nbind);

/* --------------------------------------------------------------- equality */

bool jt_eql(jt_V a, jt_V b);
bool jt_equal(jt_State *S, jt_V a, jt_V b);
bool jt_equalp(jt_State *S, jt_V a, jt_V b);

/* ------------------------------------------------------------------ lists */

/* A type-error for V, which was to be a proper list: its datum is the atom
** ending a dotted list (expected LIST), or the circular list itself
** (expected (SATISFIES LIST-LENGTH)). */
JT_NORETURN void jt_improper_list(jt_State *S, jt_V v);
/* list.c: the length of a proper list; signals type-error for dotted or
** circular lists. */
size_t jt_list_length(jt_State *S, jt_V list);
/* The number of conses along a list's cdrs, whether it ends in NIL or in
** another atom (a dotted list); a circular list signals the type-error of
** jt_improper_list. */
size_t jt_list_count(jt_State *S, jt_V list);
jt_V jt_nreverse_list(jt_V list);
/* A fresh copy of a proper list (type-error for a dotted or circular one):
** what a primitive hands out of, or keeps from, a list the program can
** change — the program's changes then never reach the kernel's own. */
jt_V jt_list_copy(jt_State *S, jt_V list);

/* A walk down the cdrs of a list that user code may have made circular
** (every list built at run time).  A C loop over such a list must end:
** either it counts the list first (jt_list_length, jt_list_count) and
** walks no further than the count, or it steps with jt_walk_next, which
** notices a cycle on the way and signals the type-error of
** jt_improper_list for the walked list.  (Brent's method: each next cell is
** compared with a marked one, and the mark moves to the current cell after
** 1, 2, 4, 8 ... steps; so a cycle is found within about three times the
** list's length in steps, with no allocation.)  Like JT_TICK, a walk pays
** a unit of fuel per 256 cells, so that walking a long proper list over
** and over is metered too.
**
**   jt_Walk w = jt_walk(list);
**   for (jt_V l = list; jt_iscons(l); l = jt_walk_next(S, &w, l)) ...
**
** The list must stay reachable while it is walked (an argument, a rooted
** value).  A loop that calls user code at each element need not use it:
** those calls pay fuel, and a circular list may be the program's intent (a
** generator that the called function leaves with a non-local exit). */
typedef struct jt_Walk { jt_V list, mark; size_t steps, next; } jt_Walk;
void jt_fuel_tick(jt_State *S);
static inline jt_Walk jt_walk(jt_V list) {
  jt_Walk w = {list, list, 0, 1};
  return w;
}
static inline jt_V jt_walk_next(jt_State *S, jt_Walk *w, jt_V cell) {
  jt_V d = jt_cons_(cell)->cdr;
  if (__builtin_expect(d == w->mark, 0)) jt_improper_list(S, w->list);
  if (++w->steps == w->next) { w->mark = d; w->next <<= 1; }
  if ((w->steps & 255u) == 0) jt_fuel_tick(S);
  return d;
}
/* Collect into a list in order: root `head` and use jt_tail_append.
**   jt_V head = JT_NIL, tail = JT_NIL; JT_ROOT(S, head); JT_ROOT(S, tail)?
** Simpler: push on the value stack and jt_list_from. */

/* ------------------------------------------------------------------ types */

bool jt_typep(jt_State *S, jt_V v, jt_V type);
/* The expansion of a DEFTYPE'd specifier: EXPANDER applied to the list ARGS. */
jt_V jt_type_expand(jt_State *S, jt_V expander, jt_V args);
jt_V jt_type_of(jt_State *S, jt_V v);
bool jt_subtypep_layout(jt_V layout, jt_V ancestor);
bool jt_pathname_p(jt_State *S, jt_V v);   /* struct.c: a pathname (EQUAL compares its components) */
jt_V jt_find_layout(jt_State *S, jt_V name);  /* NIL if none */
/* The function of (object stream) a structure type's :print-function or
** :print-object option gave, own or inherited, or NIL (also for anything
** not a structure). */
jt_V jt_struct_printer(jt_V obj);

/* ------------------------------------------------------- argument checks */

/* Each returns the checked value (converted) or signals type-error. */
intptr_t jt_check_fixnum(jt_State *S, jt_V v);
size_t jt_check_index(jt_State *S, jt_V v);          /* non-negative fixnum */
/* The type-error of index idx outside [0, n) of sequence or array seq
** (expected type (integer 0 (n))), reported as SBCL reports it: "Invalid
** index 5 for (SIMPLE-VECTOR 2), should be a non-negative integer below
** 2." (how: JT_INDEX_AREF, or JT_INDEX_ELT as elt words it), "The index 5
** is too large for a list of length 2." for a list (array.c). */
enum { JT_INDEX_AREF, JT_INDEX_ELT };
JT_NORETURN void jt_index_error(jt_State *S, jt_V seq, jt_V idx, size_t n, int how);
jt_V jt_check_symbol(jt_State *S, jt_V v);
/* A string object: a displaced string is copied (read-only uses). */
jt_V jt_check_string(jt_State *S, jt_V v);
jt_V jt_check_cons(jt_State *S, jt_V v);
uint32_t jt_check_char(jt_State *S, jt_V v);
/* A function designator (symbol or function) resolved to a function. */
jt_V jt_check_function(jt_State *S, jt_V v);
/* A string designator (string, symbol, character) as a string object. */
jt_V jt_string_designator(jt_State *S, jt_V v);

/* Parse keyword arguments argv[start..argc) for the keys named by `keys`
** (symbol ids, JT_S_K_*), storing each value or JT_NOVALUE in out[i].
** Signals program-error on an odd count or an unknown key (unless
** :allow-other-keys t is given). */
void jt_parse_keys(jt_State *S, int argc, jt_V *argv, int start,
                   const int *keys, int nkeys, jt_V *out);

/* ------------------------------------------------------- calling Lisp */

jt_V jt_apply(jt_State *S, jt_V fn, int argc, jt_V *argv);  /* argv rooted */
jt_V jt_funcall(jt_State *S, jt_V fn, int n, ...);
/* Evaluate a form in the null lexical environment. */
jt_V jt_eval(jt_State *S, jt_V form);
/* Set the values of the current form (for primitives returning several). */
jt_V jt_values(jt_State *S, int n, const jt_V *vals);
jt_V jt_values2(jt_State *S, jt_V a, jt_V b);

/* Count one evaluation step against the fuel budget (loops in C call this
** once per iteration that runs user code). */
void jt_fuel_tick(jt_State *S);
/* Pay n units of fuel at once (work done in one step: a huge bignum
** operation); signals fuel exhaustion when fewer are left. */
void jt_fuel_charge(jt_State *S, uint64_t n);
/* C code that recurses on user data (a type specifier nested in itself
** through its car, a deep tree) calls this at each level: past the C stack
** budget the state was given it signals the depth limit, instead of
** crashing the host. */
void jt_check_cstack(jt_State *S);
/* One step of work done in C on the caller's behalf (a comparison inside
** SEARCH, a call of a primitive from C): 16 of them cost a unit of fuel. */
#define JT_WORK(S) do { if ((++(S)->work & 15u) == 0) jt_fuel_tick(S); } while (0)

/* --------------------------------------------------------- char buffers */

typedef struct jt_Buf { char *p; size_t n, cap; } jt_Buf;
void jt_buf_putc(jt_Buf *b, char c);
void jt_buf_put(jt_Buf *b, const char *s, size_t n);
void jt_buf_puts(jt_Buf *b, const char *s);
void jt_buf_printf(jt_Buf *b, const char *fmt, ...) JT_PRINTF(2, 3);
void jt_buf_free(jt_Buf *b);
char *jt_buf_cstr(jt_Buf *b);  /* for display: NUL characters shown as U+2400 */

/* ----------------------------------------------------------------- numbers
** num.c.  Integers are fixnums when they fit, bignums otherwise; ratios are
** canonical (an integral ratio is an integer).  Floats are double-floats or
** single-floats (JT_FLOAT_SINGLE, jt_obj.h), with SBCL's contagion rules. */

jt_V jt_make_integer(jt_State *S, int64_t n);
jt_V jt_make_integer_mpz(jt_State *S, mpz_srcptr z);   /* normalises */
/* Read `v` (an integer) into an initialised mpz. */
void jt_to_mpz(jt_V v, mpz_ptr out);
double jt_to_double(jt_State *S, jt_V real);           /* type-error if not real */
jt_V jt_num_add(jt_State *S, jt_V a, jt_V b);
jt_V jt_num_sub(jt_State *S, jt_V a, jt_V b);
jt_V jt_num_mul(jt_State *S, jt_V a, jt_V b);
jt_V jt_num_div(jt_State *S, jt_V a, jt_V b);
/* The real x as a float of the given format (floating-point-overflow when
** out of its range). */
jt_V jt_num_to_float(jt_State *S, jt_V x, bool single);
int jt_num_cmp(jt_State *S, jt_V a, jt_V b);   /* reals: -1, 0, 1 */
bool jt_num_equal(jt_State *S, jt_V a, jt_V b);  /* = */
bool jt_num_eql(jt_V a, jt_V b);  /* same type and value */
uint64_t jt_num_hash(jt_V v);     /* consistent with jt_num_eql */
/* Parse a token as a number in `base`; JT_NOVALUE if it is not number
** syntax.  Handles integers (trailing '.' = decimal), ratios, floats with
** e/d/f/s exponents. */
jt_V jt_num_parse(jt_State *S, const char *tok, size_t len, int base);
/* Whether *read-default-float-format* is single-float (or short-float):
** what a float without exponent marker, or with e, reads as, and the
** format printed without a marker. */
bool jt_num_default_single(jt_State *S);
/* Append the printed representation to `out`: floats as SBCL prints them,
** readable, with an exponent marker when not of the default format
** ("1.0", "1.0d0", "1.5d20"). */
void jt_num_print(jt_State *S, jt_V num, int base, bool radix, jt_Buf *out);
/* The shortest digits of d > 0 that read back as d (as a single-float when
** `single`), a tie between two rounded up as SBCL prints: NUL-terminated
** into digits (24 bytes), no trailing zeros, d ~ D.DDD x 10^exp10; returns
** their count (num.c: the printer's and format's digits). */
int jt_float_shortest(double d, bool single, char *digits, int *exp10);
/* The fuel that printing a big integer or ratio costs, and charging it (num.c). */
uint64_t jt_num_print_cost(jt_V num);
void jt_num_charge_print(jt_State *S, jt_V num);

/* ----------------------------------------------------------------- arrays
** array.c.  A one-dimensional array that is not displaced is an object of
** its own: a string (JT_TSTRING), a vector (JT_TVECTOR) or a bit vector (a
** JT_TVECTOR flagged JT_ARR_BIT, items the fixnums 0 and 1); any other
** array is a header (JT_TARRAY).  These work on all of them. */

enum { JT_ELT_T, JT_ELT_CHAR, JT_ELT_BIT };   /* upgraded element types */
bool jt_arrayp(jt_V v);
bool jt_vectorp(jt_V v);          /* an array of rank 1 */
bool jt_stringp(jt_V v);          /* a vector of characters */
bool jt_bit_vector_p(jt_V v);     /* a vector of bits */
bool jt_simple_array_p(jt_V v);   /* an array, not adjustable, displaced or with a fill pointer */
int jt_array_rank(jt_V a);
int jt_array_elt(jt_V a);         /* JT_ELT_* */
size_t jt_array_dim(jt_V a, int axis);
size_t jt_array_total(jt_V a);    /* total size, fill pointer ignored */
size_t jt_vector_length(jt_V v);  /* active length (the fill pointer if any) */
/* Element i (row-major, below the total size) of any array; set checks the
** element type.  Signal when a displaced array's target lost the element. */
jt_V jt_array_ref(jt_State *S, jt_V a, size_t i);
void jt_array_set(jt_State *S, jt_V a, size_t i, jt_V x);
/* The same as jt_array_ref without signalling: false instead (printer). */
bool jt_array_peek(jt_V a, size_t i, jt_V *out);
/* Set the fill pointer of a vector that has one (n within its size). */
void jt_set_fill_pointer(jt_State *S, jt_V v, size_t n);
/* A simple vector, string or bit vector of n elements (NIL, code 0, 0). */
jt_V jt_make_simple_array1(jt_State *S, int elt, size_t n);
/* A fresh simple string of the active characters of a string. */
jt_V jt_simple_string_copy(jt_State *S, jt_V str);
int jt_upgraded_elt(jt_State *S, jt_V type);   /* JT_ELT_* of an element type */
/* A general array of the given rank from nested sequences (#nA). */
jt_V jt_make_array_from_contents(jt_State *S, int rank, jt_V contents);
/* typep of an array type named `name` (atomic: args JT_NOVALUE; compound:
** the head's name and its arguments): 1 or 0, or -1 when it is none. */
int jt_array_typep(jt_State *S, jt_V v, const char *name, jt_V args);
jt_V jt_array_type_of(jt_State *S, jt_V v);    /* SIMPLE-VECTOR, STRING, ARRAY, ... */
jt_V jt_array_type_spec(jt_State *S, jt_V v);  /* type-of: (SIMPLE-VECTOR 3), ... */
/* subtypep when a is an array type (ARRAY, VECTOR, STRING, BIT-VECTOR and
** their simple and compound forms): 1 or 0 against another array type,
** SEQUENCE or ATOM; -1 when a is none, or b is another type. */
int jt_array_subtypep(jt_State *S, jt_V a, jt_V b);
bool jt_array_type_spec_p(jt_State *S, jt_V type);   /* one of those types */
jt_V jt_array_element_type(jt_State *S, jt_V a);

/* ---------------------------------------------------------------- complex
** complex.c.  A complex has two rational or two float parts; one with
** rational parts and an exact zero imaginary part is that rational. */

enum { JT_OP_ADD, JT_OP_SUB, JT_OP_MUL, JT_OP_DIV };
enum { JT_CX_SQRT, JT_CX_EXP, JT_CX_LOG, JT_CX_SIN, JT_CX_COS, JT_CX_TAN, JT_CX_ASIN,
       JT_CX_ACOS, JT_CX_ATAN, JT_CX_SINH, JT_CX_COSH, JT_CX_TANH, JT_CX_ASINH,
       JT_CX_ACOSH, JT_CX_ATANH };
/* (complex re im) in canonical form; re and im must be reals. */
jt_V jt_make_complex(jt_State *S, jt_V re, jt_V im);
jt_V jt_realpart(jt_V z);
jt_V jt_imagpart(jt_State *S, jt_V z);
/* a op b (JT_OP_*) where a or b is complex; the other any number. */
jt_V jt_complex_arith(jt_State *S, int op, jt_V a, jt_V b);
bool jt_complex_equal(jt_State *S, jt_V a, jt_V b);   /* = with a complex */
bool jt_complex_eql(jt_V a, jt_V b);                  /* both complex */
bool jt_complex_zerop(jt_V z);
jt_V jt_complex_negate(jt_State *S, jt_V z);
jt_V jt_num_negate(jt_State *S, jt_V x);   /* (- x), a float's sign flipped even at zero */
jt_V jt_conjugate(jt_State *S, jt_V z);
jt_V jt_complex_abs(jt_State *S, jt_V z);             /* a float */
jt_V jt_phase(jt_State *S, jt_V z);
/* A transcendental function (JT_CX_*) of a number, as a complex: for a
** complex argument, or a real one whose result is not real. */
jt_V jt_complex_fn(jt_State *S, int fn, jt_V x);
jt_V jt_complex_expt(jt_State *S, jt_V base, jt_V power);
void jt_open_complex(jt_State *S);

/* A random state holding these generator words (num.c). */
jt_V jt_make_random_state(jt_State *S, const uint64_t words[4]);

/* ---------------------------------------------------------- hash tables */

jt_V jt_make_hash(jt_State *S, int test, size_t size);
jt_V jt_hash_get(jt_State *S, jt_V h, jt_V key, bool *found);
void jt_hash_put(jt_State *S, jt_V h, jt_V key, jt_V val);
/* Grow h's buffers so that n entries fit without another rebuild (bulk
** insertion); never shrinks. */
void jt_hash_reserve(jt_State *S, jt_V h, size_t n);
bool jt_hash_rem(jt_State *S, jt_V h, jt_V key);
void jt_hash_clear(jt_State *S, jt_V h);
uint64_t jt_sxhash(jt_State *S, jt_V v, int test);

/* ---------------------------------------------------------------- streams */

jt_V jt_make_string_stream(jt_State *S);
/* An input stream reading characters start..end of `str` (not copied). */
jt_V jt_make_string_input_stream(jt_State *S, jt_V str, size_t start, size_t end);
/* NIL -> *standard-input*, T -> *terminal-io*; otherwise the stream, which
** must be an open input stream (signals otherwise). */
jt_V jt_input_stream(jt_State *S, jt_V designator);
/* The next character of an input stream (consumed if `consume`), or -1 at
** its end; signals unless it is an open input stream. */
int32_t jt_stream_read_char(jt_State *S, jt_V stream, bool consume);
/* Put back c, the last character read (signals if it was not). */
void jt_stream_unread_char(jt_State *S, jt_V stream, uint32_t c);
/* Signal end-of-file on stream. */
JT_NORETURN void jt_end_of_file(jt_State *S, jt_V stream);
/* Read from an input stream with the reader: begin sets R up on the
** stream's characters (as UTF-8), end advances the stream past what R
** consumed.  The stream must stay reachable in between. */
struct jt_Reader;
void jt_stream_reader_begin(jt_State *S, jt_V stream, struct jt_Reader *R);
void jt_stream_reader_end(jt_State *S, jt_V stream, const struct jt_Reader *R);
jt_V jt_stream_contents(jt_State *S, jt_V stream, bool clear);
/* NIL -> *standard-output*, T -> *terminal-io*; otherwise must be a stream
** (writing checks that it is an open output stream). */
jt_V jt_output_stream(jt_State *S, jt_V designator);
void jt_stream_putc(jt_State *S, jt_V stream, uint32_t c);
void jt_stream_write(jt_State *S, jt_V stream, const uint32_t *cs, size_t n);
void jt_stream_puts(jt_State *S, jt_V stream, const char *utf8);
void jt_stream_fresh_line(jt_State *S, jt_V stream);
/* fstream.c: CLOSE of a file stream (T, or NIL when closed already) and
** its element type. */
jt_V jt_file_stream_close(jt_State *S, jt_V stream, bool abort);
/* FINISH-OUTPUT and FORCE-OUTPUT of an output file stream: the file holds
** what was written so far (CLOSE :ABORT T puts back what it held). */
void jt_file_stream_finish(jt_State *S, jt_V stream);
jt_V jt_file_stream_element_type(jt_State *S, jt_V stream);
/* True for a binary file stream, of integers.  jt_file_read_element
** returns its next element (JT_EOF at the end); jt_file_write_element
** writes x as one, a type-error when x is not of its element type. */
bool jt_file_stream_binary_p(jt_V stream);
jt_V jt_file_read_element(jt_State *S, jt_V stream);
void jt_file_write_element(jt_State *S, jt_V stream, jt_V x);
/* FILE-POSITION of a file stream (a binary one counts elements), and
** FILE-STRING-LENGTH of a character one: the octets OBJECT (a character or
** a string) takes in the file. */
jt_V jt_file_stream_position(jt_State *S, jt_V stream, jt_V to);
jt_V jt_file_string_length(jt_State *S, jt_V object);
/* The column an output stream writes at next (a compound stream's: its
** output's). */
size_t jt_stream_column(jt_State *S, jt_V stream);
/* The stream that does the output of `stream` (through synonym, two-way
** and echo streams). */
jt_V jt_stream_sink(jt_State *S, jt_V stream);
/* typep of the stream type named `name` (STREAM, STRING-STREAM,
** TWO-WAY-STREAM...): 1 or 0, -1 when it names none. */
int jt_stream_typep(jt_State *S, const char *name, jt_V v);
/* class-of a stream, and the name it prints with (#<TWO-WAY-STREAM>). */
jt_V jt_stream_class(jt_State *S, jt_V v);
const char *jt_stream_print_name(jt_V v);
/* Whitespace in the current readtable (read.c). */
bool jt_read_whitespace_p(jt_State *S, uint32_t c);

/* ---------------------------------------------------------------- printer */

/* pretty.c.  A pretty stream captures the text of a logical block and
** the operations at their positions in it (jt_PPOp: a = the per-line
** prefix's length for START, the suffix's length for END, the amount for
** an indentation, the column for a tab; b = a tab's increment).
** jt_pretty_layout returns the text laid out by XP's rules within
** opt->width columns from column opt->col0, cut after opt->max characters
** or after opt->lines lines (miser and lines < 0: none) (malloc'd, its
** length in *outlen; NULL when out of memory). */
enum { JT_PP_START = 1, JT_PP_END,
       JT_PP_LINEAR, JT_PP_FILL, JT_PP_MISER, JT_PP_MANDATORY, JT_PP_LITERAL,
       JT_PP_INDENT_BLOCK, JT_PP_INDENT_CURRENT,
       JT_PP_TAB_LINE, JT_PP_TAB_SECTION, JT_PP_TAB_LINE_REL, JT_PP_TAB_SECTION_REL };
typedef struct jt_PPOp { int kind; size_t pos; intptr_t a, b; } jt_PPOp;
typedef struct jt_PPOptions {
  size_t width, col0, max;
  intptr_t miser, lines;
} jt_PPOptions;
uint32_t *jt_pretty_layout(const uint32_t *text, size_t n, const jt_PPOp *ops,
                           size_t nops, const jt_PPOptions *opt, size_t *outlen);
/* True for a pretty stream (one that a logical block writes to). */
bool jt_pretty_stream_p(jt_V stream);
/* Start a logical block on `stream`: returns the pretty stream to write
** its contents to (`stream` itself when it is one, else a new one whose
** text goes to `stream` when the block ends), with `prefix` written;
** `per_line` repeats it on every line of the block.  prefix must not be
** the characters of a string that the stream writes to. */
jt_V jt_pp_begin(jt_State *S, jt_V stream, const uint32_t *prefix, size_t plen,
                 bool per_line);
/* The number of blocks open on a pretty stream (0 for another stream):
** the printer's depth for *print-level*. */
size_t jt_pp_depth(jt_V stream);
/* The same for a block printing `object`: under *print-circle*, #n= is
** written before it when it is shared, and when it was printed before,
** #n# instead of the block (NIL is returned: no block to end). */
jt_V jt_pp_begin_object(jt_State *S, jt_V stream, const uint32_t *prefix, size_t plen,
                        bool per_line, jt_V object);
/* Record a newline, indentation or tab operation (no effect unless
** `stream` is a pretty stream inside a block). */
void jt_pp_op(jt_State *S, jt_V stream, int kind, intptr_t a, intptr_t b);
/* End the innermost block with `suffix`; ending the outermost lays the
** text out to the original stream, which is returned (else `stream`). */
jt_V jt_pp_end(jt_State *S, jt_V stream, const uint32_t *suffix, size_t slen);
/* Under *print-circle*, a pretty stream keeps the printer's table of what
** its outermost block shares (a vector of `cap` key and count pairs, see
** print.c) so that everything printed inside numbers its labels alike. */
jt_V jt_pp_circle(jt_V stream, size_t *cap);   /* NIL: none */
void jt_pp_set_circle(jt_State *S, jt_V stream, jt_V table, size_t cap, intptr_t labels);
intptr_t jt_pp_next_label(jt_V stream);   /* a new label */
intptr_t jt_pp_labels(jt_V stream);       /* labels given so far */
/* *print-pprint-dispatch* set for one transaction: a table with no
** entries again (as *readtable*: what the world's stored code prints must
** not depend on an earlier transaction; a world keeps its tables in its
** own variables). */
void jt_pp_reset_dispatch(jt_State *S);
/* For the printer, which holds characters not yet written (`pending`):
** an operation, the start of a nested block (its prefix among the
** pending characters) and the end of one that is not the outermost (its
** suffix to follow); false when the stream has no block open to nest in
** (or, for the end, the block is the outermost). */
void jt_pp_op_pending(jt_State *S, jt_V stream, int kind, intptr_t a, size_t pending);
bool jt_pp_nest(jt_State *S, jt_V stream, size_t pending);
bool jt_pp_unnest(jt_State *S, jt_V stream, size_t suffix_len, size_t pending);
/* Write a capture that outgrew the output limit flat to the host. */
void jt_pp_check_size(jt_State *S, jt_V stream);

/* print.c for the logical blocks: make the circle table of `object` for
** the new pretty stream `stream`; what to print before `object` (0
** nothing, -n #n#, n #n= with the label given now when `assign`, else
** INTPTR_MAX for shared but not yet printed). */
void jt_print_circle_scan(jt_State *S, jt_V stream, jt_V object);
intptr_t jt_print_circle_mark(jt_State *S, jt_V stream, jt_V object, bool assign);

/* Print `v` to `stream` honouring the *print-...* variables; `escape` true
** is prin1, false write with *print-escape* NIL (under *print-readably*
** that still escapes).  Circular and deep structure is bounded. */
void jt_print(jt_State *S, jt_V stream, jt_V v, bool escape);
/* princ: no escapes, *print-readably* bound to NIL. */
void jt_princ(jt_State *S, jt_V stream, jt_V v);
/* prin1-to-string (escape) or princ-to-string. */
jt_V jt_print_to_string(jt_State *S, jt_V v, bool escape);
/* Print into a malloc'd UTF-8 string of at most `max` bytes, never
** signalling (for reports, backtraces and the host API). */
char *jt_print_cstr(jt_State *S, jt_V v, bool escape, size_t max);
/* prin1 as the world names things: symbols relative to COMMON-LISP-USER,
** qualified with "::" whatever is exported (jt_print_cstr otherwise). */
char *jt_print_canonical(jt_State *S, jt_V v, size_t max);
/* The same, with the byte length (the text may contain NUL characters). */
char *jt_print_cstr_len(jt_State *S, jt_V v, bool escape, size_t max, size_t *len);

/* ----------------------------------------------------------------- reader */

typedef struct jt_Reader {
  const char *src;
  size_t len;
  size_t pos;
  int depth;
  bool bom;         /* skip a UTF-8 byte order mark at position 0 (default) */
  bool preserve_whitespace;  /* leave the whitespace after a datum unread */
  bool make_packages;  /* a package prefix naming no package makes it (empty),
                          and pkg:name interns: for a host that reads a name
                          only to compare it, in a checkpoint it restores */
  /* Where the text came from, for the positions of its errors: a name (a
  ** file, "<input>"; NULL: none) and the line and column its first byte has
  ** there (1 and 1 unless the host says otherwise). */
  const char *origin;
  long line0, col0;
  size_t form_start, form_end;   /* set by jt_read: the datum it returned */
  /* A program's read (READ, READ-FROM-STRING, ...): *readtable* is
  ** honoured and #. evaluates when *read-eval* is true.  False (the
  ** default): the standard syntax, and #. is a reader error — the kernel's
  ** reads of source the form gate has not checked. */
  bool program;
  jt_V stream;      /* program reads from a stream: it (rooted by the caller), for
                       reader macro functions; else NIL */
} jt_Reader;

void jt_reader_init(jt_Reader *R, const char *src, size_t len);
/* The next datum, or JT_EOF at end of input.  Signals reader-error (or
** end-of-file inside an unfinished datum) whose report names the line and
** column, counted from 1 at the text's start (a column in characters):
** "ORIGIN:LINE:COLUMN: what" with an origin, else "what (at LINE:COLUMN)";
** the condition's :position is the byte offset.  Like READ, the one
** whitespace character that ends a datum is consumed, unless
** preserve_whitespace is set. */
jt_V jt_read(jt_State *S, jt_Reader *R);
/* The line and column of byte `pos` of R's text, as its errors count them. */
void jt_reader_where(const jt_Reader *R, size_t pos, long *line, long *col);

/* ------------------------------------------------------------- conditions
** cond.c.  Conditions are structure instances whose layout has the
** JT_LAYOUT_CONDITION flag. */

bool jt_is_condition(jt_V v);
/* Make a condition of type `type` (a symbol) from an initarg plist given as
** 2n values (keyword, value, ...).  Unknown types signal an error. */
jt_V jt_make_condition(jt_State *S, jt_V type, int n2, const jt_V *initargs);
/* Write the condition's report (what princ prints) to `stream`. */
void jt_condition_report(jt_State *S, jt_V stream, jt_V cond);
/* Value of a condition or structure slot by name, JT_NOVALUE if absent. */
jt_V jt_slot_value(jt_State *S, jt_V obj, jt_V slot_name);

/* ----------------------------------------------------------------- format */

/* (format stream control args...) with `stream` already resolved. */
void jt_format(jt_State *S, jt_V stream, jt_V control, int argc, jt_V *argv);

#endif
