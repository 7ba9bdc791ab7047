#!/usr/bin/env bash
# Build the Kueue controller manager (sigs.k8s.io/kueue/cmd/kueue, pinned by
# the `tool` directive in tests/kueue/go.mod) into
# $EVAL_ADMISSION_CACHE/kueue-<version>/bin/kueue, and copy the module's webhook
# kustomization (config/components/webhook: the configurations Kueue's release
# installs) to kueue-<version>/webhook, so the test environment
# (tests/common/control_plane/) needs neither Go nor the network. Skips the
# build when the binary was built from the current go.mod/go.sum, and the copy
# when it is there. Progress goes to stderr; stdout is bin= and webhooks= lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUEUE_MOD_DIR=$REPO_ROOT/tests/kueue
KUEUE_DIR=$EVAL_ADMISSION_CACHE/kueue-$KUEUE_VERSION
KUEUE_BIN=$KUEUE_DIR/bin/kueue
KUEUE_WEBHOOKS=$KUEUE_DIR/webhook

# build OUT: the manager, static like upstream's image.
build() {
	local pkg=sigs.k8s.io/kueue/pkg/version
	log "building the Kueue $KUEUE_VERSION manager with $(go_version) (slow the first time)"
	go_build "$KUEUE_MOD_DIR" -o "$1/kueue" \
		-ldflags "-s -w -X $pkg.GitVersion=$KUEUE_VERSION -X $pkg.GitCommit=module-$KUEUE_VERSION -X $pkg.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		sigs.k8s.io/kueue/cmd/kueue
}

main() {
	check_pin "$KUEUE_MOD_DIR/go.mod" sigs.k8s.io/kueue "$KUEUE_VERSION"
	# A separate lock from build-tools.sh's.
	hold_lock "$EVAL_ADMISSION_CACHE/.build-kueue.lock"
	# The stamp (go.mod and go.sum) sits beside bin/, not in it.
	build_cached kueue "$KUEUE_DIR/bin" "$KUEUE_DIR/.stamp" "$(module_stamp "$KUEUE_MOD_DIR")" build kueue
	# manifests.yaml, the kustomization that gives the job webhooks their
	# namespaceSelector, service.yaml.
	copy_webhooks "$KUEUE_MOD_DIR" sigs.k8s.io/kueue "$KUEUE_WEBHOOKS"
	printf 'bin=%s\nwebhooks=%s\n' "$KUEUE_BIN" "$KUEUE_WEBHOOKS"
}

main "$@"
