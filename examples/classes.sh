#!/usr/bin/env bash
# Live class redefinition: a small library of accounts (a class with a
# print-object method) is running in a kernel; its instances are stored in
# the world's data table by ordinary application calls.  The class is then
# redefined with a new slot, and an update-instance-for-redefined-class
# method migrates every stored instance inside that same transaction.  A
# second redefinition whose migration fails pauses; aborting it restores the
# class and every instance.  The kernel is killed (kill -9) and restarted:
# the instances come back in their new shape.
set -u
J=${JITI:-build/jiti}
dir=$(mktemp -d)
S=(--store "$dir/bank.jiti")
kpid=
trap '[ -n "$kpid" ] && kill -9 "$kpid" 2>/dev/null; rm -rf "$dir"' EXIT
if [ -t 1 ]; then B=$'\033[1m' N=$'\033[0m'; else B= N=; fi
say() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
run() { printf '$ jiti %s\n' "$*"; "$J" "$@"; }
gen() { "$J" status --json "${S[@]}" | sed -n 's/^ *"generation": \([0-9]*\),*$/\1/p'; }
act() { run act "${S[@]}" --generation "$(gen)" --evaluate "$1"; }
start() {
  "$J" kernel "${S[@]}" >>"$dir/kernel.log" 2>&1 &
  kpid=$!
  for _ in $(seq 100); do "$J" status "${S[@]}" >/dev/null 2>&1 && return; sleep 0.1; done
}

start
say "Define a class and how it prints"
act '(defclass account ()
       ((owner :initarg :owner :reader owner)
        (balance :initarg :balance :initform 0 :accessor balance)))'
act '(defmethod print-object ((a account) stream)
       (print-unreadable-object (a stream :type t)
         (format stream "~a: ~,2f" (owner a) (balance a))))'

say "The application stores accounts (ordinary calls, each a transaction)"
run eval "${S[@]}" '(world-put :alice (make-instance (quote account) :owner "alice" :balance 120))'
run eval "${S[@]}" '(world-put :bob (make-instance (quote account) :owner "bob" :balance 30))'
before=$("$J" status --json "${S[@]}" | sed -n 's/^ *"revision": \([0-9]*\),*$/\1/p')

say "Redefine the class with a history slot; a migration method fills it"
act '(defmethod update-instance-for-redefined-class :after
         ((a account) added discarded plist &key)
       (declare (ignore discarded plist))
       (when (member (quote history) added)
         (setf (slot-value a (quote history)) (list (list :opening-balance (balance a))))))'
act '(defclass account ()
       ((owner :initarg :owner :reader owner)
        (balance :initarg :balance :initform 0 :accessor balance)
        (history :initform nil :accessor history)))'
run eval "${S[@]}" '(list (world-get :alice) (history (world-get :alice)) (history (world-get :bob)))'

say "What the revisions recorded: the new class and the migrated rows"
run diff "$before" HEAD "${S[@]}"

say "A redefinition whose migration fails pauses; aborting restores everything"
act '(defmethod update-instance-for-redefined-class :before
         ((a account) added discarded plist &key)
       (declare (ignore discarded plist))
       (when (and (member (quote credit-limit) added) (< (balance a) 50))
         (error "no credit limit for ~a: balance ~a" (owner a) (balance a))))'
act '(defclass account ()
       ((owner :initarg :owner :reader owner)
        (balance :initarg :balance :initform 0 :accessor balance)
        (history :initform nil :accessor history)
        (credit-limit :initform 100 :accessor credit-limit)))'
run act "${S[@]}" --generation "$(gen)" --abort
run eval "${S[@]}" '(list (world-get :bob) (slot-exists-p (world-get :bob) (quote credit-limit)))'

say "kill -9 the kernel, start it again: the instances come back migrated"
kill -9 "$kpid"; wait "$kpid" 2>/dev/null
start
run eval "${S[@]}" '(format nil "~a has history ~s" (world-get :bob) (history (world-get :bob)))'
run stop "${S[@]}"
kpid=
