/*
** elease.c — leases (etcd.h): grant, one renewal, revoke, time to live.
**
** The gateway's keep-alive is a stream; one request object posted as a
** whole body gets one answer and the stream ends, which is exactly one
** renewal.
*/
#include <string.h>
#include "etcd_int.h"

static json_t *id_body(int64_t lease) {
  json_t *b = json_object();
  if (b && ejson_set(b, "ID", ejson_i64_new(lease))) {
    json_decref(b);
    return NULL;
  }
  return b;
}

etcd_Error etcd_lease_grant(etcd *e, int64_t ttl, int64_t id, int64_t *lease, int64_t *granted) {
  if (ttl <= 0) return eclient_fail(e, ETCD_EINVAL, "a lease's TTL must be at least 1 second");
  json_t *b = id_body(id);
  if (b && ejson_set(b, "TTL", ejson_i64_new(ttl))) {
    json_decref(b);
    b = NULL;
  }
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/lease/grant", b, ECALL_WRITE, &reply);
  if (err) return err;
  int64_t got = 0, t = 0;
  const char *why = json_string_value(json_object_get(reply, "error"));
  if (why && *why) err = eclient_fail(e, ETCD_EFAILED, "etcd %s refused the lease: %s", etcd_member(e), why);
  else if (ejson_i64(reply, "ID", &got) || ejson_i64(reply, "TTL", &t) || !got || t <= 0)
    err = eclient_fail(e, ETCD_EPROTO, "etcd %s: a lease grant reply without its id and TTL", etcd_member(e));
  else {
    *lease = got;
    if (granted) *granted = t;
  }
  json_decref(reply);
  return err;
}

etcd_Error etcd_lease_keepalive(etcd *e, int64_t lease, int64_t *ttl) {
  json_t *reply;
  /* a renewal may be repeated at will: a read as far as retries go */
  etcd_Error err = eclient_call(e, "/v3/lease/keepalive", id_body(lease), ECALL_READ, &reply);
  if (err) return err;
  json_t *r = json_object_get(reply, "result");
  int64_t t = 0;
  if (!json_is_object(r) || ejson_i64(r, "TTL", &t))
    err = eclient_fail(e, ETCD_EPROTO, "etcd %s: a keep-alive reply without its result", etcd_member(e));
  else if (t <= 0)
    err = eclient_fail(e, ETCD_ELEASE, "etcd %s: lease %llx has expired or was revoked", etcd_member(e),
                       (unsigned long long)lease);
  else if (ttl) *ttl = t;
  json_decref(reply);
  return err;
}

etcd_Error etcd_lease_revoke(etcd *e, int64_t lease) {
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/lease/revoke", id_body(lease), ECALL_WRITE, &reply);
  if (!err) json_decref(reply);
  return err;
}

etcd_Error etcd_lease_ttl(etcd *e, int64_t lease, int64_t *ttl) {
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/kv/lease/timetolive", id_body(lease), ECALL_READ, &reply);
  if (err) return err;
  int64_t t = 0;
  if (ejson_i64(reply, "TTL", &t))
    err = eclient_fail(e, ETCD_EPROTO, "etcd %s: a time-to-live reply without its TTL", etcd_member(e));
  else if (t < 0)
    err = eclient_fail(e, ETCD_ELEASE, "etcd %s: lease %llx has expired or was revoked", etcd_member(e),
                       (unsigned long long)lease);
  else *ttl = t;
  json_decref(reply);
  return err;
}
