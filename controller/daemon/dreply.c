/*
** dreply.c — the replies (daemon.h): between those that answer a request
** (drequests.c, dsched.c, dcall.c, dgroup.c, dkeys.c) and the connections
** (dclients.c, which only moves bytes).  Every reply passes here, and so
** this file owns what must hold for all of them: a keyed request's reply is
** recorded under its key (dkeys.c) even when its client has left, and no
** reply leaves before the store has recorded the generation it may carry
** (the durability gate).  A reply is given as an object, or written as
** text on the hot path (the members of an object, still open, the id added
** here).
*/
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include "daemon.h"
#include "jtext.h"

/* The client a reply goes to, NULL when it left.  A generation reaches a
** client only once the store has recorded it (devents_flush), so that no
** kernel started later can hand it out again: the durability gate. */
static Client *replying_to(Daemon *D, uint64_t serial) {
  Client *c = dclients_find(D, serial);
  if (!c || c->closing == 2) return NULL;
  if (D->gen > D->gen_saved) devents_flush(D);
  return c;
}

/* Send a reply (stolen) to a client, adding its id. */
void dreply(Daemon *D, uint64_t serial, json_t *id, json_t *msg) {
  dkeys_replied(D, serial, id, msg);  /* recorded even when its client left */
  Client *c = replying_to(D, serial);
  if (!c) { json_decref(msg); return; }
  if (id) json_object_set(msg, "id", id);
  char *text = NULL;   /* json_dumps' text, written faster (jtext.h) */
  size_t len = 0, cap = 0;
  int rc = jtext_append(msg, 0, &text, &len, &cap);
  json_decref(msg);
  if (rc == 0) dclients_line(c, text, len);
  free(text);
}

void dreply_text(Daemon *D, uint64_t serial, json_t *id, jtext_writer *w) {
  if (w->failed || dkeys_awaits(D, serial, id)) {   /* as an object: recorded, or told it failed */
    jtext_end(w, '}');
    json_t *msg = w->failed ? NULL : jtext_load(w->buf, w->len, 0, NULL);
    free(w->buf);
    if (msg) dreply(D, serial, id, msg);
    else dreply_err(D, serial, id, "busy", "the kernel is out of memory; retry later");
    return;
  }
  Client *c = replying_to(D, serial);
  if (c) {
    if (id) {
      jtext_key(w, "id");
      jtext_json(w, id);
    }
    jtext_end(w, '}');
    if (!w->failed) dclients_line(c, w->buf, w->len);
  }
  free(w->buf);
}

void dreply_err(Daemon *D, uint64_t serial, json_t *id, const char *code, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dreply(D, serial, id, json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "message", msg));
}

