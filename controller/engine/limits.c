/*
** limits.c — the one table of transaction limits (engine.h): the defaults
** every transaction starts from, offline or in the kernel, for the form,
** the invariants and the recovery checks alike; the options that change
** them; and their JSON form in requests and frames.
*/
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "engine.h"

/* The defaults LIMITS_HELP and LIMITS_PAUSE_HELP name. */
_Static_assert(JITI_LIMITS_FUEL == 10000000 && JITI_LIMITS_DEPTH == 10000 && JITI_LIMITS_HEAP == (size_t)256 << 20 &&
                 JITI_LIMITS_OUTPUT == (size_t)64 << 10 && (int)JITI_LIMITS_PAUSE_TIMEOUT == 120,
               "the --help texts name the defaults of jiti_limits.h");

const char LIMITS_HELP[] =
  "  --fuel N          evaluation steps per transaction (default 10000000; 0 = unlimited)\n"
  "  --depth N         maximum call depth (default 10000)\n"
  "  --heap BYTES      maximum live heap bytes (default 256M; suffixes K, M, G; 0 = unlimited)\n"
  "  --output N        maximum characters printed (default 64K; 0 = unlimited)\n";

const char LIMITS_PAUSE_HELP[] =
  "  --pause-timeout SECONDS  abort a pause nobody answers after this long (default 120)\n";

void limits_default(limits_Table *L) {
  L->eval.fuel = JITI_LIMITS_FUEL;
  L->eval.depth = JITI_LIMITS_DEPTH;
  L->eval.heap = JITI_LIMITS_HEAP;
  L->eval.output = JITI_LIMITS_OUTPUT;
  L->pause_timeout = JITI_LIMITS_PAUSE_TIMEOUT;
  L->given = 0;
}

/* The names of the four evaluation limits, in jiti_Limits order. */
static const char *const names[] = {"fuel", "depth", "heap", "output"};

static uint64_t get(const jiti_Limits *l, int i) {
  return i == 0 ? l->fuel : i == 1 ? l->depth : i == 2 ? l->heap : l->output;
}

static void set(jiti_Limits *l, int i, uint64_t v) {
  if (i == 0) l->fuel = v;
  else if (i == 1) l->depth = (uint32_t)(v > JITI_LIMITS_DEPTH_MAX ? JITI_LIMITS_DEPTH_MAX : v);
  else if (i == 2) l->heap = (size_t)v;
  else l->output = (size_t)v;
}

int limits_option(int argc, char **argv, int *i, limits_Table *L, int pause, char *err, size_t errlen) {
  const char *a = argv[*i];
  if (strncmp(a, "--", 2)) return 0;
  int which = -1;
  for (int k = 0; k < 4; k++)
    if (!strcmp(a + 2, names[k])) which = k;
  int pt = pause && !strcmp(a, "--pause-timeout");
  if (which < 0 && !pt) return 0;
  uint64_t v;
  const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (pt) {
    if (!val || !opts_count(val, &v) || v == 0 || v > JITI_LIMITS_PAUSE_MAX) {
      snprintf(err, errlen, "--pause-timeout needs a number of seconds from 1 to %d", JITI_LIMITS_PAUSE_MAX);
      return -1;
    }
    L->pause_timeout = (double)v;
    L->given |= 1u << 4;
  } else {
    int size = which == 2 || which == 3;
    if (!val || !(size ? opts_size(val, &v) : opts_count(val, &v))) {
      snprintf(err, errlen, "%s needs a non-negative number%s", a, size ? " (suffixes K, M, G)" : "");
      return -1;
    }
    set(&L->eval, which, v);
    L->given |= 1u << which;
  }
  ++*i;
  return 1;
}

json_t *limits_json(const jiti_Limits *l) {
  json_t *o = json_object();
  for (int k = 0; k < 4; k++) json_object_set_new(o, names[k], json_integer((json_int_t)get(l, k)));
  return o;
}

json_t *limits_given_json(const limits_Table *L) {
  if (!(L->given & 15)) return NULL;
  json_t *o = json_object();
  for (int k = 0; k < 4; k++)
    if (L->given & (1u << k)) json_object_set_new(o, names[k], json_integer((json_int_t)get(&L->eval, k)));
  return o;
}

/* a within b, 0 meaning unlimited */
static int within(uint64_t a, uint64_t b) { return b == 0 || (a != 0 && a <= b); }

int limits_from_json(json_t *o, const jiti_Limits *base, int cap, jiti_Limits *out, char *err, size_t n) {
  *out = *base;
  if (!o) return 0;
  if (!json_is_object(o)) {
    snprintf(err, n, "\"limits\" must be an object {fuel?, depth?, heap?, output?}");
    return -1;
  }
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    int which = -1;
    for (int k = 0; k < 4; k++)
      if (!strcmp(key, names[k])) which = k;
    if (which < 0) {
      snprintf(err, n, "unknown limit '%.40s' (fuel, depth, heap, output)", key);
      return -1;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
      snprintf(err, n, "the limit %s must be a non-negative integer (0 = unlimited)", key);
      return -1;
    }
    uint64_t x = (uint64_t)json_integer_value(v);
    if (cap && !within(x, get(base, which))) {
      snprintf(err, n,
               "the limit %s %llu is above the kernel's %llu; only the operator's requests may raise "
               "it (or start the kernel with --%s)",
               key, (unsigned long long)x, (unsigned long long)get(base, which), key);
      return -1;
    }
    set(out, which, x);
  }
  return 0;
}
