// Multi-head self-attention over one sequence, built from the runtime's ops so every step is an
// autograd node that checkpoint regions see: the model zoo's attention layer.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/module.h"

#include <memory>

namespace shardfuzz::nn {

class Attention final : public Module {
 public:
  // Children "q", "k", "v", "o": Linear(dim, dim, bias=false), built in that order from `init`.
  Attention(int64_t dim, int64_t heads, bool causal, Init& init);
  // x: [T, dim] -> [T, dim]: softmax(q k^T / sqrt(dim / heads) [+ causal mask]) v per head, then o.
  at::Tensor forward(const at::Tensor& x) override;

  int64_t heads() const { return heads_; }
  bool causal() const { return causal_; }

 private:
  int64_t dim_, heads_;
  bool causal_;
  std::shared_ptr<Linear> q_, k_, v_, o_;
};

}  // namespace shardfuzz::nn
