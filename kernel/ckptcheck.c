/*
** ckptcheck.c — the checkpoint consistency check (jt_ckpt.h): whether
** everything a restore must undo was recorded.
**
** When a level opens, every object of the heap is digested (its fixed part
** without the collector's header fields, and the buffers of vectors,
** strings and hash tables, as the barrier's copy would take them).  When
** the level closes:
**   - every object whose digest changed since must have been saved by the
**     barrier at that level or one inside it — a store that skipped the
**     barrier is a change a restore cannot undo;
**   - after a restore, every object must digest as it did at the opening —
**     what the level recorded did bring the state back.
** Objects the barrier never saves by design (frames, code, streams, scratch
** random states, managed maps, whose changes are logged as operations) are
** not digested; objects freed while the level is open are forgotten (the
** collector tells us), so that a new object at the same address is not
** taken for a change.  A field written behind the barrier on purpose (a
** cache that a restore may keep) is left out of the digest by its type.
**
** The check costs a digest of the heap per level opened and closed: it is
** on only in the GC-stress build (every transaction is checked and a
** failure aborts with its description) and in the tests that ask for it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_ckpt.h"
#include "jt_clos.h"
#include "jt_grow.h"

typedef struct Digest { jt_Obj *obj; uint64_t sum; bool cache; } Digest;

/* An open-addressing table of the objects digested when a level opened. */
typedef struct Table {
  Digest *d;
  size_t cap, n;      /* cap: a power of two */
} Table;

struct jt_CkptCheck {
  Table *levels;      /* one per open level, outermost first */
  size_t nlevels, cap;
  bool abort_on_failure;
};

#define DELETED ((jt_Obj *)1)

static size_t home(const jt_Obj *o, size_t cap) {
  return (size_t)(((uint64_t)(uintptr_t)o * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
  return h;
}

/* Whether the barrier leaves o alone by design (jt_ckpt_touch). */
static bool exempt(const jt_Obj *o) {
  switch (o->type) {
    case JT_TFRAME: case JT_TCODE: case JT_TSTREAM: return true;
    case JT_THASH: return (o->flags & JT_HASH_MANAGED) != 0;
    case JT_TRANDOM: return (o->flags & JT_RANDOM_SCRATCH) != 0;
    default: return false;
  }
}

/* Zero a field of the copy b of an object's fixed part. */
#define HOLE(b, T, field) memset((char *)(b) + offsetof(T, field), 0, sizeof(((T *)0)->field))

static uint64_t digest(const jt_Obj *o) {
  uint64_t h = 0xCBF29CE484222325ull;
  size_t size = jt_gc_obj_size(o);
  /* the fixed part without the collector's fields (gcnext, gcflags), the
  ** buffers' addresses (a restore adopts the saved copies: their contents
  ** are digested below) and the caches written behind the barrier on
  ** purpose: a closure's analysis (kept by a restore), a generic
  ** function's dispatch cache and a class's valid initargs (stale after
  ** one: the CLOS epoch moves) */
  union { jt_Obj h; unsigned char b[256]; } copy;
  const void *body = o;
  if (size <= sizeof copy) {
    memcpy(copy.b, o, size);
    copy.h.gcnext = NULL;
    copy.h.gcflags = 0;
    switch (o->type) {
      case JT_TVECTOR: HOLE(&copy, jt_Vector, items); break;
      case JT_TSTRING: HOLE(&copy, jt_String, chars); break;
      case JT_THASH: HOLE(&copy, jt_Hash, entries); HOLE(&copy, jt_Hash, index); break;
      case JT_TCLOSURE: HOLE(&copy, jt_Closure, lam); HOLE(&copy, jt_Closure, code); break;
      case JT_TGENERIC:
        HOLE(&copy, jt_Generic, cache); HOLE(&copy, jt_Generic, epoch); HOLE(&copy, jt_Generic, ncached);
        break;
      case JT_TCLASS: HOLE(&copy, jt_Class, valid); HOLE(&copy, jt_Class, valid_epoch); break;
      default: break;
    }
    body = copy.b;
  }
  h = fnv(h, (const char *)body + offsetof(jt_Obj, type), size - offsetof(jt_Obj, type));
  switch (o->type) {
    case JT_TVECTOR: {
      const jt_Vector *v = (const jt_Vector *)o;
      h = fnv(h, v->items, v->cap * sizeof *v->items);
      break;
    }
    case JT_TSTRING: {
      const jt_String *s = (const jt_String *)o;
      h = fnv(h, s->chars, s->cap * sizeof *s->chars);
      break;
    }
    case JT_THASH: {
      const jt_Hash *t = (const jt_Hash *)o;
      h = fnv(h, t->entries, t->nentries * sizeof *t->entries);
      break;
    }
    default: break;
  }
  return h;
}

static void table_put(Table *t, jt_Obj *o, uint64_t sum) {
  if ((t->n + 1) * 2 > t->cap) {
    size_t ncap = jt_grow_cap(t->cap, t->cap + 1, sizeof(Digest), 1024);
    Digest *d = ncap ? calloc(ncap, sizeof *d) : NULL;
    if (!d) abort();   /* a checking build only */
    for (size_t i = 0; i < t->cap; i++)
      if (t->d[i].obj && t->d[i].obj != DELETED) {
        size_t k = home(t->d[i].obj, ncap);
        while (d[k].obj) k = (k + 1) & (ncap - 1);
        d[k] = t->d[i];
      }
    free(t->d);
    t->d = d;
    t->cap = ncap;
  }
  size_t k = home(o, t->cap);
  while (t->d[k].obj && t->d[k].obj != DELETED) k = (k + 1) & (t->cap - 1);
  t->d[k] = (Digest){o, sum, false};
  t->n++;
}

static Digest *table_get(Table *t, const jt_Obj *o) {
  if (!t->cap) return NULL;
  for (size_t k = home(o, t->cap); t->d[k].obj; k = (k + 1) & (t->cap - 1))
    if (t->d[k].obj == o) return &t->d[k];
  return NULL;
}

static void digest_one(jt_State *S, jt_Obj *o, void *ud) {
  (void)S;
  if (!exempt(o)) table_put(ud, o, digest(o));
}

/* A generic function's dispatch cache is a vector it fills in place:
** mark the caches of the generic functions digested in t (at the opening,
** and again before comparing: a cache may be replaced meanwhile). */
static void mark_caches(Table *t) {
  for (size_t i = 0; i < t->cap; i++) {
    jt_Obj *o = t->d[i].obj;
    if (!o || o == DELETED || o->type != JT_TGENERIC) continue;
    jt_V cache = ((jt_Generic *)o)->cache;
    Digest *d = jt_isptr(cache) ? table_get(t, jt_o(cache)) : NULL;
    if (d) d->cache = true;
  }
}

/* ------------------------------------------------------------ the hooks */

void jt_ckpt_check_enable(jt_State *S, bool on, bool abort_on_failure) {
  struct jt_CkptCheck *c = S->ckpt_check;
  if (!on) {
    if (!c) return;
    for (size_t i = 0; i < c->cap; i++) free(c->levels[i].d);
    free(c->levels);
    free(c);
    S->ckpt_check = NULL;
    return;
  }
  if (!c) {
    c = calloc(1, sizeof *c);
    if (!c) abort();
    S->ckpt_check = c;
    /* levels open already are not checked: they were not digested */
    c->nlevels = (size_t)jt_ckpt_depth(S);
    Table *t = jt_grow(NULL, &c->cap, c->nlevels + 1, sizeof *t, 4);
    if (!t) abort();
    memset(t, 0, c->cap * sizeof *t);
    c->levels = t;
  }
  c->abort_on_failure = abort_on_failure;
}

void jt_ckpt_check_opened(jt_State *S) {
  struct jt_CkptCheck *c = S->ckpt_check;
  if (c->nlevels == c->cap) {
    size_t old = c->cap;
    Table *t = jt_grow(c->levels, &c->cap, old + 1, sizeof *t, 4);
    if (!t) abort();
    memset(t + old, 0, (c->cap - old) * sizeof *t);
    c->levels = t;
  }
  Table *t = &c->levels[c->nlevels++];
  t->n = 0;
  if (t->cap) memset(t->d, 0, t->cap * sizeof *t->d);
  jt_gc_each_object(S, digest_one, t);
  mark_caches(t);
}

void jt_ckpt_check_freed(jt_State *S, jt_Obj *o) {
  struct jt_CkptCheck *c = S->ckpt_check;
  for (size_t i = 0; i < c->nlevels; i++) {
    Digest *d = table_get(&c->levels[i], o);
    if (d) d->obj = DELETED;
  }
}

/* The object printed for a report, briefly. */
static void describe(jt_State *S, jt_Obj *o, char *buf, size_t n) {
  char *p = o->type == JT_TCONS || o->type == JT_TSYMBOL || o->type == JT_TSTRING || o->type == JT_TVECTOR
                ? jt_print_cstr(S, (jt_V)o, true, 120)
                : NULL;
  snprintf(buf, n, "an object of type %d at %p%s%s", o->type, (void *)o, p ? ": " : "", p ? p : "");
  free(p);
}

/* The first object digested when level `level` opened that changed since
** and that no level from `level` on saved (saved_ok), or that does not
** digest as it did (restored); NULL when there is none. */
static char *compare(jt_State *S, size_t level, bool restored) {
  Table *t = &S->ckpt_check->levels[level];
  mark_caches(t);
  for (size_t i = 0; i < t->cap; i++) {
    jt_Obj *o = t->d[i].obj;
    if (!o || o == DELETED || t->d[i].cache || digest(o) == t->d[i].sum) continue;
    if (!restored && jt_ckpt_saved_since(S, (int)level, o)) continue;
    char what[256], *msg = malloc(512);
    if (!msg) abort();
    describe(S, o, what, sizeof what);
    snprintf(msg, 512,
             restored ? "checkpoint level %zu: after its restore, %s is not as it was when the level opened"
                      : "checkpoint level %zu: %s changed without passing the write barrier (no copy was "
                        "saved, so a restore would not undo the change)",
             level + 1, what);
    return msg;
  }
  return NULL;
}

static void failed(jt_State *S, char *msg) {
  if (!msg) return;
  if (S->ckpt_check->abort_on_failure) {
    fprintf(stderr, "jiti: internal error: %s\n", msg);
    abort();
  }
  free(msg);
}

char *jt_ckpt_check_now(jt_State *S) {
  struct jt_CkptCheck *c = S->ckpt_check;
  if (!c || !c->nlevels || (int)c->nlevels != jt_ckpt_depth(S)) return NULL;
  return compare(S, c->nlevels - 1, false);
}

void jt_ckpt_check_closing(jt_State *S, int level) {
  struct jt_CkptCheck *c = S->ckpt_check;
  if ((size_t)level < c->nlevels) failed(S, compare(S, (size_t)level, false));
}

void jt_ckpt_check_closed(jt_State *S, int level, bool restored) {
  struct jt_CkptCheck *c = S->ckpt_check;
  if ((size_t)level >= c->nlevels) return;   /* opened before the check was on */
  if (restored) failed(S, compare(S, (size_t)level, true));
  /* drop the level's table, keeping its memory at the end */
  Table gone = c->levels[level];
  memmove(&c->levels[level], &c->levels[level + 1], (c->nlevels - (size_t)level - 1) * sizeof *c->levels);
  c->levels[--c->nlevels] = gone;
}
