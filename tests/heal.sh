#!/usr/bin/env bash
# jiti heal and tentative repairs (docs/repair.md, "Explicit heal",
# "Tentative repairs and promotion"), with the scripted model: a wrong
# value nobody signalled healed through the whole loop (a candidate that
# does not return the expected value rejected, the one that does applied);
# heal's refusals; jiti supervise --promote manual, jiti repairs, promote,
# reject; a kernel restarted with a tentative repair outstanding comes back
# at the last promoted state with the data rows written since; promote and
# reject racing a new incident of the same function.
#   bash tests/heal.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-heal.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
n=0
script() {  # script LINE...: a scripted model's file
  n=$((n+1))
  local f=$tmp/model$n.jsonl
  printf '%s\n' "$@" >"$f"
  echo "$f"
}
repair() {  # repair SOURCE [INTENDED]: one repair verdict
  printf '{"type":"repair","source":"%s","reason":"r","intended_changes":%s}' "$1" "${2:-null}"
}
status_of() {  # status_of N: incident N's status
  "$JITI" incidents show "$1" --json --store "$S" | sed -n 's/^ *"status": "\(.*\)",*$/\1/p' | head -1
}
ev() { "$JITI" eval --store "$S" "$@"; }
supervise() { "$JITI" supervise --store "$S" --until-idle "$@"; }
price() {  # price COLA WATER CRISPS: PRICE-OF's source with those prices
  echo "(defun price-of (item) (cond ((equal item \\\"cola\\\") $1) ((equal item \\\"water\\\") $2) (t $3)))"
}

# --- usage and refusals
t help 0 "usage: jiti heal --function NAME --problem TEXT" -- "$JITI" heal --help
t listed 0 "heal +ask for a repair of a problem" -- "$JITI" --help
t needs-function 2 "--function NAME and --problem TEXT are required" -- "$JITI" heal --problem x
t expect-needs-repro 2 "--expect needs --repro" -- "$JITI" heal --function f --problem x --expect 1
t scope-word 2 "--scope is function or world, not 'all'" -- "$JITI" heal --function f --problem x --scope all
t repairs-help 0 "usage: jiti repairs" -- "$JITI" repairs --help
t promote-which 2 "which incident\? jiti promote INCIDENT" -- "$JITI" promote
t reject-bad 2 "unexpected argument 'x'" -- "$JITI" reject x
t promote-option 2 "--promote is auto or manual, not 'later'" -- "$JITI" supervise --promote later
"$JITI" init --store "$S" >/dev/null
t no-kernel 1 "no kernel is running" -- "$JITI" heal --function f --problem x --store "$S"
start_kernel "$S"; ok kernel-starts $?
ev "(progn $(price 125 100 75 | sed 's/\\"/"/g')
  (defun sell (item) (world-put item (price-of item)) (price-of item)))" >/dev/null
"$JITI" repair enable price-of --store "$S" >/dev/null
t recorded 0 '^125$' -- ev '(price-of "cola")'
t undefined 1 "not-found: the world defines no function NOPE: heal repairs a function the world defines" -- \
  "$JITI" heal --function nope --problem "wrong" --store "$S"
t prefix 1 "invalid-request: \"function\" of heal must name one function" -- \
  "$JITI" heal --function 'price*' --problem "wrong" --store "$S"

# --- explicit heal: the repro fails while its value differs from the expected one
t opened 0 "^incident 1 opened for PRICE-OF \(kind explicit\)" -- \
  "$JITI" heal --function price-of --problem "cola costs 150 cents, not 125" --repro '(price-of "cola")' \
  --expect 150 --store "$S"
t listed-kind 0 '"kind":"explicit"' -- "$JITI" incidents --json --store "$S"
t captured 0 '^captured$' -- status_of 1
rev=$(jfield revision)
t healed 0 "rejected: the operator's repro still fails with the candidate: SIMPLE-ERROR: the repro returned 140 where 150 was expected.*
.*repaired by revision" -- supervise --scripted "$(script "$(repair "$(price 140 100 75)")" \
  "$(repair "$(price 150 100 75)" '"cola is 150"')")"
t repaired 0 '^repaired$' -- status_of 1
t live 0 '^150$' -- ev '(price-of "cola")'
t one-revision 0 "^$((rev + 1))$" -- jfield revision
t logged 0 "kind:       explicit \(jiti heal\)
.*
problem:    cola costs 150 cents, not 125
repro:      \(price-of \"cola\"\)
expected:   150
(.|
)*the repro returned 140 where 150 was expected" -- "$JITI" incidents show 1 --store "$S"
# a candidate that meets the repro but changes a recorded result not declared intended
"$JITI" heal --function price-of --problem "water costs 90" --repro '(price-of "water")' --expect 90 \
  --store "$S" >/dev/null
ev '(price-of "water")' >/dev/null   # recorded: 100
t_until water-recorded 0 '\(price-of "water"\)' -- "$JITI" traffic price-of --store "$S"
t undeclared 0 "rejected: the candidate changes the result of the recorded call \(price-of \"water\"\)" -- \
  supervise --attempts 1 --scripted "$(script "$(repair "$(price 150 90 75)")")"
t heal-rejected 0 '^rejected$' -- status_of 2

# --- tentative: live, listed, undone by a restart (the rows written since stay)
t heal-3 0 "^incident 3 opened" -- "$JITI" heal --function price-of --problem "water costs 90" \
  --repro '(price-of "water")' --expect 90 --store "$S"
t tentative 0 "tentatively repaired by revision" -- supervise --promote manual \
  --scripted "$(script "$(repair "$(price 150 90 75)" '"water is 90"')")"
t tentative-status 0 '^tentative$' -- status_of 3
t tentative-live 0 '^90$' -- ev '(price-of "water")'
ev '(price-of "water")' >/dev/null
t row-written 0 '^90$' -- ev '(sell "water")'
t repairs 0 "^3 +PRICE-OF +revision [0-9]+ +calls 2, failures 0 since$" -- "$JITI" repairs --store "$S"
t repairs-json 0 '"repairs":\[\{"incident":3,"function":"PRICE-OF","kind":"explicit"' -- \
  "$JITI" repairs --json --store "$S"
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S"; ok restarts $?
t reverted 0 '^100$' -- ev '(price-of "water")'
t promoted-kept 0 '^150$' -- ev '(price-of "cola")'
t row-stays 0 '^90
T$' -- ev '(world-get "water")'
t reopened 0 '^captured$' -- status_of 3
t restart-logged 0 'the kernel restarted with the repair tentative' -- "$JITI" incidents show 3 --store "$S"
t none-tentative 0 "^no tentative repairs" -- "$JITI" repairs --store "$S"
# a crash (kill -9) with one outstanding: the same
supervise --promote manual --scripted "$(script "$(repair "$(price 150 90 75)" '"water is 90"')")" >/dev/null
t tentative-again 0 '^tentative$' -- status_of 3
kill -9 "$kp"; wait "$kp" 2>/dev/null
start_kernel "$S"; ok restarts-after-kill $?
t reverted-after-kill 0 '^100$' -- ev '(price-of "water")'
t reopened-after-kill 0 '^captured$' -- status_of 3

# --- promote: permanent across a restart
supervise --promote manual --scripted "$(script "$(repair "$(price 150 90 75)" '"water is 90"')")" >/dev/null
t promote 0 "^incident 3: the repair of PRICE-OF \(revision [0-9]+\) promoted$" -- "$JITI" promote 3 --store "$S"
t promote-again 1 "conflict: incident 3 is repaired: only a tentative repair can be promoted" -- \
  "$JITI" promote 3 --store "$S"
t promote-none 1 "not-found: no incident 99" -- "$JITI" promote 99 --store "$S"
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S"; ok restarts-promoted $?
t promoted-stays 0 '^90$' -- ev '(price-of "water")'

# --- reject: a new revision restores the definition, the incident is captured again, rows stay
"$JITI" heal --function price-of --problem "crisps cost 80" --repro '(price-of "crisps")' --expect 80 \
  --store "$S" >/dev/null   # incident 4
supervise --promote manual --scripted "$(script "$(repair "$(price 150 90 80)" '"crisps are 80"')")" >/dev/null
t sold-tentative 0 '^80$' -- ev '(sell "crisps")'
rev=$(jfield revision)
t reject 0 "^incident 4: the repair of PRICE-OF rejected, undone by revision $((rev + 1)); the incident is captured" -- \
  "$JITI" reject 4 --store "$S"
t rejected-reverted 0 '^75$' -- ev '(price-of "crisps")'
t rejected-row-stays 0 '^80
T$' -- ev '(world-get "crisps")'
t rejected-captured 0 '^captured$' -- status_of 4
t reject-kind 0 "kind: +repair" -- "$JITI" show $((rev + 1)) --store "$S"
t reject-again 1 "conflict: incident 4 is captured: only a tentative repair can be rejected" -- \
  "$JITI" reject 4 --store "$S"

# --- races with a new incident of the same function
# reject while a new incident of the tentative code is open: the new one is stale
supervise --promote manual --scripted "$(script "$(repair "$(price 150 90 80)" '"crisps are 80"')")" >/dev/null
t tentative-4 0 '^tentative$' -- status_of 4
"$JITI" heal --function price-of --problem "cola costs 160" --repro '(price-of "cola")' --expect 160 \
  --store "$S" >/dev/null   # incident 5, on the tentative code
t reject-first 0 "rejected, undone by revision" -- "$JITI" reject 4 --store "$S"
# incident 4 is taken again (another candidate), then 5: its definition moved
t new-one-stale 0 "incident 5 \(PRICE-OF\): the failing definition changed since the incident was captured" -- \
  supervise --promote manual --scripted "$(script "$(repair "$(price 150 90 '(+ 40 40)')" '"crisps are 80"')" \
  "$(repair "$(price 160 90 80)" '"cola is 160"')")"
t stale-5 0 '^stale$' -- status_of 5
t four-tentative 0 '^tentative$' -- status_of 4
# a newer repair of the function applied on top: the older one cannot be rejected alone
"$JITI" heal --function price-of --problem "cola costs 160" --repro '(price-of "cola")' --expect 160 \
  --store "$S" >/dev/null   # incident 6
supervise --promote manual --scripted "$(script "$(repair "$(price 160 90 80)" '"cola is 160"')")" >/dev/null
t both-tentative 0 "^6 .*
4 " -- "$JITI" repairs --store "$S"
t reject-older 1 "conflict: the function PRICE-OF changed since revision [0-9]+: the repair is no longer what runs; nothing was undone and incident 4 is stale" -- \
  "$JITI" reject 4 --store "$S"
t older-stale 0 '^stale$' -- status_of 4
t promote-newer 0 "promoted" -- "$JITI" promote 6 --store "$S"
t newer-live 0 '^160$' -- ev '(price-of "cola")'
# promote while a new incident of the same function is open: it goes on
"$JITI" heal --function price-of --problem "water costs 95" --repro '(price-of "water")' --expect 95 \
  --store "$S" >/dev/null   # incident 7
supervise --promote manual --scripted "$(script "$(repair "$(price 160 95 80)" '"water is 95"')")" >/dev/null
"$JITI" heal --function price-of --problem "crisps cost 85" --repro '(price-of "crisps")' --expect 85 \
  --store "$S" >/dev/null   # incident 8, captured
t promote-7 0 "promoted" -- "$JITI" promote 7 --store "$S"
t eight-goes-on 0 "repaired by revision" -- supervise --scripted "$(script "$(repair "$(price 160 95 85)" '"crisps are 85"')")"
t eight-repaired 0 '^repaired$' -- status_of 8
t all-live 0 '^\("cola" 160 95 85\)$' -- ev '(list "cola" (price-of "cola") (price-of "water") (price-of "crisps"))'

# --- a restart with a tentative repair the operator changed since: that change stays, the incident is stale
"$JITI" heal --function price-of --problem "cola costs 170" --repro '(price-of "cola")' --expect 170 \
  --store "$S" >/dev/null   # incident 9
supervise --promote manual --scripted "$(script "$(repair "$(price 170 95 85)" '"cola is 170"')")" >/dev/null
t tentative-9 0 '^tentative$' -- status_of 9
"$JITI" apply --store "$S" -e "$(price 180 95 85 | sed 's/\\"/"/g')" >/dev/null
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S"; ok restarts-edited $?
t edit-stays 0 '^180$' -- ev '(price-of "cola")'
t edited-stale 0 '^stale$' -- status_of 9

finish
