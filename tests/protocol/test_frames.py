"""The frames between the kernel and its worker against docs/schema/frames.json:
a kernel run with JITI_WIRE_TRACE records every frame's JSON both ways while a
session exercises every kind of frame (start-up, queries, calls and batches,
a pause with a repair, a refused command, a resume and an abort, a preview,
invariant changes, an apply, a commit of nothing new, a verification on a
shadow, a worker death); then every line is validated, the requests against
the request branch, the answers against the answer branch and the shadow's
report (traced as R) against shadow-report, and every op and event must
have been seen (but fatal and error, which a sound kernel does not
provoke)."""
import json
import os
import tempfile

import jsonschema

import proto
from proto import Kernel, expect_error, expect_ok, wait_for

PAUSING = '(progn (world-put :p 1) (restart-case (car 5) (use-value (v) v)))'


def run(R):
    R.run('frames/every-frame-valid', frames)


def session(k):
    c = k.conn()
    expect_ok(c.request({'op': 'call', 'source': '(world-put :a 1)'}))
    expect_ok(c.request({'op': 'call', 'source': '(defun f (x) x)'}))
    expect_ok(c.request({'op': 'call', 'source': '(defun f (x) x)'}))        # commit of nothing new
    expect_ok(c.request({'op': 'repair-policy', 'action': 'enable', 'selector': 'f'}))
    expect_ok(c.request({'op': 'call', 'source': '(f 1)'}))                  # noted: the traffic sample
    expect_error(c.request({'op': 'call', 'source': '(car 1)'}), 'error')
    c.request({'op': 'observe', 'goals': ['(= 1 1)']})
    c.request({'op': 'inspect', 'kind': 'function', 'name': 'F'})
    c.request({'op': 'inspect', 'name': 'F'})
    c.request({'op': 'invariant-list'})
    expect_ok(c.request({'op': 'preview', 'source': '(world-put :a 2)'}))
    expect_ok(c.request({'op': 'invariant-add', 'name': 'a', 'source': '(world-get :a)'}))
    expect_ok(c.request({'op': 'invariant-remove', 'name': 'a'}))
    expect_ok(c.request({'op': 'apply', 'source': '(world-put :b 1) (world-put :c 2)'}))
    for _ in range(2):   # a pause: repair, refused command, resume; then abort
        r = expect_ok(c.request({'op': 'act', 'generation': k.gen(),
                                 'action': {'type': 'evaluate', 'source': PAUSING}}), status='paused')
        g = r['generation']
        expect_ok(c.request({'op': 'act', 'generation': g, 'action': {'type': 'evaluate', 'source': '(+ 1 2)'}}))
        expect_error(c.request({'op': 'act', 'generation': g,
                                'action': {'type': 'resume', 'restart_id': 'p9-9'}}), 'invalid-arguments')
        c.request({'op': 'observe'})
        if _ == 0:
            expect_ok(c.request({'op': 'act', 'generation': g,
                                 'action': {'type': 'resume', 'restart_id': 'p1-0', 'arguments': '(list 7)'}}))
        else:
            expect_error(c.request({'op': 'act', 'generation': g, 'action': {'type': 'abort'}}), 'aborted')
    # a verification on a shadow: the shadow frame, shadowed, the report
    r = expect_ok(c.request({'op': 'verify', 'definitions': '(defun f (x) (list x))', 'repro': '(f 1)',
                             'replay': ['(f 2)', '(car 1)']}))
    assert r['report']['replay'][0]['differs'] is True, r
    # a batch: calls sent at once, in one write
    ids = c.send_many([{'op': 'call', 'source': '(world-put :n %d)' % i} for i in range(10)])
    for i in ids:
        expect_ok(c.reply(i))
    wpid = k.status()['worker_pid']
    os.kill(wpid, 9)
    def fresh():
        st = k.status()
        return st['state'] == 'idle' and st['worker_pid'] not in (0, wpid)
    wait_for(fresh, 30 * proto.SLOW, 'a fresh worker')
    c.close()


def frames():
    trace = os.path.join(tempfile.mkdtemp(prefix='jiti-frames.', dir='/tmp'), 'trace')
    with Kernel(env={'JITI_WIRE_TRACE': trace}) as k:
        session(k)
    S = proto.schemas()
    doc = S.docs['frames.json']
    resolver = jsonschema.RefResolver.from_schema(doc, store={d['$id']: d for d in S.docs.values()})
    branch = {'>': jsonschema.Draft202012Validator({'$ref': doc['$id'] + '#/$defs/request'}, resolver=resolver),
              '<': jsonschema.Draft202012Validator({'$ref': doc['$id'] + '#/$defs/answer'}, resolver=resolver),
              'R': jsonschema.Draft202012Validator({'$ref': doc['$id'] + '#/$defs/shadow-report'},
                                                   resolver=resolver)}
    seen = {'>': set(), '<': set(), 'R': set()}
    bad = []
    noted = False
    n = 0
    with open(trace, encoding='utf-8') as f:
        for line in f:
            way, text = line.rstrip('\n').split(' ', 1)
            msg = json.loads(text)
            noted |= bool(msg.get('noted'))
            n += 1
            seen[way].add(msg.get('op') if way == '>' else msg.get('event') if way == '<' else 'report')
            with S.lock:
                errs = list(branch[way].iter_errors(msg))
            if errs:
                best = jsonschema.exceptions.best_match(errs)
                bad.append('%s %s: %s' % (way, proto.snippet(msg, 300), best.message))
    assert not bad, '%d of %d frames do not match docs/schema/frames.json:\n  %s' % (len(bad), n, '\n  '.join(bad[:10]))
    ops = {'init', 'import', 'start', 'observe', 'inspect', 'invariant-list', 'invariant', 'attempt', 'attempts',
           'command', 'commit', 'exit', 'shadow'}
    events = {'ready', 'view', 'entry', 'invariants', 'paused', 'outcome', 'committed', 'shadowed'}
    assert seen['R'] == {'report'}, 'no shadow report was traced'
    assert ops <= seen['>'], 'ops never sent: %s' % sorted(ops - seen['>'])
    assert events <= seen['<'], 'events never received: %s' % sorted(events - seen['<'])
    assert noted, 'no outcome noted a call (the traffic sample)'
