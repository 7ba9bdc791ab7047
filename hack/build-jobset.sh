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
JOBSET_BIN=$JOBSET_DIR/bin/jobset-manager
JOBSET_WEBHOOKS=$JOBSET_DIR/webhook

# What the binary was built from: a changed go.mod or go.sum rebuilds it.
build_stamp() {
	cat "$JOBSET_MOD_DIR/go.mod" "$JOBSET_MOD_DIR/go.sum" | sha256sum | cut -d' ' -f1
}

up_to_date() {
	[[ -x $JOBSET_BIN && -f $JOBSET_DIR/.stamp ]] &&
		[[ $(<"$JOBSET_DIR/.stamp") == "$(build_stamp)" ]]
}

# The controller must be the version whose CRDs deploy-crds.sh installs.
check_version() {
	local pinned
	pinned=$(awk '$1 == "sigs.k8s.io/jobset" && $2 ~ /^v/ { print $2; exit }' "$JOBSET_MOD_DIR/go.mod")
	[[ $pinned == "$JOBSET_VERSION" ]] ||
		die "tests/jobset/go.mod pins sigs.k8s.io/jobset $pinned, hack/lib.sh says $JOBSET_VERSION"
}

build() {
	use_go
	local out=$JOBSET_DIR/bin.tmp.$$ start=$SECONDS pkg=sigs.k8s.io/jobset/pkg/version
	rm -rf "$out"; mkdir -p "$out"
	trap 'rm -rf "$out"' EXIT
	log "building the JobSet $JOBSET_VERSION manager with $(go version | cut -d' ' -f3) (slow the first time)"
	# Static like upstream's image; -trimpath keeps the cache relocatable;
	# -mod=readonly fails instead of silently changing go.mod/go.sum. The -X
	# flags are what upstream's Makefile sets (logged at startup).
	env -C "$JOBSET_MOD_DIR" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
		go build -trimpath -o "$out/jobset-manager" \
		-ldflags "-s -w -X $pkg.GitVersion=$JOBSET_VERSION -X $pkg.GitCommit=module-$JOBSET_VERSION" \
		sigs.k8s.io/jobset
	rm -f "$JOBSET_DIR/.stamp"
	rm -rf "${JOBSET_DIR:?}/bin"
	mv "$out" "$JOBSET_DIR/bin"
	build_stamp >"$JOBSET_DIR/.stamp"
	trap - EXIT
	log "built in $((SECONDS - start))s: $JOBSET_BIN"
}

# The module's config/components/webhook (manifests.yaml, its patches, the
# kustomization and service.yaml).
copy_webhooks() {
	[[ -f $JOBSET_WEBHOOKS/kustomization.yaml ]] && return 0
	use_go
	local dir tmp=$JOBSET_WEBHOOKS.tmp.$$
	dir=$(env -C "$JOBSET_MOD_DIR" GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
	[[ -f $dir/config/components/webhook/manifests.yaml ]] || die "no webhook manifests in $dir"
	rm -rf "$tmp"; mkdir -p "$tmp/patches"
	# The module cache is read-only; install gives the copies normal modes.
	install -m 0644 "$dir"/config/components/webhook/*.yaml "$tmp/"
	install -m 0644 "$dir"/config/components/webhook/patches/*.yaml "$tmp/patches/"
	rm -rf "$JOBSET_WEBHOOKS"; mv "$tmp" "$JOBSET_WEBHOOKS"
	log "copied JobSet's webhook configurations to $JOBSET_WEBHOOKS"
}

main() {
	check_version
	mkdir -p "$EVAL_ADMISSION_CACHE"
	# Serialize concurrent callers; a separate lock from the other builders'.
	exec 9>"$EVAL_ADMISSION_CACHE/.build-jobset.lock"
	flock -w 3600 9 || die "another build-jobset.sh holds $EVAL_ADMISSION_CACHE/.build-jobset.lock"
	mkdir -p "$JOBSET_DIR"
	if up_to_date; then
		log "jobset up to date in $JOBSET_DIR"
	else
		build
	fi
	copy_webhooks
	printf 'jobset_bin=%s\njobset_webhooks=%s\n' "$JOBSET_DIR/bin" "$JOBSET_WEBHOOKS"
}

main "$@"
