#!/usr/bin/env bash
# Events benchmark: what a call costs the store, and what a kernel's
# start-up costs once a million calls have been recorded.
#
#   bench/events_bench.sh [--calls N] [--million N] [--runs R] [--before DIR] [--jiti PATH]
#
# 1. Bytes per call: a kernel on a fresh store serves N keyed read-only
#    calls, then N more twice (after 10,000 keys the key records replace
#    the oldest: the steady state), then N keyed writing calls, from one
#    pipelined client (as `jiti eval` sends them: each with a random key);
#    between phases the kernel is stopped and the store measured
#    (bench/events_bench.c stat: events, tree bytes, data.mdb's size).
# 2. Start-up: stores holding --million calls built straight through the
#    store API (bench/events_bench.c build) as this version's kernel records
#    them, and --million calls' events (acts, writing calls: a store whose
#    events grew before a retention bound); `jiti kernel --detach` (it
#    returns once it serves) then `jiti stop`, timed --runs times (median).
# --before DIR measures an older version the same way: DIR holds its jiti,
# libjitistore.a, libjitijson.a and its store/ and json/ headers (the
# benchmark program is compiled against them); its million-call store is
# also started by this version (the one-time migration, then the starts
# after it).  Figures: docs/benchmarks.md, "Events".
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
calls=20000 million=1000000 runs=3 before="" jiti="$ROOT/build/jiti"
while [ $# -gt 0 ]; do
  case $1 in
    --calls) calls=$2; shift 2 ;;
    --million) million=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    --jiti) jiti=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "events_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bench_now="$ROOT/build/store/events_bench"
[ -x "$jiti" ] && [ -x "$bench_now" ] || { echo "events_bench.sh: build first (build/jiti, build/store/events_bench)" >&2; exit 1; }
tmp=$(mktemp -d)
cleanup() {
  for d in "$tmp"/*/; do [ -S "$d/kernel.sock" ] && "$jiti" stop --store "$d" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT

versions=("now:$jiti:$bench_now")
if [ -n "$before" ]; then
  cc -O2 -I"$before/store" -I"$before/json" "$HERE/events_bench.c" "$before/libjitistore.a" "$before/libjitijson.a" \
     -llmdb -lcrypto -ljansson -o "$tmp/events_bench.before"
  versions=("before:$before/jiti:$tmp/events_bench.before" "${versions[@]}")
fi

# calls KIND N STORE: N calls from one pipelined client (200 in flight), each
# with a random key; KIND read: (world-get :n), write: (world-put :n i)
calls() {
  /usr/bin/python3 - "$1" "$2" "$3/kernel.sock" <<'PY'
import json, os, socket, sys
kind, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_UNIX); s.connect(path)
f = s.makefile('rb')
sent = got = 0
def send(i):
    src = '(world-get :n)' if kind == 'read' else '(world-put :n %d)' % i
    s.sendall(json.dumps({'op': 'call', 'id': i, 'source': src, 'key': os.urandom(12).hex()}).encode() + b'\n')
while got < n:
    while sent < n and sent - got < 200:
        send(sent); sent += 1
    r = json.loads(f.readline())
    if not r.get('ok'): sys.exit('call failed: %s' % r)
    got += 1
PY
}

stat() { "$2" stat "$1"; }
field() { sed -n "s/.* $1 \([0-9-]*\).*/\1/p; s/^$1 \([0-9-]*\).*/\1/p" | head -1; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
start_time() {  # start_time JITI STORE: seconds until the kernel serves
  local t0 t1
  t0=$(date +%s.%N)
  "$1" kernel --store "$2" --detach >/dev/null
  t1=$(date +%s.%N)
  "$1" stop --store "$2" >/dev/null
  echo "$t1 - $t0" | bc -l | awk '{ printf "%.2f\n", $1 }'
}

echo "# events benchmark: $calls calls per phase, start-up at $million calls, $runs runs ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
for v in "${versions[@]}"; do
  IFS=: read -r name bin eb <<<"$v"
  S="$tmp/$name-percall"
  "$bin" kernel --store "$S" --detach >/dev/null
  calls write 1 "$S"
  "$bin" stop --store "$S" >/dev/null
  prev=$(stat "$S" "$eb")
  echo
  echo "## $name ($bin)"
  echo "| phase | events added | tree bytes per call | data.mdb bytes per call |"
  echo "|---|---|---|---|"
  for phase in read read read write; do
    "$bin" kernel --store "$S" --detach >/dev/null
    calls "$phase" "$calls" "$S"
    "$bin" stop --store "$S" >/dev/null
    cur=$(stat "$S" "$eb")
    e0=$(field events <<<"$prev") e1=$(field events <<<"$cur")
    t0=$(field tree_bytes <<<"$prev") t1=$(field tree_bytes <<<"$cur")
    f0=$(field file_bytes <<<"$prev") f1=$(field file_bytes <<<"$cur")
    echo "| $calls $phase calls | $((e1 - e0)) | $(( (t1 - t0) / calls )) | $(( (f1 - f0) / calls )) |"
    prev=$cur
  done
  echo
  echo "| store at $million calls | events | tree MiB | start-up, s (median of $runs) |"
  echo "|---|---|---|---|"
  for how in calls events; do
    M="$tmp/$name-million-$how"
    [ "$name" = before ] && [ "$how" = events ] && continue   # the same store as its calls
    "$eb" build "$M" "$million" $([ "$how" = events ] && echo --events) >/dev/null
    st=$(stat "$M" "$eb")
    times=$(for i in $(seq "$runs"); do start_time "$bin" "$M"; done | median)
    echo "| $how ($( [ "$how" = calls ] && echo "as $name's kernel records them" || echo "every call's two events, no key")) | $(field events <<<"$st") | $(( $(field tree_bytes <<<"$st") >> 20 )) | $times |"
  done
  if [ "$name" = now ] && [ -n "$before" ]; then
    cp -a "$tmp/before-million-calls" "$tmp/migrated"
    first=$(start_time "$bin" "$tmp/migrated")
    times=$(for i in $(seq "$runs"); do start_time "$bin" "$tmp/migrated"; done | median)
    echo "| before's store, this version: the first start (its migration), then | $(field events <<<"$(stat "$tmp/migrated" "$eb")") | | $first, then $times |"
  fi
done
