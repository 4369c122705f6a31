#!/usr/bin/env bash
# tls.sh JITI — clients on other machines: `jiti kernel --listen
# tcp://HOST:PORT` (TLS only) beside the Unix socket, and the client
# commands' --connect, on loopback.  Certificates are made here with the
# openssl command: a CA, the kernel's certificate (for 127.0.0.1 only), a
# client's, and a stranger CA with a client of its own.  A client with a good
# certificate is served the same world as over the Unix socket; no
# certificate, one of another CA, a kernel not trusted or not named by its
# certificate are refused with a clear message on both sides; a token kernel
# takes the right token and refuses a wrong one and a token file others can
# read; an idle TCP peer that never speaks TLS does not hold the kernel up.
set -u
J=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
JITI=$J
tmp=$(mktemp -d)
trap 'kill_kernels; [[ -n ${idle:-} ]] && kill "$idle" 2>/dev/null; rm -rf "$tmp"' EXIT
command -v openssl >/dev/null || { echo "no openssl command: skipped"; exit 77; }

. "$here/tls_certs.sh"
cd "$tmp" || exit 1
tls_certs
ok "certificates made" $?

# the kernel's options
t "listen without a certificate" 2 "needs the kernel's certificate" -- \
  "$J" kernel --store a --listen tcp://127.0.0.1:1 --client-ca ca.pem
t "listen without client authentication" 2 "one way to authenticate clients.*neither" -- \
  "$J" kernel --store a --listen tcp://127.0.0.1:1 --tls-cert kernel.pem --tls-key kernel.key
t "both ways" 2 "not both" -- "$J" kernel --store a --listen tcp://127.0.0.1:1 --tls-cert kernel.pem \
  --tls-key kernel.key --client-ca ca.pem --token-file token
t "no plaintext" 2 "tcp://HOST:PORT" -- "$J" kernel --store a --listen http://127.0.0.1:1 --tls-cert kernel.pem \
  --tls-key kernel.key --client-ca ca.pem
t "TLS options alone" 2 "go with --listen" -- "$J" kernel --store a --tls-cert kernel.pem
t "a key of another certificate" 1 "does not belong to the certificate" -- "$J" kernel --store a \
  --listen tcp://127.0.0.1:1 --tls-cert kernel.pem --tls-key client.key --client-ca ca.pem
t "a token file others can read" 1 "may be read or written by others.*chmod 600" -- "$J" kernel --store a \
  --listen tcp://127.0.0.1:1 --tls-cert kernel.pem --tls-key kernel.key --token-file open
t "kernel help" 0 "--listen tcp://HOST:PORT.*--client-ca" -- "$J" kernel --help

# a kernel that takes client certificates
p=$(free_port)
start_kernel "$tmp/a" --listen "tcp://127.0.0.1:$p" --tls-cert kernel.pem --tls-key kernel.key --client-ca ca.pem
ok "kernel with a TCP listener starts" $?
grep -q "serving clients on other machines at tcp://127.0.0.1:$p" kernel.log
ok "it says where it listens" $?
C=(--connect "tcp://127.0.0.1:$p" --tls-ca ca.pem)
t "eval over TCP" 0 "^DOUBLE$" -- "$J" eval "${C[@]}" --tls-cert client.pem --tls-key client.key "(defun double (x) (* x 2))"
t "the same world over the Unix socket" 0 "^42$" -- "$J" eval --store "$tmp/a" "(double 21)"
t "and back over TCP" 0 "^84$" -- "$J" eval "${C[@]}" --tls-cert client.pem --tls-key client.key "(double 42)"
t "status over TCP" 0 "serving $tmp/a.*revision: +2" -- "$J" status "${C[@]}" --tls-cert client.pem --tls-key client.key
t "observe over TCP" 0 "DOUBLE" -- "$J" observe "${C[@]}" --tls-cert client.pem --tls-key client.key
t "a keyed call replays over TCP" 0 "" -- "$J" eval "${C[@]}" --tls-cert client.pem --tls-key client.key --key k1 \
  "(world-put :n 1)"
t "replayed" 0 "replayed" -- "$J" eval "${C[@]}" --tls-cert client.pem --tls-key client.key --key k1 "(world-put :n 1)"
t "no certificate refused" 1 "(refused the connection|closed the connection before accepting).*client certificate" -- "$J" status "${C[@]}" --token-file token
t "another CA's certificate refused" 1 "refused this client's certificate.*--client-ca" -- \
  "$J" status "${C[@]}" --tls-cert intruder.pem --tls-key intruder.key
t "a kernel not trusted" 1 "is not trusted" -- "$J" status --connect "tcp://127.0.0.1:$p" --tls-ca stranger.pem \
  --tls-cert client.pem --tls-key client.key
t "a name the certificate does not hold" 1 "not trusted: hostname mismatch" -- "$J" status --connect "tcp://localhost:$p" \
  --tls-ca ca.pem --tls-cert client.pem --tls-key client.key
grep -q "refused: it presented no client certificate" kernel.log
ok "the kernel logs the missing certificate" $?
grep -q "refused: its certificate was refused" kernel.log
ok "the kernel logs the stranger's certificate" $?
t "client without a CA" 2 "TLS only: --tls-ca" -- "$J" status --connect "tcp://127.0.0.1:$p" --token-file token
t "client without credentials" 2 "authenticated" -- "$J" status "${C[@]}"
t "client options alone" 2 "go with --connect" -- "$J" status --tls-ca ca.pem
t "a bad address" 2 "tcp://HOST:PORT" -- "$J" status --connect "127.0.0.1" --tls-ca ca.pem --token-file token
t "nobody listens" 1 "cannot connect to 127.0.0.1:1:" -- "$J" status --connect tcp://127.0.0.1:1 --tls-ca ca.pem \
  --token-file token
t "client help" 0 "--connect tcp://HOST:PORT" -- "$J" eval --help

# a peer that connects and never speaks TLS holds only its own connection
python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); time.sleep(60)' "$p" &
idle=$!
sleep 0.3
t "served beside a silent peer" 0 "^84$" -- "$J" eval "${C[@]}" --tls-cert client.pem --tls-key client.key "(double 42)"
t "and on the Unix socket" 0 "state: +idle" -- "$J" status --store "$tmp/a"
# and is closed once the handshake's deadline passes
for _ in $(seq 300); do grep -q "did not finish the TLS handshake" kernel.log && break; sleep 0.1; done
grep -q "refused: it did not finish the TLS handshake within" kernel.log
ok "the silent peer is closed at the handshake's deadline" $?
kill "$idle"; idle=

t "stop over TCP" 0 "" -- "$J" stop "${C[@]}" --tls-cert client.pem --tls-key client.key
t_until "the kernel stopped" 1 "no kernel is running" -- "$J" status --store "$tmp/a"

# a kernel that takes a token
p=$(free_port)
start_kernel "$tmp/b" --listen "tcp://127.0.0.1:$p" --tls-cert kernel.pem --tls-key kernel.key --token-file token
ok "kernel with a token starts" $?
C=(--connect "tcp://127.0.0.1:$p" --tls-ca ca.pem)
t "the token accepted" 0 "^6$" -- "$J" eval "${C[@]}" --token-file token "(* 2 3)"
t "a wrong token refused" 1 "refused this client: the token does not match" -- "$J" eval "${C[@]}" --token-file wrong "(* 2 3)"
t "a readable token file refused" 1 "may be read or written by others.*chmod 600 open" -- \
  "$J" eval "${C[@]}" --token-file open "(* 2 3)"
grep -q "refused: its token does not match" kernel.log
ok "the kernel logs the wrong token" $?
t "nothing of the refused ran" 0 "revision: +1[^0-9]" -- "$J" status --store "$tmp/b"
"$J" stop --store "$tmp/b" >/dev/null 2>&1
finish
