/*
** proto.c — the client protocol's vocabulary and small helpers, shared by
** the kernel daemon and its clients (proto.h).
*/
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include "proto.h"

static const char *const op_names[PROTO_OP_COUNT] = {
  "hello", "status", "observe", "inspect", "history", "subscribe", "call", "preview", "act", "apply",
  "invariant-add", "invariant-remove", "invariant-list", "rollback", "record", "shutdown", "cancel", "interrupt",
  "repair-policy", "verify", "incident", "incidents", "repair", "heal", "repairs", "complete"};

const char *proto_op_name(proto_Op op) { return (unsigned)op < PROTO_OP_COUNT ? op_names[op] : "?"; }

int proto_op_parse(const char *s) {
  for (int i = 0; s && i < PROTO_OP_COUNT; i++)
    if (!strcmp(s, op_names[i])) return i;
  return -1;
}

static const char *const code_names[PROTO_CODE_COUNT] = {
  "malformed-json", "invalid-utf8", "line-too-long", "invalid-request", "unknown-op", "not-found", "not-allowed",
  "store-error", "unsupported-protocol", "not-paused", "paused", "busy", "shutting-down", "interrupted",
  "key-conflict", "not-running", "not-pausable", "timeout", "conflict", "stale", "rejected", "standby"};

const char *proto_code_name(proto_Code c) { return (unsigned)c < PROTO_CODE_COUNT ? code_names[c] : "?"; }

int proto_socket_path(const char *dir, char *buf, size_t len) {
  struct sockaddr_un a;
  int n = snprintf(buf, len, "%s/%s", dir, PROTO_SOCKET);
  if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof a.sun_path) return -1;
  return 0;
}
