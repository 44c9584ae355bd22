// Thread-local stack of saved-tensor hooks (one active at a time, as upstream's default hooks).
#include "runtime/autograd/saved_tensor.h"

namespace shardfuzz::autograd {
namespace {
thread_local std::shared_ptr<SavedTensorHooks> t_hooks;
}

SavedTensor SavedTensor::save(const at::Tensor& tensor) {
  SavedTensor saved;
  if (t_hooks) {
    if (auto slot = t_hooks->pack(tensor)) {
      saved.hooks_ = t_hooks;
      saved.slot_ = *slot;
      return saved;
    }
  }
  saved.value_ = tensor;
  return saved;
}

at::Tensor op_output(OpKind kind, const std::function<at::Tensor()>& compute) {
  if (!t_hooks) return compute();
  std::shared_ptr<SavedTensorHooks> hooks = t_hooks;  // alive even if compute() swaps the hooks
  return hooks->op_output(kind, compute);
}

at::Tensor SavedTensor::unpack() const { return hooks_ ? hooks_->unpack(slot_) : value_; }

SavedTensorHooksGuard::SavedTensorHooksGuard(std::shared_ptr<SavedTensorHooks> hooks)
    : previous_(std::move(t_hooks)) {
  t_hooks = std::move(hooks);
}
SavedTensorHooksGuard::~SavedTensorHooksGuard() { t_hooks = std::move(previous_); }

}  // namespace shardfuzz::autograd
