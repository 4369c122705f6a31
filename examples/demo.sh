#!/usr/bin/env bash
# The main demo (`make demo`): the sales-tax calculator grown in three
# requests as checked transactions of a live world — a kernel serves the
# store, each change goes through it and is published as a revision — with
# an unsafe change refused by an invariant, a kernel killed (kill -9) while a
# change is provably running in it, and recovery of exactly the last
# accepted revision.  The model's proposals are scripted here as operator
# changes (`jiti apply`).
set -u
J=${JITI:-build/jiti}
dir=$(mktemp -d)
S=(--store "$dir/calc.jiti")
cleanup() {
  [[ -e $dir/calc.jiti/kernel.pid ]] && "$J" stop "${S[@]}" >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
# the command as one would type it: arguments with spaces or quotes quoted
shown() {
  local a out=
  for a; do
    if [[ $a =~ [[:space:]\'\"\(\)\;\&\|\<\>\$\*] ]]; then a="'${a//\'/\'\\\'\'}'"; fi
    out+=" $a"
  done
  printf '$ jiti%s\n' "$out"
}
run() { shown "$@"; "$J" "$@"; }
# a call to the running application: it changes nothing, so no revision
ask() { "$J" eval "${S[@]}" "$1" | grep -v '^NIL$'; }

run init "${S[@]}"
# A generous step budget (1e9) so that the long change below is still
# running when the kernel is killed.
run kernel "${S[@]}" --fuel 1000000000 --detach

say "Request 1: create a sales-tax calculator using a 5% tax rate"
run apply "${S[@]}" --summary "5% sales tax" -e '
(progn (defun sales-tax (price) (* price 0.05))
       (defun total-price (price) (+ price (sales-tax price))))'
ask '(format t "total-price 100.00 = ~,2f~%" (total-price 100.00))'

say "Request 2: support different tax rates"
run apply "${S[@]}" --summary "tax rate as a parameter" -e '
(progn (defun sales-tax (price rate) (* price rate))
       (defun total-price (price rate) (+ price (sales-tax price rate))))'
ask '(format t "total-price 100.00 0.05 = ~,2f~%total-price 100.00 0.08 = ~,2f~%"
             (total-price 100.00 0.05) (total-price 100.00 0.08))'

say "The operator adds a safety invariant: tax is never negative"
run invariant add "${S[@]}" tax-never-negative \
  '(and (>= (sales-tax 100.00 0.02) 0) (>= (sales-tax 100.00 0.08) 0))'

say "Request 3: different rates for food and non-food items"
run apply "${S[@]}" --summary "food 2%, other 8%" -e '
(progn (defun rate-for (item-type) (if (eq item-type :food) 0.02 0.08))
       (defun total-price (price item-type)
         (+ price (sales-tax price (rate-for item-type)))))'
ask '(format t "total-price 100.00 :food = ~,2f~%total-price 100.00 :clothing = ~,2f~%"
             (total-price 100.00 :food) (total-price 100.00 :clothing))'

say "A bad proposal makes tax negative: the invariant refuses it"
run apply "${S[@]}" --summary "bad: negative tax" -e '(defun sales-tax (price rate) (- (* price rate)))'
echo "(exit status $?: nothing was published)"
ask '(format t "sales-tax 100.00 0.08 is still ~,2f~%" (sales-tax 100.00 0.08))'

say "The kernel is killed (kill -9) in the middle of a change"
shown apply "${S[@]}" --summary "long change" -e '(progn (defun total-price (p i) 0) (loop))' | sed 's/$/ \&/'
"$J" apply "${S[@]}" --summary "long change" -e '(progn (defun total-price (p i) 0) (loop))' &
client=$!
# The change is provably running once its `started` event is in the store.
started=
for _ in $(seq 600); do
  if "$J" events "${S[@]}" --json -n 5 | grep -q '"event":"started".*"source":"(progn (defun total-price (p i) 0) (loop))"'; then
    started=1; break
  fi
  sleep 0.05
done
"$J" events "${S[@]}" -n 1
if [[ -z $started ]]; then echo "demo: the long change never started" >&2; exit 1; fi
pid=$(cat "$dir/calc.jiti/kernel.pid")
echo "\$ kill -9 $pid   # the kernel; its worker dies with it"
kill -9 "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
wait "$client"
echo "(the client's exit status: $?)"

say "Recovery brings back the last accepted revision; the change is marked interrupted, never replayed"
run recover-session "${S[@]}"
run kernel "${S[@]}" --fuel 1000000000 --detach
ask '(format t "total-price 100.00 :food = ~,2f (the accepted calculator)~%" (total-price 100.00 :food))'

say "History"
run log --graph "${S[@]}"
run stop "${S[@]}"
