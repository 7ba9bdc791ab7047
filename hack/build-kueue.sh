#!/usr/bin/env bash
# Build the Kueue controller manager (sigs.k8s.io/kueue/cmd/kueue) into
# $EVAL_ADMISSION_CACHE/kueue-<release>/bin/kueue, and copy the release's
# webhook kustomization (config/components/webhook: the configurations its
# release installs) to kueue-<release>/webhook and its CRDs to
# kueue-<release>/crds, so the test environment (tests/common/control_plane/)
# needs neither Go nor the network. Skips the build when the binary was built
# from the current module set, and each copy when it is there. Progress goes
# to stderr; stdout is bin=, webhooks= and crds= lines.
#
# Usage: build-kueue.sh [RELEASE]. RELEASE defaults to $KUEUE_VERSION, pinned
# by the `tool` directive in tests/kueue/go.mod; another release is built from
# its own pinned module set, tests/kueue/releases/RELEASE.mod and .sum (the
# ones its judge, hack/build-oracle.sh, is built from).
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUEUE_MOD_DIR=$REPO_ROOT/tests/kueue
RELEASE=${1:-$KUEUE_VERSION}
KUEUE_DIR=$EVAL_ADMISSION_CACHE/kueue-$RELEASE
KUEUE_BIN=$KUEUE_DIR/bin/kueue

# build OUT: the manager, static like upstream's image.
build() {
	local pkg=sigs.k8s.io/kueue/pkg/version
	log "building the Kueue $RELEASE manager with $(go_version) (slow the first time)"
	go_build "$KUEUE_MOD_DIR" -o "$1/kueue" \
		-ldflags "-s -w -X $pkg.GitVersion=$RELEASE -X $pkg.GitCommit=module-$RELEASE -X $pkg.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		sigs.k8s.io/kueue/cmd/kueue
}

# copy_crds DEST: the release's CRDs (config/components/crd/bases), unless there.
copy_crds() {
	compgen -G "$1/*.yaml" >/dev/null && return 0
	use_go
	install_yaml "$1" "$(module_dir "$KUEUE_MOD_DIR" sigs.k8s.io/kueue)/config/components/crd/bases"
	log "copied the CRDs of Kueue $RELEASE to $1"
}

main() {
	local stamp
	if [[ $RELEASE == "$KUEUE_VERSION" ]]; then
		check_pin "$KUEUE_MOD_DIR/go.mod" sigs.k8s.io/kueue "$KUEUE_VERSION"
		stamp=$(module_stamp "$KUEUE_MOD_DIR")
	else
		GO_MODFILE=$KUEUE_MOD_DIR/releases/$RELEASE.mod
		[[ -f $GO_MODFILE && -f ${GO_MODFILE%.mod}.sum ]] ||
			die "no module set pinned for Kueue $RELEASE: tests/kueue/releases/$RELEASE.mod and .sum"
		check_pin "$GO_MODFILE" sigs.k8s.io/kueue "$RELEASE"
		export GO_MODFILE
		stamp=$(stamp_of "$GO_MODFILE" "${GO_MODFILE%.mod}.sum")
	fi
	# A separate lock from build-tools.sh's.
	hold_lock "$EVAL_ADMISSION_CACHE/.build-kueue.lock"
	# The stamp (go.mod and go.sum) sits beside bin/, not in it.
	build_cached "kueue $RELEASE" "$KUEUE_DIR/bin" "$KUEUE_DIR/.stamp" "$stamp" build kueue
	# manifests.yaml, the kustomization that gives the job webhooks their
	# namespaceSelector, service.yaml.
	copy_webhooks "$KUEUE_MOD_DIR" sigs.k8s.io/kueue "$KUEUE_DIR/webhook"
	copy_crds "$KUEUE_DIR/crds"
	printf 'bin=%s\nwebhooks=%s\ncrds=%s\n' "$KUEUE_BIN" "$KUEUE_DIR/webhook" "$KUEUE_DIR/crds"
}

main "$@"
