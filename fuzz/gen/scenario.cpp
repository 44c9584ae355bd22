// The scenario generator: independent draws composed with gen::build (their order is the shrink
// order), then assemble() and repair().
#include "fuzz/gen/scenario.h"

#include "fuzz/gen/block.h"
#include "fuzz/gen/choice.h"
#include "fuzz/gen/detail/assemble.h"
#include "fuzz/gen/repair.h"
#include "fuzz/gen/dims.h"
#include "fuzz/gen/ladders.h"
#include "fuzz/gen/faults.h"
#include "fuzz/gen/list.h"
#include "fuzz/gen/options.h"
#include "fuzz/gen/precision.h"
#include "fuzz/gen/prefetch.h"
#include "fuzz/gen/world.h"

#include <rapidcheck/gen/Build.h>
#include <rapidcheck/gen/Create.h>
#include <rapidcheck/gen/Select.h>
#include <rapidcheck/gen/Transform.h>

#include "runtime/semantics/profile.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz::gen {

namespace detail {

ScenarioWeights plain_weights() { return {}; }

ScenarioWeights upstream_shape_weights() {
  ScenarioWeights w;
  w.block.mlp = 0;
  w.block.ungated = 0;
  w.block.ac_none = 0;
  w.block.wrap[kBlock] = {0, 1};
  w.block.wrap[kExperts] = {0, 1};
  w.out_unwrapped = 0;
  return w;
}

namespace {

// The block list: 1..max_blocks blocks, fewer at small sizes.
rc::Gen<std::vector<BlockDraw>> blocks(const GenConfig& config, const BlockWeights& weights) {
  const rc::Gen<BlockDraw> one = block(weights);
  const int max_blocks = config.max_blocks;
  return rc::Gen<std::vector<BlockDraw>>([one, max_blocks](const rc::Random& random, int size) {
    const int scaled = 1 + (max_blocks - 1) * std::min(std::max(size, 0), 50) / 50;
    return bounded_vector<BlockDraw>(1, static_cast<std::size_t>(scaled), one)(random, size);
  });
}

rc::Gen<semantics::Profile> profile(const GenConfig& config) {
  // A failure is reported under the profile it was found in: the profile never shrinks.
  const auto names = config.profile.empty() ? rc::gen::element<std::string>("torch-2.11", "torch-2.9", "torch-2.7", "strict")
                                            : rc::gen::just(config.profile);
  return rc::gen::map(names, [](const std::string& name) { return semantics::Profile::named(name); });
}

rc::Gen<uint64_t> seed() {
  return rc::Gen<uint64_t>([](const rc::Random& random, int) { return rc::shrinkable::just(rc::Random(random).next()); });
}

// The optimizer by kind. AdamW's update g / (|g| + eps) is ill-conditioned where |g| ~ eps:
// reduction-order rounding of a near-zero gradient flips an lr-sized step, so a larger eps (and a
// smaller lr) keeps parity meaningful.
rc::Gen<train::OptimizerConfig> optimizer() {
  using Kind = train::OptimizerConfig::Kind;
  return rc::gen::map(rc::gen::pair(weighted_choice<Kind>({{3, Kind::Sgd}, {1, Kind::AdamW}}),
                                    weighted_choice(ladders::kWeightDecay)),
                      [](const std::pair<Kind, double>& drawn) {
                        train::OptimizerConfig o;
                        o.kind = drawn.first;
                        o.weight_decay = drawn.second;
                        if (o.kind == Kind::AdamW) {
                          o.eps = 1e-3;
                          o.lr = 0.01;
                        }
                        return o;
                      });
}

rc::Gen<ScenarioDraw> scenario_draw(const GenConfig& config, const ScenarioWeights& w) {
  using harness::Scenario;
  return rc::gen::build<ScenarioDraw>(
      rc::gen::set(&ScenarioDraw::block_draws, blocks(config, w.block)),
      rc::gen::set(&ScenarioDraw::wrap_out, flag(w.out_unwrapped, w.out_wrapped)),
      rc::gen::set(&ScenarioDraw::prefetch, prefetch_style()),
      rc::gen::set(&Scenario::world_size, world_size(config)),
      rc::gen::set(&Scenario::expert_shard_size, expert_shard_size()),
      rc::gen::set(&Scenario::dims, dims()),
      rc::gen::set(&Scenario::steps, steps(config.max_steps)),
      rc::gen::set(&ScenarioDraw::root_options, dense_options()),
      rc::gen::set(&ScenarioDraw::out_options, dense_options()),
      rc::gen::set(&ScenarioDraw::out_forward, prefetch_list()),
      rc::gen::set(&ScenarioDraw::out_backward, prefetch_list()),
      rc::gen::set(&Scenario::optimizer, optimizer()),
      rc::gen::set(&Scenario::input_requires_grad, flag(w.input_no_grad, w.input_grad)),
      rc::gen::set(&Scenario::embed, flag(w.no_embed, w.embed)),
      rc::gen::set(&Scenario::final_norm, flag(w.no_final_norm, w.final_norm)),
      rc::gen::set(&Scenario::expert_parallel, flag(w.no_ep, w.ep)),
      rc::gen::set(&Scenario::micro_batches, weighted_choice(ladders::kMicroBatches)),
      rc::gen::set(&Scenario::forwards_per_backward, weighted_choice(ladders::kForwardsPerBackward)),
      rc::gen::set(&Scenario::eval_forward, flag(w.no_eval, w.eval)),
      rc::gen::set(&Scenario::dtype, model_dtype(w.float32, w.bfloat16)),
      rc::gen::set(&Scenario::mixed_precision, mixed_precision(w.no_mixed_precision, w.mixed_precision)),
      rc::gen::set(&Scenario::profile, profile(config)),
      rc::gen::set(&Scenario::seed, seed()),
      rc::gen::set(&Scenario::faults, fault_plan(config.faults, config.fault_kinds)),
      // Generated devices are unbounded: a drawn budget would fail by construction.
      rc::gen::set(&Scenario::device_memory_bytes, rc::gen::just<int64_t>(0)));
}

}  // namespace
}  // namespace detail

rc::Gen<harness::Scenario> scenario(const GenConfig& config) {
  if (config.max_blocks < 1 || config.max_blocks > harness::ScenarioLimits::kMaxBlocks)
    throw std::invalid_argument("GenConfig.max_blocks: " + std::to_string(config.max_blocks) + " outside [1, " +
                                std::to_string(harness::ScenarioLimits::kMaxBlocks) + "]");
  if (config.max_steps < 1 || config.max_steps > harness::ScenarioLimits::kMaxSteps)
    throw std::invalid_argument("GenConfig.max_steps: " + std::to_string(config.max_steps) + " outside [1, " +
                                std::to_string(harness::ScenarioLimits::kMaxSteps) + "]");
  if (config.world < 0 || config.world > harness::ScenarioLimits::kMaxWorld)
    throw std::invalid_argument("GenConfig.world: " + std::to_string(config.world) + " outside [0, " +
                                std::to_string(harness::ScenarioLimits::kMaxWorld) + "]");
  if (!config.profile.empty()) {
    try {
      semantics::Profile::named(config.profile);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("GenConfig.profile: ") + e.what());
    }
  }
  const auto draws = rc::gen::weightedOneOf<detail::ScenarioDraw>({
      {3, detail::scenario_draw(config, detail::plain_weights())},
      {1, detail::scenario_draw(config, detail::upstream_shape_weights())},
  });
  return rc::gen::map(draws, [](const detail::ScenarioDraw& d) { return repair(detail::assemble(d)); });
}

}  // namespace shardfuzz::fuzz::gen
