# tests/lib.sh — the assertion helpers shared by the shell test suites.
# Source it, run checks, and end with `finish` (prints "N passed, N failed"
# and returns non-zero when anything failed).
pass=0 fail=0

t() {  # t NAME EXPECTED-STATUS EXPECTED-OUTPUT-REGEX -- COMMAND...
  local name=$1 want=$2 re=$3; shift 4
  local out status
  out=$("$@" 2>&1); status=$?
  if [[ $status -eq $want && $out =~ $re ]]; then pass=$((pass+1));
  else fail=$((fail+1)); echo "FAIL $name: status $status (want $want), output: ${out:0:600}"; fi
}

t_until() {  # as t, retried for up to 10 s until it holds: for a state that
             # settles after the reply (a worker acknowledging its commit)
  local name=$1 want=$2 re=$3; shift 4
  local out status i
  for i in $(seq 100); do
    out=$("$@" 2>&1); status=$?
    [[ $status -eq $want && $out =~ $re ]] && { pass=$((pass+1)); return; }
    sleep 0.1
  done
  fail=$((fail+1)); echo "FAIL $name: status $status (want $want), output: ${out:0:600}"
}

# Kernels: the caller sets JITI, tmp (a directory of its own) and S (the
# store jfield reads), and calls kill_kernels when it ends (the pids are
# kept in "$tmp"/kpid.* too: they outlive a subshell's array).
kpids=()
start_kernel() {  # start_kernel DIR [--jiti BINARY] [OPTIONS...]: `jiti kernel` on DIR in the
                  # background (output appended to $tmp/kernel.log, pid in $kp) until it serves;
                  # 1 if it exited first or did not serve within 30 s (a sanitizer's or
                  # the GC-stress build on a loaded machine starts slowly)
  local dir=$1 bin=$JITI; shift
  if [[ ${1:-} == --jiti ]]; then bin=$2; shift 2; fi
  "$bin" kernel --store "$dir" "$@" >>"$tmp/kernel.log" 2>&1 &
  kp=$!
  kpids+=("$kp")
  echo "$kp" >"$tmp/kpid.$kp"
  for _ in $(seq 300); do
    "$JITI" status --store "$dir" >/dev/null 2>&1 && return 0
    kill -0 "$kp" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
kill_kernels() {  # every kernel start_kernel started, at once (for the caller's cleanup)
  for p in "${kpids[@]}" $(cat "$tmp"/kpid.* 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
}
jfield() {  # jfield FIELD: the integer FIELD of `jiti status --json` for $S
  "$JITI" status --json --store "$S" | sed -n "s/^ *\"$1\": \([0-9]*\),*$/\1/p"
}

ok() {  # ok NAME CONDITION-STATUS
  if [[ $2 -eq 0 ]]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $1"; fi
}

finish() {
  echo "$pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}
