/*
** nclient.c — a client's TLS connection to a kernel on another machine
** (net.h): its options, the kernel's certificate verified against the CA
** and the name or IP connected to, the client's certificate or token, the
** kernel's acceptance awaited, then a socket pair whose far end a thread
** carries to the kernel.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include "cli.h"
#include "net.h"
#include "net_int.h"

/* A kernel that accepts nothing the client sends for this long is given up. */
#define NCLIENT_STALL_SECONDS 600

const char NET_CLIENT_HELP[] =
    "A kernel on another machine (docs/replication.md, \"Clients across machines\"):\n"
    "  --connect tcp://HOST:PORT  reach the kernel there (its --listen), over TLS;\n"
    "                    --store is then not used\n"
    "  --replicate URLS --world NAME  reach the kernel that leads world NAME now, as\n"
    "                    etcd (members URLS) names it, and follow the world to the next\n"
    "                    leader when it changes: a keyed call is sent again with its\n"
    "                    key, so it runs once\n"
    "  --tls-ca FILE     the CA that signed the kernel's certificate (PEM); the\n"
    "                    certificate must name HOST (or its IP)\n"
    "  --tls-cert FILE --tls-key FILE  this client's certificate and key, for a\n"
    "                    kernel started with --client-ca\n"
    "  --token-file FILE the shared secret, for a kernel started with --token-file\n"
    "                    (the file must be private: chmod 600)\n";

int net_client_option(int argc, char **argv, int *i, net_ClientOpts *o, char *err, size_t errlen) {
  static const char *const names[] = {"--connect", "--replicate", "--world", "--tls-ca",
                                      "--tls-cert", "--tls-key",  "--token-file"};
  const char **slots[] = {&o->connect, &o->replicate, &o->world, &o->ca, &o->cert, &o->key, &o->token_file};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    int r = ntls_option(argc, argv, i, names[k], slots[k], err, errlen);
    if (r) return r;
  }
  return 0;
}

int net_client_given(const net_ClientOpts *o) {
  return o->connect || o->replicate || o->world || o->ca || o->cert || o->key || o->token_file;
}

int net_client_check(const net_ClientOpts *o, char *err, size_t errlen) {
  if (o->connect && (o->replicate || o->world)) {
    snprintf(err, errlen, "--connect and --replicate/--world name the kernel two ways: give one");
    return -1;
  }
  if (!o->connect && !o->replicate != !o->world) {
    snprintf(err, errlen, "--replicate URLS and --world NAME go together");
    return -1;
  }
  if (!o->connect && !o->replicate) {
    snprintf(err, errlen, "--tls-ca, --tls-cert, --tls-key and --token-file go with --connect tcp://HOST:PORT "
             "or --replicate URLS --world NAME");
    return -1;
  }
  char host[256], port[16];
  if (o->connect && ntls_split(o->connect, host, sizeof host, port, sizeof port, err, errlen)) return -1;
  if (!o->ca) {
    snprintf(err, errlen, "a kernel on another machine is reached over TLS only: --tls-ca FILE names the CA "
             "that signed its certificate");
    return -1;
  }
  if (!o->cert != !o->key) {
    snprintf(err, errlen, "--tls-cert and --tls-key go together");
    return -1;
  }
  if (!o->cert == !o->token_file) {
    snprintf(err, errlen, "the kernel needs this client authenticated: --tls-cert FILE --tls-key FILE or "
             "--token-file FILE, %s", o->cert ? "not both" : "one of them");
    return -1;
  }
  return 0;
}

/* A TCP connection to host:port by the deadline (each address in turn). */
static int tcp_connect(const char *host, const char *port, double deadline, char *err, size_t errlen) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
  int g = getaddrinfo(host, port, &hints, &res);
  if (g) {
    snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(g));
    return -1;
  }
  int e = ECONNREFUSED;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) { e = errno; continue; }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) { freeaddrinfo(res); return fd; }
    if (errno == EINPROGRESS && ntls_wait(fd, POLLOUT, deadline, NULL) > 0) {
      int soe = 0;
      socklen_t sl = sizeof soe;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &soe, &sl);
      if (!soe) { freeaddrinfo(res); return fd; }
      e = soe;
    } else {
      e = errno == EINPROGRESS ? ETIMEDOUT : errno;
    }
    close(fd);
  }
  freeaddrinfo(res);
  snprintf(err, errlen, "cannot connect to %s:%s: %s", host, port, strerror(e));
  return -1;
}

static SSL_CTX *client_ctx(const net_ClientOpts *o, char *err, size_t errlen) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  char why[256];
  if (!ctx) {
    snprintf(err, errlen, "cannot make a TLS context (out of memory)");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (SSL_CTX_load_verify_locations(ctx, o->ca, NULL) != 1) {
    ntls_error(why, sizeof why);
    snprintf(err, errlen, "cannot load --tls-ca %s: %s (a PEM file of CA certificates is needed)", o->ca, why);
    goto fail;
  }
  if (o->cert && ntls_load_pair(ctx, o->cert, o->key, err, errlen)) goto fail;
  return ctx;
fail:
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return NULL;
}

typedef struct Carry { SSL_CTX *ctx; SSL *ssl; int tcp, local; char rest[NET_TOKEN_MAX * 2]; size_t restlen; } Carry;

struct net_Conn {
  pthread_t thread;
  int fd;      /* the caller's end */
};

static void *carry(void *arg) {
  Carry *c = arg;
  sigset_t pipe;   /* (inherited blocked already: net_connect) */
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  ntls_pump(c->ssl, c->tcp, c->local, c->rest, c->restlen, NULL, NCLIENT_STALL_SECONDS);
  SSL_free(c->ssl);
  SSL_CTX_free(c->ctx);
  close(c->tcp);
  close(c->local);
  free(c);
  OPENSSL_thread_stop();   /* this thread's error queue, freed now */
  return NULL;
}

void net_close(net_Conn *n) {
  if (!n) return;
  close(n->fd);   /* the pump sees its end, and ends */
  pthread_join(n->thread, NULL);
  free(n);
}

/* Why the handshake (or the first read after it) failed, in words that
** name the fix. */
static void tls_failure(SSL *ssl, const net_ClientOpts *o, const char *where, const char *taken, char *err,
                        size_t errlen) {
  char why[256];
  ntls_error(why, sizeof why);
  if (!why[0] && taken) snprintf(why, sizeof why, "%s", taken);
  long v = SSL_get_verify_result(ssl);
  if (v != X509_V_OK)
    snprintf(err, errlen, "the kernel at %s is not trusted: %s (its certificate must be signed by --tls-ca %s and "
             "name the host connected to)", where, X509_verify_cert_error_string(v), o->ca);
  else if (strstr(why, "alert") && o->cert)
    snprintf(err, errlen, "the kernel at %s refused this client's certificate (%s): it must be signed by the "
             "kernel's --client-ca", where, why);
  else if (strstr(why, "alert"))
    snprintf(err, errlen, "the kernel at %s refused the connection (%s): it asks for a client certificate "
             "(--tls-cert, --tls-key), not a token", where, why);
  else if (!why[0] || strstr(why, "closed"))
    snprintf(err, errlen, "the kernel at %s closed the connection before accepting this client (see its log: a "
             "client certificate it requires or refused, or a token it did not expect)", where);
  else
    snprintf(err, errlen, "the TLS connection to %s failed: %s", where, why);
}

static int do_connect(const net_ClientOpts *o, const char *addr, net_Conn **conn, int *fdp, char *err,
                      size_t errlen);

/* OpenSSL writes to the TCP socket without MSG_NOSIGNAL: a kernel gone
** mid-write would kill the client with SIGPIPE.  It is blocked while this
** thread writes (and so in the carrier thread, which inherits the mask),
** and one raised meanwhile is taken, so a write fails with EPIPE instead. */
int net_connect(const net_ClientOpts *o, const char *addr, net_Conn **conn, int *fdp, char *err, size_t errlen) {
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  int rc = do_connect(o, addr, conn, fdp, err, errlen);
  sigset_t pending;
  struct timespec zero = {0, 0};
  if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(&old, SIGPIPE))
    (void)sigtimedwait(&pipe, NULL, &zero);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static int do_connect(const net_ClientOpts *o, const char *addr, net_Conn **conn, int *fdp, char *err,
                      size_t errlen) {
  char host[256], port[16], token[NET_TOKEN_MAX] = "";
  if (ntls_split(addr, host, sizeof host, port, sizeof port, err, errlen)) return -1;
  if (o->token_file && ntls_read_token(o->token_file, token, sizeof token, err, errlen)) return -1;
  Carry *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  c->tcp = c->local = -1;
  int pair[2] = {-1, -1};
  double deadline = mono_now() + NET_HANDSHAKE_SECONDS;
  if (!(c->ctx = client_ctx(o, err, errlen))) goto fail;
  if ((c->tcp = tcp_connect(host, port, deadline, err, errlen)) < 0) goto fail;
  if (!(c->ssl = SSL_new(c->ctx)) || SSL_set_fd(c->ssl, c->tcp) != 1) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  /* the kernel's certificate must name what was connected to */
  unsigned char ip[16];
  int is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
  if (is_ip) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host);
  else {
    SSL_set_tlsext_host_name(c->ssl, host);
    SSL_set1_host(c->ssl, host);
  }
  for (;;) {
    int r = SSL_connect(c->ssl);
    short ev = 0;
    int w = ntls_want(c->ssl, r, &ev);
    if (w > 0) break;
    if (w < 0) {
      tls_failure(c->ssl, o, addr, NULL, err, errlen);
      goto fail;
    }
    if (ntls_wait(c->tcp, ev, deadline, NULL) <= 0) {
      snprintf(err, errlen, "the kernel at %s did not finish the TLS handshake within %d s", addr,
               NET_HANDSHAKE_SECONDS);
      goto fail;
    }
  }
  if (token[0]) {
    json_t *j = json_pack("{s:s, s:s}", "op", "auth", "token", token);
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int sent = -1;
    if (t) {
      size_t n = strlen(t);
      char *line = realloc(t, n + 2);
      if (line) {
        t = line;
        t[n] = '\n';
        sent = ntls_write_all(c->ssl, c->tcp, t, n + 1, deadline);
        OPENSSL_cleanse(t, n + 1);
      }
    }
    free(t);
    OPENSSL_cleanse(token, sizeof token);
    if (sent) {
      tls_failure(c->ssl, o, addr, NULL, err, errlen);
      goto fail;
    }
  }
  /* the kernel says whether it accepts this client */
  char line[2048], why[256];
  int r = ntls_read_line(c->ssl, c->tcp, deadline, line, sizeof line, c->rest, sizeof c->rest, &c->restlen, NULL,
                         why, sizeof why);
  if (r == -2) {
    snprintf(err, errlen, "the kernel at %s did not answer within %d s", addr, NET_HANDSHAKE_SECONDS);
    goto fail;
  }
  if (r) {
    tls_failure(c->ssl, o, addr, why, err, errlen);
    goto fail;
  }
  json_t *j = json_loads(line, 0, NULL);
  if (!json_is_true(json_object_get(j, "ok"))) {
    const char *m = json_string_value(json_object_get(j, "message"));
    const char *code = json_string_value(json_object_get(j, "code"));
    if (code && !strcmp(code, "unauthorized"))
      snprintf(err, errlen, "the kernel at %s refused this client: %s", addr, m ? m : "(no reason given)");
    else
      snprintf(err, errlen, "the kernel at %s is not serving: %s", addr, m ? m : "(no reason given)");
    json_decref(j);
    goto fail;
  }
  json_decref(j);
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    snprintf(err, errlen, "socketpair: %s", strerror(errno));
    goto fail;
  }
  fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK);
  c->local = pair[1];
  net_Conn *n = calloc(1, sizeof *n);
  if (!n || pthread_create(&n->thread, NULL, carry, c) != 0) {
    free(n);
    snprintf(err, errlen, "cannot start the connection's thread");
    goto fail;
  }
  n->fd = *fdp = pair[0];
  *conn = n;
  return 0;
fail:
  if (pair[0] >= 0) close(pair[0]);
  if (c->local >= 0) close(c->local);
  if (c->ssl) SSL_free(c->ssl);
  if (c->tcp >= 0) close(c->tcp);
  SSL_CTX_free(c->ctx);
  ERR_clear_error();
  free(c);
  return -1;
}
