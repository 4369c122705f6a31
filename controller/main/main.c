/*
** main.c — the `jiti` command: the table of subcommands, and the dispatch
** to them, like git.  The top of the controller: each folder's header
** declares its own commands, and nothing includes this folder.
*/
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "client.h"
#include "swank.h"
#include "daemon.h"
#include "offline.h"
#include "replica.h"
#include "run.h"
#include "sess.h"
#include "supervise.h"
#include "workerproc.h"

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} commands[] = {
  {"run", cmd_run, "evaluate Lisp files or an expression in a fresh world"},
  {"init", cmd_init, "create a store holding the initial, empty world"},
  {"apply", cmd_apply, "run forms as one checked transaction on a store"},
  {"invariant", cmd_invariant, "add, remove or list the world's safety invariants"},
  {"repair", cmd_repair, "choose the functions automatic repair looks after"},
  {"incidents", cmd_incidents, "list the failures automatic repair recorded, or show one"},
  {"traffic", cmd_traffic, "show the successful calls automatic repair keeps of a function"},
  {"recover-session", cmd_recover_session, "verify a store and recover its CURRENT world"},
  {"log", cmd_log, "list a store's revisions, newest first"},
  {"show", cmd_show, "show a revision's manifest and changed entries"},
  {"diff", cmd_diff, "compare the worlds of two revisions"},
  {"rollback", cmd_rollback, "publish a revision equal to an older one"},
  {"events", cmd_events, "list a store's events, newest first"},
  {"kernel", cmd_kernel, "run the kernel daemon of a store (serves DIR/kernel.sock)"},
  {"replicate", cmd_replicate, "show a world replicated through etcd: leader, CURRENT, standbys"},
  {"eval", cmd_eval, "run an application call on the running kernel"},
  {"preview", cmd_preview, "evaluate on the running kernel, report, restore everything"},
  {"inspect", cmd_inspect, "print one entry of the running kernel's world in full"},
  {"observe", cmd_observe, "show the running kernel's world"},
  {"act", cmd_act, "send one action (evaluate, resume, abort) to the kernel"},
  {"status", cmd_status, "show the state of the store's kernel"},
  {"stop", cmd_stop, "shut the store's kernel down cleanly"},
  {"cancel", cmd_cancel, "cancel the transaction the kernel is running (restored)"},
  {"interrupt", cmd_interrupt, "pause the transaction the kernel is running (CONTINUE resumes it)"},
  {"repl", cmd_repl, "an interactive session with the running kernel"},
  {"swank", cmd_swank, "a Swank server: Emacs's SLIME on the running kernel's world"},
  {"session", cmd_session, "let a model grow the world, one checked action at a time"},
  {"sessions", cmd_sessions, "list, show or export the recorded model sessions"},
  {"supervise", cmd_supervise, "let a model repair the incidents of failing calls (automatic repair)"},
  {"heal", cmd_heal, "ask for a repair of a problem no call signalled (a wrong value)"},
  {"repairs", cmd_repairs, "list the tentative repairs awaiting promote or reject"},
  {"promote", cmd_promote, "make a tentative repair permanent"},
  {"reject", cmd_reject, "undo a tentative repair (its incident captured again)"},
  {NULL, NULL, NULL},
};

/* The edit distance of a and b (insertions, deletions, substitutions,
** and a swap of two neighbours), up to 3: enough to tell a typo. */
static int distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 31 || m > 31) return 99;
  int d[32][32];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

/* The command a mistyped name most likely meant, or NULL. */
static const char *nearest(const char *cmd) {
  const char *best = NULL;
  int bd = strlen(cmd) <= 4 ? 1 : 2; /* a short name tolerates one slip */
  bd++;
  for (int i = 0; commands[i].name; i++) {
    int d = distance(cmd, commands[i].name);
    if (d < bd) bd = d, best = commands[i].name;
  }
  return best;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: jiti [--version] [--help] <command> [<args>]\n"
          "\n"
          "jiti keeps a Lisp world running and grows it one checked transaction at a time.\n"
          "\n"
          "commands:\n");
  for (int i = 0; commands[i].name; i++) fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nRun 'jiti <command> --help' for the options of a command.\n");
}

int main(int argc, char **argv) {
  /* Every file and directory jiti creates (stores, sockets, pid files, logs,
  ** histories, transcripts) is private to its user, whatever the umask. */
  umask(077);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("jiti %s\n", JITI_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "__worker")) return cmd_worker_internal(argc - 1, argv + 1);
  for (int i = 0; commands[i].name; i++)
    if (!strcmp(cmd, commands[i].name)) {
      fault_guard(cmd); /* a damaged data.mdb is a message, not a crash (the worker never maps it) */
      return commands[i].run(argc - 1, argv + 1);
    }
  const char *near = nearest(cmd);
  if (near) fprintf(stderr, "jiti: '%s' is not a jiti command; did you mean '%s'? See 'jiti --help'.\n", cmd, near);
  else fprintf(stderr, "jiti: '%s' is not a jiti command. See 'jiti --help'.\n", cmd);
  return 2;
}
