#!/usr/bin/env bash
# Command-line behaviour of `jiti`: help, version, exit codes, error messages.
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
t help 0 "usage: jiti" -- "$JITI" --help
t version 0 "^jiti [0-9]+\.[0-9]+" -- "$JITI" --version
t no-args 2 "usage" -- "$JITI"
t unknown-command 2 "not a jiti command" -- "$JITI" frobnicate
t run-help 0 "usage: jiti run" -- "$JITI" run --help
t run-no-args 2 "usage: jiti run" -- "$JITI" run
t run-expr 0 "^3$" -- "$JITI" run -e "(+ 1 2)"
t run-prints-readably 0 '^\("a" #\\b 1/3 1.5\)$' -- "$JITI" run -e '(list "a" #\b 1/3 1.5)'
t run-prints-nul 0 '" +\\0 +\\0 +"' -- bash -c "\"$JITI\" run -e '(make-string 2)' | od -An -c"
t run-error 1 "UNDEFINED-FUNCTION: The function NOPE is undefined" -- "$JITI" run -e "(nope)"
t run-reader-error 4 "^jiti: <input>:1:5: end of file inside a list opened at 1:1$" -- "$JITI" run -e "(1 2"
# jiti run reads its program as the program's READ would: #. evaluates while
# *read-eval* is true (the default), and is a reader error once it is NIL
t run-read-eval 0 "^3$" -- "$JITI" run -e "#.(+ 1 2)"
printf '(print #.(+ 1 2))\n(setq *read-eval* nil)\n(print #.(+ 3 4))\n' > "$tmp/re.lisp"
t run-read-eval-off 4 "re.lisp:3:8: read-time evaluation \(#\.\) is off: \*read-eval\* is NIL" -- "$JITI" run "$tmp/re.lisp"
t run-missing-file 3 "cannot read" -- "$JITI" run "$tmp/none.lisp"
t run-bad-option 2 "unknown option" -- "$JITI" run --bogus x
t run-bad-limit 2 "needs a non-negative number" -- "$JITI" run --fuel abc -e 1
printf '(print (+ 1 2))\n(princ "done")\n' > "$tmp/a.lisp"
t run-file 0 "3 *done" -- "$JITI" run "$tmp/a.lisp"
printf '(defun g () 7)\n' > "$tmp/b.lisp"; printf '(princ (g))\n' > "$tmp/c.lisp"
t run-two-files-one-world 0 "^7$" -- "$JITI" run "$tmp/b.lisp" "$tmp/c.lisp"
# finish-output hands what was written to the pipe or file at once: a run
# killed later has delivered it
"$JITI" run -e '(progn (write-string "flushed") (finish-output) (loop))' > "$tmp/flush.out" 2>&1 &
fpid=$!
for _ in $(seq 300); do grep -q flushed "$tmp/flush.out" && break; sleep 0.1; done
kill -9 "$fpid"; wait "$fpid" 2>/dev/null
t run-finish-output-flushes 0 "^flushed$" -- cat "$tmp/flush.out"
t fuel-limit 1 "FUEL-EXHAUSTED" -- "$JITI" run --fuel 100000 -e "(loop)"
t depth-limit 1 "DEPTH-EXCEEDED" -- "$JITI" run --depth 500 -e "(progn (defun r (n) (1+ (r n))) (r 1))"
t deep-recursion-default 1 "DEPTH-EXCEEDED" -- "$JITI" run -e "(progn (defun r (n) (1+ (r n))) (r 1))"
# (a collection at every allocation would make filling 20 MB quadratic)
t heap-limit 1 "HEAP-EXHAUSTED" -- env JITI_GC_STRESS=0 "$JITI" run --heap 20M -e "(make-list 100000000)"
t output-limit 1 "OUTPUT-EXCEEDED" -- "$JITI" run --output 1000 -e "(loop (princ \"x\"))"
finish
