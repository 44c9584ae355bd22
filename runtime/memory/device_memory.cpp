// The caching allocator's statistics, read through the CUDA LibTorch when there is one.
#include "runtime/memory/device_memory.h"

#ifdef SHARDFUZZ_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/ATen.h>

#include <mutex>
#endif

namespace shardfuzz::memory {

#ifdef SHARDFUZZ_CUDA

bool cuda_probe_built() { return true; }

bool cuda_device_available() { return c10::cuda::device_count() > 0; }
int cuda_device_count() { return static_cast<int>(c10::cuda::device_count()); }

DeviceBytes device_bytes(int device) {
  if (!cuda_device_available()) return {};
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);  // the allocator has no devices before it
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  constexpr auto kAll = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  DeviceBytes b;
  b.allocated = stats.allocated_bytes[kAll].current;
  b.reserved = stats.reserved_bytes[kAll].current;
  b.peak_allocated = stats.allocated_bytes[kAll].peak;
  b.peak_reserved = stats.reserved_bytes[kAll].peak;
  return b;
}

void reset_device_peaks(int device) {
  if (!cuda_device_available()) return;
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

void warm_up_device(int device) {
  static std::once_flag once[64];
  if (!cuda_device_available() || device < 0 || device >= 64) return;
  std::call_once(once[device], [device] {
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    const at::Tensor a = at::ones({64, 64}, at::TensorOptions().device(at::kCUDA, device));
    (void)at::mm(a, a).sum().item<float>();  // cuBLAS: handle and workspace
  });
}

#else

bool cuda_probe_built() { return false; }
bool cuda_device_available() { return false; }
int cuda_device_count() { return 0; }
DeviceBytes device_bytes(int) { return {}; }
void reset_device_peaks(int) {}
void warm_up_device(int) {}

#endif

}  // namespace shardfuzz::memory
