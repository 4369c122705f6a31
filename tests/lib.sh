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

ok() {  # ok NAME CONDITION-STATUS
  if [[ $2 -eq 0 ]]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $1"; fi
}

finish() {
  echo "$pass passed, $fail failed"
  [[ $fail -eq 0 ]]
}
