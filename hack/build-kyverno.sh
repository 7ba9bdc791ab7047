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
KYVERNO_VERSION=$(awk '$1 == "github.com/kyverno/kyverno" && $2 ~ /^v/ { print $2; exit }' "$KYVERNO_MOD_DIR/go.mod")
[[ -n $KYVERNO_VERSION ]] || die "tests/kyverno/go.mod does not require github.com/kyverno/kyverno"
KYVERNO_DIR=$EVAL_ADMISSION_CACHE/kyverno-$KYVERNO_VERSION
KYVERNO_BIN=$KYVERNO_DIR/bin/kyverno

build_stamp() {
	cat "$KYVERNO_MOD_DIR/go.mod" "$KYVERNO_MOD_DIR/go.sum" | sha256sum | cut -d' ' -f1
}

up_to_date() {
	[[ -x $KYVERNO_BIN && -f $KYVERNO_DIR/.stamp ]] &&
		[[ $(<"$KYVERNO_DIR/.stamp") == "$(build_stamp)" ]]
}

build() {
	use_go
	local out=$KYVERNO_DIR/bin.tmp.$$ start=$SECONDS
	rm -rf "$out"; mkdir -p "$out"
	trap 'rm -rf "$out"' EXIT
	log "building Kyverno $KYVERNO_VERSION with $(go version | cut -d' ' -f3) (about 20 minutes the first time)"
	env -C "$KYVERNO_MOD_DIR" CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" \
		go build -trimpath -ldflags "-s -w" -o "$out/kyverno" github.com/kyverno/kyverno/cmd/kyverno
	rm -f "$KYVERNO_DIR/.stamp"
	rm -rf "${KYVERNO_DIR:?}/bin"
	mv "$out" "$KYVERNO_DIR/bin"
	build_stamp >"$KYVERNO_DIR/.stamp"
	trap - EXIT
	log "built in $((SECONDS - start))s: $KYVERNO_BIN"
}

main() {
	mkdir -p "$EVAL_ADMISSION_CACHE"
	exec 9>"$EVAL_ADMISSION_CACHE/.build-kyverno.lock"
	flock -w 3600 9 || die "another build-kyverno.sh holds $EVAL_ADMISSION_CACHE/.build-kyverno.lock"
	mkdir -p "$KYVERNO_DIR"
	if up_to_date; then
		log "kyverno up to date in $KYVERNO_DIR"
	else
		build
	fi
	printf 'bin=%s\n' "$KYVERNO_BIN"
}

main "$@"
