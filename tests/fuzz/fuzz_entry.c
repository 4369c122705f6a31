/*
** fuzz_entry.c — libFuzzer harness for the store's entry decoder: bytes as
** they could come out of a damaged store (or one written by something
** else), given to the decoder as text for `jiti show` and imported as each
** kind of entry.  A refusal is the expected outcome; a crash, a sanitizer
** report, a hang or a leak is a finding.
**
** Input: one byte choosing the kind, a name up to the first NUL, then the
** entry's encoding.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"

static jiti_State *S;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  S = jiti_open();
  if (!S) abort();
  jiti_world_enable(S);
  jiti_Limits lim = {.fuel = 200000, .depth = 400, .heap = (uint64_t)64 << 20, .output = 65536};
  jiti_set_limits(S, &lim);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  jiti_EntryKind kind = (jiti_EntryKind)(data[0] % JITI_ENTRY_KIND_COUNT);
  const uint8_t *nul = memchr(data + 1, 0, size - 1);
  if (!nul) return 0;
  size_t nlen = (size_t)(nul - (data + 1));
  char *name = malloc(nlen + 1);
  memcpy(name, data + 1, nlen);
  name[nlen] = 0;
  const unsigned char *bytes = nul + 1;
  size_t len = size - nlen - 2;
  free(jiti_entry_text(S, bytes, len));
  char err[256];
  jiti_checkpoint(S);
  jiti_import_entry(S, kind, name, bytes, len, err, sizeof err);
  jiti_restore(S);
  free(name);
  return 0;
}
