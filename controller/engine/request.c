/*
** request.c — a client request (docs/protocol.md) as the engine runs it
** (engine.h): the worker frame that starts it, the summary of the revision
** it makes, its source cut for events and logs.  The kernel and the offline
** commands both build a protocol request and hand it here, so a change is
** the same frame, summary and records whichever of them runs it.
*/
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"
#include "jtext.h"
#include "txn.h"
#include "wire.h"

const char *request_source(json_t *req) {
  json_t *src = json_object_get(req, "source");
  if (!src) src = json_object_get(json_object_get(req, "action"), "source");
  return json_is_string(src) ? json_string_value(src) : "";
}

int request_pausable(proto_Op op, json_t *req) {
  if (op == PROTO_ACT) return 1;
  const char *on_error = json_string_value(json_object_get(req, "on_error"));
  return op == PROTO_CALL && on_error && !strcmp(on_error, "pause");
}

void request_snippet(const char *s, char *buf, size_t n) {
  size_t j = 0;
  for (size_t i = 0; s && s[i] && j + 4 < n; i++) buf[j++] = (s[i] == '\n' || s[i] == '\t') ? ' ' : s[i];
  if (s && strlen(s) > j) { buf[j++] = '.'; buf[j++] = '.'; buf[j++] = '.'; }
  buf[j] = 0;
}

void request_frame_write(jtext_writer *w, proto_Op op, json_t *req, int with_gen, uint64_t generation, int note) {
  const char *src = request_source(req);
  int invariant = op == PROTO_INVARIANT_ADD || op == PROTO_INVARIANT_REMOVE;
  txn_Kind kind = op == PROTO_CALL ? TXN_APPLICATION : op == PROTO_PREVIEW ? TXN_PREVIEW
                : op == PROTO_APPLY || op == PROTO_REPAIR ? TXN_OPERATOR : TXN_ACTION;
  jtext_begin(w, '{');
  jtext_key(w, "op");
  if (invariant) {
    const char *action = op == PROTO_INVARIANT_ADD ? "add" : "remove";
    json_t *name = json_object_get(req, "name");
    jtext_string(w, wire_op_name(WIRE_INVARIANT), strlen(wire_op_name(WIRE_INVARIANT)));
    jtext_key(w, "action");
    jtext_string(w, action, strlen(action));
    jtext_key(w, "name");
    if (name) jtext_json(w, name);
    else w->failed = 1;   /* checked by the caller: as json_pack's "O" would */
  } else {
    jtext_string(w, wire_op_name(WIRE_ATTEMPT), strlen(wire_op_name(WIRE_ATTEMPT)));
    jtext_key(w, "kind");
    jtext_string(w, txn_kind_name(kind), strlen(txn_kind_name(kind)));
  }
  jtext_key(w, "source");
  jtext_string(w, src, strlen(src));
  if (!invariant) {
    jtext_key(w, "pausable");
    jtext_bool(w, request_pausable(op, req));
    jtext_key(w, "program");
    jtext_bool(w, op == PROTO_APPLY || op == PROTO_REPAIR || json_is_true(json_object_get(req, "program")));
    if (json_is_true(json_object_get(req, "listening"))) jtext_key(w, "listening"), jtext_bool(w, 1);
    /* the package the source is read in: the request's, or its action's */
    json_t *pkg = json_object_get(req, "package");
    if (!pkg) pkg = json_object_get(json_object_get(req, "action"), "package");
    if (json_is_string(pkg)) jtext_key(w, "package"), jtext_json(w, pkg);
    /* where the source was written: the request's, or its action's */
    json_t *origin = json_object_get(req, "origin");
    if (!origin) origin = json_object_get(json_object_get(req, "action"), "origin");
    if (json_is_object(origin)) jtext_key(w, "origin"), jtext_json(w, origin);
    /* a model's change keeps its definitions canonical: an act that does
    ** not say where its source was written, a repair */
    if ((op == PROTO_ACT && !origin) || op == PROTO_REPAIR) jtext_key(w, "canonical"), jtext_bool(w, 1);
  }
  json_t *lim = json_object_get(req, "limits");  /* complete: checked by the caller */
  if (lim) jtext_key(w, "limits"), jtext_json(w, lim);
  if (with_gen) jtext_key(w, "generation"), jtext_int(w, (json_int_t)generation);
  if ((note & REQUEST_NOTE_CALL) && op == PROTO_CALL) jtext_key(w, "note"), jtext_bool(w, 1);
  if ((note & REQUEST_NOTE_READS) && op == PROTO_CALL) jtext_key(w, "reads"), jtext_bool(w, 1);
  if ((note & REQUEST_NOTE_PARK) && op == PROTO_CALL) jtext_key(w, "park"), jtext_bool(w, 1);
  jtext_end(w, '}');
}

json_t *request_frame(proto_Op op, json_t *req, int with_gen, uint64_t generation) {
  jtext_writer w = {0};
  request_frame_write(&w, op, req, with_gen, generation, 0);
  json_t *m = w.failed ? NULL : jtext_load(w.buf, w.len, 0, NULL);
  free(w.buf);
  return m;
}

void request_summary(proto_Op op, json_t *req, char *buf, size_t n) {
  char brief[160];
  request_snippet(request_source(req), brief, sizeof brief);
  const char *given = json_string_value(json_object_get(req, "summary"));
  if (given) {
    snprintf(buf, n, "%s", given);
  } else if (op == PROTO_INVARIANT_ADD || op == PROTO_INVARIANT_REMOVE) {
    int add = op == PROTO_INVARIANT_ADD;
    const char *name = json_string_value(json_object_get(req, "name"));
    snprintf(buf, n, "%s %s%s%s", proto_op_name(op), name ? name : "", add ? ": " : "",
             add ? brief : "");
  } else if (op == PROTO_ROLLBACK) {
    snprintf(buf, n, "rollback to revision %" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(req, "revision")));
  } else {
    snprintf(buf, n, "%s: %s", proto_op_name(op), brief);
  }
}

void request_brief(proto_Op op, json_t *req, char *buf, size_t n) {
  const char *src = request_source(req);
  if (*src) request_snippet(src, buf, n);
  else request_summary(op, req, buf, n);
}

int request_digest(json_t *req, char hex[65]) {
  json_t *c = json_copy(req);   /* shallow: the members are shared, not changed */
  if (!c) return -1;
  json_object_del(c, "id");
  json_object_del(c, "key");
  json_object_del(c, "wait");
  char *text = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  json_decref(c);
  uint8_t d[32];
  int r = text && store_digest(text, strlen(text), d) == STORE_OK ? 0 : -1;
  free(text);
  if (r == 0) store_hash_hex(d, hex);
  return r;
}
