/*
** dqueue.c — the FIFO queues requests wait in (daemon.h): transactions,
** queries, commands to a paused transaction, and the calls of a batch.
*/
#include <stdlib.h>
#include <string.h>
#include "daemon.h"

/* Room for one more at the tail (the live part moves to the front once
** the popped slots are the larger half). */
static int queue_room(Queue *q) {
  if (q->head + q->n < q->cap) return 0;
  if (q->head && q->head >= q->n) {
    memmove(q->v, q->v + q->head, q->n * sizeof *q->v);
    q->head = 0;
    return 0;
  }
  size_t cap = q->cap ? q->cap * 2 : 16;
  Pending *v = realloc(q->v, cap * sizeof *v);
  if (!v) return -1;
  q->v = v;
  q->cap = cap;
  return 0;
}

int dqueue_push(Queue *q, uint64_t client, json_t *id, json_t *req, proto_Op op) {
  if (queue_room(q)) return -1;
  q->v[q->head + q->n++] = (Pending){client, id ? json_incref(id) : NULL, json_incref(req), op, 0, 0};
  return 0;
}

int dqueue_push_front(Queue *q, Pending p) {
  if (!q->head) {
    if (queue_room(q)) return -1;
    memmove(q->v + 1, q->v, q->n * sizeof *q->v);
    q->head = 1;
  }
  q->v[--q->head] = p;
  q->n++;
  return 0;
}

Pending dqueue_pop(Queue *q) {
  Pending p = q->v[q->head];
  q->n--;
  q->head = q->n ? q->head + 1 : 0;
  return p;
}

Pending dqueue_pop_back(Queue *q) {
  Pending p = q->v[q->head + --q->n];
  if (!q->n) q->head = 0;
  return p;
}

Pending *dqueue_peek(Queue *q) { return q->n ? &q->v[q->head] : NULL; }

Pending *dqueue_back(Queue *q) { return q->n ? &q->v[q->head + q->n - 1] : NULL; }

void dqueue_pending_free(Pending *p) {
  json_decref(p->id);
  json_decref(p->req);
}
