// The parameters of each module of an imported model, with their shapes as torch holds them
// (a Linear's weight is [out, in]; FSDP2 shards dim 0), named in the project's module scheme:
// "embed", "layers.i" (norm1, attn.*, norm2, mlp.* or moe.*), "norm", "out".
#pragma once

#include "harness/import/model_shape.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness::import {

struct ParamShape {
  std::string name;  // relative to the module that holds it
  std::vector<int64_t> shape;
  bool trainable = true;  // false: a LoRA adapter's frozen base
  int64_t numel() const;
};

// LoRA adapters as PEFT places them: on these projections (HF names: q_proj, k_proj, v_proj,
// o_proj, gate_proj, up_proj, down_proj), rank `rank`; their base weights frozen.
struct LoraPlan {
  int64_t rank = 0;  // 0: no adapters
  std::vector<std::string> targets;
};

// The projections LoRA may target, by their HF names.
const std::vector<std::string>& lora_target_names();

// Block `layer`'s parameters relative to it, without the routed experts (those are
// expert_params: their own FSDP group).
std::vector<ParamShape> block_params(const ModelShape& m, int64_t layer, const LoraPlan& lora = {});
// The routed experts of one MoE block, `local_experts` of them on this rank (w1, w3: [E, inner,
// hidden]; w2: [E, hidden, inner], torchtitan's GroupedExperts).
std::vector<ParamShape> expert_params(const ModelShape& m, int64_t local_experts);
std::vector<ParamShape> embedding_params(const ModelShape& m);
// The final norm and the output head (no head weight of its own when the embeddings are tied).
std::vector<ParamShape> head_params(const ModelShape& m);

int64_t total_numel(const std::vector<ParamShape>& params);

}  // namespace shardfuzz::harness::import
