/*
** vouch.c — the kernel trusts no frame (engine.h, docs/worker-frames.md
** "What the kernel checks").  The worker evaluates client code and may be
** compromised: a granted C library, or a bug, can make it write anything
** to its socket.  So every frame it sends is checked against what the
** kernel knows before anything of it is used: its members (names, types,
** lengths), its vocabulary (event, reason, status), its generation
** (exactly what the kernel's own count allows), and an outcome's changes —
** only the entry kinds its request may change (the table below), entry
** bytes that decode as the canonical encoding of their kind and name
** (libjiti's decoder, which evaluates nothing), hashes that match, lengths
** that add up to the blob.  A frame that breaks a rule is refused whole;
** the caller kills the worker (the daemon starts a fresh one from CURRENT).
**
** Each check names the rule it found broken (a constant the caller may
** tell a client) and what it saw (escaped, for the log only: never a
** worker's bytes raw).
*/
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"
#include "txn.h"
#include "wire.h"

/* ------------------------------------------------------------ the table */

#define K(k) (1u << JITI_ENTRY_##k)
/* every kind but the operator's invariants (a kind added later is ordinary
** unless this says otherwise) */
#define ORDINARY (((1u << JITI_ENTRY_KIND_COUNT) - 1) & ~K(INVARIANT))
_Static_assert(JITI_ENTRY_KIND_COUNT < 32, "a request's kinds fit an unsigned mask");

/* Which entry kinds the outcome of each request may change.  Invariants
** are the operator's alone, through invariant-add and invariant-remove,
** which change nothing else (the new invariant's source is read, and run
** only in a checkpoint that is restored).  A foreign declaration is
** what the worker's gate admits: one of a library the operator granted
** (checked entry by entry).  The grant itself is never the worker's: a
** revision's manifest records the kernel's.  A rollback publishes what
** the store holds for its target (store_publish_revert): its worker only
** checks that world, and reports no change.  Queries change nothing. */
static const unsigned may_change[PROTO_OP_COUNT] = {
  [PROTO_CALL] = ORDINARY,
  [PROTO_ACT] = ORDINARY,
  [PROTO_PREVIEW] = ORDINARY,
  [PROTO_APPLY] = ORDINARY,
  [PROTO_REPAIR] = ORDINARY,
  [PROTO_INVARIANT_ADD] = K(INVARIANT),
  [PROTO_INVARIANT_REMOVE] = K(INVARIANT),
};

unsigned vouch_may_change(proto_Op op) { return (unsigned)op < PROTO_OP_COUNT ? may_change[op] : 0; }

/* ------------------------------------------------------------ the rules */

const char VOUCH_SYNTAX[] = "frame-syntax";
const char VOUCH_SHAPE[] = "frame-shape";
const char VOUCH_EVENT[] = "event";
const char VOUCH_REASON[] = "reason";
const char VOUCH_STATUS[] = "status";
const char VOUCH_GENERATION[] = "generation";
const char VOUCH_REVISION[] = "revision";
const char VOUCH_PAUSE[] = "pause";
const char VOUCH_KIND[] = "entry-kind";
const char VOUCH_LENGTHS[] = "entry-lengths";
const char VOUCH_ENTRY[] = "entry-encoding";
const char VOUCH_HASH[] = "entry-hash";
const char VOUCH_GRANT[] = "foreign-grant";
const char VOUCH_INVARIANT[] = "invariant-op";
const char VOUCH_PROCESS[] = "process";
const char VOUCH_NOTE[] = "call-note";

void vouch_escape(const char *s, size_t n, char *buf, size_t len) {
  size_t i = 0, j = 0;
  if (!len) return;
  for (; s && i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int plain = c >= 0x20 && c < 0x7f && c != '\\';
    if (j + (plain ? 1 : 4) + 3 >= len) break;   /* room for "..." */
    if (plain) buf[j++] = (char)c;
    else j += (size_t)snprintf(buf + j, len - j, "\\x%02x", c);
  }
  if (s && i < n && j + 3 < len) {   /* cut: say so */
    memcpy(buf + j, "...", 3);
    j += 3;
  }
  buf[j] = 0;
}

static int fail(vouch_Fail *f, const char *rule, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(vouch_Fail *f, const char *rule, const char *fmt, ...) {
  f->rule = rule;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->detail, sizeof f->detail, fmt, ap);
  va_end(ap);
  return -1;
}

/* A string the worker sent, escaped and cut for the log. */
static const char *shown(json_t *v, char *buf, size_t len) {
  if (json_is_string(v)) vouch_escape(json_string_value(v), json_string_length(v), buf, len);
  else if (json_is_integer(v)) snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else snprintf(buf, len, "(%s)", !v ? "missing" : json_is_object(v) ? "an object" : json_is_array(v) ? "an array"
                                  : json_is_boolean(v) ? "a boolean" : json_is_null(v) ? "null" : "a number");
  return buf;
}

/* ------------------------------------------------------------ members */

/* A member of a frame's object: its name, its type ('s' string, 'i'
** integer, 'b' boolean, 'a' array, 'o' object, 'O' object or null, 'B'
** boolean or null, 'T' the boolean true, 'g' a generation: anything,
** checked by generation()), whether it must be there, and for a string its
** largest length in bytes (for an integer its largest value). */
typedef struct Member { const char *name; char type; int required; size_t max; } Member;

#define TEXT WIRE_JSON_MAX                  /* free text: bounded by the frame */
#define NAME_MAX_ ((size_t)VOUCH_NAME_MAX)
/* an entry kind's name (jiti_entry_kind_name: "method-combination" is
** the longest) */
#define KIND_MAX_ 24

static int type_ok(json_t *v, char t) {
  switch (t) {
    case 's': return json_is_string(v);
    case 'i': return json_is_integer(v) && json_integer_value(v) >= 0;
    case 'b': return json_is_boolean(v);
    case 'T': return json_is_true(v);
    case 'a': return json_is_array(v);
    case 'o': return json_is_object(v);
    case 'O': return json_is_object(v) || json_is_null(v);
    case 'B': return json_is_boolean(v) || json_is_null(v);
    case 'g': return 1;   /* a generation: generation() says what is wrong with it */
  }
  return 0;
}

/* o is an object with exactly the members the table allows, of their
** types and within their bounds.  where names o for the log. */
static int members(json_t *o, const Member *m, size_t n, const char *where, vouch_Fail *f) {
  if (!json_is_object(o)) return fail(f, VOUCH_SHAPE, "%s is not an object", where);
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    size_t i = 0;
    while (i < n && strcmp(m[i].name, key)) i++;
    char b[80];
    if (i == n) {
      vouch_escape(key, strlen(key), b, sizeof b);
      return fail(f, VOUCH_SHAPE, "%s has a member %s no frame has", where, b);
    }
    if (!type_ok(v, m[i].type)) return fail(f, VOUCH_SHAPE, "%s's %s is %s", where, key, shown(v, b, sizeof b));
    if (m[i].type == 's' && (json_string_length(v) > m[i].max || strlen(json_string_value(v)) != json_string_length(v)))
      return fail(f, VOUCH_SHAPE, "%s's %s is longer than %zu bytes or holds a NUL", where, key, m[i].max);
    if (m[i].type == 'i' && m[i].max && (uint64_t)json_integer_value(v) > m[i].max)
      return fail(f, VOUCH_SHAPE, "%s's %s is %" JSON_INTEGER_FORMAT ", more than %zu", where, key,
                  json_integer_value(v), m[i].max);
  }
  for (size_t i = 0; i < n; i++)
    if (m[i].required && !json_object_get(o, m[i].name))
      return fail(f, VOUCH_SHAPE, "%s has no %s", where, m[i].name);
  return 0;
}

#define MEMBERS(o, table, where, f) members(o, table, sizeof table / sizeof *table, where, f)

static int each(json_t *a, const Member *m, size_t n, const char *where, vouch_Fail *f) {
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v)
    if (members(v, m, n, where, f)) return -1;
  return 0;
}
#define EACH(a, table, where, f) each(a, table, sizeof table / sizeof *table, where, f)

/* Every element of a an array of strings (at most max bytes each). */
static int strings(json_t *a, size_t max, const char *where, vouch_Fail *f) {
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v)
    if (!json_is_string(v) || json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
      return fail(f, VOUCH_SHAPE, "%s[%zu] is not a string of at most %zu bytes", where, i, max);
  return 0;
}

static int status_ok(json_t *m) {
  const char *s = json_string_value(json_object_get(m, "status"));
  for (int st = TXN_ST_IDLE; s && st <= TXN_ST_FAULTED; st++)
    if (!strcmp(s, txn_status_name((txn_Status)st))) return 1;
  return 0;
}

static int status_is(json_t *m, txn_Status st) {
  const char *s = json_string_value(json_object_get(m, "status"));
  return s && !strcmp(s, txn_status_name(st));
}

/* The frame's generation is one the kernel's count allows: gen + k for a
** bit k of steps. */
static int generation(json_t *g, const vouch_Expect *x, const char *where, vouch_Fail *f) {
  char b[64];
  if (!json_is_integer(g) || json_integer_value(g) < 0 || (uint64_t)json_integer_value(g) > VOUCH_GENERATION_MAX)
    return fail(f, VOUCH_GENERATION, "%s's generation is %s%s", where, json_is_integer(g) ? "" : "not an integer: ",
                shown(g, b, sizeof b));
  uint64_t v = (uint64_t)json_integer_value(g);
  for (unsigned k = 0; k < 8; k++)
    if ((x->steps >> k & 1) && v == x->gen + k) return 0;
  char allowed[64] = "";
  for (unsigned k = 0, at = 0; k < 8 && at < sizeof allowed - 24; k++)
    if (x->steps >> k & 1)
      at += (unsigned)snprintf(allowed + at, sizeof allowed - at, "%s%" PRIu64, at ? " or " : "", x->gen + k);
  return fail(f, VOUCH_GENERATION, "%s's generation is %" PRIu64 ", the kernel expects %s", where, v, allowed);
}

/* ---------------------------------------------------------------- ready */

static const Member READY[] = {
  {"event", 's', 1, 16}, {"generation", 'g', 1, 0}, {"status", 's', 1, 32}, {"message", 's', 1, TEXT},
  {"foreign", 'o', 0, 0}};
static const Member FOREIGN[] = {{"granted", 'a', 1, 0}, {"unavailable", 'a', 1, 0}, {"failed", 'a', 1, 0}};
static const Member UNAVAILABLE[] = {
  {"name", 's', 1, NAME_MAX_}, {"library", 's', 1, STORE_FOREIGN_MAX}, {"symbol", 's', 1, NAME_MAX_},
  {"reason", 's', 1, TEXT}};
static const Member FAILED[] = {{"library", 's', 1, STORE_FOREIGN_MAX}, {"message", 's', 1, TEXT}};

static int granted(const grant_List *g, const char *lib) {
  for (size_t i = 0; g && lib && i < g->n; i++)
    if (!strcmp(g->lib[i], lib)) return 1;
  return 0;
}

/* Libraries the worker names as granted (opened, or failed to open) must be
** the operator's. */
static int libraries(json_t *a, const char *member, const grant_List *g, const char *where, vouch_Fail *f) {
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v) {
    json_t *lib = member ? json_object_get(v, member) : v;
    if (!granted(g, json_string_value(lib))) {
      char b[120];
      return fail(f, VOUCH_GRANT, "%s names the library %s, which is not granted", where, shown(lib, b, sizeof b));
    }
  }
  return 0;
}

int vouch_ready(json_t *m, uint64_t base, const grant_List *g, vouch_Fail *f) {
  if (MEMBERS(m, READY, "ready", f)) return -1;
  if (wire_event_of(m) != WIRE_READY) return fail(f, VOUCH_EVENT, "the frame is not ready");
  int faulted = status_is(m, TXN_ST_FAULTED);
  if (!faulted && !status_is(m, TXN_ST_IDLE)) return fail(f, VOUCH_STATUS, "a worker starts idle or faulted");
  /* txn_check_baseline moves the generation once when the world is faulted */
  vouch_Expect x = {.gen = base, .steps = faulted ? 2u : 1u};
  if (generation(json_object_get(m, "generation"), &x, "ready", f)) return -1;
  json_t *fo = json_object_get(m, "foreign");
  if (!fo) return 0;
  if (MEMBERS(fo, FOREIGN, "ready's foreign", f) || strings(json_object_get(fo, "granted"), STORE_FOREIGN_MAX,
                                                             "ready's foreign.granted", f) ||
      libraries(json_object_get(fo, "granted"), NULL, g, "ready's foreign.granted", f))
    return -1;
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(fo, "unavailable"), i, v)
    if (MEMBERS(v, UNAVAILABLE, "ready's foreign.unavailable[]", f)) return -1;
  json_array_foreach(json_object_get(fo, "failed"), i, v)
    if (MEMBERS(v, FAILED, "ready's foreign.failed[]", f)) return -1;
  return libraries(json_object_get(fo, "failed"), "library", g, "ready's foreign.failed", f);
}

/* --------------------------------------------------------------- paused */

static const Member PAUSED[] = {{"event", 's', 1, 16}, {"pause", 'o', 1, 0}};
static const Member PAUSE[] = {
  {"generation", 'g', 1, 0}, {"pause", 'i', 1, 1000000}, {"level", 'i', 1, 8}, {"condition_type", 's', 1, NAME_MAX_},
  {"report", 's', 1, TEXT}, {"backtrace", 's', 1, TEXT}, {"frames", 'a', 1, 0}, {"restarts", 'a', 1, 0},
  {"steps_used", 'i', 1, 1000000}, {"step_budget", 'i', 1, 1000000}, {"refusal", 's', 0, 32},
  {"error", 's', 0, TEXT}, {"last_value", 's', 0, TEXT}, {"output", 's', 0, TEXT}};
static const Member RESTART[] = {
  {"id", 's', 1, 32}, {"level", 'i', 1, 8}, {"name", 's', 1, NAME_MAX_}, {"report", 's', 1, TEXT},
  {"lambda_list", 's', 1, TEXT}};
/* a pause's frames, bounded as the kernel bounds them (jiti.h, JITI_FRAME_*) */
static const Member FRAME[] = {
  {"frame", 'i', 1, JITI_FRAME_MAX - 1}, {"function", 's', 1, JITI_FRAME_NAME_MAX}, {"args", 'a', 1, 0},
  {"locals", 'a', 1, 0}};
static const Member FRAME_LOCAL[] = {{"name", 's', 1, JITI_FRAME_NAME_MAX}, {"value", 's', 1, JITI_FRAME_VALUE_MAX}};

/* Every member of a pause's frames: numbered 0, 1, ... in order, at most
** JITI_FRAME_MAX of them, each text within its bound, all of them within
** the kernel's total for the pause. */
static int frames_ok(json_t *fs, const char *where, vouch_Fail *f) {
  if (json_array_size(fs) > JITI_FRAME_MAX) return fail(f, VOUCH_SHAPE, "%s: more than %d frames", where, JITI_FRAME_MAX);
  size_t i, k, total = 0;
  json_t *fr, *v;
  json_array_foreach(fs, i, fr) {
    if (members(fr, FRAME, sizeof FRAME / sizeof *FRAME, "a frame", f)) return -1;
    if ((size_t)json_integer_value(json_object_get(fr, "frame")) != i)
      return fail(f, VOUCH_SHAPE, "%s: frame %zu is numbered %" JSON_INTEGER_FORMAT, where, i,
                  json_integer_value(json_object_get(fr, "frame")));
    json_t *args = json_object_get(fr, "args"), *locals = json_object_get(fr, "locals");
    if (json_array_size(args) > JITI_FRAME_ARGS_MAX || json_array_size(locals) > JITI_FRAME_LOCALS_MAX)
      return fail(f, VOUCH_SHAPE, "%s: frame %zu lists more than %d arguments or %d locals", where, i,
                  JITI_FRAME_ARGS_MAX, JITI_FRAME_LOCALS_MAX);
    if (strings(args, JITI_FRAME_VALUE_MAX, "a frame's args", f)) return -1;
    json_array_foreach(args, k, v) total += json_string_length(v);
    json_array_foreach(locals, k, v) {
      if (members(v, FRAME_LOCAL, sizeof FRAME_LOCAL / sizeof *FRAME_LOCAL, "a frame's local", f)) return -1;
      total += json_string_length(json_object_get(v, "name")) + json_string_length(json_object_get(v, "value"));
    }
    total += json_string_length(json_object_get(fr, "function"));
  }
  /* the kernel stops adding arguments and locals near its total; names of
  ** the frames after that are on top of it */
  if (total > JITI_FRAME_TEXT_MAX + JITI_FRAME_MAX * JITI_FRAME_NAME_MAX)
    return fail(f, VOUCH_SHAPE, "%s: the frames' texts exceed %d bytes", where, JITI_FRAME_TEXT_MAX);
  return 0;
}

int vouch_paused(json_t *m, const vouch_Expect *x, vouch_Fail *f) {
  if (MEMBERS(m, PAUSED, "paused", f)) return -1;
  if (!x->pausable)
    return fail(f, VOUCH_PAUSE, "a %s cannot pause (only an act asks to)", proto_op_name(x->op));
  json_t *p = json_object_get(m, "pause");
  if (MEMBERS(p, PAUSE, "paused's pause", f) || generation(json_object_get(p, "generation"), x, "the pause", f) ||
      frames_ok(json_object_get(p, "frames"), "the pause", f))
    return -1;
  /* the same pause answers a command at it; a new one follows a resume or
  ** an error in a repair (the level above); leaving a level shows an
  ** earlier one again */
  uint64_t gen = (uint64_t)json_integer_value(json_object_get(p, "generation"));
  json_int_t no = json_integer_value(json_object_get(p, "pause"));
  json_int_t level = json_integer_value(json_object_get(p, "level"));
  if (gen == x->gen ? no != x->pause_no : no < 1 || no > x->pause_max + 1)
    return fail(f, VOUCH_PAUSE, "the pause is number %" JSON_INTEGER_FORMAT ", the kernel expects %s%d", no,
                gen == x->gen ? "" : "at most ", gen == x->gen ? x->pause_no : x->pause_max + 1);
  if (level < 1 || level > no) return fail(f, VOUCH_PAUSE, "the pause's level %" JSON_INTEGER_FORMAT " is out of range", level);
  if (json_integer_value(json_object_get(p, "steps_used")) > json_integer_value(json_object_get(p, "step_budget")))
    return fail(f, VOUCH_PAUSE, "more steps used than the budget");
  json_t *refusal = json_object_get(p, "refusal");
  if (refusal && txn_reason_parse(json_string_value(refusal)) < 0) {
    char b[64];
    return fail(f, VOUCH_REASON, "the pause's refusal %s is no reason", shown(refusal, b, sizeof b));
  }
  json_t *rs = json_object_get(p, "restarts"), *r;
  size_t i;
  if (json_array_size(rs) > 64) return fail(f, VOUCH_PAUSE, "more than 64 restarts");
  json_int_t cur = level;
  size_t k = 0;
  json_array_foreach(rs, i, r) {
    if (MEMBERS(r, RESTART, "a restart", f)) return -1;
    /* pause-scoped (txn.h): this level's "p<no>-0", "p<no>-1", ..., then
    ** each outer level's with its own pause's number, from 0 again */
    json_int_t rl = json_integer_value(json_object_get(r, "level"));
    if (rl < 1 || rl > cur) return fail(f, VOUCH_PAUSE, "restart %zu is of level %" JSON_INTEGER_FORMAT, i, rl);
    k = i && rl == cur ? k + 1 : 0;
    cur = rl;
    char id[40];
    const char *got = json_string_value(json_object_get(r, "id"));
    long pn = no;
    if (rl != level && (sscanf(got, "p%ld-", &pn) != 1 || pn < 1 || pn >= no))
      return fail(f, VOUCH_PAUSE, "restart %zu has no earlier pause's id", i);
    snprintf(id, sizeof id, "p%ld-%zu", pn, k);
    if (strcmp(got, id))
      return fail(f, VOUCH_PAUSE, "restart %zu of pause %" JSON_INTEGER_FORMAT " is not %s", i, no, id);
  }
  return 0;
}

/* -------------------------------------------------------------- outcome */

static const Member OUTCOME[] = {
  {"event", 's', 1, 16}, {"reason", 's', 1, 32}, {"generation", 'g', 1, 0}, {"status", 's', 1, 32},
  {"changes", 'a', 1, 0}, {"message", 's', 0, TEXT}, {"value", 's', 0, TEXT}, {"values", 'a', 0, 0},
  {"output", 's', 0, TEXT}, {"goals", 'a', 0, 0}, {"committed", 'T', 0, 0}, {"diagnosis", 'o', 0, 0},
  {"noted", 'o', 0, 0}, {"parked", 'i', 0, INT32_MAX}};
static const Member NOTED[] = {
  {"function", 's', 1, TXN_NOTE_NAME_MAX}, {"signature", 's', 1, TXN_NOTE_SIGNATURE_MAX}};
static const Member DIAGNOSIS[] = {
  {"condition_type", 's', 1, NAME_MAX_}, {"report", 's', 1, TEXT}, {"restarts", 'a', 1, 0},
  {"backtrace", 's', 1, TEXT}, {"frames", 'a', 0, 0}, {"reads", 'a', 0, 0}, {"reads_more", 'i', 0, 1000000}};
static const Member DIAGNOSIS_READ[] = {
  {"kind", 's', 1, 16}, {"name", 's', 1, JITI_FRAME_NAME_MAX}, {"object", 's', 0, JITI_FRAME_VALUE_MAX},
  {"value", 's', 1, JITI_FRAME_VALUE_MAX}};
static const Member DIAGNOSIS_RESTART[] = {
  {"name", 's', 1, NAME_MAX_}, {"report", 's', 1, TEXT}, {"lambda_list", 's', 1, TEXT}};
/* A diagnosis' reads (jiti_reads_describe): at most JITI_READS_MAX, each of
** a kind the kernel records, the instance named exactly for a slot. */
static int reads_ok(json_t *d, vouch_Fail *f) {
  json_t *rs = json_object_get(d, "reads"), *r;
  size_t i;
  if (json_array_size(rs) > JITI_READS_MAX)
    return fail(f, VOUCH_SHAPE, "the diagnosis lists more than %d reads", JITI_READS_MAX);
  json_array_foreach(rs, i, r) {
    if (MEMBERS(r, DIAGNOSIS_READ, "a diagnosis' read", f)) return -1;
    const char *kind = json_string_value(json_object_get(r, "kind"));
    int k = 0;
    while (k < JITI_READ_COUNT && strcmp(kind, jiti_read_kind_name((jiti_ReadKind)k))) k++;
    if (k == JITI_READ_COUNT) return fail(f, VOUCH_SHAPE, "a read of the unknown kind %.16s", kind);
    if (!json_object_get(r, "object") != (k != JITI_READ_SLOT))
      return fail(f, VOUCH_SHAPE, "a read of a %s %s its object", kind, k == JITI_READ_SLOT ? "without" : "with");
  }
  return 0;
}

static const Member CHANGE[] = {
  {"kind", 's', 1, KIND_MAX_}, {"name", 's', 1, NAME_MAX_}, {"removed", 'b', 1, 0}, {"len", 'i', 1, 0},
  {"hash", 's', 0, 64}};
static const Member GOAL[] = {{"source", 's', 1, TEXT}, {"pass", 'b', 1, 0}, {"message", 's', 1, TEXT}};

/* The reasons a request of x's kind can end with, beyond the vocabulary:
** stale only for a request that carried a generation, repair-failed and
** budget-exhausted only for a pausable one. */
static int reason_ok(txn_Reason r, const vouch_Expect *x) {
  switch (r) {
    case TXN_STALE: return x->with_gen;
    case TXN_REPAIR_FAILED: case TXN_BUDGET_EXHAUSTED: return x->pausable;
    default: return 1;
  }
}

int vouch_checker_open(vouch_Checker *c, char *err, size_t errlen) {
  if (c->S) return 0;
  c->S = jiti_open();
  if (!c->S) {
    snprintf(err, errlen, "cannot open a world to check entries in (out of memory)");
    return -1;
  }
  jiti_world_enable(c->S);
  return 0;
}

void vouch_checker_close(vouch_Checker *c) {
  if (c->S) jiti_close(c->S);
  c->S = NULL;
}

/* One changed entry: its kind allowed, its bytes its own.  inv: for an
** invariant operation, the name of the invariant it may change ("" when
** the operator's name names none); NULL otherwise. */
static int change(vouch_Checker *c, json_t *ch, size_t i, const unsigned char *bytes, size_t len,
                  const vouch_Expect *x, const char *inv, vouch_Fail *f) {
  char where[48], b[160];
  snprintf(where, sizeof where, "change %zu", i);
  const char *kind = json_string_value(json_object_get(ch, "kind"));
  const char *name = json_string_value(json_object_get(ch, "name"));
  json_t *hash = json_object_get(ch, "hash");
  int removed = json_is_true(json_object_get(ch, "removed"));
  int k = jiti_entry_kind_parse(kind);
  if (k < 0) return fail(f, VOUCH_KIND, "%s's kind %s is no entry kind", where, shown(json_object_get(ch, "kind"), b, sizeof b));
  if (!(vouch_may_change(x->op) >> k & 1)) {
    vouch_escape(name, strlen(name), b, sizeof b);
    return fail(f, VOUCH_KIND, "a %s may not change the %s %s", proto_op_name(x->op), kind, b);
  }
  if (!*name) return fail(f, VOUCH_SHAPE, "%s has an empty name", where);
  if (k == JITI_ENTRY_INVARIANT && inv && strcmp(name, inv)) {
    vouch_escape(name, strlen(name), b, sizeof b);
    return fail(f, VOUCH_INVARIANT, "the %s changes the invariant %s, not the one named", proto_op_name(x->op), b);
  }
  if (k == JITI_ENTRY_INVARIANT && removed != (x->op == PROTO_INVARIANT_REMOVE))
    return fail(f, VOUCH_INVARIANT, "an %s %s its invariant", proto_op_name(x->op), removed ? "removes" : "adds");
  if (removed) {
    if (len) return fail(f, VOUCH_LENGTHS, "%s is removed and has %zu bytes", where, len);
    if (hash && json_string_length(hash)) return fail(f, VOUCH_HASH, "%s is removed and has a hash", where);
    return 0;
  }
  if (hash) {   /* claimed: it must be the bytes' */
    char h[65];
    jiti_entry_hash((jiti_EntryKind)k, name, bytes, len, h);
    if (strcmp(h, json_string_value(hash)))
      return fail(f, VOUCH_HASH, "%s's hash %s is not its bytes' (%s)", where, shown(hash, b, 80), h);
  }
  char err[512], lib[STORE_FOREIGN_MAX + 1];
  if (vouch_checker_open(c, err, sizeof err)) return fail(f, VOUCH_ENTRY, "%s", err);
  if (jiti_entry_check(c->S, (jiti_EntryKind)k, name, bytes, len, lib, sizeof lib, err, sizeof err) != JITI_OK) {
    char e[300];
    vouch_escape(name, strlen(name), b, sizeof b);
    vouch_escape(err, strlen(err), e, sizeof e);
    return fail(f, VOUCH_ENTRY, "%s %s: %s", kind, b, e);
  }
  if (k == JITI_ENTRY_FOREIGN && !granted(c->grant, lib)) {
    vouch_escape(lib, strlen(lib), b, sizeof b);
    return fail(f, VOUCH_GRANT, "a foreign declaration of the library %s, which is not granted", b);
  }
  return 0;
}

/* An entry reported twice: a worker reports each change once. */
typedef struct Key { const char *kind, *name; } Key;

static int key_cmp(const void *a, const void *b) {
  const Key *x = a, *y = b;
  int c = strcmp(x->kind, y->kind);
  return c ? c : strcmp(x->name, y->name);
}

static int twice(json_t *changes, size_t n, vouch_Fail *f) {
  Key *k = malloc(n * sizeof *k);
  if (!k) return fail(f, VOUCH_SHAPE, "out of memory checking %zu changes", n);
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_array_get(changes, i);
    k[i] = (Key){json_string_value(json_object_get(c, "kind")), json_string_value(json_object_get(c, "name"))};
  }
  qsort(k, n, sizeof *k, key_cmp);
  int rc = 0;
  for (size_t i = 1; i < n && !rc; i++)
    if (!key_cmp(&k[i - 1], &k[i])) {
      char b[160];
      vouch_escape(k[i].name, strlen(k[i].name), b, sizeof b);
      rc = fail(f, VOUCH_SHAPE, "the %s %s is reported twice", k[i].kind, b);
    }
  free(k);
  return rc;
}

int vouch_outcome(vouch_Checker *c, json_t *m, const unsigned char *blob, size_t bloblen, const vouch_Expect *x,
                  vouch_Fail *f) {
  char b[80];
  if (MEMBERS(m, OUTCOME, "outcome", f)) return -1;
  int r = txn_reason_parse(json_string_value(json_object_get(m, "reason")));
  if (r < 0 || !reason_ok((txn_Reason)r, x))
    return fail(f, VOUCH_REASON, "a %s cannot end %s", proto_op_name(x->op), shown(json_object_get(m, "reason"), b, sizeof b));
  if (!status_ok(m)) return fail(f, VOUCH_STATUS, "the status %s is none", shown(json_object_get(m, "status"), b, sizeof b));
  int accepted = r == TXN_ACCEPTED, committed = json_is_true(json_object_get(m, "committed"));
  /* what the worker does with an outcome: an accepted attempt awaits its
  ** commit (a preview is restored at once, an unchanged one kept at once);
  ** anything else leaves no checkpoint of its own */
  int awaits = status_is(m, TXN_ST_AWAITING);
  if (committed && !accepted) return fail(f, VOUCH_STATUS, "a failed attempt reported as committed");
  if (accepted && x->op != PROTO_PREVIEW && !committed && !awaits)
    return fail(f, VOUCH_STATUS, "an accepted attempt that is not awaiting its commit");
  if (awaits && !x->stacked && !(accepted && !committed && x->op != PROTO_PREVIEW))
    return fail(f, VOUCH_STATUS, "awaiting-commit after an attempt that leaves nothing to commit");
  if (status_is(m, TXN_ST_PAUSED)) return fail(f, VOUCH_STATUS, "an outcome while paused");
  if (generation(json_object_get(m, "generation"), x, "the outcome", f)) return -1;
  json_t *v;
  size_t i;
  if ((v = json_object_get(m, "values")) && strings(v, TEXT, "the outcome's values", f)) return -1;
  json_array_foreach(json_object_get(m, "goals"), i, v)
    if (MEMBERS(v, GOAL, "a goal", f)) return -1;
  /* only a failure that could not pause says why, as a pause would have */
  if ((v = json_object_get(m, "diagnosis"))) {
    if (r != TXN_ERROR || x->pausable) return fail(f, VOUCH_STATUS, "a diagnosis of an outcome that is no unpaused error");
    if (MEMBERS(v, DIAGNOSIS, "the diagnosis", f)) return -1;
    if (json_array_size(json_object_get(v, "restarts")) > 64) return fail(f, VOUCH_LENGTHS, "more than 64 restarts");
    if (EACH(json_object_get(v, "restarts"), DIAGNOSIS_RESTART, "a diagnosis' restart", f)) return -1;
    if (json_object_get(v, "frames") && frames_ok(json_object_get(v, "frames"), "the diagnosis", f)) return -1;
    if (json_object_get(v, "reads") && !x->reads) return fail(f, VOUCH_NOTE, "reads of a call the kernel did not ask to record");
    if (reads_ok(v, f)) return -1;
  }
  /* a copy parked at the failure: only when the kernel asked, only of an
  ** unhandled error (the kernel then checks the pid is the worker's child) */
  if ((v = json_object_get(m, "parked")) &&
      (!x->park || r != TXN_ERROR || !json_object_get(m, "diagnosis") || json_integer_value(v) < 1))
    return fail(f, VOUCH_PROCESS, "a shadow parked at %s", !x->park ? "a call the kernel did not ask to park"
                                                             : "no unhandled error");
  /* a call's note (its function and argument classes, for the traffic
  ** sample): only when the kernel asked, only of a call that succeeded */
  if ((v = json_object_get(m, "noted"))) {
    if (!x->noting || x->op != PROTO_CALL || !accepted)
      return fail(f, VOUCH_NOTE, "a note of a call%s", !x->noting ? " the kernel did not ask to note" : " that failed");
    if (MEMBERS(v, NOTED, "the note", f)) return -1;
    if (!json_string_length(json_object_get(v, "function"))) return fail(f, VOUCH_SHAPE, "the note names no function");
  }
  json_t *changes = json_object_get(m, "changes");
  size_t n = json_array_size(changes), at = 0;
  if (n && (!accepted || committed))
    return fail(f, VOUCH_LENGTHS, "%zu changes reported by an outcome that keeps none", n);
  char inv[VOUCH_NAME_MAX + 1] = "";
  int invariant_op = x->op == PROTO_INVARIANT_ADD || x->op == PROTO_INVARIANT_REMOVE;
  if (invariant_op) {
    /* exactly the invariant the operator named */
    char err[300];
    if (vouch_checker_open(c, err, sizeof err)) return fail(f, VOUCH_ENTRY, "%s", err);
    if (!x->invariant ||
        jiti_entry_symbol_name(c->S, x->invariant, inv, sizeof inv, err, sizeof err) != JITI_OK)
      inv[0] = 0;   /* the worker refuses such a name: it can change no invariant */
    size_t ninv = 0;
    json_array_foreach(changes, i, v) ninv += !strcmp(json_string_value(json_object_get(v, "kind")) ?
                                                      json_string_value(json_object_get(v, "kind")) : "",
                                                      jiti_entry_kind_name(JITI_ENTRY_INVARIANT));
    if (accepted && !committed && ninv != 1)
      return fail(f, VOUCH_INVARIANT, "an accepted %s changes %zu invariants, not one", proto_op_name(x->op), ninv);
  }
  json_t *ch;
  json_array_foreach(changes, i, ch) {   /* the shape and the lengths first: nothing is decoded before */
    char where[48];
    snprintf(where, sizeof where, "change %zu", i);
    if (members(ch, CHANGE, sizeof CHANGE / sizeof *CHANGE, where, f)) return -1;
    uint64_t len = (uint64_t)json_integer_value(json_object_get(ch, "len"));
    if (len > bloblen - at) return fail(f, VOUCH_LENGTHS, "%s's %" PRIu64 " bytes run past the blob", where, len);
    at += (size_t)len;
  }
  if (at != bloblen) return fail(f, VOUCH_LENGTHS, "the changes take %zu of the blob's %zu bytes", at, bloblen);
  if (n > 1 && twice(changes, n, f)) return -1;
  at = 0;
  json_array_foreach(changes, i, ch) {
    size_t len = (size_t)json_integer_value(json_object_get(ch, "len"));
    if (change(c, ch, i, len ? blob + at : NULL, len, x, invariant_op ? inv : NULL, f)) return -1;
    at += len;
  }
  return 0;
}

/* ------------------------------------------------------ commit, restore */

static const Member DECIDED[] = {{"event", 's', 1, 16}, {"generation", 'g', 1, 0}, {"status", 's', 1, 32}};

int vouch_decided(json_t *m, int want, const vouch_Expect *x, vouch_Fail *f) {
  char b[80];
  if (MEMBERS(m, DECIDED, wire_event_name((wire_Event)want), f)) return -1;
  if (wire_event_of(m) != want)
    return fail(f, VOUCH_EVENT, "%s answers a %s", shown(json_object_get(m, "event"), b, sizeof b),
                want == WIRE_COMMITTED ? "commit" : "restore");
  if (!status_ok(m) || status_is(m, TXN_ST_PAUSED))
    return fail(f, VOUCH_STATUS, "the status %s after a decision", shown(json_object_get(m, "status"), b, sizeof b));
  return generation(json_object_get(m, "generation"), x, wire_event_name((wire_Event)want), f);
}

/* -------------------------------------------------------------- queries */

static const Member VIEW_FRAME[] = {{"event", 's', 1, 16}, {"view", 'o', 1, 0}};
static const Member ENTRY_FRAME[] = {{"event", 's', 1, 16}, {"entry", 'O', 1, 0}};
static const Member INVARIANTS_FRAME[] = {{"event", 's', 1, 16}, {"invariants", 'a', 1, 0}};
static const Member COMPLETIONS_FRAME[] = {{"event", 's', 1, 16}, {"completions", 'a', 1, 0}};
#define COMPLETIONS_MAX 200   /* complete.c's bound */
static const Member VIEW[] = {
  {"generation", 'g', 1, 0}, {"revision", 'i', 1, 0}, {"status", 's', 1, 32}, {"package", 's', 1, NAME_MAX_},
  {"export_error", 's', 0, TEXT}, {"counts", 'o', 1, 0}, {"entries", 'a', 1, 0}, {"data", 'o', 1, 0},
  {"invariants", 'a', 1, 0}, {"last_invariant_check", 'o', 1, 0}, {"goals", 'a', 1, 0},
  {"truncated", 'o', 1, 0}, {"pause", 'o', 0, 0}, {"foreign", 'o', 0, 0}};
static const Member VIEW_ENTRY[] = {
  {"kind", 's', 1, KIND_MAX_}, {"name", 's', 1, NAME_MAX_}, {"hash", 's', 1, 64}, {"text", 's', 0, TEXT},
  {"location", 'o', 0, 0}};
/* where an entry's source as written began (a file of at most 4096 bytes) */
static const Member LOCATION[] = {{"file", 's', 0, 4096}, {"line", 'i', 1, 0}, {"column", 'i', 1, 0}};
static const Member VIEW_DATA[] = {{"count", 'i', 1, 0}, {"rows", 'a', 1, 0}};
static const Member VIEW_ROW[] = {{"key", 's', 1, NAME_MAX_}, {"hash", 's', 1, 64}, {"value", 's', 0, TEXT}};
static const Member VIEW_INVARIANT[] = {
  {"kind", 's', 0, KIND_MAX_}, {"name", 's', 1, NAME_MAX_}, {"hash", 's', 1, 64}, {"source", 's', 0, TEXT}};
static const Member VIEW_CHECK[] = {{"checked", 'b', 1, 0}, {"ok", 'b', 1, 0}, {"message", 's', 1, TEXT}};
static const Member VIEW_GOAL[] = {{"source", 's', 1, TEXT}, {"pass", 'B', 1, 0}, {"message", 's', 0, TEXT}};
static const Member VIEW_TRUNCATED[] = {{"summarized", 'i', 1, 0}, {"omitted", 'i', 1, 0}};
static const Member VIEW_PAUSE[] = {
  {"pause", 'i', 1, 1000000}, {"level", 'i', 1, 8}, {"levels", 'a', 1, 0}, {"condition_type", 's', 1, NAME_MAX_},
  {"report", 's', 1, TEXT}, {"backtrace", 's', 1, TEXT}, {"frames", 'a', 1, 0}, {"restarts", 'a', 1, 0},
  {"steps_used", 'i', 1, 1000000}, {"step_budget", 'i', 1, 1000000}};
static const Member VIEW_RESTART[] = {
  {"id", 's', 1, 32}, {"level", 'i', 1, 8}, {"name", 's', 1, NAME_MAX_}, {"report", 's', 1, TEXT},
  {"lambda_list", 's', 0, TEXT}};
static const Member VIEW_LEVEL[] = {
  {"level", 'i', 1, 8}, {"pause", 'i', 1, 1000000}, {"condition_type", 's', 1, NAME_MAX_}, {"report", 's', 1, TEXT}};
static const Member ENTRY[] = {
  {"kind", 's', 1, KIND_MAX_}, {"name", 's', 1, NAME_MAX_}, {"hash", 's', 1, 64}, {"text", 's', 0, TEXT},
  {"unavailable", 's', 0, TEXT}, {"location", 'o', 0, 0}, {"canonical", 's', 0, TEXT}};
static const Member INVARIANT[] = {{"name", 's', 1, NAME_MAX_}, {"source", 's', 1, TEXT}, {"hash", 's', 1, 64}};


static int kind_ok(json_t *o) { return jiti_entry_kind_parse(json_string_value(json_object_get(o, "kind"))) >= 0; }

/* The view a client gets: the world's content is the worker's to show,
** but its shape, its generation and its revision are checked. */
static int view(json_t *v, const vouch_Expect *x, uint64_t revision, vouch_Fail *f) {
  if (MEMBERS(v, VIEW, "the view", f) || generation(json_object_get(v, "generation"), x, "the view", f)) return -1;
  if ((uint64_t)json_integer_value(json_object_get(v, "revision")) != revision)
    return fail(f, VOUCH_REVISION, "the view shows revision %" JSON_INTEGER_FORMAT ", CURRENT is %" PRIu64,
                json_integer_value(json_object_get(v, "revision")), revision);
  if (!status_ok(v)) return fail(f, VOUCH_STATUS, "the view's status is none");
  const char *key;
  json_t *c;
  json_object_foreach(json_object_get(v, "counts"), key, c)
    if (jiti_entry_kind_parse(key) < 0 || !json_is_integer(c) || json_integer_value(c) < 0)
      return fail(f, VOUCH_SHAPE, "the view's counts hold a member that is not an entry kind's count");
  json_t *data = json_object_get(v, "data"), *p;
  if (EACH(json_object_get(v, "entries"), VIEW_ENTRY, "a view entry", f) ||
      MEMBERS(data, VIEW_DATA, "the view's data", f) || EACH(json_object_get(data, "rows"), VIEW_ROW, "a view row", f) ||
      EACH(json_object_get(v, "invariants"), VIEW_INVARIANT, "a view invariant", f) ||
      MEMBERS(json_object_get(v, "last_invariant_check"), VIEW_CHECK, "the view's invariant check", f) ||
      EACH(json_object_get(v, "goals"), VIEW_GOAL, "a view goal", f) ||
      MEMBERS(json_object_get(v, "truncated"), VIEW_TRUNCATED, "the view's truncation", f))
    return -1;
  size_t i;
  json_array_foreach(json_object_get(v, "entries"), i, c) {
    if (!kind_ok(c)) return fail(f, VOUCH_KIND, "a view entry of no entry kind");
    if ((p = json_object_get(c, "location")) && MEMBERS(p, LOCATION, "a view entry's location", f)) return -1;
  }
  if ((p = json_object_get(v, "pause")) &&
      (MEMBERS(p, VIEW_PAUSE, "the view's pause", f) || frames_ok(json_object_get(p, "frames"), "the view's pause", f) ||
       EACH(json_object_get(p, "restarts"), VIEW_RESTART, "a restart", f) ||
       EACH(json_object_get(p, "levels"), VIEW_LEVEL, "a pause level", f)))
    return -1;
  if ((p = json_object_get(v, "foreign")) &&
      (members(p, FOREIGN + 0, 2, "the view's foreign", f) ||
       strings(json_object_get(p, "granted"), STORE_FOREIGN_MAX, "the view's foreign.granted", f) ||
       EACH(json_object_get(p, "unavailable"), UNAVAILABLE, "the view's foreign.unavailable[]", f)))
    return -1;
  return 0;
}

int vouch_answer(json_t *m, int query, const vouch_Expect *x, uint64_t revision, vouch_Fail *f) {
  char b[80];
  int ev = wire_event_of(m);
  wire_Event want = query == WIRE_OBSERVE ? WIRE_VIEW : query == WIRE_INSPECT ? WIRE_ENTRY
                  : query == WIRE_COMPLETE ? WIRE_COMPLETIONS : WIRE_INVARIANTS;
  if (ev != (int)want)
    return fail(f, VOUCH_EVENT, "%s answers %s", shown(json_object_get(m, "event"), b, sizeof b),
                wire_op_name((wire_Op)query));
  switch (want) {
    case WIRE_VIEW:
      return MEMBERS(m, VIEW_FRAME, "view", f) || view(json_object_get(m, "view"), x, revision, f) ? -1 : 0;
    case WIRE_ENTRY: {
      if (MEMBERS(m, ENTRY_FRAME, "entry", f)) return -1;
      json_t *e = json_object_get(m, "entry");
      if (json_is_null(e)) return 0;
      if (MEMBERS(e, ENTRY, "the entry", f)) return -1;
      json_t *l = json_object_get(e, "location");
      if (l && MEMBERS(l, LOCATION, "the entry's location", f)) return -1;
      return kind_ok(e) ? 0 : fail(f, VOUCH_KIND, "the entry is of no entry kind");
    }
    case WIRE_COMPLETIONS: {   /* names the client will insert into its line: strings, bounded */
      json_t *c = json_object_get(m, "completions");
      if (MEMBERS(m, COMPLETIONS_FRAME, "completions", f)) return -1;
      if (json_array_size(c) > COMPLETIONS_MAX) return fail(f, VOUCH_SHAPE, "more than %d completions", COMPLETIONS_MAX);
      return strings(c, NAME_MAX_, "a completion", f);
    }
    default:
      return MEMBERS(m, INVARIANTS_FRAME, "invariants", f) ||
             EACH(json_object_get(m, "invariants"), INVARIANT, "an invariant", f) ? -1 : 0;
  }
}

/* -------------------------------------------------------------- shadows */

static const Member SHADOWED[] = {{"event", 's', 1, 16}, {"pid", 'i', 1, 0x7fffffff}};
static const Member REFUSED[] = {{"event", 's', 1, 16}, {"message", 's', 1, TEXT}};

int vouch_shadowed(json_t *m, vouch_Fail *f) {
  char b[80];
  int ev = wire_event_of(m);
  if (ev == WIRE_ERROR) return MEMBERS(m, REFUSED, "error", f);
  if (ev != WIRE_SHADOWED) return fail(f, VOUCH_EVENT, "%s answers a shadow", shown(json_object_get(m, "event"), b, sizeof b));
  if (MEMBERS(m, SHADOWED, "shadowed", f)) return -1;
  return json_integer_value(json_object_get(m, "pid")) > 0 ? 0 : fail(f, VOUCH_SHAPE, "shadowed's pid is 0");
}

static const Member REPORT[] = {
  {"definitions", 'o', 1, 0}, {"changes", 'a', 1, 0}, {"repro", 'O', 1, 0}, {"invariants", 'O', 1, 0},
  {"replay", 'a', 1, 0}, {"elapsed_ms", 'i', 1, 0}, {"from", 's', 0, 16}};
static const Member REPORT_CHANGE[] = {
  {"kind", 's', 1, KIND_MAX_}, {"name", 's', 1, NAME_MAX_}, {"hash", 's', 1, 64}, {"removed", 'b', 1, 0}};
static const Member REPORT_INVARIANTS[] = {{"ok", 'b', 1, 0}, {"failed", 'a', 1, 0}};
static const Member REPORT_FAILED[] = {{"name", 's', 1, NAME_MAX_}, {"report", 's', 1, TEXT}};
static const Member REPORT_REPLAY[] = {
  {"request", 's', 1, TEXT}, {"baseline", 'o', 1, 0}, {"baseline_again", 'o', 1, 0}, {"candidate", 'O', 1, 0},
  {"stable", 'b', 1, 0}, {"differs", 'b', 1, 0}};
static const Member REPORT_RESULT[] = {
  {"ok", 'b', 1, 0}, {"value", 's', 0, TEXT}, {"values", 'a', 0, 0}, {"reason", 's', 0, 32},
  {"condition", 's', 0, NAME_MAX_}, {"report", 's', 0, TEXT}, {"truncated", 'T', 0, 0}};

/* A call's result: a value (or values) when ok, else a reason of the
** vocabulary and a report. */
static int result_ok(json_t *r, const char *where, vouch_Fail *f) {
  if (json_is_null(r)) return 0;
  if (members(r, REPORT_RESULT, sizeof REPORT_RESULT / sizeof *REPORT_RESULT, where, f)) return -1;
  json_t *reason = json_object_get(r, "reason");
  if (json_is_true(json_object_get(r, "ok"))) {
    int one = json_object_get(r, "value") != NULL, many = json_object_get(r, "values") != NULL;
    if (one == many || reason || json_object_get(r, "report") || json_object_get(r, "condition"))
      return fail(f, VOUCH_SHAPE, "%s is ok but not one value or a list of values", where);
    return many ? strings(json_object_get(r, "values"), TEXT, where, f) : 0;
  }
  if (!reason || !json_object_get(r, "report") || json_object_get(r, "value") || json_object_get(r, "values"))
    return fail(f, VOUCH_SHAPE, "%s failed without a reason and a report", where);
  int rs = txn_reason_parse(json_string_value(reason));
  if (rs < 0 || rs == TXN_ACCEPTED) return fail(f, VOUCH_REASON, "%s failed with the reason %s", where,
                                                json_string_value(reason));
  return 0;
}

int vouch_report(json_t *m, size_t nreplay, vouch_Fail *f) {
  if (MEMBERS(m, REPORT, "the report", f)) return -1;
  json_t *from = json_object_get(m, "from");
  if (from && strcmp(json_string_value(from), "failure"))
    return fail(f, VOUCH_SHAPE, "the report says it was made from %.16s", json_string_value(from));
  json_t *d = json_object_get(m, "definitions"), *inv = json_object_get(m, "invariants"), *c;
  int applied = json_is_true(json_object_get(d, "ok"));
  if (applied && json_object_size(d) != 1) return fail(f, VOUCH_SHAPE, "the report's definitions say ok with more");
  if (!applied && result_ok(d, "the report's definitions", f)) return -1;
  if (EACH(json_object_get(m, "changes"), REPORT_CHANGE, "a change of the report", f)) return -1;
  size_t i;
  json_array_foreach(json_object_get(m, "changes"), i, c)
    if (!kind_ok(c)) return fail(f, VOUCH_KIND, "a change of the report is of no entry kind");
  if (!applied && (json_array_size(json_object_get(m, "changes")) || !json_is_null(inv) ||
                   !json_is_null(json_object_get(m, "repro"))))
    return fail(f, VOUCH_SHAPE, "the report has results of a candidate that did not apply");
  if (result_ok(json_object_get(m, "repro"), "the report's repro", f)) return -1;
  if (!json_is_null(inv) && (MEMBERS(inv, REPORT_INVARIANTS, "the report's invariants", f) ||
                             EACH(json_object_get(inv, "failed"), REPORT_FAILED, "a failed invariant", f)))
    return -1;
  if (!json_is_null(inv) && json_is_true(json_object_get(inv, "ok")) != !json_array_size(json_object_get(inv, "failed")))
    return fail(f, VOUCH_SHAPE, "the report's invariants say ok with failures, or not ok without");
  json_t *rp = json_object_get(m, "replay");
  if (json_array_size(rp) != nreplay)
    return fail(f, VOUCH_SHAPE, "the report replays %zu requests, %zu were sent", json_array_size(rp), nreplay);
  json_array_foreach(rp, i, c) {
    if (MEMBERS(c, REPORT_REPLAY, "a replayed request", f) ||
        result_ok(json_object_get(c, "baseline"), "a baseline", f) ||
        result_ok(json_object_get(c, "baseline_again"), "a baseline", f) ||
        result_ok(json_object_get(c, "candidate"), "a candidate's result", f))
      return -1;
    if (json_is_null(json_object_get(c, "candidate")) != !applied)
      return fail(f, VOUCH_SHAPE, "a replayed request's candidate result does not fit the definitions'");
    if (json_is_true(json_object_get(c, "differs")) && !json_is_true(json_object_get(c, "stable")))
      return fail(f, VOUCH_SHAPE, "a replayed request differs without being stable");
  }
  return 0;
}
