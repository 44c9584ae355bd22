// Differentiable primitives of the runtime's models. Each records one autograd node and saves
// through autograd::SavedTensor, so checkpoint regions see (and drop) exactly what upstream's
// autograd would save: an add saves nothing, a product saves both operands.
#pragma once

#include <ATen/core/Tensor.h>

namespace shardfuzz::nn::ops {

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);  // x W^T + b
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b);  // batched, broadcasting
at::Tensor add(const at::Tensor& a, const at::Tensor& b);     // broadcasting
at::Tensor mul(const at::Tensor& a, const at::Tensor& b);     // broadcasting
at::Tensor scale(const at::Tensor& x, double factor);
at::Tensor relu(const at::Tensor& x);
at::Tensor sigmoid(const at::Tensor& x);
at::Tensor mean(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor sum(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor sum_all(const at::Tensor& x);
at::Tensor unsqueeze(const at::Tensor& x, int64_t dim);

}  // namespace shardfuzz::nn::ops
