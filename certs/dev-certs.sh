#!/usr/bin/env bash
# Development certificates for `make run` and local tests: a throwaway CA and a
# serving certificate for localhost / 127.0.0.1, written to certs/dev/ (ignored
# by git: no private key is ever committed). Idempotent: keeps existing files
# unless they expire within a day.
set -euo pipefail
dir="${1:-$(dirname "$0")/dev}"
mkdir -p "$dir"
cd "$dir"
if [[ -f tls.crt && -f tls.key ]] && openssl x509 -checkend 86400 -noout -in tls.crt >/dev/null 2>&1; then
  exit 0
fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj "/CN=eval-admission dev CA" -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=localhost" -keyout tls.key -out tls.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n' > ext.cnf
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile ext.cnf -out tls.crt 2>/dev/null
rm -f tls.csr ext.cnf ca.srl
chmod 600 ca.key tls.key
echo "development certificates in $(pwd)"
