/*
** ewatch.c — streaming watches (etcd.h).
**
** The gateway's watch is a POST whose response never ends: one JSON object
** per line, {"result": WatchResponse} or {"error": ...}.  A stream is kept
** for at most the watch's window and then reopened from the revision after
** the last one reported, so a member that stopped answering (SIGSTOP, a
** network partition: nothing breaks the connection) holds the watch for
** one window at most; a stream that broke, or a window in which the member
** sent nothing at all, moves the watch to the next member.
*/
#include <stdlib.h>
#include <string.h>
#include "etcd_int.h"

#define DEFAULT_WINDOW_MS 10000L
#define MAX_LINE ((size_t)64 << 20)

/* How a stream ended, as far as the lines it carried tell. */
typedef enum End { END_NONE, END_CALLER, END_COMPACTED, END_ERROR } End;

typedef struct Stream {
  etcd *e;
  etcd_Watch *w;
  etcd_watch_fn fn;
  void *ud;
  char *buf;
  size_t len, cap;
  int created; /* the member confirmed the watch */
  End end;
  etcd_Error err; /* with END_ERROR */
} Stream;

static void free_events(etcd_Event *ev, size_t n) {
  for (size_t i = 0; i < n; i++) ejson_kv_free(&ev[i].kv);
  free(ev);
}

/* One WatchResponse.  0 to go on, -1 to end the stream (s->end says why). */
static int response(Stream *s, json_t *r) {
  etcd_Watch *w = s->w;
  int64_t hrev = 0, compact = 0;
  ejson_i64(json_object_get(r, "header"), "revision", &hrev);
  ejson_i64(r, "compact_revision", &compact);
  if (json_is_true(json_object_get(r, "created"))) {
    s->created = 1;
    /* "from now": what follows is after the revision the watch was created at */
    if (!w->next_revision) w->next_revision = hrev + 1;
  }
  if (compact > 0) {
    w->compact_revision = compact;
    s->end = END_COMPACTED;
    eclient_fail(s->e, ETCD_ECOMPACTED, "etcd %s: revision %lld was compacted; the oldest left is %lld",
                 etcd_member(s->e), (long long)w->next_revision, (long long)compact);
    return -1;
  }
  if (json_is_true(json_object_get(r, "canceled"))) {
    const char *why = json_string_value(json_object_get(r, "cancel_reason"));
    s->end = END_ERROR;
    s->err =
      eclient_fail(s->e, ETCD_EFAILED, "etcd %s cancelled the watch: %s", etcd_member(s->e), why ? why : "(no reason)");
    return -1;
  }
  json_t *evs = json_object_get(r, "events");
  size_t n = json_array_size(evs);
  if (!n) return 0;
  etcd_Event *ev = calloc(n, sizeof *ev);
  if (!ev) {
    s->end = END_ERROR;
    s->err = eclient_fail(s->e, ETCD_ENOMEM, "out of memory reading an etcd watch");
    return -1;
  }
  int64_t last = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *x = json_array_get(evs, i);
    const char *type = json_string_value(json_object_get(x, "type"));
    ev[i].type = type && !strcmp(type, "DELETE") ? ETCD_DELETE : ETCD_PUT;
    if ((type && strcmp(type, "DELETE") && strcmp(type, "PUT")) || ejson_kv(json_object_get(x, "kv"), &ev[i].kv)) {
      free_events(ev, i);
      s->end = END_ERROR;
      s->err = eclient_fail(s->e, ETCD_EPROTO, "etcd %s: a watch event that does not parse", etcd_member(s->e));
      return -1;
    }
    if (ev[i].kv.mod_revision > last) last = ev[i].kv.mod_revision;
  }
  etcd_WatchBatch b = {hrev, ev, n};
  int stop = s->fn(s->ud, &b);
  free_events(ev, n);
  if (last >= w->next_revision) w->next_revision = last + 1;
  if (stop) {
    s->end = END_CALLER;
    return -1;
  }
  return 0;
}

static int line(Stream *s, const char *p, size_t n) {
  while (n && (p[n - 1] == '\r' || p[n - 1] == ' ')) n--;
  if (!n) return 0;
  json_error_t jerr;
  json_t *j = json_loadb(p, n, 0, &jerr);
  json_t *r = json_object_get(j, "result"), *err = json_object_get(j, "error");
  int rc = 0;
  if (json_is_object(r)) {
    rc = response(s, r);
  } else if (json_is_object(err)) {
    int next;
    s->end = END_ERROR;
    s->err = eclient_server_error(s->e, err, ECALL_READ, &next);
    if (next) s->end = END_NONE; /* another member may do: the stream just ends */
    rc = -1;
  } else {
    s->end = END_ERROR;
    s->err = eclient_fail(s->e, ETCD_EPROTO, "etcd %s: a watch stream line that is not etcd's JSON: %.80s",
                          etcd_member(s->e), p);
    rc = -1;
  }
  json_decref(j);
  return rc;
}

static int sink(void *ud, const char *data, size_t n) {
  Stream *s = ud;
  if (s->len + n > MAX_LINE) {
    s->end = END_ERROR;
    s->err = eclient_fail(s->e, ETCD_EPROTO, "etcd %s: a watch response over %zu bytes", etcd_member(s->e), MAX_LINE);
    return 1;
  }
  if (s->len + n > s->cap) {
    size_t c = s->cap ? s->cap : 8192;
    while (c < s->len + n) c *= 2;
    char *b = realloc(s->buf, c);
    if (!b) {
      s->end = END_ERROR;
      s->err = eclient_fail(s->e, ETCD_ENOMEM, "out of memory reading an etcd watch");
      return 1;
    }
    s->buf = b;
    s->cap = c;
  }
  if (n) memcpy(s->buf + s->len, data, n);
  s->len += n;
  size_t start = 0;
  for (char *nl; (nl = memchr(s->buf + start, '\n', s->len - start));) {
    size_t end = (size_t)(nl - s->buf);
    if (line(s, s->buf + start, end - start)) return 1;
    start = end + 1;
  }
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
  return 0;
}

static json_t *create_body(const etcd_Watch *w) {
  json_t *c = json_object(), *o = json_object();
  if (!c || !o || ejson_set(c, "key", ejson_bytes(w->key, w->key_len)) ||
      (w->end && ejson_set(c, "range_end", ejson_bytes(w->end, w->end_len))) ||
      (w->next_revision && ejson_set(c, "start_revision", ejson_i64_new(w->next_revision))) ||
      json_object_set_new(o, "create_request", c)) {
    json_decref(c);
    json_decref(o);
    return NULL;
  }
  return o;
}

etcd_Error etcd_watch(etcd *e, etcd_Watch *w, etcd_watch_fn fn, void *ud) {
  w->next_revision = w->start_revision;
  w->compact_revision = 0;
  long window = w->window_ms > 0 ? w->window_ms : DEFAULT_WINDOW_MS;
  mhttp_set_timeouts(e->http, e->connect_ms, window);
  mhttp_set_interrupt(e->http, w->stop);
  Stream s = {.e = e, .w = w, .fn = fn, .ud = ud};
  size_t failed = 0; /* members in a row that gave no stream */
  char first[sizeof e->errmsg] = "";
  etcd_Error out = ETCD_EUNAVAILABLE;
  for (;;) {
    if (w->stop && *w->stop) {
      out = eclient_fail(e, ETCD_ESTOPPED, "the watch was stopped");
      break;
    }
    json_t *body = create_body(w);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
      out = eclient_fail(e, ETCD_ENOMEM, "out of memory starting an etcd watch");
      break;
    }
    char url[512];
    snprintf(url, sizeof url, "%s/v3/watch", etcd_member(e));
    s.len = 0;
    s.created = 0;
    s.end = END_NONE;
    mhttp_Response r;
    mhttp_Error he = mhttp_post(e->http, url, NULL, text, strlen(text), sink, &s, &r);
    free(text);
    if (s.end == END_CALLER || (he == MHTTP_ESTOPPED && s.end == END_NONE && w->stop && *w->stop)) {
      mhttp_response_free(&r);
      out = eclient_fail(e, ETCD_ESTOPPED, "the watch was stopped");
      break;
    }
    if (s.end == END_COMPACTED || s.end == END_ERROR) {
      mhttp_response_free(&r);
      out = s.end == END_COMPACTED ? ETCD_ECOMPACTED : s.err;
      break;
    }
    if (s.created) { /* the member is alive: a window ended, or it went away mid-stream */
      failed = 0;
      first[0] = 0;
      if (he != MHTTP_ETIMEOUT) e->at = (e->at + 1) % e->nurls;
      mhttp_response_free(&r);
      continue;
    }
    /* no stream from this member: why, then the next one */
    if (he == MHTTP_OK && r.status != 200) {
      json_t *j = json_loadb(r.body, r.len, 0, NULL);
      int next;
      if (json_is_object(j)) {
        etcd_Error err = eclient_server_error(e, j, ECALL_READ, &next);
        json_decref(j);
        if (!next) {
          mhttp_response_free(&r);
          out = err;
          break;
        }
      } else {
        json_decref(j);
        eclient_fail(e, ETCD_EUNAVAILABLE, "etcd member %s answered a watch with HTTP %ld", etcd_member(e), r.status);
      }
    } else if (s.end == END_NONE && he == MHTTP_OK) {
      eclient_fail(e, ETCD_EUNAVAILABLE, "etcd member %s ended a watch before confirming it", etcd_member(e));
    } else if (s.end == END_NONE) {
      eclient_fail(e, ETCD_EUNAVAILABLE, "etcd member %s: no watch (%s: %s)", etcd_member(e), mhttp_error_name(he),
                   r.errmsg);
    }
    mhttp_response_free(&r);
    if (!first[0]) snprintf(first, sizeof first, "%s", e->errmsg);
    e->at = (e->at + 1) % e->nurls;
    if (++failed >= e->nurls) {
      out = eclient_fail(e, ETCD_EUNAVAILABLE, "no etcd member would watch (%zu tried): %.300s", e->nurls, first);
      break;
    }
  }
  free(s.buf);
  mhttp_set_interrupt(e->http, NULL);
  mhttp_set_timeouts(e->http, e->connect_ms, e->request_ms);
  return out;
}
