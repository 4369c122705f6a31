/*
** skernel.c — `jiti swank`'s requests to the kernel (kclient.h): one at a
** time on one connection, reading the editor while the kernel works, so
** that C-c C-c (:emacs-interrupt) reaches a running call.  The editor's
** generation is the one its last evaluation or compilation saw.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "swank_int.h"
#include "proto.h"

/* The editor interrupts: the running call pauses (or, when it cannot, is
** cancelled); its reply says how it ended. */
static void interrupt_running(Swank *S) {
  if (!S->running_key[0]) return;
  char err[600];
  const char *op;
  json_t *r = kclient_stop_keyed(S->dir, S->running_key, &op, err, sizeof err);
  if (!r) swank_log("cannot interrupt the running call: %s", err);
  else if (!json_is_true(json_object_get(r, "ok")))
    swank_log("interrupt: %s: %s", kclient_str(r, "code"), kclient_str(r, "message"));
  json_decref(r);
}

static void cancel_running(Swank *S) {
  if (!S->running_key[0]) return;
  char err[600];
  json_t *r = kclient_once(S->dir, json_pack("{s:s, s:s}", "op", "cancel", "key", S->running_key), err, sizeof err);
  if (!r) swank_log("cannot cancel the running call: %s", err);
  json_decref(r);
}

/* Messages read while waiting: interrupts now, the rest in order later. */
static void take_interrupts(Swank *S) {
  for (size_t i = 0; i < S->nq;) {
    sx *m = S->queue[i];
    if (sx_is(sx_at(m, 0), ":emacs-interrupt")) {
      memmove(S->queue + i, S->queue + i + 1, (S->nq - i - 1) * sizeof *S->queue);
      S->nq--;
      sx_free(m);
      interrupt_running(S);
    } else {
      i++;
    }
  }
}

static int connect_kernel(Swank *S) {
  if (kclient_alive(&S->k)) return 1;
  if (kclient_connect(&S->k)) return 0;
  json_t *rep;
  if (kclient_call(&S->k, json_pack("{s:s, s:i, s:s}", "op", "hello", "protocol", PROTO_VERSION, "client", "jiti swank"),
                   &rep, NULL) != KCLIENT_OK)
    return 0;
  int ok = json_is_true(json_object_get(rep, "ok"));
  if (!ok) snprintf(S->k.err, sizeof S->k.err, "the kernel refused: %s", kclient_str(rep, "message"));
  json_decref(rep);
  return ok;
}

json_t *skernel_request(Swank *S, json_t *req) {
  if (!req) {
    snprintf(S->k.err, sizeof S->k.err, "cannot encode the request (is the text valid UTF-8?)");
    return NULL;
  }
  if (!connect_kernel(S)) {
    json_decref(req);
    return NULL;
  }
  if (kclient_send(&S->k, req) != KCLIENT_OK) return NULL;
  for (;;) {
    json_t *rep = NULL;
    int rc = kclient_await_fd(&S->k, S->fd, &rep);
    if (rc == KCLIENT_OK) return rep;
    if (rc != KCLIENT_READABLE) return NULL;
    if (sframe_pump(S) < 0) {
      /* the editor left: a running call of its own is cancelled (not
      ** paused: nobody is left to answer); wait for the kernel's word */
      cancel_running(S);
      int r2 = kclient_await(&S->k, &rep, NULL);
      return r2 == KCLIENT_OK ? rep : NULL;
    }
    take_interrupts(S);
  }
}

void skernel_saw(Swank *S, json_t *reply) {
  json_t *g = json_object_get(reply, "generation");
  if (json_is_integer(g)) S->gen = json_integer_value(g), S->gen_known = 1;
}

json_t *skernel_call(Swank *S, const char *source, const char *package, int pausable) {
  if (!S->gen_known) {  /* the first request: the editor sees the world as it is now */
    json_t *st = skernel_request(S, json_pack("{s:s}", "op", "status"));
    skernel_saw(S, st);
    json_decref(st);
  }
  json_t *req = json_pack("{s:s, s:s, s:s, s:s}", "op", "call", "source", source, "on_error",
                          pausable ? "pause" : "fail", "on_disconnect", "cancel");
  if (!req) return skernel_request(S, NULL);
  if (S->gen_known) json_object_set_new(req, "generation", json_integer(S->gen));
  S->asked = S->gen;
  if (package) json_object_set_new(req, "package", json_string(package));
  kclient_fresh_key(S->running_key);
  json_object_set_new(req, "key", json_string(S->running_key));
  json_t *r = skernel_request(S, req);
  S->running_key[0] = 0;
  if (r && strcmp(kclient_str(r, "code"), "paused")) skernel_saw(S, r);
  return r;
}

json_t *skernel_act(Swank *S, json_t *action) {
  json_int_t gen = S->pause ? kclient_int(S->pause, "generation") : S->gen;
  json_t *req = json_pack("{s:s, s:I, s:o}", "op", "act", "generation", gen, "action", action);
  kclient_fresh_key(S->running_key);
  if (req) json_object_set_new(req, "key", json_string(S->running_key));
  json_t *r = skernel_request(S, req);
  S->running_key[0] = 0;
  if (r && json_object_get(r, "generation")) skernel_saw(S, r);
  return r;
}

sx *skernel_helper(Swank *S, const char *source, const char *package) {
  json_t *req = json_pack("{s:s, s:s, s:s}", "op", "call", "source", source, "on_error", "fail");
  if (req && package) json_object_set_new(req, "package", json_string(package));
  json_t *r = skernel_request(S, req);
  if (r && !json_is_true(json_object_get(r, "ok")) && package &&
      !strcmp(kclient_str(r, "code"), "invalid-arguments")) {  /* a package the world lacks */
    json_decref(r);
    r = skernel_request(S, json_pack("{s:s, s:s, s:s}", "op", "call", "source", source, "on_error", "fail"));
  }
  sx *x = NULL;
  if (r && json_is_true(json_object_get(r, "ok"))) {
    const char *v = kclient_str(r, "value");
    char err[256];
    x = sx_read(v, strlen(v), err, sizeof err);
    if (!x) swank_log("a helper's value did not read (%s): %.200s", err, v);
  } else if (r && strcmp(kclient_str(r, "code"), "paused")) {
    swank_log("a helper failed: %s: %.300s", kclient_str(r, "code"), kclient_str(r, "message"));
  }
  json_decref(r);
  return x;
}

char *skernel_lisp_string(const char *s) {
  size_t n = strlen(s), k = 0;
  char *o = malloc(2 * n + 3);
  if (!o) return NULL;
  o[k++] = '"';
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"' || s[i] == '\\') o[k++] = '\\';
    o[k++] = s[i];
  }
  o[k++] = '"';
  o[k] = 0;
  return o;
}

const char *skernel_package(const sx *pkg) {
  const char *p = sx_str(pkg);
  if (!p || sx_nil(pkg) || !*p) return NULL;
  return p;
}
