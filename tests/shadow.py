#!/usr/bin/env python3
"""shadow.py — verification on a shadow of the live worker (the verify request).

A shadow is a copy-on-write fork of the live worker, made between attempts:
the candidate is verified on exactly the live heap, and the live world is
not touched.  Against real kernels (the test build jiti-testhooks, whose
worker can make forbidden system calls on purpose):

- a good candidate: the repro passes, the invariants hold, the recorded
  calls are stable and do not differ; what it changed is named; the live
  world and its generation are unchanged after; a candidate identical to the
  live definition says so;
- a candidate that breaks an invariant, one that changes a recorded result
  (differs), a nondeterministic recorded call (not stable);
- the shadow sees the live heap: state earlier calls made (a variable, a
  CLOS instance, two variables holding the same object) is there, with its
  identity — which a fresh import does not keep (checked after a restart);
- a candidate that loops is killed at its timeout while the kernel answers
  calls meanwhile;
- hostile candidates: a file, a socket, a program, a fork, a clone — each
  contained (an error in the report, or the shadow killed), nothing on the
  host, the live worker untouched;
- the live worker still cannot fork: not by the fork system call, not by a
  clone with exactly fork()'s flags (the kernel's fork gate refuses it and
  kills the worker), not with libc granted (define-foreign fork), and a
  libm grant does not reach fork or syscall at all;
- the kernel stops cleanly with a shadow running: no process is left.

    tests/shadow.py JITI-TESTHOOKS [--slow N]
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

JITI = sys.argv[1]
SLOW = int(sys.argv[sys.argv.index('--slow') + 1]) if '--slow' in sys.argv else 1
passed = failed = 0


def ok(name, cond, info=''):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print('FAIL %s %s' % (name, str(info)[:1500]))


def run(*args, timeout=120):
    p = subprocess.run([JITI] + list(args), capture_output=True, text=True, timeout=timeout * SLOW)
    return p.returncode, p.stdout + p.stderr


tmp = tempfile.mkdtemp(prefix='jiti-shadow.')
LOG = os.path.join(tmp, 'kernel.log')
kernels = []


def start(store, *opts):
    log = open(LOG, 'a')
    p = subprocess.Popen([JITI, 'kernel', '--store', store] + list(opts), stdout=log, stderr=log)
    kernels.append(p)
    for _ in range(300):
        if run('status', '--store', store)[0] == 0:
            return p
        if p.poll() is not None:
            break
        time.sleep(0.1)
    print('FAIL kernel did not start:', open(LOG).read()[-2000:])
    return p


def status(store):
    for _ in range(300):   # until the (fresh) worker serves
        rc, out = run('status', '--json', '--store', store)
        if rc == 0:
            st = json.loads(out)
            if st.get('state') == 'idle':
                return st
        time.sleep(0.1)
    return json.loads(run('status', '--json', '--store', store)[1])


def request(store, obj, timeout=120):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout * SLOW)
    s.connect(os.path.join(store, 'kernel.sock'))
    s.sendall((json.dumps(obj) + '\n').encode())
    buf = b''
    while not buf.endswith(b'\n'):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf) if buf else None


def verify(store, definitions, repro=None, replay=(), timeout_ms=None):
    r = {'op': 'verify', 'definitions': definitions, 'replay': list(replay)}
    if repro is not None:
        r['repro'] = repro
    if timeout_ms is not None:
        r['timeout_ms'] = timeout_ms
    return request(store, r)


def evaluate(store, source):
    return run('eval', '--store', store, source)


def children(pid):
    """The processes whose parent is pid (a worker's shadows)."""
    out = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(')') + 2:].split()[1]) == pid:
            out.append(int(d))
    return out


def reaped(pid):
    """No child of pid is left, once its worker reaped them (a shadow's
    report may come a moment before it has exited)."""
    for _ in range(int(100 * SLOW)):
        if not children(pid):
            return []
        time.sleep(0.05)
    return children(pid)


def alive(pid):
    """pid is a process, running or a zombie nobody reaped."""
    return bool(pid) and os.path.exists('/proc/%d' % pid)


def log_text():
    with open(LOG, errors='replace') as f:
        return f.read()


def report_of(name, r):
    ok(name + '-ok', r and r.get('ok') is True, r)
    return (r or {}).get('report') or {}


try:
    # ------------------------------------------------------------ a world
    S = os.path.join(tmp, 's')
    ok('init', run('init', '--store', S)[0] == 0)
    start(S)
    rc, out = run('apply', '--store', S, '-e', '''(progn
      (defvar *count* 0)
      (defun price (n) (/ 100 n))
      (defun twice (x) (* x 2))
      (defclass point () ((x :initarg :x :accessor px)))
      (defvar *p* nil) (defvar *ps* nil) (defvar *a* nil) (defvar *b* nil))''')
    ok('world', rc == 0, out)
    ok('invariant', run('invariant', 'add', 'count-not-negative', '(>= *count* 0)', '--store', S)[0] == 0)
    # state made by calls, in the live heap: one object in two variables, a
    # CLOS instance and a list holding the same instance
    rc, out = evaluate(S, '(let ((l (list 1 2))) (setf *a* l *b* l *count* 7) :set)')
    ok('state-call', rc == 0, out)
    rc, out = evaluate(S, '(progn (setf *p* (make-instance (quote point) :x 5) *ps* (list *p*)) :made)')
    ok('instance-call', rc == 0, out)
    before = status(S)

    # ------------------------------------------------------------ a good candidate
    r = verify(S, '(defun price (n) (if (zerop n) 0 (/ 100 n)))', '(price 0)', ['(price 4)', '(price 5)'])
    rep = report_of('good', r)
    ok('good-definitions', rep.get('definitions') == {'ok': True}, rep)
    ok('good-repro', rep.get('repro') == {'ok': True, 'value': '0'}, rep)
    ok('good-invariants', rep.get('invariants') == {'ok': True, 'failed': []}, rep)
    ok('good-changed', rep.get('changed') == [{'kind': 'function', 'name': 'PRICE', 'removed': False}], rep)
    ok('good-not-identical', rep.get('identical') is False, rep)
    rp = rep.get('replay') or []
    ok('good-replay', [(x['request'], x['baseline'], x['baseline_again'], x['candidate'], x['stable'], x['differs'])
                       for x in rp] ==
       [('(price 4)', {'ok': True, 'value': '25'}, {'ok': True, 'value': '25'}, {'ok': True, 'value': '25'}, True,
         False),
        ('(price 5)', {'ok': True, 'value': '20'}, {'ok': True, 'value': '20'}, {'ok': True, 'value': '20'}, True,
         False)], rp)
    ok('good-elapsed', isinstance(rep.get('elapsed_ms'), int), rep)
    # the live world is not the candidate's, and did not move
    rc, out = evaluate(S, '(price 0)')
    ok('good-not-applied', rc == 1 and 'DIVISION-BY-ZERO' in out, out)
    after = status(S)
    ok('good-generation-unchanged', after['generation'] == before['generation'] and
       after['revision'] == before['revision'] and r.get('generation') == before['generation'], (before, after, r))
    ok('good-same-worker', after['worker_pid'] == before['worker_pid'] and after['worker_restarts'] == 0, after)
    ok('good-shadow-gone', reaped(after['worker_pid']) == [], children(after['worker_pid']))
    ok('good-logged', re.search(r'verification \d+: reported', log_text()), log_text()[-1000:])

    # identical to the live definition
    rep = report_of('identical', verify(S, '(defun twice (x) (* x 2))'))
    ok('identical', rep.get('identical') is True and rep.get('changed') == [], rep)
    ok('identical-no-repro', rep.get('repro') is None and rep.get('replay') == [], rep)

    # ------------------------------------------------------------ what it catches
    rep = report_of('invariant', verify(S, '(defparameter *count* -5)', '*count*'))
    inv = rep.get('invariants') or {}
    ok('invariant-fails', inv.get('ok') is False and [f['name'] for f in inv.get('failed', [])] ==
       ['COUNT-NOT-NEGATIVE'] and 'returned NIL' in inv['failed'][0]['report'], rep)
    # the repro runs as a call: on the candidate, the invariant refuses it too
    ok('invariant-repro-unsafe', (rep.get('repro') or {}).get('reason') == 'unsafe', rep)
    ok('invariant-changed', rep.get('changed') == [{'kind': 'variable', 'name': '*COUNT*', 'removed': False}], rep)

    rep = report_of('differs', verify(S, '(defun twice (x) (* x 3))', '(twice 1)', ['(twice 2)', '(twice 0)']))
    rp = rep.get('replay') or [{}, {}]
    ok('differs', rp[0].get('stable') is True and rp[0].get('differs') is True and
       rp[0]['candidate'] == {'ok': True, 'value': '6'}, rp)
    ok('differs-not-all', rp[1].get('differs') is False and rp[1].get('stable') is True, rp)

    rep = report_of('unstable', verify(S, '(defun twice (x) (* x 2))', None, ['(random 1000000)']))
    rp = (rep.get('replay') or [{}])[0]
    ok('unstable', rp.get('stable') is False and rp.get('differs') is False, rp)

    # a recorded call that fails: its error is the result, on both sides
    rep = report_of('error-result', verify(S, '(defun twice (x) (* x 2))', None, ['(price 0)']))
    rp = (rep.get('replay') or [{}])[0]
    ok('error-result', rp.get('baseline', {}).get('ok') is False and
       rp['baseline'].get('condition') == 'DIVISION-BY-ZERO' and rp['baseline'].get('reason') == 'error' and
       rp.get('stable') is True and rp.get('differs') is False, rp)

    # a candidate that does not apply: said, and nothing run on it
    rep = report_of('broken', verify(S, '(defun twice (x) (* x 2)) (car 5)', '(twice 1)', ['(twice 1)']))
    ok('broken-definitions', (rep.get('definitions') or {}).get('ok') is False and
       rep['definitions'].get('condition') == 'TYPE-ERROR', rep)
    ok('broken-nothing-run', rep.get('repro') is None and rep.get('invariants') is None and
       rep.get('replay', [{}])[0].get('candidate') is None and rep.get('identical') is False, rep)
    rep = report_of('gated', verify(S, '(defun twice (x) (* x 2))', '(sb-ext:quit)'))
    ok('gated', (rep.get('repro') or {}).get('reason') == 'rejected-by-gate', rep)

    # ------------------------------------------------------------ the live heap
    live = '(list (eq *a* *b*) (eq *p* (first *ps*)) (px *p*) *count*)'
    rep = report_of('heap', verify(S, '(defun twice (x) (* x 2))', live))
    ok('heap-identity', rep.get('repro') == {'ok': True, 'value': '(T T 5 7)'}, rep)

    # ------------------------------------------------------------ refusals
    for name, req, code in [
            ('no-definitions', {'op': 'verify'}, 'invalid-request'),
            ('bad-timeout', {'op': 'verify', 'definitions': '1', 'timeout_ms': 0}, 'invalid-request'),
            ('bad-replay', {'op': 'verify', 'definitions': '1', 'replay': [1]}, 'invalid-request'),
            ('unknown-member', {'op': 'verify', 'definitions': '1', 'limits': {}}, 'invalid-request')]:
        r = request(S, req)
        ok('refused-' + name, r and r.get('ok') is False and r.get('code') == code, r)

    # ------------------------------------------------------------ hostile candidates
    victim = os.path.join(tmp, 'victim')
    base = status(S)

    def contained(name, repro, killed):
        r = verify(S, '(defun twice (x) (* x 2))', repro)
        if killed:
            ok(name + '-killed', r and r.get('ok') is False and r.get('code') == 'interrupted' and
               'signal 31' in r.get('message', ''), r)
        else:
            ok(name + '-refused', r and r.get('ok') is True and (r['report'].get('repro') or {}).get('ok') is False,
               r)
        return r

    # a program's open reaches the world's own file table, never the host's files
    r = verify(S, '(defun twice (x) (* x 2))', '(with-open-file (s "%s" :direction :output) (write-line "x" s))' % victim)
    ok('lisp-open-world-file', r and r.get('ok') is True and (r['report'].get('repro') or {}).get('ok') is True, r)
    contained('lisp-open-host', '(open "/etc/passwd")', False)
    r = verify(S, '(defun twice (x) (* x 2))', '(test-forbidden-syscall 0)')   # open: fails (EACCES)
    ok('open-fails', r and r.get('ok') and r['report'].get('repro') == {'ok': True, 'value': '-1'}, r)
    for n, what in [(1, 'socket'), (2, 'fork'), (4, 'program'), (5, 'fork-flags'), (6, 'clone')]:
        contained('hostile-' + what, '(test-forbidden-syscall %d)' % n, True)
    # in the definitions themselves, and in a recorded call
    r = verify(S, '(progn (defun twice (x) (* x 2)) (test-forbidden-syscall 1))')
    ok('hostile-definitions', r and r.get('code') == 'interrupted' and 'signal 31' in r.get('message', ''), r)
    r = verify(S, '(defun twice (x) (* x 2))', None, ['(test-forbidden-syscall 2)'])
    ok('hostile-replay', r and r.get('code') == 'interrupted', r)
    ok('hostile-no-file', not os.path.exists(victim))
    st = status(S)
    ok('hostile-live-worker-untouched', st['worker_pid'] == base['worker_pid'] and st['worker_restarts'] == 0 and
       st['generation'] == base['generation'], (base, st))
    ok('hostile-no-shadow-left', reaped(st['worker_pid']) == [], children(st['worker_pid']))
    rc, out = evaluate(S, '(twice 21)')
    ok('hostile-live-serves', rc == 0 and out.strip() == '42', out)

    # ------------------------------------------------------------ back to back, beside calls
    # (a shadow's report and its end may come before the worker's shadowed
    # frame is read: every order of the three must hold)
    burst = []

    def verifier():
        for _ in range(40):
            burst.append(verify(S, 'nil'))
    t = threading.Thread(target=verifier)
    t.start()
    calls = 0
    while t.is_alive():
        rc, out = evaluate(S, '(twice %d)' % calls)
        ok('burst-call', rc == 0 and out.strip() == str(2 * calls), out)
        calls += 1
    t.join()
    ok('burst-all-reported', len(burst) == 40 and all(r and r.get('ok') and r['report']['identical'] for r in burst),
       [r for r in burst if not (r and r.get('ok'))][:2])
    st = status(S)
    ok('burst-same-worker', st['worker_pid'] == base['worker_pid'] and st['worker_restarts'] == 0, st)
    ok('burst-no-shadow-left', reaped(st['worker_pid']) == [], children(st['worker_pid']))

    # a verification asked for in the middle of a flood of pipelined calls
    # goes at the worker's next quiescent point, not after the flood
    flood = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    flood.connect(os.path.join(S, 'kernel.sock'))
    n_flood = 3000
    sender = threading.Thread(target=lambda: flood.sendall(
        b''.join(b'{"op":"call","id":%d,"source":"(twice 1)"}\n' % i for i in range(n_flood))))
    sender.start()
    got = {'calls': 0}

    def reader():
        buf = b''
        while got['calls'] < n_flood:
            chunk = flood.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
            got['calls'] += chunk.count(b'\n')
        got['last'] = time.time()
    rd = threading.Thread(target=reader)
    rd.start()
    while got['calls'] < 50:
        time.sleep(0.001)
    r = verify(S, 'nil')
    got['verify'] = time.time()
    calls_by_then = got['calls']
    sender.join()
    rd.join(120 * SLOW)
    flood.close()
    ok('flood-verified', r and r.get('ok') is True, r)
    ok('flood-not-starved', got['calls'] == n_flood and calls_by_then < n_flood and got['verify'] < got['last'],
       (calls_by_then, got))

    # ------------------------------------------------------------ the live worker cannot fork
    for n, what, why in [(2, 'fork', 'signal 31'), (6, 'clone', 'signal 31'),
                         (5, 'fork-flags', 'broke the frame rule process')]:
        pid = status(S)['worker_pid']
        rc, out = evaluate(S, '(progn (setf *count* 99) (test-forbidden-syscall %d))' % n)
        ok('live-%s-stopped' % what, rc == 1 and 'interrupted' in out and why in out, out)
        ok('live-%s-no-process' % what, children(pid) == [], children(pid))
        rc, out = evaluate(S, '*count*')
        ok('live-%s-nothing-kept' % what, rc == 0 and out.strip() == '7', out)
    ok('live-gate-logged', 'tried to start a process' in log_text(), log_text()[-1500:])
    # a fresh worker makes shadows as the first did
    rep = report_of('after-restarts', verify(S, '(defun twice (x) (* x 2))', '(twice 4)'))
    ok('after-restarts-repro', rep.get('repro') == {'ok': True, 'value': '8'}, rep)

    # a fresh import does not keep the identity the shadow saw
    rc, out = run('stop', '--store', S)
    ok('stop', rc == 0, out)
    start(S)
    rc, out = evaluate(S, live)
    ok('reimport-loses-identity', rc == 0 and out.strip() == '(NIL NIL 5 7)', out)
    run('stop', '--store', S)

    # ------------------------------------------------------------ grants
    F = os.path.join(tmp, 'foreign')
    run('init', '--store', F)
    start(F, '--allow-foreign', 'libm.so.6')
    for sym in ['fork', 'syscall', 'vfork', 'clone', 'posix_spawn', 'system', 'execve']:
        rc, out = evaluate(F, '(define-foreign my-%s "libm.so.6" "%s" :int ())' % (sym, sym))
        ok('libm-no-' + sym, rc == 1 and 'is not defined in libm.so.6' in out, out)
    run('stop', '--store', F)
    C = os.path.join(tmp, 'libc')
    run('init', '--store', C)
    start(C, '--allow-foreign', 'libc.so.6')
    rc, out = evaluate(C, '(define-foreign libc-fork "libc.so.6" "fork" :int ())')
    ok('libc-fork-declared', rc == 0, out)
    pid = status(C)['worker_pid']
    rc, out = evaluate(C, '(libc-fork)')
    ok('libc-fork-refused', rc == 1 and 'broke the frame rule process' in out, out)
    ok('libc-fork-no-process', children(pid) == [], children(pid))
    r = verify(C, '(defun g () 1)', '(libc-fork)')
    ok('libc-fork-in-shadow', r and r.get('code') == 'interrupted' and 'signal 31' in r.get('message', ''), r)
    run('stop', '--store', C)

    # ------------------------------------------------------------ time and stop
    L = os.path.join(tmp, 'loop')
    run('init', '--store', L)
    start(L, '--fuel', '0')   # a loop runs until the kernel kills it
    ok('loop-world', evaluate(L, '(defun one () 1)')[0] == 0)
    pid = status(L)['worker_pid']
    result = {}
    t = threading.Thread(target=lambda: result.update(r=verify(L, '(defun one () 1)', '(loop)', [],
                                                                   timeout_ms=3000 * SLOW)))
    t.start()
    answered = 0
    deadline = time.time() + 60 * SLOW
    while not children(pid) and time.time() < deadline:
        time.sleep(0.02)
    ok('loop-shadow-running', len(children(pid)) == 1, children(pid))
    shadow = (children(pid) or [0])[0]
    while t.is_alive() and answered < 5:
        rc, out = evaluate(L, '(+ (one) %d)' % answered)
        if rc == 0 and out.strip() == str(1 + answered):
            answered += 1
    ok('loop-calls-answered-meanwhile', answered == 5 and t.is_alive(), (answered, t.is_alive()))
    t.join(120 * SLOW)
    r = result.get('r')
    ok('loop-timeout', r and r.get('ok') is False and r.get('code') == 'timeout' and
       r.get('message') == 'timeout: killed after %d ms' % (3000 * SLOW), r)
    for _ in range(100):
        if not alive(shadow):
            break
        time.sleep(0.05)
    ok('loop-shadow-killed', not alive(shadow), shadow)
    st = status(L)
    ok('loop-live-worker', st['worker_pid'] == pid and st['worker_restarts'] == 0, st)

    # three at once: two shadows alive at most, the third waits its turn
    ok('loop-reaped', reaped(pid) == [], children(pid))
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        verify(L, '(defun one () 1)', '(loop)', [], timeout_ms=1500 * SLOW))) for _ in range(3)]
    for th in threads:
        th.start()
    most = 0
    while any(th.is_alive() for th in threads):
        most = max(most, len(children(pid)))
        time.sleep(0.01)
    ok('three-at-most-two', most == 2, most)
    ok('three-all-timed-out', len(results) == 3 and all(r and r.get('code') == 'timeout' for r in results), results)

    # the kernel stops with a shadow running: none is left behind
    ok('three-reaped', reaped(pid) == [], children(pid))
    result = {}
    t = threading.Thread(target=lambda: result.update(r=verify(L, '(defun one () 1)', '(loop)', [],
                                                                   timeout_ms=600000)))
    t.start()
    deadline = time.time() + 60 * SLOW
    while not children(pid) and time.time() < deadline:
        time.sleep(0.02)
    shadow = (children(pid) or [0])[0]
    ok('stop-shadow-running', shadow and alive(shadow), shadow)
    rc, out = run('stop', '--store', L)
    ok('stop-clean', rc == 0, out)
    t.join(60 * SLOW)
    r = result.get('r')
    ok('stop-answered', r and r.get('ok') is False and r.get('code') == 'shutting-down', r)
    ok('stop-no-shadow', not alive(shadow), shadow)
    ok('stop-no-worker', not alive(pid), pid)
    for p in kernels:
        try:
            p.wait(timeout=30 * SLOW)
        except subprocess.TimeoutExpired:
            pass
    ok('stop-kernel-exited', all(p.poll() == 0 for p in kernels[-1:]), [p.poll() for p in kernels])
    # (a sanitizer build: nothing reported by the kernels, their workers, or the shadows)
    m = re.search(r'.*(AddressSanitizer|LeakSanitizer|runtime error).*', log_text())
    ok('no-sanitizer-reports', not m, m and m.group(0))
finally:
    for s in [os.path.join(tmp, d) for d in ('s', 'foreign', 'libc', 'loop')]:
        if os.path.exists(os.path.join(s, 'kernel.sock')):
            run('stop', '--store', s, timeout=30)
    for p in kernels:
        if p.poll() is None:
            p.kill()
    if failed or os.environ.get('SHADOW_LOG'):
        print(log_text()[-12000:])
    shutil.rmtree(tmp, ignore_errors=True)

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
