"""Who gets served, and how often: idempotency keys (a retried call gets
the first one's outcome, also after a kernel restart, and `jiti eval`
retries with its key when its connection drops).  Who gets served: connections that say nothing are closed after the idle
timeout (subscribers stay), whoever holds every ordinary slot cannot keep
`jiti status` and `jiti stop` out (the reserved slots), clients that never
read their replies are cut off once all of them together hold too much, a
pause ends at its deadline however many repairs it is sent, and a client
refuses a socket served by another user."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import proto
from proto import Kernel, expect_error, expect_ok, wait_for

MIB = 1 << 20


def run(R):
    R.run('access/idle-connections-closed', idle_connections)
    R.run('access/operator-slots', operator_slots)
    R.run('access/status-exit-on-error-reply', status_error_reply)
    R.run('access/output-cap-of-all-clients', output_cap)
    R.run('access/pause-deadline-is-absolute', pause_deadline)
    R.run('access/foreign-socket-refused', foreign_socket)
    R.run('access/idempotent-calls', idempotent_calls)
    R.run('access/keys-are-keys', keys_are_keys)
    R.run('access/eval-retries-across-a-kill', eval_retries)


def jiti(*args):
    return proto.run_jiti(*args, timeout=60)


def hold(k, n):
    """n raw connections to k that say nothing."""
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX)
        s.connect(k.sock_path)
        socks.append(s)
    return socks


def idle_connections():
    with Kernel('--idle-timeout', '1') as k:
        idle = hold(k, 20)
        talker = k.conn()
        expect_ok(talker.request({'op': 'hello'}))
        sub = k.conn()
        expect_ok(sub.request({'op': 'subscribe'}))
        assert k.status()['clients'] >= 23
        # the silent ones and the one that spoke once are closed; the subscriber stays
        wait_for(lambda: k.status()['clients'] == 2, 15 * proto.SLOW, 'the idle connections to be closed')
        for s in idle:
            s.settimeout(5 * proto.SLOW)
            assert s.recv(1) == b'', 'an idle connection was not closed'
            s.close()
        expect_ok(k.call('(world-put :seen 1)'))
        sub.wait_event(lambda e: e['event'] == 'accepted', what='the subscriber still gets events')
        sub.close()
        talker.close()


def operator_slots():
    with Kernel('--max-clients', '10') as k:
        holders = hold(k, 10)
        wait_for(lambda: k.status()['clients'] >= 10, 10 * proto.SLOW, 'ten connections held')
        r = jiti('status', '--store', k.store)
        assert r.returncode == 0 and 'idle' in r.stdout, r
        r = jiti('eval', '--store', k.store, '(+ 1 2)')
        assert r.returncode == 1 and 'only ask for status or stop' in r.stderr, r
        # the reserved slots held too: the oldest gives way
        extra = hold(k, 8)
        time.sleep(0.3)
        r = jiti('status', '--store', k.store)
        assert r.returncode == 0, r
        assert 'operator slot was needed' in k.log(), k.log()[-800:]
        r = jiti('stop', '--store', k.store)
        assert r.returncode == 0, r
        assert k.wait_exit() == 0
        for s in holders + extra:
            s.close()


def status_error_reply():
    """`jiti status` exits 1 on an error reply: the kernel out of descriptors
    answers busy."""
    k = Kernel(nofile=64)
    socks = []
    try:
        r = None
        socks += hold(k, 80)
        time.sleep(0.3)
        r = jiti('status', '--store', k.store)
        assert r.returncode == 1 and 'busy' in r.stderr and 'file descriptors' in r.stderr, r
    finally:
        for s in socks:
            s.close()
        k.stop()
        k.cleanup()


def output_cap():
    """Five clients that ask for 1 MiB replies (an entry's text is cut there)
    and never read them: each stays under its own 64 MiB, together they pass
    256 MiB, and the one that would pass it is cut off (logged); the kernel
    serves everyone else.  (Not under GC stress: it tests the daemon's
    accounting, and 300 replies there take minutes.)"""
    if proto.GC_STRESS:
        return
    with Kernel() as k:
        expect_ok(k.call('(world-put :big (make-string 2000000 :initial-element #\\b))'))
        line = b'{"op":"inspect","kind":"data","name":":BIG"}\n'
        lazy = []
        for _ in range(5):
            s = socket.socket(socket.AF_UNIX)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(k.sock_path)
            s.sendall(line * 60)   # ~63 MB of replies each
            lazy.append(s)
        wait_for(lambda: 'limit of all clients together' in k.log(), 240 * proto.SLOW,
                 'a client cut off at the output cap of all clients')
        assert 'limit of one client' not in k.log()
        expect_ok(k.status())
        assert k.value('(length (world-get :big))') == '2000000'
        for s in lazy:
            s.close()
        wait_for(lambda: k.status()['state'] == 'idle' and k.status()['queue'] == 0, 240 * proto.SLOW,
                 'the kernel idle again')


def pause_deadline():
    """Repairs that leave the transaction paused do not move its deadline."""
    timeout = 2 * proto.SLOW
    with Kernel('--pause-timeout', str(int(timeout))) as k:
        with k.conn() as c:
            src = '(progn (world-put :p 1) (restart-case (car 5) (use-value (v) v)))'
            r = expect_ok(c.request({'op': 'act', 'generation': k.gen(),
                                     'action': {'type': 'evaluate', 'source': src}}), status='paused')
            t0 = time.time()
            g = r['generation']
            ended = False
            while time.time() - t0 < 4 * timeout:
                r = c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '(+ 1 2)'}})
                if r.get('status') != 'paused':
                    ended = True
                    break
                g = r['generation']
                time.sleep(timeout / 8)   # 8 repairs fit in the timeout; a pause allows 20 commands
            took = time.time() - t0
            assert ended, 'the pause outlived %d s of repairs' % (4 * timeout)
            assert took < timeout + 1.5 * proto.SLOW, 'the pause ended after %.1f s' % took
            wait_for(lambda: 'pause timed out' in k.log(), 10 * proto.SLOW,
                     'the timeout in the log (the pause ended with %s after %.1f s)' % (proto.snippet(r, 300), took))
        assert k.value('(world-get :p)') == 'NIL'


def foreign_socket():
    """A server of another user listening on the store's socket (the store
    directory writable by others) receives nothing: the client refuses it."""
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        return   # needs root, to run a server as another user
    d = tempfile.mkdtemp(prefix='jiti-foreign.', dir='/tmp')
    os.chmod(d, 0o1777)
    server = subprocess.Popen(
        ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '/usr/bin/python3', '-c',
         'import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen()\n'
         'c,_=s.accept()\nopen(sys.argv[2],"wb").write(c.recv(100))\ntime.sleep(30)',
         os.path.join(d, 'kernel.sock'), os.path.join(d, 'got')])
    try:
        wait_for(lambda: os.path.exists(os.path.join(d, 'kernel.sock')), 10, 'the foreign server')
        r = jiti('eval', '--store', d, '(secret)')
        assert r.returncode == 1 and 'served by user 65534' in r.stderr and 'chmod go-w' in r.stderr, r
        time.sleep(0.3)
        got = os.path.join(d, 'got')
        assert not os.path.exists(got) or open(got, 'rb').read() == b'', 'the request reached the server'
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(d, ignore_errors=True)


COUNT = '(world-put :n (1+ (world-get :n 0)))'


def digest(key):
    """What events carry of an idempotency key: its SHA-256."""
    import hashlib
    return hashlib.sha256(key.encode()).hexdigest()
SLOW_COUNT = '(progn (dotimes (i 3000000)) (world-put :n (1+ (world-get :n 0))))'


def idempotent_calls():
    with Kernel() as k:
        first = expect_ok(k.request({'op': 'call', 'source': COUNT, 'key': 'k-1'}), value='1')
        assert 'replayed' not in first
        again = expect_ok(k.request({'op': 'call', 'source': COUNT, 'key': 'k-1'}), value='1', replayed=True)
        assert again['revision'] == first['revision'] and again['changes'] == first['changes'], (first, again)
        assert k.value('(world-get :n)') == '1'
        # malformed keys run nothing
        expect_error(k.request({'op': 'call', 'source': COUNT, 'key': ''}, valid=False), 'invalid-request', 'empty')
        with k.conn() as c:
            c.send_raw(check_line(b'{"op":"call","source":"(world-put :n 0)","key":"k-2"}\n'))
            expect_error(c.reply(), 'invalid-request', 'needs an "id"')
        # a refusal where nothing ran is not recorded: the retry runs
        expect_error(k.request({'op': 'call', 'source': COUNT, 'key': 'k-3', 'generation': k.gen() + 5}), 'stale')
        expect_ok(k.request({'op': 'call', 'source': COUNT, 'key': 'k-3'}), value='2')
        # while the first try runs, the same key is told to come back; then gets its outcome
        sub = k.conn()
        expect_ok(sub.request({'op': 'subscribe'}))
        a = k.conn()
        a.send({'op': 'call', 'source': SLOW_COUNT, 'key': 'k-4', 'id': 'slow'})
        a.pending['slow'] = ('call', True)
        wait_for(lambda: k.status()['state'] == 'running', 30 * proto.SLOW, 'the slow call')
        expect_error(k.request({'op': 'call', 'source': SLOW_COUNT, 'key': 'k-4'}), 'busy', 'still waiting or running')
        a.close()   # its client gives up: the call still runs to its end
        r = wait_for(lambda: (lambda x: x if x.get('ok') else None)(
            k.request({'op': 'call', 'source': SLOW_COUNT, 'key': 'k-4'})), 60 * proto.SLOW, 'the outcome of k-4')
        assert r.get('replayed') is True and r['value'] == '3', r
        assert k.value('(world-get :n)') == '3'
        done = sub.wait_event(lambda e: e['event'] == 'accepted' and e.get('idempotency') == digest('k-4'), what='its outcome')
        sub.close()
        # a kernel started later replays what the store kept
        k.stop()
        k.start()
        r = expect_ok(k.request({'op': 'call', 'source': SLOW_COUNT, 'key': 'k-4'}), replayed=True,
                      outcome='accepted', revision=done['revision'])
        assert 'value' not in r and r['changes'] == [{'kind': 'data', 'name': ':N', 'removed': False}], r
        assert k.value('(world-get :n)') == '3'


def keys_are_keys():
    """A key replays exactly, across a restart too, whatever it looks like
    (keys are kept as digests, out of the store's redaction of secrets); a
    key reused for another request is refused key-conflict, before and
    after a restart, and nothing runs."""
    keys = ['sk-abcdefgh12345678', '[redacted]', 'Bearer abcdefgh', 'k-plain']
    with Kernel() as k:
        first = {}
        for key in keys:   # each its own revision
            first[key] = expect_ok(k.request({'op': 'call', 'source': COUNT, 'key': key}))
            again = expect_ok(k.request({'op': 'call', 'source': COUNT, 'key': key}), replayed=True,
                              value=first[key]['value'], revision=first[key]['revision'])
            assert again['changes'] == first[key]['changes'], (first[key], again)
            expect_error(k.request({'op': 'call', 'source': '(world-put :other 1)', 'key': key}), 'key-conflict',
                         'different request')
        # the same source with another generation or limits is another request
        expect_error(k.request({'op': 'call', 'source': COUNT, 'key': 'k-plain', 'limits': {'fuel': 100000}}),
                     'key-conflict')
        read = expect_ok(k.request({'op': 'call', 'source': '(+ 40 2)', 'key': 'sk-read-12345678'}), value='42')
        g = k.gen()
        act = expect_ok(k.request({'op': 'act', 'generation': g, 'key': 'act-1',
                                   'action': {'type': 'evaluate', 'source': '(world-put :acted 1)'}}))
        expect_error(k.request({'op': 'act', 'generation': g, 'key': 'act-1',
                                'action': {'type': 'evaluate', 'source': '(world-put :acted 2)'}}), 'key-conflict')
        n = k.value('(world-get :n)')
        assert n == str(len(keys)) and k.value('(world-get :other)') == 'NIL', n
        k.stop()
        # the store holds the keys' digests, never the keys
        events = jiti('events', '--json', '--store', k.store).stdout
        for key in keys:
            assert key not in events or key == '[redacted]', key
            assert digest(key) in events, key
        k.start()
        for key in keys:
            r = expect_ok(k.request({'op': 'call', 'source': COUNT, 'key': key}), replayed=True, outcome='accepted',
                          revision=first[key]['revision'])
            assert 'value' not in r and r['changes'] == first[key]['changes'], (key, r)
            expect_error(k.request({'op': 'call', 'source': '(world-put :other 1)', 'key': key}), 'key-conflict')
        expect_ok(k.request({'op': 'call', 'source': '(+ 40 2)', 'key': 'sk-read-12345678'}), replayed=True,
                  revision=read['revision'])
        expect_error(k.request({'op': 'call', 'source': '(+ 40 3)', 'key': 'sk-read-12345678'}), 'key-conflict')
        expect_ok(k.request({'op': 'act', 'generation': g, 'key': 'act-1',   # a retry: the same request
                             'action': {'type': 'evaluate', 'source': '(world-put :acted 1)'}}),
                  replayed=True, revision=act['revision'])
        expect_error(k.request({'op': 'act', 'generation': g, 'key': 'act-1',
                                'action': {'type': 'evaluate', 'source': '(world-put :acted 2)'}}), 'key-conflict')
        assert k.value('(world-get :n)') == n and k.value('(world-get :other)') == 'NIL'
        assert k.value('(world-get :acted)') == '1'
        counts = {(x['kind'], x['outcome']): x['count'] for x in k.status()['counters']}
        assert counts.get(('call', 'key-conflict'), 0) >= 2 * len(keys) + 2, counts


def check_line(line):
    """Raw bytes of a request the schemas accept (the kernel refuses it for
    what they cannot say: a key without an id)."""
    proto.schemas().check('request-call.json', proto.json.loads(line), 'request')
    return line


def eval_retries():
    """kill -9 of the kernel while a `jiti eval` waits: it reconnects to the
    next kernel and sends its call again with its key; the call had not been
    published, so it runs now, once."""
    with Kernel('--fuel', '0') as k:
        expect_ok(k.call(COUNT))
        slow = SLOW_COUNT.replace('3000000', '30000000')
        p = subprocess.Popen([proto.JITI, 'eval', '--store', k.store, '--key', 'e-1', slow],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: k.status()['state'] == 'running', 30 * proto.SLOW, 'the call to run')
        k.kill()
        k.start()
        out, err = p.communicate(timeout=120 * proto.SLOW)
        assert p.returncode == 0 and out.strip() == '2', (p.returncode, out, err)
        assert 'retrying with the same key' in err, err
        assert k.value('(world-get :n)') == '2'
        # the same key once more: replayed, nothing runs
        r = jiti('eval', '--store', k.store, '--key', 'e-1', slow)
        assert r.returncode == 0 and 'replayed' in r.stderr and r.stdout.strip() == '2', r
        assert k.value('(world-get :n)') == '2'
        # the same key with another request: refused, nothing runs
        r = jiti('eval', '--store', k.store, '--key', 'e-1', COUNT)
        assert r.returncode == 1 and 'key-conflict' in r.stderr, r
        assert k.value('(world-get :n)') == '2'
