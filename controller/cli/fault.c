/*
** fault.c — the last line of defence against a damaged data.mdb: a fault
** in reading a store's memory map becomes a message and exit status 1.
**
** LMDB reads data.mdb through a memory map and trusts the sizes it finds
** in its pages.  The store checks at open that the file holds every page
** its meta pages claim (st_file.c), and LMDB checks page numbers against
** them, but a damaged size inside a page still sends a read past the end
** of the file, which raises SIGBUS.  The store library leaves signals
** alone (process-wide policy is its caller's), so the command line installs
** this handler for every command, the kernel included.  It looks the
** faulting address up in /proc/self/maps: inside a mapping of a store's
** data.mdb or lock.mdb, it says which store is damaged and how to check
** it, and exits 1.  Anywhere else the fault is a bug, not damage: the
** handler puts the previous action back (a core dump, or a sanitizer's
** report) and lets the fault happen again under it.
**
** Everything the handler calls is async-signal-safe: open, read, close,
** write, sigaction, raise, _exit, and plain loops over its own buffers.
*/
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static const int fault_signals[2] = { SIGBUS, SIGSEGV };
static struct sigaction fault_prev[2];
static char fault_who[64];   /* "jiti CMD" */
static int recovering;       /* the command is recover-session: it reports on its own */

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One line of /proc/self/maps ("lo-hi perms offset dev inode   path"):
** when it maps addr from a file named data.mdb or lock.mdb, that file's
** path into path (NUL-terminated) and 1; else 0. */
static int store_mapping(const char *line, size_t n, uintptr_t addr, char *path, size_t cap) {
  uintptr_t lo = 0, hi = 0;
  size_t i = 0;
  int d;
  for (; i < n && (d = hex_digit(line[i])) >= 0; i++) lo = lo * 16 + (uintptr_t)d;
  if (i == n || line[i++] != '-') return 0;
  for (; i < n && (d = hex_digit(line[i])) >= 0; i++) hi = hi * 16 + (uintptr_t)d;
  if (addr < lo || addr >= hi) return 0;
  for (int field = 0; field < 4; field++) {   /* past perms, offset, dev and inode */
    while (i < n && line[i] == ' ') i++;
    while (i < n && line[i] != ' ') i++;
  }
  while (i < n && line[i] == ' ') i++;
  size_t end = n;
  static const char deleted[] = " (deleted)";
  if (end - i > sizeof deleted - 1 && !memcmp(line + end - (sizeof deleted - 1), deleted, sizeof deleted - 1))
    end -= sizeof deleted - 1;
  size_t len = end - i;
  if (len < 10 || len >= cap || line[i] != '/' ||
      (memcmp(line + end - 9, "/data.mdb", 9) && memcmp(line + end - 9, "/lock.mdb", 9)))
    return 0;
  memcpy(path, line + i, len);
  path[len] = '\0';
  return 1;
}

/* The store file mapped at addr, into path: 1, else 0. */
static int mapped_store_file(uintptr_t addr, char *path, size_t cap) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[8192];
  size_t have = 0;
  int eof = 0, found = 0;
  while (!found) {
    if (!eof && have < sizeof buf) {
      ssize_t got = read(fd, buf + have, sizeof buf - have);
      if (got <= 0) eof = 1;
      else have += (size_t)got;
    }
    char *nl = memchr(buf, '\n', have);
    if (!nl && !eof && have < sizeof buf) continue;
    if (!have) break;
    size_t len = nl ? (size_t)(nl - buf) : have;   /* the last line, or one longer than buf, cut */
    found = store_mapping(buf, len, addr, path, cap);
    size_t drop = nl ? len + 1 : have;
    memmove(buf, buf + drop, have - drop);
    have -= drop;
  }
  close(fd);
  return found;
}

static void say(const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}

static void on_fault(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  char path[4096];
  int k = sig == SIGBUS ? 0 : 1;
  if (si->si_code > 0 && mapped_store_file((uintptr_t)si->si_addr, path, sizeof path)) {
    char *slash = strrchr(path, '/');
    say(fault_who);
    say(": the store at ");
    *slash = '\0';
    say(path);
    *slash = '/';
    say(" is damaged: reading ");
    say(path);
    say(sig == SIGBUS ? " raised SIGBUS" : " raised SIGSEGV");
    say(" (a size or page number in it points past the end of the file); stopped here, and a write under "
        "way is not committed");
    if (!recovering) {
      say("; check the store with: jiti recover-session --store ");
      *slash = '\0';
      say(path);
    }
    say("\n");
    _exit(EXIT_FAIL);
  }
  /* not the store's: the previous action takes the fault */
  sigaction(sig, &fault_prev[k], NULL);
  if (si->si_code <= 0) raise(sig);   /* sent, not raised by an access: send it again */
}

void fault_guard(const char *cmd) {
  size_t n = strlen(cmd);
  memcpy(fault_who, "jiti ", 5);
  if (n > sizeof fault_who - 6) n = sizeof fault_who - 6;
  memcpy(fault_who + 5, cmd, n);
  fault_who[5 + n] = '\0';
  recovering = !strcmp(cmd, "recover-session");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < 2; k++) sigaction(fault_signals[k], &sa, &fault_prev[k]);
}
