// ThreadWorld all-gather and reduce-scatter throughput at 1 MiB and 64 MiB per rank (world 4),
// against memcpy on the same machine: the limit a shared-memory collective can approach. Bytes
// processed = what the collective writes in all (world x one rank's output: every rank must get its
// own copy), so bytes/s over memcpy's is the copying's efficiency. A W-th of it is one rank's output
// over the time (NCCL's algorithm bandwidth), which on C cores with W rank threads cannot pass C/W
// of memcpy's even for a perfect implementation (ci/bench.sh prints both).
#include "runtime/comm/thread_world.h"

#include <ATen/ATen.h>
#include "bench/steady_rows.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace shardfuzz::bench {
namespace {

constexpr int kWorld = 4;

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<char> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// One iteration = one world run: every rank allocates its tensors and touches them (a fresh 64 MiB
// buffer's first-touch page faults, serialised on the process's memory map across rank threads,
// cost more than the copy: measured 0.01 of memcpy untouched), all meet in a barrier, then rank 0
// times one collective (manual time: thread start and allocation are not the collective).
template <class F>
void run_world(benchmark::State& state, F collective) {
  comm::ThreadWorld world({kWorld, std::chrono::milliseconds(60000)});
  for (auto _ : state) {
    double seconds = 0;
    world.run([&](std::shared_ptr<comm::Communicator> c) {
      const double s = collective(*c, state.range(0) / 4);
      if (c->rank() == 0) seconds = s;
    });
    state.SetIterationTime(seconds);
  }
  // range(0) bytes is one rank's output (all-gather) or input (reduce-scatter, which writes a
  // quarter of it per rank but reads it all: the same bytes pass through the reduction).
  state.SetBytesProcessed(state.iterations() * state.range(0) * kWorld);
}

template <class Op>
double timed(comm::Communicator& c, Op op) {
  c.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  op();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// all-gather: each rank contributes 1/world of the bytes and receives all of them.
void BM_AllGather(benchmark::State& state) {
  run_world(state, [](comm::Communicator& c, int64_t floats) {
    at::Tensor in = at::ones({floats / kWorld});
    at::Tensor out = at::zeros({floats});
    return timed(c, [&] { c.all_gather_into_tensor(out, in); });
  });
}

// reduce-scatter: each rank contributes all the bytes and receives the sum of its 1/world.
void BM_ReduceScatter(benchmark::State& state) {
  run_world(state, [](comm::Communicator& c, int64_t floats) {
    at::Tensor in = at::ones({floats});
    at::Tensor out = at::zeros({floats / kWorld});
    return timed(c, [&] { c.reduce_scatter_tensor(out, in, comm::ReduceOp::Sum); });
  });
}

BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime()->Apply(steady);
BENCHMARK(BM_AllGather)->Arg(1 << 20)->Arg(64 << 20)->UseManualTime()->Apply(steady);
BENCHMARK(BM_ReduceScatter)->Arg(1 << 20)->Arg(64 << 20)->UseManualTime()->Apply(steady);

}  // namespace
}  // namespace shardfuzz::bench
