/*
** dretain.c — the events' retention (daemon.h, docs/store.md
** "Retention"): `jiti kernel --events-keep COUNT` keeps the events of the
** newest COUNT sequence numbers, `--events-max-age DURATION` none older
** than DURATION (either, or both: an event goes when either says so).
** The store decides what is always kept (store_events_prune: the newest
** event, the start of every attempt without an outcome, sessions'
** transcripts); keys and counters are not events and stay.
**
** Pruning is a write like the timed writes of events: the store writer
** makes it (journaled), at most STORE_PRUNE_BATCH events at a time, so
** that a large backlog — a store that grew before it had a bound — goes
** in steps RETAIN_STEP apart while the kernel serves.  After that, it
** looks again RETAIN_PERIOD after events were written, and (with a
** maximum age) every RETAIN_AGE_PERIOD, as events age past the bound.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "daemon.h"

#define RETAIN_STEP 0.05
#define RETAIN_PERIOD 1.0
#define RETAIN_AGE_PERIOD 60.0
#define RETAIN_KEEP_MAX 1000000000000000ull

const char DRETAIN_HELP[] =
  "  --events-keep COUNT  keep the events of the newest COUNT sequence numbers,\n"
  "                    pruning older ones as the kernel runs (also the start of\n"
  "                    every attempt without an outcome, sessions' transcripts\n"
  "                    and the newest event are always kept; keys and counters\n"
  "                    are not events).  Default: no bound\n"
  "  --events-max-age DURATION  prune events older than DURATION (a number with\n"
  "                    s, m, h, d or w; plain seconds without).  Default: none\n";

int dretain_option(const char *cmd, int argc, char **argv, int *i, Retain *r) {
  const char *o = argv[*i];
  int keep = !strcmp(o, "--events-keep");
  if (!keep && strcmp(o, "--events-max-age")) return 0;
  const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (keep) {
    uint64_t n = 0;
    if (!opts_count(v, &n) || !n || n > RETAIN_KEEP_MAX) {
      fprintf(stderr, "jiti %s: --events-keep needs a number of events from 1 to %llu\n", cmd, RETAIN_KEEP_MAX);
      return -1;
    }
    r->keep = n;
  } else if (!opts_duration(v, &r->max_age_ms)) {
    fprintf(stderr, "jiti %s: --events-max-age needs a duration: a number with s, m, h, d or w (30d, 12h; "
            "plain seconds without), from 1 s to 100 years\n", cmd);
    return -1;
  }
  (*i)++;
  return 1;
}

double dretain_due(Daemon *D) {
  Retain *r = &D->retain;
  if ((!r->keep && !r->max_age_ms) || r->running || D->stopping) return -1;
  double now = daemon_now();
  if (!r->done || r->more || D->events.written) return r->next > now ? r->next - now : 0;
  if (!r->max_age_ms) return -1;
  double at = r->age_next > r->next ? r->age_next : r->next;
  return at > now ? at - now : 0;
}

/* A prune handed to the store writer (dsync.c). */
typedef struct PruneWrite {
  DWrite w;                  /* first: the writer's handle on it */
  store_retention r;
  store_pruned out;
} PruneWrite;

static int prune(store_env *s, DWrite *w) {
  PruneWrite *p = (PruneWrite *)w;
  return store_events_prune(s, &p->r, &p->out);
}

static void pruned(Daemon *D, DWrite *w) {
  PruneWrite *p = (PruneWrite *)w;
  Retain *r = &D->retain;
  double now = daemon_now();
  r->running = 0;
  r->done++;
  if (w->rc != STORE_OK) {
    dlog(D, "could not prune events: %s; trying again in a minute", w->err);
    r->more = 0;
    r->next = now + RETAIN_AGE_PERIOD;
  } else {
    if (!r->pruned && p->out.deleted)
      dlog(D, "pruning events to the retention bound (%llu pruned, %llu left)",
           (unsigned long long)p->out.deleted, (unsigned long long)p->out.remaining);
    r->pruned += p->out.deleted;
    r->remaining = p->out.remaining;
    r->more = p->out.more;
    r->next = now + (r->more ? RETAIN_STEP : RETAIN_PERIOD);
  }
  r->age_next = now + RETAIN_AGE_PERIOD;
  free(p);
}

void dretain_run(Daemon *D) {
  Retain *r = &D->retain;
  if (dretain_due(D) != 0 || !D->sync || dsync_busy(D)) return;
  PruneWrite *p = calloc(1, sizeof *p);
  if (!p) return;   /* the next turn tries again */
  p->r = (store_retention){r->keep, r->max_age_ms, 0, 0, STORE_GROUP_SYNC_LATER};
  p->w = (DWrite){prune, pruned, ++D->group.seq, STORE_OK, "", 0, {0}};
  r->running = 1;
  D->events.written = 0;   /* what is written from now on, the next prune looks at */
  dsync_write(D, &p->w);
  dsync_want(D, p->w.seq);
}

json_t *dretain_json(Daemon *D) {
  Retain *r = &D->retain;
  json_t *o = json_pack("{s:I}", "pruned", (json_int_t)r->pruned);
  json_object_set_new(o, "keep", r->keep ? json_integer((json_int_t)r->keep) : json_null());
  json_object_set_new(o, "max_age", r->max_age_ms ? json_integer((json_int_t)(r->max_age_ms / 1000)) : json_null());
  json_object_set_new(o, "remaining", r->done ? json_integer((json_int_t)r->remaining) : json_null());
  return o;
}
