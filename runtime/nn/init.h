// Deterministic parameter init from a per-model generator, so every rank and the unsharded
// reference build bit-identical models from one seed (LibTorch's default generator is
// process-global and rank threads would race on it).
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace shardfuzz::nn {

class Init {
 public:
  // shape_only: tensors on the meta device (sizes, no draws), for a shape-only run.
  explicit Init(uint64_t seed, bool shape_only = false);
  at::Tensor normal(const std::vector<int64_t>& sizes, double std);
  at::Tensor zeros(const std::vector<int64_t>& sizes);

 private:
  at::Generator gen_;
  bool shape_only_ = false;
};

}  // namespace shardfuzz::nn
