#!/usr/bin/env bash
# Real Emacs with Debian's SLIME, in batch mode, against a Swank server:
# tests/editor/slime-rows.el does what a SLIME user does, row by row
# (connect, evaluate, compile, M-., completion, arglists, describe, the
# inspector, sldb with restarts, frames and an interrupt, a stale compile).
#   bash tests/editor/slime.sh path/to/jiti [jiti|sbcl|table]
# jiti (the default, CI): `jiti swank` on a fresh kernel; every row must
# pass.  sbcl: the same rows against SBCL with Debian's cl-swank.  table:
# both, printed side by side as a Markdown table (tests/editor/wire.sh has
# the wire's own cases: hostile frames, the secret).
# Exit 77 (skipped) when emacs, SLIME or the wanted Lisp is missing
# (scripts/bootstrap installs them).
set -u
JITI=$(realpath "$1")
mode=${2:-jiti}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
command -v emacs >/dev/null && ls /usr/share/emacs/site-lisp/elpa/slime-*/slime.el >/dev/null 2>&1 || {
  echo "skipped: emacs and Debian's slime are not installed (scripts/bootstrap installs them)"; exit 77; }
tmp=$(mktemp -d /tmp/jiti-slime.XXXXXX)
spids=()
cleanup() {
  for p in "${spids[@]}"; do kill "$p" 2>/dev/null; done
  kill_kernels
  if [[ -n ${SLIME_KEEP:-} ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
head -c 18 /dev/urandom | base64 >"$HOME/.slime-secret"
chmod 600 "$HOME/.slime-secret"
unset JITI_STORE

wait_port() {  # wait_port FILE PID: the port written to FILE, once it is
  for _ in $(seq 200); do
    [[ -s $1 ]] && { cat "$1"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

run_rows() {  # run_rows LISP PORT [STALE-CMD]: the rows into $tmp/LISP.rows
  : >"$tmp/$1.rows"
  SWANK_PORT=$2 SWANK_LISP=$1 SWANK_RESULTS=$tmp/$1.rows SWANK_STALE_CMD=${3:-} SWANK_INVARIANT_CMD=${SWANK_INVARIANT_CMD:-} SWANK_EVENTS=$tmp/$1.events \
    timeout 120 emacs --batch -Q -l "$here/slime-rows.el" >"$tmp/$1.emacs.log" 2>&1
  local rc=$?
  [[ $rc -eq 0 ]] || { echo "emacs ended with status $rc:"; tail -20 "$tmp/$1.emacs.log"; }
}

rows_jiti() {
  S=$tmp/store
  "$JITI" init --store "$S" >/dev/null || return 1
  start_kernel "$S" --fuel 0 || { echo "the kernel did not start"; cat "$tmp/kernel.log"; return 1; }
  "$JITI" swank --store "$S" --port 0 --port-file "$tmp/jiti.port" ${SLIME_TRACE:+--trace} 2>"$tmp/swank.log" &
  spids+=($!)
  local port
  port=$(wait_port "$tmp/jiti.port" $!) || { echo "jiti swank did not start"; cat "$tmp/swank.log"; return 1; }
  local spid=$!
  SWANK_INVARIANT_CMD="'$JITI' invariant add non-negative '(>= (or (world-get :n) 0) 0)' --store '$S' >/dev/null" \
    run_rows jiti "$port" "'$JITI' eval --store '$S' '(defparameter *other-client* 1)' >/dev/null"
  kill -TERM "$spid"
  wait "$spid"
  ok "jiti swank stops cleanly (exit 0: nothing leaked under the sanitizers)" $?
  grep Sanitizer -A30 "$tmp/swank.log"
}

rows_sbcl() {
  command -v sbcl >/dev/null && [[ -f /usr/share/common-lisp/source/slime/swank-loader.lisp ]] || {
    echo "sbcl or cl-swank is missing"; return 77; }
  sbcl --noinform --non-interactive \
    --eval '(load "/usr/share/common-lisp/source/slime/swank-loader.lisp")' \
    --eval "(setf swank-loader::*fasl-directory* \"$tmp/fasl/\")" \
    --eval '(swank-loader:init :load-contribs t)' \
    --eval "(let ((p (swank:create-server :port 0 :dont-close t)))
              (with-open-file (o \"$tmp/sbcl.port.new\" :direction :output) (print p o)))" \
    --eval "(rename-file \"$tmp/sbcl.port.new\" \"$tmp/sbcl.port\")" \
    --eval '(loop (sleep 1))' >"$tmp/sbcl.log" 2>&1 &
  spids+=($!)
  local port
  port=$(wait_port "$tmp/sbcl.port" $! | tr -d ' \n') || { echo "sbcl's swank did not start"; tail "$tmp/sbcl.log"; return 1; }
  run_rows sbcl "$port"
}

check_rows() {  # every row of $tmp/jiti.rows passed (or is n/a)
  local n=0
  while IFS=$'\t' read -r row status detail; do
    n=$((n+1))
    if [[ $status == pass || $status == n/a ]]; then pass=$((pass+1));
    else fail=$((fail+1)); echo "FAIL row '$row': $detail"; fi
  done <"$tmp/jiti.rows"
  ok "all rows ran" $(( n >= 20 ? 0 : 1 ))
}

case $mode in
jiti) rows_jiti; check_rows; finish ;;
sbcl) rows_sbcl; rc=$?; [[ $rc -eq 77 ]] && exit 77; cat "$tmp/sbcl.rows" ;;
table)
  rows_jiti >/dev/null
  rows_sbcl >/dev/null
  echo "| SLIME command | SBCL + cl-swank | jiti swank |"
  echo "|---|---|---|"
  while IFS=$'\t' read -r row status _; do
    j=$(awk -F'\t' -v r="$row" '$1 == r {print $2}' "$tmp/jiti.rows")
    echo "| $row | $status | ${j:-missing} |"
  done <"$tmp/sbcl.rows"
  ;;
*) echo "usage: slime.sh JITI [jiti|sbcl|table]" >&2; exit 2 ;;
esac
