#!/usr/bin/env bash
# The repair loop's figures on the vending machine (examples/vending-
# machine/), with the scripted model, in one run against one kernel:
#   1. from a failing call to the applied repair, p50/p95 over --rounds
#      rounds, and how it splits (capture, the supervisor's start, pickup,
#      model, verification, apply).  Each round: the buggy DISPENSE restored
#      (jiti apply -e), a customer overpays so that the call fails and opens
#      an incident, and the incident is repaired by the right scripted
#      verdict (repair.jsonl): by `jiti supervise --until-idle` spawned for
#      it, then by one supervisor running for all the rounds, then so in
#      mode pause (the call waits for its repair).  The incident's events
#      are timestamped as they arrive by a subscribed process of the bench
#   2. application calls (--calls of a reading form, then of a writing one,
#      one connection, one call at a time) alone and beside a slow
#      verification: a `verify` of a candidate that loops, which the
#      kernel's large fuel limit lets run until its --verify-seconds timeout
#   3. the apply's pause: the repair transaction's duration, and the
#      latency of calls made meanwhile from another connection, through
#      each stretch of the loop (--rounds rounds with a spawned supervisor)
# Prints markdown tables (also written to --out, default
# bench/results/repair-loop-latest.md; each round's timestamps to the same
# name ending -raw.jsonl).  Times are measured, never asserted; the load
# average is reported with each part.  --parts 1,3 runs only those;
# --tmpfs keeps the store in /dev/shm (no disk syncs).
#
#   bench/repair_loop_bench.sh [--rounds 20] [--calls 2000] [--verify-seconds 10]
#                              [--parts 1,2,3] [--tmpfs] [--jiti PATH] [--out FILE]
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
APP=$ROOT/examples/vending-machine

rounds=20
calls=2000
verify_seconds=10
parts=1,2,3
tmpfs=0
jiti="$ROOT/build/jiti"
out="$HERE/results/repair-loop-latest.md"

usage() { sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=${2:?}; shift 2 ;;
    --calls) calls=${2:?}; shift 2 ;;
    --verify-seconds) verify_seconds=${2:?}; shift 2 ;;
    --parts) parts=${2:?}; shift 2 ;;
    --tmpfs) tmpfs=1; shift ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "repair_loop_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$parts" in *[!123,]*|'') echo "repair_loop_bench.sh: --parts lists 1, 2 and 3 (e.g. 1,3)" >&2; exit 2 ;; esac
for v in rounds calls verify_seconds; do
  case "${!v}" in ''|*[!0-9]*|0) echo "repair_loop_bench.sh: --${v//_/-} needs a positive integer" >&2; exit 2 ;; esac
done

say() { echo "repair_loop_bench.sh: $*" >&2; }

if [ "$jiti" = "$ROOT/build/jiti" ]; then
  if [ ! -f "$ROOT/build/CMakeCache.txt" ]; then
    say "configuring build/ (cmake, RelWithDebInfo) ..."
    cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
  fi
  say "building jiti if needed ..."
  cmake --build "$ROOT/build" -j 2 --target jiti-bin >/dev/null || exit 1
fi
jiti=$(cd "$(dirname "$jiti")" && pwd)/$(basename "$jiti")

tmp=$(mktemp -d /tmp/jiti-loopbench.XXXXXX)
store_root=$tmp
[ "$tmpfs" = 1 ] && store_root=$(mktemp -d /dev/shm/jiti-loopbench.XXXXXX)
S=$store_root/store
kpid=""
cleanup() {
  [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
  [ -n "${KEEP:-}" ] && { say "kept $tmp"; return; }
  rm -rf "$tmp"
  [ "$store_root" != "$tmp" ] && rm -rf "$store_root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A fuel limit far above the default (1e7 steps) keeps a candidate that
# loops running in its shadow until the verification's timeout, as a slow
# but legal candidate would; the application's calls never come near it.
FUEL=1000000000000
say "starting jiti kernel on $S (--fuel $FUEL) ..."
"$jiti" init --store "$S" >/dev/null || exit 1
"$jiti" kernel --store "$S" --fuel "$FUEL" 2>"$tmp/kernel.log" &
kpid=$!
for _ in $(seq 200); do
  "$jiti" status --store "$S" >/dev/null 2>&1 && break
  kill -0 "$kpid" 2>/dev/null || { say "the kernel did not start:"; cat "$tmp/kernel.log" >&2; exit 1; }
  sleep 0.1
done
j() { "$jiti" "$@" --store "$S" >/dev/null || { say "jiti $* failed"; exit 1; }; }

# the machine as the demo sets it up: its invariants, repair of DISPENSE,
# sales at the exact price (the traffic sample a verification replays)
j apply "$APP/machine.lisp"
j invariant add credit-never-negative '(>= (machine-credit *machine*) 0)'
j invariant add stock-never-negative '(loop for p being the hash-values of (machine-slots *machine*) always (>= (product-stock p) 0))'
j invariant add change-is-exact "(and (equal (change-coins 0) '()) (equal (change-coins 40) '(25 10 5)) (equal (change-coins 135) '(100 25 10)))"
j repair enable dispense --expect-condition INSUFFICIENT-CREDIT
j eval '(insert-coin 100)'
j eval '(dispense "A2")'
j eval '(progn (insert-coin 25) (insert-coin 25) (insert-coin 25) t)'
j eval '(dispense "B1")'
sed -n '/^(defun dispense/,/^$/p' "$APP/machine.lisp" >"$tmp/buggy.lisp"

load0=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
say "running: $rounds rounds of the loop, $calls calls per form beside slow verifications ($verify_seconds s each), $rounds rounds with a concurrent caller ..."
python3 "$HERE/repair_loop_bench.py" run --jiti "$jiti" --store "$S" --log "$tmp/kernel.log" \
  --scripted "$APP/repair.jsonl" --buggy "$tmp/buggy.lisp" --rounds "$rounds" --calls "$calls" \
  --verify-seconds "$verify_seconds" --parts "$parts" --raw "$tmp/raw.jsonl" >"$tmp/tables.md"
rc=$?
load1=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "## repair_loop_bench: from a failing call to the applied repair"
  echo
  echo "- run: $started, \`bench/repair_loop_bench.sh --rounds $rounds --calls $calls --verify-seconds $verify_seconds$([ "$parts" = 1,2,3 ] || echo " --parts $parts")$([ "$tmpfs" = 1 ] && echo ' --tmpfs')\`"
  echo "- machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(uname -sr); load average $load0 at the start, $load1 at the end"
  if [ "$jiti" = "$ROOT/build/jiti" ]; then jv="jiti $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+changes')"
  else jv="jiti: $jiti"; fi
  echo "- $jv, store on $([ "$tmpfs" = 1 ] && echo 'tmpfs (/dev/shm)' || echo "$(df -T "$tmp" | awk 'NR == 2 {print $2}') ($tmp)"); the kernel with --fuel $FUEL"
  echo "- the app: examples/vending-machine (3 invariants, repair enabled for DISPENSE, 2 sales recorded); the model: scripted (examples/vending-machine/repair.jsonl)"
  echo
  cat "$tmp/tables.md"
} >"$tmp/report.md"
cat "$tmp/report.md"
mkdir -p "$(dirname "$out")"
cp "$tmp/report.md" "$out"
[ -f "$tmp/raw.jsonl" ] && cp "$tmp/raw.jsonl" "${out%.md}-raw.jsonl"
say "written to $out"
exit $rc
