/*
** sserver.c — `jiti swank`: options, the listening socket on 127.0.0.1,
** the secret every connection must present first, and the loop of one
** editor connection: messages in, RPCs run (srpc.c), one at a time.
** Editors are served one after another, as Swank's :dont-close does.
*/
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "swank.h"
#include "swank_int.h"
#include "cli.h"

#define SWANK_SECRET_MAX 512

static volatile sig_atomic_t stopping;

static void on_stop(int sig) {
  (void)sig;
  stopping = 1;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: jiti swank [--store DIR] [--port N] [--port-file FILE] [--no-secret] [--slime-version V] [--trace]\n"
          "\n"
          "A Swank server for Emacs's SLIME on the kernel serving DIR (docs/editor.md): M-x slime-connect\n"
          "to 127.0.0.1 and the port (default 4005; 0: any free one, written to --port-file).  Every\n"
          "connection must first present the secret of ~/.slime-secret (SLIME sends it by itself);\n"
          "without that file jiti swank refuses to start unless --no-secret is given, which lets every\n"
          "local user reach the world.  --slime-version: the SLIME version to announce (default 2.27,\n"
          "Debian's), so that SLIME connects without asking about a version mismatch.  --trace: every\n"
          "message in and out on standard error.\n");
}

/* The secret of ~/.slime-secret (its first line) into buf: 1 read, 0 no
** such file, -1 unusable (a message was printed). */
static int read_secret(char *buf, size_t n) {
  const char *home = getenv("HOME");
  char path[4096];
  snprintf(path, sizeof path, "%s/.slime-secret", home ? home : "");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : (swank_log("cannot read %s: %s", path, strerror(errno)), -1);
  struct stat st;
  if (fstat(fd, &st) || (st.st_mode & 077)) {
    swank_log("%s may be read by other users: chmod 600 %s", path, path);
    close(fd);
    return -1;
  }
  ssize_t k = read(fd, buf, n - 1);
  close(fd);
  if (k < 0) return swank_log("cannot read %s: %s", path, strerror(errno)), -1;
  buf[k] = 0;
  buf[strcspn(buf, "\r\n")] = 0;
  if (!buf[0]) return swank_log("%s is empty: put a random line in it", path), -1;
  return 1;
}

static int listen_on(int port, int *bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  /* never another interface */
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 4) || getsockname(fd, (struct sockaddr *)&a, &len)) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  *bound = ntohs(a.sin_port);
  return fd;
}

static void handle(Swank *S, sx *m) {
  sx *head = sx_at(m, 0);
  if (sx_is(head, ":emacs-rex")) {
    sx *id = sx_at(m, 4);
    if (!id || id->type != SX_INT) {
      swank_log("an :emacs-rex without its id was ignored");
      return;
    }
    srpc_rex(S, sx_at(m, 1), sx_at(m, 2), id->num);
  } else if (!sx_is(head, ":emacs-interrupt") && !sx_is(head, ":emacs-pong") && !sx_is(head, ":emacs-return") &&
             !sx_is(head, ":emacs-return-string")) {
    swank_log("a message %s was ignored", sx_str(head));
  }
  /* an interrupt with nothing running has nothing to stop */
}

static void serve(Swank *S) {
  while (S->fd >= 0 && !stopping) {
    sx *m;
    while (S->fd >= 0 && (m = sframe_next(S))) {
      handle(S, m);
      sx_free(m);
    }
    if (S->fd < 0) break;
    struct pollfd p = {.fd = S->fd, .events = POLLIN};
    int r = poll(&p, 1, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || sframe_pump(S) < 0) break;
  }
}

static void connection_end(Swank *S) {
  if (S->fd >= 0) close(S->fd);
  S->fd = -1;
  /* a pause this editor's own request opened has nobody left to answer
  ** it: aborted, so the world does not wait for its timeout (a pause
  ** another client left stays theirs) */
  for (int i = 0; i < SWANK_LEVELS_MAX && S->levels && S->level[1].owner != OWNER_NONE; i++) {
    json_t *r = skernel_act(S, json_pack("{s:s}", "type", "abort"));
    json_t *p = json_object_get(r, "pause");
    if (!r || !json_is_object(p)) S->levels = 0;
    else json_decref(S->pause), S->pause = json_incref(p);
    json_decref(r);
  }
  if (S->levels) swank_log("the editor left sldb open on another client's pause: it stays");
  while (S->nq) sx_free(S->queue[--S->nq]);
  json_decref(S->pause);
  S->pause = NULL;
  S->levels = 0;
  S->inlen = 0;
  for (int i = 0; i < 3; i++) free(S->last[i]), S->last[i] = NULL;
  while (S->ninsp) free(S->insp[--S->ninsp]);
  free(S->abort_msg);
  S->abort_msg = NULL;
  S->gen_known = 0;
}

int cmd_swank(int argc, char **argv) {
  const char *dir = opts_default_store(), *port_file = NULL, *version = "2.27";
  int port = 4005, no_secret = 0, trace = 0;
  char err[CLI_MSG_MAX];
  for (int i = 1; i < argc; i++) {
    int s = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (s < 0) {
      fprintf(stderr, "jiti swank: %s\n", err);
      return EXIT_USAGE;
    }
    if (s) continue;
    uint64_t v;
    if (!strcmp(argv[i], "--port") && i + 1 < argc && opts_count(argv[i + 1], &v) && v <= 65535) port = (int)v, i++;
    else if (!strcmp(argv[i], "--port-file") && i + 1 < argc) port_file = argv[++i];
    else if (!strcmp(argv[i], "--slime-version") && i + 1 < argc) version = argv[++i];
    else if (!strcmp(argv[i], "--no-secret")) no_secret = 1;
    else if (!strcmp(argv[i], "--trace")) trace = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return EXIT_OK;
    } else {
      fprintf(stderr, "jiti swank: unknown or incomplete option '%s'\n", argv[i]);
      usage(stderr);
      return EXIT_USAGE;
    }
  }
  char secret[SWANK_SECRET_MAX];
  int has = read_secret(secret, sizeof secret);
  if (has < 0) return EXIT_FAIL;
  if (!has && !no_secret) {
    fprintf(stderr,
            "jiti swank: no ~/.slime-secret: without it any local user could reach the world through this port.\n"
            "Create one (SLIME sends it by itself):  head -c 24 /dev/urandom | base64 > ~/.slime-secret && chmod 600 "
            "~/.slime-secret\n"
            "or start with --no-secret to accept every local connection.\n");
    return EXIT_FAIL;
  }
  if (!kclient_serving(dir)) {
    fprintf(stderr, "jiti swank: no kernel is running for %s; start one with: jiti kernel --store %s\n", dir, dir);
    return EXIT_FAIL;
  }
  int bound, lfd = listen_on(port, &bound);
  if (lfd < 0) {
    fprintf(stderr, "jiti swank: cannot listen on 127.0.0.1:%d: %s%s\n", port, strerror(errno),
            errno == EADDRINUSE ? " (another Swank server? choose another --port)" : "");
    return EXIT_FAIL;
  }
  if (port_file) {
    FILE *f = fopen(port_file, "w");
    if (!f || fprintf(f, "%d\n", bound) < 0 || fclose(f)) {
      fprintf(stderr, "jiti swank: cannot write %s\n", port_file);
      close(lfd);
      return EXIT_FAIL;
    }
  }
  struct sigaction sa = {.sa_handler = on_stop};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stderr, NULL, _IOLBF, 0);
  swank_log("listening on 127.0.0.1:%d for the kernel of %s%s", bound, dir,
            has ? "" : " (no secret: every local user may connect)");
  Swank S;
  memset(&S, 0, sizeof S);
  kclient_init(&S.k, "swank", dir);
  S.dir = dir, S.fd = -1, S.version = version, S.trace = trace;
  while (!stopping) {
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int r = poll(&p, 1, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (has && !sframe_secret(fd, secret)) {
      swank_log("a connection that did not present the secret of ~/.slime-secret was closed");
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    S.fd = fd;
    swank_log("an editor connected");
    serve(&S);
    connection_end(&S);
    swank_log("the editor's connection ended");
  }
  close(lfd);
  kclient_close(&S.k);
  free(S.in);
  free(S.queue);
  swank_log("stopped");
  return EXIT_OK;
}
