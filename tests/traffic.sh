#!/usr/bin/env bash
# The traffic sample of automatic repair through a real kernel: the
# successful calls of the functions the repair policy selects are kept —
# the request exactly as sent, the printed result and its SHA-256 — a
# reservoir per argument signature; calls of other functions, failing
# calls and calls that are not a call of the function are not; results too
# long or unreadable are skipped; the reservoir's bound holds under many
# calls; the kernel asks the worker to note only calls that may be
# selected; disabling repair forgets the sample (through the kernel and
# offline); the sample survives a restart, and a writing call's survives a
# kill -9 right after its reply.  `jiti traffic` reads it.
#   bash tests/traffic.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-traffic.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
ev() { "$JITI" eval --store "$S" "$@"; }
sha() { printf '%s' "$1" | sha256sum | cut -c1-64; }
# the calls kept of a function, one JSON line each (once the kernel wrote them)
calls() { "$JITI" traffic "$1" --json --store "$S"; }
settle() {  # the calls that wrote nothing go with the next timed write (0.1 s)
  for _ in $(seq 100); do
    "$JITI" status --json --store "$S" | grep -q '"waiting": 0' && break
    sleep 0.1
  done
  sleep 0.2
}

t help 0 "usage: jiti traffic FUNCTION" -- "$JITI" traffic --help
t listed 0 "traffic +show the successful calls automatic repair keeps" -- "$JITI" --help
t two-functions 2 "unexpected argument 'b'" -- "$JITI" traffic a b --store "$S"
t prefix-refused 2 "give one function" -- "$JITI" traffic 'app::parse-*' --store "$S"
t package-refused 2 "give one function" -- "$JITI" traffic 'app:' --store "$S"
t bad-name 2 "is no name" -- "$JITI" traffic 'bad name' --store "$S"
t no-store 1 "" -- "$JITI" traffic price --store "$tmp/nowhere"
"$JITI" init --store "$S" >/dev/null
t none-yet 0 "^no calls of PRICE kept" -- "$JITI" traffic price --store "$S"
t no-functions 0 "^no calls kept" -- "$JITI" traffic --store "$S"

JITI_WIRE_TRACE=$tmp/wire start_kernel "$S"; ok kernel-starts $?
ev '(defpackage :app (:use :cl))' >/dev/null
ev '(progn (defstruct point x y)
  (defun price (n) (if (stringp n) (length n) (* 2 n)))
  (defun other (n) n)
  (defun bump (n) (world-put :c n) n)
  (defun opaque () (make-hash-table))
  (defun big (n) (make-string n :initial-element #\a))
  (defun two () (values 1 (point-x (make-point :x "x#<y"))))
  (defun app::run (x) (list x)))' >/dev/null
ok defined $?
"$JITI" repair enable price --store "$S" >/dev/null
"$JITI" repair enable bump --store "$S" >/dev/null

# --- successful calls of a selected function: the request exact, the result, its digest
t call 0 "^42$" -- ev '(price 21)'
ev '(price  "abcd" )' >/dev/null
ev '(price 2.5)' >/dev/null
ev $'(price\n  ;; a comment is part of the request\n  (+ 1 2))' >/dev/null
t not-selected 0 "^3$" -- ev '(other 3)'
t failing 1 "TYPE-ERROR" -- ev '(price nil)'
ev '(progn (price 5))' >/dev/null
ev '(list (price 6))' >/dev/null
settle
t kept-exact 0 '(^|
)\{"function":"PRICE","signature":"fixnum","slot":1,"time":"[-0-9T:Z]+","request":"\(price 21\)","result":"42","digest":"'"$(sha 42)"'"\}' -- calls price
t kept-spacing 0 '"signature":"string","slot":1,"time":"[-0-9T:Z]+","request":"\(price  \\"abcd\\" \)","result":"4","digest":"'"$(sha 4)"'"' -- calls price
t kept-float 0 '"signature":"single-float",.*"request":"\(price 2.5\)","result":"5.0"' -- calls price
t kept-newlines 0 '"request":"\(price\\n  ;; a comment is part of the request\\n  \(\+ 1 2\)\)","result":"6"' -- calls price
n=$(calls price | wc -l)
[[ $n -eq 4 ]]; ok four-kept $?
calls price | grep -q '"signature":"null"'; [[ $? -ne 0 ]]; ok failing-not-kept $?
calls price | grep -Eq 'progn|list'; [[ $? -ne 0 ]]; ok not-a-call-not-kept $?
t other-not-kept 0 "^no calls of OTHER kept" -- "$JITI" traffic other --store "$S"
t text 0 "^signature \((fixnum|string|single-float)\)
  1  [-0-9T:Z]+  \(price" -- "$JITI" traffic price --store "$S"
t functions 0 "^PRICE +3 signatures" -- "$JITI" traffic --store "$S"
t function-json 0 '^\{"function":"PRICE","signatures":3,"bytes":[0-9]+\}$' -- "$JITI" traffic --json --store "$S"
# the kernel asked the worker to note only the calls that may be selected
grep -q '"source":"(price 21)",[^}]*"note":true' "$tmp/wire"; ok asked-price $?
grep -q '"source":"(other 3)",[^}]*"note"' "$tmp/wire"; [[ $? -ne 0 ]]; ok other-not-asked $?
grep -q '"noted":{"function":"PRICE","signature":"fixnum"}' "$tmp/wire"; ok worker-noted $?

# --- distinct signatures each keep a reservoir of at most 8; many calls
for i in $(seq 1 30); do ev "(price $i)" >/dev/null; done
for i in $(seq 1 12); do ev "(price \"$i\")" >/dev/null; done
settle
[[ $(calls price | grep -c '"signature":"fixnum"') -eq 8 ]]; ok fixnum-bounded $?
[[ $(calls price | grep -c '"signature":"string"') -eq 8 ]]; ok string-bounded $?
[[ $(calls price | grep -c '"signature":"single-float"') -eq 1 ]]; ok float-kept $?
t status-counts 0 '"traffic": \{
    "offered": 46,
    "kept": [0-9]+,
    "skipped": 0,
    "waiting": 0' -- "$JITI" status --json --store "$S"

# --- results too long or unreadable are skipped; several values as (VALUES ...)
"$JITI" repair enable opaque --store "$S" >/dev/null
"$JITI" repair enable big --store "$S" >/dev/null
"$JITI" repair enable two --store "$S" >/dev/null
ev '(opaque)' >/dev/null
ev '(big 20000)' >/dev/null
ev '(big 3)' >/dev/null
ev '(two)' >/dev/null
settle
t unreadable-skipped 0 "^no calls of OPAQUE kept" -- "$JITI" traffic opaque --store "$S"
t long-skipped 0 '^\{"function":"BIG","signature":"fixnum","slot":1,.*"request":"\(big 3\)","result":"\\"aaa\\""' -- calls big
[[ $(calls big | wc -l) -eq 1 ]]; ok long-not-kept $?
t values 0 '"signature":"","slot":1,.*"request":"\(two\)","result":"\(VALUES 1 \\"x#<y\\"\)"' -- calls two
t status-skipped 0 '"skipped": 2,' -- "$JITI" status --json --store "$S"

# --- a group that cannot be published keeps the calls waiting to be written
ev '(price 1/2)' >/dev/null   # (a signature of its own: kept whatever the reservoir drew)
ev "(defun $(printf 'a%.0s' $(seq 500)) () 1)" >/dev/null 2>&1
settle
t failed-group-keeps-waiting 0 '"signature":"ratio",.*"request":"\(price 1/2\)","result":"1"' -- calls price

# --- a package rule: every call is asked about, only the selected kept
"$JITI" repair enable app: --store "$S" >/dev/null
ev '(app::run (make-point))' >/dev/null
ev '(other 4)' >/dev/null
settle
t package-kept 0 '"function":"APP::RUN","signature":"POINT",.*"result":"\(#S\(POINT :X NIL :Y NIL\)\)"' -- calls app::run
grep -q '"source":"(other 4)",[^}]*"note":true' "$tmp/wire"; ok other-asked-under-package-rule $?
t other-still-not-kept 0 "^no calls of OTHER kept" -- "$JITI" traffic other --store "$S"

# --- a writing call's sample goes with its group: kept across a kill -9 after the reply
t bump 0 "^7$" -- ev '(bump 7)'
kill -9 "$kp"; wait "$kp" 2>/dev/null
t bump-durable 0 '"request":"\(bump 7\)","result":"7"' -- calls bump
start_kernel "$S"; ok kernel-restarts $?
t restart-kept 0 '"request":"\(price 2.5\)","result":"5.0"' -- calls price

# --- disabling repair forgets the sample: through the kernel, and offline
t disable-forgets 0 "forgot the calls kept of PRICE" -- "$JITI" repair disable price --store "$S"
t forgotten 0 "^no calls of PRICE kept" -- "$JITI" traffic price --store "$S"
ev '(price 8)' >/dev/null
settle
t not-recorded-after 0 "^no calls of PRICE kept" -- "$JITI" traffic price --store "$S"
t disable-json 0 '"forgotten": \[
    "BIG"
  \]' -- "$JITI" repair disable big --json --store "$S"
t others-stay 0 '"request":"\(bump 7\)"' -- calls bump
"$JITI" stop --store "$S" >/dev/null
t offline-forgets 0 "forgot the calls kept of BUMP" -- "$JITI" repair disable bump --store "$S"
t offline-forgotten 0 "^no calls of BUMP kept" -- "$JITI" traffic bump --store "$S"
t offline-others 0 '"request":"\(two\)"' -- calls two
# (under the sanitizers: nothing reported by any kernel of the test)
grep -Eq "runtime error|AddressSanitizer|LeakSanitizer" "$tmp/kernel.log"; [[ $? -ne 0 ]]; ok no-sanitizer-reports $?
finish
