# shellcheck shell=bash
# Shared helpers for the scripts in hack/: where the cache is, the pinned
# versions, and the pieces every builder repeats (reading a version from a
# go.mod, locking, stamping, building with Go, swapping a finished directory
# into place), so that each build-*.sh says only what it builds and why.
# Sourced, not executed. Go is test infrastructure only: it builds the
# Kubernetes control plane (and the controllers) the integration tests run
# against.

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

# go_mod_version GO_MOD MODULE: the version of MODULE that the go.mod file
# GO_MOD requires (in a require block or a one-line `require MODULE VERSION`),
# or nothing. Read with awk, not `go list`, so the already-built fast path
# needs neither Go nor the network.
go_mod_version() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit }
		$1 == "require" && $2 == m && $3 ~ /^v/ { print $3; exit }' "$1"
}

# require_version GO_MOD MODULE: go_mod_version, or die when GO_MOD does not
# require MODULE.
require_version() {
	local v
	v=$(go_mod_version "$1" "$2")
	[[ -n $v ]] || die "cannot read the $2 version from $1"
	echo "$v"
}

# check_pin GO_MOD MODULE VERSION: dies unless GO_MOD requires MODULE at
# VERSION (the version hack/lib.sh names, e.g. for the CRDs it copies).
check_pin() {
	local pinned
	pinned=$(go_mod_version "$1" "$2")
	[[ $pinned == "$3" ]] || die "${1#"$REPO_ROOT"/} pins $2 $pinned, hack/lib.sh says $3"
}

# Version of a module required in tests/tools/go.mod.
mod_version() { go_mod_version "$TOOLS_DIR/go.mod" "$1"; }

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

# hold_lock FILE [SECONDS]: takes an exclusive lock on FILE (fd 9) for the rest
# of the script, waiting up to SECONDS (default an hour): concurrent callers,
# e.g. test binaries starting at once, wait for one build instead of racing.
hold_lock() {
	mkdir -p "$(dirname "$1")"
	exec 9>"$1"
	flock -w "${2:-3600}" 9 || die "another $(basename "$0") holds $1"
}

# stamp_of FILE...: what a build from FILEs is keyed by, the sha256 of their
# concatenation (hex). The stamps in the cache were written this way: a change
# here rebuilds everything everywhere.
stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# module_stamp MODDIR: the stamp of a module's go.mod and go.sum, so that a
# changed requirement or a bumped dependency rebuilds what was built from it.
module_stamp() { stamp_of "$1/go.mod" "$1/go.sum"; }

# is_current STAMP_FILE STAMP DIR BINARY...: every BINARY is an executable in
# DIR and STAMP_FILE holds STAMP.
is_current() {
	local stamp_file=$1 stamp=$2 dir=$3 b
	shift 3
	for b in "$@"; do
		[[ -x $dir/$b ]] || return 1
	done
	[[ -f $stamp_file && $(<"$stamp_file") == "$stamp" ]]
}

# new_tmp_dir DEST: sets TMP_DIR to a new empty directory DEST.tmp.<pid>, to be
# filled and then moved into place by replace_with_tmp_dir DEST; removed if
# the script exits before that (one at a time: it owns the EXIT trap).
new_tmp_dir() {
	TMP_DIR=$1.tmp.$$
	rm -rf "$TMP_DIR"
	mkdir -p "$TMP_DIR"
	trap 'rm -rf "$TMP_DIR"' EXIT
}

# replace_with_tmp_dir DEST: replaces DEST with TMP_DIR (see new_tmp_dir).
replace_with_tmp_dir() {
	rm -rf "$1"
	mv "$TMP_DIR" "$1"
	trap - EXIT
}

# install_yaml DEST SRC [SUBDIR...]: replaces DEST with copies of SRC/*.yaml
# and of each SRC/SUBDIR/*.yaml (in DEST/SUBDIR). The module cache is
# read-only; install gives the copies normal modes.
install_yaml() {
	local dest=$1 src=$2 sub
	shift 2
	new_tmp_dir "$dest"
	install -m 0644 "$src"/*.yaml "$TMP_DIR/"
	for sub in "$@"; do
		mkdir -p "$TMP_DIR/$sub"
		install -m 0644 "$src/$sub"/*.yaml "$TMP_DIR/$sub/"
	done
	replace_with_tmp_dir "$dest"
}

# GO_MODFILE: when set, the go.mod the go commands below read instead of
# MODDIR/go.mod (with its .sum beside it): another release's pinned module set.
go_flags() { echo "-mod=readonly -buildvcs=false${GO_MODFILE:+ -modfile=$GO_MODFILE}"; }

# module_dir MODDIR MODULE: where the Go module cache holds the sources of
# MODULE at the version the module in MODDIR requires.
module_dir() {
	local dir
	dir=$(env -C "$1" GOFLAGS="$(go_flags)" go list -m -f '{{.Dir}}' "$2") || die "go list -m $2 failed in $1"
	[[ -n $dir && -d $dir ]] || die "no sources of $2 in the module cache (from $1/go.mod)"
	echo "$dir"
}

# copy_webhooks MODDIR MODULE DEST [SUBDIR...]: unless DEST holds a
# kustomization.yaml, copies MODULE's config/components/webhook (and those
# SUBDIRs of it), at the version the module in MODDIR requires, to DEST: the
# webhook configurations a controller's release installs, which the test
# harness registers by URL.
copy_webhooks() {
	local moddir=$1 module=$2 dest=$3 dir
	shift 3
	[[ -f $dest/kustomization.yaml ]] && return 0
	use_go
	dir=$(module_dir "$moddir" "$module")
	[[ -f $dir/config/components/webhook/manifests.yaml ]] || die "no webhook manifests in $dir"
	install_yaml "$dest" "$dir/config/components/webhook" "$@"
	log "copied the webhook configurations of $module to $dest"
}

# go_build MODDIR GO_BUILD_ARGS...: `go build` in the module at MODDIR. Static
# like upstream's binaries and images; -trimpath keeps the cache relocatable;
# -mod=readonly fails instead of silently changing go.mod/go.sum.
go_build() {
	local dir=$1
	shift
	env -C "$dir" CGO_ENABLED=0 GOFLAGS="$(go_flags)" go build -trimpath "$@"
}

# go_version: the Go release that builds, for the progress lines.
go_version() { go version | cut -d' ' -f3; }

# build_cached NAME BIN_DIR STAMP_FILE STAMP BUILD BINARY...: unless each
# BINARY (a name in BIN_DIR) is there and STAMP_FILE holds STAMP, runs
# `BUILD OUT` with Go on PATH to build them into the empty directory OUT, puts
# OUT in BIN_DIR's place and writes STAMP to STAMP_FILE, last, so that a build
# cut short is never taken for a current one. NAME is for the progress lines.
# Call it as a plain command (not under if, && or ||), so that set -e stops the
# script when BUILD fails.
build_cached() {
	local name=$1 bin_dir=$2 stamp_file=$3 stamp=$4 build=$5 start=$SECONDS
	shift 5
	if is_current "$stamp_file" "$stamp" "$bin_dir" "$@"; then
		log "$name up to date in $bin_dir"
		return 0
	fi
	use_go
	new_tmp_dir "$bin_dir"
	"$build" "$TMP_DIR"
	rm -f "$stamp_file"
	replace_with_tmp_dir "$bin_dir"
	echo "$stamp" >"$stamp_file"
	log "$name built in $((SECONDS - start))s: $bin_dir"
}
