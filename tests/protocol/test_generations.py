"""Generations never go back and are never handed out twice for two worlds:
across stop/start, kill -9 of the kernel or of its worker, offline commands
(apply, rollback, invariant), recover-session, failed calls and calls that
change nothing.  First each path on its own (the reproductions), then a
property test over random sequences of all of them.

  JITI_GEN_SEED=n   start the property test at seed n (printed on failure)
  JITI_GEN_STEPS=n  steps per history (default 40; fewer under slow builds)
"""
import os
import random

import proto
from proto import Kernel, expect_error, expect_ok, wait_for

PAUSING = '(progn (world-put :p 1) (restart-case (car 5) (use-value (v) v)))'


def run(R):
    R.run('generations/stop-offline-apply-start', stop_offline_apply_start)
    R.run('generations/stop-start', stop_start)
    R.run('generations/kill-9-kernel', kill_kernel)
    R.run('generations/kill-9-worker', kill_worker)
    R.run('generations/failed-calls-and-restart', failed_calls_restart)
    R.run('generations/unchanged-definition', unchanged_definition)
    R.run('generations/offline-rollback-invariant-recover', offline_commands)
    R.run('generations/property', property_test)


def jiti(*args, check=True):
    return proto.run_jiti(*args, check=check)


def act(k, gen, source):
    return k.request({'op': 'act', 'generation': gen, 'action': {'type': 'evaluate', 'source': source}})


def stop_offline_apply_start():
    """The finding: a view of revision 12 stayed current after a stop, an offline
    apply (revision 13) and a restart."""
    with Kernel() as k:
        for i in range(5):
            expect_ok(k.call('(world-put :n %d)' % i))
        for _ in range(3):   # generations that published nothing
            r = expect_ok(act(k, k.gen(), PAUSING), status='paused')
            expect_error(k.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}),
                         'aborted')
        st = k.status()
        g, rev = st['generation'], st['revision']
        k.stop()
        jiti('apply', '--store', k.store, '-e', '(world-put :offline 1)')
        k.start()
        st2 = k.status()
        assert st2['revision'] == rev + 1 and st2['generation'] > g, (st, st2)
        expect_error(act(k, g, '(world-put :n 99)'), 'stale')
        assert k.value('(world-get :n)') == '4'


def stop_start():
    with Kernel() as k:
        expect_ok(k.call('(world-put :a 1)'))
        r = expect_ok(act(k, k.gen(), PAUSING), status='paused')   # a pause moves it
        expect_error(k.request({'op': 'act', 'generation': r['generation'], 'action': {'type': 'abort'}}), 'aborted')
        g = k.gen()
        k.stop()
        k.start()
        assert k.gen() > g, (g, k.gen())
        expect_error(act(k, g, '(world-put :a 2)'), 'stale')


def kill_kernel():
    """kill -9 while paused: the paused world's generation is never reused."""
    with Kernel() as k:
        expect_ok(k.call('(world-put :a 1)'))
        r = expect_ok(act(k, k.gen(), PAUSING), status='paused')
        g = r['generation']
        assert k.gen() == g
        k.proc.kill()
        k.proc.wait()
        k.start()
        assert k.gen() > g, (g, k.gen())
        expect_error(act(k, g, '(world-put :a 2)'), 'stale')
        assert k.value('(world-get :p)') == 'NIL'   # the paused write died with it


def kill_worker():
    with Kernel() as k:
        expect_ok(k.call('(world-put :a 1)'))
        g = k.gen()
        wpid = k.status()['worker_pid']
        os.kill(wpid, 9)
        def fresh():
            st = k.status()
            return st['worker_pid'] not in (0, wpid) and st['state'] == 'idle'
        wait_for(fresh, 30 * proto.SLOW, 'a fresh worker')
        assert k.gen() > g
        expect_error(act(k, g, '(world-put :a 2)'), 'stale')


def failed_calls_restart():
    """The finding: generation 5 -> 2 after three failed calls and a restart.
    Failed calls that never paused leave the generation alone; a restart
    counts on past it."""
    with Kernel() as k:
        expect_ok(k.call('(world-put :a 1)'))
        g = k.gen()
        for _ in range(3):
            r = expect_error(k.call('(progn (world-put :a 0) (car 1))'), 'error')
            assert r['generation'] == g, r
        expect_ok(act(k, g, '(world-get :a)'))   # a view made before the failures is still current
        k.stop()
        k.start()
        assert k.gen() > g


def unchanged_definition():
    """The finding: re-evaluating an identical defun moved the generation."""
    with Kernel() as k:
        expect_ok(k.call('(defun f (x) (* x 2))'))
        g = k.gen()
        rev = k.status()['revision']
        for src in ['(defun f (x) (* x 2))', '(world-put :z 1)', '(world-put :z 1)']:
            r = expect_ok(k.call(src))
            if src.startswith('(defun'):
                assert r['generation'] == g and r['revision'] == rev and r['changes'] == [], r
        r = expect_ok(k.call('(world-put :z 1)'))
        assert r['changes'] == [] and r['generation'] == k.gen(), r
        g2 = k.gen()
        expect_ok(act(k, g2, '(defun f (x) (* x 2))'))
        assert k.gen() == g2


def offline_commands():
    with Kernel() as k:
        expect_ok(k.call('(world-put :a 1)'))
        expect_ok(k.call('(world-put :a 2)'))
        g = k.gen()
        k.stop()
        seen = [g]
        for args in (['rollback', 'previous'], ['invariant', 'add', 'a-positive', '(> (world-get :a) 0)'],
                     ['recover-session'], ['apply', '-e', '(+ 1 2)']):
            jiti(*(args + ['--store', k.store]))
            k.start()
            gk = k.gen()
            assert gk > seen[-1], (args, seen, gk)
            expect_error(act(k, seen[-1], '(world-put :a 3)'), 'stale')
            seen.append(gk)
            k.stop()


# ------------------------------------------------------------ the property

class History:
    """One random history on one store; every generation observed is noted with
    the world it was observed with (CURRENT's revision, or the pause it showed)."""

    def __init__(self, rnd, steps):
        self.rnd = rnd
        self.steps = steps
        self.k = None
        self.log = []
        self.seen = {}        # generation -> world
        self.last = 0         # the largest generation observed so far
        self.views = []       # generations of views taken before the last restart
        self.paused = None    # generation of the pause showing, if any
        self.n = 0

    def note(self, gen, world, what):
        self.log.append('%s -> g%d %s' % (what, gen, world))
        prev = self.seen.get(gen)
        assert prev is None or prev == world, 'generation %d was handed out for %s and for %s\n%s' % (
            gen, prev, world, '\n'.join(self.log[-40:]))
        assert gen >= self.last or gen in self.seen, 'generation went back from %d to %d\n%s' % (
            self.last, gen, '\n'.join(self.log[-40:]))
        self.seen[gen] = world
        self.last = max(self.last, gen)

    def observe(self, what):
        st = self.k.status()
        world = ('paused', st['current_attempt']) if st['state'] == 'paused' else ('rev', st['revision'])
        self.note(st['generation'], world, what + ' status')
        return st

    def restarted(self, what):
        old = list(self.views)
        st = self.observe(what)
        for g in old:
            r = act(self.k, g, '(world-put :stale 1)')
            assert r.get('code') == 'stale', 'a view of generation %d made before %s ran: %s\n%s' % (
                g, what, proto.snippet(r), '\n'.join(self.log[-40:]))
        self.views = [st['generation']]

    def step(self):
        rnd, k = self.rnd, self.k
        running = k.alive()
        if not running:
            op = rnd.choice(['start', 'start', 'apply', 'noop-apply', 'rollback', 'invariant', 'recover'])
        elif self.paused is not None:
            op = rnd.choice(['abort', 'resume', 'stop', 'kill', 'kill-worker'])
        else:
            op = rnd.choice(['write', 'write', 'read', 'fail', 'same', 'pause', 'preview', 'stop', 'kill',
                             'kill-worker'])
        self.n += 1
        what = '%d:%s' % (self.n, op)
        store = k.store
        if op == 'start':
            k.start()
            self.restarted(what)
        elif op in ('apply', 'noop-apply', 'rollback', 'invariant', 'recover'):
            args = {'apply': ['apply', '-e', '(world-put :k %d)' % rnd.randrange(1000)],
                    'noop-apply': ['apply', '-e', '(world-get :k)'],
                    'rollback': ['rollback', 'previous'],
                    'invariant': ['invariant', 'add', 'i%d' % rnd.randrange(3), 't'],
                    'recover': ['recover-session']}[op]
            r = jiti(*(args + ['--store', store]), check=False)
            self.log.append('%s: exit %d %s' % (what, r.returncode, (r.stdout + r.stderr).strip()[-200:]))
        elif op == 'stop':
            k.stop()
            self.paused = None
        elif op == 'kill':
            k.proc.kill()
            k.proc.wait()
            self.paused = None
        elif op == 'kill-worker':
            wpid = k.status()['worker_pid']
            if wpid:
                os.kill(wpid, 9)
            def fresh():
                st = k.status()
                return st['state'] not in ('starting', 'running') and st['worker_pid'] not in (0, wpid)
            wait_for(fresh, 30 * proto.SLOW, 'a fresh worker')
            self.paused = None
            self.restarted(what)
        elif op in ('write', 'read', 'fail', 'same', 'preview'):
            src = {'write': '(world-put :k %d)' % rnd.randrange(1000), 'read': '(world-get :k)',
                   'fail': '(progn (world-put :k -1) (car 1))', 'same': '(defun same () 1)',
                   'preview': '(world-put :k -2)'}[op]
            r = k.request({'op': 'preview' if op == 'preview' else 'call', 'source': src})
            world = ('rev', r['revision']) if r.get('ok') else ('rev', k.status()['revision'])
            self.note(r['generation'], world, what)
            self.views.append(r['generation'])
        elif op == 'pause':
            r = expect_ok(act(k, k.gen(), PAUSING), status='paused')
            self.paused = r['generation']
            st = self.observe(what)
            assert st['generation'] == self.paused
            self.views.append(self.paused)
        elif op in ('abort', 'resume'):
            action = {'type': 'abort'} if op == 'abort' else {'type': 'resume', 'restart_id': 'p1-0',
                                                               'arguments': '(list 1)'}
            r = k.request({'op': 'act', 'generation': self.paused, 'action': action})
            world = ('rev', r.get('revision') or k.status()['revision'])
            self.note(r['generation'], world, what)
            assert r['generation'] > self.paused
            self.paused = None
            self.views.append(r['generation'])
        if k.alive() and op not in ('stop', 'kill'):
            self.observe(what)

    def run(self):
        for _ in range(self.steps):
            self.step()


def property_test():
    seed0 = int(os.environ.get('JITI_GEN_SEED', '20251201'))
    steps = int(os.environ.get('JITI_GEN_STEPS', '0')) or (12 if proto.SLOW > 1 else 40)
    histories = 1 if proto.SLOW > 1 else 3
    for seed in range(seed0, seed0 + histories):
        h = History(random.Random(seed), steps)
        k = Kernel()
        h.k = k
        try:
            h.run()
        except Exception as e:
            raise AssertionError('seed %d (JITI_GEN_SEED=%d): %s' % (seed, seed, e))
        finally:
            k.stop()
            k.cleanup()
            if k.problems:
                raise AssertionError('; '.join(k.problems))
