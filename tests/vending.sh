#!/usr/bin/env bash
# Automatic repair end to end on the vending machine (examples/vending-
# machine/): a real kernel, `jiti supervise` with the scripted model, the
# candidate verified on a fork of the live worker.  A failing call becomes
# an incident that goes awaiting-model -> verifying -> repaired and the next
# call gets the product; with mode pause the first call itself succeeds.
# And every way a repair must not land: a candidate that breaks an
# invariant, changes a second definition under --scope function, is
# identical to the live one, loops (killed while the application answers),
# is hostile (file, process, network, fork: contained); a hand edit while
# the model thinks makes the proposal stale; ten identical failures are one
# incident; the watch undoes a repair that fails more than before; kill -9
# of the kernel while verifying leaves the incident interrupted and the
# definition as it was.  And demo.sh as written, with the operator's heal
# of a wrong price and tentative repairs promoted and rejected.
#   bash tests/vending.sh path/to/jiti
set -u
JITI=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
app=$here/../examples/vending-machine
tmp=$(mktemp -d /tmp/jiti-vending.XXXXXX)
cleanup() {
  kill_kernels
  [[ -n ${svpid:-} ]] && kill "$svpid" 2>/dev/null
  [[ -n ${KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
J() { "$JITI" "$@" --store "$S"; }
script() {  # script NAME LINE...: a scripted model's file
  local f=$tmp/$1.jsonl; shift
  printf '%s\n' "$@" >"$f"
  echo "$f"
}
verdict() {  # verdict SOURCE: a repair verdict's line
  python3 -c 'import json,sys; print(json.dumps({"type":"repair","source":sys.argv[1],"reason":"test","intended_changes":None}))' "$1"
}
status_of() { J incidents show "$1" --json | sed -n 's/^ *"status": "\(.*\)",*$/\1/p' | head -1; }
definition() { J inspect dispense 2>/dev/null | tail -1; }
overpay() {  # a customer pays 200 for the 150 cola: prints the incident's number
  J eval '(insert-coin 100)' >/dev/null; J eval '(insert-coin 100)' >/dev/null
  J eval '(dispense "A1")' 2>&1 | sed -n 's/^opened incident \([0-9]*\) .*/\1/p'
}
right=$(sed -n 's/.*"source":"\(.*\)","reason".*/\1/p' "$app/repair.jsonl" | python3 -c 'import json,sys; print(json.loads("\""+sys.stdin.read().strip()+"\""))')
buggy_def=$(sed -n '/^(defun dispense/,/^$/p' "$app/machine.lisp")
restore_bug() { J apply -e "$buggy_def" >/dev/null; }

"$JITI" init --store "$S" >/dev/null
start_kernel "$S"; ok kernel-starts $?
J apply "$app/machine.lisp" >/dev/null
J invariant add credit-never-negative '(>= (machine-credit *machine*) 0)' >/dev/null
J invariant add change-is-exact "(equal (change-coins 40) '(25 10 5))" >/dev/null
J repair enable dispense --expect-condition INSUFFICIENT-CREDIT >/dev/null
J eval '(insert-coin 100)' >/dev/null
t exact-price-works 0 '"water" NIL' -- J eval '(dispense "A2")'
J eval '(insert-coin 25)' >/dev/null
t expected-no-incident 1 "insufficient credit: 100 cents needed, 25 inserted" -- J eval '(dispense "A2")'
t still-no-incident 0 "^no incidents" -- J incidents
J eval '(setf (machine-credit *machine*) 0)' >/dev/null
J eval '(stock-product "C1" "sandwich" 200 5)' >/dev/null
J eval '(insert-coin 100)' >/dev/null; J eval '(insert-coin 100)' >/dev/null
t exact-sandwich 0 '"sandwich" NIL' -- J eval '(dispense "C1")'
t recorded 0 '\(dispense "C1"\)' -- J traffic DISPENSE
bug=$(definition)

# --- ten identical failures are one incident
n=$(overpay)
for _ in $(seq 9); do J eval '(dispense "A1")' >/dev/null 2>&1; done
t one-incident 0 "^$n +[^ ]+ +captured +DISPENSE +SIMPLE-ERROR +x10$" -- J incidents
t callees-in-evidence 0 '"callees": \[
 *\{
 *"function": "CHANGE-COINS",
 *"definition": "[0-9a-f]{64}"' -- J incidents show "$n" --json

t reads-in-evidence 0 "what the call read \\(the values it saw first\\):
  variable \\*MACHINE\\* = #<MACHINE \\{[0-9A-F]+\\}>
  slot SLOTS of #<MACHINE \\{[0-9A-F]+\\}> = #<HASH-TABLE .*
  slot PRICE of #<PRODUCT \\{[0-9A-F]+\\}> = 150
  slot CREDIT of #<MACHINE \\{[0-9A-F]+\\}> = 200" -- J incidents show "$n"

# --- a candidate breaking an invariant, then one out of scope, then an identical one: all rejected
t rejected-three 0 "rejected: the failed call, run again with the candidate, breaks an invariant: invariant CREDIT-NEVER-NEGATIVE returned NIL
.*
.*rejected: out of scope: the candidate changes the function CHANGE-COINS.*
.*rejected: the candidate is identical to the live definitions.*
incident $n \(DISPENSE\): rejected: no repair passed verification in 3 attempts" -- \
  J supervise --until-idle --scripted "$(script three \
    "$(verdict "(defun dispense (code) (setf (machine-credit *machine*) -1) (list code nil))")" \
    "$(verdict "(progn (defun change-coins (c) (list c)) $right)")" \
    "$(verdict "$buggy_def")")"
t rejected-unchanged 0 "^$(printf '%q' "$bug")$" -- definition
t verification-logged 0 'verification: \{"passed":false' -- J incidents show "$n"

# --- a hand edit while the model thinks: the proposal is stale
n=$(overpay)
J apply -e "$(sed 's/"no product in slot ~a"/"slot ~a is empty"/' <<<"$buggy_def")" >/dev/null
t stale 0 "incident $n \(DISPENSE\): the failing definition changed since the incident was captured" -- \
  J supervise --until-idle --scripted "$(script stale "$(verdict "$right")")"
t stale-status 0 "^stale$" -- status_of "$n"
restore_bug

# --- a candidate that loops is killed; the application answers meanwhile
n=$(overpay)
"$JITI" supervise --store "$S" --until-idle --verify-timeout 3 \
  --scripted "$(script loops "$(verdict "(defun dispense (code) (loop) code)")")" >"$tmp/loop.out" 2>&1 &
svpid=$!
sleep 0.5
t answers-while-verifying 0 '^\("water" NIL\)$' -- bash -c "'$JITI' eval --store '$S' '(setf (machine-credit *machine*) 100)' >/dev/null && '$JITI' eval --store '$S' '(dispense \"A2\")'"
wait $svpid; svpid=
t loop-stopped 0 "rejected: (the verification did not finish: timeout|the failed call still fails with the candidate: FUEL-EXHAUSTED)" -- cat "$tmp/loop.out"
t loop-unchanged 0 "^$(printf '%q' "$bug")$" -- definition
J incident-cancel 2>/dev/null
J eval '(setf (machine-credit *machine*) 0)' >/dev/null

# --- hostile candidates are contained in the shadow
n=$(overpay)
hostile="(defun dispense (code) (with-open-file (s \"$tmp/pwned\" :direction :output) (write-line \"x\" s)) code)"
t hostile-rejected 0 "rejected: (the failed call still fails|the candidate changes the result)" -- \
  J supervise --until-idle --attempts 1 --scripted "$(script hostile "$(verdict "$hostile")")"
ok hostile-no-file "$([[ ! -e $tmp/pwned ]]; echo $?)"
J eval '(setf (machine-credit *machine*) 0)' >/dev/null

# --- a candidate that changes a recorded result is rejected (the sandwich's change as a number)
n=$(overpay)
t changes-recorded 0 'rejected: the candidate changes the result of the recorded call \(dispense "C1"\): \("sandwich" NIL\) before, \("sandwich" 0\) with it' -- \
  J supervise --until-idle --attempts 1 --scripted "$(script changes "$(verdict "${right/(change-coins (- credit price))/(- credit price)}")")"
J eval '(setf (machine-credit *machine*) 0)' >/dev/null

# --- the repair: awaiting-model -> verifying -> repaired, and the next call gets the cola
n=$(overpay)
t repaired 0 "incident $n \(DISPENSE\): repaired by revision [0-9]+" -- \
  J supervise --until-idle --scripted "$(script right "$(verdict "$right")")"
t repaired-status 0 "^repaired$" -- status_of "$n"
t statuses-as-events 0 '"status":"repaired".*"status":"verifying".*"status":"awaiting-model".*"status":"captured"' -- \
  bash -c "'$JITI' events --json -n 30 --store '$S' | grep '\"incident\":$n' | tr '\n' ' '"
t repair-revision 0 "repair +\+0 ~1 -0 +repair of incident $n \(DISPENSE\)" -- J log -n 5
t cola 0 '^\("cola" \(25 25\)\)$' -- J eval '(dispense "A1")'

# --- the watch undoes a repair that fails more than before
restore_bug
n=$(overpay)
# right for every call recorded, wrong for crisps (never sold before)
partial=${right/(let ((product/(when (equal code \"B1\") (error \"slot ~a is broken\" code)) (let ((product}
t partial-repaired 0 "repaired by revision" -- \
  J supervise --until-idle --watch 5 --scripted "$(script partial "$(verdict "$partial")")"
for _ in 1 2 3 4; do J eval '(insert-coin 100)' >/dev/null; J eval '(dispense "B1")' >/dev/null 2>&1; done
t_until watch-undid 0 "^captured$" -- status_of "$n"
t undo-revision 0 "repair +\+0 ~1 -0 +undo the repair of incident $n \(DISPENSE, revision [0-9]+\): 3 of 3 calls failed after it" -- J log -n 5
t_until undo-restores 1 "cannot give negative change" -- J eval '(progn (setf (machine-credit *machine*) 200) (dispense "B1"))'

# --- mode pause: the first call waits for its repair and succeeds
restore_bug
J repair enable dispense --mode pause --expect-condition INSUFFICIENT-CREDIT >/dev/null
J eval '(setf (machine-credit *machine*) 0)' >/dev/null
"$JITI" supervise --store "$S" --scripted "$(script pause "$(verdict "$right")")" >"$tmp/pause.out" 2>&1 &
svpid=$!
J eval '(insert-coin 100)' >/dev/null; J eval '(insert-coin 100)' >/dev/null
t first-call-succeeds 0 '^\("cola" \(25 25\)\)$' -- J eval '(dispense "A1")'
t first-call-effects 0 "^0$" -- J eval '(machine-credit *machine*)'
kill -INT "$svpid"; wait "$svpid"; svpid=
t pause-supervised 0 "repaired by revision" -- cat "$tmp/pause.out"
# verified by the shadow parked at the failure (the heap as the call
# failed), which is gone once it reported
t parked-verified 0 "verification [0-9]+: to the shadow parked at the failure \\(pid [0-9]+" -- cat "$tmp/kernel.log"
t parked-report 0 '"from": "failure"' -- \
  J incidents show "$(sed -n 's/.*incident \([0-9]*\): a shadow parked at the failure.*/\1/p' "$tmp/kernel.log" | tail -1)" --json
shadows() { pgrep -P "$(pgrep -P "$kp" | head -1)"; }   # the live worker's children
t_until none-left 1 "" -- shadows

# --- kill -9 while verifying: interrupted, never half-applied
restore_bug
J repair enable dispense --expect-condition INSUFFICIENT-CREDIT >/dev/null
n=$(overpay)
"$JITI" supervise --store "$S" --until-idle --verify-timeout 60 \
  --scripted "$(script forever "$(verdict "(defun dispense (code) (loop) code)")")" >/dev/null 2>&1 &
svpid=$!
for _ in $(seq 100); do [[ $(status_of "$n") == verifying ]] && break; sleep 0.1; done
t verifying 0 "^verifying$" -- status_of "$n"
kill -9 "$kp"; wait "$kp" 2>/dev/null; wait "$svpid" 2>/dev/null; svpid=
start_kernel "$S"; ok kernel-restarts $?
t interrupted 0 "^interrupted$" -- status_of "$n"
t never-half-applied 0 "^$(printf '%q' "$bug")$" -- definition

# --- mode pause without a supervisor: the parked shadow goes when the incident is cancelled
restore_bug
J repair enable dispense --mode pause --expect-condition INSUFFICIENT-CREDIT >/dev/null
J eval '(setf (machine-credit *machine*) 0)' >/dev/null
J eval '(insert-coin 100)' >/dev/null; J eval '(insert-coin 100)' >/dev/null
"$JITI" eval --store "$S" '(dispense "A1")' >"$tmp/waiting.out" 2>&1 &
waiting=$!
t_until one-parked 0 "^[0-9]+$" -- shadows
J repair disable dispense >/dev/null
wait "$waiting"
t waiting-fails 0 "cannot give negative change.*it waited for a repair: incident [0-9]+ is cancelled" -- cat "$tmp/waiting.out"
t_until parked-killed 1 "" -- shadows
J eval '(setf (machine-credit *machine*) 0)' >/dev/null

# --- the demo as written: the repair, mode pause, an operator's heal of a
# wrong price (no error), a tentative repair promoted and another rejected
DEMO_DIR=$tmp/demo JITI=$JITI bash "$app/demo.sh" >"$tmp/demo.out" 2>&1
ok demo-runs $?
t demo-heal 0 'incident [0-9]+ opened for PRICE-LABEL \(kind explicit\).*
.*
incident [0-9]+ \(PRICE-LABEL\): awaiting the model \(an operator.s heal\)
.*
incident [0-9]+ \(PRICE-LABEL\): repaired by revision [0-9]+.*
[$] jiti eval [^
]*
\("cola: [$]1.50" "water: [$]1.00" "crisps: [$]0.75"\)' -- cat "$tmp/demo.out"
t demo-promoted 0 'incident [0-9]+ \(DISPENSE\): tentatively repaired by revision [0-9]+(.|
)*\("cola" \(25 25\)\)
[$] jiti repairs [^
]*
[0-9]+ +DISPENSE +revision [0-9]+ +calls 1, failures 0 since
[$] jiti promote [^
]*
incident [0-9]+: the repair of DISPENSE \(revision [0-9]+\) promoted' -- cat "$tmp/demo.out"
t demo-rejected 0 '"cola: 1,50 EUR"
[$] jiti reject [^
]*
incident [0-9]+: the repair of PRICE-LABEL rejected, undone by revision [0-9]+; the incident is captured again
[$] jiti eval [^
]*
"cola: [$]1.50"' -- cat "$tmp/demo.out"
"$JITI" stop --store "$tmp/demo/vend.jiti" >/dev/null 2>&1

finish
