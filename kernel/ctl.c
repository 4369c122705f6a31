/*
** ctl.c — non-local exits.
**
** Every construct that can be exited non-locally (block, tagbody, catch,
** unwind-protect, handler and restart clauses, the host entry) links a
** jt_Jmp record on the C stack of the function that established it.  An exit
** to record T walks the chain from the top: if an unwind-protect record lies
** above T, control lands there first; its cleanup runs and the exit then
** continues to T.  Landing restores the value stack, root stack, dynamic
** bindings, handler and restart clusters and call records to the heights
** saved in the record, so code between the two points needs no cleanup of
** its own.
*/
#include <stdio.h>
#include <stdlib.h>
#include "jt_eval.h"
#include "jiti.h"

void jt_jmp_push(jt_State *S, jt_Jmp *j, int kind, jt_V tag) {
  j->prev = S->jmp;
  j->kind = kind;
  j->tag = tag;
  j->sp = S->sp;
  j->fp = S->fp;
  j->nroots = S->nroots;
  j->nbind = S->nbind;
  j->handlers = S->handlers;
  j->restarts = S->restarts;
  j->ci = S->ci;
  j->depth = S->depth;
  j->nest = S->nest;
  j->code = 0;
  S->jmp = j;
}

void jt_jmp_pop(jt_State *S, jt_Jmp *j) {
  S->jmp = j->prev;
}

void jt_jmp_restore(jt_State *S, jt_Jmp *j) {
  jt_unbind_to(S, j->nbind);
  S->sp = j->sp;
  S->fp = j->fp;
  S->nroots = j->nroots;
  S->handlers = j->handlers;
  S->restarts = j->restarts;
  S->ci = j->ci;
  S->depth = j->depth;
  S->nest = j->nest;
  S->jmp = j->prev;
}

void jt_unwind_to(jt_State *S, jt_Jmp *target, int code) {
  jt_Jmp *j = S->jmp;
  for (; j && j != target; j = j->prev) {
    if (j->kind == JT_JMP_UNWIND) break;
    if (j->kind == JT_JMP_TOP) {
      /* A host entry lies between: an evaluation nested in the host (a
      ** repair evaluated from the debugger hook) may not jump into the
      ** computation the host is suspended in.  The exit ends at the entry
      ** point as a control-error instead. */
      jt_V msg = jt_string_from_cstr(S, "a non-local exit may not leave a nested evaluation");
      JT_PUSH(S, msg);  /* args[] is not a root: making the condition allocates */
      jt_V args[4] = {JT_SYM(S, K_FORMAT_CONTROL), msg, JT_SYM(S, K_FORMAT_ARGUMENTS), JT_NIL};
      S->pending = jt_make_condition(S, JT_SYM(S, CONTROL_ERROR), 4, args);
      JT_POP(S, 1);
      target = j;
      code = JITI_ERROR;
      break;
    }
  }
  if (!j) {
    /* The target is no longer on the chain: a bug in the caller, since
    ** every user-visible exit point is validated before we get here. */
    j = target;
  }
  if (j != target) {
    S->unwind_target = target;
    S->unwind_code = code;
    j->code = -1;
    jt_jmp_restore(S, j);
    _longjmp(j->jb, 1);
  }
  target->code = code;
  jt_jmp_restore(S, target);
  _longjmp(target->jb, 1);
}

void jt_abort_to_top(jt_State *S, int status, jt_V condition) {
  jt_Jmp *j = S->jmp;
  while (j && j->kind != JT_JMP_TOP) j = j->prev;
  S->pending = condition;
  if (!j) {
    /* No host entry point: the embedding API always establishes one, so
    ** this is unreachable unless the kernel itself is broken. */
    fprintf(stderr, "jiti: fatal: error outside any entry point\n");
    abort();
  }
  jt_unwind_to(S, j, status);
}

bool jt_jmp_active(jt_State *S, const jt_Jmp *target) {
  for (jt_Jmp *j = S->jmp; j; j = j->prev)
    if (j == target) return true;
  return false;
}
