#!/usr/bin/env bash
# A short fuzzing pass over every cargo-fuzz target in fuzz/ (docs/security.md, "Fuzzing"):
# each target runs for a few seconds from its seed corpus, so a regression that makes one of
# them crash (a panic, a failed assertion, an input taking over 30 s or a memory blow-up) fails
# CI. (30 s, not less: on a loaded machine a slow but bounded input, a never-firing cron or a
# template that runs out of fuel, took over 10 s here.)
# Usage: scripts/fuzz-smoke.sh [seconds per target, default 20]
# Needs the nightly toolchain and cargo-fuzz; installs cargo-fuzz when missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-20}"
log() { printf '[fuzz-smoke] %s\n' "$*"; }

if ! cargo +nightly --version >/dev/null 2>&1; then
  log "installing the nightly toolchain"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  log "installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

# One build of every target (release, debug assertions on, sanitizer coverage), then the
# targets, as many at once as there are cores. Runs write new inputs to a scratch corpus, never
# to the committed seeds.
log "building the fuzz targets"
cargo +nightly fuzz build
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# As many targets at once as there are cores (each fuzzer is one process on one core), so the
# pass takes its seconds per target over the cores, not per target in turn.
parallel="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
run_one() {
  local target="$1"
  mkdir -p "$scratch/$target"
  if cargo +nightly fuzz run "$target" "$scratch/$target" "seeds/$target" -- \
      -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$scratch/$target.log" 2>&1; then
    echo 0 >"$scratch/$target.rc"
  else
    echo 1 >"$scratch/$target.rc"
  fi
}
mapfile -t targets < <(cargo +nightly fuzz list)
running=0
for target in "${targets[@]}"; do
  log "$target: ${secs}s"
  run_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
failed=()
for target in "${targets[@]}"; do
  if [ "$(cat "$scratch/$target.rc" 2>/dev/null)" != 0 ]; then
    failed+=("$target")
    tail -n 60 "$scratch/$target.log"
    # cargo fuzz leaves the crashing input in fuzz/artifacts/<target>/.
  else
    grep -E '^stat::number_of_executed_units|^Done' "$scratch/$target.log" | tr '\n' ' ' | sed "s/^/[fuzz-smoke] $target: /"
    echo
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  log "crashed: ${failed[*]} (inputs in fuzz/artifacts/)"
  exit 1
fi
log "every target ran ${secs}s without a crash"
