#!/usr/bin/env bash
# session 19, device call 2: the NCCL replay hang, then the nightly with its full 3-minute campaign
set -uo pipefail
source .gpu-deps/env.sh
t0=$SECONDS
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$SHARDFUZZ_CMAKE_PREFIX" -DSHARDFUZZ_BUILD_TESTS=OFF > $OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 2; }
ninja -C build-gpu shardfuzz > $OUT/build.log 2>&1 || { grep -A5 "error" $OUT/build.log | head -40; exit 2; }
echo "== built in $((SECONDS - t0)) s"
B=build-gpu/shardfuzz
t0=$SECONDS
stdbuf -oL -eL $B replay reproducers --backend nccl --nproc 1 > $OUT/replay-nccl.log 2>&1 &
pid=$!
for i in $(seq 1 50); do sleep 1; kill -0 $pid 2>/dev/null || break; done
if kill -0 $pid 2>/dev/null; then
  echo "== replay nccl still running after $((SECONDS - t0)) s; last lines:"; tail -3 $OUT/replay-nccl.log
  which gdb && for p in $pid $(pgrep -f rank-worker); do echo "--- stacks of $p"; timeout 20 gdb -p $p -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^#|^Thread" | grep -v "in ?? " | head -60; done
  kill $pid; sleep 1; pkill -9 -f rank-worker
else
  wait $pid; echo "== replay nccl rc=$? in $((SECONDS - t0)) s: $(tail -1 $OUT/replay-nccl.log)"
fi
grep -vE "^PASS" $OUT/replay-nccl.log | head -10
t0=$SECONDS; SHARDFUZZ_GPU_BUILD_DIR=build-gpu bash ci/nightly-gpu.sh $OUT/nightly; echo "== nightly rc=$? in $((SECONDS - t0)) s"
