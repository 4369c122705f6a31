#!/usr/bin/env python3
"""The repair loop's figures, measured against a running kernel that serves
the vending machine (bench/repair_loop_bench.sh sets it up and runs this).

  repair_loop_bench.py run --jiti J --store S --log KERNEL_LOG --scripted F
                           --buggy FILE [--rounds 20] [--calls 2000]
                           [--verify-seconds 10] [--parts 1,2,3] [--raw FILE]
  repair_loop_bench.py load SOCKET SOURCE   (internal: the concurrent caller)
  repair_loop_bench.py events SOCKET FILE   (internal: the event recorder)

Prints three markdown tables: the loop from a failing call to its applied
repair and how it splits; application calls with and without a slow
verification beside them; the apply's pause.  Times are measured, never
asserted.  Every timestamp of this process and of its children (`load`,
`events`) is time.perf_counter(), CLOCK_MONOTONIC on Linux: one clock.
"""
import json
import math
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

now = time.perf_counter

READ_FORM = '(machine-credit *machine*)'
WRITE_FORM = '(insert-coin 5)'
FAILING_CALL = '(dispense "A1")'
LOOP_CANDIDATE = '(defun dispense (code) (loop) code)'


class Conn:
    """One connection to the kernel; replies matched by id, events kept."""

    def __init__(self, sock_path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock_path)
        self.buf = b''
        self.next_id = 0
        self.events = []   # (receipt time, event) of a subscribed connection
        self.replies, self.reply_time = {}, {}   # replies read by pump, by id

    def close(self):
        self.s.close()

    def send(self, req):
        self.next_id += 1
        req = dict(req, id=self.next_id)
        self.s.sendall(json.dumps(req).encode() + b'\n')
        return self.next_id

    def _line(self, block=True):
        while b'\n' not in self.buf:
            if not block:
                return None
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise RuntimeError('the kernel closed the connection')
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def reply(self, rid):
        if rid in self.replies:
            self.reply_time.pop(rid)
            return self.replies.pop(rid)
        while True:
            m = self._line()
            if 'ok' not in m:
                self.events.append((now(), m))
            elif m.get('id') == rid:
                return m

    def request(self, req):
        return self.reply(self.send(req))

    def call(self, source):
        return self.request({'op': 'call', 'source': source})

    def pump(self):
        """Read what has arrived (the socket is readable): events and
        replies kept, with the time they were read."""
        chunk = self.s.recv(1 << 16)
        if not chunk:
            raise RuntimeError('the kernel closed the subscribed connection')
        t = now()
        self.buf += chunk
        while True:
            m = self._line(block=False)
            if m is None:
                return
            if 'ok' not in m:
                self.events.append((t, m))
            else:
                self.replies[m.get('id')] = m
                self.reply_time[m.get('id')] = t


class EventTap:
    """The kernel's events, each timestamped as it arrives by a child
    process of its own (so that the bench's own work, spawning a
    supervisor, never delays a timestamp), which writes them to a file
    read here: events = [(time, event)]."""

    def __init__(self, sock_path, path):
        self.path, self.off, self.buf, self.events = path, 0, b'', []
        open(path, 'w').close()
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), 'events', sock_path, path])
        end = now() + 10
        while not self.events:
            self.pump()
            if now() > end or self.p.poll() is not None:
                raise RuntimeError('the event recorder did not subscribe')
            time.sleep(0.01)
        self.events = []

    def pump(self):
        with open(self.path, 'rb') as f:
            f.seek(self.off)
            data = f.read()
        self.off += len(data)
        self.buf += data
        while b'\n' in self.buf:
            line, self.buf = self.buf.split(b'\n', 1)
            t, e = json.loads(line)
            self.events.append((t, e))

    def forget(self):
        """Drop the events read so far."""
        self.pump()
        self.events = []

    def close(self):
        self.p.terminate()
        self.p.wait()


def events_main(sock_path, path):
    """The event recorder: one subscribed connection; each line read
    written to path as [time, event] (a first line once subscribed)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    c = Conn(sock_path)
    out = open(path, 'a')
    r = c.request({'op': 'subscribe'})
    if not r.get('ok'):
        sys.exit('events: cannot subscribe: %s' % r.get('message'))
    out.write(json.dumps([now(), {'subscribed': True}]) + '\n')
    out.flush()
    while True:
        chunk = c.s.recv(1 << 16)
        t = now()
        if not chunk:
            return
        c.buf += chunk
        while b'\n' in c.buf:
            line, c.buf = c.buf.split(b'\n', 1)
            if line.strip():
                out.write(json.dumps([t, json.loads(line)]) + '\n')
        out.flush()


def pct(xs, p):
    """The nearest-rank percentile p of xs (None when empty)."""
    if not xs:
        return None
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def ms(x):
    return '–' if x is None else '%.1f' % x


def ms2(x):
    return '–' if x is None else '%.2f' % x


def loadavg():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


class Bench:
    def __init__(self, a):
        self.jiti, self.store, self.log, self.scripted = a['jiti'], a['store'], a['log'], a['scripted']
        self.sock = os.path.join(self.store, 'kernel.sock')
        with open(a['buggy']) as f:
            self.buggy = f.read()
        self.app = Conn(self.sock)
        self.log_seen = 0   # bytes of the kernel log already read
        self.raw_path = a.get('raw')
        self.tap = EventTap(self.sock, self.log + '.events.jsonl')

    # -------------------------------------------------------- the kernel log

    def log_wait(self, pattern, timeout=5.0):
        """The first match of pattern in the kernel log past what was read
        (the log's lines of a transaction come with its events, ~10 ms
        later); None after timeout."""
        rx = re.compile(pattern)
        end = now() + timeout
        while True:
            with open(self.log, 'rb') as f:
                f.seek(self.log_seen)
                text = f.read().decode('utf-8', 'replace')
            cut = text.rfind('\n') + 1
            for line in text[:cut].splitlines():
                m = rx.search(line)
                if m:
                    return m
            if now() > end:
                return None
            time.sleep(0.005)

    def log_skip(self):
        self.log_seen = os.path.getsize(self.log)

    def must(self, r, what):
        if not r.get('ok'):
            raise RuntimeError('%s: %s' % (what, r.get('message')))
        return r

    # -------------------------------------------------------- one round of the loop

    def round(self, way):
        """Restore the bug, overpay, and have the incident repaired: by a
        `jiti supervise --until-idle` spawned for it (way 'spawn'), or by
        the resident supervisor (way 'resident'; 'pause': the call waits
        for its repair, mode pause).  A dict of timestamps (perf_counter)
        and the kernel's own durations (ms)."""
        self.log_skip()
        subprocess.run([self.jiti, 'apply', '--store', self.store, '-e', self.buggy], check=True,
                       stdout=subprocess.DEVNULL)
        m = self.log_wait(r'attempt \d+ apply accepted -> revision \d+ \(([\d.]+) ms')
        restore_ms = float(m.group(1)) if m else None
        # colas back in the slot (mode pause sells one a round), no credit
        self.must(self.app.call('(progn (setf (product-stock (gethash "A1" (machine-slots *machine*))) 10) '
                                '(setf (machine-credit *machine*) 0))'), 'restock')
        self.must(self.app.call('(insert-coin 100)'), 'insert a coin')
        self.must(self.app.call('(insert-coin 100)'), 'insert a coin')
        ev = self.tap
        ev.forget()
        self.log_skip()
        r, n, rev, lines = {'restore_ms': restore_ms}, None, None, []

        def incident_events():
            return [(t, e) for t, e in ev.events
                    if e.get('event') == 'incident' and e.get('function') == 'DISPENSE' and t >= r['call']]

        def repaired():
            return any(e.get('status') == 'repaired' for _, e in incident_events())

        deadline = now() + 120
        r['call'] = now()
        if way == 'pause':   # the reply comes once the call ran again on the repair
            rid = self.app.send({'op': 'call', 'source': FAILING_CALL})
            while rid not in self.app.replies:
                rd, _, _ = select.select([self.app.s], [], [], 0.002)
                ev.pump()
                if self.app.s in rd:
                    self.app.pump()
                if now() > deadline:
                    raise RuntimeError('the paused call got no reply in 120 s')
            r['answered'] = self.app.reply_time[rid]
            rep = self.app.replies.pop(rid)
            if not rep.get('ok') or not rep.get('value', '').startswith('("cola"'):
                raise RuntimeError('the paused call was answered %s' % json.dumps(rep)[:300])
        else:
            rep = self.app.call(FAILING_CALL)
            r['failed'] = now()
            inc = rep.get('incident')
            if rep.get('ok') or not inc or inc.get('joined'):
                raise RuntimeError('the overpaid call did not open an incident: %s' % json.dumps(rep)[:300])
            n = inc['id']
        if way == 'spawn':
            errf = open(os.devnull, 'w')
            r['spawn'] = now()
            p = subprocess.Popen([self.jiti, 'supervise', '--store', self.store, '--until-idle', '--scripted',
                                  self.scripted], stdout=subprocess.PIPE, stderr=errf)
            out = b''
            while True:
                rd, _, _ = select.select([p.stdout], [], [], 0.002)
                ev.pump()
                if p.stdout in rd:
                    chunk = os.read(p.stdout.fileno(), 1 << 16)
                    t = now()
                    if not chunk:
                        break
                    out += chunk
                    while b'\n' in out:
                        line, out = out.split(b'\n', 1)
                        lines.append((t, line.decode()))
                if now() > deadline:
                    p.kill()
                    break
            rc = p.wait()
            r['exit'] = now()
            errf.close()
            for t, line in lines:
                if line.startswith('supervising '):
                    r['supervising'] = t
                m = re.search(r'repaired by revision (\d+)', line)
                if m:
                    rev = int(m.group(1))
            if rc != 0 or rev is None:
                raise RuntimeError('supervise did not repair incident %d (exit %d): %s' %
                                   (n, rc, ' / '.join(l for _, l in lines)))
        # the repaired event (it may come after the supervisor read its reply)
        while not repaired():
            time.sleep(0.002)
            ev.pump()
            if now() > deadline:
                raise RuntimeError('incident %s was not repaired in 120 s' % n)
        for t, e in incident_events():
            if n is None and e.get('status') == 'captured':
                n = e.get('incident')
            if e.get('incident') == n:
                r.setdefault(e.get('status'), t)
        rec = self.must(self.app.request({'op': 'incident', 'incident': n}), 'read the incident')['incident']
        rev = rev or rec.get('revision')
        m = self.log_wait(r'attempt \d+ repair accepted -> revision %d \(([\d.]+) ms' % rev)
        r['apply_ms'] = float(m.group(1)) if m else None
        notes = [x['entry'] for x in rec.get('log', []) if x.get('kind') == 'verification']
        passed = [x for x in notes if x.get('passed')]
        r['verify_ms'] = passed[-1]['ms'] if passed else None
        rep_ = passed[-1].get('report') if passed else None
        r['shadow_ms'] = rep_.get('elapsed_ms') if isinstance(rep_, dict) else None
        r['incident'] = n
        return r

    def rounds(self, count, way, label):
        """count rounds; with way resident or pause, one supervisor started
        first (its script: the right verdict count times) serves them all."""
        out, failures, sv = [], [], None
        if way != 'spawn':
            with open(self.scripted) as f:
                verdict = [l for l in f if l.strip() and not l.startswith('#')][0]
            script = self.log + '.%s.jsonl' % label
            with open(script, 'w') as f:
                f.write(verdict * (count + 2))
            if way == 'pause':
                self.policy('--mode', 'pause')
            sv = subprocess.Popen([self.jiti, 'supervise', '--store', self.store, '--scripted', script],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)   # connected and subscribed
        try:
            for i in range(count):
                try:
                    out.append(self.round(way))
                except Exception as e:   # a round that fails is reported, not averaged
                    failures.append(str(e))
                    print('repair_loop_bench: %s round %d failed: %s' % (label, i + 1, str(e)[:300]),
                          file=sys.stderr)
        finally:
            if sv:
                sv.send_signal(signal.SIGINT)
                sv.wait()
                if way == 'pause':
                    self.policy()
        return out, failures

    def policy(self, *mode):
        subprocess.run([self.jiti, 'repair', 'enable', 'dispense', *mode, '--expect-condition',
                        'INSUFFICIENT-CREDIT', '--store', self.store], check=True, stdout=subprocess.DEVNULL)

    def raw(self, part, rs):
        """Each round's timestamps (ms from its failing call) and the
        kernel's durations, one JSON line per round, to --raw."""
        if not self.raw_path:
            return
        with open(self.raw_path, 'a') as f:
            for r in rs:
                t = r['call']
                f.write(json.dumps({'part': part, **{k: round((v - t) * 1000, 2) if isinstance(v, float) and
                                                     not k.endswith('_ms') else v
                                                     for k, v in r.items()}}) + '\n')

    # -------------------------------------------------------- 1. the loop

    def part_loop(self, count):
        ways = (('spawn', 'spawned', '`jiti supervise --until-idle` spawned for each incident, mode fail'),
                ('resident', 'running', 'one `jiti supervise` running for all the rounds, mode fail'),
                ('pause', 'pause', 'one `jiti supervise` running, mode pause: the failing call waits for its '
                 'repair and is answered with the cola'))
        runs, failures = {}, []
        for way, _, _ in ways:
            load0 = loadavg()
            rs, f = self.rounds(count, way, 'loop-' + way)
            runs[way] = (rs, load0, loadavg())
            failures += f
            self.raw('loop-' + way, rs)
        self.loop_rounds = [r for way, _, _ in ways for r in runs[way][0]]

        def d(rs, a, b):
            return [(x[b] - x[a]) * 1000 for x in rs if a in x and b in x]

        def k(rs, key):
            return [x[key] for x in rs if x.get(key) is not None]

        def rest(rs):
            return [(x['repaired'] - x['verifying']) * 1000 - x['verify_ms'] - x['apply_ms'] for x in rs
                    if x.get('verify_ms') is not None and x.get('apply_ms') is not None and 'verifying' in x]

        def pickup(rs):   # from what the supervisor starts from: its first look, or the event
            return [(x['awaiting-model'] - x.get('supervising', x.get('captured'))) * 1000 for x in rs
                    if 'awaiting-model' in x and ('supervising' in x or 'captured' in x)]

        def capture(rs):   # mode pause has no reply yet: its captured event
            return d(rs, 'call', 'failed') or d(rs, 'call', 'captured')

        rows = [
            ('capture', 'the failing call sent → its reply naming the incident (pause: → the `captured` event): '
             'the call, its diagnosis, the incident opened in the store', capture),
            ('the `captured` event', 'that reply → the incident\'s `captured` event on a subscribed connection',
             lambda rs: d(rs, 'failed', 'captured')),
            ('supervisor start', 'spawn → its first line: exec, two connections, `subscribe`, the open incidents '
             'asked of the kernel', lambda rs: d(rs, 'spawn', 'supervising')),
            ('pickup', 'its first line (spawned) or the `captured` event (running) → the `awaiting-model` event: '
             'the incident read with its recorded calls, taken', pickup),
            ('model', '`awaiting-model` → `verifying` events: the live definition, the invariants, the prompt, the '
             'scripted verdict (an exchange noted on the incident), the `repair` request',
             lambda rs: d(rs, 'awaiting-model', 'verifying')),
            ('verification', 'the verification note\'s `ms` (kernel): the `repair` request → its verdict: the '
             'fork at the worker\'s next quiescent point, the shadow, the judgement',
             lambda rs: k(rs, 'verify_ms')),
            ('  of which the shadow', 'the report\'s `elapsed_ms`: fork → report (2 recorded calls replayed '
             'twice, the candidate, the repro, 3 invariants, the replays again)', lambda rs: k(rs, 'shadow_ms')),
            ('apply', 'the repair transaction (kernel log `attempt N repair accepted -> revision R (X ms`): '
             'begin → published and committed', lambda rs: k(rs, 'apply_ms')),
            ('rest', '`verifying` → `repaired` events less verification and apply: the apply\'s wait in the '
             'queue, the events\' delivery (below 0: the verification counts from the request\'s arrival, the '
             '`verifying` event from its own)', rest),
            ('**total**', '**the failing call sent → the `repaired` event**', lambda rs: d(rs, 'call', 'repaired')),
            ('the caller\'s wait', 'mode pause: the failing call sent → answered with the cola (run again on the '
             'repair)', lambda rs: d(rs, 'call', 'answered')),
            ('supervisor exit', '`repaired` event → the supervisor exited (its reply, the store looked at '
             'again)', lambda rs: d(rs, 'repaired', 'exit')),
        ]
        print('### 1. From a failing call to the applied repair')
        print()
        for way, _, title in ways:
            rs, l0, l1 = runs[way]
            print('- %s: %d rounds, load average %s → %s' % (title, len(rs), l0, l1))
        print()
        print('| part | what it includes | %s |' % ' | '.join('%s p50 ms | p95' % short for _, short, _ in ways))
        print('|---|---|%s' % ('---:|---:|' * len(ways)))
        for name, what, f in rows:
            cells = []
            for way, _, _ in ways:
                xs = f(runs[way][0])
                cells += [ms(pct(xs, 50)), ms(pct(xs, 95))]
            print('| %s | %s | %s |' % (name, what, ' | '.join(cells)))
        print()
        print('The total\'s maximum: %s.  Each part\'s percentiles are its own: they do not add up to the '
              'total\'s.  Events are timed as they arrive on a subscribed connection (a process of the bench\'s own); verification '
              'and apply are the kernel\'s own figures (1 ms and 0.1 ms resolution).' % ', '.join(
                  '%s %s ms' % (short, ms(max(d(runs[way][0], 'call', 'repaired'), default=None)))
                  for way, short, _ in ways))
        print()
        for f in failures[:3]:
            print('- failed round: %s' % f[:300])
        return failures

    # -------------------------------------------------------- 2. calls beside a slow verification

    def calls(self, form, count):
        """count calls of form, one at a time on one connection: latencies
        in ms, their start times, and the elapsed time."""
        c = Conn(self.sock)
        lat, starts = [], []
        t_begin = now()
        for _ in range(count):
            t0 = now()
            r = c.call(form)
            t1 = now()
            if not r.get('ok'):
                raise RuntimeError('%s: %s' % (form, r.get('message')))
            lat.append((t1 - t0) * 1000)
            starts.append((t0, t1))
        elapsed = now() - t_begin
        c.close()
        return lat, starts, elapsed

    def slow_verifications(self, stop, spans, timeout_ms):
        """Keep one slow verification running until stop is set: each a
        candidate that loops (under the kernel's large fuel it runs until
        its timeout kills it).  spans: (sent, answered, code, shadow pid)."""
        c = Conn(self.sock)
        while not stop.is_set():
            t0 = now()
            r = c.request({'op': 'verify', 'definitions': LOOP_CANDIDATE, 'repro': FAILING_CALL,
                           'timeout_ms': timeout_ms})
            spans.append((t0, now(), r.get('code') or 'ok', None))
        c.close()

    def part_verify(self, count, verify_seconds):
        results = []
        for form in (READ_FORM, WRITE_FORM):
            self.must(self.app.call('(setf (machine-credit *machine*) 0)'), 'reset the credit')
            self.calls(form, min(200, count))   # warm up, not counted
            load0 = loadavg()
            # the calls alone: half before the slow verification, half after
            # it (a drift of the machine then weighs on both alike)
            quiet, _, quiet_s = self.calls(form, count // 2)
            stop, spans = threading.Event(), []
            self.log_skip()
            th = threading.Thread(target=self.slow_verifications, args=(stop, spans, verify_seconds * 1000))
            th.start()
            m = self.log_wait(r'verification \d+: shadow (\d+) running', timeout=10)
            if not m:
                stop.set()
                th.join()
                raise RuntimeError('the slow verification did not start')
            shadow = int(m.group(1))
            t_running = now()
            cpu0 = self.cpu_s(shadow)
            busy, starts, busy_s = self.calls(form, count)
            cpu1 = self.cpu_s(shadow)
            t_end = now()
            stop.set()
            th.join()   # the verification still running ends at its timeout
            more, _, more_s = self.calls(form, count - count // 2)
            quiet, quiet_s = quiet + more, quiet_s + more_s
            load1 = loadavg()
            # the calls made while no verification was outstanding (between
            # one's timeout and the next's fork): counted, and left out
            inside = [lat for lat, (a, b) in zip(busy, starts)
                      if any(s0 <= a and b <= s1 for s0, s1, _, _ in spans)]
            shadow_cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
            results.append((form, quiet, quiet_s, inside, busy_s, len(busy) - len(inside), shadow_cpu,
                            t_end - t_running, [c for _, _, c, _ in spans], load0, load1))
        self.must(self.app.call('(setf (machine-credit *machine*) 0)'), 'reset the credit')
        print('### 2. Application calls while a slow verification runs (%d calls each, one connection, one call '
              'at a time)' % count)
        print()
        print('(Alone: half the calls before the slow verification, half after it.)')
        print()
        print('| call | beside it | calls | calls/s | p50 ms | p99 ms | max ms | load average |')
        print('|---|---|---:|---:|---:|---:|---:|---|')
        notes = []
        for form, quiet, quiet_s, inside, busy_s, outside, cpu, wall, codes, load0, load1 in results:
            print('| `%s` | nothing | %d | %.0f | %s | %s | %s | %s |' % (
                form, len(quiet), len(quiet) / quiet_s, ms2(pct(quiet, 50)), ms2(pct(quiet, 99)), ms2(max(quiet)),
                load0))
            print('| `%s` | a shadow running `(loop)` | %d | %.0f | %s | %s | %s | %s |' % (
                form, len(inside), (len(inside) + outside) / busy_s, ms2(pct(inside, 50)), ms2(pct(inside, 99)),
                ms2(max(inside) if inside else None), load1))
            notes.append('- `%s`: the shadow used %s s of CPU in the %.1f s the calls took%s; verifications: %s' % (
                form, '%.1f' % cpu if cpu is not None else '?', wall,
                ', %d call(s) made between two verifications left out' % outside if outside else '',
                ', '.join(codes)))
        print()
        print('\n'.join(notes))
        print()

    def cpu_s(self, pid):
        try:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
        except (OSError, IndexError, ValueError):
            return None

    # -------------------------------------------------------- 3. the apply's pause

    def part_apply(self, count, base_seconds=2.0):
        load0 = loadavg()
        loader = subprocess.Popen([sys.executable, os.path.abspath(__file__), 'load', self.sock, READ_FORM],
                                  stdout=subprocess.PIPE)
        time.sleep(0.3)   # connected and calling
        t_base = now()
        time.sleep(base_seconds)
        t_base_end = now()
        rs, failures = self.rounds(count, 'spawn', 'apply')
        self.raw('apply', rs)
        loader.send_signal(signal.SIGTERM)
        out, _ = loader.communicate(timeout=60)
        load1 = loadavg()
        pairs = json.loads(out)   # [[start, end], ...]

        def lat(ab):
            return (ab[1] - ab[0]) * 1000

        def overlapping(w0, w1):
            return [lat(ab) for ab in pairs if ab[0] < w1 and ab[1] > w0]

        base = [lat(ab) for ab in pairs if t_base <= ab[0] and ab[1] <= t_base_end]
        # the calls overlapping each stretch of each round (a call that
        # spans two counts in both)
        stretches = [('the failing call (sent → its reply)', 'call', 'failed'),
                     ('the supervisor\'s start, pickup and model (its reply → the `verifying` event)', 'failed',
                      'verifying'),
                     ('the verification (`verifying` → the apply\'s start)', 'verifying', 'apply'),
                     ('the apply (overlapping the repair transaction)', 'apply', 'repaired')]
        during = {a: [] for _, a, _ in stretches}
        worst = []
        for r in rs:
            if r.get('apply_ms') is None or 'verifying' not in r:
                continue
            r = dict(r, apply=r['repaired'] - r['apply_ms'] / 1000)
            for _, a, b in stretches:
                during[a] += overlapping(r[a], r[b])
            xs = overlapping(r['apply'], r['repaired'])
            if xs:
                worst.append(max(xs))
        applies_quiet = [r['apply_ms'] for r in self.loop_rounds if r.get('apply_ms') is not None]
        applies_busy = [r['apply_ms'] for r in rs if r.get('apply_ms') is not None]
        restores = [r['restore_ms'] for r in self.loop_rounds + rs if r.get('restore_ms') is not None]
        print('### 3. The apply\'s pause (%d rounds with a concurrent caller%s; load average %s → %s)' %
              (len(rs), ', %d failed' % len(failures) if failures else '', load0, load1))
        print()
        print('| the repair transaction (kernel log) | rounds | p50 ms | p95 ms | max ms |')
        print('|---|---:|---:|---:|---:|')
        print('| alone (the rounds of table 1) | %d | %s | %s | %s |' % (
            len(applies_quiet), ms2(pct(applies_quiet, 50)), ms2(pct(applies_quiet, 95)),
            ms2(max(applies_quiet) if applies_quiet else None)))
        print('| with `%s` called meanwhile | %d | %s | %s | %s |' % (
            READ_FORM, len(applies_busy), ms2(pct(applies_busy, 50)), ms2(pct(applies_busy, 95)),
            ms2(max(applies_busy) if applies_busy else None)))
        print('| for comparison: `jiti apply -e` of the buggy DISPENSE (every round) | %d | %s | %s | %s |' % (
            len(restores), ms2(pct(restores, 50)), ms2(pct(restores, 95)), ms2(max(restores) if restores else None)))
        print()
        print('| calls of `%s` from another connection, one at a time | calls | p50 ms | p99 ms | max ms |' % READ_FORM)
        print('|---|---:|---:|---:|---:|')
        for name, xs in [('no repair under way (%.0f s before the rounds)' % base_seconds, base)] + \
                        [('during ' + name, during[a]) for name, a, _ in stretches]:
            print('| %s | %d | %s | %s | %s |' % (name, len(xs), ms2(pct(xs, 50)), ms2(pct(xs, 99)),
                                                 ms2(max(xs) if xs else None)))
        print()
        if worst:
            print('The worst call across each apply, per round: median %s ms, max %s ms.' %
                  (ms2(statistics.median(worst)), ms2(max(worst))))
            print()
        for f in failures[:3]:
            print('- failed round: %s' % f[:300])
        return failures


def load_main(sock_path, source):
    """The concurrent caller: one connection, one call at a time, until
    SIGTERM; then its [start, end] pairs as JSON on stdout."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Conn(sock_path)
    pairs = []
    while not stop:
        t0 = now()
        r = c.call(source)
        t1 = now()
        if not r.get('ok'):
            sys.exit('load: %s: %s' % (source, r.get('message')))
        pairs.append((t0, t1))
    json.dump(pairs, sys.stdout)


def main(argv):
    if len(argv) >= 1 and argv[0] == 'load':
        return load_main(argv[1], argv[2])
    if len(argv) >= 1 and argv[0] == 'events':
        return events_main(argv[1], argv[2])
    if not argv or argv[0] != 'run':
        sys.exit(__doc__)
    a = {'rounds': '20', 'calls': '2000', 'verify-seconds': '10'}
    it = iter(argv[1:])
    for k in it:
        if not k.startswith('--'):
            sys.exit('repair_loop_bench.py: unexpected %r' % k)
        a[k[2:]] = next(it)
    for k in ('jiti', 'store', 'log', 'scripted', 'buggy'):
        if k not in a:
            sys.exit('repair_loop_bench.py: --%s is needed' % k)
    parts = a.get('parts', '1,2,3').split(',')
    b = Bench(a)
    failed = []
    b.loop_rounds = []
    if '1' in parts:
        failed += b.part_loop(int(a['rounds']))
    if '2' in parts:
        b.part_verify(int(a['calls']), int(a['verify-seconds']))
    if '3' in parts:
        failed += b.part_apply(int(a['rounds']))
    b.tap.close()
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
