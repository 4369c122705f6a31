#!/usr/bin/env bash
# What a shadow costs against the size of the live heap: the time from a
# `verify` request with an empty candidate ("nil": no definitions, no
# repro, nothing replayed) to its report, over the kernel's socket, with
# 1e3, 1e4, 1e5 and 1e6 live conses held by the world (a list in a
# variable), and the calls per second the live worker answers while a
# shadow of the largest heap is made again and again.
#   bench/shadow_bench.sh [path/to/jiti] [runs]
# Prints, per heap, the worker's resident memory and the median and maximum
# of runs verifications, in milliseconds, and the shadow's own elapsed_ms
# (from just before the fork to its report).
set -eu
JITI=${1:-build/jiti}
RUNS=${2:-9}
JITI=$(cd "$(dirname "$JITI")" && pwd)/$(basename "$JITI")
tmp=$(mktemp -d /tmp/jiti-shadow-bench.XXXXXX)
trap '"$JITI" stop --store "$tmp/s" >/dev/null 2>&1 || true; [[ -n ${KEEP:-} ]] && cat "$tmp/kernel.log" | tail -30; rm -rf "$tmp"' EXIT
"$JITI" init --store "$tmp/s" >/dev/null
"$JITI" kernel --store "$tmp/s" --heap 0 >"$tmp/kernel.log" 2>&1 &
for _ in $(seq 100); do "$JITI" status --store "$tmp/s" >/dev/null 2>&1 && break; sleep 0.1; done

python3 - "$JITI" "$tmp/s" "$RUNS" <<'EOF'
import json, os, socket, statistics, subprocess, sys, time

jiti, store, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])


def request(req):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(store, 'kernel.sock'))
    s.sendall(json.dumps(req).encode() + b'\n')
    buf = b''
    while not buf.endswith(b'\n'):
        chunk = s.recv(1 << 16)
        if not chunk:
            sys.exit('the kernel closed the connection')
        buf += chunk
    s.close()
    return json.loads(buf)


def rss_mib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return 0


def verify_ms():
    t0 = time.perf_counter()
    r = request({'op': 'verify', 'definitions': 'nil'})
    assert r.get('ok') and r['report']['identical'], r
    return (time.perf_counter() - t0) * 1000


print('| live conses | worker RSS (MiB) | first verify (ms) | verify median (ms) | max (ms) | shadow elapsed_ms (median) |')
print('|---|---|---|---|---|---|')
for n in (1000, 10000, 100000, 1000000):
    r = request({'op': 'call', 'source': '(progn (defparameter *heap* (make-list %d :initial-element 1)) t)' % n})
    assert r.get('ok'), r
    pid = request({'op': 'status'})['worker_pid']
    # the first shadow after the heap grew collects the garbage the live
    # worker has not collected yet (its next call would): it pays for it;
    # a few calls that allocate let the live worker collect, as it serves
    first = verify_ms()
    for _ in range(3):
        assert request({'op': 'call', 'source': '(length (make-list 200000))'}).get('ok')
    times, inner = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = request({'op': 'verify', 'definitions': 'nil'})
        times.append((time.perf_counter() - t0) * 1000)
        assert r.get('ok') and r['report']['identical'], r
        inner.append(r['report']['elapsed_ms'])
    print('| %d | %.0f | %.1f | %.1f | %.1f | %d |' % (n, rss_mib(pid), first, statistics.median(times), max(times),
                                                    statistics.median(inner)))

# calls answered while shadows of the largest heap are made back to back
def calls_for(seconds):
    t_end = time.time() + seconds
    k = 0
    while time.time() < t_end:
        r = request({'op': 'call', 'source': '(+ 1 2)'})
        assert r.get('ok'), r
        k += 1
    return k / seconds

quiet = calls_for(2)
proc = subprocess.Popen([sys.executable, '-c', '''
import json, os, socket, sys, time
store = sys.argv[1]
t_end = time.time() + 2.5
while time.time() < t_end:
    s = socket.socket(socket.AF_UNIX); s.connect(os.path.join(store, "kernel.sock"))
    s.sendall(b'{"op":"verify","definitions":"nil"}\\n'); buf = b""
    while not buf.endswith(b"\\n"):
        c = s.recv(65536)
        if not c: sys.exit(1)
        buf += c
    s.close()
''', store])
time.sleep(0.2)
busy = calls_for(2)
proc.wait()
print()
print('calls per second from one client (1e6 conses live): %.0f alone, %.0f while shadows are made back to back'
      % (quiet, busy))
EOF
