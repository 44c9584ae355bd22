// The one place where the LibTorch versions we build against differ (Debian 12's 1.13 on CPU,
// the torch wheel's 2.x on GPU hosts). Everything else includes this instead of guessing.
#pragma once

#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/autograd/graph_task.h>

#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif

namespace shardfuzz::compat {

#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
inline constexpr bool kTorch2 = true;
// 2.x: Allocator::allocate is non-const and copy_data is pure virtual.
#define SHARDFUZZ_ALLOCATE_CONST
#define SHARDFUZZ_ALLOCATOR_COPY_DATA                                                  \
  void copy_data(void* dest, const void* src, std::size_t count) const override {      \
    default_copy_data(dest, src, count);                                               \
  }
#else
inline constexpr bool kTorch2 = false;
#define SHARDFUZZ_ALLOCATE_CONST const
#define SHARDFUZZ_ALLOCATOR_COPY_DATA
#endif

// LibTorch appends a C++ backtrace to its error messages (more lines in some builds than others);
// the first lines say what happened.
inline std::string without_backtrace(const std::string& message) {
  return message.substr(0, message.find("\nException raised from"));
}

// FSDP2's is_bw(): true while the autograd engine runs a graph task on this thread
// (torch._C._current_graph_task_id() != -1 upstream). Both versions export the exec-info
// accessor, which is null exactly when no graph task is current.
inline bool in_backward() { return torch::autograd::get_current_graph_task_exec_info() != nullptr; }

// Resize a tensor's storage in place, keeping the TensorImpl (and so every alias autograd
// saved) alive: FSDP2's free_unsharded_param / alloc_all_gather_outputs.
inline void resize_storage_bytes(const at::Tensor& t, std::size_t nbytes) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  if (storage->nbytes() == nbytes) return;
  c10::Allocator* allocator = storage->allocator();
  at::DataPtr fresh = nbytes == 0 ? at::DataPtr(nullptr, storage->device()) : allocator->allocate(nbytes);
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(nbytes);
}

}  // namespace shardfuzz::compat
