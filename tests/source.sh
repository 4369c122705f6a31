#!/usr/bin/env bash
# Source as written: definitions keep their text (comments, case, spelling)
# and where they were written; reader errors name FILE:LINE:COLUMN and what
# the reader saw — through run, apply, act --file, eval --file, show, diff,
# inspect and observe, offline and through a kernel, across a restart and
# recover-session; a store written before this opens and shows canonically;
# a change made another way (a model's act, a rollback to a canonical
# revision, a variable set since) shows canonically.
#   bash tests/source.sh path/to/jiti
set -u
JITI=$(realpath "$1")
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FIX=$(cd "$(dirname "${BASH_SOURCE[0]}")/fixtures" && pwd)
tmp=$(mktemp -d)
trap '[[ -e $tmp/k/kernel.pid ]] && "$JITI" stop --store "$tmp/k" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2

# --- reader errors: where, and what the reader saw
printf '(defun ok () 1)\n\n(defun broken (x)\n  (list x "a)\n' > open.lisp
printf '(defun g () 1))\n' > extra.lisp
printf '(list 1\n  #\\Nosuchchar)\n' > badchar.lisp
t run-eof 4 '^jiti: open.lisp:5:1: end of file inside a string opened at 4:11$' -- "$JITI" run open.lisp
t run-extra-paren 4 '^jiti: extra.lisp:1:15: unmatched close parenthesis$' -- "$JITI" run extra.lisp
t run-bad-char 4 '^jiti: badchar.lisp:2:3: unknown character name' -- "$JITI" run badchar.lisp
t run-expr 4 '^jiti: <input>:1:7: end of file inside a list opened at 1:1$' -- "$JITI" run -e '(+ 1 2'
t run-runtime-read 4 'END-OF-FILE: end of file inside a list opened at 1:1 \(at 1:2\)' -- \
  "$JITI" run -e '(read-from-string "(")'
"$JITI" init --store s >/dev/null
t apply-eof 1 'the source does not read: open.lisp:5:1: end of file inside a string opened at 4:11' -- \
  "$JITI" apply --store s open.lisp
t apply-extra-paren 1 'the source does not read: extra.lisp:1:15: unmatched close parenthesis' -- \
  "$JITI" apply --store s extra.lisp
t apply-expr 1 'the source does not read: <input>:2:10: end of file inside a list opened at 2:3' -- \
  "$JITI" apply --store s -e $'(defun h ()\n  (list 1'
t apply-nothing-published 0 '^1 ' -- "$JITI" log -n 1 --store s

# --- apply FILE keeps the text and the place
cat > app.lisp <<'L'
;;; prices
(defvar *rate* 5/100)   ; five percent

(defun price (n)
  "N with the rate."
  ;; 'x stays 'x, 5/100 stays 5/100
  (list 'x (* n (+ 1 *rate*))))
(progn (defun inside () :canonical))
L
t apply-file 0 'revision 2' -- "$JITI" apply --store s app.lisp
t show-written 0 $'added function PRICE\n;; from app.lisp:4:1\n\\(defun price \\(n\\)\n  "N with the rate."\n  ;; \'x stays \'x, 5/100 stays 5/100\n  \\(list \'x \\(\\* n \\(\\+ 1 \\*rate\\*\\)\\)\\)\\)' -- \
  "$JITI" show HEAD --store s
t show-variable-written 0 $'added variable \\*RATE\\*\n;; from app.lisp:2:1\n\\(defvar \\*rate\\* 5/100\\)' -- "$JITI" show HEAD --store s
t show-inside-progn-canonical 0 $'added function INSIDE\n\\(DEFUN INSIDE NIL :CANONICAL\\)' -- "$JITI" show HEAD --store s

# a comment-only edit is a change, and diff shows it as written; a
# definition read from another file changes its place
sed -e 's/;; .x stays .x, 5\/100 stays 5\/100/;; the comment changed/' -e '1i\
;; a line above' app.lisp > app2.lisp
t apply-edited 0 'revision 3 \(generation 3\): \+0 ~2 -0' -- "$JITI" apply --store s app2.lisp
t diff-written 0 $'-;; from app.lisp:4:1\n\\+;; from app2.lisp:5:1\n \\(defun price \\(n\\)\n   "N with the rate."\n-  ;; \'x stays \'x, 5/100 stays 5/100\n\\+  ;; the comment changed' -- \
  "$JITI" diff 2 3 --store s
t apply-same-again 0 'no change: revision 3 stays CURRENT' -- "$JITI" apply --store s app2.lisp
# the same definitions moved down their file (a line added above): no
# change, their first place stays (an editor finds a form by its text)
sed -i '1i\
;; yet another line above' app2.lisp
t apply-moved-same 0 'no change: revision 3 stays CURRENT' -- "$JITI" apply --store s app2.lisp

# a variable set since shows its value, canonically
t setf-variable 0 'revision 4' -- "$JITI" apply --store s -e '(setf *rate* 7/100)'
t show-variable-canonical 0 $'changed variable \\*RATE\\*\n\\(DEFPARAMETER \\*RATE\\* 7/100\\)' -- "$JITI" show HEAD --store s
# a rollback restores its target's entries as they were: written or not
t rollback 0 'rollback to 3' -- "$JITI" rollback 3 --store s
t show-rollback-written 0 $'changed variable \\*RATE\\*\n;; from app2.lisp:3:1\n\\(defvar \\*rate\\* 5/100\\)' -- "$JITI" show HEAD --store s
t recover-keeps 0 'interrupted: none' -- "$JITI" recover-session --store s

# --- through a kernel: eval --file, act --file, inspect, observe; a model's
# act (no origin) is canonical; restart and recover-session keep the text
cp -r s k
t kernel 0 'serving' -- "$JITI" kernel --store k --detach
gen() { "$JITI" status --store k | awk '/^generation:/ {print $2}'; }
printf '(defun tax (n)\n  ;; written by hand\n  (* n 1/10))\n' > tax.lisp
t act-file 0 'accepted' -- "$JITI" act --store k --generation "$(gen)" --file tax.lisp
t inspect-written 0 $'^function TAX\nhash [0-9a-f]{64}\n;; from tax.lisp:1:1\n\\(defun tax \\(n\\)\n  ;; written by hand\n  \\(\\* n 1/10\\)\\)$' -- \
  "$JITI" inspect --store k TAX
json=$("$JITI" inspect --store k TAX --json)
ok inspect-json-location "$(python3 -c '
import json, sys
e = json.loads(sys.argv[1])["entry"]
assert e["location"] == {"file": "tax.lisp", "line": 1, "column": 1}, e
assert e["text"].startswith("(defun tax (n)\n  ;; written by hand"), e
assert e["canonical"] == "(DEFUN TAX (N) (* N 1/10))", e
' "$json"; echo $?)"
view=$("$JITI" observe --store k --json)
ok observe-json-location "$(python3 -c '
import json, sys
es = {e["name"]: e for e in json.loads(sys.argv[1])["entries"]}
assert es["PRICE"]["location"] == {"file": "app2.lisp", "line": 5, "column": 1}, es["PRICE"]
assert ";; the comment changed" in es["PRICE"]["text"], es["PRICE"]
assert "location" not in es["INSIDE"], es["INSIDE"]
' "$view"; echo $?)"
printf '(defun more (n)\n  (+ n 1))\n(defun twice (n) (* 2 n))))\n' > more.lisp
t eval-file-error 1 'more.lisp:3:26: unmatched close parenthesis' -- "$JITI" eval --store k --file more.lisp
t act-file-error 1 'extra.lisp:1:15: unmatched close parenthesis' -- "$JITI" act --store k --generation "$(gen)" --file extra.lisp
# (the same definition again keeps its text; another one replaces it)
t act-same 0 'accepted' -- "$JITI" act --store k --generation "$(gen)" --evaluate '(defun tax (n) (* n 1/10))'
t inspect-same-written 0 ';; written by hand' -- "$JITI" inspect --store k TAX
t act-canonical 0 'accepted' -- "$JITI" act --store k --generation "$(gen)" --evaluate '(defun tax (n) (* n 1/5))'
t inspect-canonical 0 $'^function TAX\nhash [0-9a-f]{64}\n\\(DEFUN TAX \\(N\\) \\(\\* N 1/5\\)\\)$' -- "$JITI" inspect --store k TAX
t act-file-again 0 'accepted' -- "$JITI" act --store k --generation "$(gen)" --file tax.lisp
t stop 0 'stopped' -- "$JITI" stop --store k
t recover-written 0 'interrupted: none' -- "$JITI" recover-session --store k
t kernel-again 0 'serving' -- "$JITI" kernel --store k --detach
t inspect-after-restart 0 $';; from tax.lisp:1:1\n\\(defun tax \\(n\\)\n  ;; written by hand' -- "$JITI" inspect --store k TAX
t stop-again 0 'stopped' -- "$JITI" stop --store k

# --- a store written before entries kept their text
mkdir -p old && cp "$FIX/canonical-store/data.mdb" old/ && chmod 600 old/data.mdb
t old-show 0 $'added function AREA\n\\(DEFUN AREA \\(W H\\) \\(\\* W H\\)\\)' -- "$JITI" show 2 --store old
t old-recover 0 'entries: +2' -- "$JITI" recover-session --store old
t old-use 0 '12' -- "$JITI" apply --store old -e '(print (area 3 4))'
printf '(defun area (w h)\n  ;; now written\n  (* w h))\n' > area.lisp
t old-new-written 0 'revision 3 \(generation [0-9]+\): \+0 ~1 -0' -- "$JITI" apply --store old area.lisp
t old-diff 0 $'-\\(DEFUN AREA \\(W H\\) \\(\\* W H\\)\\)\n\\+;; from area.lisp:1:1\n\\+\\(defun area \\(w h\\)' -- "$JITI" diff 2 3 --store old
t old-unit-canonical 0 $'\\(DEFPARAMETER \\*UNIT\\* "m2"\\)' -- "$JITI" show 2 --store old

finish
