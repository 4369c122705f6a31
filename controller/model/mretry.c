/*
** mretry.c — the SDKs' retry policy and a POST that follows it (mretry.h).
*/
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include "mcurl.h"
#include "mretry.h"

int mretry_status_retryable(long status, const char *should_retry) {
  if (should_retry && !strcmp(should_retry, "true")) return 1;
  if (should_retry && !strcmp(should_retry, "false")) return 0;
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

/* A number as Python's float() reads it: optional blanks around a decimal
** or "inf"/"nan" literal; 0 when s is not one. */
static int parse_float(const char *s, double *out) {
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (end == s) return 0;
  while (*end == ' ' || *end == '\t') end++;
  if (*end) return 0;
  /* strtod also reads hexadecimal floats, which float() does not */
  const char *p = s;
  while (*p == ' ' || *p == '\t' || *p == '+' || *p == '-') p++;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return 0;
  *out = d;
  return 1;
}

double mretry_server_delay(const char *retry_after_ms, const char *retry_after, double now) {
  double d;
  if (parse_float(retry_after_ms, &d)) return d / 1000.0;
  if (parse_float(retry_after, &d)) return d;
  const mcurl_Api *curl;
  if (retry_after && *retry_after && (curl = mcurl())) {
    time_t t = curl->getdate(retry_after, NULL);
    if (t != (time_t)-1) return (double)t - now;
  }
  return -1.0;
}

double mretry_delay(int retries_taken, double server_delay, double r, int *from_server) {
  if (isfinite(server_delay) && server_delay > 0 && server_delay <= MRETRY_MAX_SERVER_DELAY) {
    if (from_server) *from_server = 1;
    return server_delay;
  }
  if (from_server) *from_server = 0;
  int n = retries_taken < 1000 ? retries_taken : 1000;
  double s = fmin(MRETRY_INITIAL_DELAY * pow(2.0, n), MRETRY_MAX_DELAY);
  double w = s * (1.0 - 0.25 * r);
  return w >= 0 ? w : 0;
}

/* Uniform in [0, 1) from the kernel's random source. */
static double jitter(void) {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) v = (uint32_t)rand();
  return v / 4294967296.0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep for s seconds in short slices; 0, or -1 when intr was set. */
static int wait_for(double s, volatile sig_atomic_t *intr) {
  struct timespec end, now;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += (time_t)s;
  end.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
  if (end.tv_nsec >= 1000000000L) end.tv_sec++, end.tv_nsec -= 1000000000L;
  for (;;) {
    if (intr && *intr) return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = (double)(end.tv_sec - now.tv_sec) + (end.tv_nsec - now.tv_nsec) / 1e9;
    if (left <= 0) return 0;
    if (left > 0.05) left = 0.05;
    struct timespec sl = {0, (long)(left * 1e9)};
    nanosleep(&sl, NULL);
  }
}

mhttp_Error mretry_post(mhttp *h, const mretry_Policy *p, const char *url, const char *const *headers,
                        const char *body, size_t len, mhttp_sink sink, void *ud, mhttp_Response *r,
                        mretry_Attempt *attempts, int max_attempts, int *nattempts) {
  int max_retries = p && p->max_retries >= 0 ? p->max_retries : MRETRY_DEFAULT_RETRIES;
  volatile sig_atomic_t *intr = p ? p->intr : NULL;
  size_t nh = 0;
  while (headers && headers[nh]) nh++;
  const char **hv = calloc(nh + 2, sizeof *hv);
  if (!hv) {
    memset(r, 0, sizeof *r);
    r->error = MHTTP_ENOMEM;
    snprintf(r->errmsg, sizeof r->errmsg, "out of memory");
    if (nattempts) *nattempts = 0;
    return r->error;
  }
  for (size_t i = 0; i < nh; i++) hv[i] = headers[i];
  char count[64];
  hv[nh] = count;
  int taken = 0, made = 0;
  mhttp_Error e;
  for (;; taken++) {
    snprintf(count, sizeof count, "x-stainless-retry-count: %d", taken);
    e = mhttp_post(h, url, hv, body, len, sink, ud, r);
    made++;
    if (attempts && taken < max_attempts)
      attempts[taken] = (mretry_Attempt){.status = r->status, .error = e};
    int retry;
    if (e == MHTTP_ECONNECT || e == MHTTP_ETIMEOUT || e == MHTTP_ETRANSPORT)
      retry = !r->streamed;
    else if (e == MHTTP_OK)
      retry = (r->status < 200 || r->status >= 300) && mretry_status_retryable(r->status, r->should_retry);
    else
      retry = 0;   /* stopped by the sink, too big, out of memory */
    if (!retry || taken >= max_retries) break;
    int from_server = 0;
    double d = mretry_delay(taken, e == MHTTP_OK ? mretry_server_delay(r->retry_after_ms, r->retry_after, now_seconds())
                                                 : -1.0,
                            jitter(), &from_server);
    if (attempts && taken < max_attempts) {
      attempts[taken].wait = d;
      attempts[taken].server_wait = from_server;
    }
    if (p && p->on_retry) {
      mretry_Attempt a = {.status = r->status, .error = e, .wait = d, .server_wait = from_server};
      p->on_retry(p->ud, &a, taken + 1, max_retries);
    }
    if (wait_for(d, intr)) {
      e = MHTTP_ESTOPPED;
      snprintf(r->errmsg, sizeof r->errmsg, "interrupted while waiting to retry");
      break;
    }
    mhttp_response_free(r);
  }
  free(hv);
  if (nattempts) *nattempts = made;
  return e;
}
