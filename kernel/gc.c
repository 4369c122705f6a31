/*
** gc.c — allocator and precise mark-and-sweep collector.
**
** Small objects (up to 128 bytes: conses, floats, symbols, closures, small
** frames...) come from per-size-class pages with free lists rebuilt by each
** sweep; larger objects are their own malloc block, linked into S->objects.
** Sanitizer builds give every object its own malloc block, so that
** AddressSanitizer sees each freed object and the GC-stress mode (a
** collection at every allocation) turns a missing root into an immediate
** use-after-free report.
**
** Marking uses an explicit gray stack, never C recursion, so a million-long
** list or a deep tree cannot overflow the C stack.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "jt_lib.h"
#include "jt_eval.h"

#define GC_MIN_THRESHOLD ((size_t)8 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define USE_POOLS 0
#else
#define USE_POOLS 1
#endif

/* Size classes of the pools; a page holds objects of one class. */
static const uint16_t pool_sizes[JT_POOL_CLASSES] = {32, 48, 64, 96, 128};
#define POOL_PAGE_BYTES ((size_t)64 << 10)

typedef struct jt_Page {
  struct jt_Page *next;
  uint32_t cls;
  uint32_t nslots;
  max_align_t data[];
} jt_Page;

static int pool_class(size_t size) {
  for (int i = 0; i < JT_POOL_CLASSES; i++)
    if (size <= pool_sizes[i]) return i;
  return -1;
}

size_t jt_gc_obj_size(const jt_Obj *o) {
  switch (o->type) {
    case JT_TCONS: return sizeof(jt_Cons);
    case JT_TSYMBOL: return sizeof(jt_Symbol);
    case JT_TSTRING: return sizeof(jt_String);
    case JT_TVECTOR: return sizeof(jt_Vector);
    case JT_TBIGNUM: return sizeof(jt_Bignum);
    case JT_TRATIO: return sizeof(jt_Ratio);
    case JT_TFLOAT: return sizeof(jt_Float);
    case JT_THASH: return sizeof(jt_Hash);
    case JT_TPRIM: return sizeof(jt_Prim);
    case JT_TCLOSURE: return sizeof(jt_Closure);
    case JT_TFRAME: return sizeof(jt_Frame) + o->aux * sizeof(jt_V);
    case JT_TCODE: return sizeof(jt_Code);
    case JT_TLAYOUT: return sizeof(jt_Layout);
    case JT_TSTRUCT: return sizeof(jt_Struct) + o->aux * sizeof(jt_V);
    case JT_TSTREAM: return sizeof(jt_Stream);
    case JT_TRESTART: return sizeof(jt_Restart);
    case JT_TFOREIGN: return sizeof(jt_Foreign);
  }
  return sizeof(jt_Obj);
}

/* ------------------------------------------------------------ accounting */

static void heap_limit_check(jt_State *S, size_t n) {
  if (S->limits.heap == 0 || S->in_limit) return;
  if (S->bytes_live + n <= S->limits.heap) return;
  if (S->gc_inhibit == 0) jt_gc_collect(S);
  if (S->bytes_live + n > S->limits.heap) jt_limit_exceeded(S, JT_LIMIT_HEAP);
}

static void maybe_collect(jt_State *S, size_t n) {
  if (S->gc_inhibit) return;
  if (S->gc_stress || S->bytes_since_gc + n > S->gc_threshold) jt_gc_collect(S);
}

void jt_gc_account(jt_State *S, size_t n) {
  heap_limit_check(S, n);
  maybe_collect(S, n);
  S->bytes_live += n;
  S->bytes_since_gc += n;
}

void jt_gc_release(jt_State *S, size_t n) {
  S->bytes_live = S->bytes_live > n ? S->bytes_live - n : 0;
}

static void out_of_memory(jt_State *S) {
  jt_errorc(S, JT_SYM(S, STORAGE_CONDITION), "out of memory");
}

void *jt_malloc(jt_State *S, size_t n) {
  jt_gc_account(S, n);
  void *p = malloc(n ? n : 1);
  if (!p) { jt_gc_release(S, n); out_of_memory(S); }
  return p;
}

void *jt_realloc(jt_State *S, void *p, size_t oldn, size_t newn) {
  if (newn > oldn) jt_gc_account(S, newn - oldn);
  void *q = realloc(p, newn ? newn : 1);
  if (!q) {
    if (newn > oldn) jt_gc_release(S, newn - oldn);
    out_of_memory(S);
  }
  if (newn < oldn) jt_gc_release(S, oldn - newn);
  return q;
}

void jt_free(jt_State *S, void *p, size_t n) {
  free(p);
  jt_gc_release(S, n);
}

/* Pages are carved from slabs of SLAB_PAGES pages; slabs are released only
** when the state closes (one unmap per slab instead of one free per page).
** A slab is a mapping of its own, 2 MiB long and 2 MiB aligned, advised for
** transparent huge pages: a growing heap then takes one page fault per slab
** instead of 512.  On a virtual machine the faults of a fresh heap were the
** largest single cost of bulk work such as importing a world (a third of it;
** docs/benchmarks.md, "Recovery").  Where huge pages are disabled the advice
** does nothing and the slab faults in page by page as before. */
#define SLAB_PAGES 32
#define SLAB_BYTES ((size_t)SLAB_PAGES * POOL_PAGE_BYTES)   /* 2 MiB */

typedef struct jt_Slab {
  struct jt_Slab *next;
  size_t used;             /* pages handed out */
  char *mem;               /* SLAB_BYTES, aligned to SLAB_BYTES */
} jt_Slab;

/* SLAB_BYTES of fresh memory aligned to SLAB_BYTES, or NULL. */
static char *slab_map(void) {
  size_t len = 2 * SLAB_BYTES;
  char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  char *mem = (char *)(((uintptr_t)raw + SLAB_BYTES - 1) & ~(uintptr_t)(SLAB_BYTES - 1));
  if (mem > raw) munmap(raw, (size_t)(mem - raw));
  if (raw + len > mem + SLAB_BYTES) munmap(mem + SLAB_BYTES, (size_t)(raw + len - (mem + SLAB_BYTES)));
#ifdef MADV_HUGEPAGE
  madvise(mem, SLAB_BYTES, MADV_HUGEPAGE);
#endif
  return mem;
}

static jt_Page *slab_page(jt_State *S) {
  jt_Slab *sl = S->slabs;
  if (!sl || sl->used == SLAB_PAGES) {
    sl = malloc(sizeof *sl);
    if (!sl) return NULL;
    if (!(sl->mem = slab_map())) {
      free(sl);
      return NULL;
    }
    sl->next = S->slabs;
    sl->used = 0;
    S->slabs = sl;
  }
  return (jt_Page *)(sl->mem + POOL_PAGE_BYTES * sl->used++);
}

/* A fresh page of class `cls`, its slots pushed on the free list. */
static bool pool_grow(jt_State *S, int cls) {
  size_t osize = pool_sizes[cls];
  jt_Page *pg = slab_page(S);
  if (!pg) return false;
  pg->cls = (uint32_t)cls;
  pg->nslots = (uint32_t)((POOL_PAGE_BYTES - sizeof(jt_Page)) / osize);
  pg->next = S->pages;
  S->pages = pg;
  char *base = (char *)pg->data;
  for (uint32_t i = pg->nslots; i > 0; i--) {
    jt_Obj *o = (jt_Obj *)(base + (i - 1) * osize);
    o->type = 0;
    o->gcnext = S->freelist[cls];
    S->freelist[cls] = o;
  }
  return true;
}

jt_Obj *jt_alloc(jt_State *S, int t, size_t size) {
  heap_limit_check(S, size);
  maybe_collect(S, size);
  jt_Obj *o;
  int cls = USE_POOLS ? pool_class(size) : -1;
  if (cls >= 0) {
    if (!S->freelist[cls] && !pool_grow(S, cls)) out_of_memory(S);
    o = S->freelist[cls];
    S->freelist[cls] = o->gcnext;
    memset(o, 0, pool_sizes[cls]);
    o->type = (uint8_t)t;
  } else {
    o = calloc(1, size);
    if (!o) out_of_memory(S);
    o->type = (uint8_t)t;
    o->gcnext = S->objects;
    S->objects = o;
  }
  S->bytes_live += size;
  S->bytes_since_gc += size;
  return o;
}

/* ----------------------------------------------------------------- roots */

void jt_root_grow(jt_State *S) {
  size_t n = S->rootcap ? S->rootcap * 2 : 256;
  jt_V **r = realloc(S->roots, n * sizeof *r);
  if (!r) out_of_memory(S);
  S->roots = r;
  S->rootcap = n;
}

/* The value stack keeps a reserve past stack_end; signalling the overflow
** may use it (the condition and its handlers need stack too).  A second
** overflow inside the reserve aborts outright. */
void jt_stack_overflow(jt_State *S) {
  jt_V *hard_end = S->stack + S->stack_slots;
  if (S->stack_end < hard_end - JT_STACK_RESERVE / 2) {
    S->stack_end = hard_end - JT_STACK_RESERVE / 2;  /* restored by the entry point */
    S->limit_tripped |= 1u << JT_LIMIT_DEPTH;
    jt_limit_exceeded(S, JT_LIMIT_DEPTH);
  }
  S->stack_end = hard_end - JT_STACK_GUARD;
  jt_abort_to_top(S, JITI_LIMIT, JT_NIL);
}

/* ------------------------------------------------------------------ mark */

static void gray_push(jt_State *S, jt_Obj *o) {
  if (S->ngray == S->graycap) {
    size_t n = S->graycap ? S->graycap * 2 : 1024;
    jt_Obj **g = realloc(S->gray, n * sizeof *g);
    if (!g) abort();  /* cannot report: we are inside the collector */
    S->gray = g;
    S->graycap = n;
  }
  S->gray[S->ngray++] = o;
}

void jt_gc_mark(jt_State *S, jt_V v) {
  if (!jt_isptr(v)) return;
  jt_Obj *o = jt_o(v);
  if (o->marked) return;
  o->marked = 1;
  gray_push(S, o);
}

#define M(v) jt_gc_mark(S, (v))

static void trace(jt_State *S, jt_Obj *o) {
  switch (o->type) {
    case JT_TCONS: {
      /* Follow cdr chains in a loop: lists are the common deep structure. */
      jt_Cons *c = (jt_Cons *)o;
      M(c->car);
      M(c->cdr);
      break;
    }
    case JT_TSYMBOL: {
      jt_Symbol *s = (jt_Symbol *)o;
      M(s->name); M(s->value); M(s->function); M(s->plist); M(s->setf_fn);
      break;
    }
    case JT_TVECTOR: {
      jt_Vector *v = (jt_Vector *)o;
      for (size_t i = 0; i < v->cap; i++) M(v->items[i]);
      break;
    }
    case JT_THASH: {
      jt_Hash *h = (jt_Hash *)o;
      for (size_t i = 0; i < h->nentries; i++) {
        M(h->entries[i].key);
        M(h->entries[i].val);
      }
      break;
    }
    case JT_TPRIM: M(((jt_Prim *)o)->name); break;
    case JT_TCLOSURE: {
      jt_Closure *c = (jt_Closure *)o;
      M(c->code); M(c->env); M(c->name);
      break;
    }
    case JT_TFRAME: {
      jt_Frame *f = (jt_Frame *)o;
      M(f->parent);
      for (uint32_t i = 0; i < o->aux; i++) M(f->slots[i]);
      break;
    }
    case JT_TCODE: {
      jt_Code *c = (jt_Code *)o;
      for (size_t i = 0; i < c->nconsts; i++) M(c->consts[i]);
      break;
    }
    case JT_TLAYOUT: {
      jt_Layout *l = (jt_Layout *)o;
      M(l->name); M(l->parents); M(l->slot_names); M(l->initargs);
      M(l->initforms); M(l->report); M(l->conc_name);
      break;
    }
    case JT_TSTRUCT: {
      jt_Struct *s = (jt_Struct *)o;
      M(s->layout);
      for (uint32_t i = 0; i < o->aux; i++) M(s->slots[i]);
      break;
    }
    case JT_TSTREAM: M(((jt_Stream *)o)->buffer); break;
    case JT_TRESTART: {
      jt_Restart *r = (jt_Restart *)o;
      M(r->name); M(r->function); M(r->report); M(r->test); M(r->interactive);
      break;
    }
    case JT_TFOREIGN: M(((jt_Foreign *)o)->tag); break;
    default: break;
  }
}

static void mark_roots(jt_State *S) {
  for (jt_V *p = S->stack; p < S->sp; p++) M(*p);
  for (size_t i = 0; i < S->nroots; i++) M(*S->roots[i]);
  for (size_t i = 0; i < S->symcap; i++) M(S->symtab[i]);
  M(S->nil_sym); M(S->t_sym);
  for (int i = 0; i < JT_S_COUNT; i++) M(S->sym[i]);
  M(S->layouts);
  for (int i = 0; i < S->nvals && i < JT_MV_LIMIT; i++) M(S->mv[i]);
  M(S->mv[0]);
  for (size_t i = 0; i < S->nbind; i++) { M(S->bindings[i].sym); M(S->bindings[i].old); }
  for (jt_CallInfo *ci = S->ci; ci; ci = ci->prev) M(ci->fn);
  for (jt_Handlers *h = S->handlers; h; h = h->prev) M(h->list);
  for (jt_Restarts *r = S->restarts; r; r = r->prev) M(r->list);
  for (jt_Jmp *j = S->jmp; j; j = j->prev) M(j->tag);
  M(S->pending);
  M(S->stdout_stream);
  M(S->xfer_val);
  if (S->world_mark) S->world_mark(S, S->world);
}

/* ----------------------------------------------------------------- sweep */

/* Release what an object owns outside itself (buffers, GMP limbs...). */
static void release_contents(jt_State *S, jt_Obj *o) {
  switch (o->type) {
    case JT_TSYMBOL: free(((jt_Symbol *)o)->cname); break;
    case JT_TSTRING: {
      jt_String *s = (jt_String *)o;
      jt_free(S, s->chars, s->cap * sizeof(uint32_t));
      break;
    }
    case JT_TVECTOR: {
      jt_Vector *v = (jt_Vector *)o;
      jt_free(S, v->items, v->cap * sizeof(jt_V));
      break;
    }
    /* num.c accounts the limbs of large numbers and records how many in aux */
    case JT_TBIGNUM:
      mpz_clear(((jt_Bignum *)o)->z);
      jt_gc_release(S, o->aux * sizeof(mp_limb_t));
      break;
    case JT_TRATIO:
      mpq_clear(((jt_Ratio *)o)->q);
      jt_gc_release(S, o->aux * sizeof(mp_limb_t));
      break;
    case JT_THASH: {
      jt_Hash *h = (jt_Hash *)o;
      jt_free(S, h->entries, h->entcap * sizeof(jt_HashEntry));
      jt_free(S, h->index, h->idxcap * sizeof(int32_t));
      break;
    }
    case JT_TCODE: jt_code_free(S, (jt_Code *)o); break;
    default: break;
  }
  jt_gc_release(S, jt_gc_obj_size(o));
}

static void free_object(jt_State *S, jt_Obj *o) {
  release_contents(S, o);
  free(o);
}

/* Sweep the pages: rebuild the free lists from dead and free slots.  Pages
** are kept (returning memory to the system only to fault it back in at the
** next allocation burst dominated list-heavy programs); `all` frees every
** object, at close. */
static void sweep_pages(jt_State *S, bool all) {
  for (int i = 0; i < JT_POOL_CLASSES; i++) S->freelist[i] = NULL;
  jt_Page **link = &S->pages;
  while (*link) {
    jt_Page *pg = *link;
    size_t osize = pool_sizes[pg->cls];
    char *base = (char *)pg->data;
    jt_Obj *free_head = NULL, *free_tail = NULL;
    for (uint32_t i = 0; i < pg->nslots; i++) {
      jt_Obj *o = (jt_Obj *)(base + i * osize);
      if (o->type != 0) {
        if (o->marked && !all) { o->marked = 0; continue; }
        release_contents(S, o);
        o->type = 0;
      }
      o->gcnext = NULL;
      if (free_tail) free_tail->gcnext = o; else free_head = o;
      free_tail = o;
    }
    if (free_tail) {
      free_tail->gcnext = S->freelist[pg->cls];
      S->freelist[pg->cls] = free_head;
    }
    link = &pg->next;
  }
}

void jt_gc_collect(jt_State *S) {
  if (S->gc_inhibit) return;
  S->gc_inhibit++;
  mark_roots(S);
  while (S->ngray) trace(S, S->gray[--S->ngray]);
  jt_Obj **link = &S->objects;
  while (*link) {
    jt_Obj *o = *link;
    if (o->marked) {
      o->marked = 0;
      link = &o->gcnext;
    } else {
      *link = o->gcnext;
      free_object(S, o);
    }
  }
  sweep_pages(S, false);
  S->bytes_since_gc = 0;
  S->gc_threshold = S->bytes_live > GC_MIN_THRESHOLD ? S->bytes_live : GC_MIN_THRESHOLD;
  S->gc_count++;
  S->gc_inhibit--;
}

void jt_gc_defer(jt_State *S, size_t n) {
  size_t base = S->gc_threshold > S->bytes_since_gc ? S->gc_threshold : S->bytes_since_gc;
  S->gc_threshold = base + n < base ? SIZE_MAX : base + n;
}

void jt_gc_free_all(jt_State *S) {
  jt_Obj *o = S->objects;
  while (o) {
    jt_Obj *next = o->gcnext;
    free_object(S, o);
    o = next;
  }
  S->objects = NULL;
  sweep_pages(S, true);
  while (S->slabs) {
    jt_Slab *next = S->slabs->next;
    munmap(S->slabs->mem, SLAB_BYTES);
    free(S->slabs);
    S->slabs = next;
  }
  S->pages = NULL;
  free(S->gray);
  S->gray = NULL;
  S->ngray = S->graycap = 0;
}

/* The write barrier's slow path runs only while a checkpoint is open
** (S->ckpt_depth > 0).  Checkpoints belong to the world layer, which
** installs its undo log here; until one is open nothing is logged. */
void jt_barrier_slow(jt_State *S, jt_Obj *owner, jt_V *slot) {
  if (S->barrier_log) S->barrier_log(S, owner, slot);
}
