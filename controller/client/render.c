/*
** render.c — replies of the kernel protocol as people read them (render.h):
** program output, pauses, views, the status, and the result of a change
** (apply, invariant, rollback) the same whether the kernel or an offline
** command made it.
*/
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "jiti_world.h"
#include "kclient.h"
#include "render.h"

json_t *render_request_once(const char *cmd, const char *dir, json_t *req) {
  char err[600];
  json_t *r = kclient_once(dir, req, err, sizeof err);
  if (!r) fprintf(stderr, "jiti %s: %s\n", cmd, err);
  return r;
}

void render_output(FILE *f, json_t *r) {
  json_t *o = json_object_get(r, "output");
  const char *out = json_string_value(o);
  size_t n = json_string_length(o);
  if (out && n) {
    fwrite(out, 1, n, f);
    if (out[n - 1] != '\n') fputc('\n', f);
  }
}

void render_value(FILE *f, json_t *r) {
  json_t *vs = json_object_get(r, "values");
  if (!vs) {
    fprintf(f, "%s\n", kclient_str(r, "value"));
    return;
  }
  if (!json_array_size(vs)) fprintf(f, "; no values\n");
  size_t i;
  json_t *v;
  json_array_foreach(vs, i, v) fprintf(f, "%s\n", json_string_value(v) ? json_string_value(v) : "");
}

/* A backtrace (one frame per line) with each frame's locals under it
** (frames: the same frames as data, or NULL). */
static void backtrace_with_locals(FILE *f, const char *bt, json_t *frames) {
  fprintf(f, "backtrace (innermost first):\n");
  size_t n = 0, i;
  for (const char *line = bt; *line; n++) {
    const char *end = strchr(line, '\n');
    int len = end ? (int)(end - line) : (int)strlen(line);
    fprintf(f, "  %.*s\n", len, line);
    json_t *l;
    json_array_foreach(json_object_get(json_array_get(frames, n), "locals"), i, l)
      fprintf(f, "      %s = %s\n", kclient_str(l, "name"), kclient_str(l, "value"));
    line = end ? end + 1 : line + len;
  }
}

void render_pause(FILE *f, json_t *p) {
  json_int_t level = kclient_int(p, "level");
  fprintf(f, "paused (generation %" JSON_INTEGER_FORMAT "): %s: %s\n", kclient_int(p, "generation"),
          kclient_str(p, "condition_type"), kclient_str(p, "report"));
  if (level > 1) {  /* as SBCL's debugger shows it: the level, and each one below */
    fprintf(f, "level %" JSON_INTEGER_FORMAT "] (an error inside a repair; --abort returns to level %" JSON_INTEGER_FORMAT
            ")\n", level, level - 1);
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(p, "levels"), i, l)
      if (kclient_int(l, "level") < level)
        fprintf(f, "  below, level %" JSON_INTEGER_FORMAT "]: %s: %s\n", kclient_int(l, "level"),
                kclient_str(l, "condition_type"), kclient_str(l, "report"));
  }
  json_t *rs = json_object_get(p, "restarts");
  size_t i;
  json_t *r;
  if (json_array_size(rs)) fprintf(f, "restarts (resume with the id and the arguments its lambda list takes):\n");
  json_array_foreach(rs, i, r) {
    char head[160];
    const char *ll = kclient_str(r, "lambda_list");
    snprintf(head, sizeof head, "%s %s", *kclient_str(r, "name") ? kclient_str(r, "name") : "(unnamed)",
             *ll ? ll : "");
    char lv[16] = "";
    if (level > 1) snprintf(lv, sizeof lv, "%" JSON_INTEGER_FORMAT "] ", kclient_int(r, "level"));
    fprintf(f, "  %s%-8s %-24s %s\n", lv, kclient_str(r, "id"), head, kclient_str(r, "report"));
  }
  const char *bt = kclient_str(p, "backtrace");
  if (*bt) backtrace_with_locals(f, bt, json_object_get(p, "frames"));
}

void render_diagnosis(FILE *f, json_t *g) {
  if (!json_is_object(g)) return;
  json_t *rs = json_object_get(g, "restarts"), *r;
  size_t i;
  if (json_array_size(rs)) fprintf(f, "restarts (a call with --on-error pause could have continued with one):\n");
  json_array_foreach(rs, i, r) {
    char head[160];
    const char *ll = kclient_str(r, "lambda_list");
    snprintf(head, sizeof head, "%s %s", *kclient_str(r, "name") ? kclient_str(r, "name") : "(unnamed)", *ll ? ll : "");
    fprintf(f, "  %-24s %s\n", head, kclient_str(r, "report"));
  }
  const char *bt = kclient_str(g, "backtrace");
  if (*bt) backtrace_with_locals(f, bt, json_object_get(g, "frames"));
}

json_t *render_view(FILE *f, json_t *v, const char *limit_hint) {
  fprintf(f, "generation %" JSON_INTEGER_FORMAT ", revision %" JSON_INTEGER_FORMAT ", %s, package %s\n",
          kclient_int(v, "generation"), kclient_int(v, "revision"), kclient_str(v, "status"),
          kclient_str(v, "package"));
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(v, "entries"), i, e) {
    const char *t = kclient_str(e, "text");
    fprintf(f, "%-9s %s%s%s\n", kclient_str(e, "kind"), kclient_str(e, "name"), *t ? "\n          " : "", t);
  }
  json_t *d = json_object_get(v, "data");
  if (kclient_int(d, "count"))
    fprintf(f, "data (%" JSON_INTEGER_FORMAT " rows):\n", kclient_int(d, "count"));
  json_array_foreach(json_object_get(d, "rows"), i, e)
    fprintf(f, "  %s = %s\n", kclient_str(e, "key"), kclient_str(e, "value"));
  json_array_foreach(json_object_get(v, "invariants"), i, e)
    fprintf(f, "invariant %s: %s\n", kclient_str(e, "name"), kclient_str(e, "source"));
  json_array_foreach(json_object_get(json_object_get(v, "foreign"), "unavailable"), i, e)
    fprintf(f, "unavailable foreign function %s: %s\n", kclient_str(e, "name"), kclient_str(e, "reason"));
  json_t *tr = json_object_get(v, "truncated");
  json_int_t summarized = kclient_int(tr, "summarized"), omitted = kclient_int(tr, "omitted");
  if (summarized || omitted)
    fprintf(f, "truncated: %" JSON_INTEGER_FORMAT " entr%s shown without %s text, %" JSON_INTEGER_FORMAT
            " left out%s%s\n", summarized, summarized == 1 ? "y" : "ies", summarized == 1 ? "its" : "their",
            omitted, limit_hint ? "; " : "", limit_hint ? limit_hint : "");
  json_t *p = json_object_get(v, "pause");
  if (!json_is_object(p)) return NULL;
  json_object_set_new(p, "generation", json_integer(kclient_int(v, "generation")));
  render_pause(f, p);
  return p;
}

void render_status(FILE *f, json_t *r) {
  fprintf(f, "kernel %s (protocol %" JSON_INTEGER_FORMAT ") serving %s\n", kclient_str(r, "kernel"),
          kclient_int(r, "protocol"), kclient_str(r, "store"));
  fprintf(f, "pid:        %" JSON_INTEGER_FORMAT " (worker %" JSON_INTEGER_FORMAT ")\n",
          kclient_int(r, "pid"), kclient_int(r, "worker_pid"));
  fprintf(f, "revision:   %" JSON_INTEGER_FORMAT "\ngeneration: %" JSON_INTEGER_FORMAT "\nstate:      %s\n",
          kclient_int(r, "revision"), kclient_int(r, "generation"), kclient_str(r, "state"));
  json_t *sb = json_object_get(r, "standby");   /* a replicated world's standby: reads only */
  if (json_is_object(sb)) {
    char *leader = json_dumps(json_object_get(sb, "leader"), JSON_COMPACT | JSON_ENCODE_ANY);
    fprintf(f, "standby:    world %s, applied revision %" JSON_INTEGER_FORMAT " (generation %" JSON_INTEGER_FORMAT
            "); writes go to the leader %s\n", kclient_str(sb, "world"), kclient_int(sb, "revision"),
            kclient_int(sb, "generation"), leader ? leader : "?");
    free(leader);
  }
  fprintf(f, "queue:      %" JSON_INTEGER_FORMAT "\nattempts:   %" JSON_INTEGER_FORMAT
          "\nrestarts:   %" JSON_INTEGER_FORMAT "\nuptime:     %.0f s\n",
          kclient_int(r, "queue"), kclient_int(r, "attempts"), kclient_int(r, "worker_restarts"),
          json_real_value(json_object_get(r, "uptime")));
  json_int_t commits = kclient_int(r, "group_commits"), revs = kclient_int(r, "group_revisions");
  if (commits)
    fprintf(f, "groups:     %" JSON_INTEGER_FORMAT " revisions in %" JSON_INTEGER_FORMAT " commits (%.1f each)\n",
            revs, commits, (double)revs / (double)commits);
  json_t *fo = json_object_get(r, "foreign"), *x;
  size_t i;
  fprintf(f, "foreign:   ");
  if (!json_array_size(json_object_get(fo, "granted"))) fprintf(f, " none granted");
  json_array_foreach(json_object_get(fo, "granted"), i, x) fprintf(f, " %s", json_string_value(x));
  fprintf(f, "\n");
  json_array_foreach(json_object_get(fo, "failed"), i, x)
    fprintf(f, "            %s did not open: %s\n", kclient_str(x, "library"), kclient_str(x, "message"));
  /* what left no events: counted (jiti events counters) */
  json_t *cs = json_object_get(r, "counters");
  if (json_array_size(cs)) {
    fprintf(f, "counted:   ");
    json_array_foreach(cs, i, x)
      fprintf(f, "%s %s %s %" JSON_INTEGER_FORMAT, i ? "," : "", kclient_str(x, "kind"), kclient_str(x, "outcome"),
              kclient_int(x, "count"));
    fprintf(f, "\n");
  }
  json_t *ev = json_object_get(r, "events");
  json_t *keep = json_object_get(ev, "keep"), *age = json_object_get(ev, "max_age");
  if (json_is_integer(keep) || json_is_integer(age)) {
    fprintf(f, "retention:  ");
    if (json_is_integer(keep)) fprintf(f, "the newest %" JSON_INTEGER_FORMAT " events", json_integer_value(keep));
    if (json_is_integer(keep) && json_is_integer(age)) fprintf(f, ", ");
    if (json_is_integer(age)) fprintf(f, "none older than %" JSON_INTEGER_FORMAT " s", json_integer_value(age));
    fprintf(f, "; %" JSON_INTEGER_FORMAT " pruned", kclient_int(ev, "pruned"));
    if (json_is_integer(json_object_get(ev, "remaining")))
      fprintf(f, ", %" JSON_INTEGER_FORMAT " remain", kclient_int(ev, "remaining"));
    fprintf(f, "\n");
  }
}

/* Added, changed and removed entries of a reply's "changes". */
static void count(json_t *changes, size_t *a, size_t *c, size_t *r) {
  size_t i;
  json_t *x;
  *a = *c = *r = 0;
  json_array_foreach(changes, i, x) {
    if (json_is_true(json_object_get(x, "removed"))) ++*r;
    else if (json_is_true(json_object_get(x, "added"))) ++*a;
    else ++*c;
  }
}

void render_entry_kinds(char *buf, size_t len, const char *last) {
  size_t n = 0;
  buf[0] = 0;
  for (int k = 0; k < JITI_ENTRY_KIND_COUNT && n < len; k++)
    n += (size_t)snprintf(buf + n, len - n, "%s%s", k == 0 ? "" : k == JITI_ENTRY_KIND_COUNT - 1 ? last : ", ",
                          jiti_entry_kind_name((jiti_EntryKind)k));
}

void render_refusal(const char *cmd, json_t *r) {
  const char *code = kclient_str(r, "code"), *msg = kclient_str(r, "message");
  if (!strcmp(code, "paused") && strstr(msg, "\"wait\"")) {   /* the protocol's advice names a request member */
    fprintf(stderr, "jiti %s: paused: a transaction is paused; nothing ran.  See it with 'jiti observe', answer it "
                    "with 'jiti act' (or 'jiti repl'), or run this again with --wait to wait until it ends\n", cmd);
    return;
  }
  fprintf(stderr, "jiti %s: %s: %s\n", cmd, code, msg);
  if (!strcmp(code, "fenced"))   /* never an acknowledgement: the world moved on without this kernel */
    fprintf(stderr, "the kernel no longer leads its replicated world, so nothing of this was kept; find the leader "
                    "with 'jiti replicate status --replicate URLS --world NAME' and run it again there\n");
  const char *inv = strstr(msg, "invalid-baseline: invariant ");
  if (!strcmp(code, "unsafe") && inv) {
    inv += strlen("invalid-baseline: invariant ");
    int n = (int)strcspn(inv, " ");
    fprintf(stderr, "the target revision's world does not satisfy the invariant %.*s that holds now, so it cannot "
                    "become CURRENT; roll back to a revision that satisfies it, or remove the invariant first "
                    "('jiti invariant remove %.*s') and roll back again\n", n, inv, n, inv);
  }
}

int render_change(const char *cmd, json_t *r, const char *dir) {
  render_output(stdout, r);
  if (!json_is_true(json_object_get(r, "ok"))) {
    fflush(stdout);
    render_refusal(cmd, r);
    if (json_object_get(r, "revision"))
      fprintf(stderr, "nothing was published; CURRENT stays revision %" JSON_INTEGER_FORMAT " of the store at %s\n",
              kclient_int(r, "revision"), dir);
    return 1;
  }
  json_t *changes = json_object_get(r, "changes");
  size_t a, c, x;
  count(changes, &a, &c, &x);
  if (json_object_get(r, "target"))
    printf("revision %" JSON_INTEGER_FORMAT " (rollback to %" JSON_INTEGER_FORMAT ", generation %"
           JSON_INTEGER_FORMAT "): +%zu ~%zu -%zu\n", kclient_int(r, "revision"), kclient_int(r, "target"),
           kclient_int(r, "generation"), a, c, x);
  else if (json_array_size(changes))
    printf("revision %" JSON_INTEGER_FORMAT " (generation %" JSON_INTEGER_FORMAT "): +%zu ~%zu -%zu\n",
           kclient_int(r, "revision"), kclient_int(r, "generation"), a, c, x);
  else
    printf("no change: revision %" JSON_INTEGER_FORMAT " stays CURRENT\n", kclient_int(r, "revision"));
  return 0;
}
