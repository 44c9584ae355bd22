// Forward with autograd off, backward as explicit formulas over unpacked saved tensors.
#include "runtime/nn/ops.h"

#include "runtime/autograd/lambda_node.h"
#include "runtime/autograd/saved_tensor.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace shardfuzz::nn::ops {
namespace {

using autograd::record_op;
using autograd::SavedTensor;
using autograd::reduce_to_shape;
using autograd::tensor_list;

bool wants(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

template <typename F>
at::Tensor no_grad(F&& f) {
  torch::autograd::AutoGradMode off(false);
  return f();
}

at::Tensor t_last2(const at::Tensor& t) { return t.dim() < 2 ? t : t.transpose(-1, -2); }

// An op that saves its own output must save it without the grad_fn the output is about to get:
// the node would otherwise own a tensor that owns the node, a cycle that only running the node
// breaks — and a recomputed (never back-propagated) graph never runs (upstream's SavedVariable
// stores outputs the same way).
SavedTensor save_output(const at::Tensor& out) { return SavedTensor::save(out.detach()); }

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  at::Tensor out = no_grad([&] { return bias.defined() ? at::linear(x, weight, bias) : at::linear(x, weight); });
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
  at::Tensor out = no_grad([&] { return at::matmul(a, b); });
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
  at::Tensor out = no_grad([&] { return a + b; });
  return record_op("AddBackward", {a, b}, out,
                   [as = a.sizes().vec(), bs = b.sizes().vec(), ga = wants(a), gb = wants(b)](const at::Tensor& g) -> tensor_list {
                     return {ga ? reduce_to_shape(g, as) : at::Tensor(), gb ? reduce_to_shape(g, bs) : at::Tensor()};
                   });
}

at::Tensor mul(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor out = no_grad([&] { return a * b; });
  SavedTensor sa = wants(b) ? SavedTensor::save(a) : SavedTensor();
  SavedTensor sb = wants(a) ? SavedTensor::save(b) : SavedTensor();
  return record_op("MulBackward", {a, b}, out,
                   [sa, sb, as = a.sizes().vec(), bs = b.sizes().vec(), ga = wants(a), gb = wants(b)](const at::Tensor& g) -> tensor_list {
                     return {ga ? reduce_to_shape(g * sb.unpack(), as) : at::Tensor(), gb ? reduce_to_shape(g * sa.unpack(), bs) : at::Tensor()};
                   });
}

at::Tensor scale(const at::Tensor& x, double factor) {
  at::Tensor out = no_grad([&] { return x * factor; });
  return record_op("ScaleBackward", {x}, out, [factor](const at::Tensor& g) -> tensor_list { return {g * factor}; });
}

at::Tensor relu(const at::Tensor& x) {
  at::Tensor out = no_grad([&] { return at::relu(x); });
  SavedTensor so = wants(x) ? save_output(out) : SavedTensor();
  return record_op("ReluBackward", {x}, out, [so](const at::Tensor& g) -> tensor_list {
    return {g * (so.unpack() > 0).to(g.scalar_type())};
  });
}

at::Tensor sigmoid(const at::Tensor& x) {
  at::Tensor out = no_grad([&] { return at::sigmoid(x); });
  SavedTensor so = wants(x) ? save_output(out) : SavedTensor();
  return record_op("SigmoidBackward", {x}, out, [so](const at::Tensor& g) -> tensor_list {
    at::Tensor y = so.unpack();
    return {g * y * (1 - y)};
  });
}

at::Tensor mean(const at::Tensor& x, int64_t dim, bool keepdim) {
  at::Tensor out = no_grad([&] { return x.mean(dim, keepdim); });
  return record_op("MeanBackward", {x}, out, [xs = x.sizes().vec(), dim, keepdim](const at::Tensor& g) -> tensor_list {
    int64_t d = dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim;
    at::Tensor gg = keepdim ? g : g.unsqueeze(d);
    return {gg.expand(xs) / static_cast<double>(xs[static_cast<std::size_t>(d)])};
  });
}

at::Tensor sum(const at::Tensor& x, int64_t dim, bool keepdim) {
  at::Tensor out = no_grad([&] { return x.sum(dim, keepdim); });
  return record_op("SumBackward", {x}, out, [xs = x.sizes().vec(), dim, keepdim](const at::Tensor& g) -> tensor_list {
    int64_t d = dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim;
    at::Tensor gg = keepdim ? g : g.unsqueeze(d);
    return {gg.expand(xs).contiguous()};
  });
}

at::Tensor sum_all(const at::Tensor& x) {
  at::Tensor out = no_grad([&] { return x.sum(); });
  return record_op("SumAllBackward", {x}, out, [xs = x.sizes().vec()](const at::Tensor& g) -> tensor_list {
    return {g.expand(xs).contiguous()};
  });
}

at::Tensor unsqueeze(const at::Tensor& x, int64_t dim) {
  at::Tensor out = no_grad([&] { return x.unsqueeze(dim).clone(); });
  return record_op("UnsqueezeBackward", {x}, out, [dim](const at::Tensor& g) -> tensor_list { return {g.squeeze(dim)}; });
}

}  // namespace shardfuzz::nn::ops
