#!/usr/bin/env bash
# Issue 24's speed figures on the GPU host (16 cores), side by side in one run:
#   - the standard small case, world 4, every property, isolation, pinned to 2 cores (taskset): one
#     worker, and one worker per core as a campaign's default --jobs runs it;
#   - generated cases/s with --jobs on 2, 4, 8 and 16 cores (ci/jobs-scaling.sh);
#   - the seed leak hunted as a user times it (ci/seed-leak-hunt.sh) on 2 cores, and with --jobs 16.
# Usage: source .gpu-deps/env.sh && bash ci/speed-gpu.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: ci/speed-gpu.sh OUT}
BUILD=${SHARDFUZZ_GPU_BENCH_BUILD_DIR:-build-gpu-bench}
mkdir -p "$OUT"
PREFIX=${SHARDFUZZ_CMAKE_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)}
t0=$SECONDS
{ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DSHARDFUZZ_BUILD_TESTS=OFF && cmake --build "$BUILD" --target shardfuzz shardfuzz_bench; } \
  >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 2; }
echo "speed-gpu: built in $((SECONDS - t0)) s; $(nproc) cores"
export OPENBLAS_NUM_THREADS=1
# The isolated row alone first: isolation forks only a single-threaded process, and torch 2.x
# keeps threads once a row has run in the process.
taskset -c 0-1 "$BUILD/shardfuzz_bench" --benchmark_filter='Isolated/' \
  --benchmark_out="$OUT/small-isolated-2cores.json" --benchmark_out_format=json 2>&1 | grep "^BM" | tee "$OUT/small-2cores.log"
taskset -c 0-1 "$BUILD/shardfuzz_bench" --benchmark_filter='IsolatedOnEveryCore' \
  --benchmark_out="$OUT/small-every-core-2cores.json" --benchmark_out_format=json 2>&1 | grep "^BM" | tee -a "$OUT/small-2cores.log"
taskset -c 0-1 "$BUILD/shardfuzz_bench" --benchmark_filter='BM_StandardSmall(Run|Case)($|/|Breakdown)' \
  --benchmark_out="$OUT/small-2cores.json" --benchmark_out_format=json 2>&1 | grep "^BM" | tee -a "$OUT/small-2cores.log"
SCALING_OUT="$OUT/scaling" bash ci/jobs-scaling.sh "${SCALING_TIME:-20s}" "2 4 8 16" "$BUILD/shardfuzz" 2>&1 | tee "$OUT/scaling.log"
SHARDFUZZ_TASKSET="taskset -c 0-1" bash ci/seed-leak-hunt.sh 10 "$BUILD/shardfuzz" 2>&1 | tee "$OUT/leak-2cores.log"
bash ci/seed-leak-hunt.sh 10 "$BUILD/shardfuzz" -- --jobs 16 2>&1 | tee "$OUT/leak-jobs16.log"
echo "speed-gpu: done in $((SECONDS - t0)) s"
