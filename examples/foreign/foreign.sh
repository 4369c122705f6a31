#!/usr/bin/env bash
# Foreign functions in a live world.  The operator grants a kernel two C
# libraries (libm and libc) with --allow-foreign; a world declares cos, pow
# and strlen from them and uses them in ordinary functions.  A declaration
# from a library that was not granted is refused by the gate, naming the
# option.  The kernel is killed (kill -9) and started again with the same
# grant: the foreign functions are made again from the store.  Started
# without libc, the world still recovers: strlen alone is unavailable and
# says why, until a kernel grants libc again.
set -u
J=${JITI:-build/jiti}
dir=$(mktemp -d)
S=(--store "$dir/c.jiti")
GRANT=(--allow-foreign libm.so.6 --allow-foreign libc.so.6)
kpid=
trap '[ -n "$kpid" ] && kill -9 "$kpid" 2>/dev/null; rm -rf "$dir"' EXIT
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() { printf '$ jiti %s\n' "$*"; "$J" "$@" 2>&1; }
start() {  # start [OPTIONS...]: a kernel in the background, until it serves
  "$J" kernel "${S[@]}" "$@" >>"$dir/kernel.log" 2>&1 &
  kpid=$!
  for _ in $(seq 100); do "$J" status "${S[@]}" >/dev/null 2>&1 && return; sleep 0.1; done
}

"$J" init "${S[@]}" >/dev/null
say "Without a grant, define-foreign is refused by the gate"
run apply "${S[@]}" -e '(define-foreign c-cos "libm.so.6" "cos" :double (:double))'

say "The operator grants libm and libc; the world declares cos, pow and strlen"
run apply "${S[@]}" "${GRANT[@]}" "$here/world.lisp"
run show HEAD "${S[@]}" | sed -n '/^foreign grant/p'

say "A kernel started with the same grant serves the world"
start "${GRANT[@]}"
run status "${S[@]}" | grep '^foreign'
run eval "${S[@]}" '(list (reach 4 60) (world-get :savings) (utf8-bytes "naïve") (length "naïve"))'
run eval "${S[@]}" '(define-foreign c-crc "libz.so.1" "crc32" :uint64 (:uint64 :string :int))'

say "kill -9 the kernel; the next one makes the foreign functions again"
kill -9 "$kpid"; wait "$kpid" 2>/dev/null
start "${GRANT[@]}"
run eval "${S[@]}" '(format nil "reach ~,2f, savings ~,2f, ~d bytes" (reach 4 60) (world-get :savings) (utf8-bytes "naïve"))'
run stop "${S[@]}"

say "Without libc the world still recovers; strlen alone is unavailable"
run recover-session "${S[@]}" --allow-foreign libm.so.6 | sed -n '/^foreign/,/^verified/p;/error/p'
start --allow-foreign libm.so.6
run eval "${S[@]}" '(reach 4 60)'
run eval "${S[@]}" '(utf8-bytes "naïve")'
run stop "${S[@]}"

say "Granted again, strlen is back"
start "${GRANT[@]}"
run eval "${S[@]}" '(format nil "~d bytes in ~s (the recovered world)" (utf8-bytes "naïve") "naïve")'
run stop "${S[@]}"
kpid=
