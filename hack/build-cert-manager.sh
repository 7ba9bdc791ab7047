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
# Read from go.mod (not `go list`), so the up-to-date path needs no Go.
CM_VERSION=$(awk -v m="$CM_MODULE" '$1 == m && $2 ~ /^v/ { print $2; exit }
	$1 == "require" && $2 == m && $3 ~ /^v/ { print $3; exit }' "$CM_MOD_DIR/go.mod")
[[ -n $CM_VERSION ]] || die "cannot read the $CM_MODULE version from $CM_MOD_DIR/go.mod"
CM_DIR=$EVAL_ADMISSION_CACHE/cert-manager-$CM_VERSION
CM_BIN_DIR=$CM_DIR/bin
CM_CRD_DIR=$CM_DIR/crds

# What the binaries were built from: a changed go.mod or go.sum rebuilds them.
# The stamp lives inside the bin dir so it is replaced together with them.
build_stamp() {
	cat "$CM_MOD_DIR/go.mod" "$CM_MOD_DIR/go.sum" | sha256sum | cut -d' ' -f1
}

up_to_date() {
	local b
	for b in "${CM_BINARIES[@]}"; do
		[[ -x $CM_BIN_DIR/$b ]] || return 1
	done
	[[ -f $CM_BIN_DIR/.stamp && $(<"$CM_BIN_DIR/.stamp") == "$(build_stamp)" ]]
}

# Both binaries in one `go build`, which compiles their shared packages once.
build() {
	use_go
	local out=$CM_DIR/bin.tmp.$$ start=$SECONDS b pkgs=() pkg=$CM_MODULE/pkg/util
	for b in "${CM_BINARIES[@]}"; do
		pkgs+=("$CM_MODULE/cmd/$b")
	done
	rm -rf "$out"; mkdir -p "$out"
	trap 'rm -rf "$out"' EXIT
	log "building cert-manager $CM_VERSION (${CM_BINARIES[*]}) with $(go version | cut -d' ' -f3) (slow the first time)"
	# Static like upstream's images; -trimpath keeps the cache relocatable;
	# -mod=readonly fails instead of silently changing go.mod/go.sum. The -X
	# flags are what upstream's Makefile sets (`--version`, the User-Agent).
	env -C "$CM_MOD_DIR" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
		go build -trimpath \
		-ldflags "-s -w -X $pkg.AppVersion=$CM_VERSION -X $pkg.AppGitCommit=module-$CM_VERSION" \
		-o "$out/" "${pkgs[@]}"
	build_stamp >"$out/.stamp"
	rm -rf "$CM_BIN_DIR"
	mv "$out" "$CM_BIN_DIR"
	trap - EXIT
	log "built in $((SECONDS - start))s: $CM_BIN_DIR"
}

# The module's deploy/crds/crd-*.yaml are Helm templates only in their labels:
# the chart's name and release labels become plain `cert-manager` and the
# "Generated labels" include (a comment to YAML) goes.
copy_crds() {
	[[ -f $CM_CRD_DIR/crd-certificates.yaml ]] && return 0
	use_go
	local dir tmp=$CM_CRD_DIR.tmp.$$ f
	dir=$(env -C "$CM_MOD_DIR" GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' "$CM_MODULE")
	[[ -f $dir/deploy/crds/crd-certificates.yaml ]] || die "no CRDs in $dir/deploy/crds"
	rm -rf "$tmp"; mkdir -p "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	for f in "$dir"/deploy/crds/crd-*.yaml; do
		sed -e "s/'{{ template \"cert-manager.name\" \. }}'/cert-manager/" \
			-e "s/'{{ \.Release\.Name }}'/cert-manager/" \
			-e '/# Generated labels {{/d' "$f" >"$tmp/$(basename "$f")"
	done
	if grep -l '{{' "$tmp"/*.yaml >&2; then
		die "template expressions left in the CRDs above"
	fi
	rm -rf "$CM_CRD_DIR"; mv "$tmp" "$CM_CRD_DIR"
	trap - EXIT
	log "copied cert-manager's CRDs to $CM_CRD_DIR"
}

main() {
	mkdir -p "$CM_DIR"
	# Serialize concurrent callers; a separate lock from the other builders'.
	exec 9>"$EVAL_ADMISSION_CACHE/.build-cert-manager.lock"
	flock -w 3600 9 || die "another build-cert-manager.sh holds $EVAL_ADMISSION_CACHE/.build-cert-manager.lock"
	if up_to_date; then
		log "cert-manager up to date in $CM_BIN_DIR"
	else
		build
	fi
	copy_crds
	printf 'cert_manager_bin=%s\ncert_manager_crds=%s\n' "$CM_BIN_DIR" "$CM_CRD_DIR"
}

main "$@"
