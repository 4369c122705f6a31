#!/usr/bin/env bash
# A store whose CURRENT holds an entry that cannot be imported (as a damaged
# or hostile store would): the kernel still starts and serves the world
# faulted — status, observe and history work, every call is refused naming
# the fix — recover-session ends with the entry and the fix named, and a
# rollback through the running kernel brings the world back.  Then the calls
# that once made such a store are refused, and a restart finds it whole.
#   bash tests/faulted.sh path/to/jiti path/to/store_poison
set -u
JITI=$1
POISON=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-faulted.XXXXXX)
trap '"$JITI" stop --store "$S" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
S=$tmp/s

"$JITI" init --store "$S" >/dev/null
t apply 0 "revision 2" -- "$JITI" apply --store "$S" -e '(defun zz () 1) (defun keep () :kept) (world-put :row 5)'
# the function ZZ stored again as a structure: its hash is right, its import fails
t poison 0 "revision 3" -- "$POISON" "$S" function ZZ structure
t recover-names-entry 1 "revision 3 .* cannot be rebuilt: cannot import structure ZZ: .*not a DEFSTRUCT.*
return to a revision that imports with 'jiti rollback REV --store $S'.*
nothing was changed" -- "$JITI" recover-session --store "$S"
t kernel-starts 0 "serving the store" -- "$JITI" kernel --store "$S" --detach
t status-faulted 0 "state: +faulted" -- "$JITI" status --store "$S"
t log-names-entry 0 "faulted: import-failed: cannot import structure ZZ" -- cat "$S/kernel.log"
t observe-serves 0 "faulted.*function +KEEP.*:ROW = 5" -- bash -c "'$JITI' observe --store '$S' | tr '\n' ' '"
t history-serves 0 "poisoned entry" -- "$JITI" log --store "$S"
t call-refused 1 "faulted: the world of revision 3 could not be imported \(cannot import structure ZZ.*jiti rollback previous" \
  -- "$JITI" eval --store "$S" '(keep)'
t apply-refused 1 "could not be imported" -- "$JITI" apply --store "$S" -e '(world-put :row 6)'
t invariant-refused 1 "could not be imported" -- "$JITI" invariant add --store "$S" row-positive '(> (world-get :row) 0)'
t still-faulted 0 "state: +faulted" -- "$JITI" status --store "$S"
t rollback 0 "revision 4 \(rollback to 2" -- "$JITI" rollback previous --store "$S"
t healed 0 "^\(:KEPT 1 5\)$" -- "$JITI" eval --store "$S" '(list (keep) (zz) (world-get :row))'
t status-idle 0 "state: +idle" -- "$JITI" status --store "$S"
t stop 0 "stopped" -- "$JITI" stop --store "$S"
t recovers-after 0 "revision: +4 \\(rollback" -- "$JITI" recover-session --store "$S"

# What would make a store no worker can import is refused at the call,
# through a live kernel, naming the entry and the rule; the kernel serves
# on, and once stopped and started again its world is not faulted.
t kernel-again 0 "serving the store" -- "$JITI" kernel --store "$S" --detach
t uninterned-refused 1 "unsafe: unexportable: function #:X would not import back as itself: it is named by an uninterned symbol" \
  -- "$JITI" eval --store "$S" '(defun #:x () 1)'
t eql-refused 1 "unsafe: unexportable: method \(REACT \(\(EQL \(1\)\)\)\) holds an unexportable value: a method whose \(EQL x\) specializer is the value of a form" \
  -- "$JITI" eval --store "$S" '(progn (defgeneric react (x)) (defmethod react ((x (eql (list 1)))) 1))'
t nul-refused 1 "not storable in the world: a symbol whose name holds a NUL character" \
  -- "$JITI" eval --store "$S" '(world-put (intern (format nil "ROW~cX" (code-char 0)) :keyword) 7)'
t package-made 0 "" -- "$JITI" eval --store "$S" '(defpackage :p1 (:use :cl))'
t package-refused 1 "cannot delete the package P1: the world's entries name its symbols \(function P1::F\)" \
  -- "$JITI" eval --store "$S" '(progn (defun p1::f () 1) (delete-package :p1))'
t serves-on 0 "^\(:KEPT 1 5\)$" -- "$JITI" eval --store "$S" '(list (keep) (zz) (world-get :row))'
t stop-again 0 "stopped" -- "$JITI" stop --store "$S"
t restarts 0 "serving the store" -- "$JITI" kernel --store "$S" --detach
t not-faulted 0 "state: +idle" -- "$JITI" status --store "$S"
t same-world 0 "^\(:KEPT 1 5 \"P1\" NIL\)$" -- "$JITI" eval --store "$S" \
  '(list (keep) (zz) (world-get :row) (package-name :p1) (fboundp (quote p1::f)))'
t stop-last 0 "stopped" -- "$JITI" stop --store "$S"
if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$S/kernel.log"; then
  fail=$((fail+1)); echo "FAIL sanitizer reports in the kernel log:"; grep -E -A20 "Sanitizer|runtime error" "$S/kernel.log" | head -60
else pass=$((pass+1)); fi
finish
