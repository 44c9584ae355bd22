#!/usr/bin/env bash
# Runs the benchmarks (bench/, Google Benchmark) at full size and writes docs/performance.md: one
# row per figure with its target and the measured value, ratios taken side by side in one run.
# Usage: ci/bench.sh [OUT_JSON (default build/bench.json)]
# shellcheck source=ci/common.sh
source "$(dirname "$0")/common.sh"

OUT_JSON="${1:-$REPO/build/bench.json}"
"$REPO/ci/build.sh" shardfuzz_bench
log "benchmarks (a few minutes: the seed-leak rows run a campaign per seed)"
# The isolated row first, in a process of its own: a campaign forks its worker before it runs
# anything, and a worker forked after the other rows would run on their freed heap
# (bench/scenario_throughput_bench.cpp). Then every other row; the two outputs are one table.
# The row on every core forks its workers in a process of its own too.
OPENBLAS_NUM_THREADS=1 "$REPO/build/shardfuzz_bench" --benchmark_repetitions=1 --benchmark_format=console \
  --benchmark_filter='Isolated/' --benchmark_out="$OUT_JSON.isolated" --benchmark_out_format=json
OPENBLAS_NUM_THREADS=1 "$REPO/build/shardfuzz_bench" --benchmark_repetitions=1 --benchmark_format=console \
  --benchmark_filter='IsolatedOnEveryCore' --benchmark_out="$OUT_JSON.every-core" --benchmark_out_format=json
OPENBLAS_NUM_THREADS=1 "$REPO/build/shardfuzz_bench" --benchmark_repetitions=1 --benchmark_format=console \
  --benchmark_filter='-Isolated' --benchmark_out="$OUT_JSON" --benchmark_out_format=json
python3 - "$OUT_JSON" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
parts = [json.load(open(sys.argv[1] + part))["benchmarks"] for part in (".isolated", ".every-core")]
doc["benchmarks"] = [b for part in parts for b in part] + doc["benchmarks"]
json.dump(doc, open(sys.argv[1], "w"), indent=1)
PY
rm -f "$OUT_JSON.isolated" "$OUT_JSON.every-core"
python3 - "$OUT_JSON" "$REPO/docs/performance.md" <<'PY'
import json, statistics, sys, datetime
doc = json.load(open(sys.argv[1]))
import re
# Rows are named without the warm-up and minimum time every row carries (bench/steady_rows.h).
rows = {re.sub(r"/min_(warmup_)?time:[0-9.]+", "", b["name"]): b for b in doc["benchmarks"]
        if b.get("run_type", "iteration") == "iteration" and not b.get("error_occurred")}
def rate(name): return rows[name]["items_per_second"] if name in rows else float("nan")
def bps(name): return rows[name]["bytes_per_second"] if name in rows else float("nan")
seeds = [rows[n] for n in rows if n.startswith("BM_SeedLeakFindAndShrink/")]
def med(key, scale=1.0):
    vals = [b[key] * scale for b in seeds if key in b]
    return statistics.median(vals) if vals else float("nan")
shrink_s = med("real_time")  # manual time, unit s
def timeline_ratio(key):  # the run with the timeline over the run without it, paired iteration by iteration
    return rows.get("BM_StandardSmallRunTimelinePaired/real_time", {}).get(key, float("nan"))
EVERY_CORE = "BM_StandardSmallCaseIsolatedOnEveryCore/real_time"
ctx = doc["context"]
lines = [
    "# Performance",
    "",
    f"Written by `ci/bench.sh` on {datetime.date.today()} ({ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, "
    f"library build `{ctx.get('library_build_type')}`). Figures are from one run; ratios are side by side in it.",
    "",
    "| figure | target | measured |",
    "|---|---|---|",
    f"| standard small scenario, world 4, threads backend: run only | — | {rate('BM_StandardSmallRun/real_time'):.1f} scenarios/s |",
    f"| the same with every property checked (one fuzz case: a new scenario each time, its reference trained), with per-case isolation (the campaign's persistent worker child) | >= 25/s (road to 50/s below) | {rate('BM_StandardSmallCaseIsolated/real_time'):.1f} scenarios/s |",
    f"| the same as a campaign runs it on these cores by default (`--jobs`: one isolated worker per core, "
    f"a case on each at once) | — | {rate(EVERY_CORE):.1f} scenarios/s "
    f"({rows.get(EVERY_CORE, {}).get('workers', float('nan')):.0f} workers) |",
    f"| the same in-process, without isolation: with / without | — | {rate('BM_StandardSmallCase/real_time'):.1f} scenarios/s; isolation costs "
    f"{rows['BM_StandardSmallCaseIsolated/real_time']['real_time'] / rows['BM_StandardSmallCase/real_time']['real_time']:.2f}x |",
    f"| probe and timeline: run time with / without the timeline, the two runs side by side in each iteration "
    f"(and the CPU the process took over each) | <= 1.05 | "
    f"{timeline_ratio('ratio'):.3f} (CPU: {timeline_ratio('cpu_ratio'):.3f}) |",
    f"| seed leak under torch-2.9: find + shrink, median of seeds 1-5 | < 10 s | {shrink_s:.2f} s (find {med('find_s'):.2f} s, {med('cases'):.0f} cases; {med('shrink_runs'):.0f} shrink runs) |",
]
for size, label in ((1 << 20, "1 MiB"), (64 << 20, "64 MiB")):
    m = bps(f"BM_Memcpy/{size}/real_time")
    for op in ("AllGather", "ReduceScatter"):
        b = bps(f"BM_{op}/{size}/manual_time")  # the bytes all four ranks' copies of the result take
        target = ">= 0.5" if size == 64 << 20 else "—"
        lines.append(f"| ThreadWorld {op}, world 4, {label} per rank: bytes the collective moves (4 x one rank's) per s "
                     f"over memcpy's | {target} | {b / m:.2f} ({b / 2**30:.2f} vs {m / 2**30:.2f} GiB/s; one rank's "
                     f"output alone, NCCL's algbw: {b / 4 / 2**30:.2f} GiB/s, {b / 4 / m:.2f} of memcpy, at most "
                     f"{ctx.get('num_cpus')}/4 on these cores) |")
def ms(name):
    b = next((b for n, b in rows.items() if n.startswith(name) or n == name.rstrip("/")), None)
    return b["real_time"] if b else float("nan")
for arg, label, target in (("0", "small model (4 gated MoE blocks, dim 64)", "—"),
                           ("1", "medium model (8 blocks, dim 512)", "<= 1.3")):
    native, plain = ms(f"BM_NativeStepWorld1/{arg}/"), ms(f"BM_PlainLibTorchStep/{arg}/")
    lines.append(f"| native step at world 1 over plain LibTorch forward/backward/SGD, {label}, no AC, one intra-op thread | "
                 f"{target} | {native / plain:.2f} ({native:.1f} vs {plain:.1f} ms) |")
lines.append(f"| standard small scenario at world 1, one case, threads backend on the CPU | — | "
             f"{rate('BM_World1StandardSmallCase/0/real_time'):.1f} scenarios/s |")
threads4, procs4 = ms("BM_StandardSmallCase/"), ms("BM_RankProcessesStandardSmallCase/0/")
lines.append(f"| standard small scenario at world 4, one case, through rank processes (--backend process, CPU) over "
             f"ranks as threads | — | {procs4 / threads4:.2f} ({procs4:.0f} vs {threads4:.0f} ms) |")
for arg, label in (("1", "GPU"),):
    w1, p4 = ms(f"BM_World1StandardSmallCase/{arg}/"), ms(f"BM_RankProcessesStandardSmallCase/{arg}/")
    if w1 == w1:  # measured: this host has a GPU
        lines.append(f"| standard small, one case on the {label}: world 1 (threads) / world 4 (rank processes) | — | "
                     f"{w1:.1f} ms / {p4:.0f} ms |")
p29, p211 = ms("BM_ImportProjectionQwen3_235B/shape_only_torch_2_9/"), ms("BM_ImportProjectionQwen3_235B/shape_only_torch_2_11/")
small = ms("BM_ImportProjectionQwen3_235B/small_widths_torch_2_9/")
lines.append(f"| Qwen3-235B-A22B projection (`import --project`: config and recipe read, 94 layers at world 16 with EP 8 run "
             f"shape-only at the real widths, 16 rank threads, and priced): torch-2.9 / torch-2.11; at small widths (torch-2.9) "
             f"| < 60 s | {p29 / 1000:.1f} s / {p211 / 1000:.1f} s; {small / 1000:.1f} s |")
lines += [
    "",
    "GPU rows: `ci/bench-gpu.sh OUT` on the GPU machine writes them side by side in one run (the",
    "large model's step natively and on torch FSDP2, the world-1 case against the torch backend's",
    "warm worker); the H200's are in docs/performance-gpu.md, what they mean in docs/gpu-path.md, the",
    "torch side's per-scenario times in docs/torch-backend.md. The counting allocator itself cannot be",
    "switched off, so the probe row measures the timeline's snapshots. The figures are on OpenBLAS's",
    "pthread build (what ci/install-deps.sh installs since 2026-12-03; one BLAS thread per call), 3-4x",
    "the reference BLAS on matmul-heavy rows (docs/runtime.md, The BLAS behind the rank threads).",
]
# The table and its notes go between the markers; the hand-written analysis around them stays.
begin, end = "<!-- ci/bench.sh writes from here -->", "<!-- ci/bench.sh writes up to here -->"
import os
text = open(sys.argv[2]).read() if os.path.exists(sys.argv[2]) else ""
body = "\n".join(lines[2:])  # without the title
if begin in text and end in text:
    text = text[:text.index(begin) + len(begin)] + "\n" + body + "\n" + text[text.index(end):]
else:
    text = "# Performance\n\n" + begin + "\n" + body + "\n" + end + "\n"
open(sys.argv[2], "w").write(text)
print("\n".join(lines))
PY
