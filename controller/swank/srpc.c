/*
** srpc.c — the RPCs `jiti swank` answers: one table from SLIME's names
** (package prefix dropped) to handlers, and the handlers that need no
** kernel: connection-info, swank-require, create-repl and other
** bookkeeping.  An RPC not in the table is answered (:abort "...") with
** its name, which SLIME shows: docs/editor.md lists what is missing.
*/
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "swank_int.h"
#include "jiti.h"

void swank_set_abort(Swank *S, const char *fmt, ...) {
  free(S->abort_msg);
  S->abort_msg = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&S->abort_msg, fmt, ap) < 0) S->abort_msg = NULL;
  va_end(ap);
}

static int rpc_connection_info(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)f, (void)pkg, (void)id;
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  sxw_open(o);
  sxw_sym(o, ":pid"), sxw_int(o, getpid());
  /* :spawn: C-c C-c arrives as :emacs-interrupt, never as a signal to our pid */
  sxw_sym(o, ":style"), sxw_sym(o, ":spawn");
  sxw_sym(o, ":encoding"), sxw_open(o), sxw_sym(o, ":coding-systems"), sxw_open(o), sxw_str(o, "utf-8-unix"), sxw_close(o), sxw_close(o);
  sxw_sym(o, ":lisp-implementation"), sxw_open(o);
  sxw_sym(o, ":type"), sxw_str(o, "jiti"), sxw_sym(o, ":name"), sxw_str(o, "jiti");
  sxw_sym(o, ":version"), sxw_str(o, JITI_VERSION), sxw_sym(o, ":program"), sxw_sym(o, "nil"), sxw_close(o);
  sxw_sym(o, ":machine"), sxw_open(o), sxw_sym(o, ":instance"), sxw_str(o, host), sxw_sym(o, ":type"), sxw_str(o, "");
  sxw_sym(o, ":version"), sxw_str(o, ""), sxw_close(o);
  sxw_sym(o, ":features"), sxw_open(o), sxw_str(o, ":jiti"), sxw_str(o, ":common-lisp"), sxw_close(o);
  sxw_sym(o, ":modules"), sxw_open(o), sxw_str(o, "SWANK-REPL"), sxw_close(o);
  sxw_sym(o, ":package"), sxw_open(o), sxw_sym(o, ":name"), sxw_str(o, "COMMON-LISP-USER"), sxw_sym(o, ":prompt");
  sxw_str(o, "CL-USER"), sxw_close(o);
  sxw_sym(o, ":version"), sxw_str(o, S->version);
  sxw_close(o);
  return RPC_OK;
}

/* The contribs SLIME asks for: their Lisp halves are this server's. */
static int rpc_require(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)S, (void)pkg, (void)id;
  sx *mods = sx_at(f, 1);
  if (sx_is(sx_at(mods, 0), "quote")) mods = sx_at(mods, 1);
  sxw_open(o);
  sxw_str(o, "SWANK-REPL");
  for (size_t i = 0; mods && mods->type == SX_LIST && i < mods->len; i++) {
    const char *m = sx_str(mods->items[i]);
    if (!m || !strcasecmp(m, ":swank-repl") || !strcasecmp(m, "swank-repl")) continue;
    char up[128];
    size_t k = 0;
    for (const char *c = m + (*m == ':'); *c && k + 1 < sizeof up; c++) up[k++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    up[k] = 0;
    sxw_str(o, up);
  }
  sxw_close(o);
  return RPC_OK;
}

static int rpc_create_repl(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)f, (void)pkg, (void)id;
  sldb_attach(S);  /* a pause left by another client opens the debugger at once */
  sxw_open(o), sxw_str(o, "COMMON-LISP-USER"), sxw_str(o, "CL-USER"), sxw_close(o);
  return RPC_OK;
}

static int rpc_nil(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)S, (void)f, (void)pkg, (void)id;
  sxw_sym(o, "nil");
  return RPC_OK;
}

static int rpc_default_directory(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)S, (void)f, (void)pkg, (void)id;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd - 1)) strcpy(cwd, "/");
  strcat(cwd, "/");
  sxw_str(o, cwd);
  return RPC_OK;
}

static int rpc_set_package(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)S, (void)pkg, (void)id;
  const char *p = sx_str(sx_at(f, 1));
  char up[256];
  size_t k = 0;
  for (const char *c = p ? p : "CL-USER"; *c && k + 1 < sizeof up; c++) up[k++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
  up[k] = 0;
  sxw_open(o), sxw_str(o, up), sxw_str(o, up), sxw_close(o);
  return RPC_OK;
}

static int rpc_package_names(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *o) {
  (void)f, (void)pkg, (void)id;
  sx *r = skernel_helper(S, "(mapcar (function package-name) (list-all-packages))", NULL);
  sxw_open(o);
  for (size_t i = 0; r && r->type == SX_LIST && i < r->len; i++)
    if (r->items[i]->type == SX_STRING) sxw_str(o, r->items[i]->str);
  sxw_close(o);
  sx_free(r);
  return RPC_OK;
}

static const struct {
  const char *name;  /* without its package: SLIME sends swank:, swank-repl: */
  srpc_Fn fn;
} rpcs[] = {
    {"connection-info", rpc_connection_info},
    {"swank-require", rpc_require},
    {"create-repl", rpc_create_repl},
    {"buffer-first-change", rpc_nil},
    {"clear-repl-variables", rpc_nil},
    {"redirect-trace-output", rpc_nil},
    {"update-indentation-information", rpc_nil},
    {"default-directory", rpc_default_directory},
    {"set-default-directory", rpc_default_directory},
    {"set-package", rpc_set_package},
    {"list-all-package-names", rpc_package_names},
    {"listener-eval", seval_listener},
    {"interactive-eval", seval_interactive},
    {"interactive-eval-region", seval_interactive},
    {"eval-and-grab-output", seval_grab},
    {"pprint-eval", seval_interactive},
    {"compile-string-for-emacs", seval_compile_string},
    {"compile-file-for-emacs", seval_compile_file},
    {"load-file", seval_load_file},
    {"debugger-info-for-emacs", sldb_info},
    {"backtrace", sldb_backtrace},
    {"frame-locals-and-catch-tags", sldb_locals},
    {"eval-string-in-frame", sldb_eval_in_frame},
    {"pprint-eval-string-in-frame", sldb_eval_in_frame},
    {"invoke-nth-restart-for-emacs", sldb_restart},
    {"sldb-abort", sldb_abort},
    {"throw-to-toplevel", sldb_toplevel},
    {"sldb-continue", sldb_continue},
    {"restart-frame", sldb_restart_frame},
    {"sldb-return-from-frame", sldb_return_from_frame},
    {"sdlb-print-condition", sldb_condition},
    {"simple-completions", sintro_simple_completions},
    {"fuzzy-completions", sintro_fuzzy_completions},
    {"fuzzy-completion-selected", rpc_nil},
    {"operator-arglist", sintro_arglist},
    {"autodoc", sintro_autodoc},
    {"describe-symbol", sintro_describe},
    {"describe-function", sintro_describe},
    {"describe-definition-for-emacs", sintro_describe},
    {"documentation-symbol", sintro_documentation},
    {"apropos-list-for-emacs", sintro_apropos},
    {"xref", sintro_xref},
    {"swank-macroexpand-1", sintro_macroexpand},
    {"swank-macroexpand", sintro_macroexpand},
    {"swank-macroexpand-all", sintro_macroexpand},
    {"swank-expand-1", sintro_macroexpand},
    {"swank-expand", sintro_macroexpand},
    {"find-definitions-for-emacs", sintro_find_definitions},
    {"init-inspector", sinspect_init},
    {"inspect-nth-part", sinspect_part},
    {"inspector-pop", sinspect_pop},
    {"inspector-reinspect", sinspect_reinspect},
    {"inspector-range", sinspect_range},
    {"quit-inspector", sinspect_quit},
};

void srpc_rex(Swank *S, sx *form, const sx *package, int64_t id) {
  const char *name = form && form->type == SX_LIST ? sx_str(sx_at(form, 0)) : NULL;
  if (!name || sx_at(form, 0)->type != SX_SYMBOL) {
    sframe_return_abort(S, id, "jiti swank evaluates only calls of swank functions");
    return;
  }
  const char *colon = strrchr(name, ':');
  const char *bare = colon ? colon + 1 : name;
  for (size_t i = 0; i < sizeof rpcs / sizeof *rpcs; i++) {
    if (strcasecmp(bare, rpcs[i].name)) continue;
    sxw out;
    sxw_init(&out);
    free(S->abort_msg);
    S->abort_msg = NULL;
    int rc = rpcs[i].fn(S, form, package, id, &out);
    if (rc == RPC_OK) sframe_return_ok(S, id, &out);
    else if (rc == RPC_ABORT) sframe_return_abort(S, id, S->abort_msg);
    sxw_free(&out);
    return;
  }
  char why[300];
  snprintf(why, sizeof why, "jiti swank does not implement %s (docs/editor.md lists what works)", name);
  sframe_return_abort(S, id, why);
}
