#!/usr/bin/env bash
# The store commands end to end on temporary stores: init, apply, invariant,
# log, show, diff, rollback, events, recover-session; unsafe and failing
# transactions leave CURRENT unchanged; recovery after `kill -9` of a running
# apply; damaged, missing and unreadable stores; REV syntax; --help.
#   bash tests/store_cli.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d); bg=""
trap '[[ -n $bg ]] && kill -9 $bg 2>/dev/null; rm -rf "$tmp"' EXIT
S=$tmp/store
cur() { "$JITI" log -n 1 --store "$1" | awk '{print $1}'; }

# --- help and usage of every command
for c in init apply invariant recover-session log show diff rollback events; do
  t "help-$c" 0 "usage: jiti $c" -- "$JITI" $c --help
done
t top-help-lists-store-commands 0 "recover-session" -- "$JITI" --help
t apply-no-source 2 "usage: jiti apply" -- "$JITI" apply --store "$S"
t apply-both 2 "not both" -- "$JITI" apply --store "$S" -e 1 file.lisp
t apply-bad-fuel 2 "needs a non-negative number" -- "$JITI" apply --fuel x -e 1 --store "$S"
t store-needs-dir 2 "needs a directory" -- "$JITI" log --store
# the helpers' messages (options, store, REV), printed by each command as its own
t msg-store-empty 2 "^jiti log: --store needs a non-empty directory$" -- "$JITI" log --store=
t msg-heap 2 "^jiti apply: --heap needs a non-negative number \(suffixes K, M, G\)$" -- "$JITI" apply --heap x -e 1
t msg-output 2 "^jiti eval: --output needs a non-negative number \(suffixes K, M, G\)$" -- "$JITI" eval --output
t msg-grant 2 "^jiti recover-session: --allow-foreign needs a library" -- "$JITI" recover-session --allow-foreign
t msg-no-store 1 "^jiti show: no store at $tmp/none \(create one with" -- "$JITI" show 1 --store "$tmp/none"
t log-bad-option 2 "unknown option" -- "$JITI" log --frob --store "$S"
t log-bad-n 2 "positive number" -- "$JITI" log -n 0 --store "$S"
t show-no-rev 2 "jiti show: give a revision" -- "$JITI" show --store "$S"
t diff-one-rev 2 "jiti diff: give two revisions" -- "$JITI" diff 1 --store "$S"
t invariant-bad-sub 2 "not add, remove or list" -- "$JITI" invariant frob --store "$S"
t invariant-add-missing 2 "usage: jiti invariant" -- "$JITI" invariant add only-name --store "$S"

# --- a missing store: every command names it and exits 1
for c in "log" "show 1" "diff 1 1" "rollback 1" "events" "recover-session" "apply -e 1" \
         "invariant list" "invariant remove x"; do
  t "missing-store-${c%% *}" 1 "no store at $tmp/none" -- "$JITI" $c --store "$tmp/none"
done
ok missing-store-not-created "$([[ ! -e $tmp/none ]]; echo $?)"
t default-store-env 1 "no store at $tmp/env" -- env JITI_STORE="$tmp/env" "$JITI" log

# --- init, apply, log, show, diff
t init 0 "revision 1 \(initial" -- "$JITI" init --store "$S"
t init-again 1 "exists already" -- "$JITI" init --store "$S"
# a store directory another user could write (or owns) is refused, naming the fix
W=$tmp/shared; mkdir -p "$W"; chmod 777 "$W"
t init-world-writable 1 "writable by others \(mode 777\); run: chmod go-w $W" -- "$JITI" init --store "$W"
chmod 775 "$W"
t init-group-writable 1 "writable by its group" -- "$JITI" init --store "$W"
chmod 755 "$W"
t init-owner-only 0 "revision 1" -- "$JITI" init --store "$W"
chmod 777 "$W"
t log-world-writable 1 "chmod go-w" -- "$JITI" log --store "$W"
chmod 755 "$W"
if id nobody >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
  chown nobody "$W"
  t store-of-another-user 1 "belongs to another user" -- "$JITI" log --store "$W"
  chown "$(id -u)" "$W"
fi
ok store-mode-0700 "$([[ $(stat -c %a "$S") == 700 ]]; echo $?)"
t apply-expr 0 "^revision 2 \(generation 2\): \+4 ~0 -0$" -- "$JITI" apply --store "$S" \
  -e '(defun price (n) (* n 10)) (defvar *rate* 5) (world-put :stock 3) (world-put "item" (list 1 "two"))'
cat > "$tmp/change.lisp" <<'L'
(defun price (n) (* n *rate*))
(defun total (items) (reduce #'+ (mapcar #'price items)))
(world-rem "item")
(princ (total '(1 2 3)))
L
t apply-file 0 $'^30\nrevision 3 \\(generation 3\\): \\+1 ~1 -1$' -- "$JITI" apply --store "$S" --summary "price by rate" "$tmp/change.lisp"
t apply-no-change 0 "no change: revision 3 stays CURRENT" -- "$JITI" apply --store "$S" -e '(+ 1 2)'
# source that is not UTF-8, or holds a NUL byte, is refused before anything runs
printf '(defun bad () "\xff")' >"$tmp/latin1.lisp"
printf '(defun bad () 1)\0' >"$tmp/nul.lisp"
t apply-not-utf8 1 "^jiti apply: $tmp/latin1.lisp is not valid UTF-8 \(at byte 15\); nothing was run$" -- \
  "$JITI" apply --store "$S" "$tmp/latin1.lisp"
t apply-expr-not-utf8 1 "the source is not valid UTF-8 \(at byte 15\)" -- "$JITI" apply --store "$S" -e "$(cat "$tmp/latin1.lisp")"
t apply-nul 1 "nul.lisp holds a NUL byte \(at byte 16\); nothing was run" -- "$JITI" apply --store "$S" "$tmp/nul.lisp"
t invariant-not-utf8 1 "invariant add: the source is not valid UTF-8" -- \
  "$JITI" invariant add --store "$S" pos "$(printf '(eq 1 "\xff")')"
t invariant-name-not-utf8 1 "an argument is not valid UTF-8" -- \
  "$JITI" invariant add --store "$S" "$(printf 'p\xff')" '(eq 1 1)'
t apply-not-utf8-unchanged 0 "^3 " -- "$JITI" log -n 1 --store "$S"
t apply-stdin 0 "revision 4" -- bash -c "echo '(world-put :stock 4)' | '$JITI' apply --store '$S' -"
t log 0 "^4 +[0-9-]+T[0-9:]+Z  action +\+0 ~1 -0  apply -.*CURRENT.*
3 .*action +\+1 ~1 -1  price by rate
2 .*\+4 ~0 -0.*
1 .*initial" -- "$JITI" log --store "$S"
t log-n 0 "^4 [^
]*$" -- "$JITI" log -n 1 --store "$S"
t log-graph 0 "^\* 4 .*
\|
\* 3 .*
\|
\* 2 .*
\|
\* 1 " -- "$JITI" log --graph --store "$S"
t show 0 "revision 3
parent: +2
generation: +3
time: +[0-9-]+T[0-9:]+Z
kernel version: +[0-9.]+
kind: +action
summary: +price by rate
response id: +-.*
changed function PRICE
;; from $tmp/change.lisp:1:1
\(defun price \(n\) \(\* n \*rate\*\)\).*
removed data \"item\"" -- "$JITI" show 3 --store "$S"
t show-added-total 0 "added function TOTAL
;; from $tmp/change.lisp:2:1
\(defun total" -- "$JITI" show HEAD~1 --store "$S"
t show-variable 0 "added variable \*RATE\*
\(defvar \*rate\* 5\)" -- "$JITI" show 2 --store "$S"
t diff 0 "changed function PRICE
--- revision 2:function/PRICE
\+\+\+ revision 4:function/PRICE
@@ -1,1 \+1,2 @@
-\(defun price \(n\) \(\* n 10\)\)
\+;; from $tmp/change.lisp:1:1
\+\(defun price \(n\) \(\* n \*rate\*\)\)" -- "$JITI" diff 2 HEAD --store "$S"
t diff-summary 0 "2 -> 4: \+1 ~2 -1$" -- "$JITI" diff 2 4 --store "$S"
t diff-same 0 "^4 -> 4: \+0 ~0 -0$" -- "$JITI" diff HEAD 4 --store "$S"
t diff-removed 0 "removed data \"item\"" -- "$JITI" diff 2 3 --store "$S"

# --- show and diff decode every storable value without a world that knows
# its types (a structure, a hash table with its contents), write data rows
# and values as forms that paste back, and lay long definitions out in lines
# (a definition inside another form keeps no text as written: it is shown
# in its canonical form)
D=$tmp/describe
"$JITI" init --store "$D" >/dev/null
"$JITI" apply --store "$D" -e '(defstruct order id items)
(progn (defun total-price (price item-type)
  (let ((rate (if (eq item-type :food) 0.02 0.08)))
    (+ price (* price rate) (if (> price 1000) (- (* price 0.01)) 0)))))
(defvar *stock* (make-hash-table :test (quote equal)))
(setf (gethash "widget" *stock*) 3 (gethash "gadget" *stock*) (list :low (quote sym)))
(world-put :widget (make-order :id 7 :items (list :a "b")))
(world-put :tags (list (quote red) "blue"))' >/dev/null
t show-structure 0 "added data :WIDGET
\(WORLD-PUT :WIDGET #S\(ORDER :ID 7 :ITEMS \(:A \"b\"\)\)\)" -- "$JITI" show HEAD --store "$D"
t show-row-quoted 0 "\(WORLD-PUT :TAGS '\(RED \"blue\"\)\)" -- "$JITI" show HEAD --store "$D"
t show-hash-table 0 "added variable \*STOCK\*
\(DEFPARAMETER \*STOCK\*
  \(LET \(\(H \(MAKE-HASH-TABLE :TEST 'EQUAL\)\)\)
    \(SETF \(GETHASH \"widget\" H\) 3\)
    \(SETF \(GETHASH \"gadget\" H\) '\(:LOW SYM\)\)
    H\)\)" -- "$JITI" show HEAD --store "$D"
t show-laid-out 0 "\(DEFUN TOTAL-PRICE \(PRICE ITEM-TYPE\)
  \(LET \(\(RATE \(IF \(EQ ITEM-TYPE :FOOD\) 0.02 0.08\)\)\)" -- "$JITI" show HEAD --store "$D"
"$JITI" apply --store "$D" -e '(progn (defun total-price (price item-type)
  (let ((rate (if (eq item-type :food) 0.02 0.07)))
    (+ price (* price rate) (if (> price 1000) (- (* price 0.01)) 0)))))
(world-put :widget (make-order :id 8 :items nil))' >/dev/null
t diff-changed-lines 0 "changed function TOTAL-PRICE
--- revision 2:function/TOTAL-PRICE
\+\+\+ revision 3:function/TOTAL-PRICE
@@ -1,3 \+1,3 @@
 \(DEFUN TOTAL-PRICE \(PRICE ITEM-TYPE\)
-  \(LET \(\(RATE \(IF \(EQ ITEM-TYPE :FOOD\) 0.02 0.08\)\)\)
\+  \(LET \(\(RATE \(IF \(EQ ITEM-TYPE :FOOD\) 0.02 0.07\)\)\)
     \(\+ PRICE" -- "$JITI" diff 2 3 --store "$D"
t diff-changed-row 0 "changed data :WIDGET
--- revision 2:data/:WIDGET
\+\+\+ revision 3:data/:WIDGET
@@ -1,1 \+1,1 @@
-\(WORLD-PUT :WIDGET #S\(ORDER :ID 7 :ITEMS \(:A \"b\"\)\)\)
\+\(WORLD-PUT :WIDGET #S\(ORDER :ID 8 :ITEMS NIL\)\)" -- "$JITI" diff 2 3 --store "$D"
# pasted back, the shown forms make the same entries
# (the reader reads a whole program before running it, so a #S form needs
# its structure defined by an earlier apply)
"$JITI" show 2 --store "$D" | sed -n '/^(/,/^$/p' > "$tmp/pasted.lisp"
awk -v RS= '/^\((DEFSTRUCT|defstruct)/ { print > "'"$tmp"'/pasted-types.lisp"; next }
            { print > "'"$tmp"'/pasted-rest.lisp" }' "$tmp/pasted.lisp"
"$JITI" init --store "$D.2" >/dev/null
"$JITI" apply --store "$D.2" "$tmp/pasted-types.lisp" >/dev/null
t show-pastes-back 0 "revision 3" -- "$JITI" apply --store "$D.2" "$tmp/pasted-rest.lisp"
forms() { sed -n '/^(/,/^$/p' | awk -v RS= '{ gsub(/\n/, "~"); print }' | sort; }
"$JITI" show 2 --store "$D" | forms > "$tmp/forms-orig"
{ "$JITI" show 2 --store "$D.2"; echo; "$JITI" show 3 --store "$D.2"; } | forms > "$tmp/forms-pasted"
ok show-pasted-same "$([[ $(wc -l < "$tmp/forms-orig") == 5 ]] && cmp -s "$tmp/forms-orig" "$tmp/forms-pasted"; echo $?)"

# --- failing transactions change nothing
t apply-error 1 "DIVISION-BY-ZERO.*nothing was published; CURRENT stays revision 4 of the store at $S" \
  -- "$JITI" apply --store "$S" -e '(defun junk () 1) (/ 1 0)'
t apply-limit 1 "limit: FUEL-EXHAUSTED" -- "$JITI" apply --store "$S" --fuel 10000 -e '(loop)'
t apply-reader-error 1 "nothing was published" -- "$JITI" apply --store "$S" -e '(defun junk () 1) (1 2'
t apply-unexportable 1 "jiti apply: unsafe: unexportable: function COUNTER" -- "$JITI" apply --store "$S" -e '(let ((n 0)) (defun counter () (incf n)))'
t apply-missing-file 1 "cannot read $tmp/nope.lisp" -- "$JITI" apply --store "$S" "$tmp/nope.lisp"
ok unchanged-after-failures "$([[ $(cur "$S") == 4 ]]; echo $?)"
t junk-not-published 1 "UNDEFINED-FUNCTION|undefined" -- "$JITI" apply --store "$S" -e '(junk)'

# --- invariants
t invariant-add 0 "revision 5" -- "$JITI" invariant add stock-positive '(> (world-get :stock) 0)' --store "$S"
t invariant-list 0 "STOCK-POSITIVE  \(> \(WORLD-GET :STOCK\) 0\)" -- "$JITI" invariant list --store "$S"
t invariant-add-failing 1 "unsafe: invariant NEVER returned NIL" -- "$JITI" invariant add never 'nil' --store "$S"
t invariant-add-bad-source 1 "invalid-arguments: .*exactly one form" -- "$JITI" invariant add two '1 2' --store "$S"
t invariant-remove-missing 1 "invalid-arguments: there is no invariant named nope" -- "$JITI" invariant remove nope --store "$S"
t apply-unsafe 1 "^jiti apply: unsafe: invariant STOCK-POSITIVE returned NIL
nothing was published; CURRENT stays revision 5" -- "$JITI" apply --store "$S" -e '(world-put :stock 0) (defun extra () 1)'
ok unsafe-left-current "$([[ $(cur "$S") == 5 ]]; echo $?)"
t extra-not-defined 0 "no change" -- "$JITI" apply --store "$S" -e '(if (fboundp (quote extra)) (error "leaked") 1)'
ok still-5 "$([[ $(cur "$S") == 5 ]]; echo $?)"

# --- events
t events 0 "^[0-9]+ +[0-9-]+T[0-9:]+Z  accepted +attempt [0-9]+ +command=apply outcome=accepted revision=5 generation=5
[0-9]+ +[0-9-]+T[0-9:]+Z  started +attempt [0-9]+ +command=apply source=.* parent=5 generation=5
[0-9]+ +[0-9-]+T[0-9:]+Z  rejected +attempt [0-9]+ +command=apply outcome=unsafe message=invariant STOCK-POSITIVE returned NIL$" -- "$JITI" events -n 3 --store "$S"
t events-json 0 '^\{"seq":[0-9]+,"time":[0-9]+,"event":"accepted","attempt":[0-9]+,"command":"apply","outcome":"accepted","revision":5,"generation":5\}
\{"seq":[0-9]+,"time":[0-9]+,"event":"started",.*
\{"seq":[0-9]+,"time":[0-9]+,"event":"rejected","attempt":[0-9]+,"command":"apply","outcome":"unsafe"' -- "$JITI" events -n 3 --json --store "$S"
t events-outcomes 0 "outcome=accepted.*outcome=limit|outcome=limit.*outcome=accepted" -- bash -c "'$JITI' events --store '$S' | tr '\n' ' '"
t events-error 0 "aborted +attempt [0-9]+ +command=apply outcome=error message=DIVISION-BY-ZERO" -- "$JITI" events --store "$S"
t events-started 0 "started +attempt 1 +command=apply source=.* parent=1 generation=1" -- "$JITI" events --store "$S"
nj=$("$JITI" events --json --store "$S" | python3 -c 'import sys,json; print(sum(1 for l in sys.stdin if json.loads(l)["seq"]))' 2>&1)
ok events-json-parses "$([[ $nj =~ ^[0-9]+$ && $nj -gt 10 ]]; echo $?)"

# --- rollback
t rollback-unsafe 1 "jiti rollback: unsafe: .*invariant STOCK-POSITIVE" -- "$JITI" rollback 1 --yes --store "$S"
t rollback-previous 0 "revision 6 \(rollback to 4, generation 6\): \+0 ~0 -1" -- "$JITI" rollback previous --yes --store "$S"
t log-rollback 0 "^6 .*rollback\(4\) .*rollback to revision 4" -- "$JITI" log -n 1 --store "$S"
t rollback-history-kept 0 "^5 .*invariant-add stock-positive: \\(> \\(world-get :stock\\) 0\\)" -- bash -c "'$JITI' log --store '$S' | sed -n 2p"
t show-rollback 0 "kind: +rollback \(to revision 4\).*removed invariant STOCK-POSITIVE" -- "$JITI" show 6 --store "$S"
t rollback-to-head 0 "revision 7 \(rollback to 6" -- "$JITI" rollback HEAD --store "$S"

# --- REV syntax
for r in ../../CURRENT -1 0 1e3 HEAD~-1 HEAD~ head 99999999999999999999999 +1 007 " 1" 1x HEAD~1~1 ""; do
  t "bad-rev-[$r]" 2 "is not a revision: use a number from 1, HEAD, HEAD~N or previous" -- "$JITI" show "$r" --store "$S"
done
t bad-rev-rollback 2 "is not a revision" -- "$JITI" rollback ../../CURRENT --store "$S"
t bad-rev-diff 2 "^jiti diff: '-1' is not a revision" -- "$JITI" diff 1 -1 --store "$S"
t rev-too-big 1 "no revision 999 .*CURRENT is 7" -- "$JITI" show 999 --store "$S"
t rev-before-1 1 "before revision 1" -- "$JITI" show HEAD~7 --store "$S"
t rev-head-n 0 "^revision 5" -- "$JITI" show HEAD~2 --store "$S"
ok bad-rev-no-side-effect "$([[ $(cur "$S") == 7 ]]; echo $?)"

# --- recover-session
t recover 0 "recovered the store at $S
revision: +7 \(rollback, [0-9-]+T[0-9:]+Z\)
generation: +8
entries: +4 \(functions 2, macros 0, variables 1, structures 0, classes 0, generic functions 0, methods 0, data 1, invariants 0\).*
interrupted: none
last events:
  [0-9]+ .*recovered" -- "$JITI" recover-session --store "$S"
t recover-full 0 "whole history" -- "$JITI" recover-session --full --store "$S"
t recover-bad-arg 2 "unexpected argument" -- "$JITI" recover-session extra --store "$S"
# a socket that accepts but answers nothing (a kernel killed a moment ago):
# no kernel serves, so this is an offline recovery
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(16)
while True:
    c, _ = s.accept(); c.close()' "$S/kernel.sock" & mute=$!
for _ in $(seq 100); do [[ -S $S/kernel.sock ]] && break; sleep 0.05; done
t recover-beside-dying-kernel 0 "^recovered the store at $S" -- "$JITI" recover-session --store "$S"
kill "$mute"; wait "$mute" 2>/dev/null; rm -f "$S/kernel.sock"

# kill -9 of a long apply: CURRENT stays, the attempt is reported interrupted
"$JITI" apply --store "$S" --fuel 0 -e '(world-put :half 1) (loop)' >/dev/null 2>&1 & bg=$!
for i in $(seq 1 200); do
  "$JITI" events -n 1 --json --store "$S" 2>/dev/null | grep -q '"started"' && break; sleep 0.05
done
t busy-while-writer 1 "cannot open the store at $S: .*(lock|pid|busy)" -- "$JITI" apply --store "$S" -e 1
t recover-while-writer 1 "cannot open the store at $S" -- "$JITI" recover-session --store "$S"
kill -9 $bg; wait $bg 2>/dev/null; bg=""
att=$("$JITI" events -n 1 --json --store "$S" | sed -n 's/.*"attempt":\([0-9]*\).*/\1/p')
t recover-after-kill 0 "revision: +7 .*
interrupted: 1 attempt \($att\); never replayed
last events:
  [0-9]+ .*recovered .*
  [0-9]+ .*interrupted +attempt $att " -- "$JITI" recover-session --store "$S"
t recover-again-none 0 "interrupted: none" -- "$JITI" recover-session --store "$S"
t half-not-published 0 "no change" -- "$JITI" apply --store "$S" -e '(if (world-get :half) (error "leaked") 1)'

# an invariant that held when published but fails on the recovered world:
# the function it calls was analysed with the macro of its time; the world
# rebuilt from the store analyses it with the macro changed since
S2=$tmp/s2
"$JITI" init --store "$S2" >/dev/null && "$JITI" apply --store "$S2" -e '(defmacro m () 1) (defun g () (m))' >/dev/null
t invariant-analysed 0 "revision 3" -- "$JITI" invariant add once '(= (g) 1)' --store "$S2"
t invariant-macro-changed 0 "revision 4" -- "$JITI" apply --store "$S2" -e '(g) (defmacro m () 2)'
t recover-invalid-baseline 1 "an invariant fails on revision 4 of the store at $S2: invariant ONCE returned NIL
the world would be faulted \(invalid-baseline\)
nothing was changed" -- "$JITI" recover-session --store "$S2"

# a function whose source no longer analyses (its macro changed since):
# imported lazily, so every command works until it is called; --full finds it
S3=$tmp/s3
"$JITI" init --store "$S3" >/dev/null
"$JITI" apply --store "$S3" -e '(progn (defvar *v* 1) (defmacro m () 1) (defun g () (m)) (defun h () (let ((*v* 2)) (v))) (defun v () *v*))' >/dev/null
"$JITI" apply --store "$S3" -e '(defmacro m () (error "m is gone"))' >/dev/null
t lazy-recover 0 "recovered the store at $S3" -- "$JITI" recover-session --store "$S3"
t lazy-recover-full 1 "revision 3 of the store at $S3 cannot be rebuilt: cannot analyse function G: m is gone
return to a revision that imports with 'jiti rollback REV --store $S3'.*
nothing was changed" -- "$JITI" recover-session --full --store "$S3"
t lazy-special-binding 0 "revision 4" -- "$JITI" apply --store "$S3" -e '(world-put :h (h))'
t lazy-special-binding-value 0 "\(WORLD-PUT :H 2\)" -- "$JITI" show HEAD --store "$S3"
t lazy-call-fails 1 "m is gone" -- "$JITI" apply --store "$S3" -e '(g)'

# --- damaged stores: exit 1 naming the store; nothing changes
C=$tmp/copy
cp -r "$S" "$C"
sz=$(stat -c %s "$C/data.mdb")
truncate -s $((sz / 2)) "$C/data.mdb"
t corrupt-truncated 1 "store at $C.*(truncated|damaged|short)" -- "$JITI" recover-session --store "$C"
ok truncated-untouched "$([[ $(stat -c %s "$C/data.mdb") == $((sz / 2)) ]]; echo $?)"
truncate -s 0 "$C/data.mdb"
t corrupt-empty 1 "store at $C" -- "$JITI" recover-session --store "$C"
t corrupt-log 1 "store at $C" -- "$JITI" log --store "$C"
rm -rf "$C"; cp -r "$S" "$C"
"$JITI" apply --store "$C" -e '(world-put :marker "QQMARKERQQ")' >/dev/null
md5=$(md5sum < "$C/data.mdb")
# flip a byte inside every copy of the marker (entry bytes in the entries db)
python3 - "$C/data.mdb" <<'P'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); i = 0; n = 0
while True:
    i = b.find(b"QQMARKERQQ", i)
    if i < 0: break
    b[i + 3] ^= 0x20; i += 1; n += 1
open(p, "wb").write(b)
P
t corrupt-flipped 1 "the store at $C is damaged: .*(hash|damaged)" -- "$JITI" recover-session --store "$C"
rm -rf "$C"; cp -r "$S" "$C"
printf 'garbage garbage garbage garbage' | dd of="$C/data.mdb" bs=1 seek=0 conv=notrunc 2>/dev/null
t corrupt-header 1 "store at $C" -- "$JITI" recover-session --store "$C"
t corrupt-header-show 1 "store at $C" -- "$JITI" show 1 --store "$C"
mkdir -p "$tmp/empty"
t not-a-store 1 "no store at $tmp/empty|store at $tmp/empty" -- "$JITI" recover-session --store "$tmp/empty"

# types imported whatever order the store hands them over in: a type that
# includes (or inherits from) one whose name sorts after it, and a report
# function defined after the condition that names it
D=$tmp/deps
"$JITI" init --store "$D" >/dev/null
t types-applied 0 "revision 2" -- "$JITI" apply --store "$D" -e '(progn (defstruct zbase a) (defstruct (abc (:include zbase)) b) (define-condition zc (error) ()) (define-condition ac (zc) ()) (define-condition c1 (error) () (:report my-report)) (defun my-report (c s) (declare (ignore c)) (format s "reported")))'
t types-recover 0 "recovered the store" -- "$JITI" recover-session --store "$D"
t types-work 0 "revision 3" -- "$JITI" apply --store "$D" -e '(world-put :check (list (abc-a (make-abc :a 1)) (princ-to-string (make-condition (quote c1))) (typep (make-condition (quote ac)) (quote zc))))'
t types-values 0 '\(1 "reported" T\)' -- "$JITI" show HEAD --store "$D"

# permission denied (as root: run as nobody)
if [[ $(id -u) == 0 ]] && setpriv --reuid=65534 --regid=65534 --clear-groups "$JITI" --version >/dev/null 2>&1; then
  chmod 755 "$tmp"
  t permission-denied 1 "store at $S.*(ermission|EPERM|another user)" -- setpriv --reuid=65534 --regid=65534 --clear-groups "$JITI" recover-session --store "$S"
  t permission-denied-log 1 "store at $S" -- setpriv --reuid=65534 --regid=65534 --clear-groups "$JITI" log --store "$S"
fi

# --- a store written by format 1 (no packages) is read as it is and
# upgraded in place by the first command that writes; its names read as
# COMMON-LISP-USER's
V1=$tmp/v1
mkdir -p "$V1"; cp "$(dirname "${BASH_SOURCE[0]}")/fixtures/v1-store/data.mdb" "$V1/"
chmod 600 "$V1/data.mdb"
t v1-log 0 "invariant add origin-is-zero" -- "$JITI" log --store "$V1"
t v1-show 0 "added function NORM" -- "$JITI" show 2 --store "$V1"
t v1-recover 0 "entries: +8 \(functions 2, macros 1, variables 1, structures 1, classes 0, generic functions 0, methods 0, data 2, invariants 1\)" -- \
  "$JITI" recover-session --store "$V1"
t v1-use 0 '\(14 14 NORM "COMMON-LISP-USER"\)' -- "$JITI" apply --store "$V1" -e \
  '(print (list (doubled-norm (make-point :x 3 :y -4)) (twice (norm (make-point :x -7 :y 0))) (quote cl-user::norm) (package-name (symbol-package (quote norm)))))'
t v1-apply 0 "revision 4" -- "$JITI" apply --store "$V1" -e '(defpackage :geo (:use :cl) (:export #:dist))'
t v1-apply-pkg 0 "revision 5" -- "$JITI" apply --store "$V1" -e '(defun geo:dist (p) (norm p))'
t v1-after 0 "packages 1" -- "$JITI" recover-session --store "$V1"
t v1-show-pkg 0 $'added function GEO::DIST\n\\(defun geo:dist \\(p\\) \\(norm p\\)\\)' -- "$JITI" show 5 --store "$V1"
t v1-invariant 0 "ORIGIN-IS-ZERO" -- "$JITI" invariant list --store "$V1"

finish
