/*
** fuzz_frames.c — libFuzzer harness for the kernel<->worker framing: any
** bytes, split into frames by the buffered reader the kernel and the
** worker both use (worker/wire.c); every whole frame's JSON is parsed and
** its blob handed back.  A malformed stream must be refused with a message,
** never read out of bounds, and never make the reader allocate what the
** header merely claims.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "worker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wire_reader r = {0};
  /* the bytes arrive in two reads, split where the first byte says */
  size_t cut = size ? data[0] % (size + 1) : 0;
  for (int part = 0; part < 2; part++) {
    size_t from = part ? cut : 0, to = part ? size : cut;
    if (to > from) {
      if (r.len + (to - from) > r.cap) {
        size_t cap = r.len + (to - from);
        unsigned char *p = realloc(r.buf, cap);
        if (!p) abort();
        r.buf = p;
        r.cap = cap;
      }
      memcpy(r.buf + r.len, data + from, to - from);
      r.len += to - from;
    }
    for (;;) {
      json_t *msg = NULL;
      unsigned char *blob = NULL;
      size_t bloblen = 0;
      char err[256];
      int got = wire_next(&r, &msg, &blob, &bloblen, err, sizeof err);
      if (got <= 0) {
        if (got < 0) part = 2;  /* malformed: the connection would be dropped */
        break;
      }
      json_decref(msg);
      free(blob);
    }
  }
  wire_reader_reset(&r);
  return 0;
}
