// Transformer-style blocks: x = x + attn(norm1(x)); x = x + ffn(norm2(x)). attn is one Linear (the
// recorded traces' model) or multi-head Attention; the norms are optional RMSNorms; ffn is the
// traces' dense MoE (with its "experts" submodule, which can be fully_shard-ed on its own
// sub-mesh), a routed top-k MoE (expert parallel when given an EP group) or a dense MLP.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/nn/init.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/moe.h"
#include "runtime/nn/module.h"

#include <memory>

namespace shardfuzz::nn {

class RoutedMoE;

class Mlp final : public Module {
 public:
  Mlp(int64_t dim, int64_t hidden, Init& init);
  at::Tensor forward(const at::Tensor& x) override;

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

struct BlockConfig {
  bool moe = true;      // a mixture (dense MoE, or routed when `routed`); false: a dense MLP
  bool gated = false;   // dense MoE: experts' output times router scores
  bool routed = false;  // routed top-k MoE (RoutedMoE) instead of the dense MoE
  int64_t top_k = 1;
  bool attention = false;  // multi-head Attention instead of one Linear
  int64_t heads = 1;
  bool causal = true;
  bool norm = false;  // RMSNorm "norm1" before attn and "norm2" before the feed-forward
};

struct BlockDims {
  int64_t dim = 16;
  int64_t experts = 2;
  int64_t hidden = 8;
};

class Block final : public Module {
 public:
  // `ep`: the expert-parallel group of a routed MoE (nullptr: every expert local).
  Block(const BlockDims& dims, const BlockConfig& config, Init& init,
        std::shared_ptr<comm::Communicator> ep = nullptr);
  // The traces' block: moe == false builds a dense MLP block.
  Block(int64_t dim, int64_t experts, int64_t hidden, bool moe, bool gated, Init& init);
  at::Tensor forward(const at::Tensor& x) override;
  Module& attn() { return *attn_; }
  MoE* moe() { return moe_.get(); }                // the dense MoE, or null
  RoutedMoE* routed_moe() { return routed_.get(); }  // the routed MoE, or null
  Module& ffn() { return *ffn_; }

 private:
  std::shared_ptr<Module> norm1_, norm2_;
  std::shared_ptr<Module> attn_;
  std::shared_ptr<MoE> moe_;
  std::shared_ptr<RoutedMoE> routed_;
  std::shared_ptr<Module> ffn_;
};

}  // namespace shardfuzz::nn
