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
#include <histedit.h>
#include <locale.h>
#include "cli.h"
#include "maction.h"
#include "render.h"
#include "sess.h"

struct sess_UI {
  const sess_Options *o;
  int spinner; /* stderr is a terminal and not --json/--quiet */
  pthread_t thread;
  int running;
  atomic_int stop;
  atomic_size_t chars;
  char what[128];
  double t0;
  FILE *tty_in; /* --confirm reads here */
  EditLine *el; /* --confirm on a terminal: its line editor (made at the first question) */
  char prompt[128];
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
  if (u->el) el_end(u->el);
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
  if (u->o->json) return; /* --json has them in the step's "attempts" */
  char why[64];
  if (a->status) snprintf(why, sizeof why, "HTTP %ld", a->status);
  else
    snprintf(why, sizeof why, "%s",
             a->error == MHTTP_ETIMEOUT     ? "a timeout"
               : a->error == MHTTP_ECONNECT ? "a connection failure"
                                            : "a transport error");
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
  if (json_is_integer(rev)) snprintf(where, sizeof where, "rev %lld  ", (long long)json_integer_value(rev));
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
  printf(
    "session %s: %s after %lld step%s (%lld accepted, %lld rejected, %lld stale, %lld invalid); revision %lld; "
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

/* The prompt libedit shows (it asks a function for it). */
static char *el_prompt(EditLine *el) {
  sess_UI *u = NULL;
  el_get(el, EL_CLIENTDATA, &u);
  return u ? u->prompt : "";
}

/* One line from the operator, without its newline, prefilled with prefill
** (may be NULL) on a terminal; NULL at end of input.  On a terminal the
** line is edited with libedit (arrows, history of this session's answers). */
static char *ask(sess_UI *u, const char *prompt, const char *prefill) {
  if (!u->el && isatty(fileno(u->tty_in)) && isatty(STDERR_FILENO)) {
    setlocale(LC_CTYPE, "");
    u->el = el_init("jiti-confirm", u->tty_in, stderr, stderr);
    if (u->el) {
      el_set(u->el, EL_CLIENTDATA, u);
      el_set(u->el, EL_PROMPT, el_prompt);
      el_set(u->el, EL_EDITOR, "emacs");
      el_set(u->el, EL_SIGNAL, 1);
    }
  }
  if (u->el) {
    snprintf(u->prompt, sizeof u->prompt, "%s", prompt);
    if (prefill) el_push(u->el, prefill);
    int count = 0;
    const char *s = el_gets(u->el, &count);
    if (!s || count <= 0) return NULL;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    return strndup(s, n);
  }
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

/* The source in $VISUAL or $EDITOR (on a terminal): the edited text, or
** NULL when no editor is set, it failed, or the file was left empty. */
static char *edit_in_editor(const char *src) {
  const char *ed = getenv("VISUAL");
  if (!ed || !*ed) ed = getenv("EDITOR");
  if (!ed || !*ed || !isatty(STDIN_FILENO)) return NULL;
  const char *dir = getenv("TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/jiti-proposal-XXXXXX.lisp", dir && *dir ? dir : "/tmp");
  int fd = mkstemps(path, 5);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(path);
    return NULL;
  }
  fprintf(f, "%s\n", src);
  fclose(f);
  char *cmd = NULL, *out = NULL;
  /* the path is mkstemps's: no character the shell would read */
  if (asprintf(&cmd, "%s %s", ed, path) >= 0 && system(cmd) == 0) {
    size_t len;
    out = opts_read_file(path, &len);
    while (out && len && (out[len - 1] == '\n' || out[len - 1] == ' ')) out[--len] = 0;
    if (out && !*out) {
      free(out);
      out = NULL;
    }
  } else {
    fprintf(stderr, "(the editor '%s' failed: the proposal stays as it was)\n", ed);
  }
  free(cmd);
  unlink(path);
  return out;
}

/* What a proposal would do, as a person reads it: the kind and the
** generation; a source laid out as Lisp; before a resume, the pause. */
static void show_proposal(sess_UI *u, json_t *action, const sess_Proposal *p) {
  (void)u;
  int kind = maction_kind_of(action);
  fprintf(stderr, "\n--- step %d: the model proposes %s, at generation %lld ---\n", p->step,
          maction_name(kind) ? maction_name(kind) : "?", (long long)p->gen);
  if (p->reasoning && *p->reasoning) fprintf(stderr, "its reasoning: %s\n", p->reasoning);
  if ((kind == MA_RESUME || kind == MA_ABORT || json_object_get(action, "frame")) && json_is_object(p->pause)) {
    json_t *pause = json_copy(p->pause); /* a view's pause: the generation is the view's */
    if (pause && !json_object_get(pause, "generation")) json_object_set_new(pause, "generation", json_integer(p->gen));
    fprintf(stderr, "the world is ");
    render_pause(stderr, pause ? pause : p->pause);
    json_decref(pause);
  }
  const char *key;
  json_t *v;
  json_object_foreach(action, key, v) {
    if (!strcmp(key, "type")) continue;
    if (!strcmp(key, "source") || !strcmp(key, "arguments")) {
      char *pretty = sess_pretty_lisp(json_string_value(v), 78);
      if (!strcmp(key, "source")) fprintf(stderr, "%s\n", pretty ? pretty : json_string_value(v));
      else fprintf(stderr, "arguments: %s\n", pretty ? pretty : json_string_value(v));
      free(pretty);
    } else if (json_is_string(v)) {
      fprintf(stderr, "%s: %s\n", key, json_string_value(v));
    } else {
      char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
      fprintf(stderr, "%s: %s\n", key, t ? t : "?");
      free(t);
    }
  }
}

int sess_ui_confirm(sess_UI *u, const sess_Proposal *p, json_t **edited, char **reason) {
  *edited = NULL;
  *reason = NULL;
  json_t *action = json_incref(p->action);
  show_proposal(u, action, p);
  int kind = maction_kind_of(action);
  int editable = kind == MA_EVALUATE || kind == MA_PREVIEW;
  for (;;) {
    char *a = ask(
      u, editable ? "send it? [y]es, [n]o (and say why), [e]dit the source: " : "send it? [y]es, [n]o (and say why): ",
      NULL);
    if (!a) {
      json_decref(action);
      return 'q';
    }
    char c = a[strspn(a, " \t")];
    free(a);
    if (c == 'y' || c == 'Y') {
      if (action != p->action) {
        *edited = action;
        return 'e';
      }
      json_decref(action);
      return 'y';
    }
    if (c == 'n' || c == 'N') {
      char *why = ask(u, "why (for the model; Enter: no reason): ", NULL);
      if (why && why[strspn(why, " \t")]) *reason = why;
      else free(why);
      json_decref(action);
      return 'n';
    }
    if ((c == 'e' || c == 'E') && editable) {
      const char *old = json_string_value(json_object_get(action, "source"));
      char *pretty = sess_pretty_lisp(old, 78);
      char *src = edit_in_editor(pretty ? pretty : old);
      if (!src) { /* an editable line prefilled with it, newlines as spaces */
        char *line = strdup(old);
        for (char *q = line; q && *q; q++)
          if (*q == '\n' || *q == '\r' || *q == '\t') *q = ' ';
        src = ask(u, u->el ? "source: " : "new source (one line): ", line);
        free(line);
      }
      free(pretty);
      if (!src) {
        json_decref(action);
        return 'q';
      }
      json_t *args = json_deep_copy(action), *out;
      json_object_del(args, "type");
      json_object_set_new(args, "source", json_string(src));
      free(src);
      char err[512];
      int rc = maction_validate(MACTION_SESSION, maction_name(kind), args, &out, err, sizeof err);
      json_decref(args);
      if (rc) {
        fprintf(stderr, "not valid: %s\n", err);
        continue;
      }
      json_decref(action);
      action = out;
      show_proposal(u, action, p);
      if (!u->el) { /* piped answers: an edit is sent as it is */
        *edited = action;
        return 'e';
      }
    }
  }
}
