// What a campaign's summary says a case exercised.
#include "harness/reproducer.h"
#include "harness/scenario/scenario_features.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shardfuzz::harness {
namespace {

bool has(const std::vector<std::string>& features, const std::string& f) {
  return std::find(features.begin(), features.end(), f) != features.end();
}

Scenario seed_leak() { return load_scenario_or_reproducer(SHARDFUZZ_SOURCE_DIR "/reproducers/seed-leak-gated-moe-nested-experts-ac.json"); }

TEST(ScenarioFeatures, TheSeedLeakIsCheckpointedNestedAndNothingElse) {
  const Scenario s = seed_leak();
  const auto f = features_of(s);
  EXPECT_TRUE(has(f, "activation_checkpointing"));
  EXPECT_TRUE(has(f, "nested_fully_shard"));
  EXPECT_TRUE(has(f, "world_" + std::to_string(s.world_size)));
  for (const char* absent : {"expert_parallel", "hsdp", "mixed_precision", "lora", "frozen_block", "gradient_accumulation",
                             "forward_twice_per_backward"})
    EXPECT_FALSE(has(f, absent)) << absent;
}

TEST(ScenarioFeatures, EachKnobIsNamed) {
  Scenario s = seed_leak();
  s.world_size = 4;
  s.expert_shard_size = 2;
  s.fully_shard["layers.0.moe.experts"].mesh = "experts";
  EXPECT_TRUE(has(features_of(s), "hsdp"));  // 2 replicas x 2 shards, no expert parallelism
  s.expert_parallel = true;
  EXPECT_TRUE(has(features_of(s), "expert_parallel"));
  EXPECT_FALSE(has(features_of(s), "hsdp"));
  s.micro_batches = 2;
  s.forwards_per_backward = 2;
  s.mixed_precision = MixedPrecisionSpec{};
  s.blocks[0].frozen = true;
  s.blocks[0].lora = {"attn"};
  s.input_requires_grad = false;
  const auto f = features_of(s);
  for (const char* present : {"gradient_accumulation", "forward_twice_per_backward", "mixed_precision", "frozen_block", "lora",
                              "world_4", "frozen_first_block", "input_without_grad"})
    EXPECT_TRUE(has(f, present)) << present;
  for (const auto& name : f)  // every name but the world is one the summary lists
    if (name.rfind("world_", 0) != 0) EXPECT_TRUE(has(scenario_feature_names(), name)) << name;
}

}  // namespace
}  // namespace shardfuzz::harness
