/*
** test_model.c — the model clients (controller/model/) through real
** libcurl against the loopback model server (tests/model_server.py):
** what is parsed, what was retried, the waits the client chose, and that
** the key appears nowhere.  Also the parts on their own: the action
** schema and validator, the SSE parser, the retry policy, redaction, key
** loading, conversations, the scripted model.
**
**   test_model PYTHON SERVER.py
*/
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "maction.h"
#include "mhttp.h"
#include "model.h"
#include "mretry.h"
#include "msecret.h"
#include "msse.h"

#define KEY "sk-test-Zq8WfK2LmN4pR7sT9vX1yB3dF5hJ"

static char tmpdir[256];
static pid_t server_pid;
static int port;
static char base[128];
static mhttp *ctl;

/* ------------------------------------------------------------ helpers */

static int contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

/* The key must appear in nothing a reply holds. */
static void check_no_key(const model_Reply *r) {
  CHECK(!contains(r->message, KEY));
  CHECK(!contains(r->request_body, KEY));
  CHECK(!contains(r->response_body, KEY));
  CHECK(!contains(r->text, KEY));
  CHECK(!contains(r->message, "Zq8WfK2L"));
  CHECK(!contains(r->response_body, "Zq8WfK2L"));
}

static json_t *control(const char *path, json_t *body) {
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  if (!body) body = json_object();
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  mhttp_Response r;
  mhttp_post(ctl, url, NULL, text, strlen(text), NULL, NULL, &r);
  free(text);
  json_t *j = r.error == MHTTP_OK ? json_loads(r.body, 0, NULL) : NULL;
  if (!j) fprintf(stderr, "control %s failed: %s\n", path, r.errmsg);
  mhttp_response_free(&r);
  return j;
}

static void queue(const char *json_text) {
  json_t *q = json_loads(json_text, 0, NULL);
  if (!q) {
    fprintf(stderr, "bad test queue: %s\n", json_text);
    exit(2);
  }
  json_decref(control("/_reset", NULL));
  json_decref(control("/_queue", q));
}

/* The server's log of model requests (new reference). */
static json_t *server_log(void) { return control("/_log", NULL); }

static void start_server(const char *python, const char *script) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/jiti-model-test-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    exit(2);
  }
  char portfile[300];
  snprintf(portfile, sizeof portfile, "%s/port", tmpdir);
  server_pid = fork();
  if (server_pid == 0) {
    execl(python, python, script, "--port-file", portfile, "--key", KEY, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 200; i++) {
    FILE *f = fopen(portfile, "r");
    if (f) {
      int ok = fscanf(f, "%d", &port) == 1;
      fclose(f);
      if (ok) break;
    }
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
  }
  if (!port) {
    fprintf(stderr, "the model server did not start\n");
    exit(2);
  }
  snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", port);
  setenv("OPENAI_BASE_URL", base, 1);
  setenv("OPENAI_API_KEY", KEY, 1);
  setenv("OPENAI_MODEL", "test-model", 1);
  unsetenv("OPENAI_API_KEY_FILE");
  unsetenv("OPENAI_ORG_ID");
  unsetenv("OPENAI_PROJECT_ID");
  ctl = mhttp_new();
}

static void stop_server(void) {
  mhttp_free(ctl);
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd)) {}
}

static model *open_model(const char *spec, int stream, model_Mode mode, int retries, long timeout_ms) {
  model_Options o;
  model_options_init(&o);
  o.stream = stream;
  o.mode = mode;
  o.max_retries = retries;
  o.request_timeout_ms = timeout_ms;
  char err[512];
  model *m = model_open(spec, &o, err, sizeof err);
  if (!m) fprintf(stderr, "model_open(%s): %s\n", spec, err);
  return m;
}

/* One turn on a fresh conversation with one user message. */
static model_Status one_turn(model *m, model_Reply *r) {
  model_Conv *c = model_conv_new("You grow a Lisp world.");
  model_conv_user(c, "Define f.");
  model_Status st = model_next(m, c, r);
  model_conv_free(c);
  return st;
}

static const char *action_type(const model_Reply *r) {
  return json_string_value(json_object_get(r->action, "type"));
}

/* ---------------------------------------------------- the action schema */

static void test_schema(void) {
  json_t *tools = maction_tools(MACTION_RESPONSES, MACTION_SESSION);
  CHECK(json_array_size(tools) == (size_t)maction_set_size(MACTION_SESSION) && json_array_size(tools) == 8);
  size_t i;
  json_t *t;
  json_array_foreach(tools, i, t) {
    CHECK_STR(json_string_value(json_object_get(t, "type")), "function");
    CHECK(json_is_true(json_object_get(t, "strict")));
    json_t *p = json_object_get(t, "parameters");
    CHECK(json_is_false(json_object_get(p, "additionalProperties")));
    /* strict: every property is required */
    CHECK(json_object_size(json_object_get(p, "properties")) == json_array_size(json_object_get(p, "required")));
  }
  CHECK_STR(json_string_value(json_object_get(json_array_get(tools, 0), "name")), "evaluate");
  json_decref(tools);
  json_t *chat = maction_tools(MACTION_CHAT, MACTION_SESSION);
  json_t *fn = json_object_get(json_array_get(chat, 2), "function");
  CHECK_STR(json_string_value(json_object_get(fn, "name")), "resume");
  json_t *args = json_object_get(json_object_get(json_object_get(fn, "parameters"), "properties"), "arguments");
  CHECK(json_array_size(json_object_get(args, "type")) == 2);   /* ["string","null"] */
  json_decref(chat);
  json_t *s = maction_output_schema(MACTION_SESSION);
  CHECK_STR(json_string_value(json_object_get(s, "type")), "object");
  CHECK(json_array_size(json_object_get(json_object_get(json_object_get(s, "properties"), "action"), "anyOf")) ==
        (size_t)maction_set_size(MACTION_SESSION));
  json_decref(s);

  struct { const char *tool, *args; int ok; const char *err; } cases[] = {
    {"evaluate", "{\"source\":\"(+ 1 2)\"}", 1, NULL},
    {"evaluate", "{}", 0, "needs \"source\""},
    {"evaluate", "{\"source\":\"(+ 1 2)\",\"x\":1}", 0, "has no field \"x\""},
    {"evaluate", "{\"source\":3}", 0, "must be a string"},
    {"evaluate", "{\"source\":\"  \"}", 0, "is empty"},
    {"evaluate", "{\"source\":\"a\\u0000b\"}", 0, "NUL"},
    {"evaluate", "[1]", 0, "must be a JSON object"},
    {"evaluate", "{\"source\":\"(setq d 2)\",\"frame\":1}", 1, NULL},
    {"evaluate", "{\"source\":\"(f)\",\"frame\":null}", 1, NULL},
    {"evaluate", "{\"source\":\"(f)\",\"frame\":-1}", 0, "a frame number of the pause"},
    {"evaluate", "{\"source\":\"(f)\",\"frame\":40}", 0, "a frame number of the pause"},
    {"evaluate", "{\"source\":\"(f)\",\"frame\":\"1\"}", 0, "a frame number of the pause"},
    {"resume", "{\"restart_id\":\"p1-0\",\"arguments\":null}", 1, NULL},
    {"resume", "{\"restart_id\":\"p1-0\"}", 1, NULL},
    {"resume", "{\"restart_id\":\"p1-0\",\"arguments\":5}", 0, "a string or null"},
    {"abort", "{}", 1, NULL},
    {"abort", "{\"why\":\"x\"}", 0, "takes no fields"},
    {"inspect", "{\"kind\":null,\"name\":\"F\"}", 1, NULL},
    {"inspect", "{\"kind\":\"function\",\"name\":\"F\"}", 1, NULL},
    {"inspect", "{\"kind\":\"socket\",\"name\":\"F\"}", 0, "one of function"},
    {"rollback", "{\"revision\":2}", 1, NULL},
    {"rollback", "{\"revision\":0}", 0, "1 or more"},
    {"rollback", "{\"revision\":2.0}", 0, "an integer"},
    {"finish", "{\"summary\":\"done\"}", 1, NULL},
    {"launch", "{}", 0, "there is no action \"launch\""},
    {NULL, "{\"action\":{\"type\":\"check\"}}", 1, NULL},
    {NULL, "{\"action\":{\"type\":\"evaluate\",\"source\":\"(f)\"}}", 1, NULL},
    {NULL, "{\"action\":{\"source\":\"(f)\"}}", 0, "needs \"type\""},
    {NULL, "{\"action\":{\"type\":\"evaluate\",\"source\":\"(f)\"},\"more\":1}", 0, "single member"},
    {NULL, "{\"type\":\"evaluate\",\"source\":\"(f)\"}", 0, "single member"},
    /* a verdict is no session action */
    {"repair", "{\"source\":\"(defun f ())\",\"reason\":\"r\",\"intended_changes\":null}", 0,
     "there is no action \"repair\"; the actions are evaluate, preview, resume, abort, inspect, check, rollback, finish"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    json_t *a = json_loads(cases[k].args, JSON_ALLOW_NUL, NULL), *out;
    char err[512] = "";
    int rc = maction_validate(MACTION_SESSION, cases[k].tool, a, &out, err, sizeof err);
    if ((rc == 0) != cases[k].ok || (cases[k].err && !strstr(err, cases[k].err)))
      fprintf(stderr, "case %zu (%s %s): rc %d err \"%s\"\n", k, cases[k].tool ? cases[k].tool : "-",
              cases[k].args, rc, err);
    CHECK((rc == 0) == cases[k].ok);
    if (cases[k].err) CHECK(contains(err, cases[k].err));
    if (rc == 0) CHECK(maction_kind_of(out) >= 0);
    json_decref(out);
    json_decref(a);
  }
  /* the canonical form leaves null fields out */
  json_t *a = json_loads("{\"restart_id\":\"p1-0\",\"arguments\":null}", 0, NULL), *out;
  char err[256], sum0[128];
  CHECK(maction_validate(MACTION_SESSION, "resume", a, &out, err, sizeof err) == 0);
  CHECK(json_object_size(out) == 2 && !json_object_get(out, "arguments"));
  json_decref(out);
  json_decref(a);
  /* a source over the limit */
  char *big = malloc(MACTION_MAX_SOURCE + 64);
  memset(big, 'a', MACTION_MAX_SOURCE + 1);
  big[MACTION_MAX_SOURCE + 1] = 0;
  a = json_pack("{s:s}", "source", big);
  CHECK(maction_validate(MACTION_SESSION, "evaluate", a, &out, err, sizeof err) == -1 &&
        contains(err, "at most 16384"));
  json_decref(a);
  free(big);
  char *doc = maction_doc(MACTION_SESSION);
  CHECK(contains(doc, "- evaluate {source, frame}") && contains(doc, "- rollback {revision}") && !contains(doc, "- repair"));
  free(doc);
  /* the verdicts on an incident: exactly those offered, and only those accepted */
  tools = maction_tools(MACTION_RESPONSES, MACTION_VERDICT);
  CHECK(json_array_size(tools) == 3);
  CHECK_STR(json_string_value(json_object_get(json_array_get(tools, 0), "name")), "repair");
  json_t *rp = json_object_get(json_array_get(tools, 0), "parameters");
  CHECK(json_array_size(json_object_get(rp, "required")) == 3);   /* source, reason, intended_changes */
  json_decref(tools);
  a = json_loads("{\"source\":\"(defun f (x) x)\",\"reason\":\"off by one\"}", 0, NULL);
  CHECK(maction_validate(MACTION_VERDICT, "repair", a, &out, err, sizeof err) == 0);
  CHECK(maction_kind_of(out) == MA_REPAIR && json_object_size(out) == 3);
  maction_summary(out, sum0, sizeof sum0);
  CHECK_STR(sum0, "repair (defun f (x) x)");
  json_decref(out);
  json_decref(a);
  a = json_loads("{\"action\":{\"type\":\"expected\",\"reason\":\"credit is short on purpose\"}}", 0, NULL);
  CHECK(maction_validate(MACTION_VERDICT, NULL, a, &out, err, sizeof err) == 0 && maction_kind_of(out) == MA_EXPECTED);
  json_decref(out);
  json_decref(a);
  a = json_loads("{\"source\":\"(f)\"}", 0, NULL);
  CHECK(maction_validate(MACTION_VERDICT, "evaluate", a, &out, err, sizeof err) == -1 &&
        contains(err, "the actions are repair, expected, insufficient_evidence"));
  json_decref(a);
  a = json_loads("{\"reason\":\"\"}", 0, NULL);
  CHECK(maction_validate(MACTION_VERDICT, "insufficient_evidence", a, &out, err, sizeof err) == 0);
  json_decref(out);
  json_decref(a);
  char sum[128];
  a = json_pack("{s:s, s:s}", "type", "evaluate", "source", "(defun f (x)\n   (* 2 x))");
  maction_summary(a, sum, sizeof sum);
  CHECK_STR(sum, "evaluate (defun f (x) (* 2 x))");
  json_decref(a);
}

/* ------------------------------------------------------------------ SSE */

typedef struct Got {
  char events[16][64];
  char data[16][256];
  int n;
} Got;

static int got_event(void *ud, const char *event, const char *data, size_t len) {
  Got *g = ud;
  if (g->n < 16) {
    snprintf(g->events[g->n], sizeof g->events[0], "%s", event);
    snprintf(g->data[g->n], sizeof g->data[0], "%.*s", (int)len, data);
  }
  g->n++;
  return 0;
}

static void test_sse(void) {
  const char *stream = "\xEF\xBB\xBF: a comment\r\nevent: one\r\ndata: {\"a\":1}\r\n\r\n"
                       "data:two\rdata:  lines\r\rid: 7\nretry: 100\nevent: three\ndata\n\n"
                       "event: ignored-without-data\n\n";
  size_t len = strlen(stream);
  /* every split point gives the same events */
  for (size_t cut = 0; cut <= len; cut++) {
    Got g = {0};
    msse p;
    msse_init(&p, got_event, &g, 0);
    CHECK(msse_feed(&p, stream, cut) == 0);
    CHECK(msse_feed(&p, stream + cut, len - cut) == 0);
    CHECK(g.n == 3);
    CHECK_STR(g.events[0], "one");
    CHECK_STR(g.data[0], "{\"a\":1}");
    CHECK_STR(g.events[1], "");
    CHECK_STR(g.data[1], "two\n lines");
    CHECK_STR(g.events[2], "three");
    CHECK_STR(g.data[2], "");
    CHECK(!msse_cut(&p));
    msse_free(&p);
  }
  /* byte by byte */
  Got g = {0};
  msse p;
  msse_init(&p, got_event, &g, 0);
  for (size_t i = 0; i < len; i++) msse_feed(&p, stream + i, 1);
  CHECK(g.n == 3);
  msse_free(&p);
  /* an event cut in the middle */
  memset(&g, 0, sizeof g);
  msse_init(&p, got_event, &g, 0);
  msse_feed(&p, "data: {\"a\":1}\n\ndata: {\"b\"", 26);
  CHECK(g.n == 1 && msse_cut(&p));
  msse_free(&p);
  memset(&g, 0, sizeof g);
  msse_init(&p, got_event, &g, 0);
  msse_feed(&p, "data: x\n", 8);
  CHECK(g.n == 0 && msse_cut(&p));
  msse_free(&p);
  /* too big */
  msse_init(&p, got_event, &g, 16);
  CHECK(msse_feed(&p, "data: 0123456789abcdefghij\n\n", 28) == MSSE_ETOOBIG);
  msse_free(&p);
}

/* ------------------------------------------------------------ the policy */

static void test_policy(void) {
  CHECK(mretry_status_retryable(408, NULL) && mretry_status_retryable(409, ""));
  CHECK(mretry_status_retryable(429, NULL) && mretry_status_retryable(500, NULL) && mretry_status_retryable(599, NULL));
  CHECK(!mretry_status_retryable(400, NULL) && !mretry_status_retryable(401, NULL));
  CHECK(!mretry_status_retryable(404, NULL) && !mretry_status_retryable(422, NULL));
  CHECK(mretry_status_retryable(400, "true") && !mretry_status_retryable(503, "false"));
  CHECK(mretry_status_retryable(503, "yes"));   /* only "true"/"false" override */
  double now = 1700000000.0;
  CHECK(mretry_server_delay("1500", "9", now) == 1.5);
  CHECK(mretry_server_delay(NULL, "2", now) == 2.0);
  CHECK(mretry_server_delay("", " 2.5 ", now) == 2.5);
  CHECK(mretry_server_delay("abc", "3", now) == 3.0);
  CHECK(mretry_server_delay(NULL, "0x10", now) < 0);
  CHECK(mretry_server_delay(NULL, NULL, now) < 0);
  /* an HTTP date 30 s ahead of now */
  double d = mretry_server_delay(NULL, "Tue, 14 Nov 2023 22:13:50 GMT", 1700000000.0);
  CHECK(d == 30.0);
  int fs;
  CHECK(mretry_delay(0, 1.5, 0.9, &fs) == 1.5 && fs);
  CHECK(mretry_delay(0, 60.0, 0.9, &fs) == 60.0 && fs);
  CHECK(mretry_delay(0, 61.0, 0.0, &fs) == 0.5 && !fs);     /* too long: backoff */
  CHECK(mretry_delay(0, 0.0, 0.0, &fs) == 0.5 && !fs);      /* not > 0: backoff */
  CHECK(mretry_delay(0, -3.0, 0.0, &fs) == 0.5 && !fs);
  CHECK(mretry_delay(0, NAN, 0.0, &fs) == 0.5 && !fs);
  CHECK(mretry_delay(1, -1, 0.0, NULL) == 1.0);
  CHECK(mretry_delay(2, -1, 0.0, NULL) == 2.0);
  CHECK(mretry_delay(4, -1, 0.0, NULL) == 8.0);
  CHECK(mretry_delay(10, -1, 0.0, NULL) == 8.0);            /* capped */
  CHECK(mretry_delay(100000, -1, 0.0, NULL) == 8.0);
  CHECK(mretry_delay(0, -1, 0.999999, NULL) > 0.375 && mretry_delay(0, -1, 0.999999, NULL) < 0.3751);
  CHECK(mretry_delay(3, -1, 0.5, NULL) == 4.0 * 0.875);
}

/* ------------------------------------------------------------ secrets */

static void test_secrets(void) {
  const char *s = "key " KEY " and Bearer abc.def-123 and sk-short and xsk-notakey12345 sk-proj-ABCDEFGH12";
  char *r = msecret_redact(s, strlen(s), KEY, NULL);
  CHECK_STR(r, "key [redacted] and Bearer [redacted] and sk-short and xsk-notakey12345 sk-[redacted]");
  free(r);
  /* a key that does not look like one (a compatible server's) is found by
  ** its value; a placeholder shorter than MSECRET_MIN_KEY is not a secret */
  r = msecret_redact("a loopback-K3y-77 b", 19, "loopback-K3y-77", NULL);
  CHECK_STR(r, "a [redacted] b");
  free(r);
  r = msecret_redact("aXa ollama", 10, "X", NULL);
  CHECK_STR(r, "aXa ollama");
  free(r);
  r = msecret_redact("aXa ollama", 10, "ollama", NULL);
  CHECK_STR(r, "aXa ollama");
  free(r);
  /* in JSON: every string, at any depth, and member names */
  json_t *j = json_pack("{s:s, s:[s, {s:s}], s:i, s:s}", "action", "(world-put :k \"loopback-K3y-77\")", "list",
                        "x loopback-K3y-77", "loopback-K3y-77", "v", "n", 5, "token", "Bearer zz.top");
  CHECK(msecret_redact_json(j, "loopback-K3y-77") == 0);
  char *d = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  CHECK_STR(d, "{\"action\":\"(world-put :k \\\"[redacted]\\\")\",\"list\":[\"x [redacted]\",{\"[redacted]\":\"v\"}],"
               "\"n\":5,\"token\":\"Bearer [redacted]\"}");
  free(d);
  json_decref(j);
  /* key files */
  char path[300], err[512], *key;
  snprintf(path, sizeof path, "%s/key", tmpdir);
  FILE *f = fopen(path, "w");
  fprintf(f, "  sk-file-key-12345678\n");
  fclose(f);
  char *saved = strdup(getenv("OPENAI_API_KEY"));
  unsetenv("OPENAI_API_KEY");
  setenv("OPENAI_API_KEY_FILE", path, 1);
  chmod(path, 0644);
  CHECK(msecret_load(&key, err, sizeof err) == -1 && contains(err, "chmod 600") && !contains(err, "sk-file"));
  chmod(path, 0600);
  CHECK(msecret_load(&key, err, sizeof err) == 0);
  CHECK_STR(key, "sk-file-key-12345678");
  msecret_wipe(key);
  f = fopen(path, "w");
  fprintf(f, "sk-bad key\n");
  fclose(f);
  CHECK(msecret_load(&key, err, sizeof err) == -1 && contains(err, "cannot go in an HTTP header"));
  setenv("OPENAI_API_KEY_FILE", "/nonexistent/key", 1);
  CHECK(msecret_load(&key, err, sizeof err) == -1 && contains(err, "cannot read"));
  unsetenv("OPENAI_API_KEY_FILE");
  CHECK(msecret_load(&key, err, sizeof err) == 1 && key == NULL);
  model *m = model_open("openai", NULL, err, sizeof err);
  CHECK(!m && contains(err, "no API key"));
  /* chat works without a key (local servers) */
  m = model_open("chat", NULL, err, sizeof err);
  CHECK(m != NULL);
  model_close(m);
  setenv("OPENAI_API_KEY", "sk-with\nnewline", 1);
  CHECK(!model_open("openai", NULL, err, sizeof err) && contains(err, "cannot go in an HTTP header"));
  setenv("OPENAI_API_KEY", saved, 1);
  free(saved);
  CHECK(!model_open("nonsense", NULL, err, sizeof err) && contains(err, "unknown model client"));
  setenv("OPENAI_BASE_URL", "http://user:pw@127.0.0.1/v1", 1);
  CHECK(!model_open("openai", NULL, err, sizeof err) && contains(err, "credentials"));
  setenv("OPENAI_BASE_URL", "ftp://127.0.0.1/v1", 1);
  CHECK(!model_open("openai", NULL, err, sizeof err) && contains(err, "http://"));
  setenv("OPENAI_BASE_URL", base, 1);
}

/* ----------------------------------------------------- conversations */

static void test_conv(void) {
  model_Conv *c = model_conv_new("sys");
  model_conv_user(c, "request");
  for (int i = 0; i < 5; i++) {
    model_Reply r = {0};
    char id[16], args[64];
    snprintf(id, sizeof id, "call_%d", i);
    snprintf(args, sizeof args, "{\"source\":\"(step %d)\"}", i);
    r.ncalls = 1;
    model_Call call = {id, (char *)"evaluate", args};
    r.calls = &call;
    model_conv_reply(c, &r);
    model_conv_result(c, "accepted");
  }
  CHECK(model_conv_steps(c) == 5);
  size_t before = model_conv_chars(c);
  CHECK(model_conv_compact(c, 2, "Steps 1-3: three forms were accepted.") == 0);
  CHECK(model_conv_chars(c) < before);
  CHECK(model_conv_compact(c, 10, "nothing") == 0);
  model_conv_free(c);
}

/* ------------------------------------------------ clients against the server */

static const char *ACTION_EVAL =
  "{\"kind\":\"action\",\"action\":{\"type\":\"evaluate\",\"source\":\"(defun f (x) (* 2 x))\"}}";

/* Every fault, for one client configuration. */
static void test_faults(const char *spec, int stream) {
  int chat = !strcmp(spec, "chat");
  fprintf(stderr, "-- %s, %s\n", spec, stream ? "streaming" : "plain");
  model *m = open_model(spec, stream, MODEL_MODE_TOOLS, 2, 0);
  CHECK(m != NULL);
  if (!m) return;
  model_Reply r;

  /* a plain action, with usage; then a second turn carries its result */
  queue("[{\"kind\":\"action\",\"action\":{\"type\":\"evaluate\",\"source\":\"(defun f (x) (* 2 x))\"}},"
        " {\"kind\":\"action\",\"action\":{\"type\":\"finish\",\"summary\":\"done\"}}]");
  model_Conv *c = model_conv_new("You grow a Lisp world.");
  model_conv_user(c, "Define f.");
  CHECK(model_next(m, c, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "evaluate");
  CHECK_STR(json_string_value(json_object_get(r.action, "source")), "(defun f (x) (* 2 x))");
  CHECK(r.usage.input_tokens == 120 && r.usage.output_tokens == 30);
  CHECK(r.usage.cached_tokens == 20 && r.usage.reasoning_tokens == 8 && r.usage.total_tokens == 150);
  CHECK(r.ncalls == 1 && r.calls[0].call_id[0]);
  CHECK(r.nattempts == 1 && r.http_status == 200);
  CHECK(r.response_id != NULL);
  CHECK_STR(r.served_by, "test-model");
  check_no_key(&r);
  char call_id[64];
  snprintf(call_id, sizeof call_id, "%s", r.calls[0].call_id);
  model_conv_reply(c, &r);
  model_conv_result(c, "accepted: revision 2");
  model_reply_free(&r);
  CHECK(model_next(m, c, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "finish");
  model_reply_free(&r);
  model_conv_free(c);
  json_t *log = server_log();
  CHECK(json_array_size(log) == 2);
  json_t *req0 = json_array_get(log, 0), *req1 = json_array_get(log, 1);
  json_t *h0 = json_object_get(req0, "headers");
  CHECK_STR(json_string_value(json_object_get(h0, "authorization")), "Bearer " KEY);
  CHECK_STR(json_string_value(json_object_get(h0, "x-stainless-retry-count")), "0");
  CHECK_STR(json_string_value(json_object_get(h0, "accept")), stream ? "text/event-stream" : "application/json");
  /* keep-alive: the second request came over the same connection */
  CHECK(json_integer_value(json_object_get(req0, "conn")) == json_integer_value(json_object_get(req1, "conn")));
  json_t *b0 = json_object_get(req0, "body"), *b1 = json_object_get(req1, "body");
  CHECK_STR(json_string_value(json_object_get(b0, "model")), "test-model");
  CHECK(json_is_false(json_object_get(b0, "parallel_tool_calls")));
  CHECK_STR(json_string_value(json_object_get(b0, "tool_choice")), "required");
  CHECK(json_is_boolean(json_object_get(b0, "stream")) && json_is_true(json_object_get(b0, "stream")) == stream);
  if (chat) {
    /* the result went back as a tool message answering the call */
    json_t *msgs = json_object_get(b1, "messages");
    CHECK(json_array_size(msgs) == 4);
    json_t *asst = json_array_get(msgs, 2), *tool = json_array_get(msgs, 3);
    CHECK_STR(json_string_value(json_object_get(asst, "role")), "assistant");
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(asst, "tool_calls"), 0), "id")), call_id);
    CHECK_STR(json_string_value(json_object_get(tool, "role")), "tool");
    CHECK_STR(json_string_value(json_object_get(tool, "tool_call_id")), call_id);
    CHECK_STR(json_string_value(json_object_get(tool, "content")), "accepted: revision 2");
    CHECK_STR(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "system");
  } else {
    json_t *in = json_object_get(b1, "input");
    CHECK(json_array_size(in) == 3);
    json_t *fc = json_array_get(in, 1), *out = json_array_get(in, 2);
    CHECK_STR(json_string_value(json_object_get(fc, "type")), "function_call");
    CHECK_STR(json_string_value(json_object_get(fc, "call_id")), call_id);
    CHECK_STR(json_string_value(json_object_get(out, "type")), "function_call_output");
    CHECK_STR(json_string_value(json_object_get(out, "call_id")), call_id);
    CHECK_STR(json_string_value(json_object_get(out, "output")), "accepted: revision 2");
    CHECK_STR(json_string_value(json_object_get(b0, "instructions")), "You grow a Lisp world.");
    CHECK(json_is_false(json_object_get(b0, "store")));
    CHECK(json_array_size(json_object_get(b0, "tools")) == (size_t)maction_set_size(MACTION_SESSION));
  }
  json_decref(log);

  /* a reasoning item before the action */
  queue("[{\"kind\":\"action\",\"reasoning\":true,\"action\":{\"type\":\"check\"}}]");
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "check");
  if (!chat) CHECK(r.nreasoning == 1);
  model_reply_free(&r);

  /* errors that execute nothing */
  struct { const char *reply, *code, *says; } bad[] = {
    {"{\"kind\":\"refusal\",\"refusal\":\"I cannot help with that.\"}", "refusal", "I cannot help with that."},
    {"{\"kind\":\"incomplete\",\"reason\":\"max_output_tokens\"}", chat ? "length" : "incomplete", "token"},
    {"{\"kind\":\"failed\",\"message\":\"The model crashed.\"}", chat ? "error-event" : "failed", "The model crashed."},
    {"{\"kind\":\"two-calls\",\"actions\":[{\"type\":\"check\"},{\"type\":\"abort\"}]}", "multiple-actions", "exactly one"},
    {"{\"kind\":\"raw\",\"name\":\"evaluate\",\"arguments\":\"{\\\"source\\\": (f)}\"}", "bad-arguments", "not one JSON value"},
    {"{\"kind\":\"raw\",\"name\":\"evaluate\",\"arguments\":\"{\\\"source\\\":\\\"(f)\\\"} {}\"}", "bad-arguments", "not one JSON value"},
    {"{\"kind\":\"action\",\"action\":{\"type\":\"evaluate\",\"form\":\"(f)\"}}", "invalid-action", "has no field \"form\""},
    {"{\"kind\":\"action\",\"action\":{\"type\":\"explode\"}}", "invalid-action", "there is no action"},
    {"{\"kind\":\"text\",\"text\":\"Sure, I would define f.\"}", "no-action", "text, not an action"},
    {"{\"kind\":\"invalid-json\"}", "invalid-json", "JSON"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    char q[1024];
    snprintf(q, sizeof q, "[%s]", bad[k].reply);
    queue(q);
    model_Status st = one_turn(m, &r);
    if (st != MODEL_INVALID || strcmp(r.code, bad[k].code) || !contains(r.message, bad[k].says))
      fprintf(stderr, "  fault %s: status %s code %s message %s\n", bad[k].reply, model_status_name(st), r.code,
              r.message ? r.message : "-");
    CHECK(st == MODEL_INVALID);
    CHECK_STR(r.code, bad[k].code);
    CHECK(contains(r.message, bad[k].says));
    CHECK(r.action == NULL);
    CHECK(r.nattempts == 1);
    check_no_key(&r);
    model_reply_free(&r);
  }
  if (stream) {
    const char *cuts[] = {"[{\"kind\":\"cut\"}]", "[{\"kind\":\"end-early\"}]"};
    for (int k = 0; k < 2; k++) {
      queue(cuts[k]);
      CHECK(one_turn(m, &r) == MODEL_INVALID);
      CHECK_STR(r.code, "stream-cut");
      CHECK(r.nattempts == 1);   /* a stream that began is never retried */
      model_reply_free(&r);
    }
    queue("[{\"kind\":\"error-event\",\"message\":\"overloaded mid-stream\"}]");
    CHECK(one_turn(m, &r) == MODEL_INVALID);
    CHECK_STR(r.code, "error-event");
    CHECK(contains(r.message, "overloaded mid-stream"));
    model_reply_free(&r);
  } else {
    /* a truncated body is a broken connection: retried */
    char q[512];
    snprintf(q, sizeof q, "[{\"kind\":\"truncate\"}, %s]", ACTION_EVAL);
    queue(q);
    CHECK(one_turn(m, &r) == MODEL_OK);
    CHECK(r.nattempts == 2 && r.attempts[0].error == MHTTP_ETRANSPORT);
    CHECK(r.attempts[0].wait >= 0.375 && r.attempts[0].wait <= 0.5 && !r.attempts[0].server_wait);
    model_reply_free(&r);
  }
  /* structured output */
  model_close(m);
  m = open_model(spec, stream, MODEL_MODE_STRUCTURED, 2, 0);
  queue("[{\"kind\":\"action\",\"reasoning\":true,\"action\":{\"type\":\"resume\",\"restart_id\":\"p1-0\","
        "\"arguments\":\"(list 5)\"}}, {\"kind\":\"raw\",\"arguments\":\"```json {}```\"}]");
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "resume");
  CHECK_STR(json_string_value(json_object_get(r.action, "arguments")), "(list 5)");
  CHECK(r.ncalls == 0 && contains(r.text, "\"action\""));
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_INVALID);
  CHECK_STR(r.code, "invalid-json");
  model_reply_free(&r);
  log = server_log();
  json_t *b = json_object_get(json_array_get(log, 0), "body");
  json_t *fmt = chat ? json_object_get(b, "response_format") : json_object_get(json_object_get(b, "text"), "format");
  CHECK_STR(json_string_value(json_object_get(fmt, "type")), "json_schema");
  if (chat) fmt = json_object_get(fmt, "json_schema");
  CHECK_STR(json_string_value(json_object_get(fmt, "name")), MACTION_SCHEMA_NAME);
  CHECK(json_is_true(json_object_get(fmt, "strict")));
  CHECK(json_is_object(json_object_get(fmt, "schema")));
  CHECK(json_object_get(b, "tools") == NULL);
  json_decref(log);
  model_close(m);
}

/* Retries and timeouts (one client: the policy is shared). */
static void test_retries(const char *spec, int stream) {
  fprintf(stderr, "-- retries: %s, %s\n", spec, stream ? "streaming" : "plain");
  model *m = open_model(spec, stream, MODEL_MODE_TOOLS, 2, 0);
  model_Reply r;
  char q[1024];

  /* 429 with retry-after in seconds */
  snprintf(q, sizeof q, "[{\"kind\":\"status\",\"status\":429,\"headers\":{\"retry-after\":\"1\"},"
                        "\"message\":\"Rate limit reached\"}, %s]", ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK(r.nattempts == 2);
  CHECK(r.attempts[0].status == 429 && r.attempts[0].wait == 1.0 && r.attempts[0].server_wait);
  model_reply_free(&r);
  json_t *log = server_log();
  CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(log, 1), "headers"),
                                              "x-stainless-retry-count")), "1");
  json_decref(log);

  /* retry-after-ms wins over retry-after */
  snprintf(q, sizeof q, "[{\"kind\":\"status\",\"status\":429,\"headers\":{\"retry-after-ms\":\"150\","
                        "\"retry-after\":\"30\"}}, %s]", ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK(r.nattempts == 2 && r.attempts[0].wait == 0.15 && r.attempts[0].server_wait);
  model_reply_free(&r);

  /* 500 then success: backoff with jitter */
  snprintf(q, sizeof q, "[{\"kind\":\"status\",\"status\":500}, %s]", ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK(r.nattempts == 2 && r.attempts[0].status == 500);
  CHECK(r.attempts[0].wait >= 0.375 && r.attempts[0].wait <= 0.5 && !r.attempts[0].server_wait);
  model_reply_free(&r);

  /* 503 three times: two retries, then the error; the waits grow */
  queue("[{\"kind\":\"status\",\"status\":503,\"repeat\":3,\"message\":\"Overloaded\"}]");
  CHECK(one_turn(m, &r) == MODEL_API_ERROR);
  CHECK_STR(r.code, "http-503");
  CHECK(r.nattempts == 3);
  CHECK(r.attempts[0].wait >= 0.375 && r.attempts[0].wait <= 0.5);
  CHECK(r.attempts[1].wait >= 0.75 && r.attempts[1].wait <= 1.0);
  CHECK(r.attempts[2].wait == 0);
  CHECK(contains(r.message, "after 3 attempts") && contains(r.message, "Overloaded"));
  model_reply_free(&r);
  log = server_log();
  CHECK(json_array_size(log) == 3);
  CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(log, 2), "headers"),
                                              "x-stainless-retry-count")), "2");
  json_decref(log);

  /* x-should-retry overrides the status, both ways */
  snprintf(q, sizeof q, "[{\"kind\":\"status\",\"status\":500,\"headers\":{\"x-should-retry\":\"false\"}}, %s]",
           ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_API_ERROR);
  CHECK(r.nattempts == 1 && r.http_status == 500);
  model_reply_free(&r);
  snprintf(q, sizeof q, "[{\"kind\":\"status\",\"status\":400,\"headers\":{\"x-should-retry\":\"true\"}}, %s]",
           ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK(r.nattempts == 2);
  model_reply_free(&r);

  /* 4xx are not retried and name the likely fix */
  struct { int st; const char *hint; } fours[] = {
    {400, "unsupported parameter"}, {401, "OPENAI_API_KEY"}, {403, "permission"}, {404, "model name"},
    {422, "unsupported parameter"}};
  for (size_t k = 0; k < sizeof fours / sizeof *fours; k++) {
    snprintf(q, sizeof q, "[{\"kind\":\"status\",\"status\":%d,\"message\":\"The parameter 'x' is odd.\"}]",
             fours[k].st);
    queue(q);
    CHECK(one_turn(m, &r) == MODEL_API_ERROR);
    CHECK(r.nattempts == 1 && r.http_status == fours[k].st);
    CHECK(contains(r.message, fours[k].hint) && contains(r.message, "The parameter 'x' is odd."));
    model_reply_free(&r);
  }

  /* a stall: the request timeout, then a retry that succeeds */
  model_close(m);
  m = open_model(spec, stream, MODEL_MODE_TOOLS, 1, 400);
  snprintf(q, sizeof q, "[{\"kind\":\"stall\",\"seconds\":2}, %s]", ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK(r.nattempts == 2 && r.attempts[0].error == MHTTP_ETIMEOUT);
  CHECK(r.attempts[0].wait >= 0.375 && r.attempts[0].wait <= 0.5);
  model_reply_free(&r);
  model_close(m);
  m = open_model(spec, stream, MODEL_MODE_TOOLS, 0, 400);
  queue("[{\"kind\":\"stall\",\"seconds\":2}]");
  CHECK(one_turn(m, &r) == MODEL_TRANSPORT);
  CHECK_STR(r.code, "timeout");
  CHECK(r.nattempts == 1);
  model_reply_free(&r);
  model_close(m);
}

/* The key: a wrong one is refused and the server's echo of it is redacted. */
static void test_wrong_key(void) {
  setenv("OPENAI_API_KEY", "sk-wrong-Abcdefgh12345678", 1);
  model *m = open_model("openai", 0, MODEL_MODE_TOOLS, 2, 0);
  model_Reply r;
  queue("[]");
  CHECK(one_turn(m, &r) == MODEL_API_ERROR);
  CHECK_STR(r.code, "http-401");
  CHECK(r.nattempts == 1);
  CHECK(contains(r.message, "OPENAI_API_KEY") && contains(r.message, "Incorrect API key provided"));
  CHECK(!contains(r.message, "Abcdefgh") && !contains(r.response_body, "Abcdefgh"));
  model_reply_free(&r);
  model_close(m);
  setenv("OPENAI_API_KEY", KEY, 1);
  /* organisation and project headers */
  setenv("OPENAI_ORG_ID", "org-123", 1);
  setenv("OPENAI_PROJECT_ID", "proj-456", 1);
  m = open_model("openai", 0, MODEL_MODE_TOOLS, 2, 0);
  char q[512];
  snprintf(q, sizeof q, "[%s]", ACTION_EVAL);
  queue(q);
  CHECK(one_turn(m, &r) == MODEL_OK);
  model_reply_free(&r);
  json_t *log = server_log();
  json_t *h = json_object_get(json_array_get(log, 0), "headers");
  CHECK_STR(json_string_value(json_object_get(h, "openai-organization")), "org-123");
  CHECK_STR(json_string_value(json_object_get(h, "openai-project")), "proj-456");
  json_decref(log);
  model_close(m);
  unsetenv("OPENAI_ORG_ID");
  unsetenv("OPENAI_PROJECT_ID");
}

/* The recorded request: JSON, without the constant parts, the oldest turns
** dropped (and counted) when too long, the latest kept. */
static void test_recorded_request(void) {
  model_Options o;
  model_options_init(&o);
  o.max_recorded_body = 3000;
  char err[256];
  model *m = model_open("openai", &o, err, sizeof err);
  model_Conv *c = model_conv_new("Long instructions. Long instructions. Long instructions.");
  char big[600];
  for (int i = 0; i < 20; i++) {
    snprintf(big, sizeof big, "message %d %0500d", i, 0);
    model_conv_user(c, big);
  }
  model_conv_user(c, "the latest message");
  char q[512];
  snprintf(q, sizeof q, "[%s]", ACTION_EVAL);
  queue(q);
  model_Reply r;
  CHECK(model_next(m, c, &r) == MODEL_OK);
  json_t *rec = json_loads(r.request_body, 0, NULL);
  CHECK(rec != NULL);
  CHECK(strlen(r.request_body) <= 3000 && r.request_bytes > 10000);
  CHECK_STR(json_string_value(json_object_get(rec, "instructions")), "[the instructions: 56 characters]");
  CHECK(json_is_string(json_object_get(rec, "tools")));
  CHECK(json_integer_value(json_object_get(rec, "omitted_items")) > 10);
  json_t *in = json_object_get(rec, "input");
  CHECK_STR(json_string_value(json_object_get(json_array_get(in, json_array_size(in) - 1), "content")),
            "the latest message");
  json_decref(rec);
  model_reply_free(&r);
  model_conv_free(c);
  model_close(m);
}

/* Nobody listens: connection errors are retried, then reported. */
static void test_refused(void) {
  setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1", 1);
  model *m = open_model("openai", 0, MODEL_MODE_TOOLS, 1, 0);
  model_Reply r;
  CHECK(one_turn(m, &r) == MODEL_TRANSPORT);
  CHECK_STR(r.code, "connect");
  CHECK(r.nattempts == 2 && r.attempts[0].error == MHTTP_ECONNECT && r.attempts[0].wait > 0);
  CHECK(contains(r.message, "failed after 2 attempts"));
  model_reply_free(&r);
  model_close(m);
  setenv("OPENAI_BASE_URL", base, 1);
}

static void test_scripted(void) {
  char path[300], spec[320], err[512];
  snprintf(path, sizeof path, "%s/script.jsonl", tmpdir);
  FILE *f = fopen(path, "w");
  fprintf(f, "# a comment\n\n"
             "{\"type\":\"evaluate\",\"source\":\"(defun f (x) (* 2 x))\"}\n"
             "{\"type\":\"evaluate\",\"source\":\"(f 2)\",\"generation\":3}\n"
             "{\"type\":\"evaluate\",\"source\":(f)}\n"
             "{\"type\":\"evaluate\",\"code\":\"(f)\"}\n"
             "  {\"type\":\"finish\",\"summary\":\"done\"}\n");
  fclose(f);
  snprintf(spec, sizeof spec, "scripted:%s", path);
  model *m = model_open(spec, NULL, err, sizeof err);
  CHECK(m != NULL);
  CHECK_STR(model_kind(m), "scripted");
  CHECK(contains(model_describe(m), "5 actions"));
  model_Reply r;
  CHECK(one_turn(m, &r) == MODEL_OK && r.pinned_generation == -1);
  CHECK_STR(action_type(&r), "evaluate");
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_OK && r.pinned_generation == 3);
  CHECK(json_object_get(r.action, "generation") == NULL);
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_INVALID);
  CHECK_STR(r.code, "invalid-json");
  CHECK(contains(r.message, "line 5 of"));
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_INVALID);
  CHECK_STR(r.code, "invalid-action");
  CHECK(contains(r.message, "has no field \"code\""));
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "finish");
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_EXHAUSTED);
  model_reply_free(&r);
  model_close(m);
  snprintf(spec, sizeof spec, "scripted:%s/missing", tmpdir);
  CHECK(model_open(spec, NULL, err, sizeof err) == NULL && contains(err, "cannot read the script"));

  /* a supervisor's model: verdicts only */
  f = fopen(path, "w");
  fprintf(f, "{\"type\":\"repair\",\"source\":\"(defun f (x) (* 2 x))\",\"reason\":\"doubles\"}\n"
             "{\"type\":\"evaluate\",\"source\":\"(f 2)\"}\n"
             "{\"type\":\"expected\",\"reason\":\"on purpose\"}\n");
  fclose(f);
  snprintf(spec, sizeof spec, "scripted:%s", path);
  model_Options o;
  model_options_init(&o);
  o.actions = MACTION_VERDICT;
  m = model_open(spec, &o, err, sizeof err);
  CHECK(m != NULL);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "repair");
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_INVALID);
  CHECK(contains(r.message, "there is no action \"evaluate\"; the actions are repair, expected, insufficient_evidence"));
  model_reply_free(&r);
  CHECK(one_turn(m, &r) == MODEL_OK);
  CHECK_STR(action_type(&r), "expected");
  model_reply_free(&r);
  model_close(m);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_model PYTHON model_server.py\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  start_server(argv[1], argv[2]);
  test_schema();
  test_sse();
  test_policy();
  test_secrets();
  test_conv();
  test_scripted();
  const char *specs[] = {"openai", "chat"};
  for (int s = 0; s < 2; s++)
    for (int stream = 0; stream < 2; stream++) test_faults(specs[s], stream);
  test_retries("openai", 0);
  test_retries("chat", 1);
  test_wrong_key();
  test_recorded_request();
  test_refused();
  stop_server();
  return CHECK_DONE();
}
