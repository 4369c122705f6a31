#!/usr/bin/env bash
# A full disk under the store (a 3 MiB tmpfs; needs root to mount it, else
# skipped): a change that does not fit says "no space left on device" and
# names the store, nothing is published, CURRENT and the kernel stay as they
# were, and the next change that fits is published.
#   bash tests/diskfull.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-diskfull.XXXXXX)
S=$tmp/fs/s
cleanup() {
  "$JITI" stop --store "$S" >/dev/null 2>&1
  umount "$tmp/fs" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/fs"
if ! mount -t tmpfs -o size=3m,mode=700 tmpfs "$tmp/fs" 2>/dev/null; then
  echo "skipped: cannot mount a small tmpfs here (needs root)"
  exit 0
fi

"$JITI" init --store "$S" >/dev/null
t small 0 "revision 2" -- "$JITI" apply --store "$S" -e '(world-put :small 1)'
big='(world-put :big (make-string 4000000 :initial-element #\b))'
t offline-full 1 "store $S.*no space left on device.*free some space there" -- "$JITI" apply --store "$S" -e "$big"
t offline-current-kept 0 "^2 .*CURRENT" -- "$JITI" log --store "$S"
t offline-next-fits 0 "revision 3" -- "$JITI" apply --store "$S" -e '(world-put :small 2)'

t kernel 0 "serving" -- "$JITI" kernel --store "$S" --detach
t live-full 1 "no space left on device" -- "$JITI" eval --store "$S" "$big"
t live-unchanged 0 "^\(2 NIL\)$" -- "$JITI" eval --store "$S" '(list (world-get :small) (world-get :big))'
t live-next-fits 0 "^3$" -- "$JITI" eval --store "$S" '(progn (world-put :small 3) 3)'
t_until live-serves 0 "state: +idle" -- "$JITI" status --store "$S"
t stop 0 "stopped" -- "$JITI" stop --store "$S"
t recovers 0 "revision: +4" -- "$JITI" recover-session --store "$S"
finish
