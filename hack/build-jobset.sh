#!/usr/bin/env bash
# Build the JobSet controller manager (sigs.k8s.io/jobset, the module's root
# package main, pinned by the `tool` directive in tests/jobset/go.mod) into
# $EVAL_ADMISSION_CACHE/jobset-<version>/bin/jobset-manager, so the node tests
# run the real controller (JobSet -> child Jobs) without Go or the network.
# Skips the build when the binary was built from the current go.mod/go.sum.
# Also copies the module's webhook kustomization (config/components/webhook:
# the configurations JobSet's release installs) to jobset-<version>/webhook,
# so the test harness registers them by URL as it does Kueue's.
# Progress goes to stderr; stdout is the jobset_bin=<dir> (the directory
# holding jobset-manager) and jobset_webhooks=<dir> lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

JOBSET_MOD_DIR=$REPO_ROOT/tests/jobset
JOBSET_DIR=$EVAL_ADMISSION_CACHE/jobset-$JOBSET_VERSION
JOBSET_WEBHOOKS=$JOBSET_DIR/webhook

# build OUT: the manager, static like upstream's image. The -X flags are what
# upstream's Makefile sets (logged at startup).
build() {
	local pkg=sigs.k8s.io/jobset/pkg/version
	log "building the JobSet $JOBSET_VERSION manager with $(go_version) (slow the first time)"
	go_build "$JOBSET_MOD_DIR" -o "$1/jobset-manager" \
		-ldflags "-s -w -X $pkg.GitVersion=$JOBSET_VERSION -X $pkg.GitCommit=module-$JOBSET_VERSION" \
		sigs.k8s.io/jobset
}

main() {
	# The controller must be the version whose CRDs deploy-crds.sh installs.
	check_pin "$JOBSET_MOD_DIR/go.mod" sigs.k8s.io/jobset "$JOBSET_VERSION"
	# A separate lock from the other builders'.
	hold_lock "$EVAL_ADMISSION_CACHE/.build-jobset.lock"
	# The stamp (go.mod and go.sum) sits beside bin/, not in it.
	build_cached jobset "$JOBSET_DIR/bin" "$JOBSET_DIR/.stamp" "$(module_stamp "$JOBSET_MOD_DIR")" build jobset-manager
	# manifests.yaml, its patches, the kustomization and service.yaml.
	copy_webhooks "$JOBSET_MOD_DIR" sigs.k8s.io/jobset "$JOBSET_WEBHOOKS" patches
	printf 'jobset_bin=%s\njobset_webhooks=%s\n' "$JOBSET_DIR/bin" "$JOBSET_WEBHOOKS"
}

main "$@"
