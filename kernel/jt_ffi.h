/*
** jt_ffi.h — foreign functions (ffi.c): the state's grants and declarations.
** The public half (granting libraries) is in jiti.h.
*/
#ifndef jt_ffi_h
#define jt_ffi_h

#include "jt_lib.h"

typedef struct jt_FFI jt_FFI;

void jt_open_ffi(jt_State *S);   /* registers %define-foreign */
void jt_ffi_close(jt_State *S);  /* closes the libraries, frees the tables */

/* Declare from a stored (define-foreign ...) form, as importing a world
** does: like evaluating it, except that a library not granted (or that
** did not open) or a symbol it lacks leaves the declaration installed but
** unavailable (jiti_foreign_unavailable lists it; a call signals why)
** instead of signalling.  A malformed form signals.  Returns the name. */
jt_V jt_ffi_import(jt_State *S, jt_V form);

#endif
