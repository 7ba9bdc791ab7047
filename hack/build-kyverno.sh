#!/usr/bin/env bash
# Build Kyverno's admission controller (github.com/kyverno/kyverno/cmd/kyverno,
# pinned by the `tool` directive in tests/kyverno/go.mod) into
# $EVAL_ADMISSION_CACHE/kyverno-<version>/bin/kyverno, for `make bench` only: a
# peer measured beside eval-admission, never part of `make test`. About 20
# minutes and 140 MB the first time on 2 cores. Skips the build when the binary
# was built from the current go.mod/go.sum. Progress goes to stderr; stdout is
# one bin= line.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KYVERNO_MOD_DIR=$REPO_ROOT/tests/kyverno
KYVERNO_VERSION=$(require_version "$KYVERNO_MOD_DIR/go.mod" github.com/kyverno/kyverno)
KYVERNO_DIR=$EVAL_ADMISSION_CACHE/kyverno-$KYVERNO_VERSION
KYVERNO_BIN=$KYVERNO_DIR/bin/kyverno

# build OUT: the admission controller.
build() {
	log "building Kyverno $KYVERNO_VERSION with $(go_version) (about 20 minutes the first time)"
	go_build "$KYVERNO_MOD_DIR" -ldflags "-s -w" -o "$1/kyverno" github.com/kyverno/kyverno/cmd/kyverno
}

main() {
	hold_lock "$EVAL_ADMISSION_CACHE/.build-kyverno.lock"
	# The stamp (go.mod and go.sum) sits beside bin/, not in it.
	build_cached kyverno "$KYVERNO_DIR/bin" "$KYVERNO_DIR/.stamp" "$(module_stamp "$KYVERNO_MOD_DIR")" build kyverno
	printf 'bin=%s\n' "$KYVERNO_BIN"
}

main "$@"
