"""Concurrency: acts racing with one generation (exactly one runs), 1,000
interleaved calls from 4 clients (the data equals the sequential result and
every write is in its own revision), a stream of calls that must not
hold back another client's query, and a long call that must not hold back
the reply of a write that ran before it in the same batch."""
import threading
import time

import proto
from proto import Kernel, expect_error, expect_ok


def run(R):
    with Kernel() as k:
        R.run('concurrency/racing-acts-one-generation', lambda: racing_acts(k))
    with Kernel() as k:
        R.run('concurrency/interleaved-calls', lambda: interleaved_calls(k))
    with Kernel() as k:
        R.run('concurrency/query-not-held-by-a-call-stream', lambda: query_not_held(k))
    with Kernel('--fuel', '100000000') as k:   # SLEEP pays fuel: 1e7 a second
        R.run('concurrency/write-not-held-by-a-later-long-call', lambda: write_not_held(k))


def racing_acts(k, rounds=None):
    rounds = rounds or (5 if proto.GC_STRESS else 20)
    a, b = k.conn(), k.conn()
    rev0 = k.status()['revision']
    wins = {'A': 0, 'B': 0}
    for n in range(rounds):
        g = k.gen()
        reqs = {}
        for who, c in (('A', a), ('B', b)):
            src = ('(progn (world-put :winner "%s") (world-put :round %d) '
                   '(world-put :count (1+ (world-get :count 0))))' % (who, n))
            req = {'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': src}, 'id': '%s%d' % (who, n)}
            proto.schemas().check('request-act.json', req, 'request')
            c.pending[req['id']] = ('act', True)
            reqs[who] = proto.json.dumps(req).encode() + b'\n'
        # both requests are written before either reply is read, B first every other round
        order = (('A', a), ('B', b)) if n % 2 == 0 else (('B', b), ('A', a))
        for who, c in order:
            c.sock.sendall(reqs[who])
        ra, rb = a.reply('A%d' % n), b.reply('B%d' % n)
        oks = [r for r in (ra, rb) if r['ok']]
        assert len(oks) == 1, 'round %d: %d acts ran: %s %s' % (n, len(oks), proto.snippet(ra), proto.snippet(rb))
        winner, loser = ('A', rb) if ra['ok'] else ('B', ra)
        expect_error(loser, 'stale')
        assert loser['generation'] >= g + 1, loser
        wins[winner] += 1
        assert k.value('(world-get :winner)') == '"%s"' % winner
        assert k.value('(world-get :count)') == str(n + 1), 'round %d: more than one write' % n
    st = k.status()
    assert st['revision'] == rev0 + rounds, 'revisions: %d, expected %d' % (st['revision'] - rev0, rounds)
    a.close()
    b.close()


def interleaved_calls(k, clients=4, per_client=None, window=8):
    per_client = per_client or (50 if proto.GC_STRESS else 250)
    total = clients * per_client
    rev0 = k.status()['revision']
    results = {}
    errors = []

    def client(ci):
        try:
            with k.conn(timeout=300 * proto.SLOW) as c:
                inflight = []
                out = []
                for i in range(per_client):
                    src = ('(progn (world-put :c%d (1+ (world-get :c%d 0))) (world-put :shared (1+ (world-get :shared 0))) '
                           '(world-put :log%d (cons %d (world-get :log%d nil))))' % (ci, ci, ci, i, ci))
                    inflight.append(c.send({'op': 'call', 'source': src}))
                    if len(inflight) >= window:
                        out.append(c.reply(inflight.pop(0)))
                while inflight:
                    out.append(c.reply(inflight.pop(0)))
                results[ci] = out
        except Exception as e:  # reported by the main thread
            errors.append('client %d: %r' % (ci, e))

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(ci,)) for ci in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.time() - t0
    assert not errors, errors
    revisions = []
    for ci, out in results.items():
        assert len(out) == per_client
        for r in out:
            expect_ok(r, outcome='accepted')
            assert len(r['changes']) == 3, r
            revisions.append(r['revision'])
    # every accepted write got its own revision, and they are consecutive
    assert sorted(revisions) == list(range(rev0 + 1, rev0 + total + 1)), 'revisions are not one per call'
    # the data equals the sequential result
    assert k.value('(world-get :shared)') == str(total)
    for ci in range(clients):
        assert k.value('(world-get :c%d)' % ci) == str(per_client)
        want = '(' + ' '.join(str(i) for i in reversed(range(per_client))) + ')'
        assert k.value('(world-get :log%d)' % ci) == want, 'client %d log out of order' % ci
    # the history holds every one of them, each a call that changed its three rows
    with k.conn() as c:
        h = c.request({'op': 'history', 'limit': min(1000, total)})
    hist = h['revisions']
    assert h['current'] == rev0 + total
    assert [x['revision'] for x in hist] == list(range(rev0 + total, rev0 + total - len(hist), -1))
    for x in hist:
        assert x['kind'] == 'application' and x['summary'].startswith('call: (progn (world-put :c'), x
        assert x['added'] + x['changed'] == 3 and x['removed'] == 0, x
    interleaved = sum(1 for x, y in zip(hist, hist[1:]) if x['summary'][:30] != y['summary'][:30])
    assert interleaved > clients, 'the clients did not interleave (%d switches)' % interleaved
    print('     %d calls from %d clients in %.1fs (%.1f ms each); %d client switches in the history'
          % (total, clients, dt, dt * 1000 / total, interleaved), flush=True)


def query_not_held(k, n=None):
    """Client A sends a slow call and n writing calls at once; client B then
    asks observe.  The calls go to the worker in batches and keep streaming
    to it, but a waiting query stops the stream: B's view must come after at
    most one batch (64 calls), not after A's n calls; then A gets all its
    replies, in order, each write its own revision."""
    n = n or (150 if proto.GC_STRESS else 1000)
    a, b = k.conn(), k.conn()
    rev0 = k.status()['revision']
    # ~0.1 s (0.7 s under ASan): B's observe must arrive while it runs
    slow = '(let ((s 0)) (dotimes (i 3000000) (setq s (+ s i))) s)'
    write = '(world-put :n (1+ (world-get :n 0)))'
    lines = []
    for i in range(n + 1):
        req = {'op': 'call', 'source': slow if i == 0 else write, 'id': 'a%d' % i}
        proto.schemas().check('request-call.json', req, 'request')
        a.pending[req['id']] = ('call', True)
        lines.append(proto.json.dumps(req).encode() + b'\n')
    a.sock.sendall(b''.join(lines))
    view = expect_ok(b.request({'op': 'observe'}))['view']
    before = view['revision'] - rev0
    assert before <= 64, 'observe waited for %d of %d calls' % (before, n)
    for i in range(n + 1):
        r = expect_ok(a.reply('a%d' % i))
        if i:
            assert r['revision'] == rev0 + i, 'call %d: revision %d' % (i, r['revision'])
    assert k.value('(world-get :n)') == str(n)
    a.close()
    b.close()


def write_not_held(k, long_s=3):
    """A short call, then a write and a long call (SLEEP), sent in one write:
    the short call starts alone, and the two others go to the worker as one
    batch, whose outcomes it sends together when the batch ends — but not
    later than a moment after each is known, so the write is answered while
    the long call still runs, not when it ends."""
    a = k.conn()
    rev0 = k.status()['revision']
    ids = a.send_many([{'op': 'call', 'source': '(progn (sleep 0.2) :first)'},
                       {'op': 'call', 'source': '(world-put :quick 1)'},
                       {'op': 'call', 'source': '(progn (sleep %d) :slept)' % long_s}])
    expect_ok(a.reply(ids[0], timeout=60))
    w = expect_ok(a.reply(ids[1], timeout=60))
    t_write = time.time()
    assert w['revision'] == rev0 + 1, w
    s = expect_ok(a.reply(ids[2], timeout=60))
    gap = time.time() - t_write
    assert s['value'] == ':SLEPT', s
    assert gap > long_s / 3, 'the write was answered %.2fs before the long call: held back by it' % gap
    a.close()
