// The caching allocator's statistics, read through the CUDA LibTorch when there is one.
#include "runtime/memory/device_memory.h"

#include <cstdlib>

#ifdef SHARDFUZZ_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/ATen.h>

#include <torch/csrc/autograd/variable.h>
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
  // What tensors asked for, as the CPU counting allocator counts and the ledger predicts: the
  // allocator's own `allocated_bytes` rounds every block up to 512 B, so ten 80-byte buffers
  // "grew" 5,120 B against a ledger of 800 (measured on the H200, a strict finding that was not).
  b.allocated = stats.requested_bytes[kAll].current;
  b.reserved = stats.reserved_bytes[kAll].current;
  b.peak_allocated = stats.requested_bytes[kAll].peak;
  b.peak_reserved = stats.reserved_bytes[kAll].peak;
  return b;
}

void reset_device_peaks(int device) {
  if (!cuda_device_available()) return;
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

void warm_up_device(int device) {
  // cuBLASLt's workspace (1 MiB) is allocated by the first backward that takes the Lt path and
  // kept for the process's life; which op takes it is LibTorch's choice, so instead of warming it
  // up, ask for none (before LibTorch first reads the variable; a user's own setting wins).
  // Measured on the H200: with it, one expert backward "grew" 1 MiB and teardown kept it.
  ::setenv("CUBLASLT_WORKSPACE_SIZE", "0", /*overwrite=*/0);
  if (!cuda_device_available() || device < 0 || device >= cuda_device_count()) return;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const auto on = at::TensorOptions().device(at::kCUDA, device);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    const at::Tensor a = at::ones({64, 64}, on.dtype(dtype)).requires_grad_();
    const at::Tensor b = at::ones({2, 64, 64}, on.dtype(dtype)).requires_grad_();
    const at::Tensor bias = at::ones({64}, on.dtype(dtype)).requires_grad_();
    at::Tensor y = at::addmm(bias, a, a).sum() + at::mm(a, a).sum() + at::bmm(b, b).sum() + at::matmul(b, a).sum();
    y.to(at::kFloat).backward();  // autograd's device thread: its own handle and workspace
  }
  c10::cuda::device_synchronize();
}

void synchronize_device(int device) {
  if (!cuda_device_available() || device < 0 || device >= cuda_device_count()) return;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  c10::cuda::device_synchronize();
}

nlohmann::json device_snapshot(int device) {
  if (!cuda_device_available()) return {{"available", false}, {"why", "no CUDA device"}};
#ifdef SHARDFUZZ_ALLOCATOR_SNAPSHOT
  const DeviceBytes bytes = device_bytes(device);
  nlohmann::json segments = nlohmann::json::array();
  for (const auto& seg : c10::cuda::CUDACachingAllocator::snapshot().segments) {
    if (seg.device != device) continue;
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& b : seg.blocks)
      blocks.push_back({{"size", b.size}, {"requested_size", b.requested_size}, {"allocated", b.allocated},
                        {"active", b.active}});
    segments.push_back({{"address", seg.address},
                        {"total_size", seg.total_size},
                        {"allocated_size", seg.allocated_size},
                        {"active_size", seg.active_size},
                        {"stream", reinterpret_cast<uintptr_t>(seg.stream)},
                        {"is_large", seg.is_large},
                        {"blocks", blocks}});
  }
  return {{"available", true},
          {"device", device},
          {"allocated_bytes", bytes.allocated},
          {"reserved_bytes", bytes.reserved},
          {"peak_allocated_bytes", bytes.peak_allocated},
          {"segments", segments}};
#else
  return {{"available", false}, {"why", "this LibTorch's caching allocator has no snapshot() CMake could compile"}};
#endif
}

#else

bool cuda_probe_built() { return false; }
bool cuda_device_available() { return false; }
int cuda_device_count() { return 0; }
DeviceBytes device_bytes(int) { return {}; }
void reset_device_peaks(int) {}
void warm_up_device(int) {}
void synchronize_device(int) {}
nlohmann::json device_snapshot(int) { return {{"available", false}, {"why", "this build has no CUDA LibTorch"}}; }

#endif

}  // namespace shardfuzz::memory
