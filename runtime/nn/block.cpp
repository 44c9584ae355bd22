// Residual blocks.
#include "runtime/nn/block.h"

#include "runtime/nn/ops.h"

namespace shardfuzz::nn {

Mlp::Mlp(int64_t dim, int64_t hidden, Init& init) : Module("Mlp") {
  fc1_ = register_module("fc1", std::make_shared<Linear>(dim, hidden, init));
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden, dim, init));
}

at::Tensor Mlp::forward(const at::Tensor& x) { return (*fc2_)(ops::relu((*fc1_)(x))); }

Block::Block(int64_t dim, int64_t experts, int64_t hidden, bool moe, bool gated, Init& init) : Module("Block") {
  attn_ = register_module("attn", std::make_shared<Linear>(dim, dim, init));
  if (moe) {
    moe_ = register_module("moe", std::make_shared<MoE>(dim, experts, hidden, gated, init));
    ffn_ = moe_;
  } else {
    ffn_ = register_module("mlp", std::make_shared<Mlp>(dim, hidden, init));
  }
}

at::Tensor Block::forward(const at::Tensor& x) {
  at::Tensor h = ops::add(x, (*attn_)(x));
  return ops::add(h, (*ffn_)(h));
}

}  // namespace shardfuzz::nn
