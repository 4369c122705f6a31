#!/usr/bin/env bash
# Latency of `interrupt` and `cancel`: from the request to the reply that
# shows its effect (the act's pause, the call's `cancelled`), on (loop) and
# inside a long bignum product (a single GMP call of about a second), over
# the kernel's socket.  Baseline: SBCL's SIGINT on the same two loops (from
# the signal to its INTERACTIVE-INTERRUPT handler), when sbcl is installed.
#   bench/interrupt_bench.sh [path/to/jiti] [runs]
# Prints the median and the maximum in milliseconds of each case (an SBCL
# run whose handler has not run after 10 s is shown as "> 10 s").
set -eu
JITI=${1:-build/jiti}
RUNS=${2:-7}
JITI=$(cd "$(dirname "$JITI")" && pwd)/$(basename "$JITI")
tmp=$(mktemp -d /tmp/jiti-interrupt-bench.XXXXXX)
trap '"$JITI" stop --store "$tmp/s" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$JITI" init --store "$tmp/s" >/dev/null
"$JITI" kernel --store "$tmp/s" --fuel 0 --heap 0 >"$tmp/kernel.log" 2>&1 &
for _ in $(seq 100); do "$JITI" status --store "$tmp/s" >/dev/null 2>&1 && break; sleep 0.1; done

python3 - "$JITI" "$tmp/s" "$RUNS" <<'EOF'
import json, os, select, shutil, signal, socket, statistics, subprocess, sys, time

jiti, store, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
BIG = '(1- (ash 1 100000000))'   # a product of two of them: one GMP call, about a second
LIMIT = 10                       # seconds an SBCL run waits for its handler


class Conn:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(os.path.join(store, 'kernel.sock'))
        self.buf = b''
        self.n = 0

    def send(self, req):
        self.n += 1
        req['id'] = self.n
        self.s.sendall(json.dumps(req).encode() + b'\n')
        return self.n

    def reply(self, rid):
        while True:
            while b'\n' in self.buf:
                line, self.buf = self.buf.split(b'\n', 1)
                m = json.loads(line)
                if m.get('id') == rid:
                    return m
            self.buf += self.s.recv(1 << 16)

    def request(self, req):
        return self.reply(self.send(req))


ctl = Conn()
ctl.request({'op': 'call', 'source': '(progn (defvar *big* %s) t)' % BIG})


def running():
    while ctl.request({'op': 'status'})['state'] != 'running':
        time.sleep(0.002)


def case(op, source, settle):
    """Start source (an act for interrupt, a call for cancel), let it run
    settle seconds, send op: ms from the request to the transaction's reply."""
    out = []
    for _ in range(runs):
        c = Conn()
        if op == 'interrupt':
            g = ctl.request({'op': 'status'})['generation']
            rid = c.send({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': source}})
        else:
            rid = c.send({'op': 'call', 'source': source})
        running()
        time.sleep(settle)
        t0 = time.monotonic()
        r = ctl.request({'op': op})
        assert r['ok'], r
        rep = c.reply(rid)
        t1 = time.monotonic()
        if op == 'interrupt':
            assert rep.get('status') == 'paused', rep
            assert rep['pause']['condition_type'] == 'INTERACTIVE-INTERRUPT', rep
            ctl.request({'op': 'act', 'generation': rep['generation'], 'action': {'type': 'abort'}})
        else:
            assert rep.get('code') == 'cancelled', rep
        out.append((t1 - t0) * 1000)
        c.s.close()
    return out


def sbcl_case(form):
    sbcl = shutil.which('sbcl')
    if not sbcl:
        return None
    prog = ('(handler-case (progn (format t "go~%%") (finish-output) %s) '
            '(sb-sys:interactive-interrupt () (format t "int~%%") (finish-output)))' % form)
    out = []
    for _ in range(runs):
        p = subprocess.Popen([sbcl, '--noinform', '--non-interactive', '--no-userinit', '--eval', prog],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert p.stdout.readline().strip() == b'go'
        time.sleep(0.3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        ready, _, _ = select.select([p.stdout], [], [], LIMIT)
        t1 = time.monotonic()
        line = p.stdout.readline().strip() if ready else b''
        p.kill()
        p.wait()
        if not ready:   # the handler had not run after LIMIT seconds
            return ['> %d s' % LIMIT]
        assert line == b'int', line
        out.append((t1 - t0) * 1000)
    return out


def show(name, ms):
    if ms is None:
        print('| %s | (sbcl not installed) | |' % name)
    elif isinstance(ms[0], str):
        print('| %s | %s | %s |' % (name, ms[0], ms[0]))
    else:
        print('| %s | %.1f | %.1f |' % (name, statistics.median(ms), max(ms)))


print('%d runs each; milliseconds from the request (the signal, for SBCL) to the reply' % runs)
print()
print('| case | median | max |')
print('|---|---|---|')
ms = case('interrupt', '(loop)', 0.05)
if os.environ.get('JITI_BENCH_ALL'):   # every run (the first is a world's first pause)
    print(ms)
show('jiti interrupt, (loop) (act)', ms)
show('jiti cancel, (loop) (call)', case('cancel', '(loop)', 0.05))
show('jiti interrupt, bignum product (act)', case('interrupt', '(* *big* (+ *big* 1))', 0.15))
show('jiti cancel, bignum product (call)', case('cancel', '(* *big* (+ *big* 1))', 0.15))
show('SBCL SIGINT, (loop)', sbcl_case('(loop)'))
# (the size read at run time: SBCL's compiler would fold a constant product)
show('SBCL SIGINT, bignum product', sbcl_case('(let ((a (1- (ash 1 (parse-integer "100000000"))))) (* a (+ a 1)))'))
EOF
