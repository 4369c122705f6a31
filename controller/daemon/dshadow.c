#include <stdio.h>
#include "daemon.h"
int dshadow_start(Daemon *D, const DShadowSpec *spec, dshadow_done_fn done, void *arg, char *err, size_t errlen) {
  (void)D; (void)spec; (void)done; (void)arg;
  snprintf(err, errlen, "shadows are not built yet");
  return -1;
}
