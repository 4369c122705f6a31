#!/usr/bin/env bash
# A world that survives the loss of its kernel, on one machine (README.md
# beside this file): three etcd members on loopback ports, two kernels
# with stores of their own — a leader and a warm standby, each with a TLS
# listener for clients on other machines — the sales-tax world grown on
# the leader by the scripted model (examples/sales-tax), the leader killed
# with SIGKILL, and the standby answering with the same world.  Every
# client command here finds the leader through etcd (--replicate URLS
# --world sales), as a client on another machine would.
#
#   JITI=build/jiti bash examples/failover/failover.sh
#   KEEP=1 bash examples/failover/failover.sh     # keep the directory (printed)
#
# Exit status: 0 when the standby answered with the leader's world; 1
# otherwise.  Needs etcd (Debian's etcd-server) and the openssl command.
set -u
case "${1:-}" in
  -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *) echo "failover.sh: unknown argument '$1'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
J=$(realpath "${JITI:-$root/build/jiti}")
tax=$root/examples/sales-tax
. "$root/tests/etcd_cluster.sh"
. "$root/tests/tls_certs.sh"
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  etcd_cluster_stop
  if [ -n "${KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() { printf '$ jiti %s\n' "$*"; "$J" "$@"; }
fail() { echo "failover.sh: $*" >&2; exit 1; }

say "Three etcd members on loopback ports: the world's commit point"
etcd_cluster_start "$dir/etcd" || fail "etcd did not start"
echo "etcd members: $ETCD_URLS"

say "Certificates (a CA, the kernels' for 127.0.0.1) and a client token, made with openssl"
(cd "$dir" && tls_certs) || fail "openssl could not make the certificates"
echo "in $dir: ca.pem, kernel.pem, kernel.key, token"
pa=$(free_port) pb=$(free_port)
TLS=(--tls-cert "$dir/kernel.pem" --tls-key "$dir/kernel.key" --token-file "$dir/token")
# how every client below reaches the world: through etcd, to whichever kernel leads it
W=(--replicate "$ETCD_URLS" --world sales --tls-ca "$dir/ca.pem" --token-file "$dir/token")

say "Kernel A leads world 'sales' (lease 2 s), kernel B stands by with a store of its own"
printf '$ jiti kernel --store A --replicate URLS --world sales --lease 2 --listen tcp://127.0.0.1:%s ...\n' "$pa"
"$J" kernel --store "$dir/a" --replicate "$ETCD_URLS" --world sales --lease 2 --listen "tcp://127.0.0.1:$pa" \
  "${TLS[@]}" 2>>"$dir/kernels.log" &
ka=$!
pids+=("$ka")
for _ in $(seq 300); do "$J" status --store "$dir/a" >/dev/null 2>&1 && break; sleep 0.1; done
printf '$ jiti kernel --store B --replicate URLS --world sales --lease 2 --standby --listen tcp://127.0.0.1:%s ...\n' "$pb"
"$J" kernel --store "$dir/b" --replicate "$ETCD_URLS" --world sales --lease 2 --standby \
  --listen "tcp://127.0.0.1:$pb" "${TLS[@]}" 2>>"$dir/kernels.log" &
kb=$!
pids+=("$kb")

say "The model grows the sales-tax world on the leader (three scripted sessions)"
for task in 1-five-percent 2-rates 3-food; do
  printf '$ jiti session --replicate URLS --world sales ... --task %s.lisp --scripted %s.jsonl\n' "$task" "$task"
  "$J" session "${W[@]}" --task "$tax/$task.lisp" --scripted "$tax/$task.jsonl" --no-stream >>"$dir/sessions.log" 2>&1 ||
    fail "session $task failed (see $dir/sessions.log)"
  echo "  $(tail -1 "$dir/sessions.log")"
done
q='(list (total-price 100) (total-price 100 :food) (total-price 100 :clothing))'
before=$(run eval "${W[@]}" "$q") || fail "the leader did not answer"
echo "$before"
for _ in $(seq 100); do
  "$J" replicate status --replicate "$ETCD_URLS" --world sales | grep -q "(lag 0)" && break
  sleep 0.1
done
run replicate status --replicate "$ETCD_URLS" --world sales

say "Kernel A is killed (SIGKILL): its lease lapses, B takes the world over"
kill -9 "$ka"
wait "$ka" 2>/dev/null
echo "killed kernel A (pid $ka)"
t0=$(date +%s.%N)
after=$(JITI_PROGRESS=1 run eval "${W[@]}" "$q") || fail "no kernel answered after the takeover"
t1=$(date +%s.%N)
echo "$after"
awk -v a="$t0" -v b="$t1" 'BEGIN {printf "(answered %.1f s after the kill, by the new leader)\n", b - a}'
run status "${W[@]}" | head -3
run replicate status --replicate "$ETCD_URLS" --world sales

say "The same world"
[ "$(echo "$before" | tail -1)" = "$(echo "$after" | tail -1)" ] || fail "the worlds differ: '$before' / '$after'"
echo "before the kill: $(echo "$before" | tail -1)"
echo "after the kill:  $(echo "$after" | tail -1)"
run log --store "$dir/b" -n 3
