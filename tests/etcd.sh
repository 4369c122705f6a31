#!/usr/bin/env bash
# etcd.sh PROGRAM — a test program of replication (the etcd client, the
# replica layer) against a real
# 3-member etcd cluster on loopback ports (tests/etcd_cluster.sh), which
# the test itself stops members of; every member is killed at the end.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/etcd_cluster.sh"
tmp=$(mktemp -d)
trap 'etcd_cluster_stop; rm -rf "$tmp"' EXIT
etcd_cluster_start "$tmp/etcd" || exit 1
"$1" "$ETCD_URLS" "${ETCD_PID[0]},${ETCD_PID[1]},${ETCD_PID[2]}" "${@:2}"
