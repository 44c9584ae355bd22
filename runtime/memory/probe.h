// The memory probe a rank reads its bytes from: LibTorch's CPU allocator, replaced by the counting
// allocator (per rank, by the allocating thread); the meta device of a shape-only run (tensors
// without data, counted by the same allocator at the bytes they would take); or the CUDA caching
// allocator of one device
// (device-wide, so it is the rank's own only when the rank is the only one on the device: world
// size 1 in a process, or one process per rank).
#pragma once

#include "runtime/memory/counting_allocator.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace shardfuzz::memory {

class Probe {
 public:
  static Probe cpu();
  // Throws std::invalid_argument naming `device` when this build or machine has no such device.
  // `warm`: allocate what LibTorch keeps on the device for the process's life first
  // (warm_up_device), so that no baseline counts it; false only checks (a launcher that must not
  // create a CUDA context itself).
  static Probe cuda(int device = 0, bool warm = true);
  // Shape-only: tensors on LibTorch's meta device, their bytes counted per rank as on the CPU.
  static Probe meta();
  // "cpu", "meta" or "cuda" / "cuda:N" (std::invalid_argument naming `field` otherwise).
  static Probe named(const std::string& name, const std::string& field = "device", bool warm = true);

  bool on_device() const { return device_ >= 0; }
  bool shape_only() const { return device_ == kMeta; }
  // Where a rank's tensors live under this probe (kCPU, or the CUDA device).
  c10::Device device() const;
  std::string name() const;  // "cpu", "meta", "cuda:0"

  RankBytes bytes(int rank) const;  // allocated bytes, current and peak
  int64_t reserved_bytes() const;   // what the caching allocator holds from the driver (0 on CPU)
  void reset_peak(int rank) const;  // peak := current
  // On a device: what LibTorch keeps there per thread, allocated now on the calling thread (before
  // a baseline is read; memory::warm_up_device). Nothing on the CPU.
  void warm_up() const;
  void synchronize() const;  // waits for the device's queued work (nothing on the CPU)
  // The device allocator's snapshot (memory::device_snapshot); null on the CPU.
  nlohmann::json snapshot() const;

 private:
  static constexpr int kCpu = -1, kMeta = -2;
  explicit Probe(int device) : device_(device) {}
  int device_ = kCpu;  // kCpu, kMeta, or the CUDA device's index
};

}  // namespace shardfuzz::memory
