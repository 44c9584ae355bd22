// Linear: y = x W^T + b.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/module.h"

namespace shardfuzz::nn {

class Linear final : public Module {
 public:
  Linear(int64_t in, int64_t out, Init& init, bool bias = true);
  at::Tensor forward(const at::Tensor& x) override;
};

}  // namespace shardfuzz::nn
