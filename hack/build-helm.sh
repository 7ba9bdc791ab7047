#!/usr/bin/env bash
# Build Helm (the `tool` package of tests/helm/go.mod) into
# $EVAL_ADMISSION_CACHE/helm-<version>/bin, for the chart's tests: helm lint,
# helm template against the kustomize tree (tests/chart.rs), helm install on
# the node (tests/node_e2e.rs). Skips the build when the binary was built from
# the current go.mod/go.sum.
# Progress goes to stderr; stdout is one helm_bin= line.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HELM_MOD_DIR=$REPO_ROOT/tests/helm
HELM_MODULE=helm.sh/helm/v3
HELM_VERSION=$(require_version "$HELM_MOD_DIR/go.mod" "$HELM_MODULE")
HELM_BIN_DIR=$EVAL_ADMISSION_CACHE/helm-$HELM_VERSION/bin

# build OUT: static, with upstream's -X flags (its Makefile): the version
# `helm version` prints, and the Kubernetes release `helm template` and `helm
# lint` assume, that of the client-go it is built with (else 1.20, which the
# chart's kubeVersion refuses).
build() {
	local k8s major minor
	k8s=$(go_mod_version "$HELM_MOD_DIR/go.mod" k8s.io/client-go)
	[[ $k8s =~ ^v0\.([0-9]+)\. ]] || die "cannot read k8s.io/client-go's version from $HELM_MOD_DIR/go.mod"
	major=1 minor=${BASH_REMATCH[1]}
	log "building Helm $HELM_VERSION (Kubernetes $major.$minor) with $(go_version) (slow the first time)"
	go_build "$HELM_MOD_DIR" \
		-ldflags "-s -w -X $HELM_MODULE/internal/version.version=$HELM_VERSION \
			-X $HELM_MODULE/pkg/lint/rules.k8sVersionMajor=$major -X $HELM_MODULE/pkg/lint/rules.k8sVersionMinor=$minor \
			-X $HELM_MODULE/pkg/chartutil.k8sVersionMajor=$major -X $HELM_MODULE/pkg/chartutil.k8sVersionMinor=$minor" \
		-o "$1/" "$HELM_MODULE/cmd/helm"
}

main() {
	hold_lock "$EVAL_ADMISSION_CACHE/.build-helm.lock"
	# The stamp covers this script too: its -X flags are part of the build.
	build_cached helm "$HELM_BIN_DIR" "$HELM_BIN_DIR/.stamp" "$(module_stamp "$HELM_MOD_DIR") $(stamp_of "${BASH_SOURCE[0]}")" build helm
	printf 'helm_bin=%s\n' "$HELM_BIN_DIR/helm"
}

main "$@"
