#!/usr/bin/env bash
# The GPU rows of docs/performance.md, side by side in one run on a host with a GPU and the torch
# wheel (the GPU machine):
#   - the standard small scenario, one case: native on CUDA (world 1 threads, world 4 rank
#     processes) against the torch backend's warm worker (conform --repeat, world 1);
#   - the standard large model's step (8 gated MoE blocks, dim 4096, bfloat16, full AC, world 1):
#     native (BM_NativeLargeStepCuda, timeline off and on) against plain torch FSDP2 running the
#     exported script with --time-steps (no recorder). Both sides run with
#     CUBLASLT_WORKSPACE_SIZE=0, the native probe's setting (docs/gpu-path.md); torch is also timed
#     with its default workspace, to show what that setting costs.
# Writes OUT/performance-gpu.md (the table, copied to docs/performance-gpu.md by hand) and the raw
# figures beside it. Usage: source .gpu-deps/env.sh && bash ci/bench-gpu.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: ci/bench-gpu.sh OUT}
BUILD=${SHARDFUZZ_GPU_BENCH_BUILD_DIR:-build-gpu-bench}
mkdir -p "$OUT"
PREFIX=${SHARDFUZZ_CMAKE_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)}
[[ -n "$PREFIX" ]] || { echo "bench-gpu: python3 cannot import torch"; exit 2; }
t0=$SECONDS
{ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DSHARDFUZZ_BUILD_TESTS=OFF && cmake --build "$BUILD" --target shardfuzz shardfuzz_bench; } \
  >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 2; }
echo "bench-gpu: built in $((SECONDS - t0)) s"
BIN=$BUILD/shardfuzz

export CUBLASLT_WORKSPACE_SIZE=0
"$BUILD/shardfuzz_bench" --benchmark_filter='BM_NativeLargeStepCuda|BM_World1StandardSmallCase/1|BM_RankProcessesStandardSmallCase/1' \
  --benchmark_out="$OUT/native.json" --benchmark_out_format=json >"$OUT/native.log" 2>&1
echo "bench-gpu: native rc=$? ($(grep -c '^BM_' "$OUT/native.log") rows)"

"$BIN" gen --standard large >"$OUT/standard-large.json"
"$BIN" export --torch "$OUT/standard-large.json" >"$OUT/standard-large.py"
python3 "$OUT/standard-large.py" --time-steps 20 >"$OUT/torch-large.log" 2>&1
echo "bench-gpu: torch large (workspace 0) rc=$?"
env -u CUBLASLT_WORKSPACE_SIZE python3 "$OUT/standard-large.py" --time-steps 20 >"$OUT/torch-large-default-ws.log" 2>&1
echo "bench-gpu: torch large (default workspace) rc=$?"

"$BIN" gen --standard small --world 1 >"$OUT/standard-small.w1.json"
"$BIN" conform --torch-python python3 --scenario "$OUT/standard-small.w1.json" --repeat 12 >"$OUT/torch-small.log" 2>&1
echo "bench-gpu: torch small rc=$?"

python3 - "$OUT" <<'PY'
import json, re, sys, datetime
out = sys.argv[1]
rows = {b["name"]: b for b in json.load(open(f"{out}/native.json"))["benchmarks"] if not b.get("error_occurred")}
def ms(prefix):
    b = next((b for n, b in rows.items() if n.startswith(prefix)), None)
    return b["real_time"] if b else float("nan")
def torch_ms(log):
    for line in open(f"{out}/{log}"):
        if line.startswith("{"):
            return json.loads(line)["step_ms_median"]
    return float("nan")
small = open(f"{out}/torch-small.log").read()
m = re.search(r"per scenario \(warm median\).*? torch ([0-9.e+-]+) ms", small)
torch_small = float(m.group(1)) if m else float("nan")
native_large, native_large_tl = ms("BM_NativeLargeStepCuda/0/"), ms("BM_NativeLargeStepCuda/1/")
torch_large, torch_large_ws = torch_ms("torch-large.log"), torch_ms("torch-large-default-ws.log")
w1, p4 = ms("BM_World1StandardSmallCase/1/"), ms("BM_RankProcessesStandardSmallCase/1/")
lines = [
    "# Performance on the GPU machine",
    "",
    f"Written by `ci/bench-gpu.sh` on {datetime.date.today()}; one run, ratios side by side in it.",
    "",
    "| figure | target | measured |",
    "|---|---|---|",
    f"| large model step (8 gated MoE blocks, dim 4096, bf16, full AC, world 1): native over torch FSDP2, "
    f"both with CUBLASLT_WORKSPACE_SIZE=0 | <= 1.05 | {native_large / torch_large:.3f} ({native_large:.1f} vs {torch_large:.1f} ms) |",
    f"| the same, native with its timeline (probe reads at every event) over without | <= 1.05 | "
    f"{native_large_tl / native_large:.3f} ({native_large_tl:.1f} ms) |",
    f"| torch FSDP2's large step with its default cuBLASLt workspace over workspace 0 | — | "
    f"{torch_large_ws / torch_large:.3f} ({torch_large_ws:.1f} ms) |",
    f"| standard small scenario at world 1, one case: torch backend's warm worker over native CUDA | — | "
    f"{torch_small / w1:.1f} ({torch_small:.1f} vs {w1:.1f} ms) |",
    f"| standard small scenario at world 4, one case, 4 CUDA rank processes on one GPU | — | {p4:.0f} ms |",
]
open(f"{out}/performance-gpu.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
