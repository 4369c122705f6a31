#!/usr/bin/env bash
# Writing calls per second of a replicated kernel (every group committed to
# a 3-member etcd cluster on loopback ports before it is answered) against
# a local one (its store only), in the same run, at 1 and 50 clients.
#
#   bench/replicate_bench.sh [--clients 1,50] [--rounds N] [--requests N]
#                            [--seconds S] [--lease S] [--etcd-tmpfs]
#                            [--jiti PATH] [--out FILE]
#
# Builds build/jiti and build/kernel_bench if needed, starts three etcd
# members (tests/etcd_cluster.sh, data in a temporary directory on the same
# disk as the stores), a local kernel and a replicated one (`--replicate
# URLS --world bench`) on fresh stores; then, round by round and client
# count by client count, kernel_bench's `write` workload (one outstanding
# call per connection, each publishing one revision) against each.  Prints
# a markdown table of medians over the rounds, the revisions per group
# commit of each, and the ratio replicated ÷ local at each client count
# (goal: >= 0.5 at 50 clients); also written to --out (default
# bench/results/replicate-latest.md).  The etcd members' own CPU time per
# request is shown beside the kernels'.  --etcd-tmpfs puts etcd's data in
# /dev/shm (its fsyncs out of the picture: what is left is its CPU and
# the round trips).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

clients=1,50
rounds=3
requests=5000
seconds=10
lease=5
etcd_tmpfs=0
jiti="$ROOT/build/jiti"
kbench="$ROOT/build/kernel_bench"
out="$HERE/results/replicate-latest.md"

usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --requests) requests=${2:?}; shift 2 ;;
    --seconds) seconds=${2:?}; shift 2 ;;
    --lease) lease=${2:?}; shift 2 ;;
    --etcd-tmpfs) etcd_tmpfs=1; shift ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "replicate_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "replicate_bench.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac

say() { echo "replicate_bench.sh: $*" >&2; }

. "$ROOT/bench/lib.sh"
bench_build_kernel || exit 1

. "$ROOT/tests/etcd_cluster.sh"
tmp=$(mktemp -d /tmp/jiti-rbench.XXXXXX)
etcd_dir=$tmp/etcd
[ "$etcd_tmpfs" = 1 ] && etcd_dir=$(mktemp -d /dev/shm/jiti-rbench-etcd.XXXXXX)
lpid=""; rpid=""
cleanup() {
  [ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  [ -n "$lpid" ] && kill "$lpid" 2>/dev/null && wait "$lpid" 2>/dev/null
  etcd_cluster_stop
  rm -rf "$tmp"
  [ "$etcd_tmpfs" = 1 ] && rm -rf "$etcd_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting 3 etcd members on loopback ports ..."
etcd_cluster_start "$etcd_dir" || exit 1
LOCAL=$tmp/local REPL=$tmp/repl
say "starting a local kernel on $LOCAL and a replicated one on $REPL ..."
"$jiti" kernel --store "$LOCAL" 2>"$tmp/local.log" &
lpid=$!
"$jiti" kernel --store "$REPL" --replicate "$ETCD_URLS" --world bench --lease "$lease" 2>"$tmp/repl.log" &
rpid=$!
for _ in $(seq 300); do
  "$jiti" status --store "$LOCAL" >/dev/null 2>&1 && "$jiti" status --store "$REPL" >/dev/null 2>&1 && break
  kill -0 "$lpid" 2>/dev/null || { say "the local kernel did not start:"; cat "$tmp/local.log" >&2; exit 1; }
  kill -0 "$rpid" 2>/dev/null || { say "the replicated kernel did not start:"; cat "$tmp/repl.log" >&2; exit 1; }
  sleep 0.1
done

cpu_ns() { for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done | awk '{s += $1} END {printf "%.0f", s}'; }
groups() {  # "commits revisions" of a kernel's group commits so far
  "$jiti" status --store "$1" --json 2>/dev/null |
    awk -F'[:,]' '/"group_commits"/ {c = $2} /"group_revisions"/ {r = $2} END {printf "%d %d", c, r}'
}
kernel_pids() { echo "$1 $(pgrep -P "$1" | tr '\n' ' ')"; }

raw=$tmp/raw.tsv   # round system clients rps p50 p99 revs_per_group kernel_cpu_us etcd_cpu_us
: >"$raw"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
IFS=, read -ra CL <<<"$clients"
for r in $(seq "$rounds"); do
  for c in "${CL[@]}"; do
    for sys in local replicated; do
      store=$LOCAL pid=$lpid
      [ "$sys" = replicated ] && store=$REPL pid=$rpid
      say "round $r/$rounds, $c client(s): $sys writes (-n $requests, at most ${seconds}s) ..."
      g0=$(groups "$store")
      k0=$(cpu_ns $(kernel_pids "$pid")); e0=$(cpu_ns "${ETCD_PID[@]}")
      "$kbench" --store "$store" -c "$c" -n "$requests" -d "$seconds" -w write --csv >"$tmp/kb.csv" ||
        say "kernel_bench reported errors"
      k1=$(cpu_ns $(kernel_pids "$pid")); e1=$(cpu_ns "${ETCD_PID[@]}")
      g1=$(groups "$store")
      # "workload","clients","requests","errors","seconds","rps","avg","min","p50","p95","p99","max"
      tail -n +2 "$tmp/kb.csv" | tr -d '"' | awk -F, -v r="$r" -v s="$sys" -v g="$g0 $g1" \
        -v k=$((k1 - k0)) -v e=$((e1 - e0)) '{
          split(g, a, " "); rpg = a[3] > a[1] ? (a[4] - a[2]) / (a[3] - a[1]) : 0
          n = $3 + 50
          printf "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\n", r, s, $2, $6, $9, $11, rpg, k / 1000 / n, e / 1000 / n }' >>"$raw"
    done
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
cell() { awk -F'\t' -v s="$1" -v c="$2" -v k="$3" '$2 == s && $3 == c {print $k}' "$raw" | median; }
{
  echo "## replicate_bench: replicated (3 etcd members) vs local writing calls"
  echo
  echo "- run: $started, $rounds round(s), \`bench/replicate_bench.sh --clients $clients --rounds $rounds --requests $requests --seconds $seconds --lease $lease$([ "$etcd_tmpfs" = 1 ] && echo ' --etcd-tmpfs')\`"
  echo "- machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(uname -sr); load average $load0 at the start, $load1 at the end"
  echo "- jiti $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); $(etcd --version 2>/dev/null | head -1); stores on $(df -T "$tmp" | awk 'NR == 2 {print $2}') ($tmp), etcd's data on $(df -T "$etcd_dir" | awk 'NR == 2 {print $2}'), all on one machine"
  echo "- workload: \`(world-put :counter (1+ (or (world-get :counter) 0)))\`, one revision per call, one outstanding call per connection; medians over the rounds"
  echo "- CPU µs/req: on-CPU time per request of the kernel and its worker, and of the three etcd members together"
  echo
  echo "| system | clients | req/s | p50 ms | p99 ms | revisions/group | kernel CPU µs/req | etcd CPU µs/req | replicated ÷ local |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for c in "${CL[@]}"; do
    lr=$(cell local "$c" 4)
    for sys in local replicated; do
      rps=$(cell "$sys" "$c" 4)
      ratio=""
      [ "$sys" = replicated ] && ratio=$(awk -v a="$rps" -v b="$lr" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "–"}')
      printf '| %s | %s | %.0f | %.2f | %.2f | %.1f | %.1f | %.1f | %s |\n' "$sys" "$c" "$rps" "$(cell "$sys" "$c" 5)" \
        "$(cell "$sys" "$c" 6)" "$(cell "$sys" "$c" 7)" "$(cell "$sys" "$c" 8)" "$(cell "$sys" "$c" 9)" "$ratio"
    done
  done
} >"$tmp/table.md"
cat "$tmp/table.md"
for c in "${CL[@]}"; do
  awk -v a="$(cell replicated "$c" 4)" -v b="$(cell local "$c" 4)" -v c="$c" \
    'BEGIN {if (b > 0) printf "replicated / local at %s client(s): %.2fx\n", c, a / b}' >&2
done
mkdir -p "$(dirname "$out")"
cp "$tmp/table.md" "$out"
say "written to $out"
