// The generator's raw draws, before assembly into a Scenario: each block carries its own
// placements (wrap flags, options and prefetch lists for the block and each of its submodules),
// and prefetch targets are relative (next block, previous block's experts, ...), so that dropping
// a block during shrinking takes its fully_shard entries with it and leaves the other blocks'
// lists meaningful. Internal to fuzz/gen.
#pragma once

#include "harness/scenario.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardfuzz::fuzz::gen::detail {

// The wrappable modules of one block, relative to "layers.i". Which exist depends on the block
// (MoE: attn, moe, moe.experts, moe.router if gated; MLP: attn, mlp, mlp.fc1, mlp.fc2).
enum Sub : std::size_t { kBlock, kAttn, kMoe, kExperts, kRouter, kMlp, kFc1, kFc2, kNumSubs };
inline constexpr std::array<const char*, kNumSubs> kSubPaths = {
    "", "attn", "moe", "moe.experts", "moe.router", "mlp", "mlp.fc1", "mlp.fc2"};

// A prefetch target, relative to the placement whose list names it.
struct TargetDraw {
  enum class Kind { Self, Block, Out };
  Kind kind = Kind::Self;
  int offset = 0;       // Block: index relative to the naming block (out counts as block n)
  std::size_t sub = 0;  // Block: which module of that block (Sub)
};
using PrefetchDraw = std::optional<std::vector<TargetDraw>>;  // absent, empty, or targets

// fully_shard options of one placement, without the lists (ShardSpec's lists stay unset).
using OptionsDraw = harness::ShardSpec;

struct BlockDraw {
  std::vector<bool> wrap;  // per Sub: fully_shard this module (kBlock: the block itself)
  ac::CheckpointMode ac = ac::CheckpointMode::None;
  harness::BlockSpec::Kind kind = harness::BlockSpec::Kind::Mlp;
  bool gated = false;
  bool frozen = false;
  std::vector<OptionsDraw> options;  // per Sub
  std::vector<PrefetchDraw> forward, backward;  // per Sub (used under PrefetchStyle::Random)
};

enum class PrefetchStyle { None, Torchtitan, Random };

struct ScenarioDraw {
  std::vector<BlockDraw> blocks;
  PrefetchStyle prefetch = PrefetchStyle::None;
  bool wrap_out = false;
  int world_size = 1;
  int expert_shard_size = 0;  // before repair: any of the candidates, made a divisor by repair
  harness::Dims dims;
  int steps = 1;
  OptionsDraw root_options, out_options;
  PrefetchDraw out_forward, out_backward;
  train::OptimizerConfig::Kind optimizer = train::OptimizerConfig::Kind::Sgd;
  std::string profile;
  uint64_t seed = 0;
};

// Generation weights: the plain mix, and the mix biased toward the shape that breaks upstream
// (a gated MoE block with nested experts under AC, with a wrapped head).
struct BlockWeights {
  std::size_t mlp = 1, moe = 4;
  std::size_t ungated = 1, gated = 3;
  std::size_t ac_none = 2, ac_non_reentrant = 2, ac_reentrant = 1;
  std::size_t thawed = 9, frozen = 1;
  // per Sub: weight of (unwrapped, wrapped)
  std::array<std::pair<std::size_t, std::size_t>, kNumSubs> wrap = {{
      {1, 5},  // block
      {4, 1},  // attn
      {4, 1},  // moe
      {1, 3},  // moe.experts
      {5, 1},  // moe.router
      {4, 1},  // mlp
      {4, 1},  // mlp.fc1
      {4, 1},  // mlp.fc2
  }};
};

struct ScenarioWeights {
  BlockWeights block;
  std::size_t out_unwrapped = 1, out_wrapped = 4;
};

ScenarioWeights plain_weights();
ScenarioWeights upstream_shape_weights();

}  // namespace shardfuzz::fuzz::gen::detail
