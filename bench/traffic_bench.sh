#!/usr/bin/env bash
# What the traffic sample of automatic repair costs a writing call: the
# same function, called by --clients clients at once (kernel_bench, one
# outstanding call per connection), with the repair policy in three states,
# interleaved round by round in one run:
#   none    no rule at all: the kernel asks the worker for nothing
#   off     the policy selects another function only: the kernel reads the
#           call's head and asks the worker to record what the call reads
#           (a failure's evidence: its diagnosis lists it), records nothing
#   asked   a package rule of another package besides: the kernel asks the
#           worker to note every call, and records nothing (the function is
#           not selected)
#   on      the function selected: every call noted, offered to the sample
#           (its reservoir, written with the group's store write)
# Prints a markdown table of medians (calls/s, p50, p99, on-CPU time of
# kernel + worker per call and, when perf(1) may count them, the
# instructions they ran per call: unlike time, hardly moved by what else
# the machine runs) with each state's ratios to off, also written to --out
# (default bench/results/traffic-latest.md).
#
#   bench/traffic_bench.sh [--clients 50] [--rounds 3] [--requests 20000]
#                          [--seconds 10] [--tmpfs] [--jiti PATH] [--out FILE]
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

clients=50
rounds=3
requests=20000
seconds=10
tmpfs=0
jiti="$ROOT/build/jiti"
kbench="$ROOT/build/kernel_bench"
out="$HERE/results/traffic-latest.md"

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --requests) requests=${2:?}; shift 2 ;;
    --seconds) seconds=${2:?}; shift 2 ;;
    --tmpfs) tmpfs=1; shift ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "traffic_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "traffic_bench.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac

say() { echo "traffic_bench.sh: $*" >&2; }

. "$ROOT/bench/lib.sh"
bench_build_kernel || exit 1

tmp=$(mktemp -d /tmp/jiti-tbench.XXXXXX)
store_root=$tmp
[ "$tmpfs" = 1 ] && store_root=$(mktemp -d /dev/shm/jiti-tbench.XXXXXX)
STORE=$store_root/store
kpid=""
cleanup() {
  [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
  rm -rf "$tmp"
  [ "$store_root" != "$tmp" ] && rm -rf "$store_root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting jiti kernel on $STORE ..."
"$jiti" init --store "$STORE" >/dev/null || exit 1
"$jiti" kernel --store "$STORE" 2>"$tmp/kernel.log" &
kpid=$!
for _ in $(seq 200); do
  "$jiti" status --store "$STORE" >/dev/null 2>&1 && break
  kill -0 "$kpid" 2>/dev/null || { say "the kernel did not start:"; cat "$tmp/kernel.log" >&2; exit 1; }
  sleep 0.1
done
j() { "$jiti" "$@" --store "$STORE" >/dev/null || { say "jiti $* failed"; exit 1; }; }
j eval '(defun bump (n) (world-put :counter (+ n (or (world-get :counter) 0))) n)'
j eval '(defun other (n) n)'
j repair enable other
SOURCE='(bump 1)'

cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'; }
worker_pid() { pgrep -P "$kpid" | head -1; }
policy() {  # the policy of a state
  case "$1" in
    none) "$jiti" repair disable bump --store "$STORE" >/dev/null 2>&1
          "$jiti" repair disable zzz: --store "$STORE" >/dev/null 2>&1
          "$jiti" repair disable other --store "$STORE" >/dev/null 2>&1 ;;
    off) "$jiti" repair disable bump --store "$STORE" >/dev/null 2>&1
         "$jiti" repair disable zzz: --store "$STORE" >/dev/null 2>&1; j repair enable other ;;
    asked) "$jiti" repair disable bump --store "$STORE" >/dev/null 2>&1; j repair enable zzz: ;;
    on) "$jiti" repair disable zzz: --store "$STORE" >/dev/null 2>&1; j repair enable bump ;;
  esac
}

# instructions counted by perf stat, when it may attach to the kernel
perf_ok=0
if command -v perf >/dev/null && perf stat -e instructions -x, -o "$tmp/ps.txt" -- true >/dev/null 2>&1 &&
   awk -F, '$3 ~ /^instructions/ && $1 ~ /^[0-9]+$/ {ok = 1} END {exit !ok}' "$tmp/ps.txt"; then
  perf_ok=1
else
  say "perf stat cannot count instructions here (no hardware counters): that column stays empty"
fi

raw=$tmp/raw.tsv   # round state rps p50 p99 cpu_us_per_call instructions_per_call
: >"$raw"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
STATES=(none off asked on)
say "warming up (a run of $((requests / 4)) calls, not counted) ..."
"$kbench" --store "$STORE" -c "$clients" -n $((requests / 4)) -d "$seconds" -w custom --source "$SOURCE" >/dev/null
for r in $(seq "$rounds"); do
  # each round starts with another state: no state always follows the same one
  for k in 0 1 2 3; do
    st=${STATES[$(((r - 1 + k) % 4))]}
    policy "$st"
    say "round $r/$rounds, $st: $clients clients, '$SOURCE' (-n $requests, at most ${seconds}s) ..."
    wp=$(worker_pid)
    psp=""
    if [ "$perf_ok" = 1 ]; then
      perf stat -e instructions -x, -o "$tmp/ps.txt" -p "$kpid,$wp" >/dev/null 2>&1 &
      psp=$!
      sleep 0.2
    fi
    k0=$(cpu_ns "$kpid"); w0=$(cpu_ns "$wp")
    "$kbench" --store "$STORE" -c "$clients" -n "$requests" -d "$seconds" -w custom --source "$SOURCE" --csv \
      >"$tmp/kb.csv" || say "kernel_bench reported errors"
    k1=$(cpu_ns "$kpid"); w1=$(cpu_ns "$wp")
    ins=0
    if [ -n "$psp" ]; then
      kill -INT "$psp"; wait "$psp" 2>/dev/null
      ins=$(awk -F, '$3 ~ /^instructions/ {print $1}' "$tmp/ps.txt")
    fi
    # "workload","clients","requests","errors","seconds","rps","avg","min","p50","p95","p99","max"
    tail -n +2 "$tmp/kb.csv" | tr -d '"' | awk -F, -v r="$r" -v s="$st" -v cpu=$((k1 - k0 + w1 - w0)) -v ins="${ins:-0}" \
      '{printf "%s\t%s\t%s\t%s\t%s\t%.1f\t%.0f\n", r, s, $6, $9, $11, cpu / 1000 / ($3 + 50), ins / ($3 + 50)}' >>"$raw"
    if [ "$st" = on ]; then   # (disabling it again forgets it)
      sample=$("$jiti" traffic bump --json --store "$STORE" | wc -l)
      counts=$("$jiti" status --json --store "$STORE" | tr -d ' \n' | sed -n 's/.*"traffic":{\([^}]*\)}.*/\1/p')
    fi
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
cell() { awk -F'\t' -v s="$1" -v k="$2" '$2 == s {print $k}' "$raw" | median; }
{
  echo "## traffic_bench: writing calls with and without the traffic sample"
  echo
  echo "- run: $started, $rounds round(s), \`bench/traffic_bench.sh --clients $clients --rounds $rounds --requests $requests --seconds $seconds$([ "$tmpfs" = 1 ] && echo ' --tmpfs')\`"
  echo "- machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(uname -sr); load average $load0 at the start, $load1 at the end"
  if [ "$jiti" = "$ROOT/build/jiti" ]; then jv="jiti $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+changes')"
  else jv="jiti: $jiti"; fi
  echo "- $jv, store on $([ "$tmpfs" = 1 ] && echo 'tmpfs (/dev/shm)' || echo "$(df -T "$tmp" | awk 'NR == 2 {print $2}') ($tmp)")"
  echo "- the call: \`$SOURCE\`, BUMP being \`(defun bump (n) (world-put :counter (+ n (or (world-get :counter) 0))) n)\`: one revision per call; medians over the rounds, the states interleaved (each round starting with the next)"
  echo "- none: no repair rule; off: the policy selects OTHER only (the worker records what each call reads, for a failure's evidence); asked: and the package ZZZ: (every call noted, none recorded); on: BUMP selected (every call noted and offered to the sample)"
  echo "- CPU µs/call: on-CPU time of kernel + worker per call; instructions/call: theirs, counted by perf stat (kernel mode too); ratios to off: its calls/s ÷ the state's (> 1: slower), the state's CPU or instructions ÷ its"
  echo
  echo "| state | clients | calls/s | p50 ms | p99 ms | CPU µs/call | instructions/call | throughput ratio | CPU ratio | instructions ratio |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  base=$(cell off 3); cbase=$(cell off 6); ibase=$(cell off 7)
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "–"}'; }
  for st in "${STATES[@]}"; do
    rps=$(cell "$st" 3); cpu=$(cell "$st" 6); ins=$(cell "$st" 7)
    [ "$perf_ok" = 1 ] || ins=–
    printf '| %s | %s | %.0f | %.3f | %.3f | %.1f | %s | %s | %s | %s |\n' "$st" "$clients" "$rps" "$(cell "$st" 4)" \
      "$(cell "$st" 5)" "$cpu" "$ins" "$(ratio "$base" "$rps")" "$(ratio "$cpu" "$cbase")" "$(ratio "$ins" "$ibase")"
  done
  echo
  for st in "${STATES[@]}"; do
    printf -- '- %s, calls/s per round: %s\n' "$st" "$(awk -F'\t' -v s="$st" '$2 == s {printf "%s%.0f", n++ ? ", " : "", $3}' "$raw")"
  done
  echo
  echo "The sample after the last on run: $sample call(s) of BUMP kept (one signature, fixnum); the kernel's counters then: $counts."
} >"$tmp/table.md"
cat "$tmp/table.md"
mkdir -p "$(dirname "$out")"
cp "$tmp/table.md" "$out"
say "written to $out"
