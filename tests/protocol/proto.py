"""proto.py — the machinery of the protocol suite (tests/protocol/run.py).

Kernel   a `jiti kernel --store DIR` on a temporary store; stopped (and
         killed if need be) when the block ends, its log checked for
         sanitizer reports.  Kernels also die with this process
         (PR_SET_PDEATHSIG), so a ctest TIMEOUT leaves none behind.
Conn     one client connection.  Every request it sends is checked against
         docs/schema/request-<op>.json and every line it receives against
         docs/schema/reply-<op>.json (the op of the request with the reply's
         id), reply-error.json or event.json; a violation raises
         SchemaViolation, which fails the running case.  It also checks
         that the kernel and the schemas agree: a request the schema
         refuses must be refused by the kernel, and the kernel must not
         refuse as malformed a request the schema accepts.
Reporter runs named cases, prints PASS/FAIL/XFAIL lines and the totals.
"""
import collections
import ctypes
import glob
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import jsonschema
from jsonschema import Draft202012Validator, RefResolver

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA_DIR = os.path.normpath(os.path.join(HERE, '..', '..', 'docs', 'schema'))

# Set by run.py.
JITI = None
SLOW = 1          # timeouts and waits are multiplied by this (ASan, GC stress)
GC_STRESS = False

OPS = ['hello', 'status', 'observe', 'inspect', 'history', 'subscribe', 'call', 'preview', 'act', 'apply',
       'invariant-add', 'invariant-remove', 'invariant-list', 'rollback', 'record', 'shutdown', 'cancel', 'interrupt',
       'repair-policy', 'verify', 'incident', 'incidents', 'repair', 'heal', 'repairs', 'complete']
# Codes with which the kernel refuses a request it cannot parse or check.
REFUSAL_CODES = {'malformed-json', 'invalid-utf8', 'invalid-request', 'unknown-op', 'unsupported-protocol'}


class SchemaViolation(AssertionError):
    pass


class Closed(AssertionError):
    """The kernel closed the connection before the reply came."""


class Schemas:
    """The schemas of docs/schema, loaded once, resolved by their $id."""

    def __init__(self, directory=SCHEMA_DIR):
        self.docs = {}
        store = {}
        for path in sorted(glob.glob(os.path.join(directory, '*.json'))):
            with open(path, encoding='utf-8') as f:
                doc = json.load(f)
            Draft202012Validator.check_schema(doc)
            self.docs[os.path.basename(path)] = doc
            store[doc['$id']] = doc
        self.validators = {}
        for name, doc in self.docs.items():
            resolver = RefResolver.from_schema(doc, store=store)
            self.validators[name] = Draft202012Validator(doc, resolver=resolver)
        self.counts = collections.Counter()
        self.lock = threading.RLock()

    def errors(self, name, instance):
        with self.lock:   # RefResolver keeps a scope stack: one validation at a time
            return list(self.validators[name].iter_errors(instance))

    def valid(self, name, instance):
        return not self.errors(name, instance)

    def check(self, name, instance, what):
        errs = self.errors(name, instance)
        with self.lock:
            self.counts[what] += 1
        if errs:
            best = jsonschema.exceptions.best_match(errs)
            path = '/'.join(str(p) for p in best.absolute_path)
            raise SchemaViolation('%s does not match %s at /%s: %s\n  %s: %s' % (
                what, name, path, best.message, what, snippet(instance)))


SCHEMAS = None


def schemas():
    global SCHEMAS
    if SCHEMAS is None:
        SCHEMAS = Schemas()
    return SCHEMAS


def snippet(x, n=600):
    s = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)
    return s if len(s) <= n else s[:n] + '...(%d chars)' % len(s)


def no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise SchemaViolation('duplicate member %r in a line from the kernel' % k)
        d[k] = v
    return d


def parse_line(raw):
    """A line from the kernel: UTF-8, one JSON object, no duplicate members."""
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        raise SchemaViolation('a line from the kernel is not UTF-8: %s' % e)
    try:
        msg = json.loads(text, object_pairs_hook=no_duplicates)
    except ValueError as e:
        raise SchemaViolation('a line from the kernel is not JSON: %s: %s' % (e, snippet(text)))
    if not isinstance(msg, dict):
        raise SchemaViolation('a line from the kernel is not an object: %s' % snippet(text))
    return msg


# ------------------------------------------------------------------ kernels

_libc = ctypes.CDLL(None, use_errno=True)
_KERNELS = []


def _die_with_parent():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_jiti(*args, check=False, timeout=120):
    """`jiti ARGS...` as a command, its output captured as text; with check,
    a non-zero exit is an AssertionError naming the command and its output.
    timeout (seconds) is multiplied by SLOW."""
    r = subprocess.run([JITI] + list(args), capture_output=True, text=True, timeout=timeout * SLOW)
    if check and r.returncode != 0:
        raise AssertionError('jiti %s: exit %d: %s%s' % (' '.join(args), r.returncode, r.stdout, r.stderr))
    return r


def kill_all_kernels():
    for k in list(_KERNELS):
        k.kill()


class Kernel:
    """`jiti kernel --store DIR` on a fresh temporary store."""

    def __init__(self, *options, store=None, nofile=None, env=None):
        self.tmp = tempfile.mkdtemp(prefix='jiti-proto.', dir='/tmp')  # short: a socket path
        self.store = store or os.path.join(self.tmp, 's')
        self.sock_path = os.path.join(self.store, 'kernel.sock')
        self.log_path = os.path.join(self.tmp, 'kernel.log')
        self.options = list(options)
        self.nofile = nofile
        self.env = env
        self.proc = None
        self.problems = []      # sanitizer reports found when it stopped
        self.start()

    def start(self):
        def pre():
            _die_with_parent()
            if self.nofile:
                import resource
                resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen([JITI, 'kernel', '--store', self.store] + self.options,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     preexec_fn=pre, env=env)
        log.close()
        _KERNELS.append(self)
        deadline = time.time() + 30 * SLOW
        while time.time() < deadline:
            r = subprocess.run([JITI, 'status', '--store', self.store], capture_output=True)
            if r.returncode == 0:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError('the kernel did not start: %s' % self.log()[-2000:])

    def log(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def conn(self, **kw):
        return Conn(self, **kw)

    def stop(self, timeout=None):
        """SIGTERM and wait; SIGKILL after the timeout.  Returns the exit status."""
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout or 30 * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            self.problems.append('the kernel did not stop within %ds of SIGTERM' % (timeout or 30 * SLOW))
        self.check_log()
        return rc

    def wait_exit(self, timeout=None):
        rc = self.proc.wait(timeout or 30 * SLOW)
        self.check_log()
        return rc

    def check_log(self):
        text = self.log()
        m = re.search(r'ERROR: (Address|Leak|Memory)Sanitizer|runtime error:', text)
        if m:
            self.problems.append('sanitizer report in the kernel log:\n' + text[max(0, m.start() - 200):m.start() + 3000])

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self in _KERNELS:
            _KERNELS.remove(self)

    def cleanup(self):
        self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()
        if self.problems and exc[0] is None:
            raise AssertionError('; '.join(self.problems))
        return False

    # --- conveniences (each on a connection of its own)
    def request(self, req, **kw):
        with self.conn() as c:
            return c.request(req, **kw)

    def status(self):
        return self.request({'op': 'status'})

    def gen(self):
        return self.status()['generation']

    def call(self, source, **kw):
        return self.request(dict({'op': 'call', 'source': source}, **kw))

    def value(self, source):
        r = self.call(source)
        assert r['ok'], 'call %s failed: %s' % (source, snippet(r))
        return r.get('value')

    def fingerprint(self):
        """The world without its generation: every entry's and data row's hash, the
        counts, and CURRENT (observe's revision and history's current)."""
        with self.conn() as c:
            v = c.request({'op': 'observe', 'budget': 16 << 20})['view']
            h = c.request({'op': 'history', 'limit': 1})
        assert v['truncated']['omitted'] == 0, 'observe omitted entries'
        return {'entries': sorted((e['kind'], e['name'], e['hash']) for e in v['entries'] + v['invariants']),
                'rows': sorted((r['key'], r['hash']) for r in v['data']['rows']),
                'counts': v['counts'], 'revision': v['revision'], 'current': h['current'],
                'status': v['status']}


# --------------------------------------------------------------- connections

_ids = itertools.count(1)
ANONYMOUS = object()   # Conn.send's answer for a request whose reply will have no id


class Conn:
    """One connection to a kernel; validates everything sent and received."""

    def __init__(self, kernel, timeout=None):
        self.k = kernel
        self.timeout = timeout or 60 * SLOW
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(kernel.sock_path)
        self.buf = b''
        self.eof = False
        self.pending = {}                   # id -> (op, schema-valid)
        self.anonymous = collections.deque()  # requests whose reply has no id
        self.replies = collections.deque()
        self.events = []
        self.last_seq = 0
        self.subscribed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # --- sending
    def send(self, req, valid=True, auto_id=True):
        """Send one request (a dict).  valid: whether the request schemas accept it
        (a deliberately wrong request passes valid=False; the check runs both ways)."""
        rid, line = self._line(req, valid, auto_id)
        self.sock.sendall(line)
        return rid

    def send_many(self, reqs):
        """Send valid requests in one write (the kernel reads them together); their ids."""
        lines = [self._line(r, True, True) for r in reqs]
        self.sock.sendall(b''.join(line for _, line in lines))
        return [rid for rid, _ in lines]

    def _line(self, req, valid, auto_id):
        """A request checked against the schemas and recorded as pending: (id, its line)."""
        S = schemas()
        req = dict(req)
        if auto_id and 'id' not in req:
            req['id'] = 'r%d' % next(_ids)
        op = req.get('op')
        name = 'request-%s.json' % op if isinstance(op, str) and op in OPS else 'request.json'
        errs = S.errors(name, req)
        with S.lock:
            S.counts['request'] += 1
        if valid and errs:
            best = jsonschema.exceptions.best_match(errs)
            raise SchemaViolation('request does not match %s: %s\n  request: %s' % (name, best.message, snippet(req)))
        if not valid and not errs:
            raise SchemaViolation('request was expected not to match %s, but does: %s' % (name, snippet(req)))
        rid = req.get('id')
        entry = (op if name != 'request.json' else None, not errs)
        text = json.dumps(req, ensure_ascii=False)
        if (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))) and 'id' in req \
                and '\\u0000' not in text:
            self.pending[rid] = entry
        else:   # the kernel cannot tell the id (a bad id, or a line it cannot parse)
            self.anonymous.append(entry if '\\u0000' not in text else (None, entry[1]))
            rid = ANONYMOUS
        if op == 'subscribe' and not errs:
            self.subscribed = True
        return rid, text.encode('utf-8') + b'\n'

    def send_raw(self, data, replies=1):
        """Send bytes as they are (no schema can judge them); expect `replies` replies
        without an id (reply(ANONYMOUS) or reply() reads them)."""
        for _ in range(replies):
            self.anonymous.append((None, None))
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the kernel closed the connection (line-too-long): read what it said

    # --- receiving
    def read_line(self, timeout=None):
        """One raw line, or None at EOF."""
        deadline = time.time() + (timeout if timeout is not None else self.timeout)
        while b'\n' not in self.buf:
            if self.eof:
                return None
            left = deadline - time.time()
            if left <= 0:
                raise socket.timeout('no line from the kernel within %.1fs' % (timeout or self.timeout))
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b''
            if not chunk:
                self.eof = True
                if self.buf:
                    raise SchemaViolation('the kernel closed the connection inside a line: %r' % self.buf[:200])
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line

    def receive(self, timeout=None):
        """Read and validate one line; replies go to self.replies, events to self.events.
        False at EOF."""
        raw = self.read_line(timeout)
        if raw is None:
            return False
        msg = parse_line(raw)
        S = schemas()
        if 'ok' not in msg:
            if not self.subscribed:
                raise SchemaViolation('a line without "ok" on a connection that did not subscribe: %s' % snippet(msg))
            S.check('event.json', msg, 'event')
            if msg['seq'] <= self.last_seq:
                raise SchemaViolation('event seq %d after %d' % (msg['seq'], self.last_seq))
            self.last_seq = msg['seq']
            self.events.append(msg)
            return True
        rid = msg.get('id')
        if 'id' in msg and rid in self.pending:
            op, was_valid = self.pending.pop(rid)
        elif 'id' not in msg and self.anonymous:
            op, was_valid = self.anonymous.popleft()
        elif 'id' in msg:
            raise SchemaViolation('a reply with an id nobody sent: %s' % snippet(msg))
        else:
            op, was_valid = None, True
        name = 'reply-%s.json' % op if op else ('reply-error.json' if msg.get('ok') is False else 'reply.json')
        S.check(name, msg, 'reply')
        if was_valid is None:   # raw bytes
            pass
        elif was_valid and op and msg.get('ok') is False and msg['code'] in REFUSAL_CODES - {'unsupported-protocol'}:
            raise SchemaViolation('the kernel refused (%s) a request the schema accepts: %s' % (msg['code'], snippet(msg)))
        elif not was_valid and msg.get('ok') is not False:
            raise SchemaViolation('the kernel accepted a request the schema refuses: %s' % snippet(msg))
        elif not was_valid and msg['code'] not in REFUSAL_CODES:
            raise SchemaViolation('a request the schema refuses got %s, not a refusal: %s' % (msg['code'], snippet(msg)))
        self.replies.append(msg)
        return True

    def reply(self, rid=None, timeout=None):
        """The reply with id rid (None: the next reply)."""
        deadline = time.time() + (timeout if timeout is not None else self.timeout)
        while True:
            for i, m in enumerate(self.replies):
                if rid is None or (rid is ANONYMOUS and 'id' not in m) or ('id' in m and m['id'] == rid):
                    del self.replies[i]
                    return m
            left = deadline - time.time()
            if left <= 0:
                raise socket.timeout('no reply %s within %.1fs' % (rid, timeout or self.timeout))
            if not self.receive(left):
                raise Closed('the kernel closed the connection before reply %s' % rid)

    def request(self, req, valid=True, timeout=None):
        return self.reply(self.send(req, valid=valid), timeout=timeout)

    def wait_event(self, pred, timeout=None, what='an event'):
        """The first event (already received or coming) for which pred is true."""
        deadline = time.time() + (timeout if timeout is not None else self.timeout)
        seen = 0
        while True:
            for e in self.events[seen:]:
                if pred(e):
                    return e
            seen = len(self.events)
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError('%s did not arrive; events: %s' % (what, snippet(self.events[-8:], 2000)))
            if not self.receive(left):
                raise AssertionError('connection closed while waiting for %s' % what)

    def drain(self, quiet=0.2):
        """Receive whatever arrives until the line has been quiet for `quiet` seconds."""
        while True:
            try:
                if not self.receive(quiet):
                    return
            except socket.timeout:
                return

    def closed_by_kernel(self, timeout=None):
        """True when the kernel closes the connection (after any lines it sends)."""
        try:
            while self.receive(timeout if timeout is not None else 10 * SLOW):
                pass
            return True
        except socket.timeout:
            return False


# ------------------------------------------------------------------- helpers

def wait_for(pred, timeout, what, interval=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError('timed out waiting for ' + what)


def expect_error(r, code, message=None):
    assert r.get('ok') is False, 'expected %s, got %s' % (code, snippet(r))
    assert r['code'] == code, 'expected %s, got %s: %s' % (code, r['code'], snippet(r))
    if message:
        assert re.search(message, r['message']), 'message %r does not match %r' % (r['message'][:300], message)
    return r


def expect_ok(r, **members):
    assert r.get('ok') is True, 'expected ok, got %s' % snippet(r)
    for k, v in members.items():
        assert r.get(k) == v, '%s: expected %r, got %r in %s' % (k, v, r.get(k), snippet(r))
    return r


# ------------------------------------------------------------------ reporting

class XFail(Exception):
    pass


class Reporter:
    def __init__(self, pattern=None, verbose=False):
        self.pattern = re.compile(pattern) if pattern else None
        self.verbose = verbose
        self.passed = self.failed = self.xfailed = self.xpassed = self.skipped = 0
        self.failures = []
        self.xpasses = []
        self.t0 = time.time()

    def wants(self, name):
        return not self.pattern or self.pattern.search(name)

    def run(self, name, fn, xfail=None):
        """Run one case.  xfail: the known bug (text) that makes it fail today."""
        if not self.wants(name):
            self.skipped += 1
            return None
        t = time.time()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 — any exception fails the case
            dt = time.time() - t
            if xfail:
                self.xfailed += 1
                print('XFAIL %s (%.2fs): known bug: %s\n      (%s)' % (name, dt, xfail, str(e).splitlines()[0][:200]),
                      flush=True)
                return False
            self.failed += 1
            detail = ''.join(traceback.format_exception(type(e), e, e.__traceback__)[-3:])
            self.failures.append(name)
            print('FAIL %s (%.2fs): %s' % (name, dt, detail.rstrip()), flush=True)
            return False
        dt = time.time() - t
        if xfail:
            self.xpassed += 1
            self.xpasses.append(name)
            print('XPASS %s (%.2fs): the known bug seems fixed (%s); drop the mark' % (name, dt, xfail), flush=True)
        else:
            self.passed += 1
            if self.verbose or dt > 5:
                print('ok   %s (%.2fs)' % (name, dt), flush=True)
        return True

    def fail(self, name, why):
        self.failed += 1
        self.failures.append(name)
        print('FAIL %s: %s' % (name, why), flush=True)

    def summary(self):
        c = schemas().counts
        print('%d passed, %d failed, %d known bugs (xfail), %d xpass, %d not selected; validated %d requests, '
              '%d replies, %d events against docs/schema; %.1fs' % (
                  self.passed, self.failed, self.xfailed, self.xpassed, self.skipped, c['request'], c['reply'],
                  c['event'], time.time() - self.t0))
        if self.failures:
            print('failed: ' + ', '.join(self.failures))
        return self.failed == 0
