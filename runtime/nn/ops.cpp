// Forward with autograd off, backward as explicit formulas over unpacked saved tensors.
#include "runtime/nn/ops.h"

#include "runtime/autograd/lambda_node.h"
#include "runtime/autograd/libtorch_formulas.h"
#include "runtime/autograd/op_support.h"
#include "runtime/autograd/saved_tensor.h"
#include "runtime/nn/shape_only.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::nn::ops {
namespace {

using autograd::record_op;
using autograd::SavedTensor;
using autograd::reduce_to_shape;
using autograd::tensor_list;

using autograd::libtorch_formulas;
using autograd::no_grad;
using autograd::wants;

at::Tensor t_last2(const at::Tensor& t) { return t.dim() < 2 ? t : t.transpose(-1, -2); }

using autograd::save_output;

// A view as a fresh tensor: same storage, offset, sizes and strides, but its own TensorImpl with
// no autograd or view metadata, so record_op can attach it (a real view of a graph tensor would
// carry its base's autograd state). Costs no memory, as upstream's views.
at::Tensor as_fresh_alias(const at::Tensor& view) {
  at::Tensor out = at::empty({0}, view.options());
  out.set_(view.storage(), view.storage_offset(), view.sizes(), view.strides());
  return out;
}

std::string sizes_str(at::IntArrayRef sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (libtorch_formulas()) return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight);
  at::Tensor out = autograd::op_output(autograd::OpKind::MatmulLike, [&] {
    return no_grad([&] { return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight); });
  });
  SavedTensor sx = wants(weight) ? SavedTensor::save(x) : SavedTensor();
  SavedTensor sw = wants(x) ? SavedTensor::save(weight) : SavedTensor();
  bool gx = wants(x), gw = wants(weight), gb = wants(bias);
  return record_op("LinearBackward", {x, weight, bias}, out,
                   [sx, sw, gx, gw, gb, xs = x.sizes().vec()](const at::Tensor& g) -> tensor_list {
                     at::Tensor dx, dw, db;
                     if (gx) dx = at::matmul(g, sw.unpack());
                     if (gw) {
                       at::Tensor xx = sx.unpack();
                       dw = at::matmul(g.reshape({-1, g.size(-1)}).t(), xx.reshape({-1, xx.size(-1)}));
                     }
                     if (gb) db = g.reshape({-1, g.size(-1)}).sum(0);
                     return {dx, dw, db};
                   });
}

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b) {
  if (libtorch_formulas()) return at::matmul(a, b);
  at::Tensor out = autograd::op_output(autograd::OpKind::MatmulLike, [&] { return no_grad([&] { return at::matmul(a, b); }); });
  SavedTensor sa = wants(b) ? SavedTensor::save(a) : SavedTensor();
  SavedTensor sb = wants(a) ? SavedTensor::save(b) : SavedTensor();
  bool ga = wants(a), gb = wants(b);
  return record_op("MatmulBackward", {a, b}, out,
                   [sa, sb, ga, gb, as = a.sizes().vec(), bs = b.sizes().vec()](const at::Tensor& g) -> tensor_list {
                     at::Tensor da, db;
                     if (ga) da = reduce_to_shape(at::matmul(g, t_last2(sb.unpack())), as);
                     if (gb) db = reduce_to_shape(at::matmul(t_last2(sa.unpack()), g), bs);
                     return {da, db};
                   });
}

at::Tensor add(const at::Tensor& a, const at::Tensor& b) {
  if (libtorch_formulas()) return a + b;
  at::Tensor out = no_grad([&] { return a + b; });
  return record_op("AddBackward", {a, b}, out,
                   [as = a.sizes().vec(), bs = b.sizes().vec(), ga = wants(a), gb = wants(b)](const at::Tensor& g) -> tensor_list {
                     return {ga ? reduce_to_shape(g, as) : at::Tensor(), gb ? reduce_to_shape(g, bs) : at::Tensor()};
                   });
}

at::Tensor mul(const at::Tensor& a, const at::Tensor& b) {
  if (libtorch_formulas()) return a * b;
  at::Tensor out = no_grad([&] { return a * b; });
  SavedTensor sa = wants(b) ? SavedTensor::save(a) : SavedTensor();
  SavedTensor sb = wants(a) ? SavedTensor::save(b) : SavedTensor();
  return record_op("MulBackward", {a, b}, out,
                   [sa, sb, as = a.sizes().vec(), bs = b.sizes().vec(), ga = wants(a), gb = wants(b)](const at::Tensor& g) -> tensor_list {
                     return {ga ? reduce_to_shape(g * sb.unpack(), as) : at::Tensor(), gb ? reduce_to_shape(g * sa.unpack(), bs) : at::Tensor()};
                   });
}

at::Tensor scale(const at::Tensor& x, double factor) {
  if (libtorch_formulas()) return x * factor;
  at::Tensor out = no_grad([&] { return x * factor; });
  return record_op("ScaleBackward", {x}, out, [factor](const at::Tensor& g) -> tensor_list { return {g * factor}; });
}

at::Tensor to_dtype(const at::Tensor& x, c10::ScalarType dtype) {
  if (x.scalar_type() == dtype) return x;
  if (libtorch_formulas()) return x.to(dtype);
  const c10::ScalarType from = x.scalar_type();
  at::Tensor out = no_grad([&] { return x.to(dtype); });
  return record_op("ToCopyBackward", {x}, out, [from](const at::Tensor& g) -> tensor_list { return {g.to(from)}; });
}

at::Tensor relu(const at::Tensor& x) {
  if (libtorch_formulas()) return at::relu(x);
  // relu is clamp_min(0) in ATen; 1.13 has the latter (structured) on the meta device only.
  at::Tensor out = no_grad([&] { return shape_only::has_values(x) ? at::relu(x) : at::clamp_min(x, 0); });
  SavedTensor so = wants(x) ? save_output(out) : SavedTensor();
  // Upstream's ReluBackward0: the gradient where the output is positive, else zero (one kernel).
  return record_op("ReluBackward", {x}, out, [so](const at::Tensor& g) -> tensor_list {
    return {at::threshold_backward(g, so.unpack(), 0)};
  });
}

at::Tensor sigmoid(const at::Tensor& x) {
  if (libtorch_formulas()) return at::sigmoid(x);
  at::Tensor out = no_grad([&] { return at::sigmoid(x); });
  SavedTensor so = wants(x) ? save_output(out) : SavedTensor();
  // Upstream's SigmoidBackward0: g * (1 - y) * y in one kernel.
  return record_op("SigmoidBackward", {x}, out, [so](const at::Tensor& g) -> tensor_list {
    return {at::sigmoid_backward(g, so.unpack())};
  });
}

at::Tensor mean(const at::Tensor& x, int64_t dim, bool keepdim) {
  if (libtorch_formulas()) return x.mean(dim, keepdim);
  at::Tensor out = no_grad([&] { return x.mean(dim, keepdim); });
  return record_op("MeanBackward", {x}, out, [xs = x.sizes().vec(), dim, keepdim](const at::Tensor& g) -> tensor_list {
    int64_t d = dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim;
    at::Tensor gg = keepdim ? g : g.unsqueeze(d);
    return {gg.expand(xs) / static_cast<double>(xs[static_cast<std::size_t>(d)])};
  });
}

at::Tensor sum(const at::Tensor& x, int64_t dim, bool keepdim) {
  if (libtorch_formulas()) return x.sum(dim, keepdim);
  at::Tensor out = no_grad([&] { return x.sum(dim, keepdim); });
  return record_op("SumBackward", {x}, out, [xs = x.sizes().vec(), dim, keepdim](const at::Tensor& g) -> tensor_list {
    int64_t d = dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim;
    at::Tensor gg = keepdim ? g : g.unsqueeze(d);
    return {gg.expand(xs).contiguous()};
  });
}

at::Tensor sum_all(const at::Tensor& x) {
  if (libtorch_formulas()) return x.sum();
  at::Tensor out = no_grad([&] { return x.sum(); });
  return record_op("SumAllBackward", {x}, out, [xs = x.sizes().vec()](const at::Tensor& g) -> tensor_list {
    return {g.expand(xs).contiguous()};
  });
}

at::Tensor unsqueeze(const at::Tensor& x, int64_t dim) {
  if (libtorch_formulas()) return x.unsqueeze(dim);
  at::Tensor out = no_grad([&] { return as_fresh_alias(x.detach().unsqueeze(dim)); });  // a view, as upstream's
  return record_op("UnsqueezeBackward", {x}, out, [dim](const at::Tensor& g) -> tensor_list { return {g.squeeze(dim)}; });
}

at::Tensor reshape(const at::Tensor& x, const std::vector<int64_t>& sizes) {
  int64_t known = 1, inferred = 0;
  bool valid = true;
  for (int64_t s : sizes) {
    if (s == -1) ++inferred;
    else if (s < 0) valid = false;
    else known *= s;
  }
  valid = valid && inferred <= 1 &&
          (inferred ? known > 0 && x.numel() % known == 0 : known == x.numel());
  if (!valid)
    throw std::invalid_argument("ops::reshape: cannot reshape " + sizes_str(x.sizes()) + " (" +
                                std::to_string(x.numel()) + " elements) to " + sizes_str(sizes));
  if (libtorch_formulas()) return x.reshape(sizes);
  at::Tensor out = no_grad([&] { return as_fresh_alias(x.detach().reshape(sizes)); });
  return record_op("ReshapeBackward", {x}, out, [xs = x.sizes().vec()](const at::Tensor& g) -> tensor_list {
    return {g.reshape(xs)};
  });
}

at::Tensor transpose(const at::Tensor& x, int64_t dim0, int64_t dim1) {
  if (x.dim() == 0 || dim0 < -x.dim() || dim0 >= x.dim() || dim1 < -x.dim() || dim1 >= x.dim())
    throw std::invalid_argument("ops::transpose: dims (" + std::to_string(dim0) + ", " + std::to_string(dim1) +
                                ") out of range for " + sizes_str(x.sizes()));
  if (libtorch_formulas()) return x.transpose(dim0, dim1);
  at::Tensor out = no_grad([&] { return as_fresh_alias(x.detach().transpose(dim0, dim1)); });
  return record_op("TransposeBackward", {x}, out, [dim0, dim1](const at::Tensor& g) -> tensor_list {
    return {g.transpose(dim0, dim1)};
  });
}

at::Tensor narrow(const at::Tensor& x, int64_t dim, int64_t start, int64_t length) {
  if (x.dim() == 0 || dim < -x.dim() || dim >= x.dim() || start < 0 || length < 0 ||
      start + length > x.size(dim))
    throw std::invalid_argument("ops::narrow: dim " + std::to_string(dim) + ", rows [" + std::to_string(start) + ", " +
                                std::to_string(start + length) + ") out of range for " + sizes_str(x.sizes()));
  if (libtorch_formulas()) return x.narrow(dim, start, length);
  at::Tensor out = no_grad([&] { return as_fresh_alias(x.detach().narrow(dim, start, length)); });
  return record_op("NarrowBackward", {x}, out, [xs = x.sizes().vec(), dim, start, length](const at::Tensor& g) -> tensor_list {
    at::Tensor full = at::zeros(xs, g.options());
    full.narrow(dim, start, length).copy_(g);
    return {full};
  });
}

at::Tensor softmax(const at::Tensor& x, int64_t dim) {
  if (libtorch_formulas()) return at::softmax(x, dim);
  at::Tensor out = no_grad([&] { return at::softmax(x, dim); });
  SavedTensor so = wants(x) ? save_output(out) : SavedTensor();
  return record_op("SoftmaxBackward", {x}, out, [so, dim](const at::Tensor& g) -> tensor_list {
    at::Tensor y = so.unpack();
    return {y * (g - (g * y).sum(dim, /*keepdim=*/true))};
  });
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (x.dim() == 0 || weight.dim() != 1 || weight.size(0) != x.size(-1))
    throw std::invalid_argument("ops::rms_norm: weight " + sizes_str(weight.sizes()) +
                                " does not match the last dim of input " + sizes_str(x.sizes()));
  if (!(eps > 0)) throw std::invalid_argument("ops::rms_norm: eps must be > 0, got " + std::to_string(eps));
  if (libtorch_formulas()) return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
  at::Tensor rstd = no_grad([&] { return at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps); });
  at::Tensor out = no_grad([&] { return x * rstd * weight; });
  const bool gx = wants(x), gw = wants(weight);
  SavedTensor sx = gx || gw ? SavedTensor::save(x) : SavedTensor();
  SavedTensor sr = gx || gw ? SavedTensor::save(rstd) : SavedTensor();
  SavedTensor sw = gx ? SavedTensor::save(weight) : SavedTensor();
  return record_op("RmsNormBackward", {x, weight}, out, [sx, sr, sw, gx, gw](const at::Tensor& g) -> tensor_list {
    // Each saved tensor is unpacked once: a checkpoint region hands every slot out exactly once.
    const at::Tensor rstd_ = sr.unpack();
    at::Tensor xhat = sx.unpack() * rstd_;
    at::Tensor dx, dw;
    if (gx) {
      at::Tensor gw_ = g * sw.unpack();
      dx = rstd_ * (gw_ - xhat * (gw_ * xhat).mean(-1, /*keepdim=*/true));
    }
    if (gw) dw = (g * xhat).reshape({-1, g.size(-1)}).sum(0);
    return {dx, dw};
  });
}

at::Tensor embedding(const at::Tensor& weight, const at::Tensor& ids) {
  if (weight.dim() != 2)
    throw std::invalid_argument("ops::embedding: weight must be [vocab, dim], got " + sizes_str(weight.sizes()));
  if (ids.scalar_type() != at::kLong)
    throw std::invalid_argument(std::string("ops::embedding: ids must be int64, got ") + c10::toString(ids.scalar_type()));
  const int64_t vocab = weight.size(0);
  if (ids.numel() > 0 && shape_only::has_values(ids)) {
    const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    if (lo < 0 || hi >= vocab)
      throw std::invalid_argument("ops::embedding: id " + std::to_string(lo < 0 ? lo : hi) + " out of range for vocab " +
                                  std::to_string(vocab));
  }
  if (libtorch_formulas()) return at::embedding(weight, ids);
  std::vector<int64_t> out_sizes = ids.sizes().vec();
  out_sizes.push_back(weight.size(1));
  at::Tensor out =
      no_grad([&] { return as_fresh_alias(shape_only::select_rows(weight, ids.reshape({-1})).view(out_sizes)); });
  SavedTensor si = wants(weight) ? SavedTensor::save(ids) : SavedTensor();
  return record_op("EmbeddingBackward", {weight}, out,
                   [si, ws = weight.sizes().vec()](const at::Tensor& g) -> tensor_list {
                     at::Tensor flat = g.reshape({-1, ws[1]});
                     return {shape_only::rows_added_to_zeros(ws, si.unpack().reshape({-1}), flat)};
                   });
}

}  // namespace shardfuzz::nn::ops
