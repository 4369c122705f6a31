#!/usr/bin/env bash
# replicate.sh URLS PIDS JITI — `jiti kernel --replicate` and `jiti replicate
# status` against a 3-member etcd cluster (run by tests/etcd.sh, which
# starts and stops it): the options refused, a world seeded, a second
# leader refused, a standby that fills its store and is reported with its
# lag, a clean stop that hands the world over at once (no lease to wait
# for), the same world and keys on the new leader, a standby stopped while
# it waits (it serves reads meanwhile), status when etcd cannot be reached, and etcd losing one member
# (writes go on) then two (not acknowledged; the kernel stops, saying why).
set -u
urls=$1 J=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
JITI=$J
tmp=$(mktemp -d)
leads() { local out; out=$("$J" status --store "$1" 2>&1) && [[ $out != *standby:* ]]; }
trap 'kill_kernels; rm -rf "$tmp"' EXIT

# the options
t "replicate without world" 2 "go together" -- "$J" kernel --store "$tmp/x" --replicate "$urls"
t "standby alone" 2 "go together" -- "$J" kernel --store "$tmp/x" --standby
t "bad lease" 2 "from 2 to 600" -- "$J" kernel --store "$tmp/x" --replicate "$urls" --world w --lease 1
t "bad world" 1 "is not 1-64" -- "$J" kernel --store "$tmp/x" --replicate "$urls" --world "a/b"
t "bad urls" 1 "http://HOST:PORT" -- "$J" kernel --store "$tmp/x" --replicate "ftp://h" --world w
t "status usage" 2 "are needed" -- "$J" replicate status --world w
t "status subcommand" 2 "unknown subcommand" -- "$J" replicate list
t "status unreachable" 1 "cannot be reached" -- "$J" replicate status --replicate http://127.0.0.1:1 --world w
t "status of nothing" 0 "leader: +none.*current: +revision 0" -- "$J" replicate status --replicate "$urls" --world sales

# a leader seeds the world
start_kernel "$tmp/a" --replicate "$urls" --world sales --lease 2
ok "leader starts" $?
ka=$kp
t "a definition" 0 "TAX" -- "$J" eval --store "$tmp/a" "(defun tax (x) (* x 8/100))"
t "a row" 0 "" -- "$J" eval --store "$tmp/a" "(world-put :rate 8)"
t "status names the leader" 0 "leader: +\{.*\"store\":\"$tmp/a\".*lease: [0-9]+ s left.*current: +revision 3" -- \
  "$J" replicate status --replicate "$urls" --world sales

# another kernel may not lead it too
t "second leader refused" 1 "world sales is led by .*$tmp/a.*--standby" -- \
  "$J" kernel --store "$tmp/b" --replicate "$urls" --world sales

# a standby fills its store and is reported
# (the default lease, 5 s: longer than an election of etcd's leader, below)
"$J" kernel --store "$tmp/b" --replicate "$urls" --world sales --standby >>"$tmp/kernel.log" 2>&1 &
kb=$!
kpids+=("$kb")
t_until "standby reported" 0 "standbys: +1.*store $tmp/b: applied revision 3 \(lag 0\)" -- \
  "$J" replicate status --replicate "$urls" --world sales
t "status json" 0 "\"current\": 3" -- "$J" replicate status --replicate "$urls" --world sales --json
t "a keyed write" 0 "12" -- "$J" eval --store "$tmp/a" --key k1 "(world-put :rate 12)"
t_until "the standby serves reads" 0 "standby: +world sales, applied revision 4" -- "$J" status --store "$tmp/b"

# a clean stop gives the world up at once
"$J" stop --store "$tmp/a" >/dev/null 2>&1
wait "$ka" 2>/dev/null
t_until "the standby took over" 0 "" -- leads "$tmp/b"
t "at the last revision" 0 "revision: +4" -- "$J" status --store "$tmp/b"
t "the same world" 0 "^12$" -- "$J" eval --store "$tmp/b" "(tax 150)"
t "the key replays" 0 "replayed" -- "$J" eval --store "$tmp/b" --key k1 "(world-put :rate 12)"
t "no double" 0 "revision: +4" -- "$J" status --store "$tmp/b"
gb=$(JITI=$J S=$tmp/b jfield generation)
[[ ${gb:-0} -gt 2000 ]]; ok "generation past the old leader's ceiling ($gb)" $?
t "status names the new leader" 0 "\"store\":\"$tmp/b\".*standbys: +0" -- \
  "$J" replicate status --replicate "$urls" --world sales

# a standby stopped while it waits
"$J" kernel --store "$tmp/c" --replicate "$urls" --world sales --standby >>"$tmp/kernel.log" 2>&1 &
kc=$!
kpids+=("$kc")
t_until "second standby reported" 0 "standbys: +1" -- "$J" replicate status --replicate "$urls" --world sales
kill -TERM "$kc"
wait "$kc"
ok "a waiting standby stops on SIGTERM (status $?)" $?
grep -q "shutting down (SIGTERM)" "$tmp/kernel.log"
ok "it says so" $?
# etcd loses members: with one down the world goes on; with two (no quorum)
# a write is not acknowledged and the kernel stops, saying why
IFS=, read -r m0 m1 _ <<<"$2"
kill -KILL "$m0"
t_until "one etcd member down: writes go on" 0 "^13$" -- "$J" eval --store "$tmp/b" "(world-put :rate 13)"
kill -KILL "$m1"
# not acknowledged: no answer at all (etcd may hold the commit: the kernel
# ends without one), refused (fenced), or no kernel any more (its lease could
# not be renewed: it stopped before the call came)
out=$(timeout 20 "$J" eval --store "$tmp/b" "(world-put :rate 14)" 2>&1)
st=$?
[[ $st == 124 || ( $st == 1 && $out =~ fenced|no\ kernel\ is\ running ) ]]
ok "no quorum: not acknowledged (status $st: ${out:0:200})" $?
stopped="answers nothing more and stops|writes nothing more and (stops|steps down)"
for _ in $(seq 600); do   # (each commit is tried a few times, 10 s each)
  grep -Eq "$stopped" "$tmp/kernel.log" && break
  sleep 0.1
done
grep -Eq "$stopped" "$tmp/kernel.log"
ok "no quorum: the kernel says why it stopped" $?
((fail)) && { echo "--- the kernels' log"; grep -v "call accepted" "$tmp/kernel.log" | tail -30; }
finish
