#!/usr/bin/env python3
"""forged_frames.py — the kernel trusts no frame of its worker.

A compromised worker (a granted C library, or a bug) can write anything to
its socket.  The test build's worker plays one on request:
(test-forge-frame JSON [BLOB-HEX] [INSTEAD-OF-DECISION]) writes JSON as a
frame of its own, ahead of the call's real outcome (or in place of its
answer to the next commit), and JITI_TEST_FORGE_READY=JSON replaces its
ready frame.  Each forged frame breaks one rule of docs/worker-frames.md
("What the kernel checks"): an operator's invariant removed by a call,
foreign declarations of libraries not granted, entry bytes that do not
decode or name another entry, hashes that are not the bytes', huge,
negative and wrapped generations, a pause for a call that cannot pause,
unknown reasons, events, statuses and members, lengths out of range.  After
each: the client is answered interrupted, the kernel logs the rule, kills
the worker and serves on with a fresh one, nothing was published, the
generation moved only as a worker's death moves it (never to the forged
value), and the operator's invariant is still there and still enforced —
also after the kernel restarts, whose generation is still above every one
handed out.  The offline commands (no kernel) and a rollback check their
worker's frames the same way.

    tests/forged_frames.py JITI-TESTHOOKS
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

JITI = sys.argv[1]
passed = failed = 0


def ok(name, cond, info=''):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print('FAIL %s %s' % (name, str(info)[:800]))


def run(*args, env=None, timeout=60):
    p = subprocess.run([JITI] + list(args), capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout + p.stderr


# ---- canonical encodings (kernel/export.c), for entries forged by hand

def uleb(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def sym(name):
    return b'Y\x01' + uleb(len(name)) + name.encode()


def kw(name):
    return b'Y\x02' + uleb(len(name)) + name.encode()


def string(s):
    return b'S' + uleb(len(s.encode())) + s.encode()


def integer(i):
    t = str(i).encode()
    return b'I' + uleb(len(t)) + t


def lst(*items):
    return b'L' + uleb(len(items)) + b''.join(items) + b'N'


def source_entry(form):
    return b'F' + form


def data_entry(key, value):
    return b'R' + key + value


def lisp(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def forge(frame, blob=b'', decision=False):
    """The Lisp source of a call that forges frame (a dict or a JSON text)."""
    text = frame if isinstance(frame, str) else json.dumps(frame, separators=(',', ':'))
    return '(test-forge-frame %s %s %s)' % (lisp(text), lisp(blob.hex()) if blob else 'nil', 't' if decision else 'nil')


# ---- a kernel

tmp = tempfile.mkdtemp(prefix='jiti-forged.')
S = os.path.join(tmp, 's')
LOG = os.path.join(tmp, 'kernel.log')
kernels = []


def start(store=S, env=None, expect=True):
    log = open(LOG, 'a')
    p = subprocess.Popen([JITI, 'kernel', '--store', store], stdout=log, stderr=log,
                         env=dict(os.environ, **(env or {})))
    kernels.append(p)
    for _ in range(150):
        if run('status', '--store', store)[0] == 0:
            return p
        if p.poll() is not None:
            break
        time.sleep(0.1)
    if expect:
        print('FAIL kernel did not start:', open(LOG).read()[-2000:])
    return p


def stop(store=S):
    run('stop', '--store', store)
    for p in kernels:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()


def status(store=S):
    for _ in range(300):   # until the fresh worker serves
        rc, out = run('status', '--json', '--store', store)
        if rc == 0:
            st = json.loads(out)
            if st.get('state') == 'idle':
                return st
        time.sleep(0.1)
    return json.loads(run('status', '--json', '--store', store)[1])


def request(obj, store=S):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(os.path.join(store, 'kernel.sock'))
    s.sendall((json.dumps(obj) + '\n').encode())
    buf = b''
    while not buf.endswith(b'\n'):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)


def log_text():
    with open(LOG, errors='replace') as f:
        return f.read()


def invariant_holds(tag):
    rc, out = run('invariant', 'list', '--store', S)
    ok(tag + '-invariant-there', rc == 0 and 'POS' in out, out)
    rc, out = run('eval', '--store', S, '(world-put :n -1)')
    ok(tag + '-invariant-enforced', rc == 1 and 'unsafe' in out and 'POS' in out, out)


try:
    ok('init', run('init', '--store', S)[0] == 0)
    start()
    ok('invariant-add', run('invariant', 'add', 'pos', '(>= (or (world-get :n) 0) 0)', '--store', S)[0] == 0)
    ok('first-write', run('eval', '--store', S, '(world-put :n 1)')[0] == 0)

    def case(name, rule, source=None, frame=None, blob=b'', op='call', extra=None):
        """A request whose worker forges frame: refused, worker replaced, nothing published."""
        before = status()
        src = source if source is not None else forge(frame, blob)
        if op == 'call':
            rc, out = run('eval', '--store', S, src)
        elif op == 'preview':
            r = request({'op': 'preview', 'source': src})
            rc, out = (0 if r.get('ok') else 1), json.dumps(r)
        else:
            rc, out = run(*op(src))
        ok(name + '-interrupted', rc == 1 and re.search(
            r'interrupted.*the worker broke the frame rule %s and was killed' % rule, out), out)
        ok(name + '-no-worker-bytes-in-reply', 'pwned' not in out, out)
        after = status()
        ok(name + '-worker-replaced', after['worker_restarts'] == before['worker_restarts'] + 1 and
           after['worker_pid'] != before['worker_pid'], (before, after))
        ok(name + '-nothing-published', after['revision'] == before['revision'], (before, after))
        # a worker's death moves the generation past what it handed out,
        # by one or two; never to a value the worker sent
        ok(name + '-generation', before['generation'] < after['generation'] <= before['generation'] + 2,
           (before['generation'], after['generation']))
        ok(name + '-logged', re.search(r'broke the frame rule %s \(' % rule, log_text()), log_text()[-1500:])
        if extra:
            extra()

    def gen():
        return status()['generation']

    def outcome(**kw):
        o = {'event': 'outcome', 'reason': 'accepted', 'generation': gen(), 'status': 'awaiting-commit',
             'changes': []}
        o.update(kw)
        return o

    # the probe's attack: a call's outcome removes the operator's invariant
    case('invariant-removal', 'entry-kind',
         frame=outcome(changes=[{'kind': 'invariant', 'name': 'POS', 'removed': True, 'len': 0}]))
    invariant_holds('after-removal')
    # ... and adds one of its own, or a package with it
    inv = source_entry(lst(sym('>='), integer(0), integer(1)))
    case('invariant-added', 'entry-kind',
         frame=outcome(changes=[{'kind': 'invariant', 'name': 'EVIL', 'removed': False, 'len': len(inv)}]), blob=inv)
    # foreign declarations of a library the operator did not grant
    cos = source_entry(lst(sym('DEFINE-FOREIGN'), sym('C-COS'), string('libm.so.6'), string('cos'), kw('DOUBLE'),
                           lst(kw('DOUBLE'))))
    case('foreign-not-granted', 'foreign-grant',
         frame=outcome(changes=[{'kind': 'foreign', 'name': 'C-COS', 'removed': False, 'len': len(cos)}]), blob=cos)
    # entry bytes that do not decode, or that are another entry's
    case('bytes-undecodable', 'entry-encoding',
         frame=outcome(changes=[{'kind': 'function', 'name': 'F', 'removed': False, 'len': 3}]), blob=b'FZ\x01')
    g = source_entry(lst(sym('DEFUN'), sym('G'), b'N', integer(1)))
    case('name-differs', 'entry-encoding',
         frame=outcome(changes=[{'kind': 'function', 'name': 'F', 'removed': False, 'len': len(g)}]), blob=g)
    row = data_entry(kw('X'), integer(1))
    case('row-name-differs', 'entry-encoding',
         frame=outcome(changes=[{'kind': 'data', 'name': ':Y', 'removed': False, 'len': len(row)}]), blob=row)
    case('function-of-car', 'entry-encoding',
         frame=outcome(changes=[{'kind': 'function', 'name': 'CAR', 'removed': False,
                                 'len': len(source_entry(lst(sym('DEFUN'), sym('CAR'), b'N', integer(1))))}]),
         blob=source_entry(lst(sym('DEFUN'), sym('CAR'), b'N', integer(1))))
    case('hash-wrong', 'entry-hash',
         frame=outcome(changes=[{'kind': 'data', 'name': ':X', 'removed': False, 'len': len(row), 'hash': '0' * 64}]),
         blob=row)
    # lengths out of range
    case('length-past-blob', 'entry-lengths',
         frame=outcome(changes=[{'kind': 'data', 'name': ':X', 'removed': False, 'len': len(row) + 100}]), blob=row)
    case('length-short', 'entry-lengths',
         frame=outcome(changes=[{'kind': 'data', 'name': ':X', 'removed': False, 'len': 1}]), blob=row)
    case('length-negative', 'frame-shape',
         frame=outcome(changes=[{'kind': 'data', 'name': ':X', 'removed': False, 'len': -4}]), blob=row)
    case('entry-twice', 'frame-shape',
         frame=outcome(changes=[{'kind': 'data', 'name': ':X', 'removed': False, 'len': len(row)},
                                {'kind': 'data', 'name': ':X', 'removed': True, 'len': 0}]), blob=row)
    case('removed-with-bytes', 'entry-lengths',
         frame=outcome(changes=[{'kind': 'data', 'name': ':X', 'removed': True, 'len': len(row)}]), blob=row)
    # generations: huge, negative, wrapped, merely one ahead
    case('generation-huge', 'generation', frame=outcome(generation=2 ** 63 - 1, status='idle', committed=True))
    case('generation-negative', 'generation', frame=outcome(generation=-5, status='idle', committed=True))
    case('generation-ahead', 'generation', frame=outcome(generation=gen() + 1, status='idle', committed=True))
    # 2^64 - 1 does not even read as a JSON integer: an unreadable frame
    before = status()
    rc, out = run('eval', '--store', S, forge('{"event":"outcome","reason":"accepted","generation":18446744073709551615,'
                                              '"status":"idle","changes":[],"committed":true}'))
    after = status()
    ok('generation-wrapped', rc == 1 and 'broke the frame rule frame-syntax' in out and
       after['worker_restarts'] == before['worker_restarts'] + 1
       and after['revision'] == before['revision'] and after['generation'] <= before['generation'] + 2, (out, after))
    # an act may pause, but only one generation on (and as pause 1)
    def act(src):
        return ('act', '--store', S, '--generation', str(gen()), '--evaluate', src)
    pause = {'generation': gen() + 5, 'pause': 1, 'level': 1, 'condition_type': 'ERROR', 'report': 'x',
             'backtrace': '', 'frames': [], 'restarts': [], 'steps_used': 0, 'step_budget': 20}
    case('paused-generation', 'generation', op=act, frame={'event': 'paused', 'pause': pause})
    # a pause's frames: bounded, numbered in order, no member more or less
    frame = {'frame': 0, 'function': 'F', 'args': ['1'], 'locals': [{'name': 'X', 'value': '1'}]}
    for name, frames in [('frames-missing', None),
                         ('frames-numbered', [frame, dict(frame, frame=5)]),
                         ('frames-value-long', [dict(frame, locals=[{'name': 'X', 'value': 'v' * 201}])]),
                         ('frames-arg-long', [dict(frame, args=['a' * 201])]),
                         ('frames-name-long', [dict(frame, function='F' * 121)]),
                         ('frames-too-many', [dict(frame, frame=i) for i in range(41)]),
                         ('frames-too-many-locals', [dict(frame, locals=[{'name': 'X', 'value': '1'}] * 33)]),
                         ('frames-local-member', [dict(frame, locals=[{'name': 'X', 'value': '1', 'pwned': 1}])]),
                         ('frames-member', [dict(frame, pwned=1)])]:
        p = dict(pause, generation=gen() + 1)
        if frames is None:
            del p['frames']
        else:
            p['frames'] = frames
        case(name, 'frame-shape', op=act, frame={'event': 'paused', 'pause': p})
    pause = dict(pause, generation=gen() + 1, pause=2)
    case('paused-number', 'pause', op=act, frame={'event': 'paused', 'pause': pause})
    pause = dict(pause, generation=gen() + 1, pause=1,
                 restarts=[{'id': 'p7-0', 'level': 1, 'name': 'ABORT', 'report': '', 'lambda_list': ''}])
    case('paused-restart-id', 'pause', op=act, frame={'event': 'paused', 'pause': pause})
    # a level no pause has opened, a restart of a level above the pause's
    pause = dict(pause, generation=gen() + 1, pause=1, level=3, restarts=[])
    case('paused-level', 'pause', op=act, frame={'event': 'paused', 'pause': pause})
    pause = dict(pause, generation=gen() + 1, pause=1, level=1,
                 restarts=[{'id': 'p1-0', 'level': 2, 'name': 'ABORT', 'report': '', 'lambda_list': ''}])
    case('paused-restart-level', 'pause', op=act, frame={'event': 'paused', 'pause': pause})
    # a pause for a call, which cannot pause
    pause = {'generation': gen() + 1, 'pause': 1, 'level': 1, 'condition_type': 'ERROR', 'report': 'pwned',
             'backtrace': '', 'frames': [], 'restarts': [], 'steps_used': 0, 'step_budget': 20}
    case('paused-call', 'pause', frame={'event': 'paused', 'pause': pause})
    # vocabulary: reason, event, status, members
    case('reason-unknown', 'reason', frame=outcome(reason='pwned', message='x', status='idle'))
    case('reason-stale-unasked', 'reason', frame=outcome(reason='stale', message='x', status='idle'))
    case('event-unknown', 'event', frame={'event': 'pwned'})
    case('event-unasked', 'event', frame={'event': 'view', 'view': {}})
    case('status-unknown', 'status', frame=outcome(status='pwned'))
    case('member-unknown', 'frame-shape', frame=outcome(status='idle', committed=True, pwned=1))
    case('member-type', 'frame-shape', frame=outcome(reason=7))
    # a diagnosis only explains an unhandled error of an attempt that could not pause
    diag = {'condition_type': 'ERROR', 'report': 'x', 'restarts': [], 'backtrace': ''}
    case('diagnosis-of-success', 'status', frame=outcome(status='idle', committed=True, diagnosis=diag))
    case('diagnosis-shape', 'frame-shape', frame=outcome(reason='error', message='x', status='idle',
                                                          diagnosis=dict(diag, restarts=[{'name': 'R'}])))
    case('failure-with-changes', 'entry-lengths',
         frame=outcome(reason='error', message='x', status='idle',
                       changes=[{'kind': 'data', 'name': ':X', 'removed': False, 'len': len(row)}]), blob=row)
    # a preview's changes are checked too (they are shown, not published)
    case('preview-invariant', 'entry-kind', op='preview',
         frame=outcome(status='idle', changes=[{'kind': 'invariant', 'name': 'POS', 'removed': True, 'len': 0}]))
    # an operator's apply may not touch invariants either
    case('apply-invariant', 'entry-kind', op=lambda src: ('apply', '--store', S, '-e', src),
         frame=outcome(changes=[{'kind': 'invariant', 'name': 'POS', 'removed': True, 'len': 0}]))
    # an invariant-add changes the invariant it names, and only that one
    # (its source runs when the new set is checked: there it forges)
    case('invariant-add-other', 'invariant-op',
         op=lambda src: ('invariant', 'add', 'other', '(progn %s t)' % src, '--store', S),
         frame=outcome(changes=[{'kind': 'invariant', 'name': 'POS', 'removed': True, 'len': 0}]))
    invariant_holds('after-cases')

    # what a failing call read: only when the kernel asked (a repair rule
    # selects something), bounded, of the recorded kinds, a slot's with its object
    read = {'kind': 'row', 'name': ':X', 'value': '1'}
    failing = lambda reads: outcome(reason='error', message='x', status='idle', diagnosis=dict(diag, reads=reads))
    case('reads-unasked', 'call-note', frame=failing([read]))
    ok('reads-rule-on', run('repair', 'enable', 'test-forge-frame', '--store', S)[0] == 0)
    case('reads-many', 'frame-shape', frame=failing([read] * 33))
    case('read-kind', 'frame-shape', frame=failing([dict(read, kind='file')]))
    case('read-object', 'frame-shape', frame=failing([dict(read, kind='slot')]))
    case('read-object-extra', 'frame-shape', frame=failing([dict(read, object='#<X>')]))
    case('read-long', 'frame-shape', frame=failing([dict(read, value='9' * 201)]))
    ok('reads-rule-off', run('repair', 'disable', 'test-forge-frame', '--store', S)[0] == 0)
    # a copy parked at a failure: only when asked (a rule pauses), only at an
    # unhandled error, and only a child of the worker
    case('parked-unasked', 'process', frame=outcome(reason='error', message='x', status='idle', diagnosis=diag, parked=2))
    ok('park-rule-on', run('repair', 'enable', 'test-forge-frame', '--mode', 'pause', '--store', S)[0] == 0)
    case('parked-not-child', 'process', frame=outcome(reason='error', message='x', status='idle', diagnosis=diag, parked=1))
    case('parked-no-error', 'process', frame=outcome(reason='error', message='x', status='idle', parked=2))
    ok('park-rule-off', run('repair', 'disable', 'test-forge-frame', '--store', S)[0] == 0)

    # a call's note (the traffic sample's function and argument classes):
    # only when the kernel asked, only of a call that succeeded, bounded
    case('note-unasked', 'call-note', frame=outcome(status='idle', committed=True,
                                                    noted={'function': 'F', 'signature': 'fixnum'}))
    ok('note-rule-on', run('repair', 'enable', 'test-forge-frame', '--store', S)[0] == 0)
    case('note-of-failure', 'call-note', frame=outcome(reason='error', message='x', status='idle',
                                                       noted={'function': 'TEST-FORGE-FRAME', 'signature': ''}))
    case('note-name-long', 'frame-shape', frame=outcome(status='idle', committed=True,
                                                        noted={'function': 'F' * 481, 'signature': 'fixnum'}))
    case('note-signature-long', 'frame-shape', frame=outcome(status='idle', committed=True,
                                                             noted={'function': 'F', 'signature': 's' * 1025}))
    case('note-name-empty', 'frame-shape', frame=outcome(status='idle', committed=True,
                                                         noted={'function': '', 'signature': ''}))
    case('note-member', 'frame-shape', frame=outcome(status='idle', committed=True,
                                                     noted={'function': 'F', 'signature': '', 'pwned': 1}))
    case('note-nul', 'frame-syntax', frame=outcome(status='idle', committed=True,
                                                  noted={'function': 'F\u0000G', 'signature': ''}))
    ok('note-rule-off', run('repair', 'disable', 'test-forge-frame', '--store', S)[0] == 0)
    rc, out = run('traffic', '--store', S)
    ok('note-nothing-kept', rc == 0 and 'no calls kept' in out, out)

    # a commit's answer with a generation of its own: the call's revision,
    # checked before it was published, stands; the worker goes
    before = status()
    rc, out = run('eval', '--store', S, '(progn %s (world-put :acked 1))' % forge(
        {'event': 'committed', 'generation': 2 ** 40, 'status': 'idle'}, decision=True))
    ok('ack-call-answered', rc == 0 and out.strip() == '1', out)
    after = status()
    ok('ack-worker-replaced', after['worker_restarts'] == before['worker_restarts'] + 1, (before, after))
    ok('ack-published', after['revision'] == before['revision'] + 1, (before, after))
    ok('ack-generation', after['generation'] <= before['generation'] + 3, (before, after))
    ok('ack-logged', 'broke the frame rule generation (committed' in log_text(), log_text()[-1500:])
    ok('ack-kept', run('eval', '--store', S, '(values (world-get :acked))')[1].strip() == '1')

    # the escaped log: a forged name never reaches the log raw
    run('eval', '--store', S, forge(outcome(changes=[{'kind': 'invariant', 'name': 'POS\n2026 forged log line',
                                                      'removed': True, 'len': 0}])))
    status()   # (the log is written with the events, soon after the reply)
    ok('log-escaped', 'POS\\x0a2026 forged log line' in log_text() and '\n2026 forged log line' not in log_text(),
       log_text()[-800:])

    # the generations stay monotonic across a restart of the kernel
    g_before = status()['generation']
    rev_before = status()['revision']
    stop()
    start()
    st = status()
    ok('restart-generation-monotonic', g_before < st['generation'] < 2 ** 53, (g_before, st['generation']))
    ok('restart-revision', st['revision'] == rev_before, st)
    invariant_holds('after-restart')

    stop()

    # a ready frame forged at start-up: the worker never serves
    for name, ready in [('ready-generation', {'event': 'ready', 'generation': 2 ** 63 - 1, 'status': 'idle',
                                              'message': ''}),
                        ('ready-grant', {'event': 'ready', 'generation': 0, 'status': 'idle', 'message': '',
                                         'foreign': {'granted': ['libpwned.so'], 'unavailable': [], 'failed': []}})]:
        p = start(env={'JITI_TEST_FORGE_READY': json.dumps(ready)}, expect=False)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
        ok(name + '-refused', p.returncode not in (None, 0), p.returncode)
        ok(name + '-logged', 'broke the frame rule' in log_text() and 'cannot start a worker' in log_text(),
           log_text()[-800:])
    start()
    st = status()
    ok('after-forged-ready-generation', g_before < st['generation'] < 2 ** 53, st)
    invariant_holds('after-forged-ready')
    stop()

    # offline: the same rules, no kernel
    rc, out = run('apply', '--store', S, '-e', forge(
        {'event': 'outcome', 'reason': 'accepted', 'generation': 0, 'status': 'awaiting-commit',
         'changes': [{'kind': 'invariant', 'name': 'POS', 'removed': True, 'len': 0}]}))
    ok('offline-refused', rc == 1 and 'broke the frame rule' in out and 'nothing was published' in out, out)
    rc, out = run('invariant', 'list', '--store', S)
    ok('offline-invariant-there', rc == 0 and 'POS' in out, out)
    rc, out = run('apply', '--store', S, '-e', '(world-put :n -1)')
    ok('offline-invariant-enforced', rc == 1 and 'unsafe' in out, out)
    rc, out = run('apply', '--store', S, '-e', '(world-put :offline 1)')
    ok('offline-honest-apply', rc == 0, out)
    # a rollback's worker starting with a forged ready frame: nothing rolls back
    rc, out = run('rollback', 'previous', '--store', S,
                  env={'JITI_TEST_FORGE_READY': '{"event":"ready","generation":99999999,"status":"idle","message":""}'})
    ok('offline-rollback-refused', rc == 1 and 'broke the frame rule generation' in out, out)
    rc, out = run('eval', '--store', S, '1')   # (no kernel: refused, but the store is as it was)
    rc, out = run('show', 'HEAD', '--store', S)
    ok('offline-rollback-nothing', rc == 0 and 'apply' in out and 'rollback' not in out, out)
finally:
    for p in kernels:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(tmp, ignore_errors=True)

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
