#!/usr/bin/env bash
# A vending machine that repairs itself (README.md beside this file).
#
# The machine (machine.lisp, written with CLOS) has a bug: paying more than
# the price gives an error instead of the product.  Repair is enabled for
# DISPENSE, with the insufficient-credit error declared expected.  A
# customer overpays: the call fails and becomes an incident; `jiti
# supervise`, with the scripted model (repair.jsonl) or a real one, proposes
# a fix, which the kernel verifies on a copy of the live heap (the failed
# call again, the invariants, the recorded sales replayed) and applies.
# The customer tries again and gets the cola and the change.  Then the
# same with the rule in mode pause: the failing call waits while the
# supervisor works, and the first call itself gets the cola.  Then an
# operator's explicit heal: the display shows water at "$1.0" (a wrong
# price, no error); `jiti heal` with a repro and the expected value goes
# the same way.  Last, repairs that stay tentative (`jiti supervise
# --promote manual`): one promoted, another rejected.
#
#   JITI=build/jiti bash examples/vending-machine/demo.sh
#   bash examples/vending-machine/demo.sh --model gpt-5-mini   # a real model (OPENAI_API_KEY)
#   DEMO_DIR=/tmp/vend bash examples/vending-machine/demo.sh   # keep the store there
set -u
case "${1:-}" in
  --model) JITI_DEMO_MODEL=${2:?--model needs a model name}; shift 2 ;;
  -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *) echo "demo.sh: unknown argument '$1' (--model M)" >&2; exit 2 ;;
esac
J=${JITI:-build/jiti}
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${DEMO_DIR:-}" ]; then
  dir=$DEMO_DIR
  mkdir -p "$dir"
else
  dir=$(mktemp -d)
  trap '"$J" stop "${S[@]}" >/dev/null 2>&1; rm -rf "$dir"' EXIT
fi
S=(--store "$dir/vend.jiti")
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() { printf '$ jiti %s\n' "$*"; "$J" "$@"; }
model() {  # model [SCRIPT]: a real model, or the scripted one (repair.jsonl by default)
  if [ -n "${JITI_DEMO_MODEL:-}" ]; then echo "--model $JITI_DEMO_MODEL"
  else echo "--scripted $here/${1:-repair.jsonl}"; fi
}

say "A kernel serving the vending machine, with its tests as invariants"
run kernel "${S[@]}" --detach
run apply "${S[@]}" "$here/machine.lisp"
run invariant add credit-never-negative '(>= (machine-credit *machine*) 0)' "${S[@]}"
run invariant add stock-never-negative '(loop for p being the hash-values of (machine-slots *machine*) always (>= (product-stock p) 0))' "${S[@]}"
run invariant add change-is-exact "(and (equal (change-coins 0) '()) (equal (change-coins 40) '(25 10 5)) (equal (change-coins 135) '(100 25 10)))" "${S[@]}"

say "Repair looks after DISPENSE; running out of credit is the machine's intent"
run repair enable dispense --expect-condition INSUFFICIENT-CREDIT "${S[@]}"

say "Sales at the exact price work (and are recorded)"
run eval "${S[@]}" '(insert-coin 100)'
run eval "${S[@]}" '(dispense "A2")'
run eval "${S[@]}" '(insert-coin 25)'
run eval "${S[@]}" '(dispense "A2")'
echo "(expected: insufficient credit is no incident)"

say "A customer pays 200 for a 150 cola: the call fails and becomes an incident"
run eval "${S[@]}" '(insert-coin 100)'
run eval "${S[@]}" '(insert-coin 100)'
run eval "${S[@]}" '(dispense "A1")'
run incidents "${S[@]}"

say "The supervisor takes the incident to the model; the kernel verifies the repair on a copy of the live heap"
# shellcheck disable=SC2046
run supervise "${S[@]}" $(model) --until-idle
run incidents show 1 "${S[@]}" | sed -n '1,5p'

say "The customer tries again: the credit is still there, the cola comes with the change"
run eval "${S[@]}" '(dispense "A1")'
run log "${S[@]}" -n 3

say "Mode pause: the bug is back; a failing call now waits for its repair while the supervisor runs"
run apply "${S[@]}" -e "$(sed -n '/^(defun dispense/,/^$/p' "$here/machine.lisp")"
run repair enable dispense --mode pause --expect-condition INSUFFICIENT-CREDIT "${S[@]}"
printf '$ jiti supervise %s &\n' "${S[*]} $(model)"
# shellcheck disable=SC2046
"$J" supervise "${S[@]}" $(model) --json >"$dir/supervise.log" 2>&1 &
sv=$!
run eval "${S[@]}" '(insert-coin 100)'
run eval "${S[@]}" '(insert-coin 100)'
echo "(the next call waits at its error while the model's repair is verified and applied, then runs again)"
run eval "${S[@]}" '(dispense "A1")'
kill -INT "$sv" 2>/dev/null; wait "$sv" 2>/dev/null
cat "$dir/supervise.log"
run log "${S[@]}" -n 3

say "An operator's heal: the display shows water at \$1.0 — a wrong price, and nothing signals it"
run eval "${S[@]}" '(price-label "A2")'
run heal "${S[@]}" --function price-label --problem 'The display shows the water at $1.0; prices read dollars and two digits of cents, so it should say $1.00.' --repro '(price-label "A2")' --expect '"water: $1.00"'
# shellcheck disable=SC2046
run supervise "${S[@]}" $(model heal.jsonl) --until-idle
run eval "${S[@]}" '(list (price-label "A1") (price-label "A2") (price-label "B1"))'

say "Tentative repairs: the bug in DISPENSE is back; the supervisor's repair stays tentative until promoted"
run apply "${S[@]}" -e "$(sed -n '/^(defun dispense/,/^$/p' "$here/machine.lisp")"
run repair enable dispense --expect-condition INSUFFICIENT-CREDIT "${S[@]}"
run eval "${S[@]}" '(insert-coin 100)'
run eval "${S[@]}" '(insert-coin 100)'
run eval "${S[@]}" '(dispense "A1")'
# shellcheck disable=SC2046
run supervise "${S[@]}" $(model) --promote manual --until-idle
run eval "${S[@]}" '(dispense "A1")'
run repairs "${S[@]}"
n=$("$J" repairs "${S[@]}" --json | sed -n 's/.*"incident":\([0-9]*\).*/\1/p')
run promote "$n" "${S[@]}"

say "Another tentative repair, rejected: a label in euros the operator did not want after all"
run heal "${S[@]}" --function price-label --problem 'Show the prices in euros, written the European way (1,50 EUR).' --repro '(price-label "A1")' --expect '"cola: 1,50 EUR"'
# shellcheck disable=SC2046
run supervise "${S[@]}" $(model label.jsonl) --promote manual --until-idle
run eval "${S[@]}" '(price-label "A1")'
n=$("$J" repairs "${S[@]}" --json | sed -n 's/.*"incident":\([0-9]*\).*/\1/p')
run reject "$n" "${S[@]}"
run eval "${S[@]}" '(price-label "A1")'
echo "(a kernel restarted with a repair still tentative comes back without it, the data written since kept)"
run log "${S[@]}" -n 4
