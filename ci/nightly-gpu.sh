#!/usr/bin/env bash
# The nightly GPU job, on a host with NVIDIA GPUs and the torch wheel (its CUDA LibTorch) and NCCL:
#   1. builds shardfuzz against the wheel's LibTorch (docs/gpu-path.md);
#   2. replays reproducers/ on CUDA: every world size, one rank process per rank, spread over the
#      GPUs (--backend process --device cuda; several ranks share a GPU when there are fewer GPUs);
#   3. fuzzes for SHARDFUZZ_NIGHTLY_MINUTES (default 3) under the strict profile: two thirds on
#      CUDA rank processes of every world size, one third through NCCL with one rank per GPU;
#   4. runs a differential campaign for SHARDFUZZ_NIGHTLY_DIFFERENTIAL_MINUTES (default: the same)
#      against the installed torch: each case natively under the profile that models that torch and
#      on torch itself (one rank per GPU where there are enough, gloo on CPU cores beside them for
#      larger worlds, up to SHARDFUZZ_NIGHTLY_MAX_WORLD, default 4; the native side in CUDA rank
#      processes, so layers' bytes are compared where torch is on CUDA); JUnit per case; its summary
#      separates "torch changed" from "native model wrong" from "property failed on both";
#   5. leaves JUnit XML, JSON summaries, reproducers with their HTML reports and the logs in OUT.
# Exit status: 0 clean; 1 a reproducer's verdict changed or a campaign found something; 2 it could
# not run. Usage: ci/nightly-gpu.sh [OUT] (default artifacts/nightly-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-artifacts/nightly-gpu}
MINUTES=${SHARDFUZZ_NIGHTLY_MINUTES:-3}
BUILD=${SHARDFUZZ_GPU_BUILD_DIR:-build-gpu}
mkdir -p "$OUT"
log() { echo "nightly-gpu: $*" | tee -a "$OUT/nightly.log"; }

[[ -f .gpu-deps/env.sh ]] && source .gpu-deps/env.sh
PREFIX=${SHARDFUZZ_CMAKE_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)}
if [[ -z "$PREFIX" ]]; then log "no torch wheel: python3 cannot import torch"; exit 2; fi
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if (( GPUS < 1 )); then log "no GPU visible"; exit 2; fi
log "$GPUS GPU(s); LibTorch from $PREFIX; $MINUTES-minute campaign; artifacts in $OUT"

t0=$SECONDS
if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
         -DSHARDFUZZ_BUILD_TESTS=OFF && cmake --build "$BUILD" --target shardfuzz; } >"$OUT/build.log" 2>&1; then
  log "build failed (build.log)"; tail -20 "$OUT/build.log"; exit 2
fi
log "built in $((SECONDS - t0)) s"
BIN=$BUILD/shardfuzz
status=0

t0=$SECONDS
"$BIN" replay reproducers --backend process --device cuda --junit "$OUT/replay.xml" --summary "$OUT/replay.json" \
  >"$OUT/replay.log" 2>&1
rc=$?
log "replay on CUDA: exit $rc in $((SECONDS - t0)) s ($(tail -1 "$OUT/replay.log"))"
(( rc == 1 )) && status=1
(( rc > 1 )) && { tail -20 "$OUT/replay.log"; exit 2; }

campaign() {  # NAME SECONDS ARGS...
  local name=$1 seconds=$2; shift 2
  local t=$SECONDS
  "$BIN" fuzz --profile strict --time "${seconds}s" --out "$OUT/$name" --junit "$OUT/$name.xml" \
    --summary "$OUT/$name.json" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  log "$name: exit $rc in $((SECONDS - t)) s ($(tail -1 "$OUT/$name.log"))"
  (( rc == 1 )) && status=1
  (( rc > 1 )) && { tail -20 "$OUT/$name.log"; status=2; }
  return 0
}
total=$((MINUTES * 60))
campaign fuzz-cuda-processes $((total * 2 / 3)) --backend process --device cuda
campaign fuzz-nccl $((total - total * 2 / 3)) --backend nccl --nproc "$GPUS"

DIFF_SECONDS=$(( ${SHARDFUZZ_NIGHTLY_DIFFERENTIAL_MINUTES:-$MINUTES} * 60 ))
t=$SECONDS
# The native side in CUDA rank processes, so where torch has a GPU per rank the bytes each layer's
# backward leaves are compared too.
"$BIN" fuzz --differential --backend process --device cuda --torch-python "${SHARDFUZZ_TORCH_PYTHON:-python3}" --max-world "${SHARDFUZZ_NIGHTLY_MAX_WORLD:-4}" \
  --keep-going --time "${DIFF_SECONDS}s" --out "$OUT/differential" --junit "$OUT/differential.xml" \
  --summary "$OUT/differential.json" >"$OUT/differential.log" 2>&1
rc=$?
classes=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])).get("differential",{}); c=d.get("findings_by_class",{}); print(f"torch {d.get(\"torch\")} ({d.get(\"profile\")}): {d.get(\"cases_diverged\",0)} case(s) diverged; torch changed {c.get(\"torch-changed\",0)}, native model wrong {c.get(\"native-model-wrong\",0)}, property failed on both {c.get(\"property-failed-on-both\",0)}; {d.get(\"cases_failed_on_both\",0)} case(s) failed a property on both; per-layer CUDA bytes compared in {d.get(\"cases_layer_bytes_compared\",0)} case(s)")' "$OUT/differential.json" 2>/dev/null)
log "differential: exit $rc in $((SECONDS - t)) s ($(tail -1 "$OUT/differential.log")); ${classes:-no summary}"
(( rc == 1 )) && status=1
(( rc > 1 )) && { tail -20 "$OUT/differential.log"; status=2; }

log "done: exit $status"
exit $status
