/*
** mretry.h — the retry policy of the official OpenAI SDKs, and a POST
** that follows it.
**
** Retried, while retries remain (default 2, so at most 3 attempts):
** a connection error or timeout (unless a streamed 2xx response had
** begun: then the stream's failure is final), and a response whose status
** is 408, 409, 429 or >= 500.  An "x-should-retry: true" or "false" header
** overrides the status.  Never retried: other 4xx, and any 2xx.
**
** The wait before retry n (n = retries already taken, from 0): the
** server's "retry-after-ms" (milliseconds) or "retry-after" (seconds, or an
** HTTP date) when that is > 0 and <= 60 s; otherwise
** min(0.5 * 2^n, 8) s * (1 - 0.25 * r), r uniform in [0, 1).
** Each attempt sends "x-stainless-retry-count: n".
*/
#ifndef jiti_mretry_h
#define jiti_mretry_h

#include <signal.h>
#include <time.h>
#include "mhttp.h"

#define MRETRY_DEFAULT_RETRIES 2
#define MRETRY_INITIAL_DELAY 0.5
#define MRETRY_MAX_DELAY 8.0
#define MRETRY_MAX_SERVER_DELAY 60.0

/* ---- the policy, as pure functions */

/* 1 when a response with this status and x-should-retry value (may be
** NULL or "") should be retried (retries remaining is the caller's test). */
int mretry_status_retryable(long status, const char *should_retry);

/* The server's requested wait in seconds from the two headers (NULL or ""
** when absent), now = the current time (seconds since the epoch, for an
** HTTP date); a negative value when neither gives a number. */
double mretry_server_delay(const char *retry_after_ms, const char *retry_after, double now);

/* The wait before the retry that follows retries_taken retries: the
** server's delay when 0 < delay <= 60, else the backoff with jitter
** r in [0, 1).  *from_server (may be NULL) says which. */
double mretry_delay(int retries_taken, double server_delay, double r, int *from_server);

/* ---- a POST with retries */

typedef struct mretry_Attempt {
  long status;             /* HTTP status, 0 when none */
  mhttp_Error error;       /* transport outcome */
  double wait;             /* seconds waited after it before the next attempt (0 if none) */
  int server_wait;         /* the wait came from retry-after(-ms) */
} mretry_Attempt;

typedef struct mretry_Policy {
  int max_retries;                  /* < 0: MRETRY_DEFAULT_RETRIES */
  volatile sig_atomic_t *intr;      /* may be NULL: set by a signal, stops the waiting */
  /* may be NULL: told before each wait, with the attempt that failed
     (its wait chosen) and the retry about to come (1, 2, ...) of max */
  void (*on_retry)(void *ud, const mretry_Attempt *a, int retry, int max_retries);
  void *ud;
} mretry_Policy;

/* POST as mhttp_post, with the retries of the policy.  *r is the last
** attempt's response.  attempts (may be NULL) receives one record per
** attempt, up to max_attempts of them; *nattempts (may be NULL) how many
** were made.  Returns the last attempt's mhttp error; MHTTP_ESTOPPED also
** when the intr flag was set while waiting (then r->status may be a
** retryable status). */
mhttp_Error mretry_post(mhttp *h, const mretry_Policy *p, const char *url, const char *const *headers,
                        const char *body, size_t len, mhttp_sink sink, void *ud, mhttp_Response *r,
                        mretry_Attempt *attempts, int max_attempts, int *nattempts);

#endif
