/* st_event.c — the event log: append (with redaction and a size bound),
** read in either direction, and mark attempts that never got an outcome. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include "jtext.h"
#include "st_int.h"

#define HEAD_MAX 2048   /* bytes of the original kept in a truncated record */

/* ---- names */

static const char *const event_names[STORE_EV_COUNT] = {
  "started", "accepted", "rejected", "aborted", "failed", "interrupted", "paused",
  "worker-restarted", "kernel-started", "kernel-stopped", "initialised", "recovered", "dropped",
  "journal-loss", "incident"};

const char *store_event_name(int ev) {
  return ev >= 0 && ev < STORE_EV_COUNT ? event_names[ev] : NULL;
}

int store_event_parse(const char *s) {
  for (int i = 0; s && i < STORE_EV_COUNT; i++)
    if (!strcmp(s, event_names[i])) return i;
  return -1;
}

int store_event_is_outcome(int ev) {
  return ev == STORE_EV_ACCEPTED || ev == STORE_EV_REJECTED || ev == STORE_EV_ABORTED ||
         ev == STORE_EV_FAILED || ev == STORE_EV_INTERRUPTED;
}

/* ---- redaction */

/* Whether member name k holds one of the words, in any case.  One pass:
** a word can only start at a letter that starts one (member names are
** short, and every event's are checked). */
static int secret_key_n(const char *k, size_t n) {
  static const struct { const char *w; size_t n; } words[] = {
    { "key", 3 }, { "token", 5 }, { "secret", 6 }, { "authorization", 13 }, { "password", 8 } };
  for (size_t at = 0; at < n; at++) {
    int c = k[at] | 0x20;   /* ASCII letters to lower case; the words are ASCII */
    if (c != 'k' && c != 't' && c != 's' && c != 'a' && c != 'p') continue;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
      if (words[i].w[0] == c && n - at >= words[i].n && !strncasecmp(k + at, words[i].w, words[i].n)) return 1;
  }
  return 0;
}

static int secret_key(const char *k) { return secret_key_n(k, strlen(k)); }

static int secret_value_n(const char *v, size_t n) {
  return (n >= 7 && !memcmp(v, "Bearer ", 7)) || (n >= 3 && !memcmp(v, "sk-", 3));
}

static int secret_value(const char *v) { return secret_value_n(v, strlen(v)); }

/* Replace secrets in j.  all: every string below is under a secret key. */
static int scrub(json_t *j, int all) {
  if (json_is_object(j)) {
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
      int sec = all || secret_key(k);
      if (json_is_string(v)) {
        if ((sec || secret_value(json_string_value(v))) &&
            json_object_set_new(j, k, json_string("[redacted]")) != 0)
          return -1;
      } else if (scrub(v, sec) != 0) {
        return -1;
      }
    }
  } else if (json_is_array(j)) {
    for (size_t i = 0; i < json_array_size(j); i++) {
      json_t *v = json_array_get(j, i);
      if (json_is_string(v)) {
        if ((all || secret_value(json_string_value(v))) &&
            json_array_set_new(j, i, json_string("[redacted]")) != 0)
          return -1;
      } else if (scrub(v, all) != 0) {
        return -1;
      }
    }
  }
  return 0;
}

/* ---- the record */

static size_t utf8_prefix(const char *s, size_t n, size_t max) {
  if (n <= max) return n;
  while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;
  return max;
}

/* Build the stored text: seq and time first, then the caller's members
** (src loses any "seq" and "time" of its own).  The text is written to
** *buf (*cap bytes, realloc'd as needed: one buffer serves a whole batch);
** *out is *buf, or malloc'd for an event cut short (the caller frees it
** when it is not *buf). */
static int render(store_env *s, json_t *src, uint64_t seq, int64_t now, char **buf, size_t *cap, char **out,
                  size_t *len) {
  json_object_del(src, "seq");
  json_object_del(src, "time");
  char head[64];
  size_t n = (size_t)snprintf(head, sizeof head, "{\"seq\":%llu,\"time\":%lld", (unsigned long long)seq,
                              (long long)now);
  if (*cap < 512) {
    char *b = realloc(*buf, 512);
    if (!b) return st_fail(s, STORE_ENOMEM, "out of memory writing an event");
    *buf = b;
    *cap = 512;
  }
  memcpy(*buf, head, n);
  size_t h = n;
  /* then ",members}" (src's text less its "{"), or, for {}, "}" */
  if (jtext_append(src, 1, buf, &n, cap) != 0)
    return st_fail(s, STORE_ENOMEM, "out of memory writing an event");
  if (n + 2 > *cap) {
    char *room = realloc(*buf, n + 2);
    if (!room) return st_fail(s, STORE_ENOMEM, "out of memory writing an event");
    *buf = room;
    *cap = n + 2;
  }
  char *text = *buf;
  if (n - h > 2) {
    text[h] = ',';
  } else {
    n = h;
    text[n++] = '}';
  }
  text[n] = '\0';
  size_t full = n;   /* compact JSON text holds no NUL: jansson escapes it */
  if (full > STORE_EVENT_MAX) {
    /* Too long: keep what identifies it and the start of the text. */
    json_t *t = json_object(), *ev;
    if (!t) { free(text); return st_fail(s, STORE_ENOMEM, "out of memory writing an event"); }
    json_object_set_new(t, "seq", json_integer((json_int_t)seq));
    json_object_set_new(t, "time", json_integer((json_int_t)now));
    ev = json_object_get(src, "event");
    if (json_is_string(ev) && json_string_length(ev) <= 64) json_object_set(t, "event", ev);
    ev = json_object_get(src, "attempt");
    if (json_is_integer(ev)) json_object_set(t, "attempt", ev);
    json_object_set_new(t, "truncated", json_true());
    json_object_set_new(t, "original_bytes", json_integer((json_int_t)full));
    json_object_set_new(t, "head", json_stringn(text, utf8_prefix(text, full, HEAD_MAX)));
    text = json_dumps(t, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(t);
    if (!text) return st_fail(s, STORE_ENOMEM, "out of memory writing an event");
    full = strlen(text);
  }
  *out = text;
  *len = full;
  return STORE_OK;
}

static int last_seq(store_env *s, MDB_txn *txn, uint64_t *seq) {
  MDB_cursor *cur;
  MDB_val k, v;
  int rc = mdb_cursor_open(txn, s->events, &cur);
  if (rc) return st_mdb(s, rc, "reading events");
  rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND) { *seq = 0; return STORE_OK; }
  if (rc) return st_mdb(s, rc, "reading events");
  if (k.mv_size != 8) return st_fail(s, STORE_ECORRUPT, "an event key is malformed");
  *seq = st_get_u64(k.mv_data);
  return STORE_OK;
}

/* Append each of objs[0..n) as the next events, within txn; times[i] is
** event i's time (ms), or now when times is NULL or times[i] is 0. */
int st_events_put(store_env *s, MDB_txn *txn, json_t *const *objs, const int64_t *times, size_t n,
                  uint64_t *first) {
  store_ev *ev = st_ev_of_objects(objs, times, n);
  if (!ev) return st_fail(s, STORE_ENOMEM, "out of memory writing events");
  int r = st_events_put_ev(s, txn, ev, objs, n, first);
  free(ev);
  return r;
}

/* ---- events given as members text (store_ev) */

/* A check of members text: JSON members, and nothing in them that
** redaction would change or that the object's way would drop. */
typedef struct Plain {
  const char *p, *end;
  int ok;
  /* with capture: the values of the top level's "event", "attempt" and
  ** "idempotency" members (the indices', st_index.c) */
  int capture;
  const char *vev, *vat, *vkey;
  size_t nev, nat, nkey;
} Plain;

enum { PLAIN_DEPTH = 32 };

/* A string at P->p: its raw text in *s, its length in *n; 0 when malformed.  escaped:
** whether it holds a backslash. */
static int plain_string(Plain *P, const char **s, size_t *n, int *escaped) {
  if (P->p >= P->end || *P->p != '"') return 0;
  const char *q = ++P->p;
  *escaped = 0;
  while (q < P->end && *q != '"') {
    if ((unsigned char)*q < 0x20) return 0;
    if (*q == '\\') {
      if (++q >= P->end) return 0;
      *escaped = 1;
    }
    q++;
  }
  if (q >= P->end) return 0;
  *s = P->p;
  *n = (size_t)(q - P->p);
  P->p = q + 1;
  return 1;
}

static int plain_value(Plain *P, int depth);

/* members: "name":value (, "name":value)* up to close (or the end). */
static int plain_members(Plain *P, int depth, char close) {
  if (P->p < P->end && *P->p == close) return 1;
  for (;;) {
    const char *k;
    size_t kn;
    int esc;
    if (!plain_string(P, &k, &kn, &esc) || P->p >= P->end || *P->p++ != ':') return 0;
    if (esc || secret_key_n(k, kn)) P->ok = 0;
    if (!depth && ((kn == 3 && !memcmp(k, "seq", 3)) || (kn == 4 && !memcmp(k, "time", 4)))) P->ok = 0;
    const char *v = P->p;
    if (!plain_value(P, depth)) return 0;
    if (P->capture && !depth) {
      size_t vn = (size_t)(P->p - v);
      if (kn == 5 && !memcmp(k, "event", 5)) P->vev = v, P->nev = vn;
      else if (kn == 7 && !memcmp(k, "attempt", 7)) P->vat = v, P->nat = vn;
      else if (kn == 11 && !memcmp(k, "idempotency", 11)) P->vkey = v, P->nkey = vn;
    }
    if (P->p < P->end && *P->p == ',') { P->p++; continue; }
    return close ? P->p < P->end && *P->p == close : P->p == P->end;
  }
}

static int plain_value(Plain *P, int depth) {
  if (P->p >= P->end) return 0;
  if (depth >= PLAIN_DEPTH) { P->ok = 0; return 1; }   /* deep: the object's way decides */
  char c = *P->p;
  if (c == '"') {
    const char *s;
    size_t n;
    int esc;
    if (!plain_string(P, &s, &n, &esc)) return 0;
    if (secret_value_n(s, n) || (esc && memchr(s, '\\', n < 8 ? n : 8))) P->ok = 0;
    return 1;
  }
  if (c == '{' || c == '[') {
    P->p++;
    int ok = c == '{' ? plain_members(P, depth + 1, '}') : 1;
    if (c == '[' && P->p < P->end && *P->p != ']')
      for (;;) {
        if (!plain_value(P, depth + 1)) return 0;
        if (P->p < P->end && *P->p == ',') { P->p++; continue; }
        break;
      }
    if (!ok || P->p >= P->end || *P->p != (c == '{' ? '}' : ']')) return 0;
    P->p++;
    return 1;
  }
  static const char *const words[] = {"true", "false", "null"};
  for (size_t i = 0; i < 3; i++) {
    size_t k = strlen(words[i]);
    if ((size_t)(P->end - P->p) >= k && !memcmp(P->p, words[i], k)) { P->p += k; return 1; }
  }
  /* a number: -?digits(.digits)?([eE][+-]?digits)?, leading zero alone */
  const char *q = P->p;
  if (q < P->end && *q == '-') q++;
  if (q >= P->end || *q < '0' || *q > '9') return 0;
  if (*q == '0') q++;
  else while (q < P->end && *q >= '0' && *q <= '9') q++;
  if (q < P->end && *q == '.') {
    if (++q >= P->end || *q < '0' || *q > '9') return 0;
    while (q < P->end && *q >= '0' && *q <= '9') q++;
  }
  if (q < P->end && (*q == 'e' || *q == 'E')) {
    if (++q < P->end && (*q == '+' || *q == '-')) q++;
    if (q >= P->end || *q < '0' || *q > '9') return 0;
    while (q < P->end && *q >= '0' && *q <= '9') q++;
  }
  P->p = q;
  return 1;
}

/* 1: the members text t[0..n) may be stored as it is; 0: it is JSON
** members but goes the object's way (parsed, redacted, bounded: a member
** name with a secret word or an escape, or "seq" or "time" at the top; a
** string value starting "Bearer " or "sk-", or with an escape among its
** first characters; nesting deeper than PLAIN_DEPTH); -1: not JSON
** members (compact: the writer's text has no white space). */
static int members_plain(const char *t, size_t n) {
  Plain P = {t, t + n, 1, 0, NULL, NULL, NULL, 0, 0, 0};
  if (!n) return 1;
  if (!plain_members(&P, 0, 0)) return -1;
  return P.ok;
}

/* A value's text v[0..n) as a JSON string without escapes: its contents. */
static int raw_string(const char *v, size_t n, const char **out, size_t *len) {
  if (n < 2 || v[0] != '"' || v[n - 1] != '"' || memchr(v, '\\', n)) return 0;
  *out = v + 1;
  *len = n - 2;
  return 1;
}

int st_evinfo_of_members(const char *m, size_t n, st_evinfo *info, int legacy_keys) {
  Plain P = {m, m + n, 1, 1, NULL, NULL, NULL, 0, 0, 0};
  memset(info, 0, sizeof *info);
  info->ev = -1;
  if (n && !plain_members(&P, 0, 0)) return -1;
  const char *t;
  size_t tn;
  char name[32];
  if (P.vev && raw_string(P.vev, P.nev, &t, &tn) && tn < sizeof name) {
    memcpy(name, t, tn);
    name[tn] = '\0';
    info->ev = store_event_parse(name);
  }
  if (P.vat && P.nat <= 19 && P.vat[0] != '-') {   /* a non-negative integer that fits */
    uint64_t a = 0;
    size_t i = 0;
    while (i < P.nat && P.vat[i] >= '0' && P.vat[i] <= '9') a = a * 10 + (uint64_t)(P.vat[i++] - '0');
    if (i == P.nat && i) info->has_attempt = 1, info->attempt = a;
  }
  if (P.vkey && raw_string(P.vkey, P.nkey, &t, &tn)) {
    char hex[65];
    if (tn == 64) {
      memcpy(hex, t, 64);
      hex[64] = '\0';
      info->has_key = store_hash_parse(hex, info->key) == STORE_OK;
    }
    /* an older kernel's: the key itself (unless redaction replaced it) */
    if (!info->has_key && legacy_keys && tn && !(tn == 10 && !memcmp(t, "[redacted]", 10)))
      info->has_key = st_sha256(NULL, t, tn, info->key) == STORE_OK;
  } else if (P.vkey && legacy_keys) {
    return -1;   /* escaped: the caller parses it */
  }
  return 0;
}

void st_evinfo_of_object(json_t *o, st_evinfo *info, int legacy_keys) {
  memset(info, 0, sizeof *info);
  info->ev = store_event_parse(json_string_value(json_object_get(o, "event")));
  json_t *a = json_object_get(o, "attempt");
  if (json_is_integer(a) && json_integer_value(a) >= 0)
    info->has_attempt = 1, info->attempt = (uint64_t)json_integer_value(a);
  const char *k = json_string_value(json_object_get(o, "idempotency"));
  if (!k) return;
  if (strlen(k) == 64 && store_hash_parse(k, info->key) == STORE_OK)
    info->has_key = 1;
  else if (legacy_keys && *k && strcmp(k, "[redacted]"))   /* an older kernel's: the key itself */
    info->has_key = st_sha256(NULL, k, strlen(k), info->key) == STORE_OK;
}

/* The record of an event given as plain members: what render writes for
** its object.  -1: too long (the object's way bounds it). */
static int render_members(const char *m, size_t mlen, uint64_t seq, int64_t now, char **buf, size_t *cap,
                          size_t *len) {
  char head[64];
  size_t h = (size_t)snprintf(head, sizeof head, "{\"seq\":%llu,\"time\":%lld", (unsigned long long)seq,
                              (long long)now);
  size_t n = h + (mlen ? 1 + mlen : 0) + 1;
  if (n > STORE_EVENT_MAX) return -1;
  if (n + 1 > *cap) {
    size_t c = *cap < 512 ? 512 : *cap;
    while (c < n + 1) c *= 2;
    char *b = realloc(*buf, c);
    if (!b) return -2;
    *buf = b;
    *cap = c;
  }
  char *o = *buf;
  memcpy(o, head, h);
  if (mlen) {
    o[h] = ',';
    memcpy(o + h + 1, m, mlen);
  }
  o[n - 1] = '}';
  o[n] = '\0';
  *len = n;
  return 0;
}

int st_events_prepare(store_env *s, const store_ev *ev, size_t n, json_t ***objp) {
  *objp = NULL;
  if (!n) return STORE_OK;
  if (!ev) return st_fail(s, STORE_EINVAL, "no events");
  /* the objects to write: the events', and those of the texts that are
  ** not plain (parsed here) */
  json_t **obj = calloc(n, sizeof *obj);
  if (!obj) return st_fail(s, STORE_ENOMEM, "out of memory writing events");
  int r = STORE_OK;
  for (size_t i = 0; r == STORE_OK && i < n; i++) {
    const store_ev *e = &ev[i];
    int plain = e->obj ? 0 : e->members ? members_plain(e->members, e->len) : 0;
    if (e->obj) {
      obj[i] = json_incref(e->obj);
    } else if (plain < 0) {
      r = st_fail(s, STORE_EINVAL, "an event's members are not JSON members text");
    } else if (!plain || e->len + 64 > STORE_EVENT_MAX) {
      json_error_t jerr = {0};   /* no text: out of memory */
      obj[i] = jtext_load_members(e->members, e->members ? e->len : 0, JSON_REJECT_DUPLICATES, &jerr);
      if (!obj[i])
        r = jerr.text[0] ? st_fail(s, STORE_EINVAL, "an event's members are not JSON members text")
                         : st_fail(s, STORE_ENOMEM, "out of memory writing events");
    }
    if (r == STORE_OK && obj[i]) r = st_events_check(s, &obj[i], 1);
  }
  if (r != STORE_OK) {
    st_events_release(obj, n);
    return r;
  }
  *objp = obj;
  return STORE_OK;
}

store_ev *st_ev_of_objects(json_t *const *objs, const int64_t *times, size_t n) {
  store_ev *ev = malloc((n ? n : 1) * sizeof *ev);
  for (size_t i = 0; ev && i < n; i++) ev[i] = (store_ev){objs ? objs[i] : NULL, NULL, 0, times ? times[i] : 0};
  return ev;
}

void st_events_release(json_t **obj, size_t n) {
  for (size_t i = 0; obj && i < n; i++) json_decref(obj[i]);
  free(obj);
}

int st_event_render(store_env *s, const store_ev *e, json_t *obj, uint64_t seq, int64_t t, char **buf,
                    size_t *cap, char **text, size_t *len) {
  if (obj) return render(s, obj, seq, t, buf, cap, text, len);
  if (render_members(e->members, e->len, seq, t, buf, cap, len) != 0)
    return st_fail(s, STORE_ENOMEM, "out of memory writing an event");
  *text = *buf;
  return STORE_OK;
}

int st_events_put_ev(store_env *s, MDB_txn *txn, const store_ev *ev, json_t *const *obj, size_t n,
                     uint64_t *first) {
  uint64_t seq = 0, mark = 0;
  int64_t now = st_now_ms();
  int r = last_seq(s, txn, &seq);
  char *buf = NULL;
  size_t cap = 0;
  for (size_t i = 0; r == STORE_OK && i < n; i++) {
    const store_ev *e = &ev[i];
    uint8_t key[8];
    char *text = NULL;
    size_t len = 0;
    int64_t t = e->time_ms ? e->time_ms : now;
    st_evinfo info;
    if (++seq, i == 0 && first) *first = seq;
    if (obj[i]) st_evinfo_of_object(obj[i], &info, 0);
    else st_evinfo_of_members(e->members, e->len, &info, 0);   /* plain: vouched for */
    r = st_event_render(s, e, obj[i], seq, t, &buf, &cap, &text, &len);
    if (r != STORE_OK) break;
    st_put_u64(key, seq);
    r = st_put(s, txn, s->events, key, 8, text, len, MDB_APPEND, "writing an event");
    if (r == STORE_OK) r = st_index_event(s, txn, seq, &info, text, len, &mark);
    if (text != buf) free(text);
  }
  free(buf);
  if (r == STORE_OK && mark) r = st_raise_attempt(s, txn, mark);
  return r;
}

typedef struct app_ev { const store_ev *ev; json_t **obj; size_t n; uint64_t seq; } app_ev;

static int append_ev_txn(store_env *s, MDB_txn *txn, void *arg) {
  app_ev *a = arg;
  return st_events_put_ev(s, txn, a->ev, a->obj, a->n, &a->seq);
}

int store_events_append_later(store_env *s, const store_ev *ev, size_t n, uint64_t *first_seq) {
  s->msg[0] = '\0';
  if (!n) return STORE_OK;
  app_ev a = { ev, NULL, n, 0 };
  int r = st_events_prepare(s, ev, n, &a.obj);
  if (r == STORE_OK) r = st_write(s, append_ev_txn, &a, ST_W_SYNC_LATER);
  if (r == STORE_OK && first_seq) *first_seq = a.seq;
  st_events_release(a.obj, n);
  return r;
}

typedef struct app { json_t **objs; const int64_t *times; size_t n; uint64_t seq; } app;

static int append_txn(store_env *s, MDB_txn *txn, void *arg) {
  app *a = arg;
  return st_events_put(s, txn, a->objs, a->times, a->n, &a->seq);
}

int st_events_check(store_env *s, json_t *const *objs, size_t n) {
  if (n && !objs) return st_fail(s, STORE_EINVAL, "no events");
  for (size_t i = 0; i < n; i++) {
    if (!json_is_object(objs[i])) return st_fail(s, STORE_EINVAL, "an event must be a JSON object");
    if (scrub(objs[i], 0) != 0) return st_fail(s, STORE_ENOMEM, "out of memory redacting an event");
  }
  return STORE_OK;
}

static int append(store_env *s, json_t *const *objs, const int64_t *time_ms, size_t n, uint64_t *first_seq,
                  int wflags) {
  app a = { (json_t **)objs, time_ms, n, 0 };
  s->msg[0] = '\0';
  if (!n) return STORE_OK;
  int r = st_events_check(s, objs, n);
  if (r != STORE_OK) return r;
  r = st_write(s, append_txn, &a, wflags);
  if (r == STORE_OK && first_seq) *first_seq = a.seq;
  return r;
}

int store_events_append_objects(store_env *s, json_t *const *objs, const int64_t *time_ms, size_t n,
                                uint64_t *first_seq) {
  return append(s, objs, time_ms, n, first_seq, 0);
}

int store_event_append(store_env *s, const char *json, uint64_t *seq) {
  json_error_t jerr;
  s->msg[0] = '\0';
  json_t *o = json ? json_loads(json, JSON_REJECT_DUPLICATES, &jerr) : NULL;
  if (!o)
    return st_fail(s, STORE_EINVAL, "an event is not valid JSON: %s (column %d)", json ? jerr.text : "no text",
                   json ? jerr.column : 0);
  int r = store_events_append_objects(s, &o, NULL, 1, seq);
  json_decref(o);
  return r;
}

int store_events_read(store_env *s, uint64_t from_seq, size_t max,
                      unsigned flags, store_event_fn fn, void *arg) {
  MDB_txn *txn;
  MDB_cursor *cur = NULL;
  MDB_val k, v;
  uint8_t key[8];
  int back = (flags & STORE_NEWEST_FIRST) != 0, rc, r;
  size_t done = 0;
  s->msg[0] = '\0';
  if (!fn) return st_fail(s, STORE_EINVAL, "store_events_read: no callback");
  if ((r = st_read_begin(s, &txn)) != STORE_OK) return r;
  if ((rc = mdb_cursor_open(txn, s->events, &cur)) != 0) {
    r = st_mdb(s, rc, "reading events");
    goto out;
  }
  st_put_u64(key, from_seq);
  k.mv_data = key;
  k.mv_size = 8;
  if (back) {
    if (from_seq == 0) rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    else {
      rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);   /* first >= from */
      if (rc == MDB_NOTFOUND) rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
      else if (rc == 0 && k.mv_size == 8 && st_get_u64(k.mv_data) > from_seq)
        rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
    }
  } else {
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  }
  for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, back ? MDB_PREV : MDB_NEXT)) {
    if (k.mv_size != 8) { r = st_fail(s, STORE_ECORRUPT, "an event key is malformed"); goto out; }
    if (max && done >= max) break;
    done++;
    if (fn(arg, st_get_u64(k.mv_data), v.mv_data, v.mv_size)) break;
  }
  if (rc && rc != MDB_NOTFOUND) r = st_mdb(s, rc, "reading events");
out:
  if (cur) mdb_cursor_close(cur);
  mdb_txn_abort(txn);
  return r;
}
