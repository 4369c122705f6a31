"""Helpers of the session suites (Python 3 standard library): checks that
name themselves, the jiti program, a kernel on a temporary store, and the
loopback model server (tests/model_server.py)."""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JITI = None
passed = 0
failed = 0


def check(name, cond, detail=''):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print('FAIL %s%s' % (name, (': ' + str(detail).strip()[-1500:]) if detail != '' else ''), flush=True)
    return cond


def finish():
    print('%d passed, %d failed' % (passed, failed))
    sys.exit(1 if failed else 0)


def jiti(*args, env=None, input=None, timeout=300):
    """Run jiti; returns (status, stdout, stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([JITI] + [str(a) for a in args], env=e, input=input, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def setup(argv):
    global JITI
    JITI = os.path.abspath(argv[1])
    # a clean environment: no key, no base URL, unless a test sets them
    for k in ('OPENAI_API_KEY', 'OPENAI_API_KEY_FILE', 'OPENAI_BASE_URL', 'OPENAI_MODEL', 'OPENAI_ORG_ID',
              'OPENAI_PROJECT_ID', 'JITI_STORE'):
        os.environ.pop(k, None)
    os.environ['JITI_SESSION_HISTORY'] = ''


class Kernel:
    def __init__(self, tmp, name='store'):
        self.store = os.path.join(tmp, name)
        st, out, err = jiti('kernel', '--store', self.store, '--detach')
        if st != 0:
            raise RuntimeError('kernel did not start: %s %s' % (out, err))

    def pid(self):
        with open(os.path.join(self.store, 'kernel.pid')) as f:
            return int(f.read())

    def eval(self, src):
        st, out, err = jiti('eval', '--store', self.store, src)
        return out.strip() if st == 0 else '!' + (err.strip() or out.strip())

    def stop(self):
        jiti('stop', '--store', self.store)

    def sessions(self):
        st, out, err = jiti('sessions', '--store', self.store, '--json')
        return json.loads(out) if st == 0 else None

    def session_events(self, n):
        st, out, err = jiti('sessions', 'show', n, '--store', self.store, '--json')
        return json.loads(out) if st == 0 else []

    def events(self):
        st, out, err = jiti('events', '--store', self.store, '--json')
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def steps(self, n):
        return [e for e in self.session_events(n) if e['event'] == 'session-step']

    def end(self, n):
        ends = [e for e in self.session_events(n) if e['event'] == 'session-end']
        return ends[0] if ends else {}


class ModelServer:
    def __init__(self, tmp, key=None, script=None):
        self.portfile = os.path.join(tmp, 'model-port')
        args = [sys.executable, os.path.join(ROOT, 'tests', 'model_server.py'), '--port-file', self.portfile]
        if key:
            args += ['--key', key]
        if script:
            args += ['--script', script]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(self.portfile):
                break
            time.sleep(0.05)
        with open(self.portfile) as f:
            self.port = int(f.read())
        self.base = 'http://127.0.0.1:%d/v1' % self.port

    def control(self, path, body=None):
        data = json.dumps(body if body is not None else {}).encode()
        req = urllib.request.Request('http://127.0.0.1:%d%s' % (self.port, path), data=data, method='POST')
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def queue(self, replies):
        self.control('/_reset')
        self.control('/_queue', replies)

    def log(self):
        return self.control('/_log')

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def tmpdir():
    return tempfile.mkdtemp(prefix='jiti-session-test-')
