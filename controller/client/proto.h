/*
** kproto.h — shared by the kernel daemon (daemon.c) and its clients
** (client.c): the protocol version, limits and the socket's place.
** docs/protocol.md is the reference.
*/
#ifndef jiti_kproto_h
#define jiti_kproto_h

#include <stddef.h>

#define PROTO_VERSION 1
#define PROTO_LINE_MAX ((size_t)1 << 20)        /* bytes of one request line */
#define PROTO_REPLY_MAX ((size_t)64 << 20)      /* bytes a client accepts */
#define PROTO_SOCKET "kernel.sock"
#define PROTO_PIDFILE "kernel.pid"
#define PROTO_LOG "kernel.log"

/* DIR/kernel.sock into buf; -1 when it does not fit a Unix socket address. */
int proto_socket_path(const char *dir, char *buf, size_t len);

/* 1 when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates). */
int proto_utf8_valid(const char *s, size_t n);

#endif
