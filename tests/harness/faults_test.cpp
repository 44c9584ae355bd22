// The fault plan end to end on the threads backend: the JSON names a bad field; each kind fires at
// the planned collective of the planned rank; liveness accepts the planned stop and faults_detected
// checks every rank learned of it in time, naming the faulty rank; a straggler under the deadline
// changes nothing (parity included); the generator draws plans only when asked, and shrinking
// drops and simplifies faults.
#include "fuzz/gen/generate.h"
#include "fuzz/shrink/shrink.h"
#include "harness/properties/property.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"
#include "tests/harness/fault_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shardfuzz::harness {
namespace {

using namespace std::chrono_literals;
using namespace testing_support;

// A run record as a faulted run leaves it, made by hand: a 500 ms deadline, one fired fault, every
// rank present and without an error yet (the test says what each learned).
RunRecord hand_made_faulted_run(int world, const FiredFault& fired) {
  RunRecord run;
  run.deadline_ms = 500;
  run.error = "rank " + std::to_string(fired.rank) + ": injected";
  run.fired_faults.push_back(fired);
  run.ranks.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) run.ranks[static_cast<std::size_t>(r)].rank = r;
  return run;
}



TEST(FaultPlan, RoundTripsThroughJsonAndIsWrittenOnlyWhenPlanned) {
  const Scenario sc = with_fault(with_fault(small(), "straggler", 1, 4, 25), "crash", 2, 9);
  const Scenario back = scenario_from_json(to_json(sc));
  ASSERT_EQ(back.faults.size(), 2u);
  EXPECT_EQ(back.faults[0].kind_name(), "straggler");
  EXPECT_EQ(back.faults[0].at_collective()->delay_ms, 25);
  EXPECT_EQ(back.faults[1].rank, 2);
  EXPECT_EQ(back.faults[1].at_collective()->collective, 9);
  EXPECT_FALSE(to_json(small()).contains("faults"));
}

TEST(FaultPlan, BadFaultsNameTheirField) {
  expect_plan_rejected({{"kind", "meteor"}}, "faults[0].kind: \"meteor\" is not a fault kind");
  expect_rejected(with_fault(small(3), "crash", 3, 0), "faults[0].rank: 3 outside [0, 2]");
  expect_rejected(with_fault(small(), "crash", 0, -1), "faults[0].collective: -1 outside");
  expect_rejected(with_fault(small(), "straggler", 0, 0, 0), "faults[0].delay_ms: 0 outside [1, 60000]");
  expect_rejected(with_fault(small(), "hang", 0, 0, 5), "faults[0].delay_ms: 5: only a straggler has a delay");
  expect_rejected(with_exception(small(), 0, "layers.7", "forward", 0), "faults[0].module: \"layers.7\": no such module");
  expect_plan_rejected({{"kind", "exception"}, {"module", "layers.0"}, {"pass", "sideways"}},
                       "faults[0].pass: \"sideways\" is not a pass");
  expect_plan_rejected({{"kind", "hang"}, {"delay_ms", 5}}, "faults[0].delay_ms: 5: only a straggler has a delay");
  expect_rejected(with_exception(small(), 0, "layers.0", "backward", 1), "faults[0].step: 1 outside [0, 0]");
  expect_plan_rejected({{"kind", "crash"}, {"collective", 1}, {"module", "out"}},
                       "faults[0].module: only an exception, nan or inf fault names a module and a step");
  expect_plan_rejected({{"kind", "crash"}, {"when", 3}}, "faults[0].when: unknown key");
}

class EachDetectedKind : public ::testing::TestWithParam<const char*> {};

TEST_P(EachDetectedKind, StopsTheRunAndEveryRankLearnsOfItNamingTheRank) {
  const Scenario sc = with_fault(small(), GetParam(), 1, 3);
  const RunRecord run = run_threads(sc, short_deadline());
  ASSERT_FALSE(run.ok());
  ASSERT_EQ(run.fired_faults.size(), 1u);
  EXPECT_EQ(run.fired_faults[0].rank, 1);
  EXPECT_EQ(run.fired_faults[0].kind, GetParam());
  const auto verdicts = check_properties(sc, run);
  EXPECT_TRUE(verdict(verdicts, "liveness").ok) << verdict(verdicts, "liveness").message;
  const Verdict& d = verdict(verdicts, "faults_detected");
  EXPECT_TRUE(d.ok && !d.skipped) << d.message;
  EXPECT_NE(d.message.find("detected on every rank: latency median"), std::string::npos) << d.message;
  for (const RankRecord& r : run.ranks) {
    EXPECT_FALSE(r.error.empty()) << "rank " << r.rank;
    EXPECT_GE(r.failed_at_seconds, 0) << "rank " << r.rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, EachDetectedKind, ::testing::Values("collective_error", "hang", "crash"));

class EachPass : public ::testing::TestWithParam<const char*> {};

TEST_P(EachPass, WithoutRecoveryAnExceptionInAModuleStopsTheRunNamingModuleStepAndRank) {
  Scenario sc = small();
  sc.steps = 2;
  sc = with_exception(sc, 2, "layers.0.moe.experts", GetParam(), 1);
  const RunRecord run = run_threads(sc, without_recovery());
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error.find(std::string("injected exception in ") + GetParam() +
                           " of layers.0.moe.experts at step 2 on rank 2"),
            std::string::npos)
      << run.error;
  ASSERT_EQ(run.fired_faults.size(), 1u);
  EXPECT_EQ(run.ranks[2].losses.size(), 1u) << "step 1 completed, step 2 did not";
  const auto verdicts = check_properties(sc, run);
  EXPECT_TRUE(verdict(verdicts, "liveness").ok) << verdict(verdicts, "liveness").message;
  const Verdict& d = verdict(verdicts, "faults_detected");
  EXPECT_TRUE(d.ok && !d.skipped) << d.message;
  EXPECT_NE(d.message.find(std::string("planned exception of rank 2 in the ") + GetParam() +
                           " of layers.0.moe.experts at step 2 detected on every rank"),
            std::string::npos)
      << d.message;
}

INSTANTIATE_TEST_SUITE_P(Passes, EachPass, ::testing::Values("forward", "backward"));

TEST(FaultPlan, AnExceptionFaultRoundTripsThroughJson) {
  const Scenario sc = with_exception(small(), 1, "layers.0", "backward", 0);
  const Scenario back = scenario_from_json(to_json(sc));
  ASSERT_EQ(back.faults.size(), 1u);
  EXPECT_EQ(back.faults[0].in_module()->module, "layers.0");
  EXPECT_EQ(back.faults[0].in_module()->pass, ModuleFault::Pass::Backward);
  EXPECT_EQ(to_json(back), to_json(sc));
}

TEST(FaultPlan, AStragglerUnderTheDeadlineChangesNothingButTime) {
  const Scenario sc = with_fault(small(), "straggler", 2, 5, 30);
  const RunRecord run = run_threads(sc, short_deadline());
  ASSERT_TRUE(run.ok()) << run.error;
  ASSERT_EQ(run.fired_faults.size(), 1u);
  const auto verdicts = check_properties(sc, run);
  EXPECT_EQ(first_failure(verdicts), nullptr) << first_failure(verdicts)->message;
  EXPECT_TRUE(verdict(verdicts, "parity_with_reference").ok);
  EXPECT_TRUE(verdict(verdicts, "faults_detected").skipped);
}

TEST(FaultPlan, AFaultPastTheRunsLastCollectiveDoesNotFire) {
  const Scenario sc = with_fault(small(), "crash", 0, 100000);
  const RunRecord run = run_threads(sc, short_deadline());
  EXPECT_TRUE(run.ok()) << run.error;
  EXPECT_TRUE(run.fired_faults.empty());
  EXPECT_EQ(verdict(check_properties(sc, run), "faults_detected").message,
            "no planned fault fired (the run has fewer collectives)");
}

TEST(FaultPlan, APeerThatCompletedOrNamesNoOneFailsTheProperty) {
  const Scenario sc = with_fault(small(2), "collective_error", 0, 0);
  RunRecord run = hand_made_faulted_run(2, {0, 0, "collective_error", "dp", "all_gather_into_tensor", 0.1});
  run.ranks[0].error = "injected collective error at rank 0";
  run.ranks[0].failed_at_seconds = 0.1;
  Verdict v = check_faults_detected(sc, run);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("rank 1 completed without an error"), std::string::npos) << v.message;
  run.ranks[1].error = "something unrelated";
  run.ranks[1].failed_at_seconds = 0.2;
  v = check_faults_detected(sc, run);
  EXPECT_NE(v.message.find("rank 1's error does not name rank 0"), std::string::npos) << v.message;
  run.ranks[1].error = "aborted: rank 0 failed";
  run.ranks[1].failed_at_seconds = 5.0;
  v = check_faults_detected(sc, run);
  EXPECT_NE(v.message.find("learned of it 4.9 s after it fired, past the deadline 500 ms"), std::string::npos)
      << v.message;
}

// A rank that had finished every collective before the fault fired completes, as in FSDP2: nothing
// it still had to do involved the faulty rank (found by a 10-minute strict --faults campaign: a
// collective_error at rank 0's last all-gather, in its dp_mod_ep group {0, 1}, after which ranks 2
// and 3 had no collective left). One that entered a collective after the world's abort and still
// completed was not reached by the abort: a finding.
TEST(FaultPlan, APeerThatFinishedEveryCollectiveBeforeTheFaultMayComplete) {
  const Scenario sc = with_fault(small(3), "collective_error", 0, 0);
  RunRecord run = hand_made_faulted_run(3, {0, 0, "collective_error", "dp", "all_gather_into_tensor", 0.1});
  run.ranks[0].error = "injected collective error at rank 0";
  run.ranks[1].error = "aborted: rank 0 failed";
  run.ranks[0].failed_at_seconds = run.ranks[1].failed_at_seconds = 0.1;
  run.ranks[2].collectives_after_abort = 0;
  Verdict v = check_faults_detected(sc, run);
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_NE(v.message.find("finished every collective before it and completed: 2"), std::string::npos) << v.message;
  run.ranks[2].collectives_after_abort = 3;
  v = check_faults_detected(sc, run);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("rank 2 completed without an error after entering 3 collective(s) once the world was "
                           "aborted"),
            std::string::npos)
      << v.message;

  const Scenario found =
      load_scenario(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/harness/cases/fault_at_last_shared_collective.json");
  const RunRecord real = run_threads(found);
  ASSERT_TRUE(real.ranks.at(2).error.empty()) << "the case must keep a rank that completes";
  EXPECT_EQ(real.ranks.at(2).collectives_after_abort, 0);
  const Verdict verdict = check_faults_detected(found, real);
  EXPECT_TRUE(verdict.ok) << verdict.message;
}

// A peer's deadline error lists every missing rank with what it last entered; the faulty rank may
// come second (found by a strict --faults campaign, seed 2: a hang inside a reshard_after_forward=2
// sub-group leaves its partner missing too).
TEST(FaultPlan, APeerNamesTheFaultyRankAnywhereInAnAnnotatedMissingList) {
  const Scenario sc = with_fault(small(3), "hang", 1, 0);
  RunRecord run = hand_made_faulted_run(3, {0, 1, "hang", "dp/post_forward2", "all_gather_into_tensor", 0.1});
  const std::string missing =
      "deadline of 500 ms exceeded in group 'dp' at sequence 6 waiting in reduce_scatter_tensor(numel=1152, float, avg): "
      "arrived ranks [2], missing ranks [0 (last entered sequence 5: all_gather_into_tensor(numel=192, float)), "
      "1 (last entered sequence 5: all_gather_into_tensor(numel=192, float))]";
  for (int r = 0; r < 3; ++r) run.ranks[r].failed_at_seconds = 0.5;
  run.ranks[0].error = "all_gather_into_tensor at sequence 0 in group 'dp/post_forward2' aborted: rank 1 failed";
  run.ranks[1].error = "injected hang";
  run.ranks[2].error = missing;
  Verdict v = check_faults_detected(sc, run);
  EXPECT_EQ(v.message.find("does not name"), std::string::npos) << v.message;
  run.ranks[2].error = "missing ranks [0 (last entered sequence 5: all_gather_into_tensor(numel=192, float)), 11 (x)]";
  v = check_faults_detected(sc, run);
  EXPECT_NE(v.message.find("rank 2's error does not name rank 1"), std::string::npos) << v.message;
}

// Every rank hanging at the same collective arrives together: the collective completes and no peer
// is left waiting (found by a strict --faults campaign, seed 6). Nothing to detect; one rank
// hanging alone still must be.
TEST(FaultPlan, ASynchronizedStallOfEveryRankNeedNotBeDetected) {
  const Scenario both = with_fault(with_fault(small(2), "hang", 0, 5), "hang", 1, 5);
  const RunRecord run = run_threads(both, short_deadline());
  EXPECT_TRUE(run.ok()) << run.error;
  ASSERT_EQ(run.fired_faults.size(), 2u);
  const auto verdicts = check_properties(both, run);
  EXPECT_TRUE(verdict(verdicts, "liveness").ok);
  const Verdict v = verdict(verdicts, "faults_detected");
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_NE(v.message.find("synchronized stall"), std::string::npos) << v.message;
  const Scenario one = with_fault(small(2), "hang", 1, 5);
  const RunRecord alone = run_threads(one, short_deadline());
  EXPECT_FALSE(alone.ok());
  EXPECT_TRUE(verdict(check_properties(one, alone), "faults_detected").ok);
}

TEST(FaultPlan, TheGeneratorDrawsPlansOnlyWhenAskedWithRanksInTheWorld) {
  fuzz::GenConfig config;
  for (uint64_t seed = 1; seed <= 30; ++seed) EXPECT_TRUE(fuzz::generate(config, seed, 50).faults.empty());
  config.faults = true;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const Scenario sc = fuzz::generate(config, seed, 50);
    EXPECT_GE(sc.faults.size(), 1u);
    EXPECT_LE(sc.faults.size(), 2u);
    for (const FaultSpec& f : sc.faults) EXPECT_LT(f.rank, sc.world_size);
    EXPECT_NO_THROW(sc.validate());
  }
}

TEST(FaultPlan, ShrinkingDropsFaultsAndMovesThemEarlierToRankZero) {
  const Scenario sc = with_fault(with_fault(small(), "straggler", 2, 8, 40), "crash", 1, 6);
  const auto children = fuzz::structural_shrinks(sc);
  auto has = [&](auto pred) { return std::any_of(children.begin(), children.end(), pred); };
  EXPECT_TRUE(has([](const Scenario& c) { return c.faults.size() == 1 && c.faults[0].is(CollectiveFault::Kind::Crash); }));
  EXPECT_TRUE(has([](const Scenario& c) { return c.faults.size() == 2 && c.faults[1].at_collective()->collective == 0; }));
  EXPECT_TRUE(has([](const Scenario& c) { return c.faults.size() == 2 && c.faults[0].rank == 0; }));
  EXPECT_TRUE(has([](const Scenario& c) { return c.faults.size() == 2 && c.faults[0].at_collective()->delay_ms == 20; }));
}

}  // namespace
}  // namespace shardfuzz::harness
