/* ffi_probe_fwd.c — a library for the foreign-function tests that defines
** no probe_add but links the probe library, which does: dlsym on its handle
** finds probe_add there, and a grant of this library alone must not give
** it (a grant is exactly the library it names). */
int probe_add(int a, int b);

int probe_fwd_sum(int a, int b) { return probe_add(a, b); }
