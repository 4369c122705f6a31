/*
** net_int.h — what the files of net/ share (ntls.c): not for the rest of
** the controller.
*/
#ifndef jiti_net_int_h
#define jiti_net_int_h

#include <stddef.h>
#include <openssl/ssl.h>

/* argv[*i] is option `name` with its value (--name V or --name=V): 1, the
** value in *out (*i moved past it); -1 (err) when the value is missing or
** empty; 0 when it is another argument. */
int ntls_option(int argc, char **argv, int *i, const char *name, const char **out, char *err, size_t errlen);

/* The last OpenSSL error of this thread in words ("" when none), the
** queue cleared. */
void ntls_error(char *out, size_t n);

/* A token file's secret: its first line, trailing blanks dropped.  The
** file must be a regular file no one but its owner may read or write, and
** the secret NET_TOKEN_MIN..NET_TOKEN_MAX-1 bytes of printable ASCII.  0,
** or -1 (err names the file and the fix). */
int ntls_read_token(const char *path, char *tok, size_t cap, char *err, size_t errlen);

/* A certificate chain and its key into ctx; 0 or -1 (err). */
int ntls_load_pair(SSL_CTX *ctx, const char *cert, const char *key, char *err, size_t errlen);

/* Split "tcp://HOST:PORT" or "HOST:PORT" ("[v6]:PORT" too) into host and
** port; 0 or -1 (err). */
int ntls_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen, char *err,
               size_t errlen);

/* One step of a non-blocking handshake or I/O that said r: 1 done (r > 0),
** 0 wait for fd as *events (POLLIN/POLLOUT), -1 failed. */
int ntls_want(SSL *ssl, int r, short *events);

/* Wait for fd as events until the monotonic deadline; 1 ready, 0 timed
** out, -1 stopped (*stop set; may be NULL). */
int ntls_wait(int fd, short events, double deadline, const int *stop);

/* Read one line (without its newline) of at most cap-1 bytes from ssl on
** non-blocking fd by the deadline; bytes after the newline are left in
** rest (restcap bytes; *restlen).  0; -1 closed, failed or too long
** (err); -2 timed out. */
int ntls_read_line(SSL *ssl, int fd, double deadline, char *line, size_t cap, char *rest, size_t restcap,
                   size_t *restlen, const int *stop, char *err, size_t errlen);

/* Write all of p[0..n) to ssl on non-blocking fd by the deadline; 0 or -1. */
int ntls_write_all(SSL *ssl, int fd, const char *p, size_t n, double deadline);

/* Carry bytes between ssl (on non-blocking fd tcp) and the plain stream
** socket `plain` (non-blocking) until either side closes, after the first
** `pre` bytes (from the TLS side, read ahead) are delivered to plain.
** *stop (may be NULL) ends it within half a second.  A TLS peer that
** accepts none of what is sent to it for `stall` seconds is dropped. */
void ntls_pump(SSL *ssl, int tcp, int plain, const char *pre, size_t prelen, const int *stop, double stall);

#endif
