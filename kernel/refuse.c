/*
** refuse.c — why a standard name stays out of a world.
**
** Every one of the 978 COMMON-LISP names is a symbol of that package (see
** clsyms.c); those jiti does not define are refused when used: a call to
** one signals UNDEFINED-FUNCTION at once (its arguments are not evaluated,
** analyze.c), a read of one UNBOUND-VARIABLE, and the condition's report
** says why ("DRIBBLE is not available inside a world: ...").  This file
** keeps the reasons; a name without one is reported
** as a standard name jiti does not implement.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"

#define MODULES "a world has no modules to provide: load its own files with load"
#define TERMINAL "a world has no terminal: nobody is there to answer"

/* sorted by name (bsearch) */
static const struct { const char *name, *why; } reasons[] = {
  {"*MODULES*", MODULES},
  {"PROVIDE", MODULES},
  {"REQUIRE", MODULES},
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
