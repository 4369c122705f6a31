/*
** sv_cmd.c — `jiti supervise`: its options, then the loop (supervise.h,
** docs/repair.md).
*/
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "sess.h"
#include "supervise.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: jiti supervise [--store DIR] [--model M | --scripted FILE | --chat [--model M]]\n"
    "                      [--scope function|world] [--attempts N] [--budget TOKENS]\n"
    "                      [--hourly-budget TOKENS] [--verify-timeout S] [--watch N]\n"
    "                      [--promote auto|manual] [--until-idle] [--json]\n"
    "\n"
    "Automatic repair: takes each incident of the store's running kernel (a failing call of a\n"
    "function 'jiti repair enable' selects) to a model, which answers repair, expected or\n"
    "insufficient_evidence.  A repair is verified by the kernel on a copy of the live world (the\n"
    "failed call again, every invariant, the recorded calls replayed) and applied when it passes;\n"
    "otherwise the model is told why and tries again.  Every exchange and verification is logged\n"
    "on the incident ('jiti incidents show N').  An operator's 'jiti heal' (a wrong value, no\n"
    "error) is an incident like any other.\n"
    "\n");
  sess_mopt_usage(f);
  fprintf(f,
    "repair:\n"
    "  --scope function      a repair may change the failing function only (the default)\n"
    "  --scope world         it may change other definitions too\n"
    "  --attempts N          verdicts per incident before it is rejected (default 3)\n"
    "  --budget TOKENS       tokens per incident (default: no limit)\n"
    "  --hourly-budget TOKENS  tokens per hour over all incidents (default: no limit)\n"
    "  --verify-timeout S    a verification's time limit (default: the kernel's)\n"
    "  --watch N             calls watched after a repair: more failures than before undo it\n"
    "                        (default 20; 0: none)\n"
    "  --promote auto        a repair that passes is permanent at once (the default)\n"
    "  --promote manual      it is live but tentative: 'jiti repairs' lists it, 'jiti promote N'\n"
    "                        keeps it, 'jiti reject N' undoes it; a kernel restart undoes it\n"
    "run:\n"
    "  --until-idle          exit once no incident is open (default: run until Ctrl-C)\n"
    "  --json                one JSON object per incident handled\n"
    "  --store DIR           the store directory (default: $JITI_STORE, else ./.jiti)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Stopping it (Ctrl-C, SIGTERM) cancels the incident it is working on.\n"
    "exit: 0 idle (--until-idle), 1 error (no kernel, the store), 2 usage, 130 stopped.\n");
}

int cmd_supervise(int argc, char **argv) {
  sv_Options o;
  memset(&o, 0, sizeof o);
  model_options_init(&o.mopt);
  o.mopt.actions = MACTION_VERDICT;
  o.store = opts_default_store();
  o.attempts = 3;
  o.watch = -1;
  sess_ModelArgs ma;
  sess_mopt_init(&ma, &o.mopt);
  int status = SV_USAGE;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char err[256];
    long n;
    int r = opts_store(argc, argv, &i, &o.store, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "jiti supervise: %s\n", err);
      goto done;
    }
    if (r) continue;
    if ((r = sess_mopt_arg("supervise", argc, argv, &i, &ma)) < 0) goto done;
    if (r) continue;
    int value = !strcmp(a, "--scope") || !strcmp(a, "--attempts") || !strcmp(a, "--budget") ||
                !strcmp(a, "--hourly-budget") || !strcmp(a, "--verify-timeout") || !strcmp(a, "--watch") ||
                !strcmp(a, "--promote");
    if (value && i + 1 >= argc) {
      fprintf(stderr, "jiti supervise: %s needs a value (see 'jiti supervise --help')\n", a);
      goto done;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      status = SV_OK;
      goto done;
    } else if (!strcmp(a, "--scope")) {
      const char *v = argv[++i];
      if (strcmp(v, "function") && strcmp(v, "world")) {
        fprintf(stderr, "jiti supervise: --scope is function or world, not '%s'\n", v);
        goto done;
      }
      o.scope_world = !strcmp(v, "world");
    } else if (!strcmp(a, "--promote")) {
      const char *v = argv[++i];
      if (strcmp(v, "auto") && strcmp(v, "manual")) {
        fprintf(stderr, "jiti supervise: --promote is auto or manual, not '%s'\n", v);
        goto done;
      }
      o.promote_manual = !strcmp(v, "manual");
    } else if (!strcmp(a, "--attempts")) {
      if (!sess_count_arg("supervise", a, argv[++i], 1, 100, &n)) goto done;
      o.attempts = (int)n;
    } else if (!strcmp(a, "--budget")) {
      if (!sess_count_arg("supervise", a, argv[++i], 1, 2000000000L, &n)) goto done;
      o.budget = n;
    } else if (!strcmp(a, "--hourly-budget")) {
      if (!sess_count_arg("supervise", a, argv[++i], 1, 2000000000L, &n)) goto done;
      o.hourly_budget = n;
    } else if (!strcmp(a, "--verify-timeout")) {
      if (!sess_seconds_arg("supervise", a, argv[++i], &o.verify_timeout_ms)) goto done;
      if (o.verify_timeout_ms > 3600000) {
        fprintf(stderr, "jiti supervise: --verify-timeout is at most 3600 seconds\n");
        goto done;
      }
    } else if (!strcmp(a, "--watch")) {
      if (!sess_count_arg("supervise", a, argv[++i], 0, 1000000, &o.watch)) goto done;
    } else if (!strcmp(a, "--until-idle")) {
      o.until_idle = 1;
    } else if (!strcmp(a, "--json")) {
      o.json = 1;
    } else {
      fprintf(stderr, "jiti supervise: %s '%s' (see 'jiti supervise --help')\n",
              a[0] == '-' ? "unknown option" : "unexpected argument", a);
      goto done;
    }
  }
  int usage_error;
  if (!(o.model_spec = sess_mopt_spec("supervise", &ma, &usage_error))) {
    status = usage_error ? SV_USAGE : SV_FAIL;
    goto done;
  }
  o.mopt.stream = ma.stream > 0;
  o.mopt.intr = &interrupted;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;   /* no SA_RESTART: waits are interrupted */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sv_Supervisor s;
  memset(&s, 0, sizeof s);
  s.o = &o;
  s.intr = &interrupted;
  kclient_init(&s.k, "supervise", o.store);
  kclient_init(&s.ev, "supervise", o.store);
  char err[1024];
  status = SV_FAIL;
  if (!(s.m = model_open(o.model_spec, &o.mopt, err, sizeof err))) {
    fprintf(stderr, "jiti supervise: %s\n", err);
  } else {
    status = sv_run(&s);
    if (status == SV_INTERRUPTED && !o.json) printf("stopped\n");
  }
  model_close(s.m);
  kclient_close(&s.k);
  kclient_close(&s.ev);
  free(s.queue);
  free(s.seen);
done:
  free(o.model_spec);
  return status;
}
