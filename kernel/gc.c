/*
** gc.c — allocator and precise mark-and-sweep collector.
**
** Each object is its own malloc block, linked into S->objects.  That keeps
** the collector simple and lets AddressSanitizer see every freed object, so
** the GC-stress mode (a collection at every allocation) turns a missing root
** into an immediate use-after-free report.
**
** Marking uses an explicit gray stack, never C recursion, so a million-long
** list or a deep tree cannot overflow the C stack.
*/
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_eval.h"

#define GC_MIN_THRESHOLD ((size_t)8 << 20)

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

jt_Obj *jt_alloc(jt_State *S, int t, size_t size) {
  heap_limit_check(S, size);
  maybe_collect(S, size);
  jt_Obj *o = calloc(1, size);
  if (!o) out_of_memory(S);
  o->type = (uint8_t)t;
  o->gcnext = S->objects;
  S->objects = o;
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

void jt_stack_overflow(jt_State *S) {
  jt_limit_exceeded(S, JT_LIMIT_DEPTH);
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

static void free_object(jt_State *S, jt_Obj *o) {
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
  free(o);
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
  S->bytes_since_gc = 0;
  S->gc_threshold = S->bytes_live > GC_MIN_THRESHOLD ? S->bytes_live : GC_MIN_THRESHOLD;
  S->gc_count++;
  S->gc_inhibit--;
}

void jt_gc_free_all(jt_State *S) {
  jt_Obj *o = S->objects;
  while (o) {
    jt_Obj *next = o->gcnext;
    free_object(S, o);
    o = next;
  }
  S->objects = NULL;
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
