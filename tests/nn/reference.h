// Shared by the nn tests: leaves, gradients through LibTorch's engine, and closeness checks, so
// each runtime op or module is compared with the same computation in plain LibTorch autograd.
#pragma once

#include "runtime/autograd/saved_tensor.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardfuzz::nn::testing {

inline at::Tensor random(const std::vector<int64_t>& sizes, uint64_t seed, at::ScalarType dtype = at::kDouble) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(sizes, gen, at::TensorOptions().dtype(dtype));
}

// A fresh leaf that requires grad, with `t`'s values.
inline at::Tensor leaf(const at::Tensor& t) {
  at::Tensor x = t.detach().clone();
  x.set_requires_grad(true);
  return x;
}

// Gradients of `loss` w.r.t. `wrt` (undefined where none flows).
inline std::vector<at::Tensor> grads(const at::Tensor& loss, const std::vector<at::Tensor>& wrt) {
  return torch::autograd::grad({loss}, wrt, /*grad_outputs=*/{}, /*retain_graph=*/false, /*create_graph=*/false,
                               /*allow_unused=*/true);
}

inline void expect_close(const at::Tensor& got, const at::Tensor& want, double tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_TRUE(want.defined()) << what << ": reference undefined";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const double err = (got.detach().to(at::kDouble) - want.detach().to(at::kDouble)).abs().max().item<double>();
  EXPECT_LE(err, tol) << what << ": max abs error " << err;
}

// Counts what ops save while active (keeps every tensor, so backward still works).
struct CountingHooks final : autograd::SavedTensorHooks {
  std::optional<std::size_t> pack(const at::Tensor&) override {
    ++saves;
    return std::nullopt;
  }
  at::Tensor unpack(std::size_t) override { throw std::logic_error("counting hooks never unpack"); }
  std::size_t saves = 0;
};

}  // namespace shardfuzz::nn::testing
