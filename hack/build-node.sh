#!/usr/bin/env bash
# Provide everything one real Kubernetes node needs, for tests that run pods:
#  - kubelet, kube-proxy, kube-scheduler and kube-controller-manager, built
#    from k8s.io/kubernetes as pinned by tests/tools/go.mod (the same module and
#    flags hack/build-tools.sh uses for kube-apiserver);
#  - containerd, containerd-shim-runc-v2 and ctr, built from the containerd
#    module pinned by tests/node/go.mod;
# both into $EVAL_ADMISSION_CACHE/node-<k8s version>/bin; and
#  - runc, the CNI plugins, a static busybox, iptables and conntrack from
#    Debian's apt (installed only when missing; needs root or passwordless sudo).
# Skips whatever is already built from the current go.mod/go.sum or installed,
# so the up-to-date path needs neither Go nor the network.
# Progress goes to stderr; stdout is what a test harness reads:
# node_bin=, runc=, cni_bin= and busybox= lines.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODE_MOD_DIR=$REPO_ROOT/tests/node
NODE_DIR=$EVAL_ADMISSION_CACHE/node-$K8S_VERSION
NODE_BIN_DIR=$NODE_DIR/bin

K8S_NODE_BINARIES=(kubelet kube-controller-manager kube-scheduler kube-proxy)
CONTAINERD_BINARIES=(containerd containerd-shim-runc-v2 ctr)
CONTAINERD_MODULE=github.com/containerd/containerd/v2
CONTAINERD_VERSION=$(require_version "$NODE_MOD_DIR/go.mod" "$CONTAINERD_MODULE")
# Snapshotters that need cgo or host tools a test node does not have.
CONTAINERD_TAGS=no_btrfs,no_devmapper,no_zfs

# From Debian's apt. conntrack (used by kube-proxy to flush stale UDP
# entries) is installed when the archive has it and skipped otherwise.
APT_PACKAGES=(runc containernetworking-plugins busybox-static iptables)
APT_OPTIONAL_PACKAGES=(conntrack)
CNI_BIN_DIR=/usr/lib/cni
CNI_PLUGINS=(bridge host-local loopback portmap)

# What each group was built from: a change (e.g. a bumped dependency in a
# go.sum) rebuilds that group only. The stamps live inside the bin dir so
# they are replaced together with the binaries.
k8s_stamp() { module_stamp "$TOOLS_DIR"; }
containerd_stamp() { stamp_of "$NODE_MOD_DIR/go.mod" "$NODE_MOD_DIR/go.sum" <(echo "tags=$CONTAINERD_TAGS"); }

# build_k8s OUT: the node components, one `go build` each so each is timed;
# they share the Go build cache, so the later ones only compile what the
# earlier ones did not.
build_k8s() {
	local out=$1 start=$SECONDS t cmd
	log "building ${K8S_NODE_BINARIES[*]} $K8S_VERSION with $(go_version) (slow the first time)"
	for cmd in "${K8S_NODE_BINARIES[@]}"; do
		t=$SECONDS
		go_build "$TOOLS_DIR" -ldflags "$(k8s_ldflags)" -o "$out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
		log "$cmd built in $((SECONDS - t))s"
	done
	k8s_stamp >"$out/.stamp-k8s"
	log "kubernetes node components built in $((SECONDS - start))s"
}

# build_containerd OUT: the three binaries in one `go build`, which compiles
# their shared packages once.
build_containerd() {
	local out=$1 start=$SECONDS b pkgs=() pkg=$CONTAINERD_MODULE/version
	for b in "${CONTAINERD_BINARIES[@]}"; do
		pkgs+=("$CONTAINERD_MODULE/cmd/$b")
	done
	log "building containerd $CONTAINERD_VERSION (${CONTAINERD_BINARIES[*]}) with $(go_version)"
	go_build "$NODE_MOD_DIR" -tags "$CONTAINERD_TAGS" \
		-ldflags "-s -w -X $pkg.Version=$CONTAINERD_VERSION -X $pkg.Revision=module-$CONTAINERD_VERSION" \
		-o "$out/" "${pkgs[@]}"
	containerd_stamp >"$out/.stamp-containerd"
	log "containerd built in $((SECONDS - start))s"
}

# Rebuild the stale groups into a copy of the bin dir, then swap it in.
build_binaries() {
	local k8s_ok=$1 containerd_ok=$2 start=$SECONDS b
	use_go
	new_tmp_dir "$NODE_BIN_DIR"
	# Keep the up-to-date group (hard links: cheap, and the originals stay
	# untouched because the stale group's files are removed before building).
	if [[ -d $NODE_BIN_DIR ]]; then
		cp -al "$NODE_BIN_DIR/." "$TMP_DIR/"
	fi
	if ! $k8s_ok; then
		for b in "${K8S_NODE_BINARIES[@]}"; do rm -f "${TMP_DIR:?}/$b"; done
		rm -f "$TMP_DIR/.stamp-k8s"
		build_k8s "$TMP_DIR"
	fi
	if ! $containerd_ok; then
		for b in "${CONTAINERD_BINARIES[@]}"; do rm -f "${TMP_DIR:?}/$b"; done
		rm -f "$TMP_DIR/.stamp-containerd"
		build_containerd "$TMP_DIR"
	fi
	replace_with_tmp_dir "$NODE_BIN_DIR"
	log "built in $((SECONDS - start))s: $NODE_BIN_DIR"
}

pkg_installed() {
	[[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

apt_candidate() {
	local c
	c=$(apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')
	[[ -n $c && $c != "(none)" ]]
}

# Install the missing Debian packages. `apt-get update` only runs when the
# package lists do not know a package or an install fails.
ensure_packages() {
	command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this needs Debian (or a derivative)"
	local p missing=() optional=() installable=() updated=false start=$SECONDS
	local -a as_root=(env DEBIAN_FRONTEND=noninteractive)
	for p in "${APT_PACKAGES[@]}"; do
		pkg_installed "$p" || missing+=("$p")
	done
	for p in "${APT_OPTIONAL_PACKAGES[@]}"; do
		pkg_installed "$p" || optional+=("$p")
	done
	if ((${#missing[@]} + ${#optional[@]} == 0)); then
		log "apt packages present: ${APT_PACKAGES[*]} ${APT_OPTIONAL_PACKAGES[*]}"
		return 0
	fi
	if ((EUID != 0)); then
		if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
			die "need root or passwordless sudo to install: ${missing[*]} ${optional[*]}"
		fi
		as_root=(sudo -n "${as_root[@]}")
	fi
	for p in "${missing[@]}" "${optional[@]}"; do
		if ! apt_candidate "$p"; then
			log "apt does not know $p: running apt-get update"
			"${as_root[@]}" apt-get update >&2 || die "apt-get update failed"
			updated=true
			break
		fi
	done
	installable=("${missing[@]}")
	for p in "${optional[@]}"; do
		if apt_candidate "$p"; then
			installable+=("$p")
		else
			log "optional package $p is not available from apt: skipped"
		fi
	done
	((${#installable[@]})) || return 0
	log "installing from apt: ${installable[*]}"
	if ! "${as_root[@]}" apt-get install -y --no-install-recommends "${installable[@]}" >&2; then
		$updated && die "apt-get install ${installable[*]} failed"
		log "apt-get install failed: running apt-get update and retrying"
		"${as_root[@]}" apt-get update >&2 || die "apt-get update failed"
		"${as_root[@]}" apt-get install -y --no-install-recommends "${installable[@]}" >&2 ||
			die "apt-get install ${installable[*]} failed"
	fi
	for p in "${installable[@]}"; do
		pkg_installed "$p" || die "$p is still not installed"
		log "installed $p $(dpkg-query -W -f='${Version}' "$p")"
	done
	log "apt step took $((SECONDS - start))s"
}

# pkg_bin PACKAGE NAME: the executable NAME that PACKAGE installs in a bin or
# sbin directory, the file itself rather than a compatibility symlink (Debian's
# runc ships /usr/sbin/runc and a /usr/bin/runc symlink to it).
pkg_bin() {
	local f
	while IFS= read -r f; do
		if [[ ($f == */bin/"$2" || $f == */sbin/"$2") && -f $f && -x $f && ! -L $f ]]; then
			echo "$f"
			return 0
		fi
	done < <(dpkg-query -L "$1")
	die "package $1 installs no executable $2"
}

main() {
	# A separate lock from the other builders'.
	hold_lock "$EVAL_ADMISSION_CACHE/.build-node.lock"

	ensure_packages
	local runc busybox p k8s_ok=true containerd_ok=true
	runc=$(pkg_bin runc runc)
	busybox=$(pkg_bin busybox-static busybox)
	for p in "${CNI_PLUGINS[@]}"; do
		[[ -x $CNI_BIN_DIR/$p ]] || die "CNI plugin $CNI_BIN_DIR/$p missing (containernetworking-plugins)"
	done

	is_current "$NODE_BIN_DIR/.stamp-k8s" "$(k8s_stamp)" "$NODE_BIN_DIR" "${K8S_NODE_BINARIES[@]}" || k8s_ok=false
	is_current "$NODE_BIN_DIR/.stamp-containerd" "$(containerd_stamp)" "$NODE_BIN_DIR" "${CONTAINERD_BINARIES[@]}" ||
		containerd_ok=false
	if $k8s_ok && $containerd_ok; then
		log "binaries up to date in $NODE_BIN_DIR"
	else
		build_binaries "$k8s_ok" "$containerd_ok"
	fi
	printf 'node_bin=%s\nrunc=%s\ncni_bin=%s\nbusybox=%s\n' "$NODE_BIN_DIR" "$runc" "$CNI_BIN_DIR" "$busybox"
}

main "$@"
