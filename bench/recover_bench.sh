#!/usr/bin/env bash
# Recovery benchmark: `jiti recover-session` on a store holding 10,000
# definitions and 100,000 data rows, side by side with SBCL loading the same
# 10,000 definitions from source (`sbcl --script`).
#
#   bench/recover_bench.sh [--runs N] [--defs N] [--rows N] [--jiti PATH] [--keep DIR]
#                          [--compare PATH] [--no-sbcl]
#
# Builds the store with `jiti init` + `jiti apply` of a generated file (in parts),
# then times N interleaved runs of each (median wall and CPU time, CPU being
# user + system of all processes) and prints them and the ratios.
# --compare PATH also times another jiti binary (say, a build of an older
# commit) on the same store, in the same rounds.  Target:
# recovery <= 0.5 s.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
runs=7 defs=10000 rows=100000 jiti="$ROOT/build/jiti" keep="" compare="" use_sbcl=1
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --defs) defs=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --jiti) jiti=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --no-sbcl) use_sbcl=0; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "recover_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$jiti" ] || { echo "recover_bench.sh: no jiti binary at $jiti (build first)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
store=${keep:-$tmp/store}
rm -rf "$store"

# The definitions (shared by both sides) and the data rows (jiti only).
awk -v n="$defs" 'BEGIN {
  for (i = 0; i < n; i++)
    printf "(defun f%d (x) (if (> x %d) (* 2 (+ x %d)) (list :small x %d)))\n", i, i, i, i;
}' > "$tmp/defs.lisp"
{ cat "$tmp/defs.lisp"
  echo "(dotimes (i $rows) (world-put i (list i (* i i) \"row\")))"; } > "$tmp/world.lisp"
{ cat "$tmp/defs.lisp"; echo "(format t \"~d~%\" (f$((defs - 1)) $defs))"; } > "$tmp/sbcl.lisp"
{ echo "(setf sb-ext:*evaluator-mode* :interpret)"; cat "$tmp/sbcl.lisp"; } > "$tmp/sbcl-interp.lisp"

"$jiti" init --store "$store" >/dev/null
t0=$(date +%s.%N)
# in parts of 2,000 forms: one apply is a form the gate checks whole, and a
# form may have at most 200,000 parts
split -l 2000 -d -a 3 "$tmp/world.lisp" "$tmp/part-"
for part in "$tmp"/part-*; do
  "$jiti" apply --store "$store" --summary "benchmark world" "$part" >/dev/null
done
t1=$(date +%s.%N)
printf 'built the store: %d definitions + %d data rows, apply took %.2f s, data.mdb %s\n' \
  "$defs" "$rows" "$(echo "$t1 - $t0" | bc)" "$(du -h "$store/data.mdb" | cut -f1)"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
time_one() {  # prints "wall cpu" seconds of "$@"; cpu = user + system, children included
  local TIMEFORMAT='%3R %3U %3S' out
  out=$( { time "$@" >/dev/null 2>/dev/null; } 2>&1 )
  echo "$out" | awk '{printf "%.3f %.3f\n", $1, $2 + $3}'
}
"$jiti" recover-session --store "$store" | sed -n '2,4p'
echo "phases of one run (JITI_TIMING=1; wall and per-process CPU):"
JITI_TIMING=1 "$jiti" recover-session --store "$store" 2>&1 >/dev/null | sed 's/^/  /'
sbcl_runs=$((runs < 3 ? runs : 3))
have_sbcl=$(command -v sbcl >/dev/null && [ $use_sbcl = 1 ] && echo 1 || echo 0)
jt=() jo=() sb=() si=()
for ((r = 0; r < runs; r++)); do   # interleaved rounds
  jt+=("$(time_one "$jiti" recover-session --store "$store")")
  [ -n "$compare" ] && jo+=("$(time_one "$compare" recover-session --store "$store")")
  if [ "$have_sbcl" = 1 ]; then
    si+=("$(time_one sbcl --script "$tmp/sbcl-interp.lisp")")
    [ $r -lt $sbcl_runs ] && sb+=("$(time_one sbcl --script "$tmp/sbcl.lisp")")
  fi
done
col() { printf '%s\n' "${@:2}" | awk -v c="$1" '{print $c}' | median; }   # col N runs...
jm=$(col 1 "${jt[@]}") jc=$(col 2 "${jt[@]}")
printf '\nload average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n| measure | runs | median wall s | median CPU s (user+sys) | jiti / this (wall) |\n|---|---|---|---|---|\n'
printf '| jiti recover-session (%d defs + %d rows: verify, import, invariants, mark) | %d | %.3f | %.3f | |\n' "$defs" "$rows" "$runs" "$jm" "$jc"
if [ -n "$compare" ]; then
  om=$(col 1 "${jo[@]}") oc=$(col 2 "${jo[@]}")
  printf '| %s recover-session (the same store) | %d | %.3f | %.3f | %.2f |\n' "$compare" "$runs" "$om" "$oc" "$(echo "$jm / $om" | bc -l)"
fi
if [ "$have_sbcl" = 1 ]; then
  im=$(col 1 "${si[@]}") ic=$(col 2 "${si[@]}")
  sm=$(col 1 "${sb[@]}") sc=$(col 2 "${sb[@]}")
  printf '| sbcl --script, %d defs from source, *evaluator-mode* :interpret | %d | %.3f | %.3f | %.2f |\n' "$defs" "$runs" "$im" "$ic" "$(echo "$jm / $im" | bc -l)"
  printf '| sbcl --script, %d defs from source (compiles each defun) | %d | %.3f | %.3f | %.2f |\n' "$defs" "$sbcl_runs" "$sm" "$sc" "$(echo "$jm / $sm" | bc -l)"
fi
printf '| target for jiti | | <= 0.500 | | |\n'
