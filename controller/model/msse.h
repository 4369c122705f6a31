/*
** msse.h — an incremental parser of server-sent events (the
** text/event-stream format of the HTML standard), as the streaming model
** APIs send them.
**
** Feed it bytes as they arrive, in pieces of any size; each complete event
** (ended by a blank line) is handed to the callback with its name ("event:"
** field, "" when none) and its data (the "data:" lines joined by "\n").
** Lines end with "\n", "\r\n" or "\r"; a line starting with ":" is a
** comment; one space after the colon is dropped; "id:" and "retry:" are
** accepted and ignored (the clients never reconnect).  A byte-order mark
** at the very start is skipped.
*/
#ifndef jiti_msse_h
#define jiti_msse_h

#include <stddef.h>

/* Return 0 to go on; anything else stops msse_feed, which returns it. */
typedef int (*msse_callback)(void *ud, const char *event, const char *data, size_t len);

typedef struct msse {
  msse_callback cb;
  void *ud;
  char *line;              /* the line being read */
  size_t line_len, line_cap;
  char *data;              /* data of the event being read */
  size_t data_len, data_cap;
  char event[128];         /* its name (longer names are cut) */
  int has_data;            /* a data: field was seen */
  int pending;             /* some field of an event was seen: an end of input now cuts it */
  int cr;                  /* the last byte was "\r": a following "\n" ends nothing */
  int started;             /* bytes were fed (the BOM check is done) */
  size_t max_event;        /* largest event data accepted (bytes) */
  int nomem;
} msse;

/* Initialise p; max_event: the largest event accepted (0: 16 MiB). */
void msse_init(msse *p, msse_callback cb, void *ud, size_t max_event);

/* Parse len bytes.  Returns 0; the callback's non-zero value when it
** stopped; MSSE_ETOOBIG when an event's data exceeds max_event; MSSE_ENOMEM. */
enum { MSSE_ETOOBIG = -100, MSSE_ENOMEM = -101 };
int msse_feed(msse *p, const char *buf, size_t len);

/* The input ended: 1 when it ended in the middle of an event (fields seen
** but no blank line: the standard drops such an event, and a client should
** treat it as a cut stream), else 0. */
int msse_cut(const msse *p);

void msse_free(msse *p);

#endif
