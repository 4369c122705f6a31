/*
** daemon_client.c — a raw client for tests/daemon.sh: sends standard input
** byte for byte to a kernel socket, then prints N reply lines (default 1).
**   daemon_client SOCKET [N] < request
** Exit 0 when N lines arrived within 60 s, 1 otherwise, 2 usage.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: daemon_client SOCKET [N] < request\n");
    return 2;
  }
  int want = argc == 3 ? atoi(argv[2]) : 1;
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof a.sun_path) return 2;
  strcpy(a.sun_path, argv[1]);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    perror("daemon_client: connect");
    return 1;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0) {
    for (ssize_t off = 0; off < n;) {
      ssize_t w = send(fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) goto read_replies;  /* the kernel may have closed: read what it said */
      off += w;
    }
  }
read_replies:;
  int lines = 0;
  while (lines < want) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0) break;
    n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    fwrite(buf, 1, (size_t)n, stdout);
    for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
  }
  fflush(stdout);
  return lines >= want ? 0 : 1;
}
