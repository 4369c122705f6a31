/*
** supervise.h — `jiti supervise`: automatic repair's supervisor
** (docs/repair.md).  A client of the running kernel that subscribes to its
** events and takes each incident through the loop: the evidence to a
** model, its verdict (repair, expected, insufficient_evidence), a repair
** verified by the kernel on a shadow of the live worker and applied when
** it passes, or sent back to the model with the reason, up to the
** attempts and the token budgets.
**
**   sv_cmd.c     options, help, the run
**   sv_loop.c    the events, the incidents, one verdict loop per incident
**   sv_prompt.c  the model's instructions and the evidence it is shown
*/
#ifndef jiti_supervise_h
#define jiti_supervise_h

#include <signal.h>
#include <stdint.h>
#include <jansson.h>
#include "kclient.h"
#include "model.h"

/* Exit statuses. */
enum { SV_OK = 0, SV_FAIL = 1, SV_USAGE = 2, SV_INTERRUPTED = 130 };

typedef struct sv_Options {
  const char *store;
  char *model_spec;             /* "openai", "chat", "scripted:FILE" */
  model_Options mopt;
  int scope_world;              /* --scope world: other definitions may change */
  int promote_manual;           /* --promote manual: repairs stay tentative */
  int attempts;                 /* verdicts per incident (default 3) */
  int64_t budget;               /* tokens per incident (0: no limit) */
  int64_t hourly_budget;        /* tokens per hour, all incidents (0: no limit) */
  long verify_timeout_ms;       /* a verification's limit (0: the kernel's) */
  long watch;                   /* calls watched after a repair (-1: the kernel's 20) */
  int until_idle;               /* exit once no incident is open */
  int json;                     /* one JSON object per incident handled */
} sv_Options;

typedef struct sv_Supervisor {
  const sv_Options *o;
  kclient k;                    /* requests */
  kclient ev;                   /* the subscription */
  model *m;
  volatile sig_atomic_t *intr;
  uint64_t *queue;              /* incidents to take, oldest first */
  size_t nqueue, capqueue;
  uint64_t *seen;               /* incidents taken in this run: a look at the
                                   store does not take them again */
  size_t nseen, capseen;
  uint64_t current;             /* the incident awaiting the model now (0: none) */
  int64_t hour_tokens;          /* tokens spent in the current hour */
  double hour_start;
  int handled, repaired;
} sv_Supervisor;

/* sv_loop.c: until interrupted (or, with until_idle, no incident is
** open).  An SV_ status. */
int sv_run(sv_Supervisor *s);

/* sv_prompt.c (malloc'd texts; NULL when out of memory) */
/* The instructions: what a verdict is and how a repair is checked. */
char *sv_instructions(const sv_Options *o);
/* The first message: incident (as the incident request returns it, full),
** traffic ([{request, result}]), the function's entry text (NULL:
** unknown), the invariants ([{name, source}]). */
char *sv_evidence(const sv_Options *o, json_t *incident, json_t *traffic, const char *definition,
                  json_t *invariants);

int cmd_supervise(int argc, char **argv);

#endif
