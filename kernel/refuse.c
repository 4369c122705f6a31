/*
** refuse.c — why a standard name stays out of a world.
**
** Every one of the 978 COMMON-LISP names is a symbol of that package (see
** clsyms.c); those jiti does not define are refused when used: a call to
** one signals UNDEFINED-FUNCTION at once (its arguments are not evaluated,
** analyze.c), a read of one UNBOUND-VARIABLE, and the condition's report
** says why ("OPEN is not available inside a world: the world has no file
** system.").  This file keeps the reasons; a name without one is reported
** as a standard name jiti does not implement.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"

#define FILES "the world has no file system"
#define PATHNAMES "pathnames name files, and the world has no file system"
#define MODULES "modules are loaded from files, and the world has no file system"
#define TERMINAL "a world has no terminal: nobody is there to answer"
#define DEBUGGER "a world has no interactive debugger: a transaction pauses on an unhandled error instead, " \
                 "and the pause is answered through the protocol"
#define PRETTY "jiti has no pretty printer (*print-pretty* is accepted and ignored)"
#define MACHINE "jiti analyses code into a tree it evaluates: there is no machine code to show"
#define LOADFORM "there is no file compiler to write load forms for"
#define COMBINATION "jiti's CLOS has only the standard method combination"
#define MOP "jiti's CLOS has no metaobject protocol"

/* sorted by name (bsearch) */
static const struct { const char *name, *why; } reasons[] = {
  {"*BREAK-ON-SIGNALS*", DEBUGGER},
  {"*COMPILE-FILE-PATHNAME*", FILES},
  {"*COMPILE-FILE-TRUENAME*", FILES},
  {"*DEBUGGER-HOOK*", DEBUGGER},
  {"*DEFAULT-PATHNAME-DEFAULTS*", PATHNAMES},
  {"*LOAD-PATHNAME*", FILES},
  {"*LOAD-TRUENAME*", FILES},
  {"*MODULES*", MODULES},
  {"*PRINT-PPRINT-DISPATCH*", PRETTY},
  {"BREAK", DEBUGGER},
  {"CALL-METHOD", COMBINATION},
  {"COMPILE-FILE", FILES},
  {"COMPILE-FILE-PATHNAME", FILES},
  {"COPY-PPRINT-DISPATCH", PRETTY},
  {"DEFINE-METHOD-COMBINATION", COMBINATION},
  {"DELETE-FILE", FILES},
  {"DIRECTORY", FILES},
  {"DIRECTORY-NAMESTRING", PATHNAMES},
  {"DISASSEMBLE", MACHINE},
  {"DRIBBLE", FILES},
  {"ED", TERMINAL},
  {"ENOUGH-NAMESTRING", PATHNAMES},
  {"ENSURE-DIRECTORIES-EXIST", FILES},
  {"ENSURE-GENERIC-FUNCTION", MOP},
  {"FILE-AUTHOR", FILES},
  {"FILE-LENGTH", FILES},
  {"FILE-NAMESTRING", PATHNAMES},
  {"FILE-WRITE-DATE", FILES},
  {"FUNCTION-KEYWORDS", MOP},
  {"HOST-NAMESTRING", PATHNAMES},
  {"INSPECT", DEBUGGER},
  {"INVALID-METHOD-ERROR", COMBINATION},
  {"LOAD", FILES},
  {"LOAD-LOGICAL-PATHNAME-TRANSLATIONS", PATHNAMES},
  {"LOGICAL-PATHNAME", PATHNAMES},
  {"LOGICAL-PATHNAME-TRANSLATIONS", PATHNAMES},
  {"MAKE-INSTANCES-OBSOLETE", MOP},
  {"MAKE-LOAD-FORM", LOADFORM},
  {"MAKE-LOAD-FORM-SAVING-SLOTS", LOADFORM},
  {"MAKE-PATHNAME", PATHNAMES},
  {"MERGE-PATHNAMES", PATHNAMES},
  {"METHOD-COMBINATION-ERROR", COMBINATION},
  {"NAMESTRING", PATHNAMES},
  {"OPEN", FILES},
  {"PARSE-NAMESTRING", PATHNAMES},
  {"PATHNAME", PATHNAMES},
  {"PATHNAME-DEVICE", PATHNAMES},
  {"PATHNAME-DIRECTORY", PATHNAMES},
  {"PATHNAME-HOST", PATHNAMES},
  {"PATHNAME-MATCH-P", PATHNAMES},
  {"PATHNAME-NAME", PATHNAMES},
  {"PATHNAME-TYPE", PATHNAMES},
  {"PATHNAME-VERSION", PATHNAMES},
  {"PPRINT-DISPATCH", PRETTY},
  {"PPRINT-EXIT-IF-LIST-EXHAUSTED", PRETTY},
  {"PPRINT-LOGICAL-BLOCK", PRETTY},
  {"PPRINT-POP", PRETTY},
  {"PROBE-FILE", FILES},
  {"PROVIDE", MODULES},
  {"RENAME-FILE", FILES},
  {"REQUIRE", MODULES},
  {"SET-PPRINT-DISPATCH", PRETTY},
  {"STEP", DEBUGGER},
  {"TRACE", DEBUGGER},
  {"TRANSLATE-LOGICAL-PATHNAME", PATHNAMES},
  {"TRANSLATE-PATHNAME", PATHNAMES},
  {"TRUENAME", FILES},
  {"UNTRACE", DEBUGGER},
  {"USER-HOMEDIR-PATHNAME", FILES},
  {"WILD-PATHNAME-P", PATHNAMES},
  {"WITH-OPEN-FILE", FILES},
};

static int by_name(const void *key, const void *elt) {
  return strcmp(key, *(const char *const *)elt);
}

const char *jt_refusal_reason(const char *name) {
  const char *const *hit = bsearch(name, reasons, sizeof reasons / sizeof reasons[0], sizeof reasons[0], by_name);
  return hit ? ((const char *const *)hit)[1] : NULL;
}

/* The report of an UNDEFINED-FUNCTION or UNBOUND-VARIABLE for a name of
** COMMON-LISP: why it is missing.  False when `sym` is not such a name. */
bool jt_refusal_report(jt_State *S, jt_V sym, bool function, jt_V stream) {
  if (!jt_issymbol(sym) || sym == JT_NIL || sym == JT_T || jt_sym_(sym)->package != JT_PKG_LISP) return false;
  /* only a name jiti leaves undefined: a macro or special operator called
  ** as a function is an ordinary undefined function */
  const jt_Symbol *s = jt_sym_(sym);
  if (function ? s->function != JT_UNBOUND || (s->h.flags & JT_SYM_SPECFORM) : s->value != JT_UNBOUND)
    return false;
  const char *name = jt_sym_(sym)->cname;
  const char *why = jt_refusal_reason(name);
  jt_stream_puts(S, stream, name);
  if (why) {
    jt_stream_puts(S, stream, " is not available inside a world: ");
    jt_stream_puts(S, stream, why);
    jt_stream_puts(S, stream, ".");
  } else {
    jt_stream_puts(S, stream, function ? " is a standard operator jiti does not implement."
                                       : " is a standard variable jiti does not implement.");
  }
  return true;
}
