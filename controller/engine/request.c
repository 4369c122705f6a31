/*
** request.c — a client request (docs/protocol.md) as the engine runs it
** (engine.h): the worker frame that starts it, the summary of the revision
** it makes, its source cut for events and logs.  The kernel and the offline
** commands both build a protocol request and hand it here, so a change is
** the same frame, summary and records whichever of them runs it.
*/
#include <string.h>
#include <jansson.h>
#include "engine.h"
#include "txn.h"
#include "worker.h"

const char *request_source(json_t *req) {
  json_t *src = json_object_get(req, "source");
  if (!src) src = json_object_get(json_object_get(req, "action"), "source");
  return json_is_string(src) ? json_string_value(src) : "";
}

void request_snippet(const char *s, char *buf, size_t n) {
  size_t j = 0;
  for (size_t i = 0; s && s[i] && j + 4 < n; i++) buf[j++] = (s[i] == '\n' || s[i] == '\t') ? ' ' : s[i];
  if (s && strlen(s) > j) { buf[j++] = '.'; buf[j++] = '.'; buf[j++] = '.'; }
  buf[j] = 0;
}

json_t *request_frame(proto_Op op, json_t *req, int with_gen, uint64_t generation) {
  json_t *m;
  if (op == PROTO_INVARIANT_ADD || op == PROTO_INVARIANT_REMOVE) {
    m = json_pack("{s:s, s:s, s:O, s:s}", "op", wire_op_name(WIRE_INVARIANT), "action",
                  op == PROTO_INVARIANT_ADD ? "add" : "remove", "name", json_object_get(req, "name"),
                  "source", request_source(req));
  } else {
    txn_Kind kind = op == PROTO_CALL ? TXN_APPLICATION : op == PROTO_PREVIEW ? TXN_PREVIEW
                  : op == PROTO_APPLY ? TXN_OPERATOR : TXN_ACTION;
    int program = op == PROTO_APPLY || json_is_true(json_object_get(req, "program"));
    m = json_pack("{s:s, s:s, s:s, s:b, s:b}", "op", wire_op_name(WIRE_ATTEMPT), "kind", txn_kind_name(kind),
                  "source", request_source(req), "pausable", kind == TXN_ACTION, "program", program);
    /* the package the source is read in: the request's, or its action's */
    json_t *pkg = json_object_get(req, "package");
    if (!pkg) pkg = json_object_get(json_object_get(req, "action"), "package");
    if (m && json_is_string(pkg)) json_object_set(m, "package", pkg);
  }
  if (!m) return NULL;
  json_t *lim = json_object_get(req, "limits");  /* complete: checked by the caller */
  if (lim) json_object_set(m, "limits", lim);
  if (with_gen) json_object_set_new(m, "generation", json_integer((json_int_t)generation));
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
