// Records differentiable ops on LibTorch's autograd engine with a closure as the backward, so the
// runtime's ops, FSDP's post-backward glue and reentrant checkpointing all use the real engine
// (its ordering, hooks and final callbacks are upstream's).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace shardfuzz::autograd {

using tensor_list = std::vector<at::Tensor>;
// Given the gradients of the outputs (undefined where none flowed), returns one gradient per
// input (undefined where the input needs none).
using BackwardFn = std::function<tensor_list(const tensor_list& grad_outputs)>;

// `outputs` must have been computed from `inputs` without autograd (e.g. under NoGradGuard) and
// must be fresh tensors. When grad mode is on and any input requires grad, a node named `name`
// becomes their grad_fn; its backward calls `backward`, whose captures are released once the
// engine is done with the node. Returns the outputs (now attached to the graph).
tensor_list record_op(const std::string& name, const tensor_list& inputs, tensor_list outputs,
                      BackwardFn backward);

// Single-output convenience.
at::Tensor record_op(const std::string& name, const tensor_list& inputs, at::Tensor output,
                     std::function<tensor_list(const at::Tensor& grad_output)> backward);

// Sums `grad` down to `shape` (reverse of broadcasting).
at::Tensor reduce_to_shape(const at::Tensor& grad, at::IntArrayRef shape);

}  // namespace shardfuzz::autograd
