/*
** reads.c — what an application call read of the world's state
** (jiti_reads_begin, jiti_world.h): the globals the world defines, the
** slots of instances and structures, the data rows.  A failing call's
** evidence shows them, so that whoever diagnoses it sees the state the
** call worked on, not only its arguments and locals.
**
** The read sites (eval.c's global reference, symbol-value, slot reads in
** class.c and generic.c's reader path, structure accessors, world-get)
** test one flag of the state; only while it is set do they come here.  A
** read is kept once, at its first occurrence (the value the call saw
** first), in a fixed table scanned linearly: at most JITI_READS_MAX
** entries, so a call that reads a slot in a loop pays a short scan per
** read and never an allocation.  The values are kept as values and
** printed only when described — a call that succeeds prints nothing.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_clos.h"
#include "jt_world.h"

typedef struct jt_Read { int kind; jt_V a, b, v; } jt_Read;

#define SKIP_MAX 16   /* globals known not to be the world's */

struct jt_Reads {
  int n;
  int more;   /* distinct reads past the table */
  jt_Read at[JITI_READS_MAX];
  /* variables read that the world does not define, so that a loop reading
  ** one pays a scan, not a lookup of the world's entries, per read */
  int nskip;
  jt_V skip[SKIP_MAX];
};

static const char *const kind_names[JITI_READ_COUNT] = {"variable", "slot", "row"};

const char *jiti_read_kind_name(jiti_ReadKind k) {
  return (unsigned)k < JITI_READ_COUNT ? kind_names[k] : "?";
}

/* Forget the filter: what it names may not be kept any more. */
static void unsee(jt_State *S) {
  for (int i = 0; i < 16; i++) S->reads_seen[i] = (struct jt_ReadSeen){0, 0, -1};
}

void jiti_reads_begin(jiti_State *S) {
  if (!S->reads && !(S->reads = calloc(1, sizeof *S->reads))) return;   /* nothing recorded */
  S->reads->n = S->reads->more = S->reads->nskip = 0;
  unsee(S);
  S->reads_on = true;
}

void jiti_reads_end(jiti_State *S) {
  S->reads_on = false;
  if (S->reads) S->reads->n = S->reads->more = S->reads->nskip = 0;   /* the values are no longer kept alive */
  unsee(S);
}

/* A read the table holds, or a variable it skips: both stay alive while
** recording (jt_reads_mark), so their addresses cannot be another's. */
static void seen(jt_State *S, int kind, jt_V a, jt_V b) {
  S->reads_seen[JT_READ_SLOT(a, b)] = (struct jt_ReadSeen){a, b, kind};
}

void jt_reads_close(jt_State *S) {
  free(S->reads);
  S->reads = NULL;
  S->reads_on = false;
}

void jt_reads_note(jt_State *S, int kind, jt_V a, jt_V b, jt_V v) {
  struct jt_Reads *r = S->reads;
  for (int i = 0; i < r->n; i++)
    if (r->at[i].a == a && r->at[i].b == b && r->at[i].kind == kind) {
      seen(S, kind, a, b);
      return;
    }
  if (kind == JITI_READ_VARIABLE) {
    /* the standard's variables and the kernel's own are not the world's state */
    if (jt_symobj(S, a)->package == JT_PKG_LISP) {   /* (never collected) */
      seen(S, kind, a, b);
      return;
    }
    for (int i = 0; i < r->nskip; i++)
      if (r->skip[i] == a) {
        seen(S, kind, a, b);
        return;
      }
    if (!jt_world_has_entry(S, JITI_ENTRY_VARIABLE, a)) {
      if (r->nskip < SKIP_MAX) {
        r->skip[r->nskip++] = a;
        seen(S, kind, a, b);
      }
      return;
    }
  }
  if (r->n == JITI_READS_MAX) {
    if (r->more < 1000000) r->more++;
    return;
  }
  r->at[r->n++] = (jt_Read){kind, a, b, v};
  seen(S, kind, a, b);
}

void jt_reads_mark(jt_State *S) {
  struct jt_Reads *r = S->reads;
  for (int i = 0; r && i < r->n; i++) {
    jt_gc_mark(S, r->at[i].a);
    jt_gc_mark(S, r->at[i].b);
    jt_gc_mark(S, r->at[i].v);
  }
  for (int i = 0; r && i < r->nskip; i++) jt_gc_mark(S, r->skip[i]);
}

int jiti_reads_describe(jiti_State *S, jiti_Read **out, int *more) {
  struct jt_Reads *r = S->reads;
  *out = NULL;
  *more = r ? r->more : 0;
  if (!r || !r->n) return 0;
  jiti_Read *d = calloc((size_t)r->n, sizeof *d);
  if (!d) return 0;
  /* printing may run print-object methods, which read slots themselves */
  bool on = S->reads_on;
  S->reads_on = false;
  int n = r->n;
  for (int i = 0; i < n; i++) {
    const jt_Read *e = &r->at[i];
    d[i].kind = (jiti_ReadKind)e->kind;
    d[i].name = e->kind == JITI_READ_SLOT ? jt_print_canonical(S, e->b, JITI_FRAME_NAME_MAX)
                                          : jt_print_canonical(S, e->a, JITI_FRAME_NAME_MAX);
    d[i].object = e->kind == JITI_READ_SLOT ? jt_print_cstr(S, e->a, true, JITI_FRAME_VALUE_MAX) : NULL;
    d[i].value = jt_print_cstr(S, e->v, true, JITI_FRAME_VALUE_MAX);
    if (!d[i].name || !d[i].value || (e->kind == JITI_READ_SLOT && !d[i].object)) {
      jiti_reads_free(d, i + 1);
      S->reads_on = on;
      return 0;
    }
  }
  S->reads_on = on;
  *out = d;
  return n;
}

void jiti_reads_free(jiti_Read *reads, int n) {
  for (int i = 0; reads && i < n; i++) {
    free(reads[i].name);
    free(reads[i].object);
    free(reads[i].value);
  }
  free(reads);
}
