/*
** seval.c — what the editor evaluates and compiles, each a transaction of
** the kernel at the generation the editor last saw: the REPL
** (listener-eval: values, output, *, ** and ***), C-x C-e
** (interactive-eval), C-c C-c (compile-string-for-emacs), C-c C-k and
** C-c C-l (a whole file as one transaction).  A refusal — the gate, an
** invariant, a stale generation, an error — comes back as a compiler note
** at the buffer's position, or as a message in the REPL.  An error in an
** evaluation pauses, and the debugger shows the pause (sldb.c).
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "swank_int.h"
#include "cli.h"

static void indentation_update(Swank *S, json_t *r);

/* 1 when src uses *, ** or *** as a variable (outside strings and comments). */
static int uses_history(const char *s) {
  for (size_t i = 0; s[i]; i++) {
    if (s[i] == '"') {
      for (i++; s[i] && s[i] != '"'; i++)
        if (s[i] == '\\' && s[i + 1]) i++;
      if (!s[i]) return 0;
      continue;
    }
    if (s[i] == ';') {
      while (s[i + 1] && s[i + 1] != '\n') i++;
      continue;
    }
    if (s[i] != '*' || (i && !strchr(" \t\r\n('`,", s[i - 1]))) continue;
    size_t n = strspn(s + i, "*");
    if (n <= 3 && (!s[i + n] || strchr(" \t\r\n()", s[i + n]))) return 1;
    i += n - 1;
  }
  return 0;
}

/* The source with *, ** and *** bound to the last values the REPL
** printed (those that read back), or a copy of it. */
static char *with_history(Swank *S, const char *src) {
  if (!uses_history(src)) return strdup(src);
  static const char *const names[] = {"*", "**", "***"};
  size_t n = strlen(src) + 64;
  for (int i = 0; i < 3; i++) n += S->last[i] ? strlen(S->last[i]) + 32 : 16;
  char *o = malloc(n);
  if (!o) return NULL;
  size_t k = (size_t)sprintf(o, "(let (");
  for (int i = 0; i < 3; i++)
    k += (size_t)sprintf(o + k, "(%s (quote %s)) ", names[i], S->last[i] ? S->last[i] : "nil");
  sprintf(o + k, ")\n%s\n)", src);
  return o;
}

/* A printed value that the reader gives back as the same value. */
static int readable(const char *v) { return v && !strstr(v, "#<"); }

static void remember(Swank *S, const char *v) {
  free(S->last[2]);
  S->last[2] = S->last[1], S->last[1] = S->last[0];
  S->last[0] = readable(v) ? strdup(v) : NULL;
}

/* Why a transaction failed, for people: its code and message, with a
** word on what to do for the refusals an editor meets. */
static char *failure_text(Swank *S, json_t *r) {
  json_int_t saw = S->asked;
  const char *code = kclient_str(r, "code"), *msg = kclient_str(r, "message");
  char *t = NULL;
  if (!strcmp(code, "stale"))
    asprintf(&t, "stale: the world changed since this editor last saw it (generation %lld, now %lld); nothing "
                 "ran: do it again to run it on the world as it is now",
             (long long)saw, (long long)S->gen);
  else if (!strcmp(code, "paused"))
    asprintf(&t, "paused: the world is paused in the debugger (sldb); answer or abort the pause first");
  else
    asprintf(&t, "%s: %s", code, msg);
  return t;
}

void seval_finish(Swank *S, swank_Owner owner, int64_t id, json_t *r) {
  if (owner == OWNER_NONE) return;
  const char *out = kclient_str(r, "output");
  int ok = r && json_is_true(json_object_get(r, "ok"));
  if (!r) {
    sframe_return_abort(S, id, S->k.err);
    return;
  }
  if (ok) indentation_update(S, r);
  if (!ok) {
    char *t = failure_text(S, r);
    if (*out) sframe_write_string(S, out, 0);
    if (owner == OWNER_LISTENER) {
      char *line;
      if (asprintf(&line, "; %s\n", t) >= 0) sframe_write_string(S, line, 0), free(line);
    }
    sframe_return_abort(S, id, t);
    free(t);
    return;
  }
  json_t *vs = json_object_get(r, "values"), *v;
  size_t i;
  sxw w;
  sxw_init(&w);
  switch (owner) {
  case OWNER_LISTENER:
    if (*out) sframe_write_string(S, out, 0);
    if (json_is_array(vs)) {
      if (!json_array_size(vs)) sframe_write_string(S, "; No value", 1);
      json_array_foreach(vs, i, v) {
        char *line;
        if (asprintf(&line, "%s\n", json_string_value(v) ? json_string_value(v) : "") >= 0)
          sframe_write_string(S, line, 1), free(line);
      }
      remember(S, json_string_value(json_array_get(vs, 0)));
    } else {
      char *line;
      if (asprintf(&line, "%s\n", kclient_str(r, "value")) >= 0) sframe_write_string(S, line, 1), free(line);
      remember(S, kclient_str(r, "value"));
    }
    sxw_sym(&w, "nil");
    break;
  case OWNER_INTERACTIVE:
  case OWNER_FRAME: { /* "=> values", as Swank shows them in the echo area */
    if (*out) sframe_write_string(S, out, 0);
    char *t = NULL;
    if (json_is_array(vs) && !json_array_size(vs)) t = strdup("; No value");
    else if (json_is_array(vs)) {
      size_t n = 4;
      json_array_foreach(vs, i, v) n += strlen(json_string_value(v) ? json_string_value(v) : "") + 2;
      t = calloc(1, n);
      if (t) {
        strcpy(t, "=> ");
        json_array_foreach(vs, i, v) {
          if (i) strcat(t, ", ");
          strcat(t, json_string_value(v) ? json_string_value(v) : "");
        }
      }
    } else if (asprintf(&t, "=> %s", kclient_str(r, "value")) < 0) t = NULL;
    sxw_str(&w, t ? t : "");
    free(t);
    break;
  }
  case OWNER_GRAB:
    sxw_open(&w), sxw_str(&w, out), sxw_str(&w, kclient_str(r, "value")), sxw_close(&w);
    break;
  default:
    sframe_return_abort(S, id, NULL);
    sxw_free(&w);
    return;
  }
  sframe_return_ok(S, id, &w);
  sxw_free(&w);
}

/* How many arguments come before &BODY in the lambda list of a
** definition's text "(DEFMACRO NAME (ARGS) ...)", or -1 without &BODY. */
static int body_position(const char *text) {
  const char *c = strchr(text, '(');
  c = c ? strchr(c + 1, ' ') : NULL;    /* after DEFMACRO */
  c = c ? strchr(c + 1, ' ') : NULL;    /* after the name */
  c = c ? strchr(c, '(') : NULL;
  if (!c) return -1;
  int depth = 0, n = 0, in_token = 0;
  for (c++; *c; c++) {
    if (*c == '(') depth++, in_token = 0;
    else if (*c == ')') {
      if (depth-- == 0) return -1;
      in_token = 0;
    } else if (*c == ' ' || *c == '\n' || *c == '\t') {
      in_token = 0;
    } else if (!in_token) {
      in_token = 1;
      if (depth == 0 && !strncasecmp(c, "&body", 5)) return n;
      if (depth == 0) n++;
    }
    if (depth == 1 && *c == '(') n++;  /* a destructuring argument counts once */
  }
  return -1;
}

/* The macros a transaction defined with a &body: Emacs indents their
** bodies as SLIME's own table of macros says (:indentation-update). */
static void indentation_update(Swank *S, json_t *r) {
  json_t *ch = json_object_get(r, "changes"), *c;
  size_t i;
  sxw w;
  sxw_init(&w);
  int any = 0;
  json_array_foreach(ch, i, c) {
    if (strcmp(kclient_str(c, "kind"), "macro") || json_is_true(json_object_get(c, "removed"))) continue;
    json_t *e = skernel_request(S, json_pack("{s:s, s:s, s:s}", "op", "inspect", "kind", "macro", "name",
                                             kclient_str(c, "name")));
    int pos = body_position(kclient_str(json_object_get(e, "entry"), "text"));
    json_decref(e);
    if (pos < 0) continue;
    if (!any) sxw_open(&w), sxw_sym(&w, ":indentation-update"), sxw_open(&w), any = 1;
    const char *name = kclient_str(c, "name"), *colon = strrchr(name, ':');
    char low[512], pkg[256] = "COMMON-LISP-USER";
    if (colon) snprintf(pkg, sizeof pkg, "%.*s", (int)(strchr(name, ':') - name), name);
    snprintf(low, sizeof low, "%s", colon ? colon + 1 : name);
    for (char *q = low; *q; q++) *q = (char)tolower((unsigned char)*q);
    sxw_open(&w), sxw_str(&w, low), sxw_int(&w, pos), sxw_open(&w), sxw_str(&w, pkg), sxw_close(&w), sxw_close(&w);
  }
  if (any) {
    sxw_close(&w), sxw_close(&w);
    sframe_send(S, &w);
  }
  sxw_free(&w);
}

/* An evaluation the editor asked for: a call that pauses on an error. */
static int evaluate(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out, swank_Owner owner) {
  const char *src = sx_str(sx_at(f, 1));
  if (!src || sx_at(f, 1)->type != SX_STRING) {
    swank_set_abort(S, "expected the text to evaluate");
    return RPC_ABORT;
  }
  if (S->levels) {  /* in the debugger: a form is a repair inside the pause */
    json_t *r = skernel_act(S, json_pack("{s:s, s:s}", "type", "evaluate", "source", src));
    return sldb_follow(S, r, owner, id, out);
  }
  char *s = owner == OWNER_LISTENER ? with_history(S, src) : strdup(src);
  if (!s) {
    swank_set_abort(S, "out of memory");
    return RPC_ABORT;
  }
  const char *p = skernel_package(pkg);
  json_t *r = skernel_call(S, s, p ? p : "COMMON-LISP-USER", 1);
  free(s);
  return sldb_follow(S, r, owner, id, out);
}

int seval_listener(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  return evaluate(S, f, pkg, id, out, OWNER_LISTENER);
}

int seval_interactive(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  return evaluate(S, f, pkg, id, out, OWNER_INTERACTIVE);
}

int seval_grab(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  return evaluate(S, f, pkg, id, out, OWNER_GRAB);
}

/* Definitions from the editor, all as one transaction, written at origin
** ({file?, line, column}: they keep their text and place; stolen; NULL:
** none): the reply, or NULL. */
static json_t *define(Swank *S, const char *source, const char *package, json_t *origin) {
  if (!S->gen_known) {
    json_t *st = skernel_request(S, json_pack("{s:s}", "op", "status"));
    skernel_saw(S, st);
    json_decref(st);
  }
  json_t *req = json_pack("{s:s, s:s, s:b, s:s, s:s}", "op", "call", "source", source, "program", 1, "on_error",
                          "fail", "package", package ? package : "COMMON-LISP-USER");
  if (req && S->gen_known) json_object_set_new(req, "generation", json_integer(S->gen));
  if (req && origin) json_object_set(req, "origin", origin);
  json_decref(origin);
  S->asked = S->gen;
  json_t *r = skernel_request(S, req);
  if (r && strcmp(kclient_str(r, "code"), "paused")) skernel_saw(S, r);
  return r;
}

/* (:compilation-result notes successp duration loadp faslfile), with one
** note at the location when the transaction failed. */
static void compilation_result(Swank *S, json_t *r, sxw *o, const char *buffer, int64_t offset,
                               const char *file) {
  int ok = r && json_is_true(json_object_get(r, "ok"));
  sxw_open(o);
  sxw_sym(o, ":compilation-result");
  if (ok) {
    sxw_sym(o, "nil");
  } else {
    char *t = r ? failure_text(S, r) : strdup(S->k.err);
    json_t *d = json_object_get(r, "diagnosis");
    if (t && json_is_object(d)) {  /* an error while the definitions ran: what it said */
      char *u;
      if (asprintf(&u, "%s\n%s", t, kclient_str(d, "backtrace")) >= 0) free(t), t = u;
    }
    sxw_open(o), sxw_open(o);
    sxw_sym(o, ":message"), sxw_str(o, t ? t : "failed");
    sxw_sym(o, ":severity"), sxw_sym(o, ":error");
    sxw_sym(o, ":location"), sxw_open(o), sxw_sym(o, ":location");
    if (buffer) {
      sxw_open(o), sxw_sym(o, ":buffer"), sxw_str(o, buffer), sxw_close(o);
      sxw_open(o), sxw_sym(o, ":offset"), sxw_int(o, offset), sxw_int(o, 0), sxw_close(o);
    } else {
      sxw_open(o), sxw_sym(o, ":file"), sxw_str(o, file), sxw_close(o);
      sxw_open(o), sxw_sym(o, ":position"), sxw_int(o, 1), sxw_close(o);
    }
    sxw_sym(o, "nil"), sxw_close(o);
    sxw_sym(o, ":references"), sxw_sym(o, "nil");
    sxw_sym(o, ":source-context"), sxw_sym(o, "nil");
    sxw_close(o), sxw_close(o);
    free(t);
  }
  sxw_sym(o, ok ? "t" : "nil");
  sxw_raw(o, "0.0");
  sxw_sym(o, "nil"), sxw_sym(o, "nil");
  sxw_close(o);
}

int seval_compile_string(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *src = sx_str(sx_at(f, 1)), *buffer = sx_str(sx_at(f, 2));
  if (!src || !buffer) {
    swank_set_abort(S, "compile-string-for-emacs: expected the text and the buffer's name");
    return RPC_ABORT;
  }
  /* '((:position P) (:line L C)): the form's place in its buffer */
  sx *pos = sx_at(f, 3);
  if (sx_is(sx_at(pos, 0), "quote")) pos = sx_at(pos, 1);
  int64_t offset = 1, line = 0, column = 0;
  for (size_t i = 0; pos && pos->type == SX_LIST && i < pos->len; i++) {
    const sx *p = pos->items[i], *a = sx_at(p, 1), *b = sx_at(p, 2);
    if (sx_is(sx_at(p, 0), ":position") && a && a->type == SX_INT) offset = a->num;
    if (sx_is(sx_at(p, 0), ":line") && a && a->type == SX_INT && a->num > 0 && a->num < INT32_MAX) {
      line = a->num;
      column = b && b->type == SX_INT && b->num >= 0 && b->num < INT32_MAX ? b->num + 1 : 1;   /* SLIME's from 0 */
    }
  }
  /* where the form is written: its buffer's file (when it visits one), the
  ** line and column SLIME gives — the definition keeps its text there */
  const char *file = sx_at(f, 4) && sx_at(f, 4)->type == SX_STRING ? sx_str(sx_at(f, 4)) : NULL;
  json_t *origin = NULL;
  if (line) {
    origin = json_pack("{s:I, s:I}", "line", (json_int_t)line, "column", (json_int_t)column);
    if (origin && file && *file) json_object_set_new(origin, "file", json_string(file));
  }
  json_t *r = define(S, src, skernel_package(pkg), origin);
  if (r && !strcmp(kclient_str(r, "code"), "paused")) sldb_attach(S);
  compilation_result(S, r, out, buffer, offset, NULL);
  if (r && json_is_true(json_object_get(r, "ok"))) indentation_update(S, r);
  if (r && *kclient_str(r, "output")) sframe_write_string(S, kclient_str(r, "output"), 0);
  json_decref(r);
  return RPC_OK;
}

/* A whole file as one transaction. */
static json_t *define_file(Swank *S, const char *file) {
  size_t n;
  char *text = opts_read_file(file, &n);
  if (!text) {
    snprintf(S->k.err, sizeof S->k.err, "cannot read %s", file);
    return NULL;
  }
  json_t *r = define(S, text, NULL, json_pack("{s:s, s:i, s:i}", "file", file, "line", 1, "column", 1));
  free(text);
  return r;
}

int seval_compile_file(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg, (void)id;
  const char *file = sx_str(sx_at(f, 1));
  if (!file) {
    swank_set_abort(S, "compile-file-for-emacs: expected a file name");
    return RPC_ABORT;
  }
  json_t *r = define_file(S, file);
  compilation_result(S, r, out, NULL, 1, file);
  if (r && json_is_true(json_object_get(r, "ok"))) indentation_update(S, r);
  json_decref(r);
  return RPC_OK;
}

int seval_load_file(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)pkg, (void)id;
  const char *file = sx_str(sx_at(f, 1));
  if (!file) {
    swank_set_abort(S, "load-file: expected a file name");
    return RPC_ABORT;
  }
  json_t *r = define_file(S, file);
  if (r && json_is_true(json_object_get(r, "ok"))) {
    indentation_update(S, r);
    json_decref(r);
    sxw_sym(out, "t");
    return RPC_OK;
  }
  char *t = r ? failure_text(S, r) : strdup(S->k.err);
  swank_set_abort(S, "%s", t ? t : "failed");
  free(t);
  json_decref(r);
  return RPC_ABORT;
}
