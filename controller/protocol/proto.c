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
  "invariant-add", "invariant-remove", "invariant-list", "rollback", "record", "shutdown"};

const char *proto_op_name(proto_Op op) { return (unsigned)op < PROTO_OP_COUNT ? op_names[op] : "?"; }

int proto_op_parse(const char *s) {
  for (int i = 0; s && i < PROTO_OP_COUNT; i++)
    if (!strcmp(s, op_names[i])) return i;
  return -1;
}

static const char *const code_names[PROTO_CODE_COUNT] = {
  "malformed-json", "invalid-utf8", "line-too-long", "invalid-request", "unknown-op", "not-found", "not-allowed",
  "store-error", "unsupported-protocol", "not-paused", "paused", "busy", "shutting-down", "interrupted",
  "key-conflict"};

const char *proto_code_name(proto_Code c) { return (unsigned)c < PROTO_CODE_COUNT ? code_names[c] : "?"; }

int proto_code_parse(const char *s) {
  for (int i = 0; s && i < PROTO_CODE_COUNT; i++)
    if (!strcmp(s, code_names[i])) return i;
  return -1;
}

int proto_socket_path(const char *dir, char *buf, size_t len) {
  struct sockaddr_un a;
  int n = snprintf(buf, len, "%s/%s", dir, PROTO_SOCKET);
  if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof a.sun_path) return -1;
  return 0;
}

int proto_utf8_valid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) { i++; continue; }
    size_t k;
    unsigned min, cp;
    if (c >= 0xc2 && c <= 0xdf) { k = 1; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { k = 2; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { k = 3; cp = c & 0x07; min = 0x10000; }
    else return 0;
    for (size_t j = 1; j <= k; j++) {
      if (i + j >= n || (s[i + j] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += k + 1;
  }
  return 1;
}
