#!/usr/bin/env bash
# The restarts of the errors the kernel signals itself, through a real
# kernel: an action calling an undefined function pauses with CONTINUE
# among its restarts; a repair defines the function; resuming with CONTINUE
# completes the call with the new definition and commits the action and
# the repair together.  An unbound variable resumed with USE-VALUE and
# STORE-VALUE likewise.
#   bash tests/restarts.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-restarts.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
gen() { jfield generation; }
restart_id() {  # restart_id NAME: the id the paused menu gives restart NAME
  "$JITI" observe --store "$S" | sed -n "s/^  \(p[0-9]*-[0-9]*\) *$1 .*/\1/p" | head -1
}

start_kernel "$S"; ok kernel-starts $?

# --- an undefined function: define it, CONTINUE
t undefined-pauses 0 "paused \(generation [0-9]+\): UNDEFINED-FUNCTION: The function NO-SUCH-FN is undefined.*
  p[0-9]+-0 +CONTINUE \(\) +Retry calling NO-SUCH-FN\.
  p[0-9]+-1 +USE-VALUE \(FUNCTION\) +Call specified function\.
  p[0-9]+-2 +RETURN-VALUE \(&REST VALUES\) +Return specified values\.
  p[0-9]+-3 +RETURN-NOTHING \(\) +Return zero values\." -- \
  "$JITI" act --store "$S" --generation "$(gen)" --evaluate '(progn (world-put :before 1) (list (no-such-fn 1) (world-put :after 2)))'
id=$(restart_id CONTINUE)
g=$(gen)
t undefined-repair 0 "repair value: NO-SUCH-FN" -- \
  "$JITI" act --store "$S" --generation "$g" --evaluate '(defun no-such-fn (x) (* x 10))'
t undefined-continue 0 "^\(10 2\)
accepted" -- "$JITI" act --store "$S" --generation "$(gen)" --resume "$id"
t undefined-committed 0 "^\(1 2 20\)$" -- "$JITI" eval --store "$S" '(list (world-get :before) (world-get :after) (no-such-fn 2))'

# CONTINUE while the function is still undefined pauses again, with the restarts again
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(other-fn 1)' >/dev/null
t undefined-continue-again 0 "paused .*UNDEFINED-FUNCTION.*CONTINUE" -- \
  "$JITI" act --store "$S" --generation "$(gen)" --resume "$(restart_id CONTINUE)"
t undefined-use-value 0 "^\(1\)
accepted" -- "$JITI" act --store "$S" --generation "$(gen)" --resume "$(restart_id USE-VALUE)" --args "#'list"
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(other-fn 2)' >/dev/null
t undefined-return-value 0 "^:GIVEN
accepted" -- "$JITI" act --store "$S" --generation "$(gen)" --resume "$(restart_id RETURN-VALUE)" --args :given

# --- an unbound variable: USE-VALUE, then STORE-VALUE (which sets it)
t unbound-pauses 0 "UNBOUND-VARIABLE: The variable \*RS-VAR\* is unbound.*
  p[0-9]+-0 +CONTINUE \(\) +Retry using \*RS-VAR\*\.
  p[0-9]+-1 +USE-VALUE \((JITI::)?VALUE\) +Use specified value\.
  p[0-9]+-2 +STORE-VALUE \((JITI::)?VALUE\) +Set specified value and use it\." -- \
  "$JITI" act --store "$S" --generation "$(gen)" --evaluate '(+ *rs-var* 1)'
t unbound-use-value 0 "^6
accepted" -- "$JITI" act --store "$S" --generation "$(gen)" --resume "$(restart_id USE-VALUE)" --args 5
t unbound-still-unbound 0 "^NIL$" -- "$JITI" eval --store "$S" "(boundp '*rs-var*)"
"$JITI" act --store "$S" --generation "$(gen)" --evaluate '(+ *rs-var* 1)' >/dev/null
t unbound-store-value 0 "^8
accepted" -- "$JITI" act --store "$S" --generation "$(gen)" --resume "$(restart_id STORE-VALUE)" --args 7
t unbound-stored 0 "^7$" -- "$JITI" eval --store "$S" '*rs-var*'

if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error" "$tmp/kernel.log"; then
  fail=$((fail+1)); echo "FAIL sanitizer reports in the kernel log:"; grep -E -A20 "Sanitizer|runtime error" "$tmp/kernel.log" | head -60
else pass=$((pass+1)); fi

finish
