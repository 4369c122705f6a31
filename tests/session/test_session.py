#!/usr/bin/env python3
"""jiti session against a real kernel and the loopback model server
(tests/model_server.py) through libcurl: what the user sees, what the store
holds, what was retried and how long the client chose to wait, pauses,
concurrency (a second client writing while the model thinks), exit
statuses, --json, --confirm, interactive requests, task files, the prompt
budget, and that the API key appears nowhere (output, events, the store's
file, the process's command line).

    test_session.py JITI
"""
import json
import os
import subprocess
import sys
import threading
import time

import sessionlib as L
from sessionlib import check

KEY = 'sk-test-Q3xY7vB9nM2kL5pR8tW1zA4cD6fG'
L.setup(sys.argv)
tmp = L.tmpdir()
srv = L.ModelServer(tmp, key=KEY)
K = L.Kernel(tmp)
S = ['--store', K.store]
ENV = {'OPENAI_API_KEY': KEY, 'OPENAI_BASE_URL': srv.base, 'OPENAI_MODEL': 'test-model'}
outputs = []   # everything the user saw, searched for the key at the end


def act(a):
    return {'kind': 'action', 'action': a}


def ev(src):
    return act({'type': 'evaluate', 'source': src})


def session(*args, env=None, input=None, timeout=300):
    e = dict(ENV)
    e.update(env or {})
    st, out, err = L.jiti('session', *S, *args, env=e, input=input, timeout=timeout)
    outputs.append(out + err)
    return st, out, err


def last_n():
    return len(K.sessions())


def requests():
    return [r for r in srv.log() if r['path'].startswith('/v1/')]


# ---- 1. retries: a 429 with retry-after, then the action; usage; bodies recorded
srv.queue([{'kind': 'status', 'status': 429, 'headers': {'retry-after': '1'}, 'message': 'Rate limit reached'},
           ev('(defun f (x) (* 2 x))')])
st, out, err = session('--request', 'Define f, doubling its argument.', '--goal', '(= (f 2) 4)', '--stream')
check('retry: exit 0', st == 0, out + err)
check('retry: said on a line of its own', 'retrying in 1.0 s after HTTP 429, as the server asked (retry 1 of 2)' in err,
      err)
n = last_n()
steps = K.steps(n)
check('retry: one step, accepted', [s['outcome'] for s in steps] == ['accepted'], steps)
a = steps[0].get('attempts', [])
check('retry: 429 waited retry-after (1 s), then 200',
      len(a) == 2 and a[0]['status'] == 429 and a[0]['wait'] == 1.0 and a[0]['server_wait'] and a[1]['status'] == 200, a)
check('retry: usage recorded', steps[0]['usage'] == {'input_tokens': 120, 'output_tokens': 30, 'reasoning_tokens': 8,
                                                     'cached_tokens': 20, 'total_tokens': 150}, steps[0]['usage'])
check('retry: response id', steps[0].get('response_id', '').startswith('resp_'), steps[0])
log = requests()
check('retry: x-stainless-retry-count 0 then 1', [r['headers'].get('x-stainless-retry-count') for r in log] == ['0', '1'],
      log)
check('retry: streamed', log[1]['body']['stream'] is True)
evs = K.session_events(n)
bodies = [e for e in evs if e['event'] in ('session-request', 'session-response')]
check('retry: request and response bodies recorded', [e['event'] for e in bodies] ==
      ['session-request', 'session-response'] and '"input"' in bodies[0]['body'], bodies)
st, o, e = L.jiti('events', '--store', K.store, '--show', bodies[0]['seq'])
check('events --show decodes the body', st == 0 and 'body, decoded:' in o and '"input": [' in o and
      '[the instructions:' in o, o[:300])
check('events --show prints the body once', o.count('[the instructions:') == 1 and '"body":' not in o, o[:600])
end = K.end(n)
check('retry: end totals', end['outcome'] == 'goals-met' and end['usage']['total_tokens'] == 150, end)

# ---- 1b. goals and invariants are read and evaluated once before the first
# model request: a typo ends the session at once (exit 2), nothing asked
for args, want in [(['--goal', '(= 1 2'], 'does not read'),
                   (['--goal', '(undefined-fn)'], 'the request does not mention UNDEFINED-FN'),
                   (['--goal', '(= 1 1)', '--invariant', '(car 1)'], 'is not of type LIST'),
                   (['--invariant', '(fboundp (quote nothing-here))'], 'does not hold')]:
    srv.queue([ev('(+ 1 1)') | {'repeat': -1}])
    n0 = last_n()
    st, out, err = session('--request', 'x', *args)
    check('broken task %s: exit 2 naming it, no model request' % args[-1], st == 2 and want in err and
          'no model request was made' in err and requests() == [] and last_n() == n0, (st, err, requests()))
check('broken invariant: not added', 'nothing-here' not in L.jiti('invariant', 'list', *S)[1])
srv.queue([act({'type': 'finish', 'summary': 'ok'})])
st, out, err = session('--request', 'x', '--goal', '(= 1 1)', '--goal', '(fboundp (quote nothing))')
check('a goal that already holds is said', st == 3 and 'goal 1 already holds: (= 1 1)' in err and
      'goal 2 already' not in err, err)
# a goal calling a function the request names is the model's to define
srv.queue([act({'type': 'finish', 'summary': 'cannot'})])
st, out, err = session('--request', 'Define zz-new.', '--goal', '(= (zz-new) 1)')
check('a goal on a function the request names: asked', st == 3 and len(requests()) == 1 and
      'goal 1 does not hold yet: UNDEFINED-FUNCTION' in err, (st, err))

# ---- 2. a pause answered with a restart, through the model's conversation
srv.queue([ev('(restart-case (error "the rate table is missing") (use-value (v) (* 2 v)))'),
           act({'type': 'resume', 'restart_id': 'p1-0', 'arguments': '(list 21)'}),
           act({'type': 'finish', 'summary': 'done'})])
st, out, err = session('--request', 'Compute with a restart.', '--no-stream')
check('pause: exit 0 (finish without goals)', st == 0, out + err)
steps = K.steps(last_n())
check('pause: paused, resumed, finished', [s['outcome'] for s in steps] == ['paused', 'unchanged', 'finished'], steps)
check('pause: the resume returned 42', steps[1].get('value') == '42', steps[1])
log = requests()
out1 = log[1]['body']['input'][-1]
check('pause: the model saw the pause and its menu', out1['type'] == 'function_call_output' and
      out1['call_id'] == log[1]['body']['input'][-2]['call_id'] and 'PAUSED' in out1['output'] and
      'p1-0' in out1['output'] and 'USE-VALUE' in out1['output'], out1)

# ---- 3. invalid responses execute nothing and are told to the model; three in a row stop the session
srv.queue([{'kind': 'refusal', 'refusal': 'I cannot help with that.'},
           {'kind': 'two-calls', 'actions': [{'type': 'check'}, {'type': 'abort'}]},
           {'kind': 'incomplete', 'reason': 'max_output_tokens'}])
before = K.eval('(list (fboundp (quote f)))')
st, out, err = session('--request', 'Anything.', '--goal', '(fboundp (quote nothing))')
check('format errors: exit 6', st == 6, out + err)
steps = K.steps(last_n())
check('format errors: three invalid steps', [s['code'] for s in steps] == ['refusal', 'multiple-actions', 'incomplete'],
      steps)
log = requests()
in2 = log[2]['body']['input']
outs = [i for i in in2 if i['type'] == 'function_call_output']
check('format errors: both calls answered, one action per response', len(outs) == 2 and
      'exactly one' in outs[0]['output'] and 'only one action per response' in outs[1]['output'], outs)
check('format errors: the refusal went back as a user message', any(
    i.get('role') == 'user' and 'refused' in i.get('content', '') for i in log[1]['body']['input']), log[1]['body'])
check('format errors: the world did not change', K.eval('(list (fboundp (quote f)))') == before)

# ---- 4. an invalid response, corrected on the next turn
srv.queue([{'kind': 'raw', 'name': 'evaluate', 'arguments': '{"source": (defun h () 1)}'},
           ev('(defun h () 1)')])
st, out, err = session('--request', 'Define h.', '--goal', '(= (h) 1)')
check('correction: exit 0', st == 0, out + err)
log = requests()
fco = log[1]['body']['input'][-1]
check('correction: bad arguments told to the model', fco['type'] == 'function_call_output' and
      'not one JSON value' in fco['output'], fco)

# ---- 5. budget and max-tokens
srv.queue([act({'type': 'preview', 'source': '(+ 1 2)'}) | {'repeat': -1}])
st, out, err = session('--request', 'Loop.', '--goal', '(fboundp (quote never))', '--budget', '2')
check('budget: exit 4 after 2 steps', st == 4 and K.end(last_n())['steps'] == 2, out + err)
st, out, err = session('--request', 'Loop.', '--goal', '(fboundp (quote never))', '--max-tokens', '400')
check('max-tokens: exit 5 before a step that could pass it (150 a step: 2 steps, 300 tokens)',
      st == 5 and K.end(last_n())['usage']['total_tokens'] == 300, out + err)
st, out, err = session('--request', 'Loop.', '--goal', '(fboundp (quote never))', '--max-tokens', '400',
                       '--max-output-tokens', '200')
check('max-tokens: the worst case counts --max-output-tokens (1 step, 150 tokens)',
      st == 5 and K.end(last_n())['usage']['total_tokens'] == 150, out + err)

# ---- 6. finish with goals unmet; the model API refusing; nobody listening
srv.queue([act({'type': 'finish', 'summary': 'I give up.'})])
st, out, err = session('--request', 'Impossible.', '--goal', '(fboundp (quote never))')
check('gave up: exit 3', st == 3 and K.end(last_n())['outcome'] == 'gave-up', out + err)
wrong = 'sk-wrong-Hh8Jj7Kk6Ll5Mm4Nn3'
srv.queue([])
st, out, err = session('--request', 'x', env={'OPENAI_API_KEY': wrong})
check('401: exit 1 with the hint and the server message', st == 1 and 'API key was refused' in err and
      'Incorrect API key provided' in err, err)
check('401: the wrong key is not shown', 'Hh8Jj7Kk' not in out + err, err)
srv.queue([{'kind': 'status', 'status': 503, 'repeat': 3}])
st, out, err = session('--request', 'x', '--max-retries', '2')
check('503: exit 1 after 3 attempts', st == 1 and 'after 3 attempts' in err, err)
check('503: both retries said', 'after HTTP 503 (retry 1 of 2)' in err and 'after HTTP 503 (retry 2 of 2)' in err, err)
ends = [e for e in K.session_events(last_n()) if e['event'] == 'session-error']
check('503: the waits are recorded', ends and [a['status'] for a in ends[0]['attempts']] == [503, 503, 503] and
      0.375 <= ends[0]['attempts'][0]['wait'] <= 0.5 and 0.75 <= ends[0]['attempts'][1]['wait'] <= 1.0, ends)
st, out, err = session('--request', 'x', '--max-retries', '0', '--connect-timeout', '1',
                       env={'OPENAI_BASE_URL': 'http://127.0.0.1:9/v1'})
check('connection refused: exit 1', st == 1 and 'failed after 1 attempt' in err, err)
srv.queue([act({'type': 'finish', 'summary': 'slow'}) | {'delay': 2}, act({'type': 'finish', 'summary': 'ok'})])
st, out, err = session('--request', 'x', '--timeout', '1')
check('a stall past --timeout: the retry said', st == 0 and 'after a timeout (retry 1 of 2)' in err, (st, err))
time.sleep(1.5)   # the stalled reply has ended: the server is free
# libcurl is loaded at the first request: a library that cannot be loaded
# is a clear error before anything is asked, and nothing else needs it
st, out, err = session('--request', 'x', env={'JITI_LIBCURL': '/nonexistent/libcurl.so.4'})
check('libcurl missing: exit 1 naming it', st == 1 and 'libcurl could not be loaded' in err and
      '/nonexistent/libcurl.so.4' in err, err)
st, out, err = L.jiti('run', '-e', '(+ 1 2)', env={'JITI_LIBCURL': '/nonexistent/libcurl.so.4'})
check('libcurl missing: jiti run unaffected', st == 0 and out.strip() == '3', out + err)

# ---- 7. concurrency: another client writes while the model thinks: stale, re-observed
srv.queue([ev('(defun g () :first)') | {'delay': 2.0}, ev('(defun g () :second)')])
e = dict(os.environ, **ENV)
proc = subprocess.Popen([L.JITI, 'session', *S, '--request', 'Define g.', '--goal', '(fboundp (quote g))', '--json'],
                        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
for _ in range(400):   # the model server has the request: the session has observed
    if requests():
        break
    time.sleep(0.01)
with open('/proc/%d/cmdline' % proc.pid, 'rb') as f:
    cmdline = f.read()
check('ps: the key is not on the command line', KEY.encode() not in cmdline)
check('second client writes', K.eval('(world-put :other 1)') == '1')
out, err = proc.communicate(timeout=120)
outputs.append(out + err)
check('concurrency: exit 0', proc.returncode == 0, out + err)
lines = [json.loads(l) for l in out.splitlines() if l.strip()]
check('--json: one object per step and one at the end', [l.get('outcome') for l in lines] ==
      ['stale', 'accepted', 'goals-met'], lines)
check('concurrency: the second action carries the fresh generation',
      lines[1]['generation'] == lines[0]['generation_after'] > lines[0]['generation'], lines)
check('concurrency: g is the second definition', K.eval('(g)') == ':SECOND')
log = requests()
check('concurrency: the model was told the action was stale', 'Stale' in log[1]['body']['input'][-1]['output'],
      log[1]['body']['input'][-1])

# ---- 7b. Ctrl-C while the model thinks, with a pause open: exit 130, the pause aborted
srv.queue([ev('(restart-case (error "stop here") (use-value (v) v))'), ev('(+ 1 1)') | {'delay': 30}])
proc = subprocess.Popen([L.JITI, 'session', *S, '--request', 'Pause, then wait.', '--goal', '(fboundp (quote never))'],
                        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
for _ in range(1000):
    if len(requests()) >= 2:
        break
    time.sleep(0.01)
time.sleep(0.2)
proc.send_signal(2)
out, err = proc.communicate(timeout=60)
outputs.append(out + err)
check('interrupt: exit 130', proc.returncode == 130, (proc.returncode, out, err))
check('interrupt: recorded', K.end(last_n()).get('outcome') == 'interrupted', K.end(last_n()))
st, o, _ = L.jiti('status', '--store', K.store)
check('interrupt: the session aborted its pause', 'paused' not in o, o)

# ---- 8. Chat Completions, streaming; structured output
srv.queue([ev('(defun c1 () 1)')])
st, out, err = session('--chat', '--request', 'Define c1.', '--goal', '(= (c1) 1)', '--stream')
check('chat: exit 0', st == 0, out + err)
log = requests()
check('chat: the endpoint and the system message', log[0]['path'] == '/v1/chat/completions' and
      log[0]['body']['messages'][0]['role'] == 'system' and log[0]['body']['stream'] is True, log[0]['path'])
srv.queue([ev('(defun c2 () 2)')])
st, out, err = session('--structured', '--request', 'Define c2.', '--goal', '(= (c2) 2)')
check('structured: exit 0', st == 0, out + err)
fmt = requests()[0]['body']['text']['format']
check('structured: strict json_schema', fmt['type'] == 'json_schema' and fmt['strict'] is True, fmt)

# ---- 9. --confirm: declined, then edited
srv.queue([ev('(defun d (x) x)'), ev('(defun d (x) (+ x 1))')])
st, out, err = session('--confirm', '--request', 'Define d.', '--goal', '(= (d 2) 4)',
                       input='n\nit must double\ne\n(defun d (x) (* 2 x))\n')
check('confirm: exit 0', st == 0, out + err)
steps = K.steps(last_n())
check('confirm: declined, then the edited action accepted', [s['outcome'] for s in steps] == ['declined', 'accepted']
      and steps[1]['action']['source'] == '(defun d (x) (* 2 x))', steps)
check('confirm: the reason recorded and sent to the model', steps[0].get('operator_reason') == 'it must double' and
      "The operator's reason: it must double" in requests()[1]['body']['input'][-1]['output'], steps[0])

# ---- 10. the prompt budget: older steps are summarised, never dropped silently
srv.queue([act({'type': 'preview', 'source': '(+ %d 1)' % i}) for i in range(7)] +
          [act({'type': 'finish', 'summary': 'ok'})])
st, out, err = session('--request', 'Many steps.', '--prompt-budget', '1000')
check('prompt budget: exit 0', st == 0, out + err)
log = requests()
last_input = json.dumps(log[-1]['body']['input'])
check('prompt budget: older steps summarised in the prompt', 'summarised to keep the prompt short' in last_input and
      '(+ 0 1)' in last_input and last_input.count('function_call_output') <= 4, last_input[:2000])

# ---- 11. interactive requests (piped) with a scripted model; task files
script = os.path.join(tmp, 'two.jsonl')
with open(script, 'w') as f:
    f.write('{"type":"evaluate","source":"(defun i1 () 1)"}\n{"type":"finish","summary":"i1"}\n'
            '{"type":"evaluate","source":"(defun i2 () 2)"}\n{"type":"finish","summary":"i2"}\n')
n0 = last_n()
st, out, err = session('--scripted', script, input='define i1\n\n  define i2  \n')
check('interactive: two requests', st == 0 and last_n() == n0 + 2 and K.eval('(list (i1) (i2))') == '(1 2)', out + err)
check('interactive: the requests recorded', [s['request'] for s in K.sessions()[-2:]] == ['define i1', 'define i2'])
task = os.path.join(tmp, 'task.json')
with open(task, 'w') as f:
    json.dump({'request': 'Define j.', 'goals': ['(= (j) 3)'],
               'invariants': [{'name': 'j-small', 'source': '(or (not (fboundp (quote j))) (< (j) 10))'}]}, f)
script = os.path.join(tmp, 'j.jsonl')
with open(script, 'w') as f:
    f.write('{"type":"evaluate","source":"(defun j () 30)"}\n{"type":"evaluate","source":"(defun j () 3)"}\n')
st, out, err = session('--task', task, '--scripted', script)
check('json task: the invariant refuses, then goals met', st == 0 and
      [s['outcome'] for s in K.steps(last_n())] == ['rejected', 'accepted'], out + err)
bad_script = os.path.join(tmp, 'bad.jsonl')
with open(bad_script, 'w') as f:
    f.write('{"type":"evaluate" "source":"x"}\n[1]\n')
st, out, err = session('--request', 'x', '--scripted', bad_script, '--json')
msgs = [json.loads(l).get('message', '') for l in out.splitlines() if l.strip()]
check('scripted: hints in the script\'s own format', len(msgs) >= 2 and all(
    '{"type": "evaluate"' in m and '{"action"' not in m for m in msgs[:2]), msgs)
st, out, err = session('--task', task, '--scripted', os.path.join(tmp, 'empty.jsonl'))
check('missing script: exit 1', st == 1 and 'cannot read the script' in err, err)
with open(script, 'w') as f:
    f.write('{"type":"evaluate","source":"(+ 1 1)"}\n')
st, out, err = session('--request', 'Define k.', '--goal', '(fboundp (quote k))', '--scripted', script)
check('script runs out with goals unmet: exit 3', st == 3 and K.end(last_n())['outcome'] == 'exhausted', out + err)
# fix and continue: the call of an undefined function pauses; a repair with
# a typo opens level 2 and is aborted; the right repair, then CONTINUE by
# name, finishes the very call that failed, with its repair, in one revision
fix = os.path.join(tmp, 'fix.jsonl')
with open(fix, 'w') as f:
    for a in [{'type': 'evaluate', 'source': '(world-put :doubled (twice 21))'},
              {'type': 'evaluate', 'source': '(defun twice (x) (* 2 (twise-helper x)))'},
              {'type': 'evaluate', 'source': '(twice 1)'},
              {'type': 'abort'},
              {'type': 'evaluate', 'source': '(defun twice (x) (* 2 x))'},
              {'type': 'resume', 'restart_id': 'continue', 'arguments': None}]:
        f.write(json.dumps(a) + '\n')
n0 = last_n()
st, out, err = session('--request', 'Store twice 21 as :doubled.', '--goal', '(eql (world-get :doubled) 42)',
                       '--scripted', fix)
steps = K.steps(last_n())
check('fix and continue: the goal holds', st == 0 and K.eval('(values (world-get :doubled) (twice 4))') == '42\n8',
      out + err)
check('fix and continue: paused, repaired (paused still), level 2 opened and left, resumed',
      [s['outcome'] for s in steps] == ['paused'] * 5 + ['accepted'],
      [(s['outcome'], s.get('action')) for s in steps])
# a repair in a paused frame: the local set, then the computation continued
frame = os.path.join(tmp, 'frame.jsonl')
with open(frame, 'w') as f:
    for a in [{'type': 'evaluate', 'source': '(defun share (n) (let ((d 0)) (restart-case (/ n d) '
                                             '(continue () :report "Divide again." (/ n d)))))'},
              {'type': 'evaluate', 'source': '(world-put :share (share 12))'},
              {'type': 'evaluate', 'source': '(setq d 4)', 'frame': 1},
              {'type': 'resume', 'restart_id': 'continue', 'arguments': None}]:
        f.write(json.dumps(a) + '\n')
st, out, err = session('--request', 'Store a share of 12.', '--goal', '(eql (world-get :share) 3)', '--scripted', frame)
steps = K.steps(last_n())
check('a frame repair: the goal holds', st == 0 and K.eval('(values (world-get :share))') == '3', out + err)
check('a frame repair: accepted, paused, repaired in the frame, resumed',
      [s['outcome'] for s in steps] == ['accepted', 'paused', 'paused', 'accepted'], steps)
big = os.path.join(tmp, 'big.jsonl')
with open(big, 'w') as f:
    f.write(json.dumps({'type': 'evaluate', 'source': '(defun big () "%s")' % ('x' * 13000)}) + '\n')
st, out, err = session('--request', 'A long definition.', '--goal', '(fboundp (quote big))', '--scripted', big)
steps = K.steps(last_n())
check('a long action: accepted, its step kept (shortened, marked)', st == 0 and steps and
      steps[0]['outcome'] == 'accepted' and steps[0].get('action_complete') is False and 'truncated' not in steps[0],
      steps)
st, o, e = L.jiti('sessions', 'export', last_n(), '--store', K.store)
check('a long action: export says it cannot replay it', 'too long to be recorded whole' in o, o)
bad = os.path.join(tmp, 'bad.lisp')
with open(bad, 'w') as f:
    f.write('(:request "x" :goals ((= 1 1)) :colour 3)\n')
st, out, err = session('--task', bad, '--scripted', script)
check('task file error: exit 2 naming the file and line', st == 2 and 'bad.lisp:1:' in err and ':colour' in err, err)

# ---- 11b. interactive on a terminal: libedit, a private history file
import pty
import select
hist = os.path.join(tmp, 'hist')
script = os.path.join(tmp, 'tty.jsonl')
with open(script, 'w') as f:
    f.write('{"type":"evaluate","source":"(defun t1 () 1)"}\n{"type":"finish","summary":"t1"}\n')
pid, fd = pty.fork()
if pid == 0:
    os.environ['JITI_SESSION_HISTORY'] = hist
    os.execv(L.JITI, [L.JITI, 'session', *S, '--scripted', script])
seen = b''


def read_until(pattern, timeout=60, count=1):
    global seen
    end = time.time() + timeout
    while seen.count(pattern) < count and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen.count(pattern) >= count


check('tty: the prompt', read_until(b'request> '), seen)
os.write(fd, b'define t1\r')
check('tty: the session ran', read_until(b'finished after'), seen)
check('tty: prompt again', read_until(b'request> ', 30, count=2), seen)
time.sleep(0.3)   # libedit has the terminal now: a Ctrl-D typed earlier would be lost
os.write(fd, b'\x04')
for _ in range(600):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    status = -1
check('tty: exit 0 at end of input', os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status)
check('tty: history file, mode 0600', os.path.exists(hist) and (os.stat(hist).st_mode & 0o777) == 0o600)
with open(hist) as f:
    h = f.read()
    check('tty: the request is in the history', 'define t1' in h or 'define\\040t1' in h, h)
os.close(fd)

# ---- 12. usage errors and no kernel
for args, want in [(['--budget', '0'], 'whole number'), (['--frobnicate'], 'unknown option'),
                   (['--scripted', 'x', '--model', 'y'], 'cannot be combined'), (['--request'], 'needs a value')]:
    st, out, err = session(*args)
    check('usage %s: exit 2' % args[0], st == 2 and want in err, err)
st, out, err = L.jiti('session', '--store', os.path.join(tmp, 'nowhere'), '--scripted', script, '--request', 'x')
check('no kernel: exit 1', st == 1 and 'no kernel is running' in err, err)
st, out, err = L.jiti('session', *S, '--request', 'x')
check('no key and no script: exit 1 naming the ways', st == 1 and 'OPENAI_API_KEY' in err and '--scripted' in err, err)
keyfile = os.path.join(tmp, 'key')
with open(keyfile, 'w') as f:
    f.write(KEY + '\n')
os.chmod(keyfile, 0o644)
st, out, err = L.jiti('session', *S, '--request', 'x', env={'OPENAI_API_KEY_FILE': keyfile, 'OPENAI_BASE_URL': srv.base})
check('key file readable by others: refused', st == 1 and 'chmod 600' in err and KEY not in err, err)
os.chmod(keyfile, 0o600)
srv.queue([act({'type': 'finish', 'summary': 'ok'})])
st, out, err = L.jiti('session', *S, '--request', 'x', env={'OPENAI_API_KEY_FILE': keyfile, 'OPENAI_BASE_URL': srv.base})
check('key file 0600: used', st == 0 and requests()[0]['headers']['authorization'] == 'Bearer ' + KEY, err)

# ---- 13. a server that echoes its key, one that does not look like an API key
# (a compatible server's), in the action it proposes, its text, its errors and
# the summary: the session redacts the key's value everywhere, before anything
# reaches the kernel (events, revisions' summaries, data, its log, the journal)
# or the transcript
ECHO = 'loopback-Qm7Zx2Wp9Kt4Vn'
os.makedirs(os.path.join(tmp, 'echo'))
echo_srv = L.ModelServer(os.path.join(tmp, 'echo'), key=ECHO)
K2 = L.Kernel(tmp, 'echo-store')
leak = act({'type': 'evaluate', 'source': '(world-put :leak "%s")' % ECHO})
leak['text'] = 'the key: ' + ECHO
echo_srv.queue([leak,
                {'kind': 'raw', 'name': 'evaluate', 'arguments': '{"source": "%s' % ECHO},
                {'kind': 'failed', 'message': 'server trouble near ' + ECHO, 'code': 'server_error'},
                act({'type': 'preview', 'source': '(list "%s")' % ECHO}),
                act({'type': 'finish', 'summary': 'done, with the key %s' % ECHO})])
st, out, err = L.jiti('session', '--store', K2.store, '--request', 'Keep the value ' + ECHO + ' somewhere', '--json',
                      '--max-format-errors', '5',
                      env={'OPENAI_API_KEY': ECHO, 'OPENAI_BASE_URL': echo_srv.base, 'OPENAI_MODEL': 'echo-model'})
check('echo: the session ran to its end', st == 0, (st, out[-1500:], err[-1500:]))
check('echo: the action ran, with the key redacted', K2.eval('(values (world-get :leak))') == '"[redacted]"',
      K2.eval('(world-get :leak)'))
check('echo: not in what the session printed', ECHO not in out + err, (out + err)[-2000:])
st2, shown, e2 = L.jiti('sessions', 'show', '1', '--bodies', '--store', K2.store)
exp = os.path.join(tmp, 'echo-export.jsonl')
st3, o3, e3 = L.jiti('sessions', 'export', '1', '-o', exp, '--store', K2.store)
check('echo: the transcript', st2 == 0 and 'finish' in shown and ECHO not in shown + e2, shown[-2000:])
check('echo: the export', st3 == 0 and ECHO not in open(exp).read(), (o3, e3))
K2.stop()
check('echo: not in the events', st2 == 0 and all(ECHO not in json.dumps(e) for e in K2.events()))
raw = b''
for name in os.listdir(K2.store):
    p = os.path.join(K2.store, name)
    if os.path.isfile(p):
        with open(p, 'rb') as f:
            raw += f.read()
check('echo: not in the store\'s files (data.mdb, the journal, kernel.log)',
      ECHO.encode() not in raw and b'[redacted]' in raw and os.path.exists(os.path.join(K2.store, 'kernel.log')))
echo_srv.stop()

# ---- the key appears nowhere
st, out, err = L.jiti('sessions', '--store', K.store)
outputs.append(out)
for n in range(1, last_n() + 1):
    st, o, e = L.jiti('sessions', 'show', n, '--bodies', '--store', K.store)
    outputs.append(o + e)
check('sessions list', 'goals-met' in out and 'format-errors' in out, out)
K.stop()
everything = '\n'.join(outputs)
check('key: not in anything printed', KEY not in everything and 'Q3xY7vB9' not in everything)
check('key: not in the events', all(KEY not in json.dumps(e) for e in K.events()))
raw = b''
for name in os.listdir(K.store):
    p = os.path.join(K.store, name)
    if os.path.isfile(p):
        with open(p, 'rb') as f:
            raw += f.read()
check('key: not in the store\'s files (data.mdb, kernel.log, ...)', KEY.encode() not in raw and b'Q3xY7vB9' not in raw)
srv.stop()
L.finish()
