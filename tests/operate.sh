#!/usr/bin/env bash
# Operating a world without surprises: a mistyped command's suggestion,
# one-line errors for missing arguments and bad numbers, a new store
# announced (and refused under JITI_NO_CREATE), a socket path too long
# refused before anything is created, the signal a foreground kernel names,
# a rollback that says what it drops and wants --yes to drop invariants, the
# explanation of a target that breaks a current invariant, a pause's advice
# naming options that exist (--wait), a generation ahead of the world.
#   bash tests/operate.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-operate.XXXXXX)
cleanup() {
  "$JITI" stop --store "$S" >/dev/null 2>&1
  kill_kernels
  rm -rf "$tmp"
}
S=$tmp/s
trap cleanup EXIT
unset JITI_STORE JITI_NO_CREATE

t did-you-mean 2 "'evl' is not a jiti command; did you mean 'eval'\?" -- "$JITI" evl
t no-guess 2 "not a jiti command\. See" -- "$JITI" frobnicate
one_line='^[^
]*$'   # one line, not the help page
t diff-one-arg 2 "^jiti diff: give two revisions: jiti diff A B" -- "$JITI" diff 1 --store "$S"
t diff-one-line 2 "$one_line" -- "$JITI" diff 1 --store "$S"
t show-no-arg 2 "^jiti show: give a revision" -- "$JITI" show --store "$S"
t show-one-line 2 "$one_line" -- "$JITI" show --store "$S"
t rollback-no-arg 2 "^jiti rollback: give the revision" -- "$JITI" rollback --store "$S"
t rollback-one-line 2 "$one_line" -- "$JITI" rollback --store "$S"
t stop-no-kernel 1 "^jiti stop: no kernel is running for [^ ]*: nothing to stop$" -- "$JITI" stop --store "$tmp/none"

# a new store is announced; JITI_NO_CREATE makes --create required
t no-create-refused 1 "there is no store at $tmp/n1; add --create" -- env JITI_NO_CREATE=1 "$JITI" kernel --store "$tmp/n1" --detach
ok no-create-nothing-made "$([[ ! -e $tmp/n1 ]]; echo $?)"
t new-store-announced 0 "created a new store at $tmp/n1" -- env JITI_NO_CREATE=1 "$JITI" kernel --store "$tmp/n1" --detach --create
"$JITI" stop --store "$tmp/n1" >/dev/null
t existing-store-quiet 0 "^jiti kernel: serving" -- env JITI_NO_CREATE=1 "$JITI" kernel --store "$tmp/n1" --detach
"$JITI" stop --store "$tmp/n1" >/dev/null
long=$tmp/$(printf 'd%.0s' $(seq 110))
t long-socket-path 1 "is too long: its socket .* would pass the 107 bytes.*nothing was created" -- "$JITI" kernel --store "$long" --detach
ok long-socket-nothing-made "$([[ ! -e $long ]]; echo $?)"
# a foreground kernel stopped with Ctrl-C names the signal it got
"$JITI" kernel --store "$tmp/fg" >"$tmp/fg.log" 2>&1 &
fgp=$!; echo "$fgp" >"$tmp/kpid.$fgp"
for _ in $(seq 100); do "$JITI" status --store "$tmp/fg" >/dev/null 2>&1 && break; sleep 0.1; done
kill -INT "$fgp"; wait "$fgp"
t sigint-named 0 "shutting down \(SIGINT\)" -- cat "$tmp/fg.log"
t fg-new-store-announced 0 "creating a new store at $tmp/fg" -- cat "$tmp/fg.log"

# every list of entry kinds is the kernel's one table: the model's instructions too
kinds=$("$JITI" inspect --kind bogus x 2>&1 | sed 's/^jiti inspect: --kind needs //; s/ or /, /')
ok kinds-listed "$([[ $kinds == function,*plist,\ method-combination,\ file ]]; echo $?)"
t kinds-in-instructions 0 "kind \(one of $kinds, or null\)" -- "$JITI" session --instructions

start_kernel "$S" || { echo "FAIL kernel did not start"; finish; exit 1; }
"$JITI" eval --store "$S" '(defun price (x) (* 2 x))' >/dev/null
"$JITI" eval --store "$S" '(world-put :a 1)' >/dev/null
"$JITI" invariant add positive '(> (price 1) 0)' --store "$S" >/dev/null
# revisions: 1 initial, 2 price, 3 :a, 4 the invariant
t rollback-says-drops 1 "rolling back to revision 3 drops 1 invariant POSITIVE, 0 definitions and 0 data rows" -- "$JITI" rollback previous --store "$S"
t rollback-needs-yes 1 "predates the invariant POSITIVE: rolling back would remove it; run again with --yes.*nothing was published" -- "$JITI" rollback previous --store "$S"
t rollback-invariant-kept 0 "POSITIVE" -- "$JITI" invariant list --store "$S"
t rollback-invalid-baseline 1 "does not satisfy the invariant POSITIVE that holds now.*jiti invariant remove POSITIVE" -- "$JITI" rollback 1 --yes --store "$S"
t rollback-yes 0 "drops 1 invariant POSITIVE.*revision 5 \(rollback to 3" -- "$JITI" rollback 3 --yes --store "$S"
t rollback-no-invariant-no-question 0 "drops 0 invariants, 0 definitions and 1 data row.*revision 6 \(rollback to 2" -- "$JITI" rollback 2 --store "$S"

# a pause: the advice names options that exist; --wait waits behind it
t pause 0 "paused \(generation ([0-9]+)\).*answer with: jiti act --generation [0-9]+ --evaluate SOURCE \| --abort$" -- "$JITI" eval --store "$S" --on-error pause '(error "stop here")'
gen=$(jfield generation)
t apply-while-paused 1 "paused: a transaction is paused; nothing ran.*run this again with --wait" -- "$JITI" apply --store "$S" -e '(defun zz () 1)'
( sleep 1; "$JITI" act --store "$S" --generation "$gen" --abort >/dev/null ) &
abp=$!
t apply-wait 0 "revision 7" -- "$JITI" apply --store "$S" --wait -e '(defun zz () 1)'
wait "$abp"
t generation-not-a-number 2 "^jiti act: --generation takes a whole number.*\(got 'abc'\)$" -- "$JITI" act --store "$S" --generation abc --abort
t generation-ahead 1 "generation 999999 is ahead of the world \(it is at generation [0-9]+\)" -- "$JITI" act --store "$S" --generation 999999 --resume x
finish
