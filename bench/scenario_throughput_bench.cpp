// Fuzz throughput: the standard small scenario (4 gated MoE blocks, dim 64, 4 experts, hidden 128,
// nested experts, non-reentrant AC, wrapped head, 32 tokens, world 4, 2 SGD steps) on the threads
// backend — the run alone, and the run plus every property (what one fuzz case costs).
#include "fuzz/campaign/case_pool.h"
#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/jobs.h"
#include "harness/backends/process/process_backend.h"
#include "harness/properties/property.h"
#include "harness/reference/reference.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"
#include "runtime/memory/device_memory.h"

#include "bench/steady_rows.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

namespace shardfuzz::bench {
namespace {

void BM_StandardSmallRun(benchmark::State& state) {
  const harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  const ProcessCpu cpu;
  for (auto _ : state) {
    harness::RunRecord run = harness::run_threads(sc);
    benchmark::DoNotOptimize(run);
    if (!run.ok()) state.SkipWithError(run.error.c_str());
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations());  // items/s = scenarios per second
}
BENCHMARK(BM_StandardSmallRun)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// What the probe and timeline cost (each event's allocator read, ledger totals and group scan),
// measured paired: each iteration is the run with and without the timeline, one after the other
// (the order swapped every iteration), so a shared machine's drift falls on both halves alike (two
// rows run seconds apart gave ratios from 0.91 to 1.11 on this project's 2-core machine). Counters: the ratio of
// the summed wall times (`ratio`) and of the process's CPU over each half (`cpu_ratio`).
void BM_StandardSmallRunTimelinePaired(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  const harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  harness::RunOptions without;
  without.record_timeline = false;
  double wall[2] = {0, 0}, cpu[2] = {0, 0};  // [0]: with the timeline, [1]: without
  const auto timed = [&](int half) {
    const auto cpu0 = harness::process_usage();
    const auto t = Clock::now();
    harness::RunRecord run = harness::run_threads(sc, half == 0 ? harness::RunOptions{} : without);
    wall[half] += std::chrono::duration<double>(Clock::now() - t).count();
    const auto cpu1 = harness::process_usage();
    if (cpu0 && cpu1) cpu[half] += cpu1->cpu_seconds - cpu0->cpu_seconds;
    if (!run.ok()) state.SkipWithError(run.error.c_str());
  };
  int64_t i = 0;
  for (auto _ : state) {
    const int first = static_cast<int>(i++ % 2);
    timed(first);
    timed(1 - first);
  }
  state.counters["ratio"] = wall[0] / wall[1];
  state.counters["cpu_ratio"] = cpu[1] > 0 ? cpu[0] / cpu[1] : 0.0;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StandardSmallRunTimelinePaired)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// A fuzz case is a scenario never run before: each iteration draws new weights and batches (the
// scenario's seed), so the unsharded reference is trained in every case as a campaign's are.
void BM_StandardSmallCase(benchmark::State& state) {
  harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  const ProcessCpu cpu;
  for (auto _ : state) {
    ++sc.seed;
    const harness::RunRecord run = harness::run_threads(sc);
    auto verdicts = harness::check_properties(sc, run);
    benchmark::DoNotOptimize(verdicts);
    if (harness::first_failure(verdicts)) state.SkipWithError("a property failed");
  }
  cpu.report(state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StandardSmallCase)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// The same case as a campaign runs it with per-case isolation (the default): in the persistent
// worker child (fuzz/campaign/case_runner.h), the scenario and its verdict crossing the pipe each way.
// Side by side with BM_StandardSmallCase in one run: the isolation's cost. One worker serves every
// call Google Benchmark makes of this row (its warm-up, then growing iteration counts), as one
// worker serves a campaign's thousands of cases: the timed cases are a warm worker's. A campaign
// forks its worker before it runs anything (fuzz/campaign/case_pool.h), so the worker's heap is not the
// parent's: ci/bench.sh and ci/speed-gpu.sh run this row first, in a process of its own (forked
// after other rows, the worker would copy-on-write its way through their freed heap: 781 faults
// and 106 ms of CPU a case against 32 and 84 in-process, 2026-12-06).
void BM_StandardSmallCaseIsolated(benchmark::State& state) {
  static harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  static fuzz::CaseRunner runner(harness::threads_backend(), harness::isolation::Limits{});
  try {
    if (runner.worker_pid() == 0) runner.check(sc);  // starts the worker; its fork and first case untimed
  } catch (const std::logic_error& e) {
    // Isolation forks only a single-threaded process: torch 2.x keeps threads after the in-process
    // rows ran, so there this row runs alone (--benchmark_filter=Isolated, as ci/speed-gpu.sh does).
    return state.SkipWithError(e.what());
  }
  const int starts = runner.workers_started();
  const ProcessCpu worker(runner.worker_pid());
  for (auto _ : state) {
    ++sc.seed;  // a new case, its reference trained in the worker
    const fuzz::CaseCheck check = runner.check(sc);
    if (check.property) state.SkipWithError(check.message.c_str());
  }
  worker.report(state, "worker_");  // the warm worker's CPU and page faults per case, as a campaign's
  state.counters["workers_started"] = runner.workers_started() - starts;  // 0 unless one died
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StandardSmallCaseIsolated)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// The same cases as a campaign runs them on these cores by default (`fuzz --jobs`: one isolated
// worker per core): each iteration is one case on every worker at once, each its own seed, so
// items/s is the cases/s the cores give a campaign of standard small cases, and the wall time is
// one case's latency with the cores shared. Run, like the row above, in a process of its own.
void BM_StandardSmallCaseIsolatedOnEveryCore(benchmark::State& state) {
  static harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  static fuzz::CaseRunner first(harness::threads_backend(), harness::isolation::Limits{});
  static fuzz::CasePool pool(first, harness::threads_backend(), harness::isolation::Limits{}, fuzz::available_cores());
  std::vector<harness::Scenario> cases(static_cast<std::size_t>(pool.width()), sc);
  std::vector<const harness::Scenario*> batch;
  for (const auto& c : cases) batch.push_back(&c);
  const auto check = [](fuzz::CaseRunner& runner, const harness::Scenario& s) -> std::optional<std::string> {
    const fuzz::CaseCheck c = runner.check(s);
    return c.property ? std::optional<std::string>(c.message) : std::nullopt;
  };
  const auto next_cases = [&] {
    for (auto& c : cases) c.seed = ++sc.seed;  // new cases, their references trained in the workers
  };
  try {
    next_cases();
    pool.run(batch, check);  // starts the workers; their forks and first cases untimed
  } catch (const std::logic_error& e) {
    return state.SkipWithError(e.what());  // as above: isolation forks only a single-threaded process
  }
  for (auto _ : state) {
    next_cases();
    for (const auto& failed : pool.run(batch, check))
      if (failed) state.SkipWithError(failed->c_str());
  }
  state.counters["workers"] = pool.width();
  state.SetItemsProcessed(state.iterations() * pool.width());
}
BENCHMARK(BM_StandardSmallCaseIsolatedOnEveryCore)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// Where a standard small case's time goes: the run, then each property, in milliseconds per case
// (counters ms_<property>; the profile behind the throughput row of docs/performance.md).
void BM_StandardSmallCaseBreakdown(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  harness::RunOptions without_reference;
  without_reference.reference = false;
  std::map<std::string, double> seconds;
  for (auto _ : state) {
    ++sc.seed;  // a new case: its reference is trained, as a campaign's are
    auto t = Clock::now();
    harness::RunRecord run = harness::run_threads(sc, without_reference);
    seconds["run"] += std::chrono::duration<double>(Clock::now() - t).count();
    t = Clock::now();
    harness::attach_reference(sc, run);
    seconds["reference"] += std::chrono::duration<double>(Clock::now() - t).count();
    for (const harness::Property& p : harness::all_properties()) {
      t = Clock::now();
      benchmark::DoNotOptimize(p.check(sc, run));
      seconds[p.name] += std::chrono::duration<double>(Clock::now() - t).count();
    }
  }
  for (const auto& [name, s] : seconds)
    state.counters["ms_" + name] = 1e3 * s / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StandardSmallCaseBreakdown)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// One case (run and every property) of the standard small scenario at world 1 on the threads
// backend, on the CPU (arg 0) or the GPU (arg 1; ranks as threads share no CUDA device, so world 1):
// the native side of "native CUDA per-scenario time against the torch backend's warm worker".
void BM_World1StandardSmallCase(benchmark::State& state) {
  harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  sc.world_size = 1;
  harness::RunOptions options;
  options.device = state.range(0) ? "cuda" : "cpu";
  if (state.range(0) && !memory::cuda_device_available()) return state.SkipWithError("no CUDA device");
  int64_t failing = 0;  // a failed property is timed like a pass (it is a case all the same), and counted
  for (auto _ : state) {
    const harness::RunRecord run = harness::run_threads(sc, options);
    auto verdicts = harness::check_properties(sc, run);
    benchmark::DoNotOptimize(verdicts);
    failing += harness::first_failure(verdicts) != nullptr;
  }
  state.counters["failing_cases"] = static_cast<double>(failing);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_World1StandardSmallCase)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

// The world-4 case through rank processes (--backend process), on the CPU (arg 0) or with all
// four ranks on one GPU (arg 1); the pool is warm after the first iteration.
void BM_RankProcessesStandardSmallCase(benchmark::State& state) {
  const harness::Scenario sc = harness::standard_small_scenario("torch-2.11");
  harness::process::ProcessOptions options;
  options.worker = SHARDFUZZ_BINARY;
  options.run.device = state.range(0) ? "cuda" : "cpu";
  if (state.range(0) && !memory::cuda_device_available()) return state.SkipWithError("no CUDA device");
  auto backend = harness::process::make_process_backend(options);
  backend->run(sc);  // starts the pool
  for (auto _ : state) {
    const harness::RunRecord run = backend->run(sc);
    auto verdicts = harness::check_properties(sc, run);
    benchmark::DoNotOptimize(verdicts);
    if (harness::first_failure(verdicts)) state.SkipWithError(harness::first_failure(verdicts)->message.c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RankProcessesStandardSmallCase)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(steady);

}  // namespace
}  // namespace shardfuzz::bench
