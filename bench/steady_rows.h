// How every row of shardfuzz_bench is measured: a warm-up first (the first iterations of a row pay
// for LibTorch's lazy initialisation, a CUDA context, cuBLAS handles and a cold heap: on a fresh GPU
// machine one cold iteration of BM_World1StandardSmallCase took 689 ms against 40.9 ms warm, and
// Google Benchmark reported that single iteration because it passed the default minimum time),
// then iterations repeated to a minimum time, so no row rests on one iteration.
//   BENCHMARK(BM_X)->Apply(steady)
// The one exception: BM_SeedLeakFindAndShrink's rows are one whole campaign each (a seed per row,
// Iterations(1), which Google Benchmark does not combine with a warm-up); ci/bench.sh reports their
// median over the seeds, so the first row's cold start does not set the figure.
#pragma once

#include "harness/subprocess/process_usage.h"

#include <benchmark/benchmark.h>

#include <optional>
#include <string>

namespace shardfuzz::bench {

inline constexpr double kWarmUpSeconds = 1.0;
inline constexpr double kMinSeconds = 3.0;

inline void steady(benchmark::internal::Benchmark* b) { b->MinWarmUpTime(kWarmUpSeconds)->MinTime(kMinSeconds); }

// The CPU and minor page faults a row's iterations took, per iteration, every thread counted (the
// rank threads and the reference's, not only the timing thread's that Google Benchmark's CPU
// column shows): a steadier figure than the wall time on a noisy machine, and with the wall time
// it says how many cores an iteration kept busy. `pid`: another process, read while it runs (an
// isolated row's warm worker: its start-up and first case are then not counted); 0: this one.
// Construct it just before the timed loop, report just after it; it reports nothing when the
// process could not be read at either end.
class ProcessCpu {
 public:
  explicit ProcessCpu(pid_t pid = 0) : pid_(pid), start_(harness::process_usage(pid)) {}
  void report(benchmark::State& state, const std::string& prefix = "") const {
    const auto end = harness::process_usage(pid_);
    if (state.iterations() == 0 || !start_ || !end) return;
    const auto n = static_cast<double>(state.iterations());
    state.counters[prefix + "cpu_ms"] = 1e3 * (end->cpu_seconds - start_->cpu_seconds) / n;
    state.counters[prefix + "faults"] = static_cast<double>(end->minor_faults - start_->minor_faults) / n;
  }

 private:
  pid_t pid_;
  std::optional<harness::ProcessUsage> start_;
};

}  // namespace shardfuzz::bench
