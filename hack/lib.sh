# shellcheck shell=bash
# Shared helpers for the builders in hack/ (build-tools.sh, build-node.sh,
# build-kueue.sh, build-oracle.sh, deploy-crds.sh).
# Sourced, not executed. Go is test infrastructure only: it builds the
# Kubernetes control plane the integration tests run against.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_DIR=$REPO_ROOT/tests/tools

# Built binaries and CRDs live outside the repo so `git clean` and fresh
# clones (CI) reuse them; everything under it is keyed by version.
EVAL_ADMISSION_CACHE=${EVAL_ADMISSION_CACHE:-$HOME/.cache/eval-admission}

# CRD sources. Not required by tests/tools/go.mod: kueue v0.19.2 requires
# k8s.io/kubernetes v1.36.0, which would drag the apiserver off v1.35.4.
KUEUE_VERSION=v0.19.2
JOBSET_VERSION=v0.12.0

log() { echo "[$(basename "$0")] $*" >&2; }
die() { log "error: $*"; exit 1; }

# Version of a module required in tests/tools/go.mod (read with awk, not
# `go list`, so the already-built fast path needs neither Go nor the network).
mod_version() {
	awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$TOOLS_DIR/go.mod"
}

K8S_VERSION=$(mod_version k8s.io/kubernetes)
ETCD_VERSION=$(mod_version go.etcd.io/etcd/server/v3)
[[ -n $K8S_VERSION && -n $ETCD_VERSION ]] || die "cannot read versions from $TOOLS_DIR/go.mod"

# Used by the scripts that source this file.
# shellcheck disable=SC2034
K8S_BIN_DIR=$EVAL_ADMISSION_CACHE/k8s-$K8S_VERSION/bin
# shellcheck disable=SC2034
KUEUE_CRD_DIR=$EVAL_ADMISSION_CACHE/crds/kueue-$KUEUE_VERSION
# shellcheck disable=SC2034
JOBSET_CRD_DIR=$EVAL_ADMISSION_CACHE/crds/jobset-$JOBSET_VERSION

# Go lives in /usr/local/go on the project machines but is not always on PATH.
use_go() {
	if ! command -v go >/dev/null 2>&1; then
		PATH=/usr/local/go/bin:$PATH
	fi
	command -v go >/dev/null 2>&1 || die "go not found (expected in PATH or /usr/local/go/bin)"
}

# -X flags that hack/lib/version.sh would set upstream, so that
# `kube-apiserver --version`, `kubectl version`, `kubelet --version` etc.
# report the real version (the apiserver and kubelet also derive their
# binary/emulation version from gitVersion). Used by build-tools.sh and
# build-node.sh for everything they build from k8s.io/kubernetes.
k8s_ldflags() {
	local v=$K8S_VERSION major minor pkg flags="-s -w"
	major=${v#v}; major=${major%%.*}
	minor=${v#v"$major".}; minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	done
	echo "$flags"
}
