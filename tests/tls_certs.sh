# tests/tls_certs.sh — certificates for the TLS tests, made with the openssl
# command in the current directory.  Source it, then call tls_certs: a CA
# (ca.pem), the kernel's certificate for 127.0.0.1 only (kernel.pem,
# kernel.key), a client's (client.pem, client.key), a stranger CA with a
# client of its own (intruder.pem, intruder.key), and private token files
# (token, wrong) beside one others can read (open).
_tls_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
_tls_ca() {  # NAME: a self-signed CA
  _tls_key "$1.key" && openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$1" 2>/dev/null
}
_tls_cert() {  # NAME CA [SAN]: a certificate signed by CA
  _tls_key "$1.key" && openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null &&
    { [[ -n ${3:-} ]] && echo "subjectAltName=$3" >"$1.ext" || : >"$1.ext"; } &&
    openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" -days 2 \
      -extfile "$1.ext" 2>/dev/null
}
tls_certs() {
  _tls_ca ca && _tls_cert kernel ca IP:127.0.0.1 && _tls_cert client ca && _tls_ca stranger &&
    _tls_cert intruder stranger || return 1
  openssl rand -hex 32 >token && chmod 600 token
  openssl rand -hex 32 >wrong && chmod 600 wrong
  cp token open && chmod 644 open
}
free_port() {  # a TCP port free on 127.0.0.1 now
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
