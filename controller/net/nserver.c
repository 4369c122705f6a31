/*
** nserver.c — the kernel's TCP listener (net.h): TLS with client
** authentication, each connection carried to the kernel's Unix socket by a
** thread of its own, so that the kernel's loop never waits for a TCP peer.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include "cli.h"
#include "net.h"
#include "net_int.h"

/* A peer that accepts none of the kernel's output for this long is dropped
** (the kernel would cut off a Unix client for its unread output too). */
#define NSERVER_STALL_SECONDS 120

const char NET_SERVER_HELP[] =
    "  --listen tcp://HOST:PORT  also serve clients on other machines, over TLS only\n"
    "                    (docs/replication.md, \"Clients across machines\"); HOST is\n"
    "                    the address to bind (and, with --replicate, the one clients\n"
    "                    are told: name one they can reach).  Needs --tls-cert and\n"
    "                    --tls-key, and one of --client-ca or --token-file\n"
    "  --tls-cert FILE   the kernel's certificate chain (PEM); its names or IPs must\n"
    "                    include the HOST clients connect to\n"
    "  --tls-key FILE    the certificate's private key (PEM)\n"
    "  --client-ca FILE  clients must present a certificate signed by this CA (PEM)\n"
    "  --token-file FILE clients must send the secret on this file's first line\n"
    "                    (16 to 1023 printable characters; the file must be private:\n"
    "                    chmod 600)\n";

int net_server_option(int argc, char **argv, int *i, net_ServerOpts *o, char *err, size_t errlen) {
  static const char *const names[] = {"--listen", "--tls-cert", "--tls-key", "--client-ca", "--token-file"};
  const char **slots[] = {&o->listen, &o->cert, &o->key, &o->client_ca, &o->token_file};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    int r = ntls_option(argc, argv, i, names[k], slots[k], err, errlen);
    if (r) return r;
  }
  return 0;
}

int net_server_check(const net_ServerOpts *o, char *err, size_t errlen) {
  if (!o->listen) {
    if (o->cert || o->key || o->client_ca || o->token_file) {
      snprintf(err, errlen, "--tls-cert, --tls-key, --client-ca and --token-file go with --listen tcp://HOST:PORT");
      return -1;
    }
    return 0;
  }
  char host[256], port[16];
  if (ntls_split(o->listen, host, sizeof host, port, sizeof port, err, errlen)) return -1;
  if (strncmp(o->listen, "tcp://", 6)) {
    snprintf(err, errlen, "--listen takes tcp://HOST:PORT (TLS always: there is no plaintext listener)");
    return -1;
  }
  if (!o->cert || !o->key) {
    snprintf(err, errlen, "--listen needs the kernel's certificate and key: --tls-cert FILE --tls-key FILE");
    return -1;
  }
  if (!o->client_ca == !o->token_file) {
    snprintf(err, errlen, "--listen needs one way to authenticate clients: --client-ca FILE (client "
             "certificates) or --token-file FILE (a shared secret), not %s", o->client_ca ? "both" : "neither");
    return -1;
  }
  return 0;
}

int net_server_advertisable(const net_ServerOpts *o, char *err, size_t errlen) {
  char host[256], port[16];
  if (!o->listen || ntls_split(o->listen, host, sizeof host, port, sizeof port, err, errlen)) return 0;
  if (!strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "*") || !strcmp(port, "0")) {
    snprintf(err, errlen, "with --replicate, --listen is the address clients are sent to when this kernel leads: "
             "name a host they can reach and a fixed port (not %s)", o->listen);
    return -1;
  }
  return 0;
}

/* One TCP connection. */
typedef struct NConn {
  struct net_Server *S;
  int fd;
  char peer[80];
  struct NConn *next;
} NConn;

struct net_Server {
  SSL_CTX *ctx;
  int lfd;
  int wake[2];          /* written to stop the listener */
  int stop;             /* read by every thread (__atomic) */
  char token[NET_TOKEN_MAX];   /* --token-file's secret, or "" */
  char unix_path[sizeof ((struct sockaddr_un *)0)->sun_path];
  char address[300];
  int max_conns;
  net_LogFn log;
  void *logud;
  pthread_t thread;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  NConn *conns;         /* under mu */
  int nconns;
};

static void slog(net_Server *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slog(net_Server *S, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (S->log) S->log(S->logud, line);
}

/* The kernel's refusal, on the wire as a reply without an id (a client
** prints it as any refusal). */
static void refuse(SSL *ssl, int fd, const char *code, const char *message) {
  json_t *o = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "message", message);
  char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (t) {
    size_t n = strlen(t);
    char *line = realloc(t, n + 2);
    if (line) {
      line[n] = '\n';
      (void)ntls_write_all(ssl, fd, line, n + 1, mono_now() + 2);
      t = line;
    }
  }
  free(t);
  (void)SSL_shutdown(ssl);
}

/* Constant time whatever the token's length or where it differs: digests
** of both are compared. */
static int token_matches(const char *want, const char *got) {
  unsigned char a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
  unsigned la = 0, lb = 0;
  if (EVP_Digest(want, strlen(want), a, &la, EVP_sha256(), NULL) != 1 ||
      EVP_Digest(got, strlen(got), b, &lb, EVP_sha256(), NULL) != 1 || la != lb)
    return 0;
  return CRYPTO_memcmp(a, b, la) == 0;
}

static int connect_unix(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);   /* fits: net_server_start checked */
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/* A connection's thread: handshake and authentication by the deadline,
** then the pump to the Unix socket. */
static void *serve(void *arg) {
  NConn *c = arg;
  net_Server *S = c->S;
  SSL *ssl = SSL_new(S->ctx);
  double deadline = mono_now() + NET_HANDSHAKE_SECONDS;
  char why[512] = "", rest[NET_TOKEN_MAX * 2];
  size_t restlen = 0;
  int ok = 0;
  if (!ssl || SSL_set_fd(ssl, c->fd) != 1) {
    snprintf(why, sizeof why, "out of memory");
    goto done;
  }
  for (;;) {
    int r = SSL_accept(ssl);
    short ev = 0;
    int w = ntls_want(ssl, r, &ev);
    if (w > 0) break;
    if (w < 0) {
      char e[256];
      ntls_error(e, sizeof e);
      long v = SSL_get_verify_result(ssl);
      if (v != X509_V_OK)
        snprintf(why, sizeof why, "its certificate was refused: %s", X509_verify_cert_error_string(v));
      else if (strstr(e, "did not return a certificate"))
        snprintf(why, sizeof why, "it presented no client certificate (--client-ca requires one)");
      else if (strstr(e, "alert"))
        snprintf(why, sizeof why, "it ended the TLS handshake (%s): it does not trust this kernel's certificate, "
                 "or does not connect with the name the certificate holds", e);
      else
        snprintf(why, sizeof why, "the TLS handshake failed: %s", e[0] ? e : "the connection closed");
      goto done;
    }
    int k = ntls_wait(c->fd, ev, deadline, &S->stop);
    if (k <= 0) {
      snprintf(why, sizeof why, k == 0 ? "it did not finish the TLS handshake within %d s" : "the kernel stops",
               NET_HANDSHAKE_SECONDS);
      goto done;
    }
  }
  if (S->token[0]) {
    char line[NET_TOKEN_MAX + 64], e[256];
    int r = ntls_read_line(ssl, c->fd, deadline, line, sizeof line, rest, sizeof rest, &restlen, &S->stop, e,
                           sizeof e);
    if (r) {
      snprintf(why, sizeof why, "no token: %s", e);
      if (r == -2) refuse(ssl, c->fd, "unauthorized", "no token came in time: send --token-file's secret first");
      goto done;
    }
    json_t *j = json_loads(line, 0, NULL);
    const char *op = json_string_value(json_object_get(j, "op"));
    const char *tok = json_string_value(json_object_get(j, "token"));
    int match = op && tok && !strcmp(op, "auth") && token_matches(S->token, tok);
    json_decref(j);
    if (!match) {
      snprintf(why, sizeof why, "its token does not match --token-file's");
      refuse(ssl, c->fd, "unauthorized", "the token does not match the kernel's --token-file; use the same secret");
      goto done;
    }
  }
  int ufd = connect_unix(S->unix_path);
  if (ufd < 0) {
    snprintf(why, sizeof why, "the kernel's socket %s: %s", S->unix_path, strerror(errno));
    refuse(ssl, c->fd, "shutting-down", "the kernel is not serving its socket (stopping?); retry later");
    goto done;
  }
  static const char accepted[] = "{\"ok\":true,\"auth\":\"accepted\"}\n";
  if (ntls_write_all(ssl, c->fd, accepted, sizeof accepted - 1, deadline) == 0) {
    ok = 1;
    ntls_pump(ssl, c->fd, ufd, rest, restlen, &S->stop, NSERVER_STALL_SECONDS);
  }
  close(ufd);
done:
  if (!ok && why[0]) slog(S, "TCP client %s refused: %s", c->peer, why);
  if (!ok) {
    /* a lingering close: what the peer sent and we did not read would make
    ** close() reset the connection, and a reset discards the refusal (the
    ** TLS alert, the unauthorized line) before the peer reads it */
    shutdown(c->fd, SHUT_WR);
    double until = mono_now() + 1;
    char sink[4096];
    while (ntls_wait(c->fd, POLLIN, until, &S->stop) > 0 && read(c->fd, sink, sizeof sink) > 0) {}
  }
  SSL_free(ssl);
  ERR_clear_error();
  pthread_mutex_lock(&S->mu);
  for (NConn **p = &S->conns; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  S->nconns--;
  close(c->fd);
  pthread_cond_broadcast(&S->cv);
  pthread_mutex_unlock(&S->mu);
  free(c);
  OPENSSL_thread_stop();   /* this thread's error queue, freed now */
  return NULL;
}

static void peer_name(int fd, char *out, size_t n) {
  struct sockaddr_storage a;
  socklen_t al = sizeof a;
  char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
  if (getpeername(fd, (struct sockaddr *)&a, &al) == 0)
    getnameinfo((struct sockaddr *)&a, al, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV);
  snprintf(out, n, a.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, p);
}

static void *listener(void *arg) {
  net_Server *S = arg;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, (size_t)1 << 20);
  while (!__atomic_load_n(&S->stop, __ATOMIC_RELAXED)) {
    struct pollfd p[2] = {{.fd = S->lfd, .events = POLLIN}, {.fd = S->wake[0], .events = POLLIN}};
    if (poll(p, 2, -1) < 0) continue;
    if (p[1].revents) break;
    int fd = accept4(S->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {   /* out of descriptors: do not spin */
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
      }
      continue;
    }
    NConn *c = calloc(1, sizeof *c);
    pthread_mutex_lock(&S->mu);
    int full = S->nconns >= S->max_conns;
    if (c && !full) {
      c->S = S;
      c->fd = fd;
      peer_name(fd, c->peer, sizeof c->peer);
      c->next = S->conns;
      S->conns = c;
      S->nconns++;
    }
    pthread_mutex_unlock(&S->mu);
    if (!c || full) {
      /* before any TLS: nothing can be said, the peer sees the close */
      if (full) {
        char peer[80];
        peer_name(fd, peer, sizeof peer);
        slog(S, "TCP client %s refused: %d TCP connections already (--max-clients)", peer, S->max_conns);
      }
      close(fd);
      free(c);
      continue;
    }
    pthread_t t;
    if (pthread_create(&t, &attr, serve, c) != 0) {
      pthread_mutex_lock(&S->mu);
      S->conns = c->next;
      S->nconns--;
      pthread_mutex_unlock(&S->mu);
      close(fd);
      free(c);
    }
  }
  pthread_attr_destroy(&attr);
  OPENSSL_thread_stop();
  return NULL;
}

static SSL_CTX *server_ctx(const net_ServerOpts *o, char *err, size_t errlen) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    snprintf(err, errlen, "cannot make a TLS context (out of memory)");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  /* no tickets to keep or sessions to resume: each connection authenticates afresh */
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  if (ntls_load_pair(ctx, o->cert, o->key, err, errlen)) goto fail;
  if (o->client_ca) {
    char why[256];
    if (SSL_CTX_load_verify_locations(ctx, o->client_ca, NULL) != 1) {
      ntls_error(why, sizeof why);
      snprintf(err, errlen, "cannot load --client-ca %s: %s (a PEM file of CA certificates is needed)", o->client_ca,
               why);
      goto fail;
    }
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->client_ca);
    if (names) SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  }
  ERR_clear_error();
  return ctx;
fail:
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return NULL;
}

static int bind_listen(net_Server *S, const char *addr, char *err, size_t errlen) {
  char host[256], port[16];
  if (ntls_split(addr, host, sizeof host, port, sizeof port, err, errlen)) return -1;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
  int g = getaddrinfo(host, port, &hints, &res);
  if (g) {
    snprintf(err, errlen, "cannot resolve --listen %s: %s", addr, gai_strerror(g));
    return -1;
  }
  int e = 0;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) { e = errno; continue; }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
      S->lfd = fd;
      struct sockaddr_storage b;
      socklen_t bl = sizeof b;
      char h[NI_MAXHOST] = "?", p[NI_MAXSERV] = "?";
      if (getsockname(fd, (struct sockaddr *)&b, &bl) == 0)
        getnameinfo((struct sockaddr *)&b, bl, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV);
      /* the host as given (a name clients verify the certificate against), the port as bound */
      snprintf(S->address, sizeof S->address, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, p);
      freeaddrinfo(res);
      return 0;
    }
    e = errno;
    close(fd);
  }
  freeaddrinfo(res);
  snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(e));
  return -1;
}

net_Server *net_server_start(const net_ServerOpts *o, const char *unix_path, int max_conns, net_LogFn log,
                             void *logud, char *err, size_t errlen) {
  net_Server *S = calloc(1, sizeof *S);
  if (!S) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  S->lfd = S->wake[0] = S->wake[1] = -1;
  S->max_conns = max_conns;
  S->log = log;
  S->logud = logud;
  pthread_mutex_init(&S->mu, NULL);
  pthread_cond_init(&S->cv, NULL);
  if (strlen(unix_path) >= sizeof S->unix_path) {
    snprintf(err, errlen, "the socket path %s is too long", unix_path);
    goto fail;
  }
  memcpy(S->unix_path, unix_path, strlen(unix_path) + 1);
  if (o->token_file && ntls_read_token(o->token_file, S->token, sizeof S->token, err, errlen)) goto fail;
  if (!(S->ctx = server_ctx(o, err, errlen))) goto fail;
  if (bind_listen(S, o->listen, err, errlen)) goto fail;
  if (pipe2(S->wake, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    goto fail;
  }
  if (pthread_create(&S->thread, NULL, listener, S) != 0) {
    snprintf(err, errlen, "cannot start the TCP listener's thread");
    goto fail;
  }
  S->started = 1;
  return S;
fail:
  net_server_stop(S);
  return NULL;
}

const char *net_server_address(const net_Server *S) { return S->address; }

void net_server_stop(net_Server *S) {
  if (!S) return;
  if (S->started) {   /* no new connection (the listener reads the wake pipe) */
    (void)!write(S->wake[1], "x", 1);
    pthread_join(S->thread, NULL);
  }
  /* The kernel closed its clients first: a connection's pump sees its Unix
  ** side end and delivers what it read before it (the reply to a stop)
  ** over TLS.  A second for that, then every thread is told to end. */
  pthread_mutex_lock(&S->mu);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  while (S->nconns > 0)
    if (pthread_cond_timedwait(&S->cv, &S->mu, &until) != 0) break;
  __atomic_store_n(&S->stop, 1, __ATOMIC_RELAXED);
  for (NConn *c = S->conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 2;
  while (S->nconns > 0)
    if (pthread_cond_timedwait(&S->cv, &S->mu, &until) != 0) break;
  int left = S->nconns;
  pthread_mutex_unlock(&S->mu);
  if (left) return;   /* a thread still holds it (never seen: each polls the flag) */
  if (S->lfd >= 0) close(S->lfd);
  if (S->wake[0] >= 0) close(S->wake[0]);
  if (S->wake[1] >= 0) close(S->wake[1]);
  SSL_CTX_free(S->ctx);
  OPENSSL_cleanse(S->token, sizeof S->token);
  pthread_mutex_destroy(&S->mu);
  pthread_cond_destroy(&S->cv);
  free(S);
}
