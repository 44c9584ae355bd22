// The model of the runtime's tests, of the conformance traces and of the zoo: an optional token
// embedding "embed", `layers.i` blocks, an optional final "norm", then an `out` head; the traces'
// loss is the sum of the output. Built as a plain function of plain data.
#pragma once

#include "runtime/nn/block.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/module.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace shardfuzz::nn {

struct ModelConfig {
  int blocks = 4;  // used when `layers` is empty: `blocks` blocks of (moe, gated)
  int64_t dim = 16;
  int64_t experts = 2;
  int64_t hidden = 8;
  bool moe = true;     // MoE blocks (else dense MLP blocks)
  bool gated = false;  // gated MoE (experts' output times router scores)
  uint64_t seed = 0;
  std::vector<BlockConfig> layers;  // per-block kinds; overrides blocks/moe/gated when non-empty
  int64_t vocab = 0;                // > 0: a token embedding "embed" first (inputs are token ids)
  bool final_norm = false;          // an RMSNorm "norm" before "out"
  std::shared_ptr<comm::Communicator> ep;  // expert-parallel group of routed MoE blocks, or null
  bool shape_only = false;  // parameters on the meta device: real sizes, no values (Init)
};

// Runs its children in order.
class Sequential final : public Module {
 public:
  Sequential() : Module("Sequential") {}
  at::Tensor forward(const at::Tensor& x) override;
  std::size_t size() const { return children().size(); }
  Module& at(std::size_t i) { return *children()[i].second; }
};

class Model final : public Module {
 public:
  explicit Model(const ModelConfig& config);
  at::Tensor forward(const at::Tensor& x) override;
  const ModelConfig& config() const { return config_; }
  int num_blocks() const { return static_cast<int>(layers_->size()); }
  Block& block(int i) { return static_cast<Block&>(layers_->at(static_cast<std::size_t>(i))); }
  Sequential& layers() { return *layers_; }
  Linear& out() { return *out_; }

 private:
  ModelConfig config_;
  std::shared_ptr<Module> embed_, norm_;
  std::shared_ptr<Sequential> layers_;
  std::shared_ptr<Linear> out_;
};

// The loss the traces use: sum of the model's output.
at::Tensor sum_loss(const at::Tensor& output);
// The mean of the model's output.
at::Tensor mean_loss(const at::Tensor& output);

}  // namespace shardfuzz::nn
