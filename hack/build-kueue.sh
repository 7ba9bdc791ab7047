#!/usr/bin/env bash
# Build the Kueue controller manager (sigs.k8s.io/kueue/cmd/kueue, pinned by
# the `tool` directive in tests/kueue/go.mod) into
# $EVAL_ADMISSION_CACHE/kueue-<version>/bin/kueue, and copy the module's webhook
# kustomization (config/components/webhook: the configurations Kueue's release
# installs) to kueue-<version>/webhook, so the test environment
# (tests/common/control_plane.rs) needs neither Go nor the network. Skips the
# build when the binary was built from the current go.mod/go.sum, and the copy
# when it is there. Progress goes to stderr; stdout is bin= and webhooks= lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUEUE_MOD_DIR=$REPO_ROOT/tests/kueue
KUEUE_DIR=$EVAL_ADMISSION_CACHE/kueue-$KUEUE_VERSION
KUEUE_BIN=$KUEUE_DIR/bin/kueue
KUEUE_WEBHOOKS=$KUEUE_DIR/webhook

# What the binary was built from: a changed go.mod or go.sum rebuilds it.
build_stamp() {
	cat "$KUEUE_MOD_DIR/go.mod" "$KUEUE_MOD_DIR/go.sum" | sha256sum | cut -d' ' -f1
}

up_to_date() {
	[[ -x $KUEUE_BIN && -f $KUEUE_DIR/.stamp ]] &&
		[[ $(<"$KUEUE_DIR/.stamp") == "$(build_stamp)" ]]
}

check_version() {
	local pinned
	pinned=$(awk '$1 == "sigs.k8s.io/kueue" && $2 ~ /^v/ { print $2; exit }' "$KUEUE_MOD_DIR/go.mod")
	[[ $pinned == "$KUEUE_VERSION" ]] ||
		die "tests/kueue/go.mod pins sigs.k8s.io/kueue $pinned, hack/lib.sh says $KUEUE_VERSION"
}

build() {
	use_go
	local out=$KUEUE_DIR/bin.tmp.$$ start=$SECONDS pkg=sigs.k8s.io/kueue/pkg/version
	rm -rf "$out"; mkdir -p "$out"
	trap 'rm -rf "$out"' EXIT
	log "building the Kueue $KUEUE_VERSION manager with $(go version | cut -d' ' -f3) (slow the first time)"
	# Static like upstream's image; -trimpath keeps the cache relocatable;
	# -mod=readonly fails instead of silently changing go.mod/go.sum.
	env -C "$KUEUE_MOD_DIR" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
		go build -trimpath -o "$out/kueue" \
		-ldflags "-s -w -X $pkg.GitVersion=$KUEUE_VERSION -X $pkg.GitCommit=module-$KUEUE_VERSION -X $pkg.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		sigs.k8s.io/kueue/cmd/kueue
	rm -f "$KUEUE_DIR/.stamp"
	rm -rf "${KUEUE_DIR:?}/bin"
	mv "$out" "$KUEUE_DIR/bin"
	build_stamp >"$KUEUE_DIR/.stamp"
	trap - EXIT
	log "built in $((SECONDS - start))s: $KUEUE_BIN"
}

# The module's config/components/webhook (manifests.yaml, the kustomization
# that gives the job webhooks their namespaceSelector, service.yaml).
copy_webhooks() {
	[[ -f $KUEUE_WEBHOOKS/kustomization.yaml ]] && return 0
	use_go
	local dir tmp=$KUEUE_WEBHOOKS.tmp.$$
	dir=$(env -C "$KUEUE_MOD_DIR" GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
	[[ -f $dir/config/components/webhook/manifests.yaml ]] || die "no webhook manifests in $dir"
	rm -rf "$tmp"; mkdir -p "$tmp"
	# The module cache is read-only; install gives the copies normal modes.
	install -m 0644 "$dir"/config/components/webhook/*.yaml "$tmp/"
	rm -rf "$KUEUE_WEBHOOKS"; mv "$tmp" "$KUEUE_WEBHOOKS"
	log "copied Kueue's webhook configurations to $KUEUE_WEBHOOKS"
}

main() {
	check_version
	mkdir -p "$EVAL_ADMISSION_CACHE"
	# Serialize concurrent callers; a separate lock from build-tools.sh's.
	exec 9>"$EVAL_ADMISSION_CACHE/.build-kueue.lock"
	flock -w 3600 9 || die "another build-kueue.sh holds $EVAL_ADMISSION_CACHE/.build-kueue.lock"
	mkdir -p "$KUEUE_DIR"
	if up_to_date; then
		log "kueue up to date in $KUEUE_DIR"
	else
		build
	fi
	copy_webhooks
	printf 'bin=%s\nwebhooks=%s\n' "$KUEUE_BIN" "$KUEUE_WEBHOOKS"
}

main "$@"
