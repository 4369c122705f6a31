#!/usr/bin/env bash
# Controller CPU per session step, the model's own time excluded: `jiti
# session` against the loopback model server (tests/model_server.py answers
# at once) and a running kernel, side by side with curl making the same
# HTTP requests in the same run.
#
#   bench/session_bench.sh [--steps N] [--rounds N] [--jiti PATH] [--out FILE]
#
# Each round, for each client configuration, runs one session of N steps
# (every step a `preview` the kernel answers; the goal never holds, so the
# step budget ends it) under /usr/bin/time and reports the session
# process's user+system CPU divided by the steps, and the kernel round trips
# per step (from the session's recorded end).  The peer: one curl process
# POSTing the last request body the session sent, N times over one kept-alive
# connection (--next), to the same server; its CPU per request is what bare
# HTTP costs.  Medians over the rounds, as a markdown table on stdout and in
# --out (default bench/results/session-latest.md).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
steps=100
rounds=3
jiti="$ROOT/build/jiti"
out="$HERE/results/session-latest.md"

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --jiti) jiti=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "session_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -x "$jiti" ] || { echo "session_bench.sh: no jiti at $jiti (make build)" >&2; exit 1; }
command -v curl >/dev/null || { echo "session_bench.sh: needs curl" >&2; exit 1; }

tmp=$(mktemp -d)
store="$tmp/store"
cleanup() {
  "$jiti" stop --store "$store" >/dev/null 2>&1
  [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

"$jiti" kernel --store "$store" --detach >/dev/null || exit 1
python3 "$ROOT/tests/model_server.py" --port-file "$tmp/port" >/dev/null &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
base="http://127.0.0.1:$port/v1"
ctl() { curl -s -X POST --data "$2" "http://127.0.0.1:$port$1" >/dev/null; }
queue_previews() { ctl /_reset '{}'; ctl /_queue '[{"kind":"action","repeat":-1,"action":{"type":"preview","source":"(+ 1 2)"}}]'; }

script="$tmp/previews.jsonl"
for _ in $(seq "$steps"); do echo '{"type":"preview","source":"(+ 1 2)"}'; done > "$script"

# one session; prints "cpu_ms_per_step round_trips_per_step"
run_session() {  # run_session LABEL ARGS...
  local label=$1; shift
  queue_previews
  local t
  /usr/bin/time -o "$tmp/time" -f '%U %S' env OPENAI_API_KEY=sk-bench-not-a-real-key-000 OPENAI_BASE_URL="$base" \
    OPENAI_MODEL=bench "$jiti" session --store "$store" --request "$label" --goal '(fboundp (quote never))' \
    --budget "$steps" --quiet "$@" >/dev/null 2>&1
  t=$(tail -1 "$tmp/time")
  local end
  end=$("$jiti" sessions --store "$store" --json | python3 -c '
import json, subprocess, sys
n = len(json.load(sys.stdin))
ev = json.loads(subprocess.run([sys.argv[1], "sessions", "show", str(n), "--store", sys.argv[2], "--json"],
                               capture_output=True, text=True).stdout)
e = [x for x in ev if x["event"] == "session-end"][0]
print(e["steps"], e["kernel_calls"])' "$jiti" "$store")
  set -- $t $end
  [ $# -eq 4 ] || { echo "session_bench.sh: $label failed (time: $t; end: $end)" >&2; echo "- -"; return; }
  awk -v u="$1" -v s="$2" -v n="$3" -v k="$4" 'BEGIN { printf "%.3f %.2f\n", (u + s) * 1000 / n, (k - 1) / n }'
}

# the peer: curl POSTing the session's last request body steps times on one connection
run_curl() {
  local body="$tmp/body.json"
  curl -s -X POST --data '{}' "http://127.0.0.1:$port/_log" | python3 -c '
import json, sys
log = [r for r in json.load(sys.stdin) if r["path"] == "/v1/responses"]
json.dump(log[-1]["body"], open(sys.argv[1], "w"))' "$body"
  queue_previews
  local args=() i
  for i in $(seq "$steps"); do
    [ "$i" -gt 1 ] && args+=(--next)
    args+=(-s -o /dev/null -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-bench' --data-binary "@$body"
           "$base/responses")
  done
  /usr/bin/time -o "$tmp/time" -f '%U %S' curl "${args[@]}" >/dev/null 2>&1
  tail -1 "$tmp/time" | awk -v n="$steps" '{ printf "%.3f -\n", ($1 + $2) * 1000 / n }'
}

configs=(openai-plain openai-stream chat-stream scripted curl-peer)
declare -A res
for r in $(seq "$rounds"); do
  echo "session_bench.sh: round $r of $rounds ($steps steps per session)" >&2
  res[openai-plain]+="$(run_session openai-plain --no-stream)"$'\n'
  res[openai-stream]+="$(run_session openai-stream --stream)"$'\n'
  res[chat-stream]+="$(run_session chat-stream --chat --stream)"$'\n'
  res[scripted]+="$(run_session scripted --scripted "$script")"$'\n'
  run_session openai-plain-for-body --no-stream >/dev/null   # the body curl sends
  res[curl-peer]+="$(run_curl)"$'\n'
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
peer=$(printf '%s' "${res[curl-peer]}" | awk '{print $1}' | median)
{
  echo "| client | controller CPU per step (ms, median) | kernel round trips per step | ratio to curl's CPU per request |"
  echo "|---|---|---|---|"
  for c in "${configs[@]}"; do
    cpu=$(printf '%s' "${res[$c]}" | awk '{print $1}' | median)
    trips=$(printf '%s' "${res[$c]}" | awk '{print $2}' | median)
    ratio=$(awk -v a="$cpu" -v b="$peer" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
    echo "| $c | $cpu | $trips | $ratio |"
  done
  echo
  echo "$steps steps per session, $rounds rounds, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores."
} | tee "$out"
