#!/usr/bin/env bash
# The sales-tax calculator grown by a model, end to end (README.md beside
# this file; `make demo`, `bash scripts/bootstrap demo`).
#
# Three requests on one live world, each a `jiti session` with its goals
# and invariants.  Offline, the model is scripted (the *.jsonl files):
# it sends an action that breaks the schema, a stale one, a call that
# pauses and is answered with a restart, and a change that makes food tax
# negative, which an invariant refuses.  Then the kernel is killed with
# SIGKILL, the store recovered, and the recovered world asked for totals.
#
#   JITI=build/jiti bash examples/sales-tax/demo.sh
#   bash examples/sales-tax/demo.sh --model gpt-5-mini   # a real model (OPENAI_API_KEY);
#                                                        # also JITI_DEMO_MODEL=gpt-5-mini
#   DEMO_DIR=/tmp/calc bash examples/sales-tax/demo.sh   # keep the store there
set -u
case "${1:-}" in
  --model) JITI_DEMO_MODEL=${2:?--model needs a model name}; shift 2 ;;
  -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
S=(--store "$dir/calc.jiti")
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() { printf '$ jiti %s\n' "$*"; "$J" "$@"; }

# The model: scripted offline, or a real one.
model() {
  if [ -n "${JITI_DEMO_MODEL:-}" ]; then echo "--model $JITI_DEMO_MODEL"
  else echo "--scripted $here/$1.jsonl"; fi
}
session() {  # session NAME: the task NAME.lisp with its model
  # shellcheck disable=SC2046
  run session "${S[@]}" --task "$here/$1.lisp" $(model "$1") --no-stream
  echo "(exit status $?)"
}

say "Start a kernel: it serves one store, a live Lisp world with no definitions yet"
run kernel "${S[@]}" --detach

say "Request 1: a sales-tax calculator with a 5% rate"
sed -n 's/^ *(:request "\(.*\)"$/request: \1/p' "$here/1-five-percent.lisp"
session 1-five-percent
run eval "${S[@]}" '(total-price 100)'

say "Request 2: caller-supplied rates (a stale proposal, then a paused call answered with a restart)"
session 2-rates
run eval "${S[@]}" '(list (total-price 100 5/100) (total-price 100 8/100))'

say "Request 3: food 2%, other items 8% (a proposal that makes food tax negative is refused)"
session 3-food
run eval "${S[@]}" '(list (total-price 100 :food) (total-price 100 :clothing))'

say "The kernel is killed (SIGKILL), then the store is recovered"
pid=$(cat "$dir/calc.jiti/kernel.pid")
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
echo "killed the kernel (pid $pid)"
run recover-session "${S[@]}"
run kernel "${S[@]}" --detach
run eval "${S[@]}" '(format nil "food: ~a, clothing: ~a" (total-price 100 :food) (total-price 100 :clothing))'

say "History: every accepted change is a revision"
run log --graph "${S[@]}"

say "The sessions, recorded in the store's events"
run sessions "${S[@]}"
run sessions show 2 "${S[@]}"
run stop "${S[@]}"
