/*
** sess_list.c — `jiti sessions`: the transcripts sessions recorded in the
** store's events, read from the store without a kernel (read-only, beside
** a running one).
**
**   jiti sessions [--store DIR] [--json]          list them, oldest first
**   jiti sessions show N [--store DIR] [--json]   one transcript
**   jiti sessions export N [--store DIR] [-o FILE]
**                      a scripted-model file replaying N's actions
**
** N is the number the list shows (1 = the oldest), or a session id.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "maction.h"
#include "sess.h"
#include "engine.h"

typedef struct Sess {
  char *id;
  json_t *start, *end;      /* the session-start / session-end events, or NULL */
  json_t *events;           /* every event of the session, in order */
} Sess;

typedef struct All {
  Sess *v;
  size_t n, cap;
} All;

static Sess *find(All *a, const char *id) {
  for (size_t i = 0; i < a->n; i++)
    if (!strcmp(a->v[i].id, id)) return &a->v[i];
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 16;
    Sess *v = realloc(a->v, cap * sizeof *v);
    if (!v) return NULL;
    a->v = v;
    a->cap = cap;
  }
  Sess *s = &a->v[a->n];
  memset(s, 0, sizeof *s);
  s->id = strdup(id);
  s->events = json_array();
  if (!s->id || !s->events) return NULL;
  a->n++;
  return s;
}

static int collect(void *arg, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  /* cheap test before parsing: most events are the kernel's */
  if (!memmem(json, len, "\"session", 8)) return 0;
  json_t *e = json_loadb(json, len, 0, NULL);
  const char *kind = json_string_value(json_object_get(e, "event"));
  const char *id = json_string_value(json_object_get(e, "session"));
  if (!kind || !id || strncmp(kind, "session", 7)) {
    json_decref(e);
    return 0;
  }
  Sess *s = find(arg, id);
  if (!s) {
    json_decref(e);
    return 1;
  }
  if (!strcmp(kind, "session-start") && !s->start) s->start = json_incref(e);
  if (!strcmp(kind, "session-end")) {
    json_decref(s->end);
    s->end = json_incref(e);
  }
  json_array_append_new(s->events, e);
  return 0;
}

static void all_free(All *a) {
  for (size_t i = 0; i < a->n; i++) {
    free(a->v[i].id);
    json_decref(a->v[i].start);
    json_decref(a->v[i].end);
    json_decref(a->v[i].events);
  }
  free(a->v);
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static long long num(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

static void one_line(const char *s, char *out, size_t len, size_t width) {
  size_t o = 0;
  for (; *s && o + 1 < len && o < width; s++) out[o++] = *s == '\n' || *s == '\t' ? ' ' : *s;
  while (o && ((unsigned char)out[o - 1] & 0xC0) == 0x80 && *s) o--;   /* whole characters only */
  if (o && ((unsigned char)out[o - 1] & 0xC0) == 0xC0 && *s) o--;
  out[o] = 0;
  if (*s && o + 4 < len) strcat(out, "...");
}

/* Sessions in start order (only those with a start event). */
static Sess *pick(All *a, const char *which, int *number) {
  char *end;
  long n = strtol(which, &end, 10);
  int k = 0;
  for (size_t i = 0; i < a->n; i++) {
    if (!a->v[i].start) continue;
    k++;
    if ((!*end && n == k) || !strcmp(a->v[i].id, which)) {
      *number = k;
      return &a->v[i];
    }
  }
  return NULL;
}

static void list(All *a, int json) {
  json_t *arr = json ? json_array() : NULL;
  int k = 0;
  if (!json) printf("%3s  %-20s  %-34s %5s  %-12s %8s  %s\n", "N", "started (UTC)", "model", "steps", "outcome",
                    "tokens", "request");
  for (size_t i = 0; i < a->n; i++) {
    Sess *s = &a->v[i];
    if (!s->start) continue;
    k++;
    const char *outcome = s->end ? str(s->end, "outcome") : "(no end)";
    long long steps = s->end ? num(s->end, "steps") : 0;
    long long tokens = s->end ? num(json_object_get(s->end, "usage"), "total_tokens") : 0;
    if (json) {
      json_array_append_new(arr, json_pack("{s:i, s:s, s:I, s:s, s:s, s:I, s:s, s:I}", "n", k, "session", s->id,
                                           "time", (json_int_t)num(s->start, "time"), "model", str(s->start, "model"),
                                           "request", str(s->start, "request"), "steps", (json_int_t)steps, "outcome",
                                           outcome, "tokens", (json_int_t)tokens));
      continue;
    }
    char when[32], model[40], req[64], who[300];
    storeio_iso_time(num(s->start, "time"), when, sizeof when);
    const char *name = str(s->start, "model_name"), *slash = strrchr(name, '/');
    snprintf(who, sizeof who, "%s %s", str(s->start, "client"), slash ? slash + 1 : name);
    one_line(who, model, sizeof model, 34);
    one_line(str(s->start, "request"), req, sizeof req, 60);
    printf("%3d  %-20s  %-34s %5lld  %-12s %8lld  %s\n", k, when, model, steps, outcome, tokens, req);
  }
  if (json) {
    char *t = json_dumps(arr, JSON_INDENT(2));
    if (t) puts(t);
    free(t);
    json_decref(arr);
  } else if (!k) {
    printf("(no sessions yet: jiti session --help)\n");
  }
}

static void indented(const char *text, const char *pad) {
  printf("%s", pad);
  for (const char *p = text; *p; p++) {
    putchar(*p);
    if (*p == '\n' && p[1]) printf("%s", pad);
  }
  putchar('\n');
}

static void show(Sess *s, int number, int bodies) {
  char when[32];
  storeio_iso_time(num(s->start, "time"), when, sizeof when);
  printf("session %d (%s), started %s\n", number, s->id, when);
  printf("model:    %s\n", str(s->start, "model"));
  printf("request:  %s\n", str(s->start, "request"));
  size_t i;
  json_t *x, *e;
  json_array_foreach(json_object_get(s->start, "goals"), i, x) printf("goal:     %s\n", json_string_value(x));
  json_array_foreach(json_object_get(s->start, "invariants"), i, x)
    printf("invariant %s: %s\n", str(x, "name"), str(x, "source"));
  printf("world:    revision %lld, generation %lld\n", num(s->start, "revision"), num(s->start, "generation"));
  json_array_foreach(s->events, i, e) {
    const char *kind = str(e, "event");
    if (!strcmp(kind, "session-step")) {
      json_t *a = json_object_get(e, "action");
      printf("\nstep %lld  %s", num(e, "step"), str(e, "outcome"));
      if (*str(e, "reason")) printf(" (%s)", str(e, "reason"));
      if (json_is_integer(json_object_get(e, "revision"))) printf(", revision %lld", num(e, "revision"));
      printf(", sent at generation %lld%s, now %lld", num(e, "generation"),
             json_is_true(json_object_get(e, "pinned")) ? " (pinned)" : "", num(e, "generation_after"));
      long long tok = num(json_object_get(e, "usage"), "total_tokens");
      if (tok) printf(", %lld tokens", tok);
      printf("  [event %lld]\n", num(e, "seq"));
      if (json_is_object(a)) {
        printf("  %s", str(a, "type"));
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) {
          if (!strcmp(k, "type")) continue;
          if (json_is_string(v) && strchr(json_string_value(v), '\n')) {
            printf("\n  %s:\n", k);
            indented(json_string_value(v), "    ");
          } else if (json_is_string(v)) {
            printf(" %s=%s", k, json_string_value(v));
          } else {
            printf(" %s=%lld", k, (long long)json_integer_value(v));
          }
        }
        printf("\n");
      } else {
        printf("  invalid response (%s)\n", str(e, "code"));
        if (*str(e, "raw")) indented(str(e, "raw"), "    | ");
      }
      if (*str(e, "message")) indented(str(e, "message"), "  -> ");
      json_t *p = json_object_get(e, "pause");
      if (p) {
        printf("  paused: %s: %s\n  restarts:", str(p, "condition_type"), str(p, "report"));
        size_t j;
        json_t *r;
        json_array_foreach(json_object_get(p, "restarts"), j, r) printf(" %s %s", str(r, "id"), str(r, "name"));
        printf("\n");
      }
      if (*str(e, "value")) printf("  value: %s\n", str(e, "value"));
      json_t *g = json_object_get(e, "goals");
      if (g) printf("  goals: %lld of %lld hold\n", num(g, "pass"), num(g, "total"));
    } else if (!strcmp(kind, "session-request") || !strcmp(kind, "session-response")) {
      if (bodies) {
        printf("\n%s of step %lld (%lld bytes) [event %lld]:\n", kind + 8, num(e, "step"), num(e, "bytes"), num(e, "seq"));
        indented(str(e, "body"), "    ");
      }
    } else if (!strcmp(kind, "session-error")) {
      printf("\nmodel error (%s): %s  [event %lld]\n", str(e, "code"), str(e, "message"), num(e, "seq"));
    }
  }
  if (s->end) {
    json_t *u = json_object_get(s->end, "usage");
    printf("\nend: %s after %lld steps (%lld accepted, %lld rejected, %lld stale, %lld invalid); revision %lld; "
           "%lld tokens (%lld in, %lld cached, %lld out, %lld reasoning); %.1fs (model %.1fs)\n",
           str(s->end, "outcome"), num(s->end, "steps"), num(s->end, "accepted"), num(s->end, "rejected"),
           num(s->end, "stale"), num(s->end, "invalid"), num(s->end, "revision"), num(u, "total_tokens"),
           num(u, "input_tokens"), num(u, "cached_tokens"), num(u, "output_tokens"), num(u, "reasoning_tokens"),
           num(s->end, "ms") / 1000.0, num(s->end, "model_ms") / 1000.0);
  } else {
    printf("\n(no end recorded: the session is running, or its kernel stopped before it ended)\n");
  }
}

static int export(Sess *s, int number, const char *path) {
  FILE *f = path ? fopen(path, "we") : stdout;
  if (!f) {
    perror(path);
    return EXIT_FAIL;
  }
  fprintf(f, "# jiti scripted model: the actions of session %d (%s)\n", number, s->id);
  char req[200];
  one_line(str(s->start, "request"), req, sizeof req, 180);
  fprintf(f, "# request: %s\n# model: %s\n", req, str(s->start, "model"));
  size_t i;
  json_t *e;
  int n = 0;
  json_array_foreach(s->events, i, e) {
    if (strcmp(str(e, "event"), "session-step")) continue;
    json_t *a = json_object_get(e, "action");
    if (!json_is_object(a) || !strcmp(str(e, "outcome"), "declined")) {
      fprintf(f, "# step %lld: %s (%s), not replayed\n", num(e, "step"), json_is_object(a) ? "declined" : "invalid response",
              str(e, "code"));
      continue;
    }
    if (json_is_false(json_object_get(e, "action_complete"))) {
      fprintf(f, "# step %lld: %s, its source too long to be recorded whole, not replayed\n", num(e, "step"),
              str(a, "type"));
      continue;
    }
    json_t *line = json_deep_copy(a);
    if (json_is_true(json_object_get(e, "pinned")))
      json_object_set(line, "generation", json_object_get(e, "generation"));
    char *t = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fprintf(f, "%s\n", t ? t : "{}");
    free(t);
    json_decref(line);
    n++;
  }
  if (path) {
    if (fclose(f)) {
      perror(path);
      return EXIT_FAIL;
    }
    fprintf(stderr, "wrote %d action%s of session %d to %s (replay: jiti session --scripted %s ...)\n", n,
            n == 1 ? "" : "s", number, path, path);
  }
  return EXIT_OK;
}

static void usage(FILE *f) {
  fprintf(f, "usage: jiti sessions [--store DIR] [--json]\n"
             "       jiti sessions show N [--bodies] [--store DIR]\n"
             "       jiti sessions export N [-o FILE] [--store DIR]\n"
             "\n"
             "The sessions recorded in the store's events (jiti session), oldest first.  show prints one\n"
             "transcript (--bodies: with the model's request and response bodies, key redacted); export writes\n"
             "a scripted-model file that replays its actions offline (jiti session --scripted FILE).\n"
             "N is the number in the list, or a session id.\n");
}

int cmd_sessions(int argc, char **argv) {
  const char *dir = opts_default_store(), *which = NULL, *out = NULL, *verb = "list";
  int json = 0, bodies = 0;
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti sessions: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return EXIT_OK;
    } else if (!strcmp(a, "--json")) {
      json = 1;
    } else if (!strcmp(a, "--bodies")) {
      bodies = 1;
    } else if (!strcmp(a, "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if ((!strcmp(a, "show") || !strcmp(a, "export") || !strcmp(a, "list")) && !strcmp(verb, "list") && !which) {
      verb = a;
    } else if (a[0] != '-' && strcmp(verb, "list") && !which) {
      which = a;
    } else {
      fprintf(stderr, "jiti sessions: unexpected argument '%s' (see 'jiti sessions --help')\n", a);
      return EXIT_USAGE;
    }
  }
  if (strcmp(verb, "list") && !which) {
    fprintf(stderr, "jiti sessions %s: which session? (a number from 'jiti sessions', or an id)\n", verb);
    return EXIT_USAGE;
  }
  char err[CLI_MSG_MAX];
  store_env *s = storeio_open(dir, 0, err, sizeof err);
  if (!s) {
    fprintf(stderr, "jiti sessions: %s\n", err);
    return EXIT_FAIL;
  }
  All a = {0};
  int status = EXIT_OK;
  if (store_events_read(s, 0, 0, 0, collect, &a) != STORE_OK) {
    fprintf(stderr, "jiti sessions: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  } else if (!strcmp(verb, "list")) {
    list(&a, json);
  } else {
    int number = 0;
    Sess *x = pick(&a, which, &number);
    if (!x) {
      fprintf(stderr, "jiti sessions: no session %s in %s (see 'jiti sessions --store %s')\n", which, dir, dir);
      status = EXIT_FAIL;
    } else if (!strcmp(verb, "export")) {
      status = export(x, number, out);
    } else if (json) {
      char *t = json_dumps(x->events, JSON_INDENT(2));
      if (t) puts(t);
      free(t);
    } else {
      show(x, number, bodies);
    }
  }
  all_free(&a);
  store_close(s);
  return status;
}
