/*
** wframe.c — the frames a controller sends a worker after its start-up
** (workerproc.h, docs/worker-frames.md): the one builder of each shape,
** used by the kernel and the offline changes alike, and the one
** publish-then-commit-or-restore step.  (A request's own frame is
** engine.h's request_frame; the start-up frames are workerproc.c's.)
*/
#include <stdlib.h>
#include <jansson.h>
#include "workerproc.h"

json_t *wframe_commit(uint64_t revision, size_t count, const size_t *unchanged, size_t nunchanged) {
  json_t *u = json_array();
  for (size_t i = 0; u && i < nunchanged; i++) json_array_append_new(u, json_integer((json_int_t)unchanged[i]));
  if (!u) return NULL;
  return json_pack("{s:s, s:I, s:I, s:o}", "op", wire_op_name(WIRE_COMMIT), "revision", (json_int_t)revision,
                   "count", (json_int_t)count, "unchanged", u);
}

json_t *wframe_restore(void) { return json_pack("{s:s}", "op", wire_op_name(WIRE_RESTORE)); }

json_t *wframe_exit(void) { return json_pack("{s:s}", "op", wire_op_name(WIRE_EXIT)); }

json_t *wframe_shadow(uint32_t id, const char *definitions, const char *repro, const char *const *replay,
                      size_t n, const jiti_Limits *limits) {
  json_t *r = json_array();
  for (size_t i = 0; r && i < n; i++) json_array_append_new(r, json_string(replay[i]));
  json_t *m = r ? json_pack("{s:s, s:I, s:s, s:o, s:o}", "op", wire_op_name(WIRE_SHADOW), "id", (json_int_t)id,
                            "definitions", definitions, "replay", r, "limits", limits_json(limits))
                : NULL;
  if (m && repro) json_object_set_new(m, "repro", json_string(repro));
  return m;
}

json_t *wframe_command(const char *type, json_t *generation, json_t *action) {
  static const char *const members[] = {"source", "restart_id", "arguments", "package", "frame", "origin"};
  json_t *m = json_pack("{s:s, s:s, s:O}", "op", wire_op_name(WIRE_COMMAND), "type", type, "generation", generation);
  for (size_t i = 0; m && action && i < sizeof members / sizeof members[0]; i++) {
    json_t *v = json_object_get(action, members[i]);
    if (v) json_object_set(m, members[i], v);
  }
  return m;
}

json_t *wproc_publish(store_env *s, uint64_t parent, const store_rev_info *info, json_t *changes,
                      const unsigned char *blob, size_t bloblen, json_t *const *events, const int64_t *times,
                      size_t nevents, json_t *accepted, uint64_t incident, int tentative, publish_Result *pr) {
  publish_outcome(s, parent, info, changes, blob, bloblen, events, times, nevents, accepted, incident, tentative,
                  pr);
  if (pr->code != STORE_OK) return wframe_restore();
  size_t first = 0;
  return wframe_commit(pr->revision, 1, &first, pr->changed ? 0 : 1);
}
