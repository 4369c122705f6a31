/*
** jt_grow.h — growing an array by doubling, with the overflow checks
** written once.  For C-side arrays (malloc'd: the checkpoint's records, the
** collector's work lists, the bindings...) jt_grow reallocates; for the
** buffers of heap objects (jt_realloc, which may collect) jt_grow_cap only
** says how large the next one is.
*/
#ifndef jt_grow_h
#define jt_grow_h

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity that holds `need` elements of `size` bytes: `cap` (or
** `first` when cap is 0) doubled until it does.  0 when the bytes would
** not fit in a size_t. */
static inline size_t jt_grow_cap(size_t cap, size_t need, size_t size, size_t first) {
  size_t n = cap ? cap : (first ? first : 1);
  while (n < need) {
    if (n > SIZE_MAX / 2) return 0;
    n *= 2;
  }
  if (size && n > SIZE_MAX / size) return 0;
  return n;
}

/* Reallocate p, an array of *cap elements of `size` bytes, to hold at
** least `need` (doubling from `first`): the array, *cap updated, the
** elements past the old capacity uninitialised.  NULL when out of memory
** or too large; then p and *cap are unchanged. */
static inline void *jt_grow(void *p, size_t *cap, size_t need, size_t size, size_t first) {
  if (need <= *cap) return p;
  size_t n = jt_grow_cap(*cap, need, size, first);
  void *q = n ? realloc(p, n * size) : NULL;
  if (q) *cap = n;
  return q;
}

#endif
