/*
** complete.c — the symbols of the world that begin with what was typed
** (txn.h): the completion of a line editor (`jiti repl`'s Tab), answered
** as a query through the protocol's "complete" request.
**
** What is typed is read as the reader would: NAME among the symbols
** accessible in the current package (and the package names, as NAME:),
** :NAME among the keywords, PKG:NAME among PKG's external symbols,
** PKG::NAME among all of PKG's own.  The walk is Lisp, a private helper
** loaded before the world is enabled (never an entry); it runs inside a
** checkpoint that is restored, under the world's limits, and only between
** transactions: a paused one's state is not touched.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "txn_int.h"

#define COMPLETE_MAX 200   /* candidates at most: a line editor lists them */

static const char *complete_lisp =
  "(defun %txn-complete-prefix-p (prefix name)\n"
  "  (and (<= (length prefix) (length name)) (string= prefix name :end2 (length prefix))))\n"
  "(defun %txn-complete (text)\n"
  "  (let* ((colon (position #\\: text)) (out '()) (n 0))\n"
  "    (flet ((add (s) (when (and (< n 200) (not (find-if (lambda (c) (member c '(#\\space #\\\" #\\\\))) s)))\n"
  "                      (push s out) (incf n))))\n"
  "      (cond ((null colon)\n"
  "             (let ((p (string-upcase text)))\n"
  "               (do-symbols (s *package*)\n"
  "                 (when (%txn-complete-prefix-p p (symbol-name s)) (add (string-downcase (symbol-name s)))))\n"
  "               (dolist (pk (list-all-packages))\n"
  "                 (dolist (name (cons (package-name pk) (package-nicknames pk)))\n"
  "                   (when (%txn-complete-prefix-p p name) (add (concatenate 'string (string-downcase name) \":\")))))))\n"
  "            ((= colon 0)\n"
  "             (let ((p (string-upcase (subseq text 1))))\n"
  "               (do-symbols (s (find-package \"KEYWORD\"))\n"
  "                 (when (%txn-complete-prefix-p p (symbol-name s))\n"
  "                   (add (concatenate 'string \":\" (string-downcase (symbol-name s))))))))\n"
  "            (t\n"
  "             (let* ((internal (and (< (1+ colon) (length text)) (char= (char text (1+ colon)) #\\:)))\n"
  "                    (head (subseq text 0 (+ colon (if internal 2 1))))\n"
  "                    (p (string-upcase (subseq text (+ colon (if internal 2 1)))))\n"
  "                    (pk (find-package (string-upcase (subseq text 0 colon)))))\n"
  "               (when pk\n"
  "                 (if internal\n"
  "                     (do-symbols (s pk)\n"
  "                       (when (and (eq (symbol-package s) pk) (%txn-complete-prefix-p p (symbol-name s)))\n"
  "                         (add (concatenate 'string head (string-downcase (symbol-name s))))))\n"
  "                     (do-external-symbols (s pk)\n"
  "                       (when (%txn-complete-prefix-p p (symbol-name s))\n"
  "                         (add (concatenate 'string head (string-downcase (symbol-name s))))))))))))\n"
  "    (format nil \"~{~a~^ ~}\" (remove-duplicates (sort out #'string<) :test #'string=))))\n";

int txn_complete_install(jiti_State *S) { return txn_library_install(S, complete_lisp, "completion"); }

/* text as a Lisp string literal (malloc'd). */
static char *lisp_string(const char *text) {
  size_t n = strlen(text);
  char *s = malloc(2 * n + 3), *o = s;
  if (!s) return NULL;
  *o++ = '"';
  for (const char *p = text; *p; p++) {
    if (*p == '"' || *p == '\\') *o++ = '\\';
    *o++ = *p;
  }
  *o++ = '"';
  *o = 0;
  return s;
}

json_t *txn_complete(txn_World *W, const char *text) {
  json_t *out = json_array();
  txn_Status st = txn_status(W);
  /* a symbol's name holds no space: the candidates come back as one
  ** printed string, separated by spaces (a name that needs |...| with a
  ** space in it is simply not offered) */
  if (!out || !text || strpbrk(text, " \t\n\r()\"'`,;|\\") || (st != TXN_ST_IDLE && st != TXN_ST_FAULTED))
    return out;
  char *arg = lisp_string(text);
  if (!arg) return out;
  jiti_Result r;
  const char *args[1] = {arg};
  int saved = W->pausable;
  W->pausable = 0;
  jiti_checkpoint(W->S);
  jiti_Status rc = jiti_call_limited(W->S, "%TXN-COMPLETE", 1, args, &W->lim, &r);
  jiti_restore(W->S);
  W->pausable = saved;
  free(arg);
  if (rc == JITI_OK && r.value && r.value[0] == '"') {
    /* the printed string: names are plain constituents, so the only
    ** escapes are the quotes around it */
    const char *p = r.value + 1;
    while (*p && *p != '"' && json_array_size(out) < COMPLETE_MAX) {
      size_t n = strcspn(p, " \"");
      if (n) json_array_append_new(out, json_stringn(p, n));
      p += n;
      if (*p == ' ') p++;
    }
  }
  jiti_result_free(&r);
  return out;
}
