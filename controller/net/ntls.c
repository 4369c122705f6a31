/*
** ntls.c — what both sides of a TLS connection share (net_int.h):
** OpenSSL's errors in words, the token file, certificate pairs, addresses,
** non-blocking steps under a deadline, and the pump that carries bytes
** between TLS and a plain socket.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/err.h>
#include "cli.h"
#include "net.h"
#include "net_int.h"

int ntls_option(int argc, char **argv, int *i, const char *name, const char **out, char *err, size_t errlen) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) || (a[n] && a[n] != '=')) return 0;
  if (a[n] == '=') *out = a + n + 1;
  else if (*i + 1 < argc) *out = argv[++*i];
  else *out = "";
  if (!**out) {
    snprintf(err, errlen, "%s needs a value", name);
    return -1;
  }
  return 1;
}

void ntls_error(char *out, size_t n) {
  unsigned long e = ERR_get_error();
  if (!e) {
    snprintf(out, n, "%s", "");
    return;
  }
  const char *r = ERR_reason_error_string(e);
  if (r) snprintf(out, n, "%s", r);
  else ERR_error_string_n(e, out, n);
  ERR_clear_error();
}

int ntls_read_token(const char *path, char *tok, size_t cap, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "the token file %s is not a regular file", path);
    close(fd);
    return -1;
  }
  /* a secret others can read is no secret: refused, never used */
  if (st.st_mode & 077) {
    snprintf(err, errlen, "the token file %s may be read or written by others (mode %04o); make it private: "
             "chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
    close(fd);
    return -1;
  }
  char buf[NET_TOKEN_MAX + 2];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) {
    snprintf(err, errlen, "cannot read the token file %s: %s", path, strerror(errno));
    return -1;
  }
  buf[n] = 0;
  size_t len = strcspn(buf, "\n");
  while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\r')) len--;
  if (len < NET_TOKEN_MIN || len >= NET_TOKEN_MAX || len >= cap) {
    snprintf(err, errlen, "the token in %s must be %d to %d characters on its first line (make one with: "
             "openssl rand -hex 32 > %s)", path, NET_TOKEN_MIN, NET_TOKEN_MAX - 1, path);
    return -1;
  }
  for (size_t i = 0; i < len; i++)
    if (buf[i] < 0x21 || buf[i] > 0x7e) {
      snprintf(err, errlen, "the token in %s must be printable ASCII without spaces", path);
      return -1;
    }
  memcpy(tok, buf, len);
  tok[len] = 0;
  return 0;
}

int ntls_load_pair(SSL_CTX *ctx, const char *cert, const char *key, char *err, size_t errlen) {
  char why[256];
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
    ntls_error(why, sizeof why);
    snprintf(err, errlen, "cannot load the certificate %s: %s (a PEM file is needed)", cert, why);
    return -1;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
    ntls_error(why, sizeof why);
    if (strstr(why, "mismatch"))
      snprintf(err, errlen, "the key %s does not belong to the certificate %s", key, cert);
    else
      snprintf(err, errlen, "cannot load the key %s: %s (a PEM file is needed)", key, why);
    return -1;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    snprintf(err, errlen, "the key %s does not belong to the certificate %s", key, cert);
    return -1;
  }
  return 0;
}

int ntls_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen, char *err,
               size_t errlen) {
  const char *a = addr;
  if (!strncmp(a, "tcp://", 6)) a += 6;
  else if (strstr(a, "://")) {
    snprintf(err, errlen, "'%s' is not a TCP address: write tcp://HOST:PORT", addr);
    return -1;
  }
  const char *colon = strrchr(a, ':');
  const char *h = a;
  size_t hl = colon ? (size_t)(colon - a) : 0;
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2;   /* [v6]:port */
  const char *p = colon ? colon + 1 : "";
  size_t pl = strlen(p);
  char *end;
  long pn = pl ? strtol(p, &end, 10) : -1;
  if (!colon || !hl || hl >= hostlen || !pl || pl >= portlen || *end || pn < 0 || pn > 65535 ||
      strchr(p, '/')) {
    snprintf(err, errlen, "'%s' is not an address of the form tcp://HOST:PORT", addr);
    return -1;
  }
  memcpy(host, h, hl);
  host[hl] = 0;
  memcpy(port, p, pl + 1);
  return 0;
}

int ntls_want(SSL *ssl, int r, short *events) {
  if (r > 0) return 1;
  switch (SSL_get_error(ssl, r)) {
  case SSL_ERROR_WANT_READ: *events = POLLIN; return 0;
  case SSL_ERROR_WANT_WRITE: *events = POLLOUT; return 0;
  default: return -1;
  }
}

static int stopped(const int *stop) { return stop && __atomic_load_n(stop, __ATOMIC_RELAXED); }

int ntls_wait(int fd, short events, double deadline, const int *stop) {
  for (;;) {
    if (stopped(stop)) return -1;
    double left = deadline - mono_now();
    if (left <= 0) return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int ms = left > 0.5 ? 500 : (int)(left * 1000) + 1;
    int r = poll(&p, 1, ms);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return 1;   /* the next step says what is wrong */
  }
}

int ntls_read_line(SSL *ssl, int fd, double deadline, char *line, size_t cap, char *rest, size_t restcap,
                   size_t *restlen, const int *stop, char *err, size_t errlen) {
  size_t len = 0;
  *restlen = 0;
  for (;;) {
    char buf[2048];
    int r = SSL_read(ssl, buf, sizeof buf);
    short ev = 0;
    int w = ntls_want(ssl, r, &ev);
    if (w < 0) {
      char why[256];
      ntls_error(why, sizeof why);
      snprintf(err, errlen, "%s", why[0] ? why : "the connection closed");
      return -1;
    }
    if (w == 0) {
      int k = ntls_wait(fd, ev, deadline, stop);
      if (k == 0) {
        snprintf(err, errlen, "nothing came within %d s", NET_HANDSHAKE_SECONDS);
        return -2;
      }
      if (k < 0) {
        snprintf(err, errlen, "stopped");
        return -1;
      }
      continue;
    }
    char *nl = memchr(buf, '\n', (size_t)r);
    size_t take = nl ? (size_t)(nl - buf) : (size_t)r;
    if (len + take >= cap) {
      snprintf(err, errlen, "a line longer than %zu bytes", cap - 1);
      return -1;
    }
    memcpy(line + len, buf, take);
    len += take;
    if (nl) {
      line[len] = 0;
      size_t more = (size_t)r - take - 1;
      if (more > restcap) {
        snprintf(err, errlen, "too much before the authentication was answered");
        return -1;
      }
      memcpy(rest, nl + 1, more);
      *restlen = more;
      return 0;
    }
  }
}

int ntls_write_all(SSL *ssl, int fd, const char *p, size_t n, double deadline) {
  size_t off = 0;
  while (off < n) {
    int r = SSL_write(ssl, p + off, (int)(n - off));
    short ev = 0;
    int w = ntls_want(ssl, r, &ev);
    if (w < 0) return -1;
    if (w == 0) {
      if (ntls_wait(fd, ev, deadline, NULL) <= 0) return -1;
      continue;
    }
    off += (size_t)r;
  }
  return 0;
}

/* The pump: `in` holds what came over TLS for the plain side, `out` what
** the plain side sent for TLS.  Each direction holds one buffer at a time,
** so a side that does not read stops the other from being read: the
** kernel's own limits (unread output, the line size) then apply as on its
** Unix socket. */
void ntls_pump(SSL *ssl, int tcp, int plain, const char *pre, size_t prelen, const int *stop, double stall) {
  enum { CAP = 16384 };
  char in[CAP > NET_TOKEN_MAX * 2 ? CAP : NET_TOKEN_MAX * 2], out[CAP];
  size_t inlen = prelen < sizeof in ? prelen : sizeof in, inoff = 0, outlen = 0, outoff = 0;
  memcpy(in, pre, inlen);
  int tls_open = 1, plain_open = 1;
  short rwant = POLLIN, wwant = POLLOUT;
  double blocked = 0;   /* since when TLS has refused what we write (0: it has not) */
  while (!stopped(stop)) {
    int moved = 0;
    if (tls_open && inlen == 0) {
      int r = SSL_read(ssl, in, sizeof in);
      int w = ntls_want(ssl, r, &rwant);
      if (w > 0) inlen = (size_t)r, inoff = 0, moved = 1;
      else if (w < 0) tls_open = 0;
    }
    if (inoff < inlen && plain_open) {
      ssize_t w = send(plain, in + inoff, inlen - inoff, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        inoff += (size_t)w;
        moved = 1;
        if (inoff == inlen) inlen = inoff = 0;
      } else if (!(w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) {
        plain_open = 0;
      }
    }
    if (plain_open && outlen == 0) {
      ssize_t r = recv(plain, out, sizeof out, MSG_DONTWAIT);
      if (r > 0) outlen = (size_t)r, outoff = 0, moved = 1;
      else if (!(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) plain_open = 0;
    }
    if (outoff < outlen && tls_open) {
      int r = SSL_write(ssl, out + outoff, (int)(outlen - outoff));
      int w = ntls_want(ssl, r, &wwant);
      if (w > 0) {
        outoff += (size_t)r;
        moved = 1;
        blocked = 0;
        if (outoff == outlen) outlen = outoff = 0;
      } else if (w < 0) {
        tls_open = 0;
      } else if (!blocked) {
        blocked = mono_now();
      }
    }
    /* a side closed: what it sent is delivered to the other, then both close */
    if (!tls_open && (inlen == 0 || !plain_open)) break;
    if (!plain_open && (outlen == 0 || !tls_open)) break;
    if (moved) continue;
    if (blocked && mono_now() - blocked > stall) break;   /* it reads nothing we send */
    struct pollfd p[2] = {{.fd = tcp}, {.fd = plain}};
    if (tls_open && inlen == 0) p[0].events |= rwant;
    if (tls_open && outoff < outlen) p[0].events |= wwant;
    if (plain_open && outlen == 0) p[1].events |= POLLIN;
    if (plain_open && inoff < inlen) p[1].events |= POLLOUT;
    /* a side waited for nothing is left out: its hang-up, reported whatever
    ** the mask, would wake the loop again and again */
    if (!p[0].events) p[0].fd = -1;
    if (!p[1].events) p[1].fd = -1;
    (void)poll(p, 2, 500);
  }
  if (tls_open) {
    /* a close_notify, best effort: the peer learns the kernel ended the
    ** connection rather than the network */
    (void)SSL_shutdown(ssl);
  }
}
