#!/usr/bin/env bash
# Build the differential judge (tests/kueue/oracle: a Kueue release's scheduler
# in-process) into $EVAL_ADMISSION_CACHE/kueue-<version>/oracle-bin/oracle (not
# bin/, which hack/build-kueue.sh replaces whole: a judge running meanwhile
# would lose the files it reads beside itself). One file,
# tests/kueue/oracle/_kueue-scheduler/scheduler_oracle_export.go, is added to Kueue's
# pkg/scheduler (it exports one scheduling cycle); Kueue's own files are
# untouched. Rebuilt when go.mod, go.sum or the oracle's sources change.
# Progress goes to stderr; the last line of stdout is the binary's path.
#
# Usage: build-oracle.sh [RELEASE]. RELEASE defaults to $KUEUE_VERSION (the
# module set in tests/kueue/go.mod); another release is built from its own
# pinned module set, tests/kueue/releases/RELEASE.mod and .sum, with the build
# tag kueue_<minor> (kueue_v0_18 ...) selecting the oracle's per-release seams.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUEUE_MOD_DIR=$REPO_ROOT/tests/kueue
RELEASE=${1:-$KUEUE_VERSION}
if [[ $RELEASE == "$KUEUE_VERSION" ]]; then
	base_mod=$KUEUE_MOD_DIR/go.mod
	base_sum=$KUEUE_MOD_DIR/go.sum
else
	base_mod=$KUEUE_MOD_DIR/releases/$RELEASE.mod
	base_sum=$KUEUE_MOD_DIR/releases/$RELEASE.sum
	[[ -f $base_mod && -f $base_sum ]] || die "no module set pinned for Kueue $RELEASE: tests/kueue/releases/$RELEASE.mod and .sum"
fi
# v0.18.2 -> kueue_v0_18: the tag of the oracle files written for that minor.
release_tag=$(sed -E 's/^(v[0-9]+)\.([0-9]+)\..*/kueue_\1_\2/' <<<"$RELEASE")
ORACLE_DIR=$EVAL_ADMISSION_CACHE/kueue-$RELEASE
ORACLE_BIN=$ORACLE_DIR/oracle-bin/oracle

build_stamp() {
	cat "${BASH_SOURCE[0]}" "$base_mod" "$base_sum" "$KUEUE_MOD_DIR"/oracle/*.go "$KUEUE_MOD_DIR"/oracle/*/*.go |
		sha256sum | cut -d' ' -f1
}

up_to_date() { [[ -x $ORACLE_BIN && -f $ORACLE_BIN.stamp && $(<"$ORACLE_BIN.stamp") == "$(build_stamp)" ]]; }
if up_to_date; then
	echo "$ORACLE_BIN"
	exit 0
fi
# The fidelity tests run in parallel threads and each asks for the oracle:
# one builds, the others wait for it and then find it current.
mkdir -p "$ORACLE_DIR"
exec 9>"$ORACLE_DIR/oracle.lock"
flock 9
if up_to_date; then
	echo "$ORACLE_BIN"
	exit 0
fi

use_go
start=$SECONDS
# On a fresh machine the module sources are not there yet: {{.Dir}} would be empty.
env -C "$KUEUE_MOD_DIR" go mod download -modfile "$base_mod" sigs.k8s.io/kueue sigs.k8s.io/jobset
kueue_src=$(env -C "$KUEUE_MOD_DIR" GOFLAGS=-mod=mod go list -modfile "$base_mod" -m -f '{{.Dir}}' sigs.k8s.io/kueue)
[[ -d $kueue_src ]] || die "cannot find the sigs.k8s.io/kueue module sources"
# Go refuses overlays inside the module cache, so the scheduler package gets
# its extra file in a copy of the module kept in the cache, and the build uses
# a generated go.mod (-modfile) that replaces sigs.k8s.io/kueue with that copy.
# The committed go.mod/go.sum are not changed.
src_copy=$ORACLE_DIR/src
rm -rf "$src_copy"
mkdir -p "$ORACLE_DIR/oracle-bin"
cp -r "$kueue_src" "$src_copy"
chmod -R u+w "$src_copy"
cp "$KUEUE_MOD_DIR/oracle/_kueue-scheduler/scheduler_oracle_export.go" "$src_copy/pkg/scheduler/"
modfile=$ORACLE_DIR/oracle.mod
{ cat "$base_mod"; echo; echo "replace sigs.k8s.io/kueue => $src_copy"; } >"$modfile"
cp "$base_sum" "$ORACLE_DIR/oracle.sum"
log "building the Kueue $RELEASE scheduler oracle"
env -C "$KUEUE_MOD_DIR" CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" \
	go build -modfile "$modfile" -tags "$release_tag" -trimpath -o "$ORACLE_BIN.tmp" ./oracle
mv "$ORACLE_BIN.tmp" "$ORACLE_BIN"
# Beside the binary, what it reads at run time: the release's Kueue
# Configuration (assumed without a kueue-manager-config) and the CRDs whose
# schema defaults the API server would apply to each object.
# Each replaced by a rename: a judge running meanwhile reads the default
# Configuration once per scenario, and must never see it half written.
bin_dir=$ORACLE_DIR/oracle-bin
cp "$src_copy/config/components/manager/controller_manager_config.yaml" "$bin_dir/oracle-default-config.yaml.tmp"
mv "$bin_dir/oracle-default-config.yaml.tmp" "$bin_dir/oracle-default-config.yaml"
jobset_src=$(env -C "$KUEUE_MOD_DIR" GOFLAGS=-mod=mod go list -modfile "$base_mod" -m -f '{{.Dir}}' sigs.k8s.io/jobset)
rm -rf "$bin_dir/oracle-crds.tmp" "$bin_dir/oracle-crds.old" && mkdir -p "$bin_dir/oracle-crds.tmp"
cp "$src_copy"/config/components/crd/bases/*.yaml "$jobset_src"/config/components/crd/bases/*.yaml "$bin_dir/oracle-crds.tmp/"
[[ ! -d $bin_dir/oracle-crds ]] || mv "$bin_dir/oracle-crds" "$bin_dir/oracle-crds.old"
mv "$bin_dir/oracle-crds.tmp" "$bin_dir/oracle-crds"
rm -rf "$bin_dir/oracle-crds.old"
build_stamp >"$ORACLE_BIN.stamp"
log "built in $((SECONDS - start))s: $ORACLE_BIN"
echo "$ORACLE_BIN"
