#!/usr/bin/env bash
# Runs a command (the node tests, `make e2e-node`) inside a network namespace
# of its own, where tests/common/node.rs starts a real node: the API server
# listens on every address there, and kube-proxy's and the kubelet's iptables
# rules, the bridges and the pods' network never touch the machine's. A mount
# namespace of its own holds containerd's and the kubelet's mounts.
#
# Afterwards (and before, for a run that was killed) it removes what outlives
# the command: containerd's shims and the pods' processes (killed), the pods'
# cgroups (the kubelet's cgroupRoot), the namespace, and the pods' namespace
# files. One node at a time on a machine (a lock).
#
#   hack/in-node-netns.sh COMMAND [ARGS...]
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NETNS=eval-admission-node
# What tests/common/node.rs expects: the node's address on an empty bridge
# (this kernel has no dummy links), and the kubelet's cgroupRoot.
NODE_BRIDGE=evalnode0
NODE_IP=10.250.0.1
CGROUP_ROOT=eval-admission-node

[[ $(id -u) == 0 ]] || die "needs root (network namespaces, containerd, kubelet)"

exec 9>"${TMPDIR:-/tmp}/eval-admission-node.lock"
flock 9

clean() {
	local pid dir netns_file
	if [[ -e /run/netns/$NETNS ]]; then
		for pid in $(ip netns pids "$NETNS" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
	fi
	# The pods' processes live in their own network namespaces, under the
	# kubelet's cgroup tree: kill them by cgroup, then remove the tree.
	for dir in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
		[[ -d $dir ]] || continue
		find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null |
			while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done
	done
	for _ in 1 2 3 4 5; do
		for dir in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
			[[ -d $dir ]] && { find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true; }
		done
		compgen -G "/sys/fs/cgroup/*/$CGROUP_ROOT" >/dev/null || break
		sleep 1
	done
	if [[ -e /run/netns/$NETNS ]]; then
		ip netns delete "$NETNS" || true
	fi
	# The CNI plugin's pod namespaces were mounted in the command's mount
	# namespace, which is gone; only their empty files are left here.
	for netns_file in /run/netns/cni-*; do
		[[ -e $netns_file ]] && ! mountpoint -q "$netns_file" && rm -f "$netns_file" || true
	done
	return 0
}

clean
trap clean EXIT
# The kubelet's cgroupRoot must exist in every hierarchy (cgroup v1 here).
for dir in /sys/fs/cgroup/*/; do
	[[ -f ${dir}cgroup.procs ]] && mkdir -p "$dir$CGROUP_ROOT"
done
ip netns add "$NETNS"
ip -n "$NETNS" link set lo up
ip -n "$NETNS" link add "$NODE_BRIDGE" type bridge
ip -n "$NETNS" addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
ip -n "$NETNS" link set "$NODE_BRIDGE" up
log "running in network namespace $NETNS: $*"
# Mounts made inside (containerd's, the kubelet's) are shared among
# themselves, as the kubelet wants, and private to this run.
status=0
nsenter --net="/run/netns/$NETNS" unshare --mount --propagation private -- \
	sh -c 'mount --make-rshared / && exec "$@"' sh \
	env EVAL_ADMISSION_NODE_NETNS="$NETNS" "$@" || status=$?
exit "$status"
