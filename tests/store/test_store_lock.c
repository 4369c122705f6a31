/* test_store_lock.c — one writer per store: a second process opening the
** store for writing gets STORE_EBUSY naming the holder's pid; read-only
** handles work beside the writer; the lock goes with the holder, even when
** it is killed.  Every process opens the store after it was forked. */
#include "st_test.h"
#include <signal.h>
#include <sys/wait.h>

/* Child A: open for writing, publish, say "ready", then wait for "go" (or
** be killed). */
static pid_t start_holder(const char *dir, int *to_child, int *from_child) {
  int up[2], down[2];
  if (pipe(up) || pipe(down)) { perror("pipe"); exit(2); }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    char err[1024], c;
    store_env *s;
    uint64_t rev;
    close(up[0]); close(down[1]);
    if (store_open(dir, 0, &s, err, sizeof err) != STORE_OK) { fprintf(stderr, "%s\n", err); _exit(3); }
    store_rev_info in = info_of(STORE_REV_INITIAL, 1, "init");
    store_entry e = ent(STORE_FUNCTION, "f", "(defun f () 1)");
    if (store_publish(s, 0, &in, &e, 1, NULL, 0, &rev) != STORE_OK) _exit(4);
    if (write(up[1], "r", 1) != 1) _exit(5);
    if (read(down[0], &c, 1) != 1) _exit(6);
    store_close(s);
    _exit(0);
  }
  close(up[1]); close(down[0]);
  *to_child = down[1];
  *from_child = up[0];
  char c;
  if (read(up[0], &c, 1) != 1) { fprintf(stderr, "holder failed\n"); exit(2); }
  return pid;
}

/* Child B: open with flags *arg; exit status = the result, message = the
** error, or CURRENT when it opened. */
static int open_child(const char *dir, void *arg, char *err, size_t n) {
  store_env *s;
  uint64_t c = 0;
  int r = store_open(dir, *(unsigned *)arg, &s, err, n);
  if (r == STORE_OK && store_current(s, &c) == STORE_OK) snprintf(err, n, "%llu", (unsigned long long)c);
  store_close(s);
  return r;
}

static int try_open(const char *dir, unsigned flags, char *msg, size_t n, uint64_t *cur) {
  int r = st_in_child(open_child, dir, &flags, msg, n);
  if (cur) *cur = strtoull(msg, NULL, 10);
  return r;
}

int main(void) {
  char dir[4096], msg[2048], pidtext[32];
  int to, from, status;
  uint64_t cur = 0;
  tmp_store(dir, sizeof dir);
  pid_t holder = start_holder(dir, &to, &from);
  snprintf(pidtext, sizeof pidtext, "process %ld", (long)holder);

  CHECK(try_open(dir, 0, msg, sizeof msg, NULL) == STORE_EBUSY);
  CHECK(strstr(msg, pidtext) != NULL);
  CHECK(strstr(msg, dir) != NULL);
  printf("second writer: %s\n", msg);
  CHECK(try_open(dir, STORE_NOCREATE, msg, sizeof msg, NULL) == STORE_EBUSY);
  /* A reader works beside the writer. */
  CHECK(try_open(dir, STORE_RDONLY, msg, sizeof msg, &cur) == STORE_OK && cur == 1);

  /* The holder closes: the store is free again. */
  CHECK(write(to, "g", 1) == 1);
  waitpid(holder, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(to); close(from);
  CHECK(try_open(dir, 0, msg, sizeof msg, &cur) == STORE_OK && cur == 1);

  /* A holder killed by SIGKILL releases the lock with its death. */
  rm_store(dir);
  tmp_store(dir, sizeof dir);
  holder = start_holder(dir, &to, &from);
  CHECK(try_open(dir, 0, msg, sizeof msg, NULL) == STORE_EBUSY);
  kill(holder, SIGKILL);
  waitpid(holder, &status, 0);
  close(to); close(from);
  CHECK(try_open(dir, 0, msg, sizeof msg, &cur) == STORE_OK && cur == 1);

  /* In one process, a second handle for writing is refused too (LMDB
  ** forbids opening an environment twice in a process). */
  {
    char err[1024];
    store_env *a, *b;
    CHECK(store_open(dir, 0, &a, err, sizeof err) == STORE_OK);
    CHECK(store_open(dir, 0, &b, err, sizeof err) == STORE_EBUSY && b == NULL);
    snprintf(pidtext, sizeof pidtext, "process %ld", (long)getpid());
    CHECK(strstr(err, pidtext) != NULL);
    store_close(a);
  }
  rm_store(dir);
  return CHECK_DONE();
}
