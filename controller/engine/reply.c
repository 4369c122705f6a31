/*
** reply.c — a transaction's reply (engine.h, docs/protocol.md
** "Transactions"), the same from the kernel and from an offline change:
** written once, as text, member by member; its object, where one is
** wanted, is that text parsed.
*/
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"
#include "jtext.h"
#include "txn.h"

void reply_write(jtext_writer *w, const reply_Outcome *o) {
  const char *reason = o->reason ? o->reason : txn_reason_name(TXN_ERROR);
  int accepted = txn_reason_parse(reason) == TXN_ACCEPTED;
  jtext_begin(w, '{');
  jtext_key(w, "ok");
  jtext_bool(w, accepted);
  if (accepted) {
    jtext_key(w, "outcome");
    jtext_string(w, reason, strlen(reason));
    jtext_key(w, "revision");
    jtext_int(w, (json_int_t)o->revision);
    if (o->target) jtext_key(w, "target"), jtext_int(w, (json_int_t)o->target);
    jtext_key(w, "changes");
    if (o->changes && o->effects) publish_effects_write(w, o->changes, o->slot, o->effects);
    else if (o->changes) jtext_json(w, o->changes);
    else jtext_begin(w, '['), jtext_end(w, ']');
    if (o->value) jtext_key(w, "value"), jtext_json(w, o->value);
    if (o->values) jtext_key(w, "values"), jtext_json(w, o->values);
    if (o->restored) jtext_key(w, "restored"), jtext_bool(w, 1);
    jtext_key(w, "generation");
    jtext_int(w, (json_int_t)o->generation);
  } else {
    const char *msg = o->message ? o->message : "";
    jtext_key(w, "code");
    jtext_string(w, reason, strlen(reason));
    jtext_key(w, "outcome");
    jtext_string(w, reason, strlen(reason));
    jtext_key(w, "message");
    jtext_string(w, msg, strlen(msg));
    if (o->diagnosis) jtext_key(w, "diagnosis"), jtext_json(w, o->diagnosis);
    if (o->incident) jtext_key(w, "incident"), jtext_json(w, o->incident);
    jtext_key(w, "generation");
    jtext_int(w, (json_int_t)o->generation);
    if (o->show_revision) jtext_key(w, "revision"), jtext_int(w, (json_int_t)o->revision);
  }
  if (o->output) jtext_key(w, "output"), jtext_json(w, o->output);
  if (o->repair) jtext_key(w, "repair"), jtext_json(w, o->repair);
}

json_t *reply_object(const reply_Outcome *o) {
  jtext_writer w = {0};
  reply_write(&w, o);
  jtext_end(&w, '}');
  json_t *r = w.failed ? NULL : jtext_load(w.buf, w.len, 0, NULL);
  free(w.buf);
  return r;
}
