#!/usr/bin/env bash
# The main demo (`make demo`): the sales-tax calculator of the brief, grown
# in three requests as checked transactions on a store — an unsafe change
# refused by an invariant, a crash in the middle of a change, and recovery
# of exactly the last accepted revision.  The model's proposals are scripted
# here as operator actions (`jiti apply`); the daemon and model client come
# in later issues.
set -u
J=${JITI:-build/jiti}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
S=(--store "$dir/calc.jiti")
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() { printf '$ jiti %s\n' "$*"; "$J" "$@"; }
# evaluate without changing anything (apply publishes nothing then)
ask() { "$J" apply "${S[@]}" -e "$1" | grep -v '^no change: '; }

run init "${S[@]}"

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

say "A change is killed half-way (kill -9): recovery brings back the last accepted revision"
"$J" apply "${S[@]}" --summary "long change" -e '(progn (defun total-price (p i) 0) (loop))' &
pid=$!
sleep 1
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
run recover-session "${S[@]}"
ask '(format t "total-price 100.00 :food = ~,2f (the accepted calculator)~%" (total-price 100.00 :food))'

say "History"
run log --graph "${S[@]}"
run diff 2 4 "${S[@]}"
