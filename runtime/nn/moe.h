// Experts (batched weights w1 [E, D, H], w2 [E, H, D], every token through every expert, averaged)
// and the MoE layer around them. Gated: the experts' output is scaled by router scores, as in real
// MoE layers, so a checkpointed block's backward unpacks saved tensors (the product) before the
// experts' output gradient exists: the recompute then runs the experts' full forward path.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/module.h"

#include <memory>

namespace shardfuzz::nn {

class Experts final : public Module {
 public:
  Experts(int64_t dim, int64_t experts, int64_t hidden, Init& init);
  at::Tensor forward(const at::Tensor& x) override;  // x: [T, D] -> [T, D]

 private:
  int64_t experts_;
};

class MoE final : public Module {
 public:
  MoE(int64_t dim, int64_t experts, int64_t hidden, bool gated, Init& init);
  at::Tensor forward(const at::Tensor& x) override;
  Experts& experts() { return *experts_; }

 private:
  bool gated_;
  std::shared_ptr<Experts> experts_;
  std::shared_ptr<Linear> router_;
};

}  // namespace shardfuzz::nn
