#!/usr/bin/env bash
# A pause's frames through a real kernel and `jiti act`: the backtrace
# lists the program's calls only, with each frame's locals; a repair
# evaluated in a frame reads its locals and sets them (the computation sees
# the new value when it resumes); return-from-frame gives the frame's
# value; restart-frame calls a redefined function's new definition; the
# refusals (no such frame, a frame of the level below, values that signal
# or are not a list, a gated source); every ending commits the right value.
#   bash tests/frames.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-frames.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
gen() { jfield generation; }
restart_id() {  # restart_id NAME: the id the paused menu gives restart NAME
  "$JITI" observe --store "$S" | sed -n "s/^  \(p[0-9]*-[0-9]*\) *$1 .*/\1/p" | head -1
}
act() { "$JITI" act --store "$S" --generation "$(gen)" "$@"; }

start_kernel "$S"; ok kernel-starts $?

"$JITI" apply --store "$S" -e '(defun ratio (n) (let ((d 0)) (loop (restart-case (return (/ n d)) (retry () :report "Divide again." nil)))))' >/dev/null
ok defined $?

# --- the pause: the program's frames, with their locals
t pauses 0 "paused \(generation [0-9]+\): DIVISION-BY-ZERO.*
backtrace \(innermost first\):
  0: \(/ 10 0\)
  1: \(RATIO 10\)
      N = 10
      D = 0
answer with" -- act --evaluate '(world-put :r (ratio 10))'
bt=$("$JITI" observe --store "$S" | sed -n '/^backtrace/,/^answer/p')
[[ -n $bt && ! $bt =~ RESTART-BIND|LAMBDA|%TXN|EVAL|ERROR ]]; ok no-kernel-insides $?
frames_json() { "$JITI" observe --store "$S" --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["pause"]["frames"], separators=(",",":")))'; }
t json-frames 0 '^\[\{"frame":0,"function":"/","args":\["10","0"\],"locals":\[\]\},\{"frame":1,"function":"RATIO","args":\["10"\],"locals":\[\{"name":"N","value":"10"\},\{"name":"D","value":"0"\}\]\}\]$' -- frames_json

# --- evaluate in a frame: read d, refusals, set d, retry
t frame-read 0 "repair value: 0" -- act --frame 1 --evaluate 'd'
t frame-none 1 "invalid-arguments.*no frame 5: its frames are 0 to 1" -- act --frame 5 --evaluate 'd'
t frame-gated 1 "rejected-by-gate" -- act --frame 1 --evaluate '#.(setq d 9)'
t frame-gated-throw 1 "rejected-by-gate" -- act --frame 1 --evaluate '(throw :x d)'
t frame-usage 2 "--frame goes with --evaluate" -- act --frame 1 --abort
t frame-setq 0 "repair value: 2" -- act --frame 1 --evaluate '(setq d 2)'
t frame-shows-new 0 "      D = 2" -- "$JITI" observe --store "$S"
t frame-resumed 0 "^5
accepted" -- act --resume "$(restart_id RETRY)"
t frame-committed 0 "^5$" -- "$JITI" eval --store "$S" '(values (world-get :r))'

# --- return-from-frame: refusals, then a value
act --evaluate '(world-put :q (+ 1 (ratio 7)))' >/dev/null
t return-not-list 1 "must evaluate to a list" -- act --return-from-frame 0 --args-expr '(cons 1 2)'
t return-signals 1 "the values to return failed: .*no values" -- act --return-from-frame 0 --args-expr '(error "no values")'
t return-gated 1 "rejected-by-gate" -- act --return-from-frame 0 --args-expr '#.(list 1)'
t return-none 1 "no frame 9" -- act --return-from-frame 9 --args 1
t return-value 0 "^42
accepted" -- act --return-from-frame 0 --args 41
t return-committed 0 "^42$" -- "$JITI" eval --store "$S" '(values (world-get :q))'

# --- restart-frame after redefining the function
act --evaluate '(world-put :s (ratio 3))' >/dev/null
t restart-redefine 0 "repair value: RATIO" -- act --evaluate '(defun ratio (n) (* n 100))'
t restart-frame 0 "^300
accepted" -- act --restart-frame 1
t restart-committed 0 "^\(300 500\)$" -- "$JITI" eval --store "$S" '(list (values (world-get :s)) (ratio 5))'

# --- a frame of the level below: a repair's pause lists its own calls
"$JITI" apply --store "$S" -e '(defun ratio (n) (let ((d 0)) (/ n d)))' >/dev/null
"$JITI" apply --store "$S" -e '(defun inner (k) (let ((m (* k 2))) (car m)))' >/dev/null
act --evaluate '(world-put :t (ratio 9))' >/dev/null
t level2-pauses 0 "level 2\].*
  0: \(INNER 4\)
      K = 4
      M = 8" -- act --evaluate '(inner 4)'
t level2-outer-frame 1 "no frame 1: its frames are 0 to 0 \(pause level 2 lists its repair's calls only" -- \
  act --frame 1 --evaluate 'd'
t level2-frame 0 "repair value: 8" -- act --frame 0 --evaluate 'm'
t level2-return 0 "repair value: \(:INNER-DONE\)" -- act --return-from-frame 0 --args-expr "(list (list :inner-done))"
t level1-again 0 "repair value: 0" -- act --frame 1 --evaluate 'd'
t level1-return 0 "^3
accepted" -- act --return-from-frame 1 --args 3
t level1-committed 0 "^3$" -- "$JITI" eval --store "$S" '(values (world-get :t))'

if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$tmp/kernel.log"; then
  fail=$((fail+1)); echo "FAIL sanitizer reports in the kernel log:"; grep -E -A20 "Sanitizer|runtime error" "$tmp/kernel.log" | head -60
else pass=$((pass+1)); fi

finish
