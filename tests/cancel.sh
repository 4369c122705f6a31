#!/usr/bin/env bash
# Cancelling a running transaction through the kernel: `jiti cancel` (with
# nothing running, a wrong attempt, the running one), the world restored and
# the caller answered `cancelled`, the next client served after it; a client
# that disconnects while its call runs has it cancelled (Ctrl-C on jiti
# eval).  Ordering and outcomes only, never times.
#   bash tests/cancel.sh path/to/jiti path/to/daemon_client
set -u
JITI=$1
CLIENT=$2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-cancel.XXXXXX)
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

t help-cancel 0 "usage: jiti cancel" -- "$JITI" cancel --help
t cancel-bad-attempt 2 "positive integer" -- "$JITI" cancel --store "$S" --attempt 0
t cancel-no-kernel 1 "no kernel is running" -- "$JITI" cancel --store "$S"

start_kernel "$S" --fuel 0; ok kernel-starts $?
t cancel-nothing-runs 1 "not-running: no transaction is running" -- "$JITI" cancel --store "$S"
t cancel-op-bad-attempt 0 '"code":"invalid-request".*positive integer' -- raw $'{"op":"cancel","attempt":"x"}\n'
t call-bad-on-disconnect 0 '"code":"invalid-request".*on_disconnect' -- raw $'{"op":"call","source":"1","on_disconnect":"x"}\n'

# a running call cancelled: restored, its caller told, the next caller served
"$JITI" eval --store "$S" '(progn (world-put :x 1) (loop))' >"$tmp/loop.out" 2>&1 &
loop=$!
running; ok loop-runs $?
"$JITI" eval --store "$S" '(+ 1 2)' >"$tmp/next.out" 2>&1 &
next=$!
t cancel-stale-attempt 1 "not-found: attempt 999 is not running \(attempt [0-9]+ is" -- "$JITI" cancel --store "$S" --attempt 999
t cancel-running 0 "cancelling attempt [0-9]+" -- "$JITI" cancel --store "$S"
wait "$loop"; ok cancelled-caller-fails $([[ $? -eq 1 ]]; echo $?)
t cancelled-reply 0 "cancelled: the kernel was asked to cancel the running call.*restored" -- cat "$tmp/loop.out"
wait "$next"; ok next-served-after-cancel $?
t next-result 0 "^3$" -- cat "$tmp/next.out"
t world-restored 0 "^NIL" -- "$JITI" eval --store "$S" '(world-get :x)'

# a client that leaves while its call runs: the call is cancelled
"$JITI" eval --store "$S" '(progn (world-put :y 1) (loop))' >/dev/null 2>&1 &
gone=$!
running; ok second-loop-runs $?
kill -TERM "$gone"; wait "$gone" 2>/dev/null  # (a background job ignores SIGINT)
t served-after-disconnect 0 "^42$" -- "$JITI" eval --store "$S" '(+ 40 2)'
t disconnect-restored 0 "^NIL" -- "$JITI" eval --store "$S" '(world-get :y)'
t disconnect-logged 0 "its client left; cancelled" -- cat "$tmp/kernel.log"
t cancel-after 1 "not-running" -- "$JITI" cancel --store "$S"
"$JITI" stop --store "$S" >/dev/null
finish
