// ModelShape: a production transformer as the importer reads it from a Hugging Face config.json —
// real layer count, widths, heads, experts — independent of any architecture's key names. The
// parameter list (module_params.h) and the FSDP plan (fsdp_plan.h) are computed from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness::import {

struct AttentionShape {
  // gqa: q/k/v/o projections with kv_heads <= heads (MHA when equal); mla: DeepSeek's multi-head
  // latent attention (low-rank q and kv projections).
  enum class Kind { Gqa, Mla };
  Kind kind = Kind::Gqa;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;  // gqa: per head, q and k and v
  bool qk_norm = false;  // RMSNorm over each head's q and k (Qwen3)
  // mla only
  int64_t q_lora_rank = 0;  // 0: a full-rank q projection
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct FeedForwardShape {
  bool moe = false;
  int64_t intermediate = 0;  // a dense SwiGLU MLP's inner width
  // moe only: routed SwiGLU experts with a linear router, and optional shared experts (always on)
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t expert_intermediate = 0;
  int64_t shared_experts = 0;
  int64_t shared_intermediate = 0;  // the shared experts' inner width, all of them together
  bool shared_expert_gate = false;  // a Linear(hidden, 1) gating the shared experts (Qwen2-MoE)
};

struct ModelShape {
  std::string model_type;  // the config's model_type: qwen3_moe, qwen2_moe, mixtral, deepseek_v3, llama, qwen3
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t vocab = 0;
  bool tied_embeddings = false;
  std::string dtype = "bfloat16";  // the checkpoint's torch_dtype
  AttentionShape attention;
  FeedForwardShape dense;  // the layers that are not MoE
  FeedForwardShape moe;    // the MoE layers (moe = false when the model has none)
  std::vector<bool> layer_is_moe;

  bool is_moe(int64_t layer) const { return layer_is_moe.at(static_cast<std::size_t>(layer)); }
  int64_t moe_layers() const;
};

}  // namespace shardfuzz::harness::import
