// What an op saves for backward goes through here, so an activation-checkpoint region can drop it
// at save time and recompute it at the first unpack: C++ LibTorch has no saved-tensor hooks of its
// own (upstream's take Python objects), so the runtime's ops carry their own.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <optional>

namespace shardfuzz::autograd {

// The interface of torch.autograd.graph.saved_tensors_hooks, for the runtime's ops.
class SavedTensorHooks {
 public:
  virtual ~SavedTensorHooks() = default;
  // Returns a slot to unpack from later, or nullopt to keep the tensor in the SavedTensor itself.
  virtual std::optional<std::size_t> pack(const at::Tensor& tensor) = 0;
  virtual at::Tensor unpack(std::size_t slot) = 0;
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
