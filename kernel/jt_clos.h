/*
** jt_clos.h — CLOS: classes, instances, generic functions and methods.
**
** Three files share this header:
**   class.c    classes (standard, built-in, structure and condition classes),
**              the class precedence list, slot definitions, defclass,
**              instances and slot access, redefinition and change-class;
**   generic.c  generic functions and methods, defgeneric and defmethod,
**              dispatch with a per-function cache, the standard method
**              combination and call-next-method (other combinations make
**              their effective methods in kernel/lisp/61-combination.lisp);
**   clos.c     the roots, the built-in generic functions and their default
**              methods (make-instance, initialize-instance, print-object,
**              describe-object ...), and the hooks other modules call
**              (typep, the printer, the world layer).
** The objects themselves are in jt_obj.h (jt_Instance, jt_Class,
** jt_Generic, jt_Method).
**
** The CLOS epoch (S->clos_epoch) grows at every change of a class or of a
** method, and at every restore of a checkpoint.  Caches (a generic
** function's dispatch cache, a class's list of valid initargs) remember the
** epoch they were filled in and are dropped when it has moved on.  Caches
** are written with the collector's barrier only (JT_SET_GC): they are never
** part of the world's state, so a checkpoint never copies them — a restore
** simply makes them stale.
**
** Defining forms.  defclass, defgeneric and defmethod expand into
** (%defclass 'FORM), (%defgeneric 'FORM) and (%defmethod 'FORM): the C side
** re-parses the user's whole form, so the internal entry points can do
** nothing the public macros could not.  Initforms, default initargs and
** method bodies become functions of the null lexical environment.  `lazy`
** (import) leaves their analysis to their first call, as for imported
** functions; live definitions analyse them at once, so syntax errors show
** at definition time.
*/
#ifndef jt_clos_h
#define jt_clos_h

#include "jt_lib.h"

/* ---------------------------------------------------------------- roots
** S->clos is a simple vector; these are its slots (clos.c fills them). */
#define JT_CLOS_BUILTIN_CLASSES(X) \
  X(T, "T") X(STANDARD_OBJECT, "STANDARD-OBJECT") X(FUNCTION, "FUNCTION") \
  X(GENERIC_FUNCTION, "GENERIC-FUNCTION") \
  X(STANDARD_GENERIC_FUNCTION, "STANDARD-GENERIC-FUNCTION") \
  X(METHOD, "METHOD") X(STANDARD_METHOD, "STANDARD-METHOD") \
  X(CLASS, "CLASS") X(BUILT_IN_CLASS, "BUILT-IN-CLASS") \
  X(STANDARD_CLASS, "STANDARD-CLASS") X(STRUCTURE_CLASS, "STRUCTURE-CLASS") \
  X(CONDITION_CLASS, "CONDITION-CLASS") \
  X(FORWARD_REFERENCED_CLASS, "FORWARD-REFERENCED-CLASS") \
  X(NUMBER, "NUMBER") X(REAL, "REAL") X(RATIONAL, "RATIONAL") \
  X(INTEGER, "INTEGER") X(FIXNUM, "FIXNUM") X(BIGNUM, "BIGNUM") \
  X(RATIO, "RATIO") X(FLOAT, "FLOAT") X(DOUBLE_FLOAT, "DOUBLE-FLOAT") \
  X(SINGLE_FLOAT, "SINGLE-FLOAT") \
  X(CHARACTER, "CHARACTER") X(SYMBOL, "SYMBOL") X(SEQUENCE, "SEQUENCE") \
  X(LIST, "LIST") X(CONS, "CONS") X(NULL_, "NULL") X(ARRAY, "ARRAY") \
  X(VECTOR, "VECTOR") X(STRING, "STRING") X(SIMPLE_VECTOR, "SIMPLE-VECTOR") \
  X(HASH_TABLE, "HASH-TABLE") X(STREAM, "STREAM") X(RESTART, "RESTART") \
  X(STRUCTURE_OBJECT, "STRUCTURE-OBJECT") \
  X(COMPLEX, "COMPLEX") X(BIT_VECTOR, "BIT-VECTOR") X(PACKAGE, "PACKAGE") \
  X(RANDOM_STATE, "RANDOM-STATE") X(READTABLE, "READTABLE") X(PATHNAME, "PATHNAME") \
  X(LOGICAL_PATHNAME, "LOGICAL-PATHNAME") X(METHOD_COMBINATION, "METHOD-COMBINATION") \
  X(STRING_STREAM, "STRING-STREAM") X(BROADCAST_STREAM, "BROADCAST-STREAM") \
  X(CONCATENATED_STREAM, "CONCATENATED-STREAM") X(ECHO_STREAM, "ECHO-STREAM") \
  X(FILE_STREAM, "FILE-STREAM") X(SYNONYM_STREAM, "SYNONYM-STREAM") \
  X(TWO_WAY_STREAM, "TWO-WAY-STREAM")

/* The generic functions the kernel defines (and calls from C). */
#define JT_CLOS_BUILTIN_GENERICS(X) \
  X(MAKE_INSTANCE, "MAKE-INSTANCE") X(INITIALIZE_INSTANCE, "INITIALIZE-INSTANCE") \
  X(REINITIALIZE_INSTANCE, "REINITIALIZE-INSTANCE") \
  X(SHARED_INITIALIZE, "SHARED-INITIALIZE") \
  X(UPDATE_FOR_REDEFINED, "UPDATE-INSTANCE-FOR-REDEFINED-CLASS") \
  X(UPDATE_FOR_DIFFERENT, "UPDATE-INSTANCE-FOR-DIFFERENT-CLASS") \
  X(CHANGE_CLASS, "CHANGE-CLASS") X(PRINT_OBJECT, "PRINT-OBJECT") \
  X(DESCRIBE_OBJECT, "DESCRIBE-OBJECT") \
  X(NO_APPLICABLE_METHOD, "NO-APPLICABLE-METHOD") \
  X(NO_NEXT_METHOD, "NO-NEXT-METHOD") X(SLOT_MISSING, "SLOT-MISSING") \
  X(SLOT_UNBOUND, "SLOT-UNBOUND")

/* Other symbols the CLOS code refers to. */
#define JT_CLOS_SYMBOLS(X) \
  X(DEFCLASS, "DEFCLASS") X(DEFGENERIC, "DEFGENERIC") X(DEFMETHOD, "DEFMETHOD") \
  X(CALL_NEXT_METHOD, "CALL-NEXT-METHOD") X(NEXT_METHOD_P, "NEXT-METHOD-P") \
  X(FLET, "FLET") X(PCALL_NEXT, "%CALL-NEXT-METHOD") X(PNEXT_P, "%NEXT-METHOD-P") \
  X(K_INITARG, ":INITARG") X(K_INITFORM, ":INITFORM") X(K_READER, ":READER") \
  X(K_WRITER, ":WRITER") X(K_ACCESSOR, ":ACCESSOR") X(K_ALLOCATION, ":ALLOCATION") \
  X(K_TYPE, ":TYPE") X(K_DOCUMENTATION, ":DOCUMENTATION") \
  X(K_INSTANCE, ":INSTANCE") X(K_CLASS, ":CLASS") \
  X(K_DEFAULT_INITARGS, ":DEFAULT-INITARGS") X(K_METACLASS, ":METACLASS") \
  X(K_METHOD, ":METHOD") X(K_METHOD_COMBINATION, ":METHOD-COMBINATION") \
  X(K_ARGUMENT_PRECEDENCE_ORDER, ":ARGUMENT-PRECEDENCE-ORDER") \
  X(K_GENERIC_FUNCTION_CLASS, ":GENERIC-FUNCTION-CLASS") \
  X(K_METHOD_CLASS, ":METHOD-CLASS") \
  X(K_BEFORE, ":BEFORE") X(K_AFTER, ":AFTER") X(K_AROUND, ":AROUND") \
  X(STANDARD, "STANDARD") X(SLOT_BOUNDP, "SLOT-BOUNDP") \
  X(SLOT_MAKUNBOUND, "SLOT-MAKUNBOUND") X(INSTANCE, "INSTANCE") \
  X(NEW_VALUE, "NEW-VALUE")

enum {
  JT_CLOS_CLASSES,   /* EQ hash table: name -> class */
#define JT_X(id, name) JT_CLOS_C_##id,
  JT_CLOS_BUILTIN_CLASSES(JT_X)
#undef JT_X
#define JT_X(id, name) JT_CLOS_G_##id,
  JT_CLOS_BUILTIN_GENERICS(JT_X)
#undef JT_X
#define JT_X(id, name) JT_CLOS_S_##id,
  JT_CLOS_SYMBOLS(JT_X)
#undef JT_X
  JT_CLOS_COUNT
};

#define JT_CLOS(S, i)     (jt_vec_((S)->clos)->items[i])
#define JT_CLASS(S, id)   JT_CLOS(S, JT_CLOS_C_##id)
#define JT_GENERIC(S, id) JT_CLOS(S, JT_CLOS_G_##id)
#define JT_CSYM(S, id)    JT_CLOS(S, JT_CLOS_S_##id)

/* Every class or method change: caches of older epochs are stale. */
static inline void jt_clos_changed(jt_State *S) { S->clos_epoch++; }

/* --------------------------------------------------------- set-up (clos.c) */

/* Make the roots and the built-in classes: before any layout is defined
** (jt_open_cond), since every layout gets a class. */
void jt_open_clos(jt_State *S);
/* After the Lisp library is loaded: the built-in generic functions and
** their default methods, then every class and generic function that exists
** now is locked (a built-in of the language). */
void jt_clos_finish(jt_State *S);

/* ------------------------------------------------------- classes (class.c) */

jt_V jt_class_of(jt_State *S, jt_V v);
jt_V jt_find_class(jt_State *S, jt_V name);        /* NIL if none (or forward) */
/* The class named `name`, or a forward-referenced placeholder made now. */
jt_V jt_class_ensure(jt_State *S, jt_V name);
/* Whether `cls` is c or one of its superclasses (c finalized). */
bool jt_class_subclassp(jt_V c, jt_V cls);
/* A layout was (re)defined by defstruct or define-condition: make or update
** its class (struct.c calls this). */
void jt_class_note_layout(jt_State *S, jt_V layout);
/* A built-in class (names from JT_CLOS_BUILTIN_CLASSES), made at start-up. */
jt_V jt_class_builtin(jt_State *S, const char *name, jt_V supers, int kind);
/* (%defclass form [closures]): define or redefine a standard class from
** its defclass form; returns the class.  closures: NIL, or the defclass
** macro's alist from each initform and default initarg form (by identity)
** to a closure of it made where the defclass stands; when one closes over
** a lexical environment they are the functions, and the class cannot be
** stored (the commit refuses it).  Redefinition migrates the instances
** reachable from the world's managed state (jt_class_migrate_world). */
jt_V jt_class_define(jt_State *S, jt_V form, jt_V closures, bool lazy);

/* make-instances-obsolete of a standard class (others: nothing). */
void jt_class_make_obsolete(jt_State *S, jt_V cls);

/* Instances. */
jt_V jt_instance_make(jt_State *S, jt_V cls);     /* allocate-instance: all unbound */
/* The instance's slot vector after bringing it up to date with its class
** (update-instance-for-redefined-class when it is obsolete). */
jt_V jt_instance_slots(jt_State *S, jt_V inst);
bool jt_instance_obsolete(jt_V inst);
/* The value of a bound local slot of an up-to-date instance, or JT_NOVALUE
** (anything else: the caller takes the general path).  Never signals. */
jt_V jt_instance_read(jt_V obj, jt_V name);
/* Slot access by name on instances, structures and conditions; signals
** through slot-missing / slot-unbound as CL does.  JT_UNBOUND never
** escapes. */
jt_V jt_slot_get(jt_State *S, jt_V obj, jt_V name);
void jt_slot_set(jt_State *S, jt_V obj, jt_V name, jt_V value);
bool jt_slot_boundp(jt_State *S, jt_V obj, jt_V name);
void jt_slot_makunbound(jt_State *S, jt_V obj, jt_V name);
bool jt_slot_exists(jt_State *S, jt_V obj, jt_V name);
/* The names of an instance's slots (effective slots of its class, in
** order) and their allocation, for describe and export. */
jt_V jt_class_slot_names(jt_State *S, jt_V cls, bool instance_only);

/* Initialisation of slots from initargs and initforms (shared-initialize's
** default method): names is T (all) or a list of slot names. */
void jt_instance_initialize(jt_State *S, jt_V inst, jt_V names, int n2, jt_V *initargs);
/* make-instance's work: push the default initargs missing from
** initargs[0..n2) (which end at the top of the stack) and return how many
** values were pushed; check initargs against those the class accepts
** (slot initargs, keys of the applicable shared-initialize methods and
** of `gf`'s: initialize-instance for make-instance, reinitialize-instance
** for itself), signalling program-error. */
int jt_class_default_initargs(jt_State *S, jt_V cls, int n2, jt_V *initargs);
void jt_class_check_initargs(jt_State *S, jt_V cls, jt_V gf, int n2, jt_V *initargs);
/* change-class's work; calls update-instance-for-different-class. */
jt_V jt_instance_change_class(jt_State *S, jt_V inst, jt_V cls, int n2, jt_V *initargs);

/* Bring every obsolete instance reachable from `v` up to date; true if any
** changed (the world layer walks its managed state with it). */
bool jt_class_update_reachable(jt_State *S, jt_V v);
/* The (name . value) cells of the :class slots a class declares itself;
** setting them from such a list (import), each named slot must be one. */
jt_V jt_class_shared_cells(jt_State *S, jt_V cls);
void jt_class_set_shared(jt_State *S, jt_V cls, jt_V cells);
/* Decoding (export.c): an instance to fill for import (its class, or a
** provisional layout the class adopts when it is imported), a stand-in
** for reading (text mode: the wrapper holds the class's name, not a
** class), and a slot of either set by name (false: no such slot). */
jt_V jt_instance_for_import(jt_State *S, jt_V class_name, jt_V slot_names);
jt_V jt_instance_stand_in(jt_State *S, jt_V class_name, jt_V slot_names);
bool jt_instance_import_slot(jt_State *S, jt_V inst, jt_V slot, jt_V value);
/* Effective slots and wrapper of a built-in standard class (start-up). */
void jt_class_finalize_root(jt_State *S, jt_V cls);

/* Wrapper (simple vector) fields. */
enum { JT_W_CLASS, JT_W_NAMES, JT_W_SHARED, JT_W_COUNT };

/* -------------------------------------------- generic functions (generic.c) */

/* Call a generic function with argv[0..argc) on the value stack. */
jt_V jt_gf_call(jt_State *S, jt_V gf, int argc, jt_V *argv);
/* The generic function named `name` (symbol or (setf symbol)); NIL if the
** name is unbound.  Signals if it names an ordinary function or macro. */
jt_V jt_gf_find(jt_State *S, jt_V name);
/* Make `name` a generic function with `lambda_list` unless it already is one. */
jt_V jt_gf_ensure(jt_State *S, jt_V name, jt_V lambda_list);
/* Make a method object; the caller adds it with jt_gf_add_method. */
jt_V jt_method_make(jt_State *S, jt_V qualifiers, jt_V specializers, jt_V lambda_list,
                    jt_V function, unsigned flags);
/* Add (replacing a method with the same qualifiers and specializers) and
** remove methods; both check congruence / ownership and bump the epoch. */
void jt_gf_add_method(jt_State *S, jt_V gf, jt_V method);
void jt_gf_remove_method(jt_State *S, jt_V gf, jt_V method);
/* The method with these qualifiers and specializers, or NIL. */
jt_V jt_gf_find_method(jt_State *S, jt_V gf, jt_V qualifiers, jt_V specializers);
/* Define from a defgeneric / defmethod form. */
jt_V jt_gf_define(jt_State *S, jt_V form, bool lazy);
/* `key` (or JT_NOVALUE): the registry name the method must have (import
** checks the stored form defines the entry it is stored under).
** `evaluated`: NIL, or the defmethod macro's alist from each (EQL x)
** specializer's x that is not a literal (by identity) to its value where
** the defmethod stands; a method using one cannot be stored (the commit
** refuses it). */
jt_V jt_method_define(jt_State *S, jt_V form, bool lazy, jt_V key, jt_V evaluated);
/* Whether anything but a built-in (locked) method would run for these
** arguments: the printer asks before calling print-object. */
bool jt_gf_user_methods_apply(jt_State *S, jt_V gf, int argc, jt_V *argv);
/* The registry name of a method: (gf-name qualifier... (specializer...)),
** a class standing for its name and (EQL x) for itself. */
jt_V jt_method_key(jt_State *S, jt_V method);

/* `old` (a function cell's value) is being replaced or removed: if it is a
** generic function, the world forgets its defgeneric and defmethod
** entries. */
static inline void jt_clos_forget_generic(jt_State *S, jt_V old) {
  if (jt_is(old, JT_TGENERIC) && S->world_define)
    S->world_define(S, jt_gf_(old)->name, JT_DEF_GENERIC_REMOVED, JT_NIL, old);
}

/* ------------------------------------------- shared by the three files (clos.c) */

bool jt_clos_memq(jt_V x, jt_V l);
/* A proper list (of at most 100000 elements: longer counts as not). */
bool jt_clos_proper_list(jt_V l);
/* A symbol or (setf symbol) that may name a function (not NIL, T or a keyword). */
bool jt_clos_function_name_p(jt_State *S, jt_V name);
/* program-error "WHAT: FORM" (a malformed defining form). */
JT_NORETURN void jt_clos_form_error(jt_State *S, const char *what, jt_V form);

/* -------------------------------------------------------- protocol (clos.c) */

/* typep on a class name or class object: 1/0, or -1 when `type` is
** neither (the caller tries other type specifiers). */
int jt_clos_typep(jt_State *S, jt_V v, jt_V type);
/* documentation of a generic function, class or method (or a symbol
** naming one, doc-type TYPE for classes); JT_NOVALUE for anything else. */
jt_V jt_clos_documentation(jt_State *S, jt_V x, jt_V doc_type);
/* type-of of instances and metaobjects: the name of the class. */
jt_V jt_clos_type_of(jt_State *S, jt_V v);
/* Print v to stream with print-object (*print-escape* bound to `escape`)
** when a method other than the built-in default applies; false, having
** printed nothing, otherwise. */
bool jt_clos_print_object(jt_State *S, jt_V stream, jt_V v, bool escape);
/* The same into a fresh string, for the printer's safe mode: never
** signals (an error in the method is contained and gives NIL), and NIL
** when only the default method applies. */
jt_V jt_clos_print_object_string(jt_State *S, jt_V v, bool escape);

/* print.c: print v as print-object's default method does (the printer's
** own representation; print-object is not called for v itself), with the
** current *print-escape*. */
void jt_print_default(jt_State *S, jt_V stream, jt_V v);

#endif
