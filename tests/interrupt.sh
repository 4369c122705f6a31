#!/usr/bin/env bash
# Interrupting a running transaction through the kernel (`jiti interrupt`,
# Ctrl-C in jiti eval): an act pauses with INTERACTIVE-INTERRUPT and
# CONTINUE, a repair reads its state, CONTINUE goes on, a second interrupt,
# abort restores; a resumed computation cancelled; a long bignum product
# interrupted and continued to the right result; a call cannot pause
# (not-pausable) and Ctrl-C cancels it; nothing running, a wrong attempt,
# already paused.  Ordering and outcomes only, never times.
#   bash tests/interrupt.sh path/to/jiti path/to/daemon_client
set -u
JITI=$1
CLIENT=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-interrupt.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
raw() { printf '%s' "$1" | "$CLIENT" "$S/kernel.sock" "${2:-1}"; }
running() {  # until the kernel runs a transaction
  for _ in $(seq 300); do
    "$JITI" status --store "$S" 2>/dev/null | grep -q "state: *running" && return 0
    sleep 0.05
  done
  return 1
}
attempt_runs() {  # until status's current_attempt is $1 and a worker step has surely run
  for _ in $(seq 300); do
    [[ "$(jfield current_attempt)" == "$1" ]] && { sleep 0.2; return 0; }
    sleep 0.05
  done
  return 1
}
gen() { jfield generation; }
int_of() { grep -o -- "$1 *[0-9]*" | grep -o '[0-9]*$' | head -1; }

t help-interrupt 0 "usage: jiti interrupt" -- "$JITI" interrupt --help
t interrupt-bad-attempt 2 "positive integer" -- "$JITI" interrupt --store "$S" --attempt x
t interrupt-no-kernel 1 "no kernel is running" -- "$JITI" interrupt --store "$S"

start_kernel "$S" --fuel 0; ok kernel-starts $?
t interrupt-nothing-runs 1 "not-running: no transaction is running" -- "$JITI" interrupt --store "$S"
t interrupt-op-bad-attempt 0 '"code":"invalid-request".*attempt.*positive integer' -- raw $'{"op":"interrupt","attempt":0}\n'
t interrupt-op-bad-key 0 '"code":"invalid-request".*key' -- raw $'{"op":"interrupt","key":""}\n'

# an act running a loop: interrupted, it pauses with CONTINUE
# (no macro to expand first: a GC-stress build would spend its first second there)
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(let ((i 0)) (tagbody top (world-put :i i) (setq i (1+ i)) (go top)))' >"$tmp/act1.out" 2>&1 &
act=$!
running; ok act-runs $?
t interrupt-stale-attempt 1 "not-found: attempt 999 is not running" -- "$JITI" interrupt --store "$S" --attempt 999
t interrupt-running 0 "interrupting attempt [0-9]+" -- "$JITI" interrupt --store "$S"
wait "$act"; ok act-answered-paused $?
t paused-interactive-interrupt 0 "INTERACTIVE-INTERRUPT: Interactive interrupt" -- cat "$tmp/act1.out"
t paused-continue-restart 0 "p1-0 +CONTINUE \(\) +Continue the interrupted computation." -- cat "$tmp/act1.out"
t interrupt-while-paused 1 "paused: attempt [0-9]+ is paused already" -- "$JITI" interrupt --store "$S"
t cancel-while-paused 1 "paused: attempt [0-9]+ is paused, not running: abort it" -- "$JITI" cancel --store "$S"
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(world-get :i)' >"$tmp/rep1.out" 2>&1; ok repair-runs $?
i1=$(grep -o '^repair value: [0-9NIL]*' "$tmp/rep1.out" | sed 's/^repair value: //')
ok repair-reads-i $([[ $i1 =~ ^([0-9]+|NIL)$ ]]; echo $?)   # NIL: interrupted before its first step
[[ $i1 == NIL ]] && i1=-1
# CONTINUE: the loop goes on where it stopped; interrupted again
"$JITI" act --store "$S" --generation "$(gen)" --resume p1-0 >"$tmp/act2.out" 2>&1 &
act=$!
sleep 0.5
t interrupt-resumed 0 "interrupting attempt" -- "$JITI" interrupt --store "$S"
wait "$act"; ok resumed-act-answered $?
t paused-again 0 "paused \(generation [0-9]+\): INTERACTIVE-INTERRUPT" -- cat "$tmp/act2.out"
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(world-get :i)' >"$tmp/rep2.out" 2>&1
i2=$(grep -o '^repair value: [0-9]*' "$tmp/rep2.out" | grep -o '[0-9]*$')
ok continue-went-on $([[ -n "$i2" && "$i2" -gt "$i1" ]]; echo $?)
t abort-restores 0 "aborted" -- "$JITI" act --store "$S" --generation "$(gen)" --abort
t world-restored 0 "^NIL" -- "$JITI" eval --store "$S" '(world-get :i)'

# a repair running at the pause is interrupted: it pauses a level up
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(progn (world-put :r 1) (loop))' >"$tmp/act3.out" 2>&1 &
act=$!
running; "$JITI" interrupt --store "$S" >/dev/null; wait "$act"
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(loop)' >"$tmp/rep3.out" 2>&1 &
act=$!
sleep 0.5
t interrupt-repair 0 "interrupting attempt" -- "$JITI" interrupt --store "$S"
wait "$act"
t repair-paused-level-2 0 "level 2.*INTERACTIVE-INTERRUPT|INTERACTIVE-INTERRUPT.*level 2" -- "$JITI" observe --store "$S"
# interrupt, then cancel the computation resumed from the pause
"$JITI" act --store "$S" --generation "$(gen)" --abort >/dev/null 2>&1   # the repair's level
"$JITI" act --store "$S" --generation "$(gen)" --resume p1-0 >"$tmp/act4.out" 2>&1 &
act=$!
sleep 0.5
t cancel-resumed 0 "cancelling attempt" -- "$JITI" cancel --store "$S"
wait "$act"
t resumed-cancelled 0 "cancelled" -- cat "$tmp/act4.out"
t cancel-restores 0 "^NIL" -- "$JITI" eval --store "$S" '(world-get :r)'

# inside a long bignum product: CONTINUE computes it right
"$JITI" eval --store "$S" '(progn (defvar *big* (1- (ash 1 40000000))) t)' >/dev/null
want=$("$JITI" eval --store "$S" '(let ((p (* *big* (+ *big* 7)))) (list (integer-length p) (mod p 1000003)))')
"$JITI" act --store "$S" --generation "$(gen)" \
  --evaluate '(let ((p (* *big* (+ *big* 7)))) (list (integer-length p) (mod p 1000003)))' >"$tmp/act5.out" 2>&1 &
act=$!
running
t interrupt-bignum 0 "interrupting attempt" -- "$JITI" interrupt --store "$S"
wait "$act"
t bignum-paused 0 "INTERACTIVE-INTERRUPT" -- cat "$tmp/act5.out"
"$JITI" act --store "$S" --generation "$(gen)" --resume p1-0 >"$tmp/act6.out" 2>&1
t bignum-continued 0 "^\(80000001 [0-9]+\)" -- printf '%s\n' "$want"
t bignum-right 0 "$(printf '%s' "$want" | sed 's/[()]/\\&/g')" -- cat "$tmp/act6.out"

# a plain call cannot pause: not-pausable names jiti cancel; Ctrl-C cancels
# it (SIGINT as a terminal sends it: a background job would ignore it)
sigint_default() { exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
sigint_default "$JITI" eval --store "$S" '(progn (world-put :k 1) (loop))' >"$tmp/call.out" 2>&1 &
call=$!
running
t interrupt-call 1 "not-pausable: attempt [0-9]+ is a call that cannot pause.*on_error.*jiti cancel" -- "$JITI" interrupt --store "$S"
kill -INT "$call"; wait "$call"; ok ctrl-c-call-fails $([[ $? -eq 1 ]]; echo $?)
t ctrl-c-says-cancelling 0 "jiti eval: cancelling attempt [0-9]+ \(Ctrl-C again to stop waiting\)" -- cat "$tmp/call.out"
t ctrl-c-reply-cancelled 0 "cancelled: the kernel was asked to cancel" -- cat "$tmp/call.out"
t call-restored 0 "^NIL" -- "$JITI" eval --store "$S" '(world-get :k)'
# a call that asked to pause can be interrupted like an act: Ctrl-C on
# jiti eval --on-error pause interrupts it, the pause is answered by act
sigint_default "$JITI" eval --store "$S" --on-error pause '(progn (world-put :k 2) (loop))' >"$tmp/pcall.out" 2>&1 &
call=$!
running
kill -INT "$call"; wait "$call"; ok ctrl-c-pausable-call-exits-0 $([[ $? -eq 0 ]]; echo $?)
t ctrl-c-says-interrupting 0 "jiti eval: interrupting attempt [0-9]+" -- cat "$tmp/pcall.out"
t pausable-call-paused 0 "INTERACTIVE-INTERRUPT: Interactive interrupt.
restarts .*
  p1-0 +CONTINUE \(\) +Continue the interrupted computation." -- cat "$tmp/pcall.out"
t pausable-call-aborted 0 "^aborted: " -- "$JITI" act --store "$S" --generation "$(gen)" --abort
t pausable-call-restored 0 "^NIL" -- "$JITI" eval --store "$S" '(world-get :k)'
t interrupt-after 1 "not-running" -- "$JITI" interrupt --store "$S"
"$JITI" stop --store "$S" >/dev/null
# sanitizer builds: no report from the kernel or its workers (a block of an
# abandoned GMP operation left behind would be a leak report)
if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$tmp/kernel.log"; then
  fail=$((fail+1)); echo "FAIL sanitizer reports in the kernel log:"; grep -E -A20 "Sanitizer|runtime error" "$tmp/kernel.log" | head -60
else pass=$((pass+1)); fi
finish
