// FsdpPlan: the fully_shard tree torchtitan's apply_fsdp builds for an imported model, with each
// group's bytes: the embedding, each block, each MoE block's routed experts on the dp_mod_ep mesh
// when EP > 1 (their own group; without EP they are the block's), the final norm and output
// together, and the root. The all-gather
// sizes are exact: FSDP2 pads each parameter's sharded dim to a multiple of the shard degree.
#pragma once

#include "harness/import/model_shape.h"
#include "harness/import/module_params.h"
#include "harness/import/recipe.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness::import {

struct PlannedGroup {
  std::string path;  // "embed", "layers.i", "layers.i.moe.experts", "norm+out", "" (root)
  std::string mesh;  // "dp_shard" or "dp_shard_mod_ep" (HSDP: replicated dp_replicate times)
  int shard_degree = 1;
  int shard_dim = 0;            // torchtitan shards experts on dim 1 when there are fewer local experts than shards
  bool reshard_after_forward = true;
  std::vector<ParamShape> params;  // on this rank, before sharding (routed experts: the local ones)
  int64_t numel = 0;               // of `params`
  int64_t padded_numel = 0;        // after padding the shard dim to a multiple of shard_degree
  int64_t trainable_padded_numel = 0;  // of the trainable ones (what has gradients and optimizer state)
  int64_t all_gather_bytes = 0;    // the all-gather output (and unsharded parameters): padded, param dtype
  int64_t sharded_bytes = 0;       // this rank's shard, in the storage dtype
};

struct FsdpPlan {
  std::vector<PlannedGroup> groups;  // in apply_fsdp's order (bottom-up), the root last
  std::string storage_dtype;         // what the sharded parameters are held in
  std::string param_dtype;           // what they are all-gathered in
  int64_t local_experts = 0;         // routed experts per rank (experts / ep)
  bool lora = false;                 // LoRA adapters: only they train (PEFT freezes the rest)
  const PlannedGroup& group(const std::string& path) const;
};

// Throws std::invalid_argument naming the recipe's field when the recipe does not fit the model.
FsdpPlan plan_fsdp(const ModelShape& m, const Recipe& recipe, const LoraPlan& lora = {});

int64_t dtype_bytes(const std::string& dtype);

}  // namespace shardfuzz::harness::import
