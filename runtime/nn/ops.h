// Differentiable primitives of the runtime's models. Each records one autograd node and saves
// through autograd::SavedTensor, so checkpoint regions see (and drop) exactly what upstream's
// autograd would save: an add saves nothing, a product saves both operands. Views (reshape,
// transpose) are ops too — nothing else is differentiable here — and alias their input's storage
// as upstream's views do. linear and matmul produce their outputs through autograd::op_output, so
// a selective checkpoint region can keep them (OpKind::MatmulLike).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace shardfuzz::nn::ops {

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);  // x W^T + b
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b);  // batched, broadcasting
at::Tensor add(const at::Tensor& a, const at::Tensor& b);     // broadcasting
at::Tensor mul(const at::Tensor& a, const at::Tensor& b);     // broadcasting
at::Tensor scale(const at::Tensor& x, double factor);
// x in `dtype` (x itself when it already is); the gradient comes back in x's dtype.
at::Tensor to_dtype(const at::Tensor& x, c10::ScalarType dtype);
at::Tensor relu(const at::Tensor& x);
at::Tensor sigmoid(const at::Tensor& x);
at::Tensor mean(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor sum(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor sum_all(const at::Tensor& x);
at::Tensor unsqueeze(const at::Tensor& x, int64_t dim);
at::Tensor reshape(const at::Tensor& x, const std::vector<int64_t>& sizes);  // one -1 allowed
at::Tensor transpose(const at::Tensor& x, int64_t dim0, int64_t dim1);
// Rows [start, start + length) of dim `dim`; the gradient is zero outside them.
at::Tensor narrow(const at::Tensor& x, int64_t dim, int64_t start, int64_t length);
// Saves its output, as upstream's softmax.
at::Tensor softmax(const at::Tensor& x, int64_t dim);
// x / sqrt(mean(x^2 over the last dim) + eps) * weight, weight [x.size(-1)]. Saves x, the rstd and
// (when x needs a grad) the weight, as upstream's fused rms_norm.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
// Rows of weight [V, D] at int64 ids (any shape) -> ids.sizes() + [D]. Saves the ids; the ids get
// no gradient, the weight's is an index_add (repeated ids accumulate).
at::Tensor embedding(const at::Tensor& weight, const at::Tensor& ids);

}  // namespace shardfuzz::nn::ops
