/*
** eclient.c — the client, its members and its one request (etcd.h,
** etcd_int.h): a JSON body posted to the gateway of one member, the next
** member tried when that is safe, etcd's errors made into etcd_Error with
** a message that says what to do.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "etcd_int.h"

#define DEFAULT_CONNECT_MS 1000L
#define DEFAULT_REQUEST_MS 5000L
#define DEFAULT_MAX_REQUEST ((size_t)3 << 19) /* 1.5 MiB: etcd's --max-request-bytes */

const char *etcd_error_name(etcd_Error err) {
  static const char *const names[] = {"ok",      "unavailable", "uncertain", "failed",  "lease",   "compacted",
                                      "too-big", "no-space",    "protocol",  "stopped", "invalid", "no-memory"};
  return (unsigned)err < sizeof names / sizeof *names ? names[err] : "?";
}

etcd_Error eclient_fail(etcd *e, etcd_Error err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->errmsg, sizeof e->errmsg, fmt, ap);
  va_end(ap);
  return err;
}

const char *etcd_errmsg(const etcd *e) { return e->errmsg; }
const char *etcd_member(const etcd *e) { return e->urls[e->at]; }

/* One URL of the list: http(s)://host:port, nothing after the port. */
static int url_ok(const char *u, size_t n) {
  size_t skip = n > 7 && !strncmp(u, "http://", 7) ? 7 : n > 8 && !strncmp(u, "https://", 8) ? 8 : 0;
  if (!skip || skip == n) return 0;
  for (size_t i = skip; i < n; i++)
    if (u[i] == '/' || u[i] == '@' || u[i] == '?' || u[i] == '#' || u[i] == ' ') return 0;
  return 1;
}

etcd *etcd_new(const char *urls, char *err, size_t errlen) {
  etcd *e = calloc(1, sizeof *e);
  if (!e) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  e->connect_ms = DEFAULT_CONNECT_MS;
  e->request_ms = DEFAULT_REQUEST_MS;
  e->max_request = DEFAULT_MAX_REQUEST;
  const char *p = urls ? urls : "";
  while (*p) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if (!url_ok(p, n)) {
      snprintf(err, errlen, "etcd member URL '%.*s' is not http://HOST:PORT or https://HOST:PORT",
               (int)(n > 200 ? 200 : n), p);
      etcd_free(e);
      return NULL;
    }
    if (e->nurls == ETCD_MAX_MEMBERS) {
      snprintf(err, errlen, "more than %d etcd member URLs", ETCD_MAX_MEMBERS);
      etcd_free(e);
      return NULL;
    }
    if (!(e->urls[e->nurls++] = strndup(p, n))) {
      snprintf(err, errlen, "out of memory");
      etcd_free(e);
      return NULL;
    }
    p += n + (c != NULL);
  }
  if (!e->nurls) {
    snprintf(err, errlen, "no etcd member URL given (http://HOST:PORT,...)");
    etcd_free(e);
    return NULL;
  }
  if (!(e->http = mhttp_new())) {
    snprintf(err, errlen, "no HTTP client for etcd: libcurl could not be loaded or out of memory");
    etcd_free(e);
    return NULL;
  }
  mhttp_set_timeouts(e->http, e->connect_ms, e->request_ms);
  return e;
}

void etcd_free(etcd *e) {
  if (!e) return;
  for (size_t i = 0; i < e->nurls; i++) free(e->urls[i]);
  mhttp_free(e->http);
  free(e);
}

void etcd_set_timeouts(etcd *e, long connect_ms, long request_ms) {
  if (connect_ms > 0) e->connect_ms = connect_ms;
  if (request_ms > 0) e->request_ms = request_ms;
  mhttp_set_timeouts(e->http, e->connect_ms, e->request_ms);
}

void etcd_set_max_request(etcd *e, size_t bytes) {
  if (bytes) e->max_request = bytes;
}

/* gRPC's status codes that etcd's errors carry. */
enum {
  GRPC_INVALID_ARGUMENT = 3,
  GRPC_DEADLINE = 4,
  GRPC_NOT_FOUND = 5,
  GRPC_EXHAUSTED = 8,
  GRPC_OUT_OF_RANGE = 11,
  GRPC_UNAVAILABLE = 14
};

etcd_Error eclient_server_error(etcd *e, json_t *err, ecall_Kind kind, int *next) {
  *next = 0;
  int64_t code = 0;
  if (ejson_i64(err, "code", &code) || !code) ejson_i64(err, "grpc_code", &code);
  const char *msg = json_string_value(json_object_get(err, "message"));
  if (!msg) msg = json_string_value(json_object_get(err, "error"));
  if (!msg) msg = "(no message)";
  const char *m = e->urls[e->at];
  if (strstr(msg, "lease not found"))
    return eclient_fail(e, ETCD_ELEASE, "etcd %s: %s (the lease expired or was revoked)", m, msg);
  if (code == GRPC_OUT_OF_RANGE || strstr(msg, "compacted"))
    return eclient_fail(e, ETCD_ECOMPACTED, "etcd %s: %s", m, msg);
  if (strstr(msg, "too large") || strstr(msg, "larger than max"))
    return eclient_fail(e, ETCD_ETOOBIG, "etcd %s: %s (raise the members' --max-request-bytes, or send less)", m, msg);
  if (strstr(msg, "space exceeded") || (code == GRPC_EXHAUSTED && strstr(msg, "quota")))
    return eclient_fail(e, ETCD_ENOSPACE,
                        "etcd %s: %s (compact, defragment and disarm the alarm: etcdctl compact, defrag, alarm disarm)",
                        m, msg);
  /* the gateway's own deadline ("context deadline exceeded", code 2 or 4):
     the request went on to etcd, and may yet be applied */
  if (code == GRPC_UNAVAILABLE || code == GRPC_DEADLINE || strstr(msg, "deadline exceeded")) {
    /* "no leader" is refused before it is proposed; the others may have been applied */
    int unapplied = strstr(msg, "no leader") != NULL;
    *next = kind == ECALL_READ || unapplied;
    if (kind == ECALL_WRITE && !unapplied)
      return eclient_fail(e, ETCD_EUNCERTAIN, "etcd %s: %s (the write may or may not have been applied)", m, msg);
    return eclient_fail(e, ETCD_EUNAVAILABLE, "etcd %s: %s (is a quorum of the members up?)", m, msg);
  }
  (void)GRPC_INVALID_ARGUMENT, (void)GRPC_NOT_FOUND;
  return eclient_fail(e, ETCD_EFAILED, "etcd %s refused the request: %s (code %lld)", m, msg, (long long)code);
}

/* One attempt on the current member.  *next: the request may go to the
** next member. */
static etcd_Error attempt(etcd *e, const char *path, const char *text, size_t len, ecall_Kind kind, json_t **reply,
                          int *next) {
  char url[512];
  const char *m = e->urls[e->at];
  snprintf(url, sizeof url, "%s%s", m, path);
  mhttp_Response r;
  /* a write on a connection of its own: sent once, or known to be unanswered */
  if (kind == ECALL_WRITE) mhttp_fresh_connect(e->http);
  mhttp_Error he = mhttp_post(e->http, url, NULL, text, len, NULL, NULL, &r);
  *next = 0;
  etcd_Error out;
  if (he == MHTTP_ECONNECT) { /* never sent */
    *next = 1;
    out = eclient_fail(e, ETCD_EUNAVAILABLE, "etcd member %s cannot be reached: %s", m, r.errmsg);
  } else if (he == MHTTP_ENOMEM) {
    out = eclient_fail(e, ETCD_ENOMEM, "out of memory talking to etcd");
  } else if (he != MHTTP_OK) {
    *next = kind == ECALL_READ;
    if (kind == ECALL_WRITE)
      out = eclient_fail(e, ETCD_EUNCERTAIN, "etcd member %s: %s (%s): the write may or may not have been applied", m,
                         he == MHTTP_ETIMEOUT ? "no answer in time" : "the connection broke", r.errmsg);
    else
      out = eclient_fail(e, ETCD_EUNAVAILABLE, "etcd member %s: %s (%s)", m,
                         he == MHTTP_ETIMEOUT ? "no answer in time" : "the connection broke", r.errmsg);
  } else {
    json_error_t jerr;
    json_t *j = json_loadb(r.body, r.len, 0, &jerr);
    if (!json_is_object(j)) {
      out =
        eclient_fail(e, ETCD_EPROTO, "etcd member %s answered HTTP %ld with something that is not etcd's JSON: %.80s",
                     m, r.status, r.body ? r.body : "");
      *next = kind == ECALL_READ;
    } else if (r.status != 200 || json_object_get(j, "error")) {
      out = eclient_server_error(e, j, kind, next);
    } else {
      *reply = j;
      j = NULL;
      out = ETCD_OK;
      e->errmsg[0] = 0;
    }
    json_decref(j);
  }
  mhttp_response_free(&r);
  return out;
}

etcd_Error eclient_call(etcd *e, const char *path, json_t *body, ecall_Kind kind, json_t **reply) {
  *reply = NULL;
  if (!body) return eclient_fail(e, ETCD_ENOMEM, "out of memory building an etcd request");
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text) return eclient_fail(e, ETCD_ENOMEM, "out of memory building an etcd request");
  size_t len = strlen(text);
  if (len > e->max_request) {
    free(text);
    return eclient_fail(e, ETCD_ETOOBIG,
                        "an etcd request of %zu bytes is over the limit of %zu bytes (etcd's --max-request-bytes)", len,
                        e->max_request);
  }
  etcd_Error err = ETCD_EUNAVAILABLE;
  char first[sizeof e->errmsg];
  first[0] = 0;
  for (size_t tries = 0; tries < e->nurls; tries++) {
    int next = 0;
    err = attempt(e, path, text, len, kind, reply, &next);
    if (err == ETCD_OK || !next) break;
    if (!first[0]) snprintf(first, sizeof first, "%s", e->errmsg);
    e->at = (e->at + 1) % e->nurls;
  }
  if (err == ETCD_EUNAVAILABLE && e->nurls > 1) {
    char last[sizeof e->errmsg];
    snprintf(last, sizeof last, "%s", e->errmsg);
    eclient_fail(e, err, "no etcd member answered (%zu tried): %.200s%s%.200s", e->nurls, first[0] ? first : last,
                 first[0] && strcmp(first, last) ? "; last: " : "", first[0] && strcmp(first, last) ? last : "");
  }
  free(text);
  return err;
}

etcd_Error etcd_status(etcd *e, etcd_Status *out) {
  memset(out, 0, sizeof *out);
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/maintenance/status", json_object(), ECALL_READ, &reply);
  if (err) return err;
  int64_t member = 0, leader = 0;
  const char *v = json_string_value(json_object_get(reply, "version"));
  if (!v || ejson_i64(reply, "dbSize", &out->db_size) || ejson_i64(reply, "dbSizeInUse", &out->db_size_in_use) ||
      ejson_i64(json_object_get(reply, "header"), "member_id", &member) || ejson_i64(reply, "leader", &leader) ||
      ejson_i64(reply, "raftTerm", &out->raft_term) || ejson_i64(reply, "raftIndex", &out->raft_index)) {
    json_decref(reply);
    return eclient_fail(e, ETCD_EPROTO, "etcd %s: a status reply without its fields", e->urls[e->at]);
  }
  snprintf(out->version, sizeof out->version, "%s", v);
  out->member_id = (uint64_t)member;
  out->leader = (uint64_t)leader;
  json_decref(reply);
  return ETCD_OK;
}
