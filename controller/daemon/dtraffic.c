/*
** dtraffic.c — the traffic sample of automatic repair (docs/repair.md,
** "traffic"): for the functions the repair policy selects, a bounded
** sample of the successful application calls, a reservoir per argument
** signature (store.h, store_traffic_*), to replay against a candidate
** repair.
**
** Which function a call calls, and the classes of its arguments, only the
** worker knows: the kernel asks it per call ("note" in the call's frame)
** when the call's head may name a selected function — read from the
** source, conservatively, since a symbol's package is the world's to say
** (a name inherited, a nickname) — and the worker's outcome then carries
** "noted": {function, signature} (its evaluation unchanged: libjiti's
** jiti_form_eval_noting).  The kernel trusts the note no more than
** necessary: dvouch.c bounds it and refuses one it did not ask for, and
** the policy is matched here again, on the name the worker gave.  A call
** whose head no rule can select costs nothing more than that reading.
**
** A sample is the call's exact source and its printed result (the
** reply's value, or (VALUES ...) of its values) with the result's SHA-256;
** a call whose source or result is longer than STORE_TRAFFIC_TEXT_MAX, or
** whose result does not read back (it prints an object as #<...>), is not
** recorded.  Calls are written with the store writer's routine writes: a
** call that wrote a revision with its group (dgroup.c: after the group's
** revisions, in the writer's same journal epoch, synced by the group's
** sync), any other with the next group or timed write of events
** (devents.c), at most TRAFFIC_DELAY after it; never a sync of their own.
** The reservoir's random values come from a generator whose state the
** daemon holds, started alike in every kernel.
*/
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "daemon.h"

#define TRAFFIC_DELAY 0.1
#define TRAFFIC_WAITING_MAX 4096   /* calls waiting for a write (while writes fail): more are dropped */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* splitmix64 */
static uint64_t next_rng(Traffic *t) {
  uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ------------------------------------------------------------- asking */

static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int delimiter(char c) { return !c || blank(c) || strchr("()\"';`,", c); }

/* The head of the call src is, as written, into tok: 1; 0 when src is no
** call of a symbol (an atom, a lambda form); -1 when a quick reading
** cannot tell (a comment or a reader macro first, a long name). */
static int head_of(const char *src, char *tok, size_t n) {
  const char *p = src;
  while (blank(*p)) p++;
  if (*p == ';' || *p == '#') return -1;
  if (*p != '(') return 0;
  for (p++; blank(*p); p++) {}
  if (*p == ';' || *p == '#') return -1;
  if (delimiter(*p)) return 0;
  size_t k = 0;
  int bars = 0;
  while (*p && (bars || !delimiter(*p))) {
    if (k + 3 >= n) return -1;
    if (*p == '|') bars = !bars;
    else if (*p == '\\' && p[1]) tok[k++] = *p++;
    tok[k++] = *p++;
  }
  tok[k] = 0;
  return 1;
}

/* The part of a name (as repairpol_selector writes it) after its package. */
static const char *name_part(const char *n) {
  const char *p = strstr(n, "::");
  return p ? p + 2 : n;
}

/* Whether rule r may select the function a call whose head reads as tok
** (normalised) calls.  The head's package is the world's to say, so only
** the names are compared: a package rule, a prefix without a package
** (FOO*, which may be a package's name's), or names with escapes may
** select any. */
static int may_select(const store_repair_rule *r, const char *tok) {
  const char *sel = r->selector;
  size_t n = strlen(sel);
  if (!n || strpbrk(sel, "|\\") || strpbrk(tok, "|\\")) return 1;
  if (sel[n - 1] == '*') {
    const char *pk = strstr(sel, "::");
    if (!pk) return 1;
    return !strncmp(name_part(tok), pk + 2, (size_t)(sel + n - 1 - (pk + 2)));
  }
  if (sel[n - 1] == ':') return 1;   /* PKG: */
  return !strcmp(name_part(sel), name_part(tok));
}

int dtraffic_asks(Daemon *D, proto_Op op, json_t *req) {
  if (op != PROTO_CALL || dincident_policy(D) || !D->nrepair_rules || request_pausable(op, req)) return 0;
  /* any call that fails may open an incident (the function that fails may
  ** be one it calls): what it reads is evidence; where a rule pauses, a
  ** copy of the world at its failure may verify the repair (dshadow.c) */
  int asks = REQUEST_NOTE_READS | dshadow_park_asks(D);
  /* a call read in a package of its own would not replay from its source
  ** alone; a listener's, a program, is not plain */
  if (json_object_get(req, "package") || json_is_true(json_object_get(req, "listening")) ||
      json_is_true(json_object_get(req, "program")))
    return asks;
  const char *src = request_source(req);
  char tok[STORE_NAME_MAX + 8], name[STORE_NAME_MAX + 8], err[300];
  int h = head_of(src, tok, sizeof tok);
  if (!h || strlen(src) > STORE_TRAFFIC_TEXT_MAX) return asks;
  if (h < 0 || repairpol_selector(tok, name, sizeof name, err, sizeof err)) return asks | REQUEST_NOTE_CALL;   /* cannot tell */
  for (size_t i = 0; i < D->nrepair_rules; i++)
    if (may_select(&D->repair_rules[i], name)) return asks | REQUEST_NOTE_CALL;
  return asks;
}

/* ------------------------------------------------------------ offering */

/* Whether a printed result reads back: no #< outside strings and |names|. */
static int readable(const char *s) {
  int str = 0, bar = 0;
  for (; *s; s++) {
    if (*s == '\\' && s[1]) {
      s++;
    } else if (str) {
      str = *s != '"';
    } else if (bar) {
      bar = *s != '|';
    } else if (*s == '"') {
      str = 1;
    } else if (*s == '|') {
      bar = 1;
    } else if (*s == '#' && s[1] == '<') {
      return 0;
    }
  }
  return 1;
}

/* The printed result: the value, or (VALUES v...) for other than one;
** NULL when longer than the sample keeps (or out of memory). */
static char *result_of(const DOutcome *o) {
  if (!json_is_array(o->values)) {
    const char *v = json_string_value(o->value);
    return v && strlen(v) <= STORE_TRAFFIC_TEXT_MAX ? strdup(v) : NULL;
  }
  size_t n = 8, i;   /* "(VALUES" ")" */
  json_t *v;
  json_array_foreach(o->values, i, v) {
    if (!json_is_string(v)) return NULL;
    n += 1 + json_string_length(v);
  }
  char *r = n <= STORE_TRAFFIC_TEXT_MAX ? malloc(n + 1) : NULL, *p = r;
  if (!r) return NULL;
  memcpy(p, "(VALUES", 7), p += 7;
  json_array_foreach(o->values, i, v) {
    *p++ = ' ';
    memcpy(p, json_string_value(v), json_string_length(v)), p += json_string_length(v);
  }
  *p++ = ')';
  *p = 0;
  return r;
}

void dtraffic_call_free(TrafficCall *c) {
  if (!c) return;
  free(c->function);
  free(c->signature);
  free(c->request);
  free(c->result);
  free(c);
}

TrafficCall *dtraffic_offer(Daemon *D, const Txn *t, const DOutcome *o) {
  json_t *note = o->accepted && t->active && (t->noting & REQUEST_NOTE_CALL) && !t->pause_max ? json_object_get(o->m, "noted") : NULL;
  if (!note) return NULL;
  const char *fn = json_string_value(json_object_get(note, "function"));
  const char *sig = json_string_value(json_object_get(note, "signature"));
  /* the policy's word, not the worker's (its note is bounded: dvouch.c) */
  if (!fn || !sig || dincident_policy(D) || store_repair_pick(D->repair_rules, D->nrepair_rules, fn) < 0) return NULL;
  D->traffic.offered++;
  char *res = result_of(o);
  if (!res || !readable(res) || !t->source || strlen(t->source) > STORE_TRAFFIC_TEXT_MAX) {
    free(res);
    D->traffic.skipped++;
    return NULL;
  }
  TrafficCall *c = calloc(1, sizeof *c);
  if (c) *c = (TrafficCall){strdup(fn), strdup(sig), strdup(t->source), res, now_ms(), next_rng(&D->traffic)};
  if (!c || !c->function || !c->signature || !c->request) {
    if (c) c->result = res;
    else free(res);
    dtraffic_call_free(c);
    D->traffic.dropped++;
    return NULL;
  }
  return c;
}

void dtraffic_add(Daemon *D, TrafficCall *c) {
  Traffic *t = &D->traffic;
  if (!c) return;
  if (t->n >= TRAFFIC_WAITING_MAX) {
    dtraffic_call_free(c);
    t->dropped++;
    return;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    TrafficCall **v = realloc(t->v, cap * sizeof *v);
    if (!v) {
      dtraffic_call_free(c);
      t->dropped++;
      return;
    }
    t->v = v;
    t->cap = cap;
  }
  if (!t->n) t->first = daemon_now();
  t->v[t->n++] = c;
}

/* ------------------------------------------------------------- writing */

/* The policy still selects c's function (it may have changed since the
** call: a function disabled is forgotten, and nothing of it written). */
static int selected(Daemon *D, const TrafficCall *c) {
  return !dincident_policy(D) && store_repair_pick(D->repair_rules, D->nrepair_rules, c->function) >= 0;
}

void dtraffic_push(Daemon *D, DTraffic *t, TrafficCall *c) {
  if (!c) return;
  if (!selected(D, c)) {
    dtraffic_call_free(c);
    return;
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    TrafficCall **v = realloc(t->v, cap * sizeof *v);
    if (!v) {
      dtraffic_call_free(c);
      D->traffic.dropped++;
      return;
    }
    t->v = v;
    t->cap = cap;
  }
  t->v[t->n++] = c;
}

void dtraffic_take(Daemon *D, DTraffic *t) {
  Traffic *p = &D->traffic;
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < p->n; i++) dtraffic_push(D, t, p->v[i]);
  p->n = 0;
  p->first = 0;
  t->waiting = t->n;
}

int dtraffic_write(store_env *s, DTraffic *t, unsigned flags) {
  if (!t->n) return t->rc = STORE_OK;
  store_traffic_offer *v = malloc(t->n * sizeof *v);
  int *out = malloc(t->n * sizeof *out);
  if (!v || !out) {
    free(v);
    free(out);
    snprintf(t->err, sizeof t->err, "out of memory");
    return t->rc = STORE_ENOMEM;
  }
  for (size_t i = 0; i < t->n; i++) {
    TrafficCall *c = t->v[i];
    v[i] = (store_traffic_offer){c->function, c->signature, c->request, c->result, {0}, c->time_ms, c->rng};
  }
  /* the results' digests by the store, for the calls it keeps only */
  int rc = store_traffic_record_many(s, v, t->n, flags | STORE_TRAFFIC_HASH_RESULT, out);
  if (rc == STORE_OK)
    for (size_t i = 0; i < t->n; i++) t->kept += out[i] == STORE_TRAFFIC_KEPT || out[i] == STORE_TRAFFIC_REPLACED;
  else
    snprintf(t->err, sizeof t->err, "%s", store_errmsg(s));
  free(v);
  free(out);
  return t->rc = rc;
}

void dtraffic_done(Daemon *D, DTraffic *t, int written) {
  if (!written && t->waiting) {   /* those that were waiting wait again */
    for (size_t i = 0; i < t->waiting; i++) dtraffic_add(D, t->v[i]);
    memmove(t->v, t->v + t->waiting, (t->n - t->waiting) * sizeof *t->v);
    t->n -= t->waiting;
  }
  if (written && t->n && t->rc != STORE_OK)
    dlog(D, "could not record %zu call%s in the traffic sample: %s", t->n, t->n == 1 ? "" : "s", t->err);
  if (written && t->rc == STORE_OK) D->traffic.kept += t->kept;
  else D->traffic.dropped += t->n;
  for (size_t i = 0; i < t->n; i++) dtraffic_call_free(t->v[i]);
  free(t->v);
  memset(t, 0, sizeof *t);
}

double dtraffic_due(Daemon *D) {
  if (!D->traffic.n) return -1;
  double d = D->traffic.first + TRAFFIC_DELAY - daemon_now();
  return d > 0 ? d : 0;
}

void dtraffic_policy_changed(Daemon *D) {
  Traffic *t = &D->traffic;
  size_t k = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (selected(D, t->v[i])) t->v[k++] = t->v[i];
    else dtraffic_call_free(t->v[i]);
  }
  t->n = k;
  if (!k) t->first = 0;
}

void dtraffic_free(Daemon *D) {
  Traffic *t = &D->traffic;
  for (size_t i = 0; i < t->n; i++) dtraffic_call_free(t->v[i]);
  free(t->v);
  memset(t, 0, sizeof *t);
}

json_t *dtraffic_json(Daemon *D) {
  Traffic *t = &D->traffic;
  return json_pack("{s:I, s:I, s:I, s:I}", "offered", (json_int_t)t->offered, "kept", (json_int_t)t->kept, "skipped",
                   (json_int_t)t->skipped, "waiting", (json_int_t)t->n);
}
