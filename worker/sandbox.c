/*
** sandbox.c — the worker's sandbox.
**
** Entered before the worker evaluates anything a client sent (and before it
** imports the store's entries):
**   - PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG(SIGKILL) (and exit if the kernel
**     is already gone), PR_SET_DUMPABLE 0;
**   - every descriptor closed but the kernel's socket, the report socket
**     (the live worker's) and stderr, whatever the worker inherited (the
**     kernel's store, its own parent's files);
**   - rlimits: address space 2 GiB (not under AddressSanitizer, whose shadow
**     memory needs terabytes), CPU seconds (a backstop behind the fuel
**     limit), no core files, no new descriptors, no processes (but with
**     the fork gate, below);
**   - a seccomp allow-list, default kill-process: reading and writing the
**     kernel's socket (and writing stderr and the report socket), anonymous
**     memory only (mmap of a descriptor is killed) and never executable,
**     futexes, clocks, getrandom, sysinfo, rseq, signal returns, exit.
**     clone3 fails with ENOSYS (glibc then falls back to clone); open and
**     openat fail with EACCES (glibc's lazy read of
**     /proc/sys/vm/overcommit_memory).  No socket, connect, execve,
**     ptrace, ...
**   - the fork gate (the live worker, which has a report socket): a clone
**     with exactly the flags of glibc's fork() is not killed but held, and
**     the kernel answers it (seccomp's user notification; the listener is
**     the report socket's first record): it lets through exactly one per
**     shadow it asked for (docs/worker-frames.md, "Shadows"), and refuses
**     any other.  Any other clone is killed.  What a shadow needs besides
**     is allowed too: reaping it (wait4 with WNOHANG), its parent-death
**     signal (prctl PR_SET_PDEATHSIG, SIGKILL only), its own stricter
**     filter (seccomp SET_MODE_FILTER without flags: a filter only ever
**     narrows), close, getppid.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/seccomp.h>
#include <unistd.h>
#include <seccomp.h>
#include "worker.h"

#define WORKER_AS_LIMIT ((rlim_t)2 << 30)
#define WORKER_CPU_LIMIT ((rlim_t)3600)

/* Close every descriptor but stderr and those of keep (n of them, -1 for
** none). */
static int close_others(const int *keep, int n, char *err, size_t errlen) {
  unsigned lo = 0;
  for (unsigned fd = 0; fd < 64; fd++) {   /* the kept ones, in order */
    int kept = fd == 2;
    for (int i = 0; i < n; i++) kept |= keep[i] == (int)fd;
    if (!kept) continue;
    if (fd > lo && syscall(SYS_close_range, lo, fd - 1, 0) != 0) goto fail;
    lo = fd + 1;
  }
  if (syscall(SYS_close_range, lo, ~0u, 0) != 0) goto fail;
  return 0;
fail:
  snprintf(err, errlen, "close_range: %s", strerror(errno));
  return -1;
}

static int set_limit(int res, rlim_t v, const char *what, char *err, size_t errlen) {
  struct rlimit rl = {v, v};
  struct rlimit cur;
  if (getrlimit(res, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < v)
    rl.rlim_cur = rl.rlim_max = cur.rlim_max;
  if (setrlimit(res, &rl) != 0) {
    snprintf(err, errlen, "setrlimit(%s): %s", what, strerror(errno));
    return -1;
  }
  return 0;
}

/* Comparisons spelled out: libseccomp's SCMP_A0 leaves datum_b to the
** initializer's zero fill, which clang warns about. */
#define ARG_EQ(n, v) ((struct scmp_arg_cmp){.arg = (n), .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)(v), .datum_b = 0})
#define ARG_MASKED_EQ(n, mask, v) \
  ((struct scmp_arg_cmp){.arg = (n), .op = SCMP_CMP_MASKED_EQ, .datum_a = (mask), .datum_b = (v)})

/* The worker's filter: fd its kernel's socket, report its report socket
** (-1: none), gate the fork gate, park the park socket (shadow.c).  NULL
** when it cannot be built. */
static scmp_filter_ctx worker_filter(int fd, int report, const int park[2], int gate) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (!ctx) return NULL;
  int rc = 0;
#define ALLOW(name) rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 0)
#define ALLOW1(name, cmp) rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 1, cmp)
  /* the kernel's socket; stderr for diagnostics */
  ALLOW1(read, ARG_EQ(0, fd));
  ALLOW1(recvmsg, ARG_EQ(0, fd));
  ALLOW1(recvfrom, ARG_EQ(0, fd));
  ALLOW1(write, ARG_EQ(0, fd));
  ALLOW1(write, ARG_EQ(0, 2));
  ALLOW1(writev, ARG_EQ(0, 2));
  ALLOW1(sendmsg, ARG_EQ(0, fd));
  ALLOW1(sendto, ARG_EQ(0, fd));
  if (report >= 0) {   /* the report socket: its records, the listener */
    ALLOW1(write, ARG_EQ(0, report));
    ALLOW1(sendmsg, ARG_EQ(0, report));
  }
  /* memory: never executable */
  ALLOW(brk);
#ifdef WORKER_ASAN
  ALLOW(mprotect);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                         ARG_MASKED_EQ(4, 0xffffffffu, 0xffffffffu));
#else
  ALLOW1(mprotect, ARG_MASKED_EQ(2, PROT_EXEC, 0));
  /* anonymous memory only: the descriptor argument is -1 (an int: compare
  ** its low 32 bits) */
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 2, ARG_MASKED_EQ(2, PROT_EXEC, 0),
                         ARG_MASKED_EQ(4, 0xffffffffu, 0xffffffffu));
#endif
  ALLOW(munmap);
  ALLOW(mremap);
  ALLOW(madvise);
  /* threads already running, time, randomness, signals, exit */
  ALLOW(futex);
  ALLOW(clock_gettime);
  ALLOW(clock_getres);
  ALLOW(nanosleep);         /* SLEEP (paid for in fuel first) */
  ALLOW(clock_nanosleep);
  ALLOW(gettimeofday);
  ALLOW(getrandom);
  ALLOW(sysinfo);  /* glibc's qsort asks for the memory size before sorting
                      large arrays (a transaction changing 100,000 rows) */
  ALLOW(rseq);
  ALLOW(rt_sigreturn);
  ALLOW(rt_sigprocmask);
  ALLOW(sched_yield);
  ALLOW(getpid);
  ALLOW(gettid);
  ALLOW(exit);
  ALLOW(exit_group);
  ALLOW1(tgkill, ARG_EQ(0, getpid()));  /* abort() */
#ifdef WORKER_ASAN
  /* AddressSanitizer's allocator and reports */
  ALLOW(sigaltstack);
  ALLOW(rt_sigaction);
  ALLOW(getrlimit);
  ALLOW(prlimit64);
  ALLOW(sched_getaffinity);
  ALLOW(readlink);
#endif
  if (gate) {
    /* the fork gate: glibc's fork(), held for the kernel's answer; any
    ** other clone (a thread: CLONE_VM, CLONE_THREAD) is killed */
    rc |= seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(clone), 1, ARG_EQ(0, WORKER_FORK_FLAGS));
    /* what a shadow needs (shadow.c): to be reaped without waiting, to
    ** die with its parent, to narrow its own filter, to close the
    ** kernel's socket, to see whether its parent is still there */
    ALLOW1(wait4, ARG_EQ(2, WNOHANG));
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 2, ARG_EQ(0, PR_SET_PDEATHSIG), ARG_EQ(1, SIGKILL));
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(seccomp), 2, ARG_EQ(0, SECCOMP_SET_MODE_FILTER),
                           ARG_EQ(1, 0));
    ALLOW(close);
    ALLOW(getppid);
    ALLOW(set_robust_list);   /* glibc's fork, in the child: the thread's robust mutex list */
    if (park[0] >= 0 && park[1] >= 0) {
      /* parked shadows: the worker sends jobs (never waiting) and drops
      ** a dead one's leftovers; the parked copy reads its job */
      ALLOW1(sendto, ARG_EQ(0, park[0]));
      ALLOW1(recvfrom, ARG_EQ(0, park[1]));
      ALLOW1(read, ARG_EQ(0, park[1]));
    }
  }
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  /* Opening a file fails (nothing is opened) instead of killing: glibc
  ** opens /proc/sys/vm/overcommit_memory lazily the first time free()
  ** shrinks a thread arena's heap (check_may_shrink_heap), and the world
  ** runs on a thread — a call that exports a few thousand rows did that and
  ** the worker was killed.  glibc treats the failure as "no overcommit
  ** limit" and goes on. */
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
#undef ALLOW
#undef ALLOW1
  /* every thread of the process (the main thread waits in pthread_join) */
  rc |= seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc) {
    seccomp_release(ctx);
    return NULL;
  }
  return ctx;
}

/* The gate's listener to the kernel: the report socket's first record. */
static int send_listener(int report, int listener) {
  unsigned char head[WIRE_RECORD_HEAD] = {WIRE_REC_LISTENER};
  struct iovec iov = {head, sizeof head};
  union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &listener, sizeof(int));
  ssize_t w;
  do w = sendmsg(report, &mh, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  return w == (ssize_t)sizeof head ? 0 : -1;
}

int worker_sandbox(int fd, int report, const int park[2], int *gate, char *err, size_t errlen) {
  *gate = 0;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
    snprintf(err, errlen, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
    return -1;
  }
  if (getppid() == 1) {  /* the kernel died before the signal was armed */
    snprintf(err, errlen, "the kernel is gone");
    return -1;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    snprintf(err, errlen, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    return -1;
  }
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int keep[4] = {fd, report, park[0], park[1]};
  if (close_others(keep, 4, err, errlen)) return -1;
  int top = fd;
  for (int i = 1; i < 4; i++) top = keep[i] > top ? keep[i] : top;
  /* the gate needs the kernel's answers and seccomp's notifications with
  ** TSYNC (libseccomp API level 6); without it no process is ever made */
  int want = report >= 0 && seccomp_api_get() >= 6;
#ifndef WORKER_ASAN
  if (set_limit(RLIMIT_AS, WORKER_AS_LIMIT, "RLIMIT_AS", err, errlen)) return -1;
#endif
  /* RLIMIT_NPROC counts every process of the user (and not at all for
  ** root): no bound on shadows, only 0 or none.  With the gate the
  ** kernel's answer is the bound (and the worker's own count, shadow.c). */
  if (set_limit(RLIMIT_CPU, WORKER_CPU_LIMIT, "RLIMIT_CPU", err, errlen) ||
      set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE", err, errlen) ||
      (!want && set_limit(RLIMIT_NPROC, 0, "RLIMIT_NPROC", err, errlen)) ||
      set_limit(RLIMIT_NOFILE, (rlim_t)top + 1, "RLIMIT_NOFILE", err, errlen))
    return -1;
  /* the listener must not be descriptor 0, which libseccomp takes for "no
  ** listener": 0 and 1 (closed above) are held while the filter loads */
  int hold0 = want ? dup(2) : -1, hold1 = want ? dup(2) : -1;
  scmp_filter_ctx ctx = worker_filter(fd, report, park, want);
  int rc = ctx ? seccomp_load(ctx) : -1;
  if (rc && want) {   /* a system without the gate: no processes at all */
    if (ctx) seccomp_release(ctx);
    want = 0;
    close(hold0);
    close(hold1);
    if (set_limit(RLIMIT_NPROC, 0, "RLIMIT_NPROC", err, errlen)) return -1;
    ctx = worker_filter(fd, report, park, 0);
    rc = ctx ? seccomp_load(ctx) : -1;
  }
  if (!ctx) {
    snprintf(err, errlen, "cannot build the seccomp filter");
    return -1;
  }
  if (rc) {
    seccomp_release(ctx);
    snprintf(err, errlen, "seccomp_load: %s", strerror(-rc));
    return -1;
  }
  if (want) {
    int listener = seccomp_notify_fd(ctx);
    *gate = listener >= 0 && send_listener(report, listener) == 0;
    if (listener >= 0) close(listener);   /* the kernel holds it now */
    close(hold0);
    close(hold1);
  }
  seccomp_release(ctx);
  return 0;
}
