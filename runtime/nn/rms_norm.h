// RMSNorm over the last dim with a learned scale; the model zoo's pre-norm.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/module.h"

namespace shardfuzz::nn {

class RMSNorm final : public Module {
 public:
  // "weight" [dim] = 1 + N(0, 0.02^2): ones as upstream, plus noise drawn from `init` so a
  // parity check sees a scale that is not the identity.
  RMSNorm(int64_t dim, Init& init, double eps = 1e-6);
  at::Tensor forward(const at::Tensor& x) override;
  double eps() const { return eps_; }

 private:
  double eps_;
};

}  // namespace shardfuzz::nn
