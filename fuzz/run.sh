#!/usr/bin/env bash
# Builds the fuzz targets with cargo-fuzz and runs them (fuzz/README.md).
#
#   fuzz/run.sh smoke [TARGET...]   each target for FUZZ_SMOKE_SECONDS (40 s)
#   fuzz/run.sh long  [TARGET...]   each target for FUZZ_RUNS executions (10,000,000)
#   fuzz/run.sh build               only the build
#   fuzz/run.sh tmin TARGET FILE    minimize a crashing input (cargo fuzz tmin)
#
# The targets run one after the other, one libFuzzer job each. Builds, seeds,
# corpora, artifacts and logs live under $CACHE (~/.cache/eval-admission):
#   target-fuzz/                  the build (CARGO_TARGET_DIR)
#   fuzz-seeds/<target>/          written fresh from the repository before each run
#   fuzz-corpus/<target>/         what libFuzzer found; kept across runs (merged after a long run)
#   fuzz-artifacts/<target>/      crash-*, timeout-*, oom-*, slow-unit-* inputs
#   fuzz-logs/<target>-<mode>.log libFuzzer's output
# Any crash, timeout or out-of-memory fails the run (after the other targets ran).
set -uo pipefail

cd "$(dirname "$0")/.."
CACHE=${CACHE:-$HOME/.cache/eval-admission}
TOOLCHAIN=${FUZZ_TOOLCHAIN:-nightly}
SANITIZER=${FUZZ_SANITIZER:-none}
SMOKE_SECONDS=${FUZZ_SMOKE_SECONDS:-40}
RUNS=${FUZZ_RUNS:-10000000}
RSS_MB=${FUZZ_RSS_MB:-2048}
TIMEOUT=${FUZZ_TIMEOUT:-10}
TARGETS_ALL=(review state_file config)
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$CACHE/target-fuzz}
export PATH="$CACHE/tools/bin:$PATH"
TRIPLE=$(rustc +"$TOOLCHAIN" -vV | sed -n 's/^host: //p')
BIN_DIR=$CARGO_TARGET_DIR/$TRIPLE/release
FUZZ_FLAGS=(--fuzz-dir fuzz --target-dir "$CARGO_TARGET_DIR" --sanitizer "$SANITIZER")

# The most bytes of one input: an AdmissionReview body or a state file may be
# large; a config is a page.
max_len() {
  case $1 in
    review | state_file) echo 65536 ;;
    config) echo 16384 ;;
  esac
}

dict() {
  case $1 in
    review) echo fuzz/dict/review.dict ;;
    state_file | config) echo fuzz/dict/yaml.dict ;;
  esac
}

need_tools() {
  command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is not in $CACHE/tools/bin: run make fuzz-tools" >&2; exit 2; }
}

build() {
  need_tools
  # cargo fuzz has no --locked: check the committed lock file first.
  if ! cargo +"$TOOLCHAIN" metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null; then
    echo "fuzz/Cargo.lock is out of date (the main crate's dependencies changed?):" \
      "run cargo +$TOOLCHAIN update --workspace --manifest-path fuzz/Cargo.toml and commit it" >&2
    exit 2
  fi
  cargo +"$TOOLCHAIN" fuzz build "${FUZZ_FLAGS[@]}" || exit 2
}

# The value libFuzzer printed for stat::NAME in LOG.
stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }

run_one() {
  local target=$1 mode=$2
  local seeds=$CACHE/fuzz-seeds/$target corpus=$CACHE/fuzz-corpus/$target
  local artifacts=$CACHE/fuzz-artifacts/$target log=$CACHE/fuzz-logs/$target-$mode.log
  rm -rf "$seeds"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  EVAL_ADMISSION_FUZZ_SEEDS=$seeds "$BIN_DIR/$target" >/dev/null 2>&1 || { echo "$target: writing the seeds failed" >&2; return 1; }
  local limit
  if [ "$mode" = smoke ]; then limit=-max_total_time=$SMOKE_SECONDS; else limit=-runs=$RUNS; fi
  local before
  before=$(ls "$artifacts" | wc -l)
  echo "== $target: $limit, -max_len=$(max_len "$target"), $(ls "$seeds" | wc -l) seeds, corpus $corpus; log $log"
  local start end status
  start=$(date +%s)
  "$BIN_DIR/$target" -artifact_prefix="$artifacts/" -max_len="$(max_len "$target")" -timeout="$TIMEOUT" \
    -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$RSS_MB" -dict="$(dict "$target")" -print_final_stats=1 "$limit" \
    "$corpus" "$seeds" >"$log" 2>&1
  status=$?
  end=$(date +%s)
  local found
  found=$(ls -t "$artifacts" | head -$(( $(ls "$artifacts" | wc -l) - before )) 2>/dev/null)
  printf '%s: %s executions, %s exec/s, %ss wall, peak RSS %s MB, slowest unit %ss, corpus %s files (%s), exit %s\n' \
    "$target" "$(stat number_of_executed_units "$log")" "$(stat average_exec_per_sec "$log")" "$((end - start))" \
    "$(stat peak_rss_mb "$log")" "$(stat slowest_unit_time_sec "$log")" "$(ls "$corpus" | wc -l)" \
    "$(du -sh "$corpus" | cut -f1)" "$status"
  grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|.*Slowest unit:)' "$log" | sed "s/^/  $target: /"
  if [ -n "$found" ]; then
    echo "  $target: new artifacts in $artifacts:"
    echo "$found" | sed 's/^/    /'
  fi
  if [ "$status" -ne 0 ]; then
    echo "  $target FAILED (exit $status); the end of $log:"
    grep -v '^#[0-9]' "$log" | tail -40 | sed 's/^/    /'
    return 1
  fi
  if [ "$mode" = long ]; then
    # Keep the corpus small: only the inputs that add coverage (libFuzzer -merge=1).
    rm -rf "$corpus.merged" && mkdir -p "$corpus.merged"
    if "$BIN_DIR/$target" -merge=1 -artifact_prefix="$artifacts/" -max_len="$(max_len "$target")" \
      -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" "$corpus.merged" "$corpus" >"$log.merge" 2>&1; then
      rm -rf "$corpus" && mv "$corpus.merged" "$corpus"
      echo "  $target: corpus merged to $(ls "$corpus" | wc -l) files ($(du -sh "$corpus" | cut -f1))"
    else
      rm -rf "$corpus.merged"
      echo "  $target: corpus merge failed, kept as is (see $log.merge)"
    fi
  fi
}

mode=${1:-}
shift || true
case $mode in
  build) build ;;
  smoke | long)
    build
    targets=("$@")
    [ ${#targets[@]} -gt 0 ] || targets=("${TARGETS_ALL[@]}")
    echo "fuzz $mode on $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock 2>/dev/null || echo ' with uncommitted src changes'), $(date -u +%FT%TZ), sanitizer $SANITIZER"
    failed=()
    for target in "${targets[@]}"; do
      run_one "$target" "$mode" || failed+=("$target")
    done
    if [ ${#failed[@]} -gt 0 ]; then
      echo "fuzz $mode: FAILED: ${failed[*]}"
      exit 1
    fi
    echo "fuzz $mode: ${targets[*]}: no crash, timeout or out-of-memory"
    ;;
  tmin)
    need_tools
    [ $# -eq 2 ] || { echo "usage: fuzz/run.sh tmin TARGET FILE" >&2; exit 2; }
    cargo +"$TOOLCHAIN" fuzz tmin "${FUZZ_FLAGS[@]}" "$1" "$2" -- -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB"
    ;;
  *)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
