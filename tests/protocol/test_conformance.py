"""Conformance: every request's success and error replies, pauses and their
commands, event lines, shutdown and a worker death — each on its own kernel."""
import os
import signal
import subprocess
import socket
import time

import proto
from proto import Kernel, expect_error, expect_ok, wait_for


def run(R):
    with Kernel() as k:
        requests(R, k)
    with Kernel() as k:
        pauses_and_events(R, k)
    with Kernel() as k:
        goals_and_records(R, k)
    with Kernel() as k:
        frames(R, k)
    with Kernel('--fuel', '0') as k:
        interrupts(R, k)
    shutdown(R)
    worker_death(R)


# ---------------------------------------------------------------- interrupts

LOOP = '(loop for i from 0 do (world-put :i i))'


def interrupts(R, k):
    """interrupt: an act pauses with INTERACTIVE-INTERRUPT and CONTINUE, its
    client answered by the pause; the errors: nothing running, already
    paused, a wrong attempt or key, a call that cannot pause."""
    c, ctl = k.conn(), k.conn()
    st = {}

    def nothing_runs():
        expect_error(ctl.request({'op': 'interrupt'}), 'not-running')
    R.run('conformance/interrupt-not-running', nothing_runs)

    def act_pauses():
        g = k.gen()
        rid = c.send({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': LOOP}})
        wait_for(lambda: k.status()['state'] == 'running', 10 * proto.SLOW, 'the act runs')
        a = k.status()['current_attempt']
        expect_error(ctl.request({'op': 'interrupt', 'attempt': a + 1}), 'not-found')
        expect_error(ctl.request({'op': 'interrupt', 'key': 'not-its-key'}), 'not-found')
        expect_ok(ctl.request({'op': 'interrupt', 'attempt': a}), attempt=a)
        r = expect_ok(c.reply(rid), status='paused')
        p = r['pause']
        assert p['condition_type'] == 'INTERACTIVE-INTERRUPT' and p['report'] == 'Interactive interrupt.', p
        assert p['generation'] == g + 1 and p['level'] == 1, p
        assert p['restarts'][0] == {'id': 'p1-0', 'level': 1, 'name': 'CONTINUE',
                                    'report': 'Continue the interrupted computation.', 'lambda_list': '()'}, p
        st['gen'] = r['generation']
    R.run('conformance/interrupt-act-pauses', act_pauses)

    def paused_already():
        r = expect_error(ctl.request({'op': 'interrupt'}), 'paused')
        assert 'abort' in r['message'] or 'resume' in r['message'], r
        # a repair sees what the interrupted loop wrote (nothing yet, when it
        # was interrupted before its first step: a GC-stress build is slow)
        try:
            v = expect_ok(c.request({'op': 'act', 'generation': st['gen'],
                                     'action': {'type': 'evaluate', 'source': "(typep (world-get :i) '(or null integer))"}}),
                          status='paused')
            assert v['value'] == 'T', v
        finally:
            expect_error(c.request({'op': 'act', 'generation': st['gen'], 'action': {'type': 'abort'}}), 'aborted')
        assert k.call('(world-get :i)')['value'] == 'NIL'
    R.run('conformance/interrupt-paused-already', paused_already)

    def call_not_pausable():
        rid = c.send({'op': 'call', 'source': '(loop)'})
        wait_for(lambda: k.status()['state'] == 'running', 10 * proto.SLOW, 'the call runs')
        r = expect_error(ctl.request({'op': 'interrupt'}), 'not-pausable')
        assert 'jiti cancel' in r['message'], r
        expect_ok(ctl.request({'op': 'cancel'}))
        expect_error(c.reply(rid), 'cancelled')
    R.run('conformance/interrupt-call-not-pausable', call_not_pausable)


# ------------------------------------------------------------------ requests

def requests(R, k):
    c = k.conn()

    def hello():
        r = expect_ok(c.request({'op': 'hello'}), protocol=1, pid=k.proc.pid, store=k.store)
        assert r['kernel'], r
        expect_ok(c.request({'op': 'hello', 'id': 7}), id=7)
        expect_ok(c.request({'op': 'hello', 'id': 'seven', 'protocol': 1, 'client': 'protocol suite'}), id='seven')
        expect_error(c.request({'op': 'hello', 'protocol': 2}), 'unsupported-protocol')
    R.run('conformance/hello', hello)

    def status():
        r = expect_ok(c.request({'op': 'status'}), state='idle', revision=1, queue=0, current_attempt=0,
                      worker_restarts=0, stopping=False, pid=k.proc.pid, protocol=1)
        assert r['worker_pid'] > 0 and r['clients'] >= 1 and r['uptime'] >= 0, r
    R.run('conformance/status', status)

    def observe_empty():
        v = expect_ok(c.request({'op': 'observe'}))['view']
        assert v['status'] == 'idle' and v['revision'] == 1, v
        assert v['generation'] == k.gen(), v
        assert all(n == 0 for n in v['counts'].values()), v['counts']
        assert v['entries'] == [] and v['data'] == {'count': 0, 'rows': []} and v['invariants'] == [], v
        assert v['last_invariant_check']['ok'] is True and 'pause' not in v, v
    R.run('conformance/observe-empty', observe_empty)

    def call_accepted():
        g = k.gen()
        r = expect_ok(c.request({'op': 'call', 'source': '(world-put :a 1)'}), outcome='accepted', revision=2,
                      value='1', changes=[{'kind': 'data', 'name': ':A', 'removed': False, 'added': True}])
        assert r['generation'] > g and r['generation'] == k.gen(), (g, r)
        r = expect_ok(c.request({'op': 'call', 'source': '(+ 1 2)'}), outcome='accepted', revision=2, value='3',
                      changes=[])
        assert 'output' not in r, r
    R.run('conformance/call-accepted', call_accepted)

    def call_output():
        r = expect_ok(c.request({'op': 'call', 'source': '(progn (print 5) (princ "x") 7)'}), value='7',
                      output='\n5 x')
    R.run('conformance/call-output', call_output)

    def call_error():
        r = expect_error(c.request({'op': 'call', 'source': '(progn (world-put :a 99) (print 1) (car 5))'}),
                         'error', 'TYPE-ERROR')
        assert r['outcome'] == 'error' and r['output'] == '\n1 ' and r['generation'] == k.gen(), r
        assert k.value('(world-get :a)') == '1'
    R.run('conformance/call-error-restores', call_error)

    def call_generation():
        g = k.gen()
        expect_ok(c.request({'op': 'call', 'source': '(world-put :g 1)', 'generation': g}), outcome='accepted')
        r = expect_error(c.request({'op': 'call', 'source': '(world-put :g 2)', 'generation': g}), 'stale')
        assert r['generation'] == k.gen() and 'outcome' not in r, r
        assert k.value('(world-get :g)') == '1'
    R.run('conformance/call-generation-and-stale', call_generation)

    def key_conflict():
        # a key names one request: the same again is replayed, another refused
        first = expect_ok(c.request({'op': 'call', 'source': '(world-put :kc 1)', 'key': 'kc-1'}))
        expect_ok(c.request({'op': 'call', 'source': '(world-put :kc 1)', 'key': 'kc-1'}), replayed=True,
                  revision=first['revision'])
        r = expect_error(c.request({'op': 'call', 'source': '(world-put :kc 2)', 'key': 'kc-1'}), 'key-conflict',
                         'different request')
        assert 'outcome' not in r and 'generation' not in r, r
        g = k.gen()
        expect_ok(c.request({'op': 'act', 'generation': g, 'key': 'kc-2',
                             'action': {'type': 'evaluate', 'source': '(world-put :kc 3)'}}))
        expect_error(c.request({'op': 'act', 'generation': g, 'key': 'kc-2',
                                'action': {'type': 'evaluate', 'source': '(world-put :kc 4)'}}), 'key-conflict')
        assert k.value('(world-get :kc)') == '3'
    R.run('conformance/call-key-conflict', key_conflict)

    def definitions():
        for src, kind, name in [('(defun f (x) (* 2 x))', 'function', 'F'),
                                ('(defmacro twice (x) (list (quote *) 2 x))', 'macro', 'TWICE'),
                                ('(defvar *rate* 7)', 'variable', '*RATE*'),
                                ('(defstruct point x y)', 'structure', 'POINT')]:
            r = expect_ok(c.request({'op': 'call', 'source': src}), outcome='accepted')
            assert {'kind': kind, 'name': name, 'removed': False, 'added': True} in r['changes'], r
        assert k.value('(f 21)') == '42' and k.value('(twice 4)') == '8'
    R.run('conformance/call-definitions', definitions)

    def unchanged_variables():
        # a variable holding a structure is exported on every transaction (it might
        # have been mutated); identical to CURRENT's, it is not a change
        expect_ok(c.request({'op': 'call', 'source': '(defvar *table* (make-hash-table))'}),
                  changes=[{'kind': 'variable', 'name': '*TABLE*', 'removed': False, 'added': True}])
        rev = k.status()['revision']
        expect_ok(c.request({'op': 'call', 'source': '(+ 1 1)'}), changes=[], revision=rev)
        expect_ok(c.request({'op': 'preview', 'source': '(world-get :a)'}), changes=[])
        expect_ok(c.request({'op': 'call', 'source': '(setf (gethash :k *table*) 1)'}), revision=rev + 1,
                  changes=[{'kind': 'variable', 'name': '*TABLE*', 'removed': False}])
        expect_ok(c.request({'op': 'call', 'source': '(progn (world-put :tmp 1) (world-rem :tmp))'}), changes=[],
                  revision=rev + 1)
    R.run('conformance/unchanged-entries-not-reported', unchanged_variables)

    def history():
        st = k.status()
        r = expect_ok(c.request({'op': 'history'}), current=st['revision'])
        revs = r['revisions']
        assert len(revs) == min(20, st['revision']) and revs[0]['revision'] == st['revision'], revs
        for a, b in zip(revs, revs[1:]):
            assert a['parent'] == b['revision'] == a['revision'] - 1, (a, b)
        assert revs[0]['kind'] == 'application' and revs[0]['summary'].startswith('call: '), revs[0]
        assert revs[-1] == dict(revs[-1], revision=1, parent=0, kind='initial', entries=0), revs[-1]
        r = expect_ok(c.request({'op': 'history', 'limit': 2}))
        assert [x['revision'] for x in r['revisions']] == [st['revision'], st['revision'] - 1], r
        r = expect_ok(c.request({'op': 'history', 'limit': 1000}))
        assert len(r['revisions']) == st['revision'], r
        expect_error(c.request({'op': 'history', 'limit': 0}, valid=False), 'invalid-request')
    R.run('conformance/history', history)

    def inspect():
        v = c.request({'op': 'observe'})['view']
        hashes = {(e['kind'], e['name']): e['hash'] for e in v['entries']}
        hashes.update({('data', e['key']): e['hash'] for e in v['data']['rows']})
        for kind, name, text in [('function', 'F', 'DEFUN F'), ('macro', 'TWICE', 'DEFMACRO'),
                                 ('variable', '*RATE*', '7'), ('structure', 'POINT', 'DEFSTRUCT'),
                                 ('data', ':A', '1')]:
            e = expect_ok(c.request({'op': 'inspect', 'kind': kind, 'name': name}))['entry']
            assert e['kind'] == kind and e['name'] == name and text in e['text'].upper(), e
            assert e['hash'] == hashes[(kind, name)], (e, hashes)
        expect_error(c.request({'op': 'inspect', 'kind': 'function', 'name': 'NO-SUCH'}), 'not-found')
        expect_error(c.request({'op': 'inspect', 'kind': 'data', 'name': ':A-NOT'}), 'not-found')
        expect_error(c.request({'op': 'inspect', 'kind': 'invariant', 'name': 'NONE'}), 'not-found')
    R.run('conformance/inspect', inspect)

    def complete():
        r = expect_ok(c.request({'op': 'complete', 'text': 'twi'}))
        assert r['completions'] == ['twice'], r
        r = expect_ok(c.request({'op': 'complete', 'text': 'cl:ca'}))
        assert 'cl:car' in r['completions'] and 'cl:call-next-method' in r['completions'], r
        assert expect_ok(c.request({'op': 'complete', 'text': ':test-n'}))['completions'] == [':test-not']
        assert 'common-lisp-user:' in expect_ok(c.request({'op': 'complete', 'text': 'common-lisp-u'}))['completions']
        assert expect_ok(c.request({'op': 'complete', 'text': 'no-such-pkg:x'}))['completions'] == []
        expect_error(c.request({'op': 'complete'}, valid=False), 'invalid-request')
        expect_error(c.request({'op': 'complete', 'text': 'x' * 300}, valid=False), 'invalid-request')
    R.run('conformance/complete', complete)

    def observe_budget():
        full = c.request({'op': 'observe'})['view']
        assert all('text' in e for e in full['entries']), full
        small = c.request({'op': 'observe', 'budget': 400})['view']
        assert small['truncated']['summarized'] > 0, small['truncated']
        assert any('text' not in e for e in small['entries'] + small['data']['rows']), small
        assert small['counts'] == full['counts'], small
        tiny = c.request({'op': 'observe', 'budget': 1})['view']
        listed = len(tiny['entries']) + len(tiny['data']['rows']) + tiny['truncated']['omitted']
        assert listed == sum(n for kind, n in tiny['counts'].items() if kind != 'invariant'), tiny
    R.run('conformance/observe-budget', observe_budget)

    def preview():
        before = k.fingerprint()
        g = k.gen()
        r = expect_ok(c.request({'op': 'preview', 'source': '(progn (print :p) (world-put :a 2))'}), outcome='accepted',
                      restored=True, value='2', output='\n:P ',
                      changes=[{'kind': 'data', 'name': ':A', 'removed': False}])
        assert r['generation'] == g, r   # nothing a view showed changed
        assert k.fingerprint() == before and k.value('(world-get :a)') == '1'
        expect_error(c.request({'op': 'preview', 'source': '(car 5)'}), 'aborted', 'TYPE-ERROR')
        expect_error(c.request({'op': 'preview', 'source': '#.(x)'}), 'rejected-by-gate')
        assert k.gen() == g
        expect_ok(c.request({'op': 'preview', 'source': '1', 'generation': g}), value='1')
        expect_error(c.request({'op': 'preview', 'source': '1', 'generation': g - 1}), 'stale')
        assert k.fingerprint() == before
    R.run('conformance/preview', preview)

    def act():
        g = k.gen()
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '(world-put :b 2)'}}),
                      outcome='accepted', value='2', changes=[{'kind': 'data', 'name': ':B', 'removed': False, 'added': True}])
        h = c.request({'op': 'history', 'limit': 1})['revisions'][0]
        assert h['kind'] == 'action' and h['summary'] == 'act: (world-put :b 2)' and h['revision'] == r['revision'], h
        r = expect_error(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '(world-put :b 3)'}}),
                         'stale')
        assert r['generation'] == k.gen()
        expect_error(c.request({'op': 'act', 'generation': k.gen(), 'action': {'type': 'abort'}}), 'not-paused')
        expect_error(c.request({'op': 'act', 'generation': k.gen(),
                                'action': {'type': 'resume', 'restart_id': 'p1-0'}}), 'not-paused')
        assert k.value('(world-get :b)') == '2'
    R.run('conformance/act', act)

    def invariants():
        expect_ok(c.request({'op': 'invariant-list'}), invariants=[])
        r = expect_ok(c.request({'op': 'invariant-add', 'name': 'a-positive', 'source': '(> (world-get :a 0) 0)'}),
                      outcome='accepted', changes=[{'kind': 'invariant', 'name': 'A-POSITIVE', 'removed': False, 'added': True}])
        rev = r['revision']
        h = c.request({'op': 'history', 'limit': 1})['revisions'][0]
        assert h['kind'] == 'action' and h['summary'].startswith('invariant-add a-positive'), h
        lst = expect_ok(c.request({'op': 'invariant-list'}))['invariants']
        assert [i['name'] for i in lst] == ['A-POSITIVE'] and '(WORLD-GET :A 0)' in lst[0]['source'], lst
        v = c.request({'op': 'observe'})['view']
        assert v['invariants'][0]['hash'] == lst[0]['hash'] and v['counts']['invariant'] == 1, v['invariants']
        e = expect_ok(c.request({'op': 'inspect', 'kind': 'invariant', 'name': 'A-POSITIVE'}))['entry']
        assert e['hash'] == lst[0]['hash'], e
        expect_error(c.request({'op': 'call', 'source': '(world-put :a -1)'}), 'unsafe', 'A-POSITIVE')
        expect_error(c.request({'op': 'invariant-add', 'name': 'never', 'source': '(< (world-get :a 0) 0)'}),
                     'unsafe', 'NEVER')
        expect_error(c.request({'op': 'invariant-add', 'name': 'broken', 'source': '(< 1'}), 'invalid-arguments')
        expect_error(c.request({'op': 'invariant-add', 'name': 'two', 'source': 't t'}), 'invalid-arguments')
        expect_error(c.request({'op': 'invariant-add', 'name': 'x', 'source': 't', 'generation': 0}), 'stale')
        assert len(c.request({'op': 'invariant-list'})['invariants']) == 1
        expect_ok(c.request({'op': 'invariant-add', 'name': 'a-positive', 'source': '(>= (world-get :a 0) 1)'}),
                  revision=rev + 1, changes=[{'kind': 'invariant', 'name': 'A-POSITIVE', 'removed': False}])
        lst = c.request({'op': 'invariant-list'})['invariants']
        assert len(lst) == 1 and '>=' in lst[0]['source'], lst
        expect_error(c.request({'op': 'invariant-remove', 'name': 'nope'}), 'invalid-arguments')
        expect_error(c.request({'op': 'invariant-remove', 'name': 'a-positive', 'generation': 0}), 'stale')
        expect_ok(c.request({'op': 'invariant-remove', 'name': 'a-positive'}), revision=rev + 2,
                  changes=[{'kind': 'invariant', 'name': 'A-POSITIVE', 'removed': True}])
        expect_ok(c.request({'op': 'invariant-list'}), invariants=[])
        expect_ok(c.request({'op': 'call', 'source': '(world-put :a -1)'}))
        expect_ok(c.request({'op': 'call', 'source': '(world-put :a 1)'}))
    R.run('conformance/invariants', invariants)

    def packages():
        r = expect_ok(c.request({'op': 'call', 'source': '(defpackage :shop (:use :cl :jiti) (:export #:price))'}),
                      outcome='accepted', changes=[{'kind': 'package', 'name': '"SHOP"', 'removed': False, 'added': True}])
        v = c.request({'op': 'observe'})['view']
        assert v['package'] == 'COMMON-LISP-USER' and v['counts']['package'] == 1, v
        # read and evaluated in SHOP, for this call only
        expect_ok(c.request({'op': 'call', 'source': '(defun price (x) (* 2 x))', 'package': 'SHOP'}),
                  changes=[{'kind': 'function', 'name': 'SHOP::PRICE', 'removed': False, 'added': True}])
        assert c.request({'op': 'observe'})['view']['package'] == 'COMMON-LISP-USER'
        assert k.value('(shop:price 4)') == '8'
        r = expect_ok(c.request({'op': 'preview', 'source': '(list (price 1) (package-name *package*))',
                                 'package': 'SHOP'}), value='(2 "SHOP")')
        expect_error(c.request({'op': 'call', 'source': '(+ 1 1)', 'package': 'NO-SUCH-PACKAGE'}),
                     'invalid-arguments', 'NO-SUCH-PACKAGE')
        expect_error(c.request({'op': 'call', 'source': '(+ 1 1)', 'package': 7}, valid=False), 'invalid-request')
        expect_error(c.request({'op': 'call', 'source': '(no-such-package:x)'}), 'rejected-by-gate', 'NO-SUCH-PACKAGE')
        # in-package as an action changes the world's current package, durably
        expect_ok(c.request({'op': 'act', 'generation': k.gen(),
                             'action': {'type': 'evaluate', 'source': '(in-package :shop)'}}), outcome='accepted')
        assert c.request({'op': 'observe'})['view']['package'] == 'SHOP'
        assert k.value('(price 5)') == '10'
        expect_ok(c.request({'op': 'act', 'generation': k.gen(),
                             'action': {'type': 'evaluate', 'source': '(+ 1 1)', 'package': 'COMMON-LISP-USER'}}),
                  outcome='accepted', value='2')
        assert c.request({'op': 'observe'})['view']['package'] == 'SHOP'
        expect_ok(c.request({'op': 'call', 'source': '(in-package :cl-user)'}))
        assert c.request({'op': 'observe'})['view']['package'] == 'COMMON-LISP-USER'
    R.run('conformance/packages', packages)

    def pipelined_ids():
        ids = [c.send({'op': op}) for op in ('hello', 'status', 'history', 'invariant-list', 'observe')]
        ids.append(c.send({'op': 'call', 'source': '(+ 2 2)'}))
        got = [c.reply(i)['id'] for i in ids]
        assert got == ids, (got, ids)
    R.run('conformance/pipelined-ids', pipelined_ids)
    c.close()


# ---------------------------------------------------------- pauses and events

DIVIDE = '(restart-case (progn (world-put :p 1) (/ 1 (world-get :zero 0))) (use-value (v) (world-put :p v) v))'


def pauses_and_events(R, k):
    sub = k.conn()
    expect_ok(sub.request({'op': 'subscribe'}), subscribed=True)
    c = k.conn()
    st = {}

    def events_of(attempt, kind=None):
        return [e for e in sub.events if e.get('attempt') == attempt and (kind is None or e['event'] == kind)]

    def pause():
        g = k.gen()
        rev = k.status()['revision']
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': DIVIDE}}),
                      status='paused')
        p = r['pause']
        assert r['generation'] == p['generation'] == g + 1, r
        assert p['pause'] == 1 and p['condition_type'] == 'DIVISION-BY-ZERO' and p['steps_used'] == 0, p
        assert {'id': 'p1-0', 'level': 1, 'name': 'USE-VALUE', 'report': 'USE-VALUE', 'lambda_list': '(V)'} in p['restarts'], p
        started = sub.wait_event(lambda e: e['event'] == 'started' and e['source'] == DIVIDE, what='started')
        assert started == dict(started, command='act', parent=rev, generation=g), started
        st['attempt'] = started['attempt']
        paused = sub.wait_event(lambda e: e['event'] == 'paused' and e['attempt'] == st['attempt'], what='paused')
        assert paused['condition'] == 'DIVISION-BY-ZERO' and paused['generation'] == g + 1 and paused['level'] == 1, paused
        st['gen'] = r['generation']
    R.run('conformance/act-pauses', pause)

    def while_paused():
        s = expect_ok(c.request({'op': 'status'}), state='paused', current_attempt=st['attempt'])
        v = expect_ok(c.request({'op': 'observe'}))['view']
        assert v['status'] == 'paused' and v['generation'] == st['gen'], v
        assert v['pause']['condition_type'] == 'DIVISION-BY-ZERO' and 'generation' not in v['pause'], v['pause']
        expect_ok(c.request({'op': 'inspect', 'kind': 'data', 'name': ':P'}))  # the paused attempt's write
        expect_ok(c.request({'op': 'invariant-list'}))
        expect_ok(c.request({'op': 'history', 'limit': 1}))
        # a call is refused at once while the act is paused: it would wait for the answer
        r = expect_error(c.request({'op': 'call', 'source': '(world-get :p)'}), 'paused')
        assert r['status'] == 'paused' and r['generation'] == st['gen'] and r['pause']['pause'] == 1, r
        expect_error(c.request({'op': 'preview', 'source': '1'}), 'paused')
        # unless it asks to wait: then it waits in the queue
        st['queued'] = k2 = k.conn()
        st['queued_id'] = k2.send({'op': 'call', 'source': '(world-get :p)', 'wait': True})
        try:
            k2.reply(st['queued_id'], timeout=0.5)
            raise AssertionError('a call was answered while an act was paused')
        except socket.timeout:
            pass
        assert c.request({'op': 'status'})['queue'] == 1
    R.run('conformance/while-paused', while_paused)

    def repair():
        r = expect_ok(c.request({'op': 'act', 'generation': st['gen'], 'action': {'type': 'evaluate', 'source': '(+ 40 2)'}}),
                      status='paused', value='42', generation=st['gen'])
        assert r['pause']['last_value'] == '42' and r['pause']['steps_used'] == 1, r
        # a repair read in another package
        expect_ok(c.request({'op': 'act', 'generation': st['gen'],
                             'action': {'type': 'evaluate', 'source': '(package-name *package*)',
                                        'package': 'COMMON-LISP'}}),
                  status='paused', value='"COMMON-LISP"')
    R.run('conformance/pause-repair', repair)

    def refused_commands():
        r = expect_error(c.request({'op': 'act', 'generation': st['gen'],
                                    'action': {'type': 'resume', 'restart_id': 'p9-9'}}), 'invalid-arguments')
        assert r['status'] == 'paused' and r['pause']['refusal'] == 'invalid-arguments' and r['generation'] == st['gen'], r
        r = expect_error(c.request({'op': 'act', 'generation': st['gen'],
                                    'action': {'type': 'evaluate', 'source': "(throw 'x 1)"}}), 'rejected-by-gate', 'THROW')
        assert r['pause']['refusal'] == 'rejected-by-gate', r
        expect_error(c.request({'op': 'act', 'generation': st['gen'],
                                'action': {'type': 'evaluate', 'source': '1', 'package': 'NO-SUCH-PACKAGE'}}),
                     'rejected-by-gate', 'no package is named NO-SUCH-PACKAGE')
        r = expect_error(c.request({'op': 'act', 'generation': st['gen'] - 1, 'action': {'type': 'abort'}}), 'stale')
        assert r['generation'] == st['gen'], r
        sub.drain()
        assert len(events_of(st['attempt'], 'paused')) == 1, events_of(st['attempt'])
    R.run('conformance/pause-refused-commands', refused_commands)

    def resume():
        rev = k.status()['revision']
        r = expect_ok(c.request({'op': 'act', 'generation': st['gen'],
                                 'action': {'type': 'resume', 'restart_id': 'p1-0', 'arguments': '(list 7)'}}),
                      outcome='accepted', value='7', revision=rev + 1,
                      changes=[{'kind': 'data', 'name': ':P', 'removed': False, 'added': True}])
        acc = sub.wait_event(lambda e: e['event'] == 'accepted' and e['attempt'] == st['attempt'], what='accepted')
        assert acc['revision'] == rev + 1 and acc['generation'] == r['generation'], (acc, r)
        q = st['queued'].reply(st['queued_id'])
        expect_ok(q, value='7')
        st['queued'].close()
        assert k.value('(world-get :p)') == '7'
    R.run('conformance/pause-resume-outcome', resume)

    def second_pause_abort():
        g = k.gen()
        src = '(progn (world-put :q 1) (restart-case (error "first") (continue () (error "second"))))'
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': src}}),
                      status='paused')
        rid = [x['id'] for x in r['pause']['restarts'] if x['name'] == 'CONTINUE']
        assert rid, r
        r = expect_ok(c.request({'op': 'act', 'generation': r['generation'],
                                 'action': {'type': 'resume', 'restart_id': rid[0]}}), status='paused')
        assert r['pause']['pause'] == 2 and 'second' in r['pause']['report'], r
        att = sub.wait_event(lambda e: e['event'] == 'started' and e['source'] == src, what='started')['attempt']
        sub.wait_event(lambda e: e['event'] == 'paused' and e['attempt'] == att and e['generation'] == r['generation'],
                       what='second paused')
        r = expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}), 'aborted')
        assert r['outcome'] == 'aborted', r
        ab = sub.wait_event(lambda e: e['event'] == 'aborted' and e['attempt'] == att, what='aborted')
        assert ab['outcome'] == 'aborted', ab
        assert len(events_of(att, 'paused')) == 2, events_of(att)
        assert k.value('(world-get :q)') == 'NIL'
    R.run('conformance/pause-resume-pause-abort', second_pause_abort)

    def budget():
        g = k.gen()
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '(car 5)'}}),
                      status='paused')
        budget = r['pause']['step_budget']
        for i in range(budget):
            r = c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'evaluate', 'source': str(i)}})
            expect_ok(r, status='paused', value=str(i))
        r = expect_error(c.request({'op': 'act', 'generation': r['generation'],
                                    'action': {'type': 'evaluate', 'source': '1'}}), 'budget-exhausted')
        sub.wait_event(lambda e: e['event'] == 'aborted' and e['outcome'] == 'budget-exhausted', what='aborted event')
    R.run('conformance/pause-budget-exhausted', budget)

    def repair_failed():
        g = k.gen()
        r = expect_ok(c.request({'op': 'act', 'generation': g,
                                 'action': {'type': 'evaluate', 'source': '(progn (world-put :rf 1) (car 5))'}}),
                      status='paused')
        # a repair that signals pauses a level up; aborting it returns to level 1
        r = expect_ok(c.request({'op': 'act', 'generation': r['generation'],
                                 'action': {'type': 'evaluate', 'source': '(car 6)'}}), status='paused')
        assert r['pause']['level'] == 2 and r['pause']['pause'] == 2, r
        r = expect_ok(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}),
                      status='paused')
        assert r['pause']['level'] == 1 and r['pause']['pause'] == 1, r
        expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}), 'aborted')
        assert k.value('(world-get :rf)') == 'NIL'
    R.run('conformance/pause-repair-level', repair_failed)

    def call_diagnosis():
        # a call that fails says why as a pause would have: the condition, the
        # restarts it had established (not the kernel's own) and the backtrace
        expect_ok(c.request({'op': 'call', 'source': '(defun diag-f (n) (restart-case (car n) '
                                                     '(use-zero () :report "Use zero." 0)))'}))
        before = k.fingerprint()
        r = expect_error(c.request({'op': 'call', 'source': '(progn (world-put :dg 1) (diag-f 5))'}), 'error')
        d = r['diagnosis']
        assert d['condition_type'] == 'TYPE-ERROR' and 'not of type LIST' in d['report'], d
        assert d['restarts'] == [{'name': 'USE-ZERO', 'report': 'Use zero.', 'lambda_list': '()'}], d
        assert '(DIAG-F 5)' in d['backtrace'], d
        # its frames as data: the function's arguments and locals when it failed
        assert any(f['function'] == 'DIAG-F' and f['args'] == ['5'] and {'name': 'N', 'value': '5'} in f['locals']
                   for f in d['frames']), d
        assert k.fingerprint() == before
        # a failure that is no unhandled error has none
        r = expect_error(c.request({'op': 'call', 'source': '(loop)', 'limits': {'fuel': 20000}}), 'limit')
        assert 'diagnosis' not in r, r
        expect_ok(c.request({'op': 'call', 'source': '(fmakunbound (quote diag-f))'}))
    R.run('conformance/call-diagnosis', call_diagnosis)

    def call_pauses():
        # a call that asks to pause does, as an act: repaired, resumed, it publishes
        # with its repair; the reply to the resume is the call's
        r = expect_ok(c.request({'op': 'call', 'source': '(world-put :cp (cp-missing 4))', 'on_error': 'pause'}),
                      status='paused')
        p = r['pause']
        assert p['condition_type'] == 'UNDEFINED-FUNCTION' and p['level'] == 1, p
        assert [x['name'] for x in p['restarts']][:2] == ['CONTINUE', 'USE-VALUE'], p
        expect_error(c.request({'op': 'call', 'source': '(+ 1 2)'}), 'paused')
        r = expect_ok(c.request({'op': 'act', 'generation': r['generation'],
                                 'action': {'type': 'evaluate', 'source': '(defun cp-missing (x) (* x 10))'}}),
                      status='paused')
        # (a restart may be named instead of its id)
        r = expect_ok(c.request({'op': 'act', 'generation': r['generation'],
                                 'action': {'type': 'resume', 'restart_id': 'continue'}}), value='40')
        assert k.value('(list (world-get :cp) (cp-missing 1))') == '(40 10)'
        # aborted, it restores everything
        before = k.fingerprint()
        r = expect_ok(c.request({'op': 'call', 'source': '(progn (world-put :cp 0) (car 5))', 'on_error': 'pause'}),
                      status='paused')
        expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}), 'aborted')
        assert k.fingerprint() == before
        # one that does not fail is an ordinary call
        expect_ok(c.request({'op': 'call', 'source': '(+ 1 2)', 'on_error': 'pause'}), value='3')
        expect_ok(c.request({'op': 'call', 'source': '(fmakunbound (quote cp-missing))'}))
    R.run('conformance/call-on-error-pause', call_pauses)

    def listening():
        # a listener's forms keep the history variables (CLHS 25.1.1); other
        # calls, and a listener's form that fails, leave them as they were
        def listen(src, **kw):
            return c.request(dict({'op': 'call', 'source': src, 'listening': True}, **kw))
        expect_ok(listen('(+ 1 2)'), value='3')
        expect_ok(c.request({'op': 'call', 'source': '(+ 5 5)'}), value='10')
        expect_ok(listen('(list * + -)'), value='(3 (+ 1 2) (LIST * + -))')
        expect_error(listen('(car 5)'), 'error')
        expect_ok(listen('(floor 7 2)'), values=['3', '1'])
        expect_ok(listen('(list / (length **) +++)'), value='((3 1) 3 (+ 1 2))')
    R.run('conformance/call-listening', listening)

    def repair_policy():
        # the rules of automatic repair: put, replaced, listed by selector, removed;
        # selectors folded as the reader folds names (tests/repair.sh: kept across
        # a restart, and changed on a store no kernel serves)
        r = expect_ok(c.request({'op': 'repair-policy', 'action': 'list'}))
        assert r['rules'] == [], r
        r = expect_ok(c.request({'op': 'repair-policy', 'action': 'enable', 'selector': 'dispense',
                                 'expected': [{'kind': 'condition', 'text': 'INSUFFICIENT-CREDIT'}]}))
        assert r['rules'] == [{'selector': 'DISPENSE', 'mode': 'fail',
                               'expected': [{'kind': 'condition', 'text': 'INSUFFICIENT-CREDIT'}]}], r
        r = expect_ok(c.request({'op': 'repair-policy', 'action': 'enable', 'selector': 'app:', 'mode': 'pause'}))
        r = expect_ok(c.request({'op': 'repair-policy', 'action': 'enable', 'selector': 'DISPENSE', 'mode': 'pause'}))
        assert r['rules'] == [{'selector': 'APP:', 'mode': 'pause', 'expected': []},
                              {'selector': 'DISPENSE', 'mode': 'pause', 'expected': []}], r
        expect_error(c.request({'op': 'repair-policy', 'action': 'disable', 'selector': 'nope'}), 'not-found',
                     'no rule has the selector NOPE')
        r = expect_ok(c.request({'op': 'repair-policy', 'action': 'disable', 'selector': 'App:'}))
        assert [x['selector'] for x in r['rules']] == ['DISPENSE'], r
        # mode pause: the failing call waits for its repair, other calls are served meanwhile;
        # disabling repair cancels the incident, and the waiting call gets its failure
        expect_ok(c.request({'op': 'call', 'source': '(defun dispense (n) (/ 10 n))'}))
        waiting = c.send({'op': 'call', 'source': '(dispense 0)'})
        ev = sub.wait_event(lambda e: e['event'] == 'incident' and e['status'] == 'captured', what='the incident')
        with k.conn() as other:
            expect_ok(other.request({'op': 'call', 'source': '(dispense 5)'}), value='2')
            r = expect_ok(other.request({'op': 'incident', 'incident': ev['incident']}))
            assert r['incident']['status'] == 'captured', r
            r = expect_ok(other.request({'op': 'incidents', 'status': ['captured', 'awaiting-model']}))
            assert [(x['id'], x['function'], x['count']) for x in r['incidents']] == \
                [(ev['incident'], 'DISPENSE', 1)], r
            r = expect_ok(other.request({'op': 'incidents', 'status': ['repaired']}))
            assert r['incidents'] == [], r
            expect_ok(other.request({'op': 'repair-policy', 'action': 'disable', 'selector': 'dispense'}))
        r = expect_error(c.reply(waiting), 'error', 'it waited for a repair: incident %d is cancelled' % ev['incident'])
        assert r['incident']['function'] == 'DISPENSE', r
        expect_ok(c.request({'op': 'repair-policy', 'action': 'enable', 'selector': 'dispense'}))
        # a failing call of a selected function: an incident, named in the reply
        r = expect_error(c.request({'op': 'call', 'source': '(dispense 0)'}), 'error')
        assert r['incident'] == {'id': r['incident']['id'], 'joined': False, 'function': 'DISPENSE'}, r
        ev = sub.wait_event(lambda e: e['event'] == 'incident' and e['incident'] == r['incident']['id'],
                            what='the incident event')
        assert ev['status'] == 'captured' and ev['function'] == 'DISPENSE', ev
        r2 = expect_error(c.request({'op': 'call', 'source': '(dispense 0)'}), 'error')
        assert r2['incident'] == dict(r['incident'], joined=True), r2
        r = expect_ok(c.request({'op': 'repair-policy', 'action': 'disable', 'selector': 'dispense'}))
        assert r['rules'] == [], r
        r = expect_error(c.request({'op': 'call', 'source': '(dispense 0)'}), 'error')
        assert 'incident' not in r, r
        expect_ok(c.request({'op': 'call', 'source': '(fmakunbound (quote dispense))'}))
    R.run('conformance/repair-policy', repair_policy)

    def repair_requests():
        # a supervisor's requests: take an incident, a candidate rejected (the
        # reply says why, with the shadow's report), then one applied as a
        # revision of kind repair that moves the incident to repaired
        expect_ok(c.request({'op': 'call', 'source': '(defun halve (n) (/ 10 n))'}))
        expect_ok(c.request({'op': 'repair-policy', 'action': 'enable', 'selector': 'halve'}))
        n = expect_error(c.request({'op': 'call', 'source': '(halve 0)'}), 'error')['incident']['id']
        expect_error(c.request({'op': 'repair', 'incident': n, 'source': '(defun halve (n) 0)'}), 'conflict',
                     'awaiting the model')
        r = expect_ok(c.request({'op': 'incident', 'incident': n, 'from': 'captured', 'to': 'awaiting-model',
                                 'note': {'kind': 'exchange', 'entry': {'attempt': 1}}}))
        assert r['incident']['status'] == 'awaiting-model' and r['incident']['log'][0]['kind'] == 'exchange', r
        expect_error(c.request({'op': 'incident', 'incident': n, 'from': 'captured', 'to': 'cancelled'}), 'conflict',
                     'is awaiting-model, not captured')
        r = expect_error(c.request({'op': 'repair', 'incident': n, 'source': '(defun halve (n) (car n))'}),
                         'rejected', 'the failed call still fails with the candidate')
        assert r['repair']['status'] == 'awaiting-model' and 'verification' in r['repair'], r
        r = expect_ok(c.request({'op': 'repair', 'incident': n, 'source': '(defun halve (n) (if (zerop n) 0 (/ 10 n)))',
                                 'reason': 'no half of zero', 'response_id': 'resp_conformance'}))
        assert r['repair']['status'] == 'repaired' and r['repair']['function'] == 'HALVE', r
        h = expect_ok(c.request({'op': 'history', 'limit': 1}))['revisions'][0]
        assert h['kind'] == 'repair' and h['revision'] == r['revision'], h
        r = expect_ok(c.request({'op': 'incident', 'incident': n}))
        assert r['incident']['status'] == 'repaired' and r['incident']['revision'] == h['revision'], r
        expect_ok(c.request({'op': 'call', 'source': '(halve 0)'}), value='0')
        expect_ok(c.request({'op': 'repair-policy', 'action': 'disable', 'selector': 'halve'}))
    R.run('conformance/repair-requests', repair_requests)

    def heal_and_tentative():
        # an operator's heal: an incident of kind explicit; its repro with the
        # expected value judges a candidate; a repair applied with promote
        # manual is tentative, listed, then promoted; another rejected (a
        # revision of kind repair puts the definition back)
        expect_ok(c.request({'op': 'call', 'source': '(defun fee (n) (* n 2))'}))
        r = expect_ok(c.request({'op': 'heal', 'function': 'fee', 'problem': 'the fee is triple',
                                 'repro': '(fee 2)', 'expect': '6'}))
        n = r['incident']['id']
        assert r['incident'] == {'id': n, 'kind': 'explicit', 'status': 'captured', 'function': 'FEE'}, r
        r = expect_ok(c.request({'op': 'incidents', 'status': ['captured']}))
        assert [(x['id'], x['kind']) for x in r['incidents']] == [(n, 'explicit')], r
        expect_ok(c.request({'op': 'incident', 'incident': n, 'from': 'captured', 'to': 'awaiting-model'}))
        expect_error(c.request({'op': 'repair', 'incident': n, 'source': '(defun fee (n) (* n 4))'}), 'rejected',
                     "the operator's repro still fails with the candidate")
        r = expect_ok(c.request({'op': 'repair', 'incident': n, 'source': '(defun fee (n) (* n 3))',
                                 'promote': 'manual'}))
        assert r['repair']['status'] == 'tentative', r
        rev = r['revision']
        expect_ok(c.request({'op': 'call', 'source': '(fee 2)'}), value='6')
        r = expect_ok(c.request({'op': 'repairs'}))
        assert [(x['incident'], x['function'], x['revision']) for x in r['repairs']] == [(n, 'FEE', rev)], r
        r = expect_ok(c.request({'op': 'repairs', 'action': 'promote', 'incident': n}))
        assert r['repair'] == {'incident': n, 'status': 'repaired', 'function': 'FEE', 'revision': rev}, r
        expect_error(c.request({'op': 'repairs', 'action': 'reject', 'incident': n}), 'conflict', 'is repaired')
        m = expect_ok(c.request({'op': 'heal', 'function': 'fee', 'problem': 'the fee is 4 times'}))['incident']['id']
        expect_ok(c.request({'op': 'incident', 'incident': m, 'from': 'captured', 'to': 'awaiting-model'}))
        expect_ok(c.request({'op': 'repair', 'incident': m, 'source': '(defun fee (n) (* n 4))', 'promote': 'manual'}))
        r = expect_ok(c.request({'op': 'repairs', 'action': 'reject', 'incident': m}))
        assert r['repair']['status'] == 'captured' and r['repair']['revision'] > rev, r
        h = expect_ok(c.request({'op': 'history', 'limit': 1}))['revisions'][0]
        assert h['kind'] == 'repair' and h['revision'] == r['repair']['revision'], h
        expect_ok(c.request({'op': 'call', 'source': '(fee 2)'}), value='6')
        expect_ok(c.request({'op': 'incident', 'incident': m, 'from': 'captured', 'to': 'cancelled'}))
        assert expect_ok(c.request({'op': 'repairs'}))['repairs'] == []
    R.run('conformance/heal-and-tentative', heal_and_tentative)

    def verify():
        # a candidate verified on a shadow of the live worker: its report;
        # nothing of it in the world, the generation unchanged (tests/shadow.py
        # has the rest: timeouts, hostile candidates, the live heap)
        expect_ok(c.request({'op': 'call', 'source': '(defun halve (n) (/ n 2))'}))
        g = k.gen()
        r = expect_ok(c.request({'op': 'verify', 'definitions': '(defun halve (n) (values (floor n 2)))',
                                 'repro': '(halve 3)', 'replay': ['(halve 4)', '(halve 5)', '(car 1)'],
                                 'timeout_ms': int(30000 * proto.SLOW)}), generation=g)
        rep = r['report']
        assert rep['definitions'] == {'ok': True} and rep['identical'] is False, rep
        assert rep['changed'] == [{'kind': 'function', 'name': 'HALVE', 'removed': False}], rep
        assert rep['repro'] == {'ok': True, 'value': '1'}, rep
        assert [(x['stable'], x['differs']) for x in rep['replay']] == [(True, False), (True, True), (True, False)], rep
        assert rep['replay'][2]['candidate']['condition'] == 'TYPE-ERROR', rep
        expect_ok(c.request({'op': 'call', 'source': '(halve 5)'}), value='5/2')
        assert k.gen() == g
        r = expect_ok(c.request({'op': 'verify', 'definitions': '(defun halve (n) (/ n 2))'}))
        assert r['report']['identical'] is True and r['report']['repro'] is None, r
    R.run('conformance/verify', verify)

    def outcome_events():
        # calls and previews that publish nothing leave no events: they are counted
        # (one that runs past a second is recorded, so the endless loop gets a
        # small fuel limit of its own: it ends well inside that, sanitizers or not)
        quiet = [('call', '(loop)', 'limit'), ('call', '#.(x)', 'rejected-by-gate'),
                 ('preview', '(world-put :pv 1)', None), ('call', '(+ 1 2)', None)]
        counts = {(x['kind'], x['outcome']): x['count'] for x in k.status()['counters']}
        for op, src, code in quiet:
            req = {'op': op, 'source': src}
            if code == 'limit':
                req['limits'] = {'fuel': 20000}
            r = c.request(req)
            if code:
                expect_error(r, code)
            else:
                expect_ok(r)
        # a write, a call that failed on an unhandled error (its diagnosis is
        # evidence) and an operator's refusal are recorded: started, then the outcome
        for op, src, code, event in [('call', '(world-put :ev 1)', None, 'accepted'),
                                     ('call', '(car 1)', 'error', 'aborted'),
                                     ('invariant-add', 'nil', 'unsafe', 'rejected')]:
            req = {'op': op, 'source': src}
            if op == 'invariant-add':
                req['name'] = 'no'
            r = c.request(req)
            if code:
                expect_error(r, code)
            else:
                expect_ok(r)
            started = sub.wait_event(lambda e: e['event'] == 'started' and e['source'] == src, what='started ' + src)
            assert started['command'] == op, started
            out = sub.wait_event(lambda e: e.get('attempt') == started['attempt'] and e['event'] != 'started',
                                 what='outcome of ' + src)
            assert out['event'] == event and out.get('outcome', 'accepted') == (code or 'accepted'), out
            if code == 'error':
                assert out['diagnosis'] == r['diagnosis'] and out['diagnosis']['condition_type'] == 'TYPE-ERROR', (out, r)
            if code is None:
                assert out['command'] == op and out['revision'] == r['revision'], (out, r)
                assert out['generation'] == r['generation'], (out, r)
        assert not [e for e in sub.events if e.get('source') in [q[1] for q in quiet]], sub.events
        after = {(x['kind'], x['outcome']): x['count'] for x in k.status()['counters']}
        for op, src, code in quiet:
            key = (op, code or 'accepted')
            assert after.get(key, 0) > counts.get(key, 0), (key, counts, after)
    R.run('conformance/outcome-events', outcome_events)

    def truncated_event():
        # the store keeps records of at most 16 KiB and escapes non-ASCII characters
        # (\u00e9: 6 bytes): a paused event naming a condition type of 4,000 of them
        # (a world entry's name is limited to 480 bytes, so the type is defined and
        # signalled in one act: the pause comes before the export would fail)
        name = '\u00e9' * 4000
        src = "(progn (define-condition %s (error) ()) (error '%s))" % (name, name)
        r = expect_ok(c.request({'op': 'act', 'generation': k.gen(), 'action': {'type': 'evaluate', 'source': src}}),
                      status='paused')
        try:
            assert r['pause']['condition_type'].lower() == name, r['pause']['condition_type'][:50]
            e = sub.wait_event(lambda e: e.get('truncated') and e.get('event') == 'paused', what='truncated paused')
            assert e['original_bytes'] > 16384 and e['head'].startswith('{"seq":%d' % e['seq']), e
        finally:
            expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}),
                         'aborted')
    R.run('conformance/event-truncated-by-the-store', truncated_event)

    def unsubscribed_get_no_events():
        # Conn raises on an event line on a connection that did not subscribe
        c.request({'op': 'call', 'source': '(+ 1 1)'})
        c.drain()
    R.run('conformance/no-events-without-subscribe', unsubscribed_get_no_events)
    c.close()
    sub.close()


# ------------------------------------------------------------------ frames

RATIO = '(defun ratio (n) (let ((d 0)) (loop (restart-case (return (/ n d)) (retry () nil)))))'


def frames(R, k):
    c = k.conn()

    def paused(src):
        r = expect_ok(c.request({'op': 'act', 'generation': k.gen(), 'action': {'type': 'evaluate', 'source': src}}),
                      status='paused')
        return r

    def listed():
        expect_ok(c.request({'op': 'call', 'source': RATIO}), outcome='accepted')
        r = paused('(world-put :r (ratio 10))')
        fs = r['pause']['frames']
        assert fs == [{'frame': 0, 'function': '/', 'args': ['10', '0'], 'locals': []},
                      {'frame': 1, 'function': 'RATIO', 'args': ['10'],
                       'locals': [{'name': 'N', 'value': '10'}, {'name': 'D', 'value': '0'}]}], fs
        assert r['pause']['backtrace'] == '0: (/ 10 0)\n1: (RATIO 10)\n', r['pause']['backtrace']
        v = expect_ok(c.request({'op': 'observe'}))['view']
        assert v['pause']['frames'] == fs, v['pause']
    R.run('conformance/frames-listed', listed)

    def evaluate_in_frame():
        g = k.gen()
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '(setq d 2)',
                                                                         'frame': 1}}),
                      status='paused', value='2', generation=g)
        assert r['pause']['frames'][1]['locals'][1] == {'name': 'D', 'value': '2'}, r['pause']['frames']
        r = expect_error(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': 'd',
                                                                            'frame': 2}}),
                         'invalid-arguments', 'no frame 2')
        assert r['pause']['refusal'] == 'invalid-arguments' and r['generation'] == g, r
        retry = [x['id'] for x in r['pause']['restarts'] if x['name'] == 'RETRY'][0]
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'resume', 'restart_id': retry}}),
                      outcome='accepted', value='5')
        expect_ok(c.request({'op': 'call', 'source': '(values (world-get :r))'}), value='5')
    R.run('conformance/frames-evaluate', evaluate_in_frame)

    def return_from_frame():
        r = paused('(world-put :q (+ 1 (ratio 7)))')
        g = r['generation']
        r = expect_error(c.request({'op': 'act', 'generation': g, 'action': {
            'type': 'return-from-frame', 'frame': 0, 'arguments': '5'}}), 'invalid-arguments', 'list')
        assert r['generation'] == g, r
        expect_ok(c.request({'op': 'act', 'generation': g, 'action': {
            'type': 'return-from-frame', 'frame': 0, 'arguments': '(list 41)'}}), outcome='accepted', value='42')
        expect_ok(c.request({'op': 'call', 'source': '(values (world-get :q))'}), value='42')
    R.run('conformance/frames-return', return_from_frame)

    def restart_frame():
        r = paused('(world-put :s (ratio 3))')
        g = r['generation']
        expect_ok(c.request({'op': 'act', 'generation': g, 'action': {
            'type': 'evaluate', 'source': '(defun ratio (n) (* n 100))'}}), status='paused', value='RATIO')
        expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'restart-frame', 'frame': 1}}),
                  outcome='accepted', value='300')
        expect_ok(c.request({'op': 'call', 'source': '(list (values (world-get :s)) (ratio 5))'}), value='(300 500)')
    R.run('conformance/frames-restart', restart_frame)
    c.close()


# ------------------------------------------------------------------ shutdown

def shutdown(R):
    k = Kernel()
    try:
        def run_it():
            sub = k.conn()
            sub.request({'op': 'subscribe'})
            c1, c2, c3, c4 = k.conn(), k.conn(), k.conn(), k.conn()
            expect_ok(c1.request({'op': 'call', 'source': '(world-put :kept 1)'}))
            before = k.fingerprint()
            r = expect_ok(c1.request({'op': 'act', 'generation': k.gen(),
                                      'action': {'type': 'evaluate', 'source': '(progn (world-put :kept 2) (car 5))'}}),
                          status='paused')
            att = sub.wait_event(lambda e: e['event'] == 'paused', what='paused')['attempt']
            qid = c2.send({'op': 'call', 'source': '(world-put :kept 3)', 'wait': True})
            wait_for(lambda: k.status()['queue'] == 1, 10 * proto.SLOW, 'the call to be queued')
            expect_ok(c3.request({'op': 'shutdown'}), message='shutting down')
            expect_error(c2.reply(qid), 'shutting-down')
            ab = sub.wait_event(lambda e: e['event'] == 'aborted' and e['attempt'] == att, what='aborted')
            assert ab['outcome'] == 'aborted', ab
            # requests on connections still open: refused (or the connection is already closed)
            try:
                expect_error(c4.request({'op': 'observe'}, timeout=5 * proto.SLOW), 'shutting-down')
            except (proto.Closed, BrokenPipeError, ConnectionResetError):
                pass
            rc = k.wait_exit()
            assert rc == 0, 'kernel exit status %s' % rc
            assert not os.path.exists(k.sock_path), 'socket left behind'
            assert c1.closed_by_kernel(), 'the pausing client was not disconnected'
            for x in (sub, c1, c2, c3, c4):
                x.close()
            k.start()   # the same store: the paused write was restored
            assert k.fingerprint() == before
            assert k.value('(world-get :kept)') == '1'
        R.run('conformance/shutdown-with-a-pause-and-a-queue', run_it)
    finally:
        k.stop()
        k.cleanup()
        if k.problems:
            R.fail('conformance/shutdown-kernel-log', '; '.join(k.problems))


# -------------------------------------------------------------- worker death

def worker_death(R):
    with Kernel() as k:
        def run_it():
            sub = k.conn()
            sub.request({'op': 'subscribe'})
            c = k.conn()
            before = k.fingerprint()
            st = k.status()
            src = '(let ((l nil)) (world-put :w 1) (loop (push (make-string 100000) l)))'
            rid = c.send({'op': 'call', 'source': src})
            # (a call's start is recorded with its outcome, or after a second)
            att = wait_for(lambda: (lambda s: s['current_attempt'] if s['state'] == 'running' else None)(k.status()),
                           10 * proto.SLOW, 'the call to run')
            os.kill(st['worker_pid'], signal.SIGKILL)
            r = expect_error(c.reply(rid), 'interrupted', 'signal 9')
            assert 'generation' not in r, r
            e = sub.wait_event(lambda e: e['event'] == 'interrupted', what='interrupted')
            assert e['attempt'] == att and e['command'] == 'call', e
            assert [x for x in sub.events if x['event'] == 'started' and x['attempt'] == att], sub.events
            e = sub.wait_event(lambda e: e['event'] == 'worker-restarted', what='worker-restarted')
            assert e['revision'] == st['revision'], e
            # the fresh worker starts while the kernel serves: 'starting', then 'idle'
            wait_for(lambda: k.status()['state'] == 'idle', 10 * proto.SLOW, 'the fresh worker')
            s2 = expect_ok(c.request({'op': 'status'}), worker_restarts=1, state='idle')
            assert s2['worker_pid'] != st['worker_pid'] and s2['generation'] > st['generation'], (st, s2)
            assert k.fingerprint() == before
            # a pause interrupted: nobody waits for a reply, the events say it
            r = expect_ok(c.request({'op': 'act', 'generation': s2['generation'],
                                     'action': {'type': 'evaluate', 'source': '(progn (world-put :w 2) (car 5))'}}),
                          status='paused')
            os.kill(s2['worker_pid'], signal.SIGKILL)
            e = sub.wait_event(lambda e: e['event'] == 'interrupted' and e['command'] == 'act', what='interrupted act')
            wait_for(lambda: k.status()['worker_restarts'] == 2, 10 * proto.SLOW, 'a second worker restart')
            expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}),
                         'not-paused')
            assert k.fingerprint() == before
            c.close()
            sub.close()
        R.run('conformance/worker-killed', run_it)


# ------------------------------------------------ observe goals and record

def goals_and_records(R, k):
    c = k.conn()

    def observe_goals():
        expect_ok(c.request({'op': 'call', 'source': '(defun f (x) (* 2 x))'}), outcome='accepted')
        g = k.gen()
        v = expect_ok(c.request({'op': 'observe', 'goals': ['(= (f 2) 4)', '(= (f 2) 5)', '(car 1)',
                                                            '(progn (world-put :w 1) t)']}))['view']
        assert [x['pass'] for x in v['goals']] == [True, False, False, True], v['goals']
        assert v['goals'][0] == {'source': '(= (f 2) 4)', 'pass': True, 'message': 'T'}, v['goals']
        assert v['goals'][2]['message'].startswith('TYPE-ERROR'), v['goals']
        assert v['generation'] == g == k.gen(), (g, v['generation'])   # goals change nothing
        assert k.value('(world-get :w)') == 'NIL'
        assert expect_ok(c.request({'op': 'observe', 'goals': []}))['view']['goals'] == []
        for bad in [5, [1], ['x' * 16385], ['(f)'] * 65]:
            expect_error(c.request({'op': 'observe', 'goals': bad}, valid=False), 'invalid-request')
        expect_error(c.request({'op': 'observe', 'goals': ['a\u0000b']}, valid=False), 'malformed-json')
    R.run('conformance/observe-goals', observe_goals)

    def observe_goals_paused():
        g = k.gen()
        r = expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': DIVIDE}}),
                      status='paused')
        v = expect_ok(c.request({'op': 'observe', 'goals': ['t']}))['view']
        assert v['goals'] == [{'source': 't', 'pass': None, 'message': 'not evaluated: a transaction is paused'}], v
        expect_error(c.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}), 'aborted')
    R.run('conformance/observe-goals-paused', observe_goals_paused)

    def record():
        sub = k.conn()
        expect_ok(sub.request({'op': 'subscribe'}), subscribed=True)
        expect_ok(c.request({'op': 'record', 'event': {'event': 'session-step', 'session': 'x1', 'step': 1}}))
        expect_ok(c.request({'op': 'record', 'event': {'event': 'session', 'nested': {'a': [1, 2]}}, 'sync': True}))
        # sync: already in the store when the reply comes
        out = subprocess.run([proto.JITI, 'events', '--store', k.store, '-n', '1'], capture_output=True, text=True)
        assert 'session' in out.stdout and 'nested' in out.stdout, out.stdout
        e = sub.wait_event(lambda e: e['event'] == 'session-step', what='session-step')
        assert e['session'] == 'x1' and e['step'] == 1 and e['seq'] >= 1 and e['time'] > 0, e
        sub.wait_event(lambda e: e['event'] == 'session', what='session')
        for bad in [{'event': 'accepted'}, {'event': 'sessionx'}, {'event': 5}, {'x': 1}, 'session',
                    {'event': 'session-x', 'seq': 1}, {'event': 'session-x', 'time': 1}]:
            expect_error(c.request({'op': 'record', 'event': bad}, valid=False), 'invalid-request')
        expect_error(c.request({'op': 'record', 'event': {'event': 'session-x'}, 'sync': 1}, valid=False),
                     'invalid-request')
        expect_error(c.request({'op': 'record'}, valid=False), 'invalid-request')
        # a long record is kept as its head
        expect_ok(c.request({'op': 'record', 'event': {'event': 'session-x', 'big': 'y' * 70000}}))
        e = sub.wait_event(lambda e: e['event'] == 'session-x', what='session-x')
        assert e.get('truncated') is True and e['original_bytes'] > 70000, e
    R.run('conformance/record', record)
