// Tensor work that autograd must not see: the forward math of the runtime's own differentiable
// ops (their graph is recorded by record_op, not by LibTorch), their backward formulas, and
// FSDP's copies into and out of its flat buffers.
//
// Grad mode off is what upstream's no_grad gives; it still sends every op through LibTorch's
// Autograd and ADInplaceOrView dispatch layers, which only check that nothing needs a graph and
// give views their base's autograd and version-counter metadata. Below those layers (LibTorch's
// own AutoDispatchBelowADInplaceOrView, what its generated autograd kernels use to reach the
// math) an op goes straight to its kernel: on the standard small run, 9% fewer instructions and
// about 15% less CPU (docs/performance.md, 2026-12-07). Nothing in the runtime reads a
// tensor's version counter or a view's base (SavedTensor keeps its own record), so nothing is
// lost; tensors made here are plain tensors, which record_op then attaches to the graph.
#pragma once

#include <ATen/core/LegacyTypeDispatch.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace shardfuzz::autograd {

class OutsideAutograd {
 public:
  OutsideAutograd() = default;
  OutsideAutograd(const OutsideAutograd&) = delete;
  OutsideAutograd& operator=(const OutsideAutograd&) = delete;

 private:
  torch::autograd::AutoGradMode grad_off_{false};
  at::AutoDispatchBelowADInplaceOrView below_;
};

}  // namespace shardfuzz::autograd
