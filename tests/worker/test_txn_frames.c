/* test_txn_frames.c — a pause's frames in the transaction layer
** (worker/txn.h): the view lists the program's frames with their locals;
** evaluate in a frame reads and sets locals (the resumed computation sees
** the new value; the view shows it); return-from-frame and restart-frame
** (after a redefinition); the refusals — a frame out of range, a frame of
** the level below, values that signal or are not a list, a source the gate
** refuses — each counted by the step budget; the generations they move. */
#include <stdlib.h>
#include <jansson.h>
#include "txn.h"
#include "check.h"

typedef struct Step {
  txn_CmdType type;
  const char *source; /* EVALUATE; RESUME: a restart name */
  const char *args;
  int in_frame, frame;
} Step;

typedef struct Seen {
  uint64_t generation;
  int level, nframes, steps_used;
  char frame0[64], frame1[64];
  char locals1[256];
  txn_Reason refusal;
  char error[512];
  char last_value[128];
  char observe_frames[512];
} Seen;

typedef struct Script {
  const Step *steps;
  int n, next, nseen;
  Seen seen[16];
  txn_World *W;
} Script;

static int script_fn(void *ud, const txn_View *v, txn_Command *c) {
  Script *s = ud;
  if (s->nseen < 16) {
    Seen *x = &s->seen[s->nseen++];
    memset(x, 0, sizeof *x);
    x->generation = v->generation;
    x->level = v->level;
    x->nframes = v->nframes;
    x->steps_used = v->steps_used;
    if (v->nframes > 0) snprintf(x->frame0, sizeof x->frame0, "%s", v->frames[0].function);
    if (v->nframes > 1) {
      snprintf(x->frame1, sizeof x->frame1, "%s", v->frames[1].function);
      for (int k = 0; k < v->frames[1].nlocals; k++) {
        size_t n = strlen(x->locals1);
        snprintf(x->locals1 + n, sizeof x->locals1 - n, "%s=%s ", v->frames[1].locals[k].name,
                 v->frames[1].locals[k].value);
      }
    }
    x->refusal = v->refusal;
    snprintf(x->error, sizeof x->error, "%s", v->error ? v->error : "");
    snprintf(x->last_value, sizeof x->last_value, "%s", v->last_value ? v->last_value : "");
    char *o = txn_observe(s->W, 0);
    json_t *j = json_loads(o, 0, NULL);
    char *f = json_dumps(json_object_get(json_object_get(j, "pause"), "frames"), JSON_COMPACT);
    snprintf(x->observe_frames, sizeof x->observe_frames, "%s", f ? f : "");
    free(f);
    json_decref(j);
    free(o);
  }
  memset(c, 0, sizeof *c);
  c->generation = v->generation;
  if (s->next >= s->n) {
    c->type = TXN_CMD_ABORT;
    return 0;
  }
  const Step *st = &s->steps[s->next++];
  c->type = st->type;
  c->source = st->source;
  c->args = st->args;
  c->in_frame = st->in_frame;
  c->frame = st->frame;
  if (st->type == TXN_CMD_RESUME)
    for (int i = 0; i < v->nrestarts; i++)
      if (!strcmp(v->restarts[i].name, st->source)) c->restart_id = v->restarts[i].id;
  return 0;
}

static txn_Reason run(txn_World *W, const char *src, Script *s, txn_Outcome *o) {
  s->W = W;
  txn_Reason r = txn_attempt(W, txn_generation(W), src, TXN_ACTION, script_fn, s, o);
  if (r == TXN_ACCEPTED) CHECK(txn_commit(W) == 0);
  return r;
}

static void define(txn_World *W, const char *src) {
  txn_Outcome o;
  CHECK(txn_attempt(W, txn_generation(W), src, TXN_ACTION, NULL, NULL, &o) == TXN_ACCEPTED);
  CHECK(txn_commit(W) == 0);
  txn_outcome_free(&o);
}

#define RATIO "(defun ratio (n) (let ((d 0)) (loop (restart-case (return (/ n d)) (retry () nil)))))"

static void test_evaluate_in_frame(void) {
  txn_World *W = txn_open(NULL);
  define(W, RATIO);
  Step steps[] = {
    {TXN_CMD_EVALUATE, "d", NULL, 1, 1},
    {TXN_CMD_EVALUATE, "d", NULL, 1, 2},            /* no frame 2 */
    {TXN_CMD_EVALUATE, "#.(setq d 9)", NULL, 1, 1}, /* the gate */
    {TXN_CMD_EVALUATE, "(setq d 2)", NULL, 1, 1},
    {TXN_CMD_RESUME, "RETRY", NULL, 0, 0},
  };
  Script s = {steps, 5, 0, 0, {{0}}, NULL};
  txn_Outcome o;
  CHECK(run(W, "(ratio 10)", &s, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "5");
  txn_outcome_free(&o);
  CHECK(s.nseen == 5);
  CHECK(s.seen[0].nframes == 2);
  CHECK_STR(s.seen[0].frame0, "/");
  CHECK_STR(s.seen[0].frame1, "RATIO");
  CHECK_STR(s.seen[0].locals1, "N=10 D=0 ");
  CHECK_STR(s.seen[0].observe_frames,
            "[{\"frame\":0,\"function\":\"/\",\"args\":[\"10\",\"0\"],\"locals\":[]},"
            "{\"frame\":1,\"function\":\"RATIO\",\"args\":[\"10\"],\"locals\":[{\"name\":\"N\",\"value\":\"10\"},"
            "{\"name\":\"D\",\"value\":\"0\"}]}]");
  CHECK_STR(s.seen[1].last_value, "0");
  CHECK(s.seen[2].refusal == TXN_INVALID_ARGUMENTS);
  CHECK(strstr(s.seen[2].error, "no frame 2: its frames are 0 to 1") != NULL);
  CHECK(s.seen[3].refusal == TXN_REJECTED_BY_GATE);
  CHECK_STR(s.seen[4].last_value, "2");
  CHECK_STR(s.seen[4].locals1, "N=10 D=2 "); /* the view shows the new value */
  CHECK(s.seen[4].steps_used == 4);          /* refusals count */
  /* repairs do not move the generation */
  CHECK(s.seen[4].generation == s.seen[0].generation);
  txn_close(W);
}

static void test_return_and_restart(void) {
  txn_World *W = txn_open(NULL);
  define(W, RATIO);
  Step steps[] = {
    {TXN_CMD_RETURN_FROM_FRAME, NULL, "(cons 1 2)", 0, 0},       /* not a list */
    {TXN_CMD_RETURN_FROM_FRAME, NULL, "(error \"nope\")", 0, 0}, /* signals */
    {TXN_CMD_RETURN_FROM_FRAME, NULL, "#.(list 1)", 0, 0},       /* the gate */
    {TXN_CMD_RESTART_FRAME, NULL, NULL, 0, 7},                   /* no frame 7 */
    {TXN_CMD_RETURN_FROM_FRAME, NULL, "(list 41)", 0, 0},
  };
  Script s = {steps, 5, 0, 0, {{0}}, NULL};
  txn_Outcome o;
  uint64_t g0 = txn_generation(W);
  CHECK(run(W, "(1+ (ratio 10))", &s, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "42");
  CHECK(o.generation == g0 + 2); /* paused, resumed */
  txn_outcome_free(&o);
  CHECK(s.nseen == 5);
  CHECK(s.seen[1].refusal == TXN_INVALID_ARGUMENTS && strstr(s.seen[1].error, "list") != NULL);
  CHECK(s.seen[2].refusal == TXN_INVALID_ARGUMENTS && strstr(s.seen[2].error, "nope") != NULL);
  CHECK(s.seen[3].refusal == TXN_REJECTED_BY_GATE);
  CHECK(s.seen[4].refusal == TXN_INVALID_ARGUMENTS && strstr(s.seen[4].error, "no frame 7") != NULL);
  for (int i = 1; i < 5; i++) CHECK(s.seen[i].generation == s.seen[0].generation);

  /* restart-frame after a redefinition runs the new definition */
  Step st2[] = {
    {TXN_CMD_EVALUATE, "(defun ratio (n) (* n 100))", NULL, 0, 0},
    {TXN_CMD_RESTART_FRAME, NULL, NULL, 0, 1},
  };
  define(W, RATIO);
  Script s2 = {st2, 2, 0, 0, {{0}}, NULL};
  CHECK(run(W, "(list (ratio 3))", &s2, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "(300)");
  txn_outcome_free(&o);
  txn_close(W);
}

static void test_levels(void) {
  txn_World *W = txn_open(NULL);
  define(W, "(defun ratio (n) (let ((d 0)) (/ n d)))");
  define(W, "(defun inner (k) (let ((m (* k 2))) (car m)))");
  Step steps[] = {
    {TXN_CMD_EVALUATE, "(inner 4)", NULL, 0, 0}, /* level 2 */
    {TXN_CMD_EVALUATE, "d", NULL, 1, 1},         /* RATIO is level 1's */
    {TXN_CMD_EVALUATE, "m", NULL, 1, 0},
    {TXN_CMD_RETURN_FROM_FRAME, NULL, "(list :done)", 0, 0}, /* the repair returns :DONE */
    {TXN_CMD_RETURN_FROM_FRAME, NULL, "(list 3)", 0, 1},
  };
  Script s = {steps, 5, 0, 0, {{0}}, NULL};
  txn_Outcome o;
  CHECK(run(W, "(ratio 9)", &s, &o) == TXN_ACCEPTED);
  CHECK_STR(o.value, "3");
  txn_outcome_free(&o);
  CHECK(s.nseen == 5);
  CHECK(s.seen[1].level == 2 && s.seen[1].nframes == 1);
  CHECK_STR(s.seen[1].frame0, "INNER");
  CHECK(s.seen[2].refusal == TXN_INVALID_ARGUMENTS);
  CHECK(strstr(s.seen[2].error, "the frames of level 1 are reached after leaving this level") != NULL);
  CHECK_STR(s.seen[3].last_value, "8");
  CHECK(s.seen[4].level == 1);
  CHECK_STR(s.seen[4].last_value, ":DONE");
  CHECK_STR(s.seen[4].frame1, "RATIO");
  txn_close(W);
}

int main(void) {
  test_evaluate_in_frame();
  test_return_and_restart();
  test_levels();
  return CHECK_DONE();
}
