// The CUDA memory probe on a GPU host: a tensor's bytes appear in `allocated` and the peak, and go
// when it does (the caching allocator keeps them `reserved`). Skipped on a CPU build.
#include "runtime/memory/device_memory.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace shardfuzz::memory {
namespace {

TEST(DeviceMemory, ATensorsBytesComeAndGoOnTheDevice) {
  if (!cuda_probe_built()) GTEST_SKIP() << "a CPU LibTorch: no CUDA probe in this build";
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  constexpr int64_t kBytes = 64 << 20;
  const DeviceBytes before = device_bytes();
  reset_device_peaks();
  {
    at::Tensor t = at::empty({kBytes / 4}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, 0));
    const DeviceBytes during = device_bytes();
    EXPECT_EQ(during.allocated - before.allocated, kBytes);
    EXPECT_GE(during.reserved, during.allocated);
    EXPECT_GE(during.peak_allocated, during.allocated);
  }
  const DeviceBytes after = device_bytes();
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_GE(after.peak_allocated - before.allocated, kBytes);
  EXPECT_GE(after.reserved, kBytes) << "the caching allocator keeps what it reserved";
}

}  // namespace
}  // namespace shardfuzz::memory
