// The allocator and gradient faults end to end on the threads backend: an allocation failure is a
// real OOM (c10::OutOfMemoryError from the allocator) at the planned allocation or limit, named on
// every rank; a NaN or Inf written into a module's incoming gradient lets training go on and is
// reported first on its rank, at its step, before the reduce-scatter, in that module's group;
// both round-trip through JSON and reject bad fields by name.
#include "harness/properties/property.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"
#include "runtime/memory/counting_allocator.h"
#include "tests/harness/fault_test_support.h"

#include <gtest/gtest.h>

#include <tuple>

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>

namespace shardfuzz::harness {
namespace {

using namespace std::chrono_literals;
using namespace testing_support;


Scenario with_nonfinite(Scenario sc, const std::string& kind, int rank, const std::string& module, int step) {
  sc.faults.push_back(FaultSpec::module_fault(rank, *enum_from_name<ModuleFault::Kind>(kind), module, step));
  return sc;
}

TEST(AllocationFault, WithoutRecoveryThePlannedAllocationFailsAsARealOomNamedOnEveryRank) {
  const Scenario sc = with_oom(small(), 1, 40);
  const RunRecord run = run_threads(sc, without_recovery());
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error_kind, "out_of_memory") << run.error;
  EXPECT_NE(run.error.find("injected allocation failure on rank 1: allocation #40 of "), std::string::npos) << run.error;
  ASSERT_EQ(run.fired_faults.size(), 1u);
  EXPECT_EQ(run.fired_faults[0].group, "allocator");
  const auto verdicts = check_properties(sc, run);
  EXPECT_TRUE(verdict(verdicts, "liveness").ok) << verdict(verdicts, "liveness").message;
  const Verdict& d = verdict(verdicts, "faults_detected");
  EXPECT_TRUE(d.ok && !d.skipped) << d.message;
  EXPECT_NE(d.message.find("planned oom of rank 1 (allocation #40 of"), std::string::npos) << d.message;
}

TEST(AllocationFault, WithoutRecoveryALimitFailsTheFirstAllocationOverItAndIsDisarmedAfterTheRun) {
  const Scenario sc = with_oom(small(2), 0, -1, 256);
  const RunRecord run = run_threads(sc, without_recovery());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error.find("over the limit of 256"), std::string::npos) << run.error;
  // The counters outlive the run (a persistent worker runs the next case): nothing stays armed.
  const RunRecord clean = run_threads(small(2), short_deadline());
  EXPECT_TRUE(clean.ok()) << clean.error;
}

TEST(AllocationFault, AnAllocationPastTheRunsLastDoesNotFire) {
  const Scenario sc = with_oom(small(2), 1, 1 << 24);
  const RunRecord run = run_threads(sc, short_deadline());
  EXPECT_TRUE(run.ok()) << run.error;
  EXPECT_TRUE(run.fired_faults.empty());
}

class EachNonFinite : public ::testing::TestWithParam<const char*> {};

// A run of `ranks` ranks by hand with these nan faults fired (fault index, rank, module), no events yet.
RunRecord fired(int ranks, const std::vector<std::tuple<int, int, std::string>>& faults) {
  RunRecord run;
  for (const auto& [fault, rank, module] : faults) run.fired_faults.push_back({fault, rank, "nan", module, "backward", 0.1});
  run.ranks.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) run.ranks[static_cast<std::size_t>(r)].rank = r;
  return run;
}

memory::TimelineEvent nonfinite(const std::string& group, const std::string& param, const std::string& where) {
  memory::TimelineEvent e;
  e.event = memory::Event::NonfiniteGrad;
  e.group = group;
  e.detail = {{"param", param}, {"where", where}};
  return e;
}

TEST_P(EachNonFinite, TrainingGoesOnAndTheFirstReportIsOnItsRankStepAndModule) {
  Scenario sc = small();
  sc.steps = 2;
  sc = with_nonfinite(sc, GetParam(), 2, "layers.0.moe.experts", 1);
  const RunRecord run = run_threads(sc, short_deadline());
  ASSERT_TRUE(run.ok()) << run.error;
  ASSERT_EQ(run.fired_faults.size(), 1u);
  const auto verdicts = check_properties(sc, run);
  const Verdict& n = verdict(verdicts, "nonfinite_reported");
  EXPECT_TRUE(n.ok && !n.skipped) << n.message;
  EXPECT_NE(n.message.find("first reported on rank 2 at step 2 in group layers.0.moe.experts"), std::string::npos)
      << n.message;
  EXPECT_NE(n.message.find("before_reduce_scatter"), std::string::npos) << n.message;
  EXPECT_TRUE(verdict(verdicts, "parity_with_reference").skipped);
  // Step 1 was clean on every rank.
  for (const RankRecord& r : run.ranks)
    for (const auto& e : r.timeline)
      if (e.event == memory::Event::NonfiniteGrad) EXPECT_EQ(e.step, 1) << "rank " << r.rank;
}

INSTANTIATE_TEST_SUITE_P(Kinds, EachNonFinite, ::testing::Values("nan", "inf"));

TEST(NonFiniteFault, AReportOnTheWrongRankFailsTheProperty) {
  Scenario sc = with_nonfinite(small(2), "nan", 1, "layers.0", 0);
  RunRecord run;
  run.fired_faults.push_back({0, 1, "nan", "layers.0", "backward", 0.1});
  run.ranks.resize(2);
  run.ranks[0].rank = 0;
  run.ranks[1].rank = 1;
  memory::TimelineEvent e;
  e.event = memory::Event::NonfiniteGrad;
  e.group = "layers.0";
  e.step = 0;
  e.detail = {{"param", "layers.0.w"}, {"where", "before_reduce_scatter"}};
  run.ranks[0].timeline.push_back(e);
  Verdict v = check_nonfinite_reported(sc, run);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("first reported on rank 0 at step 1 in group layers.0 (layers.0.w, before_reduce_scatter), "
                           "a rank the fault was not planned on"),
            std::string::npos)
      << v.message;
  run.ranks[0].timeline.clear();
  v = check_nonfinite_reported(sc, run);
  EXPECT_TRUE(v.ok && v.skipped) << "no parameter went non-finite: it reached none; " << v.message;
  ShardRecord poisoned;
  poisoned.local = at::full({2}, std::numeric_limits<float>::quiet_NaN());
  run.ranks[1].shards.push_back(poisoned);
  v = check_nonfinite_reported(sc, run);
  EXPECT_NE(v.message.find("rank 1 reported no non-finite gradient, yet parameters ended non-finite"),
            std::string::npos)
      << v.message;
  run.ranks[1].timeline.push_back(e);
  EXPECT_TRUE(check_nonfinite_reported(sc, run).ok);
  e.step = 1;  // the next step: every rank's parameters carry it
  run.ranks[0].timeline.push_back(e);
  EXPECT_TRUE(check_nonfinite_reported(sc, run).ok) << check_nonfinite_reported(sc, run).message;
  run.ranks[0].timeline.clear();
  run.ranks[1].timeline[0].group = "out";
  v = check_nonfinite_reported(sc, run);
  EXPECT_NE(v.message.find("a group unrelated to layers.0"), std::string::npos) << v.message;
}

TEST(NonFiniteFault, EachFaultyRankAnswersForItsOwnAndUpstreamGroupsCount) {
  // Two ranks with their own NaN (found by the 1,000-case campaign: the second is no stray).
  Scenario sc = with_nonfinite(with_nonfinite(small(2), "nan", 0, "layers.0", 0), "nan", 1, "layers.0", 0);
  RunRecord run = fired(2, {{0, 0, "layers.0"}, {1, 1, "layers.0"}});
  memory::TimelineEvent e = nonfinite("root", "layers.0.mlp.fc1.weight", "before_reduce_scatter");
  for (int r = 0; r < 2; ++r) run.ranks[r].timeline.push_back(e);
  EXPECT_TRUE(check_nonfinite_reported(sc, run).ok) << check_nonfinite_reported(sc, run).message;
  // Rank 1's own fault a step later: at rank 0's step it hears of rank 0's through the reduce-scatter.
  Scenario later = with_nonfinite(with_nonfinite(small(2), "nan", 0, "layers.0", 0), "nan", 1, "layers.0", 0);
  later.steps = 2;
  std::get<ModuleFault>(later.faults[1].fault).step = 1;
  run.ranks[1].timeline[0].detail["where"] = "after_reduce_scatter";
  EXPECT_TRUE(check_nonfinite_reported(later, run).ok) << check_nonfinite_reported(later, run).message;
  run.ranks[1].timeline[0].detail["where"] = "before_reduce_scatter";
  EXPECT_FALSE(check_nonfinite_reported(later, run).ok);
  // The gradient into block 1 flows on into block 0 before block 1's own group (the root) reduces.
  Scenario two_blocks = nested_experts_scenario(2, true, 1, "strict", 1);
  two_blocks = with_nonfinite(two_blocks, "inf", 0, "layers.1", 0);
  RunRecord upstream;
  upstream.fired_faults.push_back({0, 0, "inf", "layers.1", "backward", 0.1});
  upstream.ranks.resize(1);
  e.group = "layers.0.moe.experts";
  upstream.ranks[0].timeline.push_back(e);
  EXPECT_TRUE(check_nonfinite_reported(two_blocks, upstream).ok) << check_nonfinite_reported(two_blocks, upstream).message;
  upstream.ranks[0].timeline[0].group = "out";  // the head is computed from block 1's output, not into it
  EXPECT_FALSE(check_nonfinite_reported(two_blocks, upstream).ok);
}

// Found by `fuzz --profile strict --faults --time 90s --seed 1` (issue 23): rank 1's NaN into
// layers.1 reaches rank 0 through the reduce-scatter of layers.1's experts before rank 0's own NaN
// into layers.0 is found in the root's group. Both plans account for rank 0's reports together.
TEST(NonFiniteFault, SeveralPlansAreJudgedTogether) {
  Scenario sc = nested_experts_scenario(2, true, 2, "strict", 1);
  sc = with_nonfinite(with_nonfinite(sc, "nan", 1, "layers.1", 0), "nan", 0, "layers.0", 0);
  const RunRecord run = run_threads(sc, short_deadline());
  ASSERT_TRUE(run.ok()) << run.error;
  ASSERT_EQ(run.fired_faults.size(), 2u);
  const Verdict v = check_nonfinite_reported(sc, run);
  EXPECT_TRUE(v.ok && !v.skipped) << v.message;

  // The same shape, by hand: rank 0 hears of rank 1's first, then finds its own.
  RunRecord by_hand = fired(2, {{0, 1, "layers.1"}, {1, 0, "layers.0"}});
  by_hand.ranks[0].timeline.push_back(nonfinite("layers.1.moe.experts", "layers.1.moe.experts.w1", "after_reduce_scatter"));
  by_hand.ranks[1].timeline.push_back(nonfinite("layers.1.moe.experts", "layers.1.moe.experts.w1", "before_reduce_scatter"));
  by_hand.ranks[0].timeline.push_back(nonfinite("root", "layers.0.attn.weight", "before_reduce_scatter"));
  EXPECT_TRUE(check_nonfinite_reported(sc, by_hand).ok) << check_nonfinite_reported(sc, by_hand).message;
  // What no plan accounts for still fails: rank 0's own NaN found in the head (downstream of layers.0) ...
  by_hand.ranks[0].timeline[1].group = "out";
  Verdict bad = check_nonfinite_reported(sc, by_hand);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.message.find("then reported on rank 0 at step 1 in group out"), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("a group unrelated to layers.0"), std::string::npos) << bad.message;
  // ... and its own found only a step late.
  by_hand.ranks[0].timeline.erase(by_hand.ranks[0].timeline.begin());
  by_hand.ranks[0].timeline[0].group = "root";
  by_hand.ranks[0].timeline[0].step = 1;
  bad = check_nonfinite_reported(sc, by_hand);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.message.find("planned nan in the gradient into layers.0 on rank 0 at step 1, but first reported on rank 0 at step 2"),
            std::string::npos)
      << bad.message;
}

TEST(FaultPlan, OomAndNonFiniteFaultsRoundTripAndNameBadFields) {
  Scenario sc = with_nonfinite(with_oom(small(), 1, -1, 4096), "inf", 0, "layers.0", 0);
  const Scenario back = scenario_from_json(to_json(sc));
  ASSERT_EQ(back.faults.size(), 2u);
  EXPECT_EQ(std::get<AllocationFault::AboveBytes>(back.faults[0].in_allocator()->trigger).limit, 4096);
  EXPECT_EQ(back.faults[1].in_module()->module, "layers.0");
  EXPECT_EQ(to_json(back), to_json(sc));
  expect_plan_rejected({{"kind", "oom"}}, "faults[0].allocation: an oom fault names either an allocation or limit_bytes");
  expect_plan_rejected({{"kind", "oom"}, {"allocation", 3}, {"limit_bytes", 64}}, "faults[0].allocation: an oom fault names either");
  expect_rejected(with_oom(small(), 0, -1), "faults[0].allocation: -1 outside");
  expect_rejected(with_nonfinite(small(), "nan", 0, "layers.9", 0), "faults[0].module: \"layers.9\": no such module");
  expect_plan_rejected({{"kind", "nan"}, {"module", "layers.0"}, {"pass", "forward"}},
                       "faults[0].pass: only an exception fault names a pass");
  expect_plan_rejected({{"kind", "crash"}, {"allocation", 2}}, "faults[0].allocation: only an oom fault names an allocation");
}

}  // namespace
}  // namespace shardfuzz::harness
