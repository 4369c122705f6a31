/*
** dpoll.c — the daemon's event loop (dpoll.h): one epoll set for every
** descriptor, so a turn costs what is ready, not what is registered; a
** registration per descriptor, found by its number; a few timers, scanned
** (the daemon has a handful); the hooks run before each sleep.
**
** The epoll entry of a descriptor carries its number and the generation of
** its registration: an event read in a turn whose registration was removed
** meanwhile (a client freed, a worker replaced, the number reused) is
** dropped, never delivered to the new owner of the number.
*/
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "dpoll.h"

#define DPOLL_MAX_WAIT 3600.0   /* seconds slept at most when nothing is due */
#define DPOLL_RANKS 8

typedef struct Reg {
  dpoll_IoFn fn;          /* NULL: not registered */
  void *ud;
  unsigned mask;
  int rank;
  uint32_t gen;           /* of the registration, in its epoll entry */
} Reg;

typedef struct Timer {
  uint64_t id, turn;      /* turn: the last it fired in */
  double when;
  dpoll_TimerFn fn;
  void *ud;
} Timer;
typedef struct Before { dpoll_BeforeFn fn; void *ud; } Before;

struct DPoll {
  int ep;
  Reg *reg;               /* by descriptor number */
  size_t nreg;            /* its length */
  size_t live;            /* registrations */
  uint32_t gen;
  struct epoll_event *ev; /* the ready list, room for every registration */
  size_t evcap;
  Timer *timer;
  size_t ntimer, timercap;
  uint64_t timer_ids, turns;
  Before *before;
  size_t nbefore;
  int stopped;
};

DPoll *dpoll_open(void) {
  DPoll *P = calloc(1, sizeof *P);
  if (!P) return NULL;
  if ((P->ep = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    free(P);
    return NULL;
  }
  return P;
}

void dpoll_close(DPoll *P) {
  if (!P) return;
  close(P->ep);
  free(P->reg);
  free(P->ev);
  free(P->timer);
  free(P->before);
  free(P);
}

static uint32_t events_of(unsigned mask) {
  return (mask & DPOLL_IN ? EPOLLIN : 0) | (mask & DPOLL_OUT ? EPOLLOUT : 0);
}

static int ctl(DPoll *P, int op, int fd, const Reg *r) {
  struct epoll_event e = {.events = events_of(r->mask), .data.u64 = (uint64_t)r->gen << 32 | (uint32_t)fd};
  return epoll_ctl(P->ep, op, fd, &e);
}

int dpoll_add(DPoll *P, int fd, unsigned mask, int rank, dpoll_IoFn fn, void *ud) {
  if (fd < 0 || !fn || rank < 0 || rank >= DPOLL_RANKS) {
    errno = EINVAL;
    return -1;
  }
  if ((size_t)fd >= P->nreg) {
    size_t n = P->nreg ? P->nreg : 64;
    while (n <= (size_t)fd) n *= 2;
    Reg *r = realloc(P->reg, n * sizeof *r);
    if (!r) return -1;
    memset(r + P->nreg, 0, (n - P->nreg) * sizeof *r);
    P->reg = r;
    P->nreg = n;
  }
  if (P->live + 1 > P->evcap) {
    size_t n = P->evcap ? P->evcap * 2 : 64;
    struct epoll_event *e = realloc(P->ev, n * sizeof *e);
    if (!e) return -1;
    P->ev = e;
    P->evcap = n;
  }
  Reg *r = &P->reg[fd];
  int was = r->fn != NULL;
  Reg next = {fn, ud, mask, rank, ++P->gen};
  /* a descriptor closed without dpoll_del left the set by itself: ADD */
  if (ctl(P, was ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &next) != 0 &&
      (!was || errno != ENOENT || ctl(P, EPOLL_CTL_ADD, fd, &next) != 0))
    return -1;
  *r = next;
  if (!was) P->live++;
  return 0;
}

int dpoll_mask(DPoll *P, int fd, unsigned mask) {
  if (fd < 0 || (size_t)fd >= P->nreg || !P->reg[fd].fn) {
    errno = EBADF;
    return -1;
  }
  Reg *r = &P->reg[fd];
  if (r->mask == mask) return 0;
  Reg next = *r;
  next.mask = mask;
  if (ctl(P, EPOLL_CTL_MOD, fd, &next) != 0) return -1;
  r->mask = mask;
  return 0;
}

void dpoll_del(DPoll *P, int fd) {
  if (fd < 0 || (size_t)fd >= P->nreg || !P->reg[fd].fn) return;
  epoll_ctl(P->ep, EPOLL_CTL_DEL, fd, NULL);
  P->reg[fd] = (Reg){0};
  P->live--;
}

uint64_t dpoll_timer(DPoll *P, double when, dpoll_TimerFn fn, void *ud) {
  if (P->ntimer == P->timercap) {
    size_t n = P->timercap ? P->timercap * 2 : 8;
    Timer *t = realloc(P->timer, n * sizeof *t);
    if (!t) return 0;
    P->timer = t;
    P->timercap = n;
  }
  P->timer[P->ntimer++] = (Timer){++P->timer_ids, P->turns, when, fn, ud};
  return P->timer_ids;
}

void dpoll_timer_del(DPoll *P, uint64_t id) {
  for (size_t i = 0; i < P->ntimer; i++)
    if (P->timer[i].id == id) {
      P->timer[i] = P->timer[--P->ntimer];
      return;
    }
}

int dpoll_before(DPoll *P, dpoll_BeforeFn fn, void *ud) {
  Before *b = realloc(P->before, (P->nbefore + 1) * sizeof *b);
  if (!b) return -1;
  P->before = b;
  P->before[P->nbefore++] = (Before){fn, ud};
  return 0;
}

void dpoll_stop(DPoll *P) { P->stopped = 1; }

/* The timers due now fire, each at most once a turn (one due again at
** once, or added by a timer, waits for the next); then the seconds until
** the soonest left, or < 0. */
static double fire_timers(DPoll *P, double now) {
  uint64_t turn = ++P->turns;
  for (;;) {
    size_t i = 0;
    while (i < P->ntimer && (P->timer[i].turn == turn || P->timer[i].when > now)) i++;
    if (i == P->ntimer || P->stopped) break;
    Timer *t = &P->timer[i];
    t->turn = turn;
    uint64_t id = t->id;
    double again = t->fn(t->ud, now);
    /* (the callback may have added or deleted timers: find it again) */
    for (i = 0; i < P->ntimer && P->timer[i].id != id; i++) {}
    if (i == P->ntimer) continue;
    if (again >= 0) P->timer[i].when = again;
    else P->timer[i] = P->timer[--P->ntimer];
  }
  double soonest = -1;
  for (size_t i = 0; i < P->ntimer; i++) {
    double in = P->timer[i].when > now ? P->timer[i].when - now : 0;
    if (soonest < 0 || in < soonest) soonest = in;
  }
  return soonest;
}

static int wait_ready(DPoll *P, double wake, const sigset_t *during) {
  struct timespec ts = {(time_t)wake, (long)((wake - (double)(time_t)wake) * 1e9)};
  int max = P->live ? (int)P->live : 1;
  int n = epoll_pwait2(P->ep, P->ev, max, &ts, during);
  if (n < 0 && errno == ENOSYS) {   /* a kernel before 5.11: milliseconds, rounded up */
    int ms = (int)(wake * 1000);
    if ((double)ms < wake * 1000) ms++;
    n = epoll_pwait(P->ep, P->ev, max, ms, during);
  }
  return n;
}

/* Deliver the ready events by rank, each if its registration still is
** the one it was read for. */
static void dispatch(DPoll *P, int n) {
  unsigned present = 0;
  for (int i = 0; i < n; i++) {
    int fd = (int)(uint32_t)P->ev[i].data.u64;
    if ((size_t)fd < P->nreg && P->reg[fd].fn) present |= 1u << P->reg[fd].rank;
  }
  for (int rank = 0; rank < DPOLL_RANKS && !P->stopped; rank++) {
    if (!(present & 1u << rank)) continue;
    for (int i = 0; i < n && !P->stopped; i++) {
      uint64_t d = P->ev[i].data.u64;
      int fd = (int)(uint32_t)d;
      Reg *r = (size_t)fd < P->nreg ? &P->reg[fd] : NULL;
      if (!r || !r->fn || r->gen != (uint32_t)(d >> 32) || r->rank != rank) continue;
      uint32_t e = P->ev[i].events;
      unsigned ready = (e & EPOLLIN ? DPOLL_IN : 0) | (e & EPOLLOUT ? DPOLL_OUT : 0) |
                       (e & (EPOLLHUP | EPOLLERR) ? DPOLL_HUP : 0);
      P->ev[i].data.u64 = (uint64_t)-1;   /* delivered: not again at another rank */
      r->fn(r->ud, fd, ready);
    }
  }
}

int dpoll_run(DPoll *P, const sigset_t *during) {
  P->stopped = 0;
  while (!P->stopped) {
    double now = mono_now();
    double wake = fire_timers(P, now);
    if (wake < 0 || wake > DPOLL_MAX_WAIT) wake = DPOLL_MAX_WAIT;
    for (size_t i = 0; i < P->nbefore && !P->stopped; i++) {
      double due = P->before[i].fn(P->before[i].ud, mono_now());
      if (due >= 0 && due < wake) wake = due;
    }
    if (P->stopped) break;
    int n = wait_ready(P, wake, during);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    dispatch(P, n);
  }
  return 0;
}
