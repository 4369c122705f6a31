/*
** msecret.h — the API key: where it comes from, and keeping it out of
** everything that is printed, recorded or dumped.
**
** The key is read from $OPENAI_API_KEY, else from the file named by
** $OPENAI_API_KEY_FILE (refused when its mode lets the group or others in:
** chmod 600).  It is never taken from the command line (ps would show it).
** Once loaded, core dumps are turned off for the process (RLIMIT_CORE 0).
** Everything kept from a model exchange (bodies, error messages) passes
** msecret_redact.
*/
#ifndef jiti_msecret_h
#define jiti_msecret_h

#include <stddef.h>

/* Load the key into *key (malloc'd; release with msecret_wipe).
** Returns 0 with a key; 1 when neither variable is set (*key NULL); -1
** after writing the reason to err: the file cannot be read, is readable by
** group or others, is empty, or the key has characters that cannot go in
** an HTTP header.  err never contains the key. */
int msecret_load(char **key, char *err, size_t errlen);

/* Overwrite and free a key. */
void msecret_wipe(char *key);

/* Keys shorter than this are placeholders (a local server takes any
** value: "x", "ollama"), not secrets: they are not searched for, which
** would rewrite every such letter or word. */
#define MSECRET_MIN_KEY 8

/* A copy of s (len bytes) with every occurrence of key (may be NULL; at
** least MSECRET_MIN_KEY bytes to count), every "Bearer <token>" and every
** "sk-..." API-key-like token replaced by "[redacted]".  NUL-terminated,
** length in *outlen (may be NULL); NULL when memory is exhausted. */
char *msecret_redact(const char *s, size_t len, const char *key, size_t *outlen);

/* The same in place for every string of j (values and member names, at any
** depth).  0, or -1 when memory is exhausted (j is then partly redacted). */
struct json_t;
int msecret_redact_json(struct json_t *j, const char *key);

#endif
