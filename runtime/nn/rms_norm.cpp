// RMSNorm over ops::rms_norm.
#include "runtime/nn/rms_norm.h"

#include "runtime/nn/ops.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::nn {

RMSNorm::RMSNorm(int64_t dim, Init& init, double eps) : Module("RMSNorm"), eps_(eps) {
  if (dim <= 0) throw std::invalid_argument("RMSNorm: dim must be positive, got " + std::to_string(dim));
  if (!(eps > 0)) throw std::invalid_argument("RMSNorm: eps must be > 0, got " + std::to_string(eps));
  register_parameter("weight", init.normal({dim}, 0.02) + 1.0, true);
}

at::Tensor RMSNorm::forward(const at::Tensor& x) {
  try {
    return ops::rms_norm(x, param("weight"), eps_);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("module '" + display_name() + "' (RMSNorm): " + e.what());
  }
}

}  // namespace shardfuzz::nn
