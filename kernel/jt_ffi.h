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

#endif
