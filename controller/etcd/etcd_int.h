/*
** etcd_int.h — what the files of controller/etcd/ share: the client, its
** one request (eclient.c) and the gateway's JSON (ejson.c).
*/
#ifndef jiti_etcd_int_h
#define jiti_etcd_int_h

#include <jansson.h>
#include "etcd.h"
#include "mhttp.h"

#define ETCD_MAX_MEMBERS 16

struct etcd {
  char *urls[ETCD_MAX_MEMBERS];
  size_t nurls, at; /* at: the member the next request goes to */
  mhttp *http;
  long connect_ms, request_ms;
  size_t max_request;
  char errmsg[512];
};

/* Whether a request may go to the next member after it was sent: a read
** may; a write may not (it may have been applied: ETCD_EUNCERTAIN). */
typedef enum ecall_Kind { ECALL_READ, ECALL_WRITE } ecall_Kind;

/* Set e's message (printf-style) and return err. */
etcd_Error eclient_fail(etcd *e, etcd_Error err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* POST body (a JSON object; the reference is taken) to the gateway path
** ("/v3/kv/range") of the current member, trying the next ones as kind
** allows.  *reply: the parsed reply object, the caller's to json_decref. */
etcd_Error eclient_call(etcd *e, const char *path, json_t *body, ecall_Kind kind, json_t **reply);

/* etcd's error reply (or a stream's error object) as an etcd_Error with
** e's message set; *next: the request was not applied, so another member
** may be asked. */
etcd_Error eclient_server_error(etcd *e, json_t *err, ecall_Kind kind, int *next);

/* The gateway's JSON: 64-bit integers are strings (or numbers), bytes are
** base64. */
int ejson_i64(json_t *o, const char *name, int64_t *v); /* absent: 0; -1 when malformed */
json_t *ejson_bytes(const void *p, size_t n);           /* a base64 string; NULL without memory */
json_t *ejson_i64_new(int64_t v);                       /* a decimal string */
int ejson_unbytes(json_t *s, char **out, size_t *len);  /* absent/null: "" ; -1 malformed or no memory */
int ejson_set(json_t *o, const char *name, json_t *v);  /* takes v; -1 when v is NULL or on failure */

/* One key-value of a reply (kv) and one range reply (its "kvs", "count",
** "more", header's revision): 0, or -1 malformed (nothing left allocated). */
int ejson_kv(json_t *kv, etcd_KV *out);
int ejson_range(json_t *o, etcd_Range *out);
void ejson_kv_free(etcd_KV *kv);

#endif
