/*
** txn.c — an offline transaction on a store: recover CURRENT into a fresh
** world, open a checkpoint, let the command change the world, check the
** invariants, publish the changed entries as one revision, and record the
** attempt as events ("started" before anything runs, one outcome after).
** The kernel daemon will do the same in-process; until it exists the
** commands (apply, invariant, rollback) use this.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "offline.h"

int otxn_open(otxn *t, const char *cmd, const char *dir) {
  memset(t, 0, sizeof *t);
  t->cmd = cmd;
  t->limits = (jiti_Limits){100000000u, 10000u, (size_t)512 << 20, 0};
  t->s = storeio_open(cmd, dir, 1);
  if (!t->s) return EXIT_FAIL;
  if (store_current(t->s, &t->parent) != STORE_OK) {
    fprintf(stderr, "jiti %s: %s\n", cmd, store_errmsg(t->s));
    return EXIT_FAIL;
  }
  if (t->parent == 0) {
    fprintf(stderr, "jiti %s: the store at %s has no revisions yet (run 'jiti init --store %s')\n",
            cmd, store_path(t->s), store_path(t->s));
    return EXIT_FAIL;
  }
  /* the store's high-water mark: the revision gets the next generation */
  if (store_generation(t->s, &t->generation) != STORE_OK) {
    fprintf(stderr, "jiti %s: %s\n", cmd, store_errmsg(t->s));
    return EXIT_FAIL;
  }
  return EXIT_OK;
}

void otxn_outcome(otxn *t, const char *event, const char *outcome, json_t *extra) {
  if (t->outcome_written || !t->attempt) { json_decref(extra); return; }
  json_t *o = json_pack("{s:s, s:I, s:s, s:s}", "event", event, "attempt", (json_int_t)t->attempt,
                        "command", t->cmd, "outcome", outcome);
  if (o && extra) json_object_update(o, extra);
  json_decref(extra);
  storeio_event(t->s, t->cmd, o);
  t->outcome_written = 1;
}

/* Program output goes to stdout; the last character is remembered so the
** command's own report starts on a fresh line. */
static int last_char = '\n';
static void write_out(void *ud, const char *utf8, size_t len) {
  if (!len) return;
  fwrite(utf8, 1, len, stdout);
  last_char = (unsigned char)utf8[len - 1];
}
static void fresh_line(void) {
  if (last_char != '\n') fputc('\n', stdout);
  last_char = '\n';
  fflush(stdout);
}

int otxn_start(otxn *t, json_t *extra, uint64_t load_rev) {
  t->attempt = storeio_next_attempt(t->s);
  json_t *o = json_pack("{s:s, s:I, s:s, s:I, s:I}", "event", "started",
                        "attempt", (json_int_t)t->attempt, "command", t->cmd,
                        "parent", (json_int_t)t->parent, "generation", (json_int_t)t->generation);
  if (o && extra) json_object_update(o, extra);
  json_decref(extra);
  storeio_event(t->s, t->cmd, o);

  t->S = stack_new_world(t->cmd);
  if (!t->S) {
    otxn_outcome(t, "failed", "error", json_pack("{s:s}", "reason", "out of memory"));
    return EXIT_FAIL;
  }
  if (load_rev) {
    char err[1024], msg[960];
    int r = storeio_import_rev(t->S, t->s, load_rev == t->parent ? STORE_REV_CURRENT : load_rev,
                           STOREIO_IMPORT_ALL, NULL, msg, sizeof msg);
    if (r == STOREIO_IMPORT_ESTORE)
      snprintf(err, sizeof err, "cannot read revision %" PRIu64 ": %s", load_rev, msg);
    else
      snprintf(err, sizeof err, "%s", r == STOREIO_IMPORT_OK ? "" : msg);
    if (err[0]) {
      fprintf(stderr, "jiti %s: the world of revision %" PRIu64 " of the store at %s cannot be "
              "rebuilt: %s\n(nothing was changed; run 'jiti recover-session --store %s')\n",
              t->cmd, load_rev, store_path(t->s), err, store_path(t->s));
      otxn_outcome(t, "failed", "error", json_pack("{s:s}", "reason", err));
      return EXIT_FAIL;
    }
  }
  jiti_set_output(t->S, write_out, NULL);
  jiti_checkpoint(t->S);
  return EXIT_OK;
}

int otxn_eval_failed(otxn *t, const jiti_Result *res) {
  jiti_restore(t->S);
  fresh_line();
  const char *type = res->condition_type ? res->condition_type : "ERROR";
  const char *msg = res->message ? res->message : "(no message)";
  const char *outcome = res->status == JITI_LIMIT ? "limit" : "error";
  fprintf(stderr, "jiti %s: %s: %s: %s\nnothing was published; CURRENT stays revision %" PRIu64
          " of the store at %s\n", t->cmd, outcome, type, msg, t->parent, store_path(t->s));
  otxn_outcome(t, "failed", outcome, json_pack("{s:s, s:s}", "type", type, "report", msg));
  return EXIT_FAIL;
}

int otxn_check_invariants(otxn *t) {
  char err[1024] = "";
  jiti_Status st = jiti_invariants_check(t->S, &t->limits, err, sizeof err);
  if (st == JITI_OK) return EXIT_OK;
  jiti_restore(t->S);
  fresh_line();
  fprintf(stderr, "unsafe: %s\nnothing was published; CURRENT stays revision %" PRIu64
          " of the store at %s\n", err[0] ? err : "an invariant failed", t->parent, store_path(t->s));
  otxn_outcome(t, "rejected", "unsafe", json_pack("{s:s}", "reason", err));
  return EXIT_FAIL;
}

/* ---- collecting the changed entries */

typedef struct {
  store_env *s;
  store_entry *changed;
  size_t nchanged, capc;
  store_key *removed;
  size_t nremoved, capr;
  int oom;
} Changes;

static int collect(void *ud, jiti_EntryKind kind, const char *name,
                   const unsigned char *bytes, size_t len) {
  Changes *c = ud;
  int sk = storeio_store_kind(kind);
  if (!bytes) {
    /* removed: only keys CURRENT has (an entry made and removed within the
    ** transaction is no change) */
    uint8_t h[32];
    if (store_lookup(c->s, sk, name, h) != STORE_OK) return 0;
    if (c->nremoved == c->capr) {
      size_t cap = c->capr ? c->capr * 2 : 16;
      store_key *v = realloc(c->removed, cap * sizeof *v);
      if (!v) { c->oom = 1; return 1; }
      c->removed = v;
      c->capr = cap;
    }
    char *n = strdup(name);
    if (!n) { c->oom = 1; return 1; }
    c->removed[c->nremoved++] = (store_key){sk, n};
    return 0;
  }
  if (c->nchanged == c->capc) {
    size_t cap = c->capc ? c->capc * 2 : 64;
    store_entry *v = realloc(c->changed, cap * sizeof *v);
    if (!v) { c->oom = 1; return 1; }
    c->changed = v;
    c->capc = cap;
  }
  size_t nl = strlen(name) + 1;
  char *p = malloc(nl + len + 1);
  if (!p) { c->oom = 1; return 1; }
  memcpy(p, name, nl);
  memcpy(p + nl, bytes, len);
  c->changed[c->nchanged++] = (store_entry){sk, p, p + nl, len};
  return 0;
}

static void changes_free(Changes *c) {
  for (size_t i = 0; i < c->nchanged; i++) free((void *)c->changed[i].name);
  for (size_t i = 0; i < c->nremoved; i++) free((void *)c->removed[i].name);
  free(c->changed);
  free(c->removed);
}

int otxn_publish(otxn *t, const char *summary) {
  Changes c = {.s = t->s};
  char err[1024] = "";
  jiti_Status st = jiti_export_changed(t->S, collect, &c, err, sizeof err);
  if (st != JITI_OK || c.oom) {
    jiti_restore(t->S);
    fflush(stdout);
    const char *why = c.oom ? "out of memory" : err;
    fprintf(stderr, "jiti %s: rejected: %s\nnothing was published; CURRENT stays revision %" PRIu64
            " of the store at %s\n", t->cmd, why, t->parent, store_path(t->s));
    otxn_outcome(t, "rejected", "rejected", json_pack("{s:s}", "reason", why));
    changes_free(&c);
    return EXIT_FAIL;
  }
  store_rev_info info = {STORE_REV_ACTION, t->generation + 1, 0, JITI_VERSION, summary, NULL};
  uint64_t rev = 0;
  int rc = store_publish(t->s, t->parent, &info, c.changed, c.nchanged, c.removed, c.nremoved, &rev);
  changes_free(&c);
  if (rc != STORE_OK) {
    jiti_restore(t->S);
    fflush(stdout);
    fprintf(stderr, "jiti %s: %s: %s\nnothing was published; CURRENT stays revision %" PRIu64 "\n",
            t->cmd, rc == STORE_EINVAL || rc == STORE_ESTALE ? "rejected" : "error",
            store_errmsg(t->s), t->parent);
    otxn_outcome(t, rc == STORE_EINVAL || rc == STORE_ESTALE ? "rejected" : "failed",
                    rc == STORE_EINVAL || rc == STORE_ESTALE ? "rejected" : "error",
                    json_pack("{s:s}", "reason", store_errmsg(t->s)));
    return EXIT_FAIL;
  }
  jiti_commit(t->S);
  fresh_line();
  if (rev == t->parent) {
    printf("no change: revision %" PRIu64 " stays CURRENT\n", rev);
    otxn_outcome(t, "accepted", "accepted",
                    json_pack("{s:I, s:b}", "revision", (json_int_t)rev, "changed", 0));
    return EXIT_OK;
  }
  size_t a = 0, ch = 0, r = 0;
  store_manifest *man = NULL;
  if (store_manifest_read(t->s, rev, &man) == STORE_OK) storeio_count_changes(man, &a, &ch, &r);
  store_free(man);
  printf("revision %" PRIu64 " (generation %" PRIu64 "): +%zu ~%zu -%zu\n", rev,
         t->generation + 1, a, ch, r);
  otxn_outcome(t, "accepted", "accepted",
                  json_pack("{s:I, s:I, s:I, s:I, s:I}", "revision", (json_int_t)rev,
                            "generation", (json_int_t)(t->generation + 1), "added", (json_int_t)a,
                            "changed", (json_int_t)ch, "removed", (json_int_t)r));
  return EXIT_OK;
}

void otxn_close(otxn *t) {
  if (t->attempt && !t->outcome_written)
    otxn_outcome(t, "failed", "error", json_pack("{s:s}", "reason", "the command ended early"));
  if (t->S) jiti_close(t->S);
  store_close(t->s);
  t->S = NULL;
  t->s = NULL;
}
