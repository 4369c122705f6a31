#!/usr/bin/env bash
# jiti interpreter benchmark runner.
#
#   bench/run.sh [--rounds N] [--quick] [--only prog,...] [--peers impl,...]
#                [--timeout SECONDS] [--jiti PATH] [--out FILE]
#
# Runs every (program, implementation) pair interleaved round by round
# (round 1: all pairs, round 2: all pairs, ...), measures wall time and peak
# RSS with /usr/bin/time, checks each program's printed result, and prints
# markdown tables (median seconds, peak MiB, peer/jiti ratios).  The tables
# are also written to bench/results/latest.md (or --out FILE), the raw
# measurements to bench/results/latest-raw.tsv.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

ALL_PROGS=(fib tak list hash strings defuns startup calls dispatch combo eqlspec instances)
ALL_PEERS=(jiti sbcl sbcl-interp clisp ecl guile lua)

declare -A EXPECTED=(
  [fib]=832040
  [tak]=455
  [list]=2500002500000
  [hash]=499999500000
  [strings]=2088890
  [defuns]=10000
  [startup]=3
  [calls]=1999999
  [dispatch]=1999999
  [combo]=3000000
  [eqlspec]=2500000
  [instances]=800000
)

rounds=5
timeout_s=120
only=""
peers=""
jiti="$ROOT/build/jiti"
out="$HERE/results/latest.md"

usage() { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rounds)  rounds=${2:?}; shift 2 ;;
    --rounds=*) rounds=${1#*=}; shift ;;
    --quick)   rounds=1; shift ;;
    --only)    only=${2:?}; shift 2 ;;
    --only=*)  only=${1#*=}; shift ;;
    --peers)   peers=${2:?}; shift 2 ;;
    --peers=*) peers=${1#*=}; shift ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --jiti)    jiti=${2:?}; shift 2 ;;
    --jiti=*)  jiti=${1#*=}; shift ;;
    --out)     out=${2:?}; shift 2 ;;
    --out=*)   out=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

case "$rounds" in ''|*[!0-9]*|0) echo "run.sh: --rounds needs a positive integer" >&2; exit 2 ;; esac
case "$jiti" in /*) ;; *) jiti="$PWD/$jiti" ;; esac

if [ ! -x /usr/bin/time ]; then
  echo "run.sh: /usr/bin/time (GNU time) is required (apt-get install time)" >&2
  exit 2
fi

split_list() { tr ',' ' ' <<<"$1"; }

PROGS=()
if [ -n "$only" ]; then
  for p in $(split_list "$only"); do
    [ -n "${EXPECTED[$p]+x}" ] || { echo "run.sh: unknown program '$p' (known: ${ALL_PROGS[*]})" >&2; exit 2; }
    PROGS+=("$p")
  done
else
  PROGS=("${ALL_PROGS[@]}")
fi

PEERS=()
if [ -n "$peers" ]; then
  for i in $(split_list "$peers"); do
    case " ${ALL_PEERS[*]} " in *" $i "*) PEERS+=("$i") ;;
      *) echo "run.sh: unknown implementation '$i' (known: ${ALL_PEERS[*]})" >&2; exit 2 ;; esac
  done
else
  PEERS=("${ALL_PEERS[@]}")
fi

# --- availability ------------------------------------------------------
declare -A AVAIL
peer_available() {
  case "$1" in
    jiti)                [ -x "$jiti" ] ;;
    sbcl|sbcl-interp)    command -v sbcl >/dev/null 2>&1 ;;
    clisp)               command -v clisp >/dev/null 2>&1 ;;
    ecl)                 command -v ecl >/dev/null 2>&1 ;;
    guile)               command -v guile >/dev/null 2>&1 ;;
    lua)                 command -v lua5.4 >/dev/null 2>&1 ;;
  esac
}
for i in "${PEERS[@]}"; do
  if peer_available "$i"; then AVAIL[$i]=1; else AVAIL[$i]=0; echo "run.sh: $i not available, reported as n/a" >&2; fi
done

# --- sources -------------------------------------------------------------
need_gen=0
for p in "${PROGS[@]}"; do [ "$p" = defuns ] && need_gen=1; done
if [ $need_gen = 1 ]; then
  "$HERE/gen.sh" 10000 || { echo "run.sh: gen.sh failed" >&2; exit 2; }
fi

src_for() { # prog ext
  if [ "$1" = defuns ]; then echo "$HERE/gen/defuns.$2"; else echo "$HERE/programs/$1.$2"; fi
}

# Whether impl has a version of prog (the CLOS programs exist in Lisp only).
has_source() { # impl prog
  case "$1" in
    guile) [ -f "$(src_for "$2" scm)" ] ;;
    lua)   [ -f "$(src_for "$2" lua)" ] ;;
    *)     true ;;
  esac
}

# Sets the array CMD to the command line for (impl, prog).
cmd_for() {
  local impl=$1 prog=$2
  case "$impl" in
    jiti)        CMD=("$jiti" run "$(src_for "$prog" lisp)") ;;
    sbcl)        CMD=(sbcl --script "$(src_for "$prog" lisp)") ;;
    sbcl-interp) CMD=(sbcl --noinform --non-interactive --no-sysinit --no-userinit
                      --eval '(setf sb-ext:*evaluator-mode* :interpret)'
                      --load "$(src_for "$prog" lisp)") ;;
    clisp)       CMD=(clisp -q -norc "$(src_for "$prog" lisp)") ;;
    ecl)         CMD=(ecl --norc --shell "$(src_for "$prog" lisp)") ;;
    guile)       CMD=(env GUILE_AUTO_COMPILE=0 guile --no-auto-compile -s "$(src_for "$prog" scm)") ;;
    lua)         CMD=(lua5.4 "$(src_for "$prog" lua)") ;;
  esac
}

# --- measurement -------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jiti-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'echo; echo "run.sh: interrupted" >&2; exit 130' INT TERM

# The jiti binary may be rebuilt while the benchmark runs: measure a private
# copy (bench/gen/jiti-snapshot; /tmp may be noexec) so every round times
# the same build (the prelude is embedded in it).
jiti_orig=$jiti
jiti_sum=""
if [ "${AVAIL[jiti]:-0}" = 1 ]; then
  mkdir -p "$HERE/gen" && cp "$jiti" "$HERE/gen/jiti-snapshot" && jiti="$HERE/gen/jiti-snapshot"
  jiti_sum=$(sha256sum "$jiti" | cut -c1-12)
fi

declare -A TIMES RSS STATUS NOTE CPUS
mkdir -p "$(dirname "$out")"
raw="${out%.md}-raw.tsv"
printf 'round\tprogram\timpl\tseconds\ttime_%%e\tpeak_kib\tstatus\n' > "$raw"

oneline() { tr '\n' ' ' | sed 's/ *$//'; }
trim() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | sed -e '/^$/d'; }

run_one() { # round prog impl
  local r=$1 prog=$2 impl=$3 key="$2/$3"
  cmd_for "$impl" "$prog"
  local so="$TMP/out" se="$TMP/err" tf="$TMP/time"
  local t0 t1
  t0=$EPOCHREALTIME
  (cd "$ROOT" && exec /usr/bin/time -f '%e %M %U %S' -o "$tf" \
      timeout -k 5 "$timeout_s" "${CMD[@]}" </dev/null >"$so" 2>"$se")
  local rc=$?
  t1=$EPOCHREALTIME
  local line esecs secs kib
  line=$(tail -n 1 "$tf" 2>/dev/null)
  local usr sys cpu
  read -r esecs kib usr sys <<<"$line"
  # CPU seconds (user + system): far less sensitive to other load than wall
  cpu=$(awk -v u="${usr:-0}" -v s="${sys:-0}" 'BEGIN{c = u + s; if (c < 0.001) c = 0.001; printf "%.3f", c}')
  # wall time in ms resolution (GNU time's %e only has 10 ms), minus the
  # wrapper overhead; %e is kept in the raw file as a cross-check
  secs=$(awk -v a="${t0/,/.}" -v b="${t1/,/.}" -v o="$OVERHEAD" \
    'BEGIN{d = b - a - o; if (d < 0.001) d = 0.001; printf "%.3f", d}')
  local got status=ok
  got=$(trim <"$so")
  local note=""
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    status=TIMEOUT
    note="timed out after ${timeout_s}s (round $r)"
  elif [ $rc -ne 0 ]; then
    status=FAIL
    note="exit status $rc (round $r); stderr: $(head -c 300 "$se" | oneline)"
  elif [ "$got" != "${EXPECTED[$prog]}" ]; then
    status=FAIL
    note="wrong output (round $r): expected ${EXPECTED[$prog]}, got '$(head -c 200 <<<"$got" | oneline)'; stderr: $(head -c 300 "$se" | oneline)"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$prog" "$impl" "$secs" "$esecs" "$kib" "$status" >> "$raw"
  # a failure in any round marks the cell; keep the first reason
  if [ "$status" != ok ]; then
    if [ "${STATUS[$key]:-ok}" = ok ]; then STATUS[$key]=$status; NOTE[$key]=$note; fi
  else
    TIMES[$key]="${TIMES[$key]:-} $secs"
    CPUS[$key]="${CPUS[$key]:-} $cpu"
    RSS[$key]="${RSS[$key]:-} $kib"
    : "${STATUS[$key]:=ok}"
  fi
  printf '[round %d/%d] %-8s %-12s %7ss %7.1f MiB  %s\n' "$r" "$rounds" "$prog" "$impl" \
    "$secs" "$(awk -v k="${kib:-0}" 'BEGIN{printf "%.1f", k/1024}')" "$status" >&2
}

# Process creation is slow on some machines (several ms per exec), and the
# /usr/bin/time + timeout wrappers cost two extra execs per run.  Measure that
# overhead once (wrapped /bin/true minus bare /bin/true, medians of 15) and
# subtract it from every wall time, so only the measured program's own
# start-up is counted.
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {
  if (NR == 0) exit; if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
elapsed() { awk -v a="${1/,/.}" -v b="${2/,/.}" 'BEGIN{printf "%.6f", b-a}'; }
calibrate() {
  local i t0 t1 wrap="" bare=""
  for ((i = 0; i < 15; i++)); do
    t0=$EPOCHREALTIME
    (cd "$ROOT" && exec /usr/bin/time -f '%e %M' -o "$TMP/time" \
        timeout -k 5 "$timeout_s" /bin/true </dev/null >"$TMP/out" 2>"$TMP/err")
    t1=$EPOCHREALTIME; wrap+=" $(elapsed "$t0" "$t1")"
    t0=$EPOCHREALTIME
    (cd "$ROOT" && exec /bin/true </dev/null >"$TMP/out" 2>"$TMP/err")
    t1=$EPOCHREALTIME; bare+=" $(elapsed "$t0" "$t1")"
  done
  awk -v w="$(median <<<"$wrap")" -v b="$(median <<<"$bare")" \
    'BEGIN{d = w - b; if (d < 0) d = 0; printf "%.6f", d}'
}
OVERHEAD=$(calibrate)
echo "run.sh: wrapper overhead $(awk -v o="$OVERHEAD" 'BEGIN{printf "%.1f", o*1000}') ms per run (subtracted)" >&2

for ((r = 1; r <= rounds; r++)); do
  for prog in "${PROGS[@]}"; do
    for impl in "${PEERS[@]}"; do
      [ "${AVAIL[$impl]}" = 1 ] || continue
      has_source "$impl" "$prog" || continue
      # a pair that timed out once is not re-run (it would only cost time)
      [ "${STATUS[$prog/$impl]:-ok}" = TIMEOUT ] && continue
      run_one "$r" "$prog" "$impl"
    done
  done
done

# --- tables --------------------------------------------------------------

declare -A MED_T MED_M MED_C
cell_time() { # prog impl -> text
  local key="$1/$2"
  if [ "${AVAIL[$2]}" != 1 ] || ! has_source "$2" "$1"; then echo "n/a"; return; fi
  case "${STATUS[$key]:-}" in
    ok) printf '%.3f' "${MED_T[$key]}" ;;
    TIMEOUT) echo "TIMEOUT" ;;
    FAIL) echo "FAIL" ;;
    *) echo "–" ;;
  esac
}
for prog in "${PROGS[@]}"; do
  for impl in "${PEERS[@]}"; do
    key="$prog/$impl"
    if [ "${STATUS[$key]:-}" = ok ]; then
      MED_T[$key]=$(median <<<"${TIMES[$key]}")
      MED_M[$key]=$(median <<<"${RSS[$key]}")
      MED_C[$key]=$(median <<<"${CPUS[$key]}")
    fi
  done
done

header() {
  local h="| program |" s="|---|"
  for impl in "${PEERS[@]}"; do h+=" $impl |"; s+="---:|"; done
  echo "$h"; echo "$s"
}

ratio_table() {  # ratio_table MEDIANS: peer / jiti per program (MED_T or MED_C)
  local -n med=$1
  local prog impl key jkey row
  header
  for prog in "${PROGS[@]}"; do
    row="| $prog |"
    jkey="$prog/jiti"
    for impl in "${PEERS[@]}"; do
      key="$prog/$impl"
      if [ "${AVAIL[$impl]}" != 1 ] || ! has_source "$impl" "$prog"; then row+=" n/a |"
      elif [ "${STATUS[$jkey]:-}" != ok ]; then row+=" – |"
      elif [ "${STATUS[$key]:-}" != ok ]; then row+=" $(cell_time "$prog" "$impl") |"
      else
        row+=" $(awk -v a="${med[$key]}" -v b="${med[$jkey]}" 'BEGIN{
          if (b <= 0) b = 0.0005; if (a <= 0) a = 0.0005; printf "%.2f", a/b }') |"
      fi
    done
    echo "$row"
  done
}

{
  echo "# jiti benchmark results"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
  echo "- rounds: $rounds (interleaved); timeout per run: ${timeout_s}s; cells are medians over successful rounds"
  if [ "${AVAIL[jiti]:-0}" = 1 ]; then
    echo "- jiti: $jiti_orig (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no commit'), binary sha256 $jiti_sum; snapshot copied at start)"
  fi
  echo "- versions: $(sbcl --version 2>/dev/null | head -1); $(clisp --version 2>/dev/null | head -1 | cut -d' ' -f1-3); ECL $(ecl --version 2>/dev/null | awk '{print $2}'); $(guile --version 2>/dev/null | head -1); $(lua5.4 -v 2>/dev/null | cut -d' ' -f1-2)"
  echo
  echo "## Wall time (median seconds; lower is better)"
  echo
  header
  for prog in "${PROGS[@]}"; do
    row="| $prog |"
    for impl in "${PEERS[@]}"; do row+=" $(cell_time "$prog" "$impl") |"; done
    echo "$row"
  done
  echo
  echo "## CPU time, user + system (median seconds; lower is better)"
  echo
  header
  for prog in "${PROGS[@]}"; do
    row="| $prog |"
    for impl in "${PEERS[@]}"; do
      key="$prog/$impl"
      if [ "${STATUS[$key]:-}" = ok ]; then row+=" ${MED_C[$key]} |"
      else row+=" $(cell_time "$prog" "$impl") |"; fi
    done
    echo "$row"
  done
  echo
  echo "## CPU time ratio peer / jiti (>1: jiti is faster)"
  echo
  ratio_table MED_C
  echo
  echo "## Peak RSS (median of per-run peak, MiB)"
  echo
  header
  for prog in "${PROGS[@]}"; do
    row="| $prog |"
    for impl in "${PEERS[@]}"; do
      key="$prog/$impl"
      if [ "${STATUS[$key]:-}" = ok ]; then
        row+=" $(awk -v k="${MED_M[$key]}" 'BEGIN{printf "%.1f", k/1024}') |"
      else
        row+=" $(cell_time "$prog" "$impl") |"
      fi
    done
    echo "$row"
  done
  echo
  echo "## Time ratio peer / jiti (>1: jiti is faster; <1: the peer is faster)"
  echo
  ratio_table MED_T
  if [ "${AVAIL[jiti]:-0}" != 1 ]; then
    echo
    echo "(jiti not built at $jiti: ratio table empty)"
  fi
  notes=0
  for prog in "${PROGS[@]}"; do
    for impl in "${PEERS[@]}"; do
      key="$prog/$impl"
      if [ -n "${NOTE[$key]:-}" ] && [ "${STATUS[$key]:-ok}" != ok ]; then
        [ $notes = 0 ] && { echo; echo "## Failures"; echo; }
        notes=1
        echo "- $prog / $impl: ${NOTE[$key]}"
      fi
    done
  done
  echo
  echo "Wall time: bash \$EPOCHREALTIME around /usr/bin/time + timeout minus the calibrated wrapper overhead ($(awk -v o="$OVERHEAD" 'BEGIN{printf "%.1f", o*1000}') ms), ms resolution; GNU time's own %e is in the raw .tsv; peak RSS: GNU time %M."
} > "$TMP/table.md"

cat "$TMP/table.md"
cp "$TMP/table.md" "$out"
echo "run.sh: tables written to $out, raw runs to $raw" >&2
