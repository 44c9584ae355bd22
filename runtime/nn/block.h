// Transformer-style blocks: x = x + attn(x); x = x + ffn(x), where ffn is a MoE layer (with its
// "experts" submodule, which can be fully_shard-ed on its own sub-mesh) or a dense MLP.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/moe.h"
#include "runtime/nn/module.h"

#include <memory>

namespace shardfuzz::nn {

class Mlp final : public Module {
 public:
  Mlp(int64_t dim, int64_t hidden, Init& init);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

class Block final : public Module {
 public:
  // moe == false builds a dense MLP block.
  Block(int64_t dim, int64_t experts, int64_t hidden, bool moe, bool gated, Init& init);
  at::Tensor forward(const at::Tensor& x) override;
  Module& attn() { return *attn_; }
  MoE* moe() { return moe_.get(); }  // null for dense blocks
  Module& ffn() { return *ffn_; }

 private:
  std::shared_ptr<Linear> attn_;
  std::shared_ptr<MoE> moe_;
  std::shared_ptr<Module> ffn_;
};

}  // namespace shardfuzz::nn
