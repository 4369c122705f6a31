#!/usr/bin/env python3
"""jiti session --confirm on a terminal (tmux), as an operator sees it: a
proposal's source laid out as Lisp with its kind, generation and the
model's reasoning summary; the source edited on a line prefilled with it
(arrow keys edit, not ^[[D); before a resume, the pause's condition,
restarts and backtrace; a decline whose reason reaches the model.

    test_confirm_tty.py JITI
"""
import os
import shutil
import subprocess
import sys
import time

import sessionlib as L
from sessionlib import check

if not shutil.which('tmux'):
    print('tmux not installed: skipped')
    sys.exit(0)
L.setup(sys.argv)
tmp = L.tmpdir()
srv = L.ModelServer(tmp)
K = L.Kernel(tmp)
SOCK = os.path.join(tmp, 'tmux')


def tmux(*args):
    return subprocess.run(['tmux', '-S', SOCK, *args], capture_output=True, text=True).stdout


def screen():
    for _ in range(50):   # a capture can come back empty while the pane redraws
        text = tmux('capture-pane', '-p', '-J', '-S', '-200', '-t', 'c')
        if text.strip():
            return text
        time.sleep(0.1)
    return text


def wait_for(text, count=1, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if screen().count(text) >= count:
            return True
        time.sleep(0.1)
    return False


def act(a, **more):
    return dict({'kind': 'action', 'action': a}, **more)


srv.queue([act({'type': 'evaluate', 'source': '(defun price (x) "X with its tax, a line long enough to be laid out." '
                '(let ((tax (* x 1/2))) (+ x tax)))'}, reasoning='A price is X plus half of it.'),
           act({'type': 'evaluate', 'source': '(progn (defun rate-of (kind) (restart-case (error "the rate table is '
                                              'missing") (use-value (v) (* 2 v)))) (rate-of :food))'}),
           act({'type': 'resume', 'restart_id': 'p1-0', 'arguments': '(list 21)'}),
           act({'type': 'finish', 'summary': 'done'})])
env = {'OPENAI_API_KEY': 'sk-test-tty', 'OPENAI_BASE_URL': srv.base, 'OPENAI_MODEL': 'test-model',
       'JITI_SESSION_HISTORY': '', 'EDITOR': '', 'VISUAL': '', 'TERM': 'xterm'}
cmd = ' '.join(['env'] + ['%s=%s' % (k, v) for k, v in env.items()] +
               [L.JITI, 'session', '--store', K.store, '--confirm', '--no-stream', '--request', "'Define price.'",
                ';', 'echo', 'EXIT=$?', ';', 'sleep', '60'])
tmux('new-session', '-d', '-s', 'c', '-x', '110', '-y', '60', cmd)

check('the proposal: kind, generation, reasoning', wait_for('send it?') and
      'the model proposes evaluate, at generation' in screen() and
      'its reasoning: A price is X plus half of it.' in screen(), screen())
check('the source laid out as Lisp, not JSON', '(defun price (x)\n  "X with its tax' in screen() and
      '\n  (let ((tax (* x 1/2))) (+ x tax)))' in screen() and '\\n' not in screen(), screen())
tmux('send-keys', '-t', 'c', 'e', 'Enter')
check('edit: a line prefilled with the source', wait_for('source: (defun price'), screen())
tmux('send-keys', '-t', 'c', 'Left', 'Left', 'Left', 'BSpace', 'BSpace', 'BSpace', '2/5')
time.sleep(0.3)
check('edit: the arrows move in the line', '^[[' not in screen() and '(+ x 2/5)))' in screen(), screen())
tmux('send-keys', '-t', 'c', 'Enter')
check('edit: the edited proposal shown again', wait_for('send it?', 2) and '(+ x 2/5)' in screen().split('source: (defun')[-1],
      screen())
tmux('send-keys', '-t', 'c', 'y', 'Enter')
check('the second proposal', wait_for('send it?', 3), screen())
tmux('send-keys', '-t', 'c', 'y', 'Enter')
check('a resume: the pause shown before it', wait_for('send it?', 4) and
      'the world is paused' in screen().split('proposes resume')[-1] and
      'the rate table is missing' in screen().split('proposes resume')[-1] and
      'USE-VALUE' in screen().split('proposes resume')[-1] and 'RATE-OF' in screen().split('proposes resume')[-1] and
      'restart_id: p1-0' in screen(), screen())
tmux('send-keys', '-t', 'c', 'n', 'Enter')
check('a decline asks why', wait_for('why (for the model'), screen())
tmux('send-keys', '-t', 'c', 'use 50, not 21', 'Enter')
check('finish proposed', wait_for('send it?', 5), screen())
tmux('send-keys', '-t', 'c', 'y', 'Enter')
check('the session ends: exit 0', wait_for('EXIT=0'), screen())
print('--- the screen ---\n' + screen().rstrip())
check('the edited definition ran', K.eval('(price 10)') == '52/5', K.eval('(price 10)'))
log = [r for r in srv.log() if r['path'].startswith('/v1/')]
check('the reason reached the model', len(log) == 4 and 'use 50, not 21' in log[3]['body']['input'][-1]['output'],
      log[-1]['body']['input'][-1] if log else log)
tmux('kill-server')

# e with $EDITOR set: the source is edited there (a sed standing in for a person)
srv.queue([act({'type': 'evaluate', 'source': '(defun levy-test () (list :tax))'}),
           act({'type': 'finish', 'summary': 'done'})])
env['EDITOR'] = 'sed -i s/:tax/:levy/'
cmd = ' '.join(['env'] + ["%s='%s'" % (k, v) for k, v in env.items()] +
               [L.JITI, 'session', '--store', K.store, '--confirm', '--no-stream', '--request', "'Define levy-test.'",
                ';', 'echo', 'EXIT=$?', ';', 'sleep', '60'])
tmux('new-session', '-d', '-s', 'c', '-x', '110', '-y', '60', cmd)
check('editor: the proposal', wait_for('send it?'), screen())
tmux('send-keys', '-t', 'c', 'e', 'Enter')
check('editor: the edited source shown again', wait_for('send it?', 2) and '(list :levy)' in screen(), screen())
tmux('send-keys', '-t', 'c', 'y', 'Enter')
check('editor: finish', wait_for('send it?', 3), screen())
tmux('send-keys', '-t', 'c', 'y', 'Enter')
check('editor: exit 0', wait_for('EXIT=0'), screen())
check('editor: the edited definition ran', K.eval('(levy-test)') == '(:LEVY)', K.eval('(levy-test)'))
tmux('kill-server')
K.stop()
srv.stop()
L.finish()
