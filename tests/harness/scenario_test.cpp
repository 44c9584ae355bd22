// Scenario's model paths and parameter bytes (checked against the model nn/ really builds), and
// validate(): one test per rule family, each asserting the JSON path that starts the message.
#include "harness/scenario/scenario.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"
#include "runtime/nn/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace shardfuzz::harness {
namespace {

// Two gated MoE blocks, experts nested on the experts mesh, non-reentrant AC, the head wrapped,
// torchtitan-style explicit prefetch lists (the example of docs/scenario-format.md).
Scenario example() {
  Scenario s;
  s.name = "two-moe-blocks";
  s.world_size = 4;
  s.expert_shard_size = 2;
  for (int i = 0; i < 2; ++i) {
    BlockSpec b;
    b.kind = BlockSpec::Kind::Moe;
    b.gated = true;
    b.ac = ac::CheckpointMode::NonReentrant;
    s.blocks.push_back(b);
  }
  s.fully_shard[""] = ShardSpec{};
  for (const char* block : {"layers.0", "layers.1"}) {
    ShardSpec experts;
    experts.mesh = "experts";
    s.fully_shard[std::string(block) + ".moe.experts"] = experts;
  }
  ShardSpec l0, l1, out;
  l0.forward_prefetch = std::vector<std::string>{"layers.1"};
  l1.forward_prefetch = std::vector<std::string>{"out"};
  l1.backward_prefetch = std::vector<std::string>{"layers.0"};
  out.reshard_after_forward = fsdp::ReshardAfterForward::no();
  out.backward_prefetch = std::vector<std::string>{"layers.1"};
  s.fully_shard["layers.0"] = l0;
  s.fully_shard["layers.1"] = l1;
  s.fully_shard["out"] = out;
  return s;
}

// Runs `edit` on a valid scenario and expects validate() to reject it with a message starting
// `prefix`.
void expect_rejected(const std::function<void(Scenario&)>& edit, const std::string& prefix) {
  Scenario s = example();
  ASSERT_NO_THROW(s.validate());
  edit(s);
  try {
    s.validate();
    ADD_FAILURE() << "accepted; expected a rejection starting with: " << prefix;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << "message: " << e.what() << "\nexpected prefix: " << prefix;
  }
}

void expect_accepted(const std::function<void(Scenario&)>& edit) {
  Scenario s = example();
  edit(s);
  EXPECT_NO_THROW(s.validate());
}

BlockSpec block(BlockSpec::Kind kind, bool gated) {
  BlockSpec b;
  b.kind = kind;
  b.gated = gated;
  return b;
}

TEST(ScenarioModel, ModulePathsArePreOrderAndMatchTheBuiltModel) {
  Scenario s;
  s.blocks = {block(BlockSpec::Kind::Moe, true), block(BlockSpec::Kind::Moe, false), block(BlockSpec::Kind::Mlp, true)};
  const std::vector<std::string> expected = {
      "",         "layers",          "layers.0",          "layers.0.attn",     "layers.0.moe",  "layers.0.moe.experts",
      "layers.0.moe.router", "layers.1", "layers.1.attn", "layers.1.moe",  "layers.1.moe.experts",
      "layers.2", "layers.2.attn",   "layers.2.mlp",      "layers.2.mlp.fc1",  "layers.2.mlp.fc2", "out"};
  EXPECT_EQ(s.module_paths(), expected);

  nn::ModelConfig cfg;
  cfg.dim = s.dims.dim;
  cfg.hidden = s.dims.hidden;
  cfg.experts = s.dims.experts;
  for (const BlockSpec& b : s.blocks) cfg.layers.push_back({b.kind == BlockSpec::Kind::Moe, b.gated});
  cfg.blocks = static_cast<int>(cfg.layers.size());
  nn::Model model(cfg);
  // Every path names a module, and the model has no module the list misses.
  std::size_t modules = 0;
  std::function<void(nn::Module&)> count = [&](nn::Module& m) {
    ++modules;
    for (auto& child : m.children()) count(*child.second);
  };
  count(model);
  EXPECT_EQ(modules, expected.size());
  for (const auto& path : expected) EXPECT_NE(model.find(path), nullptr) << path;
}

TEST(ScenarioModel, FullParameterBytesMatchTheBuiltModel) {
  for (const auto& blocks : std::vector<std::vector<BlockSpec>>{
           {},
           {block(BlockSpec::Kind::Moe, true)},
           {block(BlockSpec::Kind::Moe, false), block(BlockSpec::Kind::Mlp, false), block(BlockSpec::Kind::Moe, true)}}) {
    Scenario s;
    s.dims = {12, 5, 3, 4};
    s.blocks = blocks;
    nn::ModelConfig cfg;
    cfg.dim = s.dims.dim;
    cfg.hidden = s.dims.hidden;
    cfg.experts = s.dims.experts;
    for (const BlockSpec& b : s.blocks) cfg.layers.push_back({b.kind == BlockSpec::Kind::Moe, b.gated});
    cfg.blocks = static_cast<int>(cfg.layers.size());
    nn::Model model(cfg);
    int64_t numel = 0;
    for (auto& [name, t] : model.named_parameters()) numel += t->numel();
    EXPECT_EQ(s.full_parameter_bytes(), numel * 4) << blocks.size() << " blocks";
  }
  // By hand: out (16*16+16) + attn (16*16+16) + experts 2*2*16*8 + router (16*2+2).
  Scenario s;
  s.blocks = {block(BlockSpec::Kind::Moe, true)};
  EXPECT_EQ(s.full_parameter_bytes(), 4 * (272 + 272 + 512 + 34));
  // Stored in bfloat16: half of that, unless mixed precision upcasts the trainable parameters.
  s.dtype = "bfloat16";
  EXPECT_EQ(s.full_parameter_bytes(), 2 * (272 + 272 + 512 + 34));
  s.mixed_precision = MixedPrecisionSpec{};
  s.mixed_precision->upcast_trainable = true;
  EXPECT_EQ(s.full_parameter_bytes(), 4 * (272 + 272 + 512 + 34));
}

TEST(ScenarioModel, TheStandardLargeModelFitsTheSizeBudgetInBfloat16) {
  const Scenario large = standard_large_scenario();
  EXPECT_NO_THROW(large.validate());
  // 8 x (attn 4096^2 + 4096, experts 2 x 4 x 4096 x 1024, router 4096 x 4 + 4) + out 4096^2 + 4096.
  const int64_t params = 8 * (4096 * 4097 + 2 * 4 * 4096 * 1024 + 4 * 4097) + 4096 * 4097;
  EXPECT_EQ(large.full_parameter_bytes(), 2 * params);
}

TEST(ScenarioModel, FullParameterBytesSaturatesInsteadOfOverflowing) {
  Scenario s;
  s.dims = {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40, 1};
  s.blocks.assign(3, block(BlockSpec::Kind::Moe, true));
  EXPECT_EQ(s.full_parameter_bytes(), std::numeric_limits<int64_t>::max());
}

TEST(ScenarioValidate, TheExampleAndTheDefaultWithARootAreValid) {
  EXPECT_NO_THROW(example().validate());
  Scenario s;
  s.fully_shard[""] = ShardSpec{};
  EXPECT_NO_THROW(s.validate());
}

TEST(ScenarioValidate, Schema) {
  expect_rejected([](Scenario& s) { s.schema = 2; }, "schema: 2 is not supported");
}

TEST(ScenarioValidate, WorldAndExpertShardSize) {
  expect_rejected([](Scenario& s) { s.world_size = 0; }, "world_size: 0 outside [1, 64]");
  expect_rejected([](Scenario& s) { s.world_size = 65; }, "world_size: 65 outside [1, 64]");
  expect_rejected([](Scenario& s) { s.expert_shard_size = -1; }, "expert_shard_size: -1 outside [0, 64]");
  expect_rejected([](Scenario& s) { s.expert_shard_size = 3; }, "expert_shard_size: 3 does not divide world_size 4");
  expect_rejected([](Scenario& s) { s.expert_shard_size = 8; }, "expert_shard_size: 8 does not divide world_size 4");
  expect_accepted([](Scenario& s) { s.expert_shard_size = 0; });
  expect_accepted([](Scenario& s) { s.expert_shard_size = 4; });
}

TEST(ScenarioValidate, ProfileStepsDtypeLoss) {
  // The profile is parsed as it is read (a Scenario holds a parsed one): the reader names the field.
  auto read_error = [](const std::string& name) -> std::string {
    nlohmann::json j = to_json(example());
    j["profile"] = name;
    try {
      scenario_from_json(j);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(read_error("torch-3.0").rfind("profile: profile: unknown base 'torch-3.0'", 0), 0u) << read_error("torch-3.0");
  EXPECT_EQ(read_error("strict+nonsense").rfind("profile: profile: unknown switch 'nonsense'", 0), 0u);
  expect_accepted([](Scenario& s) { s.profile = semantics::Profile::named("strict+experts_skip_empty"); });
  expect_accepted([](Scenario& s) { s.profile = semantics::Profile::named("torch-2.9~post_forward_reshards_during_backward"); });
  expect_accepted([](Scenario& s) { s.profile = semantics::Profile::named("torch-2.7"); });
  expect_rejected([](Scenario& s) { s.micro_batches = 0; }, "micro_batches: 0 outside [1, 64]");
  expect_rejected([](Scenario& s) { s.forwards_per_backward = 17; }, "forwards_per_backward: 17 outside [1, 16]");
  expect_accepted([](Scenario& s) { s.profile = semantics::Profile::named("strict"); });
  expect_accepted([](Scenario& s) { s.profile = semantics::Profile::named("torch-2.9"); });
  expect_rejected([](Scenario& s) { s.steps = 0; }, "steps: 0 outside [1, 1000]");
  expect_rejected([](Scenario& s) { s.steps = 1001; }, "steps: 1001 outside [1, 1000]");
  expect_rejected([](Scenario& s) { s.dtype = "float16"; }, "dtype: \"float16\" is not a dtype (float32, bfloat16)");
  expect_rejected([](Scenario& s) { s.mixed_precision = MixedPrecisionSpec{"fp8", "float32", false}; },
                  "mixed_precision.param_dtype: \"fp8\" is not a dtype");
  expect_rejected([](Scenario& s) { s.mixed_precision = MixedPrecisionSpec{"bfloat16", "half", false}; },
                  "mixed_precision.reduce_dtype: \"half\" is not a dtype");
  expect_rejected([](Scenario& s) { s.loss = "max"; }, "loss: \"max\" is not a loss");
  expect_accepted([](Scenario& s) { s.loss = "sum"; });
}

TEST(ScenarioValidate, Dims) {
  expect_rejected([](Scenario& s) { s.dims.dim = 0; }, "dims.dim: 0 outside [1, 65536]");
  expect_rejected([](Scenario& s) { s.dims.hidden = 65537; }, "dims.hidden: 65537 outside [1, 65536]");
  expect_rejected([](Scenario& s) { s.dims.experts = -1; }, "dims.experts: -1 outside [1, 65536]");
  expect_rejected([](Scenario& s) { s.dims.tokens = std::numeric_limits<int64_t>::min(); }, "dims.tokens: ");
}

TEST(ScenarioValidate, SizeBudget) {
  // 10 blocks of dim 60000: each attention alone is 3.6e9 parameters.
  expect_rejected(
      [](Scenario& s) {
        s.dims.dim = 60000;
        s.blocks.assign(10, s.blocks[0]);
      },
      "size budget: parameters take ");
  // Dims at their limit, 128 blocks: the arithmetic must not overflow into an "in budget" value.
  expect_rejected(
      [](Scenario& s) {
        s.dims = {ScenarioLimits::kMaxDim, ScenarioLimits::kMaxDim, ScenarioLimits::kMaxDim, 1};
        s.blocks.assign(ScenarioLimits::kMaxBlocks, s.blocks[0]);
      },
      "size budget: parameters take ");
  // Few parameters, but every token through 128 experts of width 4096.
  expect_rejected(
      [](Scenario& s) {
        s.dims = {16, 4096, 128, 1024};
        s.blocks.resize(1);
        s.fully_shard = {{"", ShardSpec{}}};
      },
      "size budget: activations take ");
  // Just inside: 1 GiB of parameters is allowed, one float more is not.
  expect_accepted([](Scenario& s) {
    s.blocks.clear();
    s.fully_shard = {{"", ShardSpec{}}};
    s.dims.dim = 16383;  // out: 16383^2 + 16383 = 268,419,072 floats < 2^28
  });
}

TEST(ScenarioValidate, Optimizer) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_rejected([](Scenario& s) { s.optimizer.lr = 0; }, "optimizer.lr: 0 must be finite and > 0");
  expect_rejected([&](Scenario& s) { s.optimizer.lr = nan; }, "optimizer.lr: ");
  expect_rejected([&](Scenario& s) { s.optimizer.lr = inf; }, "optimizer.lr: ");
  expect_rejected([](Scenario& s) { s.optimizer.beta1 = 1.0; }, "optimizer.beta1: 1 outside [0, 1)");
  expect_rejected([](Scenario& s) { s.optimizer.beta2 = -0.5; }, "optimizer.beta2: -0.5 outside [0, 1)");
  expect_rejected([&](Scenario& s) { s.optimizer.beta2 = nan; }, "optimizer.beta2: ");
  expect_rejected([](Scenario& s) { s.optimizer.eps = 0; }, "optimizer.eps: 0 must be finite and > 0");
  expect_rejected([](Scenario& s) { s.optimizer.weight_decay = -1; }, "optimizer.weight_decay: -1 must be finite and >= 0");
  expect_rejected([&](Scenario& s) { s.optimizer.weight_decay = inf; }, "optimizer.weight_decay: ");
  expect_rejected([](Scenario& s) { s.optimizer.kind = static_cast<train::OptimizerConfig::Kind>(7); }, "optimizer.kind: ");
  expect_accepted([](Scenario& s) {
    s.optimizer.kind = train::OptimizerConfig::Kind::AdamW;
    s.optimizer.beta1 = 0;
    s.optimizer.weight_decay = 0.1;
  });
}

TEST(ScenarioValidate, Blocks) {
  expect_rejected(
      [](Scenario& s) {
        s.blocks.assign(129, s.blocks[0]);
        s.dims = {1, 1, 1, 1};
      },
      "blocks: 129 blocks, over the limit of 128");
  expect_accepted([](Scenario& s) { s.blocks[1].lora = {"attn"}; });
  expect_rejected([](Scenario& s) { s.blocks[1].lora = {"mlp.fc1"}; }, "blocks[1].lora[0]: \"mlp.fc1\" is no linear of this block");
  expect_rejected([](Scenario& s) { s.blocks[1].lora = {"attn", "attn"}; }, "blocks[1].lora[1]: \"attn\" is listed twice");
  expect_rejected([](Scenario& s) { s.blocks[1].attention = true; s.dims.heads = 3; }, "dims.heads: 3 does not divide dims.dim");
  expect_rejected([](Scenario& s) { s.blocks[1].kind = BlockSpec::Kind::RoutedMoe; s.dims.top_k = 5; }, "dims.top_k: 5 outside [1, dims.experts");
  expect_rejected([](Scenario& s) { s.expert_parallel = true; s.expert_shard_size = 0; }, "expert_parallel: needs expert_shard_size > 0");
  expect_rejected([](Scenario& s) { s.blocks[0].ac = static_cast<ac::CheckpointMode>(9); }, "blocks[0].ac: ");
  expect_rejected([](Scenario& s) { s.blocks[1].kind = static_cast<BlockSpec::Kind>(9); }, "blocks[1].kind: ");
  // gated means nothing to a dense block: either value is fine.
  expect_accepted([](Scenario& s) {
    s.blocks.push_back(block(BlockSpec::Kind::Mlp, true));
    s.fully_shard["layers.2.mlp.fc1"] = ShardSpec{};
  });
  expect_accepted([](Scenario& s) {
    s.blocks.clear();
    s.fully_shard = {{"", ShardSpec{}}, {"out", ShardSpec{}}, {"layers", ShardSpec{}}};
  });
}

TEST(ScenarioValidate, FullyShardPathsAndRoot) {
  expect_rejected([](Scenario& s) { s.fully_shard["layers.9"] = ShardSpec{}; },
                  "fully_shard[\"layers.9\"]: no such module (the model has 2 blocks)");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0.mlp"] = ShardSpec{}; }, "fully_shard[\"layers.0.mlp\"]: no such module");
  expect_rejected(
      [](Scenario& s) {
        s.blocks[1].gated = false;
        s.fully_shard["layers.1.moe.router"] = ShardSpec{};
      },
      "fully_shard[\"layers.1.moe.router\"]: no such module");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0."] = ShardSpec{}; }, "fully_shard[\"layers.0.\"]: no such module");
  expect_rejected([](Scenario& s) { s.fully_shard["a\"b"] = ShardSpec{}; }, "fully_shard[\"a\\\"b\"]: no such module");
  expect_rejected([](Scenario& s) { s.fully_shard.erase(""); }, "fully_shard: the root (\"\") must be fully_shard-ed");
  expect_accepted([](Scenario& s) {
    s.fully_shard["layers"] = ShardSpec{};
    s.fully_shard["layers.0.moe.router"] = ShardSpec{};
    s.fully_shard["layers.0.attn"] = ShardSpec{};
  });
}

TEST(ScenarioValidate, Mesh) {
  expect_rejected([](Scenario& s) { s.fully_shard["out"].mesh = "ep"; }, "fully_shard[\"out\"].mesh: \"ep\" is not a mesh (dp, experts)");
  expect_accepted([](Scenario& s) { s.fully_shard["out"].mesh = "experts"; });
}

TEST(ScenarioValidate, ReshardAfterForwardInt) {
  using R = fsdp::ReshardAfterForward;
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0"].reshard_after_forward = R::ranks(3); },
                  "fully_shard[\"layers.0\"].reshard_after_forward: 3 does not divide the shard group size 4");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0"].reshard_after_forward = R::ranks(0); },
                  "fully_shard[\"layers.0\"].reshard_after_forward: 0 must be at least 1");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0"].reshard_after_forward = R::ranks(8); },
                  "fully_shard[\"layers.0\"].reshard_after_forward: 8 does not divide the shard group size 4");
  // On the experts mesh the shard group is expert_shard_size (2 here), or the world when it is 0.
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0.moe.experts"].reshard_after_forward = R::ranks(4); },
                  "fully_shard[\"layers.0.moe.experts\"].reshard_after_forward: 4 does not divide the shard group size 2");
  expect_accepted([](Scenario& s) {
    s.expert_shard_size = 0;
    s.fully_shard["layers.0.moe.experts"].reshard_after_forward = R::ranks(4);
  });
  expect_accepted([](Scenario& s) {
    s.fully_shard["layers.0"].reshard_after_forward = R::ranks(2);
    s.fully_shard["layers.1"].reshard_after_forward = R::ranks(1);
    s.fully_shard["out"].reshard_after_forward = R::ranks(4);
  });
}

TEST(ScenarioValidate, ShardDim) {
  expect_rejected([](Scenario& s) { s.fully_shard["out"].shard_dim = -1; }, "fully_shard[\"out\"].shard_dim: -1 outside [0, 2]");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0"].shard_dim = 1; },
                  "fully_shard[\"layers.0\"].shard_dim: Shard(1) is only supported on expert modules");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0.moe.experts"].shard_dim = 3; },
                  "fully_shard[\"layers.0.moe.experts\"].shard_dim: 3 outside [0, 2]");
  // Group 2 (experts mesh): hidden 7 cannot be cut in two.
  expect_rejected(
      [](Scenario& s) {
        s.dims.hidden = 7;
        s.fully_shard["layers.1.moe.experts"].shard_dim = 1;
      },
      "fully_shard[\"layers.1.moe.experts\"].shard_dim: Shard(1) needs dims.dim 16 and dims.hidden 7 divisible by the "
      "shard group size 2");
  expect_rejected(
      [](Scenario& s) {
        s.dims.dim = 18;
        s.expert_shard_size = 0;
        s.fully_shard["layers.1.moe.experts"].shard_dim = 2;
      },
      "fully_shard[\"layers.1.moe.experts\"].shard_dim: Shard(2) needs dims.dim 18");
  expect_accepted([](Scenario& s) {
    s.fully_shard["layers.0.moe.experts"].shard_dim = 1;
    s.fully_shard["layers.1.moe.experts"].shard_dim = 2;
  });
}

TEST(ScenarioValidate, PrefetchLists) {
  expect_rejected([](Scenario& s) { s.fully_shard["layers.0"].backward_prefetch = std::vector<std::string>{"self", "out2"}; },
                  "fully_shard[\"layers.0\"].backward_prefetch[1]: \"out2\" is no module of the model");
  expect_rejected(
      [](Scenario& s) {
        s.fully_shard.erase("out");
        s.fully_shard["layers.1"].forward_prefetch = std::vector<std::string>{};
        s.fully_shard["layers.0"].backward_prefetch = std::vector<std::string>{"self", "out"};
      },
      "fully_shard[\"layers.0\"].backward_prefetch[1]: \"out\" is not fully_shard-ed");
  expect_rejected([](Scenario& s) { s.fully_shard["layers.1"].forward_prefetch = std::vector<std::string>{"layers.0.attn"}; },
                  "fully_shard[\"layers.1\"].forward_prefetch[0]: \"layers.0.attn\" is not fully_shard-ed");
  expect_accepted([](Scenario& s) {
    s.fully_shard["layers.0"].forward_prefetch = std::vector<std::string>{};
    s.fully_shard[""].backward_prefetch = std::vector<std::string>{"self", "layers.0.moe.experts", ""};
  });
}

}  // namespace
}  // namespace shardfuzz::harness
