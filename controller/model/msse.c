/*
** msse.c — server-sent events parser (msse.h).
*/
#include <stdlib.h>
#include <string.h>
#include "msse.h"

void msse_init(msse *p, msse_callback cb, void *ud, size_t max_event) {
  memset(p, 0, sizeof *p);
  p->cb = cb;
  p->ud = ud;
  p->max_event = max_event ? max_event : (size_t)16 << 20;
}

void msse_free(msse *p) {
  free(p->line);
  free(p->data);
  p->line = p->data = NULL;
}

int msse_cut(const msse *p) { return p->pending || p->line_len > 0; }

static int grow(char **b, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 256;
  while (n < need) n *= 2;
  char *nb = realloc(*b, n);
  if (!nb) return -1;
  *b = nb;
  *cap = n;
  return 0;
}

static int dispatch(msse *p) {
  int rc = 0;
  if (p->has_data) {
    /* the standard drops the data's final "\n" (each data line adds one) */
    if (p->data_len) p->data_len--;
    p->data[p->data_len] = 0;
    rc = p->cb(p->ud, p->event, p->data, p->data_len);
  }
  p->data_len = 0;
  p->has_data = 0;
  p->pending = 0;
  p->event[0] = 0;
  return rc;
}

/* One complete line (without its end). */
static int line(msse *p, const char *s, size_t n) {
  if (n == 0) return dispatch(p);
  if (s[0] == ':') return 0;  /* comment */
  const char *colon = memchr(s, ':', n);
  size_t flen = colon ? (size_t)(colon - s) : n;
  const char *v = colon ? colon + 1 : s + n;
  size_t vlen = colon ? n - flen - 1 : 0;
  if (vlen && *v == ' ') v++, vlen--;
  if (flen == 4 && !memcmp(s, "data", 4)) {
    if (p->data_len + vlen + 1 > p->max_event) return MSSE_ETOOBIG;
    if (grow(&p->data, &p->data_cap, p->data_len + vlen + 2)) return MSSE_ENOMEM;
    memcpy(p->data + p->data_len, v, vlen);
    p->data_len += vlen;
    p->data[p->data_len++] = '\n';
    p->has_data = 1;
    p->pending = 1;
  } else if (flen == 5 && !memcmp(s, "event", 5)) {
    size_t m = vlen < sizeof p->event - 1 ? vlen : sizeof p->event - 1;
    memcpy(p->event, v, m);
    p->event[m] = 0;
    p->pending = 1;
  } else {
    p->pending = 1;   /* id, retry, or a field the standard says to ignore */
  }
  return 0;
}

int msse_feed(msse *p, const char *buf, size_t len) {
  size_t i = 0;
  if (!p->started && len) {
    p->started = 1;
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) i = 3;
  }
  while (i < len) {
    if (p->cr && buf[i] == '\n') {   /* the "\n" of a "\r\n" */
      p->cr = 0;
      i++;
      continue;
    }
    p->cr = 0;
    const char *start = buf + i;
    size_t rest = len - i, n = 0;
    while (n < rest && start[n] != '\n' && start[n] != '\r') n++;
    if (n == rest) {   /* no line end yet: keep the piece */
      if (p->line_len + n > p->max_event + 64) return MSSE_ETOOBIG;
      if (grow(&p->line, &p->line_cap, p->line_len + n + 1)) return MSSE_ENOMEM;
      memcpy(p->line + p->line_len, start, n);
      p->line_len += n;
      break;
    }
    int rc;
    if (p->line_len) {
      if (grow(&p->line, &p->line_cap, p->line_len + n + 1)) return MSSE_ENOMEM;
      memcpy(p->line + p->line_len, start, n);
      size_t total = p->line_len + n;
      p->line_len = 0;
      rc = line(p, p->line, total);
    } else {
      rc = line(p, start, n);
    }
    if (start[n] == '\r') p->cr = 1;
    i += n + 1;
    if (rc) return rc;
  }
  return 0;
}
