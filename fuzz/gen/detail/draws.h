// The generator's raw draws, before assembly into a Scenario: each block carries its own
// placements (wrap flags, options and prefetch lists for the block and each of its submodules),
// and prefetch targets are relative (next block, previous block's experts, ...), so that dropping
// a block during shrinking takes its fully_shard entries with it and leaves the other blocks'
// lists meaningful. Internal to fuzz/gen.
#pragma once

#include "harness/scenario/scenario.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardfuzz::fuzz::gen::detail {

// The wrappable modules of one block, relative to "layers.i". Which exist depends on the block
// (MoE: attn, moe, moe.experts, moe.router if gated or routed; MLP: attn, mlp, mlp.fc1, mlp.fc2;
// attn.q/k/v/o with attention).
enum Sub : std::size_t {
  kBlock, kAttn, kMoe, kExperts, kRouter, kMlp, kFc1, kFc2, kAttnQ, kAttnK, kAttnV, kAttnO, kNumSubs
};
inline constexpr std::array<const char*, kNumSubs> kSubPaths = {
    "", "attn", "moe", "moe.experts", "moe.router", "mlp", "mlp.fc1", "mlp.fc2", "attn.q", "attn.k", "attn.v", "attn.o"};

// Linears that can carry LoRA adapters (a draw per candidate; those the block lacks are dropped).
inline constexpr std::array<const char*, 8> kLoraCandidates = {"attn",       "attn.q",  "attn.k",  "attn.v",
                                                               "attn.o",     "moe.router", "mlp.fc1", "mlp.fc2"};

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
  bool ac_wraps_hooks = false;
  harness::BlockSpec::Kind kind = harness::BlockSpec::Kind::Mlp;
  bool gated = false;
  bool frozen = false;
  bool attention = false;
  bool norm = false;
  bool no_grad = false;
  std::vector<bool> lora;  // per kLoraCandidates
  std::vector<OptionsDraw> options;  // per Sub
  std::vector<PrefetchDraw> forward, backward;  // per Sub (used under PrefetchStyle::Random)
};

enum class PrefetchStyle { None, Torchtitan, Random };

// The run-level fields are the Scenario's own, drawn into it directly (gen::set on
// &harness::Scenario::field; expert_shard_size is any candidate until repair makes it a divisor):
// a new scenario field is one draw line in scenario_draw and nothing here. What is drawn in another
// shape than the scenario holds it (blocks with their placements, relative prefetch targets) is
// added here, and assemble turns it into the Scenario's blocks and fully_shard.
struct ScenarioDraw : harness::Scenario {
  std::vector<BlockDraw> block_draws;
  PrefetchStyle prefetch = PrefetchStyle::None;
  bool wrap_out = false;
  OptionsDraw root_options, out_options;
  PrefetchDraw out_forward, out_backward;
};

// Generation weights: the plain mix, and the mix biased toward the shape that breaks upstream
// (a gated MoE block with nested experts under AC, with a wrapped head).
struct BlockWeights {
  std::size_t mlp = 1, moe = 4, routed_moe = 2;
  std::size_t ungated = 1, gated = 3;
  std::size_t ac_none = 2, ac_non_reentrant = 2, ac_reentrant = 1, ac_selective_ops = 1;
  std::size_t thawed = 9, frozen = 1;
  std::size_t ac_inside_hooks = 2, ac_wraps_hooks = 1;
  std::size_t linear_attn = 3, attention = 1;
  std::size_t no_norm = 3, norm = 1;
  std::size_t with_grad = 12, no_grad = 1;
  std::size_t no_lora = 6, lora = 1;  // per candidate linear
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
      {6, 1},  // attn.q
      {6, 1},  // attn.k
      {6, 1},  // attn.v
      {6, 1},  // attn.o
  }};
};

struct ScenarioWeights {
  BlockWeights block;
  std::size_t out_unwrapped = 1, out_wrapped = 4;
  std::size_t input_grad = 3, input_no_grad = 1;
  std::size_t no_embed = 3, embed = 1;
  std::size_t no_final_norm = 3, final_norm = 1;
  std::size_t no_ep = 1, ep = 1;
  std::size_t no_eval = 4, eval = 1;
  std::size_t float32 = 3, bfloat16 = 1;
  std::size_t no_mixed_precision = 2, mixed_precision = 1;
};

ScenarioWeights plain_weights();
ScenarioWeights upstream_shape_weights();

}  // namespace shardfuzz::fuzz::gen::detail
