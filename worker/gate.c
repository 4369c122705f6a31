/*
** gate.c — the form gate: decides whether model- or operator-supplied
** source may be evaluated at all.  Two passes:
**
** 1. A C scan of the source text: size, labels #n= / #n# (shared or
**    circular literal structure).  Package prefixes are the reader's: one
**    must name a package of the world, and the kernel's internal home has
**    no name, so no prefix reaches it.
** 2. %TXN-GATE, a Lisp function of the worker's own library (loaded in
**    kernel mode: user code cannot name or redefine it): it reads the
**    source with the kernel reader as it reads unchecked source
**    (%read-source-from-string: the standard syntax whatever *readtable*
**    holds, and #. a reader error whatever *read-eval* says, so nothing
**    runs before the checks), requires exactly one
**    form, and walks the whole tree iteratively — quoted lists, vectors,
**    backquote templates — refusing shared or circular structure, strings
**    holding the ~/name/ format directive (a call by name), THROW in a
**    repair (it could leave the pause), a define-foreign naming a library
**    the operator did not grant (early and with the option that grants it:
**    ffi.c refuses the declaration itself whatever the route), and, as a
**    backstop, any kernel-internal symbol (the reader cannot produce one).
**    The walk is the kernel's %FORM-CENSUS (kernel/census.c: the same walk
**    in C, ten times cheaper than in Lisp); a form that names
**    DEFINE-FOREIGN is walked again in Lisp (%txn-gate-walk), which also
**    checks the libraries its declarations name.
**
** An attempt's one form takes a shorter route (txn_gate_form) with the same
** outcome: the kernel reads it once (jiti_form_read) and makes the checks of
** %TXN-GATE on it in C — one form, nothing after it, the census — and holds
** it; a clean form is then evaluated as read (jiti_form_eval), so what was
** checked is what runs and the source is not read a second time.  Anything
** but a clean form goes to %TXN-GATE, which words the refusal (or, for a
** DEFINE-FOREIGN, walks it), and an accepted one is evaluated from its
** source as before.  Repairs, resume arguments and programs take the Lisp
** route.
**
** The rules.  Every refusal is a row of one table (gate_rules below): its
** name, what it refuses, and the reason the refusal gives.  The checks
** name the rule (the Lisp walk returns "NAME" or "NAME ARG"), the reason
** is made from the row, and docs/transactions.md's list of the gate's
** rules — which the model's reference embeds — is rendered from the same
** rows (txn_gate_rules_markdown; a test keeps the document equal to it).
**
** Everything else that could escape the transaction is refused where it
** happens, whatever the route: the kernel's internals are unreachable from
** user code, and a repair may not invoke a restart of the paused
** computation (resuming chooses those).  So ordinary application code —
** intern, read-from-string, macroexpand, invoke-restart of its own
** restarts, a helper named %foo — passes.
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "txn_int.h"

/* ---------------------------------------------------------------- rules */

/* One row per refusal, in the order the document lists them.  reason: {1}
** and {2} stand for the check's arguments. */
static const txn_GateRule gate_rules[TXN_GATE_RULE_COUNT] = {
  [TXN_GATE_SIZE] = {"size", "a source of more than 16 KiB (16,384 bytes)",
    "the source is {1} bytes, more than the limit of {2}: split the change into smaller actions"},
  [TXN_GATE_NO_FORM] = {"no-form", "a source with no form (nothing, or only whitespace and comments)",
    "the source contains no form: send one form to evaluate"},
  [TXN_GATE_MORE_FORMS] = {"more-forms", "more than one form, or text after the form (wrap several forms "
    "in `progn`)",
    "the source has more than one form, or text after its form (from character {1}): wrap several forms "
    "in (progn ...)"},
  [TXN_GATE_UNREADABLE] = {"unreadable", "a source that does not read: `#.` (read-time evaluation never "
    "runs: the gate reads with the standard syntax whatever `*read-eval*` and `*readtable*` say), an "
    "unbalanced form, a package prefix that names no package of the world (the kernel's internal "
    "symbols live in a package without a name, so no prefix reaches them), a new symbol in a locked package "
    "(`COMMON-LISP`, `JITI`)",
    "the source does not read: {1}"},
  [TXN_GATE_NO_PACKAGE] = {"no-package", "a request whose `package` names no package of the world",
    "no package is named {1}"},
  [TXN_GATE_LABELS] = {"labels", "`#n=` / `#n#` labels in the text (shared or circular literal structure)",
    "shared or circular literal structure (#n= / #n#) is not allowed: build it at run time instead"},
  [TXN_GATE_SHARED] = {"shared", "a cons, string or vector reached twice in the read form (shared or "
    "circular literal structure; quoted lists, vectors and backquote templates are walked too)",
    "shared or circular literal structure is not allowed: build shared structure at run time instead"},
  [TXN_GATE_TOO_LARGE] = {"too-large", "a read form of more than 200,000 parts",
    "the form is too large (more than 200,000 parts): split the change into smaller actions"},
  [TXN_GATE_INTERNAL] = {"internal", "a kernel-internal symbol (a backstop: no reader route makes one)",
    "kernel-internal symbol {1} is not allowed"},
  [TXN_GATE_FORMAT_CALL] = {"format-call", "a string containing `~/` (format's call-by-name directive)",
    "the format directive ~/name/ (a call by name) is not allowed: call the function and format its result"},
  [TXN_GATE_FOREIGN] = {"foreign-not-granted", "a `define-foreign` of a library the operator did not "
    "grant (a declaration made at run time is refused by the kernel itself)",
    "define-foreign: the library {1} is not granted to this world (the operator grants it with "
    "--allow-foreign {1})"},
  [TXN_GATE_THROW] = {"throw-in-repair", "in a repair or restart arguments only: `throw` (it could leave "
    "the pause)",
    "THROW is not allowed in a repair: it could leave the pause; resume or abort it instead"},
};

const txn_GateRule *txn_gate_rule(txn_GateRuleId id) {
  return (unsigned)id < TXN_GATE_RULE_COUNT ? &gate_rules[id] : NULL;
}

char *txn_gate_rules_markdown(void) {
  size_t n = 1;
  for (int i = 0; i < TXN_GATE_RULE_COUNT; i++) n += strlen(gate_rules[i].what) + 32;
  char *out = malloc(n), *p = out;
  if (!out) return NULL;
  for (int i = 0; i < TXN_GATE_RULE_COUNT; i++)
    p += sprintf(p, "- `%s`: %s;\n", gate_rules[i].name, gate_rules[i].what);
  if (p > out) strcpy(p - 2, ".\n");  /* the last item ends the list */
  return out;
}

/* The reason of rule id with {1} and {2} replaced by a1 and a2. */
static void refuse(txn_GateRuleId id, const char *a1, const char *a2, char *reason, size_t n) {
  const char *t = gate_rules[id].reason;
  size_t k = 0;
  for (; *t && k + 1 < n; t++) {
    const char *a = t[0] == '{' && (t[1] == '1' || t[1] == '2') && t[2] == '}' ? (t[1] == '1' ? a1 : a2) : NULL;
    if (!a) { reason[k++] = *t; continue; }
    for (; *a && k + 1 < n; a++) reason[k++] = *a;
    t += 2;
  }
  if (n) reason[k] = 0;
}

/* The Lisp walk's verdict "NAME" or "NAME ARG" as a reason. */
static void refuse_named(const char *verdict, char *reason, size_t n) {
  size_t len = strcspn(verdict, " ");
  for (int i = 0; i < TXN_GATE_RULE_COUNT; i++)
    if (strlen(gate_rules[i].name) == len && !strncmp(gate_rules[i].name, verdict, len)) {
      refuse((txn_GateRuleId)i, verdict[len] ? verdict + len + 1 : "", "", reason, n);
      return;
    }
  snprintf(reason, n, "refused by the gate (%s)", verdict);
}

static const char *gate_lisp =
  /* The whole walk in Lisp, for a form that names DEFINE-FOREIGN: it also
  ** refuses a declaration of a library the world was not granted. */
  "(defun %txn-gate-walk (form repair)\n"
  "  (block gate\n"
  "        (let ((seen (make-hash-table :test 'eq)) (stack (list form)) (n 0))\n"
  "          (loop while stack do\n"
  "            (let ((x (pop stack)))\n"
  "              (incf n)\n"
  "              (when (> n 200000) (return-from gate \"too-large\"))\n"
  "              (cond ((symbolp x)\n"
  "                     (when (%internal-symbol-p x)\n"
  "                       (return-from gate (format nil \"internal ~a\" (symbol-name x))))\n"
  "                     (when (and repair (string= (symbol-name x) \"THROW\"))\n"
  "                       (return-from gate \"throw-in-repair\")))\n"
  "                    ((consp x)\n"
  "                     (when (gethash x seen)\n"
  "                       (return-from gate \"shared\"))\n"
  "                     (setf (gethash x seen) t)\n"
  "                     (when (and (eq (car x) 'define-foreign) (consp (cdr x)) (consp (cddr x))\n"
  "                                (stringp (caddr x)) (not (%foreign-granted-p (caddr x))))\n"
  "                       (return-from gate (format nil \"foreign-not-granted ~a\" (caddr x))))\n"
  "                     (push (cdr x) stack)\n"
  "                     (push (car x) stack))\n"
  "                    ((stringp x)\n"
  "                     (when (gethash x seen)\n"
  "                       (return-from gate \"shared\"))\n"
  "                     (setf (gethash x seen) t)\n"
  "                     (when (search \"~/\" x)\n"
  "                       (return-from gate \"format-call\")))\n"
  "                    ((vectorp x)\n"
  "                     (when (gethash x seen)\n"
  "                       (return-from gate \"shared\"))\n"
  "                     (setf (gethash x seen) t)\n"
  "                     (dotimes (i (length x)) (push (aref x i) stack))))))\n"
  "          nil)))\n"
  "(defun %txn-gate (src repair &optional package)\n"
  "  (block gate\n"
  "    (handler-case\n"
  "      (let ((form nil) (pos 0) (eof (list :eof))\n"
  "            (*package* (if package\n"
  "                           (or (find-package package) (find-package (string-upcase package))\n"
  "                               (return-from gate (format nil \"no-package ~a\" package)))\n"
  "                           *package*)))\n"
  "        (multiple-value-setq (form pos) (%read-source-from-string src nil eof))\n"
  "        (when (eq form eof) (return-from gate \"no-form\"))\n"
  "        (unless (eq (handler-case (%read-source-from-string src nil eof :start pos) (error () :unreadable)) eof)\n"
  "          (return-from gate (format nil \"more-forms ~d\" pos)))\n"
  "        (let ((found (%form-census form 200000 (if repair '(\"THROW\" \"DEFINE-FOREIGN\") '(\"DEFINE-FOREIGN\")) '(\"~/\"))))\n"
  "          (if (and (eq (car found) :symbol) (string= (symbol-name (cadr found)) \"DEFINE-FOREIGN\"))\n"
  "              (%txn-gate-walk form repair)\n"
  "              (case (car found)\n"
  "                ((nil) nil)\n"
  "                (:too-large \"too-large\")\n"
  "                (:internal (format nil \"internal ~a\" (symbol-name (cadr found))))\n"
  "                (:symbol \"throw-in-repair\")\n"
  "                (:shared \"shared\")\n"
  "                (:substring \"format-call\")))))\n"
  "      (error (c) (format nil \"unreadable ~a\" c)))))\n"
  /* A repair: the source's one form, evaluated so that an exit past the
  ** pause is noticed (%txn-escaped runs in the cleanup); with a frame, in
  ** that frame of the pause (its locals by name: %frame-form). */
  "(defun %txn-repair (src &optional package frame)\n"
  "  (let ((*package* (if package\n"
  "                        (or (find-package package) (find-package (string-upcase package)))\n"
  "                        *package*)))\n"
  "    (unwind-protect\n"
  "        (eval (if frame (%frame-form (%read-source-from-string src) frame) (%read-source-from-string src)))\n"
  "      (%txn-escaped))))\n";

int txn_library_install(jiti_State *S, const char *lisp, const char *what) {
  jiti_Result r;
  jiti_Status st = jiti_load_library(S, lisp, strlen(lisp), &r);
  if (st != JITI_OK) fprintf(stderr, "txn: %s did not load: %s\n", what, r.message ? r.message : "?");
  jiti_result_free(&r);
  return st == JITI_OK ? 0 : -1;
}

int txn_gate_install(jiti_State *S) { return txn_library_install(S, gate_lisp, "the gate"); }

/* ------------------------------------------------------------ text scan */

static int is_ws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static int is_term(unsigned char c) {
  return is_ws(c) || c == '(' || c == ')' || c == '\'' || c == '"' || c == ';' || c == '`' || c == ',';
}

/* Skip one token starting at s[*i] (escapes included): a package prefix
** in it is the reader's business (it must name a package of the world, and
** the kernel's internal home has no name). */
static void skip_token(const char *s, size_t len, size_t *i) {
  while (*i < len && !is_term((unsigned char)s[*i])) {
    unsigned char c = (unsigned char)s[*i];
    if (c == '\\') {            /* single escape: the next char is a constituent */
      *i += *i + 1 < len ? 2 : 1;
      continue;
    }
    if (c == '|') {             /* multiple escape */
      (*i)++;
      while (*i < len && s[*i] != '|') {
        if (s[*i] == '\\' && *i + 1 < len) (*i)++;
        (*i)++;
      }
      if (*i < len) (*i)++;
      continue;
    }
    (*i)++;
  }
}

static int text_scan(const char *s, size_t len, char *reason, size_t n) {
  size_t i = 0;
  while (i < len) {
    unsigned char c = (unsigned char)s[i];
    if (is_ws(c) || c == '(' || c == ')' || c == '\'' || c == '`') { i++; continue; }
    if (c == ',') { i++; if (i < len && (s[i] == '@' || s[i] == '.')) i++; continue; }
    if (c == ';') { while (i < len && s[i] != '\n') i++; continue; }
    if (c == '"') {
      i++;
      while (i < len && s[i] != '"') { if (s[i] == '\\') i++; i++; }
      i++;
      continue;
    }
    if (c == '#') {
      size_t j = i + 1;
      while (j < len && isdigit((unsigned char)s[j])) j++;
      if (j >= len) return 0;  /* the reader will complain */
      char d = s[j];
      if ((d == '=' || d == '#') && j > i + 1) {
        refuse(TXN_GATE_LABELS, "", "", reason, n);
        return 1;
      }
      if (d == '|') {          /* block comment, nested */
        int depth = 1;
        i = j + 1;
        while (i < len && depth > 0) {
          if (s[i] == '|' && i + 1 < len && s[i + 1] == '#') { depth--; i += 2; }
          else if (s[i] == '#' && i + 1 < len && s[i + 1] == '|') { depth++; i += 2; }
          else i++;
        }
        continue;
      }
      if (d == '\\') {         /* character: one char then constituents */
        i = j + 1;
        if (i < len) {
          i++;
          while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
          while (i < len && !is_term((unsigned char)s[i])) i++;
        }
        continue;
      }
      if (d == ':') { i = j + 1; size_t k = i; (void)k; while (i < len && !is_term((unsigned char)s[i])) i++; continue; }
      i = j + 1;               /* #' #( #+ #- #x ... : continue after it */
      continue;
    }
    skip_token(s, len, &i);
  }
  return 0;
}

/* Unescape a printed Lisp string ("...") into out. */
static void unprint(const char *v, char *out, size_t n) {
  size_t k = 0;
  if (!v) { snprintf(out, n, "refused"); return; }
  const char *p = v;
  if (*p == '"') p++;
  for (; *p && k + 1 < n; p++) {
    if (*p == '\\' && p[1]) { p++; out[k++] = *p; continue; }
    if (*p == '"' && p[1] == 0) break;
    out[k++] = *p;
  }
  out[k] = 0;
}

/* What every route checks first, in C: the size and the text scan. */
static int text_checks(txn_World *W, const char *source, size_t max, char *reason, size_t n) {
  if (!source) { snprintf(reason, n, "no source"); return 1; }
  size_t len = strlen(source);
  if (len > max) {
    char a1[24], a2[24];
    snprintf(a1, sizeof a1, "%zu", len);
    snprintf(a2, sizeof a2, "%zu", max);
    refuse(TXN_GATE_SIZE, a1, a2, reason, n);
    return 1;
  }
  return text_scan(source, len, reason, n);
}

/* The gate's own evaluations: bounded, never paused. */
static const jiti_Limits *gate_limits(txn_World *W, jiti_Limits *lim) {
  *lim = (jiti_Limits){.fuel = 5000000, .depth = 1000, .heap = W->lim.heap, .output = 1000};
  return lim;
}

/* (%txn-gate "source" repair "package"): the strings go in as literals. */
static int lisp_gate(txn_World *W, const char *source, const char *package, int repair, char *reason, size_t n) {
  char *lit = txn_string_literal(source);
  char *plit = package ? txn_string_literal(package) : NULL;
  if (!lit || (package && !plit)) { free(lit); free(plit); snprintf(reason, n, "out of memory"); return 1; }
  const char *args[3] = {lit, repair ? "t" : "nil", plit ? plit : "nil"};
  jiti_Limits lim;
  int saved = W->pausable;
  W->pausable = 0;
  jiti_Result r;
  jiti_Status st = jiti_call_limited(W->S, "%TXN-GATE", 3, args, gate_limits(W, &lim), &r);
  W->pausable = saved;
  free(lit);
  free(plit);
  int refused;
  if (st != JITI_OK) {
    snprintf(reason, n, "the gate could not check the source: %s", r.message ? r.message : "?");
    refused = 1;
  } else if (r.value && strcmp(r.value, "NIL") == 0) {
    refused = 0;
  } else {
    char verdict[1024];
    unprint(r.value, verdict, sizeof verdict);
    refuse_named(verdict, reason, n);
    refused = 1;
  }
  jiti_result_free(&r);
  return refused;
}

int txn_gate_run(txn_World *W, const char *source, const char *package, int repair, char *reason, size_t n) {
  if (text_checks(W, source, W->max_source, reason, n)) return 1;
  /* a source that does not read is refused with the reader's report,
  ** placed where it was written (read in the package it is read in) */
  if (!package && txn_gate_read_check(W, source, 1, reason, n)) return 1;
  return lisp_gate(W, source, package, repair, reason, n);
}

int txn_gate_read_check(txn_World *W, const char *source, int all, char *reason, size_t n) {
  (void)all;
  jiti_Limits lim;
  jiti_Result r;
  int saved = W->pausable;
  W->pausable = 0;
  jiti_Status st = jiti_source_check(W->S, source, strlen(source), gate_limits(W, &lim), &r);
  W->pausable = saved;
  int refused = st == JITI_READ_ERROR;
  if (refused) refuse(TXN_GATE_UNREADABLE, r.message ? r.message : "?", "", reason, n);
  jiti_result_free(&r);
  return refused;
}

int txn_gate_form(txn_World *W, const char *source, int *held, char *reason, size_t n) {
  *held = 0;
  if (text_checks(W, source, W->max_source, reason, n)) return 1;
  /* %TXN-GATE's checks of an attempt's form, made by the kernel on the
  ** form it then evaluates; anything but a clean form is for %TXN-GATE to
  ** judge and word (the refusals are its own, and a form that names
  ** DEFINE-FOREIGN needs its walk). */
  static const char *const symbols[] = {"DEFINE-FOREIGN"};
  static const char *const substrings[] = {"~/"};
  const jiti_FormPolicy policy = {200000, symbols, 1, substrings, 1};
  jiti_Limits lim;
  jiti_FormVerdict v = JITI_FORM_EMPTY;
  int saved = W->pausable;
  W->pausable = 0;
  jiti_Result r;
  jiti_Status st = jiti_form_read(W->S, source, strlen(source), &policy, gate_limits(W, &lim), &v, &r);
  W->pausable = saved;
  if (st == JITI_OK && v == JITI_FORM_CLEAN) {
    jiti_result_free(&r);
    *held = 1;
    return 0;
  }
  jiti_form_drop(W->S);
  /* a form that does not read, or text after it that does not: the
  ** reader's report, placed where it was written */
  if (st == JITI_READ_ERROR) {
    refuse(TXN_GATE_UNREADABLE, r.message ? r.message : "?", "", reason, n);
    jiti_result_free(&r);
    return 1;
  }
  jiti_result_free(&r);
  if (st == JITI_OK && v == JITI_FORM_TRAILING && txn_gate_read_check(W, source, 1, reason, n)) return 1;
  return lisp_gate(W, source, NULL, 0, reason, n);
}

int txn_gate(txn_World *W, const char *source, char *reason, size_t n) {
  if (!W) { snprintf(reason, n, "no world"); return 1; }
  return txn_gate_run(W, source, NULL, 0, reason, n);
}
