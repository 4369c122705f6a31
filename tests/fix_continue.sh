#!/usr/bin/env bash
# Fix and continue, end to end: each scenario is an error a user meets, the
# repair that fixes it, and the computation continuing from where it
# stopped — once through `jiti act` (a transaction paused and answered by
# its generation), once through `jiti repl` (a form paused in the listener's
# debugger and answered by number), on a real kernel.  Each ends with the
# world checked: what the repaired computation kept, or nothing at all when
# it was aborted.
#   undefined function   define it, CONTINUE retries the call
#   unbound variable     USE-VALUE
#   unbound slot         USE-VALUE
#   wrong type           the application's own restart
#   error in a repair    level 2 opened, aborted, back to level 1, repaired
#   eval in a frame      a local read and set in the paused frame, then resumed
#   return from a frame  the frame returns a value given, its caller goes on
#   restart a frame      after a redefinition, the frame's call runs again
#   abandoned            abort at level 1 restores everything
#   client gone          the pause outlives its client; another answers it
#   bash tests/fix_continue.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-fix.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
value() { "$JITI" eval --store "$S" "$1" 2>&1; }
gen() { "$JITI" status --store "$S" | awk '/^generation:/ {print $2}'; }
act() { "$JITI" act --store "$S" --generation "$(gen)" "$@" 2>&1; }
repl() { printf '%s' "$1" | timeout 60 "$JITI" repl --store "$S" 2>&1; }

start_kernel "$S"; ok kernel-starts $?
value '(progn (defclass pt () ((x :initarg :x)))
              (defun safe-car (x) (restart-case (car x) (use-value (v) :report "Use a value." v)))
              :ready)' >/dev/null

# --- through jiti act
t act-undefined-pauses 0 "UNDEFINED-FUNCTION: The function TRIPLE is undefined" -- \
  act --evaluate '(world-put :a (triple 2))'
t act-undefined-repair 0 "repair value: TRIPLE" -- act --evaluate '(defun triple (x) (* 3 x))'
t act-undefined-continue 0 "^6
accepted: revision" -- act --resume continue
t act-undefined-kept 0 "^\(6 9\)$" -- value '(list (world-get :a) (triple 3))'

t act-unbound-pauses 0 "UNBOUND-VARIABLE: The variable RATE is unbound" -- act --evaluate '(world-put :b (+ rate 1))'
t act-unbound-use-value 0 "^6
accepted" -- act --resume use-value --args 5
t act-unbound-kept 0 "^6$" -- value '(values (world-get :b))'

t act-slot-pauses 0 "UNBOUND-SLOT: The slot X is unbound" -- \
  act --evaluate "(world-put :c (slot-value (make-instance 'pt) 'x))"
t act-slot-use-value 0 "^7
accepted" -- act --resume use-value --args 7
t act-slot-kept 0 "^7$" -- value '(values (world-get :c))'

t act-type-pauses 0 "TYPE-ERROR: The value 5 is not of type LIST" -- act --evaluate '(world-put :d (safe-car 5))'
t act-type-own-restart 0 "^9
accepted" -- act --resume use-value --args 9
t act-type-kept 0 "^9$" -- value '(values (world-get :d))'

t act-level-1 0 "UNDEFINED-FUNCTION: The function HALVE is undefined" -- act --evaluate '(world-put :e (halve 8))'
t act-level-2 0 "level 2\] \(an error inside a repair; --abort returns to level 1\)" -- \
  act --evaluate '(progn (defun halve (x) (/ x (two))) (halve 8))'
t act-level-2-abort 0 "^level 2 aborted, what its repair changed restored; the repair signalled UNDEFINED-FUNCTION: The function TWO is undefined.
paused \(generation [0-9]+\): UNDEFINED-FUNCTION: The function HALVE is undefined" -- act --abort
t act-level-1-still 0 "^generation [0-9]+, revision [0-9]+, paused" -- "$JITI" observe --store "$S"
t act-level-1-repair 0 "repair value: HALVE" -- act --evaluate '(defun halve (x) (/ x 2))'
t act-level-1-continue 0 "^4
accepted" -- act --resume continue
t act-level-kept 0 "^4$" -- value '(values (world-get :e))'
t act-level-2-undone 0 "^NIL$" -- value "(fboundp 'two)"

value '(defun ratio (n) (let ((d 0)) (restart-case (/ n d) (continue () :report "Divide again." (/ n d)))))' >/dev/null
t act-frame-pauses 0 "DIVISION-BY-ZERO.*
  1: \(RATIO 12\)
      N = 12
      D = 0" -- act --evaluate '(world-put :o (ratio 12))'
t act-frame-read 0 "repair value: 0" -- act --frame 1 --evaluate 'd'
t act-frame-set 0 "repair value: 4" -- act --frame 1 --evaluate '(setq d 4)'
t act-frame-continued 0 "^3
accepted" -- act --resume continue
t act-frame-kept 0 "^3$" -- value '(values (world-get :o))'
act --evaluate '(world-put :p (ratio 5))' >/dev/null
t act-return-from-frame 0 "^50
accepted" -- act --return-from-frame 1 --args 50
t act-return-kept 0 "^50$" -- value '(values (world-get :p))'
act --evaluate '(world-put :s (ratio 6))' >/dev/null
act --evaluate '(defun ratio (n) (let ((d 3)) (/ n d)))' >/dev/null
t act-restart-frame 0 "^2
accepted" -- act --restart-frame 1
t act-restart-kept 0 "^\(2 4\)$" -- value '(list (world-get :s) (ratio 12))'

t act-abandon-pauses 0 "UNDEFINED-FUNCTION" -- act --evaluate '(progn (world-put :a 0) (world-put :f (nope)))'
t act-abandon 0 "^aborted: " -- act --abort
t act-abandon-restored 0 "^\(6 NIL\)$" -- value '(list (world-get :a) (world-get :f))'

# a paused call outlives its client: jiti eval --on-error pause exits, the
# pause waits; another client repairs and continues it
t call-pauses-and-exits 0 "UNDEFINED-FUNCTION: The function QUAD is undefined" -- \
  "$JITI" eval --store "$S" --on-error pause '(world-put :g (quad 2))'
t call-still-paused 0 "state: +paused" -- "$JITI" status --store "$S"
act --evaluate '(defun quad (x) (* 4 x))' >/dev/null
t call-continued 0 "^8
accepted" -- act --resume continue
t call-kept 0 "^8$" -- value '(values (world-get :g))'

# --- through jiti repl: the listener's debugger
t repl-undefined 0 "debugger entered at level 1 \(generation [0-9]+\): UNDEFINED-FUNCTION: The function PENTA is undefined.
restarts:
  0: \[CONTINUE\] Retry calling PENTA.*
repair value: PENTA
10
; revision [0-9]+: (data :H, function PENTA|function PENTA, data :H)" -- \
  repl $'(world-put :h (penta 2))\n(defun penta (x) (* 5 x))\n0\n'
t repl-undefined-kept 0 "^10$" -- value '(values (world-get :h))'

t repl-unbound 0 "UNBOUND-VARIABLE: The variable SIZE is unbound.*
  1: \[USE-VALUE\] Use specified value.*
12" -- repl $'(world-put :i (* size 2))\n1 6\n'
t repl-unbound-kept 0 "^12$" -- value '(values (world-get :i))'

t repl-slot 0 "UNBOUND-SLOT.*
  0: \[USE-VALUE\].*
3" -- repl $"(world-put :j (slot-value (make-instance 'pt) 'x))"$'\n0 3\n'
t repl-slot-kept 0 "^3$" -- value '(values (world-get :j))'

t repl-type 0 "TYPE-ERROR: The value 5 is not of type LIST.*
  0: \[USE-VALUE\] Use a value.*
11" -- repl $'(world-put :k (safe-car 5))\n0 11\n'
t repl-type-kept 0 "^11$" -- value '(values (world-get :k))'

t repl-level-2 0 "debugger entered at level 2 \(generation [0-9]+\): UNDEFINED-FUNCTION: The function TEN is undefined.
\(an error inside a repair; :abort returns to level 1\).*
back at level 1 \(generation [0-9]+\): UNDEFINED-FUNCTION: The function DECA is undefined.*
repair value: DECA
30" -- repl $'(world-put :l (deca 3))\n(progn (defun deca (x) (* x (ten))) (deca 1))\n:abort\n(defun deca (x) (* x 10))\n:continue\n'
t repl-level-kept 0 "^30$" -- value '(values (world-get :l))'
t repl-level-2-undone 0 "^NIL$" -- value "(fboundp 'ten)"

value '(defun ratio (n) (let ((d 0)) (restart-case (/ n d) (continue () :report "Divide again." (/ n d)))))' >/dev/null
t repl-frame 0 "  1: \(RATIO 12\)
      N = 12
      D = 0.*
repair value: 0
repair value: 6
2
; revision" -- repl $'(world-put :t (ratio 12))\n:frame 1 d\n:frame 1 (setq d 6)\n:continue\n'
t repl-frame-kept 0 "^2$" -- value '(values (world-get :t))'
t repl-return 0 "
70
; revision" -- repl $'(world-put :u (ratio 7))\n:return 1 70\n'
t repl-return-kept 0 "^70$" -- value '(values (world-get :u))'
t repl-restart-frame 0 "repair value: RATIO
3
; revision" -- repl $'(world-put :v (ratio 9))\n(defun ratio (n) (let ((d 3)) (/ n d)))\n:restart-frame 1\n'
t repl-restart-kept 0 "^3$" -- value '(values (world-get :v))'

t repl-abandon 0 "aborted: " -- repl $'(progn (world-put :h 0) (world-put :m (nope)))\n:abort\n'
t repl-abandon-restored 0 "^\(10 NIL\)$" -- value '(list (world-get :h) (world-get :m))'

# the repl's client leaves while paused: the pause stays for the next one
t repl-leaves-paused 0 "debugger entered at level 1" -- repl $'(world-put :n (hexa 1))\n'
t repl-next-continues 0 "repair value: HEXA
6
; revision" -- repl $'(defun hexa (x) (* 6 x))\n:continue\n'
t repl-next-kept 0 "^6$" -- value '(values (world-get :n))'

t idle-at-the-end 0 "state: +idle" -- "$JITI" status --store "$S"
"$JITI" stop --store "$S" >/dev/null
if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$tmp/kernel.log"; then
  fail=$((fail+1)); echo "FAIL sanitizer reports in the kernel log:"; grep -E -A20 "Sanitizer|runtime error" "$tmp/kernel.log" | head -60
else pass=$((pass+1)); fi
finish
