/*
** mcurl.c — libcurl, loaded at first use (mcurl.h).
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mcurl.h"

#define DEFAULT_LIBRARY "libcurl.so.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mcurl_Api api;
static const mcurl_Api *loaded;
static char error[512];

/* dlsym returns a data pointer; POSIX guarantees it converts to a function
** pointer, which this copy does without the cast C forbids. */
static int bind_fn(void *lib, const char *path, const char *name, void *slot, size_t size) {
  void *p = dlsym(lib, name);
  if (!p) {
    snprintf(error, sizeof error, "libcurl could not be used: %s lacks %s", path, name);
    return 0;
  }
  memcpy(slot, &p, size);
  return 1;
}

#define BIND(field, name) bind_fn(lib, path, name, &api.field, sizeof api.field)

static void load(void) {
  const char *path = getenv("JITI_LIBCURL");
  if (!path || !*path) path = DEFAULT_LIBRARY;
  /* RTLD_LOCAL: libcurl's names stay out of the program's namespace */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(error, sizeof error, "libcurl could not be loaded: %s", why ? why : path);
    return;
  }
  if (!BIND(global_init, "curl_global_init") || !BIND(easy_init, "curl_easy_init") ||
      !BIND(easy_cleanup, "curl_easy_cleanup") || !BIND(easy_reset, "curl_easy_reset") ||
      !BIND(easy_setopt, "curl_easy_setopt") || !BIND(easy_perform, "curl_easy_perform") ||
      !BIND(easy_getinfo, "curl_easy_getinfo") || !BIND(easy_strerror, "curl_easy_strerror") ||
      !BIND(slist_append, "curl_slist_append") || !BIND(slist_free_all, "curl_slist_free_all") ||
      !BIND(getdate, "curl_getdate")) {
    dlclose(lib);
    return;
  }
  /* libcurl's global state (TLS libraries) is set up once per process;
  ** the library stays loaded until the process ends */
  if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    snprintf(error, sizeof error, "libcurl failed to initialise");
    return;
  }
  loaded = &api;
}

const mcurl_Api *mcurl(void) {
  pthread_once(&once, load);
  return loaded;
}

const char *mcurl_error(void) { return error; }
