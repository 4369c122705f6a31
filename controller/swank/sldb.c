/*
** sldb.c — SLIME's debugger is the kernel's pause.  A pause of level L is
** sldb level L: its condition, every level's restarts (innermost first,
** then an ABORT of this level), its frames with their locals.  The
** editor's debugger commands are acts on the pause (docs/protocol.md,
** "Pauses"): a restart is a resume, `a` an abort of the level, `q` aborts
** every level, `c` resumes CONTINUE, `e` evaluates in a frame, `r`
** restarts a frame, `R` returns from one.  The request that opened a
** level (a REPL form, an eval in a frame) is answered when the level
** ends, as Swank answers it when its debugger loop returns.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "swank_int.h"

static json_t *restarts(Swank *S) { return json_object_get(S->pause, "restarts"); }
static json_t *frames(Swank *S) { return json_object_get(S->pause, "frames"); }

static int pause_level(json_t *p) {
  json_int_t l = kclient_int(p, "level");
  return l < 1 ? 1 : l > SWANK_LEVELS_MAX ? SWANK_LEVELS_MAX : (int)l;
}

static void set_pause(Swank *S, json_t *p) {
  json_t *old = S->pause;
  S->pause = json_is_object(p) ? json_incref(p) : NULL;
  json_decref(old);
}

/* A frame as the backtrace shows it: (FUNCTION ARG ...). */
static char *frame_text(json_t *fr) {
  size_t n = strlen(kclient_str(fr, "function")) + 4, i;
  json_t *a;
  json_array_foreach(json_object_get(fr, "args"), i, a) n += strlen(json_string_value(a) ? json_string_value(a) : "") + 1;
  char *t = malloc(n);
  if (!t) return NULL;
  strcpy(t, "(");
  strcat(t, kclient_str(fr, "function"));
  json_array_foreach(json_object_get(fr, "args"), i, a) {
    strcat(t, " ");
    strcat(t, json_string_value(a) ? json_string_value(a) : "");
  }
  strcat(t, ")");
  return t;
}

static void write_frames(Swank *S, sxw *o, int64_t start, int64_t end) {
  json_t *fs = frames(S), *fr;
  size_t i;
  sxw_open(o);
  json_array_foreach(fs, i, fr) {
    if ((int64_t)i < start || (end >= 0 && (int64_t)i >= end)) continue;
    char *t = frame_text(fr);
    sxw_open(o), sxw_int(o, (int64_t)i), sxw_str(o, t ? t : "?");
    sxw_open(o), sxw_sym(o, ":restartable"), sxw_sym(o, "t"), sxw_close(o);
    sxw_close(o);
    free(t);
  }
  sxw_close(o);
}

/* condition restarts frames conts: what :debug and debugger-info carry. */
static void write_info(Swank *S, sxw *o, int64_t start, int64_t end) {
  char type[300];
  snprintf(type, sizeof type, "   [Condition of type %s]", kclient_str(S->pause, "condition_type"));
  sxw_open(o), sxw_str(o, kclient_str(S->pause, "report")), sxw_str(o, type), sxw_sym(o, "nil"), sxw_close(o);
  sxw_open(o);
  json_t *r;
  size_t i;
  json_array_foreach(restarts(S), i, r) {
    const char *name = kclient_str(r, "name");
    sxw_open(o), sxw_str(o, *name ? name : "(unnamed)"), sxw_str(o, kclient_str(r, "report")), sxw_close(o);
  }
  char ab[120];
  snprintf(ab, sizeof ab, "%s", S->levels > 1 ? "Return to the debugger's level below (undo what this level ran)."
                                              : "Abort: restore the world as it was before this evaluation.");
  sxw_open(o), sxw_str(o, "*ABORT"), sxw_str(o, ab), sxw_close(o);
  sxw_close(o);
  write_frames(S, o, start, end);
  sxw_sym(o, "nil");
}

static void send_debug(Swank *S) {
  sxw w;
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":debug"), sxw_int(&w, SWANK_THREAD), sxw_int(&w, S->levels);
  write_info(S, &w, 0, -1);
  sxw_close(&w);
  sframe_send(S, &w);
  sxw_free(&w);
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":debug-activate"), sxw_int(&w, SWANK_THREAD), sxw_int(&w, S->levels), sxw_sym(&w, "nil");
  sxw_close(&w);
  sframe_send(S, &w);
  sxw_free(&w);
}

static void send_debug_return(Swank *S, int level) {
  sxw w;
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":debug-return"), sxw_int(&w, SWANK_THREAD), sxw_int(&w, level), sxw_sym(&w, "nil");
  sxw_close(&w);
  sframe_send(S, &w);
  sxw_free(&w);
}

/* Leave the levels above `to`; each one's request is aborted, the
** outermost's (level 1's) is answered with final (NULL: aborted). */
static void leave_levels(Swank *S, int to, json_t *final) {
  for (int l = S->levels; l > to; l--) {
    send_debug_return(S, l);
    swank_Level lv = S->level[l];
    S->level[l] = (swank_Level){0, OWNER_NONE};
    if (l == 1 && final && lv.owner != OWNER_NONE) seval_finish(S, lv.owner, lv.rex, final);
    else if (lv.rex) sframe_return_abort(S, lv.rex, NULL);
  }
  S->levels = to;
  if (!to) set_pause(S, NULL);
}

/* Open levels up to the pause's; the innermost is owned by the request. */
static void enter_levels(Swank *S, json_t *p, swank_Owner owner, int64_t id) {
  int L = pause_level(p);
  for (int l = S->levels + 1; l <= L; l++)
    S->level[l] = l == L ? (swank_Level){owner == OWNER_NONE ? 0 : id, owner} : (swank_Level){0, OWNER_NONE};
  S->levels = L;
  set_pause(S, p);
  send_debug(S);
}

static int follow(Swank *S, json_t *r, swank_Owner owner, int64_t id);

int sldb_follow(Swank *S, json_t *r, swank_Owner owner, int64_t id, sxw *out) {
  (void)out;
  int rc = follow(S, r, owner, id);
  json_decref(r);
  return rc;
}

static int follow(Swank *S, json_t *r, swank_Owner owner, int64_t id) {
  if (!r) {
    swank_set_abort(S, "%s", S->k.err);
    return RPC_ABORT;
  }
  int ok = json_is_true(json_object_get(r, "ok"));
  const char *code = kclient_str(r, "code");
  json_t *p = json_object_get(r, "pause");
  if (!ok && !strcmp(code, "paused")) {  /* another client's pause holds the world */
    if (!S->levels && json_is_object(p)) enter_levels(S, p, OWNER_NONE, 0);
    seval_finish(S, owner == OWNER_NONE ? OWNER_INTERACTIVE : owner, id, r);
    return RPC_DEFER;
  }
  if (!ok && json_is_object(p)) {  /* a command refused: the pause stays */
    set_pause(S, p);
    swank_set_abort(S, "%s: %s", code, kclient_str(r, "message"));
    return RPC_ABORT;
  }
  if (!ok && S->levels && (!strcmp(code, "not-paused") || !strcmp(code, "stale"))) {
    /* the pause ended or moved without us (its timeout, another client) */
    leave_levels(S, 0, NULL);
    sldb_attach(S);
    swank_set_abort(S, "%s: %s", code, kclient_str(r, "message"));
    return RPC_ABORT;
  }
  if (ok && json_is_object(p)) {
    int L = pause_level(p);
    if (json_object_get(r, "value") && L == S->levels) {  /* a repair's value: the same pause */
      set_pause(S, p);
      seval_finish(S, owner == OWNER_NONE ? OWNER_INTERACTIVE : owner, id, r);
      return RPC_DEFER;
    }
    if (L > S->levels) {
      enter_levels(S, p, owner, id);
      return owner == OWNER_NONE ? RPC_ABORT : RPC_DEFER;
    }
    if (L < S->levels) leave_levels(S, L, NULL);
    set_pause(S, p);
    send_debug(S);  /* as Swank's debugger loop shows its level again */
    if (owner != OWNER_NONE) seval_finish(S, owner, id, r);
    return owner == OWNER_NONE ? RPC_ABORT : RPC_DEFER;
  }
  /* no pause: the transaction ended (or never ran) */
  if (S->levels) {
    leave_levels(S, 0, r);
    if (owner != OWNER_NONE) seval_finish(S, owner, id, r);
    return owner == OWNER_NONE ? RPC_ABORT : RPC_DEFER;
  }
  seval_finish(S, owner == OWNER_NONE ? OWNER_INTERACTIVE : owner, id, r);
  return RPC_DEFER;
}

void sldb_attach(Swank *S) {
  if (S->levels) return;
  json_t *r = skernel_request(S, json_pack("{s:s, s:i}", "op", "observe", "budget", 65536));
  json_t *view = json_object_get(r, "view"), *p = json_object_get(view, "pause");
  if (json_is_object(p)) {
    /* acts carry the view's generation, the kernel's numbering */
    json_t *q = json_deep_copy(p);
    if (q && json_object_get(view, "generation")) json_object_set(q, "generation", json_object_get(view, "generation"));
    if (q) enter_levels(S, q, OWNER_NONE, 0);
    json_decref(q);
  }
  json_decref(r);
}

static int no_pause(Swank *S) {
  if (S->pause) return 0;
  swank_set_abort(S, "nothing is paused");
  return 1;
}

static int64_t int_arg(const sx *f, size_t i, int64_t dflt) {
  sx *a = sx_at(f, i);
  return a && a->type == SX_INT ? a->num : dflt;
}

int sldb_info(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg, (void)id;
  if (no_pause(S)) return RPC_ABORT;
  sxw_open(out);
  write_info(S, out, int_arg(f, 1, 0), int_arg(f, 2, -1));
  sxw_close(out);
  return RPC_OK;
}

int sldb_backtrace(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg, (void)id;
  if (no_pause(S)) return RPC_ABORT;
  write_frames(S, out, int_arg(f, 1, 0), int_arg(f, 2, -1));
  return RPC_OK;
}

int sldb_locals(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg, (void)id;
  if (no_pause(S)) return RPC_ABORT;
  json_t *fr = json_array_get(frames(S), (size_t)int_arg(f, 1, 0)), *l;
  size_t i;
  sxw_open(out), sxw_open(out);
  json_array_foreach(json_object_get(fr, "locals"), i, l) {
    sxw_open(out);
    sxw_sym(out, ":name"), sxw_str(out, kclient_str(l, "name"));
    sxw_sym(out, ":id"), sxw_int(out, 0);
    sxw_sym(out, ":value"), sxw_str(out, kclient_str(l, "value"));
    sxw_close(out);
  }
  sxw_close(out), sxw_sym(out, "nil"), sxw_close(out);
  return RPC_OK;
}

int sldb_eval_in_frame(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  const char *src = sx_str(sx_at(f, 1));
  if (no_pause(S)) return RPC_ABORT;
  if (!src) {
    swank_set_abort(S, "expected the text to evaluate");
    return RPC_ABORT;
  }
  json_t *a = json_pack("{s:s, s:s, s:I}", "type", "evaluate", "source", src, "frame", (json_int_t)int_arg(f, 2, 0));
  const char *p = skernel_package(pkg);
  if (a && p) json_object_set_new(a, "package", json_string(p));
  return sldb_follow(S, skernel_act(S, a), OWNER_FRAME, id, out);
}

/* Abort the innermost level (a kernel abort: level n-1's pause, or at
** level 1 the transaction restored). */
static int abort_level(Swank *S, int64_t id, sxw *out) {
  return sldb_follow(S, skernel_act(S, json_pack("{s:s}", "type", "abort")), OWNER_NONE, id, out);
}

int sldb_restart(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg;
  if (no_pause(S)) return RPC_ABORT;
  int64_t n = int_arg(f, 2, -1);
  size_t count = json_array_size(restarts(S));
  if (n == (int64_t)count) return abort_level(S, id, out);  /* the *ABORT this server adds */
  json_t *r = json_array_get(restarts(S), (size_t)n);
  if (n < 0 || !r) {
    swank_set_abort(S, "no restart %lld", (long long)n);
    return RPC_ABORT;
  }
  return sldb_follow(S, skernel_act(S, json_pack("{s:s, s:s}", "type", "resume", "restart_id", kclient_str(r, "id"))),
                     OWNER_NONE, id, out);
}

int sldb_abort(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)pkg;
  if (no_pause(S)) return RPC_ABORT;
  return abort_level(S, id, out);
}

int sldb_toplevel(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)pkg;
  if (no_pause(S)) return RPC_ABORT;
  int rc = RPC_ABORT;
  for (int i = 0; i <= SWANK_LEVELS_MAX && S->pause; i++) rc = abort_level(S, id, out);
  return rc;
}

int sldb_continue(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)pkg;
  if (no_pause(S)) return RPC_ABORT;
  json_t *r;
  size_t i;
  json_array_foreach(restarts(S), i, r) if (!strcmp(kclient_str(r, "name"), "CONTINUE") &&
                                            kclient_int(r, "level") == kclient_int(S->pause, "level"))
    return sldb_follow(S, skernel_act(S, json_pack("{s:s, s:s}", "type", "resume", "restart_id", kclient_str(r, "id"))),
                       OWNER_NONE, id, out);
  swank_set_abort(S, "this level has no CONTINUE restart: choose a restart by its number, or abort");
  return RPC_ABORT;
}

int sldb_restart_frame(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg;
  if (no_pause(S)) return RPC_ABORT;
  return sldb_follow(S, skernel_act(S, json_pack("{s:s, s:I}", "type", "restart-frame", "frame", (json_int_t)int_arg(f, 1, 0))),
                     OWNER_NONE, id, out);
}

int sldb_return_from_frame(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg;
  const char *src = sx_str(sx_at(f, 2));
  if (no_pause(S)) return RPC_ABORT;
  char *args = NULL;
  if (!src || asprintf(&args, "(multiple-value-list (progn %s\n))", src) < 0) {
    swank_set_abort(S, "expected the values to return");
    return RPC_ABORT;
  }
  json_t *a = json_pack("{s:s, s:I, s:s}", "type", "return-from-frame", "frame", (json_int_t)int_arg(f, 1, 0),
                        "arguments", args);
  free(args);
  return sldb_follow(S, skernel_act(S, a), OWNER_NONE, id, out);
}

int sldb_condition(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)f, (void)pkg, (void)id;
  if (no_pause(S)) return RPC_ABORT;
  sxw_str(out, kclient_str(S->pause, "report"));
  return RPC_OK;
}
