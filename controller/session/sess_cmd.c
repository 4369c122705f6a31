/*
** sess_cmd.c — `jiti session`: its options, then one request (--request,
** or a task file's) or interactive requests (sess.h, docs/guide.md).
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "sess.h"
#include "engine.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: jiti session [--store DIR] [--model M | --scripted FILE | --chat [--model M]]\n"
    "                    [--request TEXT] [--goal FORM]... [--invariant FORM]... [--task FILE]\n"
    "                    [--budget N] [--max-tokens N] [--max-format-errors N] [--confirm] [--json]\n"
    "\n"
    "A model grows the world of the store's running kernel, one checked action at a time, until every\n"
    "goal holds.  Without --request (and without a task's request) requests are read line by line.\n"
    "\n");
  sess_mopt_usage(f);
  fprintf(f,
    "the task:\n"
    "  --request TEXT        what to do\n"
    "  --goal FORM           an expression that must return true when the request is done (repeatable)\n"
    "  --invariant FORM      a safety predicate added to the world before the first step (repeatable)\n"
    "  --task FILE           a request with its goals and invariants (Lisp or JSON; see docs/guide.md)\n"
    "limits:\n"
    "  --budget N            actions per request, invalid and stale ones included (default 20)\n"
    "  --max-tokens N        stop before a request that could take the tokens used past N (its input\n"
    "                        at least the last one's, its output --max-output-tokens or the most yet)\n"
    "  --max-format-errors N stop after N invalid responses in a row (default 3)\n"
    "  --prompt-budget N     tokens of prompt before older steps are summarised (default 24000)\n"
    "  --view-budget BYTES   entry text shown in each view (default 4096)\n"
    "output:\n"
    "  --json                one JSON object per step, and one at the end\n"
    "  --confirm             show each action and ask before sending it (y / n / edit)\n"
    "  --quiet               no step lines\n"
    "  --instructions        print the model's instructions and exit\n"
    "\n"
    "exit: 0 every goal holds (without goals: the model finished), 1 error (no kernel, the model API),\n"
    "2 usage, 3 the model finished or ran out with goals unmet, 4 budget spent, 5 --max-tokens reached,\n"
    "6 too many invalid responses, 130 interrupted.  Transcripts: jiti sessions.\n");
}

/* The session's own options that take a value. */
static int takes_value(const char *a) {
  static const char *const with[] = {"--request", "--goal", "--invariant", "--task", "--budget", "--max-tokens",
                                     "--max-format-errors", "--prompt-budget", "--view-budget", NULL};
  for (int i = 0; with[i]; i++)
    if (!strcmp(a, with[i])) return 1;
  return 0;
}

static int count_arg(const char *opt, const char *v, long lo, long hi, long *out) {
  return sess_count_arg("session", opt, v, lo, hi, out);
}

int cmd_session(int argc, char **argv) {
  sess_Options o;
  memset(&o, 0, sizeof o);
  model_options_init(&o.mopt);
  o.store = opts_default_store();
  o.budget = 20;
  o.max_format_errors = 3;
  o.prompt_budget = 24000;
  o.view_budget = 4096;
  int print_instructions = 0;
  const char *task = NULL;
  sess_ModelArgs ma;
  sess_mopt_init(&ma, &o.mopt);
  char *request = NULL;
  int status = SESS_USAGE;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    long n;
    char err[256];
    int r = opts_store(argc, argv, &i, &o.store, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "jiti session: %s\n", err);
      goto done;
    }
    if (r) continue;
    if ((r = sess_mopt_arg("session", argc, argv, &i, &ma)) < 0) goto done;
    if (r) continue;
    if (takes_value(a) && i + 1 >= argc) {
      fprintf(stderr, "jiti session: %s needs a value (see 'jiti session --help')\n", a);
      goto done;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      status = SESS_OK;
      goto done;
    } else if (!strcmp(a, "--request")) {
      free(request);
      request = strdup(argv[++i]);
    } else if (!strcmp(a, "--goal")) {
      sess_task_add_goal(&o.task, argv[++i]);
    } else if (!strcmp(a, "--invariant")) {
      sess_task_add_invariant(&o.task, NULL, argv[++i]);
    } else if (!strcmp(a, "--task")) {
      task = argv[++i];
    } else if (!strcmp(a, "--budget")) {
      if (!count_arg(a, argv[++i], 1, 100000, &n)) goto done;
      o.budget = (int)n;
    } else if (!strcmp(a, "--max-tokens")) {
      if (!count_arg(a, argv[++i], 1, 2000000000L, &n)) goto done;
      o.max_tokens = n;
    } else if (!strcmp(a, "--max-format-errors")) {
      if (!count_arg(a, argv[++i], 1, 1000, &n)) goto done;
      o.max_format_errors = (int)n;
    } else if (!strcmp(a, "--prompt-budget")) {
      if (!count_arg(a, argv[++i], 1000, 10000000, &n)) goto done;
      o.prompt_budget = n;
    } else if (!strcmp(a, "--view-budget")) {
      if (!count_arg(a, argv[++i], 1, 16 << 20, &n)) goto done;
      o.view_budget = n;
    } else if (!strcmp(a, "--confirm")) {
      o.confirm = 1;
    } else if (!strcmp(a, "--json")) {
      o.json = 1;
    } else if (!strcmp(a, "--quiet")) {
      o.quiet = 1;
    } else if (!strcmp(a, "--instructions")) {
      print_instructions = 1;
    } else {
      fprintf(stderr, "jiti session: %s '%s' (see 'jiti session --help')\n",
              a[0] == '-' ? "unknown option" : "unexpected argument", a);
      goto done;
    }
  }
  if (print_instructions) {
    char *t = sess_instructions();
    if (t) fputs(t, stdout);
    free(t);
    status = SESS_OK;
    goto done;
  }
  if (task) {
    char err[1024];
    if (sess_task_load(task, &o.task, err, sizeof err)) {
      fprintf(stderr, "jiti session: %s\n", err);
      goto done;
    }
  }
  if (request) {
    free(o.task.request);
    o.task.request = request;
    request = NULL;
  }
  int usage_error;
  if (!(o.model_spec = sess_mopt_spec("session", &ma, &usage_error))) {
    status = usage_error ? SESS_USAGE : SESS_FAIL;
    goto done;
  }
  o.interactive = !o.task.request;
  o.mopt.stream = ma.stream >= 0 ? ma.stream : isatty(STDOUT_FILENO) && !o.json;
  o.mopt.intr = &interrupted;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;   /* no SA_RESTART: waits are interrupted */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sess_UI *ui = sess_ui_new(&o);
  o.mopt.on_progress = sess_ui_progress;
  o.mopt.progress_ud = ui;
  o.mopt.on_retry = sess_ui_retry;
  kclient k;
  kclient_init(&k, "session", o.store);
  char err[1024];
  model *m = NULL;
  status = SESS_FAIL;
  if (!ui) goto close;
  if (kclient_connect(&k)) {
    fprintf(stderr, "jiti session: %s\n", k.err);
    goto close;
  }
  m = model_open(o.model_spec, &o.mopt, err, sizeof err);
  if (!m) {
    fprintf(stderr, "jiti session: %s\n", err);
    goto close;
  }
  /* a goal or invariant with a typo is found here, before a paid request */
  if ((status = sess_check_task(&k, &o.task, o.task.request, o.quiet || o.json)) != SESS_OK) goto close;
  status = SESS_FAIL;
  if (sess_add_invariants(&k, &o.task)) goto close;
  if (o.interactive)
    status = sess_interactive(&o, &k, m, ui, &interrupted);
  else
    status = sess_run_request(&o, &k, m, ui, o.task.request, &interrupted);
close:
  model_close(m);
  kclient_close(&k);
  sess_ui_free(ui);
done:
  free(request);
  free(o.model_spec);
  sess_task_free(&o.task);
  return status;
}
