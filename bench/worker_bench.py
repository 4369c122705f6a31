#!/usr/bin/env python3
"""The worker's CPU per application call, without the kernel daemon.

    bench/worker_bench.py [--jiti build/jiti] [--workload read|write] [--calls N]

Starts `jiti __worker` on one end of a socketpair (as the kernel does:
descriptor 3), sends it `init` (group commit: stack 1024) and `start` on an
empty world, then application calls in `attempts` frames of 64 — read:
(world-get :counter); write: (world-put :counter (1+ (or (world-get
:counter) 0))) — committing each batch's accepted calls with one `commit`.
After 2,000 calls of warm-up it prints the worker's utime + stime
(/proc/PID/stat) per call over --calls more.  Only the worker's CPU is
measured, so the figure is steadier on a shared machine than the kernel's
(bench/kernel_bench.sh); the frames are those of docs/worker-frames.md.
"""
import argparse
import json
import os
import socket
import struct
import subprocess
import sys

SOURCES = {
    'read': '(world-get :counter)',
    'write': '(world-put :counter (1+ (or (world-get :counter) 0)))',
}


class Worker:
    def __init__(self, jiti):
        # the worker's end must be descriptor 3: keep 0-2 and the pair above it
        spare = [os.open('/dev/null', os.O_RDONLY) for _ in range(3)]
        self.sock, theirs = socket.socketpair()
        os.dup2(theirs.fileno(), 3)
        self.proc = subprocess.Popen([jiti, '__worker'], pass_fds=(3,), stdin=subprocess.DEVNULL)
        theirs.close()
        os.close(3)
        for fd in spare:
            if fd != 3:  # (3 was replaced by the worker's end, closed above)
                os.close(fd)
        self.buf = b''

    def send(self, msg):
        text = json.dumps(msg).encode()
        self.sock.sendall(struct.pack('>II', len(text), 0) + text)

    def recv(self):
        while True:
            if len(self.buf) >= 8:
                jlen, blen = struct.unpack('>II', self.buf[:8])
                if len(self.buf) >= 8 + jlen + blen:
                    msg = json.loads(self.buf[8:8 + jlen])
                    self.buf = self.buf[8 + jlen + blen:]
                    return msg
            data = self.sock.recv(1 << 20)
            if not data:
                sys.exit('worker_bench: the worker went away')
            self.buf += data

    def cpu_ticks(self):
        with open(f'/proc/{self.proc.pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return int(fields[11]) + int(fields[12])   # utime, stime


def run(w, source, calls, revision):
    done = 0
    while done < calls:
        k = min(64, calls - done)
        w.send({'op': 'attempts', 'items': [{'kind': 'application', 'source': source, 'pausable': False}] * k})
        awaiting = 0
        for _ in range(k):
            o = w.recv()
            if o.get('event') != 'outcome' or o.get('reason') != 'accepted':
                sys.exit(f'worker_bench: unexpected answer {o}')
            if o['status'] == 'awaiting-commit' and not o.get('committed'):
                awaiting += 1
        if awaiting:
            revision += 1
            w.send({'op': 'commit', 'revision': revision, 'count': awaiting})
            if w.recv().get('event') != 'committed':
                sys.exit('worker_bench: the commit was not acknowledged')
        done += k
    return revision


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--jiti', default=os.path.join(os.path.dirname(__file__), '..', 'build', 'jiti'))
    ap.add_argument('--workload', choices=sorted(SOURCES), default='read')
    ap.add_argument('--calls', type=int, default=200000)
    a = ap.parse_args()
    w = Worker(a.jiti)
    w.send({'op': 'init', 'base': 1, 'revision': 1, 'stack': 1024})
    w.send({'op': 'start'})
    ready = w.recv()
    if ready.get('event') != 'ready':
        sys.exit(f'worker_bench: the worker did not start: {ready}')
    source = SOURCES[a.workload]
    revision = run(w, source, 2000, 1)
    t0 = w.cpu_ticks()
    run(w, source, a.calls, revision)
    t1 = w.cpu_ticks()
    us = (t1 - t0) * 1e6 / os.sysconf('SC_CLK_TCK') / a.calls
    print(f'{a.workload}: worker {us:.2f} us of CPU per call over {a.calls} calls')
    w.send({'op': 'exit'})
    w.proc.wait()


if __name__ == '__main__':
    main()
