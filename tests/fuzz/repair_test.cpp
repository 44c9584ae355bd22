// gen::repair (fuzz/gen/repair.h): each rule, and the property that repair turns any scenario the
// generator's draws could describe into a valid one without touching what is already legal.
#include "fuzz/gen/repair.h"

#include "fuzz/gen/generate.h"
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>

namespace shardfuzz::fuzz::gen {
namespace {

using harness::BlockSpec;
using harness::Scenario;
using harness::ShardSpec;

Scenario two_moe_blocks(int world) {
  Scenario sc;
  sc.world_size = world;
  sc.dims = {8, 8, 2, 4};
  sc.blocks.resize(2);
  sc.fully_shard[""] = {};
  return sc;
}

TEST(GenRepair, ExpertShardSizeBecomesADivisor) {
  Scenario sc = two_moe_blocks(6);
  sc.expert_shard_size = 4;
  EXPECT_EQ(repair(sc).expert_shard_size, 2);
  sc.expert_shard_size = 3;
  EXPECT_EQ(repair(sc).expert_shard_size, 3);
  sc.world_size = 1;
  EXPECT_EQ(repair(sc).expert_shard_size, 1);
  EXPECT_NO_THROW(repair(sc).validate());
}

TEST(GenRepair, EntriesOfMissingModulesGoAndTheRootStays) {
  Scenario sc = two_moe_blocks(2);
  sc.fully_shard.erase("");
  sc.fully_shard["layers.2"] = {};             // no third block
  sc.fully_shard["layers.0.mlp"] = {};         // a MoE block has no mlp
  sc.fully_shard["layers.1.moe.experts"] = {};
  sc.blocks[1].gated = false;
  sc.fully_shard["layers.1.moe.router"] = {};  // no router when ungated
  const Scenario r = repair(sc);
  std::vector<std::string> keys;
  for (const auto& [k, v] : r.fully_shard) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"", "layers.1.moe.experts"}));
  EXPECT_NO_THROW(r.validate());
}

TEST(GenRepair, OptionsBecomeLegalForTheirShardGroup) {
  Scenario sc = two_moe_blocks(4);
  sc.expert_shard_size = 2;
  ShardSpec experts;
  experts.mesh = "experts";
  experts.reshard_after_forward = fsdp::ReshardAfterForward::ranks(4);  // group is 2
  experts.shard_dim = 1;
  sc.fully_shard["layers.0.moe.experts"] = experts;
  ShardSpec dense;
  dense.reshard_after_forward = fsdp::ReshardAfterForward::ranks(3);  // group is 4
  dense.shard_dim = 1;                                                 // not an expert module
  dense.mesh = "bogus";
  sc.fully_shard["layers.0"] = dense;
  const Scenario r = repair(sc);
  EXPECT_EQ(r.fully_shard.at("layers.0.moe.experts").reshard_after_forward.n, 2);
  EXPECT_EQ(r.fully_shard.at("layers.0.moe.experts").shard_dim, 1);  // 8 % 2 == 0
  EXPECT_EQ(r.fully_shard.at("layers.0").reshard_after_forward.n, 1);
  EXPECT_EQ(r.fully_shard.at("layers.0").shard_dim, 0);
  EXPECT_EQ(r.fully_shard.at("layers.0").mesh, "dp");
  EXPECT_NO_THROW(r.validate());

  sc.dims.hidden = 6;  // Shard(1) on a group of 4 (experts mesh without HSDP) needs hidden % 4
  sc.expert_shard_size = 0;
  EXPECT_EQ(repair(sc).fully_shard.at("layers.0.moe.experts").shard_dim, 0);
  EXPECT_NO_THROW(repair(sc).validate());
}

TEST(GenRepair, PrefetchEntriesNamingUnwrappedModulesGo) {
  Scenario sc = two_moe_blocks(2);
  ShardSpec s;
  s.forward_prefetch = std::vector<std::string>{"layers.1", "self", "layers.1.moe.experts", "nowhere"};
  s.backward_prefetch = std::vector<std::string>{"layers.1.attn"};
  sc.fully_shard["layers.0"] = s;
  sc.fully_shard["layers.1.moe.experts"] = {};
  const Scenario r = repair(sc);
  EXPECT_EQ(*r.fully_shard.at("layers.0").forward_prefetch, (std::vector<std::string>{"self", "layers.1.moe.experts"}));
  EXPECT_EQ(*r.fully_shard.at("layers.0").backward_prefetch, std::vector<std::string>{});  // stays, empty
  EXPECT_FALSE(r.fully_shard.at("layers.1.moe.experts").forward_prefetch);
  EXPECT_NO_THROW(r.validate());
}

TEST(GenRepair, MlpBlocksLoseGatedAndLoraKeepsTheBlocksLinearsOnce) {
  Scenario sc = two_moe_blocks(1);
  sc.blocks[0].kind = BlockSpec::Kind::Mlp;
  sc.blocks[0].gated = true;
  sc.blocks[0].lora = {"mlp.fc1", "moe.router", "attn.q"};  // an MLP block with a Linear attn
  sc.blocks[1].lora = {"attn", "moe.router", "attn"};
  const Scenario r = repair(sc);
  EXPECT_FALSE(r.blocks[0].gated);
  EXPECT_TRUE(r.blocks[1].gated);
  EXPECT_EQ(r.blocks[0].lora, (std::vector<std::string>{"mlp.fc1"}));
  EXPECT_EQ(r.blocks[1].lora, (std::vector<std::string>{"attn", "moe.router"}));
  EXPECT_NO_THROW(r.validate());
}

TEST(GenRepair, ExpertParallelNeedsADivisorAndPutsRoutedExpertsOnTheExpertsMesh) {
  Scenario sc = two_moe_blocks(4);
  sc.blocks[0].kind = BlockSpec::Kind::RoutedMoe;
  sc.dims.experts = 4;
  sc.dims.top_k = 9;
  sc.expert_parallel = true;
  sc.expert_shard_size = 2;  // ep = 2 divides 4 experts
  sc.fully_shard["layers.1.moe.experts"].mesh = "experts";  // a dense MoE's experts: not EP-local
  Scenario r = repair(sc);
  EXPECT_TRUE(r.expert_parallel);
  EXPECT_EQ(r.dims.top_k, 4);
  EXPECT_EQ(r.fully_shard.at("layers.0.moe.experts").mesh, "experts");
  EXPECT_EQ(r.fully_shard.at("layers.1.moe.experts").mesh, "dp");
  EXPECT_NO_THROW(r.validate());
  sc.dims.experts = 3;  // ep = 2 does not divide 3 experts
  r = repair(sc);
  EXPECT_FALSE(r.expert_parallel);
  EXPECT_NO_THROW(r.validate());
}

TEST(GenRepair, IsIdempotentOnGeneratedScenarios) {
  for (uint64_t seed = 0; seed < 500; ++seed) {
    const Scenario sc = generate(GenConfig{}, seed, 100);
    EXPECT_EQ(harness::to_json_text(repair(sc)), harness::to_json_text(sc)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace shardfuzz::fuzz::gen
