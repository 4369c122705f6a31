#!/usr/bin/env bash
# `jiti supervise`: the supervisor of automatic repair against a real
# kernel with the scripted model — its options and refusals; incidents
# taken one at a time, each verdict logged on its incident (expected and
# insufficient_evidence decline, answers that are no verdict thrice fail
# it, a model that runs out fails it); a call of a function whose rule
# pauses waits for its repair while other calls are served, and gets its
# failure when the incident is declined; nothing it does changes the world.
#   bash tests/supervise.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-supervise.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
script() {  # script NAME LINE...: a scripted model's file
  local f=$tmp/$1.jsonl; shift
  printf '%s\n' "$@" >"$f"
  echo "$f"
}
incident_status() {  # incident_status N: its status, from the store
  "$JITI" incidents show "$1" --json --store "$S" | sed -n 's/^ *"status": "\(.*\)",*$/\1/p' | head -1
}

# --- options
t help 0 "usage: jiti supervise" -- "$JITI" supervise --help
t listed 0 "supervise +let a model repair" -- "$JITI" --help
t unknown-option 2 "unknown option '--frob'" -- "$JITI" supervise --frob
t scope-word 2 "--scope is function or world, not 'all'" -- "$JITI" supervise --scope all
t attempts-range 2 "--attempts wants a whole number from 1 to 100" -- "$JITI" supervise --attempts 0
t needs-value 2 "--budget needs a value" -- "$JITI" supervise --budget
t scripted-and-model 2 "--scripted cannot be combined with --model" -- \
  "$JITI" supervise --scripted x --model gpt-5-mini
t no-key 1 "no model: set OPENAI_API_KEY" -- env -u OPENAI_API_KEY -u OPENAI_API_KEY_FILE "$JITI" supervise
t no-script 1 "cannot read the script" -- "$JITI" supervise --scripted "$tmp/nowhere.jsonl" --store "$S"
"$JITI" init --store "$S" >/dev/null
t no-kernel 1 "no kernel is running" -- "$JITI" supervise --scripted "$(script empty '')" --store "$S" --until-idle

# --- nothing open: idle at once
start_kernel "$S"; ok kernel-starts $?
"$JITI" eval --store "$S" '(progn (defvar *base* 100) (defun price (n) (/ *base* n))
  (defun vend (n) (if (< n 0) (error "insufficient credit: ~a" n) (price n))))' >/dev/null
t idle 0 "^supervising .* with scripted" -- "$JITI" supervise --scripted "$(script empty '')" --store "$S" --until-idle
"$JITI" repair enable price --store "$S" >/dev/null
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1
rev=$(jfield revision)

# --- verdicts that change nothing
t declined-expected 0 "incident 1 \(PRICE\): awaiting the model \(DIVISION-BY-ZERO, 1 failure\)
incident 1 \(PRICE\): declined-expected: dividing by zero is the caller's mistake" -- \
  "$JITI" supervise --store "$S" --until-idle \
  --scripted "$(script expected '{"type":"expected","reason":"dividing by zero is the caller'"'"'s mistake"}')"
t declined-status 0 "^declined-expected$" -- incident_status 1
t exchange-logged 0 'exchange: \{"attempt":1,.*"verdict":\{"type":"expected"' -- "$JITI" incidents show 1 --store "$S"
t taken-once 0 "^supervising [^
]*$" -- "$JITI" supervise --scripted "$(script empty2 '')" --store "$S" --until-idle
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1   # incident 2: the first is closed
t insufficient 0 "declined-insufficient-evidence: the frames do not say" -- \
  "$JITI" supervise --store "$S" --until-idle \
  --scripted "$(script insufficient '{"type":"insufficient_evidence","reason":"the frames do not say"}')"
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1   # incident 3
t invalid-thrice 0 "invalid answer \(invalid-action\).*
.*invalid answer.*
.*invalid answer.*
incident 3 \(PRICE\): failed: the model answered with no valid verdict three times in a row" -- \
  "$JITI" supervise --store "$S" --until-idle --scripted "$(script invalid '{"type":"evaluate","source":"1"}' \
  '{"type":"repair"}' '{"type":"finish","summary":"x"}')"
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1   # incident 4
t exhausted 0 "incident 4 \(PRICE\): failed: the model: exhausted" -- \
  "$JITI" supervise --store "$S" --until-idle --scripted "$(script empty3 '')"
t json-line 0 '^\{"incident":5,"function":"PRICE","outcome":"declined-expected","tokens":0,"seconds":' -- \
  bash -c "'$JITI' eval --store '$S' '(vend 0)' >/dev/null 2>&1; '$JITI' supervise --store '$S' --until-idle --json \
    --scripted '$(script expected2 '{"type":"expected","reason":"r"}')'"
t world-unchanged 0 "^$rev$" -- jfield revision

# --- mode pause: the failing call waits for its repair; other calls go on
"$JITI" repair enable price --mode pause --store "$S" >/dev/null
"$JITI" eval --store "$S" '(vend 0)' >"$tmp/waiting.out" 2>&1 &
waiter=$!
for _ in $(seq 100); do
  [[ $(incident_status 6) == captured ]] && break
  sleep 0.1
done
t waits 0 "^captured$" -- incident_status 6
ok still-waiting "$(kill -0 $waiter 2>/dev/null; echo $?)"
t others-served 0 "^25$" -- "$JITI" eval --store "$S" '(vend 4)'
t declined-while-waiting 0 "declined-expected" -- "$JITI" supervise --store "$S" --until-idle \
  --scripted "$(script expected3 '{"type":"expected","reason":"on purpose"}')"
wait $waiter
ok waiter-failed $([[ $? -eq 1 ]]; echo $?)
t waiter-told 0 "DIVISION-BY-ZERO.*it waited for a repair: incident 6 is declined-expected" -- cat "$tmp/waiting.out"

# --- a real model client (Responses API over HTTP on loopback): the
# rejection's reason reaches the model, tokens and the response id are
# recorded, the repair's revision names the response; stopping the
# supervisor while the model thinks cancels the incident
"$JITI" repair enable price --store "$S" >/dev/null
key=sk-test-supervise0123456789abcdef
python3 "$(dirname "${BASH_SOURCE[0]}")/model_server.py" --port-file "$tmp/port" --key "$key" \
  --log "$tmp/model.log" >/dev/null 2>&1 &
mpid=$!
for _ in $(seq 100); do [[ -s $tmp/port ]] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat "$tmp/port")/v1
queue() {  # queue JSON: the model server's next replies
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=sys.argv[2].encode()))' \
    "http://127.0.0.1:$(cat "$tmp/port")/_queue" "$1" >/dev/null
}
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1   # incident 7
queue '[{"kind":"action","action":{"type":"repair","source":"(defun price (n) (/ 100 n) (car n))","reason":"broken on purpose","intended_changes":null}},
        {"kind":"action","action":{"type":"repair","source":"(defun price (n) (if (zerop n) 0 (/ 100 n)))","reason":"no price for 0","intended_changes":null}}]'
t http-repaired 0 "incident 7 \(PRICE\): rejected: the failed call still fails.*
incident 7 \(PRICE\): verifying a repair: no price for 0
incident 7 \(PRICE\): repaired by revision" -- \
  env OPENAI_API_KEY=$key OPENAI_BASE_URL=$url "$JITI" supervise --store "$S" --until-idle --model test-model --no-stream
t model-told-why 0 "The repair was rejected: the failed call still fails with the candidate" -- \
  bash -c "tail -1 '$tmp/model.log'"
t model-shown-reads 0 "What the call read of the world's state.*variable \\*BASE\\* = 100" -- \
  bash -c "head -1 '$tmp/model.log'"
t tokens-logged 0 '"total_tokens":[1-9]' -- "$JITI" incidents show 7 --store "$S"
t response-recorded 0 '"response_id":"resp_' -- "$JITI" incidents show 7 --store "$S"
t no-key-kept 1 "" -- grep -r "$key" "$S"
"$JITI" eval --store "$S" '(defun price (n) (/ 100 n))' >/dev/null
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1   # incident 8
queue '[{"kind":"action","delay":30,"action":{"type":"expected","reason":"late"}}]'
env OPENAI_API_KEY=$key OPENAI_BASE_URL=$url "$JITI" supervise --store "$S" --model test-model --no-stream \
  >"$tmp/stopped.out" 2>&1 &
sv=$!
for _ in $(seq 100); do [[ $(incident_status 8) == awaiting-model ]] && break; sleep 0.1; done
kill -INT $sv; wait $sv
ok stopped-130 $([[ $? -eq 130 ]]; echo $?)
t stopped-cancels 0 "^cancelled$" -- incident_status 8
t stopped-says 0 "incident 8 \(PRICE\): cancelled: the supervisor was stopped" -- cat "$tmp/stopped.out"
# the token budget per incident: spent after one answer, the incident fails
"$JITI" eval --store "$S" '(vend 0)' >/dev/null 2>&1   # incident 9
queue '[{"kind":"action","action":{"type":"repair","source":"(defun price (n) (car n))","reason":"wrong","intended_changes":null}}]'
t budget-spent 0 "incident 9 \(PRICE\): failed: the token budget per incident is spent \([0-9]+ of --budget 1\)" -- \
  env OPENAI_API_KEY=$key OPENAI_BASE_URL=$url "$JITI" supervise --store "$S" --until-idle --model test-model \
  --no-stream --budget 1
kill $mpid 2>/dev/null

finish
