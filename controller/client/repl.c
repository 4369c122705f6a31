/*
** repl.c — `jiti repl`: an interactive session with the store's running
** kernel over one connection (kclient.c).  A Lisp form (read over as many
** lines as its parentheses need; several on a line run one after another)
** runs as an application call (`call`) that pauses on an unhandled error,
** as a Lisp listener enters its debugger: the prompt then shows the pause
** level, a restart's number chooses it, and forms typed are repairs inside
** the pause.  Colon commands observe the world, act as a model would and
** answer pauses.
**
** On a terminal, lines are read with libedit (editing, a history kept in a
** file of mode 0600) behind a prompt showing the kernel's generation and
** state, e.g. `jiti g12 idle> `, `jiti g14 PAUSED> `, kept current while
** it waits (a status a second), and Tab completes symbols through the
** kernel's complete request.  Otherwise lines are
** read as they come, without prompts, so a session can be piped in.
**
** Exit status: 0 at :quit or the end of input; 1 no kernel is running when
** the session starts, or the input ended inside a form; 2 usage.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>
#include <histedit.h>
#include <jansson.h>
#include "cli.h"
#include "client.h"
#include "kclient.h"
#include "render.h"
#include "proto.h"
#include "jtext.h"
#include "engine.h"
#include "jiti_world.h"

#define REPL_HISTORY_SIZE 1000   /* entries kept in the history file */
#define REPL_HISTORY_FILE "repl_history"
#define WS " \t\r\n"                /* separates the arguments of a command */

/* What the lines being collected are for. */
typedef enum { PEND_CALL, PEND_ACT, PEND_RESUME, PEND_FRAME_EVAL, PEND_RETURN } PendKind;

typedef struct Repl {
  kclient k;
  const char *dir;
  int tty;                  /* stdin is a terminal: libedit, prompts, the history file */
  EditLine *el;
  History *hist;
  char *histfile;           /* NULL: no history file */
  int hist_warned;
  json_int_t pid;           /* the kernel's pid (hello); 0 before the first connection */
  int known;                /* gen and state: the last status reply */
  json_int_t gen;
  char state[32];
  char prompt[96];
  /* the entry being read: its lines as typed; the form starts at form_off */
  char *text;
  size_t len, cap, form_off;
  long lines, entry_line;   /* lines read so far; the line the entry began on */
  PendKind kind;
  char restart[128];        /* PEND_RESUME: the restart id */
  int frame;                /* PEND_FRAME_EVAL, PEND_RETURN: the frame's number */
  char *line;               /* getline's buffer */
  size_t linecap;
  int on_error_fail;        /* --on-error fail: calls end on an error instead of pausing */
  json_t *pause;            /* the pause last seen (its menu, level, backtrace), or NULL */
} Repl;

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* Before a message on stderr: what stdout holds goes first. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  fflush(stdout);
  va_list ap;
  va_start(ap, fmt);
  fputs("jiti repl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ------------------------------------------------------------ forms */

enum { FORM_EMPTY, FORM_OPEN, FORM_DONE };

/* Where the text typed so far stands, by the reader's rules as far as they
** decide when a form ends: FORM_EMPTY (blanks and comments only),
** FORM_OPEN (inside a list, a string, a |symbol|, a #| comment |#, or after
** a quote or #), FORM_DONE.  `;` comments, strings and character literals
** such as #\( do not count as parentheses.  A surplus `)` ends the form:
** the kernel's reader reports it. */
/* Ends a token: what the reader stops a symbol or a number at. */
static int delimiter(char c) { return isspace((unsigned char)c) || strchr("()\"';`,", c); }

/* form_state, and in *first_end (when not NULL) where the first complete
** top-level form ends (0: none is complete yet), so that several forms on
** one line run one after another. */
static int form_scan(const char *s, size_t n, size_t *first_end) {
  int depth = 0, seen = 0, prefix = 0, block = 0;
  size_t end = 0;
#define FORM_ENDS_AT(k) do { if (!end && depth == 0 && !prefix) end = (k); } while (0)
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (block) {  /* inside #| ... |#, which nest */
      if (c == '|' && i + 1 < n && s[i + 1] == '#') block--, i++;
      else if (c == '#' && i + 1 < n && s[i + 1] == '|') block++, i++;
      continue;
    }
    switch (c) {
    case ';':
      while (i + 1 < n && s[i + 1] != '\n') i++;
      break;
    case '"': case '|':  /* up to the closing one; \ escapes inside */
      for (i++; i < n && s[i] != c; i++)
        if (s[i] == '\\') i++;
      if (i >= n) return FORM_OPEN;
      seen = 1, prefix = 0;
      FORM_ENDS_AT(i + 1);
      break;
    case '#':
      if (i + 1 < n && s[i + 1] == '|') { block = 1, i++; break; }
      if (i + 1 < n && s[i + 1] == '\\') {  /* #\x: x is a character, whatever it is */
        i += 2;
        if (i >= n) return FORM_OPEN;
        while (i + 1 < n && !delimiter(s[i + 1])) i++;  /* #\Space */
        seen = 1, prefix = 0;
        FORM_ENDS_AT(i + 1);
        break;
      }
      if (i + 1 < n && s[i + 1] == '\'') i++;
      seen = 1, prefix = 1;  /* #' #( #: #x ... : what follows belongs to it */
      break;
    case '(':
      depth++, seen = 1, prefix = 0;
      break;
    case ')':
      depth--, seen = 1, prefix = 0;
      FORM_ENDS_AT(i + 1);
      break;
    case '\'': case '`': case ',':
      if (c == ',' && i + 1 < n && s[i + 1] == '@') i++;
      seen = 1, prefix = 1;
      break;
    case '\\':  /* a single escape in a token */
      if (++i >= n) return FORM_OPEN;
      seen = 1, prefix = 0;
      if (i + 1 >= n || delimiter(s[i + 1])) FORM_ENDS_AT(i + 1);
      break;
    default:
      if (!isspace((unsigned char)c)) {
        seen = 1, prefix = 0;
        if (i + 1 >= n || delimiter(s[i + 1])) FORM_ENDS_AT(i + 1);
      }
    }
  }
#undef FORM_ENDS_AT
  if (first_end) *first_end = end;
  if (block || depth > 0 || prefix) return FORM_OPEN;
  return seen ? FORM_DONE : FORM_EMPTY;
}

static int form_state(const char *s, size_t n) { return form_scan(s, n, NULL); }

/* ------------------------------------------------------- connection */

/* Connect (or reconnect) and greet the kernel.  1 connected; 0 after a
** message (unless quiet). */
static int reconnect(Repl *R, int quiet) {
  if (kclient_connect(&R->k)) {
    if (!quiet) say("%s", R->k.err);
    return 0;
  }
  json_t *rep;
  if (kclient_call(&R->k, json_pack("{s:s, s:i, s:s}", "op", "hello", "protocol", PROTO_VERSION, "client",
                                    "jiti repl"),
                   &rep, NULL) != KCLIENT_OK) {
    if (!quiet) say("the kernel for %s closed the connection without a reply (see its log)", R->dir);
    return 0;
  }
  if (!json_is_true(json_object_get(rep, "ok"))) {
    if (!quiet)
      say("the kernel refused this client: %s: %s", kclient_str(rep, "code"), kclient_str(rep, "message"));
    json_decref(rep);
    kclient_close(&R->k);
    return 0;
  }
  json_int_t pid = kclient_int(rep, "pid");
  if (R->pid && pid != R->pid)
    say("reconnected: a new kernel serves %s (pid %" JSON_INTEGER_FORMAT ", was %" JSON_INTEGER_FORMAT ")",
        R->dir, pid, R->pid);
  else if (R->tty)
    printf("connected to the kernel for %s (jiti %s, pid %" JSON_INTEGER_FORMAT "); :help lists the "
           "commands, Ctrl-D quits\n", R->dir, kclient_str(rep, "kernel"), pid);
  R->pid = pid;
  json_decref(rep);
  return 1;
}

/* The connection, reopened if the kernel closed it.  1 connected.  The
** same kernel closes a connection left idle past its --idle-timeout: the
** repl then reconnects without a word; another kernel is announced. */
static int connected(Repl *R, int quiet) {
  int was_open = R->k.fd >= 0;
  if (kclient_alive(&R->k)) return 1;
  if (!was_open) return reconnect(R, quiet);
  if (reconnect(R, 1)) return 1;
  if (!quiet) {
    say("the kernel for %s closed the connection (did it stop or restart?)", R->dir);
    if (R->k.err[0]) say("%s", R->k.err);
  }
  return 0;
}

/* Send req (stolen) and return the reply, or NULL after a message.  A
** request that could not be sent (the kernel had closed the connection) is
** sent again once on a new connection; one that was sent is never resent. */
static json_t *request(Repl *R, json_t *req, int quiet) {
  if (!req) {
    say("cannot encode the request (is the text valid UTF-8?)");
    return NULL;
  }
  json_t *rep = NULL;
  int rc = KCLIENT_UNSENT;
  interrupted = 0;
  for (int attempt = 0; attempt < 2 && rc == KCLIENT_UNSENT; attempt++) {
    if (!connected(R, quiet)) break;
    json_incref(req);
    rc = kclient_call(&R->k, req, &rep, &interrupted);
  }
  const char *key = json_string_value(json_object_get(req, "key"));
  if (rc == KCLIENT_INTERRUPTED && key && !quiet) {
    /* a transaction: Ctrl-C stops it (an interrupt when it can pause, else
    ** a cancel) and its reply (the pause, or cancelled) is awaited */
    interrupted = 0;
    char err[600];
    const char *op;
    json_t *s = kclient_stop_keyed(R->dir, key, &op, err, sizeof err);
    if (R->tty) fputc('\n', stdout);  /* after the ^C */
    if (!s)
      say("cannot stop it: %s", err);
    else if (json_is_true(json_object_get(s, "ok")))
      say("%s attempt %lld (Ctrl-C again to stop waiting)", !strcmp(op, "interrupt") ? "interrupting" : "cancelling",
          (long long)kclient_int(s, "attempt"));
    else
      say("%s: %s (Ctrl-C again to stop waiting)", kclient_str(s, "code"), kclient_str(s, "message"));
    json_decref(s);
    rc = kclient_await(&R->k, &rep, &interrupted);
  }
  json_decref(req);
  if (rc == KCLIENT_OK) return rep;
  if (quiet) return NULL;
  if (rc == KCLIENT_INTERRUPTED && R->tty) fputc('\n', stdout);  /* after the ^C */
  if (rc == KCLIENT_INTERRUPTED)
    say("interrupted: no longer waiting; the kernel still has the request (:status, :observe)");
  else if (rc == KCLIENT_NO_REPLY)
    say("the kernel for %s closed the connection before it answered; the request may or may not have "
        "run (:observe shows the world)", R->dir);
  return NULL;
}

/* Ask for the kernel's generation and state.  1 when known. */
static int refresh(Repl *R, int quiet) {
  R->known = 0;
  json_t *r = request(R, json_pack("{s:s}", "op", "status"), quiet);
  if (!r) return 0;
  R->known = json_is_true(json_object_get(r, "ok"));
  R->gen = kclient_int(r, "generation");
  snprintf(R->state, sizeof R->state, "%s", kclient_str(r, "state"));
  json_decref(r);
  return R->known;
}

/* ---------------------------------------------------------- replies */

static void print_error(json_t *r) {
  printf("%s: %s\n", kclient_str(r, "code"), kclient_str(r, "message"));
}

/* After a pause's menu: how to answer it. */
static void pause_hint(void) {
  printf("type a restart's number (and its arguments) to continue with it, :abort to leave this level;\n"
         "forms you type now are repairs inside the pause (:help lists the debugger's commands)\n");
}

/* The pause last seen: its menu, level and backtrace (p: borrowed; NULL:
** none is known). */
static void pause_set(Repl *R, json_t *p) {
  json_t *old = R->pause;
  R->pause = json_is_object(p) ? json_incref(p) : NULL;
  json_decref(old);
}

/* A pause as a Lisp listener's debugger shows it: the condition, the level,
** each restart by number (its id and the arguments it takes after it), the
** innermost frames. */
static void print_pause(Repl *R, json_t *p) {
  pause_set(R, p);
  json_int_t level = kclient_int(p, "level");
  int back = !strcmp(kclient_str(p, "refusal"), "aborted");  /* a level above was left */
  printf("%s level %" JSON_INTEGER_FORMAT " (generation %" JSON_INTEGER_FORMAT "): %s: %s\n",
         back ? "back at" : "debugger entered at", level, kclient_int(p, "generation"),
         kclient_str(p, "condition_type"), kclient_str(p, "report"));
  if (level > 1) printf("(an error inside a repair; :abort returns to level %" JSON_INTEGER_FORMAT ")\n", level - 1);
  json_t *rs = json_object_get(p, "restarts"), *r;
  size_t i;
  if (json_array_size(rs)) printf("restarts:\n");
  json_array_foreach(rs, i, r) {
    const char *ll = kclient_str(r, "lambda_list"), *name = kclient_str(r, "name");
    char lv[16] = "";
    if (level > 1) snprintf(lv, sizeof lv, "%" JSON_INTEGER_FORMAT "] ", kclient_int(r, "level"));
    printf("  %zu: %s[%s] %s  (%s%s%s)\n", i, lv, *name ? name : "unnamed", kclient_str(r, "report"),
           kclient_str(r, "id"), *ll && strcmp(ll, "()") ? ", takes " : "", *ll && strcmp(ll, "()") ? ll : "");
  }
  const char *bt = kclient_str(p, "backtrace");
  int lines = 0;
  for (const char *c = bt; *c && lines < 5; lines++) {  /* the innermost frames, with their locals */
    size_t n = strcspn(c, "\n"), k;
    printf("%s%.*s\n", lines ? "  " : "backtrace (:bt shows it all):\n  ", (int)n, c);
    json_t *l;
    json_array_foreach(json_object_get(json_array_get(json_object_get(p, "frames"), (size_t)lines), "locals"), k, l)
      printf("      %s = %s\n", kclient_str(l, "name"), kclient_str(l, "value"));
    c += n + (c[n] == '\n');
  }
  pause_hint();
}

/* The pause the world is in now (R->pause, asked for when not known);
** NULL when none. */
static json_t *pause_now(Repl *R) {
  if (R->pause) return R->pause;
  json_t *r = request(R, json_pack("{s:s, s:i}", "op", "observe", "budget", 4096), 1);
  if (r && json_is_true(json_object_get(r, "ok")))
    pause_set(R, json_object_get(json_object_get(r, "view"), "pause"));
  json_decref(r);
  return R->pause;
}

/* A reply's values, each on a line of its own (as a listener prints them);
** "; No values" for none.  prefix before each. */
static void print_values(json_t *r, const char *prefix) {
  json_t *vs = json_object_get(r, "values"), *v;
  size_t i;
  if (json_is_array(vs)) {
    if (!json_array_size(vs)) printf("%s; No values\n", prefix);
    json_array_foreach(vs, i, v) printf("%s%s\n", prefix, json_is_string(v) ? json_string_value(v) : "");
    return;
  }
  v = json_object_get(r, "value");
  printf("%s", prefix);
  fwrite(json_string_value(v) ? json_string_value(v) : "", 1, json_string_length(v), stdout);
  fputc('\n', stdout);
}

/* The reply to a call or an act: output, then the values (and the revision
** it published), the pause and its menu, or the error. */
static void print_reply(Repl *R, json_t *r) {
  render_output(stdout, r);
  json_t *p = json_object_get(r, "pause");
  int ok = json_is_true(json_object_get(r, "ok"));
  if (ok && json_is_object(p)) {
    if (json_object_get(r, "value")) {  /* a repair's value: the same pause */
      print_values(r, "repair value: ");
      pause_set(R, p);
      return;
    }
    print_pause(R, p);
    return;
  }
  if (!ok) {
    print_error(r);
    if (json_is_object(p)) print_pause(R, p);
    else pause_set(R, NULL);
    if (!strcmp(kclient_str(r, "code"), "stale"))
      printf("generation is now %" JSON_INTEGER_FORMAT "\n", kclient_int(r, "generation"));
    return;
  }
  pause_set(R, NULL);
  print_values(r, "");
  json_t *ch = json_object_get(r, "changes");
  if (json_array_size(ch)) {
    printf("; revision %" JSON_INTEGER_FORMAT ":", kclient_int(r, "revision"));
    size_t i;
    json_t *c;
    json_array_foreach(ch, i, c)
      printf("%s %s %s%s", i ? "," : "", kclient_str(c, "kind"), kclient_str(c, "name"),
             json_is_true(json_object_get(c, "removed")) ? " (removed)" : "");
    printf("\n");
  }
}

/* ------------------------------------------------------- operations */

static void show_observe(Repl *R) {
  json_t *r = request(R, json_pack("{s:s}", "op", "observe"), 0);
  if (!r) return;
  if (!json_is_true(json_object_get(r, "ok"))) print_error(r);
  else if (render_view(stdout, json_object_get(r, "view"), NULL)) pause_hint();
  if (json_is_true(json_object_get(r, "ok"))) pause_set(R, json_object_get(json_object_get(r, "view"), "pause"));
  json_decref(r);
}

static void run_act(Repl *R, json_t *action);

/* A form: an application call that pauses on an unhandled error (unless
** --on-error fail); while the world is paused, a repair inside the pause,
** as a form typed in a Lisp debugger is evaluated there. */

/* req with a fresh idempotency key: what Ctrl-C names to stop it. */
static json_t *keyed(json_t *req) {
  char key[33];
  kclient_fresh_key(key);
  if (req) json_object_set_new(req, "key", json_string(key));
  return req;
}

/* Line and column (from 1, the column in characters) of byte at of the
** entry being read, as the kernel's reader counts them. */
static void entry_where(const Repl *R, size_t at, long *line, long *col) {
  *line = R->entry_line > 0 ? R->entry_line : 1;
  *col = 1;
  for (size_t i = 0; i < at && i < R->len; i++) {
    if (R->text[i] == '\n') ++*line, *col = 1;
    else if (((unsigned char)R->text[i] & 0xC0) != 0x80) ++*col;
  }
}

/* Where src, a form of the entry being read, begins in it: the kernel
** places its reader errors there ("<input>:LINE:COLUMN: ..."). */
static json_t *entry_origin(const Repl *R, const char *src) {
  long line, col;
  entry_where(R, src >= R->text && src <= R->text + R->len ? (size_t)(src - R->text) : 0, &line, &col);
  return json_pack("{s:i, s:i}", "line", (json_int_t)line, "column", (json_int_t)col);
}

static void run_call(Repl *R, const char *src, size_t n) {
  if (!refresh(R, 0)) return;
  if (!strcmp(R->state, "paused")) {
    run_act(R, json_pack("{s:s, s:s%, s:o}", "type", "evaluate", "source", src, n, "origin", entry_origin(R, src)));
    return;
  }
  /* keyed (Ctrl-C names it by its key), and cancelled should the repl go */
  json_t *r = request(R, keyed(json_pack("{s:s, s:s%, s:s, s:b, s:s, s:o}", "op", "call", "source", src, n,
                                         "on_error", R->on_error_fail ? "fail" : "pause", "listening", 1,
                                         "on_disconnect", "cancel", "origin", entry_origin(R, src))), 0);
  if (!r) return;
  print_reply(R, r);
  if (!json_is_true(json_object_get(r, "ok"))) render_diagnosis(stdout, json_object_get(r, "diagnosis"));
  json_decref(r);
}

/* An act at the kernel's current generation; action is stolen. */
static void run_act(Repl *R, json_t *action) {
  if (!action) {
    say("cannot encode the request (is the text valid UTF-8?)");
    return;
  }
  if (!refresh(R, 0)) { json_decref(action); return; }
  json_t *r = request(R, keyed(json_pack("{s:s, s:I, s:o}", "op", "act", "generation", R->gen, "action", action)),
                      0);
  if (!r) return;
  print_reply(R, r);
  json_decref(r);
}

/* The restart numbered k in the pause's menu (its id into id), 1; 0 after
** a message. */
static int restart_numbered(Repl *R, long k, char *id, size_t n) {
  json_t *p = pause_now(R);
  if (!p) {
    printf("nothing is paused: a number chooses a restart only in the debugger\n");
    return 0;
  }
  json_t *r = json_array_get(json_object_get(p, "restarts"), (size_t)k);
  if (k < 0 || !r) {
    printf("no restart %ld: the menu has %zu (0 to %zu)\n", k, json_array_size(json_object_get(p, "restarts")),
           json_array_size(json_object_get(p, "restarts")) ? json_array_size(json_object_get(p, "restarts")) - 1 : 0);
    return 0;
  }
  snprintf(id, n, "%s", kclient_str(r, "id"));
  return 1;
}

/* A frame number of the pause at *args (advanced past it): 1, or 0 after
** a message. */
static int frame_arg(Repl *R, char **args, int *frame, const char *usage) {
  char *e;
  long k = strtol(*args, &e, 10);
  if (e == *args || (*e && !isspace((unsigned char)*e)) || k < 0 || k > 1000) {
    printf("usage: %s\n", usage);
    return 0;
  }
  if (!pause_now(R)) {
    printf("nothing is paused: frames exist only in the debugger\n");
    return 0;
  }
  *frame = (int)k;
  while (isspace((unsigned char)*e) && *e != '\n') e++;
  *args = e;
  return 1;
}

/* :locals [N] — a frame's arguments and locals (default frame 0). */
static void show_locals(Repl *R, char *args) {
  int frame = 0;
  while (isspace((unsigned char)*args)) args++;
  if (*args && !frame_arg(R, &args, &frame, ":locals [N]")) return;
  json_t *p = pause_now(R);
  if (!p) {
    printf("nothing is paused\n");
    return;
  }
  json_t *fr = json_array_get(json_object_get(p, "frames"), (size_t)frame), *v;
  if (!fr) {
    printf("this pause has no frame %d (:bt lists them)\n", frame);
    return;
  }
  size_t i;
  printf("%d: (%s", frame, kclient_str(fr, "function"));
  json_array_foreach(json_object_get(fr, "args"), i, v) printf(" %s", json_string_value(v) ? json_string_value(v) : "");
  printf(")\n");
  if (!json_array_size(json_object_get(fr, "locals"))) printf("  (no locals)\n");
  json_array_foreach(json_object_get(fr, "locals"), i, v)
    printf("  %s = %s\n", kclient_str(v, "name"), kclient_str(v, "value"));
}

/* :continue — the innermost level's CONTINUE restart. */
static int continue_restart(Repl *R, char *id, size_t n) {
  json_t *p = pause_now(R), *r;
  size_t i;
  if (!p) {
    printf("nothing is paused\n");
    return 0;
  }
  json_array_foreach(json_object_get(p, "restarts"), i, r)
    if (kclient_int(r, "level") == kclient_int(p, "level") && !strcmp(kclient_str(r, "name"), "CONTINUE")) {
      snprintf(id, n, "%s", kclient_str(r, "id"));
      return 1;
    }
  printf("this level has no CONTINUE restart: choose one by its number, or :abort\n");
  return 0;
}

/* NAME as the reader would read it: folded to upper case unless written
** with |...|, "..." or \ (then exactly as typed). */
static void fold_name(char *s) {
  if (strpbrk(s, "|\"\\")) return;
  for (; *s; s++) *s = (char)toupper((unsigned char)*s);
}

static void run_inspect(Repl *R, char *args) {
  char *kind = strtok(args, WS), *name = strtok(NULL, WS);
  if (kind && !name) name = kind, kind = NULL;   /* a name alone: the first entry of that name, whatever its kind */
  if (!name || strtok(NULL, WS) || (kind && jiti_entry_kind_parse(kind) < 0)) {
    char kinds[512];
    render_entry_kinds(kinds, sizeof kinds, " or ");
    printf("usage: :inspect [KIND] NAME  (KIND: %s)\n", kinds);
    return;
  }
  fold_name(name);
  json_t *req = json_pack("{s:s, s:s}", "op", "inspect", "name", name);
  if (req && kind) json_object_set_new(req, "kind", json_string(kind));
  json_t *r = request(R, req, 0);
  if (!r) return;
  if (!json_is_true(json_object_get(r, "ok"))) {
    print_error(r);
  } else {
    json_t *e = json_object_get(r, "entry");
    printf("%s %s\nhash %s\n%s\n", kclient_str(e, "kind"), kclient_str(e, "name"), kclient_str(e, "hash"),
           kclient_str(e, "text"));
  }
  json_decref(r);
}

/* A count member that may be a number or a list. */
static json_int_t count_of(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_array(v) ? (json_int_t)json_array_size(v) : json_integer_value(v);
}

static void run_history(Repl *R, char *args) {
  uint64_t n = 10;
  char *a = strtok(args, WS);
  if (a && (!opts_count(a, &n) || n == 0 || n > 100000 || strtok(NULL, WS))) {
    printf("usage: :history [N]  (the last N revisions, default 10)\n");
    return;
  }
  json_t *r = request(R, json_pack("{s:s, s:I}", "op", "history", "limit", (json_int_t)n), 0);
  if (!r) return;
  if (!json_is_true(json_object_get(r, "ok"))) {
    print_error(r);
    json_decref(r);
    return;
  }
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(r, "revisions"), i, v) {
    char when[40];
    json_t *t = json_object_get(v, "time");
    if (json_is_integer(t)) storeio_iso_time((int64_t)json_integer_value(t), when, sizeof when);
    else snprintf(when, sizeof when, "%s", json_is_string(t) ? json_string_value(t) : "-");
    json_int_t rev = kclient_int(v, "revision"), parent = kclient_int(v, "parent");
    const char *summary = kclient_str(v, "summary");
    printf("%-5" JSON_INTEGER_FORMAT " %s  %-12s g%-5" JSON_INTEGER_FORMAT " +%" JSON_INTEGER_FORMAT
           " -%" JSON_INTEGER_FORMAT "  %s", rev, when, kclient_str(v, "kind"), kclient_int(v, "generation"),
           count_of(v, "added"), count_of(v, "removed"), *summary ? summary : "-");
    if (rev > 1 && parent != rev - 1) printf(" (parent %" JSON_INTEGER_FORMAT ")", parent);
    printf("\n");
  }
  if (!json_array_size(json_object_get(r, "revisions"))) printf("no revisions\n");
  json_decref(r);
}

static void print_help(void) {
  char kinds[512];
  render_entry_kinds(kinds, sizeof kinds, " or ");
  printf("FORM                 run a Lisp form as an application call (it may span lines;\n"
         "                     several on a line run in turn); an unhandled error pauses\n"
         "                     it (the debugger); while paused, a form is a repair\n"
         "                     inside the pause\n"
         "N [ARGS]             while paused: continue with restart number N of the menu\n"
         ":continue            while paused: the innermost level's CONTINUE restart\n"
         ":bt                  while paused: the whole backtrace\n"
         ":locals [N]          while paused: frame N's arguments and locals (default 0)\n"
         ":frame N FORM        while paused: a repair evaluated in frame N (it reads and\n"
         "                     setqs the frame's locals)\n"
         ":return N [VALUE..]  while paused: frame N returns the values (each evaluated)\n"
         ":restart-frame N     while paused: call frame N's function again with its\n"
         "                     arguments (after a redefinition, the new one)\n"
         ":act FORM            an action: evaluate FORM at the current generation (a new\n"
         "                     transaction that may pause, or a repair inside the pause)\n"
         ":resume ID [ARGS]    continue the pause with restart ID of its menu (ARGS: its\n"
         "                     arguments as written in a call, each form evaluated)\n"
         ":abort               leave the innermost pause level (at level 1 the paused\n"
         "                     transaction ends and what it did is restored)\n"
         ":observe             show the world (and, while paused, the restart menu)\n"
         ":status              show the kernel's state\n"
         ":inspect [KIND] NAME one entry in full: the first of that name, or of that\n"
         "                     kind (NAME folded to upper case unless written with\n"
         "                     |...|, \"...\" or \\)\n"
         ":history [N]         the last N revisions (default 10)\n"
         ":help                this list\n"
         ":quit                leave (also Ctrl-D)\n"
         "A line starting with ':' is a command; to evaluate a keyword write (values :k).\n"
         "Entry kinds: %s.\n", kinds);
}

/* ------------------------------------------------------------ input */

static void pend_reset(Repl *R) {
  R->len = R->form_off = 0;
  R->kind = PEND_CALL;
  R->restart[0] = 0;
}

static void pend_add(Repl *R, const char *s, size_t n) {
  if (R->len + n + 2 > R->cap) {
    size_t cap = R->cap ? R->cap : 256;
    while (cap < R->len + n + 2) cap *= 2;
    char *p = realloc(R->text, cap);
    if (!p) { say("out of memory"); exit(EXIT_FAIL); }
    R->text = p;
    R->cap = cap;
  }
  memcpy(R->text + R->len, s, n);
  R->len += n;
  if (!n || s[n - 1] != '\n') R->text[R->len++] = '\n';
  R->text[R->len] = 0;
}

static char *prompt_fn(EditLine *el) {
  Repl *R = NULL;
  el_get(el, EL_CLIENTDATA, &R);
  return R ? R->prompt : "> ";
}

static void make_prompt(Repl *R) {
  if (R->len) {  /* a continuation line: dots as wide as the prompt */
    size_t w = strlen(R->prompt);
    if (w < 5 || w >= sizeof R->prompt) w = 5;
    memset(R->prompt, ' ', w - 5);
    memcpy(R->prompt + w - 5, "...> ", 6);
    return;
  }
  refresh(R, 1);  /* the world may have moved on while we waited */
  if (R->k.fd < 0) {
    snprintf(R->prompt, sizeof R->prompt, "jiti (no kernel)> ");
  } else if (!R->known) {
    snprintf(R->prompt, sizeof R->prompt, "jiti> ");
  } else {
    char st[48];
    snprintf(st, sizeof st, "%s", R->state);
    if (!strcmp(st, "paused")) {  /* as a Lisp debugger's prompt: the level */
      json_t *p = pause_now(R);
      snprintf(st, sizeof st, "PAUSED %" JSON_INTEGER_FORMAT "]", p ? kclient_int(p, "level") : (json_int_t)1);
    } else {
      pause_set(R, NULL);
    }
    snprintf(R->prompt, sizeof R->prompt, "jiti g%" JSON_INTEGER_FORMAT " %s> ", R->gen, st);
  }
}

/* While the prompt waits for a key, the world is watched (a status a
** second): when another client pauses it or its pause ends, a notice is
** printed above a fresh prompt, so what is typed next goes where the prompt
** says; a new generation only redraws the prompt. */
#define FOLLOW_MS 1000

static void follow_world(Repl *R) {
  const LineInfo *li = el_line(R->el);
  if (R->len || !li || li->lastchar != li->buffer) return;   /* the operator is typing: leave the line alone */
  char was[32];
  json_int_t gen = R->gen;
  int known = R->known;
  snprintf(was, sizeof was, "%s", R->state);
  if (!refresh(R, 1)) return;
  int paused = !strcmp(R->state, "paused"), was_paused = known && !strcmp(was, "paused");
  if (known && gen == R->gen && !strcmp(was, R->state)) return;
  if (known && paused != was_paused) {
    printf("\r\033[K");
    if (paused) {
      pause_set(R, NULL);
      json_t *p = pause_now(R);
      printf("(the world was paused by another client at generation %" JSON_INTEGER_FORMAT ": %s: %s;\n"
             " :observe shows the pause; forms you type now are repairs inside it, :abort ends it)\n",
             R->gen, p ? kclient_str(p, "condition_type") : "?", p ? kclient_str(p, "report") : "?");
    } else {
      printf("(the pause ended: the world is %s at generation %" JSON_INTEGER_FORMAT ")\n", R->state, R->gen);
    }
    fflush(stdout);
  }
  make_prompt(R);
  el_set(R->el, EL_REFRESH);
}

/* libedit's read of one character, waiting at most FOLLOW_MS at a time to
** look at the world (follow_world); a UTF-8 sequence is decoded here. */
static int getc_following(EditLine *el, wchar_t *wc) {
  Repl *R = NULL;
  el_get(el, EL_CLIENTDATA, &R);
  mbstate_t st;
  memset(&st, 0, sizeof st);
  for (;;) {
    struct pollfd pf = {.fd = STDIN_FILENO, .events = POLLIN};
    int r = poll(&pf, 1, FOLLOW_MS);
    if (r < 0) return -1;   /* EINTR: Ctrl-C, as libedit's own read says it */
    if (r == 0) {
      if (R) follow_world(R);
      continue;
    }
    char c;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0) return -1;
    if (n == 0) return 0;
    wchar_t w;
    size_t k = mbrtowc(&w, &c, 1, &st);
    if (k == (size_t)-2) continue;   /* more bytes of the character to come */
    if (k == (size_t)-1) {
      memset(&st, 0, sizeof st);
      w = (unsigned char)c;
    }
    *wc = w;
    return 1;
  }
}

/* Tab: the symbol before the cursor (NAME, :NAME, PKG:NAME, PKG::NAME)
** completed from the running world through the kernel's complete request:
** one candidate is inserted whole (and a space after a symbol), several
** their longest common beginning, or, when that adds nothing, are listed
** under the line.  Nothing comes back while a transaction is paused. */
static unsigned char complete_key(EditLine *el, int ch) {
  (void)ch;
  Repl *R = NULL;
  el_get(el, EL_CLIENTDATA, &R);
  const LineInfo *li = el_line(el);
  const char *start = li->cursor;
  while (start > li->buffer && !delimiter(start[-1])) start--;
  size_t n = (size_t)(li->cursor - start);
  char word[257];
  if (!R || !n || n >= sizeof word) return CC_ERROR;
  memcpy(word, start, n);
  word[n] = 0;
  json_t *r = request(R, json_pack("{s:s, s:s}", "op", "complete", "text", word), 1);
  json_t *c = json_object_get(r, "completions");
  size_t k = json_array_size(c), common = k ? json_string_length(json_array_get(c, 0)) : 0;
  const char *first = k ? json_string_value(json_array_get(c, 0)) : "";
  for (size_t i = 1; i < k; i++) {   /* the longest beginning they share */
    const char *s = json_string_value(json_array_get(c, i));
    size_t j = 0;
    while (j < common && s[j] && s[j] == first[j]) j++;
    common = j;
  }
  unsigned char rc = CC_ERROR;
  if (k && (k == 1 || common > n)) {
    char *ins = strndup(first, common);
    if (ins) {
      el_deletestr(el, (int)n);   /* as the world spells it (typed upper case comes back lower) */
      el_insertstr(el, ins);
      if (k == 1 && common && ins[common - 1] != ':') el_insertstr(el, " ");
      rc = CC_REFRESH;
    }
    free(ins);
  } else if (k > 1) {
    printf("\n");
    size_t col = 0;
    for (size_t i = 0; i < k; i++) {
      const char *s = json_string_value(json_array_get(c, i));
      if (col && col + strlen(s) + 2 > 78) printf("\n"), col = 0;
      col += (size_t)printf("%s  ", s);
    }
    printf("\n");
    fflush(stdout);
    rc = CC_REDISPLAY;
  }
  json_decref(r);
  return rc;
}

/* Read one line into *line (its length in *n).  1 a line; 0 end of input;
** -1 interrupted (Ctrl-C). */
static int read_line(Repl *R, const char **line, size_t *n) {
  if (!R->tty) {
    ssize_t r = getline(&R->line, &R->linecap, stdin);
    if (r < 0) return 0;
    *line = R->line;
    *n = (size_t)r;
    return 1;
  }
  make_prompt(R);
  interrupted = 0;
  int count = 0;
  const char *s = el_gets(R->el, &count);
  if (interrupted || (!s && count < 0 && errno == EINTR)) return -1;
  if (!s || count <= 0) return 0;
  *line = s;
  *n = (size_t)count;
  return 1;
}

/* ---------------------------------------------------------- history */

/* Open (creating it) the history file and make sure only its owner can
** read it; load it.  Without a usable file the session keeps no history. */
static void history_open(Repl *R) {
  HistEvent ev;
  R->hist = history_init();
  if (!R->hist) return;
  history(R->hist, &ev, H_SETSIZE, REPL_HISTORY_SIZE);
  history(R->hist, &ev, H_SETUNIQUE, 1);
  const char *env = getenv("JITI_REPL_HISTORY");
  if (env && !*env) return;  /* set and empty: no history file */
  if (env) {
    R->histfile = strdup(env);
  } else if (asprintf(&R->histfile, "%s/%s", R->dir, REPL_HISTORY_FILE) < 0) {
    R->histfile = NULL;
  }
  if (!R->histfile) return;
  int fd = open(R->histfile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    say("cannot use %s as the history file: %s; this session keeps no history", R->histfile,
        fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    free(R->histfile);
    R->histfile = NULL;
    return;
  }
  if ((st.st_mode & 07777) != 0600) {
    if (fchmod(fd, 0600) != 0) {
      say("cannot make the history file %s private (mode 0600): %s; this session keeps no history",
          R->histfile, strerror(errno));
      close(fd);
      free(R->histfile);
      R->histfile = NULL;
      return;
    }
    if (st.st_mode & 077)
      say("the history file %s was not private (mode %04o); it is now 0600", R->histfile,
          (unsigned)(st.st_mode & 07777));
  }
  close(fd);
  if (st.st_size > 0) history(R->hist, &ev, H_LOAD, R->histfile);
}

/* Rewrite the history file with the kept entries. */
static void history_save(Repl *R) {
  if (!R->histfile) return;
  HistEvent ev;
  int fd = open(R->histfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  int bad = !f || fchmod(fd, 0600) != 0 || history(R->hist, &ev, H_SAVE_FP, f) < 0;
  if (f) bad |= fclose(f) != 0;
  else if (fd >= 0) close(fd);
  if (bad && !R->hist_warned) {
    say("cannot write the history file %s: %s", R->histfile, strerror(errno));
    R->hist_warned = 1;
  }
}

static void history_add(Repl *R) {
  if (!R->hist) return;
  size_t n = R->len;
  while (n && (R->text[n - 1] == '\n' || R->text[n - 1] == '\r')) n--;
  char save = R->text[n];
  R->text[n] = 0;
  HistEvent ev;
  if (n) history(R->hist, &ev, H_ENTER, R->text);
  R->text[n] = save;
  history_save(R);
}

/* ---------------------------------------------------------- session */

/* A complete entry: run what it is for. */
static void run_entry(Repl *R) {
  const char *form = R->text + R->form_off;
  size_t n = R->len - R->form_off;
  while (n && isspace((unsigned char)form[n - 1])) n--;
  if (!jtext_utf8_valid(form, n)) {
    printf("the input is not valid UTF-8; nothing was sent\n");
    return;
  }
  switch (R->kind) {
  case PEND_CALL:
    run_call(R, form, n);
    break;
  case PEND_ACT:
    run_act(R, json_pack("{s:s, s:s%}", "type", "evaluate", "source", form, n));
    break;
  case PEND_FRAME_EVAL:
    run_act(R, json_pack("{s:s, s:s%, s:i}", "type", "evaluate", "source", form, n, "frame", R->frame));
    break;
  case PEND_RESUME:
  case PEND_RETURN: {
    json_t *a = R->kind == PEND_RESUME ? json_pack("{s:s, s:s}", "type", "resume", "restart_id", R->restart)
                                       : json_pack("{s:s, s:i}", "type", "return-from-frame", "frame", R->frame);
    if (a && n) {  /* the arguments as written: each form evaluated */
      size_t len = n + 16;
      char *e = malloc(len);
      if (e) snprintf(e, len, "(list\n%.*s\n)", (int)n, form);
      json_object_set_new(a, "arguments", json_string(e ? e : ""));
      free(e);
    }
    run_act(R, a);
    break;
  }
  }
}

/* A colon command at the start of an entry (the text holds its line).
** Returns 1 to quit, 0 when it is done, 2 when it continues as a form
** (R->kind, R->form_off set). */
static int command(Repl *R) {
  char *s = R->text;
  while (isspace((unsigned char)*s)) s++;
  s++;  /* the ':' */
  char *name = s;
  while (*s && !isspace((unsigned char)*s)) s++;
  size_t nlen = (size_t)(s - name);
  while (*s && isspace((unsigned char)*s)) s++;
  char *args = s;  /* up to the end of the text, newline included */
#define IS(w) (nlen == strlen(w) && !strncmp(name, w, nlen))
  if (IS("quit") || IS("q") || IS("exit")) return 1;
  if (IS("help") || IS("h") || IS("?")) {
    print_help();
  } else if (IS("observe")) {
    show_observe(R);
  } else if (IS("status")) {
    json_t *r = request(R, json_pack("{s:s}", "op", "status"), 0);
    if (r) render_status(stdout, r);
    json_decref(r);
  } else if (IS("abort")) {
    run_act(R, json_pack("{s:s}", "type", "abort"));
  } else if (IS("bt") || IS("backtrace")) {
    json_t *p = pause_now(R);
    if (!p) printf("nothing is paused\n");
    else if (!*kclient_str(p, "backtrace")) printf("no frames: the error came from no call of the program's own\n");
    else printf("%s", kclient_str(p, "backtrace"));
  } else if (IS("locals")) {
    show_locals(R, args);
  } else if (IS("frame")) {  /* :frame N FORM: a repair in frame N's environment */
    if (!frame_arg(R, &args, &R->frame, ":frame N FORM  (FORM evaluated in frame N: it reads and setqs its locals)"))
      return 0;
    if (!*args || *args == '\n') { printf("usage: :frame N FORM\n"); return 0; }
    R->kind = PEND_FRAME_EVAL;
    R->form_off = (size_t)(args - R->text);
    return 2;
  } else if (IS("return")) {  /* :return N [VALUE ...]: frame N returns them */
    if (!frame_arg(R, &args, &R->frame, ":return N [VALUE ...]  (frame N returns the values, each form evaluated)"))
      return 0;
    R->kind = PEND_RETURN;
    R->form_off = (size_t)(args - R->text);
    return 2;
  } else if (IS("restart-frame")) {  /* :restart-frame N: call frame N's function again */
    int frame;
    if (!frame_arg(R, &args, &frame, ":restart-frame N  (frame N's function called again with its arguments)"))
      return 0;
    run_act(R, json_pack("{s:s, s:i}", "type", "restart-frame", "frame", frame));
  } else if (IS("continue")) {
    if (!continue_restart(R, R->restart, sizeof R->restart)) return 0;
    R->kind = PEND_RESUME;
    R->form_off = (size_t)(args - R->text);
    return 2;
  } else if (IS("act")) {
    if (!*args) { printf("usage: :act FORM\n"); return 0; }
    R->kind = PEND_ACT;
    R->form_off = (size_t)(args - R->text);
    return 2;
  } else if (IS("resume")) {
    char *id = args;
    while (*args && !isspace((unsigned char)*args)) args++;
    size_t idlen = (size_t)(args - id);
    if (!idlen || idlen >= sizeof R->restart) { printf("usage: :resume ID [ARGS]\n"); return 0; }
    memcpy(R->restart, id, idlen);
    R->restart[idlen] = 0;
    R->kind = PEND_RESUME;
    R->form_off = (size_t)(args - R->text);
    return 2;
  } else if (IS("inspect")) {
    run_inspect(R, args);
  } else if (IS("history")) {
    run_history(R, args);
  } else {
    printf("unknown command :%.*s (:help lists them; to evaluate a keyword write (values :k))\n",
           (int)nlen, name);
  }
#undef IS
  return 0;
}

static int session(Repl *R) {
  int status = EXIT_OK;
  for (;;) {
    const char *line;
    size_t n;
    int r = read_line(R, &line, &n);
    if (r < 0) {  /* Ctrl-C: drop the entry being typed */
      printf("\n");
      if (R->len) printf("(dropped the unfinished entry)\n");
      pend_reset(R);
      continue;
    }
    if (r == 0 && R->tty && R->len) {  /* Ctrl-D on a continuation line: the form goes, not the repl */
      printf("\n(dropped the unfinished entry)\n");
      pend_reset(R);
      continue;
    }
    if (r == 0) {
      if (R->len && form_state(R->text + R->form_off, R->len - R->form_off) == FORM_OPEN) {
        /* where the unfinished form began: the first thing after the forms sent */
        size_t at = R->form_off;
        for (;;) {
          while (at < R->len && isspace((unsigned char)R->text[at])) at++;
          if (at >= R->len || R->text[at] != ';') break;
          while (at < R->len && R->text[at] != '\n') at++;
        }
        long l0, c0, l1, c1;
        entry_where(R, at, &l0, &c0);
        entry_where(R, R->len, &l1, &c1);
        say("<input>:%ld:%ld: end of file inside a form opened at %ld:%ld (unbalanced parentheses or an open "
            "string); it was not sent", l1, c1, l0, c0);
        status = EXIT_FAIL;
      }
      if (R->tty) printf("\n");
      break;
    }
    int fresh = R->len == 0;
    R->lines++;
    if (fresh) R->entry_line = R->lines;
    pend_add(R, line, n);
    if (fresh) {
      const char *p = R->text;
      while (*p == ' ' || *p == '\t') p++;
      if (isdigit((unsigned char)*p) && R->pause) {  /* N [ARGS]: restart number N */
        char *e;
        long k = strtol(p, &e, 10);
        if (!*e || isspace((unsigned char)*e)) {
          if (!restart_numbered(R, k, R->restart, sizeof R->restart)) {
            history_add(R);
            pend_reset(R);
            continue;
          }
          R->kind = PEND_RESUME;
          R->form_off = (size_t)(e - R->text);
        }
      }
      if (*p == ':') {
        int c = command(R);
        if (c != 2) {  /* done, or quit */
          history_add(R);
          pend_reset(R);
          if (c == 1) break;
          fflush(stdout);
          continue;
        }
      }
    }
    int st = form_state(R->text + R->form_off, R->len - R->form_off);
    if (st == FORM_OPEN) continue;
    history_add(R);
    size_t end;
    /* several forms on a line: each runs in turn, as a listener reads them */
    while (R->kind == PEND_CALL && st == FORM_DONE &&
           form_scan(R->text + R->form_off, R->len - R->form_off, &end) == FORM_DONE && end &&
           form_state(R->text + R->form_off + end, R->len - R->form_off - end) == FORM_DONE) {
      size_t next = R->form_off + end;
      char save = R->text[next];
      R->text[next] = 0;
      size_t len = R->len;
      R->len = next;
      run_entry(R);
      R->len = len;
      R->text[next] = save;
      R->form_off = next;
      fflush(stdout);
    }
    if (st == FORM_DONE || R->kind == PEND_RESUME || R->kind == PEND_RETURN) run_entry(R);  /* no arguments */
    else if (R->kind == PEND_ACT) printf("usage: :act FORM\n");
    pend_reset(R);
    fflush(stdout);
  }
  fflush(stdout);
  return status;
}

static void repl_usage(FILE *out) {
  fprintf(out,
          "usage: jiti repl [--store DIR] [--on-error pause|fail]\n"
          "\n"
          "An interactive session with the store's running kernel.  Each Lisp form you type\n"
          "(over several lines until its parentheses balance; several on a line run in\n"
          "turn) runs as an application call; its output and values are printed.  An\n"
          "unhandled error pauses it, as a Lisp listener enters its debugger: the restarts\n"
          "are numbered and a number (with the restart's arguments after it) continues\n"
          "with one; forms typed while paused are repairs inside the pause, and an error\n"
          "in one opens the next level (the prompt shows it: 'jiti g14 PAUSED 2]> ');\n"
          ":abort leaves a level.  With --on-error fail an error ends the call instead and\n"
          "its diagnosis (the restarts it had, the backtrace) is printed.\n"
          "Commands (:help in the session):\n"
          "  N [ARGS], :continue, :bt, :abort       in the debugger\n"
          "  :locals [N], :frame N FORM, :return N [VALUE ...], :restart-frame N\n"
          "                                         a paused frame's locals; in, out of, again\n"
          "  :act FORM, :resume ID [ARGS]           act as a model would; answer a pause\n"
          "  :observe, :status                      the world, the kernel\n"
          "  :inspect [KIND] NAME, :history [N]     one entry in full, the last revisions\n"
          "  :help, :quit (or Ctrl-D)\n"
          "\n"
          "On a terminal: line editing and a history (libedit) kept in $JITI_REPL_HISTORY,\n"
          "else DIR/repl_history (mode 0600, the last %d entries; JITI_REPL_HISTORY set but\n"
          "empty: none); Ctrl-C drops the entry being typed; while a form runs it stops\n"
          "it (it is interrupted: it pauses, CONTINUE resumes it; one that cannot pause\n"
          "is cancelled) and the reply is awaited; a second Ctrl-C stops waiting (the\n"
          "kernel keeps the request).  Ctrl-D on a continuation line drops the form.\n"
          "Tab completes the symbol before the cursor from the running world (NAME,\n"
          ":KEYWORD, PKG:NAME, PKG::NAME; nothing while a transaction is paused).  The\n"
          "prompt follows the world: a pause made by another client, and its end, are\n"
          "shown as a notice and a new prompt.\n"
          "Otherwise lines are read as they come, without prompts or history.\n"
          "\n"
          "options:\n"
          "  --store DIR       the store directory (default: $JITI_STORE, else ./.jiti)\n"
          "  --on-error pause|fail  what an unhandled error in a form does (default: pause)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 at :quit or the end of input; 1 no kernel is running, or the\n"
          "input ended inside a form; 2 usage.\n",
          REPL_HISTORY_SIZE);
}

int cmd_repl(int argc, char **argv) {
  const char *dir = opts_default_store();
  int on_error_fail = 0;
  for (int i = 1; i < argc; i++) {
    char err[256];
    int r = opts_store(argc, argv, &i, &dir, err, sizeof err);
    if (r < 0) { fprintf(stderr, "jiti repl: %s\n", err); return EXIT_USAGE; }
    if (r) continue;
    if (!strcmp(argv[i], "--on-error")) {
      if (i + 1 >= argc || (strcmp(argv[i + 1], "fail") && strcmp(argv[i + 1], "pause"))) {
        fprintf(stderr, "jiti repl: --on-error needs pause (the default) or fail\n");
        return EXIT_USAGE;
      }
      on_error_fail = !strcmp(argv[++i], "fail");
      continue;
    }
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      repl_usage(stdout);
      return EXIT_OK;
    }
    fprintf(stderr, "jiti repl: unexpected argument '%s' (see 'jiti repl --help')\n", argv[i]);
    return EXIT_USAGE;
  }
  Repl R;
  memset(&R, 0, sizeof R);
  R.dir = dir;
  R.on_error_fail = on_error_fail;
  R.tty = isatty(STDIN_FILENO);
  kclient_init(&R.k, "repl", dir);
  if (R.tty) {
    setlocale(LC_CTYPE, "");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;  /* no SA_RESTART: a read or a wait is interrupted */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
  }
  if (!reconnect(&R, 0)) return EXIT_FAIL;
  if (R.tty) {
    history_open(&R);
    R.el = el_init("jiti", stdin, stdout, stderr);
    if (!R.el) {
      say("cannot set up line editing; reading plain lines");
      R.tty = 0;
    } else {
      el_set(R.el, EL_CLIENTDATA, (void *)&R);
      el_set(R.el, EL_PROMPT, prompt_fn);
      el_set(R.el, EL_EDITOR, "emacs");
      el_set(R.el, EL_SIGNAL, 1);
      el_set(R.el, EL_GETCFN, getc_following);
      /* the wide call: libedit keeps the strings as given (the narrow one
      ** keeps wide copies it never frees) */
      el_wset(R.el, EL_ADDFN, L"jiti-complete", L"complete a symbol from the running world", complete_key);
      el_set(R.el, EL_BIND, "^I", "jiti-complete", NULL);
      if (R.hist) el_set(R.el, EL_HIST, history, R.hist);
      el_source(R.el, NULL);  /* ~/.editrc */
    }
  }
  pend_reset(&R);
  int status = session(&R);
  if (R.el) el_end(R.el);
  if (R.hist) history_end(R.hist);
  free(R.histfile);
  json_decref(R.pause);
  free(R.text);
  free(R.line);
  kclient_close(&R.k);
  return status;
}
