// What an op saves for backward goes through here, so an activation-checkpoint region can drop it
// at save time and recompute it at the first unpack: C++ LibTorch has no saved-tensor hooks of its
// own (upstream's take Python objects), so the runtime's ops carry their own.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

namespace shardfuzz::autograd {

// The op family an output comes from, as a selective-checkpoint policy sees it (upstream's
// policy_fn is given the aten op; the runtime's ops say which family they belong to).
enum class OpKind { Other, MatmulLike };

// The interface of torch.autograd.graph.saved_tensors_hooks, for the runtime's ops.
class SavedTensorHooks {
 public:
  virtual ~SavedTensorHooks() = default;
  // Returns a slot to unpack from later, or nullopt to keep the tensor in the SavedTensor itself.
  virtual std::optional<std::size_t> pack(const at::Tensor& tensor) = 0;
  virtual at::Tensor unpack(std::size_t slot) = 0;
  // Produces the output of an op of `kind`; `compute` runs its forward (autograd off). Plain hooks
  // just run it; a selective checkpoint region keeps must-save outputs in forward and hands them
  // back in recompute instead of running `compute` (upstream's caching dispatch modes).
  virtual at::Tensor op_output(OpKind kind, const std::function<at::Tensor()>& compute) { return compute(); }
};

class SavedTensor {
 public:
  SavedTensor() = default;
  // Packs through the innermost active hooks of this thread, if any.
  static SavedTensor save(const at::Tensor& tensor);
  at::Tensor unpack() const;

 private:
  at::Tensor value_;
  std::shared_ptr<SavedTensorHooks> hooks_;
  std::size_t slot_ = 0;
};

// An op's forward output through the innermost active hooks of this thread (just `compute()` when
// none are active). Ops whose output a selective policy may keep call this instead of computing
// directly; the result is a fresh tensor for record_op.
at::Tensor op_output(OpKind kind, const std::function<at::Tensor()>& compute);

// Makes `hooks` the innermost active hooks of this thread for the guard's lifetime.
class SavedTensorHooksGuard {
 public:
  explicit SavedTensorHooksGuard(std::shared_ptr<SavedTensorHooks> hooks);
  ~SavedTensorHooksGuard();
  SavedTensorHooksGuard(const SavedTensorHooksGuard&) = delete;
  SavedTensorHooksGuard& operator=(const SavedTensorHooksGuard&) = delete;

 private:
  std::shared_ptr<SavedTensorHooks> previous_;
};

}  // namespace shardfuzz::autograd
