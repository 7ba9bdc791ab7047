#!/usr/bin/env bash
# Build Prometheus's promtool (github.com/prometheus/prometheus/cmd/promtool,
# pinned by the `tool` directive in tests/promtool/go.mod) into
# $EVAL_ADMISSION_CACHE/promtool-<version>/bin/promtool, for `make
# lint-monitoring` (hack/lint-monitoring.sh): `promtool check rules` and
# `promtool test rules` on manifests/monitoring/prometheusrule.yaml. Skips the
# build when the binary was built from the current go.mod/go.sum. Progress
# goes to stderr; stdout is one bin= line.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROMTOOL_MOD_DIR=$REPO_ROOT/tests/promtool
PROMTOOL_MODULE=github.com/prometheus/prometheus
PROMTOOL_VERSION=$(require_version "$PROMTOOL_MOD_DIR/go.mod" "$PROMTOOL_MODULE")
PROMTOOL_DIR=$EVAL_ADMISSION_CACHE/promtool-$PROMTOOL_VERSION
PROMTOOL_BIN=$PROMTOOL_DIR/bin/promtool

# release_of MODULE_VERSION: the Prometheus release a module version is, as
# `promtool --version` reports it upstream: v0.316.0 is 3.16.0.
release_of() {
	local v=${1#v0.} minor
	minor=${v%%.*}
	echo "$((minor / 100)).$((minor % 100)).${v#*.}"
}

# build OUT: promtool, static. remove_all_sd leaves out the optional service
# discoveries (AWS, Azure, GCE, Consul, ...; upstream's build tag for smaller
# binaries): rules are checked and tested without them, and they are most of
# the compile. The -X flags are what upstream's .promu.yml sets (--version).
build() {
	local pkg=github.com/prometheus/common/version release
	release=$(release_of "$PROMTOOL_VERSION")
	log "building promtool $release ($PROMTOOL_MODULE $PROMTOOL_VERSION) with $(go_version) (slow the first time)"
	go_build "$PROMTOOL_MOD_DIR" -tags netgo,remove_all_sd -o "$1/promtool" \
		-ldflags "-s -w -X $pkg.Version=$release -X $pkg.Revision=module-$PROMTOOL_VERSION -X $pkg.Branch=HEAD" \
		"$PROMTOOL_MODULE/cmd/promtool"
}

main() {
	# A separate lock from the other builders'.
	hold_lock "$EVAL_ADMISSION_CACHE/.build-promtool.lock"
	# The stamp (go.mod and go.sum) sits beside bin/, not in it.
	build_cached promtool "$PROMTOOL_DIR/bin" "$PROMTOOL_DIR/.stamp" "$(module_stamp "$PROMTOOL_MOD_DIR")" build promtool
	printf 'bin=%s\n' "$PROMTOOL_BIN"
}

main "$@"
