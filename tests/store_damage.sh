#!/usr/bin/env bash
# Damage is never silent, end to end with real kernels.
#  - The journal: acknowledged writes through a running kernel, kill -9, one
#    byte flipped in a middle record of the journal's epoch: the kernel,
#    recover-session and log refuse, naming the record and the writes after
#    it, and change nothing; recover-session --accept-loss drops them, says
#    what it dropped and records a journal-loss event.  A flip in the last
#    record is a torn tail: recovered, nothing else lost.
#  - data.mdb cut short, or a size in it pointing past the end of the file
#    (which made LMDB's reads raise SIGBUS): log, show, diff, the kernel
#    and recover-session each print a message naming the store and exit 1
#    (events too, for the file cut short).
#   bash tests/store_damage.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d)
# (a kernel that started where it should not have holds its store's lock)
trap 'kill_kernels; for l in "$tmp"/*/lock; do p=$(cat "$l" 2>/dev/null); [[ -n $p ]] && kill -9 "$p"; done 2>/dev/null
      rm -rf "$tmp"' EXIT
S=$tmp/store
PY=/usr/bin/python3; [[ -x $PY ]] || PY=python3

# journal RECORDS: "EPOCH N OFF0 LEN0 OFF1 LEN1 ..." for the header's epoch
journal() {
  $PY - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
epoch = struct.unpack_from('>Q', d, 8)[0]
off, recs = 4096, []
while off + 32 <= len(d):
    magic, n, e, q = struct.unpack_from('>IIQQ', d, off)
    if magic != 0x4a524543 or e != epoch or q != len(recs):
        break
    recs.append((off, n))
    off += 32 + n
print(epoch, len(recs), *[x for r in recs for x in r])
EOF
}
flip() {  # flip FILE OFFSET
  $PY -c "
import sys
f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x40]))" "$1" "$2"
}
cur() { "$JITI" log -n 1 --store "$1" | awk '{print $1}'; }

# The transaction id of data.mdb's newest meta page: it moves with every
# commit (a checkpoint's too).
txnid() {
  $PY -c "
import struct, sys
d = open(sys.argv[1], 'rb').read(8192)
print(max(struct.unpack_from('<Q', d, m + 16 + 128)[0] for m in (0, 4096)))" "$1"
}

# A kernel answers 6 writes (each a revision) in a burst and is killed:
# they are in its journal's epoch and not in data.mdb, unless a checkpoint
# came in between (the kernel makes one a second after the first write;
# killed after its commit and before the next epoch's header, data.mdb
# already holds the epoch and damage loses nothing): then it starts over.
# Sets epoch, nrec (at least 4), off[], len[].
crash_with_journal() {
  local dir=$1 try i t0
  for try in 1 2 3 4 5 6 7 8; do
    rm -rf "$dir"
    "$JITI" init --store "$dir" >/dev/null || return 1
    start_kernel "$dir" || return 1
    local k=$kp
    t0=$(txnid "$dir/data.mdb")
    for ((i = 1; i <= 6; i++)); do
      "$JITI" eval --store "$dir" "(world-put :k $i)" >/dev/null || return 1
    done
    kill -9 "$k"; wait "$k" 2>/dev/null
    rm -f "$dir/kernel.sock"
    read -r -a j <<<"$(journal "$dir/journal")"
    epoch=${j[0]} nrec=${j[1]} off=() len=()
    for ((r = 0; r < nrec; r++)); do off+=("${j[2 + 2 * r]}"); len+=("${j[3 + 2 * r]}"); done
    (( nrec >= 4 )) && [[ $(txnid "$dir/data.mdb") == "$t0" ]] && return 0
  done
  return 1
}
# CURRENT once a copy of store $1 is recovered as it is
recovered_current() {
  rm -rf "$tmp/copy"; cp -r "$1" "$tmp/copy"
  "$JITI" recover-session --store "$tmp/copy" >/dev/null 2>&1 && cur "$tmp/copy"
}

# --- a damaged middle record: refused everywhere, nothing written
crash_with_journal "$S"; ok crash-with-journal $?
full=$(recovered_current "$S")
flip "$S/journal" $(( off[2] + 32 + len[2] / 2 ))
cp "$S/journal" "$tmp/journal.damaged"; cp "$S/data.mdb" "$tmp/data.damaged"
after=$((nrec - 3)); records=records; ((after == 1)) && records=record
msg="record 2 of epoch $epoch, at byte ${off[2]} of $S/journal, fails its check, and $after intact $records after it hold acknowledged writes"
t recover-refuses 1 "$msg.*nothing was changed.*--accept-loss" -- "$JITI" recover-session --store "$S"
t kernel-refuses 1 "jiti kernel: cannot open the store at $S: .*$msg.*recover-session --store $S --accept-loss" \
  -- timeout 60 "$JITI" kernel --store "$S"
t kernel-detached-refuses 1 "$msg.*the kernel did not start" -- "$JITI" kernel --store "$S" --detach
t log-refuses 1 "jiti log: cannot open the store at $S: .*$msg" -- "$JITI" log --store "$S"
t events-refuses 1 "$msg" -- "$JITI" events --store "$S"
ok journal-untouched "$(cmp -s "$S/journal" "$tmp/journal.damaged"; echo $?)"
ok data-untouched "$(cmp -s "$S/data.mdb" "$tmp/data.damaged"; echo $?)"

# --- the operator's choice: what precedes the damage, and a record of the rest
out=$("$JITI" recover-session --store "$S" --accept-loss 2>&1); st=$?
ok accept-loss-status "$st"
re="dropped record 2 of epoch $epoch \(at byte ${off[2]}; it fails its check\) and the $after intact $records after it: ([0-9]+) revisions \(([0-9]+) to ([0-9]+)\)"
[[ $out =~ $re ]]; ok accept-loss-says-what $?
[[ $st -ne 0 || ! $out =~ $re ]] && echo "$out"
lost=${BASH_REMATCH[1]:-0} first=${BASH_REMATCH[2]:-0} last=${BASH_REMATCH[3]:-0}
# it drops exactly what a recovery of the undamaged journal would have reached
ok accept-loss-counts "$( ((last == full && lost == last - first + 1 && lost >= after)); echo $?)"
ok current-before-damage "$( [[ $(cur "$S") == $((first - 1)) ]]; echo $?)"
t loss-event 0 "journal-loss.*record=2 offset=${off[2]} damage=fails its check records=$after" \
  -- "$JITI" events --store "$S"
t sound-after 0 "journal: +sound" -- "$JITI" recover-session --store "$S" --accept-loss
start_kernel "$S"; ok kernel-starts-after $?
t kernel-serves-after 0 "AFTER" -- "$JITI" eval --store "$S" "(world-put :k 'after)"
"$JITI" stop --store "$S" >/dev/null

# --- the last record flipped: a torn tail, recovered with the rest
S2=$tmp/torn
crash_with_journal "$S2"; ok crash-with-journal-2 $?
full=$(recovered_current "$S2")
# the revision the last record adds, if any (it may hold events only)
gone=$($PY - "$S2/journal" "${off[nrec - 1]}" "${len[nrec - 1]}" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
p, end, n = int(sys.argv[2]) + 32, int(sys.argv[2]) + 32 + int(sys.argv[3]), 0
while p < end:
    op, db, k, v = d[p], d[p + 1], *struct.unpack_from('>II', d, p + 2)
    n += op == 1 and db == 1 and k == 8
    p += 10 + k + v
print(n)
EOF
)
flip "$S2/journal" $(( off[nrec - 1] + 32 + len[nrec - 1] - 1 ))
t torn-tail-recovers 0 "recovered the store" -- "$JITI" recover-session --store "$S2"
ok torn-tail-keeps-the-rest "$( [[ $(cur "$S2") == $((full - gone)) ]]; echo $?)"
ok torn-tail-no-loss-event "$("$JITI" events --store "$S2" | grep -q journal-loss; [[ $? -eq 1 ]]; echo $?)"

# --- data.mdb: a store with three revisions, then damage
D=$tmp/data
"$JITI" init --store "$D" >/dev/null
"$JITI" apply --store "$D" -e '(defun f () 1)' >/dev/null
"$JITI" apply --store "$D" -e '(defun g () 2)' >/dev/null
ok data-store "$( [[ $(cur "$D") == 3 ]]; echo $?)"
cp -r "$D" "$tmp/data.orig"

# cut short: found at open
truncate -s 12288 "$D/data.mdb"
for c in "log" "show 2" "diff 1 2" "events" "kernel" "recover-session"; do
  t "truncated-${c%% *}" 1 "store $D: data.mdb is truncated" -- timeout 60 "$JITI" $c --store "$D"
done

# a value whose size points past the end of the file: LMDB hands it on, and
# reading it ran into SIGBUS: the newest manifest (revisions database: 8-byte
# key, value 'M' 1|2) claims 16 MiB more than it holds.
stretch() {
  rm -rf "$D"; cp -r "$tmp/data.orig" "$D"
  $PY - "$D/data.mdb" <<'EOF'
import struct, sys
p = sys.argv[1]
d = bytearray(open(p, 'rb').read())
psize = struct.unpack_from('<I', d, 16 + 24)[0]
best = None
for pg in range(2, len(d) // psize):
    base = pg * psize
    flags, lower = struct.unpack_from('<HH', d, base + 10)
    if not flags & 0x02 or flags & 0x04:
        continue
    for i in range((lower - 16) // 2):
        node = base + struct.unpack_from('<H', d, base + 16 + 2 * i)[0]
        lo, hi, nflags, ksize = struct.unpack_from('<HHHH', d, node)
        if ksize == 8 and not nflags & 1 and d[node + 16:node + 17] == b'M' and d[node + 17] in (1, 2):
            key = struct.unpack_from('>Q', d, node + 8)[0]
            if best is None or key > best[0]:
                best = (key, node)
struct.pack_into('<H', d, best[1] + 2, 0xff)
open(p, 'wb').write(d)
EOF
}
stretch
fault="the store at .*$D is damaged: reading .*$D/data.mdb raised SIGBUS"
for c in "log" "show 3" "diff 2 3" "kernel"; do
  t "sigbus-${c%% *}" 1 "jiti ${c%% *}: $fault.*jiti recover-session --store" -- timeout 60 "$JITI" $c --store "$D"
done
t sigbus-recover 1 "$fault.*nothing was changed" -- "$JITI" recover-session --store "$D"
t sigbus-kernel-detached 1 "$fault.*the kernel did not start" -- "$JITI" kernel --store "$D" --detach
# a fault elsewhere is not the store's: it keeps its action (death by the
# signal, or a sanitizer's report), and nothing blames the store
rm -rf "$D"; cp -r "$tmp/data.orig" "$D"
start_kernel "$D"; ok kernel-on-sound-copy $?
kill -SEGV "$kp"; wait "$kp" 2>/dev/null; st=$?
ok other-faults-keep-their-action "$( [[ $st -eq $((128 + 11)) || ( $st -ne 0 && $(cat "$tmp/kernel.log") =~ Sanitizer ) ]]; echo $?)"
ok other-faults-not-the-store "$( [[ ! $(cat "$tmp/kernel.log") =~ "is damaged" ]]; echo $?)"

finish
