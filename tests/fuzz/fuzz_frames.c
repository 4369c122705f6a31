/*
** fuzz_frames.c — libFuzzer harness for the kernel<->worker framing: any
** bytes, split into frames by the buffered reader the kernel and the
** worker both use (worker/wire.c); every whole frame's JSON is parsed and
** its blob handed back.  A malformed stream must be refused with a message,
** never read out of bounds, and never make the reader allocate what the
** header merely claims.  Every frame read is then checked as the kernel
** checks its worker's (engine/vouch.c: the frames a compromised worker
** forges), against an expectation the input's first byte picks: a frame
** is accepted or refused with a rule, whatever it holds.  A frame with
** "definitions" is taken for a shadow's report (which comes on the report
** socket, not as a frame: its records hold the same JSON).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "engine.h"
#include "txn.h"
#include "wire.h"

static vouch_Checker checker;
static grant_List grant = {{"libm.so.6"}, 1};

/* The kernel's check of a frame, as if it answered a request picked by k. */
static void vouch(json_t *m, const unsigned char *blob, size_t bloblen, uint8_t k) {
  static const proto_Op ops[] = {PROTO_CALL, PROTO_ACT, PROTO_PREVIEW, PROTO_APPLY, PROTO_INVARIANT_ADD,
                                 PROTO_INVARIANT_REMOVE};
  vouch_Expect x = {.op = ops[k % 6], .invariant = "pos", .gen = 5, .steps = 1u + (k >> 3 & 6u),
                    .pausable = k % 6 == 1, .pause_no = k >> 6 & 1, .pause_max = k >> 6 & 1, .with_gen = k >> 4 & 1, .stacked = k >> 5 & 1};
  vouch_Fail f;
  if (json_object_get(m, "definitions")) {
    vouch_report(m, k & 3, &f);
    return;
  }
  switch (wire_event_of(m)) {
    case WIRE_SHADOWED: case WIRE_ERROR: vouch_shadowed(m, &f); break;
    case WIRE_READY: vouch_ready(m, 5, &grant, &f); break;
    case WIRE_PAUSED: vouch_paused(m, &x, &f); break;
    case WIRE_OUTCOME: vouch_outcome(&checker, m, blob, bloblen, &x, &f); break;
    case WIRE_COMMITTED: case WIRE_RESTORED: vouch_decided(m, wire_event_of(m), &x, &f); break;
    default: vouch_answer(m, k & 1 ? WIRE_OBSERVE : k & 2 ? WIRE_INSPECT : WIRE_INVARIANT_LIST, &x, 3, &f);
  }
}

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {  /* the pipe holds 64 KiB; inputs are at most 8 KiB */
    ssize_t k = write(fd, p, n);
    if (k <= 0) abort();
    p += k;
    n -= (size_t)k;
  }
}

/* Every whole frame buffered: 0, or -1 when the stream is malformed. */
static int drain(wire_reader *r, uint8_t k) {
  for (;;) {
    json_t *msg = NULL;
    unsigned char *blob = NULL;
    size_t bloblen = 0;
    char err[256];
    int got = wire_next(r, &msg, &blob, &bloblen, err, sizeof err);
    if (got <= 0) return got;
    vouch(msg, blob, bloblen, k);
    json_decref(msg);
    free(blob);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the bytes after the first reach the reader through a pipe in two
  ** writes, split where the first byte says, and are read with wire_fill
  ** as a peer's are; the first byte also picks the request the kernel's
  ** checks take the frames to answer */
  if (size < 1) return 0;
  uint8_t k = data[0];
  data++;
  size--;
  int fd[2];
  if (pipe(fd) != 0) abort();
  size_t cut = k % (size + 1);
  wire_reader r = {0};
  int bad = 0;
  for (int part = 0; part < 2 && !bad; part++) {
    write_all(fd[1], data + (part ? cut : 0), part ? size - cut : cut);
    if (part == 1) { close(fd[1]); fd[1] = -1; }
    for (;;) {
      if (drain(&r, k) < 0) { bad = 1; break; }
      int avail = 0;
      if (part == 0 && ioctl(fd[0], FIONREAD, &avail) == 0 && avail == 0) break;
      if (wire_fill(fd[0], &r) <= 0) break;
    }
  }
  if (fd[1] >= 0) close(fd[1]);
  close(fd[0]);
  wire_reader_reset(&r);
  return 0;
}
