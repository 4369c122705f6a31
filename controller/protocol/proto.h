/*
** proto.h — the client protocol's vocabulary, shared by the kernel daemon
** (daemon/) and its clients (client/): the version, the limits, the
** socket's place and the ops.  docs/protocol.md is the reference.
*/
#ifndef jiti_proto_h
#define jiti_proto_h

#include <stddef.h>

#define PROTO_VERSION 1
#define PROTO_LINE_MAX ((size_t)1 << 20)        /* bytes of one request line */
#define PROTO_REPLY_MAX ((size_t)64 << 20)      /* bytes a client accepts */
#define PROTO_SOCKET "kernel.sock"
#define PROTO_PIDFILE "kernel.pid"
#define PROTO_LOG "kernel.log"

/* The requests (docs/protocol.md, "Requests"): one name table. */
typedef enum proto_Op {
  PROTO_HELLO, PROTO_STATUS, PROTO_OBSERVE, PROTO_INSPECT, PROTO_HISTORY, PROTO_SUBSCRIBE,
  PROTO_CALL, PROTO_PREVIEW, PROTO_ACT, PROTO_APPLY, PROTO_INVARIANT_ADD, PROTO_INVARIANT_REMOVE,
  PROTO_INVARIANT_LIST, PROTO_ROLLBACK, PROTO_RECORD, PROTO_SHUTDOWN, PROTO_CANCEL, PROTO_INTERRUPT,
  PROTO_REPAIR_POLICY, PROTO_VERIFY, PROTO_INCIDENT, PROTO_INCIDENTS, PROTO_REPAIR, PROTO_HEAL, PROTO_REPAIRS, PROTO_COMPLETE,
  PROTO_OP_COUNT
} proto_Op;

/* "hello", "status", ...; the op named s, or -1. */
const char *proto_op_name(proto_Op op);
int proto_op_parse(const char *s);

/* The error codes of replies that are not a transaction's reason
** (docs/protocol.md, "Error codes"; the reasons are txn_Reason's names):
** one name table. */
typedef enum proto_Code {
  PROTO_MALFORMED_JSON, PROTO_INVALID_UTF8, PROTO_LINE_TOO_LONG, PROTO_INVALID_REQUEST, PROTO_UNKNOWN_OP,
  PROTO_NOT_FOUND, PROTO_NOT_ALLOWED, PROTO_STORE_ERROR, PROTO_UNSUPPORTED_PROTOCOL, PROTO_NOT_PAUSED,
  PROTO_PAUSED, PROTO_BUSY, PROTO_SHUTTING_DOWN, PROTO_INTERRUPTED, PROTO_KEY_CONFLICT, PROTO_NOT_RUNNING,
  PROTO_NOT_PAUSABLE, PROTO_TIMEOUT, PROTO_CONFLICT, PROTO_STALE, PROTO_REJECTED, PROTO_STANDBY, PROTO_CODE_COUNT
} proto_Code;

/* "malformed-json", ... */
const char *proto_code_name(proto_Code c);

/* DIR/kernel.sock into buf; -1 when it does not fit a Unix socket address. */
int proto_socket_path(const char *dir, char *buf, size_t len);


#endif
