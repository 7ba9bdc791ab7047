# shellcheck shell=bash
# Shared helpers for hack/build-tools.sh, hack/cluster-up.sh, hack/cluster-down.sh.
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

# alive PID: running and not a zombie (a container's pid 1 may never reap it).
alive() {
	kill -0 "$1" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

# our_pid PIDFILE NAME: prints the pid in PIDFILE if that process is alive and
# its command line still mentions NAME (guards against pid reuse). A live
# process mid-execve shows an empty command line for a moment (the new image's
# arguments are not yet mapped); the processes started here exec several times
# (bash, unshare, sh, env, the binary), so an empty read is retried rather than
# taken as "gone". Read into a variable, not piped into grep -q: under pipefail
# the writer's SIGPIPE would fail the check.
our_pid() {
	local pid cmdline tries
	[[ -f $1 ]] || return 1
	pid=$(<"$1")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		alive "$pid" || return 1
		cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
		[[ -z $cmdline ]] || break
		sleep 0.1
	done
	[[ $cmdline == *"$2"* ]] || return 1
	echo "$pid"
}
