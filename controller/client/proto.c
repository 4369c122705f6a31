/*
** kproto.c — small helpers of the client protocol shared by the kernel
** daemon and its clients (kproto.h).
*/
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include "proto.h"

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
