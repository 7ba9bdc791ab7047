#!/usr/bin/env bash
# The real Kueue controller manager (built by hack/build-kueue.sh) against the
# test cluster of DIR (made by hack/cluster-up.sh), with Kueue's own webhook
# configurations registered, pointed at it on loopback.
#
#   hack/kueue.sh up|down|register|unregister [DIR]     DIR defaults to <repo>/.cluster
#
# Layout of DIR/kueue: config.yaml (the Configuration), kubeconfig (Kueue's
# identity: a client certificate CN=kueue-e2e-controller, O=system:masters,
# signed by the cluster CA), certs/ (webhook serving certificate for
# 127.0.0.1), etc/ (see "metrics certificate" below), ports, overlay/ (the
# generated webhook registration). Log DIR/logs/kueue.log, pid DIR/pids/kueue.pid.
# Ports and certificates are kept per DIR; `up` on a running Kueue restarts it.
# `down` unregisters first: Kueue's webhooks fail closed.
# Env: KUEUE_LOG_LEVEL (Kueue's --zap-log-level, default 2).
#
# How it differs from a release install (no Deployment, no Service, no cert
# manager):
#   - leader election off, internalCertManagement off: the certificates are made
#     here, and the webhook configurations get clientConfig.url
#     https://127.0.0.1:PORT/<path> and the cluster CA as caBundle;
#   - only the batch/job and jobset.x-k8s.io/jobset integrations;
#     manageJobsWithoutQueueName false;
#   - the visibility API server (feature gate VisibilityOnDemand) is off: it is
#     an aggregated API server this cluster has no APIService wiring for, and it
#     plays no part in admission or preemption;
#   - metrics certificate: with internalCertManagement off, cmd/kueue reads its
#     metrics serving certificate from the fixed path /etc/kueue/metrics/certs
#     (upstream mounts a cert-manager Secret there). Rather than write to the
#     machine's /etc, Kueue runs in its own mount namespace (unshare; a user
#     namespace too when not root) where a read-only overlay adds
#     DIR/kueue/etc/kueue/metrics/certs to /etc. Nothing else in /etc changes,
#     but bind mounts on top of files in /etc (a container's /etc/hosts) are not
#     seen through the overlay: Kueue only dials 127.0.0.1, so this does not matter;
#   - the CRDs come from config/components/crd/bases, without the conversion
#     webhook patches, so cluster-up.sh installs them with conversion strategy
#     None: a v1beta1 object would be stored as v1beta2 with its renamed fields
#     (ClusterQueue spec.cohort -> cohortName, ...) silently pruned. While Kueue
#     runs, the CRDs upstream patches (CONVERTED below) get its /convert webhook
#     as in a release install; `down` puts strategy None back, since the
#     webhook is gone with Kueue.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command=${1:?usage: hack/kueue.sh up|down|register|unregister [DIR]}
DIR=${2:-${CLUSTER_DIR:-$REPO_ROOT/.cluster}}
DIR=$(cd "$DIR" && pwd)
# shellcheck source=/dev/null
source "$DIR/cluster.env"
KDIR=$DIR/kueue
PIDFILE=$DIR/pids/kueue.pid
LOG=$DIR/logs/kueue.log
USERNAME=kueue-e2e-controller
# The CRDs Kueue's config/components/crd/kustomization.yaml gives a conversion webhook.
CONVERTED=(localqueues clusterqueues cohorts workloads multikueueclusters)
MUTATING=kueue-mutating-webhook-configuration
VALIDATING=kueue-validating-webhook-configuration
# Kueue's webhooks fail closed; on a dead API server do not hang on them.
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG" --request-timeout=20s "$@"; }

# Ports are chosen once per DIR, so registered URLs stay valid across restarts.
ports() {
	mkdir -p "$KDIR"
	if [[ ! -f $KDIR/ports ]]; then
		python3 - >"$KDIR/ports" <<'PY'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
webhook, metrics, health = (s.getsockname()[1] for s in socks)
print(f"WEBHOOK_PORT={webhook}\nMETRICS_PORT={metrics}\nHEALTH_PORT={health}")
PY
	fi
	# shellcheck source=/dev/null
	source "$KDIR/ports"
}

# sign NAME SUBJECT EXTENSIONS: KDIR/NAME.key + .crt signed by the cluster CA.
sign() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
		-keyout "$KDIR/$1.key" -out "$KDIR/$1.csr" 2>/dev/null
	openssl x509 -req -in "$KDIR/$1.csr" -CA "$CA_CRT" -CAkey "$CA_KEY" -CAcreateserial -days 365 -sha256 \
		-out "$KDIR/$1.crt" -extfile <(printf '%b' "$3") 2>/dev/null
	rm -f "$KDIR/$1.csr"
}

certificates() {
	[[ -f $KDIR/certs/tls.crt && -f $KDIR/client.crt ]] && return 0
	mkdir -p "$KDIR/certs" "$KDIR/etc/kueue/metrics/certs"
	chmod 700 "$KDIR"
	sign serving "/CN=kueue-webhook" \
		'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n'
	# controller-runtime reads tls.crt/tls.key from the webhook certDir; the
	# metrics server (loopback too) gets the same pair.
	local dest
	for dest in "$KDIR/certs" "$KDIR/etc/kueue/metrics/certs"; do
		cp "$KDIR/serving.crt" "$dest/tls.crt"
		cp "$KDIR/serving.key" "$dest/tls.key"
	done
	# Kueue's identity. O=system:masters: cluster-admin, as Kueue's ClusterRole
	# is close to; what matters to eval-admission is the username.
	sign client "/O=system:masters/CN=$USERNAME" \
		'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n'
	umask 077
	cat >"$KDIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: eval-admission
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 "$CA_CRT")
users:
- name: $USERNAME
  user:
    client-certificate-data: $(base64 -w0 "$KDIR/client.crt")
    client-key-data: $(base64 -w0 "$KDIR/client.key")
contexts:
- name: $USERNAME@eval-admission
  context: {cluster: eval-admission, user: $USERNAME}
current-context: $USERNAME@eval-admission
EOF
}

configuration() {
	cat >"$KDIR/config.yaml" <<EOF
# Written by hack/kueue.sh.
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
manageJobsWithoutQueueName: false
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: $WEBHOOK_PORT
  certDir: $KDIR/certs
metrics:
  bindAddress: 127.0.0.1:$METRICS_PORT
health:
  healthProbeBindAddress: 127.0.0.1:$HEALTH_PORT
integrations:
  frameworks:
  - batch/job
  - jobset.x-k8s.io/jobset
featureGates:
  VisibilityOnDemand: false
EOF
}

readyz() { curl -sf --max-time 2 "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null; }

up() {
	local bin i
	bin=$("$REPO_ROOT/hack/build-kueue.sh" 8>&- | tail -n1)
	ports
	certificates
	configuration
	[[ $KDIR/etc != *[,:]* ]] || die "$KDIR contains ',' or ':', which an overlay lowerdir cannot"
	# Kueue's own namespace (excluded from its managedJobsNamespaceSelector).
	kubectl create namespace kueue-system --dry-run=client -o yaml | kubectl apply -f - >&2
	stop quiet
	local -a isolate=(unshare --mount --propagation private)
	[[ $(id -u) == 0 ]] || isolate=(unshare --user --map-root-user --mount --propagation private)
	# The inner bash records its pid and execs: unshare, sh and env all exec in
	# turn, so the pid file holds the Kueue process itself.
	# 8>&-: do not inherit (and hold forever) cluster-up.sh's DIR lock.
	# shellcheck disable=SC2016 # $$, $0 and $@ belong to the inner shells
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
		"${isolate[@]}" sh -c 'mount -t overlay kueue-etc -o "lowerdir=$0:/etc" /etc && exec "$@"' "$KDIR/etc" \
		env KUBECONFIG="$KDIR/kubeconfig" "$bin" --config "$KDIR/config.yaml" --zap-log-level="${KUEUE_LOG_LEVEL:-2}" \
		</dev/null >>"$LOG" 2>&1 8>&- &
	for i in $(seq 50); do [[ -s $PIDFILE ]] && break; sleep 0.1; done
	for i in $(seq 240); do
		readyz && break
		our_pid "$PIDFILE" kueue >/dev/null || die "kueue exited; see $LOG"$'\n'"$(tail -20 "$LOG")"
		[[ $i == 240 ]] && die "kueue not ready after 120s; see $LOG"
		sleep 0.5
	done
	log "kueue ready (pid $(<"$PIDFILE")): webhooks https://127.0.0.1:$WEBHOOK_PORT, health 127.0.0.1:$HEALTH_PORT, log $LOG"
	register
}

# Kueue's webhook configurations as its release installs them (the module's
# config/components/webhook kustomization, names prefixed kueue- as
# config/default does), with clientConfig pointed at loopback.
register() {
	ports
	local overlay=$KDIR/overlay base
	base=$(realpath --relative-to="$overlay" "$EVAL_ADMISSION_CACHE/kueue-$KUEUE_VERSION/webhook")
	mkdir -p "$overlay"
	cat >"$overlay/kustomization.yaml" <<YAML
# Generated by hack/kueue.sh: Kueue's config/components/webhook as config/default names it.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namePrefix: kueue-
resources:
- $base
patches:
# No Service: the API server reaches Kueue by URL.
- patch: |-
    \$patch: delete
    apiVersion: v1
    kind: Service
    metadata: {name: webhook-service, namespace: system}
YAML
	kubectl kustomize "$overlay" >"$KDIR/webhooks.yaml"
	kubectl create --dry-run=client -o json -f "$KDIR/webhooks.yaml" |
		python3 -c '
import json, sys
port, bundle = sys.argv[1], sys.argv[2]
# kubectl prints one JSON document per object.
text, decoder, items, at = sys.stdin.read(), json.JSONDecoder(), [], 0
while text[at:].strip():
    item, end = decoder.raw_decode(text[at:].lstrip())
    at = len(text) - len(text[at:].lstrip()) + end
    items.append(item)
for item in items:
    for webhook in item.get("webhooks", []):
        path = webhook["clientConfig"]["service"]["path"]
        webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
' "$WEBHOOK_PORT" "$(base64 -w0 "$CA_CRT")" >"$KDIR/webhooks.json"
	kubectl apply --server-side --force-conflicts --field-manager=hack-kueue -f "$KDIR/webhooks.json" >&2
	local name conversion
	# Listed once, then searched: `kubectl ... | grep -q` fails under pipefail
	# when grep exits before kubectl has written everything (SIGPIPE).
	local registered
	registered=$(kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration -o name)
	for name in "$MUTATING" "$VALIDATING"; do
		grep -qx ".*/$name" <<<"$registered" ||
			die "expected $name among the registered configurations"
	done
	conversion=$(printf '{"spec":{"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:%s/convert","caBundle":"%s"}}}}}' \
		"$WEBHOOK_PORT" "$(base64 -w0 "$CA_CRT")")
	for name in "${CONVERTED[@]}"; do
		kubectl patch crd "$name.kueue.x-k8s.io" --type=merge -p "$conversion" >&2
	done
}

unregister() {
	local name
	kubectl delete mutatingwebhookconfiguration "$MUTATING" --ignore-not-found >&2 || true
	kubectl delete validatingwebhookconfiguration "$VALIDATING" --ignore-not-found >&2 || true
	for name in "${CONVERTED[@]}"; do
		kubectl patch crd "$name.kueue.x-k8s.io" --type=merge \
			-p '{"spec":{"conversion":{"strategy":"None","webhook":null}}}' >&2 || true
	done
}

stop() {
	local pid i
	pid=$(our_pid "$PIDFILE" kueue) || { rm -f "$PIDFILE"; return 0; }
	kill -TERM "$pid"
	for i in $(seq 100); do alive "$pid" || break; sleep 0.1; done
	alive "$pid" && kill -KILL "$pid"
	rm -f "$PIDFILE"
	[[ ${1:-} == quiet ]] || log "kueue stopped"
}

# Its webhooks fail closed: take them away before the server, or every Job
# create would fail meanwhile.
down() {
	unregister
	stop
}

case $command in
up) up ;;
down) down ;;
register) register ;;
unregister) unregister ;;
*) die "unknown command $command" ;;
esac
