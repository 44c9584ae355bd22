// The production-OOM path's cost (docs/production-oom.md): Qwen3-235B-A22B's published config and
// the report's torchtitan recipe (16 ranks, EP 8, full AC) read, planned, run as its 94-layer,
// world-16 scenario and projected — what `shardfuzz import --project` does, per profile: at the
// real widths as a shape-only run on the meta device (the default), and at small widths.
#include "harness/backends/threads/threads_backend.h"
#include "harness/import/hf_config.h"
#include "harness/import/projection.h"
#include "harness/import/torchtitan_job.h"

#include "bench/steady_rows.h"

#include <benchmark/benchmark.h>

namespace shardfuzz::bench {
namespace {

void BM_ImportProjectionQwen3_235B(benchmark::State& state, const char* profile, harness::import::Widths widths) {
  namespace imp = harness::import;
  for (auto _ : state) {
    const imp::ModelShape m = imp::read_hf_config(SHARDFUZZ_SOURCE_DIR "/tests/data/hf/qwen3-235b-a22b.json");
    const imp::TorchtitanJob job = imp::read_torchtitan_job(SHARDFUZZ_SOURCE_DIR "/tests/data/torchtitan/qwen3-235b-16-ranks-ep8.toml");
    const imp::FsdpPlan plan = imp::plan_fsdp(m, job.recipe);
    const imp::ImportedScenario imported = imp::imported_scenario(m, job.recipe, plan, profile, widths);
    const harness::RunRecord run = harness::run_threads(imported.scenario);
    const imp::Projection p = imp::project(run, imported, plan, m, job.recipe, int64_t{80} << 30);
    benchmark::DoNotOptimize(p.layers.data());
  }
}
using harness::import::Widths;
BENCHMARK_CAPTURE(BM_ImportProjectionQwen3_235B, shape_only_torch_2_9, "torch-2.9", Widths::Real)
    ->Unit(benchmark::kMillisecond)->Apply(steady);
BENCHMARK_CAPTURE(BM_ImportProjectionQwen3_235B, shape_only_torch_2_11, "torch-2.11", Widths::Real)
    ->Unit(benchmark::kMillisecond)->Apply(steady);
BENCHMARK_CAPTURE(BM_ImportProjectionQwen3_235B, small_widths_torch_2_9, "torch-2.9", Widths::Small)
    ->Unit(benchmark::kMillisecond)->Apply(steady);

}  // namespace
}  // namespace shardfuzz::bench
