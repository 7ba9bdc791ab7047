#!/usr/bin/env bash
# CRDs the deployment manifests use besides Kueue's: cert-manager's (the default
# overlay's Issuer and Certificate), the Prometheus Operator's (ServiceMonitor,
# PrometheusRule) and the Policy WG's PolicyReport (the audit writes one per
# namespace when it is installed; Kyverno's module ships it, at the version the
# Kyverno peer in tests/kyverno pins), copied from their Go modules into the
# cache. Prints the folder.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CERT_MANAGER_VERSION=v1.21.2
PROMETHEUS_OPERATOR_VERSION=v0.85.0
KYVERNO_VERSION=$(awk '$1 == "github.com/kyverno/kyverno" {print $2}' "$(dirname "${BASH_SOURCE[0]}")/../tests/kyverno/go.mod")
out=$EVAL_ADMISSION_CACHE/crds/deploy-cert-manager-$CERT_MANAGER_VERSION-prometheus-operator-$PROMETHEUS_OPERATOR_VERSION-kyverno-$KYVERNO_VERSION

if [[ ! -f $out/done ]]; then
	use_go
	# download_dir MODULE@VERSION (not lib.sh's module_dir: tests/tools/go.mod
	# requires neither module).
	download_dir() { (cd "$TOOLS_DIR" && go mod download -json "$1" | awk -F'"' '/"Dir"/ {print $4}'); }
	cert_manager=$(download_dir "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION")
	prometheus=$(download_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")
	kyverno=$(download_dir "github.com/kyverno/kyverno@$KYVERNO_VERSION")
	rm -rf "$out"; mkdir -p "$out"
	cp "$cert_manager"/deploy/crds/cert-manager.io_*.yaml "$out/"
	cp "$prometheus"/example/prometheus-operator-crd/monitoring.coreos.com_{servicemonitors,prometheusrules}.yaml "$out/"
	cp "$kyverno"/config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml "$out/"
	chmod u+w "$out"/*.yaml
	touch "$out/done"
	log "deployment CRDs in $out"
fi
echo "$out"
