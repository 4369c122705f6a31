/*
** progress.c — the worker's side of the progress page (worker.h "The
** progress page"): the page the kernel made, mapped before the sandbox,
** which forbids shared mappings of files afterwards.  The kernel's side
** (making, sealing and handing it over) is in workerproc.c.
*/
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "worker.h"

worker_Progress *worker_progress_map(void) {
  int fd = WORKER_PROGRESS_FD;
  /* only the kernel's page: a memfd of the page's size, sealed so (a
  ** descriptor that is anything else is not the worker's to close) */
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW) ||
      fstat(fd, &st) != 0 || (size_t)st.st_size != WORKER_PROGRESS_SIZE)
    return NULL;
  void *p = mmap(NULL, WORKER_PROGRESS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}
