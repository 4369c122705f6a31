/*
** view.c — JSON views of a txn_World (jansson): txn_observe (bounded by a
** byte budget), txn_inspect (one entry in full), txn_invariant_list,
** txn_foreign_value.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "txn_int.h"

typedef struct { jiti_EntryKind kind; char *name; unsigned char *bytes; size_t len; } Ent;
typedef struct { Ent *v; size_t n, cap; } Ents;

static int collect(void *ud, jiti_EntryKind kind, const char *name,
                   const unsigned char *bytes, size_t len) {
  Ents *e = ud;
  if (e->n == e->cap) {
    size_t cap = e->cap ? 2 * e->cap : 64;
    Ent *v = realloc(e->v, cap * sizeof *v);
    if (!v) return 1;
    e->v = v;
    e->cap = cap;
  }
  Ent *x = &e->v[e->n++];
  x->kind = kind;
  x->name = txn_strdup(name);
  x->len = len;
  x->bytes = malloc(len ? len : 1);
  if (x->bytes && bytes) memcpy(x->bytes, bytes, len);
  return 0;
}

static void ents_free(Ents *e) {
  for (size_t i = 0; i < e->n; i++) {
    free(e->v[i].name);
    free(e->v[i].bytes);
  }
  free(e->v);
}

static jiti_Status export_all(txn_World *W, Ents *e, char *err, size_t n) {
  int saved = W->pausable;
  W->pausable = 0;
  err[0] = 0;
  jiti_Status st = jiti_export_all(W->S, collect, e, err, n);
  W->pausable = saved;
  return st;
}

/* An entry's text: on one line for a view (cut to max bytes, 0: whole), or
** the whole entry as a form laid out for reading (inspect: max 0, laid). */
#define INSPECT_WIDTH 78

/* written: the entry's source as written when it has one (its text as it
** was read), else its canonical text. */
static char *entry_text_as(txn_World *W, const Ent *x, size_t max, int laid, int written) {
  jiti_EntrySource src;
  char *t;
  if (written && jiti_entry_source(x->bytes, x->len, &src, NULL) == 1) {
    t = malloc(src.len + 1);
    if (t) {
      memcpy(t, src.text, src.len);
      t[src.len] = 0;
    }
  } else {
    int saved = W->pausable;
    W->pausable = 0;
    t = laid ? jiti_entry_form(W->S, x->name, x->bytes, x->len, INSPECT_WIDTH)
             : jiti_entry_text(W->S, x->bytes, x->len);
    W->pausable = saved;
  }
  if (t && max && strlen(t) > max) {
    t[max] = 0;
    if (max > 3) memcpy(t + max - 3, "...", 3);
  }
  return t;
}

static json_t *jstr(const char *s) { return json_string(s ? s : ""); }

static char *entry_text(txn_World *W, const Ent *x, size_t max, int laid) {
  return entry_text_as(W, x, max, laid, 1);
}

/* Where an entry's source as written began: {file?, line, column} (file
** only when it came from one), or NULL when it has none. */
static json_t *location_json(const Ent *x) {
  jiti_EntrySource src;
  if (jiti_entry_source(x->bytes, x->len, &src, NULL) != 1) return NULL;
  json_t *l = json_object();
  json_t *f = src.file ? json_stringn(src.file, src.filelen) : NULL;   /* NULL: not UTF-8 */
  if (f) json_object_set_new(l, "file", f);
  json_object_set_new(l, "line", json_integer(src.line));
  json_object_set_new(l, "column", json_integer(src.column));
  return l;
}

/* A printed value that is not UTF-8 (a string holding a lone surrogate)
** with '?' for each byte past ASCII, so that no frame loses a member. */
static json_t *frame_text(const char *s) {
  json_t *j = jstr(s);
  if (j) return j;
  char *c = strdup(s);
  if (!c) return NULL;
  for (char *p = c; *p; p++)
    if ((unsigned char)*p >= 0x80) *p = '?';
  j = json_string(c);
  free(c);
  return j;
}

json_t *txn_frames_value(int n, const jiti_Frame *frames) {
  json_t *fs = json_array();
  for (int i = 0; i < n; i++) {
    const jiti_Frame *f = &frames[i];
    json_t *args = json_array(), *locals = json_array();
    for (int k = 0; k < f->nargs; k++) json_array_append_new(args, frame_text(f->args[k]));
    for (int k = 0; k < f->nlocals; k++)
      json_array_append_new(locals, json_pack("{s:o, s:o}", "name", frame_text(f->locals[k].name), "value",
                                              frame_text(f->locals[k].value)));
    json_array_append_new(fs, json_pack("{s:i, s:o, s:o, s:o}", "frame", f->number, "function",
                                        frame_text(f->function), "args", args, "locals", locals));
  }
  return fs;
}

json_t *txn_reads_value(jiti_State *S, int *more) {
  jiti_Read *r;
  int n = jiti_reads_describe(S, &r, more);
  if (!n) return NULL;
  json_t *out = json_array();
  for (int i = 0; i < n; i++) {
    json_t *e = json_pack("{s:s, s:o, s:o}", "kind", jiti_read_kind_name(r[i].kind), "name", frame_text(r[i].name),
                          "value", frame_text(r[i].value));
    if (r[i].object) json_object_set_new(e, "object", frame_text(r[i].object));
    json_array_append_new(out, e);
  }
  jiti_reads_free(r, n);
  return out;
}

/* The innermost level's pause, with every open level's restarts and a
** line per level (outermost first). */
static json_t *pause_json(txn_World *W) {
  txn_PauseInfo *P = txn_pause_now(W);
  json_t *p = json_object();
  json_object_set_new(p, "pause", json_integer(P->pause));
  json_object_set_new(p, "level", json_integer(W->hook_level));
  json_object_set_new(p, "condition_type", jstr(P->condition_type));
  json_object_set_new(p, "report", jstr(P->report));
  json_object_set_new(p, "backtrace", jstr(P->backtrace));
  json_object_set_new(p, "frames", txn_frames_value(P->nframes, P->frames));
  json_t *rs = json_array();
  int n = txn_menu(W);
  for (int i = 0; i < n; i++) {
    json_t *r = json_object();
    json_object_set_new(r, "id", jstr(W->menu[i].id));
    json_object_set_new(r, "level", json_integer(W->menu[i].level));
    json_object_set_new(r, "name", jstr(W->menu[i].name));
    json_object_set_new(r, "report", jstr(W->menu[i].report));
    json_object_set_new(r, "lambda_list", jstr(W->menu[i].lambda_list));
    json_array_append_new(rs, r);
  }
  json_object_set_new(p, "restarts", rs);
  json_t *ls = json_array();
  for (int l = 0; l < W->hook_level; l++)
    json_array_append_new(ls, json_pack("{s:i, s:i, s:s, s:s}", "level", l + 1, "pause", W->plev[l].pause,
                                        "condition_type", W->plev[l].condition_type ? W->plev[l].condition_type : "",
                                        "report", W->plev[l].report ? W->plev[l].report : ""));
  json_object_set_new(p, "levels", ls);
  json_object_set_new(p, "steps_used", json_integer(W->steps));
  json_object_set_new(p, "step_budget", json_integer(W->budget));
  return p;
}

static void add_unavailable(void *ud, const char *name, const char *library, const char *symbol,
                            const char *why) {
  json_array_append_new(ud, json_pack("{s:s, s:s, s:s, s:s}", "name", name, "library", library,
                                      "symbol", symbol, "reason", why));
}

json_t *txn_foreign_value(txn_World *W) {
  if (!W) return NULL;
  json_t *granted = json_array(), *unavailable = json_array();
  for (size_t i = 0; i < jiti_foreign_grant_count(W->S); i++)
    json_array_append_new(granted, jstr(jiti_foreign_grant_name(W->S, i)));
  jiti_foreign_unavailable(W->S, add_unavailable, unavailable);
  return json_pack("{s:o, s:o}", "granted", granted, "unavailable", unavailable);
}

/* The reason the foreign declaration `name` cannot be called, or NULL. */
typedef struct { const char *name; char *why; } WhyArgs;
static void find_why(void *ud, const char *name, const char *library, const char *symbol, const char *why) {
  (void)library; (void)symbol;
  WhyArgs *a = ud;
  if (!a->why && !strcmp(name, a->name)) a->why = txn_strdup(why);
}

json_t *txn_observe_value(txn_World *W, size_t budget) {
  if (!W) return NULL;
  if (!budget) budget = 64 << 10;
  json_t *o = json_object();
  json_object_set_new(o, "generation", json_integer((json_int_t)W->gen));
  json_object_set_new(o, "revision", json_integer((json_int_t)W->revision));
  json_object_set_new(o, "status", json_string(txn_status_name(txn_status(W))));
  char *pkg = jiti_world_package(W->S);
  json_object_set_new(o, "package", jstr(pkg));
  free(pkg);
  Ents e = {0};
  char err[1024];
  jiti_Status st = export_all(W, &e, err, sizeof err);
  if (st != JITI_OK) json_object_set_new(o, "export_error", jstr(err));
  json_t *counts = json_object();
  size_t nk[JITI_ENTRY_KIND_COUNT] = {0};
  for (size_t i = 0; i < e.n; i++) nk[e.v[i].kind]++;
  for (int k = 0; k < JITI_ENTRY_KIND_COUNT; k++)
    json_object_set_new(counts, jiti_entry_kind_name((jiti_EntryKind)k), json_integer((json_int_t)nk[k]));
  json_object_set_new(o, "counts", counts);

  json_t *entries = json_array(), *rows = json_array(), *invs = json_array();
  size_t used = 256, summarized = 0, omitted = 0;
  /* invariants first (always shown in full: they are few and essential),
  ** then the other entries, then data rows */
  for (int pass = 0; pass < 3; pass++) {
    for (size_t i = 0; i < e.n; i++) {
      Ent *x = &e.v[i];
      int is_inv = x->kind == JITI_ENTRY_INVARIANT, is_data = x->kind == JITI_ENTRY_DATA;
      if ((pass == 0) != is_inv) continue;
      if (pass == 1 && (is_inv || is_data)) continue;
      if (pass == 2 && !is_data) continue;
      char hash[65];
      jiti_entry_hash(x->kind, x->name, x->bytes, x->len, hash);
      size_t base = strlen(x->name) + 100;
      if (pass > 0 && used + base > 2 * budget) { omitted++; continue; }
      json_t *j = json_object();
      if (!is_data) json_object_set_new(j, "kind", json_string(jiti_entry_kind_name(x->kind)));
      json_object_set_new(j, is_data ? "key" : "name", jstr(x->name));
      json_object_set_new(j, "hash", json_string(hash));
      used += base;
      if (pass == 0 || used < budget) {
        char *t = entry_text(W, x, pass == 0 ? 0 : 2000, 0);
        size_t tl = t ? strlen(t) : 0;
        if (pass == 0 || used + tl <= budget) {
          json_object_set_new(j, is_inv ? "source" : is_data ? "value" : "text", jstr(t));
          json_t *loc = location_json(x);
          if (loc) json_object_set_new(j, "location", loc);
          used += tl;
        } else {
          summarized++;
        }
        free(t);
      } else {
        summarized++;
      }
      json_array_append_new(pass == 0 ? invs : pass == 1 ? entries : rows, j);
    }
  }
  json_object_set_new(o, "entries", entries);
  json_t *data = json_object();
  json_object_set_new(data, "count", json_integer((json_int_t)nk[JITI_ENTRY_DATA]));
  json_object_set_new(data, "rows", rows);
  json_object_set_new(o, "data", data);
  json_object_set_new(o, "invariants", invs);
  json_t *lc = json_object();
  json_object_set_new(lc, "checked", json_boolean(W->inv_checked));
  json_object_set_new(lc, "ok", json_boolean(W->inv_ok));
  json_object_set_new(lc, "message", jstr(W->inv_msg));
  json_object_set_new(o, "last_invariant_check", lc);
  json_t *goals = json_array();
  for (int i = 0; i < W->ngoals; i++) {
    json_t *g = json_object();
    json_object_set_new(g, "source", jstr(W->goals[i]));
    if (W->goal_results) {
      json_object_set_new(g, "pass", json_boolean(W->goal_results[i].pass));
      json_object_set_new(g, "message", jstr(W->goal_results[i].message));
    } else {
      json_object_set_new(g, "pass", json_null());
    }
    json_array_append_new(goals, g);
  }
  json_object_set_new(o, "goals", goals);
  json_t *tr = json_object();
  json_object_set_new(tr, "summarized", json_integer((json_int_t)summarized));
  json_object_set_new(tr, "omitted", json_integer((json_int_t)omitted));
  json_object_set_new(o, "truncated", tr);
  if (txn_pause_now(W)) json_object_set_new(o, "pause", pause_json(W));
  if (jiti_foreign_grant_count(W->S) || jiti_foreign_unavailable(W->S, NULL, NULL))
    json_object_set_new(o, "foreign", txn_foreign_value(W));
  ents_free(&e);
  return o;
}

json_t *txn_inspect_value(txn_World *W, const char *kind, const char *name) {
  if (!W || !kind || !name) return NULL;
  int k = jiti_entry_kind_parse(kind);
  if (k < 0) return NULL;
  Ents e = {0};
  char err[1024];
  export_all(W, &e, err, sizeof err);
  json_t *j = NULL;
  for (size_t i = 0; i < e.n; i++) {
    Ent *x = &e.v[i];
    if ((int)x->kind != k || strcmp(x->name, name) != 0) continue;
    char hash[65];
    jiti_entry_hash(x->kind, x->name, x->bytes, x->len, hash);
    char *t = entry_text(W, x, 0, 1);
    j = json_object();
    json_object_set_new(j, "kind", json_string(kind));
    json_object_set_new(j, "name", jstr(x->name));
    json_object_set_new(j, "hash", json_string(hash));
    json_object_set_new(j, "text", jstr(t));
    free(t);
    json_t *loc = location_json(x);
    if (loc) {  /* written as it was read: the canonical form beside it */
      json_object_set_new(j, "location", loc);
      char *c = entry_text_as(W, x, 0, 1, 0);
      json_object_set_new(j, "canonical", jstr(c));
      free(c);
    }
    WhyArgs why = {x->name, NULL};
    if (x->kind == JITI_ENTRY_FOREIGN) jiti_foreign_unavailable(W->S, find_why, &why);
    if (why.why) json_object_set_new(j, "unavailable", json_string(why.why));
    free(why.why);
    break;
  }
  ents_free(&e);
  return j;
}

json_t *txn_invariant_list_value(txn_World *W) {
  if (!W) return NULL;
  Ents e = {0};
  char err[1024];
  export_all(W, &e, err, sizeof err);
  json_t *a = json_array();
  for (size_t i = 0; i < e.n; i++) {
    Ent *x = &e.v[i];
    if (x->kind != JITI_ENTRY_INVARIANT) continue;
    char hash[65];
    jiti_entry_hash(x->kind, x->name, x->bytes, x->len, hash);
    char *t = entry_text(W, x, 0, 0);
    json_t *j = json_object();
    json_object_set_new(j, "name", jstr(x->name));
    json_object_set_new(j, "source", jstr(t));
    json_object_set_new(j, "hash", json_string(hash));
    free(t);
    json_array_append_new(a, j);
  }
  ents_free(&e);
  return a;
}

/* ------------------------------------------------------- as JSON text */

static char *dumped(json_t *v) {
  char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  return s;
}

char *txn_observe(txn_World *W, size_t budget) { return dumped(txn_observe_value(W, budget)); }

char *txn_inspect(txn_World *W, const char *kind, const char *name) {
  return dumped(txn_inspect_value(W, kind, name));
}

char *txn_invariant_list(txn_World *W) { return dumped(txn_invariant_list_value(W)); }
