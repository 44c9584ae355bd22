// Time to find and shrink the seed leak under torch-2.9 from random generation (campaign seeds
// 1-5, one run each): manual time = campaign start to the written reproducer; counters: cases run
// before the finding and scenario executions shrinking took.
#include "fuzz/campaign/campaign.h"
#include "harness/files/temp_dir.h"

#include "bench/steady_rows.h"

#include <benchmark/benchmark.h>

#include <sstream>

namespace shardfuzz::bench {
namespace {

void BM_SeedLeakFindAndShrink(benchmark::State& state) {
  const harness::TempDir out("shardfuzz-bench-seed-leak");
  for (auto _ : state) {
    fuzz::CampaignOptions options;
    options.gen.profile = "torch-2.9";
    options.seed = static_cast<uint64_t>(state.range(0));
    options.seconds = 120;
    options.out_dir = out.path();
    std::ostringstream log;
    const fuzz::CampaignResult result = fuzz::run_campaign(options, log);
    if (result.findings.empty()) {
      state.SkipWithError("no finding within 120 s");
      break;
    }
    const fuzz::Finding& f = result.findings.front();
    state.SetIterationTime(f.seconds_to_shrink);
    state.counters["cases"] = result.cases_run;
    state.counters["find_s"] = f.seconds_to_find;
    state.counters["shrink_runs"] = f.shrink.steps_tried;
  }
}
BENCHMARK(BM_SeedLeakFindAndShrink)->DenseRange(1, 5)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace shardfuzz::bench
