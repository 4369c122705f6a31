#!/usr/bin/env bash
# `jiti repair`: the policy of automatic repair on a store no kernel serves
# and through a running kernel — rules put, replaced, listed, removed,
# selectors folded as the reader folds names, kept across a kernel
# restart; every bad input refused with a clear message and nothing kept.
# `jiti incidents`: failing calls of selected functions recorded (the
# innermost selected frame's function), joined while open, never for an
# expected condition or an unselected function, a new one per definition.
#   bash tests/repair.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-repair.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s

t help 0 "usage: jiti repair enable SELECTOR" -- "$JITI" repair --help
t listed 0 "repair +choose the functions automatic repair looks after" -- "$JITI" --help
t no-args 2 "usage: jiti repair" -- "$JITI" repair
t bad-action 2 "'purge' is not enable, disable or list" -- "$JITI" repair purge x --store "$S"
t list-takes-none 2 "usage: jiti repair" -- "$JITI" repair list x --store "$S"
t mode-with-disable 2 "--mode and --expect-\* go with enable" -- "$JITI" repair disable f --mode pause --store "$S"
t mode-needs-value 2 "--mode needs a value" -- "$JITI" repair enable f --mode
t no-store 1 "" -- "$JITI" repair list --store "$tmp/nowhere"
"$JITI" init --store "$S" >/dev/null

# --- offline: the store itself
t empty 0 "^no rules: no function becomes an incident" -- "$JITI" repair list --store "$S"
t enable-folds 0 "^DISPENSE +fail +expects condition INSUFFICIENT-CREDIT, report no credit$" -- \
  "$JITI" repair enable dispense --expect-condition INSUFFICIENT-CREDIT --expect-report 'no credit' --store "$S"
t enable-package 0 "APP: +pause" -- "$JITI" repair enable app: --mode pause --store "$S"
t enable-prefix 0 "APP::PARSE-\* +fail" -- "$JITI" repair enable 'App:parse-*' --store "$S"
t user-package-dropped 0 "
RUN +fail" -- "$JITI" repair enable cl-user::run --store "$S"
t bars-kept 0 "\|mixed Case\| +fail" -- "$JITI" repair enable '|mixed Case|' --store "$S"
t bad-selector 1 "invalid-arguments: the selector bad sel is no name" -- "$JITI" repair enable 'bad sel' --store "$S"
t two-packages 1 "more than one package marker" -- "$JITI" repair enable 'a::b::c' --store "$S"
t bad-mode 1 "invalid-request: \"mode\" must be \"fail\" or \"pause\"" -- \
  "$JITI" repair enable f --mode retry --store "$S"
t disable-unknown 1 "not-found: no rule has the selector NOPE" -- "$JITI" repair disable nope --store "$S"
t nothing-bad-kept 0 "^APP: +pause
APP::PARSE-\* +fail
DISPENSE +fail .*
RUN +fail
\|mixed Case\| +fail$" -- "$JITI" repair list --store "$S"
t replace 0 "
DISPENSE +pause
" -- "$JITI" repair enable DISPENSE --mode pause --store "$S"
t json 0 '"selector": "DISPENSE",
      "mode": "pause",
      "expected": \[\]' -- "$JITI" repair list --json --store "$S"

# --- through the kernel, and across its restart
start_kernel "$S"; ok kernel-starts $?
t live-list 0 "DISPENSE +pause" -- "$JITI" repair list --store "$S"
t live-disable 0 "^APP: +pause
APP::PARSE-\* +fail
RUN +fail
\|mixed Case\| +fail$" -- "$JITI" repair disable dispense --store "$S"
t live-enable 0 "VEND +fail" -- "$JITI" repair enable vend --store "$S"
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S"; ok kernel-restarts $?
t kept-across-restart 0 "RUN +fail
VEND +fail
\|mixed Case\| +fail$" -- "$JITI" repair list --store "$S"
# --- failing calls of selected functions become incidents
"$JITI" eval --store "$S" '(progn (defun price (n) (/ 100 n))
  (defun vend (n) (if (< n 0) (error "insufficient credit: ~a" n) (price n))))' >/dev/null
"$JITI" repair disable vend --store "$S" >/dev/null   # only PRICE is selected here
"$JITI" repair enable price --expect-report 'insufficient credit' --store "$S" >/dev/null
t no-incidents-yet 0 "^no incidents" -- "$JITI" incidents --store "$S"
t incident-opened 1 "error: DIVISION-BY-ZERO.*
opened incident 1 of PRICE \(jiti incidents show 1\)" -- "$JITI" eval --store "$S" '(vend 0)'
t incident-in-reply 1 '"incident": \{
    "id": 1,
    "joined": true,
    "function": "PRICE"' -- "$JITI" eval --json --store "$S" '(vend 0)'
t incident-listed 0 "^1 +[-0-9T:Z]+ +captured +PRICE +DIVISION-BY-ZERO +x2$" -- "$JITI" incidents --store "$S"
"$JITI" eval --store "$S" '(vend -1)' >/dev/null 2>&1
"$JITI" eval --store "$S" '(/ 1 0)' >/dev/null 2>&1
"$JITI" eval --store "$S" '(car 5)' >/dev/null 2>&1
t expected-and-unselected-none 0 "^1 +[-0-9T:Z]+ +captured +PRICE +DIVISION-BY-ZERO +x2$" -- "$JITI" incidents --store "$S"
t incident-shown 0 "incident 1: captured
function: +PRICE \(definition [0-9a-f]{16}\.\.\.\)
condition: +DIVISION-BY-ZERO
failures: +2, first .*
the call: +\(vend 0\)
.*latest arguments of PRICE: \[\"0\"\]
frames \(innermost first\):
  0: \(/ 100 0\)
  1: \(PRICE 0\)
      N = 0
  2: \(VEND 0\)" -- "$JITI" incidents show 1 --store "$S"
# another definition of the function: another incident
"$JITI" eval --store "$S" '(defun price (n) (floor 100 n))' >/dev/null
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1
t new-definition-new-incident 0 "^2 +.* +captured +PRICE +DIVISION-BY-ZERO +x1
1 +.* +PRICE +DIVISION-BY-ZERO +x2$" -- "$JITI" incidents --store "$S"
t incident-event 0 "incident +incident=2 status=captured function=PRICE" -- "$JITI" events --store "$S"
t incidents-json 0 '^\{"id":2,"status":"captured","kind":"failure","function":"PRICE","condition":"DIVISION-BY-ZERO","definition":"[0-9a-f]{64}","count":1' -- \
  "$JITI" incidents --json -n 1 --store "$S"
t show-json 0 '"request": "\(vend 0\)"' -- "$JITI" incidents show 2 --json --store "$S"
t show-missing 1 "no incident 9" -- "$JITI" incidents show 9 --store "$S"
t bad-status 2 "--status needs a status" -- "$JITI" incidents --status bogus --store "$S"
t status-filter 0 "^no incidents in that status" -- "$JITI" incidents --status repaired --store "$S"
# disabling repair for the function cancels its open incidents
t disable-cancels 0 '"cancelled": \[
    2,
    1
  \]' -- "$JITI" repair disable price --json --store "$S"
t cancelled-listed 0 "^2 +.* +cancelled +PRICE +DIVISION-BY-ZERO +x1
1 +.* +cancelled +PRICE" -- "$JITI" incidents --store "$S"
"$JITI" stop --store "$S" >/dev/null
t incidents-offline 0 "^2 +.*
1 +" -- "$JITI" incidents --store "$S"
t kept-offline 0 "RUN +fail
\|mixed Case\| +fail$" -- "$JITI" repair list --store "$S"
finish
