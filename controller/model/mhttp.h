/*
** mhttp.h — HTTP POST over one reused libcurl handle.  controller/model/
** is the only part of jiti that uses libcurl: here, and curl_getdate for
** retry-after dates (mretry.c), both through mcurl.h, which loads the
** library at the first use.  The etcd client (controller/etcd/) sends its
** requests through this transport.
**
** One mhttp is one connection cache: consecutive requests to the same
** server reuse the TCP/TLS connection (keep-alive).  Not thread-safe; use
** one per thread.
**
** Timeouts: connecting (default 5 s) and the whole request including a
** streamed body (default 600 s), both settable.  Credentials are passed as
** request headers by the caller and never stored or printed here; URLs
** must not carry credentials (they appear in curl's error messages).
*/
#ifndef jiti_mhttp_h
#define jiti_mhttp_h

#include <signal.h>
#include <stddef.h>

typedef struct mhttp mhttp;

/* Transport outcome of one request. */
typedef enum mhttp_Error {
  MHTTP_OK = 0,       /* a complete HTTP response arrived (any status) */
  MHTTP_ECONNECT,     /* could not resolve or connect */
  MHTTP_ETIMEOUT,     /* the connect or request timeout expired */
  MHTTP_ETRANSPORT,   /* the connection broke: reset, truncated body, bad HTTP */
  MHTTP_ESTOPPED,     /* the body callback asked to stop, or the interrupt flag was set */
  MHTTP_ETOOBIG,      /* a collected body passed its limit */
  MHTTP_ENOMEM
} mhttp_Error;

/* "ok", "connect", "timeout", "transport", "stopped", "too-big", "no-memory". */
const char *mhttp_error_name(mhttp_Error e);

typedef struct mhttp_Response {
  long status;             /* HTTP status; 0 when none arrived */
  mhttp_Error error;
  char errmsg[256];        /* curl's description of a transport error */
  char *body;              /* NUL-terminated; the whole body unless streamed to the sink */
  size_t len;
  int streamed;            /* bytes of a 2xx body went to the sink */
  /* response headers the clients need (last value wins; "" when absent) */
  char retry_after[64], retry_after_ms[64], should_retry[16];
  char request_id[128], content_type[128];
} mhttp_Response;

/* Body bytes of a 2xx response as they arrive.  Return 0 to go on,
** non-zero to stop (the request ends with MHTTP_ESTOPPED). */
typedef int (*mhttp_sink)(void *ud, const char *data, size_t len);

/* A new client, NULL when libcurl or memory fails (mcurl_error() says
** why libcurl did).  Loads and initialises libcurl once per process. */
mhttp *mhttp_new(void);
void mhttp_free(mhttp *h);

/* Timeouts in milliseconds; 0 keeps the current value. */
void mhttp_set_timeouts(mhttp *h, long connect_ms, long request_ms);

/* A flag a signal handler sets (may be NULL): a request in flight stops
** (MHTTP_ESTOPPED) within about a second of it being set. */
void mhttp_set_interrupt(mhttp *h, volatile sig_atomic_t *intr);

/* The next request goes on a new connection.  On a reused connection that
** dies before any answer, libcurl sends a request again by itself, on a
** fresh one: a write must not be sent twice without its caller knowing
** (the etcd client's writes), so it goes on a connection of its own, and a
** connection that breaks is then MHTTP_ETRANSPORT (the request may have
** been acted on), never a silent second send. */
void mhttp_fresh_connect(mhttp *h);
/* POST body (len bytes, application/json) to url with the extra headers
** (NULL-terminated "Name: value" strings; may be NULL).  sink (may be
** NULL): receives the body of a 2xx response instead of r->body.  Fills
** *r (free with mhttp_response_free) and returns r->error. */
mhttp_Error mhttp_post(mhttp *h, const char *url, const char *const *headers, const char *body,
                       size_t len, mhttp_sink sink, void *ud, mhttp_Response *r);

void mhttp_response_free(mhttp_Response *r);

#endif
