#!/usr/bin/env bash
# Coverage of a plain campaign against a coverage-guided one of the same length (issue 23): builds
# build-cov (-DSHARDFUZZ_COVERAGE=ON: runtime/fsdp, ac and train call the coverage hook), runs
#   fuzz --profile strict --time T --seed S              (plain: the generator alone)
#   fuzz --profile strict --time T --seed S --coverage-guided   (half of the cases mutate the corpus)
# and prints each one's edges and blocks reached per runtime folder (OUT/coverage.json), beside the
# blocks each folder has (the hook's call sites in its object files).
# Usage: ci/coverage-campaign.sh [TIME=300s] [SEED=1] [OUT=/tmp/shardfuzz-coverage]
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

TIME="${1:-300s}"
SEED="${2:-1}"
OUT="${3:-/tmp/shardfuzz-coverage}"

SHARDFUZZ_BUILD_DIR=build-cov SHARDFUZZ_CMAKE_ARGS="-DSHARDFUZZ_COVERAGE=ON -DSHARDFUZZ_BUILD_TESTS=OFF" \
  bash ci/build.sh shardfuzz

rm -rf "$OUT"
mkdir -p "$OUT"
for mode in plain guided; do
  flags=()
  [[ $mode == guided ]] && flags=(--coverage-guided)
  log "$mode: fuzz --profile strict --time $TIME --seed $SEED ${flags[*]}"
  ./build-cov/shardfuzz fuzz --profile strict --time "$TIME" --seed "$SEED" --keep-going --shrink-seconds 10 --jobs 1 \
    --out "$OUT/$mode" "${flags[@]}" > "$OUT/$mode.log" 2>&1 || true
  grep -E "^fuzz: [0-9]+ cases in|^fuzz: coverage" "$OUT/$mode.log" | sed "s/^/$mode: /"
done

log "blocks each folder has (calls of the hook in its objects)"
for folder in fsdp ac train; do
  n=0
  for o in build-cov/CMakeFiles/shardfuzz_runtime.dir/runtime/$folder/*.o; do
    c=$(objdump -dr "$o" | grep -c "R_X86_64_PLT32[[:space:]]*__sanitizer_cov_trace_pc" || true)
    n=$((n + c))
  done
  echo "runtime/$folder: $n instrumented blocks (headers' inline code included)"
done
