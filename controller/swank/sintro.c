/*
** sintro.c — what the editor asks about names: completion (simple and
** fuzzy), arglists (autodoc), describe and documentation, apropos,
** who-calls and who-references, macroexpansion, M-. (find-definitions).
** Each is a read-only application call of a small Lisp form in the
** world (skernel_helper: nothing it does is kept), or the kernel's
** `inspect` of an entry; while the world is paused those calls are
** refused, and these answer nothing.
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "swank_int.h"

#define COMPLETIONS_MAX 300  /* candidates one completion returns */
#define APROPOS_MAX 300

/* A symbol's name as the editor wrote it, split at its package prefix and
** folded as the reader folds it: *pkg (NULL: the buffer's), *name. */
typedef struct Name {
  char pkg[256];
  char name[512];
  int has_pkg;
} Name;

static void fold(char *s) {
  if (strpbrk(s, "|\\")) {  /* written escaped: exactly as typed, bars dropped */
    char *w = s;
    for (char *r = s; *r; r++)
      if (*r != '|') *w++ = *r == '\\' && r[1] ? *++r : *r;
    *w = 0;
    return;
  }
  for (; *s; s++) *s = (char)toupper((unsigned char)*s);
}

static void split_name(const char *raw, Name *n) {
  memset(n, 0, sizeof *n);
  const char *c = strchr(raw, ':');
  if (c && c != raw) {
    snprintf(n->pkg, sizeof n->pkg, "%.*s", (int)(c - raw), raw);
    fold(n->pkg);
    n->has_pkg = 1;
  }
  if (c && c == raw) snprintf(n->pkg, sizeof n->pkg, "KEYWORD"), n->has_pkg = 1;
  while (c && *c == ':') c++;
  snprintf(n->name, sizeof n->name, "%s", c ? c : raw);
  fold(n->name);
}

/* The Lisp expression of the package a name is looked up in. */
static char *package_form(const Name *n, const char *buffer_pkg) {
  char *lit = skernel_lisp_string(n->has_pkg ? n->pkg : buffer_pkg ? buffer_pkg : "COMMON-LISP-USER"), *f = NULL;
  if (lit && asprintf(&f, "(or (find-package %s) (find-package \"COMMON-LISP-USER\"))", lit) < 0) f = NULL;
  free(lit);
  return f;
}

/* A helper call built from a format with the name's and package's Lisp
** texts (%1$s the name's string literal, %2$s the package form). */
static sx *helper_on(Swank *S, const char *raw, const sx *pkg, const char *fmt, Name *out) {
  Name n;
  split_name(raw, &n);
  if (out) *out = n;
  char *lit = skernel_lisp_string(n.name), *pf = package_form(&n, skernel_package(pkg)), *src = NULL;
  sx *r = NULL;
  if (lit && pf && asprintf(&src, fmt, lit, pf) >= 0) r = skernel_helper(S, src, skernel_package(pkg));
  free(lit), free(pf), free(src);
  return r;
}

/* ------------------------------------------------------------ completion */

/* Symbols accessible in the package whose names match, downcased. */
static const char *const complete_fmt =
    "(let ((r nil) (p %1$s) (n 0))"
    " (do-symbols (s %2$s)"
    "  (let ((nm (symbol-name s)))"
    "   (when (and (< n " "%3$d" ") (<= (length p) (length nm)) (%4$s))"
    "    (unless (member (string-downcase nm) r :test (function string=))"
    "     (incf n) (push (string-downcase nm) r)))))"
    " (sort r (function string<)))";

static sx *candidates(Swank *S, const char *raw, const sx *pkg, int fuzzy, Name *n) {
  char fmt[1024];
  snprintf(fmt, sizeof fmt, complete_fmt, "%1$s", "%2$s", COMPLETIONS_MAX,
           fuzzy ? "search p nm" : "string= p nm :end2 (length p)");
  return helper_on(S, raw, pkg, fmt, n);
}

/* The prefix the editor typed, with its package prefix, before a candidate. */
static void write_candidate(sxw *o, const char *raw, const char *cand) {
  const char *c = strrchr(raw, ':');
  char *t = NULL;
  if (c && asprintf(&t, "%.*s%s", (int)(c - raw + 1), raw, cand) >= 0) sxw_str(o, t);
  else sxw_str(o, cand);
  free(t);
}

int sintro_simple_completions(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  const sx *p = sx_at(f, 2) ? sx_at(f, 2) : pkg;
  if (!raw) raw = "";
  Name n;
  sx *r = candidates(S, raw, p, 0, &n);
  size_t common = 0;
  const char *first = NULL;
  sxw_open(out), sxw_open(out);
  for (size_t i = 0; r && r->type == SX_LIST && i < r->len; i++) {
    const char *c = sx_str(r->items[i]);
    if (!c) continue;
    write_candidate(out, raw, c);
    if (!first) first = c, common = strlen(c);
    else
      for (size_t k = 0; k < common; k++)
        if (c[k] != first[k]) common = k;
  }
  sxw_close(out);
  if (first) {
    char *t = NULL;
    const char *c = strrchr(raw, ':');
    if (asprintf(&t, "%.*s%.*s", c ? (int)(c - raw + 1) : 0, raw, (int)common, first) >= 0) sxw_str(out, t);
    free(t);
  } else {
    sxw_str(out, raw);
  }
  sxw_close(out);
  sx_free(r);
  return RPC_OK;
}

int sintro_fuzzy_completions(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  const sx *p = sx_at(f, 2) ? sx_at(f, 2) : pkg;
  if (!raw) raw = "";
  Name n;
  sx *r = candidates(S, raw, p, 1, &n);
  sxw_open(out), sxw_open(out);
  /* prefix matches first, then the others: (completion score chunks flags) */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; r && r->type == SX_LIST && i < r->len; i++) {
      const char *c = sx_str(r->items[i]);
      if (!c) continue;
      char low[512];
      snprintf(low, sizeof low, "%s", n.name);
      for (char *q = low; *q; q++) *q = (char)tolower((unsigned char)*q);
      const char *at = strstr(c, low);
      int prefix = at == c;
      if (!at || prefix != !pass) continue;
      sxw_open(out);
      write_candidate(out, raw, c);
      sxw_raw(out, prefix ? "100.0" : "50.0");
      sxw_open(out), sxw_open(out), sxw_int(out, at - c), sxw_str(out, low), sxw_close(out), sxw_close(out);
      sxw_str(out, "--------");
      sxw_close(out);
    }
  sxw_close(out), sxw_sym(out, "nil"), sxw_close(out);
  sx_free(r);
  return RPC_OK;
}

/* -------------------------------------------------------------- arglists */

/* The first balanced (...) group of s, downcased, into a fresh string. */
static char *first_group(const char *s) {
  const char *a = strchr(s, '(');
  if (!a) return NULL;
  int depth = 0;
  for (const char *c = a; *c; c++) {
    if (*c == '(') depth++;
    else if (*c == ')' && --depth == 0) {
      char *t = strndup(a, (size_t)(c - a + 1));
      for (char *q = t; q && *q; q++) *q = (char)tolower((unsigned char)*q);
      return t;
    }
  }
  return NULL;
}

/* Kind, lambda list (or nil) and documentation of a fbound name. */
static const char *const arglist_fmt =
    "(let ((s (find-symbol %1$s %2$s)))"
    " (cond ((null s) nil)"
    "  ((special-operator-p s) (list \"special\" nil (documentation s (quote function))))"
    "  ((macro-function s) (list \"macro\" nil (documentation s (quote function))))"
    "  ((fboundp s) (let ((l (function-lambda-expression (fdefinition s))))"
    "    (list \"function\" (if l (prin1-to-string (second l))) (documentation s (quote function)))))))";

/* "(name a b)": the arglist of the operator named raw, or NULL. */
static char *arglist_of(Swank *S, const char *raw, const sx *pkg) {
  Name n;
  sx *r = helper_on(S, raw, pkg, arglist_fmt, &n);
  char *ll = NULL, *res = NULL;
  const char *kind = sx_str(sx_at(r, 0)), *l = sx_str(sx_at(r, 1)), *doc = sx_str(sx_at(r, 2));
  if (l && sx_at(r, 1)->type == SX_STRING) {
    ll = strdup(l);
    for (char *q = ll; q && *q; q++) *q = (char)tolower((unsigned char)*q);
  }
  if (!ll && doc && sx_at(r, 2)->type == SX_STRING && doc[0] == '(') {  /* a primitive's documentation starts with it */
    char *g = first_group(doc), *sp = g ? strchr(g, ' ') : NULL;
    if (sp) ll = strndup(sp, strlen(sp)), ll[0] = '(';
    else if (g) ll = strdup("()");
    free(g);
  }
  if (!ll && kind && !strcmp(kind, "macro")) {  /* a world's macro: its definition as stored */
    char name[600];
    snprintf(name, sizeof name, "%s", n.name);
    json_t *e = skernel_request(S, json_pack("{s:s, s:s, s:s}", "op", "inspect", "kind", "macro", "name", name));
    const char *text = kclient_str(json_object_get(e, "entry"), "text");
    /* (DEFMACRO NAME (ARGS) ...): the group after the name */
    const char *c = strchr(text, '(');
    if (c) c = strchr(c + 1, ' ');
    if (c) c = strchr(c + 1, ' ');
    if (c) ll = first_group(c);
    json_decref(e);
  }
  if (ll) {
    char low[600];
    snprintf(low, sizeof low, "%s", raw);
    for (char *q = low; *q; q++) *q = (char)tolower((unsigned char)*q);
    if (asprintf(&res, "(%s%s%s", low, strcmp(ll, "()") ? " " : "", ll + 1) < 0) res = NULL;
  }
  free(ll);
  sx_free(r);
  return res;
}

int sintro_arglist(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  char *a = raw ? arglist_of(S, raw, sx_at(f, 2) ? sx_at(f, 2) : pkg) : NULL;
  sxw_str_or_nil(out, a);
  free(a);
  return RPC_OK;
}

/* (swank:autodoc '("op" "arg" swank::%cursor-marker%) ...): the operator's arglist. */
int sintro_autodoc(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  sx *form = sx_at(f, 1);
  if (sx_is(sx_at(form, 0), "quote")) form = sx_at(form, 1);
  /* the innermost list around the cursor */
  const sx *inner = form;
  for (int d = 0; d < SX_DEPTH_MAX && inner && inner->type == SX_LIST; d++) {
    const sx *next = NULL;
    for (size_t i = 0; i < inner->len; i++)
      if (inner->items[i]->type == SX_LIST) next = inner->items[i];
    int has_marker = 0;
    for (size_t i = 0; i < inner->len; i++)
      if (inner->items[i]->type == SX_SYMBOL && strstr(inner->items[i]->str, "cursor-marker")) has_marker = 1;
    if (has_marker || !next) break;
    inner = next;
  }
  const char *op = sx_str(sx_at(inner, 0));
  char *a = op && sx_at(inner, 0)->type == SX_STRING ? arglist_of(S, op, pkg) : NULL;
  sxw_open(out);
  if (a) sxw_str(out, a), sxw_sym(out, "t");
  else sxw_sym(out, ":not-available"), sxw_sym(out, "t");
  sxw_close(out);
  free(a);
  return RPC_OK;
}

/* ------------------------------------------------- describe, documentation */

static const char *const describe_fmt =
    "(let ((s (find-symbol %1$s %2$s)))"
    " (if (null s) nil"
    "  (with-output-to-string (o)"
    "   (format o \"~S names a symbol of ~A.~%%\" s (if (symbol-package s) (package-name (symbol-package s)) \"no package\"))"
    "   (when (special-operator-p s) (format o \"It is a special operator.~%%\"))"
    "   (when (macro-function s) (format o \"It names a macro.~%%\"))"
    "   (when (and (fboundp s) (not (macro-function s)) (not (special-operator-p s)))"
    "    (format o \"It names a function.~%%\")"
    "    (let ((l (function-lambda-expression (fdefinition s))))"
    "     (when l (format o \"Lambda list: ~S~%%\" (second l)))))"
    "   (when (documentation s (quote function))"
    "    (format o \"Documentation:~%%  ~A~%%\" (documentation s (quote function))))"
    "   (when (boundp s) (format o \"Its value: ~S~%%\" (symbol-value s)))"
    "   (when (documentation s (quote variable))"
    "    (format o \"Variable documentation:~%%  ~A~%%\" (documentation s (quote variable))))"
    "   (when (find-class s nil) (format o \"It names a class.~%%\")))))";

/* The kinds M-. and describe look for, in order, with the defining form
** SLIME shows for each. */
static const struct {
  const char *kind, *dspec;
} def_kinds[] = {
    {"function", "DEFUN"}, {"macro", "DEFMACRO"},     {"generic", "DEFGENERIC"}, {"variable", "DEFVAR"},
    {"class", "DEFCLASS"}, {"structure", "DEFSTRUCT"}, {"type", "DEFTYPE"},      {"method", "DEFMETHOD"},
};

/* The world's entry of that kind for the name (as observe prints names:
** PKG::NAME outside COMMON-LISP-USER), or NULL. */
static json_t *entry_of(Swank *S, const Name *n, const char *bufpkg, const char *kind) {
  char name[800];
  const char *p = n->has_pkg ? n->pkg : bufpkg;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (attempt == 0) snprintf(name, sizeof name, "%s", n->name);
    else if (p && strcasecmp(p, "COMMON-LISP-USER") && strcasecmp(p, "CL-USER"))
      snprintf(name, sizeof name, "%s::%s", p, n->name);
    else break;
    json_t *r = skernel_request(S, json_pack("{s:s, s:s, s:s}", "op", "inspect", "kind", kind, "name", name));
    if (r && json_is_true(json_object_get(r, "ok"))) {
      json_t *e = json_incref(json_object_get(r, "entry"));
      json_decref(r);
      return e;
    }
    json_decref(r);
  }
  return NULL;
}

int sintro_describe(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  if (!raw) {
    swank_set_abort(S, "expected a name");
    return RPC_ABORT;
  }
  Name n;
  sx *r = helper_on(S, raw, pkg, describe_fmt, &n);
  const char *d = sx_str(r);
  char *text = strdup(d && r->type == SX_STRING ? d : "");
  /* the definitions the store keeps, as written there */
  for (size_t i = 0; text && i < sizeof def_kinds / sizeof *def_kinds; i++) {
    json_t *e = entry_of(S, &n, skernel_package(pkg), def_kinds[i].kind);
    if (!e) continue;
    char *t;
    if (asprintf(&t, "%s\nIts %s, as the world keeps it:\n%s\n", text, def_kinds[i].kind, kclient_str(e, "text")) >= 0)
      free(text), text = t;
    json_decref(e);
  }
  if (!text || !*text) {
    free(text);
    sx_free(r);
    swank_set_abort(S, "%s: no such symbol in the world", raw);
    return RPC_ABORT;
  }
  sxw_str(out, text);
  free(text);
  sx_free(r);
  return RPC_OK;
}

int sintro_documentation(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  sx *r = raw ? helper_on(S, raw, pkg,
                          "(let ((s (find-symbol %1$s %2$s))) (and s (or (documentation s (quote function)) "
                          "(documentation s (quote variable)))))",
                          NULL)
              : NULL;
  const char *d = r && r->type == SX_STRING ? r->str : NULL;
  char *t = NULL;
  if (asprintf(&t, "Documentation for the symbol %s:\n\n%s", raw ? raw : "", d ? d : "Not documented.") < 0) t = NULL;
  sxw_str_or_nil(out, t);
  free(t);
  sx_free(r);
  return RPC_OK;
}

/* --------------------------------------------------------------- apropos */

int sintro_apropos(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  char fmt[1600];
  snprintf(fmt, sizeof fmt,
           "(let ((r nil) (n 0))"
           " (dolist (s (apropos-list %%1$s) (nreverse r))"
           "  (when (< n %d) (incf n)"
           "   (push (list (format nil \"~A:~A\" (if (symbol-package s) (package-name (symbol-package s)) \"\")"
           "                       (symbol-name s))"
           "               (cond ((special-operator-p s) \"special\") ((macro-function s) \"macro\")"
           "                     ((fboundp s) \"function\") (t nil))"
           "               (if (boundp s) \"variable\" nil)"
           "               (or (documentation s (quote function)) (documentation s (quote variable)) \"\"))"
           "         r))))",
           APROPOS_MAX);
  sx *r = raw ? helper_on(S, raw, pkg, fmt, NULL) : NULL;
  sxw_open(out);
  for (size_t i = 0; r && r->type == SX_LIST && i < r->len; i++) {
    sx *e = r->items[i];
    const char *doc = sx_str(sx_at(e, 3));
    const char *fk = sx_at(e, 1) && sx_at(e, 1)->type == SX_STRING ? sx_str(sx_at(e, 1)) : NULL;
    const char *vk = sx_at(e, 2) && sx_at(e, 2)->type == SX_STRING ? sx_str(sx_at(e, 2)) : NULL;
    sxw_open(out);
    sxw_sym(out, ":designator"), sxw_str(out, sx_str(sx_at(e, 0)));
    if (fk) {
      sxw_sym(out, !strcmp(fk, "macro") ? ":macro" : !strcmp(fk, "special") ? ":special-operator" : ":function");
      if (doc && *doc) sxw_str(out, doc);
      else sxw_sym(out, ":not-documented");
    }
    if (vk) sxw_sym(out, ":variable"), sxw_sym(out, ":not-documented");
    sxw_close(out);
  }
  sxw_close(out);
  sx_free(r);
  return RPC_OK;
}

/* ------------------------------------------------------------------ xref */

/* The functions whose definitions mention the symbol (a call, a
** reference, a macro's use: the text of the world's definitions). */
static const char *const who_fmt =
    "(let ((x (find-symbol %1$s %2$s)) (r nil))"
    " (labels ((has (tr) (cond ((eq tr x) t) ((consp tr) (or (has (car tr)) (has (cdr tr)))) (t nil))))"
    "  (when x"
    "   (do-all-symbols (s)"
    "    (when (and (fboundp s) (not (special-operator-p s)) (not (macro-function s)))"
    "     (let ((l (function-lambda-expression (fdefinition s))))"
    "      (when (and l (has (cddr l)) (not (member s r))) (push s r))))))"
    "  (mapcar (lambda (s) (prin1-to-string s)) r)))";

int sintro_xref(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const sx *type = sx_at(f, 1);
  if (sx_is(sx_at(type, 0), "quote")) type = sx_at(type, 1);
  const char *raw = sx_str(sx_at(f, 2));
  if (!raw || !(sx_is(type, ":calls") || sx_is(type, ":references") || sx_is(type, ":macroexpands"))) {
    sxw_sym(out, ":not-implemented");
    return RPC_OK;
  }
  sx *r = helper_on(S, raw, pkg, who_fmt, NULL);
  sxw_open(out);
  for (size_t i = 0; r && r->type == SX_LIST && i < r->len; i++) {
    const char *name = sx_str(r->items[i]);
    if (!name) continue;
    Name n;
    split_name(name, &n);
    json_t *e = entry_of(S, &n, skernel_package(pkg), "function");
    char dspec[700];
    snprintf(dspec, sizeof dspec, "(DEFUN %s)", name);
    sxw_open(out), sxw_str(out, dspec);
    sintro_location(S, e, out);
    sxw_close(out);
    json_decref(e);
  }
  sxw_close(out);
  sx_free(r);
  return RPC_OK;
}

/* -------------------------------------------------------- macroexpansion */

int sintro_macroexpand(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *name = sx_str(sx_at(f, 0)), *src = sx_str(sx_at(f, 1));
  if (!src) {
    swank_set_abort(S, "expected a form to expand");
    return RPC_ABORT;
  }
  int once = strstr(name, "-1") != NULL;
  char *lit = skernel_lisp_string(src), *form = NULL;
  if (lit && asprintf(&form, "(let ((*print-pretty* t) (*read-eval* nil)) (prin1-to-string (%s (read-from-string %s))))",
                      once ? "macroexpand-1" : "macroexpand", lit) < 0)
    form = NULL;
  sx *r = form ? skernel_helper(S, form, skernel_package(pkg)) : NULL;
  free(lit), free(form);
  if (!r || r->type != SX_STRING) {
    sx_free(r);
    swank_set_abort(S, "the form did not expand (is it readable in this package?)");
    return RPC_ABORT;
  }
  sxw_str(out, r->str);
  sx_free(r);
  return RPC_OK;
}

/* ------------------------------------------------------------------- M-. */

void sintro_location(Swank *S, json_t *entry, sxw *out) {
  (void)S;
  if (!entry) {
    sxw_open(out), sxw_sym(out, ":error"), sxw_str(out, "no definition of it is in the world's store"), sxw_close(out);
    return;
  }
  /* a definition kept as written in a file (an absolute name: the editor's)
  ** is found there — at its line, SLIME's column from 0, and by its text
  ** near it should the file have moved on */
  json_t *loc = json_object_get(entry, "location");
  const char *file = kclient_str(loc, "file");
  json_int_t line = json_integer_value(json_object_get(loc, "line"));
  json_int_t column = json_integer_value(json_object_get(loc, "column"));
  if (file[0] == '/' && line > 0) {
    const char *text = kclient_str(entry, "text");
    size_t n = strlen(text) < 200 ? strlen(text) : 200;
    while (n > 0 && n < strlen(text) && ((unsigned char)text[n] & 0xc0) == 0x80) n--;   /* whole characters */
    char *snippet = strndup(text, n);
    sxw_open(out), sxw_sym(out, ":location");
    sxw_open(out), sxw_sym(out, ":file"), sxw_str(out, file), sxw_close(out);
    sxw_open(out), sxw_sym(out, ":line"), sxw_int(out, line), sxw_int(out, column > 0 ? column - 1 : 0), sxw_close(out);
    sxw_open(out), sxw_sym(out, ":snippet"), sxw_str(out, snippet ? snippet : ""), sxw_close(out);
    sxw_close(out);
    free(snippet);
    return;
  }
  sxw_open(out), sxw_sym(out, ":location");
  sxw_open(out), sxw_sym(out, ":source-form"), sxw_str(out, kclient_str(entry, "text")), sxw_close(out);
  sxw_open(out), sxw_sym(out, ":position"), sxw_int(out, 1), sxw_close(out);
  sxw_sym(out, "nil");
  sxw_close(out);
}

int sintro_find_definitions(Swank *S, const sx *f, const sx *pkg, int64_t id, sxw *out) {
  (void)id;
  const char *raw = sx_str(sx_at(f, 1));
  if (!raw) {
    swank_set_abort(S, "expected a name");
    return RPC_ABORT;
  }
  Name n;
  split_name(raw, &n);
  sxw_open(out);
  for (size_t i = 0; i < sizeof def_kinds / sizeof *def_kinds; i++) {
    json_t *e = entry_of(S, &n, skernel_package(pkg), def_kinds[i].kind);
    if (!e) continue;
    char dspec[800];
    snprintf(dspec, sizeof dspec, "(%s %s)", def_kinds[i].dspec, kclient_str(e, "name"));
    sxw_open(out), sxw_str(out, dspec);
    sintro_location(S, e, out);
    sxw_close(out);
    json_decref(e);
  }
  sxw_close(out);
  return RPC_OK;
}
