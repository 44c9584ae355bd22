// Building an imported model's scenario.
#include "harness/import/imported_scenario.h"

#include "runtime/nn/routing_assumption.h"

#include <algorithm>
#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

ac::CheckpointMode checkpoint_of(const std::string& mode) {
  if (mode == "full") return ac::CheckpointMode::NonReentrant;  // torchtitan's checkpoint_wrapper
  if (mode == "selective") return ac::CheckpointMode::SelectiveOps;
  return ac::CheckpointMode::None;
}

// Small widths that keep the structure: every expert (EP partitions them), top-k as configured,
// enough tokens that each expert can receive some.
Dims small_dims(const ModelShape& m) {
  Dims d;
  d.dim = 8;
  d.hidden = 8;
  d.heads = 1;
  d.experts = m.moe.moe ? m.moe.experts : 2;
  d.top_k = m.moe.moe ? m.moe.top_k : 1;
  d.tokens = 16;
  d.vocab = 16;
  return d;
}

// The widths the schema holds, as the model has them; tokens are the recipe's per rank.
Dims real_dims(const ModelShape& m, const Recipe& recipe) {
  Dims d;
  d.dim = m.hidden;
  d.hidden = m.moe.moe ? m.moe.expert_intermediate : m.dense.intermediate;
  d.heads = std::max<int64_t>(1, m.attention.heads);
  d.experts = m.moe.moe ? m.moe.experts : 2;
  d.top_k = m.moe.moe ? m.moe.top_k : 1;
  d.tokens = recipe.local_batch_size * recipe.seq_len;
  d.vocab = m.vocab;
  return d;
}

void use_real_widths(ImportedScenario& out, const ModelShape& m, const Recipe& recipe, bool shape_only, double routing_skew) {
  Scenario& s = out.scenario;
  s.dims = real_dims(m, recipe);
  if (recipe.mixed_precision) {
    s.dtype = recipe.storage_dtype;
    s.mixed_precision = MixedPrecisionSpec{recipe.param_dtype, recipe.reduce_dtype, false};
  } else {
    s.dtype = m.dtype;
  }
  if (!shape_only) {
    try {
      s.validate();
      out.execution = "with data at the real widths (they fit a run with data)";
      return;
    } catch (const std::invalid_argument& e) {
      out.execution = std::string("shape-only at the real widths: a run with data would not fit (") + e.what() + ")";
    }
  } else {
    out.execution = "shape-only at the real widths (asked for)";
  }
  s.shape_only = ShapeOnlySpec{routing_skew};
  // The routing assumed: a MoE's, or a skew asked for (stated whatever the model).
  if (m.moe.moe || routing_skew > 0) out.execution += "; routing " + nn::RoutingAssumption{routing_skew}.describe();
}

}  // namespace

ImportedScenario imported_scenario(const ModelShape& m, const Recipe& recipe, const FsdpPlan& plan, const std::string& profile,
                                   Widths widths, bool shape_only, double routing_skew) {
  if (m.layers > ScenarioLimits::kMaxBlocks)
    throw std::invalid_argument("num_hidden_layers: " + std::to_string(m.layers) + " layers; a scenario holds at most " +
                                std::to_string(ScenarioLimits::kMaxBlocks));
  if (recipe.world > ScenarioLimits::kMaxWorld)
    throw std::invalid_argument("world: " + std::to_string(recipe.world) + "; a scenario's world is at most " +
                                std::to_string(ScenarioLimits::kMaxWorld));
  ImportedScenario out;
  Scenario& s = out.scenario;
  s.name = "imported-" + m.model_type;
  s.world_size = recipe.world;
  s.profile = semantics::Profile::named(profile);
  s.steps = 1;
  s.dims = small_dims(m);
  s.embed = true;
  s.final_norm = true;
  s.loss = "mean";
  const bool ep = recipe.ep > 1;
  s.expert_parallel = ep;
  s.expert_shard_size = ep ? recipe.experts_shard_degree() : 0;
  for (const PlannedGroup& g : plan.groups) {
    const std::string path = g.path == "norm+out" ? "out" : g.path;
    ShardSpec spec;
    if (!g.path.empty())
      spec.reshard_after_forward = g.reshard_after_forward ? fsdp::ReshardAfterForward::yes() : fsdp::ReshardAfterForward::no();
    if (g.mesh == "dp_shard_mod_ep") spec.mesh = "experts";
    s.fully_shard[path] = spec;
    out.plan_group[path] = g.path;
  }
  for (int64_t i = 0; i < m.layers; ++i) {
    BlockSpec b;
    b.kind = m.is_moe(i) ? BlockSpec::Kind::RoutedMoe : BlockSpec::Kind::Mlp;
    b.ac = checkpoint_of(recipe.ac);
    s.blocks.push_back(b);
    if (!ep) continue;
    // torchtitan under EP: each block prefetches the next block and its experts forward, the
    // previous ones backward.
    const std::string next = "layers." + std::to_string(i + 1), prev = "layers." + std::to_string(i - 1);
    auto with_experts = [&](const std::string& block, int64_t layer) {
      std::vector<std::string> list = {block};
      if (m.is_moe(layer)) list.push_back(block + ".moe.experts");
      return list;
    };
    ShardSpec& spec = s.fully_shard["layers." + std::to_string(i)];
    if (i + 1 < m.layers) spec.forward_prefetch = with_experts(next, i + 1);
    if (i > 0) spec.backward_prefetch = with_experts(prev, i - 1);
  }
  if (widths == Widths::Real || shape_only)
    use_real_widths(out, m, recipe, shape_only, routing_skew);
  else
    out.execution = "with data at small widths (the real structure and schedule; bytes from the plan)";
  s.validate();
  return out;
}

}  // namespace shardfuzz::harness::import
