#!/usr/bin/env python3
"""rollback_check.py — a rollback's check does not stop the kernel.

A rollback rebuilds the target revision's world in a worker of its own and
checks it before anything is published.  That worker is driven from the
kernel's loop like the live one: while it imports and checks, the kernel
still answers what it answers itself.  The test makes a store whose
revision 2 has ENTRIES entries (100,000 by default), asks the kernel to roll
back to it, stops the checking worker (SIGSTOP) as soon as it exists, and
then asks for status: status must be answered while the rollback runs
(state "running", the rollback's attempt current) and before the
rollback's outcome, which cannot come while its checker is stopped.  A
query sent meanwhile waits for the rollback's end and sees its world.
Then the checker goes on and the rollback is accepted.

    tests/rollback_check.py JITI [--entries N]
"""
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 60   # seconds any one answer may take before the test fails


def fail(msg):
    print('FAIL', msg)
    sys.exit(1)


def run(jiti, *args):
    p = subprocess.run([jiti] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        fail('%s: %s%s' % (' '.join(args), p.stdout, p.stderr))
    return p.stdout


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b''

    def send(self, req):
        self.s.sendall(json.dumps(req).encode() + b'\n')

    def ready(self, wait):
        if b'\n' in self.buf:
            return True
        r, _, _ = select.select([self.s], [], [], wait)
        if not r:
            return False
        chunk = self.s.recv(65536)
        if not chunk:
            fail('the kernel closed a connection')
        self.buf += chunk
        return b'\n' in self.buf

    def reply(self, what):
        deadline = time.monotonic() + TIMEOUT
        while not self.ready(max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                fail('no answer to %s within %d s' % (what, TIMEOUT))
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)


def workers_of(pid):
    """The `jiti __worker` processes whose parent is pid."""
    found = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                stat = f.read()
            with open('/proc/%s/cmdline' % d, 'rb') as f:
                cmd = f.read().split(b'\0')
        except OSError:
            continue
        ppid = int(stat[stat.rindex(')') + 2:].split()[1])
        if ppid == pid and b'__worker' in cmd:
            found.append(int(d))
    return found


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    jiti = os.path.abspath(sys.argv[1])
    entries = 100000
    if '--entries' in sys.argv:
        entries = int(sys.argv[sys.argv.index('--entries') + 1])
    tmp = tempfile.mkdtemp(prefix='jiti-rollback-check.')
    store = os.path.join(tmp, 's')
    kernel = None
    stopped = None
    try:
        run(jiti, 'init', '--store', store)
        run(jiti, 'apply', '--store', store, '--fuel', '0', '--heap', '0', '-e',
            '(dotimes (i %d) (world-put i i))' % entries)
        run(jiti, 'apply', '--store', store, '-e', '(world-put :after 1)')   # revision 3
        log = open(os.path.join(tmp, 'kernel.log'), 'w')
        kernel = subprocess.Popen([jiti, 'kernel', '--store', store], stderr=log)
        sock = os.path.join(store, 'kernel.sock')
        for _ in range(TIMEOUT * 10):
            p = subprocess.run([jiti, 'status', '--store', store], capture_output=True, text=True)
            if 'idle' in p.stdout:
                break
            time.sleep(0.1)
        else:
            fail('the kernel did not start')
        st = Conn(sock)
        st.send({'op': 'status', 'id': 0})
        live = st.reply('status')['worker_pid']

        rb, query = Conn(sock), Conn(sock)
        rb.send({'op': 'rollback', 'id': 1, 'revision': 2})
        # the checking worker: the kernel's second worker
        deadline = time.monotonic() + TIMEOUT
        while stopped is None:
            if rb.ready(0):
                fail('the rollback ended before its checking worker was seen: %s' % rb.reply('rollback'))
            if time.monotonic() >= deadline:
                fail('no checking worker within %d s' % TIMEOUT)
            others = [w for w in workers_of(kernel.pid) if w != live]
            if others:
                stopped = others[0]
                os.kill(stopped, signal.SIGSTOP)
        query.send({'op': 'inspect', 'id': 2, 'kind': 'data', 'name': ':after'})
        st.send({'op': 'status', 'id': 3})
        s = st.reply('status while the rollback checks')
        # answered while the rollback runs, before its outcome
        if s.get('state') != 'running' or not s.get('current_attempt'):
            fail('status while the rollback checks: %s' % s)
        if rb.ready(0):
            fail('the rollback was answered while its checking worker was stopped: %s' % rb.reply('rollback'))
        if query.ready(0):
            fail('a query was answered while the rollback checked: %s' % query.reply('inspect'))
        os.kill(stopped, signal.SIGCONT)
        stopped = None
        r = rb.reply('rollback')
        if not r.get('ok') or r.get('outcome') != 'accepted' or r.get('target') != 2 or r.get('revision') != 4:
            fail('rollback: %s' % r)
        if r.get('generation', 0) <= s['generation']:
            fail('the rollback did not move the generation: %s after %s' % (r, s))
        q = query.reply('inspect')
        if q.get('ok') or q.get('code') != 'not-found':
            fail('the query did not see the rolled-back world: %s' % q)
        st.send({'op': 'status', 'id': 4})
        s = st.reply('status after the rollback')
        if s.get('current_attempt') or s.get('revision') != 4:
            fail('status after the rollback: %s' % s)
        print('ok rollback-check-status-first (%d entries)' % entries)
        print('ok rollback-check-accepted')
        print('ok rollback-check-query-after')
        return 0
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        if kernel is not None:
            subprocess.run([jiti, 'stop', '--store', store], capture_output=True)
            try:
                kernel.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kernel.kill()
                kernel.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
