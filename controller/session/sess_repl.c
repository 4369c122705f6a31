/*
** sess_repl.c — `jiti session` without a request: each line is a new
** request on the same world (sess.h).  On a terminal lines are edited with
** libedit and kept in a history file only the owner can read
** ($JITI_SESSION_HISTORY, else DIR/session_history; empty: none); piped
** lines are read without prompts.  Ctrl-C stops the request being worked
** on; end of input ends the session.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sess.h"

#define HISTORY_SIZE 1000

typedef struct Lines {
  EditLine *el;
  History *hist;
  char *histfile;
  char *buf;        /* piped input */
  size_t cap;
} Lines;

static const char *prompt(EditLine *el) {
  (void)el;
  return "request> ";
}

/* The history file, private to its owner: created 0600, made 0600. */
static void history_open(Lines *L, const char *dir) {
  HistEvent ev;
  L->hist = history_init();
  if (!L->hist) return;
  history(L->hist, &ev, H_SETSIZE, HISTORY_SIZE);
  history(L->hist, &ev, H_SETUNIQUE, 1);
  const char *env = getenv("JITI_SESSION_HISTORY");
  if (env && !*env) return;
  if (env) L->histfile = strdup(env);
  else if (asprintf(&L->histfile, "%s/session_history", dir) < 0) L->histfile = NULL;
  if (!L->histfile) return;
  int fd = open(L->histfile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || fchmod(fd, 0600)) {
    fprintf(stderr, "jiti session: cannot use %s as a private history file; no history is kept\n", L->histfile);
    if (fd >= 0) close(fd);
    free(L->histfile);
    L->histfile = NULL;
    return;
  }
  close(fd);
  if (st.st_size) history(L->hist, &ev, H_LOAD, L->histfile);
}

static void history_add(Lines *L, const char *line) {
  if (!L->hist) return;
  HistEvent ev;
  history(L->hist, &ev, H_ENTER, line);
  if (L->histfile) {
    int fd = open(L->histfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f) {
      history(L->hist, &ev, H_SAVE_FP, f);
      fclose(f);
    } else if (fd >= 0) {
      close(fd);
    }
  }
}

/* The next request (trimmed, malloc'd); NULL at end of input. */
static char *next_line(Lines *L, volatile sig_atomic_t *intr) {
  for (;;) {
    const char *s;
    if (L->el) {
      int count = 0;
      *intr = 0;
      s = el_gets(L->el, &count);
      if (!s && count < 0 && errno == EINTR) {
        fputc('\n', stderr);
        continue;   /* Ctrl-C at the prompt: a fresh line */
      }
      if (!s || count <= 0) return NULL;
    } else {
      ssize_t n = getline(&L->buf, &L->cap, stdin);
      if (n < 0) return NULL;
      s = L->buf;
    }
    size_t a = strspn(s, " \t"), n = strlen(s + a);
    while (n && (s[a + n - 1] == '\n' || s[a + n - 1] == '\r' || s[a + n - 1] == ' ')) n--;
    if (!n) continue;
    return strndup(s + a, n);
  }
}

int sess_interactive(const sess_Options *o, kclient *k, model *m, sess_UI *ui, volatile sig_atomic_t *intr) {
  Lines L = {0};
  if (isatty(STDIN_FILENO)) {
    setlocale(LC_CTYPE, "");
    history_open(&L, o->store);
    L.el = el_init("jiti", stdin, stdout, stderr);
    if (L.el) {
      el_set(L.el, EL_PROMPT, prompt);
      el_set(L.el, EL_EDITOR, "emacs");
      el_set(L.el, EL_SIGNAL, 1);
      if (L.hist) el_set(L.el, EL_HIST, history, L.hist);
      el_source(L.el, NULL);
      fprintf(stderr, "jiti session: one request per line; %s; end with Ctrl-D\n", model_describe(m));
    }
  }
  int status = SESS_OK;
  char *line;
  while ((line = next_line(&L, intr))) {
    history_add(&L, line);
    status = sess_run_request(o, k, m, ui, line, intr);
    free(line);
    if (status == SESS_FAIL && !kclient_alive(k)) break;
    if (status == SESS_INTERRUPTED && !L.el) break;
    *intr = 0;
  }
  if (L.el) el_end(L.el);
  if (L.hist) history_end(L.hist);
  free(L.histfile);
  free(L.buf);
  return status;
}
