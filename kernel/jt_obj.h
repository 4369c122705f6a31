/*
** jt_obj.h — the object model of the jiti kernel.
**
** A Lisp value is a tagged machine word (jt_V).  The low three bits say what
** it is:
**
**    ...xx1   fixnum: a 63-bit signed integer, value = word >> 1
**    ...000   pointer to a heap object (jt_Obj header first)
**    ...010   an immediate constant: NIL, T, and internal markers
**    ...100   a character: code point = word >> 3
**
** NIL and T are immediates so that the commonest comparisons need no state;
** their symbol properties (name, package) live in two ordinary symbol
** objects held by the state (jt_symobj maps the immediates to them).
**
** Heap objects are never moved by the collector (mark and sweep), so a C
** pointer to an object stays valid as long as the object is reachable.
** Reachability from C is the caller's business: see jt_gc.h for the rules.
**
** Every store into a slot of a heap object that existed before the current
** operation passes JT_SET (the write barrier).  The world layer uses that one
** choke point to log old values while a checkpoint is open.
*/
#ifndef jt_obj_h
#define jt_obj_h

#include <stddef.h>
#include <stdint.h>
#include <gmp.h>

typedef uintptr_t jt_V;
typedef struct jt_State jt_State;

/* ---------------------------------------------------------------- tagging */

#define JT_NIL     ((jt_V)0x02)
#define JT_T       ((jt_V)0x12)
#define JT_UNBOUND ((jt_V)0x22)  /* marks an empty value or function cell */
#define JT_EOF     ((jt_V)0x32)  /* reader's end-of-input marker, never a datum */
#define JT_NOVALUE ((jt_V)0x42)  /* internal "absent argument" marker */

#define jt_isfix(v)   (((v) & 1) != 0)
#define jt_fixval(v)  ((intptr_t)(v) >> 1)
#define jt_mkfix(n)   ((jt_V)(((uintptr_t)(intptr_t)(n) << 1) | 1))
#define JT_FIXMAX     (INTPTR_MAX >> 1)
#define JT_FIXMIN     (INTPTR_MIN >> 1)
#define jt_fixfits(n) ((n) >= JT_FIXMIN && (n) <= JT_FIXMAX)

#define jt_ischar(v)   (((v) & 7) == 4)
#define jt_charcode(v) ((uint32_t)((v) >> 3))
#define jt_mkchar(c)   ((jt_V)(((uintptr_t)(uint32_t)(c) << 3) | 4))
#define JT_CHAR_LIMIT  0x110000u

#define jt_isptr(v)   (((v) & 7) == 0 && (v) != 0)
#define jt_bool(c)    ((c) ? JT_T : JT_NIL)

/* ------------------------------------------------------------ heap objects */

enum jt_Type {
  JT_TCONS = 1,
  JT_TSYMBOL,
  JT_TSTRING,    /* character vector (code points), maybe adjustable */
  JT_TVECTOR,    /* general 1-D array of values, maybe adjustable */
  JT_TBIGNUM,    /* integer outside fixnum range (GMP mpz) */
  JT_TRATIO,     /* non-integer rational (GMP mpq), always canonical */
  JT_TFLOAT,     /* double-float */
  JT_THASH,      /* hash table, insertion ordered */
  JT_TPRIM,      /* function written in C */
  JT_TCLOSURE,   /* interpreted function: lambda + captured environment */
  JT_TFRAME,     /* lexical environment frame */
  JT_TCODE,      /* owner of analysed code (node arena + constants) */
  JT_TLAYOUT,    /* structure or condition type */
  JT_TSTRUCT,    /* structure or condition instance */
  JT_TSTREAM,    /* output stream */
  JT_TRESTART,   /* restart object (dynamic extent: jt_Restart, jt_state.h) */
  JT_TFOREIGN,   /* opaque foreign pointer */
  JT_TARRAY,     /* array header: any rank, or displaced (see array.c) */
  JT_TCOMPLEX,   /* complex number: two rationals or two floats (complex.c) */
  JT_TRANDOM,    /* random state: the words of the generator (num.c) */
  JT_TPACKAGE,   /* package (package.c) */
  JT_TINSTANCE,  /* instance of a standard class (CLOS, jt_clos.h) */
  JT_TCLASS,     /* class metaobject */
  JT_TGENERIC,   /* generic function: funcallable, dispatches to methods */
  JT_TMETHOD,    /* method of a generic function */
  JT_TYPE_COUNT
};

/* JT_ASSERT(cond, "what holds"): an invariant of the kernel itself, never
** a check of the program's input (that signals).  Compiled into the
** GC-stress and sanitizer builds (JITI_CHECKS), where a failure prints what
** should have held and aborts; nothing in a release build. */
#ifdef JITI_CHECKS
void jt_assert_fail(const char *what, const char *file, int line) __attribute__((noreturn));
#define JT_ASSERT(cond, what) do { if (!(cond)) jt_assert_fail((what), __FILE__, __LINE__); } while (0)
#else
#define JT_ASSERT(cond, what) ((void)0)
#endif

typedef struct jt_Obj {
  struct jt_Obj *gcnext;  /* large objects: list for the sweep; free slots: free list */
  uint8_t type;           /* enum jt_Type */
  uint8_t gcflags;        /* JT_GC_* (gc.c) */
  uint16_t flags;         /* per-type flags below */
  uint32_t aux;           /* per-type small field */
} jt_Obj;

/* Collector bits of an object (see jt_gc.h): marked in the current
** collection, in the old generation, in the remembered set. */
#define JT_GC_MARK 0x01
#define JT_GC_OLD  0x02
#define JT_GC_REM  0x04

#define jt_o(v)       ((jt_Obj *)(v))
#define jt_type(v)    (jt_o(v)->type)
#define jt_is(v, t)   (jt_isptr(v) && jt_type(v) == (t))

typedef struct jt_Cons {
  jt_Obj h;
  jt_V car, cdr;
} jt_Cons;

/* Symbol flags */
#define JT_SYM_SPECIAL   0x0001  /* globally special (defvar, defparameter) */
#define JT_SYM_CONSTANT  0x0002  /* defconstant, keywords, NIL, T */
#define JT_SYM_LOCKED    0x0004  /* built-in: no redefinition or rebinding */
#define JT_SYM_KEYWORD   0x0008
#define JT_SYM_MACRO     0x0010  /* function cell holds a macro expander */
#define JT_SYM_SPECFORM  0x0020  /* special operator; aux = analyser index */
#define JT_SYM_INTERNAL  0x0040  /* kernel-internal: refused in untrusted source */
#define JT_SYM_INTERNED  0x0080
#define JT_SYM_BUILTIN   0x0100  /* part of the language, defined at start-up */
#define JT_SYM_TYPE      0x0200  /* names a built-in structure or condition type */

typedef struct jt_Symbol {
  jt_Obj h;
  jt_V name;      /* string */
  jt_V value;     /* global or current dynamic value, or JT_UNBOUND */
  jt_V function;  /* function (or macro expander), or JT_UNBOUND */
  jt_V plist;
  jt_V setf_fn;   /* function for (setf name), or JT_UNBOUND */
  char *cname;    /* the name as NUL-terminated UTF-8, owned by the symbol */
  uint32_t hash;  /* of the name alone: it never changes (sxhash) */
  uint16_t package;  /* the home package's index (JT_PKG_*), 0 for none */
} jt_Symbol;

/* Package indices (package.c).  A symbol's home is a small index into the
** state's table of packages; the first ones are fixed.
**
** JT_PKG_INTERNAL is the home of the kernel's own helpers (names beginning
** with %, interned by C code or read while a library is loaded in kernel
** mode).  It has no name: nothing user code can do names it (the reader,
** INTERN, FIND-SYMBOL, FIND-PACKAGE and LIST-ALL-PACKAGES never reach it),
** so a user's %FOO is a different symbol; and no function reaches an
** internal symbol's function or value cell from a designator (see
** jt_is_internal's callers).  JT_PKG_JITI holds jiti's own extensions and
** the names the library uses; COMMON-LISP-USER uses it and COMMON-LISP. */
enum { JT_PKG_NONE = 0, JT_PKG_LISP = 1, JT_PKG_KEYWORD = 2, JT_PKG_INTERNAL = 3,
       JT_PKG_USER = 4, JT_PKG_JITI = 5, JT_PKG_FIRST_FREE = 6 };
#define jt_is_internal(v) (jt_is(v, JT_TSYMBOL) && ((jt_Symbol *)(v))->package == JT_PKG_INTERNAL)

/* Array flags (strings, vectors and array headers) */
#define JT_ARR_ADJUSTABLE 0x0001
#define JT_ARR_FILLPTR    0x0002
#define JT_ARR_BIT        0x0004  /* a bit vector: items are the fixnums 0 and 1 */
#define JT_ARR_CHAR       0x0008  /* header: elements are characters */
#define JT_ARR_DISPLACED  0x0010  /* header: data is the array displaced to */

typedef struct jt_String {
  jt_Obj h;
  uint32_t *chars;  /* code points; not NUL terminated */
  size_t len;       /* active length (the fill pointer when there is one) */
  size_t cap;       /* allocated code points (the array's total size) */
} jt_String;

typedef struct jt_Vector {
  jt_Obj h;
  jt_V *items;
  size_t len;
  size_t cap;
} jt_Vector;

/* An array header: every array that is not a plain vector, string or bit
** vector (rank other than 1, or displaced).  `data` holds the elements in
** row-major order: a private simple vector, string or bit vector, or (with
** JT_ARR_DISPLACED) the array displaced to, starting at `offset`.  The
** element type (JT_ARR_CHAR, JT_ARR_BIT, else T) is in the flags. */
typedef struct jt_Array {
  jt_Obj h;       /* aux = rank */
  jt_V data;
  size_t offset;  /* displaced index offset */
  size_t fill;    /* rank 1 with JT_ARR_FILLPTR: the fill pointer */
  size_t total;   /* product of the dimensions */
  size_t dims[];
} jt_Array;

typedef struct jt_Bignum { jt_Obj h; mpz_t z; } jt_Bignum;
typedef struct jt_Complex { jt_Obj h; jt_V re, im; } jt_Complex;
/* A random state: xoshiro256** words.  The state's own *random-state* is
** flagged JT_RANDOM_SCRATCH: like the generator before random states
** existed, it is not part of a world (a checkpoint does not save it). */
#define JT_RANDOM_SCRATCH 0x0001
typedef struct jt_Random { jt_Obj h; uint64_t s[4]; } jt_Random;

/* A package: its name and relations.  Which symbols are present in it (and
** which of those are external) is kept in the state's symbol table, keyed
** by package index; see package.c. */
#define JT_PACKAGE_LOCKED  0x0001  /* COMMON-LISP, JITI: nothing may change */
typedef struct jt_Package {
  jt_Obj h;         /* aux = index */
  jt_V name;        /* string; NIL once deleted */
  jt_V nicknames;   /* list of strings */
  jt_V use_list;    /* packages used, in order */
  jt_V used_by;     /* packages using this one */
  jt_V shadowing;   /* the shadowing symbols */
  jt_V doc;         /* documentation string or NIL */
} jt_Package;
typedef struct jt_Ratio  { jt_Obj h; mpq_t q; } jt_Ratio;
/* A float: a double-float, or a single-float (flagged JT_FLOAT_SINGLE)
** whose d holds a C float's value exactly. */
#define JT_FLOAT_SINGLE 0x0001
typedef struct jt_Float  { jt_Obj h; double d; } jt_Float;

/* Hash tables keep insertion order: entries[] holds pairs in order, index[]
** maps hash slots to entry numbers (-1 empty, -2 deleted).  Iteration is
** therefore deterministic, which export and tests rely on. */
enum { JT_HASH_EQ, JT_HASH_EQL, JT_HASH_EQUAL, JT_HASH_EQUALP };
typedef struct jt_HashEntry { jt_V key, val; } jt_HashEntry;
typedef struct jt_Hash {
  jt_Obj h;           /* aux = test (JT_HASH_*) */
  jt_HashEntry *entries;
  size_t nentries;    /* used entries including deleted holes */
  size_t count;       /* live entries */
  size_t entcap;
  int32_t *index;
  size_t idxcap;      /* power of two */
} jt_Hash;
#define JT_HASH_DELETED JT_UNBOUND  /* key of a removed entry */

typedef jt_V (*jt_CFn)(jt_State *S, int argc, jt_V *argv);

typedef struct jt_Prim {
  jt_Obj h;
  jt_CFn fn;
  int16_t minargs;
  int16_t maxargs;  /* -1: any number */
  jt_V name;        /* symbol */
  const char *doc;
} jt_Prim;

struct jt_Lambda;   /* analysed lambda, lives in a jt_Code arena */

#define JT_CLO_MACRO     0x0001  /* closure flag: a macro expander */
#define JT_CLO_ANALYSING 0x0002  /* a lazy definition being analysed (eval.c) */
#define JT_CLO_KERNEL    0x0004  /* a lazy function of the kernel's library:
                                    analysed in kernel mode, once, outside
                                    the caller's limits and checkpoints */

/* A closure whose lam is NULL is a *lazy definition*: a global function or
** macro imported from a world whose body has not been analysed yet; `code`
** then holds its defining form, (DEFUN name ...) or (DEFMACRO name ...).
** jt_closure_lambda analyses it at its first call (see eval.c). */
typedef struct jt_Closure {
  jt_Obj h;
  const struct jt_Lambda *lam;  /* NULL: not analysed yet (lazy) */
  jt_V code;    /* jt_Code owning lam (keeps the nodes alive), or the form */
  jt_V env;     /* captured jt_Frame or NIL */
  jt_V name;    /* symbol, (setf sym) or NIL */
} jt_Closure;

typedef struct jt_Frame {
  jt_Obj h;     /* aux = number of slots */
  jt_V parent;  /* enclosing frame or NIL */
  jt_V slots[];
} jt_Frame;

typedef struct jt_Code {
  jt_Obj h;
  struct jt_Arena *arena;  /* nodes, freed with the object */
  jt_V *consts;            /* values the nodes refer to: marked by the GC */
  size_t nconsts, constcap;
} jt_Code;

/* Layout flags */
#define JT_LAYOUT_CONDITION 0x0001

typedef struct jt_Layout {
  jt_Obj h;
  jt_V name;        /* symbol */
  jt_V parents;     /* list of parent layouts (conditions may have several) */
  jt_V slot_names;  /* vector of symbols, inherited slots first */
  jt_V initargs;    /* vector: keyword or NIL per slot */
  jt_V initforms;   /* vector: thunk (function of no args) or NIL per slot */
  jt_V report;      /* condition report: string, function, or NIL */
  jt_V info;        /* structures: the defstruct description the library reads (slots,
                    ** accessors, a :type structure's places), or NIL */
  jt_V class;       /* the class metaobject naming this type (jt_clos.h) */
  uint32_t nslots;
} jt_Layout;

typedef struct jt_Struct {
  jt_Obj h;     /* aux = number of slots */
  jt_V layout;
  jt_V slots[];
} jt_Struct;

/* CLOS (clos.c, jt_clos.h).  An instance points at a *wrapper* (a simple
** vector: class, instance slot names, shared slot cells of that version of
** the class) and a separate simple vector of slot values (JT_UNBOUND for an
** unbound slot).  Redefining a class gives it a new wrapper; an instance
** whose wrapper is not its class's current one is obsolete and is updated
** (new slot vector, same object) before its slots are next used.  Keeping
** the slots out of line is what lets change-class and redefinition change
** an instance's size without moving it. */
typedef struct jt_Instance {
  jt_Obj h;
  jt_V wrapper;
  jt_V slots;
} jt_Instance;

/* Class flags: the kind of class in the low bits, then properties. */
enum { JT_CLASS_STANDARD = 0, JT_CLASS_BUILTIN = 1, JT_CLASS_STRUCTURE = 2,
       JT_CLASS_CONDITION = 3, JT_CLASS_FORWARD = 4 };
#define JT_CLASS_KIND(c)      ((c)->h.flags & 0x7)
#define JT_CLASS_LOCKED       0x0010  /* part of the language: no redefinition */
#define JT_CLASS_FINALIZED    0x0020  /* cpl and effective slots computed */

typedef struct jt_Class {
  jt_Obj h;
  jt_V name;        /* symbol */
  jt_V supers;      /* direct superclasses (list of classes) */
  jt_V subs;        /* direct subclasses (list of classes) */
  jt_V cpl;         /* class precedence list, the class first; NIL until finalized */
  jt_V dslots;      /* direct slot definitions (list of simple vectors, clos.c) */
  jt_V slots;       /* effective slot definitions (list), in instance order */
  jt_V wrapper;     /* standard: the current wrapper; structure/condition: the layout */
  jt_V dinitargs;   /* direct :default-initargs, list of (key form function) */
  jt_V initargs;    /* effective default initargs, same shape */
  jt_V doc;         /* :documentation or NIL */
  jt_V form;        /* the defclass form, NIL for built-in classes */
  jt_V valid;       /* cache: initargs make-instance accepts (list, or T for any) */
  uint64_t valid_epoch;  /* the CLOS epoch `valid` was computed in (0: none) */
} jt_Class;

/* Generic function flags. */
#define JT_GF_LOCKED   0x0001  /* built-in: no redefinition, guarded methods */
#define JT_GF_REST     0x0002  /* lambda list has &rest or &key */
#define JT_GF_KEY      0x0004  /* lambda list has &key */
#define JT_GF_ALLOW    0x0008  /* lambda list has &allow-other-keys */

typedef struct jt_Generic {
  jt_Obj h;
  jt_V name;        /* symbol or (setf symbol) */
  jt_V lambda_list;
  jt_V methods;     /* list of methods, most recently added first */
  jt_V eqls;        /* NIL, or simple vector: per required argument, its EQL specializers */
  jt_V doc;
  jt_V form;        /* defgeneric form, or NIL for an implicit generic function */
  jt_V cache;       /* dispatch cache (clos.c); never part of the world's state */
  uint64_t epoch;   /* the CLOS epoch the cache was filled in */
  uint32_t dispatch;  /* bit i: required argument i is specialized by some method */
  uint16_t nreq, nopt;
  uint32_t ncached;   /* entries in the cache */
} jt_Generic;

/* Method flags: the qualifier in the low bits, then properties. */
enum { JT_METH_PRIMARY = 0, JT_METH_BEFORE = 1, JT_METH_AFTER = 2, JT_METH_AROUND = 3 };
#define JT_METH_QUAL(m)   ((m)->h.flags & 0x3)
#define JT_METH_CTX       0x0004  /* the function takes the next-method context first */
#define JT_METH_READER    0x0008  /* a slot reader: `slot` names the slot, no function */
#define JT_METH_WRITER    0x0010  /* a slot writer (new-value object) */
#define JT_METH_LOCKED    0x0020  /* a built-in method */
#define JT_METH_INLINE    0x0040  /* defined by a defgeneric :method option */
#define JT_METH_OTHER     0x0080  /* qualifiers other than none, :before, :after, :around
                                     (for another method combination; low bits PRIMARY) */

typedef struct jt_Method {
  jt_Obj h;
  jt_V gf;            /* the generic function, NIL once removed */
  jt_V qualifiers;    /* list */
  jt_V specializers;  /* list, one per required argument: a class or (EQL object) */
  jt_V lambda_list;   /* as written, specializers removed */
  jt_V function;      /* closure or primitive; NIL for slot readers and writers */
  jt_V slot;          /* slot readers and writers: the slot name */
  jt_V form;          /* the defmethod form, or NIL */
  jt_V doc;
} jt_Method;

/* Streams: all output goes through jt_stream_* (jt_lib.h) so that output
** limits and capture work in one place; all input through jt_stream_read*.
** The kind (aux) selects the stream's operations in io.c's one table of
** kinds (jt_stream.h).  A string output stream writes into `buffer`: its
** own adjustable string, or (JT_STREAM_TARGET) a caller's string with a
** fill pointer.  A string input stream reads characters pos..end of
** `buffer`; `bytes` holds their UTF-8 for the reader once READ is used on
** it, and `bpos` is then the byte offset of pos.  The compound kinds
** (compound.c) keep their parts in `in` and `out`. */
enum {
  JT_STREAM_STRING,        /* string output */
  JT_STREAM_HOST,          /* the host's output */
  JT_STREAM_STRING_INPUT,  /* string input */
  JT_STREAM_TWO_WAY,       /* in: input stream, out: output stream */
  JT_STREAM_ECHO,          /* in: input stream, out: output stream */
  JT_STREAM_CONCATENATED,  /* in: the list of input streams left */
  JT_STREAM_BROADCAST,     /* out: the list of output streams */
  JT_STREAM_SYNONYM,       /* in: the symbol */
  JT_STREAM_NKINDS
};
#define JT_STREAM_CLOSED 0x0001  /* stream flag: CLOSE was called */
#define JT_STREAM_TARGET 0x0002  /* string output into a caller's string */
#define JT_STREAM_PRETTY 0x0004  /* a pretty stream: captures a logical block to lay out */
#define JT_STREAM_INPUT  0x0008  /* characters (or bytes) can be read */
#define JT_STREAM_OUTPUT 0x0010  /* characters (or bytes) can be written */
#define JT_STREAM_KEPT   0x0020  /* the state's own (*terminal-io*...): CLOSE leaves it open */
#define JT_STREAM_UNREAD 0x0040  /* echo: the next character was unread, and echoed already */
#define JT_STREAM_FORWARDS 0x0080  /* its kind hands operations to another stream */
#define JT_STREAM_FILE   0x0100  /* a file stream of the world's file table (fstream.c):
                                    a string stream over the file's contents */
typedef struct jt_Stream {
  jt_Obj h;     /* aux = kind */
  jt_V buffer;  /* the string written to or read from */
  jt_V bytes;   /* input: UTF-8 of buffer for the reader, or NIL */
  jt_V in, out; /* compound streams: their parts (above) */
  jt_V etype;   /* string output: the element type given, or NIL (character) */
  size_t column;  /* output: for fresh-line and ~& */
  size_t pos, end;    /* input: next character and end (character indices) */
  size_t bpos, bend;  /* input with bytes: the byte offsets of pos and end;
                         echo: where the reader began in its input's bytes */
  jt_V pretty;  /* JT_STREAM_PRETTY: the layout's state (pretty.c), else NIL */
  jt_V file;    /* JT_STREAM_FILE: what fstream.c keeps of the file, else NIL */
} jt_Stream;

typedef struct jt_Foreign {
  jt_Obj h;
  void *ptr;
  jt_V tag;
} jt_Foreign;

/* ------------------------------------------------------------- accessors */

#define jt_cons_(v)   ((jt_Cons *)(v))
#define jt_sym_(v)    ((jt_Symbol *)(v))
#define jt_str_(v)    ((jt_String *)(v))
#define jt_vec_(v)    ((jt_Vector *)(v))
#define jt_big_(v)    ((jt_Bignum *)(v))
#define jt_ratio_(v)  ((jt_Ratio *)(v))
#define jt_flo_(v)    ((jt_Float *)(v))
#define jt_hash_(v)   ((jt_Hash *)(v))
#define jt_prim_(v)   ((jt_Prim *)(v))
#define jt_clo_(v)    ((jt_Closure *)(v))
#define jt_frame_(v)  ((jt_Frame *)(v))
#define jt_code_(v)   ((jt_Code *)(v))
#define jt_layout_(v) ((jt_Layout *)(v))
#define jt_struct_(v) ((jt_Struct *)(v))
#define jt_stream_(v) ((jt_Stream *)(v))
#define jt_arr_(v)    ((jt_Array *)(v))
#define jt_complex_(v) ((jt_Complex *)(v))
#define jt_pkg_(v)    ((jt_Package *)(v))
#define jt_inst_(v)   ((jt_Instance *)(v))
#define jt_class_(v)  ((jt_Class *)(v))
#define jt_gf_(v)     ((jt_Generic *)(v))
#define jt_method_(v) ((jt_Method *)(v))

#define jt_iscons(v)    jt_is(v, JT_TCONS)
#define jt_islist(v)    ((v) == JT_NIL || jt_iscons(v))
#define jt_issymbol(v)  ((v) == JT_NIL || (v) == JT_T || jt_is(v, JT_TSYMBOL))
#define jt_isstring(v)  jt_is(v, JT_TSTRING)
#define jt_isvector(v)  jt_is(v, JT_TVECTOR)
#define jt_isbig(v)     jt_is(v, JT_TBIGNUM)
#define jt_isratio(v)   jt_is(v, JT_TRATIO)
#define jt_isfloat(v)   jt_is(v, JT_TFLOAT)
#define jt_issingle(v)  (jt_isfloat(v) && (jt_o(v)->flags & JT_FLOAT_SINGLE))
#define jt_isinteger(v) (jt_isfix(v) || jt_isbig(v))
#define jt_isrational(v) (jt_isinteger(v) || jt_isratio(v))
#define jt_isreal(v)    (jt_isrational(v) || jt_isfloat(v))
#define jt_iscomplex(v) jt_is(v, JT_TCOMPLEX)
#define jt_isnumber(v)  (jt_isreal(v) || jt_iscomplex(v))
#define jt_ishash(v)    jt_is(v, JT_THASH)
#define jt_isfunction(v) (jt_is(v, JT_TPRIM) || jt_is(v, JT_TCLOSURE) || jt_is(v, JT_TGENERIC))
#define jt_isstruct(v)  jt_is(v, JT_TSTRUCT)

#define jt_car(v)  (jt_cons_(v)->car)
#define jt_cdr(v)  (jt_cons_(v)->cdr)
#define jt_floatval(v) (jt_flo_(v)->d)

/* ---------------------------------------------------------- write barrier */

/* Every store into a slot of an existing heap object goes through JT_SET:
**   JT_SET(S, obj, jt_cons_(obj)->car, value);
** `obj` is the object that owns the slot.  Freshly allocated objects that no
** other object points to yet may be initialised directly.  Two parties
** listen: the world layer while a checkpoint is open (it saves the object's
** old contents), and the collector when `obj` is in the old generation (it
** remembers where an old object may now point to a young one). */
void jt_barrier_slow(jt_State *S, jt_Obj *owner, jt_V *slot, jt_V val);
#define jt_barrier_wanted(S, o) (jt_barrier_active(S) || ((o)->gcflags & JT_GC_OLD))
#define JT_SET(S, obj, field, val) \
  do { \
    jt_V jt_val_ = (val); \
    jt_V *jt_slot_ = &(field); \
    if (jt_barrier_wanted(S, jt_o(obj))) jt_barrier_slow((S), jt_o(obj), jt_slot_, jt_val_); \
    *jt_slot_ = jt_val_; \
  } while (0)

/* Before changing a container's buffer or length without JT_SET (raw
** character writes, growing, shrinking, clearing): the world layer saves
** the whole container the first time it is touched in a checkpoint, and the
** collector rescans all of an old container at its next young collection. */
#define JT_TOUCH(S, obj) \
  do { \
    if (jt_barrier_wanted(S, jt_o(obj))) jt_barrier_slow((S), jt_o(obj), NULL, JT_NIL); \
  } while (0)

/* The collector's half alone, for objects the world layer never saves
** (lexical frames). */
void jt_gc_barrier_slow(jt_State *S, jt_Obj *owner, jt_V *slot, jt_V val);
#define JT_SET_GC(S, obj, field, val) \
  do { \
    jt_V jt_val_ = (val); \
    jt_V *jt_slot_ = &(field); \
    if (jt_o(obj)->gcflags & JT_GC_OLD) jt_gc_barrier_slow((S), jt_o(obj), jt_slot_, jt_val_); \
    *jt_slot_ = jt_val_; \
  } while (0)

#endif
