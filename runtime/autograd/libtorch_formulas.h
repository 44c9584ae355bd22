// The unsharded reference differentiates with LibTorch's own backward formulas, not the runtime's.
// While a LibTorchFormulas scope is open on a thread, every op of nn/ops.h and nn/routing_ops.h
// (the all-to-all aside: the reference keeps every expert local) runs as the plain ATen op under
// LibTorch's autograd, with LibTorch's nodes and saved variables instead of a LambdaNode and
// SavedTensors. A defect in one of the runtime's formulas then moves the sharded run and not the
// reference, and parity_with_reference sees it; when both sides shared the formulas, a relu
// backward that let clamped inputs through trained both alike (docs/mutants.md).
//
// train::run_reference opens it for float32 computations only (a low precision rounds the two
// sides' formulas apart; reference.cpp says why). Nothing of the runtime's own graph machinery
// works inside the scope (checkpoint regions see no saved tensor, selective checkpointing no
// matmul): the reference builds without either.
#pragma once

namespace shardfuzz::autograd {

class LibTorchFormulas {
 public:
  LibTorchFormulas();
  ~LibTorchFormulas();
  LibTorchFormulas(const LibTorchFormulas&) = delete;
  LibTorchFormulas& operator=(const LibTorchFormulas&) = delete;

 private:
  bool previous_;
};

// Whether a LibTorchFormulas scope is open on this thread.
bool libtorch_formulas();

}  // namespace shardfuzz::autograd
