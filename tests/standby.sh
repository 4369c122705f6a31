#!/usr/bin/env bash
# standby.sh URLS PIDS JITI — a replicated leader that loses its world
# steps down (run by tests/etcd.sh against a 3-member etcd cluster): stopped
# with SIGSTOP past its lease while a standby takes over, then resumed, it
# answers the call sent to it meanwhile `fenced` (never acknowledged),
# publishes nothing, and stands by for the world on its own store.
set -u
urls=$1 J=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
JITI=$J
tmp=$(mktemp -d)
trap 'kill -CONT "${ka:-0}" 2>/dev/null; kill_kernels; rm -rf "$tmp"' EXIT
status() { "$J" replicate status --replicate "$urls" --world sb "$@"; }
leads() { local out; out=$("$J" status --store "$1" 2>&1) && [[ $out != *standby:* ]]; }

start_kernel "$tmp/a" --replicate "$urls" --world sb --lease 2
ok "leader starts" $?
ka=$kp
t "a definition" 0 "DOUBLE" -- "$J" eval --store "$tmp/a" "(defun double (x) (* 2 x))"
t "a row" 0 "" -- "$J" eval --store "$tmp/a" "(world-put :n 1)"
# an entry too large for one etcd request is refused at the call, naming
# it and the limit; the world is unchanged and the kernel serves on
t "an entry too large for etcd refused" 1 "unsafe: unexportable: data :BIG would be 1200[0-9]+ bytes stored.*etcd.*at most 11[0-9]{5}" -- \
  "$J" eval --store "$tmp/a" "(world-put :big (make-string 1200000 :initial-element #\\a))"
t "nothing of it kept" 0 "revision: +3" -- "$J" status --store "$tmp/a"
t "the kernel serves on" 0 "^NIL" -- "$J" eval --store "$tmp/a" "(world-get :big)"
t "one that fits is taken" 0 "^1000000$" -- "$J" eval --store "$tmp/a" "(length (world-put :big (make-string 1000000 :initial-element #\\a)))"
t "and replicated" 0 "current: +revision 4" -- status
t "a removal" 0 "" -- "$J" eval --store "$tmp/a" "(world-rem :big)"
"$J" kernel --store "$tmp/b" --replicate "$urls" --world sb --lease 2 --standby >>"$tmp/kernel.log" 2>&1 &
kb=$!
kpids+=("$kb")
t_until "standby reported" 0 "standbys: +1.*store $tmp/b: applied revision 5 " -- status

# the standby serves reads at the revision it has applied, and refuses writes naming the leader
t_until "standby status" 0 "revision: +5.*standby: +world sb, applied revision 5 \(generation [0-9]+\); writes go to the leader .*\"store\":\"$tmp/a\"" -- \
  "$J" status --store "$tmp/b"
t "standby status json" 0 "\"standby\": \{" -- "$J" status --json --store "$tmp/b"
t "a read on the standby" 0 "^2$" -- "$J" eval --store "$tmp/b" "(double (world-get :n))"
t "a write on the standby refused" 1 "standby: this call changes the world.*applied revision 5.*leader.*\"store\":\"$tmp/a\".*replicate status" -- \
  "$J" eval --store "$tmp/b" "(world-put :n 50)"
t "nothing of it kept" 0 "^1$" -- "$J" eval --store "$tmp/b" "(values (world-get :n))"
t "a keyed write on the standby refused" 1 "standby: this call changes the world" -- \
  "$J" eval --store "$tmp/b" --key kk "(world-put :n 51)"
t "the key is not recorded there" 1 "standby: this call changes the world" -- \
  "$J" eval --store "$tmp/b" --key kk "(world-put :n 51)"
t "a call that may pause refused" 1 "standby: a call that may pause" -- "$J" eval --store "$tmp/b" --on-error pause "(+ 1 2)"
t "an operator's change on the standby refused" 1 "standby: this request writes" -- "$J" rollback --store "$tmp/b" 2
t "observe on the standby" 0 "" -- "$J" observe --store "$tmp/b"
t "log on the standby" 0 "5 .*4 .*3 " -- "$J" log --store "$tmp/b"
t "show on the standby" 0 "DOUBLE" -- "$J" show --store "$tmp/b" 2
t "the leader writes" 0 "^3$" -- "$J" eval --store "$tmp/a" "(world-put :n 3)"
t_until "the standby's reads follow" 0 "^3$" -- "$J" eval --store "$tmp/b" "(values (world-get :n))"
t "at the new revision" 0 "standby: +world sb, applied revision 6 " -- "$J" status --store "$tmp/b"
t "the leader writes again" 0 "^1$" -- "$J" eval --store "$tmp/a" "(world-put :n 1)"
t_until "and again" 0 "^1$" -- "$J" eval --store "$tmp/b" "(values (world-get :n))"

# the leader stops past its lease; the standby takes over
kill -STOP "$ka"
t_until "the standby took over" 0 "" -- leads "$tmp/b"
t "at the last revision" 0 "revision: +7" -- "$J" status --store "$tmp/b"
t "the new leader writes" 0 "^2$" -- "$J" eval --store "$tmp/b" "(world-put :n 2)"
# a write the stopped leader reads once resumed
( "$J" eval --store "$tmp/a" "(world-put :n 99)" >"$tmp/late.out" 2>&1; echo $? >"$tmp/late.rc" ) &
late=$!
sleep 0.3
kill -CONT "$ka"
wait "$late"
[[ $(cat "$tmp/late.rc") == 1 ]] && grep -q "fenced" "$tmp/late.out" && ! grep -q "^99$" "$tmp/late.out"
ok "the resumed leader answers fenced ($(cat "$tmp/late.rc"): $(head -c 300 "$tmp/late.out"))" $?
grep -q "replicate status" "$tmp/late.out"
ok "the client says where to go" $?
t "it published nothing" 0 "^2$" -- "$J" eval --store "$tmp/b" "(values (world-get :n))"
t "etcd's current is the new leader's" 0 "current: +revision 8" -- status
grep -q "steps down to standby" "$tmp/kernel.log"
ok "the old leader says it steps down" $?
t_until "the old leader stands by" 0 "store $tmp/a: applied revision 8 \\(lag 0\\)" -- status
t_until "and serves reads" 0 "^2$" -- "$J" eval --store "$tmp/a" "(values (world-get :n))"
kill -0 "$ka" 2>/dev/null
ok "the same process" $?

# and takes the world back when the new leader goes, with everything in it
"$J" stop --store "$tmp/b" >/dev/null 2>&1
wait "$kb" 2>/dev/null
t_until "the old leader leads again" 0 "" -- leads "$tmp/a"
t "at the last revision" 0 "revision: +8" -- "$J" status --store "$tmp/a"
t "with the new leader's write" 0 "^4$" -- "$J" eval --store "$tmp/a" "(double (world-get :n))"

((fail)) && { echo "--- the kernels' log"; grep -v "call accepted" "$tmp/kernel.log" | tail -40; }
finish
