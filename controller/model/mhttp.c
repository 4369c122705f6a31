/*
** mhttp.c — HTTP POST over one reused libcurl easy handle (mhttp.h).
*/
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "mcurl.h"
#include "mhttp.h"

#define DEFAULT_CONNECT_MS 5000L
#define DEFAULT_REQUEST_MS 600000L
#define DEFAULT_MAX_BODY ((size_t)64 << 20)
#define MAX_ERROR_BODY ((size_t)1 << 20)

struct mhttp {
  const mcurl_Api *api;
  CURL *curl;
  long connect_ms, request_ms;
  size_t max_body;
  volatile sig_atomic_t *intr;
  int fresh;   /* the next request on a connection of its own */
};

typedef struct Xfer {
  mhttp *h;
  mhttp_Response *r;
  mhttp_sink sink;
  void *ud;
  size_t cap;
  int stopped, too_big, nomem;
} Xfer;

const char *mhttp_error_name(mhttp_Error e) {
  static const char *const names[] = {"ok", "connect", "timeout", "transport", "stopped", "too-big", "no-memory"};
  return (unsigned)e < sizeof names / sizeof *names ? names[e] : "?";
}

mhttp *mhttp_new(void) {
  const mcurl_Api *api = mcurl();
  if (!api) return NULL;
  mhttp *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->api = api;
  h->curl = api->easy_init();
  if (!h->curl) {
    free(h);
    return NULL;
  }
  h->connect_ms = DEFAULT_CONNECT_MS;
  h->request_ms = DEFAULT_REQUEST_MS;
  h->max_body = DEFAULT_MAX_BODY;
  return h;
}

void mhttp_free(mhttp *h) {
  if (!h) return;
  h->api->easy_cleanup(h->curl);
  free(h);
}

void mhttp_set_timeouts(mhttp *h, long connect_ms, long request_ms) {
  if (connect_ms > 0) h->connect_ms = connect_ms;
  if (request_ms > 0) h->request_ms = request_ms;
}

void mhttp_set_interrupt(mhttp *h, volatile sig_atomic_t *intr) { h->intr = intr; }

/* curl calls this about once a second, and whenever data moves. */
static int on_progress(void *ud, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln) {
  (void)dlt, (void)dln, (void)ult, (void)uln;
  Xfer *x = ud;
  if (x->h->intr && *x->h->intr) {
    x->stopped = 1;
    return 1;
  }
  return 0;
}

void mhttp_response_free(mhttp_Response *r) {
  free(r->body);
  r->body = NULL;
  r->len = 0;
}

static int append(Xfer *x, const char *d, size_t n, size_t max) {
  mhttp_Response *r = x->r;
  if (r->len + n > max) {
    x->too_big = 1;
    return -1;
  }
  if (r->len + n + 1 > x->cap) {
    size_t c = x->cap ? x->cap : 4096;
    while (c < r->len + n + 1) c *= 2;
    char *b = realloc(r->body, c);
    if (!b) {
      x->nomem = 1;
      return -1;
    }
    r->body = b;
    x->cap = c;
  }
  memcpy(r->body + r->len, d, n);
  r->len += n;
  r->body[r->len] = 0;
  return 0;
}

static size_t on_body(char *d, size_t size, size_t nmemb, void *ud) {
  Xfer *x = ud;
  size_t n = size * nmemb;
  long status = 0;
  x->h->api->easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &status);
  x->r->status = status;
  if (x->sink && status >= 200 && status < 300) {
    x->r->streamed = 1;
    if (x->sink(x->ud, d, n)) {
      x->stopped = 1;
      return 0;   /* makes curl stop with CURLE_WRITE_ERROR */
    }
    return n;
  }
  return append(x, d, n, x->sink ? MAX_ERROR_BODY : x->h->max_body) ? 0 : n;
}

/* Copy a header value, trimmed, into dst. */
static void header_value(char *dst, size_t cap, const char *v, size_t n) {
  while (n && (*v == ' ' || *v == '\t')) v++, n--;
  while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (n >= cap) n = cap - 1;
  memcpy(dst, v, n);
  dst[n] = 0;
}

static size_t on_header(char *d, size_t size, size_t nmemb, void *ud) {
  Xfer *x = ud;
  mhttp_Response *r = x->r;
  size_t n = size * nmemb;
  if (n >= 5 && !memcmp(d, "HTTP/", 5)) {   /* a new header block (after 100 Continue, redirects) */
    r->retry_after[0] = r->retry_after_ms[0] = r->should_retry[0] = 0;
    r->request_id[0] = r->content_type[0] = 0;
    return n;
  }
  if (n <= 2 && (d[0] == '\r' || d[0] == '\n')) {   /* the end of a header block */
    long status = 0;
    x->h->api->easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &status);
    r->status = status;
    /* a streamed 2xx response has begun: like the SDKs, what breaks from
       here on is the stream's failure, not the request's (never retried) */
    if (x->sink && status >= 200 && status < 300) r->streamed = 1;
    return n;
  }
  const char *colon = memchr(d, ':', n);
  if (!colon) return n;
  size_t klen = (size_t)(colon - d);
  const char *v = colon + 1;
  size_t vlen = n - klen - 1;
  static const struct { const char *name; size_t off, cap; } wanted[] = {
    {"retry-after", offsetof(mhttp_Response, retry_after), sizeof ((mhttp_Response *)0)->retry_after},
    {"retry-after-ms", offsetof(mhttp_Response, retry_after_ms), sizeof ((mhttp_Response *)0)->retry_after_ms},
    {"x-should-retry", offsetof(mhttp_Response, should_retry), sizeof ((mhttp_Response *)0)->should_retry},
    {"x-request-id", offsetof(mhttp_Response, request_id), sizeof ((mhttp_Response *)0)->request_id},
    {"content-type", offsetof(mhttp_Response, content_type), sizeof ((mhttp_Response *)0)->content_type},
  };
  for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++)
    if (strlen(wanted[i].name) == klen && !strncasecmp(d, wanted[i].name, klen))
      header_value((char *)r + wanted[i].off, wanted[i].cap, v, vlen);
  return n;
}

static mhttp_Error classify(CURLcode c) {
  switch (c) {
  case CURLE_OK: return MHTTP_OK;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_CONNECT:
    return MHTTP_ECONNECT;
  case CURLE_OPERATION_TIMEDOUT: return MHTTP_ETIMEOUT;
  case CURLE_OUT_OF_MEMORY: return MHTTP_ENOMEM;
  default: return MHTTP_ETRANSPORT;
  }
}

void mhttp_fresh_connect(mhttp *h) { h->fresh = 1; }

mhttp_Error mhttp_post(mhttp *h, const char *url, const char *const *headers, const char *body,
                       size_t len, mhttp_sink sink, void *ud, mhttp_Response *r) {
  memset(r, 0, sizeof *r);
  Xfer x = {.h = h, .r = r, .sink = sink, .ud = ud};
  const mcurl_Api *C = h->api;
  struct curl_slist *hl = NULL, *t;
  hl = C->slist_append(hl, "Content-Type: application/json");
  if (hl && (t = C->slist_append(hl, "Expect:"))) hl = t;  /* no 100-continue round trip */
  for (size_t i = 0; hl && headers && headers[i]; i++) {
    t = C->slist_append(hl, headers[i]);
    if (!t) {
      C->slist_free_all(hl);
      hl = NULL;
    } else {
      hl = t;
    }
  }
  if (!hl) {
    r->error = MHTTP_ENOMEM;
    snprintf(r->errmsg, sizeof r->errmsg, "out of memory");
    return r->error;
  }
  CURL *c = h->curl;
  C->easy_reset(c);   /* keeps the connection cache: the next request reuses the connection */
  char curlerr[CURL_ERROR_SIZE] = "";
  C->easy_setopt(c, CURLOPT_URL, url);
  C->easy_setopt(c, CURLOPT_POST, 1L);
  C->easy_setopt(c, CURLOPT_POSTFIELDS, body);
  C->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  C->easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  C->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  C->easy_setopt(c, CURLOPT_WRITEDATA, &x);
  C->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  C->easy_setopt(c, CURLOPT_HEADERDATA, &x);
  C->easy_setopt(c, CURLOPT_ERRORBUFFER, curlerr);
  C->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
  C->easy_setopt(c, CURLOPT_TIMEOUT_MS, h->request_ms);
  C->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);           /* no SIGALRM for DNS timeouts */
  C->easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  C->easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");    /* any encoding curl can decode */
  C->easy_setopt(c, CURLOPT_USERAGENT, "jiti/" JITI_MODEL_VERSION);
  C->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);     /* never resend the key to another place */
  C->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (h->fresh) {   /* never on a reused connection: libcurl would send it again by itself */
    C->easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
    h->fresh = 0;
  }
  if (h->intr) {
    C->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    C->easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    C->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  CURLcode rc = C->easy_perform(c);
  C->slist_free_all(hl);
  long status = 0;
  C->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  r->status = status;
  if (x.stopped) r->error = MHTTP_ESTOPPED;
  else if (x.too_big) r->error = MHTTP_ETOOBIG;
  else if (x.nomem) r->error = MHTTP_ENOMEM;
  else r->error = classify(rc);
  if (r->error != MHTTP_OK)
    snprintf(r->errmsg, sizeof r->errmsg, "%s", curlerr[0] ? curlerr : C->easy_strerror(rc));
  if (!r->body && !r->error) {   /* an empty body: still a string */
    r->body = calloc(1, 1);
    if (!r->body) r->error = MHTTP_ENOMEM;
  }
  return r->error;
}
