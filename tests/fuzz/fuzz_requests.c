/*
** fuzz_requests — libFuzzer harness for the kernel's client protocol
** decoder: any bytes, as one client sends them, through the daemon's own
** connection reader (dclients_read: line splitting, length limits) and
** request checks (drequests_handle: JSON, UTF-8, every op's members), on a
** real store (in /dev/shm) without a worker.  What would reach the worker
** is queued and dropped; replies are read from the client's socket and
** checked to be JSON lines.
*/
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "daemon.h"

static Daemon D;
static Client *C;
static int peer = -1;

static void setup(void) {
  char dir[] = "/dev/shm/jiti-fuzz-requests.XXXXXX";
  if (!mkdtemp(dir)) abort();
  static char keep[64];
  snprintf(keep, sizeof keep, "%s", dir);
  char err[512];
  if (store_open(keep, 0, &D.store, err, sizeof err) != STORE_OK) {
    fprintf(stderr, "fuzz_requests: %s\n", err);
    abort();
  }
  D.dir = keep;
  limits_default(&D.limits);
  D.lfd = D.spare_fd = D.live.w.fd = D.live.w.err.fd = D.live.w.report = D.shadows.listener = -1;  /* no worker */
  D.live.D = &D;
  D.live.role = "worker";
  if (!(D.poll = dpoll_open())) abort();
  D.max_clients = 4;
  dkeys_init(&D);
  D.clients = calloc((size_t)D.max_clients + DAEMON_RESERVED_SLOTS, sizeof *D.clients);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) abort();
  int big = 1 << 22;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  C = calloc(1, sizeof *C);
  C->fd = sv[0];
  C->serial = ++D.next_serial;
  C->held = &D.outbytes;
  C->D = &D;
  D.clients[D.nclients++] = C;
  peer = sv[1];
}

static void drop_queue(Queue *q) {
  while (q->n) {
    Pending p = dqueue_pop(q);
    dqueue_pending_free(&p);
  }
}

/* Every line is one JSON object: a reply ("ok") or an event line
** ("event", to a subscriber). */
static void drain(void) {
  static char buf[1 << 16];
  static char line[1 << 20];
  static size_t len;
  ssize_t n;
  while ((n = recv(peer, buf, sizeof buf, 0)) > 0) {
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        if (len < sizeof line) line[len++] = buf[i];
        continue;
      }
      json_t *j = json_loadb(line, len < sizeof line ? len : 0, 0, NULL);
      if (len < sizeof line && (!json_is_object(j) || (!json_object_get(j, "ok") && !json_object_get(j, "event"))))
        abort();
      json_decref(j);
      len = 0;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!C) setup();
  /* in pieces of at most 4 KiB, as a socket may deliver them */
  for (size_t off = 0; off < size;) {
    size_t n = size - off < 4096 ? size - off : 4096;
    if (send(peer, data + off, n, MSG_NOSIGNAL) != (ssize_t)n) abort();
    off += n;
    dclients_read(&D, C);
    drain();
  }
  /* the end of this client's input: what it asked for is answered or queued */
  drain();
  drop_queue(&D.txq);
  drop_queue(&D.queryq);
  drop_queue(&D.cmdq);
  dshadow_stop(&D);   /* verifications queued: answered (shutting-down), dropped */
  drain();
  for (size_t i = 0; i < D.events.n; i++) json_decref(D.events.ev[i]);
  D.events.n = 0;
  D.log.len = 0;
  json_object_clear(D.keys.flight);
  D.stop_why = NULL;
  D.stopping = 0;
  C->closing = 0;
  C->inlen = 0;
  if (C->subscribed) D.subscribers--;
  C->subscribed = 0;
  C->outlen = C->outoff = 0;
  D.outbytes = 0;
  return 0;
}
