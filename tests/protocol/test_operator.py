"""The operator's requests and the kernel's limits: apply (a program as one
transaction), rollback (checked by a worker of its own, then the live world
replaced), per-request limits (a call may only lower them, the operator's
requests may raise them), inspect without a kind, every value of a form, and
transactions dropped because their client left before they began."""
import socket
import time

import proto
from proto import Kernel, expect_error, expect_ok, wait_for

PAUSING = '(progn (world-put :p 1) (restart-case (car 5) (use-value (v) v)))'


def run(R):
    with Kernel('--fuel', '100000') as k:
        c = k.conn()
        sub = k.conn()
        expect_ok(sub.request({'op': 'subscribe'}))
        R.run('operator/apply-program', lambda: apply_program(k, c, sub))
        R.run('operator/apply-failures', lambda: apply_failures(k, c))
        R.run('operator/limits', lambda: limits(k, c))
        R.run('operator/rollback', lambda: rollback(k, c, sub))
        R.run('operator/inspect-without-kind', lambda: inspect(k, c))
        R.run('operator/values', lambda: values(k, c))
        R.run('operator/dropped-when-the-client-left', lambda: dropped(k, c, sub))


def apply_program(k, c, sub):
    rev = k.status()['revision']
    src = '(defmacro twice (x) `(* 2 ,x))\n(defun price (n) (twice n))\n(world-put :stock (price 2))\n(princ "ok")'
    r = expect_ok(c.request({'op': 'apply', 'source': src, 'summary': 'prices'}), outcome='accepted',
                  revision=rev + 1, output='ok')
    assert sorted((x['kind'], x['name']) for x in r['changes']) == [('data', ':STOCK'), ('function', 'PRICE'),
                                                                      ('macro', 'TWICE')], r
    assert all(x.get('added') for x in r['changes']), r
    h = c.request({'op': 'history', 'limit': 1})['revisions'][0]
    assert h['summary'] == 'prices' and h['kind'] == 'action', h
    started = sub.wait_event(lambda e: e['event'] == 'started' and e['command'] == 'apply', what='started apply')
    acc = sub.wait_event(lambda e: e['event'] == 'accepted' and e['attempt'] == started['attempt'], what='accepted')
    assert acc['revision'] == rev + 1 and acc['generation'] == r['generation'], (acc, r)
    assert k.value('(world-get :stock)') == '4'


def apply_failures(k, c):
    before = k.fingerprint()
    rev = k.status()['revision']
    r = expect_error(c.request({'op': 'apply', 'source': '(world-put :stock 0) (car 5)'}), 'error', 'TYPE-ERROR')
    assert r['revision'] == rev, r
    expect_error(c.request({'op': 'apply', 'source': '(world-put :stock 0) #.(car 5)'}), 'rejected-by-gate')
    expect_error(c.request({'op': 'apply', 'source': '(world-put :stock 0) (1 2'}), 'rejected-by-gate')
    expect_error(c.request({'op': 'apply', 'source': 1}, valid=False), 'invalid-request')
    expect_error(c.request({'op': 'apply', 'source': '1', 'summary': 2}, valid=False), 'invalid-request')
    assert k.fingerprint() == before


def limits(k, c):
    loop = '(dotimes (i 200000) i)'   # more than the kernel's 100000 steps
    expect_error(c.request({'op': 'call', 'source': loop}), 'limit', 'FUEL')
    r = expect_error(c.request({'op': 'call', 'source': '1', 'limits': {'fuel': 0}}), 'not-allowed',
                     'above the kernel')
    expect_error(c.request({'op': 'call', 'source': '1', 'limits': {'fuel': 200000}}), 'not-allowed')
    expect_error(c.request({'op': 'call', 'source': '(dotimes (i 5000) i)', 'limits': {'fuel': 1000}}), 'limit')
    expect_ok(c.request({'op': 'call', 'source': '(dotimes (i 500) i)', 'limits': {'fuel': 1000}}))
    expect_error(c.request({'op': 'preview', 'source': '1', 'limits': {'heap': 0}}), 'not-allowed')
    expect_error(c.request({'op': 'act', 'generation': k.gen(), 'limits': {'depth': 0},
                            'action': {'type': 'evaluate', 'source': '1'}}), 'not-allowed')
    expect_error(c.request({'op': 'call', 'source': '1', 'limits': {'stack': 1}}, valid=False), 'invalid-request')
    expect_error(c.request({'op': 'call', 'source': '1', 'limits': {'fuel': -1}}, valid=False), 'invalid-request')
    expect_error(c.request({'op': 'call', 'source': '1', 'limits': 5}, valid=False), 'invalid-request')
    # the operator may raise them for a request of theirs
    expect_ok(c.request({'op': 'apply', 'source': loop, 'limits': {'fuel': 0}}), changes=[])
    # ... but invariants always run under the kernel's limits, so an invariant
    # too slow for them is refused whatever the request's limits (it would trip
    # every later transaction)
    expect_error(c.request({'op': 'invariant-add', 'name': 'slow', 'source': '(progn %s t)' % loop,
                            'limits': {'fuel': 1000000}}), 'unsafe', 'SLOW .*fuel')


def rollback(k, c, sub):
    expect_ok(c.request({'op': 'call', 'source': '(world-put :r 1)'}))
    rev = k.status()['revision']
    expect_ok(c.request({'op': 'call', 'source': '(world-put :r 2)'}))
    g = k.gen()
    wpid = k.status()['worker_pid']
    r = expect_ok(c.request({'op': 'rollback', 'revision': rev}), outcome='accepted', revision=rev + 2, target=rev)
    assert r['changes'] == [{'kind': 'data', 'name': ':R', 'removed': False}], r
    assert r['generation'] > g, (g, r)
    acc = sub.wait_event(lambda e: e['event'] == 'accepted' and e.get('target') == rev, what='accepted rollback')
    assert acc['command'] == 'rollback' and acc['revision'] == rev + 2, acc
    assert k.value('(world-get :r)') == '1'      # the live world is revision rev's
    st = k.status()
    assert st['worker_pid'] != wpid and st['revision'] == rev + 2 and st['generation'] == r['generation'], st
    expect_error(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '1'}}), 'stale')
    # refused: out of range; unsafe against CURRENT's invariants
    expect_error(c.request({'op': 'rollback', 'revision': 0}, valid=False), 'invalid-request')
    expect_error(c.request({'op': 'rollback', 'revision': 10 ** 6}), 'not-found', 'CURRENT')
    expect_ok(c.request({'op': 'invariant-add', 'name': 'r-is-one', 'source': '(eql (world-get :r) 1)'}))
    before = k.fingerprint()
    r = expect_error(c.request({'op': 'rollback', 'revision': rev + 1}), 'unsafe', 'R-IS-ONE')
    assert r['revision'] == before['revision'], r
    assert k.fingerprint() == before
    expect_ok(c.request({'op': 'invariant-remove', 'name': 'r-is-one'}))


def inspect(k, c):
    e = expect_ok(c.request({'op': 'inspect', 'name': 'PRICE'}))['entry']
    assert e['kind'] == 'function' and 'TWICE' in e['text'].upper(), e
    e = expect_ok(c.request({'op': 'inspect', 'name': ':STOCK'}))['entry']
    assert e['kind'] == 'data', e
    expect_error(c.request({'op': 'inspect', 'name': 'NOTHING'}), 'not-found')
    expect_error(c.request({'op': 'inspect', 'kind': 'function', 'name': ':STOCK'}), 'not-found')


def values(k, c):
    r = expect_ok(c.request({'op': 'call', 'source': '(values 1 2 3)'}), value='1', values=['1', '2', '3'])
    r = expect_ok(c.request({'op': 'call', 'source': '(values)'}), value='NIL', values=[])
    r = expect_ok(c.request({'op': 'call', 'source': '(+ 1 2)'}), value='3')
    assert 'values' not in r, r
    r = expect_ok(c.request({'op': 'preview', 'source': '(floor 7 2)'}), value='3', values=['3', '1'])


def dropped(k, c, sub):
    """A call queued behind a pause (asking to wait) whose client then closes:
    when the pause ends it is not run, and the kernel says so."""
    r = expect_ok(c.request({'op': 'act', 'generation': k.gen(), 'action': {'type': 'evaluate', 'source': PAUSING}}),
                  status='paused')
    gone = k.conn()
    gone.send({'op': 'call', 'source': '(world-put :left 1)', 'wait': True})
    wait_for(lambda: k.status()['queue'] == 1, 10 * proto.SLOW, 'the call to be queued')
    gone.close()
    wait_for(lambda: k.status()['clients'] <= 3, 10 * proto.SLOW, 'the client to be gone')  # c, sub, status
    expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}), 'aborted')
    e = sub.wait_event(lambda e: e['event'] == 'dropped', what='dropped')
    assert e['command'] == 'call' and e['source'] == '(world-put :left 1)', e
    assert k.value('(world-get :left)') == 'NIL' and k.status()['queue'] == 0
    wait_for(lambda: 'dropped a call of a client that left' in k.log(), 5 * proto.SLOW, 'the log line')
