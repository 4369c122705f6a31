/*
** maction.h — the actions a model may propose, defined once.
**
** One table (maction.c) lists every action kind with its fields, their
** types and their descriptions.  From it come:
**   - the strict function tools of the Responses and Chat Completions APIs
**     (one tool per kind; every property required; a field that may be
**     absent is a union with null; additionalProperties false);
**   - the structured-output schema: one object {"action": <one of the
**     kinds>} (the root of a strict schema must be an object, not anyOf);
**   - the validator every proposal passes, whatever produced it (a real
**     model, a compatible server that does not enforce schemas, or a
**     scripted file), and the prompt's list of actions.
**
** Each caller offers a set of the kinds (maction_Set): a session the
** session's, the repair supervisor its verdicts; tools, schema, validator
** and list take the set, so a model is shown and allowed exactly those.
**
** A validated action is a canonical JSON object: {"type": KIND, fields...}
** with exactly the kind's fields, null fields left out.  The generation is
** not part of it: the session tags each action with the generation of the
** view its prompt carried.
*/
#ifndef jiti_maction_h
#define jiti_maction_h

#include <stddef.h>
#include <jansson.h>

typedef enum maction_Kind {
  MA_EVALUATE = 0,   /* {source, frame?}: one form, run as a checked transaction
                        (while paused: a repair, in a frame when given) */
  MA_PREVIEW,        /* {source}: evaluate, report, always restore */
  MA_RESUME,         /* {restart_id, arguments?}: continue a pause */
  MA_ABORT,          /* {}: abandon the paused transaction */
  MA_INSPECT,        /* {kind?, name}: one entry in full */
  MA_CHECK,          /* {}: run goals and invariants now */
  MA_ROLLBACK,       /* {revision}: publish a revision equal to an older one */
  MA_FINISH,         /* {summary}: the request is done (or cannot be) */
  /* an incident's verdicts (docs/repair.md) */
  MA_REPAIR,         /* {source, reason, intended_changes?}: replacement definitions */
  MA_EXPECTED,       /* {reason}: the failure is the application's intent */
  MA_INSUFFICIENT_EVIDENCE,  /* {reason}: no repair can be told from the evidence */
  MA_KIND_COUNT
} maction_Kind;

/* A set of kinds: bit k for kind k. */
typedef unsigned maction_Set;
#define MACTION_BIT(k) (1u << (k))
/* a session's actions */
#define MACTION_SESSION                                                                                  \
  (MACTION_BIT(MA_EVALUATE) | MACTION_BIT(MA_PREVIEW) | MACTION_BIT(MA_RESUME) | MACTION_BIT(MA_ABORT) | \
   MACTION_BIT(MA_INSPECT) | MACTION_BIT(MA_CHECK) | MACTION_BIT(MA_ROLLBACK) | MACTION_BIT(MA_FINISH))
/* the verdicts on an incident */
#define MACTION_VERDICT (MACTION_BIT(MA_REPAIR) | MACTION_BIT(MA_EXPECTED) | MACTION_BIT(MA_INSUFFICIENT_EVIDENCE))

/* How many kinds set holds. */
int maction_set_size(maction_Set set);

/* The largest source an evaluate/preview may carry (the kernel's gate
** refuses more too); the largest other string field. */
#define MACTION_MAX_SOURCE 16384
#define MACTION_MAX_STRING 4096
/* The highest frame number a pause lists (the kernel's JITI_FRAME_MAX - 1:
** the model library includes nothing of jiti). */
#define MACTION_FRAME_MAX 39

/* "evaluate", "preview", ... ; NULL for an out-of-range kind. */
const char *maction_name(maction_Kind k);

/* The kind named s, or -1. */
int maction_kind(const char *s);

/* The kind of a validated action (its "type"), or -1. */
int maction_kind_of(json_t *action);

/* The function tools of the kinds in set, as the Responses API (flavor
** MACTION_RESPONSES: {"type":"function","name",...,"strict":true}) or Chat
** Completions (MACTION_CHAT: {"type":"function","function":{...}}) wants
** them.  A new reference; NULL only when memory is exhausted. */
enum { MACTION_RESPONSES, MACTION_CHAT };
json_t *maction_tools(int flavor, maction_Set set);

/* The structured-output JSON Schema of the kinds in set (root object with
** one member "action").  A new reference. */
json_t *maction_output_schema(maction_Set set);

/* The name the schema is sent under ("jiti_action"). */
#define MACTION_SCHEMA_NAME "jiti_action"

/* Validate a proposal.
**   tool != NULL: a function call named tool whose arguments are args;
**   tool == NULL: a structured output, args = {"action": {...}}.
** On success returns 0 and *out = the canonical action (a new reference).
** On failure returns -1, *out = NULL and err holds a message written for
** the model to read and correct ("action \"evaluate\" needs \"source\" (a
** string)").  Fields that may be null may also be left out.
** A kind not in set is refused like an unknown one (the message lists the
** set's). */
int maction_validate(maction_Set set, const char *tool, json_t *args, json_t **out, char *err, size_t errlen);

/* A human-readable list of the actions, their fields and what each does:
** the prompt's reference (docs/model.md shows the same text).  malloc'd;
** NULL when memory is exhausted. */
char *maction_doc(maction_Set set);

/* A one-line summary of a canonical action for people: "evaluate
** (defun f ...)" with long text shortened to about width bytes.  Written
** to buf (always NUL-terminated). */
void maction_summary(json_t *action, char *buf, size_t len);

#endif
