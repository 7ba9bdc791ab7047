#!/usr/bin/env bash
# Install the real clients the end-to-end tests submit through (EvalHub's
# server and the AIPerf operator, tests/clients/requirements.txt, every
# transitive version pinned by tests/clients/constraints.txt) into a venv in
# $EVAL_ADMISSION_CACHE/clients-<hash>, keyed by those two files. Progress goes
# to stderr; stdout is `venv=PATH` (tests/common/control_plane/ reads it).
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REQUIREMENTS=$REPO_ROOT/tests/clients/requirements.txt
CONSTRAINTS=$REPO_ROOT/tests/clients/constraints.txt
# Keyed by the pins only, so editing a comment reinstalls nothing.
stamp=$(grep -hv '^#' "$REQUIREMENTS" "$CONSTRAINTS" | sha256sum | cut -c1-12)
VENV=$EVAL_ADMISSION_CACHE/clients-$stamp

if [[ -f $VENV/.complete ]]; then
	echo "venv=$VENV"
	exit 0
fi
# Test binaries may ask at once: one installs, the others wait and find it done.
hold_lock "$EVAL_ADMISSION_CACHE/.build-clients.lock"
if [[ ! -f $VENV/.complete ]]; then
	log "installing the clients into $VENV"
	rm -rf "$VENV"
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQUIREMENTS" -c "$CONSTRAINTS" >&2
	touch "$VENV/.complete"
fi
echo "venv=$VENV"
