#!/usr/bin/env bash
# Events and their retention, end to end on temporary stores: calls,
# previews and queries that change nothing leave the events as they were
# while their counters move (jiti status, jiti events counters, across a
# restart); a kernel with --events-keep prunes to its bound and keeps a
# session's transcript; jiti events prune by hand (usage, refused beside a
# kernel); an attempt a kill left without an outcome survives pruning and
# is marked interrupted by the next start; idempotency keys outlive the
# events they came with.
#   bash tests/events.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-events.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
[[ ${KEEP_TMP:-} ]] && trap kill_kernels EXIT
S=$tmp/s

nevents() { "$JITI" events --json --store "$S" | wc -l; }
counter() {  # counter KIND OUTCOME: its count in jiti events counters (0: none)
  "$JITI" events counters --store "$S" | awk -v k="$1" -v o="$2" '$1 == k && $2 == o { n = $3 } END { print n + 0 }'
}

# --- usage
t help-events 0 "jiti events counters.*jiti events prune" -- "$JITI" events --help
t help-prune 0 "usage: jiti events prune.*--keep COUNT.*--max-age DURATION" -- "$JITI" events prune --help
t help-counters 0 "usage: jiti events counters" -- "$JITI" events counters --help
t help-kernel 0 "--events-keep COUNT.*--events-max-age DURATION" -- "$JITI" kernel --help
t prune-no-bound 2 "give --keep COUNT, --max-age DURATION or both" -- "$JITI" events prune --store "$S"
t prune-keep-0 2 "--keep needs a positive number" -- "$JITI" events prune --keep 0 --store "$S"
t prune-bad-age 2 "--max-age needs a duration" -- "$JITI" events prune --max-age 5x --store "$S"
t prune-no-store 1 "no store at" -- "$JITI" events prune --keep 5 --store "$S"
t counters-bad 2 "unexpected argument" -- "$JITI" events counters --bogus --store "$S"
t kernel-keep-0 2 "--events-keep needs a number" -- "$JITI" kernel --events-keep 0 --store "$S"
t kernel-age-missing 2 "--events-max-age needs a duration" -- "$JITI" kernel --store "$S" --events-max-age
t kernel-age-bad 2 "--events-max-age needs a duration" -- "$JITI" kernel --store "$S" --events-max-age 0s

# --- what changes nothing leaves no events: it is counted (but a call that
# fails on an unhandled error is recorded, with its diagnosis)
start_kernel "$S" || echo "FAIL the kernel did not start"
"$JITI" eval --store "$S" --key keep-me '(world-put :a 1)' >/dev/null
t_until first-write-recorded 0 "accepted" -- "$JITI" events -n 1 --store "$S"
n0=$(nevents)
for i in $(seq 20); do "$JITI" eval --store "$S" '(world-get :a)' >/dev/null; done
for i in 1 2 3; do "$JITI" preview --store "$S" '(world-put :a 2)' >/dev/null; done
"$JITI" eval --store "$S" '#.(car 1)' >/dev/null 2>&1
"$JITI" eval --store "$S" '#.(car 2)' >/dev/null 2>&1
"$JITI" observe --store "$S" >/dev/null
"$JITI" inspect --store "$S" :A >/dev/null
t status-counters 0 "counted: +call accepted 20, call rejected-by-gate 2, inspect ok 1, observe ok 1, preview accepted 3" \
  -- "$JITI" status --store "$S"
"$JITI" eval --store "$S" '(car 1)' >/dev/null 2>&1
t_until failed-call-recorded 0 'aborted .*outcome=error .*diagnosis=\{"condition_type":"TYPE-ERROR"' \
  -- "$JITI" events -n 1 --store "$S"
"$JITI" stop --store "$S" >/dev/null
n1=$(nevents)
ok "read-only calls leave the events as they were ($n0 events before the 27 calls and queries, $n1 after the failed call's two and the kernel's stop)" \
  $([[ $n1 -eq $((n0 + 3)) ]]; echo $?)
ok "their counters reached the store" $([[ $(counter call accepted) == 20 && $(counter call rejected-by-gate) == 2 &&
  $(counter preview accepted) == 3 && $(counter observe ok) == 1 ]]; echo $?)
t counters-json 0 '^\{"kind":"call","outcome":"accepted","count":20,"first":[0-9]+,"last":[0-9]+\}' \
  -- "$JITI" events counters --json --store "$S"
# and they go on across a restart
start_kernel "$S" || echo "FAIL the kernel did not start again"
"$JITI" eval --store "$S" '(world-get :a)' >/dev/null
t status-counters-restart 0 "counted: +call accepted 21" -- "$JITI" status --store "$S"

# --- a session's transcript, then a kernel that keeps the newest 5 events
printf '%s\n' '{"type":"finish","summary":"nothing to do"}' >"$tmp/finish.jsonl"
"$JITI" session --store "$S" --scripted "$tmp/finish.jsonl" --request 'look' >/dev/null 2>&1
"$JITI" stop --store "$S" >/dev/null
start_kernel "$S" --events-keep 5 || echo "FAIL the kernel with --events-keep did not start"
for i in $(seq 15); do "$JITI" eval --store "$S" "(world-put :w $i)" >/dev/null; done
# (it prunes a second after events were written)
t_until pruned-to-the-bound 0 "^[0-5]$" -- bash -c "'$JITI' events --json --store '$S' | grep -vc '\"event\":\"session'"
t status-retention 0 "retention: +the newest 5 events; [1-9][0-9]* pruned, [0-9]+ remain" -- "$JITI" status --store "$S"
t status-json-events 0 '"events": \{[^}]*"pruned": [1-9]' -- "$JITI" status --json --store "$S"
t key-outlives-its-events 0 "replayed" -- "$JITI" eval --store "$S" --key keep-me '(world-put :a 1)'
"$JITI" stop --store "$S" >/dev/null
"$JITI" events --store "$S" >"$tmp/kept"
kept=$("$JITI" events --json --store "$S" | grep -vc '"event":"session')
ok "the newest events stay, within the bound (and the stop): $kept" $([[ $kept -le 6 ]]; echo $?)
t events-footer 0 "counted rather than listed: jiti events counters" -- tail -1 "$tmp/kept"
t transcript-kept 0 "session-start.*session-end|session-end.*session-start" -- tr '\n' ' ' <"$tmp/kept"
t sessions-listed 0 "look" -- "$JITI" sessions --store "$S"

# --- an attempt a kill left without an outcome survives pruning; the next
# start marks it
start_kernel "$S" --fuel 0 || echo "FAIL the kernel did not start for the long call"
"$JITI" eval --store "$S" --key long-1 '(progn (dotimes (i 2000000000)) 1)' >/dev/null 2>&1 &
evalpid=$!
t_until long-call-recorded 0 '"event":"started".*dotimes' -- "$JITI" events -n 1 --json --store "$S"
att=$("$JITI" events -n 1 --json --store "$S" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
started=$("$JITI" events -n 1 --json --store "$S" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p')
kill -9 "$kp"
wait "$kp" 2>/dev/null
kill "$evalpid" 2>/dev/null
wait "$evalpid" 2>/dev/null
"$JITI" eval --store "$S" --key long-1 '1' >/dev/null 2>&1   # (no kernel: nothing)
"$JITI" events --store "$S" >/dev/null   # replays the dead kernel's journal
t prune-keeps-open-attempt 0 "pruned [0-9]+ events? of the store at .*; [0-9]+ remain" \
  -- "$JITI" events prune --keep 1 --store "$S"
t open-start-kept 0 "started +attempt $att " -- "$JITI" events --store "$S"
start_kernel "$S" || echo "FAIL the kernel did not start after the kill"
t_until marked-interrupted 0 "interrupted +attempt $att +started_seq=$started reason=no outcome" \
  -- "$JITI" events --store "$S"
t kernel-started-interrupted 0 "kernel-started .*interrupted=1" -- "$JITI" events --store "$S"
t prune-beside-kernel 1 "in use.*running kernel prunes by its own --events-keep" \
  -- "$JITI" events prune --keep 1 --store "$S"
"$JITI" stop --store "$S" >/dev/null
t prune-then-open-start-goes 0 "pruned [1-9][0-9]* events?" -- "$JITI" events prune --keep 1 --store "$S"
t open-start-gone 1 "" -- bash -c "'$JITI' events --store '$S' | grep -q 'started *attempt $att '"
t prune-by-age 0 "pruned [0-9]+ events?" -- "$JITI" events prune --max-age 1s --store "$S"
t sequence-goes-on 0 "kernel-started" -- bash -c "'$JITI' kernel --store '$S' --detach >/dev/null && '$JITI' stop --store '$S' >/dev/null && '$JITI' events -n 2 --store '$S'"
t key-after-pruning 0 "replayed" -- bash -c "'$JITI' kernel --store '$S' --detach >/dev/null; '$JITI' eval --store '$S' --key keep-me '(world-put :a 1)'"
t key-conflict-after-pruning 1 "key-conflict" -- "$JITI" eval --store "$S" --key keep-me '(world-put :a 3)'
"$JITI" stop --store "$S" >/dev/null
finish
