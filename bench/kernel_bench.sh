#!/usr/bin/env bash
# Application-call throughput and latency of the kernel daemon over its Unix
# socket, side by side with redis in the same run: PING for calls, and SET
# with every write fsynced (appendonly, appendfsync always) for the writing
# calls, which fsync their revision.
#
#   bench/kernel_bench.sh [--clients 1,4,50] [--rounds N] [--requests N]
#                         [--seconds S] [--redis-requests N]
#                         [--redis-set-requests N] [--workloads LIST]
#                         [--tmpfs] [--jiti PATH] [--out FILE]
#
# Builds build/jiti and build/kernel_bench if needed, starts `jiti kernel` on
# a fresh store in a temporary directory, a redis-server without persistence
# and a second one with `--appendonly yes --appendfsync always` whose file
# lies beside the store (same file system), each on a Unix socket; then,
# round by round and client count by client count: redis-benchmark -t ping
# (PING_INLINE, PING_MBULK) on the first, redis-benchmark -t set on the
# second, then kernel_bench (one outstanding call per connection) for each
# workload.  Prints a markdown table of medians over the rounds with the
# ratios jiti / redis PING_INLINE and, for the writing calls, jiti / redis
# SET (fsync always), also written to --out (default
# bench/results/kernel-latest.md).  --tmpfs puts the jiti store and redis'
# append-only file in /dev/shm (takes the disk's fsyncs out of the picture).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

clients=1,4,50
rounds=3
requests=20000
seconds=10
redis_requests=100000
redis_set_requests=20000
workloads=read,write
tmpfs=0
jiti="$ROOT/build/jiti"
kbench="$ROOT/build/kernel_bench"
out="$HERE/results/kernel-latest.md"

usage() { sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --requests) requests=${2:?}; shift 2 ;;
    --seconds) seconds=${2:?}; shift 2 ;;
    --redis-requests) redis_requests=${2:?}; shift 2 ;;
    --redis-set-requests) redis_set_requests=${2:?}; shift 2 ;;
    --workloads) workloads=${2:?}; shift 2 ;;
    --tmpfs) tmpfs=1; shift ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "kernel_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "kernel_bench.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac

say() { echo "kernel_bench.sh: $*" >&2; }

. "$ROOT/bench/lib.sh"
bench_build_kernel || exit 1

# ---- redis
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
  say "installing redis-server and redis-tools (apt-get) ..."
  if [ "$(id -u)" = 0 ]; then apt-get install -y redis-server redis-tools >/dev/null
  else sudo apt-get install -y redis-server redis-tools >/dev/null; fi || { say "cannot install redis"; exit 1; }
fi

tmp=$(mktemp -d /tmp/jiti-kbench.XXXXXX)
store_root=$tmp
[ "$tmpfs" = 1 ] && store_root=$(mktemp -d /dev/shm/jiti-kbench.XXXXXX)
STORE=$store_root/store
RSOCK=$tmp/redis.sock
ASOCK=$tmp/redis-aof.sock
AOFDIR=$store_root/redis-aof   # beside the store: the same disk's fsyncs
mkdir -p "$AOFDIR"
kpid=""; rpid=""; apid=""
cleanup() {
  [ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
  [ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  [ -n "$apid" ] && kill "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
  rm -rf "$tmp"
  [ "$store_root" != "$tmp" ] && rm -rf "$store_root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting redis-server on $RSOCK (no persistence) ..."
redis-server --port 0 --unixsocket "$RSOCK" --unixsocketperm 700 --save '' --appendonly no \
  --dir "$tmp" --logfile "$tmp/redis.log" >/dev/null 2>&1 &
rpid=$!
say "starting redis-server on $ASOCK (appendonly yes, appendfsync always, in $AOFDIR) ..."
redis-server --port 0 --unixsocket "$ASOCK" --unixsocketperm 700 --save '' --appendonly yes \
  --appendfsync always --dir "$AOFDIR" --logfile "$tmp/redis-aof.log" >/dev/null 2>&1 &
apid=$!
say "starting jiti kernel on $STORE ..."
"$jiti" kernel --store "$STORE" 2>"$tmp/kernel.log" &
kpid=$!
for _ in $(seq 200); do
  [ -S "$RSOCK" ] && [ -S "$ASOCK" ] && "$jiti" status --store "$STORE" >/dev/null 2>&1 && break
  kill -0 "$kpid" 2>/dev/null || { say "the kernel did not start:"; cat "$tmp/kernel.log" >&2; exit 1; }
  kill -0 "$rpid" 2>/dev/null || { say "redis-server did not start:"; cat "$tmp/redis.log" >&2; exit 1; }
  kill -0 "$apid" 2>/dev/null || { say "redis-server (aof) did not start:"; cat "$tmp/redis-aof.log" >&2; exit 1; }
  sleep 0.1
done
[ -S "$RSOCK" ] && [ -S "$ASOCK" ] || { say "redis-server did not open its socket"; exit 1; }

# on-CPU nanoseconds of all threads of a process
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'; }
worker_pid() { pgrep -P "$kpid" | head -1; }
# "commits revisions" of the kernel's group commits so far (jiti status)
groups() {
  "$jiti" status --store "$STORE" --json 2>/dev/null |
    awk -F'[:,]' '/"group_commits"/ {c = $2} /"group_revisions"/ {r = $2} END {printf "%d %d", c, r}'
}

raw=$tmp/raw.tsv   # round system workload clients rps p50 p99 cpu_us_per_request
: >"$raw"
: >"$tmp/groups.tsv"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
IFS=, read -ra CL <<<"$clients"
IFS=, read -ra WL <<<"$workloads"
for r in $(seq "$rounds"); do
  for c in "${CL[@]}"; do
    say "round $r/$rounds, $c client(s): redis-benchmark -t ping -n $redis_requests -c $c ..."
    r0=$(cpu_ns "$rpid")
    csv=$(redis-benchmark -s "$RSOCK" -t ping -n "$redis_requests" -c "$c" --csv 2>/dev/null)
    r1=$(cpu_ns "$rpid")
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    echo "$csv" | tr -d '"' | awk -F, -v r="$r" -v c="$c" -v cpu=$((r1 - r0)) -v n="$redis_requests" \
      '$1 ~ /^PING_/ {printf "%s\tredis\t%s\t%s\t%s\t%s\t%s\t%.1f\n", r, $1, c, $2, $5, $7, cpu / 1000 / (2 * n)}' >>"$raw"
    say "round $r/$rounds, $c client(s): redis-benchmark -t set -n $redis_set_requests -c $c (appendfsync always) ..."
    a0=$(cpu_ns "$apid")
    csv=$(redis-benchmark -s "$ASOCK" -t set -n "$redis_set_requests" -c "$c" --csv 2>/dev/null)
    a1=$(cpu_ns "$apid")
    echo "$csv" | tr -d '"' | awk -F, -v r="$r" -v c="$c" -v cpu=$((a1 - a0)) -v n="$redis_set_requests" \
      '$1 == "SET" {printf "%s\tredis\tSET\t%s\t%s\t%s\t%s\t%.1f\n", r, c, $2, $5, $7, cpu / 1000 / n}' >>"$raw"
    for w in "${WL[@]}"; do
      say "round $r/$rounds, $c client(s): jiti call '$w' (-n $requests, at most ${seconds}s) ..."
      wp=$(worker_pid)
      g0=$(groups)
      k0=$(cpu_ns "$kpid"); w0=$(cpu_ns "$wp")
      "$kbench" --store "$STORE" -c "$c" -n "$requests" -d "$seconds" -w "$w" --csv >"$tmp/kb.csv"
      st=$?
      line=$(tail -n +2 "$tmp/kb.csv")
      k1=$(cpu_ns "$kpid"); w1=$(cpu_ns "$wp")
      g1=$(groups)
      # revisions per group commit in this run (writing calls)
      echo "$g0 $g1" | awk -v r="$r" -v w="$w" -v c="$c" '$3 > $1 {printf "%s\t%s\t%s\t%.1f\n", r, w, c, ($4 - $2) / ($3 - $1)}' >>"$tmp/groups.tsv"
      [ "$st" = 0 ] || say "kernel_bench reported errors (see above)"
      # "workload","clients","requests","errors","seconds","rps","avg","min","p50","p95","p99","max"
      echo "$line" | tr -d '"' | awk -F, -v r="$r" -v cpu=$((k1 - k0 + w1 - w0)) \
        '{printf "%s\tjiti\t%s\t%s\t%s\t%s\t%s\t%.1f\n", r, $1, $2, $6, $9, $11, cpu / 1000 / ($3 + 50)}' >>"$raw"
    done
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- medians and the table
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
cell() {  # cell SYSTEM WORKLOAD CLIENTS COLUMN
  awk -F'\t' -v s="$1" -v w="$2" -v c="$3" -v k="$4" '$2 == s && $3 == w && $4 == c {print $k}' "$raw" | median
}
{
  echo "## kernel_bench: application calls over the socket vs redis PING"
  echo
  echo "- run: $started, $rounds round(s), \`bench/kernel_bench.sh --clients $clients --rounds $rounds --requests $requests --seconds $seconds --redis-requests $redis_requests --redis-set-requests $redis_set_requests --workloads $workloads$([ "$tmpfs" = 1 ] && echo ' --tmpfs')\`"
  echo "- machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(uname -sr); load average $load0 at the start, $load1 at the end"
  if [ "$jiti" = "$ROOT/build/jiti" ]; then jv="jiti $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo '+changes')"
  else jv="jiti: $jiti"; fi
  echo "- $jv, store on $([ "$tmpfs" = 1 ] && echo 'tmpfs (/dev/shm)' || echo "$(df -T "$tmp" | awk 'NR == 2 {print $2}') ($tmp)"); $(redis-server --version | cut -d' ' -f1-3): PING without persistence, SET with appendonly yes, appendfsync always, its file beside the store"
  echo "- one outstanding request per connection (redis-benchmark -P 1); medians over the rounds; ratio = jiti req/s ÷ redis PING_INLINE req/s at the same client count, and for the writing calls (write) ÷ redis SET (fsync always)"
  echo "- CPU µs/req: on-CPU time of the server processes (jiti: kernel + worker; redis: redis-server, both PING tests) per request"
  echo
  echo "| system | request | clients | req/s | p50 ms | p99 ms | CPU µs/req | ratio |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for c in "${CL[@]}"; do
    base=$(cell redis PING_INLINE "$c" 5)
    setbase=$(cell redis SET "$c" 5)
    for t in PING_INLINE PING_MBULK SET; do
      label=$t; [ "$t" = SET ] && label="SET (fsync always)"
      printf '| redis | %s | %s | %.0f | %.3f | %.3f | %.1f | |\n' "$label" "$c" "$(cell redis $t "$c" 5)" \
        "$(cell redis $t "$c" 6)" "$(cell redis $t "$c" 7)" "$(cell redis $t "$c" 8)"
    done
    for w in "${WL[@]}"; do
      rps=$(cell jiti "$w" "$c" 5)
      ratio=$(awk -v a="$rps" -v b="$base" 'BEGIN {if (b > 0) printf "%.4f", a / b; else print "–"}')
      [ "$w" = write ] && ratio="$ratio; ÷ SET $(awk -v a="$rps" -v b="$setbase" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "–"}')"
      printf '| jiti | call %s | %s | %.0f | %.3f | %.3f | %.1f | %s |\n' "$w" "$c" "$rps" \
        "$(cell jiti "$w" "$c" 6)" "$(cell jiti "$w" "$c" 7)" "$(cell jiti "$w" "$c" 8)" "$ratio"
    done
  done
  if [ -s "$tmp/groups.tsv" ]; then
    echo
    for c in "${CL[@]}"; do
      awk -F'\t' -v c="$c" '$2 == "write" && $3 == c {print $4}' "$tmp/groups.tsv" | median |
        awk -v c="$c" '{printf "Writing calls at %s client(s): %s revisions per group commit (median over the rounds).\n", c, $1}'
    done
  fi
  echo
  echo "Workloads: read = \`(world-get :counter)\`, write = \`(world-put :counter (1+ (or (world-get :counter) 0)))\` (publishes one revision per call), add = \`(+ 1 2)\`."
} >"$tmp/table.md"
cat "$tmp/table.md"
mkdir -p "$(dirname "$out")"
cp "$tmp/table.md" "$out"
say "written to $out"
