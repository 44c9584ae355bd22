#!/usr/bin/env bash
# session 19, device call 1: build (Release, tests on), GPU tests, replays, GPU bench rows
set -uo pipefail
source .gpu-deps/env.sh
t0=$SECONDS
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$SHARDFUZZ_CMAKE_PREFIX" -DSHARDFUZZ_BUILD_TESTS=ON > $OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 2; }
ninja -C build-gpu > $OUT/build.log 2>&1 || { grep -A5 "error" $OUT/build.log | head -40; exit 2; }
echo "== built in $((SECONDS - t0)) s"
nvidia-smi --query-gpu=name,memory.used --format=csv,noheader
t0=$SECONDS
(cd build-gpu && timeout 200 ctest -j8 --timeout 150 -E 'conform|html_report' > $OUT/ctest.log 2>&1); echo "== ctest rc=$? in $((SECONDS - t0)) s"
grep -E "tests passed|tests failed|\*\*\*Failed|\(Failed\)|Timeout|Not Run" $OUT/ctest.log | head -20
(cd build-gpu && ctest -R 'OnCuda|DeviceMemory|DevicePlacement' -V 2>&1 | grep -E "OK \]|FAILED|SKIPPED|Failure|Expected|actual|Which is" | head -30)
B=build-gpu/shardfuzz
t0=$SECONDS; timeout 120 $B replay reproducers --backend process --device cuda > $OUT/replay-proc.log 2>&1; echo "== replay process cuda rc=$? in $((SECONDS - t0)) s: $(tail -1 $OUT/replay-proc.log)"
grep -iE "changed|FAIL" $OUT/replay-proc.log | head -5
t0=$SECONDS; timeout 90 $B replay reproducers --device cuda > $OUT/replay-threads.log 2>&1; echo "== replay threads cuda rc=$? in $((SECONDS - t0)) s: $(tail -1 $OUT/replay-threads.log)"
t0=$SECONDS; timeout 90 $B replay reproducers --backend nccl --nproc 1 > $OUT/replay-nccl.log 2>&1; echo "== replay nccl rc=$? in $((SECONDS - t0)) s: $(tail -1 $OUT/replay-nccl.log)"
grep -iE "changed" $OUT/replay-nccl.log $OUT/replay-threads.log | head -5
SEED=reproducers/seed-leak-gated-moe-nested-experts-ac.json
t0=$SECONDS; timeout 150 python3 -m torch.distributed.run --no-python --nproc_per_node 4 --master_port 29741 $B run --backend process --device cuda --join $SEED > $OUT/join-torchrun-w4.log 2>&1; echo "== torchrun --join process cuda w4 rc=$? in $((SECONDS - t0)) s"
grep -E "per_layer|FAIL|PASS|error|rror" $OUT/join-torchrun-w4.log | head -6
t0=$SECONDS; timeout 150 python3 -m torch.distributed.run --no-python --nproc_per_node 1 --master_port 29742 $B fuzz --backend nccl --join --profile strict --cases 10 --out $OUT/join-nccl > $OUT/join-nccl.log 2>&1; echo "== torchrun --join nccl w1 rc=$? in $((SECONDS - t0)) s"
tail -3 $OUT/join-nccl.log
t0=$SECONDS; SHARDFUZZ_GPU_BENCH_BUILD_DIR=build-gpu timeout 280 bash ci/bench-gpu.sh $OUT/bench; echo "== bench-gpu rc=$? in $((SECONDS - t0)) s"
tail -5 $OUT/bench/native.log; tail -3 $OUT/bench/torch-large.log
