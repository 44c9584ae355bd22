// checkpoint_policy_honoured on known cases: a run with one block in each checkpoint mode passes
// and reports each region's forward and recompute; a timeline given each way a region can stray
// (selective keeping nothing, a recompute that runs the matmuls again, one recompute too many or
// missing, a region where none was asked, the wrong mode) is a finding naming rank, step, region.
#include "harness/backends/threads/threads_backend.h"
#include "harness/properties/property.h"
#include "harness/scenario/standard_scenarios.h"

#include <gtest/gtest.h>

#include <functional>

namespace shardfuzz::harness {
namespace {

using memory::Event;

Scenario every_mode() {
  Scenario sc = standard_small_scenario("strict");
  sc.world_size = 2;
  sc.blocks[0].ac = ac::CheckpointMode::None;
  sc.blocks[1].ac = ac::CheckpointMode::NonReentrant;
  sc.blocks[2].ac = ac::CheckpointMode::Reentrant;
  sc.blocks[3].ac = ac::CheckpointMode::SelectiveOps;
  return sc;
}

class CheckpointPolicy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sc_ = new Scenario(every_mode());
    run_ = new RunRecord(run_threads(*sc_));
  }
  static void TearDownTestSuite() {
    delete run_;
    delete sc_;
  }

  // The run's verdict after `edit` changed rank 0's timeline.
  static Verdict edited(const std::function<void(std::vector<memory::TimelineEvent>&)>& edit) {
    RunRecord run = *run_;
    edit(run.ranks[0].timeline);
    return check_checkpoint_policy_honoured(*sc_, run);
  }
  // The first event of rank 0's step 1 with this name and region.
  static std::vector<memory::TimelineEvent>::iterator find(std::vector<memory::TimelineEvent>& tl, Event event,
                                                           const std::string& region) {
    for (auto it = tl.begin(); it != tl.end(); ++it)
      if (it->step == 0 && it->event == event && it->group == region) return it;
    ADD_FAILURE() << "no " << event << " of " << region;
    return tl.end();
  }

  static Scenario* sc_;
  static RunRecord* run_;
};
Scenario* CheckpointPolicy::sc_ = nullptr;
RunRecord* CheckpointPolicy::run_ = nullptr;

TEST_F(CheckpointPolicy, EachModeReportsItsForwardAndRecomputeAndPasses) {
  ASSERT_TRUE(run_->ok()) << run_->error;
  const Verdict v = check_checkpoint_policy_honoured(*sc_, *run_);
  EXPECT_TRUE(v.ok && !v.skipped) << v.message;
  std::map<std::string, int> forwards, recomputes;
  for (const auto& e : run_->ranks[0].timeline) {
    if (e.category != memory::Category::Ac || e.step != 0) continue;
    (e.event == Event::CheckpointForward ? forwards : recomputes)[e.group]++;
    if (e.group == "layers.3" && e.event == Event::CheckpointForward) {
      EXPECT_GT(e.detail.at("outputs_kept").get<int>(), 0);
      EXPECT_EQ(e.detail.at("outputs_kept"), e.detail.at("matmul_like_ran"));
      EXPECT_GT(e.detail.at("bytes_kept").get<int64_t>(), 0);
    }
    if (e.group == "layers.3" && e.event == Event::CheckpointRecompute)
      EXPECT_EQ(e.checkpoint_counts().matmul_like_ran, 0);
  }
  EXPECT_EQ(forwards.count("layers.0"), 0u) << "no region where none was asked";
  for (const char* region : {"layers.1", "layers.2", "layers.3"}) {
    EXPECT_EQ(forwards[region], 1) << region;
    EXPECT_EQ(recomputes[region], 1) << region;
  }
}

TEST_F(CheckpointPolicy, ASelectiveRegionThatKeepsNothingIsAFinding) {
  const Verdict v = edited([](auto& tl) {
    auto it = find(tl, Event::CheckpointForward, "layers.3");
    it->detail["outputs_kept"] = 0;
    it->detail["bytes_kept"] = 0;
  });
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("rank 0 step 1, checkpoint_forward of layers.3: the selective_ops region kept 0 of the"),
            std::string::npos)
      << v.message;
}

TEST_F(CheckpointPolicy, ASelectiveRecomputeThatRunsTheMatmulsAgainIsAFinding) {
  const Verdict v = edited([](auto& tl) {
    auto it = find(tl, Event::CheckpointRecompute, "layers.3");
    it->detail["matmul_like_ran"] = it->detail["outputs_reused"];
    it->detail["outputs_reused"] = 0;
  });
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("checkpoint_recompute of layers.3: the selective_ops recompute reused 0 of the"),
            std::string::npos)
      << v.message;
}

TEST_F(CheckpointPolicy, TheWrongModeIsAFinding) {
  const Verdict v = edited([](auto& tl) { find(tl, Event::CheckpointForward, "layers.3")->detail["mode"] = "non_reentrant"; });
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("the scenario asks for selective_ops but the region ran as non_reentrant"), std::string::npos)
      << v.message;
}

TEST_F(CheckpointPolicy, ARecomputeTwiceOrNeverIsAFinding) {
  Verdict twice = edited([](auto& tl) {
    auto it = find(tl, Event::CheckpointRecompute, "layers.1");
    tl.insert(it, *it);
  });
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.message.find("checkpoint_recompute of layers.1: a recompute with no forward left"), std::string::npos)
      << twice.message;
  Verdict never = edited([](auto& tl) { tl.erase(find(tl, Event::CheckpointRecompute, "layers.1")); });
  EXPECT_FALSE(never.ok);
  EXPECT_NE(never.message.find("checkpoint_forward of layers.1: the region saved"), std::string::npos) << never.message;
  EXPECT_NE(never.message.find("never recomputed"), std::string::npos) << never.message;
  // A recompute that runs other ops than its forward.
  Verdict other = edited([](auto& tl) { find(tl, Event::CheckpointRecompute, "layers.2")->detail["matmul_like_ran"] = 99; });
  EXPECT_FALSE(other.ok);
  EXPECT_NE(other.message.find("the recompute ran 99 matmul-like ops"), std::string::npos) << other.message;
}

TEST_F(CheckpointPolicy, ARegionWhereNoneWasAskedIsAFinding) {
  const Verdict v = edited([](auto& tl) {
    auto it = find(tl, Event::CheckpointForward, "layers.1");
    memory::TimelineEvent stray = *it;
    stray.group = "layers.0";
    tl.insert(it, stray);
  });
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("checkpoint_forward of layers.0: a checkpoint region ran where the scenario asks for none"),
            std::string::npos)
      << v.message;
}

TEST_F(CheckpointPolicy, TheTorchBackendReportsNoRegionsSoItIsSkipped) {
  RunRecord run = *run_;
  run.observed.checkpoints = false;
  EXPECT_TRUE(check_checkpoint_policy_honoured(*sc_, run).skipped);
}

}  // namespace
}  // namespace shardfuzz::harness
