/*
** callnote.c — the call of a world function a host's form makes, noted
** (jiti_form_eval_noting, jiti_world.h): the function's entry name and the
** class of each evaluated argument.  A host that keeps a sample of the
** calls its world serves (the kernel daemon's traffic sample,
** docs/repair.md) tells calls of one argument shape from another by it.
**
** The watch runs between the evaluation of the arguments and the
** function's application (eval.c, jt_CallWatch): it runs no Lisp — a
** class's name is read, a symbol printed canonically — so the call goes
** exactly as it would unwatched.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "jt_clos.h"
#include "jt_world.h"

/* The name of v's class, appended to b: a standard class's (COMMON-LISP's)
** in lower case, any other's as entry names write it. */
static void class_name(jt_State *S, jt_V v, jt_Buf *b, size_t max) {
  jt_V name = jt_class_(jt_class_of(S, v))->name;
  if (jt_issymbol(name) && jt_symobj(S, name)->package == JT_PKG_LISP) {
    for (const char *p = jt_symobj(S, name)->cname; *p; p++) jt_buf_putc(b, (char)tolower((unsigned char)*p));
    return;
  }
  char *t = jt_print_canonical(S, name, max + 1);
  if (t) jt_buf_puts(b, t);
  free(t);
}

void jt_call_note_seen(jt_State *S, void *ud, jt_V name, int argc, const jt_V *argv) {
  jt_CallNoting *n = ud;
  if (!jt_world_has_entry(S, JITI_ENTRY_FUNCTION, name)) return;   /* not the world's */
  jt_Buf sig = {0};
  for (int i = 0; i < argc && sig.n <= n->max; i++) {
    if (i) jt_buf_putc(&sig, ',');
    class_name(S, argv[i], &sig, n->max);
  }
  /* a name printed past max bytes ends in "...": longer than max */
  char *fn = jt_print_canonical(S, name, n->max + 1);
  char *s = sig.n <= n->max ? (sig.p ? sig.p : strdup("")) : NULL;
  if (!fn || !s || strlen(fn) > n->max) {
    free(fn);
    if (s != sig.p) free(s);
    jt_buf_free(&sig);
    return;
  }
  n->note->function = fn;
  n->note->signature = s;
}

void jiti_call_note_free(jiti_CallNote *note) {
  if (!note) return;
  free(note->function);
  free(note->signature);
  note->function = note->signature = NULL;
}
