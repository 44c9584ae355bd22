// What every differentiable op of the runtime needs before record_op: whether a tensor wants a
// gradient, running the forward with autograd off, and saving an op's own output. Shared by
// nn/ops.cpp and nn/routing_ops.cpp.
#pragma once

#include "runtime/autograd/outside_autograd.h"
#include "runtime/autograd/saved_tensor.h"

#include <ATen/core/Tensor.h>

namespace shardfuzz::autograd {

inline bool wants(const at::Tensor& t) { return t.defined() && t.requires_grad(); }

template <typename F>
at::Tensor no_grad(F&& f) {
  const OutsideAutograd outside;
  return f();
}

// An op that saves its own output must save it without the grad_fn the output is about to get:
// the node would otherwise own a tensor that owns the node, a cycle that only running the node
// breaks — and a recomputed (never back-propagated) graph never runs (upstream's SavedVariable
// stores outputs the same way).
inline SavedTensor save_output(const at::Tensor& out) { return SavedTensor::save(out.detach()); }

}  // namespace shardfuzz::autograd
