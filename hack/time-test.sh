#!/usr/bin/env bash
# `make test`, stage by stage, timed: runs each prerequisite of the Makefile's
# `test` target in its order (read from the Makefile, so the two cannot
# drift), each stage's output to $OUT/<stage>.log, and prints a table of
# seconds, exit status and load average at each stage's end. Stops at the
# first failing stage, as `make test` does. Usage: hack/time-test.sh [OUT]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
out=${1:-$PWD/test-times}
mkdir -p "$out"
read -r -a stages < <(awk -F': *' '$1 == "test" { print $2; exit }' Makefile)
[[ ${#stages[@]} -gt 0 ]] || { echo "no test: line in the Makefile" >&2; exit 2; }
printf '| stage | seconds | exit | load average after |\n|---|---:|---:|---|\n' | tee "$out/times.md"
total=0
for stage in "${stages[@]}"; do
	start=$SECONDS
	make "$stage" >"$out/$stage.log" 2>&1
	status=$?
	took=$((SECONDS - start))
	total=$((total + took))
	printf '| %s | %d | %d | %s |\n' "$stage" "$took" "$status" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/times.md"
	if [[ $status -ne 0 ]]; then
		echo "$stage failed: $out/$stage.log" >&2
		exit "$status"
	fi
done
printf '| all | %d | 0 | |\n' "$total" | tee -a "$out/times.md"
