/*
** mconv.c — conversations with a model, independent of the wire format:
** each client renders the messages its own way (model.h, model_int.h).
*/
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

#define NOT_EXECUTED "Not executed: only one action per response is run."

model_Conv *model_conv_new(const char *instructions) {
  model_Conv *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->instructions = strdup(instructions ? instructions : "");
  if (!c->instructions) {
    free(c);
    return NULL;
  }
  return c;
}

static void msg_free(model_Msg *m) {
  free(m->text);
  free(m->call_id);
  free(m->name);
}

void model_conv_free(model_Conv *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) msg_free(&c->v[i]);
  free(c->v);
  free(c->instructions);
  free(c);
}

/* Append a message (strings copied, NULL kept NULL); -1 when out of memory. */
static int add(model_Conv *c, model_Role role, const char *text, const char *call_id, const char *name) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    model_Msg *v = realloc(c->v, cap * sizeof *v);
    if (!v) return -1;
    c->v = v;
    c->cap = cap;
  }
  model_Msg *m = &c->v[c->n];
  m->role = role;
  m->step = c->step;
  m->text = strdup(text ? text : "");
  m->call_id = call_id ? strdup(call_id) : NULL;
  m->name = name ? strdup(name) : NULL;
  if (!m->text || (call_id && !m->call_id) || (name && !m->name)) {
    msg_free(m);
    return -1;
  }
  c->n++;
  return 0;
}

int model_conv_user(model_Conv *c, const char *text) { return add(c, MSG_USER, text, NULL, NULL); }

int model_conv_reply(model_Conv *c, const model_Reply *r) {
  c->step++;
  c->has_open = 0;
  if (r->ncalls) {
    c->open_calls = c->n;
    c->has_open = 1;
    for (int i = 0; i < r->ncalls; i++)
      if (add(c, MSG_CALL, r->calls[i].arguments, r->calls[i].call_id, r->calls[i].name)) return -1;
    return 0;
  }
  if (r->text && *r->text) return add(c, MSG_TEXT, r->text, NULL, NULL);
  return 0;
}

int model_conv_result(model_Conv *c, const char *text) {
  if (!c->has_open) return model_conv_user(c, text);
  c->has_open = 0;
  size_t end = c->n;
  int first = 1;
  for (size_t i = c->open_calls; i < end; i++) {
    if (c->v[i].role != MSG_CALL) continue;
    /* copy the id first: add() may move the array */
    char *id = strdup(c->v[i].call_id ? c->v[i].call_id : "");
    if (!id || add(c, MSG_OUTPUT, first ? text : NOT_EXECUTED, id, NULL)) {
      free(id);
      return -1;
    }
    free(id);
    first = 0;
  }
  return 0;
}

int model_conv_steps(const model_Conv *c) { return c->step; }

size_t model_conv_chars(const model_Conv *c) {
  size_t n = strlen(c->instructions);
  for (size_t i = 0; i < c->n; i++) n += strlen(c->v[i].text) + (c->v[i].name ? strlen(c->v[i].name) : 0);
  return n;
}

int model_conv_compact(model_Conv *c, int keep, const char *summary) {
  if (keep < 0) keep = 0;
  int last_dropped = c->step - keep;   /* steps 1 .. last_dropped go */
  if (last_dropped < 1) return 0;
  /* the summary joins step 0 right after its messages */
  size_t at = 0;
  while (at < c->n && c->v[at].step == 0) at++;
  model_Msg s = {.role = MSG_USER, .step = 0, .text = strdup(summary ? summary : "")};
  if (!s.text) return -1;
  size_t o = at;
  int placed = 0;
  for (size_t i = at; i < c->n; i++) {
    if (c->v[i].step >= 1 && c->v[i].step <= last_dropped) {
      msg_free(&c->v[i]);
      if (!placed) c->v[o++] = s, placed = 1;
      continue;
    }
    c->v[o++] = c->v[i];
  }
  if (!placed) { /* cannot happen: some step was dropped; keep s anyway */
    free(s.text);
  }
  c->n = o;
  if (c->has_open) {   /* the open calls belong to the last step, which stays */
    for (size_t i = 0; i < c->n; i++)
      if (c->v[i].role == MSG_CALL && c->v[i].step == c->step) {
        c->open_calls = i;
        break;
      }
  }
  return 0;
}
