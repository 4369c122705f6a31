/*
** sess_ui.c — what the operator sees of a session (sess.h): while the
** model works, a spinner with the elapsed time and the streamed characters
** (on a terminal only); then one line per step on stdout; with --json one
** JSON object per step instead; --confirm asks before each action.
*/
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "maction.h"
#include "sess.h"

struct sess_UI {
  const sess_Options *o;
  int spinner;                 /* stderr is a terminal and not --json/--quiet */
  pthread_t thread;
  int running;
  atomic_int stop;
  atomic_size_t chars;
  char what[128];
  double t0;
  FILE *tty_in;                /* --confirm reads here */
};

sess_UI *sess_ui_new(const sess_Options *o) {
  sess_UI *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->o = o;
  u->spinner = isatty(2) && !o->json && !o->quiet;
  u->tty_in = stdin;
  return u;
}

void sess_ui_free(sess_UI *u) {
  if (!u) return;
  sess_ui_wait_stop(u);
  free(u);
}

static void *spin(void *arg) {
  sess_UI *u = arg;
  static const char frames[] = "|/-\\";
  int i = 0;
  while (!atomic_load(&u->stop)) {
    size_t c = atomic_load(&u->chars);
    char streamed[48] = "";
    if (c) snprintf(streamed, sizeof streamed, ", ~%zu tokens", (c + 3) / 4);
    fprintf(stderr, "\r%c %s %.1fs%s\033[K", frames[i++ % 4], u->what, mono_now() - u->t0, streamed);
    fflush(stderr);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
  return NULL;
}

void sess_ui_wait_start(sess_UI *u, const char *what) {
  if (!u->spinner || u->running) return;
  snprintf(u->what, sizeof u->what, "%s", what);
  atomic_store(&u->stop, 0);
  atomic_store(&u->chars, 0);
  u->t0 = mono_now();
  u->running = pthread_create(&u->thread, NULL, spin, u) == 0;
}

void sess_ui_progress(void *ud, size_t chars) {
  sess_UI *u = ud;
  atomic_store(&u->chars, chars);
}

void sess_ui_wait_stop(sess_UI *u) {
  if (!u->running) return;
  atomic_store(&u->stop, 1);
  pthread_join(u->thread, NULL);
  u->running = 0;
}

void sess_ui_note(sess_UI *u, const char *fmt, ...) {
  if (u->o->json) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void sess_ui_retry(void *ud, const mretry_Attempt *a, int retry, int max_retries) {
  sess_UI *u = ud;
  if (u->o->json) return;   /* --json has them in the step's "attempts" */
  char why[64];
  if (a->status) snprintf(why, sizeof why, "HTTP %ld", a->status);
  else snprintf(why, sizeof why, "%s", a->error == MHTTP_ETIMEOUT ? "a timeout" : a->error == MHTTP_ECONNECT
                                         ? "a connection failure" : "a transport error");
  fprintf(stderr, "%sretrying in %.1f s after %s%s (retry %d of %d)\n", u->running ? "\r\033[K" : "", a->wait, why,
          a->server_wait ? ", as the server asked" : "", retry, max_retries);
  fflush(stderr);
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* --json: one object per line, flushed (a reader follows the session live). */
static void json_line(json_t *o) {
  char *t = json_dumps(o, JSON_COMPACT);
  if (t) puts(t);
  free(t);
  fflush(stdout);
}

void sess_ui_step(sess_UI *u, json_t *step) {
  if (u->o->json) {
    json_line(step);
    return;
  }
  if (u->o->quiet) return;
  char what[160] = "";
  json_t *a = json_object_get(step, "action");
  if (json_is_object(a)) maction_summary(a, what, sizeof what);
  else snprintf(what, sizeof what, "(invalid response: %s)", str(step, "code"));
  const char *outcome = str(step, "outcome");
  char detail[96] = "";
  const char *reason = str(step, "reason");
  if (*reason && strcmp(reason, outcome)) snprintf(detail, sizeof detail, " (%s)", reason);
  json_t *pause = json_object_get(step, "pause");
  if (pause) snprintf(detail, sizeof detail, " (%s)", str(pause, "condition_type"));
  char where[64] = "";
  json_t *rev = json_object_get(step, "revision");
  if (json_is_integer(rev))
    snprintf(where, sizeof where, "rev %lld  ", (long long)json_integer_value(rev));
  long long gen = json_integer_value(json_object_get(step, "generation_after"));
  long long tok = json_integer_value(json_object_get(json_object_get(step, "usage"), "total_tokens"));
  char tokens[32] = "";
  if (tok) snprintf(tokens, sizeof tokens, "  %lld tok", tok);
  printf("%3lld  %-52.52s  %s%s  %sgen %lld%s\n", (long long)json_integer_value(json_object_get(step, "step")), what,
         outcome, detail, where, gen, tokens);
  const char *msg = str(step, "message");
  if (*msg && strcmp(outcome, "accepted") && strcmp(outcome, "unchanged")) printf("     %.300s\n", msg);
  fflush(stdout);
}

void sess_ui_end(sess_UI *u, json_t *end) {
  if (u->o->json) {
    json_line(end);
    return;
  }
  json_t *usage = json_object_get(end, "usage");
  printf("session %s: %s after %lld step%s (%lld accepted, %lld rejected, %lld stale, %lld invalid); revision %lld; "
         "%lld tokens; %.1fs\n",
         str(end, "session"), str(end, "outcome"), (long long)json_integer_value(json_object_get(end, "steps")),
         json_integer_value(json_object_get(end, "steps")) == 1 ? "" : "s",
         (long long)json_integer_value(json_object_get(end, "accepted")),
         (long long)json_integer_value(json_object_get(end, "rejected")),
         (long long)json_integer_value(json_object_get(end, "stale")),
         (long long)json_integer_value(json_object_get(end, "invalid")),
         (long long)json_integer_value(json_object_get(end, "revision")),
         (long long)json_integer_value(json_object_get(usage, "total_tokens")),
         json_integer_value(json_object_get(end, "ms")) / 1000.0);
  fflush(stdout);
}

/* One line from the operator, without its newline; NULL at end of input. */
static char *ask(sess_UI *u, const char *prompt) {
  fprintf(stderr, "%s", prompt);
  fflush(stderr);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, u->tty_in);
  if (n < 0) {
    free(line);
    return NULL;
  }
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
  return line;
}

int sess_ui_confirm(sess_UI *u, json_t *action, json_t **edited) {
  *edited = NULL;
  char *text = json_dumps(action, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fprintf(stderr, "The model proposes:\n%s\n", text ? text : "?");
  free(text);
  const char *src_key = maction_kind_of(action) == MA_EVALUATE || maction_kind_of(action) == MA_PREVIEW ? "source" : NULL;
  for (;;) {
    char *a = ask(u, src_key ? "send it? [y]es, [n]o, [e]dit the source: " : "send it? [y]es, [n]o: ");
    if (!a) return 'q';
    char c = a[0];
    free(a);
    if (c == 'y' || c == 'Y') return 'y';
    if (c == 'n' || c == 'N') return 'n';
    if ((c == 'e' || c == 'E') && src_key) {
      char *src = ask(u, "new source (one line): ");
      if (!src) return 'q';
      json_t *args = json_pack("{s:s}", src_key, src), *out;
      free(src);
      char err[512];
      int rc = maction_validate(MACTION_SESSION, maction_name(maction_kind_of(action)), args, &out, err, sizeof err);
      json_decref(args);
      if (rc) {
        fprintf(stderr, "not valid: %s\n", err);
        continue;
      }
      *edited = out;
      return 'e';
    }
  }
}
