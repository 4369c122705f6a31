#!/usr/bin/env python3
"""The sales-tax example end to end (examples/sales-tax/demo.sh, the
README's first command): runs the demo as a user would and checks every
step in what it printed and in what the store holds; then replays the
exported transcripts on a fresh store.

    test_sales_tax.py JITI
"""
import json
import os
import re
import shutil
import subprocess
import sys

import sessionlib as L
from sessionlib import check

L.setup(sys.argv)
tmp = L.tmpdir()
store = os.path.join(tmp, 'calc.jiti')
env = dict(os.environ, JITI=L.JITI, DEMO_DIR=tmp)
env.pop('JITI_DEMO_MODEL', None)
p = subprocess.run(['bash', os.path.join(L.ROOT, 'examples', 'sales-tax', 'demo.sh')], env=env,
                   capture_output=True, text=True, timeout=600)
out = p.stdout + p.stderr
check('demo exits 0', p.returncode == 0, out[-3000:])
check('three sessions exit 0', out.count('(exit status 0)') == 3, out)
sections = out.split('\n== ')
req = {k: next((s for s in sections if s.startswith(k)), '') for k in
       ('Request 1', 'Request 2', 'Request 3', 'The kernel is killed', 'History', 'The sessions')}

# ---- request 1: an invalid response, then 5% tax
r1 = req['Request 1']
check('r1: the schema-violating response is refused', re.search(r'^\s+1\s+\(invalid response: invalid-action\)\s+invalid',
                                                                r1, re.M) and 'has no field "code"' in r1, r1)
check('r1: sales-tax accepted', re.search(r'^\s+2\s+evaluate \(defun sales-tax .*accepted\s+rev \d+', r1, re.M), r1)
check('r1: preview restored', re.search(r'^\s+3\s+preview .*previewed', r1, re.M), r1)
check('r1: goals met', re.search(r'goals-met after 4 steps \(2 accepted, 0 rejected, 0 stale, 1 invalid\)', r1), r1)
check('r1: (total-price 100) = 105', re.search(r'^105$', r1, re.M), r1)

# ---- request 2: stale, then a pause answered with a restart
r2 = req['Request 2']
check('r2: stale proposal', re.search(r'^\s+1\s+evaluate \(defun total-price \(price rate\).*\bstale\b', r2, re.M), r2)
check('r2: paused', re.search(r'^\s+3\s+evaluate \(sales-tax 100 -5/100\)\s+paused \(SIMPLE-ERROR\)', r2, re.M), r2)
check('r2: resumed with the restart', re.search(r'^\s+4\s+resume p1-0 \(list 5/100\)\s+unchanged', r2, re.M), r2)
check('r2: goals met', 'goals-met after 5 steps (2 accepted, 0 rejected, 1 stale, 0 invalid)' in r2, r2)
check('r2: both rates', re.search(r'^\(105 108\)$', r2, re.M), r2)

# ---- request 3: the negative food tax is refused, then accepted
r3 = req['Request 3']
check('r3: negative food tax refused by the invariant',
      re.search(r'^\s+1\s+evaluate \(defun tax-rate .*rejected \(unsafe\)', r3, re.M)
      and 'ITEM-RATES-NEVER-NEGATIVE' in r3, r3)
check('r3: goals met', 'goals-met after 2 steps (1 accepted, 1 rejected, 0 stale, 0 invalid)' in r3, r3)
check('r3: food and clothing', re.search(r'^\(102 108\)$', r3, re.M), r3)

# ---- kill -9, recover, the recovered world's totals
k = req['The kernel is killed']
check('killed', re.search(r'killed the kernel \(pid \d+\)', k), k)
check('recovered', 'recovered the store' in k and 'invariants:  all hold' in k, k)
check('recovered totals', '"food: 102, clothing: 108"' in k, k)
m = re.search(r'revision:\s+(\d+)', k)
final_rev = int(m.group(1)) if m else -1

# ---- history and sessions as printed
h = req['History']
check('log: CURRENT is the last accepted revision', re.search(r'^\* %d .*\(CURRENT\)' % final_rev, h, re.M), h)
check('log: the negative food tax was never published', '-2/100' not in h, h)
s = req['The sessions']
check('sessions: three, goals met', len(re.findall(r'^\s+\d\s+\S+\s+scripted \S+\s+\d+\s+goals-met', s, re.M)) == 3, s)
check('sessions show 2: the pause', 'paused: SIMPLE-ERROR: a tax rate cannot be negative' in s and 'p1-0 USE-RATE' in s, s)

# ---- the store: every step recorded
st, o, e = L.jiti('kernel', '--store', store, '--detach')
K = L.Kernel.__new__(L.Kernel)
K.store = store
sessions = K.sessions()
check('store: three sessions', sessions and len(sessions) == 3, sessions)
s1, s2, s3 = (K.steps(n) for n in (1, 2, 3))
check('s1 steps', [x['outcome'] for x in s1] == ['invalid', 'accepted', 'previewed', 'accepted'], s1)
check('s1 invalid recorded raw', s1[0]['code'] == 'invalid-action' and '"code"' in s1[0].get('raw', ''), s1[0])
check('s2 steps', [x['outcome'] for x in s2] == ['stale', 'accepted', 'paused', 'unchanged', 'accepted'], s2)
check('s2 stale: pinned to generation 1, re-observed', s2[0]['pinned'] and s2[0]['generation'] == 1
      and s2[0]['generation_after'] > 1 and s2[1]['generation'] == s2[0]['generation_after'], s2[:2])
check('s2 every action carries the view generation', all(x['generation'] == prev['generation_after']
                                                        for prev, x in zip(s2[1:], s2[2:])), s2)
check('s2 pause menu', s2[2]['pause']['restarts'][0] == {'id': 'p1-0', 'name': 'USE-RATE'}, s2[2])
check('s2 resume value', s2[3]['action'] == {'type': 'resume', 'restart_id': 'p1-0', 'arguments': '(list 5/100)'}
      and s2[3]['value'] == '5', s2[3])
check('s3 steps', [x['outcome'] for x in s3] == ['rejected', 'accepted'] and s3[0]['reason'] == 'unsafe', s3)
start3 = [e for e in K.session_events(3) if e['event'] == 'session-start'][0]
check('s3: the revision stayed live through the refusal', s3[1]['revision'] == start3['revision'] + 1, (start3, s3))
for n in (1, 2, 3):
    end = K.end(n)
    check('session %d end' % n, end.get('outcome') == 'goals-met' and end.get('exit') == 0
          and end['goals']['pass'] == end['goals']['total'], end)
    valid = sum(1 for x in K.steps(n) if x['outcome'] != 'invalid')
    check('session %d: one observe to start, then two kernel round trips per action' % n,
          end['kernel_calls'] == 1 + 2 * valid, (valid, end))

# ---- export and replay on a fresh store: the same world
files = []
for n in (1, 2, 3):
    f = os.path.join(tmp, 'replay%d.jsonl' % n)
    st, o, e = L.jiti('sessions', 'export', n, '--store', store, '-o', f)
    check('export %d' % n, st == 0 and os.path.exists(f), e)
    files.append(f)
K.stop()
with open(files[1]) as f:
    lines = [l for l in f if not l.startswith('#')]
check('export keeps the pinned generation', json.loads(lines[0]).get('generation') == 1, lines[:1])
K2 = L.Kernel(tmp, 'replay.jiti')
tasks = ['1-five-percent', '2-rates', '3-food']
for f, t in zip(files, tasks):
    st, o, e = L.jiti('session', '--store', K2.store, '--task', os.path.join(L.ROOT, 'examples', 'sales-tax', t + '.lisp'),
                      '--scripted', f)
    check('replay %s' % t, st == 0 and 'goals-met' in o, o + e)
check('replayed world', K2.eval('(list (total-price 100 :food) (total-price 100 :clothing) (total-price 100))')
      == '(102 108 105)')
check('replay: the same outcomes', [x['outcome'] for x in K2.steps(2)] ==
      ['stale', 'accepted', 'paused', 'unchanged', 'accepted'], K2.steps(2))
K2.stop()
shutil.rmtree(tmp, ignore_errors=True)
L.finish()
