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
#include "kclient.h"
#include "net.h"
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
  int remote;      /* it reaches a running kernel: --connect or --replicate/--world may name one elsewhere */
} commands[] = {
  {"run", cmd_run, "evaluate Lisp files or an expression in a fresh world", 0},
  {"init", cmd_init, "create a store holding the initial, empty world", 0},
  {"apply", cmd_apply, "run forms as one checked transaction on a store", 0},
  {"invariant", cmd_invariant, "add, remove or list the world's safety invariants", 1},
  {"repair", cmd_repair, "choose the functions automatic repair looks after", 1},
  {"incidents", cmd_incidents, "list the failures automatic repair recorded, or show one", 1},
  {"traffic", cmd_traffic, "show the successful calls automatic repair keeps of a function", 0},
  {"recover-session", cmd_recover_session, "verify a store and recover its CURRENT world", 0},
  {"log", cmd_log, "list a store's revisions, newest first", 0},
  {"show", cmd_show, "show a revision's manifest and changed entries", 0},
  {"diff", cmd_diff, "compare the worlds of two revisions", 0},
  {"rollback", cmd_rollback, "publish a revision equal to an older one", 1},
  {"events", cmd_events, "list a store's events, newest first", 0},
  {"kernel", cmd_kernel, "run the kernel daemon of a store (serves DIR/kernel.sock)", 0},
  {"replicate", cmd_replicate, "show a world replicated through etcd: leader, CURRENT, standbys", 0},
  {"eval", cmd_eval, "run an application call on the running kernel", 1},
  {"preview", cmd_preview, "evaluate on the running kernel, report, restore everything", 1},
  {"inspect", cmd_inspect, "print one entry of the running kernel's world in full", 1},
  {"observe", cmd_observe, "show the running kernel's world", 1},
  {"act", cmd_act, "send one action (evaluate, resume, abort) to the kernel", 1},
  {"status", cmd_status, "show the state of the store's kernel", 1},
  {"stop", cmd_stop, "shut the store's kernel down cleanly", 1},
  {"cancel", cmd_cancel, "cancel the transaction the kernel is running (restored)", 1},
  {"interrupt", cmd_interrupt, "pause the transaction the kernel is running (CONTINUE resumes it)", 1},
  {"repl", cmd_repl, "an interactive session with the running kernel", 1},
  {"swank", cmd_swank, "a Swank server: Emacs's SLIME on the running kernel's world", 1},
  {"session", cmd_session, "let a model grow the world, one checked action at a time", 1},
  {"sessions", cmd_sessions, "list, show or export the recorded model sessions", 0},
  {"supervise", cmd_supervise, "let a model repair the incidents of failing calls (automatic repair)", 1},
  {"heal", cmd_heal, "ask for a repair of a problem no call signalled (a wrong value)", 1},
  {"repairs", cmd_repairs, "list the tentative repairs awaiting promote or reject", 1},
  {"promote", cmd_promote, "make a tentative repair permanent", 1},
  {"reject", cmd_reject, "undo a tentative repair (its incident captured again)", 1},
  {NULL, NULL, NULL, 0},
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
  fprintf(out, "\nRun 'jiti <command> --help' for the options of a command.  Those that reach a running\n"
               "kernel reach one on another machine too: --connect tcp://HOST:PORT, or the leader of a\n"
               "replicated world with --replicate URLS --world NAME (see their --help).\n");
}

static void remote_progress(const char *line) { fprintf(stderr, "jiti: %s\n", line); }

/* A command that reaches a running kernel, given --connect or --replicate:
** those options (net.h) are taken out of argv (*argc shrinks) and every
** connection it makes goes to that kernel (kclient_remote).  0, or the
** exit status after a message. */
static int take_remote(const char *cmd, int *argc, char **argv, net_ClientOpts *o) {
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    char err[256];
    if (!strcmp(argv[i], "--")) {   /* what follows is the command's own */
      while (i < *argc) argv[out++] = argv[i++];
      break;
    }
    int r = net_client_option(*argc, argv, &i, o, err, sizeof err);
    if (r < 0) {
      fprintf(stderr, "jiti %s: %s\n", cmd, err);
      return EXIT_USAGE;
    }
    if (!r) argv[out++] = argv[i];
  }
  *argc = out;
  argv[out] = NULL;
  if (!net_client_given(o)) return 0;
  char err[512];
  if (net_client_check(o, err, sizeof err)) {
    fprintf(stderr, "jiti %s: %s\n", cmd, err);
    return EXIT_USAGE;
  }
  kclient_remote(o, remote_progress);
  return 0;
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
      if (!commands[i].remote) return commands[i].run(argc - 1, argv + 1);
      net_ClientOpts remote = {0};
      int n = argc - 1, help = 0;
      for (int a = 2; a < argc && strcmp(argv[a], "--"); a++)
        help |= !strcmp(argv[a], "--help") || !strcmp(argv[a], "-h");
      int bad = take_remote(cmd, &n, argv + 1, &remote);
      if (bad) return bad;
      int rc = commands[i].run(n, argv + 1);
      if (help && rc == EXIT_OK) printf("\n%s", NET_CLIENT_HELP);
      return rc;
    }
  const char *near = nearest(cmd);
  if (near) fprintf(stderr, "jiti: '%s' is not a jiti command; did you mean '%s'? See 'jiti --help'.\n", cmd, near);
  else fprintf(stderr, "jiti: '%s' is not a jiti command. See 'jiti --help'.\n", cmd);
  return 2;
}
