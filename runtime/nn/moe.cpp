// experts(x) = sum_e relu(x W1[e]) W2[e] / E; gated MoE multiplies by mean(sigmoid(router(x))).
#include "runtime/nn/moe.h"

#include "runtime/nn/ops.h"

#include <cmath>

namespace shardfuzz::nn {

Experts::Experts(int64_t dim, int64_t experts, int64_t hidden, Init& init) : Module("Experts"), experts_(experts) {
  register_parameter("w1", init.normal({experts, dim, hidden}, 1.0 / std::sqrt(static_cast<double>(dim))), true);
  register_parameter("w2", init.normal({experts, hidden, dim}, 1.0 / std::sqrt(static_cast<double>(hidden))), true);
}

at::Tensor Experts::forward(const at::Tensor& x) {
  at::Tensor h = ops::relu(ops::matmul(ops::unsqueeze(x, 0), param("w1")));  // [E, T, H]
  at::Tensor y = ops::sum(ops::matmul(h, param("w2")), 0, false);             // [T, D]
  return ops::scale(y, 1.0 / static_cast<double>(experts_));
}

MoE::MoE(int64_t dim, int64_t experts, int64_t hidden, bool gated, Init& init) : Module("MoE"), gated_(gated) {
  experts_ = register_module("experts", std::make_shared<Experts>(dim, experts, hidden, init));
  if (gated_) router_ = register_module("router", std::make_shared<Linear>(dim, experts, init));
}

at::Tensor MoE::forward(const at::Tensor& x) {
  at::Tensor y = (*experts_)(x);
  if (!gated_) return y;
  return ops::mul(y, ops::mean(ops::sigmoid((*router_)(x)), -1, true));
}

}  // namespace shardfuzz::nn
