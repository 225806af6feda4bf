#!/bin/sh
# A private CA, a server certificate for Redis and a client certificate for ShiftStream's
# processes (services, CLI, monolith), as PEM files in OUT:
#   ca.crt ca.key   server.crt server.key   client.crt client.key
#   infra/redis/make-certs.sh OUT [NAME ...]     # NAMEs: DNS names or IPs the server answers as
# Existing files are kept (run it again safely). Redis (7.x) checks that a client's certificate
# is signed by ca.crt (`tls-auth-clients yes`); who the client is comes from its ACL login.
# The server certificate also serves as a client one (a replica connecting to its primary, a
# sentinel to the nodes), hence both key usages. For production, use your own PKI or
# cert-manager; this is for the compose stack, a first Kubernetes deploy and the tests.
set -eu
out=${1:?usage: make-certs.sh OUT [NAME ...]}
shift
[ $# -gt 0 ] || set -- localhost 127.0.0.1
days=${CERT_DAYS:-825}
mkdir -p "$out"
cd "$out"
san=""
for name in "$@"; do
  case "$name" in
    *[!0-9.]*) san="$san,DNS:$name" ;;
    *) san="$san,IP:$name" ;;
  esac
done
san=${san#,}
if [ ! -f ca.crt ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -days "$days" -subj "/CN=ShiftStream Redis CA" \
    -keyout ca.key -out ca.crt 2>/dev/null
fi
issue() {  # issue NAME EXTENSIONS
  [ -f "$1.crt" ] && return 0
  printf '%b\n' "$2" > "$1.ext"
  openssl req -newkey rsa:3072 -nodes -subj "/CN=shiftstream-$1" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
issue server "subjectAltName=$san\nextendedKeyUsage=serverAuth,clientAuth"
issue client "extendedKeyUsage=clientAuth"
chmod 600 ca.key server.key client.key
echo "certificates in $out (server names: $san)"
