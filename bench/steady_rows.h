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

#include <benchmark/benchmark.h>

#include <sys/resource.h>

namespace shardfuzz::bench {

inline constexpr double kWarmUpSeconds = 1.0;
inline constexpr double kMinSeconds = 3.0;

inline void steady(benchmark::internal::Benchmark* b) { b->MinWarmUpTime(kWarmUpSeconds)->MinTime(kMinSeconds); }

// The CPU a row's iterations took, every thread counted (the rank threads and the reference's, not
// only the timing thread's that Google Benchmark's CPU column shows), as a counter per iteration: a
// steadier figure than the wall time on a noisy machine, and with the wall time it says how many
// cores an iteration kept busy. Construct it just before the timed loop. `children`: the CPU of
// this process's children that have ended and been reaped since (an isolated row's worker), read
// after the worker is gone.
class ProcessCpu {
 public:
  explicit ProcessCpu(bool children = false) : who_(children ? RUSAGE_CHILDREN : RUSAGE_SELF), start_(seconds()) {}
  void report(benchmark::State& state, const char* counter = "cpu_ms") const {
    if (state.iterations() > 0)
      state.counters[counter] = 1e3 * (seconds() - start_) / static_cast<double>(state.iterations());
  }

 private:
  double seconds() const {
    rusage u{};
    ::getrusage(who_, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  int who_;
  double start_;
};

}  // namespace shardfuzz::bench
