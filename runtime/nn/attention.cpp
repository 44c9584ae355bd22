// Heads by reshape [T, D] -> [T, H, d] and transpose -> [H, T, d]; the causal mask is a constant
// added before the softmax (-inf above the diagonal), so it costs no saved tensor.
#include "runtime/nn/attention.h"

#include "runtime/nn/ops.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace shardfuzz::nn {

Attention::Attention(int64_t dim, int64_t heads, bool causal, Init& init)
    : Module("Attention"), dim_(dim), heads_(heads), causal_(causal) {
  if (dim <= 0 || heads <= 0 || dim % heads != 0)
    throw std::invalid_argument("Attention: dim " + std::to_string(dim) + " must be a positive multiple of heads " +
                                std::to_string(heads));
  q_ = register_module("q", std::make_shared<Linear>(dim, dim, init, false));
  k_ = register_module("k", std::make_shared<Linear>(dim, dim, init, false));
  v_ = register_module("v", std::make_shared<Linear>(dim, dim, init, false));
  o_ = register_module("o", std::make_shared<Linear>(dim, dim, init, false));
}

at::Tensor Attention::forward(const at::Tensor& x) {
  if (x.dim() != 2 || x.size(1) != dim_)
    throw std::invalid_argument("module '" + display_name() + "' (Attention): input must be [T, " +
                                std::to_string(dim_) + "], got " + std::to_string(x.dim()) + "-d with last dim " +
                                std::to_string(x.dim() ? x.size(-1) : 0));
  const int64_t t = x.size(0), d = dim_ / heads_;
  auto split_heads = [&](const at::Tensor& y) { return ops::transpose(ops::reshape(y, {t, heads_, d}), 0, 1); };
  at::Tensor q = split_heads((*q_)(x));  // [H, T, d]
  at::Tensor k = split_heads((*k_)(x));
  at::Tensor v = split_heads((*v_)(x));
  at::Tensor scores = ops::scale(ops::matmul(q, ops::transpose(k, 1, 2)), 1.0 / std::sqrt(static_cast<double>(d)));
  if (causal_) {
    at::Tensor mask = at::full({t, t}, -std::numeric_limits<float>::infinity(), x.options().requires_grad(false))
                          .triu(1);  // a constant: no grad, so ops::add records nothing for it
    scores = ops::add(scores, mask);
  }
  at::Tensor ctx = ops::matmul(ops::softmax(scores, -1), v);             // [H, T, d]
  return (*o_)(ops::reshape(ops::transpose(ctx, 0, 1), {t, dim_}));      // [T, D]
}

}  // namespace shardfuzz::nn
