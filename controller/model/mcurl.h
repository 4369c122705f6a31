/*
** mcurl.h — libcurl, loaded when the first HTTP client is made.
**
** jiti is one program: the worker, `jiti run`, the kernel and every client
** command start the same binary.  Linked to libcurl, each of them loaded
** and relocated libcurl's thirty-odd libraries (TLS, Kerberos, LDAP, ...)
** at start-up, about 10 million instructions and 3 ms, though only a
** session talking to a model uses them.  So libcurl is opened with dlopen
** by the first mhttp_new (or curl_getdate of a retry-after date) and its
** functions are called through this table; the program is built against
** libcurl's headers only.
**
** The library is libcurl.so.4 (the soname of libcurl 7 and 8), or the file
** the environment variable JITI_LIBCURL names.
*/
#ifndef jiti_mcurl_h
#define jiti_mcurl_h

#include <time.h>
#include <curl/curl.h>

typedef struct mcurl_Api {
  CURLcode (*global_init)(long flags);
  CURL *(*easy_init)(void);
  void (*easy_cleanup)(CURL *curl);
  void (*easy_reset)(CURL *curl);
  CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL *curl);
  CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
  const char *(*easy_strerror)(CURLcode code);
  struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
  void (*slist_free_all)(struct curl_slist *list);
  time_t (*getdate)(const char *s, const time_t *unused);
} mcurl_Api;

/* libcurl's functions, the library loaded and curl_global_init run once
** per process (thread-safe).  NULL when the library cannot be loaded, lacks
** one of the functions, or fails to initialise: mcurl_error() says which. */
const mcurl_Api *mcurl(void);

/* Why mcurl() returned NULL ("" before it was called or when it worked). */
const char *mcurl_error(void);

#endif
