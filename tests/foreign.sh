#!/usr/bin/env bash
# Foreign functions through the real commands, on temporary stores: the
# operator's grant (--allow-foreign) on the offline commands and the kernel,
# the gate's refusal without it, the grant in status and in each revision's
# manifest (show), recovery where a library is not granted, does not open or
# lacks its symbol (the rest of the world recovers; calling the function says
# why; granting again repairs it), and a foreign call that crashes the worker
# (abort, a null-pointer write): only the worker dies, the transaction is
# interrupted, nothing it did is published, a fresh worker serves CURRENT.
# A grant is exactly its library: a function its dependency defines (libc's
# getpid through libm; probe_add through a library that only links the
# probe) is refused when declared and unavailable when recovered.  The
# worker gets none of the kernel's environment (a secret in it stays out of
# reach of a granted getenv), and what it writes on stderr reaches the log
# only as marked, escaped lines, at most so many a second.
#   bash tests/foreign.sh path/to/jiti path/to/libjitiprobe.so path/to/libjitiprobe_lean.so \
#     path/to/libjitiprobe_fwd.so
set -u
JITI=$1
PROBE=$2
LEAN=$3
FWD=$4
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-foreign.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
LOG=$tmp/kernel.log

stop_kernel() { "$JITI" stop --store "$S" >/dev/null; wait "$kp" 2>/dev/null; }
wait_idle() {  # until a fresh worker serves
  for _ in $(seq 300); do
    "$JITI" status --store "$S" 2>/dev/null | grep -q "state: *idle" && return 0
    sleep 0.1
  done
}

# A library of our own that the test can take away: declarations name it by path.
GONE=$tmp/libgone.so
cp "$PROBE" "$GONE"

# --- help and usage
for c in kernel apply rollback recover-session run; do
  t "help-$c" 0 "--allow-foreign LIB" -- "$JITI" $c --help
done
t help-invariant 0 "--allow-foreign LIB" -- "$JITI" invariant --help
t kernel-grant-needs-lib 2 "allow-foreign needs a library" -- "$JITI" kernel --store "$S" --allow-foreign
t apply-grant-needs-lib 2 "allow-foreign needs a library" -- "$JITI" apply --store "$S" -e 1 --allow-foreign
t apply-grant-empty 2 "needs a library name" -- "$JITI" apply --store "$S" -e 1 --allow-foreign ''
t worker-direct 2 "internal command" -- "$JITI" __worker --allow-foreign libm.so.6

# --- jiti run: a world of its own, granted on its command line
t run-granted 0 "^1.0d0$" -- "$JITI" run --allow-foreign libm.so.6 -e '(progn (define-foreign c "libm.so.6" "cos" :double (:double)) (c 0))'
t run-refused 1 "PROGRAM-ERROR: define-foreign: the library libm.so.6 is not granted.*--allow-foreign libm.so.6" \
  -- "$JITI" run -e '(define-foreign c "libm.so.6" "cos" :double (:double))'
t run-no-library 1 "jiti run: cannot open libnothere.so.9" -- "$JITI" run --allow-foreign libnothere.so.9 -e 1
t run-grant-needs-lib 2 "allow-foreign needs a library" -- "$JITI" run -e 1 --allow-foreign

# --- offline: refused without the grant, published with it
"$JITI" init --store "$S" >/dev/null
t apply-refused 1 "rejected-by-gate: define-foreign: the library libm.so.6 is not granted.*--allow-foreign libm.so.6.*nothing was published" \
  -- "$JITI" apply --store "$S" -e '(define-foreign my-cos "libm.so.6" "cos" :double (:double))'
t apply-granted 0 "revision 2 .*\+4" -- "$JITI" apply --store "$S" --allow-foreign libm.so.6 \
  --allow-foreign "$PROBE" --allow-foreign "$GONE" -e "
  (define-foreign my-cos \"libm.so.6\" \"cos\" :double (:double))
  (define-foreign padd \"$PROBE\" \"probe_add\" :int (:int :int))
  (define-foreign gadd \"$GONE\" \"probe_add\" :int (:int :int))
  (defun twice (x) (* 2 x))"
t apply-calls 0 "revision 3" -- "$JITI" apply --store "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" \
  -e '(world-put :sum (padd 40 2)) (world-put :cos (my-cos 0))'
t show-grant 0 "foreign grant:  libm.so.6 $PROBE $GONE" -- "$JITI" show 2 --store "$S"
t show-grant-2 0 "foreign grant:  libm.so.6 $PROBE"$'\n' -- "$JITI" show 3 --store "$S"
out=$("$JITI" show 1 --store "$S"); ok show-no-grant "$([[ $out != *"foreign grant"* ]]; echo $?)"
t invariant-granted 0 "revision 4" -- "$JITI" invariant add sum-ok '(= (padd 1 1) 2)' --store "$S" \
  --allow-foreign "$PROBE"
t recover-invariant-needs-grant 1 "an invariant fails.*PADD.*is not granted" -- "$JITI" recover-session --store "$S"

# --- recovery offline: a library not granted, a library gone, a symbol gone
t recover-all 0 "foreign functions 3\).*foreign: +libm.so.6 $PROBE $GONE granted" \
  -- "$JITI" recover-session --store "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE"
out=$("$JITI" recover-session --store "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" 2>"$tmp/err"); st=$?
ok recover-ungranted-status "$st"
t recover-ungranted-error 0 "error: foreign function GADD \(library $GONE, symbol probe_add\) is unavailable: .*--allow-foreign $GONE" -- cat "$tmp/err"
ok recover-ungranted-made-with "$([[ $out == *"libm.so.6 $PROBE granted; 1 problem (above); CURRENT was made with $PROBE"* ]]; echo $?)"
rm "$GONE"
"$JITI" recover-session --store "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE" >/dev/null 2>"$tmp/err"
ok recover-missing-status $?
t recover-missing-library 0 "the granted library $GONE did not open.*foreign function GADD \(library $GONE, symbol probe_add\) is unavailable" -- cat "$tmp/err"
cp "$LEAN" "$GONE"
"$JITI" recover-session --store "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE" >/dev/null 2>"$tmp/err"
ok recover-missing-symbol-status $?
t recover-missing-symbol 0 "foreign function GADD \(library $GONE, symbol probe_add\) is unavailable: .*probe_add" -- cat "$tmp/err"
# the symbol only in a library it depends on: not the grant's
cp "$FWD" "$GONE"
"$JITI" recover-session --store "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE" >/dev/null 2>"$tmp/err"
ok recover-dependency-symbol-status $?
t recover-dependency-symbol 0 "foreign function GADD \(library $GONE, symbol probe_add\) is unavailable: probe_add is not defined in $GONE \(it comes from libjitiprobe.so, granted as $PROBE: name that library in the declaration\)" -- cat "$tmp/err"
# a libc function through libm's grant, offline
cp "$LEAN" "$GONE"  # for the kernel below: a library that lacks the symbol
t apply-dependency-refused 1 "define-foreign: getpid is not defined in libm.so.6 \(it comes from libc.so.6, which is not granted\).*nothing was published" \
  -- "$JITI" apply --store "$S" --allow-foreign libm.so.6 -e '(define-foreign c-getpid "libm.so.6" "getpid" :int ())'

# --- the kernel: the grant in status; a missing symbol at its start
start_kernel "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE" --allow-foreign libnothere.so.9
ok kernel-starts $?
t status-grant 0 "foreign: +libm.so.6 $PROBE $GONE libnothere.so.9"$'\n'" +libnothere.so.9 did not open" \
  -- "$JITI" status --store "$S"
t status-json 0 '"granted": \[.*"libm.so.6"' -- "$JITI" status --json --store "$S"
t kernel-log-symbol 0 "error: foreign function GADD \(library $GONE, symbol probe_add\) is unavailable" -- cat "$LOG"
t kernel-log-library 0 "error: the granted library libnothere.so.9 did not open" -- cat "$LOG"
t kernel-rest-recovered 0 "^\(1.0d0 42 8\)$" -- "$JITI" eval --store "$S" '(list (my-cos 0) (world-get :sum) (twice 4))'
for sym in getpid system open write malloc syscall getenv; do
  t "kernel-dependency-$sym" 1 "define-foreign: $sym is not defined in libm.so.6 \(it comes from libc.so.6, which is not granted\)" \
    -- "$JITI" eval --store "$S" "(define-foreign c-$sym \"libm.so.6\" \"$sym\" :int ())"
done
t kernel-data-symbol 1 "signgam of libm.so.6 is not a function" \
  -- "$JITI" eval --store "$S" '(define-foreign sg "libm.so.6" "signgam" :int ())'
t kernel-unavailable-call 1 "GADD.*probe_add" -- "$JITI" eval --store "$S" '(gadd 1 2)'
t observe-unavailable 0 '"unavailable": \[.*"GADD"' -- "$JITI" observe --json --store "$S"
t observe-unavailable-text 0 "unavailable foreign function GADD: .*probe_add" -- "$JITI" observe --store "$S"
t inspect-unavailable 0 '"unavailable": ".*probe_add' -- "$JITI" inspect --json --store "$S" GADD
t inspect-unavailable-text 0 $'^foreign GADD\n.*\nunavailable: .*probe_add' -- "$JITI" inspect --store "$S" --kind foreign GADD
t apply-through-kernel 0 "--allow-foreign is ignored" -- "$JITI" apply --store "$S" --allow-foreign libm.so.6 -e '(twice 1)'
stop_kernel

# --- granted again (the library has its symbol again): the declaration works
cp "$PROBE" "$GONE"
start_kernel "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE"
ok kernel-regranted $?
t regranted-call 0 "^5$" -- "$JITI" eval --store "$S" '(gadd 2 3)'
out=$("$JITI" status --store "$S"); ok regranted-no-error "$([[ $out != *"did not open"* ]]; echo $?)"
# a declaration in a library the kernel does not grant: refused by the gate, naming the option
t kernel-gate-refuses 1 "not granted.*--allow-foreign libz.so.1" \
  -- "$JITI" eval --store "$S" '(define-foreign crc "libz.so.1" "crc32" :uint64 (:uint64 :string :int))'

# --- a new declaration's revision records the kernel's grant
t kernel-declares 0 "PFAULT" -- "$JITI" eval --store "$S" "(define-foreign pfault \"$PROBE\" \"probe_fault\" :int (:int))"
t kernel-show-grant 0 "foreign grant:  libm.so.6 $PROBE $GONE" -- "$JITI" show HEAD --store "$S"

# --- containment: a foreign call that aborts, one that writes through NULL
for how in 1 2; do
  rev=$(jfield revision); restarts=$(jfield worker_restarts); wpid=$(jfield worker_pid); kpid=$(jfield pid)
  t "crash-$how-interrupted" 1 "interrupted: the worker .* during attempt [0-9]+; nothing was published; the kernel is starting a fresh worker from revision $rev" \
    -- "$JITI" eval --store "$S" "(progn (world-put :crashed $how) (defun lost () 1) (pfault $how))"
  wait_idle
  ok "crash-$how-kernel-alive" "$([[ $(jfield pid) == "$kpid" ]]; echo $?)"
  ok "crash-$how-new-worker" "$([[ $(jfield worker_pid) != "$wpid" && $(jfield worker_restarts) == $((restarts + 1)) ]]; echo $?)"
  ok "crash-$how-nothing-published" "$([[ $(jfield revision) == "$rev" ]]; echo $?)"
  t "crash-$how-world-unchanged" 0 "^\(NIL NIL 3\)$" -- "$JITI" eval --store "$S" \
    '(list (world-get :crashed) (fboundp (quote lost)) (padd 1 2))'
done
t crash-events 0 "interrupted +attempt" -- "$JITI" events --store "$S" -n 20
stop_kernel

# --- kill -9 of the kernel: the next one re-creates every foreign entry
start_kernel "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE"
kill -9 "$kp"; wait "$kp" 2>/dev/null
start_kernel "$S" --allow-foreign libm.so.6 --allow-foreign "$PROBE" --allow-foreign "$GONE"
ok kernel-after-kill $?
t after-kill-calls 0 "^\(1.0d0 5 5 7\)$" -- "$JITI" eval --store "$S" '(list (my-cos 0) (padd 2 3) (gadd 2 3) (pfault 7))'
stop_kernel

# --- the worker's environment and stderr: a kernel granted libc, started
# with a secret in its environment
S=$tmp/s2
"$JITI" init --store "$S" >/dev/null
OPENAI_API_KEY=sk-jiti-test-secret TZ=UTC LC_TIME=C start_kernel "$S" --allow-foreign libc.so.6
ok env-kernel-starts $?
t env-declare 0 "C-WRITE" -- "$JITI" eval --store "$S" '(progn
  (define-foreign c-getenv "libc.so.6" "getenv" :string (:string))
  (define-foreign c-write "libc.so.6" "write" :long (:int :string :size)))'
t env-secret-gone 0 '^\(NIL NIL NIL\)$' -- "$JITI" eval --store "$S" \
  '(list (c-getenv "OPENAI_API_KEY") (c-getenv "PATH") (c-getenv "HOME"))'
t env-kept 0 '^\("UTC" "C"\)$' -- "$JITI" eval --store "$S" '(list (c-getenv "TZ") (c-getenv "LC_TIME"))'
# lines that would pass for the kernel's, a carriage return, a terminal
# escape, bytes that are not UTF-8, a line of 5000 bytes
t stderr-forge 0 "^[0-9]+$" -- "$JITI" eval --store "$S" '(let ((s (format nil
  "2026-01-01T00:00:00Z jiti kernel: forged-line~%forged-2~Cjiti kernel: over~C[31mred\\~%" (code-char 13) (code-char 27))))
  (c-write 2 s (length s)))'
t stderr-bad-utf8 0 "^1$" -- "$JITI" eval --store "$S" '(progn (c-write 2 "bad-utf8 é" 10) (c-write 2 (string #\Newline) 1))'
t stderr-long 0 "^5001$" -- "$JITI" eval --store "$S" \
  '(c-write 2 (concatenate (quote string) (make-string 5000 :initial-element #\b) (string #\Newline)) 5001)'
t_until stderr-marked 0 "worker\[[0-9]+\]: 2026-01-01T00:00:00Z jiti kernel: forged-line" -- cat "$LOG"
t stderr-escaped 0 'worker\[[0-9]+\]: forged-2\\rjiti kernel: over\\x1b\[31mred\\\\'$'\n' -- cat "$LOG"
t stderr-bad-utf8-escaped 0 'worker\[[0-9]+\]: bad-utf8 \\xc3'$'\n' -- cat "$LOG"
t stderr-cut 0 "worker\[[0-9]+\]: b{100,} \[[0-9]+ bytes cut\]" -- cat "$LOG"
n=$(grep -c "^2026-01-01T00:00:00Z jiti kernel: forged-line\|^[^ ]* jiti kernel: over\|^jiti kernel: over" "$LOG")
ok stderr-no-forged-line "$n"
# a flood of stderr: the kernel answers meanwhile; lines past the budget are
# dropped and counted in the log
"$JITI" eval --store "$S" '(dotimes (i 100000) (c-write 2 "flood line
" 11))' >"$tmp/flood.out" 2>&1 &
fp=$!
t flood-status 0 "state:" -- "$JITI" status --store "$S"
wait "$fp"
ok flood-call "$?"
t_until flood-dropped 0 "jiti kernel: worker [0-9]+: [0-9]+ lines of its stderr dropped \(more than 100 lines" -- cat "$LOG"
n=$(grep -c "worker\[[0-9]*\]: flood line" "$LOG")
ok flood-limited "$([[ $n -gt 0 && $n -lt 2000 ]]; echo $?)"
stop_kernel
# offline: the worker's stderr on the command's, escaped and limited, and a
# flood never holds the command up
OPENAI_API_KEY=sk-jiti-test-secret TZ=UTC t apply-secret-gone 0 "no change" -- "$JITI" apply --store "$S" \
  --allow-foreign libc.so.6 -e '(progn (when (c-getenv "OPENAI_API_KEY") (error "the secret leaked"))
                                        (unless (equal (c-getenv "TZ") "UTC") (error "TZ is not kept")))'
t apply-stderr 0 'worker\[[0-9]+\]: jiti apply: forged\\x1b' -- "$JITI" apply --store "$S" --allow-foreign libc.so.6 \
  -e '(let ((s (format nil "jiti apply: forged~C~%" (code-char 27)))) (c-write 2 s (length s)))'
t apply-flood 0 "jiti: worker [0-9]+: [0-9]+ lines of its stderr dropped" -- "$JITI" apply --store "$S" \
  --allow-foreign libc.so.6 -e '(dotimes (i 100000) (c-write 2 "flood line
" 11))'

finish
