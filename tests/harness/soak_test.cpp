// Soak: a scenario run for many steps keeps every rank's step-end allocator bytes equal and the
// resident set flat; a per-step allocator drift or resident-set growth fails naming rank, step and
// bytes; too short a run is skipped.
#include "harness/soak/soak.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"

#include <gtest/gtest.h>

namespace shardfuzz::harness {
namespace {

Scenario soaked(int steps) {
  Scenario sc = nested_experts_scenario(2, true, 2, "torch-2.11", 1);
  sc.dims.dim = 8;
  sc.dims.hidden = 8;
  sc.dims.tokens = 4;
  sc.steps = steps;
  return sc;
}

RunRecord synthetic(int steps, int64_t rss_growth_per_step, int drift_at_step = -1) {
  RunRecord run;
  run.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    run.ranks[r].rank = r;
    for (int s = 0; s < steps; ++s)
      run.ranks[r].step_end_bytes.push_back(s == 0 ? 500 : 1000 + (r == 1 && drift_at_step >= 0 && s >= drift_at_step ? 64 : 0));
  }
  for (int s = 0; s < steps; ++s) run.host_rss_bytes.push_back((int64_t{200} << 20) + s * rss_growth_per_step);
  return run;
}

TEST(Soak, ManyStepsOfTheSeedScenarioStayFlat) {
  const Scenario sc = soaked(40);
  RunOptions lean;
  lean.record_timeline = false;
  const RunRecord run = run_threads(sc, lean);
  ASSERT_TRUE(run.ok()) << run.error;
  ASSERT_EQ(run.host_rss_bytes.size(), 40u);
  const SoakReport r = check_soak(sc, run);
  EXPECT_TRUE(r.ok && !r.skipped) << r.message;
  EXPECT_NE(r.message.find("allocator bytes at every step end from step 2 to 40 equal on every rank"), std::string::npos)
      << r.message;
  EXPECT_EQ(r.warmup_steps, 4);
}

TEST(Soak, AnAllocatorDriftFailsNamingRankStepAndBytes) {
  const SoakReport r = check_soak(soaked(30), synthetic(30, 0, 12));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.message,
            "rank 1: allocator bytes at the end of step 13 are 1064, at the end of step 2 1000 (+64 B); memory does not "
            "stay flat");
}

TEST(Soak, AGrowingResidentSetFails) {
  EXPECT_TRUE(check_soak(soaked(30), synthetic(30, 4096)).ok);  // 108 KiB over 27 steps: within 4 MiB
  const SoakReport r = check_soak(soaked(30), synthetic(30, 1 << 20));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("resident set 202.00 MiB at step 3, 229.00 MiB at step 30 (+27.00 MiB, tolerance 4.00 MiB): "
                           "the resident set grows"),
            std::string::npos)
      << r.message;
}

TEST(Soak, TooFewStepsAreSkipped) { EXPECT_TRUE(check_soak(soaked(5), synthetic(5, 0)).skipped); }

}  // namespace
}  // namespace shardfuzz::harness
