/*
** test_daemon.c — the kernel daemon's scheduler, group commit and
** idempotency keys against a fake worker (cmocka).
**
** The harness builds a Daemon as kernel_open does (a store in a temporary
** directory, the store writer, the loop's registry), but its live worker is
** one end of a socketpair held by the test: the test reads the frames the
** daemon sends (wire_next) and answers with the frames a worker would send
** (wire_send), then lets the daemon read them (dworker_readable).  A client
** is another socketpair in the daemon's client table: its requests go to
** drequests_handle, its replies are read from the other end.  Nothing runs
** the loop: each test calls the steps a loop turn would (dsched_pump,
** dgroup_publish, dgroup_synced), and checks the daemon's invariants
** (dsched_check, dgroup_check) after each.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "daemon.h"

typedef struct Fake {
  Daemon D;
  char dir[64];
  int worker;              /* the fake worker's end */
  wire_reader rd;
  int client;              /* the fake client's end */
  char in[1 << 16];
  size_t inlen;
  uint64_t gen;            /* the fake worker's generation */
} Fake;

/* ------------------------------------------------------------ the harness */

static void say_frame(Fake *F, const char *fmt, ...) {
  char text[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  json_error_t e;
  json_t *m = json_loads(text, 0, &e);
  assert_non_null(m);
  assert_int_equal(wire_send(F->worker, m, NULL, 0), 0);
  json_decref(m);
}

/* What the daemon holds must hold its invariants at every step. */
static void checked(Fake *F) {
  dsched_check(&F->D);
  dgroup_check(&F->D);
}

/* The daemon reads what the fake worker said (as its loop would), then
** gives the worker its next request. */
static void daemon_reads(Fake *F) {
  struct pollfd p = {F->D.live.w.fd, POLLIN, 0};
  assert_true(poll(&p, 1, 5000) == 1);
  dworker_readable(&F->D.live);
  dsched_pump(&F->D);
  checked(F);
}

/* The next frame the daemon sent the worker, or NULL when none is there
** within wait_ms. */
static json_t *worker_gets(Fake *F, int wait_ms) {
  for (;;) {
    json_t *m;
    unsigned char *blob;
    size_t bl;
    char why[200];
    int got = wire_next(&F->rd, &m, &blob, &bl, why, sizeof why);
    assert_true(got >= 0);
    if (got) {
      free(blob);
      return m;
    }
    struct pollfd p = {F->worker, POLLIN, 0};
    if (poll(&p, 1, wait_ms) != 1) return NULL;
    assert_true(wire_fill(F->worker, &F->rd) > 0);
  }
}

static void client_says(Fake *F, const char *line) {
  Client *c = F->D.clients[0];
  drequests_handle(&F->D, c, line, strlen(line));
  dsched_pump(&F->D);
  checked(F);
}

/* The client's next reply line, or NULL when none is there within wait_ms. */
static json_t *client_gets(Fake *F, int wait_ms) {
  for (;;) {
    char *nl = memchr(F->in, '\n', F->inlen);
    if (nl) {
      json_t *r = json_loadb(F->in, (size_t)(nl - F->in), 0, NULL);
      assert_non_null(r);
      F->inlen -= (size_t)(nl + 1 - F->in);
      memmove(F->in, nl + 1, F->inlen);
      return r;
    }
    struct pollfd p = {F->client, POLLIN, 0};
    if (poll(&p, 1, wait_ms) != 1) return NULL;
    ssize_t n = recv(F->client, F->in + F->inlen, sizeof F->in - F->inlen, 0);
    assert_true(n > 0);
    F->inlen += (size_t)n;
  }
}

static const char *str(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static json_int_t num(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

static int setup(void **state) {
  Fake *F = calloc(1, sizeof *F);
  Daemon *D = &F->D;
  char err[1024];
  snprintf(F->dir, sizeof F->dir, "/tmp/jiti-test-daemon.XXXXXX");
  assert_non_null(mkdtemp(F->dir));
  D->dir = F->dir;
  limits_default(&D->limits);
  grant_manifest(&D->grant, D->grant_text, sizeof D->grant_text);
  D->vouch.grant = &D->grant;
  D->lfd = D->spare_fd = -1;
  D->live.D = D;
  D->live.role = "worker";
  D->max_clients = 4;
  D->idle_timeout = 600;
  dkeys_init(D);
  D->clients = calloc((size_t)D->max_clients + DAEMON_RESERVED_SLOTS, sizeof *D->clients);
  assert_non_null(D->poll = dpoll_open());
  assert_int_equal(store_open(D->dir, 0, &D->store, err, sizeof err), STORE_OK);
  uint64_t cur = 0;
  store_rev_info info = {STORE_REV_INITIAL, 1, 0, JITI_VERSION, "initial: an empty world", NULL, NULL};
  assert_int_equal(store_publish(dstore(D), 0, &info, NULL, 0, NULL, 0, &cur), STORE_OK);
  D->revision = cur;
  assert_int_equal(store_generation(dstore(D), &D->gen_saved), STORE_OK);
  D->live.base = D->gen_saved + 1;
  D->next_attempt = storeio_next_attempt(dstore(D));
  dkeys_load(D);
  dtally_load(D);
  /* the fake worker, started: its ready */
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  D->live.w.fd = sv[0];
  D->live.w.err.fd = D->live.w.report = D->shadows.listener = -1;
  F->worker = sv[1];
  D->live.wait = W_START;
  F->gen = D->live.base;
  say_frame(F, "{\"event\":\"ready\",\"generation\":%llu,\"status\":\"idle\",\"message\":\"\"}",
            (unsigned long long)F->gen);
  struct pollfd p = {D->live.w.fd, POLLIN, 0};
  assert_true(poll(&p, 1, 5000) == 1);
  dworker_readable(&D->live);
  assert_int_equal(D->live.wait, W_NONE);
  assert_int_equal(dsync_start(D, err, sizeof err), 0);
  /* a client */
  int cs[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, cs), 0);
  Client *c = calloc(1, sizeof *c);
  c->fd = cs[0];
  c->serial = ++D->next_serial;
  c->held = &D->outbytes;
  c->D = D;
  c->active = daemon_now();
  D->clients[D->nclients++] = c;
  F->client = cs[1];
  checked(F);
  *state = F;
  return 0;
}

static int teardown(void **state) {
  Fake *F = *state;
  Daemon *D = &F->D;
  checked(F);
  while (D->nclients) dclients_free(D, 0);
  free(D->clients);
  dstore(D);
  dsync_settle(D);
  devents_flush(D);
  dsync_stop(D);
  wproc_stop(&D->live.w, 1);   /* (no process: its socket closed, its reader freed) */
  json_decref(D->foreign_failed);
  close(F->worker);
  close(F->client);
  wire_reader_reset(&F->rd);
  dkeys_free(D);
  dtally_free(D);
  dtraffic_free(D);
  dincident_policy_changed(D);
  devents_free(D);
  free(D->txq.v);
  free(D->queryq.v);
  free(D->cmdq.v);
  free(D->live.batch.v);
  free(D->group.v);
  free(D->live.frame.buf);
  free(D->log.buf);
  vouch_checker_close(&D->vouch);
  store_close(dstore(D));
  dpoll_close(D->poll);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", F->dir);
  (void)!system(cmd);
  free(F);
  return 0;
}

/* A call's outcome that changed nothing: kept by the worker at once. */
static void read_outcome(Fake *F, const char *value) {
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"idle\","
               "\"changes\":[],\"committed\":true,\"value\":\"%s\"}", (unsigned long long)F->gen, value);
}

/* ------------------------------------------------------------ scheduler */

/* status is the daemon's own answer: the worker hears nothing of it. */
static void test_status_answered_by_the_daemon(void **state) {
  Fake *F = *state;
  client_says(F, "{\"op\":\"status\",\"id\":1}");
  json_t *r = client_gets(F, 5000);
  assert_non_null(r);
  assert_true(json_is_true(json_object_get(r, "ok")));
  assert_string_equal(str(r, "state"), "idle");
  json_decref(r);
  assert_null(worker_gets(F, 50));
}

/* Queries reach the worker one at a time, in their order, each answered
** before the next is sent. */
static void test_queries_one_at_a_time(void **state) {
  Fake *F = *state;
  client_says(F, "{\"op\":\"invariant-list\",\"id\":1}");
  client_says(F, "{\"op\":\"invariant-list\",\"id\":2}");
  json_t *m = worker_gets(F, 5000);
  assert_non_null(m);
  assert_string_equal(str(m, "op"), "invariant-list");
  assert_int_equal(num(m, "id"), 1);
  json_decref(m);
  assert_null(worker_gets(F, 50));   /* the second waits */
  assert_int_equal(F->D.live.wait, W_QUERY);
  say_frame(F, "{\"event\":\"invariants\",\"invariants\":[]}");
  daemon_reads(F);
  json_t *r = client_gets(F, 5000);
  assert_int_equal(num(r, "id"), 1);
  assert_true(json_is_array(json_object_get(r, "invariants")));
  json_decref(r);
  m = worker_gets(F, 5000);
  assert_non_null(m);
  assert_int_equal(num(m, "id"), 2);
  json_decref(m);
  say_frame(F, "{\"event\":\"invariants\",\"invariants\":[]}");
  daemon_reads(F);
  r = client_gets(F, 5000);
  assert_int_equal(num(r, "id"), 2);
  json_decref(r);
  assert_int_equal(F->D.live.wait, W_NONE);
}

/* Calls without a generation queued together go to the worker in one
** "attempts" frame and are answered in their order. */
static void test_calls_batched(void **state) {
  Fake *F = *state;
  Daemon *D = &F->D;
  /* queued before the pump runs: they go together */
  for (int i = 1; i <= 3; i++) {
    char line[100];
    snprintf(line, sizeof line, "{\"op\":\"call\",\"id\":%d,\"source\":\"%d\"}", i, i);
    drequests_handle(D, D->clients[0], line, strlen(line));
  }
  assert_int_equal(D->txq.n, 3);
  dsched_pump(D);
  checked(F);
  json_t *m = worker_gets(F, 5000);
  assert_non_null(m);
  assert_string_equal(str(m, "op"), "attempts");
  assert_int_equal(json_array_size(json_object_get(m, "items")), 3);
  json_decref(m);
  for (int i = 1; i <= 3; i++) {
    char v[8];
    snprintf(v, sizeof v, "%d", i);
    read_outcome(F, v);
    daemon_reads(F);
    json_t *r = client_gets(F, 5000);
    assert_non_null(r);
    assert_int_equal(num(r, "id"), i);
    assert_string_equal(str(r, "value"), v);
    assert_string_equal(str(r, "outcome"), "accepted");
    json_decref(r);
  }
  assert_int_equal(D->live.wait, W_NONE);
  assert_false(D->live.cur.active);
}

/* ---------------------------------------------------------- group commit */

/* Until the client has a reply: the writer's wake-ups taken as the loop
** would take them. */
static json_t *reply_after_sync(Fake *F) {
  for (int i = 0; i < 100; i++) {
    json_t *r = client_gets(F, 0);
    if (r) return r;
    struct pollfd p = {dsync_fd(&F->D), POLLIN, 0};
    if (poll(&p, 1, 100) == 1) dgroup_synced(&F->D);
    checked(F);
  }
  return NULL;
}

/* A call that writes is held until its group is durable: the worker is
** told to keep it with the one commit frame shape (count, unchanged), and
** its client hears of it only once the store has synced it. */
static void test_group_commit(void **state) {
  Fake *F = *state;
  Daemon *D = &F->D;
  client_says(F, "{\"op\":\"call\",\"id\":7,\"source\":\"(world-rem :gone)\"}");
  json_t *m = worker_gets(F, 5000);
  assert_non_null(m);
  json_decref(m);
  /* removing a row the store does not have: a revision the store finds unchanged */
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"awaiting-commit\","
               "\"changes\":[{\"kind\":\"data\",\"name\":\":gone\",\"removed\":true,\"len\":0}],\"value\":\"NIL\"}",
            (unsigned long long)F->gen);
  daemon_reads(F);
  assert_true(dgroup_holds(D));
  assert_int_equal(D->group.n, 1);
  assert_null(client_gets(F, 50));   /* held: not durable yet */
  dgroup_publish(D);
  checked(F);
  assert_int_equal(D->group.writing, 1);
  json_t *r = reply_after_sync(F);
  assert_non_null(r);
  assert_int_equal(num(r, "id"), 7);
  assert_string_equal(str(r, "outcome"), "accepted");
  assert_string_equal(str(r, "value"), "NIL");
  json_decref(r);
  m = worker_gets(F, 5000);   /* keep it: one revision, which the store had already */
  assert_non_null(m);
  assert_string_equal(str(m, "op"), "commit");
  assert_int_equal(num(m, "count"), 1);
  assert_int_equal(json_array_size(json_object_get(m, "unchanged")), 1);
  assert_int_equal(json_integer_value(json_array_get(json_object_get(m, "unchanged"), 0)), 0);
  assert_null(json_object_get(m, "changed"));
  json_decref(m);
  assert_int_equal(D->group.acks, 1);
  say_frame(F, "{\"event\":\"committed\",\"generation\":%llu,\"status\":\"idle\"}", (unsigned long long)F->gen);
  daemon_reads(F);
  assert_int_equal(D->group.acks, 0);
  assert_false(dgroup_holds(D));
  assert_int_equal(D->group.commits, 1);
}

/* A call that changed nothing but ran on a held one waits with it. */
static void test_read_waits_for_held_write(void **state) {
  Fake *F = *state;
  Daemon *D = &F->D;
  client_says(F, "{\"op\":\"call\",\"id\":1,\"source\":\"(world-rem :a)\"}");
  client_says(F, "{\"op\":\"call\",\"id\":2,\"source\":\"(world-get :a)\"}");
  json_t *m;
  while ((m = worker_gets(F, 200))) json_decref(m);
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"awaiting-commit\","
               "\"changes\":[{\"kind\":\"data\",\"name\":\":a\",\"removed\":true,\"len\":0}]}",
            (unsigned long long)F->gen);
  daemon_reads(F);
  read_outcome(F, "NIL");
  daemon_reads(F);
  assert_int_equal(D->group.n, 2);   /* the read is held behind the write */
  assert_null(client_gets(F, 50));
  dgroup_publish(D);
  json_t *r1 = reply_after_sync(F), *r2 = client_gets(F, 5000);
  assert_non_null(r1);
  assert_non_null(r2);
  assert_int_equal(num(r1, "id"), 1);
  assert_int_equal(num(r2, "id"), 2);
  json_decref(r1);
  json_decref(r2);
  m = worker_gets(F, 5000);
  assert_string_equal(str(m, "op"), "commit");
  json_decref(m);
  say_frame(F, "{\"event\":\"committed\",\"generation\":%llu,\"status\":\"idle\"}", (unsigned long long)F->gen);
  daemon_reads(F);
  assert_false(dgroup_holds(D));
}

/* A call with a generation is published on its own, then committed with
** the same commit frame shape as a group (count and unchanged), and
** answered once the worker kept it. */
static void test_published_alone(void **state) {
  Fake *F = *state;
  Daemon *D = &F->D;
  char line[200];
  snprintf(line, sizeof line, "{\"op\":\"call\",\"id\":5,\"source\":\"(world-rem :b)\",\"generation\":%llu}",
           (unsigned long long)F->gen);
  client_says(F, line);
  json_t *m = worker_gets(F, 5000);
  assert_non_null(m);
  assert_string_equal(str(m, "op"), "attempt");
  json_decref(m);
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"awaiting-commit\","
               "\"changes\":[{\"kind\":\"data\",\"name\":\":b\",\"removed\":true,\"len\":0}]}",
            (unsigned long long)F->gen);
  daemon_reads(F);
  assert_int_equal(D->live.wait, W_COMMIT);
  assert_null(client_gets(F, 50));   /* not before the worker kept it */
  m = worker_gets(F, 5000);
  assert_non_null(m);
  assert_string_equal(str(m, "op"), "commit");
  assert_int_equal(num(m, "count"), 1);
  assert_int_equal(json_array_size(json_object_get(m, "unchanged")), 1);   /* the store had it: no row :b */
  assert_null(json_object_get(m, "changed"));
  json_decref(m);
  say_frame(F, "{\"event\":\"committed\",\"generation\":%llu,\"status\":\"idle\"}", (unsigned long long)F->gen);
  daemon_reads(F);
  json_t *r = client_gets(F, 5000);
  assert_non_null(r);
  assert_int_equal(num(r, "id"), 5);
  assert_string_equal(str(r, "outcome"), "accepted");
  assert_int_equal(num(r, "generation"), (json_int_t)F->gen);
  json_decref(r);
  assert_false(D->live.cur.active);
}

/* ------------------------------------------------------- the traffic sample */

/* A call's frame: alone, or the first of a batch. */
static json_t *first_item(json_t *m) {
  json_t *items = json_object_get(m, "items");
  return items ? json_array_get(items, 0) : m;
}

static int take_calls(void *arg, const store_traffic_call *c) {
  char *t = arg;
  size_t at = strlen(t);
  snprintf(t + at, 512 - at, "%s|%s|%s;", c->signature, c->request, c->result);
  return 0;
}

/* The worker is asked to note the calls the policy may select, and only
** those; a writing call's note goes into the store with its group, one
** that wrote nothing with the next write; a note of a function the policy
** does not select (the worker's word is not the kernel's) keeps nothing. */
static void test_traffic_noted(void **state) {
  Fake *F = *state;
  Daemon *D = &F->D;
  store_repair_rule rule = {"PRICE", STORE_REPAIR_FAIL, 0, NULL};
  assert_int_equal(store_repair_put(dstore(D), &rule), STORE_OK);
  dincident_policy_changed(D);
  client_says(F, "{\"op\":\"call\",\"id\":1,\"source\":\"(price 21)\"}");
  json_t *m = worker_gets(F, 5000);
  assert_non_null(m);
  assert_true(json_is_true(json_object_get(first_item(m), "note")));
  json_decref(m);
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"awaiting-commit\","
               "\"changes\":[{\"kind\":\"data\",\"name\":\":p\",\"removed\":true,\"len\":0}],\"value\":\"42\","
               "\"noted\":{\"function\":\"PRICE\",\"signature\":\"fixnum\"}}",
            (unsigned long long)F->gen);
  daemon_reads(F);
  assert_non_null(D->group.v[D->group.head].traffic);   /* held with its call */
  dgroup_publish(D);
  checked(F);
  json_t *r = reply_after_sync(F);
  assert_non_null(r);
  assert_int_equal(num(r, "id"), 1);
  json_decref(r);
  m = worker_gets(F, 5000);
  assert_string_equal(str(m, "op"), "commit");
  json_decref(m);
  say_frame(F, "{\"event\":\"committed\",\"generation\":%llu,\"status\":\"idle\"}", (unsigned long long)F->gen);
  daemon_reads(F);
  char kept[512] = "";
  assert_int_equal(store_traffic_list(dstore(D), "PRICE", take_calls, kept), STORE_OK);
  assert_string_equal(kept, "fixnum|(price 21)|42;");
  /* a call no rule may select is not asked about */
  client_says(F, "{\"op\":\"call\",\"id\":2,\"source\":\"(other 1)\"}");
  m = worker_gets(F, 5000);
  assert_null(json_object_get(first_item(m), "note"));
  json_decref(m);
  read_outcome(F, "1");
  daemon_reads(F);
  json_decref(client_gets(F, 5000));
  /* asked, but the worker names a function the policy does not select */
  client_says(F, "{\"op\":\"call\",\"id\":3,\"source\":\"(price \\\"abc\\\")\"}");
  json_decref(worker_gets(F, 5000));
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"idle\","
               "\"changes\":[],\"committed\":true,\"value\":\"3\",\"noted\":{\"function\":\"OTHER\",\"signature\":\"string\"}}",
            (unsigned long long)F->gen);
  daemon_reads(F);
  json_decref(client_gets(F, 5000));
  assert_int_equal(D->traffic.n, 0);
  /* a call that wrote nothing: with the next write */
  client_says(F, "{\"op\":\"call\",\"id\":4,\"source\":\"(price 2)\"}");
  json_decref(worker_gets(F, 5000));
  say_frame(F, "{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":%llu,\"status\":\"idle\","
               "\"changes\":[],\"committed\":true,\"value\":\"4\",\"noted\":{\"function\":\"PRICE\",\"signature\":\"fixnum\"}}",
            (unsigned long long)F->gen);
  daemon_reads(F);
  json_decref(client_gets(F, 5000));
  assert_int_equal(D->traffic.n, 1);
  devents_flush(D);
  assert_int_equal(D->traffic.n, 0);
  kept[0] = 0;
  assert_int_equal(store_traffic_list(dstore(D), "PRICE", take_calls, kept), STORE_OK);
  assert_string_equal(kept, "fixnum|(price 21)|42;fixnum|(price 2)|4;");
}

/* ------------------------------------------------------- idempotency keys */

/* A keyed call that ran is answered again from its record when retried,
** without reaching the worker; the key with another request is refused. */
static void test_keys(void **state) {
  Fake *F = *state;
  client_says(F, "{\"op\":\"call\",\"id\":1,\"key\":\"k-1\",\"source\":\"(+ 1 2)\"}");
  json_t *m = worker_gets(F, 5000);
  assert_non_null(m);
  json_decref(m);
  /* in flight: the same key again is busy */
  client_says(F, "{\"op\":\"call\",\"id\":9,\"key\":\"k-1\",\"source\":\"(+ 1 2)\"}");
  json_t *r = client_gets(F, 5000);
  assert_int_equal(num(r, "id"), 9);
  assert_string_equal(str(r, "code"), "busy");
  json_decref(r);
  read_outcome(F, "3");
  daemon_reads(F);
  r = client_gets(F, 5000);
  assert_int_equal(num(r, "id"), 1);
  assert_string_equal(str(r, "value"), "3");
  assert_null(json_object_get(r, "replayed"));
  json_decref(r);
  client_says(F, "{\"op\":\"call\",\"id\":2,\"key\":\"k-1\",\"source\":\"(+ 1 2)\"}");
  r = client_gets(F, 5000);
  assert_int_equal(num(r, "id"), 2);
  assert_true(json_is_true(json_object_get(r, "replayed")));
  assert_string_equal(str(r, "value"), "3");
  json_decref(r);
  client_says(F, "{\"op\":\"call\",\"id\":3,\"key\":\"k-1\",\"source\":\"(+ 1 3)\"}");
  r = client_gets(F, 5000);
  assert_int_equal(num(r, "id"), 3);
  assert_string_equal(str(r, "code"), "key-conflict");
  json_decref(r);
  assert_null(worker_gets(F, 50));   /* neither reached the worker */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_status_answered_by_the_daemon, setup, teardown),
    cmocka_unit_test_setup_teardown(test_queries_one_at_a_time, setup, teardown),
    cmocka_unit_test_setup_teardown(test_calls_batched, setup, teardown),
    cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
    cmocka_unit_test_setup_teardown(test_read_waits_for_held_write, setup, teardown),
    cmocka_unit_test_setup_teardown(test_published_alone, setup, teardown),
    cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
    cmocka_unit_test_setup_teardown(test_traffic_noted, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
