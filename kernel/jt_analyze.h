/*
** jt_analyze.h — the evaluator functions that analysed nodes point to.
** Shared by analyze.c (which builds nodes) and eval.c (which defines them).
*/
#ifndef jt_analyze_h
#define jt_analyze_h

#include "jt_eval.h"

#define JT_EV_LIST(X) \
  X(const) X(lref_stack) X(lref0) X(lref) X(lset_stack) X(lset) \
  X(gref) X(gset) X(if) X(progn) X(let) X(lambda) X(callg) X(callundef) X(calll) \
  X(callx) X(block) X(block_nl) X(return_local) X(return_nl) X(tagbody) \
  X(go_local) X(go_nl) X(catch) X(throw) X(unwind_protect) X(fglobal) \
  X(fsetf) X(mvcall) X(mvprog1) X(mvbind) X(dbind) X(defun) X(progv) \
  X(add2) X(sub2) X(lt2) X(gt2) X(le2) X(ge2) X(numeq2) X(add1) X(sub1) \
  X(car) X(cdr) X(cons) X(eq) X(not) X(or)

#define JT_EV_DECL(name) jt_V jt_ev_##name(jt_State *S, const jt_Node *n, jt_V env);
JT_EV_LIST(JT_EV_DECL)
#undef JT_EV_DECL

#endif
