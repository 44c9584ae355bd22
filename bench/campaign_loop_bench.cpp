// The campaign loop's own throughput: a strict campaign of generated cases end to end (draw, the
// isolated worker's check, triage, the state saved after every case, the progress line, the
// findings database), one job: cases per second. What the loop adds to a case is the difference
// from BM_StandardSmallCaseIsolated's per-case time on drawn (not the standard) scenarios; the
// issue-44 redesign was held to this row, before and after, on the same machine
// (ci/campaign-throughput.sh compares two shardfuzz binaries the same way).
#include "fuzz/campaign/campaign.h"
#include "harness/files/temp_dir.h"

#include "bench/steady_rows.h"

#include <benchmark/benchmark.h>

#include <sstream>

namespace shardfuzz::bench {
namespace {

void BM_CampaignLoopIsolated(benchmark::State& state) {
  const int cases = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const harness::TempDir out("shardfuzz-bench-loop");
    fuzz::CampaignOptions options;
    options.gen.profile = "strict";
    options.seed = 1;
    options.cases = cases;
    options.keep_going = true;
    options.out_dir = out.path();
    std::ostringstream log;
    const fuzz::CampaignResult result = fuzz::run_campaign(options, log);
    state.counters["cases"] = result.cases_run;
    state.counters["findings"] = static_cast<double>(result.findings.size());
    state.SetIterationTime(result.elapsed_seconds);
  }
  state.SetItemsProcessed(state.iterations() * cases);  // items/s = cases per second
}
BENCHMARK(BM_CampaignLoopIsolated)->Arg(60)->Iterations(3)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace shardfuzz::bench
