// The CUDA memory probe: the caching allocator's allocated and reserved bytes (current and peak)
// on one device, device-wide (every rank thread of a process shares the device's allocator, so
// per-rank bytes come from the ledger; at world size 1 the device's bytes are the rank's). Built
// only against a CUDA LibTorch (SHARDFUZZ_CUDA); elsewhere it says so and reads zeros.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace shardfuzz::memory {

struct DeviceBytes {
  int64_t allocated = 0;       // bytes live tensors requested (the allocator's requested_bytes: no 512-B rounding)
  int64_t reserved = 0;        // bytes the caching allocator holds from the driver
  int64_t peak_allocated = 0;  // since the last reset_device_peaks
  int64_t peak_reserved = 0;
};

// Whether this build has the CUDA probe, and whether a device is there to read.
bool cuda_probe_built();
bool cuda_device_available();
int cuda_device_count();  // 0 without the probe

// Device `device`'s bytes (zeros without the probe or the device).
DeviceBytes device_bytes(int device = 0);
void reset_device_peaks(int device = 0);

// Allocates what LibTorch keeps on the device for the process's life once a thread has computed
// there: the CUDA context, and a cuBLAS handle and its workspace (32 MiB on an H200) for the
// calling thread and for autograd's device thread, per op family (mm, addmm, bmm, forward and
// backward). Measured on an H200: without it, a rank's first step "grew" 64 MiB and its teardown
// kept 34 MiB. It also sets CUBLASLT_WORKSPACE_SIZE=0 unless set: cuBLASLt's 1 MiB workspace comes
// with whichever backward first takes the Lt path (measured: the run passes teardown and peak with
// it off, and fails by exactly 1 MiB with it on). Called on each rank's thread before its
// baseline; cheap once the handles exist.
void warm_up_device(int device = 0);

// The caching allocator's state of `device` right now, for people: its totals and every segment
// (address, total, allocated and active bytes, stream) with its blocks (size, requested size,
// allocated, active) — what PyTorch's memory snapshot shows, as JSON. {"available": false, "why":
// ...} where this build or LibTorch cannot take one.
nlohmann::json device_snapshot(int device = 0);

// Waits for the device's queued work (a no-op without the probe): what a step time must include.
void synchronize_device(int device = 0);

}  // namespace shardfuzz::memory
