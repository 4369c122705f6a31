#!/usr/bin/env bash
# `jiti swank` on the wire, without Emacs (tests/editor/wire.py speaks it):
# frames that break the wire's rules (no header, not hex, malformed,
# nested 100,000 deep, not UTF-8 ...) close their connection and the server
# serves the next one; a connection without the secret, or with a wrong
# one, is closed unserved; an unknown RPC is aborted with its name; an
# error opens the debugger and sldb-abort ends it; a pause another client
# left opens the debugger when the editor connects, and is answered there;
# a pause the editor's own request opened is aborted, and a call it left
# running cancelled, when it disconnects.  Start-up refusals: no
# ~/.slime-secret (without --no-secret), a secret others may read, no
# kernel, a port in use.
#   bash tests/editor/wire.sh path/to/jiti
set -u
JITI=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
tmp=$(mktemp -d /tmp/jiti-swank-wire.XXXXXX)
spid=
cleanup() {
  [[ -n $spid ]] && kill "$spid" 2>/dev/null
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
unset JITI_STORE
S=$tmp/store
"$JITI" init --store "$S" >/dev/null

t no-kernel 1 'no kernel is running for .*jiti kernel --store' -- "$JITI" swank --store "$S" --no-secret
start_kernel "$S" --fuel 0 || { echo "the kernel did not start"; exit 1; }
t no-secret-file 1 'no ~/.slime-secret.*chmod 600.*--no-secret' -- "$JITI" swank --store "$S" --port 0
echo "s3cret-$$" >"$HOME/.slime-secret"
chmod 644 "$HOME/.slime-secret"
t secret-readable-by-others 1 'may be read by other users: chmod 600' -- "$JITI" swank --store "$S" --port 0
chmod 600 "$HOME/.slime-secret"
t usage 2 'usage: jiti swank' -- "$JITI" swank --store "$S" --bogus

"$JITI" swank --store "$S" --port 0 --port-file "$tmp/port" 2>"$tmp/swank.log" &
spid=$!
for _ in $(seq 100); do [[ -s $tmp/port ]] && break; sleep 0.05; done
port=$(cat "$tmp/port")
t port-in-use 1 'cannot listen on 127.0.0.1:'"$port"'.*another --port' -- "$JITI" swank --store "$S" --port "$port"
t loopback-only 0 "127.0.0.1:$port" -- ss -ltn "sport = :$port"

out=$(timeout 60 python3 "$here/wire.py" "$port" "$HOME/.slime-secret" 2>&1)
while read -r line; do
  [[ $line == ok* ]] && pass=$((pass+1))
  [[ $line == ok* ]] || { fail=$((fail+1)); echo "$line"; }
done <<<"$out"
ok "every wire case ran" $(( $(grep -c '^ok\|^FAIL' <<<"$out") == 17 ? 0 : 1 ))
t_until editor-left-pause-aborted-call-cancelled 0 '"state": "idle"' -- "$JITI" status --json --store "$S"
t call-cancelled-logged 0 'call cancelled.*\(loop\)' -- cat "$tmp/kernel.log"
t other-client-pauses 0 'paused' -- "$JITI" eval --store "$S" --on-error pause '(car 5)'
out=$(timeout 60 python3 "$here/wire.py" "$port" "$HOME/.slime-secret" attach 2>&1 | tail -2)
t attached 0 '^ok .*pause opens the debugger.*
ok and is answered from here' -- echo "$out"
t server-alive 0 '' -- kill -0 "$spid"
t refusals-logged 0 'closing the editor.s connection: .*nested deeper' -- cat "$tmp/swank.log"
t secret-logged 0 'did not present the secret' -- cat "$tmp/swank.log"
kill -TERM "$spid"
wait "$spid"
ok "stops cleanly on SIGTERM (exit 0: nothing leaked under the sanitizers)" $?
spid=
t no-sanitizer-report 1 '' -- grep -q Sanitizer "$tmp/swank.log"
t world-unpaused 0 '"state": "idle"' -- "$JITI" status --json --store "$S"
finish
