/* ffi_probe.c — a small C library for the foreign-function tests: one
** function per foreign type, a pointer round trip, and faults on request
** (the worker running it must die alone).  Built a second time with
** PROBE_LEAN, without probe_add: the library a store's declaration finds
** lacking its symbol when it is recovered. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef PROBE_LEAN
int probe_add(int a, int b) { return a + b; }
#endif
long probe_long(long a) { return a * 2; }
int64_t probe_i64(int64_t a) { return a - 1; }
uint64_t probe_u64(uint64_t a) { return a + 1; }
size_t probe_size(const char *s) { return s ? strlen(s) : 0; }
double probe_scale(double x, double k) { return x * k; }
float probe_half(float x) { return x / 2; }
int probe_not(int b) { return !b; }
const char *probe_echo(const char *s) { return s; }
const char *probe_null(void) { return NULL; }
const char *probe_bad_utf8(void) { return "a\xff\xfe" "b"; }

/* identities, for the limits of each type */
int probe_id_int(int a) { return a; }
long probe_id_long(long a) { return a; }
int64_t probe_id_i64(int64_t a) { return a; }
uint64_t probe_id_u64(uint64_t a) { return a; }
size_t probe_id_size(size_t a) { return a; }
double probe_id_double(double a) { return a; }
float probe_id_float(float a) { return a; }
int probe_id_bool(int b) { return b; }

static int counter;
void probe_bump(void) { counter++; }
int probe_count(void) { return counter; }

struct box { int tag; int value; };
static struct box boxes[64];   /* static: the tests leave no memory behind */
static unsigned nboxes;
void *probe_box(int v) {
  struct box *b = &boxes[nboxes++ % 64];
  b->tag = 0x626f78;
  b->value = v;
  return b;
}
int probe_unbox(void *p) { return p ? ((struct box *)p)->value : -1; }

/* 1: abort(); 2: a write through a null pointer */
int probe_fault(int how) {
  if (how == 1) abort();
  if (how == 2) { volatile int *p = NULL; *p = 1; }
  return how;
}
