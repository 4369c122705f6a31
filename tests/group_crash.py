#!/usr/bin/env python3
"""group_crash.py — kill -9 during group commits of the kernel daemon.

Each round starts `jiti-testhooks kernel` on a store, runs CLIENTS clients
that each send writing calls one after the other (one outstanding each, so
the kernel publishes them in groups), and kills the kernel in the middle:

- at an injected point of a publish (JITI_TEST_KILL_AT=POINT:N, the kernel
  kills itself: before the write transaction, after a revision's entries or
  its manifest — the Nth revision, so often inside a group — before
  the write's journal record is appended, after it (the revisions in the journal, not
  yet synced), in the store writer before and after the journal's
  fdatasync, and around a checkpoint's commit into data.mdb), or at a
  failed sync
  (JITI_TEST_FAIL_SYNC=N: the kernel stops at once, answering nobody),
- or with kill -9 from outside after a random delay,
- or by killing only its worker (the kernel stays; held calls are
  interrupted, published ones answered),
- or by failing a group's publication (JITI_TEST_FAIL_PUBLISH=N: the group
  and everything run on top of it are undone, their clients get
  publication-failed, later calls go on), before the store or (N:store)
  inside its transaction, after the group's other puts, which the store
  then takes back.

Client c's k-th write is
    (world-put (list :w c k) (world-put :seq (1+ (world-get :seq 0))))
so the store records, for every write it kept, its position in the order of
commits.  After each round the store is checked offline (`jiti
recover-session --full`: history verified, the world imported, invariants
run) and then through a fresh kernel:
- every acknowledged write is there, with the position its reply gave;
- the positions are exactly 1..:seq: no gap, none twice;
- each client's writes are there in its order, and beyond its last
  acknowledged one at most the one it had in flight;
- no write whose reply said it failed is there.

    tests/group_crash.py JITI-TESTHOOKS [--rounds N] [--clients N] [--slow F]
    JITI_GROUP_SOAK=1000 tests/group_crash.py ...   (soak; not part of CI)
    JITI_GROUP_SEED=S                                 (repeat a run)
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

POINTS = ['before-txn', 'after-entries', 'after-manifest', 'before-commit', 'after-commit', 'before-sync',
          'after-sync', 'fail-sync', 'before-checkpoint', 'after-checkpoint']
WRITE = '(world-put (list :w %d %d) (world-put :seq (1+ (world-get :seq 0))))'


class Client(threading.Thread):
    """Writes one call at a time until the connection breaks or stop is set."""

    def __init__(self, path, c, first_k, stop):
        super().__init__(daemon=True)
        self.path, self.c, self.k, self.stop = path, c, first_k, stop
        self.acked = {}        # k -> position its reply gave
        self.failed = set()    # k whose reply said nothing was kept
        self.inflight = None   # k sent, no reply

    def run(self):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(30)
            s.connect(self.path)
        except OSError:
            return
        buf = b''
        try:
            while not self.stop.is_set():
                self.k += 1
                req = {'op': 'call', 'source': WRITE % (self.c, self.k), 'id': self.k}
                self.inflight = self.k
                s.sendall(json.dumps(req).encode() + b'\n')
                while b'\n' not in buf:
                    d = s.recv(65536)
                    if not d:
                        return
                    buf += d
                line, buf = buf.split(b'\n', 1)
                r = json.loads(line)
                if r.get('ok'):
                    self.acked[self.k] = int(r['value'])
                elif r.get('code') in ('publication-failed', 'interrupted', 'shutting-down', 'busy'):
                    # nothing of it was kept (interrupted: never published)
                    self.failed.add(self.k)
                else:
                    raise AssertionError('client %d write %d: unexpected reply %s' % (self.c, self.k, r))
                self.inflight = None
        except (OSError, ValueError):
            return
        finally:
            s.close()


class Round:
    def __init__(self, jiti, store, tmp, slow):
        self.jiti, self.store, self.tmp, self.slow = jiti, store, tmp, slow

    def start_kernel(self, env=None):
        log = open(os.path.join(self.tmp, 'kernel.log'), 'ab')
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.Popen([self.jiti, 'kernel', '--store', self.store], stdout=log, stderr=log, env=e)
        sock = os.path.join(self.store, 'kernel.sock')
        deadline = time.time() + 60 * self.slow
        while time.time() < deadline:
            if p.poll() is not None:
                raise AssertionError('the kernel exited at start-up (%s)' % p.returncode)
            if os.path.exists(sock):
                try:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect(sock)
                    s.sendall(b'{"op":"status"}\n')
                    if b'"ok":true' in s.recv(65536):
                        s.close()
                        return p
                    s.close()
                except OSError:
                    pass
            time.sleep(0.05)
        p.kill()
        raise AssertionError('the kernel did not start')

    def call(self, source):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60 * self.slow)
        s.connect(os.path.join(self.store, 'kernel.sock'))
        s.sendall(json.dumps({'op': 'call', 'source': source}).encode() + b'\n')
        buf = b''
        while b'\n' not in buf:
            d = s.recv(1 << 20)
            if not d:
                raise AssertionError('the kernel closed the connection')
            buf += d
        s.close()
        r = json.loads(buf.split(b'\n', 1)[0])
        if not r.get('ok'):
            raise AssertionError('%s: %s' % (source, r))
        return r['value']


ROWS_PAGE = 20000


def parse_rows(text):
    """'((c k pos) ...)' -> list of tuples ('NIL': none, a round killed before any write)."""
    if text.strip() == 'NIL':
        return []
    nums = text.replace('(', ' ').replace(')', ' ').split()
    vals = [int(x) for x in nums]
    return [tuple(vals[i:i + 3]) for i in range(0, len(vals), 3)]


def check(rnd, clients, failed_before):
    """The store after a crash against what the clients were told."""
    text = rnd.call("(let ((out nil)) (dolist (k (world-keys) out) (when (and (consp k) (eq (car k) :w))"
                    " (push (list (second k) (third k) (world-get k)) out))))")
    if not text.endswith('...'):
        rows = parse_rows(text)
    else:   # a printed value is cut at 1 MiB, and 25 rounds may write more rows than that holds: pages
        rows = []
        keys = "(stable-sort (remove-if-not (lambda (k) (and (consp k) (eq (car k) :w))) (world-keys)) #'< :key #'world-get)"
        nkeys = int(rnd.call("(length %s)" % keys))
        for start in range(0, nkeys, ROWS_PAGE):
            rows += parse_rows(rnd.call("(mapcar (lambda (k) (list (second k) (third k) (world-get k)))"
                                        " (subseq %s %d %d))" % (keys, start, min(nkeys, start + ROWS_PAGE))))
    seq = int(rnd.call('(world-get :seq 0)'))
    positions = sorted(p for _, _, p in rows)
    if positions != list(range(1, seq + 1)):
        raise AssertionError('positions are not exactly 1..%d: %d rows, first problems %s' % (
            seq, len(rows), [p for i, p in enumerate(positions) if p != i + 1][:5]))
    by_client = {}
    for c, k, p in rows:
        by_client.setdefault(c, {})[k] = p
    for cl in clients:
        have = by_client.get(cl.c, {})
        for k, p in cl.acked.items():
            if have.get(k) != p:
                raise AssertionError('client %d: acknowledged write %d (position %d) is %s' % (
                    cl.c, k, p, 'missing' if k not in have else 'at %d' % have[k]))
        for k in cl.failed | failed_before.get(cl.c, set()):
            if k in have:
                raise AssertionError('client %d: write %d was reported failed but is there' % (cl.c, k))
        last = max(cl.acked) if cl.acked else cl.first
        for k in have:
            if k > last and k != cl.inflight:
                raise AssertionError('client %d: write %d is there, but it was never sent or acknowledged '
                                     '(last acknowledged %d, in flight %s)' % (cl.c, k, last, cl.inflight))
        ks = sorted(have)
        if [have[k] for k in ks] != sorted(have.values()):
            raise AssertionError('client %d: its writes are not in its order' % cl.c)
    return seq, len(rows)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    jiti = os.path.abspath(args[0])
    rounds, nclients, slow = 24, 8, 1.0
    i = 1
    while i < len(args):
        if args[i] == '--rounds':
            rounds = int(args[i + 1]); i += 2
        elif args[i] == '--clients':
            nclients = int(args[i + 1]); i += 2
        elif args[i] == '--slow':
            slow = float(args[i + 1]); i += 2
        else:
            print('group_crash.py: unknown argument %s' % args[i], file=sys.stderr)
            return 2
    if os.environ.get('JITI_GROUP_SOAK'):
        rounds = int(os.environ['JITI_GROUP_SOAK'])
    seed = int(os.environ.get('JITI_GROUP_SEED', str(int(time.time()) ^ os.getpid())))
    rng = random.Random(seed)
    print('group crash test: %d rounds, %d clients, seed %d' % (rounds, nclients, seed), flush=True)
    tmp = tempfile.mkdtemp(prefix='jiti-gc.', dir='/tmp')
    store = os.path.join(tmp, 's')
    passed = failed = 0
    kinds = {}
    t0 = time.time()
    next_k = {}
    failed_writes = {}
    try:
        for n in range(rounds):
            if n % 25 == 0:   # a fresh store now and then: the checks read every row
                shutil.rmtree(store, ignore_errors=True)
                next_k, failed_writes = {}, {}
                subprocess.run([jiti, 'init', '--store', store], check=True, stdout=subprocess.DEVNULL)
            rnd = Round(jiti, store, tmp, slow)
            mode = n % 6
            env = {}
            if mode in (0, 1, 2):
                point = POINTS[rng.randrange(len(POINTS))]
                # a checkpoint comes after a second of writing, a publish far more often
                nth = 1 + rng.randrange(2 if 'checkpoint' in point else 24)
                if point == 'fail-sync':
                    env['JITI_TEST_FAIL_SYNC'] = str(nth)
                else:
                    env['JITI_TEST_KILL_AT'] = '%s:%d' % (point, nth)
                what = 'injected %s:%d' % (point, nth)
            elif mode == 3:
                what = 'kill -9 from outside'
            elif mode == 4:
                what = 'worker killed'
            else:
                env['JITI_TEST_FAIL_PUBLISH'] = str(1 + rng.randrange(4)) + rng.choice(['', ':store'])
                what = 'publication failed (group %s)' % env['JITI_TEST_FAIL_PUBLISH']
            kinds[what.split(' ')[0]] = kinds.get(what.split(' ')[0], 0) + 1
            p = q = None
            try:
                p = rnd.start_kernel(env)
                stop = threading.Event()
                clients = []
                for c in range(nclients):
                    cl = Client(os.path.join(store, 'kernel.sock'), c, next_k.get(c, 0), stop)
                    cl.first = next_k.get(c, 0)
                    clients.append(cl)
                for cl in clients:
                    cl.start()
                delay = (0.05 + rng.random() * 0.4) * slow
                if mode in (0, 1, 2):
                    try:
                        p.wait(timeout=3 * slow)   # it kills itself when the point comes
                    except subprocess.TimeoutExpired:
                        p.kill()                   # the point never came: a plain kill -9
                        p.wait()
                elif mode == 3:
                    time.sleep(delay)
                    p.kill()
                    p.wait()
                elif mode == 4:
                    time.sleep(delay)
                    pid = int(json.loads(subprocess.run([jiti, 'status', '--store', store, '--json'],
                                                        capture_output=True, text=True).stdout)['worker_pid'])
                    os.kill(pid, signal.SIGKILL)
                    time.sleep(delay)
                    p.kill()
                    p.wait()
                else:
                    time.sleep(0.6 * slow)
                    p.kill()
                    p.wait()
                stop.set()
                for cl in clients:
                    cl.join(30 * slow)
                # offline: history verified, world imported, invariants run
                rec = subprocess.run([jiti, 'recover-session', '--full', '--store', store], capture_output=True,
                                     text=True)
                if rec.returncode != 0:
                    raise AssertionError('recover-session: %s%s' % (rec.stdout, rec.stderr))
                q = rnd.start_kernel()
                try:
                    seq, nrows = check(rnd, clients, failed_writes)
                finally:
                    q.terminate()
                    q.wait()
                for cl in clients:   # a write in flight may be there or not: both are allowed
                    next_k[cl.c] = max([cl.k] + list(cl.acked))
                    failed_writes.setdefault(cl.c, set()).update(cl.failed)
                passed += 1
                if os.environ.get('JITI_GROUP_DEBUG'):
                    print('round %d (%s): %d writes kept, %d acknowledged' % (
                        n, what, seq, sum(len(cl.acked) for cl in clients)), flush=True)
            except AssertionError as e:
                failed += 1
                print('FAIL round %d (%s), seed %d: %s' % (n, what, seed, e), flush=True)
                for proc in (p, q):   # the kernels this round started
                    if proc is not None and proc.poll() is None:
                        proc.kill()
                        proc.wait()
                if failed >= 3:
                    break
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('%d rounds (%s) in %.1f s' % (passed + failed, ', '.join('%s %d' % kv for kv in sorted(kinds.items())),
                                         time.time() - t0))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
