"""A Swank wire client for tests/editor/wire.sh: each case opens a
connection to `jiti swank`, sends raw bytes and says what came back."""
import socket, sys

port, secret = int(sys.argv[1]), open(sys.argv[2]).read().split("\n")[0].encode()


def frame(b):
    return b"%06x" % len(b) + b


def send(s, data):
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed already: closed() says so


def conn(first=None):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    s.sendall(frame(secret if first is None else first))
    return s


def closed(s):
    """True when the server closed the connection (nothing more comes)."""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


pending = {}  # bytes received past the last frame taken, per socket


def reply(s):
    buf = pending.get(s, b"")
    while len(buf) < 6 or len(buf) < 6 + int(buf[:6], 16):
        d = s.recv(65536)
        if not d:
            return None
        buf += d
    n = int(buf[:6], 16)
    pending[s] = buf[6 + n:]
    return buf[6:6 + n].decode()


def case(name, ok):
    print(("ok " if ok else "FAIL ") + name)


# A pause another client left (jiti eval --on-error pause, wire.sh made it)
# opens the debugger when the REPL is created; sldb-abort answers it.
if len(sys.argv) > 3 and sys.argv[3] == "attach":  # only this
    s = conn()
    send(s, frame(b'(:emacs-rex (swank-repl:create-repl nil :coding-system "utf-8-unix") "COMMON-LISP-USER" t 10)'))
    got = [reply(s) for _ in range(3)]
    case("another client's pause opens the debugger: " + str(got)[:120],
         got[0].startswith("(:debug 1 1 (\"The value 5 is not of type LIST\"") and got[2].startswith("(:return (:ok"))
    send(s, frame(b"(:emacs-rex (swank:sldb-abort) \"COMMON-LISP-USER\" 1 11)"))
    got = [reply(s) for _ in range(2)]
    case("and is answered from here: " + str(got), got[0] == "(:debug-return 1 1 nil)" and "(:abort" in got[1])
    sys.exit(0)


rex = b'(:emacs-rex (swank:interactive-eval "(+ 1 2)") "COMMON-LISP-USER" t 1)'
for name, data in [
    ("no length header", b"hello there, swank"),
    ("a length that is not hex", b"00zz10(:emacs-rex)"),
    ("malformed s-expression", frame(b"(:emacs-rex (swank:connection-info")),
    ("two expressions", frame(b"(a) (b)")),
    ("read-time evaluation", frame(b"(:emacs-rex #.(swank:quit-lisp) nil t 1)")),
    ("nested 100000 deep", frame(b"(" * 100000 + b")" * 100000)),
    ("a message that is not a list", frame(b'"just a string"')),
    ("invalid UTF-8", frame(b'(:emacs-rex (swank:interactive-eval "\xff") nil t 1)')),
]:
    s = conn()
    send(s, data)
    case(name + ": closed", closed(s))

s = conn()  # a frame announced at 16 MiB - 1 whose bytes never all come: the peer leaves
send(s, b"ffffff" + b"(" * 1000)
s.close()

s = conn(b"not the secret")
send(s, frame(rex))
case("wrong secret: closed", closed(s))
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
send(s, frame(rex))
case("no secret: closed", closed(s))

s = conn()
s.sendall(frame(b"(:emacs-rex (swank:no-such-function) \"COMMON-LISP-USER\" t 1)"))
r = reply(s)
case("unknown rpc: aborted with its name", r is not None and r.startswith("(:return (:abort") and "no-such-function" in r)
s.sendall(frame(b"(:emacs-rex (\"not a symbol\") \"COMMON-LISP-USER\" t 2)"))
r = reply(s)
case("a form that is no call: aborted", r is not None and "(:abort" in r)
s.sendall(frame(rex.replace(b" 1)", b" 3)")))
r = reply(s)
case("then served: " + str(r), r == '(:return (:ok "=> 3") 3)')
s.sendall(frame(b'(:emacs-rex (swank:interactive-eval "(car 5)") "COMMON-LISP-USER" t 4)'))
r = reply(s)
case("an error pauses: the debugger opens: " + str(r)[:80], r is not None and r.startswith("(:debug 1 1"))
reply(s)  # :debug-activate
s.sendall(frame(b"(:emacs-rex (swank:sldb-abort) \"COMMON-LISP-USER\" 1 5)"))
got = [reply(s) for _ in range(3)]
case("abort: the level returns, the evaluation is aborted: " + str(got),
     got[0] == "(:debug-return 1 1 nil)" and "(:abort" in got[1] and " 4)" in got[1] and "(:abort" in got[2])

s.close()  # one editor at a time: the next is served once this one left

s = conn()  # an editor that leaves with sldb open: its pause is aborted (wire.sh checks)
send(s, frame(b'(:emacs-rex (swank:interactive-eval "(car 6)") "COMMON-LISP-USER" t 1)'))
r = reply(s)
case("a pause left open by an editor that goes", r is not None and r.startswith("(:debug 1 1"))
s.close()

s = conn()  # an editor that leaves while its call runs: the call is cancelled (wire.sh checks)
send(s, frame(b'(:emacs-rex (swank:interactive-eval "(loop)") "COMMON-LISP-USER" t 1)'))
import time
time.sleep(0.3)
s.close()
case("a call left running by an editor that goes", True)
