// A CPU generator per model.
#include "runtime/nn/init.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace shardfuzz::nn {

Init::Init(uint64_t seed) : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

at::Tensor Init::normal(const std::vector<int64_t>& sizes, double std) {
  return at::randn(sizes, gen_, at::TensorOptions().dtype(at::kFloat)) * std;
}

at::Tensor Init::zeros(const std::vector<int64_t>& sizes) { return at::zeros(sizes, at::kFloat); }

}  // namespace shardfuzz::nn
