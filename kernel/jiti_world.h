/*
** jiti_world.h — the world layer of libjiti: checkpoints, managed entries,
** the data table, canonical export and import.  See docs/world.md.
**
** Only forms evaluated after jiti_world_enable are recorded.  All calls
** return JITI_OK or an error status; messages go to `err` (may be NULL).
*/
#ifndef jiti_world_h
#define jiti_world_h

#include "jiti.h"

/* Entry kinds (docs/world.md).  New kinds are added last: stores keep
** their names, hosts may keep their numbers. */
typedef enum jiti_EntryKind {
  JITI_ENTRY_FUNCTION, JITI_ENTRY_MACRO, JITI_ENTRY_VARIABLE,
  JITI_ENTRY_STRUCTURE, JITI_ENTRY_DATA, JITI_ENTRY_INVARIANT,
  JITI_ENTRY_CLASS, JITI_ENTRY_GENERIC, JITI_ENTRY_METHOD,
  JITI_ENTRY_FOREIGN, JITI_ENTRY_PACKAGE,
  JITI_ENTRY_TYPE,            /* deftype */
  JITI_ENTRY_SYMBOL_MACRO,    /* define-symbol-macro */
  JITI_ENTRY_SETF_EXPANDER,   /* defsetf, define-setf-expander */
  JITI_ENTRY_COMPILER_MACRO,  /* define-compiler-macro */
  JITI_ENTRY_DOCUMENTATION,   /* (setf documentation) of a name, a defvar's doc string */
  JITI_ENTRY_PLIST,           /* a symbol's property list */
  JITI_ENTRY_METHOD_COMBINATION, /* define-method-combination */
  JITI_ENTRY_FILE,            /* a file of the world's file table (open, with-open-file) */
  JITI_ENTRY_KIND_COUNT
} jiti_EntryKind;

const char *jiti_entry_kind_name(jiti_EntryKind k);  /* "function", ... */
int jiti_entry_kind_parse(const char *name);          /* -1 if unknown */

/* Start recording defining forms and tracking the data table. */
void jiti_world_enable(jiti_State *S);

/* ------------------------------------------------------------ checkpoints */

/* Open a checkpoint (they nest).  Returns the new depth. */
int jiti_checkpoint(jiti_State *S);
/* Undo everything since the innermost checkpoint and close it. */
void jiti_restore(jiti_State *S);
/* Keep everything since the innermost checkpoint and close it. */
void jiti_commit(jiti_State *S);
/* Keep everything since the OUTERMOST checkpoint and close it, leaving the
** checkpoints inside it open (they are renumbered from 1).  Each of those
** still restores exactly the state at which it was opened.  This is how a
** host keeps several changes provisional on top of each other and makes
** them permanent oldest first, as each becomes durable elsewhere. */
void jiti_commit_outermost(jiti_State *S);
int jiti_checkpoint_depth(jiti_State *S);

/* ---------------------------------------------------------------- entries */

/* Called once per entry: `name` is the printed name (e.g. "TOTAL-PRICE",
** "(SETF FOO)", or for data rows the printed key), `bytes` the canonical
** encoding.  Return non-zero to stop. */
typedef int (*jiti_EntryFn)(void *ud, jiti_EntryKind kind, const char *name,
                            const unsigned char *bytes, size_t len);

/* Export every managed entry in import order: packages, structures,
** classes, foreign declarations, macros, symbol macros, types, setf
** expanders, compiler macros, functions, variables, property lists,
** documentation, generic functions, methods, data rows, invariants; by name
** within a kind.  JITI_ERROR when a managed place holds an unexportable
** value; `err` names the place. */
jiti_Status jiti_export_all(jiti_State *S, jiti_EntryFn fn, void *ud,
                            char *err, size_t errlen);

/* Entries changed since the outermost open checkpoint: `fn` gets the new
** encoding, or bytes == NULL for an entry that was removed.  Variables and
** property lists that may have changed are included (possibly unchanged
** ones too): those whose symbol was changed, or every one when any other
** object was changed in place.  Without an open checkpoint: every one. */
jiti_Status jiti_export_changed(jiti_State *S, jiti_EntryFn fn, void *ud,
                                char *err, size_t errlen);
/* The same, counting only what changed since checkpoint `depth` (1 = the
** outermost; jiti_export_changed is depth 1) was opened: the changes of one
** provisional level, not of those below it.  A depth past the open
** checkpoints logs nothing, so every variable is included. */
jiti_Status jiti_export_changed_since(jiti_State *S, int depth, jiti_EntryFn fn, void *ud,
                                      char *err, size_t errlen);

/* Before a change is published: prove that one entry exported by
** jiti_export_changed (its kind, name and bytes as the callback got them)
** imports back as itself, evaluating nothing.  Its name, read as the import
** reads it (in COMMON-LISP-USER), must name this very entry — not an
** uninterned symbol, not a name cut short by a NUL character; its bytes
** must decode into values that encode to the same bytes (every symbol
** found again, every instance fitting its structure or class); a source
** entry's form must be the defining form of that name; a data row's key
** must find the row again.  JITI_OK; JITI_ERROR with `err` saying which rule
** the entry breaks; JITI_BADARG without an entry.  Costs about what
** exporting the entry cost. */
jiti_Status jiti_entry_verify(jiti_State *S, jiti_EntryKind kind, const char *name,
                              const unsigned char *bytes, size_t len, char *err, size_t errlen);

/* Rebuild one entry in this state from its name and canonical encoding
** (as given by the export callback).  A function or macro is installed
** without analysing its body, which happens at its first call (or
** macro expansion) with the macros and special variables of that moment —
** so the order functions, macros and variables are imported in does not
** matter.  An error in a body is therefore signalled by its first call, not
** here; jiti_world_analyze finds them all at once.  A foreign declaration
** whose library is not granted (or whose symbol is missing) is imported
** unavailable, with JITI_OK: jiti_foreign_unavailable (jiti.h) lists such
** declarations and says why. */
jiti_Status jiti_import_entry(jiti_State *S, jiti_EntryKind kind, const char *name,
                              const unsigned char *bytes, size_t len,
                              char *err, size_t errlen);

/* Check an entry received from another process (the kernel, from its
** worker) without evaluating anything and without changing S (it runs in a
** checkpoint it restores; S must have its world enabled).  JITI_OK when
** bytes are a well-formed canonical encoding of an entry of `kind` — the
** kind's tag, every value decoded (a structure or an instance as a
** stand-in, a package it names made for the check), nothing after it — and
** name is that entry's name, written as an export writes it: for a source
** entry the form is the defining form of that very name (as
** jiti_import_entry requires), for a data row the name is its key's printed
** form (unless the key holds a hash table or an instance, which are named
** by their address), a variable is not a built-in or a constant.  Else
** JITI_ERROR (JITI_LIMIT for an encoding too large to decode) with why in
** err.  For a foreign declaration, library (liblen bytes; may be NULL)
** receives the library it declares. */
jiti_Status jiti_entry_check(jiti_State *S, jiti_EntryKind kind, const char *name,
                             const unsigned char *bytes, size_t len, char *library, size_t liblen,
                             char *err, size_t errlen);

/* The entry name of the symbol `text` names (an invariant's name as the
** operator typed it: "pos" is POS), written as an export writes it, into
** out (n bytes).  Runs in a checkpoint it restores.  JITI_OK, or an error
** status with why in err (not a symbol, too long). */
jiti_Status jiti_entry_symbol_name(jiti_State *S, const char *text, char *out, size_t n,
                                   char *err, size_t errlen);

/* After the last jiti_import_entry: JITI_OK, or JITI_ERROR naming the types
** still waiting for a type they include or inherit from, which no imported
** entry defined.  (Types may be imported in any order: one that names a
** type not yet defined waits for it.) */
jiti_Status jiti_import_done(jiti_State *S, char *err, size_t errlen);

/* Make room for n more entries of `kind` (the data table, or the registry
** that holds every other kind), so that a bulk import grows it once rather
** than doubling it again and again; the collector also waits for about
** what importing n entries allocates (an import leaves next to no garbage).
** Only a hint: JITI_OK, or an error status (out of memory, a bad kind) that
** the caller may ignore. */
jiti_Status jiti_world_reserve(jiti_State *S, jiti_EntryKind kind, size_t n);

/* Analyse now every function and macro imported but not yet called, and
** the functions imported types, setf expanders and compiler macros made.
** Analysis runs the macros the bodies use: limits (may be NULL) bounds their
** fuel, as for jiti_invariants_check.  JITI_OK, or the status of the first
** failure (JITI_LIMIT when the fuel ran out), with a message naming the
** definition ("cannot analyse function F: ...", "... type T: ...") in err. */
jiti_Status jiti_world_analyze(jiti_State *S, const jiti_Limits *limits, char *err,
                               size_t errlen);

/* An entry as Lisp text, from its encoding alone: no type it uses need be
** defined in S (a structure prints as #S(NAME :SLOT value ...), a hash table
** with its contents, as a form that builds it).  jiti_entry_text: what the
** entry holds, on one line — a source form, a variable's or a data row's
** value; values are written as forms that evaluate to them (quoted where
** they must be), so the text can be pasted back.  jiti_entry_form: the
** whole entry as such a form (a variable, named name, as (DEFPARAMETER name
** value), a constant DEFCONSTANT, a data row as (WORLD-PUT key value)) laid
** out in lines of at most width characters where it can (0: one line),
** definitions with their bodies indented, data one element per line, so
** that a diff of two versions shows the lines that changed.  Malloc'd; "#<undecodable: why>"
** for a malformed encoding; NULL when memory is exhausted. */
char *jiti_entry_text(jiti_State *S, const unsigned char *bytes, size_t len);
char *jiti_entry_form(jiti_State *S, const char *name, const unsigned char *bytes, size_t len, int width);

/* A definition's source as written (docs/world.md, "Source as written"):
** the text of the top-level form that made it, as it was read (comments,
** case and spelling kept), and where it began — line and column from 1 in
** `file` when it came from a file (jiti_set_source_origin), else in the
** source that was sent.  An entry made any other way (a form built by a
** program, a variable's value changed since, a rollback to a revision
** made before this existed) has none and is shown canonically.  It is
** part of the entry's bytes (and hash), in front of the canonical
** encoding, and every call here that takes bytes accepts it. */
typedef struct jiti_EntrySource {
  const char *text;   /* UTF-8, len bytes, not NUL-terminated */
  size_t len;
  const char *file;   /* filelen bytes; NULL: not from a file */
  size_t filelen;
  long line, column;
} jiti_EntrySource;

/* The source as written that an entry's bytes carry, pointing into them:
** 1 and *src (may be NULL) filled, *canonical (may be NULL) the offset of
** the canonical encoding after it; 0 (none: *canonical 0); -1 malformed. */
int jiti_entry_source(const unsigned char *bytes, size_t len, jiti_EntrySource *src, size_t *canonical);

/* SHA-256 of kind, name and bytes, as 64 hex characters plus NUL. */
void jiti_entry_hash(jiti_EntryKind kind, const char *name,
                     const unsigned char *bytes, size_t len, char out[65]);

/* ------------------------------------------------------------- invariants */

/* Add (or replace) invariant `name` whose source is a Lisp expression
** evaluated with no arguments; it must return true.  Operator only. */
jiti_Status jiti_invariant_add(jiti_State *S, const char *name, const char *source,
                               char *err, size_t errlen);
jiti_Status jiti_invariant_remove(jiti_State *S, const char *name);

/* Run every invariant.  Returns JITI_OK if all hold; otherwise the status
** of the first failure and a message naming the invariant. */
jiti_Status jiti_invariants_check(jiti_State *S, const jiti_Limits *limits,
                                  char *err, size_t errlen);
/* Run every invariant, by name, each from the whole of the limits (a
** verification's list of what fails): `each` gets the name, the status
** (JITI_ERROR: false or an error; JITI_LIMIT) and the message of every one
** that fails.  Returns as jiti_invariants_check. */
typedef void (*jiti_InvariantFn)(void *ud, const char *name, jiti_Status st, const char *message);
jiti_Status jiti_invariants_each(jiti_State *S, const jiti_Limits *limits, jiti_InvariantFn each, void *ud);

/* The name of the world's current package (malloc'd): the package an
** action's source is read in unless it names another; in-package, as an
** action, changes it. */
char *jiti_world_package(jiti_State *S);

/* Read and evaluate in the package `name` (a name or nickname, exact or
** else upper-cased, as the reader reads an unescaped name) until
** jiti_package_unbind: *package* is bound to it, so the world's current
** package stays as it was (an in-package evaluated meanwhile changes the
** binding only).  JITI_ERROR with a message if no package has that name;
** JITI_BADARG if one is bound already. */
jiti_Status jiti_package_bind(jiti_State *S, const char *name, char *err, size_t errlen);
void jiti_package_unbind(jiti_State *S);

/* Number of data rows and of entries of each kind. */
size_t jiti_world_count(jiti_State *S, jiti_EntryKind kind);

/* ---------------------------------------------------------- calls noted */

/* The call of a world function a held form made (jiti_form_eval_noting). */
typedef struct jiti_CallNote {
  char *function;    /* its entry name, as an export writes it (TOTAL,
                        APP::RUN); malloc'd; NULL: nothing was noted */
  char *signature;   /* the class of each argument, comma-separated: a
                        standard class in lower case (fixnum, string, null,
                        cons, symbol, double-float ...), any other by its
                        name as entry names write it (POINT, APP::POINT);
                        "" for none; malloc'd */
} jiti_CallNote;

/* jiti_form_eval (jiti.h), noting the call the held form makes when it is
** (F arg...) with F a function the world defines (a function entry, not a
** macro): once its arguments are evaluated — once each, left to right —
** and before F is applied, exactly as the form does either way, *note
** receives F's name and the arguments' classes, each at most max bytes
** (a longer one: nothing noted).  Nothing is noted for any other form.
** The note is made before F runs, so a form that then fails has one too:
** whether the call succeeded is res's.  *note is zeroed first; free it
** with jiti_call_note_free. */
jiti_Status jiti_form_eval_noting(jiti_State *S, const jiti_Limits *limits, jiti_Result *res, size_t max,
                                  jiti_CallNote *note);
void jiti_call_note_free(jiti_CallNote *note);

/* ------------------------------------------------------- reads recorded */

/* What a call read of the world's state: the evidence of a failing call
** shows it beside its frames (docs/repair.md, "Incidents").  Recorded
** between jiti_reads_begin and jiti_reads_end: each global variable the
** world defines that was read (its value), each slot of an instance or
** structure read through slot-value, an accessor or with-slots, and each
** data row read by world-get — each distinct one once, at its first read,
** at most JITI_READS_MAX (later ones are counted, not kept).  Values are
** those read, printed when described. */
typedef enum jiti_ReadKind { JITI_READ_VARIABLE, JITI_READ_SLOT, JITI_READ_ROW, JITI_READ_COUNT } jiti_ReadKind;
const char *jiti_read_kind_name(jiti_ReadKind k);   /* "variable", "slot", "row" */

#define JITI_READS_MAX 32

typedef struct jiti_Read {
  jiti_ReadKind kind;
  char *name;      /* the variable, the slot or the row's key, printed (at most
                      JITI_FRAME_NAME_MAX bytes) */
  char *object;    /* a slot's instance or structure, printed (at most
                      JITI_FRAME_VALUE_MAX bytes); NULL for the others */
  char *value;     /* the value read, printed (at most JITI_FRAME_VALUE_MAX) */
} jiti_Read;

void jiti_reads_begin(jiti_State *S);   /* forget what was recorded, record from now */
void jiti_reads_end(jiti_State *S);     /* stop recording and forget */
/* What was recorded so far (recording goes on), printed with *print-escape*
** as frames are; *more: distinct reads past JITI_READS_MAX.  Returns how
** many (0 and *out NULL when none or out of memory); free with
** jiti_reads_free. */
int jiti_reads_describe(jiti_State *S, jiti_Read **out, int *more);
void jiti_reads_free(jiti_Read *reads, int n);

#endif
