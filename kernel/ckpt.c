/*
** ckpt.c — checkpoint levels: the copies the write barrier takes, the
** operation logs of managed maps, undo records (see jt_ckpt.h and
** docs/world.md).
**
** Each level holds (a) copies of the objects first touched at that level,
** taken by the write barrier, (b) operation logs of the managed maps and
** (c) undo records of C-side tables.  Restore runs the undo records and
** replays the logs backwards, then puts the copies back; commit drops the
** level or hands its records to the enclosing level.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_ckpt.h"
#include "jt_grow.h"

typedef struct Snap {
  jt_Obj *obj;
  void *body;          /* copy of the object's fixed part */
  size_t size;
  void *buf, *buf2;    /* copies of container buffers (adopted on restore) */
  size_t bufbytes, buf2bytes;
} Snap;

typedef struct UndoRec {
  jt_UndoFn fn;
  jt_V a, b;
  uintptr_t c;
} UndoRec;

typedef struct Level {
  Snap *snaps;
  size_t nsnaps, capsnaps;
  jt_Obj **set;        /* open-addressing set of snapshotted objects */
  size_t setcap, setn;
  jt_MapLog *logs;
  size_t nlogs, caplogs;
  UndoRec *undos;
  size_t nundos, capundos;
} Level;

struct jt_Ckpt {
  Level *levels;
  int nlevels;
  size_t caplevels;
};

/* The levels of S, made at the first checkpoint (NULL before it). */
static struct jt_Ckpt *ckpt_of(jt_State *S) { return S->ckpt; }

static Level *innermost(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  return c && c->nlevels ? &c->levels[c->nlevels - 1] : NULL;
}

/* ------------------------------------------------------------- snapshots */

/* Home slot of o in a table of cap (a power of two) slots.  Objects of
** one size are allocated side by side, so the address bits are mixed:
** a plain shift of the address made long runs of neighbouring slots, and
** probing them made saving 1e5 instances quadratic. */
static inline size_t set_home(const jt_Obj *o, size_t cap) {
  return (size_t)(((uint64_t)(uintptr_t)o * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static bool set_has(Level *L, jt_Obj *o) {
  if (!L->setcap) return false;
  size_t k = set_home(o, L->setcap);
  while (L->set[k]) {
    if (L->set[k] == o) return true;
    k = (k + 1) & (L->setcap - 1);
  }
  return false;
}

static void set_add(Level *L, jt_Obj *o) {
  if ((L->setn + 1) * 2 > L->setcap) {
    size_t ncap = jt_grow_cap(L->setcap, L->setcap + 1, sizeof(jt_Obj *), 256);
    jt_Obj **t = ncap ? calloc(ncap, sizeof *t) : NULL;
    if (!t) abort();  /* cannot signal from inside the barrier */
    for (size_t i = 0; i < L->setcap; i++)
      if (L->set[i]) {
        size_t k = set_home(L->set[i], ncap);
        while (t[k]) k = (k + 1) & (ncap - 1);
        t[k] = L->set[i];
      }
    free(L->set);
    L->set = t;
    L->setcap = ncap;
  }
  size_t k = set_home(o, L->setcap);
  while (L->set[k]) k = (k + 1) & (L->setcap - 1);
  L->set[k] = o;
  L->setn++;
}

static void *dup(const void *p, size_t n) {
  void *q = malloc(n ? n : 1);
  if (!q) abort();  /* cannot signal from inside the barrier */
  if (n) memcpy(q, p, n);
  return q;
}

static void snap_push(Level *L, Snap s) {
  if (L->nsnaps == L->capsnaps) {
    Snap *p = jt_grow(L->snaps, &L->capsnaps, L->nsnaps + 1, sizeof *p, 64);
    if (!p) abort();  /* cannot signal from inside the barrier */
    L->snaps = p;
  }
  L->snaps[L->nsnaps++] = s;
}

void jt_ckpt_touch(jt_State *S, jt_Obj *o) {
  Level *L = innermost(S);
  JT_ASSERT(S->ckpt_depth == jt_ckpt_depth(S), "the barrier's depth is the number of open levels");
  if (!L) return;
  if (o->type == JT_THASH && (o->flags & JT_HASH_MANAGED)) return;
  /* frames, code and closures are never part of the world's state */
  if (o->type == JT_TFRAME || o->type == JT_TCODE || o->type == JT_TSTREAM) return;
  if (o->type == JT_TRANDOM && (o->flags & JT_RANDOM_SCRATCH)) return;
  if (set_has(L, o)) return;
  set_add(L, o);
  Snap s;
  memset(&s, 0, sizeof s);
  s.obj = o;
  s.size = jt_gc_obj_size(o);
  s.body = dup(o, s.size);
  switch (o->type) {
    case JT_TVECTOR: {
      jt_Vector *v = (jt_Vector *)o;
      s.bufbytes = v->cap * sizeof(jt_V);
      s.buf = dup(v->items, s.bufbytes);
      break;
    }
    case JT_TSTRING: {
      jt_String *v = (jt_String *)o;
      s.bufbytes = v->cap * sizeof(uint32_t);
      s.buf = dup(v->chars, s.bufbytes);
      break;
    }
    case JT_THASH: {
      jt_Hash *h = (jt_Hash *)o;
      s.bufbytes = h->entcap * sizeof(jt_HashEntry);
      s.buf = dup(h->entries, s.bufbytes);
      s.buf2bytes = h->idxcap * sizeof(int32_t);
      s.buf2 = dup(h->index, s.buf2bytes);
      break;
    }
    default: break;
  }
  snap_push(L, s);
}

/* Put a copy back.  The object keeps its place in the GC list; buffers
** allocated since are freed and the saved copies adopted. */
static void snap_restore(jt_State *S, Snap *s) {
  jt_Obj *o = s->obj;
  jt_Obj *next = o->gcnext;
  uint8_t gcflags = o->gcflags;
  switch (o->type) {
    case JT_TVECTOR: jt_free(S, ((jt_Vector *)o)->items, ((jt_Vector *)o)->cap * sizeof(jt_V)); break;
    case JT_TSTRING: jt_free(S, ((jt_String *)o)->chars, ((jt_String *)o)->cap * sizeof(uint32_t)); break;
    case JT_THASH:
      jt_free(S, ((jt_Hash *)o)->entries, ((jt_Hash *)o)->entcap * sizeof(jt_HashEntry));
      jt_free(S, ((jt_Hash *)o)->index, ((jt_Hash *)o)->idxcap * sizeof(int32_t));
      break;
    default: break;
  }
  memcpy(o, s->body, s->size);
  o->gcnext = next;
  o->gcflags = gcflags;
  jt_gc_remember(S, o);  /* the old contents may name young objects */
  switch (o->type) {
    case JT_TVECTOR: ((jt_Vector *)o)->items = s->buf; break;
    case JT_TSTRING: ((jt_String *)o)->chars = s->buf; break;
    case JT_THASH:
      ((jt_Hash *)o)->entries = s->buf;
      ((jt_Hash *)o)->index = s->buf2;
      break;
    default: break;
  }
  S->bytes_live += s->bufbytes + s->buf2bytes;
  s->buf = s->buf2 = NULL;
  free(s->body);
  s->body = NULL;
}

static void snap_free(Snap *s) {
  free(s->body);
  free(s->buf);
  free(s->buf2);
  s->body = s->buf = s->buf2 = NULL;
}

static void level_free(Level *L) {
  for (size_t i = 0; i < L->nsnaps; i++) snap_free(&L->snaps[i]);
  free(L->snaps);
  free(L->set);
  free(L->logs);
  free(L->undos);
  memset(L, 0, sizeof *L);
}

/* Empty a level that is closed (restored or committed).  Its buffers stay
** for the next checkpoint at this depth, so that a transaction does not
** malloc and free them each time (after a young collection returned memory
** to the system, that malloc took a page fault); a transaction that grew
** them past LEVEL_KEEP entries gives them back. */
#define LEVEL_KEEP 1024
static void level_close(Level *L) {
  for (size_t i = 0; i < L->nsnaps; i++) snap_free(&L->snaps[i]);
  if (L->capsnaps > LEVEL_KEEP || L->caplogs > LEVEL_KEEP || L->setcap > 2 * LEVEL_KEEP ||
      L->capundos > LEVEL_KEEP) {
    level_free(L);
    return;
  }
  if (L->setn) memset(L->set, 0, L->setcap * sizeof *L->set);
  L->nsnaps = L->nlogs = L->setn = L->nundos = 0;
}

/* The saved copies hold the old values: they and their owners are roots.
** A copy's fields are traced as the object's would be, except the items of
** vectors and hash tables, which were saved in s->buf. */
static void mark_body(jt_State *S, const Snap *s) {
  const jt_Obj *b = s->body;
  jt_gc_mark(S, (jt_V)s->obj);
  if (b->type == JT_TVECTOR) {
    const jt_V *items = s->buf;
    for (size_t i = 0; i < s->bufbytes / sizeof(jt_V); i++) jt_gc_mark(S, items[i]);
  } else if (b->type == JT_THASH) {
    const jt_HashEntry *e = s->buf;
    size_t n = ((const jt_Hash *)b)->nentries;
    for (size_t i = 0; i < n; i++) { jt_gc_mark(S, e[i].key); jt_gc_mark(S, e[i].val); }
  } else {
    jt_gc_trace_fields(S, b);
  }
}

void jt_ckpt_mark(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  if (!c) return;
  for (int i = 0; i < c->nlevels; i++) {
    Level *L = &c->levels[i];
    for (size_t k = 0; k < L->nsnaps; k++) mark_body(S, &L->snaps[k]);
    for (size_t k = 0; k < L->nlogs; k++) {
      jt_gc_mark(S, L->logs[k].map);
      jt_gc_mark(S, L->logs[k].key);
      jt_gc_mark(S, L->logs[k].old);
    }
    for (size_t k = 0; k < L->nundos; k++) {
      jt_gc_mark(S, L->undos[k].a);
      jt_gc_mark(S, L->undos[k].b);
    }
  }
}

/* ------------------------------------------------------- logs and undos */

static void map_log(jt_State *S, jt_V map, jt_V key, jt_V old) {
  Level *L = innermost(S);
  if (!L) return;
  if (L->nlogs == L->caplogs) {
    jt_MapLog *p = jt_grow(L->logs, &L->caplogs, L->nlogs + 1, sizeof *p, 64);
    if (!p) jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
    L->logs = p;
  }
  L->logs[L->nlogs++] = (jt_MapLog){map, key, old};
}

static void undo_push(Level *L, UndoRec r) {
  if (L->nundos == L->capundos) {
    UndoRec *p = jt_grow(L->undos, &L->capundos, L->nundos + 1, sizeof *p, 64);
    if (!p) abort();  /* the change is already made: it must be undoable */
    L->undos = p;
  }
  L->undos[L->nundos++] = r;
}

void jt_ckpt_log_undo(jt_State *S, jt_UndoFn fn, jt_V a, jt_V b, uintptr_t c) {
  Level *L = innermost(S);
  if (L) undo_push(L, (UndoRec){fn, a, b, c});
}

void jt_ckpt_map_put(jt_State *S, jt_V map, jt_V key, jt_V val) {
  if (!innermost(S)) {   /* nothing to log: one lookup instead of two */
    jt_hash_put(S, map, key, val);
    return;
  }
  jt_V *base = S->sp;
  JT_PUSH(S, map);
  JT_PUSH(S, key);
  JT_PUSH(S, val);
  bool found;
  jt_V old = jt_hash_get(S, map, key, &found);
  map_log(S, map, key, found ? old : JT_NOVALUE);
  jt_hash_put(S, base[0], base[1], base[2]);
  S->sp = base;
}

bool jt_ckpt_map_rem(jt_State *S, jt_V map, jt_V key) {
  bool found;
  jt_V old = jt_hash_get(S, map, key, &found);
  if (!found) return false;
  JT_PUSH(S, key);
  map_log(S, map, key, old);
  jt_hash_rem(S, map, key);
  JT_POP(S, 1);
  return true;
}

/* ------------------------------------------------------------ the levels */

int jt_ckpt_open(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  if (!c) {
    c = calloc(1, sizeof *c);
    if (!c) abort();
    S->ckpt = c;
  }
  if ((size_t)c->nlevels == c->caplevels) {
    size_t old = c->caplevels;
    Level *p = jt_grow(c->levels, &c->caplevels, old + 1, sizeof *p, 4);
    if (!p) abort();
    memset(p + old, 0, (c->caplevels - old) * sizeof *p);
    c->levels = p;
  }
  JT_ASSERT(S->ckpt_depth == c->nlevels, "the barrier's depth is the number of open levels");
  c->nlevels++;  /* levels[nlevels] is empty: zeroed or closed */
  JT_ASSERT(c->levels[c->nlevels - 1].nsnaps == 0 && c->levels[c->nlevels - 1].setn == 0 &&
                c->levels[c->nlevels - 1].nlogs == 0 && c->levels[c->nlevels - 1].nundos == 0,
            "a level opens empty");
  S->ckpt_depth = c->nlevels;
  if (S->ckpt_check) jt_ckpt_check_opened(S);
  return c->nlevels;
}

int jt_ckpt_depth(jt_State *S) { return ckpt_of(S) ? ckpt_of(S)->nlevels : 0; }

void jt_ckpt_restore(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  if (!c || c->nlevels == 0) return;
  Level *L = &c->levels[c->nlevels - 1];
  if (S->ckpt_check) jt_ckpt_check_closing(S, c->nlevels - 1);
  S->gc_inhibit++;
  S->ckpt_depth = 0;  /* the replay itself must not be logged */
  for (size_t i = L->nundos; i > 0; i--) {
    UndoRec *u = &L->undos[i - 1];
    u->fn(S, u->a, u->b, u->c);
  }
  for (size_t i = L->nlogs; i > 0; i--) {
    jt_MapLog *m = &L->logs[i - 1];
    if (m->old == JT_NOVALUE) jt_hash_rem(S, m->map, m->key);
    else jt_hash_put(S, m->map, m->key, m->old);
  }
  JT_ASSERT(L->setn == L->nsnaps, "a level saved each object once");
  for (size_t i = L->nsnaps; i > 0; i--) snap_restore(S, &L->snaps[i - 1]);
  level_close(L);
  c->nlevels--;
  S->ckpt_depth = c->nlevels;
  if (S->ckpt_check) jt_ckpt_check_closed(S, c->nlevels, true);
  S->gc_inhibit--;
}

void jt_ckpt_commit(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  if (!c || c->nlevels == 0) return;
  Level *L = &c->levels[c->nlevels - 1];
  if (S->ckpt_check) jt_ckpt_check_closing(S, c->nlevels - 1);
  if (c->nlevels > 1) {
    Level *P = &c->levels[c->nlevels - 2];
    for (size_t i = 0; i < L->nsnaps; i++) {
      Snap *s = &L->snaps[i];
      if (set_has(P, s->obj)) { snap_free(s); continue; }
      set_add(P, s->obj);
      snap_push(P, *s);
      s->body = s->buf = s->buf2 = NULL;
    }
    for (size_t i = 0; i < L->nlogs; i++) {
      if (P->nlogs == P->caplogs) {
        jt_MapLog *p = jt_grow(P->logs, &P->caplogs, P->nlogs + 1, sizeof *p, 64);
        if (!p) abort();
        P->logs = p;
      }
      P->logs[P->nlogs++] = L->logs[i];
    }
    for (size_t i = 0; i < L->nundos; i++) undo_push(P, L->undos[i]);
  }
  level_close(L);
  c->nlevels--;
  S->ckpt_depth = c->nlevels;
  if (S->ckpt_check) jt_ckpt_check_closed(S, c->nlevels, false);
}

/* The outermost level's copies and logs hold the world as it was before
** it: keeping what it did needs none of them.  The levels inside it keep
** theirs (each holds the state as it was when that level was opened,
** which is what a restore of it must bring back), and the closed level's
** buffers go to the spare slot past the open ones. */
void jt_ckpt_commit_outermost(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  if (!c || c->nlevels == 0) return;
  if (c->nlevels == 1) {
    jt_ckpt_commit(S);
    return;
  }
  if (S->ckpt_check) jt_ckpt_check_closing(S, 0);
  Level closed = c->levels[0];
  level_close(&closed);
  memmove(&c->levels[0], &c->levels[1], (size_t)(c->nlevels - 1) * sizeof *c->levels);
  c->levels[c->nlevels - 1] = closed;
  c->nlevels--;
  S->ckpt_depth = c->nlevels;
  if (S->ckpt_check) jt_ckpt_check_closed(S, 0, false);
}

void jt_ckpt_free(jt_State *S) {
  struct jt_Ckpt *c = ckpt_of(S);
  if (!c) return;
  for (size_t i = 0; i < c->caplevels; i++) level_free(&c->levels[i]);
  free(c->levels);
  free(c);
  S->ckpt = NULL;
}

/* ------------------------------------------------- what the levels hold */

static Level *level_at(jt_State *S, int level) { return &ckpt_of(S)->levels[level]; }

size_t jt_ckpt_log_count(jt_State *S, int level) { return level_at(S, level)->nlogs; }
jt_MapLog jt_ckpt_log_at(jt_State *S, int level, size_t i) { return level_at(S, level)->logs[i]; }
size_t jt_ckpt_saved_count(jt_State *S, int level) { return level_at(S, level)->nsnaps; }
jt_Obj *jt_ckpt_saved_at(jt_State *S, int level, size_t i) { return level_at(S, level)->snaps[i].obj; }

bool jt_ckpt_saved_since(jt_State *S, int level, const jt_Obj *o) {
  for (int l = level; l < jt_ckpt_depth(S); l++)
    if (set_has(level_at(S, l), (jt_Obj *)o)) return true;
  return false;
}

bool jt_ckpt_untouched_since(jt_State *S, int from) {
  int n = jt_ckpt_depth(S);
  if (from >= n) return false;
  for (int l = from; l < n; l++)
    if (level_at(S, l)->nlogs || level_at(S, l)->nsnaps) return false;
  return true;
}

bool jt_ckpt_only_symbols_since(jt_State *S, int from) {
  int n = jt_ckpt_depth(S);
  if (from >= n) return false;
  for (int l = from; l < n; l++) {
    Level *L = level_at(S, l);
    for (size_t i = 0; i < L->nsnaps; i++)
      if (L->snaps[i].obj->type != JT_TSYMBOL) return false;
  }
  return true;
}
