#!/usr/bin/env bash
# Stop the control plane started by hack/cluster-up.sh: kill each process by
# the pid in DIR/pids (TERM, then KILL after a grace period). Idempotent.
# Keeps DIR (PKI, etcd data, kubeconfig); `rm -rf DIR` afterwards for a
# completely fresh cluster next time.
#
#   hack/cluster-down.sh [--only NAME] [DIR]    DIR defaults to <repo>/.cluster
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# apiserver first, so it does not log etcd connection errors while stopping.
NAMES=(kube-apiserver etcd)
if [[ ${1:-} == --only ]]; then
	NAMES=("$2")
	shift 2
fi
DIR=${1:-$REPO_ROOT/.cluster}
GRACE_SECONDS=${GRACE_SECONDS:-10}

stop() {
	local name=$1 pidfile=$DIR/pids/$1.pid pid i
	# Only signal a live process that is still ours (pid reuse after a crash).
	if pid=$(our_pid "$pidfile" "$name"); then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < GRACE_SECONDS * 10; i++)); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			log "$name (pid $pid) ignored TERM for ${GRACE_SECONDS}s, sending KILL"
			kill -KILL "$pid" 2>/dev/null || true
			# Wait for the kernel to reap it so its ports are free on return.
			for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
		fi
		log "stopped $name (pid $pid)"
	fi
	rm -f "$pidfile"
}

[[ -d $DIR ]] || exit 0
rm -f "$DIR/ready"
for name in "${NAMES[@]}"; do
	stop "$name"
done
