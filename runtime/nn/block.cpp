// Residual blocks.
#include "runtime/nn/block.h"

#include "runtime/nn/attention.h"
#include "runtime/nn/ops.h"
#include "runtime/nn/rms_norm.h"
#include "runtime/nn/routed_moe.h"

namespace shardfuzz::nn {

Mlp::Mlp(int64_t dim, int64_t hidden, Init& init) : Module("Mlp") {
  fc1_ = register_module("fc1", std::make_shared<Linear>(dim, hidden, init));
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden, dim, init));
}

at::Tensor Mlp::forward(const at::Tensor& x) { return (*fc2_)(ops::relu((*fc1_)(x))); }

// Init is consumed in module order (norm1, attn, norm2, ffn), so a block without the new parts
// draws exactly what the traces' block draws.
Block::Block(const BlockDims& d, const BlockConfig& c, Init& init, std::shared_ptr<comm::Communicator> ep)
    : Module("Block") {
  if (c.norm) norm1_ = register_module("norm1", std::make_shared<RMSNorm>(d.dim, init));
  if (c.attention)
    attn_ = register_module("attn", std::make_shared<Attention>(d.dim, c.heads, c.causal, init));
  else
    attn_ = register_module("attn", std::make_shared<Linear>(d.dim, d.dim, init));
  if (c.norm) norm2_ = register_module("norm2", std::make_shared<RMSNorm>(d.dim, init));
  if (c.moe && c.routed) {
    routed_ = register_module("moe", std::make_shared<RoutedMoE>(d.dim, d.experts, d.hidden, c.top_k, init, ep));
    ffn_ = routed_;
  } else if (c.moe) {
    moe_ = register_module("moe", std::make_shared<MoE>(d.dim, d.experts, d.hidden, c.gated, init));
    ffn_ = moe_;
  } else {
    ffn_ = register_module("mlp", std::make_shared<Mlp>(d.dim, d.hidden, init));
  }
}

Block::Block(int64_t dim, int64_t experts, int64_t hidden, bool moe, bool gated, Init& init)
    : Block(BlockDims{dim, experts, hidden}, BlockConfig{moe, gated}, init) {}

at::Tensor Block::forward(const at::Tensor& x) {
  at::Tensor h = ops::add(x, (*attn_)(norm1_ ? (*norm1_)(x) : x));
  return ops::add(h, (*ffn_)(norm2_ ? (*norm2_)(h) : h));
}

}  // namespace shardfuzz::nn
