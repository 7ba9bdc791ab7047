#!/usr/bin/env bash
# Build etcd, kube-apiserver and kubectl from Go modules (tests/tools/go.mod)
# into $EVAL_ADMISSION_CACHE/k8s-<version>/bin, and copy the Kueue and JobSet
# CRDs into $EVAL_ADMISSION_CACHE/crds/. Skips whatever is already there.
# Progress goes to stderr; stdout is what the test environment
# (tests/common/control_plane.rs) reads: bin=, kueue_crds=, jobset_crds= lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BINARIES=(etcd kube-apiserver kubectl)

# What the binaries were built from; a change (e.g. a bumped dependency in
# go.sum) triggers a rebuild in place.
build_stamp() {
	cat "$TOOLS_DIR/go.mod" "$TOOLS_DIR/go.sum" | sha256sum | cut -d' ' -f1
}

binaries_ok() {
	local b
	for b in "${BINARIES[@]}"; do
		[[ -x $K8S_BIN_DIR/$b ]] || return 1
	done
	[[ -f $K8S_BIN_DIR/.stamp && $(cat "$K8S_BIN_DIR/.stamp") == "$(build_stamp)" ]]
}

build_binaries() {
	use_go
	local out=$K8S_BIN_DIR.tmp.$$ start=$SECONDS
	rm -rf "$out"; mkdir -p "$out"
	trap 'rm -rf "$out"' EXIT
	log "building etcd $ETCD_VERSION, kube-apiserver and kubectl $K8S_VERSION with $(go version | cut -d' ' -f3) (slow the first time)"
	# Static binaries like upstream's; -trimpath keeps the cache relocatable.
	# GOFLAGS=-mod=readonly: fail instead of silently changing go.mod/go.sum.
	local -a gobuild=(env -C "$TOOLS_DIR" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
		go build -trimpath)
	"${gobuild[@]}" -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
	log "etcd built ($((SECONDS - start))s)"
	"${gobuild[@]}" -ldflags "$(k8s_ldflags)" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
	log "kube-apiserver built ($((SECONDS - start))s)"
	"${gobuild[@]}" -ldflags "$(k8s_ldflags)" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
	log "kubectl built ($((SECONDS - start))s)"
	build_stamp >"$out/.stamp"
	rm -rf "$K8S_BIN_DIR"
	mv "$out" "$K8S_BIN_DIR"
	trap - EXIT
	log "built in $((SECONDS - start))s: $K8S_BIN_DIR"
}

# copy_crds MODULE VERSION DEST: copies config/components/crd/bases/*.yaml of
# MODULE@VERSION from the Go module cache (downloaded through the proxy).
copy_crds() {
	local module=$1 version=$2 dest=$3 json dir tmp
	if compgen -G "$dest/*.yaml" >/dev/null; then
		return 0
	fi
	use_go
	# Run outside any module so go.mod/go.sum here are not consulted or touched.
	json=$(cd / && GOFLAGS=-mod=mod go mod download -json "$module@$version")
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
	[[ -d $dir/config/components/crd/bases ]] || die "no CRDs in $module@$version: $json"
	tmp=$dest.tmp.$$
	rm -rf "$tmp"; mkdir -p "$tmp"
	# The module cache is read-only; install gives the copies normal modes.
	install -m 0644 "$dir"/config/components/crd/bases/*.yaml "$tmp/"
	rm -rf "$dest"; mv "$tmp" "$dest"
	local files=("$dest"/*.yaml)
	log "copied ${#files[@]} CRDs from $module@$version to $dest"
}

main() {
	mkdir -p "$EVAL_ADMISSION_CACHE"
	# Serialize concurrent callers (e.g. two test binaries starting at once).
	exec 9>"$EVAL_ADMISSION_CACHE/.build.lock"
	flock -w 3600 9 || die "another build-tools.sh holds $EVAL_ADMISSION_CACHE/.build.lock"

	if binaries_ok; then
		log "binaries up to date in $K8S_BIN_DIR"
	else
		mkdir -p "$(dirname "$K8S_BIN_DIR")"
		build_binaries
	fi
	copy_crds sigs.k8s.io/kueue "$KUEUE_VERSION" "$KUEUE_CRD_DIR"
	copy_crds sigs.k8s.io/jobset "$JOBSET_VERSION" "$JOBSET_CRD_DIR"
	printf 'bin=%s\nkueue_crds=%s\njobset_crds=%s\n' "$K8S_BIN_DIR" "$KUEUE_CRD_DIR" "$JOBSET_CRD_DIR"
}

main "$@"
