#!/usr/bin/env bash
# Start a minimal Kubernetes control plane (etcd + kube-apiserver, no kubelet,
# no controller-manager) on loopback for the integration tests, with the Kueue
# and JobSet CRDs installed.
#
#   hack/cluster-up.sh [DIR]        DIR defaults to <repo>/.cluster
#
# Env:
#   EXTRA_APISERVER_FLAGS  extra kube-apiserver flags, split on whitespace
#                          (e.g. "--feature-gates=Foo=true --runtime-config=...");
#                          a running apiserver is restarted if its flags differ.
#   CLUSTER_UP_HOOK        executable run as `$CLUSTER_UP_HOOK DIR` once the
#                          cluster is ready (KUBECONFIG, KUBECTL, CLUSTER_DIR set).
#   KUBE_APISERVER_PORT, ETCD_CLIENT_PORT, ETCD_PEER_PORT
#                          fixed ports instead of random free ones.
#
# Layout of DIR: kubeconfig, cluster.env (shell vars), ca.crt/ca.key (cluster
# CA, also usable to sign a webhook's serving cert), pki/, etcd/ (data, kept
# across restarts), logs/, pids/, bin/kubectl.
# The last line of stdout is `export KUBECONFIG=DIR/kubeconfig`.
#
# Things that differ from a real cluster (nothing runs controllers):
#   - register webhooks with clientConfig.url https://127.0.0.1:PORT/..., not a
#     Service: there is no kube-proxy or endpoints to route to;
#   - Jobs/JobSets are stored but never run; deleted namespaces stay Terminating;
#   - creating a Pod needs `kubectl create serviceaccount default` in its
#     namespace first (ServiceAccount admission is on, no controller makes it);
#   - when the cluster is already up the hook is not run again.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR=${1:-$REPO_ROOT/.cluster}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
PKI=$DIR/pki
KUBECONFIG_FILE=$DIR/kubeconfig
KUBECTL=$DIR/bin/kubectl

# Service IPs are never dialled here (no kube-proxy, no pods), but keep them in
# loopback anyway so a misconfigured service-backed webhook cannot send traffic
# off the machine.
SERVICE_CIDR=127.100.0.0/24
SERVICE_FIRST_IP=127.100.0.1

# ---------------------------------------------------------------- processes

pid_of() { our_pid "$DIR/pids/$1.pid" "$1"; }

# start NAME CMD...: runs CMD detached (own session, so the caller's process
# group being killed does not take the cluster with it), logs to
# DIR/logs/NAME.log, pid in DIR/pids/NAME.pid.
start() {
	local name=$1; shift
	local pidfile=$DIR/pids/$name.pid
	rm -f "$pidfile"
	# The inner bash records its own pid and then execs, so the pid file holds
	# the real process whether or not setsid had to fork.
	# 8>&-: the daemons must not inherit (and so hold forever) the DIR lock.
	# shellcheck disable=SC2016 # $$ and $@ belong to the inner bash
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" \
		</dev/null >>"$DIR/logs/$name.log" 2>&1 8>&- &
	local i
	for i in $(seq 50); do [[ -s $pidfile ]] && break; sleep 0.1; done
	log "started $name (pid $(<"$pidfile"), log $DIR/logs/$name.log)"
}

# ---------------------------------------------------------------- ports

port_in_use() { # any TCP socket bound to this local port (v4 or v6)
	local hex
	hex=$(printf ':%04X' "$1")
	awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h { found = 1 } END { exit !found }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

free_port() { # below the ephemeral range (32768+) to avoid outgoing sockets
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		port_in_use "$p" || { echo "$p"; return; }
	done
}

# Ports are chosen once per DIR and kept (etcd's stored member URLs and the
# kubeconfig stay valid across cluster-down/cluster-up).
choose_ports() {
	if [[ -f $DIR/ports ]]; then
		# shellcheck source=/dev/null
		source "$DIR/ports"
	fi
	APISERVER_PORT=${KUBE_APISERVER_PORT:-${APISERVER_PORT:-$(free_port)}}
	ETCD_PORT=${ETCD_CLIENT_PORT:-${ETCD_PORT:-$(free_port)}}
	ETCD_PEER=${ETCD_PEER_PORT:-${ETCD_PEER:-$(free_port)}}
	printf 'APISERVER_PORT=%s\nETCD_PORT=%s\nETCD_PEER=%s\n' \
		"$APISERVER_PORT" "$ETCD_PORT" "$ETCD_PEER" >"$DIR/ports"
	APISERVER_URL=https://127.0.0.1:$APISERVER_PORT
}

# ---------------------------------------------------------------- PKI

# sign NAME SUBJECT EXTENSIONS: key + cert signed by the cluster CA.
sign() {
	openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$1.key" -out "$PKI/$1.csr" \
		-subj "$2" 2>/dev/null
	openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
		-CAcreateserial -days 3650 -sha256 -out "$PKI/$1.crt" \
		-extfile <(printf '%b' "$3") 2>/dev/null
	rm -f "$PKI/$1.csr"
}

make_pki() {
	# Kept across restarts so kubeconfig and registered caBundles stay valid.
	[[ -f $PKI/done ]] && return 0
	log "creating PKI in $PKI"
	rm -rf "$PKI"; mkdir -p "$PKI"; chmod 700 "$PKI"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
		-days 3650 -sha256 -subj "/CN=eval-admission-test-ca" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
	sign apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
		"basicConstraints=CA:FALSE" \
		"keyUsage=critical,digitalSignature,keyEncipherment" \
		"extendedKeyUsage=serverAuth" \
		"subjectAltName=IP:127.0.0.1,IP:::1,IP:$SERVICE_FIRST_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local")"
	# O=system:masters is bound to cluster-admin by the bootstrap RBAC policy.
	sign admin "/O=system:masters/CN=kubernetes-admin" "$(printf '%s\n' \
		"basicConstraints=CA:FALSE" \
		"keyUsage=critical,digitalSignature,keyEncipherment" \
		"extendedKeyUsage=clientAuth")"
	# Service-account token signing key pair (required flags since 1.20+).
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
	openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
	touch "$PKI/done"
}

write_kubeconfig() {
	local tmp=$KUBECONFIG_FILE.tmp
	cat >"$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: eval-admission
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: kubernetes-admin
  user:
    client-certificate-data: $(base64 -w0 "$PKI/admin.crt")
    client-key-data: $(base64 -w0 "$PKI/admin.key")
contexts:
- name: kubernetes-admin@eval-admission
  context:
    cluster: eval-admission
    user: kubernetes-admin
current-context: kubernetes-admin@eval-admission
EOF
	chmod 600 "$tmp"
	mv "$tmp" "$KUBECONFIG_FILE"
}

write_env() {
	ln -sfn pki/ca.crt "$DIR/ca.crt"
	ln -sfn pki/ca.key "$DIR/ca.key"
	cat >"$DIR/cluster.env" <<EOF
# Written by hack/cluster-up.sh; source it to talk to this cluster.
CLUSTER_DIR=$DIR
KUBECONFIG=$KUBECONFIG_FILE
KUBECTL=$KUBECTL
APISERVER_URL=$APISERVER_URL
CA_CRT=$DIR/ca.crt
CA_KEY=$DIR/ca.key
ETCD_URL=http://127.0.0.1:$ETCD_PORT
K8S_VERSION=$K8S_VERSION
export KUBECONFIG
EOF
}

# ---------------------------------------------------------------- components

etcd_args() {
	ETCD_ARGS=(
		--name=eval-admission
		--data-dir="$DIR/etcd"
		# Plain HTTP on loopback only: nothing else can reach it.
		--listen-client-urls="http://127.0.0.1:$ETCD_PORT"
		--advertise-client-urls="http://127.0.0.1:$ETCD_PORT"
		--listen-peer-urls="http://127.0.0.1:$ETCD_PEER"
		--initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER"
		--initial-cluster="eval-admission=http://127.0.0.1:$ETCD_PEER"
		# Throwaway test data: skip fsync, it is the slowest part on a busy disk.
		--unsafe-no-fsync
		--log-level=warn
	)
}

apiserver_args() {
	local -a extra=()
	read -r -a extra <<<"${EXTRA_APISERVER_FLAGS:-}"
	# shellcheck disable=SC2054 # commas inside flag values are intended
	APISERVER_ARGS=(
		--bind-address=127.0.0.1
		--advertise-address=127.0.0.1
		--secure-port="$APISERVER_PORT"
		--etcd-servers="http://127.0.0.1:$ETCD_PORT"
		--tls-cert-file="$PKI/apiserver.crt"
		--tls-private-key-file="$PKI/apiserver.key"
		--client-ca-file="$PKI/ca.crt"
		--service-account-issuer=https://kubernetes.default.svc.cluster.local
		--service-account-key-file="$PKI/sa.pub"
		--service-account-signing-key-file="$PKI/sa.key"
		--service-cluster-ip-range="$SERVICE_CIDR"
		--authorization-mode=Node,RBAC
		# On by default already; listed because the tests depend on them.
		--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook
		--allow-privileged=true
		# The `kubernetes` Service's Endpoints may not point at loopback.
		--endpoint-reconciler-type=none
		--profiling=false
		"${extra[@]}"
	)
}

# readyz: apiserver healthy (kubectl --raw, so no curl or client certs juggling).
readyz() {
	[[ -f $KUBECONFIG_FILE && -x $KUBECTL ]] &&
		"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" --request-timeout=5s get --raw=/readyz >/dev/null 2>&1
}

# wait_for SECONDS WHAT "NAMES" CMD...: polls CMD every second, failing early
# (with the log tail) if one of the processes NAMES has died.
wait_for() {
	local timeout=$1 what=$2 names=$3 i name; shift 3
	for ((i = 0; i < timeout; i++)); do
		"$@" && return 0
		for name in $names; do
			pid_of "$name" >/dev/null ||
				die "$name died; see $DIR/logs/$name.log"$'\n'"$(tail -20 "$DIR/logs/$name.log")"
		done
		sleep 1
	done
	die "timed out after ${timeout}s waiting for $what"
}

etcd_listening() { # a LISTEN (state 0A) socket on the etcd client port
	awk -v h="$(printf ':%04X' "$ETCD_PORT")" \
		'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == h { found = 1 } END { exit !found }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

install_crds() {
	local d
	for d in "$KUEUE_CRD_DIR" "$JOBSET_CRD_DIR"; do
		# Server-side apply: the Kueue Workload CRD is far over the 256 KiB
		# limit of the last-applied-configuration annotation client-side apply uses.
		"$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" apply --server-side --force-conflicts \
			--field-manager=eval-admission-cluster-up -f "$d" >&2
		wait_established "$d"
	done
}

# Polls each CRD in $1 until its Established condition is True. Not `kubectl
# wait`: right after the apply a CRD may have no status yet, and kubectl then
# fails ("<nil> is of the type <nil>") instead of waiting.
wait_established() {
	local crd deadline=$((SECONDS + 120))
	for crd in $("$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" get -f "$1" -o name); do
		until [[ $("$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" get "$crd" \
			-o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]]; do
			((SECONDS < deadline)) || die "timed out waiting for $crd to be Established"
			sleep 0.5
		done
	done
}

run_hook() {
	[[ -n ${CLUSTER_UP_HOOK:-} ]] || return 0
	[[ -x $CLUSTER_UP_HOOK ]] || die "CLUSTER_UP_HOOK=$CLUSTER_UP_HOOK is not executable"
	log "running hook $CLUSTER_UP_HOOK $DIR"
	# 8>&-: whatever the hook leaves running (the webhook server) must not
	# inherit the DIR lock, or the next cluster-up.sh would wait on it.
	KUBECONFIG=$KUBECONFIG_FILE KUBECTL=$KUBECTL CLUSTER_DIR=$DIR "$CLUSTER_UP_HOOK" "$DIR" 8>&-
}

# ---------------------------------------------------------------- main

main() {
	mkdir -p "$DIR/logs" "$DIR/pids" "$DIR/bin"
	# One cluster-up at a time per DIR.
	exec 8>"$DIR/.lock"
	flock -w 300 8 || die "another cluster-up.sh holds $DIR/.lock"

	choose_ports
	etcd_args
	apiserver_args
	local want_args
	want_args=$(printf '%s\n' "${APISERVER_ARGS[@]}")

	if [[ -f $DIR/ready ]] && pid_of etcd >/dev/null && pid_of kube-apiserver >/dev/null &&
		[[ $want_args == "$(cat "$DIR/kube-apiserver.args" 2>/dev/null)" ]] && readyz; then
		echo "cluster already up" >&2
		echo "export KUBECONFIG=$KUBECONFIG_FILE"
		return 0
	fi
	rm -f "$DIR/ready"

	local bin
	bin=$("$REPO_ROOT/hack/build-tools.sh" 8>&- | tail -n1)
	ln -sfn "$bin/kubectl" "$KUBECTL"

	make_pki
	write_kubeconfig
	write_env

	if ! pid_of etcd >/dev/null; then
		start etcd "$bin/etcd" "${ETCD_ARGS[@]}"
	fi
	wait_for 60 "etcd to listen on 127.0.0.1:$ETCD_PORT" etcd etcd_listening

	if pid_of kube-apiserver >/dev/null && [[ $want_args != "$(cat "$DIR/kube-apiserver.args" 2>/dev/null)" ]]; then
		log "kube-apiserver flags changed, restarting it"
		"$REPO_ROOT/hack/cluster-down.sh" --only kube-apiserver "$DIR"
	fi
	if ! pid_of kube-apiserver >/dev/null; then
		echo "$want_args" >"$DIR/kube-apiserver.args"
		start kube-apiserver "$bin/kube-apiserver" "${APISERVER_ARGS[@]}"
	fi
	wait_for 180 "kube-apiserver /readyz at $APISERVER_URL" "etcd kube-apiserver" readyz
	log "kube-apiserver ready at $APISERVER_URL"

	install_crds
	run_hook
	touch "$DIR/ready"
	log "cluster up; kubectl: $KUBECTL, env: $DIR/cluster.env"
	echo "export KUBECONFIG=$KUBECONFIG_FILE"
}

main "$@"
