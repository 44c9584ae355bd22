// A CPU generator per model (or, shape-only, meta tensors and no draws).
#include "runtime/nn/init.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace shardfuzz::nn {

Init::Init(uint64_t seed, bool shape_only)
    : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)), shape_only_(shape_only) {}

at::Tensor Init::normal(const std::vector<int64_t>& sizes, double std) {
  if (shape_only_) return at::empty(sizes, at::TensorOptions().dtype(at::kFloat).device(at::kMeta));
  return at::randn(sizes, gen_, at::TensorOptions().dtype(at::kFloat)) * std;
}

at::Tensor Init::zeros(const std::vector<int64_t>& sizes) {
  return at::zeros(sizes, at::TensorOptions().dtype(at::kFloat).device(shape_only_ ? at::kMeta : at::kCPU));
}

}  // namespace shardfuzz::nn
