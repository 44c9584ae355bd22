// The named scenarios.
#include "harness/scenario/standard_scenarios.h"

namespace shardfuzz::harness {

Scenario nested_experts_scenario(int blocks, bool gated, int world_size, const std::string& profile, int steps) {
  Scenario s;
  s.name = std::string(gated ? "gated" : "ungated") + "-moe-nested-experts-ac";
  s.world_size = world_size;
  s.profile = semantics::Profile::named(profile);
  s.steps = steps;
  s.dims = {64, 128, 4, 32};
  s.optimizer.lr = 1e-3;  // the loss is a plain sum over 32 x 64 outputs: keep steps finite
  BlockSpec block;
  block.gated = gated;
  block.ac = ac::CheckpointMode::NonReentrant;
  s.blocks.assign(static_cast<std::size_t>(blocks), block);
  for (int i = 0; i < blocks; ++i) {
    s.fully_shard["layers." + std::to_string(i) + ".moe.experts"] = ShardSpec{};
    s.fully_shard["layers." + std::to_string(i)] = ShardSpec{};
  }
  s.fully_shard["out"] = ShardSpec{};
  s.fully_shard[""] = ShardSpec{};
  return s;
}

Scenario standard_small_scenario(const std::string& profile) {
  Scenario s = nested_experts_scenario(4, true, 4, profile, 2);
  s.name = "standard-small";
  return s;
}

Scenario standard_large_scenario(const std::string& profile) {
  Scenario s = nested_experts_scenario(8, true, 1, profile, 2);
  s.name = "standard-large";
  s.dims = {4096, 1024, 4, 2048};
  s.dtype = "bfloat16";
  s.loss = "mean";
  return s;
}

}  // namespace shardfuzz::harness
