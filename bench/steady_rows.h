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

namespace shardfuzz::bench {

inline constexpr double kWarmUpSeconds = 1.0;
inline constexpr double kMinSeconds = 3.0;

inline void steady(benchmark::internal::Benchmark* b) { b->MinWarmUpTime(kWarmUpSeconds)->MinTime(kMinSeconds); }

}  // namespace shardfuzz::bench
