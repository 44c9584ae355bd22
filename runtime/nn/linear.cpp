// Linear layer over ops::linear; the LoRA path is two more linears, a scale and an add, so its
// saves (x for A's grad, x A^T for B's) are what upstream's peft Linear saves.
#include "runtime/nn/linear.h"

#include "runtime/nn/ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace shardfuzz::nn {

Linear::Linear(int64_t in, int64_t out, Init& init, bool bias) : Module("Linear") {
  if (in <= 0 || out <= 0)
    throw std::invalid_argument("Linear: in and out must be positive, got in " + std::to_string(in) + ", out " +
                                std::to_string(out));
  register_parameter("weight", init.normal({out, in}, 1.0 / std::sqrt(static_cast<double>(in))), true);
  if (bias) register_parameter("bias", init.normal({out}, 0.02), true);
}

void Linear::enable_lora(int64_t rank, double alpha, Init& init) {
  const at::Tensor& w = param("weight");
  const int64_t out = w.size(0), in = w.size(1);
  if (has_lora())
    throw std::logic_error("module '" + display_name() + "' (Linear): LoRA already enabled (rank " +
                           std::to_string(lora_rank_) + ")");
  if (rank < 1 || rank > std::min(in, out))
    throw std::invalid_argument("module '" + display_name() + "' (Linear " + std::to_string(in) + " -> " +
                                std::to_string(out) + "): LoRA rank " + std::to_string(rank) + " outside [1, " +
                                std::to_string(std::min(in, out)) + "]");
  if (!std::isfinite(alpha) || alpha == 0.0)
    throw std::invalid_argument("module '" + display_name() + "' (Linear): LoRA alpha must be finite and nonzero, got " +
                                std::to_string(alpha));
  register_parameter("lora_a", init.normal({rank, in}, 1.0 / std::sqrt(static_cast<double>(in))), true);
  register_parameter("lora_b", init.normal({out, rank}, 0.02), true);
  for (auto& p : own_parameters())
    if (p.name == "weight" || p.name == "bias") p.tensor.set_requires_grad(false);
  lora_rank_ = rank;
  lora_alpha_ = alpha;
}

at::Tensor Linear::forward(const at::Tensor& x) {
  at::Tensor bias;
  for (auto& p : own_parameters())
    if (p.name == "bias") bias = p.tensor;
  at::Tensor y = ops::linear(x, param("weight"), bias);
  if (!has_lora()) return y;
  at::Tensor low = ops::linear(ops::linear(x, param("lora_a"), at::Tensor()), param("lora_b"), at::Tensor());
  return ops::add(y, ops::scale(low, lora_alpha_ / static_cast<double>(lora_rank_)));
}

}  // namespace shardfuzz::nn
