#!/usr/bin/env bash
# Serving certificate for clusters without cert-manager: a CA and a certificate
# for <service>.<namespace>.svc, written with the caBundle patches that
# manifests/static-certs applies. Keep ca.key somewhere safe to rotate later;
# rerun with FORCE=1 to issue a new pair (the server reloads it in place).
#
#   ./certs/make-serving-cert.sh [OUT_DIR] [SERVICE] [NAMESPACE]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../manifests/static-certs/generated}"
service="${2:-eval-admission}"
namespace="${3:-eval-admission-system}"
days="${DAYS:-365}"
mkdir -p "$out"
cd "$out"
if [[ -f tls.crt && -z "${FORCE:-}" ]]; then
  echo "certificates already in $(pwd) (FORCE=1 to reissue)"
  exit 0
fi
if [[ ! -f ca.key ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=${service}-ca" -keyout ca.key -out ca.crt 2>/dev/null
fi
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${service}.${namespace}.svc" \
  -keyout tls.key -out tls.csr 2>/dev/null
cat > ext.cnf <<EXT
subjectAltName=DNS:${service}.${namespace}.svc,DNS:${service}.${namespace}.svc.cluster.local
extendedKeyUsage=serverAuth
keyUsage=digitalSignature
EXT
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" -extfile ext.cnf -out tls.crt 2>/dev/null
rm -f tls.csr ext.cnf ca.srl
chmod 600 ca.key tls.key
bundle="$(base64 -w0 < ca.crt)"
for kind in mutating validating; do
  printf -- '- op: add\n  path: /webhooks/0/clientConfig/caBundle\n  value: %s\n' "$bundle" > "cabundle-$kind.yaml"
done
echo "serving certificate for ${service}.${namespace}.svc in $(pwd)"
