// Linear layer over ops::linear.
#include "runtime/nn/linear.h"

#include "runtime/nn/ops.h"

#include <cmath>

namespace shardfuzz::nn {

Linear::Linear(int64_t in, int64_t out, Init& init, bool bias) : Module("Linear") {
  register_parameter("weight", init.normal({out, in}, 1.0 / std::sqrt(static_cast<double>(in))), true);
  if (bias) register_parameter("bias", init.normal({out}, 0.02), true);
}

at::Tensor Linear::forward(const at::Tensor& x) {
  at::Tensor bias;
  for (auto& p : own_parameters())
    if (p.name == "bias") bias = p.tensor;
  return ops::linear(x, param("weight"), bias);
}

}  // namespace shardfuzz::nn
