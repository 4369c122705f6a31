#!/usr/bin/env bash
# The world's files, end to end: written by programs through a real kernel,
# a failed call leaves them as they were, they survive a kernel restart (the
# worker imports them from CURRENT), and jiti show, diff and recover-session
# name them; an offline change and a rollback move them like other
# entries; the size limit names itself and the fix; jiti run --files copies
# a host directory in, and nothing the program writes reaches the host.
#   bash tests/files.sh path/to/jiti
set -u
JITI=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp=$(mktemp -d /tmp/jiti-files.XXXXXX)
cleanup() {
  kill_kernels
  rm -rf "$tmp"
}
trap cleanup EXIT
S=$tmp/s
e() { "$JITI" eval --store "$S" "$@"; }

"$JITI" init --store "$S" >/dev/null
start_kernel "$S"; ok kernel-starts $?

t write 0 '^T$' -- e '(with-open-file (s "/reports/day.txt" :direction :output) (format s "total ~a~%" 42) t)'
t read 0 '^"total 42"$' -- e '(with-open-file (s "/reports/day.txt") (values (read-line s)))'
t octets 0 '^3$' -- e '(with-open-file (s "/data/b.bin" :direction :output :element-type (quote (unsigned-byte 8))) (write-byte 7 s) (write-byte 255 s) (write-byte 0 s) 3)'
t pathname-row 0 '#P"/reports/day.txt"' -- e '(world-put :report #p"/reports/day.txt")'
# a failed call: its writes, appends and deletions roll back
t failed-call 1 'boom' -- e '(progn (with-open-file (s "/reports/day.txt" :direction :output :if-exists :append) (write-line "lost" s)) (delete-file "/data/b.bin") (with-open-file (s "/new.txt" :direction :output) (write-line "x" s)) (error "boom"))'
t rolled-back 0 '^\(NIL NIL T\)$' -- e '(list (with-open-file (s "/reports/day.txt") (read-line s) (read-line s nil)) (probe-file "/new.txt") (not (null (probe-file "/data/b.bin"))))'
# show and diff name the files and show their text
t show-file 0 'added file "/reports/day.txt".*total 42' -- bash -c "'$JITI' show --store '$S' 2 | tr '\n' ' '"
t show-binary 0 'file "/data/b.bin", 3 octets.*binary' -- bash -c "'$JITI' show --store '$S' 3 | tr '\n' ' '"
t append 0 '^T$' -- e '(with-open-file (s "/reports/day.txt" :direction :output :if-exists :append) (write-line "more" s) t)'
t diff-file 0 '\+more' -- "$JITI" diff --store "$S" HEAD~1 HEAD
# a file of integers wider than octets: two octets an element, signed
t elements 0 '^2$' -- e '(with-open-file (s "/data/w.bin" :direction :output :element-type (quote (signed-byte 12))) (write-byte -2 s) (write-byte 2047 s) (file-position s))'
# a restart: the worker imports the files and the pathname from CURRENT
"$JITI" stop --store "$S" >/dev/null
t recover-counts 0 "files 3" -- "$JITI" recover-session --store "$S"
start_kernel "$S"; ok restart $?
t after-restart 0 '^\("total 42" "more" \(7 255 0\) #P"/reports/day.txt"\)$' -- e '(list (with-open-file (s "/reports/day.txt") (read-line s)) (with-open-file (s "/reports/day.txt") (read-line s) (read-line s)) (with-open-file (s "/data/b.bin" :element-type (quote (unsigned-byte 8))) (list (read-byte s) (read-byte s) (read-byte s))) (world-get :report))'
t elements-after-restart 0 '^\(\(\(SIGNED-BYTE 16\) 2 \(-2 2047\)\) \(254 255 255 7\)\)$' -- e '(list (with-open-file (s "/data/w.bin" :element-type (quote (signed-byte 12))) (list (stream-element-type s) (file-length s) (list (read-byte s) (read-byte s)))) (with-open-file (s "/data/w.bin" :element-type (quote (unsigned-byte 8))) (loop for b = (read-byte s nil) while b collect b)))'
t directory 0 '^\(#P"/data/b.bin" #P"/data/w.bin" #P"/reports/day.txt"\)$' -- e '(directory "/**/*.*")'
t delete 0 '^T$' -- e '(delete-file "/data/b.bin")'
t diff-removed 0 'removed file "/data/b.bin"' -- "$JITI" diff --store "$S" HEAD~1 HEAD
# a file larger than a world keeps: the error names the limit and the fix
t too-large 1 'more than a world.s file may .*smaller files' -- e '(with-open-file (s "/big.txt" :direction :output) (write-string (make-string 17000000 :initial-element #\a) s) t)'
t too-large-left-nothing 0 '^NIL$' -- e '(probe-file "/big.txt")'
"$JITI" stop --store "$S" >/dev/null
# offline: apply and rollback move files like other entries
t offline-apply 0 'revision' -- "$JITI" apply --store "$S" -e '(with-open-file (s "/offline.txt" :direction :output) (write-line "offline" s))'
t offline-show 0 'added file "/offline.txt"' -- "$JITI" show --store "$S" HEAD
t rollback 0 'drops 0 invariants, 0 definitions, 1 file and 0 data rows' -- "$JITI" rollback --store "$S" HEAD~1
start_kernel "$S"; ok restart-after-rollback $?
t rolled-back-file 0 '^\(NIL "total 42"\)$' -- e '(list (probe-file "/offline.txt") (with-open-file (s "/reports/day.txt") (read-line s)))'
"$JITI" stop --store "$S" >/dev/null

# jiti run --files: a host directory copied in; writes stay in the world
mkdir -p "$tmp/host/lib"
echo '(defun from-file () "loaded")' >"$tmp/host/lib/util.lisp"
t run-files 0 '^"loaded"$' -- "$JITI" run --files "$tmp/host" -e '(progn (load "lib/util.lisp") (from-file))'
t run-files-list 0 '^\(#P"/lib/util.lisp"\)$' -- "$JITI" run --files "$tmp/host" -e '(directory "/**/*.*")'
t run-writes-stay 0 '^T$' -- "$JITI" run --files "$tmp/host" -e '(with-open-file (s "lib/out.txt" :direction :output) (write-line "x" s) t)'
ok run-host-untouched "$([[ ! -e $tmp/host/lib/out.txt ]]; echo $?)"
t run-no-dir 3 'cannot read the directory' -- "$JITI" run --files "$tmp/none" -e 1
t run-no-files 1 'there is no file /etc/passwd' -- "$JITI" run -e '(open "/etc/passwd")'
finish
