/*
** net.h — clients on other machines (docs/replication.md, "Clients across
** machines"): the kernel's TCP listener, always TLS with client
** authentication (nserver.c), a client's TLS connection to it
** (nclient.c), the options of both, and the leader of a replicated world
** found through etcd (nleader.c).  ntls.c holds what both sides share:
** contexts, OpenSSL's errors in words, the token file, and the pump that
** carries bytes between a TLS connection and a plain socket.
**
** The design: TLS ends in a thread of its own on either side, and the
** request protocol flows unchanged inside it.  The kernel's listener
** thread accepts, and a thread per connection does the handshake and the
** authentication under a deadline, then connects to the kernel's own Unix
** socket and carries bytes both ways: the kernel's loop sees one more local
** client, with every limit of the Unix socket (line size, unread output,
** idle timeout, --max-clients), and a slow or hostile TCP peer holds only
** its own thread.  A client does the same in reverse: its connection is one
** end of a socket pair whose other end a thread carries to the kernel over
** TLS, so every client command speaks to a file descriptor as before.
**
** Every call that can fail writes why into err (errlen bytes), naming the
** option or the fix, without a "jiti CMD: " prefix.
*/
#ifndef jiti_net_h
#define jiti_net_h

#include <stddef.h>

/* Seconds a TCP peer has to finish the TLS handshake and authenticate. */
#define NET_HANDSHAKE_SECONDS 10
/* Bytes of a token file, and of the line that carries it. */
#define NET_TOKEN_MAX 1024
/* A token shorter than this is refused: it could be guessed. */
#define NET_TOKEN_MIN 16

/* ------------------------------------------------------------ the kernel */

/* jiti kernel's options: --listen tcp://HOST:PORT --tls-cert F --tls-key F
** and one of --client-ca F or --token-file F. */
typedef struct net_ServerOpts {
  const char *listen;      /* "tcp://HOST:PORT", or NULL: no TCP listener */
  const char *cert, *key;  /* the kernel's certificate chain and key (PEM) */
  const char *client_ca;   /* clients present a certificate signed by it */
  const char *token_file;  /* or: clients send this shared secret first */
} net_ServerOpts;

/* If argv[*i] is one of the options above (with its value), consume it:
** 1; -1 (err) when its value is missing; 0 otherwise. */
int net_server_option(int argc, char **argv, int *i, net_ServerOpts *o, char *err, size_t errlen);
/* The options together: 0, or -1 (err) when they do not go together. */
int net_server_check(const net_ServerOpts *o, char *err, size_t errlen);
/* With --replicate, --listen is also the address clients are sent to:
** 0 when it names a host and a fixed port, -1 (err) for 0.0.0.0, :: or
** port 0. */
int net_server_advertisable(const net_ServerOpts *o, char *err, size_t errlen);
/* The lines of --help that describe them. */
extern const char NET_SERVER_HELP[];

/* What the listener's threads have to say (a refused peer, a failed
** handshake): one line, without its newline, from any thread. */
typedef void (*net_LogFn)(void *ud, const char *line);

typedef struct net_Server net_Server;

/* Listen on o->listen (its TLS context loaded and checked first: a key
** that does not match the certificate, a CA file that cannot be read, a
** token file others can read are refused here), carrying each
** authenticated connection to the Unix socket at unix_path; at most
** max_conns connections at once (more are closed at once).  NULL on
** failure (err). */
net_Server *net_server_start(const net_ServerOpts *o, const char *unix_path, int max_conns, net_LogFn log,
                             void *logud, char *err, size_t errlen);
/* The address it listens on, as HOST:PORT (the port bound when 0 was asked). */
const char *net_server_address(const net_Server *s);
/* Stop listening, end every connection, wait for the threads (a second
** at most for each), free. */
void net_server_stop(net_Server *s);

/* ------------------------------------------------------------ a client */

/* Every client command's options for a kernel on another machine:
** --connect tcp://HOST:PORT, or --replicate URLS --world NAME; --tls-ca F;
** --tls-cert F --tls-key F or --token-file F. */
typedef struct net_ClientOpts {
  const char *connect;            /* "tcp://HOST:PORT", or NULL */
  const char *replicate, *world;  /* the leader found through etcd, or NULL */
  const char *ca;                 /* verifies the kernel's certificate */
  const char *cert, *key;
  const char *token_file;
} net_ClientOpts;

/* As net_server_option, for the client's options. */
int net_client_option(int argc, char **argv, int *i, net_ClientOpts *o, char *err, size_t errlen);
/* 1 when any of them was given (then net_client_check decides). */
int net_client_given(const net_ClientOpts *o);
int net_client_check(const net_ClientOpts *o, char *err, size_t errlen);
extern const char NET_CLIENT_HELP[];

/* A client's connection: the thread that carries it, and its end. */
typedef struct net_Conn net_Conn;

/* Connect to the kernel at addr ("tcp://HOST:PORT" or "HOST:PORT"),
** verify its certificate against o->ca and its name or IP against HOST,
** authenticate, and wait for the kernel's acceptance.  *fd: a local stream
** socket carried to the kernel by a thread of its own (*conn), which ends
** when either side closes.  0, or -1 (err: the refusal as the kernel or
** TLS gave it). */
int net_connect(const net_ClientOpts *o, const char *addr, net_Conn **conn, int *fd, char *err, size_t errlen);
/* Close the connection: its fd, then the thread (waited for, so that
** nothing of it outlives the call), freed. */
void net_close(net_Conn *conn);

/* The TCP address (HOST:PORT) the leader of world `world` published with
** its leader key (its --listen).  0; 1 when the world has no leader now
** but a standby (a takeover under way: try again); 2 when its leader has
** no TCP listener; 3 when it has neither leader nor standby; -1 when etcd
** cannot be read (err says which, each time). */
int net_leader_address(const char *urls, const char *world, char *addr, size_t addrlen, char *err, size_t errlen);

#endif
