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
# One run at a time per folder (mkdir is atomic everywhere): runs side by side
# would publish one run's CA beside another's certificate.
lock="$(pwd)/.lock"
held=
for _ in $(seq 600); do mkdir "$lock" 2>/dev/null && { held=1; break; }; sleep 0.1; done
[[ -n "$held" ]] || { echo "another run holds $lock; remove it if none is running" >&2; exit 1; }
work="$(mktemp -d "$(pwd)/.work.XXXXXX")"
trap 'rm -rf "$work" "$lock"' EXIT
if [[ -f tls.crt && -z "${FORCE:-}" ]]; then
  echo "certificates already in $(pwd) (FORCE=1 to reissue)"
  exit 0
fi
quiet() { # openssl's output only when it fails
  local log
  if ! log="$("$@" 2>&1)"; then
    echo "$log" >&2
    return 1
  fi
}
if [[ -f ca.key ]]; then
  cp ca.key ca.crt "$work/"
else
  quiet openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=${service}-ca" -keyout "$work/ca.key" -out "$work/ca.crt"
fi
quiet openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${service}.${namespace}.svc" \
  -keyout "$work/tls.key" -out "$work/tls.csr"
cat > "$work/ext.cnf" <<EXT
subjectAltName=DNS:${service}.${namespace}.svc,DNS:${service}.${namespace}.svc.cluster.local
extendedKeyUsage=serverAuth
keyUsage=digitalSignature
EXT
quiet openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -CAserial "$work/ca.srl" -days "$days" -extfile "$work/ext.cnf" -out "$work/tls.crt"
chmod 600 "$work/ca.key" "$work/tls.key"
bundle="$(base64 -w0 < "$work/ca.crt")"
for kind in mutating validating; do
  printf -- '- op: add\n  path: /webhooks/0/clientConfig/caBundle\n  value: %s\n' "$bundle" > "$work/cabundle-$kind.yaml"
done
for file in ca.key ca.crt tls.key cabundle-mutating.yaml cabundle-validating.yaml tls.crt; do
  mv -f "$work/$file" "$file"
done
echo "serving certificate for ${service}.${namespace}.svc in $(pwd)"
