#!/usr/bin/env bash
# follow.sh URLS PIDS JITI — clients that find a replicated world's leader
# through etcd and follow it across a takeover (run by tests/etcd.sh, which
# starts a 3-member etcd cluster on loopback ports): two kernels with TCP
# listeners, the leader publishing its address with its leader key; a
# client with --replicate URLS --world NAME reaches it, and after the
# leader is killed (kill -9) keyed calls made the same way (a writer's,
# under way during the kill, and one made right after it) succeed on the
# new leader, each exactly once (the counter they move counts each once,
# the same key again is replayed); then the new leader is stopped (SIGSTOP)
# past its lease while a client reaches it, a third kernel takes over, the
# stopped one is resumed: the client's call runs once, on the third.
set -u
urls=$1 J=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/tls_certs.sh"
JITI=$J
tmp=$(mktemp -d)
trap 'kill_kernels; rm -rf "$tmp"' EXIT
command -v openssl >/dev/null || { echo "no openssl command: skipped"; exit 77; }
cd "$tmp" || exit 1
tls_certs
ok "certificates made" $?
pa=$(free_port) pb=$(free_port)
TLS=(--tls-cert kernel.pem --tls-key kernel.key --token-file token)
R=(--replicate "$urls" --world shop --tls-ca ca.pem --token-file token)

t "an address clients cannot reach again" 2 "fixed port" -- "$J" kernel --store x --replicate "$urls" --world shop \
  --listen tcp://0.0.0.0:4000 "${TLS[@]}"
t "no leader yet" 1 "world shop has no leader and no standby" -- env JITI_PROGRESS=0 timeout 120 "$J" status "${R[@]}"

start_kernel "$tmp/a" --replicate "$urls" --world shop --lease 2 --listen "tcp://127.0.0.1:$pa" "${TLS[@]}"
ok "the leader starts" $?
ka=$kp
t "status names the leader's address" 0 "\"listen\":\"127.0.0.1:$pa\"" -- \
  "$J" replicate status --replicate "$urls" --world shop
t "a call through etcd reaches the leader" 0 "^BUMP$" -- "$J" eval "${R[@]}" \
  "(defun bump () (world-put :n (1+ (or (world-get :n) 0))))"
t "status through etcd" 0 "serving $tmp/a" -- "$J" status "${R[@]}"
t "bad credentials are not retried" 1 "refused this client: the token does not match" -- \
  "$J" status --replicate "$urls" --world shop --tls-ca ca.pem --token-file wrong

"$J" kernel --store "$tmp/b" --replicate "$urls" --world shop --lease 2 --standby --listen "tcp://127.0.0.1:$pb" \
  "${TLS[@]}" >>"$tmp/kernel.log" 2>&1 &
kb=$!
kpids+=("$kb")
t_until "the standby caught up" 0 "standbys: +1.*applied revision 2 \(lag 0\)" -- \
  "$J" replicate status --replicate "$urls" --world shop

# a writer of keyed calls through etcd, one after another, while the leader is killed
(for i in $(seq 30); do
   "$J" eval "${R[@]}" --key "w$i" "(bump)" >"$tmp/w$i.out" 2>"$tmp/w$i.err" && echo "$i" >>"$tmp/acked"
 done) &
writer=$!
for _ in $(seq 100); do [[ -s $tmp/acked ]] && break; sleep 0.1; done
kill -KILL "$ka"
wait "$ka" 2>/dev/null
# made at once: the client waits out the lease, finds the new leader, and sends it there
t "a keyed call follows the world to the new leader" 0 "[0-9]$" -- env JITI_PROGRESS=1 "$J" eval "${R[@]}" --key once "(bump)"
t "served by the standby, now the leader" 0 "serving $tmp/b" -- "$J" status "${R[@]}"
t "the same key again is replayed" 0 "replayed" -- "$J" eval "${R[@]}" --key once "(bump)"
wait "$writer"
acked=$(wc -l <"$tmp/acked")
[[ $acked == 30 ]]
ok "every call of the writer acknowledged across the takeover ($acked of 30)" $?
for i in $(seq 30); do
  [[ $(head -1 "$tmp/w$i.out") =~ ^[0-9]+$ ]] || echo "FAIL writer call $i: $(cat "$tmp/w$i.out" "$tmp/w$i.err")"
done
t "each ran once: 30 writes and the one keyed call" 0 "^31[[:space:]]+T$" -- "$J" eval --store "$tmp/b" "(world-get :n)"
t "a writer's key replays on the new leader" 0 "replayed" -- "$J" eval "${R[@]}" --key w1 "(bump)"
t "the world came along" 0 "BUMP" -- "$J" observe "${R[@]}"

# the leader stopped (SIGSTOP) past its lease while a client reaches it, and
# resumed once a third kernel leads: the call it was sent is not kept
# there (fenced, or the connection dropped) and runs once on the new leader
pc=$(free_port)
"$J" kernel --store "$tmp/c" --replicate "$urls" --world shop --lease 2 --standby --listen "tcp://127.0.0.1:$pc" \
  "${TLS[@]}" >>"$tmp/kernel.log" 2>&1 &
kc=$!
kpids+=("$kc")
t_until "a new standby caught up" 0 "standbys: +1.*\(lag 0\)" -- "$J" replicate status --replicate "$urls" --world shop
kill -STOP "$kb"
"$J" eval "${R[@]}" --key paused "(bump)" >"$tmp/paused.out" 2>&1 &
client=$!
for _ in $(seq 300); do
  "$J" replicate status --replicate "$urls" --world shop 2>/dev/null | grep -q "\"store\":\"$tmp/c\"" && break
  sleep 0.1
done
kill -CONT "$kb"
wait "$client"
ok "the call made while the leader was stopped is answered ($(tail -1 "$tmp/paused.out"))" $?
t "by the third kernel" 0 "serving $tmp/c" -- "$J" status "${R[@]}"
t "once: 30 writes, the keyed call and this one" 0 "^32[[:space:]]+T$" -- "$J" eval --store "$tmp/c" "(world-get :n)"
t "its key replays" 0 "replayed" -- "$J" eval "${R[@]}" --key paused "(bump)"
# the resumed old leader, fenced, stepped down: it stands by in the same
# process, and takes the world back when the third kernel stops
t_until "the resumed old leader stands by" 0 "standbys: +1.*store $tmp/b: applied" -- "$J" replicate status --replicate "$urls" --world shop
"$J" stop --store "$tmp/c" >/dev/null 2>&1
wait "$kc" 2>/dev/null
t_until "the old leader leads again" 0 "serving $tmp/b" -- "$J" status "${R[@]}"
t "with the same world" 0 "^32[[:space:]]+T$" -- "$J" eval "${R[@]}" "(world-get :n)"
"$J" stop --store "$tmp/b" >/dev/null 2>&1
wait "$kb" 2>/dev/null
t "no leader left: a clear error" 1 "world shop has no leader and no standby" -- env JITI_PROGRESS=0 "$J" status "${R[@]}"
((fail)) && { echo "--- the kernels' log"; tail -30 "$tmp/kernel.log"; }
finish
