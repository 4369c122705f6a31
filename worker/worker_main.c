/*
** worker_main.c — the worker process: one txn_World served to the kernel
** over a socketpair (worker.h, docs/protocol.md "Kernel and worker").
**
** Life: open the world (no client input yet) -> open the granted foreign
** libraries -> enter the sandbox -> receive
** "init" and CURRENT's entries ("import" frames) -> "start": check the
** baseline, answer "ready" -> serve requests one at a time ("attempts" is
** a batch of application calls, served as consecutive attempts; "shadow"
** forks a copy that verifies a candidate and reports by itself, shadow.c).
**
** Commits.  An accepted attempt awaits the kernel's "commit" (its revision
** is durable) or "restore" (it is not).  With "stack": N in "init" (the
** kernel's group commit) up to N await at once: the next attempts run on
** top of them (txn_set_stacking) while the kernel makes them durable, and
** "commit" / "restore" are taken as soon as they arrive between attempts,
** ahead of the requests queued before them (those wait in the inbox).
** Without it, or once N await, the worker waits for the decision.
**
** Generations.  txn counts from 0 in every worker; the kernel hands a base
** in "init" and the worker adds it to every generation it reports and
** subtracts it from every generation it receives, so generations seen by
** clients only grow, across worker restarts too.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "jtext.h"
#include "txn.h"
#include "worker.h"

/* --------------------------------------------------------------- state */

typedef struct {
  int fd;
  wire_reader *rd;        /* read-ahead on fd */
  txn_World *W;
  uint64_t base;          /* client generation = base + txn generation */
  char *out;              /* output captured during an attempt */
  size_t outlen, outcap;
  json_t *inbox;          /* requests that arrived while decisions were taken */
  jtext_writer text;      /* the outcome frame's JSON, its buffer kept */
  int stack;              /* accepted attempts that may await their commit */
  int more;               /* more calls of the batch follow this one */
  int gate;               /* the sandbox's fork gate is up: shadows may be made */
  Outbox *ob;             /* the batch's outcomes, held to go out together */
  worker_Progress *pg;    /* the kernel's count of them, or NULL: none held */
  uint64_t made;          /* outcome frames made */
  /* strings of the last command, kept until the next cmd_fn call */
  char *c_source, *c_restart, *c_args, *c_package;
} Worker;

static void capture(void *ud, const char *s, size_t n) {
  Worker *w = ud;
  if (w->outlen + n + 1 > w->outcap) {
    size_t cap = w->outcap ? w->outcap : 4096;
    while (cap < w->outlen + n + 1) cap *= 2;
    char *p = realloc(w->out, cap);
    if (!p) return;
    w->out = p;
    w->outcap = cap;
  }
  memcpy(w->out + w->outlen, s, n);
  w->outlen += n;
  w->out[w->outlen] = 0;
}

static uint64_t vis(Worker *w, uint64_t local) { return w->base + local; }

/* A client generation in txn's numbering; UINT64_MAX (never current) if
** it is older than this worker. */
static uint64_t local_gen(Worker *w, json_t *g) {
  if (!json_is_integer(g) || json_integer_value(g) < 0) return UINT64_MAX;
  uint64_t v = (uint64_t)json_integer_value(g);
  return v < w->base ? UINT64_MAX : v - w->base;
}

/* Before the worker sends anything else or waits for the kernel, the
** outcomes held go out (the kernel reads frames in the order made). */
static void flush_outbox(Worker *w) {
  if (outbox_flush(w->ob)) _exit(0);  /* the kernel is gone */
}

static void send_or_die(Worker *w, json_t *msg, const void *blob, size_t len) {
  flush_outbox(w);
  int rc = wire_send(w->fd, msg, blob, len);
  json_decref(msg);
  if (rc) _exit(0);  /* the kernel is gone */
}

/* The kernel's stream ended or broke: the worker ends (an end of file
** between frames is the kernel going away, not worth a word). */
static _Noreturn void read_failed(const char *err) {
  if (strcmp(err, "eof")) fprintf(stderr, "jiti worker: %s\n", err);
  _exit(0);
}

static json_t *recv_or_die(Worker *w, unsigned char **blob, size_t *len) {
  json_t *m;
  char err[256];
  flush_outbox(w);
  if (wire_recv(w->fd, w->rd, &m, blob, len, err, sizeof err)) read_failed(err);
  return m;
}

/* observe JSON with the generation in client numbering */
static json_t *observe_json(Worker *w, size_t budget) {
  json_t *v = txn_observe_value(w->W, budget);
  if (!v) v = json_object();
  json_object_set_new(v, "generation", json_integer((json_int_t)vis(w, txn_generation(w->W))));
  return v;
}

static json_t *event_msg(wire_Event ev) { return json_pack("{s:s}", "event", wire_event_name(ev)); }

/* The results of goals a client sent with observe, evaluated now (the
** view's own "goals" are the task goals of txn_set_goals, unused here). */
static json_t *goals_now(Worker *w, json_t *sources) {
  size_t n = json_array_size(sources);
  const char **v = calloc(n ? n : 1, sizeof *v);
  json_t *out = json_array();
  if (!v) return out;
  for (size_t i = 0; i < n; i++) v[i] = json_string_value(json_array_get(sources, i));
  txn_GoalResult *g = txn_eval_goals(w->W, (int)n, v);
  for (size_t i = 0; i < n; i++) {
    if (g)
      json_array_append_new(out, json_pack("{s:s, s:b, s:s}", "source", g[i].source, "pass", g[i].pass,
                                           "message", g[i].message ? g[i].message : ""));
    else
      json_array_append_new(out, json_pack("{s:s, s:n, s:s}", "source", v[i], "pass", "message",
                                           "not evaluated: a transaction is paused"));
  }
  txn_goal_results_free(g, (int)n);
  free(v);
  return out;
}

static void send_view(Worker *w, json_t *req) {
  json_t *b = json_object_get(req, "budget");
  size_t budget = json_is_integer(b) && json_integer_value(b) > 0 ? (size_t)json_integer_value(b) : 0;
  json_t *view = observe_json(w, budget);
  json_t *goals = json_object_get(req, "goals");
  if (json_is_array(goals)) json_object_set_new(view, "goals", goals_now(w, goals));
  json_t *m = event_msg(WIRE_VIEW);
  json_object_set_new(m, "view", view);
  send_or_die(w, m, NULL, 0);
}

/* inspect: kind and name, or (no kind) the first entry of that name in the
** order of jiti_EntryKind. */
static json_t *inspect(Worker *w, json_t *req) {
  const char *kind = json_string_value(json_object_get(req, "kind"));
  const char *name = json_string_value(json_object_get(req, "name"));
  if (!name) return NULL;
  if (kind) return txn_inspect_value(w->W, kind, name);
  for (int k = 0; k < JITI_ENTRY_KIND_COUNT; k++) {
    json_t *e = txn_inspect_value(w->W, jiti_entry_kind_name((jiti_EntryKind)k), name);
    if (e) return e;
  }
  return NULL;
}

/* Queries, answered idle or paused: observe, inspect, invariant-list,
** complete (no candidates while paused).
** 1 when m was one of them. */
static int answer_query(Worker *w, json_t *m) {
  json_t *r;
  switch (wire_op_of(m)) {
  case WIRE_OBSERVE:
    send_view(w, m);
    return 1;
  case WIRE_INSPECT: {
    json_t *e = inspect(w, m);
    r = event_msg(WIRE_ENTRY);
    json_object_set_new(r, "entry", e ? e : json_null());
    break;
  }
  case WIRE_COMPLETE:
    r = event_msg(WIRE_COMPLETIONS);
    json_object_set_new(r, "completions", txn_complete(w->W, json_string_value(json_object_get(m, "text"))));
    break;
  case WIRE_INVARIANT_LIST: {
    json_t *l = txn_invariant_list_value(w->W);
    r = event_msg(WIRE_INVARIANTS);
    json_object_set_new(r, "invariants", l ? l : json_array());
    break;
  }
  default:
    return 0;
  }
  send_or_die(w, r, NULL, 0);
  return 1;
}

/* Analyse every function and macro body now (recover-session --full), under
** the world's limits: user macros expand here, inside the sandbox.  Only
** between attempts: expansion may run user code, which must not touch a
** paused or awaiting one. */
static void analyze(Worker *w) {
  char why[1024] = "";
  jiti_Limits lim;
  txn_get_limits(w->W, &lim);
  txn_Status st = txn_status(w->W);
  if (st != TXN_ST_IDLE && st != TXN_ST_FAULTED)
    snprintf(why, sizeof why, "cannot analyse while a transaction is %s", txn_status_name(st));
  else if (jiti_world_analyze(txn_state(w->W), &lim, why, sizeof why) == JITI_OK)
    why[0] = 0;
  else if (!why[0])
    snprintf(why, sizeof why, "a definition cannot be analysed");
  json_t *r = event_msg(WIRE_ANALYZED);
  json_object_set_new(r, "message", json_string(why));
  send_or_die(w, r, NULL, 0);
}

/* ------------------------------------------------------------- pauses */

static json_t *pause_json(Worker *w, const txn_View *v) {
  json_t *rs = json_array();
  for (int i = 0; i < v->nrestarts; i++)
    json_array_append_new(rs, json_pack("{s:s, s:i, s:s, s:s, s:s}", "id", v->restarts[i].id,
                                        "level", v->restarts[i].level,
                                        "name", v->restarts[i].name ? v->restarts[i].name : "",
                                        "report", v->restarts[i].report ? v->restarts[i].report : "",
                                        "lambda_list", v->restarts[i].lambda_list ? v->restarts[i].lambda_list : ""));
  json_t *p = json_pack("{s:I, s:i, s:i, s:s, s:s, s:s, s:o, s:i, s:i}",
                        "generation", (json_int_t)vis(w, v->generation), "pause", v->pause, "level", v->level,
                        "condition_type", v->condition_type ? v->condition_type : "",
                        "report", v->report ? v->report : "",
                        "backtrace", v->backtrace ? v->backtrace : "", "restarts", rs,
                        "steps_used", v->steps_used, "step_budget", v->step_budget);
  json_object_set_new(p, "frames", txn_frames_value(v->nframes, v->frames));
  if (v->refusal != TXN_ACCEPTED) {
    json_object_set_new(p, "refusal", json_string(txn_reason_name(v->refusal)));
    json_object_set_new(p, "error", json_string(v->error ? v->error : ""));
  }
  if (v->last_value) json_object_set_new(p, "last_value", json_string(v->last_value));
  if (w->outlen) json_object_set_new(p, "output", json_stringn(w->out, w->outlen));
  return p;
}

static void interrupt_settle(Worker *w);

/* A call asked to park failed: a copy of the world at the failure
** (shadow.c). */
static int park_failure(void *ud) {
  Worker *w = ud;
  return shadow_park(w->W, w->pg, w->fd, w->gate);
}

static int cmd_fn(void *ud, const txn_View *view, txn_Command *cmd) {
  Worker *w = ud;
  interrupt_settle(w);
  json_t *pv = pause_json(w, view);
  w->outlen = 0;
  json_t *pm = event_msg(WIRE_PAUSED);
  json_object_set_new(pm, "pause", pv);
  send_or_die(w, pm, NULL, 0);
  for (;;) {
    json_t *m = recv_or_die(w, NULL, NULL);
    if (answer_query(w, m)) {
      json_decref(m);
      continue;
    }
    if (wire_op_of(m) != WIRE_COMMAND) {  /* anything else ends the pause */
      json_decref(m);
      return 1;
    }
    int type = txn_cmd_parse(json_string_value(json_object_get(m, "type")));
    free(w->c_source); free(w->c_restart); free(w->c_args); free(w->c_package);
    w->c_source = w->c_restart = w->c_args = w->c_package = NULL;
    const char *s = json_string_value(json_object_get(m, "source"));
    const char *pk = json_string_value(json_object_get(m, "package"));
    w->c_package = pk ? strdup(pk) : NULL;
    const char *r = json_string_value(json_object_get(m, "restart_id"));
    const char *a = json_string_value(json_object_get(m, "arguments"));
    w->c_source = s ? strdup(s) : NULL;
    w->c_restart = r ? strdup(r) : NULL;
    w->c_args = a ? strdup(a) : NULL;
    memset(cmd, 0, sizeof *cmd);
    cmd->generation = local_gen(w, json_object_get(m, "generation"));
    if (type < 0) {
      json_decref(m);
      return 1;
    }
    cmd->type = (txn_CmdType)type;
    cmd->source = w->c_source ? w->c_source : "";
    cmd->restart_id = w->c_restart ? w->c_restart : "";
    cmd->args = w->c_args;
    cmd->package = w->c_package;
    /* a repair is placed where it was written, as the request was */
    json_t *origin = json_object_get(m, "origin");
    if (json_is_object(origin)) {
      const char *file = json_string_value(json_object_get(origin, "file"));
      jiti_set_source_origin(txn_state(w->W), file, file ? JITI_SOURCE_FILE : 0,
                             (long)json_integer_value(json_object_get(origin, "line")),
                             (long)json_integer_value(json_object_get(origin, "column")));
    }
    json_t *fr = json_object_get(m, "frame");
    if (json_is_integer(fr)) {
      json_int_t f = json_integer_value(fr);
      cmd->in_frame = 1;
      cmd->frame = f < 0 || f > 1000000 ? -1 : (int)f;
    } else {
      cmd->frame = -1;
    }
    json_decref(m);
    return 0;
  }
}

/* ------------------------------------------------------------ attempts */

/* The outcome frame.  Only what the kernel reads: the message of a failure,
** goals when there are some, the changes' hashes for a preview (the kernel
** compares them with CURRENT's; a publish learns what changed from the
** store itself) — every member costs a parse per call in the kernel.  It
** is sent after every call, so its JSON is written straight from the
** outcome (jtext_writer, into a buffer the worker keeps) rather than built
** as jansson values: the same text, without a value made and freed per
** member. */
static void put_str(jtext_writer *j, const char *key, const char *s) {
  jtext_key(j, key);
  jtext_string(j, s ? s : "", s ? strlen(s) : 0);
}

/* {condition_type, report, restarts: [{name, report, lambda_list}], backtrace, frames,
** reads, reads_more} */
static void put_diagnosis(jtext_writer *j, const txn_Diagnosis *g) {
  jtext_key(j, "diagnosis");
  jtext_begin(j, '{');
  put_str(j, "condition_type", g->condition_type);
  put_str(j, "report", g->report);
  jtext_key(j, "restarts");
  jtext_begin(j, '[');
  for (int i = 0; i < g->nrestarts; i++) {
    jtext_begin(j, '{');
    put_str(j, "name", g->restarts[i].name);
    put_str(j, "report", g->restarts[i].report);
    put_str(j, "lambda_list", g->restarts[i].lambda_list);
    jtext_end(j, '}');
  }
  jtext_end(j, ']');
  put_str(j, "backtrace", g->backtrace);
  if (g->frames) jtext_key(j, "frames"), jtext_json(j, g->frames);
  if (g->reads) jtext_key(j, "reads"), jtext_json(j, g->reads);
  if (g->reads_more) jtext_key(j, "reads_more"), jtext_int(j, g->reads_more);
  jtext_end(j, '}');
}

static void send_outcome(Worker *w, txn_Outcome *o, int committed, int hashes) {
  size_t total = 0;
  for (int i = 0; i < o->nchanges; i++) total += o->changes[i].removed ? 0 : o->changes[i].len;
  unsigned char *blob = NULL;
  int owned = 0;
  if (o->nchanges == 1 && !o->changes[0].removed) {
    blob = o->changes[0].bytes;  /* one change: its bytes are the blob */
  } else if (total) {
    if ((blob = malloc(total))) {
      owned = 1;
      size_t at = 0;
      for (int i = 0; i < o->nchanges; i++)
        if (!o->changes[i].removed && o->changes[i].len) {
          memcpy(blob + at, o->changes[i].bytes, o->changes[i].len);
          at += o->changes[i].len;
        }
    }
  }
  if (total && !blob) {  /* cannot report: restore instead */
    txn_Outcome r;
    txn_restore(w->W, &r);
    free(r.message);
    r.message = strdup("out of memory reporting the changes");
    send_outcome(w, &r, 0, 0);
    txn_outcome_free(&r);
    return;
  }
  jtext_writer *j = &w->text;
  jtext_reset(j);
  jtext_begin(j, '{');
  jtext_key(j, "event");
  jtext_string(j, wire_event_name(WIRE_OUTCOME), strlen(wire_event_name(WIRE_OUTCOME)));
  const char *reason = txn_reason_name(o->reason), *status = txn_status_name(txn_status(w->W));
  jtext_key(j, "reason");
  jtext_string(j, reason, strlen(reason));
  jtext_key(j, "generation");
  jtext_int(j, (json_int_t)vis(w, o->generation));
  jtext_key(j, "status");
  jtext_string(j, status, strlen(status));
  jtext_key(j, "changes");
  jtext_begin(j, '[');
  for (int i = 0; i < o->nchanges; i++) {
    txn_Change *c = &o->changes[i];
    const char *kind = jiti_entry_kind_name(c->kind), *name = c->name ? c->name : "";
    jtext_begin(j, '{');
    jtext_key(j, "kind");
    jtext_string(j, kind, strlen(kind));
    jtext_key(j, "name");
    jtext_string(j, name, strlen(name));
    jtext_key(j, "removed");
    jtext_bool(j, c->removed);
    jtext_key(j, "len");
    jtext_int(j, (json_int_t)(c->removed ? 0 : c->len));
    if (hashes) {
      jtext_key(j, "hash");
      jtext_string(j, c->hash, strlen(c->hash));
    }
    jtext_end(j, '}');
  }
  jtext_end(j, ']');
  if (o->reason != TXN_ACCEPTED) {
    jtext_key(j, "message");
    jtext_string(j, o->message, o->message ? strlen(o->message) : 0);
  }
  if (o->diagnosis) put_diagnosis(j, o->diagnosis);
  if (o->value) {
    jtext_key(j, "value");
    jtext_string(j, o->value, strlen(o->value));
  }
  if (o->values) {  /* not exactly one value */
    jtext_key(j, "values");
    jtext_begin(j, '[');
    for (int i = 0; i < o->nvalues; i++) jtext_string(j, o->values[i], o->values[i] ? strlen(o->values[i]) : 0);
    jtext_end(j, ']');
  }
  if (w->outlen) {
    jtext_key(j, "output");
    jtext_string(j, w->out, w->outlen);
  }
  if (o->ngoals) {
    jtext_key(j, "goals");
    jtext_begin(j, '[');
    for (int i = 0; i < o->ngoals; i++) {
      jtext_begin(j, '{');
      jtext_key(j, "source");
      jtext_string(j, o->goals[i].source, o->goals[i].source ? strlen(o->goals[i].source) : 0);
      jtext_key(j, "pass");
      jtext_bool(j, o->goals[i].pass);
      jtext_key(j, "message");
      jtext_string(j, o->goals[i].message, o->goals[i].message ? strlen(o->goals[i].message) : 0);
      jtext_end(j, '}');
    }
    jtext_end(j, ']');
  }
  if (committed) {
    jtext_key(j, "committed");
    jtext_bool(j, 1);
  }
  if (o->noted_function) {  /* the kernel asked: the call's function and argument classes */
    jtext_key(j, "noted");
    jtext_begin(j, '{');
    put_str(j, "function", o->noted_function);
    put_str(j, "signature", o->noted_signature);
    jtext_end(j, '}');
  }
  if (o->parked) jtext_key(j, "parked"), jtext_int(j, o->parked);   /* the kernel asked to park it */
  jtext_end(j, '}');
  /* a batch's outcomes go out together, after its last call (outbox.c);
  ** counted first, where the kernel finds the count should the worker die
  ** with them */
  int rc = -1;
  if (!j->failed) {
    if (w->pg) __atomic_store_n(&w->pg->outcomes, ++w->made, __ATOMIC_RELEASE);
    rc = outbox_put(w->ob, j->buf, j->len, blob, total, w->more && w->pg);
  }
  if (owned) free(blob);
  if (j->cap > ((size_t)1 << 20)) {  /* a big one: give the memory back */
    free(j->buf);
    memset(j, 0, sizeof *j);
  }
  if (rc) _exit(0);  /* the kernel is gone (or the worker is out of memory) */
}

static void decisions(Worker *w);
static int forged_decision(Worker *w);   /* test builds only: see test-forge-frame */

/* Limits from a frame's "limits" member {fuel, depth, heap, output} (each
** optional: missing ones are the world's); 0 when absent. */
static int limits_of(Worker *w, json_t *o, jiti_Limits *lim) {
  if (!json_is_object(o)) return 0;
  txn_get_limits(w->W, lim);
  json_t *v;
  if (json_is_integer(v = json_object_get(o, "fuel"))) lim->fuel = (uint64_t)json_integer_value(v);
  if (json_is_integer(v = json_object_get(o, "depth"))) lim->depth = (uint32_t)json_integer_value(v);
  if (json_is_integer(v = json_object_get(o, "heap"))) lim->heap = (size_t)json_integer_value(v);
  if (json_is_integer(v = json_object_get(o, "output"))) lim->output = (size_t)json_integer_value(v);
  return 1;
}

/* Cancelling or interrupting the running call (wire.h, the progress
** page's cancel_at, interrupt_at): the kernel's SIGUSR1 reaches the world's
** thread alone (the others block it), and the handler only stores
** (jiti_cancel_async, jiti_interrupt_async; inside a long GMP operation
** those leave it: kernel/numstop.c).  What it needs is the serving worker,
** which a handler can reach only through a static.  interrupt_ok: the
** running attempt may pause; interrupt_armed: the last interrupt_seq acted
** on (a pause settles the one it answers: interrupt_settle). */
static Worker *volatile cancel_worker;
static volatile sig_atomic_t cancel_running, cancel_done, interrupt_ok;
static volatile uint64_t interrupt_armed;

static void on_cancel(int sig) {
  (void)sig;
  Worker *w = cancel_worker;
  if (!w || !w->pg || !cancel_running) return;
  uint64_t at = __atomic_load_n(&w->pg->cancel_at, __ATOMIC_ACQUIRE);
  if (at != 0 && at == w->made + 1) {
    cancel_done = 1;
    jiti_cancel_async(txn_state(w->W));
    return;
  }
  at = __atomic_load_n(&w->pg->interrupt_at, __ATOMIC_ACQUIRE);
  uint64_t seq = __atomic_load_n(&w->pg->interrupt_seq, __ATOMIC_ACQUIRE);
  if (at == 0 || at != w->made + 1 || !interrupt_ok) return;
  if (seq != interrupt_armed) {
    interrupt_armed = seq;
    jiti_interrupt_async(txn_state(w->W));
  } else if (jiti_interrupt_pending(txn_state(w->W))) {
    jiti_interrupt_async(txn_state(w->W));   /* its trap overwritten: set again */
  }
}

/* The transaction paused: an interrupt asked for before is answered (it
** paused, or had nothing to interrupt); one still pending is dropped, and a
** late signal for it ignored.  The signal is blocked meanwhile. */
static void interrupt_settle(Worker *w) {
  if (!w->pg) return;
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, WORKER_CANCEL_SIGNAL);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  interrupt_armed = __atomic_load_n(&w->pg->interrupt_seq, __ATOMIC_ACQUIRE);
  jiti_interrupt_clear(txn_state(w->W));
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Before the sandbox (which forbids rt_sigaction) and before the other
** threads start, so that they inherit the blocked mask. */
static void cancel_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_cancel;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(WORKER_CANCEL_SIGNAL, &sa, NULL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WORKER_CANCEL_SIGNAL);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The world's thread takes no SIGCHLD: its shadows are reaped on the
** other thread (shadow.c), and a call's sleep is not cut short. */
static void shadow_signals(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The report socket the kernel handed over (the live worker's), or -1. */
static int report_socket(void) {
  int type = 0;
  socklen_t n = sizeof type;
  if (getsockopt(WORKER_REPORT_FD, SOL_SOCKET, SO_TYPE, &type, &n) != 0 || type != SOCK_SEQPACKET) return -1;
  return WORKER_REPORT_FD;
}

static void cancel_accept(int on) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, WORKER_CANCEL_SIGNAL);
  pthread_sigmask(on ? SIG_UNBLOCK : SIG_BLOCK, &set, NULL);
}

static void do_attempt(Worker *w, json_t *req) {
  const char *source = json_string_value(json_object_get(req, "source"));
  int k = txn_kind_parse(json_string_value(json_object_get(req, "kind")));
  txn_Kind kind = k < 0 ? TXN_ACTION : (txn_Kind)k;
  jiti_Limits lim;
  int limited = limits_of(w, json_object_get(req, "limits"), &lim);
  json_t *g = json_object_get(req, "generation");
  uint64_t gen = g ? local_gen(w, g) : txn_generation(w->W);
  txn_Outcome o;
  int committed = 0;
  w->outlen = 0;
  if (gen != txn_generation(w->W)) {
    memset(&o, 0, sizeof o);
    o.reason = TXN_STALE;
    o.generation = txn_generation(w->W);
    char msg[160];
    snprintf(msg, sizeof msg, "stale generation %" PRIu64 " (current %" PRIu64 ")",
             json_is_integer(g) ? (uint64_t)json_integer_value(g) : 0, vis(w, txn_generation(w->W)));
    o.message = strdup(msg);
  } else {
    int pausable = json_is_true(json_object_get(req, "pausable"));
    txn_Request rq = {kind, gen, source ? source : "", json_is_true(json_object_get(req, "program")),
                      limited ? &lim : NULL, json_string_value(json_object_get(req, "package")),
                      json_is_true(json_object_get(req, "listening")), 0,
                      json_is_true(json_object_get(req, "note")), NULL, 0, 0, 0,
                      json_is_true(json_object_get(req, "reads")), json_is_true(json_object_get(req, "park"))};
    json_t *origin = json_object_get(req, "origin");
    rq.origin_file = json_string_value(json_object_get(origin, "file"));
    rq.origin_line = (long)json_integer_value(json_object_get(origin, "line"));
    rq.origin_column = (long)json_integer_value(json_object_get(origin, "column"));
    rq.canonical = json_is_true(json_object_get(req, "canonical"));
    cancel_done = 0;
    jiti_cancel_clear(txn_state(w->W));
    jiti_interrupt_clear(txn_state(w->W));
    interrupt_ok = pausable;
    cancel_running = 1;
    txn_run(w->W, &rq, pausable ? cmd_fn : NULL, w, &o);
    if (shadow_parked()) shadow_parked_run(w->W);   /* the parked copy: the failed call has unwound */
    cancel_running = 0;
    interrupt_ok = 0;
    jiti_interrupt_clear(txn_state(w->W));   /* one that came too late */
    if (cancel_done && o.reason != TXN_ACCEPTED) {
      o.reason = TXN_CANCELLED;  /* restored as an abort; the kernel asked */
      txn_diagnosis_free(o.diagnosis);   /* the cancel, not an error, ended it */
      o.diagnosis = NULL;
      free(o.message);
      o.message = strdup("the kernel was asked to cancel the running call "
                         "(jiti cancel, or its client disconnected); the world is restored");
    }
    cancel_done = 0;
    /* Nothing to publish: keep it at once and spare the kernel a round
    ** trip (the outcome then reports committed; on top of attempts that
    ** await their commit it stands or falls with them). */
    if (o.reason == TXN_ACCEPTED && o.nchanges == 0 && txn_status(w->W) == TXN_ST_AWAITING) {
      txn_keep_unchanged(w->W);
      o.generation = txn_generation(w->W);
      committed = 1;
    }
  }
  send_outcome(w, &o, committed, kind == TXN_PREVIEW);
  txn_outcome_free(&o);
  decisions(w);
}

/* An operator's invariant-add / invariant-remove: a transaction like an
** attempt (txn_invariant_add checks that the new set holds). */
static void do_invariant(Worker *w, json_t *req) {
  const char *action = json_string_value(json_object_get(req, "action"));
  const char *name = json_string_value(json_object_get(req, "name"));
  const char *source = json_string_value(json_object_get(req, "source"));
  uint64_t gen = local_gen(w, json_object_get(req, "generation"));
  txn_Outcome o;
  w->outlen = 0;
  if (action && !strcmp(action, "add"))
    txn_invariant_add(w->W, gen, name ? name : "", source ? source : "", &o);
  else
    txn_invariant_remove(w->W, gen, name ? name : "", &o);
  send_outcome(w, &o, 0, 0);
  txn_outcome_free(&o);
  decisions(w);
}

/* A commit (of the count oldest awaiting attempts; "unchanged": those of
** them whose entries the store had already) or a restore (of all of
** them), answered with the generation after it. */
static void decide(Worker *w, json_t *m) {
  int commit = wire_op_of(m) == WIRE_COMMIT;
  json_t *rev = json_object_get(m, "revision");
  if (commit && json_is_integer(rev)) txn_set_revision(w->W, (uint64_t)json_integer_value(rev));
  if (commit) {
    json_t *cnt = json_object_get(m, "count"), *unch = json_object_get(m, "unchanged");
    json_int_t n = json_is_integer(cnt) ? json_integer_value(cnt) : 1;
    for (json_int_t i = 0; i < n; i++) {
      int same = i == 0 && json_is_false(json_object_get(m, "changed"));
      size_t k;
      json_t *u;
      json_array_foreach(unch, k, u) same |= json_integer_value(u) == i;
      if (same) txn_commit_unchanged(w->W);  /* the store had every entry already */
      else txn_commit(w->W);
    }
  } else {
    txn_Outcome r;
    txn_restore(w->W, &r);
    txn_outcome_free(&r);
  }
  if (forged_decision(w)) return;
  const char *ev = wire_event_name(commit ? WIRE_COMMITTED : WIRE_RESTORED);
  const char *status = txn_status_name(txn_status(w->W));
  jtext_writer *j = &w->text;
  jtext_reset(j);
  jtext_begin(j, '{');
  jtext_key(j, "event");
  jtext_string(j, ev, strlen(ev));
  jtext_key(j, "generation");
  jtext_int(j, (json_int_t)vis(w, txn_generation(w->W)));
  jtext_key(j, "status");
  jtext_string(j, status, strlen(status));
  jtext_end(j, '}');
  if (j->failed || outbox_put(w->ob, j->buf, j->len, NULL, 0, 0)) _exit(0);  /* the kernel is gone */
}

/* Take the decisions the kernel has sent: those already read, or — while
** as many attempts await their commit as may (txn_set_stacking; one
** without group commit) — waiting for them.  Other requests read meanwhile
** run after the current one, in order (the inbox).  Between the calls of a
** batch they wait unless the stack is full: the batch's outcomes have not
** gone out yet (the outbox), so no decision on them can have come.  Nor is
** the socket looked at when the stack has room: the serving loop reads it
** next anyway, and takes a decision it finds there (a read that finds
** nothing would cost a system call per batch). */
static void decisions(Worker *w) {
  /* nothing awaits its commit: no decision can be on its way */
  if (txn_awaiting(w->W) == 0) return;
  for (;;) {
    int full = txn_status(w->W) == TXN_ST_AWAITING && txn_awaiting(w->W) >= w->stack;
    if (!full && w->more) return;
    json_t *m = NULL;
    char err[256];
    if (full) {
      m = recv_or_die(w, NULL, NULL);
    } else {
      int got = wire_next(w->rd, &m, NULL, NULL, err, sizeof err);
      if (got == 0) return;
      if (got < 0) read_failed(err);
    }
    if (wire_op_of(m) == WIRE_COMMIT || wire_op_of(m) == WIRE_RESTORE) decide(w, m);
    else json_array_append_new(w->inbox, json_incref(m));
    json_decref(m);
  }
}

/* ------------------------------------------------------------ startup */

static int import_frame(Worker *w, json_t *m, const unsigned char *blob, size_t bloblen,
                        char *err, size_t errlen) {
  json_t *es = json_object_get(m, "entries");
  size_t at = 0, i;
  json_t *e;
  json_array_foreach(es, i, e) {
    const char *kind = json_string_value(json_object_get(e, "kind"));
    const char *name = json_string_value(json_object_get(e, "name"));
    json_int_t len = json_integer_value(json_object_get(e, "len"));
    int k = kind ? jiti_entry_kind_parse(kind) : -1;
    if (k < 0 || !name || len < 0 || (size_t)len > bloblen - at) {
      snprintf(err, errlen, "malformed import entry %zu", i);
      return -1;
    }
    char why[512];
    if (jiti_import_entry(txn_state(w->W), (jiti_EntryKind)k, name, blob + at, (size_t)len, why,
                          sizeof why) != JITI_OK) {
      /* the rest imports: the world is served faulted, for queries and the
      ** operator's way out (a stored entry that cannot import, however it
      ** got there, must not keep the kernel down) */
      char msg[700];
      snprintf(msg, sizeof msg, "cannot import %s %s: %s", kind, name, why);
      txn_set_import_fault(w->W, msg);
    } else {
      txn_note_entry(w->W, (jiti_EntryKind)k, name, blob + at, (size_t)len);
    }
    at += (size_t)len;
  }
  return 0;
}

#ifdef JITI_TEST_HOOKS
/* Compiled only into the test binary `jiti-testhooks` (never into `jiti`):
** (test-forbidden-syscall N) makes a system call the sandbox forbids —
** 0 opens a file, 1 creates a socket, 2 forks (the fork system call), 3
** maps stderr's file shared, 4 runs a program (execve of /bin/true), 5
** clones with exactly the flags of glibc's fork() (the fork gate's: the
** kernel refuses one it did not ask for), 6 clones with other flags — so
** the tests can check that seccomp kills the worker (or a shadow) and the
** kernel carries on.  A child that came to be anyway exits at once. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

static jiti_Value test_forbidden_syscall(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud; (void)argc;
  int64_t which = 0;
  if (!jiti_tointeger(S, argv[0], &which) || which < 0 || which > 6)
    jiti_error(S, "test-forbidden-syscall: N must be 0 to 6");
  static char *const args[] = {"/bin/true", NULL};
  long r = which == 0 ? syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY)
         : which == 1 ? syscall(SYS_socket, AF_INET, SOCK_STREAM, 0)
         : which == 2 ? syscall(SYS_fork)
         : which == 3 ? (long)syscall(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, 2, 0)
         : which == 4 ? syscall(SYS_execve, args[0], args, args + 1)
         : which == 5 ? syscall(SYS_clone, (unsigned long)WORKER_FORK_FLAGS, 0, NULL, NULL, 0)
         : syscall(SYS_clone, (unsigned long)(CLONE_FILES | SIGCHLD), 0, NULL, NULL, 0);
  if (r == 0 && (which == 2 || which >= 5)) _exit(0);   /* a child: never a second worker */
  return jiti_integer(S, r);  /* reached only without the sandbox (or a refused clone: -1) */
}

/* (test-forge-frame JSON &optional BLOB-HEX INSTEAD-OF-DECISION) plays a
** compromised worker (a granted library, or a bug, can make it write
** anything to its socket): JSON is written as a frame of its own, its blob
** given in hex, straight to the kernel's socket, ahead of the call's own
** outcome — or, with INSTEAD-OF-DECISION true, in place of the worker's
** answer to the kernel's next commit or restore (the decision is still
** taken).  The tests check that the kernel refuses every frame it did not
** expect, kills the worker and publishes nothing of it. */
static char *forged_json;             /* the frame that answers the next decision */
static unsigned char *forged_blob;
static size_t forged_len, forged_bloblen;

static unsigned char *unhex(jiti_State *S, jiti_Value v, size_t *n) {
  long len = jiti_tostring(S, v, NULL, 0);
  if (len < 0 || len % 2) jiti_error(S, "test-forge-frame: BLOB-HEX must be a string of hex digits");
  char *hex = malloc((size_t)len + 1);
  unsigned char *b = malloc((size_t)len / 2 + 1);
  jiti_tostring(S, v, hex, (size_t)len + 1);
  for (long i = 0; i < len / 2; i++) {
    unsigned x;
    if (sscanf(hex + 2 * i, "%2x", &x) != 1) x = 0;
    b[i] = (unsigned char)x;
  }
  free(hex);
  *n = (size_t)len / 2;
  return b;
}

static jiti_Value test_forge_frame(jiti_State *S, void *ud, int argc, jiti_Value *argv) {
  (void)ud;
  long n = jiti_tostring(S, argv[0], NULL, 0);
  if (n <= 0) jiti_error(S, "test-forge-frame: JSON must be a non-empty string");
  char *json = malloc((size_t)n + 1);
  jiti_tostring(S, argv[0], json, (size_t)n + 1);
  size_t bl = 0;
  unsigned char *blob = argc > 1 && !jiti_isnil(argv[1]) ? unhex(S, argv[1], &bl) : NULL;
  if (argc > 2 && !jiti_isnil(argv[2])) {
    free(forged_json);
    free(forged_blob);
    forged_json = json;
    forged_len = (size_t)n;
    forged_blob = blob;
    forged_bloblen = bl;
    return jiti_integer(S, 0);
  }
  int rc = wire_send_text(WORKER_FD, json, (size_t)n, blob, bl);
  free(json);
  free(blob);
  return jiti_integer(S, rc);
}

/* The frame test-forge-frame left to answer this decision, sent in place
** of the real answer: 1 when there was one. */
static int forged_decision(Worker *w) {
  if (!forged_json) return 0;
  flush_outbox(w);
  wire_send_text(w->fd, forged_json, forged_len, forged_blob, forged_bloblen);
  free(forged_json);
  free(forged_blob);
  forged_json = NULL;
  forged_blob = NULL;
  return 1;
}

/* JITI_TEST_FORGE_READY=JSON in the environment: the worker's ready frame. */
static int forged_ready(Worker *w) {
  const char *r = getenv("JITI_TEST_FORGE_READY");
  if (!r || !*r) return 0;
  flush_outbox(w);
  wire_send_text(w->fd, r, strlen(r), NULL, 0);
  return 1;
}

static void register_test_hooks(jiti_State *S) {
  jiti_register(S, "test-forbidden-syscall", test_forbidden_syscall, NULL, 1, 1,
                "Test builds only: make a forbidden system call.");
  jiti_register(S, "test-forge-frame", test_forge_frame, NULL, 1, 3,
                "Test builds only: write a frame the kernel did not ask for.");
}
#else
static void register_test_hooks(jiti_State *S) { (void)S; }
static int forged_decision(Worker *w) { (void)w; return 0; }
static int forged_ready(Worker *w) { (void)w; return 0; }
#endif

#ifdef __SANITIZE_ADDRESS__
#define WORKER_STACK ((size_t)48 << 20)
#else
#define WORKER_STACK ((size_t)256 << 20)
#endif

/* Grant the world each library of opt before the sandbox comes down (it
** forbids the executable mappings loading one makes).  A library that
** does not open is no reason to stop: the world is imported all the same,
** its declarations unavailable, and "ready" says why (failed). */
static json_t *grant_foreign(jiti_State *S, const worker_Options *opt) {
  json_t *failed = json_array();
  for (size_t i = 0; opt && i < opt->nforeign; i++) {
    char why[1024];
    if (jiti_foreign_grant(S, opt->foreign[i], why, sizeof why) != JITI_OK)
      json_array_append_new(failed, json_pack("{s:s, s:s}", "library", opt->foreign[i], "message", why));
  }
  return failed;
}

static int serve(int fd, const worker_Options *opt, Outbox *ob, worker_Progress *pg) {
  wire_reader rd = {0};
  Worker w = {.fd = fd, .rd = &rd, .inbox = json_array(), .stack = 1, .ob = ob, .pg = pg};
  char err[1024] = "";
  w.W = txn_open(NULL);
  if (!w.W) {
    send_or_die(&w, json_pack("{s:s, s:s}", "event", wire_event_name(WIRE_FATAL), "message",
                              "cannot open a world (out of memory)"), NULL, 0);
    return 1;
  }
  jiti_set_cstack_size(txn_state(w.W), WORKER_STACK);
  cancel_worker = &w;
  cancel_accept(1);
  shadow_signals();
  jiti_set_output(txn_state(w.W), capture, &w);
  txn_set_park(w.W, park_failure, &w);
  register_test_hooks(txn_state(w.W));
  /* Library initialisation that opens files, done before the sandbox:
  ** jansson's hash seed (/dev/urandom), OpenSSL's configuration (the
  ** SHA-256 of entry hashes). */
  json_object_seed(0);
  char warm[65];
  jiti_entry_hash(JITI_ENTRY_DATA, "warm-up", (const unsigned char *)"", 0, warm);
  json_t *grant_failed = grant_foreign(txn_state(w.W), opt);
  if (getenv("JITI_WORKER_NO_SANDBOX") == NULL || strcmp(getenv("JITI_WORKER_NO_SANDBOX"), "1")) {
    int park[2];
    shadow_park_fds(park);
    if (worker_sandbox(fd, report_socket(), park, &w.gate, err, sizeof err)) {
      send_or_die(&w, json_pack("{s:s, s:s}", "event", wire_event_name(WIRE_FATAL), "message", err), NULL, 0);
      return 1;
    }
  }
  /* init, imports, start */
  for (;;) {
    unsigned char *blob;
    size_t bl;
    json_t *m = recv_or_die(&w, &blob, &bl);
    int op = wire_op_of(m), done = 0;
    if (op == WIRE_INIT) {
      json_t *b = json_object_get(m, "base");
      w.base = json_is_integer(b) && json_integer_value(b) > 0 ? (uint64_t)json_integer_value(b) : 0;
      json_t *r = json_object_get(m, "revision");
      txn_set_revision(w.W, json_is_integer(r) ? (uint64_t)json_integer_value(r) : 0);
      jiti_Limits lim;
      if (limits_of(&w, json_object_get(m, "limits"), &lim)) txn_set_limits(w.W, &lim);
      json_t *em = json_object_get(m, "entry_max");
      if (json_is_integer(em) && json_integer_value(em) > 0) txn_set_entry_max(w.W, (size_t)json_integer_value(em));
      json_t *st = json_object_get(m, "stack");
      if (json_is_integer(st) && json_integer_value(st) > 1 && json_integer_value(st) <= 100000) {
        w.stack = (int)json_integer_value(st);
        txn_set_stacking(w.W, w.stack);
      }
    } else if (op == WIRE_IMPORT) {
      if (import_frame(&w, m, blob, bl, err, sizeof err)) {
        send_or_die(&w, json_pack("{s:s, s:s}", "event", wire_event_name(WIRE_FATAL), "message", err), NULL, 0);
        free(blob);
        json_decref(m);
        return 1;
      }
    } else if (op == WIRE_START) {
      char why[512];
      if (jiti_import_done(txn_state(w.W), why, sizeof why) != JITI_OK) {
        snprintf(err, sizeof err, "cannot import: %s", why);
        txn_set_import_fault(w.W, err);
      }
      done = 1;
    }
    free(blob);
    json_decref(m);
    if (done) break;
  }
  char msg[1024] = "";
  int bad = txn_check_baseline(w.W, msg, sizeof msg);
  json_t *foreign = txn_foreign_value(w.W);
  json_object_set_new(foreign, "failed", grant_failed);
  if (!forged_ready(&w)) send_or_die(&w, json_pack("{s:s, s:I, s:s, s:s, s:o}", "event", wire_event_name(WIRE_READY),
                            "generation", (json_int_t)vis(&w, txn_generation(w.W)),
                            "status", txn_status_name(txn_status(w.W)), "message", bad ? msg : "",
                            "foreign", foreign),
              NULL, 0);
  for (;;) {
    json_t *m;
    shadow_reap();
    decisions(&w);
    if (json_array_size(w.inbox)) {
      m = json_incref(json_array_get(w.inbox, 0));
      json_array_remove(w.inbox, 0);
    } else {
      m = recv_or_die(&w, NULL, NULL);
    }
    int op = wire_op_of(m);
    if (op == WIRE_EXIT) {
      json_decref(m);
      break;
    }
    if (answer_query(&w, m)) {
      /* answered */
    } else if (op == WIRE_ATTEMPT) {
      do_attempt(&w, m);
    } else if (op == WIRE_ANALYZE) {
      analyze(&w);
    } else if (op == WIRE_COMMIT || op == WIRE_RESTORE) {
      decide(&w, m);  /* (taken from the inbox: it came behind a request) */
    } else if (op == WIRE_ATTEMPTS) {
      /* application calls, run in order as one attempt each: their
      ** outcomes go out together after the last (or, for a call that runs
      ** long, before it: outbox.c); the kernel's decisions are taken after
      ** the batch, or waited for when as many await their commit as may */
      json_t *items = json_object_get(m, "items");
      size_t n = json_array_size(items);
      for (size_t i = 0; i < n; i++) {
        w.more = i + 1 < n;
        do_attempt(&w, json_array_get(items, i));
      }
      w.more = 0;
      flush_outbox(&w);
    } else if (op == WIRE_INVARIANT) {
      do_invariant(&w, m);
    } else if (op == WIRE_SHADOW) {
      send_or_die(&w, shadow_fork(w.W, m, w.pg, w.fd, w.gate), NULL, 0);
    } else {
      send_or_die(&w, json_pack("{s:s, s:s}", "event", wire_event_name(WIRE_ERROR), "message", "unknown request"),
                  NULL, 0);
    }
    json_decref(m);
  }
  cancel_worker = NULL;
  wire_reader_reset(&rd);
  json_decref(w.inbox);
  free(w.text.buf);
  return 0;
}

typedef struct {
  int fd, status;
  const worker_Options *opt;
  Outbox ob;
  worker_Progress *pg;
} Job;

static void *job(void *p) {
  Job *j = p;
  j->status = serve(j->fd, j->opt, &j->ob, j->pg);
  outbox_stop(&j->ob);
  return NULL;
}

/* The world runs on a thread of its own (its stack is large); this one
** sends the outcomes a long call would hold back (outbox.c). */
int worker_main(int fd, const worker_Options *opt) {
  signal(SIGPIPE, SIG_IGN);
  cancel_install();
  shadow_prepare();   /* before the sandbox and the other threads */
  Job j = {.fd = fd, .status = 1, .opt = opt, .pg = worker_progress_map()};
  int flusher = outbox_init(&j.ob, fd) == 0;
  pthread_attr_t attr;
  pthread_t th;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, WORKER_STACK) != 0 ||
      pthread_create(&th, &attr, job, &j) != 0) {
    outbox_destroy(&j.ob);   /* no second thread: outcomes go out at once */
    j.status = serve(fd, opt, &j.ob, j.pg);
  } else {
    if (flusher && outbox_run(&j.ob)) _exit(0);  /* the kernel is gone */
    pthread_join(th, NULL);
  }
  pthread_attr_destroy(&attr);
  /* no atexit handlers, no leak checker (it would need ptrace) */
  _exit(j.status);
}
