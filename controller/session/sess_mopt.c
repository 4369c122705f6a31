/*
** sess_mopt.c — the model options every command that asks a model takes
** (`jiti session`, `jiti supervise`): one parser, one help text, one way
** from the options to a model spec (sess.h).
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sess.h"

void sess_mopt_init(sess_ModelArgs *a, model_Options *mopt) {
  memset(a, 0, sizeof *a);
  a->mopt = mopt;
  a->stream = -1;
}

void sess_mopt_usage(FILE *f) {
  fprintf(f,
    "model:\n"
    "  --model M             OpenAI Responses API with model M (default $OPENAI_MODEL, else %s);\n"
    "                        needs OPENAI_API_KEY or OPENAI_API_KEY_FILE; base URL $OPENAI_BASE_URL\n"
    "  --chat                Chat Completions (/chat/completions) for compatible servers (Ollama, vLLM, ...)\n"
    "  --scripted FILE       canned actions, one JSON object per line (offline)\n"
    "  --structured | --tools  how actions are asked for (default --tools: one strict function per action)\n"
    "  --stream | --no-stream  server-sent events (default: on a terminal)\n"
    "  --max-retries N       retries of a failed request (default 2)\n"
    "  --timeout S, --connect-timeout S   request (default 600) and connect (default 5) timeouts\n"
    "  --max-output-tokens N, --reasoning-effort low|medium|high\n",
    MODEL_DEFAULT_NAME);
}

int sess_count_arg(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi) {
    fprintf(stderr, "jiti %s: %s wants a whole number from %ld to %ld, not '%s'\n", cmd, opt, lo, hi, v);
    return 0;
  }
  *out = n;
  return 1;
}

int sess_seconds_arg(const char *cmd, const char *opt, const char *v, long *ms) {
  char *end;
  errno = 0;
  double s = strtod(v, &end);
  if (errno || end == v || *end || !(s > 0) || s > 86400) {
    fprintf(stderr, "jiti %s: %s wants seconds (more than 0), not '%s'\n", cmd, opt, v);
    return 0;
  }
  *ms = (long)(s * 1000 + 0.5);
  if (!*ms) *ms = 1;
  return 1;
}

int sess_mopt_arg(const char *cmd, int argc, char **argv, int *i, sess_ModelArgs *a) {
  static const char *const with[] = {"--model", "--scripted", "--max-retries", "--timeout", "--connect-timeout",
                                     "--max-output-tokens", "--reasoning-effort", NULL};
  static const char *const flags[] = {"--chat", "--structured", "--tools", "--stream", "--no-stream", NULL};
  const char *o = argv[*i];
  int value = 0, flag = 0;
  for (int k = 0; with[k]; k++) value |= !strcmp(o, with[k]);
  for (int k = 0; flags[k]; k++) flag |= !strcmp(o, flags[k]);
  if (!value && !flag) return 0;
  if (value && *i + 1 >= argc) {
    fprintf(stderr, "jiti %s: %s needs a value (see 'jiti %s --help')\n", cmd, o, cmd);
    return -1;
  }
  const char *v = value ? argv[++*i] : NULL;
  long n;
  model_Options *m = a->mopt;
  if (!strcmp(o, "--model")) a->model_name = v;
  else if (!strcmp(o, "--scripted")) a->scripted = v;
  else if (!strcmp(o, "--chat")) a->chat = 1;
  else if (!strcmp(o, "--structured")) m->mode = MODEL_MODE_STRUCTURED;
  else if (!strcmp(o, "--tools")) m->mode = MODEL_MODE_TOOLS;
  else if (!strcmp(o, "--stream")) a->stream = 1;
  else if (!strcmp(o, "--no-stream")) a->stream = 0;
  else if (!strcmp(o, "--max-retries")) {
    if (!sess_count_arg(cmd, o, v, 0, 100, &n)) return -1;
    m->max_retries = (int)n;
  } else if (!strcmp(o, "--timeout")) {
    if (!sess_seconds_arg(cmd, o, v, &m->request_timeout_ms)) return -1;
  } else if (!strcmp(o, "--connect-timeout")) {
    if (!sess_seconds_arg(cmd, o, v, &m->connect_timeout_ms)) return -1;
  } else if (!strcmp(o, "--max-output-tokens")) {
    if (!sess_count_arg(cmd, o, v, 1, 10000000, &n)) return -1;
    m->max_output_tokens = n;
  } else if (!strcmp(o, "--reasoning-effort")) {
    m->reasoning_effort = v;
  }
  return 1;
}

char *sess_mopt_spec(const char *cmd, sess_ModelArgs *a, int *usage_error) {
  char *spec = NULL;
  *usage_error = 0;
  if (a->scripted && (a->chat || a->model_name)) {
    fprintf(stderr, "jiti %s: --scripted cannot be combined with --model or --chat\n", cmd);
    *usage_error = 1;
    return NULL;
  }
  if (a->scripted) {
    if (asprintf(&spec, "scripted:%s", a->scripted) < 0) spec = NULL;
  } else if (a->model_name && !strncmp(a->model_name, "scripted:", 9)) {
    spec = strdup(a->model_name);
  } else {
    a->mopt->model = a->model_name;
    if (!a->chat && !getenv("OPENAI_API_KEY") && !getenv("OPENAI_API_KEY_FILE")) {
      fprintf(stderr, "jiti %s: no model: set OPENAI_API_KEY (or OPENAI_API_KEY_FILE) for OpenAI, use "
                      "--chat for a compatible server, or --scripted FILE to run offline\n", cmd);
      return NULL;
    }
    spec = strdup(a->chat ? "chat" : "openai");
  }
  if (!spec) fprintf(stderr, "jiti %s: out of memory\n", cmd);
  return spec;
}
