/*
** sandbox.c — the worker's sandbox.
**
** Entered before the worker evaluates anything a client sent (and before it
** imports the store's entries):
**   - PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG(SIGKILL) (and exit if the kernel
**     is already gone), PR_SET_DUMPABLE 0;
**   - every descriptor closed but the kernel's socket and stderr, whatever
**     the worker inherited (the kernel's store, its own parent's files);
**   - rlimits: address space 2 GiB (not under AddressSanitizer, whose shadow
**     memory needs terabytes), CPU seconds (a backstop behind the fuel
**     limit), no core files, no new descriptors, no processes;
**   - a seccomp allow-list, default kill-process: reading and writing the
**     kernel's socket (and writing stderr), anonymous memory only (mmap of
**     a descriptor is killed) and never executable, futexes, clocks,
**     getrandom, sysinfo, rseq, signal returns, exit.
**     clone3 fails with ENOSYS (glibc then falls back to clone, which is
**     killed); open and openat fail with EACCES (glibc's lazy read of
**     /proc/sys/vm/overcommit_memory).  No socket, connect, execve, fork,
**     ptrace, ...
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <seccomp.h>
#include "worker.h"

#if defined(__SANITIZE_ADDRESS__)
#define WORKER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKER_ASAN 1
#endif
#endif

#define WORKER_AS_LIMIT ((rlim_t)2 << 30)
#define WORKER_CPU_LIMIT ((rlim_t)3600)

/* Close every descriptor but `keep` and stderr. */
static int close_others(int keep, char *err, size_t errlen) {
  unsigned lo = 0;
  int keeps[2] = {keep < 2 ? keep : 2, keep < 2 ? 2 : keep};
  for (int i = 0; i < 2; i++) {
    if ((unsigned)keeps[i] > lo && syscall(SYS_close_range, lo, (unsigned)keeps[i] - 1, 0) != 0) goto fail;
    lo = (unsigned)keeps[i] + 1;
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

int worker_sandbox(int fd, char *err, size_t errlen) {
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
  if (close_others(fd, err, errlen)) return -1;
#ifndef WORKER_ASAN
  if (set_limit(RLIMIT_AS, WORKER_AS_LIMIT, "RLIMIT_AS", err, errlen)) return -1;
#endif
  if (set_limit(RLIMIT_CPU, WORKER_CPU_LIMIT, "RLIMIT_CPU", err, errlen) ||
      set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE", err, errlen) ||
      set_limit(RLIMIT_NPROC, 0, "RLIMIT_NPROC", err, errlen) ||
      set_limit(RLIMIT_NOFILE, (rlim_t)fd + 1, "RLIMIT_NOFILE", err, errlen))
    return -1;

  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (!ctx) {
    snprintf(err, errlen, "seccomp_init failed");
    return -1;
  }
  int rc = 0;
#define ALLOW(name) rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 0)
#define ALLOW1(name, cmp) rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 1, cmp)
  /* Comparisons spelled out: libseccomp's SCMP_A0 leaves datum_b to the
  ** initializer's zero fill, which clang warns about. */
#define ARG_EQ(n, v) ((struct scmp_arg_cmp){.arg = (n), .op = SCMP_CMP_EQ, .datum_a = (scmp_datum_t)(v), .datum_b = 0})
#define ARG_MASKED_EQ(n, mask, v) \
  ((struct scmp_arg_cmp){.arg = (n), .op = SCMP_CMP_MASKED_EQ, .datum_a = (mask), .datum_b = (v)})
  /* the kernel's socket; stderr for diagnostics */
  ALLOW1(read, ARG_EQ(0, fd));
  ALLOW1(recvmsg, ARG_EQ(0, fd));
  ALLOW1(recvfrom, ARG_EQ(0, fd));
  ALLOW1(write, ARG_EQ(0, fd));
  ALLOW1(write, ARG_EQ(0, 2));
  ALLOW1(writev, ARG_EQ(0, 2));
  ALLOW1(sendmsg, ARG_EQ(0, fd));
  ALLOW1(sendto, ARG_EQ(0, fd));
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
#undef ARG_EQ
#undef ARG_MASKED_EQ
  /* every thread of the process (the main thread waits in pthread_join) */
  rc |= seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc) {
    seccomp_release(ctx);
    snprintf(err, errlen, "cannot build the seccomp filter");
    return -1;
  }
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc) {
    snprintf(err, errlen, "seccomp_load: %s", strerror(-rc));
    return -1;
  }
  return 0;
}
