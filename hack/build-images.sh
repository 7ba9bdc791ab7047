#!/usr/bin/env bash
# Build, without Docker, the container images the single-node Kubernetes test
# (tests/common/node.rs) runs, as OCI image layout tars written by
# tests/node/oci_image.py and importable with
# `ctr -n k8s.io images import --all-platforms`:
#  - registry.local/pause:3.10: the pod sandbox, tests/node/pause.c built static;
#  - registry.local/busybox:1.35: Debian's busybox-static and applet links;
#  - registry.local/eval-admission:test: the binary the tests run, as the
#    Dockerfile's final stage ships it (user, entrypoint, cmd, ports and binary
#    path read from the Dockerfile), on a layer standing in for its base
#    gcr.io/distroless/cc-debian12:nonroot: the shared libraries the binary
#    needs (this host is Debian 12 too), /etc/passwd, /etc/group and
#    /etc/nsswitch.conf like distroless, /tmp, /home/nonroot; no shell.
#
# usage: hack/build-images.sh [--only pause|busybox|eval-admission]... [BINARY]
#   BINARY defaults to $CARGO_TARGET_DIR/release/eval-admission
#   ($CARGO_TARGET_DIR defaults to $EVAL_ADMISSION_CACHE/target).
# Writes into $EVAL_ADMISSION_IMAGES_DIR (default $EVAL_ADMISSION_CACHE/images)
# and skips an image whose inputs (every file in it, its configuration and
# the builder) are those of the tar already there (NAME.tar.stamp).
# Progress goes to stderr; stdout is what tests/common/node.rs reads:
# <image>_image=<tar> and <image>_ref=<reference> lines, image being pause,
# busybox and eval_admission.
set -euo pipefail
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OCI_IMAGE=$REPO_ROOT/tests/node/oci_image.py
DOCKERFILE=$REPO_ROOT/Dockerfile
IMAGES_DIR=${EVAL_ADMISSION_IMAGES_DIR:-$EVAL_ADMISSION_CACHE/images}

PAUSE_REF=registry.local/pause:3.10
BUSYBOX_REF=registry.local/busybox:1.35
EVAL_ADMISSION_REF=registry.local/eval-admission:test

BUSYBOX_APPLETS=(sh echo sleep cat ls id touch env true false mkdir rm ps hostname wget nc date test)
# The PATH the busybox and distroless images set.
IMAGE_PATH=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The base the eval-admission layer stands in for, and that base's facts.
DISTROLESS_BASE=gcr.io/distroless/cc-debian12
NONROOT_UID=65532
NONROOT_HOME=/home/nonroot

# image NAME REF OCI_IMAGE_ARGS...: writes $IMAGES_DIR/NAME.tar unless its
# stamp says it was made from the same inputs; prints NAME_image= and NAME_ref=.
image() {
	local name=$1 ref=$2
	shift 2
	local out=$IMAGES_DIR/$name.tar key=${name//-/_} stamp digest
	stamp=$(python3 "$OCI_IMAGE" --ref "$ref" --inputs-digest "$@")
	if [[ -f $out && -f $out.stamp && $(<"$out.stamp") == "$stamp" ]]; then
		log "$ref up to date: $out"
	else
		rm -f "$out.stamp"
		digest=$(python3 "$OCI_IMAGE" --ref "$ref" --out "$out" "$@")
		echo "$stamp" >"$out.stamp"
		log "$ref built: $out ($(du -h "$out" | cut -f1), manifest $digest)"
	fi
	printf '%s_image=%s\n%s_ref=%s\n' "$key" "$out" "$key" "$ref"
}

build_pause() {
	command -v gcc >/dev/null 2>&1 || die "gcc not found (apt-get install gcc libc6-dev)"
	# Cheap, and gcc's output depends only on the source and the compiler,
	# so the stamp of the binary stands for both.
	gcc -static -Os -s -o "$STAGE/pause" "$REPO_ROOT/tests/node/pause.c"
	image pause "$PAUSE_REF" --user 65535:65535 --entrypoint '["/pause"]' \
		--file "$STAGE/pause:/pause:0755"
}

build_busybox() {
	if ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
		log "installing busybox-static"
		apt-get install -y busybox-static >&2 ||
			{ apt-get update >&2 && apt-get install -y busybox-static >&2; } ||
			die "cannot install busybox-static"
	fi
	local busybox version args=() applet
	busybox=$(dpkg-query -L busybox-static | grep -m1 '/busybox$') ||
		die "busybox-static installs no busybox binary"
	# ldd fails on a static binary: busybox must need nothing else in the image.
	if ldd "$busybox" >/dev/null 2>&1; then
		die "$busybox is dynamically linked"
	fi
	version=$(dpkg-query -W -f='${Version}' busybox-static)
	[[ $version == *:1.35.* || $version == 1.35.* ]] ||
		log "warning: busybox-static is $version, the image is tagged $BUSYBOX_REF"
	args=(--cmd '["sh"]' --env "$IMAGE_PATH" --file "$busybox:/bin/busybox:0755"
		--dir /tmp:1777 --dir /etc --dir /proc --dir /dev --dir /sys)
	for applet in "${BUSYBOX_APPLETS[@]}"; do
		args+=(--symlink "/bin/$applet=busybox")
	done
	image busybox "$BUSYBOX_REF" "${args[@]}"
}

# The Dockerfile's final stage, read into DF_*: the base, USER, EXPOSE,
# ENTRYPOINT, CMD and where COPY puts the binary. An instruction this builder
# does not reproduce stops the build instead of making a different image.
read_dockerfile() {
	local stage instruction rest words=() ports=() sources=() dest i
	# After the last FROM, one instruction per line: comment lines dropped and
	# continuation lines joined, as Docker reads them.
	stage=$(awk '
		/^[[:space:]]*(#|$)/ { next }
		{ sub(/^[[:space:]]+/, ""); line = line $0 }
		/\\[[:space:]]*$/ { sub(/\\[[:space:]]*$/, " ", line); next }
		{ split(line, word) }
		toupper(word[1]) == "FROM" { n = 0; from = line; line = ""; next }
		{ stage[++n] = line; line = "" }
		END { print from; for (i = 1; i <= n; i++) print stage[i] }
	' "$DOCKERFILE")
	DF_BASE='' DF_USER='' DF_ENTRYPOINT='' DF_CMD='' DF_BINARY_DEST='' DF_EXPOSE=()
	while read -r instruction rest; do
		case ${instruction^^} in
		FROM)
			read -ra words <<<"$rest"
			for i in "${!words[@]}"; do
				[[ ${words[i]} == --* ]] || { DF_BASE=${words[i]}; break; }
			done
			;;
		USER) DF_USER=$rest ;;
		EXPOSE)
			read -ra ports <<<"$rest"
			DF_EXPOSE+=("${ports[@]}")
			;;
		ENTRYPOINT) DF_ENTRYPOINT=$rest ;;
		CMD) DF_CMD=$rest ;;
		COPY)
			read -ra words <<<"$rest"
			sources=()
			for i in "${!words[@]}"; do
				case ${words[i]} in
				--from=* | --link) ;;
				--*) die "$DOCKERFILE: COPY ${words[i]} is not reproduced by $0" ;;
				*) sources+=("${words[i]}") ;;
				esac
			done
			dest=${sources[-1]}
			unset 'sources[-1]'
			[[ ${#sources[@]} -eq 1 && ${sources[0]##*/} == eval-admission ]] ||
				die "$DOCKERFILE: the final stage copies more than the binary ($rest); teach $0"
			[[ $dest == */ ]] && dest+=eval-admission
			DF_BINARY_DEST=$dest
			;;
		*) die "$DOCKERFILE: the final stage's $instruction is not reproduced by $0; teach it" ;;
		esac
	done <<<"$stage"
	[[ ${DF_BASE%%[:@]*} == "$DISTROLESS_BASE" ]] ||
		die "$DOCKERFILE: base $DF_BASE, but the layer built here stands in for $DISTROLESS_BASE"
	[[ -n $DF_USER ]] || die "$DOCKERFILE: the final stage has no USER"
	[[ $DF_ENTRYPOINT == \[* ]] || die "$DOCKERFILE: ENTRYPOINT must be the exec (JSON) form: the image has no shell"
	[[ -z $DF_CMD || $DF_CMD == \[* ]] || die "$DOCKERFILE: CMD must be the exec (JSON) form: the image has no shell"
	[[ -n $DF_BINARY_DEST ]] || die "$DOCKERFILE: no COPY of the eval-admission binary in the final stage"
}

# The absolute paths `ldd BINARY` names: shared libraries and the dynamic
# loader (at the path the binary asks for, e.g. /lib64/ld-linux-x86-64.so.2).
shared_libraries() {
	local out
	out=$(ldd "$1") || die "ldd $1 failed: is it dynamically linked?"
	! grep -q 'not found' <<<"$out" || die "ldd $1: $out"
	awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' <<<"$out"
}

build_eval_admission() {
	local binary=$1 args=() lib port
	[[ -x $binary ]] || die "no binary at $binary (cargo build --release, or pass its path)"
	read_dockerfile

	# distroless's users and groups (root, nobody, nonroot) and an nsswitch.conf
	# that keeps glibc to files and DNS.
	cat >"$STAGE/passwd" <<-EOF
		root:x:0:0:root:/root:/sbin/nologin
		nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
		nonroot:x:$NONROOT_UID:$NONROOT_UID:nonroot:$NONROOT_HOME:/sbin/nologin
	EOF
	cat >"$STAGE/group" <<-EOF
		root:x:0:
		nobody:x:65534:
		nonroot:x:$NONROOT_UID:
	EOF
	cat >"$STAGE/nsswitch.conf" <<-EOF
		passwd: files
		group: files
		hosts: files dns
	EOF

	args=(--user "$DF_USER" --entrypoint "$DF_ENTRYPOINT" --env "$IMAGE_PATH" --workdir "$NONROOT_HOME"
		--file "$binary:$DF_BINARY_DEST:0755"
		--file "$STAGE/passwd:/etc/passwd:0644" --file "$STAGE/group:/etc/group:0644"
		--file "$STAGE/nsswitch.conf:/etc/nsswitch.conf:0644"
		--dir /tmp:1777 --dir "$NONROOT_HOME:0700:$NONROOT_UID:$NONROOT_UID")
	[[ -z $DF_CMD ]] || args+=(--cmd "$DF_CMD")
	for port in "${DF_EXPOSE[@]}"; do
		args+=(--expose "$port")
	done
	# The library's content (the host's symlinks resolved) at the path ldd names.
	while read -r lib; do
		args+=(--file "$(readlink -f "$lib"):$lib")
	done < <(shared_libraries "$binary")
	image eval-admission "$EVAL_ADMISSION_REF" "${args[@]}"
}

main() {
	local only=() binary
	while [[ $# -gt 0 ]]; do
		case $1 in
		--only)
			[[ $# -ge 2 ]] || die "--only needs pause, busybox or eval-admission"
			only+=("$2")
			shift 2
			;;
		--*) die "unknown option $1 (usage: $0 [--only IMAGE]... [BINARY])" ;;
		*) break ;;
		esac
	done
	[[ ${#only[@]} -gt 0 ]] || only=(pause busybox eval-admission)
	binary=${1:-${CARGO_TARGET_DIR:-$EVAL_ADMISSION_CACHE/target}/release/eval-admission}

	hold_lock "$IMAGES_DIR/.lock" 600
	STAGE=$(mktemp -d)
	trap 'rm -rf "$STAGE"' EXIT

	local name
	for name in "${only[@]}"; do
		case $name in
		pause) build_pause ;;
		busybox) build_busybox ;;
		eval-admission) build_eval_admission "$binary" ;;
		*) die "unknown image $name (pause, busybox or eval-admission)" ;;
		esac
	done
}

main "$@"
