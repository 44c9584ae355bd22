#!/usr/bin/env bash
# session 19, device call 3: requested bytes; the nightly (3-minute campaign) and, beside it, the NCCL replay
set -uo pipefail
source .gpu-deps/env.sh
t0=$SECONDS
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$SHARDFUZZ_CMAKE_PREFIX" -DSHARDFUZZ_BUILD_TESTS=OFF > $OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 2; }
ninja -C build-gpu shardfuzz > $OUT/build.log 2>&1 || { grep -A5 "error" $OUT/build.log | head -40; exit 2; }
echo "== built in $((SECONDS - t0)) s"
B=build-gpu/shardfuzz
t0=$SECONDS
( timeout 280 $B replay reproducers --backend nccl --nproc 1 > $OUT/replay-nccl.log 2>&1; echo "== replay nccl rc=$? in $((SECONDS - t0)) s: $(tail -1 $OUT/replay-nccl.log)" > $OUT/replay-nccl.rc ) &
SHARDFUZZ_GPU_BUILD_DIR=build-gpu bash ci/nightly-gpu.sh $OUT/nightly; echo "== nightly rc=$? in $((SECONDS - t0)) s"
wait
cat $OUT/replay-nccl.rc; grep -vE "^PASS" $OUT/replay-nccl.log | head -8
cat $OUT/nightly/fuzz-*.json | grep -E "message|cases\"" | head
rm -rf $OUT/nightly/*/.campaign.json $OUT/nightly/*.xml $OUT/build.log $OUT/cmake.log $OUT/nightly/build.log
