/*
** mscripted.c — the scripted model: canned actions from a file, offline
** (model.h).
**
** The file holds one JSON object per line, each an action as the
** structured output's "action" member would hold it, e.g.
**   {"type":"evaluate","source":"(defun f (x) (* 2 x))"}
** optionally with "generation": N, which pins the generation the action
** is sent with (to replay a stale proposal) instead of the view's.  Blank
** lines and lines starting with "#" are skipped.  Each turn takes the next
** line and passes it through the same validation as a real model's answer
** (a line that is not valid is an invalid response, told to the session
** like any other); after the last line the model is exhausted.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_int.h"

typedef struct Script {
  char *path;
  char **lines;
  int *line_no;
  int n, next;
} Script;

static void scripted_close(model *m) {
  Script *s = m->priv;
  if (!s) return;
  for (int i = 0; i < s->n; i++) free(s->lines[i]);
  free(s->lines);
  free(s->line_no);
  free(s->path);
  free(s);
}

static model_Status scripted_next(model *m, const model_Conv *c, model_Reply *r) {
  Script *s = m->priv;
  (void)c;
  if (s->next >= s->n) {
    model_fail(m, r, MODEL_EXHAUSTED, "exhausted", "the script %s has no more actions", s->path);
    return r->status;
  }
  int i = s->next++;
  const char *line = s->lines[i];
  model_record_response(m, r, line, strlen(line));
  char what[600];
  snprintf(what, sizeof what, "line %d of %.512s", s->line_no[i], s->path);
  json_error_t je;
  json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &je);
  json_t *g = json_object_get(j, "generation");
  if (json_is_integer(g) && json_integer_value(g) >= 0) {
    r->pinned_generation = json_integer_value(g);
    json_object_del(j, "generation");
  }
  /* the hints speak of the script's own format, one action object a line */
  if (!j) {
    model_fail(m, r, MODEL_INVALID, "invalid-json", "%s is not one JSON value (%s at character %d); write one "
               "action a line, e.g. {\"type\": \"evaluate\", \"source\": \"(+ 1 2)\"}", what, je.text, je.position);
  } else if (!json_is_object(j)) {
    model_fail(m, r, MODEL_INVALID, "invalid-action", "%s is not a JSON object; write one action a line, e.g. "
               "{\"type\": \"evaluate\", \"source\": \"(+ 1 2)\"}", what);
  } else {
    /* the line is the action: validate it as the structured output {"action": line} */
    json_t *wrapped = json_pack("{s:O}", "action", j);
    char *text = json_dumps(wrapped, JSON_COMPACT);
    model_accept_text(m, r, text ? text : "", what);
    free(text);
    json_decref(wrapped);
  }
  json_decref(j);
  if (r->status == MODEL_OK) model_add_text(r, line, strlen(line));
  else r->text = strdup(line);
  return r->status;
}

const model_Class model_scripted_class = {"scripted", scripted_next, scripted_close};

model *model_scripted_open(const char *path, const model_Options *o, char *err, size_t errlen) {
  FILE *f = fopen(path, "re");
  if (!f) {
    snprintf(err, errlen, "cannot read the script %s: %s", path, strerror(errno));
    return NULL;
  }
  model *m = calloc(1, sizeof *m);
  Script *s = calloc(1, sizeof *s);
  if (!m || !s) goto nomem;
  m->cls = &model_scripted_class;
  m->opt = *o;
  m->priv = s;
  s->path = strdup(path);
  m->name = strdup(path);
  if (!s->path || !m->name) goto nomem;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  int no = 0, cap_lines = 0;
  while ((got = getline(&line, &cap, f)) >= 0) {
    no++;
    while (got && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
    const char *p = line + strspn(line, " \t");
    if (!*p || *p == '#') continue;
    if (s->n == cap_lines) {
      cap_lines = cap_lines ? cap_lines * 2 : 16;
      char **nl = realloc(s->lines, (size_t)cap_lines * sizeof *nl);
      int *nn = realloc(s->line_no, (size_t)cap_lines * sizeof *nn);
      if (nl) s->lines = nl;
      if (nn) s->line_no = nn;
      if (!nl || !nn) {
        free(line);
        goto nomem;
      }
    }
    s->lines[s->n] = strdup(p);
    s->line_no[s->n] = no;
    if (!s->lines[s->n]) {
      free(line);
      goto nomem;
    }
    s->n++;
  }
  free(line);
  fclose(f);
  f = NULL;
  snprintf(m->describe, sizeof m->describe, "scripted %s (%d action%s)", path, s->n, s->n == 1 ? "" : "s");
  return m;
nomem:
  if (f) fclose(f);
  snprintf(err, errlen, "out of memory reading the script %s", path);
  if (m) {
    m->priv = s;
    m->cls = &model_scripted_class;
    model_close(m);
  } else {
    free(s);
  }
  return NULL;
}
