#!/usr/bin/env bash
# Build etcd, kube-apiserver and kubectl from Go modules (tests/tools/go.mod)
# into $EVAL_ADMISSION_CACHE/k8s-<version>/bin, and copy the Kueue and JobSet
# CRDs into $EVAL_ADMISSION_CACHE/crds/. Skips whatever is already there.
# Progress goes to stderr; stdout is what the test environment
# (tests/common/control_plane/) reads: bin=, kueue_crds=, jobset_crds= lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# build OUT: each binary with its own `go build`, so each is timed. Static
# like upstream's; the Kubernetes ones with the -X flags of k8s_ldflags.
build() {
	local start=$SECONDS
	log "building etcd $ETCD_VERSION, kube-apiserver and kubectl $K8S_VERSION with $(go_version) (slow the first time)"
	go_build "$TOOLS_DIR" -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3
	log "etcd built ($((SECONDS - start))s)"
	go_build "$TOOLS_DIR" -ldflags "$(k8s_ldflags)" -o "$1/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
	log "kube-apiserver built ($((SECONDS - start))s)"
	go_build "$TOOLS_DIR" -ldflags "$(k8s_ldflags)" -o "$1/kubectl" k8s.io/kubernetes/cmd/kubectl
	log "kubectl built ($((SECONDS - start))s)"
}

# copy_crds MODULE VERSION DEST: copies config/components/crd/bases/*.yaml of
# MODULE@VERSION from the Go module cache (downloaded through the proxy).
copy_crds() {
	local module=$1 version=$2 dest=$3 json dir
	if compgen -G "$dest/*.yaml" >/dev/null; then
		return 0
	fi
	use_go
	# Run outside any module so go.mod/go.sum here are not consulted or touched.
	json=$(cd / && GOFLAGS=-mod=mod go mod download -json "$module@$version")
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
	[[ -d $dir/config/components/crd/bases ]] || die "no CRDs in $module@$version: $json"
	install_yaml "$dest" "$dir/config/components/crd/bases"
	local files=("$dest"/*.yaml)
	log "copied ${#files[@]} CRDs from $module@$version to $dest"
}

main() {
	hold_lock "$EVAL_ADMISSION_CACHE/.build.lock"
	# What the binaries were built from (tests/tools/go.mod and go.sum): a
	# change, e.g. a bumped dependency in go.sum, rebuilds them in place. The
	# stamp lives inside the bin dir.
	build_cached "etcd, kube-apiserver and kubectl" "$K8S_BIN_DIR" "$K8S_BIN_DIR/.stamp" "$(module_stamp "$TOOLS_DIR")" \
		build etcd kube-apiserver kubectl
	copy_crds sigs.k8s.io/kueue "$KUEUE_VERSION" "$KUEUE_CRD_DIR"
	copy_crds sigs.k8s.io/jobset "$JOBSET_VERSION" "$JOBSET_CRD_DIR"
	printf 'bin=%s\nkueue_crds=%s\njobset_crds=%s\n' "$K8S_BIN_DIR" "$KUEUE_CRD_DIR" "$JOBSET_CRD_DIR"
}

main "$@"
