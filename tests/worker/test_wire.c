/*
** test_wire.c — the worker process over its socket (worker/worker.h,
** docs/protocol.md "Kernel and worker"), driven the way the kernel drives
** it: a forked child runs worker_main (sandbox included) and this process
** sends frames.  Covers attempt + commit, an attempt that changed nothing
** (committed by the worker at once, same generation), a batch of calls
** ("attempts") with more sent while a commit is awaited, and a large
** export inside the sandbox (glibc's lazy file and sysinfo use must not
** kill the worker); foreign libraries granted before the sandbox (one that
** does not open, a declaration imported without its grant, calls inside
** the sandbox).  And the parts alone: the outbox (frames held, sent in
** order by a flush or by the flusher) and the progress page (only a sealed
** memfd of its size maps).
*/
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "jiti.h"
#include "jiti_world.h"
#include "check.h"
#include "worker.h"

static int fd;
static wire_reader rd;  /* frames from the worker */

/* Send a frame (the message is stolen). */
static void tell(json_t *req) {
  CHECK(wire_send(fd, req, NULL, 0) == 0);
  json_decref(req);
}

static json_t *next_frame(void) {
  json_t *m = NULL;
  unsigned char *blob = NULL;
  size_t len = 0;
  char err[256] = "";
  if (wire_recv(fd, &rd, &m, &blob, &len, err, sizeof err) != 0) {
    fprintf(stderr, "test_wire: %s\n", err);
    exit(1);
  }
  free(blob);
  return m;
}

static json_t *ask(json_t *req) {
  tell(req);
  return next_frame();
}

static const char *str(json_t *m, const char *k) {
  const char *s = json_string_value(json_object_get(m, k));
  return s ? s : "";
}

static json_int_t num(json_t *m, const char *k) { return json_integer_value(json_object_get(m, k)); }

static json_t *attempt(const char *source, json_int_t gen, int commit_unchanged) {
  json_t *r = json_pack("{s:s, s:s, s:s, s:I, s:b}", "op", "attempt", "kind", "application", "source", source,
                        "generation", gen, "pausable", 0);
  if (commit_unchanged) json_object_set_new(r, "commit_unchanged", json_true());
  return ask(r);
}

/* A worker in a child process, talked to on fd. */
static pid_t spawn(const worker_Options *opt) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    worker_main(sv[1], opt);
    _exit(99);
  }
  close(sv[1]);
  fd = sv[0];
  wire_reader_reset(&rd);
  return pid;
}

static void stop(pid_t pid) {
  tell(json_pack("{s:s}", "op", "exit"));
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(fd);
}

/* The encoding of one entry of a world, found by kind and name. */
typedef struct { int kind; const char *name; unsigned char *bytes; size_t len; } Find;
static int find_entry(void *ud, jiti_EntryKind kind, const char *name, const unsigned char *bytes, size_t len) {
  Find *f = ud;
  if ((int)kind != f->kind || strcmp(name, f->name)) return 0;
  f->bytes = malloc(len);
  memcpy(f->bytes, bytes, len);
  f->len = len;
  return 1;
}

/* Grants reach the world before its sandbox: a declaration of a granted
** library is made and called inside it; a library that does not open and a
** declaration imported without its grant are reported in "ready". */
static void test_foreign(void) {
  /* the stored form of a declaration of libc's strlen */
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  char err[256];
  CHECK(jiti_foreign_grant(S, "libc.so.6", err, sizeof err) == JITI_OK);
  jiti_Result r;
  const char *decl = "(define-foreign my-strlen \"libc.so.6\" \"strlen\" :size (:string))";
  CHECK(jiti_eval_string(S, decl, strlen(decl), &r) == JITI_OK);
  jiti_result_free(&r);
  Find f = {JITI_ENTRY_FOREIGN, "MY-STRLEN", NULL, 0};
  jiti_export_all(S, find_entry, &f, err, sizeof err);
  jiti_close(S);
  CHECK(f.bytes != NULL);

  const char *libs[] = {"libm.so.6", "/no/such/libjiti-none.so"};
  worker_Options opt = {libs, 2};
  pid_t pid = spawn(&opt);
  tell(json_pack("{s:s, s:i, s:i}", "op", "init", "base", 1, "revision", 1));
  json_t *entries = json_pack("[{s:s, s:s, s:I}]", "kind", "foreign", "name", "MY-STRLEN", "len", (json_int_t)f.len);
  json_t *imp = json_pack("{s:s, s:o}", "op", "import", "entries", entries);
  CHECK(wire_send(fd, imp, f.bytes, f.len) == 0);
  json_decref(imp);
  free(f.bytes);
  json_t *m = ask(json_pack("{s:s}", "op", "start"));
  CHECK_STR(str(m, "event"), "ready");
  json_t *fo = json_object_get(m, "foreign");
  CHECK(json_array_size(json_object_get(fo, "granted")) == 1);
  CHECK_STR(json_string_value(json_array_get(json_object_get(fo, "granted"), 0)), "libm.so.6");
  json_t *failed = json_array_get(json_object_get(fo, "failed"), 0);
  CHECK_STR(str(failed, "library"), "/no/such/libjiti-none.so");
  CHECK(strstr(str(failed, "message"), "libjiti-none") != NULL);
  json_t *un = json_array_get(json_object_get(fo, "unavailable"), 0);
  CHECK_STR(str(un, "name"), "MY-STRLEN");
  CHECK_STR(str(un, "library"), "libc.so.6");
  CHECK_STR(str(un, "symbol"), "strlen");
  CHECK(strstr(str(un, "reason"), "--allow-foreign libc.so.6") != NULL);
  json_int_t g = num(m, "generation");
  json_decref(m);
  /* declared and called inside the sandbox */
  m = attempt("(define-foreign my-cos \"libm.so.6\" \"cos\" :double (:double))", g, 1);
  CHECK_STR(str(m, "reason"), "accepted");
  json_decref(m);
  m = ask(json_pack("{s:s, s:i}", "op", "commit", "revision", 2));
  g = num(m, "generation");
  json_decref(m);
  m = attempt("(my-cos 0)", g, 1);
  CHECK_STR(str(m, "value"), "1.0d0");
  json_decref(m);
  m = attempt("(my-strlen \"abc\")", g, 1);
  CHECK_STR(str(m, "reason"), "error");
  CHECK(strstr(str(m, "message"), "--allow-foreign libc.so.6") != NULL);
  g = num(m, "generation");
  json_decref(m);
  /* the gate refuses a library not granted, and one that did not open */
  m = attempt("(define-foreign my-sin \"/no/such/libjiti-none.so\" \"sin\" :double (:double))", g, 1);
  CHECK_STR(str(m, "reason"), "rejected-by-gate");
  CHECK(strstr(str(m, "message"), "--allow-foreign /no/such/libjiti-none.so") != NULL);
  json_decref(m);
  /* inspect and observe say what is unavailable */
  m = ask(json_pack("{s:s, s:s, s:s}", "op", "inspect", "kind", "foreign", "name", "MY-STRLEN"));
  CHECK(strstr(str(json_object_get(m, "entry"), "unavailable"), "not granted") != NULL);
  json_decref(m);
  m = ask(json_pack("{s:s}", "op", "observe"));
  fo = json_object_get(json_object_get(m, "view"), "foreign");
  CHECK(json_array_size(json_object_get(fo, "unavailable")) == 1);
  CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(m, "view"), "counts"), "foreign")) == 2);
  json_decref(m);
  stop(pid);
}

/* ---------------------------------------------------------- the parts */

static int readable(int s) {
  char c;
  return recv(s, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

static void expect_frame(int s, wire_reader *r, const char *json) {
  json_t *m = NULL;
  char err[128];
  CHECK(wire_recv(s, r, &m, NULL, NULL, err, sizeof err) == 0);
  char *t = json_dumps(m, JSON_COMPACT);
  CHECK_STR(t, json);
  free(t);
  json_decref(m);
}

static void *flusher(void *p) { return (void *)(intptr_t)outbox_run(p); }

static Outbox *big_box;
static void *put_big(void *p) {   /* larger than a socket's buffer: on a thread */
  return (void *)(intptr_t)outbox_put(big_box, "{\"n\":7}", 7, p, (size_t)2 << 20, 1);
}

static void test_outbox(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  struct timeval tv = {20, 0};   /* a flusher that never sends fails, not hangs */
  setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  Outbox o;
  CHECK(outbox_init(&o, sv[0]) == 0);
  wire_reader r = {0};
  /* held: nothing goes out until a flush, then all of it, in order */
  CHECK(outbox_put(&o, "{\"n\":1}", 7, NULL, 0, 1) == 0);
  CHECK(outbox_put(&o, "{\"n\":2}", 7, "xy", 2, 1) == 0);
  CHECK(!readable(sv[1]));
  CHECK(outbox_flush(&o) == 0);
  expect_frame(sv[1], &r, "{\"n\":1}");
  expect_frame(sv[1], &r, "{\"n\":2}");
  /* a frame not held takes the held ones along, ahead of it */
  CHECK(outbox_put(&o, "{\"n\":3}", 7, NULL, 0, 1) == 0);
  CHECK(outbox_put(&o, "{\"n\":4}", 7, NULL, 0, 0) == 0);
  expect_frame(sv[1], &r, "{\"n\":3}");
  expect_frame(sv[1], &r, "{\"n\":4}");
  CHECK(!readable(sv[1]));
  /* held and never flushed: the flusher sends it */
  pthread_t th;
  CHECK(pthread_create(&th, NULL, flusher, &o) == 0);
  CHECK(outbox_put(&o, "{\"n\":5}", 7, NULL, 0, 1) == 0);
  expect_frame(sv[1], &r, "{\"n\":5}");
  outbox_stop(&o);
  void *rc;
  CHECK(pthread_join(th, &rc) == 0 && rc == NULL);
  /* more than 1 MiB is not held */
  unsigned char *blob = calloc(1, (size_t)2 << 20);
  big_box = &o;
  CHECK(blob && pthread_create(&th, NULL, put_big, blob) == 0);
  json_t *m = NULL;
  unsigned char *got = NULL;
  size_t gotlen = 0;
  char err[128];
  CHECK(wire_recv(sv[1], &r, &m, &got, &gotlen, err, sizeof err) == 0 && gotlen == ((size_t)2 << 20));
  CHECK(pthread_join(th, &rc) == 0 && rc == NULL);
  json_decref(m);
  free(got);
  free(blob);
  /* a frame too large is refused, and nothing is held of it */
  CHECK(outbox_put(&o, "{}", WIRE_JSON_MAX + 1, NULL, 0, 1) == -1);
  CHECK(outbox_flush(&o) == 0 && !readable(sv[1]));
  outbox_destroy(&o);
  /* without init: sent at once */
  CHECK(outbox_put(&o, "{\"n\":6}", 7, NULL, 0, 1) == 0);
  expect_frame(sv[1], &r, "{\"n\":6}");
  wire_reader_reset(&r);
  close(sv[0]);
  close(sv[1]);
}

/* worker_progress_map with `fd` as WORKER_PROGRESS_FD (-1: none open):
** a page mapped, its descriptor closed; anything else left open. */
static worker_Progress *map_as_progress(int from) {
  int src = from >= 0 ? fcntl(from, F_DUPFD_CLOEXEC, 30) : -1;   /* (from may be 4 itself) */
  int saved = fcntl(WORKER_PROGRESS_FD, F_DUPFD_CLOEXEC, 30);
  close(WORKER_PROGRESS_FD);
  if (from >= 0) CHECK(dup2(src, WORKER_PROGRESS_FD) == WORKER_PROGRESS_FD);
  if (src >= 0) close(src);
  worker_Progress *p = worker_progress_map();
  CHECK((fcntl(WORKER_PROGRESS_FD, F_GETFD) >= 0) == (from >= 0 && !p));
  close(WORKER_PROGRESS_FD);
  if (saved >= 0) {
    dup2(saved, WORKER_PROGRESS_FD);
    close(saved);
  }
  return p;
}

static void test_progress_page(void) {
  CHECK(map_as_progress(-1) == NULL);
  int pfd[2];
  CHECK(pipe(pfd) == 0);
  CHECK(map_as_progress(pfd[0]) == NULL);   /* not a memfd */
  close(pfd[0]);
  close(pfd[1]);
  int m = memfd_create("t", MFD_ALLOW_SEALING);
  CHECK(m >= 0 && ftruncate(m, (off_t)WORKER_PROGRESS_SIZE) == 0);
  CHECK(map_as_progress(m) == NULL);   /* not sealed: it could shrink under the mapping */
  CHECK(fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
  worker_Progress *p = map_as_progress(m);
  CHECK(p != NULL);
  p->outcomes = 42;   /* shared: the kernel's mapping sees it */
  worker_Progress *k = mmap(NULL, WORKER_PROGRESS_SIZE, PROT_READ, MAP_SHARED, m, 0);
  CHECK(k != MAP_FAILED && k->outcomes == 42);
  munmap(k, WORKER_PROGRESS_SIZE);
  munmap(p, WORKER_PROGRESS_SIZE);
  close(m);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  test_outbox();
  test_progress_page();
  test_foreign();
  pid_t pid = spawn(NULL);

  tell(json_pack("{s:s, s:i, s:i}", "op", "init", "base", 10, "revision", 1));
  json_t *m = ask(json_pack("{s:s}", "op", "start"));
  CHECK_STR(str(m, "event"), "ready");
  CHECK(num(m, "generation") == 10);
  json_decref(m);

  /* a change: awaiting commit, then committed */
  m = attempt("(world-put :a 1)", 10, 1);
  CHECK_STR(str(m, "event"), "outcome");
  CHECK_STR(str(m, "reason"), "accepted");
  CHECK_STR(str(m, "status"), "awaiting-commit");
  CHECK(json_array_size(json_object_get(m, "changes")) == 1);
  CHECK(json_object_get(m, "committed") == NULL);
  json_decref(m);
  m = ask(json_pack("{s:s, s:i}", "op", "commit", "revision", 2));
  CHECK_STR(str(m, "event"), "committed");
  CHECK(num(m, "generation") == 11);
  json_decref(m);

  /* nothing changed: committed at once, and every view stays current */
  m = attempt("(world-get :a)", 11, 1);
  CHECK_STR(str(m, "reason"), "accepted");
  CHECK_STR(str(m, "status"), "idle");
  CHECK(json_is_true(json_object_get(m, "committed")));
  CHECK_STR(str(m, "value"), "1");
  CHECK(num(m, "generation") == 11);
  CHECK(json_array_size(json_object_get(m, "changes")) == 0);
  json_decref(m);

  /* whatever the kernel asks: nothing to publish, nothing to wait for */
  m = attempt("(world-get :a)", 11, 0);
  CHECK_STR(str(m, "status"), "idle");
  CHECK(json_is_true(json_object_get(m, "committed")));
  CHECK(num(m, "generation") == 11);
  json_decref(m);

  /* a failed call is not committed, whatever the flag; its restore brings
  ** back what views showed: the generation stays */
  m = attempt("(car 5)", 11, 1);
  CHECK_STR(str(m, "reason"), "error");
  CHECK_STR(str(m, "status"), "idle");
  CHECK(json_object_get(m, "committed") == NULL);
  CHECK(num(m, "generation") == 11);
  json_int_t g;
  json_decref(m);

  /* a change the kernel found already stored (an identical definition):
  ** committed with changed false, the generation stays */
  m = attempt("(world-put :a 1)", 11, 1);
  CHECK_STR(str(m, "status"), "awaiting-commit");
  json_decref(m);
  m = ask(json_pack("{s:s, s:i, s:b}", "op", "commit", "revision", 2, "changed", 0));
  CHECK_STR(str(m, "event"), "committed");
  CHECK(num(m, "generation") == 11);
  json_decref(m);

  /* a batch: the write awaits its commit; calls sent meanwhile run after
  ** the rest of the batch, in order; outcomes come one per call */
  json_t *items = json_pack("[{s:s, s:s, s:s, s:b}, {s:s, s:s, s:s, s:b}]",
                            "op", "attempt", "kind", "application", "source", "(world-put :a 2)", "pausable", 0,
                            "op", "attempt", "kind", "application", "source", "(world-get :a)", "pausable", 0);
  m = ask(json_pack("{s:s, s:o}", "op", "attempts", "items", items));
  CHECK_STR(str(m, "status"), "awaiting-commit");
  json_decref(m);
  items = json_pack("[{s:s, s:s, s:s, s:b}]", "op", "attempt", "kind", "application",
                    "source", "(list :later (world-get :a))", "pausable", 0);
  tell(json_pack("{s:s, s:o}", "op", "attempts", "items", items));
  m = ask(json_pack("{s:s, s:i}", "op", "commit", "revision", 3));
  CHECK_STR(str(m, "event"), "committed");
  json_decref(m);
  m = next_frame();
  CHECK_STR(str(m, "value"), "2");
  json_decref(m);
  m = next_frame();
  CHECK_STR(str(m, "value"), "(:LATER 2)");
  g = num(m, "generation");
  json_decref(m);

  /* in the sandbox: an export that sorts more than 1 KiB (glibc's qsort
  ** asks sysinfo once), calls that drop large strings (free() shrinking the
  ** thread's heap reads /proc/sys/vm/overcommit_memory once) */
  for (int i = 0; i < 40; i++) {
    m = attempt("(length (list (make-string 99000) (make-string 99000) (make-string 99000)))", g, 1);
    CHECK_STR(str(m, "value"), "3");
    g = num(m, "generation");
    json_decref(m);
  }
  m = attempt("(dotimes (i 2000) (world-put (list :row i) (make-string 100)))", g, 1);
  CHECK_STR(str(m, "reason"), "accepted");
  CHECK(json_array_size(json_object_get(m, "changes")) == 2000);
  json_decref(m);
  m = ask(json_pack("{s:s}", "op", "restore"));
  CHECK_STR(str(m, "event"), "restored");
  g = num(m, "generation");
  json_decref(m);
  m = attempt("(world-get (list :row 5))", g, 1);
  CHECK_STR(str(m, "value"), "NIL");
  json_decref(m);

  stop(pid);
  return CHECK_DONE();
}
