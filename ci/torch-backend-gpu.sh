#!/usr/bin/env bash
# The torch backend's measurements on a machine with torch (the GPU machine): builds shardfuzz
# against the torch wheel's LibTorch, then runs PART (a, b or all) and writes logs into OUT.
#   a: the seed reproducer on torch (world 1 on the GPU, 2 on CPU with gloo; torch-2.9 and 2.11),
#      replay of reproducers/ on torch, differential conformance at world 2 and 4 (gloo; expert
#      parallelism included);
#   b: a fuzz campaign on torch under torch-2.9 at world 2 (find and shrink the seed leak),
#      the standard small scenario's warm time on both sides (world 1 and 4), conformance at world 1;
#   ep: conformance of ten generated expert-parallel scenarios (worlds 2 and 4, gloo).
# Usage (GPU machine): source .gpu-deps/env.sh && bash ci/torch-backend-gpu.sh OUT [a|b|ep|all]
set -uo pipefail
OUT=${1:?usage: ci/torch-backend-gpu.sh OUT [a|b|ep|all]}
PART=${2:-all}
mkdir -p "$OUT"
rm -rf build-gpu
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDFUZZ_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$SHARDFUZZ_CMAKE_PREFIX" > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 2; }
ninja -C build-gpu shardfuzz > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 2; }
B=build-gpu/shardfuzz
step() {  # name, seconds, command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name: rc=$? in $((SECONDS - t0)) s"
  tail -4 "$OUT/$name.log" | cut -c1-300
}
SEED=reproducers/seed-leak-gated-moe-nested-experts-ac.json
if [[ $PART == a || $PART == all ]]; then
  step seed-w1-2.9 120 $B run --backend torch --profile torch-2.9 --world 1 $SEED
  step seed-w2-2.9 120 $B run --backend torch --profile torch-2.9 --world 2 $SEED
  step seed-w2-2.11 120 $B run --backend torch --profile torch-2.11 --world 2 $SEED
  step replay 300 $B replay --backend torch reproducers
  step conform-w2 240 $B conform --torch-python python3 --cases 40 --world 2 --seed 11
  step conform-w4 200 $B conform --torch-python python3 --cases 16 --world 4 --seed 12
fi
if [[ $PART == b || $PART == all ]]; then
  step fuzz-w2-2.9 300 $B fuzz --backend torch --profile torch-2.9 --world 2 --time 120s --shrink-seconds 120 --out "$OUT/findings"
  $B gen --standard small --world 1 > "$OUT/standard-small.w1.json"
  $B gen --standard small --world 4 > "$OUT/standard-small.w4.json"
  step small-w1 120 $B conform --torch-python python3 --scenario "$OUT/standard-small.w1.json" --repeat 12
  step small-w4 120 $B conform --torch-python python3 --scenario "$OUT/standard-small.w4.json" --repeat 8
  step conform-w1 200 $B conform --torch-python python3 --cases 60 --world 1 --seed 13
fi
if [[ $PART == ep || $PART == all ]]; then
  # conform's generated sizes rarely draw expert parallelism: pick draws that have it.
  mkdir -p "$OUT/ep"
  n=0
  for s in $(seq 1 200); do
    for w in 2 4; do
      $B gen --seed "$s" --world "$w" --size 40 --profile torch-2.11 > "$OUT/ep/draw.json"
      if grep -q '"expert_parallel": true' "$OUT/ep/draw.json"; then n=$((n + 1)); mv "$OUT/ep/draw.json" "$OUT/ep/ep-$n.json"; fi
    done
    [[ $n -ge 10 ]] && break
  done
  rm -f "$OUT/ep/draw.json"
  step conform-ep 300 $B conform --torch-python python3 --scenario "$OUT"/ep/ep-*.json
fi
