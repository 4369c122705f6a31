# tests/etcd_cluster.sh — a 3-member etcd cluster on loopback ports for the
# replication tests.  Source it, then:
#   etcd_cluster_start DIR   start members 0..2 (data and logs under DIR),
#                            wait until the cluster answers; sets
#                            ETCD_URLS (comma-separated client URLs),
#                            ETCD_URL[i] and ETCD_PID[i]; 1 on failure
#   etcd_member_kill I [SIG] send SIG (default KILL) to member I and, for
#                            KILL, wait until it is gone
#   etcd_member_start I      start member I again on its data
#   etcd_cluster_stop        kill every member this shell started, by pid
# The caller traps EXIT to etcd_cluster_stop: no member outlives a test.
# etcd's own timing (heartbeat 100 ms, election timeout 1 s): shorter ones
# make a loaded machine's members elect leaders over and over, and a lease
# is not renewed during an election.

ETCD_BIN=${ETCD_BIN:-etcd}
ETCD_URL=() ETCD_PEER=() ETCD_PID=() ETCD_DIR=

etcd_free_ports() {  # N free loopback TCP ports, one per line
  python3 - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
for s in socks: print(s.getsockname()[1])
for s in socks: s.close()
EOF
}

etcd_member_start() {  # etcd_member_start I
  local i=$1 state=${2:-existing}
  "$ETCD_BIN" --name "m$i" --data-dir "$ETCD_DIR/m$i" \
    --listen-client-urls "${ETCD_URL[$i]}" --advertise-client-urls "${ETCD_URL[$i]}" \
    --listen-peer-urls "${ETCD_PEER[$i]}" --initial-advertise-peer-urls "${ETCD_PEER[$i]}" \
    --initial-cluster "$ETCD_CLUSTER" --initial-cluster-state "$state" \
    --initial-cluster-token "jiti-test-$$" \
    --heartbeat-interval 100 --election-timeout 1000 \
    --logger zap --log-level error >>"$ETCD_DIR/m$i.log" 2>&1 &
  ETCD_PID[$i]=$!
  echo "${ETCD_PID[$i]}" >"$ETCD_DIR/pid.$i"
}

etcd_cluster_start() {  # etcd_cluster_start DIR
  ETCD_DIR=$1
  mkdir -p "$ETCD_DIR"
  if ! command -v "$ETCD_BIN" >/dev/null; then
    echo "etcd_cluster_start: no etcd binary (apt-get install etcd-server, or bash scripts/bootstrap test)" >&2
    return 1
  fi
  local ports i
  mapfile -t ports < <(etcd_free_ports 6)
  ETCD_CLUSTER=
  for i in 0 1 2; do
    ETCD_URL[$i]="http://127.0.0.1:${ports[$i]}"
    ETCD_PEER[$i]="http://127.0.0.1:${ports[$((i + 3))]}"
    ETCD_CLUSTER+="${ETCD_CLUSTER:+,}m$i=${ETCD_PEER[$i]}"
  done
  ETCD_URLS=$(IFS=,; echo "${ETCD_URL[*]}")
  for i in 0 1 2; do etcd_member_start "$i" new; done
  # healthy: a linearizable read through every member
  local up
  for _ in $(seq 200); do
    up=0
    for i in 0 1 2; do
      curl -s -m 1 -X POST "${ETCD_URL[$i]}/v3/kv/range" -d '{"key":"AA=="}' 2>/dev/null | grep -q '"revision"' &&
        up=$((up + 1))
    done
    [[ $up == 3 ]] && return 0
    sleep 0.1
  done
  echo "etcd_cluster_start: the cluster did not come up; logs in $ETCD_DIR/m*.log" >&2
  tail -5 "$ETCD_DIR"/m*.log >&2
  return 1
}

etcd_member_kill() {  # etcd_member_kill I [SIGNAL]
  local i=$1 sig=${2:-KILL} pid=${ETCD_PID[$1]}
  [[ -n $pid ]] || return 0
  kill -"$sig" "$pid" 2>/dev/null
  if [[ $sig == KILL ]]; then
    wait "$pid" 2>/dev/null
    ETCD_PID[$i]=
    rm -f "$ETCD_DIR/pid.$i"
  fi
}

etcd_cluster_stop() {  # every member this shell started (a stopped one too)
  local f p
  [[ -n $ETCD_DIR ]] || return 0
  for f in "$ETCD_DIR"/pid.*; do
    [[ -e $f ]] || continue
    p=$(cat "$f")
    kill -CONT "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    rm -f "$f"
  done
}
