#!/usr/bin/env bash
# Build cert-manager's controller and cainjector (the `tool` packages of
# tests/cert-manager/go.mod) into $EVAL_ADMISSION_CACHE/cert-manager-<version>/bin,
# and copy its CRDs (Certificate, CertificateRequest, Issuer, ClusterIssuer,
# Order, Challenge: the controller's informers wait for all six) to
# cert-manager-<version>/crds, so tests of the manifests/cert-manager overlay
# need neither Go nor the network. Skips the build when the binaries were built
# from the current go.mod/go.sum, and the copy when it is there.
# Progress goes to stderr; stdout is cert_manager_bin= and cert_manager_crds= lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CM_MOD_DIR=$REPO_ROOT/tests/cert-manager
CM_MODULE=github.com/cert-manager/cert-manager
CM_BINARIES=(controller cainjector)
CM_VERSION=$(require_version "$CM_MOD_DIR/go.mod" "$CM_MODULE")
CM_DIR=$EVAL_ADMISSION_CACHE/cert-manager-$CM_VERSION
CM_BIN_DIR=$CM_DIR/bin
CM_CRD_DIR=$CM_DIR/crds

# build OUT: both binaries in one `go build`, which compiles their shared
# packages once. Static like upstream's images; the -X flags are what
# upstream's Makefile sets (`--version`, the User-Agent).
build() {
	local b pkgs=() pkg=$CM_MODULE/pkg/util
	for b in "${CM_BINARIES[@]}"; do
		pkgs+=("$CM_MODULE/cmd/$b")
	done
	log "building cert-manager $CM_VERSION (${CM_BINARIES[*]}) with $(go_version) (slow the first time)"
	go_build "$CM_MOD_DIR" \
		-ldflags "-s -w -X $pkg.AppVersion=$CM_VERSION -X $pkg.AppGitCommit=module-$CM_VERSION" \
		-o "$1/" "${pkgs[@]}"
}

# The module's deploy/crds/crd-*.yaml are Helm templates only in their labels:
# the chart's name and release labels become plain `cert-manager` and the
# "Generated labels" include (a comment to YAML) goes.
copy_crds() {
	[[ -f $CM_CRD_DIR/crd-certificates.yaml ]] && return 0
	use_go
	local dir f
	dir=$(module_dir "$CM_MOD_DIR" "$CM_MODULE")
	[[ -f $dir/deploy/crds/crd-certificates.yaml ]] || die "no CRDs in $dir/deploy/crds"
	new_tmp_dir "$CM_CRD_DIR"
	for f in "$dir"/deploy/crds/crd-*.yaml; do
		sed -e "s/'{{ template \"cert-manager.name\" \. }}'/cert-manager/" \
			-e "s/'{{ \.Release\.Name }}'/cert-manager/" \
			-e '/# Generated labels {{/d' "$f" >"$TMP_DIR/$(basename "$f")"
	done
	if grep -l '{{' "$TMP_DIR"/*.yaml >&2; then
		die "template expressions left in the CRDs above"
	fi
	replace_with_tmp_dir "$CM_CRD_DIR"
	log "copied cert-manager's CRDs to $CM_CRD_DIR"
}

main() {
	# A separate lock from the other builders'.
	hold_lock "$EVAL_ADMISSION_CACHE/.build-cert-manager.lock"
	# The stamp (go.mod and go.sum) lives inside the bin dir, so it is
	# replaced together with the binaries.
	build_cached cert-manager "$CM_BIN_DIR" "$CM_BIN_DIR/.stamp" "$(module_stamp "$CM_MOD_DIR")" build "${CM_BINARIES[@]}"
	copy_crds
	printf 'cert_manager_bin=%s\ncert_manager_crds=%s\n' "$CM_BIN_DIR" "$CM_CRD_DIR"
}

main "$@"
