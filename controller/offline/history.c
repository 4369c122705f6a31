/*
** history.c — reading a store's history: `jiti log`, `jiti show`,
** `jiti diff` and `jiti events`.  All open the store read-only (no lock),
** so they also work beside a running writer.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "offline.h"

static const char STORE_HELP[] =
  "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
  "  -h, --help        show this help\n";

static const char REV_HELP[] =
  "REV: a revision number (1, 2, ...), HEAD (CURRENT), HEAD~N (N before CURRENT)\n"
  "or previous (CURRENT-1).\n";

/* Common argument loop: --store, --help, -n N, flags and positionals. */
typedef struct {
  const char *cmd;
  void (*usage)(FILE *);
  const char *dir;
  const char *pos[2];
  int npos, maxpos;
  uint64_t n;          /* -n N; 0 = all */
  uint64_t show;       /* --show SEQ (events); 0 = none */
  int allow_n, graph, json, allow_graph, allow_json, allow_show;
  const char *wants;   /* the positionals, said when some are missing ("a revision REV") */
} Args;

static int parse_args(Args *a, int argc, char **argv) {
  a->dir = opts_default_store();
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    char err[256];
    int r = opts_store(argc, argv, &i, &a->dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti %s: %s\n", a->cmd, err); return EXIT_USAGE; }
    if (r) continue;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) { a->usage(stdout); return -1; }
    if (a->allow_n && (!strcmp(s, "-n") || !strncmp(s, "-n", 2))) {
      const char *v = s[2] ? s + 2 : (i + 1 < argc ? argv[++i] : NULL);
      if (!v || !opts_count(v, &a->n) || a->n == 0) {
        fprintf(stderr, "jiti %s: -n needs a positive number\n", a->cmd);
        return EXIT_USAGE;
      }
    } else if (a->allow_show && !strcmp(s, "--show")) {
      if (i + 1 >= argc || !opts_count(argv[++i], &a->show) || a->show == 0) {
        fprintf(stderr, "jiti %s: --show needs an event's sequence number\n", a->cmd);
        return EXIT_USAGE;
      }
    } else if (a->allow_graph && !strcmp(s, "--graph")) {
      a->graph = 1;
    } else if (a->allow_json && !strcmp(s, "--json")) {
      a->json = 1;
    } else if (s[0] == '-' && s[1] && !(s[1] >= '0' && s[1] <= '9' && a->maxpos)) {
      fprintf(stderr, "jiti %s: unknown option %s (see 'jiti %s --help')\n", a->cmd, s, a->cmd);
      return EXIT_USAGE;
    } else if (a->npos == a->maxpos) {
      fprintf(stderr, "jiti %s: unexpected argument '%s' (see 'jiti %s --help')\n", a->cmd, s, a->cmd);
      return EXIT_USAGE;
    } else {
      a->pos[a->npos++] = s;
    }
  }
  if (a->npos != a->maxpos) {  /* one line, not the whole help page */
    fprintf(stderr, "jiti %s: give %s (see 'jiti %s --help')\n", a->cmd, a->wants ? a->wants : "the arguments",
            a->cmd);
    return EXIT_USAGE;
  }
  return EXIT_OK;
}

/* ------------------------------------------------------------------- log */

static void log_usage(FILE *out) {
  fprintf(out,
          "usage: jiti log [--graph] [-n N] [--store DIR]\n"
          "\n"
          "List the revision chain, newest first: number, time (UTC), kind, summary and\n"
          "the entries added (+), changed (~) and removed (-).\n"
          "\n"
          "options:\n"
          "  --graph           draw the chain as a rail (* per revision)\n"
          "  -n N              show at most N revisions\n"
          "%s"
          "\nExit status: 0 success; 1 a store problem; 2 usage.\n",
          STORE_HELP);
}

int cmd_log(int argc, char **argv) {
  Args a = {.cmd = "log", .usage = log_usage, .allow_n = 1, .allow_graph = 1};
  int rc = parse_args(&a, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  store_env *s = ostore_open("log", a.dir, 0);
  if (!s) return EXIT_FAIL;
  uint64_t cur = 0;
  int status = EXIT_OK;
  if (store_current(s, &cur) != STORE_OK) {
    fprintf(stderr, "jiti log: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  } else if (cur == 0) {
    printf("no revisions (run 'jiti init --store %s')\n", a.dir);
  }
  uint64_t shown = 0;
  for (uint64_t r = cur; status == EXIT_OK && r >= 1 && (!a.n || shown < a.n); r--, shown++) {
    store_manifest *m = NULL;
    if (store_manifest_read(s, r, &m) != STORE_OK) {
      fprintf(stderr, "jiti log: %s\n", store_errmsg(s));
      status = EXIT_FAIL;
      break;
    }
    char when[40];
    storeio_iso_time(m->time_ms, when, sizeof when);
    size_t ad, ch, rm;
    storeio_count_changes(m, &ad, &ch, &rm);
    char kind[48];
    if (m->kind == STORE_REV_ROLLBACK)
      snprintf(kind, sizeof kind, "rollback(%" PRIu64 ")", m->rollback_of);
    else
      snprintf(kind, sizeof kind, "%s", store_rev_kind_name(m->kind) ? store_rev_kind_name(m->kind) : "?");
    if (a.graph && shown) printf("|\n");
    printf("%s%-5" PRIu64 " %s  %-13s +%zu ~%zu -%zu  %s%s\n", a.graph ? "* " : "", r, when, kind,
           ad, ch, rm, m->summary, r == cur ? "  (CURRENT)" : "");
    store_free(m);
  }
  store_close(s);
  return status;
}

/* ------------------------------------------------------------------ show */

static void show_usage(FILE *out) {
  fprintf(out,
          "usage: jiti show REV [--store DIR]\n"
          "\n"
          "Print revision REV's manifest (parent, generation, time, kernel version, kind,\n"
          "summary, model response id, the C libraries the world was granted with\n"
          "--allow-foreign when it was) and the text of every entry it added or changed;\n"
          "removed entries are listed.\n"
          "\n%s\noptions:\n%s"
          "\nExit status: 0 success; 1 no such revision or a store problem; 2 usage.\n",
          REV_HELP, STORE_HELP);
}

static int zero(const uint8_t h[32]) {
  for (int i = 0; i < 32; i++)
    if (h[i]) return 0;
  return 1;
}

/* Entries as show and diff print them: pasteable forms in lines of at most
** this many characters. */
#define TEXT_WIDTH 78

/* An entry kept as it was written: its text, after a comment naming the
** file, line and column it came from when it came from a file (a
** definition moved in its file is a change, and the diff shows where). */
static char *written_text(const jiti_EntrySource *src) {
  size_t n = src->len + src->filelen + 64;
  char *t = malloc(n);
  if (!t) return NULL;
  if (src->file)
    snprintf(t, n, ";; from %.*s:%ld:%ld\n%.*s", (int)src->filelen, src->file, src->line, src->column,
             (int)src->len, src->text);
  else
    snprintf(t, n, "%.*s", (int)src->len, src->text);
  return t;
}

/* The text of the entry with hash h (malloc'd), or NULL after a message:
** as it was written when the entry keeps that, else its canonical form. */
static char *entry_text(const char *cmd, store_env *s, jiti_State *S, const uint8_t h[32]) {
  store_entry *e = NULL;
  if (store_get_entry(s, h, &e) != STORE_OK) {
    fprintf(stderr, "jiti %s: %s\n", cmd, store_errmsg(s));
    return NULL;
  }
  jiti_EntrySource src;
  char *t = jiti_entry_source(e->bytes, e->len, &src, NULL) == 1
                ? written_text(&src) : jiti_entry_form(S, e->name, e->bytes, e->len, TEXT_WIDTH);
  store_free(e);
  if (!t) fprintf(stderr, "jiti %s: out of memory\n", cmd);
  return t;
}

static int show_main(int argc, char **argv) {
  Args a = {.cmd = "show", .usage = show_usage, .maxpos = 1, .wants = "a revision: jiti show REV (jiti log lists them)"};
  int rc = parse_args(&a, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  store_env *s = ostore_open("show", a.dir, 0);
  if (!s) return EXIT_FAIL;
  uint64_t rev;
  int status = ostore_rev("show", s, a.pos[0], &rev);
  store_manifest *m = NULL;
  if (status == EXIT_OK && store_manifest_read(s, rev, &m) != STORE_OK) {
    fprintf(stderr, "jiti show: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  }
  jiti_State *S = NULL;
  if (status == EXIT_OK && !(S = stack_new_world())) {
    fprintf(stderr, "jiti show: cannot create an interpreter (out of memory?)\n");
    status = EXIT_FAIL;
  }
  if (status == EXIT_OK) {
    char when[40];
    storeio_iso_time(m->time_ms, when, sizeof when);
    printf("revision %" PRIu64 "\n", m->rev);
    printf("parent:         %" PRIu64 "\n", m->parent);
    printf("generation:     %" PRIu64 "\n", m->generation);
    printf("time:           %s\n", when);
    printf("kernel version: %s\n", m->kernel_version[0] ? m->kernel_version : "-");
    printf("kind:           %s", store_rev_kind_name(m->kind) ? store_rev_kind_name(m->kind) : "?");
    if (m->kind == STORE_REV_ROLLBACK) printf(" (to revision %" PRIu64 ")", m->rollback_of);
    printf("\nsummary:        %s\n", m->summary[0] ? m->summary : "-");
    printf("response id:    %s\n", m->response_id[0] ? m->response_id : "-");
    if (m->foreign[0]) {  /* the libraries the world was granted: what it needs to run */
      printf("foreign grant: ");
      for (const char *p = m->foreign; *p;) {
        size_t n = strcspn(p, "\n");
        printf(" %.*s", (int)n, p);
        p += n + (p[n] == '\n');
      }
      printf("\n");
    }
    printf("entries:        %" PRIu64 "\n", m->nentries);
    size_t ad, ch, rm;
    storeio_count_changes(m, &ad, &ch, &rm);
    printf("changes:        +%zu ~%zu -%zu\n", ad, ch, rm);
    for (size_t i = 0; i < m->nchanges && status == EXIT_OK; i++) {
      const store_change *c = &m->changes[i];
      const char *k = store_kind_name(c->kind) ? store_kind_name(c->kind) : "?";
      if (zero(c->new_hash)) {
        printf("\nremoved %s %s\n", k, c->name);
        continue;
      }
      char *t = entry_text("show", s, S, c->new_hash);
      if (!t) { status = EXIT_FAIL; break; }
      printf("\n%s %s %s\n%s\n", zero(c->old_hash) ? "added" : "changed", k, c->name, t);
      free(t);
    }
  }
  if (S) jiti_close(S);
  store_free(m);
  store_close(s);
  return status;
}

int cmd_show(int argc, char **argv) { return stack_run(show_main, argc, argv); }

/* ------------------------------------------------------------------ diff */

static void diff_usage(FILE *out) {
  fprintf(out,
          "usage: jiti diff A B [--store DIR]\n"
          "\n"
          "List the entries added, removed and changed from revision A to revision B,\n"
          "each with a unified diff of its text.\n"
          "\n%s\noptions:\n%s"
          "\nExit status: 0 success (whether or not they differ); 1 no such revision or a\n"
          "store problem; 2 usage.\n",
          REV_HELP, STORE_HELP);
}

static int key_cmp(const storeio_entry *x, const storeio_entry *y) {
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int diff_main(int argc, char **argv) {
  Args a = {.cmd = "diff", .usage = diff_usage, .maxpos = 2,
            .wants = "two revisions: jiti diff A B (jiti log lists them)"};
  int rc = parse_args(&a, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  uint64_t ra = 0, rb = 0, cur = 0;
  store_env *s = ostore_open("diff", a.dir, 0);
  if (!s) return EXIT_FAIL;
  int status = ostore_rev("diff", s, a.pos[0], &ra);
  if (status == EXIT_OK) status = ostore_rev("diff", s, a.pos[1], &rb);
  if (status == EXIT_OK) store_current(s, &cur);
  storeio_map ma = {0}, mb = {0};
  jiti_State *S = NULL;
  if (status == EXIT_OK &&
      (storeio_map_load(s, ra == cur ? STORE_REV_CURRENT : ra, &ma) != STORE_OK ||
       storeio_map_load(s, rb == cur ? STORE_REV_CURRENT : rb, &mb) != STORE_OK)) {
    fprintf(stderr, "jiti diff: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  }
  if (status == EXIT_OK && !(S = stack_new_world())) {
    fprintf(stderr, "jiti diff: cannot create an interpreter (out of memory?)\n");
    status = EXIT_FAIL;
  }
  size_t i = 0, j = 0, nad = 0, nch = 0, nrm = 0;
  while (status == EXIT_OK && (i < ma.n || j < mb.n)) {
    int c = i == ma.n ? 1 : j == mb.n ? -1 : key_cmp(&ma.v[i], &mb.v[j]);
    const storeio_entry *x = c <= 0 ? &ma.v[i] : NULL, *y = c >= 0 ? &mb.v[j] : NULL;
    if (c < 0) i++;
    else if (c > 0) j++;
    else { i++; j++; }
    if (x && y && !memcmp(x->hash, y->hash, 32)) continue;
    const storeio_entry *e = x ? x : y;
    const char *k = store_kind_name(e->kind) ? store_kind_name(e->kind) : "?";
    char *ta = x ? entry_text("diff", s, S, x->hash) : strdup("");
    char *tb = y ? entry_text("diff", s, S, y->hash) : strdup("");
    if (!ta || !tb) {
      free(ta); free(tb);
      status = EXIT_FAIL;
      break;
    }
    printf("%s %s %s\n", !x ? "added" : !y ? "removed" : "changed", k, e->name);
    if (!x) nad++; else if (!y) nrm++; else nch++;
    char la[600], lb[600];
    snprintf(la, sizeof la, "%s %" PRIu64 ":%s/%s", x ? "revision" : "(absent in)", ra, k, e->name);
    snprintf(lb, sizeof lb, "%s %" PRIu64 ":%s/%s", y ? "revision" : "(absent in)", rb, k, e->name);
    /* a text ends without a newline; end both so the last lines compare */
    size_t na = strlen(ta), nb = strlen(tb);
    char *fa = malloc(na + 2), *fb = malloc(nb + 2);
    if (fa && fb) {
      snprintf(fa, na + 2, "%s%s", ta, na ? "\n" : "");
      snprintf(fb, nb + 2, "%s%s", tb, nb ? "\n" : "");
      textdiff_unified(stdout, la, fa, lb, fb);
    }
    free(fa); free(fb); free(ta); free(tb);
  }
  if (status == EXIT_OK)
    printf("%s%" PRIu64 " -> %" PRIu64 ": +%zu ~%zu -%zu\n", nad + nch + nrm ? "\n" : "", ra, rb,
           nad, nch, nrm);
  if (S) jiti_close(S);
  storeio_map_free(&ma);
  storeio_map_free(&mb);
  store_close(s);
  return status;
}

int cmd_diff(int argc, char **argv) { return stack_run(diff_main, argc, argv); }

/* ---------------------------------------------------------------- events */

static void events_usage(FILE *out) {
  fprintf(out,
          "usage: jiti events [-n N] [--json] [--show SEQ] [--store DIR]\n"
          "       jiti events counters [--json] [--store DIR]\n"
          "       jiti events prune [--keep COUNT] [--max-age DURATION] [--store DIR]\n"
          "\n"
          "List the store's events (attempts, outcomes, recoveries, sessions), newest\n"
          "first: one line each, or with --json the stored JSON records, one per line.\n"
          "Calls and previews that published nothing, and queries, are counted, not\n"
          "listed: 'jiti events counters' shows the counts.  'jiti events prune'\n"
          "deletes old events (see its --help; a kernel does it as it runs with\n"
          "--events-keep or --events-max-age).\n"
          "\n"
          "options:\n"
          "  -n N              show at most N events\n"
          "  --json            print the raw records\n"
          "  --show SEQ        print event SEQ in full (a model request or response\n"
          "                    body, recorded by jiti session, decoded)\n"
          "%s"
          "\nExit status: 0 success; 1 a store problem; 2 usage.\n",
          STORE_HELP);
}

/* One line for an event: seq, time, event, attempt, then the other members. */
void history_event_line(FILE *out, const char *json, size_t len) {
  json_error_t jerr;
  json_t *o = json_loadb(json, len, 0, &jerr);
  if (!json_is_object(o)) {
    fprintf(out, "(unreadable event) %.*s\n", (int)(len > 200 ? 200 : len), json);
    json_decref(o);
    return;
  }
  char when[40] = "?";
  json_t *t = json_object_get(o, "time");
  if (json_is_integer(t)) storeio_iso_time((int64_t)json_integer_value(t), when, sizeof when);
  json_t *seq = json_object_get(o, "seq"), *ev = json_object_get(o, "event");
  json_t *att = json_object_get(o, "attempt");
  fprintf(out, "%-5" JSON_INTEGER_FORMAT " %s  %-12s", json_is_integer(seq) ? json_integer_value(seq) : 0,
          when, json_is_string(ev) ? json_string_value(ev) : "?");
  if (json_is_integer(att)) fprintf(out, " attempt %-4" JSON_INTEGER_FORMAT, json_integer_value(att));
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (!strcmp(key, "seq") || !strcmp(key, "time") || !strcmp(key, "event") || !strcmp(key, "attempt"))
      continue;
    if (json_is_string(v)) {
      const char *sv = json_string_value(v);
      size_t n = strcspn(sv, "\n");
      if (n > 100) n = 100;
      fprintf(out, " %s=%.*s%s", key, (int)n, sv, sv[n] ? "..." : "");
    } else {
      char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
      if (d) fprintf(out, " %s=%.100s", key, d);
      free(d);
    }
  }
  fputc('\n', out);
  json_decref(o);
}

typedef struct { int json; } EvArgs;

/* --show: one event in full; a "body" member (a model request or
** response recorded by a session) is printed once, after the rest,
** decoded when it holds JSON. */
static int show_event(void *arg, uint64_t seq, const char *json, size_t len) {
  *(int *)arg = 1;
  json_t *o = json_loadb(json, len, 0, NULL);
  json_t *bodyv = json_incref(json_object_get(o, "body"));
  const char *body = json_string_value(bodyv);
  if (body) json_object_del(o, "body");
  char *t = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  printf("%s\n", t ? t : "(unreadable event)");
  free(t);
  json_t *b = body ? json_loads(body, 0, NULL) : NULL;
  if (b) {
    t = json_dumps(b, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("body, decoded:\n%s\n", t ? t : "");
    free(t);
  } else if (body) {
    printf("body:\n%s\n", body);
  }
  json_decref(b);
  json_decref(bodyv);
  json_decref(o);
  (void)seq;
  return 1;
}

static int print_event(void *arg, uint64_t seq, const char *json, size_t len) {
  EvArgs *a = arg;
  if (a->json) printf("%.*s\n", (int)len, json);
  else history_event_line(stdout, json, len);
  return 0;
}

static int add_count(void *arg, const store_count *c) {
  *(uint64_t *)arg += c->n;
  return 0;
}

int cmd_events(int argc, char **argv) {
  int sub = events_sub_main(argc, argv);
  if (sub >= 0) return sub;
  Args a = {.cmd = "events", .usage = events_usage, .allow_n = 1, .allow_json = 1, .allow_show = 1};
  int rc = parse_args(&a, argc, argv);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  store_env *s = ostore_open("events", a.dir, 0);
  if (!s) return EXIT_FAIL;
  if (a.show) {
    int found = 0;
    int r = store_events_read(s, a.show, 1, 0, show_event, &found);
    if (r != STORE_OK) fprintf(stderr, "jiti events: %s\n", store_errmsg(s));
    else if (!found) fprintf(stderr, "jiti events: no event %llu in %s\n", (unsigned long long)a.show, a.dir);
    store_close(s);
    return r == STORE_OK && found ? EXIT_OK : EXIT_FAIL;
  }
  EvArgs ea = {a.json};
  int status = EXIT_OK;
  if (store_events_read(s, 0, (size_t)a.n, STORE_NEWEST_FIRST, print_event, &ea) != STORE_OK) {
    fprintf(stderr, "jiti events: %s\n", store_errmsg(s));
    status = EXIT_FAIL;
  }
  uint64_t counted = 0;
  if (status == EXIT_OK && !a.json && !a.n && store_counters_read(s, add_count, &counted) == STORE_OK && counted)
    printf("(and %" PRIu64 " call%s, previews and queries that changed nothing, counted rather than listed: "
           "jiti events counters)\n", counted, counted == 1 ? "" : "s");
  store_close(s);
  return status;
}
