/*
** gc.c — allocator and precise mark-and-sweep collector with two
** generations (the design is explained in jt_gc.h).
**
** Small objects (up to 128 bytes: conses, floats, symbols, closures, small
** frames...) come from per-size-class pages.  The allocator takes one page
** at a time off its class's list of pages with free slots and hands out that
** page's free slots; a page it takes joins the young pages, the only pages a
** young collection sweeps.  A young collection puts the pages it swept back
** at the front of the lists, so the next allocations reuse the memory just
** freed, which is still in the cache.  Larger objects are their own malloc
** block, on one list per generation.  Sanitizer builds give every object
** its own malloc block, so that AddressSanitizer sees each freed object and
** the GC-stress mode (a collection at every allocation) turns a missing
** root or a missing write barrier into an immediate use-after-free report.
**
** Marking uses an explicit gray stack, never C recursion, so a million-long
** list or a deep tree cannot overflow the C stack.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "jt_lib.h"
#include "jt_eval.h"
#include "jt_ckpt.h"
#include "jt_grow.h"
#include "jt_world.h"

#define GC_MIN_THRESHOLD ((size_t)8 << 20)
/* A safepoint collects the young generation once this much was allocated:
** small enough to stay in the caches, large enough that the fixed cost of
** a collection (the roots: every symbol) is spread over many calls. */
#define GC_NURSERY ((size_t)2 << 20)
/* Single slots remembered before the barrier falls back to whole objects. */
#define SLOTLOG_MAX 65536

#if defined(__SANITIZE_ADDRESS__)
#define USE_POOLS 0
#else
#define USE_POOLS 1
#endif

/* Size classes of the pools; a page holds objects of one class. */
static const uint16_t pool_sizes[JT_POOL_CLASSES] = {32, 48, 64, 96, 128};
#define POOL_PAGE_BYTES ((size_t)64 << 10)

typedef struct jt_Page {
  struct jt_Page *next;        /* every page (S->pages) */
  struct jt_Page *avail_next;  /* S->avail[cls], while in_avail */
  struct jt_Page *young_next;  /* S->young_pages, while young */
  jt_Obj *free;                /* free slots, while in_avail */
  uint32_t cls;
  uint32_t nslots;
  uint8_t in_avail, young;
  max_align_t data[];
} jt_Page;

/* A slot of an old vector or hash table that was given a young value. */
typedef struct jt_SlotRef {
  jt_Obj *owner;
  size_t index;    /* vector item, or hash entry (key and value) */
} jt_SlotRef;

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
    case JT_TARRAY: return sizeof(jt_Array) + o->aux * sizeof(size_t);
    case JT_TCOMPLEX: return sizeof(jt_Complex);
    case JT_TRANDOM: return sizeof(jt_Random);
    case JT_TPACKAGE: return sizeof(jt_Package);
    case JT_TINSTANCE: return sizeof(jt_Instance);
    case JT_TCLASS: return sizeof(jt_Class);
    case JT_TGENERIC: return sizeof(jt_Generic);
    case JT_TMETHOD: return sizeof(jt_Method);
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

static void collect(jt_State *S, bool young, bool promote);

static void maybe_collect(jt_State *S, size_t n) {
  if (S->gc_inhibit) return;
  if (S->gc_stress) {
    /* mostly young collections: they check every write barrier */
    collect(S, S->gc_count % 8 != 7, false);
  } else if (S->bytes_since_gc + n > S->gc_threshold) {
    collect(S, false, false);
  }
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
** does nothing and the slab faults in page by page as before.
**
** Under LeakSanitizer a slab is a root region: objects keep malloc'd
** buffers (string characters, vector items) that only the slab points to,
** and LSan does not scan mappings of its own accord. */
#if defined(__SANITIZE_ADDRESS__)
#define JT_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JT_LSAN 1
#endif
#endif
#ifdef JT_LSAN
#include <sanitizer/lsan_interface.h>
#define slab_watch(p, n) __lsan_register_root_region((p), (n))
#define slab_unwatch(p, n) __lsan_unregister_root_region((p), (n))
#else
#define slab_watch(p, n) ((void)0)
#define slab_unwatch(p, n) ((void)0)
#endif

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
  slab_watch(mem, SLAB_BYTES);
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

/* A fresh page of class `cls`, all its slots free. */
static jt_Page *new_page(jt_State *S, int cls) {
  size_t osize = pool_sizes[cls];
  jt_Page *pg = slab_page(S);
  if (!pg) return NULL;
  memset(pg, 0, sizeof *pg);
  pg->cls = (uint32_t)cls;
  pg->nslots = (uint32_t)((POOL_PAGE_BYTES - sizeof(jt_Page)) / osize);
  pg->next = S->pages;
  S->pages = pg;
  char *base = (char *)pg->data;
  for (uint32_t i = pg->nslots; i > 0; i--) {
    jt_Obj *o = (jt_Obj *)(base + (i - 1) * osize);
    o->type = 0;
    o->gcnext = pg->free;
    pg->free = o;
  }
  return pg;
}

/* The free slots of the next page of class `cls` become the free list. */
static bool refill(jt_State *S, int cls) {
  jt_Page *pg;
  for (;;) {
    pg = S->avail[cls];
    if (!pg) {
      if (!(pg = new_page(S, cls))) return false;
      break;
    }
    S->avail[cls] = pg->avail_next;
    pg->avail_next = NULL;
    pg->in_avail = 0;
    if (pg->free) break;  /* (a listed page always has some; be safe) */
  }
  S->freelist[cls] = pg->free;
  pg->free = NULL;
  if (!pg->young) {
    pg->young = 1;
    pg->young_next = S->young_pages;
    S->young_pages = pg;
  }
  return true;
}

jt_Obj *jt_alloc(jt_State *S, int t, size_t size) {
  heap_limit_check(S, size);
  maybe_collect(S, size);
  jt_Obj *o;
  int cls = USE_POOLS ? pool_class(size) : -1;
  if (cls >= 0) {
    if (!S->freelist[cls] && !refill(S, cls)) out_of_memory(S);
    o = S->freelist[cls];
    S->freelist[cls] = o->gcnext;
    memset(o, 0, pool_sizes[cls]);
    o->type = (uint8_t)t;
  } else {
    o = calloc(1, size);
    if (!o) out_of_memory(S);
    o->type = (uint8_t)t;
    o->gcnext = S->young_objects;
    S->young_objects = o;
  }
  S->bytes_live += size;
  S->bytes_since_gc += size;
  return o;
}

/* ----------------------------------------------------------------- roots */

void jt_root_grow(jt_State *S) {
  jt_V **r = jt_grow(S->roots, &S->rootcap, S->nroots + 1, sizeof *r, 256);
  if (!r) out_of_memory(S);
  S->roots = r;
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
    jt_Obj **g = jt_grow(S->gray, &S->graycap, S->ngray + 1, sizeof *g, 1024);
    if (!g) abort();  /* cannot report: we are inside the collector */
    S->gray = g;
  }
  S->gray[S->ngray++] = o;
}

/* In a young collection gc_skip includes JT_GC_OLD: old objects count as
** marked, and marking stops there. */
void jt_gc_mark(jt_State *S, jt_V v) {
  if (!jt_isptr(v)) return;
  jt_Obj *o = jt_o(v);
  if (o->gcflags & S->gc_skip) return;
  o->gcflags |= JT_GC_MARK;
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
      M(l->initforms); M(l->report); M(l->info); M(l->class);
      break;
    }
    case JT_TSTRUCT: {
      jt_Struct *s = (jt_Struct *)o;
      M(s->layout);
      for (uint32_t i = 0; i < o->aux; i++) M(s->slots[i]);
      break;
    }
    case JT_TSTREAM: {
      jt_Stream *st = (jt_Stream *)o;
      M(st->buffer); M(st->bytes); M(st->in); M(st->out); M(st->etype); M(st->pretty); M(st->file);
      break;
    }
    case JT_TRESTART: {
      jt_Restart *r = (jt_Restart *)o;
      M(r->name); M(r->function); M(r->report); M(r->test); M(r->interactive); M(r->conditions);
      M(r->lambda_list);
      break;
    }
    case JT_TFOREIGN: M(((jt_Foreign *)o)->tag); break;
    case JT_TARRAY: M(((jt_Array *)o)->data); break;
    case JT_TCOMPLEX: M(((jt_Complex *)o)->re); M(((jt_Complex *)o)->im); break;
    case JT_TPACKAGE: {
      jt_Package *p = (jt_Package *)o;
      M(p->name); M(p->nicknames); M(p->use_list); M(p->used_by); M(p->shadowing); M(p->doc);
      break;
    }
    case JT_TINSTANCE: M(((jt_Instance *)o)->wrapper); M(((jt_Instance *)o)->slots); break;
    case JT_TCLASS: {
      jt_Class *c = (jt_Class *)o;
      M(c->name); M(c->supers); M(c->subs); M(c->cpl); M(c->dslots); M(c->slots);
      M(c->wrapper); M(c->dinitargs); M(c->initargs); M(c->doc); M(c->form); M(c->valid);
      break;
    }
    case JT_TGENERIC: {
      jt_Generic *g = (jt_Generic *)o;
      M(g->name); M(g->lambda_list); M(g->methods); M(g->eqls); M(g->doc); M(g->form);
      M(g->cache);
      break;
    }
    case JT_TMETHOD: {
      jt_Method *m = (jt_Method *)o;
      M(m->gf); M(m->qualifiers); M(m->specializers); M(m->lambda_list); M(m->function);
      M(m->slot); M(m->form); M(m->doc);
      break;
    }
    default: break;
  }
}

void jt_gc_trace_fields(jt_State *S, const jt_Obj *o) { trace(S, (jt_Obj *)o); }

static void mark_roots(jt_State *S) {
  for (jt_V *p = S->stack; p < S->sp; p++) M(*p);
  for (size_t i = 0; i < S->nroots; i++) M(*S->roots[i]);
  for (size_t i = 0; i < S->symcap; i++)
    if (S->symtab[i].sym != 0 && S->symtab[i].sym != JT_UNBOUND) M(S->symtab[i].sym);
  for (size_t i = 0; i < S->npackages; i++) M(S->packages[i]);
  M(S->package_names);
  M(S->nil_sym); M(S->t_sym);
  for (int i = 0; i < JT_S_COUNT; i++) M(S->sym[i]);
  M(S->layouts);
  M(S->clos);
  M(S->symmeta);
  for (int i = 0; i < S->nvals && i < JT_MV_LIMIT; i++) M(S->mv[i]);
  M(S->mv[0]);
  for (size_t i = 0; i < S->nbind; i++) { M(S->bindings[i].sym); M(S->bindings[i].old); }
  for (jt_CallInfo *ci = S->ci; ci; ci = ci->prev) {
    M(ci->fn);
    M(ci->env_now);  /* may be a LET's frame the call has left since */
  }
  for (jt_Handlers *h = S->handlers; h; h = h->prev) M(h->list);
  for (jt_Restarts *r = S->restarts; r; r = r->prev) M(r->list);
  for (jt_Jmp *j = S->jmp; j; j = j->prev) M(j->tag);
  M(S->pending);
  M(S->stdout_stream);
  M(S->stdin_stream);
  M(S->traced);
  M(S->terminal_io);
  M(S->query_io);
  M(S->random_state);
  M(S->xfer_val);
  M(S->held_form);
  M(S->top_form);
  jt_reads_mark(S);
  if (S->world_mark) S->world_mark(S, S->world);
  jt_ckpt_mark(S);
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

/* The types release_contents frees memory for. */
static bool owns_memory(int type) {
  switch (type) {
    case JT_TSYMBOL: case JT_TSTRING: case JT_TVECTOR: case JT_TBIGNUM: case JT_TRATIO:
    case JT_THASH: case JT_TCODE:
      return true;
    default:
      return false;
  }
}

static void free_object(jt_State *S, jt_Obj *o) {
  if (S->ckpt_check) jt_ckpt_check_freed(S, o);
  release_contents(S, o);
  free(o);
}

/* ------------------------------------------------------ remembered set */

/* Rescan all of old object `o` at the next young collection. */
void jt_gc_remember(jt_State *S, jt_Obj *o) {
  if ((o->gcflags & (JT_GC_OLD | JT_GC_REM)) != JT_GC_OLD) return;
  if (S->nremembered == S->remcap) {
    jt_Obj **r = jt_grow(S->remembered, &S->remcap, S->nremembered + 1, sizeof *r, 256);
    if (!r) abort();  /* cannot signal from inside the write barrier */
    S->remembered = r;
  }
  o->gcflags |= JT_GC_REM;
  S->remembered[S->nremembered++] = o;
}

/* Remember one slot of an old vector or hash table: a write into a table of
** a million rows must not make the next young collection scan them all.
** The index is checked against the buffer when it is used, so a buffer
** replaced meanwhile (which also remembers the whole object) is harmless. */
static void remember_slot(jt_State *S, jt_Obj *o, jt_V *slot) {
  size_t index;
  if (o->type == JT_TVECTOR) {
    jt_Vector *v = (jt_Vector *)o;
    if (slot < v->items || slot >= v->items + v->cap) { jt_gc_remember(S, o); return; }
    index = (size_t)(slot - v->items);
  } else {
    jt_Hash *h = (jt_Hash *)o;
    jt_V *first = &h->entries[0].key;
    if (slot < first || slot >= first + 2 * h->entcap) { jt_gc_remember(S, o); return; }
    index = (size_t)(slot - first) / 2;
  }
  if (S->nslotlog == S->slotlogcap) {
    if (S->slotlogcap == SLOTLOG_MAX) {
      /* many single slots: rescan their owners whole instead */
      for (size_t i = 0; i < S->nslotlog; i++) jt_gc_remember(S, S->slotlog[i].owner);
      S->nslotlog = 0;
      jt_gc_remember(S, o);
      return;
    }
    jt_SlotRef *r = jt_grow(S->slotlog, &S->slotlogcap, S->nslotlog + 1, sizeof *r, 256);
    if (!r) abort();  /* cannot signal from inside the write barrier */
    S->slotlog = r;
  }
  S->slotlog[S->nslotlog++] = (jt_SlotRef){o, index};
}

/* The collector's write barrier: `owner` is old and `val` is about to be
** stored in `slot` (NULL: the whole object may change). */
#ifdef JITI_CHECKS
void jt_assert_fail(const char *what, const char *file, int line) {
  fprintf(stderr, "jiti: internal error at %s:%d: %s\n", file, line, what);
  abort();
}
#endif

void jt_gc_barrier_slow(jt_State *S, jt_Obj *owner, jt_V *slot, jt_V val) {
  JT_ASSERT(owner->gcflags & JT_GC_OLD, "the collector's barrier is for old objects");
  JT_ASSERT(!slot || ((char *)slot >= (char *)owner && (char *)slot < (char *)owner + jt_gc_obj_size(owner)) ||
                owner->type == JT_TVECTOR || owner->type == JT_THASH,
            "a stored slot lies inside its object (or its container's buffer)");
  if ((owner->gcflags & (JT_GC_OLD | JT_GC_REM)) != JT_GC_OLD) return;
  if (!slot) { jt_gc_remember(S, owner); return; }
  if (!jt_isptr(val) || (jt_o(val)->gcflags & JT_GC_OLD)) return;  /* no young object */
  if (owner->type == JT_TVECTOR || owner->type == JT_THASH) remember_slot(S, owner, slot);
  else jt_gc_remember(S, owner);
}

/* JT_SET and JT_TOUCH: the collector's part, then the world layer's undo
** log while a checkpoint is open. */
void jt_barrier_slow(jt_State *S, jt_Obj *owner, jt_V *slot, jt_V val) {
  if (owner->gcflags & JT_GC_OLD) jt_gc_barrier_slow(S, owner, slot, val);
  if (jt_barrier_active(S)) jt_ckpt_touch(S, owner);
}

/* A young collection marks what the remembered old objects and slots
** point to. */
static void mark_remembered(jt_State *S) {
  for (size_t i = 0; i < S->nremembered; i++) {
    /* the generational invariant: an old object that may point to young
    ** ones is remembered (whole, or the slots in slotlog) */
    JT_ASSERT((S->remembered[i]->gcflags & (JT_GC_OLD | JT_GC_REM)) == (JT_GC_OLD | JT_GC_REM),
              "a remembered object is old and flagged remembered");
    trace(S, S->remembered[i]);
  }
  for (size_t i = 0; i < S->nslotlog; i++) {
    jt_Obj *o = S->slotlog[i].owner;
    size_t k = S->slotlog[i].index;
    if (o->gcflags & JT_GC_REM) continue;  /* rescanned whole */
    if (o->type == JT_TVECTOR) {
      jt_Vector *v = (jt_Vector *)o;
      if (k < v->cap) M(v->items[k]);
    } else {
      jt_Hash *h = (jt_Hash *)o;
      if (k < h->nentries) { M(h->entries[k].key); M(h->entries[k].val); }
    }
  }
}

/* After marking: drop the records of dead objects (a full collection), or
** all of them (everything live is about to be old). */
static void forget_remembered(jt_State *S, bool all) {
  size_t k = 0;
  for (size_t i = 0; i < S->nremembered; i++) {
    jt_Obj *o = S->remembered[i];
    if (!all && (o->gcflags & JT_GC_MARK)) S->remembered[k++] = o;
    else o->gcflags &= (uint8_t)~JT_GC_REM;
  }
  S->nremembered = k;
  k = 0;
  for (size_t i = 0; i < S->nslotlog; i++)
    if (!all && (S->slotlog[i].owner->gcflags & JT_GC_MARK)) S->slotlog[k++] = S->slotlog[i];
  S->nslotlog = k;
}

/* ----------------------------------------------------------------- sweep */

enum { SWEEP_YOUNG, SWEEP_FULL, SWEEP_ALL };

/* Sweep one page: free its dead objects, clear the marks of the survivors
** (promoting them when `promote`), rebuild its free list and offer it to
** the allocator if at least a quarter of it is free.  Allocating into the
** scattered holes of nearly full pages would make every young collection
** sweep many pages of old objects for a few young ones; such a page waits
** until a full collection frees more of it.  A young sweep leaves old
** objects alone; SWEEP_ALL frees everything, at close.  Pages are kept
** (returning memory to the system only to fault it back in at the next
** allocation burst dominated list-heavy programs). */
static void sweep_page(jt_State *S, jt_Page *pg, int mode, bool promote) {
  bool check = S->ckpt_check != NULL;
  size_t osize = pool_sizes[pg->cls];
  char *base = (char *)pg->data;
  uint8_t age = promote ? JT_GC_OLD : 0;
  uint32_t nfree = 0;
  jt_Obj *head = NULL, **tail = &head;
  for (uint32_t i = 0; i < pg->nslots; i++) {
    jt_Obj *o = (jt_Obj *)(base + i * osize);
    if (o->type != 0) {
      uint8_t f = o->gcflags;
      if (mode == SWEEP_YOUNG && (f & JT_GC_OLD)) continue;
      if ((f & JT_GC_MARK) && mode != SWEEP_ALL) {
        o->gcflags = (uint8_t)((f & ~JT_GC_MARK) | age);
        continue;
      }
      if (check) jt_ckpt_check_freed(S, o);
      release_contents(S, o);
      o->type = 0;
    }
    *tail = o;
    tail = &o->gcnext;
    nfree++;
  }
  *tail = NULL;
  pg->free = head;
  if (nfree >= pg->nslots / 4 && nfree > 0 && !pg->in_avail) {
    pg->in_avail = 1;
    pg->avail_next = S->avail[pg->cls];
    S->avail[pg->cls] = pg;
  }
}

/* Sweep a list of large objects; survivors move to `old` when promoted. */
static void sweep_list(jt_State *S, jt_Obj **list, int mode, jt_Obj **old) {
  jt_Obj **link = list;
  while (*link) {
    jt_Obj *o = *link;
    if ((o->gcflags & JT_GC_MARK) && mode != SWEEP_ALL) {
      o->gcflags &= (uint8_t)~JT_GC_MARK;
      if (old) {
        *link = o->gcnext;
        o->gcflags |= JT_GC_OLD;
        o->gcnext = *old;
        *old = o;
      } else {
        link = &o->gcnext;
      }
    } else {
      *link = o->gcnext;
      free_object(S, o);
    }
  }
}

static void sweep(jt_State *S, int mode, bool promote) {
  /* the slots left on the free lists belong to young pages: swept below */
  for (int i = 0; i < JT_POOL_CLASSES; i++) S->freelist[i] = NULL;
  if (mode == SWEEP_YOUNG) {
    for (jt_Page *pg = S->young_pages; pg; pg = pg->young_next) sweep_page(S, pg, mode, promote);
  } else {
    for (int i = 0; i < JT_POOL_CLASSES; i++) S->avail[i] = NULL;
    for (jt_Page *pg = S->pages; pg; pg = pg->next) {
      pg->in_avail = 0;
      pg->avail_next = NULL;
      sweep_page(S, pg, mode, promote);
    }
    sweep_list(S, &S->objects, mode, NULL);
  }
  sweep_list(S, &S->young_objects, mode, promote ? &S->objects : NULL);
  if (promote) {
    jt_Page *pg = S->young_pages;
    while (pg) {
      jt_Page *next = pg->young_next;
      pg->young = 0;
      pg->young_next = NULL;
      pg = next;
    }
    S->young_pages = NULL;
  }
}

/* One collection: of the young generation only (`young`) or of everything;
** `promote` only at a safepoint. */
static void collect(jt_State *S, bool young, bool promote) {
  if (S->gc_inhibit) return;
  S->gc_inhibit++;
  S->gc_skip = young ? (JT_GC_MARK | JT_GC_OLD) : JT_GC_MARK;
  mark_roots(S);
  if (young) mark_remembered(S);
  while (S->ngray) trace(S, S->gray[--S->ngray]);
  /* a young collection without promotion keeps every record: old objects
  ** may still point to the young objects that stay young */
  if (promote || !young) forget_remembered(S, promote);
  sweep(S, young ? SWEEP_YOUNG : SWEEP_FULL, promote);
  S->gc_skip = JT_GC_MARK;
  S->bytes_since_gc = 0;
  S->gc_threshold = S->bytes_live > GC_MIN_THRESHOLD ? S->bytes_live : GC_MIN_THRESHOLD;
  if (!young) S->live_after_full = S->bytes_live;
  S->gc_count++;
  S->gc_inhibit--;
}

void jt_gc_collect(jt_State *S) { collect(S, false, false); }

void jt_gc_safepoint(jt_State *S, bool full) {
  if (S->gc_inhibit) return;
  if (!full && !S->gc_stress) {
    if (S->bytes_since_gc < GC_NURSERY) return;
    /* the old generation: what was live after the last collection */
    size_t old = S->bytes_live > S->bytes_since_gc ? S->bytes_live - S->bytes_since_gc : 0;
    size_t growth = S->live_after_full > GC_MIN_THRESHOLD ? S->live_after_full : GC_MIN_THRESHOLD;
    full = old > S->live_after_full + growth;
  }
  collect(S, !full, true);
}

void jt_gc_each_object(jt_State *S, void (*fn)(jt_State *S, jt_Obj *o, void *ud), void *ud) {
  for (jt_Page *pg = S->pages; pg; pg = pg->next) {
    size_t osize = pool_sizes[pg->cls];
    char *base = (char *)pg->data;
    for (uint32_t i = 0; i < pg->nslots; i++) {
      jt_Obj *o = (jt_Obj *)(base + i * osize);
      if (o->type != 0) fn(S, o, ud);
    }
  }
  for (jt_Obj *o = S->objects; o; o = o->gcnext) fn(S, o, ud);
  for (jt_Obj *o = S->young_objects; o; o = o->gcnext) fn(S, o, ud);
}

void jt_gc_free_all(jt_State *S) {
  sweep_list(S, &S->objects, SWEEP_ALL, NULL);
  sweep_list(S, &S->young_objects, SWEEP_ALL, NULL);
  /* the pages go with their slabs: only what their objects own is freed */
  for (jt_Page *pg = S->pages; pg; pg = pg->next) {
    size_t osize = pool_sizes[pg->cls];
    char *base = (char *)pg->data;
    for (uint32_t i = 0; i < pg->nslots; i++) {
      jt_Obj *o = (jt_Obj *)(base + i * osize);
      if (owns_memory(o->type)) release_contents(S, o);
    }
  }
  while (S->slabs) {
    jt_Slab *next = S->slabs->next;
    slab_unwatch(S->slabs->mem, SLAB_BYTES);
    munmap(S->slabs->mem, SLAB_BYTES);
    free(S->slabs);
    S->slabs = next;
  }
  S->pages = S->young_pages = NULL;
  for (int i = 0; i < JT_POOL_CLASSES; i++) S->avail[i] = NULL, S->freelist[i] = NULL;
  free(S->gray);
  S->gray = NULL;
  S->ngray = S->graycap = 0;
  free(S->remembered);
  S->remembered = NULL;
  S->nremembered = S->remcap = 0;
  free(S->slotlog);
  S->slotlog = NULL;
  S->nslotlog = S->slotlogcap = 0;
}
