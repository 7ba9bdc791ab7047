#!/usr/bin/env bash
# Build the differential judge (tests/kueue/oracle: Kueue v0.19.2's scheduler
# in-process) into $EVAL_ADMISSION_CACHE/kueue-<version>/oracle-bin/oracle (not
# bin/, which hack/build-kueue.sh replaces whole: a judge running meanwhile
# would lose the files it reads beside itself). One file,
# tests/kueue/oracle/_kueue-scheduler/scheduler_oracle_export.go, is added to Kueue's
# pkg/scheduler (it exports one scheduling cycle); Kueue's own files are
# untouched. Rebuilt when go.mod, go.sum or the oracle's sources change.
# Progress goes to stderr; the last line of stdout is the binary's path.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KUEUE_MOD_DIR=$REPO_ROOT/tests/kueue
ORACLE_DIR=$EVAL_ADMISSION_CACHE/kueue-$KUEUE_VERSION
ORACLE_BIN=$ORACLE_DIR/oracle-bin/oracle

build_stamp() {
	cat "${BASH_SOURCE[0]}" "$KUEUE_MOD_DIR/go.mod" "$KUEUE_MOD_DIR/go.sum" "$KUEUE_MOD_DIR"/oracle/*.go "$KUEUE_MOD_DIR"/oracle/_kueue-scheduler/*.go |
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
env -C "$KUEUE_MOD_DIR" go mod download sigs.k8s.io/kueue sigs.k8s.io/jobset
kueue_src=$(env -C "$KUEUE_MOD_DIR" GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
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
{ cat "$KUEUE_MOD_DIR/go.mod"; echo; echo "replace sigs.k8s.io/kueue => $src_copy"; } >"$modfile"
cp "$KUEUE_MOD_DIR/go.sum" "$ORACLE_DIR/oracle.sum"
log "building the Kueue $KUEUE_VERSION scheduler oracle"
env -C "$KUEUE_MOD_DIR" CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" \
	go build -modfile "$modfile" -trimpath -o "$ORACLE_BIN.tmp" ./oracle
mv "$ORACLE_BIN.tmp" "$ORACLE_BIN"
# Beside the binary, what it reads at run time: the release's Kueue
# Configuration (assumed without a kueue-manager-config) and the CRDs whose
# schema defaults the API server would apply to each object.
cp "$src_copy/config/components/manager/controller_manager_config.yaml" "$ORACLE_DIR/oracle-bin/oracle-default-config.yaml"
jobset_src=$(env -C "$KUEUE_MOD_DIR" GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
rm -rf "$ORACLE_DIR/oracle-bin/oracle-crds" && mkdir -p "$ORACLE_DIR/oracle-bin/oracle-crds"
cp "$src_copy"/config/components/crd/bases/*.yaml "$jobset_src"/config/components/crd/bases/*.yaml "$ORACLE_DIR/oracle-bin/oracle-crds/"
build_stamp >"$ORACLE_BIN.stamp"
log "built in $((SECONDS - start))s: $ORACLE_BIN"
echo "$ORACLE_BIN"
