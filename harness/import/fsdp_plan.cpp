// The FSDP tree of an imported model and its bytes.
#include "harness/import/fsdp_plan.h"

#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

int64_t padded(const ParamShape& p, int dim, int degree) {
  if (p.shape.empty()) return p.numel();
  const int d = dim < static_cast<int>(p.shape.size()) ? dim : 0;
  int64_t n = 1;
  for (std::size_t i = 0; i < p.shape.size(); ++i) {
    const int64_t extent = p.shape[i];
    n *= static_cast<int>(i) == d ? (extent + degree - 1) / degree * degree : extent;
  }
  return n;
}

PlannedGroup group(std::string path, std::string mesh, int degree, int dim, bool raf, std::vector<ParamShape> params,
                   const FsdpPlan& plan) {
  // PEFT freezes every parameter but the adapters.
  if (plan.lora)
    for (auto& p : params) p.trainable = p.name.find(".lora_") != std::string::npos;
  PlannedGroup g{std::move(path), std::move(mesh), degree, dim, raf, std::move(params)};
  for (const auto& p : g.params) {
    g.numel += p.numel();
    g.padded_numel += padded(p, dim, degree);
    if (p.trainable) g.trainable_padded_numel += padded(p, dim, degree);
  }
  g.all_gather_bytes = g.padded_numel * dtype_bytes(plan.param_dtype);
  g.sharded_bytes = g.padded_numel / degree * dtype_bytes(plan.storage_dtype);
  return g;
}

// torchtitan's policy: "default" reshards every block but the last after forward (its backward
// comes first), and the norm+output group never; "always" and "never" as named.
bool block_reshards(const Recipe& r, int64_t layer, int64_t layers) {
  if (r.reshard_after_forward == "default") return layer + 1 < layers;
  return r.reshard_after_forward == "always";
}

}  // namespace

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "float32") return 4;
  if (dtype == "bfloat16" || dtype == "float16") return 2;
  throw std::invalid_argument("dtype: \"" + dtype + "\" is not bfloat16, float16 or float32");
}

const PlannedGroup& FsdpPlan::group(const std::string& path) const {
  for (const auto& g : groups)
    if (g.path == path) return g;
  throw std::out_of_range("no fully_shard group \"" + path + "\" in the plan");
}

FsdpPlan plan_fsdp(const ModelShape& m, const Recipe& recipe, const LoraPlan& lora) {
  recipe.validate(m.moe.moe ? m.moe.experts : 0);
  FsdpPlan plan;
  // torchtitan builds the model in float32 (storage_dtype) and all-gathers in the mixed-precision
  // param dtype.
  plan.storage_dtype = recipe.mixed_precision ? recipe.storage_dtype : m.dtype;
  plan.param_dtype = recipe.mixed_precision ? recipe.param_dtype : m.dtype;
  plan.local_experts = m.moe.moe ? m.moe.experts / recipe.ep : 0;
  plan.lora = lora.rank > 0;
  const int dp = recipe.shard_degree();
  const bool always = recipe.reshard_after_forward == "always";
  plan.groups.push_back(group("embed", "dp_shard", dp, 0, recipe.reshard_after_forward != "never", embedding_params(m), plan));
  const int experts_dp = recipe.experts_shard_degree();
  // torchtitan: Shard(1) for the experts when dp_mod_ep x ep exceeds the experts (fewer local
  // experts than shards on dim 0).
  const int experts_dim = m.moe.moe && experts_dp * recipe.ep > m.moe.experts ? 1 : 0;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string block = "layers." + std::to_string(i);
    const bool raf = block_reshards(recipe, i, m.layers);
    std::vector<ParamShape> params = block_params(m, i, lora);
    // torchtitan shards the routed experts on their own (on dp_shard_mod_ep) only under EP; without
    // it they are the block's, with the router and the shared experts.
    if (m.is_moe(i) && recipe.ep > 1)
      plan.groups.push_back(group(block + ".moe.experts", "dp_shard_mod_ep", experts_dp, experts_dim, raf,
                                  expert_params(m, plan.local_experts), plan));
    else if (m.is_moe(i))
      for (ParamShape p : expert_params(m, plan.local_experts)) params.push_back({"moe.experts." + p.name, p.shape, p.trainable});
    plan.groups.push_back(group(block, "dp_shard", dp, 0, raf, std::move(params), plan));
  }
  plan.groups.push_back(group("norm+out", "dp_shard", dp, 0, always, head_params(m), plan));
  plan.groups.push_back(group("", "dp_shard", dp, 0, false, {}, plan));
  return plan;
}

}  // namespace shardfuzz::harness::import
