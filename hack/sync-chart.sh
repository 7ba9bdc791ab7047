#!/usr/bin/env bash
# Copy into the Helm chart (charts/eval-admission/files/) the manifests it is
# rendered from, so the chart and the kustomize tree have one source: the
# policy configs, the webhook configurations `eval-admission manifests`
# renders, the RBAC, the Deployment and the rest. tests/chart.rs fails when a
# copy differs from its source; run this (`make chart`) after changing one.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

files=$REPO_ROOT/charts/eval-admission/files
while read -r source target; do
	mkdir -p "$(dirname "$files/$target")"
	cp "$REPO_ROOT/manifests/$source" "$files/$target"
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$REPO_ROOT/charts/eval-admission/files.txt")
log "chart files copied from manifests/ into $files"
