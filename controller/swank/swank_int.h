/*
** swank_int.h — the parts of `jiti swank` (swank.h) and what they share:
** one editor connection (Swank), its frames (sframe.c), its kernel
** requests (skernel.c), the table of RPCs (srpc.c) and their homes:
** evaluation and compilation (seval.c), the debugger (sldb.c), what the
** editor asks about names (sintro.c), the inspector (sinspect.c).
*/
#ifndef jiti_swank_int_h
#define jiti_swank_int_h

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "kclient.h"
#include "sexp.h"

#define SWANK_FRAME_MAX ((size_t)16 << 20)  /* bytes of one message from the editor */
#define SWANK_THREAD 1                      /* the thread id the editor is told */
#define SWANK_LEVELS_MAX 16                 /* debugger levels (the kernel stops at 8) */
#define SWANK_INSPECT_DEPTH 16              /* parts followed from an inspected value */

/* What a debugger level's opening request waits for. */
typedef enum { OWNER_NONE, OWNER_LISTENER, OWNER_INTERACTIVE, OWNER_GRAB, OWNER_FRAME } swank_Owner;

typedef struct swank_Level {
  int64_t rex;          /* the :emacs-rex answered when the level ends; 0: none */
  swank_Owner owner;
} swank_Level;

typedef struct Swank {
  kclient k;
  const char *dir;
  int fd;                     /* the editor's connection; -1 once closed */
  char *in;                   /* bytes from the editor not yet taken */
  size_t inlen, incap;
  sx **queue;                 /* messages read while the kernel worked */
  size_t nq, capq;
  json_int_t gen;             /* the generation the editor last saw */
  json_int_t asked;           /* the generation the last transaction was sent with */
  int gen_known;
  json_t *pause;              /* the pause the debugger shows; NULL: none */
  int levels;                 /* debugger levels the editor has open */
  swank_Level level[SWANK_LEVELS_MAX + 1];
  char running_key[33];       /* the idempotency key of the running call ("" none) */
  char *last[3];              /* *, **, ***: printed values, NULL when unreadable */
  char *insp[SWANK_INSPECT_DEPTH + 1];  /* the inspector's expressions, outermost first */
  int ninsp;
  char *abort_msg;            /* RPC_ABORT's reason */
  const char *version;        /* SLIME's version answered in connection-info */
  int trace;                  /* --trace: every message in and out on stderr */
} Swank;

/* ---- sframe.c: the wire's frames (6 hex digits of length, then UTF-8 text) */

/* Send one message (the writer's text); -1 when the editor is gone. */
int sframe_send(Swank *S, const sxw *w);
/* Read what the editor sent without blocking; each complete message is
** parsed and queued.  0 ok, -1 the connection ended or broke the wire's
** rules (then S->fd is closed; why is logged). */
int sframe_pump(Swank *S);
/* The first frame of a connection when a secret is required: 1 it is the
** secret, 0 not (or the peer went silent for 20 s). */
int sframe_secret(int fd, const char *secret);
/* The next queued message (the caller frees it), NULL when none. */
sx *sframe_next(Swank *S);
/* :write-string text [:repl-result] */
void sframe_write_string(Swank *S, const char *text, int result);
/* (:return (:ok VALUE) id) with VALUE the writer's one item; (:abort msg) */
void sframe_return_ok(Swank *S, int64_t id, const sxw *value);
void sframe_return_abort(Swank *S, int64_t id, const char *why);
/* one line on stderr, "jiti swank: ..." */
void swank_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- skernel.c: requests to the kernel */

/* Send req (stolen) and wait for its reply, reading the editor meanwhile
** (an interrupt is acted on at once, other messages queued).  The reply,
** or NULL with k.err set. */
json_t *skernel_request(Swank *S, json_t *req);
/* An application call of the editor: source, package (may be NULL), at
** the generation the editor saw (gen: 0 none), pausing on an unhandled
** error when pausable; keyed, so that an interrupt can name it.  The reply
** (its generation becomes the editor's) or NULL. */
json_t *skernel_call(Swank *S, const char *source, const char *package, int pausable);
/* A read-only helper evaluation (completion, arglists ...): the printed
** value parsed as wire data, or NULL (paused, an error, unreadable). */
sx *skernel_helper(Swank *S, const char *source, const char *package);
/* Remember a reply's generation as the editor's. */
void skernel_saw(Swank *S, json_t *reply);
/* An act on the pause (action stolen) at the pause's generation. */
json_t *skernel_act(Swank *S, json_t *action);
/* A Lisp string literal of s, into a fresh buffer. */
char *skernel_lisp_string(const char *s);
/* The package to send: the editor's name for it, NULL for nil. */
const char *skernel_package(const sx *pkg);

/* ---- srpc.c: one handler per RPC */

enum { RPC_OK, RPC_ABORT, RPC_DEFER };
/* Run one :emacs-rex form; answers it unless deferred. */
void srpc_rex(Swank *S, sx *form, const sx *package, int64_t id);
void swank_set_abort(Swank *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef int (*srpc_Fn)(Swank *S, const sx *form, const sx *package, int64_t id, sxw *out);

/* seval.c */
int seval_listener(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int seval_interactive(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int seval_grab(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int seval_compile_string(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int seval_compile_file(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int seval_load_file(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
/* A transaction's reply for the request that waits on it (owner), once
** no pause is left: values, output, or why it failed. */
void seval_finish(Swank *S, swank_Owner owner, int64_t id, json_t *reply);

/* sldb.c */
/* A reply (stolen; NULL: the request failed, k.err says why) that may
** carry a pause: the debugger follows it.  owner/id: the
** request that caused it.  RPC_DEFER when the request is answered later,
** RPC_OK/RPC_ABORT when it is answered now (out holds the value). */
int sldb_follow(Swank *S, json_t *reply, swank_Owner owner, int64_t id, sxw *out);
/* Open the debugger on a pause another client left (observe), if any. */
void sldb_attach(Swank *S);
int sldb_info(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_backtrace(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_locals(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_eval_in_frame(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_restart(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_abort(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_toplevel(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_continue(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_restart_frame(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_return_from_frame(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sldb_condition(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);

/* sintro.c */
int sintro_simple_completions(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_fuzzy_completions(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_arglist(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_autodoc(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_describe(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_documentation(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_apropos(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_xref(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_macroexpand(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sintro_find_definitions(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
/* The best source location known for a definition (the kernel's inspect
** entry, NULL: none) (a
** :location form on out, or (:error "...")): the one place to plug in
** the file and line of a definition once entries keep them. */
void sintro_location(Swank *S, json_t *entry, sxw *out);

/* sinspect.c */
int sinspect_init(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sinspect_part(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sinspect_pop(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sinspect_reinspect(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sinspect_range(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);
int sinspect_quit(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out);

#endif
