#!/usr/bin/env bash
# Build the fuzz harnesses (clang, libFuzzer, ASan + UBSan) and run each for
# a while on its corpus: the evaluator (reader + evaluator), circular and
# shared structure given to the kernel's walks (graph), the store's entry
# decoder, the kernel<->worker framing, the client protocol decoder, the
# fast JSON text paths against jansson (differential).
#   bash tests/fuzz/run.sh [--seconds N] [--runs N] [SURFACE...]
# (default 30 s each; --runs stops a surface after N executions instead)
# The corpora grow in build-fuzz/corpus/SURFACE (seeded from the test suites);
# a finding is written to build-fuzz/findings/SURFACE and makes the run fail.
# The long run of docs/security.md is the same with --seconds 3600.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=30
runs=
surfaces=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    eval|graph|entry|frames|requests|json) surfaces+=("$1"); shift ;;
    *) echo "run.sh: unknown argument '$1' (surfaces: eval graph entry frames requests json)" >&2; exit 2 ;;
  esac
done
((${#surfaces[@]})) || surfaces=(eval graph entry frames requests json)

B=build-fuzz
cmake -S . -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJITI_FUZZ=ON >/dev/null
cmake --build "$B" -j "$(nproc)" --target fuzz_eval fuzz_graph fuzz_entry fuzz_frames fuzz_requests fuzz_json fuzz_seeds >/dev/null

# seeds: every top-level form of the Lisp suites and examples; a sample
# world's entries; sample frames
seed=$B/seed
rm -rf "$seed"; mkdir -p "$seed/eval" "$seed/graph" "$seed/entry" "$seed/frames" "$seed/requests" "$seed/json"
# graph: a few shapes (a cycle of one and of two conses, a car nested in
# itself, a proper list, a DAG of 16 levels) given to every entry point
python3 - "$seed/graph" <<'PY'
import sys, os
out = sys.argv[1]
C = lambda i: 0x80 | i          # a cons
A = lambda i: i                 # an atom of ATOMS (0 is nil, 2 is 'a)
shapes = {
    'cycle1': [(A(2), C(0))],
    'cycle2': [(A(2), C(1)), (A(3), C(0))],
    'carcycle': [(C(0), A(0))],
    'list': [(A(2), C(1)), (A(3), C(2)), (A(4), A(0))],
    'form': [(A(9), C(1)), (C(2), C(3)), (A(21), C(0)), (A(21), C(3))],
    'dag': [(C(i + 1), C(i + 1)) for i in range(15)] + [(A(2), A(0))],
}
n = 0
for name, conses in shapes.items():
    head = bytes([len(conses) - 1]) + bytes(b for pair in conses for b in pair)
    for e in range(128):
        open(os.path.join(out, '%s-%03d' % (name, e)), 'wb').write(head + bytes([e]))
        n += 1
print('seeds: %d graphs' % n)
PY
python3 - "$seed/eval" tests/lisp/*.lisp examples/*.lisp <<'PY'
import sys, os
out, files = sys.argv[1], sys.argv[2:]
n = 0
for f in files:
    s = open(f, encoding='utf-8').read()
    depth, start, i, instr = 0, None, 0, False
    while i < len(s):
        c = s[i]
        if instr:
            if c == '\\': i += 1
            elif c == '"': instr = False
        elif c == ';':
            while i < len(s) and s[i] != '\n': i += 1
        elif c == '"': instr = True
        elif c == '(':
            if depth == 0: start = i
            depth += 1
        elif c == ')' and depth:
            depth -= 1
            if depth == 0 and start is not None and i + 1 - start <= 4096:
                open(os.path.join(out, 'form-%05d' % n), 'w').write(s[start:i + 1]); n += 1
        i += 1
print('seeds: %d forms' % n)
PY
"$B/tests/fuzz/fuzz_seeds" "$seed/entry" "$seed/frames"
# requests: the examples of the protocol's documentation, a few per file
python3 - "$seed/requests" docs/protocol.md docs/schema/*.json <<'PY'
import json, re, sys, os
out, files = sys.argv[1], sys.argv[2:]
reqs = []
for f in files:
    for m in re.finditer(r'\{"op": ?"[a-z-]+"[^\n]*\}', open(f, encoding='utf-8').read()):
        try:
            json.loads(m.group(0)); reqs.append(m.group(0))
        except ValueError:
            pass
ops = ['hello', 'status', 'history', 'observe', 'inspect', 'invariant-list', 'subscribe']
reqs += ['{"op":"%s","id":%d}' % (o, i) for i, o in enumerate(ops)]
reqs += ['{"op":"call","id":"c","key":"k","source":"(+ 1 2)","limits":{"fuel":1000}}',
         '{"op":"act","id":1,"generation":3,"action":{"type":"resume","restart_id":"r1","arguments":"(5)"}}',
         '{"op":"record","event":{"event":"session","n":1},"sync":true}',
         '{"op":"observe","goals":["(= 1 1)"],"budget":4096}',
         '{"op":"call","id":2,"source":"(car 5)","on_error":"pause","listening":true}',
         '{"op":"act","id":3,"generation":3,"action":{"type":"evaluate","source":"(setq d 2)","frame":1}}',
         '{"op":"act","id":4,"generation":3,"action":{"type":"return-from-frame","frame":0,"arguments":"(list 7)"}}',
         '{"op":"act","id":5,"generation":3,"action":{"type":"restart-frame","frame":1}}',
         '{"op":"interrupt","id":6,"key":"k"}',
         '{"op":"repair-policy","id":7,"action":"enable","selector":"app::run","mode":"pause",'
         '"expected":[{"kind":"condition","text":"E"}]}',
         '{"op":"repair-policy","id":8,"action":"list"}',
         '{"op":"verify","id":9,"definitions":"(defun f (x) x)","repro":"(f 1)","replay":["(f 2)"],'
         '"timeout_ms":5000}',
         '{"op":"incident","id":10,"incident":1,"from":"captured","to":"awaiting-model","traffic":true,'
         '"note":{"kind":"exchange","entry":{"attempt":1}}}',
         '{"op":"incidents","id":11,"status":["captured","awaiting-model"],"limit":5}',
         '{"op":"repair","id":12,"incident":1,"source":"(defun f (x) x)","reason":"r","intended_changes":null,'
         '"response_id":"resp_1","scope":"function","timeout_ms":1000,"watch":3}']
for i, r in enumerate(reqs):
    open(os.path.join(out, 'req-%04d' % i), 'w').write(r + '\n')
open(os.path.join(out, 'pipelined'), 'w').write('\n'.join(reqs[:20]) + '\n')
for i, r in enumerate(reqs):
    open(os.path.join(out, '..', 'json', 'req-%04d' % i), 'w').write(r)
print('seeds: %d requests' % len(reqs))
PY

# A long run (--runs, or more than a minute a surface) fuzzes without
# libFuzzer's leak scan, which runs whenever an input's mallocs and frees do
# not balance -- nearly always for a world that keeps caches -- and costs the
# evaluator seven executions in eight; it then replays the whole corpus once
# with the scan on, so every input that reached new code is still checked.
long=0
if [[ -n $runs ]] || ((seconds > 60)); then long=1; fi

fail=0
for s in "${surfaces[@]}"; do
  corpus=$B/corpus/$s findings=$B/findings/$s
  mkdir -p "$corpus" "$findings"
  log=$B/fuzz-$s.log
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$B/tests/fuzz/fuzz_$s" "$corpus" "$seed/$s" \
    ${runs:+-runs="$runs"} -max_total_time="$([ -n "$runs" ] && echo 0 || echo "$seconds")" \
    -detect_leaks=$((1 - long)) -timeout=20 -rss_limit_mb=2560 -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$findings/" >"$log" 2>&1
  rc=$?
  if ((rc == 0 && long)); then
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$B/tests/fuzz/fuzz_$s" "$corpus" \
      -runs=0 -detect_leaks=1 -timeout=20 -rss_limit_mb=2560 -max_len=8192 \
      -artifact_prefix="$findings/" >"$log.replay" 2>&1
    rc=$?
  fi
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if ((rc != 0)) || compgen -G "$findings/*" >/dev/null; then
    echo "fuzz $s: FINDING after ${execs:-?} executions (see $log, $findings$( ((long)) && echo " and $log.replay"))"
    grep -h -m5 -E "ERROR|SUMMARY|runtime error" "$log" "$log.replay" 2>/dev/null || true
    fail=1
  else
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    echo "fuzz $s: ${execs:-?} executions in ${secs:-$seconds} s, no finding (corpus $(ls "$corpus" | wc -l) inputs$( ((long)) && echo ", replayed with the leak scan"))"
  fi
done
exit $fail
